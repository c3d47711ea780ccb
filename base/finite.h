/* base/finite.h — whether every value of an array is finite (no NaN, no infinity): the readers'
 * check of what a file gave them, in float and in double. Header only. */
#ifndef ANIMA_BASE_FINITE_H
#define ANIMA_BASE_FINITE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

static inline bool base_all_finite_f(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

static inline bool base_all_finite_d(const double *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

#endif
