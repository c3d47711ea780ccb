#!/usr/bin/env bash
# Installs the Debian packages anima needs, only those missing (apt-get update once, then install).
set -euo pipefail
pkgs=(build-essential libopenblas-openmp-dev liblapack-dev libhdf5-dev libcjson-dev libpng-dev
      openmpi-bin libopenmpi-dev valgrind python3-torch python3-numpy python3-h5py
      tetgen libsuitesparse-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
