/* tensor/cuda/cuda_rnn.cu — the GRU step's gates, forward and backward (tensor/backend.h:
 * TensorGruArgs; tensor/cpu/cpu_rnn.c is the reference): one thread per (row, unit), the two
 * GEMMs of the step are the caller's (cuBLAS through the matmul kernel). */
#include "cuda_kernels.h"

template <typename T> __device__ static inline T sigm(T x) { return T(1) / (T(1) + exp(-x)); }

template <typename T>
__global__ void k_gru_step(TensorGruArgs a) {
    const int64_t H = a.H;
    CU_LOOP(e, a.B * H) {
        int64_t b = e / H, j = e % H;
        const T *gi = (const T *)a.gi + b * a.sgi, *gh = (const T *)a.gh + b * a.sgh;
        const T *bi = (const T *)a.b_ih, *bh = (const T *)a.b_hh;
        T ar = gi[j] + gh[j], az = gi[H + j] + gh[H + j], hn = gh[2 * H + j], an = gi[2 * H + j];
        if (bi) ar += bi[j], az += bi[H + j], an += bi[2 * H + j];
        if (bh) ar += bh[j], az += bh[H + j], hn += bh[2 * H + j];
        T r = sigm(ar), z = sigm(az), n = tanh(an + r * hn);
        T *g = (T *)a.gates + b * a.sgates;
        g[j] = r, g[H + j] = z, g[2 * H + j] = n;
        ((T *)a.ghn)[b * a.sghn + j] = hn;
        T h = ((const T *)a.h)[b * a.sh + j];
        ((T *)a.h_out)[b * a.sout + j] = n + z * (h - n);
    }
}

template <typename T>
__global__ void k_gru_step_backward(TensorGruArgs a) {
    const int64_t H = a.H;
    CU_LOOP(e, a.B * H) {
        int64_t b = e / H, j = e % H;
        const T *g = (const T *)a.gates + b * a.sgates;
        T d = ((const T *)a.dy)[b * a.sdy + j];
        if (a.dcarry) d += ((const T *)a.dcarry)[b * H + j];
        T r = g[j], z = g[H + j], n = g[2 * H + j], hn = ((const T *)a.ghn)[b * a.sghn + j];
        T h = ((const T *)a.h)[b * a.sh + j];
        T dan = d * (T(1) - z) * (T(1) - n * n);
        T dar = dan * hn * r * (T(1) - r), daz = d * (h - n) * z * (T(1) - z);
        T *dgi = (T *)a.dgi + b * a.sdgi, *dgh = (T *)a.dgh + b * a.sdgh;
        dgi[j] = dgh[j] = dar, dgi[H + j] = dgh[H + j] = daz;
        dgi[2 * H + j] = dan, dgh[2 * H + j] = dan * r;
        ((T *)a.dh)[b * H + j] = d * z;
    }
}

void cu_gru_step(const TensorGruArgs *a) {
    if (a->dtype == TENSOR_F32) cu_launch("gru_step", k_gru_step<float>, a->B * a->H, *a);
    else cu_launch("gru_step", k_gru_step<double>, a->B * a->H, *a);
}

void cu_gru_step_backward(const TensorGruArgs *a) {
    if (a->dtype == TENSOR_F32) cu_launch("gru_step_backward", k_gru_step_backward<float>, a->B * a->H, *a);
    else cu_launch("gru_step_backward", k_gru_step_backward<double>, a->B * a->H, *a);
}
