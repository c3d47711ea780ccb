/* tools/cmd_animate_phys.c — `anima animate --physics CONFIG` (cmd_animate_phys.h): physics
 * secondary motion on top of PartMM animation (issue 21 item 4). The animation's bone
 * transforms are the prescribed rig motion u_r(t) (LBS with the Skelebones rig's weights), the
 * PhysSkin fields of the rig's rest mesh are the subspace, and the complementary response B_comp z of
 * sim/rig_lbs.h (sim/rig.h's projected subspace) is added to the Gaussians: x = X + u_r(t) + B z(t). The Gaussians' u_r is the
 * animation's own output (pos), untouched, so z = 0 reproduces PartMM exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "datasets/config.h"
#include "models/physskin/infer.h"
#include "models/skelebones/rig_file.h"
#include "sim/bindings.h"
#include "sim/rig.h"
#include "sim/rig_lbs.h"
#include "tools/cmd.h"
#include "tools/cmd_animate_phys.h"

typedef struct {
    char ckpt[1024];
    SimMaterial material;
    double fps, gravity[3];
    int64_t substeps, cubature;
    bool secondary, rig_strain;
} PhysConfig;

#define P(m) offsetof(PhysConfig, m)
static const DsConfigField MATERIAL_FIELDS[] = {
    {"E", DS_CFG_FLOAT, offsetof(SimMaterial, E), "5e5", 1, 1e12, .help = "Young's modulus (Pa; the rig's units taken as metres)"},
    {"nu", DS_CFG_FLOAT, offsetof(SimMaterial, nu), "0.3", -0.99, 0.495, .help = "Poisson ratio"},
    {"rho", DS_CFG_FLOAT, offsetof(SimMaterial, rho), "1000", 1e-3, 1e6, .help = "density (kg/m^3)"},
    {0}};
static const DsConfigField CMD_ANIMATE_PHYS_SCHEMA[] = {
    {"ckpt", DS_CFG_STRING, P(ckpt), "\"models/physskin/pretrained/rig-small.h5\"", 1, 0, .size = sizeof(((PhysConfig *)0)->ckpt),
     .help = "the PhysSkin checkpoint whose fields of the rig's rest mesh are the subspace"},
    {"material", DS_CFG_OBJECT, P(material), .fields = MATERIAL_FIELDS},
    {"fps", DS_CFG_FLOAT, P(fps), "0", 0, 1000, .help = "frames per second of the animation's motion (0: render.fps)"},
    {"substeps", DS_CFG_INT, P(substeps), "4", 1, 1000, .help = "implicit Euler steps per animation frame"},
    {"gravity", DS_CFG_VEC3, P(gravity), "[0, 0, 0]", -1e3, 1e3, .help = "gravity (m/s^2; the rig carries the body, so it only sags)"},
    {"cubature", DS_CFG_INT, P(cubature), "0", 0, 1e7, .help = "cubature points drawn from the interior candidates (0: all)"},
    {"rig_strain", DS_CFG_BOOL, P(rig_strain), "true", 1, 0,
     .help = "true: the elastic term sees the rig's own strain, the complementary subspace's only driver; "
             "false: only its rotation, which leaves z at 0 (B_comp sees no rig acceleration or gravity: sim/rig_lbs.h)"},
    {"secondary", DS_CFG_BOOL, P(secondary), "true", 1, 0,
     .help = "false: z held at 0 (the rig alone): the output must equal the animation's exactly"},
    {0}};

/* the bone transforms at frame position s ∈ [0, Q − 1], linear between frames (u_r is linear in
 * them, so the rig's points move on the animation's own path through every frame) */
static void pose_at(const float *tb, int Q, int B, double s, double *T) {
    if (s < 0) s = 0;
    if (s > Q - 1) s = Q - 1;
    int f0 = (int)floor(s), f1 = f0 < Q - 1 ? f0 + 1 : f0;
    double a = s - f0;
    for (int k = 0; k < B * 12; k++) T[k] = (1 - a) * tb[(int64_t)f0 * B * 12 + k] + a * tb[(int64_t)f1 * B * 12 + k];
}

int cmd_animate_physics(const char *config, const char *rig_path, int Q, int B, const float *tb, double fps, int64_t n,
                        const float *rest, float *pos, const char *out, bool progress, char *err, size_t errlen) {
    PhysConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    char e2[4096];
    if ((config && *config ? ds_config_load(config, CMD_ANIMATE_PHYS_SCHEMA, &cfg, e2, sizeof e2)
                           : ds_config_parse(NULL, "defaults", CMD_ANIMATE_PHYS_SCHEMA, &cfg, e2, sizeof e2)))
        return base_errf(err, errlen, "--physics: %s", e2);
    if (cfg.fps > 0) fps = cfg.fps;
    SbRigFile rf = {0};
    DsSkinning sk = {0};
    PsSkinner ps;
    bool ps_loaded = false;
    SimObject o = {0};
    SimLbsRig rig = {0};
    SimBinding bind = {0};
    SimRigPoints rp = {0};
    double *P = NULL, *Xobj = NULL, *w = NULL, *dw = NULL, *x = NULL, *T = NULL, *ke = NULL;
    int rc = -1;
    double c0 = base_cpu_now();
    if (sb_rig_file_read(rig_path, &rf, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    if (rf.nbones != B || rf.nfaces < 1) {
        base_errf(err, errlen, "--physics: %s has %d bones and %lld faces (the animation %d bones; the fields need the rest "
                               "mesh's faces)", rig_path, rf.nbones, (long long)rf.nfaces, B);
        goto done;
    }
    /* the subspace: the PhysSkin fields of the rig's rest mesh, in the network's normalized frame
     * (x_n = (x − center)·scale); the object's pose maps it back onto the rig's frame */
    DsMesh mesh = {.nv = rf.npoints, .nf = rf.nfaces, .v = rf.rest, .f = rf.faces};
    if (ps_skinner_load(&ps, cfg.ckpt, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    ps_loaded = true;
    if (ps_skinner_run(&ps, &mesh, rig_path, cfg.cubature, &sk, NULL, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    double c_skin = base_cpu_now() - c0;
    SimPose pose = sim_pose_identity();
    pose.scale = 1 / sk.scale;
    memcpy(pose.translate, sk.center, sizeof pose.translate);
    if (sim_object_init(&o, &sk, &cfg.material, &pose, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    memcpy(o.gravity, cfg.gravity, sizeof o.gravity);
    int64_t np = rf.npoints;
    P = malloc(sizeof(double) * 3 * (size_t)np), Xobj = malloc(sizeof(double) * 3 * (size_t)(n + 1));
    w = malloc(sizeof(double) * (size_t)((n + 1) * sk.m)), dw = malloc(sizeof(double) * 3 * (size_t)((n + 1) * sk.m));
    x = malloc(sizeof(double) * 3 * (size_t)(n + 1)), T = malloc(sizeof(double) * 12 * (size_t)B);
    int64_t nsteps = (int64_t)(Q > 1 ? Q - 1 : 0) * cfg.substeps;
    ke = malloc(sizeof(double) * 2 * (size_t)(nsteps + 1));
    if (!P || !Xobj || !w || !dw || !x || !T || !ke) {
        base_errf(err, errlen, "--physics: out of memory");
        goto done;
    }
    for (int64_t k = 0; k < 3 * np; k++) P[k] = rf.rest[k];
    if (sim_lbs_rig_init(&rig, &o, np, P, rf.weights, B, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    rig.rotation_only = !cfg.rig_strain;
    /* the Gaussians bound at their rest centers, in the skinning's frame */
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) Xobj[3 * i + a] = ((double)rest[3 * i + a] - sk.center[a]) * sk.scale;
    if (sim_skinning_interpolate(&sk, n, Xobj, w, dw) ||
        sim_binding_init(&bind, &o, &pose, n, Xobj, w, dw, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: binding the Gaussians: %s", e2);
        goto done;
    }
    /* the Gaussians' rows projected as the object's were: they see B_comp (sim/rig.h) */
    if (sim_lbs_rig_points(&rig, n, bind.X, &rp, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    sim_rig_points_project(&rig.rig, &rp, bind.X, bind.nb, bind.B, bind.G);
    /* the rig at rest before the first frame, then substeps per frame; frame 0 has z = 0 */
    double dt = 1.0 / (fps * (double)cfg.substeps), bz_max = 0, ke_max = 0, proj_max = 0;
    int failures = 0;
    int64_t iters = 0, step = 0;
    pose_at(tb, Q, B, 0, T);
    sim_lbs_rig_advance(&rig, &o, T);
    ke[0] = 0, ke[nsteps + 1] = 0;
    for (int t = 1; t < Q; t++) {
        for (int64_t s = 1; s <= cfg.substeps; s++) {
            pose_at(tb, Q, B, (t - 1) + (double)s / (double)cfg.substeps, T);
            sim_lbs_rig_advance(&rig, &o, T);
            if (cfg.secondary && sim_object_step(&o, dt, e2, sizeof e2)) {
                base_errf(err, errlen, "--physics: frame %d: %s", t, e2);
                goto done;
            }
            step++;
            failures += o.last.failures, iters += o.last.iters;
            ke[step] = sim_object_energy(&o).kinetic, ke[nsteps + 1 + step] = (double)step * dt;
            ke_max = fmax(ke_max, ke[step]);
            if (cfg.secondary) proj_max = fmax(proj_max, sim_rig_projection(&rig.rig, &o));
        }
        /* B z at the Gaussians: x − X is exactly 0 where z is 0 */
        sim_binding_eval(&bind, o.z, x, NULL);
        float *pt = pos + (int64_t)t * n * 3;
        for (int64_t k = 0; k < 3 * n; k++) {
            double d = x[k] - bind.X[k];
            pt[k] += (float)d;
            if (k % 3 == 2) {
                double l = sqrt((x[k - 2] - bind.X[k - 2]) * (x[k - 2] - bind.X[k - 2]) +
                                (x[k - 1] - bind.X[k - 1]) * (x[k - 1] - bind.X[k - 1]) + d * d);
                bz_max = fmax(bz_max, l);
            }
        }
    }
    double cpu = base_cpu_now() - c0;
    char path[4200];
    snprintf(path, sizeof path, "%s/kinetic.png", out);
    if (nsteps > 0 &&
        sim_rig_write_plot(path, nsteps + 1, ke + nsteps + 1, ke, 1e300, 640, 320, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    int64_t fixed_rows, free_dims; /* the subspace's free coordinates after the rig's rows */
    sim_object_constraint_info(&o, &fixed_rows, &free_dims);
    char js[2048];
    snprintf(js, sizeof js,
             "{\n  \"ckpt\": \"%s\",\n  \"secondary\": %s,\n  \"rig_strain\": %s,\n  \"E\": %.6g,\n  \"nu\": %.6g,\n  \"rho\": %.6g,\n  \"handles\": %lld,\n  \"cubature\": %lld,\n  \"free_modes\": "
             "%lld,\n  \"steps\": %lld,\n  \"dt\": %.6g,\n  \"newton_iters\": %lld,\n  \"newton_failures\": %d,\n"
             "  \"rig_projection_max\": %.6g,\n  \"max_secondary_m\": %.6g,\n  \"max_secondary_pct_diag\": %.6g,\n  \"kinetic_max_J\": %.6g,\n"
             "  \"kinetic_end_J\": %.6g,\n  \"cpu_s_skinning\": %.3f,\n  \"cpu_s_total\": %.3f\n}\n",
             cfg.ckpt, cfg.secondary ? "true" : "false", cfg.rig_strain ? "true" : "false", cfg.material.E, cfg.material.nu, cfg.material.rho, (long long)sk.m, (long long)o.nc, (long long)(free_dims / 3), (long long)nsteps,
             dt, (long long)iters, failures, proj_max, bz_max, 100 * bz_max / o.diag, ke_max, nsteps ? ke[nsteps] : 0.0, c_skin, cpu);
    snprintf(path, sizeof path, "%s/physics.json", out);
    if (cmd_write_text(path, js, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    printf("physics: %lld steps of %.4g s (%lld handles, %lld cubature points), secondary motion up to %.4g m (%.3g%% of "
           "the rest diagonal; its rig-space share %.1e), %d Newton failures, %.2f s cpu (%.2f s of it the fields)\n",
           (long long)nsteps, dt, (long long)sk.m, (long long)o.nc, bz_max, 100 * bz_max / o.diag, proj_max, failures, cpu, c_skin);
    if (progress) fprintf(stderr, "anima animate: physics written to %s/physics.json, %s/kinetic.png\n", out, out);
    rc = 0;
done:
    free(P), free(Xobj), free(w), free(dw), free(x), free(T), free(ke);
    sim_binding_free(&bind);
    sim_rig_points_free(&rp);
    sim_lbs_rig_free(&rig);
    sim_object_free(&o);
    sim_skinning_free(&sk);
    if (ps_loaded) ps_skinner_free(&ps);
    sb_rig_file_free(&rf);
    return rc;
}
