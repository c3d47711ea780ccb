/* tests/test_nn.c — nn/modules.h and the tiled attention: parameter names, order and shapes of
 * every module; a small model against its PyTorch twin (tests/oracle/make_nn_fixtures.py,
 * nn_model.afx) forward and backward, which also checks the state-dict keys; ONI's
 * orthogonality and gradients; the Fourier embedding's values and layout; tiled vs naive
 * attention, forward and backward, and a gradcheck of the tiled op. */
#include <stdlib.h>
#include <string.h>

#include "autograd/gradcheck.h"
#include "nn/modules.h"
#include "tensor/node.h"
#include "tests/oracle_io.h"
#include "tests/test.h"

static Tensor *randn_leaf(int nd, const int64_t *shape, TensorDType dt, uint64_t stream, double scale) {
    TensorRng g = {.seed = 11, .stream = stream};
    Tensor *t = tensor_mul_scalar(tensor_randn_with(&g, nd, shape, dt), scale);
    return tensor_requires_grad(t, true);
}

/* names (and shapes) registered, in order, against the expected list */
static void check_names(const NnParams *p, int n, const char *const *names, const int64_t (*shapes)[2]) {
    const NnParam *it;
    int got = nn_state_dict(p, &it);
    CHECK_MSG(got == n, "%d parameters, expected %d", got, n);
    for (int i = 0; i < n && i < got; i++) {
        CHECK_MSG(!strcmp(it[i].name, names[i]), "parameter %d is '%s', expected '%s'", i, it[i].name, names[i]);
        const Tensor *t = it[i].value;
        bool ok = t->ndim == (shapes[i][1] ? 2 : 1) && t->shape[0] == shapes[i][0] && (t->ndim == 1 || t->shape[1] == shapes[i][1]);
        char s[128];
        CHECK_MSG(ok, "'%s' has shape %s, expected (%lld, %lld)", names[i], tensor_shape_str(t, s),
                  (long long)shapes[i][0], (long long)shapes[i][1]);
    }
}

/* ---- names, shapes, init ------------------------------------------------------------------------ */

TEST(nn_linear_names_shapes_init) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 1);
    NnLinear l, nb;
    nn_linear_init(&l, &p, "head.fc", 50, 300, true);
    nn_linear_init(&nb, &p, "", 4, 2, false);
    check_names(&p, 3, (const char *const[]){"head.fc.weight", "head.fc.bias", "weight"},
                (const int64_t[][2]){{300, 50}, {300, 0}, {2, 4}});
    CHECK(nb.bias == NULL);
    /* torch.nn.Linear: weight and bias ~ U(±1/√in); check the range and the spread */
    double bound = 1 / sqrt(50.0);
    Tensor *wa = tensor_abs(l.weight), *ba = tensor_abs(l.bias);
    CHECK(tensor_item(tensor_max(wa, 0, NULL, false)) <= bound);
    CHECK(tensor_item(tensor_max(ba, 0, NULL, false)) <= bound);
    CHECK(tensor_item(tensor_max(wa, 0, NULL, false)) > 0.95 * bound);
    /* U(±a) has variance a²/3 */
    CHECK_NEAR(tensor_item(tensor_var(l.weight, 0, NULL, 0, false)), bound * bound / 3, 0.05 * bound * bound / 3);
    Tensor *x = tensor_randn(TENSOR_SHAPE(2, 7, 50), TENSOR_F32);
    Tensor *y = nn_linear_forward(&l, x);
    CHECK(y->ndim == 3 && y->shape[0] == 2 && y->shape[1] == 7 && y->shape[2] == 300);
    nn_params_free(&p);
}

TEST(nn_module_names_and_shapes) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 1);
    enum { C = 8, Cc = 6, H = 32 };
    NnSelfBlock sb;
    NnCrossBlock cb;
    NnResBlock rb;
    NnOniLinear on;
    NnLayerNorm ln;
    nn_cross_block_init(&cb, &p, "enc.cross", C, Cc, 2, H, false);
    nn_self_block_init(&sb, &p, "enc.blocks.0", C, 2, H, true);
    nn_layer_norm_init(&ln, &p, "enc.ln_post", C);
    nn_res_block_init(&rb, &p, "dec.res.0", C, 12, NN_ACT_ELU);
    nn_oni_linear_init(&on, &p, "dec.out", C, 5, true);
    const char *names[] = {
        "enc.cross.attn.c_q.weight", "enc.cross.attn.c_kv.weight", "enc.cross.attn.c_proj.weight",
        "enc.cross.attn.c_proj.bias", "enc.cross.ln_1.weight", "enc.cross.ln_1.bias", "enc.cross.ln_2.weight",
        "enc.cross.ln_2.bias", "enc.cross.mlp.c_fc.weight", "enc.cross.mlp.c_fc.bias",
        "enc.cross.mlp.c_proj.weight", "enc.cross.mlp.c_proj.bias", "enc.cross.ln_3.weight",
        "enc.cross.ln_3.bias",
        "enc.blocks.0.attn.c_qkv.weight", "enc.blocks.0.attn.c_qkv.bias", "enc.blocks.0.attn.c_proj.weight",
        "enc.blocks.0.attn.c_proj.bias", "enc.blocks.0.ln_1.weight", "enc.blocks.0.ln_1.bias",
        "enc.blocks.0.mlp.c_fc.weight", "enc.blocks.0.mlp.c_fc.bias", "enc.blocks.0.mlp.c_proj.weight",
        "enc.blocks.0.mlp.c_proj.bias", "enc.blocks.0.ln_2.weight", "enc.blocks.0.ln_2.bias",
        "enc.ln_post.weight", "enc.ln_post.bias",
        "dec.res.0.fc1.weight", "dec.res.0.fc1.bias", "dec.res.0.fc2.weight", "dec.res.0.fc2.bias",
        "dec.out.weight", "dec.out.bias",
    };
    const int64_t shapes[][2] = {
        {C, C}, {2 * C, Cc}, {C, C}, {C, 0}, {C, 0}, {C, 0}, {Cc, 0}, {Cc, 0}, {H, C}, {H, 0}, {C, H}, {C, 0},
        {C, 0}, {C, 0},
        {3 * C, C}, {3 * C, 0}, {C, C}, {C, 0}, {C, 0}, {C, 0}, {H, C}, {H, 0}, {C, H}, {C, 0}, {C, 0}, {C, 0},
        {C, 0}, {C, 0},
        {12, C}, {12, 0}, {C, 12}, {C, 0},
        {5, C}, {5, 0},
    };
    check_names(&p, (int)(sizeof names / sizeof *names), names, shapes);
    /* LayerNorm init: ones and zeros */
    CHECK(tensor_item(tensor_sum_all(sb.ln_1.weight)) == C && tensor_item(tensor_sum_all(sb.ln_1.bias)) == 0);
    /* forward shapes */
    Tensor *x = tensor_randn(TENSOR_SHAPE(2, 5, C), TENSOR_F32), *ctx = tensor_randn(TENSOR_SHAPE(2, 9, Cc), TENSOR_F32);
    Tensor *y = nn_self_block_forward(&sb, nn_cross_block_forward(&cb, x, ctx));
    Tensor *z = nn_oni_linear_forward(&on, nn_res_block_forward(&rb, nn_layer_norm_forward(&ln, y)));
    CHECK(y->shape[0] == 2 && y->shape[1] == 5 && y->shape[2] == C);
    CHECK(z->ndim == 3 && z->shape[0] == 2 && z->shape[1] == 5 && z->shape[2] == 5);
    /* a standalone MHA module with both projections bias-free registers only weights */
    NnParams q;
    nn_params_init(&q, NULL, TENSOR_F32, 1);
    NnMultiheadAttention mha;
    nn_mha_self_init(&mha, &q, "attn", C, 4, false, false);
    check_names(&q, 2, (const char *const[]){"attn.c_qkv.weight", "attn.c_proj.weight"},
                (const int64_t[][2]){{3 * C, C}, {C, C}});
    Tensor *a = nn_mha_forward(&mha, x, NULL);
    CHECK(a->shape[0] == 2 && a->shape[1] == 5 && a->shape[2] == C);
    nn_params_free(&q);
    nn_params_free(&p);
}

/* ---- blocks: the module equals nn/functional.h's block and the composition of its parts ----- */

static Tensor *jitter(Tensor *t, uint64_t stream) {
    /* LayerNorm weights away from 1 and biases away from 0, so a swapped pair would show */
    Tensor *r = randn_leaf(t->ndim, t->shape, t->dtype, stream, 0.2);
    tensor_add_(t, tensor_detach(r), 1.0);
    return t;
}

TEST(nn_self_block_module_matches_functional) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 3);
    NnSelfBlock b;
    nn_self_block_init(&b, &p, "blk", 12, 3, 40, true);
    for (int i = 0; i < p.n; i++) jitter(p.items[i].value, 100 + (uint64_t)i);
    Tensor *x = randn_leaf(TENSOR_SHAPE(2, 6, 12), TENSOR_F64, 1, 1.0);
    Tensor *y = nn_self_block_forward(&b, x);
    NnSelfBlockWeights w = nn_self_block_weights(&b);
    CHECK(test_rel_err(y, nn_self_block(x, &w, 3)) == 0);
    /* x + attn(ln_1 x), then + mlp(ln_2 x), from the sub-modules */
    Tensor *h = tensor_add(x, nn_mha_forward(&b.attn, nn_layer_norm_forward(&b.ln_1, x), NULL));
    Tensor *ref = tensor_add(h, nn_mlp_forward(&b.mlp, nn_layer_norm_forward(&b.ln_2, h)));
    CHECK(test_rel_err(y, ref) < 1e-14);
    /* and after packing into the flat buffer, the same numbers */
    nn_params_pack(&p);
    CHECK(test_rel_err(nn_self_block_forward(&b, x), ref) < 1e-14);
    nn_params_free(&p);
}

TEST(nn_cross_block_module_matches_functional) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 3);
    NnCrossBlock b;
    nn_cross_block_init(&b, &p, "", 12, 5, 3, 40, true);
    for (int i = 0; i < p.n; i++) jitter(p.items[i].value, 200 + (uint64_t)i);
    Tensor *x = randn_leaf(TENSOR_SHAPE(2, 6, 12), TENSOR_F64, 1, 1.0);
    Tensor *c = randn_leaf(TENSOR_SHAPE(2, 9, 5), TENSOR_F64, 2, 1.0);
    Tensor *y = nn_cross_block_forward(&b, x, c);
    NnCrossBlockWeights w = nn_cross_block_weights(&b);
    CHECK(test_rel_err(y, nn_cross_block(x, c, &w, 3)) == 0);
    Tensor *h = tensor_add(x, nn_mha_forward(&b.attn, nn_layer_norm_forward(&b.ln_1, x), nn_layer_norm_forward(&b.ln_2, c)));
    Tensor *ref = tensor_add(h, nn_mlp_forward(&b.mlp, nn_layer_norm_forward(&b.ln_3, h)));
    CHECK(test_rel_err(y, ref) < 1e-14);
    nn_params_free(&p);
}

TEST(nn_res_block_activations) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 3);
    NnResBlock b;
    nn_res_block_init(&b, &p, "r", 4, 6, NN_ACT_RELU);
    Tensor *x = randn_leaf(TENSOR_SHAPE(3, 4), TENSOR_F64, 1, 1.0);
    NnActivation acts[] = {NN_ACT_RELU, NN_ACT_ELU, NN_ACT_GELU, NN_ACT_SILU, NN_ACT_TANH, NN_ACT_SOFTPLUS};
    for (int i = 0; i < 6; i++) {
        b.act = acts[i];
        Tensor *h = nn_linear(x, b.fc1.weight, b.fc1.bias), *a;
        switch (acts[i]) {
        case NN_ACT_RELU: a = tensor_relu(h); break;
        case NN_ACT_ELU: a = tensor_elu(h, 1.0); break;
        case NN_ACT_GELU: a = tensor_gelu(h); break;
        case NN_ACT_SILU: a = tensor_div(h, tensor_add_scalar(tensor_exp(tensor_neg(h)), 1.0)); break;
        case NN_ACT_TANH: a = tensor_tanh(h); break;
        default: a = tensor_log(tensor_add_scalar(tensor_exp(h), 1.0)); break;
        }
        Tensor *ref = tensor_add(x, nn_linear(a, b.fc2.weight, b.fc2.bias));
        CHECK_MSG(test_rel_err(nn_res_block_forward(&b, x), ref) < 1e-14, "activation %d", i);
    }
    nn_params_free(&p);
}

/* ---- ONI ------------------------------------------------------------------------------------------ */

/* max |G − I| for G = W Wᵀ (rows) or Wᵀ W (cols) */
static double orth_err(Tensor *w, bool rows) {
    Tensor *wt = tensor_transpose(w, 0, 1);
    Tensor *g = rows ? tensor_matmul(w, wt) : tensor_matmul(wt, w);
    Tensor *e = tensor_sub(g, tensor_eye(g->shape[0], g->dtype));
    return tensor_item(tensor_max(tensor_abs(e), 0, NULL, false));
}

TEST(nn_oni_orthogonality) {
    /* Huang et al. 2020: T = 5 is approximate orthogonality on purpose; how close depends on
     * S's eigenvalue spread. Measured for this Z (8 × 16, N(0, 1), κ(S) ≈ 30):
     *   T:           0     3     5     6      7       8      10 … 40
     *   max|WWᵀ−I|:  0.86  0.46  0.14  0.03  1.3e-3  6e-6   4.06e-6 (the ε floor; stable) */
    TensorRng g = {.seed = 3, .stream = 1};
    Tensor *z = tensor_randn_with(&g, TENSOR_SHAPE(8, 16), TENSOR_F64);
    int iters[6] = {0, 3, 5, 8, 10, 40};
    double e[6];
    for (int i = 0; i < 6; i++) e[i] = orth_err(nn_oni_weight(z, iters[i], 1e-5), true);
    if (getenv("ANIMA_TEST_VERBOSE"))
        fprintf(stderr, "    ONI 8x16 max|WWt - I|: T=0 %.3g, 3 %.3g, 5 %.3g, 8 %.3g, 10 %.3g, 40 %.3g\n", e[0], e[1],
                e[2], e[3], e[4], e[5]);
    CHECK(e[1] < e[0] && e[2] < e[1] && e[3] < e[2]);
    CHECK_MSG(e[2] < 0.2, "T = 5: %g", e[2]);
    CHECK_MSG(e[3] < 1e-4, "T = 8: %g", e[3]);
    /* no divergence with many iterations (the uncoupled form of physskin.md §6 blows up here) */
    CHECK_MSG(fabs(e[5] - e[4]) < 1e-8, "T = 40: %g vs T = 10: %g", e[5], e[4]);
    /* f32 gives the same at T = 5 */
    Tensor *w32 = nn_oni_weight(tensor_cast(z, TENSOR_F32), 5, 1e-5);
    CHECK_NEAR(orth_err(w32, true), e[2], 1e-4);
    /* the rows of W are centered like Zc's (W = B Zc) */
    Tensor *w = nn_oni_weight(z, 5, 1e-5);
    CHECK(tensor_item(tensor_max(tensor_abs(tensor_sum(w, TENSOR_DIMS(1), false)), 0, NULL, false)) < 1e-12);
    /* n_out > d: columns orthonormal within the complement of 1 (Zc 1 = 0 after centering the
     * rows, so Wᵀ W → I − 11ᵀ/d) */
    enum { D = 8 };
    Tensor *zt = tensor_randn_with(&g, TENSOR_SHAPE(16, D), TENSOR_F64);
    Tensor *wt = nn_oni_weight(zt, 20, 1e-5);
    CHECK(wt->shape[0] == 16 && wt->shape[1] == D);
    Tensor *gram = tensor_matmul(tensor_transpose(wt, 0, 1), wt);
    Tensor *ones = tensor_full(TENSOR_SHAPE(D, D), 1.0 / D, TENSOR_F64);
    Tensor *target = tensor_sub(tensor_eye(D, TENSOR_F64), ones);
    double et = tensor_item(tensor_max(tensor_abs(tensor_sub(gram, target)), 0, NULL, false));
    CHECK_MSG(et < 1e-4, "tall: max|WᵀW − (I − 11ᵀ/d)| = %g", et);
}

static Tensor *fn_oni(int n, Tensor *const *in, void *user) {
    (void)n;
    return nn_oni_weight(in[0], *(int *)user, 1e-5);
}

TEST(nn_oni_gradcheck) {
    AgGradcheckReport r;
    int iters = 5;
    Tensor *z = randn_leaf(TENSOR_SHAPE(3, 5), TENSOR_F64, 4, 1.0);
    CHECK_MSG(ag_gradcheck(fn_oni, 1, &z, &iters, 1e-6, 1e-7, 1e-5, &r), "wide: elem %lld analytic %.10g numeric %.10g",
              (long long)r.bad_index, r.analytic, r.numeric);
    Tensor *zt = randn_leaf(TENSOR_SHAPE(5, 3), TENSOR_F64, 5, 1.0);
    CHECK_MSG(ag_gradcheck(fn_oni, 1, &zt, &iters, 1e-6, 1e-7, 1e-5, &r), "tall: elem %lld analytic %.10g numeric %.10g",
              (long long)r.bad_index, r.analytic, r.numeric);
}

/* ---- Fourier embedding ----------------------------------------------------------------------------- */

TEST(nn_fourier_embed_values) {
    const double xs[6] = {0.3, -0.7, 1.1, 0.05, 0.9, -1.0};
    Tensor *x = tensor_from_f64(TENSOR_SHAPE(2, 3), TENSOR_F64, xs);
    enum { K = 8 };
    Tensor *e = nn_fourier_embed(x, K);
    CHECK(e->ndim == 2 && e->shape[0] == 2 && e->shape[1] == 51 && nn_fourier_embed_dim(3, K) == 51);
    for (int64_t r = 0; r < 2; r++)
        for (int64_t c = 0; c < 3; c++) {
            double v = xs[r * 3 + c];
            CHECK(tensor_get(e, (int64_t[]){r, c}) == v);
            for (int k = 0; k < K; k++) {
                /* layout: [x (3) | sin, coordinate major, frequency minor (24) | cos (24)] */
                double a = ldexp(v, k);
                CHECK_NEAR(tensor_get(e, (int64_t[]){r, 3 + c * K + k}), sin(a), 1e-15);
                CHECK_NEAR(tensor_get(e, (int64_t[]){r, 3 + 3 * K + c * K + k}), cos(a), 1e-15);
            }
        }
    /* leading dims are kept; K = 0 is the identity */
    Tensor *x3 = tensor_randn(TENSOR_SHAPE(2, 4, 3), TENSOR_F32);
    Tensor *e3 = nn_fourier_embed(x3, 2);
    CHECK(e3->ndim == 3 && e3->shape[2] == 15);
    CHECK(nn_fourier_embed(x3, 0) == x3);
}

/* ---- tiled attention -------------------------------------------------------------------------------- */

typedef struct {
    int heads;
} AttUser;

static Tensor *fn_tiled(int n, Tensor *const *in, void *user) {
    (void)n;
    return nn_attention_tiled(in[0], in[1], in[2], ((AttUser *)user)->heads);
}

/* forward and (q, k, v) gradients of both paths on the same inputs; returns the worst error */
static double tiled_vs_naive(Tensor *q, Tensor *k, Tensor *v, int heads, const char *what) {
    Tensor *in[3] = {q, k, v};
    Tensor *yt = nn_attention_tiled(q, k, v, heads), *yn = nn_attention_naive(q, k, v, heads);
    Tensor *gy = tensor_randn(yt->ndim, yt->shape, yt->dtype);
    Tensor *gt[3], *gn[3];
    ag_grad(1, &yt, &gy, 3, in, gt, false);
    ag_grad(1, &yn, &gy, 3, in, gn, false);
    double e = test_rel_err(yt, yn);
    CHECK_MSG(e < 1e-5, "%s: forward %g", what, e);
    double worst = e;
    for (int i = 0; i < 3; i++) {
        double eg = test_rel_err(gt[i], gn[i]);
        CHECK_MSG(eg < 1e-5, "%s: grad %d %g", what, i, eg);
        worst = eg > worst ? eg : worst;
    }
    return worst;
}

TEST(nn_attention_tiled_matches_naive_f32) {
    /* Tq, Tk not multiples of the 64 × 128 tiles; several tiles each way */
    Tensor *q = randn_leaf(TENSOR_SHAPE(2, 150, 32), TENSOR_F32, 1, 1.0);
    Tensor *k = randn_leaf(TENSOR_SHAPE(2, 300, 32), TENSOR_F32, 2, 1.0);
    Tensor *v = randn_leaf(TENSOR_SHAPE(2, 300, 32), TENSOR_F32, 3, 1.0);
    double e1 = tiled_vs_naive(q, k, v, 4, "cross 150x300");
    /* large logits (|s| up to ~40): the running max must keep exp in range */
    Tensor *q3 = tensor_requires_grad(tensor_mul_scalar(tensor_detach(q), 3), true);
    Tensor *k3 = tensor_requires_grad(tensor_mul_scalar(tensor_detach(k), 3), true);
    double e2 = tiled_vs_naive(q3, k3, v, 2, "sharp");
    /* q, k, v as narrow views of one fused (B, T, 3C) projection, as the self-attention
     * module passes them: the kernel reads through the row stride */
    Tensor *qkv = randn_leaf(TENSOR_SHAPE(1, 200, 48), TENSOR_F32, 4, 1.0);
    double e3 = tiled_vs_naive(tensor_narrow(qkv, -1, 0, 16), tensor_narrow(qkv, -1, 16, 16),
                               tensor_narrow(qkv, -1, 32, 16), 2, "fused qkv views");
    /* one query (with one key, dq is 0 up to rounding: no relative error to take) */
    Tensor *q1 = randn_leaf(TENSOR_SHAPE(3, 1, 8), TENSOR_F32, 5, 1.0);
    Tensor *k1 = randn_leaf(TENSOR_SHAPE(3, 3, 8), TENSOR_F32, 6, 1.0);
    double e4 = tiled_vs_naive(q1, k1, tensor_mul_scalar(k1, -0.5), 1, "Tq = 1");
    /* small odd tiles: many partial tiles each way */
    nn_attention_set_tiles(5, 7);
    double e5 = tiled_vs_naive(q, k, v, 4, "tiles 5 x 7");
    nn_attention_set_tiles(0, 0);
    if (getenv("ANIMA_TEST_VERBOSE"))
        fprintf(stderr, "    tiled vs naive (f32, rel): %.2g %.2g %.2g %.2g %.2g\n", e1, e2, e3, e4, e5);
}

TEST(nn_attention_tiled_gradcheck_f64) {
    /* tiny tiles (2 queries × 4 keys) so that Tq = 5, Tk = 7 cross tile edges, partial tiles
     * included, and the online-softmax rescaling runs */
    nn_attention_set_tiles(2, 4);
    Tensor *q = randn_leaf(TENSOR_SHAPE(2, 5, 4), TENSOR_F64, 1, 1.0);
    Tensor *k = randn_leaf(TENSOR_SHAPE(2, 7, 4), TENSOR_F64, 2, 1.0);
    Tensor *v = randn_leaf(TENSOR_SHAPE(2, 7, 4), TENSOR_F64, 3, 1.0);
    Tensor *in[3] = {q, k, v};
    AttUser u = {2};
    AgGradcheckReport r;
    CHECK_MSG(ag_gradcheck(fn_tiled, 3, in, &u, 1e-6, 1e-8, 1e-5, &r), "input %d elem %lld analytic %.10g numeric %.10g",
              r.bad_input, (long long)r.bad_index, r.analytic, r.numeric);
    nn_attention_set_tiles(0, 0);
    k = randn_leaf(TENSOR_SHAPE(1, 130, 4), TENSOR_F64, 2, 1.0);
    v = randn_leaf(TENSOR_SHAPE(1, 130, 4), TENSOR_F64, 3, 1.0);
    /* f64 agreement with the naive path across query tiles too (Tq = 70 = 64 + 6), with k, v
     * of batch 1 expanded over q's batch of 2 (a stride-0 batch dim) */
    Tensor *q2 = randn_leaf(TENSOR_SHAPE(2, 70, 4), TENSOR_F64, 4, 1.0);
    Tensor *ke = tensor_expand(k, TENSOR_SHAPE(2, -1, -1)), *ve = tensor_expand(v, TENSOR_SHAPE(2, -1, -1));
    Tensor *y1 = nn_attention_tiled(q2, ke, ve, 2), *y2 = nn_attention_naive(q2, ke, ve, 2);
    CHECK(test_rel_err(y1, y2) < 1e-13);
    Tensor *gy = tensor_randn(y1->ndim, y1->shape, TENSOR_F64);
    Tensor *gt[3], *gn[3], *in2[3] = {q2, k, v};
    ag_grad(1, &y1, &gy, 3, in2, gt, false);
    ag_grad(1, &y2, &gy, 3, in2, gn, false);
    for (int i = 0; i < 3; i++) CHECK_MSG(test_rel_err(gt[i], gn[i]) < 1e-12, "grad %d: %g", i, test_rel_err(gt[i], gn[i]));
}

/* H = <∂L/∂(q, k, v), u> with L = sum(attn(q, k, v) · w): a gradcheck of H checks the second
 * derivatives that the tiled op's create_graph backward provides */
typedef struct {
    Tensor *w, *u[3];
} Att2Ctx;

static Tensor *fn_tiled_hvp(int n, Tensor *const *in, void *user) {
    (void)n;
    Att2Ctx *c = user;
    Tensor *L = tensor_sum_all(tensor_mul(nn_attention_tiled(in[0], in[1], in[2], 2), c->w));
    Tensor *g[3];
    ag_grad(1, &L, NULL, 3, in, g, true);
    Tensor *h = tensor_sum_all(tensor_mul(g[0], c->u[0]));
    for (int i = 1; i < 3; i++) h = tensor_add(h, tensor_sum_all(tensor_mul(g[i], c->u[i])));
    return h;
}

TEST(nn_attention_tiled_second_order) {
    nn_attention_set_tiles(2, 4);
    Tensor *q = randn_leaf(TENSOR_SHAPE(1, 3, 4), TENSOR_F64, 1, 1.0);
    Tensor *k = randn_leaf(TENSOR_SHAPE(1, 5, 4), TENSOR_F64, 2, 1.0);
    Tensor *v = randn_leaf(TENSOR_SHAPE(1, 5, 4), TENSOR_F64, 3, 1.0);
    Att2Ctx c = {tensor_randn(TENSOR_SHAPE(1, 3, 4), TENSOR_F64),
                 {tensor_randn(TENSOR_SHAPE(1, 3, 4), TENSOR_F64), tensor_randn(TENSOR_SHAPE(1, 5, 4), TENSOR_F64),
                  tensor_randn(TENSOR_SHAPE(1, 5, 4), TENSOR_F64)}};
    Tensor *in[3] = {q, k, v};
    AgGradcheckReport r;
    CHECK_MSG(ag_gradcheck(fn_tiled_hvp, 3, in, &c, 1e-6, 1e-7, 1e-5, &r), "input %d elem %lld analytic %.10g numeric %.10g",
              r.bad_input, (long long)r.bad_index, r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-3);
    nn_attention_set_tiles(0, 0);
}

/* A custom op's create_graph backward runs a nested ag_grad (attention recomposes its naive path).
 * Its inputs here are non-leaves — three narrow views of one projection that also feeds another
 * term, whose gradient the outer pass has already accumulated on the projection's node when the
 * attention node runs — and the nested pass must leave that pending gradient alone. */
static Tensor *qkv_loss(Tensor *x, Tensor *w, bool tiled) {
    Tensor *p = tensor_mul_scalar(x, 2);
    int64_t C = x->shape[2] / 3;
    Tensor *q = tensor_narrow(p, 2, 0, C), *k = tensor_narrow(p, 2, C, C), *v = tensor_narrow(p, 2, 2 * C, C);
    Tensor *y = tiled ? nn_attention_tiled(q, k, v, 2) : nn_attention_naive(q, k, v, 2);
    Tensor *other = tensor_sum_all(tensor_mul(tensor_sin(p), p)); /* p's other consumer, later on the tape */
    return tensor_add(other, tensor_sum_all(tensor_mul(y, w)));
}

TEST(nn_attention_second_order_nonleaf_inputs) {
    Tensor *x = randn_leaf(TENSOR_SHAPE(1, 5, 12), TENSOR_F64, 4, 1.0);
    Tensor *w = tensor_randn(TENSOR_SHAPE(1, 5, 4), TENSOR_F64);
    Tensor *g[2], *h[2];
    for (int tiled = 0; tiled < 2; tiled++) {
        Tensor *L = qkv_loss(x, w, tiled);
        ag_grad(1, &L, NULL, 1, &x, &g[tiled], true);
        ag_grad(1, (Tensor *[]){tensor_sum_all(tensor_mul(g[tiled], g[tiled]))}, NULL, 1, &x, &h[tiled], false);
    }
    CHECK_MSG(test_rel_err(g[1], g[0]) < 1e-12, "first derivative: %g", test_rel_err(g[1], g[0]));
    CHECK_MSG(test_rel_err(h[1], h[0]) < 1e-10, "second derivative: %g", test_rel_err(h[1], h[0]));
}

TEST(nn_attention_dispatch) {
    Tensor *q = randn_leaf(TENSOR_SHAPE(1, 300, 8), TENSOR_F32, 1, 1.0);
    Tensor *k = randn_leaf(TENSOR_SHAPE(1, 300, 8), TENSOR_F32, 2, 1.0);
    Tensor *qs = randn_leaf(TENSOR_SHAPE(1, 16, 8), TENSOR_F32, 3, 1.0);
    CHECK(nn_attention_wants_tiled(q, k));   /* 300 · 300 > 256 · 256 */
    CHECK(!nn_attention_wants_tiled(qs, k)); /* 16 · 300 */
    NnAttentionMode prev = nn_attention_set_mode(NN_ATTENTION_TILED);
    CHECK(prev == NN_ATTENTION_AUTO && nn_attention_wants_tiled(qs, k));
    nn_attention_set_mode(NN_ATTENTION_NAIVE);
    CHECK(!nn_attention_wants_tiled(q, k));
    nn_attention_set_mode(NN_ATTENTION_AUTO);
    /* the tiled op is one custom node on the tape; naive is a chain of ops */
    Tensor *y = nn_attention(q, k, k, 2);
    CHECK(y->node != NULL && y->node->op == TENSOR_OP_CUSTOM);
    CHECK(test_rel_err(y, nn_attention_naive(q, k, k, 2)) < 1e-5);
}

/* ---- the small model against PyTorch ------------------------------------------------------------- */

typedef struct {
    NnLinear embed;
    NnCrossBlock cross;
    NnSelfBlock blocks[4];
    NnLayerNorm ln_post;
    NnResBlock res;
    NnOniLinear out;
    int n_blocks, n_freqs;
} TinyNet;

enum { CFG_B, CFG_T, CFG_S, CFG_C, CFG_CC, CFG_HEADS, CFG_HIDDEN, CFG_RES_HIDDEN, CFG_NOUT, CFG_NFREQS, CFG_NBLOCKS,
       CFG_ONI_ITERS, CFG_N };

static void tiny_init(TinyNet *m, NnParams *p, const int64_t *cfg) {
    char buf[64];
    int64_t C = cfg[CFG_C];
    int heads = (int)cfg[CFG_HEADS];
    m->n_freqs = (int)cfg[CFG_NFREQS], m->n_blocks = (int)cfg[CFG_NBLOCKS];
    nn_linear_init(&m->embed, p, "embed", nn_fourier_embed_dim(3, m->n_freqs), C, true);
    nn_cross_block_init(&m->cross, p, "cross", C, cfg[CFG_CC], heads, cfg[CFG_HIDDEN], false);
    for (int i = 0; i < m->n_blocks; i++) {
        snprintf(buf, sizeof buf, "blocks.%d", i);
        nn_self_block_init(&m->blocks[i], p, buf, C, heads, cfg[CFG_HIDDEN], false);
    }
    nn_layer_norm_init(&m->ln_post, p, "ln_post", C);
    nn_res_block_init(&m->res, p, "res", C, cfg[CFG_RES_HIDDEN], NN_ACT_ELU);
    nn_oni_linear_init(&m->out, p, "out", C, cfg[CFG_NOUT], true);
    m->out.iters = (int)cfg[CFG_ONI_ITERS];
}

static Tensor *tiny_forward(const TinyNet *m, Tensor *pts, Tensor *ctx) {
    Tensor *x = nn_cross_block_forward(&m->cross, nn_linear_forward(&m->embed, nn_fourier_embed(pts, m->n_freqs)), ctx);
    for (int i = 0; i < m->n_blocks; i++) x = nn_self_block_forward(&m->blocks[i], x);
    return nn_oni_linear_forward(&m->out, nn_res_block_forward(&m->res, nn_layer_norm_forward(&m->ln_post, x)));
}

static bool load_nn_fixture(OracleFile *f) {
    char path[512], err[512];
    const char *dir = getenv("ANIMA_ORACLE_DIR");
    snprintf(path, sizeof path, "%s/nn_model.afx", dir && *dir ? dir : "tests/oracle/fixtures");
    if (!oracle_load(path, f, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s (regenerate with tests/oracle/make_nn_fixtures.py)", err);
        return false;
    }
    return true;
}

static const OracleArray *need(const OracleFile *f, const char *name) {
    const OracleArray *a = oracle_find(f, name);
    if (!a) test_fail_at(__FILE__, __LINE__, "nn_model.afx: no array '%s'", name);
    return a;
}

static void model_vs_torch(TensorDType dt, double tol, NnAttentionMode mode) {
    OracleFile f;
    if (!load_nn_fixture(&f)) return;
    const OracleArray *ca = need(&f, "config");
    if (!ca || ca->numel != CFG_N) {
        oracle_free(&f);
        return;
    }
    int64_t cfg[CFG_N];
    memcpy(cfg, ca->data, sizeof cfg);
    NnParams p;
    nn_params_init(&p, NULL, dt, 1);
    TinyNet m;
    tiny_init(&m, &p, cfg);
    /* the state dict's keys, in order, are torch's */
    const char *names[128];
    Tensor *values[128];
    int n = 0;
    for (int i = 0; i < f.n && n < 128; i++)
        if (!strncmp(f.arrays[i].name, "sd/", 3)) {
            names[n] = f.arrays[i].name + 3;
            values[n++] = oracle_tensor(&f.arrays[i], dt);
        }
    const NnParam *items;
    int np = nn_state_dict(&p, &items);
    CHECK_MSG(np == n, "%d parameters, torch has %d", np, n);
    for (int i = 0; i < n && i < np; i++)
        CHECK_MSG(!strcmp(items[i].name, names[i]), "key %d: '%s', torch '%s'", i, items[i].name, names[i]);
    char err[256];
    CHECK_MSG(nn_load_state_dict(&p, n, names, values, err, sizeof err), "%s", err);
    nn_params_pack(&p);
    NnAttentionMode prev = nn_attention_set_mode(mode);
    Tensor *pts = tensor_requires_grad(oracle_tensor(need(&f, "in/pts"), dt), true);
    Tensor *ctx = tensor_requires_grad(oracle_tensor(need(&f, "in/ctx"), dt), true);
    Tensor *y = tiny_forward(&m, pts, ctx);
    nn_attention_set_mode(prev);
    Tensor *ref = oracle_tensor(need(&f, "out"), TENSOR_F64);
    double e = test_rel_err(y, ref);
    CHECK_MSG(e < tol, "%s: out %g", tensor_dtype_name(dt), e);
    ag_backward(tensor_sum_all(tensor_mul(y, oracle_tensor(need(&f, "w"), dt))), NULL, false);
    double eg = test_rel_err(pts->grad, oracle_tensor(need(&f, "grad/pts"), TENSOR_F64));
    CHECK_MSG(eg < tol, "grad pts %g", eg);
    eg = test_rel_err(ctx->grad, oracle_tensor(need(&f, "grad/ctx"), TENSOR_F64));
    CHECK_MSG(eg < tol, "grad ctx %g", eg);
    for (int i = 0; i < np; i++) {
        char key[300];
        snprintf(key, sizeof key, "grad/%s", items[i].name);
        const OracleArray *g = need(&f, key);
        if (!g) continue;
        eg = test_rel_err(items[i].value->grad, oracle_tensor(g, TENSOR_F64));
        CHECK_MSG(eg < tol, "grad %s: %g", items[i].name, eg);
    }
    nn_params_free(&p);
    oracle_free(&f);
}

TEST(nn_model_vs_torch_f64) { model_vs_torch(TENSOR_F64, 1e-9, NN_ATTENTION_NAIVE); }
TEST(nn_model_vs_torch_f64_tiled) { model_vs_torch(TENSOR_F64, 1e-9, NN_ATTENTION_TILED); }
TEST(nn_model_vs_torch_f32) { model_vs_torch(TENSOR_F32, 1e-4, NN_ATTENTION_AUTO); }

TEST(nn_load_state_dict_errors) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 1);
    NnLinear l;
    nn_linear_init(&l, &p, "fc", 3, 2, true);
    Tensor *w = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F64), *b = tensor_ones(TENSOR_SHAPE(2), TENSOR_F64);
    Tensor *bad = tensor_ones(TENSOR_SHAPE(3), TENSOR_F64);
    char err[256];
    CHECK(!nn_load_state_dict(&p, 1, (const char *const[]){"fc.weight"}, (Tensor *const[]){w}, err, sizeof err));
    CHECK_MSG(strstr(err, "missing key 'fc.bias'"), "%s", err);
    CHECK(!nn_load_state_dict(&p, 3, (const char *const[]){"fc.weight", "fc.bias", "fc.extra"}, (Tensor *const[]){w, b, b},
                              err, sizeof err));
    CHECK_MSG(strstr(err, "unexpected key 'fc.extra'"), "%s", err);
    CHECK(!nn_load_state_dict(&p, 2, (const char *const[]){"fc.weight", "fc.bias"}, (Tensor *const[]){w, bad}, err,
                              sizeof err));
    CHECK_MSG(strstr(err, "size mismatch for 'fc.bias'"), "%s", err);
    /* nothing was loaded by the failed calls; a good one converts f64 to the model's f32 */
    CHECK(tensor_item(tensor_sum_all(l.bias)) != 2);
    CHECK(nn_load_state_dict(&p, 2, (const char *const[]){"fc.bias", "fc.weight"}, (Tensor *const[]){b, w}, err, sizeof err));
    CHECK(tensor_item(tensor_sum_all(l.weight)) == 6 && tensor_item(tensor_sum_all(l.bias)) == 2);
    nn_params_free(&p);
}

/* nn_stack: torch.nn.Sequential's names (the Linear layers at the even indices), PyTorch's Linear
 * init in registration order (as the same layers made one by one), the forward as their
 * composition; nn_activation_parse knows every activation by name */
TEST(nn_stack_names_init_forward) {
    TensorScope *sc = tensor_scope_begin();
    NnParams p, q;
    nn_params_init(&p, sc, TENSOR_F64, 7);
    nn_params_init(&q, sc, TENSOR_F64, 7);
    NnStack s;
    nn_stack_init(&s, &p, "net", 3, 5, 2, 2, NN_ACT_TANH);
    NnLinear l[3];
    nn_linear_init(&l[0], &q, "a", 3, 5, true), nn_linear_init(&l[1], &q, "b", 5, 5, true), nn_linear_init(&l[2], &q, "c", 5, 2, true);
    nn_params_pack(&p), nn_params_pack(&q);
    CHECK(p.n == 6 && !strcmp(p.items[0].name, "net.0.weight") && !strcmp(p.items[3].name, "net.2.bias") &&
          !strcmp(p.items[5].name, "net.4.bias"));
    Tensor *x = tensor_randn(TENSOR_SHAPE(4, 3), TENSOR_F64);
    Tensor *want = nn_linear_forward(&l[2], tensor_tanh(nn_linear_forward(&l[1], tensor_tanh(nn_linear_forward(&l[0], x)))));
    Tensor *got = nn_stack_forward(&s, x);
    CHECK(tensor_same_shape(got, want) && test_rel_err(got, want) == 0);
    const char *names[] = {"relu", "elu", "gelu", "silu", "tanh", "softplus"};
    for (int a = 0; a < 6; a++) CHECK(nn_activation_parse(names[a]) == a);
    CHECK(nn_activation_parse("swish") == -1);
    nn_stack_free(&s);
    tensor_scope_end(sc);
}
