/* tests/test_gru.c — nn/gru.h: parameter names, order, shapes and init of torch.nn.GRU /
 * GRUCell; forward and backward (grads of the input, h0 and every weight) against torch
 * (tests/oracle/make_nn_fixtures.py writes nn_gru.afx); an f64 finite-difference gradcheck;
 * sequences longer than one recorded cat takes; a checkpoint round trip. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd/gradcheck.h"
#include "nn/gru.h"
#include "nn/modules.h"
#include "optim/checkpoint.h"
#include "tests/oracle_io.h"
#include "tensor/backend.h"
#include "tests/test.h"

static const OracleArray *need(const OracleFile *f, const char *name) {
    const OracleArray *a = oracle_find(f, name);
    if (!a) test_fail_at(__FILE__, __LINE__, "nn_gru.afx: no array '%s'", name);
    return a;
}

static bool load_gru_fixture(OracleFile *f) {
    char path[512], err[512];
    const char *dir = getenv("ANIMA_ORACLE_DIR");
    snprintf(path, sizeof path, "%s/nn_gru.afx", dir && *dir ? dir : "tests/oracle/fixtures");
    if (!oracle_load(path, f, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s (regenerate with tests/oracle/make_nn_fixtures.py)", err);
        return false;
    }
    return true;
}

static Tensor *fx(const OracleFile *f, const char *tag, const char *name, TensorDType dt) {
    char key[256];
    snprintf(key, sizeof key, "%s/%s", tag, name);
    const OracleArray *a = need(f, key);
    return a ? oracle_tensor(a, dt) : tensor_zeros(TENSOR_SHAPE(1), dt);
}

/* loads tag/sd/<key> into p by name (strict) after checking p lists torch's keys in torch's order */
static void load_sd(const OracleFile *f, const char *tag, NnParams *p, TensorDType dt) {
    const char *names[32];
    Tensor *values[32];
    int n = 0;
    char pre[64];
    int lp = snprintf(pre, sizeof pre, "%s/sd/", tag);
    for (int i = 0; i < f->n && n < 32; i++)
        if (!strncmp(f->arrays[i].name, pre, (size_t)lp)) {
            names[n] = f->arrays[i].name + lp;
            values[n++] = oracle_tensor(&f->arrays[i], dt);
        }
    const NnParam *items;
    int np = nn_state_dict(p, &items);
    CHECK_MSG(np == n && n > 0, "%s: %d parameters, torch has %d", tag, np, n);
    for (int i = 0; i < n && i < np; i++)
        CHECK_MSG(!strcmp(items[i].name, names[i]), "%s key %d: '%s', torch '%s'", tag, i, items[i].name, names[i]);
    char err[256];
    CHECK_MSG(nn_load_state_dict(p, n, names, values, err, sizeof err), "%s", err);
}

static void check_param_grads(const OracleFile *f, const char *tag, const NnParams *p, double tol) {
    const NnParam *items;
    int np = nn_state_dict(p, &items);
    for (int i = 0; i < np; i++) {
        char key[256];
        snprintf(key, sizeof key, "grad/%s", items[i].name);
        double e = test_rel_err(items[i].value->grad, fx(f, tag, key, TENSOR_F64));
        CHECK_MSG(e < tol, "%s grad %s: %g", tag, items[i].name, e);
    }
}

/* ---- names, shapes, init ------------------------------------------------------------------ */

TEST(nn_gru_names_shapes_init) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 3);
    NnGru g;
    NnGruCell c, nb;
    nn_gru_init(&g, &p, "enc.rnn", 5, 40, 2, true);
    nn_gru_cell_init(&c, &p, "cell", 7, 40, true);
    nn_gru_cell_init(&nb, &p, "nb", 2, 3, false);
    static const char *const want[] = {
        "enc.rnn.weight_ih_l0", "enc.rnn.weight_hh_l0", "enc.rnn.bias_ih_l0", "enc.rnn.bias_hh_l0",
        "enc.rnn.weight_ih_l1", "enc.rnn.weight_hh_l1", "enc.rnn.bias_ih_l1", "enc.rnn.bias_hh_l1",
        "cell.weight_ih",       "cell.weight_hh",       "cell.bias_ih",       "cell.bias_hh",
        "nb.weight_ih",         "nb.weight_hh"};
    static const int64_t shapes[][2] = {{120, 5},  {120, 40}, {120, 0}, {120, 0}, {120, 40}, {120, 40}, {120, 0},
                                        {120, 0},  {120, 7},  {120, 40}, {120, 0}, {120, 0}, {9, 2},    {9, 3}};
    const NnParam *it;
    int n = nn_state_dict(&p, &it);
    CHECK_MSG(n == 14, "%d parameters", n);
    for (int i = 0; i < n && i < 14; i++) {
        CHECK_MSG(!strcmp(it[i].name, want[i]), "parameter %d is '%s', expected '%s'", i, it[i].name, want[i]);
        const Tensor *t = it[i].value;
        CHECK_MSG(t->ndim == (shapes[i][1] ? 2 : 1) && t->shape[0] == shapes[i][0] &&
                      (t->ndim == 1 || t->shape[1] == shapes[i][1]),
                  "'%s' has the wrong shape", it[i].name);
    }
    CHECK(nb.bias_ih == NULL && nb.bias_hh == NULL);
    /* torch: every parameter ~ U(±1/√H) — also weight_ih_l0, whose fan-in (5) is not H */
    double bound = 1 / sqrt(40.0);
    for (int i = 0; i < 12; i++) {
        Tensor *a = tensor_abs(it[i].value);
        double mx = tensor_item(tensor_max(a, 0, NULL, false));
        CHECK_MSG(mx <= bound && mx > 0.9 * bound, "'%s': max |w| %g, bound %g", it[i].name, mx, bound);
    }
    /* U(±a) has variance a²/3 (the 120 × 40 weight: 4800 draws) */
    CHECK_NEAR(tensor_item(tensor_var(g.layer[1].weight_hh, 0, NULL, 0, false)), bound * bound / 3,
               0.08 * bound * bound / 3);
    nn_params_free(&p);
}

/* ---- against torch ------------------------------------------------------------------------- */

static void gru_vs_torch(TensorDType dt, double tol) {
    OracleFile f;
    if (!load_gru_fixture(&f)) return;
    const OracleArray *ca = need(&f, "gru/config");
    if (!ca || ca->numel != 5) {
        oracle_free(&f);
        return;
    }
    int64_t cfg[5];
    memcpy(cfg, ca->data, sizeof cfg);
    NnParams p;
    nn_params_init(&p, NULL, dt, 1);
    NnGru g;
    nn_gru_init(&g, &p, "", cfg[2], cfg[3], (int)cfg[4], true);
    load_sd(&f, "gru", &p, dt);
    nn_params_pack(&p);
    Tensor *x = tensor_requires_grad(fx(&f, "gru", "in/x", dt), true);
    Tensor *h0 = tensor_requires_grad(fx(&f, "gru", "in/h0", dt), true);
    Tensor *hn = NULL;
    Tensor *out = nn_gru_forward(&g, x, h0, &hn);
    CHECK(out->ndim == 3 && out->shape[0] == cfg[0] && out->shape[1] == cfg[1] && out->shape[2] == cfg[3]);
    CHECK(hn && hn->ndim == 3 && hn->shape[0] == cfg[4]);
    double e = test_rel_err(out, fx(&f, "gru", "out", TENSOR_F64));
    CHECK_MSG(e < tol, "%s: out %g", tensor_dtype_name(dt), e);
    e = test_rel_err(hn, fx(&f, "gru", "h_n", TENSOR_F64));
    CHECK_MSG(e < tol, "%s: h_n %g", tensor_dtype_name(dt), e);
    Tensor *loss = tensor_add(tensor_sum_all(tensor_mul(out, fx(&f, "gru", "w_out", dt))),
                              tensor_sum_all(tensor_mul(hn, fx(&f, "gru", "w_hn", dt))));
    ag_backward(loss, NULL, false);
    e = test_rel_err(x->grad, fx(&f, "gru", "grad/x", TENSOR_F64));
    CHECK_MSG(e < tol, "grad x %g", e);
    e = test_rel_err(h0->grad, fx(&f, "gru", "grad/h0", TENSOR_F64));
    CHECK_MSG(e < tol, "grad h0 %g", e);
    check_param_grads(&f, "gru", &p, tol);
    nn_params_free(&p);
    oracle_free(&f);
}

TEST(nn_gru_vs_torch_f64) { gru_vs_torch(TENSOR_F64, 1e-12); }
TEST(nn_gru_vs_torch_f32) { gru_vs_torch(TENSOR_F32, 1e-5); }

TEST(nn_gru_cell_vs_torch) {
    OracleFile f;
    if (!load_gru_fixture(&f)) return;
    const OracleArray *ca = need(&f, "gru/config");
    if (!ca || ca->numel != 5) {
        oracle_free(&f);
        return;
    }
    int64_t cfg[5];
    memcpy(cfg, ca->data, sizeof cfg);
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 1);
    NnGruCell c;
    nn_gru_cell_init(&c, &p, NULL, cfg[2], cfg[3], true);
    load_sd(&f, "cell", &p, TENSOR_F64);
    Tensor *x = tensor_requires_grad(fx(&f, "cell", "in/x", TENSOR_F64), true);
    Tensor *h = tensor_requires_grad(fx(&f, "cell", "in/h", TENSOR_F64), true);
    Tensor *out = nn_gru_cell_forward(&c, x, h);
    double e = test_rel_err(out, fx(&f, "cell", "out", TENSOR_F64));
    CHECK_MSG(e < 1e-12, "out %g", e);
    ag_backward(tensor_sum_all(tensor_mul(out, fx(&f, "cell", "w", TENSOR_F64))), NULL, false);
    e = test_rel_err(x->grad, fx(&f, "cell", "grad/x", TENSOR_F64));
    CHECK_MSG(e < 1e-12, "grad x %g", e);
    e = test_rel_err(h->grad, fx(&f, "cell", "grad/h", TENSOR_F64));
    CHECK_MSG(e < 1e-12, "grad h %g", e);
    check_param_grads(&f, "cell", &p, 1e-12);
    nn_params_free(&p);
    oracle_free(&f);
}

/* ---- gradcheck ------------------------------------------------------------------------------- */

/* inputs: x, h0, then per layer weight_ih, weight_hh, bias_ih, bias_hh; output out and h_n */
static Tensor *fn_gru(int n, Tensor *const *in, void *user) {
    (void)n;
    int layers = *(int *)user;
    NnGru g = {.layers = layers, .in = in[0]->shape[2], .hidden = in[1]->shape[2]};
    for (int k = 0; k < layers; k++)
        g.layer[k] = (NnGruCell){.weight_ih = in[2 + 4 * k], .weight_hh = in[3 + 4 * k], .bias_ih = in[4 + 4 * k],
                                 .bias_hh = in[5 + 4 * k], .in = in[2 + 4 * k]->shape[1], .hidden = g.hidden};
    Tensor *hn;
    Tensor *out = nn_gru_forward(&g, in[0], in[1], &hn);
    return tensor_cat(2, (Tensor *[]){tensor_flatten(out, 0, -1), tensor_flatten(hn, 0, -1)}, 0);
}

TEST(nn_gru_gradcheck_f64) {
    int layers = 2;
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 5);
    NnGru g;
    nn_gru_init(&g, &p, "", 3, 4, layers, true);
    Tensor *in[10];
    TensorRng r = {.seed = 9};
    in[0] = tensor_requires_grad(tensor_randn_with(&r, TENSOR_SHAPE(2, 3, 3), TENSOR_F64), true);
    in[1] = tensor_requires_grad(tensor_mul_scalar(tensor_randn_with(&r, TENSOR_SHAPE(layers, 2, 4), TENSOR_F64), 0.5),
                                 true);
    /* weights scaled up from the init range so the gates leave their linear region */
    for (int k = 0; k < layers; k++) {
        const NnGruCell *c = &g.layer[k];
        Tensor *w[4] = {c->weight_ih, c->weight_hh, c->bias_ih, c->bias_hh};
        for (int j = 0; j < 4; j++)
            in[2 + 4 * k + j] = tensor_requires_grad(tensor_contiguous(tensor_mul_scalar(tensor_detach(w[j]), 3)), true);
    }
    AgGradcheckReport rep;
    CHECK_MSG(ag_gradcheck(fn_gru, 10, in, &layers, 1e-6, 1e-8, 1e-6, &rep),
              "input %d elem %lld analytic %.10g numeric %.10g", rep.bad_input, (long long)rep.bad_index, rep.analytic,
              rep.numeric);
    nn_params_free(&p);
}

/* ---- the fused layer against the composition of tensor ops --------------------------------------- */

/* The fused layer (tensor/cpu/cpu_rnn.c's gate kernels inside one custom-op node per layer) and
 * the tensor-op composition it replaces (what a backend without the kernels runs: here the CPU
 * table with them removed) give the same output, h_n and gradients of x, h0 and every weight;
 * and, with create_graph, the same second derivatives (the fused backward then recomposes). */
static void gru_run(const NnGru *g, NnParams *p, Tensor *x, Tensor *h0, bool twice, Tensor **res) {
    nn_params_zero_grad(p);
    x->grad = NULL;
    if (h0) h0->grad = NULL;
    Tensor *hn;
    Tensor *out = nn_gru_forward(g, x, h0, &hn);
    Tensor *w = tensor_sin(tensor_arange(0, (double)tensor_numel(out), 1, x->dtype));
    Tensor *loss = tensor_add(tensor_sum_all(tensor_mul(tensor_flatten(out, 0, -1), w)), tensor_sum_all(tensor_mul(hn, hn)));
    int k = 0;
    res[k++] = out, res[k++] = hn;
    if (!twice) {
        ag_backward(loss, NULL, false);
        res[k++] = x->grad, res[k++] = h0 ? h0->grad : NULL;
        for (int l = 0; l < g->layers; l++) {
            res[k++] = g->layer[l].weight_ih->grad, res[k++] = g->layer[l].weight_hh->grad;
            res[k++] = g->layer[l].bias_ih ? g->layer[l].bias_ih->grad : NULL;
        }
        return;
    }
    /* d/dW_hh of |dL/dx|²: a second derivative through the backward */
    Tensor *gx;
    ag_grad(1, &loss, NULL, 1, &x, &gx, true);
    Tensor *gw;
    ag_grad(1, (Tensor *[]){tensor_sum_all(tensor_mul(gx, gx))}, NULL, 1, &g->layer[0].weight_hh, &gw, false);
    res[k++] = gx, res[k++] = gw;
}

static void fused_vs_composed(TensorDType dt, bool bias, bool with_h0, int64_t T, bool twice, double tol) {
    NnParams p;
    nn_params_init(&p, NULL, dt, 11);
    NnGru g;
    nn_gru_init(&g, &p, "", 5, 6, 2, bias);
    TensorRng r = {.seed = 12};
    Tensor *x = tensor_requires_grad(tensor_randn_with(&r, TENSOR_SHAPE(3, T, 5), dt), true);
    Tensor *h0 = with_h0 ? tensor_requires_grad(tensor_randn_with(&r, TENSOR_SHAPE(2, 3, 6), dt), true) : NULL;
    Tensor *a[10] = {0}, *b[10] = {0};
    gru_run(&g, &p, x, h0, twice, a);
    TensorBackend plain = tensor_backend_cpu;
    plain.gru_step = NULL, plain.gru_step_backward = NULL;
    const TensorBackend *prev = tensor_backend_cpu_replace(&plain);
    gru_run(&g, &p, x, h0, twice, b);
    tensor_backend_cpu_replace(prev);
    for (int i = 0; i < 10; i++) {
        CHECK_MSG(!a[i] == !b[i], "result %d present on one path only", i);
        if (!a[i]) continue;
        double e = test_rel_err(a[i], b[i]);
        CHECK_MSG(e <= tol, "%s bias %d h0 %d T %lld%s: result %d differs by %g", tensor_dtype_name(dt), bias, with_h0,
                  (long long)T, twice ? " (second derivative)" : "", i, e);
    }
    nn_params_free(&p);
}

TEST(nn_gru_fused_matches_composed) {
    for (int bias = 0; bias < 2; bias++)
        for (int h0 = 0; h0 < 2; h0++)
            for (int64_t T = 1; T <= 6; T += 5) {
                fused_vs_composed(TENSOR_F64, bias, h0, T, false, 1e-13);
                fused_vs_composed(TENSOR_F32, bias, h0, T, false, 2e-6);
            }
    fused_vs_composed(TENSOR_F64, true, true, 4, true, 1e-12);
}

/* ---- long sequences, no h0 ------------------------------------------------------------------ */

/* 150 steps (more than one recorded cat takes, TENSOR_MAX_INPUTS) and h0 = NULL against the
 * cells stepped by hand from zeros; the gradient of x reaches the first step. */
TEST(nn_gru_long_sequence_matches_cells) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 6);
    NnGru g;
    nn_gru_init(&g, &p, "", 3, 5, 2, true);
    int64_t T = 150;
    TensorRng r = {.seed = 4};
    Tensor *x = tensor_requires_grad(tensor_randn_with(&r, TENSOR_SHAPE(2, T, 3), TENSOR_F64), true);
    Tensor *hn;
    Tensor *out = nn_gru_forward(&g, x, NULL, &hn);
    CHECK(out->shape[1] == T);
    Tensor *h[2] = {NULL, NULL};
    double worst = 0;
    for (int64_t t = 0; t < T; t++) {
        Tensor *xt = tensor_squeeze(tensor_narrow(x, 1, t, 1), 1);
        h[0] = nn_gru_cell_forward(&g.layer[0], xt, h[0]);
        h[1] = nn_gru_cell_forward(&g.layer[1], h[0], h[1]);
        double e = test_rel_err(tensor_squeeze(tensor_narrow(out, 1, t, 1), 1), h[1]);
        worst = e > worst ? e : worst;
    }
    CHECK_MSG(worst < 1e-14, "worst step %g", worst);
    CHECK(test_rel_err(tensor_squeeze(tensor_narrow(hn, 0, 0, 1), 0), h[0]) < 1e-14);
    CHECK(test_rel_err(tensor_squeeze(tensor_narrow(hn, 0, 1, 1), 0), h[1]) < 1e-14);
    ag_backward(tensor_sum_all(out), NULL, false);
    double g0 = tensor_item(tensor_sum_all(tensor_abs(tensor_narrow(x->grad, 1, 0, 1))));
    CHECK_MSG(g0 > 0 && isfinite(g0), "d out / d x_0 = %g", g0);
    nn_params_free(&p);
}

/* ---- checkpoint round trip ------------------------------------------------------------------ */

TEST(nn_gru_checkpoint_round_trip) {
    char dir[64] = "/tmp/anima-gru-XXXXXX", path[128], err[1024] = "";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/gru.h5", dir);
    NnParams a, b;
    NnGru ga, gb;
    nn_params_init(&a, NULL, TENSOR_F32, 1);
    nn_params_init(&b, NULL, TENSOR_F32, 2);
    nn_gru_init(&ga, &a, "rnn", 4, 8, 2, true);
    nn_gru_init(&gb, &b, "rnn", 4, 8, 2, true);
    nn_params_pack(&a), nn_params_pack(&b);
    TensorRng r = {.seed = 8};
    Tensor *x = tensor_randn_with(&r, TENSOR_SHAPE(3, 6, 4), TENSOR_F32);
    Tensor *ya = nn_gru_forward(&ga, x, NULL, NULL);
    CHECK(test_rel_err(nn_gru_forward(&gb, x, NULL, NULL), ya) > 1e-3); /* other seed, other weights */
    CHECK_MSG(optim_checkpoint_save(path, &a, NULL, NULL, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(optim_checkpoint_load(path, &b, NULL, true, NULL, err, sizeof err) == 0, "%s", err);
    Tensor *yb = nn_gru_forward(&gb, x, NULL, NULL);
    CHECK(memcmp(tensor_data_ptr(tensor_contiguous(ya)), tensor_data_ptr(tensor_contiguous(yb)),
                 sizeof(float) * (size_t)tensor_numel(ya)) == 0);
    /* a GRU of another depth does not load (strict: the l1 weights are missing) */
    NnParams c;
    NnGru gc;
    nn_params_init(&c, NULL, TENSOR_F32, 3);
    nn_gru_init(&gc, &c, "rnn", 4, 8, 3, true);
    nn_params_pack(&c);
    CHECK(optim_checkpoint_load(path, &c, NULL, true, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, "weight_ih_l2") != NULL, "%s", err);
    unlink(path);
    rmdir(dir);
    nn_params_free(&a), nn_params_free(&b), nn_params_free(&c);
}

/* ---- backward cost linear in the sequence length ---------------------------------------------- */

/* Bytes the backward allocates (deterministic, unlike a timing) for T = 64 and 256: ×4 when
 * linear in T. Slicing every step out of one (B, T, ·) tensor makes each slice's backward scatter
 * into a tensor of the whole length, ×10.6 here (and 8 s instead of 0.3 s for T = 400, B = 8,
 * H = 64). */
static size_t backward_bytes(const NnGru *g, int64_t T) {
    TensorScope *s = tensor_scope_begin();
    TensorRng r = {.seed = 2};
    Tensor *x = tensor_requires_grad(tensor_randn_with(&r, TENSOR_SHAPE(2, T, 3), TENSOR_F64), true);
    Tensor *y = tensor_sum_all(nn_gru_forward(g, x, NULL, NULL));
    size_t b0 = tensor_scope_bytes(s);
    ag_backward(y, NULL, false);
    size_t b = tensor_scope_bytes(s) - b0;
    tensor_scope_end(s);
    return b;
}

TEST(nn_gru_backward_linear_in_length) {
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F64, 1);
    NnGru g;
    nn_gru_init(&g, &p, "", 3, 5, 2, true);
    double ratio = (double)backward_bytes(&g, 256) / (double)backward_bytes(&g, 64);
    CHECK_MSG(ratio < 5, "backward allocates %.1fx as much for 4x the steps", ratio);
    nn_params_free(&p);
}
