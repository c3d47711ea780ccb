/* tensor/cpu/cpu_math.h — f32 exp, tanh and erf written so that GCC vectorizes the loops that
 * call them (no libm calls, no branches that depend on data beyond selects). Accuracy: exp
 * ~1 ulp (Cody–Waite reduction, degree-6 minimax polynomial); tanh and erf within a few ulp
 * relative (Taylor series near 0, exp-based forms elsewhere; erfc from Numerical Recipes'
 * Chebyshev fit, |relative error| < 1.2e-7). f64 code uses libm. */
#ifndef ANIMA_CPU_MATH_H
#define ANIMA_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float am_expf(float x) {
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    float xc = x > 88.7228391f ? 88.7228391f : x;
    xc = xc < -103.9720840f ? -103.9720840f : xc;
    /* n = round(x log2 e) by the 1.5·2^23 trick: floorf is a libm call at -O2 (trapping
     * math), which stops the loop from vectorizing; ties-to-even is as good for the reduction */
    float n = (xc * log2e + 12582912.0f) - 12582912.0f;
    float r = xc - n * ln2_hi - n * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* 2^n as two factors so that n in [-150, 128] stays representable */
    int32_t n1 = (int32_t)n >> 1, n2 = (int32_t)n - n1;
    uint32_t e1 = (uint32_t)(n1 + 127) << 23, e2 = (uint32_t)(n2 + 127) << 23; /* unsigned: no UB on NaN */
    float s1, s2;
    memcpy(&s1, &e1, 4);
    memcpy(&s2, &e2, 4);
    float y = p * s1 * s2;
    y = x > 88.7228391f ? INFINITY : y;
    y = x < -103.9720840f ? 0.0f : y;
    return x != x ? x : y;
}

/* exp for x <= 0 (softmax after subtracting the max): results below 2^-126 (x < -87) are
 * flushed to 0, which lets 2^n be one normal float; NaN propagates. */
static inline float am_expf_le0(float x) {
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    float xc = x < -87.0f ? -87.0f : x;
    float n = (xc * log2e + 12582912.0f) - 12582912.0f;
    float r = xc - n * ln2_hi - n * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23; /* unsigned: no UB on NaN */
    float s;
    memcpy(&s, &e, 4);
    float y = p * s;
    return x < -87.0f ? 0.0f : y;
}

static inline float am_tanhf(float x) {
    float ax = fabsf(x), x2 = x * x;
    /* Taylor through x^15 for |x| < 0.5 (truncation < 1e-8 relative) */
    float p = -929569.0f / 638512875.0f;
    p = p * x2 + 21844.0f / 6081075.0f;
    p = p * x2 + -1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 + -17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 + -1.0f / 3.0f;
    float small = x + x * x2 * p;
    float e = am_expf(2.0f * (ax < 9.0f ? ax : 9.0f));
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = ax >= 9.0f ? 1.0f : big;
    big = x < 0 ? -big : big;
    return ax < 0.5f ? small : big;
}

/* erfc for x >= 0 with good relative accuracy in the tail (used by erf for |x| ≥ 0.5 and
 * gelu for x << 0) */
static inline float am_erfcf_pos(float ax) {
    float t = 1.0f / (1.0f + 0.5f * ax);
    float q = 0.17087277f;
    q = q * t + -0.82215223f;
    q = q * t + 1.48851587f;
    q = q * t + -1.13520398f;
    q = q * t + 0.27886807f;
    q = q * t + -0.18628806f;
    q = q * t + 0.09678418f;
    q = q * t + 0.37409196f;
    q = q * t + 1.00002368f;
    q = q * t + -1.26551223f;
    return t * am_expf(-ax * ax + q);
}

static inline float am_erff(float x) {
    float ax = fabsf(x), x2 = x * x;
    /* 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320) for |x| < 0.5 */
    float p = -1.0f / 1320.0f;
    p = p * x2 + 1.0f / 216.0f;
    p = p * x2 + -1.0f / 42.0f;
    p = p * x2 + 1.0f / 10.0f;
    p = p * x2 + -1.0f / 3.0f;
    float small = 1.1283791670955126f * (x + x * x2 * p);
    float erfc = am_erfcf_pos(ax); /* ax² = x² exactly */
    float big = 1.0f - erfc;
    big = x < 0 ? -big : big;
    return ax < 0.5f ? small : big;
}

/* Φ(x) = 0.5 erfc(-x/√2) from one erfc evaluation: 0.5 erfc(|z|) for x < 0 (accurate relative
 * to Φ far into the left tail), 1 - 0.5 erfc(|z|) for x >= 0. Near 0, Φ ≈ 0.5 and erfc's
 * absolute error (< 1.2e-7 relative to erfc <= 1) stays below 2.4e-7 relative to Φ, so no
 * separate series is needed around the origin. */
static inline float am_normcdff(float x) {
    float c = 0.5f * am_erfcf_pos(fabsf(x * 0.70710678118654752f));
    return x < 0 ? c : 1.0f - c;
}

#endif
