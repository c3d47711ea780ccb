/* sim/dense.c — shifted Cholesky and the subspace's change of variables (see dense.h). */
#include <math.h>
#include <string.h>

#include "sim/dense.h"
#include "sim/lapack.h"

int sim_chol_shifted(double *A, const double *src, int lds, int n, double base_shift, int attempts) {
    double tr = 0;
    for (int i = 0; i < n; i++) tr += src[(size_t)i * lds + i];
    double shift = base_shift * fmax(tr / n, 1e-300);
    for (int attempt = 0; attempt < attempts; attempt++) {
        if (lds == n) memcpy(A, src, sizeof(double) * (size_t)n * n);
        else
            for (int i = 0; i < n; i++) memcpy(A + (size_t)i * n, src + (size_t)i * lds, sizeof(double) * (size_t)n);
        for (int i = 0; i < n; i++) A[(size_t)i * n + i] += shift;
        int info = 0;
        dpotrf_("L", &n, A, &n, &info, 1);
        if (info == 0) return attempt;
        shift *= 100;
    }
    return -1;
}

void sim_subspace_reduce(int64_t nb, int64_t r, const double *N, const double *g, double *gr) {
    if (!N) {
        memcpy(gr, g, sizeof(double) * 3 * (size_t)nb);
        return;
    }
    for (int i = 0; i < 3; i++)
        cblas_dgemv(CblasRowMajor, CblasTrans, (int)nb, (int)r, 1.0, N, (int)r, g + i * nb, 1, 0.0, gr + i * r, 1);
}

void sim_subspace_expand(int64_t nb, int64_t r, const double *N, const double *dy, double *dz) {
    if (!N) {
        memcpy(dz, dy, sizeof(double) * 3 * (size_t)nb);
        return;
    }
    for (int i = 0; i < 3; i++)
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)r, 1.0, N, (int)r, dy + i * r, 1, 0.0, dz + i * nb, 1);
}

void sim_rows_times_coords(int64_t n, int64_t m, const double *R, const double *V, double *D, bool accumulate) {
    const double *v0 = V, *v1 = V + m, *v2 = V + 2 * m;
    for (int64_t p = 0; p < n; p++) {
        const double *u = R + p * m;
        double d0 = 0, d1 = 0, d2 = 0;
#pragma omp simd reduction(+ : d0, d1, d2)
        for (int64_t j = 0; j < m; j++) d0 += u[j] * v0[j], d1 += u[j] * v1[j], d2 += u[j] * v2[j];
        double *d = D + 3 * p;
        if (accumulate) d[0] += d0, d[1] += d1, d[2] += d2;
        else d[0] = d0, d[1] = d1, d[2] = d2;
    }
}

void sim_coords_add_row(int64_t nb, const double c[3], const double *row, double *g) {
    for (int i = 0; i < 3; i++) cblas_daxpy((int)nb, c[i], row, 1, g + i * nb, 1);
}
