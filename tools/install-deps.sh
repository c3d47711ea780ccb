#!/usr/bin/env bash
# Installs the Debian packages anima needs, only those missing (apt-get update once, then install).
# usage: tools/install-deps.sh [--bench]   --bench adds the packages only the side-by-side bench
# scripts use (CGAL and Eigen, header-only: bench/run_skeleton.sh); the library never links them.
set -euo pipefail
pkgs=(build-essential libopenblas-openmp-dev liblapack-dev libhdf5-dev libcjson-dev libpng-dev
      openmpi-bin libopenmpi-dev valgrind python3-torch python3-numpy python3-h5py
      tetgen libsuitesparse-dev libassimp-dev libwebsockets-dev
      nodejs ffmpeg blender chromium) # this line: make web-deps (nodejs brings npm), videos, the glTF checks, anima view
bench_pkgs=(libcgal-dev libeigen3-dev libgmp-dev libmpfr-dev)
case "${1:-}" in
  --bench) pkgs+=("${bench_pkgs[@]}") ;;
  "") ;;
  *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
esac
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
