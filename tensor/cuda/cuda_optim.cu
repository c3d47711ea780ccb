/* tensor/cuda/cuda_optim.cu — the optimizer's fused elementwise kernels over flat device
 * buffers (optim/optim.c's SGD and Adam/AdamW loops, the pass-2 linear combination of ConFIG
 * and clipping) and the Gram reduction of ConFIG / gradient-norm clipping
 * (optim/conflict_free.c's pass 1). optim/ dispatches here when its buffers are on the GPU.
 *
 * Same numbers as the CPU: every element is computed in double and rounded once on store, with
 * the CPU loop's operations in its order. The library's C is compiled as ISO C11, where GCC does
 * not contract a·b + c into an FMA, while nvcc does by default; the __d*_rn intrinsics below
 * forbid the contraction, so for equal inputs an update is bit-identical to the CPU's (sqrt and
 * division are IEEE-rounded on both). The Gram sums accumulate in double per thread, then per
 * block, and the per-block partials are added on the host in block order: deterministic, equal
 * to the CPU's sums up to the order of the double additions. */
#include <cstdlib>

#include "cuda_kernels.h"

#define OPT_MAX_K 16
/* the Gram kernel's grid cap (one partial per block, summed on the host); tiny in the
 * emulated build so that its grid-stride loop really loops */
#ifndef GRAM_MAX_BLOCKS
#define GRAM_MAX_BLOCKS 1024
#endif

/* k vectors and their coefficients, passed by value (kernel parameter space: 384 bytes) */
struct CuVecs {
    const void *p[OPT_MAX_K];
    double c[OPT_MAX_K];
};

__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

/* torch.optim.SGD (dampening 0): d = g + λθ; b = μb + d; d = nesterov ? d + μb : b; θ -= lr·d */
template <typename T>
__global__ void k_sgd(int64_t n, T *w, const T *g, T *buf, double lr, double mu, bool nesterov, double wd) {
    CU_LOOP(j, n) {
        double d = (double)g[j];
        if (wd != 0) d = add(d, mul(wd, (double)w[j]));
        if (buf) {
            double b = add(mul(mu, (double)buf[j]), d);
            buf[j] = (T)b;
            d = nesterov ? add(d, mul(mu, b)) : b;
        }
        w[j] = (T)add((double)w[j], -mul(lr, d));
    }
}

/* torch.optim.Adam / AdamW in torch's order (optim.c's DEFINE_ADAM states the rule) */
template <typename T>
__global__ void k_adam(int64_t n, T *w, const T *g, T *m, T *v, double b1, double b2, double eps, double l2,
                       double decay, double step_size, double bc2_sqrt) {
    CU_LOOP(j, n) {
        double p = (double)w[j], gj = (double)g[j];
        if (l2 != 0) gj = add(gj, mul(l2, p));
        if (decay != 1) p = (double)(T)mul(p, decay);
        double mj = add(mul(b1, (double)m[j]), mul(1 - b1, gj));
        double vj = add(mul(b2, (double)v[j]), mul(1 - b2, mul(gj, gj)));
        m[j] = (T)mj;
        v[j] = (T)vj;
        double denom = add(__ddiv_rn(__dsqrt_rn(vj), bc2_sqrt), eps);
        w[j] = (T)add(p, -mul(step_size, __ddiv_rn(mj, denom)));
    }
}

template <typename T>
__global__ void k_lincomb(int64_t n, int k, CuVecs xs, T *out) {
    CU_LOOP(j, n) {
        double acc = 0;
        for (int i = 0; i < k; i++) acc = add(acc, mul(xs.c[i], (double)((const T *)xs.p[i])[j]));
        out[j] = (T)acc; /* every x_i[j] is read before out[j] is written: out may alias one */
    }
}

/* Inner products of up to KM vectors (runtime k ≤ KM; absent ones read as 0), packed over KM:
 * q(a, b) = a·KM − a(a−1)/2 + (b − a). One partial per block and product. */
template <typename T, int KM>
__global__ void __launch_bounds__(CU_THREADS) k_gram(int64_t n, int k, CuVecs xs, double *partial) {
    constexpr int NP = KM * (KM + 1) / 2;
    double acc[NP];
#pragma unroll
    for (int q = 0; q < NP; q++) acc[q] = 0;
    CU_LOOP(j, n) {
        double v[KM];
#pragma unroll
        for (int i = 0; i < KM; i++) v[i] = i < k ? (double)((const T *)xs.p[i])[j] : 0.0;
        int q = 0;
#pragma unroll
        for (int a = 0; a < KM; a++)
#pragma unroll
            for (int b = a; b < KM; b++) acc[q++] += v[a] * v[b];
    }
    __shared__ double wsum[CU_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int q = 0; q < NP; q++) {
        double s = acc[q];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) wsum[warp] = s;
        __syncthreads();
        if (threadIdx.x == 0) {
            double t = 0;
            for (int w = 0; w < CU_THREADS / 32; w++) t += wsum[w];
            partial[(int64_t)blockIdx.x * NP + q] = t;
        }
        __syncthreads();
    }
}

static void check_dt(const char *op, TensorDType dt) {
    if (dt != TENSOR_F32 && dt != TENSOR_F64) tensor_fail(op, "needs f32 or f64 buffers, got %s", tensor_dtype_name(dt));
}

void cu_optim_sgd(TensorDType dt, int64_t n, void *w, const void *g, void *buf, double lr, double mu, bool nesterov,
                  double wd) {
    check_dt("optim_step", dt);
    if (dt == TENSOR_F32)
        cu_launch("optim_step", k_sgd<float>, n, n, (float *)w, (const float *)g, (float *)buf, lr, mu, nesterov, wd);
    else
        cu_launch("optim_step", k_sgd<double>, n, n, (double *)w, (const double *)g, (double *)buf, lr, mu, nesterov,
                  wd);
}

void cu_optim_adam(TensorDType dt, int64_t n, void *w, const void *g, void *m, void *v, double b1, double b2,
                   double eps, double l2, double decay, double step_size, double bc2_sqrt) {
    check_dt("optim_step", dt);
    if (dt == TENSOR_F32)
        cu_launch("optim_step", k_adam<float>, n, n, (float *)w, (const float *)g, (float *)m, (float *)v, b1, b2, eps,
                  l2, decay, step_size, bc2_sqrt);
    else
        cu_launch("optim_step", k_adam<double>, n, n, (double *)w, (const double *)g, (double *)m, (double *)v, b1, b2,
                  eps, l2, decay, step_size, bc2_sqrt);
}

static CuVecs vecs(const char *op, int k, const void *const *x, const double *coef) {
    if (k < 1 || k > OPT_MAX_K) tensor_fail(op, "k = %d; expected 1..%d", k, OPT_MAX_K);
    CuVecs v = {};
    for (int i = 0; i < k; i++) v.p[i] = x[i], v.c[i] = coef ? coef[i] : 0;
    return v;
}

void cu_lincomb(TensorDType dt, int64_t n, int k, const double *coef, const void *const *x, void *out) {
    check_dt("optim lincomb", dt);
    CuVecs v = vecs("optim lincomb", k, x, coef);
    if (dt == TENSOR_F32) cu_launch("optim lincomb", k_lincomb<float>, n, n, k, v, (float *)out);
    else cu_launch("optim lincomb", k_lincomb<double>, n, n, k, v, (double *)out);
}

template <typename T, int KM>
static void gram_t(int64_t n, int k, const CuVecs &v, double *dots) {
    constexpr int NP = KM * (KM + 1) / 2;
    int64_t blocks = (n + CU_THREADS - 1) / CU_THREADS;
    if (blocks > GRAM_MAX_BLOCKS) blocks = GRAM_MAX_BLOCKS;
    double *part = (double *)cu_pool_alloc(sizeof(double) * (size_t)(blocks * NP));
    k_gram<T, KM><<<(unsigned)blocks, CU_THREADS>>>(n, k, v, part);
    cu_check("optim gram", cudaGetLastError());
    double *host = (double *)malloc(sizeof(double) * (size_t)(blocks * NP));
    if (!host) abort();
    cu_check("optim gram", cudaMemcpy(host, part, sizeof(double) * (size_t)(blocks * NP), cudaMemcpyDeviceToHost));
    cu_pool_release(part);
    /* from KM's packing to k's: q_k(a, b) runs a < k, b = a..k−1 row by row */
    for (int a = 0, qk = 0; a < k; a++)
        for (int b = a; b < k; b++, qk++) {
            int q = a * KM - a * (a - 1) / 2 + (b - a);
            double s = 0;
            for (int64_t blk = 0; blk < blocks; blk++) s += host[blk * NP + q];
            dots[qk] = s;
        }
    free(host);
}

void cu_gram(TensorDType dt, int64_t n, int k, const void *const *x, double *dots) {
    check_dt("optim gram", dt);
    CuVecs v = vecs("optim gram", k, x, NULL);
    if (n <= 0) {
        for (int q = 0; q < k * (k + 1) / 2; q++) dots[q] = 0;
        return;
    }
    bool f32 = dt == TENSOR_F32;
    if (k == 1) f32 ? gram_t<float, 1>(n, k, v, dots) : gram_t<double, 1>(n, k, v, dots);
    else if (k <= 4) f32 ? gram_t<float, 4>(n, k, v, dots) : gram_t<double, 4>(n, k, v, dots);
    else f32 ? gram_t<float, 16>(n, k, v, dots) : gram_t<double, 16>(n, k, v, dots);
}
