/* tests/test_ssdr.c — models/skelebones: Horn/Kabsch fits (a random rotation recovered, a mirrored
 * target still gives a proper rotation), the simplex least squares against brute force, LBG-VQ
 * on rigid pieces (labels equal the true segmentation up to renaming), and SSDR on sequences
 * made by known linear blend skinning: a bent cylinder (2 bones) and a two-joint arm (3 bones),
 * where the recovered rig must reproduce the motion to a small RMSE and the recovered weights
 * must match the true ones. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/h5file.h"
#include "models/skelebones/cluster.h"
#include "models/skelebones/ssdr.h"
#include "tests/test.h"

static double urand(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static void quat_mat(double w, double x, double y, double z, double R[9]) {
    double n = sqrt(w * w + x * x + y * y + z * z);
    w /= n, x /= n, y /= n, z /= n;
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

/* rotation by angle about z through the point (0, h, 0), as a 3 × 4 transform */
static void rot_z_about(double angle, double h, double T[12]) {
    double c = cos(angle), s = sin(angle);
    double R[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 3; k++) T[r * 4 + k] = R[r * 3 + k];
        T[r * 4 + 3] = (r == 1 ? h : 0) - R[r * 3 + 1] * h;
    }
}

static void compose(const double A[12], const double B[12], double out[12]) { /* A ∘ B */
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 4; c++) {
            double s = c == 3 ? A[r * 4 + 3] : 0;
            for (int k = 0; k < 3; k++) s += A[r * 4 + k] * B[k * 4 + c];
            out[r * 4 + c] = s;
        }
    }
}

static double det3(const double *T) { /* of the 3 × 3 part of a 3 × 4 */
    return T[0] * (T[5] * T[10] - T[6] * T[9]) - T[1] * (T[4] * T[10] - T[6] * T[8]) + T[2] * (T[4] * T[9] - T[5] * T[8]);
}

TEST(ssdr_kabsch_recovers_rotation) {
    uint64_t s = 7;
    enum { n = 40 };
    double p[n * 3], q[n * 3], w[n], R[9], Tt[3] = {0.3, -1.2, 2.0}, out[12];
    quat_mat(urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5, R);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) p[i * 3 + c] = 2 * urand(&s) - 1;
        for (int r = 0; r < 3; r++) q[i * 3 + r] = R[r * 3] * p[i * 3] + R[r * 3 + 1] * p[i * 3 + 1] + R[r * 3 + 2] * p[i * 3 + 2] + Tt[r];
        w[i] = 0.1 + urand(&s);
    }
    sb_kabsch(n, p, q, w, out);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) CHECK_NEAR(out[r * 4 + c], R[r * 3 + c], 1e-9);
        CHECK_NEAR(out[r * 4 + 3], Tt[r], 1e-9);
    }
    /* a mirrored target: the best proper rotation, never a reflection (det +1) */
    for (int i = 0; i < n; i++) q[i * 3] = -p[i * 3], q[i * 3 + 1] = p[i * 3 + 1], q[i * 3 + 2] = p[i * 3 + 2];
    sb_kabsch(n, p, q, NULL, out);
    CHECK_NEAR(det3(out), 1.0, 1e-9);
    /* a planar (degenerate) set still gives its rotation */
    for (int i = 0; i < n; i++) {
        p[i * 3 + 2] = 0;
        for (int r = 0; r < 3; r++) q[i * 3 + r] = R[r * 3] * p[i * 3] + R[r * 3 + 1] * p[i * 3 + 1] + Tt[r];
    }
    sb_kabsch(n, p, q, NULL, out);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) CHECK_NEAR(out[r * 4 + c], R[r * 3 + c], 1e-8);
}

TEST(ssdr_simplex_lsq_matches_brute_force) {
    /* 3 variables: the simplex is a triangle; compare with a fine grid search */
    uint64_t s = 3;
    for (int trial = 0; trial < 20; trial++) {
        double A[5 * 3], G[9] = {0}, c[3] = {0}, b[5], w[3];
        for (int k = 0; k < 15; k++) A[k] = 2 * urand(&s) - 1;
        for (int k = 0; k < 5; k++) b[k] = 2 * urand(&s) - 1;
        for (int j = 0; j < 3; j++) {
            for (int k = 0; k < 3; k++)
                for (int r = 0; r < 5; r++) G[j * 3 + k] += A[r * 3 + j] * A[r * 3 + k];
            for (int r = 0; r < 5; r++) c[j] += A[r * 3 + j] * b[r];
        }
        CHECK(sb_simplex_lsq(3, G, c, NULL, w) == 0);
        CHECK_NEAR(w[0] + w[1] + w[2], 1, 1e-12);
        CHECK(w[0] >= 0 && w[1] >= 0 && w[2] >= 0);
        double f = 0, best = INFINITY;
        for (int j = 0; j < 3; j++) {
            f -= 2 * c[j] * w[j];
            for (int k = 0; k < 3; k++) f += w[j] * G[j * 3 + k] * w[k];
        }
        for (int a = 0; a <= 400; a++)
            for (int bb = 0; a + bb <= 400; bb++) {
                double x[3] = {a / 400.0, bb / 400.0, (400 - a - bb) / 400.0}, g = 0;
                for (int j = 0; j < 3; j++) {
                    g -= 2 * c[j] * x[j];
                    for (int k = 0; k < 3; k++) g += x[j] * G[j * 3 + k] * x[k];
                }
                if (g < best) best = g;
            }
        CHECK_MSG(f <= best + 1e-12, "trial %d: active set %.12g above the grid's %.12g", trial, f, best);
    }
}

/* rigid pieces: 3 boxes of points, each moving with its own random rigid motion */
TEST(ssdr_lbgvq_labels_match_rigid_pieces) {
    enum { P = 3, per = 60, N = P * per, F = 12 };
    float *rest = malloc(N * 3 * sizeof(float)), *pos = malloc((size_t)F * N * 3 * sizeof(float));
    int truth[N];
    uint64_t s = 11;
    for (int i = 0; i < N; i++) {
        int piece = i / per;
        truth[i] = piece;
        rest[i * 3] = (float)(piece * 1.2 + urand(&s)), rest[i * 3 + 1] = (float)urand(&s), rest[i * 3 + 2] = (float)(0.5 * urand(&s));
    }
    for (int t = 0; t < F; t++)
        for (int piece = 0; piece < P; piece++) {
            double R[9], T[3];
            quat_mat(1, 0.3 * (urand(&s) - 0.5), 0.3 * (urand(&s) - 0.5), 0.3 * (urand(&s) - 0.5), R);
            for (int k = 0; k < 3; k++) T[k] = 0.2 * (urand(&s) - 0.5);
            for (int i = piece * per; i < (piece + 1) * per; i++)
                for (int r = 0; r < 3; r++)
                    pos[((size_t)t * N + i) * 3 + r] =
                        (float)(R[r * 3] * rest[i * 3] + R[r * 3 + 1] * rest[i * 3 + 1] + R[r * 3 + 2] * rest[i * 3 + 2] + T[r]);
        }
    SbClusterOptions o;
    sb_cluster_defaults(&o);
    o.bones = P;
    SbClusters cl;
    char err[256];
    CHECK(sb_cluster_lbgvq(F, N, rest, pos, &o, &cl, err, sizeof err) == 0);
    CHECK(cl.nbones == P);
    /* the labels are the pieces up to renaming: a bijection between them */
    int map[P];
    for (int k = 0; k < P; k++) map[k] = -1;
    int agree = 0;
    for (int i = 0; i < N; i++) {
        if (map[truth[i]] < 0) map[truth[i]] = cl.labels[i];
        agree += map[truth[i]] == cl.labels[i];
    }
    CHECK_MSG(agree == N, "%d of %d labels agree", agree, N);
    CHECK(map[0] != map[1] && map[1] != map[2] && map[0] != map[2]);
    CHECK_MSG(cl.rmse < 1e-5, "rigid fit RMSE %g", cl.rmse);
    sb_clusters_free(&cl);
    free(rest), free(pos);
}

/* A sequence made by LBS of nb bones (transforms Tb: F × nb × 12, weights Wt: N × nb), and the
 * checks SSDR must pass on it: RMSE under tol_rmse (of the height 2), the weights of the recovered
 * bone most like each true bone within tol_w in the mean. */
static void lbs_make(int F, int N, int nb, const float *rest, const double *Tb, const float *Wt, float *pos) {
    for (int t = 0; t < F; t++)
        for (int i = 0; i < N; i++)
            for (int r = 0; r < 3; r++) {
                double acc = 0;
                for (int j = 0; j < nb; j++) {
                    const double *T = Tb + ((size_t)t * nb + j) * 12;
                    acc += Wt[i * nb + j] * (T[r * 4] * rest[i * 3] + T[r * 4 + 1] * rest[i * 3 + 1] + T[r * 4 + 2] * rest[i * 3 + 2] + T[r * 4 + 3]);
                }
                pos[((size_t)t * N + i) * 3 + r] = (float)acc;
            }
}

static void ssdr_check(int F, int N, int nb, const float *rest, const float *pos, const float *Wt, double tol_rmse,
                       double tol_w) {
    SbClusterOptions co;
    sb_cluster_defaults(&co);
    co.bones = nb;
    SbClusters cl;
    char err[256];
    CHECK(sb_cluster_lbgvq(F, N, rest, pos, &co, &cl, err, sizeof err) == 0);
    CHECK(cl.nbones == nb);
    SbSsdrOptions so;
    sb_ssdr_defaults(&so);
    so.iters = 20;
    SbSkin sk;
    CHECK(sb_ssdr(F, N, rest, pos, &cl, &so, &sk, err, sizeof err) == 0);
    CHECK(sk.niters == 20);
    for (int it = 1; it <= sk.niters; it++) CHECK_MSG(sk.rmse[it] <= sk.rmse[it - 1] * 1.02 + 1e-9, "RMSE rose at %d", it);
    double rmse = sb_lbs_rmse(F, N, nb, rest, pos, sk.weights, sk.transforms);
    CHECK_NEAR(rmse, sk.rmse[sk.niters], 1e-9);
    CHECK_MSG(rmse < tol_rmse, "SSDR RMSE %g (clusters %g), wanted < %g", rmse, cl.rmse, tol_rmse);
    CHECK_MSG(rmse < 0.5 * cl.rmse, "SSDR %g did not improve on the rigid clusters %g", rmse, cl.rmse);
    for (int i = 0; i < N; i++) {
        double sum = 0;
        for (int j = 0; j < nb; j++) {
            CHECK(sk.weights[i * nb + j] >= 0);
            sum += sk.weights[i * nb + j];
        }
        CHECK_NEAR(sum, 1, 1e-5);
    }
    /* match every true bone to the recovered bone with the most overlapping weight */
    for (int a = 0; a < nb; a++) {
        int best = 0;
        double bo = -1;
        for (int b = 0; b < nb; b++) {
            double ov = 0;
            for (int i = 0; i < N; i++) ov += fmin(Wt[i * nb + a], sk.weights[i * nb + b]);
            if (ov > bo) bo = ov, best = b;
        }
        double e = 0;
        for (int i = 0; i < N; i++) e += fabs(Wt[i * nb + a] - sk.weights[i * nb + best]);
        CHECK_MSG(e / N < tol_w, "true bone %d: mean weight error %g (recovered bone %d)", a, e / N, best);
    }
    sb_skin_free(&sk);
    sb_clusters_free(&cl);
}

/* points on a cylinder of radius 0.25 along y in [0, 2] */
static void cylinder(int N, uint64_t seed, float *rest) {
    uint64_t s = seed;
    for (int i = 0; i < N; i++) {
        double th = 2 * M_PI * urand(&s), y = 2 * urand(&s);
        rest[i * 3] = (float)(0.25 * cos(th)), rest[i * 3 + 1] = (float)y, rest[i * 3 + 2] = (float)(0.25 * sin(th));
    }
}

static double smoothstep(double e0, double e1, double x) {
    double t = (x - e0) / (e1 - e0);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return t * t * (3 - 2 * t);
}

TEST(ssdr_bent_cylinder_two_bones) {
    enum { N = 600, F = 16, nb = 2 };
    float *rest = malloc(N * 3 * sizeof(float)), *pos = malloc((size_t)F * N * 3 * sizeof(float)), *Wt = malloc(N * nb * sizeof(float));
    double *Tb = malloc((size_t)F * nb * 12 * sizeof(double));
    cylinder(N, 5, rest);
    for (int i = 0; i < N; i++) {
        double w1 = smoothstep(0.8, 1.2, rest[i * 3 + 1]);
        Wt[i * nb] = (float)(1 - w1), Wt[i * nb + 1] = (float)w1;
    }
    for (int t = 0; t < F; t++) {
        double root[12], bend[12];
        rot_z_about(0.1 * sin(0.4 * t), 0, root);
        rot_z_about(1.2 * sin(0.5 * t + 0.3), 1.0, bend);
        memcpy(Tb + ((size_t)t * nb) * 12, root, sizeof root);
        compose(root, bend, Tb + ((size_t)t * nb + 1) * 12);
    }
    lbs_make(F, N, nb, rest, Tb, Wt, pos);
    ssdr_check(F, N, nb, rest, pos, Wt, 2e-3, 0.05);
    free(rest), free(pos), free(Wt), free(Tb);
}

TEST(ssdr_two_joint_arm_three_bones) {
    enum { N = 900, F = 20, nb = 3 };
    float *rest = malloc(N * 3 * sizeof(float)), *pos = malloc((size_t)F * N * 3 * sizeof(float)), *Wt = malloc(N * nb * sizeof(float));
    double *Tb = malloc((size_t)F * nb * 12 * sizeof(double));
    cylinder(N, 9, rest);
    for (int i = 0; i < N; i++) { /* joints at y = 0.7 and 1.4 */
        double a = smoothstep(0.55, 0.85, rest[i * 3 + 1]), b = smoothstep(1.25, 1.55, rest[i * 3 + 1]);
        Wt[i * nb] = (float)(1 - a), Wt[i * nb + 1] = (float)(a - b), Wt[i * nb + 2] = (float)b;
    }
    for (int t = 0; t < F; t++) {
        double root[12], j1[12], j2[12], b1[12];
        rot_z_about(0.2 * sin(0.3 * t), 0, root);
        rot_z_about(1.0 * sin(0.45 * t + 0.5), 0.7, j1);
        rot_z_about(-1.1 * sin(0.7 * t + 1.1), 1.4, j2);
        memcpy(Tb + ((size_t)t * nb) * 12, root, sizeof root);
        compose(root, j1, b1);
        memcpy(Tb + ((size_t)t * nb + 1) * 12, b1, sizeof b1);
        compose(b1, j2, Tb + ((size_t)t * nb + 2) * 12);
    }
    lbs_make(F, N, nb, rest, Tb, Wt, pos);
    ssdr_check(F, N, nb, rest, pos, Wt, 3e-3, 0.06);
    free(rest), free(pos), free(Wt), free(Tb);
}

/* ---- trajectories in, the command ----------------------------------------------------------------- */

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "datasets/mesh/mesh.h"
#include "models/skelebones/skelebones.h"
#include "models/skelebones/traj.h"

static void tmpdir_make(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/anima-test-ssdr-XXXXXX");
    if (!mkdtemp(dir)) abort();
}

static void tmpdir_remove(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}

/* a bent-cylinder sequence as an SbTraj (2 true bones, faces: a few triangles) */
static void bent_traj(SbTraj *t, int F, int N) {
    memset(t, 0, sizeof *t);
    t->nframes = F, t->npoints = N;
    t->rest = malloc((size_t)N * 3 * sizeof(float));
    t->pos = malloc((size_t)F * N * 3 * sizeof(float));
    float *W = malloc((size_t)N * 2 * sizeof(float));
    double *Tb = malloc((size_t)F * 2 * 12 * sizeof(double));
    cylinder(N, 21, t->rest);
    for (int i = 0; i < N; i++) {
        double w1 = smoothstep(0.8, 1.2, t->rest[i * 3 + 1]);
        W[i * 2] = (float)(1 - w1), W[i * 2 + 1] = (float)w1;
    }
    for (int f = 0; f < F; f++) {
        rot_z_about(0, 0, Tb + (size_t)f * 24);
        rot_z_about(1.0 * sin(0.5 * f), 1.0, Tb + (size_t)f * 24 + 12);
    }
    lbs_make(F, N, 2, t->rest, Tb, W, t->pos);
    t->nfaces = N / 3;
    t->faces = malloc((size_t)t->nfaces * 3 * sizeof(int32_t));
    for (int64_t k = 0; k < t->nfaces * 3; k++) t->faces[k] = (int32_t)k;
    t->true_bones = 2, t->true_weights = W, t->true_transforms = Tb;
}

TEST(ssdr_traj_h5_roundtrip_and_errors) {
    char dir[64], path[128], err[512];
    tmpdir_make(dir, sizeof dir);
    SbTraj a, b;
    bent_traj(&a, 6, 90);
    snprintf(path, sizeof path, "%s/traj.h5", dir);
    CHECK(sb_traj_write_h5(path, &a, err, sizeof err) == 0);
    CHECK_MSG(sb_traj_read_h5(path, NULL, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.nframes == 6 && b.npoints == 90 && b.nfaces == 30 && b.true_bones == 0);
    CHECK(memcmp(a.pos, b.pos, 6 * 90 * 3 * sizeof(float)) == 0);
    CHECK(memcmp(a.rest, b.rest, 90 * 3 * sizeof(float)) == 0);
    CHECK(memcmp(a.faces, b.faces, 30 * 3 * sizeof(int32_t)) == 0);
    sb_traj_keep_frames(&b, 3);
    CHECK(b.nframes == 3);
    sb_traj_free(&b);
    /* the layout of `anima gs4d fit`'s trajectories.h5 (frames/positions, canonical/positions)
     * is read without --dataset */
    snprintf(path, sizeof path, "%s/gs4d.h5", dir);
    {
        char tmp[256];
        hid_t h = base_h5_save_begin(path, tmp, sizeof tmp, err, sizeof err);
        CHECK(h >= 0);
        hsize_t d3[3] = {6, 90, 3}, d2[2] = {90, 3};
        hsize_t d1[1] = {90};
        float op[90];
        for (int i = 0; i < 90; i++) op[i] = (float)i / 89;
        bool ok = base_h5_write_checked(h, "frames/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, a.pos, 1 << 16,
                                        false) == 0 &&
                  base_h5_write_checked(h, "canonical/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, a.rest,
                                        1 << 16, false) == 0 &&
                  base_h5_write_checked(h, "canonical/opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, d1, op, 1 << 16,
                                        false) == 0;
        CHECK_MSG(base_h5_save_end(h, tmp, path, ok, "trajectories", err, sizeof err) == 0, "%s", err);
    }
    CHECK_MSG(sb_traj_read_h5(path, NULL, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.nframes == 6 && b.npoints == 90);
    CHECK(memcmp(a.pos, b.pos, 6 * 90 * 3 * sizeof(float)) == 0);
    CHECK(memcmp(a.rest, b.rest, 90 * 3 * sizeof(float)) == 0);
    CHECK(b.opacity && b.opacity[0] == 0 && b.opacity[89] == 1 && fabsf(b.opacity[45] - 45.0f / 89) < 1e-7f);
    /* the opacities survive the writer (--export-traj) */
    snprintf(path, sizeof path, "%s/again.h5", dir);
    CHECK_MSG(sb_traj_write_h5(path, &b, err, sizeof err) == 0, "%s", err);
    sb_traj_free(&b);
    CHECK_MSG(sb_traj_read_h5(path, NULL, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.opacity && b.opacity[89] == 1 && fabsf(b.opacity[45] - 45.0f / 89) < 1e-7f);
    sb_traj_free(&b);
    /* an opacity outside [0, 1] is refused, naming the file and the point */
    snprintf(path, sizeof path, "%s/badop.h5", dir);
    {
        char tmp[256];
        hid_t h = base_h5_save_begin(path, tmp, sizeof tmp, err, sizeof err);
        CHECK(h >= 0);
        hsize_t d3[3] = {6, 90, 3}, d1[1] = {90};
        float op[90] = {0};
        op[7] = 1.5f;
        bool ok = base_h5_write_checked(h, "positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, a.pos, 1 << 16, false) == 0 &&
                  base_h5_write_checked(h, "opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, d1, op, 1 << 16, false) == 0;
        CHECK_MSG(base_h5_save_end(h, tmp, path, ok, "trajectories", err, sizeof err) == 0, "%s", err);
    }
    CHECK(sb_traj_read_h5(path, NULL, &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, path) && strstr(err, "opacities[7]"), "%s", err);
    snprintf(path, sizeof path, "%s/traj.h5", dir);
    /* another dataset name: absent → an error naming it */
    CHECK(sb_traj_read_h5(path, "means", &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "means") && strstr(err, path), "%s", err);
    /* a file that is not HDF5 */
    snprintf(path, sizeof path, "%s/bad.h5", dir);
    FILE *f = fopen(path, "w");
    fputs("not hdf5", f);
    fclose(f);
    CHECK(sb_traj_read_h5(path, NULL, &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, path) != NULL, "%s", err);
    sb_traj_free(&a);
    tmpdir_remove(dir);
}

TEST(ssdr_traj_mesh_folder) {
    char dir[64], path[160], err[512];
    tmpdir_make(dir, sizeof dir);
    SbTraj a, b;
    bent_traj(&a, 4, 60);
    for (int f = 0; f < 4; f++) {
        DsMesh m = {0};
        m.nv = a.npoints, m.nf = a.nfaces, m.v = a.pos + (size_t)f * a.npoints * 3, m.f = a.faces;
        snprintf(path, sizeof path, "%s/frame_%03d.%s", dir, f, f % 2 ? "ply" : "obj");
        CHECK_MSG(ds_mesh_write(path, &m, false, err, sizeof err) == 0, "%s", err);
    }
    CHECK_MSG(sb_traj_read_meshes(dir, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.nframes == 4 && b.npoints == 60 && b.nfaces == 20);
    double md = 0;
    for (int64_t k = 0; k < 4 * 60 * 3; k++) md = fmax(md, fabs(a.pos[k] - b.pos[k]));
    CHECK_MSG(md < 1e-5, "frames differ by %g", md);
    CHECK(memcmp(b.rest, b.pos, 60 * 3 * sizeof(float)) == 0); /* rest = the first frame */
    sb_traj_free(&b);
    /* a frame with other connectivity */
    DsMesh m = {0};
    m.nv = 30, m.nf = 10, m.v = a.pos, m.f = a.faces;
    snprintf(path, sizeof path, "%s/frame_004.obj", dir);
    CHECK(ds_mesh_write(path, &m, false, err, sizeof err) == 0);
    CHECK(sb_traj_read_meshes(dir, &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "frame_004.obj") && strstr(err, "connectivity"), "%s", err);
    sb_traj_free(&a);
    tmpdir_remove(dir);
}

TEST(ssdr_cli) {
    char dir[64], path[160], cmd[1024], out[8192], err[512];
    tmpdir_make(dir, sizeof dir);
    SbTraj a;
    bent_traj(&a, 8, 300);
    snprintf(path, sizeof path, "%s/traj.h5", dir);
    CHECK(sb_traj_write_h5(path, &a, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s --out %s/rig --bones 2 --iters 8 --no-skeleton --no-progress 2>&1", test_anima_bin(),
             path, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    double rmse = -1;
    const char *p = strstr(out, " rmse ");
    if (p) rmse = atof(p + 6);
    CHECK_MSG(rmse >= 0 && rmse < 5e-3, "%s", out);
    struct stat st;
    snprintf(path, sizeof path, "%s/rig/rig.h5", dir);
    CHECK(stat(path, &st) == 0 && st.st_size > 0);
    {
        /* rig.h5's layout: weights N × B, transforms F × B × 3 × 4, the RMSE history */
        hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        CHECK(h >= 0);
        const char *names[3] = {"bones/weights", "bones/transforms", "ssdr/rmse"};
        hsize_t want[3][4] = {{300, 2}, {8, 2, 3, 4}, {9}};
        int ranks[3] = {2, 4, 1};
        for (int k = 0; k < 3; k++) {
            hid_t d = H5Dopen2(h, names[k], H5P_DEFAULT), sp = H5Dget_space(d);
            hsize_t dims[4] = {0};
            CHECK(H5Sget_simple_extent_ndims(sp) == ranks[k]);
            H5Sget_simple_extent_dims(sp, dims, NULL);
            for (int a = 0; a < ranks[k]; a++) CHECK_MSG(dims[a] == want[k][a], "%s dim %d: %llu", names[k], a, (unsigned long long)dims[a]);
            H5Sclose(sp), H5Dclose(d);
        }
        H5Fclose(h);
    }
    snprintf(path, sizeof path, "%s/rig/bones.ply", dir);
    DsMesh m;
    CHECK_MSG(ds_mesh_read(path, &m, err, sizeof err) == 0, "%s", err);
    CHECK(m.nv == 300 && m.color != NULL);
    ds_mesh_free(&m);
    snprintf(path, sizeof path, "%s/rig/bones.png", dir); /* the input has faces: a picture too */
    CHECK(stat(path, &st) == 0 && st.st_size > 0);
    /* half the frames: the weights found there, bones refit on all frames */
    snprintf(path, sizeof path, "%s/traj.h5", dir);
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s --out %s/rig2 --bones 2 --iters 8 --frames-fraction 0.5 --no-skeleton --no-progress 2>&1",
             test_anima_bin(), path, dir);
    CHECK(test_run_capture(cmd, out, sizeof out) == 0);
    p = strstr(out, "all_frames_rmse ");
    CHECK_MSG(strstr(out, "frames 4 ") && p && atof(p + 16) < 0.05, "%s", out);
    /* argument errors: exit 2 naming the problem */
    snprintf(cmd, sizeof cmd, "%s skelebones --out %s/x 2>&1", test_anima_bin(), dir);
    CHECK(test_run_capture(cmd, out, sizeof out) == 2);
    CHECK_MSG(strstr(out, "exactly one of") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s/none.h5 --out %s/x 2>&1", test_anima_bin(), dir, dir);
    CHECK(test_run_capture(cmd, out, sizeof out) == 1);
    CHECK_MSG(strstr(out, "none.h5") != NULL, "%s", out);
    sb_traj_free(&a);
    tmpdir_remove(dir);
}

/* ---- IK ----------------------------------------------------------------------------------------- */

#include "models/skelebones/ik.h"

TEST(ssdr_ik_two_joint_arm) {
    /* joints at y = 0, 0.7, 1.4 and a tip at 2.0; points on a cylinder bound to joints 0..2 */
    enum { J = 4, F = 2, N = 120, per = 6 };
    double X[J * 3] = {0, 0, 0, 0, 0.7, 0, 0, 1.4, 0, 0, 2.0, 0};
    int32_t par[J] = {-1, 0, 1, 2};
    SbTree tree = {J, X, par};
    /* FK by hand: joint 1 bent 90° about z moves joint 2 to (−0.7, 0.7, 0) */
    double rot[J * 4] = {1, 0, 0, 0, cos(M_PI / 4), 0, 0, sin(M_PI / 4), 1, 0, 0, 0, 1, 0, 0, 0}, zero[3] = {0}, pos[J * 3];
    sb_fk(&tree, rot, zero, pos, NULL);
    CHECK_NEAR(pos[6], -0.7, 1e-12);
    CHECK_NEAR(pos[7], 0.7, 1e-12);
    CHECK_NEAR(pos[9], -1.3, 1e-12);
    float *U = malloc(N * 3 * sizeof(float)), *Wt = calloc(N * J, sizeof(float)), *V = malloc((size_t)F * N * 3 * sizeof(float));
    cylinder(N, 4, U);
    for (int i = 0; i < N; i++) {
        double a = smoothstep(0.55, 0.85, U[i * 3 + 1]), b = smoothstep(1.25, 1.55, U[i * 3 + 1]);
        Wt[i * J] = (float)(1 - a), Wt[i * J + 1] = (float)(a - b), Wt[i * J + 2] = (float)b;
    }
    double truth_rot[F * J * 4], truth_t[F * 3], truth_pos[F * J * 3];
    double *nodes = malloc((size_t)F * (J - 1) * per * 3 * sizeof(double));
    int64_t off[F + 1];
    for (int t = 0; t < F; t++) {
        double ang[3] = {0.2 * (t + 1), -0.5 * (t + 1), 0.4 * (t + 1)}; /* about z, x, z */
        double *r = truth_rot + t * J * 4;
        r[0] = cos(ang[0] / 2), r[1] = 0, r[2] = 0, r[3] = sin(ang[0] / 2);
        r[4] = cos(ang[1] / 2), r[5] = sin(ang[1] / 2), r[6] = 0, r[7] = 0;
        r[8] = cos(ang[2] / 2), r[9] = 0, r[10] = 0, r[11] = sin(ang[2] / 2);
        r[12] = 1, r[13] = r[14] = r[15] = 0;
        truth_t[t * 3] = 0.05 * t, truth_t[t * 3 + 1] = 0, truth_t[t * 3 + 2] = -0.03 * t;
        double G[J * 9];
        sb_fk(&tree, r, truth_t + t * 3, truth_pos + t * J * 3, G);
        /* the frame's skeleton: samples along each segment */
        off[t] = (int64_t)t * (J - 1) * per;
        for (int j = 1; j < J; j++)
            for (int k = 0; k < per; k++) {
                double s = k / (double)(per - 1);
                for (int c = 0; c < 3; c++)
                    nodes[(off[t] + (j - 1) * per + k) * 3 + c] = (1 - s) * truth_pos[(t * J + par[j]) * 3 + c] + s * truth_pos[(t * J + j) * 3 + c];
            }
        for (int i = 0; i < N; i++)
            for (int c = 0; c < 3; c++) {
                double acc = 0;
                for (int j = 0; j < J; j++) {
                    double x = truth_pos[(t * J + j) * 3 + c];
                    for (int k = 0; k < 3; k++) x += G[j * 9 + c * 3 + k] * (U[i * 3 + k] - X[j * 3 + k]);
                    acc += Wt[i * J + j] * x;
                }
                V[((size_t)t * N + i) * 3 + c] = (float)acc;
            }
    }
    off[F] = (int64_t)F * (J - 1) * per;
    SbIkOptions o;
    sb_ik_defaults(&o);
    o.steps = 150;
    SbIkResult r;
    char err[256];
    CHECK_MSG(sb_ik_solve(&tree, F, nodes, off, N, U, Wt, V, &o, &r, err, sizeof err) == 0, "%s", err);
    double worst = 0;
    for (int k = 0; k < F * J * 3; k++) worst = fmax(worst, fabs(r.positions[k] - truth_pos[k]));
    CHECK_MSG(worst < 0.02, "joint error %g", worst);
    /* the rotations themselves (the leaf's is free: only its sign convention and identity matter) */
    for (int t = 0; t < F; t++)
        for (int j = 0; j < 3; j++) {
            double dot = 0;
            for (int k = 0; k < 4; k++) dot += r.rotations[(t * J + j) * 4 + k] * truth_rot[(t * J + j) * 4 + k];
            CHECK_MSG(fabs(dot) > 0.999, "frame %d joint %d: |<q, q_true>| = %g", t, j, fabs(dot));
        }
    /* the objective's floor at the truth: the points fit exactly, the Chamfer term keeps the
     * nodes inside segments at their distance from the nearest joint */
    for (int t = 0; t < F; t++) {
        double floor = 0;
        int M = (int)(off[t + 1] - off[t]);
        for (int m = 0; m < M; m++) {
            double best = INFINITY;
            for (int j = 0; j < J; j++) {
                double d = 0;
                for (int c = 0; c < 3; c++) d += pow(nodes[(off[t] + m) * 3 + c] - truth_pos[(t * J + j) * 3 + c], 2);
                best = fmin(best, d);
            }
            floor += best / M;
        }
        CHECK_MSG(r.loss[t] < floor + 1e-4, "frame %d loss %g, the truth's %g", t, r.loss[t], floor);
    }
    /* a bad tree is refused */
    int32_t bad[J] = {-1, 2, 1, 2};
    SbTree bt = {J, X, bad};
    SbIkResult r2;
    CHECK(sb_ik_solve(&bt, F, nodes, off, N, U, Wt, V, &o, &r2, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "parent") != NULL, "%s", err);
    sb_ik_result_free(&r);
    free(U), free(Wt), free(V), free(nodes);
}

TEST(ssdr_fit_bones_with_true_weights) {
    /* the true weights of an LBS sequence: the bones refit from a weighted-Kabsch start
     * reproduce every frame (the measure the progressive runs use on unseen frames) */
    SbTraj a;
    bent_traj(&a, 10, 400);
    double *T = malloc((size_t)10 * 2 * 12 * sizeof(double));
    char err[256];
    CHECK(sb_ssdr_fit_bones(10, 400, 2, a.rest, a.pos, a.true_weights, 5, T, err, sizeof err) == 0);
    double rmse = sb_lbs_rmse(10, 400, 2, a.rest, a.pos, a.true_weights, T);
    CHECK_MSG(rmse < 1e-4, "RMSE %g with the true weights", rmse);
    /* one pass only stays worse than five: the passes do work */
    double *T1 = malloc((size_t)10 * 2 * 12 * sizeof(double));
    CHECK(sb_ssdr_fit_bones(10, 400, 2, a.rest, a.pos, a.true_weights, 1, T1, err, sizeof err) == 0);
    CHECK(sb_lbs_rmse(10, 400, 2, a.rest, a.pos, a.true_weights, T1) >= rmse);
    free(T), free(T1);
    sb_traj_free(&a);
}

TEST(ssdr_random_start_deterministic) {
    SbTraj a;
    bent_traj(&a, 6, 200);
    SbClusters c1, c2, c3;
    char err[256];
    CHECK(sb_cluster_random(6, 200, a.rest, a.pos, 4, 7, &c1, err, sizeof err) == 0);
    CHECK(sb_cluster_random(6, 200, a.rest, a.pos, 4, 7, &c2, err, sizeof err) == 0);
    CHECK(sb_cluster_random(6, 200, a.rest, a.pos, 4, 8, &c3, err, sizeof err) == 0);
    CHECK(c1.nbones == 4 && memcmp(c1.labels, c2.labels, 200 * sizeof(int32_t)) == 0);
    CHECK(memcmp(c1.labels, c3.labels, 200 * sizeof(int32_t)) != 0);
    int used[4] = {0};
    for (int i = 0; i < 200; i++) used[c1.labels[i]] = 1;
    CHECK(used[0] && used[1] && used[2] && used[3]);
    sb_clusters_free(&c3);
    CHECK(sb_cluster_random(6, 200, a.rest, a.pos, 0, 7, &c3, err, sizeof err) == -1);
    sb_clusters_free(&c1), sb_clusters_free(&c2);
    sb_traj_free(&a);
}

TEST(ssdr_knn_grid_matches_brute_force) {
    /* clustered, uneven points (a grid's hard case): the grid kNN's distances equal brute force's */
    enum { N = 700, k = 8 };
    float *p = malloc(N * 3 * sizeof(float));
    uint64_t s = 5;
    for (int i = 0; i < N; i++) {
        double scale = i < N / 2 ? 0.05 : 3.0;
        for (int c = 0; c < 3; c++) p[i * 3 + c] = (float)(scale * urand(&s) + (i < N / 2 ? 1.0 : 0.0));
    }
    int32_t *nb = malloc(N * k * sizeof(int32_t));
    CHECK(sb_knn(N, p, k, nb) == 0);
    for (int i = 0; i < N; i++) {
        double best[k];
        for (int a = 0; a < k; a++) best[a] = INFINITY;
        for (int j = 0; j < N; j++) {
            if (j == i) continue;
            double d = 0;
            for (int c = 0; c < 3; c++) d += ((double)p[i * 3 + c] - p[j * 3 + c]) * ((double)p[i * 3 + c] - p[j * 3 + c]);
            for (int a = 0; a < k; a++)
                if (d < best[a]) {
                    for (int b = k - 1; b > a; b--) best[b] = best[b - 1];
                    best[a] = d;
                    break;
                }
        }
        for (int a = 0; a < k; a++) {
            int j = nb[i * k + a];
            double d = 0;
            for (int c = 0; c < 3; c++) d += ((double)p[i * 3 + c] - p[j * 3 + c]) * ((double)p[i * 3 + c] - p[j * 3 + c]);
            CHECK_MSG(j != i && fabs(d - best[a]) <= 1e-12, "point %d neighbor %d: %g vs %g", i, a, d, best[a]);
            if (j == i || fabs(d - best[a]) > 1e-12) return;
        }
    }
    free(p), free(nb);
}

TEST(ssdr_cli_gt_with_true_tree_ik) {
    /* a tiny benchmark character: SSDR beside its true rig, and the IK on the true tree finds the
     * true joints (the rest joints recovered from frame 0's transforms) */
    char dir[64], cmd[1024], out[8192];
    tmpdir_make(dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             "%s dataset motion --category humanoid --out %s/bench --frames 4 --views 2 --size 8 --grid 24 --heldout none "
             "--motion cmu_01_01 --no-progress 2>&1",
             test_anima_bin(), dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd,
             "%s skelebones --gt %s/bench/gt.h5 --bones 6 --iters 3 --ik-true-tree --no-skeleton --ik-steps 80 --ik-points 150 "
             "--out %s/rig --no-progress 2>&1",
             test_anima_bin(), dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    const char *p = strstr(out, "ik_joint_err "), *q = strstr(out, "% of the diagonal");
    CHECK_MSG(p && q, "%s", out);
    if (p && q) {
        const char *paren = strstr(p, "(");
        double pct = paren ? atof(paren + 1) : 100;
        CHECK_MSG(pct < 1.0, "IK joint error %g%% of the diagonal: %s", pct, out);
    }
    CHECK_MSG(strstr(out, "true_rig_rmse ") != NULL, "%s", out);
    char path[160];
    snprintf(path, sizeof path, "%s/rig/rig.h5", dir);
    hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(h >= 0 && H5Lexists(h, "ik", H5P_DEFAULT) > 0 && H5Lexists(h, "ik/rotations", H5P_DEFAULT) > 0);
    if (h >= 0) H5Fclose(h);
    /* --ik-true-tree without --gt is an argument error */
    snprintf(cmd, sizeof cmd, "%s skelebones --traj %s/none.h5 --ik-true-tree --out %s/x 2>&1", test_anima_bin(), dir, dir);
    CHECK(test_run_capture(cmd, out, sizeof out) == 2);
    tmpdir_remove(dir);
}

/* RMSE of the first n points of t (F × N) under r's weights and bones */
static double clean_rmse(const SbTraj *t, int64_t n, const SbResult *r) {
    int F = t->nframes, B = r->skin.nbones;
    double s = 0;
    for (int f = 0; f < F; f++)
        for (int64_t i = 0; i < n; i++)
            for (int a = 0; a < 3; a++) {
                double acc = 0;
                for (int j = 0; j < B; j++) {
                    const double *T = r->skin.transforms + ((size_t)f * B + j) * 12;
                    const float *u = t->rest + i * 3;
                    acc += r->skin.weights[i * B + j] * (T[a * 4] * u[0] + T[a * 4 + 1] * u[1] + T[a * 4 + 2] * u[2] + T[a * 4 + 3]);
                }
                double e = acc - t->pos[((size_t)f * t->npoints + i) * 3 + a];
                s += e * e;
            }
    return sqrt(s / ((double)F * n));
}

TEST(ssdr_transparent_points_follow_the_bones) {
    /* a bent cylinder (400 points, opacity 1) and 100 transparent points (opacity 0.01) whose
     * trajectories are noise, as a gs4d fit's unconstrained Gaussians: with min_opacity the
     * clusters and bones come from the opaque points alone and reproduce them as if the noise
     * were not there; the transparent ones get valid weights for those bones. With every point
     * fitted (min_opacity 0) the noise spoils the fit of the clean ones. */
    enum { F = 10, NC = 400, NX = 100, N = NC + NX, K = 2 };
    SbTraj c;
    bent_traj(&c, F, NC);
    SbTraj t = {0};
    t.nframes = F, t.npoints = N;
    t.rest = malloc((size_t)N * 3 * sizeof(float)), t.pos = malloc((size_t)F * N * 3 * sizeof(float));
    t.opacity = malloc((size_t)N * sizeof(float));
    uint64_t s = 77;
    for (int i = 0; i < N; i++) {
        for (int a = 0; a < 3; a++)
            t.rest[i * 3 + a] = i < NC ? c.rest[i * 3 + a] : (float)(a == 1 ? 2 * urand(&s) : 0.5 * urand(&s) - 0.25);
        for (int f = 0; f < F; f++)
            for (int a = 0; a < 3; a++)
                t.pos[((size_t)f * N + i) * 3 + a] = i < NC ? c.pos[((size_t)f * NC + i) * 3 + a] : (float)(2 * urand(&s) - 1);
        t.opacity[i] = i < NC ? 1.0f : 0.01f;
    }
    snprintf(t.source, sizeof t.source, "noisy cylinder");
    SbOptions o;
    sb_options_defaults(&o);
    o.cluster.bones = K, o.ssdr.iters = 10;
    char err[256];
    SbResult r, r0, rc;
    CHECK(o.min_opacity == 0); /* off unless asked for */
    o.min_opacity = 0.2;
    CHECK_MSG(sb_run(&t, &o, &r, err, sizeof err) == 0, "%s", err);
    CHECK(r.fitted && r.nfitted == NC && r.skin.npoints == N && r.clusters.npoints == N);
    for (int i = 0; i < N && r.fitted; i++) CHECK(r.fitted[i] == (i < NC));
    for (int i = 0; i < N; i++) {
        double sum = 0;
        for (int j = 0; j < K; j++) {
            CHECK(r.skin.weights[i * K + j] >= 0);
            sum += r.skin.weights[i * K + j];
        }
        CHECK_NEAR(sum, 1, 1e-5);
        CHECK(r.clusters.labels[i] >= 0 && r.clusters.labels[i] < K);
    }
    /* the same fit as the clean cylinder alone */
    SbTraj cc = c;
    cc.opacity = NULL;
    CHECK_MSG(sb_run(&cc, &o, &rc, err, sizeof err) == 0, "%s", err);
    double e = clean_rmse(&t, NC, &r), ec = clean_rmse(&c, NC, &rc);
    CHECK_MSG(fabs(e - ec) < 1e-6 && e < 2e-3, "opaque points' RMSE %g, the clean cylinder's %g", e, ec);
    o.min_opacity = 0;
    CHECK_MSG(sb_run(&t, &o, &r0, err, sizeof err) == 0, "%s", err);
    CHECK(!r0.fitted && r0.nfitted == N);
    double e0 = clean_rmse(&t, NC, &r0);
    printf("    clean points RMSE %.3g (opaque fit), %.3g (all fitted)\n", e, e0);
    CHECK_MSG(e0 > 3 * e, "every point fitted: the clean points' RMSE %g against %g", e0, e);
    /* the weights for given bones: the true ones come back from the true transforms */
    float *W = malloc((size_t)NC * 2 * sizeof(float));
    CHECK(sb_ssdr_weights(F, NC, 2, 2, c.rest, c.pos, c.true_transforms, W, err, sizeof err) == 0);
    double we = 0;
    for (int k = 0; k < NC * 2; k++) we = fmax(we, fabs(W[k] - c.true_weights[k]));
    CHECK_MSG(we < 1e-3, "weights for the true bones off by %g", we);
    /* too few opaque points for the bones: an error naming the threshold */
    o.min_opacity = 0.2, o.cluster.bones = 64;
    for (int i = 0; i < N; i++) t.opacity[i] = i < 100 ? 1.0f : 0.0f;
    SbResult rf;
    CHECK(sb_run(&t, &o, &rf, err, sizeof err) == -1 && strstr(err, "opacity >= 0.2"));
    free(W);
    sb_result_free(&r), sb_result_free(&r0), sb_result_free(&rc);
    sb_traj_free(&t), sb_traj_free(&c);
}
