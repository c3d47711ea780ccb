/* sim/world.h — several deformable objects and rigid bodies stepped together (issue 7 item 3):
 * one Newton system for all deformables, coupled by IPC contact (sim/contact.h: points against
 * the other bodies' triangles), with the rigid bodies (sim/rigid.h) as prescribed geometry.
 *
 * The coupled step. With Z = [z_1; ...; z_K] (each object's z as in sim/solver.h), minimize
 *   E(Z) = Σ_k E_k(z_k) + dt² κ Σ_(p,T) b(d(x_p, T))
 * where E_k is object k's own step objective (inertia, elastic, gravity, planes, drags, ...) and
 * the sum runs over the pairs of a contact point and another body's triangle T (or point, for
 * bodies without a surface) closer than d̂ (Li et al. 2020, IPC,
 * Eq. 4 and §4: the barrier is an energy added to the incremental potential, so implicit Euler
 * with contact is still an unconstrained minimization). The Hessian is block diagonal in the
 * objects (each block its object's M_r + dt²(elastic + external)) plus the contact terms, which
 * couple the blocks of the objects a pair joins. The exact pair Hessian is often indefinite, so
 * the Newton direction comes from conjugate gradients on the exact matrix, applied matrix-free
 * through the pairs' points, preconditioned by a dense Cholesky of the PSD one (the per-pair
 * projected barrier) per connected component of the coupling graph; CG stops at negative
 * curvature with a descent direction (truncated Newton). The factors are kept across iterations
 * and steps while CG converges within 16 products to a relative residual of 1e-2, and refreshed
 * when it does not (pile: 1.6 factorizations per contact frame and ~10 products per Newton
 * iteration, where an assembly and factorization per iteration, 1.24 with the retries of an
 * indefinite exact matrix, took 30% more time).
 * Exact Dirichlet regions are honoured by the same change of variables as the single-object
 * solver (z = t zp + (I₃ ⊗ N) y), and the matrix is assembled in those reduced coordinates: each
 * object's block reduced once, the contact terms built from the rows b_pᵀ N directly. With
 * elastic_lag (solver.h, the default) each object's elastic term is lagged as in the
 * single-object solver; contact and inertia are exact. Without it, every Hessian is factored.
 *
 * Line search (IPC §4.2): the step Δ is first capped by CCD (contact.h) so that no pair's
 * distance falls below min_sep × its current value anywhere on [0, α_max] (positions are linear
 * in α); every Armijo trial then lies inside that interval, so no accepted iterate ever has a
 * pair distance ≤ 0: no point ever crosses another body's surface. A pair's Hessian is taken with
 * the closest point of the triangle held fixed (exact for point pairs; for a face the normal
 * term alone, for an edge the curvature across it). The initial guess (the inertial prediction z̃) is filtered the same way from
 * the previous, feasible state. The energy of a trial counts only the broad-phase candidates of
 * the swept step, which contain every pair that can come within d̂ at any α ∈ [0, 1].
 *
 * The Newton loop itself (stop test, Hessian policy, Armijo, velocity update) is sim/newton.h's;
 * world.c supplies the simulator's problem over it (CG directions, CCD bound, the barrier
 * re-evaluated over each new active set; fem.c's FEM baseline is the other). Without contact
 * (disabled, or a body alone: sim_object_step is a world of one) there is no barrier and the
 * Newton matrix is the objects' PSD blocks: each is factored and solved directly (dense Cholesky,
 * a bitwise equal block keeping its factor), the trial that passes brings its gradient and a
 * backtrack stales the lagged elastic term (SimNewtonPolicy).
 * Measured against the object's own problem this replaced (Dec 1): every z of every step of the
 * drop, drag and sag scenes and of bench_sim's drop (150 steps) bit-identical, the pile's and the
 * ball-on-jelly's too; bench_sim CPU ms/frame, medians of 8 interleaved runs, before → after:
 * drop_full 2.77 → 2.70, drop_cubature 1.04 → 0.96, sag_reduced 0.411 → 0.411 (the world's
 * path alone was +0.8%, +0.5%, +4.2%; the sag's 4% was the lagged Hessian's scalar dt² K_el copy,
 * now vectorized).
 *
 * Issue 23 (docs/contact.md): contact is evaluated on collision proxies (sim/proxy.h) and
 * includes edge–edge pairs with IPC's mollifier (contact.h); with contact.mu > 0, IPC's lagged
 * smoothed Coulomb friction between bodies and against each object's planes (sim_friction): the
 * friction pairs are fixed at the step's start and join the barrier pairs in the Newton matrix.
 * A cap on Newton iterations (newton.max_iters) is the real-time mode: every iterate comes from
 * the CCD-bounded line search, so no cap lets a pair cross.
 *
 * Momentum: the barrier is translation invariant, so its forces on a pair's two bodies cancel
 * and total linear momentum is conserved up to the Newton tolerance when no external force acts. */
#ifndef ANIMA_SIM_WORLD_H
#define ANIMA_SIM_WORLD_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/contact.h"
#include "sim/proxy.h"
#include "sim/rigid.h"
#include "sim/solver.h"

typedef struct {
    int iters, failures;    /* Newton iterations; iterations without descent or line search */
    int hessians;           /* elastic Hessians assembled (iters minus chord steps; with
                               elastic_lag, the iterations that reassembled them) */
    int factorizations;     /* Cholesky factorizations of the PSD Newton matrix (world.c: kept
                               across iterations and steps while CG converges quickly with them) */
    int cg_products;        /* exact-Hessian products of the conjugate-gradient solves */
    int negative;           /* CG solves that met negative curvature (the exact Hessian indefinite) */
    int ccd_limited;        /* iterations (and the initial guess) whose step CCD shortened */
    int sweep_limited;      /* iterations whose line search the sweep bound shortened (world.c,
                               ws_step_bound: no point moves farther than the step allows) */
    int backtracks;         /* Armijo halvings of the step's line searches */
    int components;         /* Cholesky blocks solved in the last iteration */
    bool converged;
    int64_t candidates;     /* broad-phase pairs of the last line search */
    int64_t active;         /* pairs within d̂ at the end of the step */
    double min_distance;    /* smallest pair distance at any accepted iterate of the step (and at the
                               start); INFINITY when no pair was within reach */
    double rigid_beta;      /* the smallest CCD fraction of a rigid body's move (1: unlimited) */
    double decrement;       /* last |Δzᵀ g| / Σ M L² */
    double seconds;
    /* the step's process CPU time and its parts (s): broad phase and CCD; the pairs (active set,
     * barrier energies, gradients, their Hessians' factored form); Hessian assembly (objects'
     * blocks, the PSD contact matrix); solves (Cholesky factorizations, CG). The rest (objects'
     * energies and gradients, prediction, bookkeeping) is t_cpu minus their sum. */
    double t_cpu, t_broad, t_pairs, t_hessian, t_solve;
} SimWorldStats;

typedef struct {
    int nobj, nrigid, nplanes;
    SimObject *obj;         /* not owned */
    SimRigid *rigid;        /* not owned */
    SimPlane *planes;       /* copy, for the rigid bodies (the objects hold their own) */
    SimContactOptions contact;
    double dhat, kappa;     /* resolved (κ the current one: the adaptive increase raises it) */
    double kappa_max;       /* the adaptive increase's ceiling (κ₀ × 100; a set stiffness: itself) */
    double t;
    SimWorldStats last;
    struct SimWorldScratch *ws;
} SimWorld;

/* The objects must be prepared (sim_object_prepare) or preparable; the world keeps pointers to
 * objs and rigids. planes are the scene's (used for the rigid bodies). 0, or -1 with err set. */
int sim_world_init(SimWorld *w, SimObject *objs, int nobj, SimRigid *rigids, int nrigid, const SimPlane *planes,
                   int nplanes, const SimContactOptions *c, char *err, size_t errlen);
void sim_world_free(SimWorld *w);

/* One step of dt for everything. 0, or -1 with err set on a hard error (non-finite state, memory). */
int sim_world_step(SimWorld *w, double dt, char *err, size_t errlen);

/* Total linear momentum of the deformables (Σ_i mvecᵀ ż⁽ⁱ⁾ per axis) and rigid bodies. */
void sim_world_momentum(const SimWorld *w, double p[3]);
/* Σ of the objects' mechanical energies, the rigid bodies' kinetic + gravity, and κ Σ b. */
double sim_world_energy(const SimWorld *w);
/* The smallest distance between contact points of different bodies now, over all pairs within
 * d̂ (broad phase with margin d̂/2); INFINITY when none is. For tests and reports. */
double sim_world_min_distance(const SimWorld *w);
/* Object k's collision proxy (sim/proxy.h), NULL when it has none. */
const SimProxy *sim_world_proxy(const SimWorld *w, int k);

/* For tests: the relative difference max|H v − H_a v| / max|H_a v| between the exact Newton
 * matrix at the current state applied matrix-free (as the solver's conjugate gradients do) and
 * assembled densely, for a fixed v; also fills the active pairs. INFINITY on a memory failure. */
double sim_world_hessian_product_error(SimWorld *w, double dt);

#endif
