#!/usr/bin/python3
"""tests/oracle/make_ssim_fixtures.py — PyTorch (float64) reference values and gradients for the
photometric loss of models/gaussians/loss.h (L1, SSIM with 'same' and 'valid' padding, and
(1 - lambda) L1 + lambda (1 - SSIM)), replayed by tests/test_gaussians.c in f32 and f64.

Run with the system Python (torch, numpy):
    /usr/bin/python3 tests/oracle/make_ssim_fixtures.py [out_dir]
It rewrites tests/oracle/fixtures/ssim_loss.afx deterministically (fixed seed).

SSIM is computed the way the 3DGS reference computes it (Kerbl et al. 2023, utils/loss_utils.py):
a normalized 1D Gaussian g (11 taps, sigma 1.5), the 2D window g g^T, conv2d per channel
(groups = C) with padding = 11 // 2 (zero padding: 'same') — or padding 0 ('valid') — and
C1 = 0.01^2, C2 = 0.03^2, mean of the map. Written from the published formula, not copied.

Format: the "afx" records of tests/oracle_io.h (see make_fixtures.py). Per case <c>:
    <c>/a, <c>/b            the images, (H, W, C), values exactly representable in f32
    <c>/l1, <c>/ssim_same, <c>/ssim_valid (absent when H or W < 11), <c>/loss (lambda 0.2)
    <c>/<value>/grad_a, <c>/<value>/grad_b   d value / d a, d value / d b
"""
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

F64 = torch.float64
HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")
rng = np.random.default_rng(20240917)


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


class Writer:
    def __init__(self):
        self.records = []

    def add(self, name, arr):
        a = np.asarray(arr, dtype="<f8")
        nb = name.encode("ascii")
        head = struct.pack("<H", len(nb)) + nb + struct.pack("<BB", 0, a.ndim)
        head += struct.pack(f"<{a.ndim}q", *a.shape)
        self.records.append(head + np.ascontiguousarray(a).tobytes())

    def write(self, path):
        data = b"ANIMAFX1" + struct.pack("<I", len(self.records)) + b"".join(self.records)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return len(data)


def window(c):
    x = torch.arange(11, dtype=F64) - 5
    g = torch.exp(-(x * x) / (2 * 1.5 ** 2))
    g = g / g.sum()
    return (g[:, None] @ g[None, :]).expand(c, 1, 11, 11).contiguous()


def ssim(a, b, padding):
    """a, b: (H, W, C) -> mean SSIM, the map computed on (1, C, H, W)"""
    x, y = a.permute(2, 0, 1)[None], b.permute(2, 0, 1)[None]
    c = x.shape[1]
    w = window(c)
    conv = lambda t: F.conv2d(t, w, padding=padding, groups=c)
    mx, my = conv(x), conv(y)
    sx = conv(x * x) - mx * mx
    sy = conv(y * y) - my * my
    sxy = conv(x * y) - mx * my
    C1, C2 = 0.01 ** 2, 0.03 ** 2
    m = ((2 * mx * my + C1) * (2 * sxy + C2)) / ((mx * mx + my * my + C1) * (sx + sy + C2))
    return m.mean()


def case(w, name, a, b):
    w.add(f"{name}/a", a)
    w.add(f"{name}/b", b)
    H, W = a.shape[:2]
    fns = {
        "l1": lambda x, y: (x - y).abs().mean(),
        "ssim_same": lambda x, y: ssim(x, y, 5),
        "loss": lambda x, y: 0.8 * (x - y).abs().mean() + 0.2 * (1 - ssim(x, y, 5)),
    }
    if H >= 11 and W >= 11:
        fns["ssim_valid"] = lambda x, y: ssim(x, y, 0)
    for key, fn in fns.items():
        x = torch.tensor(a, dtype=F64, requires_grad=True)
        y = torch.tensor(b, dtype=F64, requires_grad=True)
        v = fn(x, y)
        v.backward()
        w.add(f"{name}/{key}", v.detach().numpy())
        w.add(f"{name}/{key}/grad_a", x.grad.numpy())
        w.add(f"{name}/{key}/grad_b", y.grad.numpy())


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    w = Writer()
    # a render-like pair: smooth structure plus noise, the reference a perturbed copy
    H, W = 20, 24
    yy, xx = np.meshgrid(np.linspace(0, 1, H), np.linspace(0, 1, W), indexing="ij")
    base = np.stack([0.5 + 0.4 * np.sin(6 * xx + c) * np.cos(4 * yy - c) for c in range(3)], -1)
    a = f32(np.clip(base + 0.05 * rng.standard_normal(base.shape), 0, 1))
    b = f32(np.clip(base + 0.1 * rng.standard_normal(base.shape), 0, 1))
    case(w, "smooth", a, b)
    # unrelated uniform noise, non-square and odd
    case(w, "noise", f32(rng.uniform(0, 1, (17, 13, 3))), f32(rng.uniform(0, 1, (17, 13, 3))))
    # smaller than the window: 'same' only, every pixel sees the padding
    case(w, "tiny", f32(rng.uniform(0, 1, (7, 9, 3))), f32(rng.uniform(0, 1, (7, 9, 3))))
    n = w.write(os.path.join(OUT_DIR, "ssim_loss.afx"))
    print(f"ssim_loss.afx: {len(w.records)} records, {n} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
