/* bench/bench_partmm.c — PartMM's speed at the size issue 20 names: a 300-frame database of 50
 * bones on a 26-joint tree with 5 overlapping parts, and a 300-pose query synthesized whole
 * (per-joint geodesics, k-NN per part and window at every pyramid level, alignment, blending,
 * bones over parts: everything pm_synthesize does). One step is the whole query, so poses per
 * second = 300 / (median seconds). The data are smooth random rotations and random bone
 * transforms: the cost does not depend on what the transforms are. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/partmm/partmm.h"

enum { BF = 300, BJ = 26, BB = 50, BP = 5, BQ = 300 };

typedef struct {
    PmDatabase db;
    PmOptions o;
    float *qrot, *qtrans, *out;
} PmBench;

static void quat(double ax, double ay, double az, double ang, float *q) {
    double n = sqrt(ax * ax + ay * ay + az * az), s = sin(ang / 2) / n;
    q[0] = (float)cos(ang / 2), q[1] = (float)(ax * s), q[2] = (float)(ay * s), q[3] = (float)(az * s);
}

static void fill_rot(float *rot, int F, double phase) {
    for (int t = 0; t < F; t++)
        for (int j = 0; j < BJ; j++)
            quat(1 + sin(0.1 * t + j + phase), cos(0.07 * t + 2 * j), 0.3, 0.8 * sin(0.05 * t * (1 + j % 5) + phase), rot + (t * BJ + j) * 4);
}

static void step_partmm(void *p) {
    PmBench *c = p;
    char err[256];
    if (pm_synthesize(&c->db, BQ, c->qrot, c->qtrans, &c->o, c->out, err, sizeof err)) {
        fprintf(stderr, "bench partmm: %s\n", err);
        exit(1);
    }
}

void bench_partmm_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                        void (*run_case)(const char *, void (*)(void *), void *)) {
    if (!wanted(argc, argv, "partmm_q300_db300_b50")) return;
    static float rot[BF * BJ * 4], trans[BF * 3], tb[BF * BB * 12], qrot[BQ * BJ * 4], qtrans[BQ * 3], out[BQ * BB * 12];
    static double rest[BJ * 3], bp[BB * BP], bj[BB * BJ];
    static int32_t parents[BJ];
    static uint8_t parts[BP * BJ];
    /* a root with five chains of five joints, one chain per part (plus the root in every part) */
    for (int j = 0; j < BJ; j++) {
        parents[j] = j == 0 ? -1 : (j - 1) % 5 == 0 ? 0 : j - 1;
        rest[j * 3] = j == 0 ? 0 : (j - 1) / 5 - 2.0, rest[j * 3 + 1] = j == 0 ? 0 : (j - 1) % 5 + 1.0, rest[j * 3 + 2] = 0;
        for (int p = 0; p < BP; p++) parts[p * BJ + j] = j == 0 || (j - 1) / 5 == p;
    }
    fill_rot(rot, BF, 0), fill_rot(qrot, BQ, 0.5);
    for (int t = 0; t < BF; t++) trans[t * 3] = (float)(0.01 * t), trans[t * 3 + 1] = trans[t * 3 + 2] = 0;
    for (int t = 0; t < BQ; t++) qtrans[t * 3] = (float)(0.02 * t), qtrans[t * 3 + 1] = qtrans[t * 3 + 2] = 0;
    for (int t = 0; t < BF; t++)
        for (int b = 0; b < BB; b++) {
            float q[4];
            quat(1, b, t, 0.01 * t + b, q);
            double w = q[0], x = q[1], y = q[2], z = q[3];
            float *T = tb + (t * BB + b) * 12;
            T[0] = (float)(1 - 2 * (y * y + z * z)), T[1] = (float)(2 * (x * y - w * z)), T[2] = (float)(2 * (x * z + w * y));
            T[4] = (float)(2 * (x * y + w * z)), T[5] = (float)(1 - 2 * (x * x + z * z)), T[6] = (float)(2 * (y * z - w * x));
            T[8] = (float)(2 * (x * z - w * y)), T[9] = (float)(2 * (y * z + w * x)), T[10] = (float)(1 - 2 * (x * x + y * y));
            T[3] = (float)(0.1 * b), T[7] = (float)(0.01 * t), T[11] = 0;
        }
    /* each bone on two joints of one chain, some on the root too: overlapping parts */
    for (int b = 0; b < BB; b++) {
        int chain = b % 5, at = 1 + chain * 5 + (b / 5) % 4;
        for (int p = 0; p < BP; p++) bp[b * BP + p] = p == chain ? 1 : 0;
        for (int j = 0; j < BJ; j++) bj[b * BJ + j] = j == at ? 0.6 : j == at + 1 ? 0.3 : j == 0 ? 0.1 : 0;
        if (b % 7 == 0) bp[b * BP + (chain + 1) % 5] = 0.5;
    }
    PmBench c = {.qrot = qrot, .qtrans = qtrans, .out = out};
    pm_options_defaults(&c.o);
    char err[256];
    if (pm_db_build(&c.db, BF, BJ, BB, BP, rot, trans, rest, parents, tb, parts, bp, bj, err, sizeof err)) {
        fprintf(stderr, "bench partmm: %s\n", err);
        exit(1);
    }
    run_case("partmm_q300_db300_b50", step_partmm, &c);
    pm_db_free(&c.db);
}
