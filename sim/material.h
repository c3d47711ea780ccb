/* sim/material.h — the stable neo-Hookean energy density, its first Piola–Kirchhoff stress and
 * its 9×9 Hessian (physskin.md §2), and the per-point PSD projection of that Hessian.
 *
 * Conventions: F is 3×3 row-major, vec(F) = (F00, F01, F02, F10, ...), so Hessian entry
 * H[3i + j][3k + l] = ∂²Ψ / ∂F_ij ∂F_kl. Everything is f64. */
#ifndef ANIMA_SIM_MATERIAL_H
#define ANIMA_SIM_MATERIAL_H

typedef struct {
    double E;   /* Young's modulus (Pa) */
    double nu;  /* Poisson ratio, in (−1, 0.5) */
    double rho; /* density (kg/m³) */
} SimMaterial;

/* μ and the λ the energy uses: base_lame with plus_mu (base/neohookean.h, which owns
 * the law and says why λ_Ψ = λ + μ). */
void sim_lame(const SimMaterial *m, double *mu, double *lam_psi);

/* Ψ(F) = μ/2 (tr FᵀF − 3) + λ/2 (J − 1)² − μ (J − 1), J = det F: base_neohookean_psi
 * (base/neohookean.h), the law PhysSkin trains with.
 * Written with the cofactor matrix cof F = J F⁻ᵀ, so it is defined (and smooth) through J ≤ 0:
 *   P = μ F + (λ (J − 1) − μ) cof F
 *   H = μ I₉ + λ vec(cof F) vec(cof F)ᵀ + (λ (J − 1) − μ) ∂cof F/∂F,
 *   (∂cof F/∂F)_(ij),(kl) = ε_ikn ε_jlq F_nq.
 * This equals physskin.md's H = μ I + γ vec(F⁻ᵀ)vec(F⁻ᵀ)ᵀ − dγ K when J ≠ 0. P and H may be
 * NULL. Returns Ψ. */
double sim_snh(const double F[9], double mu, double lam, double P[9], double H[81]);

/* In place: H ← Q max(Λ, 0) Qᵀ (eigen-clamp, cyclic Jacobi). Fast path: a Cholesky of
 * H + 1e-10·tr(H)/9·I that succeeds means H's smallest eigenvalue is ≥ −1e-10·tr(H)/9, and H is
 * left as is (near rest most points take this path; the shift only admits roundoff-level
 * negatives, which the reduced mass dominates). Returns 1 when H was changed, else 0. */
int sim_psd_project9(double H[81]);

/* The PSD projection of Ψ's Hessian in closed form (Smith, De Goes, Kim 2019, "Analytic
 * eigensystems for isotropic distortion energies"): with the signed SVD F = U Σ Vᵀ (U, V
 * rotations), the nine eigenvectors are U D Vᵀ for
 *   twist  D = (e_i e_jᵀ − e_j e_iᵀ)/√2:  μ + s σ_l      (s = λ(J − 1) − μ, l the third index)
 *   flip   D = (e_i e_jᵀ + e_j e_iᵀ)/√2:  μ − s σ_l
 *   scale  D = Σ_i a_i e_i e_iᵀ, a an eigenvector of μ I₃ + λ g gᵀ + s K₃,
 *          g = (σ₁σ₂, σ₀σ₂, σ₀σ₁), K₃ = [[0, σ₂, σ₁], [σ₂, 0, σ₀], [σ₁, σ₀, 0]]
 * (twist and flip from d²det(Σ + tD)/dt² = ±σ_l). Clamping those eigenvalues costs a 3×3 SVD
 * and a 3×3 eigenproblem instead of a 9×9 Jacobi. Writes the projected H; returns the number
 * of clamped eigenvalues. Agrees with sim_snh's H followed by sim_psd_project9 (tested). */
int sim_snh_hessian_psd(const double F[9], double mu, double lam, double H[81]);

/* Signed SVD of a 3×3 F = U diag(σ) Vᵀ: U, V rotations (row-major, singular vectors as
 * columns), σ sorted descending with σ₂ carrying det F's sign; a rank-deficient F still gets
 * rotations (completed by cross products). */
void sim_svd3_signed(const double F[9], double U[9], double sig[3], double V[9]);

/* Symmetric eigen-decomposition of an n×n (n ≤ 16) matrix by cyclic Jacobi: A is destroyed,
 * lam gets the eigenvalues, Q (row-major, may be NULL) the eigenvectors as columns. */
void sim_jacobi_eigen(int n, double *A, double *lam, double *Q);

#endif
