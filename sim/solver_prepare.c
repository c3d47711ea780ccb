/* sim/solver_prepare.c — sim_object_prepare (solver.h): the reduced space of one object's step,
 * derived once from its rows and controls: the observable subspace, the exact Dirichlet null
 * space and its prescribed motion, the reduced mass block's Cholesky factor, the penalty
 * regions', drags' and force fields' pull-backs through B, the co-rotation's point groups, and
 * the step's scratch; with the accessors of what it made (solver_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "sim/dense.h"
#include "sim/lapack.h"
#include "sim/solver_internal.h"

void sim_prep_free(struct SimPrepared *p) {
    if (!p) return;
    if (p->solo) p->solo_release(p->solo);
    free(p->N), free(p->zdot_prev), free(p->zp_rate), free(p->Lm), free(p->pen_S), free(p->pen_s), free(p->pen_n);
    free(p->drag_S), free(p->drag_s), free(p->drag_g), free(p->force_m), free(p->Kel);
    free(p->gidx), free(p->gstart), free(p->Kg), free(p->Rg0), free(p->Rgk), free(p->Gg), free(p->Cg), free(p->Og), free(p->Kelr);
    free(p->Ft), free(p->PT), free(p->W), free(p->K), free(p->up), free(p->Aact), free(p->Sact), free(p->tmp);
    free(p);
}

bool sim_region_contains(const SimRegion *r, const double x[3]) {
    switch (r->kind) {
    case SIM_REGION_ALL: return true;
    case SIM_REGION_BOX:
        for (int i = 0; i < 3; i++)
            if (x[i] < r->lo[i] || x[i] > r->hi[i]) return false;
        return true;
    case SIM_REGION_SPHERE: {
        double d2 = 0;
        for (int i = 0; i < 3; i++) d2 += (x[i] - r->center[i]) * (x[i] - r->center[i]);
        return d2 <= r->radius * r->radius;
    }
    }
    return false;
}

static double *region_pullback(const SimObject *o, const SimRegion *r, double wfn(const SimObject *, int64_t, const void *),
                               const void *ctx, double *S, double *total) {
    /* s = Σ_c f_c b_c and (when S) S = Σ_c f_c b_c b_cᵀ over the cubature points in r */
    int64_t nb = o->nb;
    double *s = calloc((size_t)nb, sizeof(double));
    if (!s) return NULL;
    *total = 0;
    for (int64_t c = 0; c < o->nc; c++) {
        if (r && !sim_region_contains(r, o->Xc + 3 * c)) continue;
        double f = wfn(o, c, ctx);
        if (f == 0) continue;
        const double *b = o->Bc + c * nb;
        *total += f;
        for (int64_t q = 0; q < nb; q++) s[q] += f * b[q];
        if (S) cblas_dsyr(CblasRowMajor, CblasUpper, (int)nb, f, b, 1, S, (int)nb);
    }
    if (S)
        for (int64_t a = 0; a < nb; a++)
            for (int64_t b = 0; b < a; b++) S[a * nb + b] = S[b * nb + a];
    return s;
}

static double w_mass(const SimObject *o, int64_t c, const void *ctx) {
    (void)ctx;
    return o->rho * o->Vc[c];
}
static double w_drag(const SimObject *o, int64_t c, const void *ctx) {
    const SimDrag *d = ctx;
    double r2 = 0;
    for (int i = 0; i < 3; i++) r2 += (o->Xc[3 * c + i] - d->grab[i]) * (o->Xc[3 * c + i] - d->grab[i]);
    return exp(-r2 / (2 * d->radius * d->radius));
}

/* The rows of B at the points (cubature and binding) inside region r; returns their count and,
 * when rows is not NULL, appends them (nb each) and their velocities (3 each). */
static int64_t region_rows(const SimObject *o, const SimDirichlet *d, double *rows, double *vel) {
    int64_t k = 0, nb = o->nb;
    for (int set = 0; set < 2; set++) {
        int64_t n = set ? o->nv : o->nc;
        const double *X = set ? o->Xv : o->Xc, *B = set ? o->Bv : o->Bc;
        for (int64_t p = 0; p < n; p++) {
            if (!sim_region_contains(&d->region, X + 3 * p)) continue;
            if (rows) {
                memcpy(rows + k * nb, B + p * nb, sizeof(double) * (size_t)nb);
                memcpy(vel + 3 * k, d->velocity, sizeof(double) * 3);
            }
            k++;
        }
    }
    return k;
}

/* The observable subspace of sim_object_prepare. The constant handle (affine motion, the last
 * four columns A of a block) is always kept. The learned columns L are taken modulo A in the
 * mass metric, P = [I; −M_AA⁻¹ M_AL], and two Gram matrices compared on them:
 *   S = Pᵀ M_b P                       (mass: the cubature points' view),
 *   V = Pᵀ (M/n_p Σ_p b_p b_pᵀ) P      (the contact points' view, the object's mass M spread
 *                                       evenly over its n_p contact points).
 * A direction y is kept when S sees it (eigenvalue of the Jacobi-scaled S above SIM_OBS_CUT ×
 * the largest: not an exact or roundoff null direction, such as the bones source's Σ w = 1
 * duplicating the constant handle) and when its visibility ratio κ = yᵀVy / yᵀSy, the
 * generalized eigenvalue, is at most SIM_OBS_KAPPA: the mean-square motion of the surface at
 * most that many times the mass-weighted mean square of the interior. Measured on the ten
 * procedural categories at cubature_res 16 (tests/test_sim.c): well-sampled handles have κ ≤
 * ~120, a limb with two or three cubature points 1e4–1e11 (lamp, table, snake, airplane,
 * humanoid, quadruped bones). Such a direction is a part of the mesh the cubature does not
 * resolve: it has no mass and no elastic energy there, so a floor contact on those vertices
 * throws it (the 1e76 J blow-ups); it is cut, and those vertices follow the kept handles.
 * No (nb × ro, orthonormal columns) spans the kept directions and A; NULL when nothing is
 * cut. 0, or -1 (memory). */
#define SIM_OBS_CUT 1e-10
#define SIM_OBS_KAPPA 1e3
static int observable_basis(const SimObject *o, struct SimPrepared *p, double **No, int64_t *ro) {
    int nb = (int)o->nb, L = (int)(4 * o->m), four = 4, info = 0;
    *No = NULL, *ro = nb;
    int64_t np = o->nv ? o->nv : o->nc;
    const double *Bp = o->nv ? o->Bv : o->Bc;
    size_t LL = (size_t)L * L;
    double *X = malloc(sizeof(double) * 4 * (size_t)L), *S = malloc(sizeof(double) * LL), *V = malloc(sizeof(double) * LL);
    double *Q = malloc(sizeof(double) * (size_t)np * L), *ev = malloc(sizeof(double) * (size_t)L);
    double *dinv = malloc(sizeof(double) * (size_t)L), *T = malloc(sizeof(double) * LL), *Z = malloc(sizeof(double) * LL);
    double *kap = malloc(sizeof(double) * (size_t)L), Maa[16];
    double *work = NULL;
    int rc = -1;
    if (!X || !S || !V || !Q || !ev || !dinv || !T || !Z || !kap) goto done;
    rc = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) Maa[4 * i + j] = o->Mb[(size_t)(L + i) * nb + L + j];
    /* X = M_AA⁻¹ M_AL (4 × L; column-major 4 × L is row-major L × 4, column a = row a of X) */
    for (int a = 0; a < L; a++)
        for (int i = 0; i < 4; i++) X[4 * a + i] = o->Mb[(size_t)(L + i) * nb + a];
    dpotrf_("L", &four, Maa, &four, &info, 1);
    if (info) goto done; /* coplanar cubature points: leave the subspace alone */
    dpotrs_("L", &four, &L, Maa, &four, X, &four, &info, 1);
    /* S = M_LL − M_LA X */
    for (int a = 0; a < L; a++)
        for (int b = 0; b < L; b++) {
            double s = o->Mb[(size_t)a * nb + b];
            for (int i = 0; i < 4; i++) s -= o->Mb[(size_t)a * nb + L + i] * X[4 * b + i];
            S[(size_t)a * L + b] = s;
        }
    /* V = M/n_p · Qᵀ Q, Q = B_p,L − B_p,A X (n_p × L) */
    for (int64_t q = 0; q < np; q++)
        for (int a = 0; a < L; a++) {
            double s = Bp[q * nb + a];
            for (int i = 0; i < 4; i++) s -= Bp[q * nb + L + i] * X[4 * a + i];
            Q[q * L + a] = s;
        }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, L, (int)np, o->mass / (double)np, Q, L, 0.0, V, L);
    for (int a = 0; a < L; a++)
        for (int b = 0; b < a; b++) V[(size_t)a * L + b] = V[(size_t)b * L + a];
    /* Jacobi scaling by the learned columns' own mass norms, so the null test is unit free */
    for (int a = 0; a < L; a++) {
        double d = o->Mb[(size_t)a * nb + a];
        dinv[a] = d > 0 ? 1 / sqrt(d) : 0;
    }
    for (int a = 0; a < L; a++)
        for (int b = 0; b < L; b++) {
            T[(size_t)a * L + b] = dinv[a] * S[(size_t)a * L + b] * dinv[b];
            V[(size_t)a * L + b] *= dinv[a] * dinv[b];
        }
    int lwork = -1;
    double wq;
    dsyev_("V", "U", &L, T, &L, ev, &wq, &lwork, &info, 1, 1);
    lwork = (int)wq + 8 * L;
    work = malloc(sizeof(double) * (size_t)lwork);
    if (!work) {
        rc = -1;
        goto done;
    }
    dsyev_("V", "U", &L, T, &L, ev, work, &lwork, &info, 1, 1);
    if (info) goto done;
    /* Z = W_k Λ_k^(-1/2) over the eigenvalues S sees (columns; T's rows are the eigenvectors) */
    int c0 = 0;
    while (c0 < L && !(ev[c0] > SIM_OBS_CUT * ev[L - 1])) c0++;
    int k = L - c0;
    for (int a = 0; a < L; a++)
        for (int j = 0; j < k; j++) Z[(size_t)a * k + j] = T[(size_t)(c0 + j) * L + a] / sqrt(ev[c0 + j]);
    /* κ: eigen of Zᵀ V Z (k × k) */
    double *ZV = malloc(sizeof(double) * (size_t)(k ? k : 1) * L);
    if (!ZV) {
        rc = -1;
        goto done;
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, L, L, 1.0, Z, k, V, L, 0.0, ZV, L);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, k, L, 1.0, ZV, L, Z, k, 0.0, T, k);
    free(ZV);
    if (k) dsyev_("V", "U", &k, T, &k, kap, work, &lwork, &info, 1, 1);
    if (info) goto done;
    int keep = 0;
    while (keep < k && kap[keep] <= SIM_OBS_KAPPA) keep++;
    if (keep == L) goto done; /* nothing cut */
    /* kept learned directions y_j = D⁻¹ Z u_j (L × keep), orthonormalized by their SVD */
    double *Y = V; /* reuse, column-major L × keep */
    for (int j = 0; j < keep; j++)
        for (int a = 0; a < L; a++) {
            double s = 0;
            for (int b = 0; b < k; b++) s += Z[(size_t)a * k + b] * T[(size_t)j * k + b];
            Y[(size_t)j * L + a] = dinv[a] * s;
        }
    int r = keep + 4, one = 1;
    double *N = calloc((size_t)nb * r, sizeof(double));
    if (!N) {
        rc = -1;
        goto done;
    }
    if (keep) {
        double *U = S; /* reuse: column-major L × keep */
        int lw2 = -1;
        dgesvd_("O", "N", &L, &keep, Y, &L, ev, U, &L, NULL, &one, &wq, &lw2, &info, 1, 1);
        if ((int)wq > lwork) {
            free(work);
            lwork = (int)wq;
            work = malloc(sizeof(double) * (size_t)lwork);
            if (!work) {
                free(N);
                rc = -1;
                goto done;
            }
        }
        dgesvd_("O", "N", &L, &keep, Y, &L, ev, U, &L, NULL, &one, work, &lwork, &info, 1, 1);
        if (info) {
            free(N);
            goto done;
        }
        for (int a = 0; a < L; a++) /* jobu "O": Y holds U */
            for (int j = 0; j < keep; j++) N[(size_t)a * r + j] = Y[(size_t)j * L + a];
    }
    for (int i = 0; i < 4; i++) N[(size_t)(L + i) * r + keep + i] = 1;
    *No = N, *ro = r;
    p->obs_kappa = keep < k ? kap[keep] : 0;
done:
    free(X), free(S), free(V), free(Q), free(ev), free(dinv), free(T), free(Z), free(kap), free(work);
    return rc;
}

/* the co-rotation's point groups and storage (SimPrepared.ng); 0, or -1 out of memory */
static int prepare_groups(const SimObject *o, struct SimPrepared *p) {
    int ng = o->rig_ngroups;
    int64_t nb = o->nb, nr = o->ne ? o->ne : o->nc;
    const double *Gall = o->ne ? o->Ge : o->Gc;
    p->gidx = malloc(sizeof(int64_t) * (size_t)(nr + 1)), p->gstart = calloc((size_t)ng + 1, sizeof(int64_t));
    /* calloc: the last tile's padding columns stay 0 */
    p->Kg = calloc((size_t)(ng * NPAIR * KG_TILES(nb * nb) * KG_TILE), sizeof(float));
    p->Rg0 = malloc(sizeof(double) * 9 * (size_t)ng);
    p->Rgk = malloc(sizeof(double) * 9 * (size_t)ng), p->Gg = malloc(sizeof(double) * (size_t)(3 * nr * nb + 1));
    p->Cg = malloc(sizeof(float) * (size_t)(2 * NPAIR * ng * NPAIR));
    p->Og = malloc(sizeof(float) * (size_t)(2 * NPAIR * KG_TILES(nb * nb) * KG_TILE)); /* rows padded to tiles; r ≤ nb */
    if (p->N) {
        p->Kelr = malloc(sizeof(double) * (size_t)(9 * p->r * p->r + 1));
        if (!p->Kelr) return -1;
    }
    if (!p->gidx || !p->gstart || !p->Kg || !p->Rg0 || !p->Rgk || !p->Gg || !p->Cg || !p->Og) return -1;
    /* a counting sort of the rule's points by group; a group index out of range counts as group 0 */
    for (int64_t e = 0; e < nr; e++) {
        int g = o->rig_group[o->ne ? o->eidx[e] : e];
        p->gstart[(g >= 0 && g < ng ? g : 0) + 1]++;
    }
    for (int g = 0; g < ng; g++) p->gstart[g + 1] += p->gstart[g];
    int64_t *fill = calloc((size_t)ng, sizeof(int64_t));
    if (!fill) return -1;
    for (int64_t e = 0; e < nr; e++) {
        int g = o->rig_group[o->ne ? o->eidx[e] : e];
        g = g >= 0 && g < ng ? g : 0;
        int64_t k = p->gstart[g] + fill[g]++;
        p->gidx[k] = e;
        memcpy(p->Gg + 3 * k * nb, Gall + 3 * e * nb, sizeof(double) * 3 * (size_t)nb);
    }
    free(fill);
    if (p->N) { /* the rows in the subspace's coordinates: G N (3 nr × r) */
        double *Gr = malloc(sizeof(double) * (size_t)(3 * nr * p->r + 1));
        if (!Gr) return -1;
        if (nr && p->r)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(3 * nr), (int)p->r, (int)nb, 1.0, p->Gg, (int)nb,
                        p->N, (int)p->r, 0.0, Gr, (int)p->r);
        free(p->Gg), p->Gg = Gr;
    }
    p->ng = ng;
    return 0;
}

int sim_object_prepare(SimObject *o, char *err, size_t errlen) {
    sim_prep_free(o->prep);
    struct SimPrepared *p = o->prep = calloc(1, sizeof *p);
    if (!p) goto oom;
    int64_t nb = o->nb, n = o->n, nc = o->nc;
    /* ---- exact Dirichlet: the null space of the constrained rows C of B (one SVD) ---- */
    int64_t ns = 0;
    for (int d = 0; d < o->ndirichlet; d++) {
        int64_t k = region_rows(o, &o->dirichlet[d], NULL, NULL);
        if (k == 0) {
            base_errf(err, errlen, "fixed region %d holds no cubature or binding point", d);
            return -1;
        }
        if (!o->dirichlet[d].penalty) ns += k;
    }
    /* a rig's exact rows (velocity 0), in the same null space as the fixed regions' */
    int64_t nconst = o->rig_rows ? o->rig_nrows : 0;
    ns += nconst;
    p->ns = ns, p->r = nb;
    p->zp_rate = calloc((size_t)n, sizeof(double));
    p->zdot_prev = malloc(sizeof(double) * (size_t)n);
    if (!p->zp_rate || !p->zdot_prev) goto oom;
    /* ---- the observable subspace (physskin.md §7, column conditioning): directions of z that
     * move no cubature point carry no mass and no elastic energy, yet may move the binding
     * vertices, which the contact planes act on. Such a direction (a handle whose support holds
     * fewer than four non-coplanar cubature points: a thin limb on a coarse cubature grid) makes
     * M_b singular and every Newton system rank deficient; a nearly invisible one (tiny mass)
     * takes huge velocities from a contact impulse. Newton runs in the span No of the
     * eigenvectors of the Jacobi-scaled M_b (unit diagonal, so the cut does not depend on
     * units or the pose) with eigenvalue > obs_cut · the largest; No is nb × ro with
     * orthonormal columns, NULL when nothing is cut. ---- */
    double *No = NULL;
    int64_t ro = nb;
    if (observable_basis(o, p, &No, &ro)) goto oom;
    p->r_obs = ro;
    if (ns) {
        double *C = malloc(sizeof(double) * (size_t)(ns * nb)), *vel = malloc(sizeof(double) * 3 * (size_t)ns);
        double *Cr = No ? malloc(sizeof(double) * (size_t)(ns * (ro ? ro : 1))) : NULL;
        int64_t k = 0;
        if (!C || !vel || (No && !Cr)) {
            free(C), free(vel), free(Cr), free(No);
            goto oom;
        }
        for (int d = 0; d < o->ndirichlet; d++)
            if (!o->dirichlet[d].penalty) k += region_rows(o, &o->dirichlet[d], C + k * nb, vel + 3 * k);
        for (int64_t l = 0; l < nconst; l++, k++) {
            memcpy(C + k * nb, o->rig_rows + l * nb, sizeof(double) * (size_t)nb);
            memset(vel + 3 * k, 0, 3 * sizeof(double));
        }
        if (No) { /* the rows in observable coordinates: C No (ns × ro) */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)ns, (int)ro, (int)nb, 1.0, C, (int)nb, No,
                        (int)ro, 0.0, Cr, (int)ro);
            free(C), C = Cr;
        }
        /* LAPACK sees the row-major C (ns × ro) as the column-major Cᵀ (ro × ns) = U Σ Vᵀ: U's
         * columns past the rank span null(C), V gives the pseudo-inverse C⁺ = U Σ⁻¹ Vᵀ. */
        int M = (int)ro, Nn = (int)ns, kk = M < Nn ? M : Nn, lwork = -1, info = 0;
        double *S = malloc(sizeof(double) * (size_t)(kk ? kk : 1)), *U = malloc(sizeof(double) * (size_t)(ro * ro + 1));
        double *VT = malloc(sizeof(double) * (size_t)(kk ? kk : 1) * (size_t)ns), wq;
        double *zr = calloc((size_t)(3 * ro + 1), sizeof(double));
        if (!S || !U || !VT || !zr) {
            free(C), free(vel), free(S), free(U), free(VT), free(zr), free(No);
            goto oom;
        }
        int rank = 0;
        if (kk) {
            dgesvd_("A", "S", &M, &Nn, C, &M, S, U, &M, VT, &kk, &wq, &lwork, &info, 1, 1);
            lwork = (int)wq;
            double *work = malloc(sizeof(double) * (size_t)lwork);
            if (work) dgesvd_("A", "S", &M, &Nn, C, &M, S, U, &M, VT, &kk, work, &lwork, &info, 1, 1);
            free(work);
            if (!work || info) {
                free(C), free(vel), free(S), free(U), free(VT), free(zr), free(No);
                base_errf(err, errlen, "fixed regions: SVD of the %lld constrained rows failed (info %d)", (long long)ns,
                        info);
                return -1;
            }
            /* rank: singular values above 1e-10 σ_max. Smaller ones would let the pinned points
             * move by that much per unit of y, which the exactness requirement forbids */
            while (rank < kk && S[rank] > 1e-10 * S[0]) rank++;
        }
        int64_t r = ro - rank;
        p->r = r;
        p->N = malloc(sizeof(double) * (size_t)(nb * (r ? r : 1)));
        double *Nn_ = malloc(sizeof(double) * (size_t)(ro * (r ? r : 1)));
        if (!p->N || !Nn_) {
            free(C), free(vel), free(S), free(U), free(VT), free(zr), free(No), free(Nn_);
            goto oom;
        }
        for (int64_t q = 0; q < ro; q++)
            for (int64_t a = 0; a < r; a++) Nn_[q * r + a] = U[(rank + a) * ro + q];
        /* z_p⁽ⁱ⁾ = t · C⁺ v_i: Σ_k u_k (v_kᵀ vel_i) / σ_k */
        for (int i = 0; i < 3; i++)
            for (int kx = 0; kx < rank; kx++) {
                double dot = 0;
                for (int64_t rr = 0; rr < ns; rr++) dot += VT[rr * kk + kx] * vel[3 * rr + i];
                for (int64_t q = 0; q < ro; q++) zr[i * ro + q] += U[kx * ro + q] * dot / S[kx];
            }
        if (No) { /* back to z: N = No Nn (orthonormal columns), z_p = No z_r */
            if (r)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)r, (int)ro, 1.0, No, (int)ro, Nn_,
                            (int)r, 0.0, p->N, (int)r);
            for (int i = 0; i < 3; i++)
                cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)ro, 1.0, No, (int)ro, zr + i * ro, 1, 0.0,
                            p->zp_rate + i * nb, 1);
        } else {
            memcpy(p->N, Nn_, sizeof(double) * (size_t)(nb * r));
            memcpy(p->zp_rate, zr, sizeof(double) * (size_t)n);
        }
        free(C), free(vel), free(S), free(U), free(VT), free(zr), free(No), free(Nn_);
    } else if (No) {
        p->N = No, p->r = ro;
    }
    /* the reduced mass block Nᵀ M_b N, factored for the stop bound gᵀ M_r⁻¹ g ≥ gᵀ H⁻¹ g */
    int64_t r = p->r;
    p->Lm = malloc(sizeof(double) * (size_t)((r ? r : 1) * (r ? r : 1)));
    double *Mr = malloc(sizeof(double) * (size_t)((r ? r : 1) * (r ? r : 1)));
    double *tmp = malloc(sizeof(double) * (size_t)(nb * (r ? r : 1)));
    if (!p->Lm || !Mr || !tmp) {
        free(Mr), free(tmp);
        goto oom;
    }
    if (p->N && r) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)r, (int)nb, 1.0, o->Mb, (int)nb, p->N,
                    (int)r, 0.0, tmp, (int)r);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r, (int)r, (int)nb, 1.0, p->N, (int)r, tmp, (int)r,
                    0.0, Mr, (int)r);
    } else if (!p->N)
        memcpy(Mr, o->Mb, sizeof(double) * (size_t)(nb * nb));
    if (r && sim_chol_shifted(p->Lm, Mr, (int)r, (int)r, 1e-12, 8) < 0) {
        free(Mr), free(tmp);
        base_errf(err, errlen, "sim: the reduced mass matrix is not positive definite (degenerate weights?)");
        return -1;
    }
    free(Mr), free(tmp);
    /* ---- penalty Dirichlet, drags, force fields ---- */
    int nd = o->ndirichlet ? o->ndirichlet : 1, ng = o->ndrags ? o->ndrags : 1, nf = o->nforces ? o->nforces : 1;
    p->pen_S = calloc((size_t)(nd * nb * nb), sizeof(double));
    p->pen_s = calloc((size_t)(nd * nb), sizeof(double));
    p->pen_n = calloc((size_t)nd, sizeof(double));
    p->drag_S = calloc((size_t)(ng * nb * nb), sizeof(double));
    p->drag_s = calloc((size_t)(ng * nb), sizeof(double));
    p->drag_g = calloc((size_t)ng, sizeof(double));
    p->force_m = calloc((size_t)(nf * nb), sizeof(double));
    if (!p->pen_S || !p->pen_s || !p->pen_n || !p->drag_S || !p->drag_s || !p->drag_g || !p->force_m) goto oom;
    for (int d = 0; d < o->ndirichlet; d++) {
        if (!o->dirichlet[d].penalty) continue;
        int64_t k = region_rows(o, &o->dirichlet[d], NULL, NULL);
        double *rows = malloc(sizeof(double) * (size_t)(k * nb)), *vel = malloc(sizeof(double) * 3 * (size_t)k);
        if (!rows || !vel) {
            free(rows), free(vel);
            goto oom;
        }
        region_rows(o, &o->dirichlet[d], rows, vel);
        double *S = p->pen_S + d * nb * nb;
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)nb, (int)k, 1.0, rows, (int)nb, 0.0, S, (int)nb);
        for (int64_t a = 0; a < nb; a++)
            for (int64_t b = 0; b < a; b++) S[a * nb + b] = S[b * nb + a];
        for (int64_t row = 0; row < k; row++)
            for (int64_t q = 0; q < nb; q++) p->pen_s[d * nb + q] += rows[row * nb + q];
        p->pen_n[d] = (double)k;
        free(rows), free(vel);
    }
    for (int d = 0; d < o->ndrags; d++) {
        if (!(o->drags[d].radius > 0)) {
            base_errf(err, errlen, "drag %d: radius must be > 0", d);
            return -1;
        }
        double *s = region_pullback(o, NULL, w_drag, &o->drags[d], p->drag_S + d * nb * nb, &p->drag_g[d]);
        if (!s) goto oom;
        memcpy(p->drag_s + d * nb, s, sizeof(double) * (size_t)nb);
        free(s);
    }
    for (int f = 0; f < o->nforces; f++) {
        double tot;
        double *s = region_pullback(o, &o->forces[f].region, w_mass, NULL, NULL, &tot);
        if (!s) goto oom;
        memcpy(p->force_m + f * nb, s, sizeof(double) * (size_t)nb);
        free(s);
    }
    /* ---- contact points and scratch ---- */
    p->np = o->nv ? o->nv : o->nc;
    p->Xp = o->nv ? o->Xv : o->Xc;
    p->Bp = o->nv ? o->Bv : o->Bc;
    int64_t chunk = nc < CHUNK ? nc : CHUNK;
    p->Ft = malloc(sizeof(double) * (size_t)(9 * nc));
    p->PT = malloc(sizeof(double) * (size_t)(9 * nc));
    p->W = malloc(sizeof(double) * (size_t)(3 * chunk * NPAIR * nb));
    p->K = malloc(sizeof(double) * (size_t)(NPAIR * nb * nb));
    p->Kel = malloc(sizeof(double) * (size_t)(n * n));
    p->up = malloc(sizeof(double) * (size_t)(3 * p->np));
    p->Aact = malloc(sizeof(double) * (size_t)(p->np * nb));
    p->Sact = malloc(sizeof(double) * (size_t)(nb * nb));
    p->tmp = malloc(sizeof(double) * (size_t)(n * n + 1));
    if (!p->Ft || !p->PT || !p->W || !p->K || !p->Kel || !p->up ||
        !p->Aact || !p->Sact || !p->tmp)
        goto oom;
    if (o->rig_ngroups > 0 && o->rig_group && prepare_groups(o, p)) goto oom;
    return 0;
oom:
    sim_prep_free(o->prep), o->prep = NULL;
    base_errf(err, errlen, "sim: out of memory preparing the controls");
    return -1;
}

/* ---- what prepare made, for the callers: the constraint counts, the exact-Dirichlet subspace
 * (world.c stacks the objects' subspaces), the world of one that sim_object_step keeps -------- */

void sim_object_constraint_info(const SimObject *o, int64_t *rows, int64_t *free_dims) {
    *rows = o->prep ? o->prep->ns : 0;
    *free_dims = o->prep ? 3 * o->prep->r : o->n;
}

int64_t sim_object_subspace(SimObject *o, const double **N, const double **zp_rate, const double **Lm) {
    if (!o->prep && sim_object_prepare(o, NULL, 0)) return -1;
    *N = o->prep->N, *zp_rate = o->prep->zp_rate, *Lm = o->prep->Lm;
    return o->prep->r;
}

void *sim_object_solo(const SimObject *o) { return o->prep ? o->prep->solo : NULL; }

void sim_object_set_solo(SimObject *o, void *solo, void (*release)(void *)) {
    o->prep->solo = solo, o->prep->solo_release = release;
}
