/* tensor/internal.h — helpers shared by the op front-ends; not part of the public API. */
#ifndef ANIMA_TENSOR_INTERNAL_H
#define ANIMA_TENSOR_INTERNAL_H

#include "backend.h"
#include "node.h"
#include "ops.h"

/* A new header over x's storage with the given geometry (no recording). */
Tensor *tensor_make_view(const Tensor *x, int ndim, const int64_t *shape, const int64_t *stride,
                         int64_t offset);
/* Storage recycling inside a scope (autograd/engine.c: the gradients of a backward pass).
 * tensor_storage_serial_now is the serial the next allocation exceeds: a storage with
 * st->serial > a value read earlier was allocated after that read. tensor_storage_recycle hands
 * st's bytes back to its scope, which must be the current one (st->data becomes NULL), where a later CPU allocation of the same
 * scope needing between half of them and all of them takes them instead of new bytes; the caller
 * guarantees nothing reads st again. Memory the allocator did not make, device memory and blocks
 * under 4 KiB are left alone. */
uint64_t tensor_storage_serial_now(void);
void tensor_storage_recycle(TensorStorage *st);
/* The storages a stretch of work makes in scope s: between tensor_scope_log_begin (which returns
 * the mark) and tensor_scope_log_end, every CPU storage of at least 4 KiB made in s (not in its
 * child scopes) is logged; log_end gives the log, whose entries from the mark on are that
 * stretch's, and log_truncate(mark) drops them. Stretches nest. */
int64_t tensor_scope_log_begin(TensorScope *s);
int64_t tensor_scope_log_end(TensorScope *s, TensorStorage *const **made);
void tensor_scope_log_truncate(TensorScope *s, int64_t mark);
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
