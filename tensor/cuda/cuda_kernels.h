/* tensor/cuda/cuda_kernels.h — shared by the CUDA backend's translation units: the C headers
 * seen from C++, the error check, the one launch helper every elementwise kernel goes through,
 * the strided-geometry descriptor and the kernel entry points the backend table lists.
 * Contracts of the kernels are those of tensor/backend.h; tensor/cpu/ is the reference. */
#ifndef ANIMA_CUDA_KERNELS_H
#define ANIMA_CUDA_KERNELS_H

#include <cuda_runtime.h>
#include <stdint.h>

/* The tensor headers are C11: _Noreturn is not C++, and library code calls ops directly. */
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
#ifndef TENSOR_NO_SITE
#define TENSOR_NO_SITE
#endif
extern "C" {
#include "../backend.h"
#include "../internal.h"
}

/* Aborts through tensor_fail (one line naming the op) when a CUDA call failed. */
void cu_check(const char *op, cudaError_t err);

/* Device memory from the caching pool (cuda_runtime.cu); scratch for pointer arrays etc. */
void *cu_pool_alloc(size_t nbytes);
void cu_pool_release(void *p);

/* Grid-stride kernels: any grid covers any n, so the grid is capped (enough blocks to fill an
 * H200 several times over) and each thread walks i, i + gridDim*blockDim, ... . The emulated
 * build (tools/cuemu, `make test-cuda-emu`) sets a tiny cap so that the loops really loop. */
#define CU_THREADS 256
#ifndef CU_MAX_BLOCKS
#define CU_MAX_BLOCKS 65535
#endif
#define CU_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename... P, typename... A>
static inline void cu_launch(const char *op, void (*kernel)(P...), int64_t n, A... args) {
    if (n <= 0) return;
    int64_t blocks = (n + CU_THREADS - 1) / CU_THREADS;
    if (blocks > CU_MAX_BLOCKS) blocks = CU_MAX_BLOCKS;
    kernel<<<(unsigned)blocks, CU_THREADS>>>(args...);
    cu_check(op, cudaGetLastError());
}

/* Up to four operands of one shape, strided (stride 0 = broadcast), dims merged on the host
 * like tensor/cpu/cpu_iter.h so that the per-element index arithmetic stays short. Passed by
 * value to kernels (kernel parameter space, 4 KiB limit: this is ~330 bytes). */
#define CU_MAX_OPS 4
struct CuGeom {
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t st[CU_MAX_OPS][TENSOR_MAX_DIMS];
};
CuGeom cu_geom(int ndim, const int64_t *shape, int nt, const Tensor *const *ts);

/* Element offset of linear (row-major) index i in operand t. */
__device__ __forceinline__ int64_t cu_offset(const CuGeom &g, int t, int64_t i) {
    int64_t off = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
        int64_t s = g.shape[d];
        int64_t q = i / s;
        off += (i - q * s) * g.st[t][d];
        i = q;
    }
    return off;
}

/* ---- kernels (backend table entries) ---------------------------------------------------- */
void cu_copy(Tensor *dst, const Tensor *src);
void cu_cast(Tensor *out, const Tensor *x);
void cu_fill(Tensor *out, double v);
void cu_arange(Tensor *out, double start, double step);
void cu_random(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal);
void cu_binary(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b);
void cu_where(Tensor *out, const Tensor *c, const Tensor *a, const Tensor *b);
void cu_unary(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1);
void cu_reduce(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C);
void cu_matmul(Tensor *out, const Tensor *a, const Tensor *b);
void cu_softmax(Tensor *out, const Tensor *x, int64_t rows, int64_t cols, bool log);
void cu_layer_norm(Tensor *out, const Tensor *x, const Tensor *w, const Tensor *b, int64_t rows, int64_t cols,
                   double eps);
void cu_layer_norm_backward(Tensor *out, const Tensor *g, const Tensor *x, const Tensor *w, int64_t rows, int64_t cols,
                            double eps);
void cu_index_select(Tensor *out, const Tensor *x, const int64_t *index, int64_t A, int64_t N, int64_t K, int64_t C);
void cu_gather(Tensor *out, const Tensor *x, int dim, const Tensor *index);
void cu_scatter_add(Tensor *out, int dim, const Tensor *index, const Tensor *src);
void cu_det3(Tensor *out, const Tensor *x, int64_t n);
void cu_inv3(Tensor *out, const Tensor *x, int64_t n);
/* fused kernels of nn/ and optim/ (cuda_attention.cu, cuda_optim.cu) */
void cu_attention(const TensorAttentionArgs *a);
void cu_attention_backward(const TensorAttentionArgs *a);
void cu_gru_step(const TensorGruArgs *a);
void cu_gru_step_backward(const TensorGruArgs *a);
void cu_optim_sgd(TensorDType dt, int64_t n, void *w, const void *g, void *buf, double lr, double mu, bool nesterov,
                  double wd);
void cu_optim_adam(TensorDType dt, int64_t n, void *w, const void *g, void *m, void *v, double b1, double b2,
                   double eps, double l2, double decay, double step_size, double bc2_sqrt);
void cu_gram(TensorDType dt, int64_t n, int k, const void *const *x, double *dots);
void cu_lincomb(TensorDType dt, int64_t n, int k, const double *coef, const void *const *x, void *out);

#endif
