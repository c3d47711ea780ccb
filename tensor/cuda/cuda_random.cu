/* tensor/cuda/cuda_random.cu — uniform and normal numbers, the same ones as cpu_random in
 * tensor/cpu/cpu_misc.c: Philox-4x32-10 (Salmon et al., SC 2011; tensor/philox.h), element i
 * uses counter offset + i/2, words (0,1) for even i and (2,3) for odd i; f32 uniforms take the
 * top 24 bits of the first word, f64 uniforms 53 bits of both; normals are Box–Muller on the
 * pair's two uniforms (r cos θ for even i, r sin θ for odd i), computed in double.
 * The uniforms are exact integer arithmetic, hence bit-identical to the CPU. The normals go
 * through double log/sqrt/cos/sin: CUDA's are within 1–2 ulp of glibc's, so f32 normals
 * (rounded from double) agree bit for bit except when a value lies within an ulp of double of
 * a float rounding boundary (probability ~2^-28 per number); f64 normals agree to ~1e-16
 * relative. */
#include "cuda_kernels.h"
#include "tensor/philox.h"

/* one thread per pair of elements (one Philox call), as the CPU loop */
template <typename T>
__global__ void k_random(T *o, uint64_t seed, uint64_t stream, uint64_t offset, bool normal, bool f32, int64_t n) {
    int64_t pairs = (n + 1) / 2;
    CU_LOOP(q, pairs) {
        int64_t i = 2 * q;
        uint32_t w[4];
        tensor_philox_block(seed, stream, offset + (uint64_t)q, w);
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
