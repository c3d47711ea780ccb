/* tests/test_rig_gaussians.c — 3D Gaussians on a rigged object (issue 21; sim/rig.h,
 * sim/bindings.h): x = X + u_r + B z at the Gaussian centers and Σ = A Σ₀ Aᵀ with
 * A = (F_r + (G z)ᵀ) sR, against the rig's own evaluation at the cubature points; and a rigged
 * scene that writes its Gaussians per frame on top of the rig's motion. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mat3.h"
#include "datasets/mesh/gaussian_ply.h"
#include "datasets/mesh/mesh.h"
#include "datasets/render/image.h"
#include "sim/bindings.h"
#include "sim/rig.h"
#include "sim/scene.h"
#include "tests/test.h"

static void cov(const double q[4], const double s[3], double C[9]) {
    double R[9];
    base_quat_to_mat3(q, R);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            C[3 * i + j] = 0;
            for (int k = 0; k < 3; k++) C[3 * i + j] += R[3 * i + k] * s[k] * s[k] * R[3 * j + k];
        }
}

/* Gaussians at the skinning's cubature points (its frame), anisotropic and turned, written to a
 * temporary PLY; path gets its name */
static void write_cubature_gaussians(const SimSkinning *sk, char *path, DsGaussians *g) {
    CHECK(ds_gaussians_alloc(g, sk->nc, 0) == 0);
    for (int64_t c = 0; c < sk->nc; c++) {
        for (int a = 0; a < 3; a++) g->xyz[3 * c + a] = (float)sk->cub_x[3 * c + a];
        g->scale[3 * c] = logf(0.02f), g->scale[3 * c + 1] = logf(0.01f), g->scale[3 * c + 2] = logf(0.005f);
        g->rot[4 * c] = 0.9f, g->rot[4 * c + 1] = 0.1f * (float)(c % 3), g->rot[4 * c + 2] = 0.3f, g->rot[4 * c + 3] = -0.2f;
        g->opacity[c] = 1, g->sh[3 * c] = 0.5f;
    }
    strcpy(path, "/tmp/anima-riggs-XXXXXX.ply");
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0);
    close(fd);
    char err[512];
    CHECK_MSG(ds_gaussians_write(path, g, err, sizeof err) == 0, "%s", err);
}

/* On a rigged quadruped mid-trot: the Gaussians at the cubature points land where the solver's
 * cubature points are (X + u_r + B z, u_r the rig's own sim_rig_eval there), with the covariance of
 * the total deformation F_r + (G z)ᵀ; B z = 0 gives the rig's LBS exactly. */
TEST(rig_gaussians_follow_rig_and_fields) {
    SimProceduralOptions po;
    sim_procedural_defaults(&po);
    po.category = "quadruped", po.kind = "rbf", po.handles = 10, po.cubature_res = 16, po.mesh_res = 32, po.seed = 1;
    po.normalize = true;
    char err[1024];
    SimSkinning sk;
    CHECK_MSG(sim_skinning_procedural(&po, &sk, err, sizeof err) == 0, "%s", err);
    SimMaterial mat = {.E = 2e4, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    pose.scale = 0.5, pose.translate[1] = 0.6;
    sim_pose_euler(&pose, (double[]){0, 30, 0});
    SimObject o;
    CHECK_MSG(sim_object_init(&o, &sk, &mat, &pose, err, sizeof err) == 0, "%s", err);
    SimRig r;
    CHECK_MSG(sim_rig_init(&r, &o, "quadruped", 1, 32, 0, (double[]){0, 0, 0}, 1, &pose, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(sim_rig_set_clip(&r, "trot", 30, 60, 1, -1, err, sizeof err) == 0, "%s", err);
    char path[64];
    DsGaussians g;
    write_cubature_gaussians(&sk, path, &g);
    SimGaussianBinding gb;
    CHECK_MSG(sim_gaussians_bind(&gb, path, &sk, &o, &pose, err, sizeof err) == 0, "%s", err);
    unlink(path);
    int64_t n = gb.bind.n, nc = o.nc;
    CHECK(n == nc);
    SimRigPoints pts;
    CHECK_MSG(sim_rig_points_init(&r, n, gb.bind.X, &pts, err, sizeof err) == 0, "%s", err);
    /* the Gaussians' rows projected as the object's were (B_comp, sim/rig.h) */
    sim_rig_points_project(&r, &pts, gb.bind.X, gb.bind.nb, gb.bind.B, gb.bind.G);
    double *xo = malloc(sizeof(double) * 3 * (size_t)nc), worst_o = 0;
    double *u = malloc(sizeof(double) * 3 * (size_t)n), *F = malloc(sizeof(double) * 9 * (size_t)n);
    double *xz = malloc(sizeof(double) * 3 * (size_t)n), *Fz = malloc(sizeof(double) * 9 * (size_t)n);
    double sR[9];
    for (int k = 0; k < 9; k++) sR[k] = pose.scale * pose.R[k];
    double worst_u = 0, worst_F = 0, worst_x = 0, worst_c = 0, motion = 0, secondary = 0;
    for (int pass = 0; pass < 2; pass++) { /* pass 0: z = 0 (the rig alone); pass 1: some B z on top */
        sim_rig_advance(&r, &o, 0.5);
        for (int64_t k = 0; k < o.n; k++) o.z[k] = 0;
        if (pass)
            for (int64_t k = 0; k < 4 * o.m; k++) o.z[k] = 0.03 * sin(1.7 * (double)k), o.z[o.nb + k] = 0.02 * cos(k);
        sim_rig_points_eval(&r, &pts, r.local, r.root, u, F);
        sim_gaussians_update_rigged(&gb, &o, u, F);
        sim_binding_eval(&gb.bind, o.z, xz, Fz);
        sim_object_cubature_positions(&o, xo); /* X + u_r + B_comp z at the object's own rows */
        for (int64_t k = 0; k < 3 * nc; k++) worst_o = fmax(worst_o, fabs(gb.out.xyz[k] - xo[k]));
        for (int64_t c = 0; c < nc; c++) {
            /* the rig at the same rest points as the solver's cubature points (sim_rig_eval) */
            for (int a = 0; a < 3; a++) worst_u = fmax(worst_u, fabs(u[3 * c + a] - r.uc[3 * c + a]));
            for (int k = 0; k < 9; k++) worst_F = fmax(worst_F, fabs(F[9 * c + k] - r.F[9 * c + k]));
            double A[9], Ft[9], q0[4], s0[3], C0[9], T[9], Ce[9], Cg[9], q[4], s[3];
            for (int k = 0; k < 9; k++) Ft[k] = r.F[9 * c + k] + Fz[9 * c + k] - (k % 4 == 0);
            base_mat3_mul(Ft, sR, A);
            for (int a = 0; a < 3; a++) {
                double xe = gb.bind.X[3 * c + a] + r.uc[3 * c + a] + (xz[3 * c + a] - gb.bind.X[3 * c + a]);
                worst_x = fmax(worst_x, fabs(gb.out.xyz[3 * c + a] - xe));
                motion = fmax(motion, fabs(r.uc[3 * c + a]));
                if (pass) secondary = fmax(secondary, fabs(xz[3 * c + a] - gb.bind.X[3 * c + a]));
            }
            for (int a = 0; a < 4; a++) q0[a] = g.rot[4 * c + a], q[a] = gb.out.rot[4 * c + a];
            for (int a = 0; a < 3; a++) s0[a] = exp(g.scale[3 * c + a]), s[a] = exp(gb.out.scale[3 * c + a]);
            cov(q0, s0, C0);
            for (int i = 0; i < 3; i++) /* Ce = A C0 Aᵀ */
                for (int j = 0; j < 3; j++) {
                    T[3 * i + j] = 0;
                    for (int k = 0; k < 3; k++) T[3 * i + j] += A[3 * i + k] * C0[3 * k + j];
                }
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    Ce[3 * i + j] = 0;
                    for (int k = 0; k < 3; k++) Ce[3 * i + j] += T[3 * i + k] * A[3 * j + k];
                }
            cov(q, s, Cg);
            double cn = 0, dn = 0;
            for (int k = 0; k < 9; k++) cn = fmax(cn, fabs(Ce[k])), dn = fmax(dn, fabs(Cg[k] - Ce[k]));
            worst_c = fmax(worst_c, dn / cn);
        }
    }
    printf("    rig at the Gaussians vs at the cubature points: |Δu| %.1e m, |ΔF| %.1e; mean %.1e m, covariance %.1e "
           "(rel.); rig motion %.3f m, secondary %.3f m\n",
           worst_u, worst_F, worst_x, worst_c, motion, secondary);
    printf("    Gaussian means vs the object's own cubature positions (X + u_r + B_comp z): %.1e m\n", worst_o);
    CHECK(motion > 0.01 && secondary > 0.001);
    CHECK_MSG(worst_o < 0.02 * secondary, "%g", worst_o); /* the weights' interpolation at the points */
    CHECK_MSG(worst_u < 1e-9 && worst_F < 1e-9, "%g %g", worst_u, worst_F); /* the same weights, the same LBS */
    CHECK_MSG(worst_x < 1e-5, "%g", worst_x);                              /* f32 output */
    CHECK_MSG(worst_c < 1e-4, "%g", worst_c);
    free(u), free(F), free(xz), free(Fz), free(xo);
    sim_rig_points_free(&pts);
    sim_gaussians_free(&gb);
    ds_gaussians_free(&g);
    sim_rig_free(&r);
    sim_object_free(&o);
    sim_skinning_free(&sk);
}

/* A rigged scene whose object carries Gaussians: one per mesh vertex (the procedural shape's own
 * frame, where the skinning lives), written per frame; each lands on its vertex of the frame's mesh
 * (X + u_r + B z at both). A binding that left out u_r would miss by the rig's pose. */
TEST(rig_gaussians_scene_frames) {
    DsProceduralShape sh;
    char err[1024];
    CHECK_MSG(ds_procedural_make("quadruped", 1, 32, &sh, err, sizeof err) == 0, "%s", err);
    DsGaussians g;
    CHECK(ds_gaussians_alloc(&g, sh.mesh.nv, 0) == 0);
    for (int64_t v = 0; v < sh.mesh.nv; v++) {
        for (int a = 0; a < 3; a++) g.xyz[3 * v + a] = sh.mesh.v[3 * v + a], g.scale[3 * v + a] = logf(0.01f);
        g.rot[4 * v] = 1, g.opacity[v] = 1;
    }
    char dir[] = "/tmp/anima-riggs-scene-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char gpath[256], path[512];
    snprintf(gpath, sizeof gpath, "%s/g.ply", dir);
    CHECK_MSG(ds_gaussians_write(gpath, &g, err, sizeof err) == 0, "%s", err);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"dt\": 0.02, \"steps\": 20, \"gravity\": [0, -9.8, 0],"
             " \"objects\": [{\"skinning\": {\"source\": \"procedural\", \"category\": \"quadruped\", \"seed\": 1,"
             "   \"kind\": \"rbf\", \"handles\": 10, \"cubature_res\": 16, \"mesh_res\": 32},"
             "   \"material\": {\"E\": 3e4}, \"pose\": {\"scale\": 0.5, \"translate\": [0, 0.5, 0]},"
             "   \"gaussians\": \"%s\"}],"
             " \"rig\": {\"object\": 0, \"clip\": \"trot\","
             "   \"keys\": [{\"bone\": \"tail\", \"t\": 0.2, \"axis\": [0, 1, 0], \"deg\": 50}]},"
             " \"output\": {\"every\": 10, \"mesh\": \"ply\", \"png\": false}}",
             gpath);
    SimScene sc;
    CHECK_MSG(sim_scene_parse(text, "inline", &sc, err, sizeof err) == 0, "%s", err);
    char out[300];
    snprintf(out, sizeof out, "%s/out", dir);
    SimRunReport rep;
    CHECK_MSG(sim_scene_run(&sc, dir, out, NULL, NULL, &rep, err, sizeof err) == 0, "%s", err);
    CHECK(rep.frames == 3 && rep.newton_failures == 0);
    /* frame 0: B z = 0 and the rig posed at t = 0 (the trot's first frame, the tail key held before
     * its time), so the Gaussians are exactly the rig's LBS at the vertices; later frames add B z,
     * where the Gaussians' interpolated weights differ from the vertices' own (mostly on the thin
     * legs and tail, which the 12³ cubature grid barely samples) */
    double worst0 = 0, posed0 = 0, mean_late = 0, moved = 0;
    for (int f = 0; f < 3; f++) {
        DsMesh m;
        DsGaussians gf;
        snprintf(path, sizeof path, "%s/frame_%05d.ply", out, f);
        CHECK_MSG(ds_mesh_read(path, &m, err, sizeof err) == 0, "%s", err);
        unlink(path);
        snprintf(path, sizeof path, "%s/frame_%05d_gaussians_0.ply", out, f);
        CHECK_MSG(ds_gaussians_read(path, &gf, err, sizeof err) == 0, "%s", err);
        unlink(path);
        CHECK(gf.n == sh.mesh.nv && m.nv == sh.mesh.nv);
        double sum = 0;
        for (int64_t v = 0; v < m.nv; v++) {
            double d2 = 0;
            for (int a = 0; a < 3; a++) {
                double X = 0.5 * sh.mesh.v[3 * v + a] + (a == 1 ? 0.5 : 0); /* the scene's pose */
                d2 += (gf.xyz[3 * v + a] - m.v[3 * v + a]) * (gf.xyz[3 * v + a] - m.v[3 * v + a]);
                if (f == 0) posed0 = fmax(posed0, fabs(m.v[3 * v + a] - X)), worst0 = fmax(worst0, fabs(gf.xyz[3 * v + a] - m.v[3 * v + a]));
                moved = fmax(moved, fabs(m.v[3 * v + a] - X));
            }
            sum += sqrt(d2);
        }
        if (f > 0) mean_late = fmax(mean_late, sum / (double)m.nv);
        ds_mesh_free(&m), ds_gaussians_free(&gf);
    }
    printf("    Gaussian means vs the frame's vertices: frame 0 max %.1e m (rig pose %.3f m off rest); frames 1-2 mean "
           "%.1e m (vertices up to %.3f m off rest)\n",
           worst0, posed0, mean_late, moved);
    CHECK(posed0 > 0.05);
    CHECK_MSG(worst0 < 1e-5, "%g", worst0); /* f32 files */
    CHECK_MSG(mean_late < 0.03 * moved, "%g vs %g", mean_late, moved);
    snprintf(path, sizeof path, "%s/kinetic.png", out);
    unlink(path), rmdir(out), unlink(gpath), rmdir(dir);
    ds_gaussians_free(&g);
    ds_procedural_free(&sh);
    sim_scene_free(&sc);
}

/* `anima sim` on a rigged scene with Gaussians: the PLYs per frame and their renders (the 3DGS
 * rasterizer, gaussians_0_NNNNN.png: the colored Gaussians over white, moving with the rig) */
TEST(rig_gaussians_sim_cli_renders) {
    DsProceduralShape sh;
    char err[1024];
    CHECK_MSG(ds_procedural_make("quadruped", 1, 32, &sh, err, sizeof err) == 0, "%s", err);
    DsGaussians g;
    CHECK(ds_gaussians_alloc(&g, sh.mesh.nv, 0) == 0);
    for (int64_t v = 0; v < sh.mesh.nv; v++) {
        for (int a = 0; a < 3; a++) g.xyz[3 * v + a] = sh.mesh.v[3 * v + a], g.scale[3 * v + a] = logf(0.03f);
        g.rot[4 * v] = 1, g.opacity[v] = 3, g.sh[3 * v] = -1.5f; /* dark red-free: rgb = C0 f + 0.5 */
    }
    char dir[] = "/tmp/anima-riggs-cli-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[512], cmd[1024], out[8192];
    snprintf(path, sizeof path, "%s/g.ply", dir);
    CHECK_MSG(ds_gaussians_write(path, &g, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/scene.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("{\"dt\": 0.02, \"steps\": 10, \"objects\": [{\"skinning\": {\"source\": \"procedural\","
                     " \"category\": \"quadruped\", \"seed\": 1, \"kind\": \"rbf\", \"handles\": 8, \"cubature_res\": 14,"
                     " \"mesh_res\": 32}, \"material\": {\"E\": 3e4}, \"pose\": {\"scale\": 0.5, \"translate\": [0, 0.5, 0]},"
                     " \"gaussians\": \"g.ply\"}], \"rig\": {\"object\": 0, \"clip\": \"trot\"},"
                     " \"output\": {\"every\": 5, \"mesh\": \"none\", \"png\": true, \"width\": 64, \"height\": 48}}",
                     f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s sim --scene %s --out %s/out --quiet --video none 2>&1", test_anima_bin(), path, dir);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "gaussians of object 0"), "rc %d: %s", rc, out);
    int64_t dark[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        DsImage im;
        snprintf(path, sizeof path, "%s/out/gaussians_0_%05d.png", dir, k);
        CHECK_MSG(ds_image_read(path, &im, err, sizeof err) == 0, "%s", err);
        for (int64_t p = 0; p < (int64_t)im.w * im.h; p++) dark[k] += im.data[p * im.channels] < 128;
        ds_image_free(&im);
        snprintf(path, sizeof path, "%s/out/frame_%05d_gaussians_0.ply", dir, k);
        CHECK(access(path, F_OK) == 0);
    }
    printf("    dark pixels of the Gaussian renders: %lld, %lld, %lld of %d\n", (long long)dark[0], (long long)dark[1],
           (long long)dark[2], 64 * 48);
    CHECK_MSG(dark[0] > 100 && dark[1] > 100 && dark[2] > 100, "the frames are kept in %s", dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dark[0] > 100 && system(cmd) != 0) {
        /* a leftover /tmp folder */
    }
    ds_gaussians_free(&g);
    ds_procedural_free(&sh);
}
