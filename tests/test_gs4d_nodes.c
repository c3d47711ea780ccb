/* tests/test_gs4d_nodes.c — gs4d's sparse control nodes (models/gs4d/nodes.h): farthest-point
 * sampling and the Gaussian → node kNN against brute force, the quaternion ops against the
 * rotation they stand for, the RBF weights, blend and LBS (values, rigid motions reproduced
 * exactly, f64 finite-difference gradchecks), the node model's deformation gradcheck through the
 * MLP, the per-frame codes and the nodes, a tiny sequence that trains, node relocation, and resume
 * reproducing an uninterrupted run. */
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"
#include "base/sort.h"
#include "autograd/gradcheck.h"
#include "models/gaussians/fit.h"
#include "models/gs4d/arap.h"
#include "models/gs4d/gs4d.h"
#include "models/gs4d/nodes.h"
#include "models/gs4d/synth.h"
#include "optim/train.h"
#include "tests/gs4d_test_util.h"
#include "tests/test.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (double)(rs >> 11) * (1.0 / 9007199254740992.0);
}

static double d2(const float *a, const float *b) {
    double s = 0;
    for (int i = 0; i < 3; i++) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return s;
}

/* FPS: the first pick is `first`, picks are distinct, and each pick is (one of) the farthest from
 * those before it; kNN against a brute-force sort */
TEST(gs4d_fps_and_knn_to) {
    enum { N = 300, M = 40, K = 5 };
    static float x[3 * N], ref[3 * M];
    for (int i = 0; i < 3 * N; i++) x[i] = (float)(urand() * 2 - 1);
    int64_t pick[M];
    gs4d_fps(x, N, M, 7, pick);
    CHECK(pick[0] == 7);
    for (int j = 1; j < M; j++) {
        double best = -1, got = 1e300;
        for (int i = 0; i < N; i++) {
            double dm = 1e300;
            for (int l = 0; l < j; l++) dm = fmin(dm, d2(x + 3 * i, x + 3 * pick[l]));
            best = fmax(best, dm);
            if (i == pick[j]) got = dm;
        }
        CHECK_MSG(got == best && got > 0, "pick %d: distance² %g, the farthest %g", j, got, best);
    }
    for (int j = 0; j < M; j++) memcpy(ref + 3 * j, x + 3 * pick[j], sizeof(float) * 3);
    static int32_t idx[N * K];
    gs4d_knn_to(ref, M, x, N, K, idx);
    for (int i = 0; i < N; i++) {
        bool used[M] = {false};
        for (int r = 0; r < K; r++) { /* the r-th nearest by brute force (ties by index) */
            int b = -1;
            for (int j = 0; j < M; j++)
                if (!used[j] && (b < 0 || d2(x + 3 * i, ref + 3 * j) < d2(x + 3 * i, ref + 3 * b))) b = j;
            used[b] = true;
            CHECK_MSG(idx[i * K + r] == b, "point %d, rank %d: %d, brute force %d", i, r, idx[i * K + r], b);
        }
    }
}

static void quat_rot(const double q[4], double R[9]) { /* reference, q normalized first */
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                   2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                   2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
    memcpy(R, r, sizeof r);
}

static Tensor *fn_quat(int n, Tensor *const *in, void *user) {
    (void)n, (void)user;
    Tensor *parts[2] = {tensor_flatten(gs4d_quat_to_rotmat(in[0]), 0, -1), tensor_flatten(gs4d_quat_mul(in[0], in[1]), 0, -1)};
    return tensor_cat(2, parts, 0);
}

/* the rotation matrix of a quaternion as the formula; R(a ⊗ b) = R(a) R(b) (the Hamilton product);
 * both gradchecked */
TEST(gs4d_quaternion_ops) {
    TensorScope *sc = tensor_scope_begin();
    enum { M = 6 };
    double qa[4 * M], qb[4 * M];
    for (int i = 0; i < 4 * M; i++) qa[i] = urand() - 0.5, qb[i] = urand() - 0.5;
    Tensor *a = tensor_from_f64(2, (int64_t[]){M, 4}, TENSOR_F64, qa), *b = tensor_from_f64(2, (int64_t[]){M, 4}, TENSOR_F64, qb);
    double Ra[9 * M], Rab[9 * M];
    tensor_to_f64_array(gs4d_quat_to_rotmat(a), Ra);
    tensor_to_f64_array(gs4d_quat_to_rotmat(gs4d_quat_mul(a, b)), Rab);
    for (int j = 0; j < M; j++) {
        double R1[9], R2[9];
        quat_rot(qa + 4 * j, R1);
        quat_rot(qb + 4 * j, R2);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double p = 0;
                for (int l = 0; l < 3; l++) p += R1[3 * r + l] * R2[3 * l + c];
                CHECK(fabs(Ra[9 * j + 3 * r + c] - R1[3 * r + c]) < 1e-12);
                CHECK_MSG(fabs(Rab[9 * j + 3 * r + c] - p) < 1e-12, "node %d (%d, %d): %g vs %g", j, r, c, Rab[9 * j + 3 * r + c], p);
            }
    }
    Tensor *in[2] = {tensor_requires_grad(a, true), tensor_requires_grad(b, true)};
    AgGradcheckReport r;
    CHECK_MSG(ag_gradcheck(fn_quat, 2, in, NULL, 1e-6, 1e-8, 1e-6, &r), "input %d element %lld: %.10g vs %.10g", r.bad_input,
              (long long)r.bad_index, r.analytic, r.numeric);
    tensor_scope_end(sc);
}

typedef struct {
    Tensor *idx;
    int k;
} BlendCtx;

/* in: x (N, 3), p (M, 3), rho (M, 1), q (M, 4), T (M, 3), v (M, 2); out: weights, LBS, blend */
static Tensor *fn_blend(int n, Tensor *const *in, void *user) {
    (void)n;
    BlendCtx *c = user;
    Tensor *w = gs4d_rbf_weights(in[0], in[1], in[2], c->idx, c->k);
    Tensor *y = gs4d_node_lbs(in[0], in[1], gs4d_quat_to_rotmat(in[3]), in[4], w, c->idx, c->k);
    Tensor *parts[3] = {tensor_flatten(w, 0, -1), tensor_flatten(y, 0, -1), tensor_flatten(gs4d_node_blend(w, in[5], c->idx, c->k), 0, -1)};
    return tensor_cat(3, parts, 0);
}

/* the weights are the normalized RBF of the formula and sum to one; one rigid motion shared by
 * every node moves every point rigidly (exactly: Σ w = 1); the gradients of the weights, the LBS
 * and the blend with respect to points, nodes, radii, rotations and translations match f64
 * finite differences */
TEST(gs4d_node_blend_values_and_gradcheck) {
    TensorScope *sc = tensor_scope_begin();
    enum { N = 12, M = 5, K = 3 };
    float xf[3 * N], pf[3 * M];
    double x[3 * N], p[3 * M], rho[M], q[4 * M], T[3 * M], v[2 * M];
    for (int i = 0; i < 3 * N; i++) x[i] = urand() - 0.5, xf[i] = (float)x[i];
    for (int i = 0; i < 3 * M; i++) p[i] = urand() - 0.5, pf[i] = (float)p[i], T[i] = 0.2 * (urand() - 0.5);
    for (int j = 0; j < M; j++) rho[j] = log(0.3 + 0.2 * urand()), v[2 * j] = urand(), v[2 * j + 1] = urand();
    for (int i = 0; i < 4 * M; i++) q[i] = (i % 4 == 0) + 0.3 * (urand() - 0.5);
    int32_t nb[N * K];
    gs4d_knn_to(pf, M, xf, N, K, nb);
    Tensor *idx = tensor_empty(1, (int64_t[]){N * K}, TENSOR_I64);
    for (int i = 0; i < N * K; i++) tensor_i64(idx)[i] = nb[i];
    Tensor *tx = tensor_from_f64(2, (int64_t[]){N, 3}, TENSOR_F64, x), *tp = tensor_from_f64(2, (int64_t[]){M, 3}, TENSOR_F64, p);
    Tensor *tr = tensor_from_f64(2, (int64_t[]){M, 1}, TENSOR_F64, rho);
    double w[N * K];
    tensor_to_f64_array(gs4d_rbf_weights(tx, tp, tr, idx, K), w);
    for (int i = 0; i < N; i++) {
        double e[K], s = 0, sw = 0;
        for (int j = 0; j < K; j++) {
            int c = nb[i * K + j];
            double dd = 0;
            for (int a = 0; a < 3; a++) dd += (x[3 * i + a] - p[3 * c + a]) * (x[3 * i + a] - p[3 * c + a]);
            s += e[j] = exp(-dd / (2 * exp(2 * rho[c])));
        }
        for (int j = 0; j < K; j++) {
            CHECK(fabs(w[i * K + j] - e[j] / s) < 1e-12);
            sw += w[i * K + j];
        }
        CHECK(fabs(sw - 1) < 1e-12);
    }
    /* one rigid motion x → R0 x + t0 for all nodes: each node rotates about itself, so its
     * translation is T_k = R0 p_k + t0 − p_k */
    double q0[4] = {0.9, 0.1, -0.3, 0.2}, R0[9], t0[3] = {0.3, -0.1, 0.05}, qs[4 * M], Ts[3 * M];
    quat_rot(q0, R0);
    for (int j = 0; j < M; j++) {
        memcpy(qs + 4 * j, q0, sizeof q0);
        for (int a = 0; a < 3; a++) {
            Ts[3 * j + a] = t0[a] - p[3 * j + a];
            for (int b = 0; b < 3; b++) Ts[3 * j + a] += R0[3 * a + b] * p[3 * j + b];
        }
    }
    Tensor *wt = gs4d_rbf_weights(tx, tp, tr, idx, K);
    double y[3 * N];
    tensor_to_f64_array(gs4d_node_lbs(tx, tp, gs4d_quat_to_rotmat(tensor_from_f64(2, (int64_t[]){M, 4}, TENSOR_F64, qs)),
                                      tensor_from_f64(2, (int64_t[]){M, 3}, TENSOR_F64, Ts), wt, idx, K),
                        y);
    for (int i = 0; i < N; i++)
        for (int a = 0; a < 3; a++) {
            double e = t0[a];
            for (int b = 0; b < 3; b++) e += R0[3 * a + b] * x[3 * i + b];
            CHECK_MSG(fabs(y[3 * i + a] - e) < 1e-12, "point %d axis %d: %.15g vs %.15g", i, a, y[3 * i + a], e);
        }
    Tensor *in[6] = {tensor_requires_grad(tx, true), tensor_requires_grad(tp, true), tensor_requires_grad(tr, true),
                     tensor_requires_grad(tensor_from_f64(2, (int64_t[]){M, 4}, TENSOR_F64, q), true),
                     tensor_requires_grad(tensor_from_f64(2, (int64_t[]){M, 3}, TENSOR_F64, T), true),
                     tensor_requires_grad(tensor_from_f64(2, (int64_t[]){M, 2}, TENSOR_F64, v), true)};
    BlendCtx c = {idx, K};
    AgGradcheckReport r;
    CHECK_MSG(ag_gradcheck(fn_blend, 6, in, &c, 1e-6, 1e-8, 1e-5, &r), "input %d element %lld: %.10g vs %.10g", r.bad_input,
              (long long)r.bad_index, r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-3);
    tensor_scope_end(sc);
}

/* ---- the node model -------------------------------------------------------------------------------- */

static void set_f64(Tensor *t, const double *v) {
    bool prev = ag_no_grad_begin();
    tensor_copy_(t, tensor_from_f64(t->ndim, t->shape, t->dtype, v));
    ag_no_grad_end(prev);
}

typedef struct {
    Gs4dModel *m;
    Tensor *x_w, *node_in; /* constants: the RBF weights' positions, the MLP's input */
    double t;
} NodeCtx;

/* in: means, [quats], node pos, node rho, codes, layer 0 weight, translation head, rotation head,
 * scale head; out: deformed means, scales and (anisotropic) quaternions */
static Tensor *fn_nodes(int n, Tensor *const *in, void *user) {
    (void)n;
    NodeCtx *c = user;
    Gs4dModel m = *c->m;
    int k = 0;
    m.means = in[k++];
    if (!m.cfg.isotropic) m.quats = in[k++];
    m.node_pos = in[k++], m.node_rho = in[k++], m.mlp.codes = in[k++];
    m.mlp.layer[0].weight = in[k++], m.mlp.mu.weight = in[k++], m.mlp.rot.weight = in[k++], m.mlp.scale.weight = in[k++];
    if (m.mlp.table) m.mlp.table = in[k++];
    if (m.mlp.root) m.mlp.root = in[k++];
    GsGaussians canon = gs4d_canonical(&m);
    GsGaussians g = gs4d_deform_nodes_at(&m, &canon, c->x_w, c->node_in, c->t);
    Tensor *parts[3] = {tensor_flatten(g.means, 0, -1), tensor_flatten(g.scales, 0, -1),
                        g.quats ? tensor_flatten(g.quats, 0, -1) : tensor_flatten(g.scales, 0, -1)};
    return tensor_cat(3, parts, 0);
}

static void nodes_gradcheck(bool isotropic, bool table, bool root, double t) {
    TensorScope *sc = tensor_scope_begin();
    float rgba[8 * 8 * 4];
    for (int i = 0; i < 8 * 8 * 4; i++) rgba[i] = i % 4 == 3 ? 1.f : 0.5f;
    double eye[3] = {0, 0, -3}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    Gs4dView v[3];
    for (int i = 0; i < 3; i++) v[i] = (Gs4dView){.cam = ds_camera_look_at(eye, at, up, 8, 8, 50), .time = 0.25f * (float)i, .rgba = rgba};
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(v, 3, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = 8, cfg.isotropic = isotropic, cfg.depth = 2, cfg.width = 8, cfg.skip = 0, cfg.freq_x = 2, cfg.freq_t = 2;
    cfg.deform = GS4D_DEFORM_NODES, cfg.nodes = 4, cfg.node_k = 3, cfg.time_code = GS4D_TIME_BOTH, cfg.latent_dim = 3;
    cfg.head_init = 0.3, cfg.dtype = TENSOR_F64, cfg.arap_k = 2, cfg.node_table = table, cfg.root = root;
    Gs4dModel m;
    gs4d_init(&m, &cfg, &d, NULL);
    CHECK(m.mlp.frames == 3 && m.mlp.codes && m.mlp.codes->shape[0] == 3);
    /* nodes and the Gaussian → node lists by hand (the host loops are f32's) */
    double mu[24], np[12], rho[4], knn[24], codes[9];
    float muf[24], npf[12];
    for (int i = 0; i < 24; i++) mu[i] = urand() - 0.5, muf[i] = (float)mu[i];
    for (int i = 0; i < 12; i++) np[i] = urand() - 0.5, npf[i] = (float)np[i];
    for (int j = 0; j < 4; j++) rho[j] = log(0.4);
    for (int i = 0; i < 9; i++) codes[i] = urand() - 0.5;
    int32_t nb[24];
    gs4d_knn_to(npf, 4, muf, 8, 3, nb);
    for (int i = 0; i < 24; i++) knn[i] = nb[i];
    set_f64(m.means, mu), set_f64(m.node_pos, np), set_f64(m.node_rho, rho), set_f64(m.node_knn, knn), set_f64(m.mlp.codes, codes);
    Tensor *src[16];
    int ns = 0;
    src[ns++] = m.means;
    if (!isotropic) src[ns++] = m.quats;
    src[ns++] = m.node_pos, src[ns++] = m.node_rho, src[ns++] = m.mlp.codes, src[ns++] = m.mlp.layer[0].weight;
    src[ns++] = m.mlp.mu.weight, src[ns++] = m.mlp.rot.weight, src[ns++] = m.mlp.scale.weight;
    if (table) {
        CHECK(m.mlp.table && m.mlp.table->shape[0] == 3 && m.mlp.table->shape[1] == 28);
        double tv[84];
        for (int i = 0; i < 84; i++) tv[i] = 0.2 * (urand() - 0.5);
        set_f64(m.mlp.table, tv);
        src[ns++] = m.mlp.table;
    }
    if (root) {
        CHECK(m.mlp.root && m.mlp.root->shape[0] == 3 && m.mlp.root->shape[1] == 7 && m.root_pivot);
        double rv[21], pv[3] = {0.1, -0.2, 0.05};
        for (int i = 0; i < 21; i++) rv[i] = 0.6 * (urand() - 0.5);
        set_f64(m.mlp.root, rv), set_f64(m.root_pivot, pv);
        src[ns++] = m.mlp.root;
    }
    Tensor *in[16];
    for (int k = 0; k < ns; k++) in[k] = tensor_requires_grad(tensor_clone(tensor_detach(src[k])), true);
    NodeCtx c = {.m = &m, .x_w = tensor_clone(tensor_detach(m.means)), .node_in = tensor_clone(tensor_detach(m.node_pos)), .t = t};
    AgGradcheckReport r;
    CHECK_MSG(ag_gradcheck(fn_nodes, ns, in, &c, 1e-6, 1e-7, 1e-4, &r), "%s%s%s, t %.3f: input %d element %lld: %.10g vs %.10g",
              isotropic ? "isotropic" : "anisotropic", table ? ", table" : "", root ? ", root" : "", t, r.bad_input, (long long)r.bad_index, r.analytic, r.numeric);
    CHECK(r.max_ref > 1e-4);
    gs4d_free(&m);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}

/* through the MLP on the nodes, the codes (at a training time and between two), the nodes'
 * positions and radii, and the Gaussians */
TEST(gs4d_nodes_deform_gradcheck) {
    nodes_gradcheck(true, false, false, 0.25);
    nodes_gradcheck(true, false, false, 0.37);
    nodes_gradcheck(false, false, false, 0.37);
    nodes_gradcheck(true, true, false, 0.37); /* with the per-frame table, between two frames */
    nodes_gradcheck(false, true, false, 0.5);
    nodes_gradcheck(true, false, true, 0.25); /* with the per-frame pose of the whole set */
    nodes_gradcheck(false, true, true, 0.37);
}

/* the per-frame table, root rows and (warm_codes) codes under a time curriculum: a frame's rows are
 * set from the previous frames' at the step that admits it, and not before (the rates 0, so only
 * the warm start moves them) */
TEST(gs4d_nodes_table_warm_start) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 4, 3, 0, 16, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig c = gs4d_defaults();
    c.n = 200, c.depth = 2, c.width = 16, c.skip = 0, c.freq_x = 4, c.freq_t = 2, c.lr_steps = 40;
    c.deform = GS4D_DEFORM_NODES, c.nodes = 8, c.node_table = true, c.table_smooth = 1;
    c.root = true, c.warm_codes = true, c.time_code = GS4D_TIME_BOTH, c.latent_dim = 5;
    c.warmup = 2, c.time_ramp = 30, c.densify_every = 0, c.knn_every = 0, c.arap_k = 3;
    c.lr_deform = c.lr_deform_final = c.lr_root = 0;
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    CHECK(m.mlp.frames == 4);
    /* the table's rows and the codes: each frame's row copied from the previous one's; the root's
     * from the two before it by constant velocity (a copy for frame 1) */
    Tensor *rows[3] = {m.mlp.table, m.mlp.root, m.mlp.codes};
    for (int k = 0; k < 3; k++) {
        float *tb = tensor_f32(rows[k]);
        for (int64_t i = 0; i < tensor_numel(rows[k]); i++) tb[i] = (float)(urand() - 0.5);
    }
    TensorRng rng = {.seed = 3, .stream = 1};
    /* frame f (time f/3) enters when the window reaches it: at about step 2 + 10 f */
    int admitted = 1;
    for (int64_t step = 0; step < 40; step++) {
        int64_t v;
        optim_data_order(0, step, d.n, 1, &v);
        gs4d_step(&m, &d, gs4d_pick_view(&m, &d, step, (int)v), &rng, NULL);
        double lim = step <= 2 ? 0 : fmin(1, (double)(step - 2) / 30); /* the window at this step (times 0 to 1) */
        int f = 0; /* the last frame in after this step */
        while (f + 1 < 4 && m.mlp.times[f + 1] <= lim) f++;
        for (int k = 0; k < 3; k++) {
            const float *tb = tensor_f32(rows[k]);
            int64_t w = rows[k]->shape[1];
            for (int g = 1; g < 4; g++) {
                int same = 1;
                for (int64_t i = 0; i < w; i++) {
                    const float *r = tb + g * w + i;
                    same &= k == 1 && g >= 2 ? *r == 2 * r[-w] - r[-2 * w] : *r == r[-w];
                }
                CHECK_MSG(same == (g <= f), "after step %lld: frame %d %s frame %d's %s rows", (long long)step, g,
                          same ? "already copies" : "does not copy", g - 1, k == 0 ? "table" : k == 1 ? "root" : "code");
            }
        }
        if (f >= admitted) admitted = f + 1;
    }
    CHECK(admitted == 4);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* the root alone (the MLP's heads and the table zero) moves the whole set rigidly about the pivot:
 * μ' = R (μ − c) + c + T, q' = q_r ⊗ q, at a training time and linearly between two */
TEST(gs4d_nodes_root_moves_the_set_rigidly) {
    TensorScope *sc = tensor_scope_begin();
    float rgba[8 * 8 * 4];
    for (int i = 0; i < 8 * 8 * 4; i++) rgba[i] = i % 4 == 3 ? 1.f : 0.5f;
    double eye[3] = {0, 0, -3}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    Gs4dView v[2];
    for (int i = 0; i < 2; i++) v[i] = (Gs4dView){.cam = ds_camera_look_at(eye, at, up, 8, 8, 50), .time = (float)i, .rgba = rgba};
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(v, 2, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = 12, cfg.isotropic = false, cfg.depth = 2, cfg.width = 8, cfg.skip = 0, cfg.freq_x = 2, cfg.freq_t = 2;
    cfg.deform = GS4D_DEFORM_NODES, cfg.nodes = 4, cfg.node_k = 3, cfg.head_init = 0, cfg.dtype = TENSOR_F64;
    cfg.arap_k = 2, cfg.root = true;
    Gs4dModel m;
    gs4d_init(&m, &cfg, &d, NULL);
    double mu[36], qv[48], np[12], rho[4], knn[36], pv[3] = {0.3, -0.1, 0.2};
    float muf[36], npf[12];
    for (int i = 0; i < 36; i++) mu[i] = urand() - 0.5, muf[i] = (float)mu[i];
    for (int i = 0; i < 48; i++) qv[i] = urand() - 0.5;
    for (int i = 0; i < 12; i++) np[i] = urand() - 0.5, npf[i] = (float)np[i];
    for (int j = 0; j < 4; j++) rho[j] = log(0.4);
    int32_t nb[36];
    gs4d_knn_to(npf, 4, muf, 12, 3, nb);
    for (int i = 0; i < 36; i++) knn[i] = nb[i];
    /* frame 0: a turn of 100° about an oblique axis and a shift; frame 1: the identity */
    double ang = 100 * M_PI / 180, ax[3] = {0.36, 0.48, 0.8}, q[4] = {cos(ang / 2)};
    for (int a = 0; a < 3; a++) q[1 + a] = sin(ang / 2) * ax[a];
    double T[3] = {0.5, -0.25, 1.0}, rv[14] = {T[0], T[1], T[2], q[0] - 1, q[1], q[2], q[3]};
    set_f64(m.means, mu), set_f64(m.quats, qv), set_f64(m.node_pos, np), set_f64(m.node_rho, rho);
    set_f64(m.node_knn, knn), set_f64(m.mlp.root, rv), set_f64(m.root_pivot, pv);
    GsGaussians canon = gs4d_canonical(&m);
    for (int pass = 0; pass < 2; pass++) {
        double t = pass ? 0.5 : 0, s = pass ? 0.5 : 1; /* halfway: the rows' average, normalized */
        double qh[4] = {s * q[0] + (1 - s), s * q[1], s * q[2], s * q[3]}, nq = 0, Rh[9];
        for (int a = 0; a < 4; a++) nq += qh[a] * qh[a];
        for (int a = 0; a < 4; a++) qh[a] /= sqrt(nq);
        base_quat_to_mat3(qh, Rh);
        GsGaussians g = gs4d_deform(&m, &canon, t);
        const double *gm = tensor_data_ptr(tensor_contiguous(g.means)), *gq = tensor_data_ptr(tensor_contiguous(g.quats));
        double err_mu = 0, err_q = 0;
        for (int i = 0; i < 12; i++) {
            double e[3], qi[4], nn = 0;
            for (int a = 0; a < 3; a++) e[a] = mu[3 * i + a] - pv[a];
            for (int a = 0; a < 3; a++) {
                double y = pv[a] + s * T[a];
                for (int b = 0; b < 3; b++) y += Rh[3 * a + b] * e[b];
                err_mu = fmax(err_mu, fabs(y - gm[3 * i + a]));
            }
            for (int a = 0; a < 4; a++) nn += qv[4 * i + a] * qv[4 * i + a];
            for (int a = 0; a < 4; a++) qi[a] = qv[4 * i + a] / sqrt(nn);
            double pr[4] = {qh[0] * qi[0] - qh[1] * qi[1] - qh[2] * qi[2] - qh[3] * qi[3],
                            qh[0] * qi[1] + qh[1] * qi[0] + qh[2] * qi[3] - qh[3] * qi[2],
                            qh[0] * qi[2] - qh[1] * qi[3] + qh[2] * qi[0] + qh[3] * qi[1],
                            qh[0] * qi[3] + qh[1] * qi[2] - qh[2] * qi[1] + qh[3] * qi[0]};
            double ng = 0, dot = 0;
            for (int a = 0; a < 4; a++) ng += gq[4 * i + a] * gq[4 * i + a];
            for (int a = 0; a < 4; a++) dot += pr[a] * gq[4 * i + a] / sqrt(ng);
            err_q = fmax(err_q, 1 - fabs(dot));
        }
        CHECK_MSG(err_mu < 1e-12 && err_q < 1e-12, "t %.1f: means off by %g, quaternions by %g", t, err_mu, err_q);
    }
    gs4d_free(&m);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}

/* gs4d_root_search finds a turn: the targets of frame 1 are the model's own renders with its root
 * turned 25° about y and shifted; from the identity the search lands within 2° of the turn */
TEST(gs4d_root_search_finds_a_turn) {
    TensorScope *sc = tensor_scope_begin();
    enum { W = 24, V = 4 };
    Gs4dSynth syn;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 2, V, 0, W, &syn, err, sizeof err) == 0, "%s", err);
    Gs4dData d0;
    CHECK_MSG(gs4d_data_make(syn.train, syn.n_train, &d0, err, sizeof err) == 0, "%s", err);
    Gs4dConfig c = gs4d_defaults();
    c.n = 300, c.depth = 2, c.width = 8, c.skip = 0, c.freq_x = 2, c.freq_t = 2, c.head_init = 0;
    c.deform = GS4D_DEFORM_NODES, c.nodes = 8, c.node_k = 2, c.arap_k = 3, c.root = true, c.root_search = V;
    Gs4dModel m;
    gs4d_init(&m, &c, &d0, NULL);
    gs4d_nodes_init(&m);
    CHECK(m.mlp.frames == 2);
    /* colours by position, so a turn shows */
    float *col = tensor_f32(m.colors), *op = tensor_f32(m.opacities);
    const float *mu = tensor_f32(m.means);
    for (int64_t i = 0; i < c.n; i++) {
        for (int a = 0; a < 3; a++) col[3 * i + a] = 3 * mu[3 * i + a] / (float)m.extent;
        op[i] = 3;
    }
    double ang = 25 * M_PI / 180, truth[7] = {0.03, 0, -0.02, cos(ang / 2) - 1, 0, sin(ang / 2), 0};
    float *root = tensor_f32(m.mlp.root);
    for (int a = 0; a < 7; a++) root[7 + a] = (float)truth[a], root[a] = 0;
    /* the targets: renders of frame 1 with that pose */
    static float img[2 * V][W * W * 4];
    Gs4dView v[2 * V];
    static const double black[3] = {0, 0, 0};
    for (int k = 0; k < 2 * V; k++) {
        v[k] = d0.views[k];
        TensorScope *s = tensor_scope_begin();
        GsRenderOut o = gs4d_render_set(&m, (GsGaussians[]){gs4d_deform(&m, (GsGaussians[]){gs4d_canonical(&m)}, v[k].time)}, &v[k].cam, black);
        const float *rgb = tensor_f32(tensor_contiguous(o.image)), *al = tensor_f32(tensor_contiguous(o.alpha));
        for (int p = 0; p < W * W; p++) {
            for (int a = 0; a < 3; a++) img[k][4 * p + a] = al[p] > 1e-6f ? rgb[3 * p + a] / al[p] : 0;
            img[k][4 * p + 3] = al[p];
        }
        tensor_scope_end(s);
        v[k].rgba = img[k];
    }
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(v, 2 * V, &d, err, sizeof err) == 0, "%s", err);
    for (int a = 0; a < 7; a++) root[7 + a] = a < 3 ? (float)truth[a] : 0; /* the turn forgotten */
    double drop = gs4d_root_search(&m, &d, 1);
    double q[4] = {1 + root[10], root[11], root[12], root[13]}, n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double dot = fabs((q[0] * (1 + truth[3]) + q[2] * truth[5]) / n);
    double off = 2 * acos(fmin(1, dot)) * 180 / M_PI;
    CHECK_MSG(drop > 0 && off < 2, "the search ends %.2f° off the 25° turn (loss drop %g)", off, drop);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_data_free(&d0);
    gs4d_synth_free(&syn);
    tensor_scope_end(sc);
}

static Gs4dConfig tiny_nodes(int64_t iters) {
    Gs4dConfig c = gs4d_test_tiny_config(iters);
    c.deform = GS4D_DEFORM_NODES, c.nodes = 64, c.node_k = 4, c.time_code = GS4D_TIME_BOTH, c.latent_dim = 8;
    return c;
}

/* every node sits within the Gaussians' cloud: its nearest Gaussian closer than a tenth of the extent */
static void nodes_near_gaussians(const Gs4dModel *m) {
    int64_t nm = m->cfg.nodes;
    double far = 0, *nd = malloc(sizeof(double) * (size_t)nm);
    gs4d_nearest_dist(tensor_f32(m->means), m->cfg.n, tensor_f32(m->node_pos), nm, nd);
    for (int64_t j = 0; j < nm; j++) far = fmax(far, nd[j]);
    free(nd);
    fprintf(stderr, "  farthest node %.4f from a Gaussian (extent %.3f)\n", far, m->extent);
    CHECK(far < 0.1 * m->extent);
}

/* the tiny synthetic sequence with nodes must train to the bar the per-Gaussian MLP meets
 * (tests/test_gs4d.c: gs4d_tiny_sequence_trains, the same data), its nodes where the Gaussians are */
TEST(gs4d_nodes_tiny_sequence_trains) {
    Gs4dConfig c = tiny_nodes(1500);
    gs4d_test_tiny_sequence(&c, "64 nodes, codes 8 + gamma(t)", nodes_near_gaussians);
}

/* a node no Gaussian uses (moved far out) is relocated onto a Gaussian by the next densification
 * that the gradient asks for */
TEST(gs4d_nodes_unused_node_relocates) {
    TensorScope *sc = tensor_scope_begin();
    Gs4dSynth s;
    char err[512];
    CHECK_MSG(gs4d_synth_make("quadruped", 0, 2, 4, 0, 16, &s, err, sizeof err) == 0, "%s", err);
    Gs4dData d;
    CHECK_MSG(gs4d_data_make(s.train, s.n_train, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig c = tiny_nodes(40);
    c.n = 200, c.nodes = 16, c.warmup = 0, c.densify_every = 5, c.refine_until = 40, c.densify_grad = 0;
    Gs4dModel m;
    gs4d_init(&m, &c, &d, NULL);
    TensorRng rng = {.seed = 2, .stream = 1};
    gs4d_step(&m, &d, 0, &rng, NULL); /* initializes the nodes */
    float *np = tensor_f32(m.node_pos);
    np[0] = np[1] = np[2] = (float)(100 * m.extent);
    int64_t moved = 0;
    for (int i = 1; i < 10; i++) {
        gs4d_step(&m, &d, i % d.n, &rng, NULL);
        moved += m.nodes_moved;
    }
    double nd;
    gs4d_nearest_dist(tensor_f32(m.means), c.n, tensor_f32(m.node_pos), 1, &nd);
    CHECK_MSG(moved >= 1 && nd < 0.1 * m.extent, "%lld nodes moved; node 0 is %g from the nearest Gaussian", (long long)moved, nd);
    gs4d_free(&m);
    gs4d_data_free(&d);
    gs4d_synth_free(&s);
    tensor_scope_end(sc);
}

/* stopped after the nodes exist and between densifications, then resumed in a fresh model: every
 * parameter (nodes, codes, the table, the root's poses, the node lists) and moment as an uninterrupted run */
TEST(gs4d_nodes_resume_matches_uninterrupted) {
    Gs4dConfig c = tiny_nodes(60);
    c.n = 200, c.nodes = 16, c.warmup = 10, c.densify_every = 20, c.knn_every = 20, c.refine_until = 60, c.redo_every = 15;
    c.node_table = true, c.time_ramp = 20, c.root = true, c.warm_codes = true, c.ramp_front = 0.5;
    gs4d_test_resume_check(&c, 60, 33);
}

/* monocular input (one view a time) under a time curriculum: the warm-up's window holds the first
 * 8 times' views, not one (tests/test_gs4d.c's curriculum test keeps the multi-view rule) */
TEST(gs4d_curriculum_monocular_window) {
    TensorScope *sc = tensor_scope_begin();
    enum { W = 8, NV = 20 };
    static float img[W * W * 4];
    for (int p = 0; p < W * W; p++) img[4 * p] = img[4 * p + 1] = img[4 * p + 2] = 0.5f, img[4 * p + 3] = 1;
    Gs4dView v[NV];
    for (int k = 0; k < NV; k++) {
        double ang = 2 * M_PI * k / NV, eye[3] = {3 * sin(ang), 0.3, -3 * cos(ang)}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
        v[k] = (Gs4dView){.cam = ds_camera_look_at(eye, at, up, W, W, 50), .time = (float)k / (NV - 1), .rgba = img};
    }
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(v, NV, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = 50, cfg.depth = 2, cfg.width = 8, cfg.skip = 0, cfg.freq_x = 2, cfg.freq_t = 2, cfg.arap_k = 3;
    cfg.warmup = 10, cfg.time_ramp = 100;
    Gs4dModel m;
    gs4d_init(&m, &cfg, &d, NULL);
    bool hit[NV] = {false};
    int distinct = 0, maxv = 0;
    for (int k = 0; k < NV; k++) {
        int p = gs4d_pick_view(&m, &d, 0, k);
        distinct += !hit[p], hit[p] = true;
        if (p > maxv) maxv = p;
    }
    CHECK_MSG(distinct == 8 && maxv == 7, "the warm-up draws %d distinct views, up to view %d (want the first 8)", distinct, maxv);
    gs4d_free(&m);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}

/* ramp_front: during the ramp that fraction of the draws lands on the newest admitted time's views
 * (each of them), the rest spreads over the whole window; before and after the ramp it changes
 * nothing */
TEST(gs4d_curriculum_ramp_front) {
    TensorScope *sc = tensor_scope_begin();
    enum { W = 8, T = 10, V = 4, NV = T * V };
    static float img[W * W * 4];
    for (int p = 0; p < W * W; p++) img[4 * p] = img[4 * p + 1] = img[4 * p + 2] = 0.5f, img[4 * p + 3] = 1;
    Gs4dView v[NV];
    for (int k = 0; k < NV; k++) {
        double ang = 2 * M_PI * (k % V) / V, eye[3] = {3 * sin(ang), 0.3, -3 * cos(ang)}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
        v[k] = (Gs4dView){.cam = ds_camera_look_at(eye, at, up, W, W, 50), .time = (float)(k / V) / (T - 1), .rgba = img};
    }
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(v, NV, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = 50, cfg.depth = 2, cfg.width = 8, cfg.skip = 0, cfg.freq_x = 2, cfg.freq_t = 2, cfg.arap_k = 3;
    cfg.warmup = 10, cfg.time_ramp = 90, cfg.ramp_front = 0.5;
    Gs4dModel m;
    gs4d_init(&m, &cfg, &d, NULL);
    /* step 65: the window reaches time 55/90, so times 0..5 (24 views); the newest is time 5 */
    int hits[NV] = {0}, front = 0;
    for (int k = 0; k < NV; k++) {
        int p = gs4d_pick_view(&m, &d, 65, k);
        CHECK_MSG(d.views[p].time <= 5.0f / 9 + 1e-6f, "draw %d picks time %g, outside the window", k, d.views[p].time);
        hits[p]++, front += fabsf(d.views[p].time - 5.0f / 9) < 1e-6f;
    }
    int newest_seen = 0;
    for (int k = 0; k < NV; k++) newest_seen += fabsf(d.views[k].time - 5.0f / 9) < 1e-6f && hits[k] > 0;
    /* 20 front draws over time 5's 4 views, and the 20 others over the 24 views of the window (~3 of time 5) */
    CHECK_MSG(front >= 20 && front <= 25 && newest_seen == V, "%d of %d draws at the newest time, %d of its views drawn", front, NV, newest_seen);
    /* after the ramp: every view once, as without a front */
    int after[NV] = {0};
    for (int k = 0; k < NV; k++) after[gs4d_pick_view(&m, &d, 200, k)]++;
    for (int k = 0; k < NV; k++) CHECK_MSG(after[k] == 1, "after the ramp view %d is drawn %d times", k, after[k]);
    gs4d_free(&m);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}

/* ---- the rendered surface (gs4d_surface_points: issue 37's surface Chamfer) ---------------------- */

/* the median and 90% quantile of |z| over the points (the distance off the plane z = 0) */
static void off_plane(const float *pts, int64_t n, double *med, double *q90) {
    double *off = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) off[i] = fabs(pts[3 * i + 2]);
    qsort(off, (size_t)n, sizeof(double), base_cmp_double);
    *med = n ? off[n / 2] : NAN, *q90 = n ? off[n * 9 / 10] : NAN;
    free(off);
}

/* A sheet of small half-transparent Gaussians on the plane z = 0 (alpha below 1 inside it): seen
 * head-on, every splat has the same camera z, so the back-projected expected depth lies exactly on
 * the plane; treating the alpha-weighted depth as the depth (not / alpha) or camera z as the distance
 * along the ray puts the points far off it (the pixels are up to 20° off the axis). Seen obliquely,
 * the expected depth is pulled toward the camera by the front-to-back blend of neighboring splats:
 * printed, the bias the measure carries. */
TEST(gs4d_surface_points_lie_on_the_rendered_sheet) {
    TensorScope *sc = tensor_scope_begin();
    enum { W = 48, G = 50 };
    static float rgba[W * W * 4];
    for (int i = 0; i < W * W * 4; i++) rgba[i] = 1;
    double head[3] = {0, 0, -2.6}, oblique[3] = {1.2, 0.8, -2.6}, at[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    Gs4dView v = {.cam = ds_camera_look_at(head, at, up, W, W, 40), .time = 0, .rgba = rgba};
    Gs4dData d;
    char err[256];
    CHECK_MSG(gs4d_data_make(&v, 1, &d, err, sizeof err) == 0, "%s", err);
    Gs4dConfig cfg = gs4d_defaults();
    cfg.n = G * G, cfg.depth = 1, cfg.width = 4, cfg.skip = 0, cfg.freq_x = 0, cfg.freq_t = 0, cfg.arap_k = 2, cfg.warmup = 10;
    Gs4dModel m;
    gs4d_init(&m, &cfg, &d, NULL);
    double *mu = malloc(sizeof(double) * 3 * G * G), *sv = malloc(sizeof(double) * G * G), *ov = malloc(sizeof(double) * G * G);
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            int k = i * G + j;
            mu[3 * k] = -0.6 + 1.2 * i / (G - 1), mu[3 * k + 1] = -0.6 + 1.2 * j / (G - 1), mu[3 * k + 2] = 0;
            sv[k] = log(0.015), ov[k] = -1; /* σ 0.015 over a spacing of 0.0245, opacity 0.27 */
        }
    set_f64(m.means, mu), set_f64(m.scales, sv), set_f64(m.opacities, ov);
    float *pts = malloc(sizeof(float) * 3 * W * W);
    int64_t got = gs4d_surface_points(&m, &v.cam, 0, 0.5, pts, W * W);
    double med, q90;
    off_plane(pts, got, &med, &q90);
    CHECK_MSG(got > W * W / 4, "only %lld pixels covered", (long long)got);
    CHECK_MSG(q90 < 1e-3, "head-on, the back-projected points lie off the sheet: median %.5f, 90%% %.5f", med, q90);
    CHECK(gs4d_surface_points(&m, &v.cam, 0, 0.5, pts, 10) == 10); /* the cap */
    DsCamera ob = ds_camera_look_at(oblique, at, up, W, W, 40);
    int64_t n2 = gs4d_surface_points(&m, &ob, 0, 0.5, pts, W * W);
    off_plane(pts, n2, &med, &q90);
    fprintf(stderr, "  oblique view: the expected depth off the sheet by median %.4f, 90%% %.4f (sigma 0.015)\n", med, q90);
    CHECK(n2 > W * W / 10);
    free(mu), free(sv), free(ov), free(pts);
    gs4d_free(&m);
    gs4d_data_free(&d);
    tensor_scope_end(sc);
}
