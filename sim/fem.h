/* sim/fem.h — the full-space baseline the reduced solver is measured against (issue 7, item 6):
 * linear tetrahedral FEM on a TetGen tetrahedralization of the same surface mesh, the same
 * stable neo-Hookean material (sim/material.h, with its closed-form PSD projection per tet), the
 * same lumped mass (ρ V_t / 4 to each corner), gravity, penalty planes (k Σ min(0, n·x − h)²) and
 * exact Dirichlet (pinned nodes are removed from the unknowns), and the same implicit Euler on
 * the same Newton driver (sim/newton.h: Armijo backtracking, the stop |Δxᵀg| < tol · M L², here
 * tested on each new direction before its line search; a new Hessian every iteration, no lag),
 * where each Newton system is solved by a supernodal sparse Cholesky (CHOLMOD; the symbolic
 * analysis — fill-reducing ordering and elimination tree — is done once, only the numeric
 * factorization per iteration).
 *
 * Per tet with rest corners X₀..X₃: Dm = [X₁−X₀, X₂−X₀, X₃−X₀], F = Ds Dm⁻¹ (Sifakis & Barbič
 * 2012, "FEM simulation of 3D deformable solids", §4), so ∂F_ij/∂x_{a,i'} = δ_ii' ∇N_a[j] with
 * ∇N_{k+1} = row k of Dm⁻¹ taken as a column (∇N_{k+1}[j] = Dm⁻¹[k][j]) and ∇N₀ = −Σ_k ∇N_{k+1}.
 *
 * TetGen (Si 2015, ACM TOMS 41(2)) runs as Debian's `tetgen` program on a temporary OFF file
 * (Debian's libtet is C++ only); its .node/.ele output is read back. f64 throughout. */
#ifndef ANIMA_SIM_FEM_H
#define ANIMA_SIM_FEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/material.h"
#include "sim/solver.h"

/* Tetrahedralizes the closed triangle mesh (V: nv × 3, F: nf × 3) with `tetgen -pq<quality>
 * -a<max_vol>` (quality ≤ 0: `-pY`, the constrained Delaunay tetrahedralization of the surface
 * as given; max_vol ≤ 0: no volume bound). nodes (nn × 3) and tets (nt × 4, positively oriented)
 * are malloc'd. The input vertices come first, in their order. 0, or -1 with err set. */
int sim_fem_tetrahedralize(const double *V, int64_t nv, const int32_t *F, int64_t nf, double quality, double max_vol,
                           double **nodes, int64_t *nn, int32_t **tets, int64_t *nt, char *err, size_t errlen);

typedef struct {
    int64_t nn, nt;
    double *X, *x, *v;  /* nn × 3: rest, current, velocity */
    int32_t *tets;      /* nt × 4 */
    double *Dminv;      /* nt × 9 (row-major Dm⁻¹) */
    double *vol;        /* nt */
    double *mass;       /* nn lumped */
    double mu, lam, rho, total_mass, diag;
    double gravity[3];
    bool *fixed;        /* nn */
    int nplanes;
    SimPlane planes[8];
    double t;
    SimNewtonOptions newton;
    SimStepStats last;
    struct SimFemSolver *sol; /* CHOLMOD state and the sparse pattern (built on the first step) */
} SimFem;

/* 0, or -1 with err set (a degenerate tet, bad material). */
int sim_fem_init(SimFem *f, const double *nodes, int64_t nn, const int32_t *tets, int64_t nt, const SimMaterial *mat,
                 char *err, size_t errlen);
void sim_fem_free(SimFem *f);
/* Pins the nodes inside r (rest positions); returns how many. */
int64_t sim_fem_fix(SimFem *f, const SimRegion *r);
int sim_fem_add_plane(SimFem *f, const SimPlane *p, char *err, size_t errlen);
/* One implicit Euler step; 0, or -1 with err set (non-finite state, CHOLMOD failure). */
int sim_fem_step(SimFem *f, double dt, char *err, size_t errlen);
/* Σ_t V_t Ψ(F_t(x)) and its gradient (nn × 3, may be NULL). */
double sim_fem_elastic(const SimFem *f, const double *x, double *grad);

#endif
