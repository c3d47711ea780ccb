/* tests/test_motion.c — the multi-view motion benchmark (datasets/motion/): the D-NeRF /
 * nerfstudio reader on hand-written folders in both styles, a write/read round trip whose
 * cameras put a rendered surface point on a covered pixel, and the reader on truncated and
 * damaged JSON (an error naming the file, never a crash); the rig (identity rotations give the
 * rest pose, bone lengths kept), BVH retargeting (finite, bone lengths kept, bones along the
 * source segments), the secondary field (zero at rest, zero outside its regions, stored apart
 * from the LBS surface), determinism by seed, and a tiny benchmark read back through the
 * reader and the ground-truth loader, its cameras landing GT vertices on covered pixels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/h5file.h"
#include "base/mat3.h"
#include "datasets/geometry/geometry.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "datasets/motion/motion.h"
#include "datasets/motion/rig.h"
#include "datasets/motion/secondary.h"
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

/* ---- the rig ------------------------------------------------------------------------------------ */

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }
static double urand(uint32_t *s) { return (lcg(s) >> 8) / 16777216.0; }

/* Identity local rotations and no root translation: every skinning transform is exactly the
 * identity and LBS gives the rest mesh; random rotations keep every head at its rest distance
 * from its parent's head and move the mesh. */
TEST(motion_rig_identity_is_rest_and_lengths_kept) {
    DsProceduralShape s;
    char err[512];
    const char *cats[3] = {"humanoid", "quadruped", "snake"};
    for (int c = 0; c < 3; c++) {
        CHECK_MSG(ds_procedural_make(cats[c], 5, 24, &s, err, sizeof err) == 0, "%s", err);
        int B = s.nbones;
        double *q = malloc(sizeof(double) * 4 * B), *skin = malloc(sizeof(double) * 16 * B), *h = malloc(sizeof(double) * 3 * B);
        float *x = malloc(sizeof(float) * 3 * s.mesh.nv);
        for (int b = 0; b < B; b++) ds_quat_identity(q + 4 * b);
        double zero[3] = {0, 0, 0};
        ds_rig_fk(B, s.bones, q, zero, NULL, h, skin);
        for (int b = 0; b < B; b++)
            for (int k = 0; k < 16; k++) CHECK(skin[16 * b + k] == (k % 5 == 0 ? 1.0 : 0.0));
        ds_rig_lbs(s.mesh.nv, s.mesh.v, B, s.weights, skin, x);
        double worst = 0;
        for (int64_t i = 0; i < 3 * s.mesh.nv; i++) worst = fmax(worst, fabs(x[i] - s.mesh.v[i]));
        CHECK_MSG(worst < 1e-6, "%s: rest pose off by %g", cats[c], worst);
        uint32_t seed = 9;
        for (int b = 0; b < B; b++) {
            double ax[3] = {urand(&seed) - 0.5, urand(&seed) - 0.5, urand(&seed) - 0.5};
            ds_quat_axis_angle(ax, 2 * urand(&seed) - 1, q + 4 * b);
        }
        double root[3] = {0.3, -0.2, 0.1};
        ds_rig_fk(B, s.bones, q, root, NULL, h, skin);
        for (int b = 0; b < B; b++) {
            int p = s.bones[b].parent;
            if (p < 0) {
                for (int k = 0; k < 3; k++) CHECK_NEAR(h[3 * b + k], s.bones[b].head[k] + root[k], 1e-6);
                continue;
            }
            double d0 = 0, d1 = 0;
            for (int k = 0; k < 3; k++)
                d0 += pow(s.bones[b].head[k] - s.bones[p].head[k], 2), d1 += pow(h[3 * b + k] - h[3 * p + k], 2);
            CHECK_NEAR(sqrt(d1), sqrt(d0), 1e-6);
        }
        ds_rig_lbs(s.mesh.nv, s.mesh.v, B, s.weights, skin, x);
        worst = 0;
        for (int64_t i = 0; i < 3 * s.mesh.nv; i++) worst = fmax(worst, fabs(x[i] - s.mesh.v[i]));
        CHECK(worst > 0.05);
        free(q), free(skin), free(h), free(x);
        ds_procedural_free(&s);
    }
}

TEST(motion_quaternions) {
    uint32_t seed = 3;
    for (int it = 0; it < 200; it++) {
        double ax[3] = {urand(&seed) - 0.5, urand(&seed) - 0.5, urand(&seed) - 0.5}, q[4], R[9], q2[4];
        ds_quat_axis_angle(ax, 6.0 * urand(&seed) - 3.0, q);
        base_quat_to_mat3(q, R);
        ds_quat_from_mat3(R, q2);
        double d = q[0] * q2[0] + q[1] * q2[1] + q[2] * q2[2] + q[3] * q2[3];
        CHECK_NEAR(fabs(d), 1, 1e-12);
        double a[3] = {urand(&seed) - 0.5, urand(&seed) - 0.5, urand(&seed) - 0.5}, b[3], qb[4], Rb[9], ra[3];
        for (int k = 0; k < 3; k++) b[k] = urand(&seed) - 0.5;
        if (it == 0) b[0] = -a[0], b[1] = -a[1], b[2] = -a[2]; /* opposite directions */
        ds_quat_between(a, b, qb);
        base_quat_to_mat3(qb, Rb);
        double na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), nb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
        for (int r = 0; r < 3; r++) ra[r] = (Rb[3 * r] * a[0] + Rb[3 * r + 1] * a[1] + Rb[3 * r + 2] * a[2]) / na;
        for (int r = 0; r < 3; r++) CHECK_NEAR(ra[r], b[r] / nb, 1e-9);
    }
}

/* ---- motions ------------------------------------------------------------------------------------- */

static bool have_bvh(void) { return access(DS_MOTION_BVH_DIR "/01_01.bvh", R_OK) == 0; }

/* The CMU clip retargeted onto the humanoid: finite unit quaternions, every rig bone keeps its
 * length and its head's distance to the parent's, each mapped bone points along its source
 * segment, and the motion is not the rest pose. */
TEST(motion_bvh_retarget) {
    if (!have_bvh()) _exit(77);
    DsProceduralShape s;
    char err[1024];
    CHECK_MSG(ds_procedural_make("humanoid", 1, 24, &s, err, sizeof err) == 0, "%s", err);
    DsBvh bvh;
    CHECK_MSG(ds_bvh_read(DS_MOTION_BVH_DIR "/01_01.bvh", &bvh, err, sizeof err) == 0, "%s", err);
    enum { F = 12 };
    DsMotion m;
    CHECK_MSG(ds_motion_retarget_bvh(&bvh, "01_01", 180, 4.0, F, &s, NULL, &m, err, sizeof err) == 0, "%s", err);
    int B = s.nbones;
    double *R = malloc(sizeof(double) * 9 * B), *h = malloc(sizeof(double) * 3 * B), *W = malloc(sizeof(double) * 16 * bvh.njoints);
    double moved = 0;
    for (int f = 0; f < F; f++) {
        for (int b = 0; b < B; b++) {
            const double *q = m.local + 4 * ((size_t)f * B + b);
            double n = 0;
            for (int k = 0; k < 4; k++) {
                CHECK(isfinite(q[k]));
                n += q[k] * q[k];
            }
            CHECK_NEAR(n, 1, 1e-9);
            moved = fmax(moved, 1 - fabs(q[0]));
        }
        for (int k = 0; k < 3; k++) CHECK(isfinite(m.root[3 * f + k]) && fabs(m.root[3 * f + k]) < 2);
        ds_rig_fk(B, s.bones, m.local + 4 * (size_t)f * B, m.root + 3 * f, R, h, NULL);
        for (int b = 0; b < B; b++) {
            int p = s.bones[b].parent;
            if (p < 0) continue;
            double d0 = 0, d1 = 0;
            for (int k = 0; k < 3; k++)
                d0 += pow(s.bones[b].head[k] - s.bones[p].head[k], 2), d1 += pow(h[3 * b + k] - h[3 * p + k], 2);
            CHECK_NEAR(sqrt(d1), sqrt(d0), 1e-6);
        }
        /* the left thigh along LeftUpLeg → LeftLeg of source frame 180 + 4f */
        ds_bvh_pose(&bvh, 180 + 4 * f, W);
        int b = -1, js = -1, jr = -1;
        for (int i = 0; i < B; i++)
            if (!strcmp(s.bones[i].name, "leg_l_upper")) b = i;
        for (int j = 0; j < bvh.njoints; j++) {
            if (!strcmp(bvh.joints[j].name, "LeftUpLeg")) js = j;
            if (!strcmp(bvh.joints[j].name, "LeftLeg")) jr = j;
        }
        CHECK(b >= 0 && js >= 0 && jr >= 0);
        if (b < 0 || js < 0 || jr < 0) break;
        double dr[3], ds[3], nr = 0, ns = 0, dot = 0;
        for (int k = 0; k < 3; k++) {
            dr[k] = R[9 * b + 3 * k] * (s.bones[b].tail[0] - s.bones[b].head[0]) +
                    R[9 * b + 3 * k + 1] * (s.bones[b].tail[1] - s.bones[b].head[1]) +
                    R[9 * b + 3 * k + 2] * (s.bones[b].tail[2] - s.bones[b].head[2]);
            ds[k] = W[16 * jr + 4 * k + 3] - W[16 * js + 4 * k + 3];
            nr += dr[k] * dr[k], ns += ds[k] * ds[k];
        }
        for (int k = 0; k < 3; k++) dot += dr[k] * ds[k];
        CHECK_MSG(dot / sqrt(nr * ns) > 1 - 1e-9, "frame %d: thigh off its source segment (cos %.12f)", f,
                  dot / sqrt(nr * ns));
    }
    CHECK(moved > 0.01);
    free(R), free(h), free(W);
    ds_motion_free(&m);
    /* a skeleton without the names is refused, naming the file */
    DsBvh one = bvh;
    one.njoints = 3;
    CHECK(ds_motion_retarget_bvh(&one, "cut.bvh", 0, 1, 2, &s, NULL, &m, err, sizeof err) == -1 && strstr(err, "cut.bvh"));
    /* a clip past the end too */
    CHECK(ds_motion_retarget_bvh(&bvh, "01_01.bvh", (double)bvh.nframes - 2, 4, 5, &s, NULL, &m, err, sizeof err) == -1 &&
          strstr(err, "01_01.bvh"));
    ds_bvh_free(&bvh);
    ds_procedural_free(&s);
}

/* A copy of a BVH file with every joint renamed "mc_<name>"; zup: the same motion in z-up axes
 * (every offset, position and rotation conjugated by Rx(90°), which takes y to z and z to −y:
 * offsets (x, y, z) → (x, −z, y); a channel about/along Y becomes Z, one about/along Z becomes Y
 * with its values negated). */
static void bvh_renamed_copy(const char *from, const char *to, bool zup) {
    FILE *in = fopen(from, "r"), *out = fopen(to, "w");
    if (!in || !out) abort();
    static char line[65536];
    static bool neg[4096];
    int ncol = 0;
    bool motion = false, data = false;
    while (fgets(line, sizeof line, in)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        int ind = (int)(p - line);
        if (!motion && (!strncmp(p, "ROOT ", 5) || !strncmp(p, "JOINT ", 6))) {
            char *name = strchr(p, ' ') + 1;
            fprintf(out, "%.*s mc_%s", (int)(name - 1 - line), line, name);
        } else if (zup && !motion && !strncmp(p, "OFFSET", 6)) {
            double x, y, z;
            if (sscanf(p + 6, "%lf %lf %lf", &x, &y, &z) != 3) abort();
            fprintf(out, "%.*sOFFSET %.17g %.17g %.17g\n", ind, line, x, -z, y);
        } else if (zup && !motion && !strncmp(p, "CHANNELS", 8)) {
            int n = 0, used = 0;
            if (sscanf(p + 8, "%d%n", &n, &used) != 1) abort();
            char *q = p + 8 + used;
            fprintf(out, "%.*sCHANNELS %d", ind, line, n);
            for (int k = 0; k < n; k++) {
                char tok[32];
                int u = 0;
                if (sscanf(q, "%31s%n", tok, &u) != 1 || ncol >= 4096) abort();
                q += u;
                neg[ncol++] = tok[0] == 'Z';
                if (tok[0] == 'Y') tok[0] = 'Z';
                else if (tok[0] == 'Z') tok[0] = 'Y';
                fprintf(out, " %s", tok);
            }
            fputs("\n", out);
        } else if (zup && data) {
            char *q = line;
            for (int k = 0; k < ncol; k++) {
                char *e;
                double v = strtod(q, &e);
                if (e == q) abort();
                q = e;
                fprintf(out, "%s%.17g", k ? " " : "", neg[k] ? -v : v);
            }
            fputs("\n", out);
        } else {
            if (!strncmp(p, "MOTION", 6)) motion = true;
            fputs(line, out);
            if (motion && !strncmp(p, "Frame Time", 10)) data = true;
        }
    }
    fclose(in);
    if (fclose(out)) abort();
}

/* The built-in CMU pairing written as a mapping JSON over the renamed joints. */
static const char *const MC_MAP[][3] = {
    {"hips", "Hips", "Spine"},          {"spine", "Spine1", "Neck1"},          {"neck", "Neck1", "Head"},
    {"head", "Head", "Head_end"},       {"arm_l_upper", "LeftArm", "LeftForeArm"},
    {"arm_l_lower", "LeftForeArm", "LeftHand"}, {"arm_r_upper", "RightArm", "RightForeArm"},
    {"arm_r_lower", "RightForeArm", "RightHand"}, {"leg_l_upper", "LeftUpLeg", "LeftLeg"},
    {"leg_l_lower", "LeftLeg", "LeftFoot"}, {"foot_l", "LeftFoot", "LeftToeBase"},
    {"leg_r_upper", "RightUpLeg", "RightLeg"}, {"leg_r_lower", "RightLeg", "RightFoot"},
    {"foot_r", "RightFoot", "RightToeBase"},
};

static void mc_map_json(char *buf, size_t n, const char *extra) {
    size_t k = (size_t)snprintf(buf, n, "{%s", extra);
    for (size_t i = 0; i < sizeof MC_MAP / sizeof MC_MAP[0]; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s\"%s\": {\"joint\": \"mc_%s\", \"toward\": \"mc_%s\"}", i ? ", " : "",
                              MC_MAP[i][0], MC_MAP[i][1], MC_MAP[i][2]);
    snprintf(buf + k, n - k, "}");
}

static double motion_maxdiff(const DsMotion *a, const DsMotion *b) {
    double d = 0;
    if (a->nframes != b->nframes || a->nbones != b->nbones) return INFINITY;
    for (int64_t i = 0; i < 4 * (int64_t)a->nframes * a->nbones; i++) d = fmax(d, fabs(a->local[i] - b->local[i]));
    for (int64_t i = 0; i < 3 * (int64_t)a->nframes; i++) d = fmax(d, fabs(a->root[i] - b->root[i]));
    return d;
}

/* One retargeting path: a BVH whose joints are renamed retargets through a mapping JSON to exactly
 * the motion the original gets through the built-in names (by ds_motion_retarget_bvh and by
 * ds_motion_make with DsMotionOptions.map); the same skeleton stood along +z comes back with
 * "source_up": "z"; plain-string entries and offsets parse and act; bad mappings are errors
 * naming the bone and the joint. */
TEST(motion_bvh_retarget_map) {
    if (!have_bvh()) _exit(77);
    char dir[256], path[512], zpath[512], mpath[512], err[1024];
    tmpdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/renamed.bvh", dir);
    snprintf(zpath, sizeof zpath, "%s/zup.bvh", dir);
    snprintf(mpath, sizeof mpath, "%s/map.json", dir);
    bvh_renamed_copy(DS_MOTION_BVH_DIR "/01_01.bvh", path, false);
    bvh_renamed_copy(DS_MOTION_BVH_DIR "/01_01.bvh", zpath, true);
    DsProceduralShape s;
    CHECK_MSG(ds_procedural_make("humanoid", 1, 24, &s, err, sizeof err) == 0, "%s", err);
    DsBvh orig, ren, zb;
    CHECK_MSG(ds_bvh_read(DS_MOTION_BVH_DIR "/01_01.bvh", &orig, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_bvh_read(path, &ren, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_bvh_read(zpath, &zb, err, sizeof err) == 0, "%s", err);
    CHECK(ren.njoints == orig.njoints && zb.njoints == orig.njoints && zb.nframes == orig.nframes);
    static char json[8192];
    DsRetargetMap map;
    enum { F = 10 };
    DsMotion a, b, c;
    CHECK_MSG(ds_motion_retarget_bvh(&orig, "01_01", 200, 3.0, F, &s, NULL, &a, err, sizeof err) == 0, "%s", err);
    /* the renamed file is refused by the built-in names, with a hint */
    CHECK(ds_motion_retarget_bvh(&ren, "renamed", 200, 3.0, F, &s, NULL, &b, err, sizeof err) == -1 &&
          strstr(err, "mapping JSON"));
    mc_map_json(json, sizeof json, "");
    CHECK_MSG(ds_retarget_map_parse(json, "map.json", &map, err, sizeof err) == 0, "%s", err);
    CHECK(map.npairs == 14);
    CHECK_MSG(ds_motion_retarget_bvh(&ren, "renamed", 200, 3.0, F, &s, &map, &b, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(motion_maxdiff(&a, &b) == 0, "renamed + map differs by %g", motion_maxdiff(&a, &b));
    ds_motion_free(&b);
    /* through ds_motion_make and a file */
    write_text(mpath, json);
    DsMotionOptions o = {.fps = 30, .bvh_dir = NULL, .bvh_start = 100, .map = mpath};
    DsMotionOptions o0 = {.fps = 30, .bvh_dir = NULL, .bvh_start = 100, .map = NULL};
    CHECK_MSG(ds_motion_make(&s, path, 6, 0, &o, &b, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_motion_make(&s, DS_MOTION_BVH_DIR "/01_01.bvh", 6, 0, &o0, &c, err, sizeof err) == 0, "%s", err);
    CHECK(motion_maxdiff(&b, &c) == 0);
    ds_motion_free(&b), ds_motion_free(&c);
    CHECK(ds_motion_make(&s, "walk", 6, 0, &o, &b, err, sizeof err) == -1 && strstr(err, "BVH clips only"));
    /* z up: wrong without the convention, the same (to rounding) with it */
    CHECK_MSG(ds_motion_retarget_bvh(&zb, "zup", 200, 3.0, F, &s, &map, &b, err, sizeof err) == 0, "%s", err);
    CHECK(motion_maxdiff(&a, &b) > 0.1);
    ds_motion_free(&b);
    mc_map_json(json, sizeof json, "\"source_up\": \"z\", ");
    CHECK_MSG(ds_retarget_map_parse(json, "map.json", &map, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_motion_retarget_bvh(&zb, "zup", 200, 3.0, F, &s, &map, &b, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(motion_maxdiff(&a, &b) < 1e-9, "z up differs by %g", motion_maxdiff(&a, &b));
    ds_motion_free(&b);
    /* an offset on the left thigh turns that bone's world rotation by D O Dᵀ: the rest-pose frame
     * of a constant clip shows O itself; other bones' world rotations stay */
    mc_map_json(json, sizeof json, "");
    CHECK(ds_retarget_map_parse(json, "map.json", &map, err, sizeof err) == 0);
    int lu = -1;
    for (int i = 0; i < map.npairs; i++)
        if (!strcmp(map.pairs[i].bone, "leg_l_upper")) lu = i;
    CHECK(lu >= 0);
    double ax[3] = {0, 0, 1};
    ds_quat_axis_angle(ax, 25 * M_PI / 180, map.pairs[lu].offset);
    CHECK_MSG(ds_motion_retarget_bvh(&ren, "renamed", 200, 3.0, F, &s, &map, &b, err, sizeof err) == 0, "%s", err);
    {
        int B = s.nbones, bl = -1;
        for (int i = 0; i < B; i++)
            if (!strcmp(s.bones[i].name, "leg_l_upper")) bl = i;
        double *Ra = malloc(sizeof(double) * 9 * B), *Rb = malloc(sizeof(double) * 9 * B), *h = malloc(sizeof(double) * 3 * B);
        double *W = malloc(sizeof(double) * 16 * ren.njoints), *Wr = malloc(sizeof(double) * 16 * ren.njoints);
        ds_rig_fk(B, s.bones, a.local + 4 * (size_t)2 * B, a.root + 6, Ra, h, NULL);
        ds_rig_fk(B, s.bones, b.local + 4 * (size_t)2 * B, b.root + 6, Rb, h, NULL);
        int js = -1;
        for (int j = 0; j < ren.njoints; j++)
            if (!strcmp(ren.joints[j].name, "mc_LeftUpLeg")) js = j;
        CHECK(bl >= 0 && js >= 0);
        ds_bvh_pose(&ren, 206, W);
        ds_bvh_pose(&ren, -1, Wr);
        /* expected Rb = D O Dᵀ Ra with D = Rs Rrᵀ */
        double D[9], Om[9], E[9], T[9], T2[9];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) {
                D[3 * r + q] = 0;
                for (int k = 0; k < 3; k++) D[3 * r + q] += W[16 * js + 4 * r + k] * Wr[16 * js + 4 * q + k];
            }
        base_quat_to_mat3(map.pairs[lu].offset, Om);
        for (int r = 0; r < 9; r++) T[r] = 0, T2[r] = 0, E[r] = 0;
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                for (int k = 0; k < 3; k++) T[3 * r + q] += D[3 * r + k] * Om[3 * k + q];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                for (int k = 0; k < 3; k++) T2[3 * r + q] += T[3 * r + k] * D[3 * q + k];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                for (int k = 0; k < 3; k++) E[3 * r + q] += T2[3 * r + k] * Ra[9 * bl + 3 * k + q];
        double de = 0, dother = 0;
        for (int k = 0; k < 9; k++) de = fmax(de, fabs(E[k] - Rb[9 * bl + k]));
        for (int i = 0; i < B; i++)
            if (strcmp(s.bones[i].name, "leg_l_upper") && strcmp(s.bones[i].name, "leg_l_lower") &&
                strcmp(s.bones[i].name, "foot_l"))
                for (int k = 0; k < 9; k++) dother = fmax(dother, fabs(Ra[9 * i + k] - Rb[9 * i + k]));
        CHECK_MSG(de < 1e-9, "offset: thigh off D O Dᵀ R by %g", de);
        CHECK_MSG(dother < 1e-9, "offset moved other bones by %g", dother);
        free(Ra), free(Rb), free(h), free(W), free(Wr);
    }
    ds_motion_free(&b);
    /* plain strings: the references inferred; a valid motion that follows the source */
    CHECK_MSG(ds_retarget_map_parse("{\"hips\": \"mc_Hips\", \"leg_l_upper\": \"mc_LeftUpLeg\", \"leg_l_lower\": "
                                    "\"mc_LeftLeg\", \"foot_l\": \"mc_LeftFoot\", \"arm_r_upper\": \"mc_RightArm\"}",
                                    "m", &map, err, sizeof err) == 0,
              "%s", err);
    CHECK_MSG(ds_motion_retarget_bvh(&ren, "renamed", 200, 3.0, F, &s, &map, &b, err, sizeof err) == 0, "%s", err);
    for (int64_t i = 0; i < 4 * (int64_t)F * b.nbones; i++) CHECK(isfinite(b.local[i]));
    ds_motion_free(&b);
    /* errors name the bone and the joint; no crash */
    struct { const char *json, *a, *b; } bad[] = {
        {"{\"hips\": ", "m.json", "JSON object"},
        {"[1, 2]", "m.json", "JSON object"},
        {"{\"hips\": 3}", "hips", "source joint"},
        {"{\"hips\": \"\"}", "hips", "non-empty"},
        {"{\"hips\": {\"joint\": \"mc_Hips\", \"toward\": 1}}", "hips", "toward"},
        {"{\"hips\": {\"joint\": \"mc_Hips\", \"twist\": 1}}", "hips.twist", "unknown"},
        {"{\"hips\": {\"joint\": \"mc_Hips\", \"offset\": [1, 2]}}", "hips.offset", "three"},
        {"{\"hips\": \"mc_Hips\", \"hips\": \"mc_Spine\"}", "hips", "twice"},
        {"{\"source_up\": \"x\"}", "source_up", "\"z\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(ds_retarget_map_parse(bad[i].json, "m.json", &map, err, sizeof err) == -1 && strstr(err, bad[i].a) &&
                      strstr(err, bad[i].b),
                  "%zu: %s", i, err);
    struct { const char *json, *a, *b; } unres[] = {
        {"{\"hips\": \"Hips\"}", "hips", "\"Hips\""},                      /* a name not in the BVH */
        {"{\"tail\": \"mc_Hips\"}", "tail", "mc_Hips"},                   /* a bone not in the rig */
        {"{\"spine\": \"mc_Spine1\"}", "hips", "not mapped"},             /* the root unmapped */
        {"{\"hips\": {\"joint\": \"mc_Hips\", \"toward\": \"Spine\"}}", "hips", "\"Spine\""},
        {"{\"hips\": \"mc_Hips\", \"head\": \"mc_Head_end\"}", "head", "toward"}, /* an end site: no child */
    };
    for (size_t i = 0; i < sizeof unres / sizeof unres[0]; i++) {
        CHECK(ds_retarget_map_parse(unres[i].json, "m.json", &map, err, sizeof err) == 0);
        CHECK_MSG(ds_motion_retarget_bvh(&ren, "renamed", 200, 3.0, F, &s, &map, &b, err, sizeof err) == -1 &&
                      strstr(err, unres[i].a) && strstr(err, unres[i].b),
                  "%zu: %s", i, err);
    }
    snprintf(path, sizeof path, "%s/missing.json", dir);
    CHECK(ds_retarget_map_load(path, &map, err, sizeof err) == -1 && strstr(err, "missing.json"));
    /* the dataset's option reaches the retargeting of its BVH motion (not of the procedural one) */
    write_text(mpath, "{\"hips\": \"Hips\", \"leg_l_upper\": \"LeftThigh\"}");
    DsMotionBenchOptions bo;
    ds_motion_bench_defaults(&bo);
    bo.motion = "cmu_01_01", bo.heldout_motion = "walk", bo.frames = 2, bo.views = 2, bo.size = 8, bo.grid = 24;
    bo.bvh_map = mpath, bo.out = dir;
    DsMotionBenchStats st;
    CHECK_MSG(ds_motion_bench_make(&bo, &st, err, sizeof err) == -1 && strstr(err, "leg_l_upper") && strstr(err, "LeftThigh"),
              "%s", err);
    ds_motion_free(&a);
    ds_bvh_free(&orig), ds_bvh_free(&ren), ds_bvh_free(&zb);
    ds_procedural_free(&s);
    tmpdir_remove(dir);
}

/* Every motion of every category with a catalogue: finite, unit quaternions; the same seed gives
 * the same motion, another seed another one; "rest" is the identity; unknown names fail. */
TEST(motion_procedural_motions) {
    const char *cats[5] = {"humanoid", "quadruped", "bird", "snake", "lamp"};
    char err[1024];
    DsMotionOptions o = {30, NULL, -1};
    for (int c = 0; c < 5; c++) {
        DsProceduralShape s;
        CHECK_MSG(ds_procedural_make(cats[c], 2, 24, &s, err, sizeof err) == 0, "%s", err);
        int n;
        const char *const *names = ds_motion_names(cats[c], &n);
        CHECK(names && n >= 3);
        for (int i = 0; i < n; i++) {
            if (!strncmp(names[i], "cmu_", 4) || !strcmp(names[i], "boxing")) continue;
            if (!strncmp(names[i], "repertoire", 10) && !strcmp(cats[c], "humanoid") && !have_bvh()) continue;
            DsMotion a, b, d;
            CHECK_MSG(ds_motion_make(&s, names[i], 10, 7, &o, &a, err, sizeof err) == 0, "%s", err);
            CHECK(ds_motion_make(&s, names[i], 10, 7, &o, &b, err, sizeof err) == 0);
            CHECK(ds_motion_make(&s, names[i], 10, 8, &o, &d, err, sizeof err) == 0);
            size_t nq = 4 * (size_t)10 * s.nbones;
            CHECK(memcmp(a.local, b.local, sizeof(double) * nq) == 0 && memcmp(a.root, b.root, sizeof(double) * 30) == 0);
            bool rest = !strcmp(names[i], "rest"), differ = false, moved = false;
            for (size_t k = 0; k < nq; k++) {
                CHECK(isfinite(a.local[k]));
                differ |= a.local[k] != d.local[k];
                moved |= (k % 4 == 0 ? a.local[k] != 1 : a.local[k] != 0);
            }
            CHECK_MSG(rest ? !moved && !differ : moved && differ, "%s %s: moved %d differ %d", cats[c], names[i], moved, differ);
            ds_motion_free(&a), ds_motion_free(&b), ds_motion_free(&d);
        }
        DsMotion x;
        CHECK(ds_motion_make(&s, "moonwalk", 4, 0, &o, &x, err, sizeof err) == -1 && strstr(err, "moonwalk"));
        if (strcmp(cats[c], "humanoid") && have_bvh()) {
            CHECK(ds_motion_make(&s, "cmu_01_01", 4, 0, &o, &x, err, sizeof err) == -1 && strstr(err, "humanoid"));
        }
        ds_procedural_free(&s);
    }
}

/* the mean per-bone geodesic (degrees) between frame t of p and frame g of q, root bone excluded
 * (the character's heading is not a pose) */
static double pose_deg(const DsProceduralShape *s, const DsMotion *p, int t, const DsMotion *q, int g) {
    int nb = s->nbones, n = 0;
    double d = 0;
    for (int b = 0; b < nb; b++) {
        if (s->bones[b].parent < 0) continue;
        const double *x = p->local + 4 * ((size_t)t * nb + b), *y = q->local + 4 * ((size_t)g * nb + b);
        d += 2 * acos(fmin(1, fabs(x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3]))), n++;
    }
    return d / n * 180 / M_PI;
}

/* the clip h against every window of train as long as h: the smallest mean pose distance */
static double nearest_window_deg(const DsProceduralShape *s, const DsMotion *train, const DsMotion *h) {
    double best = INFINITY;
    for (int g = 0; g + h->nframes <= train->nframes; g++) {
        double d = 0;
        for (int t = 0; t < h->nframes; t++) d += pose_deg(s, h, t, train, g + t);
        best = fmin(best, d / h->nframes);
    }
    return best;
}

/* The repertoire: deterministic for a seed (another seed another motion), every kind of the
 * category in it, continuous across the cross-fades, and the benchmark's held-out clip (its
 * motion with seed + 1; the humanoid's boxing window) not part of it: every 48-frame window of
 * the repertoire is over 0.5° (mean per bone and frame) from the clip. Single frames may come
 * closer: the same gait at another amplitude passes near the same poses, which is the point. */
TEST(motion_repertoire_spans_kinds_not_the_heldout_clip) {
    const char *cats[4] = {"humanoid", "quadruped", "bird", "snake"};
    char err[1024];
    DsMotionOptions o = {30, NULL, -1, NULL};
    for (int c = 0; c < 4; c++) {
        if (!strcmp(cats[c], "humanoid") && !have_bvh()) continue;
        DsProceduralShape s;
        CHECK_MSG(ds_procedural_make(cats[c], 0, 24, &s, err, sizeof err) == 0, "%s", err);
        DsMotion a, b, d, h;
        const int F = 300;
        CHECK_MSG(ds_motion_make(&s, "repertoire", F, 0, &o, &a, err, sizeof err) == 0, "%s %s", cats[c], err);
        CHECK(ds_motion_make(&s, "repertoire", F, 0, &o, &b, err, sizeof err) == 0);
        CHECK(ds_motion_make(&s, "repertoire", F, 1, &o, &d, err, sizeof err) == 0);
        size_t nq = 4 * (size_t)F * s.nbones;
        CHECK(a.nframes == F && memcmp(a.local, b.local, sizeof(double) * nq) == 0 &&
              memcmp(a.root, b.root, sizeof(double) * 3 * F) == 0 && !strcmp(a.source, b.source));
        CHECK_MSG(memcmp(a.local, d.local, sizeof(double) * nq) != 0, "%s: seeds 0 and 1 give one repertoire", cats[c]);
        /* every kind in it; repertoire_unseen: every kind but the held-out motion's */
        const char *hn = ds_motion_default(cats[c], true);
        DsMotion u;
        CHECK_MSG(ds_motion_make(&s, "repertoire_unseen", F, 0, &o, &u, err, sizeof err) == 0, "%s", err);
        const char *const *names = ds_motion_names(cats[c], NULL);
        for (int i = 0; names[i]; i++)
            if (strcmp(names[i], "rest") && strncmp(names[i], "repertoire", 10)) {
                CHECK_MSG(strstr(a.source, names[i]), "%s: %s missing from %s", cats[c], names[i], a.source);
                bool in = strstr(u.source, names[i]) != NULL;
                CHECK_MSG(in == !!strcmp(names[i], hn), "%s: %s %s %s", cats[c], names[i], in ? "in" : "missing from", u.source);
            }
        /* continuity: the largest per-bone turn between consecutive frames. A cut between two
         * segments without the cross-fade turns bones by up to 180°; the boxing capture's punches
         * turn a forearm by up to 42° a frame at 30 fps, the procedural gaits under 25°. */
        double step = 0;
        for (int f = 1; f < F; f++)
            for (int j = 0; j < s.nbones; j++) {
                const double *p = a.local + 4 * ((size_t)f * s.nbones + j), *q = p - 4 * (size_t)s.nbones;
                step = fmax(step, 2 * acos(fmin(1, fabs(p[0] * q[0] + p[1] * q[1] + p[2] * q[2] + p[3] * q[3]))));
            }
        CHECK_MSG(step * 180 / M_PI < 45, "%s: a %.1f° jump between frames", cats[c], step * 180 / M_PI);
        /* the benchmark's held-out clip: its default motion, seed + 1, 48 frames */
        CHECK_MSG(ds_motion_make(&s, hn, 48, 1, &o, &h, err, sizeof err) == 0, "%s", err);
        double w = nearest_window_deg(&s, &a, &h), wu = nearest_window_deg(&s, &u, &h);
        CHECK_MSG(wu > w, "%s: the held-out clip nearer to repertoire_unseen (%.2f°) than to repertoire (%.2f°)", cats[c], wu, w);
        CHECK_MSG(w > 0.5, "%s: held-out %s within %.3f° (mean per bone over the clip) of a repertoire window", cats[c], hn, w);
        /* the check sees a clip that is there: the held-out clip inside a longer one */
        DsMotion self;
        CHECK(ds_motion_make(&s, hn, 60, 1, &o, &self, err, sizeof err) == 0);
        CHECK(nearest_window_deg(&s, &self, &h) < 1e-6);
        if (getenv("ANIMA_MOTION_VERBOSE"))
            fprintf(stderr, "%s: held-out %s nearest repertoire window %.2f deg (unseen %.2f), largest step %.1f deg\n",
                    cats[c], hn, w, wu, step * 180 / M_PI);
        ds_motion_free(&a), ds_motion_free(&b), ds_motion_free(&d), ds_motion_free(&h), ds_motion_free(&self);
        ds_motion_free(&u);
        ds_procedural_free(&s);
    }
}

/* The humanoid's repertoire takes boxing windows from the whole capture but never around the
 * held-out clip (8.4 s in, up to 4 s long, 1 s of guard: no 1.5 s segment starts in
 * (5.9, 13.4) s), and uses both sides of it. */
TEST(motion_repertoire_keeps_off_the_heldout_window) {
    if (!have_bvh()) _exit(77);
    char err[1024];
    DsMotionOptions o = {30, NULL, -1, NULL};
    DsProceduralShape s;
    CHECK_MSG(ds_procedural_make("humanoid", 0, 24, &s, err, sizeof err) == 0, "%s", err);
    int before = 0, after = 0;
    for (uint64_t seed = 0; seed < 12; seed++) {
        DsMotion a;
        CHECK_MSG(ds_motion_make(&s, "repertoire", 300, seed, &o, &a, err, sizeof err) == 0, "%s", err);
        for (const char *p = strstr(a.source, "boxing@"); p; p = strstr(p + 1, "boxing@")) {
            double t = atof(p + 7);
            CHECK_MSG(t <= 5.9 || t >= 13.4, "seed %llu: a boxing segment at %.2f s (%s)", (unsigned long long)seed, t, a.source);
            before += t <= 5.9, after += t >= 13.4;
        }
        ds_motion_free(&a);
    }
    CHECK_MSG(before > 0 && after > 0, "boxing segments: %d before the held-out clip, %d after", before, after);
    ds_procedural_free(&s);
}

/* ---- the secondary field -------------------------------------------------------------------------- */

TEST(motion_secondary_zero_at_rest_and_local) {
    DsProceduralShape s;
    char err[1024];
    CHECK_MSG(ds_procedural_make("quadruped", 4, 32, &s, err, sizeof err) == 0, "%s", err);
    DsSecondarySpec spec;
    ds_secondary_spec(&s, 4, &spec);
    CHECK(spec.n == 2);
    int64_t V = s.mesh.nv;
    float *w = calloc((size_t)V * spec.n, sizeof(float));
    ds_secondary_weights(&spec, V, s.mesh.v, w);
    int64_t inside = 0;
    for (int64_t i = 0; i < V * spec.n; i++) inside += w[i] > 0;
    CHECK(inside > 10 && inside < V);
    DsMotionOptions o = {30, NULL, -1};
    const char *mot[3] = {"rest", "trot", "walk"};
    for (int k = 0; k < 3; k++) {
        DsMotion m;
        enum { F = 30 };
        CHECK(ds_motion_make(&s, mot[k], F, 1, &o, &m, err, sizeof err) == 0);
        double *skin = malloc(sizeof(double) * 16 * F * s.nbones);
        for (int f = 0; f < F; f++)
            ds_rig_fk(s.nbones, s.bones, m.local + 4 * (size_t)f * s.nbones, m.root + 3 * f, NULL, NULL,
                      skin + 16 * (size_t)f * s.nbones);
        float *disp = malloc(sizeof(float) * 3 * F * V), *u = malloc(sizeof(float) * 3 * F * spec.n);
        ds_secondary_simulate(&spec, F, 30, s.nbones, skin, V, w, disp, u);
        double mx = 0;
        bool outside_zero = true;
        for (int f = 0; f < F; f++)
            for (int64_t i = 0; i < V; i++) {
                const float *d = disp + 3 * ((size_t)f * V + i);
                double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                mx = fmax(mx, n);
                bool in = false;
                for (int r = 0; r < spec.n; r++) in |= w[i * spec.n + r] > 0;
                if (!in && n != 0) outside_zero = false;
            }
        /* the first frame starts from rest: no displacement yet */
        for (int64_t i = 0; i < 3 * V; i++) CHECK(disp[i] == 0);
        CHECK(outside_zero);
        if (k == 0) CHECK_MSG(mx == 0, "rest: displacement %g", mx);
        else {
            CHECK_MSG(mx > 1e-3, "%s: no secondary motion (%g)", mot[k], mx);
            CHECK(mx <= spec.r[0].max_disp + spec.r[1].max_disp);
        }
        free(skin), free(disp), free(u);
        ds_motion_free(&m);
    }
    free(w);
    ds_procedural_free(&s);
}

/* ---- the benchmark -------------------------------------------------------------------------------- */

static void tiny_opts(DsMotionBenchOptions *o, const char *cat, const char *out, uint64_t seed) {
    ds_motion_bench_defaults(o);
    o->category = cat, o->out = out, o->seed = seed;
    o->frames = 5, o->views = 6, o->size = 32, o->grid = 28, o->holdout_every = 3, o->val_every = 2;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static bool same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    uint8_t *x = slurp(a, &na), *y = slurp(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x), free(y);
    return same;
}

/* A tiny benchmark, written and read back: every split parses with the expected counts and
 * times, the held-out motion has its own folder, the ground truth loads, vertices − secondary
 * is the LBS of the stored bone transforms, and GT vertices projected by the read cameras land
 * on covered pixels. */
TEST(motion_bench_files_parse_and_agree) {
    char dir[256], err[1024], sub[300];
    tmpdir_make(dir, sizeof dir);
    DsMotionBenchOptions o;
    tiny_opts(&o, "quadruped", dir, 3);
    DsMotionBenchStats st;
    CHECK_MSG(ds_motion_bench_make(&o, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.motions == 2 && st.train_views == 4 && st.heldout_views == 2 && st.images == 2 * 5 * 6);
    CHECK(st.coverage > 0.02);
    for (int k = 0; k < 2; k++) {
        snprintf(sub, sizeof sub, k ? "%s/heldout" : "%s", dir);
        DsDnerfSplit tr, va, te;
        CHECK_MSG(ds_dnerf_load(sub, "train", &tr, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(ds_dnerf_load(sub, "val", &va, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(ds_dnerf_load(sub, "test", &te, err, sizeof err) == 0, "%s", err);
        CHECK(tr.n == 4 * 5 && te.n == 2 * 5 && va.n == 2 * 3 && tr.width == 32 && tr.height == 32);
        char gtp[400];
        snprintf(gtp, sizeof gtp, "%s/gt.h5", sub);
        DsMotionGt g;
        CHECK_MSG(ds_motion_gt_load(gtp, &g, err, sizeof err) == 0, "%s", err);
        CHECK(g.nframes == 5 && g.nv == st.nv && g.nf == st.nf && g.nbones == st.nbones);
        CHECK(!strcmp(g.split, k ? "heldout" : "train") && !strcmp(g.category, "quadruped"));
        CHECK(!strcmp(g.motion, ds_motion_default("quadruped", k == 1)));
        /* vertices − secondary = Σ_j w_j T_j rest */
        double worst = 0, sec = 0;
        for (int f = 0; f < g.nframes; f++)
            for (int64_t v = 0; v < g.nv; v++) {
                double acc[3] = {0, 0, 0};
                for (int b = 0; b < g.nbones; b++) {
                    const float *T = g.bone_transforms + 16 * ((size_t)f * g.nbones + b), *x = g.rest + 3 * v;
                    double w = g.weights[v * g.nbones + b];
                    for (int r = 0; r < 3; r++) acc[r] += w * (T[4 * r] * x[0] + T[4 * r + 1] * x[1] + T[4 * r + 2] * x[2] + T[4 * r + 3]);
                }
                for (int r = 0; r < 3; r++) {
                    size_t i = 3 * ((size_t)f * g.nv + v) + r;
                    worst = fmax(worst, fabs(g.vertices[i] - g.secondary[i] - acc[r]));
                    sec = fmax(sec, fabs(g.secondary[i]));
                }
            }
        CHECK_MSG(worst < 1e-4, "LBS mismatch %g", worst);
        CHECK(sec > 0);
        /* project: frames of the train split are (frame, view) with time = frame/(F-1) */
        int64_t hit = 0, tot = 0;
        bool near_all = true;
        for (int i = 0; i < tr.n; i++) {
            int f = (int)lround(tr.views[i].time * (g.nframes - 1));
            for (int64_t v = 0; v < g.nv; v += 7) {
                const float *x = g.vertices + 3 * ((size_t)f * g.nv + v);
                double X[3] = {x[0], x[1], x[2]}, uv[2], d;
                CHECK(ds_camera_project(&tr.views[i].cam, X, uv, &d));
                int px = (int)floor(uv[0]), py = (int)floor(uv[1]);
                CHECK(px >= 0 && py >= 0 && px < 32 && py < 32);
                if (px < 0 || py < 0 || px >= 32 || py >= 32) continue;
                tot++;
                hit += tr.views[i].rgba[4 * (py * 32 + px) + 3] > 0;
                bool near = false;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        int qx = px + dx, qy = py + dy;
                        near |= qx >= 0 && qy >= 0 && qx < 32 && qy < 32 && tr.views[i].rgba[4 * (qy * 32 + qx) + 3] > 0;
                    }
                near_all &= near;
            }
        }
        /* a vertex on the outline can fall on a pixel none of whose 2 x 2 samples the surface
         * covers (misses are unbiased in direction: measured at 128 px, ~2%); a camera off by
         * a pixel or mirrored would miss far more, and never next to a covered pixel */
        CHECK_MSG(hit >= 0.9 * tot, "%lld of %lld GT vertices on covered pixels", (long long)hit, (long long)tot);
        CHECK(near_all);
        /* the held-out motion uses the same cameras */
        if (k == 1) {
            DsDnerfSplit t0;
            CHECK(ds_dnerf_load(dir, "train", &t0, err, sizeof err) == 0);
            for (int kk = 0; kk < 9 && t0.n == tr.n; kk++) CHECK(t0.views[3].cam.R[kk] == tr.views[3].cam.R[kk]);
            ds_dnerf_free(&t0);
        }
        ds_motion_gt_free(&g);
        ds_dnerf_free(&tr), ds_dnerf_free(&va), ds_dnerf_free(&te);
    }
    /* a damaged ground-truth file is refused, naming it */
    char gtp[400], cmd[2000];
    snprintf(gtp, sizeof gtp, "%s/gt.h5", dir);
    snprintf(cmd, sizeof cmd, "head -c 3000 '%s' > '%s.cut' && mv '%s.cut' '%s'", gtp, gtp, gtp, gtp);
    CHECK(system(cmd) == 0);
    DsMotionGt g;
    CHECK(ds_motion_gt_load(gtp, &g, err, sizeof err) == -1 && strstr(err, "gt.h5"));
    /* fewer views than holdout_every: the last view is held out, every split exists */
    tiny_opts(&o, "snake", dir, 1);
    o.views = 3, o.holdout_every = 6, o.frames = 2, o.heldout_motion = "none";
    CHECK_MSG(ds_motion_bench_make(&o, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.train_views == 2 && st.heldout_views == 1 && st.motions == 1);
    DsDnerfSplit v;
    CHECK_MSG(ds_dnerf_load(dir, "val", &v, err, sizeof err) == 0 && v.n == 1, "%s", err);
    ds_dnerf_free(&v);
    tmpdir_remove(dir);
}

/* --heldout-frames: a longer training motion keeps the held-out clip. The held-out motion of a
 * benchmark with 8 training frames and 5 held-out ones is vertex for vertex the one of the
 * 5-frame benchmark (its own clip from its own start; its secondary motion simulated on it
 * alone), and the training motion's first 4 frames are the 5-frame training motion's (not the
 * 5th: the secondary springs take a clip's last frame as unaccelerated). */
TEST(motion_bench_heldout_frames_keep_the_clip) {
    char d1[256], d2[256], err[1024], p1[400], p2[400];
    tmpdir_make(d1, sizeof d1), tmpdir_make(d2, sizeof d2);
    DsMotionBenchOptions o;
    DsMotionBenchStats st;
    tiny_opts(&o, "quadruped", d1, 4);
    o.views = 3;
    CHECK_MSG(ds_motion_bench_make(&o, NULL, err, sizeof err) == 0, "%s", err);
    tiny_opts(&o, "quadruped", d2, 4);
    o.views = 3, o.frames = 8, o.heldout_frames = 5;
    CHECK_MSG(ds_motion_bench_make(&o, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.images == (8 + 5) * 3);
    for (int k = 0; k < 2; k++) {
        DsMotionGt a, b;
        snprintf(p1, sizeof p1, k ? "%s/heldout/gt.h5" : "%s/gt.h5", d1);
        snprintf(p2, sizeof p2, k ? "%s/heldout/gt.h5" : "%s/gt.h5", d2);
        CHECK_MSG(ds_motion_gt_load(p1, &a, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(ds_motion_gt_load(p2, &b, err, sizeof err) == 0, "%s", err);
        CHECK(a.nframes == 5 && b.nframes == (k ? 5 : 8) && a.nv == b.nv && a.nbones == b.nbones);
        double worst = 0;
        int same = k ? 5 : 4;
        for (int64_t i = 0; i < (int64_t)same * a.nv * 3 && a.nv == b.nv; i++)
            worst = fmax(worst, fabs((double)a.vertices[i] - b.vertices[i]));
        CHECK_MSG(worst < 1e-6, "%s motion: the first %d frames differ by %g", k ? "held-out" : "training", same, worst);
        ds_motion_gt_free(&a), ds_motion_gt_free(&b);
    }
    o.heldout_frames = -1;
    CHECK(ds_motion_bench_make(&o, NULL, err, sizeof err) == -1 && strstr(err, "held-out frames"));
    tmpdir_remove(d1), tmpdir_remove(d2);
}

/* The same seed writes the same images and ground truth; another seed another character. */
TEST(motion_bench_deterministic_by_seed) {
    char d1[256], d2[256], d3[256], err[1024];
    tmpdir_make(d1, sizeof d1), tmpdir_make(d2, sizeof d2), tmpdir_make(d3, sizeof d3);
    DsMotionBenchOptions o;
    tiny_opts(&o, "bird", d1, 11);
    CHECK_MSG(ds_motion_bench_make(&o, NULL, err, sizeof err) == 0, "%s", err);
    tiny_opts(&o, "bird", d2, 11);
    CHECK_MSG(ds_motion_bench_make(&o, NULL, err, sizeof err) == 0, "%s", err);
    tiny_opts(&o, "bird", d3, 12);
    CHECK_MSG(ds_motion_bench_make(&o, NULL, err, sizeof err) == 0, "%s", err);
    const char *files[6] = {"transforms_train.json", "transforms_test.json", "train/f0003_v01.png",
                            "test/f0004_v05.png", "heldout/train/f0002_v00.png", "heldout/transforms_val.json"};
    for (int i = 0; i < 6; i++) {
        char a[400], b[400], c[400];
        snprintf(a, sizeof a, "%s/%s", d1, files[i]);
        snprintf(b, sizeof b, "%s/%s", d2, files[i]);
        snprintf(c, sizeof c, "%s/%s", d3, files[i]);
        CHECK_MSG(same_file(a, b), "%s differs between two runs of seed 11", files[i]);
        if (strstr(files[i], ".png")) CHECK_MSG(!same_file(a, c), "%s equal for seeds 11 and 12", files[i]);
    }
    DsMotionGt g1, g2;
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/gt.h5", d1);
    snprintf(b, sizeof b, "%s/gt.h5", d2);
    CHECK(ds_motion_gt_load(a, &g1, err, sizeof err) == 0 && ds_motion_gt_load(b, &g2, err, sizeof err) == 0);
    CHECK(g1.nv == g2.nv && memcmp(g1.vertices, g2.vertices, sizeof(float) * 3 * g1.nv * g1.nframes) == 0);
    CHECK(memcmp(g1.secondary, g2.secondary, sizeof(float) * 3 * g1.nv * g1.nframes) == 0);
    ds_motion_gt_free(&g1), ds_motion_gt_free(&g2);
    tmpdir_remove(d1), tmpdir_remove(d2), tmpdir_remove(d3);
}

/* ---- monocular input --------------------------------------------------------------------------- */

static double attr_f64_read(hid_t f, const char *name) {
    double v = NAN;
    if (H5Aexists(f, name) <= 0) return v;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) v = NAN;
    if (a >= 0) H5Aclose(a);
    return v;
}

/* two splits read from two folders hold the same views: paths, times, cameras and pixels */
static bool same_split(const char *d1, const char *d2, const char *split) {
    DsDnerfSplit a, b;
    char err[1024];
    if (ds_dnerf_load(d1, split, &a, err, sizeof err)) return false;
    if (ds_dnerf_load(d2, split, &b, err, sizeof err)) {
        ds_dnerf_free(&a);
        return false;
    }
    bool same = a.n == b.n && a.n > 0 && a.width == b.width && a.height == b.height;
    for (int i = 0; i < a.n && same; i++) {
        const DsDnerfView *x = &a.views[i], *y = &b.views[i];
        same = x->time == y->time && !strcmp(strrchr(x->path, '/'), strrchr(y->path, '/')) &&
               !memcmp(x->cam.R, y->cam.R, sizeof x->cam.R) && !memcmp(x->cam.t, y->cam.t, sizeof x->cam.t) &&
               x->cam.fx == y->cam.fx && x->cam.cx == y->cam.cx &&
               !memcmp(x->rgba, y->rgba, sizeof(float) * 4 * (size_t)a.width * a.height);
    }
    ds_dnerf_free(&a), ds_dnerf_free(&b);
    return same;
}

/* --monocular: the training split is one image per frame from one camera orbiting the
 * character: distinct poses, neighbouring frames' camera centers close (a smooth orbit), the
 * azimuths spread over most of the circle, the character's center inside every image and its
 * silhouette in every one; val and test (and the held-out motion's) are the multi-view set's of
 * the same seed, view for view and pixel for pixel; gt.h5 is the multi-view one plus the orbit's
 * cameras and parameters; the JSON says monocular; a bad orbit is refused. */
TEST(motion_bench_monocular_orbit) {
    char dm[256], dv[256], err[1024], p[400];
    tmpdir_make(dm, sizeof dm), tmpdir_make(dv, sizeof dv);
    DsMotionBenchOptions o;
    DsMotionBenchStats st, sv;
    enum { F = 10 };
    tiny_opts(&o, "quadruped", dv, 5);
    o.frames = F;
    CHECK_MSG(ds_motion_bench_make(&o, &sv, err, sizeof err) == 0, "%s", err);
    tiny_opts(&o, "quadruped", dm, 5);
    o.frames = F, o.monocular = true;
    CHECK_MSG(ds_motion_bench_make(&o, &st, err, sizeof err) == 0, "%s", err);
    /* 6 views, every 3rd held out: 2 held-out views + the orbit per frame, two motions */
    CHECK(st.train_views == 1 && st.heldout_views == 2 && st.motions == 2);
    CHECK_MSG(st.images == 2 * F * 3, "%lld images", (long long)st.images);
    CHECK(st.orbit_distance >= st.distance && st.distance == sv.distance);
    snprintf(p, sizeof p, "%s/gt.h5", dm);
    DsMotionGt g;
    CHECK_MSG(ds_motion_gt_load(p, &g, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < 2; k++) {
        char sub[300];
        snprintf(sub, sizeof sub, k ? "%s/heldout" : "%s", dm);
        DsDnerfSplit tr;
        CHECK_MSG(ds_dnerf_load(sub, "train", &tr, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(tr.n == F, "%d training images for %d frames", tr.n, F);
        if (tr.n != F) continue;
        double C[F][3], lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int64_t i = 0; i < (int64_t)g.nframes * g.nv; i++)
            for (int a = 0; a < 3; a++) lo[a] = fmin(lo[a], g.vertices[3 * i + a]), hi[a] = fmax(hi[a], g.vertices[3 * i + a]);
        double mid[3] = {0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])};
        double az[F];
        for (int f = 0; f < F; f++) {
            const DsDnerfView *v = &tr.views[f];
            /* one image per frame, in frame order, time f/(F-1) */
            CHECK(fabs(v->time - (double)f / (F - 1)) < 1e-6 && strstr(v->path, "_orbit"));
            ds_camera_center(&v->cam, C[f]);
            az[f] = atan2(C[f][2] - mid[2], C[f][0] - mid[0]);
            /* the character's center projects near the image's center */
            double uv[2], depth;
            CHECK(ds_camera_project(&v->cam, mid, uv, &depth) && depth > 0);
            CHECK_MSG(fabs(uv[0] - 16) < 8 && fabs(uv[1] - 16) < 8, "frame %d: center at (%g, %g)", f, uv[0], uv[1]);
            double cov = 0;
            for (int i = 0; i < 32 * 32; i++) cov += v->rgba[4 * i + 3] > 0;
            CHECK_MSG(cov > 0.02 * 32 * 32, "frame %d: %g pixels covered", f, cov);
        }
        /* smooth: every step near the mean step, at most the chord of a 360/F turn plus a bit;
         * distinct: no two poses within a fifth of that chord */
        double chord = 2 * st.orbit_distance * sin(M_PI / F), worst = 0, nearest = INFINITY;
        for (int f = 0; f < F; f++)
            for (int h = f + 1; h < F; h++) {
                double dd = sqrt(pow(C[f][0] - C[h][0], 2) + pow(C[f][1] - C[h][1], 2) + pow(C[f][2] - C[h][2], 2));
                if (h == f + 1) worst = fmax(worst, dd);
                nearest = fmin(nearest, dd);
            }
        CHECK_MSG(worst < 1.3 * chord, "a step of %g (chord %g)", worst, chord);
        CHECK_MSG(nearest > 0.2 * chord, "two poses %g apart (chord %g)", nearest, chord);
        /* azimuth coverage: 360° less the largest gap between sorted azimuths */
        for (int i = 1; i < F; i++)
            for (int j = i; j > 0 && az[j - 1] > az[j]; j--) {
                double t = az[j];
                az[j] = az[j - 1], az[j - 1] = t;
            }
        double gap = az[0] + 2 * M_PI - az[F - 1];
        for (int i = 1; i < F; i++) gap = fmax(gap, az[i] - az[i - 1]);
        CHECK_MSG(2 * M_PI - gap > 1.5 * M_PI, "azimuth coverage %g deg", (2 * M_PI - gap) * 180 / M_PI);
        /* elevation moves: not all camera heights equal */
        double ylo = INFINITY, yhi = -INFINITY;
        for (int f = 0; f < F; f++) ylo = fmin(ylo, C[f][1]), yhi = fmax(yhi, C[f][1]);
        CHECK(yhi - ylo > 0.1 * st.orbit_distance);
        ds_dnerf_free(&tr);
        /* the held-out splits are the multi-view set's */
        char subv[300];
        snprintf(subv, sizeof subv, k ? "%s/heldout" : "%s", dv);
        CHECK_MSG(same_split(sub, subv, "test"), "%s: test split differs from the multi-view set's", sub);
        CHECK_MSG(same_split(sub, subv, "val"), "%s: val split differs from the multi-view set's", sub);
        /* no ring training view was rendered */
        snprintf(p, sizeof p, "%s/train/f0000_v00.png", sub);
        CHECK(access(p, F_OK) != 0);
    }
    /* ground truth: the multi-view one's surface, plus the orbit */
    DsMotionGt gv;
    snprintf(p, sizeof p, "%s/gt.h5", dv);
    CHECK_MSG(ds_motion_gt_load(p, &gv, err, sizeof err) == 0, "%s", err);
    CHECK(gv.nv == g.nv && gv.nframes == g.nframes &&
          !memcmp(gv.vertices, g.vertices, sizeof(float) * 3 * (size_t)g.nv * g.nframes));
    ds_motion_gt_free(&gv), ds_motion_gt_free(&g);
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/gt.h5", k ? dv : dm);
        hid_t f = base_h5_open_read(p, "test", err, sizeof err);
        CHECK_MSG(f >= 0, "%s", err);
        if (f < 0) continue;
        int64_t mono = -1;
        hid_t a = H5Aopen(f, "monocular", H5P_DEFAULT);
        CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &mono) >= 0);
        if (a >= 0) H5Aclose(a);
        CHECK(mono == !k);
        if (!k) {
            CHECK(attr_f64_read(f, "orbit_deg") == 360 && attr_f64_read(f, "orbit_elevation_deg") == 20);
            CHECK(attr_f64_read(f, "orbit_distance") == st.orbit_distance);
            int64_t want[3] = {F, 3, 4};
            void *w2c = NULL;
            CHECK_MSG(base_h5_read_array(f, p, "cameras/orbit_world_to_camera", 3, want, false, &w2c, err, sizeof err) == 0,
                      "%s", err);
            free(w2c);
        } else {
            CHECK(H5Lexists(f, "cameras/orbit_world_to_camera", H5P_DEFAULT) <= 0 && isnan(attr_f64_read(f, "orbit_deg")));
        }
        H5Fclose(f);
    }
    size_t n = 0;
    snprintf(p, sizeof p, "%s/transforms_train.json", dm);
    char *json = (char *)slurp(p, &n);
    CHECK(json && n > 0);
    if (json) json[n] = 0;
    CHECK(json && strstr(json, "\"monocular\": true") && strstr(json, "\"orbit_deg\": 360"));
    free(json);
    /* a partial sweep: azimuths within it */
    o.orbit_deg = 90, o.heldout_motion = "none", o.frames = 4;
    CHECK_MSG(ds_motion_bench_make(&o, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.motions == 1 && st.images == 4 * 3);
    /* bad orbits are refused, naming the orbit */
    o.orbit_deg = 0;
    CHECK(ds_motion_bench_make(&o, NULL, err, sizeof err) == -1 && strstr(err, "orbit"));
    o.orbit_deg = 360, o.orbit_elevation_deg = 75;
    CHECK(ds_motion_bench_make(&o, NULL, err, sizeof err) == -1 && strstr(err, "orbit"));
    o.orbit_elevation_deg = NAN;
    CHECK(ds_motion_bench_make(&o, NULL, err, sizeof err) == -1 && strstr(err, "orbit"));
    tmpdir_remove(dm), tmpdir_remove(dv);
}

/* `anima dataset motion --monocular` end to end: one training image per frame, the summary
 * says monocular; the orbit's options without --monocular or out of range exit 2 naming them;
 * --help lists them. */
TEST(motion_cli_monocular) {
    char cmd[1200], out[8192], dir[256], err[1024], sub[300];
    if (access(test_anima_bin(), X_OK) != 0) _exit(77);
    tmpdir_make(dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s dataset motion --category snake --out %s/m --frames 4 --views 4 --size 16 --grid 16 "
             "--holdout-every 2 --monocular --orbit 180 --orbit-elevation 15 --orbit-bob 5 --no-progress 2>&1",
             test_anima_bin(), dir);
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 0, "%s", out);
    CHECK_MSG(strstr(out, "monocular: 1 training camera orbiting 180 deg") && strstr(out, "elevation 15 +- 5 deg") &&
                  strstr(out, "24 images"),
              "%s", out);
    snprintf(sub, sizeof sub, "%s/m", dir);
    DsDnerfSplit tr, te;
    CHECK_MSG(ds_dnerf_load(sub, "train", &tr, err, sizeof err) == 0 && tr.n == 4, "%s", err);
    CHECK_MSG(ds_dnerf_load(sub, "test", &te, err, sizeof err) == 0 && te.n == 2 * 4, "%s", err);
    ds_dnerf_free(&tr), ds_dnerf_free(&te);
    /* the preview follows the orbit */
    snprintf(sub, sizeof sub, "%s/m/preview.gif", dir);
    CHECK_MSG(access(sub, F_OK) == 0, "%s", out);
    static const char *bad[][2] = {{"--orbit 90", "--orbit needs --monocular"},
                                   {"--orbit-bob 3", "--orbit-bob needs --monocular"},
                                   {"--monocular --orbit 0", "--orbit"},
                                   {"--monocular --orbit -30", "--orbit"},
                                   {"--monocular --orbit x", "--orbit"},
                                   {"--monocular --orbit-elevation 90", "--orbit-elevation"},
                                   {"--monocular --orbit-bob 45", "--orbit-bob"}};
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        snprintf(cmd, sizeof cmd, "%s dataset motion --category snake --out %s/b --frames 2 --views 2 %s 2>&1",
                 test_anima_bin(), dir, bad[i][0]);
        CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 2 && strstr(out, bad[i][1]), "%s: %s", bad[i][0], out);
    }
    snprintf(sub, sizeof sub, "%s/b", dir);
    CHECK_MSG(access(sub, F_OK) != 0, "a refused command made %s", sub);
    snprintf(cmd, sizeof cmd, "%s dataset motion --help 2>&1", test_anima_bin());
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 0 && strstr(out, "--monocular") && strstr(out, "--orbit DEG") &&
                  strstr(out, "--orbit-elevation") && strstr(out, "--orbit-bob"),
              "%s", out);
    tmpdir_remove(dir);
}

/* The command: a tiny run (the held-out motion stays another clip when the training one is the
 * held-out default), its summary, an unknown motion (exit 2), a BVH file that is not there
 * and an output folder that cannot be made (exit 1, naming them). */
TEST(motion_cli) {
    char cmd[1200], out[8192], dir[256];
    if (access(test_anima_bin(), X_OK) != 0) _exit(77);
    tmpdir_make(dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s dataset motion --category snake --out %s/s --frames 3 --views 4 --size 24 --grid 24 "
             "--holdout-every 2 --motion strike --no-progress 2>&1",
             test_anima_bin(), dir);
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 0, "%s", out);
    /* strike is the snake's held-out default: chosen for training, the held-out motion becomes
     * slither, still a different clip */
    CHECK_MSG(strstr(out, "train    strike") && strstr(out, "held-out slither") && strstr(out, "24 images"), "%s", out);
    /* the repertoire with a longer training motion: the held-out clip stays 48 frames, and each
     * motion's line prints its own count; tiny images, so it takes a second */
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s dataset motion --category snake --out %s/d --motion repertoire --frames 60 --views 2 "
             "--size 8 --grid 16 --supersample 1 --video none --no-progress 2>&1",
             test_anima_bin(), dir);
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 0, "%s", out);
    CHECK_MSG(strstr(out, "train    repertoire   60 frames") && strstr(out, "held-out strike       48 frames") &&
                  strstr(out, "216 images"),
              "%s", out);
    DsMotionBenchOptions o;
    ds_motion_bench_defaults(&o);
    CHECK(o.frames == 48 && o.heldout_frames == 0 && !o.motion);
    snprintf(cmd, sizeof cmd, "%s dataset motion --category snake --out %s/t --motion moonwalk 2>&1", test_anima_bin(), dir);
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 2 && strstr(out, "moonwalk"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s dataset motion --category snake --out %s/u --motion x.bvh --frames 2 --views 2 2>&1",
             test_anima_bin(), dir);
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 1 && strstr(out, "x.bvh"), "%s", out);
    /* an output folder that cannot be made: exit 1, naming it */
    snprintf(cmd, sizeof cmd, "%s dataset motion --category snake --out /dev/null/x --frames 2 --views 2 2>&1",
             test_anima_bin());
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 1 && strstr(out, "/dev/null/x"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s dataset motion --help 2>&1", test_anima_bin());
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 0 && strstr(out, "cmu_01_01"), "%s", out);
    tmpdir_remove(dir);
}
