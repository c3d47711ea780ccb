/* tensor/cpu/cpu_rnn.c — the GRU step's gates, forward and backward (tensor/backend.h:
 * TensorGruArgs), for nn/gru.c's fused layer. One pass over each batch row: the two GEMMs of the
 * step are the caller's; rows are split across threads when the batch is large enough. */
#pragma GCC optimize("no-math-errno", "no-trapping-math", "fp-contract=fast")
#include <math.h>
#include <omp.h>

#include "base/par.h"
#include "cpu.h"
#include "cpu_iter.h"
#include "cpu_math.h"

/* r = σ(a_r), z = σ(a_z), n = tanh(a_n) with a_r = gi_r + b_ir + gh_r + b_hr, a_z likewise and
 * a_n = gi_n + b_in + r (gh_n + b_hn); h' = n + z (h − n) */
#define GRU_FWD_ROW(T, SIGM, TANH)                                                                              \
    do {                                                                                                        \
        const T *gi = (const T *)a->gi + b * a->sgi, *gh = (const T *)a->gh + b * a->sgh;                      \
        const T *h = (const T *)a->h + b * a->sh, *bi = a->b_ih, *bh = a->b_hh;                                 \
        T *ho = (T *)a->h_out + b * a->sout, *g = (T *)a->gates + b * a->sgates, *gn = (T *)a->ghn + b * a->sghn; \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++) {                                                   \
            T ar = gi[j] + gh[j], az = gi[H + j] + gh[H + j], hn = gh[2 * H + j], an = gi[2 * H + j];           \
            if (bi) ar += bi[j], az += bi[H + j], an += bi[2 * H + j];                                          \
            if (bh) ar += bh[j], az += bh[H + j], hn += bh[2 * H + j];                                          \
            T r = SIGM(ar), z = SIGM(az);                                                                       \
            T n = TANH(an + r * hn);                                                                            \
            g[j] = r, g[H + j] = z, g[2 * H + j] = n, gn[j] = hn;                                               \
            ho[j] = n + z * (h[j] - n);                                                                         \
        }                                                                                                       \
    } while (0)

static inline float sigm_f32(float x) { return 1.0f / (1.0f + am_expf(-x)); }
static inline double sigm_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

CPU_CLONES static void gru_fwd_f32(const TensorGruArgs *a, int64_t b0, int64_t b1) {
    int64_t H = a->H;
    for (int64_t b = b0; b < b1; b++) GRU_FWD_ROW(float, sigm_f32, am_tanhf);
}
static void gru_fwd_f64(const TensorGruArgs *a, int64_t b0, int64_t b1) {
    int64_t H = a->H;
    for (int64_t b = b0; b < b1; b++) GRU_FWD_ROW(double, sigm_f64, tanh);
}

/* dh' = dy + dcarry; through h' = n + z (h − n): dn = dh' (1 − z), dz = dh' (h − n), dh = dh' z;
 * a_n: da_n = dn (1 − n²), so dgi_n = da_n, dgh_n = da_n r, dr = da_n (gh_n + b_hn);
 * da_r = dr r (1 − r), da_z = dz z (1 − z), each both dgi's and dgh's */
#define GRU_BWD_ROW(T)                                                                                          \
    do {                                                                                                        \
        const T *g = (const T *)a->gates + b * a->sgates, *gn = (const T *)a->ghn + b * a->sghn;                \
        const T *h = (const T *)a->h + b * a->sh, *dy = (const T *)a->dy + b * a->sdy;                          \
        const T *dc = a->dcarry ? (const T *)a->dcarry + b * H : NULL;                                          \
        T *dgi = (T *)a->dgi + b * a->sdgi, *dgh = (T *)a->dgh + b * a->sdgh, *dh = (T *)a->dh + b * H;          \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++) {                                                   \
            T d = dy[j];                                                                                        \
            if (dc) d += dc[j];                                                                                 \
            T r = g[j], z = g[H + j], n = g[2 * H + j];                                                         \
            T dan = d * (1 - z) * (1 - n * n);                                                                  \
            T dar = dan * gn[j] * r * (1 - r), daz = d * (h[j] - n) * z * (1 - z);                              \
            dgi[j] = dgh[j] = dar, dgi[H + j] = dgh[H + j] = daz;                                               \
            dgi[2 * H + j] = dan, dgh[2 * H + j] = dan * r;                                                     \
            dh[j] = d * z;                                                                                      \
        }                                                                                                       \
    } while (0)

CPU_CLONES static void gru_bwd_f32(const TensorGruArgs *a, int64_t b0, int64_t b1) {
    int64_t H = a->H;
    for (int64_t b = b0; b < b1; b++) GRU_BWD_ROW(float);
}
static void gru_bwd_f64(const TensorGruArgs *a, int64_t b0, int64_t b1) {
    int64_t H = a->H;
    for (int64_t b = b0; b < b1; b++) GRU_BWD_ROW(double);
}

/* rows split in contiguous blocks, one per thread; ~30 flops per element (the exps) */
static void rows(const TensorGruArgs *a, void (*f32)(const TensorGruArgs *, int64_t, int64_t),
                 void (*f64)(const TensorGruArgs *, int64_t, int64_t)) {
    int nt = base_par_threads(a->B, 30 * a->H);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = 0, n = 1;
#ifdef _OPENMP
        t = omp_get_thread_num(), n = omp_get_num_threads();
#endif
        int64_t b0 = a->B * t / n, b1 = a->B * (t + 1) / n;
        if (a->dtype == TENSOR_F32) f32(a, b0, b1);
        else f64(a, b0, b1);
    }
}

void cpu_gru_step(const TensorGruArgs *a) { rows(a, gru_fwd_f32, gru_fwd_f64); }
void cpu_gru_step_backward(const TensorGruArgs *a) { rows(a, gru_bwd_f32, gru_bwd_f64); }
