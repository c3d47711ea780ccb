#!/usr/bin/env bash
# bench/skelebones_progressive.sh — the progressive runs (issue 19 item 7): anima skelebones on the
# first 10%, 25%, 50% and 100% of the frames of INPUT, one row each: frames used, bones, RMSE on the
# frames used, seconds, and (gt.h5 inputs) the RMSE of the true rig on the same frames.
#   bench/skelebones_progressive.sh INPUT [BONES] [OUTDIR]
set -euo pipefail
ANIMA=${ANIMA:-./anima}
in=${1:?usage: bench/skelebones_progressive.sh INPUT [BONES] [OUTDIR]}
b=${2:-20}
out=${3:-$(mktemp -d /tmp/anima-sb-prog-XXXXXX)}
if [ -d "$in" ]; then src=(--meshes "$in")
elif [ "$(basename "$in")" = gt.h5 ]; then src=(--gt "$in")
else src=(--traj "$in"); fi
for p in 10 25 50 100; do
    frac=$(awk -v p="$p" 'BEGIN { print p / 100 }')
    line=$("$ANIMA" skelebones "${src[@]}" --bones "$b" --frames-fraction "$frac" --out "$out/p$p" --no-progress 2>/dev/null)
    echo "${p}%: $line"
done
echo "rigs in $out/p{10,25,50,100}/rig.h5"
