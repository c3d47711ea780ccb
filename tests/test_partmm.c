/* tests/test_partmm.c — PartMM (models/partmm/partmm.h) and its rig pieces (rig.h): the SO(3)
 * geodesic, the rigid alignment, the blend, the pyramid strides, and the known answers of the
 * whole synthesis: a query equal to a database window returns that window's transforms (with and
 * without the pyramid, one part or several), and a rigidly moved copy of a window returns the
 * window's transforms moved the same way (which needs the alignment). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mat3.h"
#include "datasets/mesh/gaussian_ply.h"
#include "datasets/render/video.h"
#include "models/partmm/animation.h"
#include "models/partmm/bench.h"
#include "models/partmm/partmm.h"
#include "models/partmm/rig.h"
#include "models/skelebones/traj.h"
#include "tests/test.h"

static double urand(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static void quat_axis(double ax, double ay, double az, double ang, float q[4]) {
    double n = sqrt(ax * ax + ay * ay + az * az);
    double s = sin(ang / 2) / n;
    q[0] = (float)cos(ang / 2), q[1] = (float)(ax * s), q[2] = (float)(ay * s), q[3] = (float)(az * s);
}

static void quat_mat(const float q[4], double R[9]) {
    const double d[4] = {q[0], q[1], q[2], q[3]};
    base_quat_to_mat3(d, R);
}

static void quat_mul(const float a[4], const float b[4], float o[4]) {
    float w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    float x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    float y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    float z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    o[0] = w, o[1] = x, o[2] = y, o[3] = z;
}

static void mat_mul(const double *A, const double *B, double *C) {
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) C[r * 3 + c] = A[r * 3] * B[c] + A[r * 3 + 1] * B[3 + c] + A[r * 3 + 2] * B[6 + c];
}

TEST(partmm_geodesic_matches_trace_formula) {
    uint64_t s = 7;
    for (int it = 0; it < 200; it++) {
        float a[4], b[4];
        quat_axis(urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, 6 * urand(&s), a);
        quat_axis(urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, 6 * urand(&s), b);
        double Ra[9], Rb[9], tr = 0;
        quat_mat(a, Ra), quat_mat(b, Rb);
        for (int k = 0; k < 9; k++) tr += Ra[k] * Rb[k]; /* tr(RaᵀRb) */
        double c = (tr - 1) / 2;
        double ref = acos(c > 1 ? 1 : c < -1 ? -1 : c);
        CHECK_NEAR(pm_geodesic(a, b), ref, 2e-3); /* float inputs; acos is ill-conditioned near 0 and π */
        float nb[4] = {-b[0], -b[1], -b[2], -b[3]};
        CHECK_NEAR(pm_geodesic(a, nb), pm_geodesic(a, b), 1e-12); /* q and −q are one rotation */
    }
    float a[4], b[4];
    quat_axis(0, 0, 1, 0.3, a), quat_axis(0, 0, 1, 0.3 + 1e-5, b);
    CHECK_NEAR(pm_geodesic(a, a), 0, 0);
    CHECK_NEAR(pm_geodesic(a, b), 1e-5, 2e-7); /* small angles stay accurate */
    quat_axis(1, 2, 3, 1.25, b);
    float id[4] = {1, 0, 0, 0};
    CHECK_NEAR(pm_geodesic(id, b), 1.25, 1e-6);
}

TEST(partmm_alignment_recovers_rotation) {
    uint64_t s = 3;
    float q0[4];
    quat_axis(0.3, -1, 0.5, 2.1, q0);
    double R0[9];
    quat_mat(q0, R0);
    double A[5 * 9], Bm[5 * 9];
    for (int j = 0; j < 5; j++) {
        float q[4];
        quat_axis(urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, 3 * urand(&s), q);
        quat_mat(q, A + j * 9);
        mat_mul(R0, A + j * 9, Bm + j * 9);
    }
    double R[9];
    pm_align_rotations(5, A, Bm, NULL, R);
    for (int k = 0; k < 9; k++) CHECK_NEAR(R[k], R0[k], 1e-9);
    /* weights: a pair with zero weight cannot pull it */
    double w[5] = {1, 1, 1, 1, 0};
    float qx[4];
    quat_axis(1, 0, 0, 1.0, qx);
    quat_mat(qx, Bm + 4 * 9);
    pm_align_rotations(5, A, Bm, w, R);
    for (int k = 0; k < 9; k++) CHECK_NEAR(R[k], R0[k], 1e-9);
}

TEST(partmm_blend_averages_rigid_transforms) {
    /* ±θ about z with equal weights: the identity; translations averaged */
    double T[2 * 12] = {0};
    float qa[4], qb[4];
    quat_axis(0, 0, 1, 0.8, qa), quat_axis(0, 0, 1, -0.8, qb);
    double Ra[9], Rb[9];
    quat_mat(qa, Ra), quat_mat(qb, Rb);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) T[r * 4 + c] = Ra[r * 3 + c], T[12 + r * 4 + c] = Rb[r * 3 + c];
    T[3] = 1, T[7] = 2, T[11] = 3, T[15] = 3, T[19] = 0, T[23] = -1;
    double w[2] = {1, 1}, out[12];
    pm_blend(2, T, w, out);
    double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) CHECK_NEAR(out[r * 4 + c], I[r * 3 + c], 1e-12);
    }
    CHECK_NEAR(out[3], 2, 1e-12);
    CHECK_NEAR(out[7], 1, 1e-12);
    CHECK_NEAR(out[11], 1, 1e-12);
    /* weights 3:1 about one axis: the rotation lies between, nearer the heavier (for one axis the
     * Frobenius mean of angles ±θ is atan2(Σ w sin, Σ w cos)) */
    double w2[2] = {3, 1};
    pm_blend(2, T, w2, out);
    double ang = atan2(out[3 * 1 + 0 + 1], out[0]); /* R[1][0] = sin */
    CHECK_NEAR(ang, atan2(2 * sin(0.8), 4 * cos(0.8)), 1e-7); /* Jacobi sweeps stop near 1e-9 */
    /* one transform: itself */
    double w1[1] = {0.3};
    pm_blend(1, T, w1, out);
    for (int k = 0; k < 12; k++) CHECK_NEAR(out[k], T[k], 1e-12);
}

TEST(partmm_pyramid_strides) {
    CHECK(pm_level_stride(5, 1) == 16 && pm_level_stride(5, 3) == 4 && pm_level_stride(5, 5) == 1);
    CHECK(pm_level_stride(1, 1) == 1);
    /* a level runs when its dilated patch ((p − 1) s + 1 frames) fits the query and the database */
    CHECK(pm_level_active(48, 48, 7, 4) && !pm_level_active(48, 48, 7, 8) && !pm_level_active(48, 300, 7, 16));
    CHECK(pm_level_active(97, 300, 7, 16) && !pm_level_active(96, 300, 7, 16) && !pm_level_active(300, 96, 7, 16));
    CHECK(pm_level_active(7, 7, 7, 1) && !pm_level_active(6, 7, 7, 1));
}

/* A small database: a 6-joint tree with two overlapping parts, smooth random rotations and
 * unrelated random bone transforms (the synthesis must not care how T_B relates to R_J) */
enum { TF = 40, TJ = 6, TB = 5, TP = 2 };
static const int32_t t_parents[TJ] = {-1, 0, 1, 2, 1, 4};
static const double t_rest[TJ * 3] = {0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 1, 1, 0, 2, 1, 0};
static const uint8_t t_parts[TP * TJ] = {1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1};

static void make_db(PmDatabase *db, float *rot, float *trans, float *tb, int with_bone_joint) {
    uint64_t s = 11;
    double ph[TJ * 3];
    for (int k = 0; k < TJ * 3; k++) ph[k] = 6 * urand(&s);
    for (int t = 0; t < TF; t++) {
        for (int j = 0; j < TJ; j++)
            quat_axis(sin(0.21 * t + ph[j * 3]) + 1.5, cos(0.17 * t + ph[j * 3 + 1]), 0.5, 0.9 * sin(0.13 * t * (j + 1) + ph[j * 3 + 2]),
                      rot + (t * TJ + j) * 4);
        for (int c = 0; c < 3; c++) trans[t * 3 + c] = (float)(0.1 * t * (c + 1));
        for (int b = 0; b < TB; b++) {
            float q[4];
            quat_axis(urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, 3 * urand(&s), q);
            double R[9];
            quat_mat(q, R);
            float *T = tb + (t * TB + b) * 12;
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++) T[r * 4 + c] = (float)R[r * 3 + c];
                T[r * 4 + 3] = (float)(4 * urand(&s) - 2);
            }
        }
    }
    double bp[TB * TP] = {1, 0, 0.5, 0.5, 0, 1, 0.2, 0.8, 0, 0}, bj[TB * TJ];
    for (int k = 0; k < TB * TJ; k++) bj[k] = urand(&s) < 0.5 ? urand(&s) : 0;
    char err[256] = "";
    CHECK_MSG(pm_db_build(db, TF, TJ, TB, TP, rot, trans, t_rest, t_parents, tb, t_parts, bp, with_bone_joint ? bj : NULL,
                          err, sizeof err) == 0,
              "%s", err);
}

static double max_diff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

TEST(partmm_query_equal_to_window_returns_its_transforms) {
    static float rot[TF * TJ * 4], trans[TF * 3], tb[TF * TB * 12], out[TF * TB * 12];
    for (int with_bj = 0; with_bj < 2; with_bj++) {
    PmDatabase db;
    make_db(&db, rot, trans, tb, with_bj);
    PmOptions o;
    pm_options_defaults(&o);
    char err[256] = "";
    const int l = 17;
    /* one window (Q = p): only the finest level runs */
    CHECK_MSG(pm_synthesize(&db, o.patch, rot + l * TJ * 4, trans + l * 3, &o, out, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(max_diff(out, tb + l * TB * 12, o.patch * TB * 12) < 1e-5, "window: %g", max_diff(out, tb + l * TB * 12, o.patch * TB * 12));
    /* the whole database as the query: every level (strides 4, 2, 1 here) matches each window to
     * itself, so the pyramid blends identical transforms */
    CHECK_MSG(pm_synthesize(&db, TF, rot, trans, &o, out, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(max_diff(out, tb, TF * TB * 12) < 1e-5, "whole: %g", max_diff(out, tb, TF * TB * 12));
    o.global_part = 1, o.levels = 1;
    CHECK_MSG(pm_synthesize(&db, 20, rot + 5 * TJ * 4, trans + 5 * 3, &o, out, err, sizeof err) == 0, "%s", err);
    CHECK(max_diff(out, tb + 5 * TB * 12, 20 * TB * 12) < 1e-5);
    /* a query between database windows gets a blend: no longer equal to any one */
    float mid[7 * TJ * 4];
    for (int k = 0; k < 7 * TJ * 4; k++) mid[k] = 0.5f * (rot[l * TJ * 4 + k] + rot[(l + 1) * TJ * 4 + k]);
    pm_options_defaults(&o);
    CHECK(pm_synthesize(&db, 7, mid, trans + l * 3, &o, out, err, sizeof err) == 0);
    CHECK(max_diff(out, tb + l * TB * 12, 7 * TB * 12) > 1e-3);
    /* errors */
    o.k = 0;
    CHECK(pm_synthesize(&db, 7, rot, trans, &o, out, err, sizeof err) == -1 && strstr(err, "k 0"));
    pm_db_free(&db);
    }
}

TEST(partmm_aligns_a_rigidly_moved_window) {
    static float rot[TF * TJ * 4], trans[TF * 3], tb[TF * TB * 12], out[7 * TB * 12];
    /* both alignments: one rotation per part, and per bone over its joints (every joint of a
     * rigidly moved pose changes frame by the same motion) */
    for (int mode = 0; mode < 2; mode++) {
    PmDatabase db;
    make_db(&db, rot, trans, tb, mode);
    /* the window l..l+6 moved as a whole: root rotated by R0 about the origin, then shifted */
    const int l = 9;
    float q0[4], qrot[7 * TJ * 4], qtrans[7 * 3];
    quat_axis(0.2, 1, 0.1, 2.5, q0); /* a quite different heading */
    double R0[9], t0[3] = {0.5, -1, 2};
    quat_mat(q0, R0);
    memcpy(qrot, rot + l * TJ * 4, sizeof qrot);
    for (int t = 0; t < 7; t++) {
        quat_mul(q0, rot + ((l + t) * TJ) * 4, qrot + t * TJ * 4);
        const float *tr = trans + (l + t) * 3;
        double p[3] = {t_rest[0] + tr[0], t_rest[1] + tr[1], t_rest[2] + tr[2]};
        for (int r = 0; r < 3; r++)
            qtrans[t * 3 + r] = (float)(R0[r * 3] * p[0] + R0[r * 3 + 1] * p[1] + R0[r * 3 + 2] * p[2] + t0[r] - t_rest[r]);
    }
    PmOptions o;
    pm_options_defaults(&o);
    /* matching sees the articulation alone (match_root 0): the moved window is still at distance
     * 0 from l, which takes all the weight; counting the root's rotation, l would be one of k
     * blended matches (below) */
    char err[256] = "";
    CHECK_MSG(pm_synthesize(&db, 7, qrot, qtrans, &o, out, err, sizeof err) == 0, "%s", err);
    double worst = 0;
    for (int t = 0; t < 7; t++)
        for (int b = 0; b < TB; b++) {
            const float *T = tb + ((l + t) * TB + b) * 12, *Y = out + (t * TB + b) * 12;
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++) {
                    double e = R0[r * 3] * T[c] + R0[r * 3 + 1] * T[4 + c] + R0[r * 3 + 2] * T[8 + c];
                    worst = fmax(worst, fabs(e - Y[r * 4 + c]));
                }
                double e = R0[r * 3] * T[3] + R0[r * 3 + 1] * T[7] + R0[r * 3 + 2] * T[11] + t0[r];
                worst = fmax(worst, fabs(e - Y[r * 4 + 3]));
            }
        }
    CHECK_MSG(worst < 1e-4, "aligned: %g", worst);
    o.match_root = 1;
    CHECK(pm_synthesize(&db, 7, qrot, qtrans, &o, out, err, sizeof err) == 0);
    double w2 = 0;
    for (int t = 0; t < 7; t++)
        for (int b = 0; b < TB; b++) {
            const float *T = tb + ((l + t) * TB + b) * 12, *Y = out + (t * TB + b) * 12;
            for (int r = 0; r < 3; r++)
                w2 = fmax(w2, fabs(R0[r * 3] * T[3] + R0[r * 3 + 1] * T[7] + R0[r * 3 + 2] * T[11] + t0[r] - Y[r * 4 + 3]));
        }
    CHECK_MSG(w2 > 1e-3, "with the root matched: %g", w2);
    o.match_root = 0;
    /* without the alignment the bones stay where the database had them */
    o.align = PM_ALIGN_NONE;
    CHECK(pm_synthesize(&db, 7, qrot, qtrans, &o, out, err, sizeof err) == 0);
    CHECK(max_diff(out, tb + l * TB * 12, 7 * TB * 12) < 1e-5);
    pm_db_free(&db);
    }
}

TEST(partmm_binding_and_bone_parts) {
    /* points beside the segments of the test tree bind to each segment's parent */
    float pts[4 * 3] = {0.1f, 0.5f, 0, 0.1f, 2.5f, 0, 1.5f, 1.1f, 0, 0, -0.5f, 0};
    int32_t bind[4];
    pm_bind_points(TJ, t_rest, t_parents, 4, pts, bind);
    CHECK(bind[0] == 0 && bind[1] == 2 && bind[2] == 4 && bind[3] == 0);
    /* bone 0 on points 0, 1 (joints 0, 2: part 0 only); bone 1 on point 2 (joint 4: part 1) and
     * half of point 0 */
    float w[4 * 2] = {0.5f, 0.5f, 1, 0, 0, 1, 1, 0};
    double bp[2 * TP];
    pm_bone_parts(4, 2, TJ, TP, w, bind, t_parts, bp);
    CHECK_NEAR(bp[0], 1, 1e-12);
    CHECK_NEAR(bp[1], 0, 1e-12);
    CHECK_NEAR(bp[2], 0.5 / 1.5, 1e-12);
    CHECK_NEAR(bp[3], 1 / 1.5, 1e-12);
}

TEST(partmm_skin_transforms_move_rest_joints_to_fk) {
    float rot[TJ * 4], trans[3] = {0.3f, -0.2f, 0.1f}, S[TJ * 12];
    for (int j = 0; j < TJ; j++) quat_axis(1, j, 0.5, 0.3 * j + 0.2, rot + j * 4);
    pm_skin_transforms(TJ, t_rest, t_parents, 1, rot, trans, S);
    SbTree tree = {TJ, t_rest, t_parents};
    double q[TJ * 4], tr[3] = {0.3, -0.2, 0.1}, pos[TJ * 3];
    for (int k = 0; k < TJ * 4; k++) q[k] = rot[k];
    sb_fk(&tree, q, tr, pos, NULL);
    /* S_j(x_j) = p_j, and the child's rest joint follows its parent rigidly */
    for (int j = 0; j < TJ; j++) {
        float x[3] = {(float)t_rest[j * 3], (float)t_rest[j * 3 + 1], (float)t_rest[j * 3 + 2]}, y[3], one = 1;
        pm_lbs(1, 1, x, &one, S + j * 12, y);
        for (int c = 0; c < 3; c++) CHECK_NEAR(y[c], pos[j * 3 + c], 1e-5);
        if (j) {
            int p = t_parents[j];
            pm_lbs(1, 1, x, &one, S + p * 12, y);
            for (int c = 0; c < 3; c++) CHECK_NEAR(y[c], pos[j * 3 + c], 1e-5);
        }
    }
}

/* A rig on the test tree: points scattered beside its segments (each bound to the segment's parent
 * joint), posed rigidly per joint by a known pose: observed F × n × 3 */
enum { PN = 300, PF = 3 };
static void posed_points(PmRig *r, float *pts, float *rot, float *trans, float *obs) {
    memset(r, 0, sizeof *r);
    r->n = PN, r->J = TJ, r->rest = (double *)t_rest, r->parents = (int32_t *)t_parents, r->points = pts;
    uint64_t s = 7;
    for (int i = 0; i < PN; i++) {
        int j = 1 + i % (TJ - 1), p = t_parents[j];
        double u = urand(&s);
        for (int c = 0; c < 3; c++)
            pts[i * 3 + c] = (float)(t_rest[p * 3 + c] + u * (t_rest[j * 3 + c] - t_rest[p * 3 + c]) + 0.3 * (urand(&s) - 0.5));
    }
    int32_t bind[PN];
    pm_bind_points(TJ, t_rest, t_parents, PN, pts, bind);
    float S[PF * TJ * 12];
    for (int t = 0; t < PF; t++) {
        for (int j = 0; j < TJ; j++) {
            /* joints 3 and 5 end the tree: no point of their own, so only the identity is observable */
            if (j == 3 || j == 5) quat_axis(1, 0, 0, 0, rot + (t * TJ + j) * 4);
            else quat_axis(urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, 2.5 * urand(&s), rot + (t * TJ + j) * 4);
            if (rot[(t * TJ + j) * 4] < 0)
                for (int c = 0; c < 4; c++) rot[(t * TJ + j) * 4 + c] *= -1;
        }
        for (int c = 0; c < 3; c++) trans[t * 3 + c] = (float)(urand(&s) - 0.5);
    }
    pm_skin_transforms(TJ, t_rest, t_parents, PF, rot, trans, S);
    for (int t = 0; t < PF; t++)
        for (int i = 0; i < PN; i++) pm_lbs(1, 1, pts + i * 3, &(float){1}, S + (t * TJ + bind[i]) * 12, obs + (t * PN + i) * 3);
}

TEST(partmm_pose_by_fits_recovers_a_rigid_pose) {
    PmRig r;
    float pts[PN * 3], rot[PF * TJ * 4], trans[PF * 3], obs[PF * PN * 3], got[PF * TJ * 4], gtr[PF * 3];
    posed_points(&r, pts, rot, trans, obs);
    char err[256];
    CHECK(pm_pose_by_fits(&r, PF, obs, got, gtr, err, sizeof err) == 0);
    /* every joint's local rotation and the root translation, in closed form */
    for (int k = 0; k < PF * TJ; k++) CHECK_MSG(pm_geodesic(rot + k * 4, got + k * 4) < 1e-3, "joint %d frame %d: %g rad", k % TJ, k / TJ, pm_geodesic(rot + k * 4, got + k * 4));
    for (int k = 0; k < PF * 3; k++) CHECK_NEAR(gtr[k], trans[k], 1e-4);
}

TEST(partmm_ik_refines_from_a_given_pose) {
    /* sb_ik_solve's init: started from the true pose the iterative IK stays there, where from the
     * rest pose 40 Adam steps of 0.03 (≤ 1.2 rad) cannot reach rotations of up to 2.5 rad */
    PmRig r;
    float pts[PN * 3], rot[PF * TJ * 4], trans[PF * 3], obs[PF * PN * 3], got[PF * TJ * 4], gtr[PF * 3];
    posed_points(&r, pts, rot, trans, obs);
    SbIkOptions o;
    sb_ik_defaults(&o);
    o.steps = 40, o.init_rotations = rot, o.init_translation = trans;
    char err[256];
    CHECK(pm_pose_from_points(&r, PF, obs, PN, &o, got, gtr, err, sizeof err) == 0);
    double worst = 0;
    for (int k = 0; k < PF * TJ; k++) worst = fmax(worst, pm_geodesic(rot + k * 4, got + k * 4));
    CHECK_MSG(worst < 0.1, "%g rad", worst);
    o.init_rotations = o.init_translation = NULL;
    CHECK(pm_pose_from_points(&r, PF, obs, PN, &o, got, gtr, err, sizeof err) == 0);
    worst = 0;
    for (int k = 0; k < PF * TJ; k++) worst = fmax(worst, pm_geodesic(rot + k * 4, got + k * 4));
    CHECK_MSG(worst > 0.3, "%g rad", worst);
}

/* ---- the command on a tiny benchmark character ------------------------------------------------ */

#include <sys/stat.h>

/* the RMSE column of a method's row in animate's --eval table (NAN: no such row) */
static double row_rmse(const char *out, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(out, key);
    double v;
    return p && sscanf(p + strlen(key), "%lf", &v) == 1 ? v : NAN;
}

static int file_nonempty(const char *dir, const char *name) {
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

TEST(partmm_animate_cli_heldout_eval) {
    char dir[64] = "/tmp/anima-test-partmm-XXXXXX", cmd[2048], out[16384];
    if (!mkdtemp(dir)) abort();
    /* 8 frames of each motion, 6 views (view 5 held out), a 16-px image: a rig and an animation in seconds */
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s dataset motion --category humanoid --out %s/b --frames 8 --views 6 --size 16 --grid 32 "
             "--motion cmu_01_01 --no-progress 2>&1 && OMP_NUM_THREADS=2 %s skelebones --gt %s/b/gt.h5 --bones 8 --iters 5 --ik-steps 20 "
             "--ik-points 100 --out %s/rig --no-progress 2>&1",
             test_anima_bin(), dir, test_anima_bin(), dir, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    if (rc) return;
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion heldout --out %s/anim --eval --no-progress "
             "--set ik.steps=20 --set regress.steps=10 --set regress.hidden=8 --set partmm.patch=3 --set partmm.k=2 2>&1",
             test_anima_bin(), dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    printf("%s", out);
    /* the bench folder comes from the rig's source attribute; every output is there */
    char anim[128];
    snprintf(anim, sizeof anim, "%s/anim", dir);
    const char *files[] = {"animation.h5", "animation.gif", "frames/f0000.png", "frames/f0007.png", "gaussians/f0000.ply",
                           "gaussians/f0007.ply", "eval.json"};
    for (int k = 0; k < 7; k++) CHECK_MSG(file_nonempty(anim, files[k]), "no %s", files[k]);
    /* --video auto: the MP4 beside the GIF wherever ffmpeg is installed */
    if (ds_video_have_ffmpeg()) CHECK_MSG(file_nonempty(anim, "animation.mp4"), "no animation.mp4");
    const char *rows[] = {"partmm ", "lbs ", "bag_of_bones ", "global_part ", "no_pyramid ", "k1 ", "part_align ", "mlp ", "gru ",
                          "oracle_ik_skin ", "truth "};
    for (int k = 0; k < 11; k++) CHECK_MSG(strstr(out, rows[k]), "no row %s: %s", rows[k], out);
    CHECK(strstr(out, " poses/s"));
    CHECK_MSG(row_rmse(out, "truth") == 0, "%s", out); /* the image metrics' reference row is the truth itself */
    /* the known answer on the benchmark: the training motion as the query (its pose from the
     * ground-truth meshes, the database's keys from the rig's own reconstruction, one estimator)
     * gives back the rig's own transforms — near the rig's own RMSE, far below LBS. The iterative
     * IK alone (ik.method adam) lands weakly observed joints in other basins for the two inputs
     * and misses this (0.74% against the rig's 0.16%) */
    const char *small = "--no-progress --video none --set ik.steps=20 --set eval.regress=false --set partmm.patch=3 --set partmm.k=2";
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion train --out %s/tr --eval --no-ply %s --set ik.method=fit 2>&1",
             test_anima_bin(), dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    double pm = row_rmse(out, "partmm"), own = row_rmse(out, "rig_own"), lbs = row_rmse(out, "lbs");
    CHECK_MSG(pm < own + 0.1 * (lbs - own), "partmm %g, the rig's own %g, lbs %g", pm, own, lbs);
    CHECK(isnan(row_rmse(out, "mlp"))); /* eval.regress=false */
    /* --reuse-pose: the same pose without the IK, the same table */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion train --reuse-pose %s/tr/animation.h5 --out %s/tr2 --eval --no-ply %s 2>&1",
             test_anima_bin(), dir, dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && fabs(row_rmse(out, "partmm") - pm) < 1e-3 && fabs(row_rmse(out, "lbs") - lbs) < 1e-3, "rc %d: %s", rc, out);
    /* the validation split: a 5-frame database, the last 3 training frames as the query */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion val --set eval.val_frames=3 --out %s/va --eval --no-ply %s 2>&1",
             test_anima_bin(), dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "3 poses from a 5-frame database") && row_rmse(out, "partmm") > 0, "rc %d: %s", rc, out);
    /* eval.db_frames: the held-out query against the rig's first 5 frames only; more than the rig has is refused */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion heldout --set eval.db_frames=5 --out %s/db --eval --no-ply %s 2>&1",
             test_anima_bin(), dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "8 poses from a 5-frame database") && row_rmse(out, "partmm") > 0, "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion heldout --set eval.db_frames=9 --out %s/db9 --eval --no-ply %s 2>&1",
             test_anima_bin(), dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc != 0 && strstr(out, "eval.db_frames 9: the rig has 8 frames"), "rc %d: %s", rc, out);
    {
        /* no renders scored: eval.json stays JSON (null, not nan) */
        char jp[128], js[4096] = "";
        snprintf(jp, sizeof jp, "%s/va/eval.json", dir);
        FILE *f = fopen(jp, "r");
        size_t got = f ? fread(js, 1, sizeof js - 1, f) : 0;
        if (f) fclose(f);
        js[got] = 0;
        CHECK_MSG(strstr(js, "\"psnr\": null") && !strstr(js, "nan"), "%s", js);
    }
    /* --gaussians: canonical Gaussians at the rig's points, tied to the surface through the
     * training motion; here they are the vertices themselves, so their truth is the vertices'
     * (up to the rig's reconstruction in the offsets) and the table that of the vertices */
    {
        PmRig r;
        char rp[128], pp[128], e2[512];
        snprintf(rp, sizeof rp, "%s/rig/rig.h5", dir), snprintf(pp, sizeof pp, "%s/canon.ply", dir);
        DsGaussians g;
        CHECK(pm_rig_load(rp, &r, e2, sizeof e2) == 0 && ds_gaussians_alloc(&g, r.n, 0) == 0);
        for (int64_t i = 0; i < r.n; i++) {
            for (int k = 0; k < 3; k++) g.xyz[i * 3 + k] = r.points[i * 3 + k], g.scale[i * 3 + k] = -3, g.sh[i * 3 + k] = 0.5f;
            g.opacity[i] = 2, g.rot[i * 4] = 1, g.rot[i * 4 + 1] = g.rot[i * 4 + 2] = g.rot[i * 4 + 3] = 0;
        }
        CHECK(ds_gaussians_write(pp, &g, e2, sizeof e2) == 0);
        ds_gaussians_free(&g), pm_rig_free(&r);
        snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s --gaussians %s --bench %s/b --motion train --out %s/gs --eval --no-ply %s --set ik.method=fit 2>&1",
                 test_anima_bin(), rp, pp, dir, dir, small);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        CHECK_MSG(fabs(row_rmse(out, "lbs") - lbs) < 0.1 * lbs && fabs(row_rmse(out, "partmm") - pm) < 0.1 * lbs, "lbs %g vs %g, partmm %g vs %g: %s",
                  row_rmse(out, "lbs"), lbs, row_rmse(out, "partmm"), pm, out);
        /* the tie holds on the training frames up to the rig's own reconstruction error */
        const char *tl = strstr(out, "tie: ");
        double tres = NAN;
        CHECK_MSG(tl && (tl = strstr(tl, "residual ")) && sscanf(tl, "residual %lf", &tres) == 1 && tres >= 0 && tres < 1,
                  "tie residual %g: %s", tres, out);
    }
    /* a BVH: retargeted onto the benchmark character's rig, fitted onto the extracted skeleton */
    const char *bvh = "/usr/share/assimp/models/BVH/01_01.bvh";
    struct stat st;
    if (stat(bvh, &st) == 0) {
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion %s --frames 5 --out %s/bvh --no-progress "
                 "--set ik.steps=20 2>&1",
                 test_anima_bin(), dir, bvh, dir);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0 && strstr(out, "5 poses"), "rc %d: %s", rc, out);
        snprintf(anim, sizeof anim, "%s/bvh", dir);
        CHECK(file_nonempty(anim, "frames/f0004.png") && file_nonempty(anim, "animation.gif"));
        /* --map reaches the retargeting: a joint the BVH lacks is named with its bone */
        char map[128];
        snprintf(map, sizeof map, "%s/map.json", dir);
        FILE *f = fopen(map, "w");
        CHECK(f && fputs("{\"hips\": \"Hips\", \"leg_l_upper\": \"LeftThigh\"}", f) >= 0 && fclose(f) == 0);
        snprintf(cmd, sizeof cmd, "%s animate --rig %s/rig/rig.h5 --motion %s --map %s --frames 5 --out %s/bvh2 2>&1",
                 test_anima_bin(), dir, bvh, map, dir);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc != 0 && strstr(out, "leg_l_upper") && strstr(out, "LeftThigh"), "rc %d: %s", rc, out);
        snprintf(cmd, sizeof cmd, "%s animate --rig %s/rig/rig.h5 --motion heldout --map %s --out %s/x 2>&1",
                 test_anima_bin(), dir, map, dir);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 2 && strstr(out, "--map"), "rc %d: %s", rc, out);
    }
    /* run folders stand for their files: --rig with the skelebones run folder (and with the
     * folder above it: RUN/rig/rig.h5) gives the same table; a folder without a rig is refused
     * naming what was looked for */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig --motion train --reuse-pose %s/tr/animation.h5 --out %s/tr3 --eval --no-ply %s 2>&1",
             test_anima_bin(), dir, dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && fabs(row_rmse(out, "partmm") - pm) < 1e-3, "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s --motion train --reuse-pose %s/tr/animation.h5 --out %s/tr4 --eval --no-ply %s 2>&1",
             test_anima_bin(), dir, dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && fabs(row_rmse(out, "partmm") - pm) < 1e-3, "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s animate --rig %s/b --motion heldout --out %s/x 2>&1", test_anima_bin(), dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "/b is a folder without rig.h5 or rig/rig.h5"), "rc %d: %s", rc, out);
    /* a bad motion and a rig without IK are refused with a message */
    snprintf(cmd, sizeof cmd, "%s animate --rig %s/rig/rig.h5 --motion walk --out %s/x 2>&1", test_anima_bin(), dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--motion"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s animate --rig %s/b/gt.h5 --motion heldout --out %s/x 2>&1", test_anima_bin(), dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "no dataset rest/points"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

/* a number after "key": in a JSON text (NAN: absent or not a number) */
static double json_num(const char *js, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(js, k);
    double v;
    return p && sscanf(p + strlen(k), "%lf", &v) == 1 ? v : NAN;
}

static void read_text(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    if (f) fclose(f);
    buf[got] = 0;
}

/* the tiny benchmark of partmm_animate_cli_heldout_eval (size px images) and its ground-truth rig */
static int tiny_bench(const char *dir, int size, char *out, size_t outlen) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s dataset motion --category humanoid --out %s/b --frames 8 --views 6 --size %d --grid 32 "
             "--motion cmu_01_01 --no-progress 2>&1 && OMP_NUM_THREADS=2 %s skelebones --gt %s/b/gt.h5 --bones 8 --iters 5 --ik-steps 20 "
             "--ik-points 100 --out %s/rig --no-progress 2>&1",
             test_anima_bin(), dir, size, test_anima_bin(), dir, dir);
    return test_run_capture(cmd, out, outlen);
}

/* --gaussians with n != nv Gaussians (n < nv and n > nv): the RMSE's unit is the ground-truth
 * rest mesh's bounding-box diagonal, whatever the Gaussians. Session 22 took it over the first n
 * rest points: with n < nv a smaller box (the mesh's first vertices), with n > nv it read past
 * the mesh and printed RMSE 0 in every row. The Gaussians here are points tied to the training
 * meshes (every other vertex, or every vertex plus midpoints of vertex pairs) with a rig made from
 * their trajectories, as for a gs4d run. */
TEST(partmm_animate_gaussians_rmse_unit_is_the_mesh) {
    char dir[64] = "/tmp/anima-test-partmm-XXXXXX", cmd[2048], out[16384], e[512];
    if (!mkdtemp(dir)) abort();
    int rc = tiny_bench(dir, 16, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    if (rc) return;
    char gp[128];
    snprintf(gp, sizeof gp, "%s/b/gt.h5", dir);
    SbTraj g;
    CHECK(sb_traj_read_gt(gp, &g, e, sizeof e) == 0);
    int64_t nv = g.npoints;
    double lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30};
    for (int64_t i = 0; i < nv; i++)
        for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], g.rest[i * 3 + k]), hi[k] = fmax(hi[k], g.rest[i * 3 + k]);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    for (int variant = 0; variant < 2; variant++) {
        /* 0: every other vertex (n < nv); 1: every vertex and the midpoints of vertex pairs (n > nv) */
        int64_t n = variant ? nv + nv / 2 : (nv + 1) / 2;
        SbTraj t = {0};
        t.nframes = g.nframes, t.npoints = n;
        t.pos = malloc(sizeof(float) * g.nframes * n * 3), t.rest = malloc(sizeof(float) * n * 3);
        for (int f = -1; f < g.nframes; f++) {
            const float *src = f < 0 ? g.rest : g.pos + (int64_t)f * nv * 3;
            float *dst = f < 0 ? t.rest : t.pos + (int64_t)f * n * 3;
            for (int64_t i = 0; i < n; i++)
                for (int k = 0; k < 3; k++) {
                    int64_t a = variant ? (i < nv ? i : i - nv) : 2 * i, b = variant && i >= nv ? (a + 7) % nv : a;
                    dst[i * 3 + k] = 0.5f * (src[a * 3 + k] + src[b * 3 + k]);
                }
        }
        char tp[128], rp[160], pp[128];
        snprintf(tp, sizeof tp, "%s/traj%d.h5", dir, variant), snprintf(pp, sizeof pp, "%s/canon%d.ply", dir, variant);
        CHECK(sb_traj_write_h5(tp, &t, e, sizeof e) == 0);
        sb_traj_free(&t);
        snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s skelebones --traj %s --bones 8 --iters 5 --ik-steps 20 --ik-points 100 --out %s/rig%d --no-progress 2>&1",
                 test_anima_bin(), tp, dir, variant);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        if (rc) continue;
        snprintf(rp, sizeof rp, "%s/rig%d/rig.h5", dir, variant);
        PmRig r;
        DsGaussians gs;
        CHECK(pm_rig_load(rp, &r, e, sizeof e) == 0 && ds_gaussians_alloc(&gs, r.n, 0) == 0);
        CHECK_MSG(r.n == n, "the rig has %lld points, %lld made", (long long)r.n, (long long)n);
        for (int64_t i = 0; i < r.n; i++) {
            for (int k = 0; k < 3; k++) gs.xyz[i * 3 + k] = r.points[i * 3 + k], gs.scale[i * 3 + k] = -3, gs.sh[i * 3 + k] = 0.5f;
            gs.opacity[i] = 2, gs.rot[i * 4] = 1, gs.rot[i * 4 + 1] = gs.rot[i * 4 + 2] = gs.rot[i * 4 + 3] = 0;
        }
        CHECK(ds_gaussians_write(pp, &gs, e, sizeof e) == 0);
        ds_gaussians_free(&gs), pm_rig_free(&r);
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=2 %s animate --rig %s --gaussians %s --bench %s/b --motion heldout --out %s/gs%d --eval --no-ply "
                 "--no-progress --video none --set ik.steps=20 --set ik.method=fit --set eval.regress=false --set partmm.patch=3 "
                 "--set partmm.k=2 2>&1",
                 test_anima_bin(), rp, pp, dir, dir, variant);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        char jp[128], js[8192];
        snprintf(jp, sizeof jp, "%s/gs%d/eval.json", dir, variant);
        read_text(jp, js, sizeof js);
        double d = json_num(js, "diag");
        CHECK_MSG(fabs(d - diag) < 1e-4 * diag, "n %lld, nv %lld: the RMSE's diagonal %g, the mesh's %g", (long long)n, (long long)nv, d, diag);
        /* every moved row has an error (n > nv printed 0 everywhere), the truth none */
        const char *rows[] = {"partmm", "lbs", "bag_of_bones"};
        for (int k = 0; k < 3; k++) {
            double v = row_rmse(out, rows[k]);
            CHECK_MSG(v > 0.01 && v < 50, "n %lld: %s RMSE %g: %s", (long long)n, rows[k], v, out);
        }
        CHECK_MSG(row_rmse(out, "truth") == 0, "%s", out);
    }
    sb_traj_free(&g);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

/* the PSNR of a row of animate's --eval table (the third column) */
static double row_psnr(const char *out, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(out, key);
    double r, v;
    return p && sscanf(p + strlen(key), "%lf %lf", &r, &v) == 2 ? v : NAN;
}

/* appearance.fit: the per-vertex Gaussians' colors, sizes and opacities fitted to the training
 * motion's training views lift the image metrics of the truth row (the Gaussians at their
 * ground-truth held-out positions, cameras never fitted) well above the albedo's; eval.json says
 * which appearance was used; --gaussians drops it with a note; a canonical.ply that cannot be
 * written fails the command, naming it. Without the fit the truth row keeps the
 * albedo's PSNR (a fit that does not move the parameters fails here). The normal offsets
 * (appearance.normal_offset, on by default) lift the val split further than the fit without them
 * (14.9 -> 20.6 against 19.9 dB here; removing the offsets from the fit or the renders fails). */
TEST(partmm_animate_fits_the_appearance) {
    char dir[64] = "/tmp/anima-test-partmm-XXXXXX", cmd[2048], out[16384];
    if (!mkdtemp(dir)) abort();
    int rc = tiny_bench(dir, 32, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    if (rc) return;
    const char *small = "--no-ply --no-progress --video none --set ik.steps=20 --set ik.method=fit --set eval.regress=false "
                        "--set partmm.patch=3 --set partmm.k=2";
    double psnr[3], val[3];
    for (int fit = 0; fit < 3; fit++) {
        snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion heldout --out %s/a%d --eval %s %s %s 2>&1",
                 test_anima_bin(), dir, dir, fit, small, fit ? "--set appearance.fit=true --set appearance.steps=300" : "",
                 fit == 2 ? "--set appearance.normal_offset=false" : "");
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        psnr[fit] = row_psnr(out, "truth");
        char jp[128], js[8192];
        snprintf(jp, sizeof jp, "%s/a%d/eval.json", dir, fit);
        read_text(jp, js, sizeof js);
        CHECK_MSG(strstr(js, fit ? "\"appearance\": {\"fit\": true" : "\"appearance\": {\"fit\": false"), "%s", js);
        CHECK_MSG(strstr(js, fit == 1 ? "\"normal_offset\": true" : "\"normal_offset\": false"), "%s", js);
        val[fit] = json_num(js, "val_psnr_after");
        if (fit) {
            /* the fit saw only training views; the training motion's val cameras improve too */
            double vb = json_num(js, "val_psnr_before"), va = json_num(js, "val_psnr_after");
            CHECK_MSG(va > vb + 2, "val split %g -> %g dB", vb, va);
            CHECK_MSG(json_num(js, "views") == 5 * 8, "%s", js); /* 5 training cameras x 8 frames */
            char cp[128];
            snprintf(cp, sizeof cp, "a%d/canonical.ply", fit);
            CHECK(file_nonempty(dir, cp));
        }
    }
    CHECK_MSG(psnr[1] > psnr[0] + 2 && psnr[2] > psnr[0] + 2, "truth row %g dB with the albedo, %g / %g dB fitted", psnr[0], psnr[1], psnr[2]);
    CHECK_MSG(val[1] > val[2] + 0.3, "val split %g dB with the normal offsets, %g without", val[1], val[2]);
    snprintf(cmd, sizeof cmd, "%s animate --rig %s/rig/rig.h5 --gaussians %s/x.ply --motion heldout --out %s/x --set appearance.fit=true 2>&1",
             test_anima_bin(), dir, dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    /* the preset's fit is dropped with a note (the run's own appearance), not a usage error;
     * x.ply does not exist, so the command fails after the note, naming it */
    CHECK_MSG(rc == 1 && strstr(out, "appearance.fit is off with --gaussians") && strstr(out, "x.ply"), "rc %d: %s", rc, out);
    /* the fitted set's canonical.ply cannot be written (a folder holds its name): the command
     * fails naming the file and leaves the folder in place */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/w/canonical.ply && OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion heldout "
             "--out %s/w --eval %s --set appearance.fit=true --set appearance.steps=20 2>&1",
             dir, test_anima_bin(), dir, dir, small);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "canonical.ply"), "rc %d: %s", rc, out);
    char wp[128];
    struct stat wst;
    snprintf(wp, sizeof wp, "%s/w/canonical.ply", dir);
    CHECK(stat(wp, &wst) == 0 && S_ISDIR(wst.st_mode));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

/* ---- anima gaussianimate: the whole chain, resumed and interrupted ----------------------------- */

/* On the tiny benchmark: every stage's output (the fit, its evaluation, the rig, the scored
 * animation, the glTF) and the summary's figures; a rerun keeps every stage; --from animate redoes
 * animate and export only; SIGINT during the gs4d stage exits 130 with the fit's checkpoint kept,
 * and the same command then resumes and finishes. */
TEST(gaussianimate_chain_resumes) {
    char dir[] = "/tmp/anima-gz-XXXXXX", out[65536], cmd[12288];
    CHECK(mkdtemp(dir) != NULL);
    int rc = tiny_bench(dir, 32, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    const char *fast = "--config configs/gs4d-tiny.json --set train.iters=100 --set train.warmup=30 --set train.ckpt_every=50 "
                       "--bones 8 --rig-args '--iters 5 --ik-steps 20 --ik-points 100' "
                       "--animate-args '--set ik.method=fit --no-ply --set regress.steps=50' --no-progress";
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s gaussianimate --data %s/b --out %s/run %s 2>&1", test_anima_bin(), dir, dir, fast);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    char run[128];
    snprintf(run, sizeof run, "%s/run", dir);
    const char *files[] = {"gs4d/trajectories.h5", "gs4d/canonical.ply", "logs/eval.txt", "rig/rig.h5", "anim/animation.h5",
                           "anim/eval.json", "character.glb"};
    for (int k = 0; k < 7; k++) CHECK_MSG(file_nonempty(run, files[k]), "no %s", files[k]);
    CHECK_MSG(strstr(out, "[5/5] export") && strstr(out, "held-out PSNR") && strstr(out, "animate: partmm  RMSE") &&
              strstr(out, "joints against the true rig"), "%s", out);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s gaussianimate --data %s/b --out %s/run %s 2>&1", test_anima_bin(), dir, dir, fast);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "[1/5] gs4d: done earlier, kept") && strstr(out, "[5/5] export: done earlier, kept"),
              "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=2 %s gaussianimate --data %s/b --out %s/run %s --from animate 2>&1", test_anima_bin(),
             dir, dir, fast);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "[3/5] rig: done earlier, kept") && strstr(out, "[4/5] animate: anima animate") &&
              file_nonempty(run, "anim/eval.json"), "rc %d: %s", rc, out);
    /* interrupted in the fit: a long fit, SIGINT once its log has a line past the first checkpoint
     * (run from the benchmark's folder: the program and the config by absolute path) */
    char bin[PATH_MAX], root[PATH_MAX];
    CHECK(realpath(test_anima_bin(), bin) != NULL && getcwd(root, sizeof root) != NULL);
    snprintf(cmd, sizeof cmd,
             "cd %s && (OMP_NUM_THREADS=2 %s gaussianimate --data b --out run2 --config %s/configs/gs4d-tiny.json "
             "--set train.iters=100000 --set train.warmup=30 --set train.ckpt_every=50 --set train.log_every=10 --no-progress "
             "> int.log 2>&1 & pid=$!; for i in $(seq 600); do [ -f run2/gs4d/ckpt.h5 ] && grep -q '\"step\":120' "
             "run2/gs4d/metrics.jsonl 2>/dev/null && break; sleep 0.1; done; kill -INT $pid; wait $pid; echo \"exit $?\") 2>&1; "
             "tail -3 int.log",
             dir, bin, root);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(strstr(out, "exit 130") && strstr(out, "interrupted in stage gs4d"), "%s", out);
    char run2[128];
    snprintf(run2, sizeof run2, "%s/run2", dir);
    CHECK_MSG(file_nonempty(run2, "gs4d/ckpt.h5") && !file_nonempty(run2, "gs4d/trajectories.h5"), "%s", out);
    /* the same command, shorter: it resumes the fit from its checkpoint (the iteration count is
     * the config's, so a shorter one finishes at once) and runs the rest */
    snprintf(cmd, sizeof cmd, "cd %s && OMP_NUM_THREADS=2 %s gaussianimate --data b --out run2 --config %s/configs/gs4d-tiny.json "
             "--set train.iters=100 --set train.warmup=30 --set train.ckpt_every=50 --bones 8 --rig-args '--iters 5 --ik-steps 20 "
             "--ik-points 100' --animate-args '--set ik.method=fit --no-ply --set regress.steps=50' --no-progress 2>&1",
             dir, bin, root);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && file_nonempty(run2, "character.glb"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

/* animation.h5: what pm_animation_write writes, pm_animation_read_pose gives back for the same
 * motion; another motion or other sizes are refused naming the file; an unwritable folder is an
 * error naming the file and leaves nothing */
TEST(partmm_animation_file_roundtrip) {
    enum { F = 3, B = 2, J = 4, FK = 5 };
    float tb[F * B * 12], rot[F * J * 4], trans[F * 3], krot[FK * J * 4], ktrans[FK * 3];
    for (int i = 0; i < F * B * 12; i++) tb[i] = (float)sin(0.3 * i);
    for (int i = 0; i < F * J * 4; i++) rot[i] = (float)cos(0.7 * i);
    for (int i = 0; i < F * 3; i++) trans[i] = 0.1f * i;
    for (int i = 0; i < FK * J * 4; i++) krot[i] = (float)sin(1.1 * i);
    for (int i = 0; i < FK * 3; i++) ktrans[i] = -0.2f * i;
    char dir[] = "/tmp/anima-test-anim-XXXXXX", path[128], err[1024];
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/animation.h5", dir);
    CHECK_MSG(pm_animation_write(path, F, B, J, tb, rot, trans, FK, krot, ktrans, "heldout", "rig.h5", err, sizeof err) == 0, "%s", err);
    float qr[F * J * 4], qt[F * 3], kr[FK * J * 4], kt[FK * 3];
    CHECK_MSG(pm_animation_read_pose(path, "heldout", F, FK, J, qr, qt, kr, kt, err, sizeof err) == 0, "%s", err);
    CHECK(!memcmp(qr, rot, sizeof rot) && !memcmp(qt, trans, sizeof trans) && !memcmp(kr, krot, sizeof krot) &&
          !memcmp(kt, ktrans, sizeof ktrans));
    CHECK(pm_animation_read_pose(path, "train", F, FK, J, qr, qt, kr, kt, err, sizeof err) == -1 && strstr(err, path) &&
          strstr(err, "heldout"));
    CHECK(pm_animation_read_pose(path, "heldout", F + 1, FK, J, qr, qt, kr, kt, err, sizeof err) == -1 && strstr(err, path));
    snprintf(path, sizeof path, "%s/no/such/animation.h5", dir);
    CHECK(pm_animation_write(path, F, B, J, tb, rot, trans, FK, krot, ktrans, "heldout", "rig.h5", err, sizeof err) == -1 &&
          strstr(err, path));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* the RMSE's unit: the rest mesh's bounding-box diagonal over its vertices */
TEST(partmm_bench_diagonal_is_the_rest_box) {
    float rest[9] = {0, 0, 0, 3, 0, 0, 0, 4, 12};
    DsMotionGt g = {.nv = 3, .rest = rest};
    CHECK(fabs(pm_bench_diagonal(&g) - 13) < 1e-12);
}
