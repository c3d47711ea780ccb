#!/usr/bin/env bash
# bench/run.sh — anima vs PyTorch on the CPU, side by side. Usage: run.sh ANIMA_BENCH [case ...]
# Per case, anima's binary and bench/torch_bench.py run back to back with the same number of
# threads (BENCH_THREADS, default 2: OMP_NUM_THREADS for anima, torch.set_num_threads for torch).
# Prints a table of median step times (ms; n = timed steps), then one line per case: "ratio <name> <anima/torch>".
set -euo pipefail
bin=${1:?usage: run.sh ANIMA_BENCH [case ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
threads=${BENCH_THREADS:-2}
py=${PYTHON:-/usr/bin/python3}
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(sgemm_1024 softmax_4096x1024 layer_norm_4096x1024 gelu_16M block_fwd_bwd)

# The machine may be shared: each case runs BENCH_ROUNDS (default 2) times, anima and torch
# alternating, and each side keeps its best (lowest) median.
rounds=${BENCH_ROUNDS:-2}
declare -A ta tt na nt
keep() { # keep ARRAY_T ARRAY_N name ms n: store when lower than what is there
  local -n T=$1 N=$2
  if [ -z "${T[$3]:-}" ] || awk -v a="$4" -v b="${T[$3]}" 'BEGIN { exit !(a < b) }'; then T[$3]=$4; N[$3]=$5; fi
}
for c in "${cases[@]}"; do
  for ((r = 0; r < rounds; r++)); do
    while read -r tag name ms n; do
      [ "$tag" = case ] && keep ta na "$name" "$ms" "$n"
    done < <(OMP_NUM_THREADS=$threads "$bin" "$c")
    while read -r tag name ms n; do
      [ "$tag" = case ] && keep tt nt "$name" "$ms" "$n"
    done < <(OMP_NUM_THREADS=$threads BENCH_THREADS=$threads "$py" "$here/torch_bench.py" "$c")
  done
done

printf '%-22s %12s %6s %12s %6s %8s\n' case anima_ms n torch_ms n ratio
for c in "${cases[@]}"; do
  a=${ta[$c]:-nan} t=${tt[$c]:-nan}
  printf '%-22s %12s %6s %12s %6s %8s\n' "$c" "$a" "${na[$c]:--}" "$t" "${nt[$c]:--}" \
    "$(awk -v a="$a" -v t="$t" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }')"
done
for c in "${cases[@]}"; do
  a=${ta[$c]:-nan} t=${tt[$c]:-nan}
  echo "ratio $c $(awk -v a="$a" -v t="$t" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }')"
done
