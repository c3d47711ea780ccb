/* sim/world_internal.h — what the coupled step's sources share: the world's scratch and the
 * functions one file calls in another. world.c: setup, the step and its Newton problem, rigid
 * bodies, reports; barrier.c: the IPC barrier over the pairs (energy, gradient, the pairs' 3 × 3
 * Hessian coefficients and their assembly); friction.c: lagged smoothed Coulomb friction;
 * world_newton.c: the reduced Newton matrix and its directions (dense Cholesky, CG). Calls go
 * world.c → world_newton.c → barrier.c → friction.c, never back. Not a public header. */
#ifndef ANIMA_SIM_WORLD_INTERNAL_H
#define ANIMA_SIM_WORLD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/contact.h"
#include "sim/dense.h"
#include "sim/proxy.h"
#include "sim/world.h"

/* doubles per active pair in ageo (see SimWorldScratch) */
#define GEO 10

/* per-object layout and scratch */
typedef struct {
    int64_t nb, n, r, m;       /* blocks, 3nb, subspace dim per coordinate, 3r */
    int64_t off, roff;         /* offsets in Z and in the reduced vector */
    int64_t hoff;              /* offset of its block in Hob */
    int64_t koff;              /* offset of its full step Hessian in Hkeep (n × n; 0 without a subspace) */
    const double *N, *zp, *Lm; /* exact-Dirichlet subspace (N NULL: none) */
    int64_t np;                /* contact points */
    const double *Xp, *Bp;
    double *Bpr;               /* np × r: the rows b_pᵀ N in the reduced coordinates (NULL: Bp) */
    int64_t nf;                /* the contact surface over the points: the proxy's, or the mesh's */
    const int32_t *faces;
    SimProxy proxy;            /* np 0: none (the render mesh, or the cubature points, are the points) */
    const int32_t *pvert;      /* the proxy's mesh vertex per point (NULL: point q is vertex q) */
    double *Xown, *Bown;       /* the proxy's rows of Xv and Bv */
} ObjInfo;

struct SimWorldScratch {
    ObjInfo *oi;
    int nobj;
    int64_t ntot, nred, maxn;
    double *z0, *z, *ztil, *g, *gt, *dz, *zt, *Hk, *Hr, *gr, *dy, *Lh, *sub, *tmp;
    double **x, **dx;          /* per body (deformables, then rigid bodies): positions, step */
    SimContactBody *bodies;
    SimContactSet cand;        /* broad-phase candidates of the current step */
    SimContactPair *act;       /* pairs within d̂ at the current iterate */
    double *ageo;              /* per active pair (GEO apart): r (3), d, side b's weights (3), side
                                  a's (2), the mollifier m (1 but for nearly parallel edge pairs) */
    int32_t *aidx;             /* per active pair (5 apart): side b's points (3), side a's (2), −1 unused */
    int32_t **edges;           /* per body: its surface edges (sim_mesh_edges), NULL without faces */
    int64_t *nedges;
    int32_t **euses, **fedges, **vcoef; /* per body: the deduplication's tables (contact.h), or NULL */
    double **elen2;            /* per body: the edges' squared lengths at init (the mollifier's ε_x) */
    /* lagged friction (IPC §5): the pairs within d̂ at the step's start, fixed over the step, each
     * with its stencil (GEO apart as ageo: r₀ (3), μ λ, side b's weights (3), side a's (2), −),
     * points (5 as aidx) and tangent basis (6: two unit vectors ⊥ the normal). They follow the
     * barrier pairs in act (act[nact ..]) so the Hessian's assembly and products take them too. */
    int64_t nfr, fr_cap;
    SimContactPair *fr;
    double *frgeo, *frT;
    int32_t *fridx;
    double *fru;               /* per friction pair: its slip u (2) at the last Hessian, and whether that is set (1) */
    unsigned char *frsec;      /* per friction pair: its Hessian is the majorizer (sim_friction_majorizer) */
    double fr_eps;             /* ε_v dt: the displacement below which friction is smoothed (m) */
    int64_t nact, act_cap;
    double *U;                 /* contact Hessian scratch */
    int *comp;                 /* component of each object */
    bool *hr_dirty;            /* nobj × nobj: Hr's off-diagonal object blocks written since they were
                                  last zeroed (sim_world_hr_from_objects) */
    /* Newton directions by conjugate gradients on the exact Hessian, preconditioned by a
     * factorization of the PSD one (see sim_world_step) */
    double *Hob;               /* each object's reduced diagonal block (m × m), without contact */
    /* per object with a subspace: the full step Hessian last reduced (Hkeep, at koff) and its
     * reduction before the lagged elastic term (Hred, at hoff), valid when hred_ok: a step
     * Hessian bitwise equal to the kept one (inertia and an unchanged set of external terms, the
     * elastic term lagged) takes the kept reduction instead of a new one */
    double *Hkeep, *Hred;
    bool *hred_ok;
    double *cg;                /* 5 vectors of nred: x, r, z, p, q */
    int64_t rmax;              /* the largest subspace dimension per coordinate */
    double *Ug;                /* per active pair: its two reduced rows, rmax apart */
    double *cfx;               /* per active pair: the six coefficients of its exact 3 × 3 Hessian */
    int64_t pair_cap;
    bool have_factor;          /* Lh holds the factors of a PSD Newton matrix over comp */
    /* without contact (sim_world_direct_direction): each object's factor in Lh at hoff, of the block kept
     * in Hf (valid when hf_ok) */
    double *Hf;
    bool *hf_ok;
    bool kel_stale;            /* the objects' lagged elastic Hessians want reassembly (solver.h) */
    double **xr;               /* per object: a rigged one's contact points at the last step's end
                                  (rig_sweep), NULL before its first step or without a rig */
    double dmin_prev;          /* the smallest pair distance at the last step's start (adaptive κ) */
    double sweep_len;          /* this step's longest Newton move of a contact point (ws_step_bound) */
};

/* the contact points' rows in the reduced coordinates (np × r) */
static inline const double *obj_rows(const ObjInfo *oi) { return oi->Bpr ? oi->Bpr : oi->Bp; }

/* a pair's factor on its barrier: its dedup weight (contact.h) times an edge pair's mollifier at α */
static inline double pair_factor(const struct SimWorldScratch *s, const SimContactPair *q, double alpha) {
    return sim_contact_pair_weight(s->bodies, q) * sim_contact_pair_mollifier(s->bodies, q, alpha);
}

/* adds c (3) times the full row of point p of deformable `body` to g */
static inline void add_point_force(const SimWorld *w, int body, int32_t p, const double c[3], double *g) {
    const ObjInfo *oi = &w->ws->oi[body];
    sim_coords_add_row(oi->nb, c, oi->Bp + p * oi->nb, g + oi->off);
}

/* the six (i ≤ i') coordinate pairs of a symmetric 3 × 3 block; z is grouped by coordinate
 * (solver.h), so a pair's 3 × 3 coefficient C enters the (i, i') coordinate blocks as C_ii' */
static const int PI_[6] = {0, 0, 0, 1, 1, 2}, PJ_[6] = {0, 1, 2, 1, 2, 2};

/* CG's relative residual (in the preconditioner's norm) and products per Newton direction */
#define CG_ETA 1e-2
#define CG_MAX 16

/* ---- barrier.c: the IPC barrier over pair lists and the active pairs -------------------------- */

/* κ Σ w m b over the pairs at α (bodies' x + α dx); *dmin: the smallest pair distance */
double sim_world_barrier_energy(const SimWorld *w, const SimContactPair *pairs, int64_t np, double alpha, double *dmin);
/* the same over the active pairs at the bodies' x */
double sim_world_active_energy(const SimWorld *w);
/* the candidates within d̂ at the bodies' x become the active set, the friction pairs after them */
int sim_world_collect_active(SimWorld *w, double *dmin);
/* active pair t's row on one side (reduced: r long, else nb long) */
void sim_world_pair_row(const SimWorld *w, int64_t t, int side, bool reduced, double *row);
/* scale · the barrier's gradient over the active pairs added to g (Z-sized) */
void sim_world_barrier_gradient(const SimWorld *w, double scale, double *g);
/* the six coefficients of pair t's 3 × 3 Hessian (a barrier pair, or a friction one after them) */
void sim_world_pair_coefficients(const SimWorld *w, double scale, int64_t t, bool tangential, double cf[6]);
/* the pairs' Hessians (pairs [t0, t1) of act) added to Hr from the rows sim_world_contact_prepare
 * stored; records the coupling in comp. 0, or -1 out of memory */
int sim_world_barrier_hessian(SimWorld *w, double scale, bool tangential, int64_t t0, int64_t t1);

/* ---- friction.c: lagged friction ------------------------------------------------------------- */

/* Σ μ λ φ(|u|) over the step's friction pairs at α */
double sim_world_friction_energy(const SimWorld *w, double alpha);
/* scale · its gradient added to g (Z-sized) */
void sim_world_friction_gradient(const SimWorld *w, double scale, double *g);
/* each friction pair's Hessian for the iterate the bodies hold: the majorizer or the exact one */
void sim_world_friction_turns(SimWorld *w);
/* the six coefficients of friction pair f's 3 × 3 Hessian in its relative motion, scaled */
void sim_world_friction_coefficients(const SimWorld *w, double scale, int64_t f, bool tangential, double cf[6]);
/* the step's first pass at x⁰: the barrier sum without κ, the smallest distance, friction put aside */
int sim_world_start_pass(SimWorld *w, double dt, double *B0, double *dmin);
/* the friction pairs start_pass put aside, with the step's κ, then the planes' */
int sim_world_friction_collect(SimWorld *w);

/* ---- world_newton.c: the reduced Newton matrix and directions ------------------------------- */

/* the objects' blocks of the reduced Newton matrix (Hob); whether an elastic Hessian was assembled */
bool sim_world_objects_hessian(SimWorld *w, const double *Z, const double *Ztil, double dt, double t, bool lagged,
                               bool fresh);
/* gr = the objects' reduced gradients; dz = their steps from the reduced ones */
void sim_world_reduce_g(const SimWorld *w, const double *g, double *gr);
void sim_world_expand(const SimWorld *w, const double *dy, double *dz);
/* x = Hr⁻¹ b per connected component (refactor: factor Hr's blocks first). 0, 1: no factor, -1: oom */
int sim_world_solve_components(SimWorld *w, bool refactor, int attempts, int *ncomp, int *shifted, const double *b,
                               double *x);
/* the active pairs' exact Hessians in factored form (rows, coefficients) for sim_world_hess_apply */
int sim_world_contact_prepare(SimWorld *w, double scale);
/* out = H v, the exact reduced Newton matrix applied matrix-free */
void sim_world_hess_apply(const SimWorld *w, const double *v, double *out);
/* Hr = the objects' blocks on its diagonal, each object its own component */
void sim_world_hr_from_objects(SimWorld *w);
/* factors the PSD Newton matrix. 0, 1: no factor, -1: oom */
int sim_world_factor_psd(SimWorld *w, double scale, bool contact, int *ncomp);
/* dy ≈ −H⁻¹ gr by preconditioned CG; the products used */
int sim_world_newton_direction(SimWorld *w, double eta, int kmax, bool *slow, bool *negative);
/* Σ_k grᵀ M_r,k⁻¹ gr, the stop test's measure */
double sim_world_mass_bound(const SimWorld *w);
/* without contact: dy = −H⁻¹ gr by a Cholesky per object. 0, 1: a block did not factor */
int sim_world_direct_direction(SimWorld *w, bool fresh);

/* ---- world.c, for tests (tests/test_sim_world.c): the contact terms one at a time ----------- */

typedef enum { SIM_WORLD_BARRIER, SIM_WORLD_FRICTION } SimWorldTerm;

/* Fixes the friction pairs at the objects' current z (between bodies and against their planes,
 * at the current κ) as a step of dt would. 0, or -1 out of memory. */
int sim_world_lag_friction(SimWorld *w, double dt);
/* One contact term at the deformables' stacked coordinates Z (the rigid bodies at their pose),
 * unscaled (no dt²): SIM_WORLD_BARRIER, κ Σ w m b over the pairs within d̂ at Z (a broad phase at
 * Z), or SIM_WORLD_FRICTION, Σ μ λ φ over the pairs sim_world_lag_friction fixed. Returns its
 * energy; g (Z-sized, when not NULL) gets its gradient, H (NR × NR, when not NULL) its exact pair
 * Hessian in the reduced coordinates (the one the CG products apply, tangential terms included),
 * assembled. NAN when out of memory. Leaves the world's Newton scratch stale (no factors). */
double sim_world_contact_term(SimWorld *w, SimWorldTerm term, const double *Z, double *g, double *H);

#endif
