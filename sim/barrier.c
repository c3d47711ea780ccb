/* sim/barrier.c — the IPC barrier of the coupled step (world.h): its energy over pair lists and
 * the active pairs, its gradient, the pairs' 3 × 3 Hessian coefficients and their assembly into
 * the reduced Newton matrix. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/lapack.h"
#include "sim/world_internal.h"

/* ---- contact energy, gradient, Hessian over a pair list --------------------------------------- */

static void pair_geom(const struct SimWorldScratch *s, const SimContactPair *q, double alpha, double r[3], double *d) {
    *d = sim_contact_pair_vector(s->bodies, q, alpha, r, NULL, NULL);
}

/* Σ w m b over the pairs at α (bodies' x + α dx), without κ; *dmin: the smallest pair distance */
static double barrier_sum(const SimWorld *w, const SimContactPair *pairs, int64_t np, double alpha, double *dmin) {
    const struct SimWorldScratch *s = w->ws;
    double E = 0, m = INFINITY;
    for (int64_t k = 0; k < np; k++) {
        double r[3], d;
        pair_geom(s, &pairs[k], alpha, r, &d);
        m = fmin(m, d);
        if (d < w->dhat) E += pair_factor(s, &pairs[k], alpha) * sim_barrier(d, w->dhat, NULL, NULL);
    }
    if (dmin) *dmin = m;
    return E;
}

/* κ Σ w m b over the pairs at α */
double sim_world_barrier_energy(const SimWorld *w, const SimContactPair *pairs, int64_t np, double alpha, double *dmin) {
    return w->kappa * barrier_sum(w, pairs, np, alpha, dmin);
}

/* the same over the active pairs at the bodies' x, from the distances and factors sim_world_collect_active
 * stored (the same values sim_world_barrier_energy would compute again, in the same order) */
double sim_world_active_energy(const SimWorld *w) {
    const struct SimWorldScratch *s = w->ws;
    double E = 0;
    for (int64_t t = 0; t < s->nact; t++) {
        const double *ge = s->ageo + GEO * t;
        E += ge[9] * sim_barrier(ge[3], w->dhat, NULL, NULL);
    }
    return w->kappa * E;
}

/* room for need pairs in the active store (its three parallel arrays grow together, at least
 * doubling); 0, or -1 when out of memory (the arrays that did grow are kept) */
static int act_reserve(struct SimWorldScratch *s, int64_t need) {
    if (need <= s->act_cap) return 0;
    int64_t cap = s->act_cap ? 2 * s->act_cap : 256;
    if (cap < need) cap = need + 256;
    SimContactPair *a = realloc(s->act, sizeof *a * (size_t)cap);
    if (a) s->act = a;
    double *g = realloc(s->ageo, sizeof(double) * GEO * (size_t)cap);
    if (g) s->ageo = g;
    int32_t *ix = realloc(s->aidx, sizeof(int32_t) * 5 * (size_t)cap);
    if (ix) s->aidx = ix;
    if (!a || !g || !ix) return -1;
    s->act_cap = cap;
    return 0;
}

/* the pairs of the candidate set within d̂ at α = 0 (bodies' x) become the active set, each with
 * its stencil; *dmin (when given): the smallest distance over all candidates (one pass for both) */
int sim_world_collect_active(SimWorld *w, double *dmin) {
    struct SimWorldScratch *s = w->ws;
    double m = INFINITY;
    s->nact = 0;
    for (int64_t k = 0; k < s->cand.n; k++) {
        if (act_reserve(s, s->nact + 1)) return -1;
        double *ge = s->ageo + GEO * s->nact;
        int32_t *ix = s->aidx + 5 * s->nact;
        double d = sim_contact_pair_stencil(s->bodies, &s->cand.pairs[k], 0, ge, ge + 7, ix + 3, ge + 4, ix);
        m = fmin(m, d);
        if (d >= w->dhat) continue;
        ge[3] = d, ge[9] = pair_factor(s, &s->cand.pairs[k], 0);
        s->act[s->nact++] = s->cand.pairs[k];
    }
    if (dmin) *dmin = m;
    /* the step's friction pairs after them, with their lagged stencils */
    if (act_reserve(s, s->nact + s->nfr)) return -1;
    if (s->nfr) {
        memcpy(s->act + s->nact, s->fr, sizeof *s->fr * (size_t)s->nfr);
        memcpy(s->ageo + GEO * s->nact, s->frgeo, sizeof(double) * GEO * (size_t)s->nfr);
        memcpy(s->aidx + 5 * s->nact, s->fridx, sizeof(int32_t) * 5 * (size_t)s->nfr);
    }
    return 0;
}

/* an active pair's row on one side: the weighted sum of its points (side 0: the point, or the
 * edge's ends at the closest point's parameter; side 1: a point, the triangle's corners at the
 * closest point's weights, or the edge's ends); reduced: the rows in the reduced coordinates (r
 * long), else the full ones (nb long) */
void sim_world_pair_row(const SimWorld *w, int64_t t, int side, bool reduced, double *row) {
    const struct SimWorldScratch *s = w->ws;
    const SimContactPair *q = &s->act[t];
    const ObjInfo *oi = &s->oi[side ? q->b : q->a];
    const double *R = reduced ? obj_rows(oi) : oi->Bp;
    int64_t len = reduced ? oi->r : oi->nb;
    if (!side && q->f != SIM_PAIR_EE) {
        memcpy(row, R + q->p * len, sizeof(double) * (size_t)len);
        return;
    }
    const double *wt = s->ageo + GEO * t + (side ? 4 : 7);
    const int32_t *ix = s->aidx + 5 * t + (side ? 0 : 3);
    memset(row, 0, sizeof(double) * (size_t)len);
    for (int k = 0; k < (side ? 3 : 2); k++)
        if (ix[k] >= 0 && wt[k] != 0) cblas_daxpy((int)len, wt[k], R + ix[k] * len, 1, row, 1);
}

/* an edge pair's mollifier gradient: ∂m/∂x for its four points (side a's ends, side b's) */
static void mollifier_gradient(const SimWorld *w, const SimContactPair *q, double dm[4][3]) {
    const struct SimWorldScratch *s = w->ws;
    const int32_t *ea = s->edges[q->a] + 2 * q->p, *eb = s->edges[q->b] + 2 * q->q;
    const double *xa = s->x[q->a], *xb = s->x[q->b];
    double e0[3], e1[3];
    for (int i = 0; i < 3; i++) e0[i] = xa[3 * ea[1] + i] - xa[3 * ea[0] + i], e1[i] = xb[3 * eb[1] + i] - xb[3 * eb[0] + i];
    sim_ee_mollifier(e0, e1, 1e-3 * s->elen2[q->a][q->p] * s->elen2[q->b][q->q], dm[1], dm[3]);
    for (int i = 0; i < 3; i++) dm[0][i] = -dm[1][i], dm[2][i] = -dm[3][i];
}

/* scale · ∇(κ Σ m b) over the active pairs added to g (Z-sized): κ m b′ r/d on side a's points
 * (times their weights), −w_j that on side b's, and κ b ∂m/∂x for the edge pairs with m < 1 */
void sim_world_barrier_gradient(const SimWorld *w, double scale, double *g) {
    const struct SimWorldScratch *s = w->ws;
    double *row = s->tmp;
    for (int64_t t = 0; t < s->nact; t++) {
        const SimContactPair *q = &s->act[t];
        const double *r = s->ageo + GEO * t, d = r[3], m = r[9];
        double db, b = sim_barrier(d, w->dhat, &db, NULL);
        double f = scale * w->kappa * m * db / d;
        if (q->f == SIM_PAIR_EE && m < 1) {
            double dm[4][3];
            mollifier_gradient(w, q, dm);
            const int32_t *ea = s->edges[q->a] + 2 * q->p, *eb = s->edges[q->b] + 2 * q->q;
            for (int k = 0; k < 4; k++) {
                int body = k < 2 ? q->a : q->b;
                if (body >= w->nobj) continue;
                double c[3] = {scale * w->kappa * b * dm[k][0], scale * w->kappa * b * dm[k][1], scale * w->kappa * b * dm[k][2]};
                add_point_force(w, body, k < 2 ? ea[k] : eb[k - 2], c, g);
            }
        }
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            const ObjInfo *oi = &s->oi[body];
            sim_world_pair_row(w, t, side, false, row);
            double sg = side ? -f : f;
            for (int i = 0; i < 3; i++) cblas_daxpy((int)oi->nb, sg * r[i], row, 1, g + oi->off + i * oi->nb, 1);
        }
    }
}

/* The six coefficients (e = (i ≤ i')) of active pair t's 3 × 3 Hessian block C, scaled:
 * κ m (b″ n nᵀ + (b′/d) P) with n = r/d and P the tangential curvature of the distance to the
 * closest feature, the other side held at that feature: I − n nᵀ for a point (a point pair, or a
 * triangle's corner, or two edges' ends), I − n nᵀ − e eᵀ for an edge's interior (direction e)
 * against a point, 0 for a face or two edges' interiors (the distance between the lines is flat
 * along both). An edge pair's mollifier m is held fixed (its derivatives enter the gradient, not
 * this Hessian: it is below 1 only for nearly parallel edges, where the ends' point–triangle
 * pairs carry the contact; sim_ee_barrier has the exact pair Hessian). With
 * tangential false, P = 0: the per-pair PSD projection (b′ < 0 inside d̂). The exact one
 * converges quadratically where the projected one crawls (resting contact: full Newton steps
 * shrinking the decrement by only 0.5–0.75 each); the projected one always factors. The step
 * factors the projected one and solves with the exact one by CG (below). */
void sim_world_pair_coefficients(const SimWorld *w, double scale, int64_t t, bool tangential, double cf[6]) {
    const struct SimWorldScratch *s = w->ws;
    if (t >= s->nact) { /* a friction pair (they follow the barrier's in act) */
        sim_world_friction_coefficients(w, scale, t - s->nact, tangential, cf);
        return;
    }
    const double *r = s->ageo + GEO * t, d = r[3], *wt = r + 4, *ua = r + 7, m = r[9];
    if (!tangential && m < 0) { /* a dedup term subtracting: nothing of it in the PSD matrix */
        memset(cf, 0, sizeof(double) * 6);
        return;
    }
    const int32_t *ib = s->aidx + 5 * t, *ia = ib + 3;
    double c = scale * w->kappa * m * sim_barrier_pair_curvature(d, w->dhat) / (d * d), tg = 0, e[3] = {0, 0, 0};
    int nz = 0, k0 = -1, k1 = -1, na = (ia[0] >= 0 && ua[0] > 0) + (ia[1] >= 0 && ua[1] > 0);
    for (int k = 0; k < 3; k++)
        if (ib[k] >= 0 && wt[k] > 0) k0 < 0 ? (k0 = k) : (k1 = k), nz++;
    if (tangential && nz + na < 4) {
        double db;
        sim_barrier(d, w->dhat, &db, NULL);
        tg = scale * w->kappa * m * db / d;
        if (nz + na == 3) { /* the edge's direction (on side b, or side a's edge against a point) */
            const double *xe = s->x[nz == 2 ? s->act[t].b : s->act[t].a];
            int32_t i0 = nz == 2 ? ib[k0] : ia[0], i1 = nz == 2 ? ib[k1] : ia[1];
            double l = 0;
            for (int i = 0; i < 3; i++) e[i] = xe[3 * i1 + i] - xe[3 * i0 + i], l += e[i] * e[i];
            l = sqrt(l);
            for (int i = 0; i < 3; i++) e[i] = l > 0 ? e[i] / l : 0;
        }
    }
    for (int q = 0; q < 6; q++) {
        int i = PI_[q], ii = PJ_[q];
        double P = (i == ii) - r[i] * r[ii] / (d * d) - e[i] * e[ii];
        cf[q] = c * r[i] * r[ii] + tg * P;
    }
}

/* Adds sgn · K6 (r_a × 6 r_b: the six K_e, e = (i ≤ i'), side by side) to Hr's block of objects
 * (a, b): K_e at coordinate blocks (i, i') and (i', i) alike, as the pairs' 3 × 3 coefficients
 * C are symmetric (Σ C_ii' u vᵀ = Σ C_i'i u vᵀ). */
static void scatter6(const struct SimWorldScratch *s, const ObjInfo *A, const ObjInfo *B, const double *K6, double sgn) {
    int64_t NR = s->nred, ra = A->r, rb = B->r;
    for (int e = 0; e < 6; e++) {
        int i = PI_[e], ii = PJ_[e];
        double *blk = s->Hr + (A->roff + i * ra) * NR + B->roff + ii * rb;
        for (int64_t x = 0; x < ra; x++)
            for (int64_t y = 0; y < rb; y++) blk[x * NR + y] += sgn * K6[x * 6 * rb + e * rb + y];
        if (i == ii) continue;
        blk = s->Hr + (A->roff + ii * ra) * NR + B->roff + i * rb;
        for (int64_t x = 0; x < ra; x++)
            for (int64_t y = 0; y < rb; y++) blk[x * NR + y] += sgn * K6[x * 6 * rb + e * rb + y];
    }
}

/* The transposes: Hr's block (b, a) gets sgn · K6ᵀ blockwise (K6 as built for the block (a, b)). */
static void scatter6_transposed(const struct SimWorldScratch *s, const ObjInfo *B, const ObjInfo *A, const double *K6,
                                double sgn) {
    int64_t NR = s->nred, ra = A->r, rb = B->r;
    for (int e = 0; e < 6; e++) {
        int i = PI_[e], ii = PJ_[e];
        /* (a, i ; b, ii) block K_e lands transposed at (b, ii ; a, i), and at (b, i ; a, ii) when i ≠ ii */
        for (int pass = 0; pass < (i == ii ? 1 : 2); pass++) {
            int bi = pass ? i : ii, ai = pass ? ii : i;
            double *blk = s->Hr + (B->roff + bi * rb) * NR + A->roff + ai * ra;
            for (int64_t y = 0; y < rb; y++)
                for (int64_t x = 0; x < ra; x++) blk[y * NR + x] += sgn * K6[x * 6 * rb + e * rb + y];
        }
    }
}

/* The pairs' Hessians (pairs t0 ≤ t < t1 of act: the barrier's, then the friction pairs after
 * them) added to Hr (the reduced Newton matrix, NR × NR), from the pairs' rows that
 * sim_world_contact_prepare stored. A pair with 3 × 3
 * coefficient C and rows u (its point's) and v (the other side's: a point, or the triangle's
 * corners weighted at the closest point — the weights held fixed, so the Hessian is the pinned
 * closest point's, exact for point pairs) adds C ⊗ u uᵀ to its point's object block, C ⊗ v vᵀ to
 * the other's and −C ⊗ u vᵀ between them. Per object (and per object pair) one product Uᵀ Y
 * over the pairs' rows, Y = [C_e u] for the six e = (i ≤ i'). Records the coupling in comp. */
int sim_world_barrier_hessian(SimWorld *w, double scale, bool tangential, int64_t t0, int64_t t1) {
    struct SimWorldScratch *s = w->ws;
    int64_t r_max = s->rmax, n = t1 + 1;
    /* scratch: U (n × r), Y (n × 6r), K6 (r × 6r), per pair coefficients (n × 6) */
    size_t need_u = (size_t)(n * r_max * 7 + 6 * r_max * r_max + 6 * n);
    double *U = realloc(s->U, sizeof(double) * need_u);
    if (!U) return -1;
    s->U = U;
    double *Y = U + n * r_max, *K6 = Y + 6 * n * r_max, *cf = K6 + 6 * r_max * r_max;
    for (int64_t t = t0; t < t1; t++) sim_world_pair_coefficients(w, scale, t, tangential, cf + 6 * t);
    for (int a = 0; a < w->nobj; a++) {
        const ObjInfo *A = &s->oi[a];
        int64_t ra = A->r, P = 0;
        /* (a, a): every pair with a side in a */
        for (int64_t t = t0; t < t1; t++) {
            const SimContactPair *q = &s->act[t];
            if (q->a != a && q->b != a) continue;
            double *u = U + P * ra, *y = Y + P * 6 * ra;
            memcpy(u, s->Ug + (2 * t + (q->a == a ? 0 : 1)) * r_max, sizeof(double) * (size_t)ra);
            for (int e = 0; e < 6; e++)
                for (int64_t j = 0; j < ra; j++) y[e * ra + j] = cf[6 * t + e] * u[j];
            P++;
        }
        if (!P) continue;
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ra, (int)(6 * ra), (int)P, 1.0, U, (int)ra, Y,
                    (int)(6 * ra), 0.0, K6, (int)(6 * ra));
        scatter6(s, A, A, K6, 1);
        /* (a, b), b > a deformable */
        for (int b = a + 1; b < w->nobj; b++) {
            const ObjInfo *B = &s->oi[b];
            int64_t rb = B->r;
            P = 0;
            for (int64_t t = t0; t < t1; t++) {
                const SimContactPair *q = &s->act[t];
                if (!((q->a == a && q->b == b) || (q->a == b && q->b == a))) continue;
                int sa = q->a == a ? 0 : 1;
                double *y = Y + P * 6 * rb;
                const double *v = s->Ug + (2 * t + 1 - sa) * r_max;
                memcpy(U + P * ra, s->Ug + (2 * t + sa) * r_max, sizeof(double) * (size_t)ra);
                for (int e = 0; e < 6; e++)
                    for (int64_t j = 0; j < rb; j++) y[e * rb + j] = cf[6 * t + e] * v[j];
                P++;
            }
            if (!P) continue;
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ra, (int)(6 * rb), (int)P, 1.0, U, (int)ra, Y,
                        (int)(6 * rb), 0.0, K6, (int)(6 * rb));
            /* H_ab(i, i') = H_ab(i', i) = −K; H_ba = H_abᵀ */
            scatter6(s, A, B, K6, -1);
            scatter6_transposed(s, B, A, K6, -1);
            s->hr_dirty[a * w->nobj + b] = s->hr_dirty[b * w->nobj + a] = true;
            int ca = s->comp[a], cb = s->comp[b];
            if (ca != cb)
                for (int o = 0; o < w->nobj; o++)
                    if (s->comp[o] == cb) s->comp[o] = ca;
        }
    }
    return 0;
}
