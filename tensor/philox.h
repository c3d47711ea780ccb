/* tensor/philox.h — the Philox-4x32-10 block function (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC 2011), header only so that the CPU (tensor/rng.c: tensor_philox) and
 * the CUDA kernels (tensor/cuda/cuda_random.cu) run this one piece of code: it is exact integer
 * arithmetic, so both backends draw the same words. Under nvcc it is a host and device function. */
#ifndef ANIMA_TENSOR_PHILOX_H
#define ANIMA_TENSOR_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define TENSOR_PHILOX_FN static __host__ __device__ __forceinline__
#else
#define TENSOR_PHILOX_FN static inline
#endif

#define TENSOR_PHILOX_M0 0xD2511F53u
#define TENSOR_PHILOX_M1 0xCD9E8D57u
#define TENSOR_PHILOX_W0 0x9E3779B9u
#define TENSOR_PHILOX_W1 0xBB67AE85u

/* out = the four 32-bit words of block (stream, counter) under key seed: ten rounds */
TENSOR_PHILOX_FN void tensor_philox_block(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#ifdef __CUDA_ARCH__ /* the device pass of nvcc: the host compiler knows no such pragma */
#pragma unroll
#endif
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)TENSOR_PHILOX_M0 * c0, p1 = (uint64_t)TENSOR_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += TENSOR_PHILOX_W0;
        k1 += TENSOR_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

#endif
