/* sim/solver.c — one object of reduced implicit Euler (physskin.md §7, solver.h for the
 * coordinates and the energy): its construction from a skinning, its rows B and G and the mass
 * matrices, the controls (fixed regions and their falloff, drags, force fields, planes) and the
 * outputs (positions, deformation gradients). What sim_object_prepare derives from these is
 * solver_prepare.c's, the step objective solver_terms.c's; the Newton step itself is world.c's
 * (sim_object_step: a world of one). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/solver_internal.h"

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
    sim_prep_free(o->prep), o->prep = NULL;
}

void sim_object_free(SimObject *o) {
    free(o->Xc), free(o->Vc), free(o->Bc), free(o->Gc), free(o->Xv), free(o->Bv), free(o->faces);
    free(o->Mb), free(o->mvec), free(o->z), free(o->zdot);
    free(o->eidx), free(o->ew), free(o->Ge);
    free(o->planes), free(o->dirichlet), free(o->drags), free(o->forces);
    sim_prep_free(o->prep);
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
        sim_prep_free(o->prep), o->prep = NULL;                                                        \
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
    sim_prep_free(o->prep), o->prep = NULL;
    return 0;
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
