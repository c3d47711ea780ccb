/* base/neohookean.h — the stable neo-Hookean law and its Lamé parameters: the one
 * definition of the material that PhysSkin's potential loss trains against (losses.c, on
 * tensors) and the simulator integrates (sim/material.c, per point in f64).
 *
 * Why here: the law is physics, not a model. PhysSkin's network is trained so that this energy
 * is low on its subspace (physskin.md §2) and the simulator integrates it, and neither stack
 * may include the other's internals, so it lives below both. Header only and libc only, so sim
 * takes no tensor dependency from it. tests/test_sim_energy.c checks that both stacks give the same Ψ and P. */
#ifndef ANIMA_BASE_NEOHOOKEAN_H
#define ANIMA_BASE_NEOHOOKEAN_H

#include <stdbool.h>

/* Lamé parameters from E, ν (physskin.md §2). With plus_mu the returned λ is λ + μ: the stable
 * neo-Hookean Ψ below linearizes at F = I to μ|ε|² + (λ_Ψ − μ)/2 (tr ε)², so λ_Ψ = λ + μ makes
 * its small-strain response the Lamé material's (Smith, de Goes, Kim 2018, "Stable
 * Neo-Hookean Flesh Simulation" §3.4; kaolin's simulator does this, its training does not).
 * PhysSkin defaults to plus_mu and the simulator always uses it, so training and simulation
 * see the same material. */
static inline void base_lame(double youngs, double poisson, bool plus_mu, double *mu, double *lambda) {
    *mu = youngs / (2 * (1 + poisson));
    *lambda = youngs * poisson / ((1 + poisson) * (1 - 2 * poisson));
    if (plus_mu) *lambda += *mu;
}

/* Stable neo-Hookean energy density from the invariants I_C = tr FᵀF and J = det F:
 *   Ψ = μ/2 (I_C − 3) + λ/2 (J − 1)² − μ (J − 1).
 * Ψ(I) = 0 and P(I) = 0 for any μ, λ; defined and smooth through J ≤ 0 (no log J). Its stress
 * is P = ∂Ψ/∂F = μ F + (λ (J − 1) − μ) cof F, cof F = J F⁻ᵀ (sim/material.h has the Hessian). */
static inline double base_neohookean_psi(double ic, double J, double mu, double lambda) {
    return 0.5 * mu * (ic - 3) + 0.5 * lambda * (J - 1) * (J - 1) - mu * (J - 1);
}

#endif
