#!/usr/bin/env bash
# bench/cuda/run.sh — anima vs PyTorch on the same GPU. Usage: run.sh ANIMA_BENCH_CUDA [case ...]
# Per case, anima's bench_cuda and torch_bench_cuda.py run back to back (BENCH_ROUNDS rounds,
# default 2, alternating; each side keeps its best median). Prints the GPU, a table of median
# step times (ms; n = timed steps), then one line per case: "ratio <name> <anima/torch>".
# Without a CUDA device (the binary's --probe asks anima's CUDA backend, i.e. the CUDA runtime;
# a binary built without CUDA answers no) it prints "skipped: no CUDA device" and exits 0.
# The gs_* cases (Gaussian rasterizer, 1080p) have no torch side (nan there); after the table
# they are compared with the published figures (docs/gaussianimate.md §1).
set -euo pipefail
bin=${1:?usage: run.sh ANIMA_BENCH_CUDA [case ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(sgemm_1024 softmax_4096x1024 layer_norm_4096x1024 gelu_16M block_fwd_bwd
  attn_fwd_1024 attn_fwdbwd_1024 gs_fwd_1M_1080p gs_fwdbwd_1M_1080p gs_fwd_2.8M_1080p gs_fwdbwd_2.8M_1080p gs_fwd_3M_1080p gs_fwdbwd_3M_1080p)

if ! "$bin" --probe 2>/dev/null; then
  echo "skipped: no CUDA device"
  exit 0
fi
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "anima has a CUDA device but $py's torch does not (CPU-only wheel?); install a CUDA build of torch" >&2
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'
echo "date: $(date -u +%Y-%m-%d)"

rounds=${BENCH_ROUNDS:-2}
declare -A ta tt na nt
keep() { # keep ARRAY_T ARRAY_N name ms n: store when lower than what is there
  local -n T=$1 N=$2
  if [ -z "${T[$3]:-}" ] || awk -v a="$4" -v b="${T[$3]}" 'BEGIN { exit !(a < b) }'; then T[$3]=$4; N[$3]=$5; fi
}
for c in "${cases[@]}"; do
  for ((r = 0; r < rounds; r++)); do
    # a case that fails on one side (an op without a CUDA kernel) leaves nan, not a dead script
    while read -r tag name ms n; do
      [ "$tag" = case ] && keep ta na "$name" "$ms" "$n"
    done < <("$bin" "$c" || echo "failed $c" >&2)
    while read -r tag name ms n; do
      [ "$tag" = case ] && keep tt nt "$name" "$ms" "$n"
    done < <("$py" "$here/torch_bench_cuda.py" "$c" || echo "failed torch $c" >&2)
  done
done

ratio() { awk -v a="$1" -v t="$2" 'BEGIN { if (a == "nan" || t == "nan") print "nan"; else printf "%.2f", a / t }'; }
printf '%-22s %12s %6s %12s %6s %8s\n' case anima_ms n torch_ms n ratio
for c in "${cases[@]}"; do
  a=${ta[$c]:-nan} t=${tt[$c]:-nan}
  printf '%-22s %12s %6s %12s %6s %8s\n' "$c" "$a" "${na[$c]:--}" "$t" "${nt[$c]:--}" "$(ratio "$a" "$t")"
done
for c in "${cases[@]}"; do
  echo "ratio $c $(ratio "${ta[$c]:-nan}" "${tt[$c]:-nan}")"
done

# Gaussian rasterizer vs the published figures: ~2.8M Gaussians at 1080p on a TITAN RTX,
# graphdeco-inria ≈ 6 ms forward / ≈ 24 ms backward (≈ 30 fwd+bwd), gsplat ≈ 6 / ≈ 10 (≈ 16).
# Target on an H200: fwd+bwd ≤ 5 ms for ~2.8M. The 1M and 3M cases are set against the same
# ~2.8M figures (scale them by the count yourself); only the 2.8M case is judged.
for c in "${cases[@]}"; do
  case $c in gs_*) ;; *) continue ;; esac
  a=${ta[$c]:-nan}
  case $c in
    gs_fwd_*) g=6 s=6 what=forward ;;
    *) g=30 s=16 what=fwd+bwd ;;
  esac
  awk -v c="$c" -v a="$a" -v g="$g" -v s="$s" -v w="$what" 'BEGIN {
    if (a == "nan") { printf "published %s: not measured\n", c; exit }
    printf "published %s: %s %.3f ms; graphdeco (TITAN RTX, 2.8M) %g ms -> %.2fx; gsplat %g ms -> %.2fx", c, w, a, g, g / a, s, s / a
    if (c ~ /^gs_fwdbwd_2\.8M/) printf "; H200 target <= 5 ms: %s", (a <= 5 ? "met" : "MISSED")
    printf "\n" }'
done
