#!/usr/bin/env bash
# datasets/fetch-real.sh — the real meshes anima evaluates on (public 3D datasets cannot be
# downloaded here): Debian's assimp-testmodels (installed only if missing) and the Stanford
# bunny from npm's `bunny` package (JSON positions/cells, installed under data/.npm). Every mesh
# anima reads (OBJ, PLY, OFF, STL) is converted to binary PLY in data/real/ (git-ignored) with
# `anima mesh convert`; files anima rejects are listed with the reason. The BVH captures stay
# where the package puts them (/usr/share/assimp/models/BVH), which is where the tests look.
#
# usage: datasets/fetch-real.sh      (OUT=dir to write elsewhere, ANIMA=path to the program)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-data/real}
ANIMA=${ANIMA:-./anima}
mkdir -p "$OUT"

if [ ! -x "$ANIMA" ]; then
  echo "building anima"
  make --no-print-directory anima >/dev/null
fi

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
if ! dpkg-query -W -f='${Status}' assimp-testmodels 2>/dev/null | grep -q "install ok installed"; then
  echo "installing assimp-testmodels"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq assimp-testmodels >/dev/null 2>&1 ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq assimp-testmodels >/dev/null; }
fi

converted=0
skipped=0
convert() { # convert IN NAME
  local msg
  if msg=$("$ANIMA" mesh convert "$1" "$OUT/$2.ply" 2>&1); then
    echo "converted  $msg"
    converted=$((converted + 1))
  else
    echo "skipped    ${msg#anima mesh: }"
    skipped=$((skipped + 1))
  fi
}

while IFS= read -r f; do
  dir=$(basename "$(dirname "$f")")
  stem=$(basename "$f"); stem=${stem%.*}
  convert "$f" "assimp_$(echo "$dir" | tr 'A-Z' 'a-z')_$stem"
done < <(dpkg -L assimp-testmodels | grep -iE '\.(obj|ply|off|stl)$' | sort)

# The bunny: npm package `bunny` exports {positions: [[x,y,z]...], cells: [[i,j,k]...]}.
if command -v npm >/dev/null && command -v node >/dev/null; then
  if [ ! -d data/.npm/node_modules/bunny ]; then
    npm install --silent --no-save --no-audit --no-fund --prefix data/.npm bunny >/dev/null 2>&1 || true
  fi
  if [ -d data/.npm/node_modules/bunny ]; then
    node -e '
      const b = require(process.argv[1]);
      const out = ["# Stanford bunny, from npm package bunny"];
      for (const p of b.positions) out.push("v " + p.join(" "));
      for (const c of b.cells) out.push("f " + c.map(i => i + 1).join(" "));
      require("fs").writeFileSync(process.argv[2], out.join("\n") + "\n");
    ' "$PWD/data/.npm/node_modules/bunny" data/.npm/bunny.obj
    convert data/.npm/bunny.obj bunny
  else
    echo "skipped    bunny: npm install bunny failed (offline?)"
    skipped=$((skipped + 1))
  fi
else
  echo "skipped    bunny: npm or node not installed"
  skipped=$((skipped + 1))
fi

echo "$converted meshes in $OUT, $skipped skipped"
