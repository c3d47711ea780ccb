/* tools/cuemu/cuemu_float16.h — bf16 and IEEE half <-> f32 for the emulated libraries (cuBLAS's
 * 16-bit GEMM operands, NCCL's 16-bit reductions), on raw bits so that the libraries need not
 * include the runtime's cuda_bf16.h. Conversions to 16 bits round to nearest even, as the CUDA
 * intrinsics __float2bfloat16 / __float2half do. */
#ifndef ANIMA_TOOLS_CUEMU_FLOAT16_H
#define ANIMA_TOOLS_CUEMU_FLOAT16_H

#include <stdint.h>
#include <string.h>

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* round to nearest even, NaN kept a (quiet) NaN: what __float2bfloat16 does */
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) u = sign | 0x7f800000u | (man << 13); /* inf / NaN */
    else if (exp != 0) u = sign | ((exp + 112) << 23) | (man << 13);
    else if (man == 0) u = sign;
    else { /* subnormal half: normalize */
        int e = -1;
        do { man <<= 1, e++; } while (!(man & 0x400));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* round to nearest even, overflow to inf, subnormals kept */
static inline uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                   /* below the smallest normal half */
        if (a < 0x33000000u) return (uint16_t)sign;          /* below half the smallest subnormal */
        uint32_t man = (a & 0x7fffff) | 0x800000, shift = 126 - (a >> 23);
        uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = a - 0x38000000u; /* rebias 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1);
    return (uint16_t)(sign | (r >> 13));
}

#endif
