/* models/gs4d/nodes.c — sparse control nodes: sampling, the Gaussian → node kNN, and the blend
 * (formulas in nodes.h). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/custom.h"
#include "base/alloc.h"
#include "nodes.h"

static double dist2(const float *a, const float *b) {
    double dx = (double)a[0] - b[0], dy = (double)a[1] - b[1], dz = (double)a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

void gs4d_fps(const float *x, int64_t n, int64_t m, int64_t first, int64_t *out) {
    if (m <= 0 || n <= 0) return;
    double *d = base_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = DBL_MAX;
    int64_t cur = first < 0 || first >= n ? 0 : first;
    for (int64_t j = 0; j < m; j++) {
        out[j] = cur;
        int64_t best = 0;
        double bd = -1;
        for (int64_t i = 0; i < n; i++) {
            double e = dist2(x + 3 * i, x + 3 * cur);
            if (e < d[i]) d[i] = e;
            if (d[i] > bd) bd = d[i], best = i;
        }
        cur = best;
    }
    free(d);
}

void gs4d_knn_to(const float *ref, int64_t nr, const float *q, int64_t nq, int k, int32_t *idx) {
#pragma omp parallel for schedule(static) if (nq * nr > 200000)
    for (int64_t i = 0; i < nq; i++) {
        double bd[64];
        int32_t *bi = idx + i * k;
        int got = 0;
        for (int64_t j = 0; j < nr; j++) {
            double e = dist2(q + 3 * i, ref + 3 * j);
            if (got == k && e >= bd[k - 1]) continue; /* ties keep the smaller index */
            int s = got < k ? got++ : k - 1;
            while (s > 0 && bd[s - 1] > e) bd[s] = bd[s - 1], bi[s] = bi[s - 1], s--;
            bd[s] = e, bi[s] = (int32_t)j;
        }
    }
}

static Tensor *col(Tensor *q, int c) { return tensor_narrow(q, 1, c, 1); }

Tensor *gs4d_quat_to_rotmat(Tensor *q) {
    int64_t m = q->shape[0];
    Tensor *u = tensor_div(q, tensor_norm(q, 2, 1, (int[]){1}, true));
    Tensor *w = col(u, 0), *x = col(u, 1), *y = col(u, 2), *z = col(u, 3);
    Tensor *xx = tensor_mul(x, x), *yy = tensor_mul(y, y), *zz = tensor_mul(z, z);
    Tensor *xy = tensor_mul(x, y), *xz = tensor_mul(x, z), *yz = tensor_mul(y, z);
    Tensor *wx = tensor_mul(w, x), *wy = tensor_mul(w, y), *wz = tensor_mul(w, z);
    Tensor *e[9] = {
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(yy, zz), 2), 1), tensor_mul_scalar(tensor_sub(xy, wz), 2),
        tensor_mul_scalar(tensor_add(xz, wy), 2),
        tensor_mul_scalar(tensor_add(xy, wz), 2), tensor_rsub_scalar(tensor_mul_scalar(tensor_add(xx, zz), 2), 1),
        tensor_mul_scalar(tensor_sub(yz, wx), 2),
        tensor_mul_scalar(tensor_sub(xz, wy), 2), tensor_mul_scalar(tensor_add(yz, wx), 2),
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(xx, yy), 2), 1),
    };
    return tensor_reshape(tensor_cat(9, e, 1), 3, (int64_t[]){m, 3, 3});
}

Tensor *gs4d_quat_mul(Tensor *a, Tensor *b) {
    Tensor *aw = col(a, 0), *ax = col(a, 1), *ay = col(a, 2), *az = col(a, 3);
    Tensor *bw = col(b, 0), *bx = col(b, 1), *by = col(b, 2), *bz = col(b, 3);
#define M2(p, q) tensor_mul(p, q)
    Tensor *e[4] = {
        tensor_sub(tensor_sub(M2(aw, bw), M2(ax, bx)), tensor_add(M2(ay, by), M2(az, bz))),
        tensor_add(tensor_add(M2(aw, bx), M2(ax, bw)), tensor_sub(M2(ay, bz), M2(az, by))),
        tensor_add(tensor_sub(M2(aw, by), M2(ax, bz)), tensor_add(M2(ay, bw), M2(az, bx))),
        tensor_add(tensor_add(M2(aw, bz), M2(ax, by)), tensor_sub(M2(az, bw), M2(ay, bx))),
    };
#undef M2
    return tensor_cat(4, e, 1);
}

/* v's rows at idx as (N, K, D) */
static Tensor *gathered(Tensor *v, Tensor *idx, int k) {
    int64_t n = idx->shape[0] / k;
    int64_t shape[TENSOR_MAX_DIMS] = {n, k};
    for (int a = 1; a < v->ndim; a++) shape[a + 1] = v->shape[a];
    return tensor_reshape(tensor_index_select(v, 0, idx), v->ndim + 1, shape);
}

static Tensor *rbf_weights_composed(Tensor *x, Tensor *p, Tensor *rho, Tensor *idx, int k) {
    Tensor *d = tensor_sub(tensor_unsqueeze(x, 1), gathered(p, idx, k));     /* (N, K, 3) */
    Tensor *d2 = tensor_sum(tensor_mul(d, d), 1, (int[]){2}, false);         /* (N, K) */
    Tensor *inv = tensor_exp(tensor_mul_scalar(tensor_squeeze(gathered(rho, idx, k), 2), -2)); /* 1 / r² */
    return tensor_softmax(tensor_mul_scalar(tensor_mul(d2, inv), -0.5), 1);
}

/* ---- the blends: tensor-op compositions, and fused CPU ops ----------------------------------------
 * The compositions (gathers, products, sums) are correct on every device and differentiable to any
 * order; on the CPU, f32/f64, the blends run as custom ops with one loop each way instead (in
 * the gs4d node step the composition's gathers, broadcast products and their backward scatters
 * cost more than the node MLP). A create_graph backward recomposes (as attention does). */

static Tensor *node_blend_composed(Tensor *w, Tensor *v, Tensor *idx, int k) {
    return tensor_sum(tensor_mul(gathered(v, idx, k), tensor_unsqueeze(w, 2)), 1, (int[]){1}, false);
}

static Tensor *node_lbs_composed(Tensor *x, Tensor *p, Tensor *R, Tensor *T, Tensor *w, Tensor *idx, int k) {
    Tensor *pk = gathered(p, idx, k);                                   /* (N, K, 3) */
    Tensor *local = tensor_sub(tensor_unsqueeze(x, 1), pk);             /* (N, K, 3) */
    Tensor *Rk = gathered(R, idx, k);                                   /* (N, K, 3, 3) */
    Tensor *rot = tensor_sum(tensor_mul(Rk, tensor_unsqueeze(local, 2)), 1, (int[]){3}, false); /* (N, K, 3) */
    Tensor *y = tensor_add(tensor_add(rot, pk), gathered(T, idx, k));
    return tensor_sum(tensor_mul(y, tensor_unsqueeze(w, 2)), 1, (int[]){1}, false);
}

/* whether the fused op runs: every float input f32 or f64 alike, on the CPU */
static bool fused_ok(int n, Tensor *const *t) {
    TensorDType dt = t[0]->dtype;
    if (dt != TENSOR_F32 && dt != TENSOR_F64) return false;
    for (int i = 0; i < n; i++)
        if (tensor_device(t[i]) != TENSOR_CPU || t[i]->dtype != dt) return false;
    return true;
}

typedef struct {
    int k;
} BlendCtx;

static Tensor *zeros_as(const Tensor *t) { return tensor_zeros(t->ndim, t->shape, t->dtype); }

/* blend: in = {w (N, K), v (M, D), idx (N·K)}; out (N, D) */
#define BLEND_FWD(T)                                                                                 \
    do {                                                                                             \
        const T *W = tensor_data_ptr(w), *V = tensor_data_ptr(v);                                    \
        T *O = tensor_data_ptr(out);                                                                 \
        for (int64_t i = 0; i < N; i++)                                                              \
            for (int64_t d = 0; d < D; d++) {                                                        \
                double a = 0;                                                                        \
                for (int q = 0; q < K; q++) a += (double)W[i * K + q] * V[ix[i * K + q] * D + d];    \
                O[i * D + d] = (T)a;                                                                 \
            }                                                                                        \
    } while (0)

static Tensor *blend_forward(void *ctx, int n, Tensor *const *in) {
    (void)n;
    int K = ((BlendCtx *)ctx)->k;
    Tensor *w = tensor_contiguous(in[0]), *v = tensor_contiguous(in[1]);
    const int64_t *ix = tensor_data_ptr(tensor_contiguous(in[2]));
    int64_t N = w->shape[0], D = v->shape[1];
    Tensor *out = tensor_empty(2, (int64_t[]){N, D}, v->dtype);
    if (v->dtype == TENSOR_F32) BLEND_FWD(float);
    else BLEND_FWD(double);
    return out;
}

#define BLEND_BWD(T)                                                                                 \
    do {                                                                                             \
        const T *W = tensor_data_ptr(w), *V = tensor_data_ptr(v), *G = tensor_data_ptr(g);           \
        T *GW = gw ? tensor_data_ptr(gw) : NULL, *GV = gv ? tensor_data_ptr(gv) : NULL;              \
        for (int64_t i = 0; i < N; i++)                                                              \
            for (int q = 0; q < K; q++) {                                                            \
                int64_t j = ix[i * K + q];                                                           \
                double a = 0;                                                                        \
                for (int64_t d = 0; d < D; d++) {                                                    \
                    a += (double)G[i * D + d] * V[j * D + d];                                        \
                    if (GV) GV[j * D + d] += W[i * K + q] * G[i * D + d];                            \
                }                                                                                    \
                if (GW) GW[i * K + q] = (T)a;                                                        \
            }                                                                                        \
    } while (0)

static void blend_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)n, (void)out;
    int K = ((BlendCtx *)ctx)->k;
    if (tensor_grad_enabled()) { /* create_graph */
        ag_custom_recomposed_grads(node_blend_composed(in[0], in[1], in[2], K), g, 3, in, need, gin);
        return;
    }
    Tensor *w = tensor_contiguous(in[0]), *v = tensor_contiguous(in[1]);
    const int64_t *ix = tensor_data_ptr(tensor_contiguous(in[2]));
    g = tensor_contiguous(g);
    int64_t N = w->shape[0], D = v->shape[1];
    Tensor *gw = need[0] ? tensor_empty(2, w->shape, w->dtype) : NULL, *gv = need[1] ? zeros_as(v) : NULL;
    if (v->dtype == TENSOR_F32) BLEND_BWD(float);
    else BLEND_BWD(double);
    if (need[0]) gin[0] = gw;
    if (need[1]) gin[1] = gv;
}

static const AgCustomOp blend_op = {"gs4d_node_blend", blend_forward, blend_backward};

Tensor *gs4d_node_blend(Tensor *w, Tensor *v, Tensor *idx, int k) {
    Tensor *fl[2] = {w, v};
    if (!fused_ok(2, fl) || tensor_device(idx) != TENSOR_CPU || v->ndim != 2) return node_blend_composed(w, v, idx, k);
    BlendCtx c = {k};
    return ag_custom_apply(&blend_op, 3, (Tensor *[]){w, v, idx}, &c, sizeof c);
}

/* lbs: in = {x (N, 3), p (M, 3), R (M, 3, 3), T (M, 3), w (N, K), idx (N·K)}; out (N, 3):
 *   y_i = Σ_q w_iq (R_j (x_i − p_j) + p_j + T_j), j = idx_iq
 * backward, with g_i = ∂L/∂y_i:
 *   ∂x_i = Σ_q w_iq R_jᵀ g_i,  ∂w_iq = g_i · (R_j (x_i − p_j) + p_j + T_j),
 *   ∂R_j += w_iq g_i (x_i − p_j)ᵀ,  ∂p_j += w_iq (g_i − R_jᵀ g_i),  ∂T_j += w_iq g_i */
#define LBS_FWD(T_)                                                                                  \
    do {                                                                                             \
        const T_ *X = tensor_data_ptr(x), *P = tensor_data_ptr(p), *Rm = tensor_data_ptr(R);         \
        const T_ *Tt = tensor_data_ptr(T), *W = tensor_data_ptr(w);                                  \
        T_ *O = tensor_data_ptr(out);                                                                \
        for (int64_t i = 0; i < N; i++) {                                                            \
            double y[3] = {0, 0, 0};                                                                 \
            for (int q = 0; q < K; q++) {                                                            \
                int64_t j = ix[i * K + q];                                                           \
                double l[3], wq = W[i * K + q];                                                      \
                for (int a = 0; a < 3; a++) l[a] = (double)X[i * 3 + a] - P[j * 3 + a];              \
                for (int a = 0; a < 3; a++) {                                                        \
                    const T_ *r = Rm + j * 9 + a * 3;                                                \
                    y[a] += wq * (r[0] * l[0] + r[1] * l[1] + r[2] * l[2] + P[j * 3 + a] + Tt[j * 3 + a]); \
                }                                                                                    \
            }                                                                                        \
            for (int a = 0; a < 3; a++) O[i * 3 + a] = (T_)y[a];                                     \
        }                                                                                            \
    } while (0)

static Tensor *lbs_forward(void *ctx, int n, Tensor *const *in) {
    (void)n;
    int K = ((BlendCtx *)ctx)->k;
    Tensor *x = tensor_contiguous(in[0]), *p = tensor_contiguous(in[1]), *R = tensor_contiguous(in[2]);
    Tensor *T = tensor_contiguous(in[3]), *w = tensor_contiguous(in[4]);
    const int64_t *ix = tensor_data_ptr(tensor_contiguous(in[5]));
    int64_t N = x->shape[0];
    Tensor *out = tensor_empty(2, (int64_t[]){N, 3}, x->dtype);
    if (x->dtype == TENSOR_F32) LBS_FWD(float);
    else LBS_FWD(double);
    return out;
}

#define LBS_BWD(T_)                                                                                  \
    do {                                                                                             \
        const T_ *X = tensor_data_ptr(x), *P = tensor_data_ptr(p), *Rm = tensor_data_ptr(R);         \
        const T_ *Tt = tensor_data_ptr(T), *W = tensor_data_ptr(w), *G = tensor_data_ptr(g);         \
        T_ *GX = gx ? tensor_data_ptr(gx) : NULL, *GP = gp ? tensor_data_ptr(gp) : NULL;             \
        T_ *GR = gR ? tensor_data_ptr(gR) : NULL, *GT = gT ? tensor_data_ptr(gT) : NULL;             \
        T_ *GW = gw ? tensor_data_ptr(gw) : NULL;                                                    \
        for (int64_t i = 0; i < N; i++) {                                                            \
            const T_ *gi = G + i * 3;                                                                \
            double dx[3] = {0, 0, 0};                                                                \
            for (int q = 0; q < K; q++) {                                                            \
                int64_t j = ix[i * K + q];                                                           \
                const T_ *r = Rm + j * 9;                                                            \
                double l[3], rtg[3], wq = W[i * K + q];                                              \
                for (int a = 0; a < 3; a++) l[a] = (double)X[i * 3 + a] - P[j * 3 + a];              \
                for (int a = 0; a < 3; a++) rtg[a] = r[a] * (double)gi[0] + r[3 + a] * (double)gi[1] + r[6 + a] * (double)gi[2]; \
                if (GW) {                                                                            \
                    double s = 0;                                                                    \
                    for (int a = 0; a < 3; a++)                                                      \
                        s += gi[a] * (r[a * 3] * l[0] + r[a * 3 + 1] * l[1] + r[a * 3 + 2] * l[2] + P[j * 3 + a] + Tt[j * 3 + a]); \
                    GW[i * K + q] = (T_)s;                                                           \
                }                                                                                    \
                for (int a = 0; a < 3; a++) dx[a] += wq * rtg[a];                                    \
                if (GR)                                                                              \
                    for (int a = 0; a < 3; a++)                                                      \
                        for (int b = 0; b < 3; b++) GR[j * 9 + a * 3 + b] += (T_)(wq * gi[a] * l[b]);  \
                if (GP)                                                                              \
                    for (int a = 0; a < 3; a++) GP[j * 3 + a] += (T_)(wq * (gi[a] - rtg[a]));        \
                if (GT)                                                                              \
                    for (int a = 0; a < 3; a++) GT[j * 3 + a] += (T_)(wq * gi[a]);                   \
            }                                                                                        \
            if (GX)                                                                                  \
                for (int a = 0; a < 3; a++) GX[i * 3 + a] = (T_)dx[a];                               \
        }                                                                                            \
    } while (0)

static void lbs_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)n, (void)out;
    int K = ((BlendCtx *)ctx)->k;
    if (tensor_grad_enabled()) { /* create_graph */
        ag_custom_recomposed_grads(node_lbs_composed(in[0], in[1], in[2], in[3], in[4], in[5], K), g, 6, in, need, gin);
        return;
    }
    Tensor *x = tensor_contiguous(in[0]), *p = tensor_contiguous(in[1]), *R = tensor_contiguous(in[2]);
    Tensor *T = tensor_contiguous(in[3]), *w = tensor_contiguous(in[4]);
    const int64_t *ix = tensor_data_ptr(tensor_contiguous(in[5]));
    g = tensor_contiguous(g);
    int64_t N = x->shape[0];
    Tensor *gx = need[0] ? tensor_empty(2, x->shape, x->dtype) : NULL, *gp = need[1] ? zeros_as(p) : NULL;
    Tensor *gR = need[2] ? zeros_as(R) : NULL, *gT = need[3] ? zeros_as(T) : NULL;
    Tensor *gw = need[4] ? tensor_empty(2, w->shape, w->dtype) : NULL;
    if (x->dtype == TENSOR_F32) LBS_BWD(float);
    else LBS_BWD(double);
    Tensor *gs[5] = {gx, gp, gR, gT, gw};
    for (int i = 0; i < 5; i++)
        if (need[i]) gin[i] = gs[i];
}

static const AgCustomOp lbs_op = {"gs4d_node_lbs", lbs_forward, lbs_backward};

Tensor *gs4d_node_lbs(Tensor *x, Tensor *p, Tensor *R, Tensor *T, Tensor *w, Tensor *idx, int k) {
    Tensor *fl[5] = {x, p, R, T, w};
    if (!fused_ok(5, fl) || tensor_device(idx) != TENSOR_CPU) return node_lbs_composed(x, p, R, T, w, idx, k);
    BlendCtx c = {k};
    return ag_custom_apply(&lbs_op, 6, (Tensor *[]){x, p, R, T, w, idx}, &c, sizeof c);
}

/* rbf: in = {x (N, 3), p (M, 3), rho (M, 1), idx (N·K)}; out w (N, K):
 *   l_iq = −½ ‖x_i − p_j‖² e^{−2ρ_j},  w_i = softmax_q(l_i),  j = idx_iq
 * backward, with γ_iq = ∂L/∂w_iq: ∂l_iq = w_iq (γ_iq − Σ_r w_ir γ_ir), then
 *   ∂x_i = −Σ_q ∂l_iq e^{−2ρ_j} (x_i − p_j),  ∂p_j += ∂l_iq e^{−2ρ_j} (x_i − p_j),
 *   ∂ρ_j += ∂l_iq ‖x_i − p_j‖² e^{−2ρ_j} */
#define RBF_FWD(T_)                                                                                  \
    do {                                                                                             \
        const T_ *X = tensor_data_ptr(x), *P = tensor_data_ptr(p), *Rh = tensor_data_ptr(rho);       \
        T_ *O = tensor_data_ptr(out);                                                                \
        for (int64_t i = 0; i < N; i++) {                                                            \
            double l[64], mx = -INFINITY, sum = 0;                                                   \
            for (int q = 0; q < K; q++) {                                                            \
                int64_t j = ix[i * K + q];                                                           \
                double d2 = 0;                                                                       \
                for (int a = 0; a < 3; a++) {                                                        \
                    double e = (double)X[i * 3 + a] - P[j * 3 + a];                                  \
                    d2 += e * e;                                                                     \
                }                                                                                    \
                l[q] = -0.5 * d2 * exp(-2.0 * Rh[j]);                                                \
                mx = l[q] > mx ? l[q] : mx;                                                          \
            }                                                                                        \
            for (int q = 0; q < K; q++) sum += (l[q] = exp(l[q] - mx));                              \
            for (int q = 0; q < K; q++) O[i * K + q] = (T_)(l[q] / sum);                             \
        }                                                                                            \
    } while (0)

static Tensor *rbf_forward(void *ctx, int n, Tensor *const *in) {
    (void)n;
    int K = ((BlendCtx *)ctx)->k;
    Tensor *x = tensor_contiguous(in[0]), *p = tensor_contiguous(in[1]), *rho = tensor_contiguous(in[2]);
    const int64_t *ix = tensor_data_ptr(tensor_contiguous(in[3]));
    int64_t N = x->shape[0];
    Tensor *out = tensor_empty(2, (int64_t[]){N, K}, x->dtype);
    if (x->dtype == TENSOR_F32) RBF_FWD(float);
    else RBF_FWD(double);
    return out;
}

#define RBF_BWD(T_)                                                                                  \
    do {                                                                                             \
        const T_ *X = tensor_data_ptr(x), *P = tensor_data_ptr(p), *Rh = tensor_data_ptr(rho);       \
        const T_ *W = tensor_data_ptr(w), *G = tensor_data_ptr(g);                                   \
        T_ *GX = gx ? tensor_data_ptr(gx) : NULL, *GP = gp ? tensor_data_ptr(gp) : NULL;             \
        T_ *GR = gr ? tensor_data_ptr(gr) : NULL;                                                    \
        for (int64_t i = 0; i < N; i++) {                                                            \
            double s = 0, dx[3] = {0, 0, 0};                                                         \
            for (int q = 0; q < K; q++) s += (double)W[i * K + q] * G[i * K + q];                    \
            for (int q = 0; q < K; q++) {                                                            \
                int64_t j = ix[i * K + q];                                                           \
                double dl = (double)W[i * K + q] * ((double)G[i * K + q] - s), inv = exp(-2.0 * Rh[j]), e[3], d2 = 0; \
                for (int a = 0; a < 3; a++) e[a] = (double)X[i * 3 + a] - P[j * 3 + a], d2 += e[a] * e[a];      \
                for (int a = 0; a < 3; a++) dx[a] -= dl * inv * e[a];                                \
                if (GP)                                                                              \
                    for (int a = 0; a < 3; a++) GP[j * 3 + a] += (T_)(dl * inv * e[a]);              \
                if (GR) GR[j] += (T_)(dl * d2 * inv);                                                \
            }                                                                                        \
            if (GX)                                                                                  \
                for (int a = 0; a < 3; a++) GX[i * 3 + a] = (T_)dx[a];                               \
        }                                                                                            \
    } while (0)

static void rbf_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)n;
    int K = ((BlendCtx *)ctx)->k;
    if (tensor_grad_enabled()) { /* create_graph */
        ag_custom_recomposed_grads(rbf_weights_composed(in[0], in[1], in[2], in[3], K), g, 4, in, need, gin);
        return;
    }
    Tensor *x = tensor_contiguous(in[0]), *p = tensor_contiguous(in[1]), *rho = tensor_contiguous(in[2]);
    const int64_t *ix = tensor_data_ptr(tensor_contiguous(in[3]));
    Tensor *w = tensor_contiguous(out);
    g = tensor_contiguous(g);
    int64_t N = x->shape[0];
    Tensor *gx = need[0] ? tensor_empty(2, x->shape, x->dtype) : NULL, *gp = need[1] ? zeros_as(p) : NULL;
    Tensor *gr = need[2] ? zeros_as(rho) : NULL;
    if (x->dtype == TENSOR_F32) RBF_BWD(float);
    else RBF_BWD(double);
    if (need[0]) gin[0] = gx;
    if (need[1]) gin[1] = gp;
    if (need[2]) gin[2] = gr;
}

static const AgCustomOp rbf_op = {"gs4d_rbf_weights", rbf_forward, rbf_backward};

Tensor *gs4d_rbf_weights(Tensor *x, Tensor *p, Tensor *rho, Tensor *idx, int k) {
    Tensor *fl[3] = {x, p, rho};
    if (k > 64 || !fused_ok(3, fl) || tensor_device(idx) != TENSOR_CPU || rho->ndim != 2 || rho->shape[1] != 1)
        return rbf_weights_composed(x, p, rho, idx, k);
    BlendCtx c = {k};
    return ag_custom_apply(&rbf_op, 4, (Tensor *[]){x, p, rho, idx}, &c, sizeof c);
}
