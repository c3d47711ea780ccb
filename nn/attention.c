/* nn/attention.c — memory-efficient ("tiled", flash-style) scaled dot-product attention on the
 * CPU, registered as a custom op (autograd/custom.h) with a hand-written backward.
 *
 * Why: the naive path (nn_attention_naive) materializes the (B, h, Tq, Tk) score and
 * probability tensors, and its tape keeps them for backward: at B = 1, h = 8, T = 4096 that is
 * 2 × 512 MiB in f32. Here no more than one BQ × BK tile of scores exists per thread.
 *
 * Forward: the online softmax of Milakov & Gimelshein 2018 ("Online normalizer calculation for
 * softmax", alg. 3), applied to attention as in Dao et al. 2022 (FlashAttention, alg. 1): for
 * each query tile keep a running row max m and denominator l; for each key tile
 *     S = scale · Q Kⱼᵀ,  m' = max(m, rowmax S),  P = exp(S − m'),
 *     l ← l·e^{m−m'} + rowsum P,  O ← O·e^{m−m'} + P Vⱼ,
 * and at the end O ← O / l, with the row's log-sum-exp L = m + log l saved for backward.
 *
 * Backward (Dao et al. 2022, alg. 4; FlashAttention-2, Dao 2023, alg. 2): with Dᵢ = rowsum(dO ∘ O)
 * (= Σⱼ Pᵢⱼ dPᵢⱼ, the softmax Jacobian's correction term), per tile pair
 *     P = exp(S − L),  dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − D),
 *     dQ += scale · dS K,  dK += scale · dSᵀ Q,
 * recomputing S instead of storing it. One (batch, head) pair is one task, so dK/dV (summed over
 * query tiles) and dQ (summed over key tiles) are each written by one thread only.
 *
 * The tile products go to BLAS (cblas_[sd]gemm) reading q, k, v in place through their row
 * stride, so the narrow views of a fused qkv projection need no copy. The backward is raw
 * loops; under create_graph (a backward that must be differentiable again) it recomputes
 * through the naive tensor-op path instead, so second derivatives stay correct.
 *
 * On a GPU the same custom op runs the backend's fused kernels (TensorBackend.attention and
 * .attention_backward; tensor/cuda/cuda_attention.cu, the same algorithm) on the same operands
 * and with the same saved log-sum-exp, for head dims up to TENSOR_ATTENTION_MAX_D.
 *
 * bf16 q, k, v (mixed precision, nn_set_matmul_dtype): the scores, the softmax and both
 * products are f32, the output and the log-sum-exp are f32, and the gradients of q, k, v are
 * rounded to bf16 once at the end. The GPU kernels load bf16 tiles and convert them in
 * registers; the CPU runs its f32 kernels on f32 copies of q, k, v (exact), which is the same
 * arithmetic. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/custom.h"
#include "attention.h"
#include "base/alloc.h"
#include "tensor/backend.h"

/* Query × key tile: 64 × 128 scores = 32 KiB in f32, with the 64 × d output tile and a K/V
 * tile of 128 × d this stays within a core's L2 for d ≤ 128. Settable (tests use tiny tiles to
 * cross tile edges on gradcheck-sized inputs). */
enum { ATT_BQ_DEFAULT = 64, ATT_BK_DEFAULT = 128 };
static int att_bq = ATT_BQ_DEFAULT, att_bk = ATT_BK_DEFAULT;

void nn_attention_set_tiles(int bq, int bk) {
    att_bq = bq > 0 ? bq : ATT_BQ_DEFAULT;
    att_bk = bk > 0 ? bk : ATT_BK_DEFAULT;
}

typedef struct {
    const void *q, *k, *v; /* first element of each (B, T, C) operand, last stride 1 */
    int64_t sq0, sq1, sk0, sk1, sv0, sv1;
    int64_t B, Tq, Tk, C, h, d;
    int bq, bk; /* tile sizes */
    double scale;
    void *o, *lse;                 /* out (B, Tq, C) contiguous, lse (B, h, Tq) */
    const void *go;                /* backward: dO (B, Tq, C) contiguous */
    void *gq, *gk, *gv;            /* backward: zeroed contiguous (B, T, C) gradients */
} AttArgs;

static void *att_alloc(size_t n) {
    void *p = base_malloc(n ? n : 1);
    return p;
}

/* ---- row primitives -----------------------------------------------------------------------------
 * There are Tq·Tk exponentials against 4·Tq·Tk·d GEMM flops per head, so a libm call per
 * element would dominate the kernel: the f32 exp is inline and branch-free so that GCC
 * vectorizes the loops (AVX2 too, where a select inside exp stops if-conversion: the clamp to
 * −87 is its own loop). Cody–Waite reduction and the degree-6 polynomial of
 * tensor/cpu/cpu_math.h (~1 ulp); arguments are ≤ 0 up to rounding, and below −87 (e^−87 ≈
 * 1.6e-38) the result is e^−87 instead of a smaller number or 0 — invisible next to the row's
 * max term, which is 1. f64 (gradchecks) uses libm. */
static inline float att_expf(float x) {
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    float n = (x * log2e + 12582912.0f) - 12582912.0f; /* round(x log2 e) by the 1.5·2^23 trick */
    float r = x - n * ln2_hi - n * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t e = ((int32_t)n + 127) << 23; /* 2^n, n in [-126, 0] */
    float s;
    memcpy(&s, &e, 4);
    return p * s;
}

static float att_rowmax_f32(const float *restrict x, int n, float m) {
#pragma omp simd reduction(max : m)
    for (int c = 0; c < n; c++) m = x[c] > m ? x[c] : m;
    return m;
}

/* x ← exp(x − shift); returns the sum */
static float att_rowexp_f32(float *restrict x, int n, float shift) {
#pragma omp simd
    for (int c = 0; c < n; c++) {
        float t = x[c] - shift;
        x[c] = t > -87.0f ? t : -87.0f;
    }
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < n; c++) {
        float e = att_expf(x[c]);
        x[c] = e;
        sum += e;
    }
    return sum;
}

/* dS = P ∘ (dP − D), in place over dP */
static void att_rowds_f32(float *restrict dp, const float *restrict p, int n, float D) {
#pragma omp simd
    for (int c = 0; c < n; c++) dp[c] = p[c] * (dp[c] - D);
}

static double att_rowmax_f64(const double *restrict x, int n, double m) {
    for (int c = 0; c < n; c++) m = x[c] > m ? x[c] : m;
    return m;
}

static double att_rowexp_f64(double *restrict x, int n, double shift) {
    double sum = 0;
    for (int c = 0; c < n; c++) sum += x[c] = exp(x[c] - shift);
    return sum;
}

static void att_rowds_f64(double *restrict dp, const double *restrict p, int n, double D) {
    for (int c = 0; c < n; c++) dp[c] = p[c] * (dp[c] - D);
}

/* The kernels for one element type: T the type, GEMM cblas_sgemm or cblas_dgemm, EXP/LOG the
 * libm functions of that type (for the per-row scalars), att_row*_SFX the row loops. */
#define ATT_KERNELS(SFX, T, GEMM, EXP, LOG)                                                                \
    static void att_forward_##SFX(const AttArgs *a) {                                                      \
        const int64_t B = a->B, Tq = a->Tq, Tk = a->Tk, C = a->C, h = a->h, d = a->d;                      \
        const int BQ = a->bq, BK = a->bk;                                                                  \
        const int64_t nqt = (Tq + BQ - 1) / BQ, ntask = B * h * nqt;                                       \
        const T scale = (T)a->scale;                                                                       \
        _Pragma("omp parallel if (ntask > 1)") {                                                           \
            T *s = att_alloc(sizeof(T) * BQ * BK), *m = att_alloc(sizeof(T) * BQ),                         \
              *l = att_alloc(sizeof(T) * BQ);                                                              \
            _Pragma("omp for schedule(dynamic)") for (int64_t task = 0; task < ntask; task++) {            \
                int64_t b = task / (h * nqt), hh = task / nqt % h, i0 = task % nqt * BQ;                   \
                int nq = (int)(Tq - i0 < BQ ? Tq - i0 : BQ);                                               \
                const T *Q = (const T *)a->q + b * a->sq0 + i0 * a->sq1 + hh * d;                          \
                T *O = (T *)a->o + (b * Tq + i0) * C + hh * d;                                             \
                for (int r = 0; r < nq; r++) {                                                             \
                    m[r] = -INFINITY, l[r] = 0;                                                            \
                    memset(O + r * C, 0, sizeof(T) * (size_t)d);                                           \
                }                                                                                          \
                for (int64_t j0 = 0; j0 < Tk; j0 += BK) {                                                  \
                    int nk = (int)(Tk - j0 < BK ? Tk - j0 : BK);                                           \
                    const T *K = (const T *)a->k + b * a->sk0 + j0 * a->sk1 + hh * d;                      \
                    const T *V = (const T *)a->v + b * a->sv0 + j0 * a->sv1 + hh * d;                      \
                    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, (int)d, scale, Q, (int)a->sq1, K, \
                         (int)a->sk1, (T)0, s, BK);                                                        \
                    for (int r = 0; r < nq; r++) {                                                         \
                        T *row = s + r * BK, mx = att_rowmax_##SFX(row, nk, m[r]);                         \
                        /* e^{m − m'} rescales what was summed under the old max (0 on the first tile) */  \
                        T corr = m[r] == -INFINITY ? (T)0 : EXP(m[r] - mx);                                \
                        T sum = att_rowexp_##SFX(row, nk, mx);                                             \
                        l[r] = l[r] * corr + sum;                                                          \
                        m[r] = mx;                                                                         \
                        if (corr != (T)1)                                                                  \
                            for (int64_t c = 0; c < d; c++) O[r * C + c] *= corr;                          \
                    }                                                                                      \
                    GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, (int)d, nk, (T)1, s, BK, V,        \
                         (int)a->sv1, (T)1, O, (int)C);                                                    \
                }                                                                                          \
                T *L = (T *)a->lse + (b * h + hh) * Tq + i0;                                               \
                for (int r = 0; r < nq; r++) {                                                             \
                    T inv = (T)1 / l[r];                                                                   \
                    for (int64_t c = 0; c < d; c++) O[r * C + c] *= inv;                                   \
                    L[r] = m[r] + LOG(l[r]);                                                               \
                }                                                                                          \
            }                                                                                              \
            free(s), free(m), free(l);                                                                     \
        }                                                                                                  \
    }                                                                                                      \
                                                                                                           \
    static void att_backward_##SFX(const AttArgs *a) {                                                     \
        const int64_t B = a->B, Tq = a->Tq, Tk = a->Tk, C = a->C, h = a->h, d = a->d, ntask = B * h;       \
        const T scale = (T)a->scale;                                                                       \
        const int BQ = a->bq, BK = a->bk;                                                                  \
        _Pragma("omp parallel if (ntask > 1)") {                                                           \
            T *p = att_alloc(sizeof(T) * BQ * BK), *dp = att_alloc(sizeof(T) * BQ * BK),                   \
              *D = att_alloc(sizeof(T) * (size_t)Tq);                                                      \
            _Pragma("omp for schedule(dynamic)") for (int64_t task = 0; task < ntask; task++) {            \
                int64_t b = task / h, hh = task % h;                                                       \
                const T *Ob = (const T *)a->o + b * Tq * C + hh * d;                                       \
                const T *GOb = (const T *)a->go + b * Tq * C + hh * d;                                     \
                const T *Lb = (const T *)a->lse + (b * h + hh) * Tq;                                       \
                for (int64_t t = 0; t < Tq; t++) {                                                         \
                    T acc = 0;                                                                             \
                    for (int64_t c = 0; c < d; c++) acc += GOb[t * C + c] * Ob[t * C + c];                 \
                    D[t] = acc;                                                                            \
                }                                                                                          \
                for (int64_t j0 = 0; j0 < Tk; j0 += BK) {                                                  \
                    int nk = (int)(Tk - j0 < BK ? Tk - j0 : BK);                                           \
                    const T *K = (const T *)a->k + b * a->sk0 + j0 * a->sk1 + hh * d;                      \
                    const T *V = (const T *)a->v + b * a->sv0 + j0 * a->sv1 + hh * d;                      \
                    T *GK = (T *)a->gk + (b * Tk + j0) * C + hh * d;                                       \
                    T *GV = (T *)a->gv + (b * Tk + j0) * C + hh * d;                                       \
                    for (int64_t i0 = 0; i0 < Tq; i0 += BQ) {                                              \
                        int nq = (int)(Tq - i0 < BQ ? Tq - i0 : BQ);                                       \
                        const T *Q = (const T *)a->q + b * a->sq0 + i0 * a->sq1 + hh * d;                  \
                        const T *GO = GOb + i0 * C;                                                        \
                        T *GQ = (T *)a->gq + (b * Tq + i0) * C + hh * d;                                   \
                        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, (int)d, scale, Q, (int)a->sq1, K, \
                             (int)a->sk1, (T)0, p, BK);                                                    \
                        for (int r = 0; r < nq; r++) (void)att_rowexp_##SFX(p + r * BK, nk, Lb[i0 + r]);   \
                        /* dV += Pᵀ dO */                                                                  \
                        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, nk, (int)d, nq, (T)1, p, BK, GO, (int)C, \
                             (T)1, GV, (int)C);                                                            \
                        /* dP = dO Vᵀ, then dS = P ∘ (dP − D) in place */                                  \
                        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, (int)d, (T)1, GO, (int)C, V, \
                             (int)a->sv1, (T)0, dp, BK);                                                   \
                        for (int r = 0; r < nq; r++) att_rowds_##SFX(dp + r * BK, p + r * BK, nk, D[i0 + r]); \
                        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, (int)d, nk, scale, dp, BK, K,  \
                             (int)a->sk1, (T)1, GQ, (int)C);                                               \
                        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, nk, (int)d, nq, scale, dp, BK, Q,    \
                             (int)a->sq1, (T)1, GK, (int)C);                                               \
                    }                                                                                      \
                }                                                                                          \
            }                                                                                              \
            free(p), free(dp), free(D);                                                                    \
        }                                                                                                  \
    }

ATT_KERNELS(f32, float, cblas_sgemm, expf, logf)
ATT_KERNELS(f64, double, cblas_dgemm, exp, log)

/* ---- the custom op ---------------------------------------------------------------------------- */

typedef struct {
    int heads;
    Tensor *lse; /* (B, heads, Tq), written by forward */
} AttCtx;

/* x itself when BLAS can read its (B, T, C) rows in place (unit last stride, row stride ≥ C),
 * else a contiguous copy. bf16 on the CPU (widen): an f32 copy — exact — for the f32 kernels,
 * which then do what a bf16 kernel with f32 arithmetic does (the CUDA kernels load bf16 and
 * convert in registers). */
static Tensor *att_operand(Tensor *x, bool widen) {
    if (widen) return tensor_cast(x, TENSOR_F32);
    if (x->stride[2] == 1 && (x->stride[1] >= x->shape[2] || x->shape[1] == 1)) return x;
    return tensor_contiguous(x);
}

static void att_args(AttArgs *a, Tensor *q, Tensor *k, Tensor *v, int heads) {
    memset(a, 0, sizeof *a);
    a->q = tensor_data_ptr(q), a->k = tensor_data_ptr(k), a->v = tensor_data_ptr(v);
    a->sq0 = q->stride[0], a->sq1 = q->shape[1] == 1 ? q->shape[2] : q->stride[1];
    a->sk0 = k->stride[0], a->sk1 = k->shape[1] == 1 ? k->shape[2] : k->stride[1];
    a->sv0 = v->stride[0], a->sv1 = v->shape[1] == 1 ? v->shape[2] : v->stride[1];
    a->B = q->shape[0], a->Tq = q->shape[1], a->Tk = k->shape[1], a->C = q->shape[2], a->h = heads;
    a->d = a->C / heads;
    a->scale = 1.0 / sqrt((double)a->d); /* Vaswani et al. 2017, eq. 1 */
    a->bq = att_bq, a->bk = att_bk;
}

/* The device half: the same operands in the backend's argument block. */
static TensorAttentionArgs att_dev_args(const AttArgs *a, TensorDType dt) {
    return (TensorAttentionArgs){.dtype = dt, .q = a->q, .k = a->k, .v = a->v, .sq0 = a->sq0, .sq1 = a->sq1,
                                 .sk0 = a->sk0, .sk1 = a->sk1, .sv0 = a->sv0, .sv1 = a->sv1, .B = a->B,
                                 .Tq = a->Tq, .Tk = a->Tk, .h = a->h, .d = a->d, .scale = a->scale, .o = a->o,
                                 .lse = a->lse, .go = a->go, .gq = a->gq, .gk = a->gk, .gv = a->gv};
}

/* bf16 q, k, v give an f32 output and log-sum-exp (the softmax and both products accumulate in
 * f32) and bf16 gradients. */
static TensorDType att_out_dtype(const Tensor *q) { return q->dtype == TENSOR_BF16 ? TENSOR_F32 : q->dtype; }

static Tensor *att_forward(void *ctx, int n, Tensor *const *in) {
    (void)n;
    AttCtx *c = ctx;
    TensorDevice dev = tensor_device(in[0]);
    bool widen = dev == TENSOR_CPU && in[0]->dtype == TENSOR_BF16;
    Tensor *q = att_operand(in[0], widen), *k = att_operand(in[1], widen), *v = att_operand(in[2], widen);
    AttArgs a;
    att_args(&a, q, k, v, c->heads);
    Tensor *o = tensor_empty_on(3, (int64_t[]){a.B, a.Tq, a.C}, att_out_dtype(q), dev);
    c->lse = tensor_empty_on(3, (int64_t[]){a.B, a.h, a.Tq}, att_out_dtype(q), dev);
    a.o = tensor_data_ptr(o), a.lse = tensor_data_ptr(c->lse);
    if (dev != TENSOR_CPU) {
        TensorAttentionArgs da = att_dev_args(&a, q->dtype);
        tensor_backend_for(dev)->attention(&da);
        return o;
    }
    if (q->dtype == TENSOR_F32) att_forward_f32(&a);
    else att_forward_f64(&a);
    return o;
}

static void att_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)n;
    AttCtx *c = ctx;
    if (tensor_grad_enabled()) {
        /* create_graph: the gradients must be differentiable again (second derivatives, e.g.
         * a loss on ∂output/∂input). The raw kernels record nothing, so recompute through the
         * naive, tensor-op path — correct to any order, at the naive path's memory. */
        Tensor *y = nn_attention_naive(in[0], in[1], in[2], c->heads);
        Tensor *gr[3];
        ag_grad(1, &y, &g, 3, in, gr, true);
        for (int i = 0; i < 3; i++)
            if (need[i]) gin[i] = gr[i] ? gr[i] : tensor_zeros_like(in[i]);
        return;
    }
    bool prev = ag_no_grad_begin(); /* raw kernels: nothing here is recorded */
    TensorDevice dev = tensor_device(in[0]);
    bool widen = dev == TENSOR_CPU && in[0]->dtype == TENSOR_BF16;
    Tensor *q = att_operand(in[0], widen), *k = att_operand(in[1], widen), *v = att_operand(in[2], widen);
    AttArgs a;
    att_args(&a, q, k, v, c->heads);
    Tensor *go = tensor_contiguous(g), *o = tensor_contiguous(out);
    Tensor *gq, *gk, *gv;
    if (dev != TENSOR_CPU) { /* the kernels write every element: no zeroing */
        gq = tensor_empty_on(3, (int64_t[]){a.B, a.Tq, a.C}, q->dtype, dev);
        gk = tensor_empty_on(3, (int64_t[]){a.B, a.Tk, a.C}, q->dtype, dev);
        gv = tensor_empty_on(3, (int64_t[]){a.B, a.Tk, a.C}, q->dtype, dev);
    } else {
        gq = tensor_zeros(TENSOR_SHAPE(a.B, a.Tq, a.C), q->dtype);
        gk = tensor_zeros(TENSOR_SHAPE(a.B, a.Tk, a.C), q->dtype);
        gv = tensor_zeros(TENSOR_SHAPE(a.B, a.Tk, a.C), q->dtype);
    }
    a.o = tensor_data_ptr(o), a.lse = tensor_data_ptr(c->lse), a.go = tensor_data_ptr(go);
    a.gq = tensor_data_ptr(gq), a.gk = tensor_data_ptr(gk), a.gv = tensor_data_ptr(gv);
    if (dev != TENSOR_CPU) {
        TensorAttentionArgs da = att_dev_args(&a, q->dtype);
        tensor_backend_for(dev)->attention_backward(&da);
    } else if (q->dtype == TENSOR_F32) {
        att_backward_f32(&a);
    } else {
        att_backward_f64(&a);
    }
    if (widen) { /* a gradient has its tensor's dtype */
        gq = tensor_cast(gq, TENSOR_BF16);
        gk = tensor_cast(gk, TENSOR_BF16);
        gv = tensor_cast(gv, TENSOR_BF16);
    }
    ag_no_grad_end(prev);
    if (need[0]) gin[0] = gq;
    if (need[1]) gin[1] = gk;
    if (need[2]) gin[2] = gv;
}

static const AgCustomOp att_op = {"nn_attention_tiled", att_forward, att_backward};

void nn_attention_check(const char *op, Tensor *q, Tensor *k, Tensor *v, int heads) {
    char sq[128], sk[128], sv[128];
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || heads < 1 || q->shape[2] % heads != 0 ||
        k->shape[2] != q->shape[2] || v->shape[2] != q->shape[2] || k->shape[0] != q->shape[0] ||
        v->shape[0] != q->shape[0] || k->shape[1] != v->shape[1] || k->shape[1] < 1)
        tensor_fail(op, "q %s, k %s, v %s with %d heads: need (B, Tq, C), (B, Tk, C), (B, Tk, C), Tk ≥ 1, "
                    "C divisible by heads", tensor_shape_str(q, sq), tensor_shape_str(k, sk),
                    tensor_shape_str(v, sv), heads);
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        tensor_fail(op, "q, k, v dtypes differ (%s, %s, %s)", tensor_dtype_name(q->dtype),
                    tensor_dtype_name(k->dtype), tensor_dtype_name(v->dtype));
}

/* Whether the backend of dev has the fused kernels for head dim d (the CPU always has). */
static bool att_device_ok(TensorDevice dev, int64_t d) {
    if (dev == TENSOR_CPU) return true;
    const TensorBackend *be = tensor_backend_for(dev);
    return be->attention && be->attention_backward && d <= TENSOR_ATTENTION_MAX_D;
}

Tensor *nn_attention_tiled(Tensor *q, Tensor *k, Tensor *v, int heads) {
    nn_attention_check("nn_attention_tiled", q, k, v, heads);
    TensorDevice dev = tensor_device(q);
    if (tensor_device(k) != dev || tensor_device(v) != dev)
        tensor_fail("nn_attention_tiled", "q, k, v on different devices");
    if (q->dtype == TENSOR_I64) tensor_fail("nn_attention_tiled", "needs f32, f64 or bf16, got i64");
    if (!att_device_ok(dev, q->shape[2] / heads))
        tensor_fail("nn_attention_tiled", "head dim %lld on %s: the fused kernel takes up to %d (nn_attention "
                    "falls back to nn_attention_naive)", (long long)(q->shape[2] / heads),
                    tensor_backend_for(dev)->name, TENSOR_ATTENTION_MAX_D);
    AttCtx c = {.heads = heads};
    Tensor *in[3] = {q, k, v};
    return ag_custom_apply(&att_op, 3, in, &c, sizeof c);
}

/* ---- the naive path ----------------------------------------------------------------------- */

/* (B, T, C) -> (B, h, T, d): heads become a batch dim of the matmuls */
static Tensor *split_heads(Tensor *x, int heads) {
    int64_t B = x->shape[0], T = x->shape[1], C = x->shape[2];
    Tensor *r = tensor_reshape(x, 4, (int64_t[]){B, T, heads, C / heads});
    return tensor_permute(r, 4, (int[]){0, 2, 1, 3});
}

Tensor *nn_attention_naive(Tensor *q, Tensor *k, Tensor *v, int heads) {
    nn_attention_check("nn_attention", q, k, v, heads);
    int64_t B = q->shape[0], Tq = q->shape[1], C = q->shape[2], d = C / heads;
    Tensor *qh = split_heads(q, heads), *kh = split_heads(k, heads), *vh = split_heads(v, heads);
    /* softmax(Q Kᵀ / √d) V (Vaswani et al. 2017, eq. 1); √d keeps the logits' variance O(1) */
    Tensor *s = tensor_matmul(qh, tensor_transpose(kh, -1, -2));
    s = tensor_mul_scalar(s, 1.0 / sqrt((double)d));
    Tensor *p = tensor_softmax(s, -1);
    if (vh->dtype == TENSOR_BF16) p = tensor_cast(p, TENSOR_BF16); /* s and p are f32 */
    Tensor *o = tensor_matmul(p, vh);
    o = tensor_permute(o, 4, (int[]){0, 2, 1, 3});
    return tensor_reshape(o, 3, (int64_t[]){B, Tq, C});
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static NnAttentionMode att_mode = NN_ATTENTION_AUTO;

NnAttentionMode nn_attention_set_mode(NnAttentionMode mode) {
    NnAttentionMode prev = att_mode;
    att_mode = mode;
    return prev;
}

bool nn_attention_tiled_supports(const Tensor *q, int heads) {
    if (q->dtype == TENSOR_I64 || heads < 1 || q->ndim != 3) return false;
    return att_device_ok(tensor_device(q), q->shape[2] / heads);
}

bool nn_attention_wants_tiled(const Tensor *q, const Tensor *k) {
    TensorDevice dev = tensor_device(q);
    if (tensor_device(k) != dev || q->dtype == TENSOR_I64) return false;
    if (dev != TENSOR_CPU && !tensor_backend_for(dev)->attention) return false;
    NnAttentionMode mode = att_mode;
    const char *env = getenv("ANIMA_ATTENTION");
    if (mode == NN_ATTENTION_AUTO && env) {
        if (!strcmp(env, "tiled")) mode = NN_ATTENTION_TILED;
        else if (!strcmp(env, "naive")) mode = NN_ATTENTION_NAIVE;
    }
    if (mode != NN_ATTENTION_AUTO) return mode == NN_ATTENTION_TILED;
    /* On a GPU the fused kernel at every size: one launch instead of the naive path's five
     * (two batched GEMMs, scale, softmax, permute-copy), and O(T) memory on the tape. */
    if (dev != TENSOR_CPU) return true;
    /* Below this the (Tq, Tk) score matrix is small, the naive path's two batched GEMMs are
     * at least as fast, and its backward is differentiable again. */
    return q->shape[1] * k->shape[1] > NN_ATTENTION_TILED_MIN;
}
