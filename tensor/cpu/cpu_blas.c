/* tensor/cpu/cpu_blas.c — matmul on OpenBLAS. Strided operands go to BLAS without a copy when
 * their last two dims are row- or column-major; a batch that shares one right-hand matrix is
 * folded into a single GEMM (the Linear-layer case); small batched products run one GEMM per
 * thread (OpenBLAS's OpenMP build keeps calls inside a parallel region single-threaded).
 * bf16 operands are widened to f32 and multiplied by sgemm (see matmul_bf16). */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "../internal.h"
#include "cpu.h"
#include "cpu_iter.h"

typedef struct {
    bool trans;
    int64_t ld;
    bool ok;
} MatLayout;

static MatLayout mat_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
    if (cols == 1) sc = 1;
    if (rows == 1) sr = cols;
    if (sc == 1 && sr >= cols && sr >= 1) return (MatLayout){false, sr, true};
    if (sr == 1 && sc >= rows && sc >= 1) return (MatLayout){true, sc, true};
    return (MatLayout){false, 0, false};
}

static void gemm(TensorDType dt, MatLayout la, MatLayout lb, int64_t n, int64_t m, int64_t k, const void *a,
                 const void *b, void *c, int64_t ldc) {
    CBLAS_TRANSPOSE ta = la.trans ? CblasTrans : CblasNoTrans, tb = lb.trans ? CblasTrans : CblasNoTrans;
    /* OpenBLAS (its OpenMP build) threads every product above 64³ over omp_get_max_threads(),
     * and each threaded call wakes the team (~20-50 µs with bounded waiting, base/par.h): here a
     * call gets one thread per 4M multiply-adds (~0.3 ms of one core), at most the team size
     * base_par_threads would give, for this call only */
    int max = 0, use = 0;
    if (n * m * k >= ((int64_t)1 << 18) && !omp_in_parallel()) {
        max = omp_get_max_threads();
        use = base_par_threads((n * m * k) >> 22, BASE_PAR_GRAIN);
        if (use != max) omp_set_num_threads(use);
    }
    if (dt == TENSOR_F32)
        cblas_sgemm(CblasRowMajor, ta, tb, (int)n, (int)m, (int)k, 1.0f, a, (int)la.ld, b, (int)lb.ld, 0.0f, c, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, tb, (int)n, (int)m, (int)k, 1.0, a, (int)la.ld, b, (int)lb.ld, 0.0, c, (int)ldc);
    if (use && use != max) omp_set_num_threads(max);
}

/* ---- bf16 operands ---------------------------------------------------------------------------
 * OpenBLAS 0.3.21 as Debian ships it declares cblas_sbgemm in cblas.h but does not export it
 * (built without BUILD_BFLOAT16: `nm -D libopenblas.so` has no sbgemm). So each bf16 operand is
 * widened to f32 — exactly, bf16 → f32 loses nothing — over the span of storage its view
 * covers, keeping the view's strides (broadcast batch dims stay stride 0, transposes stay
 * transposed), and the f32 path multiplies the copies: the products and the f32 accumulation
 * of a bf16 GEMM, at f32 speed. The copies are scratch, freed before returning. */
typedef struct {
    Tensor t;
    TensorStorage st;
} Widened;

static void widen_bf16(const Tensor *x, Widened *w) {
    int64_t lo = 0, hi = 0; /* element offsets of the view's extremes, relative to its first */
    for (int i = 0; i < x->ndim; i++) {
        int64_t e = (x->shape[i] - 1) * x->stride[i];
        if (e < 0) lo += e;
        else hi += e;
    }
    int64_t n = hi - lo + 1;
    float *buf = malloc(sizeof(float) * (size_t)n);
    if (!buf) tensor_fail("matmul", "out of memory widening a bf16 operand (%lld elements)", (long long)n);
    const uint16_t *src = (const uint16_t *)x->storage->data + x->offset + lo;
    int par_nt = base_par_threads(n, 1);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < n; i++) buf[i] = tensor_bf16_to_f32(src[i]);
    w->st = (TensorStorage){.data = buf, .nbytes = sizeof(float) * (size_t)n, .device = TENSOR_CPU};
    w->t = *x;
    w->t.storage = &w->st;
    w->t.dtype = TENSOR_F32;
    w->t.offset = -lo;
    w->t.requires_grad = false, w->t.grad = NULL, w->t.node = NULL;
}

static void matmul_bf16(Tensor *out, const Tensor *a, const Tensor *b) {
    Widened wa, wb;
    widen_bf16(a, &wa);
    widen_bf16(b, &wb);
    cpu_matmul(out, &wa.t, &wb.t);
    free(wa.st.data);
    free(wb.st.data);
}

void cpu_matmul(Tensor *out, const Tensor *a, const Tensor *b) {
    int nd = out->ndim;
    int64_t n = out->shape[nd - 2], m = out->shape[nd - 1], k = a->shape[nd - 1];
    if (tensor_numel(out) == 0) return;
    if (k == 0) {
        cpu_fill(out, 0);
        return;
    }
    if (a->dtype == TENSOR_BF16) {
        matmul_bf16(out, a, b);
        return;
    }
    MatLayout la = mat_layout(n, k, a->stride[nd - 2], a->stride[nd - 1]);
    MatLayout lb = mat_layout(k, m, b->stride[nd - 2], b->stride[nd - 1]);
    if (!la.ok) a = tensor_contig_raw(a), la = mat_layout(n, k, a->stride[nd - 2], a->stride[nd - 1]);
    if (!lb.ok) b = tensor_contig_raw(b), lb = mat_layout(k, m, b->stride[nd - 2], b->stride[nd - 1]);
    int64_t batch = 1;
    for (int i = 0; i < nd - 2; i++) batch *= out->shape[i];
    size_t es = tensor_dtype_size(out->dtype);
    const char *pa = tensor_data_ptr(a), *pb = tensor_data_ptr(b);
    char *po = tensor_data_ptr(out);

    /* fold: b the same for every batch and a's batch dims packed row after row */
    bool b_shared = true, a_packed = !la.trans;
    int64_t expect = n * la.ld;
    for (int i = nd - 3; i >= 0; i--) {
        if (out->shape[i] == 1) continue;
        if (b->stride[i] != 0) b_shared = false;
        if (a->stride[i] != expect) a_packed = false;
        expect *= out->shape[i];
    }
    if (batch == 1 || (b_shared && a_packed)) {
        gemm(out->dtype, la, lb, batch * n, m, k, pa, pb, po, m);
        return;
    }
    bool parallel = batch >= 2 && n * m * k <= ((int64_t)1 << 21);
    int par_nt = parallel ? base_par_threads(batch, n * m * k / 8 + 1) : 1;
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t t = 0; t < batch; t++) {
        int64_t oa = 0, ob = 0, r = t;
        for (int i = nd - 3; i >= 0; i--) {
            int64_t idx = r % out->shape[i];
            r /= out->shape[i];
            oa += idx * a->stride[i];
            ob += idx * b->stride[i];
        }
        gemm(out->dtype, la, lb, n, m, k, pa + oa * (int64_t)es, pb + ob * (int64_t)es, po + t * n * m * (int64_t)es, m);
    }
}
