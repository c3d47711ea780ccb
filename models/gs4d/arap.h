/* models/gs4d/arap.h — the as-rigid-as-possible + distance-preservation regularizer of the
 * GaussiAnimate paper (§3.2; docs: ../shared/notes/gaussianimate.md §3) over k-nearest-neighbor
 * pairs inside motion clusters, and the pieces it is made of: the cluster-restricted kNN and the
 * per-point best rotation (3×3 SVD, reflection fixed).
 *
 * For points with canonical positions x_c (N, 3) and deformed positions x_f (N, 3), cluster labels
 * (N) and, per point i, up to k neighbors j ∈ N(i) of the same cluster (nearest in x_c):
 *   e0_ij = x_c^i − x_c^j,  e_ij = x_f^i − x_f^j,
 *   R_i   = argmin_{R ∈ SO(3)} Σ_{j∈N(i)} ‖e_ij − R e0_ij‖²   (Kabsch: H = Σ e0 eᵀ = U Σ Vᵀ,
 *           R = V diag(1, 1, det(V Uᵀ)) Uᵀ),
 *   L     = 1/P Σ_(i,j) [ ‖e_ij − R_i e0_ij‖² + (‖e_ij‖_ε − ‖e0_ij‖_ε)² ],   ‖v‖_ε = √(‖v‖² + ε),
 * P the number of pairs. R_i is a constant for autograd (the paper: no gradient through R_i);
 * gradients reach both x_f and x_c. ε = 1e-12 keeps the distance term differentiable at a
 * zero-length edge and cancels exactly under any rigid motion (‖Q e‖ = ‖e‖), so the loss is zero
 * whenever each cluster moves rigidly (up to the rounding of R_i). Uniform pair weights. */
#ifndef ANIMA_MODELS_GS4D_ARAP_H
#define ANIMA_MODELS_GS4D_ARAP_H

#include <stdint.h>

#include "autograd/autograd.h"

/* For each of the n points x (n × 3, row-major), its k nearest other points with the same label
 * (labels NULL: one cluster), nearest first, ties broken by the smaller index; slots beyond the
 * cluster's size − 1 are −1. Exact (a uniform grid per cluster searched in growing shells until
 * the k-th distance is inside the searched region). nbr: n × k. */
void gs4d_knn(const float *x, int64_t n, const int32_t *labels, int k, int32_t *nbr);

/* The best proper rotation R (row-major 3 × 3) taking the edges a_m to b_m (m < n, each 3
 * doubles): minimizes Σ ‖b_m − R a_m‖². Via the SVD of H = Σ a bᵀ (Jacobi on HᵀH), with the
 * reflection removed; a degenerate H (collinear or no edges) still gives a rotation. */
void gs4d_best_rotation(const double *a, const double *b, int n, double R[9]);

/* The loss above (0-d, the dtype of xf) for deformed xf (N, 3) and canonical xc (N, 3) tensors
 * (f32 or f64, on the host or a device: the rotation fits run on the host from a copy, the loss on
 * the tensors' device; either may require grad) and neighbors nbr (N × k, −1 = none). 0 when there
 * are no pairs. */
Tensor *gs4d_arap_loss(Tensor *xf, Tensor *xc, const int32_t *nbr, int k);

/* ---- evaluation metrics ---------------------------------------------------------------------- */

/* For each of the nq query points (nq × 3), the distance to the nearest of the nr reference points
 * (exact, a uniform grid over the references); out: nq. nr ≥ 1. */
void gs4d_nearest_dist(const float *ref, int64_t nr, const float *q, int64_t nq, double *out);
/* The same, and idx (nq; NULL: not wanted) the nearest reference (the smallest index among ties). */
void gs4d_nearest(const float *ref, int64_t nr, const float *q, int64_t nq, double *out, int64_t *idx);

/* Symmetric Chamfer distance between point sets a and b: ½ (mean_a min_b ‖a − b‖ + mean_b min_a
 * ‖b − a‖) (distances, not squared, so it reads in the scene's units). */
double gs4d_chamfer(const float *a, int64_t na, const float *b, int64_t nb);
/* Its two sides: ab = mean_a min_b ‖a − b‖ (accuracy: how far a's points are from b), ba = mean_b
 * min_a ‖b − a‖ (completeness: how far b's points are from a). NAN when either set is empty. */
void gs4d_chamfer_sides(const float *a, int64_t na, const float *b, int64_t nb, double *ab, double *ba);

/* Local-rigidity error of trajectories pos (frames × n × 3) against the rest positions rest
 * (n × 3) over the neighbor lists nbr (n × k, −1 none): per frame, per point i, the best rotation
 * R_i of its edges (as the ARAP loss), then sqrt(mean ‖e_ij − R_i e0_ij‖²) / sqrt(mean ‖e0_ij‖²)
 * over every pair and frame — the RMS non-rigid residual of the local neighborhoods relative to
 * their size (0 for any motion that is rigid in every neighborhood). */
double gs4d_rigidity_error(const float *pos, int frames, const float *rest, int64_t n, const int32_t *nbr, int k);

#endif
