/* sim/solver.c — one object of reduced implicit Euler (physskin.md §7): its subspace, controls and
 * step objective term by term; see solver.h for the coordinates and the energy. The Newton step
 * itself is world.c's (sim_object_step: a world of one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "sim/dense.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/solver.h"

#define NPAIR 6
/* the (i, i') blocks of the elastic Hessian computed; the other three are their transposes */
static const int PAIR_I[NPAIR] = {0, 0, 0, 1, 1, 2}, PAIR_J[NPAIR] = {0, 1, 2, 1, 2, 2};
/* Kg (SimPrepared) by column tiles: element (row, column j) of its rows × nb² at KG_AT (nb = 4(m + 1),
 * so nb² fills its tiles; a last partial tile would be padded with zeros) */
#define KG_TILE 16
#define KG_TILES(ncol) (((ncol) + KG_TILE - 1) / KG_TILE)
#define KG_AT(row, j, rows) (((j) / KG_TILE * (rows) + (row)) * KG_TILE + (j) % KG_TILE)
/* the pairs with the three diagonal blocks first (the co-rotation's storage, corotate_kel) */
static const int PORD[NPAIR] = {0, 3, 5, 1, 2, 4};
/* points per blocked Hessian product: W is 3·CHUNK × 6nb doubles (2.5 MB at m = 16) */
#define CHUNK 512

struct SimPrepared {
    /* exact Dirichlet: z⁽ⁱ⁾ = t · zp_rate⁽ⁱ⁾ + N y⁽ⁱ⁾ */
    int64_t ns;        /* constrained rows (points) */
    int64_t r;         /* null-space dimension (nb when unconstrained) */
    int64_t r_obs;     /* observable dimension per block (nb unless directions were cut) */
    double obs_kappa;  /* the smallest visibility ratio cut (0: none) */
    double *N;         /* nb × r, orthonormal columns; NULL when unconstrained */
    double *zp_rate;   /* 3 × nb */
    double *Lm;        /* Cholesky of the (reduced) mass block, r × r, for the stop bound */
    /* penalty Dirichlet, drags, force fields: pull-backs through B */
    double *pen_S, *pen_s, *pen_n;  /* per Dirichlet: nb × nb, nb, count */
    double *drag_S, *drag_s, *drag_g;
    double *force_m;                /* per field: Σ ρ V b over the region */
    /* contact points */
    int64_t np;
    const double *Xp, *Bp;
    /* the lagged elastic Hessian (SimNewtonOptions.elastic_lag): Σ_c V_c (dF/dz)ᵀ Ĥ_c (dF/dz), n × n,
     * unscaled; valid once assembled, stale when the last iteration that used it contracted poorly */
    double *Kel;
    bool kel_valid;
    /* its co-rotation under a rig (SimObject.rig_group; 0 groups: off): the integration points
     * by group (gidx, starting at gstart), the groups' unscaled elastic Hessians of the last
     * assembly (Kg: one nb × nb pair block per row, row k·ng + g for group g and pair PORD[k],
     * the diagonal blocks' rows first, stored by tiles of KG_TILE columns: KG_AT), each group's
     * rotation then (Rg0) and the rotations Kel was last composed for (Rgk), scratch (Gg: the
     * rule's G rows in group order; Cg, Og: the composition's coefficients and output) */
    int ng;
    int64_t *gidx, *gstart;
    double *Rg0, *Rgk, *Gg;
    /* the rig_F (pointer and SimObject.rig_F_version) Rgk was last computed from: another
     * iteration of the same step finds Kel composed for it already */
    const double *rgk_F;
    uint64_t rgk_version;
    bool rgk_valid;
    /* with a subspace N (p->N), the groups' blocks are kept reduced, Nᵀ K_g(pair) N (r × r: the
     * turn Q ⊗ I commutes with I ⊗ N, so this is exact and the turn reads (r/nb)² of the numbers),
     * and the turn's result is the reduced elastic Hessian Kelr (3r × 3r, unscaled), which
     * lagged_hessian then leaves out of H for the caller to add after its reduction (kelr_out).
     * Gg then holds the G rows times N (3 × r per point), so a fresh assembly is reduced too. */
    double *Kelr;
    bool kelr_out;
    float *Kg, *Cg, *Og; /* single precision: the composition reads ng·NPAIR·nb² numbers each step, and
                            the lagged Hessian only steers the direction (a 1e-7 error in it is far
                            below the lag's own) */
    /* sim_object_step's world of one (world.c), released with what it points into */
    void *solo;
    void (*solo_release)(void *);
    /* scratch */
    double *Ft, *PT, *W, *K, *up, *Aact, *Sact, *tmp;
    /* the start's memory (sim_object_predict): ż at the last prediction and that step's dt */
    double *zdot_prev, dt_prev;
    bool have_zdot_prev;
};

static void prep_free(struct SimPrepared *p) {
    if (!p) return;
    if (p->solo) p->solo_release(p->solo);
    free(p->N), free(p->zdot_prev), free(p->zp_rate), free(p->Lm), free(p->pen_S), free(p->pen_s), free(p->pen_n);
    free(p->drag_S), free(p->drag_s), free(p->drag_g), free(p->force_m), free(p->Kel);
    free(p->gidx), free(p->gstart), free(p->Kg), free(p->Rg0), free(p->Rgk), free(p->Gg), free(p->Cg), free(p->Og), free(p->Kelr);
    free(p->Ft), free(p->PT), free(p->W), free(p->K), free(p->up), free(p->Aact), free(p->Sact), free(p->tmp);
    free(p);
}

void sim_newton_defaults(SimNewtonOptions *o) {
    o->max_iters = 50; /* solver.h says why these */
    o->tol = 1e-10;
    o->armijo = 1e-4;
    o->max_backtracks = 30;
    o->max_hessians = 50;
    o->reuse_ratio = 0;
    o->elastic_lag = 0.5;
}

SimPose sim_pose_identity(void) {
    SimPose p = {.scale = 1, .R = {1, 0, 0, 0, 1, 0, 0, 0, 1}};
    return p;
}

void sim_pose_euler(SimPose *p, const double deg[3]) {
    double a = deg[0] * M_PI / 180, b = deg[1] * M_PI / 180, c = deg[2] * M_PI / 180;
    double Rx[9] = {1, 0, 0, 0, cos(a), -sin(a), 0, sin(a), cos(a)};
    double Ry[9] = {cos(b), 0, sin(b), 0, 1, 0, -sin(b), 0, cos(b)};
    double Rz[9] = {cos(c), -sin(c), 0, sin(c), cos(c), 0, 0, 0, 1};
    double T[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            T[3 * i + j] = 0;
            for (int k = 0; k < 3; k++) T[3 * i + j] += Ry[3 * i + k] * Rx[3 * k + j];
        }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            p->R[3 * i + j] = 0;
            for (int k = 0; k < 3; k++) p->R[3 * i + j] += Rz[3 * i + k] * T[3 * k + j];
        }
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

/* ---- construction ----------------------------------------------------------------------------- */

/* b[4k+l] = w_k X̃_l (the constant handle k = m has w = 1) */
static void fill_b(int64_t m, const double *w, const double X[3], double *b) {
    for (int64_t k = 0; k <= m; k++) {
        double wk = k < m ? w[k] : 1.0;
        for (int l = 0; l < 3; l++) b[4 * k + l] = wk * X[l];
        b[4 * k + 3] = wk;
    }
}

/* M_b = Σ_c ρ V_c b_c b_cᵀ = Sᵀ S with rows √(ρV_c) b_c (lumped masses at the cubature points)
 * and mvec = Σ_c ρ V_c b_c, from the current rows Bc; sq is nc × nb scratch */
static void mass_matrices(SimObject *o, double *sq) {
    int64_t nb = o->nb, nc = o->nc;
    memset(o->mvec, 0, sizeof(double) * (size_t)nb);
    for (int64_t c = 0; c < nc; c++) {
        double sw = sqrt(o->rho * o->Vc[c]);
        for (int64_t q = 0; q < nb; q++) {
            sq[c * nb + q] = sw * o->Bc[c * nb + q];
            o->mvec[q] += o->rho * o->Vc[c] * o->Bc[c * nb + q];
        }
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)nb, (int)nc, 1.0, sq, (int)nb, 0.0, o->Mb, (int)nb);
    for (int64_t a = 0; a < nb; a++)
        for (int64_t b = 0; b < a; b++) o->Mb[a * nb + b] = o->Mb[b * nb + a];
}

/* after the rows Bc, Gc (and Bv) were changed in place: the optimized cubature's copies Ge and the
 * mass matrices follow, and what prepare derived is dropped; sq is nc × nb scratch */
static void rows_changed(SimObject *o, double *sq) {
    int64_t nb = o->nb;
    for (int64_t e = 0; e < o->ne; e++) memcpy(o->Ge + 3 * e * nb, o->Gc + 3 * o->eidx[e] * nb, sizeof(double) * 3 * (size_t)nb);
    mass_matrices(o, sq);
    prep_free(o->prep), o->prep = NULL;
}

void sim_object_free(SimObject *o) {
    free(o->Xc), free(o->Vc), free(o->Bc), free(o->Gc), free(o->Xv), free(o->Bv), free(o->faces);
    free(o->Mb), free(o->mvec), free(o->z), free(o->zdot);
    free(o->eidx), free(o->ew), free(o->Ge);
    free(o->planes), free(o->dirichlet), free(o->drags), free(o->forces);
    prep_free(o->prep);
    memset(o, 0, sizeof *o);
}

int sim_object_init(SimObject *o, const SimSkinning *sk, const SimMaterial *mat, const SimPose *pose, char *err,
                    size_t errlen) {
    memset(o, 0, sizeof *o);
    if (sim_skinning_validate(sk, "skinning", err, errlen)) return -1;
    if (!(mat->E > 0) || !(mat->nu > -1 && mat->nu < 0.5) || !(mat->rho > 0)) {
        base_errf(err, errlen, "material: need E > 0, -1 < nu < 0.5, rho > 0 (got E = %g, nu = %g, rho = %g)", mat->E,
                mat->nu, mat->rho);
        return -1;
    }
    if (!(pose->scale > 0)) {
        base_errf(err, errlen, "pose: scale must be > 0 (got %g)", pose->scale);
        return -1;
    }
    int64_t m = sk->m, nb = 4 * (m + 1), nc = sk->nc, nv = sk->nv;
    o->m = m, o->nb = nb, o->n = 3 * nb, o->nc = nc, o->nv = nv, o->nf = sk->nf;
    sim_lame(mat, &o->mu, &o->lam);
    o->rho = mat->rho;
    sim_newton_defaults(&o->newton);
    o->Xc = malloc(sizeof(double) * 3 * (size_t)nc);
    o->Vc = malloc(sizeof(double) * (size_t)nc);
    o->Bc = malloc(sizeof(double) * (size_t)(nc * nb));
    o->Gc = malloc(sizeof(double) * (size_t)(3 * nc * nb));
    o->Xv = malloc(sizeof(double) * 3 * (size_t)(nv + 1));
    o->Bv = malloc(sizeof(double) * (size_t)((nv + 1) * nb));
    o->faces = malloc(sizeof(int32_t) * 3 * (size_t)(sk->nf + 1));
    o->Mb = calloc((size_t)(nb * nb), sizeof(double));
    o->mvec = calloc((size_t)nb, sizeof(double));
    o->z = calloc((size_t)o->n, sizeof(double));
    o->zdot = calloc((size_t)o->n, sizeof(double));
    double *sq = malloc(sizeof(double) * (size_t)(nc * nb));
    if (!o->Xc || !o->Vc || !o->Bc || !o->Gc || !o->Xv || !o->Bv || !o->faces || !o->Mb || !o->mvec || !o->z ||
        !o->zdot || !sq) {
        free(sq);
        sim_object_free(o);
        base_errf(err, errlen, "sim: out of memory for %lld cubature points and %lld handles", (long long)nc,
                (long long)m);
        return -1;
    }
    const double s = pose->scale, *R = pose->R;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double *dw = malloc(sizeof(double) * 3 * (size_t)m);
    if (!dw) {
        free(sq), sim_object_free(o);
        base_errf(err, errlen, "sim: out of memory");
        return -1;
    }
    for (int64_t c = 0; c < nc; c++) {
        double *X = o->Xc + 3 * c;
        for (int i = 0; i < 3; i++) {
            X[i] = pose->translate[i];
            for (int j = 0; j < 3; j++) X[i] += s * R[3 * i + j] * sk->cub_x[3 * c + j];
            lo[i] = fmin(lo[i], X[i]), hi[i] = fmax(hi[i], X[i]);
        }
        o->Vc[c] = s * s * s * sk->cub_vol[c];
        /* world gradients: w(x_world) = w(x_obj), so ∇_world w = R ∇_obj w / s */
        for (int64_t k = 0; k < m; k++)
            for (int i = 0; i < 3; i++) {
                dw[3 * k + i] = 0;
                for (int j = 0; j < 3; j++) dw[3 * k + i] += R[3 * i + j] * sk->cub_dw[(c * m + k) * 3 + j] / s;
            }
        const double *w = sk->cub_w + c * m;
        fill_b(m, w, X, o->Bc + c * nb);
        /* G_j[4k+l] = w_k δ_jl [l<3] + ∂_j w_k X̃_l (physskin.md §1, F = I + Σ_k w_k A_k + (T_k X̃) ⊗ ∇w_k) */
        for (int j = 0; j < 3; j++) {
            double *G = o->Gc + (3 * c + j) * nb;
            for (int64_t k = 0; k <= m; k++) {
                double wk = k < m ? w[k] : 1.0, gk = k < m ? dw[3 * k + j] : 0.0;
                for (int l = 0; l < 3; l++) G[4 * k + l] = (j == l ? wk : 0) + gk * X[l];
                G[4 * k + 3] = gk;
            }
        }
        o->mass += mat->rho * o->Vc[c];
    }
    free(dw);
    mass_matrices(o, sq);
    free(sq);
    for (int64_t v = 0; v < nv; v++) {
        double *X = o->Xv + 3 * v;
        for (int i = 0; i < 3; i++) {
            X[i] = pose->translate[i];
            for (int j = 0; j < 3; j++) X[i] += s * R[3 * i + j] * sk->vert_x[3 * v + j];
        }
        fill_b(m, sk->vert_w + v * m, X, o->Bv + v * nb);
    }
    if (sk->nf) memcpy(o->faces, sk->faces, sizeof(int32_t) * 3 * (size_t)sk->nf);
    o->diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                   (hi[2] - lo[2]) * (hi[2] - lo[2]));
    if (!(o->diag > 0)) o->diag = 1;
    if (!(o->mass > 0)) {
        base_errf(err, errlen, "skinning: the cubature volumes sum to zero (no mass)");
        sim_object_free(o);
        return -1;
    }
    return 0;
}

int sim_object_set_cubature(SimObject *o, int64_t k, const int64_t *idx, const double *w, char *err, size_t errlen) {
    if (k < 0 || k > o->nc) {
        base_errf(err, errlen, "cubature: %lld points asked of %lld", (long long)k, (long long)o->nc);
        return -1;
    }
    for (int64_t e = 0; e < k; e++)
        if (idx[e] < 0 || idx[e] >= o->nc || !(w[e] >= 0) || !isfinite(w[e])) {
            base_errf(err, errlen, "cubature: point %lld (index %lld, weight %g) out of range or negative", (long long)e,
                    (long long)idx[e], w[e]);
            return -1;
        }
    free(o->eidx), free(o->ew), free(o->Ge);
    o->eidx = NULL, o->ew = o->Ge = NULL, o->ne = 0;
    if (!k) return 0;
    int64_t nb = o->nb;
    o->eidx = malloc(sizeof(int64_t) * (size_t)k);
    o->ew = malloc(sizeof(double) * (size_t)k);
    o->Ge = malloc(sizeof(double) * (size_t)(3 * k * nb));
    if (!o->eidx || !o->ew || !o->Ge) {
        free(o->eidx), free(o->ew), free(o->Ge);
        o->eidx = NULL, o->ew = o->Ge = NULL;
        base_errf(err, errlen, "sim: out of memory");
        return -1;
    }
    memcpy(o->eidx, idx, sizeof(int64_t) * (size_t)k);
    memcpy(o->ew, w, sizeof(double) * (size_t)k);
    /* the chosen rows packed contiguously, so the assembly's dgemm reads them as one matrix */
    for (int64_t e = 0; e < k; e++) memcpy(o->Ge + 3 * e * nb, o->Gc + 3 * idx[e] * nb, sizeof(double) * (size_t)(3 * nb));
    o->ne = k;
    return 0;
}

#define ADD_CONTROL(fn, T, arr, cnt)                                                                   \
    int fn(SimObject *o, const T *x, char *err, size_t errlen) {                                       \
        T *a = realloc(o->arr, sizeof(T) * (size_t)(o->cnt + 1));                                      \
        if (!a) {                                                                                      \
            base_errf(err, errlen, "sim: out of memory");                                                \
            return -1;                                                                                 \
        }                                                                                              \
        o->arr = a;                                                                                    \
        o->arr[o->cnt++] = *x;                                                                         \
        prep_free(o->prep), o->prep = NULL;                                                            \
        return 0;                                                                                      \
    }
static ADD_CONTROL(add_dirichlet_entry, SimDirichlet, dirichlet, ndirichlet)

/* ---- fixed regions' falloff (solver.h: SimDirichlet.falloff) ----------------------------------- */

/* distance from x to the region (0 inside) and its gradient (0 inside) */
static double region_distance(const SimRegion *r, const double x[3], double grad[3]) {
    grad[0] = grad[1] = grad[2] = 0;
    double d = 0;
    if (r->kind == SIM_REGION_BOX) {
        double v[3];
        for (int i = 0; i < 3; i++) v[i] = x[i] < r->lo[i] ? x[i] - r->lo[i] : x[i] > r->hi[i] ? x[i] - r->hi[i] : 0;
        d = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        if (d > 0)
            for (int i = 0; i < 3; i++) grad[i] = v[i] / d;
    } else if (r->kind == SIM_REGION_SPHERE) {
        double v[3] = {x[0] - r->center[0], x[1] - r->center[1], x[2] - r->center[2]};
        double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        if (l > r->radius) {
            d = l - r->radius;
            for (int i = 0; i < 3; i++) grad[i] = v[i] / l;
        }
    }
    return d;
}

static bool has_falloff(const SimDirichlet *d) {
    return d->falloff > 0 && !d->penalty && d->velocity[0] == 0 && d->velocity[1] == 0 && d->velocity[2] == 0;
}

/* one region's factor f = 1 − (1 − s)², s = min(dist / falloff, 1), and ∇f */
static double falloff_factor(const SimDirichlet *d, const double X[3], double df[3]) {
    double g[3], s = region_distance(&d->region, X, g) / d->falloff;
    if (s >= 1) {
        df[0] = df[1] = df[2] = 0;
        return 1;
    }
    for (int i = 0; i < 3; i++) df[i] = 2 * (1 - s) / d->falloff * g[i];
    return s * (2 - s);
}

double sim_object_falloff(const SimObject *o, const double X[3], double dphi[3]) {
    double phi = 1;
    dphi[0] = dphi[1] = dphi[2] = 0;
    for (int k = 0; k < o->ndirichlet; k++) {
        if (!has_falloff(&o->dirichlet[k])) continue;
        double df[3], f = falloff_factor(&o->dirichlet[k], X, df);
        for (int i = 0; i < 3; i++) dphi[i] = dphi[i] * f + phi * df[i];
        phi *= f;
    }
    return phi;
}

void sim_falloff_rows(int64_t m, int64_t nb, double phi, const double dphi[3], double *b, double *G) {
    int64_t nl = 4 * m; /* the learned handles' entries; the constant handle's stay */
    if (G)
        for (int j = 0; j < 3; j++)
            for (int64_t q = 0; q < nl; q++) G[j * nb + q] = phi * G[j * nb + q] + dphi[j] * b[q];
    for (int64_t q = 0; q < nl; q++) b[q] *= phi;
}

int sim_object_add_dirichlet(SimObject *o, const SimDirichlet *d, char *err, size_t errlen) {
    if (!(d->falloff >= 0)) {
        base_errf(err, errlen, "fixed region: falloff must be >= 0 (got %g)", d->falloff);
        return -1;
    }
    double *sq = has_falloff(d) ? malloc(sizeof(double) * (size_t)(o->nc * o->nb)) : NULL;
    if (has_falloff(d) && !sq) {
        base_errf(err, errlen, "sim: out of memory");
        return -1;
    }
    if (add_dirichlet_entry(o, d, err, errlen)) {
        free(sq);
        return -1;
    }
    if (!sq) return 0;
    /* the learned handles' rows times this region's factor (product rule for G), everywhere */
    int64_t nb = o->nb;
    for (int64_t c = 0; c < o->nc; c++) {
        double df[3], f = falloff_factor(d, o->Xc + 3 * c, df);
        sim_falloff_rows(o->m, nb, f, df, o->Bc + c * nb, o->Gc + 3 * c * nb);
    }
    for (int64_t v = 0; v < o->nv; v++) {
        double df[3], f = falloff_factor(d, o->Xv + 3 * v, df);
        sim_falloff_rows(o->m, nb, f, df, o->Bv + v * nb, NULL);
    }
    rows_changed(o, sq);
    free(sq);
    return 0;
}

int sim_object_rows_changed(SimObject *o) {
    double *sq = malloc(sizeof(double) * (size_t)(o->nc * o->nb));
    if (!sq) return -1;
    rows_changed(o, sq);
    free(sq);
    return 0;
}
ADD_CONTROL(sim_object_add_drag, SimDrag, drags, ndrags)
ADD_CONTROL(sim_object_add_force, SimForceField, forces, nforces)

int sim_object_add_plane(SimObject *o, const SimPlane *p, char *err, size_t errlen) {
    double l = sqrt(p->normal[0] * p->normal[0] + p->normal[1] * p->normal[1] + p->normal[2] * p->normal[2]);
    if (!(l > 0) || !(p->stiffness >= 0)) {
        base_errf(err, errlen, "plane: the normal must be nonzero and the stiffness ≥ 0");
        return -1;
    }
    SimPlane *a = realloc(o->planes, sizeof(SimPlane) * (size_t)(o->nplanes + 1));
    if (!a) {
        base_errf(err, errlen, "sim: out of memory");
        return -1;
    }
    o->planes = a;
    SimPlane q = *p;
    for (int i = 0; i < 3; i++) q.normal[i] /= l;
    q.offset = p->offset / l; /* n·x ≥ h ⇔ (n/l)·x ≥ h/l */
    o->planes[o->nplanes++] = q;
    prep_free(o->prep), o->prep = NULL;
    return 0;
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
    prep_free(o->prep);
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
    prep_free(o->prep), o->prep = NULL;
    base_errf(err, errlen, "sim: out of memory preparing the controls");
    return -1;
}

void sim_object_constraint_info(const SimObject *o, int64_t *rows, int64_t *free_dims) {
    *rows = o->prep ? o->prep->ns : 0;
    *free_dims = o->prep ? 3 * o->prep->r : o->n;
}

/* ---- energy, gradient, Hessian ------------------------------------------------------------------ */

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
 * elastic()'s, the points summed in group order. With a subspace N all of it in N's coordinates
 * (Gg holds G N): Kg's blocks Nᵀ K_g N and their sum into p->Kelr (3r × 3r) instead. */
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

/* Elastic part, scaled: returns Σ_c V_c Ψ(F_c(z)) (unscaled) and adds scale·∇ to g and
 * scale·(PSD-projected Hessian) to H (n × n) when they are given. */
static double elastic(const SimObject *o, struct SimPrepared *p, const double *z, double scale, double *g, double *H,
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

static void drag_offset(const SimDrag *d, double t, double off[3]) {
    double s = d->t1 > d->t0 ? (t - d->t0) / (d->t1 - d->t0) : (t >= d->t1);
    s = s < 0 ? 0 : s > 1 ? 1 : s;
    for (int i = 0; i < 3; i++) off[i] = s * (d->target[i] - d->grab[i]);
}

/* ---- the energy terms (IPC habit): each adds its value at z, unscaled, to *E, and scale × its
 * gradient and Hessian to g (n) and H (n × n) when they are given. Adding into a running sum
 * keeps the objective's floating-point order; sim_object_term evaluates one alone (the tests'
 * derivative checks). ---- */

typedef struct {
    const double *ztil; /* the inertial prediction (the inertia term) */
    double t, scale;    /* time (the controls' schedules); the factor on g and H */
    int *nproj;         /* the elastic term: Hessians projected (may be NULL) */
} TermAt;

/* inertia: ½ Σ_i (z⁽ⁱ⁾ − z̃⁽ⁱ⁾)ᵀ M_b (z⁽ⁱ⁾ − z̃⁽ⁱ⁾) */
static void term_inertia(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                         double *Eacc, double *g, double *H) {
    int64_t nb = o->nb, n = o->n;
    double scale = at->scale, E = *Eacc;
    double *d = p->tmp + n, *Md = p->tmp + n + nb; /* δ⁽ⁱ⁾ = z⁽ⁱ⁾ − z̃⁽ⁱ⁾, M δ⁽ⁱ⁾ */
    for (int i = 0; i < 3; i++) {
        for (int64_t q = 0; q < nb; q++) d[q] = z[i * nb + q] - at->ztil[i * nb + q];
        cblas_dsymv(CblasRowMajor, CblasUpper, (int)nb, 1.0, o->Mb, (int)nb, d, 1, 0.0, Md, 1);
        E += 0.5 * cblas_ddot((int)nb, d, 1, Md, 1);
        if (g)
            for (int64_t q = 0; q < nb; q++) g[i * nb + q] += scale * Md[q];
        if (H)
            for (int64_t a = 0; a < nb; a++)
                for (int64_t b = 0; b < nb; b++) H[(i * nb + a) * n + i * nb + b] += scale * o->Mb[a * nb + b];
    }
    *Eacc = E;
}

/* elastic: Σ_c V_c Ψ(F_c(z)) (the gradient and the PSD-projected Hessian: elastic above) */
static void term_elastic(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                         double *Eacc, double *g, double *H) {
    *Eacc += elastic(o, p, z, at->scale, g, H, at->nproj);
}

/* gravity and force fields: linear, −Σ ρV a·u */
static void term_gravity(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                         double *Eacc, double *g, double *H) {
    int64_t nb = o->nb, n = o->n;
    double t = at->t, scale = at->scale, E = *Eacc;
    (void)H, (void)n;
    for (int i = 0; i < 3; i++) {
        const double *zi = z + i * nb;
        double e = -o->gravity[i] * cblas_ddot((int)nb, o->mvec, 1, zi, 1);
        if (g) cblas_daxpy((int)nb, -scale * o->gravity[i], o->mvec, 1, g + i * nb, 1);
        for (int f = 0; f < o->nforces; f++) {
            const SimForceField *ff = &o->forces[f];
            if (t < ff->t0 || t >= ff->t1 || ff->accel[i] == 0) continue;
            e -= ff->accel[i] * cblas_ddot((int)nb, p->force_m + f * nb, 1, zi, 1);
            if (g) cblas_daxpy((int)nb, -scale * ff->accel[i], p->force_m + f * nb, 1, g + i * nb, 1);
        }
        E += e;
    }
    *Eacc = E;
}

/* drags: ½ k Σ g_c ‖u_c − d(t)‖² */
static void term_drag(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                      double *Eacc, double *g, double *H) {
    int64_t nb = o->nb, n = o->n;
    double t = at->t, scale = at->scale, E = *Eacc;
    /* drags: ½ k Σ g_c ‖u_c − d‖² = ½ k Σ_i (zᵢᵀ S zᵢ − 2 dᵢ sᵀzᵢ + dᵢ² Σg) */
    for (int d = 0; d < o->ndrags; d++) {
        const SimDrag *dr = &o->drags[d];
        if (t >= dr->t_release) continue;
        double off[3];
        drag_offset(dr, t, off);
        const double *S = p->drag_S + d * nb * nb, *s = p->drag_s + d * nb;
        for (int i = 0; i < 3; i++) {
            const double *zi = z + i * nb;
            cblas_dsymv(CblasRowMajor, CblasUpper, (int)nb, 1.0, S, (int)nb, zi, 1, 0.0, p->tmp, 1);
            E += 0.5 * dr->stiffness *
                 (cblas_ddot((int)nb, zi, 1, p->tmp, 1) - 2 * off[i] * cblas_ddot((int)nb, s, 1, zi, 1) +
                  off[i] * off[i] * p->drag_g[d]);
            if (g)
                for (int64_t q = 0; q < nb; q++) g[i * nb + q] += scale * dr->stiffness * (p->tmp[q] - off[i] * s[q]);
            if (H)
                for (int64_t a = 0; a < nb; a++)
                    for (int64_t b = 0; b < nb; b++) H[(i * nb + a) * n + i * nb + b] += scale * dr->stiffness * S[a * nb + b];
        }
    }
    *Eacc = E;
}

/* penalty Dirichlet: k Σ_p ‖u_p − ū‖², ū = v t */
static void term_dirichlet(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                           double *Eacc, double *g, double *H) {
    int64_t nb = o->nb, n = o->n;
    double t = at->t, scale = at->scale, E = *Eacc;
    for (int d = 0; d < o->ndirichlet; d++) {
        const SimDirichlet *dd = &o->dirichlet[d];
        if (!dd->penalty) continue;
        const double *S = p->pen_S + d * nb * nb, *s = p->pen_s + d * nb;
        for (int i = 0; i < 3; i++) {
            const double *zi = z + i * nb;
            double ub = dd->velocity[i] * t;
            cblas_dsymv(CblasRowMajor, CblasUpper, (int)nb, 1.0, S, (int)nb, zi, 1, 0.0, p->tmp, 1);
            E += dd->stiffness *
                 (cblas_ddot((int)nb, zi, 1, p->tmp, 1) - 2 * ub * cblas_ddot((int)nb, s, 1, zi, 1) + ub * ub * p->pen_n[d]);
            if (g)
                for (int64_t q = 0; q < nb; q++) g[i * nb + q] += scale * 2 * dd->stiffness * (p->tmp[q] - ub * s[q]);
            if (H)
                for (int64_t a = 0; a < nb; a++)
                    for (int64_t b = 0; b < nb; b++) H[(i * nb + a) * n + i * nb + b] += scale * 2 * dd->stiffness * S[a * nb + b];
        }
    }
    *Eacc = E;
}

/* planes: k Σ_p min(0, n·x_p − h)² over the contact points (paper Eq. 14) */
static void term_planes(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                        double *Eacc, double *g, double *H) {
    int64_t nb = o->nb, n = o->n;
    double scale = at->scale, E = *Eacc;
    if (o->nplanes) {
        int64_t np = p->np;
        for (int pl = 0; pl < o->nplanes; pl++) {
            const SimPlane *P = &o->planes[pl];
            int64_t na = 0;
            double *gv = p->tmp, *nz = p->tmp + nb, *dist = p->up; /* Σ_active d_p b_p; Σ_i n_i z⁽ⁱ⁾ */
            /* signed distances n·x_p − h = n·X_p − h + b_pᵀ (Σ_i n_i z⁽ⁱ⁾): one matrix-vector product */
            for (int64_t q = 0; q < nb; q++)
                nz[q] = P->normal[0] * z[q] + P->normal[1] * z[nb + q] + P->normal[2] * z[2 * nb + q];
            for (int64_t q = 0; q < np; q++)
                dist[q] = P->normal[0] * p->Xp[3 * q] + P->normal[1] * p->Xp[3 * q + 1] + P->normal[2] * p->Xp[3 * q + 2] -
                          P->offset;
            cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)np, (int)nb, 1.0, p->Bp, (int)nb, nz, 1, 1.0, dist, 1);
            const double *ur = o->nv ? o->rig_uv : o->rig_uc; /* the rig's share of x_p */
            for (int64_t q = 0; ur && q < np; q++)
                dist[q] += P->normal[0] * ur[3 * q] + P->normal[1] * ur[3 * q + 1] + P->normal[2] * ur[3 * q + 2];
            if (g) memset(gv, 0, sizeof(double) * (size_t)nb);
            for (int64_t q = 0; q < np; q++) {
                double d = dist[q];
                if (d >= 0) continue;
                E += P->stiffness * d * d;
                if (g) cblas_daxpy((int)nb, d, p->Bp + q * nb, 1, gv, 1);
                if (H) memcpy(p->Aact + na * nb, p->Bp + q * nb, sizeof(double) * (size_t)nb);
                na++;
            }
            if (!na) continue;
            if (g)
                for (int i = 0; i < 3; i++)
                    cblas_daxpy((int)nb, scale * 2 * P->stiffness * P->normal[i], gv, 1, g + i * nb, 1);
            if (H) {
                /* 2k (n nᵀ) ⊗ Σ_active b bᵀ */
                cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)nb, (int)na, 1.0, p->Aact, (int)nb, 0.0, p->Sact,
                            (int)nb);
                for (int64_t a = 0; a < nb; a++)
                    for (int64_t b = 0; b < a; b++) p->Sact[a * nb + b] = p->Sact[b * nb + a];
                for (int i = 0; i < 3; i++)
                    for (int ii = 0; ii < 3; ii++) {
                        double f = scale * 2 * P->stiffness * P->normal[i] * P->normal[ii];
                        if (f == 0) continue;
                        for (int64_t a = 0; a < nb; a++)
                            cblas_daxpy((int)nb, f, p->Sact + a * nb, 1, H + (i * nb + a) * n + ii * nb, 1);
                    }
            }
        }
    }
    *Eacc = E;
}

/* Everything but the elastic term and the inertia, unscaled: external potentials at z and time t,
 * with their gradient and Hessian added (× scale) when given; the planes' part also alone. */
static double external(const SimObject *o, struct SimPrepared *p, const double *z, double t, double scale, double *g,
                       double *H, double *contact_out) {
    TermAt at = {.t = t, .scale = scale};
    double E = 0, Ec = 0;
    term_gravity(o, p, z, &at, &E, g, H);
    term_drag(o, p, z, &at, &E, g, H);
    term_dirichlet(o, p, z, &at, &E, g, H);
    term_planes(o, p, z, &at, &Ec, g, H);
    if (contact_out) *contact_out = Ec;
    return E + Ec;
}

/* The step objective E(z) (solver.h); g (n) and H (n × n) are overwritten when given. */
static double objective(const SimObject *o, struct SimPrepared *p, const double *z, const double *zt, double dt,
                        double t, double *g, double *H, int *nproj) {
    int64_t n = o->n;
    double E = 0, Eel = 0, dt2 = dt * dt;
    if (g) memset(g, 0, sizeof(double) * (size_t)n);
    if (H) memset(H, 0, sizeof(double) * (size_t)(n * n));
    TermAt at = {.ztil = zt, .t = t, .scale = 1.0};
    term_inertia(o, p, z, &at, &E, g, H);
    at.scale = dt2, at.nproj = nproj;
    term_elastic(o, p, z, &at, &Eel, g, H);
    E += dt2 * Eel;
    E += dt2 * external(o, p, z, t, dt2, g, H, NULL);
    return E;
}

/* The step Hessian with a lagged elastic term (SimNewtonOptions.elastic_lag) into H:
 * M ⊗ I + dt² (K_el + the external terms at z), K_el reassembled at z first when `fresh`. */
static void lagged_hessian(const SimObject *o, struct SimPrepared *p, const double *z, double dt, double t, bool fresh,
                           double *H, int *nproj) {
    int64_t nb = o->nb, n = o->n;
    double dt2 = dt * dt;
    if (fresh || !p->kel_valid) {
        if (p->ng) elastic_hessian_groups(o, p, z, nproj);
        else {
            memset(p->Kel, 0, sizeof(double) * (size_t)(n * n));
            elastic(o, p, z, 1.0, NULL, p->Kel, nproj);
        }
        p->kel_valid = true;
    } else if (p->ng)
        corotate_kel(o, p);
    p->kelr_out = p->ng && p->N;
    if (p->kelr_out) memset(H, 0, sizeof(double) * (size_t)(n * n)); /* Kelr: the caller's, after its reduction */
    else {
        const double *Kel = p->Kel;
#pragma omp simd
        for (int64_t k = 0; k < n * n; k++) H[k] = dt2 * Kel[k];
    }
    for (int i = 0; i < 3; i++)
        for (int64_t a = 0; a < nb; a++) cblas_daxpy((int)nb, 1.0, o->Mb + a * nb, 1, H + (i * nb + a) * n + i * nb, 1);
    external(o, p, z, t, dt2, NULL, H, NULL);
}

void sim_object_predict(SimObject *o, double dt, double t1, double *ztil, double *z, double *tmp_n, double *tmp_r) {
    struct SimPrepared *p = o->prep;
    int64_t n = o->n;
    for (int64_t k = 0; k < n; k++) ztil[k] = o->z[k] + dt * o->zdot[k];
    /* the start: under a rig, z̃ + dt² a with a = (ż − ż₋₁)/dt₋₁ the last step's acceleration
     * (z̃ itself stays the inertia term). The rig's prescribed motion is smooth and drives z
     * through the elastic term every step, so its acceleration carries over (bench trot: 2.27 ->
     * 2.17 iterations, 0.20 -> 0.13 elastic Hessians a frame, same stop). Not for free objects:
     * their accelerations jump at impacts (the drop onto the bench's floor: 5.49 -> 6.06). */
    bool acc = o->rig_F && p->have_zdot_prev;
    for (int64_t k = 0; k < n; k++) tmp_n[k] = ztil[k] + (acc ? dt * dt / p->dt_prev * (o->zdot[k] - p->zdot_prev[k]) : 0);
    memcpy(p->zdot_prev, o->zdot, sizeof(double) * (size_t)n);
    p->have_zdot_prev = true, p->dt_prev = dt;
    if (p->N) {
        for (int64_t k = 0; k < n; k++) tmp_n[k] -= t1 * p->zp_rate[k];
        sim_subspace_reduce(o->nb, p->r, p->N, tmp_n, tmp_r);
        sim_subspace_expand(o->nb, p->r, p->N, tmp_r, z);
        for (int64_t k = 0; k < n; k++) z[k] += t1 * p->zp_rate[k];
    } else
        memcpy(z, tmp_n, sizeof(double) * (size_t)n);
}

/* ---- outputs ------------------------------------------------------------------------------------ */

static void positions(const SimObject *o, int64_t np, const double *X, const double *B, const double *ur, double *x) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)np, 3, (int)o->nb, 1.0, B, (int)o->nb, o->z, (int)o->nb,
                0.0, x, 3);
    for (int64_t k = 0; k < 3 * np; k++) x[k] += X[k] + (ur ? ur[k] : 0);
}

void sim_object_vertices(const SimObject *o, double *x) {
    if (o->nv) positions(o, o->nv, o->Xv, o->Bv, o->rig_uv, x);
}

void sim_object_cubature_positions(const SimObject *o, double *x) { positions(o, o->nc, o->Xc, o->Bc, o->rig_uc, x); }

void sim_object_cubature_F(const SimObject *o, double *F) {
    double *Ft = malloc(sizeof(double) * 9 * (size_t)o->nc);
    if (!Ft) return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(3 * o->nc), 3, (int)o->nb, 1.0, o->Gc, (int)o->nb, o->z,
                (int)o->nb, 0.0, Ft, 3);
    for (int64_t c = 0; c < o->nc; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                F[9 * c + 3 * i + j] = (o->rig_F ? o->rig_F[9 * c + 3 * i + j] : (i == j)) + Ft[(3 * c + j) * 3 + i];
    free(Ft);
}

SimEnergy sim_object_energy(const SimObject *o) {
    SimEnergy e = {0};
    int64_t nb = o->nb;
    if (!o->prep && sim_object_prepare((SimObject *)o, NULL, 0)) return e;
    double *tmp = malloc(sizeof(double) * (size_t)nb);
    if (!tmp) return e;
    for (int i = 0; i < 3; i++) {
        cblas_dsymv(CblasRowMajor, CblasUpper, (int)nb, 1.0, o->Mb, (int)nb, o->zdot + i * nb, 1, 0.0, tmp, 1);
        e.kinetic += 0.5 * cblas_ddot((int)nb, o->zdot + i * nb, 1, tmp, 1);
        e.gravity -= o->gravity[i] * cblas_ddot((int)nb, o->mvec, 1, o->z + i * nb, 1);
    }
    free(tmp);
    if (o->prep) {
        e.elastic = elastic(o, o->prep, o->z, 1.0, NULL, NULL, NULL);
        if (o->nplanes) {
            /* only the contact term of `external` is wanted here: take it from its out-parameter */
            external(o, o->prep, o->z, o->t, 1.0, NULL, NULL, &e.contact);
        }
    }
    e.total = e.kinetic + e.elastic + e.gravity + e.contact;
    return e;
}

double sim_object_elastic(const SimObject *o, const double *z, double *grad, double *hess) {
    if (!o->prep && sim_object_prepare((SimObject *)o, NULL, 0)) return NAN;
    if (grad) memset(grad, 0, sizeof(double) * (size_t)o->n);
    if (hess) memset(hess, 0, sizeof(double) * (size_t)(o->n * o->n));
    return elastic(o, o->prep, z, 1.0, grad, hess, NULL);
}

double sim_object_term(SimObject *o, SimTerm term, const double *z, const double *ztil, double t, double *g, double *H) {
    if (!o->prep && sim_object_prepare(o, NULL, 0)) return NAN;
    if (g) memset(g, 0, sizeof(double) * (size_t)o->n);
    if (H) memset(H, 0, sizeof(double) * (size_t)(o->n * o->n));
    static void (*const fn[SIM_NTERMS])(const SimObject *, struct SimPrepared *, const double *, const TermAt *, double *,
                                        double *, double *) = {term_inertia, term_elastic, term_gravity, term_drag,
                                                               term_dirichlet, term_planes};
    if ((int)term < 0 || term >= SIM_NTERMS) return NAN;
    TermAt at = {.ztil = ztil, .t = t, .scale = 1.0};
    double E = 0;
    fn[term](o, o->prep, z, &at, &E, g, H);
    return E;
}

/* ---- for sim/world.c (the coupled multi-object step): the step objective and the exact-Dirichlet
 * subspace of one object, so a world can stack several objects into one Newton system ---------- */

double sim_object_objective(SimObject *o, const double *z, const double *ztil, double dt, double t, double *g,
                            double *H) {
    if (!o->prep && sim_object_prepare(o, NULL, 0)) return NAN;
    if (g) memset(g, 0, sizeof(double) * (size_t)o->n);
    return objective(o, o->prep, z, ztil, dt, t, g, H, H ? &o->last.projected : NULL);
}

bool sim_object_lagged_hessian(SimObject *o, const double *z, double dt, double t, bool fresh, double *H) {
    if (!o->prep && sim_object_prepare(o, NULL, 0)) return false;
    bool assembled = fresh || !o->prep->kel_valid;
    lagged_hessian(o, o->prep, z, dt, t, fresh, H, &o->last.projected);
    return assembled;
}

const double *sim_object_lagged_reduced(const SimObject *o) {
    return o->prep && o->prep->kelr_out ? o->prep->Kelr : NULL;
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
