/* tools/cuemu/cublas.cpp — the emulator's cuBLAS (include/cublas_v2.h): the GEMM family on
 * OpenBLAS. cuBLAS and cblas's CblasColMajor agree on the meaning of op, m, n, k and the leading
 * dimensions, so a call maps onto cblas_?gemm one matrix at a time; what cuBLAS adds is kept
 * here: its argument checks and status codes, beta == 0 meaning C is not read (cuBLAS documents
 * it; OpenBLAS is not relied on for it: C is not even copied then), the Ex entry points' data types,
 * strided and pointer-array batches, and pointer mode (alpha/beta on the device). The emulator
 * adds the check a GPU does not make: every matrix, pointer array and device scalar lies in
 * device memory over the exact extent read or written, else cuemu_fail names the call, the
 * argument and the batch. */
#include <cublas_v2.h>

#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "cuemu.h"
#include "cuemu_float16.h"

struct cublasContext {
    cudaStream_t stream;
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
};

/* ---- element types -------------------------------------------------------------------- */

/* TF32: f32 with a 10-bit mantissa, round to nearest even */
static float round_tf32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
    memcpy(&f, &u, 4);
    return f;
}

static size_t type_size(cudaDataType_t t) {
    switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    default: return 0;
    }
}

static float load_f32(const void *p, size_t i, cudaDataType_t t) {
    switch (t) {
    case CUDA_R_16BF: return bf16_to_f32(((const uint16_t *)p)[i]);
    case CUDA_R_16F: return f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void store_f32(void *p, size_t i, cudaDataType_t t, float v) {
    switch (t) {
    case CUDA_R_16BF: ((uint16_t *)p)[i] = f32_to_bf16(v); break;
    case CUDA_R_16F: ((uint16_t *)p)[i] = f32_to_f16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* ---- one GEMM description ------------------------------------------------------------- */

enum Arith {
    ARITH_F64,  /* double operands and accumulation */
    ARITH_F32,  /* float accumulation, operands as given (widened when 16-bit) */
    ARITH_TF32, /* float accumulation, operands rounded to TF32 */
    ARITH_BF16, /* float accumulation, operands rounded to bf16 */
};

struct Gemm {
    const char *fn;
    cublasHandle_t h;
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc;
    cudaDataType_t at, bt, ct;
    Arith arith;
    double alpha, beta; /* read from host or device per the pointer mode */
};

static bool op_valid(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
static int imax1(int v) { return v > 1 ? v : 1; }

/* cuBLAS's documented argument errors for ?gemm / gemmEx and their batched forms */
static cublasStatus_t check_args(const Gemm &g, const void *alpha, const void *beta, int batch) {
    if (!g.h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!op_valid(g.ta) || !op_valid(g.tb)) return CUBLAS_STATUS_INVALID_VALUE;
    if (g.m < 0 || g.n < 0 || g.k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (g.lda < imax1(g.ta == CUBLAS_OP_N ? g.m : g.k)) return CUBLAS_STATUS_INVALID_VALUE;
    if (g.ldb < imax1(g.tb == CUBLAS_OP_N ? g.k : g.n)) return CUBLAS_STATUS_INVALID_VALUE;
    if (g.ldc < imax1(g.m)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* alpha and beta: host scalars, or device scalars in CUBLAS_POINTER_MODE_DEVICE */
static void read_scalars(Gemm &g, const void *alpha, const void *beta, bool f64) {
    size_t es = f64 ? 8 : 4;
    bool dev = g.h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    char what[160];
    if (dev) {
        snprintf(what, sizeof what, "%s: alpha (pointer mode device)", g.fn);
        cuemu_require_device(alpha, es, what);
        snprintf(what, sizeof what, "%s: beta (pointer mode device)", g.fn);
        cuemu_require_device(beta, es, what);
        cuemu_host_access_begin();
    } else {
        snprintf(what, sizeof what, "%s: alpha (pointer mode host)", g.fn);
        cuemu_require_host(alpha, es, what);
        snprintf(what, sizeof what, "%s: beta (pointer mode host)", g.fn);
        cuemu_require_host(beta, es, what);
    }
    g.alpha = f64 ? *(const double *)alpha : *(const float *)alpha;
    g.beta = f64 ? *(const double *)beta : *(const float *)beta;
    if (dev) cuemu_host_access_end();
}

/* elements spanned by a column-major rows x cols matrix with leading dimension ld */
static size_t extent(int rows, int cols, int ld) {
    return rows == 0 || cols == 0 ? 0 : (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
}

static bool reads_ab(const Gemm &g) { return g.k > 0 && g.alpha != 0; }

/* the device checks of one batch's matrices (batch < 0: an unbatched call) */
static void require_mats(const Gemm &g, const void *A, const void *B, const void *C, int batch) {
    char what[200], at[32] = "";
    if (batch >= 0) snprintf(at, sizeof at, " (batch %d)", batch);
    if (reads_ab(g)) {
        int ar = g.ta == CUBLAS_OP_N ? g.m : g.k, ac = g.ta == CUBLAS_OP_N ? g.k : g.m;
        int br = g.tb == CUBLAS_OP_N ? g.k : g.n, bc = g.tb == CUBLAS_OP_N ? g.n : g.k;
        snprintf(what, sizeof what, "%s: A%s, %s %dx%d lda %d", g.fn, at, g.ta == CUBLAS_OP_N ? "N" : "T", ar, ac, g.lda);
        cuemu_require_device(A, extent(ar, ac, g.lda) * type_size(g.at), what);
        snprintf(what, sizeof what, "%s: B%s, %s %dx%d ldb %d", g.fn, at, g.tb == CUBLAS_OP_N ? "N" : "T", br, bc, g.ldb);
        cuemu_require_device(B, extent(br, bc, g.ldb) * type_size(g.bt), what);
    }
    snprintf(what, sizeof what, "%s: C%s, %dx%d ldc %d", g.fn, at, g.m, g.n, g.ldc);
    cuemu_require_device(C, extent(g.m, g.n, g.ldc) * type_size(g.ct), what);
}

static CBLAS_TRANSPOSE cb_op(cublasOperation_t op) { return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans; }

/* a rows x cols operand (leading dimension ld) as a packed host copy, rounded per the arithmetic */
static void pack_f32(std::vector<float> &out, const void *p, cudaDataType_t t, int rows, int cols, int ld, Arith ar) {
    out.resize((size_t)rows * (size_t)cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            float v = load_f32(p, (size_t)j * (size_t)ld + (size_t)i, t);
            if (ar == ARITH_TF32) v = round_tf32(v);
            else if (ar == ARITH_BF16) v = bf16_to_f32(f32_to_bf16(v));
            out[(size_t)j * (size_t)rows + (size_t)i] = v;
        }
}

static void pack_f64(std::vector<double> &out, const double *p, int rows, int cols, int ld) {
    out.resize((size_t)rows * (size_t)cols);
    for (int j = 0; j < cols; j++)
        memcpy(out.data() + (size_t)j * (size_t)rows, p + (size_t)j * (size_t)ld, sizeof(double) * (size_t)rows);
}

/* C = alpha op(A) op(B) + beta C for one matrix; device memory is open (host access).
 * OpenBLAS only ever sees host copies: it may run the product on worker threads, and the
 * emulator opens the device heap to the calling thread alone (any other thread touching it is
 * reported as host code dereferencing device memory). The copies are made and written back here,
 * on the calling thread; C is read only when beta != 0 (cuBLAS: C need not be initialized when
 * beta is zero). */
static void gemm_one(const Gemm &g, const void *A, const void *B, void *C) {
    const int m = g.m, n = g.n, k = g.k;
    const int ar = g.ta == CUBLAS_OP_N ? m : k, ac = g.ta == CUBLAS_OP_N ? k : m;
    const int br = g.tb == CUBLAS_OP_N ? k : n, bc = g.tb == CUBLAS_OP_N ? n : k;
    if (g.arith == ARITH_F64) {
        std::vector<double> a, b, c((size_t)m * (size_t)n, 0.0);
        double *dc = (double *)C;
        if (g.beta != 0)
            for (int j = 0; j < n; j++)
                memcpy(c.data() + (size_t)j * (size_t)m, dc + (size_t)j * (size_t)g.ldc, sizeof(double) * (size_t)m);
        if (reads_ab(g)) {
            pack_f64(a, (const double *)A, ar, ac, g.lda);
            pack_f64(b, (const double *)B, br, bc, g.ldb);
            cblas_dgemm(CblasColMajor, cb_op(g.ta), cb_op(g.tb), m, n, k, g.alpha, a.data(), ar, b.data(), br, g.beta,
                        c.data(), m);
        } else if (g.beta != 1)
            for (double &v : c) v *= g.beta;
        for (int j = 0; j < n; j++)
            memcpy(dc + (size_t)j * (size_t)g.ldc, c.data() + (size_t)j * (size_t)m, sizeof(double) * (size_t)m);
        return;
    }
    const float alpha = (float)g.alpha, beta = (float)g.beta;
    std::vector<float> a, b, c((size_t)m * (size_t)n, 0.0f);
    if (beta != 0)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                c[(size_t)j * (size_t)m + (size_t)i] = load_f32(C, (size_t)j * (size_t)g.ldc + (size_t)i, g.ct);
    if (reads_ab(g)) {
        pack_f32(a, A, g.at, ar, ac, g.lda, g.arith);
        pack_f32(b, B, g.bt, br, bc, g.ldb, g.arith);
        cblas_sgemm(CblasColMajor, cb_op(g.ta), cb_op(g.tb), m, n, k, alpha, a.data(), ar, b.data(), br, beta, c.data(),
                    m);
    } else if (beta != 1)
        for (float &v : c) v *= beta;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            store_f32(C, (size_t)j * (size_t)g.ldc + (size_t)i, g.ct, c[(size_t)j * (size_t)m + (size_t)i]);
}

static bool empty(const Gemm &g, int batch) { return g.m == 0 || g.n == 0 || batch == 0; }

/* strided batches (stride in elements; batch < 0: one unbatched matrix) */
static cublasStatus_t run_strided(Gemm &g, const void *alpha, const void *A, long long sa, const void *B, long long sb,
                                  const void *beta, void *C, long long sc, int batch) {
    cublasStatus_t st = check_args(g, alpha, beta, batch < 0 ? 1 : batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (empty(g, batch < 0 ? 1 : batch)) return CUBLAS_STATUS_SUCCESS;
    read_scalars(g, alpha, beta, g.arith == ARITH_F64);
    int nb = batch < 0 ? 1 : batch;
    size_t ea = type_size(g.at), eb = type_size(g.bt), ec = type_size(g.ct);
    for (int t = 0; t < nb; t++)
        require_mats(g, (const char *)A + t * sa * (long long)ea, (const char *)B + t * sb * (long long)eb,
                     (char *)C + t * sc * (long long)ec, batch < 0 ? -1 : t);
    cuemu_host_access_begin();
    for (int t = 0; t < nb; t++)
        gemm_one(g, (const char *)A + t * sa * (long long)ea, (const char *)B + t * sb * (long long)eb,
                 (char *)C + t * sc * (long long)ec);
    cuemu_host_access_end();
    return CUBLAS_STATUS_SUCCESS;
}

/* pointer-array batches: the arrays themselves live in device memory, as cuBLAS requires */
static cublasStatus_t run_arrays(Gemm &g, const void *alpha, const void *const *A, const void *const *B,
                                 const void *beta, void *const *C, int batch) {
    cublasStatus_t st = check_args(g, alpha, beta, batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (empty(g, batch)) return CUBLAS_STATUS_SUCCESS;
    read_scalars(g, alpha, beta, g.arith == ARITH_F64);
    char what[160];
    size_t bytes = sizeof(void *) * (size_t)batch;
    if (reads_ab(g)) {
        snprintf(what, sizeof what, "%s: Aarray (%d pointers)", g.fn, batch);
        cuemu_require_device(A, bytes, what);
        snprintf(what, sizeof what, "%s: Barray (%d pointers)", g.fn, batch);
        cuemu_require_device(B, bytes, what);
    }
    snprintf(what, sizeof what, "%s: Carray (%d pointers)", g.fn, batch);
    cuemu_require_device(C, bytes, what);
    std::vector<const void *> pa((size_t)batch), pb((size_t)batch);
    std::vector<void *> pc((size_t)batch);
    cuemu_host_access_begin();
    if (reads_ab(g)) {
        memcpy(pa.data(), A, bytes);
        memcpy(pb.data(), B, bytes);
    }
    memcpy(pc.data(), C, bytes);
    cuemu_host_access_end();
    for (int t = 0; t < batch; t++) require_mats(g, pa[(size_t)t], pb[(size_t)t], pc[(size_t)t], t);
    cuemu_host_access_begin();
    for (int t = 0; t < batch; t++) gemm_one(g, pa[(size_t)t], pb[(size_t)t], pc[(size_t)t]);
    cuemu_host_access_end();
    return CUBLAS_STATUS_SUCCESS;
}

static Gemm make(const char *fn, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                 int lda, int ldb, int ldc, cudaDataType_t t) {
    Gemm g;
    g.fn = fn, g.h = h, g.ta = ta, g.tb = tb, g.m = m, g.n = n, g.k = k, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
    g.at = g.bt = g.ct = t;
    /* a plain ?gemm: f32 products may use TF32 only when the handle's math mode allows it */
    g.arith = t == CUDA_R_64F ? ARITH_F64 : (h && h->math_mode == CUBLAS_TF32_TENSOR_OP_MATH ? ARITH_TF32 : ARITH_F32);
    g.alpha = g.beta = 0;
    return g;
}

/* the type combinations of cublasGemmEx (cuBLAS's table) this emulator computes; the others
 * (integer, complex, 16F compute) return NOT_SUPPORTED */
static cublasStatus_t ex_types(Gemm &g, cudaDataType_t at, cudaDataType_t bt, cudaDataType_t ct,
                               cublasComputeType_t ctype) {
    g.at = at, g.bt = bt, g.ct = ct;
    if (at != bt) return CUBLAS_STATUS_NOT_SUPPORTED;
    switch (ctype) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
        if (at != CUDA_R_64F || ct != CUDA_R_64F) return CUBLAS_STATUS_NOT_SUPPORTED;
        g.arith = ARITH_F64;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32: {
        bool ok = (at == CUDA_R_32F && ct == CUDA_R_32F) || (at == CUDA_R_16BF && (ct == CUDA_R_16BF || ct == CUDA_R_32F)) ||
                  (at == CUDA_R_16F && (ct == CUDA_R_16F || ct == CUDA_R_32F));
        if (!ok) return CUBLAS_STATUS_NOT_SUPPORTED;
        g.arith = ARITH_F32;
        /* the fast modes apply to f32 operands only (16-bit operands are exact in f32) */
        if (at == CUDA_R_32F) {
            if (ctype == CUBLAS_COMPUTE_32F_FAST_TF32) g.arith = ARITH_TF32;
            else if (ctype == CUBLAS_COMPUTE_32F_FAST_16BF) g.arith = ARITH_BF16;
            else if (ctype == CUBLAS_COMPUTE_32F && g.h && g.h->math_mode == CUBLAS_TF32_TENSOR_OP_MATH)
                g.arith = ARITH_TF32;
        }
        return CUBLAS_STATUS_SUCCESS;
    }
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* ---- the API ---------------------------------------------------------------------------- */

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    cublasHandle_t h = new cublasContext;
    h->stream = 0;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->math_mode = CUBLAS_DEFAULT_MATH;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base < 0 || base > 3) return CUBLAS_STATUS_INVALID_VALUE;
    handle->math_mode = (cublasMath_t)base;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version) {
    (void)handle;
    if (!version) return CUBLAS_STATUS_INVALID_VALUE;
    *version = 120000; /* the API level emulated: cuBLAS 12 */
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
    }
    return "unknown error";
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc) {
    Gemm g = make("cublasSgemm", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_32F);
    return run_strided(g, alpha, A, 0, B, 0, beta, C, 0, -1);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double *alpha, const double *A, int lda, const double *B, int ldb,
                              const double *beta, double *C, int ldc) {
    Gemm g = make("cublasDgemm", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_64F);
    return run_strided(g, alpha, A, 0, B, 0, beta, C, 0, -1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb, long long int strideB,
                                         const float *beta, float *C, int ldc, long long int strideC,
                                         int batchCount) {
    Gemm g = make("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_32F);
    if (batchCount < 0) return handle ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_INITIALIZED;
    return run_strided(g, alpha, A, strideA, B, strideB, beta, C, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double *alpha, const double *A, int lda,
                                         long long int strideA, const double *B, int ldb, long long int strideB,
                                         const double *beta, double *C, int ldc, long long int strideC,
                                         int batchCount) {
    Gemm g = make("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_64F);
    if (batchCount < 0) return handle ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_INITIALIZED;
    return run_strided(g, alpha, A, strideA, B, strideB, beta, C, strideC, batchCount);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float *alpha, const float *const Aarray[], int lda,
                                  const float *const Barray[], int ldb, const float *beta, float *const Carray[],
                                  int ldc, int batchCount) {
    Gemm g = make("cublasSgemmBatched", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_32F);
    return run_arrays(g, alpha, (const void *const *)Aarray, (const void *const *)Barray, beta, (void *const *)Carray,
                      batchCount);
}

cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double *alpha, const double *const Aarray[], int lda,
                                  const double *const Barray[], int ldb, const double *beta, double *const Carray[],
                                  int ldc, int batchCount) {
    Gemm g = make("cublasDgemmBatched", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_64F);
    return run_arrays(g, alpha, (const void *const *)Aarray, (const void *const *)Barray, beta, (void *const *)Carray,
                      batchCount);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType_t Atype, int lda, const void *B,
                            cudaDataType_t Btype, int ldb, const void *beta, void *C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void)algo; /* an algorithm choice changes speed, not the result the emulator models */
    Gemm g = make("cublasGemmEx", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_32F);
    cublasStatus_t st = check_args(g, alpha, beta, 1);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if ((st = ex_types(g, Atype, Btype, Ctype, computeType)) != CUBLAS_STATUS_SUCCESS) return st;
    return run_strided(g, alpha, A, 0, B, 0, beta, C, 0, -1);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void *alpha, const void *A, cudaDataType_t Atype,
                                          int lda, long long int strideA, const void *B, cudaDataType_t Btype, int ldb,
                                          long long int strideB, const void *beta, void *C, cudaDataType_t Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void)algo;
    Gemm g = make("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_32F);
    cublasStatus_t st = check_args(g, alpha, beta, batchCount);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if ((st = ex_types(g, Atype, Btype, Ctype, computeType)) != CUBLAS_STATUS_SUCCESS) return st;
    return run_strided(g, alpha, A, strideA, B, strideB, beta, C, strideC, batchCount);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void *alpha, const void *const Aarray[], cudaDataType_t Atype,
                                   int lda, const void *const Barray[], cudaDataType_t Btype, int ldb,
                                   const void *beta, void *const Carray[], cudaDataType_t Ctype, int ldc,
                                   int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void)algo;
    Gemm g = make("cublasGemmBatchedEx", handle, transa, transb, m, n, k, lda, ldb, ldc, CUDA_R_32F);
    cublasStatus_t st = check_args(g, alpha, beta, batchCount);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if ((st = ex_types(g, Atype, Btype, Ctype, computeType)) != CUBLAS_STATUS_SUCCESS) return st;
    return run_arrays(g, alpha, Aarray, Barray, beta, Carray, batchCount);
}

} /* extern "C" */
