/* tensor/cuda/cuda_blas.cu — matmul on cuBLAS. The operand-layout rule is the CPU's
 * (tensor/cpu/cpu_blas.c): the last two dims of a and b go to BLAS without a copy when they
 * are row- or column-major, otherwise they are made contiguous first. cuBLAS is column-major,
 * so the row-major product C = A·B (n×m) is computed as Cᵀ = Bᵀ·Aᵀ (m×n, ldc = m): a
 * row-major operand is its transpose seen column-major, which swaps the operands and keeps
 * each one's transpose flag. Batches: folded into one GEMM when b is shared and a's batches
 * are packed (the Linear-layer case), one strided-batched call when each operand's batch
 * offsets are t·stride (stride 0 for a broadcast operand), else pointer arrays. The default
 * math mode is kept (no TF32), so f32 results are true f32 products. bf16 a and b go through
 * the Ex entry points (CUDA_R_16BF operands, CUDA_R_32F output, CUBLAS_COMPUTE_32F: tensor-core
 * products accumulated in f32). */
#include <cublas_v2.h>
#include <limits.h>

#include <mutex>
#include <vector>

#include "cuda_kernels.h"

static cublasHandle_t blas_handle(void) {
    static cublasHandle_t h;
    static std::once_flag once;
    std::call_once(once, [] {
        cublasStatus_t st = cublasCreate(&h);
        if (st != CUBLAS_STATUS_SUCCESS) tensor_fail("matmul", "cublasCreate failed (status %d)", (int)st);
    });
    return h;
}

static void blas_check(cublasStatus_t st) {
    if (st != CUBLAS_STATUS_SUCCESS) tensor_fail("matmul", "cuBLAS error (status %d)", (int)st);
}

struct MatLayout {
    bool trans;
    int64_t ld;
    bool ok;
};

static MatLayout mat_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
    if (cols == 1) sc = 1;
    if (rows == 1) sr = cols;
    if (sc == 1 && sr >= cols && sr >= 1) return MatLayout{false, sr, true};
    if (sr == 1 && sc >= rows && sc >= 1) return MatLayout{true, sc, true};
    return MatLayout{false, 0, false};
}

static int to_int(int64_t v) {
    if (v > INT_MAX) tensor_fail("matmul", "dimension %lld exceeds cuBLAS's int range", (long long)v);
    return (int)v;
}

/* Whether the offsets of batch t = Σ idx_i · stride_i are t · step for all t. */
static bool batch_regular(int nb, const int64_t *shape, const int64_t *stride, int64_t *step) {
    int64_t expect = -1;
    *step = 0;
    for (int i = nb - 1; i >= 0; i--) {
        if (shape[i] == 1) continue;
        if (expect < 0) *step = stride[i];
        else if (stride[i] != expect) return false;
        expect = stride[i] * shape[i];
    }
    return true;
}

void cu_matmul(Tensor *out, const Tensor *a, const Tensor *b) {
    int nd = out->ndim, nb = nd - 2;
    int64_t n = out->shape[nd - 2], m = out->shape[nd - 1], k = a->shape[nd - 1];
    if (n == 0 || m == 0) return;
    int64_t batch = 1;
    for (int i = 0; i < nb; i++) batch *= out->shape[i];
    if (batch == 0) return;
    if (k == 0) {
        cu_fill(out, 0);
        return;
    }
    MatLayout la = mat_layout(n, k, a->stride[nd - 2], a->stride[nd - 1]);
    MatLayout lb = mat_layout(k, m, b->stride[nd - 2], b->stride[nd - 1]);
    if (!la.ok) a = tensor_contig_raw(a), la = mat_layout(n, k, a->stride[nd - 2], a->stride[nd - 1]);
    if (!lb.ok) b = tensor_contig_raw(b), lb = mat_layout(k, m, b->stride[nd - 2], b->stride[nd - 1]);
    bool bf16 = a->dtype == TENSOR_BF16, f32 = !bf16 && out->dtype == TENSOR_F32;
    size_t es = tensor_dtype_size(a->dtype), eo = tensor_dtype_size(out->dtype); /* in, out element sizes */
    const cudaDataType_t ab16 = CUDA_R_16BF, o32 = CUDA_R_32F;
    const cublasComputeType_t c32 = CUBLAS_COMPUTE_32F;
    const char *pa = (const char *)tensor_data_ptr(a), *pb = (const char *)tensor_data_ptr(b);
    char *po = (char *)tensor_data_ptr(out);
    cublasHandle_t h = blas_handle();
    cublasOperation_t opa = la.trans ? CUBLAS_OP_T : CUBLAS_OP_N, opb = lb.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;

    /* fold: b the same for every batch and a's batch dims packed row after row */
    bool b_shared = true, a_packed = !la.trans;
    int64_t expect = n * la.ld;
    for (int i = nb - 1; i >= 0; i--) {
        if (out->shape[i] == 1) continue;
        if (b->stride[i] != 0) b_shared = false;
        if (a->stride[i] != expect) a_packed = false;
        expect *= out->shape[i];
    }
    if (batch == 1 || (b_shared && a_packed)) {
        int M = to_int(m), N = to_int(batch * n), K = to_int(k);
        if (bf16)
            blas_check(cublasGemmEx(h, opb, opa, M, N, K, &one_f, pb, ab16, to_int(lb.ld), pa, ab16, to_int(la.ld),
                                    &zero_f, po, o32, M, c32, CUBLAS_GEMM_DEFAULT));
        else if (f32)
            blas_check(cublasSgemm(h, opb, opa, M, N, K, &one_f, (const float *)pb, to_int(lb.ld), (const float *)pa,
                                   to_int(la.ld), &zero_f, (float *)po, M));
        else
            blas_check(cublasDgemm(h, opb, opa, M, N, K, &one_d, (const double *)pb, to_int(lb.ld), (const double *)pa,
                                   to_int(la.ld), &zero_d, (double *)po, M));
        return;
    }
    int M = to_int(m), N = to_int(n), K = to_int(k), LDA = to_int(la.ld), LDB = to_int(lb.ld);
    int B = to_int(batch);
    int64_t sa, sb;
    if (batch_regular(nb, out->shape, a->stride, &sa) && batch_regular(nb, out->shape, b->stride, &sb)) {
        if (bf16)
            blas_check(cublasGemmStridedBatchedEx(h, opb, opa, M, N, K, &one_f, pb, ab16, LDB, sb, pa, ab16, LDA, sa,
                                                  &zero_f, po, o32, M, n * m, B, c32, CUBLAS_GEMM_DEFAULT));
        else if (f32)
            blas_check(cublasSgemmStridedBatched(h, opb, opa, M, N, K, &one_f, (const float *)pb, LDB, sb,
                                                 (const float *)pa, LDA, sa, &zero_f, (float *)po, M, n * m, B));
        else
            blas_check(cublasDgemmStridedBatched(h, opb, opa, M, N, K, &one_d, (const double *)pb, LDB, sb,
                                                 (const double *)pa, LDA, sa, &zero_d, (double *)po, M, n * m, B));
        return;
    }
    /* irregular batch strides: per-batch pointers, computed here and copied to the device */
    std::vector<const void *> ptrs((size_t)batch * 3);
    for (int64_t t = 0; t < batch; t++) {
        int64_t oa = 0, ob = 0, r = t;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t idx = r % out->shape[i];
            r /= out->shape[i];
            oa += idx * a->stride[i];
            ob += idx * b->stride[i];
        }
        ptrs[(size_t)t] = pb + ob * (int64_t)es;
        ptrs[(size_t)(batch + t)] = pa + oa * (int64_t)es;
        ptrs[(size_t)(2 * batch + t)] = po + t * n * m * (int64_t)eo;
    }
    size_t nbytes = ptrs.size() * sizeof(void *);
    void **dptr = (void **)cu_pool_alloc(nbytes);
    cu_check("matmul", cudaMemcpy(dptr, ptrs.data(), nbytes, cudaMemcpyHostToDevice));
    if (bf16)
        blas_check(cublasGemmBatchedEx(h, opb, opa, M, N, K, &one_f, (const void *const *)dptr, ab16, LDB,
                                       (const void *const *)(dptr + batch), ab16, LDA, &zero_f,
                                       (void *const *)(dptr + 2 * batch), o32, M, B, c32, CUBLAS_GEMM_DEFAULT));
    else if (f32)
        blas_check(cublasSgemmBatched(h, opb, opa, M, N, K, &one_f, (const float *const *)dptr, LDB,
                                      (const float *const *)(dptr + batch), LDA, &zero_f, (float *const *)(dptr + 2 * batch),
                                      M, B));
    else
        blas_check(cublasDgemmBatched(h, opb, opa, M, N, K, &one_d, (const double *const *)dptr, LDB,
                                      (const double *const *)(dptr + batch), LDA, &zero_d,
                                      (double *const *)(dptr + 2 * batch), M, B));
    /* the call is queued on the default stream; later users of this block are queued after it */
    cu_pool_release(dptr);
}
