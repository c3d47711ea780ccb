/* tests/test_autograd.c — second derivatives, gradient accumulation, retain_graph, no-grad,
 * and a user-registered custom op (this file is outside the library folders on purpose). */
#include <math.h>
#include <string.h>

#include "autograd/custom.h"
#include "autograd/gradcheck.h"
#include "tests/test.h"

static Tensor *leaf64(int nd, const int64_t *shape, uint64_t stream) {
    TensorRng g = {.seed = 5, .stream = stream};
    Tensor *t = tensor_add_scalar(tensor_mul_scalar(tensor_rand_with(&g, nd, shape, TENSOR_F64), 2), -1);
    return tensor_requires_grad(t, true);
}

/* L(x, W) = sum(tanh(x W) * x W'), with W' a fixed matrix: goes through tanh, mul, matmul.
 * H(x, W) = <dL/dx, v> + <dL/dW, u> uses the first derivative built with create_graph;
 * gradchecking H checks second derivatives against finite differences of the first. */
typedef struct {
    Tensor *w2, *v, *u;
} SecondCtx;

static Tensor *loss_L(Tensor *x, Tensor *w, Tensor *w2) {
    return tensor_sum_all(tensor_mul(tensor_tanh(tensor_matmul(x, w)), tensor_matmul(x, w2)));
}

static Tensor *fn_H(int n, Tensor *const *in, void *user) {
    (void)n;
    SecondCtx *c = user;
    Tensor *L = loss_L(in[0], in[1], c->w2);
    Tensor *g[2];
    ag_grad(1, &L, NULL, 2, in, g, true);
    return tensor_add(tensor_sum_all(tensor_mul(g[0], c->v)), tensor_sum_all(tensor_mul(g[1], c->u)));
}

TEST(second_derivative_tanh_mul_matmul) {
    Tensor *x = leaf64(TENSOR_SHAPE(3, 4), 1), *w = leaf64(TENSOR_SHAPE(4, 5), 2);
    SecondCtx c = {tensor_detach(leaf64(TENSOR_SHAPE(4, 5), 3)), tensor_detach(leaf64(TENSOR_SHAPE(3, 4), 4)),
                   tensor_detach(leaf64(TENSOR_SHAPE(4, 5), 5))};
    Tensor *in[2] = {x, w};
    AgGradcheckReport r;
    bool ok = ag_gradcheck(fn_H, 2, in, &c, 1e-6, 1e-6, 1e-5, &r);
    CHECK_MSG(ok, "second derivative: input %d elem %lld analytic %.10g numeric %.10g", r.bad_input,
              (long long)r.bad_index, r.analytic, r.numeric);
    /* and the Hessian-vector product is not trivially zero */
    CHECK(r.max_ref > 1e-3);
}

/* gelu's backward is the fused gelu_backward op: its create_graph gradient must differentiate
 * again (H(x) = <d sum(gelu(x) w) / dx, v>, gradchecked against finite differences) */
static Tensor *fn_gelu_hv(int n, Tensor *const *in, void *user) {
    (void)n;
    SecondCtx *c = user;
    Tensor *L = tensor_sum_all(tensor_mul(tensor_gelu(in[0]), c->w2)), *g;
    ag_grad(1, &L, NULL, 1, in, &g, true);
    return tensor_sum_all(tensor_mul(g, c->v));
}

TEST(second_derivative_gelu) {
    Tensor *x = tensor_mul_scalar(tensor_detach(leaf64(TENSOR_SHAPE(3, 4), 6)), 3); /* [-3, 3] */
    tensor_requires_grad(x, true);
    SecondCtx c = {tensor_detach(leaf64(TENSOR_SHAPE(3, 4), 7)), tensor_detach(leaf64(TENSOR_SHAPE(3, 4), 8)), NULL};
    AgGradcheckReport r;
    bool ok = ag_gradcheck(fn_gelu_hv, 1, &x, &c, 1e-6, 1e-6, 1e-5, &r);
    CHECK_MSG(ok, "gelu second derivative: elem %lld analytic %.10g numeric %.10g", (long long)r.bad_index,
              r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-3);
}

/* layer_norm's input gradient is the fused layer_norm_backward op: its create_graph gradients
 * (with respect to x, w and b) must differentiate again, and its own backward too (the
 * gradcheck of the op covers second derivatives; this one reaches third through H) */
static Tensor *fn_layer_norm_hv(int n, Tensor *const *in, void *user) {
    (void)n;
    SecondCtx *c = user;
    Tensor *y = tensor_layer_norm(in[0], 1, in[1], in[2], 1e-5);
    Tensor *L = tensor_sum_all(tensor_mul(tensor_mul(y, y), c->w2)), *g[3];
    ag_grad(1, &L, NULL, 3, in, g, true);
    Tensor *H = tensor_add(tensor_sum_all(tensor_mul(g[0], c->v)), tensor_sum_all(tensor_mul(g[1], c->u)));
    return tensor_add(H, tensor_sum_all(tensor_mul(g[2], c->u)));
}

TEST(second_derivative_layer_norm) {
    Tensor *x = tensor_mul_scalar(tensor_detach(leaf64(TENSOR_SHAPE(3, 5), 9)), 2);
    Tensor *w = tensor_add_scalar(tensor_detach(leaf64(TENSOR_SHAPE(5), 10)), 1.5);
    Tensor *b = leaf64(TENSOR_SHAPE(5), 11);
    tensor_requires_grad(x, true);
    tensor_requires_grad(w, true);
    SecondCtx c = {tensor_detach(leaf64(TENSOR_SHAPE(3, 5), 12)), tensor_detach(leaf64(TENSOR_SHAPE(3, 5), 13)),
                   tensor_detach(leaf64(TENSOR_SHAPE(5), 14))};
    Tensor *in[3] = {x, w, b};
    AgGradcheckReport r;
    bool ok = ag_gradcheck(fn_layer_norm_hv, 3, in, &c, 1e-6, 1e-6, 1e-5, &r);
    CHECK_MSG(ok, "layer_norm second derivative: input %d elem %lld analytic %.10g numeric %.10g", r.bad_input,
              (long long)r.bad_index, r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-3);
}

TEST(backward_accumulates_and_zero_grad) {
    Tensor *x = leaf64(TENSOR_SHAPE(3), 1);
    for (int k = 0; k < 2; k++) ag_backward(tensor_sum_all(tensor_mul(x, x)), NULL, false);
    Tensor *expect = tensor_mul_scalar(tensor_detach(x), 4); /* twice 2x */
    CHECK(test_rel_err(x->grad, expect) < 1e-15);
    ag_zero_grad(1, &x);
    CHECK(tensor_item(tensor_sum_all(tensor_abs(x->grad))) == 0);
}

TEST(backward_twice_needs_retain_graph) {
    Tensor *x = leaf64(TENSOR_SHAPE(3), 1);
    Tensor *y = tensor_sum_all(tensor_exp(x));
    ag_backward(y, NULL, true);
    ag_backward(y, NULL, false); /* retained, so this works */
    CHECK(test_rel_err(x->grad, tensor_mul_scalar(tensor_exp(tensor_detach(x)), 2)) < 1e-15);
}

static void backward_released(void *arg) {
    (void)arg;
    Tensor *x = leaf64(TENSOR_SHAPE(3), 1);
    Tensor *y = tensor_sum_all(tensor_exp(x));
    ag_backward(y, NULL, false);
    ag_backward(y, NULL, false);
}

TEST(backward_through_released_graph_aborts) {
    char buf[1024];
    int st = test_run_child(backward_released, NULL, buf, sizeof buf);
    CHECK(st != 0);
    CHECK_MSG(strstr(buf, "already freed by an earlier backward"), "message was: %s", buf);
}

TEST(no_grad_records_nothing) {
    Tensor *x = leaf64(TENSOR_SHAPE(3), 1);
    bool prev = ag_no_grad_begin();
    Tensor *y = tensor_mul(x, x);
    ag_no_grad_end(prev);
    CHECK(!y->requires_grad && y->node == NULL);
    Tensor *z = tensor_mul(x, x);
    CHECK(z->requires_grad && z->node != NULL);
}

TEST(grad_of_intermediate) {
    Tensor *x = leaf64(TENSOR_SHAPE(4), 1);
    Tensor *h = tensor_mul_scalar(x, 3);
    Tensor *y = tensor_sum_all(tensor_mul(h, h));
    Tensor *g;
    ag_grad(1, &y, NULL, 1, &h, &g, false);
    CHECK(test_rel_err(g, tensor_mul_scalar(tensor_detach(h), 2)) < 1e-15);
}

/* ---- a custom op registered from outside the library: y = x³ with a hand-written backward */

static Tensor *cube_forward(void *ctx, int n, Tensor *const *in) {
    (void)n;
    *(double *)ctx = 3.0; /* saved for backward */
    return tensor_mul(in[0], tensor_mul(in[0], in[0]));
}

static void cube_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)n, (void)out;
    double k = *(double *)ctx;
    if (need[0]) gin[0] = tensor_mul(g, tensor_mul_scalar(tensor_mul(in[0], in[0]), k));
}

static const AgCustomOp cube_op = {"cube", cube_forward, cube_backward};

static void wrong_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)ctx, (void)n, (void)out;
    if (need[0]) gin[0] = tensor_mul(g, tensor_mul_scalar(in[0], 2.0)); /* d/dx x² — wrong for x³ */
}
static const AgCustomOp wrong_op = {"cube_wrong", cube_forward, wrong_backward};

static Tensor *apply_cube(int n, Tensor *const *in, void *user) {
    return ag_custom_apply(user, n, in, NULL, sizeof(double));
}

TEST(custom_op_gradcheck) {
    Tensor *x = leaf64(TENSOR_SHAPE(2, 3), 7);
    AgGradcheckReport r;
    CHECK(ag_gradcheck(apply_cube, 1, &x, (void *)&cube_op, 1e-6, 1e-6, 1e-5, &r));
    /* the checker does catch a wrong backward */
    CHECK(!ag_gradcheck(apply_cube, 1, &x, (void *)&wrong_op, 1e-6, 1e-6, 1e-5, &r));
    /* and the custom op composes with built-in ops on the tape, second order included */
    Tensor *y = tensor_sum_all(tensor_sin(ag_custom_apply(&cube_op, 1, &x, NULL, sizeof(double))));
    Tensor *g;
    ag_grad(1, &y, NULL, 1, &x, &g, true);
    Tensor *xd = tensor_detach(x);
    Tensor *expect = tensor_mul(tensor_cos(tensor_mul(xd, tensor_mul(xd, xd))), tensor_mul_scalar(tensor_mul(xd, xd), 3));
    CHECK(test_rel_err(g, expect) < 1e-14);
    CHECK(g->requires_grad);
}

/* ---- the leaf-ready hook: each leaf once, when its gradient is final ---------------------- */

typedef struct {
    Tensor *leaf[6], *snap[6];
    int count[6], when[6], n, seq, unknown;
} HookLog;

static void log_leaf(Tensor *leaf, void *user) {
    HookLog *h = user;
    for (int i = 0; i < h->n; i++)
        if (h->leaf[i] == leaf) {
            h->count[i]++;
            h->when[i] = h->seq++;
            h->snap[i] = leaf->grad ? tensor_clone(leaf->grad) : NULL; /* what a reducer would send */
            return;
        }
    h->unknown++;
}

static bool same_bits(Tensor *x, Tensor *y) {
    return x && y && tensor_item(tensor_max(tensor_abs(tensor_sub(x, y)), 0, NULL, false)) == 0;
}

TEST(leaf_ready_hook_reports_each_leaf_once_when_final) {
    Tensor *a = leaf64(TENSOR_SHAPE(4), 1), *b = leaf64(TENSOR_SHAPE(4), 2), *e = leaf64(TENSOR_SHAPE(4), 3);
    Tensor *d = leaf64(TENSOR_SHAPE(4), 4);                 /* requires grad, unreachable */
    Tensor *c = tensor_detach(leaf64(TENSOR_SHAPE(4), 5)); /* no grad */
    /* a is used twice: first in the forward's first op (so last in backward), again later */
    Tensor *h = tensor_tanh(tensor_mul(a, b));
    Tensor *u = tensor_mul(tensor_add(h, c), a);
    Tensor *y = tensor_sum_all(tensor_mul(u, e)); /* e: used last, final first */
    HookLog log = {.leaf = {a, b, e, d, c}, .n = 5};
    AgLeafHook prev = ag_leaf_hook_set((AgLeafHook){log_leaf, &log});
    CHECK(prev.fn == NULL);
    ag_backward(y, NULL, false);
    AgLeafHook mine = ag_leaf_hook_set(prev);
    CHECK(mine.fn == log_leaf && mine.user == &log);
    CHECK(log.count[0] == 1 && log.count[1] == 1 && log.count[2] == 1);
    CHECK(log.count[3] == 0 && log.count[4] == 0 && log.unknown == 0);
    /* reported during backward, in the order gradients became final */
    CHECK(log.when[2] < log.when[0] && log.when[2] < log.when[1]);
    /* at report time .grad already held its final value: both of a's contributions included */
    CHECK(same_bits(log.snap[0], a->grad) && same_bits(log.snap[1], b->grad) && same_bits(log.snap[2], e->grad));
    Tensor *ad = tensor_detach(a), *bd = tensor_detach(b), *ed = tensor_detach(e), *hd = tensor_detach(h);
    Tensor *da = tensor_add(tensor_mul(ed, tensor_add(hd, c)),
                            tensor_mul(tensor_mul(ed, ad), tensor_mul(bd, tensor_add_scalar(tensor_neg(tensor_mul(hd, hd)), 1))));
    CHECK(test_rel_err(a->grad, da) < 1e-14);

    /* a root that is itself a leaf is reported once; ag_grad (no .grad) reports nothing */
    Tensor *s = leaf64(TENSOR_SHAPE(1), 6);
    HookLog log2 = {.leaf = {s, a}, .n = 2};
    ag_leaf_hook_set((AgLeafHook){log_leaf, &log2});
    ag_backward(s, NULL, false);
    Tensor *y2 = tensor_sum_all(tensor_mul(a, a)), *g;
    ag_grad(1, &y2, NULL, 1, &a, &g, false);
    ag_leaf_hook_set(prev);
    CHECK(log2.count[0] == 1 && log2.count[1] == 0 && log2.unknown == 0);
    /* and with no hook set, backward goes on as before */
    ag_backward(tensor_sum_all(tensor_mul(a, a)), NULL, false);
    CHECK(log2.count[1] == 0);
}

/* ---- ag_backward hands a spent gradient's bytes back to the pass (autograd/engine.c) ---------- */

/* fan-out, views (transpose, reshape, expand), a broadcast and a matmul: every way gradients
 * share bytes or meet in one slot */
static Tensor *shared_loss(Tensor *x, Tensor *w, Tensor *c) {
    Tensor *h = tensor_tanh(tensor_matmul(x, w));                    /* 64 x 48 */
    Tensor *t = tensor_reshape(tensor_transpose(h, 0, 1), TENSOR_SHAPE(48 * 64));
    Tensor *e = tensor_expand(c, TENSOR_SHAPE(64, 48));              /* c: 1 x 48 */
    Tensor *a = tensor_sum_all(tensor_mul(h, h));
    Tensor *b = tensor_sum_all(tensor_mul(t, tensor_reshape(tensor_transpose(tensor_mul(h, e), 0, 1), TENSOR_SHAPE(-1))));
    return tensor_add(tensor_add(a, b), tensor_sum_all(tensor_exp(tensor_mul_scalar(h, 0.5))));
}

static bool bitwise_equal(const Tensor *a, const Tensor *b) {
    Tensor *x = tensor_contiguous((Tensor *)a), *y = tensor_contiguous((Tensor *)b);
    return tensor_numel(x) == tensor_numel(y) &&
           !memcmp(tensor_data_ptr(x), tensor_data_ptr(y), (size_t)tensor_numel(x) * tensor_dtype_size(x->dtype));
}

TEST(backward_recycling_gives_the_plain_gradients_bit_for_bit) {
    TensorRng g = {.seed = 11};
    for (int dt = 0; dt < 2; dt++) {
        TensorDType t = dt ? TENSOR_F64 : TENSOR_F32;
        Tensor *x = tensor_requires_grad(tensor_randn_with(&g, TENSOR_SHAPE(64, 32), t), true);
        Tensor *w = tensor_requires_grad(tensor_randn_with(&g, TENSOR_SHAPE(32, 48), t), true);
        Tensor *c = tensor_requires_grad(tensor_randn_with(&g, TENSOR_SHAPE(1, 48), t), true);
        Tensor *in[3] = {x, w, c}, *ref[3];
        Tensor *y = shared_loss(x, w, c);
        ag_grad(1, &y, NULL, 3, in, ref, false); /* results kept: nothing recycled */
        TensorScope *s = tensor_scope_begin();
        ag_backward(y, NULL, true);
        tensor_scope_end(s);
        for (int i = 0; i < 3; i++) CHECK_MSG(bitwise_equal(in[i]->grad, ref[i]), "%s input %d", tensor_dtype_name(t), i);
        s = tensor_scope_begin(); /* the retained graph again: its saved tensors were not touched */
        ag_backward(y, NULL, false);
        tensor_scope_end(s);
        for (int i = 0; i < 3; i++) CHECK(bitwise_equal(in[i]->grad, tensor_mul_scalar(ref[i], 2)));
    }
}

TEST(backward_pass_memory_is_what_is_live) {
    /* 48 elementwise ops on 1 MiB: the pass makes ~100 MiB of gradients, but holds two or three
     * at a time */
    TensorRng g = {.seed = 12};
    Tensor *x = tensor_requires_grad(tensor_randn_with(&g, TENSOR_SHAPE(512, 512), TENSOR_F32), true);
    Tensor *y = x;
    for (int k = 0; k < 48; k++) y = tensor_tanh(tensor_mul_scalar(y, 1.01));
    Tensor *loss = tensor_sum_all(tensor_mul(y, y));
    TensorScope *s = tensor_scope_begin();
    ag_backward(loss, NULL, false);
    double mib = (double)tensor_scope_bytes(s) / (1 << 20);
    tensor_scope_end(s);
    CHECK_MSG(mib < 12, "the pass allocated %.1f MiB", mib);
    CHECK(isfinite(tensor_item(tensor_sum_all(x->grad))));
}
