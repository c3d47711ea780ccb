/* sim/cubature.h — optimized cubature for the reduced elastic forces (An, Kim, James 2008,
 * "Optimizing Cubature for Efficient Integration of Subspace Deformations", SIGGRAPH Asia), and
 * the non-negative least squares it rests on (Lawson & Hanson 1974, "Solving Least Squares
 * Problems", ch. 23).
 *
 * The reduced elastic force at a pose z is a sum over the object's cubature points,
 *   f(z) = Σ_c V_c f_c(z),   f_c(z) = (dF/dz)_cᵀ vec P(F_c(z))   (n = 3 nb entries, solver.h),
 * and its cost is linear in the number of points. An et al. replace it by Σ_{e∈S} w_e f_e(z) with
 * a small set S and weights w ≥ 0 (non-negative, so the integrated energy stays a sum of
 * non-negative densities and its Hessian stays PSD after the per-point projection). Training:
 * T poses z_t; the column of point c stacks its f_c(z_t) over the poses, each pose's rows divided
 * by ‖f(z_t)‖ so every pose counts alike; the target b stacks the full f(z_t). The greedy loop
 * adds the candidate whose column is best aligned with the residual (largest positive
 * a_cᵀr / ‖a_c‖), re-solves the NNLS over the chosen columns, drops points whose weight went to
 * zero, and stops when ‖A w − b‖ ≤ tol ‖b‖ or the set is full.
 *
 * Poses: z random uniform in [−1, 1] per coordinate (all handles, the constant one included),
 * scaled so the RMS over points of ‖F − I‖_F equals one of the amplitudes; held-out poses come
 * from another random stream. */
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
    int poses_per_amp;     /* training poses per amplitude (8) */
    int namps;             /* amplitudes used (4) */
    double amps[8];        /* RMS ‖F − I‖_F of the poses ({0.05, 0.1, 0.2, 0.3}) */
    int max_points;        /* the set's size at most (200) */
    double tol;            /* relative training residual to stop at (0.002) */
    uint64_t seed;         /* pose stream (1) */
} SimCubatureOptions;

void sim_cubature_defaults(SimCubatureOptions *o);

typedef struct {
    int64_t k;             /* points chosen */
    int64_t *idx;          /* k indices into the object's cubature points */
    double *w;             /* k weights ≥ 0 (replace V_c) */
    double train_err;      /* ‖A w − b‖ / ‖b‖ on the training poses */
    double seconds;        /* time the optimization took */
} SimCubature;

void sim_cubature_free(SimCubature *c);

/* Optimizes a set for object o's full cubature (o->Vc over all o->nc points; any set already
 * installed is ignored). 0, or -1 with err set. */
int sim_cubature_optimize(const SimObject *o, const SimCubatureOptions *opt, SimCubature *out, char *err,
                          size_t errlen);

/* The held-out check: `poses` poses per amplitude of opt (a stream other than training's),
 * relative errors ‖f_S(z) − f(z)‖ / ‖f(z)‖; max and mean over the poses. */
void sim_cubature_heldout_error(const SimObject *o, const SimCubature *c, const SimCubatureOptions *opt, int poses,
                                double *max_rel, double *mean_rel);

/* The reduced elastic force f(z) (n) integrated with (idx, w) (k points; k = 0: all points, V_c). */
void sim_cubature_force(const SimObject *o, const double *z, int64_t k, const int64_t *idx, const double *w,
                        double *f);

#endif
