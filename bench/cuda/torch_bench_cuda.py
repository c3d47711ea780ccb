"""bench/cuda/torch_bench_cuda.py — the PyTorch side of `make bench-cuda`: the cases of
bench/torch_bench.py (same names, sizes and block) with every tensor on device='cuda'. Same
method as bench/cuda/bench_cuda.c: 3 warm-up steps, then N timed steps (about BENCH_SECONDS in
all), each timed between two torch.cuda.synchronize() calls so a step's time includes its
kernels, not just their launches. Prints  case <name> <median_ms> <n>.
Without a CUDA device it prints "skipped: no CUDA device" and exits 0.
Usage: torch_bench_cuda.py [case ...] (no argument: all cases)."""
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

BUDGET = float(os.environ.get("BENCH_SECONDS", "2"))
DEV = "cuda"
# anima's matmul is plain f32 (cuBLAS without TF32): compare like with like
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def run_case(name, step):
    t_warm = 1e9
    torch.cuda.synchronize()
    for _ in range(3):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        t_warm = min(t_warm, time.perf_counter() - t0)
    n = int(BUDGET / max(t_warm, 1e-6))
    n = max(5, min(2000, n))
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    med = ts[n // 2] if n % 2 else 0.5 * (ts[n // 2 - 1] + ts[n // 2])
    print(f"case {name} {med * 1e3:.4f} {n}", flush=True)


B, T, C, H, M = 4, 256, 256, 8, 1024


def leaf(t):
    return t.to(DEV).requires_grad_()


def param(*shape, scale=1.0):
    return leaf(torch.randn(*shape) * scale)


def block_weights():
    s, sm = 1 / math.sqrt(C), 1 / math.sqrt(M)
    return dict(
        ln1_w=leaf(torch.ones(C)), ln1_b=leaf(torch.zeros(C)),
        qkv_w=param(3 * C, C, scale=s), qkv_b=param(3 * C, scale=s),
        proj_w=param(C, C, scale=s), proj_b=param(C, scale=s),
        ln2_w=leaf(torch.ones(C)), ln2_b=leaf(torch.zeros(C)),
        fc_w=param(M, C, scale=s), fc_b=param(M, scale=s),
        fc2_w=param(C, M, scale=sm), fc2_b=param(C, scale=sm))


def self_block(x, w, heads):
    # bench/torch_bench.py's block: explicit softmax attention, as anima's nn_self_block
    b, t, c = x.shape
    d = c // heads
    h = F.layer_norm(x, (c,), w["ln1_w"], w["ln1_b"], 1e-5)
    q, k, v = F.linear(h, w["qkv_w"], w["qkv_b"]).split(c, dim=-1)
    q, k, v = (z.reshape(b, t, heads, d).transpose(1, 2) for z in (q, k, v))
    a = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(d)), dim=-1) @ v
    x = x + F.linear(a.transpose(1, 2).reshape(b, t, c), w["proj_w"], w["proj_b"])
    h = F.layer_norm(x, (c,), w["ln2_w"], w["ln2_b"], 1e-5)
    return x + F.linear(F.gelu(F.linear(h, w["fc_w"], w["fc_b"])), w["fc2_w"], w["fc2_b"])


def main(argv):
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", flush=True)
        return
    torch.manual_seed(0)
    want = lambda name: not argv or name in argv
    randn = lambda *s: torch.randn(*s, device=DEV)
    with torch.no_grad():
        if want("sgemm_1024"):
            a, b = randn(1024, 1024), randn(1024, 1024)
            run_case("sgemm_1024", lambda: torch.mm(a, b))
        if want("softmax_4096x1024"):
            x = randn(4096, 1024)
            run_case("softmax_4096x1024", lambda: torch.softmax(x, -1))
        if want("layer_norm_4096x1024"):
            x, w, b = randn(4096, 1024), randn(1024), randn(1024)
            run_case("layer_norm_4096x1024", lambda: F.layer_norm(x, (1024,), w, b, 1e-5))
        if want("gelu_16M"):
            x = randn(16 << 20)
            run_case("gelu_16M", lambda: F.gelu(x))
    # bench_cuda.c's attn_* cases: B = 1, 8 heads of 64, T = 1024, f32
    for name, backward in (("attn_fwd_1024", False), ("attn_fwdbwd_1024", True)):
        if not want(name):
            continue
        q, k, v = (leaf(torch.randn(1, 8, 1024, 64)) for _ in range(3))
        gy = torch.randn(1, 8, 1024, 64, device=DEV)
        if backward:
            run_case(name, lambda: F.scaled_dot_product_attention(q, k, v).backward(gy))
        else:
            def fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v)
            run_case(name, fwd)
    if want("block_fwd_bwd"):
        w = block_weights()
        x = leaf(torch.randn(B, T, C))
        gy = torch.randn(B, T, C, device=DEV)
        run_case("block_fwd_bwd", lambda: self_block(x, w, H).backward(gy))


if __name__ == "__main__":
    main(sys.argv[1:])
