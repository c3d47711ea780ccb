"""bench/torch_bench.py — the PyTorch side of the side-by-side benchmark (bench/run.sh joins it
with anima's bench binary). Same cases, same sizes, same method: a few warm-up steps, then N
timed steps with N chosen so the case takes about BENCH_SECONDS (default 2) in all; prints
    case <name> <median_ms> <n>
Runs on the CPU with BENCH_THREADS (default 2) intra-op threads.
Usage: torch_bench.py [case ...] (no argument: all cases but the T = 4096 attention ones, which
run only when named, as in bench/bench_attention.c)."""
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
torch.manual_seed(0)
BUDGET = float(os.environ.get("BENCH_SECONDS", "2"))


def run_case(name, step):
    t_warm = 1e9
    for _ in range(3):
        t0 = time.perf_counter()
        step()
        t_warm = min(t_warm, time.perf_counter() - t0)
    n = int(BUDGET / max(t_warm, 1e-6))
    n = max(5, min(500, n))
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    med = ts[n // 2] if n % 2 else 0.5 * (ts[n // 2 - 1] + ts[n // 2])
    print(f"case {name} {med * 1e3:.4f} {n}", flush=True)


# the pre-LN self-attention block of nn/functional.c: x + proj(attn(ln1 x)); + fc2(gelu(fc(ln2 x)))
B, T, C, H, M = 4, 256, 256, 8, 1024


def param(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).requires_grad_()


def block_weights():
    s, sm = 1 / math.sqrt(C), 1 / math.sqrt(M)
    return dict(
        ln1_w=torch.ones(C, requires_grad=True), ln1_b=torch.zeros(C, requires_grad=True),
        qkv_w=param(3 * C, C, scale=s), qkv_b=param(3 * C, scale=s),
        proj_w=param(C, C, scale=s), proj_b=param(C, scale=s),
        ln2_w=torch.ones(C, requires_grad=True), ln2_b=torch.zeros(C, requires_grad=True),
        fc_w=param(M, C, scale=s), fc_b=param(M, scale=s),
        fc2_w=param(C, M, scale=sm), fc2_b=param(C, scale=sm))


def self_block(x, w, heads):
    b, t, c = x.shape
    d = c // heads
    h = F.layer_norm(x, (c,), w["ln1_w"], w["ln1_b"], 1e-5)
    q, k, v = F.linear(h, w["qkv_w"], w["qkv_b"]).split(c, dim=-1)
    q, k, v = (z.reshape(b, t, heads, d).transpose(1, 2) for z in (q, k, v))
    a = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(d)), dim=-1) @ v
    x = x + F.linear(a.transpose(1, 2).reshape(b, t, c), w["proj_w"], w["proj_b"])
    h = F.layer_norm(x, (c,), w["ln2_w"], w["ln2_b"], 1e-5)
    return x + F.linear(F.gelu(F.linear(h, w["fc_w"], w["fc_b"])), w["fc2_w"], w["fc2_b"])


# bench/bench_attention.c's cases: softmax(q kᵀ/√d) v with 8 heads of 64 on (1, T, 512) inputs
# that require grad (anima's forward records its tape too), split into (1, 8, T, 64) heads and
# merged back as nn_attention does. torch 1.13 on the CPU has one (materializing) attention, so
# attn_naive_* and attn_tiled_* time the same torch code: each anima path against it.
def attention(q, k, v, heads):
    b, t, c = q.shape
    d = c // heads
    q, k, v = (z.view(b, t, heads, d).transpose(1, 2) for z in (q, k, v))
    a = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(d)), dim=-1) @ v
    return a.transpose(1, 2).reshape(b, t, c)


def attention_cases(argv):
    for t in (1024, 4096):
        names = [f"attn_{path}_{kind}_{t}" for kind in ("fwd", "fwdbwd") for path in ("naive", "tiled")]
        names = [n for n in names if n in argv or (not argv and t == 1024)]
        if not names:
            continue
        q, k, v = (torch.randn(1, t, 512, requires_grad=True) for _ in range(3))
        gy = torch.randn(1, t, 512)
        for name in names:
            if "_fwdbwd_" in name:
                run_case(name, lambda: attention(q, k, v, 8).backward(gy))
            else:
                run_case(name, lambda: attention(q, k, v, 8))


def main(argv):
    want = lambda name: not argv or name in argv
    with torch.no_grad():
        if want("sgemm_1024"):
            a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
            run_case("sgemm_1024", lambda: torch.mm(a, b))
        if want("softmax_4096x1024"):
            x = torch.randn(4096, 1024)
            run_case("softmax_4096x1024", lambda: torch.softmax(x, -1))
        if want("layer_norm_4096x1024"):
            x, w, b = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)
            run_case("layer_norm_4096x1024", lambda: F.layer_norm(x, (1024,), w, b, 1e-5))
        if want("gelu_16M"):
            x = torch.randn(16 << 20)
            run_case("gelu_16M", lambda: F.gelu(x))
    if want("block_fwd_bwd"):
        w = block_weights()
        x = torch.randn(B, T, C, requires_grad=True)
        gy = torch.randn(B, T, C)
        # gradients accumulate into .grad, as anima's do (allocated once, then added to)
        run_case("block_fwd_bwd", lambda: self_block(x, w, H).backward(gy))
    attention_cases(argv)
    if want("gru_fwd_bwd"):  # bench/bench_gru.c
        gru = torch.nn.GRU(120, 256, 2, batch_first=True)
        x = torch.randn(64, 7, 120, requires_grad=True)
        gy = torch.randn(64, 7, 256)
        run_case("gru_fwd_bwd", lambda: gru(x)[0].backward(gy))
    if want("physskin_step"):
        import physskin_torch  # the PhysSkin++ training step (bench/physskin_torch.py)
        physskin_torch.run_bench(run_case)


if __name__ == "__main__":
    main(sys.argv[1:])
