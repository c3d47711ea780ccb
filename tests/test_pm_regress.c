/* tests/test_pm_regress.c — models/partmm/regress.h: the MLP and the GRU regressor fit a
 * two-bone forward-kinematics map (rotations by geodesic angle, translations by RMSE, on the
 * training frames and on held-out frames of the same motion), predict proper rotations, ignore
 * quaternion sign flips, are deterministic for a seed, stop when the progress callback asks, and
 * refuse bad input with a message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/partmm/regress.h"
#include "tests/test.h"

/* Two joints, two bones: joint 0 at the origin, joint 1 at (1, 0, 0); local rotations from
 * smooth axis-angle curves of incommensurate frequencies (held-out frames are new poses, not
 * repeats). Bone transforms [R | T] map rest to posed points: bone 0 = [R0 | 0] (the root
 * stays), bone 1 = [R0 R1 | p1 − R0 R1 x1] with p1 = R0 x1. Every third quaternion has its
 * sign flipped (the same rotation). */
#define TB_J 2
#define TB_B 2

static void axis_angle_quat(const double v[3], double q[4]) {
    double th = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), s = th > 0 ? sin(th / 2) / th : 0.5;
    q[0] = cos(th / 2), q[1] = v[0] * s, q[2] = v[1] * s, q[3] = v[2] * s;
}

static void qmat(const double q[4], double R[9]) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

static void two_bone_fk(int t0, int F, float *rot, float *tb) {
    static const double freq[TB_J][3] = {{0.071, 0.043, 0.029}, {0.057, 0.093, 0.037}};
    static const double amp[TB_J][3] = {{0.6, 0.9, 0.5}, {0.8, 0.4, 1.0}};
    for (int i = 0; i < F; i++) {
        int t = t0 + i;
        double R[TB_J][9];
        for (int j = 0; j < TB_J; j++) {
            double v[3], q[4];
            for (int k = 0; k < 3; k++) v[k] = amp[j][k] * sin(freq[j][k] * t + 1.3 * j + 0.7 * k);
            axis_angle_quat(v, q);
            qmat(q, R[j]);
            double sg = (t * 2 + j) % 3 == 0 ? -1 : 1;
            for (int k = 0; k < 4; k++) rot[((size_t)i * TB_J + j) * 4 + k] = (float)(sg * q[k]);
        }
        double G1[9] = {0};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) G1[a * 3 + b] += R[0][a * 3 + c] * R[1][c * 3 + b];
        float *b0 = tb + ((size_t)i * TB_B + 0) * 12, *b1 = tb + ((size_t)i * TB_B + 1) * 12;
        for (int a = 0; a < 3; a++) {
            for (int b = 0; b < 3; b++) b0[a * 4 + b] = (float)R[0][a * 3 + b], b1[a * 4 + b] = (float)G1[a * 3 + b];
            b0[a * 4 + 3] = 0;
            /* p1 = R0 x1, x1 = (1, 0, 0): R0's first column; T1 = p1 − G1 x1 */
            b1[a * 4 + 3] = (float)(R[0][a * 3] - G1[a * 3]);
        }
    }
}

typedef struct {
    double rot_deg;  /* mean geodesic angle between predicted and true rotations */
    double t_rmse;   /* RMSE of the translations (bone length 1) */
    double orth_err; /* max |RᵀR − I| and |det R − 1| of the predictions */
} FitErr;

static FitErr compare(const float *pred, const float *ref, int F) {
    FitErr e = {0};
    double ang = 0, tt = 0;
    for (int i = 0; i < F * TB_B; i++) {
        const float *P = pred + (size_t)i * 12, *Q = ref + (size_t)i * 12;
        double tr = 0;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) tr += (double)P[a * 4 + b] * Q[a * 4 + b]; /* tr(Pᵀ Q) */
        double c = (tr - 1) / 2;
        ang += acos(c > 1 ? 1 : c < -1 ? -1 : c) * 180 / M_PI;
        for (int a = 0; a < 3; a++) tt += pow((double)P[a * 4 + 3] - Q[a * 4 + 3], 2);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                double d = -(a == b);
                for (int k = 0; k < 3; k++) d += (double)P[k * 4 + a] * P[k * 4 + b];
                e.orth_err = fmax(e.orth_err, fabs(d));
            }
        double det = P[0] * (P[5] * P[10] - P[6] * P[9]) - P[1] * (P[4] * P[10] - P[6] * P[8]) +
                     P[2] * (P[4] * P[9] - P[5] * P[8]);
        e.orth_err = fmax(e.orth_err, fabs(det - 1));
    }
    e.rot_deg = ang / (F * TB_B);
    e.t_rmse = sqrt(tt / (F * TB_B * 3));
    return e;
}

enum { F_TRAIN = 2000, F_TEST = 400 };

/* Trains on frames 0..239, evaluates on them and on the held-out 240..359. */
static void fit_case(PmRegressKind kind, int steps, double max_deg, double max_t, double max_deg_ho, double max_t_ho) {
    float *rot = malloc(sizeof(float) * (F_TRAIN + F_TEST) * TB_J * 4);
    float *tb = malloc(sizeof(float) * (F_TRAIN + F_TEST) * TB_B * 12);
    float *pred = malloc(sizeof(float) * (F_TRAIN + F_TEST) * TB_B * 12);
    two_bone_fk(0, F_TRAIN + F_TEST, rot, tb);
    PmRegressOptions o = {.kind = kind, .hidden = 64, .layers = 2, .window = 3, .steps = steps, .batch = 32,
                          .lr = 3e-3f, .seed = 17};
    char err[256] = "";
    PmRegress *r = pm_regress_train(rot, tb, F_TRAIN, TB_J, TB_B, &o, NULL, NULL, err, sizeof err);
    CHECK_MSG(r != NULL, "%s", err);
    if (!r) goto done;
    CHECK_MSG(pm_regress_predict(r, rot, F_TRAIN + F_TEST, pred, err, sizeof err) == 0, "%s", err);
    FitErr tr = compare(pred, tb, F_TRAIN);
    FitErr te = compare(pred + (size_t)F_TRAIN * TB_B * 12, tb + (size_t)F_TRAIN * TB_B * 12, F_TEST);
    const char *name = kind == PM_REGRESS_MLP ? "MLP" : "GRU";
    CHECK_MSG(tr.rot_deg < max_deg && tr.t_rmse < max_t, "%s train: %.2f deg, T RMSE %.4f", name, tr.rot_deg, tr.t_rmse);
    CHECK_MSG(te.rot_deg < max_deg_ho && te.t_rmse < max_t_ho, "%s held-out: %.2f deg, T RMSE %.4f", name, te.rot_deg,
              te.t_rmse);
    CHECK_MSG(tr.orth_err < 1e-5 && te.orth_err < 1e-5, "%s: rotations off SO(3) by %g", name,
              fmax(tr.orth_err, te.orth_err));
    if (getenv("ANIMA_TEST_VERBOSE")) {
        /* the rest pose (identity transforms) as a predictor, for scale */
        for (int i = 0; i < (F_TRAIN + F_TEST) * TB_B * 12; i++) pred[i] = i % 12 == 0 || i % 12 == 5 || i % 12 == 10;
        FitErr rest = compare(pred, tb, F_TRAIN + F_TEST);
        printf("    %s: train %.2f deg %.4f, held-out %.2f deg %.4f (rest pose: %.2f deg %.4f)\n", name, tr.rot_deg,
               tr.t_rmse, te.rot_deg, te.t_rmse, rest.rot_deg, rest.t_rmse);
    }
    pm_regress_free(r);
done:
    free(rot), free(tb), free(pred);
}

/* Bounds: the rest pose, predicted for every frame, is off by 58° and 0.30 bone lengths on
 * average (ANIMA_TEST_VERBOSE=1 prints it); a fit within 4° / 0.02 on the training frames,
 * and within 8° / 0.08 on held-out poses (new combinations of the joints' angles: a 2000-frame
 * motion covers the 6-dimensional pose space only sparsely, so the regressors interpolate, not
 * recover FK exactly — the gap is what PartMM is compared with). */
TEST(pm_regress_mlp_fits_two_bone_fk) { fit_case(PM_REGRESS_MLP, 1500, 4.0, 0.02, 8.0, 0.08); }
TEST(pm_regress_gru_fits_two_bone_fk) { fit_case(PM_REGRESS_GRU, 1500, 4.0, 0.02, 8.0, 0.08); }

/* ---- determinism, sign flips, progress, errors ------------------------------------------------ */

typedef struct {
    int calls, last_step, stop_at;
    double first, last;
} Prog;

static int on_progress(void *user, int step, int steps, double loss) {
    Prog *p = user;
    (void)steps;
    if (!p->calls++) p->first = loss;
    p->last = loss, p->last_step = step;
    return p->stop_at && step >= p->stop_at;
}

static PmRegress *small_model(PmRegressKind kind, uint64_t seed, const float *rot, const float *tb, int F, Prog *pr) {
    PmRegressOptions o = {.kind = kind, .hidden = 16, .layers = 2, .window = 4, .steps = 60, .batch = 16,
                          .lr = 3e-3f, .seed = seed};
    char err[256] = "";
    PmRegress *r = pm_regress_train(rot, tb, F, TB_J, TB_B, &o, pr ? on_progress : NULL, pr, err, sizeof err);
    CHECK_MSG(r != NULL, "%s", err);
    return r;
}

TEST(pm_regress_deterministic_and_sign_invariant) {
    enum { F = 50 };
    float rot[F * TB_J * 4], neg[F * TB_J * 4], tb[F * TB_B * 12];
    float a[F * TB_B * 12], b[F * TB_B * 12], c[F * TB_B * 12];
    two_bone_fk(0, F, rot, tb);
    for (int i = 0; i < F * TB_J * 4; i++) neg[i] = -rot[i];
    char err[256];
    for (int kind = PM_REGRESS_MLP; kind <= PM_REGRESS_GRU; kind++) {
        PmRegress *r1 = small_model(kind, 5, rot, tb, F, NULL), *r2 = small_model(kind, 5, rot, tb, F, NULL);
        PmRegress *r3 = small_model(kind, 6, rot, tb, F, NULL);
        if (!r1 || !r2 || !r3) return;
        CHECK(pm_regress_predict(r1, rot, F, a, err, sizeof err) == 0);
        CHECK(pm_regress_predict(r2, rot, F, b, err, sizeof err) == 0);
        CHECK_MSG(!memcmp(a, b, sizeof a), "kind %d: two trainings with one seed differ", kind);
        CHECK(pm_regress_predict(r3, rot, F, c, err, sizeof err) == 0);
        CHECK_MSG(memcmp(a, c, sizeof a) != 0, "kind %d: another seed gives the same model", kind);
        /* −q is the same rotation: same features, bit for bit the same prediction */
        CHECK(pm_regress_predict(r1, neg, F, c, err, sizeof err) == 0);
        CHECK_MSG(!memcmp(a, c, sizeof a), "kind %d: flipping the quaternions' signs changes the prediction", kind);
        /* a prefix predicts the same frames (causal windows; chunking does not matter) — to f32
         * rounding, not bit for bit: the prefix is a GEMM with fewer rows, and which OpenBLAS
         * kernels sum it in the same order depends on the CPU (0.3.21: bitwise equal with
         * OPENBLAS_CORETYPE=SkylakeX; apart with this AVX-512 machine's default kernels, and by
         * 9e-8 / 1.2e-7 with Haswell's) */
        CHECK(pm_regress_predict(r1, rot, 7, c, err, sizeof err) == 0);
        double worst = 0;
        for (int i = 0; i < 7 * TB_B * 12; i++) worst = fmax(worst, fabs((double)a[i] - c[i]) / fmax(1.0, fabs((double)a[i])));
        CHECK_MSG(worst <= 1e-6, "kind %d: a 7-frame prefix differs from the full prediction by %.3g", kind, worst);
        pm_regress_free(r1), pm_regress_free(r2), pm_regress_free(r3);
    }
}

TEST(pm_regress_progress_and_stop) {
    enum { F = 40 };
    float rot[F * TB_J * 4], tb[F * TB_B * 12];
    two_bone_fk(0, F, rot, tb);
    Prog all = {0}, stop = {.stop_at = 20};
    PmRegress *r = small_model(PM_REGRESS_GRU, 1, rot, tb, F, &all);
    CHECK_MSG(all.calls == 6 && all.last_step == 60, "%d calls, last step %d", all.calls, all.last_step);
    CHECK_MSG(all.last < all.first, "loss %g -> %g", all.first, all.last);
    PmRegress *s = small_model(PM_REGRESS_MLP, 1, rot, tb, F, &stop);
    CHECK_MSG(stop.calls == 2 && stop.last_step == 20, "stopped after %d calls at step %d", stop.calls,
              stop.last_step);
    CHECK(s != NULL); /* stopping early still returns the model trained so far */
    pm_regress_free(r), pm_regress_free(s);
    pm_regress_free(NULL);
}

TEST(pm_regress_input_errors) {
    enum { F = 10 };
    float rot[F * TB_J * 4], tb[F * TB_B * 12], out[F * TB_B * 12];
    two_bone_fk(0, F, rot, tb);
    char err[256];
    PmRegressOptions o = {.kind = PM_REGRESS_MLP, .hidden = 8, .steps = 2};
#define REFUSED(call, what)                                                                                  \
    do {                                                                                                     \
        err[0] = 0;                                                                                          \
        PmRegress *r_ = (call);                                                                              \
        CHECK_MSG(r_ == NULL && strstr(err, what), "expected an error naming '%s', got '%s'", what, err);    \
        pm_regress_free(r_);                                                                                 \
    } while (0)
    REFUSED(pm_regress_train(rot, tb, 0, TB_J, TB_B, &o, NULL, NULL, err, sizeof err), "frames");
    REFUSED(pm_regress_train(NULL, tb, F, TB_J, TB_B, &o, NULL, NULL, err, sizeof err), "data");
    PmRegressOptions bad = o;
    bad.kind = (PmRegressKind)7;
    REFUSED(pm_regress_train(rot, tb, F, TB_J, TB_B, &bad, NULL, NULL, err, sizeof err), "kind");
    bad = o, bad.layers = 99;
    REFUSED(pm_regress_train(rot, tb, F, TB_J, TB_B, &bad, NULL, NULL, err, sizeof err), "layers");
    float z[4] = {rot[12], rot[13], rot[14], rot[15]};
    rot[12] = rot[13] = rot[14] = rot[15] = 0; /* frame 1, joint 1 */
    REFUSED(pm_regress_train(rot, tb, F, TB_J, TB_B, &o, NULL, NULL, err, sizeof err), "joint 1 of frame 1");
    memcpy(rot + 12, z, sizeof z);
    tb[5 * TB_B * 12 + 3] = NAN;
    REFUSED(pm_regress_train(rot, tb, F, TB_J, TB_B, &o, NULL, NULL, err, sizeof err), "not finite");
    tb[5 * TB_B * 12 + 3] = 0;
    PmRegress *r = pm_regress_train(rot, tb, F, TB_J, TB_B, &o, NULL, NULL, err, sizeof err);
    CHECK_MSG(r != NULL, "%s", err);
    CHECK(pm_regress_predict(r, rot, 0, out, err, sizeof err) == -1 && strstr(err, "F"));
    rot[0] = NAN;
    CHECK(pm_regress_predict(r, rot, F, out, err, sizeof err) == -1 && strstr(err, "non-finite"));
    pm_regress_free(r);
#undef REFUSED
}
