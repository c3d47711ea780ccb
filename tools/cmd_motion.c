/* tools/cmd_motion.c — `anima dataset motion`: the multi-view motion benchmark of one character
 * (datasets/motion/bench.h): a training and a held-out motion rendered with alpha from a ring and
 * an upper ring of cameras into the D-NeRF / nerfstudio layout, with gt.h5.
 *
 *   anima dataset motion --category C --out DIR [--seed S] [--motion M] [--heldout M|none]
 *                        [--frames F] [--views V] [--size PX] [--monocular [--orbit DEG]] [options]
 *
 * Argument errors exit 2, file errors 1, SIGINT/SIGTERM 128+signal (the transforms JSONs are
 * written last, so an interrupted folder has none). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/progress.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/motion.h"
#include "datasets/render/video.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

#define NAME "anima dataset motion"

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }

static void progress(void *ctx, int64_t done, int64_t total) {
    base_progress_update((BaseProgress *)ctx, done, total, 0, 0, false);
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

int cmd_dataset_motion(int argc, char **argv) {
    DsMotionBenchOptions o;
    ds_motion_bench_defaults(&o);
    int64_t frames = o.frames, heldout_frames = 0, views = o.views, size = o.size, grid = o.grid, ss = o.supersample,
            hold = o.holdout_every, valev = o.val_every, bvh_start = -1;
    double fps = o.fps, fov = o.fov_deg;
    /* NAN: not given (they need --monocular) */
    double orbit = NAN, orbit_el = NAN, orbit_bob = NAN;
    bool lit = false, no_progress = false, mono = false;
    const char *video = "auto";
    int ncat;
    const char *const *cats = ds_procedural_categories(&ncat);
    char command[4096];
    size_t used = (size_t)snprintf(command, sizeof command, "anima dataset");
    for (int i = 0; i < argc && used < sizeof command; i++)
        used += (size_t)snprintf(command + used, sizeof command - used, " %s", argv[i]);
    const CmdArg args[] = {
        {"--category", CMD_ARG_CHOICE, &o.category, "C", "the character's procedural category", 0, 0, cats, true},
        {"--out", CMD_ARG_STRING, &o.out, "DIR", "the benchmark folder (the held-out motion in DIR/heldout)", 0, 0,
         NULL, true},
        {"--seed", CMD_ARG_UINT, &o.seed, "S", "character, texture and motion variation (default 0)"},
        {"--motion", CMD_ARG_STRING, &o.motion, "M", "the training motion (default: the category's, see below; repertoire: every motion of the category in seeded 1.5 s segments, the held-out clip left out)"},
        {"--heldout", CMD_ARG_STRING, &o.heldout_motion, "M", "the held-out motion, or none (default: the category's)"},
        {"--frames", CMD_ARG_INT, &frames, "F", "frames of the training motion (default 48)", 1, 9999},
        {"--heldout-frames", CMD_ARG_INT, &heldout_frames, "F", "frames of the held-out motion (default 48, or --frames when fewer); both clips start at their own start, so a longer training motion keeps the held-out clip", 1, 9999},
        {"--views", CMD_ARG_INT, &views, "V", "cameras: 2/3 on a low ring, 1/3 on an upper ring (default 24)", 2, 99},
        {"--size", CMD_ARG_INT, &size, "PX", "image side in pixels (default 128)", 8, 4096},
        {"--fps", CMD_ARG_DOUBLE, &fps, "R", "frames per second of the motions (default 30)", 1, 1000},
        {"--grid", CMD_ARG_INT, &grid, "G", "marching-cubes cells of the character (default 96)", 16, 512},
        {"--supersample", CMD_ARG_INT, &ss, "S", "S x S samples per pixel for anti-aliased alpha (default 2)", 1, 8},
        {"--holdout-every", CMD_ARG_INT, &hold, "K", "view i is held out when i mod K = K-1 (default 6)", 2, 99},
        {"--val-every", CMD_ARG_INT, &valev, "K", "transforms_val.json keeps every K-th frame (default 4)", 1, 9999},
        {"--fov", CMD_ARG_DOUBLE, &fov, "DEG", "field of view (default 40)", 10, 120},
        {"--lit", CMD_ARG_FLAG, &lit, NULL, "Lambert shading under a fixed light (default: the albedo, unlit)"},
        {"--monocular", CMD_ARG_FLAG, &mono, NULL, "one training camera orbiting the character, one image per frame (train/fNNNN_orbit.png); val/test: the held-out ring views, as without it"},
        {"--orbit", CMD_ARG_DOUBLE, &orbit, "DEG", "with --monocular: azimuth the camera sweeps over the clip (default 360: one turn, no pose repeated)", 0, 3600, .above_min = true},
        {"--orbit-elevation", CMD_ARG_DOUBLE, &orbit_el, "DEG", "with --monocular: the orbit's mean elevation (default 20)", -60, 60},
        {"--orbit-bob", CMD_ARG_DOUBLE, &orbit_bob, "DEG", "with --monocular: the elevation's swing, two periods over the clip (default 12)", 0, 20},
        {"--bvh-dir", CMD_ARG_STRING, &o.bvh_dir, "DIR", "folder of the named CMU clips (default " DS_MOTION_BVH_DIR ")"},
        {"--map", CMD_ARG_STRING, &o.bvh_map, "FILE.json", "mapping JSON {\"rig bone\": \"BVH joint\", ...} for a BVH motion (datasets/motion/motion.h; default: the CMU/Boxing names, humanoids)"},
        {"--bvh-start", CMD_ARG_INT, &bvh_start, "N", "first source frame of a BVH clip (default: the clip's window)", 0,
         1e9},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {"--video", CMD_ARG_CHOICE, &video, "KIND",
         CMD_VIDEO_HELP ": a preview, camera 0 over time, as DIR/preview.{mp4,gif} (and DIR/heldout/) (default auto)",
         .choices = DS_VIDEO_KINDS},
        {0}};
    char footer[2048] = "motions (the category's gait / its held-out default first):\n";
    for (int c = 0; c < ncat; c++) {
        const char *const *m = ds_motion_names(cats[c], NULL);
        size_t n = strlen(footer);
        snprintf(footer + n, sizeof footer - n, "  %-10s %s / %s:", cats[c], ds_motion_default(cats[c], false),
                 ds_motion_default(cats[c], true));
        for (int i = 0; m && m[i]; i++) {
            n = strlen(footer);
            snprintf(footer + n, sizeof footer - n, " %s", m[i]);
        }
        n = strlen(footer);
        snprintf(footer + n, sizeof footer - n, "\n");
    }
    size_t n = strlen(footer);
    snprintf(footer + n, sizeof footer - n, "  any .bvh path with CMU or Boxing_Toes joint names (humanoid)\n");
    const CmdArgSpec spec = {
        NAME, "--category C --out DIR [--seed S] [--motion M] [--heldout M] [--frames F] [--heldout-frames F] [--views V] [--size PX] [--monocular]",
        "a procedural character posed by a training and a held-out motion (gaits, gestures, CMU motion\n"
        "capture) with soft secondary motion, rendered with alpha from a ring and an upper ring of\n"
        "cameras: transforms_{train,val,test}.json + RGBA PNGs (D-NeRF / nerfstudio) and gt.h5;\n"
        "--monocular: the training split is one camera orbiting the character (one image per frame)",
        args, footer, 0, 0};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    o.frames = (int)frames, o.heldout_frames = (int)heldout_frames, o.views = (int)views, o.size = (int)size, o.grid = (int)grid, o.supersample = (int)ss;
    o.holdout_every = (int)hold, o.val_every = (int)valev, o.fps = fps, o.fov_deg = fov, o.lit = lit;
    o.bvh_start = bvh_start, o.command = command;
    o.monocular = mono;
    const char *orbit_opt[3] = {"--orbit", "--orbit-elevation", "--orbit-bob"};
    double *orbit_val[3] = {&orbit, &orbit_el, &orbit_bob}, *orbit_dst[3] = {&o.orbit_deg, &o.orbit_elevation_deg, &o.orbit_bob_deg};
    for (int k = 0; k < 3; k++) {
        if (isnan(*orbit_val[k])) continue;
        if (!mono) return cmd_args_fail(&spec, stderr, "%s needs --monocular", orbit_opt[k]);
        *orbit_dst[k] = *orbit_val[k];
    }
    /* motion names are checked here, so a typo is an argument error (2), not a run failure */
    const char *const *known = ds_motion_names(o.category, NULL);
    const char *check[2] = {o.motion, o.heldout_motion};
    for (int k = 0; k < 2; k++) {
        if (!check[k] || (k == 1 && !strcmp(check[k], "none"))) continue;
        size_t len = strlen(check[k]);
        bool ok = len > 4 && !strcmp(check[k] + len - 4, ".bvh");
        for (int i = 0; known && known[i] && !ok; i++) ok = !strcmp(known[i], check[k]);
        if (!ok)
            return cmd_args_fail(&spec, stderr, "%s: unknown motion '%s' for %s (see the list in --help)",
                                 k ? "--heldout" : "--motion", check[k], o.category);
    }
    if (cmd_make_dirs(o.out) != 0) {
        fprintf(stderr, NAME ": cannot create the output directory %s (%s)\n", o.out, strerror(errno));
        return 1;
    }
    BaseProgress pr = {.out = stderr, .name = NAME, .unit = "images", .count_suffix = " images", .rate_digits = 1,
                       .tty = isatty(STDERR_FILENO)};
    if (!no_progress) o.progress = progress, o.progress_ctx = &pr;
    o.cancel = &g_signal;
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    base_progress_begin(&pr, 0);
    double t0 = base_now(), c0 = cpu_s();
    DsMotionBenchStats st;
    char err[2048];
    int rc = ds_motion_bench_make(&o, &st, err, sizeof err);
    if (!no_progress) base_progress_break(&pr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (g_signal) {
        fprintf(stderr, NAME ": interrupted by signal %d; %s has no transforms JSON\n", (int)g_signal, o.out);
        return 128 + g_signal;
    }
    if (rc) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    printf("%s (seed %llu): %lld vertices, %lld triangles, %d bones, %d soft regions\n", o.category,
           (unsigned long long)o.seed, (long long)st.nv, (long long)st.nf, st.nbones, st.nsoft);
    for (int k = 0; k < st.motions; k++)
        printf("  %-8s %-12s %d frames at %g fps -> %s%s (max secondary displacement %.4f)\n", k ? "held-out" : "train",
               st.motion[k], st.frames[k], o.fps, o.out, k ? "/heldout" : "", st.max_secondary[k]);
    if (o.monocular)
        printf("  monocular: 1 training camera orbiting %g deg from azimuth %g, elevation %g +- %g deg, at %.3f; "
               "%d held-out views of %d, %dx%d RGBA, %lld images, %.0f%% of pixels covered on average; bounding "
               "radius %.3f, ring cameras at %.3f\n",
               o.orbit_deg, o.orbit_start_deg, o.orbit_elevation_deg, o.orbit_bob_deg, st.orbit_distance,
               st.heldout_views, o.views, o.size, o.size, (long long)st.images, 100 * st.coverage, st.extent,
               st.distance);
    else
        printf("  %d views (%d training, %d held out), %dx%d RGBA, %lld images, %.0f%% of pixels covered on average; "
               "bounding radius %.3f, cameras at %.3f\n",
               o.views, st.train_views, st.heldout_views, o.size, o.size, (long long)st.images, 100 * st.coverage,
               st.extent, st.distance);
    printf("  %.1f s wall, %.1f s CPU\n", base_now() - t0, cpu_s() - c0);
    /* previews: training view 0's images over time (monocular: the orbit's), one per motion */
    int vrc = 0;
    for (int k = 0; k < st.motions && !vrc; k++) {
        char dir[4200], base[4200];
        snprintf(dir, sizeof dir, "%s%s/train", o.out, k ? "/heldout" : "");
        snprintf(base, sizeof base, "%s%s/preview", o.out, k ? "/heldout" : "");
        vrc = cmd_write_video(NAME, dir, "f", o.monocular ? "_orbit.png" : "_v00.png", st.frames[k], o.fps, video, base);
    }
    return vrc;
}
