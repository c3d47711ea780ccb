#!/usr/bin/env bash
# tests/cuemu/run.sh SEED | --tsan — make test-cuda-emu's runner (BUILD=the emulated build dir):
# the emulator's own checks (cuemu-tests: injected bugs must be reported, their correct twins must
# pass), then the CUDA parity suite (anima-tests --cuda) under forward, reverse and seeded random
# thread order (CUEMU_ORDERS, a list, narrows them), each order's time printed. --tsan:
# ThreadSanitizer's cases only.
# The last line is "N passed, N failed" (tests/run.sh's convention).
set -u
cd "$(dirname "$0")/../.."
build=${BUILD:-build-emu}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if [ "${1:-}" = "--tsan" ]; then
  # TSan's own report goes to stderr, which cuemu-tests reads; exitcode 66 marks a report.
  # Then a few parity tests with anima's kernels instrumented (a race report fails the test:
  # its process exits 66); the attention tests take minutes under TSan and are left out.
  export TSAN_OPTIONS=${TSAN_OPTIONS:-exitcode=66}
  out=$(mktemp); trap 'rm -f "$out"' EXIT
  "./$build/cuemu-tests" --tsan > "$out" 2>&1; sed '$d' "$out"
  last=$(tail -1 "$out"); p=${last%% passed*}; f=${last#*passed, }; f=${f%% failed*}
  case "$p$f" in *[!0-9]*|"") p=0 f=1; echo "FAIL cuemu-tests --tsan: $last";; esac
  if [ -x "./$build/anima-tests" ]; then
    for t in cuda_index_ops cuda_reductions cuda_softmax_layer_norm cuda_optim_config cuda_gs_parity_dense_batches; do
      if "./$build/anima-tests" --cuda "$t" > "$out" 2>&1; then p=$((p + 1)); grep "^ok" "$out"
      else f=$((f + 1)); echo "FAIL $t under TSan"; grep -v '^[0-9]* passed' "$out" | head -60; fi
    done
  fi
  echo "$p passed, $f failed"
  [ "$f" -eq 0 ]
  exit
fi
seed=${1:-$RANDOM}
pass=0 fail=0
count() { # the summary line of a suite's output
  local last p f
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
  if [ -z "$last" ]; then fail=$((fail + 1)); echo "FAIL $2 (no summary line)"; return; fi
  p=${last%% passed*}; f=${last#*passed, }; f=${f%% failed*}
  pass=$((pass + p)); fail=$((fail + f))
  echo "-- $2: $last"
}
out=$(mktemp); trap 'rm -f "$out"' EXIT
echo "== cuemu checks (tests/cuemu)"
"./$build/cuemu-tests" > "$out" 2>&1; grep -v '^ok ' "$out" | sed '$d'; count "$out" "cuemu checks"
for order in ${CUEMU_ORDERS:-forward reverse random}; do
  echo "== CUDA parity suite under the emulator, CUEMU_ORDER=$order$([ $order = random ] && echo " CUEMU_SEED=$seed")"
  t0=$(date +%s)
  # the cuda_fit tests run `anima fit --device cuda`: this build's program, not the plain ./anima
  ANIMA_CUDA_PROGRAM=./$build/anima CUEMU_ORDER=$order CUEMU_SEED=$seed "./$build/anima-tests" --cuda > "$out" 2>&1
  rc=$?
  grep -v '^ok \|^skip ' "$out" | sed '$d'
  count "$out" "cuda ($order)"
  echo "   $order: $(( $(date +%s) - t0 )) s"
  [ $rc -ne 0 ] && ! grep -qE '^[0-9]+ passed, [1-9]' "$out" && { echo "FAIL cuda ($order) exited $rc"; fail=$((fail + 1)); }
done
echo "== the emulated cuBLAS, cub and NCCL, and ./anima's GPU-only paths (tests/cuemu/lib/run.sh)"
t0=$(date +%s)
BUILD=$build bash tests/cuemu/lib/run.sh > "$out" 2>&1; sed '$d' "$out"; count "$out" "libraries and paths"
echo "   libraries and paths: $(( $(date +%s) - t0 )) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
