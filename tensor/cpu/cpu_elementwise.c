/* tensor/cpu/cpu_elementwise.c — binary, where, unary, copy, cast, fill, arange on the CPU.
 * Each loop is instantiated per dtype and per stride pattern (1/1, 1/0, 0/1, any) so the
 * common cases vectorize; OpenMP splits rows when there is enough work. */
/* no errno from sqrtf and friends, no trap semantics: lets the loops below vectorize; a*b+c
 * contracted to FMA (ISO C mode, -std=c11, otherwise keeps them apart) */
#pragma GCC optimize("no-math-errno", "no-trapping-math", "fp-contract=fast")
#include <math.h>
#include <string.h>

#include "base/par.h"
#include "../internal.h"
#include "cpu.h"
#include "cpu_iter.h"
#include "cpu_math.h"

/* ---- binary ----------------------------------------------------------------------------- */

#define ROW_LOOP(EXPR)                                                                         \
    do {                                                                                       \
        if (sa == 1 && sb == 1) {                                                              \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (EXPR); } \
        } else if (sa == 1 && sb == 0) {                                                       \
            T y = b[0];                                                                        \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (EXPR); } \
        } else if (sa == 0 && sb == 1) {                                                       \
            T x = a[0];                                                                        \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) { T y = b[i]; o[i] = (EXPR); } \
        } else {                                                                               \
            for (int64_t i = 0; i < n; i++) { T x = a[i * sa], y = b[i * sb]; o[i] = (EXPR); } \
        }                                                                                      \
    } while (0)

/* gelu_backward: g (Φ(x) + x φ(x)), φ(x) = e^(-x²/2) / √(2π) (the derivative of x Φ(x); Φ as
 * the forward gelu computes it). always_inline: ROW_LOOP expands it four times, and GCC would
 * otherwise keep one out-of-line scalar copy, which stops the loops from vectorizing. */
__attribute__((always_inline)) static inline float gelu_bw_f32(float g, float x) {
    return g * (am_normcdff(x) + x * 0.3989422804014327f * am_expf(-0.5f * x * x));
}
__attribute__((always_inline)) static inline double gelu_bw_f64(double g, double x) {
    return g * (0.5 * erfc(-x * 0.70710678118654752) + x * 0.3989422804014327 * exp(-0.5 * x * x));
}

#define DEFINE_BINARY_ROW(TT, SFX, POW, GELU_BW)                                                  \
    CPU_CLONES static void binary_row_##SFX(TensorOpId op, TT *restrict o, const TT *restrict a, int64_t sa, \
                                 const TT *restrict b, int64_t sb, int64_t n) {                  \
        typedef TT T;                                                                           \
        switch (op) {                                                                           \
        case TENSOR_OP_ADD: ROW_LOOP(x + y); break;                                             \
        case TENSOR_OP_SUB: ROW_LOOP(x - y); break;                                             \
        case TENSOR_OP_MUL: ROW_LOOP(x * y); break;                                             \
        case TENSOR_OP_DIV: ROW_LOOP(x / y); break;                                             \
        case TENSOR_OP_POW: ROW_LOOP(y == (T)2 ? x * x : POW(x, y)); break;                     \
        case TENSOR_OP_MAXIMUM: ROW_LOOP((x != x || x > y) ? x : y); break;                     \
        case TENSOR_OP_MINIMUM: ROW_LOOP((x != x || x < y) ? x : y); break;                     \
        case TENSOR_OP_GELU_BACKWARD: ROW_LOOP(GELU_BW(x, y)); break;                           \
        case TENSOR_OP_EQ: ROW_LOOP((T)(x == y)); break;                                        \
        case TENSOR_OP_NE: ROW_LOOP((T)(x != y)); break;                                        \
        case TENSOR_OP_LT: ROW_LOOP((T)(x < y)); break;                                         \
        case TENSOR_OP_LE: ROW_LOOP((T)(x <= y)); break;                                        \
        case TENSOR_OP_GT: ROW_LOOP((T)(x > y)); break;                                         \
        case TENSOR_OP_GE: ROW_LOOP((T)(x >= y)); break;                                        \
        default: tensor_fail(tensor_op_table[op].name, "not a binary op");                      \
        }                                                                                       \
    }

DEFINE_BINARY_ROW(float, f32, powf, gelu_bw_f32)
DEFINE_BINARY_ROW(double, f64, pow, gelu_bw_f64)
#define ipow_unused(x, y) (x)
#define gelu_bw_unused(g, x) ((void)(x), (g)) /* never: tensor_gelu_backward refuses i64 */
DEFINE_BINARY_ROW(int64_t, i64, ipow_unused, gelu_bw_unused)

/* Rows are cut into pieces of at most CPU_PIECE elements so that one long row (a tensor times
 * a scalar, a bias over a few rows) still splits across threads. */
#define CPU_PIECE 16384

static void binary_rows(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b) {
    const Tensor *ts[3] = {out, a, b};
    CpuIter it;
    cpu_iter_init(&it, out->ndim, out->shape, 3, ts);
    int64_t sa = cpu_iter_inner(&it, 1), sb = cpu_iter_inner(&it, 2); /* out's inner stride is 1 */
    size_t es = tensor_dtype_size(out->dtype);
    char *po = tensor_data_ptr(out);
    const char *pa = tensor_data_ptr(a), *pb = tensor_data_ptr(b);
    int64_t rows = it.rows, len = it.len, cpr = (len + CPU_PIECE - 1) / CPU_PIECE;
    if (cpr < 1) cpr = 1;
    int par_nt = base_par_threads(rows * cpr, (len + cpr - 1) / cpr);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t p = 0; p < rows * cpr; p++) {
        int64_t r = p / cpr, s0 = (p % cpr) * CPU_PIECE, n = len - s0 < CPU_PIECE ? len - s0 : CPU_PIECE;
        int64_t off[3];
        cpu_iter_row(&it, r, off);
        void *o = po + (off[0] + s0) * (int64_t)es;
        const void *x = pa + (off[1] + s0 * sa) * (int64_t)es, *y = pb + (off[2] + s0 * sb) * (int64_t)es;
        switch (out->dtype) {
        case TENSOR_F32: binary_row_f32(op, o, x, sa, y, sb, n); break;
        case TENSOR_F64: binary_row_f64(op, o, x, sa, y, sb, n); break;
        case TENSOR_I64: binary_row_i64(op, o, x, sa, y, sb, n); break;
        case TENSOR_BF16: break; /* never: the front-ends stop bf16 (tensor_check_bf16) */
        }
    }
}

/* A single contiguous row is the most common case (same-shape operands); split it. */
void cpu_binary(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b) {
    int64_t n = tensor_numel(out);
    int par_nt = base_par_threads(n, 1);
    if (par_nt > 1 && tensor_is_contiguous(a) && tensor_is_contiguous(b) && tensor_same_shape(a, out) &&
        tensor_same_shape(b, out)) {
        size_t es = tensor_dtype_size(out->dtype);
        char *po = tensor_data_ptr(out);
        const char *pa = tensor_data_ptr(a), *pb = tensor_data_ptr(b);
#pragma omp parallel num_threads(par_nt)
        {
            int nt = cpu_threads_in_team(), id = cpu_thread_id();
            int64_t chunk = (n + nt - 1) / nt, s = id * chunk, e = s + chunk < n ? s + chunk : n;
            if (s < e) {
                int64_t off = s * (int64_t)es;
                switch (out->dtype) {
                case TENSOR_F32: binary_row_f32(op, (void *)(po + off), (const void *)(pa + off), 1, (const void *)(pb + off), 1, e - s); break;
                case TENSOR_F64: binary_row_f64(op, (void *)(po + off), (const void *)(pa + off), 1, (const void *)(pb + off), 1, e - s); break;
                case TENSOR_I64: binary_row_i64(op, (void *)(po + off), (const void *)(pa + off), 1, (const void *)(pb + off), 1, e - s); break;
                case TENSOR_BF16: break; /* never (tensor_check_bf16) */
                }
            }
        }
        return;
    }
    binary_rows(op, out, a, b);
}

void cpu_where(Tensor *out, const Tensor *c, const Tensor *a, const Tensor *b) {
    const Tensor *ts[4] = {out, c, a, b};
    CpuIter it;
    cpu_iter_init(&it, out->ndim, out->shape, 4, ts);
    int64_t sc = cpu_iter_inner(&it, 1), sa = cpu_iter_inner(&it, 2), sb = cpu_iter_inner(&it, 3);
    size_t es = tensor_dtype_size(out->dtype), ec = tensor_dtype_size(c->dtype);
    char *po = tensor_data_ptr(out);
    const char *pc = tensor_data_ptr(c), *pa = tensor_data_ptr(a), *pb = tensor_data_ptr(b);
    int par_nt = base_par_threads(it.rows, it.len);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t r = 0; r < it.rows; r++) {
        int64_t off[4];
        cpu_iter_row(&it, r, off);
        for (int64_t i = 0; i < it.len; i++) {
            const char *cp = pc + (off[1] + i * sc) * (int64_t)ec;
            bool take = c->dtype == TENSOR_F32 ? *(const float *)cp != 0
                      : c->dtype == TENSOR_F64 ? *(const double *)cp != 0
                                                 : *(const int64_t *)cp != 0;
            const char *src = take ? pa + (off[2] + i * sa) * (int64_t)es : pb + (off[3] + i * sb) * (int64_t)es;
            memcpy(po + (off[0] + i) * (int64_t)es, src, es);
        }
    }
}

/* ---- unary ------------------------------------------------------------------------------ */

#define UN_LOOP(EXPR) _Pragma("omp simd") for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (EXPR); }

CPU_CLONES static void unary_f32(TensorOpId op, float *restrict o, const float *restrict a, int64_t n, float p0, float p1) {
    typedef float T;
    switch (op) {
    case TENSOR_OP_NEG: UN_LOOP(-x); break;
    case TENSOR_OP_ABS: UN_LOOP(fabsf(x)); break;
    case TENSOR_OP_SIGN: UN_LOOP((T)((x > 0) - (x < 0))); break;
    case TENSOR_OP_EXP: UN_LOOP(am_expf(x)); break;
    case TENSOR_OP_LOG: for (int64_t i = 0; i < n; i++) o[i] = logf(a[i]); break;
    case TENSOR_OP_SQRT: UN_LOOP(sqrtf(x)); break;
    case TENSOR_OP_RSQRT: UN_LOOP(1.0f / sqrtf(x)); break;
    case TENSOR_OP_SIN: for (int64_t i = 0; i < n; i++) o[i] = sinf(a[i]); break;
    case TENSOR_OP_COS: for (int64_t i = 0; i < n; i++) o[i] = cosf(a[i]); break;
    case TENSOR_OP_TANH: UN_LOOP(am_tanhf(x)); break;
    case TENSOR_OP_SIGMOID: UN_LOOP(1.0f / (1.0f + am_expf(-x))); break;
    case TENSOR_OP_RELU: UN_LOOP(x > 0 ? x : 0.0f); break;
    case TENSOR_OP_ELU: UN_LOOP(x > 0 ? x : p0 * (am_expf(x) - 1.0f)); break;
    case TENSOR_OP_GELU: UN_LOOP(x * am_normcdff(x)); break;
    case TENSOR_OP_GELU_TANH:
        UN_LOOP(0.5f * x * (1.0f + am_tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))));
        break;
    case TENSOR_OP_SOFTPLUS:
        for (int64_t i = 0; i < n; i++) {
            float bx = p0 * a[i];
            o[i] = bx > p1 ? a[i] : log1pf(am_expf(bx)) / p0;
        }
        break;
    case TENSOR_OP_ERF: UN_LOOP(am_erff(x)); break;
    default: tensor_fail(tensor_op_table[op].name, "not a unary op");
    }
}

static void unary_f64(TensorOpId op, double *restrict o, const double *restrict a, int64_t n, double p0, double p1) {
    typedef double T;
    switch (op) {
    case TENSOR_OP_NEG: UN_LOOP(-x); break;
    case TENSOR_OP_ABS: UN_LOOP(fabs(x)); break;
    case TENSOR_OP_SIGN: UN_LOOP((T)((x > 0) - (x < 0))); break;
    case TENSOR_OP_EXP: UN_LOOP(exp(x)); break;
    case TENSOR_OP_LOG: UN_LOOP(log(x)); break;
    case TENSOR_OP_SQRT: UN_LOOP(sqrt(x)); break;
    case TENSOR_OP_RSQRT: UN_LOOP(1.0 / sqrt(x)); break;
    case TENSOR_OP_SIN: UN_LOOP(sin(x)); break;
    case TENSOR_OP_COS: UN_LOOP(cos(x)); break;
    case TENSOR_OP_TANH: UN_LOOP(tanh(x)); break;
    case TENSOR_OP_SIGMOID: UN_LOOP(1.0 / (1.0 + exp(-x))); break;
    case TENSOR_OP_RELU: UN_LOOP(x > 0 ? x : 0.0); break;
    case TENSOR_OP_ELU: UN_LOOP(x > 0 ? x : p0 * expm1(x)); break;
    case TENSOR_OP_GELU: UN_LOOP(0.5 * x * erfc(-x * 0.70710678118654752)); break;
    case TENSOR_OP_GELU_TANH: UN_LOOP(0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))); break;
    case TENSOR_OP_SOFTPLUS: UN_LOOP(p0 * x > p1 ? x : log1p(exp(p0 * x)) / p0); break;
    case TENSOR_OP_ERF: UN_LOOP(erf(x)); break;
    default: tensor_fail(tensor_op_table[op].name, "not a unary op");
    }
}

static void unary_i64(TensorOpId op, int64_t *o, const int64_t *a, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int64_t x = a[i];
        o[i] = op == TENSOR_OP_NEG ? -x : op == TENSOR_OP_ABS ? (x < 0 ? -x : x) : (x > 0) - (x < 0);
    }
}

void cpu_unary(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1) {
    int64_t n = tensor_numel(out);
    void *po = tensor_data_ptr(out);
    const void *px = tensor_data_ptr(x);
    size_t es = tensor_dtype_size(out->dtype);
    int64_t chunk = 16384;
    int64_t nchunks = (n + chunk - 1) / chunk;
    int par_nt = base_par_threads(nchunks, chunk);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t s = c * chunk, len = s + chunk < n ? chunk : n - s;
        void *o = (char *)po + s * (int64_t)es;
        const void *a = (const char *)px + s * (int64_t)es;
        switch (out->dtype) {
        case TENSOR_F32: unary_f32(op, o, a, len, (float)p0, (float)p1); break;
        case TENSOR_F64: unary_f64(op, o, a, len, p0, p1); break;
        case TENSOR_I64: unary_i64(op, o, a, len); break;
        case TENSOR_BF16: break; /* never (tensor_check_bf16) */
        }
    }
}

/* ---- copy, cast, fill, arange ------------------------------------------------------------- */

void cpu_copy(Tensor *dst, const Tensor *src) {
    const Tensor *ts[2] = {dst, src};
    CpuIter it;
    cpu_iter_init(&it, dst->ndim, dst->shape, 2, ts);
    int64_t sd = cpu_iter_inner(&it, 0), ss = cpu_iter_inner(&it, 1);
    size_t es = tensor_dtype_size(dst->dtype);
    char *pd = tensor_data_ptr(dst);
    const char *ps = tensor_data_ptr(src);
    int64_t rows = it.rows, len = it.len, cpr = (len + CPU_PIECE - 1) / CPU_PIECE;
    if (cpr < 1) cpr = 1;
    int par_nt = base_par_threads(rows * cpr, (len + cpr - 1) / cpr);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t p = 0; p < rows * cpr; p++) {
        int64_t r = p / cpr, s0 = (p % cpr) * CPU_PIECE, n = len - s0 < CPU_PIECE ? len - s0 : CPU_PIECE;
        int64_t off[2];
        cpu_iter_row(&it, r, off);
        char *d = pd + (off[0] + s0 * sd) * (int64_t)es;
        const char *s = ps + (off[1] + s0 * ss) * (int64_t)es;
        if (sd == 1 && ss == 1) {
            memcpy(d, s, (size_t)n * es);
        } else if (es == 2) {
            for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i * sd] = ((const uint16_t *)s)[i * ss];
        } else if (es == 4) {
            for (int64_t i = 0; i < n; i++) ((float *)d)[i * sd] = ((const float *)s)[i * ss];
        } else {
            for (int64_t i = 0; i < n; i++) ((double *)d)[i * sd] = ((const double *)s)[i * ss];
        }
    }
}

void cpu_cast(Tensor *out, const Tensor *x) {
    int64_t n = tensor_numel(out);
    void *po = tensor_data_ptr(out);
    const void *px = tensor_data_ptr(x);
#define CAST_CASE(TO, FROM)                                                     \
    for (int64_t i = 0; i < n; i++) ((TO *)po)[i] = (TO)((const FROM *)px)[i];
    if (out->dtype == TENSOR_F32 && x->dtype == TENSOR_F64) { CAST_CASE(float, double) }
    else if (out->dtype == TENSOR_F64 && x->dtype == TENSOR_F32) { CAST_CASE(double, float) }
    else if (out->dtype == TENSOR_I64 && x->dtype == TENSOR_F32) { CAST_CASE(int64_t, float) }
    else if (out->dtype == TENSOR_I64 && x->dtype == TENSOR_F64) { CAST_CASE(int64_t, double) }
    else if (out->dtype == TENSOR_F32 && x->dtype == TENSOR_I64) { CAST_CASE(float, int64_t) }
    else if (out->dtype == TENSOR_F64 && x->dtype == TENSOR_I64) { CAST_CASE(double, int64_t) }
    else if (out->dtype == TENSOR_BF16 && x->dtype == TENSOR_F32) {
        int par_nt = base_par_threads(n, 1);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
        for (int64_t i = 0; i < n; i++) ((uint16_t *)po)[i] = tensor_bf16_from_f32(((const float *)px)[i]);
    } else if (out->dtype == TENSOR_F32 && x->dtype == TENSOR_BF16) {
        int par_nt = base_par_threads(n, 1);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
        for (int64_t i = 0; i < n; i++) ((float *)po)[i] = tensor_bf16_to_f32(((const uint16_t *)px)[i]);
    } else memcpy(po, px, (size_t)n * tensor_dtype_size(x->dtype));
#undef CAST_CASE
}

void cpu_fill(Tensor *out, double v) {
    int64_t n = tensor_numel(out);
    size_t es = tensor_dtype_size(out->dtype);
    char *base = tensor_data_ptr(out);
    int64_t pieces = (n + 4 * CPU_PIECE - 1) / (4 * CPU_PIECE);
    int par_nt = base_par_threads(pieces, CPU_PIECE); /* a fill: ~1/4 of an op per element */
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t p = 0; p < pieces; p++) {
        int64_t s0 = p * 4 * CPU_PIECE, len = n - s0 < 4 * CPU_PIECE ? n - s0 : 4 * CPU_PIECE;
        void *d = base + s0 * (int64_t)es;
        if (v == 0 && !signbit(v)) { /* +0.0 and integer 0 are all-zero bytes */
            memset(d, 0, (size_t)len * es);
            continue;
        }
        switch (out->dtype) {
        case TENSOR_F32: for (int64_t i = 0; i < len; i++) ((float *)d)[i] = (float)v; break;
        case TENSOR_F64: for (int64_t i = 0; i < len; i++) ((double *)d)[i] = v; break;
        case TENSOR_I64: for (int64_t i = 0; i < len; i++) ((int64_t *)d)[i] = (int64_t)v; break;
        case TENSOR_BF16: {
            uint16_t h = tensor_bf16_from_f32((float)v);
            for (int64_t i = 0; i < len; i++) ((uint16_t *)d)[i] = h;
            break;
        }
        }
    }
}

void cpu_arange(Tensor *out, double start, double step) {
    int64_t n = tensor_numel(out);
    void *p = tensor_data_ptr(out);
    for (int64_t i = 0; i < n; i++) {
        double v = start + step * (double)i;
        switch (out->dtype) {
        case TENSOR_F32: ((float *)p)[i] = (float)v; break;
        case TENSOR_F64: ((double *)p)[i] = v; break;
        case TENSOR_I64: ((int64_t *)p)[i] = (int64_t)v; break;
        case TENSOR_BF16: break; /* never: tensor_arange/linspace refuse bf16 */
        }
    }
}

