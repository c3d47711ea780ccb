/* tools/cmd_sim.c — `anima sim --scene FILE.json --out DIR [--steps N] [--quiet]`: run a scene
 * (sim/scene.h) and write its frames; and `anima sim skinning OUT.h5 [options]`: write a
 * skinning file (datasets/skinning_file.h) from a procedural shape, the format `anima physskin
 * skin` writes from the network. Bad scene fields exit 1 with the file and key path. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sim/scene.h"
#include "sim/skinning.h"
#include "tools/cmd.h"

static int usage(void) {
    fprintf(stderr,
            "usage: anima sim --scene FILE.json --out DIR [--steps N] [--quiet]\n"
            "       anima sim skinning OUT.h5 [--category NAME] [--kind bones|rbf] [--handles N] [--seed S]\n"
            "                                 [--cubature-res R] [--mesh-res R] [--normalize 0|1]\n");
    return 2;
}

/* Progress on stderr: a bar redrawn in place on a terminal, otherwise a plain line every 10%
 * (logs and pipes get lines, not carriage returns); both with the rate, the ETA and Newton's
 * work on the last step. */
typedef struct {
    int quiet, tty;
    double t0;
    int64_t last_line;
} Progress;

static void progress(void *ctx, int64_t step, int64_t steps, const SimObject *objs, int n) {
    (void)n;
    Progress *pg = ctx;
    if (pg->quiet) return;
    if (pg->tty ? step % 5 && step != steps : step != steps && (step - pg->last_line) * 10 < steps) return;
    pg->last_line = step;
    double el = base_now() - pg->t0, rate = el > 0 ? (double)step / el : 0, eta = rate > 0 ? (double)(steps - step) / rate : 0;
    const char *fail = objs[0].last.failures ? "  FAILURE" : "";
    if (pg->tty) {
        int width = 30, fill = (int)(width * step / steps);
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        fprintf(stderr, "\r\033[Ksim [%s] %lld/%lld  %.1f steps/s  ETA %.0f s  %.2f ms/step  newton %d it%s", bar,
                (long long)step, (long long)steps, rate, eta, 1e3 * objs[0].last.seconds, objs[0].last.iters, fail);
        if (step == steps) fputc('\n', stderr);
    } else
        fprintf(stderr, "sim %lld/%lld (%.0f%%)  %.1f steps/s  ETA %.0f s  %.2f ms/step  newton %d it%s\n", (long long)step,
                (long long)steps, 100.0 * (double)step / (double)steps, rate, eta, 1e3 * objs[0].last.seconds,
                objs[0].last.iters, fail);
}

static int cmd_skinning(int argc, char **argv) {
    if (argc < 3) return usage();
    SimProceduralOptions o;
    sim_procedural_defaults(&o);
    o.normalize = true; /* as scenes: rbf weights summing to one (sim/skinning.h) */
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc) return usage();
        const char *k = argv[i], *v = argv[++i];
        if (!strcmp(k, "--category")) o.category = v;
        else if (!strcmp(k, "--kind")) o.kind = v;
        else if (!strcmp(k, "--handles")) o.handles = atoi(v);
        else if (!strcmp(k, "--seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--cubature-res")) o.cubature_res = atoi(v);
        else if (!strcmp(k, "--mesh-res")) o.mesh_res = atoi(v);
        else if (!strcmp(k, "--normalize") && (!strcmp(v, "0") || !strcmp(v, "1"))) o.normalize = v[0] == '1';
        else return usage();
    }
    char err[1024];
    SimSkinning s;
    if (sim_skinning_procedural(&o, &s, err, sizeof err) || sim_skinning_write(argv[2], &s, err, sizeof err)) {
        fprintf(stderr, "anima sim: %s\n", err);
        return 1;
    }
    printf("%s: %lld handles, %lld cubature points, %lld vertices, %lld triangles (%s)\n", argv[2], (long long)s.m,
           (long long)s.nc, (long long)s.nv, (long long)s.nf, s.source);
    sim_skinning_free(&s);
    return 0;
}

int cmd_sim(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "skinning")) return cmd_skinning(argc, argv);
    const char *scene = NULL, *out = NULL;
    long long steps = -1;
    Progress pg = {.tty = isatty(STDERR_FILENO)};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scene") && i + 1 < argc) scene = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            char *end;
            const char *v = argv[++i];
            steps = strtoll(v, &end, 10);
            if (end == v || *end || steps < 1) {
                fprintf(stderr, "anima sim: --steps: expected a whole number >= 1, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(argv[i], "--quiet")) pg.quiet = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(), 0;
        else return usage();
    }
    if (!scene || !out) return usage();
    char err[2048];
    SimScene sc;
    if (sim_scene_load(scene, &sc, err, sizeof err)) {
        fprintf(stderr, "anima sim: %s\n", err);
        return 1;
    }
    if (steps > 0) sc.steps = steps;
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", scene);
    const char *dir = dirname(dirbuf);
    SimRunReport r;
    pg.t0 = base_now();
    if (sim_scene_run(&sc, dir, out, progress, &pg, &r, err, sizeof err)) {
        if (!pg.quiet && pg.tty) fputc('\n', stderr);
        fprintf(stderr, "anima sim: %s\n", err);
        sim_scene_free(&sc);
        return 1;
    }
    if (strcmp(sc.output.mesh, "none") || sc.output.png)
        printf("anima sim: %lld steps of %g s, %lld frames in %s/ (frame_NNNNN%s%s%s)\n", (long long)r.steps, sc.dt,
               (long long)r.frames, out, strcmp(sc.output.mesh, "none") ? "." : "",
               strcmp(sc.output.mesh, "none") ? sc.output.mesh : "", sc.output.png ? " + .png" : "");
    else
        printf("anima sim: %lld steps of %g s (no frames written: output.mesh \"none\", output.png false)\n",
               (long long)r.steps, sc.dt);
    printf("  ms/step: median %.2f, p90 %.2f, total %.2f s; Newton %.2f it/step, failures %lld (in %lld steps); "
           "max energy rise %.3g J\n",
           r.ms_median, r.ms_p90, r.ms_total / 1e3, r.steps ? (double)r.newton_iters / r.steps : 0,
           (long long)r.newton_failures, (long long)r.steps_with_failures, r.max_energy_rise);
    printf("  CPU ms/step (all threads): median %.2f", r.cpu_ms_median);
    if (isfinite(r.min_distance)) /* IPC contact (sim/world.h): the smallest pair distance must stay > 0 */
        printf("; contact: smallest pair distance %.3g m, CCD-shortened Newton steps %lld", r.min_distance,
               (long long)r.ccd_limited);
    printf("\n");
    sim_scene_free(&sc);
    return 0;
}
