/* tensor/cuda/cuda_random.cu — uniform and normal numbers, the same ones as cpu_random in
 * tensor/cpu/cpu_misc.c: Philox-4x32-10 (Salmon et al., SC 2011; tensor/rng.c), element i
 * uses counter offset + i/2, words (0,1) for even i and (2,3) for odd i; f32 uniforms take the
 * top 24 bits of the first word, f64 uniforms 53 bits of both; normals are Box–Muller on the
 * pair's two uniforms (r cos θ for even i, r sin θ for odd i), computed in double.
 * The uniforms are exact integer arithmetic, hence bit-identical to the CPU. The normals go
 * through double log/sqrt/cos/sin: CUDA's are within 1–2 ulp of glibc's, so f32 normals
 * (rounded from double) agree bit for bit except when a value lies within an ulp of double of
 * a float rounding boundary (probability ~2^-28 per number); f64 normals agree to ~1e-16
 * relative. */
#include "cuda_kernels.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* tensor_philox, line for line */
__device__ __forceinline__ void philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* one thread per pair of elements (one Philox call), as the CPU loop */
template <typename T>
__global__ void k_random(T *o, uint64_t seed, uint64_t stream, uint64_t offset, bool normal, bool f32, int64_t n) {
    int64_t pairs = (n + 1) / 2;
    CU_LOOP(q, pairs) {
        int64_t i = 2 * q;
        uint32_t w[4];
        philox(seed, stream, offset + (uint64_t)q, w);
        double u[2], v[2];
        for (int j = 0; j < 2; j++)
            u[j] = f32 ? (double)(w[2 * j] >> 8) * (1.0 / 16777216.0)
                       : (double)(((uint64_t)w[2 * j] << 21) ^ (w[2 * j + 1] >> 11)) * (1.0 / 9007199254740992.0);
        if (normal) {
            /* no FMA may merge these: each product is rounded as on the CPU */
            double r = sqrt(__dmul_rn(-2.0, log(1.0 - u[0]))), th = __dmul_rn(6.283185307179586, u[1]);
            v[0] = __dmul_rn(r, cos(th));
            v[1] = __dmul_rn(r, sin(th));
        } else {
            v[0] = u[0];
            v[1] = u[1];
        }
        o[i] = (T)v[0];
        if (i + 1 < n) o[i + 1] = (T)v[1];
    }
}

void cu_random(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal) {
    int64_t n = tensor_numel(out);
    void *p = tensor_data_ptr(out);
    int64_t pairs = (n + 1) / 2;
    if (out->dtype == TENSOR_F32)
        cu_launch("random", k_random<float>, pairs, (float *)p, seed, stream, offset, normal, true, n);
    else if (out->dtype == TENSOR_F64)
        cu_launch("random", k_random<double>, pairs, (double *)p, seed, stream, offset, normal, false, n);
    else
        tensor_fail("random", "needs f32 or f64");
}
