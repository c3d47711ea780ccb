/* tensor/internal.h — helpers shared by the op front-ends; not part of the public API. */
#ifndef ANIMA_TENSOR_INTERNAL_H
#define ANIMA_TENSOR_INTERNAL_H

#include "backend.h"
#include "node.h"
#include "ops.h"

/* A new header over x's storage with the given geometry (no recording). */
Tensor *tensor_make_view(const Tensor *x, int ndim, const int64_t *shape, const int64_t *stride,
                         int64_t offset);
/* Contiguous strides for shape; returns numel. */
int64_t tensor_contig_strides(int ndim, const int64_t *shape, int64_t *stride);
/* Broadcast two shapes; fails naming op with both shapes. Returns ndim of out. */
int tensor_broadcast_shape(const char *op, const Tensor *a, const Tensor *b, int64_t *out);
/* x seen with out's shape: stride 0 on broadcast dims (no recording). */
Tensor *tensor_expand_raw(const Tensor *x, int ndim, const int64_t *shape);
/* Contiguous copy if needed (no recording). */
Tensor *tensor_contig_raw(const Tensor *x);
const TensorBackend *tensor_be(const char *op, const Tensor *t);
void tensor_check_same(const char *op, const Tensor *a, const Tensor *b); /* dtype + device */
/* Fails naming op on i64, and on bf16 unless op takes it (tensor_check_bf16). */
void tensor_check_float(const char *op, const Tensor *x);
/* Fails naming op when t is bf16 and op is not one of the few that take it (tensor.h,
 * TENSOR_BF16); tensor_be calls it, so every kernel dispatch is covered. */
void tensor_check_bf16(const char *op, const Tensor *t);
/* Fails naming op when the backends cannot convert x to dt (bf16 converts to and from f32). */
void tensor_check_cast(const char *op, const Tensor *x, TensorDType dt);
/* Normalizes a dim list into a bitmask; ndims == 0 means all dims. */
unsigned tensor_dim_mask(const char *op, int ndim, int ndims, const int *dims);

#endif
