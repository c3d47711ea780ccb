#!/usr/bin/env bash
# bench/skelebones_dembones.sh — anima skelebones (LBG-VQ + SSDR) beside Electronic Arts' Dem Bones
# on the same trajectories, the same bone count and the same settings (30 iterations, 8 influences,
# smoothing 1e-4, 5 bone passes per iteration), printing RMSE and seconds side by side with ratios.
#
#   bench/skelebones_dembones.sh INPUT [BONES...]
#
# INPUT: a benchmark gt.h5 (anima dataset motion), a trajectories HDF5 (dataset 'positions'), or a
# folder of mesh frames. BONES: the counts to compare (default 10 20 30).
# Dem Bones is not part of anima (not packaged; build it yourself, outside the repository): DEMBONES
# names the program bench/dembones_harness.cpp builds into (see its first lines): it takes
# `FILE BONES ITERS NNZ SMOOTH` on a trajectories HDF5 and prints "bones B rmse R ... time_s T ...".
# Without DEMBONES, only anima's column is printed.
set -euo pipefail
ANIMA=${ANIMA:-./anima}
in=${1:?usage: bench/skelebones_dembones.sh INPUT [BONES...]}
shift
bones=("$@")
[ ${#bones[@]} -gt 0 ] || bones=(10 20 30)
work=$(mktemp -d /tmp/anima-sb-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -d "$in" ]; then src=(--meshes "$in")
elif [ "$(basename "$in")" = gt.h5 ]; then src=(--gt "$in")
else src=(--traj "$in"); fi
"$ANIMA" skelebones "${src[@]}" --export-traj "$work/traj.h5" 2>/dev/null
if [ -z "${DEMBONES:-}" ] || [ ! -x "${DEMBONES:-}" ]; then
    echo "(DEMBONES not set or not executable: anima only)"
fi
printf '%-6s %-12s %-9s %-12s %-9s %-10s %-10s\n' bones anima_rmse anima_s dembones_rmse dembones_s rmse_ratio time_ratio
for b in "${bones[@]}"; do
    line=$("$ANIMA" skelebones --traj "$work/traj.h5" --out "$work/rig$b" --bones "$b" --no-progress 2>/dev/null)
    ar=$(sed -n 's/.* rmse \([^ ]*\) .*/\1/p' <<<"$line")
    at=$(sed -n 's/.* time_s \([^ ]*\) .*/\1/p' <<<"$line")
    ab=$(sed -n 's/.* bones \([^ ]*\) .*/\1/p' <<<"$line")
    if [ -n "${DEMBONES:-}" ] && [ -x "${DEMBONES:-}" ]; then
        d=$("$DEMBONES" "$work/traj.h5" "$b" 30 8 1e-4)
        dr=$(sed -n 's/.* rmse \([^ ]*\) .*/\1/p' <<<"$d")
        dt=$(sed -n 's/.* time_s \([^ ]*\) .*/\1/p' <<<"$d")
        db=$(sed -n 's/^bones \([^ ]*\) .*/\1/p' <<<"$d")
        awk -v b="$b" -v ab="$ab" -v ar="$ar" -v at="$at" -v db="$db" -v dr="$dr" -v dt="$dt" 'BEGIN {
            printf "%-6s %-12.6g %-9.2f %-12.6g %-9.2f %-10.3f %-10.3f   (bones found: anima %s, Dem Bones %s)\n", b, ar, at, dr, dt, ar / dr, at / dt, ab, db }'
    else
        printf '%-6s %-12s %-9s\n' "$b" "$ar" "$at"
    fi
done
