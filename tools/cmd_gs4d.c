/* tools/cmd_gs4d.c — `anima gs4d`: deformable 3D Gaussians (models/gs4d/gs4d.h).
 *
 *   anima gs4d fit --data DIR|synthetic[:category] [--config FILE] [--out RUN] [--iters K]
 *                  [--resume|--force] [--stop-after N] [--set key.path=value ...] [--no-progress]
 *                  [--device cpu|cuda] [--no-eval]
 *   anima gs4d eval RUN
 *
 * fit: trains the canonical Gaussians and the deformation MLP on the training views, with
 * progress, RUN/metrics.jsonl (held-out PSNR at every log step), RUN/ckpt.h5 (every
 * train.ckpt_every steps, at the end and on SIGINT/SIGTERM, which exit 130/143 after it), --resume
 * (bit-identical to an uninterrupted run), and at the end writes RUN/canonical.ply (the canonical
 * set as a standard 3DGS PLY), RUN/trajectories.h5 (per-frame positions, scales, colors,
 * opacities), RUN/renders/test_NNN.png (render | target of each held-out view) and
 * RUN/turntable.gif (one orbit around the scene while time runs from 0 to 1; and .mp4, --video).
 * --data DIR: a D-NeRF / nerfstudio folder (datasets/motion/dnerf.h), e.g. `anima dataset motion`'s:
 * transforms_train.json trains; the held-out views are transforms_val.json while fitting (the
 * benchmark's every 4th frame) and transforms_test.json for eval (every frame), each falling back
 * to the other; DIR/gt.h5, when present, is the ground truth (datasets/motion/bench.h).
 * --data synthetic[:category] makes the small analytic sequence of models/gs4d/synth.h (with
 * ground truth); data.size, data.frames, data.views and data.test_views size it.
 * Under `mpirun -np N` the train.batch views of a step are sharded over the ranks (a multiple of
 * N); rank 0 reports and writes; with --device cuda the ranks' gradients are averaged over NCCL.
 * --device cuda: the training step on the GPU (gs4d_to_device: parameters, gradients and Adam
 * moments moved, the training images uploaded, the MLP on cuBLAS, the CUDA rasterizer, the losses
 * on the device; densification and the kNN on host copies written back); checkpoints, metrics and
 * the products are the same files. The held-out views stay on the host (renders come back).
 * --no-eval skips every held-out and training PSNR (a smoke run of gs4d-paper on a CPU, where one
 * evaluation pass costs more than the steps). train.recluster_every > 0: every that many
 * deformation steps the ARAP clusters become Skelebones' LBG-VQ motion clusters
 * (models/skelebones/cluster.h, train.recluster_bones of them) of the current trajectories — the
 * model takes them through a callback set here, since models/gs4d may not use models/skelebones.
 * eval: reopens RUN (models/gs4d/run.h: config, data, checkpoint) and prints the held-out PSNR
 * and SSIM and, where the data has ground truth, the geometry of models/gs4d/eval.h: the surface
 * Chamfer of the rendered surface, the center Chamfer with its sides, floor and signed distances,
 * and the local rigidity of the trajectories beside the ground truth's own. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/progress.h"
#include "datasets/mesh/gaussian_ply.h"
#include "datasets/render/video.h"
#include "models/gs4d/config.h"
#include "models/gs4d/eval.h"
#include "models/gs4d/gs4d.h"
#include "models/gs4d/run.h"
#include "models/skelebones/cluster.h"
#include "optim/comm.h"
#include "optim/train.h"
#include "tensor/backend.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

_Static_assert(SB_MAX_BONES >= GS4D_MAX_RECLUSTER, "train.recluster_bones is Skelebones' LBG-VQ cluster count");

/* ---- fit ----------------------------------------------------------------------------------------------- */

static const char FIT_ABOUT[] =
    "fits deformable 3D Gaussians (canonical set + deformation MLP, ARAP-regularized) to posed, timed\n"
    "images and writes RUN/ckpt.h5, RUN/metrics.jsonl, RUN/config.json, RUN/canonical.ply (standard 3DGS\n"
    "PLY), RUN/trajectories.h5, RUN/renders/test_NNN.png (render | target) and RUN/turntable.gif.";

static int gs4d_fit_run(int argc, char **argv, OptimComm *comm) {
    int rank = optim_comm_rank(comm), ranks = optim_comm_size(comm);
    bool is_main = rank == 0;
    FILE *errf = is_main ? stderr : NULL;
    const char *config_path = NULL, *out = "runs/gs4d";
    bool no_progress = false, force = false, resume = false, no_eval = false;
    int64_t stop_after = 0;
    CmdArgList sets = {.n = 0};
    const char *device = "cpu", *video = "auto";
    static const char *const DEVICES[] = {"cpu", "cuda", NULL};
    const CmdArg args[] = {
        {"--data", CMD_ARG_KEY, &sets, "DIR|synthetic[:category]", "the views (D-NeRF / nerfstudio folder)", .key = "data.dir"},
        {"--config", CMD_ARG_STRING, &config_path, "FILE", "JSON config (configs/gs4d-small.json); defaults for absent keys"},
        {"--out", CMD_ARG_STRING, &out, "RUN", "the run folder (default runs/gs4d)"},
        {"--iters", CMD_ARG_KEY, &sets, "K", "optimization steps", .key = "train.iters"},
        {"--resume", CMD_ARG_FLAG, &resume, NULL, "continue from RUN/ckpt.h5 (bit-identical to an uninterrupted run)"},
        {"--force", CMD_ARG_FLAG, &force, NULL, "replace the run RUN already holds"},
        {"--stop-after", CMD_ARG_INT, &stop_after, "N", "checkpoint and stop after N steps of this run", 1, -1},
        {"--set", CMD_ARG_LIST, &sets, "k=v", "override a config key, e.g. --set train.arap_weight=0"},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {"--no-eval", CMD_ARG_FLAG, &no_eval, NULL,
         "no held-out or training PSNR (at init, log steps, end): a smoke run of a large preset on a CPU"},
        {"--device", CMD_ARG_CHOICE, &device, "D",
         "cpu (default) or cuda: MLP, render, losses, gradients and Adam on the GPU", .choices = DEVICES},
        {"--video", CMD_ARG_CHOICE, &video, "KIND", CMD_VIDEO_HELP " of the turntable: RUN/turntable.{gif,mp4} (default auto)",
         .choices = DS_VIDEO_KINDS},
        {0}};
    const CmdArgSpec spec = {"anima gs4d fit", "--data DIR [--config FILE] [--out RUN] [--resume|--force] [options]",
                             FIT_ABOUT, args, "SIGINT/SIGTERM finish the current step, checkpoint and exit 130/143.\n"
                             "Data parallel: mpirun -np N anima gs4d fit ... (train.batch views per step, sharded; rank 0 writes).\n",
                             .keys = GS4D_RUN_SCHEMA};
    int prc = cmd_args_parse(&spec, argc, argv, 1, errf, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    Gs4dRunConfig cfg;
    char err[8192];
    bool from_ckpt = false; /* --resume without --config: the run's own config (then --set) */
    if (cmd_args_config_run(&spec, errf, config_path, &sets, GS4D_RUN_SCHEMA, &cfg, resume, out, &from_ckpt)) return 2;
    bool cuda = !strcmp(device, "cuda");
    if (cuda && !tensor_backend_cuda()) {
        if (is_main) fprintf(stderr, "anima gs4d fit: --device cuda: no CUDA device (built without CUDA=1, or no GPU answered)\n");
        return 2;
    }
    if (cuda && ranks > 1 && optim_comm_kind(comm) != OPTIM_COMM_NCCL) {
        if (is_main) fprintf(stderr, "anima gs4d fit: --device cuda on %d ranks needs NCCL, which did not start\n", ranks);
        return 2;
    }
    if (cfg.train.batch % ranks) {
        if (is_main) fprintf(stderr, "anima gs4d fit: train.batch = %lld views must be a multiple of the %d ranks\n", (long long)cfg.train.batch, ranks);
        return 2;
    }
    if (is_main && !config_path && !from_ckpt) fprintf(stderr, "anima gs4d fit: no --config, using the built-in defaults (configs/gs4d-small.json's sizes)\n");
    static const char *const run_files[] = {"ckpt.h5", "metrics.jsonl", NULL};
    if (strlen(out) > 4000) {
        if (is_main) fprintf(stderr, "anima gs4d fit: --out: path too long\n");
        return 2;
    }
    /* the run folder is rank 0's to check; every rank takes the same early return */
    int chk = is_main ? cmd_check_run_dir("anima gs4d fit", stderr, out, run_files, true, resume, force) : 0;
    if (ranks > 1) chk = optim_comm_allreduce_sum_scalar(comm, chk) > 0 ? 2 : 0;
    if (chk) return 2;
    char renders[4096], log_path[4096], ply_path[4096], cfg_path[4096], ckpt_path[4096], traj_path[4096];
    snprintf(renders, sizeof renders, "%s/renders", out);
    snprintf(log_path, sizeof log_path, "%s/metrics.jsonl", out);
    snprintf(ply_path, sizeof ply_path, "%s/canonical.ply", out);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", out);
    snprintf(ckpt_path, sizeof ckpt_path, "%s/ckpt.h5", out);
    snprintf(traj_path, sizeof traj_path, "%s/trajectories.h5", out);
    char gif_path[4096], mp4_path[4096];
    snprintf(gif_path, sizeof gif_path, "%s/turntable.gif", out);
    snprintf(mp4_path, sizeof mp4_path, "%s/turntable.mp4", out);
    int vk = ds_video_kind(video);
    if (vk == DS_VIDEO_AUTO) vk = ds_video_have_ffmpeg() ? DS_VIDEO_BOTH : DS_VIDEO_GIF;
    bool want_gif = vk == DS_VIDEO_GIF || vk == DS_VIDEO_BOTH, want_mp4 = vk == DS_VIDEO_MP4 || vk == DS_VIDEO_BOTH;
    double t0 = base_now();
    Gs4dRunData rd;
    if (gs4d_run_data_load(&cfg, "val", &rd, err, sizeof err)) {
        if (is_main) fprintf(stderr, "anima gs4d fit: %s\n", err);
        return 2;
    }
    TensorScope *scope = tensor_scope_begin();
    Gs4dData dtr, dte;
    if (gs4d_data_make(rd.train, rd.n_train, &dtr, err, sizeof err) ||
        gs4d_data_make(rd.test, rd.n_test, &dte, err, sizeof err)) {
        if (is_main) fprintf(stderr, "anima gs4d fit: %s: %s\n", cfg.data.dir, err);
        gs4d_run_data_free(&rd);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return 2;
    }
    char *cfg_json = ds_config_to_json(GS4D_RUN_SCHEMA, &cfg);
    int rc = 0;
    if (is_main && cmd_make_dirs(renders) != 0) {
        fprintf(stderr, "anima gs4d fit: cannot create the output directory %s (%s)\n", renders, strerror(errno));
        rc = 1;
    } else if (is_main && cmd_write_text(cfg_path, cfg_json, err, sizeof err)) {
        fprintf(stderr, "anima gs4d fit: %s\n", err);
        rc = 1;
    }
    if (ranks > 1) rc = optim_comm_allreduce_sum_scalar(comm, rc) > 0;
    Gs4dConfig mc = gs4d_run_model_config(&cfg);
    Gs4dModel m;
    gs4d_init(&m, &mc, &dtr, NULL);
    int bones = (int)cfg.train.recluster_bones;
    if (mc.recluster_every > 0) gs4d_set_recluster(&m, sb_cluster_labels_cb, &bones); /* Skelebones' LBG-VQ (the tool may use both model families; models/gs4d may not depend on models/skelebones) */
    double psnr0 = rc || !is_main || no_eval ? NAN : gs4d_eval_views(&m, &dte, NULL, NULL, NULL);
    if (!rc && is_main)
        fprintf(stderr, "anima gs4d fit: %s, %d training + %d held-out views at %dx%d, %lld %s Gaussians, MLP %lldx%lld, %d "
                        "time frequencies; held-out PSNR at init %.2f dB\n",
                cfg.data.dir, dtr.n, dte.n, dtr.views[0].cam.width, dtr.views[0].cam.height, (long long)mc.n,
                mc.isotropic ? "isotropic" : "anisotropic", (long long)cfg.model.depth, (long long)cfg.model.width, m.cfg.freq_t, psnr0);
    BaseProgress display;
    OptimTrainOptions to = {.name = "anima gs4d fit", .total_steps = cfg.train.iters, .log_every = cfg.train.log_every,
                            .ckpt_every = cfg.train.ckpt_every, .ckpt_path = ckpt_path, .metrics_path = log_path,
                            .config_json = cfg_json, .resume = resume, .stop_after = stop_after,
                            .progress = cmd_train_progress(&display, no_progress ? 0 : -1), .progress_user = &display,
                            .comm = comm};
    OptimTrain tl;
    err[0] = 0;
    if (!rc && optim_train_init(&tl, &to, &m.params, &m.optim, (TensorRng){.seed = (uint64_t)cfg.seed, .stream = 3}, err,
                                sizeof err)) {
        if (err[0]) fprintf(stderr, "anima gs4d fit: %s\n", err);
        rc = 1;
    }
    if (rc) {
        gs4d_free(&m);
        gs4d_data_free(&dtr), gs4d_data_free(&dte);
        gs4d_run_data_free(&rd);
        free(cfg_json);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return rc;
    }
    if (ranks > 1) { /* every rank starts from rank 0's parameters and moments (the convention of
                      * the data-parallel commands; the init is deterministic, this makes it sure) */
        optim_comm_broadcast(comm, m.params.flat, 0);
        optim_comm_broadcast(comm, m.optim.exp_avg, 0);
        optim_comm_broadcast(comm, m.optim.exp_avg_sq, 0);
    }
    gs4d_set_step(&m, tl.step);
    if (cuda) { /* after the checkpoint load and the broadcast, which work on the host buffers */
        gs4d_to_device(&m, TENSOR_CUDA);
        gs4d_data_to_device(&dtr, TENSOR_CUDA);
    }
    if (is_main && resume && tl.resumed_config && strcmp(tl.resumed_config, cfg_json))
        fprintf(stderr, "anima gs4d fit: note: the config differs from the one stored in %s; using the new one\n", ckpt_path);
    if (is_main && ranks > 1)
        fprintf(stderr, "anima gs4d fit: %d ranks (%s), %lld views per step\n", ranks,
                optim_comm_kind(comm) == OPTIM_COMM_NCCL ? "NCCL" : "MPI", (long long)cfg.train.batch);
    if (is_main && resume) fprintf(stderr, "anima gs4d fit: resuming %s at step %lld\n", ckpt_path, (long long)tl.step);
    double t_train = base_now(), t_eval = 0, ts[6] = {0}, cs[6] = {0}, c_train = base_cpu_now(), c_eval = 0;
    int64_t n_def = 0, revived = 0; /* trunk units recycled since the last log line */
    int64_t first = tl.step;
    int64_t *batch = base_malloc(sizeof(int64_t) * (size_t)cfg.train.batch);
    while (optim_train_next(&tl)) {
        /* 3DGS pops views off a reshuffled stack: every view once per epoch */
        optim_data_order((uint64_t)cfg.seed, tl.step, dtr.n, cfg.train.batch, batch);
        for (int64_t j = 0; j < cfg.train.batch; j++) batch[j] = gs4d_pick_view(&m, &dtr, tl.step, (int)batch[j]);
        double lr = gs4d_lr(&m, GS4D_MEANS, m.step);
        Gs4dStepInfo info;
        gs4d_step_batch(&m, &dtr, batch, (int)cfg.train.batch, &tl.rng, comm, &info);
        if (m.step > mc.warmup) { /* the stage times of the deformation phase */
            double t6[6] = {info.t_deform, info.t_render, info.t_loss, info.t_backward, info.t_optim, info.t_refine};
            double c6[6] = {info.c_deform, info.c_render, info.c_loss, info.c_backward, info.c_optim, info.c_refine};
            for (int k = 0; k < 6; k++) ts[k] += t6[k], cs[k] += c6[k];
            n_def++;
        }
        bool log_now = (tl.step + 1) % cfg.train.log_every == 0 || tl.step + 1 == cfg.train.iters;
        revived += m.revived;
        double te = base_now(), ce = base_cpu_now();
        double psnr = log_now && is_main && !no_eval ? gs4d_eval_views(&m, &dte, NULL, NULL, NULL) : NAN;
        t_eval += base_now() - te, c_eval += base_cpu_now() - ce;
        OptimMetric extra[8] = {{"test_psnr", psnr}, {"photometric", info.photometric}, {"arap", info.arap},
                                {"densified", (double)m.densified}, {"relocated", (double)m.relocated}, {"reg", info.reg},
                                {"reclustered", (double)m.reclustered}, {"revived", (double)revived}};
        optim_train_step_end(&tl, info.loss, lr, 8, extra);
        if (log_now) revived = 0;
    }
    free(batch);
    bool finished = tl.step >= cfg.train.iters;
    double t_loop = base_now() - t_train - t_eval, c_loop = base_cpu_now() - c_train - c_eval;
    rc = optim_train_finish(&tl);
    if (cuda) { /* the products read the parameters and the training images on the host */
        gs4d_to_device(&m, TENSOR_CPU);
        gs4d_data_to_device(&dtr, TENSOR_CPU);
    }
    int64_t steps = m.step - first;
    if (!is_main) { /* rank 0 reports and writes the products */
        gs4d_free(&m);
        gs4d_data_free(&dtr), gs4d_data_free(&dte);
        gs4d_run_data_free(&rd);
        free(cfg_json);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return rc;
    }
    double ssim = NAN, psnr = NAN, psnr_tr = NAN;
    /* interrupted: exit at once with the checkpoint; the final PSNRs render every held-out and
     * training view (6300 renders, minutes of CPU, on the 300-frame default benchmark) */
    bool signaled = rc >= 128;
    if (!no_eval && !signaled) psnr = gs4d_eval_views(&m, &dte, &ssim, NULL, NULL), psnr_tr = gs4d_eval_views(&m, &dtr, NULL, NULL, NULL);
    if (!signaled)
        printf("%s after %lld iterations: held-out PSNR %.2f dB, SSIM %.4f (%d views; %.2f dB at init), training PSNR %.2f dB; "
           "%.1f s (%.1f ms/iteration); CPU %.1f s (training %.1f ms/iteration)\n",
           finished ? "done" : "stopped", (long long)m.step, psnr, ssim, dte.n, psnr0, psnr_tr, base_now() - t0,
           steps ? 1e3 * t_loop / (double)steps : 0.0, base_cpu_now(), steps ? 1e3 * c_loop / (double)steps : 0.0);
    for (int clk = 0; clk < 2 && n_def; clk++) {
        const double *x = clk ? cs : ts;
        printf("per deformation-phase iteration (%s): MLP forward %.1f ms, rasterize %.1f ms, losses %.1f ms, backward "
               "%.1f ms, Adam %.1f ms, densify/kNN %.1f ms\n", clk ? "CPU" : "wall", 1e3 * x[0] / n_def,
               1e3 * x[1] / n_def, 1e3 * x[2] / n_def, 1e3 * x[3] / n_def, 1e3 * x[4] / n_def, 1e3 * x[5] / n_def);
    }
    if (finished) { /* the products of a finished run (a stopped one has its checkpoint) */
        DsGaussians g = {0};
        double *times = NULL;
        int nf = gs4d_run_frame_times(&rd, &times);
        err[0] = 0;
        if (gs4d_export(&m, &g) || ds_gaussians_write(ply_path, &g, err, sizeof err) ||
            gs4d_write_trajectories(traj_path, &m, times, nf, err, sizeof err) || gs4d_write_renders(renders, &m, &dte, err, sizeof err) ||
            gs4d_write_turntable(want_gif ? gif_path : NULL, want_mp4 ? mp4_path : NULL, &m, &dtr, (int)cfg.train.turntable_frames,
                            err, sizeof err)) {
            fprintf(stderr, "anima gs4d fit: %s\n", err[0] ? err : "out of memory");
            rc = 1;
        }
        ds_gaussians_free(&g);
        free(times);
        if (rc == 0)
            printf("wrote %s, %s (%d frames), %s/test_NNN.png, %s%s%s%s%s, %s\n", ply_path, traj_path, nf, renders,
                   want_gif ? gif_path : "", want_gif && want_mp4 ? ", " : "", want_mp4 ? mp4_path : "",
                   want_gif || want_mp4 ? ", " : "", ckpt_path, log_path);
    }
    gs4d_free(&m);
    gs4d_data_free(&dtr), gs4d_data_free(&dte);
    gs4d_run_data_free(&rd);
    free(cfg_json);
    tensor_scope_end(scope);
    tensor_runtime_shutdown();
    return rc;
}

static int gs4d_fit_main(int argc, char **argv) {
    /* --device cuda on several ranks: NCCL for the device gradients (host buffers still go over MPI) */
    OptimComm *comm = optim_comm_init(cmd_wants_cuda(argc, argv));
    int rc = gs4d_fit_run(argc, argv, comm);
    optim_comm_finalize(comm);
    return rc;
}

/* ---- eval ----------------------------------------------------------------------------------------------- */

static void eval_progress(void *user, int done, int total) {
    base_progress_update(user, done, total, NAN, NAN, false);
}

static int gs4d_eval_main(int argc, char **argv) {
    static const char *const SPLITS[] = {"test", "val", NULL};
    const char *split = "test", *per_view = NULL;
    bool no_progress = false;
    CmdArg args[] = {
        {"--split", CMD_ARG_CHOICE, &split, "S",
         "test (default; the views to report) or val (the views to choose settings on)", .choices = SPLITS},
        {"--per-view", CMD_ARG_STRING, &per_view, "FILE",
         "also write each held-out view's PSNR / SSIM (with its time and camera) and each frame's Chamfer sides, tab-separated"},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {0}};
    const CmdArgSpec spec = {"anima gs4d eval", "RUN [--split test|val] [--per-view FILE]",
                             "held-out PSNR / SSIM of a gs4d fit, and with ground truth the Chamfer distance of the\n"
                             "Gaussian centers to the surface per frame and the local-rigidity error of the trajectories\n"
                             "(models/gs4d/eval.h)",
                             args, NULL, 1, 1};
    const char *pos[1];
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    const char *run = pos[0];
    char err[8192];
    TensorScope *scope = tensor_scope_begin();
    Gs4dRun r;
    if (gs4d_run_open(run, split, &r, err, sizeof err)) {
        fprintf(stderr, "anima gs4d eval: %s\n", err);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return 1;
    }
    const Gs4dData *dte = &r.test;
    const Gs4dRunData *rd = &r.data;
    int rc = 0;
    double *pv = per_view ? base_malloc(sizeof(double) * 2 * (size_t)(dte->n ? dte->n : 1)) : NULL;
    double ssim, psnr = gs4d_eval_views(&r.model, dte, &ssim, pv, pv ? pv + dte->n : NULL);
    printf("%s at step %lld: held-out PSNR %.2f dB, SSIM %.4f over %d %s views\n", run, (long long)r.step, psnr, ssim, dte->n,
           rd->test_split);
    Gs4dGeometry g = {0};
    if (rd->has_gt) {
        /* a bar on a terminal (the geometry of a long sequence takes minutes); nothing in logs */
        BaseProgress display = {.out = stderr, .name = "anima gs4d eval", .unit = "frames", .count_suffix = " frames",
                                .rate_digits = 1, .tty = true};
        bool bar = !no_progress && isatty(STDERR_FILENO);
        base_progress_begin(&display, 0);
        gs4d_eval_geometry(&r.model, dte, &rd->gt, bar ? eval_progress : NULL, &display, &g);
        if (bar) base_progress_finish(&display, g.frames, g.frames, NAN, NAN);
        if (g.surface_frames)
            printf("surface Chamfer (the rendered surface: expected depth at alpha > 0.5 from the held-out views, "
                   "back-projected): mean %.3f%% of the bbox diagonal over %d frames (rendered -> surface %.3f%%, the "
                   "surface those views see -> rendered %.3f%%)\n",
                   g.surface_chamfer, g.surface_frames, g.rendered_to_surface, g.seen_to_rendered);
        else
            printf("surface Chamfer: no held-out view at a ground-truth frame's time\n");
        printf("Chamfer (visible centers vs surface): mean %.3f%%, max %.3f%% of the bbox diagonal over %d frames\n",
               g.chamfer, g.chamfer_max, g.frames);
        printf("  sides: centers -> surface %.3f%%, surface -> centers %.3f%% (%.0f visible centers; the same number of "
               "points exactly on the surface: Chamfer %.3f%%)\n", g.centers_to_surface, g.surface_to_centers, g.visible, g.floor);
        printf("  bbox diagonal %.4g; one pixel at the scene center is %.3f%% of it; median scale of the visible "
               "Gaussians %.3f%%%s\n", g.diag, 100 * g.pixel / g.diag, g.median_scale, r.model.cfg.isotropic ? "" : " (smallest axis)");
        printf("  signed: %.1f%% of the visible centers inside the surface, median signed distance %.2f x their own "
               "scale, %.2f x sqrt(scale^2 + the dilation); quantiles 5/25/50/75/95%%: %.2f %.2f %.2f %.2f %.2f %% of the "
               "diagonal\n", 100 * g.inside, g.median_signed, g.median_signed_eff,
               g.quantiles[0], g.quantiles[1], g.quantiles[2], g.quantiles[3], g.quantiles[4]);
        printf("  inset floor: the same surface points pushed inward by the median depth: Chamfer %.3f%% "
               "(centers -> surface %.3f%%, surface -> centers %.3f%%)\n", g.inset, g.inset_cs, g.inset_sc);
        printf("local-rigidity error (RMS non-rigid residual of 8-NN neighborhoods / their size): %.3f%% "
               "(ground truth's own: %.3f%%)\n", 100 * g.rigidity, 100 * g.rigidity_gt);
        printf("correspondence drift (each frame's nearest true vertex of the %lld Gaussians visible in the first frame, "
               "against the first frame's, on the rest surface): median %.3f%%, 90th percentile %.3f%% of the rest "
               "diagonal\n", (long long)g.tracked, g.drift, g.drift_p90);
    } else {
        printf("no ground truth in %s: Chamfer and rigidity not computed\n", r.cfg.data.dir);
    }
    if (pv) { /* one line per view, then (with ground truth) one per frame */
        size_t tcap = 256 + 96 * (size_t)dte->n + 160 * (size_t)g.frames, tlen = 0;
        char *text = base_malloc(tcap);
        tlen += (size_t)snprintf(text + tlen, tcap - tlen, "# kind\tindex\ttime\televation_deg\tazimuth_deg\tpsnr_db\tssim\n");
        for (int v = 0; v < dte->n; v++) {
            double el, az;
            ds_camera_elevation_azimuth(&dte->views[v].cam, dte->center, &el, &az);
            tlen += (size_t)snprintf(text + tlen, tcap - tlen, "view\t%d\t%.5f\t%.1f\t%.1f\t%.3f\t%.4f\n", v, dte->views[v].time,
                                     el, az, pv[v], pv[dte->n + v]);
        }
        if (rd->has_gt)
            tlen += (size_t)snprintf(text + tlen, tcap - tlen,
                                     "# kind\tindex\ttime\tchamfer_pct\tcenters_to_surface_pct\tsurface_to_centers_pct\tvisible\t"
                                     "surface_chamfer_pct\trendered_to_surface_pct\tvisible_surface_to_rendered_pct\tdrift_pct\n");
        for (int f = 0; f < g.frames; f++) {
            const Gs4dFrameGeometry *q = &g.per_frame[f];
            tlen += (size_t)snprintf(text + tlen, tcap - tlen, "frame\t%d\t%.5f\t%.3f\t%.3f\t%.3f\t%lld\t%.3f\t%.3f\t%.3f\t%.3f\n", f,
                                     q->time, q->chamfer, q->centers_to_surface, q->surface_to_centers, (long long)q->visible,
                                     q->surface_chamfer, q->rendered_to_surface, q->seen_to_rendered, q->drift);
        }
        if (cmd_write_text(per_view, text, err, sizeof err)) {
            fprintf(stderr, "anima gs4d eval: %s\n", err);
            rc = 1;
        }
        free(text), free(pv);
    }
    gs4d_geometry_free(&g);
    gs4d_run_close(&r);
    tensor_scope_end(scope);
    tensor_runtime_shutdown();
    return rc;
}

int cmd_gs4d(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "fit")) return gs4d_fit_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "eval")) return gs4d_eval_main(argc - 1, argv + 1);
    static const CmdArg none[] = {{0}};
    const CmdArgSpec spec = {"anima gs4d", "fit|eval [options]", "deformable 3D Gaussians (anima gs4d fit --help)", none,
                             NULL, 1, 1};
    const char *pos[1];
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, NULL);
    if (prc == CMD_ARGS_HELP) return 0;
    if (prc == CMD_ARGS_OK) cmd_args_fail(&spec, stderr, "unknown subcommand '%s'", pos[0]);
    return 2;
}
