#!/usr/bin/env bash
# bench/run_skeleton.sh — anima's mean curvature skeleton (models/skelebones/skeleton.c) side by side
# with CGAL's Mean_curvature_flow_skeletonization on the same closed meshes: procedural shapes
# and real closed meshes found on this machine. Prints, per mesh, both times, their ratio, node
# counts and the skeleton-to-skeleton Chamfer distance (% of the bounding-box diagonal), and
# leaves build/bench-skeleton/*_view.{png,ply} (anima's skeleton over the shape) to look at.
# Times are medians of RUNS runs (default 3; RUNS=1 for a quick look). SKEL_POLES=ray: anima's
# skeleton with the ray poles instead of CGAL's Voronoi poles (the default).
# CGAL is header-only (Debian libcgal-dev, with libeigen3-dev and Boost headers); when it is not
# installed, only anima's side runs and the script says so. Needs build/libanima.a (make).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/bench-skeleton
mkdir -p "$OUT"
[ -f build/libanima.a ] || { echo "build/libanima.a missing: run make first" >&2; exit 1; }
# the libraries anima links with: the Makefile's LDLIBS (make bench-skeleton passes them), else
# the same list spelled out
if [ -n "${LDLIBS:-}" ]; then LIBS="$LDLIBS"; else
LIBS="-L/usr/lib/x86_64-linux-gnu/openblas-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lcjson -lpng -lcholmod -lassimp"
mpi=$(mpicc --showme:link 2>/dev/null || true); LIBS="$LIBS $mpi -fopenmp -lm"
# grep reads all of nm's output: with -q it exits at the first match and, under pipefail, nm's
# SIGPIPE fails the test and drops the CUDA libraries (the link then fails)
if nm build/libanima.a 2>/dev/null | grep cudaMalloc >/dev/null; then
    LIBS="$LIBS -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lnccl -lcublas -lcudart -lstdc++"
fi
fi
gcc -std=c11 -O2 -march=x86-64-v3 -Wall -Wextra -Werror -fopenmp -D_GNU_SOURCE -I. -I/usr/include/suitesparse \
  -I/usr/include/hdf5/serial bench/cgal/skel_bench.c build/libanima.a -o "$OUT/skel_bench" $LIBS
RUNS=${RUNS:-3}
HAVE_CGAL=0
if [ -f /usr/include/CGAL/Mean_curvature_flow_skeletonization.h ] && [ -d /usr/include/eigen3 ]; then
  # the CGAL build takes half a minute: only when the source is newer than the program
  if [ ! "$OUT/cgal_skeleton" -nt bench/cgal/cgal_skeleton.cpp ]; then
    g++ -std=c++17 -O2 -DNDEBUG -DCGAL_EIGEN3_ENABLED -I/usr/include/eigen3 bench/cgal/cgal_skeleton.cpp \
      -o "$OUT/cgal_skeleton" -lgmp -lmpfr
  fi
  HAVE_CGAL=1
else
  echo "CGAL or Eigen headers not installed (tools/install-deps.sh --bench): anima's side only" >&2
fi
# median of the numbers on stdin
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# runs PROGRAM ARGS... RUNS times; prints "median_wall median_cpu nodes" (fields 2, 4, 6 of its line)
timed() {
  local out walls="" cpus="" nodes
  for _ in $(seq "$RUNS"); do
    out=$("$@" 2>&1) || { echo "$out" >&2; return 1; }
    walls+="$(echo "$out" | awk '{print $2}')"$'\n'; cpus+="$(echo "$out" | awk '{print $4}')"$'\n'
    nodes=$(echo "$out" | awk '{print $6}')
  done
  echo "$(printf %s "$walls" | median) $(printf %s "$cpus" | median) $nodes"
}
meshes=()
for spec in quadruped:3 humanoid:3 bird:3 quadruped:7; do
  name=${spec/:/_}
  "$OUT/skel_bench" procedural "${spec%%:*}" "${spec##*:}" 40 "$OUT/$name.off"
  meshes+=("$OUT/$name.off")
done
# real meshes when present (Debian's assimp-testmodels; the npm bunny that datasets/fetch-real.sh,
# run by make test, converts), made closed and manifold by marching cubes of their generalized
# winding number (the bunny has holes, Wuson is a polygon soup)
for f in /usr/share/assimp/models/OFF/Wuson.off data/real/bunny.ply; do
  if [ -f "$f" ]; then
    name=$(basename "${f%.*}")_wn
    "$OUT/skel_bench" remesh "$f" 56 "$OUT/$name.off" >/dev/null && meshes+=("$OUT/$name.off")
  fi
done
printf "%-12s %8s %8s %8s %8s %7s %7s %7s %8s %8s %8s\n" mesh anima_s anima_cpu cgal_s cgal_cpu ratio nodes_a nodes_c chamf_% a_true_% c_true_%
for m in "${meshes[@]}"; do
  base=$(basename "${m%.*}")
  # one thread, as CGAL's skeletonization runs (and timings on a shared machine stay comparable)
  a=$(OMP_NUM_THREADS=1 timed "$OUT/skel_bench" run "$m" "$OUT/$base.anima.skel" "$OUT/${base}_view") ||
    { echo "$base: anima failed"; continue; }
  read -r ta cpa na <<<"$a"
  tc=-; cpc=-; nc=-; ratio=-; ch=-; vc=-
  if [ $HAVE_CGAL = 1 ]; then
    if c=$(timed "$OUT/cgal_skeleton" "$m" "$OUT/$base.cgal.skel"); then
      read -r tc cpc nc <<<"$c"
      ratio=$(awk -v a="$ta" -v c="$tc" 'BEGIN{printf "%.2f", a / c}')
      ch=$("$OUT/skel_bench" chamfer "$OUT/$base.anima.skel" "$OUT/$base.cgal.skel" "$m" | awk '{print $2}')
      [ -f "$m.true.skel" ] && vc=$("$OUT/skel_bench" chamfer "$OUT/$base.cgal.skel" "$m.true.skel" "$m" | awk '{print $2}')
    else
      tc="fail"
    fi
  fi
  vt=-
  if [ -f "$m.true.skel" ]; then
    vt=$("$OUT/skel_bench" chamfer "$OUT/$base.anima.skel" "$m.true.skel" "$m" | awk '{print $2}')
  fi
  printf "%-12s %8s %8s %8s %8s %7s %7s %7s %8s %8s %8s\n" "$base" "$ta" "$cpa" "$tc" "$cpc" "$ratio" "$na" "$nc" "$ch" "$vt" "$vc"
done
echo "views: $OUT/*_view.png. Seconds: the skeletonization alone, median of $RUNS runs, wall (_s) and process"
echo "CPU (_cpu, all threads); ratio = anima wall / CGAL wall; chamf: anima's skeleton vs CGAL's, mean of both"
echo "directions' mean nearest distances, % of the bbox diagonal; a_true / c_true: anima's / CGAL's skeleton"
echo "against the procedural shape's generating bones (same measure)"
