/* base/sort.h — the qsort comparators the library, the programs and the tests share: doubles
 * ascending (NaN compares equal to everything, as x < y and x > y are both false), and C
 * strings by strcmp through an array of pointers. Header only. */
#ifndef ANIMA_BASE_SORT_H
#define ANIMA_BASE_SORT_H

#include <string.h>

static inline int base_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* for an array of char * */
static inline int base_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

#endif
