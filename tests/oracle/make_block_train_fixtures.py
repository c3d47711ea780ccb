#!/usr/bin/python3
"""tests/oracle/make_block_train_fixtures.py — PyTorch (float64) training trajectory of one pre-LN
self-attention block, replayed by tests/test_block_train.c (the issue's "a pre-LN transformer
block trained for 20 AdamW steps with warm-up/cosine from the same initial weights matches
PyTorch's loss trajectory and final parameters").

Run from anywhere with the system Python (torch, numpy):
    /usr/bin/python3 tests/oracle/make_block_train_fixtures.py [out_dir]
It rewrites tests/oracle/fixtures/block_train.afx; fixed seeds make it deterministic. Format:
see make_fixtures.py / tests/oracle_io.h.

The block is make_nn_fixtures.py's ResidualAttentionBlock (Michelangelo's, fused qkv with rows
[q | k | v], exact-erf GELU MLP, LayerNorm eps 1e-5), declared in the same attribute order as
nn_self_block_init registers its parameters, so state_dict() keys map 1:1 onto nn_params names
(no prefix): attn.c_qkv.weight, attn.c_proj.{weight,bias}, ln_1.*, mlp.c_fc.*,
mlp.c_proj.*, ln_2.*.

The problem: x (B, T, C) and a target y of the same shape, loss = mean((block(x) − y)²) (MSE).
Training: torch.optim.AdamW(lr = PEAK, betas, eps, weight_decay) with
LambdaLR(lambda s: schedule(s) / PEAK), scheduler.step() after each optimizer.step(): the
convention of optim_schedule_lr (optim/optim.h). No gradient clipping. STEPS updates.

block_train.afx holds:
    config          i64 [B, T, C, heads, hidden, qkv_bias, steps, warmup, total]
    hyper           f64 [peak, floor, beta1, beta2, eps, weight_decay]
    init/<key>      the initial weights, in state_dict order (values exactly representable in
                    f32, so the f32 replay starts from the same numbers)
    x, y            input and target (f32-representable)
    lr              (steps) the learning rate used by update s
    loss            (steps) the loss before update s (at the weights after s updates)
    final/<key>     the weights after all steps
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import Writer, to_np  # noqa: E402  (the afx writer)
from make_nn_fixtures import ResidualAttentionBlock  # noqa: E402  (the twin of NnSelfBlock)

F64 = torch.float64
OUT_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")

# qkv_bias False, as Michelangelo builds its blocks: with a bias on k the loss does not depend on
# the k part of it (it adds q·b_k to every score of a row, which the softmax cancels), so its
# gradient is pure round-off, and Adam's normalization turns round-off into lr-sized updates
# that no two implementations (or precisions) share.
B, T, C, HEADS, HIDDEN, QKV_BIAS = 2, 8, 16, 4, 64, False
STEPS, WARMUP, TOTAL = 20, 4, 20
PEAK, FLOOR = 1e-2, 1e-3
BETA1, BETA2, EPS, WEIGHT_DECAY = 0.9, 0.999, 1e-8, 0.01

rng = np.random.default_rng(20250117)


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def rn(*shape, scale=1.0):
    return f32(rng.standard_normal(shape) * scale)


def schedule(step):
    """optim_schedule_lr in optim/optim.c, written again (as make_optim_fixtures.py)"""
    if step < WARMUP:
        return PEAK * (step + 1) / WARMUP
    if step >= TOTAL:
        return FLOOR
    phase = (step - WARMUP) / (TOTAL - WARMUP)
    return FLOOR + (PEAK - FLOOR) * 0.5 * (1 + math.cos(math.pi * phase))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.manual_seed(0)
    block = ResidualAttentionBlock(C, HEADS, HIDDEN, QKV_BIAS)
    w = Writer()
    w.add("config", np.array([B, T, C, HEADS, HIDDEN, int(QKV_BIAS), STEPS, WARMUP, TOTAL], dtype=np.int64))
    w.add("hyper", np.array([PEAK, FLOOR, BETA1, BETA2, EPS, WEIGHT_DECAY], dtype=np.float64))
    # initial weights: torch-like scales, LayerNorm away from 1/0, all f32-representable
    with torch.no_grad():
        for k, p in block.state_dict(keep_vars=True).items():
            fan = p.shape[1] if p.ndim == 2 else 1
            base = 1.0 if k.endswith("weight") and p.ndim == 1 else 0.0
            p.copy_(torch.tensor(base + rn(*p.shape, scale=(0.2 if p.ndim == 1 else 1 / math.sqrt(fan)))))
    params = list(block.state_dict(keep_vars=True).items())
    for k, p in params:
        w.add(f"init/{k}", to_np(p))
    x = torch.tensor(rn(B, T, C), dtype=F64)
    y = torch.tensor(rn(B, T, C), dtype=F64)
    w.add("x", x.numpy())
    w.add("y", y.numpy())

    opt = torch.optim.AdamW(block.parameters(), lr=PEAK, betas=(BETA1, BETA2), eps=EPS, weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule(s) / PEAK)
    lrs, losses = [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.mean((block(x) - y) ** 2)
        loss.backward()
        lrs.append(opt.param_groups[0]["lr"])
        losses.append(loss.item())
        opt.step()
        sched.step()
    w.add("lr", np.array(lrs))
    w.add("loss", np.array(losses))
    for k, p in block.state_dict(keep_vars=True).items():
        w.add(f"final/{k}", to_np(p))
    n = w.write(os.path.join(OUT_DIR, "block_train.afx"))
    print(f"block_train.afx: {len(params)} parameters, loss {losses[0]:.6g} -> {losses[-1]:.6g}, {n} bytes "
          f"(torch {torch.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
