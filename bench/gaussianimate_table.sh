#!/usr/bin/env bash
# bench/gaussianimate_table.sh — the GaussiAnimate full path from video (issue 37 item 4): for each
# character, multi-view video → gs4d fit (configs/gs4d-repertoire.json: 1024 control nodes) → gs4d eval
# (held-out test views) → Skelebones on the fit's trajectories → PartMM on the held-out motion with
# the fit's canonical Gaussians (anima animate --gaussians, configs/partmm.json), the found joints
# against the benchmark's true rig (skelebones --true-rig: posed, frame by frame), and one table of
# every method row of every character, rendering the same Gaussians:
#   bench/gaussianimate_table.sh [DATA [RUNS]]
# DATA holds <character>/ as `anima dataset motion --motion repertoire --frames 300` writes it
# (default data/motion-repertoire, `make motion-data`); RUNS the runs (default runs/gaussianimate).
# A stage whose output exists is not rerun (delete the folder to redo it). Prints, per character,
# the gs4d fit's held-out PSNR / SSIM, CPU seconds, surface Chamfer and joint errors, then the PartMM table as Markdown: RMSE % of
# the diagonal / PSNR dB / SSIM per method and character. CHARACTERS="quadruped humanoid" limits it;
# GS4D_CONFIG and GS4D_SET ("--set k=v ...") change the fit.
set -euo pipefail
cd "$(dirname "$0")/.."
ANIMA=${ANIMA:-./anima}
data=${1:-data/motion-repertoire}
runs=${2:-runs/gaussianimate}
chars=${CHARACTERS:-quadruped humanoid snake bird}
cfg=${GS4D_CONFIG:-configs/gs4d-repertoire.json}
read -r -a gset <<<"${GS4D_SET:-}"
mkdir -p "$runs"
for c in $chars; do
  [ -f "$data/$c/transforms_train.json" ] || { echo "gaussianimate_table: no benchmark at $data/$c (make motion-data)" >&2; exit 1; }
  r=$runs/$c
  if [ ! -f "$r/gs4d/trajectories.h5" ]; then
    rm -rf "$r/gs4d"
    /usr/bin/time -f "cpu %U %S" -o "$r.gs4d.time" env OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
      "$ANIMA" gs4d fit --data "$data/$c" --config "$cfg" "${gset[@]}" --out "$r/gs4d" --no-progress > "$r.gs4d.log" 2>&1 ||
      { echo "gaussianimate_table: gs4d fit of $c failed (see $r.gs4d.log)" >&2; exit 1; }
  fi
  [ -f "$r/gs4d.eval" ] || "$ANIMA" gs4d eval "$r/gs4d" > "$r/gs4d.eval" 2>&1
  [ -f "$r/rig/rig.h5" ] || "$ANIMA" skelebones --traj "$r/gs4d/trajectories.h5" --true-rig "$data/$c/gt.h5" --bones 20 \
    --out "$r/rig" --no-progress --video none > "$r.rig.log" 2>&1 || { echo "gaussianimate_table: skelebones of $c failed (see $r.rig.log)" >&2; exit 1; }
  [ -f "$r/anim/eval.json" ] || "$ANIMA" animate --rig "$r/rig/rig.h5" --gaussians "$r/gs4d/canonical.ply" --bench "$data/$c" \
    --motion heldout --eval --config configs/partmm.json --out "$r/anim" > "$r.anim.log" 2>&1 ||
    { echo "gaussianimate_table: animate of $c failed (see $r.anim.log)" >&2; exit 1; }
  psnr=$(grep -o 'held-out PSNR [0-9.]* dB, SSIM [0-9.]*' "$r/gs4d.eval" | head -1)
  cpu=$([ -f "$r.gs4d.time" ] && awk '/^cpu /{printf "%.0f", $2 + $3}' "$r.gs4d.time" || echo "?")
  joints=$(grep -o 'posed_joint_err_true_to_found [0-9.]*% posed_joint_err_found_to_true [0-9.]*%' "$r.rig.log" | head -1)
  surf=$(sed -n 's/^surface Chamfer.*back-projected): mean \([0-9.]*%\).*/\1/p' "$r/gs4d.eval" | head -1)
  cham=$(sed -n 's/^Chamfer (visible centers vs surface): mean \([0-9.]*%\).*/\1/p' "$r/gs4d.eval" | head -1)
  echo "gs4d $c: $psnr (test views), fit $cpu CPU-s; Chamfer surface $surf, centers $cham; joints (posed, vs the true rig) $joints"
done
python3 - "$runs" $chars <<'PY'
import json, sys
runs, chars = sys.argv[1], sys.argv[2:]
ev = {c: json.load(open(f"{runs}/{c}/anim/eval.json")) for c in chars}
methods = [r["method"] for r in ev[chars[0]]["rows"]]
print("| method | " + " | ".join(chars) + " |")
print("|---|" + "---|" * len(chars))
for m in methods:
    cells = []
    for c in chars:
        row = next((r for r in ev[c]["rows"] if r["method"] == m), None)
        f = lambda v, k: "-" if v is None else f"{v:.{k}f}"
        cells.append("-" if row is None else f'{row["rmse_pct_diag"]:.3f} / {f(row["psnr"], 2)} / {f(row["ssim"], 3)}')
    print(f"| {m} | " + " | ".join(cells) + " |")
PY
