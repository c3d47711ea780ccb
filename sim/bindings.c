/* sim/bindings.c — deformation at arbitrary points and 3D Gaussians (bindings.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "base/mat3.h"
#include "sim/bindings.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/material.h"

/* ---- weights at arbitrary points ------------------------------------------------------------ */

#define KNN 8

int sim_skinning_interpolate(const SimSkinning *sk, int64_t n, const double *x, double *w, double *dw) {
    int64_t nc = sk->nc, m = sk->m;
    /* a uniform grid over the cubature points, ~2 points per cell */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t c = 0; c < nc; c++)
        for (int i = 0; i < 3; i++) lo[i] = fmin(lo[i], sk->cub_x[3 * c + i]), hi[i] = fmax(hi[i], sk->cub_x[3 * c + i]);
    double vol = 1;
    for (int i = 0; i < 3; i++) vol *= fmax(hi[i] - lo[i], 1e-9);
    double h = cbrt(2 * vol / (double)nc);
    int64_t res[3];
    for (int i = 0; i < 3; i++) {
        res[i] = (int64_t)((hi[i] - lo[i]) / h) + 1;
        if (res[i] > 1024) res[i] = 1024;
    }
    int64_t ncell = res[0] * res[1] * res[2];
    int64_t *start = calloc((size_t)ncell + 1, sizeof(int64_t)), *idx = malloc(sizeof(int64_t) * (size_t)nc);
    int64_t *cellof = malloc(sizeof(int64_t) * (size_t)nc);
    if (!start || !idx || !cellof) {
        free(start), free(idx), free(cellof);
        return -1;
    }
    for (int64_t c = 0; c < nc; c++) {
        int64_t ci[3];
        for (int i = 0; i < 3; i++) {
            ci[i] = (int64_t)((sk->cub_x[3 * c + i] - lo[i]) / h);
            ci[i] = ci[i] < 0 ? 0 : ci[i] >= res[i] ? res[i] - 1 : ci[i];
        }
        cellof[c] = (ci[2] * res[1] + ci[1]) * res[0] + ci[0];
        start[cellof[c] + 1]++;
    }
    for (int64_t k = 0; k < ncell; k++) start[k + 1] += start[k];
    {
        int64_t *fill = malloc(sizeof(int64_t) * (size_t)(ncell + 1));
        if (!fill) {
            free(start), free(idx), free(cellof);
            return -1;
        }
        memcpy(fill, start, sizeof(int64_t) * (size_t)(ncell + 1));
        for (int64_t c = 0; c < nc; c++) idx[fill[cellof[c]]++] = c;
        free(fill);
    }
    int64_t k_want = nc < KNN ? nc : KNN;
    int par_nt = base_par_threads(n, 500);
#pragma omp parallel for schedule(dynamic, 256) num_threads(par_nt) if (par_nt > 1)
    for (int64_t p = 0; p < n; p++) {
        const double *X = x + 3 * p;
        int64_t best[KNN];
        double bd[KNN];
        int nbest = 0;
        int64_t ci[3];
        for (int i = 0; i < 3; i++) {
            ci[i] = (int64_t)floor((X[i] - lo[i]) / h);
            ci[i] = ci[i] < 0 ? 0 : ci[i] >= res[i] ? res[i] - 1 : ci[i];
        }
        /* grow the search ring until k points are found and the ring is beyond the k-th */
        for (int64_t ring = 0;; ring++) {
            for (int64_t a = ci[0] - ring; a <= ci[0] + ring; a++)
                for (int64_t b = ci[1] - ring; b <= ci[1] + ring; b++)
                    for (int64_t c = ci[2] - ring; c <= ci[2] + ring; c++) {
                        if (a < 0 || b < 0 || c < 0 || a >= res[0] || b >= res[1] || c >= res[2]) continue;
                        if (llabs(a - ci[0]) != ring && llabs(b - ci[1]) != ring && llabs(c - ci[2]) != ring) continue;
                        int64_t cell = (c * res[1] + b) * res[0] + a;
                        for (int64_t u = start[cell]; u < start[cell + 1]; u++) {
                            int64_t q = idx[u];
                            double d2 = 0;
                            for (int i = 0; i < 3; i++) d2 += (X[i] - sk->cub_x[3 * q + i]) * (X[i] - sk->cub_x[3 * q + i]);
                            if (nbest < k_want) {
                                best[nbest] = q, bd[nbest++] = d2;
                            } else {
                                int worst = 0;
                                for (int j = 1; j < nbest; j++)
                                    if (bd[j] > bd[worst]) worst = j;
                                if (d2 < bd[worst]) best[worst] = q, bd[worst] = d2;
                            }
                        }
                    }
            double far = 0;
            for (int j = 0; j < nbest; j++) far = fmax(far, bd[j]);
            bool all_cells = ring > res[0] && ring > res[1] && ring > res[2];
            if ((nbest == k_want && (double)ring * h >= sqrt(far)) || all_cells) break;
        }
        double eps2 = 1e-4 * h * h, wsum = 0;
        for (int64_t k = 0; k < m; k++) {
            w[p * m + k] = 0;
            if (dw) dw[(p * m + k) * 3] = dw[(p * m + k) * 3 + 1] = dw[(p * m + k) * 3 + 2] = 0;
        }
        for (int j = 0; j < nbest; j++) {
            int64_t q = best[j];
            double phi = 1 / (bd[j] + eps2), dx[3];
            for (int i = 0; i < 3; i++) dx[i] = X[i] - sk->cub_x[3 * q + i];
            wsum += phi;
            for (int64_t k = 0; k < m; k++) {
                const double *g = sk->cub_dw + (q * m + k) * 3;
                w[p * m + k] += phi * (sk->cub_w[q * m + k] + g[0] * dx[0] + g[1] * dx[1] + g[2] * dx[2]);
                if (dw)
                    for (int i = 0; i < 3; i++) dw[(p * m + k) * 3 + i] += phi * g[i];
            }
        }
        for (int64_t k = 0; k < m; k++) {
            w[p * m + k] /= wsum;
            if (dw)
                for (int i = 0; i < 3; i++) dw[(p * m + k) * 3 + i] /= wsum;
        }
    }
    free(start), free(idx), free(cellof);
    return 0;
}

/* ---- bindings ------------------------------------------------------------------------------- */

void sim_binding_free(SimBinding *b) {
    free(b->X), free(b->B), free(b->G);
    memset(b, 0, sizeof *b);
}

int sim_binding_init(SimBinding *b, const SimObject *o, const SimPose *pose, int64_t n, const double *X_obj,
                     const double *w, const double *dw, char *err, size_t errlen) {
    memset(b, 0, sizeof *b);
    int64_t m = o->m, nb = o->nb;
    b->n = n, b->nb = nb;
    b->X = malloc(sizeof(double) * 3 * (size_t)(n + 1));
    b->B = malloc(sizeof(double) * (size_t)((n + 1) * nb));
    b->G = malloc(sizeof(double) * 3 * (size_t)((n + 1) * nb));
    if (!b->X || !b->B || !b->G) {
        sim_binding_free(b);
        base_errf(err, errlen, "binding: out of memory for %lld points", (long long)n);
        return -1;
    }
    const double s = pose->scale, *R = pose->R;
    for (int64_t p = 0; p < n; p++) {
        double *X = b->X + 3 * p;
        for (int i = 0; i < 3; i++) {
            X[i] = pose->translate[i];
            for (int j = 0; j < 3; j++) X[i] += s * R[3 * i + j] * X_obj[3 * p + j];
        }
        /* the same rows as sim_object_init (solver.h): b[4k+l] = w_k X̃_l,
         * G_j[4k+l] = w_k δ_jl [l<3] + ∂_j w_k X̃_l, with ∇_world w = R ∇_obj w / s */
        double *bp = b->B + p * nb;
        for (int64_t k = 0; k <= m; k++) {
            double wk = k < m ? w[p * m + k] : 1.0;
            for (int l = 0; l < 3; l++) bp[4 * k + l] = wk * X[l];
            bp[4 * k + 3] = wk;
            double gw[3] = {0, 0, 0};
            if (k < m && dw)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) gw[i] += R[3 * i + j] * dw[(p * m + k) * 3 + j] / s;
            for (int j = 0; j < 3; j++) {
                double *G = b->G + (3 * p + j) * nb;
                for (int l = 0; l < 3; l++) G[4 * k + l] = (j == l ? wk : 0) + gw[j] * X[l];
                G[4 * k + 3] = gw[j];
            }
        }
        /* the object's fixed-region falloff, as its own rows have it (solver.h) */
        double dphi[3], phi = sim_object_falloff(o, X, dphi);
        if (phi != 1 || dphi[0] != 0 || dphi[1] != 0 || dphi[2] != 0) sim_falloff_rows(m, nb, phi, dphi, bp, b->G + 3 * p * nb);
    }
    return 0;
}

void sim_binding_eval(const SimBinding *b, const double *z, double *x, double *F) {
    int64_t n = b->n, nb = b->nb;
    if (x) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, 3, (int)nb, 1.0, b->B, (int)nb, z, (int)nb, 0.0, x, 3);
        for (int64_t k = 0; k < 3 * n; k++) x[k] += b->X[k];
    }
    if (F) {
        /* Ft row (p, j), column i = G_j(X_p)·z⁽ⁱ⁾ = F_ij − δ_ij; staged in F itself (n × 9) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(3 * n), 3, (int)nb, 1.0, b->G, (int)nb, z, (int)nb, 0.0, F,
                    3);
        for (int64_t p = 0; p < n; p++) {
            double T[9];
            memcpy(T, F + 9 * p, sizeof T); /* T[3j + i] = F_ij − δ_ij */
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) F[9 * p + 3 * i + j] = (i == j) + T[3 * j + i];
        }
    }
}

/* ---- polar decomposition and Gaussians ------------------------------------------------------ */

void sim_polar3(const double A[9], double R[9], double S[9]) {
    /* A = U Σ Vᵀ with U, V rotations and σ₂ signed: R = U Vᵀ, S = V Σ Vᵀ */
    double U[9], sig[3], V[9], Vt[9], D[9];
    sim_svd3_signed(A, U, sig, V);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Vt[3 * i + j] = V[3 * j + i], D[3 * i + j] = V[3 * i + j] * sig[j];
    base_mat3_mul(U, Vt, R);
    base_mat3_mul(D, Vt, S);
}

static void R_to_quat(const double R[9], double q[4]) {
    double tr = R[0] + R[4] + R[8];
    if (tr > 0) {
        double s = 2 * sqrt(1 + tr);
        q[0] = s / 4, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
    } else if (R[0] > R[4] && R[0] > R[8]) {
        double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
        q[0] = (R[7] - R[5]) / s, q[1] = s / 4, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
    } else if (R[4] > R[8]) {
        double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
        q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = s / 4, q[3] = (R[5] + R[7]) / s;
    } else {
        double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
        q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = s / 4;
    }
}

void sim_gaussian_transform(const double A[9], const double q0[4], const double s0[3], double q[4], double s[3]) {
    double R0[9], M[9], RM[9], SM[9], lam[3], V[9], T[9];
    base_quat_to_mat3(q0, R0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) T[3 * i + j] = R0[3 * i + j] * s0[j]; /* R₀ D₀ */
    base_mat3_mul(A, T, M);
    sim_polar3(M, RM, SM);
    /* S_M is symmetric; a negative eigenvalue (det M < 0, an inverted Gaussian) flips its
     * eigenvector, which leaves σ² and so Σ unchanged */
    double Sc[9];
    memcpy(Sc, SM, sizeof Sc);
    sim_jacobi_eigen(3, Sc, lam, V);
    if (base_mat3_det(V) < 0)
        for (int i = 0; i < 3; i++) V[3 * i + 2] = -V[3 * i + 2];
    double Rg[9];
    base_mat3_mul(RM, V, Rg);
    for (int c = 0; c < 3; c++) s[c] = fabs(lam[c]);
    R_to_quat(Rg, q);
}

void sim_gaussians_free(SimGaussianBinding *gb) {
    ds_gaussians_free(&gb->rest), ds_gaussians_free(&gb->out);
    sim_binding_free(&gb->bind);
    memset(gb, 0, sizeof *gb);
}

int sim_gaussians_bind(SimGaussianBinding *gb, const char *path, const SimSkinning *sk, const SimObject *o,
                       const SimPose *pose, char *err, size_t errlen) {
    memset(gb, 0, sizeof *gb);
    if (ds_gaussians_read(path, &gb->rest, err, errlen)) return -1;
    int64_t n = gb->rest.n, m = sk->m;
    double *X = malloc(sizeof(double) * 3 * (size_t)(n + 1)), *w = malloc(sizeof(double) * (size_t)((n + 1) * m));
    double *dw = malloc(sizeof(double) * 3 * (size_t)((n + 1) * m));
    int rc = -1;
    if (!X || !w || !dw || ds_gaussians_alloc(&gb->out, n, gb->rest.sh_degree)) {
        base_errf(err, errlen, "%s: out of memory binding %lld Gaussians", path, (long long)n);
        goto done;
    }
    for (int64_t k = 0; k < 3 * n; k++) X[k] = gb->rest.xyz[k];
    if (sim_skinning_interpolate(sk, n, X, w, dw)) {
        base_errf(err, errlen, "%s: out of memory interpolating weights", path);
        goto done;
    }
    if (sim_binding_init(&gb->bind, o, pose, n, X, w, dw, err, errlen)) goto done;
    memcpy(gb->pose_R, pose->R, sizeof gb->pose_R);
    gb->pose_scale = pose->scale;
    int64_t K = ds_gaussians_sh_count(gb->rest.sh_degree);
    memcpy(gb->out.sh, gb->rest.sh, sizeof(float) * (size_t)(n * K * 3));
    memcpy(gb->out.opacity, gb->rest.opacity, sizeof(float) * (size_t)n);
    rc = 0;
done:
    free(X), free(w), free(dw);
    if (rc) sim_gaussians_free(gb);
    return rc;
}

void sim_gaussians_update(SimGaussianBinding *gb, const SimObject *o) { sim_gaussians_update_rigged(gb, o, NULL, NULL); }

void sim_gaussians_update_rigged(SimGaussianBinding *gb, const SimObject *o, const double *u_r, const double *F_r) {
    int64_t n = gb->bind.n;
    double *x = malloc(sizeof(double) * 3 * (size_t)(n + 1)), *F = malloc(sizeof(double) * 9 * (size_t)(n + 1));
    if (!x || !F) {
        free(x), free(F);
        return;
    }
    sim_binding_eval(&gb->bind, o->z, x, F);
    if (u_r)
        for (int64_t k = 0; k < 3 * n; k++) x[k] += u_r[k];
    if (F_r) /* F = F_r + (G z)ᵀ = F_r + (F_z − I) */
        for (int64_t p = 0; p < n; p++)
            for (int k = 0; k < 9; k++) F[9 * p + k] += F_r[9 * p + k] - (k % 4 == 0);
    double sR[9];
    for (int k = 0; k < 9; k++) sR[k] = gb->pose_scale * gb->pose_R[k];
    int par_nt = base_par_threads(n, 200);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t p = 0; p < n; p++) {
        double A[9], q0[4], s0[3], q[4], s[3];
        base_mat3_mul(F + 9 * p, sR, A); /* object frame → world rest → deformed */
        for (int i = 0; i < 4; i++) q0[i] = gb->rest.rot[4 * p + i];
        for (int i = 0; i < 3; i++) s0[i] = exp(gb->rest.scale[3 * p + i]);
        if (!(q0[0] * q0[0] + q0[1] * q0[1] + q0[2] * q0[2] + q0[3] * q0[3] > 0)) q0[0] = 1;
        sim_gaussian_transform(A, q0, s0, q, s);
        for (int i = 0; i < 3; i++) {
            gb->out.xyz[3 * p + i] = (float)x[3 * p + i];
            gb->out.scale[3 * p + i] = (float)log(fmax(s[i], 1e-30));
        }
        for (int i = 0; i < 4; i++) gb->out.rot[4 * p + i] = (float)q[i];
    }
    free(x), free(F);
}
