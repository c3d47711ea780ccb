#!/usr/bin/env bash
# bench/run_sim.sh — the simulator's lines of `make bench` (bench/bench_sim.c): ms per frame
# (median) for one object with 16 handles and floor contact, all cubature points and the
# optimized set, and the reduced vs FEM ratio on the sag scene. Usage: run_sim.sh ANIMA_BENCH_SIM.
# Threads: BENCH_THREADS (default 2), as bench/run.sh; OMP_WAIT_POLICY=passive so that idle
# OpenMP workers do not spin on a shared machine.
set -euo pipefail
bin=${1:?usage: run_sim.sh ANIMA_BENCH_SIM}
cd "$(dirname "$0")/.."
OMP_NUM_THREADS=${BENCH_THREADS:-2} OMP_WAIT_POLICY=passive "$bin"
