/* tests/test_h5file.c — base/h5file.h's helpers for attributes, paths and whole datasets, on a
 * file written through the atomic save and read back. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/h5file.h"
#include "tests/test.h"

/* a file with a double 3-vector, a scalar and a string attribute, and datasets a/b (2 × 3 floats)
 * and c (4 int32), written through base_h5_save_begin/end */
static void write_sample(const char *path) {
    char tmp[4200], err[512];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, sizeof err);
    CHECK_MSG(f >= 0, "%s", err);
    const double c[3] = {1, 2, 3}, s = 0.5;
    const float ab[6] = {1, 2, 3, 4, 5, 6};
    const int32_t cc[4] = {7, 8, 9, 10};
    int rc = base_h5_attr_write_num(f, "center", H5T_NATIVE_DOUBLE, 3, c);
    rc |= base_h5_attr_write_num(f, "scale", H5T_NATIVE_DOUBLE, 0, &s);
    rc |= base_h5_attr_i64(f, "count", 42) | base_h5_attr_str(f, "name", "sample");
    rc |= base_h5_write_checked(f, "a/b", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, 2, (hsize_t[]){2, 3}, ab, 1 << 20, false);
    rc |= base_h5_write_checked(f, "c", H5T_NATIVE_INT32, H5T_NATIVE_INT32, 1, (hsize_t[]){4}, cc, 1 << 20, true);
    CHECK(rc == 0);
    CHECK_MSG(base_h5_save_end(f, tmp, path, rc == 0, "sample", err, sizeof err) == 0, "%s", err);
}

TEST(h5_attributes_paths_datasets) {
    char dir[] = "/tmp/anima-h5-XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.h5", dir);
    base_h5_quiet();
    write_sample(path);
    hid_t f = base_h5_open_read(path, "sample", err, sizeof err);
    CHECK_MSG(f >= 0, "%s", err);

    /* numeric attributes: the count and class must fit; absent is 1, mis-shaped -1 */
    double v[3] = {0}, s = 0;
    int64_t n = 0;
    CHECK(base_h5_attr_read_num(f, "center", H5T_NATIVE_DOUBLE, 3, v) == 0 && v[0] == 1 && v[2] == 3);
    CHECK(base_h5_attr_read_num(f, "scale", H5T_NATIVE_DOUBLE, 1, &s) == 0 && s == 0.5);
    CHECK(base_h5_attr_read_num(f, "count", H5T_NATIVE_INT64, 1, &n) == 0 && n == 42);
    CHECK(base_h5_attr_read_num(f, "count", H5T_NATIVE_DOUBLE, 1, &s) == 0 && s == 42);
    CHECK(base_h5_attr_read_num(f, "missing", H5T_NATIVE_DOUBLE, 1, &s) == 1);
    CHECK(base_h5_attr_read_num(f, "center", H5T_NATIVE_DOUBLE, 1, v) == -1);
    CHECK(base_h5_attr_read_num(f, "name", H5T_NATIVE_DOUBLE, 1, v) == -1);

    /* paths: each link on the way, with or without the leading slash */
    CHECK(base_h5_path_exists(f, "a") == 1 && base_h5_path_exists(f, "a/b") == 1 && base_h5_path_exists(f, "/a/b") == 1);
    CHECK(base_h5_path_exists(f, "a/x") == 0 && base_h5_path_exists(f, "x/b") == 0 && base_h5_path_exists(f, "/x") == 0);

    /* whole datasets: any extents, or absent when optional */
    int64_t d2[2], d1[1];
    void *p = NULL;
    CHECK(base_h5_read_dims(f, path, "a/b", 2, d2, H5T_NATIVE_FLOAT, 4, false, &p, err, sizeof err) == 0);
    CHECK(d2[0] == 2 && d2[1] == 3 && ((float *)p)[5] == 6);
    free(p);
    CHECK(base_h5_read_dims(f, path, "c", 1, d1, H5T_NATIVE_DOUBLE, 8, true, &p, err, sizeof err) == 0);
    CHECK(d1[0] == 4 && ((double *)p)[3] == 10);
    free(p);
    p = (void *)1;
    CHECK(base_h5_read_dims(f, path, "x/y", 1, d1, H5T_NATIVE_FLOAT, 4, true, &p, err, sizeof err) == 1 && !p);
    err[0] = 0;
    CHECK(base_h5_read_dims(f, path, "x/y", 1, d1, H5T_NATIVE_FLOAT, 4, false, &p, err, sizeof err) == -1 && !p);
    CHECK_MSG(strstr(err, "no dataset x/y"), "%s", err);
    CHECK(base_h5_read_dims(f, path, "a/b", 1, d1, H5T_NATIVE_FLOAT, 4, false, &p, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "has rank 2, expected 1"), "%s", err);
    H5Fclose(f);
    unlink(path);
    rmdir(dir);
}
