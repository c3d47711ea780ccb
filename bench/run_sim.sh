#!/usr/bin/env bash
# bench/run_sim.sh — the simulator's lines of `make bench` (bench/bench_sim.c): ms per frame
# (median) for one object with 16 handles and floor contact, all cubature points and the
# optimized set, the three-object IPC pile (converged, and the real-time caps 1, 2, 4 with their
# trajectory RMSE against it), the ten-object pile (converged, caps 1 and 2 with their RMSE), and the reduced vs FEM
# ratio on the sag scene. The pile lines add "parts": broad phase + CCD, pairs, Hessians, solves,
# and "starts": cap 1 as the mean and median over 6 starts moved by up to 2 mm (BENCH_STARTS).
# Usage: run_sim.sh ANIMA_BENCH_SIM.
# Threads: BENCH_SIM_THREADS, default 1. A reduced frame is a few hundred small BLAS calls and
# point loops (n = 204 at 16 handles); on the 2-core development VM a passive OpenMP wake-up costs
# ~46 µs, so a second thread does not pay: drop 3.7 ms with 2 spinning threads vs 4.3 with one,
# 25 ms with 2 passive ones; the pile 47 ms either way (CG directions, Nov 30). The FEM
# baseline's CHOLMOD runs with the same.
set -euo pipefail
bin=${1:?usage: run_sim.sh ANIMA_BENCH_SIM}
cd "$(dirname "$0")/.."
OMP_NUM_THREADS=${BENCH_SIM_THREADS:-1} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$bin"
