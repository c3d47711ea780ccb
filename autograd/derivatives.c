/* autograd/derivatives.c — the backward of every primitive op, written in tensor ops so that
 * it runs on any backend and can itself be differentiated (create_graph). g is the gradient
 * of the loss with respect to the node's output; each function fills gin[i] where need[i]. */
#include <math.h>
#include <string.h>

#include "../tensor/internal.h"
#include "autograd.h"
#include "custom.h"

#define IN(i) (n->inputs[i])
#define OUT (n->out)

static Tensor *sc(const Tensor *like, double v) {
    Tensor *t = tensor_empty_on(0, NULL, like->dtype, tensor_device(like));
    tensor_be("scalar", like)->fill(t, v);
    return t;
}

static Tensor *zeros_shaped(const Tensor *like) {
    Tensor *t = tensor_empty_like(like);
    tensor_be("zeros", like)->fill(t, 0);
    return t;
}

static Tensor *to_shape(Tensor *g, const Tensor *x) { return tensor_sum_to(g, x->ndim, x->shape); }

/* ---- views and layout ------------------------------------------------------------------ */

static void bw_reshape(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    gin[0] = tensor_reshape(g, (int)n->iattr[0], &n->iattr[1]);
}

static void bw_permute(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    int nd = (int)n->iattr[0], inv[TENSOR_MAX_DIMS];
    for (int i = 0; i < nd; i++) inv[n->iattr[1 + i]] = i;
    gin[0] = tensor_permute(g, nd, inv);
}

static void bw_expand(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    gin[0] = tensor_sum_to(g, (int)n->iattr[0], &n->iattr[1]);
}

static void bw_slice(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    const int64_t *a = &n->iattr[1 + TENSOR_MAX_DIMS];
    gin[0] = tensor_slice_scatter(g, (int)n->iattr[0], &n->iattr[1], (int)a[0], a[1], a[2], a[3]);
}

static void bw_slice_scatter(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    gin[0] = tensor_slice(g, (int)n->iattr[0], n->iattr[1], n->iattr[2], n->iattr[3]);
}

static void bw_identity(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)n, (void)need;
    gin[0] = g;
}

static void bw_cast(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    gin[0] = tensor_cast(g, (TensorDType)n->iattr[0]);
}

/* ---- binary -------------------------------------------------------------------------------- */

static void bw_add(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    if (need[0]) gin[0] = to_shape(g, IN(0));
    if (need[1]) gin[1] = to_shape(g, IN(1));
}

static void bw_sub(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    if (need[0]) gin[0] = to_shape(g, IN(0));
    if (need[1]) gin[1] = to_shape(tensor_neg(g), IN(1));
}

static void bw_mul(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    if (need[0]) gin[0] = to_shape(tensor_mul(g, IN(1)), IN(0));
    if (need[1]) gin[1] = to_shape(tensor_mul(g, IN(0)), IN(1));
}

static void bw_div(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    Tensor *a = IN(0), *b = IN(1);
    if (need[0]) gin[0] = to_shape(tensor_div(g, b), a);
    if (need[1]) gin[1] = to_shape(tensor_neg(tensor_div(tensor_mul(g, a), tensor_mul(b, b))), b);
}

/* d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log a, taken as 0 where a <= 0 (as PyTorch does at a = 0) */
static void bw_pow(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    Tensor *a = IN(0), *b = IN(1);
    if (need[0]) gin[0] = to_shape(tensor_mul(g, tensor_mul(b, tensor_pow(a, tensor_sub(b, sc(b, 1))))), a);
    if (need[1]) {
        Tensor *pos = tensor_gt(a, sc(a, 0));
        Tensor *safe = tensor_where(pos, a, sc(a, 1));
        Tensor *v = tensor_mul(g, tensor_mul(OUT, tensor_log(safe)));
        gin[1] = to_shape(tensor_where(pos, v, sc(v, 0)), b);
    }
}

/* ties split the gradient evenly, as PyTorch's maximum/minimum do */
static void bw_minmax(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin, bool is_max) {
    Tensor *a = IN(0), *b = IN(1);
    Tensor *win = is_max ? tensor_gt(a, b) : tensor_lt(a, b);
    Tensor *wa = tensor_add(win, tensor_mul(tensor_eq(a, b), sc(a, 0.5)));
    if (need[0]) gin[0] = to_shape(tensor_mul(g, wa), a);
    if (need[1]) gin[1] = to_shape(tensor_mul(g, tensor_rsub_scalar(wa, 1)), b);
}
static void bw_maximum(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) { bw_minmax(n, g, need, gin, true); }
static void bw_minimum(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) { bw_minmax(n, g, need, gin, false); }

/* out = g gelu'(x). d/dg = gelu'(x), so the gradient is gelu_backward(gy, x) again; d/dx =
 * g gelu''(x), gelu''(x) = 2φ(x) + x φ'(x) = φ(x) (2 - x²) */
static void bw_gelu_backward(const TensorNode *n, Tensor *gy, const bool *need, Tensor **gin) {
    Tensor *g = IN(0), *x = IN(1);
    if (need[0]) gin[0] = to_shape(tensor_gelu_backward(gy, x), g);
    if (need[1]) {
        Tensor *x2 = tensor_mul(x, x);
        Tensor *pdf = tensor_mul(tensor_exp(tensor_mul(x2, sc(x, -0.5))), sc(x, 0.3989422804014327));
        Tensor *d2 = tensor_mul(pdf, tensor_rsub_scalar(x2, 2));
        gin[1] = to_shape(tensor_mul(tensor_mul(gy, g), d2), x);
    }
}

static void bw_where(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    Tensor *z = sc(g, 0);
    if (need[1]) gin[1] = to_shape(tensor_where(IN(0), g, z), IN(1));
    if (need[2]) gin[2] = to_shape(tensor_where(IN(0), z, g), IN(2));
}

/* ---- unary ---------------------------------------------------------------------------------- */

static void bw_unary(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    Tensor *x = IN(0), *y = OUT, *d = NULL;
    switch (n->op) {
    case TENSOR_OP_NEG: gin[0] = tensor_neg(g); return;
    case TENSOR_OP_ABS: d = tensor_sign(x); break;
    case TENSOR_OP_EXP: d = y; break;
    case TENSOR_OP_LOG: gin[0] = tensor_div(g, x); return;
    case TENSOR_OP_SQRT: gin[0] = tensor_div(g, tensor_mul(y, sc(y, 2))); return;
    case TENSOR_OP_RSQRT: d = tensor_mul(tensor_mul(y, tensor_mul(y, y)), sc(y, -0.5)); break;
    case TENSOR_OP_SIN: d = tensor_cos(x); break;
    case TENSOR_OP_COS: d = tensor_neg(tensor_sin(x)); break;
    case TENSOR_OP_TANH: d = tensor_rsub_scalar(tensor_mul(y, y), 1); break;
    case TENSOR_OP_SIGMOID: d = tensor_mul(y, tensor_rsub_scalar(y, 1)); break;
    case TENSOR_OP_RELU: d = tensor_gt(x, sc(x, 0)); break;
    case TENSOR_OP_ELU:
        gin[0] = tensor_where(tensor_gt(x, sc(x, 0)), g, tensor_mul(g, tensor_add(y, sc(y, n->fattr[0]))));
        return;
    case TENSOR_OP_GELU: gin[0] = tensor_gelu_backward(g, x); return; /* g (Φ(x) + x φ(x)), one pass */
    case TENSOR_OP_GELU_TANH: { /* 0.5(1+t) + 0.5 x (1-t²) c (1 + 3k x²), t = tanh(c(x + k x³)) */
        const double c = 0.7978845608028654, k = 0.044715;
        Tensor *x2 = tensor_mul(x, x);
        Tensor *u = tensor_mul(tensor_add(x, tensor_mul(tensor_mul(x2, x), sc(x, k))), sc(x, c));
        Tensor *t = tensor_tanh(u);
        Tensor *left = tensor_mul(tensor_add_scalar(t, 1), sc(x, 0.5));
        Tensor *du = tensor_mul(tensor_add_scalar(tensor_mul(x2, sc(x, 3 * k)), 1), sc(x, c));
        Tensor *right = tensor_mul(tensor_mul(tensor_mul(x, sc(x, 0.5)), tensor_rsub_scalar(tensor_mul(t, t), 1)), du);
        d = tensor_add(left, right);
        break;
    }
    case TENSOR_OP_SOFTPLUS: {
        Tensor *bx = tensor_mul(x, sc(x, n->fattr[0]));
        gin[0] = tensor_where(tensor_gt(bx, sc(x, n->fattr[1])), g, tensor_mul(g, tensor_sigmoid(bx)));
        return;
    }
    case TENSOR_OP_ERF:
        d = tensor_mul(tensor_exp(tensor_neg(tensor_mul(x, x))), sc(x, 1.1283791670955126));
        break;
    default: tensor_fail("backward", "no unary derivative for '%s'", tensor_op_table[n->op].name);
    }
    gin[0] = tensor_mul(g, d);
}

/* ---- reductions ----------------------------------------------------------------------------- */

/* g with the reduced dims put back as size 1, then broadcast to x's shape */
static Tensor *unreduce(const TensorNode *n, Tensor *g) {
    const Tensor *x = IN(0);
    unsigned mask = (unsigned)n->iattr[0];
    int64_t keep[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) keep[i] = (mask & (1u << i)) ? 1 : x->shape[i];
    Tensor *gk = n->iattr[1] ? g : tensor_reshape(g, x->ndim, keep);
    return tensor_expand(gk, x->ndim, x->shape);
}

static void bw_sum(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    gin[0] = unreduce(n, g);
}

static void bw_maxmin(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    Tensor *x = IN(0);
    Tensor *yk = unreduce(n, OUT);
    Tensor *mask = tensor_eq(x, yk);
    int dims[TENSOR_MAX_DIMS], k = 0;
    for (int i = 0; i < x->ndim; i++)
        if ((unsigned)n->iattr[0] & (1u << i)) dims[k++] = i;
    Tensor *count = k ? tensor_sum(mask, k, dims, true) : tensor_ones_like(mask);
    gin[0] = tensor_div(tensor_mul(unreduce(n, g), mask), count);
}

/* ---- linear algebra ------------------------------------------------------------------------- */

/* bf16 operands (their product is f32): the f32 output gradient is rounded to bf16 so that
 * both backward products are bf16 × bf16 with f32 accumulation too (as under PyTorch's
 * autocast); each product is summed over broadcast batch dims in f32, then rounded to the
 * operand's dtype (a gradient has its tensor's dtype). */
static void bw_matmul(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    Tensor *a = IN(0), *b = IN(1);
    Tensor *a2 = a->ndim == 1 ? tensor_unsqueeze(a, 0) : a;
    Tensor *b2 = b->ndim == 1 ? tensor_unsqueeze(b, 1) : b;
    Tensor *g2 = tensor_cast(g, a->dtype);
    if (a->ndim == 1) g2 = tensor_unsqueeze(g2, g2->ndim - (b->ndim == 1 ? 0 : 1));
    if (b->ndim == 1) g2 = tensor_unsqueeze(g2, g2->ndim);
    if (need[0]) {
        Tensor *ga = tensor_matmul(g2, tensor_transpose(b2, -1, -2));
        ga = tensor_reshape(tensor_sum_to(ga, a2->ndim, a2->shape), a->ndim, a->shape);
        gin[0] = tensor_cast(ga, a->dtype);
    }
    if (need[1]) {
        Tensor *gb = tensor_matmul(tensor_transpose(a2, -1, -2), g2);
        gb = tensor_reshape(tensor_sum_to(gb, b2->ndim, b2->shape), b->ndim, b->shape);
        gin[1] = tensor_cast(gb, b->dtype);
    }
}

/* d det(A) = det(A) A^-T; d A^-1 = -A^-T G A^-T */
static void bw_det3(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    Tensor *x = IN(0);
    Tensor *s = tensor_unsqueeze(tensor_unsqueeze(tensor_mul(g, OUT), -1), -1);
    gin[0] = tensor_mul(s, tensor_transpose(tensor_inv3(x), -1, -2));
}

static void bw_inv3(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    Tensor *yt = tensor_transpose(OUT, -1, -2);
    gin[0] = tensor_neg(tensor_matmul(tensor_matmul(yt, g), yt));
}

/* ---- normalization -------------------------------------------------------------------------- */

static void bw_softmax(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    int dim = (int)n->iattr[0];
    Tensor *y = OUT;
    gin[0] = tensor_mul(y, tensor_sub(g, tensor_sum(tensor_mul(g, y), 1, &dim, true)));
}

static void bw_log_softmax(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    int dim = (int)n->iattr[0];
    gin[0] = tensor_sub(g, tensor_mul(tensor_exp(OUT), tensor_sum(g, 1, &dim, true)));
}

/* x̂ = (x - μ) r, r = (σ² + ε)^-1/2; dx = r (ĝ - mean(ĝ) - x̂ mean(ĝ x̂)), ĝ = g w, in one fused
 * op (layer_norm_backward); dw = Σ g x̂ over the rows, x̂ being layer_norm without w and b */
static void bw_layer_norm(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    Tensor *x = IN(0), *w = IN(1), *b = IN(2);
    int nn = (int)n->iattr[0];
    double eps = n->fattr[0];
    if (need[0]) gin[0] = tensor_layer_norm_backward(g, x, nn, w, eps);
    if (w && need[1]) {
        Tensor *xh = tensor_layer_norm(x, nn, NULL, NULL, eps);
        gin[1] = tensor_sum_to(tensor_mul(g, xh), w->ndim, w->shape);
    }
    if (b && need[2]) gin[2] = tensor_sum_to(g, b->ndim, b->shape);
}

/* y = r P(ĝ), P(h) = h - mean(h) - x̂ mean(h x̂) (symmetric), ĝ = g w, per row of n elements;
 * v the gradient of y. Means over the row:
 *   d/dĝ = r P(v), which is layer_norm_backward(v, x) without w, so d/dg = w r P(v) and
 *   d/dw = Σ_rows g r P(v);
 *   d/dx = -r² x̂ (mean(v ĝ) - mean(v) mean(ĝ) - mean(v x̂) mean(ĝ x̂))
 *          - r (mean(v x̂) y + mean(ĝ x̂) r P(v)),
 * from dx̂/dx = r P (the same symmetric P) and dr/dx = -r² x̂ / n. */
static void bw_layer_norm_backward(const TensorNode *n, Tensor *v, const bool *need, Tensor **gin) {
    Tensor *g = IN(0), *x = IN(1), *w = IN(2);
    int nn = (int)n->iattr[0], dims[TENSOR_MAX_DIMS];
    double eps = n->fattr[0];
    for (int i = 0; i < nn; i++) dims[i] = x->ndim - nn + i;
    Tensor *pv = tensor_layer_norm_backward(v, x, nn, NULL, eps); /* r P(v) */
    if (need[0]) gin[0] = w ? tensor_mul(pv, w) : pv;
    if (w && need[2]) gin[2] = tensor_sum_to(tensor_mul(g, pv), w->ndim, w->shape);
    if (need[1]) {
        Tensor *xc = tensor_sub(x, tensor_mean(x, nn, dims, true));
        Tensor *r = tensor_rsqrt(tensor_add(tensor_mean(tensor_mul(xc, xc), nn, dims, true), sc(x, eps)));
        Tensor *xh = tensor_mul(xc, r);
        Tensor *gh = w ? tensor_mul(g, w) : g;
        Tensor *mvx = tensor_mean(tensor_mul(v, xh), nn, dims, true);
        Tensor *mgx = tensor_mean(tensor_mul(gh, xh), nn, dims, true);
        Tensor *c = tensor_sub(tensor_mean(tensor_mul(v, gh), nn, dims, true),
                               tensor_mul(tensor_mean(v, nn, dims, true), tensor_mean(gh, nn, dims, true)));
        c = tensor_sub(c, tensor_mul(mvx, mgx));
        Tensor *t = tensor_add(tensor_mul(tensor_mul(r, xh), c), tensor_add(tensor_mul(mvx, OUT), tensor_mul(mgx, pv)));
        gin[1] = tensor_neg(tensor_mul(r, t));
    }
}

/* ---- joining and indexing -------------------------------------------------------------------- */

static void bw_cat(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    int dim = (int)n->iattr[0];
    int64_t at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int64_t len = IN(i)->shape[dim];
        if (need[i]) gin[i] = tensor_slice(g, dim, at, at + len, 1);
        at += len;
    }
}

static void bw_index_select(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    int dim = (int)n->iattr[0];
    Tensor *x = IN(0), *idx = n->saved;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < g->ndim; i++) shape[i] = i == dim ? g->shape[i] : 1;
    Tensor *full = tensor_contiguous(tensor_expand(tensor_reshape(idx, g->ndim, shape), g->ndim, g->shape));
    gin[0] = tensor_scatter_add(zeros_shaped(x), dim, full, g);
}

static void bw_gather(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    (void)need;
    gin[0] = tensor_scatter_add(zeros_shaped(IN(0)), (int)n->iattr[0], n->saved, g);
}

static void bw_scatter_add(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    Tensor *src = IN(1), *idx = n->saved;
    if (need[0]) gin[0] = g;
    if (need[1]) {
        Tensor *gs = tensor_gather(g, (int)n->iattr[0], idx);
        for (int d = 0; d < src->ndim; d++) /* src larger than index: zeros beyond it */
            if (gs->shape[d] != src->shape[d]) {
                int64_t s[TENSOR_MAX_DIMS];
                memcpy(s, gs->shape, sizeof s);
                s[d] = src->shape[d];
                gs = tensor_slice_scatter(gs, gs->ndim, s, d, 0, gs->shape[d], 1);
            }
        gin[1] = gs;
    }
}

/* ---- custom ---------------------------------------------------------------------------------- */

static void bw_custom(const TensorNode *n, Tensor *g, const bool *need, Tensor **gin) {
    const AgCustomOp *op = n->custom;
    op->backward(n->ctx, n->n_inputs, n->inputs, n->out, g, need, gin);
}

/* ---- the table ------------------------------------------------------------------------------- */

static const AgBackwardFn table[TENSOR_OP_COUNT] = {
    [TENSOR_OP_RESHAPE] = bw_reshape,
    [TENSOR_OP_PERMUTE] = bw_permute,
    [TENSOR_OP_EXPAND] = bw_expand,
    [TENSOR_OP_SLICE] = bw_slice,
    [TENSOR_OP_SLICE_SCATTER] = bw_slice_scatter,
    [TENSOR_OP_CONTIGUOUS] = bw_identity,
    [TENSOR_OP_CAST] = bw_cast,
    [TENSOR_OP_ADD] = bw_add,
    [TENSOR_OP_SUB] = bw_sub,
    [TENSOR_OP_MUL] = bw_mul,
    [TENSOR_OP_DIV] = bw_div,
    [TENSOR_OP_POW] = bw_pow,
    [TENSOR_OP_MAXIMUM] = bw_maximum,
    [TENSOR_OP_MINIMUM] = bw_minimum,
    [TENSOR_OP_GELU_BACKWARD] = bw_gelu_backward,
    [TENSOR_OP_WHERE] = bw_where,
    [TENSOR_OP_NEG] = bw_unary,
    [TENSOR_OP_ABS] = bw_unary,
    [TENSOR_OP_EXP] = bw_unary,
    [TENSOR_OP_LOG] = bw_unary,
    [TENSOR_OP_SQRT] = bw_unary,
    [TENSOR_OP_RSQRT] = bw_unary,
    [TENSOR_OP_SIN] = bw_unary,
    [TENSOR_OP_COS] = bw_unary,
    [TENSOR_OP_TANH] = bw_unary,
    [TENSOR_OP_SIGMOID] = bw_unary,
    [TENSOR_OP_RELU] = bw_unary,
    [TENSOR_OP_ELU] = bw_unary,
    [TENSOR_OP_GELU] = bw_unary,
    [TENSOR_OP_GELU_TANH] = bw_unary,
    [TENSOR_OP_SOFTPLUS] = bw_unary,
    [TENSOR_OP_ERF] = bw_unary,
    [TENSOR_OP_SUM] = bw_sum,
    [TENSOR_OP_MAX] = bw_maxmin,
    [TENSOR_OP_MIN] = bw_maxmin,
    [TENSOR_OP_MATMUL] = bw_matmul,
    [TENSOR_OP_DET3] = bw_det3,
    [TENSOR_OP_INV3] = bw_inv3,
    [TENSOR_OP_SOFTMAX] = bw_softmax,
    [TENSOR_OP_LOG_SOFTMAX] = bw_log_softmax,
    [TENSOR_OP_LAYER_NORM] = bw_layer_norm,
    [TENSOR_OP_LAYER_NORM_BACKWARD] = bw_layer_norm_backward,
    [TENSOR_OP_CAT] = bw_cat,
    [TENSOR_OP_INDEX_SELECT] = bw_index_select,
    [TENSOR_OP_GATHER] = bw_gather,
    [TENSOR_OP_SCATTER_ADD] = bw_scatter_add,
    [TENSOR_OP_CUSTOM] = bw_custom,
};

AgBackwardFn ag_backward_fn(TensorOpId op) { return op < TENSOR_OP_COUNT ? table[op] : NULL; }
