/* models/gs4d/arap.c — cluster-restricted kNN, the 3×3 Kabsch rotation and the ARAP + distance
 * loss (see arap.h for the definitions). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arap.h"
#include "base/alloc.h"
#include "base/mat3.h"

/* ---- kNN -------------------------------------------------------------------------------------- */

typedef struct {
    double d2;
    int32_t j;
} Cand;

/* (d2, j) lexicographic: the nearest first, the smaller index on a tie */
static bool cand_less(double d2, int32_t j, const Cand *c) { return d2 < c->d2 || (d2 == c->d2 && j < c->j); }

static void cand_insert(Cand *best, int *nb, int k, double d2, int32_t j) {
    if (*nb == k && !cand_less(d2, j, &best[k - 1])) return;
    int p = *nb < k ? (*nb)++ : k - 1;
    while (p > 0 && cand_less(d2, j, &best[p - 1])) best[p] = best[p - 1], p--;
    best[p] = (Cand){d2, j};
}

static double dist2(const float *x, int64_t i, int64_t j) {
    double s = 0;
    for (int a = 0; a < 3; a++) {
        double d = (double)x[3 * i + a] - (double)x[3 * j + a];
        s += d * d;
    }
    return s;
}

/* kNN among the m points idx[0..m) (one cluster) on a uniform grid of about k points per cell */
static void knn_cluster(const float *x, const int32_t *idx, int64_t m, int k, int32_t *nbr) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t q = 0; q < m; q++)
        for (int a = 0; a < 3; a++) {
            double v = x[3 * (int64_t)idx[q] + a];
            if (v < lo[a]) lo[a] = v;
            if (v > hi[a]) hi[a] = v;
        }
    double ext = 0;
    for (int a = 0; a < 3; a++) ext = fmax(ext, hi[a] - lo[a]);
    /* cell side: about k points per cell for a volume-filling cloud; a surface-like cloud gets
     * more per cell, which only costs time. Cells along an axis capped at m so the grid stays O(m). */
    double vol = 1;
    for (int a = 0; a < 3; a++) vol *= fmax(hi[a] - lo[a], ext * 1e-3 + 1e-30);
    double h = cbrt(vol * (double)(k > 0 ? k : 1) / (double)m);
    if (!(h > 0) || !isfinite(h)) h = 1;
    int64_t g[3];
    for (int a = 0; a < 3; a++) {
        double c = floor((hi[a] - lo[a]) / h) + 1;
        g[a] = c > (double)m ? m : (int64_t)c;
        if (g[a] < 1) g[a] = 1;
    }
    double hs[3]; /* the side actually used per axis (≥ h when capped) */
    for (int a = 0; a < 3; a++) hs[a] = fmax(h, (hi[a] - lo[a]) / (double)g[a] * (1 + 1e-12));
    double hmin = fmin(hs[0], fmin(hs[1], hs[2]));
    int64_t ncell = g[0] * g[1] * g[2];
    int64_t *start = base_calloc((size_t)ncell + 1, sizeof(int64_t));
    int64_t *cell = base_malloc(sizeof(int64_t) * (size_t)m * 3 + 8);
    int32_t *sorted = base_malloc(sizeof(int32_t) * (size_t)m + 4);
    for (int64_t q = 0; q < m; q++) {
        int64_t c[3];
        for (int a = 0; a < 3; a++) {
            int64_t v = (int64_t)floor((x[3 * (int64_t)idx[q] + a] - lo[a]) / hs[a]);
            c[a] = v < 0 ? 0 : v >= g[a] ? g[a] - 1 : v;
            cell[3 * q + a] = c[a];
        }
        start[(c[0] * g[1] + c[1]) * g[2] + c[2] + 1]++;
    }
    for (int64_t c = 0; c < ncell; c++) start[c + 1] += start[c];
    int64_t *fill = base_malloc(sizeof(int64_t) * (size_t)ncell);
    memcpy(fill, start, sizeof(int64_t) * (size_t)ncell);
    for (int64_t q = 0; q < m; q++) {
        int64_t c = (cell[3 * q] * g[1] + cell[3 * q + 1]) * g[2] + cell[3 * q + 2];
        sorted[fill[c]++] = (int32_t)q;
    }
    int64_t gmax = g[0] > g[1] ? g[0] : g[1];
    if (g[2] > gmax) gmax = g[2];
    Cand *best = base_malloc(sizeof(Cand) * (size_t)(k > 0 ? k : 1));
    for (int64_t q = 0; q < m; q++) {
        int64_t i = idx[q];
        int nb = 0;
        const int64_t *ci = cell + 3 * q;
        for (int64_t r = 0; r <= gmax; r++) {
            for (int64_t a = ci[0] - r; a <= ci[0] + r; a++) {
                if (a < 0 || a >= g[0]) continue;
                for (int64_t b = ci[1] - r; b <= ci[1] + r; b++) {
                    if (b < 0 || b >= g[1]) continue;
                    for (int64_t c = ci[2] - r; c <= ci[2] + r; c++) {
                        if (c < 0 || c >= g[2]) continue;
                        int64_t cheb = llabs(a - ci[0]);
                        if (llabs(b - ci[1]) > cheb) cheb = llabs(b - ci[1]);
                        if (llabs(c - ci[2]) > cheb) cheb = llabs(c - ci[2]);
                        if (cheb != r) continue; /* inner shells were searched already */
                        int64_t cc = (a * g[1] + b) * g[2] + c;
                        for (int64_t s = start[cc]; s < start[cc + 1]; s++) {
                            int64_t j = idx[sorted[s]];
                            if (j == i) continue;
                            cand_insert(best, &nb, k, dist2(x, i, j), (int32_t)j);
                        }
                    }
                }
            }
            /* every point not yet seen lies in a shell ≥ r + 1, at least r · hmin away (the
             * query is inside its own cell); stop once the k-th best is no farther */
            if (nb == k && sqrt(best[k - 1].d2) <= (double)r * hmin) break;
        }
        for (int s = 0; s < k; s++) nbr[i * k + s] = s < nb ? best[s].j : -1;
    }
    free(best), free(fill), free(sorted), free(cell), free(start);
}

static int cmp_label(const void *a, const void *b, void *ctx) {
    const int32_t *l = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    int32_t lx = l ? l[x] : 0, ly = l ? l[y] : 0;
    if (lx != ly) return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

void gs4d_knn(const float *x, int64_t n, const int32_t *labels, int k, int32_t *nbr) {
    if (n <= 0 || k <= 0) return;
    int32_t *order = base_malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) order[i] = (int32_t)i;
    qsort_r(order, (size_t)n, sizeof(int32_t), cmp_label, (void *)labels);
    for (int64_t s = 0; s < n;) {
        int64_t e = s + 1;
        while (e < n && (labels ? labels[order[e]] == labels[order[s]] : true)) e++;
        knn_cluster(x, order + s, e - s, k, nbr);
        s = e;
    }
    free(order);
}

/* ---- the best rotation -------------------------------------------------------------------------- */

/* eigen-decomposition of the symmetric 3×3 M by cyclic Jacobi: M = V diag(w) Vᵀ, V's columns the
 * eigenvectors, w in descending order */
static void eig3(const double M[9], double w[3], double V[9]) {
    double A[9];
    memcpy(A, M, sizeof A);
    for (int i = 0; i < 9; i++) V[i] = i % 4 == 0;
    for (int sweep = 0; sweep < 64; sweep++) {
        double off = fabs(A[1]) + fabs(A[2]) + fabs(A[5]);
        double scale = fabs(A[0]) + fabs(A[4]) + fabs(A[8]);
        if (off <= 1e-300 || off <= 1e-18 * scale) break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                double apq = A[3 * p + q];
                if (apq == 0) continue;
                double theta = (A[3 * q + q] - A[3 * p + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int r = 0; r < 3; r++) { /* A ← A J (columns p, q) */
                    double arp = A[3 * r + p], arq = A[3 * r + q];
                    A[3 * r + p] = c * arp - s * arq, A[3 * r + q] = s * arp + c * arq;
                }
                for (int r = 0; r < 3; r++) { /* A ← Jᵀ A (rows p, q) */
                    double apr = A[3 * p + r], aqr = A[3 * q + r];
                    A[3 * p + r] = c * apr - s * aqr, A[3 * q + r] = s * apr + c * aqr;
                }
                for (int r = 0; r < 3; r++) {
                    double vrp = V[3 * r + p], vrq = V[3 * r + q];
                    V[3 * r + p] = c * vrp - s * vrq, V[3 * r + q] = s * vrp + c * vrq;
                }
            }
    }
    int ord[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (A[4 * ord[j]] > A[4 * ord[i]]) {
                int t = ord[i];
                ord[i] = ord[j], ord[j] = t;
            }
    double Vs[9];
    for (int k = 0; k < 3; k++) {
        w[k] = A[4 * ord[k]];
        for (int r = 0; r < 3; r++) Vs[3 * r + k] = V[3 * r + ord[k]];
    }
    memcpy(V, Vs, sizeof Vs);
}

static double norm3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

void gs4d_best_rotation(const double *a, const double *b, int n, double R[9]) {
    double H[9] = {0};
    for (int m = 0; m < n; m++)
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) H[3 * r + c] += a[3 * m + r] * b[3 * m + c];
    double M[9] = {0}; /* HᵀH */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++) M[3 * r + c] += H[3 * k + r] * H[3 * k + c];
    double w[3], V[9];
    eig3(M, w, V);
    /* H = U Σ Vᵀ: u_k = H v_k / σ_k. Kabsch's R = V diag(1, 1, det(V Uᵀ)) Uᵀ equals V' U'ᵀ with
     * V' = [v1 v2 det(V) v3] and U' = [u1 u2 u1×u2] (both proper), whatever σ3 is — so only u1
     * and u2 are needed, and a planar neighborhood (σ3 = 0) needs no special case. */
    double v[3][3], u[3][3];
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < 3; r++) v[k][r] = V[3 * r + k];
    double Hv[2][3];
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 3; r++) Hv[k][r] = H[3 * r] * v[k][0] + H[3 * r + 1] * v[k][1] + H[3 * r + 2] * v[k][2];
    double s1 = norm3(Hv[0]);
    if (!(s1 > 0) || !isfinite(s1)) { /* no edges (or all zero): the identity */
        for (int i = 0; i < 9; i++) R[i] = i % 4 == 0;
        return;
    }
    for (int r = 0; r < 3; r++) u[0][r] = Hv[0][r] / s1;
    double d = u[0][0] * Hv[1][0] + u[0][1] * Hv[1][1] + u[0][2] * Hv[1][2];
    for (int r = 0; r < 3; r++) u[1][r] = Hv[1][r] - d * u[0][r];
    double s2 = norm3(u[1]);
    if (s2 <= 1e-9 * s1) { /* collinear edges: any axis perpendicular to u1 is as good */
        int a0 = fabs(u[0][0]) < fabs(u[0][1]) ? (fabs(u[0][0]) < fabs(u[0][2]) ? 0 : 2) : (fabs(u[0][1]) < fabs(u[0][2]) ? 1 : 2);
        double e[3] = {0, 0, 0};
        e[a0] = 1;
        base_vec3_cross(u[0], e, u[1]);
        s2 = norm3(u[1]);
    }
    for (int r = 0; r < 3; r++) u[1][r] /= s2;
    base_vec3_cross(u[0], u[1], u[2]);
    double detV = v[0][0] * (v[1][1] * v[2][2] - v[1][2] * v[2][1]) - v[1][0] * (v[0][1] * v[2][2] - v[0][2] * v[2][1]) +
                  v[2][0] * (v[0][1] * v[1][2] - v[0][2] * v[1][1]);
    if (detV < 0)
        for (int r = 0; r < 3; r++) v[2][r] = -v[2][r];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) R[3 * r + c] = v[0][r] * u[0][c] + v[1][r] * u[1][c] + v[2][r] * u[2][c];
}

/* ---- the loss ----------------------------------------------------------------------------------- */

#define ARAP_EPS 1e-12

Tensor *gs4d_arap_loss(Tensor *xf, Tensor *xc, const int32_t *nbr, int k) {
    if (xf->ndim != 2 || xf->shape[1] != 3 || xc->ndim != 2 || xc->shape[1] != 3 || xc->shape[0] != xf->shape[0])
        tensor_fail("gs4d_arap_loss", "xf and xc must both be (N, 3)");
    int64_t n = xf->shape[0], np = 0;
    for (int64_t i = 0; i < n * k; i++) np += nbr[i] >= 0;
    if (np == 0) return tensor_mul_scalar(tensor_sum_all(xf), 0.0);
    double *f = base_malloc(sizeof(double) * (size_t)n * 3), *c = base_malloc(sizeof(double) * (size_t)n * 3);
    bool prev = ag_no_grad_begin();
    /* one copy of each to the host (element reads of a device tensor would be one transfer each) */
    tensor_to_f64_array(tensor_to(xf, TENSOR_CPU), f);
    tensor_to_f64_array(tensor_to(xc, TENSOR_CPU), c);
    ag_no_grad_end(prev);
    int64_t *I = base_malloc(sizeof(int64_t) * (size_t)np), *J = base_malloc(sizeof(int64_t) * (size_t)np);
    double *Rp = base_malloc(sizeof(double) * 9 * (size_t)np);
    double *ea = base_malloc(sizeof(double) * 3 * (size_t)(k > 0 ? k : 1)), *eb = base_malloc(sizeof(double) * 3 * (size_t)(k > 0 ? k : 1));
    int64_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        int m = 0;
        for (int s = 0; s < k; s++) {
            int64_t j = nbr[i * k + s];
            if (j < 0) continue;
            for (int a = 0; a < 3; a++) ea[3 * m + a] = c[3 * i + a] - c[3 * j + a], eb[3 * m + a] = f[3 * i + a] - f[3 * j + a];
            m++;
        }
        if (!m) continue;
        double R[9];
        gs4d_best_rotation(ea, eb, m, R);
        for (int s = 0; s < k; s++) {
            int64_t j = nbr[i * k + s];
            if (j < 0) continue;
            I[p] = i, J[p] = j;
            memcpy(Rp + 9 * p, R, sizeof R);
            p++;
        }
    }
    TensorDType dt = xf->dtype;
    Tensor *ti = tensor_from_data(1, (int64_t[]){np}, TENSOR_I64, I);
    Tensor *tj = tensor_from_data(1, (int64_t[]){np}, TENSOR_I64, J);
    Tensor *tr = tensor_from_f64(3, (int64_t[]){np, 3, 3}, dt, Rp); /* a constant: no gradient through R_i */
    free(f), free(c), free(I), free(J), free(Rp), free(ea), free(eb);
    if (tensor_device(xf) != TENSOR_CPU) { /* the fits ran on the host (3×3 SVDs per point); the loss on xf's device */
        ti = tensor_to(ti, tensor_device(xf)), tj = tensor_to(tj, tensor_device(xf)), tr = tensor_to(tr, tensor_device(xf));
    }
    Tensor *e = tensor_sub(tensor_index_select(xf, 0, ti), tensor_index_select(xf, 0, tj));
    Tensor *e0 = tensor_sub(tensor_index_select(xc, 0, ti), tensor_index_select(xc, 0, tj));
    Tensor *re0 = tensor_reshape(tensor_matmul(tr, tensor_unsqueeze(e0, 2)), 2, (int64_t[]){np, 3});
    int d1[1] = {1};
    Tensor *t1 = tensor_sum(tensor_pow_scalar(tensor_sub(e, re0), 2), 1, d1, false);
    Tensor *le = tensor_sqrt(tensor_add_scalar(tensor_sum(tensor_mul(e, e), 1, d1, false), ARAP_EPS));
    Tensor *l0 = tensor_sqrt(tensor_add_scalar(tensor_sum(tensor_mul(e0, e0), 1, d1, false), ARAP_EPS));
    Tensor *t2 = tensor_pow_scalar(tensor_sub(le, l0), 2);
    return tensor_mean_all(tensor_add(t1, t2));
}

/* ---- evaluation metrics ------------------------------------------------------------------------- */

void gs4d_nearest_dist(const float *ref, int64_t nr, const float *q, int64_t nq, double *out) {
    gs4d_nearest(ref, nr, q, nq, out, NULL);
}

void gs4d_nearest(const float *ref, int64_t nr, const float *q, int64_t nq, double *out, int64_t *idx) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < nr; i++)
        for (int a = 0; a < 3; a++) lo[a] = fmin(lo[a], ref[3 * i + a]), hi[a] = fmax(hi[a], ref[3 * i + a]);
    double ext = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    double vol = 1;
    for (int a = 0; a < 3; a++) vol *= fmax(hi[a] - lo[a], ext * 1e-3 + 1e-30);
    double h = cbrt(vol * 2 / (double)nr);
    if (!(h > 0) || !isfinite(h)) h = 1;
    int64_t g[3];
    double hs[3];
    for (int a = 0; a < 3; a++) {
        double c = floor((hi[a] - lo[a]) / h) + 1;
        g[a] = c > (double)nr ? nr : (int64_t)c;
        if (g[a] < 1) g[a] = 1;
        hs[a] = fmax(h, (hi[a] - lo[a]) / (double)g[a] * (1 + 1e-12));
    }
    double hmin = fmin(hs[0], fmin(hs[1], hs[2]));
    int64_t ncell = g[0] * g[1] * g[2];
    int64_t *start = base_calloc((size_t)ncell + 1, sizeof(int64_t)), *cellof = base_malloc(sizeof(int64_t) * (size_t)nr);
    int64_t *sorted = base_malloc(sizeof(int64_t) * (size_t)nr);
    for (int64_t i = 0; i < nr; i++) {
        int64_t c[3];
        for (int a = 0; a < 3; a++) {
            int64_t v = (int64_t)floor((ref[3 * i + a] - lo[a]) / hs[a]);
            c[a] = v < 0 ? 0 : v >= g[a] ? g[a] - 1 : v;
        }
        cellof[i] = (c[0] * g[1] + c[1]) * g[2] + c[2];
        start[cellof[i] + 1]++;
    }
    for (int64_t c = 0; c < ncell; c++) start[c + 1] += start[c];
    int64_t *fill = base_malloc(sizeof(int64_t) * (size_t)ncell);
    memcpy(fill, start, sizeof(int64_t) * (size_t)ncell);
    for (int64_t i = 0; i < nr; i++) sorted[fill[cellof[i]]++] = i;
    int64_t gmax = g[0] > g[1] ? g[0] : g[1];
    if (g[2] > gmax) gmax = g[2];
    for (int64_t k = 0; k < nq; k++) {
        const float *p = q + 3 * k;
        int64_t ci[3];
        for (int a = 0; a < 3; a++) { /* a query outside the grid is clamped into a border cell */
            int64_t v = (int64_t)floor((p[a] - lo[a]) / hs[a]);
            ci[a] = v < 0 ? 0 : v >= g[a] ? g[a] - 1 : v;
        }
        double best = INFINITY;
        int64_t bi = -1;
        for (int64_t r = 0; r <= gmax; r++) {
            for (int64_t a = ci[0] - r; a <= ci[0] + r; a++) {
                if (a < 0 || a >= g[0]) continue;
                for (int64_t b = ci[1] - r; b <= ci[1] + r; b++) {
                    if (b < 0 || b >= g[1]) continue;
                    for (int64_t c = ci[2] - r; c <= ci[2] + r; c++) {
                        if (c < 0 || c >= g[2]) continue;
                        int64_t cheb = llabs(a - ci[0]);
                        if (llabs(b - ci[1]) > cheb) cheb = llabs(b - ci[1]);
                        if (llabs(c - ci[2]) > cheb) cheb = llabs(c - ci[2]);
                        if (cheb != r) continue;
                        int64_t cc = (a * g[1] + b) * g[2] + c;
                        for (int64_t s = start[cc]; s < start[cc + 1]; s++) {
                            const float *o = ref + 3 * sorted[s];
                            double d = 0;
                            for (int e = 0; e < 3; e++) d += ((double)p[e] - o[e]) * ((double)p[e] - o[e]);
                            if (d < best || (d == best && sorted[s] < bi)) best = d, bi = sorted[s];
                        }
                    }
                }
            }
            /* points in shells beyond r are at least r·hmin away: the query lies inside its cell
             * or, clamped, beyond that cell's outer face, which only adds distance */
            if (best <= ((double)r * hmin) * ((double)r * hmin)) break;
        }
        out[k] = sqrt(best);
        if (idx) idx[k] = bi;
    }
    free(start), free(cellof), free(sorted), free(fill);
}

double gs4d_chamfer(const float *a, int64_t na, const float *b, int64_t nb) {
    double ab, ba;
    gs4d_chamfer_sides(a, na, b, nb, &ab, &ba);
    return 0.5 * (ab + ba);
}

void gs4d_chamfer_sides(const float *a, int64_t na, const float *b, int64_t nb, double *ab, double *ba) {
    if (na < 1 || nb < 1) {
        *ab = *ba = NAN;
        return;
    }
    double *da = base_malloc(sizeof(double) * (size_t)na), *db = base_malloc(sizeof(double) * (size_t)nb);
    gs4d_nearest_dist(b, nb, a, na, da);
    gs4d_nearest_dist(a, na, b, nb, db);
    double sa = 0, sb = 0;
    for (int64_t i = 0; i < na; i++) sa += da[i];
    for (int64_t i = 0; i < nb; i++) sb += db[i];
    free(da), free(db);
    *ab = sa / (double)na, *ba = sb / (double)nb;
}

double gs4d_rigidity_error(const float *pos, int frames, const float *rest, int64_t n, const int32_t *nbr, int k) {
    double num = 0, den = 0;
    double *ea = base_malloc(sizeof(double) * 3 * (size_t)(k > 0 ? k : 1)), *eb = base_malloc(sizeof(double) * 3 * (size_t)(k > 0 ? k : 1));
    for (int f = 0; f < frames; f++) {
        const float *x = pos + (size_t)f * n * 3;
        for (int64_t i = 0; i < n; i++) {
            int m = 0;
            for (int s = 0; s < k; s++) {
                int64_t j = nbr[i * k + s];
                if (j < 0) continue;
                for (int a = 0; a < 3; a++)
                    ea[3 * m + a] = (double)rest[3 * i + a] - rest[3 * j + a], eb[3 * m + a] = (double)x[3 * i + a] - x[3 * j + a];
                m++;
            }
            if (!m) continue;
            double R[9];
            gs4d_best_rotation(ea, eb, m, R);
            for (int p = 0; p < m; p++)
                for (int r = 0; r < 3; r++) {
                    double v = eb[3 * p + r] - (R[3 * r] * ea[3 * p] + R[3 * r + 1] * ea[3 * p + 1] + R[3 * r + 2] * ea[3 * p + 2]);
                    num += v * v, den += ea[3 * p + r] * ea[3 * p + r];
                }
        }
    }
    free(ea), free(eb);
    return den > 0 ? sqrt(num / den) : NAN;
}
