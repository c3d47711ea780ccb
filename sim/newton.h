/* sim/newton.h — the one Newton driver of the implicit step (physskin.md §7, world.h): the stop
 * test, the Hessian policy (chord steps or a lagged elastic term), the line search (a step bound,
 * then Armijo backtracking) and the velocity update. Two problems run on it: sim_world_step's
 * (world.c: objects with IPC contact, conjugate gradients on the exact Hessian; without contact a
 * dense Cholesky per object; sim_object_step is that step on a world of one object), and the
 * full-space FEM baseline's sim_fem_step (fem.c: a sparse CHOLMOD factorization every iteration,
 * no measure, no lag, no CCD, the stop tested on the direction).
 *
 * The problem is minimize E(z) over z ∈ ℝⁿ, given by callbacks on an opaque context:
 *   measure     gᵀ M⁻¹ g at the current gradient (M the reduced mass matrix, H ⪰ M): the stop
 *               test's bound on the Newton decrement and the contraction the policy watches;
 *               optional: without it every iteration counts as poor (a new Hessian each time);
 *   hessian     assemble the Newton matrix at z (with the elastic part lagged: reassembled only
 *               when fresh_el, or when none is kept);
 *   direction   dz ≈ −H⁻¹ g from the Hessian just assembled (fresh) or the last factors (a chord step);
 *   step_bound  the admissible fraction of dz (CCD: no contact pair reaches distance ≤ 0); optional;
 *   trial       E at z + α dz, with its gradient when asked;
 *   accept      E and g at the accepted iterate when the trial's are not the ones wanted
 *               (world.c re-evaluates the barrier over the new active set); optional.
 *
 * The policy (SimNewtonOptions in solver.h says why these numbers):
 *   stop       when gᵀM⁻¹g < tol · scale, or when |Δzᵀg| < tol · scale after a step (with
 *              stop_on_direction: on the new direction, before the line search, the step then
 *              not taken);
 *   Hessian    without a lag: a new one on the first iteration and after a "poor" iteration
 *              (backtracked, or gᵀM⁻¹g shrank by less than reuse_ratio), within max_hessians,
 *              otherwise a chord step; with elastic_lag > 0: the Hessian is rebuilt every
 *              iteration but its elastic term only when the last iteration that used it was poor
 *              (gᵀM⁻¹g shrank by less than elastic_lag; a backtrack counts when
 *              backtrack_is_poor), within max_hessians, and — with one_refresh — at most once in
 *              a row: a reassembly followed by another poor iteration ends them for the step;
 *   line search  α from step_bound (1 without), halved until E(z + α dz) ≤ E + armijo α Δzᵀg,
 *              at most max_backtracks times. */
#ifndef ANIMA_SIM_NEWTON_H
#define ANIMA_SIM_NEWTON_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    void *ctx;
    int64_t n;
    /* the iterate, the gradient there, a trial point, its gradient, the step (n each); the
     * driver swaps g and gt on acceptance, so read them back after sim_newton_solve */
    double *z, *g, *gt, *zt, *dz;
    double (*measure)(void *ctx, const double *g); /* NULL: no gᵀM⁻¹g test, every iteration poor */
    /* 1: an elastic Hessian was assembled, 0: the kept one was used, -1: hard error */
    int (*hessian)(void *ctx, const double *z, bool lagged, bool fresh_el);
    /* 0, 1: no direction (counted as a failure, the solve stops), -1: hard error */
    int (*direction)(void *ctx, bool fresh, bool lagged, double *dz);
    /* 0 with *alpha set, -1: hard error */
    int (*step_bound)(void *ctx, const double *z, const double *dz, double *alpha);
    /* gt NULL: the energy only */
    double (*trial)(void *ctx, const double *zt, double alpha, double *gt);
    /* z accepted; have_grad: g already holds the accepted trial's gradient. Sets *E (and g).
     * 0, -1: hard error. NULL: E is the trial's energy (grad_every_trial must then be set) */
    int (*accept)(void *ctx, const double *z, bool have_grad, double Et, double *E, double *g);
} SimNewtonProblem;

typedef struct {
    int max_iters, max_backtracks, max_hessians;
    double tol, armijo, reuse_ratio, elastic_lag;
    double scale;          /* the energy scale of the stop test (Σ M L²) */
    bool grad_every_trial; /* every Armijo trial takes the gradient (else the first only) */
    bool backtrack_is_poor;/* with the lag: a backtracking iteration stales the elastic term */
    bool one_refresh;      /* with the lag: no reassembly after a reassembly that did not help */
    bool stop_on_direction;/* |Δzᵀg| < tol · scale tested before the line search (fem.c's stop) */
    bool interpolate;      /* a failed Armijo trial's next α from a quadratic fit (else α / 2) */
} SimNewtonPolicy;

typedef struct {
    int iters, hessians, failures;
    int backtracks; /* Armijo halvings over all iterations */
    bool converged, line_search_failed;
    double decrement; /* the last gᵀM⁻¹g or |Δzᵀg|, over scale */
} SimNewtonResult;

/* Minimizes from P->z, whose energy E0 and gradient (in P->g) the caller has evaluated.
 * *kel_stale carries the lagged elastic term's staleness across steps. P->z holds the last
 * accepted iterate on return. 0, or -1 when a callback reported a hard error. */
int sim_newton_solve(SimNewtonProblem *P, const SimNewtonPolicy *o, double E0, bool *kel_stale, SimNewtonResult *r);

/* The next Armijo trial after a failed one at alpha (SimNewtonPolicy.interpolate): the minimizer
 * of the quadratic through E (at 0, slope dec < 0) and Et (at alpha), kept within
 * [alpha / 10, alpha / 2] (Nocedal & Wright §3.5); alpha / 2 where Et is not finite or not above
 * the tangent. */
double sim_newton_backtrack_step(double alpha, double E, double dec, double Et);

/* true when all n entries are finite */
bool sim_newton_finite(int64_t n, const double *z);

/* the implicit-Euler velocity ż = (z_new − z)/dt, then z = z_new */
void sim_newton_velocity(int64_t n, const double *z_new, double dt, double *z, double *zdot);

#endif
