/* tests/test_gs4d.c — deformable Gaussians (models/gs4d/): the ARAP + distance regularizer (zero
 * under any rigid motion of each cluster, f64 finite-difference gradcheck, kNN against brute
 * force, the rotation fit), the deformation path's gradients, a tiny synthetic sequence that must
 * train to a stated held-out PSNR, and resume reproducing an uninterrupted run. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autograd/gradcheck.h"
#include "base/clock.h"
#include "base/h5file.h"
#include "datasets/motion/dnerf.h"
#include "datasets/render/image.h"
#include "models/gaussians/loss.h"
#include "models/gs4d/arap.h"
#include "models/gaussians/fit.h"
#include "models/gs4d/gs4d.h"
#include "models/gs4d/eval.h"
#include "models/gs4d/run.h"
#include "models/gs4d/synth.h"
#include "models/skelebones/cluster.h"
#include "optim/train.h"
#include "tests/gs4d_test_util.h"
#include "tests/test.h"

static uint64_t lcg_state = 88172645463325252ull;
static double urand(void) { /* xorshift64: deterministic test data */
    lcg_state ^= lcg_state << 13, lcg_state ^= lcg_state >> 7, lcg_state ^= lcg_state << 17;
    return (double)(lcg_state >> 11) * (1.0 / 9007199254740992.0);
}

static void random_rotation(double R[9]) {
    double q[4], n = 0;
    for (int a = 0; a < 4; a++) q[a] = urand() - 0.5, n += q[a] * q[a];
    n = sqrt(n);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                   2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                   2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
    memcpy(R, r, sizeof r);
}

/* ---- kNN --------------------------------------------------------------------------------------- */

static void knn_brute(const float *x, int64_t n, const int32_t *lab, int k, int32_t *nbr) {
    for (int64_t i = 0; i < n; i++) {
        int nb = 0;
        double bd[64];
        int32_t bj[64];
        for (int64_t j = 0; j < n; j++) {
            if (j == i || (lab && lab[j] != lab[i])) continue;
            double d = 0;
            for (int a = 0; a < 3; a++) {
                double t = (double)x[3 * i + a] - (double)x[3 * j + a];
                d += t * t;
            }
            if (nb == k && !(d < bd[k - 1] || (d == bd[k - 1] && j < bj[k - 1]))) continue;
            int p = nb < k ? nb++ : k - 1;
            while (p > 0 && (d < bd[p - 1] || (d == bd[p - 1] && j < bj[p - 1]))) bd[p] = bd[p - 1], bj[p] = bj[p - 1], p--;
            bd[p] = d, bj[p] = (int32_t)j;
        }
        for (int s = 0; s < k; s++) nbr[i * k + s] = s < nb ? bj[s] : -1;
    }
}

TEST(gs4d_knn_matches_brute_force) {
    /* three clouds: volume-filling, a thin sheet (cells far from cubic), and with duplicates and
     * a tiny cluster (fewer members than k: −1 slots) */
    for (int trial = 0; trial < 3; trial++) {
        int64_t n = trial == 2 ? 300 : 700;
        int k = 6;
        float *x = malloc(sizeof(float) * 3 * (size_t)n);
        int32_t *lab = malloc(sizeof(int32_t) * (size_t)n), *a = malloc(sizeof(int32_t) * (size_t)n * k),
                *b = malloc(sizeof(int32_t) * (size_t)n * k);
        for (int64_t i = 0; i < n; i++) {
            x[3 * i] = (float)urand() * 3, x[3 * i + 1] = (float)urand(), x[3 * i + 2] = trial == 1 ? (float)urand() * 1e-3f : (float)urand();
            lab[i] = trial == 0 ? 0 : (int32_t)(i % 3);
            if (trial == 2 && i % 10 == 0 && i > 0) memcpy(x + 3 * i, x + 3 * (i - 1), sizeof(float) * 3);
            if (trial == 2 && i < 3) lab[i] = 7; /* a cluster of 3 points */
        }
        const int32_t *L = trial == 0 ? NULL : lab;
        gs4d_knn(x, n, L, k, a);
        knn_brute(x, n, L, k, b);
        int bad = 0;
        for (int64_t i = 0; i < n * k; i++) bad += a[i] != b[i];
        CHECK_MSG(bad == 0, "trial %d: %d of %lld neighbor slots differ from brute force", trial, bad, (long long)(n * k));
        if (trial == 2) CHECK(a[0 * k + 2] == -1 && a[0 * k + 1] >= 0 && a[0 * k + 1] < 3);
        free(x), free(lab), free(a), free(b);
    }
}

/* ---- evaluation metrics --------------------------------------------------------------------------- */

TEST(gs4d_nearest_chamfer_rigidity) {
    int64_t nr = 500, nq = 300;
    float *r = malloc(sizeof(float) * 3 * (size_t)nr), *q = malloc(sizeof(float) * 3 * (size_t)nq);
    for (int64_t i = 0; i < nr; i++)
        for (int a = 0; a < 3; a++) r[3 * i + a] = (float)(a == 2 ? 0.01 * urand() : urand());
    for (int64_t i = 0; i < nq; i++) /* some queries far outside the references' box */
        for (int a = 0; a < 3; a++) q[3 * i + a] = (float)(i % 7 == 0 ? 4 * urand() - 2 : urand());
    double *d = malloc(sizeof(double) * (size_t)nq);
    gs4d_nearest_dist(r, nr, q, nq, d);
    int bad = 0;
    for (int64_t i = 0; i < nq; i++) {
        double best = INFINITY;
        for (int64_t j = 0; j < nr; j++) {
            double s = 0;
            for (int a = 0; a < 3; a++) s += ((double)q[3 * i + a] - r[3 * j + a]) * ((double)q[3 * i + a] - r[3 * j + a]);
            best = fmin(best, s);
        }
        bad += fabs(sqrt(best) - d[i]) > 1e-12;
    }
    CHECK_MSG(bad == 0, "%d of %lld nearest distances differ from brute force", bad, (long long)nq);
    CHECK_NEAR(gs4d_chamfer(r, nr, r, nr), 0.0, 0);
    /* rigidity: zero for a rigid motion, positive for a bend */
    int k = 6;
    int32_t *nbr = malloc(sizeof(int32_t) * (size_t)nr * k);
    gs4d_knn(r, nr, NULL, k, nbr);
    float *traj = malloc(sizeof(float) * 3 * (size_t)nr * 2);
    double Q[9];
    random_rotation(Q);
    for (int64_t i = 0; i < nr; i++)
        for (int a = 0; a < 3; a++) {
            traj[3 * i + a] = (float)(Q[3 * a] * r[3 * i] + Q[3 * a + 1] * r[3 * i + 1] + Q[3 * a + 2] * r[3 * i + 2] + 0.5);
            traj[3 * (nr + i) + a] = r[3 * i + a] + (a == 2 ? (float)(0.5 * r[3 * i] * r[3 * i] * 10) : 0.f);
        }
    double e_rigid = gs4d_rigidity_error(traj, 1, r, nr, nbr, k), e_bend = gs4d_rigidity_error(traj + 3 * nr, 1, r, nr, nbr, k);
    CHECK_MSG(e_rigid < 1e-5 && e_bend > 1e-3, "rigid %g, bend %g", e_rigid, e_bend);
    free(r), free(q), free(d), free(nbr), free(traj);
}

/* ---- the rotation fit --------------------------------------------------------------------------- */

TEST(gs4d_best_rotation_recovers_rotations) {
    for (int trial = 0; trial < 200; trial++) {
        double Q[9], a[3 * 8], b[3 * 8], R[9];
        random_rotation(Q);
        int n = 2 + trial % 6;
        bool planar = trial % 4 == 1, improper = trial % 4 == 2;
        for (int m = 0; m < n; m++) {
            for (int c = 0; c < 3; c++) a[3 * m + c] = urand() - 0.5;
            if (planar) a[3 * m + 2] = 0;
        }
        if (n == 2 && !planar) a[3] = 2 * a[0], a[4] = 2 * a[1], a[5] = 2 * a[2]; /* collinear */
        for (int m = 0; m < n; m++)
            for (int r = 0; r < 3; r++) {
                b[3 * m + r] = 0;
                for (int c = 0; c < 3; c++) b[3 * m + r] += Q[3 * r + c] * a[3 * m + c];
                if (improper) b[3 * m + r] = -b[3 * m + r]; /* a reflection: the best rotation must still be proper */
            }
        gs4d_best_rotation(a, b, n, R);
        double det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
        CHECK_NEAR(det, 1.0, 1e-9);
        double orth = 0;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double s = 0;
                for (int k = 0; k < 3; k++) s += R[3 * r + k] * R[3 * c + k];
                orth = fmax(orth, fabs(s - (r == c)));
            }
        CHECK_MSG(orth < 1e-9, "trial %d: R Rᵀ − I up to %g", trial, orth);
        if (!improper) { /* R maps every a onto its b (collinear/planar sets: R need not equal Q) */
            double res = 0;
            for (int m = 0; m < n; m++)
                for (int r = 0; r < 3; r++) {
                    double s = 0;
                    for (int c = 0; c < 3; c++) s += R[3 * r + c] * a[3 * m + c];
                    res = fmax(res, fabs(s - b[3 * m + r]));
                }
            CHECK_MSG(res < 1e-8, "trial %d (n %d%s): residual %g", trial, n, planar ? ", planar" : "", res);
        }
    }
}

/* ---- the ARAP loss ------------------------------------------------------------------------------ */

TEST(gs4d_arap_zero_under_rigid_cluster_motion) {
    TensorScope *sc = tensor_scope_begin();
    int64_t n = 240;
    int k = 8;
    float *xc = malloc(sizeof(float) * 3 * (size_t)n), *xf = malloc(sizeof(float) * 3 * (size_t)n);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)n), *nbr = malloc(sizeof(int32_t) * (size_t)n * k);
    double Q[3][9], T[3][3];
    for (int c = 0; c < 3; c++) {
        random_rotation(Q[c]);
        for (int a = 0; a < 3; a++) T[c][a] = 3 * (urand() - 0.5);
    }
    for (int64_t i = 0; i < n; i++) {
        lab[i] = (int32_t)(i % 3);
        for (int a = 0; a < 3; a++) xc[3 * i + a] = (float)(urand() * 2 - 1);
    }
    gs4d_knn(xc, n, lab, k, nbr);
    for (int dt = 0; dt < 2; dt++) {
        TensorDType t = dt ? TENSOR_F64 : TENSOR_F32;
        /* each cluster moved by its own rotation and translation: computed in f64 */
        double *fc = malloc(sizeof(double) * 3 * (size_t)n), *ff = malloc(sizeof(double) * 3 * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            int c = lab[i];
            for (int r = 0; r < 3; r++) {
                fc[3 * i + r] = xc[3 * i + r];
                ff[3 * i + r] = T[c][r];
                for (int q = 0; q < 3; q++) ff[3 * i + r] += Q[c][3 * r + q] * xc[3 * i + q];
            }
        }
        Tensor *tc = tensor_from_f64(2, (int64_t[]){n, 3}, t, fc), *tf = tensor_from_f64(2, (int64_t[]){n, 3}, t, ff);
        double l = tensor_item(gs4d_arap_loss(tf, tc, nbr, k));
        /* edges are ~0.2 long: a 1% non-rigid change would give ~4e-6; f32 rounding of the moved
         * points ~1e-13 */
        CHECK_MSG(l < (dt ? 1e-20 : 1e-11), "%s: loss %g under rigid motion", dt ? "f64" : "f32", l);
        /* and a non-rigid motion is penalized: one cluster sheared by 5% */
        for (int64_t i = 0; i < n; i++)
            if (lab[i] == 1) ff[3 * i] += 0.05 * fc[3 * i + 1];
        tf = tensor_from_f64(2, (int64_t[]){n, 3}, t, ff);
        double l2 = tensor_item(gs4d_arap_loss(tf, tc, nbr, k));
        CHECK_MSG(l2 > 1e-6, "%s: loss %g under a shear", dt ? "f64" : "f32", l2);
        free(fc), free(ff);
    }
    free(xc), free(xf), free(lab), free(nbr);
    tensor_scope_end(sc);
}

typedef struct {
    const int32_t *nbr;
    int k;
} ArapCtx;

static Tensor *fn_arap(int n, Tensor *const *in, void *user) {
    (void)n;
    const ArapCtx *c = user;
    return gs4d_arap_loss(in[0], in[1], c->nbr, c->k);
}

/* R_i is recomputed at every perturbed point by the finite differences but held constant by the
 * analytic gradient: the two agree because R_i minimizes exactly the first term's sum over i's
 * pairs, so its own variation contributes nothing to first order (the envelope theorem) — the
 * check is exact, not approximate. */
TEST(gs4d_arap_gradcheck) {
    TensorScope *sc = tensor_scope_begin();
    int64_t n = 14;
    int k = 4;
    double xc[3 * 14], xf[3 * 14];
    float xcf[3 * 14];
    int32_t nbr[14 * 4], lab[14];
    double Q[9];
    random_rotation(Q);
    for (int64_t i = 0; i < n; i++) {
        lab[i] = i < 9 ? 0 : 1;
        for (int a = 0; a < 3; a++) xc[3 * i + a] = urand() - 0.5, xcf[3 * i + a] = (float)xc[3 * i + a];
        for (int r = 0; r < 3; r++) {
            xf[3 * i + r] = 0.1 * (urand() - 0.5); /* a rotation plus a non-rigid part */
            for (int q = 0; q < 3; q++) xf[3 * i + r] += Q[3 * r + q] * xc[3 * i + q];
        }
    }
    gs4d_knn(xcf, n, lab, k, nbr);
    Tensor *in[2] = {tensor_requires_grad(tensor_from_f64(2, (int64_t[]){n, 3}, TENSOR_F64, xf), true),
                     tensor_requires_grad(tensor_from_f64(2, (int64_t[]){n, 3}, TENSOR_F64, xc), true)};
    ArapCtx c = {nbr, k};
    AgGradcheckReport r;
    bool ok = ag_gradcheck(fn_arap, 2, in, &c, 1e-6, 1e-8, 1e-5, &r);
    CHECK_MSG(ok, "input %d element %lld: analytic %.10g vs numeric %.10g", r.bad_input, (long long)r.bad_index,
              r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-3); /* the gradient is not trivially zero */
    tensor_scope_end(sc);
}

static Tensor *fn_reg(int n, Tensor *const *in, void *user) {
    (void)n;
    const double *w = user; /* reg_opacity, reg_scale, reg_flat */
    GsGaussians g = {.means = NULL, .scales = in[0], .opacities = in[1]};
    return gs4d_regularizer(&g, w[0], w[1], w[2]);
}

/* 3DGS-MCMC's opacity and scale regularizers and the flatness term (the smallest of each
 * Gaussian's scales): the value, and the gradient against f64 finite differences (isotropic
 * (N, 1) and anisotropic (N, 3) scales; the flatness term alone, then all three). */
TEST(gs4d_regularizer_value_and_gradcheck) {
    TensorScope *sc = tensor_scope_begin();
    for (int run = 0; run < 4; run++) {
        int ns = run % 2 ? 3 : 1;
        double w[3] = {run < 2 ? 0 : 0.3, run < 2 ? 0 : 0.7, 1.9};
        int64_t n = 9;
        double s[27], o[9], want = 0;
        for (int64_t i = 0; i < n * ns; i++) s[i] = -3 + 2 * urand(), want += w[1] * exp(s[i]) / (double)(n * ns);
        for (int64_t i = 0; i < n; i++) {
            double smin = s[i * ns];
            for (int k = 1; k < ns; k++) smin = fmin(smin, s[i * ns + k]);
            o[i] = 4 * urand() - 2, want += w[0] / (1 + exp(-o[i])) / (double)n + w[2] * exp(smin) / (double)n;
        }
        Tensor *in[2] = {tensor_requires_grad(tensor_from_f64(2, (int64_t[]){n, ns}, TENSOR_F64, s), true),
                         tensor_requires_grad(tensor_from_f64(2, (int64_t[]){n, 1}, TENSOR_F64, o), true)};
        CHECK_NEAR(tensor_item(fn_reg(2, in, w)), want, 1e-12);
        AgGradcheckReport r;
        bool ok = ag_gradcheck(fn_reg, 2, in, w, 1e-6, 1e-9, 1e-6, &r);
        CHECK_MSG(ok, "run %d: input %d element %lld: analytic %.10g vs numeric %.10g", run, r.bad_input,
                  (long long)r.bad_index, r.analytic, r.numeric);
    }
    GsGaussians g = {0};
    CHECK(gs4d_regularizer(&g, 0, 0, 0) == NULL);
    tensor_scope_end(sc);
}

/* ---- the deformation path --------------------------------------------------------------------------- */

typedef struct {
    Gs4dModel *m;
    DsCamera cam;
    int nlayer;     /* MLP layers whose weights are inputs */
    bool render;    /* output the rendered image (else the deformed parameters and the ARAP loss) */
    Tensor *x_in;   /* the MLP's input positions: the means' values, a constant (what detach means) */
} DeformCtx;

/* in: means, scales, [quats], opacities, colors, then (weight, bias) of the first nlayer layers,
 * then the heads' weights */
static Tensor *fn_deform(int n, Tensor *const *in, void *user) {
    (void)n;
    DeformCtx *c = user;
    Gs4dModel m = *c->m;
    int k = 0;
    m.means = in[k++], m.scales = in[k++];
    if (!m.cfg.isotropic) m.quats = in[k++];
    m.opacities = in[k++], m.colors = in[k++];
    for (int i = 0; i < c->nlayer; i++) m.mlp.layer[i].weight = in[k++], m.mlp.layer[i].bias = in[k++];
    m.mlp.mu.weight = in[k++], m.mlp.scale.weight = in[k++];
    if (!m.cfg.isotropic) m.mlp.rot.weight = in[k++];
    m.mlp.color.weight = in[k++], m.mlp.opacity.weight = in[k++];
    GsGaussians canon = gs4d_canonical(&m);
    GsGaussians g = gs4d_deform_at(&m, &canon, c->x_in, 0.37);
    if (c->render) return gs_render(&g, &c->cam, (double[]){0.2, 0.5, 0.9}).image;
    int32_t nbr[6 * 3];
    float x[18];
    bool prev = ag_no_grad_begin();
    double xd[18];
    tensor_to_f64_array(canon.means, xd);
    ag_no_grad_end(prev);
    for (int i = 0; i < 18; i++) x[i] = (float)xd[i];
    gs4d_knn(x, 6, NULL, 3, nbr);
    Tensor *parts[6] = {tensor_flatten(g.means, 0, -1), tensor_flatten(g.scales, 0, -1), tensor_flatten(g.colors, 0, -1),
                        tensor_flatten(g.opacities, 0, -1),
                        tensor_reshape(gs4d_arap_loss(g.means, canon.means, nbr, 3), 1, (int64_t[]){1}),
                        g.quats ? tensor_flatten(g.quats, 0, -1) : tensor_flatten(g.opacities, 0, -1)};
    return tensor_cat(6, parts, 0);
}

static void deform_gradcheck(bool isotropic, bool render) {
    TensorScope *sc = tensor_scope_begin();
    /* a small sequence only to place the region and the init; the model is f64 */
    float rgba[8 * 8 * 4];
    for (int i = 0; i < 8 * 8 * 4; i++) rgba[i] = i % 4 == 3 ? 1.f : 0.5f;
    double eye[3] = {0, 0, -3}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    Gs4dView v = {.cam = ds_camera_look_at(eye, at, up, 8, 8, 50), .time = 0.5f, .rgba = rgba};
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(&v, 1, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = 6, cfg.isotropic = isotropic, cfg.depth = 3, cfg.width = 8, cfg.skip = 2, cfg.freq_x = 2, cfg.freq_t = 2;
    cfg.deform_color = cfg.deform_opacity = true;
    cfg.head_init = 0.3; /* large enough for the heads' outputs to matter to first order */
    cfg.init_scale = 0.8, cfg.init_opacity = 0.6, cfg.dtype = TENSOR_F64, cfg.arap_k = 3;
    Gs4dModel m;
    gs4d_init(&m, &cfg, &d, NULL);
    /* the init is in the camera's view; spread the means so every Gaussian covers a few pixels */
    DeformCtx c = {.m = &m, .cam = v.cam, .nlayer = 3, .render = render};
    Tensor *in[32];
    int k = 0;
    Tensor *src[32] = {m.means, m.scales};
    int ns = 2;
    if (!isotropic) src[ns++] = m.quats;
    src[ns++] = m.opacities, src[ns++] = m.colors;
    for (int i = 0; i < c.nlayer; i++) src[ns++] = m.mlp.layer[i].weight, src[ns++] = m.mlp.layer[i].bias;
    src[ns++] = m.mlp.mu.weight, src[ns++] = m.mlp.scale.weight;
    if (!isotropic) src[ns++] = m.mlp.rot.weight;
    src[ns++] = m.mlp.color.weight, src[ns++] = m.mlp.opacity.weight;
    for (k = 0; k < ns; k++) in[k] = tensor_requires_grad(tensor_clone(tensor_detach(src[k])), true);
    c.x_in = tensor_clone(tensor_detach(m.means));
    AgGradcheckReport r;
    bool ok = ag_gradcheck(fn_deform, ns, in, &c, 1e-6, 1e-7, 1e-4, &r);
    CHECK_MSG(ok, "%s%s: input %d element %lld: analytic %.10g vs numeric %.10g", isotropic ? "isotropic" : "anisotropic",
              render ? ", rendered" : "", r.bad_input, (long long)r.bad_index, r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-4);
    /* and the first hidden layer does get a gradient (dead ReLUs everywhere would pass vacuously) */
    Tensor *out = fn_deform(ns, in, &c);
    ag_backward(tensor_sum_all(tensor_mul(out, out)), NULL, false);
    Tensor *gw = in[isotropic ? 4 : 5]->grad;
    CHECK(gw != NULL);
    double gmax = 0;
    double *gv = malloc(sizeof(double) * (size_t)tensor_numel(gw));
    tensor_to_f64_array(gw, gv);
    for (int64_t i = 0; i < tensor_numel(gw); i++) gmax = fmax(gmax, fabs(gv[i]));
    free(gv);
    CHECK_MSG(gmax > 1e-6, "layer 0's weight gradient is at most %g", gmax);
    gs4d_free(&m);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}

TEST(gs4d_deform_gradcheck) {
    deform_gradcheck(true, false);
    deform_gradcheck(false, false);
}

TEST(gs4d_deform_render_gradcheck) {
    deform_gradcheck(true, true);
}

/* ---- training on a tiny synthetic sequence --------------------------------------------------------- */

Gs4dConfig gs4d_test_tiny_config(int64_t iters) {
    Gs4dConfig c = gs4d_defaults();
    c.n = 500, c.depth = 4, c.width = 32, c.skip = 2, c.freq_x = 6, c.freq_t = 4;
    c.lr_steps = iters, c.warmup = iters / 5;
    c.densify_every = 50, c.refine_until = iters / 2, c.reset_every = 0;
    c.arap_weight = 1.0, c.arap_k = 6, c.knn_every = 50;
    return c;
}

double gs4d_test_eval(const Gs4dModel *m, const Gs4dSynth *s, const Gs4dData *dt) {
    double sum = 0;
    for (int v = 0; v < s->n_test; v++) {
        TensorScope *sc = tensor_scope_begin();
        double bg[3] = {1, 1, 1};
        sum += gs_psnr(gs4d_render(m, &s->test[v].cam, s->test[v].time, bg), gs4d_target(dt, v, bg));
        tensor_scope_end(sc);
    }
    return sum / s->n_test;
}

/* freq_t = GS4D_FREQ_T_AUTO: the fewest time frequencies whose highest band turns ≥ 2/3 rad between
 * neighboring training times: 6 on 48 frames over [0, 1] (the presets' fixed value), 9 on 300,
 * 7 when the same 48 frames span half the range; repeated times (several views) count once; the
 * model built with it has the matching MLP input. */
static int auto_freq_t_of(int frames, int views, double span) {
    int n = frames * views;
    Gs4dView *v = calloc((size_t)n, sizeof *v);
    int *order = calloc((size_t)n, sizeof *order);
    for (int i = 0; i < n; i++) {
        v[i].time = frames > 1 ? (float)(span * (i / views) / (frames - 1)) : 0;
        order[i] = i;
    }
    Gs4dData d = {.n = n, .views = v, .by_time = order};
    int L = gs4d_auto_freq_t(&d);
    free(v), free(order);
    return L;
}

TEST(gs4d_auto_freq_t_from_times) {
    CHECK_MSG(auto_freq_t_of(48, 20, 1) == 6, "%d", auto_freq_t_of(48, 20, 1));
    CHECK_MSG(auto_freq_t_of(300, 3, 1) == 9, "%d", auto_freq_t_of(300, 3, 1));
    CHECK_MSG(auto_freq_t_of(48, 2, 0.5) == 7, "%d", auto_freq_t_of(48, 2, 0.5));
    CHECK(auto_freq_t_of(1, 4, 1) == 1);
    for (int f = 2; f < 400; f += 37) {
        int L = auto_freq_t_of(f, 1, 1);
        double dt = 1.0 / (f - 1);
        CHECK_MSG(ldexp(1, L - 1) * dt >= GS4D_FREQ_T_RAD_PER_FRAME && (L == 1 || ldexp(1, L - 2) * dt < GS4D_FREQ_T_RAD_PER_FRAME),
                  "%d frames: L %d", f, L);
    }
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 4, 2, 1, 16, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig c = gs4d_test_tiny_config(10);
    c.freq_t = GS4D_FREQ_T_AUTO;
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    /* 4 frames over [0, 1]: 1/3 apart, 2^(L-1)/3 >= 2/3 at L = 2 */
    CHECK_MSG(m.cfg.freq_t == 2 && m.mlp.in_dim == nn_fourier_embed_dim(3, c.freq_x) + nn_fourier_embed_dim(1, 2), "L %d, in %lld",
              m.cfg.freq_t, (long long)m.mlp.in_dim);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

void gs4d_test_tiny_sequence(const Gs4dConfig *cfg, const char *what, void (*after)(const Gs4dModel *)) {
    bool quick = test_quick();
    int64_t iters = quick ? 30 : 1500;
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 4, 6, 2, 32, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d, dt;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gs4d_data_make(s.test, s.n_test, &dt, err, sizeof err) == 0, "%s", err);
    Gs4dConfig c = *cfg;
    c.lr_steps = iters, c.warmup = iters / 5, c.refine_until = iters / 2;
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    double p0 = gs4d_test_eval(&m, &s, &dt);
    TensorRng rng = {.seed = 1, .stream = 3};
    double t0 = base_now(), pw = 0;
    for (int64_t step = 0; step < iters; step++) {
        int64_t v;
        optim_data_order(0, step, d.n, 1, &v);
        double l = gs4d_step(&m, &d, (int)v, &rng, NULL);
        CHECK_MSG(isfinite(l), "step %lld: loss %g", (long long)step, l);
        if (m.step == c.warmup) pw = gs4d_test_eval(&m, &s, &dt);
    }
    double dtime = base_now() - t0, p = gs4d_test_eval(&m, &s, &dt);
    fprintf(stderr, "  gs4d tiny (32x32, 4 frames x 6 views, %lld Gaussians, %s, MLP %dx%d, %lld steps): held-out %.2f dB "
                    "(init %.2f, end of warm-up %.2f), %.1f ms/step\n",
            (long long)c.n, what, c.depth, c.width, (long long)iters, p, p0, pw, 1e3 * dtime / (double)iters);
    if (quick) CHECK_MSG(p > p0, "held-out PSNR %.2f dB from %.2f dB", p, p0);
    else {
        CHECK_MSG(p >= 24, "held-out PSNR %.2f dB < 24 dB (init %.2f, after warm-up %.2f)", p, p0, pw);
        CHECK_MSG(p >= pw + 1, "the deformation phase added only %.2f dB over the static warm-up", p - pw);
    }
    if (after) after(&m);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_data_free(&dt);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

TEST(gs4d_tiny_sequence_trains) {
    Gs4dConfig c = gs4d_test_tiny_config(1500);
    gs4d_test_tiny_sequence(&c, "per-Gaussian MLP", NULL);
}

/* ---- resume ------------------------------------------------------------------------------------------ */

static void run_loop(Gs4dModel *m, const Gs4dData *d, const char *ckpt, bool resume, int64_t total, int64_t stop_after) {
    OptimTrainOptions to = {.name = "gs4d test", .total_steps = total, .log_every = 1000, .ckpt_every = 0,
                            .ckpt_path = ckpt, .resume = resume, .stop_after = stop_after};
    OptimTrain tl;
    char err[512];
    CHECK_MSG(optim_train_init(&tl, &to, &m->params, &m->optim, (TensorRng){.seed = 5, .stream = 3}, err, sizeof err) == 0,
              "%s", err);
    gs4d_set_step(m, tl.step);
    while (optim_train_next(&tl)) {
        int64_t v;
        optim_data_order(0, tl.step, d->n, 1, &v);
        double l = gs4d_step(m, d, (int)v, &tl.rng, NULL);
        optim_train_step_end(&tl, l, 0, 0, NULL);
    }
    CHECK(optim_train_finish(&tl) == 0);
}

void gs4d_test_resume_check(const Gs4dConfig *c, int64_t total, int64_t stop) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 2, 4, 0, 16, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    char dir[] = "/tmp/anima-gs4d-XXXXXX", ckpt[256];
    CHECK(mkdtemp(dir));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt.h5", dir);
    Gs4dModel a, b;
    gs4d_init(&a, c, &d, NULL);
    run_loop(&a, &d, NULL, false, total, 0);
    gs4d_init(&b, c, &d, NULL);
    run_loop(&b, &d, ckpt, false, total, stop);
    CHECK(b.step == stop);
    gs4d_free(&b);
    gs4d_init(&b, c, &d, NULL); /* a fresh process's model */
    run_loop(&b, &d, ckpt, true, total, 0);
    CHECK(b.step == total);
    int64_t n = tensor_numel(a.params.flat);
    const float *pa = tensor_f32(a.params.flat), *pb = tensor_f32(b.params.flat);
    const float *ma = tensor_f32(a.optim.exp_avg_sq), *mb = tensor_f32(b.optim.exp_avg_sq);
    int64_t bad = 0, badm = 0;
    for (int64_t i = 0; i < n; i++) bad += pa[i] != pb[i], badm += ma[i] != mb[i];
    CHECK_MSG(bad == 0 && badm == 0, "%lld parameters and %lld moments differ after resume", (long long)bad, (long long)badm);
    unlink(ckpt);
    rmdir(dir);
    gs4d_free(&a);
    gs4d_free(&b);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

TEST(gs4d_resume_matches_uninterrupted) {
    /* the interruption falls after the warm-up and between densifications and kNN updates, so
     * the buffers (gradient statistics, neighbors) must come back from the checkpoint */
    Gs4dConfig c = gs4d_test_tiny_config(60);
    c.n = 200, c.warmup = 10, c.densify_every = 20, c.knn_every = 20, c.reset_every = 30, c.refine_until = 60;
    gs4d_test_resume_check(&c, 60, 33);
}

/* ---- the command ------------------------------------------------------------------------------------- */

static bool read_file(const char *path, char **buf, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)*len + 1);
    bool ok = fread(*buf, 1, (size_t)*len, f) == (size_t)*len;
    (*buf)[*len] = 0; /* callers strstr the text */
    fclose(f);
    return ok;
}

/* SIGINT / SIGTERM: the current step finishes, a checkpoint is written, exit 128 + signal, with no
 * final evaluation (it renders every view: minutes on the default benchmark) */
TEST(gs4d_cli_signal_checkpoints) {
    char dir[] = "/tmp/anima-gs4d-sig-XXXXXX";
    CHECK(mkdtemp(dir));
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int k = 0; k < 2; k++) {
        char out[512], log[600], ckpt[600], text[600];
        snprintf(out, sizeof out, "%s/%d", dir, k);
        snprintf(text, sizeof text, "%s/%d.out", dir, k);
        snprintf(log, sizeof log, "%s/metrics.jsonl", out);
        snprintf(ckpt, sizeof ckpt, "%s/ckpt.h5", out);
        const char *argv[] = {"anima", "gs4d", "fit", "--no-progress", "--config", "configs/gs4d-tiny.json", "--set",
                              "train.iters=100000000", "--set", "train.log_every=1", "--set", "model.n=50", "--set",
                              "data.size=16", "--out", out, NULL};
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            if (!freopen(text, "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
            setenv("OMP_NUM_THREADS", "1", 1);
            execv(test_anima_bin(), (char *const *)argv);
            _exit(127);
        }
        struct stat st;
        for (int i = 0; i < 3000 && (stat(log, &st) != 0 || st.st_size < 2); i++) usleep(10000);
        kill(pid, sigs[k]);
        int status;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sigs[k], "signal %d: %s %d", sigs[k],
                  WIFEXITED(status) ? "exit" : "killed by signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        CHECK_MSG(access(ckpt, R_OK) == 0, "no checkpoint after signal %d", sigs[k]);
        char *said = NULL;
        long n = 0;
        CHECK(read_file(text, &said, &n));
        CHECK_MSG(!strstr(said, "iterations: held-out PSNR"), "evaluated after signal %d: %s", sigs[k], said);
        free(said);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* `anima gs4d fit` writes every product; a run stopped (checkpointed) and resumed ends with the
 * same canonical set, byte for byte, as an uninterrupted one; `anima gs4d eval` reads it back. */
TEST(gs4d_cli_fit_resume_eval) {
    char dir[] = "/tmp/anima-gs4d-cli-XXXXXX", cmd[2048], out[8192];
    CHECK(mkdtemp(dir));
    const char *common = "gs4d fit --config configs/gs4d-tiny.json --set train.iters=120 --set train.warmup=40 "
                         "--set train.log_every=40 --set train.ckpt_every=0 --set model.n=300 --no-progress";
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s %s --out %s/a 2>&1", test_anima_bin(), common, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    CHECK_MSG(strstr(out, "done after 120 iterations") && strstr(out, "per deformation-phase iteration"), "%s", out);
    const char *files[] = {"canonical.ply", "trajectories.h5", "renders/test_000.png", "ckpt.h5", "metrics.jsonl", "config.json",
                           "turntable.gif"};
    for (int i = 0; i < 7; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/a/%s", dir, files[i]);
        CHECK_MSG(access(p, R_OK) == 0, "%s is missing", p);
    }
    char p[512], *log = NULL;
    long len = 0;
    snprintf(p, sizeof p, "%s/a/metrics.jsonl", dir);
    CHECK(read_file(p, &log, &len));
    int lines = 0;
    for (long i = 0; i < len; i++) lines += log[i] == '\n';
    CHECK_MSG(lines == 3 && strstr(log, "\"test_psnr\"") && strstr(log, "\"arap\""), "%d lines: %s", lines, log);
    free(log);
    DsGaussians g = {0};
    char err[512];
    snprintf(p, sizeof p, "%s/a/canonical.ply", dir);
    CHECK_MSG(ds_gaussians_read(p, &g, err, sizeof err) == 0, "%s", err);
    CHECK(g.n == 300);
    ds_gaussians_free(&g);

    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s %s --out %s/b --stop-after 70 2>&1", test_anima_bin(), common, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "stopped after 70"), "rc %d: %s", rc, out);
    snprintf(p, sizeof p, "%s/b/canonical.ply", dir);
    CHECK_MSG(access(p, F_OK) != 0, "a stopped run wrote its products");
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s %s --out %s/b 2>&1", test_anima_bin(), common, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--resume"), "a second run into a run folder: rc %d: %s", rc, out);
    /* --resume without --config or --set: the run's own config (stored in its checkpoint), not the
     * built-in defaults, whose model would not match; config.json is left as the run wrote it */
    char *ca = NULL, *cb = NULL;
    long lca = 0, lcb = 0;
    snprintf(p, sizeof p, "%s/b/config.json", dir);
    CHECK(read_file(p, &ca, &lca));
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d fit --out %s/b --resume --no-progress 2>&1", test_anima_bin(), dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "config stored in") && strstr(out, "resuming") && strstr(out, "done after 120"),
              "rc %d: %s", rc, out);
    CHECK(read_file(p, &cb, &lcb));
    CHECK_MSG(lca == lcb && memcmp(ca, cb, (size_t)lca) == 0, "the resume rewrote config.json:\n%.*s", (int)lcb, cb);
    free(ca), free(cb);
    char *pa = NULL, *pb = NULL;
    long la = 0, lb = 0;
    snprintf(p, sizeof p, "%s/a/canonical.ply", dir);
    CHECK(read_file(p, &pa, &la));
    snprintf(p, sizeof p, "%s/b/canonical.ply", dir);
    CHECK(read_file(p, &pb, &lb));
    CHECK_MSG(la == lb && memcmp(pa, pb, (size_t)la) == 0, "the resumed run's canonical.ply differs from the uninterrupted one");
    free(pa), free(pb);

    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d eval %s/a 2>&1", test_anima_bin(), dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "held-out PSNR") && strstr(out, "SSIM") && strstr(out, "Chamfer") &&
                  strstr(out, "local-rigidity"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A sequence written by another tool in the D-NeRF / nerfstudio convention (here: the synthetic
 * sequence through datasets/motion/dnerf.h's writer and RGBA PNGs, no ground truth) is what
 * `anima gs4d fit --data DIR` trains on and `anima gs4d eval` scores. */
TEST(gs4d_cli_dnerf_folder) {
    Gs4dSynth s;
    char err[512], dir[] = "/tmp/anima-gs4d-dnerf-XXXXXX", p[600], cmd[2048], out[8192];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 3, 6, 2, 24, &s, err, sizeof err) == 0, "%s", err);
    CHECK(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/img", dir);
    CHECK(mkdir(p, 0777) == 0);
    for (int split = 0; split < 2; split++) {
        int n = split ? s.n_test : s.n_train;
        const Gs4dView *v = split ? s.test : s.train;
        DsDnerfFrameOut *fo = calloc((size_t)n, sizeof *fo);
        char (*names)[64] = calloc((size_t)n, sizeof *names);
        for (int i = 0; i < n; i++) {
            snprintf(names[i], sizeof names[i], "./img/%s_%03d", split ? "val" : "train", i);
            snprintf(p, sizeof p, "%s/%s.png", dir, names[i] + 2);
            DsImageF im;
            CHECK(ds_imagef_init(&im, v[i].cam.width, v[i].cam.height, 4, err, sizeof err) == 0);
            memcpy(im.data, v[i].rgba, sizeof(float) * 4 * (size_t)v[i].cam.width * v[i].cam.height);
            CHECK_MSG(ds_imagef_write(p, &im, err, sizeof err) == 0, "%s", err);
            ds_imagef_free(&im);
            fo[i] = (DsDnerfFrameOut){.cam = v[i].cam, .time = v[i].time, .file_path = names[i], .view = -1, .frame = -1};
        }
        snprintf(p, sizeof p, "%s/transforms_%s.json", dir, split ? "val" : "train");
        CHECK_MSG(ds_dnerf_write_json(p, fo, n, NULL, err, sizeof err) == 0, "%s", err);
        free(fo), free(names);
    }
    gs4d_synth_free(&s);

    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d fit --data %s --config configs/gs4d-tiny.json --set train.iters=300 "
                              "--set train.warmup=100 --set train.log_every=100 --no-progress --out %s/run 2>&1",
             test_anima_bin(), dir, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "18 training + 6 held-out views at 24x24"), "rc %d: %s", rc, out);
    double p0 = 0, p1 = 0;
    const char *a = strstr(out, "held-out PSNR at init "), *b = strstr(out, "held-out PSNR ");
    CHECK(a && b && sscanf(a, "held-out PSNR at init %lf", &p0) == 1);
    b = strstr(out, "done after");
    CHECK(b && (b = strstr(b, "held-out PSNR ")) && sscanf(b, "held-out PSNR %lf", &p1) == 1);
    CHECK_MSG(p1 > p0 + 2, "held-out PSNR %.2f dB from %.2f dB", p1, p0);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d eval %s/run 2>&1", test_anima_bin(), dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "val views") && strstr(out, "no ground truth"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* The benchmark of `anima dataset motion` (a tiny one): fit on its training views, eval on its
 * test split (held-out views × every frame) with the ground truth of its gt.h5. */
TEST(gs4d_cli_motion_benchmark) {
    char dir[] = "/tmp/anima-gs4d-bench-XXXXXX", cmd[2048], out[8192];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s dataset motion --category quadruped --out %s/b --frames 3 --views 6 "
                              "--size 24 --grid 32 --motion walk --heldout none --holdout-every 3 --val-every 1 --no-progress 2>&1",
             test_anima_bin(), dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d fit --data %s/b --config configs/gs4d-tiny.json --set train.iters=300 "
                              "--set train.warmup=100 --set train.log_every=100 --no-progress --out %s/run 2>&1",
             test_anima_bin(), dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "12 training + 6 held-out views at 24x24"), "rc %d: %s", rc, out);
    double p0 = 0, p1 = 0;
    const char *a = strstr(out, "held-out PSNR at init "), *b = strstr(out, "done after");
    CHECK(a && sscanf(a, "held-out PSNR at init %lf", &p0) == 1);
    CHECK(b && (b = strstr(b, "held-out PSNR ")) && sscanf(b, "held-out PSNR %lf", &p1) == 1);
    CHECK_MSG(p1 > p0 + 2, "held-out PSNR %.2f dB from %.2f dB", p1, p0);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d eval %s/run 2>&1", test_anima_bin(), dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "test views") && strstr(out, "Chamfer") && strstr(out, "over 3 frames") &&
                  strstr(out, "local-rigidity"), "rc %d: %s", rc, out);
    /* --split val scores the validation views instead; --per-view writes each view's PSNR (their
     * mean is the printed one) and each frame's Chamfer line */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d eval %s/run --split val --per-view %s/pv.tsv 2>&1", test_anima_bin(),
             dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    double mean = 0;
    const char *h = strstr(out, "held-out PSNR ");
    CHECK_MSG(rc == 0 && strstr(out, "over 6 val views") && h && sscanf(h, "held-out PSNR %lf", &mean) == 1, "rc %d: %s", rc,
              out);
    char path[600], line[512];
    snprintf(path, sizeof path, "%s/pv.tsv", dir);
    FILE *fp = fopen(path, "r");
    CHECK(fp);
    int nview = 0, nframe = 0;
    double sum = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        int idx;
        double t, el, az, ps, ss;
        if (sscanf(line, "view\t%d\t%lf\t%lf\t%lf\t%lf\t%lf", &idx, &t, &el, &az, &ps, &ss) == 6) {
            CHECK(idx == nview && t >= 0 && t <= 1 && ss > 0 && ss <= 1);
            nview++, sum += ps;
        } else if (!strncmp(line, "frame\t", 6)) nframe++;
    }
    if (fp) fclose(fp);
    CHECK_MSG(nview == 6 && nframe == 3, "%d views, %d frames", nview, nframe);
    CHECK_MSG(fabs(sum / 6 - mean) < 0.01, "per-view mean %.3f against %.3f", sum / 6, mean);
    /* a --per-view file that cannot be written fails the command, naming it, and leaves the
     * earlier file as it was */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d eval %s/run --per-view %s/no/such/pv.tsv 2>&1", test_anima_bin(), dir,
             dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc != 0 && strstr(out, "no/such/pv.tsv"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* (OpenMPI's own allocations leak at MPI_Finalize: leak checking is off for the ranks, as for the
 * mpi suite in tests/run.sh.)
 * Data parallel: `mpirun -np 2 anima gs4d fit` with 2 views per step (one per rank, gradients
 * averaged, densification statistics summed) follows the one-process run with the same batch to
 * rounding (the all-reduce adds the two halves in another order than one backward after the
 * other), and the ranks stay identical (the run ends, which needs every collective matched). */
TEST(gs4d_cli_mpi_matches_one_process) {
    char out[8192], probe[256];
    if (test_run_capture("command -v mpirun 2>&1", probe, sizeof probe) != 0) {
        printf("    skipped: no mpirun\n");
        return;
    }
    char dir[] = "/tmp/anima-gs4d-mpi-XXXXXX", cmd[2048];
    CHECK(mkdtemp(dir));
    const char *common = "gs4d fit --config configs/gs4d-tiny.json --set train.iters=120 --set train.warmup=40 "
                         "--set train.batch=2 --set train.log_every=40 --set model.n=300 --no-progress";
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s %s --out %s/one 2>&1", test_anima_bin(), common, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    double p1 = 0, p2 = 0;
    const char *a = strstr(out, "done after");
    CHECK(a && (a = strstr(a, "held-out PSNR ")) && sscanf(a, "held-out PSNR %lf", &p1) == 1);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --oversubscribe --allow-run-as-root -np 2 %s %s --out %s/two 2>&1",
             test_anima_bin(), common, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "2 ranks (MPI), 2 views per step"), "rc %d: %s", rc, out);
    a = strstr(out, "done after");
    CHECK(a && (a = strstr(a, "held-out PSNR ")) && sscanf(a, "held-out PSNR %lf", &p2) == 1);
    CHECK_MSG(fabs(p1 - p2) < 0.02, "held-out PSNR %.4f dB (one process) vs %.4f dB (two ranks)", p1, p2);
    /* an odd batch cannot be split evenly over two ranks */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --oversubscribe --allow-run-as-root -np 2 %s %s --set train.batch=3 "
                              "--out %s/odd 2>&1", test_anima_bin(), common, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc != 0 && strstr(out, "multiple of the 2 ranks"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* The cluster labels given to the trainer bound the ARAP pairs, through densification too (a
 * moved Gaussian takes its source's label); and the anisotropic variant with color and opacity
 * heads trains (every parameter group and head in use). */
TEST(gs4d_labels_and_anisotropic_variant) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 2, 6, 2, 24, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d, dt;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gs4d_data_make(s.test, s.n_test, &dt, err, sizeof err) == 0, "%s", err);
    int64_t iters = test_quick() ? 60 : 300; /* valgrind: the label checks only */
    Gs4dConfig c = gs4d_test_tiny_config(iters);
    c.n = 300, c.isotropic = false, c.deform_color = c.deform_opacity = true, c.warmup = 60;
    c.densify_every = 25, c.knn_every = 25, c.reset_every = 100, c.refine_until = 200;
    if (test_quick()) c.prune_opacity = 0.09; /* Gaussians die (from 0.1) within the short run */
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)c.n);
    for (int64_t i = 0; i < c.n; i++) lab[i] = (int32_t)(i % 3);
    Gs4dModel m;
    gs4d_init(&m, &c, &d, lab);
    free(lab);
    double p0 = gs4d_test_eval(&m, &s, &dt);
    TensorRng rng = {.seed = 2, .stream = 3};
    int64_t moved = 0;
    for (int64_t step = 0; step < iters; step++) {
        int64_t v;
        optim_data_order(0, step, d.n, 1, &v);
        CHECK(isfinite(gs4d_step(&m, &d, (int)v, &rng, NULL)));
        moved += m.densified + m.relocated;
        const float *l = tensor_f32(m.labels), *nb = tensor_f32(m.neighbors);
        int bad = 0;
        for (int64_t i = 0; i < c.n; i++)
            for (int k = 0; k < c.arap_k; k++) bad += nb[i * c.arap_k + k] >= 0 && l[(int64_t)nb[i * c.arap_k + k]] != l[i];
        CHECK_MSG(bad == 0, "step %lld: %d neighbor pairs cross clusters", (long long)step, bad);
        if (bad) break;
    }
    CHECK_MSG(moved > 0, "no Gaussian was densified or relocated");
    double p = gs4d_test_eval(&m, &s, &dt);
    if (test_quick()) p0 = -INFINITY, p = INFINITY;
    CHECK_MSG(p > p0 + 2, "anisotropic: held-out PSNR %.2f dB from %.2f dB", p, p0);
    /* every head moved away from its near-zero start */
    const Tensor *heads[5] = {m.mlp.mu.weight, m.mlp.scale.weight, m.mlp.rot.weight, m.mlp.color.weight, m.mlp.opacity.weight};
    for (int h = 0; h < 5 && !test_quick(); h++) {
        const float *w = tensor_f32(heads[h]);
        double mx = 0;
        for (int64_t i = 0; i < tensor_numel(heads[h]); i++) mx = fmax(mx, fabs(w[i]));
        CHECK_MSG(mx > 1e-3, "head %d: largest weight %g", h, mx);
    }
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_data_free(&dt);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* ---- reclustering (issue 19 item 2's wiring) ----------------------------------------------------------- */

typedef struct {
    int bones, calls, fail;
    int frames;
} ReclusterProbe;

static int probe_lbgvq(void *user, int frames, int64_t n, const float *rest, const float *pos, int32_t *labels) {
    ReclusterProbe *p = user;
    p->calls++, p->frames = frames;
    if (p->fail) return -1;
    return sb_cluster_labels_cb(&p->bones, frames, n, rest, pos, labels); /* what anima gs4d fit hands over */
}

/* train.recluster_every: the step hands the trajectories to the callback every K deformation
 * steps; LBG-VQ's labels replace the one cluster, the ARAP neighbors stay inside the new clusters,
 * the loss stays finite; a failing callback leaves the labels as they were. */
TEST(gs4d_recluster_with_lbgvq) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 4, 4, 1, 24, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    int64_t iters = 90;
    Gs4dConfig c = gs4d_test_tiny_config(iters);
    c.n = 300, c.warmup = 30, c.recluster_every = 20, c.recluster_frames = 3, c.knn_every = 1000;
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    ReclusterProbe probe = {.bones = 4};
    gs4d_set_recluster(&m, probe_lbgvq, &probe);
    TensorRng rng = {.seed = 5, .stream = 3};
    int distinct = 1;
    for (int64_t step = 0; step < iters; step++) {
        int64_t v;
        optim_data_order(0, step, d.n, 1, &v);
        double l = gs4d_step(&m, &d, (int)v, &rng, NULL);
        CHECK_MSG(isfinite(l), "step %lld: loss %g", (long long)step, l);
        if (step + 1 < c.warmup + c.recluster_every) CHECK_MSG(probe.calls == 0, "called before the deformation phase");
    }
    /* after steps 50, 70, 90: every 20 steps of the deformation phase (it begins at 30) */
    CHECK_MSG(probe.calls == 3 && m.reclustered == 3, "%d calls, %lld reclusterings", probe.calls, (long long)m.reclustered);
    CHECK_MSG(probe.frames == 3, "the callback saw %d frames", probe.frames);
    const float *l = tensor_f32(m.labels), *nb = tensor_f32(m.neighbors);
    bool seen[64] = {false};
    int bad = 0;
    for (int64_t i = 0; i < c.n; i++) {
        CHECK(l[i] >= 0 && l[i] < 64);
        seen[(int)l[i]] = true;
        for (int k = 0; k < c.arap_k; k++) bad += nb[i * c.arap_k + k] >= 0 && l[(int64_t)nb[i * c.arap_k + k]] != l[i];
    }
    distinct = 0;
    for (int b = 0; b < 64; b++) distinct += seen[b];
    CHECK_MSG(distinct > 1 && distinct <= probe.bones, "%d clusters after reclustering into %d", distinct, probe.bones);
    CHECK_MSG(bad == 0, "%d neighbor pairs cross the new clusters", bad);
    /* a failing callback: the labels stay */
    float *before = malloc(sizeof(float) * (size_t)c.n);
    memcpy(before, l, sizeof(float) * (size_t)c.n);
    probe.fail = 1;
    CHECK(gs4d_recluster(&m, &d) == -1);
    CHECK(m.recluster_failed == 1);
    CHECK(memcmp(before, tensor_f32(m.labels), sizeof(float) * (size_t)c.n) == 0);
    free(before);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* ---- the geometry fix (issue 18): 3DGS-MCMC's opacity + scale regularizers --------------------------- */

/* mean opacity and scale of the canonical set */
static void mean_opacity_scale(const Gs4dModel *m, double *o, double *sc) {
    int64_t n = m->cfg.n;
    float *p = malloc(sizeof(float) * 3 * (size_t)n), *s = malloc(sizeof(float) * (size_t)n),
          *rgb = malloc(sizeof(float) * 3 * (size_t)n), *op = malloc(sizeof(float) * (size_t)n);
    gs4d_state_at(m, 0, p, s, rgb, op);
    *o = *sc = 0;
    for (int64_t i = 0; i < n; i++) *o += op[i] / (double)n, *sc += s[i] / (double)n;
    free(p), free(s), free(rgb), free(op);
}

/* The step adds the regularizers to its loss (info.reg, the total) and they act: the same run
 * with them ends with lower mean opacity (Gaussians nothing needs fade: the occluded inner layers
 * of the benchmark) and smaller Gaussians. */
TEST(gs4d_regularizers_in_the_step) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 1, 6, 1, 24, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    int64_t iters = 120;
    double op[2], scl[2];
    for (int reg = 0; reg < 2; reg++) {
        Gs4dConfig c = gs4d_test_tiny_config(iters);
        c.n = 200, c.warmup = iters, c.densify_every = 0, c.reset_every = 0, c.arap_weight = 0;
        if (reg) c.reg_opacity = 0.05, c.reg_scale = 0.5;
        Gs4dModel m;
        gs4d_init(&m, &c, &d, NULL);
        TensorRng rng = {.seed = 4, .stream = 3};
        for (int64_t step = 0; step < iters; step++) {
            int64_t v;
            optim_data_order(0, step, d.n, 1, &v);
            Gs4dStepInfo info;
            double l = gs4d_step(&m, &d, (int)v, &rng, &info);
            CHECK(isfinite(l));
            if (reg) CHECK_MSG(info.reg > 0 && fabs(l - info.photometric - info.reg) < 1e-6 * fabs(l),
                               "loss %g, photometric %g, reg %g", l, info.photometric, info.reg);
            else CHECK(info.reg == 0);
        }
        mean_opacity_scale(&m, &op[reg], &scl[reg]);
        gs4d_free(&m);
    }
    fprintf(stderr, "  mean opacity %.4f -> %.4f, mean scale %.5f -> %.5f with the regularizers\n", op[0], op[1], scl[0], scl[1]);
    CHECK_MSG(op[1] < op[0] && scl[1] < scl[0], "opacity %g vs %g, scale %g vs %g", op[1], op[0], scl[1], scl[0]);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* mean over the canonical set of the smallest scale, and of the smallest / largest scale */
static void mean_min_scale(const Gs4dModel *m, double *smin, double *ratio) {
    TensorScope *sc = tensor_scope_begin();
    GsGaussians canon = gs4d_canonical(m);
    Tensor *s = tensor_contiguous(tensor_to(tensor_cast(canon.scales, TENSOR_F64), TENSOR_CPU));
    const double *v = tensor_data_ptr(s);
    int64_t n = s->shape[0], k = s->shape[1];
    *smin = *ratio = 0;
    for (int64_t i = 0; i < n; i++) {
        double lo = v[i * k], hi = v[i * k];
        for (int64_t j = 1; j < k; j++) lo = fmin(lo, v[i * k + j]), hi = fmax(hi, v[i * k + j]);
        *smin += exp(lo) / (double)n, *ratio += exp(lo - hi) / (double)n;
    }
    tensor_scope_end(sc);
}

/* optim.reg_flat (issue 18): the same anisotropic static fit with the flatness term ends with
 * thinner Gaussians (a smaller mean smallest scale) that are flatter (smallest / largest) than
 * without it, and the step's info.reg carries it. */
TEST(gs4d_reg_flat_thins_the_gaussians) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 1, 6, 1, 24, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    int64_t iters = 120;
    double smin[2], ratio[2];
    for (int flat = 0; flat < 2; flat++) {
        Gs4dConfig c = gs4d_test_tiny_config(iters);
        c.n = 200, c.isotropic = false, c.warmup = iters, c.densify_every = 0, c.reset_every = 0, c.arap_weight = 0;
        if (flat) c.reg_flat = 1;
        Gs4dModel m;
        gs4d_init(&m, &c, &d, NULL);
        TensorRng rng = {.seed = 4, .stream = 3};
        for (int64_t step = 0; step < iters; step++) {
            int64_t v;
            optim_data_order(0, step, d.n, 1, &v);
            Gs4dStepInfo info;
            CHECK(isfinite(gs4d_step(&m, &d, (int)v, &rng, &info)));
            CHECK(flat ? info.reg > 0 : info.reg == 0);
        }
        mean_min_scale(&m, &smin[flat], &ratio[flat]);
        gs4d_free(&m);
    }
    fprintf(stderr, "  mean smallest scale %.5f -> %.5f, smallest / largest %.3f -> %.3f with reg_flat\n", smin[0],
            smin[1], ratio[0], ratio[1]);
    CHECK_MSG(smin[1] < 0.8 * smin[0] && ratio[1] < ratio[0], "smallest %g vs %g, ratio %g vs %g", smin[1], smin[0],
              ratio[1], ratio[0]);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* ---- time curriculum ------------------------------------------------------------------------------ */

/* whether x lands on alpha > 0.5 in at least half of the views of time t that see it */
static bool carved_by_time(const Gs4dView *v, int n, float t, const double x[3]) {
    int seen = 0, hit = 0;
    for (int k = 0; k < n; k++) {
        if (v[k].time != t) continue;
        double uv[2], z;
        if (!ds_camera_project(&v[k].cam, x, uv, &z)) continue;
        int i = (int)floor(uv[0]), j = (int)floor(uv[1]), w = v[k].cam.width;
        if (i < 0 || j < 0 || i >= w || j >= v[k].cam.height) continue;
        seen++;
        hit += v[k].rgba[((size_t)j * w + i) * 4 + 3] > 0.5f;
    }
    return seen > 0 && 2 * hit >= seen;
}

TEST(gs4d_time_curriculum_carves_and_picks) {
    TensorScope *sc = tensor_scope_begin();
    /* three times, four cameras around the origin each, listed out of time order (1, 0, 0.5);
     * at time 0 the object fills the left half of every image, later it fills every image, so
     * a vote over all views keeps points that the first time's views carve away */
    enum { W = 16, NV = 12 };
    static float half[W * W * 4], full[W * W * 4];
    for (int p = 0; p < W * W; p++) {
        for (int a = 0; a < 3; a++) half[4 * p + a] = full[4 * p + a] = 0.5f;
        half[4 * p + 3] = p % W < W / 2, full[4 * p + 3] = 1;
    }
    const float times[3] = {1.f, 0.f, 0.5f};
    Gs4dView v[NV];
    for (int k = 0; k < NV; k++) {
        double ang = 2 * M_PI * (k % 4) / 4, eye[3] = {3 * sin(ang), 0.3, -3 * cos(ang)}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
        float t = times[k / 4];
        v[k] = (Gs4dView){.cam = ds_camera_look_at(eye, at, up, W, W, 50), .time = t, .rgba = t == 0.f ? half : full};
    }
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(v, NV, &d, err, sizeof err) == 0, "%s", err);
    for (int k = 1; k < NV; k++) CHECK(v[d.by_time[k - 1]].time <= v[d.by_time[k]].time);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = 300, cfg.depth = 2, cfg.width = 8, cfg.skip = 0, cfg.freq_x = 2, cfg.freq_t = 2, cfg.arap_k = 3;
    cfg.warmup = 10;
    int outside[2] = {0, 0};
    for (int ramp = 0; ramp < 2; ramp++) {
        cfg.time_ramp = ramp ? 100 : 0;
        Gs4dModel m;
        gs4d_init(&m, &cfg, &d, NULL);
        const float *mu = tensor_f32(tensor_contiguous(m.means));
        for (int64_t i = 0; i < cfg.n; i++) {
            double x[3] = {mu[3 * i], mu[3 * i + 1], mu[3 * i + 2]};
            outside[ramp] += !carved_by_time(v, NV, 0.f, x);
        }
        /* the views a step may train on: every one without the curriculum; the first time's
         * through the warm-up, then the window widens to 0.5 halfway and to all at the end */
        const int64_t steps[4] = {0, 10, 60, 110};
        const float tmax[4] = {0.f, 0.f, 0.5f, 1.f};
        const int count[4] = {4, 4, 8, 12};
        for (int s = 0; s < 4; s++) {
            bool hitv[NV] = {false};
            int distinct = 0;
            for (int k = 0; k < NV; k++) {
                int p = gs4d_pick_view(&m, &d, steps[s], k);
                CHECK(p >= 0 && p < NV);
                if (!ramp) {
                    CHECK(p == k);
                    continue;
                }
                CHECK_MSG(v[p].time <= tmax[s], "step %lld: view %d of time %g, window ends at %g", (long long)steps[s], p,
                          (double)v[p].time, (double)tmax[s]);
                distinct += !hitv[p], hitv[p] = true;
            }
            if (ramp) CHECK_MSG(distinct == count[s], "step %lld: %d distinct views, want %d", (long long)steps[s], distinct, count[s]);
        }
        gs4d_free(&m);
    }
    CHECK_MSG(outside[1] == 0, "with the curriculum %d of %d means lie outside the first time's carve", outside[1], (int)cfg.n);
    CHECK_MSG(outside[0] > cfg.n / 50, "without it only %d of %d (the test would not tell the carves apart)", outside[0], (int)cfg.n);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}

/* cfg.supersample = 2: every render is the 2×2 block mean of the render through the camera at
 * twice the resolution (pixel centers at x + 0.5, so the blocks tile the pixels exactly), which
 * differs from the plain render (the dilation and the edges), and training through it runs.
 * cfg.dilation reaches every render: the 2× render is made with it, and it changes the image. */
TEST(gs4d_supersample_renders_block_means) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 1, 4, 1, 16, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    int64_t iters = 30;
    Gs4dConfig c = gs4d_test_tiny_config(iters);
    c.n = 200, c.supersample = 2, c.dilation = 0.1, c.densify_every = 0, c.reset_every = 0, c.arap_weight = 0;
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    const double bg[3] = {0.2, 0.5, 0.9};
    const DsCamera *cam = &d.views[0].cam;
    int w = cam->width, h = cam->height;
    Tensor *img = gs4d_render(&m, cam, d.views[0].time, bg);
    CHECK(img->ndim == 3 && img->shape[0] == h && img->shape[1] == w && img->shape[2] == 3);
    DsCamera c2 = *cam;
    c2.width *= 2, c2.height *= 2, c2.fx *= 2, c2.fy *= 2, c2.cx *= 2, c2.cy *= 2;
    GsGaussians g = gs4d_canonical(&m);
    const GsRenderOptions sharp = {.dilation = 0.1};
    const float *big = tensor_f32(tensor_contiguous(gs_render_with(&g, &c2, bg, &sharp).image));
    const float *big_default = tensor_f32(tensor_contiguous(gs_render(&g, &c2, bg).image));
    const float *one = tensor_f32(tensor_contiguous(gs_render_with(&g, cam, bg, &sharp).image));
    const float *ss = tensor_f32(img);
    double worst = 0, differ = 0, by_dilation = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int a = 0; a < 3; a++) {
                double mean = 0, mean_default = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) {
                        mean += 0.25 * big[((2 * y + dy) * 2 * w + 2 * x + dx) * 3 + a];
                        mean_default += 0.25 * big_default[((2 * y + dy) * 2 * w + 2 * x + dx) * 3 + a];
                    }
                int i = (y * w + x) * 3 + a;
                worst = fmax(worst, fabs(ss[i] - mean));
                differ = fmax(differ, fabs(ss[i] - one[i]));
                by_dilation = fmax(by_dilation, fabs(ss[i] - mean_default));
            }
    CHECK_MSG(worst < 1e-6, "supersampled render vs block means of the 2x render: %g", worst);
    CHECK_MSG(differ > 1e-3, "the supersampled render equals the plain one (%g)", differ);
    CHECK_MSG(by_dilation > 1e-3, "dilation 0.1 renders as the default 0.3 does (%g)", by_dilation);
    TensorRng rng = {.seed = 2, .stream = 3};
    Gs4dStepInfo info;
    double first = 0, last = 0;
    for (int64_t step = 0; step < iters; step++) {
        int64_t v;
        optim_data_order(0, step, d.n, 1, &v);
        double l = gs4d_step(&m, &d, (int)v, &rng, &info);
        CHECK(isfinite(l));
        if (step < 4) first += l / 4;
        if (step >= iters - 4) last += l / 4;
    }
    CHECK_MSG(last < first, "loss %g -> %g over %lld supersampled steps", first, last, (long long)iters);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* gs4d_lr with lr_start: the means' and MLP's rates hold their start value up to lr_start, then
 * decay log-linearly to the final rate at lr_steps (the geometric mean halfway); other groups
 * are constant; lr_start = 0 is the 3DGS decay from step 0. */
TEST(gs4d_lr_decay_starts_at_lr_start) {
    Gs4dModel m;
    memset(&m, 0, sizeof m);
    m.cfg = gs4d_defaults();
    m.extent = 2;
    m.cfg.lr_means = 1e-2, m.cfg.lr_means_final = 1e-4, m.cfg.lr_deform = 4e-3, m.cfg.lr_deform_final = 4e-5;
    m.cfg.lr_steps = 1000, m.cfg.lr_start = 400;
    for (int g = 0; g < 2; g++) {
        int grp = g ? GS4D_DEFORM : GS4D_MEANS;
        double a = (g ? 4e-3 : 1e-2) * 2, b = (g ? 4e-5 : 1e-4) * 2;
        CHECK_NEAR(gs4d_lr(&m, grp, 0), a, 1e-12 * a);
        CHECK_NEAR(gs4d_lr(&m, grp, 400), a, 1e-12 * a);
        CHECK_NEAR(gs4d_lr(&m, grp, 700), sqrt(a * b), 1e-9 * a);
        CHECK_NEAR(gs4d_lr(&m, grp, 1000), b, 1e-9 * b);
        CHECK_NEAR(gs4d_lr(&m, grp, 5000), b, 1e-9 * b);
    }
    m.cfg.lr_start = 0; /* the old schedule: halfway at 500 */
    CHECK_NEAR(gs4d_lr(&m, GS4D_MEANS, 500), sqrt(1e-2 * 1e-4) * 2, 1e-12);
    CHECK(gs4d_lr(&m, GS4D_MEANS, 400) < 1e-2 * 2 * 0.5);
}

/* `train.ramp_schedule` (with a time ramp) holds the means' rate, which metrics.jsonl logs, at
 * its start until every time is in (warmup + time_ramp = 40 here), then decays it; without the
 * flag it decays from step 0. */
TEST(gs4d_cli_ramp_schedule) {
    char dir[] = "/tmp/anima-gs4d-ramp-XXXXXX", cmd[2048], out[8192];
    CHECK(mkdtemp(dir));
    double lr[2][3] = {{0}};
    for (int flag = 0; flag < 2; flag++) {
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=1 %s gs4d fit --config configs/gs4d-tiny.json --set train.iters=60 --set train.warmup=20 "
                 "--set train.time_ramp=20 --set train.ramp_schedule=%s --set train.log_every=20 --set train.ckpt_every=0 "
                 "--set model.n=100 --no-progress --no-eval --out %s/r%d 2>&1",
                 test_anima_bin(), flag ? "true" : "false", dir, flag);
        int rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        char p[512], *log = NULL;
        long len = 0;
        snprintf(p, sizeof p, "%s/r%d/metrics.jsonl", dir, flag);
        CHECK(read_file(p, &log, &len));
        const char *q = log;
        for (int i = 0; i < 3 && q; i++) {
            q = strstr(q, "\"lr\":");
            if (q) lr[flag][i] = strtod(q + 5, NULL), q += 5;
        }
        free(log);
    }
    CHECK_MSG(lr[1][0] > 0 && lr[1][0] == lr[1][1] && lr[1][2] < 0.1 * lr[1][1], "with the flag: %g %g %g", lr[1][0],
              lr[1][1], lr[1][2]);
    CHECK_MSG(lr[0][0] < lr[1][0] && lr[0][1] < lr[0][0], "without it: %g %g %g", lr[0][0], lr[0][1], lr[0][2]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* ---- the silhouette Chamfer term ------------------------------------------------------------------ */

typedef struct {
    DsCamera cam;
    Gs4dMask mask;
} SilCtx;

static Tensor *fn_sil(int n, Tensor *const *in, void *user) {
    (void)n;
    SilCtx *c = user;
    return tensor_reshape(gs4d_silhouette_loss(in[0], &c->cam, &c->mask), 1, (int64_t[]){1});
}

TEST(gs4d_silhouette_value_and_gradcheck) {
    TensorScope *sc = tensor_scope_begin();
    enum { W = 16 };
    static float rgba[W * W * 4];
    /* the mask: a 6 × 4 block of pixels x in [5, 11), y in [6, 10) */
    for (int y = 0; y < W; y++)
        for (int x = 0; x < W; x++) rgba[4 * (y * W + x) + 3] = x >= 5 && x < 11 && y >= 6 && y < 10;
    SilCtx c;
    double eye[3] = {0, 0, -3}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    c.cam = ds_camera_look_at(eye, at, up, W, W, 50);
    gs4d_mask_make(rgba, W, W, &c.mask);
    CHECK(c.mask.n_mask == 24 && c.mask.n_contour == 16); /* 24 pixels, the 2 × 4 inside ones not on the contour */
    /* value: one center projected exactly onto pixel (5, 6)'s center is inside; the contour term is
     * the mean over the 16 contour pixels of the squared distance to it / 16² */
    double z = 3, uv[2] = {5.5, 6.5}, X[3];
    /* the camera looks along +z from (0, 0, −3); invert the projection at depth 3 */
    {
        double xc = (uv[0] - c.cam.cx) * z / c.cam.fx, yc = (uv[1] - c.cam.cy) * z / c.cam.fy, pc[3] = {xc, yc, z};
        for (int a = 0; a < 3; a++) {
            X[a] = 0;
            for (int r = 0; r < 3; r++) X[a] += c.cam.R[3 * r + a] * (pc[r] - c.cam.t[r]);
        }
    }
    double want = 0;
    for (int k = 0; k < c.mask.n_contour; k++) {
        double dx = c.mask.contour[2 * k] - uv[0], dy = c.mask.contour[2 * k + 1] - uv[1];
        want += (dx * dx + dy * dy) / (16.0 * 16.0 * c.mask.n_contour);
    }
    Tensor *one = tensor_from_f64(2, (int64_t[]){1, 3}, TENSOR_F64, X);
    CHECK_NEAR(tensor_item(gs4d_silhouette_loss(one, &c.cam, &c.mask)), want, 1e-9);
    /* the same center moved out of the mask to pixel (2.5, 6.5): plus its squared distance to the
     * nearest mask pixel center (5.5, 6.5), 9 px², over n = 1 */
    {
        double u2[2] = {2.5, 6.5}, xc = (u2[0] - c.cam.cx) * z / c.cam.fx, yc = (u2[1] - c.cam.cy) * z / c.cam.fy, pc[3] = {xc, yc, z};
        for (int a = 0; a < 3; a++) {
            X[a] = 0;
            for (int r = 0; r < 3; r++) X[a] += c.cam.R[3 * r + a] * (pc[r] - c.cam.t[r]);
        }
        want = 9.0 / 256;
        for (int k = 0; k < c.mask.n_contour; k++) {
            double dx = c.mask.contour[2 * k] - u2[0], dy = c.mask.contour[2 * k + 1] - u2[1];
            want += (dx * dx + dy * dy) / (16.0 * 16.0 * c.mask.n_contour);
        }
    }
    one = tensor_from_f64(2, (int64_t[]){1, 3}, TENSOR_F64, X);
    CHECK_NEAR(tensor_item(gs4d_silhouette_loss(one, &c.cam, &c.mask)), want, 1e-9);
    /* gradcheck: 7 centers scattered in and out of the mask (away from argmin ties), one behind
     * the camera (left out) */
    double pts[21];
    for (int i = 0; i < 7; i++) {
        pts[3 * i] = 1.2 * urand() - 0.6, pts[3 * i + 1] = 1.2 * urand() - 0.6, pts[3 * i + 2] = 0.5 * urand() - 0.25;
    }
    pts[20] = -4; /* behind the camera at z = −3 */
    Tensor *in[1] = {tensor_requires_grad(tensor_from_f64(2, (int64_t[]){7, 3}, TENSOR_F64, pts), true)};
    AgGradcheckReport r;
    bool ok = ag_gradcheck(fn_sil, 1, in, &c, 1e-7, 1e-9, 1e-5, &r);
    CHECK_MSG(ok, "input %d element %lld: analytic %.10g vs numeric %.10g", r.bad_input, (long long)r.bad_index, r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-4);
    gs4d_mask_free(&c.mask);
    tensor_scope_end(sc);
}

/* the synthetic quadruped's training views (frames × views at size²) as Gs4dData */
static bool quad_data(int frames, int views, int size, Gs4dSynth *s, Gs4dData *d) {
    char err[512];
    if (gs4d_synth_make("quadruped", 0, frames, views, 1, size, s, err, sizeof err) == 0 &&
        gs4d_data_make(s->train, s->n_train, d, err, sizeof err) == 0)
        return true;
    fprintf(stderr, "    quad_data: %s\n", err);
    return false;
}

/* how far the MLP's Δμ at time t strays over the canonical Gaussians: max |Δμ_i − Δμ_0| */
static double dmu_range(const Gs4dModel *m, double t) {
    TensorScope *sc = tensor_scope_begin();
    Tensor *dmu, *ds;
    gs4d_mlp_forward(&m->mlp, &m->cfg, m->means, t, &dmu, &ds, NULL, NULL, NULL);
    int64_t n = dmu->shape[0];
    double *v = malloc(sizeof(double) * (size_t)(3 * n)), r = 0;
    tensor_to_f64_array(dmu, v);
    for (int64_t i = 1; i < n; i++)
        for (int a = 0; a < 3; a++) r = fmax(r, fabs(v[3 * i + a] - v[a]));
    free(v);
    tensor_scope_end(sc);
    return r;
}

/* optim.eps_deform (session 23): the deformation MLP's Adam takes its own eps, every other group
 * keeps the 3DGS optimizer's 1e-15 (the default leaves the MLP at 1e-15 too). */
TEST(gs4d_eps_deform_reaches_the_mlp_optimizer) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    Gs4dData d;
    CHECK(quad_data(1, 4, 16, &s, &d));
    for (int k = 0; k < 2; k++) {
        Gs4dConfig c = gs4d_test_tiny_config(20);
        c.n = 100;
        if (k) c.eps_deform = 1e-8;
        Gs4dModel m;
        gs4d_init(&m, &c, &d, NULL);
        CHECK_MSG(m.gopt[GS4D_DEFORM].cfg.eps == (k ? 1e-8 : 1e-15), "deform eps %g", m.gopt[GS4D_DEFORM].cfg.eps);
        CHECK_MSG(m.gopt[GS4D_MEANS].cfg.eps == 1e-15, "means eps %g", m.gopt[GS4D_MEANS].cfg.eps);
        gs4d_free(&m);
    }
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* model.trunk_init he: the deformation MLP's ReLU layers draw N(0, 2/fan_in) with zero biases, and
 * at the start the trunk's output still depends on the input (the reason for the key: under the
 * PyTorch default the input-dependent part shrinks ~2.5x a layer, Gs4dConfig.trunk_init). Measured
 * through a Δμ head with unit weights: its spread over the Gaussians is the trunk's. */
TEST(gs4d_trunk_init_he_keeps_the_input_dependence) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    Gs4dData d;
    CHECK(quad_data(1, 4, 16, &s, &d));
    double spread[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        Gs4dConfig c = gs4d_test_tiny_config(20);
        c.n = 400, c.depth = 8, c.width = 128, c.skip = 4, c.freq_x = 10, c.freq_t = 6, c.head_init = 1;
        c.trunk_init = k ? GS4D_INIT_HE : GS4D_INIT_TORCH;
        Gs4dModel m;
        gs4d_init(&m, &c, &d, NULL);
        if (k) {
            for (int i = 0; i < c.depth; i++) {
                const Tensor *w = m.mlp.layer[i].weight, *b = m.mlp.layer[i].bias;
                int64_t nw = tensor_numel(w), nb = tensor_numel(b), fan_in = w->shape[1];
                double *wv = malloc(sizeof(double) * (size_t)nw), *bv = malloc(sizeof(double) * (size_t)nb), ss = 0, bmax = 0;
                tensor_to_f64_array(w, wv);
                tensor_to_f64_array(b, bv);
                for (int64_t j = 0; j < nw; j++) ss += wv[j] * wv[j];
                for (int64_t j = 0; j < nb; j++) bmax = fmax(bmax, fabs(bv[j]));
                free(wv), free(bv);
                double sd = sqrt(ss / (double)nw), want = sqrt(2.0 / (double)fan_in);
                CHECK_MSG(fabs(sd / want - 1) < 0.05 && bmax == 0, "layer %d: weight std %.4f (want %.4f), |bias| max %g", i,
                          sd, want, bmax);
            }
        }
        spread[k] = dmu_range(&m, 0.5);
        gs4d_free(&m);
    }
    CHECK_MSG(spread[1] > 10 * spread[0], "spread of the trunk's output over the Gaussians: he %.4g, torch %.4g", spread[1],
              spread[0]);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* train.redo_every (ReDo): two trunk layers killed outright (every bias −100: their ReLUs are 0
 * for every input, as the collapse runs end), the last and the one feeding the skip concatenation,
 * are recycled at the next check — every unit of them and no other, the deformation unchanged at that step (the outgoing weights start at 0), and the
 * layer alive again afterwards; with the check off it stays dead. */
TEST(gs4d_redo_recycles_a_dead_layer) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    Gs4dData d;
    CHECK(quad_data(3, 4, 16, &s, &d));
    for (int k = 0; k < 2; k++) {
        Gs4dConfig c = gs4d_test_tiny_config(20);
        c.n = 200, c.warmup = 2, c.densify_every = 0, c.redo_every = k ? 1 : 0, c.trunk_init = GS4D_INIT_HE;
        Gs4dModel m;
        gs4d_init(&m, &c, &d, NULL);
        TensorRng rng = {.seed = 7, .stream = 3};
        for (int st = 0; st < 2; st++) gs4d_step(&m, &d, st % d.n, &rng, NULL); /* the warm-up */
        /* the last layer (feeding the heads) and the one before the skip (feeding the concatenation) */
        int last = c.depth - 1, pre_skip = c.skip - 1;
        for (int l = 0; l < 2; l++) {
            Tensor *b = m.mlp.layer[l ? pre_skip : last].bias;
            float *bf = tensor_f32(b);
            for (int64_t j = 0; j < b->shape[0]; j++) bf[j] = -100;
        }
        gs4d_step(&m, &d, 0, &rng, NULL); /* the first deformation step, then the check */
        CHECK_MSG(m.revived == (k ? 2 * c.width : 0), "redo %d: %lld units recycled (want %d)", k, (long long)m.revived,
                  k ? 2 * c.width : 0);
        int dead = 0;
        for (int l = 0; l < 2; l++) {
            float *bf = tensor_f32(m.mlp.layer[l ? pre_skip : last].bias);
            for (int j = 0; j < c.width; j++) dead += bf[j] < -50;
        }
        CHECK_MSG(dead == (k ? 0 : 2 * c.width), "redo %d: %d biases still at -100", k, dead);
        if (k) { /* the skip layer's input is [γ, h]: the recycled units' columns are the last width */
            const NnLinear *sl = &m.mlp.layer[c.skip];
            const float *wf = tensor_f32(sl->weight);
            int nonzero = 0;
            for (int64_t r = 0; r < sl->out; r++)
                for (int64_t j = sl->in - c.width; j < sl->in; j++) nonzero += wf[r * sl->in + j] != 0;
            CHECK_MSG(nonzero == 0 && sl->in == m.mlp.in_dim + c.width, "%d outgoing weights of recycled units are not 0",
                      nonzero);
        }
        if (k) {
            /* at the check: the heads' biases alone before and after (outgoing weights start at 0) */
            double r0 = dmu_range(&m, 0.5);
            CHECK_MSG(r0 == 0, "recycled units changed the deformation at once: range %g", r0);
            for (int st = 0; st < 10; st++) gs4d_step(&m, &d, st % d.n, &rng, NULL);
            CHECK_MSG(dmu_range(&m, 0.5) > 0, "10 steps after the recycling the deformation is still one translation");
        }
        gs4d_free(&m);
    }
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* The run folder is locked while a run writes it: a second `gs4d fit` into it, --resume or
 * --force, exits 2 naming the lock and leaves the running run's log alone; once that run ends
 * (here SIGTERM: it checkpoints and exits) the folder resumes. */
TEST(gs4d_cli_run_folder_is_locked_while_running) {
    char dir[] = "/tmp/anima-gs4d-lock-XXXXXX", cmd[2048], out[8192], p[600];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 %s gs4d fit --config configs/gs4d-tiny.json --set train.iters=1000000 --set model.n=200 "
             "--set train.log_every=5 --no-progress --video none --out %s/run >%s/first.log 2>&1 & echo $!",
             test_anima_bin(), dir, dir);
    CHECK(test_run_capture(cmd, out, sizeof out) == 0);
    long pid = atol(out);
    CHECK(pid > 0);
    snprintf(p, sizeof p, "%s/run/metrics.jsonl", dir);
    struct stat st;
    for (int i = 0; i < 600 && (stat(p, &st) != 0 || st.st_size == 0); i++) usleep(50000); /* its first log line */
    CHECK_MSG(stat(p, &st) == 0 && st.st_size > 0, "the first run wrote no log line in 30 s");
    const char *modes[2] = {"--resume", "--force"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d fit --config configs/gs4d-tiny.json --no-progress --out %s/run %s 2>&1",
                 test_anima_bin(), dir, modes[k]);
        int rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 2 && strstr(out, "in use by another process") && strstr(out, "/run/.lock"), "%s: rc %d: %s", modes[k], rc, out);
        struct stat now;
        CHECK_MSG(stat(p, &now) == 0 && now.st_size >= st.st_size, "%s emptied the running run's log", modes[k]);
    }
    kill((pid_t)pid, SIGTERM);
    /* the lock is free once the process is gone (a reaped or zombie child alike) */
    snprintf(p, sizeof p, "%s/run/.lock", dir);
    int fd = open(p, O_RDWR), free_now = 0;
    CHECK(fd >= 0);
    for (int i = 0; i < 600 && !free_now; i++) {
        free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
        if (!free_now) usleep(50000);
    }
    close(fd);
    CHECK_MSG(free_now, "the first run did not stop on SIGTERM within 30 s");
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s gs4d fit --out %s/run --resume --stop-after 1 --no-progress 2>&1", test_anima_bin(), dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "resuming"), "after the first run ended: rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* ---- the appearance a run renders with, from its trajectories ------------------------------------ */

/* gs4d_trajectories_appearance: per Gaussian the mean log-scale over frames and axes, the logit of
 * the mean opacity and the mean color of frames/{scales, opacities, colors}; a file of another n,
 * frames that disagree, or no file at all are refused with the file named. */
TEST(gs4d_trajectories_appearance_means) {
    char dir[] = "/tmp/anima-gs4d-app-XXXXXX", path[128], err[1024] = "";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/trajectories.h5", dir);
    enum { F = 3, N = 2 };
    /* Gaussian 0 shrinks frame by frame (σ 0.4, 0.1, 0.025: geometric mean 0.1); Gaussian 1 stays */
    float sc[F * N] = {0.4f, 0.05f, 0.1f, 0.05f, 0.025f, 0.05f};
    float op[F * N] = {0.2f, 0.9f, 0.5f, 0.9f, 0.8f, 0.9f};
    float co[F * N * 3];
    for (int i = 0; i < F * N * 3; i++) co[i] = (float)(i % 7) / 7.0f;
    char tmp[256];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, sizeof err);
    CHECK_MSG(f >= 0, "%s", err);
    hsize_t d3[3] = {F, N, 1}, d2[2] = {F, N}, dc[3] = {F, N, 3};
    bool ok = base_h5_write_checked(f, "frames/scales", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, sc, 1 << 20, false) == 0 &&
              base_h5_write_checked(f, "frames/opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, op, 1 << 20, false) == 0 &&
              base_h5_write_checked(f, "frames/colors", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dc, co, 1 << 20, false) == 0;
    CHECK_MSG(base_h5_save_end(f, tmp, path, ok, "trajectories", err, sizeof err) == 0, "%s", err);
    float ls[N], lg[N], rgb[N * 3];
    CHECK_MSG(gs4d_trajectories_appearance(path, N, ls, lg, rgb, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(fabs(exp(ls[0]) - 0.1) < 1e-6 && fabs(exp(ls[1]) - 0.05) < 1e-7, "σ %g %g", exp(ls[0]), exp(ls[1]));
    CHECK_MSG(fabs(1 / (1 + exp(-lg[0])) - 0.5) < 1e-6 && fabs(1 / (1 + exp(-lg[1])) - 0.9) < 1e-6, "opacity %g %g",
              1 / (1 + exp(-lg[0])), 1 / (1 + exp(-lg[1])));
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) {
            double m = (co[(0 * N + i) * 3 + k] + co[(1 * N + i) * 3 + k] + co[(2 * N + i) * 3 + k]) / 3.0;
            CHECK(fabs(rgb[i * 3 + k] - m) < 1e-6);
        }
    CHECK(gs4d_trajectories_appearance(path, N + 1, ls, NULL, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, path) != NULL, "%s", err);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.h5", dir);
    CHECK(gs4d_trajectories_appearance(missing, N, ls, lg, rgb, err, sizeof err) != 0 && strstr(err, missing));
    unlink(path), rmdir(dir);
}

/* gs4d_run_open of a folder that is not a finished run: an error naming the file it needed */
TEST(gs4d_run_open_names_what_is_missing) {
    char dir[] = "/tmp/anima-test-gs4d-open-XXXXXX", err[2048], path[128];
    if (!mkdtemp(dir)) abort();
    TensorScope *sc = tensor_scope_begin();
    Gs4dRun r;
    CHECK(gs4d_run_open(dir, "test", &r, err, sizeof err) == -1 && strstr(err, "config.json"));
    /* a config naming a folder without views */
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fprintf(f, "{\"data\": {\"dir\": \"%s/none\"}}\n", dir), fclose(f);
    CHECK(gs4d_run_open(dir, "test", &r, err, sizeof err) == -1 && strstr(err, "none"));
    tensor_scope_end(sc);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* the correspondence drift of gs4d_eval_geometry: Gaussians that stay at their canonical places
 * (before the warm-up ends the model does not deform) on a surface that stays too drift 0 in every
 * frame; on the synthetic sequence's moving surface they fall behind it, frame by frame more */
TEST(gs4d_eval_drift_follows_the_material) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 4, 2, 1, 16, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d, dt;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0 && gs4d_data_make(s.test, s.n_test, &dt, err, sizeof err) == 0,
              "%s", err);
    Gs4dConfig c = gs4d_test_tiny_config(10);
    c.warmup = 1000000; /* the canonical set at every time */
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    /* the canonical Gaussians sit near the canonical (t = 0) surface, as the trained ones do */
    float *still = malloc(sizeof(float) * (size_t)s.frames * s.mesh.nv * 3);
    for (int f = 0; f < s.frames; f++) memcpy(still + (size_t)f * s.mesh.nv * 3, s.mesh.v, sizeof(float) * s.mesh.nv * 3);
    Gs4dSurfaceSeq moving = {s.frames, s.times, s.frame_verts, s.mesh.nv, s.mesh.nf, s.mesh.f, s.mesh.v};
    Gs4dSurfaceSeq fixed = moving;
    fixed.verts = still;
    Gs4dGeometry g0, g1;
    gs4d_eval_geometry(&m, &dt, &fixed, NULL, NULL, &g0);
    gs4d_eval_geometry(&m, &dt, &moving, NULL, NULL, &g1);
    CHECK_MSG(g0.tracked > 0 && g0.drift == 0 && g0.drift_p90 == 0, "still surface: %lld tracked, drift %g / %g", (long long)g0.tracked,
              g0.drift, g0.drift_p90);
    CHECK_MSG(g1.per_frame[0].drift == 0 && g1.per_frame[s.frames - 1].drift > g1.per_frame[1].drift &&
                  g1.per_frame[s.frames - 1].drift > 1,
              "moving surface: per frame %g %g %g %g", g1.per_frame[0].drift, g1.per_frame[1].drift, g1.per_frame[2].drift,
              g1.per_frame[3].drift);
    gs4d_geometry_free(&g0), gs4d_geometry_free(&g1);
    free(still);
    gs4d_free(&m);
    gs4d_data_free(&d), gs4d_data_free(&dt);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}
