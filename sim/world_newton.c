/* sim/world_newton.c — the coupled step's reduced Newton matrix (world.h): the objects' blocks,
 * the components' dense Cholesky factors, and the directions by conjugate gradients on the exact
 * Hessian (or, without contact, a Cholesky per object). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "sim/dense.h"
#include "sim/lapack.h"
#include "sim/world_internal.h"

/* the Newton matrix's first Cholesky shift on a failure, relative to its mean diagonal (dense.h) */
#define CHOL_SHIFT 1e-14

/* Object k's reduced block (Hob) from its step Hessian in s->Hk: (I ⊗ N)ᵀ H_k (I ⊗ N), one
 * coordinate block (i, i') at a time, T = H_ii' N (nb × r) then Nᵀ T: T stays in L1, where the
 * whole H_k (I ⊗ N) at once (n × 3r, 300 KB at 16 handles) would not (sag: 3% a frame) */
static void reduce_object_block(const SimWorld *w, int k) {
    struct SimWorldScratch *s = w->ws;
    const ObjInfo *A = &s->oi[k];
    int64_t NR = A->m, n = A->n, nb = A->nb, r = A->r;
    double *out = s->Hob + A->hoff, *T = s->tmp;
    for (int i = 0; i < 3; i++)
        for (int ii = 0; ii < 3; ii++) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)r, (int)nb, 1.0, s->Hk + i * nb * n + ii * nb,
                        (int)n, A->N, (int)r, 0.0, T, (int)r);
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r, (int)r, (int)nb, 1.0, A->N, (int)r, T, (int)r, 0.0,
                        out + i * r * NR + ii * r, (int)NR);
        }
}

/* The objects' part of the reduced Newton matrix: each object's step Hessian (its elastic term
 * lagged when `lagged`, solver.h, reassembled when `fresh`) reduced into its block of Hob.
 * Returns whether any elastic Hessian was assembled. */
bool sim_world_objects_hessian(SimWorld *w, const double *Z, const double *Ztil, double dt, double t, bool lagged,
                            bool fresh) {
    struct SimWorldScratch *s = w->ws;
    bool any = !lagged;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &s->oi[k];
        double *H = oi->N ? s->Hk : s->Hob + oi->hoff; /* no subspace: the block itself */
        if (lagged)
            any |= sim_object_lagged_hessian(&w->obj[k], Z + oi->off, dt, t, fresh, H);
        else
            sim_object_objective(&w->obj[k], Z + oi->off, Ztil + oi->off, dt, t, NULL, H);
        if (oi->N) {
            /* the kept reduction when H is bitwise the one it was made from (the same arithmetic
             * would give the same block); else a new one, kept */
            size_t bytes = sizeof(double) * (size_t)(oi->n * oi->n), rbytes = sizeof(double) * (size_t)(oi->m * oi->m);
            double *Hk = s->Hkeep + oi->koff, *Hr = s->Hred + oi->hoff, *out = s->Hob + oi->hoff;
            if (s->hred_ok[k] && !memcmp(H, Hk, bytes))
                memcpy(out, Hr, rbytes);
            else {
                reduce_object_block(w, k);
                memcpy(Hk, H, bytes), memcpy(Hr, out, rbytes);
                s->hred_ok[k] = true;
            }
        }
        const double *Kr = lagged && oi->N ? sim_object_lagged_reduced(&w->obj[k]) : NULL;
        if (Kr) /* the elastic term kept in the subspace (solver.h): dt² Kr into the block */
            for (int64_t a = 0; a < oi->m; a++)
                cblas_daxpy((int)oi->m, dt * dt, Kr + a * oi->m, 1, s->Hob + oi->hoff + a * oi->m, 1);
    }
    return any;
}

/* gr = each object's reduced gradient (its subspace's Nᵀ g per block, or a copy) */
void sim_world_reduce_g(const SimWorld *w, const double *g, double *gr) {
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &w->ws->oi[k];
        sim_subspace_reduce(oi->nb, oi->r, oi->N, g + oi->off, gr + oi->roff);
    }
}

/* dz = each object's step from its reduced one (dz = (I ⊗ N) dy, or a copy) */
void sim_world_expand(const SimWorld *w, const double *dy, double *dz) {
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &w->ws->oi[k];
        sim_subspace_expand(oi->nb, oi->r, oi->N, dy + oi->roff, dz + oi->off);
    }
}

/* x = Hr⁻¹ b per connected component (x may be b). With refactor, each component's block of Hr is
 * factored into Lh (one after another: Σ dim² ≤ NR²); without, the factors of the last refactor
 * are reused (s->comp, which fixes the components, is only rebuilt with a new factorization, so
 * the blocks line up). */
int sim_world_solve_components(SimWorld *w, bool refactor, int attempts, int *ncomp, int *shifted, const double *b,
                            double *x) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred, off = 0;
    *ncomp = 0;
    if (shifted) *shifted = 0;
    int *members = malloc(sizeof(int) * (size_t)(w->nobj + 1));
    if (!members) return -1;
    int rc = 0;
    for (int c = 0; c < w->nobj && !rc; c++) {
        int nm = 0;
        int64_t dim = 0;
        for (int o = 0; o < w->nobj; o++)
            if (s->comp[o] == c) members[nm++] = o, dim += s->oi[o].m;
        if (!nm) continue;
        (*ncomp)++;
        double *L = s->Lh + off, *S = s->sub, *rhs = s->tmp;
        off += dim * dim;
        /* gather the component's rows/columns (and factor), solve */
        int64_t ru = 0;
        for (int u = 0; u < nm; u++) {
            const ObjInfo *A = &s->oi[members[u]];
            for (int64_t i = 0; i < A->m; i++, ru++) {
                int64_t rv = 0;
                for (int v = 0; v < nm && refactor && nm > 1; v++) {
                    const ObjInfo *B = &s->oi[members[v]];
                    memcpy(S + ru * dim + rv, s->Hr + (A->roff + i) * NR + B->roff, sizeof(double) * (size_t)B->m);
                    rv += B->m;
                }
                rhs[ru] = b[A->roff + i];
            }
        }
        if (refactor) {
            /* one object: its block of Hr as it stands (no gather into S first) */
            const double *src = nm == 1 ? s->Hr + s->oi[members[0]].roff * (NR + 1) : S;
            int tries = sim_chol_shifted(L, src, nm == 1 ? (int)NR : (int)dim, (int)dim, CHOL_SHIFT, attempts);
            if (tries < 0) {
                rc = 1;
                break;
            }
            if (shifted) *shifted += tries;
        }
        /* two triangular solves (dpotrs would pack L for a matrix right-hand side) */
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)dim, L, (int)dim, rhs, 1);
        cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, (int)dim, L, (int)dim, rhs, 1);
        ru = 0;
        for (int u = 0; u < nm; u++) {
            const ObjInfo *A = &s->oi[members[u]];
            memcpy(x + A->roff, rhs + ru, sizeof(double) * (size_t)A->m);
            ru += A->m;
        }
    }
    free(members);
    return rc;
}


/* ---- Newton directions: conjugate gradients on the exact Hessian ------------------------------
 *
 * The exact pair-barrier Hessian is often indefinite (its tangential term, −κ|b′|/d, is of the
 * size of the lightest subspace directions' inertia), and assembling it costs as much as a
 * factorization. So the direction comes from preconditioned CG on the exact matrix, applied
 * without assembling it (sim_world_hess_apply: the objects' blocks times v, plus Σ_pairs J_pᵀ C_p J_p v
 * through the pairs' points, O(pairs · r)), with the Cholesky factors of the PSD matrix (the
 * per-pair projected barrier, which always factors) as the preconditioner. Where the exact
 * Hessian is positive definite, CG converges to its Newton step; where CG meets negative
 * curvature it stops at the last iterate, still a descent direction (Steihaug 1983), or on the
 * first iteration takes the preconditioned gradient step. The factors are kept across
 * iterations and steps while CG converges quickly with them, and refreshed when it does not. */

/* The active pairs' exact Hessians in factored form for sim_world_hess_apply: per pair its two rows
 * (reduced, r_max apart; none for a rigid side) and the six coefficients. */
int sim_world_contact_prepare(SimWorld *w, double scale) {
    struct SimWorldScratch *s = w->ws;
    int64_t nall = s->nact + s->nfr;
    if (nall > s->pair_cap) {
        int64_t cap = nall + nall / 2 + 64;
        double *ug = realloc(s->Ug, sizeof(double) * 2 * (size_t)(cap * s->rmax));
        if (ug) s->Ug = ug;
        double *cf = realloc(s->cfx, sizeof(double) * 6 * (size_t)cap);
        if (cf) s->cfx = cf;
        if (!ug || !cf) return -1;
        s->pair_cap = cap;
    }
    for (int64_t t = 0; t < nall; t++) {
        const SimContactPair *q = &s->act[t];
        for (int side = 0; side < 2; side++)
            if ((side ? q->b : q->a) >= 0 && (side ? q->b : q->a) < w->nobj) sim_world_pair_row(w, t, side, true, s->Ug + (2 * t + side) * s->rmax);
        sim_world_pair_coefficients(w, scale, t, true, s->cfx + 6 * t);
    }
    return 0;
}

/* out = H v with H the exact reduced Newton matrix: the objects' blocks (Hob) and each pair's
 * C ⊗ [u; −v][u; −v]ᵀ through its two rows. */
void sim_world_hess_apply(const SimWorld *w, const double *v, double *out) {
    const struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *A = &s->oi[k];
        cblas_dsymv(CblasRowMajor, CblasUpper, (int)A->m, 1.0, s->Hob + A->hoff, (int)A->m, v + A->roff, 1, 0.0,
                    out + A->roff, 1);
    }
    for (int64_t t = 0; t < s->nact + s->nfr; t++) {
        const SimContactPair *q = &s->act[t];
        double dd[3] = {0, 0, 0};
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            const ObjInfo *A = &s->oi[body];
            double ds[3], sg = side ? -1 : 1;
            sim_rows_times_coords(1, A->r, s->Ug + (2 * t + side) * s->rmax, v + A->roff, ds, false);
            dd[0] += sg * ds[0], dd[1] += sg * ds[1], dd[2] += sg * ds[2];
        }
        const double *c = s->cfx + 6 * t;
        double f[3] = {c[0] * dd[0] + c[1] * dd[1] + c[2] * dd[2], c[1] * dd[0] + c[3] * dd[1] + c[4] * dd[2],
                       c[2] * dd[0] + c[4] * dd[1] + c[5] * dd[2]};
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            const ObjInfo *A = &s->oi[body];
            const double *u = s->Ug + (2 * t + side) * s->rmax;
            double *o0 = out + A->roff, *o1 = o0 + A->r, *o2 = o1 + A->r, sg = side ? -1 : 1;
            double f0 = sg * f[0], f1 = sg * f[1], f2 = sg * f[2];
#pragma omp simd
            for (int64_t j = 0; j < A->r; j++) o0[j] += f0 * u[j], o1[j] += f1 * u[j], o2[j] += f2 * u[j];
        }
    }
}

/* Hr = the objects' blocks (Hob) on its diagonal, each object its own component. Only the
 * off-diagonal blocks the last assembly's pairs wrote are zeroed (the rest still are): with ten
 * objects Hr is 1920² doubles, and clearing all of it (30 MB) took 3% of a capped ten-object pile,
 * whose off-diagonal blocks are nearly all zero (most components are one object). */
void sim_world_hr_from_objects(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred;
    for (int a = 0; a < w->nobj; a++)
        for (int b = 0; b < w->nobj; b++) {
            if (!s->hr_dirty[a * w->nobj + b]) continue;
            const ObjInfo *A = &s->oi[a], *B = &s->oi[b];
            for (int64_t i = 0; i < A->m; i++) memset(s->Hr + (A->roff + i) * NR + B->roff, 0, sizeof(double) * (size_t)B->m);
            s->hr_dirty[a * w->nobj + b] = false;
        }
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *A = &s->oi[k];
        for (int64_t i = 0; i < A->m; i++)
            memcpy(s->Hr + (A->roff + i) * NR + A->roff, s->Hob + A->hoff + i * A->m, sizeof(double) * (size_t)A->m);
        s->comp[k] = k;
    }
}

/* Factors the PSD Newton matrix: the objects' blocks plus the projected pair Hessians (which also
 * fixes the components), with growing shifts if even that does not factor. 0, 1: no factor, -1: oom. */
int sim_world_factor_psd(SimWorld *w, double scale, bool contact, int *ncomp) {
    struct SimWorldScratch *s = w->ws;
    memset(s->hf_ok, 0, sizeof(bool) * (size_t)w->nobj); /* Lh is about to hold other factors */
    double t0 = base_cpu_now();
    sim_world_hr_from_objects(w);
    if (contact && sim_world_barrier_hessian(w, scale, false, 0, s->nact + s->nfr)) return -1;
    /* the assembly is the Hessians' share of the direction's time (ws_direction counts it all as solves) */
    double th = base_cpu_now() - t0;
    w->last.t_hessian += th, w->last.t_solve -= th;
    /* factors only: the right-hand side is a dummy */
    int rc = sim_world_solve_components(w, true, 8, ncomp, NULL, s->cg, s->cg);
    s->have_factor = rc == 0;
    return rc;
}

/* dy ≈ −H⁻¹ gr by preconditioned CG (see above), to a relative residual eta in the preconditioner's
 * norm, at most kmax products. Returns the products used; *slow when it did not get there (or
 * met negative curvature at once), *negative when it met negative curvature. */
int sim_world_newton_direction(SimWorld *w, double eta, int kmax, bool *slow, bool *negative) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred;
    double *x = s->cg, *r = x + NR, *z = r + NR, *p = z + NR, *q = p + NR;
    int nc;
    *slow = true, *negative = false;
    for (int64_t i = 0; i < NR; i++) r[i] = -s->gr[i], x[i] = 0;
    sim_world_solve_components(w, false, 0, &nc, NULL, r, z);
    memcpy(p, z, sizeof(double) * (size_t)NR);
    double rz = cblas_ddot((int)NR, r, 1, z, 1), rz0 = rz;
    int k = 0;
    while (k < kmax && rz > 0) {
        sim_world_hess_apply(w, p, q);
        k++;
        double pq = cblas_ddot((int)NR, p, 1, q, 1);
        if (!(pq > 0)) {
            *negative = true;
            if (k == 1) memcpy(x, p, sizeof(double) * (size_t)NR); /* the preconditioned gradient step */
            else *slow = false;
            break;
        }
        double a = rz / pq;
        cblas_daxpy((int)NR, a, p, 1, x, 1);
        cblas_daxpy((int)NR, -a, q, 1, r, 1);
        sim_world_solve_components(w, false, 0, &nc, NULL, r, z);
        double rz1 = cblas_ddot((int)NR, r, 1, z, 1);
        if (rz1 <= eta * eta * rz0) {
            *slow = false;
            break;
        }
        for (int64_t i = 0; i < NR; i++) p[i] = z[i] + (rz1 / rz) * p[i];
        rz = rz1;
    }
    if (rz0 == 0) *slow = false;
    memcpy(s->dy, x, sizeof(double) * (size_t)NR);
    return k;
}

/* Σ_k grᵀ M_r,k⁻¹ gr: the gradient's size in the mass metric, the stop test. With the projected
 * barrier Hessian it bounds the Newton decrement (H ⪰ blockdiag M_r: every added term is PSD);
 * the exact one can be softer tangentially, and the test is then one on the gradient alone. */
double sim_world_mass_bound(const SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    double b = 0;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &s->oi[k];
        int r = (int)oi->r, three = 3, info = 0;
        if (!r) continue;
        double *x = s->tmp;
        memcpy(x, s->gr + oi->roff, sizeof(double) * (size_t)oi->m);
        dpotrs_("L", &r, &three, oi->Lm, &r, x, &r, &info, 1);
        b += cblas_ddot((int)oi->m, s->gr + oi->roff, 1, x, 1);
    }
    return b;
}

/* Without contact the Newton matrix is the objects' blocks, each PSD: dy = −H⁻¹ gr by a dense
 * Cholesky per object, as exact as CG preconditioned by those factors (one product) and cheaper.
 * Fresh: every block is factored, unless it is bitwise equal to the one last factored (free
 * flight with the lagged elastic term, an unchanged set of plane contacts) and keeps its
 * factor; not fresh: a chord step with the last factors. 0, 1: a block did not factor. */
int sim_world_direct_direction(SimWorld *w, bool fresh) {
    struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *A = &s->oi[k];
        int m = (int)A->m, nrhs = 1, info = 0;
        double *Hb = s->Hob + A->hoff, *L = s->Lh + A->hoff, *F = s->Hf + A->hoff, *dy = s->dy + A->roff;
        size_t bytes = sizeof(double) * (size_t)m * (size_t)m;
        if (fresh && !(s->hf_ok[k] && !memcmp(Hb, F, bytes))) {
            int tries = sim_chol_shifted(L, Hb, m, m, CHOL_SHIFT, 8);
            memcpy(F, Hb, bytes);
            s->hf_ok[k] = tries >= 0;
            if (tries < 0) return 1;
            w->obj[k].last.chol_retries += tries;
            w->last.factorizations++;
        }
        if (!s->hf_ok[k]) return 1;
        for (int i = 0; i < m; i++) dy[i] = -s->gr[A->roff + i];
        dpotrs_("L", &m, &nrhs, L, &m, dy, &m, &info, 1);
    }
    w->last.components = w->nobj;
    return 0;
}
