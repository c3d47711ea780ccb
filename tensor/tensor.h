/* tensor/tensor.h — the Tensor type: storage, dtype, device, shape/stride views, memory scopes,
 * the counter-based random generator and the error path. The ops (add, matmul, softmax, ...)
 * are declared in tensor/ops.h; the autograd engine that reads the recorded nodes is autograd/.
 *
 * Memory: every tensor is allocated from the current scope (an arena). Ending a scope frees
 * everything made inside it at once; tensor_keep() copies a result out to the enclosing scope.
 * User code never frees a tensor. See docs/architecture.md, "Memory by scopes". */
#ifndef ANIMA_TENSOR_H
#define ANIMA_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TENSOR_MAX_DIMS 8
#define TENSOR_MAX_INPUTS 64 /* inputs of one recorded op (cat/stack take a list) */

/* TENSOR_BF16 (bfloat16: the top half of an f32 — sign, 8-bit exponent, 7-bit mantissa) is a
 * storage format for the inputs of matmul and attention, which accumulate in f32 and return f32
 * (mixed precision; nn_set_matmul_dtype in nn/functional.h casts to it on the fly). It takes
 * casts to and from f32, views, copies (contiguous, clone, tensor_copy_, tensor_to, keep),
 * fill/zeros/ones, element get/set, matmul and nn's attention; every other op fails on a bf16
 * tensor naming itself. The gradient of a bf16 tensor is bf16 (a cast back to f32 follows). */
typedef enum { TENSOR_F32, TENSOR_F64, TENSOR_I64, TENSOR_BF16 } TensorDType;
typedef enum { TENSOR_CPU, TENSOR_CUDA } TensorDevice;

typedef struct TensorScope TensorScope;
typedef struct TensorNode TensorNode;

typedef struct TensorStorage {
    void *data;
    size_t nbytes;
    TensorDevice device;
    /* the allocator's: the scope whose chunk holds data (CPU; NULL for memory it did not
     * allocate), the bytes reserved there, and the order of allocation (autograd/engine.c
     * recycles the gradients a backward pass made as soon as the pass no longer holds them) */
    TensorScope *scope;
    size_t capacity;
    uint64_t serial;
} TensorStorage;

typedef struct Tensor {
    TensorStorage *storage;
    int64_t offset; /* in elements */
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t stride[TENSOR_MAX_DIMS]; /* in elements; 0 on expanded dims */
    TensorDType dtype;
    bool requires_grad;
    struct Tensor *grad; /* leaves: gradient accumulated by ag_backward */
    TensorNode *node;    /* the op that produced it, when recorded; NULL for leaves */
    TensorScope *scope;  /* where its header (and, unless a view, its storage) lives */
} Tensor;

/* ---- call sites: ops report the caller's file:line on a programmer error ---------------- */
typedef struct {
    const char *file;
    int line;
} TensorSite;
void tensor_site_set(const char *file, int line);
TensorSite tensor_site_get(void);
/* Abort with one line: "anima: <op>: <message> (at <file>:<line>)". */
_Noreturn void tensor_fail(const char *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes "[2, 3, 4]" into buf (at least 128 bytes) and returns buf. */
const char *tensor_shape_str(const Tensor *t, char *buf);
const char *tensor_dtype_name(TensorDType dt);

/* ---- shapes and dims as literals: tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32) ------------- */
#define TENSOR_SHAPE(...) \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#define TENSOR_DIMS(...) (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (const int[]){__VA_ARGS__}

/* ---- scopes ------------------------------------------------------------------------------- */
TensorScope *tensor_scope_begin(void);          /* a new scope, child of the current; made current */
void tensor_scope_end(TensorScope *s);          /* frees it; s must be the innermost live scope */
TensorScope *tensor_scope_current(void);
TensorScope *tensor_scope_root(void);
TensorScope *tensor_scope_switch(TensorScope *s); /* make s current, return the previous current */
size_t tensor_scope_bytes(const TensorScope *s);  /* bytes allocated in s */
void *tensor_scope_alloc(TensorScope *s, size_t nbytes); /* host memory, 64-byte aligned */
/* Copy t (data only, detached from any graph, contiguous) into the scope enclosing the current
 * one, so it survives tensor_scope_end of the current scope. */
Tensor *tensor_keep(const Tensor *t);
/* Free every scope, cached chunk and backend resource (for leak checkers at exit). */
void tensor_runtime_shutdown(void);

/* ---- construction ------------------------------------------------------------------------ */
Tensor *tensor_empty(int ndim, const int64_t *shape, TensorDType dt);
Tensor *tensor_empty_on(int ndim, const int64_t *shape, TensorDType dt, TensorDevice dev);
Tensor *tensor_empty_like(const Tensor *t);
Tensor *tensor_zeros(int ndim, const int64_t *shape, TensorDType dt);
Tensor *tensor_ones(int ndim, const int64_t *shape, TensorDType dt);
Tensor *tensor_full(int ndim, const int64_t *shape, double value, TensorDType dt);
Tensor *tensor_zeros_like(const Tensor *t);
Tensor *tensor_ones_like(const Tensor *t);
Tensor *tensor_scalar(double value, TensorDType dt); /* 0-d */
Tensor *tensor_arange(double start, double end, double step, TensorDType dt);
Tensor *tensor_linspace(double start, double end, int64_t n, TensorDType dt);
Tensor *tensor_eye(int64_t n, TensorDType dt);
Tensor *tensor_from_data(int ndim, const int64_t *shape, TensorDType dt, const void *data); /* copies */
Tensor *tensor_from_f64(int ndim, const int64_t *shape, TensorDType dt, const double *data);

/* ---- random: Philox-4x32-10 keyed by (seed, stream), counter = offset ------------------------ */
typedef struct {
    uint64_t seed;
    uint64_t stream;
    uint64_t offset; /* advanced by every draw, in units of 4 × 32-bit words */
} TensorRng;
void tensor_manual_seed(uint64_t seed);       /* the global generator (stream 0, offset 0) */
TensorRng *tensor_rng_global(void);
void tensor_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);
Tensor *tensor_rand(int ndim, const int64_t *shape, TensorDType dt);  /* U[0, 1) */
Tensor *tensor_randn(int ndim, const int64_t *shape, TensorDType dt); /* N(0, 1) */
Tensor *tensor_rand_with(TensorRng *g, int ndim, const int64_t *shape, TensorDType dt);
Tensor *tensor_randn_with(TensorRng *g, int ndim, const int64_t *shape, TensorDType dt);

/* ---- bf16 <-> f32 ------------------------------------------------------------------------------
 * f32 -> bf16 rounds to nearest, ties to even, on the bit pattern (the rounding of IEEE 754 and
 * of CUDA's __float2bfloat16_rn): finite values above the largest bf16 (and below the halfway
 * point to 2^128) round to ±inf, subnormals round like normals, ±inf and ±0 stay, and a NaN
 * stays a NaN (quiet; sign and top payload bits kept) where plain rounding could carry it into
 * inf. bf16 -> f32 is exact. Values given as double (tensor_set, tensor_from_f64, fill) are
 * rounded to f32 first. */
static inline uint16_t tensor_bf16_from_f32(float f) {
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x0040u);
    v.u += 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)(v.u >> 16);
}
static inline float tensor_bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}

/* ---- metadata ----------------------------------------------------------------------------- */
int64_t tensor_numel(const Tensor *t);
size_t tensor_dtype_size(TensorDType dt);
TensorDevice tensor_device(const Tensor *t);
bool tensor_is_contiguous(const Tensor *t);
bool tensor_same_shape(const Tensor *a, const Tensor *b);
int tensor_dim_wrap(const char *op, int dim, int ndim); /* negative dims count from the end */
void *tensor_data_ptr(const Tensor *t);                /* first element (storage + offset) */
float *tensor_f32(const Tensor *t);                    /* checked: dtype f32, on the CPU */
double *tensor_f64(const Tensor *t);
int64_t *tensor_i64(const Tensor *t);
uint16_t *tensor_bf16(const Tensor *t); /* raw bf16 bits */
double tensor_item(const Tensor *t);                    /* a one-element tensor's value */
double tensor_get(const Tensor *t, const int64_t *index); /* one element, any layout */
void tensor_set(Tensor *t, const int64_t *index, double v);
/* Copy all elements, in row-major order, converted to double (dst holds numel values). */
void tensor_to_f64_array(const Tensor *t, double *dst);
void tensor_print(const Tensor *t, const char *name);
/* x on device dev: x itself when already there, else a contiguous copy (through the backend's
 * to_host / from_host). Not recorded on the tape: the result is a fresh leaf without grad
 * (move leaves first, then set requires_grad on the moved copy). */
Tensor *tensor_to(Tensor *x, TensorDevice dev);

/* ---- grad mode (tensor ops record nodes only while it is on and an input requires grad) ---- */
bool tensor_grad_enabled(void);
bool tensor_grad_set_enabled(bool on); /* returns the previous setting */
Tensor *tensor_requires_grad(Tensor *t, bool on); /* sets the flag on a leaf, returns t */
Tensor *tensor_detach(const Tensor *t);           /* same data, no node, no grad flag */
/* A contiguous view of `shape` into base's storage, starting `offset` elements after base's
 * first element (carving tensors out of a flat buffer). */
Tensor *tensor_view_at(const Tensor *base, int ndim, const int64_t *shape, int64_t offset);

/* ---- in-place helpers for optimizers and init (never recorded; refuse graph tensors) ------ */
void tensor_copy_(Tensor *dst, const Tensor *src);  /* broadcasting src to dst's shape */
void tensor_fill_(Tensor *t, double value);
void tensor_add_(Tensor *dst, const Tensor *src, double alpha); /* dst += alpha * src */
void tensor_scale_(Tensor *t, double alpha);

#endif
