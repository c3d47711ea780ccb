#!/usr/bin/env bash
# bench/skelebones_joints.sh — the joints table (issue 19 items 5, 9, 10): anima skelebones on the
# motion benchmark's characters (gt.h5, their true rigs) and on the rigged, animated assimp test
# models, one row each: joints found (true), joint error both ways (% of the diagonal), the tree
# against the true rig (sb_tree_compare, models/skelebones/joints.h: true joints matched within 5%
# of the diagonal, true bones whose matched ends the found tree joins directly, ends and forks
# found / true) and the seconds of each stage (process CPU of the whole run in the last column).
#   bench/skelebones_joints.sh [MOTION_DIR] [OUTDIR]     (NOIK=1: skip the IK stage; RAY=1: the
#   skeleton with ray poles, --ray-poles, instead of CGAL's Voronoi poles)
# MOTION_DIR holds <character>/gt.h5 (anima motion bench makes it; default /work/scratch/motion).
set -euo pipefail
ANIMA=${ANIMA:-./build/anima}
motion=${1:-/work/scratch/motion}
out=${2:-$(mktemp -d /tmp/anima-sb-joints-XXXXXX)}
ik=(); [ "${NOIK:-0}" = 1 ] && ik=(--no-ik)
[ "${RAY:-0}" = 1 ] && ik+=(--ray-poles)
field() { echo "$1" | grep -o "$2 [^ ]*" | head -1 | awk '{print $2}'; }
printf "%-26s %7s %7s %7s %9s %9s %7s %9s %7s %7s %7s %7s %7s\n" input joints true tf_% ft_% matched kept ends branches clus+ssdr skel ik cpu_s
row() { # name, args...
  local name=$1; shift
  local line
  line=$( { /usr/bin/time -f "cpu %U %S" "$ANIMA" skelebones "$@" --out "$out/$name" "${ik[@]}" --no-progress; } 2>&1 ) ||
    { echo "$name: failed: $(echo "$line" | tail -1)"; return; }
  local cpu; cpu=$(echo "$line" | awk '/^cpu /{printf "%.1f", $2 + $3}')
  printf "%-26s %7s %7s %7s %9s %9s %7s %9s %7s %7s %7s %7s %7s\n" "$name" "$(field "$line" joints)" "$(field "$line" true_joints)" \
    "$(field "$line" joint_err_true_to_found)" "$(field "$line" joint_err_found_to_true)" "$(field "$line" tree_matched)" \
    "$(field "$line" tree_bones_kept)" "$(echo "$line" | grep -o 'ends [0-9]* (true [0-9]*)' | tr -d '()' | awk '{print $2"/"$4}')" \
    "$(echo "$line" | grep -o 'branches [0-9]* (true [0-9]*)' | tr -d '()' | awk '{print $2"/"$4}')" \
    "$(echo "$line" | grep -o 'cluster [0-9.]*, ssdr [0-9.]*' | tr -d ',' | awk '{printf "%.1f", $2 + $4}')" \
    "$(field "$line" time_skeleton_s)" "$(field "$line" time_ik_s)" "$cpu"
}
for c in humanoid quadruped bird snake; do
  [ -f "$motion/$c/gt.h5" ] && row "$c" --gt "$motion/$c/gt.h5"
done
# the rigged, animated assimp models (Debian assimp-testmodels)
# (the two with a surface to skeletonize; bones: the true count)
for spec in FBX/huesitos.fbx:9 FBX/animation_with_skeleton.fbx:14; do
  f=/usr/share/assimp/models/${spec%%:*}
  [ -f "$f" ] && row "$(basename "${f%.*}")" --model "$f" --bones "${spec##*:}"
done
echo "rigs in $out/<input>/rig.h5; tf/ft: joint error true→found / found→true; matched: distinct true joints"
echo "matched within 5% of the diagonal; kept: true bones between matched joints that the found tree joins"
echo "directly; ends/branches: tree joints of degree 1 / ≥3, found/true; seconds per stage (wall) and CPU"
