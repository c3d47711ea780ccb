#!/usr/bin/env bash
# tests/run.sh — every suite, then one total: the layering checks (tests/check_layers.py: include
# and object-reference layers and cycles), the unit tests (one process, each test forked), the
# data-parallel tests under `mpirun -np 2`, the examples built against the installed tree
# (tests/examples.sh; `make test` installs it first), the glTF files' readers (tests/gltf/run.sh) and the CUDA code under the emulator
# (CUDA_EMU=1: make test-cuda-emu). The last line is "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# idle OpenMP threads wait boundedly by default (base/par.h), as a user's run does: the suite
# runs with the library's own default unless OMP_WAIT_POLICY is exported
total_pass=0 total_fail=0
run_suite() { # name, command...
  local name=$1; shift
  echo "== $name"
  local out rc
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" | sed '$d'
  local last p f
  last=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
  if [ -z "$last" ]; then
    printf '%s\n' "$out" | tail -1
    echo "FAIL $name (no summary line, exit $rc)"
    total_fail=$((total_fail + 1)); return
  fi
  p=$(echo "$last" | sed -E 's/^([0-9]+) passed.*/\1/'); f=$(echo "$last" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
  echo "-- $name: $last"
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { echo "FAIL $name exited $rc"; total_fail=$((total_fail + 1)); }
}
run_suite layers python3 tests/check_layers.py "$build"
run_suite unit "./$build/anima-tests"
if command -v mpirun >/dev/null; then
  # OpenMPI's own components leak at MPI_Finalize; our code's leaks are covered by the unit
  # suite (LeakSanitizer) and `make valgrind`, so leak checking is off for this suite only
  run_suite mpi env OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --oversubscribe --allow-run-as-root -np 2 "./$build/anima-mpi-tests"
else
  echo "FAIL mpi: mpirun not found (tools/install-deps.sh installs openmpi-bin)"; total_fail=$((total_fail + 1))
fi
run_suite examples env BUILD="$build" bash tests/examples.sh
# `anima export`'s glTF files through the Khronos validator, Blender and three.js (tests/gltf/run.sh)
run_suite gltf env BUILD="$build" bash tests/gltf/run.sh
# anima view end to end (tests/browser/viewer_test.mjs): the server over HTTP and WebSocket, then the
# page in headless Chromium (skipped with a message when chromium is absent); needs make web-deps
if command -v node >/dev/null; then
  run_suite browser node --experimental-websocket tests/browser/viewer_test.mjs "$build"
else
  echo "FAIL browser: node not found (tools/install-deps.sh installs nodejs and npm)"; total_fail=$((total_fail + 1))
fi
# every CUDA kernel on the CPU (docs/cuemu.md): its own build (build-emu/), the checks' tests and
# the CUDA parity suite under three thread orders; the build uses all cores (make test's
# jobserver does not reach this script)
if [ "${CUDA_EMU:-0}" = 1 ]; then
  run_suite cuda-emu env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s -j"$(nproc)" test-cuda-emu \
    SANITIZE="${EMU_SANITIZE:-0}"
else
  echo "== cuda-emu: skipped (the emulated cuBLAS/cub/NCCL, tools/cuemu/include/cublas_v2.h, are not in this tree)"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
