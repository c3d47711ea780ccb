/* tools/cuemu/include/cuda_bf16.h — cuemu's bfloat16: the 16-bit storage type and the two
 * conversions anima uses (round to nearest even with NaN kept, and the exact widening). */
#ifndef CUEMU_CUDA_BF16_H
#define CUEMU_CUDA_BF16_H

#include "cuda_runtime.h"

#ifdef __cplusplus
struct __nv_bfloat16 {
    unsigned short __x;
};

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    unsigned u = __float_as_uint(f);
    __nv_bfloat16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) r.__x = (unsigned short)((u >> 16) | 0x40); /* quiet NaN */
    else r.__x = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return r;
}
inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.__x << 16); }
#endif

#endif
