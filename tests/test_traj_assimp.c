/* tests/test_traj_assimp.c — trajectories from an animated, skinned model through libassimp
 * (models/skelebones/traj_assimp.c) on a real rigged file from Debian's assimp-testmodels
 * (FBX/huesitos.fbx: 9 bones, one animation): sizes, finite values, parents first, normalized
 * weights, motion; and the check that two independent computations agree — the positions are
 * skinned from the mesh-space vertices with each mesh bone's offset matrix, the true rig maps
 * the rest pose (static hierarchy) to each frame, and linear blend skinning of the rest with
 * those must reproduce the positions (it does only when the file's static hierarchy is its bind
 * pose and the offsets are read and composed in the right order). Then `anima skelebones
 * --model` on it, and the errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/render/image.h"
#include "models/skelebones/ssdr.h"
#include "models/skelebones/traj.h"
#include "tests/test.h"

#define HUESITOS "/usr/share/assimp/models/FBX/huesitos.fbx"

static void tmpdir_make(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/anima-test-assimp-XXXXXX");
    if (!mkdtemp(dir)) abort();
}

static void tmpdir_remove(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

static void need_model(void) {
    struct stat st;
    if (stat(HUESITOS, &st) != 0) {
        printf("    skipped: %s absent (apt-get install assimp-testmodels, or datasets/fetch-real.sh)\n", HUESITOS);
        exit(77);
    }
}

TEST(traj_assimp_skinned_fbx) {
    need_model();
    SbTraj t;
    char err[1024];
    int F = 12;
    CHECK_MSG(sb_traj_read_assimp(HUESITOS, F, 0, &t, err, sizeof err) == 0, "%s", err);
    CHECK(t.nframes == F && t.npoints > 50 && t.nfaces > 50 && t.faces && t.true_bones == 9);
    int64_t N = t.npoints;
    int B = t.true_bones;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < N; i++)
        for (int c = 0; c < 3; c++) lo[c] = fminf(lo[c], t.rest[i * 3 + c]), hi[c] = fmaxf(hi[c], t.rest[i * 3 + c]);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    CHECK(diag > 0 && isfinite(diag));
    int finite = 1;
    for (int64_t k = 0; k < (int64_t)F * N * 3; k++) finite &= isfinite(t.pos[k]);
    for (int64_t k = 0; k < (int64_t)F * B * 3; k++) finite &= isfinite(t.true_joints[k]);
    CHECK(finite);
    for (int b = 0; b < B; b++) CHECK_MSG(t.true_parents[b] < b && t.true_parents[b] >= -1, "bone %d parent %d", b, t.true_parents[b]);
    CHECK(t.true_parents[0] == -1);
    int weighted = 0;
    for (int64_t i = 0; i < N; i++) {
        double s = 0;
        for (int b = 0; b < B; b++) s += t.true_weights[i * B + b];
        CHECK_MSG(s == 0 || fabs(s - 1) < 1e-5, "point %lld weights sum %g", (long long)i, s);
        weighted += s > 0;
    }
    CHECK(weighted == N); /* every vertex of this model is skinned */
    double moved = 0;
    for (int f = 1; f < F; f++)
        for (int64_t k = 0; k < N * 3; k++) moved = fmax(moved, fabs(t.pos[(size_t)f * N * 3 + k] - t.pos[k]));
    CHECK_MSG(moved > 0.05 * diag, "largest motion %g of diagonal %g", moved, diag);
    double rmse = sb_lbs_rmse(F, N, B, t.rest, t.pos, t.true_weights, t.true_transforms);
    CHECK_MSG(rmse < 1e-5 * diag, "LBS of the rest with the true rig: rmse %g (diagonal %g)", rmse, diag);
    /* frames are distinct samples: fewer frames give the same first and last frame */
    SbTraj u;
    CHECK_MSG(sb_traj_read_assimp(HUESITOS, 3, 0, &u, err, sizeof err) == 0, "%s", err);
    double d0 = 0, d1 = 0;
    for (int64_t k = 0; k < N * 3; k++) {
        d0 = fmax(d0, fabs(u.pos[k] - t.pos[k]));
        d1 = fmax(d1, fabs(u.pos[2 * N * 3 + k] - t.pos[(size_t)(F - 1) * N * 3 + k]));
    }
    CHECK_MSG(d0 < 1e-6 * diag && d1 < 1e-6 * diag, "first %g last %g", d0, d1);
    sb_traj_free(&u);
    sb_traj_free(&t);
    /* errors name the file and the problem */
    CHECK(sb_traj_read_assimp(HUESITOS, 0, 0, &t, err, sizeof err) == -1 && strstr(err, "frames"));
    CHECK(sb_traj_read_assimp(HUESITOS, 4, 1, &t, err, sizeof err) == -1 && strstr(err, "animation 1"));
    CHECK(sb_traj_read_assimp("/nonexistent/x.fbx", 4, 0, &t, err, sizeof err) == -1 && strstr(err, "x.fbx"));
}

TEST(traj_assimp_cli) {
    need_model();
    char dir[64], cmd[1024], out[8192];
    tmpdir_make(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "%s skelebones --model %s --model-frames 10 --bones 4 --iters 4 --no-skeleton --out %s/rig --no-progress 2>&1",
             test_anima_bin(), HUESITOS, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    CHECK_MSG(strstr(out, "frames 10 ") && strstr(out, "bones_true 9"), "%s", out);
    char path[160];
    struct stat st;
    snprintf(path, sizeof path, "%s/rig/rig.h5", dir);
    CHECK(stat(path, &st) == 0 && st.st_size > 0);
    snprintf(cmd, sizeof cmd, "%s skelebones --model %s --traj x.h5 --out %s/x 2>&1", test_anima_bin(), HUESITOS, dir);
    CHECK(test_run_capture(cmd, out, sizeof out) == 2);
    tmpdir_remove(dir);
}

TEST(traj_assimp_pictures_in_model_units) {
    /* animation_with_skeleton is about 7000 units long: the pictures' clip planes must
     * follow the shape's size — with the look-at default (0.01..100) it came out blank */
    need_model();
    const char *model = "/usr/share/assimp/models/FBX/animation_with_skeleton.fbx";
    char dir[64], cmd[1024], out[8192];
    tmpdir_make(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "%s skelebones --model %s --model-frames 6 --bones 4 --iters 2 --no-ik --out %s/rig --no-progress 2>&1",
             test_anima_bin(), model, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    /* both pictures (the skeleton's, and the shape colored by bone) draw the shape, a long thin
     * rod: pixels darker than the white background */
    const char *pics[] = {"skeleton.png", "bones.png"};
    for (int k = 0; k < 2; k++) {
        char path[160], err[256];
        snprintf(path, sizeof path, "%s/rig/%s", dir, pics[k]);
        DsImage im;
        CHECK_MSG(ds_image_read(path, &im, err, sizeof err) == 0, "%s", err);
        if (!im.data) continue;
        int64_t dark = 0, n = (int64_t)im.w * im.h;
        for (int64_t i = 0; i < n; i++) dark += im.data[i * im.channels] < 200;
        CHECK_MSG(dark > n / 100, "%s: %lld of %lld pixels drawn", pics[k], (long long)dark, (long long)n);
        ds_image_free(&im);
    }
    tmpdir_remove(dir);
}
