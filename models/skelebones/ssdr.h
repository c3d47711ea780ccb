/* models/skelebones/ssdr.h — Smooth Skinning Decomposition with Rigid bones (Le & Deng 2012):
 * from trajectories v (F × N × 3) and rest positions u (N × 3), bone transforms T_j^t = [R | T]
 * (R ∈ SO(3)) and weights W (N × B) minimizing
 *     Σ_t Σ_i ‖v_i^t − Σ_j w_ij (R_j^t u_i + T_j^t)‖²,   w ≥ 0, Σ_j w_ij = 1, ≤ K non-zeros per point,
 * by block coordinate descent from an initialization (the LBG-VQ clusters of cluster.h):
 * - bones, weights fixed: per frame, per bone in turn (Gauss–Seidel, others at their newest),
 *   q_i = v_i − Σ_{k≠j} w_ik T_k u_i; p* = Σ w_ij² u_i / Σ w_ij², q* = Σ w_ij q_i / Σ w_ij²; the
 *   weighted Kabsch fit of (w_ij(u_i − p*), q_i − w_ij q*) gives R, and T = q* − R p*. Frames are
 *   independent: OpenMP over frames.
 * - weights, bones fixed: per point (OpenMP over points) the quadratic program
 *   min wᵀGw − 2cᵀw + s‖w − w̄_i‖², w ≥ 0, Σ w = 1, with G_jk = Σ_t (T_j^t u_i)·(T_k^t u_i),
 *   c_j = Σ_t (T_j^t u_i)·v_i^t, solved exactly by a primal active-set method on the simplex;
 *   then the K largest weights are kept and the program re-solved on them. G comes from per-pair
 *   sums over frames computed once per iteration (Σ_t R_jᵀR_k, Σ_t R_jᵀT_k, Σ_t T_j·T_k), so a
 *   point costs O(B²) for G and O(F·B) for c. The smoothing term pulls each point's weights toward
 *   w̄_i, the mean of its knn nearest rest neighbors' current weights (points have no mesh: the
 *   graph is the k nearest neighbors at rest), with s = smooth · F · diag² (diag: the rest
 *   bounding-box diagonal), so `smooth` is dimensionless: the same value suits any scale and any
 *   frame count.
 * The RMSE √(Σ‖error‖² / (F N)) (the per-point distance, Dem Bones' definition) is reported after
 * the initialization and after every iteration through the progress callback. */
#ifndef ANIMA_MODELS_SKELEBONES_SSDR_H
#define ANIMA_MODELS_SKELEBONES_SSDR_H

#include <stddef.h>
#include <stdint.h>

#include "models/skelebones/cluster.h"

/* iteration it (0: the initialization) of iters, with the RMSE after it; return non-zero to stop */
typedef int (*SbProgressFn)(void *user, int it, int iters, double rmse);

typedef struct {
    int iters;          /* outer iterations (default 30, as Dem Bones) */
    int bone_iters;     /* bone passes per iteration (default 5, as Dem Bones' nTransIters) */
    int max_influences; /* K (default 8, as Dem Bones' nnz) */
    double smooth;      /* weight smoothing (default 1e-4; 0: none) */
    int knn;            /* neighbors of the smoothing graph (default 8) */
    SbProgressFn progress;
    void *user;
} SbSsdrOptions;

void sb_ssdr_defaults(SbSsdrOptions *o);

typedef struct {
    int nframes, nbones, niters;
    int64_t npoints;
    float *weights;     /* N × B, each row ≥ 0, summing to 1, ≤ K non-zeros */
    double *transforms; /* F × B × 12 */
    double *rmse;       /* niters + 1: after the initialization and after each iteration */
} SbSkin;

/* Runs SSDR from init (labels → one-hot weights, its transforms). rest: N × 3, pos: F × N × 3.
 * 0, or -1 with err (sizes disagree, out of memory). */
int sb_ssdr(int nframes, int64_t npoints, const float *rest, const float *pos, const SbClusters *init,
            const SbSsdrOptions *o, SbSkin *out, char *err, size_t errlen);
void sb_skin_free(SbSkin *s);

/* The bone transforms of F frames for fixed weights W (N × B): per frame and bone a weighted
 * Kabsch start, then `passes` Gauss–Seidel bone passes as in SSDR. Measures how weights found on
 * some frames explain others (the progressive runs). T: F × B × 12 out. 0, or -1 with err. */
int sb_ssdr_fit_bones(int nframes, int64_t npoints, int nbones, const float *rest, const float *pos, const float *W,
                      int passes, double *T, char *err, size_t errlen);

/* The weights of N points (W: N × B out, ≤ K non-zeros per row) for fixed bones T (F × B × 12):
 * each point's simplex program of SSDR's weight step, without the smoothing term. For points
 * left out of the fit (skelebones.h: the transparent Gaussians), which follow the bones found
 * from the others. 0, or -1 with err (B out of range, out of memory). */
int sb_ssdr_weights(int nframes, int64_t npoints, int nbones, int max_influences, const float *rest, const float *pos,
                    const double *T, float *W, char *err, size_t errlen);

/* √(Σ_t Σ_i ‖v_i^t − Σ_j w_ij T_j^t u_i‖² / (F N)) of an LBS rig. */
double sb_lbs_rmse(int nframes, int64_t npoints, int nbones, const float *rest, const float *pos,
                   const float *weights, const double *transforms);

/* The k (1..64) nearest rest neighbors of each of N points, nb: N × k (nearest first; a point
 * with fewer than k others repeats itself), exact, through a uniform grid. 0, or -1 (k out of
 * range, out of memory). */
int sb_knn(int64_t N, const float *rest, int k, int32_t *nb);

/* The simplex-constrained least squares of one point: w (B) minimizing wᵀGw − 2cᵀw with w ≥ 0,
 * Σ w = 1, over the bones where allowed[j] (NULL: all); exact (active set). G: B × B symmetric
 * positive semi-definite. 0, or -1 when no bone is allowed. Exposed for the tests. */
int sb_simplex_lsq(int nbones, const double *G, const double *c, const unsigned char *allowed, double *w);

#endif
