/* tests/test_bvh.c — the BVH reader and forward kinematics: a small hand-checked skeleton
 * (channel order, intrinsic composition, root translation, End Sites), malformed files, and
 * the CMU captures in Debian's assimp-testmodels (skipped without them): they parse and every
 * bone keeps its length over all frames. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mat3.h"
#include "datasets/mesh/bvh.h"
#include "tests/test.h"

#define ASSIMP_BVH "/usr/share/assimp/models/BVH"

static void rot(char axis, double deg, double r[9]) {
    double a = deg * M_PI / 180, c = cos(a), s = sin(a);
    double x[9] = {1, 0, 0, 0, c, -s, 0, s, c}, y[9] = {c, 0, s, 0, 1, 0, -s, 0, c}, z[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    memcpy(r, axis == 'X' ? x : axis == 'Y' ? y : z, sizeof x);
}

TEST(bvh_small_skeleton_fk) {
    DsBvh b;
    char err[512];
    if (ds_bvh_read("tests/fuzz/corpus/bvh/small.bvh", &b, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return;
    }
    CHECK(b.njoints == 5 && b.nchannels == 12 && b.nframes == 2);
    CHECK(!strcmp(b.joints[2].name, "Spine_end") && b.joints[2].end_site && b.joints[2].parent == 1);
    CHECK(b.joints[3].chan_start == 9 && b.joints[3].chan[0] == DS_BVH_YROT);
    CHECK_NEAR(b.frame_time, 0.0333333, 1e-12);
    double w[5 * 16];
    /* frame 0: root at (0,10,0) unrotated; spine rotated X10 Y20 Z30 (intrinsic: Rx·Ry·Rz) */
    ds_bvh_pose(&b, 0, w);
    double rx[9], ry[9], rz[9], rxy[9], r[9], end[3], off[3] = {0, 3, 0};
    rot('X', 10, rx), rot('Y', 20, ry), rot('Z', 30, rz);
    base_mat3_mul(rx, ry, rxy), base_mat3_mul(rxy, rz, r);
    base_mat3_vec(r, off, end);
    CHECK_NEAR(w[16 * 1 + 3], 0, 1e-12);
    CHECK_NEAR(w[16 * 1 + 7], 15, 1e-12);
    CHECK_NEAR(w[16 * 2 + 3], end[0], 1e-12);
    CHECK_NEAR(w[16 * 2 + 7], 15 + end[1], 1e-12);
    CHECK_NEAR(w[16 * 2 + 11], end[2], 1e-12);
    /* leg: Y-5 Z0 X45 → Ry(-5)·Rx(45) applied to the end offset (0,-4,0) */
    double ry5[9], rx45[9], rl[9], lend[3], loff[3] = {0, -4, 0};
    rot('Y', -5, ry5), rot('X', 45, rx45);
    base_mat3_mul(ry5, rx45, rl);
    base_mat3_vec(rl, loff, lend);
    CHECK_NEAR(w[16 * 4 + 3], 1 + lend[0], 1e-12);
    CHECK_NEAR(w[16 * 4 + 7], 9 + lend[1], 1e-12);
    CHECK_NEAR(w[16 * 4 + 11], lend[2], 1e-12);
    /* frame 1: root at (1,10,0) turned 90° about Z: the spine offset (0,5,0) maps to (-5,0,0) */
    ds_bvh_pose(&b, 1, w);
    CHECK_NEAR(w[16 * 1 + 3], -4, 1e-12);
    CHECK_NEAR(w[16 * 1 + 7], 10, 1e-12);
    /* rest pose: offsets only */
    ds_bvh_pose(&b, -1, w);
    CHECK_NEAR(w[16 * 4 + 7], -5, 1e-12);
    ds_bvh_free(&b);
}

TEST(bvh_malformed) {
    const char *bad[][2] = {
        {"", "not a BVH file"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\n", "file ends inside the hierarchy"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0\nCHANNELS 0\n}\nMOTION\n", "x.bvh:5: OFFSET needs 3 finite numbers"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 7 Xrotation\n}\n", "x.bvh:5: CHANNELS count"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Wrotation\n}\n", "unknown channel 'Wrotation'"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n}\nMOTION\nFrames: 99999999\nFrame Time: 0.1\n1\n",
         "cannot fit"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 2 Xrotation Yrotation\n}\nMOTION\nFrames: 2\nFrame Time: 0.1\n1.0 2.0\n3.0\n",
         "file ends in frame 1 of 2"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\nnan\n",
         "x.bvh:10: bad number 'nan'"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\n}\n}\nMOTION\n", "x.bvh:6: '}' without a joint"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 2 Xrotation Yrotation\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n1 2\n3\n",
         "1 values after the 1 declared frames"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nMOTION\n", "'MOTION' inside joint 'a'"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nEnd Site\n{\nOFFSET 0 0 0\nJOINT b\n", "a joint inside an End Site"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        DsBvh b;
        char err[512] = "";
        int rc = ds_bvh_read_mem("x.bvh", (const uint8_t *)bad[i][0], strlen(bad[i][0]), &b, err, sizeof err);
        CHECK_MSG(rc != 0, "case %zu accepted", i);
        if (!rc) ds_bvh_free(&b);
        CHECK_MSG(strstr(err, bad[i][1]) && !strncmp(err, "x.bvh", 5), "case %zu: '%s' lacks '%s'", i, err, bad[i][1]);
    }
}

TEST(bvh_cmu_bone_lengths_constant) {
    struct stat st;
    if (stat(ASSIMP_BVH, &st) != 0) {
        printf("    skipped: %s absent (apt-get install assimp-testmodels, or datasets/fetch-real.sh)\n", ASSIMP_BVH);
        exit(77);
    }
    const char *files[] = {"01_01.bvh", "01_03.bvh", "Boxing_Toes.bvh"};
    for (int fi = 0; fi < 3; fi++) {
        char path[512], err[512];
        snprintf(path, sizeof path, "%s/%s", ASSIMP_BVH, files[fi]);
        DsBvh b;
        if (ds_bvh_read(path, &b, err, sizeof err)) {
            test_fail_at(__FILE__, __LINE__, "%s", err);
            continue;
        }
        CHECK(b.njoints > 10 && b.nframes > 100);
        double *rest = malloc(sizeof(double) * 16 * (size_t)b.njoints), *w = malloc(sizeof(double) * 16 * (size_t)b.njoints);
        ds_bvh_pose(&b, -1, rest);
        double scale = 0, worst = 0;
        for (int j = 1; j < b.njoints; j++) {
            const float *o = b.joints[j].offset;
            scale = fmax(scale, sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]));
        }
        int64_t step = test_quick() ? 50 : 1;
        for (int64_t f = 0; f < b.nframes; f += step) {
            ds_bvh_pose(&b, f, w);
            for (int j = 0; j < b.njoints; j++) {
                int p = b.joints[j].parent;
                if (p < 0) continue;
                double len = 0, len0 = 0;
                for (int k = 0; k < 3; k++) {
                    double d = w[16 * j + 4 * k + 3] - w[16 * p + 4 * k + 3];
                    double d0 = rest[16 * j + 4 * k + 3] - rest[16 * p + 4 * k + 3];
                    len += d * d, len0 += d0 * d0;
                }
                len = sqrt(len), len0 = sqrt(len0);
                /* relative to the bone, or to the skeleton's scale for zero-length bones */
                worst = fmax(worst, fabs(len - len0) / fmax(len0, scale));
            }
        }
        printf("    %s: %d joints, %lld frames, worst bone-length change %.2g\n", files[fi], b.njoints,
               (long long)b.nframes, worst);
        CHECK_MSG(worst < 1e-4, "%s: bone length changes by %g (relative)", files[fi], worst);
        free(rest);
        free(w);
        ds_bvh_free(&b);
    }
}
