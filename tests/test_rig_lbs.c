/* tests/test_rig_lbs.c — rig-complementary dynamics for a rig of bone transforms and point weights
 * (sim/rig_lbs.h: PartMM-animated Skelebones rigs, issue 21 item 4): u_r and F_r against a rigid
 * motion and against finite differences of u_r, the secondary motion the rig's accelerations
 * excites (none in the rig space) and its exact rows; and `anima animate --physics` on a small
 * benchmark, whose output with z held at 0 is PartMM's, byte for byte, and whose secondary
 * displacement has no rig component. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mat3.h"
#include "sim/bindings.h"
#include "sim/rig_lbs.h"
#include "tests/test.h"

typedef struct {
    SimSkinning sk;
    SimObject o;
    double *P;
    float *W;
    int64_t np;
} Bar;

/* a procedural snake (a long body) with a two-bone rig at its vertices: w₁ rises smoothly along
 * x across the middle */
static void bar_init(Bar *b) {
    SimProceduralOptions po;
    sim_procedural_defaults(&po);
    po.category = "snake", po.kind = "rbf", po.handles = 10, po.cubature_res = 16, po.mesh_res = 32, po.seed = 1;
    po.normalize = true;
    char err[1024];
    CHECK_MSG(sim_skinning_procedural(&po, &b->sk, err, sizeof err) == 0, "%s", err);
    SimMaterial mat = {.E = 2e4, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    pose.scale = 0.5, pose.translate[1] = 0.4;
    CHECK_MSG(sim_object_init(&b->o, &b->sk, &mat, &pose, err, sizeof err) == 0, "%s", err);
    b->np = b->o.nv;
    b->P = malloc(sizeof(double) * 3 * (size_t)b->np), b->W = malloc(sizeof(float) * 2 * (size_t)b->np);
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t v = 0; v < b->np; v++) lo = fmin(lo, b->o.Xv[3 * v]), hi = fmax(hi, b->o.Xv[3 * v]);
    for (int64_t v = 0; v < b->np; v++) {
        memcpy(b->P + 3 * v, b->o.Xv + 3 * v, 3 * sizeof(double));
        double s = (b->o.Xv[3 * v] - 0.5 * (lo + hi)) / (0.3 * (hi - lo));
        s = s < -1 ? -1 : s > 1 ? 1 : s;
        double w1 = 0.5 + 0.75 * s - 0.25 * s * s * s; /* smoothstep on [-1, 1] */
        b->W[2 * v] = (float)(1 - w1), b->W[2 * v + 1] = (float)w1;
    }
}

static void bar_free(Bar *b) {
    sim_object_free(&b->o);
    sim_skinning_free(&b->sk);
    free(b->P), free(b->W);
}

/* T = [R | t] of a rotation by deg about z through point c, then a translation d */
static void turn(double deg, const double c[3], const double d[3], double *T) {
    double a = deg * M_PI / 180, R[9] = {cos(a), -sin(a), 0, sin(a), cos(a), 0, 0, 0, 1};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) T[4 * i + j] = R[3 * i + j];
        T[4 * i + 3] = c[i] + d[i] - (R[3 * i] * c[0] + R[3 * i + 1] * c[1] + R[3 * i + 2] * c[2]);
    }
}

/* every bone on one rigid motion: u_r is that motion exactly and F_r its rotation (the weights'
 * gradients sum to zero); two different bones: F_r is the finite difference of X + u_r */
TEST(rig_lbs_rigid_motion_and_F) {
    Bar b;
    bar_init(&b);
    SimLbsRig r;
    char err[512];
    CHECK_MSG(sim_lbs_rig_init(&r, &b.o, b.np, b.P, b.W, 2, err, sizeof err) == 0, "%s", err);
    double T[24], c[3] = {0, 0.4, 0}, d[3] = {0.1, 0.05, -0.02};
    turn(35, c, d, T), turn(35, c, d, T + 12);
    sim_lbs_rig_advance(&r, &b.o, T);
    double eu = 0, eF = 0;
    for (int64_t q = 0; q < b.o.nc; q++) {
        const double *X = b.o.Xc + 3 * q;
        for (int i = 0; i < 3; i++) {
            double x = T[4 * i] * X[0] + T[4 * i + 1] * X[1] + T[4 * i + 2] * X[2] + T[4 * i + 3];
            eu = fmax(eu, fabs(b.o.rig_uc[3 * q + i] - (x - X[i])));
            for (int j = 0; j < 3; j++) eF = fmax(eF, fabs(r.rig.F[9 * q + 3 * i + j] - T[4 * i + j]));
        }
    }
    printf("    one rigid motion: |u_r − (T X̃ − X)| %.1e m, |F_r − R| %.1e\n", eu, eF);
    CHECK_MSG(eu < 1e-6 && eF < 1e-5, "%g %g", eu, eF); /* the weights are f32: rows sum to 1 within 6e-8 */
    /* two bones: the tail half turned 40° about the middle */
    turn(0, c, d, T), turn(40, c, d, T + 12);
    sim_lbs_rig_advance(&r, &b.o, T);
    SimSkinning pts = {.m = 2, .nc = b.np, .cub_x = b.P};
    pts.cub_w = malloc(sizeof(double) * 2 * (size_t)b.np), pts.cub_dw = calloc((size_t)b.np * 6, sizeof(double));
    for (int64_t k = 0; k < 2 * b.np; k++) pts.cub_w[k] = b.W[k];
    double h = 1e-3 * b.o.diag, worst = 0, scale = 0;
    for (int64_t q = 0; q < b.o.nc; q += 7) {
        double Xs[6], ws[4], us[6], Ffd[9];
        for (int a = 0; a < 3; a++) {
            for (int s = 0; s < 2; s++) {
                memcpy(Xs + 3 * s, b.o.Xc + 3 * q, 3 * sizeof(double));
                Xs[3 * s + a] += s ? h : -h;
            }
            CHECK(sim_skinning_interpolate(&pts, 2, Xs, ws, NULL) == 0);
            sim_lbs_rig_eval(2, T, 2, Xs, ws, NULL, us, NULL);
            for (int i = 0; i < 3; i++) Ffd[3 * i + a] = (i == a) + (us[3 + i] - us[i]) / (2 * h);
        }
        for (int k = 0; k < 9; k++) worst = fmax(worst, fabs(Ffd[k] - r.rig.F[9 * q + k])), scale = fmax(scale, fabs(Ffd[k]));
    }
    printf("    two bones: |F_r − FD of X + u_r| %.1e (|F| up to %.2f)\n", worst, scale);
    CHECK_MSG(worst < 2e-3 * scale, "%g", worst);
    free(pts.cub_w), free(pts.cub_dw);
    sim_lbs_rig_free(&r);
    bar_free(&b);
}

/* the tail swung and stopped: the rig's changing strain excites B_comp z, which keeps the object's
 * exact rows at zero, has no component in the rig space (sim/rig.h's projection: ‖P u_c‖_M /
 * ‖u_c‖_M below 1e-6, where the learned B gives 0.9 and more) and whose energy decays once the rig
 * holds */
TEST(rig_lbs_secondary_motion) {
    Bar b;
    bar_init(&b);
    for (int i = 0; i < 3; i++) b.o.gravity[i] = 0;
    SimLbsRig r;
    char err[512];
    CHECK_MSG(sim_lbs_rig_init(&r, &b.o, b.np, b.P, b.W, 2, err, sizeof err) == 0, "%s", err);
    double T[24], c[3] = {0, 0.4, 0}, z0[3] = {0, 0, 0}, dt = 0.01;
    double ke_moving = 0, ke_end = 0, row_worst = 0, zmax = 0, proj = 0;
    for (int s = 0; s <= 150; s++) {
        double t = s * dt, deg = t < 0.3 ? 60 * sin(M_PI * t / 0.6) * sin(M_PI * t / 0.6) : 60;
        turn(0, c, z0, T), turn(deg, c, z0, T + 12);
        sim_lbs_rig_advance(&r, &b.o, T);
        if (s == 0) continue;
        CHECK_MSG(sim_object_step(&b.o, dt, err, sizeof err) == 0, "%s", err);
        for (int k = 0; k < b.o.rig_nrows; k++)
            for (int i = 0; i < 3; i++) {
                const double *row = b.o.rig_rows + k * b.o.nb;
                double dot = 0, nr = 0;
                for (int64_t j = 0; j < b.o.nb; j++) dot += row[j] * b.o.z[i * b.o.nb + j], nr += fabs(row[j]);
                row_worst = fmax(row_worst, fabs(dot) / nr);
            }
        for (int64_t k = 0; k < b.o.n; k++) zmax = fmax(zmax, fabs(b.o.z[k]));
        proj = fmax(proj, sim_rig_projection(&r.rig, &b.o));
        double ke = sim_object_energy(&b.o).kinetic;
        if (t <= 0.35) ke_moving = fmax(ke_moving, ke);
        ke_end = ke;
    }
    printf("    secondary kinetic energy: %.3g J while the rig moves, %.3g J 1.2 s after it stops; |rows·z| %.1e; "
           "rig-space share of B z %.1e\n",
           ke_moving, ke_end, row_worst, proj);
    CHECK(zmax > 1e-4 && ke_moving > 0);
    CHECK_MSG(ke_end < 0.2 * ke_moving, "%g vs %g", ke_end, ke_moving);
    CHECK_MSG(row_worst < 1e-8, "%g", row_worst);
    CHECK_MSG(proj < 1e-6, "%g", proj);
    sim_lbs_rig_free(&r);
    bar_free(&b);
}

/* a bent pose held from the start (no acceleration): with the full F_r the elastic term pushes
 * back against the LBS blend zone's strain and z moves; with its rotation only the posed shape is
 * an equilibrium and z stays 0 */
TEST(rig_lbs_rotation_only_leaves_a_held_pose_alone) {
    double zmax[2] = {0, 0};
    for (int rot = 0; rot < 2; rot++) {
        Bar b;
        bar_init(&b);
        for (int i = 0; i < 3; i++) b.o.gravity[i] = 0;
        SimLbsRig r;
        char err[512];
        CHECK_MSG(sim_lbs_rig_init(&r, &b.o, b.np, b.P, b.W, 2, err, sizeof err) == 0, "%s", err);
        r.rotation_only = rot;
        double T[24], c[3] = {0, 0.4, 0}, z0[3] = {0, 0, 0};
        turn(0, c, z0, T), turn(70, c, z0, T + 12);
        for (int s = 0; s < 20; s++) {
            sim_lbs_rig_advance(&r, &b.o, T);
            CHECK_MSG(sim_object_step(&b.o, 0.01, err, sizeof err) == 0, "%s", err);
        }
        for (int64_t k = 0; k < b.o.n; k++) zmax[rot] = fmax(zmax[rot], fabs(b.o.z[k]));
        sim_lbs_rig_free(&r);
        bar_free(&b);
    }
    printf("    held bent pose, 20 steps: max |z| %.2e with the rig's strain, %.2e with its rotation only\n", zmax[0],
           zmax[1]);
    CHECK(zmax[0] > 1e-3);
    CHECK_MSG(zmax[1] < 1e-9, "%g", zmax[1]);
}

static int file_nonempty(const char *dir, const char *name) {
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* the bytes of a file (malloc'd, *n its size), NULL if unreadable */
static unsigned char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*n + 1);
    if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) free(b), b = NULL;
    fclose(f);
    return b;
}

static int same_file(const char *a, const char *b) {
    long na = -1, nb = -2;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, (size_t)na) == 0;
    free(x), free(y);
    return same;
}

/* `anima animate --physics`: with z held at 0 every Gaussian PLY is PartMM's own, byte for byte;
 * with physics, frame 0 is still PartMM's (z = 0 there) and later frames move off it */
TEST(rig_lbs_animate_physics_cli) {
    char dir[64] = "/tmp/anima-test-physanim-XXXXXX", cmd[2048], out[16384];
    if (!mkdtemp(dir)) abort();
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 %s dataset motion --category quadruped --out %s/b --frames 8 --views 6 --size 16 --grid 32 "
             "--motion walk --no-progress 2>&1 && OMP_NUM_THREADS=2 %s skelebones --gt %s/b/gt.h5 --bones 8 --iters 5 --ik-steps 20 "
             "--ik-points 100 --out %s/rig --no-progress 2>&1",
             test_anima_bin(), dir, test_anima_bin(), dir, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    if (rc) return;
    const char *runs[3] = {"plain", "held", "phys"};
    char cfg[128];
    snprintf(cfg, sizeof cfg, "%s/held.json", dir);
    FILE *f = fopen(cfg, "w");
    CHECK(f && fputs("{\"secondary\": false}", f) >= 0 && fclose(f) == 0);
    for (int k = 0; k < 3; k++) {
        const char *opt = k == 0 ? "" : k == 1 ? "--physics " : "--physics ''";
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=2 %s animate --rig %s/rig/rig.h5 --motion heldout --out %s/%s --no-progress --video none "
                 "--set ik.steps=20 %s%s 2>&1",
                 test_anima_bin(), dir, dir, runs[k], opt, k == 1 ? cfg : "");
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
        if (k) CHECK_MSG(strstr(out, "physics: ") && strstr(out, " 0 Newton failures"), "%s", out);
        if (k == 2) printf("%s", out);
    }
    char a[256], b[256], d[128];
    int same_held = 1, same_phys0 = 0, moved = 0;
    for (int t = 0; t < 8; t++) {
        snprintf(a, sizeof a, "%s/plain/gaussians/f%04d.ply", dir, t);
        snprintf(b, sizeof b, "%s/held/gaussians/f%04d.ply", dir, t);
        same_held &= same_file(a, b);
        snprintf(b, sizeof b, "%s/phys/gaussians/f%04d.ply", dir, t);
        if (t == 0) same_phys0 = same_file(a, b);
        else moved += !same_file(a, b);
    }
    CHECK_MSG(same_held, "with z held at 0 the PLYs differ from PartMM's");
    CHECK(same_phys0);
    CHECK_MSG(moved == 7, "%d of 7 frames moved", moved);
    snprintf(d, sizeof d, "%s/phys", dir);
    CHECK(file_nonempty(d, "physics.json") && file_nonempty(d, "kinetic.png") && file_nonempty(d, "frames/f0007.png"));
    /* the secondary displacement has no rig component (B_comp, sim/rig.h): its largest mass-weighted
     * rig-space share over the steps */
    char pj[256];
    long njs = 0;
    snprintf(pj, sizeof pj, "%s/physics.json", d);
    char *js = (char *)slurp(pj, &njs);
    const char *key = js ? (js[njs] = 0, strstr(js, "\"rig_projection_max\": ")) : NULL;
    double proj = key ? atof(key + strlen("\"rig_projection_max\": ")) : 1;
    CHECK_MSG(key && proj < 1e-6, "rig_projection_max %g", proj);
    free(js);
    /* a missing config is refused with its name */
    snprintf(cmd, sizeof cmd, "%s animate --rig %s/rig/rig.h5 --motion heldout --out %s/x --set ik.steps=2 --physics %s/none.json 2>&1",
             test_anima_bin(), dir, dir, dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc != 0 && strstr(out, "none.json"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
}
