/* tests/test_gradcheck.c — an f64 central-difference gradcheck for every differentiable op,
 * driven by the op table: an op (primitive or composite) without a case here fails
 * `gradcheck_covers_every_op`. Inputs avoid kinks (relu, abs, max) and singular points. */
#include <string.h>

#include "autograd/gradcheck.h"
#include "nn/attention.h"
#include "tests/test.h"

typedef struct {
    const char *op;
    AgFn fn;
    int n;
    /* each input: shape, range [lo, hi], sign-split (|x| >= lo, random sign) when split */
    struct {
        int nd;
        int64_t shape[4];
        double lo, hi;
        bool split, const_input;
    } in[4];
    double atol; /* 0: default */
    double eps;  /* 0: default 1e-6 */
} GcCase;

#define X(i) (x[i])
#define FN(name) static Tensor *name(int n, Tensor *const *x, void *u)
#define UNUSED (void)n, (void)u

static Tensor *idx(int nd, const int64_t *shape, const int64_t *v) {
    int64_t cnt = 1;
    for (int i = 0; i < nd; i++) cnt *= shape[i];
    Tensor *t = tensor_empty(nd, shape, TENSOR_I64);
    memcpy(tensor_i64(t), v, sizeof(int64_t) * (size_t)cnt);
    return t;
}

FN(f_reshape) { UNUSED; return tensor_reshape(tensor_permute(X(0), TENSOR_DIMS(1, 0, 2)), TENSOR_SHAPE(4, -1)); }
FN(f_permute) { UNUSED; return tensor_permute(X(0), TENSOR_DIMS(2, 0, 1)); }
FN(f_expand) { UNUSED; return tensor_expand(X(0), TENSOR_SHAPE(2, 3, 4)); }
FN(f_slice) { UNUSED; return tensor_slice(X(0), 0, 1, 5, 2); }
FN(f_slice_scatter) { UNUSED; return tensor_slice_scatter(X(0), TENSOR_SHAPE(5, 4), 0, 1, 5, 2); }
FN(f_contiguous) { UNUSED; return tensor_contiguous(tensor_transpose(X(0), 0, 1)); }
FN(f_cast) { UNUSED; return tensor_cast(tensor_mul(tensor_cast(X(0), TENSOR_F32), tensor_scalar(2, TENSOR_F32)), TENSOR_F64); }
FN(f_view) { UNUSED; return tensor_view(X(0), TENSOR_SHAPE(3, 8)); }
FN(f_transpose) { UNUSED; return tensor_transpose(X(0), 0, 2); }
FN(f_narrow) { UNUSED; return tensor_narrow(X(0), 1, 1, 2); }
FN(f_squeeze) { UNUSED; return tensor_squeeze(X(0), 1); }
FN(f_unsqueeze) { UNUSED; return tensor_unsqueeze(X(0), -1); }
FN(f_flatten) { UNUSED; return tensor_flatten(X(0), 0, 1); }
FN(f_add) { UNUSED; return tensor_add(X(0), X(1)); }
FN(f_sub) { UNUSED; return tensor_sub(X(0), X(1)); }
FN(f_mul) { UNUSED; return tensor_mul(X(0), X(1)); }
FN(f_div) { UNUSED; return tensor_div(X(0), X(1)); }
FN(f_pow) { UNUSED; return tensor_pow(X(0), X(1)); }
FN(f_maximum) { UNUSED; return tensor_maximum(X(0), X(1)); }
FN(f_minimum) { UNUSED; return tensor_minimum(X(0), X(1)); }
FN(f_gelu_backward) { UNUSED; return tensor_gelu_backward(X(0), X(1)); }
FN(f_where) {
    UNUSED;
    Tensor *c = tensor_gt(tensor_detach(X(0)), tensor_scalar(0, TENSOR_F64));
    return tensor_where(c, X(1), X(2));
}
FN(f_neg) { UNUSED; return tensor_neg(X(0)); }
FN(f_abs) { UNUSED; return tensor_abs(X(0)); }
FN(f_exp) { UNUSED; return tensor_exp(X(0)); }
FN(f_log) { UNUSED; return tensor_log(X(0)); }
FN(f_sqrt) { UNUSED; return tensor_sqrt(X(0)); }
FN(f_rsqrt) { UNUSED; return tensor_rsqrt(X(0)); }
FN(f_sin) { UNUSED; return tensor_sin(X(0)); }
FN(f_cos) { UNUSED; return tensor_cos(X(0)); }
FN(f_tanh) { UNUSED; return tensor_tanh(X(0)); }
FN(f_sigmoid) { UNUSED; return tensor_sigmoid(X(0)); }
FN(f_relu) { UNUSED; return tensor_relu(X(0)); }
FN(f_elu) { UNUSED; return tensor_elu(X(0), 1.3); }
FN(f_gelu) { UNUSED; return tensor_gelu(X(0)); }
FN(f_gelu_tanh) { UNUSED; return tensor_gelu_tanh(X(0)); }
FN(f_softplus) { UNUSED; return tensor_softplus(X(0), 2.0, 3.0); }
FN(f_erf) { UNUSED; return tensor_erf(X(0)); }
FN(f_sum) { UNUSED; return tensor_sum(X(0), TENSOR_DIMS(0, 2), false); }
FN(f_max) { UNUSED; return tensor_max(X(0), TENSOR_DIMS(1), true); }
FN(f_min) { UNUSED; return tensor_min(X(0), TENSOR_DIMS(0, 2), false); }
FN(f_mean) { UNUSED; return tensor_mean(X(0), TENSOR_DIMS(-1), false); }
FN(f_var) { UNUSED; return tensor_var(X(0), TENSOR_DIMS(0, 2), 1, true); }
FN(f_norm) { UNUSED; return tensor_add(tensor_norm(X(0), 2, TENSOR_DIMS(1), true), tensor_norm(X(0), 3, TENSOR_DIMS(0), false)); }
/* one row of a (2,3,4) input as a 1-D vector (a strided view) */
static Tensor *row_vector(Tensor *x) { return tensor_reshape(tensor_narrow(tensor_narrow(x, 0, 1, 1), 1, 2, 1), TENSOR_SHAPE(4)); }

FN(f_matmul) {
    UNUSED;
    Tensor *batched = tensor_matmul(X(0), X(1));                     /* (2,3,4) @ (4,5) */
    Tensor *vec = tensor_matmul(row_vector(X(0)), X(1));      /* (4) @ (4,5) */
    return tensor_add(tensor_sum(batched, TENSOR_DIMS(0, 1), false), vec);
}
FN(f_det3) { UNUSED; return tensor_det3(X(0)); }
FN(f_inv3) { UNUSED; return tensor_inv3(X(0)); }
FN(f_softmax) { UNUSED; return tensor_softmax(X(0), 1); }
FN(f_log_softmax) { UNUSED; return tensor_log_softmax(X(0), -1); }
FN(f_layer_norm) { UNUSED; return tensor_layer_norm(X(0), 2, X(1), X(2), 1e-5); }
FN(f_layer_norm_backward) { UNUSED; return tensor_layer_norm_backward(X(0), X(1), 2, X(2), 1e-5); }
FN(f_layer_norm_backward_plain) {
    UNUSED;
    return tensor_layer_norm_backward(X(0), tensor_transpose(X(1), 0, 1), 1, NULL, 1e-3);
}
FN(f_cat) {
    UNUSED;
    Tensor *xs[2] = {X(0), X(1)};
    return tensor_cat(2, xs, 1);
}
FN(f_stack) {
    UNUSED;
    Tensor *xs[2] = {X(0), X(1)};
    return tensor_stack(2, xs, 1);
}
FN(f_split) {
    UNUSED;
    Tensor *c[4];
    int k = tensor_split(X(0), 2, 1, c, 4);
    CHECK(k == 3);
    Tensor *parts[3] = {tensor_mul_scalar(c[0], 2), tensor_mul_scalar(c[1], -1), tensor_exp(c[2])};
    return tensor_cat(3, parts, 1);
}
FN(f_index_select) {
    UNUSED;
    return tensor_index_select(X(0), 1, idx(TENSOR_SHAPE(5), (const int64_t[]){3, 0, 3, 1, 2}));
}
FN(f_gather) {
    UNUSED;
    return tensor_gather(X(0), 1, idx(TENSOR_SHAPE(2, 3), (const int64_t[]){0, 3, 3, 1, 2, 0}));
}
FN(f_scatter_add) {
    UNUSED;
    return tensor_scatter_add(X(0), 0, idx(TENSOR_SHAPE(2, 3), (const int64_t[]){2, 0, 2, 1, 2, 0}), X(1));
}

/* the fused attention (a custom-op node with a hand-written backward) with tiny tiles, so the
 * online softmax crosses query and key tile edges (Tq 5 over tiles of 2, Tk 7 over tiles of 3);
 * q a strided view (every other row of a (2, 10, 8) input) read in place */
FN(f_attention) {
    UNUSED;
    nn_attention_set_tiles(2, 3);
    Tensor *y = nn_attention_tiled(tensor_slice(X(0), 1, 0, 10, 2), X(1), X(2), 2);
    nn_attention_set_tiles(0, 0);
    return y;
}

#define S1(a) 1, {a}
#define S2(a, b) 2, {a, b}
#define S3(a, b, c) 3, {a, b, c}

static const GcCase cases[] = {
    {"reshape", f_reshape, 1, {{S3(2, 4, 3), -1, 1}}},
    {"permute", f_permute, 1, {{S3(2, 3, 4), -1, 1}}},
    {"expand", f_expand, 1, {{S2(3, 1), -1, 1}}},
    {"slice", f_slice, 1, {{S2(5, 4), -1, 1}}},
    {"slice_scatter", f_slice_scatter, 1, {{S2(2, 4), -1, 1}}},
    {"contiguous", f_contiguous, 1, {{S2(3, 4), -1, 1}}},
    {"cast", f_cast, 1, {{S2(3, 4), -1, 1}}, 1e-5, 1e-2}, /* f32 rounding: a wide step (the map is linear) */
    {"view", f_view, 1, {{S3(2, 3, 4), -1, 1}}},
    {"transpose", f_transpose, 1, {{S3(2, 3, 4), -1, 1}}},
    {"narrow", f_narrow, 1, {{S2(3, 4), -1, 1}}},
    {"squeeze", f_squeeze, 1, {{S3(3, 1, 2), -1, 1}}},
    {"unsqueeze", f_unsqueeze, 1, {{S2(3, 2), -1, 1}}},
    {"flatten", f_flatten, 1, {{S3(2, 3, 2), -1, 1}}},
    {"add", f_add, 2, {{S2(2, 3), -1, 1}, {S1(3), -1, 1}}},
    {"sub", f_sub, 2, {{S2(2, 1), -1, 1}, {S2(2, 3), -1, 1}}},
    {"mul", f_mul, 2, {{S2(2, 3), -1, 1}, {S2(1, 3), -1, 1}}},
    {"div", f_div, 2, {{S2(2, 3), -1, 1}, {S1(3), 0.5, 2, true}}},
    {"pow", f_pow, 2, {{S2(2, 3), 0.5, 2}, {S1(3), -1.5, 2}}},
    {"maximum", f_maximum, 2, {{S2(2, 3), -1, 1}, {S2(2, 3), -1, 1}}},
    {"minimum", f_minimum, 2, {{S2(2, 3), -1, 1}, {S1(3), -1, 1}}},
    {"gelu_backward", f_gelu_backward, 2, {{S2(3, 1), -1, 1}, {S2(1, 4), -3, 3}}}, /* both broadcast */
    {"where", f_where, 3, {{S2(2, 3), -1, 1, false, true}, {S2(2, 3), -1, 1}, {S1(3), -1, 1}}},
    {"neg", f_neg, 1, {{S2(2, 3), -1, 1}}},
    {"abs", f_abs, 1, {{S2(2, 3), 0.1, 1, true}}},
    {"exp", f_exp, 1, {{S2(2, 3), -2, 2}}},
    {"log", f_log, 1, {{S2(2, 3), 0.2, 3}}},
    {"sqrt", f_sqrt, 1, {{S2(2, 3), 0.2, 3}}},
    {"rsqrt", f_rsqrt, 1, {{S2(2, 3), 0.2, 3}}},
    {"sin", f_sin, 1, {{S2(2, 3), -3, 3}}},
    {"cos", f_cos, 1, {{S2(2, 3), -3, 3}}},
    {"tanh", f_tanh, 1, {{S2(2, 3), -2, 2}}},
    {"sigmoid", f_sigmoid, 1, {{S2(2, 3), -3, 3}}},
    {"relu", f_relu, 1, {{S2(2, 3), 0.1, 1, true}}},
    {"elu", f_elu, 1, {{S2(2, 3), 0.1, 2, true}}},
    {"gelu", f_gelu, 1, {{S2(3, 4), -3, 3}}},
    {"gelu_tanh", f_gelu_tanh, 1, {{S2(3, 4), -3, 3}}},
    {"softplus", f_softplus, 1, {{S2(3, 4), -3, 3}}},
    {"erf", f_erf, 1, {{S2(3, 4), -2, 2}}},
    {"sum", f_sum, 1, {{S3(2, 3, 4), -1, 1}}},
    {"max", f_max, 1, {{S3(2, 3, 4), -1, 1}}},
    {"min", f_min, 1, {{S3(2, 3, 4), -1, 1}}},
    {"mean", f_mean, 1, {{S3(2, 3, 4), -1, 1}}},
    {"var", f_var, 1, {{S3(2, 3, 4), -1, 1}}},
    {"norm", f_norm, 1, {{S2(3, 4), 0.2, 1, true}}},
    {"matmul", f_matmul, 2, {{S3(2, 3, 4), -1, 1}, {S2(4, 5), -1, 1}}},
    {"det3", f_det3, 1, {{S3(4, 3, 3), -1, 1}}},
    {"inv3", f_inv3, 1, {{S3(4, 3, 3), -1, 1}}},
    {"softmax", f_softmax, 1, {{S3(2, 4, 3), -2, 2}}},
    {"log_softmax", f_log_softmax, 1, {{S2(3, 5), -2, 2}}},
    {"layer_norm", f_layer_norm, 3, {{S3(2, 3, 4), -2, 2}, {S2(3, 4), 0.5, 1.5}, {S2(3, 4), -1, 1}}},
    /* g, x, w: layer_norm's second derivatives; then without w, x transposed */
    {"layer_norm_backward", f_layer_norm_backward, 3,
     {{S3(2, 3, 4), -1, 1}, {S3(2, 3, 4), -2, 2}, {S2(3, 4), 0.5, 1.5}}},
    {"layer_norm_backward", f_layer_norm_backward_plain, 2, {{S2(3, 5), -1, 1}, {S2(5, 3), -2, 2}}},
    {"cat", f_cat, 2, {{S2(2, 3), -1, 1}, {S2(2, 2), -1, 1}}},
    {"stack", f_stack, 2, {{S2(2, 3), -1, 1}, {S2(2, 3), -1, 1}}},
    {"split", f_split, 1, {{S2(2, 5), -1, 1}}},
    {"index_select", f_index_select, 1, {{S3(2, 4, 3), -1, 1}}},
    {"gather", f_gather, 1, {{S2(2, 4), -1, 1}}},
    {"scatter_add", f_scatter_add, 2, {{S2(3, 4), -1, 1}, {S2(2, 3), -1, 1}}},
    {"attention", f_attention, 3, {{S3(2, 10, 8), -1.5, 1.5}, {S3(2, 7, 8), -1.5, 1.5}, {S3(2, 7, 8), -1, 1}}},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

static Tensor *make_input(int k, const GcCase *c, int i) {
    TensorRng g = {.seed = 99, .stream = (uint64_t)(k * 8 + i)};
    const int64_t *sh = c->in[i].shape;
    int nd = c->in[i].nd;
    Tensor *u = tensor_rand_with(&g, nd, sh, TENSOR_F64);
    Tensor *v = tensor_add_scalar(tensor_mul_scalar(u, c->in[i].hi - c->in[i].lo), c->in[i].lo);
    if (c->in[i].split) { /* random sign, magnitude kept in [lo, hi] */
        Tensor *s = tensor_rand_with(&g, nd, sh, TENSOR_F64);
        v = tensor_mul(v, tensor_sub(tensor_mul_scalar(tensor_gt(s, tensor_scalar(0.5, TENSOR_F64)), 2), tensor_scalar(1, TENSOR_F64)));
    }
    if (!strcmp(c->op, "det3") || !strcmp(c->op, "inv3")) /* well conditioned: I + 0.3 U */
        v = tensor_add(tensor_mul_scalar(v, 0.3), tensor_eye(3, TENSOR_F64));
    Tensor *leaf = tensor_contiguous(v);
    leaf = tensor_detach(tensor_clone(leaf));
    tensor_requires_grad(leaf, !c->in[i].const_input);
    return leaf;
}

static void run_case(int k) {
    const GcCase *c = &cases[k];
    Tensor *in[4] = {0};
    for (int i = 0; i < c->n; i++) in[i] = make_input(k, c, i);
    AgGradcheckReport r;
    double atol = c->atol > 0 ? c->atol : 1e-6;
    bool ok = ag_gradcheck(c->fn, c->n, in, NULL, c->eps > 0 ? c->eps : 1e-6, atol, 1e-5, &r);
    CHECK_MSG(ok, "gradcheck %s: input %d element %lld analytic %.10g numeric %.10g", c->op, r.bad_input,
              (long long)r.bad_index, r.analytic, r.numeric);
}

TEST(gradcheck_every_op) {
    for (int k = 0; k < NCASES; k++) {
        TensorScope *s = tensor_scope_begin();
        run_case(k);
        tensor_scope_end(s);
    }
}

TEST(gradcheck_covers_every_op) {
    for (int i = 0; i < TENSOR_OP_COUNT; i++) {
        const TensorOpInfo *op = &tensor_op_table[i];
        if (op->kind == TENSOR_OPK_NONDIFF || op->id == TENSOR_OP_CUSTOM) continue;
        bool found = false;
        for (int k = 0; k < NCASES; k++) found |= !strcmp(cases[k].op, op->name);
        CHECK_MSG(found, "op '%s' has no gradcheck case in tests/test_gradcheck.c", op->name);
        if (op->kind == TENSOR_OPK_PRIMITIVE)
            CHECK_MSG(ag_backward_fn(op->id) != NULL, "primitive op '%s' has no backward in autograd/derivatives.c", op->name);
    }
}
