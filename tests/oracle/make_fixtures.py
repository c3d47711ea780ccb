#!/usr/bin/python3
"""tests/oracle/make_fixtures.py — PyTorch (float64) reference values for anima's ops and
transformer blocks, written as binary fixtures that tests/test_oracle.c replays in f32 and f64.

Run from anywhere with the system Python (torch, numpy):
    /usr/bin/python3 tests/oracle/make_fixtures.py [out_dir]
It rewrites tests/oracle/fixtures/ops.afx and blocks.afx; the output is deterministic (fixed
seeds), so a re-run on the same torch version reproduces the files byte for byte.

Fixture format ("afx", all little-endian; read by tests/oracle_io.c):
    file   := magic "ANIMAFX1" (8 bytes) | u32 count | count x record
    record := u16 name_len | name (name_len bytes, ASCII, no NUL) | u8 dtype (0 = f64, 1 = i64)
              | u8 ndim (0..8) | ndim x i64 shape | prod(shape) x 8-byte elements, row-major
The file ends exactly after the last record.

ops.afx: a case is named "<op>.<variant>", <op> the name in tensor/op_table.h. Its arrays are
    <case>/in<k>    inputs in call order (f64, or i64 for indices); float inputs hold values
                    exactly representable in f32, so the f32 replay sees the same numbers
    <case>/out<j>   outputs (comparisons: 0/1; argmax: i64)
    <case>/w<j>     a random weight per float output, present when the op is differentiated
    <case>/grad<k>  d sum_j <out_j, w_j> / d in_k, for each differentiated input k
The C side builds each case with the same calls (views of the stored contiguous inputs where a
case here takes a view), so the mapping of arguments is written twice: keep them in step.

blocks.afx: "self/..." and "cross/...": config (i64: B, T, C, heads, H[, S, Cc]), the input(s),
every weight under nn/functional.h's names, out, w, and grad_<name> for every input and weight.
The blocks run through torch.nn.MultiheadAttention (whose in_proj layout is the fused qkv of
nn_self_block), so the oracle does not share a hand-written attention with anima.
"""
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

F64 = torch.float64
HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "fixtures")

rng = np.random.default_rng(20240611)
# Cases added after the first fixtures draw their inputs and weights from a generator of their
# own (gen=rng_late), so that the arrays of every earlier case, and blocks.afx, stay unchanged.
rng_late = np.random.default_rng(20250610)
# (rng_late's weights are drawn when the cases run, after every case is defined, so a case
# defined later draws from yet another generator: gen=rng_ln)
rng_ln = np.random.default_rng(20251130)


def f32(a):
    """round to f32-representable values, held as f64"""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def rn(*shape, scale=1.0, gen=None):
    return f32((gen or rng).standard_normal(shape) * scale)


def uni(lo, hi, *shape):
    return f32(rng.uniform(lo, hi, shape))


def signed_away(lo, hi, *shape):
    """|v| in [lo, hi], random sign: away from 0 (div denominators, abs/sign kinks)"""
    return f32(rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape))


def ints(lo, hi, *shape):
    return rng.integers(lo, hi, shape).astype(np.int64)


def quantized(*shape):
    """values from {-1, -0.5, 0, 0.5, 1}: comparisons see many ties"""
    return rng.integers(-2, 3, shape).astype(np.float64) * 0.5


def well_conditioned3(*batch):
    return f32(np.eye(3) * 2.0 + rng.standard_normal(batch + (3, 3)) * 0.4)


class Writer:
    def __init__(self):
        self.records = []
        self.names = set()

    def add(self, name, arr):
        if name in self.names:
            raise SystemExit(f"duplicate fixture name {name}")
        self.names.add(name)
        a = np.asarray(arr)
        if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
            a, code = a.astype("<i8"), 1
        else:
            a, code = a.astype("<f8"), 0
        nb = name.encode("ascii")
        head = struct.pack("<H", len(nb)) + nb + struct.pack("<BB", code, a.ndim)
        head += struct.pack(f"<{a.ndim}q", *a.shape)
        self.records.append(head + np.ascontiguousarray(a).tobytes())

    def write(self, path):
        data = b"ANIMAFX1" + struct.pack("<I", len(self.records)) + b"".join(self.records)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return len(data)


def to_np(t):
    t = t.detach()
    if t.dtype == torch.bool:  # anima's comparisons give 1/0 in the inputs' dtype
        return t.numpy().astype(np.float64)
    return t.numpy()


CASES = []


def case(name, inputs, fn, grad=None, gen=None):
    """grad: indices of inputs to differentiate; None = every float input; [] = forward only;
    gen: the generator of the weights (None: rng)"""
    CASES.append((name, inputs, fn, grad, gen))


def run_case(w, name, inputs, fn, grad, gen):
    if grad is None:
        grad = [k for k, a in enumerate(inputs) if np.asarray(a).dtype == np.float64]
    ts = []
    for k, a in enumerate(inputs):
        a = np.asarray(a)
        if a.dtype == np.int64:
            ts.append(torch.tensor(a))
        else:
            ts.append(torch.tensor(a, dtype=F64, requires_grad=k in grad))
    outs = fn(*ts)
    if isinstance(outs, torch.Tensor):
        outs = [outs]
    for k, a in enumerate(inputs):
        w.add(f"{name}/in{k}", a)
    loss = 0
    for j, o in enumerate(outs):
        w.add(f"{name}/out{j}", to_np(o))
        if grad:
            wt = torch.tensor(rn(*o.shape, gen=gen), dtype=F64)
            w.add(f"{name}/w{j}", wt.numpy())
            loss = loss + (o * wt).sum()
    if grad:
        gs = torch.autograd.grad(loss, [ts[k] for k in grad], allow_unused=True)
        for k, g in zip(grad, gs):
            g = torch.zeros_like(ts[k]) if g is None else g
            w.add(f"{name}/grad{k}", to_np(g))


# ---- views and layout ------------------------------------------------------------------------
case("reshape.contig", [rn(2, 3, 4)], lambda x: x.reshape(-1, 6))
case("reshape.copy", [rn(3, 4)], lambda x: x.t().reshape(12))  # not viewable: copies
case("view.split", [rn(2, 6)], lambda x: x.view(2, 2, 3))
case("permute.3d", [rn(2, 3, 4)], lambda x: x.permute(2, 0, 1))
case("transpose.neg", [rn(2, 3, 4)], lambda x: x.transpose(-1, 0))
case("expand.bcast", [rn(3, 1)], lambda x: x.expand(2, 3, 4))
case("expand.keep", [rn(1, 3, 1)], lambda x: x.expand(2, -1, 4))
case("slice.step", [rn(5, 6)], lambda x: x[:, 1:6:2])
case("slice.neg", [rn(5, 6)], lambda x: x[-4:-1])
case("slice_scatter.step", [rn(5, 2)], lambda s: torch.slice_scatter(torch.zeros(5, 6, dtype=F64), s, 1, 1, 5, 2))
case("contiguous.perm", [rn(3, 4)], lambda x: x.t().contiguous())
case("cast.roundtrip", [rn(3, 4)], lambda x: x.clone())  # f32 <-> f64 of f32 values is exact
case("narrow.mid", [rn(4, 5)], lambda x: x.narrow(1, 1, 3))
case("squeeze.one", [rn(3, 1, 4)], lambda x: x.squeeze(1))
case("squeeze.noop", [rn(3, 4)], lambda x: x.squeeze(0))
case("unsqueeze.neg", [rn(3, 4)], lambda x: x.unsqueeze(-1))
case("flatten.inner", [rn(2, 3, 4)], lambda x: x.flatten(1, 2))
case("flatten.perm", [rn(2, 3, 4)], lambda x: x.permute(1, 0, 2).flatten(0, 1))

# ---- broadcasting binary ---------------------------------------------------------------------
BIN = {
    "add": (torch.add, lambda *s: rn(*s), lambda *s: rn(*s)),
    "sub": (torch.sub, lambda *s: rn(*s), lambda *s: rn(*s)),
    "mul": (torch.mul, lambda *s: rn(*s), lambda *s: rn(*s)),
    "div": (torch.div, lambda *s: rn(*s), lambda *s: signed_away(0.5, 2.0, *s)),
    "pow": (torch.pow, lambda *s: uni(0.5, 2.0, *s), lambda *s: rn(*s, scale=1.5)),
    "maximum": (torch.maximum, lambda *s: rn(*s), lambda *s: rn(*s)),
    "minimum": (torch.minimum, lambda *s: rn(*s), lambda *s: rn(*s)),
}
for op, (fn, ga, gb) in BIN.items():
    case(f"{op}.same", [ga(3, 4), gb(3, 4)], fn)
    case(f"{op}.bcast", [ga(2, 1, 4), gb(3, 1)], fn)
    case(f"{op}.scalar", [ga(3, 4), gb()], fn)
    # a is (4, 3) transposed, b every other column of (3, 8): both strided
    case(f"{op}.strided", [ga(4, 3), gb(3, 8)], lambda a, b, fn=fn: fn(a.t(), b[:, ::2]))
# anima special-cases exponent 2 (x * x), so negative bases appear; d/d(exponent) = a^b log a is
# undefined there (torch: NaN, anima: 0), so only the base is differentiated
case("pow.square", [rn(3, 4), np.array(2.0)], torch.pow, grad=[0])
# ties split the gradient evenly in both torch and anima
tie_a = quantized(3, 4)
tie_b = quantized(3, 4)
case("maximum.ties", [tie_a, tie_b], torch.maximum)
case("minimum.ties", [tie_a, tie_b], torch.minimum)
# gelu_backward(g, x) = g (Φ(x) + x φ(x)), exact erf gelu (approximate="none"); the grads are
# torch's double backward of gelu
gelu_bw = torch.ops.aten.gelu_backward
for var, (ga, gb) in {"same": ((3, 4), (3, 4)), "bcast": ((2, 1, 4), (3, 1)), "scalar": ((3, 4), ()),
                      "strided": ((4, 3), (3, 8))}.items():
    fn = (lambda g, x: gelu_bw(g.t(), x[:, ::2])) if var == "strided" else gelu_bw
    case(f"gelu_backward.{var}", [rn(*ga, gen=rng_late), rn(*gb, scale=2.5, gen=rng_late)], fn, gen=rng_late)

CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
for op, fn in CMP.items():
    case(f"{op}.bcast", [quantized(3, 4), quantized(4)], fn, grad=[])
    case(f"{op}.strided", [quantized(4, 3), quantized(3, 8)], lambda a, b, fn=fn: fn(a.t(), b[:, ::2]), grad=[])
case("eq.i64", [ints(0, 3, 3, 4), ints(0, 3, 4)], lambda a, b: torch.eq(a, b).long(), grad=[])
case("ne.i64", [ints(0, 3, 3, 4), ints(0, 3, 4)], lambda a, b: torch.ne(a, b).long(), grad=[])

cond = np.array([[0.0], [1.0], [-2.5]])
case("where.bcast", [cond, rn(3, 4), rn(4)], lambda c, a, b: torch.where(c != 0, a, b), grad=[1, 2])
case("where.full", [quantized(3, 4), rn(3, 4), rn(3, 4)], lambda c, a, b: torch.where(c != 0, a, b), grad=[1, 2])

# ---- unary -------------------------------------------------------------------------------------
UN = {
    "neg": (torch.neg, lambda: rn(4, 5)),
    "abs": (torch.abs, lambda: signed_away(0.1, 3.0, 4, 5)),
    "exp": (torch.exp, lambda: rn(4, 5, scale=2.0)),
    "log": (torch.log, lambda: uni(0.2, 4.0, 4, 5)),
    "sqrt": (torch.sqrt, lambda: uni(0.2, 4.0, 4, 5)),
    "rsqrt": (torch.rsqrt, lambda: uni(0.2, 4.0, 4, 5)),
    "sin": (torch.sin, lambda: rn(4, 5, scale=2.0)),
    "cos": (torch.cos, lambda: rn(4, 5, scale=2.0)),
    "tanh": (torch.tanh, lambda: rn(4, 5, scale=2.0)),
    "sigmoid": (torch.sigmoid, lambda: rn(4, 5, scale=3.0)),
    "relu": (torch.relu, lambda: signed_away(0.05, 3.0, 4, 5)),
    "elu": (lambda x: F.elu(x, alpha=0.7), lambda: signed_away(0.05, 3.0, 4, 5)),
    "gelu": (F.gelu, lambda: rn(4, 5, scale=2.5)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda: rn(4, 5, scale=2.5)),
    # beta 1.5, threshold 2: entries with 1.5 x > 2 take the linear branch
    "softplus": (lambda x: F.softplus(x, beta=1.5, threshold=2.0), lambda: rn(4, 5, scale=2.0)),
    "erf": (torch.erf, lambda: rn(4, 5, scale=1.5)),
}
for op, (fn, gen) in UN.items():
    case(f"{op}.plain", [gen()], fn)
    case(f"{op}.strided", [gen()], lambda x, fn=fn: fn(x.t()))
sign_in = signed_away(0.1, 2.0, 4, 5)
sign_in[0, :3] = 0.0
case("sign.plain", [sign_in], torch.sign, grad=[])
case("sign.strided", [sign_in.copy()], lambda x: torch.sign(x.t()), grad=[])

# ---- reductions --------------------------------------------------------------------------------
case("sum.all", [rn(3, 4, 5)], lambda x: x.sum())
case("sum.dims02", [rn(3, 4, 5)], lambda x: x.sum(dim=(0, 2)))
case("sum.keep", [rn(3, 4, 5)], lambda x: x.sum(dim=(-1, 1), keepdim=True))
case("sum.strided", [rn(3, 4, 5)], lambda x: x.permute(2, 0, 1).sum(dim=1))
case("mean.all", [rn(3, 4, 5)], lambda x: x.mean())
case("mean.dims02_keep", [rn(3, 4, 5)], lambda x: x.mean(dim=(0, 2), keepdim=True))
for op, fn in (("max", torch.amax), ("min", torch.amin)):
    case(f"{op}.dim1", [rn(3, 4, 5)], lambda x, fn=fn: fn(x, dim=1))
    case(f"{op}.dims02_keep", [rn(3, 4, 5)], lambda x, fn=fn: fn(x, dim=(0, 2), keepdim=True))
    case(f"{op}.all", [rn(3, 4, 5)], lambda x, fn=fn: fn(x, dim=(0, 1, 2)))
    case(f"{op}.ties", [quantized(4, 6)], lambda x, fn=fn: fn(x, dim=1))  # amax/amin share ties evenly
case("var.dims02", [rn(3, 4, 5)], lambda x: torch.var(x, dim=(0, 2), correction=1))
case("var.corr0_keep", [rn(3, 4, 5)], lambda x: torch.var(x, dim=(1,), correction=0, keepdim=True))
case("var.all", [rn(3, 4, 5)], lambda x: torch.var(x, dim=None, correction=1))
vn = torch.linalg.vector_norm
case("norm.p2", [signed_away(0.1, 2.0, 3, 4, 5)], lambda x: vn(x, 2, dim=(1,)))
case("norm.p1_keep", [signed_away(0.1, 2.0, 3, 4, 5)], lambda x: vn(x, 1, dim=(0, 2), keepdim=True))
case("norm.pinf", [signed_away(0.1, 2.0, 3, 4, 5)], lambda x: vn(x, math.inf, dim=(2,)))
case("norm.p3_all", [signed_away(0.1, 2.0, 3, 4, 5)], lambda x: vn(x, 3))
case("argmax.dim1", [rn(3, 4, 5)], lambda x: torch.argmax(x, dim=1), grad=[])
case("argmax.keep", [rn(3, 4, 5)], lambda x: torch.argmax(x, dim=-1, keepdim=True), grad=[])
case("argmax.all", [rn(3, 4, 5)], lambda x: torch.argmax(x), grad=[])

# ---- linear algebra ----------------------------------------------------------------------------
case("matmul.2d", [rn(3, 4), rn(4, 5)], torch.matmul)
case("matmul.batched_bcast", [rn(2, 1, 3, 4), rn(3, 4, 5)], torch.matmul)
case("matmul.vec_mat", [rn(4), rn(2, 4, 5)], torch.matmul)
case("matmul.mat_vec", [rn(2, 3, 4), rn(4)], torch.matmul)
case("matmul.dot", [rn(4), rn(4)], torch.matmul)
case("matmul.strided", [rn(4, 3), rn(4, 10)], lambda a, b: torch.matmul(a.t(), b[:, ::2]))
case("det3.batch", [well_conditioned3(4)], torch.linalg.det)
case("det3.single", [well_conditioned3()], torch.linalg.det)
case("inv3.batch", [well_conditioned3(2, 2)], torch.linalg.inv)
case("inv3.single", [well_conditioned3()], torch.linalg.inv)

# ---- normalization -----------------------------------------------------------------------------
for op, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
    case(f"{op}.last", [rn(3, 5, scale=2.0)], lambda x, fn=fn: fn(x, -1))
    case(f"{op}.dim1", [rn(3, 4, 5, scale=2.0)], lambda x, fn=fn: fn(x, 1))
    case(f"{op}.strided", [rn(3, 4, 5, scale=2.0)], lambda x, fn=fn: fn(x.permute(2, 0, 1), 0))
case("layer_norm.w_b_2d", [rn(3, 4, 5, scale=2.0), f32(1 + rn(4, 5) * 0.2), rn(4, 5, scale=0.3)],
     lambda x, w, b: F.layer_norm(x, (4, 5), w, b, 1e-5))
case("layer_norm.plain", [rn(3, 6, scale=2.0)], lambda x: F.layer_norm(x, (6,), None, None, 1e-5))
case("layer_norm.w_only", [rn(2, 3, 6), f32(1 + rn(6) * 0.2)], lambda x, w: F.layer_norm(x, (6,), w, None, 1e-3))
# layer_norm_backward(g, x, w): layer_norm's input gradient, aten.native_layer_norm_backward's
# first output (mean and rstd from native_layer_norm of x, detached: torch's double backward of
# the op differentiates through them itself); the grads are torch's double backward of layer_norm
ln_bw = torch.ops.aten.native_layer_norm_backward


def ln_backward(g, x, shape, w, eps):
    _, mean, rstd = torch.native_layer_norm(x.detach(), shape, None, None, eps)
    return ln_bw(g, x, shape, mean, rstd, w, None, [True, w is not None, False])[0]


def rl(*shape, scale=1.0):
    return rn(*shape, scale=scale, gen=rng_ln)


case("layer_norm_backward.w_2d", [rl(3, 4, 5), rl(3, 4, 5, scale=2.0), f32(1 + rl(4, 5) * 0.2)],
     lambda g, x, w: ln_backward(g, x, (4, 5), w, 1e-5), gen=rng_ln)
case("layer_norm_backward.plain", [rl(3, 6), f32(rl(3, 6, scale=2.0) + 1.5)],
     lambda g, x: ln_backward(g, x, (6,), None, 1e-5), gen=rng_ln)
case("layer_norm_backward.strided", [rl(6, 4), rl(4, 12, scale=1.5), f32(1 + rl(6) * 0.2)],
     lambda g, x, w: ln_backward(g.t(), x[:, ::2], (6,), w, 1e-3), gen=rng_ln)

# ---- joining and indexing ----------------------------------------------------------------------
case("cat.dim1", [rn(2, 3), rn(2, 2), rn(2, 1)], lambda a, b, c: torch.cat([a, b, c], 1))
case("cat.strided", [rn(3, 2), rn(2, 3)], lambda a, b: torch.cat([a.t(), b], 0))
case("stack.dim1", [rn(2, 3), rn(2, 3)], lambda a, b: torch.stack([a, b], 1))
case("stack.neg", [rn(2, 3), rn(2, 3), rn(2, 3)], lambda a, b, c: torch.stack([a, b, c], -1))
case("split.dim1", [rn(3, 7)], lambda x: list(torch.split(x, 3, 1)))
case("index_select.dim1", [rn(3, 5), np.array([4, 0, 4, 2], dtype=np.int64)], lambda x, i: torch.index_select(x, 1, i))
case("index_select.dim0", [rn(4, 3), np.array([3, 3, 1], dtype=np.int64)], lambda x, i: torch.index_select(x, 0, i))
case("gather.dim1", [rn(3, 5), ints(0, 5, 3, 4)], lambda x, i: torch.gather(x, 1, i))
case("gather.dim0_small", [rn(4, 3), ints(0, 4, 2, 2)], lambda x, i: torch.gather(x, 0, i))
case("scatter_add.dim1", [rn(3, 5), ints(0, 5, 3, 4), rn(3, 4)], lambda x, i, s: torch.scatter_add(x, 1, i, s))
# src larger than index: only src's index-shaped corner is read. torch's own backward returns an
# index-shaped grad for src (and then rejects it), so the reference slices src explicitly.
case("scatter_add.bigsrc", [rn(4, 5), ints(0, 4, 2, 3), rn(3, 4)],
     lambda x, i, s: torch.scatter_add(x, 0, i, s[:2, :3]))

# ---- constructors (no inputs; the C side makes them in the dtype under test) ---------------------
case("zeros.2d", [], lambda: torch.zeros(2, 3, dtype=F64), grad=[])
case("ones.2d", [], lambda: torch.ones(3, 2, dtype=F64), grad=[])
case("full.2d", [], lambda: torch.full((2, 2), 2.5, dtype=F64), grad=[])
case("arange.frac", [], lambda: torch.arange(-1.0, 2.0, 0.25, dtype=F64), grad=[])
case("arange.int", [], lambda: torch.arange(0.0, 5.0, 1.0, dtype=F64), grad=[])
case("linspace.7", [], lambda: torch.linspace(-1.0, 2.0, 7, dtype=F64), grad=[])
case("eye.4", [], lambda: torch.eye(4, dtype=F64), grad=[])


# ---- transformer blocks ------------------------------------------------------------------------
def lin_w(out, inp):
    return rn(out, inp, scale=1.0 / math.sqrt(inp))


def block_fixture(w, prefix, names_arrays, inputs, forward, config):
    w.add(f"{prefix}/config", np.array(config, dtype=np.int64))
    ts = {}
    for k, a in list(inputs.items()) + list(names_arrays.items()):
        w.add(f"{prefix}/{k}", a)
        ts[k] = torch.tensor(a, dtype=F64, requires_grad=True)
    out = forward(ts)
    wt = torch.tensor(rn(*out.shape), dtype=F64)
    w.add(f"{prefix}/out", to_np(out))
    w.add(f"{prefix}/w", wt.numpy())
    keys = list(ts.keys())
    gs = torch.autograd.grad((out * wt).sum(), [ts[k] for k in keys])
    for k, g in zip(keys, gs):
        w.add(f"{prefix}/grad_{k}", to_np(g))


def mlp_residual(x, t, ln2="ln2"):
    h = F.layer_norm(x, (x.shape[-1],), t[f"{ln2}_w"], t[f"{ln2}_b"], 1e-5)
    return x + F.linear(F.gelu(F.linear(h, t["fc_w"], t["fc_b"])), t["fc2_w"], t["fc2_b"])


def self_block(B, T, C, heads, H, w):
    p = {
        "ln1_w": f32(1 + rn(C) * 0.2), "ln1_b": rn(C, scale=0.1),
        "qkv_w": lin_w(3 * C, C), "qkv_b": rn(3 * C, scale=0.1),
        "proj_w": lin_w(C, C), "proj_b": rn(C, scale=0.1),
        "ln2_w": f32(1 + rn(C) * 0.2), "ln2_b": rn(C, scale=0.1),
        "fc_w": lin_w(H, C), "fc_b": rn(H, scale=0.1),
        "fc2_w": lin_w(C, H), "fc2_b": rn(C, scale=0.1),
    }

    def forward(t):
        mha = torch.nn.MultiheadAttention(C, heads, batch_first=True, dtype=F64)
        # the module's own parameters are replaced by the fixture tensors (so grads reach them)
        del mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias
        mha.in_proj_weight, mha.in_proj_bias = t["qkv_w"], t["qkv_b"]
        mha.out_proj.weight, mha.out_proj.bias = t["proj_w"], t["proj_b"]
        x = t["x"]
        h = F.layer_norm(x, (C,), t["ln1_w"], t["ln1_b"], 1e-5)
        x = x + mha(h, h, h, need_weights=False)[0]
        return mlp_residual(x, t)

    block_fixture(w, "self", p, {"x": rn(B, T, C)}, forward, [B, T, C, heads, H])


def cross_block(B, T, S, C, Cc, heads, H, w):
    p = {
        "lnq_w": f32(1 + rn(C) * 0.2), "lnq_b": rn(C, scale=0.1),
        "lnkv_w": f32(1 + rn(Cc) * 0.2), "lnkv_b": rn(Cc, scale=0.1),
        "q_w": lin_w(C, C), "q_b": rn(C, scale=0.1),
        "kv_w": lin_w(2 * C, Cc), "kv_b": rn(2 * C, scale=0.1),
        "proj_w": lin_w(C, C), "proj_b": rn(C, scale=0.1),
        "ln2_w": f32(1 + rn(C) * 0.2), "ln2_b": rn(C, scale=0.1),
        "fc_w": lin_w(H, C), "fc_b": rn(H, scale=0.1),
        "fc2_w": lin_w(C, H), "fc2_b": rn(C, scale=0.1),
    }

    def forward(t):
        # kdim = vdim = Cc: the module keeps separate q/k/v weights and one (3C) bias
        mha = torch.nn.MultiheadAttention(C, heads, batch_first=True, kdim=Cc, vdim=Cc, dtype=F64)
        del mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight, mha.in_proj_bias
        del mha.out_proj.weight, mha.out_proj.bias
        mha.q_proj_weight = t["q_w"]
        mha.k_proj_weight, mha.v_proj_weight = t["kv_w"][:C], t["kv_w"][C:]
        mha.in_proj_bias = torch.cat([t["q_b"], t["kv_b"]])
        mha.out_proj.weight, mha.out_proj.bias = t["proj_w"], t["proj_b"]
        x, ctx = t["x"], t["ctx"]
        hq = F.layer_norm(x, (C,), t["lnq_w"], t["lnq_b"], 1e-5)
        hc = F.layer_norm(ctx, (Cc,), t["lnkv_w"], t["lnkv_b"], 1e-5)
        x = x + mha(hq, hc, hc, need_weights=False)[0]
        return mlp_residual(x, t)

    block_fixture(w, "cross", p, {"x": rn(B, T, C), "ctx": rn(B, S, Cc)}, forward, [B, T, C, heads, H, S, Cc])


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    torch.manual_seed(0)
    w = Writer()
    for c in CASES:
        run_case(w, *c)
    n_ops = w.write(os.path.join(OUT_DIR, "ops.afx"))
    wb = Writer()
    self_block(2, 8, 16, 4, 64, wb)
    cross_block(2, 8, 6, 16, 12, 4, 64, wb)
    n_blocks = wb.write(os.path.join(OUT_DIR, "blocks.afx"))
    print(f"ops.afx: {len(CASES)} cases, {n_ops} bytes; blocks.afx: {n_blocks} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
