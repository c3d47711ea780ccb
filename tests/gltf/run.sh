#!/usr/bin/env bash
# tests/gltf/run.sh — `anima export` on each kind of input it takes, then every file it writes
# through three independent readers:
#   - the Khronos glTF-Validator (npm gltf-validator, tests/gltf/validate.mjs): zero errors and zero
#     warnings (its infos and hints are printed);
#   - Blender headless (tests/gltf/blender_check.py): the counts of vertices, joints and animation
#     frames it imports;
#   - three.js's GLTFLoader in headless Chromium (tests/gltf/three_check.mjs): the same counts; the
#     sim run played back by three's AnimationMixer to its last keyframe equals the frame anima
#     wrote, and the skinned files posed by three at a keyframe equal the pose the glTF rules give
#     from their bytes (tests/test_gltf.c checks that pose against anima's own rigs).
# The expected counts come from the producers' own output (the commands' summary lines, the frame
# files), not from the exporter. Each check skips with a message when its tool is absent (node and
# build/web/node_modules: `make web-deps`; blender; chromium). Ends "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD:-build}
anima=${ANIMA:-$root/anima}
modules=$root/$build/web/node_modules
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
tmp=$(mktemp -d /tmp/anima_gltf_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# ---- inputs and exports ------------------------------------------------------------------------
# a sim run: a small cactus dropped for 12 steps, a frame every 3
cat > drop.json <<'EOF'
{"dt": 0.01, "steps": 12, "gravity": [0, -9.81, 0],
 "objects": [{"skinning": {"source": "procedural", "category": "cactus", "seed": 1, "kind": "rbf", "handles": 4,
                           "cubature_res": 10, "mesh_res": 16},
              "pose": {"scale": 0.5, "translate": [0, 0.3, 0]}}],
 "planes": [{"normal": [0, 1, 0], "offset": 0}],
 "output": {"every": 3, "mesh": "ply", "png": false}}
EOF
declare -a checks=() # FILE:VERTS:JOINTS:FRAMES[:REF.obj|spec:K] (three_check.mjs)
step() { # name, command...: runs it, output into $name.log
  local name=$1; shift
  if "$@" > "$name.log" 2>&1; then ok "$name"; return 0; fi
  cat "$name.log"; bad "$name"; return 1
}
if step "export: sim run folder" bash -c "'$anima' sim --scene drop.json --out run --quiet && '$anima' export run --gltf sim.glb"; then
  nf=$(ls run/frame_?????.ply | wc -l)
  nv=$("$anima" mesh info run/frame_00000.ply | sed -E 's/.*: ([0-9]+) vertices.*/\1/')
  last=$((nf - 1))
  "$anima" mesh convert "run/frame_$(printf %05d $last).ply" ref_last.obj > /dev/null
  checks+=("sim.glb:$nv:0:$nf:ref_last.obj:$last")
fi
# a skinning file (what `anima physskin skin` writes; here from a procedural shape)
if step "export: skinning file" bash -c "'$anima' sim skinning skin.h5 --category snake --mesh-res 16 --cubature-res 12 > skin.out && '$anima' export skin.h5 --gltf skin.glb"; then
  nv=$(sed -E 's/.* ([0-9]+) vertices.*/\1/' skin.out)
  checks+=("skin.glb:$nv:0:0")
fi
# motion ground truth: a BVH-retargeted clip (cmu_01_01) and a procedural gait (walk, held out)
if step "export: motion gt.h5 (BVH-driven and procedural rigs)" bash -c "'$anima' dataset motion --category humanoid --out mo --frames 6 --views 2 --size 8 --grid 32 --supersample 1 --motion cmu_01_01 --heldout walk --no-progress > mo.out && '$anima' export mo/gt.h5 --gltf bvh.glb && '$anima' export mo/heldout/gt.h5 --gltf walk.glb"; then
  read -r nv nb <<< "$(sed -nE 's/.*: ([0-9]+) vertices, [0-9]+ triangles, ([0-9]+) bones.*/\1 \2/p' mo.out)"
  checks+=("bvh.glb:$nv:$nb:6:spec:5" "walk.glb:$nv:$nb:6:spec:3")
fi
# a Skelebones rig of that motion (SSDR bones + the root joint the export adds)
if step "export: skelebones rig.h5" bash -c "'$anima' skelebones --gt mo/gt.h5 --out sb --bones 5 --iters 4 --no-skeleton > sb.out 2>&1 && '$anima' export sb/rig.h5 --gltf rig.glb"; then
  read -r nf np b <<< "$(sed -nE 's/^frames ([0-9]+) points ([0-9]+) bones ([0-9]+) .*/\1 \2 \3/p' sb.out)"
  checks+=("rig.glb:$np:$((b + 1)):$nf:spec:$((nf - 1))")
fi
files=()
for c in "${checks[@]}"; do files+=("${c%%:*}"); done
echo "files: ${checks[*]}"

# ---- the Khronos validator -----------------------------------------------------------------------
if ! command -v node > /dev/null || [ ! -d "$modules/gltf-validator" ]; then
  echo "skipped: glTF-Validator (needs node and $modules/gltf-validator: make web-deps)"
else
  if node "$root/tests/gltf/validate.mjs" "$modules" "${files[@]}"; then ok "glTF-Validator: ${#files[@]} files, 0 errors, 0 warnings"
  else bad "glTF-Validator"; fi
  # the check can fail: a truncated file is reported
  head -c 2000 sim.glb > cut.glb
  if node "$root/tests/gltf/validate.mjs" "$modules" cut.glb > cut.log 2>&1; then bad "glTF-Validator reports a truncated file"
  else ok "glTF-Validator reports a truncated file ($(grep -c '\[error\]' cut.log) errors)"; fi
fi

# ---- Blender ---------------------------------------------------------------------------------------
if ! command -v blender > /dev/null; then
  echo "skipped: Blender import (blender not installed: tools/install-deps.sh)"
else
  for c in "${checks[@]}"; do
    IFS=: read -r f v j n _ <<< "$c"
    if blender -b --factory-startup --python-exit-code 1 -P "$root/tests/gltf/blender_check.py" -- "$f" "$v" "$j" "$n" > blender.log 2>&1; then
      ok "$(grep '^blender ' blender.log)"
    else
      grep -E "blender_check|Error|Traceback" blender.log | head -20; bad "Blender import of $f (expected $v vertices, $j joints, $n frames)"
    fi
  done
fi

# ---- three.js in headless Chromium -------------------------------------------------------------------
if ! command -v node > /dev/null || [ ! -d "$modules/three" ] || [ ! -d "$modules/puppeteer-core" ]; then
  echo "skipped: three.js GLTFLoader (needs node and three, puppeteer-core in $modules: make web-deps)"
elif [ -z "$chromium" ]; then
  echo "skipped: three.js GLTFLoader (chromium not installed: tools/install-deps.sh)"
else
  if node "$root/tests/gltf/three_check.mjs" "$modules" "$chromium" "${checks[@]}"; then ok "three.js GLTFLoader: ${#checks[@]} files"
  else bad "three.js GLTFLoader"; fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
