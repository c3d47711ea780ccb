/* tests/test_skelebones.c — the whole skelebones pipeline (models/skelebones/rigging.h) on a tiny
 * motion-benchmark character: SSDR → mean curvature skeleton → joints, tree, parts → IK. */
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/h5file.h"
#include "datasets/render/video.h"
#include "models/skelebones/rigging.h"
#include "models/skelebones/skelebones.h"
#include "tests/test.h"

static void tmpdir_make(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/anima-test-skelebones-XXXXXX");
    if (!mkdtemp(dir)) abort();
}

static void tmpdir_remove(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

/* a tiny humanoid of the motion benchmark in dir/bench (gt.h5) */
static int make_bench(const char *dir, int frames) {
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd,
             "%s dataset motion --category humanoid --out %s/bench --frames %d --views 2 --size 8 --grid 32 "
             "--motion cmu_01_01 --heldout none --no-progress 2>&1",
             test_anima_bin(), dir, frames);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    return rc;
}

/* a tiny humanoid of 6 frames in a new folder dir (dir/bench/gt.h5), read into t; 0, or -1
 * (recorded as a failure) */
static int bench_traj(char *dir, size_t n, SbTraj *t) {
    char path[256], err[512];
    tmpdir_make(dir, n);
    if (make_bench(dir, 6)) return -1;
    snprintf(path, sizeof path, "%s/bench/gt.h5", dir);
    int rc = sb_traj_read_gt(path, t, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    return rc;
}

/* parents-first with one root: every joint reaches the root (connected) and no chain can loop
 * (acyclic) */
static void check_tree(int J, const int32_t *parent) {
    int roots = 0;
    for (int j = 0; j < J; j++) {
        if (parent[j] == -1) roots++;
        else CHECK_MSG(parent[j] >= 0 && parent[j] < j, "joint %d has parent %d", j, parent[j]);
    }
    CHECK_MSG(roots == 1 && parent[0] == -1, "%d roots", roots);
}

static double field(const char *out, const char *key) {
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : -1;
}

TEST(skelebones_cli_full_pipeline) {
    char dir[64], cmd[1024], out[16384], path[200];
    tmpdir_make(dir, sizeof dir);
    if (make_bench(dir, 6)) return;
    snprintf(cmd, sizeof cmd,
             "%s skelebones --gt %s/bench/gt.h5 --bones 12 --iters 5 --ik-steps 40 --ik-points 200 --out %s/rig "
             "--no-progress 2>&1",
             test_anima_bin(), dir, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    printf("    %s", out);
    double tf = field(out, "joint_err_true_to_found "), ft = field(out, "joint_err_found_to_true ");
    /* the target: within 5% of the diagonal, both ways (true joints: the bones' heads and
     * the leaves' tails) */
    CHECK_MSG(tf >= 0 && tf < 5.0, "true → found %g%%: %s", tf, out);
    CHECK_MSG(ft >= 0 && ft < 5.0, "found → true %g%%: %s", ft, out);
    CHECK_MSG(field(out, "components ") == 1 && field(out, "cycles ") == 0, "%s", out);
    snprintf(path, sizeof path, "%s/rig/rig.h5", dir);
    hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(h >= 0);
    if (h < 0) return;
    hid_t d = H5Dopen2(h, "joints/parents", H5P_DEFAULT);
    CHECK(d >= 0);
    if (d >= 0) {
        hid_t sp = H5Dget_space(d);
        hsize_t n = 0;
        H5Sget_simple_extent_dims(sp, &n, NULL);
        int32_t *par = malloc(n * sizeof *par);
        CHECK(par && H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, par) >= 0);
        CHECK(n >= 5 && (int)n == (int)field(out, " joints "));
        check_tree((int)n, par);
        free(par), H5Sclose(sp), H5Dclose(d);
    }
    const char *names[] = {"skeleton/nodes", "skeleton/edges", "skeleton/corr", "joints/positions", "joints/parts",
                           "ik/rotations", "ik/parents", "ik/joints", "bones/weights"};
    for (int k = 0; k < 9; k++) CHECK_MSG(H5Lexists(h, names[k], H5P_DEFAULT) > 0, "no %s", names[k]);
    H5Fclose(h);
    const char *files[] = {"skeleton.png", "skeleton.ply", "bones.ply", "bones.png"};
    for (int k = 0; k < 4; k++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/rig/%s", dir, files[k]);
        CHECK_MSG(stat(path, &st) == 0 && st.st_size > 0, "%s", path);
    }
    /* the tree against the true rig is reported (joints matched, bones kept) */
    CHECK_MSG(field(out, "tree_matched ") >= 1 && field(out, "tree_bones_kept ") >= 0, "%s", out);
    /* the rig animated: an MP4 beside the GIF wherever ffmpeg is installed (--video auto) */
    if (ds_video_have_ffmpeg()) {
        struct stat st;
        snprintf(path, sizeof path, "%s/rig/rig.mp4", dir);
        CHECK_MSG(stat(path, &st) == 0 && st.st_size > 0, "%s", path);
    }
    /* the rig animated: a GIF of 320 × 240 pixels, one image per frame (6 frames) */
    snprintf(path, sizeof path, "%s/rig/rig.gif", dir);
    FILE *gf = fopen(path, "rb");
    CHECK_MSG(gf != NULL, "%s", path);
    if (gf) {
        static unsigned char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, gf);
        fclose(gf);
        CHECK(n > 13 && memcmp(buf, "GIF89a", 6) == 0);
        CHECK(buf[6] + 256 * buf[7] == 320 && buf[8] + 256 * buf[9] == 240);
        /* graphic control extensions (21 F9 04), one before each image */
        int gce = 0;
        for (size_t i = 0; i + 2 < n; i++) gce += buf[i] == 0x21 && buf[i + 1] == 0xF9 && buf[i + 2] == 0x04;
        CHECK_MSG(gce >= 6, "%d frames", gce);
    }
    tmpdir_remove(dir);
}

TEST(skelebones_ik_residual_decreases_and_points_route) {
    char dir[64], path[200], err[512];
    tmpdir_make(dir, sizeof dir);
    if (make_bench(dir, 4)) return;
    snprintf(path, sizeof path, "%s/bench/gt.h5", dir);
    SbTraj t;
    CHECK_MSG(sb_traj_read_gt(path, &t, err, sizeof err) == 0, "%s", err);
    SbOptions o;
    sb_options_defaults(&o);
    o.cluster.bones = 10, o.ssdr.iters = 4;
    SbResult r;
    CHECK_MSG(sb_run(&t, &o, &r, err, sizeof err) == 0, "%s", err);
    /* the IK's objective per frame after 1 Adam step and after 60: the optimizer lowers it */
    double mean[2];
    int steps[2] = {1, 60};
    for (int k = 0; k < 2; k++) {
        SbRigOptions ro;
        sb_rig_options_defaults(&ro);
        ro.ik.steps = steps[k], ro.ik_points = 200;
        SbRigResult g;
        CHECK_MSG(sb_rig_run(&t, &r, &ro, &g, err, sizeof err) == 0, "%s", err);
        CHECK(r.ik.njoints == g.rig.njoints && r.ik.nframes == t.nframes);
        mean[k] = 0;
        for (int f = 0; f < t.nframes; f++) mean[k] += r.ik.loss[f] / t.nframes;
        sb_rig_result_free(&g);
    }
    printf("    IK mean loss after 1 step %.4g, after 60 steps %.4g\n", mean[0], mean[1]);
    CHECK_MSG(mean[1] < 0.5 * mean[0], "%g vs %g", mean[1], mean[0]);
    /* the same points without faces (Gaussians' route): their density is meshed, and the tree
     * over the joints found is still one connected, acyclic tree */
    free(t.faces);
    t.faces = NULL, t.nfaces = 0;
    SbRigOptions ro;
    sb_rig_options_defaults(&ro);
    ro.run_ik = 0, ro.grid = 48;
    SbRigResult g;
    CHECK_MSG(sb_rig_run(&t, &r, &ro, &g, err, sizeof err) == 0, "%s", err);
    CHECK(g.meshed == 1 && g.rig.njoints >= 5);
    check_tree(g.rig.njoints, g.rig.parent);
    printf("    points route: %lld nodes, %d joints, joint error %.2f%% / %.2f%% of the diagonal\n",
           (long long)g.skel.nnodes, g.rig.njoints, g.err_true_found, g.err_found_true);
    CHECK_MSG(g.err_true_found < 8.0, "%g%%", g.err_true_found);
    sb_rig_result_free(&g);
    sb_result_free(&r);
    sb_traj_free(&t);
    tmpdir_remove(dir);
}

/* --true-rig: trajectories in a canonical space of their own (the gt.h5 motion with its rest
 * moved rigidly, as gs4d's canonical Gaussians are) are compared with the true rig posed, frame by
 * frame: the error stays as small as on the ground-truth path; the same trajectories displaced
 * by 10% of the diagonal in every frame fail it; trajectories without frame times are refused */
TEST(skelebones_true_rig_posed_joints) {
    char dir[64], cmd[2048], out[16384], path[256], err[512];
    SbTraj t;
    if (bench_traj(dir, sizeof dir, &t)) return;
    if (t.nframes != 6) return;
    CHECK(t.times != NULL);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, diag = 0;
    for (int64_t i = 0; i < t.npoints; i++)
        for (int c = 0; c < 3; c++) lo[c] = fmin(lo[c], t.rest[i * 3 + c]), hi[c] = fmax(hi[c], t.rest[i * 3 + c]);
    for (int c = 0; c < 3; c++) diag += (hi[c] - lo[c]) * (hi[c] - lo[c]);
    diag = sqrt(diag);
    /* the rest turned 30° about y and moved: a canonical space unlike the true rest */
    const double a = M_PI / 6, ca = cos(a), sa = sin(a);
    for (int64_t i = 0; i < t.npoints; i++) {
        float *p = t.rest + i * 3;
        double x = p[0], z = p[2];
        p[0] = (float)(ca * x + sa * z + 0.3 * diag), p[2] = (float)(-sa * x + ca * z), p[1] += (float)(0.2 * diag);
    }
    snprintf(path, sizeof path, "%s/moved.h5", dir);
    CHECK_MSG(sb_traj_write_h5(path, &t, err, sizeof err) == 0, "%s", err);
    for (int64_t k = 0; k < (int64_t)t.nframes * t.npoints; k++) t.pos[k * 3] += (float)(0.1 * diag);
    snprintf(path, sizeof path, "%s/displaced.h5", dir);
    CHECK_MSG(sb_traj_write_h5(path, &t, err, sizeof err) == 0, "%s", err);
    /* known answer: found joints exactly on the true heads of every frame → found → true is 0 and
     * true → found is the leaf tails' distance alone (> 0); a clock off by a whole frame is refused */
    {
        SbTraj truth;
        snprintf(path, sizeof path, "%s/bench/gt.h5", dir);
        CHECK_MSG(sb_traj_read_gt(path, &truth, err, sizeof err) == 0, "%s", err);
        int F = truth.nframes, B = truth.true_bones;
        SbResult r = {0};
        r.ik.nframes = F, r.ik.njoints = B;
        r.ik.positions = malloc((size_t)F * B * 3 * sizeof(double));
        for (int64_t k = 0; k < (int64_t)F * B * 3; k++) r.ik.positions[k] = truth.true_joints[k];
        SbPosedJointError pe;
        CHECK_MSG(sb_rig_posed_joint_error(&r, truth.times, &truth, &pe, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(pe.frames == F && pe.found_true < 1e-4 && pe.true_found > 0.1 && pe.true_joints > B,
                  "frames %d found->true %g true->found %g joints %d", pe.frames, pe.found_true, pe.true_found, pe.true_joints);
        float *late = malloc((size_t)F * sizeof *late);
        for (int f = 0; f < F; f++) late[f] = truth.times[f] + (truth.times[F - 1] - truth.times[0]) / (F - 1);
        CHECK(sb_rig_posed_joint_error(&r, late, &truth, &pe, err, sizeof err) == -1 && strstr(err, "no true frame"));
        free(late), free(r.ik.positions), sb_traj_free(&truth);
    }
    free(t.times), t.times = NULL;
    snprintf(path, sizeof path, "%s/untimed.h5", dir);
    CHECK_MSG(sb_traj_write_h5(path, &t, err, sizeof err) == 0, "%s", err);
    sb_traj_free(&t);
    const char *opts = "--bones 12 --iters 5 --ik-steps 40 --ik-points 200 --video none --no-progress";
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s/moved.h5 --true-rig %s/bench/gt.h5 %s --out %s/rig 2>&1",
             test_anima_bin(), dir, dir, opts, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    printf("    %s", out);
    double tf = field(out, "posed_joint_err_true_to_found "), ft = field(out, "posed_joint_err_found_to_true ");
    CHECK_MSG(tf >= 0 && tf < 5.0 && ft >= 0 && ft < 5.0, "%g%% / %g%%: %s", tf, ft, out);
    CHECK_MSG(strstr(out, "mean of 6 frames") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s/displaced.h5 --true-rig %s/bench/gt.h5 %s --out %s/rig2 2>&1",
             test_anima_bin(), dir, dir, opts, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    double tf2 = field(out, "posed_joint_err_true_to_found ");
    CHECK_MSG(tf2 > 7.0, "displaced by 10%%, true → found %g%%: %s", tf2, out);
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s/untimed.h5 --true-rig %s/bench/gt.h5 %s --out %s/rig3 2>&1",
             test_anima_bin(), dir, dir, opts, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "no frame times"), "rc %d: %s", rc, out);
    tmpdir_remove(dir);
}

TEST(skelebones_transparent_gaussians_left_out) {
    /* a gs4d-like trajectories file: the tiny humanoid's points without faces (the density route)
     * and a third as many transparent points (opacity 0.02) whose trajectories are noise inside
     * the shape's box, as Gaussians the images never constrained. With --min-opacity 0.2 they take no part in
     * the bones, the skeleton's shape or the IK, and the joints stay where the clean points put
     * them; fitted to all points (the default, --min-opacity 0) the noise moves them. Every point, transparent
     * or not, has its weights in rig.h5, and bones/fitted says which were fitted. */
    char dir[64], cmd[2048], out[16384], path[256], err[512];
    SbTraj t;
    if (bench_traj(dir, sizeof dir, &t)) return;
    int F = t.nframes;
    int64_t NC = t.npoints, NX = NC / 3, N = NC + NX;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < NC; i++)
        for (int c = 0; c < 3; c++) lo[c] = fminf(lo[c], t.rest[i * 3 + c]), hi[c] = fmaxf(hi[c], t.rest[i * 3 + c]);
    SbTraj n = {0};
    n.nframes = F, n.npoints = N;
    n.rest = malloc((size_t)N * 3 * sizeof(float)), n.pos = malloc((size_t)F * N * 3 * sizeof(float));
    n.opacity = malloc((size_t)N * sizeof(float)), n.times = malloc((size_t)F * sizeof(float));
    memcpy(n.times, t.times, (size_t)F * sizeof(float));
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < N; i++) {
        n.opacity[i] = i < NC ? 0.98f : 0.02f;
        for (int f = -1; f < F; f++)
            for (int c = 0; c < 3; c++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                float u = (float)((s >> 11) * 0x1.0p-53), v = lo[c] + u * (hi[c] - lo[c]);
                if (f < 0) n.rest[i * 3 + c] = i < NC ? t.rest[i * 3 + c] : v;
                else n.pos[((size_t)f * N + i) * 3 + c] = i < NC ? t.pos[((size_t)f * NC + i) * 3 + c] : v;
            }
    }
    snprintf(path, sizeof path, "%s/noisy.h5", dir);
    CHECK_MSG(sb_traj_write_h5(path, &n, err, sizeof err) == 0, "%s", err);
    sb_traj_free(&n), sb_traj_free(&t);
    const char *opts = "--bones 12 --iters 5 --ik-steps 40 --ik-points 200 --video none --no-progress";
    double tf[2], ft[2];
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s skelebones --traj %s/noisy.h5 --true-rig %s/bench/gt.h5 %s %s --out %s/rig%d 2>&1",
                 test_anima_bin(), dir, dir, opts, k ? "" : "--min-opacity 0.2", dir, k);
        int rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        printf("    %s", out);
        tf[k] = field(out, "posed_joint_err_true_to_found "), ft[k] = field(out, "posed_joint_err_found_to_true ");
        CHECK_MSG((strstr(out, "fitted_points ") != NULL) == (k == 0) && (k || field(out, "fitted_points ") == NC), "%s", out);
    }
    CHECK_MSG(tf[0] >= 0 && tf[0] < 6 && ft[0] >= 0 && ft[0] < 6, "transparent points left out: %g%% / %g%%", tf[0], ft[0]);
    CHECK_MSG(tf[1] + ft[1] > tf[0] + ft[0] + 1, "all fitted %g%% / %g%% against %g%% / %g%%", tf[1], ft[1], tf[0], ft[0]);
    snprintf(path, sizeof path, "%s/rig0/rig.h5", dir);
    hid_t h = base_h5_open_read(path, "rig", err, sizeof err);
    CHECK_MSG(h >= 0, "%s", err);
    if (h >= 0) {
        void *fv = NULL, *wv = NULL;
        int64_t d1[1] = {0}, d2[2] = {0};
        CHECK_MSG(base_h5_read_dims(h, path, "bones/fitted", 1, d1, H5T_NATIVE_UINT8, 1, false, &fv, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(base_h5_read_dims(h, path, "bones/weights", 2, d2, H5T_NATIVE_FLOAT, 4, false, &wv, err, sizeof err) == 0, "%s", err);
        H5Fclose(h);
        if (!fv || !wv || d1[0] != N || d2[0] != N || d2[1] != 12) {
            CHECK_MSG(0, "bones/fitted %lld, bones/weights %lld x %lld for %lld points", (long long)d1[0], (long long)d2[0],
                      (long long)d2[1], (long long)N);
            free(fv), free(wv);
            tmpdir_remove(dir);
            return;
        }
        const uint8_t *fit = fv;
        const float *w = wv;
        int64_t nf = 0;
        for (int64_t i = 0; i < N; i++) {
            nf += fit[i];
            CHECK(fit[i] == (i < NC));
            double sum = 0;
            for (int j = 0; j < 12; j++) sum += w[i * 12 + j];
            CHECK_NEAR(sum, 1, 1e-4);
        }
        CHECK(nf == NC);
        free(fv), free(wv);
    }
    tmpdir_remove(dir);
}
