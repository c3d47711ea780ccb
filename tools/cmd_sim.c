/* tools/cmd_sim.c — `anima sim --scene FILE.json --out DIR [--steps N] [--quiet] [--video KIND]`:
 * run a scene (sim/scene.h) and write its frames (and their video, DIR/video.{mp4,gif}); and `anima sim skinning OUT.h5 [options]`: write a
 * skinning file (datasets/corpus/skinning_file.h) from a procedural shape, the format `anima physskin
 * skin` writes from the network. Bad scene fields exit 1 with the file and key path. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "datasets/geometry/geometry.h"
#include "datasets/mesh/gaussian_ply.h"
#include "datasets/render/image.h"
#include "datasets/render/video.h"
#include "models/gaussians/rasterize.h"
#include "sim/scene.h"
#include "sim/skinning.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

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

static const char *const KINDS[] = {"bones", "rbf", NULL}, *const ZERO_ONE[] = {"0", "1", NULL};

static int cmd_skinning(int argc, char **argv) {
    SimProceduralOptions o;
    sim_procedural_defaults(&o);
    o.normalize = true; /* as scenes: rbf weights summing to one (sim/skinning.h) */
    int64_t handles = o.handles, seed = (int64_t)o.seed, cub = o.cubature_res, mres = o.mesh_res;
    const char *normalize = "1";
    const CmdArg args[] = {
        {"--category", CMD_ARG_STRING, &o.category, "NAME", "procedural shape category (datasets/geometry/procedural.h)"},
        {"--kind", CMD_ARG_CHOICE, &o.kind, "K", "weights: bones or rbf", .choices = KINDS},
        {"--handles", CMD_ARG_INT, &handles, "N", "skinning handles", 1, -1},
        {"--seed", CMD_ARG_INT, &seed, "S", "shape seed", 0, -1},
        {"--cubature-res", CMD_ARG_INT, &cub, "R", "cubature grid resolution", 1, -1},
        {"--mesh-res", CMD_ARG_INT, &mres, "R", "surface mesh grid resolution", 1, -1},
        {"--normalize", CMD_ARG_CHOICE, &normalize, "0|1", "rbf: weights summing to one", .choices = ZERO_ONE},
        {0}};
    const CmdArgSpec spec = {"anima sim skinning", "OUT.h5 [options]",
                             "writes a skinning file (datasets/corpus/skinning_file.h) from a procedural shape", args, NULL, 1, 1};
    const char *pos[1];
    int rc = cmd_args_parse(&spec, argc, argv, 2, stderr, pos, NULL);
    if (rc) return rc == CMD_ARGS_HELP ? 0 : 2;
    argv[2] = (char *)pos[0];
    o.handles = (int)handles, o.seed = (uint64_t)seed, o.cubature_res = (int)cub, o.mesh_res = (int)mres;
    o.normalize = normalize[0] == '1';
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

/* Object k's bound Gaussians of frames 0..frames-1 (sim/scene.c writes frame_NNNNN_gaussians_K.ply)
 * rendered by the 3DGS rasterizer (models/gaussians/rasterize.h) over white to
 * gaussians_K_NNNNN.png, through the scene's eye and target when it gives them, else a camera
 * framing the first frame's means (eye placed as the scene places its own; its output size and
 * fov). */
static int render_gaussians(const SimScene *sc, const char *out, int k, int64_t frames, char *err, size_t errlen) {
    DsCamera cam;
    char path[4300];
    for (int64_t f = 0; f < frames; f++) {
        DsGaussians g;
        snprintf(path, sizeof path, "%s/frame_%05lld_gaussians_%d.ply", out, (long long)f, k);
        if (ds_gaussians_read(path, &g, err, errlen)) return -1;
        int64_t n = g.n, K = ds_gaussians_sh_count(g.sh_degree);
        if (f == 0) {
            /* the box of the means from their 1st to 99th percentile: a fitted set's few stray
             * Gaussians would otherwise shrink the object in the frame (none: the unit box) */
            double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, c[3], e;
            if (ds_points_percentile_box(g.xyz, n, lo, hi)) {
                ds_gaussians_free(&g);
                return base_errf(err, errlen, "out of memory");
            }
            ds_box_center_extent(lo, hi, c, &e);
            cam = sim_scene_camera(sc, c, e);
        }
        TensorScope *ts = tensor_scope_begin();
        GsGaussians gs = {tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, g.xyz),
                          tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, g.scale),
                          tensor_from_data(TENSOR_SHAPE(n, 4), TENSOR_F32, g.rot),
                          tensor_from_data(TENSOR_SHAPE(n, 1), TENSOR_F32, g.opacity),
                          tensor_from_data(TENSOR_SHAPE(n, K, 3), TENSOR_F32, g.sh)};
        ds_gaussians_free(&g);
        const double white[3] = {1, 1, 1};
        bool prev = ag_no_grad_begin();
        Tensor *img = tensor_contiguous(gs_render(&gs, &cam, white).image);
        ag_no_grad_end(prev);
        DsImageF im = {(int)img->shape[1], (int)img->shape[0], 3, (float *)tensor_f32(img)};
        snprintf(path, sizeof path, "%s/gaussians_%d_%05lld.png", out, k, (long long)f);
        int rc = ds_imagef_write(path, &im, err, errlen);
        tensor_scope_end(ts);
        if (rc) return -1;
    }
    return 0;
}

int cmd_sim(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "skinning")) return cmd_skinning(argc, argv);
    const char *scene = NULL, *out = NULL;
    int64_t steps = -1;
    bool quiet = false;
    const char *video = "auto";
    const CmdArg args[] = {
        {"--scene", CMD_ARG_STRING, &scene, "FILE.json", "the scene (sim/scene.h; scenes/*.json)", .required = true},
        {"--out", CMD_ARG_STRING, &out, "DIR", "frames go here (created if missing)", .required = true},
        {"--steps", CMD_ARG_INT, &steps, "N", "steps to run instead of the scene's", 1, -1},
        {"--quiet", CMD_ARG_FLAG, &quiet, NULL, "no progress on stderr"},
        {"--video", CMD_ARG_CHOICE, &video, "KIND", CMD_VIDEO_HELP " of the PNG frames: DIR/video.{mp4,gif} (default auto)",
         .choices = DS_VIDEO_KINDS},
        {0}};
    const CmdArgSpec spec = {"anima sim", "--scene FILE.json --out DIR [options]", "runs a scene and writes its frames",
                             args, "  anima sim skinning OUT.h5 [options] writes a skinning file (anima sim skinning --help)\n",
                             .keys = sim_scene_schema(), .keys_title = "scene keys (the JSON file --scene names; scenes/*.json):"};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    Progress pg = {.tty = isatty(STDERR_FILENO), .quiet = quiet};
    char err[2048];
    SimScene sc;
    if (sim_scene_load(scene, &sc, err, sizeof err)) {
        fprintf(stderr, "anima sim: %s\n", err);
        return 2; /* the scene is the command's config: a config error, as for the other commands */
    }
    if (steps > 0) sc.steps = steps;
    if (cmd_make_dirs(out) != 0) { /* parents too, as the other commands' --out */
        fprintf(stderr, "anima sim: cannot create the output directory %s (%s)\n", out, strerror(errno));
        sim_scene_free(&sc);
        return 1;
    }
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
    if (sc.rig.object >= 0) /* rig-complementary dynamics (sim/rig.h) */
        printf("  rig: secondary displacement's projection onto the rig space at most %.3g (mass-weighted, over the "
               "frames); secondary kinetic energy max %.4g J, last step %.4g J (%s/kinetic.png); modes %d of %d\n",
               r.rig_projection_max, r.rig_kinetic_max, r.rig_kinetic_end, out, r.rig_modes_kept, r.rig_modes);
    int vrc = 0;
    char vpath[4200];
    snprintf(vpath, sizeof vpath, "%s/video", out);
    if (sc.output.png) /* the renders as a video at the scene's own rate (a frame every output.every steps) */
        vrc = cmd_write_video("anima sim", out, "frame_", ".png", (int)r.frames, 1.0 / (sc.dt * (double)sc.output.every),
                              video, vpath);
    else if (ds_video_kind(video) != DS_VIDEO_NONE && ds_video_kind(video) != DS_VIDEO_AUTO)
        fprintf(stderr, "anima sim: no video: the scene writes no PNG frames (output.png false)\n"), vrc = 1;
    for (int k = 0; k < sc.nobjects && sc.output.png; k++) { /* the bound Gaussians, rendered */
        if (!sc.objects[k].gaussians[0]) continue;
        if (render_gaussians(&sc, out, k, r.frames, err, sizeof err)) {
            fprintf(stderr, "anima sim: rendering the Gaussians: %s\n", err);
            sim_scene_free(&sc);
            return 1;
        }
        char prefix[64];
        snprintf(prefix, sizeof prefix, "gaussians_%d_", k);
        snprintf(vpath, sizeof vpath, "%s/gaussians_%d", out, k);
        printf("  gaussians of object %d: %s/frame_NNNNN_gaussians_%d.ply, rendered as %s/%sNNNNN.png\n", k, out, k, out,
               prefix);
        vrc |= cmd_write_video("anima sim", out, prefix, ".png", (int)r.frames, 1.0 / (sc.dt * (double)sc.output.every),
                               video, vpath);
    }
    sim_scene_free(&sc);
    return vrc;
}
