/* tensor/cuda/cuda_index.cu — index_select, gather, scatter_add and the closed-form batched
 * 3×3 determinant and inverse (tensor/cpu/cpu_misc.c). Index tensors and pointers arrive on
 * the device: the op front-ends (tensor/ops_index.c) validate a host copy first, so kernels
 * never range-check. scatter_add accumulates with atomicAdd (f64 atomics exist on sm_60+):
 * the order of additions into one slot differs from the CPU's, so results agree to rounding. */
#include <string.h>

#include "cuda_kernels.h"

/* ---- index_select: (A, N, C) -> (A, K, C) ------------------------------------------------ */

template <typename W>
__global__ void k_index_select(W *o, const W *x, const int64_t *index, int64_t A, int64_t N, int64_t K, int64_t C) {
    CU_LOOP(e, A * K * C) {
        int64_t c = e % C, ak = e / C, k = ak % K, a = ak / K;
        o[e] = x[(a * N + index[k]) * C + c];
    }
}

void cu_index_select(Tensor *out, const Tensor *x, const int64_t *index, int64_t A, int64_t N, int64_t K, int64_t C) {
    int64_t n = A * K * C;
    if (tensor_dtype_size(x->dtype) == 4)
        cu_launch("index_select", k_index_select<uint32_t>, n, (uint32_t *)tensor_data_ptr(out),
                  (const uint32_t *)tensor_data_ptr(x), index, A, N, K, C);
    else
        cu_launch("index_select", k_index_select<uint64_t>, n, (uint64_t *)tensor_data_ptr(out),
                  (const uint64_t *)tensor_data_ptr(x), index, A, N, K, C);
}

/* ---- gather / scatter_add ---------------------------------------------------------------- */

/* Shapes for remap: element e is row-major in `shape` (the index's); its offset in the
 * contiguous tensor of shape `full` has the coordinate along dim replaced by the index. */
struct Remap {
    int nd, dim;
    int64_t shape[TENSOR_MAX_DIMS], full[TENSOR_MAX_DIMS];
};

__device__ __forceinline__ int64_t remap(const Remap &r, int64_t e, int64_t repl) {
    int64_t off = 0, mul = 1;
    for (int d = r.nd - 1; d >= 0; d--) {
        int64_t i = e % r.shape[d];
        e /= r.shape[d];
        off += (d == r.dim ? repl : i) * mul;
        mul *= r.full[d];
    }
    return off;
}

static Remap make_remap(const Tensor *index, const Tensor *full, int dim) {
    Remap r;
    memset(&r, 0, sizeof r);
    r.nd = index->ndim;
    r.dim = dim;
    for (int d = 0; d < index->ndim; d++) r.shape[d] = index->shape[d], r.full[d] = full->shape[d];
    return r;
}

template <typename W>
__global__ void k_gather(W *o, const W *x, const int64_t *idx, Remap r, int64_t n) {
    CU_LOOP(e, n) o[e] = x[remap(r, e, idx[e])];
}

void cu_gather(Tensor *out, const Tensor *x, int dim, const Tensor *index) {
    int64_t n = tensor_numel(index);
    Remap r = make_remap(index, x, dim);
    const int64_t *idx = (const int64_t *)tensor_data_ptr(index);
    if (tensor_dtype_size(x->dtype) == 4)
        cu_launch("gather", k_gather<uint32_t>, n, (uint32_t *)tensor_data_ptr(out), (const uint32_t *)tensor_data_ptr(x),
                  idx, r, n);
    else
        cu_launch("gather", k_gather<uint64_t>, n, (uint64_t *)tensor_data_ptr(out), (const uint64_t *)tensor_data_ptr(x),
                  idx, r, n);
}

template <typename T>
__global__ void k_scatter_add(T *o, const T *src, const int64_t *idx, Remap r, int64_t n) {
    CU_LOOP(e, n) atomicAdd(o + remap(r, e, idx[e]), src[e]);
}

void cu_scatter_add(Tensor *out, int dim, const Tensor *index, const Tensor *src) {
    int64_t n = tensor_numel(index);
    Remap r = make_remap(index, out, dim);
    const int64_t *idx = (const int64_t *)tensor_data_ptr(index);
    if (out->dtype == TENSOR_F32)
        cu_launch("scatter_add", k_scatter_add<float>, n, (float *)tensor_data_ptr(out), (const float *)tensor_data_ptr(src),
                  idx, r, n);
    else if (out->dtype == TENSOR_F64)
        cu_launch("scatter_add", k_scatter_add<double>, n, (double *)tensor_data_ptr(out),
                  (const double *)tensor_data_ptr(src), idx, r, n);
    else
        tensor_fail("scatter_add", "needs f32 or f64");
}

/* ---- det3 / inv3: cofactor expansion along the first row; A⁻¹ = adj(A) / det(A) ---------- */

template <typename T>
__global__ void k_det3(T *o, const T *mm, int64_t n) {
    CU_LOOP(i, n) {
        const T *m = mm + 9 * i;
        o[i] = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    }
}

template <typename T>
__global__ void k_inv3(T *oo, const T *mm, int64_t n) {
    CU_LOOP(i, n) {
        const T *m = mm + 9 * i;
        T *o = oo + 9 * i;
        T c00 = m[4] * m[8] - m[5] * m[7], c01 = m[5] * m[6] - m[3] * m[8], c02 = m[3] * m[7] - m[4] * m[6];
        T det = m[0] * c00 + m[1] * c01 + m[2] * c02, r = (T)1 / det;
        o[0] = c00 * r;
        o[1] = (m[2] * m[7] - m[1] * m[8]) * r;
        o[2] = (m[1] * m[5] - m[2] * m[4]) * r;
        o[3] = c01 * r;
        o[4] = (m[0] * m[8] - m[2] * m[6]) * r;
        o[5] = (m[2] * m[3] - m[0] * m[5]) * r;
        o[6] = c02 * r;
        o[7] = (m[1] * m[6] - m[0] * m[7]) * r;
        o[8] = (m[0] * m[4] - m[1] * m[3]) * r;
    }
}

void cu_det3(Tensor *out, const Tensor *x, int64_t n) {
    if (x->dtype == TENSOR_F32)
        cu_launch("det3", k_det3<float>, n, (float *)tensor_data_ptr(out), (const float *)tensor_data_ptr(x), n);
    else
        cu_launch("det3", k_det3<double>, n, (double *)tensor_data_ptr(out), (const double *)tensor_data_ptr(x), n);
}

void cu_inv3(Tensor *out, const Tensor *x, int64_t n) {
    if (x->dtype == TENSOR_F32)
        cu_launch("inv3", k_inv3<float>, n, (float *)tensor_data_ptr(out), (const float *)tensor_data_ptr(x), n);
    else
        cu_launch("inv3", k_inv3<double>, n, (double *)tensor_data_ptr(out), (const double *)tensor_data_ptr(x), n);
}
