/* tests/cuemu/test_emu_cublas.cpp — the emulated cuBLAS (tools/cuemu/cublas.cpp) against a naive
 * triple loop in double: every op combination (N/T) for Sgemm, Dgemm and GemmEx (bf16 in, f32 and
 * bf16 out), leading dimensions larger than the rows (the padding must stay untouched), strided
 * batches (a broadcast operand with stride 0) and pointer-array batches, alpha/beta including
 * beta == 0 with C poisoned with NaN (cuBLAS does not read C then), k == 0, device pointer mode,
 * the TF32 math mode; the statuses cuBLAS returns for invalid arguments; and the emulator's
 * reports: a host pointer, a too-small buffer, a host pointer array, a host pointer inside a
 * device pointer array; and products big enough for OpenBLAS's worker threads. */
#include <cblas.h> /* openblas_set_num_threads */
#include <cublas_v2.h>
#include <math.h>
#include <stdint.h>

#include <random>

#include "emu_lib_test.h"

static std::mt19937 rng(12345);

static double urand() { return std::uniform_real_distribution<double>(-1.0, 1.0)(rng); }

static uint16_t to_bf16(float f) { /* round to nearest even (finite inputs) */
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float tf32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
    memcpy(&f, &u, 4);
    return f;
}

/* column-major op(X)(i, j) of a matrix stored with leading dimension ld */
static double at(const std::vector<double> &x, int ld, cublasOperation_t op, int i, int j) {
    return op == CUBLAS_OP_N ? x[(size_t)j * ld + i] : x[(size_t)i * ld + j];
}

/* C (ldc) = alpha op(A) op(B) + beta C, beta == 0 ignoring C */
static void ref_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, double alpha,
                     const std::vector<double> &A, int lda, const std::vector<double> &B, int ldb, double beta,
                     std::vector<double> &C, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int p = 0; p < k; p++) s += at(A, lda, ta, i, p) * at(B, ldb, tb, p, j);
            double c = beta == 0 ? 0 : beta * C[(size_t)j * ldc + i];
            C[(size_t)j * ldc + i] = alpha * s + c;
        }
}

static std::vector<double> rand_vec(size_t n) {
    std::vector<double> v(n);
    for (double &x : v) x = urand();
    return v;
}

enum Kind { K_S, K_D, K_EX_BF16_F32, K_EX_BF16_BF16, K_EX_F32_TF32 };
static const char *kind_name[] = {"Sgemm", "Dgemm", "GemmEx bf16->f32", "GemmEx bf16->bf16", "GemmEx f32 fast-tf32"};

/* values as the kind stores them: rounded to its element type, so that the reference sees what
 * the device sees */
static void quantize(std::vector<double> &v, Kind kd, bool operand) {
    for (double &x : v) {
        if (kd == K_S) x = (float)x;
        else if (kd == K_EX_BF16_F32) x = operand ? from_bf16(to_bf16((float)x)) : (float)x;
        else if (kd == K_EX_BF16_BF16) x = from_bf16(to_bf16((float)x));
        else if (kd == K_EX_F32_TF32) x = (float)x;
    }
}

/* device buffer holding v in the element type of `t` (0: f32, 1: f64, 2: bf16) */
static void *upload_as(const std::vector<double> &v, int t) {
    if (t == 1) return dev_upload(v);
    if (t == 0) {
        std::vector<float> f(v.begin(), v.end());
        return dev_upload(f);
    }
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); i++) h[i] = to_bf16((float)v[i]);
    return dev_upload(h);
}

static std::vector<double> download_as(const void *d, size_t n, int t) {
    std::vector<double> out(n);
    if (t == 1) return dev_download((const double *)d, n);
    if (t == 0) {
        std::vector<float> f = dev_download((const float *)d, n);
        for (size_t i = 0; i < n; i++) out[i] = f[i];
    } else {
        std::vector<uint16_t> h = dev_download((const uint16_t *)d, n);
        for (size_t i = 0; i < n; i++) out[i] = from_bf16(h[i]);
    }
    return out;
}

static int op_type(Kind kd) { return kd == K_D ? 1 : (kd == K_EX_BF16_F32 || kd == K_EX_BF16_BF16) ? 2 : 0; }
static int out_type(Kind kd) { return kd == K_D ? 1 : kd == K_EX_BF16_BF16 ? 2 : 0; }

static double tol(Kind kd) { return kd == K_D ? 1e-12 : kd == K_EX_BF16_BF16 ? 1e-2 : kd == K_EX_F32_TF32 ? 2e-3 : 1e-5; }

/* compares C against ref over the m x n block and checks the padding rows are unchanged */
static void compare(const char *what, const std::vector<double> &got, const std::vector<double> &ref,
                    const std::vector<double> &before, int m, int n, int ldc, double tl) {
    double worst = 0;
    int bad_pad = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ldc; i++) {
            size_t q = (size_t)j * ldc + i;
            if (i < m) {
                double e = fabs(got[q] - ref[q]) / (1 + fabs(ref[q]));
                if (!(e <= worst)) worst = e; /* NaN: worst becomes NaN and fails below */
            } else if (!(got[q] == before[q] || (isnan(got[q]) && isnan(before[q]))))
                bad_pad++;
        }
    CHECK(worst <= tl, "%s: max relative error %g > %g", what, worst, tl);
    CHECK(bad_pad == 0, "%s: %d padding entries of C written", what, bad_pad);
}

/* one unbatched GEMM of the given kind; beta == 0 poisons C with NaN first */
static void test_gemm(cublasHandle_t h, Kind kd, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                      double alpha, double beta) {
    int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    int lda = ar + 2, ldb = br + 1, ldc = m + 3;
    std::vector<double> A = rand_vec((size_t)lda * ac), B = rand_vec((size_t)ldb * bc), C = rand_vec((size_t)ldc * n);
    quantize(A, kd, true), quantize(B, kd, true), quantize(C, kd, false);
    if (beta == 0)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) C[(size_t)j * ldc + i] = NAN;
    std::vector<double> ref = C, Ar = A, Br = B;
    if (kd == K_EX_F32_TF32)
        for (std::vector<double> *v : {&Ar, &Br})
            for (double &x : *v) x = tf32((float)x);
    ref_gemm(ta, tb, m, n, k, alpha, Ar, lda, Br, ldb, beta, ref, ldc);
    void *dA = upload_as(A, op_type(kd)), *dB = upload_as(B, op_type(kd)), *dC = upload_as(C, out_type(kd));
    float af = (float)alpha, bf = (float)beta;
    cublasStatus_t st;
    switch (kd) {
    case K_S:
        st = cublasSgemm(h, ta, tb, m, n, k, &af, (const float *)dA, lda, (const float *)dB, ldb, &bf, (float *)dC, ldc);
        break;
    case K_D:
        st = cublasDgemm(h, ta, tb, m, n, k, &alpha, (const double *)dA, lda, (const double *)dB, ldb, &beta,
                         (double *)dC, ldc);
        break;
    case K_EX_BF16_F32:
    case K_EX_BF16_BF16:
        st = cublasGemmEx(h, ta, tb, m, n, k, &af, dA, CUDA_R_16BF, lda, dB, CUDA_R_16BF, ldb, &bf, dC,
                          kd == K_EX_BF16_F32 ? CUDA_R_32F : CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        break;
    default:
        st = cublasGemmEx(h, ta, tb, m, n, k, &af, dA, CUDA_R_32F, lda, dB, CUDA_R_32F, ldb, &bf, dC, CUDA_R_32F, ldc,
                          CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
        break;
    }
    char what[160];
    snprintf(what, sizeof what, "%s %c%c m%d n%d k%d alpha %g beta %g", kind_name[kd], ta == CUBLAS_OP_N ? 'N' : 'T',
             tb == CUBLAS_OP_N ? 'N' : 'T', m, n, k, alpha, beta);
    CHECK(st == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)st);
    compare(what, download_as(dC, C.size(), out_type(kd)), ref, C, m, n, ldc, tol(kd));
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
}

/* strided and pointer-array batches: B broadcast (stride 0) in the strided form, the batches'
 * pointers permuted in the array form */
static void test_batched(cublasHandle_t h, Kind kd, cublasOperation_t ta, cublasOperation_t tb, double beta) {
    const int m = 4, n = 5, k = 3, nb = 3;
    int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    int lda = ar + 1, ldb = br + 2, ldc = m + 1;
    long long sA = (long long)lda * ac + 3, sB = 0, sC = (long long)ldc * n + 2;
    std::vector<double> A = rand_vec((size_t)(sA * nb)), B = rand_vec((size_t)ldb * bc), C = rand_vec((size_t)(sC * nb));
    quantize(A, kd, true), quantize(B, kd, true), quantize(C, kd, false);
    if (beta == 0)
        for (int t = 0; t < nb; t++)
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) C[(size_t)(t * sC) + (size_t)j * ldc + i] = NAN;
    const double alpha = 0.75;
    float af = (float)alpha, bf = (float)beta;
    std::vector<double> ref = C;
    for (int t = 0; t < nb; t++) {
        std::vector<double> At(A.begin() + t * sA, A.begin() + t * sA + (long long)lda * ac);
        std::vector<double> Ct(ref.begin() + t * sC, ref.begin() + t * sC + (long long)ldc * n);
        ref_gemm(ta, tb, m, n, k, alpha, At, lda, B, ldb, beta, Ct, ldc);
        std::copy(Ct.begin(), Ct.end(), ref.begin() + t * sC);
    }
    char what[160];
    /* strided */
    {
        void *dA = upload_as(A, op_type(kd)), *dB = upload_as(B, op_type(kd)), *dC = upload_as(C, out_type(kd));
        cublasStatus_t st;
        if (kd == K_S)
            st = cublasSgemmStridedBatched(h, ta, tb, m, n, k, &af, (const float *)dA, lda, sA, (const float *)dB, ldb,
                                           sB, &bf, (float *)dC, ldc, sC, nb);
        else if (kd == K_D)
            st = cublasDgemmStridedBatched(h, ta, tb, m, n, k, &alpha, (const double *)dA, lda, sA, (const double *)dB,
                                           ldb, sB, &beta, (double *)dC, ldc, sC, nb);
        else
            st = cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &af, dA, CUDA_R_16BF, lda, sA, dB, CUDA_R_16BF, ldb, sB,
                                            &bf, dC, kd == K_EX_BF16_F32 ? CUDA_R_32F : CUDA_R_16BF, ldc, sC, nb,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        snprintf(what, sizeof what, "%s StridedBatched %c%c beta %g", kind_name[kd], ta == CUBLAS_OP_N ? 'N' : 'T',
                 tb == CUBLAS_OP_N ? 'N' : 'T', beta);
        CHECK(st == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)st);
        std::vector<double> got = download_as(dC, C.size(), out_type(kd));
        for (int t = 0; t < nb; t++) {
            auto sl = [&](const std::vector<double> &v) {
                return std::vector<double>(v.begin() + t * sC, v.begin() + t * sC + (long long)ldc * n);
            };
            compare(what, sl(got), sl(ref), sl(C), m, n, ldc, tol(kd));
        }
        /* the gaps between batches are not part of any matrix: untouched */
        int gap_bad = 0;
        for (int t = 0; t < nb; t++)
            for (long long q = (long long)ldc * n; q < sC; q++) {
                size_t i = (size_t)(t * sC + q);
                gap_bad += !(got[i] == C[i]);
            }
        CHECK(gap_bad == 0, "%s: %d entries between batches written", what, gap_bad);
        cudaFree(dA), cudaFree(dB), cudaFree(dC);
    }
    /* pointer arrays, in reverse batch order, each matrix its own allocation */
    {
        std::vector<void *> pa(nb), pb(nb), pc(nb);
        size_t es_op = op_type(kd) == 1 ? 8 : op_type(kd) == 2 ? 2 : 4, es_out = out_type(kd) == 1 ? 8 : out_type(kd) == 2 ? 2 : 4;
        (void)es_op, (void)es_out;
        std::vector<std::vector<double>> Cs(nb);
        for (int t = 0; t < nb; t++) {
            int src = nb - 1 - t;
            pa[t] = upload_as(std::vector<double>(A.begin() + src * sA, A.begin() + src * sA + (long long)lda * ac), op_type(kd));
            pb[t] = upload_as(B, op_type(kd));
            Cs[t] = std::vector<double>(C.begin() + src * sC, C.begin() + src * sC + (long long)ldc * n);
            pc[t] = upload_as(Cs[t], out_type(kd));
        }
        void **dpa = dev_upload(pa), **dpb = dev_upload(pb), **dpc = dev_upload(pc);
        cublasStatus_t st;
        if (kd == K_S)
            st = cublasSgemmBatched(h, ta, tb, m, n, k, &af, (const float *const *)dpa, lda, (const float *const *)dpb,
                                    ldb, &bf, (float *const *)dpc, ldc, nb);
        else if (kd == K_D)
            st = cublasDgemmBatched(h, ta, tb, m, n, k, &alpha, (const double *const *)dpa, lda,
                                    (const double *const *)dpb, ldb, &beta, (double *const *)dpc, ldc, nb);
        else
            st = cublasGemmBatchedEx(h, ta, tb, m, n, k, &af, (const void *const *)dpa, CUDA_R_16BF, lda,
                                     (const void *const *)dpb, CUDA_R_16BF, ldb, &bf, (void *const *)dpc,
                                     kd == K_EX_BF16_F32 ? CUDA_R_32F : CUDA_R_16BF, ldc, nb, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
        snprintf(what, sizeof what, "%s Batched %c%c beta %g", kind_name[kd], ta == CUBLAS_OP_N ? 'N' : 'T',
                 tb == CUBLAS_OP_N ? 'N' : 'T', beta);
        CHECK(st == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)st);
        for (int t = 0; t < nb; t++) {
            int src = nb - 1 - t;
            std::vector<double> rt(ref.begin() + src * sC, ref.begin() + src * sC + (long long)ldc * n);
            compare(what, download_as(pc[t], Cs[t].size(), out_type(kd)), rt, Cs[t], m, n, ldc, tol(kd));
            cudaFree(pa[t]), cudaFree(pb[t]), cudaFree(pc[t]);
        }
        cudaFree(dpa), cudaFree(dpb), cudaFree(dpc);
    }
}

static void test_statuses(cublasHandle_t h) {
    float one = 1, zero = 0;
    float *d = dev_alloc<float>(64);
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    CHECK(cublasSgemm(h, N, N, -1, 2, 2, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "m < 0");
    CHECK(cublasSgemm(h, N, N, 2, -1, 2, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "n < 0");
    CHECK(cublasSgemm(h, N, N, 2, 2, -1, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "k < 0");
    CHECK(cublasSgemm(h, N, N, 3, 2, 2, &one, d, 2, d, 2, &zero, d, 3) == CUBLAS_STATUS_INVALID_VALUE, "lda < m (N)");
    CHECK(cublasSgemm(h, T, N, 2, 2, 3, &one, d, 2, d, 3, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "lda < k (T)");
    CHECK(cublasSgemm(h, N, N, 2, 2, 3, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "ldb < k (N)");
    CHECK(cublasSgemm(h, N, T, 2, 3, 2, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "ldb < n (T)");
    CHECK(cublasSgemm(h, N, N, 3, 2, 2, &one, d, 3, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE, "ldc < m");
    CHECK(cublasSgemm(h, N, N, 0, 2, 2, &one, d, 0, d, 2, &zero, d, 0) == CUBLAS_STATUS_INVALID_VALUE, "lda 0 < max(1, m)");
    CHECK(cublasSgemm(h, (cublasOperation_t)7, N, 2, 2, 2, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_INVALID_VALUE,
          "bad op");
    CHECK(cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, d, 2, 4, d, 2, 4, &zero, d, 2, 4, -1) ==
              CUBLAS_STATUS_INVALID_VALUE,
          "batchCount < 0");
    CHECK(cublasSgemm(nullptr, N, N, 2, 2, 2, &one, d, 2, d, 2, &zero, d, 2) == CUBLAS_STATUS_NOT_INITIALIZED,
          "NULL handle");
    CHECK(cublasGemmEx(h, N, N, 2, 2, 2, &one, d, CUDA_R_16BF, 2, d, CUDA_R_32F, 2, &zero, d, CUDA_R_32F, 2,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED,
          "mixed A/B types");
    CHECK(cublasGemmEx(h, N, N, 2, 2, 2, &one, d, CUDA_R_64F, 2, d, CUDA_R_64F, 2, &zero, d, CUDA_R_64F, 2,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED,
          "64F operands, 32F compute");
    /* empty problems succeed without touching memory, even with no buffers */
    CHECK(cublasSgemm(h, N, N, 0, 2, 2, &one, nullptr, 1, nullptr, 2, &zero, nullptr, 1) == CUBLAS_STATUS_SUCCESS, "m == 0");
    CHECK(cublasSgemmStridedBatched(h, N, N, 2, 2, 2, &one, nullptr, 2, 4, nullptr, 2, 4, &zero, nullptr, 2, 4, 0) ==
              CUBLAS_STATUS_SUCCESS,
          "batchCount == 0");
    cublasMath_t mm;
    CHECK(cublasGetMathMode(h, &mm) == CUBLAS_STATUS_SUCCESS && mm == CUBLAS_DEFAULT_MATH, "default math mode");
    cudaStream_t s = (cudaStream_t)0, got = (cudaStream_t)1;
    CHECK(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS && cublasGetStream(h, &got) == CUBLAS_STATUS_SUCCESS && got == s,
          "stream round trip");
    CHECK(strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0, "status name");
    cudaFree(d);
}

/* k == 0 and alpha == 0: C = beta C, A and B not read (NULL is fine) */
static void test_k0(cublasHandle_t h) {
    const int m = 3, n = 2, ldc = 4;
    std::vector<double> C = rand_vec((size_t)ldc * n);
    double *dC = dev_upload(C);
    double alpha = 1, beta = -2;
    CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, 0, &alpha, nullptr, m, nullptr, 1, &beta, dC, ldc) ==
              CUBLAS_STATUS_SUCCESS,
          "k == 0");
    std::vector<double> got = dev_download(dC, C.size()), ref = C;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) ref[(size_t)j * ldc + i] *= beta;
    compare("Dgemm k == 0 (C = beta C)", got, ref, C, m, n, ldc, 0);
    alpha = 0, beta = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) C[(size_t)j * ldc + i] = NAN;
    cudaMemcpy(dC, C.data(), C.size() * 8, cudaMemcpyHostToDevice);
    CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, 5, &alpha, nullptr, m, nullptr, 5, &beta, dC, ldc) ==
              CUBLAS_STATUS_SUCCESS,
          "alpha == beta == 0");
    got = dev_download(dC, C.size());
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) ref[(size_t)j * ldc + i] = 0;
    compare("Dgemm alpha == beta == 0 on a NaN C", got, ref, C, m, n, ldc, 0);
    cudaFree(dC);
}

/* alpha and beta read from device memory */
static void test_device_pointer_mode(cublasHandle_t h) {
    const int m = 3, n = 4, k = 5;
    std::vector<double> A = rand_vec(m * k), B = rand_vec(k * n), C = rand_vec(m * n), ref = C;
    double *dA = dev_upload(A), *dB = dev_upload(B), *dC = dev_upload(C);
    double *dab = dev_upload(std::vector<double>{1.5, 0.25});
    ref_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1.5, A, m, B, k, 0.25, ref, m);
    CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS, "set pointer mode");
    CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dab, dA, m, dB, k, dab + 1, dC, m) == CUBLAS_STATUS_SUCCESS,
          "device pointer mode");
    cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST);
    compare("Dgemm device pointer mode", dev_download(dC, C.size()), ref, C, m, n, m, 1e-12);
    cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(dab);
}

/* CUBLAS_TF32_TENSOR_OP_MATH lets Sgemm round its operands to TF32; the default does not */
static void test_tf32_math_mode(cublasHandle_t h) {
    const int m = 2, n = 2, k = 1;
    std::vector<float> A = {1.0f + 1.0f / 4096, 1}, B = {1, 1};
    float *dA = dev_upload(A), *dB = dev_upload(B), *dC = dev_alloc<float>(4);
    float one = 1, zero = 0;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m, dB, k, &zero, dC, m);
    CHECK(dev_download(dC, 4)[0] == A[0], "default math: f32 product exact");
    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m, dB, k, &zero, dC, m);
    CHECK(dev_download(dC, 4)[0] == 1.0f, "TF32 math: 1 + 2^-12 rounds to 1");
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
}

static void test_reports(cublasHandle_t h) {
    const int m = 4, n = 3, k = 2;
    float *dA = dev_alloc<float>(m * k), *dB = dev_alloc<float>(k * n), *dC = dev_alloc<float>(m * n);
    float *dCsmall = dev_alloc<float>(m * n - 1);
    static float hostA[64];
    float one = 1, zero = 0;
    expect_report("host A", [&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, hostA, m, dB, k, &zero, dC, m); },
                  {"cublasSgemm", "A"});
    expect_report("C one element short",
                  [&] { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m, dB, k, &zero, dCsmall, m); },
                  {"cublasSgemm", "C"});
    expect_report("B read past its end by ldb", [&] {
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m, dB, k + 1, &zero, dC, m);
    }, {"cublasSgemm", "B"});
    expect_report("strided batch past the end", [&] {
        cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dA, m, 0, dB, k, 0, &zero, dC, m, m * n, 2);
    }, {"cublasSgemmStridedBatched", "C (batch 1)"});
    std::vector<const float *> hostArr = {dA, dA};
    const float **devArr = (const float **)dev_upload(std::vector<const float *>{dA, hostA});
    const float **devB = (const float **)dev_upload(std::vector<const float *>{dB, dB});
    float **devC = (float **)dev_upload(std::vector<float *>{dC, dC});
    expect_report("host pointer array", [&] {
        cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, hostArr.data(), m, devB, k, &zero, devC, m, 2);
    }, {"cublasSgemmBatched", "Aarray"});
    expect_report("host pointer inside a device array", [&] {
        cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, devArr, m, devB, k, &zero, devC, m, 2);
    }, {"cublasSgemmBatched", "A (batch 1)"});
    expect_report("alpha in device memory, host pointer mode", [&] {
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dA, dA, m, dB, k, &zero, dC, m);
    }, {"cublasSgemm", "alpha"});
    cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(dCsmall), cudaFree(devArr), cudaFree(devB), cudaFree(devC);
}

/* Products large enough for OpenBLAS to split over worker threads: the emulator opens device
 * memory to the calling thread only, so the shim must hand OpenBLAS host copies (a worker
 * touching the device heap is reported as host code dereferencing device memory). */
static void test_threaded_openblas(cublasHandle_t h) {
    openblas_set_num_threads(4);
    for (Kind kd : {K_S, K_D}) {
        test_gemm(h, kd, CUBLAS_OP_N, CUBLAS_OP_T, 192, 160, 128, 1.0, 0.0);
        test_gemm(h, kd, CUBLAS_OP_T, CUBLAS_OP_N, 160, 192, 144, 0.5, 0.5);
    }
    openblas_set_num_threads(1);
}

int main() {
    cublasHandle_t h;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    const cublasOperation_t ops[2] = {CUBLAS_OP_N, CUBLAS_OP_T};
    for (int kd = K_S; kd <= K_EX_F32_TF32; kd++)
        for (cublasOperation_t ta : ops)
            for (cublasOperation_t tb : ops)
                for (double beta : {0.0, 0.5}) {
                    test_gemm(h, (Kind)kd, ta, tb, 5, 7, 3, 1.0, beta);
                    test_gemm(h, (Kind)kd, ta, tb, 6, 2, 9, -1.5, beta);
                    if (kd != K_EX_F32_TF32) test_batched(h, (Kind)kd, ta, tb, beta);
                }
    test_gemm(h, K_S, CUBLAS_OP_T, CUBLAS_OP_N, 33, 17, 65, 1.0, 0.0); /* larger than OpenBLAS's small-matrix path */
    test_statuses(h);
    test_k0(h);
    test_device_pointer_mode(h);
    test_tf32_math_mode(h);
    test_threaded_openblas(h);
    test_reports(h);
    CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS, "cublasDestroy");
    return finish("cuemu cublas");
}
