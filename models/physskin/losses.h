/* models/physskin/losses.h — the physics-informed self-supervised losses (PISSL, PhysSkin++
 * §III-C; docs/physskin.md §1, §2, §4): the deformation gradient of the LBS
 * subspace as a batched tensor pipeline, stable neo-Hookean (and linear) energy densities, the
 * on-the-fly column normalization, and the potential / orthogonality / smoothness terms. All
 * are tensor ops, so they are differentiable to the network parameters (and again, for the
 * gradchecks). Shapes: B shapes, C cubature points, m handles, Z subspace samples. */
#ifndef ANIMA_MODELS_PHYSSKIN_LOSSES_H
#define ANIMA_MODELS_PHYSSKIN_LOSSES_H

#include "autograd/autograd.h"
#include "config.h"
#include "base/neohookean.h"

/* base_lame and the scalar law: neohookean.h. ps_psi_neohookean evaluates base_neohookean_psi on
 * tensors, term by term: F (..., 3, 3) -> Ψ (...). */
Tensor *ps_psi_neohookean(Tensor *F, double mu, double lambda);
/* Linear elasticity: Ψ = μ tr(εᵀε) + λ/2 (tr ε)², ε = (F + Fᵀ)/2 − I (warm start). */
Tensor *ps_psi_linear(Tensor *F, double mu, double lambda);

/* F_c(z) = I + Σ_k ( w_k T_k[:, :3] + (T_k [X;1]) ⊗ ∇w_k ) (physskin.md §1), T_k the 3×4
 * row-major blocks of z = [vec T_1; ...; vec T_m]. As one batched GEMM per shape:
 *     F − I = T' (3Z × 4m) · D (4m × 3C),
 *     T'[(z,i), (k,l)] = T_k[i, l](z),  D[(k,l), (c,j)] = [X_c;1]_l ∂_j w_k(X_c) + w_k(X_c) δ_lj,
 * D being the constant dF/dz block of physskin.md §1 written per point.
 * W (B, C, m), grad_w (B, C, m, 3), X (B, C, 3), z (B, Z, 12m) -> F (B, Z, C, 3, 3). */
Tensor *ps_deformation_gradient(Tensor *W, Tensor *grad_w, Tensor *X, Tensor *z);

typedef struct {
    double mu, lambda;
    bool linear;    /* Ψ_lin instead of stable neo-Hookean */
    bool normalize; /* Ŵ (PISSL); off: the raw W (ablation) */
    double w_pot, w_orth, w_smooth;
    double w_comp; /* rig complementarity (0: off; needs the batch's rig weights) */
} PsLossOptions;
PsLossOptions ps_loss_options(const PsConfig *c);

/* Ŵ = W with each column divided by its l2 norm over the batch points (per shape), ∇Ŵ with the
 * same factor (a constant of the batch, so ∇ commutes with it) — PhysSkin++ §III-C "Stable
 * Joint Optimization", physskin.md §4. W (B, C, m), grad_w (B, C, m, 3). */
void ps_normalize(Tensor *W, Tensor *grad_w, Tensor **w_hat, Tensor **grad_w_hat);

/* Each 0-d, mean over the B shapes of the batch:
 *   pot    = mean_z Σ_c V_c Ψ(F_c(z))                     (PhysSkin++ §III-C, physskin.md §4)
 *   orth   = mean over entries of (ŴᵀŴ − I)²
 *   smooth = Σ_c V_c Σ_k |∇ŵ_k(X_c)|²  (the Dirichlet energy; the paper gives no formula) */
typedef struct {
    Tensor *pot, *orth, *smooth;
    Tensor *comp; /* ps_loss_comp, or NULL when not computed (ps_losses leaves it NULL) */
} PsLosses;
/* V (B, C) volume weights, z (B, Z, 12m). */
void ps_losses(const PsLossOptions *o, Tensor *W, Tensor *grad_w, Tensor *X, Tensor *V, Tensor *z, PsLosses *out);
/* Rig complementarity (physskin.md §4, §9; Complementary Dynamics, Zhang et al. 2020). The rig
 * is LBS with bone weights R; its Jacobian over 12 affine parameters per bone has the 3×12 blocks
 * J_cj = R_cj (I₃ ⊗ [X_cᵀ 1]); the subspace has the same structure with the (normalized) fields,
 * B_ck = ŵ_ck (I₃ ⊗ [X_cᵀ 1]); M = diag(V_c) ⊗ I₃ the lumped mass (density 1: it cancels).
 * Because both are I₃ ⊗ (scalar field × [X;1]), JᵀMB = I₃ ⊗ G with the small matrix
 *     G = Aᵀ diag(V) Bh,  A[c, (j,l)] = R_cj Xh_cl,  Bh[c, (k,l)] = ŵ_ck Xh_cl   (4nb × 4m),
 * so ‖JᵀMB‖²_F = 3‖G‖²_F without forming J. The normalization is by the mass-weighted norms,
 *     comp = ‖JᵀMB‖²_F / (‖M^½J‖²_F ‖M^½B‖²_F)   ∈ [0, 1] (Cauchy–Schwarz),
 * invariant to the density, the units and the scale of the fields; its square root is the
 * complementarity residual the evaluation reports. Mean over the B shapes. W (B, C, m) the
 * fields (normalized here when o->normalize, as the other terms use them), X (B, C, 3),
 * V (B, C), R (B, C, nb) (zero columns: bones a shape does not have). Returns a 0-d tensor;
 * per_shape (may be NULL) gets the (B) values before the mean. */
Tensor *ps_loss_comp(const PsLossOptions *o, Tensor *W, Tensor *X, Tensor *V, Tensor *R, Tensor **per_shape);

/* w_pot·pot + w_orth·orth + w_smooth·smooth (+ w_comp·comp when comp is set) (0-d) */
Tensor *ps_losses_total(const PsLossOptions *o, const PsLosses *l);

#endif
