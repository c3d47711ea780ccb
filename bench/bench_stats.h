/* bench/bench_stats.h — the median the simulator benchmarks (bench_sim.c, bench_rig.c) report:
 * the machine is shared, so every figure they print is a median of repeated timings. */
#ifndef ANIMA_BENCH_STATS_H
#define ANIMA_BENCH_STATS_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median of v[0..n) (n ≥ 1); sorts v in place */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
