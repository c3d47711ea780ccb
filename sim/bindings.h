/* sim/bindings.h — the deformation evaluated at points other than the solver's (PhysSkin++
 * §III-F, physskin.md §8): mesh vertices, point clouds and 3D Gaussians.
 *
 * The subspace map is continuous, so any rest point X with weights w(X) and gradients ∇w(X)
 * gets  x(X) = X + Σ_k w_k T_k X̃  and  F(X) = I + Σ_k (w_k T_k[:, :3] + (T_k X̃) ⊗ ∇w_k)
 * (physskin.md §1), i.e. the rows b(X) and G_j(X) of sim/solver.h evaluated at X, applied to the
 * object's current z. A Gaussian with rest covariance Σ₀ at X moves to x(X) with covariance
 * Σ = A Σ₀ Aᵀ, A = F(X) — the full local affine map, including the (T X̃) ⊗ ∇w term that a
 * weights-only (LBS) transform of Σ would miss.
 *
 * Weights at arbitrary points. A skinning source gives w and ∇w at its cubature points; a point
 * cloud or a Gaussian set needs them elsewhere. sim_skinning_interpolate evaluates the
 * first-order Taylor expansions of the k nearest cubature points, w(X) ≈ Σ_j φ_j (w(X_j) +
 * ∇w(X_j)·(X − X_j)) / Σ_j φ_j, ∇w(X) ≈ Σ_j φ_j ∇w(X_j) / Σ_j φ_j, φ_j = 1/(‖X − X_j‖² + ε²):
 * exact for weights affine near X, and independent of where the weights came from (network,
 * file or procedural). */
#ifndef ANIMA_SIM_BINDINGS_H
#define ANIMA_SIM_BINDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/gaussian_ply.h"
#include "sim/skinning.h"
#include "sim/solver.h"

typedef struct {
    int64_t n, nb;
    double *X; /* n × 3 world rest positions */
    double *B; /* n × nb: b(X) */
    double *G; /* 3n × nb: rows G_j(X) */
} SimBinding;

/* Weights and gradients at n points of the skinning's own frame (n × m, n × m × 3), by the
 * k-nearest-cubature-point Taylor interpolation above (k = 8, uniform grid search). 0, or -1
 * when out of memory. */
int sim_skinning_interpolate(const SimSkinning *sk, int64_t n, const double *x, double *w, double *dw);

/* A binding of n points given in the skinning's frame (X_obj, with their weights w (n × m) and
 * gradients dw (n × m × 3, or NULL: F is then I + the weights-only part)) to an object built
 * with `pose`. 0, or -1 with err set. */
int sim_binding_init(SimBinding *b, const SimObject *o, const SimPose *pose, int64_t n, const double *X_obj,
                     const double *w, const double *dw, char *err, size_t errlen);
void sim_binding_free(SimBinding *b);

/* x (n × 3) and F (n × 9, row-major) at the object's state z; either may be NULL. */
void sim_binding_eval(const SimBinding *b, const double *z, double *x, double *F);

/* Polar decomposition A = R S (R a rotation, S symmetric; from the SVD A = U Σ Vᵀ by Jacobi on
 * AᵀA: R = U Vᵀ with det R = +1, S = V Σ Vᵀ, Σ's last entry negated when det A < 0). */
void sim_polar3(const double A[9], double R[9], double S[9]);

/* Rotation and scale of a covariance Σ = A Σ₀ Aᵀ for the 3DGS PLY, through the polar
 * decomposition of M = A R₀ D₀ (Σ₀ = R₀ D₀² R₀ᵀ): M = R_M S_M, S_M = V diag(σ) Vᵀ, so
 * Σ = M Mᵀ = (R_M V) diag(σ²) (R_M V)ᵀ — rotation R_M V (as a unit quaternion w, x, y, z), scales
 * σ. Exact (no approximation of Σ). q0 (w, x, y, z, any norm) and s0 (standard deviations) are
 * the rest Gaussian's. */
void sim_gaussian_transform(const double A[9], const double q0[4], const double s0[3], double q[4], double s[3]);

/* A 3D Gaussian set bound to an object: the rest set (skinning frame), its binding, and the
 * output buffer. */
typedef struct {
    DsGaussians rest;   /* as read (the skinning's frame) */
    DsGaussians out;    /* deformed, world frame */
    SimBinding bind;
    double pose_R[9], pose_scale;
} SimGaussianBinding;

/* Reads a 3DGS PLY whose means are in the skinning's frame and binds it. 0, or -1 with err set. */
int sim_gaussians_bind(SimGaussianBinding *gb, const char *path, const SimSkinning *sk, const SimObject *o,
                       const SimPose *pose, char *err, size_t errlen);
void sim_gaussians_free(SimGaussianBinding *gb);
/* Fills gb->out from the object's state: means x(X), rotation/scale from A Σ₀ Aᵀ with A = F(X) ·
 * (pose scale · pose R) — the world covariance of the rest Gaussian is (sR) Σ₀ (sR)ᵀ — color and
 * opacity copied (higher SH bands are not rotated). */
void sim_gaussians_update(SimGaussianBinding *gb, const SimObject *o);
/* The same on a rigged object (sim/rig.h: x = X + u_r + B z): u_r (n × 3, world) and F_r (n × 9,
 * row-major) the rig's displacement and deformation gradient at the rest centers (gb->bind.X;
 * sim_rig_points_eval), so that x = X + u_r + B z and F = F_r + (G z)ᵀ, the total deformation the
 * solver's elastic term sees; u_r and F_r NULL: sim_gaussians_update. */
void sim_gaussians_update_rigged(SimGaussianBinding *gb, const SimObject *o, const double *u_r, const double *F_r);

#endif
