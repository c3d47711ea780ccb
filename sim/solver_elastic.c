/* sim/solver_elastic.c — the elastic term of one object's step (solver.h): Σ_c V_c Ψ(F_c(z))
 * over the integration rule with its gradient and PSD-projected Hessian, and the lagged elastic
 * Hessian (SimNewtonOptions.elastic_lag), assembled by groups and co-rotated with a rig. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "sim/lapack.h"
#include "sim/solver_internal.h"

/* the (i, i') blocks of the elastic Hessian computed; the other three are their transposes */
static const int PAIR_I[NPAIR] = {0, 0, 0, 1, 1, 2}, PAIR_J[NPAIR] = {0, 1, 2, 1, 2, 2};
/* the pairs with the three diagonal blocks first (the co-rotation's storage, corotate_kel) */
static const int PORD[NPAIR] = {0, 3, 5, 1, 2, 4};

/* W rows (j = 0..2) of one point, block `pair` (i, i'): Σ_j' sv Ĥ[3i+j][3i'+j'] G_j' — the right
 * factor of (dF/dz)ᵀ Ĥ (dF/dz) restricted to the (i, i') block (G: the point's 3 rows of nb) */
static void hessian_rows(int64_t nb, double sv, const double Hc[81], const double *G, double *W) {
    for (int pr = 0; pr < NPAIR; pr++) {
        int i = PAIR_I[pr], ii = PAIR_J[pr];
        for (int j = 0; j < 3; j++) {
            double h0 = sv * Hc[9 * (3 * i + j) + 3 * ii], h1 = sv * Hc[9 * (3 * i + j) + 3 * ii + 1],
                   h2 = sv * Hc[9 * (3 * i + j) + 3 * ii + 2];
            double *w = W + j * NPAIR * nb + pr * nb;
            for (int64_t q = 0; q < nb; q++) w[q] = h0 * G[q] + h1 * G[nb + q] + h2 * G[2 * nb + q];
        }
    }
}

/* K's pair blocks (nb × NPAIR·nb, row stride ldk) scattered into H (n × n) with both triangles */
static void scatter_pairs(int64_t nb, const double *K, int64_t ldk, double *H) {
    int64_t n = 3 * nb;
    for (int pr = 0; pr < NPAIR; pr++) {
        int i = PAIR_I[pr], ii = PAIR_J[pr];
        for (int64_t q = 0; q < nb; q++)
            for (int64_t qq = 0; qq < nb; qq++) {
                double v = K[q * ldk + pr * nb + qq];
                H[(i * nb + q) * n + ii * nb + qq] += v;
                if (i != ii) H[(ii * nb + qq) * n + i * nb + q] += v;
            }
    }
}

/* Each group's rotation (SimPrepared.ng): the rotation factor of Σ_c V_c F_r,c over its points
 * (identity without rig_F). A point of a bone that turns rigidly has F_r = R, so the group of a
 * bone turns by that bone's rotation; blend points weigh in by volume. */
static void group_rotations(const SimObject *o, const struct SimPrepared *p, double *R) {
    const double *Vol = o->ne ? o->ew : o->Vc;
    for (int g = 0; g < p->ng; g++) {
        double A[9] = {0};
        for (int64_t k = p->gstart[g]; k < p->gstart[g + 1]; k++) {
            int64_t e = p->gidx[k], c = o->ne ? o->eidx[e] : e;
            for (int a = 0; a < 9; a++) A[a] += Vol[e] * (o->rig_F ? o->rig_F[9 * c + a] : (a % 4 == 0));
        }
        if (p->gstart[g + 1] == p->gstart[g]) A[0] = A[4] = A[8] = 1;
        /* the polar factor U Vᵀ of A = U Σ Vᵀ (U, V rotations, σ₂ signed) */
        double U[9], sig[3], V[9];
        sim_svd3_signed(A, U, sig, V);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) R[9 * g + 3 * i + j] = U[3 * i] * V[3 * j] + U[3 * i + 1] * V[3 * j + 1] + U[3 * i + 2] * V[3 * j + 2];
    }
}

/* The elastic Hessian (unscaled, PSD-projected) at z assembled group by group into Kg, its sum
 * into p->Kel (zeroed first), the groups' rotations kept as Rg0 and Rgk: the same matrix as
 * sim_prep_elastic's, the points summed in group order. With a subspace N all of it in N's
 * coordinates (Gg holds G N): Kg's blocks Nᵀ K_g N and their sum into p->Kelr (3r × 3r) instead. */
static void elastic_hessian_groups(const SimObject *o, struct SimPrepared *p, const double *z, int *nproj) {
    int64_t nb = o->nb, nr = o->ne ? o->ne : o->nc, ng = p->ng;
    int64_t rk = p->N ? p->r : nb, nk = 3 * rk; /* the kept blocks' size */
    double *Kout = p->N ? p->Kelr : p->Kel;
    const double *Gall = o->ne ? o->Ge : o->Gc, *Vol = o->ne ? o->ew : o->Vc;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(3 * nr), 3, (int)nb, 1.0, Gall, (int)nb, z, (int)nb, 0.0,
                p->Ft, 3);
    int proj = 0;
    memset(Kout, 0, sizeof(double) * (size_t)(nk * nk));
    for (int g = 0; g < ng; g++) {
        memset(p->K, 0, sizeof(double) * (size_t)(NPAIR * rk * rk));
        for (int64_t k0 = p->gstart[g]; k0 < p->gstart[g + 1]; k0 += CHUNK) {
            int64_t k1 = k0 + CHUNK < p->gstart[g + 1] ? k0 + CHUNK : p->gstart[g + 1];
            int par_nt = base_par_threads(k1 - k0, 300 + 60 * rk);
#pragma omp parallel for reduction(+ : proj) schedule(static) num_threads(par_nt) if (par_nt > 1)
            for (int64_t k = k0; k < k1; k++) {
                int64_t e = p->gidx[k];
                double F[9], Hc[81];
                const double *Fr = o->rig_F ? o->rig_F + 9 * (o->ne ? o->eidx[e] : e) : NULL;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) F[3 * i + j] = (Fr ? Fr[3 * i + j] : (i == j)) + p->Ft[(3 * e + j) * 3 + i];
                if (o->no_projection) sim_snh(F, o->mu, o->lam, NULL, Hc);
                else proj += sim_snh_hessian_psd(F, o->mu, o->lam, Hc) > 0;
                hessian_rows(rk, Vol[e], Hc, p->Gg + 3 * k * rk, p->W + 3 * (k - k0) * NPAIR * rk);
            }
            if (rk)
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rk, (int)(NPAIR * rk), (int)(3 * (k1 - k0)), 1.0,
                            p->Gg + 3 * k0 * rk, (int)rk, p->W, (int)(NPAIR * rk), 1.0, p->K, (int)(NPAIR * rk));
        }
        scatter_pairs(rk, p->K, NPAIR * rk, Kout);
        /* into Kg's tiles one cache line (KG_TILE floats) at a time, element j = (q, qq) of the pair
         * block; walking (q, qq) instead scattered the stores a tile (4.6 KB in the bench) apart */
        for (int k = 0; k < NPAIR; k++) {
            const double *src = p->K + PORD[k] * rk;
            int64_t q = 0, qq = 0;
            for (int64_t j0 = 0; j0 < rk * rk; j0 += KG_TILE) {
                float *dst = p->Kg + KG_AT(k * ng + g, j0, ng * NPAIR);
                for (int jj = 0; jj < KG_TILE && j0 + jj < rk * rk; jj++) {
                    dst[jj] = (float)src[q * NPAIR * rk + qq];
                    if (++qq == rk) qq = 0, q++;
                }
            }
        }
    }
    group_rotations(o, p, p->Rg0);
    memcpy(p->Rgk, p->Rg0, sizeof(double) * 9 * (size_t)ng);
    p->rgk_F = o->rig_F, p->rgk_version = o->rig_F_version, p->rgk_valid = true;
    if (nproj) *nproj = proj;
}

/* res (NPAIR × KG_TILE) = C (NPAIR × K) · A (K × KG_TILE, one tile of Kg), all row-major: the
 * co-rotation's product, the 6 × 16 sums in twelve vector registers (GCC's vector extension: a plain
 * loop kept them in memory). Kg is stored by column tiles so that this reads it front to back: with
 * plain rows each tile touched K cache lines 18 KB apart, more streams than the prefetcher follows
 * (slower than OpenBLAS's sgemm, which itself spent twice its product packing Kg: perf). */
typedef float f32x8 __attribute__((vector_size(32)));
static void compose_tile(int K, const float *C, const float *A, float *res, int64_t stride) {
    f32x8 s0 = {0}, s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0, t4 = s0, t5 = s0;
    for (int k = 0; k < K; k++) {
        f32x8 u, v;
        memcpy(&u, A + k * KG_TILE, sizeof u);
        memcpy(&v, A + k * KG_TILE + 8, sizeof v);
        float c0 = C[k], c1 = C[K + k], c2 = C[2 * K + k], c3 = C[3 * K + k], c4 = C[4 * K + k], c5 = C[5 * K + k];
        s0 += c0 * u, t0 += c0 * v, s1 += c1 * u, t1 += c1 * v, s2 += c2 * u, t2 += c2 * v;
        s3 += c3 * u, t3 += c3 * v, s4 += c4 * u, t4 += c4 * v, s5 += c5 * u, t5 += c5 * v;
    }
    const f32x8 lo[NPAIR] = {s0, s1, s2, s3, s4, s5}, hi[NPAIR] = {t0, t1, t2, t3, t4, t5};
    /* row o of the result at res + o·stride: straight into the output (memcpy of a whole row
     * tile, not a stack copy then a variable-length one: those ran as rep movsq, ~30% of
     * corotate_kel's own time under perf) */
    for (int o = 0; o < NPAIR; o++) memcpy(res + o * stride, &lo[o], sizeof lo[o]), memcpy(res + o * stride + 8, &hi[o], sizeof hi[o]);
}

/* The lagged elastic Hessian co-rotated to the rig's current pose: Ψ is isotropic, so at F' = Q F
 * its Hessian is Ĥ(F') = (Q ⊗ I) Ĥ(F) (Qᵀ ⊗ I) (the PSD projection too), and since dF/dz = I₃ ⊗ G
 * the same rotation passes through to z: a group's block K_g at F turns into
 * (Q ⊗ I_nb) K_g (Qᵀ ⊗ I_nb), block (i, i') = Σ_aa' Q_ia Q_i'a' K_g(a, a'). With Q_g = R_g R_g0ᵀ
 * (the group's rotation now and at the assembly) this is exact for groups whose points all turned
 * rigidly by Q_g with z following them, and otherwise a better start than K_g unturned: a moving
 * rig turns each bone's points every step, which is what left the lagged Hessian behind (rig.h).
 * Composed for all groups at once (compose_tile): per column of the pair blocks,
 * Og = Cg · [K_g(pair) columns], the coefficients of block (i ≤ i') on K_g(a ≤ a') in Cg's first
 * NPAIR rows and those on K_g(a, a')ᵀ (a < a') in its last NPAIR, then Kel(i, i') = S + Tᵀ. Only
 * when a rotation changed since the last composition (a rig moves once per step). */
static void corotate_kel(const SimObject *o, struct SimPrepared *p) {
    /* with a subspace, all in its coordinates (rk = r, into Kelr) */
    int64_t nb = p->N ? p->r : o->nb, n = 3 * nb, ng = p->ng, nb2 = nb * nb;
    double *Kel = p->N ? p->Kelr : p->Kel;
    /* the rig moves once per step: the later iterations find Kel composed for this rig_F (the
     * rotations themselves cost ~0.02 ms, a sum over every point and an SVD per group) */
    if (p->rgk_valid && p->rgk_F == o->rig_F && p->rgk_version == o->rig_F_version) return;
    double R[9 * 64], *Rn = ng <= 64 ? R : malloc(sizeof(double) * 9 * (size_t)ng);
    if (!Rn) return; /* out of memory: the lagged Hessian stays as it is (still a descent direction) */
    group_rotations(o, p, Rn);
    p->rgk_F = o->rig_F, p->rgk_version = o->rig_F_version, p->rgk_valid = true;
    if (!memcmp(Rn, p->Rgk, sizeof(double) * 9 * (size_t)ng)) {
        if (Rn != R) free(Rn);
        return;
    }
    /* S (NPAIR × nb²) = C1 Kg over all its rows, T = C2 Kg over the off-diagonal blocks' rows */
    int K = (int)(ng * NPAIR), Ko = (int)(ng * 3);
    float *C1 = p->Cg, *C2 = p->Cg + NPAIR * K;
    for (int g = 0; g < ng; g++) {
        double Q[9];
        const double *R1 = Rn + 9 * g, *R0 = p->Rg0 + 9 * g;
        for (int i = 0; i < 3; i++)
            for (int a = 0; a < 3; a++) Q[3 * i + a] = R1[3 * i] * R0[3 * a] + R1[3 * i + 1] * R0[3 * a + 1] + R1[3 * i + 2] * R0[3 * a + 2];
        for (int po = 0; po < NPAIR; po++) {
            int i = PAIR_I[po], ii = PAIR_J[po];
            for (int k = 0; k < NPAIR; k++) {
                int a = PAIR_I[PORD[k]], aa = PAIR_J[PORD[k]];
                C1[po * K + k * ng + g] = (float)(Q[3 * i + a] * Q[3 * ii + aa]);
                if (k >= 3) C2[po * Ko + (k - 3) * ng + g] = (float)(Q[3 * i + aa] * Q[3 * ii + a]);
            }
        }
    }
    /* Og's rows padded to whole tiles (nb2p), so every tile is stored whole */
    int64_t nb2p = KG_TILES(nb2) * KG_TILE;
    for (int64_t j0 = 0; j0 < nb2; j0 += KG_TILE) {
        const float *A = p->Kg + j0 * K; /* tile j0 / KG_TILE: K rows of KG_TILE */
        compose_tile(K, C1, A, p->Og + j0, nb2p);
        compose_tile(Ko, C2, A + 3 * ng * KG_TILE, p->Og + NPAIR * nb2p + j0, nb2p); /* the off-diagonal blocks' rows, still in L1 */
    }
    for (int po = 0; po < NPAIR; po++) {
        int i = PAIR_I[po], ii = PAIR_J[po];
        const float *S = p->Og + po * nb2p, *T = p->Og + (NPAIR + po) * nb2p;
        /* by bands of 8 rows q, so that the transposed read of T and the mirror block's writes run
         * along cache lines (row by row, each of the mirror's writes was n doubles from the last) */
        for (int64_t q0 = 0; q0 < nb; q0 += 8) {
            int64_t q1 = q0 + 8 < nb ? q0 + 8 : nb;
            for (int64_t qq = 0; qq < nb; qq++)
                for (int64_t q = q0; q < q1; q++) {
                    double v = (double)S[q * nb + qq] + (double)T[qq * nb + q];
                    Kel[(i * nb + q) * n + ii * nb + qq] = v;
                    if (i != ii) Kel[(ii * nb + qq) * n + i * nb + q] = v;
                }
        }
    }
    memcpy(p->Rgk, Rn, sizeof(double) * 9 * (size_t)ng);
    if (Rn != R) free(Rn);
}

/* the elastic term (solver_internal.h); the Hessian by points in blocks of CHUNK */
double sim_prep_elastic(const SimObject *o, struct SimPrepared *p, const double *z, double scale, double *g, double *H,
                        int *nproj) {
    int64_t nb = o->nb;
    /* the integration rule: all points with their volumes, or an optimized subset (solver.h) */
    int64_t nc = o->ne ? o->ne : o->nc;
    const double *Gall = o->ne ? o->Ge : o->Gc, *Vol = o->ne ? o->ew : o->Vc;
    /* Fᵀ − I for all points: row (c, j), column i = G_j(X_c)·z⁽ⁱ⁾. By plain loops, not BLAS:
     * with three columns (or rows, for the gradient below) dgemm spends longer packing G than
     * multiplying, and dgemv's kernels are slow on rows of nb (16) entries (perf on the pile at
     * cap 1: the two dgemm calls 23% of the run's samples; with three dgemv each, 17%; with
     * these loops the "rest" of a contact frame went from 4.6 to 3.6 ms, docs/contact.md) */
    for (int64_t r = 0; r < 3 * nc; r++) {
        const double *Gr = Gall + r * nb;
        double f0 = 0, f1 = 0, f2 = 0;
#pragma omp simd reduction(+ : f0, f1, f2)
        for (int64_t q = 0; q < nb; q++) f0 += Gr[q] * z[q], f1 += Gr[q] * z[nb + q], f2 += Gr[q] * z[2 * nb + q];
        p->Ft[3 * r] = f0, p->Ft[3 * r + 1] = f1, p->Ft[3 * r + 2] = f2;
    }
    double E = 0;
    int proj = 0;
    if (H) memset(p->K, 0, sizeof(double) * (size_t)(NPAIR * nb * nb));
    int64_t chunk = H ? (nc < CHUNK ? nc : CHUNK) : nc;
    for (int64_t c0 = 0; c0 < nc; c0 += chunk) {
        int64_t c1 = c0 + chunk < nc ? c0 + chunk : nc;
        int par_nt = base_par_threads(c1 - c0, 300 + (H ? 60 * nb : 0));
#pragma omp parallel for reduction(+ : E, proj) schedule(static) num_threads(par_nt) if (par_nt > 1)
        for (int64_t c = c0; c < c1; c++) {
            double F[9], P[9], Hc[81];
            /* with a rig, the total deformation F_r + (G z)ᵀ (x = X + u_r + B z) */
            const double *Fr = o->rig_F ? o->rig_F + 9 * (o->ne ? o->eidx[c] : c) : NULL;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) F[3 * i + j] = (Fr ? Fr[3 * i + j] : (i == j)) + p->Ft[(3 * c + j) * 3 + i];
            double psi = sim_snh(F, o->mu, o->lam, g ? P : NULL, H && o->no_projection ? Hc : NULL);
            E += Vol[c] * psi;
            if (g)
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) p->PT[(3 * c + j) * 3 + i] = scale * Vol[c] * P[3 * i + j];
            if (H) {
                if (!o->no_projection) proj += sim_snh_hessian_psd(F, o->mu, o->lam, Hc) > 0;
                hessian_rows(nb, scale * Vol[c], Hc, Gall + 3 * c * nb, p->W + 3 * (c - c0) * NPAIR * nb);
            }
        }
        if (H) /* the hot loop: K_(i,i') += Σ_c G_cᵀ W_c over a block of points, one dgemm */
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nb, (int)(NPAIR * nb), (int)(3 * (c1 - c0)), 1.0,
                        Gall + 3 * c0 * nb, (int)nb, p->W, (int)(NPAIR * nb), 1.0, p->K, (int)(NPAIR * nb));
    }
    if (g) /* ∇ = (dF/dz)ᵀ vec(P) for all points: g⁽ⁱ⁾ += Σ_(c,j) scale V_c P_ij G_j (loops, as above) */
        for (int64_t r = 0; r < 3 * nc; r++) {
            const double *Gr = Gall + r * nb, *P = p->PT + 3 * r;
#pragma omp simd
            for (int64_t q = 0; q < nb; q++) g[q] += P[0] * Gr[q], g[nb + q] += P[1] * Gr[q], g[2 * nb + q] += P[2] * Gr[q];
        }
    if (H) scatter_pairs(nb, p->K, NPAIR * nb, H);
    if (nproj) *nproj = proj;
    return E;
}

void sim_prep_lagged_elastic(const SimObject *o, struct SimPrepared *p, const double *z, bool fresh, int *nproj) {
    int64_t n = o->n;
    if (fresh || !p->kel_valid) {
        if (p->ng) elastic_hessian_groups(o, p, z, nproj);
        else {
            memset(p->Kel, 0, sizeof(double) * (size_t)(n * n));
            sim_prep_elastic(o, p, z, 1.0, NULL, p->Kel, nproj);
        }
        p->kel_valid = true;
    } else if (p->ng)
        corotate_kel(o, p);
    p->kelr_out = p->ng && p->N;
}

double sim_object_elastic(const SimObject *o, const double *z, double *grad, double *hess) {
    if (!o->prep && sim_object_prepare((SimObject *)o, NULL, 0)) return NAN;
    if (grad) memset(grad, 0, sizeof(double) * (size_t)o->n);
    if (hess) memset(hess, 0, sizeof(double) * (size_t)(o->n * o->n));
    return sim_prep_elastic(o, o->prep, z, 1.0, grad, hess, NULL);
}
