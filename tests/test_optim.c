/* tests/test_optim.c — optim/: ConFIG against an independent Gram-Schmidt computation and its
 * defining properties; M-ConFIG's moments; SGD / Adam / AdamW, the warm-up + cosine schedule and
 * clip_grad_norm_ replayed against PyTorch trajectories (tests/oracle/make_optim_fixtures.py
 * writes tests/oracle/fixtures/optim_*.txt); and a small MLP regression trained end to end. */
#include <stdlib.h>
#include <string.h>

#include "nn/functional.h"
#include "optim/optim.h"
#include "tests/test.h"

/* ---- ConFIG reference ------------------------------------------------------------------------
 * Written independently of optim/conflict_free.c (which goes through the Gram matrix and its
 * eigendecomposition): modified Gram-Schmidt on the unit vectors gives Ûᵀ = Q R (Q: P×K with
 * orthonormal columns, R upper triangular). The minimum-norm solution of Û x = 1 lies in
 * range(Q), x = Q y, and Û x = Rᵀ Qᵀ Q y = Rᵀ y = 1 is a forward substitution. Full rank only. */
static void config_reference(int k, int64_t n, const double *const *g, double *out) {
    double *q = calloc((size_t)(k * n), sizeof(double)), R[8][8] = {{0}}, y[8];
    for (int i = 0; i < k; i++) {
        double nn = 0;
        for (int64_t j = 0; j < n; j++) nn += g[i][j] * g[i][j];
        double *qi = q + (size_t)i * (size_t)n;
        for (int64_t j = 0; j < n; j++) qi[j] = g[i][j] / sqrt(nn);
        for (int c = 0; c < i; c++) {
            double *qc = q + (size_t)c * (size_t)n, d = 0;
            for (int64_t j = 0; j < n; j++) d += qc[j] * qi[j];
            R[c][i] = d;
            for (int64_t j = 0; j < n; j++) qi[j] -= d * qc[j];
        }
        double r = 0;
        for (int64_t j = 0; j < n; j++) r += qi[j] * qi[j];
        R[i][i] = sqrt(r);
        for (int64_t j = 0; j < n; j++) qi[j] /= R[i][i];
    }
    for (int i = 0; i < k; i++) { /* Rᵀ y = 1 */
        double s = 1;
        for (int c = 0; c < i; c++) s -= R[c][i] * y[c];
        y[i] = s / R[i][i];
    }
    double xx = 0;
    for (int64_t j = 0; j < n; j++) {
        double x = 0;
        for (int i = 0; i < k; i++) x += q[(size_t)i * (size_t)n + (size_t)j] * y[i];
        out[j] = x;
        xx += x * x;
    }
    double proj = 0; /* Σ g_i·ĝ */
    for (int i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) proj += g[i][j] * out[j] / sqrt(xx);
    for (int64_t j = 0; j < n; j++) out[j] = proj * out[j] / sqrt(xx);
    free(q);
}

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += a[j] * b[j];
    return s;
}

static Tensor *randn64(int64_t n, uint64_t stream) {
    TensorRng r = {.seed = 99, .stream = stream};
    return tensor_randn_with(&r, 1, &n, TENSOR_F64);
}

/* K random gradients of length n; g1 is made to conflict with g0 (negative inner product). */
static void conflicting_grads(int k, int64_t n, Tensor **g) {
    for (int i = 0; i < k; i++) g[i] = randn64(n, 10 + (uint64_t)i);
    if (k >= 2) g[1] = tensor_add(tensor_mul_scalar(g[0], -0.6), tensor_mul_scalar(g[1], 0.8));
    if (k >= 3) g[2] = tensor_mul_scalar(g[2], 3.0); /* different scales */
}

static void check_config_case(int k, int64_t n) {
    Tensor *g[8];
    conflicting_grads(k, n, g);
    const double *gp[8];
    for (int i = 0; i < k; i++) gp[i] = tensor_f64(g[i]);
    CHECK(dot(gp[0], gp[1], n) < -0.3 * sqrt(dot(gp[0], gp[0], n) * dot(gp[1], gp[1], n)));

    Tensor *out = tensor_zeros(1, &n, TENSOR_F64);
    optim_config(k, g, out);
    double *ref = malloc(sizeof(double) * (size_t)n);
    config_reference(k, n, gp, ref);
    Tensor *reft = tensor_from_data(1, &n, TENSOR_F64, ref);
    double err = test_rel_err(out, reft);
    CHECK_MSG(err < 1e-10, "K=%d: ConFIG vs Gram-Schmidt reference: rel err %.3g", k, err);

    /* properties: no loss increases to first order, and all improve at the same rate */
    const double *o = tensor_f64(out);
    double on = sqrt(dot(o, o, n)), p0 = 0;
    for (int i = 0; i < k; i++) {
        double gi = dot(gp[i], o, n);
        CHECK_MSG(gi >= 0, "K=%d: g_%d . out = %g < 0", k, i, gi);
        double pi = gi / (on * sqrt(dot(gp[i], gp[i], n))); /* ĝ·û_i */
        if (i == 0) p0 = pi;
        CHECK_MSG(fabs(pi - p0) <= 1e-10 * fabs(p0), "K=%d: ĝ.û_%d = %.15g vs ĝ.û_0 = %.15g", k, i, pi, p0);
    }
    CHECK(p0 > 0);
    free(ref);
}

TEST(optim_config_k2_matches_reference_and_is_conflict_free) { check_config_case(2, 1000); }
TEST(optim_config_k3_matches_reference_and_is_conflict_free) { check_config_case(3, 1000); }
/* above optim's OpenMP threshold: the threaded reduction of the Gram entries */
TEST(optim_config_k4_large_threaded) { check_config_case(4, 100003); }

TEST(optim_config_k1_is_identity) {
    int64_t n = 1000;
    Tensor *g = randn64(n, 3), *out = tensor_zeros(1, &n, TENSOR_F64);
    optim_config(1, &g, out);
    CHECK(test_rel_err(out, g) < 1e-14);
}

TEST(optim_config_zero_gradient_is_ignored) {
    int64_t n = 1000;
    Tensor *g[3];
    conflicting_grads(2, n, g);
    Tensor *two = tensor_zeros(1, &n, TENSOR_F64), *three = tensor_zeros(1, &n, TENSOR_F64);
    optim_config(2, g, two);
    Tensor *g3[3] = {g[0], tensor_zeros(1, &n, TENSOR_F64), g[1]};
    optim_config(3, g3, three);
    CHECK_MSG(test_rel_err(three, two) < 1e-12, "rel err %g", test_rel_err(three, two));
    /* all zero: a zero direction, not NaN */
    Tensor *z[2] = {tensor_zeros(1, &n, TENSOR_F64), tensor_zeros(1, &n, TENSOR_F64)};
    Tensor *out = tensor_full(1, &n, 7.0, TENSOR_F64);
    optim_config(2, z, out);
    CHECK(tensor_item(tensor_sum_all(tensor_abs(out))) == 0);
    /* exactly opposite gradients: no direction improves both, so 0 */
    Tensor *opp[2] = {g[0], tensor_neg(g[0])};
    optim_config(2, opp, out);
    CHECK(tensor_item(tensor_sum_all(tensor_abs(out))) == 0);
}

TEST(optim_config_out_may_alias_and_f32_agrees) {
    int64_t n = 1000;
    Tensor *g[3];
    conflicting_grads(3, n, g);
    Tensor *out = tensor_zeros(1, &n, TENSOR_F64);
    optim_config(3, g, out);
    Tensor *ga[3] = {tensor_clone(g[0]), g[1], g[2]};
    optim_config(3, ga, ga[0]); /* written over the first input */
    CHECK(test_rel_err(ga[0], out) < 1e-15);
    Tensor *gf[3] = {tensor_cast(g[0], TENSOR_F32), tensor_cast(g[1], TENSOR_F32), tensor_cast(g[2], TENSOR_F32)};
    Tensor *of = tensor_zeros(1, &n, TENSOR_F32);
    optim_config(3, gf, of);
    CHECK_MSG(test_rel_err(of, out) < 1e-5, "f32 rel err %g", test_rel_err(of, out));
}

/* M-ConFIG: bias-corrected first moments; a loss not yet seen does not take part. */
TEST(optim_mconfig_moments_and_bias_correction) {
    const int64_t n = 500;
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, TENSOR_F64, 1);
    nn_param(&p, NULL, "w", 1, &n, NN_INIT_ZEROS, 0);
    nn_params_pack(&p);
    Tensor *g[2], *g0b = randn64(n, 77);
    conflicting_grads(2, n, g);
    OptimMConfig m;
    optim_mconfig_init(&m, &p, 2, 0.9);
    Tensor *out = tensor_zeros(1, &n, TENSOR_F64), *expect = tensor_zeros(1, &n, TENSOR_F64);
    optim_mconfig_update(&m, 0, g[0], out); /* only loss 0 seen: its corrected moment is g0 */
    CHECK(test_rel_err(out, g[0]) < 1e-12);
    optim_mconfig_update(&m, 1, g[1], out); /* both seen once: ConFIG of the raw gradients */
    optim_config(2, g, expect);
    CHECK(test_rel_err(out, expect) < 1e-12);
    optim_mconfig_update(&m, 0, g0b, out); /* m0 = (0.9·0.1 g0 + 0.1 g0') / (1 − 0.9²) */
    Tensor *m0 = tensor_mul_scalar(tensor_add(tensor_mul_scalar(g[0], 0.09), tensor_mul_scalar(g0b, 0.1)), 1 / 0.19);
    Tensor *mm[2] = {m0, g[1]};
    optim_config(2, mm, expect);
    CHECK_MSG(test_rel_err(out, expect) < 1e-12, "rel err %g", test_rel_err(out, expect));
    CHECK(m.count[0] == 2 && m.count[1] == 1);
    optim_mconfig_free(&m);
    nn_params_free(&p);
    tensor_scope_end(scope);
}

/* ---- PyTorch trajectories ------------------------------------------------------------------- */

static const char *fixture(const char *file, char *buf, size_t n) {
    const char *dir = getenv("ANIMA_ORACLE_DIR");
    snprintf(buf, n, "%s/%s", dir && *dir ? dir : "tests/oracle/fixtures", file);
    return buf;
}

/* numpy.savetxt text: '#' comment lines, then rows of whitespace-separated numbers. Returns
 * the number of rows (all of `cols` values) read into v, or -1 with a test failure. */
static int read_rows(const char *file, int cols, int max_rows, double *v) {
    char path[512], line[8192];
    FILE *f = fopen(fixture(file, path, sizeof path), "r");
    if (!f) {
        test_fail_at(__FILE__, __LINE__, "%s: cannot open (regenerate with tests/oracle/make_optim_fixtures.py)", path);
        return -1;
    }
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (rows == max_rows) break;
        char *s = line, *end;
        for (int c = 0; c < cols; c++, s = end) {
            v[rows * cols + c] = strtod(s, &end);
            if (end == s) {
                test_fail_at(__FILE__, __LINE__, "%s: row %d has fewer than %d numbers", path, rows, cols);
                fclose(f);
                return -1;
            }
        }
        rows++;
    }
    fclose(f);
    return rows;
}

#define QN 12    /* parameters of the quadratic */
#define QSTEPS 10

typedef struct {
    const char *file;
    OptimConfig cfg;
    bool sched, clip;
} TrajCase;

/* Replays one case of make_optim_fixtures.py: θ packed as a 3×3 weight and a 3-vector bias,
 * gradient Aθ − b, optional clip (max norm 1) and schedule (peak 0.1, floor 0.01, warm-up 3,
 * total 8); compares lr, pre-clip norm and θ after every step. */
static void replay(const TrajCase *c) {
    double prob[(QN + 2) * QN], traj[QSTEPS * (QN + 2)];
    if (read_rows("optim_problem.txt", QN, QN + 2, prob) != QN + 2) return;
    if (read_rows(c->file, QN + 2, QSTEPS, traj) != QSTEPS) {
        test_fail_at(__FILE__, __LINE__, "%s: expected %d rows", c->file, QSTEPS);
        return;
    }
    const double *theta0 = prob, *b = prob + QN, *A = prob + 2 * QN;
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, TENSOR_F64, 1);
    nn_param(&p, NULL, "weight", TENSOR_SHAPE(3, 3), NN_INIT_ZEROS, 0);
    nn_param(&p, NULL, "bias", TENSOR_SHAPE(3), NN_INIT_ZEROS, 0);
    nn_params_pack(&p);
    double *th = tensor_f64(p.flat), *g = tensor_f64(p.flat_grad);
    memcpy(th, theta0, sizeof(double) * QN);
    Optim o;
    optim_init(&o, &p, &c->cfg);
    OptimSchedule s = {.peak = c->cfg.lr, .floor = 0.01, .warmup = 3, .total = 8};
    double worst = 0;
    for (int step = 0; step < QSTEPS; step++) {
        for (int i = 0; i < QN; i++) {
            double r = -b[i];
            for (int j = 0; j < QN; j++) r += A[i * QN + j] * th[j];
            g[i] = r;
        }
        const double *want = traj + step * (QN + 2);
        if (c->clip) {
            double norm = optim_clip_grad_norm(&p, 1.0);
            CHECK_MSG(fabs(norm - want[1]) <= 1e-12 * want[1], "%s step %d: grad norm %.17g vs torch %.17g", c->file,
                      step, norm, want[1]);
        }
        double lr = c->sched ? optim_schedule_lr(&s, step) : c->cfg.lr;
        CHECK_MSG(fabs(lr - want[0]) <= 1e-14 * want[0], "%s step %d: lr %.17g vs torch %.17g", c->file, step, lr,
                  want[0]);
        optim_step(&o, lr);
        double scale = 0, err = 0;
        for (int i = 0; i < QN; i++) {
            scale = fmax(scale, fabs(want[2 + i]));
            err = fmax(err, fabs(th[i] - want[2 + i]));
        }
        worst = fmax(worst, err / scale);
    }
    /* the f64 replay agrees to ~1e-14; 1e-12 is tight enough to catch e.g. ε added inside the
     * square root or bias corrections off by one step, which move θ by far less than 1e-6 */
    CHECK_MSG(worst < 1e-12, "%s: θ differs from torch by %.3g relative", c->file, worst);
    CHECK(o.step == QSTEPS);
    nn_params_free(&p);
    tensor_scope_end(scope);
}

TEST(optim_sgd_matches_torch) {
    OptimConfig c = optim_defaults(OPTIM_SGD);
    c.lr = 0.1;
    replay(&(TrajCase){"optim_sgd_plain.txt", c, false, false});
}

TEST(optim_sgd_momentum_matches_torch) {
    OptimConfig c = optim_defaults(OPTIM_SGD);
    c.lr = 0.05, c.momentum = 0.9, c.weight_decay = 0.01;
    replay(&(TrajCase){"optim_sgd_momentum.txt", c, false, false});
    c.weight_decay = 0, c.nesterov = true;
    replay(&(TrajCase){"optim_sgd_nesterov.txt", c, false, false});
}

TEST(optim_adam_matches_torch) {
    OptimConfig c = optim_defaults(OPTIM_ADAM);
    c.lr = 0.05, c.weight_decay = 0.01;
    replay(&(TrajCase){"optim_adam.txt", c, false, false});
}

TEST(optim_adamw_schedule_clip_matches_torch) {
    OptimConfig c = optim_defaults(OPTIM_ADAMW);
    c.lr = 0.1, c.beta1 = 0.8, c.beta2 = 0.99, c.eps = 1e-6, c.weight_decay = 0.1;
    replay(&(TrajCase){"optim_adamw_sched.txt", c, true, true});
}

TEST(optim_defaults_are_torch_defaults) {
    OptimConfig a = optim_defaults(OPTIM_ADAM), w = optim_defaults(OPTIM_ADAMW);
    OptimConfig s = optim_defaults(OPTIM_SGD);
    CHECK(a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.eps == 1e-8 && a.weight_decay == 0);
    CHECK(w.lr == 1e-3 && w.beta1 == 0.9 && w.beta2 == 0.999 && w.eps == 1e-8 && w.weight_decay == 1e-2);
    CHECK(s.momentum == 0 && !s.nesterov && s.weight_decay == 0);
}

TEST(optim_schedule_warmup_cosine_floor) {
    OptimSchedule s = {.peak = 5e-4, .floor = 5e-5, .warmup = 10, .total = 110};
    CHECK_NEAR(optim_schedule_lr(&s, 0), 5e-5, 1e-18);
    CHECK_NEAR(optim_schedule_lr(&s, 9), 5e-4, 1e-18);
    CHECK_NEAR(optim_schedule_lr(&s, 10), 5e-4, 1e-18);
    CHECK_NEAR(optim_schedule_lr(&s, 60), 0.5 * (5e-4 + 5e-5), 1e-18); /* half way: cos(π/2) = 0 */
    CHECK_NEAR(optim_schedule_lr(&s, 110), 5e-5, 0);
    CHECK_NEAR(optim_schedule_lr(&s, 1000), 5e-5, 0);
    for (int64_t t = 10; t < 110; t++) CHECK(optim_schedule_lr(&s, t + 1) <= optim_schedule_lr(&s, t));
    OptimSchedule nw = {.peak = 1, .floor = 0, .warmup = 0, .total = 4};
    CHECK_NEAR(optim_schedule_lr(&nw, 0), 1, 0);
}

TEST(optim_clip_grad_norm_only_shrinks) {
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, TENSOR_F32, 1);
    nn_param(&p, NULL, "a", TENSOR_SHAPE(2), NN_INIT_ZEROS, 0);
    nn_param(&p, NULL, "b", TENSOR_SHAPE(1), NN_INIT_ZEROS, 0);
    nn_params_pack(&p);
    float *g = tensor_f32(p.flat_grad);
    g[0] = 3, g[1] = 0, g[2] = 4;
    CHECK_NEAR(optim_clip_grad_norm(&p, 10), 5, 1e-6);
    CHECK(g[0] == 3 && g[2] == 4);
    CHECK_NEAR(optim_clip_grad_norm(&p, 1), 5, 1e-6);
    CHECK_NEAR(g[0], 3 / (5 + 1e-6), 1e-7);
    CHECK_NEAR(g[2], 4 / (5 + 1e-6), 1e-7);
    nn_params_free(&p);
    tensor_scope_end(scope);
}

TEST(optim_clip_grad_norm_large_threaded) {
    const int64_t n = 100003;
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, TENSOR_F64, 1);
    nn_param(&p, NULL, "w", 1, &n, NN_INIT_ZEROS, 0);
    nn_params_pack(&p);
    tensor_copy_(p.flat_grad, randn64(n, 5));
    double *g = tensor_f64(p.flat_grad), ss = 0;
    for (int64_t j = 0; j < n; j++) ss += g[j] * g[j];
    Tensor *before = tensor_clone(p.flat_grad);
    double norm = optim_clip_grad_norm(&p, 2.0);
    CHECK_NEAR(norm, sqrt(ss), 1e-12 * sqrt(ss));
    CHECK(test_rel_err(p.flat_grad, tensor_mul_scalar(before, 2.0 / (norm + 1e-6))) < 1e-15);
    nn_params_free(&p);
    tensor_scope_end(scope);
}

/* ---- end to end: a 2-64-64-1 tanh MLP fits y = sin(2x₀)·cos(x₁) on 256 fixed points ------- */
TEST(optim_mlp_regression_loss_drops_100x) {
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, TENSOR_F32, 42);
    Tensor *w1 = nn_param(&p, "net.0", "weight", TENSOR_SHAPE(64, 2), NN_INIT_KAIMING_UNIFORM, 0);
    Tensor *b1 = nn_param(&p, "net.0", "bias", TENSOR_SHAPE(64), NN_INIT_KAIMING_UNIFORM, 0);
    Tensor *w2 = nn_param(&p, "net.2", "weight", TENSOR_SHAPE(64, 64), NN_INIT_KAIMING_UNIFORM, 0);
    Tensor *b2 = nn_param(&p, "net.2", "bias", TENSOR_SHAPE(64), NN_INIT_KAIMING_UNIFORM, 0);
    Tensor *w3 = nn_param(&p, "net.4", "weight", TENSOR_SHAPE(1, 64), NN_INIT_KAIMING_UNIFORM, 0);
    Tensor *b3 = nn_param(&p, "net.4", "bias", TENSOR_SHAPE(1), NN_INIT_KAIMING_UNIFORM, 0);
    nn_params_pack(&p);

    TensorRng r = {.seed = 3, .stream = 1};
    Tensor *x = tensor_add_scalar(tensor_mul_scalar(tensor_rand_with(&r, TENSOR_SHAPE(256, 2), TENSOR_F32), 3), -1.5);
    Tensor *x0 = tensor_narrow(x, 1, 0, 1), *x1 = tensor_narrow(x, 1, 1, 1);
    Tensor *y = tensor_mul(tensor_sin(tensor_mul_scalar(x0, 2)), tensor_cos(x1));

    OptimConfig cfg = optim_defaults(OPTIM_ADAMW);
    Optim o;
    optim_init(&o, &p, &cfg);
    const int steps = test_quick() ? 300 : 400; /* 300 steps: ~170x, 400: ~290x */
    OptimSchedule s = {.peak = 1e-2, .floor = 1e-4, .warmup = steps / 100, .total = steps};
    double first = 0, last = 0;
    for (int t = 0; t < steps; t++) {
        TensorScope *st = tensor_scope_begin();
        nn_params_zero_grad(&p);
        Tensor *h = tensor_tanh(nn_linear(x, w1, b1));
        h = tensor_tanh(nn_linear(h, w2, b2));
        Tensor *d = tensor_sub(nn_linear(h, w3, b3), y);
        Tensor *loss = tensor_mean_all(tensor_mul(d, d));
        ag_backward(loss, NULL, false);
        double l = tensor_item(loss);
        if (t == 0) first = l;
        last = l;
        optim_clip_grad_norm(&p, 1.0);
        optim_step(&o, optim_schedule_lr(&s, t));
        tensor_scope_end(st);
    }
    CHECK_MSG(last * 100 <= first, "loss %.4g -> %.4g (%.1fx)", first, last, first / last);
    nn_params_free(&p);
    tensor_scope_end(scope);
}
