/* tensor/cpu/cpu_nn.c — row-wise softmax / log_softmax, layer_norm and layer_norm's input
 * gradient. One pass for the statistics, one for the output; rows are split across threads. */
/* no errno from libm calls, no trap semantics: lets the loops below vectorize; a*b+c contracted
 * to FMA (ISO C mode, -std=c11, otherwise keeps them apart) */
#pragma GCC optimize("no-math-errno", "no-trapping-math", "fp-contract=fast")
#include <math.h>

#include "base/par.h"
#include "cpu.h"
#include "cpu_iter.h"
#include "cpu_math.h"

CPU_CLONES static void softmax_row_f32(float *restrict o, const float *restrict x, int64_t n, bool lg) {
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    if (m == -INFINITY) m = 0; /* an all -inf row: softmax gives NaN like PyTorch via 0/0 */
    float s = 0;
    if (lg) {
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < n; i++) s += am_expf_le0(x[i] - m);
        float ls = m + logf(s);
#pragma omp simd
        for (int64_t i = 0; i < n; i++) o[i] = x[i] - ls;
    } else {
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < n; i++) {
            float e = am_expf_le0(x[i] - m);
            o[i] = e;
            s += e;
        }
        float inv = 1.0f / s;
#pragma omp simd
        for (int64_t i = 0; i < n; i++) o[i] *= inv;
    }
}

static void softmax_row_f64(double *restrict o, const double *restrict x, int64_t n, bool lg) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    if (m == -INFINITY) m = 0;
    for (int64_t i = 0; i < n; i++) s += exp(x[i] - m);
    if (lg) {
        double ls = m + log(s);
        for (int64_t i = 0; i < n; i++) o[i] = x[i] - ls;
    } else {
        for (int64_t i = 0; i < n; i++) o[i] = exp(x[i] - m) / s;
    }
}

void cpu_softmax(Tensor *out, const Tensor *x, int64_t rows, int64_t cols, bool lg) {
    void *po = tensor_data_ptr(out);
    const void *px = tensor_data_ptr(x);
    int par_nt = base_par_threads(rows, 2 * cols);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t r = 0; r < rows; r++) {
        if (out->dtype == TENSOR_F32) softmax_row_f32((float *)po + r * cols, (const float *)px + r * cols, cols, lg);
        else softmax_row_f64((double *)po + r * cols, (const double *)px + r * cols, cols, lg);
    }
}

/* one row's μ and r = (σ² + ε)^-1/2: double sums, two passes, rounded to T (the forward and the
 * backward must see the same values) */
#define DEFINE_LN_STATS(T, SFX)                                                                      \
    __attribute__((always_inline)) static inline void ln_stats_##SFX(const T *restrict x, int64_t n, double eps, \
                                                                     T *mu, T *rstd) {              \
        double s = 0, ss = 0;                                                                        \
        _Pragma("omp simd reduction(+ : s)") for (int64_t i = 0; i < n; i++) s += x[i];             \
        double mean = s / (double)n;                                                                 \
        _Pragma("omp simd reduction(+ : ss)") for (int64_t i = 0; i < n; i++) {                     \
            double d = x[i] - mean;                                                                  \
            ss += d * d;                                                                             \
        }                                                                                            \
        *mu = (T)mean, *rstd = (T)(1.0 / sqrt(ss / (double)n + eps));                                \
    }
DEFINE_LN_STATS(float, f32)
DEFINE_LN_STATS(double, f64)

#define DEFINE_LN(T, SFX)                                                                            \
    CPU_CLONES static void ln_row_##SFX(T *restrict o, const T *restrict x, const T *w, const T *b, int64_t n, \
                             double eps) {                                                           \
        T mu, rstd;                                                                                  \
        ln_stats_##SFX(x, n, eps, &mu, &rstd);                                                       \
        if (w && b) {                                                                                \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = (x[i] - mu) * rstd * w[i] + b[i]; \
        } else {                                                                                     \
            for (int64_t i = 0; i < n; i++) {                                                        \
                T v = (x[i] - mu) * rstd;                                                            \
                if (w) v *= w[i];                                                                    \
                if (b) v += b[i];                                                                    \
                o[i] = v;                                                                            \
            }                                                                                        \
        }                                                                                            \
    }
DEFINE_LN(float, f32)
DEFINE_LN(double, f64)

void cpu_layer_norm(Tensor *out, const Tensor *x, const Tensor *w, const Tensor *b, int64_t rows, int64_t cols,
                    double eps) {
    void *po = tensor_data_ptr(out);
    const void *px = tensor_data_ptr(x);
    const void *pw = w ? tensor_data_ptr(w) : NULL, *pb = b ? tensor_data_ptr(b) : NULL;
    int par_nt = base_par_threads(rows, 2 * cols);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t r = 0; r < rows; r++) {
        if (out->dtype == TENSOR_F32)
            ln_row_f32((float *)po + r * cols, (const float *)px + r * cols, pw, pb, cols, eps);
        else
            ln_row_f64((double *)po + r * cols, (const double *)px + r * cols, pw, pb, cols, eps);
    }
}

/* layer_norm's input gradient, one row: μ and r as ln_row computes them (double, two passes,
 * rounded to T), x̂ = (x - μ) r in T as the forward; mean(ĝ) and mean(ĝ x̂) accumulated in
 * double; dx = r (ĝ - mean(ĝ) - x̂ mean(ĝ x̂)), ĝ = g w (the derivative of ln_row's output with
 * respect to x: x̂'s Jacobian r (I - 1/n - x̂ x̂ᵀ / n) is symmetric). */
#define DEFINE_LN_BW(T, SFX)                                                                         \
    CPU_CLONES static void ln_bw_row_##SFX(T *restrict o, const T *restrict g, const T *restrict x,  \
                                           const T *w, int64_t n, double eps) {                      \
        T mu, rstd;                                                                                  \
        ln_stats_##SFX(x, n, eps, &mu, &rstd);                                                       \
        double sg = 0, sgx = 0;                                                                      \
        if (w) {                                                                                     \
            _Pragma("omp simd reduction(+ : sg, sgx)") for (int64_t i = 0; i < n; i++) {            \
                T gh = g[i] * w[i];                                                                  \
                sg += gh;                                                                            \
                sgx += gh * ((x[i] - mu) * rstd);                                                    \
            }                                                                                        \
        } else {                                                                                     \
            _Pragma("omp simd reduction(+ : sg, sgx)") for (int64_t i = 0; i < n; i++) {            \
                sg += g[i];                                                                          \
                sgx += g[i] * ((x[i] - mu) * rstd);                                                  \
            }                                                                                        \
        }                                                                                            \
        T mg = (T)(sg / (double)n), mgx = (T)(sgx / (double)n);                                      \
        if (w) {                                                                                     \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] =                              \
                rstd * (g[i] * w[i] - mg - (x[i] - mu) * rstd * mgx);                                \
        } else {                                                                                     \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] =                              \
                rstd * (g[i] - mg - (x[i] - mu) * rstd * mgx);                                       \
        }                                                                                            \
    }
DEFINE_LN_BW(float, f32)
DEFINE_LN_BW(double, f64)

void cpu_layer_norm_backward(Tensor *out, const Tensor *g, const Tensor *x, const Tensor *w, int64_t rows,
                             int64_t cols, double eps) {
    void *po = tensor_data_ptr(out);
    const void *pg = tensor_data_ptr(g), *px = tensor_data_ptr(x), *pw = w ? tensor_data_ptr(w) : NULL;
    int par_nt = base_par_threads(rows, 2 * cols);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t r = 0; r < rows; r++) {
        if (out->dtype == TENSOR_F32)
            ln_bw_row_f32((float *)po + r * cols, (const float *)pg + r * cols, (const float *)px + r * cols, pw,
                          cols, eps);
        else
            ln_bw_row_f64((double *)po + r * cols, (const double *)pg + r * cols, (const double *)px + r * cols,
                          pw, cols, eps);
    }
}
