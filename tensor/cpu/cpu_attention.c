/* tensor/cpu/cpu_attention.c — the CPU's fused multi-head attention (tensor/backend.h:
 * attention, attention_backward), the CPU half of nn_attention_tiled (nn/attention.c states the
 * math: the online softmax forward with the saved log-sum-exp, the FlashAttention-2 backward).
 *
 * The tile products go to BLAS (cblas_[sd]gemm) reading q, k, v in place through their row
 * stride, so the narrow views of a fused qkv projection need no copy. Forward: one task per
 * (batch, head, query tile); backward: one task per (batch, head), so dK/dV (summed over query
 * tiles) and dQ (summed over key tiles) are each written by one thread only. f32 and f64; bf16
 * operands reach these kernels as exact f32 copies (nn/attention.c). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "base/alloc.h"
#include "cpu.h"

/* Query × key tile: 64 × 128 scores = 32 KiB in f32, with the 64 × d output tile and a K/V
 * tile of 128 × d this stays within a core's L2 for d ≤ 128. TensorAttentionArgs.bq/bk override
 * them (nn_attention_set_tiles: tests use tiny tiles to cross tile edges on gradcheck-sized
 * inputs). */
enum { ATT_BQ_DEFAULT = 64, ATT_BK_DEFAULT = 128 };

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

static void *att_alloc(size_t n) { return base_malloc(n ? n : 1); }

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

/* ---- the table's entries ------------------------------------------------------------------------ */

static AttArgs att_args(const char *op, const TensorAttentionArgs *t) {
    if (t->dtype != TENSOR_F32 && t->dtype != TENSOR_F64)
        tensor_fail(op, "the CPU kernels take f32 or f64 operands, got %s (bf16: exact f32 copies)",
                    tensor_dtype_name(t->dtype));
    return (AttArgs){.q = t->q, .k = t->k, .v = t->v, .sq0 = t->sq0, .sq1 = t->sq1, .sk0 = t->sk0, .sk1 = t->sk1,
                     .sv0 = t->sv0, .sv1 = t->sv1, .B = t->B, .Tq = t->Tq, .Tk = t->Tk, .C = t->h * t->d, .h = t->h,
                     .d = t->d, .bq = t->bq > 0 ? t->bq : ATT_BQ_DEFAULT, .bk = t->bk > 0 ? t->bk : ATT_BK_DEFAULT,
                     .scale = t->scale, .o = t->o, .lse = t->lse, .go = t->go, .gq = t->gq, .gk = t->gk, .gv = t->gv};
}

void cpu_attention(const TensorAttentionArgs *t) {
    AttArgs a = att_args("attention", t);
    if (t->dtype == TENSOR_F32) att_forward_f32(&a);
    else att_forward_f64(&a);
}

void cpu_attention_backward(const TensorAttentionArgs *t) {
    AttArgs a = att_args("attention backward", t);
    /* the loops accumulate into the gradients; the table's contract is to write every element */
    size_t es = tensor_dtype_size(t->dtype);
    memset(a.gq, 0, es * (size_t)(a.B * a.Tq * a.C));
    memset(a.gk, 0, es * (size_t)(a.B * a.Tk * a.C));
    memset(a.gv, 0, es * (size_t)(a.B * a.Tk * a.C));
    if (t->dtype == TENSOR_F32) att_backward_f32(&a);
    else att_backward_f64(&a);
}
