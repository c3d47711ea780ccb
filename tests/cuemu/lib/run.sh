#!/usr/bin/env bash
# tests/cuemu/lib/run.sh — the emulated libraries' tests (test_emu_cublas, test_emu_cub,
# test_emu_nccl on one rank and under `mpirun -np 2`), then the program's GPU-only paths
# (tests/cuemu/paths.sh). BUILD is the emulated build (make CUEMU=1 CUDA=1 BUILD=...; the
# binaries are $BUILD/cuemu-lib/*). Each part prints its own lines; the last line is the total,
# "N passed, M failed".
set -u
cd "$(dirname "$0")/../../.."
build=${BUILD:-build-emu}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# under ASan (make test-cuda-emu SANITIZE=address) OpenMPI's own allocations at finalize are
# reported as leaks by every rank: leak checking is off for the MPI runs, as tests/run.sh does
MPI_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
total_pass=0 total_fail=0
part() { # name, command...
  local name=$1; shift
  local t0=$(date +%s%N) out rc
  out=$("$@" 2>&1); rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local last=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
  printf '%s\n' "$out" | grep -E '^(FAIL|ok )' | sed 's/^/  /'
  if [ -z "$last" ]; then
    printf '%s\n' "$out" | tail -15 | sed 's/^/  /'
    echo "FAIL $name (no summary line, exit $rc, $ms ms)"; total_fail=$((total_fail + 1)); return
  fi
  local p f
  p=$(echo "$last" | sed -E 's/^([0-9]+) passed.*/\1/'); f=$(echo "$last" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
  [ "$f" -gt 0 ] && printf '%s\n' "$out" | grep -E '^FAIL' -A3 | head -40 | sed 's/^/  /'
  echo "-- $name: $last ($ms ms)"
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $name exited $rc"; total_fail=$((total_fail + 1)); fi
}
part "cuBLAS" "./$build/cuemu-lib/test_emu_cublas"
part "cub" "./$build/cuemu-lib/test_emu_cub"
part "NCCL, 1 rank" "./$build/cuemu-lib/test_emu_nccl"
if command -v mpirun > /dev/null; then
  part "NCCL, 2 ranks" env ASAN_OPTIONS="$MPI_ASAN" mpirun --oversubscribe --allow-run-as-root -np 2 "./$build/cuemu-lib/test_emu_nccl"
else
  echo "FAIL NCCL, 2 ranks: mpirun not found"; total_fail=$((total_fail + 1))
fi
part "GPU-only paths (fit, physskin train, gs fit, NCCL fit)" env BUILD="$build" bash tests/cuemu/paths.sh
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
