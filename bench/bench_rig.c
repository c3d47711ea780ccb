/* bench/bench_rig.c — `make bench`'s rig line (issue 21): ms per frame of one object driven by its
 * rig (sim/rig.h: a procedural quadruped trotting, x = X + u_r(t) + B z) against the same object
 * and scene without the rig (dropped on the floor under gravity), and the rig's own share of a
 * frame (sim_rig_advance: FK, LBS and F_r at every point, the inertial pull-back). One line:
 *   case sim_rig_frame <ms rigged> <ms plain> ratio <r> rig_advance <ms> <n>
 * medians over BENCH_FRAMES frames (default 60), wall clock (CPU time in parentheses). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_stats.h"
#include "base/clock.h"
#include "sim/rig.h"
#include "sim/skinning.h"
#include "sim/solver.h"

static void die(const char *what, const char *err) {
    fprintf(stderr, "bench_rig: %s: %s\n", what, err);
    exit(1);
}

/* the quadruped (rbf 16 handles, as the drop benchmark's cactus), its pose, on a floor */
static void object(SimObject *o, SimPose *pose) {
    SimProceduralOptions po;
    sim_procedural_defaults(&po);
    po.category = "quadruped", po.seed = 2, po.kind = "rbf", po.handles = 16, po.cubature_res = 30, po.mesh_res = 32;
    po.normalize = true;
    SimSkinning sk;
    char err[256];
    if (sim_skinning_procedural(&po, &sk, err, sizeof err)) die("skinning", err);
    SimMaterial mat = {.E = 5e3, .nu = 0.4, .rho = 1000};
    *pose = sim_pose_identity();
    pose->scale = 0.6, pose->translate[1] = 0.62;
    if (sim_object_init(o, &sk, &mat, pose, err, sizeof err)) die("init", err);
    sim_skinning_free(&sk);
    o->gravity[1] = -9.81;
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
    if (sim_object_add_plane(o, &floor, err, sizeof err)) die("plane", err);
}

int main(void) {
    int frames = getenv("BENCH_FRAMES") ? atoi(getenv("BENCH_FRAMES")) : 60;
    if (frames < 5) frames = 5;
    double dt = 1 / 60.0, *w = malloc(sizeof(double) * (size_t)frames), *c = malloc(sizeof(double) * (size_t)frames);
    double *adv = malloc(sizeof(double) * (size_t)frames);
    double med[2][2];
    char err[512];
    for (int rigged = 0; rigged < 2; rigged++) {
        SimObject o;
        SimPose pose;
        object(&o, &pose);
        SimRig r;
        if (rigged) {
            if (sim_rig_init(&r, &o, "quadruped", 2, 32, 0, (double[]){0, 0, 0}, 1, &pose, err, sizeof err))
                die("rig", err);
            if (sim_rig_set_clip(&r, "trot", 30, frames + 4, 1, -1, err, sizeof err)) die("clip", err);
        }
        for (int f = 0; f < frames; f++) {
            double w0 = base_now(), c0 = base_cpu_now();
            if (rigged) {
                sim_rig_advance(&r, &o, (f + 1) * dt);
                adv[f] = 1e3 * (base_now() - w0);
            }
            if (sim_object_step(&o, dt, err, sizeof err)) die("step", err);
            w[f] = 1e3 * (base_now() - w0), c[f] = 1e3 * (base_cpu_now() - c0);
        }
        med[rigged][0] = bench_median(w, frames), med[rigged][1] = bench_median(c, frames);
        if (rigged) sim_rig_free(&r);
        sim_object_free(&o);
    }
    printf("case sim_rig_frame %.3f (cpu %.3f) plain %.3f (cpu %.3f) ratio %.2f (cpu %.2f; target <= 1.2) "
           "rig_advance %.3f %d\n",
           med[1][0], med[1][1], med[0][0], med[0][1], med[1][0] / med[0][0], med[1][1] / med[0][1],
           bench_median(adv, frames), frames);
    free(w), free(c), free(adv);
    return 0;
}
