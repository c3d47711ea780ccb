/* tools/cmd_demo.c — `anima demo` (what `make demo` runs): the pretrained PhysSkin checkpoint
 * skins a shape it never saw, and the reduced simulator drops it onto the floor with a rigid
 * ball, writing the frames. Four stages, one progress line each:
 *
 *   1. load models/physskin/pretrained/small.h5 (--ckpt)
 *   2. skin the shape: --mesh FILE, else data/real/bunny.ply when datasets/fetch-real.sh has
 *      fetched it, else a procedural shape whose seed lies outside the training corpus (the
 *      small preset trains on seeds 0..63, models/physskin/data.c) → DIR/skinning.h5 (the
 *      skinning file, datasets/corpus/skinning_file.h) + DIR/skinned.{ply,png} colored by handle
 *   3. simulate: the skinned shape falls onto a floor plane and a rigid ball lands on it (IPC
 *      contact between them, sim/world.h), through the same scene runner as `anima sim`, with
 *      the scene written next to the frames (DIR/scene.json) so it can be rerun and edited
 *   4. report where the frames are (DIR/frames/frame_NNNNN.{ply,png}) and write their video
 *      (--video, default auto: DIR/frames/video.mp4 with ffmpeg, and .gif); the last line names
 *      the video to open
 *
 * The scene is a JSON text handed to sim_scene_parse, not a struct filled here, so the demo
 * exercises exactly the path a user's scene takes and its output is a scene file they can run.
 *
 * `anima demo --mlp [--steps N]` keeps the original demo: a two-layer tanh MLP fitted to
 * y = sin(3x) + 0.5 x² with Adam written in tensor ops (each step in its own scope, so memory
 * stays flat however long it runs). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autograd/autograd.h"
#include "base/clock.h"
#include "datasets/mesh/mesh.h"
#include "datasets/geometry/procedural.h"
#include "datasets/corpus/skinning_file.h"
#include "models/physskin/infer.h"
#include "sim/scene.h"
#include "datasets/render/video.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

#define DEMO_CKPT "models/physskin/pretrained/small.h5"
#define DEMO_MESH "data/real/bunny.ply"
#define DEMO_CATEGORY "cactus"
#define DEMO_SEED 7777 /* far outside the small preset's training seeds 0..63 */

static int demo_mlp(int steps) {
    tensor_manual_seed(1);
    const int64_t n = 256, h = 64;
    Tensor *x = tensor_mul_scalar(tensor_add_scalar(tensor_rand(TENSOR_SHAPE(n, 1), TENSOR_F32), -0.5), 4.0);
    Tensor *y = tensor_add(tensor_sin(tensor_mul_scalar(x, 3)), tensor_mul_scalar(tensor_mul(x, x), 0.5));
    Tensor *p[4] = {
        tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(1, h), TENSOR_F32), 1.0),
        tensor_zeros(TENSOR_SHAPE(h), TENSOR_F32),
        tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(h, 1), TENSOR_F32), 1.0 / sqrt((double)h)),
        tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32),
    };
    Tensor *m[4], *v[4];
    for (int i = 0; i < 4; i++) {
        tensor_requires_grad(p[i], true);
        m[i] = tensor_zeros_like(p[i]);
        v[i] = tensor_zeros_like(p[i]);
    }
    const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double first = 0, last = 0;
    printf("anima demo --mlp: fitting y = sin(3x) + x^2/2 with a 1-%lld-1 tanh MLP, Adam lr %g\n", (long long)h, lr);
    for (int step = 1; step <= steps; step++) {
        TensorScope *s = tensor_scope_begin();
        Tensor *hid = tensor_tanh(tensor_add(tensor_matmul(x, p[0]), p[1]));
        Tensor *pred = tensor_add(tensor_matmul(hid, p[2]), p[3]);
        Tensor *d = tensor_sub(pred, y);
        Tensor *loss = tensor_mean_all(tensor_mul(d, d));
        ag_zero_grad(4, p);
        ag_backward(loss, NULL, false);
        bool prev = ag_no_grad_begin();
        for (int i = 0; i < 4; i++) { /* Adam (Kingma & Ba 2015, Alg. 1) */
            tensor_scale_(m[i], b1);
            tensor_add_(m[i], p[i]->grad, 1 - b1);
            tensor_scale_(v[i], b2);
            tensor_add_(v[i], tensor_mul(p[i]->grad, p[i]->grad), 1 - b2);
            Tensor *mh = tensor_mul_scalar(m[i], 1.0 / (1 - pow(b1, step)));
            Tensor *vh = tensor_mul_scalar(v[i], 1.0 / (1 - pow(b2, step)));
            tensor_add_(p[i], tensor_div(mh, tensor_add_scalar(tensor_sqrt(vh), eps)), -lr);
        }
        ag_no_grad_end(prev);
        last = tensor_item(loss);
        if (step == 1) first = last;
        if (step == 1 || step % 50 == 0) printf("step %4d  loss %.6f\n", step, last);
        tensor_scope_end(s);
    }
    printf("loss %.6f -> %.6f (%.0fx lower)\n", first, last, first / last);
    tensor_runtime_shutdown();
    return last < first ? 0 : 1;
}

/* a progress bar for stage 3, only on a terminal: logs and tests get the stage lines alone */
static void sim_progress(void *ctx, int64_t step, int64_t steps, const SimObject *objs, int n) {
    (void)objs, (void)n;
    if (!*(int *)ctx || (step % 5 && step != steps)) return;
    int width = 30, fill = (int)(width * step / steps);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r      [%s] step %lld/%lld", bar, (long long)step, (long long)steps);
    if (step == steps) fprintf(stderr, "\r%60s\r", "");
}

int cmd_demo(int argc, char **argv) {
    const char *out = "runs/demo", *ckpt = DEMO_CKPT, *mesh_path = NULL;
    int64_t steps_arg = -1, every_arg = 5;
    int size[2] = {640, 480};
    bool mlp = false;
    const char *video = "auto";
    char mesh_help[256];
    snprintf(mesh_help, sizeof mesh_help,
             "the shape to skin (default " DEMO_MESH " when present, else the procedural " DEMO_CATEGORY
             " of seed %d, outside the training corpus; procedural: that shape even when the bunny is there)",
             DEMO_SEED);
    const CmdArg args[] = {
        {"--out", CMD_ARG_STRING, &out, "DIR",
         "where everything goes (default runs/demo): skinning.h5, skinned.{ply,png}, scene.json, "
         "frames/frame_NNNNN.{ply,png}"},
        {"--ckpt", CMD_ARG_STRING, &ckpt, "CKPT", "the PhysSkin checkpoint (default " DEMO_CKPT ")"},
        {"--mesh", CMD_ARG_STRING, &mesh_path, "FILE", mesh_help},
        {"--steps", CMD_ARG_INT, &steps_arg, "N", "simulation steps of 0.01 s (default 150); with --mlp its steps (600)", 1,
         1000000},
        {"--every", CMD_ARG_INT, &every_arg, "K", "a frame every K steps (default 5)", 1, 1000000},
        {"--size", CMD_ARG_SIZE, size, "WxH", "frame size (default 640x480)", 16, 8192},
        {"--mlp", CMD_ARG_FLAG, &mlp, NULL, "the original demo: fit a small MLP with Adam"},
        {"--video", CMD_ARG_CHOICE, &video, "KIND", CMD_VIDEO_HELP ": DIR/frames/video.{mp4,gif} (default auto)",
         .choices = DS_VIDEO_KINDS},
        {0}};
    const CmdArgSpec spec = {"anima demo", "[--out DIR] [--ckpt CKPT] [--mesh FILE] [--steps N] [--mlp] [options]",
                             "pretrained PhysSkin skins an unseen shape, dropped on the floor with a ball: frames",
                             args};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    int w = size[0], h = size[1];
    long steps = (long)steps_arg, every = (long)every_arg;
    if (mlp) return demo_mlp(steps > 0 ? (int)steps : 600);
    if (steps < 0) steps = 150;
    double t_all = base_now(), t0 = t_all;
    char err[8192], path[4096], frames[4096];

    /* 1: the checkpoint */
    PsSkinner sk;
    if (ps_skinner_load(&sk, ckpt, err, sizeof err)) {
        fprintf(stderr, "anima demo: %s\n", err);
        if (access(ckpt, F_OK) != 0)
            fprintf(stderr, "anima demo: the pretrained checkpoint is committed at " DEMO_CKPT
                            " (run from the repository root, or pass --ckpt)\n");
        tensor_runtime_shutdown();
        return 1;
    }
    printf("[1/4] checkpoint %s: %lld handles, %lld latents of width %lld (%.1f s)\n", ckpt,
           (long long)sk.cfg.model.handles, (long long)sk.cfg.model.latents, (long long)sk.cfg.model.width,
           base_now() - t0);
    fflush(stdout);

    /* 2: skin a shape the network never saw */
    t0 = base_now();
    DsMesh mesh = {0};
    DsSkinning s = {0};
    DsMesh colored = {0};
    SimScene sc;
    bool have_scene = false;
    int rc = 1;
    char what[256];
    if (!mesh_path && access(DEMO_MESH, R_OK) == 0) mesh_path = DEMO_MESH;
    if (mesh_path && !strcmp(mesh_path, "procedural")) mesh_path = NULL;
    if (mesh_path) {
        if (ds_mesh_read(mesh_path, &mesh, err, sizeof err)) goto fail;
        snprintf(what, sizeof what, "%s", mesh_path);
    } else {
        DsProceduralShape ps;
        if (ds_procedural_make(DEMO_CATEGORY, DEMO_SEED, 48, &ps, err, sizeof err)) goto fail;
        int ok = ds_mesh_copy(&ps.mesh, &mesh);
        ds_procedural_free(&ps);
        if (ok) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        snprintf(what, sizeof what, "procedural %s of seed %d (not in the training corpus)", DEMO_CATEGORY,
                 DEMO_SEED);
    }
    if (cmd_make_dirs(out)) {
        snprintf(err, sizeof err, "%s: cannot create the output directory (%s)", out, strerror(errno));
        goto fail;
    }
    PsSkinMetrics met;
    if (ps_skinner_run(&sk, &mesh, what, sk.cfg.data.n_cubature, &s, &met, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/skinning.h5", out);
    if (ds_skinning_write(path, &s, err, sizeof err)) goto fail;
    if (ds_skinning_mesh(&s, &colored, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/skinned.ply", out);
    if (ds_mesh_write(path, &colored, false, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/skinned.png", out);
    if (ds_skinning_render_png(&s, path, w, h, err, sizeof err)) goto fail;
    printf("[2/4] skinned %s: %lld vertices, %lld cubature points; orthogonality error %.3f, condition number "
           "%.1f, spectral balance %.3f -> %s/skinning.h5, %s/skinned.{ply,png} (%.1f s)\n",
           what, (long long)s.nv, (long long)s.nc, met.orth_err, met.cond, met.balance, out, out, base_now() - t0);
    fflush(stdout);
    /* the network's activations are no longer needed while the simulator runs */
    ps_skinner_free(&sk);

    /* 3: drop it with a rigid ball. In the skinning file's normalized frame the shape spans
     * [-1, 1] along its longest side, so at scale 0.4 it is 0.8 m and its lowest point starts
     * at least 0.35 m above the floor; the ball falls 0.7 m higher and lands on it. E = 6e5 Pa
     * (firm rubber): thin parts (the bunny's ears) bend visibly under the ball and spring back,
     * where 2e5 lets the whole shape slump. */
    t0 = base_now();
    char scene[4096];
    snprintf(scene, sizeof scene,
             "{\n"
             "  \"dt\": 0.01, \"steps\": %ld, \"gravity\": [0, -9.81, 0],\n"
             "  \"objects\": [\n"
             "    {\"skinning\": {\"source\": \"file\", \"file\": \"skinning.h5\"},\n"
             "     \"material\": {\"E\": 6e5, \"nu\": 0.3, \"rho\": 1000},\n"
             "     \"pose\": {\"scale\": 0.4, \"translate\": [0, 0.75, 0], \"rotate_deg\": [0, 20, 0]},\n"
             "     \"color\": [0.85, 0.55, 0.35]}\n"
             "  ],\n"
             "  \"rigids\": [\n"
             "    {\"shape\": \"sphere\", \"radius\": 0.12, \"subdiv\": 3, \"density\": 1500, \"translate\": [0.05, 1.45, 0],\n"
             "     \"velocity\": [0, -1, 0], \"restitution\": 0.3, \"friction\": 0.5, \"color\": [0.55, 0.6, 0.8]}\n"
             "  ],\n"
             "  \"planes\": [{\"normal\": [0, 1, 0], \"offset\": 0, \"stiffness\": 1e6}],\n"
             "  \"contact\": {\"enabled\": true},\n"
             "  \"output\": {\"every\": %ld, \"mesh\": \"ply\", \"png\": true, \"width\": %d, \"height\": %d,\n"
             "             \"eye\": [1.0, 1.1, 2.1], \"target\": [0, 0.35, 0], \"fov\": 40}\n"
             "}\n",
             steps, every, w, h);
    snprintf(path, sizeof path, "%s/scene.json", out);
    FILE *f = fopen(path, "w");
    if (!f || fputs(scene, f) < 0 || fclose(f) != 0) {
        snprintf(err, sizeof err, "%s: cannot write (%s)", path, strerror(errno));
        goto fail;
    }
    if (sim_scene_parse(scene, path, &sc, err, sizeof err)) goto fail;
    have_scene = true;
    printf("[3/4] simulating %ld steps of %g s: the skinned shape (%lld handles + constant, %lld cubature points) "
           "and a rigid ball falling onto the floor ...\n",
           steps, sc.dt, (long long)s.m, (long long)s.nc);
    fflush(stdout);
    snprintf(frames, sizeof frames, "%s/frames", out);
    int tty = isatty(2);
    SimRunReport r;
    if (sim_scene_run(&sc, out, frames, sim_progress, &tty, &r, err, sizeof err)) goto fail;
    printf("      done: %.2f ms per step (median), Newton %.2f iterations per step, %lld failures; smallest contact "
           "distance %.3g m (%.1f s)\n",
           r.ms_median, r.steps ? (double)r.newton_iters / (double)r.steps : 0, (long long)r.newton_failures,
           r.min_distance, base_now() - t0);

    /* 4: where it all is */
    printf("[4/4] %lld frames in %s/: frame_00000..%05lld.ply (meshes) and .png (renders); the colored skinning "
           "in %s/skinned.png; rerun or edit the scene with: anima sim --scene %s/scene.json --out DIR\n",
           (long long)r.frames, frames, (long long)(r.frames - 1), out, out);
    fflush(stdout);
    /* the renders as a video; the last line names the one to open (make demo ends with it) */
    char vbase[4200];
    snprintf(vbase, sizeof vbase, "%s/video", frames);
    if (cmd_write_video("anima demo", frames, "frame_", ".png", (int)r.frames, 1.0 / (sc.dt * (double)sc.output.every), video, vbase)) {
        rc = 1;
        goto done;
    }
    int vk = ds_video_kind(video);
    bool mp4 = vk == DS_VIDEO_MP4 || vk == DS_VIDEO_BOTH || (vk == DS_VIDEO_AUTO && ds_video_have_ffmpeg());
    if (vk == DS_VIDEO_NONE) printf("anima demo: done in %.1f s\n", base_now() - t_all);
    else printf("anima demo: done in %.1f s; open %s/video.%s\n", base_now() - t_all, frames, mp4 ? "mp4" : "gif");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "anima demo: %s\n", err);
done:
    if (have_scene) sim_scene_free(&sc);
    ds_mesh_free(&colored);
    ds_skinning_free(&s);
    ds_mesh_free(&mesh);
    ps_skinner_free(&sk); /* a no-op once freed after stage 2 */
    tensor_runtime_shutdown();
    return rc;
}
