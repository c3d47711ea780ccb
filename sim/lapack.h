/* sim/lapack.h — the LAPACK routines the simulator calls (OpenBLAS ships them), declared with
 * gfortran's hidden string-length arguments, and CBLAS. Column-major, as Fortran has it. */
#ifndef ANIMA_SIM_LAPACK_H
#define ANIMA_SIM_LAPACK_H

#include <cblas.h>
#include <stddef.h>

extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);
extern void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda, double *b,
                    const int *ldb, int *info, size_t uplo_len);
extern void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *lda,
                    double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
                    int *info, size_t jobu_len, size_t jobvt_len);
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                   double *work, const int *lwork, int *info, size_t jobz_len, size_t uplo_len);

#endif
