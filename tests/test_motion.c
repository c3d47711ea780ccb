/* tests/test_motion.c — the multi-view motion benchmark (datasets/motion/): the D-NeRF /
 * nerfstudio reader on hand-written folders in both styles, a write/read round trip whose
 * cameras put a rendered surface point on a covered pixel, and the reader on truncated and
 * damaged JSON (an error naming the file, never a crash). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/geometry/geometry.h"
#include "datasets/motion/dnerf.h"
#include "datasets/render/image.h"
#include "datasets/render/raster.h"
#include "tests/test.h"

/* ---- helpers ------------------------------------------------------------------------------------ */

static void tmpdir_make(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/anima-test-motion-XXXXXX");
    if (!mkdtemp(dir)) abort();
}

static void tmpdir_remove(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* nothing to do: a leftover /tmp folder */
    }
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
}

/* a w×h PNG with `channels` channels, pixel (x, y) = a pattern of (x, y, k) */
static void write_png(const char *path, int w, int h, int channels) {
    DsImage img;
    char err[512];
    if (ds_image_init(&img, w, h, channels, err, sizeof err)) abort();
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < channels; k++) img.data[(y * w + x) * channels + k] = (uint8_t)(10 * x + 20 * y + 50 * k);
    if (ds_image_write(path, &img, err, sizeof err)) abort();
    ds_image_free(&img);
}

/* ---- the reader on hand-written folders -------------------------------------------------------- */

/* D-NeRF's own layout: camera_angle_x only, file_path without an extension, "./" prefixed,
 * OpenGL camera-to-world, time per frame. The camera of frames[0] sits at (0, 0, 4) with the
 * identity rotation, so it looks along −z at the origin with world y up in the image. */
TEST(motion_dnerf_reads_dnerf_style) {
    char dir[256], path[512], err[1024];
    tmpdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/train", dir);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/train/r_000.png", dir);
    write_png(path, 8, 6, 3);
    snprintf(path, sizeof path, "%s/train/r_001.png", dir);
    write_png(path, 8, 6, 4);
    const char *json =
        "{\"camera_angle_x\": 0.6911112070083618,\n"
        " \"frames\": [\n"
        "  {\"file_path\": \"./train/r_000\", \"rotation\": 0.0314, \"time\": 0,\n"
        "   \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]},\n"
        "  {\"file_path\": \"./train/r_001\", \"rotation\": 0.0314, \"time\": 0.5,\n"
        "   \"transform_matrix\": [[0,0,1,4],[0,1,0,0],[-1,0,0,0],[0,0,0,1]]}]}\n";
    snprintf(path, sizeof path, "%s/transforms_train.json", dir);
    write_text(path, json);
    DsDnerfSplit s;
    CHECK_MSG(ds_dnerf_load(dir, "train", &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n == 2 && s.width == 8 && s.height == 6);
    if (s.n == 2) {
        double f = 0.5 * 8 / tan(0.5 * 0.6911112070083618);
        CHECK_NEAR(s.views[0].cam.fx, f, 1e-12);
        CHECK_NEAR(s.views[0].cam.fy, f, 1e-12);
        CHECK_NEAR(s.views[0].cam.cx, 4, 0);
        CHECK_NEAR(s.views[0].cam.cy, 3, 0);
        CHECK_NEAR(s.views[1].time, 0.5, 0);
        CHECK(strstr(s.views[0].path, "train/r_000.png") != NULL);
        /* the origin projects to the principal point at depth 4; world +x to the right, world
         * +y up (smaller v) */
        double uv[2], d;
        const double O[3] = {0, 0, 0}, X[3] = {0.5, 0, 0}, Y[3] = {0, 0.5, 0};
        CHECK(ds_camera_project(&s.views[0].cam, O, uv, &d));
        CHECK_NEAR(uv[0], 4, 1e-12);
        CHECK_NEAR(uv[1], 3, 1e-12);
        CHECK_NEAR(d, 4, 1e-12);
        CHECK(ds_camera_project(&s.views[0].cam, X, uv, &d) && uv[0] > 4);
        CHECK(ds_camera_project(&s.views[0].cam, Y, uv, &d) && uv[1] < 3);
        /* frames[1]: at (4, 0, 0) looking along −x */
        double C[3];
        ds_camera_center(&s.views[1].cam, C);
        CHECK_NEAR(C[0], 4, 1e-12);
        CHECK(ds_camera_project(&s.views[1].cam, O, uv, &d) && fabs(d - 4) < 1e-12);
        /* pixels: RGB gets alpha 1, RGBA keeps its alpha; (x, y) = (3, 2) */
        const float *p0 = s.views[0].rgba + 4 * (2 * 8 + 3), *p1 = s.views[1].rgba + 4 * (2 * 8 + 3);
        CHECK_NEAR(p0[0], (10 * 3 + 20 * 2) / 255.0, 1e-6);
        CHECK_NEAR(p0[2], (10 * 3 + 20 * 2 + 100) / 255.0, 1e-6);
        CHECK_NEAR(p0[3], 1, 0);
        CHECK_NEAR(p1[3], (10 * 3 + 20 * 2 + 150) / 255.0, 1e-6);
    }
    ds_dnerf_free(&s);
    CHECK(s.n == 0 && s.views == NULL);
    /* a split that is not there names its file */
    CHECK(ds_dnerf_load(dir, "val", &s, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "transforms_val.json") != NULL, "%s", err);
    tmpdir_remove(dir);
}

/* nerfstudio's layout: fl_x fl_y cx cy w h, file paths with the extension, no time (a static
 * scene: 0), a frame with its own intrinsics, OPENCV with zero distortion. */
TEST(motion_dnerf_reads_nerfstudio_style) {
    char dir[256], path[512], err[1024];
    tmpdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/images", dir);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/images/frame_00001.png", dir);
    write_png(path, 10, 7, 1);
    snprintf(path, sizeof path, "%s/images/frame_00002.png", dir);
    write_png(path, 10, 7, 2);
    const char *json =
        "{\"camera_model\": \"OPENCV\", \"fl_x\": 12.5, \"fl_y\": 13.0, \"cx\": 5.25, \"cy\": 3.5, \"w\": 10, \"h\": 7,\n"
        " \"k1\": 0, \"k2\": 0, \"p1\": 0, \"p2\": 0,\n"
        " \"frames\": [\n"
        "  {\"file_path\": \"images/frame_00001.png\",\n"
        "   \"transform_matrix\": [[1,0,0,0.5],[0,1,0,-0.25],[0,0,1,3],[0,0,0,1]]},\n"
        "  {\"file_path\": \"images/frame_00002.png\", \"fl_x\": 20, \"fl_y\": 21,\n"
        "   \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,3],[0,0,0,1]], \"colmap_im_id\": 2}],\n"
        " \"applied_transform\": [[1,0,0,0],[0,1,0,0],[0,0,1,0]]}\n";
    snprintf(path, sizeof path, "%s/transforms_test.json", dir);
    write_text(path, json);
    DsDnerfSplit s;
    CHECK_MSG(ds_dnerf_load(dir, "test", &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n == 2 && s.width == 10 && s.height == 7);
    if (s.n == 2) {
        CHECK(s.views[0].cam.fx == 12.5 && s.views[0].cam.fy == 13.0 && s.views[0].cam.cx == 5.25 &&
              s.views[0].cam.cy == 3.5);
        CHECK(s.views[1].cam.fx == 20 && s.views[1].cam.fy == 21 && s.views[1].cam.cx == 5.25);
        CHECK(s.views[0].time == 0 && s.views[1].time == 0);
        double C[3];
        ds_camera_center(&s.views[0].cam, C);
        CHECK_NEAR(C[0], 0.5, 1e-15);
        CHECK_NEAR(C[1], -0.25, 1e-15);
        CHECK_NEAR(C[2], 3, 1e-15);
        const float *g = s.views[0].rgba + 4 * (1 * 10 + 2), *ga = s.views[1].rgba + 4 * (1 * 10 + 2);
        CHECK_NEAR(g[0], 40 / 255.0, 1e-6);
        CHECK(g[0] == g[1] && g[1] == g[2] && g[3] == 1);
        CHECK_NEAR(ga[3], 90 / 255.0, 1e-6);
    }
    ds_dnerf_free(&s);
    tmpdir_remove(dir);
}

/* ---- round trip -------------------------------------------------------------------------------- */

/* A sphere rendered from a ring of look-at cameras, written with ds_dnerf_write_json and PNGs,
 * read back: the cameras equal the written ones, and every mesh vertex facing a camera projects
 * onto a pixel the read image covers (alpha > 0). */
TEST(motion_dnerf_roundtrip_cameras_and_coverage) {
    char dir[256], path[512], err[1024];
    tmpdir_make(dir, sizeof dir);
    DsMesh m;
    CHECK(ds_mesh_make_uv_sphere(0.6f, 12, 24, &m) == 0);
    enum { NV = 5 };
    DsCamera cams[NV];
    const double target[3] = {0.1, 0.2, -0.1};
    ds_camera_ring(NV, 3.0, 1.0, target, 40, 30, 45.0, cams);
    DsDnerfFrameOut fr[NV];
    char names[NV][64];
    snprintf(path, sizeof path, "%s/train", dir);
    CHECK(mkdir(path, 0755) == 0);
    for (int i = 0; i < NV; i++) {
        DsRender r;
        CHECK_MSG(ds_raster_render(&m, &cams[i], NULL, &r, err, sizeof err) == 0, "%s", err);
        snprintf(names[i], sizeof names[i], "./train/f%04d_v%02d", i, i);
        snprintf(path, sizeof path, "%s/train/f%04d_v%02d.png", dir, i, i);
        CHECK_MSG(ds_render_write_png(path, &r, true, err, sizeof err) == 0, "%s", err);
        ds_render_free(&r);
        fr[i] = (DsDnerfFrameOut){cams[i], (float)i / (NV - 1), names[i], i, i};
    }
    snprintf(path, sizeof path, "%s/transforms_train.json", dir);
    CHECK_MSG(ds_dnerf_write_json(path, fr, NV, "\"note\": \"test\"", err, sizeof err) == 0, "%s", err);
    DsDnerfSplit s;
    CHECK_MSG(ds_dnerf_load(dir, "train", &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n == NV && s.width == 40 && s.height == 30);
    int checked = 0;
    for (int i = 0; i < s.n && s.n == NV; i++) {
        const DsCamera *a = &cams[i], *b = &s.views[i].cam;
        CHECK(a->width == b->width && a->height == b->height);
        CHECK(a->fx == b->fx && a->fy == b->fy && a->cx == b->cx && a->cy == b->cy);
        for (int k = 0; k < 9; k++) CHECK_NEAR(a->R[k], b->R[k], 1e-14);
        for (int k = 0; k < 3; k++) CHECK_NEAR(a->t[k], b->t[k], 1e-13);
        CHECK_NEAR(s.views[i].time, (float)i / (NV - 1), 0);
        double C[3];
        ds_camera_center(b, C);
        for (int64_t v = 0; v < m.nv; v++) {
            double X[3] = {m.v[3 * v], m.v[3 * v + 1], m.v[3 * v + 2]}, uv[2], d;
            /* a vertex whose normal (X / |X|) is within 60 degrees of the view direction is on the
             * visible surface and away from the silhouette, where a coarse mesh's vertices lie
             * on the outline itself */
            double dir3[3] = {C[0] - X[0], C[1] - X[1], C[2] - X[2]};
            double dn = sqrt(dir3[0] * dir3[0] + dir3[1] * dir3[1] + dir3[2] * dir3[2]) * 0.6;
            if (dir3[0] * X[0] + dir3[1] * X[1] + dir3[2] * X[2] <= 0.5 * dn) continue;
            CHECK(ds_camera_project(b, X, uv, &d));
            int px = (int)floor(uv[0]), py = (int)floor(uv[1]);
            if (px < 0 || py < 0 || px >= s.width || py >= s.height) continue;
            CHECK_MSG(s.views[i].rgba[4 * (py * s.width + px) + 3] > 0, "view %d vertex %lld at (%d, %d) uncovered", i,
                      (long long)v, px, py);
            checked++;
        }
    }
    CHECK(checked > 50);
    ds_dnerf_free(&s);
    ds_mesh_free(&m);
    tmpdir_remove(dir);
}

/* ---- malformed input ----------------------------------------------------------------------------- */

static const char *GOOD =
    "{\"camera_angle_x\": 0.7, \"w\": 4, \"h\": 3,\n"
    " \"frames\": [\n"
    "  {\"file_path\": \"./a\", \"time\": 0.25, \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]},\n"
    "  {\"file_path\": \"./b\", \"time\": 1, \"transform_matrix\": [[0,0,1,4],[0,1,0,0],[-1,0,0,0],[0,0,0,1]]}]}\n";

static void fuzz_folder(char *dir, size_t n) {
    char path[512];
    tmpdir_make(dir, n);
    snprintf(path, sizeof path, "%s/a.png", dir);
    write_png(path, 4, 3, 4);
    snprintf(path, sizeof path, "%s/b.png", dir);
    write_png(path, 4, 3, 3);
}

/* Every truncation of a valid file and random byte damage: 0 with a consistent split, or -1 with
 * a message naming the file — never a crash, never a split left allocated on failure. */
TEST(motion_dnerf_fuzz_truncated_and_damaged) {
    char dir[256], err[1024];
    fuzz_folder(dir, sizeof dir);
    DsDnerfSplit s;
    size_t len = strlen(GOOD);
    CHECK_MSG(ds_dnerf_load_text("fuzz.json", GOOD, len, dir, &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n == 2);
    ds_dnerf_free(&s);
    char *buf = malloc(len + 1);
    int failures = 0;
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(buf, GOOD, cut);
        buf[cut] = 0;
        err[0] = 0;
        int rc = ds_dnerf_load_text("fuzz.json", buf, cut, dir, &s, err, sizeof err);
        /* only cuts in the trailing whitespace leave a complete document */
        if (rc == 0) CHECK_MSG(cut >= len - 1 && s.n == 2, "cut %zu parsed", cut);
        else {
            failures++;
            CHECK_MSG(strstr(err, "fuzz.json") != NULL, "cut %zu: '%s'", cut, err);
            CHECK(s.n == 0 && s.views == NULL);
        }
        ds_dnerf_free(&s);
    }
    CHECK(failures >= (int)len - 1);
    uint32_t seed = 12345;
    static const char junk[] = "{}[]\",:0-e.9x \n\\";
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, GOOD, len + 1);
        int nflip = 1 + it % 4;
        for (int k = 0; k < nflip; k++) {
            seed = seed * 1664525u + 1013904223u;
            size_t at = (seed >> 8) % len;
            seed = seed * 1664525u + 1013904223u;
            buf[at] = (seed >> 24) % 3 ? junk[(seed >> 16) % (sizeof junk - 1)] : (char)(seed >> 16);
        }
        err[0] = 0;
        size_t blen = strnlen(buf, len);
        int rc = ds_dnerf_load_text("fuzz.json", buf, blen, dir, &s, err, sizeof err);
        if (rc == 0) {
            CHECK(s.n >= 1 && s.width == 4 && s.height == 3);
            for (int i = 0; i < s.n; i++) CHECK(s.views[i].time >= 0 && s.views[i].time <= 1 && s.views[i].rgba);
        } else {
            CHECK_MSG(strstr(err, "fuzz.json") != NULL, "iteration %d: '%s'", it, err);
            CHECK(s.n == 0 && s.views == NULL);
        }
        ds_dnerf_free(&s);
    }
    free(buf);
    tmpdir_remove(dir);
}

/* Each well-formed JSON that breaks the convention gets its own message naming the file and
 * what is wrong. */
TEST(motion_dnerf_rejects_bad_files) {
    char dir[256], err[1024], path[512];
    fuzz_folder(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/small.png", dir);
    write_png(path, 2, 2, 4);
    static const struct {
        const char *json, *expect;
    } cases[] = {
        {"[]", "object at the top level"},
        {"{\"camera_angle_x\": 0.7}", "no 'frames'"},
        {"{\"camera_angle_x\": 0.7, \"frames\": {}}", "not an array"},
        {"{\"camera_angle_x\": 0.7, \"frames\": []}", "empty"},
        {"{\"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "no focal length"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4]]}]}",
         "4x4"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[2,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "not a rotation"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[-1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "not a rotation"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,1,1]]}]}",
         "last row"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"time\": 1.5, \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "outside [0, 1]"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"time\": 0.5, \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]},"
         "{\"file_path\": \"b\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "frames[1]: 'time' is missing"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"missing\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "missing.png"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a.jpg\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "only PNG"},
        {"{\"camera_angle_x\": 0.7, \"w\": 5, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "intrinsics say"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]},"
         "{\"file_path\": \"small\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "one size per split"},
        {"{\"camera_angle_x\": 0.7, \"k1\": 0.1, \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "distortion"},
        {"{\"camera_angle_x\": 0.7, \"camera_model\": \"OPENCV_FISHEYE\", \"frames\": [{\"file_path\": \"a\", \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "not supported"},
        {"{\"camera_angle_x\": -1, \"frames\": []}", "out of range"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [{\"file_path\": 3, \"transform_matrix\": [[1,0,0,0],[0,1,0,0],[0,0,1,4],[0,0,0,1]]}]}",
         "'file_path' is not"},
        {"{\"camera_angle_x\": 0.7, \"frames\": [1]}", "frames[0]: not an object"},
        {"{\"camera_angle_x\": 0.7, \"frames\": []} x", "text after"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        DsDnerfSplit s;
        err[0] = 0;
        int rc = ds_dnerf_load_text("bad.json", cases[i].json, strlen(cases[i].json), dir, &s, err, sizeof err);
        CHECK_MSG(rc == -1, "case %zu parsed", i);
        CHECK_MSG(strstr(err, "bad.json") && strstr(err, cases[i].expect), "case %zu: '%s' (expected '%s')", i, err,
                  cases[i].expect);
        CHECK(s.n == 0 && s.views == NULL);
        ds_dnerf_free(&s);
    }
    /* a file that is not there, and a bad split name */
    DsDnerfSplit s;
    CHECK(ds_dnerf_load(dir, "train", &s, err, sizeof err) == -1 && strstr(err, "transforms_train.json"));
    CHECK(ds_dnerf_load(dir, "bogus", &s, err, sizeof err) == -1 && strstr(err, "bogus"));
    tmpdir_remove(dir);
}
