/* tools/cmd_animate_phys.c — `anima animate --physics CONFIG` (cmd_animate_phys.h): physics
 * secondary motion on top of PartMM animation (issue 21 item 4). The program's part: the config,
 * the rig file, and the PhysSkin fields of the rig's rest mesh (models/physskin/infer.h), which the
 * simulator may not compute itself; sim/secondary.h runs the motion, here its figures are written
 * (physics.json, kinetic.png) and printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "datasets/config.h"
#include "models/physskin/infer.h"
#include "models/skelebones/rig_file.h"
#include "sim/rig.h"
#include "sim/secondary.h"
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
    SimSecondaryResult res = {0};
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
    SimSecondaryOptions so = {.material = cfg.material, .fps = fps, .substeps = cfg.substeps, .secondary = cfg.secondary,
                              .rig_strain = cfg.rig_strain};
    memcpy(so.gravity, cfg.gravity, sizeof so.gravity);
    if (sim_secondary_motion(&sk, rf.npoints, rf.rest, rf.weights, B, Q, tb, n, rest, pos, &so, &res, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    double cpu = base_cpu_now() - c0;
    char path[4200];
    snprintf(path, sizeof path, "%s/kinetic.png", out);
    if (res.steps > 0 && sim_rig_write_plot(path, res.steps + 1, res.times, res.kinetic, 1e300, 640, 320, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    char js[2048];
    snprintf(js, sizeof js,
             "{\n  \"ckpt\": \"%s\",\n  \"secondary\": %s,\n  \"rig_strain\": %s,\n  \"E\": %.6g,\n  \"nu\": %.6g,\n  \"rho\": %.6g,\n  \"handles\": %lld,\n  \"cubature\": %lld,\n  \"free_modes\": "
             "%lld,\n  \"steps\": %lld,\n  \"dt\": %.6g,\n  \"newton_iters\": %lld,\n  \"newton_failures\": %d,\n"
             "  \"rig_projection_max\": %.6g,\n  \"max_secondary_m\": %.6g,\n  \"max_secondary_pct_diag\": %.6g,\n  \"kinetic_max_J\": %.6g,\n"
             "  \"kinetic_end_J\": %.6g,\n  \"cpu_s_skinning\": %.3f,\n  \"cpu_s_total\": %.3f\n}\n",
             cfg.ckpt, cfg.secondary ? "true" : "false", cfg.rig_strain ? "true" : "false", cfg.material.E, cfg.material.nu,
             cfg.material.rho, (long long)res.handles, (long long)res.cubature, (long long)res.free_modes, (long long)res.steps,
             res.dt, (long long)res.newton_iters, res.failures, res.projection_max, res.max_displacement,
             100 * res.max_displacement / res.diag, res.kinetic_max, res.steps ? res.kinetic[res.steps] : 0.0, c_skin, cpu);
    snprintf(path, sizeof path, "%s/physics.json", out);
    if (cmd_write_text(path, js, e2, sizeof e2)) {
        base_errf(err, errlen, "--physics: %s", e2);
        goto done;
    }
    printf("physics: %lld steps of %.4g s (%lld handles, %lld cubature points), secondary motion up to %.4g m (%.3g%% of "
           "the rest diagonal; its rig-space share %.1e), %d Newton failures, %.2f s cpu (%.2f s of it the fields)\n",
           (long long)res.steps, res.dt, (long long)res.handles, (long long)res.cubature, res.max_displacement,
           100 * res.max_displacement / res.diag, res.projection_max, res.failures, cpu, c_skin);
    if (progress) fprintf(stderr, "anima animate: physics written to %s/physics.json, %s/kinetic.png\n", out, out);
    rc = 0;
done:
    sim_secondary_free(&res);
    sim_skinning_free(&sk);
    if (ps_loaded) ps_skinner_free(&ps);
    sb_rig_file_free(&rf);
    return rc;
}
