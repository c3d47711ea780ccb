/* tensor/cpu/cpu_optim.c — the CPU's fused update kernels (tensor/backend.h: optim_sgd,
 * optim_adam, gram, lincomb) behind tensor_optim_sgd_ / tensor_optim_adam_ / tensor_gram /
 * tensor_lincomb_, which optim/optim.c and optim/conflict_free.c call. Every rule is written to
 * match PyTorch 1.13's torch.optim (single-tensor, non-fused path) operation for operation
 * (optim/optim.c states each rule); tensor/cuda/cuda_optim.cu does the same operations in the
 * same order.
 *
 * A hot path (one pass over every parameter per training step): plain loops over the raw
 * f32/f64 storage with OpenMP, nothing allocated. The per-element arithmetic is done in double
 * and rounded once on store; for f64 buffers this is torch's f64 arithmetic, for f32 it is
 * slightly more accurate than torch's f32 kernels. */
#include <math.h>
#include <string.h>

#include "../internal.h"
#include "base/par.h"
#include "cpu.h"

/* torch.optim.SGD (dampening 0):  d = g + λθ;  b = μb + d;  d = nesterov ? d + μb : b;
 * θ -= lr·d. */
#define DEFINE_SGD(T)                                                                            \
    static void sgd_##T(int64_t n, T *restrict w, const T *restrict g, T *restrict buf, double lr, \
                        double mu, bool nesterov, double wd) {                                   \
        int par_nt = base_par_threads(n, 4);                                                     \
        _Pragma("omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)")         \
        for (int64_t j = 0; j < n; j++) {                                                        \
            double d = (double)g[j];                                                             \
            if (wd != 0) d = d + wd * (double)w[j];                                              \
            if (buf) {                                                                           \
                double b = mu * (double)buf[j] + d;                                              \
                buf[j] = (T)b;                                                                   \
                d = nesterov ? d + mu * b : b;                                                   \
            }                                                                                    \
            w[j] = (T)((double)w[j] - lr * d);                                                   \
        }                                                                                        \
    }

/* torch.optim.Adam / AdamW (Kingma & Ba 2015, Alg. 1; Loshchilov & Hutter 2019, Alg. 2), in
 * torch's order of operations:
 *   AdamW: θ *= 1 − lr·λ                       (decoupled decay, before the moments)
 *   Adam:  g += λθ                              (L2 folded into the gradient)
 *   m = β1·m + (1−β1)·g;   v = β2·v + (1−β2)·g²
 *   denom = √v / √(1−β2^t) + ε;   θ −= (lr / (1−β1^t)) · m / denom
 * Note ε is added after the bias correction of √v, as torch does (not √(v̂ + ε)). */
#define DEFINE_ADAM(T)                                                                           \
    static void adam_##T(int64_t n, T *restrict w, const T *restrict g, T *restrict m,            \
                         T *restrict v, double b1, double b2, double eps, double l2, double decay, \
                         double step_size, double bc2_sqrt) {                                    \
        int par_nt = base_par_threads(n, 4);                                                     \
        _Pragma("omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)")         \
        for (int64_t j = 0; j < n; j++) {                                                        \
            double p = (double)w[j], gj = (double)g[j];                                          \
            if (l2 != 0) gj = gj + l2 * p;                                                       \
            if (decay != 1) p = (double)(T)(p * decay);                                          \
            double mj = b1 * (double)m[j] + (1 - b1) * gj;                                       \
            double vj = b2 * (double)v[j] + (1 - b2) * (gj * gj);                                \
            m[j] = (T)mj;                                                                        \
            v[j] = (T)vj;                                                                        \
            double denom = sqrt(vj) / bc2_sqrt + eps;                                            \
            w[j] = (T)(p - step_size * (mj / denom));                                            \
        }                                                                                        \
    }

DEFINE_SGD(float)
DEFINE_SGD(double)
DEFINE_ADAM(float)
DEFINE_ADAM(double)

void cpu_optim_sgd(TensorDType dt, int64_t n, void *w, const void *g, void *buf, double lr, double mu, bool nesterov,
                   double wd) {
    if (dt == TENSOR_F64) sgd_double(n, w, g, buf, lr, mu, nesterov, wd);
    else sgd_float(n, w, g, buf, lr, mu, nesterov, wd);
}

void cpu_optim_adam(TensorDType dt, int64_t n, void *w, const void *g, void *m, void *v, double b1, double b2,
                    double eps, double l2, double decay, double step_size, double bc2_sqrt) {
    if (dt == TENSOR_F64) adam_double(n, w, g, m, v, b1, b2, eps, l2, decay, step_size, bc2_sqrt);
    else adam_float(n, w, g, m, v, b1, b2, eps, l2, decay, step_size, bc2_sqrt);
}

static inline double load(const void *p, bool f64, int64_t j) {
    return f64 ? ((const double *)p)[j] : (double)((const float *)p)[j];
}

/* one fused pass: every inner product at index j from the k values there (OpenMP reduction) */
void cpu_gram(TensorDType dt, int64_t n, int k, const void *const *x, double *dots) {
    enum { NP = TENSOR_GRAM_MAX_K * (TENSOR_GRAM_MAX_K + 1) / 2 };
    double dot[NP];
    int np = k * (k + 1) / 2;
    bool f64 = dt == TENSOR_F64;
    memset(dot, 0, sizeof dot);
    int par_nt = base_par_threads(n, 2 * k);
#pragma omp parallel for schedule(static) reduction(+ : dot[:np]) num_threads(par_nt) if (par_nt > 1)
    for (int64_t j = 0; j < n; j++) {
        double v[TENSOR_GRAM_MAX_K];
        for (int i = 0; i < k; i++) v[i] = load(x[i], f64, j);
        for (int a = 0, q = 0; a < k; a++)
            for (int b = a; b < k; b++, q++) dot[q] += v[a] * v[b];
    }
    memcpy(dots, dot, sizeof(double) * (size_t)np);
}

/* every x_i[j] is read before out[j] is written: out may alias one of them */
void cpu_lincomb(TensorDType dt, int64_t n, int k, const double *coef, const void *const *x, void *out) {
    bool f64 = dt == TENSOR_F64;
    int par_nt = base_par_threads(n, 2 * k);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int i = 0; i < k; i++) acc += coef[i] * load(x[i], f64, j);
        if (f64) ((double *)out)[j] = acc;
        else ((float *)out)[j] = (float)acc;
    }
}
