/* models/gs4d/nodes.h — sparse control nodes (SC-GS, Huang et al., CVPR 2024) as gs4d's
 * deformation model (Gs4dConfig.deform = GS4D_DEFORM_NODES; docs/gaussianimate.md §3).
 *
 * M control nodes p_k (M, 3) with learned log-radii ρ_k, farthest-point sampled from the canonical
 * Gaussians when the static warm-up ends. The deformation MLP runs on the nodes only and gives each
 * node a rotation R_k (from a quaternion 1 + Δq, normalized) and a translation T_k at time t. Every
 * Gaussian i follows its K nearest nodes N(i) with normalized radial-basis weights
 *   w_ik = exp(−‖μ_i − p_k‖² / (2 r_k²)) / Σ_{l∈N(i)} exp(−‖μ_i − p_l‖² / (2 r_l²)),  r_k = e^{ρ_k},
 * its center by linear blend skinning
 *   μ_i(t) = Σ_k w_ik (R_k (μ_i − p_k) + p_k + T_k),
 * its rotation (anisotropic Gaussians) by the blended node quaternion, q_i(t) = (Σ_k w_ik q̂_k) ⊗ q_i
 * (the rasterizer normalizes), and any other head (Δs, Δc, Δo) by the same weights, Σ_k w_ik Δ_k.
 * Every piece is made of differentiable tensor ops (index_select, softmax, products), so the
 * backward and the CUDA path are the ops' own; on the CPU the weights and the two blends
 * (gs4d_rbf_weights, gs4d_node_blend, gs4d_node_lbs) run as fused custom ops instead, one loop
 * forward and one backward (their gathers, broadcast products and scatters cost more than the
 * node MLP; a create_graph backward recomposes them). tests/test_gs4d_nodes.c gradchecks them in f64, and tests/cuemu/paths.sh
 * compares the CUDA path (the compositions) with the CPU's under the emulator. */
#ifndef ANIMA_MODELS_GS4D_NODES_H
#define ANIMA_MODELS_GS4D_NODES_H

#include <stdint.h>

#include "autograd/autograd.h"

/* Farthest-point sampling: m indices of the n points x (n × 3) into out, starting from `first`,
 * each next one the point farthest from those chosen (the smallest index among ties).
 * m ≤ n. Deterministic. */
void gs4d_fps(const float *x, int64_t n, int64_t m, int64_t first, int64_t *out);

/* For each of the nq query points q (nq × 3), its k nearest of the nr reference points ref
 * (nr × 3), nearest first, ties by the smaller index; exact (brute force over the references,
 * which are the few hundred nodes). idx: nq × k; k ≤ nr. */
void gs4d_knn_to(const float *ref, int64_t nr, const float *q, int64_t nq, int k, int32_t *idx);

/* Rotation matrices (M, 3, 3) of the quaternions q (M, 4) in (w, x, y, z) order, normalized first. */
Tensor *gs4d_quat_to_rotmat(Tensor *q);
/* The Hamilton product a ⊗ b of quaternion rows (N, 4) each, (w, x, y, z). */
Tensor *gs4d_quat_mul(Tensor *a, Tensor *b);

/* The normalized RBF weights above (N, K) of points x (N, 3) over their nodes idx (N·K, i64,
 * row-major: the K nodes of point 0, then of point 1, ...), nodes p (M, 3), log-radii rho (M, 1). */
Tensor *gs4d_rbf_weights(Tensor *x, Tensor *p, Tensor *rho, Tensor *idx, int k);
/* Σ_k w_ik v[idx_ik] for values v (M, D): (N, D). */
Tensor *gs4d_node_blend(Tensor *w, Tensor *v, Tensor *idx, int k);
/* The blended positions Σ_k w_ik (R_k (x_i − p_k) + p_k + T_k), (N, 3), for rotations R (M, 3, 3)
 * and translations T (M, 3). */
Tensor *gs4d_node_lbs(Tensor *x, Tensor *p, Tensor *R, Tensor *T, Tensor *w, Tensor *idx, int k);

#endif
