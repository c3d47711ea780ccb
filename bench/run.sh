#!/usr/bin/env bash
# bench/run.sh — anima vs PyTorch on the CPU, side by side. Usage: run.sh ANIMA_BENCH [case ...]
# Per case, anima's binary and bench/torch_bench.py run back to back with the same number of
# threads (BENCH_THREADS, default 2: OMP_NUM_THREADS for anima, torch.set_num_threads for torch).
# Prints a table of median step times (ms; n = timed steps), then for the cases that report their
# peak memory (physskin_step) one line "mem <name> anima <MiB> (+<MiB>) torch <MiB> (+<MiB>)" (the
# process's peak RSS and its growth during the case, each side's best round), then one line per
# case: "ratio <name> <anima/torch>", and for each attention case run on both paths
# "ratio attn_tiled_vs_naive_<kind>_<T> <tiled/naive>" (anima against anima); then the loaded
# case (below): a table and one "loaded <case> ..." line per case.
set -euo pipefail
bin=${1:?usage: run.sh ANIMA_BENCH [case ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
threads=${BENCH_THREADS:-2}
# Both sides use libgomp: on a machine shared with other jobs, spin-waiting OpenMP threads turn
# every parallel region into a lottery (medians swing 10x); passive waiting is the same for both.
# Export OMP_WAIT_POLICY=active to measure the spinning behaviour on a quiet machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
py=${PYTHON:-/usr/bin/python3}
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(sgemm_1024 softmax_4096x1024 layer_norm_4096x1024 gelu_16M block_fwd_bwd physskin_step
  attn_naive_fwd_1024 attn_tiled_fwd_1024 attn_naive_fwdbwd_1024 attn_tiled_fwdbwd_1024 gru_fwd_bwd)
# physskin_step reads the small preset (bench/bench_physskin.c, bench/physskin_torch.py)
export PHYSSKIN_CONFIG=${PHYSSKIN_CONFIG:-$here/../configs/physskin-small.json}

# The machine may be shared: each case runs BENCH_ROUNDS (default 2) times, anima and torch
# alternating, and each side keeps its best (lowest) median.
rounds=${BENCH_ROUNDS:-2}
declare -A ta tt na nt ma mt
keep() { # keep ARRAY_T ARRAY_N name ms n: store when lower than what is there
  local -n T=$1 N=$2
  if [ -z "${T[$3]:-}" ] || awk -v a="$4" -v b="${T[$3]}" 'BEGIN { exit !(a < b) }'; then T[$3]=$4; N[$3]=$5; fi
}
keepmem() { # keepmem ARRAY name peak growth: store "peak growth" when the peak is lower
  local -n M=$1
  if [ -z "${M[$2]:-}" ] || awk -v a="$3" -v b="${M[$2]%% *}" 'BEGIN { exit !(a < b) }'; then M[$2]="$3 $4"; fi
}
for c in "${cases[@]}"; do
  for ((r = 0; r < rounds; r++)); do
    while read -r tag name ms n; do
      [ "$tag" = case ] && keep ta na "$name" "$ms" "$n"
      [ "$tag" = mem ] && keepmem ma "$name" "$ms" "$n"
    done < <(OMP_NUM_THREADS=$threads "$bin" "$c")
    while read -r tag name ms n; do
      [ "$tag" = case ] && keep tt nt "$name" "$ms" "$n"
      [ "$tag" = mem ] && keepmem mt "$name" "$ms" "$n"
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
  [ -n "${ma[$c]:-}${mt[$c]:-}" ] || continue
  read -r pa ga <<<"${ma[$c]:-nan nan}"
  read -r pt gt <<<"${mt[$c]:-nan nan}"
  echo "mem $c anima $pa MiB (+$ga) torch $pt MiB (+$gt)"
done
for c in "${cases[@]}"; do
  a=${ta[$c]:-nan} t=${tt[$c]:-nan}
  echo "ratio $c $(awk -v a="$a" -v t="$t" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }')"
done

# The loaded case (issue 17): the same cases with one other busy process pinned on CPU 0 (a shell
# spinning), anima with the library's own defaults (no OMP_WAIT_POLICY: base/par.h's bounded
# waiting) and torch as above, side by side, and anima single-threaded under the same load:
# "loaded <case> <anima_ms> <torch_ms> <anima/torch> <anima 1 thread ms> <anima/1 thread>".
# Targets: anima/torch <= 1.0, anima/1 thread <= 1.2. BENCH_LOADED=0 skips it.
if [ "${BENCH_LOADED:-1}" != 0 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  declare -A la lt l1 nla nlt nl1
  taskset -c 0 sh -c 'while :; do :; done' &
  hog=$!
  trap 'kill $hog 2>/dev/null' EXIT
  for c in "${cases[@]}"; do
    for ((r = 0; r < rounds; r++)); do
      while read -r tag name ms n; do [ "$tag" = case ] && keep la nla "$name" "$ms" "$n"; done \
        < <(env -u OMP_WAIT_POLICY OMP_NUM_THREADS=$threads "$bin" "$c")
      while read -r tag name ms n; do [ "$tag" = case ] && keep lt nlt "$name" "$ms" "$n"; done \
        < <(OMP_NUM_THREADS=$threads BENCH_THREADS=$threads "$py" "$here/torch_bench.py" "$c")
      while read -r tag name ms n; do [ "$tag" = case ] && keep l1 nl1 "$name" "$ms" "$n"; done \
        < <(env -u OMP_WAIT_POLICY OMP_NUM_THREADS=1 "$bin" "$c")
    done
  done
  kill $hog 2>/dev/null
  wait $hog 2>/dev/null || true
  trap - EXIT
  printf '%-22s %12s %12s %8s %12s %8s\n' "loaded (1 busy core)" anima_ms torch_ms ratio anima_1t_ms vs_1t
  for c in "${cases[@]}"; do
    a=${la[$c]:-nan} t=${lt[$c]:-nan} o=${l1[$c]:-nan}
    printf '%-22s %12s %12s %8s %12s %8s\n' "$c" "$a" "$t" \
      "$(awk -v a="$a" -v t="$t" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }')" "$o" \
      "$(awk -v a="$a" -v t="$o" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }')"
  done
  for c in "${cases[@]}"; do
    a=${la[$c]:-nan} t=${lt[$c]:-nan} o=${l1[$c]:-nan}
    echo "loaded $c $a $t $(awk -v a="$a" -v t="$t" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }') $o $(awk -v a="$a" -v t="$o" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }')"
  done
fi
# anima against itself: the tiled (online-softmax) attention over the naive one, where both ran
for c in "${cases[@]}"; do
  [[ $c == attn_tiled_* ]] || continue
  n=${c/attn_tiled_/attn_naive_}
  a=${ta[$c]:-} b=${ta[$n]:-}
  [ -n "$a" ] && [ -n "$b" ] || continue
  echo "ratio ${c/attn_tiled_/attn_tiled_vs_naive_} $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
done
