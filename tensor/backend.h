/* tensor/backend.h — the kernels a device provides. The op front-ends (tensor/ops_*.c) check
 * shapes and dtypes, allocate outputs and bring the inputs into the layout a kernel expects;
 * a kernel only computes. Every kernel writes a contiguous `out`. Inputs may be strided
 * unless the comment says "contiguous". A backend leaves a kernel NULL when it lacks it; the
 * front-end then fails naming the op and the device. */
#ifndef ANIMA_TENSOR_BACKEND_H
#define ANIMA_TENSOR_BACKEND_H

#include "op_table.h"
#include "tensor.h"

typedef struct TensorBackend {
    const char *name;
    void *(*alloc)(size_t nbytes);
    void (*release)(void *p);
    /* dst (any layout) = src (same shape, same dtype; src may have stride-0 dims) */
    void (*copy)(Tensor *dst, const Tensor *src);
    /* host <-> device for contiguous bytes */
    void (*to_host)(void *dst, const void *src, size_t nbytes);
    void (*from_host)(void *dst, const void *src, size_t nbytes);
    void (*cast)(Tensor *out, const Tensor *x);  /* x contiguous */
    void (*fill)(Tensor *out, double value);
    void (*arange)(Tensor *out, double start, double step);
    void (*random)(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal);
    /* a and b already expanded to out's shape (stride 0 on broadcast dims) */
    void (*binary)(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b);
    void (*where)(Tensor *out, const Tensor *cond, const Tensor *a, const Tensor *b);
    /* x contiguous, same numel as out; p0/p1: elu alpha, softplus beta/threshold */
    void (*unary)(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1);
    /* x contiguous seen as (A, R, C); out (A, C). op: SUM, MAX, MIN, ARGMAX (out i64) */
    void (*reduce)(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C);
    /* a (B..., n, k), b (B..., k, m) with batch dims expanded to out's (B..., n, m);
     * the last two dims of a and b may be row- or column-major. */
    void (*matmul)(Tensor *out, const Tensor *a, const Tensor *b);
    /* x contiguous (rows, cols), softmax over cols */
    void (*softmax)(Tensor *out, const Tensor *x, int64_t rows, int64_t cols, bool log);
    void (*layer_norm)(Tensor *out, const Tensor *x, const Tensor *w, const Tensor *b,
                       int64_t rows, int64_t cols, double eps); /* x contiguous; w/b NULL or contiguous */
    /* x contiguous (A, N, C) -> out (A, K, C) picking index[K] along N */
    void (*index_select)(Tensor *out, const Tensor *x, const int64_t *index, int64_t A, int64_t N,
                         int64_t K, int64_t C);
    /* gather / scatter-add along dim of contiguous tensors (index has out's/src's shape) */
    void (*gather)(Tensor *out, const Tensor *x, int dim, const Tensor *index);
    void (*scatter_add)(Tensor *out, int dim, const Tensor *index, const Tensor *src); /* out += */
    void (*det3)(Tensor *out, const Tensor *x, int64_t n); /* x contiguous (n, 3, 3) */
    void (*inv3)(Tensor *out, const Tensor *x, int64_t n);
} TensorBackend;

extern const TensorBackend tensor_backend_cpu;
const TensorBackend *tensor_backend_for(TensorDevice dev); /* aborts if the device is absent */
/* Set by tensor/cuda when compiled in and a device answers; NULL otherwise. */
const TensorBackend *tensor_backend_cuda(void);

#endif
