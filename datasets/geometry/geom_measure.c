/* datasets/geometry/geom_measure.c — measures of volume estimates and point sets (geometry.h). */
#include <math.h>
#include <stdlib.h>

#include "datasets/geometry/geometry.h"

double ds_volume_error(double estimate, double volume) { return (estimate - volume) / fmax(fabs(volume), 1e-12); }

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int ds_points_percentile_box(const float *x, int64_t n, double lo[3], double hi[3]) {
    float *v = malloc(sizeof(float) * (size_t)(n + 1));
    if (!v) return -1;
    for (int a = 0; a < 3 && n > 0; a++) {
        for (int64_t i = 0; i < n; i++) v[i] = x[3 * i + a];
        qsort(v, (size_t)n, sizeof *v, cmp_float);
        lo[a] = v[n / 100], hi[a] = v[n - 1 - n / 100];
    }
    free(v);
    return 0;
}

void ds_box_center_extent(const double lo[3], const double hi[3], double center[3], double *extent) {
    *extent = 0;
    for (int i = 0; i < 3; i++) center[i] = 0.5 * (lo[i] + hi[i]), *extent = fmax(*extent, hi[i] - lo[i]);
}

double ds_points_diagonal2(const float *x, int64_t n) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, d2 = 0;
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) lo[c] = fmin(lo[c], x[i * 3 + c]), hi[c] = fmax(hi[c], x[i * 3 + c]);
    for (int c = 0; c < 3; c++) d2 += (hi[c] - lo[c]) * (hi[c] - lo[c]);
    return d2;
}

void ds_box_grow(const double lo[3], const double hi[3], double margin, double out_lo[3], double out_hi[3]) {
    for (int a = 0; a < 3; a++) {
        double m = margin * (hi[a] - lo[a]);
        out_lo[a] = lo[a] - m, out_hi[a] = hi[a] + m;
    }
}
