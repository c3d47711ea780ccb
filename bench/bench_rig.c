/* bench/bench_rig.c — `make bench`'s rig line (issue 21): ms per frame of one object driven by its
 * rig (sim/rig.h: a procedural quadruped trotting, x = X + u_r(t) + B_comp z) against the same
 * scene without the rig: the same object (skinning, cubature, material, pose), the same floor and
 * gravity, and the same output per frame (the vertex positions, sim_object_vertices). Both stand
 * on the floor (the lowest rest vertex on it) and run BENCH_WARMUP frames (default 240, 4 s)
 * untimed first, so the timed frames of the plain object are its settled contact with the floor
 * rather than a drop's impacts (which flattered the rig before: a median impact frame costs more
 * than a rig frame) — the cheapest frames a plain scene has. The two run frame by frame,
 * alternating. One line:
 *   case sim_rig_frame <ms rigged> (cpu) plain <ms> (cpu) ratio <r> (cpu) rig_advance <ms>
 *        newton <it rigged> <it plain> hessians <rigged> <plain> <frames> mean_cpu <rigged> <plain> <ratio>
 * medians over BENCH_FRAMES frames (default 60), wall clock and CPU time (the CPU ratio is the one
 * to read on a loaded machine); Newton iterations and elastic Hessians per frame are means, and so
 * is mean_cpu: the median frame assembles no elastic Hessian (fewer than half the frames do, each
 * ~5 ms), the mean carries them. With BENCH_VERBOSE, per scene the frames and their mean CPU by
 * Newton iterations and elastic Hessians (stderr): where the two scenes' medians come from (rig-22:
 * at equal iterations the rigged frame costs ~5% more; the gap is the iteration mix). */
#include <math.h>
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

/* the quadruped (rbf 16 handles, as the drop benchmark's cactus), its pose, standing on a floor */
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
    pose->scale = 0.6;
    if (sim_object_init(o, &sk, &mat, pose, err, sizeof err)) die("init", err);
    sim_skinning_free(&sk);
    /* the floor at the lowest rest vertex: the pose's translation moves the object onto it */
    double ymin = INFINITY;
    for (int64_t v = 0; v < o->nv; v++) ymin = fmin(ymin, o->Xv[3 * v + 1]);
    sim_object_free(o);
    pose->translate[1] = -ymin;
    if (sim_skinning_procedural(&po, &sk, err, sizeof err)) die("skinning", err);
    if (sim_object_init(o, &sk, &mat, pose, err, sizeof err)) die("init", err);
    sim_skinning_free(&sk);
    o->gravity[1] = -9.81;
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
    if (sim_object_add_plane(o, &floor, err, sizeof err)) die("plane", err);
}

int main(void) {
    int frames = getenv("BENCH_FRAMES") ? atoi(getenv("BENCH_FRAMES")) : 60;
    int warm = getenv("BENCH_WARMUP") ? atoi(getenv("BENCH_WARMUP")) : 240;
    if (frames < 5) frames = 5;
    if (warm < 0) warm = 0;
    double dt = 1 / 60.0, *w[2], *c[2], *adv = malloc(sizeof(double) * (size_t)frames);
    char err[512];
    SimObject o[2]; /* [plain, rigged] */
    SimPose pose[2];
    double *x[2];
    long it[2] = {0, 0}, hs[2] = {0, 0};
    /* BENCH_VERBOSE: frames and CPU by (iterations, Hessians), iterations 1..7 (7: 7 or more), Hessians 0 / ≥ 1 */
    enum { MIX_IT = 8 };
    int mix_n[2][MIX_IT][2] = {{{0}}};
    double mix_c[2][MIX_IT][2] = {{{0}}};
    for (int k = 0; k < 2; k++) {
        object(&o[k], &pose[k]);
        w[k] = malloc(sizeof(double) * (size_t)frames), c[k] = malloc(sizeof(double) * (size_t)frames);
        x[k] = malloc(sizeof(double) * 3 * (size_t)o[k].nv);
    }
    SimRig r;
    if (sim_rig_init(&r, &o[1], "quadruped", 2, 32, 0, (double[]){0, 0, 0}, 1, &pose[1], err, sizeof err))
        die("rig", err);
    if (sim_rig_set_clip(&r, "trot", 30, (int)ceil((warm + frames) * dt * 30) + 4, 1, -1, err, sizeof err))
        die("clip", err);
    /* the two scenes frame by frame, alternating which goes first, so that the shared machine's
     * load falls on both alike */
    for (int f = -warm; f < frames; f++)
        for (int q = 0; q < 2; q++) {
            int k = (f & 1) ? 1 - q : q;
            double w0 = base_now(), c0 = base_cpu_now(), a = 0;
            if (k) {
                sim_rig_advance(&r, &o[1], (f + warm + 1) * dt);
                a = base_now() - w0;
            }
            if (sim_object_step(&o[k], dt, err, sizeof err)) die("step", err);
            sim_object_vertices(&o[k], x[k]); /* the frame's output */
            if (f < 0) continue;
            w[k][f] = 1e3 * (base_now() - w0), c[k][f] = 1e3 * (base_cpu_now() - c0);
            if (k) adv[f] = 1e3 * a;
            it[k] += o[k].last.iters, hs[k] += o[k].last.hessians;
            int mi = o[k].last.iters < MIX_IT - 1 ? o[k].last.iters : MIX_IT - 1, mh = o[k].last.hessians > 0;
            mix_n[k][mi][mh]++, mix_c[k][mi][mh] += c[k][f];
        }
    double mw[2], mc[2], mean[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        mw[k] = bench_median(w[k], frames), mc[k] = bench_median(c[k], frames);
        for (int f = 0; f < frames; f++) mean[k] += c[k][f] / frames;
    }
    printf("case sim_rig_frame %.3f (cpu %.3f) plain %.3f (cpu %.3f) ratio %.2f (cpu %.2f; target <= 1.2) "
           "rig_advance %.3f newton %.2f %.2f hessians %.2f %.2f %d mean_cpu %.3f %.3f %.2f\n",
           mw[1], mc[1], mw[0], mc[0], mw[1] / mw[0], mc[1] / mc[0], bench_median(adv, frames),
           (double)it[1] / frames, (double)it[0] / frames, (double)hs[1] / frames, (double)hs[0] / frames, frames,
           mean[1], mean[0], mean[1] / mean[0]);
    if (getenv("BENCH_VERBOSE"))
        for (int k = 1; k >= 0; k--)
            for (int mi = 0; mi < MIX_IT; mi++)
                for (int mh = 0; mh < 2; mh++)
                    if (mix_n[k][mi][mh])
                        fprintf(stderr, "%s: %d%s iterations, %s elastic Hessian: %d frames, mean cpu %.3f ms\n",
                                k ? "rigged" : "plain", mi, mi == MIX_IT - 1 ? "+" : "", mh ? "with" : "no", mix_n[k][mi][mh],
                                mix_c[k][mi][mh] / mix_n[k][mi][mh]);
    sim_rig_free(&r);
    for (int k = 0; k < 2; k++) sim_object_free(&o[k]), free(w[k]), free(c[k]), free(x[k]);
    free(adv);
    return 0;
}
