/* tests/test_geom_measure.c — the measures of datasets/geometry/geometry.h's geom_measure.c: a
 * volume estimate's relative error, the percentile box and the bounding-box diagonal of a point
 * set, a box's center and extent, a box grown by a margin. (ds_volume_error is also checked
 * with the cache summaries, tests/test_dataset.c.) */
#include <math.h>

#include "datasets/geometry/geometry.h"
#include "tests/test.h"

TEST(geom_percentile_box) {
    /* 200 points on a line in x, y = 2x, z = 5, and two strays far out on x: they are left out */
    enum { N = 202 };
    float x[3 * N];
    for (int i = 0; i < 200; i++) x[3 * i] = (float)i, x[3 * i + 1] = 2.0f * (float)i, x[3 * i + 2] = 5;
    x[600] = 1e6f, x[601] = 0, x[602] = 5, x[603] = -1e6f, x[604] = 0, x[605] = 5;
    double lo[3], hi[3];
    CHECK(ds_points_percentile_box(x, N, lo, hi) == 0);
    /* sorted ranks 2 and 199 (n/100 = 2): x from −1e6, 0, 1, ... to 198, 199, 1e6 */
    CHECK(lo[0] == 1 && hi[0] == 198);
    CHECK(lo[1] == 0 && hi[1] == 394); /* y: 0, 0, 0, 2, 4, ... 398: ranks 2 and 199 */
    CHECK(lo[2] == 5 && hi[2] == 5);
    /* under 100 points nothing is left out */
    CHECK(ds_points_percentile_box(x, 3, lo, hi) == 0 && lo[0] == 0 && hi[0] == 2);
    /* none: lo and hi as they were */
    double l0[3] = {0, 0, 0}, h0[3] = {1, 1, 1};
    CHECK(ds_points_percentile_box(x, 0, l0, h0) == 0 && l0[1] == 0 && h0[2] == 1);
}

TEST(geom_box_center_extent) {
    double c[3], e;
    ds_box_center_extent((double[]){-1, 0, 2}, (double[]){3, 1, 2.5}, c, &e);
    CHECK(c[0] == 1 && c[1] == 0.5 && c[2] == 2.25 && e == 4);
    ds_box_center_extent((double[]){INFINITY, INFINITY, INFINITY}, (double[]){-INFINITY, -INFINITY, -INFINITY}, c, &e);
    CHECK(e == 0);
}

TEST(geom_points_diagonal2) {
    float x[9] = {0, 0, 0, 3, -1, 2, 1, 3, 0}; /* box 3 × 4 × 2 */
    CHECK(ds_points_diagonal2(x, 3) == 29);
    CHECK(ds_points_diagonal2(x, 1) == 0);
    CHECK(isinf(ds_points_diagonal2(x, 0)));
}

TEST(geom_box_grow) {
    double lo[3], hi[3];
    ds_box_grow((double[]){0, -1, 2}, (double[]){4, 1, 2}, 0.25, lo, hi);
    CHECK(lo[0] == -1 && hi[0] == 5 && lo[1] == -1.5 && hi[1] == 1.5 && lo[2] == 2 && hi[2] == 2);
}
