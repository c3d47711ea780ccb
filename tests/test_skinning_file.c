/* tests/test_skinning_file.c — the skinning file (datasets/corpus/skinning_file.h): an exact round trip
 * of every array and attribute (the frame included), the simulator's reader on the same file,
 * and errors that name the file and the dataset for each way a file can be wrong. */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/corpus/skinning_file.h"
#include "sim/skinning.h"
#include "test.h"

/* a small file's worth of arbitrary but valid values: 5 cubature points, 4 vertices, 2 faces */
static void make_small(DsSkinning *s, int m) {
    memset(s, 0, sizeof *s);
    s->m = m, s->nc = 5, s->nv = 4, s->nf = 2;
    s->cub_x = malloc(sizeof(double) * 15), s->cub_vol = malloc(sizeof(double) * 5);
    s->cub_w = malloc(sizeof(double) * (size_t)(5 * m)), s->cub_dw = malloc(sizeof(double) * (size_t)(15 * m));
    s->vert_x = malloc(sizeof(double) * 12), s->vert_w = malloc(sizeof(double) * (size_t)(4 * m));
    s->vert_dw = malloc(sizeof(double) * (size_t)(12 * m));
    s->faces = malloc(sizeof(int32_t) * 6);
    for (int i = 0; i < 15; i++) s->cub_x[i] = 0.1 * i - 0.7;
    for (int i = 0; i < 5; i++) s->cub_vol[i] = 0.01 * (i + 1);
    for (int i = 0; i < 5 * m; i++) s->cub_w[i] = 1.0 / (i + 3);
    for (int i = 0; i < 15 * m; i++) s->cub_dw[i] = 0.3 * i - 1.1 + 1e-17 * i; /* bits survive */
    for (int i = 0; i < 12; i++) s->vert_x[i] = (i % 3 == 0) - 0.5 * (i % 2);
    for (int i = 0; i < 4 * m; i++) s->vert_w[i] = 0.25 * (i % 4);
    for (int i = 0; i < 12 * m; i++) s->vert_dw[i] = -0.01 * i;
    const int32_t f[6] = {0, 1, 2, 0, 2, 3};
    memcpy(s->faces, f, sizeof f);
    snprintf(s->source, sizeof s->source, "test: %s", "small");
    s->has_frame = true;
    s->center[0] = 2, s->center[1] = 0.5, s->center[2] = -1, s->scale = 0.625;
}

static void tmp_path(char *p, size_t n, const char *tag) {
    snprintf(p, n, "/tmp/anima-skinfile-%s-%d.h5", tag, (int)getpid());
}

TEST(skinning_file_roundtrip_exact) {
    DsSkinning a, b;
    make_small(&a, 3);
    char path[128], err[1024];
    tmp_path(path, sizeof path, "rt");
    CHECK_MSG(ds_skinning_write(path, &a, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_skinning_read(path, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.m == 3 && b.nc == 5 && b.nv == 4 && b.nf == 2 && b.vert_dw);
    CHECK(!memcmp(a.cub_x, b.cub_x, sizeof(double) * 15) && !memcmp(a.cub_vol, b.cub_vol, sizeof(double) * 5));
    CHECK(!memcmp(a.cub_w, b.cub_w, sizeof(double) * 15) && !memcmp(a.cub_dw, b.cub_dw, sizeof(double) * 45));
    CHECK(!memcmp(a.vert_x, b.vert_x, sizeof(double) * 12) && !memcmp(a.vert_w, b.vert_w, sizeof(double) * 12));
    CHECK(!memcmp(a.vert_dw, b.vert_dw, sizeof(double) * 36) && !memcmp(a.faces, b.faces, sizeof(int32_t) * 6));
    CHECK(!strcmp(b.source, "test: small"));
    CHECK(b.has_frame && b.scale == 0.625 && b.center[0] == 2 && b.center[1] == 0.5 && b.center[2] == -1);
    ds_skinning_free(&b);
    /* the simulator reads the same file through its own name for the reader */
    SimSkinning c;
    CHECK_MSG(sim_skinning_read(path, &c, err, sizeof err) == 0, "%s", err);
    CHECK(c.m == 3 && c.nc == 5 && !memcmp(a.cub_dw, c.cub_dw, sizeof(double) * 45));
    sim_skinning_free(&c);
    /* without the optional parts: no frame, no vertex gradients, no mesh */
    a.has_frame = false;
    free(a.vert_dw), a.vert_dw = NULL;
    free(a.faces), a.faces = NULL, a.nf = 0;
    CHECK_MSG(ds_skinning_write(path, &a, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_skinning_read(path, &b, err, sizeof err) == 0, "%s", err);
    CHECK(!b.has_frame && !b.vert_dw && b.nf == 0 && b.nv == 4);
    ds_skinning_free(&b);
    ds_skinning_free(&a);
    unlink(path);
}

/* Writes a valid file, then lets `edit` damage it through the HDF5 API. */
static void damaged(const char *path, void (*edit)(hid_t f)) {
    DsSkinning a;
    make_small(&a, 2);
    char err[1024];
    CHECK_MSG(ds_skinning_write(path, &a, err, sizeof err) == 0, "%s", err);
    ds_skinning_free(&a);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0);
    edit(f);
    H5Fclose(f);
}

static void drop_grads(hid_t f) { H5Ldelete(f, "/cubature/grads", H5P_DEFAULT); }
static void drop_handles(hid_t f) { H5Adelete(f, "handles"); }
static void drop_scale(hid_t f) { H5Adelete(f, "scale"); }
static void wrong_format(hid_t f) {
    H5Adelete(f, "format");
    hid_t ty = H5Tcopy(H5T_C_S1);
    H5Tset_size(ty, 8);
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, "format", ty, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, ty, "weights");
    H5Aclose(a), H5Sclose(sp), H5Tclose(ty);
}
/* /vertices/weights with 3 columns where handles says 2 */
static void wrong_shape(hid_t f) {
    H5Ldelete(f, "/vertices/weights", H5P_DEFAULT);
    hsize_t d[2] = {4, 3};
    double z[12] = {0};
    hid_t sp = H5Screate_simple(2, d, NULL);
    hid_t ds = H5Dcreate2(f, "/vertices/weights", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
    H5Dclose(ds), H5Sclose(sp);
}
static void nan_volume(hid_t f) {
    hid_t ds = H5Dopen2(f, "/cubature/volumes", H5P_DEFAULT);
    double v[5] = {0.1, NAN, 0.1, 0.1, 0.1};
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(ds);
}

/* the format tag as h5py writes a str: a variable-length UTF-8 string */
static void vlen_format(hid_t f) {
    const char *v = DS_SKINNING_FORMAT;
    H5Adelete(f, "format");
    hid_t ty = H5Tcopy(H5T_C_S1);
    H5Tset_size(ty, H5T_VARIABLE);
    H5Tset_cset(ty, H5T_CSET_UTF8);
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, "format", ty, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, ty, &v);
    H5Aclose(a), H5Sclose(sp), H5Tclose(ty);
}

/* What libhdf5 cannot read safely when damaged is refused up front, with a message that says how
 * to write the file instead (tests/fuzz/fuzz_skinning.c found the variable-length case within
 * seconds: H5HG_read copied out of bounds): a variable-length string attribute, and a file in a
 * format older than 1.10. */
TEST(skinning_file_refuses_unchecked_hdf5) {
    char path[128], err[1024];
    tmp_path(path, sizeof path, "vlen");
    damaged(path, vlen_format);
    DsSkinning s;
    CHECK(ds_skinning_read(path, &s, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, path) && strstr(err, "variable-length") && strstr(err, "np.bytes_"), "%s", err);
    /* HDF5's default format (superblock 0), whatever it holds */
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t ty = H5Tcopy(H5T_C_S1);
    H5Tset_size(ty, sizeof DS_SKINNING_FORMAT);
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, "format", ty, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, ty, DS_SKINNING_FORMAT);
    H5Aclose(a), H5Sclose(sp), H5Tclose(ty);
    H5Fclose(f);
    CHECK(ds_skinning_read(path, &s, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, path) && strstr(err, "older than 1.10") && strstr(err, "libver"), "%s", err);
    unlink(path);
}

TEST(skinning_file_errors_name_file_and_dataset) {
    char path[128], err[1024];
    tmp_path(path, sizeof path, "err");
    const struct {
        void (*edit)(hid_t);
        const char *expect;
    } cases[] = {
        {drop_grads, "/cubature/grads"}, {drop_handles, "handles"},       {drop_scale, "scale"},
        {wrong_format, "format"},        {wrong_shape, "/vertices/weights"}, {nan_volume, "/cubature/volumes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        damaged(path, cases[i].edit);
        DsSkinning s;
        int rc = ds_skinning_read(path, &s, err, sizeof err);
        CHECK_MSG(rc != 0, "case %zu read", i);
        if (rc == 0) {
            ds_skinning_free(&s);
            continue;
        }
        CHECK_MSG(strstr(err, path) && strstr(err, cases[i].expect), "case %zu: %s", i, err);
    }
    /* missing, not HDF5 */
    DsSkinning s;
    unlink(path);
    CHECK(ds_skinning_read(path, &s, err, sizeof err) != 0 && strstr(err, path));
    FILE *f = fopen(path, "w");
    fputs("not hdf5", f);
    fclose(f);
    CHECK(ds_skinning_read(path, &s, err, sizeof err) != 0 && strstr(err, path) && strstr(err, "HDF5"));
    unlink(path);
    /* the writer refuses invalid data, naming the dataset, and leaves nothing behind */
    make_small(&s, 2);
    s.faces[4] = 7;
    CHECK(ds_skinning_write(path, &s, err, sizeof err) != 0 && strstr(err, "/mesh/faces"));
    CHECK(access(path, F_OK) != 0);
    s.faces[4] = 2, s.scale = 0;
    CHECK(ds_skinning_write(path, &s, err, sizeof err) != 0 && strstr(err, "scale"));
    ds_skinning_free(&s);
}

/* A damaged file is refused with a message naming it, never read as garbage and never a crash
 * (the 1.10 format's metadata checksums and the datasets' Fletcher-32): truncations, and byte
 * runs overwritten at spots spread over the whole file. */
TEST(skinning_file_damage_is_refused) {
    /* as checkpoint_damaged_files_give_errors: libhdf5 leaks object headers on its corrupt-file
     * error paths; valgrind suppresses those (tests/valgrind.supp) and checks the rest */
    test_no_leak_check("libhdf5 leaks on corrupt-file error paths (valgrind checks this test)");
    char path[128], bad[160], err[1024];
    tmp_path(path, sizeof path, "dmg");
    snprintf(bad, sizeof bad, "%s.bad", path);
    DsSkinning a, b;
    make_small(&a, 3);
    CHECK_MSG(ds_skinning_write(path, &a, err, sizeof err) == 0, "%s", err);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)n);
    CHECK(data && fread(data, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    int refused = 0, trials = 0;
    for (int trial = 0; trial < 40; trial++) {
        unsigned char *d = malloc((size_t)n);
        memcpy(d, data, (size_t)n);
        long len = n;
        if (trial < 8) {
            len = trial == 0 ? 0 : n * trial / 8; /* truncated */
        } else {
            long at = (long)((double)n * (trial - 8) / 32.0);
            for (int k = 0; k < 8 && at + k < n; k++) d[at + k] ^= 0x5a;
        }
        f = fopen(bad, "wb");
        fwrite(d, 1, (size_t)len, f);
        fclose(f);
        free(d);
        strcpy(err, "");
        int rc = ds_skinning_read(bad, &b, err, sizeof err);
        trials++;
        if (rc == 0) {
            /* a flip the checksums cannot see (padding, an unused byte): the data must be intact */
            CHECK_MSG(trial >= 8, "a file truncated to %ld of %ld bytes was read", len, n);
            CHECK_MSG(!memcmp(a.cub_dw, b.cub_dw, sizeof(double) * 45) && !memcmp(a.vert_w, b.vert_w, sizeof(double) * 12),
                      "flip at trial %d read back different data", trial);
            ds_skinning_free(&b);
        } else {
            refused++;
            CHECK_MSG(strstr(err, bad), "trial %d: message '%s' does not name the file", trial, err);
            /* and calls it what it is (issue 17) */
            CHECK_MSG(strstr(err, "corrupt"), "trial %d: message '%s' does not say corrupt", trial, err);
        }
    }
    /* the flips land in the superblock, object headers, checksummed data or free space */
    CHECK_MSG(refused >= trials / 2, "only %d of %d damaged files were refused", refused, trials);
    free(data);
    ds_skinning_free(&a);
    unlink(path), unlink(bad);
}

/* the preview colors: a vertex dominated by one handle takes that handle's color */
TEST(skinning_file_colors) {
    DsSkinning s;
    make_small(&s, 2);
    double w[8] = {1, 0, 0, 1, 0.5, 0.5, 1, 0}; /* vertices 0 and 3 pure handle 0, vertex 1 pure 1 */
    memcpy(s.vert_w, w, sizeof w);
    float rgb[12];
    ds_skinning_colors(&s, rgb);
    CHECK(!memcmp(rgb, rgb + 9, sizeof(float) * 3));
    CHECK(memcmp(rgb, rgb + 3, sizeof(float) * 3) != 0);
    for (int c = 0; c < 3; c++) CHECK_NEAR(rgb[6 + c], 0.5 * (rgb[c] + rgb[3 + c]), 1e-6);
    ds_skinning_free(&s);
}
