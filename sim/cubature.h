/* sim/cubature.h — optimized cubature for the reduced elastic forces (An, Kim, James 2008,
 * "Optimizing Cubature for Efficient Integration of Subspace Deformations", SIGGRAPH Asia), and
 * the non-negative least squares it rests on (Lawson & Hanson 1974, "Solving Least Squares
 * Problems", ch. 23).
 *
 * The reduced elastic force at a pose z is a sum over the object's cubature points,
 *   f(z) = Σ_c V_c f_c(z),   f_c(z) = (dF/dz)_cᵀ vec P(F_c(z))   (n = 3 nb entries, solver.h),
 * and its cost is linear in the number of points. An et al. replace it by Σ_{e∈S} w_e f_e(z) with
 * a small set S and weights w ≥ 0 (non-negative, so the integrated energy stays a sum of
 * non-negative densities and its Hessian stays PSD after the per-point projection). Only the
 * force is fitted: an implicit Euler step ends where the force balances, so the energy and the
 * Hessian of the set change how Newton gets there, not where it ends.
 *
 * Training poses z_t, two kinds:
 *  - random: z uniform in [−1, 1] per coordinate (all handles, the constant one included), scaled
 *    so the RMS over points of ‖F − I‖_F equals one of the amplitudes (An et al.'s);
 *  - simulated: the object run in its own scene `drops` times, the scene turned each time by a
 *    random rotation (axis uniform, angle uniform in [0, drop_angle]) applied to its gravity and
 *    contact planes, each plane then moved so that the object's lowest point clears it by a
 *    random factor in [drop_height_lo, drop_height_hi] of the original clearance; drop_steps
 *    implicit Euler steps of dt from the object's current state with all points, a pose kept
 *    every drop_every steps. Random poses stay small (‖F − I‖ ≤ 0.3) while a drop squashes,
 *    bends and turns the object far beyond them: on the cactus drop of bench/bench_sim.c the
 *    RMS Green strain reaches 0.26 and ‖F − I‖ 1.4, and the set trained on random poses alone
 *    (188 points) was off by 2–10% on the forces along that drop and 4.2% on its trajectory.
 *    The turned runs are other motions than the scene's own (angle 0 has probability zero);
 *    they cost drops · drop_steps full steps, most of the build (bench/bench_sim.c's object,
 *    one thread: 15 s of 21 s; 6 drops or 45-step drops saved a quarter and gave 0.43–1.06% /
 *    0.60–1.12% at 300 points on the drop below, seeds 1–4).
 * Poses at rest (force below 1e-6 of the largest: free fall) are left out.
 *
 * Fit: the column of point c stacks L_t⁻¹ f_c(z_t) over the poses, the target b stacks
 * L_t⁻¹ f(z_t), and each pose's rows are divided by ‖L_t⁻¹ f(z_t)‖ so every pose counts alike
 * (An et al. §4). L_t L_tᵀ = τ² K(z_t) + M_r, K the full set's PSD-projected elastic Hessian at
 * z_t and M_r the reduced mass: ‖L⁻¹ δf‖² = δfᵀ (τ² K + M_r)⁻¹ δf weighs a force error by the
 * motion it causes (per unit mass in directions slower than 1/τ, by the static compliance K⁻¹
 * in faster ones) instead of in raw coordinates, where the stiff directions, which barely move,
 * dominate. τ = 0: the plain Euclidean norm (L = I). The greedy loop adds the candidate whose
 * column is best aligned with the residual (largest positive a_cᵀr / ‖a_c‖), re-solves the NNLS
 * over the chosen columns (Lawson–Hanson, warm-started), drops points whose weight went to
 * zero, and stops when ‖A w − b‖ ≤ tol ‖b‖ or the set is full. Everything runs on the Gram form
 * (AᵀA, nc × nc, accumulated a few poses at a time), so memory does not grow with the poses.
 *
 * Measured on the drop of bench/bench_sim.c (16 handles, 1327 points, 60 frames; max vertex
 * deviation over the motion against the full set), 8 drops of 60 steps, rotation seeds 1–4
 * (1–6 for the defaults' line):
 *   random poses only, 188 points (the earlier default)                    4.2%
 *   uniform rotations (SO(3)), Euclidean, 250 / 350 points                 1.4–2.5 / 0.73–0.98%
 *   uniform rotations, τ = 0.1 s, 250 / 300 / 350 / 400 points             0.89–1.5 / 0.69–1.4 / 0.46–1.0 / 0.21–0.46%
 *   turns up to 180°, τ = 0.1 s, 250 / 300 / 350 points                    0.67–1.35 / 0.37–1.12 / 0.37–0.68%
 *   turns up to 60°, Euclidean, 300 points (seeds 5, 6)                    0.87–0.90%
 *   turns up to 60°, τ = 0.1 s, 250 / 300 / 350 points                     0.53–2.3 / 0.33–0.61 / 0.25–0.71%
 * The spread over seeds is the trajectory's: a uniform 1% change of the stiffness moves it by
 * 0.85%, and the rebound after impact amplifies some force errors more than others. Hence the
 * defaults: turns up to 60°, τ = 0.1 s, 300 points. */
#ifndef ANIMA_SIM_CUBATURE_H
#define ANIMA_SIM_CUBATURE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/solver.h"

/* min ‖A x − b‖ subject to x ≥ 0, Lawson–Hanson active set, given the Gram form G = AᵀA (n × n,
 * row-major, symmetric) and c = Aᵀb. x (n) gets the solution. Returns the outer iterations taken,
 * or -1 (allocation, or a singular passive set that no shift fixes). */
int sim_nnls_gram(int n, const double *G, const double *c, double *x);

typedef struct {
    int poses_per_amp;     /* random training poses per amplitude (8) */
    int namps;             /* amplitudes used (4) */
    double amps[8];        /* RMS ‖F − I‖_F of the poses ({0.05, 0.1, 0.2, 0.3}) */
    int drops;             /* simulated runs, the scene turned (8; 0: random poses only) */
    int drop_steps;        /* steps per run (60) */
    int drop_every;        /* a pose kept every this many steps (2) */
    double dt;             /* the runs' step (0.01 s) */
    double drop_height_lo, drop_height_hi; /* clearance factors (0.7, 1.3) */
    double drop_angle;     /* the turns' largest angle in degrees (60) */
    double tau;            /* the error metric's time scale (0.1 s; 0: Euclidean) */
    int max_points;        /* the set's size at most (300) */
    double tol;            /* relative training residual to stop at (0.005) */
    uint64_t seed;         /* pose streams (1) */
} SimCubatureOptions;

void sim_cubature_defaults(SimCubatureOptions *o);

typedef struct {
    int64_t k;             /* points chosen */
    int64_t *idx;          /* k indices into the object's cubature points */
    double *w;             /* k weights ≥ 0 (replace V_c) */
    double train_err;      /* ‖A w − b‖ / ‖b‖ on the training poses (in the metric) */
    int64_t poses;         /* training poses used (those not at rest) */
    double seconds;        /* time the optimization took, the runs included */
    double run_seconds;    /* of which the simulated runs */
} SimCubature;

void sim_cubature_free(SimCubature *c);

/* Optimizes a set for object o's full cubature (o->Vc over all o->nc points; any set already
 * installed is ignored): opt's random poses and simulated runs of o's scene (o's state, time,
 * gravity, planes and installed set are restored after them). 0, or -1 with err set. */
int sim_cubature_optimize(SimObject *o, const SimCubatureOptions *opt, SimCubature *out, char *err, size_t errlen);

/* The same from T given poses Z (T × n). */
int sim_cubature_optimize_poses(const SimObject *o, const SimCubatureOptions *opt, int64_t T, const double *Z,
                                SimCubature *out, char *err, size_t errlen);
/* opt's random poses (poses_per_amp × namps, n each) from stream `seed`. 0, or -1 (allocation). */
int sim_cubature_random_poses(const SimObject *o, const SimCubatureOptions *opt, uint64_t seed, double *Z);
/* opt's simulated runs with rotations from stream `seed`: *Z (malloc'd, *T × n) gets the poses
 * (none when opt->drops is 0); o is restored as in sim_cubature_optimize. 0, or -1 with err set. */
int sim_cubature_drop_poses(SimObject *o, const SimCubatureOptions *opt, uint64_t seed, double **Z, int64_t *T,
                            char *err, size_t errlen);

/* Relative errors ‖f_S(z) − f(z)‖ / ‖f(z)‖ over T given poses (those at rest left out); max and
 * mean. */
void sim_cubature_pose_error(const SimObject *o, const SimCubature *c, int64_t T, const double *Z, double *max_rel,
                             double *mean_rel);

/* The held-out check: `poses` poses per amplitude of opt (a stream other than training's),
 * relative errors ‖f_S(z) − f(z)‖ / ‖f(z)‖; max and mean over the poses. */
void sim_cubature_heldout_error(const SimObject *o, const SimCubature *c, const SimCubatureOptions *opt, int poses,
                                double *max_rel, double *mean_rel);

/* The reduced elastic force f(z) (n) integrated with (idx, w) (k points; k = 0: all points, V_c). */
void sim_cubature_force(const SimObject *o, const double *z, int64_t k, const int64_t *idx, const double *w,
                        double *f);

#endif
