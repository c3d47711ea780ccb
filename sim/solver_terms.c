/* sim/solver_terms.c — one object's step objective (solver.h) term by term: inertia, elastic
 * (solver_elastic.c), gravity and force fields, drags, penalty Dirichlet, planes; the step
 * Hessian with the lagged elastic term, the step's start (sim_object_predict), the object's
 * energies, and the objective as world.c's Newton step takes it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/dense.h"
#include "sim/lapack.h"
#include "sim/solver_internal.h"

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

/* elastic: Σ_c V_c Ψ(F_c(z)) (the gradient and the PSD-projected Hessian: solver_elastic.c) */
static void term_elastic(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                         double *Eacc, double *g, double *H) {
    *Eacc += sim_prep_elastic(o, p, z, at->scale, g, H, at->nproj);
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

/* One quadratic pull-back through B, Σ_i c (z⁽ⁱ⁾ᵀ S z⁽ⁱ⁾ − 2 u_i sᵀz⁽ⁱ⁾ + u_i² w): a drag's or a
 * penalty region's squared distance of its points' displacements from the target u, with S, s, w
 * the pull-backs of its point weights f (Σ f b bᵀ, Σ f b, Σ f). Adds the value to *E, and
 * gh (S z⁽ⁱ⁾ − u_i s) to g and gh S to H's diagonal blocks when they are given (gh = scale · 2c). */
static void quadratic_pullback(const SimObject *o, struct SimPrepared *p, const double *z, const double *S,
                               const double *s, double w, const double u[3], double c, double gh, double *E, double *g,
                               double *H) {
    int64_t nb = o->nb, n = o->n;
    for (int i = 0; i < 3; i++) {
        const double *zi = z + i * nb;
        cblas_dsymv(CblasRowMajor, CblasUpper, (int)nb, 1.0, S, (int)nb, zi, 1, 0.0, p->tmp, 1);
        *E += c * (cblas_ddot((int)nb, zi, 1, p->tmp, 1) - 2 * u[i] * cblas_ddot((int)nb, s, 1, zi, 1) + u[i] * u[i] * w);
        if (g)
            for (int64_t q = 0; q < nb; q++) g[i * nb + q] += gh * (p->tmp[q] - u[i] * s[q]);
        if (H)
            for (int64_t a = 0; a < nb; a++)
                for (int64_t b = 0; b < nb; b++) H[(i * nb + a) * n + i * nb + b] += gh * S[a * nb + b];
    }
}

/* drags: ½ k Σ g_c ‖u_c − d(t)‖² = ½ k Σ_i (zᵢᵀ S zᵢ − 2 dᵢ sᵀzᵢ + dᵢ² Σg) */
static void term_drag(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                      double *Eacc, double *g, double *H) {
    int64_t nb = o->nb;
    double t = at->t, scale = at->scale, E = *Eacc;
    for (int d = 0; d < o->ndrags; d++) {
        const SimDrag *dr = &o->drags[d];
        if (t >= dr->t_release) continue;
        double off[3];
        drag_offset(dr, t, off);
        quadratic_pullback(o, p, z, p->drag_S + d * nb * nb, p->drag_s + d * nb, p->drag_g[d], off, 0.5 * dr->stiffness,
                           scale * dr->stiffness, &E, g, H);
    }
    *Eacc = E;
}

/* penalty Dirichlet: k Σ_p ‖u_p − ū‖², ū = v t */
static void term_dirichlet(const SimObject *o, struct SimPrepared *p, const double *z, const TermAt *at,
                           double *Eacc, double *g, double *H) {
    int64_t nb = o->nb;
    double t = at->t, scale = at->scale, E = *Eacc;
    for (int d = 0; d < o->ndirichlet; d++) {
        const SimDirichlet *dd = &o->dirichlet[d];
        if (!dd->penalty) continue;
        double ub[3] = {dd->velocity[0] * t, dd->velocity[1] * t, dd->velocity[2] * t};
        quadratic_pullback(o, p, z, p->pen_S + d * nb * nb, p->pen_s + d * nb, p->pen_n[d], ub, dd->stiffness,
                           scale * 2 * dd->stiffness, &E, g, H);
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
    sim_prep_lagged_elastic(o, p, z, fresh, nproj);
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
        e.elastic = sim_prep_elastic(o, o->prep, o->z, 1.0, NULL, NULL, NULL);
        if (o->nplanes) {
            /* only the contact term of `external` is wanted here: take it from its out-parameter */
            external(o, o->prep, o->z, o->t, 1.0, NULL, NULL, &e.contact);
        }
    }
    e.total = e.kinetic + e.elastic + e.gravity + e.contact;
    return e;
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

/* ---- for sim/world.c (the coupled multi-object step): the step objective and its lagged Hessian
 * of one object, so a world can stack several objects into one Newton system (the exact-Dirichlet
 * subspace: sim_object_subspace, solver_prepare.c) ---------------------------------------------- */

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
