/* tensor/cuda/cuda_attention.cu — fused multi-head attention on the GPU: the CUDA half of
 * nn_attention_tiled's custom op (nn/attention.c is the CPU half and states the math). Own
 * implementation of the FlashAttention algorithm (Dao et al. 2022, alg. 1 forward, alg. 4
 * backward; the loop order of the backward as in FlashAttention-2, Dao 2023): the (Tq, Tk)
 * score matrix is never stored, only one tile of it lives in registers at a time.
 *
 * Layout of the work. A block has AT_WARPS warps; each warp owns RPW "rows" (query rows in the
 * forward and the dQ pass, key rows in the dK/dV pass), so a block owns RB = AT_WARPS·RPW rows of
 * one (batch, head). The other side is walked in tiles of 32 (one key, or one query, per lane),
 * staged in shared memory by the whole block. Per tile each lane computes the full d-long dot
 * products of its tile entry with the warp's RPW rows (reading the tile entry from a padded
 * shared row — stride DM+1 words, so the 32 lanes hit 32 banks — and the row values as
 * broadcasts), then the warp combines across lanes with shuffles: max/sum for the online
 * softmax, and for the products with V (or K, Q, dO) lane c of the output accumulates
 * Σ_j p_j · X[j][c] for c = lane, lane+32, ... with p_j broadcast by __shfl_sync. Per-row
 * accumulators (d/32 values per lane per row) stay in registers; DM (32, 64, 128) is a template
 * bound on the head dim d, which is a runtime value ≤ DM (the shared tiles are zero-padded
 * beyond d). No tensor cores: these are plain f32/f64 FMAs, accurate against the CPU's naive
 * path at the normalized-MSE 1e-7 level in f32.
 *
 * Forward (k_attn_fwd): per query row running max m, denominator l, output O (unnormalized);
 * per key tile S = scale·Q Kⱼᵀ, m' = max(m, rowmax S), P = exp(S − m'), l ← l·e^{m−m'} + ΣP,
 * O ← O·e^{m−m'} + P Vⱼ; at the end O/l and the log-sum-exp L = m + log l (saved for backward).
 *
 * Backward, two passes and no atomics (deterministic, each gradient element written once):
 *   k_attn_bwd_dq   — per query rows: D = rowsum(dO ∘ O) (stored for the second pass), then
 *                     over key tiles P = exp(S − L), dP = dO Vᵀ, dS = P ∘ (dP − D),
 *                     dQ += scale · dS K;
 *   k_attn_bwd_dkdv — per key rows: over query tiles the same P and dS (recomputed: S is
 *                     evaluated twice in the backward instead of storing it or adding dQ with
 *                     atomics), dV += Pᵀ dO, dK += scale · dSᵀ Q.
 * The two launches are ordered on the default stream (D is written by the first, read by the
 * second). Shared memory is dynamic (over 48 KiB for d = 128 in the backward: opted in per
 * kernel with cudaFuncAttributeMaxDynamicSharedMemorySize; f64 halves RPW to stay under the
 * 99 KiB of sm_89).
 *
 * Storage and arithmetic types are separate template parameters: T computes (float, double),
 * S stores q, k, v and their gradients (T itself, or __nv_bfloat16 with T = float: bf16
 * operands are widened as the tiles are loaded into shared memory and the gradients rounded
 * to nearest even once, as they are written; o, lse and dO are T). */
#include <cuda_bf16.h>
#include <math.h>

#include "cuda_kernels.h"

#define AT_WARPS 4
#define AT_TILE 32 /* tile entries: one per lane */
#define AT_FULL 0xffffffffu

template <typename T>
struct AtCfg {
    static constexpr int RPW = sizeof(T) == 8 ? 2 : 4; /* rows per warp */
    static constexpr int RB = AT_WARPS * RPW;          /* rows per block */
};

__device__ __forceinline__ float at_exp(float x) { return expf(x); }
__device__ __forceinline__ double at_exp(double x) { return exp(x); }
__device__ __forceinline__ float at_log(float x) { return logf(x); }
__device__ __forceinline__ double at_log(double x) { return log(x); }

/* storage -> arithmetic (exact) and arithmetic -> storage (round to nearest even for bf16) */
__device__ __forceinline__ float at_widen(float x) { return x; }
__device__ __forceinline__ double at_widen(double x) { return x; }
__device__ __forceinline__ float at_widen(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename S>
__device__ __forceinline__ S at_narrow(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 at_narrow<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <typename S>
__device__ __forceinline__ S at_narrow(double x) { return x; }

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(AT_FULL, v, o);
    return v;
}

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        T w = __shfl_xor_sync(AT_FULL, v, o);
        v = w > v ? w : v;
    }
    return v;
}

/* rows [t0, t0 + nrows) of a (·, T, ·) operand, columns [0, DM) of head hh, into dst with row
 * stride ld; zeros beyond T and beyond d. */
template <typename T, int DM, typename S>
__device__ __forceinline__ void at_load_rows(T *dst, int ld, int nrows, const S *base, int64_t row_stride, int64_t t0,
                                             int64_t T_, int64_t d) {
    for (int e = threadIdx.x; e < nrows * DM; e += blockDim.x) {
        int r = e / DM, c = e - r * DM;
        int64_t t = t0 + r;
        dst[r * ld + c] = (t < T_ && c < d) ? (T)at_widen(base[t * row_stride + c]) : (T)0;
    }
}

/* Blocks walk tasks (row block, batch·head) grid-stride: B·h·⌈T/RB⌉ can exceed a grid dim. */
#define AT_TASKS(task, ntask) for (int64_t task = blockIdx.x; task < (ntask); task += gridDim.x)

/* ---- forward ------------------------------------------------------------------------------- */

template <typename T, typename S, int DM>
__global__ void __launch_bounds__(AT_WARPS * 32) k_attn_fwd(const TensorAttentionArgs a) {
    constexpr int RPW = AtCfg<T>::RPW, RB = AtCfg<T>::RB, NI = DM / 32;
    extern __shared__ __align__(16) unsigned char at_smem[];
    T *Qs = (T *)at_smem;                /* RB × DM: the block's query rows (broadcast reads) */
    T *Ks = Qs + RB * DM;                /* AT_TILE × (DM+1): lane j reads row j */
    T *Vs = Ks + AT_TILE * (DM + 1);     /* AT_TILE × DM: lane c reads column c */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t Tq = a.Tq, Tk = a.Tk, h = a.h, d = a.d, C = h * d;
    const int64_t nqt = (Tq + RB - 1) / RB, ntask = nqt * a.B * h;
    const T scale = (T)a.scale;
    AT_TASKS(task, ntask) {
        const int64_t bh = task / nqt, b = bh / h, hh = bh - b * h, i0 = (task - bh * nqt) * RB;
        const S *q = (const S *)a.q + b * a.sq0 + hh * d;
        const S *k = (const S *)a.k + b * a.sk0 + hh * d;
        const S *v = (const S *)a.v + b * a.sv0 + hh * d;
        __syncthreads(); /* the previous task's reads of Qs are done */
        at_load_rows<T, DM>(Qs, DM, RB, q, a.sq1, i0, Tq, d);
        T m[RPW], l[RPW], o[RPW][NI];
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            m[r] = -INFINITY, l[r] = 0;
#pragma unroll
            for (int i = 0; i < NI; i++) o[r][i] = 0;
        }
        const T *qw = Qs + warp * RPW * DM;
        for (int64_t j0 = 0; j0 < Tk; j0 += AT_TILE) {
            __syncthreads(); /* the previous tile is consumed */
            at_load_rows<T, DM>(Ks, DM + 1, AT_TILE, k, a.sk1, j0, Tk, d);
            at_load_rows<T, DM>(Vs, DM, AT_TILE, v, a.sv1, j0, Tk, d);
            __syncthreads();
            const int nk = (int)(Tk - j0 < AT_TILE ? Tk - j0 : AT_TILE);
            T s[RPW];
#pragma unroll
            for (int r = 0; r < RPW; r++) s[r] = 0;
            const T *kr = Ks + lane * (DM + 1);
#pragma unroll 4
            for (int c = 0; c < (int)d; c++) {
                T kc = kr[c];
#pragma unroll
                for (int r = 0; r < RPW; r++) s[r] += qw[r * DM + c] * kc;
            }
            T p[RPW];
#pragma unroll
            for (int r = 0; r < RPW; r++) {
                T sr = lane < nk ? s[r] * scale : (T)-INFINITY;
                T mx = warp_max(sr), mn = m[r] > mx ? m[r] : mx;
                /* e^{m − m'} rescales what was summed under the old max (0 on the first tile) */
                T corr = m[r] == (T)-INFINITY ? (T)0 : at_exp(m[r] - mn);
                p[r] = lane < nk ? at_exp(sr - mn) : (T)0;
                l[r] = l[r] * corr + warp_sum(p[r]);
                m[r] = mn;
#pragma unroll
                for (int i = 0; i < NI; i++) o[r][i] *= corr;
            }
            for (int j = 0; j < nk; j++) {
                T vv[NI];
#pragma unroll
                for (int i = 0; i < NI; i++) vv[i] = Vs[j * DM + lane + 32 * i];
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    T pj = __shfl_sync(AT_FULL, p[r], j);
#pragma unroll
                    for (int i = 0; i < NI; i++) o[r][i] += pj * vv[i];
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            int64_t t = i0 + warp * RPW + r;
            if (t >= Tq) continue;
            T inv = (T)1 / l[r];
            T *orow = (T *)a.o + (b * Tq + t) * C + hh * d;
#pragma unroll
            for (int i = 0; i < NI; i++) {
                int c = lane + 32 * i;
                if (c < d) orow[c] = o[r][i] * inv;
            }
            if (lane == 0) ((T *)a.lse)[bh * Tq + t] = m[r] + at_log(l[r]);
        }
    }
}

/* ---- backward, pass 1: D and dQ ----------------------------------------------------------- */

template <typename T, typename S, int DM>
__global__ void __launch_bounds__(AT_WARPS * 32) k_attn_bwd_dq(const TensorAttentionArgs a, T *Dout) {
    constexpr int RPW = AtCfg<T>::RPW, RB = AtCfg<T>::RB, NI = DM / 32;
    extern __shared__ __align__(16) unsigned char at_smem[];
    T *Qs = (T *)at_smem;             /* RB × DM */
    T *Gs = Qs + RB * DM;             /* RB × DM: dO rows */
    T *Ks = Gs + RB * DM;             /* AT_TILE × (DM+1): row reads by lane, column reads by c */
    T *Vs = Ks + AT_TILE * (DM + 1);  /* AT_TILE × (DM+1) */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t Tq = a.Tq, Tk = a.Tk, h = a.h, d = a.d, C = h * d;
    const int64_t nqt = (Tq + RB - 1) / RB, ntask = nqt * a.B * h;
    const T scale = (T)a.scale;
    AT_TASKS(task, ntask) {
        const int64_t bh = task / nqt, b = bh / h, hh = bh - b * h, i0 = (task - bh * nqt) * RB;
        const S *q = (const S *)a.q + b * a.sq0 + hh * d;
        const S *k = (const S *)a.k + b * a.sk0 + hh * d;
        const S *v = (const S *)a.v + b * a.sv0 + hh * d;
        const T *go = (const T *)a.go + b * Tq * C + hh * d;
        const T *o = (const T *)a.o + b * Tq * C + hh * d;
        __syncthreads();
        at_load_rows<T, DM>(Qs, DM, RB, q, a.sq1, i0, Tq, d);
        at_load_rows<T, DM>(Gs, DM, RB, go, C, i0, Tq, d);
        __syncthreads();
        /* Dᵢ = Σ_c dOᵢc Oᵢc = Σⱼ Pᵢⱼ dPᵢⱼ (the softmax Jacobian's correction term) */
        T L[RPW], D[RPW], dq[RPW][NI];
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            int64_t t = i0 + warp * RPW + r;
            T acc = 0;
            if (t < Tq)
                for (int c = lane; c < (int)d; c += 32) acc += Gs[(warp * RPW + r) * DM + c] * o[t * C + c];
            D[r] = warp_sum(acc);
            L[r] = t < Tq ? ((const T *)a.lse)[bh * Tq + t] : (T)0;
            if (t < Tq && lane == 0) Dout[bh * Tq + t] = D[r];
#pragma unroll
            for (int i = 0; i < NI; i++) dq[r][i] = 0;
        }
        const T *qw = Qs + warp * RPW * DM, *gw = Gs + warp * RPW * DM;
        for (int64_t j0 = 0; j0 < Tk; j0 += AT_TILE) {
            __syncthreads();
            at_load_rows<T, DM>(Ks, DM + 1, AT_TILE, k, a.sk1, j0, Tk, d);
            at_load_rows<T, DM>(Vs, DM + 1, AT_TILE, v, a.sv1, j0, Tk, d);
            __syncthreads();
            const int nk = (int)(Tk - j0 < AT_TILE ? Tk - j0 : AT_TILE);
            T s[RPW], dp[RPW];
#pragma unroll
            for (int r = 0; r < RPW; r++) s[r] = 0, dp[r] = 0;
            const T *kr = Ks + lane * (DM + 1), *vr = Vs + lane * (DM + 1);
#pragma unroll 4
            for (int c = 0; c < (int)d; c++) {
                T kc = kr[c], vc = vr[c];
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    s[r] += qw[r * DM + c] * kc;
                    dp[r] += gw[r * DM + c] * vc;
                }
            }
            T ds[RPW];
#pragma unroll
            for (int r = 0; r < RPW; r++) {
                T p = lane < nk ? at_exp(s[r] * scale - L[r]) : (T)0;
                ds[r] = p * (dp[r] - D[r]);
            }
            for (int j = 0; j < nk; j++) {
                T kk[NI];
#pragma unroll
                for (int i = 0; i < NI; i++) kk[i] = Ks[j * (DM + 1) + lane + 32 * i];
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    T dsj = __shfl_sync(AT_FULL, ds[r], j);
#pragma unroll
                    for (int i = 0; i < NI; i++) dq[r][i] += dsj * kk[i];
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            int64_t t = i0 + warp * RPW + r;
            if (t >= Tq) continue;
            S *grow = (S *)a.gq + (b * Tq + t) * C + hh * d;
#pragma unroll
            for (int i = 0; i < NI; i++) {
                int c = lane + 32 * i;
                if (c < d) grow[c] = at_narrow<S>(scale * dq[r][i]);
            }
        }
    }
}

/* ---- backward, pass 2: dK and dV ----------------------------------------------------------- */

template <typename T, typename S, int DM>
__global__ void __launch_bounds__(AT_WARPS * 32) k_attn_bwd_dkdv(const TensorAttentionArgs a, const T *Din) {
    constexpr int RPW = AtCfg<T>::RPW, RB = AtCfg<T>::RB, NI = DM / 32;
    extern __shared__ __align__(16) unsigned char at_smem[];
    T *Kr = (T *)at_smem;             /* RB × DM: the block's key rows */
    T *Vr = Kr + RB * DM;             /* RB × DM */
    T *Qt = Vr + RB * DM;             /* AT_TILE × (DM+1): a tile of queries */
    T *Gt = Qt + AT_TILE * (DM + 1);  /* AT_TILE × (DM+1): their dO */
    T *Lt = Gt + AT_TILE * (DM + 1);  /* AT_TILE */
    T *Dt = Lt + AT_TILE;             /* AT_TILE */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t Tq = a.Tq, Tk = a.Tk, h = a.h, d = a.d, C = h * d;
    const int64_t nkt = (Tk + RB - 1) / RB, ntask = nkt * a.B * h;
    const T scale = (T)a.scale;
    AT_TASKS(task, ntask) {
        const int64_t bh = task / nkt, b = bh / h, hh = bh - b * h, j0 = (task - bh * nkt) * RB;
        const S *q = (const S *)a.q + b * a.sq0 + hh * d;
        const S *k = (const S *)a.k + b * a.sk0 + hh * d;
        const S *v = (const S *)a.v + b * a.sv0 + hh * d;
        const T *go = (const T *)a.go + b * Tq * C + hh * d;
        __syncthreads();
        at_load_rows<T, DM>(Kr, DM, RB, k, a.sk1, j0, Tk, d);
        at_load_rows<T, DM>(Vr, DM, RB, v, a.sv1, j0, Tk, d);
        T dk[RPW][NI], dv[RPW][NI];
#pragma unroll
        for (int r = 0; r < RPW; r++)
#pragma unroll
            for (int i = 0; i < NI; i++) dk[r][i] = 0, dv[r][i] = 0;
        const T *kw = Kr + warp * RPW * DM, *vw = Vr + warp * RPW * DM;
        for (int64_t i0 = 0; i0 < Tq; i0 += AT_TILE) {
            __syncthreads();
            at_load_rows<T, DM>(Qt, DM + 1, AT_TILE, q, a.sq1, i0, Tq, d);
            at_load_rows<T, DM>(Gt, DM + 1, AT_TILE, go, C, i0, Tq, d);
            if (threadIdx.x < AT_TILE) {
                int64_t t = i0 + threadIdx.x;
                Lt[threadIdx.x] = t < Tq ? ((const T *)a.lse)[bh * Tq + t] : (T)0;
                Dt[threadIdx.x] = t < Tq ? Din[bh * Tq + t] : (T)0;
            }
            __syncthreads();
            const int nq = (int)(Tq - i0 < AT_TILE ? Tq - i0 : AT_TILE);
            T s[RPW], dp[RPW];
#pragma unroll
            for (int r = 0; r < RPW; r++) s[r] = 0, dp[r] = 0;
            const T *qr = Qt + lane * (DM + 1), *gr = Gt + lane * (DM + 1);
#pragma unroll 4
            for (int c = 0; c < (int)d; c++) {
                T qc = qr[c], gc = gr[c];
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    s[r] += kw[r * DM + c] * qc;
                    dp[r] += vw[r * DM + c] * gc;
                }
            }
            T p[RPW], ds[RPW];
            const T Ll = Lt[lane], Dl = Dt[lane];
#pragma unroll
            for (int r = 0; r < RPW; r++) {
                p[r] = lane < nq ? at_exp(s[r] * scale - Ll) : (T)0;
                ds[r] = p[r] * (dp[r] - Dl);
            }
            for (int j = 0; j < nq; j++) {
                T gg[NI], qq[NI];
#pragma unroll
                for (int i = 0; i < NI; i++) {
                    gg[i] = Gt[j * (DM + 1) + lane + 32 * i];
                    qq[i] = Qt[j * (DM + 1) + lane + 32 * i];
                }
#pragma unroll
                for (int r = 0; r < RPW; r++) {
                    T pj = __shfl_sync(AT_FULL, p[r], j), dsj = __shfl_sync(AT_FULL, ds[r], j);
#pragma unroll
                    for (int i = 0; i < NI; i++) {
                        dv[r][i] += pj * gg[i];
                        dk[r][i] += dsj * qq[i];
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RPW; r++) {
            int64_t t = j0 + warp * RPW + r;
            if (t >= Tk) continue;
            S *gkrow = (S *)a.gk + (b * Tk + t) * C + hh * d, *gvrow = (S *)a.gv + (b * Tk + t) * C + hh * d;
#pragma unroll
            for (int i = 0; i < NI; i++) {
                int c = lane + 32 * i;
                if (c < d) gkrow[c] = at_narrow<S>(scale * dk[r][i]), gvrow[c] = at_narrow<S>(dv[r][i]);
            }
        }
    }
}

/* ---- launch ----------------------------------------------------------------------------------- */

template <typename T, int DM>
static size_t smem_fwd(void) {
    return sizeof(T) * ((size_t)AtCfg<T>::RB * DM + (size_t)AT_TILE * (DM + 1) + (size_t)AT_TILE * DM);
}
template <typename T, int DM>
static size_t smem_dq(void) {
    return sizeof(T) * (2 * (size_t)AtCfg<T>::RB * DM + 2 * (size_t)AT_TILE * (DM + 1));
}
template <typename T, int DM>
static size_t smem_dkdv(void) {
    return sizeof(T) * (2 * (size_t)AtCfg<T>::RB * DM + 2 * (size_t)AT_TILE * (DM + 1) + 2 * (size_t)AT_TILE);
}

/* Grid: one block per task up to a cap; blocks then loop (AT_TASKS). The emulated build sets a
 * tiny cap so that the task loop runs more than once. */
#ifndef AT_MAX_GRID
#define AT_MAX_GRID ((int64_t)1 << 20)
#endif
static unsigned at_grid(int64_t rows, int64_t rb, int64_t bh) {
    int64_t n = (rows + rb - 1) / rb * bh;
    const int64_t cap = AT_MAX_GRID;
    return (unsigned)(n < cap ? n : cap);
}

/* Dynamic shared memory above 48 KiB must be opted into per kernel; done on every launch
 * (a cheap attribute set) so it holds whichever device is current. */
template <typename K>
static void at_smem_attr(const char *op, K kernel, size_t bytes) {
    if (bytes > 48 * 1024)
        cu_check(op, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <typename T, typename S, int DM>
static void fwd_t(const TensorAttentionArgs *a) {
    size_t sm = smem_fwd<T, DM>();
    at_smem_attr("attention", k_attn_fwd<T, S, DM>, sm);
    k_attn_fwd<T, S, DM><<<at_grid(a->Tq, AtCfg<T>::RB, a->B * a->h), AT_WARPS * 32, sm>>>(*a);
    cu_check("attention", cudaGetLastError());
}

template <typename T, typename S, int DM>
static void bwd_t(const TensorAttentionArgs *a) {
    T *D = (T *)cu_pool_alloc(sizeof(T) * (size_t)(a->B * a->h * a->Tq));
    size_t s1 = smem_dq<T, DM>(), s2 = smem_dkdv<T, DM>();
    at_smem_attr("attention backward", k_attn_bwd_dq<T, S, DM>, s1);
    at_smem_attr("attention backward", k_attn_bwd_dkdv<T, S, DM>, s2);
    k_attn_bwd_dq<T, S, DM><<<at_grid(a->Tq, AtCfg<T>::RB, a->B * a->h), AT_WARPS * 32, s1>>>(*a, D);
    cu_check("attention backward", cudaGetLastError());
    k_attn_bwd_dkdv<T, S, DM><<<at_grid(a->Tk, AtCfg<T>::RB, a->B * a->h), AT_WARPS * 32, s2>>>(*a, (const T *)D);
    cu_check("attention backward", cudaGetLastError());
    cu_pool_release(D); /* a later user of the block is queued after the launches above */
}

template <typename T, typename S>
static void dispatch(const TensorAttentionArgs *a, bool backward) {
    if (a->d <= 32) backward ? bwd_t<T, S, 32>(a) : fwd_t<T, S, 32>(a);
    else if (a->d <= 64) backward ? bwd_t<T, S, 64>(a) : fwd_t<T, S, 64>(a);
    else backward ? bwd_t<T, S, 128>(a) : fwd_t<T, S, 128>(a);
}

static void dispatch_dtype(const TensorAttentionArgs *a, bool backward) {
    if (a->dtype == TENSOR_F32) dispatch<float, float>(a, backward);
    else if (a->dtype == TENSOR_BF16) dispatch<float, __nv_bfloat16>(a, backward);
    else dispatch<double, double>(a, backward);
}

static void check_args(const char *op, const TensorAttentionArgs *a) {
    if (a->d < 1 || a->d > TENSOR_ATTENTION_MAX_D)
        tensor_fail(op, "head dim %lld: the CUDA kernel takes 1..%d", (long long)a->d, TENSOR_ATTENTION_MAX_D);
    if (a->dtype != TENSOR_F32 && a->dtype != TENSOR_F64 && a->dtype != TENSOR_BF16)
        tensor_fail(op, "needs f32, f64 or bf16, got %s", tensor_dtype_name(a->dtype));
}

void cu_attention(const TensorAttentionArgs *a) {
    check_args("attention", a);
    if (a->B * a->h * a->Tq == 0) return;
    dispatch_dtype(a, false);
}

void cu_attention_backward(const TensorAttentionArgs *a) {
    check_args("attention backward", a);
    if (a->B * a->h == 0 || (a->Tq == 0 && a->Tk == 0)) return;
    dispatch_dtype(a, true);
}
