/* tests/test_sim_dense.c — sim/dense.h: the shifted Cholesky (a positive definite matrix factors
 * unshifted, a singular one after shifts, a negative definite one not at all, a block read out of
 * a wider matrix as itself), the subspace's reduce and expand, rows times coordinates and the
 * row added to coordinate blocks against plain loops. */
#include <math.h>
#include <string.h>

#include "sim/dense.h"
#include "tests/test.h"

/* max |L Lᵀ − S| over the n × n matrix S (its rows lds apart), L the lower factor dpotrf leaves
 * column-major in A (L_ij = A[j n + i], i ≥ j) */
static double chol_residual(const double *A, const double *S, int lds, int n, double shift) {
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double v = 0;
            for (int k = 0; k <= (i < j ? i : j); k++) v += A[k * n + i] * A[k * n + j];
            worst = fmax(worst, fabs(v - S[i * lds + j] - (i == j ? shift : 0)));
        }
    return worst;
}

TEST(sim_dense_chol_shifted_factors_shifts_and_fails) {
    enum { n = 4, lds = 6 };
    double S[n * lds], A[n * n];
    /* a positive definite matrix, in the top-left block of a 4 × 6 array (junk beyond column 4) */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < lds; j++) S[i * lds + j] = j < n ? 1.0 / (1 + i + j) + (i == j ? 1 : 0) : 1e30;
    CHECK(sim_chol_shifted(A, S, lds, n, 1e-14, 8) == 0);
    double tr = 0;
    for (int i = 0; i < n; i++) tr += S[i * lds + i];
    CHECK_MSG(chol_residual(A, S, lds, n, 1e-14 * tr / n) < 1e-13, "residual %g", chol_residual(A, S, lds, n, 1e-14 * tr / n));
    /* the same block packed (lds = n) factors to the same bits */
    double P[n * n], B[n * n];
    for (int i = 0; i < n; i++) memcpy(P + i * n, S + i * lds, sizeof(double) * n);
    CHECK(sim_chol_shifted(B, P, n, n, 1e-14, 8) == 0);
    CHECK(!memcmp(A, B, sizeof A));
    /* rank one (v vᵀ): singular, factors only once the shift has grown to ~1e-12 of the diagonal:
     * after some failures, and with that shift on the diagonal */
    double v[n] = {1, 2, -1, 0.5}, R[n * n];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) R[i * n + j] = v[i] * v[j];
    int tries = sim_chol_shifted(A, R, n, n, 1e-20, 8);
    CHECK_MSG(tries > 0, "tries %d", tries);
    double trr = 0;
    for (int i = 0; i < n; i++) trr += R[i * n + i];
    double shift = 1e-20 * trr / n * pow(100, tries);
    CHECK_MSG(chol_residual(A, R, n, n, shift) < 1e-12, "residual %g (shift %g)", chol_residual(A, R, n, n, shift), shift);
    /* too few attempts for that shift: none */
    CHECK(sim_chol_shifted(A, R, n, n, 1e-20, tries) == -1);
    /* negative definite: no shift of this size helps */
    for (int i = 0; i < n * n; i++) R[i] = -P[i];
    CHECK(sim_chol_shifted(A, R, n, n, 1e-14, 8) == -1);
}

TEST(sim_dense_subspace_reduce_and_expand_match_loops) {
    enum { nb = 5, r = 3 };
    double N[nb * r], g[3 * nb], gr[3 * r], dz[3 * nb];
    for (int i = 0; i < nb * r; i++) N[i] = sin(1.3 * i + 0.2);
    for (int i = 0; i < 3 * nb; i++) g[i] = cos(0.7 * i);
    sim_subspace_reduce(nb, r, N, g, gr);
    for (int c = 0; c < 3; c++)
        for (int j = 0; j < r; j++) {
            double want = 0;
            for (int a = 0; a < nb; a++) want += N[a * r + j] * g[c * nb + a];
            CHECK_NEAR(gr[c * r + j], want, 1e-14);
        }
    sim_subspace_expand(nb, r, N, gr, dz);
    for (int c = 0; c < 3; c++)
        for (int a = 0; a < nb; a++) {
            double want = 0;
            for (int j = 0; j < r; j++) want += N[a * r + j] * gr[c * r + j];
            CHECK_NEAR(dz[c * nb + a], want, 1e-14);
        }
    /* no subspace: copies */
    double y[3 * nb];
    sim_subspace_reduce(nb, r, NULL, g, y);
    CHECK(!memcmp(y, g, sizeof y));
    sim_subspace_expand(nb, r, NULL, g, y);
    CHECK(!memcmp(y, g, sizeof y));
}

TEST(sim_dense_rows_times_coords_and_coords_add_row_match_loops) {
    enum { n = 4, m = 6 };
    double R[n * m], V[3 * m], D[3 * n], E[3 * n];
    for (int i = 0; i < n * m; i++) R[i] = cos(0.9 * i + 0.1);
    for (int i = 0; i < 3 * m; i++) V[i] = sin(0.4 * i - 0.3);
    for (int i = 0; i < 3 * n; i++) E[i] = D[i] = 0.5 * i;
    sim_rows_times_coords(n, m, R, V, D, false);
    sim_rows_times_coords(n, m, R, V, E, true);
    for (int p = 0; p < n; p++)
        for (int c = 0; c < 3; c++) {
            double want = 0;
            for (int j = 0; j < m; j++) want += R[p * m + j] * V[c * m + j];
            CHECK_NEAR(D[3 * p + c], want, 1e-14);
            CHECK_NEAR(E[3 * p + c], 0.5 * (3 * p + c) + want, 1e-14);
        }
    /* g's three coordinate blocks (m long) each gain c_i times the row */
    double g[3 * m], c[3] = {2, -1, 0.25};
    for (int i = 0; i < 3 * m; i++) g[i] = V[i];
    sim_coords_add_row(m, c, R, g);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < m; j++) CHECK_NEAR(g[i * m + j], V[i * m + j] + c[i] * R[j], 1e-15);
}
