/* tensor/cuda/cuda_elementwise.cu — copy, cast, fill, arange, binary, where and unary on the
 * GPU. Formulas are those of tensor/cpu/cpu_elementwise.c, evaluated with CUDA's libm
 * (expf/tanhf/erff/normcdff are within a few ulp of the CPU's vectorized versions; parity is
 * checked by tests/test_cuda.c). Every kernel is a grid-stride loop launched by cu_launch. */
#include <cuda_bf16.h>

#include "cuda_kernels.h"

/* ---- copy --------------------------------------------------------------------------------- */

template <typename W>
__global__ void k_copy(W *d, const W *s, CuGeom g, int64_t n) {
    CU_LOOP(i, n) d[cu_offset(g, 0, i)] = s[cu_offset(g, 1, i)];
}

template <typename W>
__global__ void k_copy_contig(W *d, const W *s, int64_t n) {
    CU_LOOP(i, n) d[i] = s[i];
}

void cu_copy(Tensor *dst, const Tensor *src) {
    int64_t n = tensor_numel(dst);
    if (n == 0) return;
    const Tensor *ts[2] = {dst, src};
    CuGeom g = cu_geom(dst->ndim, dst->shape, 2, ts);
    size_t es = tensor_dtype_size(dst->dtype);
    void *pd = tensor_data_ptr(dst);
    const void *ps = tensor_data_ptr(src);
    if (g.nd == 1 && g.st[0][0] == 1 && g.st[1][0] == 1) { /* one contiguous run: a device memcpy */
        cu_check("copy", cudaMemcpyAsync(pd, ps, (size_t)n * es, cudaMemcpyDeviceToDevice, 0));
        return;
    }
    /* elements are moved as raw 2-, 4- or 8-byte words: copy never converts */
    if (es == 2) cu_launch("copy", k_copy<uint16_t>, n, (uint16_t *)pd, (const uint16_t *)ps, g, n);
    else if (es == 4) cu_launch("copy", k_copy<uint32_t>, n, (uint32_t *)pd, (const uint32_t *)ps, g, n);
    else cu_launch("copy", k_copy<uint64_t>, n, (uint64_t *)pd, (const uint64_t *)ps, g, n);
}

/* ---- cast, fill, arange ------------------------------------------------------------------- */

template <typename TO, typename FROM>
__global__ void k_cast(TO *o, const FROM *x, int64_t n) {
    CU_LOOP(i, n) o[i] = (TO)x[i];
}

/* bf16: round to nearest even, NaN kept (tensor_bf16_from_f32 on the CPU); widening is exact */
static __global__ void k_cast_f32_bf16(__nv_bfloat16 *o, const float *x, int64_t n) {
    CU_LOOP(i, n) o[i] = __float2bfloat16_rn(x[i]);
}
static __global__ void k_cast_bf16_f32(float *o, const __nv_bfloat16 *x, int64_t n) {
    CU_LOOP(i, n) o[i] = __bfloat162float(x[i]);
}

void cu_cast(Tensor *out, const Tensor *x) {
    int64_t n = tensor_numel(out);
    void *po = tensor_data_ptr(out);
    const void *px = tensor_data_ptr(x);
    TensorDType to = out->dtype, from = x->dtype;
#define CAST_CASE(TT, TO_T, FT, FROM_T) \
    if (to == TT && from == FT) return cu_launch("cast", k_cast<TO_T, FROM_T>, n, (TO_T *)po, (const FROM_T *)px, n);
    CAST_CASE(TENSOR_F32, float, TENSOR_F64, double)
    CAST_CASE(TENSOR_F64, double, TENSOR_F32, float)
    CAST_CASE(TENSOR_I64, int64_t, TENSOR_F32, float)
    CAST_CASE(TENSOR_I64, int64_t, TENSOR_F64, double)
    CAST_CASE(TENSOR_F32, float, TENSOR_I64, int64_t)
    CAST_CASE(TENSOR_F64, double, TENSOR_I64, int64_t)
#undef CAST_CASE
    if (to == TENSOR_BF16 && from == TENSOR_F32)
        return cu_launch("cast", k_cast_f32_bf16, n, (__nv_bfloat16 *)po, (const float *)px, n);
    if (to == TENSOR_F32 && from == TENSOR_BF16)
        return cu_launch("cast", k_cast_bf16_f32, n, (float *)po, (const __nv_bfloat16 *)px, n);
    if (n) cu_check("cast", cudaMemcpyAsync(po, px, (size_t)n * tensor_dtype_size(from), cudaMemcpyDeviceToDevice, 0));
}

template <typename T>
__global__ void k_fill(T *o, T v, int64_t n) {
    CU_LOOP(i, n) o[i] = v;
}

void cu_fill(Tensor *out, double v) {
    int64_t n = tensor_numel(out);
    void *p = tensor_data_ptr(out);
    switch (out->dtype) {
    case TENSOR_F32: cu_launch("fill", k_fill<float>, n, (float *)p, (float)v, n); break;
    case TENSOR_F64: cu_launch("fill", k_fill<double>, n, (double *)p, v, n); break;
    case TENSOR_I64: cu_launch("fill", k_fill<int64_t>, n, (int64_t *)p, (int64_t)v, n); break;
    case TENSOR_BF16: cu_launch("fill", k_fill<uint16_t>, n, (uint16_t *)p, tensor_bf16_from_f32((float)v), n); break;
    }
}

/* start + step·i with a separate multiply and add: the CPU (ISO C, no contraction) rounds
 * twice, and an FMA here would give different i64 indices or f32 grid points at the edges. */
template <typename T>
__global__ void k_arange(T *o, double start, double step, int64_t n) {
    CU_LOOP(i, n) o[i] = (T)__dadd_rn(start, __dmul_rn(step, (double)i));
}

void cu_arange(Tensor *out, double start, double step) {
    int64_t n = tensor_numel(out);
    void *p = tensor_data_ptr(out);
    switch (out->dtype) {
    case TENSOR_F32: cu_launch("arange", k_arange<float>, n, (float *)p, start, step, n); break;
    case TENSOR_F64: cu_launch("arange", k_arange<double>, n, (double *)p, start, step, n); break;
    case TENSOR_I64: cu_launch("arange", k_arange<int64_t>, n, (int64_t *)p, start, step, n); break;
    case TENSOR_BF16: break; /* never: tensor_arange/linspace refuse bf16 */
    }
}

/* ---- binary ------------------------------------------------------------------------------- */

__device__ __forceinline__ float cu_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double cu_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ int64_t cu_pow(int64_t x, int64_t) { return x; } /* as the CPU's ipow_unused */

/* gelu_backward: g (Φ(x) + x φ(x)), Φ as the forward gelu computes it (gelu_bw_f32/f64 of the CPU) */
__device__ __forceinline__ float cu_gelu_bw(float g, float x) {
    return g * (normcdff(x) + x * 0.3989422804014327f * expf(-0.5f * x * x));
}
__device__ __forceinline__ double cu_gelu_bw(double g, double x) {
    return g * (0.5 * erfc(-x * 0.70710678118654752) + x * 0.3989422804014327 * exp(-0.5 * x * x));
}
__device__ __forceinline__ int64_t cu_gelu_bw(int64_t g, int64_t) { return g; } /* never: i64 is refused */

/* binary_row in tensor/cpu/cpu_elementwise.c: maximum/minimum propagate a NaN in x (and in y
 * through the comparison being false), pow special-cases y == 2. */
template <typename T>
__device__ __forceinline__ T bin_op(TensorOpId op, T x, T y) {
    switch (op) {
    case TENSOR_OP_ADD: return x + y;
    case TENSOR_OP_SUB: return x - y;
    case TENSOR_OP_MUL: return x * y;
    case TENSOR_OP_DIV: return x / y;
    case TENSOR_OP_POW: return y == (T)2 ? x * x : cu_pow(x, y);
    case TENSOR_OP_MAXIMUM: return (x != x || x > y) ? x : y;
    case TENSOR_OP_MINIMUM: return (x != x || x < y) ? x : y;
    case TENSOR_OP_GELU_BACKWARD: return cu_gelu_bw(x, y);
    case TENSOR_OP_EQ: return (T)(x == y);
    case TENSOR_OP_NE: return (T)(x != y);
    case TENSOR_OP_LT: return (T)(x < y);
    case TENSOR_OP_LE: return (T)(x <= y);
    case TENSOR_OP_GT: return (T)(x > y);
    case TENSOR_OP_GE: return (T)(x >= y);
    default: return (T)0;
    }
}

template <typename T>
__global__ void k_binary(TensorOpId op, T *o, const T *a, const T *b, CuGeom g, int64_t n) {
    CU_LOOP(i, n) o[i] = bin_op<T>(op, a[cu_offset(g, 1, i)], b[cu_offset(g, 2, i)]);
}

/* same-shape contiguous operands, the common case: no index arithmetic */
template <typename T>
__global__ void k_binary_contig(TensorOpId op, T *o, const T *a, const T *b, int64_t n) {
    CU_LOOP(i, n) o[i] = bin_op<T>(op, a[i], b[i]);
}

template <typename T>
static void binary_t(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b) {
    int64_t n = tensor_numel(out);
    T *po = (T *)tensor_data_ptr(out);
    const T *pa = (const T *)tensor_data_ptr(a), *pb = (const T *)tensor_data_ptr(b);
    const Tensor *ts[3] = {out, a, b};
    CuGeom g = cu_geom(out->ndim, out->shape, 3, ts);
    if (g.nd == 1 && g.st[1][0] == 1 && g.st[2][0] == 1) cu_launch("binary", k_binary_contig<T>, n, op, po, pa, pb, n);
    else cu_launch("binary", k_binary<T>, n, op, po, pa, pb, g, n);
}

void cu_binary(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b) {
    switch (op) {
    case TENSOR_OP_ADD: case TENSOR_OP_SUB: case TENSOR_OP_MUL: case TENSOR_OP_DIV: case TENSOR_OP_POW:
    case TENSOR_OP_MAXIMUM: case TENSOR_OP_MINIMUM: case TENSOR_OP_GELU_BACKWARD: case TENSOR_OP_EQ: case TENSOR_OP_NE:
    case TENSOR_OP_LT: case TENSOR_OP_LE: case TENSOR_OP_GT: case TENSOR_OP_GE: break;
    default: tensor_fail(tensor_op_table[op].name, "not a binary op");
    }
    switch (out->dtype) {
    case TENSOR_F32: binary_t<float>(op, out, a, b); break;
    case TENSOR_F64: binary_t<double>(op, out, a, b); break;
    case TENSOR_I64: binary_t<int64_t>(op, out, a, b); break;
    case TENSOR_BF16: break; /* never: the front-ends stop bf16 (tensor_check_bf16) */
    }
}

/* ---- where -------------------------------------------------------------------------------- */

template <typename W, typename C>
__global__ void k_where(W *o, const C *c, const W *a, const W *b, CuGeom g, int64_t n) {
    CU_LOOP(i, n) o[i] = c[cu_offset(g, 1, i)] != (C)0 ? a[cu_offset(g, 2, i)] : b[cu_offset(g, 3, i)];
}

template <typename W>
static void where_w(Tensor *out, const Tensor *c, const Tensor *a, const Tensor *b, const CuGeom &g, int64_t n) {
    W *po = (W *)tensor_data_ptr(out);
    const W *pa = (const W *)tensor_data_ptr(a), *pb = (const W *)tensor_data_ptr(b);
    const void *pc = tensor_data_ptr(c);
    switch (c->dtype) {
    case TENSOR_F32: cu_launch("where", k_where<W, float>, n, po, (const float *)pc, pa, pb, g, n); break;
    case TENSOR_F64: cu_launch("where", k_where<W, double>, n, po, (const double *)pc, pa, pb, g, n); break;
    case TENSOR_I64: cu_launch("where", k_where<W, int64_t>, n, po, (const int64_t *)pc, pa, pb, g, n); break;
    case TENSOR_BF16: break; /* never (tensor_check_bf16) */
    }
}

void cu_where(Tensor *out, const Tensor *c, const Tensor *a, const Tensor *b) {
    int64_t n = tensor_numel(out);
    const Tensor *ts[4] = {out, c, a, b};
    CuGeom g = cu_geom(out->ndim, out->shape, 4, ts);
    /* the selected value is moved as raw bits, like the CPU's memcpy */
    if (tensor_dtype_size(out->dtype) == 4) where_w<uint32_t>(out, c, a, b, g, n);
    else where_w<uint64_t>(out, c, a, b, g, n);
}

/* ---- unary -------------------------------------------------------------------------------- */

/* unary_f32 of the CPU: f32 arithmetic throughout, gelu = x Φ(x), elu with exp(x) - 1 */
__device__ __forceinline__ float un_f32(TensorOpId op, float x, float p0, float p1) {
    switch (op) {
    case TENSOR_OP_NEG: return -x;
    case TENSOR_OP_ABS: return fabsf(x);
    case TENSOR_OP_SIGN: return (float)((x > 0) - (x < 0));
    case TENSOR_OP_EXP: return expf(x);
    case TENSOR_OP_LOG: return logf(x);
    case TENSOR_OP_SQRT: return sqrtf(x);
    case TENSOR_OP_RSQRT: return 1.0f / sqrtf(x);
    case TENSOR_OP_SIN: return sinf(x);
    case TENSOR_OP_COS: return cosf(x);
    case TENSOR_OP_TANH: return tanhf(x);
    case TENSOR_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case TENSOR_OP_RELU: return x > 0 ? x : 0.0f;
    case TENSOR_OP_ELU: return x > 0 ? x : p0 * (expf(x) - 1.0f);
    case TENSOR_OP_GELU: return x * normcdff(x);
    case TENSOR_OP_GELU_TANH: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case TENSOR_OP_SOFTPLUS: {
        float bx = p0 * x; /* PyTorch's softplus: linear above the threshold */
        return bx > p1 ? x : log1pf(expf(bx)) / p0;
    }
    case TENSOR_OP_ERF: return erff(x);
    default: return 0.0f;
    }
}

/* unary_f64 of the CPU: gelu = ½ x erfc(-x/√2), elu with expm1 */
__device__ __forceinline__ double un_f64(TensorOpId op, double x, double p0, double p1) {
    switch (op) {
    case TENSOR_OP_NEG: return -x;
    case TENSOR_OP_ABS: return fabs(x);
    case TENSOR_OP_SIGN: return (double)((x > 0) - (x < 0));
    case TENSOR_OP_EXP: return exp(x);
    case TENSOR_OP_LOG: return log(x);
    case TENSOR_OP_SQRT: return sqrt(x);
    case TENSOR_OP_RSQRT: return 1.0 / sqrt(x);
    case TENSOR_OP_SIN: return sin(x);
    case TENSOR_OP_COS: return cos(x);
    case TENSOR_OP_TANH: return tanh(x);
    case TENSOR_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TENSOR_OP_RELU: return x > 0 ? x : 0.0;
    case TENSOR_OP_ELU: return x > 0 ? x : p0 * expm1(x);
    case TENSOR_OP_GELU: return 0.5 * x * erfc(-x * 0.70710678118654752);
    case TENSOR_OP_GELU_TANH: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case TENSOR_OP_SOFTPLUS: return p0 * x > p1 ? x : log1p(exp(p0 * x)) / p0;
    case TENSOR_OP_ERF: return erf(x);
    default: return 0.0;
    }
}

static __global__ void k_unary_f32(TensorOpId op, float *o, const float *x, float p0, float p1, int64_t n) {
    CU_LOOP(i, n) o[i] = un_f32(op, x[i], p0, p1);
}
static __global__ void k_unary_f64(TensorOpId op, double *o, const double *x, double p0, double p1, int64_t n) {
    CU_LOOP(i, n) o[i] = un_f64(op, x[i], p0, p1);
}
static __global__ void k_unary_i64(TensorOpId op, int64_t *o, const int64_t *x, int64_t n) {
    CU_LOOP(i, n) {
        int64_t v = x[i];
        o[i] = op == TENSOR_OP_NEG ? -v : op == TENSOR_OP_ABS ? (v < 0 ? -v : v) : (int64_t)((v > 0) - (v < 0));
    }
}

void cu_unary(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1) {
    if (op < TENSOR_OP_NEG || op > TENSOR_OP_ERF) tensor_fail(tensor_op_table[op].name, "not a unary op");
    int64_t n = tensor_numel(out);
    void *po = tensor_data_ptr(out);
    const void *px = tensor_data_ptr(x);
    switch (out->dtype) {
    case TENSOR_F32: cu_launch("unary", k_unary_f32, n, op, (float *)po, (const float *)px, (float)p0, (float)p1, n); break;
    case TENSOR_F64: cu_launch("unary", k_unary_f64, n, op, (double *)po, (const double *)px, p0, p1, n); break;
    case TENSOR_I64: cu_launch("unary", k_unary_i64, n, op, (int64_t *)po, (const int64_t *)px, n); break;
    case TENSOR_BF16: break; /* never (tensor_check_bf16) */
    }
}
