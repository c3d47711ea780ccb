/* models/skelebones/ssdr.c — SSDR by block coordinate descent (ssdr.h). */
#include "models/skelebones/ssdr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "datasets/geometry/geometry.h"

void sb_ssdr_defaults(SbSsdrOptions *o) {
    memset(o, 0, sizeof *o);
    o->iters = 30;
    o->bone_iters = 5;
    o->max_influences = 8;
    o->smooth = 1e-4;
    o->knn = 8;
}

void sb_skin_free(SbSkin *s) {
    free(s->weights), free(s->transforms), free(s->rmse);
    memset(s, 0, sizeof *s);
}

static inline void xform(const double *T, const float *u, double o[3]) {
    for (int r = 0; r < 3; r++) o[r] = T[r * 4] * u[0] + T[r * 4 + 1] * u[1] + T[r * 4 + 2] * u[2] + T[r * 4 + 3];
}

double sb_lbs_rmse(int F, int64_t N, int B, const float *rest, const float *pos, const float *W, const double *T) {
    double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (int64_t i = 0; i < N; i++)
        for (int t = 0; t < F; t++) {
            double s[3] = {0, 0, 0}, x[3];
            for (int j = 0; j < B; j++) {
                float w = W[i * B + j];
                if (w == 0) continue;
                xform(T + ((int64_t)t * B + j) * 12, rest + i * 3, x);
                for (int k = 0; k < 3; k++) s[k] += w * x[k];
            }
            const float *v = pos + ((int64_t)t * N + i) * 3;
            for (int k = 0; k < 3; k++) total += (s[k] - v[k]) * (s[k] - v[k]);
        }
    return sqrt(total / ((double)F * (double)N));
}

/* Solves the n × n system A x = b in place (partial pivoting); 0, or -1 when singular. */
static int gauss_solve(int n, double *A, double *b) {
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int r = k + 1; r < n; r++)
            if (fabs(A[r * n + k]) > fabs(A[p * n + k])) p = r;
        if (!(fabs(A[p * n + k]) > 1e-300)) return -1;
        if (p != k) {
            for (int c = 0; c < n; c++) {
                double t = A[k * n + c];
                A[k * n + c] = A[p * n + c], A[p * n + c] = t;
            }
            double t = b[k];
            b[k] = b[p], b[p] = t;
        }
        for (int r = k + 1; r < n; r++) {
            double f = A[r * n + k] / A[k * n + k];
            if (f == 0) continue;
            for (int c = k; c < n; c++) A[r * n + c] -= f * A[k * n + c];
            b[r] -= f * b[k];
        }
    }
    for (int k = n - 1; k >= 0; k--) {
        double s = b[k];
        for (int c = k + 1; c < n; c++) s -= A[k * n + c] * b[c];
        b[k] = s / A[k * n + k];
    }
    return 0;
}

int sb_simplex_lsq(int B, const double *G, const double *c, const unsigned char *allowed, double *w) {
    /* primal active set: P the free (positive) bones; on P solve the equality-constrained
     * problem G_PP z + μ1 = c_P, 1ᵀz = 1; step back to the boundary when z leaves the simplex;
     * add the bone with the most negative multiplier (G w − c)_j + μ when z is interior. */
    int P[SB_MAX_BONES], np = 0, best = -1;
    for (int j = 0; j < B; j++)
        if ((!allowed || allowed[j]) && (best < 0 || G[j * B + j] - 2 * c[j] < G[best * B + best] - 2 * c[best])) best = j;
    if (best < 0) return -1;
    for (int j = 0; j < B; j++) w[j] = 0;
    w[best] = 1, P[np++] = best;
    double A[(SB_MAX_BONES + 1) * (SB_MAX_BONES + 1)], z[SB_MAX_BONES + 1];
    double scale = 0;
    for (int j = 0; j < B; j++) scale += fabs(G[j * B + j]);
    scale = scale > 0 ? scale / B : 1;
    for (int guard = 0; guard < 4 * B + 10; guard++) {
        int n = np + 1;
        for (int a = 0; a < np; a++) {
            for (int b = 0; b < np; b++) A[a * n + b] = G[P[a] * B + P[b]] + (a == b ? 1e-12 * scale : 0);
            A[a * n + np] = 1, z[a] = c[P[a]];
        }
        for (int b = 0; b < np; b++) A[np * n + b] = 1;
        A[np * n + np] = 0, z[np] = 1;
        if (gauss_solve(n, A, z)) break; /* cannot happen with the ridge; keep the current w */
        double mu = z[np];
        int interior = 1;
        for (int a = 0; a < np; a++)
            if (z[a] <= 0) interior = 0;
        if (interior) {
            for (int a = 0; a < np; a++) w[P[a]] = z[a];
            int add = -1;
            double most = -1e-12 * scale;
            for (int j = 0; j < B; j++) {
                if (w[j] > 0 || (allowed && !allowed[j])) continue;
                double g = mu;
                for (int k = 0; k < np; k++) g += G[j * B + P[k]] * w[P[k]];
                g -= c[j];
                if (g < most) most = g, add = j;
            }
            if (add < 0) return 0;
            P[np++] = add;
            continue;
        }
        double alpha = 1;
        for (int a = 0; a < np; a++)
            if (z[a] <= 0) {
                double wi = w[P[a]], r = wi / (wi - z[a]);
                if (r < alpha) alpha = r;
            }
        for (int a = 0; a < np; a++) w[P[a]] += alpha * (z[a] - w[P[a]]);
        int m = 0;
        for (int a = 0; a < np; a++)
            if (w[P[a]] > 1e-14) P[m++] = P[a];
            else w[P[a]] = 0;
        np = m;
        if (np == 0) { /* numerically every weight hit zero: restart from the best vertex */
            w[best] = 1, P[np++] = best;
        }
    }
    double s = 0;
    for (int j = 0; j < B; j++) s += w[j];
    for (int j = 0; j < B; j++) w[j] /= s;
    return 0;
}

/* Inserts (d, j) into the sorted top-k lists bd/bi holding m entries. */
static inline void topk_insert(double *bd, int32_t *bi, int *m, int k, double d, int32_t j) {
    if (*m == k && d >= bd[k - 1]) return;
    int p = *m < k ? (*m)++ : k - 1;
    while (p > 0 && bd[p - 1] > d) bd[p] = bd[p - 1], bi[p] = bi[p - 1], p--;
    bd[p] = d, bi[p] = j;
}

int sb_knn(int64_t N, const float *rest, int k, int32_t *nb) {
    /* a uniform grid of about k points per cell; each query scans rings of cells outwards
     * until the k-th best distance is within the scanned radius (every unscanned point is at
     * least r·h away), so the result is exact, in about O(N k) for evenly spread points */
    if (k < 1 || k > 64) return -1;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < N; i++)
        for (int c = 0; c < 3; c++) lo[c] = fmin(lo[c], rest[i * 3 + c]), hi[c] = fmax(hi[c], rest[i * 3 + c]);
    double ext = 0;
    for (int c = 0; c < 3; c++) ext = fmax(ext, hi[c] - lo[c]);
    if (!(ext > 0)) ext = 1;
    double vol = 1;
    for (int c = 0; c < 3; c++) vol *= fmax(hi[c] - lo[c], ext * 1e-3);
    double h = cbrt(vol * k / (double)(N > 0 ? N : 1));
    int64_t g[3], ncell;
    for (;;) {
        ncell = 1;
        for (int c = 0; c < 3; c++) g[c] = (int64_t)((hi[c] - lo[c]) / h) + 1, ncell *= g[c];
        if (ncell <= 4 * N + 8) break;
        h *= 1.26;
    }
    int64_t *start = calloc((size_t)ncell + 1, sizeof(int64_t)), *cellof = malloc((size_t)N * sizeof(int64_t) + 8);
    int32_t *pts = malloc((size_t)N * sizeof(int32_t) + 8);
    if (!start || !cellof || !pts) {
        free(start), free(cellof), free(pts);
        return -1;
    }
    for (int64_t i = 0; i < N; i++) {
        int64_t cc[3];
        for (int c = 0; c < 3; c++) {
            cc[c] = (int64_t)((rest[i * 3 + c] - lo[c]) / h);
            if (cc[c] >= g[c]) cc[c] = g[c] - 1;
        }
        cellof[i] = (cc[2] * g[1] + cc[1]) * g[0] + cc[0];
        start[cellof[i] + 1]++;
    }
    for (int64_t c = 0; c < ncell; c++) start[c + 1] += start[c];
    {
        int64_t *fill = malloc((size_t)ncell * sizeof(int64_t) + 8);
        if (!fill) {
            free(start), free(cellof), free(pts);
            return -1;
        }
        memcpy(fill, start, (size_t)ncell * sizeof(int64_t));
        for (int64_t i = 0; i < N; i++) pts[fill[cellof[i]]++] = (int32_t)i;
        free(fill);
    }
    int64_t gmax = g[0] > g[1] ? g[0] : g[1];
    if (g[2] > gmax) gmax = g[2];
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < N; i++) {
        double bd[64];
        int32_t bi[64];
        int m = 0;
        int64_t ci = cellof[i], cx = ci % g[0], cy = (ci / g[0]) % g[1], cz = ci / (g[0] * g[1]);
        for (int64_t r = 0; r <= gmax; r++) {
            for (int64_t z = cz - r; z <= cz + r; z++) {
                if (z < 0 || z >= g[2]) continue;
                for (int64_t y = cy - r; y <= cy + r; y++) {
                    if (y < 0 || y >= g[1]) continue;
                    for (int64_t x = cx - r; x <= cx + r; x++) {
                        if (x < 0 || x >= g[0]) continue;
                        int64_t dx = x > cx ? x - cx : cx - x, dy = y > cy ? y - cy : cy - y, dz = z > cz ? z - cz : cz - z;
                        int64_t cheb = dx > dy ? dx : dy;
                        if (dz > cheb) cheb = dz;
                        if (cheb != r) continue; /* inner rings were scanned before */
                        int64_t c = (z * g[1] + y) * g[0] + x;
                        for (int64_t a = start[c]; a < start[c + 1]; a++) {
                            int32_t j = pts[a];
                            if (j == i) continue;
                            double d = 0;
                            for (int e = 0; e < 3; e++)
                                d += ((double)rest[i * 3 + e] - rest[(int64_t)j * 3 + e]) * ((double)rest[i * 3 + e] - rest[(int64_t)j * 3 + e]);
                            topk_insert(bd, bi, &m, k, d, j);
                        }
                    }
                }
            }
            if (m == k && bd[k - 1] <= (double)r * h * (double)r * h) break;
        }
        for (int a = 0; a < k; a++) nb[i * k + a] = a < m ? bi[a] : (int32_t)i;
    }
    free(start), free(cellof), free(pts);
    return 0;
}

/* One pass over the bones of frame t (Gauss–Seidel): res (N × 3) is v − LBS on entry and exit. */
static void update_bones_frame(int B, const float *rest, const float *W, double *T, double *res,
                               int64_t *const *support, const int64_t *nsupport) {
    for (int j = 0; j < B; j++) {
        double *Tj = T + (int64_t)j * 12;
        double sw2 = 0, su[3] = {0}, sq[3] = {0}, squ[9] = {0};
        for (int64_t s = 0; s < nsupport[j]; s++) {
            int64_t i = support[j][s];
            double w = W[i * B + j], x[3], q[3];
            const float *u = rest + i * 3;
            xform(Tj, u, x);
            for (int k = 0; k < 3; k++) q[k] = res[i * 3 + k] + w * x[k];
            sw2 += w * w;
            for (int k = 0; k < 3; k++) su[k] += w * w * u[k], sq[k] += w * q[k];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) squ[r * 3 + c] += w * q[r] * u[c];
        }
        if (!(sw2 > 0)) continue;
        double ps[3], qs[3], M[9], R[9];
        for (int k = 0; k < 3; k++) ps[k] = su[k] / sw2, qs[k] = sq[k] / sw2;
        /* M = Σ w q (u − p*)ᵀ = Σ w q uᵀ − (Σ w q) p*ᵀ (the − w q* term vanishes against Σ w²(u − p*) = 0) */
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) M[r * 3 + c] = squ[r * 3 + c] - sq[r] * ps[c];
        sb_rotation_from_cov(M, R);
        double Tn[12];
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) Tn[r * 4 + c] = R[r * 3 + c];
            Tn[r * 4 + 3] = qs[r] - (R[r * 3] * ps[0] + R[r * 3 + 1] * ps[1] + R[r * 3 + 2] * ps[2]);
        }
        for (int64_t s = 0; s < nsupport[j]; s++) {
            int64_t i = support[j][s];
            double w = W[i * B + j], xo[3], xn[3];
            xform(Tj, rest + i * 3, xo);
            xform(Tn, rest + i * 3, xn);
            for (int k = 0; k < 3; k++) res[i * 3 + k] += w * (xo[k] - xn[k]);
        }
        memcpy(Tj, Tn, sizeof Tn);
    }
}

/* Bone passes over every frame with the weights fixed (frames are independent: OpenMP over
 * frames); support/nsupport/supbuf: scratch for the bones' supports (B pointers, B counts, N·K). */
static void update_bones(int F, int64_t N, int B, const float *rest, const float *pos, const float *W, double *T,
                         int passes, int64_t **support, int64_t *nsupport, int64_t *supbuf) {
    int64_t used = 0;
    for (int j = 0; j < B; j++) {
        support[j] = supbuf + used, nsupport[j] = 0;
        for (int64_t i = 0; i < N; i++)
            if (W[i * B + j] > 0) support[j][nsupport[j]++] = i;
        used += nsupport[j];
    }
#pragma omp parallel
    {
        double *res = malloc((size_t)N * 3 * sizeof(double));
#pragma omp for schedule(dynamic)
        for (int t = 0; t < F; t++) {
            if (!res) continue;
            double *Tt = T + (int64_t)t * B * 12;
            const float *v = pos + (int64_t)t * N * 3;
            for (int64_t i = 0; i < N; i++) {
                double s[3] = {0, 0, 0}, x[3];
                for (int j = 0; j < B; j++) {
                    float w = W[i * B + j];
                    if (w == 0) continue;
                    xform(Tt + j * 12, rest + i * 3, x);
                    for (int k = 0; k < 3; k++) s[k] += w * x[k];
                }
                for (int k = 0; k < 3; k++) res[i * 3 + k] = v[i * 3 + k] - s[k];
            }
            for (int pass = 0; pass < (passes < 1 ? 1 : passes); pass++)
                update_bones_frame(B, rest, W, Tt, res, support, nsupport);
        }
        free(res);
    }
}

int sb_ssdr_fit_bones(int F, int64_t N, int B, const float *rest, const float *pos, const float *W, int passes,
                      double *T, char *err, size_t errlen) {
    int64_t **support = calloc((size_t)B, sizeof(int64_t *)), *nsupport = calloc((size_t)B, sizeof(int64_t));
    int64_t *supbuf = malloc((size_t)N * B * sizeof(int64_t) + 8);
    double *p = malloc((size_t)N * 3 * sizeof(double)), *q = malloc((size_t)N * 3 * sizeof(double)),
           *w = malloc((size_t)N * sizeof(double));
    if (!support || !nsupport || !supbuf || !p || !q || !w) {
        free(support), free(nsupport), free(supbuf), free(p), free(q), free(w);
        snprintf(err, errlen, "SSDR: out of memory fitting bones (%lld points, %d bones)", (long long)N, B);
        return -1;
    }
    /* start: each bone the weighted rigid fit of all points, its weights as the fit's weights */
    for (int64_t i = 0; i < N * 3; i++) p[i] = rest[i];
    for (int t = 0; t < F; t++) {
        for (int64_t i = 0; i < N * 3; i++) q[i] = pos[(int64_t)t * N * 3 + i];
        for (int j = 0; j < B; j++) {
            for (int64_t i = 0; i < N; i++) w[i] = W[i * B + j];
            sb_kabsch(N, p, q, w, T + ((int64_t)t * B + j) * 12);
        }
    }
    update_bones(F, N, B, rest, pos, W, T, passes, support, nsupport, supbuf);
    free(support), free(nsupport), free(supbuf), free(p), free(q), free(w);
    return 0;
}

/* per bone pair (j, k) over the frames: P (9) Σ R_jᵀR_k, a (3) Σ R_jᵀ T_k, s Σ T_j·T_k, 13 numbers
 * each (B × B × 13 into pair) */
static void pair_sums(int F, int B, const double *T, double *pair) {
    memset(pair, 0, (size_t)B * B * 13 * sizeof(double));
#pragma omp parallel for schedule(static)
    for (int jk = 0; jk < B * B; jk++) {
        int j = jk / B, k = jk % B;
        double *p = pair + (int64_t)jk * 13;
        for (int t = 0; t < F; t++) {
            const double *A = T + ((int64_t)t * B + j) * 12, *C = T + ((int64_t)t * B + k) * 12;
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) p[r * 3 + c] += A[r] * C[c] + A[4 + r] * C[4 + c] + A[8 + r] * C[8 + c];
            for (int r = 0; r < 3; r++) p[9 + r] += A[r] * C[3] + A[4 + r] * C[7] + A[8 + r] * C[11];
            p[12] += A[3] * C[3] + A[7] * C[7] + A[11] * C[11];
        }
    }
}

/* point i's weights (B into w_out, ≤ K non-zeros) for the bones T: the simplex program of the
 * header, with the pull s_smooth toward the mean of its knn neighbours' Wold rows (Wold NULL: none) */
static void point_weights(int F, int64_t N, int B, int K, const float *rest, const float *pos, const double *T,
                          const double *pair, int64_t i, const float *Wold, const int32_t *nb, int knn, double s_smooth,
                          float *w_out) {
    double G[SB_MAX_BONES * SB_MAX_BONES], c[SB_MAX_BONES], w[SB_MAX_BONES];
    memset(G, 0, sizeof(double) * (size_t)B * B), memset(c, 0, sizeof(double) * (size_t)B); /* all set below; for the compiler */
    const float *uf = rest + i * 3;
    double u[3] = {uf[0], uf[1], uf[2]};
    for (int j = 0; j < B; j++)
        for (int k = j; k < B; k++) {
            const double *p = pair + ((int64_t)j * B + k) * 13, *q = pair + ((int64_t)k * B + j) * 13;
            double g = p[12];
            for (int r = 0; r < 3; r++)
                g += u[r] * (p[r * 3] * u[0] + p[r * 3 + 1] * u[1] + p[r * 3 + 2] * u[2]) + u[r] * (p[9 + r] + q[9 + r]);
            G[j * B + k] = G[k * B + j] = g;
        }
    for (int j = 0; j < B; j++) {
        double acc = 0;
        for (int t = 0; t < F; t++) {
            double x[3];
            xform(T + ((int64_t)t * B + j) * 12, uf, x);
            const float *v = pos + ((int64_t)t * N + i) * 3;
            acc += x[0] * v[0] + x[1] * v[1] + x[2] * v[2];
        }
        c[j] = acc;
    }
    if (Wold) {
        for (int j = 0; j < B; j++) {
            double m = 0;
            for (int a = 0; a < knn; a++) m += Wold[(int64_t)nb[i * knn + a] * B + j];
            G[j * B + j] += s_smooth, c[j] += s_smooth * m / knn;
        }
    }
    sb_simplex_lsq(B, G, c, NULL, w);
    int nz = 0;
    for (int j = 0; j < B; j++) nz += w[j] > 0;
    if (nz > K) { /* keep the K largest, re-solve on them */
        unsigned char allowed[SB_MAX_BONES] = {0};
        for (int a = 0; a < K; a++) {
            int bj = -1;
            for (int j = 0; j < B; j++)
                if (!allowed[j] && (bj < 0 || w[j] > w[bj])) bj = j;
            allowed[bj] = 1;
        }
        sb_simplex_lsq(B, G, c, allowed, w);
    }
    for (int j = 0; j < B; j++) w_out[j] = (float)w[j];
}

int sb_ssdr_weights(int F, int64_t N, int B, int K, const float *rest, const float *pos, const double *T, float *W,
                    char *err, size_t errlen) {
    if (B < 1 || B > SB_MAX_BONES) return base_errf(err, errlen, "SSDR weights: %d bones (1..%d)", B, SB_MAX_BONES);
    if (K > B) K = B;
    if (K < 1) K = 1;
    double *pair = malloc((size_t)B * B * 13 * sizeof(double));
    if (!pair) return base_errf(err, errlen, "SSDR weights: out of memory");
    pair_sums(F, B, T, pair);
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < N; i++) point_weights(F, N, B, K, rest, pos, T, pair, i, NULL, NULL, 0, 0, W + i * B);
    free(pair);
    return 0;
}

int sb_ssdr(int F, int64_t N, const float *rest, const float *pos, const SbClusters *init, const SbSsdrOptions *o,
            SbSkin *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!init || init->nframes != F || init->npoints != N || init->nbones < 1 || init->nbones > SB_MAX_BONES) {
        snprintf(err, errlen, "SSDR: the initialization does not match the trajectories (%d frames, %lld points)", F,
                 (long long)N);
        return -1;
    }
    int B = init->nbones, K = o->max_influences < 1 ? 1 : o->max_influences, iters = o->iters < 0 ? 0 : o->iters;
    int knn = o->knn < 1 ? 1 : o->knn > 64 ? 64 : o->knn;
    if (knn > N - 1) knn = N > 1 ? (int)N - 1 : 1;
    if (K > B) K = B;
    float *W = calloc((size_t)N * B, sizeof(float));
    double *T = malloc((size_t)F * B * 12 * sizeof(double)), *hist = calloc((size_t)iters + 1, sizeof(double));
    double *pair = malloc((size_t)B * B * 13 * sizeof(double));
    int32_t *nb = o->smooth > 0 && N > 1 ? malloc((size_t)N * knn * sizeof(int32_t)) : NULL;
    float *Wold = o->smooth > 0 && N > 1 ? malloc((size_t)N * B * sizeof(float)) : NULL;
    int64_t **support = calloc((size_t)B, sizeof(int64_t *)), *nsupport = calloc((size_t)B, sizeof(int64_t));
    int64_t *supbuf = malloc((size_t)N * K * sizeof(int64_t) + 8);
    if (!W || !T || !hist || !pair || (o->smooth > 0 && N > 1 && (!nb || !Wold)) || !support || !nsupport || !supbuf) {
        free(W), free(T), free(hist), free(pair), free(nb), free(Wold), free(support), free(nsupport), free(supbuf);
        snprintf(err, errlen, "SSDR: out of memory (%lld points, %d bones, %d frames)", (long long)N, B, F);
        return -1;
    }
    for (int64_t i = 0; i < N; i++) W[i * B + init->labels[i]] = 1;
    memcpy(T, init->transforms, (size_t)F * B * 12 * sizeof(double));
    double s_smooth = o->smooth * F * ds_points_diagonal2(rest, N);
    if (nb && sb_knn(N, rest, knn, nb)) {
        free(W), free(T), free(hist), free(pair), free(nb), free(Wold), free(support), free(nsupport), free(supbuf);
        snprintf(err, errlen, "SSDR: out of memory building the neighbor graph");
        return -1;
    }
    hist[0] = sb_lbs_rmse(F, N, B, rest, pos, W, T);
    int done = 0;
    if (o->progress && o->progress(o->user, 0, iters, hist[0])) goto finish;
    for (int it = 1; it <= iters; it++) {
        update_bones(F, N, B, rest, pos, W, T, o->bone_iters, support, nsupport, supbuf);
        /* weights: per-pair sums over frames, then one program per point */
        pair_sums(F, B, T, pair);
        if (Wold) memcpy(Wold, W, (size_t)N * B * sizeof(float));
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < N; i++)
            point_weights(F, N, B, K, rest, pos, T, pair, i, Wold, nb, knn, s_smooth, W + i * B);
        hist[it] = sb_lbs_rmse(F, N, B, rest, pos, W, T);
        done = it;
        if (o->progress && o->progress(o->user, it, iters, hist[it])) break;
    }
finish:
    free(pair), free(nb), free(Wold), free(support), free(nsupport), free(supbuf);
    out->nframes = F, out->npoints = N, out->nbones = B, out->niters = done;
    out->weights = W, out->transforms = T, out->rmse = hist;
    return 0;
}
