#!/usr/bin/python3
"""tests/oracle/make_nn_fixtures.py — PyTorch (float64) twin of a small model built from
nn/modules.h, written as tests/oracle/fixtures/nn_model.afx for tests/test_nn.c.

Run from anywhere with the system Python (torch, numpy):
    /usr/bin/python3 tests/oracle/make_nn_fixtures.py [out_dir]
Deterministic (fixed seeds). Format: see make_fixtures.py / tests/oracle_io.h.

The torch modules below mirror Michelangelo's michelangelo/models/modules/transformer_blocks.py
(from OpenAI's shap-e): MultiheadAttention (c_qkv, c_proj), MultiheadCrossAttention (c_q, c_kv,
c_proj), MLP (c_fc, c_proj, exact GELU), ResidualAttentionBlock (attn, ln_1, mlp, ln_2) and
ResidualCrossAttentionBlock (attn, ln_1, ln_2, mlp, ln_3), declared in the same attribute order,
so state_dict() lists the same keys in the same order; and its FourierEmbedder
(include_pi=False, include_input=True). One layout difference, on purpose: c_qkv's rows here are
[q | k | v] over all heads (as nn/functional.h), not Michelangelo's per-head interleaving.
ResBlock (fc1, fc2) and ONILinear (weight = Z, bias) are PhysSkin++'s decoder pieces
(physskin.md §3, §6).

nn_model.afx holds:
    config          i64 [B, T, S, C, Cc, heads, hidden, res_hidden, n_out, n_freqs, n_blocks, oni_iters]
    sd/<key>        every state_dict entry, in state_dict order (the test checks names and order)
    in/pts, in/ctx  the inputs: points (B, T, 3) and context (B, S, Cc)
    out, w          the output (B, T, n_out) and a random weight for the loss sum(out * w)
    grad/pts, grad/ctx, grad/<key>   d loss / d input and d loss / d parameter

and nn_gru.afx (tests/test_gru.c), torch.nn.GRU and torch.nn.GRUCell against nn/gru.h:
    gru/config      i64 [B, T, in, hidden, layers]
    gru/sd/<key>    torch.nn.GRU(in, hidden, layers, batch_first=True)'s state_dict, in order
    gru/in/x, gru/in/h0           (B, T, in), (layers, B, hidden)
    gru/out, gru/h_n, gru/w_out, gru/w_hn   outputs and the weights of loss sum(out w_out) + sum(h_n w_hn)
    gru/grad/x, gru/grad/h0, gru/grad/<key>
    cell/...        the same for torch.nn.GRUCell(in, hidden): in/x (B, in), in/h (B, hidden),
                    out (B, hidden), w; loss sum(out w)
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import Writer, to_np  # noqa: E402  (the afx writer)

F64 = torch.float64
OUT_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")
rng = np.random.default_rng(7)


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def rn(*shape, scale=1.0):
    return f32(rng.standard_normal(shape) * scale)


class FourierEmbedder(nn.Module):
    """Michelangelo's, include_pi=False: [x | sin(x_d 2^k) (d major, k minor) | cos(...)]"""

    def __init__(self, num_freqs):
        super().__init__()
        self.register_buffer("frequencies", 2.0 ** torch.arange(num_freqs, dtype=F64), persistent=False)

    def forward(self, x):
        embed = (x[..., None].contiguous() * self.frequencies).view(*x.shape[:-1], -1)
        return torch.cat((x, embed.sin(), embed.cos()), dim=-1)


def attention(q, k, v, heads):
    B, T, C = q.shape
    S, d = k.shape[1], C // heads
    q = q.view(B, T, heads, d).transpose(1, 2)
    k = k.view(B, S, heads, d).transpose(1, 2)
    v = v.view(B, S, heads, d).transpose(1, 2)
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
    return (w @ v).transpose(1, 2).reshape(B, T, C)


class MultiheadAttention(nn.Module):
    def __init__(self, width, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.c_qkv = nn.Linear(width, 3 * width, bias=qkv_bias, dtype=F64)
        self.c_proj = nn.Linear(width, width, dtype=F64)

    def forward(self, x):
        q, k, v = self.c_qkv(x).chunk(3, dim=-1)
        return self.c_proj(attention(q, k, v, self.heads))


class MultiheadCrossAttention(nn.Module):
    def __init__(self, width, data_width, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.c_q = nn.Linear(width, width, bias=qkv_bias, dtype=F64)
        self.c_kv = nn.Linear(data_width, 2 * width, bias=qkv_bias, dtype=F64)
        self.c_proj = nn.Linear(width, width, dtype=F64)

    def forward(self, x, data):
        k, v = self.c_kv(data).chunk(2, dim=-1)
        return self.c_proj(attention(self.c_q(x), k, v, self.heads))


class MLP(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.c_fc = nn.Linear(width, hidden, dtype=F64)
        self.c_proj = nn.Linear(hidden, width, dtype=F64)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class ResidualAttentionBlock(nn.Module):
    def __init__(self, width, heads, hidden, qkv_bias):
        super().__init__()
        self.attn = MultiheadAttention(width, heads, qkv_bias)
        self.ln_1 = nn.LayerNorm(width, dtype=F64)
        self.mlp = MLP(width, hidden)
        self.ln_2 = nn.LayerNorm(width, dtype=F64)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ResidualCrossAttentionBlock(nn.Module):
    def __init__(self, width, data_width, heads, hidden, qkv_bias):
        super().__init__()
        self.attn = MultiheadCrossAttention(width, data_width, heads, qkv_bias)
        self.ln_1 = nn.LayerNorm(width, dtype=F64)
        self.ln_2 = nn.LayerNorm(data_width, dtype=F64)
        self.mlp = MLP(width, hidden)
        self.ln_3 = nn.LayerNorm(width, dtype=F64)

    def forward(self, x, data):
        x = x + self.attn(self.ln_1(x), self.ln_2(data))
        return x + self.mlp(self.ln_3(x))


class ResBlock(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden, dtype=F64)
        self.fc2 = nn.Linear(hidden, width, dtype=F64)

    def forward(self, x):
        return x + self.fc2(F.elu(self.fc1(x)))


def oni(z, iters, eps=1e-5):
    """Huang et al. 2020, alg. 1 (physskin.md §6)"""
    zc = z - z.mean(dim=1, keepdim=True)
    wide = z.shape[0] <= z.shape[1]
    s = zc @ zc.T if wide else zc.T @ zc
    s = s + eps * torch.eye(s.shape[0], dtype=z.dtype)
    fro = s.norm()
    s = s / fro
    b = torch.eye(s.shape[0], dtype=z.dtype)
    for _ in range(iters):
        b = 1.5 * b - 0.5 * b @ b @ b @ s
    w = b @ zc if wide else zc @ b
    return w / fro.sqrt()


class ONILinear(nn.Module):
    def __init__(self, inp, out, iters):
        super().__init__()
        self.iters = iters
        self.weight = nn.Parameter(torch.empty(out, inp, dtype=F64))
        self.bias = nn.Parameter(torch.empty(out, dtype=F64))

    def forward(self, x):
        return F.linear(x, oni(self.weight, self.iters), self.bias)


class TinyNet(nn.Module):
    def __init__(self, C, Cc, heads, hidden, res_hidden, n_out, n_freqs, n_blocks, oni_iters):
        super().__init__()
        self.pe = FourierEmbedder(n_freqs)
        self.embed = nn.Linear(3 * (2 * n_freqs + 1), C, dtype=F64)
        self.cross = ResidualCrossAttentionBlock(C, Cc, heads, hidden, qkv_bias=False)
        self.blocks = nn.ModuleList([ResidualAttentionBlock(C, heads, hidden, qkv_bias=False) for _ in range(n_blocks)])
        self.ln_post = nn.LayerNorm(C, dtype=F64)
        self.res = ResBlock(C, res_hidden)
        self.out = ONILinear(C, n_out, oni_iters)

    def forward(self, pts, ctx):
        x = self.cross(self.embed(self.pe(pts)), ctx)
        for b in self.blocks:
            x = b(x)
        return self.out(self.res(self.ln_post(x)))


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    cfg = dict(B=2, T=5, S=7, C=16, Cc=6, heads=2, hidden=64, res_hidden=24, n_out=6, n_freqs=4, n_blocks=2,
               oni_iters=5)
    net = TinyNet(cfg["C"], cfg["Cc"], cfg["heads"], cfg["hidden"], cfg["res_hidden"], cfg["n_out"],
                  cfg["n_freqs"], cfg["n_blocks"], cfg["oni_iters"])
    w = Writer()
    w.add("config", np.array(list(cfg.values()), dtype=np.int64))
    # non-trivial values everywhere (LayerNorm away from 1/0), exactly representable in f32
    with torch.no_grad():
        for k, p in net.state_dict(keep_vars=True).items():
            fan = p.shape[1] if p.ndim == 2 else 1
            base = 1.0 if k.endswith("weight") and p.ndim == 1 else 0.0
            p.copy_(torch.tensor(base + rn(*p.shape, scale=(0.2 if p.ndim == 1 else 1 / math.sqrt(fan)))))
    params = list(net.state_dict(keep_vars=True).items())
    for k, p in params:
        w.add(f"sd/{k}", to_np(p))
    pts = torch.tensor(rn(cfg["B"], cfg["T"], 3, scale=0.7), dtype=F64, requires_grad=True)
    ctx = torch.tensor(rn(cfg["B"], cfg["S"], cfg["Cc"]), dtype=F64, requires_grad=True)
    w.add("in/pts", to_np(pts))
    w.add("in/ctx", to_np(ctx))
    out = net(pts, ctx)
    wt = torch.tensor(rn(*out.shape), dtype=F64)
    w.add("out", to_np(out))
    w.add("w", wt.numpy())
    leaves = [pts, ctx] + [p for _, p in params]
    gs = torch.autograd.grad((out * wt).sum(), leaves)
    w.add("grad/pts", to_np(gs[0]))
    w.add("grad/ctx", to_np(gs[1]))
    for (k, _), g in zip(params, gs[2:]):
        w.add(f"grad/{k}", to_np(g))
    n = w.write(os.path.join(OUT_DIR, "nn_model.afx"))
    print(f"nn_model.afx: {len(params)} parameters, {n} bytes", file=sys.stderr)


def gru_fixtures():
    """its own generator, so that nn_model.afx stays byte for byte what it was"""
    g = np.random.default_rng(20)

    def r(*shape, scale=1.0):
        return f32(g.standard_normal(shape) * scale)

    B, T, inp, H, L = 3, 5, 4, 6, 2
    w = Writer()
    w.add("gru/config", np.array([B, T, inp, H, L], dtype=np.int64))
    gru = nn.GRU(inp, H, L, batch_first=True, dtype=F64)
    cell = nn.GRUCell(inp, H, dtype=F64)
    for tag, mod in (("gru", gru), ("cell", cell)):
        with torch.no_grad():  # values away from the init range, so the gates are not all near ½
            for _, p in mod.named_parameters():
                p.copy_(torch.tensor(r(*p.shape, scale=0.6)))
        for k, p in mod.state_dict().items():
            w.add(f"{tag}/sd/{k}", to_np(p))
    params = list(gru.named_parameters())
    x = torch.tensor(r(B, T, inp), requires_grad=True)
    h0 = torch.tensor(r(L, B, H, scale=0.5), requires_grad=True)
    out, hn = gru(x, h0)
    wo, wh = torch.tensor(r(*out.shape)), torch.tensor(r(*hn.shape))
    gs = torch.autograd.grad((out * wo).sum() + (hn * wh).sum(), [x, h0] + [p for _, p in params])
    for k, v in (("in/x", x), ("in/h0", h0), ("out", out), ("h_n", hn), ("w_out", wo), ("w_hn", wh),
                 ("grad/x", gs[0]), ("grad/h0", gs[1])):
        w.add(f"gru/{k}", to_np(v))
    for (k, _), gk in zip(params, gs[2:]):
        w.add(f"gru/grad/{k}", to_np(gk))
    params = list(cell.named_parameters())
    x = torch.tensor(r(B, inp), requires_grad=True)
    h = torch.tensor(r(B, H, scale=0.5), requires_grad=True)
    out = cell(x, h)
    wo = torch.tensor(r(*out.shape))
    gs = torch.autograd.grad((out * wo).sum(), [x, h] + [p for _, p in params])
    for k, v in (("in/x", x), ("in/h", h), ("out", out), ("w", wo), ("grad/x", gs[0]), ("grad/h", gs[1])):
        w.add(f"cell/{k}", to_np(v))
    for (k, _), gk in zip(params, gs[2:]):
        w.add(f"cell/grad/{k}", to_np(gk))
    n = w.write(os.path.join(OUT_DIR, "nn_gru.afx"))
    print(f"nn_gru.afx: {n} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
    gru_fixtures()
