/* tests/test_cuda.c — CPU/CUDA parity (run with --cuda; `make test-cuda`). Each case builds
 * random contiguous inputs on the CPU, moves copies to the device, applies the same function
 * on both (the function makes the permuted / broadcast / strided views itself, so the device
 * sees the same layouts), and compares the outputs and the gradients of sum(y · w) for a
 * random w by normalized MSE: Σ(got - ref)² / Σ ref² <= 1e-7 for f32 (1e-20 for f64, 0 for
 * i64, TOL_BF16_PARITY for bf16: see the bf16 section). The backward runs the derivative
 * formulas (tensor ops) on the device too.
 * Without a device each test exits 77 (skip). ANIMA_PARITY_SELFTEST=1 puts the CPU in the
 * device's place, to check the tests themselves on a machine without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "nn/gru.h"
#include "nn/modules.h"
#include "tensor/backend.h"
#include "tests/test.h"

static TensorDevice DEV = TENSOR_CUDA;

static const TensorBackend *need_device(void) {
    tensor_manual_seed(20240611);
    if (getenv("ANIMA_PARITY_SELFTEST")) {
        DEV = TENSOR_CPU;
        return &tensor_backend_cpu;
    }
    const TensorBackend *be = tensor_backend_cuda();
    if (!be) {
        fflush(NULL);
        exit(77);
    }
    return be;
}

/* a fresh copy on the device (a copy even when the device is the CPU, for the self-test) */
static Tensor *to_dev(Tensor *x) {
    if (DEV == TENSOR_CPU) return tensor_clone(tensor_detach(x));
    return tensor_to(x, DEV);
}

static double nmse(const Tensor *got, const Tensor *ref) {
    Tensor *g = tensor_to((Tensor *)got, TENSOR_CPU), *r = tensor_to((Tensor *)ref, TENSOR_CPU);
    int64_t n = tensor_numel(r);
    if (tensor_numel(g) != n || !tensor_same_shape(g, r)) return INFINITY;
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *y = malloc(sizeof(double) * (size_t)(n + 1));
    tensor_to_f64_array(g, x);
    tensor_to_f64_array(r, y);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) || isnan(y[i])) {
            if (!(isnan(x[i]) && isnan(y[i]))) num = INFINITY;
            continue;
        }
        if (isinf(x[i]) || isinf(y[i])) {
            if (x[i] != y[i]) num = INFINITY;
            continue;
        }
        num += (x[i] - y[i]) * (x[i] - y[i]);
        den += y[i] * y[i];
    }
    free(x);
    free(y);
    return num == 0 ? 0 : num / (den > 1e-300 ? den : 1e-300);
}

/* bf16 values computed from f32 numbers that differ in their last bits (summation order) can
 * round to neighbouring bf16 values, one bf16 ulp (2^-8 to 2^-7 relative) apart: were every
 * element off by that, the normalized MSE would be ~3e-5. 1e-5 admits such flips on up to a
 * third of the elements and nothing larger. */
#define TOL_BF16_PARITY 1e-5

static void expect_within(const char *what, const char *part, const Tensor *got, const Tensor *ref, double tol) {
    double e = nmse(got, ref);
    CHECK_MSG(e <= tol, "%s: %s: normalized MSE %.3g > %.3g", what, part, e, tol);
}

static void expect_close(const char *what, const char *part, const Tensor *got, const Tensor *ref) {
    double tol = ref->dtype == TENSOR_F32    ? 1e-7
               : ref->dtype == TENSOR_F64    ? 1e-20
               : ref->dtype == TENSOR_BF16 ? TOL_BF16_PARITY
                                             : 0;
    expect_within(what, part, got, ref, tol);
}

typedef Tensor *(*ParityFn)(Tensor *const *in, const void *ctx);

/* Runs fn on CPU inputs and on device copies; compares y and d sum(y·w) / d in[i] for the
 * inputs marked differentiable (bit i of diff). */
static void parity(const char *what, ParityFn fn, const void *ctx, int n, Tensor *const *cpu_in, unsigned diff) {
    Tensor *ci[8], *di[8], *cg[8] = {0}, *dg[8] = {0}, *cx[8], *dx[8];
    int nd = 0;
    for (int i = 0; i < n; i++) {
        ci[i] = tensor_detach(cpu_in[i]);
        di[i] = to_dev(cpu_in[i]);
        CHECK_MSG(tensor_device(di[i]) == DEV, "%s: input %d not moved", what, i);
        if (diff & (1u << i)) {
            tensor_requires_grad(ci[i], true);
            tensor_requires_grad(di[i], true);
            cx[nd] = ci[i], dx[nd] = di[i], nd++;
        }
    }
    Tensor *yc = fn(ci, ctx), *yd = fn(di, ctx);
    CHECK_MSG(tensor_device(yd) == DEV, "%s: output not on the device", what);
    expect_close(what, "forward", yd, yc);
    if (!nd || !yc->requires_grad) return;
    Tensor *w = tensor_randn(yc->ndim, yc->shape, yc->dtype);
    Tensor *lc = tensor_sum_all(tensor_mul(yc, w)), *ld = tensor_sum_all(tensor_mul(yd, to_dev(w)));
    ag_grad(1, &lc, NULL, nd, cx, cg, false);
    ag_grad(1, &ld, NULL, nd, dx, dg, false);
    for (int i = 0; i < nd; i++) {
        char part[32];
        snprintf(part, sizeof part, "grad %d", i);
        CHECK_MSG((cg[i] == NULL) == (dg[i] == NULL), "%s: %s reachable on one device only", what, part);
        if (cg[i] && dg[i]) {
            CHECK_MSG(tensor_device(dg[i]) == DEV, "%s: %s not on the device", what, part);
            expect_close(what, part, dg[i], cg[i]);
        }
    }
}

static Tensor *rn(TensorDType dt, int nd, const int64_t *shape) { return tensor_randn(nd, shape, dt); }
static Tensor *pos(TensorDType dt, int nd, const int64_t *shape) {
    return tensor_add_scalar(tensor_abs(tensor_randn(nd, shape, dt)), 0.5);
}

/* bf16 is not among them on purpose: it takes only casts, copies, matmul and attention (its
 * cases are in the bf16 section below, with their own tolerance) */
static const TensorDType FLOATS[2] = {TENSOR_F32, TENSOR_F64};

/* ---- copy, cast, fill, arange, keep ------------------------------------------------------ */

static Tensor *f_permute_contig(Tensor *const *in, const void *ctx) {
    (void)ctx;
    return tensor_contiguous(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)));
}
static Tensor *f_slice_step(Tensor *const *in, const void *ctx) {
    (void)ctx;
    return tensor_contiguous(tensor_slice(tensor_transpose(in[0], 0, 2), 1, 1, 5, 2));
}
static Tensor *f_cat(Tensor *const *in, const void *ctx) {
    (void)ctx;
    Tensor *xs[3] = {tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), in[1], tensor_expand(in[2], TENSOR_SHAPE(5, 2, 6))};
    return tensor_cat(3, xs, 1);
}
static Tensor *f_cast_chain(Tensor *const *in, const void *ctx) {
    (void)ctx;
    Tensor *x = tensor_mul_scalar(in[0], 10);
    TensorDType other = in[0]->dtype == TENSOR_F32 ? TENSOR_F64 : TENSOR_F32;
    Tensor *i = tensor_cast(tensor_cast(x, other), TENSOR_I64);
    return tensor_add(tensor_cast(i, in[0]->dtype), tensor_cast(tensor_cast(x, other), in[0]->dtype));
}

TEST(cuda_copy_cast_fill_arange) {
    const TensorBackend *be = need_device();
    TensorDType dts[3] = {TENSOR_F32, TENSOR_F64, TENSOR_I64};
    for (int t = 0; t < 3; t++) {
        Tensor *x = tensor_cast(tensor_mul_scalar(rn(TENSOR_F64, TENSOR_SHAPE(4, 5, 6)), 100), dts[t]);
        parity("permute+contiguous", f_permute_contig, NULL, 1, &x, 0);
        parity("slice step", f_slice_step, NULL, 1, &x, 0);
        Tensor *cat_in[3] = {tensor_cast(rn(TENSOR_F64, TENSOR_SHAPE(3, 5, 6)), dts[t]),
                             tensor_cast(rn(TENSOR_F64, TENSOR_SHAPE(5, 4, 6)), dts[t]),
                             tensor_cast(rn(TENSOR_F64, TENSOR_SHAPE(1, 6)), dts[t])};
        parity("cat", f_cat, NULL, 3, cat_in, 0);
    }
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        Tensor *in[3] = {rn(dt, TENSOR_SHAPE(3, 5, 6)), rn(dt, TENSOR_SHAPE(5, 4, 6)), rn(dt, TENSOR_SHAPE(1, 6))};
        parity("cat (grad)", f_cat, NULL, 3, in, 7);
        Tensor *x = rn(dt, TENSOR_SHAPE(7, 9));
        parity("cast chain", f_cast_chain, NULL, 1, &x, 1);

        /* broadcast copy_ into a strided destination, fill_ of a strided view */
        Tensor *dc = tensor_zeros(TENSOR_SHAPE(4, 5, 6), dt), *src = rn(dt, TENSOR_SHAPE(5, 1));
        Tensor *dd = to_dev(dc);
        tensor_copy_(tensor_permute(dc, TENSOR_DIMS(0, 2, 1)), tensor_permute(src, TENSOR_DIMS(1, 0)));
        tensor_copy_(tensor_permute(dd, TENSOR_DIMS(0, 2, 1)), to_dev(tensor_permute(src, TENSOR_DIMS(1, 0))));
        expect_close("copy_ broadcast", "value", dd, dc);
        tensor_fill_(tensor_slice(dc, 2, 0, 6, 2), 3.25);
        tensor_fill_(tensor_slice(dd, 2, 0, 6, 2), 3.25);
        expect_close("fill_ strided", "value", dd, dc);
        tensor_add_(dc, src, 0.5);
        tensor_add_(dd, to_dev(src), 0.5);
        tensor_scale_(dc, -2);
        tensor_scale_(dd, -2);
        expect_close("add_/scale_", "value", dd, dc);
        expect_close("ones_like", "value", tensor_ones_like(dd), tensor_ones_like(dc));
        expect_close("keep", "value", tensor_keep(dd), dc);
    }
    for (int t = 0; t < 3; t++) {
        int64_t n = 1001;
        Tensor *ac = tensor_empty(1, &n, dts[t]), *ad = tensor_empty_on(1, &n, dts[t], DEV);
        tensor_backend_cpu.arange(ac, -3.7, 0.1);
        be->arange(ad, -3.7, 0.1);
        expect_close("arange", "value", ad, ac);
        tensor_backend_cpu.fill(ac, -1.5);
        be->fill(ad, -1.5);
        expect_close("fill", "value", ad, ac);
    }
    /* item and get read single elements through to_host */
    Tensor *x = rn(TENSOR_F64, TENSOR_SHAPE(3, 4));
    CHECK(tensor_get(to_dev(x), (int64_t[]){2, 1}) == tensor_get(x, (int64_t[]){2, 1}));
}

/* ---- random: bit-identical to the CPU ---------------------------------------------------- */

TEST(cuda_random_bit_identical) {
    const TensorBackend *be = need_device();
    int64_t sizes[3] = {1, 1001, 70000};
    for (int t = 0; t < 2; t++)
        for (int normal = 0; normal < 2; normal++)
            for (int s = 0; s < 3; s++) {
                int64_t n = sizes[s];
                Tensor *c = tensor_empty(1, &n, FLOATS[t]), *d = tensor_empty_on(1, &n, FLOATS[t], DEV);
                tensor_backend_cpu.random(c, 0x1234567887654321ull, 7, 99 + (uint64_t)s, normal);
                be->random(d, 0x1234567887654321ull, 7, 99 + (uint64_t)s, normal);
                Tensor *h = tensor_to(d, TENSOR_CPU);
                size_t es = tensor_dtype_size(FLOATS[t]);
                int64_t differ = 0;
                for (int64_t i = 0; i < n; i++)
                    differ += memcmp((char *)tensor_data_ptr(h) + i * (int64_t)es, (char *)tensor_data_ptr(c) + i * (int64_t)es, es) != 0;
                if (normal && FLOATS[t] == TENSOR_F64) {
                    /* double log/cos/sin may differ from glibc's by an ulp: close, not identical */
                    if (differ) fprintf(stderr, "    note: %lld of %lld f64 normals differ in the last bits\n", (long long)differ, (long long)n);
                    expect_close("randn f64", "value", h, c);
                } else {
                    CHECK_MSG(differ == 0, "random %s %s n=%lld: %lld numbers differ from the CPU's",
                              tensor_dtype_name(FLOATS[t]), normal ? "normal" : "uniform", (long long)n, (long long)differ);
                }
            }
}

/* ---- binary and where -------------------------------------------------------------------- */

static Tensor *f_binary(Tensor *const *in, const void *ctx) {
    TensorOpId op = *(const TensorOpId *)ctx;
    Tensor *a = tensor_permute(in[0], TENSOR_DIMS(1, 2, 0)); /* (6,4,5) -> (4,5,6), strided */
    Tensor *b = in[1];                                         /* (5,1): broadcast */
    switch (op) {
    case TENSOR_OP_ADD: return tensor_add(a, b);
    case TENSOR_OP_SUB: return tensor_sub(b, a);
    case TENSOR_OP_MUL: return tensor_mul(a, b);
    case TENSOR_OP_DIV: return tensor_div(a, b);
    case TENSOR_OP_POW: return tensor_pow(a, b);
    case TENSOR_OP_MAXIMUM: return tensor_maximum(a, b);
    case TENSOR_OP_MINIMUM: return tensor_minimum(b, a);
    case TENSOR_OP_GELU_BACKWARD: return tensor_gelu_backward(b, a);
    case TENSOR_OP_EQ: return tensor_eq(a, tensor_contiguous(a));
    case TENSOR_OP_NE: return tensor_ne(a, b);
    case TENSOR_OP_LT: return tensor_lt(a, b);
    case TENSOR_OP_LE: return tensor_le(b, a);
    case TENSOR_OP_GT: return tensor_gt(a, b);
    case TENSOR_OP_GE: return tensor_ge(a, b);
    default: return NULL;
    }
}

static Tensor *f_scalars(Tensor *const *in, const void *ctx) {
    (void)ctx;
    Tensor *x = in[0];
    return tensor_add(tensor_pow_scalar(tensor_add_scalar(tensor_mul_scalar(x, 3), 1), 2), tensor_rsub_scalar(x, 2));
}

static Tensor *f_where(Tensor *const *in, const void *ctx) {
    (void)ctx;
    Tensor *a = tensor_permute(in[0], TENSOR_DIMS(1, 2, 0));
    Tensor *cond = tensor_gt(a, tensor_mul_scalar(in[1], 0.5));
    return tensor_where(cond, a, in[1]);
}

static Tensor *f_big_add(Tensor *const *in, const void *ctx) {
    (void)ctx;
    return tensor_add(in[0], tensor_reshape(in[1], TENSOR_SHAPE(1, 17)));
}

TEST(cuda_binary_where) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        for (TensorOpId op = TENSOR_OP_ADD; op <= TENSOR_OP_GE; op++) {
            Tensor *in[2] = {op == TENSOR_OP_POW ? pos(dt, TENSOR_SHAPE(6, 4, 5)) : rn(dt, TENSOR_SHAPE(6, 4, 5)),
                             rn(dt, TENSOR_SHAPE(5, 1))};
            char what[64];
            snprintf(what, sizeof what, "%s %s", tensor_op_table[op].name, tensor_dtype_name(dt));
            parity(what, f_binary, &op, 2, in, 3);
        }
        Tensor *x = rn(dt, TENSOR_SHAPE(3, 7));
        parity("scalar ops", f_scalars, NULL, 1, &x, 1);
        Tensor *w[2] = {rn(dt, TENSOR_SHAPE(6, 4, 5)), rn(dt, TENSOR_SHAPE(5, 1))};
        parity("where", f_where, NULL, 2, w, 3);
    }
    /* i64 equality */
    Tensor *ia = tensor_cast(tensor_mul_scalar(rn(TENSOR_F64, TENSOR_SHAPE(6, 4, 5)), 2), TENSOR_I64);
    Tensor *ib = tensor_cast(tensor_mul_scalar(rn(TENSOR_F64, TENSOR_SHAPE(5, 1)), 2), TENSOR_I64);
    Tensor *iin[2] = {ia, ib};
    TensorOpId eq = TENSOR_OP_EQ, ne = TENSOR_OP_NE;
    parity("eq i64", f_binary, &eq, 2, iin, 0);
    parity("ne i64", f_binary, &ne, 2, iin, 0);
    /* more elements than one grid covers (65535 blocks × 256 threads): the grid-stride loop */
    if (!test_quick()) {
        Tensor *big[2] = {rn(TENSOR_F32, TENSOR_SHAPE(1000003, 17)), rn(TENSOR_F32, TENSOR_SHAPE(17))};
        parity("big add", f_big_add, NULL, 2, big, 0);
    }
}

/* ---- unary ------------------------------------------------------------------------------- */

static Tensor *f_unary(Tensor *const *in, const void *ctx) {
    TensorOpId op = *(const TensorOpId *)ctx;
    Tensor *x = tensor_transpose(in[0], 0, 1); /* strided: the front-end makes it contiguous */
    switch (op) {
    case TENSOR_OP_NEG: return tensor_neg(x);
    case TENSOR_OP_ABS: return tensor_abs(x);
    case TENSOR_OP_SIGN: return tensor_sign(x);
    case TENSOR_OP_EXP: return tensor_exp(x);
    case TENSOR_OP_LOG: return tensor_log(x);
    case TENSOR_OP_SQRT: return tensor_sqrt(x);
    case TENSOR_OP_RSQRT: return tensor_rsqrt(x);
    case TENSOR_OP_SIN: return tensor_sin(x);
    case TENSOR_OP_COS: return tensor_cos(x);
    case TENSOR_OP_TANH: return tensor_tanh(x);
    case TENSOR_OP_SIGMOID: return tensor_sigmoid(x);
    case TENSOR_OP_RELU: return tensor_relu(x);
    case TENSOR_OP_ELU: return tensor_elu(x, 1.3);
    case TENSOR_OP_GELU: return tensor_gelu(x);
    case TENSOR_OP_GELU_TANH: return tensor_gelu_tanh(x);
    case TENSOR_OP_SOFTPLUS: return tensor_softplus(x, 2.0, 5.0);
    case TENSOR_OP_ERF: return tensor_erf(x);
    default: return NULL;
    }
}

TEST(cuda_unary) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        for (TensorOpId op = TENSOR_OP_NEG; op <= TENSOR_OP_ERF; op++) {
            bool positive = op == TENSOR_OP_LOG || op == TENSOR_OP_SQRT || op == TENSOR_OP_RSQRT;
            Tensor *x = positive ? pos(dt, TENSOR_SHAPE(33, 65)) : tensor_mul_scalar(rn(dt, TENSOR_SHAPE(33, 65)), 2);
            char what[64];
            snprintf(what, sizeof what, "%s %s", tensor_op_table[op].name, tensor_dtype_name(dt));
            parity(what, f_unary, &op, 1, &x, 1);
        }
    }
    TensorOpId iops[3] = {TENSOR_OP_NEG, TENSOR_OP_ABS, TENSOR_OP_SIGN};
    Tensor *xi = tensor_cast(tensor_mul_scalar(rn(TENSOR_F64, TENSOR_SHAPE(33, 65)), 5), TENSOR_I64);
    for (int k = 0; k < 3; k++) parity("unary i64", f_unary, &iops[k], 1, &xi, 0);
}

/* ---- reductions -------------------------------------------------------------------------- */

typedef struct {
    int kind; /* 0 sum 1 max 2 min 3 mean 4 var 5 norm2 6 norm1 7 norm3 8 norminf 9 argmax */
    int ndims;
    int dims[3];
    bool keepdim, permute;
} RedCase;

static Tensor *f_reduce(Tensor *const *in, const void *ctx) {
    const RedCase *c = ctx;
    Tensor *x = c->permute ? tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)) : in[0];
    switch (c->kind) {
    case 0: return tensor_sum(x, c->ndims, c->dims, c->keepdim);
    case 1: return tensor_max(x, c->ndims, c->dims, c->keepdim);
    case 2: return tensor_min(x, c->ndims, c->dims, c->keepdim);
    case 3: return tensor_mean(x, c->ndims, c->dims, c->keepdim);
    case 4: return tensor_var(x, c->ndims, c->dims, 1, c->keepdim);
    case 5: return tensor_norm(x, 2, c->ndims, c->dims, c->keepdim);
    case 6: return tensor_norm(x, 1, c->ndims, c->dims, c->keepdim);
    case 7: return tensor_norm(x, 3, c->ndims, c->dims, c->keepdim);
    case 8: return tensor_norm(x, INFINITY, c->ndims, c->dims, c->keepdim);
    default: return tensor_argmax(x, c->ndims ? c->dims[0] : TENSOR_ALL_DIMS, c->keepdim);
    }
}

TEST(cuda_reductions) {
    need_device();
    const int dimsets[6][4] = {{0}, {1, 2}, {1, 0}, {2, 0, 2}, {1, 1}, {3, 0, 1, 2}}; /* {ndims, dims...} */
    for (int t = 0; t < 2; t++) {
        Tensor *x = rn(FLOATS[t], TENSOR_SHAPE(6, 7, 50));
        for (int kind = 0; kind <= 9; kind++)
            for (int s = 0; s < 6; s++)
                for (int p = 0; p < 2; p++) {
                    RedCase c = {.kind = kind, .ndims = dimsets[s][0], .keepdim = s == 4, .permute = p};
                    for (int i = 0; i < c.ndims; i++) c.dims[i] = dimsets[s][1 + i];
                    if (kind == 9 && c.ndims > 1) continue; /* argmax takes one dim or all */
                    char what[64];
                    snprintf(what, sizeof what, "reduce kind %d dims #%d perm %d %s", kind, s, p, tensor_dtype_name(FLOATS[t]));
                    parity(what, f_reduce, &c, 1, &x, 1);
                }
        /* long rows (C == 1: a block per row) and long columns (C > 1: a thread per column) */
        Tensor *l = rn(FLOATS[t], TENSOR_SHAPE(3, 5000, 1));
        RedCase rows = {.kind = 0, .ndims = 1, .dims = {1}}, colmax = {.kind = 1, .ndims = 1, .dims = {0}};
        parity("sum long rows", f_reduce, &rows, 1, &l, 1);
        RedCase rowarg = {.kind = 9, .ndims = 1, .dims = {1}};
        parity("argmax long rows", f_reduce, &rowarg, 1, &l, 0);
        Tensor *l2 = rn(FLOATS[t], TENSOR_SHAPE(5000, 3, 2));
        parity("max long columns", f_reduce, &colmax, 1, &l2, 1);
        /* long enough for the split (chunked, two-pass) reductions, with NaNs that must win */
        Tensor *h = rn(FLOATS[t], TENSOR_SHAPE(2, 40000, 1)), *v = rn(FLOATS[t], TENSOR_SHAPE(30000, 4, 1));
        Tensor *hn = tensor_clone(h), *vn = tensor_clone(v);
        tensor_set(hn, (int64_t[]){1, 23456, 0}, NAN);
        tensor_set(hn, (int64_t[]){1, 30001, 0}, NAN);
        tensor_set(vn, (int64_t[]){17000, 2, 0}, NAN);
        for (int kind = 0; kind <= 9; kind++) {
            if (kind >= 3 && kind <= 8 && kind != 5) continue;
            RedCase r1 = {.kind = kind, .ndims = 1, .dims = {1}}, r0 = {.kind = kind, .ndims = 1, .dims = {0}};
            RedCase all = {.kind = kind, .ndims = 0};
            parity("split rows", f_reduce, &r1, 1, &h, 1);
            parity("split columns", f_reduce, &r0, 1, &v, 1);
            parity("split all", f_reduce, &all, 1, &v, 1);
            parity("split rows NaN", f_reduce, &r1, 1, &hn, 0);
            parity("split columns NaN", f_reduce, &r0, 1, &vn, 0);
        }
    }
}

/* ---- matmul ------------------------------------------------------------------------------ */

static Tensor *f_matmul(Tensor *const *in, const void *ctx) {
    int c = *(const int *)ctx;
    Tensor *a = in[0], *b = in[1];
    switch (c) {
    case 1: /* both operands transposed views (column-major for BLAS) */
        return tensor_matmul(tensor_transpose(a, 0, 1), tensor_transpose(b, 0, 1));
    case 3: /* (3,1,8,9) @ (1,4,9,7): broadcast batch dims, irregular batch offsets */
        return tensor_matmul(a, b);
    case 4: /* a's batch dim interleaved (permuted), b shared: strided-batched with b stride 0 */
        return tensor_matmul(tensor_permute(a, TENSOR_DIMS(1, 0, 2)), b);
    case 6: /* a with a column step: not BLAS-expressible, copied first */
        return tensor_matmul(tensor_slice(a, 1, 0, a->shape[1], 2), b);
    default: /* 0 plain, 2 folded batch, 5 vectors, 7 strided batched */
        return tensor_matmul(a, b);
    }
}

TEST(cuda_matmul) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        struct {
            int c;
            Tensor *a, *b;
        } cases[] = {
            {0, rn(dt, TENSOR_SHAPE(37, 53)), rn(dt, TENSOR_SHAPE(53, 29))},
            {1, rn(dt, TENSOR_SHAPE(53, 37)), rn(dt, TENSOR_SHAPE(29, 53))},
            {2, rn(dt, TENSOR_SHAPE(4, 37, 53)), rn(dt, TENSOR_SHAPE(53, 29))},
            {3, rn(dt, TENSOR_SHAPE(3, 1, 8, 9)), rn(dt, TENSOR_SHAPE(1, 4, 9, 7))},
            {4, rn(dt, TENSOR_SHAPE(8, 5, 9)), rn(dt, TENSOR_SHAPE(9, 7))},
            {5, rn(dt, TENSOR_SHAPE(53)), rn(dt, TENSOR_SHAPE(53, 29))},
            {5, rn(dt, TENSOR_SHAPE(37, 53)), rn(dt, TENSOR_SHAPE(53))},
            {6, rn(dt, TENSOR_SHAPE(37, 106)), rn(dt, TENSOR_SHAPE(53, 29))},
            {7, rn(dt, TENSOR_SHAPE(5, 8, 9)), rn(dt, TENSOR_SHAPE(5, 9, 7))},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            Tensor *in[2] = {cases[i].a, cases[i].b};
            char what[64];
            snprintf(what, sizeof what, "matmul case %d %s", cases[i].c, tensor_dtype_name(dt));
            parity(what, f_matmul, &cases[i].c, 2, in, 3);
        }
    }
}

/* ---- softmax, layer_norm ----------------------------------------------------------------- */

static Tensor *f_softmax(Tensor *const *in, const void *ctx) {
    int c = *(const int *)ctx;
    if (c == 0) return tensor_softmax(in[0], 1);       /* (7,300,5) over the middle dim */
    if (c == 1) return tensor_log_softmax(in[0], -1);  /* (37,1000) rows */
    return tensor_softmax(tensor_transpose(in[0], 0, 1), -1);
}

static Tensor *f_layer_norm(Tensor *const *in, const void *ctx) {
    int c = *(const int *)ctx;
    if (c == 0) return tensor_layer_norm(in[0], 1, in[1], in[2], 1e-5);
    if (c == 1) return tensor_layer_norm(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), 2, NULL, NULL, 1e-5);
    return tensor_layer_norm(in[0], 1, in[1], NULL, 1e-3);
}

/* layer_norm_backward on its own (its gradients: layer_norm's double backward, on the device) */
static Tensor *f_layer_norm_backward(Tensor *const *in, const void *ctx) {
    int c = *(const int *)ctx;
    if (c == 0) return tensor_layer_norm_backward(in[0], in[1], 1, in[2], 1e-5);
    return tensor_layer_norm_backward(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)),
                                      tensor_permute(in[1], TENSOR_DIMS(1, 0, 2)), 2, NULL, 1e-3);
}

TEST(cuda_softmax_layer_norm) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        int c0 = 0, c1 = 1, c2 = 2;
        Tensor *x0 = rn(dt, TENSOR_SHAPE(7, 300, 5)), *x1 = tensor_mul_scalar(rn(dt, TENSOR_SHAPE(37, 1000)), 4);
        Tensor *x2 = rn(dt, TENSOR_SHAPE(40, 3));
        parity("softmax middle dim", f_softmax, &c0, 1, &x0, 1);
        parity("log_softmax rows", f_softmax, &c1, 1, &x1, 1);
        parity("softmax transposed", f_softmax, &c2, 1, &x2, 1);
        Tensor *ln[3] = {tensor_add_scalar(rn(dt, TENSOR_SHAPE(4, 6, 300)), 3), rn(dt, TENSOR_SHAPE(300)),
                         rn(dt, TENSOR_SHAPE(300))};
        parity("layer_norm w b", f_layer_norm, &c0, 3, ln, 7);
        parity("layer_norm 2 dims permuted", f_layer_norm, &c1, 1, ln, 1);
        parity("layer_norm w", f_layer_norm, &c2, 2, ln, 3);
        Tensor *lnb[3] = {rn(dt, TENSOR_SHAPE(4, 6, 300)), ln[0], ln[1]};
        parity("layer_norm_backward w", f_layer_norm_backward, &c0, 3, lnb, 7);
        parity("layer_norm_backward 2 dims permuted", f_layer_norm_backward, &c1, 2, lnb, 3);
    }
}

/* ---- index_select, gather, scatter_add --------------------------------------------------- */

static Tensor *g_cpu_index; /* an index left on the CPU: the front-end moves it */

static Tensor *f_index(Tensor *const *in, const void *ctx) {
    int c = *(const int *)ctx;
    switch (c) {
    case 0: return tensor_index_select(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), 1, in[1]);
    case 1: return tensor_gather(in[0], 0, in[1]);
    case 2: return tensor_scatter_add(in[0], 1, in[1], in[2]);
    default: return tensor_index_select(in[0], 0, g_cpu_index);
    }
}

static Tensor *rand_index(int nd, const int64_t *shape, int64_t lim) {
    Tensor *u = tensor_rand(nd, shape, TENSOR_F64);
    return tensor_cast(tensor_mul_scalar(u, (double)lim - 1e-9), TENSOR_I64);
}

TEST(cuda_index_ops) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        int c0 = 0, c1 = 1, c2 = 2, c3 = 3;
        /* duplicates in every index: the backward's scatter_add accumulates */
        Tensor *sel[2] = {rn(dt, TENSOR_SHAPE(10, 6, 5)), rand_index(TENSOR_SHAPE(23), 10)};
        parity("index_select", f_index, &c0, 2, sel, 1);
        Tensor *ga[2] = {rn(dt, TENSOR_SHAPE(9, 8, 3)), rand_index(TENSOR_SHAPE(20, 8, 2), 9)};
        parity("gather", f_index, &c1, 2, ga, 1);
        Tensor *sc[3] = {rn(dt, TENSOR_SHAPE(4, 6, 5)), rand_index(TENSOR_SHAPE(3, 40, 5), 6), rn(dt, TENSOR_SHAPE(4, 41, 5))};
        parity("scatter_add", f_index, &c2, 3, sc, 5);
        g_cpu_index = rand_index(TENSOR_SHAPE(17), 10);
        Tensor *x = rn(dt, TENSOR_SHAPE(10, 7));
        parity("index_select (cpu index)", f_index, &c3, 1, &x, 1);
    }
}

/* ---- det3, inv3 -------------------------------------------------------------------------- */

static Tensor *f_small3(Tensor *const *in, const void *ctx) {
    int c = *(const int *)ctx;
    Tensor *x = tensor_transpose(in[0], -1, -2);
    return c ? tensor_inv3(x) : tensor_det3(x);
}

/* ---- the GRU's fused layer (nn/gru.c: gate kernels gru_step, gru_step_backward) --------------- */

/* in: x (B, T, I), h0 (1, B, H), W_ih, W_hh[, b_ih, b_hh]: one layer; out and h_n side by side */
static Tensor *f_gru(Tensor *const *in, const void *ctx) {
    int n = *(const int *)ctx;
    NnGru g = {.layers = 1, .in = in[0]->shape[2], .hidden = in[1]->shape[2]};
    g.layer[0] = (NnGruCell){.in = g.in, .hidden = g.hidden, .weight_ih = in[2], .weight_hh = in[3],
                             .bias_ih = n > 4 ? in[4] : NULL, .bias_hh = n > 4 ? in[5] : NULL};
    Tensor *hn;
    Tensor *out = nn_gru_forward(&g, in[0], in[1], &hn);
    return tensor_cat(2, (Tensor *[]){tensor_flatten(out, 0, -1), tensor_flatten(hn, 0, -1)}, 0);
}

TEST(cuda_gru_fused_layer) {
    const TensorBackend *be = need_device();
    CHECK_MSG(be->gru_step && be->gru_step_backward, "the %s backend lacks the GRU gate kernels", be->name);
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        int64_t B = 5, T = 6, I = 7, H = 33;
        Tensor *in[6] = {rn(dt, TENSOR_SHAPE(B, T, I)), tensor_mul_scalar(rn(dt, TENSOR_SHAPE(1, B, H)), 0.5),
                         tensor_mul_scalar(rn(dt, TENSOR_SHAPE(3 * H, I)), 0.4),
                         tensor_mul_scalar(rn(dt, TENSOR_SHAPE(3 * H, H)), 0.3), rn(dt, TENSOR_SHAPE(3 * H)),
                         rn(dt, TENSOR_SHAPE(3 * H))};
        int six = 6, four = 4;
        parity("gru layer, biases", f_gru, &six, 6, in, 63);
        parity("gru layer, no biases", f_gru, &four, 4, in, 15);
    }
}

TEST(cuda_det3_inv3) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = FLOATS[t];
        /* well conditioned: 3 I + noise */
        Tensor *x = tensor_add(rn(dt, TENSOR_SHAPE(2, 50, 3, 3)), tensor_mul_scalar(tensor_eye(3, dt), 3));
        int d = 0, i = 1;
        parity("det3", f_small3, &d, 1, &x, 1);
        parity("inv3", f_small3, &i, 1, &x, 1);
    }
}

/* ---- bf16: mixed-precision matmul, attention and a block ------------------------------------
 * bf16 operands (rounded on the CPU, copied bit for bit), f32 accumulation and f32 results:
 * cublasGemmEx (CUDA_R_16BF, CUBLAS_COMPUTE_32F) and the attention kernels' bf16 loads against
 * the CPU's f32 arithmetic on the same values. The f32 outputs then hold the same exact
 * bf16 × bf16 products on both sides and differ in summation order only: the f32 tolerance.
 * Gradients of bf16 leaves are bf16: TOL_BF16_PARITY. */

static Tensor *rn16(int nd, const int64_t *shape) { return tensor_cast(tensor_randn(nd, shape, TENSOR_F32), TENSOR_BF16); }

static Tensor *f_attention(Tensor *const *in, const void *ctx) {
    return nn_attention_tiled(in[0], in[1], in[2], *(const int *)ctx);
}

/* q, k, v narrow views of one fused (B, T, 3C) projection (forward only: a bf16 leaf feeding
 * three ops would need its gradients summed in bf16) */
static Tensor *f_attention_fused(Tensor *const *in, const void *ctx) {
    int64_t C = in[0]->shape[2] / 3;
    return nn_attention_tiled(tensor_narrow(in[0], 2, 0, C), tensor_narrow(in[0], 2, C, C),
                              tensor_narrow(in[0], 2, 2 * C, C), *(const int *)ctx);
}

TEST(cuda_bf16_matmul_attention) {
    need_device();
    struct {
        int c;
        Tensor *a, *b;
    } cases[] = {
        {0, rn16(TENSOR_SHAPE(37, 53)), rn16(TENSOR_SHAPE(53, 29))},
        {1, rn16(TENSOR_SHAPE(53, 37)), rn16(TENSOR_SHAPE(29, 53))},
        {2, rn16(TENSOR_SHAPE(4, 37, 53)), rn16(TENSOR_SHAPE(53, 29))},
        {3, rn16(TENSOR_SHAPE(3, 1, 8, 9)), rn16(TENSOR_SHAPE(1, 4, 9, 7))},
        {4, rn16(TENSOR_SHAPE(8, 5, 9)), rn16(TENSOR_SHAPE(9, 7))},
        {5, rn16(TENSOR_SHAPE(53)), rn16(TENSOR_SHAPE(53, 29))},
        {6, rn16(TENSOR_SHAPE(37, 106)), rn16(TENSOR_SHAPE(53, 29))},
        {7, rn16(TENSOR_SHAPE(5, 8, 9)), rn16(TENSOR_SHAPE(5, 9, 7))},
        {0, rn16(TENSOR_SHAPE(64, 1000)), rn16(TENSOR_SHAPE(1000, 96))},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Tensor *in[2] = {cases[i].a, cases[i].b};
        char what[64];
        snprintf(what, sizeof what, "bf16 matmul case %d (#%zu)", cases[i].c, i);
        parity(what, f_matmul, &cases[i].c, 2, in, 3);
    }
    static const struct {
        int64_t B, Tq, Tk, C;
        int heads;
    } att[] = {{2, 37, 53, 64, 2}, {1, 70, 70, 256, 4}, {2, 33, 129, 128, 1}, {1, 17, 300, 64, 8}};
    for (size_t i = 0; i < sizeof att / sizeof *att; i++) {
        Tensor *in[3] = {rn16(TENSOR_SHAPE(att[i].B, att[i].Tq, att[i].C)), rn16(TENSOR_SHAPE(att[i].B, att[i].Tk, att[i].C)),
                         rn16(TENSOR_SHAPE(att[i].B, att[i].Tk, att[i].C))};
        char what[96];
        snprintf(what, sizeof what, "bf16 attention B=%lld Tq=%lld Tk=%lld d=%lld", (long long)att[i].B,
                 (long long)att[i].Tq, (long long)att[i].Tk, (long long)(att[i].C / att[i].heads));
        parity(what, f_attention, &att[i].heads, 3, in, 7);
    }
    Tensor *qkv = rn16(TENSOR_SHAPE(2, 45, 3 * 96));
    int h3 = 3;
    parity("bf16 attention fused qkv d=32", f_attention_fused, &h3, 1, &qkv, 0);
}

/* The weights of a self block registered under "blk" in p, by name (for a mirrored copy). */
static NnSelfBlockWeights block_weights(const NnParams *p) {
    return (NnSelfBlockWeights){
        .ln1_w = nn_params_find(p, "blk.ln_1.weight"), .ln1_b = nn_params_find(p, "blk.ln_1.bias"),
        .qkv_w = nn_params_find(p, "blk.attn.c_qkv.weight"), .qkv_b = nn_params_find(p, "blk.attn.c_qkv.bias"),
        .proj_w = nn_params_find(p, "blk.attn.c_proj.weight"), .proj_b = nn_params_find(p, "blk.attn.c_proj.bias"),
        .ln2_w = nn_params_find(p, "blk.ln_2.weight"), .ln2_b = nn_params_find(p, "blk.ln_2.bias"),
        .fc_w = nn_params_find(p, "blk.mlp.c_fc.weight"), .fc_b = nn_params_find(p, "blk.mlp.c_fc.bias"),
        .fc2_w = nn_params_find(p, "blk.mlp.c_proj.weight"), .fc2_b = nn_params_find(p, "blk.mlp.c_proj.bias"),
    };
}

/* A pre-LN self block trained the mixed-precision way (f32 parameters and gradients, bf16
 * matmuls and attention) on both devices: the casts, cuBLAS's bf16 GEMMs and the bf16 attention
 * kernels inside a whole forward and backward. Rounding flips propagate through the block, so
 * everything is compared at TOL_BF16_PARITY. Both sides take the tiled attention (the CPU's AUTO
 * would go naive at this size, which rounds the probabilities and is another computation). */
TEST(cuda_bf16_self_block) {
    need_device();
    TensorScope *s = tensor_scope_begin();
    NnParams hp, dp;
    nn_params_init(&hp, s, TENSOR_F32, 11);
    NnSelfBlock m;
    nn_self_block_init(&m, &hp, "blk", 96, 3, 384, true);
    nn_params_pack(&hp);
    nn_params_mirror(&dp, &hp, DEV);
    NnSelfBlockWeights wc = nn_self_block_weights(&m), wd = block_weights(&dp);
    Tensor *x = tensor_randn(TENSOR_SHAPE(2, 50, 96), TENSOR_F32), *w = tensor_randn(TENSOR_SHAPE(2, 50, 96), TENSOR_F32);
    Tensor *xc = tensor_requires_grad(tensor_detach(x), true), *xd = tensor_requires_grad(to_dev(x), true);
    TensorDType prev = nn_set_matmul_dtype(TENSOR_BF16);
    NnAttentionMode mode = nn_attention_set_mode(NN_ATTENTION_TILED);
    Tensor *yc = nn_self_block(xc, &wc, 3), *yd = nn_self_block(xd, &wd, 3);
    expect_within("bf16 self block", "forward", yd, yc, TOL_BF16_PARITY);
    ag_backward(tensor_sum_all(tensor_mul(yc, w)), NULL, false);
    ag_backward(tensor_sum_all(tensor_mul(yd, to_dev(w))), NULL, false);
    nn_attention_set_mode(mode);
    nn_set_matmul_dtype(prev);
    CHECK(dp.flat_grad->dtype == TENSOR_F32 && tensor_device(dp.flat_grad) == DEV);
    expect_within("bf16 self block", "grad x", xd->grad, xc->grad, TOL_BF16_PARITY);
    for (int i = 0; i < hp.n; i++)
        expect_within("bf16 self block", hp.items[i].name, dp.items[i].value->grad, hp.items[i].value->grad,
                      TOL_BF16_PARITY);
    nn_params_free(&dp);
    nn_params_free(&hp);
    tensor_scope_end(s);
}

/* nn_params_move: the module built on the host trains on the device through the same Tensor
 * headers (the weights it holds now point into device buffers); values, forward and gradients
 * match a host twin built with the same seed. */
TEST(cuda_params_move) {
    need_device();
    TensorScope *s = tensor_scope_begin();
    NnParams hp, dp;
    nn_params_init(&hp, s, TENSOR_F64, 5);
    nn_params_init(&dp, s, TENSOR_F64, 5);
    NnLinear mh, md;
    nn_linear_init(&mh, &hp, "lin", 7, 4, true);
    nn_linear_init(&md, &dp, "lin", 7, 4, true);
    nn_params_pack(&hp);
    nn_params_pack(&dp);
    Tensor *w_before = md.weight;
    nn_params_move(&dp, DEV);
    CHECK(md.weight == w_before && tensor_device(md.weight) == DEV && tensor_device(md.bias) == DEV);
    CHECK(tensor_device(dp.flat) == DEV && tensor_device(dp.flat_grad) == DEV);
    CHECK(tensor_device(md.weight->grad) == DEV);
    expect_within("params move", "values", dp.flat, hp.flat, 0);
    Tensor *x = tensor_randn(TENSOR_SHAPE(3, 7), TENSOR_F64);
    Tensor *yh = nn_linear_forward(&mh, x), *yd = nn_linear_forward(&md, to_dev(x));
    expect_within("params move", "forward", yd, yh, 1e-20);
    nn_params_zero_grad(&hp);
    nn_params_zero_grad(&dp);
    ag_backward(tensor_sum_all(tensor_mul(yh, yh)), NULL, false);
    ag_backward(tensor_sum_all(tensor_mul(yd, yd)), NULL, false);
    expect_within("params move", "flat grad", dp.flat_grad, hp.flat_grad, 1e-20);
    expect_within("params move", "weight grad", md.weight->grad, mh.weight->grad, 1e-20);
    nn_params_free(&dp);
    nn_params_free(&hp);
    tensor_scope_end(s);
}

/* ---- the pool: scopes allocate and release over and over --------------------------------- */

/* Under the CUDA emulator, a block the pool hands out again reads as poison (all bits set: NaN)
 * until written, as fresh cudaMalloc memory does there: the emulator installs the re-poisoning
 * through tensor_cuda_set_recycle_hook. On a GPU the contents are unspecified: skipped. */
extern int cuemu_is_device(const void *p, size_t n) __attribute__((weak));
TEST(cuda_pool_recycled_blocks_read_as_poison) {
    need_device();
    if (DEV == TENSOR_CPU || !cuemu_is_device) return;
    TensorScope *sc = tensor_scope_begin();
    Tensor *a = to_dev(tensor_full(TENSOR_SHAPE(1000), 1.0, TENSOR_F32));
    (void)a;
    tensor_scope_end(sc);
    sc = tensor_scope_begin();
    Tensor *b = tensor_empty_on(1, (int64_t[]){1000}, TENSOR_F32, DEV); /* the same class: the block of a */
    Tensor *h = tensor_to(b, TENSOR_CPU);
    int nan = 0;
    for (int64_t i = 0; i < 1000; i++) nan += isnan(tensor_get(h, (int64_t[]){i}));
    CHECK_MSG(nan == 1000, "%d of 1000 recycled floats read as poison", nan);
    tensor_scope_end(sc);
}

TEST(cuda_pool_reuse) {
    need_device();
    Tensor *acc = to_dev(tensor_zeros(TENSOR_SHAPE(257), TENSOR_F32));
    int steps = test_quick() ? 20 : 300;
    for (int s = 0; s < steps; s++) {
        TensorScope *sc = tensor_scope_begin();
        Tensor *a = to_dev(tensor_full(TENSOR_SHAPE(257), 1.0, TENSOR_F32));
        Tensor *b = tensor_empty_on(1, (int64_t[]){1 + (s * 7919) % 100000}, TENSOR_F32, DEV); /* varied sizes */
        tensor_fill_(b, 2);
        Tensor *sum = tensor_add(acc, tensor_mul_scalar(a, tensor_item(tensor_sum_all(b)) > 0 ? 1 : 0));
        tensor_copy_(acc, sum);
        tensor_scope_end(sc);
    }
    Tensor *h = tensor_to(acc, TENSOR_CPU);
    CHECK(tensor_get(h, (int64_t[]){0}) == steps && tensor_get(h, (int64_t[]){256}) == steps);
}
