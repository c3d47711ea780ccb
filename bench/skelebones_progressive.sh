#!/usr/bin/env bash
# bench/skelebones_progressive.sh — the progressive runs (issue 19 item 7): anima skelebones on the
# first 10%, 25%, 50% and 100% of the frames of INPUT, one row each: frames used, bones, RMSE on the
# frames used, seconds, and (gt.h5 inputs) the RMSE of the true rig on the same frames; with a true
# rig (gt.h5, --model inputs) each stage's joints against it: count, joint error both ways (% of
# the diagonal), true joints matched within 5%, and the process CPU seconds of the stage.
#   bench/skelebones_progressive.sh INPUT [BONES] [OUTDIR]     (NOIK=1: skip the IK stage)
set -euo pipefail
ANIMA=${ANIMA:-./anima}
in=${1:?usage: bench/skelebones_progressive.sh INPUT [BONES] [OUTDIR]}
b=${2:-20}
out=${3:-$(mktemp -d /tmp/anima-sb-prog-XXXXXX)}
ik=(); [ "${NOIK:-0}" = 1 ] && ik=(--no-ik)
if [ -d "$in" ]; then src=(--meshes "$in")
elif [ "$(basename "$in")" = gt.h5 ]; then src=(--gt "$in")
else case "$in" in *.h5) src=(--traj "$in") ;; *) src=(--model "$in") ;; esac; fi
field() { echo "$1" | grep -o "$2 [^ ]*" | head -1 | awk '{print $2}'; }
printf "%-6s %7s %10s %7s %7s %9s %9s %8s %7s\n" stage frames rmse joints true tf_% ft_% matched cpu_s
for p in 10 25 50 100; do
    frac=$(awk -v p="$p" 'BEGIN { print p / 100 }')
    line=$( { /usr/bin/time -f "cpu %U %S" "$ANIMA" skelebones "${src[@]}" --bones "$b" --frames-fraction "$frac" \
              --out "$out/p$p" "${ik[@]}" --no-progress; } 2>&1 | grep -v '^anima skelebones:')
    cpu=$(echo "$line" | awk '/^cpu /{printf "%.1f", $2 + $3}')
    printf "%-6s %7s %10s %7s %7s %9s %9s %8s %7s\n" "$p%" "$(field "$line" frames)" "$(field "$line" rmse)" \
      "$(field "$line" joints)" "$(field "$line" true_joints)" "$(field "$line" joint_err_true_to_found)" \
      "$(field "$line" joint_err_found_to_true)" "$(field "$line" tree_matched)" "$cpu"
done
echo "rigs in $out/p{10,25,50,100}/rig.h5"
