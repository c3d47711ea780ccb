"""bench/physskin_torch.py — the PyTorch reference for anima's physskin_step bench case
(bench/bench_physskin.c): the PhysSkin++ autoencoder of models/physskin/model.c and the PISSL
losses of models/physskin/losses.c, written in PyTorch with the same architecture, sizes,
state-dict names and arithmetic, and one training step as models/physskin/train.c takes it with
the config's defaults: forward (W and ∇W by central differences, all 7C points in one decoder
call), one backward pass per loss term (torch.autograd.grad through the retained graph), ConFIG
(Liu et al. 2024; the same K×K Gram-matrix form as optim/conflict_free.c), clip_grad_norm_,
AdamW. Sizes come from configs/physskin-small.json (or PHYSSKIN_CONFIG).

    physskin_torch.py               time the step: prints
                                        params physskin_step <count>
                                        case physskin_step <median_ms> <n>
                                        mem physskin_step <peak_rss_MiB> <peak_rss_growth_MiB>
    physskin_torch.py --check FILE  load the parameters and batch anima wrote with
                                    PHYSSKIN_DUMP=FILE (bench_physskin.c) and compare the three
                                    losses, the per-loss gradients and ConFIG's combination

The timing follows bench/torch_bench.py (3 warm-up steps, then N ≈ BENCH_SECONDS / step timed
steps, median); bench/torch_bench.py runs this case through run_bench(). Memory: PyTorch's CPU
tensors come from the C allocator, which tracemalloc does not see, so the figure is the process
peak resident set (resource.getrusage ru_maxrss) after the case — run in a fresh process, as
bench/run.sh does — and its growth over the peak before the model was built (which already
includes the ~250 MiB of the imported torch libraries).

Threads: BENCH_THREADS (default 2) intra-op threads."""
import json
import math
import os
import resource
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.environ.get("PHYSSKIN_CONFIG", os.path.join(HERE, "..", "configs", "physskin-small.json"))


# ---- the model (models/physskin/model.c, nn/modules.c) ----------------------------------------

def fourier(x, n_freqs):
    """nn_fourier_embed: [x | sin(2^k x_i) (i major, k minor) | cos(...)]"""
    f = 2.0 ** torch.arange(n_freqs, dtype=x.dtype)
    e = (x.unsqueeze(-1) * f).reshape(*x.shape[:-1], x.shape[-1] * n_freqs)
    return torch.cat([x, e.sin(), e.cos()], -1)


def attention(q, k, v, heads):
    """softmax(Q Kᵀ / √d) V per head (nn_attention_naive)"""
    b, tq, c = q.shape
    tk, d = k.shape[1], c // heads
    qh = q.reshape(b, tq, heads, d).transpose(1, 2)
    kh = k.reshape(b, tk, heads, d).transpose(1, 2)
    vh = v.reshape(b, tk, heads, d).transpose(1, 2)
    s = torch.softmax((qh @ kh.transpose(-1, -2)) * (1.0 / math.sqrt(d)), dim=-1)
    return (s @ vh).transpose(1, 2).reshape(b, tq, c)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.c_fc = nn.Linear(dim, hidden)
        self.c_proj = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class SelfAttn(nn.Module):
    def __init__(self, dim, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.c_qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.c_qkv(x).chunk(3, -1)
        return self.c_proj(attention(q, k, v, self.heads))


class CrossAttn(nn.Module):
    def __init__(self, dim, ctx_dim, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.c_q = nn.Linear(dim, dim, bias=qkv_bias)
        self.c_kv = nn.Linear(ctx_dim, 2 * dim, bias=qkv_bias)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x, ctx):
        k, v = self.c_kv(ctx).chunk(2, -1)
        return self.c_proj(attention(self.c_q(x), k, v, self.heads))


class SelfBlock(nn.Module):  # Michelangelo's ResidualAttentionBlock: attn, ln_1, mlp, ln_2
    def __init__(self, dim, heads, hidden, qkv_bias):
        super().__init__()
        self.attn = SelfAttn(dim, heads, qkv_bias)
        self.ln_1 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, hidden)
        self.ln_2 = nn.LayerNorm(dim)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class CrossBlock(nn.Module):  # ResidualCrossAttentionBlock: attn, ln_1, ln_2, mlp, ln_3
    def __init__(self, dim, ctx_dim, heads, hidden, qkv_bias):
        super().__init__()
        self.attn = CrossAttn(dim, ctx_dim, heads, qkv_bias)
        self.ln_1 = nn.LayerNorm(dim)
        self.ln_2 = nn.LayerNorm(ctx_dim)
        self.mlp = Mlp(dim, hidden)
        self.ln_3 = nn.LayerNorm(dim)

    def forward(self, x, ctx):
        x = x + self.attn(self.ln_1(x), self.ln_2(ctx))
        return x + self.mlp(self.ln_3(x))


ACTS = {"gelu": F.gelu, "elu": F.elu, "silu": F.silu, "tanh": torch.tanh, "softplus": F.softplus}


class ResBlock(nn.Module):
    def __init__(self, dim, hidden, act):
        super().__init__()
        self.act = act
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        m = c["model"]
        d, pe, hid = m["width"], 3 * (2 * m["n_freqs"] + 1), m["mlp_ratio"] * m["width"]
        self.n_freqs = m["n_freqs"]
        self.query = nn.Parameter(torch.randn(m["latents"], d) * 0.02)
        self.input_proj = nn.Linear(pe + 3, d)
        self.cross_attn = CrossBlock(d, d, m["heads"], hid, m["qkv_bias"])
        self.self_attn = nn.Module()
        self.self_attn.resblocks = nn.ModuleList(
            [SelfBlock(d, m["heads"], hid, m["qkv_bias"]) for _ in range(m["layers"])])
        self.ln_post = nn.LayerNorm(d)

    def forward(self, points, normals):
        data = self.input_proj(torch.cat([fourier(points, self.n_freqs), normals], -1))
        q = self.cross_attn(self.query.expand(points.shape[0], -1, -1), data)
        for blk in self.self_attn.resblocks:
            q = blk(q)
        return self.ln_post(q)


class Head(nn.Module):
    def __init__(self, d, pe, hh, nblocks, m, act):
        super().__init__()
        self.act = act
        self.in_proj = nn.Linear(d + pe, hh)
        self.blocks = nn.ModuleList([ResBlock(hh, hh, act) for _ in range(nblocks)])
        self.out = nn.Linear(hh, m)

    def forward(self, x):
        h = self.in_proj(x)
        for blk in self.blocks:
            h = blk(h)
        return self.out(self.act(h))


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        m = c["model"]
        if m.get("oni"):
            raise SystemExit("physskin_torch.py: model.oni is not implemented here")
        d, pe, hid = m["width"], 3 * (2 * m["n_freqs"] + 1), m["mlp_ratio"] * m["width"]
        self.n_freqs = m["n_freqs"]
        self.handle_tokens = nn.Parameter(torch.randn(m["handles"], d) * 0.02)
        self.handle_attn = CrossBlock(d, d, m["heads"], hid, m["qkv_bias"])
        self.point_proj = nn.Linear(pe, d)
        self.point_attn = CrossBlock(d, d, m["heads"], hid, m["qkv_bias"])
        self.head = Head(d, pe, m["head_hidden"], m["head_blocks"], m["handles"], ACTS[m["activation"]])

    def handles(self, fs):
        return self.handle_attn(self.handle_tokens.expand(fs.shape[0], -1, -1), fs)

    def forward(self, fh, x):
        pe = fourier(x, self.n_freqs)
        fp = self.point_attn(self.point_proj(pe), fh)
        return self.head(torch.cat([fp, pe], -1))


class PhysSkin(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.encoder = Encoder(c)
        self.decoder = Decoder(c)

    def w_and_grad(self, points, normals, x, delta):
        """ps_encode → ps_handles → grad_fd (model.c): W (B, Q, m), ∇W (B, Q, m, 3)"""
        fh = self.decoder.handles(self.encoder(points, normals))
        q = x.shape[1]
        xs = [x]
        for i in range(3):
            e = torch.zeros(1, 1, 3, dtype=x.dtype)
            e[0, 0, i] = delta
            xs += [x + e, x - e]
        out = self.decoder(fh, torch.cat(xs, 1))
        w = out[:, :q]
        g = [out[:, (1 + 2 * i) * q:(2 + 2 * i) * q] - out[:, (2 + 2 * i) * q:(3 + 2 * i) * q] for i in range(3)]
        return w, torch.stack(g, -1) * (0.5 / delta)


# ---- the losses (models/physskin/losses.c) ----------------------------------------------------

def lame(c):
    l = c["loss"]
    E, nu = l["youngs"], l["poisson"]
    mu = E / (2 * (1 + nu))
    lam = E * nu / ((1 + nu) * (1 - 2 * nu))
    return mu, lam + mu if l["lambda_plus_mu"] else lam


def det3(F):
    """det of (..., 3, 3) by the rule of Sarrus (anima's fused tensor_det3 computes the same; the
    explicit form is several times faster on the CPU than torch.linalg.det's batched LU)."""
    a, b, c = F[..., 0, 0], F[..., 0, 1], F[..., 0, 2]
    d, e, f = F[..., 1, 0], F[..., 1, 1], F[..., 1, 2]
    g, h, i = F[..., 2, 0], F[..., 2, 1], F[..., 2, 2]
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def deformation_gradient(W, gw, X, z):
    """ps_deformation_gradient: F − I = T'(3Z × 4m) · D(4m × 3C) per shape"""
    B, C, m = W.shape
    Z = z.shape[1]
    xh = torch.cat([X, X.new_ones(B, C, 1)], -1).reshape(B, C, 1, 4, 1)
    E = torch.eye(4, 3, dtype=W.dtype)
    D = xh * gw.unsqueeze(3) + W.reshape(B, C, m, 1, 1) * E  # (B, C, m, 4, 3)
    D = D.reshape(B, C, 4 * m, 3).permute(0, 2, 1, 3).reshape(B, 4 * m, 3 * C)
    T = z.reshape(B, Z, m, 3, 4).permute(0, 1, 3, 2, 4).reshape(B, 3 * Z, 4 * m)
    dF = (T @ D).reshape(B, Z, 3, C, 3).permute(0, 1, 3, 2, 4)
    return dF + torch.eye(3, dtype=W.dtype)


def psi_neohookean(F_, mu, lam):
    ic = (F_ * F_).sum((-2, -1))
    jm1 = det3(F_) - 1.0
    return (ic - 3.0) * (0.5 * mu) + jm1 * jm1 * (0.5 * lam) - jm1 * mu


def losses(c, W, gw, X, V, z):
    """ps_losses (normalize on, neo-Hookean): pot, orth, smooth"""
    mu, lam = lame(c)
    n = torch.sqrt((W * W).sum(1, keepdim=True) + 1e-20)
    wh, gh = W / n, gw / n.unsqueeze(-1)
    psi = psi_neohookean(deformation_gradient(wh, gh, X, z), mu, lam)
    pot = (psi * V.unsqueeze(1)).sum(2).mean()
    g = wh.transpose(1, 2) @ wh - torch.eye(W.shape[2], dtype=W.dtype)
    orth = (g * g).mean()
    smooth = ((gh * gh).sum((2, 3)) * V).sum(1).mean()
    return pot, orth, smooth


# ---- ConFIG (optim/conflict_free.c) -----------------------------------------------------------

def config_combine(G):
    """G (K, P): û_i = g_i/‖g_i‖, x = Ûᵀ(ÛÛᵀ)⁺1, ĝ = x/‖x‖, g = (Σ g_i·ĝ) ĝ — on the K×K Gram
    matrix in double, as anima does (the K-space step is negligible next to the two passes)."""
    dots = (G @ G.t()).double()
    nrm = dots.diagonal().sqrt()
    ok = nrm > 0
    inv = torch.where(ok, 1.0 / nrm, torch.zeros_like(nrm))
    Gu = dots * inv[:, None] * inv[None, :]
    Gu.diagonal().copy_(ok.double())
    lam, vec = torch.linalg.eigh(Gu)
    keep = lam > 1e-10 * lam[-1]
    v1 = vec.sum(0)
    w = (vec[:, keep] * (v1[keep] / lam[keep])).sum(1)   # G⁺ 1
    gw_ = (vec[:, keep] * v1[keep]).sum(1)               # G G⁺ 1
    xx = (v1[keep] ** 2 / lam[keep]).sum()
    proj = (nrm * gw_).sum()
    coef = (proj / xx) * w * inv
    return coef.to(G.dtype) @ G


# ---- the step ---------------------------------------------------------------------------------

def load_config():
    with open(CONFIG) as f:
        c = json.load(f)
    l = c["loss"]
    if l["grad"] != "fd" or l["energy"] != "neohookean" or not l["normalize"] or l["combine"] != "config":
        raise SystemExit("physskin_torch.py: only the default fd / neohookean / normalize / config step is written")
    return c


class Step:
    def __init__(self, c, model, batch):
        self.c, self.model, self.batch = c, model, batch
        self.params = [p for p in model.parameters()]
        o = c["optim"]
        self.opt = torch.optim.AdamW(self.params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                                     weight_decay=o["weight_decay"])
        self.wts = (c["loss"]["w_pot"], c["loss"]["w_orth"], c["loss"]["w_smooth"])

    def losses(self):
        b = self.batch
        w, gw = self.model.w_and_grad(b["points"], b["normals"], b["x"], self.c["loss"]["fd_delta"])
        return losses(self.c, w, gw, b["x"], b["v"], b["z"])

    def grads(self):
        L = self.losses()
        gs = []
        for i, (t, wt) in enumerate(zip(L, self.wts)):
            g = torch.autograd.grad(t * wt, self.params, retain_graph=i < 2)
            gs.append(torch.cat([x.reshape(-1) for x in g]))
        return L, torch.stack(gs)

    def __call__(self):
        L, G = self.grads()
        flat = config_combine(G)
        off = 0
        for p in self.params:
            n = p.numel()
            p.grad = flat[off:off + n].view_as(p)
            off += n
        clip = self.c["optim"]["clip"]
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, clip)
        self.opt.step()
        return [float(x) for x in L]


def synthetic_batch(c):
    """bench_physskin.c's batch (same distributions; other draws)"""
    d, B, m = c["data"], c["train"]["batch"], c["model"]["handles"]
    g = torch.Generator().manual_seed(1)
    u = lambda n: torch.rand(B, n, 3, generator=g) * 2 - 1
    nr = u(d["n_surface"])
    return dict(points=u(d["n_surface"]), normals=nr / nr.norm(dim=-1, keepdim=True), x=u(d["n_cubature"]),
                v=torch.full((B, d["n_cubature"]), 8.0 / d["n_cubature"]),
                z=torch.randn(B, d["n_z"], 12 * m, generator=g) * c["loss"]["z_sigma"])


def max_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def run_bench(run_case):
    """the physskin_step case with torch_bench.py's run_case(name, step)"""
    rss0 = max_rss_mib()
    c = load_config()
    torch.manual_seed(c["seed"])
    model = PhysSkin(c)
    print(f"params physskin_step {sum(p.numel() for p in model.parameters())}", flush=True)
    run_case("physskin_step", Step(c, model, synthetic_batch(c)))
    rss = max_rss_mib()
    print(f"mem physskin_step {rss:.1f} {rss - rss0:.1f}", flush=True)


# ---- equivalence with anima ---------------------------------------------------------------------

def read_dump(path):
    out = {}
    with open(path, "rb") as f:
        if f.read(4) != b"PSB1":
            raise SystemExit(f"{path}: not a PHYSSKIN_DUMP file")
        while True:
            h = f.read(4)
            if not h:
                break
            name = f.read(struct.unpack("<I", h)[0]).decode()
            nd = struct.unpack("<I", f.read(4))[0]
            shape = struct.unpack(f"<{nd}q", f.read(8 * nd)) if nd else ()
            n = math.prod(shape)
            out[name] = torch.frombuffer(bytearray(f.read(4 * n)), dtype=torch.float32).reshape(shape)
    return out


def check(path):
    d = read_dump(path)
    c = load_config()
    model = PhysSkin(c)
    names = [k[6:] for k in d if k.startswith("param/")]
    sd = model.state_dict()
    print(f"parameters: anima {sum(d['param/' + k].numel() for k in names)} in {len(names)} tensors, "
          f"torch {sum(v.numel() for v in sd.values())} in {len(sd)} tensors")
    model.load_state_dict({k: d["param/" + k] for k in names}, strict=True)
    batch = {k: d["batch/" + k] for k in ("points", "normals", "x", "v", "z")}
    step = Step(c, model, batch)
    # the flat gradient in anima's registration order (the dump's)
    by_name = dict(model.named_parameters())
    step.params = [by_name[k] for k in names]
    L, G = step.grads()
    ok = True
    for i, k in enumerate(("pot", "orth", "smooth")):
        a, t = float(d["loss/" + k]), float(L[i])
        rel = abs(a - t) / max(abs(t), 1e-30)
        ga, gt = d["grad/" + k], G[i]
        grel = float((ga - gt).norm() / gt.norm())
        print(f"loss {k:6s} anima {a:.7g} torch {t:.7g} rel {rel:.1e}   grad rel-l2 {grel:.1e}")
        ok &= rel < 1e-3 and grel < 1e-2
    gc, tc = d["grad/config"], config_combine(G)
    crel = float((gc - tc).norm() / tc.norm())
    print(f"ConFIG combination rel-l2 {crel:.1e}")
    ok &= crel < 1e-2
    print("equivalent" if ok else "MISMATCH")
    return 0 if ok else 1


def main(argv):
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    if argv[:1] == ["--check"] and len(argv) == 2:
        return check(argv[1])
    if argv:
        raise SystemExit(__doc__)
    sys.path.insert(0, HERE)
    from torch_bench import run_case
    run_bench(run_case)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
