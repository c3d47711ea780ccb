/* tests/test_backend_ops.c — backend parity driven by the op table (ggml's test-backend-ops
 * habit). Every op of tensor/op_table.h runs on every non-CPU backend present and on the CPU,
 * over the dtypes it takes (f32, f64; bf16 where the op takes it; i64 where it is data), with
 * permuted, sliced, expanded and broadcast operands, forward and, for the differentiable ops,
 * backward: the gradients of the inputs for a random upstream gradient, through autograd on
 * each device. Each output and gradient is compared by the normalized MSE of ggml's
 * max_nmse_err,
 *     NMSE = Σ (dev − cpu)² / Σ cpu²,
 * against the tolerance of its dtype (TOL_* below: f32 1e-10, f64 1e-26, bf16 1e-5, i64 0; NaN
 * and ±inf must sit at the same places);
 * random draws, the optimizer steps and lincomb bit for bit (EXACT: their kernels claim
 * bit-identity with the CPU's).
 *
 *   cuda_backend_ops              (--cuda, `make test-cuda`) every case on each device present,
 *                                 then a table: op, runs (case × dtype), max NMSE forward and
 *                                 backward; and the coverage check below. ANIMA_PARITY_SELFTEST=1
 *                                 puts the CPU in the device's place; without a device it exits
 *                                 77 (skip).
 *   backend_ops_covers_every_op   an op without a case fails, listing the missing ops; a case
 *                                 naming no op fails too.
 *   backend_ops_selftest          every case with the CPU in the device's place must pass.
 *   backend_ops_catches_broken_kernels  the CPU table with one kernel deliberately wrong
 *                                 (tensor_backend_cpu_replace) serves the device side only: the
 *                                 cases of that op must fail, naming the part that differs, so
 *                                 the suite cannot pass silently. Broken: exp 0.1% off, one NaN
 *                                 from sin, scatter_add 0.1% off (gather's backward only), one
 *                                 flipped bit of a random draw, one Adam update one ulp off,
 *                                 matmul's last row dropped, attention's output and its dK 0.1%
 *                                 off.
 *
 * Shapes are small (tens to a few hundred elements; some cases over 256 elements and not a
 * multiple of 32, to cross a 256-thread block and leave a partial warp) so that the whole suite
 * takes about a second on the CPU and stays short under the CUDA emulator. Constructors build on
 * the CPU (tensor_zeros, tensor_arange, tensor_rand...); on a device the same values come from
 * that backend's fill / arange / random kernels, which is what their cases compare. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/custom.h"
#include "nn/attention.h"
#include "tensor/backend.h"
#include "tests/test.h"

/* ---- tolerances (normalized MSE) -----------------------------------------------------------------
 * Two correct backends differ by a few ulps per element (another summation order, FMA
 * contraction, CUDA's libm within 2 ulps of glibc's): NMSE ≈ (few ulps)², ~1e-14 in f32 and
 * ~1e-31 in f64 (measured under the CUDA emulator: at most 8e-14 and 1.2e-30). The tolerances
 * allow an RMS error of ~200 ulps (f32: √1e-10 = 1e-5 relative; f64: √1e-26 = 1e-13), three
 * orders above that and tighter than ggml's default 1e-7, which passes a kernel 1e-4 off
 * everywhere. bf16: results rounded to bf16 from f32 numbers that differ in their last bits can
 * land one bf16 ulp (2^-8 relative) apart; 1e-5 admits such flips on up to a third of the
 * elements and nothing larger. i64: equal. */
#define TOL_F32 1e-10
#define TOL_F64 1e-26
#define TOL_BF16 1e-5

static double tol_of(TensorDType dt) {
    return dt == TENSOR_F32 ? TOL_F32 : dt == TENSOR_F64 ? TOL_F64 : dt == TENSOR_BF16 ? TOL_BF16 : 0;
}

/* ---- cases ----------------------------------------------------------------------------------- */

enum { F32 = 1, F64 = 2, BF16 = 4, BF16G = 8 /* bf16, backward too */, I64 = 16 };
#define FL (F32 | F64)

typedef enum {
    RN,    /* N(0, 1) */
    POS,   /* |N(0, 1)| + 0.5 */
    SGN,   /* magnitude in [0.2, 2.2), random sign: away from kinks and poles */
    INT,   /* round(2 N(0, 1)): ties for comparisons, max and argmax */
    IDX,   /* i64 in [0, lim) */
    WELL3, /* 3 I + N(0, 1) over the last two dims (3, 3): well conditioned */
    NANS,  /* N(0, 1) with a NaN every 29th element: NaN must propagate alike */
    WIDE,  /* 60 N(0, 1): exp overflows to inf in f32 */
} InKind;

typedef struct {
    int nd;
    int64_t shape[4];
    InKind kind;
    int64_t lim;
    bool diff; /* differentiable input (the backward compares its gradient) */
} InSpec;

typedef struct {
    TensorDevice dev;
    TensorDType dt;
    bool ref; /* the CPU reference side */
} Ctx;

typedef Tensor *(*CaseFn)(Tensor *const *in, const Ctx *c);

typedef enum {
    GRAD,  /* forward, then backward for f32/f64 (and bf16 where BF16G) */
    FWD,   /* forward only: NONDIFF ops */
    EXACT, /* forward only, bit for bit */
} Mode;

typedef struct {
    const char *op, *var; /* op: its name in tensor/op_table.h */
    CaseFn fn;
    unsigned dts;
    Mode mode;
    int n;
    InSpec in[4];
} Case;

#define NDIM_(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define D(k, ...) {NDIM_(__VA_ARGS__), {__VA_ARGS__}, k, 0, true}  /* differentiable */
#define K(k, ...) {NDIM_(__VA_ARGS__), {__VA_ARGS__}, k, 0, false} /* constant */
#define IX(lim, ...) {NDIM_(__VA_ARGS__), {__VA_ARGS__}, IDX, lim, false}
#define FN(name) static Tensor *name(Tensor *const *in, const Ctx *c)
#define UNUSED (void)in, (void)c
#define T01(x) tensor_transpose(x, 0, 1)

/* views and layout */
FN(f_reshape_copy) { UNUSED; return tensor_reshape(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), TENSOR_SHAPE(4, -1)); }
FN(f_reshape_view) { UNUSED; return tensor_reshape(in[0], TENSOR_SHAPE(2, -1, 4)); }
FN(f_permute) { UNUSED; return tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)); }
FN(f_expand) { UNUSED; return tensor_expand(in[0], TENSOR_SHAPE(2, 3, 4)); }
FN(f_slice) { UNUSED; return tensor_slice(in[0], 1, 1, 9, 3); }
FN(f_slice_scatter) { UNUSED; return tensor_slice_scatter(in[0], TENSOR_SHAPE(5, 4), 0, 1, 5, 2); }
FN(f_contiguous) { UNUSED; return tensor_contiguous(T01(in[0])); }
FN(f_cast_chain) {
    UNUSED;
    Tensor *x = tensor_mul_scalar(in[0], 10);
    TensorDType other = c->dt == TENSOR_F32 ? TENSOR_F64 : TENSOR_F32;
    Tensor *i = tensor_cast(tensor_cast(x, other), TENSOR_I64); /* truncation, then back */
    return tensor_add(tensor_cast(i, c->dt), tensor_cast(tensor_cast(x, other), c->dt));
}
FN(f_cast_bf16) {
    UNUSED;
    if (c->dt == TENSOR_BF16) return tensor_cast(T01(in[0]), TENSOR_F32);
    return tensor_cast(tensor_cast(T01(in[0]), TENSOR_BF16), TENSOR_F32); /* round to bf16 */
}
FN(f_view) { UNUSED; return tensor_view(in[0], TENSOR_SHAPE(3, 8)); }
FN(f_transpose) { UNUSED; return tensor_transpose(in[0], -1, 0); }
FN(f_narrow) { UNUSED; return tensor_narrow(in[0], 1, 1, 3); }
FN(f_squeeze) { UNUSED; return tensor_squeeze(in[0], 1); }
FN(f_unsqueeze) { UNUSED; return tensor_unsqueeze(T01(in[0]), -1); }
FN(f_flatten) { UNUSED; return tensor_flatten(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), 0, 1); }

/* broadcasting binary: a permuted (6,4,5) -> (4,5,6) against b (5,1); a every other column
 * against an expanded b; and a large plain case (17,19) + (19) */
typedef Tensor *(*BinOp)(Tensor *, Tensor *);
static Tensor *bin_sub(Tensor *a, Tensor *b) { return tensor_sub(a, b); }
static Tensor *bin_add(Tensor *a, Tensor *b) { return tensor_add(a, b); }
static Tensor *bin_mul(Tensor *a, Tensor *b) { return tensor_mul(a, b); }
static Tensor *bin_div(Tensor *a, Tensor *b) { return tensor_div(a, b); }
static Tensor *bin_pow(Tensor *a, Tensor *b) { return tensor_pow(a, b); }
static Tensor *bin_maximum(Tensor *a, Tensor *b) { return tensor_maximum(a, b); }
static Tensor *bin_minimum(Tensor *a, Tensor *b) { return tensor_minimum(a, b); }
static Tensor *bin_gelu_backward(Tensor *a, Tensor *b) { return tensor_gelu_backward(a, b); }
static Tensor *bin_eq(Tensor *a, Tensor *b) { return tensor_eq(a, b); }
static Tensor *bin_ne(Tensor *a, Tensor *b) { return tensor_ne(a, b); }
static Tensor *bin_lt(Tensor *a, Tensor *b) { return tensor_lt(a, b); }
static Tensor *bin_le(Tensor *a, Tensor *b) { return tensor_le(a, b); }
static Tensor *bin_gt(Tensor *a, Tensor *b) { return tensor_gt(a, b); }
static Tensor *bin_ge(Tensor *a, Tensor *b) { return tensor_ge(a, b); }

#define BIN_FNS(op)                                                                                    \
    FN(f_##op##_perm) {                                                                                \
        UNUSED;                                                                                        \
        return bin_##op(tensor_permute(in[0], TENSOR_DIMS(1, 2, 0)), in[1]);                           \
    }                                                                                                  \
    FN(f_##op##_strided) {                                                                             \
        UNUSED;                                                                                        \
        return bin_##op(tensor_slice(in[0], 1, 0, 12, 2), tensor_expand(in[1], TENSOR_SHAPE(5, 6)));  \
    }                                                                                                  \
    FN(f_##op##_large) {                                                                               \
        UNUSED;                                                                                        \
        return bin_##op(in[0], in[1]);                                                                 \
    }
BIN_FNS(add)
BIN_FNS(sub)
BIN_FNS(mul)
BIN_FNS(div)
BIN_FNS(pow)
BIN_FNS(maximum)
BIN_FNS(minimum)
BIN_FNS(gelu_backward)
BIN_FNS(eq)
BIN_FNS(ne)
BIN_FNS(lt)
BIN_FNS(le)
BIN_FNS(gt)
BIN_FNS(ge)

FN(f_where) {
    UNUSED;
    Tensor *a = tensor_permute(in[0], TENSOR_DIMS(1, 2, 0));
    Tensor *cond = tensor_gt(tensor_detach(a), tensor_mul_scalar(tensor_detach(in[1]), 0.5));
    return tensor_where(cond, a, in[1]);
}

/* unary on a transposed (23, 13) input: 299 elements */
#define UN_FN(name, call)                                                                              \
    FN(f_##name) {                                                                                     \
        UNUSED;                                                                                        \
        Tensor *x = T01(in[0]);                                                                        \
        return call;                                                                                   \
    }
UN_FN(neg, tensor_neg(x))
UN_FN(abs, tensor_abs(x))
UN_FN(sign, tensor_sign(x))
UN_FN(exp, tensor_exp(x))
UN_FN(log, tensor_log(x))
UN_FN(sqrt, tensor_sqrt(x))
UN_FN(rsqrt, tensor_rsqrt(x))
UN_FN(sin, tensor_sin(x))
UN_FN(cos, tensor_cos(x))
UN_FN(tanh, tensor_tanh(x))
UN_FN(sigmoid, tensor_sigmoid(x))
UN_FN(relu, tensor_relu(x))
UN_FN(elu, tensor_elu(x, 0.7))
UN_FN(gelu, tensor_gelu(x))
UN_FN(gelu_tanh, tensor_gelu_tanh(x))
UN_FN(softplus, tensor_softplus(x, 1.5, 2.0))
UN_FN(erf, tensor_erf(x))

/* reductions */
FN(f_sum_dims02) { UNUSED; return tensor_sum(in[0], TENSOR_DIMS(0, 2), false); }
FN(f_sum_perm_keep) { UNUSED; return tensor_sum(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)), TENSOR_DIMS(1), true); }
FN(f_sum_long) { UNUSED; return tensor_sum(in[0], TENSOR_DIMS(1), false); }
FN(f_sum_all) { UNUSED; return tensor_sum(in[0], 0, NULL, false); }
FN(f_max_dim1) { UNUSED; return tensor_max(in[0], TENSOR_DIMS(1), false); }
FN(f_max_dims02_keep) { UNUSED; return tensor_max(T01(in[0]), TENSOR_DIMS(0, 2), true); }
FN(f_max_all) { UNUSED; return tensor_max(in[0], TENSOR_DIMS(0, 1), false); }
FN(f_min_dim1) { UNUSED; return tensor_min(in[0], TENSOR_DIMS(1), false); }
FN(f_min_dims02_keep) { UNUSED; return tensor_min(T01(in[0]), TENSOR_DIMS(0, 2), true); }
FN(f_min_all) { UNUSED; return tensor_min(in[0], TENSOR_DIMS(0, 1), false); }
FN(f_mean) { UNUSED; return tensor_mean(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)), TENSOR_DIMS(0, 2), true); }
FN(f_var) { UNUSED; return tensor_var(in[0], TENSOR_DIMS(0, 2), 1, false); }
FN(f_var_long) { UNUSED; return tensor_var(in[0], TENSOR_DIMS(1), 0, true); }
FN(f_norm_p2) { UNUSED; return tensor_norm(T01(in[0]), 2, TENSOR_DIMS(1), false); }
FN(f_norm_p1) { UNUSED; return tensor_norm(in[0], 1, TENSOR_DIMS(0, 2), true); }
FN(f_norm_pinf) { UNUSED; return tensor_norm(in[0], INFINITY, TENSOR_DIMS(2), false); }
FN(f_norm_p3) { UNUSED; return tensor_norm(in[0], 3, 0, NULL, false); }
FN(f_argmax_dim1) { UNUSED; return tensor_argmax(T01(in[0]), 1, false); }
FN(f_argmax_all) { UNUSED; return tensor_argmax(in[0], TENSOR_ALL_DIMS, false); }

/* linear algebra */
FN(f_matmul) { UNUSED; return tensor_matmul(in[0], in[1]); }
FN(f_matmul_t) { UNUSED; return tensor_matmul(T01(in[0]), T01(in[1])); }
FN(f_matmul_perm) { UNUSED; return tensor_matmul(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), in[1]); }
FN(f_matmul_step) { UNUSED; return tensor_matmul(tensor_slice(in[0], 1, 0, in[0]->shape[1], 2), in[1]); }
FN(f_det3) { UNUSED; return tensor_det3(tensor_transpose(in[0], -1, -2)); }
FN(f_inv3) { UNUSED; return tensor_inv3(tensor_transpose(in[0], -1, -2)); }

/* normalization */
FN(f_softmax_mid) { UNUSED; return tensor_softmax(in[0], 1); }
FN(f_softmax_t) { UNUSED; return tensor_softmax(T01(in[0]), -1); }
FN(f_log_softmax_rows) { UNUSED; return tensor_log_softmax(in[0], -1); }
FN(f_log_softmax_perm) { UNUSED; return tensor_log_softmax(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)), 0); }
FN(f_layer_norm_wb) { UNUSED; return tensor_layer_norm(in[0], 1, in[1], in[2], 1e-5); }
FN(f_layer_norm_perm2) { UNUSED; return tensor_layer_norm(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), 2, NULL, NULL, 1e-5); }
FN(f_layer_norm_w) { UNUSED; return tensor_layer_norm(in[0], 1, in[1], NULL, 1e-3); }
FN(f_layer_norm_backward_w) { UNUSED; return tensor_layer_norm_backward(in[0], in[1], 1, in[2], 1e-5); }
FN(f_layer_norm_backward_perm) {
    UNUSED;
    return tensor_layer_norm_backward(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), tensor_permute(in[1], TENSOR_DIMS(1, 0, 2)),
                                      2, NULL, 1e-3);
}

/* joining and indexing */
FN(f_cat) {
    UNUSED;
    Tensor *xs[3] = {tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), in[1], tensor_expand(in[2], TENSOR_SHAPE(5, 2, 6))};
    return tensor_cat(3, xs, 1);
}
FN(f_stack) {
    UNUSED;
    Tensor *xs[2] = {in[0], T01(in[1])};
    return tensor_stack(2, xs, -1);
}
FN(f_split) {
    UNUSED;
    Tensor *p[4];
    int k = tensor_split(T01(in[0]), 2, 1, p, 4);
    CHECK(k == 3);
    Tensor *parts[3] = {tensor_mul_scalar(p[0], 2), tensor_neg(p[1]), tensor_exp(p[2])};
    return tensor_cat(3, parts, 1);
}
FN(f_index_select) { UNUSED; return tensor_index_select(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), 1, in[1]); }
FN(f_index_select_cpu_index) { /* an index left on the CPU: the front-end moves it */
    UNUSED;
    static const int64_t ix[7] = {3, 0, 3, 9, 1, 9, 2};
    return tensor_index_select(in[0], 0, tensor_from_data(TENSOR_SHAPE(7), TENSOR_I64, ix));
}
FN(f_gather) { UNUSED; return tensor_gather(in[0], 0, in[1]); }
FN(f_scatter_add) { UNUSED; return tensor_scatter_add(in[0], 1, in[1], in[2]); }

/* constructors: the CPU op on the reference side, the device's kernel on the other */
static Tensor *empty_dev(int nd, const int64_t *shape, const Ctx *c) { return tensor_empty_on(nd, shape, c->dt, c->dev); }
FN(f_zeros) { UNUSED; return c->ref ? tensor_zeros(TENSOR_SHAPE(7, 45), c->dt) : tensor_zeros_like(empty_dev(TENSOR_SHAPE(7, 45), c)); }
FN(f_ones) { UNUSED; return c->ref ? tensor_ones(TENSOR_SHAPE(3, 5), c->dt) : tensor_ones_like(empty_dev(TENSOR_SHAPE(3, 5), c)); }
FN(f_full) {
    UNUSED;
    Tensor *t = c->ref ? tensor_full(TENSOR_SHAPE(7, 45), 0.5, c->dt) : empty_dev(TENSOR_SHAPE(7, 45), c);
    if (!c->ref) tensor_fill_(t, 0.5);
    tensor_fill_(tensor_slice(t, 1, 1, 45, 3), -2.75); /* a strided fill */
    return t;
}
static Tensor *arange_on(double start, double end, double step, const Ctx *c) {
    if (c->ref) return tensor_arange(start, end, step, c->dt);
    int64_t n = (int64_t)ceil((end - start) / step);
    Tensor *t = empty_dev(1, &n, c);
    tensor_backend_for(c->dev)->arange(t, start, step);
    return t;
}
FN(f_arange_frac) { UNUSED; return arange_on(-3.7, 3.3, 0.1, c); }
FN(f_arange_long) { UNUSED; return arange_on(-5, 296, 1, c); }
FN(f_linspace) {
    UNUSED;
    if (c->ref) return tensor_linspace(-1.0, 2.0, 37, c->dt);
    Tensor *t = empty_dev(TENSOR_SHAPE(37), c);
    tensor_backend_for(c->dev)->arange(t, -1.0, 3.0 / 36);
    tensor_fill_(tensor_narrow(t, 0, 36, 1), 2.0);
    return t;
}
FN(f_eye) {
    UNUSED;
    if (c->ref) return tensor_eye(6, c->dt);
    Tensor *t = tensor_zeros_like(empty_dev(TENSOR_SHAPE(6, 6), c));
    tensor_fill_(tensor_slice(tensor_reshape(t, TENSOR_SHAPE(36)), 0, 0, 36, 7), 1); /* the diagonal */
    return t;
}
static Tensor *draw(int64_t n, bool normal, const Ctx *c) {
    TensorRng g = {.seed = 0x1234567887654321ull, .stream = 7, .offset = 99};
    if (c->ref) return normal ? tensor_randn_with(&g, 1, &n, c->dt) : tensor_rand_with(&g, 1, &n, c->dt);
    Tensor *t = empty_dev(1, &n, c);
    tensor_backend_for(c->dev)->random(t, g.seed, g.stream, g.offset, normal);
    return t;
}
FN(f_rand_small) { UNUSED; return draw(5, false, c); }
FN(f_rand) { UNUSED; return draw(301, false, c); }
FN(f_randn_small) { UNUSED; return draw(5, true, c); }
FN(f_randn) { UNUSED; return draw(301, true, c); }

/* fused kernels */
FN(f_attention) { UNUSED; return nn_attention_tiled(tensor_slice(in[0], 1, 0, in[0]->shape[1], 2), in[1], in[2], 2); }
FN(f_attention_big) { UNUSED; return nn_attention_tiled(in[0], in[1], in[2], 2); }
FN(f_attention_qkv) { /* q, k, v narrow views of one fused (B, T, 3C) projection, read in place */
    UNUSED;
    int64_t C = in[0]->shape[2] / 3;
    return nn_attention_tiled(tensor_narrow(in[0], 2, 0, C), tensor_narrow(in[0], 2, C, C), tensor_narrow(in[0], 2, 2 * C, C), 3);
}
/* the in-place updates act on clones (tensor_clone: the device's copy kernel); the result is
 * every updated buffer, concatenated */
FN(f_sgd_plain) {
    UNUSED;
    Tensor *w = tensor_clone(in[0]);
    tensor_optim_sgd_(w, in[1], NULL, 0.1, 0, false, 0);
    return w;
}
FN(f_sgd_nesterov) {
    UNUSED;
    Tensor *w = tensor_clone(in[0]), *b = tensor_clone(in[2]);
    tensor_optim_sgd_(w, in[1], b, 0.1, 0.9, true, 0.01);
    tensor_optim_sgd_(w, in[1], b, 0.05, 0.9, true, 0.01);
    Tensor *xs[2] = {w, b};
    return tensor_cat(2, xs, 0);
}
static Tensor *adam(Tensor *const *in, bool adamw) {
    Tensor *w = tensor_clone(in[0]), *m = tensor_clone(in[2]), *v = tensor_abs(in[3]);
    double lr = 0.01, wd = 0.1;
    for (int t = 1; t <= 2; t++)
        tensor_optim_adam_(w, in[1], m, v, 0.9, 0.999, 1e-8, adamw ? 0 : wd, adamw ? 1 - lr * wd : 1,
                           lr / (1 - pow(0.9, t)), sqrt(1 - pow(0.999, t)));
    Tensor *xs[3] = {w, m, v};
    return tensor_cat(3, xs, 0);
}
FN(f_adam_l2) { UNUSED; return adam(in, false); }
FN(f_adamw) { UNUSED; return adam(in, true); }
FN(f_gram) {
    UNUSED;
    double dots[6];
    tensor_gram(3, in, dots);
    return tensor_to(tensor_from_f64(TENSOR_SHAPE(6), TENSOR_F64, dots), c->dev);
}
FN(f_lincomb) {
    UNUSED;
    Tensor *xs[3] = {tensor_clone(in[0]), in[1], in[2]};
    tensor_lincomb_(xs[0], 3, (const double[]){0.5, -1.25, 3.0}, xs); /* out aliases x_0 */
    return xs[0];
}

/* a user-registered op: x·sin x with a hand-written backward of tensor ops */
static Tensor *xsin_forward(void *ctx, int n, Tensor *const *in) {
    (void)ctx, (void)n;
    return tensor_mul(in[0], tensor_sin(in[0]));
}
static void xsin_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)ctx, (void)n, (void)out;
    if (need[0]) gin[0] = tensor_mul(g, tensor_add(tensor_sin(in[0]), tensor_mul(in[0], tensor_cos(in[0]))));
}
static const AgCustomOp xsin_op = {"test_xsin", xsin_forward, xsin_backward};
FN(f_custom) {
    UNUSED;
    Tensor *x = T01(in[0]);
    return ag_custom_apply(&xsin_op, 1, &x, NULL, 0);
}

#define BIN_CASES(op, ka, kb)                                                                                    \
    {#op, "perm_bcast", f_##op##_perm, FL, GRAD, 2, {D(ka, 6, 4, 5), D(kb, 5, 1)}},                               \
    {#op, "step_expanded", f_##op##_strided, FL, GRAD, 2, {D(ka, 5, 12), D(kb, 5, 1)}},                           \
    {#op, "large", f_##op##_large, FL, GRAD, 2, {D(ka, 17, 19), D(kb, 19)}}
#define CMP_CASES(op, dts)                                                                                       \
    {#op, "perm_bcast", f_##op##_perm, dts, FWD, 2, {K(INT, 6, 4, 5), K(INT, 5, 1)}},                             \
    {#op, "step_expanded", f_##op##_strided, FL, FWD, 2, {K(INT, 5, 12), K(INT, 5, 1)}},                          \
    {#op, "large", f_##op##_large, FL, FWD, 2, {K(INT, 17, 19), K(INT, 19)}}
#define UN_CASE(op, k, mode) {#op, "transposed", f_##op, FL, mode, 1, {D(k, 23, 13)}}

static const Case cases[] = {
    /* views and layout */
    {"reshape", "copy", f_reshape_copy, FL | BF16G | I64, GRAD, 1, {D(RN, 2, 4, 3)}},
    {"reshape", "view", f_reshape_view, FL | BF16G | I64, GRAD, 1, {D(RN, 3, 8)}},
    {"permute", "3d", f_permute, FL | BF16G | I64, GRAD, 1, {D(RN, 2, 3, 4)}},
    {"expand", "bcast", f_expand, FL | BF16 | I64, GRAD, 1, {D(RN, 3, 1)}},
    {"slice", "step", f_slice, FL | BF16G | I64, GRAD, 1, {D(RN, 5, 10)}},
    {"slice_scatter", "step", f_slice_scatter, FL | BF16G, GRAD, 1, {D(RN, 2, 4)}},
    {"contiguous", "transposed", f_contiguous, FL | BF16G | I64, GRAD, 1, {D(RN, 7, 45)}},
    {"cast", "chain", f_cast_chain, FL, GRAD, 1, {D(RN, 7, 9)}},
    {"cast", "bf16", f_cast_bf16, F32 | BF16G, GRAD, 1, {D(RN, 13, 23)}},
    {"view", "split", f_view, FL | BF16G | I64, GRAD, 1, {D(RN, 2, 3, 4)}},
    {"transpose", "neg", f_transpose, FL | BF16G | I64, GRAD, 1, {D(RN, 2, 3, 4)}},
    {"narrow", "mid", f_narrow, FL | BF16G | I64, GRAD, 1, {D(RN, 3, 5)}},
    {"squeeze", "one", f_squeeze, FL | BF16G | I64, GRAD, 1, {D(RN, 3, 1, 2)}},
    {"unsqueeze", "neg", f_unsqueeze, FL | BF16G | I64, GRAD, 1, {D(RN, 3, 2)}},
    {"flatten", "perm", f_flatten, FL | BF16G | I64, GRAD, 1, {D(RN, 2, 3, 4)}},
    /* broadcasting binary */
    BIN_CASES(add, RN, RN),
    BIN_CASES(sub, RN, RN),
    BIN_CASES(mul, RN, RN),
    BIN_CASES(div, RN, SGN),
    BIN_CASES(pow, POS, RN),
    BIN_CASES(maximum, RN, RN),
    BIN_CASES(minimum, RN, RN),
    BIN_CASES(gelu_backward, RN, RN),
    CMP_CASES(eq, FL | I64),
    CMP_CASES(ne, FL | I64),
    CMP_CASES(lt, FL),
    CMP_CASES(le, FL),
    CMP_CASES(gt, FL),
    CMP_CASES(ge, FL),
    {"where", "perm_bcast", f_where, FL, GRAD, 2, {D(RN, 6, 4, 5), D(RN, 5, 1)}},
    /* unary */
    UN_CASE(neg, RN, GRAD),
    UN_CASE(abs, SGN, GRAD),
    UN_CASE(sign, SGN, FWD),
    UN_CASE(exp, RN, GRAD),
    {"exp", "overflow", f_exp, FL, FWD, 1, {K(WIDE, 23, 13)}},
    UN_CASE(log, POS, GRAD),
    {"log", "domain", f_log, FL, FWD, 1, {K(RN, 23, 13)}}, /* NaN below 0 */
    UN_CASE(sqrt, POS, GRAD),
    UN_CASE(rsqrt, POS, GRAD),
    UN_CASE(sin, RN, GRAD),
    UN_CASE(cos, RN, GRAD),
    UN_CASE(tanh, RN, GRAD),
    UN_CASE(sigmoid, RN, GRAD),
    UN_CASE(relu, SGN, GRAD),
    UN_CASE(elu, SGN, GRAD),
    UN_CASE(gelu, RN, GRAD),
    UN_CASE(gelu_tanh, RN, GRAD),
    UN_CASE(softplus, RN, GRAD),
    UN_CASE(erf, RN, GRAD),
    /* reductions */
    {"sum", "dims02", f_sum_dims02, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"sum", "perm_keep", f_sum_perm_keep, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"sum", "long_rows", f_sum_long, FL, GRAD, 1, {D(RN, 3, 300)}},
    {"sum", "all", f_sum_all, FL, GRAD, 1, {D(RN, 7, 45)}},
    {"max", "dim1", f_max_dim1, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"max", "ties", f_max_dim1, FL, GRAD, 1, {D(INT, 4, 9, 6)}},
    {"max", "t_dims02_keep", f_max_dims02_keep, FL, GRAD, 1, {D(RN, 5, 4, 6)}},
    {"max", "all_long", f_max_all, FL, GRAD, 1, {D(RN, 3, 301)}},
    {"max", "nan", f_max_dim1, FL, FWD, 1, {K(NANS, 4, 9, 6)}},
    {"min", "dim1", f_min_dim1, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"min", "ties", f_min_dim1, FL, GRAD, 1, {D(INT, 4, 9, 6)}},
    {"min", "t_dims02_keep", f_min_dims02_keep, FL, GRAD, 1, {D(RN, 5, 4, 6)}},
    {"min", "all_long", f_min_all, FL, GRAD, 1, {D(RN, 3, 301)}},
    {"min", "nan", f_min_dims02_keep, FL, FWD, 1, {K(NANS, 5, 4, 6)}},
    {"mean", "perm_keep", f_mean, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"var", "dims02", f_var, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"var", "long_corr0", f_var_long, FL, GRAD, 1, {D(RN, 3, 300)}},
    {"norm", "p2", f_norm_p2, FL, GRAD, 1, {D(SGN, 5, 7)}},
    {"norm", "p1_keep", f_norm_p1, FL, GRAD, 1, {D(SGN, 4, 5, 6)}},
    {"norm", "pinf", f_norm_pinf, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"norm", "p3_all", f_norm_p3, FL, GRAD, 1, {D(SGN, 4, 5, 6)}},
    {"argmax", "t_dim1", f_argmax_dim1, FL, FWD, 1, {K(RN, 9, 7)}},
    {"argmax", "ties", f_argmax_dim1, FL, FWD, 1, {K(INT, 9, 7)}},
    {"argmax", "all_long", f_argmax_all, FL, FWD, 1, {K(RN, 3, 301)}},
    {"argmax", "nan", f_argmax_dim1, FL, FWD, 1, {K(NANS, 9, 7)}},
    {"sum", "nan", f_sum_long, FL, FWD, 1, {K(NANS, 3, 300)}},
    /* linear algebra */
    {"matmul", "2d", f_matmul, FL | BF16G, GRAD, 2, {D(RN, 9, 13), D(RN, 13, 7)}},
    {"matmul", "transposed", f_matmul_t, FL | BF16G, GRAD, 2, {D(RN, 13, 9), D(RN, 7, 13)}},
    {"matmul", "batch_bcast", f_matmul, FL | BF16G, GRAD, 2, {D(RN, 3, 1, 8, 9), D(RN, 1, 4, 9, 7)}},
    {"matmul", "perm_shared_b", f_matmul_perm, FL, GRAD, 2, {D(RN, 8, 5, 9), D(RN, 9, 7)}},
    {"matmul", "col_step", f_matmul_step, FL, GRAD, 2, {D(RN, 11, 26), D(RN, 13, 7)}},
    {"matmul", "vec_mat", f_matmul, FL, GRAD, 2, {D(RN, 13), D(RN, 13, 29)}},
    {"matmul", "mat_vec", f_matmul, FL, GRAD, 2, {D(RN, 37, 13), D(RN, 13)}},
    {"matmul", "large", f_matmul, FL, GRAD, 2, {D(RN, 37, 53), D(RN, 53, 29)}},
    {"det3", "batch_t", f_det3, FL, GRAD, 1, {D(WELL3, 2, 5, 3, 3)}},
    {"inv3", "batch_t", f_inv3, FL, GRAD, 1, {D(WELL3, 2, 5, 3, 3)}},
    /* normalization */
    {"softmax", "mid", f_softmax_mid, FL, GRAD, 1, {D(RN, 3, 40, 5)}},
    {"softmax", "transposed", f_softmax_t, FL, GRAD, 1, {D(RN, 40, 3)}},
    {"log_softmax", "long_rows", f_log_softmax_rows, FL, GRAD, 1, {D(RN, 3, 300)}},
    {"log_softmax", "perm", f_log_softmax_perm, FL, GRAD, 1, {D(RN, 4, 5, 6)}},
    {"layer_norm", "w_b_long", f_layer_norm_wb, FL, GRAD, 3, {D(POS, 3, 300), D(RN, 300), D(RN, 300)}},
    {"layer_norm", "perm_2d", f_layer_norm_perm2, FL, GRAD, 1, {D(RN, 4, 3, 5)}},
    {"layer_norm", "w", f_layer_norm_w, FL, GRAD, 2, {D(RN, 6, 7), D(RN, 7)}},
    {"layer_norm_backward", "w", f_layer_norm_backward_w, FL, GRAD, 3, {D(RN, 4, 30), D(RN, 4, 30), D(RN, 30)}},
    {"layer_norm_backward", "perm_2d", f_layer_norm_backward_perm, FL, GRAD, 2, {D(RN, 4, 3, 5), D(RN, 4, 3, 5)}},
    /* joining and indexing */
    {"cat", "views", f_cat, FL | I64, GRAD, 3, {D(RN, 3, 5, 6), D(RN, 5, 4, 6), D(RN, 1, 6)}},
    {"stack", "t_last", f_stack, FL, GRAD, 2, {D(RN, 3, 4), D(RN, 4, 3)}},
    {"split", "t_chunks", f_split, FL, GRAD, 1, {D(RN, 5, 3)}},
    {"index_select", "perm_dups", f_index_select, FL, GRAD, 2, {D(RN, 10, 6, 5), IX(10, 23)}},
    {"index_select", "cpu_index", f_index_select_cpu_index, FL, GRAD, 1, {D(RN, 10, 7)}},
    {"gather", "dim0_dups", f_gather, FL, GRAD, 2, {D(RN, 9, 8, 3), IX(9, 20, 8, 2)}},
    {"scatter_add", "dim1_dups", f_scatter_add, FL, GRAD, 3, {D(RN, 3, 6, 5), IX(6, 2, 20, 5), D(RN, 3, 21, 5)}},
    /* constructors */
    {"zeros", "2d", f_zeros, FL | BF16 | I64, FWD, 0, {{0}}},
    {"ones", "2d", f_ones, FL | BF16 | I64, FWD, 0, {{0}}},
    {"full", "strided_fill", f_full, FL | BF16 | I64, FWD, 0, {{0}}},
    {"arange", "frac", f_arange_frac, FL, FWD, 0, {{0}}},
    {"arange", "long", f_arange_long, FL | I64, FWD, 0, {{0}}},
    {"linspace", "37", f_linspace, FL, FWD, 0, {{0}}},
    {"eye", "6", f_eye, FL | I64, FWD, 0, {{0}}},
    {"rand", "5", f_rand_small, FL, EXACT, 0, {{0}}},
    {"rand", "301", f_rand, FL, EXACT, 0, {{0}}},
    /* f64 normals: the device's double log/sin/cos may differ from glibc's by an ulp, so f64
     * randn is compared at TOL_F64 (tests/test_cuda.c: cuda_random_bit_identical) */
    {"randn", "5", f_randn_small, FL, EXACT, 0, {{0}}},
    {"randn", "301", f_randn, FL, EXACT, 0, {{0}}},
    /* fused kernels */
    {"attention", "strided_q", f_attention, FL | BF16G, GRAD, 3, {D(RN, 2, 10, 8), D(RN, 2, 7, 8), D(RN, 2, 7, 8)}},
    {"attention", "long_keys", f_attention_big, FL, GRAD, 3, {D(RN, 1, 33, 16), D(RN, 1, 70, 16), D(RN, 1, 70, 16)}},
    {"attention", "fused_qkv", f_attention_qkv, FL | BF16, GRAD, 1, {D(RN, 2, 9, 36)}},
    {"optim_sgd", "plain", f_sgd_plain, FL, EXACT, 2, {K(RN, 300), K(RN, 300)}},
    {"optim_sgd", "nesterov_wd", f_sgd_nesterov, FL, EXACT, 3, {K(RN, 300), K(RN, 300), K(RN, 300)}},
    {"optim_adam", "l2", f_adam_l2, FL, EXACT, 4, {K(RN, 300), K(RN, 300), K(RN, 300), K(RN, 300)}},
    {"optim_adam", "adamw", f_adamw, FL, EXACT, 4, {K(RN, 300), K(RN, 300), K(RN, 300), K(RN, 300)}},
    {"gram", "k3", f_gram, FL, FWD, 3, {K(RN, 300), K(RN, 300), K(RN, 300)}},
    {"lincomb", "k3_alias", f_lincomb, FL, EXACT, 3, {K(RN, 300), K(RN, 300), K(RN, 300)}},
    /* user-registered */
    {"custom", "xsin", f_custom, FL, GRAD, 1, {D(RN, 5, 7)}},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

/* ---- the harness ------------------------------------------------------------------------------ */

static const TensorDType DTYPES[4] = {TENSOR_F32, TENSOR_F64, TENSOR_BF16, TENSOR_I64};
static bool case_takes(const Case *c, TensorDType dt) {
    switch (dt) {
    case TENSOR_F32: return c->dts & F32;
    case TENSOR_F64: return c->dts & F64;
    case TENSOR_BF16: return c->dts & (BF16 | BF16G);
    default: return c->dts & I64;
    }
}
static bool case_backward(const Case *c, TensorDType dt) {
    if (c->mode != GRAD) return false;
    return dt == TENSOR_F32 || dt == TENSOR_F64 || (dt == TENSOR_BF16 && (c->dts & BF16G));
}

/* input i of case k in dtype dt, on the CPU, from the global generator */
static Tensor *make_input(const InSpec *s, TensorDType dt) {
    int64_t n = 1;
    for (int d = 0; d < s->nd; d++) n *= s->shape[d];
    Tensor *r = tensor_randn(s->nd, s->shape, TENSOR_F64), *u = tensor_rand(s->nd, s->shape, TENSOR_F64);
    double *x = tensor_f64(r), *v = tensor_f64(u);
    for (int64_t i = 0; i < n; i++) {
        switch (s->kind) {
        case RN: break;
        case POS: x[i] = fabs(x[i]) + 0.5; break;
        case SGN: x[i] = (0.2 + 2 * v[i]) * (x[i] < 0 ? -1 : 1); break;
        case INT: x[i] = round(2 * x[i]); break;
        case IDX: x[i] = floor(v[i] * (double)s->lim); break;
        case WELL3: x[i] = 0.3 * x[i] + (i % 9 % 4 == 0 ? 3 : 0); break; /* 3I + noise per (3, 3) */
        case NANS: x[i] = i % 29 == 3 ? NAN : x[i]; break;
        case WIDE: x[i] *= 60; break;
        }
    }
    TensorDType want = s->kind == IDX ? TENSOR_I64 : dt;
    return tensor_from_f64(s->nd, s->shape, want, x);
}

/* a fresh copy on dev (a copy even when dev is the CPU, for the self-test) */
static Tensor *to_dev(Tensor *x, TensorDevice dev) {
    if (dev == TENSOR_CPU) return tensor_clone(tensor_detach(x));
    return tensor_to(tensor_detach(x), dev);
}

/* NMSE of got against ref (any devices, same shape); INFINITY when shapes differ or NaN/inf
 * sit at different places */
static double nmse(const Tensor *got, const Tensor *ref) {
    if (!tensor_same_shape(got, ref)) return INFINITY;
    int64_t n = tensor_numel(ref);
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *y = malloc(sizeof(double) * (size_t)(n + 1));
    tensor_to_f64_array(tensor_to((Tensor *)got, TENSOR_CPU), x);
    tensor_to_f64_array(tensor_to((Tensor *)ref, TENSOR_CPU), y);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) || isnan(y[i]) || isinf(x[i]) || isinf(y[i])) {
            if (!(isnan(x[i]) && isnan(y[i])) && x[i] != y[i]) num = INFINITY;
            continue;
        }
        num += (x[i] - y[i]) * (x[i] - y[i]);
        den += y[i] * y[i];
    }
    free(x);
    free(y);
    return num == 0 ? 0 : num / (den > 1e-300 ? den : 1e-300);
}

/* elements whose bits differ (shapes and dtypes equal), or -1 */
static int64_t bits_differ(const Tensor *got, const Tensor *ref) {
    if (!tensor_same_shape(got, ref) || got->dtype != ref->dtype) return -1;
    Tensor *g = tensor_contiguous(tensor_to((Tensor *)got, TENSOR_CPU)), *r = tensor_contiguous(tensor_to((Tensor *)ref, TENSOR_CPU));
    size_t es = tensor_dtype_size(ref->dtype);
    int64_t d = 0;
    for (int64_t i = 0; i < tensor_numel(r); i++)
        d += memcmp((char *)tensor_data_ptr(g) + (size_t)i * es, (char *)tensor_data_ptr(r) + (size_t)i * es, es) != 0;
    return d;
}

typedef struct {
    int runs;
    double fwd[4], bwd[4]; /* max NMSE per dtype (DTYPES order); -1: none measured */
    unsigned dts;          /* dtypes run (bit i: DTYPES[i]) */
} OpStats;

static OpStats stats_init(void) {
    OpStats s = {0};
    for (int t = 0; t < 4; t++) s.fwd[t] = s.bwd[t] = -1;
    return s;
}

static int dtype_index(TensorDType dt) {
    for (int t = 0; t < 4; t++)
        if (DTYPES[t] == dt) return t;
    return 3;
}

typedef struct {
    TensorDevice dev;
    const TensorBackend *dev_table; /* the CPU standing in for a device: its table (NULL: the CPU's) */
    char msg[512];                  /* the first failure */
} Run;

static void fail_msg(Run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_msg(Run *r, const char *fmt, ...) {
    if (r->msg[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
}

/* the device side runs with the device table in place (only when the CPU stands in) */
static const TensorBackend *side_begin(const Run *r) { return r->dev_table ? tensor_backend_cpu_replace(r->dev_table) : NULL; }
static void side_end(const Run *r, const TensorBackend *prev) {
    if (r->dev_table) tensor_backend_cpu_replace(prev);
}

static bool compare(Run *r, const Case *c, TensorDType dt, const char *part, const Tensor *got, const Tensor *ref, bool exact,
                    double *maxerr) {
    const char *dn = tensor_dtype_name(dt);
    if (tensor_device(got) != r->dev) {
        fail_msg(r, "%s.%s %s: %s not on the device", c->op, c->var, dn, part);
        return false;
    }
    if (got->dtype != ref->dtype) {
        fail_msg(r, "%s.%s %s: %s is %s, the CPU's %s", c->op, c->var, dn, part, tensor_dtype_name(got->dtype),
                 tensor_dtype_name(ref->dtype));
        return false;
    }
    /* random f64 normals: close, not identical (the libm functions of the device) */
    if (exact && !(!strcmp(c->op, "randn") && dt == TENSOR_F64)) {
        int64_t d = bits_differ(got, ref);
        if (d != 0) {
            fail_msg(r, "%s.%s %s: %s: %lld of %lld elements differ in their bits (exact comparison)", c->op, c->var, dn,
                     part, (long long)d, (long long)tensor_numel(ref));
            *maxerr = fmax(*maxerr, INFINITY);
            return false;
        }
        *maxerr = fmax(*maxerr, 0);
        return true;
    }
    double e = nmse(got, ref), tol = tol_of(ref->dtype);
    *maxerr = fmax(*maxerr, e);
    if (!(e <= tol)) {
        fail_msg(r, "%s.%s %s: %s: NMSE %.3g > %.0e", c->op, c->var, dn, part, e, tol);
        return false;
    }
    return true;
}

/* One case in one dtype on r's device against the CPU; false (r->msg says why) on a mismatch. */
static bool run_case(Run *r, int k, TensorDType dt, OpStats *st) {
    const Case *c = &cases[k];
    TensorScope *scope = tensor_scope_begin();
    tensor_manual_seed(20240611 + 97 * (uint64_t)k + (uint64_t)dt);
    bool back = case_backward(c, dt), ok = true;
    Tensor *ci[4], *di[4], *cx[4], *dx[4];
    int nd = 0;
    for (int i = 0; i < c->n; i++) {
        ci[i] = make_input(&c->in[i], dt);
        di[i] = to_dev(ci[i], r->dev);
        if (back && c->in[i].diff) {
            tensor_requires_grad(ci[i], true);
            tensor_requires_grad(di[i], true);
            cx[nd] = ci[i], dx[nd] = di[i], nd++;
        }
    }
    Ctx cref = {TENSOR_CPU, dt, true}, cdev = {r->dev, dt, false};
    Tensor *yc = c->fn(ci, &cref);
    const TensorBackend *prev = side_begin(r);
    Tensor *yd = c->fn(di, &cdev);
    side_end(r, prev);
    st->runs++;
    ok = compare(r, c, dt, "forward", yd, yc, c->mode == EXACT, &st->fwd[dtype_index(dt)]);
    if (ok && back && nd && yc->requires_grad) {
        /* a random upstream gradient in the output's dtype (bf16 outputs: rounded f32 normals) */
        Tensor *w = tensor_randn(yc->ndim, yc->shape, yc->dtype == TENSOR_BF16 ? TENSOR_F32 : yc->dtype);
        if (yc->dtype == TENSOR_BF16) w = tensor_cast(w, TENSOR_BF16);
        Tensor *wd = to_dev(w, r->dev), *cg[4] = {0}, *dg[4] = {0};
        ag_grad(1, &yc, &w, nd, cx, cg, false);
        prev = side_begin(r);
        ag_grad(1, &yd, &wd, nd, dx, dg, false);
        side_end(r, prev);
        for (int i = 0; i < nd && ok; i++) {
            char part[32];
            snprintf(part, sizeof part, "grad of input %d", i);
            if ((cg[i] == NULL) != (dg[i] == NULL)) {
                fail_msg(r, "%s.%s %s: %s reachable on one device only", c->op, c->var, tensor_dtype_name(dt), part);
                ok = false;
            } else if (cg[i]) {
                ok = compare(r, c, dt, part, dg[i], cg[i], false, &st->bwd[dtype_index(dt)]);
            }
        }
    }
    tensor_scope_end(scope);
    return ok;
}

static int op_index(const char *name) {
    for (int i = 0; i < TENSOR_OP_COUNT; i++)
        if (!strcmp(tensor_op_table[i].name, name)) return i;
    return -1;
}

/* Every case in every dtype it takes on r's device; failures reported (all of them), the table
 * printed when print. Returns the number of failing runs. */
static int run_all(Run *r, const char *devname, bool print) {
    OpStats st[TENSOR_OP_COUNT];
    for (int i = 0; i < TENSOR_OP_COUNT; i++) st[i] = stats_init();
    int bad = 0;
    for (int k = 0; k < NCASES; k++) {
        int op = op_index(cases[k].op);
        if (op < 0) continue; /* backend_ops_covers_every_op names it */
        for (int t = 0; t < 4; t++) {
            if (!case_takes(&cases[k], DTYPES[t])) continue;
            st[op].dts |= 1u << t;
            r->msg[0] = 0;
            if (!run_case(r, k, DTYPES[t], &st[op])) {
                test_fail_at(__FILE__, __LINE__, "%s: %s", devname, r->msg);
                bad++;
            }
        }
    }
    if (print) {
        printf("    %s against cpu: NMSE tolerances f32 %.0e, f64 %.0e, bf16 %.0e, i64 0; 'exact' bit for bit\n", devname,
               TOL_F32, TOL_F64, TOL_BF16);
        printf("    %-20s %4s  %-17s %-19s %-19s %-19s\n", "", "", "", "f32 NMSE", "f64 NMSE", "bf16 NMSE");
        printf("    %-20s %4s  %-17s %-9s %-9s %-9s %-9s %-9s %-9s\n", "op", "runs", "dtypes", "fwd", "bwd", "fwd", "bwd",
               "fwd", "bwd");
        int total = 0;
        for (int i = 0; i < TENSOR_OP_COUNT; i++) {
            if (!st[i].runs) continue;
            char dts[32] = "", e[6][16];
            for (int t = 0; t < 4; t++)
                if (st[i].dts & (1u << t)) strcat(strcat(dts, dts[0] ? "," : ""), tensor_dtype_name(DTYPES[t]));
            for (int t = 0; t < 3; t++) {
                double f = st[i].fwd[t], b = st[i].bwd[t];
                snprintf(e[2 * t], 16, f < 0 ? "-" : f == 0 ? "0" : "%.1e", f);
                snprintf(e[2 * t + 1], 16, b < 0 ? "-" : b == 0 ? "0" : "%.1e", b);
            }
            printf("    %-20s %4d  %-17s %-9s %-9s %-9s %-9s %-9s %-9s\n", tensor_op_table[i].name, st[i].runs, dts, e[0], e[1],
                   e[2], e[3], e[4], e[5]);
            total += st[i].runs;
        }
        printf("    %d runs of %d cases, %d failed\n", total, NCASES, bad);
    }
    return bad;
}

/* ---- the tests --------------------------------------------------------------------------------- */

/* every op has a case; every case names an op (and a NONDIFF op no backward case) */
static void check_coverage(void) {
    char missing[2048] = "";
    int n_missing = 0;
    for (int i = 0; i < TENSOR_OP_COUNT; i++) {
        bool found = false;
        for (int k = 0; k < NCASES && !found; k++) found = !strcmp(cases[k].op, tensor_op_table[i].name);
        if (!found) {
            if (strlen(missing) + strlen(tensor_op_table[i].name) + 3 < sizeof missing)
                strcat(strcat(missing, n_missing ? ", " : ""), tensor_op_table[i].name);
            n_missing++;
        }
    }
    CHECK_MSG(n_missing == 0, "%d ops of tensor/op_table.h have no parity case in tests/test_backend_ops.c: %s", n_missing,
              missing);
    for (int k = 0; k < NCASES; k++) {
        CHECK_MSG(op_index(cases[k].op) >= 0, "case %s.%s names no op of tensor/op_table.h", cases[k].op, cases[k].var);
        const char *kind = "";
        if (op_index(cases[k].op) >= 0) {
            TensorOpKind kd = tensor_op_table[op_index(cases[k].op)].kind;
            if (kd == TENSOR_OPK_NONDIFF && cases[k].mode == GRAD) kind = "a NONDIFF op with a backward case";
        }
        CHECK_MSG(!kind[0], "case %s.%s: %s", cases[k].op, cases[k].var, kind);
    }
}

TEST(backend_ops_covers_every_op) { check_coverage(); }


TEST(cuda_backend_ops) {
    check_coverage(); /* an op without a case fails here too */
    if (getenv("ANIMA_PARITY_SELFTEST")) {
        Run r = {.dev = TENSOR_CPU};
        run_all(&r, "cpu (selftest)", true);
        return;
    }
    /* every device other than the CPU (today: CUDA) */
    int ran = 0;
    if (tensor_backend_cuda()) {
        Run r = {.dev = TENSOR_CUDA};
        run_all(&r, "cuda", true);
        ran++;
    }
    if (!ran) {
        fflush(NULL);
        exit(77);
    }
}

/* The whole suite with the CPU in the device's place: the harness itself, in every `make test`. */
TEST(backend_ops_selftest) {
    Run r = {.dev = TENSOR_CPU};
    CHECK(run_all(&r, "cpu (selftest)", false) == 0);
}

/* ---- broken kernels must fail -------------------------------------------------------------------- */

static void scale_out(Tensor *out, double f) {
    int64_t n = tensor_numel(out);
    if (out->dtype == TENSOR_F32)
        for (int64_t i = 0; i < n; i++) ((float *)tensor_data_ptr(out))[i] *= (float)f;
    else if (out->dtype == TENSOR_F64)
        for (int64_t i = 0; i < n; i++) ((double *)tensor_data_ptr(out))[i] *= f;
}

/* exp 1e-4 too large everywhere (ggml's default tolerance would pass it in f32) */
static void bad_unary_exp(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1) {
    tensor_backend_cpu.unary(op, out, x, p0, p1);
    if (op == TENSOR_OP_EXP) scale_out(out, 1.0001);
}
/* sin: one NaN */
static void bad_unary_sin(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1) {
    tensor_backend_cpu.unary(op, out, x, p0, p1);
    if (op == TENSOR_OP_SIN && tensor_numel(out) > 3) {
        if (out->dtype == TENSOR_F32) ((float *)tensor_data_ptr(out))[3] = NAN;
        else ((double *)tensor_data_ptr(out))[3] = NAN;
    }
}
/* scatter_add 0.1% too large: only backward passes use it for gather */
static void bad_scatter_add(Tensor *out, int dim, const Tensor *index, const Tensor *src) {
    tensor_backend_cpu.scatter_add(out, dim, index, src);
    scale_out(out, 1.001);
}
/* random: the last bit of one number flipped */
static void bad_random(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal) {
    tensor_backend_cpu.random(out, seed, stream, offset, normal);
    unsigned char *p = tensor_data_ptr(out);
    p[tensor_numel(out) > 1 ? tensor_dtype_size(out->dtype) : 0] ^= 1; /* little-endian: the lowest mantissa bit */
}
/* Adam: one update off by one ulp */
static void bad_adam(TensorDType dt, int64_t n, void *w, const void *g, void *m, void *v, double b1, double b2, double eps,
                     double l2, double decay, double step_size, double bc2_sqrt) {
    tensor_backend_cpu.optim_adam(dt, n, w, g, m, v, b1, b2, eps, l2, decay, step_size, bc2_sqrt);
    if (dt == TENSOR_F32) ((float *)w)[n / 2] = nextafterf(((float *)w)[n / 2], INFINITY);
    else ((double *)w)[n / 2] = nextafter(((double *)w)[n / 2], INFINITY);
}
/* matmul: the result of the last row dropped (left as zeros) */
static void bad_matmul(Tensor *out, const Tensor *a, const Tensor *b) {
    tensor_backend_cpu.matmul(out, a, b);
    int64_t n = tensor_numel(out), cols = out->ndim ? out->shape[out->ndim - 1] : 1;
    size_t es = tensor_dtype_size(out->dtype);
    memset((char *)tensor_data_ptr(out) + (size_t)(n - cols) * es, 0, (size_t)cols * es);
}

/* attention: the output 0.1% too large; its backward: dK 0.1% too large */
static void scale_raw(TensorDType dt, void *p, int64_t n, double f) {
    for (int64_t i = 0; i < n; i++) {
        if (dt == TENSOR_F32) ((float *)p)[i] *= (float)f;
        else ((double *)p)[i] *= f;
    }
}
static void bad_attention(const TensorAttentionArgs *a) {
    tensor_backend_cpu.attention(a);
    scale_raw(a->dtype, a->o, a->B * a->Tq * a->h * a->d, 1.001);
}
static void bad_attention_backward(const TensorAttentionArgs *a) {
    tensor_backend_cpu.attention_backward(a);
    scale_raw(a->dtype, a->gk, a->B * a->Tk * a->h * a->d, 1.001);
}

TEST(backend_ops_catches_broken_kernels) {
    static TensorBackend t[8];
    for (int i = 0; i < 8; i++) t[i] = tensor_backend_cpu;
    t[6].attention = bad_attention;
    t[7].attention_backward = bad_attention_backward;
    t[0].unary = bad_unary_exp;
    t[1].unary = bad_unary_sin;
    t[2].scatter_add = bad_scatter_add;
    t[3].random = bad_random;
    t[4].optim_adam = bad_adam;
    t[5].matmul = bad_matmul;
    /* which op's cases must fail under which table, and what the message must name */
    const struct {
        int table;
        const char *op, *part;
    } expect[] = {{0, "exp", "forward"}, {1, "sin", "forward"}, {2, "gather", "grad of input 0"},
                  {3, "rand", "differ in their bits"}, {4, "optim_adam", "differ in their bits"}, {5, "matmul", "forward"},
                  {6, "attention", "forward"}, {7, "attention", "grad of input"}};
    for (size_t e = 0; e < sizeof expect / sizeof *expect; e++) {
        int runs = 0, failed = 0;
        for (int k = 0; k < NCASES; k++) {
            if (strcmp(cases[k].op, expect[e].op) != 0) continue;
            for (int d = 0; d < 2; d++) { /* f32 and f64 */
                if (!case_takes(&cases[k], DTYPES[d])) continue;
                Run r = {.dev = TENSOR_CPU, .dev_table = &t[expect[e].table]};
                OpStats st = stats_init();
                runs++;
                if (!run_case(&r, k, DTYPES[d], &st)) {
                    failed++;
                    CHECK_MSG(strstr(r.msg, expect[e].part) != NULL, "broken %s: the failure '%s' does not name '%s'",
                              expect[e].op, r.msg, expect[e].part);
                } else {
                    test_fail_at(__FILE__, __LINE__, "broken %s kernel: case %s.%s %s passed", expect[e].op, cases[k].op,
                                 cases[k].var, tensor_dtype_name(DTYPES[d]));
                }
                /* the table is restored after every side: the CPU again */
                CHECK(tensor_backend_for(TENSOR_CPU) == &tensor_backend_cpu);
            }
        }
        CHECK_MSG(runs > 0 && failed == runs, "broken %s: %d of %d runs failed", expect[e].op, failed, runs);
    }
}
