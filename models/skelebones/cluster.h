/* models/skelebones/cluster.h — rigid fits and motion clustering (Le & Deng 2014, "Robust and
 * accurate skeletal rigging from mesh sequences", the LBG-VQ initialization of SSDR).
 *
 * Conventions shared by the skelebones files:
 * - trajectories are F frames × N points × 3 (float, frame-major: pos[(t·N + i)·3 + c]) with
 *   rest (canonical) positions u (N × 3);
 * - a bone transform maps rest positions to frame t: v = R u + T, stored as a row-major 3 × 4
 *   [R | T] (12 doubles), F × B of them frame-major: T[(t·B + j)·12 + ...];
 * - every rotation is proper (det +1): the fits below never return a reflection. */
#ifndef ANIMA_MODELS_SKELEBONES_CLUSTER_H
#define ANIMA_MODELS_SKELEBONES_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "base/progress.h"

/* The rotation R ∈ SO(3) maximizing tr(Rᵀ M) for a cross-covariance M = Σ w (q − q̄)(p − p̄)ᵀ
 * (row-major 3 × 3; the fit of R p ≈ q). Horn's quaternion method: the eigenvector of the
 * largest eigenvalue of the 4 × 4 symmetric matrix built from M, found by Jacobi sweeps; a
 * quaternion is always a proper rotation, so reflections never arise (the case SVD-based
 * Kabsch has to repair with a sign flip), and degenerate (planar, collinear) sets still give
 * a rotation. M = 0 gives the identity. */
void sb_rotation_from_cov(const double M[9], double R[9]);

/* Weighted Kabsch: R, T minimizing Σ_i w_i ‖R p_i + T − q_i‖² over n points (p, q: n × 3 floats
 * or doubles as named; w may be NULL for all ones). out: 12 doubles [R | T]. Returns the
 * weight sum (0: no weight, out is the identity). */
double sb_kabsch(int64_t n, const double *p, const double *q, const double *w, double out[12]);

typedef struct {
    int bones;          /* the target count (1..SB_MAX_BONES) */
    int rounds;         /* fit/reassign rounds after each split (default 8) */
    int min_points;     /* clusters with fewer points are pruned (default 3, at least 3) */
} SbClusterOptions;

#define SB_MAX_BONES 64

void sb_cluster_defaults(SbClusterOptions *o);

typedef struct {
    int nframes, nbones;
    int64_t npoints;
    int32_t *labels;    /* N: the bone of each point (0..nbones-1) */
    double *transforms; /* F × B × 12 */
    double rmse;        /* √(Σ_t Σ_i ‖R_l(i) u_i + T_l(i) − v_i‖² / (F N)) of the rigid fit */
} SbClusters;

/* LBG-VQ: one cluster; then, until the target count or no cluster can split: split the
 * clusters with the largest error (at most doubling the count) by seeding a new one at the
 * member maximizing (e_i − min e)(d_i − min d) (e: the point's fit error over all frames, d: its
 * rest distance to the cluster centroid) and giving it the members nearer (at rest) to the seed
 * than to the centroid; then `rounds` rounds of a weighted-Kabsch fit per cluster and frame →
 * reassign every point to the bone of least error → prune clusters under min_points (their
 * points go to their next best bone). Deterministic (no randomness: ties break by index).
 * rest: N × 3; pos: F × N × 3. 0, or -1 with err (bad sizes, out of memory). */
int sb_cluster_lbgvq(int nframes, int64_t npoints, const float *rest, const float *pos, const SbClusterOptions *o,
                     SbClusters *out, char *err, size_t errlen);
void sb_clusters_free(SbClusters *c);

/* LBG-VQ's labels alone, with the default options and `bones` clusters at most: the shape of
 * gs4d's recluster callback (models/gs4d/gs4d.h), so a tool or a test hands it over as is.
 * user: an int, the bone count. labels: N. 0, or -1 (bad sizes, out of memory). */
int sb_cluster_labels_cb(void *user, int nframes, int64_t npoints, const float *rest, const float *pos,
                         int32_t *labels);

/* The ablation's random start: `bones` distinct points drawn by seed (a 64-bit LCG), every point
 * labeled by its nearest drawn point at rest (Voronoi cells), one rigid fit per cell and frame.
 * Deterministic for a seed. 0, or -1 with err. */
int sb_cluster_random(int nframes, int64_t npoints, const float *rest, const float *pos, int bones, uint64_t seed,
                      SbClusters *out, char *err, size_t errlen);

/* Per point, the rigid error Σ_t ‖R_j u_i + T_j − v_i‖² of bone j (used by the split rule and
 * the tests). */
double sb_point_bone_error(int nframes, int64_t npoints, int nbones, const float *rest, const float *pos,
                           const double *transforms, int64_t i, int j);

#endif
