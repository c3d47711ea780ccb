/* sim/dense.h — the small dense steps the single-object solver (solver_prepare.c, solver_terms.c)
 * and the coupled world (world.c, world_newton.c) share: a Cholesky factorization that shifts the
 * diagonal until it succeeds, the change of variables z = (I₃ ⊗ N) y of an exact-Dirichlet
 * subspace (solver.h), and the rows-times-coordinates product that places points (x = X + B z).
 * Not a public header. */
#ifndef ANIMA_SIM_DENSE_H
#define ANIMA_SIM_DENSE_H

#include <stdbool.h>
#include <stdint.h>

/* The lower Cholesky factor (column-major, as LAPACK's dpotrf leaves it: the row-major upper
 * triangle) of src + σ I into A (n × n), src's rows lds apart. σ starts at base_shift × (the mean
 * of src's diagonal, at least 1e-300) and grows ×100 after each failure, at most `attempts`
 * factorizations. Returns the failures before the one that succeeded, or -1 when none did. */
int sim_chol_shifted(double *A, const double *src, int lds, int n, double base_shift, int attempts);

/* gr = (I₃ ⊗ N)ᵀ g: each coordinate block of g (nb long, three) times N (nb × r, row-major)
 * into a block of gr (r long); N NULL: no subspace, gr = g (3 nb). */
void sim_subspace_reduce(int64_t nb, int64_t r, const double *N, const double *g, double *gr);

/* dz = (I₃ ⊗ N) dy, the reverse: each block of dy (r long) times Nᵀ into a block of dz (nb long);
 * N NULL: dz = dy (3 nb). */
void sim_subspace_expand(int64_t nb, int64_t r, const double *N, const double *dy, double *dz);

/* D = R Vᵀ (n × 3) for the rows R (n × m) and V's three coordinate blocks (3 × m, row-major), as
 * x = Σ_j R_pj z_j per coordinate; D += when accumulate. Plain loops: BLAS would pack R for so
 * skinny a product. */
void sim_rows_times_coords(int64_t n, int64_t m, const double *R, const double *V, double *D, bool accumulate);

/* g_i += c_i row for the three coordinate blocks g_i of g (nb long each): a force c on a point
 * whose row of the weights is row, into the gradient */
void sim_coords_add_row(int64_t nb, const double c[3], const double *row, double *g);

#endif
