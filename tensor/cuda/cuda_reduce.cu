/* tensor/cuda/cuda_reduce.cu — sum / max / min / argmax over the middle axis of (A, R, C),
 * row-wise softmax / log_softmax, layer_norm and its input gradient. As on the CPU
 * (tensor/cpu/cpu_reduce.c, cpu_nn.c), sums accumulate in double for reductions and layer_norm
 * statistics, max/min take the first NaN when there is one (NaN propagates) and argmax the
 * first index of the maximum. */
#include <math.h>

#include "cuda_kernels.h"

/* Shared-memory tree over one block of CU_THREADS (a power of two) threads; every thread gets
 * the result. F is a functor (no extended lambdas needed). */
template <typename T, typename F>
__device__ T block_reduce(T v, F f) {
    __shared__ T buf[CU_THREADS];
    int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (int s = CU_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] = f(buf[t], buf[t + s]);
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads(); /* buf is reused by the next call */
    return r;
}

struct AddD {
    __device__ double operator()(double a, double b) const { return a + b; }
};
struct AddF {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxF {
    __device__ float operator()(float a, float b) const { return b > a ? b : a; }
};
struct MaxD {
    __device__ double operator()(double a, double b) const { return b > a ? b : a; }
};

/* A candidate (value, index); index < 0: no element (the identity of the combination). */
struct Arg {
    double v;
    int64_t i;
};

/* Combines two candidates so that the result is what the CPU's left-to-right scan keeps:
 * the first NaN if any, else the first position holding the best value. */
struct ArgBest {
    bool min;
    __device__ Arg operator()(Arg a, Arg b) const {
        if (a.i < 0) return b;
        if (b.i < 0) return a;
        bool an = a.v != a.v, bn = b.v != b.v;
        if (an || bn) return an && bn ? (a.i < b.i ? a : b) : an ? a : b;
        if (min ? b.v < a.v : b.v > a.v) return b;
        if (min ? a.v < b.v : a.v > b.v) return a;
        return a.i < b.i ? a : b;
    }
};

/* C == 1: a block per row (rows walked grid-stride), threads split R. */
template <typename T>
__global__ void k_reduce_rows(TensorOpId op, void *outp, const T *x, int64_t A, int64_t R) {
    for (int64_t a = blockIdx.x; a < A; a += gridDim.x) {
        const T *row = x + a * R;
        if (op == TENSOR_OP_SUM) {
            double s = 0;
            for (int64_t r = threadIdx.x; r < R; r += blockDim.x) s += (double)row[r];
            s = block_reduce(s, AddD());
            if (threadIdx.x == 0) ((T *)outp)[a] = (T)s;
        } else {
            ArgBest f = {op == TENSOR_OP_MIN};
            Arg best = {0, -1};
            for (int64_t r = threadIdx.x; r < R; r += blockDim.x) best = f(best, Arg{(double)row[r], r});
            best = block_reduce(best, f);
            if (threadIdx.x == 0) {
                if (op == TENSOR_OP_ARGMAX) ((int64_t *)outp)[a] = best.i;
                else ((T *)outp)[a] = (T)best.v;
            }
        }
    }
}

/* C > 1 (or short rows): a thread per (a, c) walks r in order (coalesced across c), exactly
 * the CPU loop. */
template <typename T>
__global__ void k_reduce_cols(TensorOpId op, void *outp, const T *x, int64_t A, int64_t R, int64_t C) {
    CU_LOOP(ac, A * C) {
        int64_t a = ac / C, c = ac - a * C;
        const T *base = x + a * R * C + c;
        double acc = base[0];
        int64_t arg = 0;
        bool min = op == TENSOR_OP_MIN;
        for (int64_t r = 1; r < R; r++) {
            double v = base[r * C];
            if (op == TENSOR_OP_SUM) {
                acc += v;
            } else {
                bool better = min ? v < acc : v > acc;
                if (better || (v != v && acc == acc)) acc = v, arg = r;
            }
        }
        if (op == TENSOR_OP_ARGMAX) ((int64_t *)outp)[ac] = arg;
        else ((T *)outp)[ac] = (T)acc;
    }
}

/* Few outputs, long reductions (a bias gradient summing 10^5 rows into 64 columns, a sum
 * over everything): one thread or block per output would leave the GPU idle, so R is cut into
 * P chunks. Pass 1 reduces chunk p of output (a, c) into partial (a, p, c): its sum in double,
 * or its first NaN / first best value with the index. Pass 2 folds the P partials of each
 * output in chunk order, which keeps the CPU's first-NaN / first-maximum semantics. */
template <typename T>
__global__ void k_reduce_chunks(TensorOpId op, const T *x, int64_t A, int64_t R, int64_t C, int64_t P, int64_t L,
                                double *pv, int64_t *pi) {
    CU_LOOP(e, A * P * C) {
        int64_t c = e % C, ap = e / C, p = ap % P, a = ap / P;
        int64_t r0 = p * L, r1 = r0 + L < R ? r0 + L : R;
        const T *base = x + a * R * C + c;
        double acc = base[r0 * C];
        int64_t arg = r0;
        bool min = op == TENSOR_OP_MIN;
        for (int64_t r = r0 + 1; r < r1; r++) {
            double v = base[r * C];
            if (op == TENSOR_OP_SUM) {
                acc += v;
            } else {
                bool better = min ? v < acc : v > acc;
                if (better || (v != v && acc == acc)) acc = v, arg = r;
            }
        }
        pv[e] = acc;
        pi[e] = arg;
    }
}

/* C == 1 and few rows: a block per chunk, threads split the chunk */
template <typename T>
__global__ void k_reduce_row_chunks(TensorOpId op, const T *x, int64_t A, int64_t R, int64_t P, int64_t L, double *pv,
                                    int64_t *pi) {
    for (int64_t ap = blockIdx.x; ap < A * P; ap += gridDim.x) {
        int64_t p = ap % P, a = ap / P;
        int64_t r0 = p * L, r1 = r0 + L < R ? r0 + L : R;
        const T *row = x + a * R;
        if (op == TENSOR_OP_SUM) {
            double s = 0;
            for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) s += (double)row[r];
            s = block_reduce(s, AddD());
            if (threadIdx.x == 0) pv[ap] = s, pi[ap] = r0;
        } else {
            ArgBest f = {op == TENSOR_OP_MIN};
            Arg best = {0, -1};
            for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) best = f(best, Arg{(double)row[r], r});
            best = block_reduce(best, f);
            if (threadIdx.x == 0) pv[ap] = best.v, pi[ap] = best.i;
        }
    }
}

template <typename T>
__global__ void k_reduce_fold(TensorOpId op, void *outp, const double *pv, const int64_t *pi, int64_t A, int64_t P,
                              int64_t C) {
    CU_LOOP(ac, A * C) {
        int64_t a = ac / C, c = ac - a * C;
        const double *v0 = pv + a * P * C + c;
        const int64_t *i0 = pi + a * P * C + c;
        double acc = v0[0];
        int64_t arg = i0[0];
        bool min = op == TENSOR_OP_MIN;
        for (int64_t p = 1; p < P; p++) {
            double v = v0[p * C];
            if (op == TENSOR_OP_SUM) {
                acc += v;
            } else {
                bool better = min ? v < acc : v > acc;
                if (better || (v != v && acc == acc)) acc = v, arg = i0[p * C];
            }
        }
        if (op == TENSOR_OP_ARGMAX) ((int64_t *)outp)[ac] = arg;
        else ((T *)outp)[ac] = (T)acc;
    }
}

#define REDUCE_SPLIT_OUTPUTS 16384 /* below this many outputs (or row-blocks), split R */

template <typename T>
static bool reduce_split(TensorOpId op, void *po, const T *px, int64_t A, int64_t R, int64_t C) {
    int64_t outs = A * C, P, L;
    if (C == 1) {
        if (A >= 1024 || R < 16384) return false;
        P = (4096 + A - 1) / A;      /* ~4096 blocks in all */
        if (P > R / 4096) P = R / 4096; /* ≥ 4096 elements per block */
    } else {
        if (outs >= REDUCE_SPLIT_OUTPUTS || R < 256) return false;
        P = (262144 + outs - 1) / outs; /* ~256K threads in all */
        if (P > R / 64) P = R / 64;     /* ≥ 64 rows per thread */
    }
    if (P < 2) return false;
    L = (R + P - 1) / P;
    P = (R + L - 1) / L; /* no empty chunk */
    size_t n = (size_t)(A * P * C);
    double *pv = (double *)cu_pool_alloc(n * sizeof(double));
    int64_t *pi = (int64_t *)cu_pool_alloc(n * sizeof(int64_t));
    if (C == 1) {
        int64_t blocks = A * P < CU_MAX_BLOCKS ? A * P : CU_MAX_BLOCKS;
        k_reduce_row_chunks<T><<<(unsigned)blocks, CU_THREADS>>>(op, px, A, R, P, L, pv, pi);
        cu_check("reduce", cudaGetLastError());
    } else {
        cu_launch("reduce", k_reduce_chunks<T>, A * P * C, op, px, A, R, C, P, L, pv, pi);
    }
    cu_launch("reduce", k_reduce_fold<T>, A * C, op, po, (const double *)pv, (const int64_t *)pi, A, P, C);
    /* released after queueing: a later user of these blocks runs after the fold on the stream */
    cu_pool_release(pv);
    cu_pool_release(pi);
    return true;
}

template <typename T>
static void reduce_t(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C) {
    void *po = tensor_data_ptr(out);
    const T *px = (const T *)tensor_data_ptr(x);
    if (reduce_split<T>(op, po, px, A, R, C)) return;
    if (C == 1 && R > 64) { /* short rows go to the thread-per-output kernel below */
        if (A <= 0) return;
        unsigned grid = (unsigned)(A < CU_MAX_BLOCKS ? A : CU_MAX_BLOCKS);
        k_reduce_rows<T><<<grid, CU_THREADS>>>(op, po, px, A, R);
        cu_check("reduce", cudaGetLastError());
    } else {
        cu_launch("reduce", k_reduce_cols<T>, A * C, op, po, px, A, R, C);
    }
}

void cu_reduce(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C) {
    if (op != TENSOR_OP_SUM && op != TENSOR_OP_MAX && op != TENSOR_OP_MIN && op != TENSOR_OP_ARGMAX)
        tensor_fail(tensor_op_table[op].name, "not a reduction");
    if (R == 0) { /* empty sum */
        cu_fill(out, 0);
        return;
    }
    if (x->dtype == TENSOR_F32) reduce_t<float>(op, out, x, A, R, C);
    else reduce_t<double>(op, out, x, A, R, C);
}

/* ---- softmax: softmax_row_f32/f64 of cpu_nn.c, a block per row ----------------------------- */

static __global__ void k_softmax_f32(float *o, const float *x, int64_t rows, int64_t n, bool lg) {
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float *xr = x + row * n;
        float *orow = o + row * n;
        float m = -INFINITY;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = xr[i] > m ? xr[i] : m;
        m = block_reduce(m, MaxF());
        if (m == -INFINITY) m = 0; /* an all -inf row: NaN through 0/0, like PyTorch */
        float s = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += expf(xr[i] - m);
        s = block_reduce(s, AddF());
        if (lg) {
            float ls = m + logf(s);
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = xr[i] - ls;
        } else {
            float inv = 1.0f / s;
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = expf(xr[i] - m) * inv;
        }
    }
}

static __global__ void k_softmax_f64(double *o, const double *x, int64_t rows, int64_t n, bool lg) {
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const double *xr = x + row * n;
        double *orow = o + row * n;
        double m = -INFINITY;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = xr[i] > m ? xr[i] : m;
        m = block_reduce(m, MaxD());
        if (m == -INFINITY) m = 0;
        double s = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += exp(xr[i] - m);
        s = block_reduce(s, AddD());
        if (lg) {
            double ls = m + log(s);
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = xr[i] - ls;
        } else {
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x) orow[i] = exp(xr[i] - m) / s;
        }
    }
}

void cu_softmax(Tensor *out, const Tensor *x, int64_t rows, int64_t cols, bool lg) {
    if (rows <= 0 || cols <= 0) return;
    unsigned grid = (unsigned)(rows < CU_MAX_BLOCKS ? rows : CU_MAX_BLOCKS);
    if (out->dtype == TENSOR_F32)
        k_softmax_f32<<<grid, CU_THREADS>>>((float *)tensor_data_ptr(out), (const float *)tensor_data_ptr(x), rows, cols, lg);
    else
        k_softmax_f64<<<grid, CU_THREADS>>>((double *)tensor_data_ptr(out), (const double *)tensor_data_ptr(x), rows, cols, lg);
    cu_check("softmax", cudaGetLastError());
}

/* ---- layer_norm: ln_row of cpu_nn.c — mean and variance in double (two passes), then
 * (x - μ) · (σ² + ε)^-1/2 · w + b in the tensor's type ----------------------------------- */

/* one row's μ and r = (σ² + ε)^-1/2 over the block: double sums, two passes, rounded to T (the
 * forward and the backward must see the same values) */
template <typename T>
__device__ void ln_stats(const T *xr, int64_t n, double eps, T *mu, T *rstd) {
    double s = 0, ss = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += (double)xr[i];
    double mean = block_reduce(s, AddD()) / (double)n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        double d = (double)xr[i] - mean;
        ss += d * d;
    }
    ss = block_reduce(ss, AddD());
    *mu = (T)mean, *rstd = (T)(1.0 / sqrt(ss / (double)n + eps));
}

template <typename T>
__global__ void k_layer_norm(T *o, const T *x, const T *w, const T *b, int64_t rows, int64_t n, double eps) {
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *xr = x + row * n;
        T *orow = o + row * n;
        T mu, rstd;
        ln_stats(xr, n, eps, &mu, &rstd);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            T v = (xr[i] - mu) * rstd;
            if (w) v *= w[i];
            if (b) v += b[i];
            orow[i] = v;
        }
    }
}

void cu_layer_norm(Tensor *out, const Tensor *x, const Tensor *w, const Tensor *b, int64_t rows, int64_t cols,
                   double eps) {
    if (rows <= 0 || cols <= 0) return;
    unsigned grid = (unsigned)(rows < CU_MAX_BLOCKS ? rows : CU_MAX_BLOCKS);
    if (out->dtype == TENSOR_F32)
        k_layer_norm<float><<<grid, CU_THREADS>>>((float *)tensor_data_ptr(out), (const float *)tensor_data_ptr(x),
                                                  w ? (const float *)tensor_data_ptr(w) : NULL,
                                                  b ? (const float *)tensor_data_ptr(b) : NULL, rows, cols, eps);
    else
        k_layer_norm<double><<<grid, CU_THREADS>>>((double *)tensor_data_ptr(out), (const double *)tensor_data_ptr(x),
                                                   w ? (const double *)tensor_data_ptr(w) : NULL,
                                                   b ? (const double *)tensor_data_ptr(b) : NULL, rows, cols, eps);
    cu_check("layer_norm", cudaGetLastError());
}

/* ---- layer_norm_backward: ln_bw_row of cpu_nn.c — μ and r as k_layer_norm computes them,
 * mean(ĝ) and mean(ĝ x̂) in double, then dx = r (ĝ - mean(ĝ) - x̂ mean(ĝ x̂)), ĝ = g w, in the
 * tensor's type ------------------------------------------------------------------------------ */

template <typename T>
__global__ void k_layer_norm_backward(T *o, const T *g, const T *x, const T *w, int64_t rows, int64_t n, double eps) {
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *xr = x + row * n, *gr = g + row * n;
        T *orow = o + row * n;
        T mu, rstd;
        ln_stats(xr, n, eps, &mu, &rstd);
        double sg = 0, sgx = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            T gh = w ? gr[i] * w[i] : gr[i];
            sg += (double)gh;
            sgx += (double)(gh * ((xr[i] - mu) * rstd));
        }
        T mg = (T)(block_reduce(sg, AddD()) / (double)n), mgx = (T)(block_reduce(sgx, AddD()) / (double)n);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            T gh = w ? gr[i] * w[i] : gr[i];
            orow[i] = rstd * (gh - mg - (xr[i] - mu) * rstd * mgx);
        }
    }
}

void cu_layer_norm_backward(Tensor *out, const Tensor *g, const Tensor *x, const Tensor *w, int64_t rows, int64_t cols,
                            double eps) {
    if (rows <= 0 || cols <= 0) return;
    unsigned grid = (unsigned)(rows < CU_MAX_BLOCKS ? rows : CU_MAX_BLOCKS);
    if (out->dtype == TENSOR_F32)
        k_layer_norm_backward<float><<<grid, CU_THREADS>>>(
            (float *)tensor_data_ptr(out), (const float *)tensor_data_ptr(g), (const float *)tensor_data_ptr(x),
            w ? (const float *)tensor_data_ptr(w) : NULL, rows, cols, eps);
    else
        k_layer_norm_backward<double><<<grid, CU_THREADS>>>(
            (double *)tensor_data_ptr(out), (const double *)tensor_data_ptr(g), (const double *)tensor_data_ptr(x),
            w ? (const double *)tensor_data_ptr(w) : NULL, rows, cols, eps);
    cu_check("layer_norm_backward", cudaGetLastError());
}
