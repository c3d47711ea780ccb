/* sim/friction.c — lagged smoothed Coulomb friction of the coupled step (world.h): the friction
 * pairs fixed at the step's start (between bodies and against each object's planes), their
 * energy, gradient and 3 × 3 Hessian coefficients. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"
#include "sim/lapack.h"
#include "sim/world_internal.h"

/* ---- lagged smoothed Coulomb friction (IPC, Li et al. 2020 §5; sim_friction in contact.h) ----
 * Per pair within d̂ at the step's start x⁰: the normal force λ = −κ m b′(d⁰), the closest
 * points' weights and a tangent basis T ⊥ n⁰, all held over the step; Δ = (Σ u_i x_i − Σ w_j y_j)
 * − r⁰ is the pair's relative motion since x⁰, with the lagged weights. */
/* friction pair t of the store: its stencil's relative position at the bodies' x + α dx minus r⁰ */
static void fr_delta(const SimWorld *w, const double *ge, const int32_t *ix, const SimContactPair *q, double alpha, double D[3]) {
    const struct SimWorldScratch *s = w->ws;
    for (int i = 0; i < 3; i++) D[i] = -ge[i];
    for (int side = 0; side < 2; side++) {
        if ((side ? q->b : q->a) < 0) continue; /* a plane */
        const SimContactBody *B = &s->bodies[side ? q->b : q->a];
        for (int k = 0; k < (side ? 3 : 2); k++) {
            int32_t p = side ? ix[k] : ix[3 + k];
            double c = side ? -ge[4 + k] : ge[7 + k];
            if (p < 0 || c == 0) continue;
            for (int i = 0; i < 3; i++) D[i] += c * (B->x[3 * p + i] + (B->dx ? alpha * B->dx[3 * p + i] : 0));
        }
    }
}

/* Σ μ λ φ(|u|) over the step's friction pairs at α (each pair's μ λ lagged in its ge[3]) */
double sim_world_friction_energy(const SimWorld *w, double alpha) {
    const struct SimWorldScratch *s = w->ws;
    double E = 0;
    for (int64_t f = 0; f < s->nfr; f++) {
        const double *ge = s->frgeo + GEO * f;
        double D[3];
        fr_delta(w, ge, s->fridx + 5 * f, &s->fr[f], alpha, D);
        E += sim_friction(D, s->frT + 6 * f, ge[3], s->fr_eps, NULL, NULL);
    }
    return E;
}

/* scale · ∇(μ Σ λ φ) added to g: the gradient in Δ on side a's points (times their weights),
 * minus it on side b's */
void sim_world_friction_gradient(const SimWorld *w, double scale, double *g) {
    const struct SimWorldScratch *s = w->ws;
    for (int64_t f = 0; f < s->nfr; f++) {
        const double *ge = s->frgeo + GEO * f;
        const int32_t *ix = s->fridx + 5 * f;
        const SimContactPair *q = &s->fr[f];
        double D[3], F[3];
        fr_delta(w, ge, ix, q, 0, D);
        sim_friction(D, s->frT + 6 * f, scale * ge[3], s->fr_eps, F, NULL);
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            for (int k = 0; k < (side ? 3 : 2); k++) {
                int32_t p = side ? ix[k] : ix[3 + k];
                double wt = side ? -ge[4 + k] : ge[7 + k];
                if (p < 0 || wt == 0) continue;
                double Fp[3] = {wt * F[0], wt * F[1], wt * F[2]};
                add_point_force(w, body, p, Fp, g);
            }
        }
    }
}

/* the six coefficients of friction pair f's 3 × 3 Hessian in Δ, scaled; a dedup term's negative
 * one (μ λ < 0) is left out of the PSD matrix (tangential false) */
void sim_world_friction_coefficients(const SimWorld *w, double scale, int64_t f, bool tangential, double cf[6]) {
    const struct SimWorldScratch *s = w->ws;
    const double *ge = s->frgeo + GEO * f;
    if (!tangential && ge[3] < 0) {
        memset(cf, 0, sizeof(double) * 6);
        return;
    }
    double D[3], H[9];
    fr_delta(w, ge, s->fridx + 5 * f, &s->fr[f], 0, D);
    sim_friction(D, s->frT + 6 * f, scale * ge[3], s->fr_eps, NULL, H);
    if (s->frsec[f]) sim_friction_majorizer(D, s->frT + 6 * f, scale * ge[3], s->fr_eps, H);
    for (int q = 0; q < 6; q++) cf[q] = H[3 * PI_[q] + PJ_[q]];
}

/* room for one more friction pair in the store (its four parallel arrays grow together);
 * 0, or -1 when out of memory (the arrays that did grow are kept) */
static int fr_reserve(struct SimWorldScratch *s) {
    if (s->nfr < s->fr_cap) return 0;
    int64_t cap = s->fr_cap ? 2 * s->fr_cap : 256;
    SimContactPair *q = realloc(s->fr, sizeof *q * (size_t)cap);
    if (q) s->fr = q;
    double *g = realloc(s->frgeo, sizeof(double) * GEO * (size_t)cap);
    if (g) s->frgeo = g;
    double *T = realloc(s->frT, sizeof(double) * 6 * (size_t)cap);
    if (T) s->frT = T;
    int32_t *ix = realloc(s->fridx, sizeof(int32_t) * 5 * (size_t)cap);
    if (ix) s->fridx = ix;
    double *fu = realloc(s->fru, sizeof(double) * 3 * (size_t)cap);
    if (fu) s->fru = fu;
    unsigned char *fs = realloc(s->frsec, (size_t)cap);
    if (fs) s->frsec = fs;
    if (!q || !g || !T || !ix || !fu || !fs) return -1;
    s->fr_cap = cap;
    return 0;
}

/* T: the unit normal n's two perpendiculars (the first from the axis least along n), 3 apart */
static void tangent_basis(const double n[3], double T[6]) {
    double ax[3] = {0, 0, 0}, t1[3], t2[3];
    int m = fabs(n[0]) <= fabs(n[1]) && fabs(n[0]) <= fabs(n[2]) ? 0 : fabs(n[1]) <= fabs(n[2]) ? 1 : 2;
    ax[m] = 1;
    base_vec3_cross(n, ax, t1);
    double l = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
    for (int i = 0; i < 3; i++) t1[i] /= l;
    base_vec3_cross(n, t1, t2);
    memcpy(T, t1, sizeof t1), memcpy(T + 3, t2, sizeof t2);
}

/* adds friction pair (object a's contact point p against a plane: b = −1) to the store */
static int fr_push_plane(struct SimWorldScratch *s, int a, int64_t p, const double *x0, double lam, const double *nrm) {
    if (fr_reserve(s)) return -1;
    s->fr[s->nfr] = (SimContactPair){.a = a, .b = -1, .p = (int32_t)p, .q = -1, .f = -1};
    double *ge = s->frgeo + GEO * s->nfr, *T = s->frT + 6 * s->nfr;
    int32_t *ix = s->fridx + 5 * s->nfr;
    memcpy(ge, x0, sizeof(double) * 3), ge[3] = lam, ge[4] = ge[5] = ge[6] = 0, ge[7] = 1, ge[8] = 0, ge[9] = 1;
    ix[0] = ix[1] = ix[2] = -1, ix[3] = (int32_t)p, ix[4] = -1;
    tangent_basis(nrm, T);
    s->nfr++;
    return 0;
}

/* Friction against each object's planes (its penalty contact, solver.h: k Σ min(0, n·x − h)² over
 * the mesh vertices, force 2k|d| each): lagged at x⁰ on the contact points (the proxy's vertices,
 * a subset of the mesh's) below a plane, each with λ = 2k|d|, scaled so that their sum is the
 * mesh vertices' (the proxy samples the same contact patch more coarsely), times the μ of the
 * object's and the plane's materials. */
static int friction_planes(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const SimObject *o = &w->obj[k];
        const ObjInfo *oi = &s->oi[k];
        if (!o->nplanes) continue;
        const double *xp = s->bodies[k].x; /* the contact points at x⁰ */
        double *xv = NULL;
        if (o->nv) {
            xv = malloc(sizeof(double) * 3 * (size_t)o->nv);
            if (!xv) return -1;
            sim_object_vertices(o, xv); /* o->z is still x⁰ */
        }
        for (int pl = 0; pl < o->nplanes; pl++) {
            const SimPlane *P = &o->planes[pl];
            double dm = 0, dp = 0;
            for (int64_t v = 0; xv && v < o->nv; v++) {
                double d = P->normal[0] * xv[3 * v] + P->normal[1] * xv[3 * v + 1] + P->normal[2] * xv[3 * v + 2] - P->offset;
                if (d < 0) dm -= d;
            }
            for (int64_t p = 0; p < oi->np; p++) {
                double d = P->normal[0] * xp[3 * p] + P->normal[1] * xp[3 * p + 1] + P->normal[2] * xp[3 * p + 2] - P->offset;
                if (d < 0) dp -= d;
            }
            double mu = sim_contact_mu(&w->contact, o->contact_material, P->material);
            if (!(dp > 0) || !(mu > 0)) continue;
            double ratio = xv ? mu * dm / dp : mu;
            for (int64_t p = 0; p < oi->np; p++) {
                double d = P->normal[0] * xp[3 * p] + P->normal[1] * xp[3 * p + 1] + P->normal[2] * xp[3 * p + 2] - P->offset;
                if (d < 0 && fr_push_plane(s, k, p, xp + 3 * p, -2 * P->stiffness * d * ratio, P->normal)) {
                    free(xv);
                    return -1;
                }
            }
        }
        free(xv);
    }
    return 0;
}

/* body b's contact material (deformables, then rigid bodies) */
static int body_material(const SimWorld *w, int b) {
    return b < w->nobj ? w->obj[b].contact_material : w->rigid[b - w->nobj].contact_material;
}

/* The step's friction pairs: the candidates within d̂ at the step's start (bodies at x⁰), with
 * μ λ (μ of the two bodies' materials), weights, r⁰ and T lagged. */
/* The step's first pass over the candidates at x⁰ (one stencil per pair): the barrier sum Σ w m b
 * without κ (*B0: κ is applied after the adaptive rule, which needs *dmin, the smallest distance
 * first) and, with friction, every pair within d̂ of a pair of materials with μ > 0 put aside in
 * the friction store with its stencil (its factor w m, b′, d and μ held in the λ, T slots until
 * sim_world_friction_collect). One pass where there were two (a third of a capped pile's broad-phase part). */
int sim_world_start_pass(SimWorld *w, double dt, double *B0, double *dmin) {
    struct SimWorldScratch *s = w->ws;
    s->nfr = 0;
    s->fr_eps = w->contact.eps_v * dt;
    bool fric = sim_contact_any_friction(&w->contact);
    double E = 0, m = INFINITY;
    for (int64_t k = 0; k < s->cand.n; k++) {
        const SimContactPair *q = &s->cand.pairs[k];
        double r[3], ua[2], wb[3];
        int32_t ia[2], ib[3];
        double d = sim_contact_pair_stencil(s->bodies, q, 0, r, ua, ia, wb, ib);
        m = fmin(m, d);
        if (!(d < w->dhat)) continue;
        double db, f = pair_factor(s, q, 0);
        E += f * sim_barrier(d, w->dhat, &db, NULL);
        if (!fric) continue;
        double mu = sim_contact_mu(&w->contact, body_material(w, q->a), body_material(w, q->b));
        if (!(mu > 0)) continue;
        if (fr_reserve(s)) return -1;
        double *ge = s->frgeo + GEO * s->nfr, *T = s->frT + 6 * s->nfr;
        s->fr[s->nfr] = *q;
        memcpy(ge, r, sizeof r), ge[3] = f, memcpy(ge + 4, wb, sizeof wb), memcpy(ge + 7, ua, sizeof ua), ge[9] = db;
        T[0] = d, T[1] = mu;
        memcpy(s->fridx + 5 * s->nfr, ib, sizeof ib), memcpy(s->fridx + 5 * s->nfr + 3, ia, sizeof ia);
        s->nfr++;
    }
    *B0 = E, *dmin = m;
    return 0;
}

/* The lagged friction pairs sim_world_start_pass put aside, with the step's κ: the normal force λ, stored
 * as μ λ (the pair's Coulomb force bound), and the tangent basis; then the planes'. */
int sim_world_friction_collect(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    int64_t n = 0;
    for (int64_t k = 0; k < s->nfr; k++) {
        const double *gk = s->frgeo + GEO * k, *Tk = s->frT + 6 * k;
        double d = Tk[0], mu = Tk[1];
        /* the dedup's negative terms take their share of friction too: where the triangles at a
         * feature agree on it, their friction pairs are the same and the sum is one contact's */
        double lam = -w->kappa * gk[3] * gk[9];
        if (lam == 0) continue;
        lam *= mu;
        double *ge = s->frgeo + GEO * n, *T = s->frT + 6 * n;
        if (n < k) {
            s->fr[n] = s->fr[k];
            memcpy(ge, gk, sizeof(double) * GEO), memcpy(s->fridx + 5 * n, s->fridx + 5 * k, sizeof(int32_t) * 5);
        }
        ge[3] = lam, ge[9] = 1;
        double nv[3] = {ge[0] / d, ge[1] / d, ge[2] / d};
        tangent_basis(nv, T);
        n++;
    }
    s->nfr = n;
    int rc = friction_planes(w);
    for (int64_t f = 0; f < s->nfr && !rc; f++) s->fru[3 * f + 2] = 0, s->frsec[f] = 0; /* no Hessian yet this step */
    return rc;
}

/* A friction pair's Hessian is its majorizer (sim_friction_majorizer) where its slip u did not
 * hold since the last Hessian of the step — it turned (û·û_last < FR_HOLD) or shrank (|u| <
 * FR_HOLD |u_last|) — and the exact one elsewhere (and on the step's first Hessian). Why: the
 * exact model is an upper bound of the term only while the slip keeps growing along its
 * direction (sliding, Coulomb's force is constant along the slip and the exact Hessian has no
 * curvature there; sticking, φ″ falls as |u| grows). A step that turns, reverses or slows a slip
 * overshoots it, and the converged pile's line search crawled (α ~ 5e-3, 4-5 backtracks an
 * iteration, the direction flipping between two states for 15 iterations). The majorizer bounds
 * the term from above along any step; the exact Hessian where the slip holds keeps Newton's fast
 * tail (the majorizer everywhere converges linearly: 25.3 iterations a contact frame on the
 * converged pile, 17.7 exact, 11.9 with this rule; docs/contact.md). */
#define FR_HOLD 0.9

void sim_world_friction_turns(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    bool rule = w->contact.friction_majorize;
    for (int64_t f = 0; f < s->nfr; f++) {
        const double *ge = s->frgeo + GEO * f, *T = s->frT + 6 * f;
        double D[3], *pu = s->fru + 3 * f;
        fr_delta(w, ge, s->fridx + 5 * f, &s->fr[f], 0, D);
        double u0 = T[0] * D[0] + T[1] * D[1] + T[2] * D[2], u1 = T[3] * D[0] + T[4] * D[1] + T[5] * D[2];
        double y = hypot(u0, u1), yl = hypot(pu[0], pu[1]);
        bool held = pu[2] == 0 || (y >= FR_HOLD * yl && u0 * pu[0] + u1 * pu[1] >= FR_HOLD * y * yl);
        s->frsec[f] = rule && !held;
        pu[0] = u0, pu[1] = u1, pu[2] = 1;
    }
}
