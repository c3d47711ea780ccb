#!/usr/bin/python3
"""tests/oracle/make_optim_fixtures.py — PyTorch (float64) trajectories of torch.optim's SGD,
Adam and AdamW, LambdaLR warm-up + cosine and clip_grad_norm_, replayed by tests/test_optim.c.

Run from anywhere with the system Python (torch, numpy):
    /usr/bin/python3 tests/oracle/make_optim_fixtures.py [out_dir]
It rewrites tests/oracle/fixtures/optim_*.txt; fixed seeds make it deterministic.

The problem: a quadratic f(θ) = ½ θᵀAθ − bᵀθ over n = 12 parameters held as two tensors
(a 3×3 "weight" and a 3-vector "bias", flattened in that order, as nn_params_pack would lay
them out), A symmetric positive definite. The gradient Aθ − b is computed by autograd here and
by the C test directly from A and b.

Files (plain text, numpy.savetxt with %.17g, '#' lines are comments):
    optim_problem.txt      row 0: θ0 (n values); row 1: b; rows 2..n+1: A
    optim_<case>.txt       one row per step s = 0..9: lr used at step s, the gradient norm
                           before clipping (0 when the case does not clip), θ after the step
Cases (hyper-parameters are repeated in tests/test_optim.c; keep them in step):
    sgd_plain       SGD(lr=0.1)
    sgd_momentum    SGD(lr=0.05, momentum=0.9, weight_decay=0.01)
    sgd_nesterov    SGD(lr=0.05, momentum=0.9, nesterov=True)
    adam            Adam(lr=0.05, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    adamw_sched     AdamW(lr=0.1, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1) with LambdaLR
                    warm-up 3 steps, cosine to floor 0.01 at step 8 (steps 8, 9 at the floor)
                    and clip_grad_norm_(max_norm=1.0) before every step
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")
STEPS = 10
N = 12

rng = np.random.default_rng(7031)
M = rng.standard_normal((N, N))
A = M.T @ M / N + 0.2 * np.eye(N)
b = rng.standard_normal(N)
theta0 = rng.standard_normal(N)


def schedule(step, peak, floor, warmup, total):
    """optim_schedule_lr in optim/optim.c, written again"""
    if step < warmup:
        return peak * (step + 1) / warmup
    if step >= total:
        return floor
    phase = (step - warmup) / (total - warmup)
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * phase))


def run(make_opt, clip=None, sched=None):
    w = torch.tensor(theta0[:9].reshape(3, 3), dtype=torch.float64, requires_grad=True)
    bias = torch.tensor(theta0[9:], dtype=torch.float64, requires_grad=True)
    At = torch.tensor(A)
    bt = torch.tensor(b)
    opt = make_opt([w, bias])
    lr_sched = sched(opt) if sched else None
    rows = []
    for _ in range(STEPS):
        opt.zero_grad()
        th = torch.cat([w.reshape(-1), bias])
        loss = 0.5 * th @ (At @ th) - bt @ th
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_([w, bias], clip)) if clip else 0.0
        lr = opt.param_groups[0]["lr"]
        opt.step()
        if lr_sched:
            lr_sched.step()
        th = torch.cat([w.detach().reshape(-1), bias.detach()]).numpy()
        rows.append(np.concatenate([[lr, norm], th]))
    return np.array(rows)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    fmt = "%.17g"
    np.savetxt(os.path.join(OUT_DIR, "optim_problem.txt"), np.vstack([theta0, b, A]), fmt=fmt,
               header="quadratic 0.5 th'A th - b'th, n = %d; rows: theta0, b, A (%d rows)" % (N, N))
    peak, floor, warmup, total = 0.1, 0.01, 3, 8
    cases = {
        "sgd_plain": run(lambda p: torch.optim.SGD(p, lr=0.1)),
        "sgd_momentum": run(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01)),
        "sgd_nesterov": run(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
        "adam": run(lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)),
        "adamw_sched": run(
            lambda p: torch.optim.AdamW(p, lr=peak, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
            clip=1.0,
            sched=lambda o: torch.optim.lr_scheduler.LambdaLR(
                o, lambda s: schedule(s, peak, floor, warmup, total) / peak)),
    }
    for name, rows in cases.items():
        np.savetxt(os.path.join(OUT_DIR, "optim_%s.txt" % name), rows, fmt=fmt,
                   header="%s, torch %s: per step: lr, grad norm before clipping, theta after" %
                   (name, torch.__version__))


if __name__ == "__main__":
    main()
