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
 * eval: reloads RUN's config and checkpoint and prints the held-out PSNR and SSIM (SSIM over the
 * valid 11×11 windows), and where the data has ground truth, the Chamfer distance between the
 * centers of the visible Gaussians (opacity ≥ 0.05) and the true surface per frame (% of the
 * frame's bounding-box diagonal; mean and max over frames) and the local-rigidity error of the
 * trajectories (models/gs4d/arap.h), next to the ground-truth surface's own. The Chamfer line is
 * followed by its two sides (centers → surface: accuracy; surface → centers: completeness), what
 * as many points exactly on the surface would score (the floor for that many Gaussians), and the
 * signed distances of the visible centers (negative inside; the median also in units of each
 * Gaussian's scale; quantiles) — the measurements that tell a thin layer from a shrunken one. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sort.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/h5file.h"
#include "datasets/config.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "datasets/render/gif.h"
#include "datasets/render/video.h"
#include "datasets/render/image.h"
#include "datasets/render/raster.h"
#include "models/gs4d/arap.h"
#include "models/gaussians/fit.h"
#include "models/gs4d/gs4d.h"
#include "models/gs4d/synth.h"
#include "models/skelebones/cluster.h"
#include "optim/checkpoint.h"
#include "optim/comm.h"
#include "optim/train.h"
#include "tensor/backend.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

typedef struct {
    int64_t seed;
    struct {
        char dir[1024];
        int64_t size, frames, views, test_views;
    } data;
    struct {
        int64_t n, depth, width, skip, freq_x, freq_t, supersample, nodes, node_k, latent_dim;
        bool isotropic, deform_color, deform_opacity, node_table;
        double init_opacity, init_scale, head_init, dilation, node_radius;
        char trunk_init[16], deform[16], time[16];
    } model;
    struct {
        double lr_means, lr_means_final, lr_deform, lr_deform_final, lr_scales, lr_quats, lr_opacity, lr_color, lambda;
        double reg_opacity, reg_scale, reg_flat, silhouette, eps_deform, lr_nodes, lr_node_radius;
    } optim;
    struct {
        int64_t iters, batch, turntable_frames, warmup, time_ramp, log_every, ckpt_every, densify_every, reset_every, knn_every, arap_k;
        int64_t redo_every;
        int64_t recluster_every, recluster_bones, recluster_frames;
        double refine_frac, prune_opacity, densify_grad, split_scale, arap_weight, table_smooth;
        bool random_background, ramp_schedule;
    } train;
} Gs4dCmdConfig;

#define NO_RANGE .min = 1, .max = 0
#define F(sec, name) offsetof(Gs4dCmdConfig, sec.name) - offsetof(Gs4dCmdConfig, sec)

static const DsConfigField DATA_FIELDS[] = {
    {"dir", DS_CFG_STRING, F(data, dir), "\"synthetic\"", NO_RANGE, .size = 1024,
     .help = "a D-NeRF / nerfstudio folder, or synthetic[:category] (models/gs4d/synth.h)"},
    {"size", DS_CFG_INT, F(data, size), "64", 8, 4096, .help = "synthetic: image side in pixels"},
    {"frames", DS_CFG_INT, F(data, frames), "8", 1, 10000, .help = "synthetic: frames"},
    {"views", DS_CFG_INT, F(data, views), "8", 1, 1000, .help = "synthetic: training cameras per frame"},
    {"test_views", DS_CFG_INT, F(data, test_views), "2", 1, 1000, .help = "synthetic: held-out cameras per frame"},
    {0}};
static const char *const TRUNK_INITS[] = {"torch", "he", NULL};
static const char *const DEFORMS[] = {"mlp", "nodes", NULL};
static const char *const TIME_CODES[] = {"fourier", "latent", "both", NULL};
static const DsConfigField MODEL_FIELDS[] = {
    {"n", DS_CFG_INT, F(model, n), "3000", 2, 1e8, .help = "Gaussians (a fixed budget)"},
    {"isotropic", DS_CFG_BOOL, F(model, isotropic), "true", NO_RANGE, .help = "one scale, no rotation (the paper)"},
    {"depth", DS_CFG_INT, F(model, depth), "8", 1, 32, .help = "MLP layers"},
    {"width", DS_CFG_INT, F(model, width), "128", 1, 4096, .help = "MLP units per layer"},
    {"skip", DS_CFG_INT, F(model, skip), "4", 0, 32, .help = "the input is concatenated again before this layer"},
    {"freq_x", DS_CFG_INT, F(model, freq_x), "10", 0, 32, .help = "positional encoding frequencies of x"},
    {"freq_t", DS_CFG_INT, F(model, freq_t), "6", -1, 32,
     .help = "positional encoding frequencies of t (-1: from the training times' spacing, gs4d_auto_freq_t)"},
    {"deform_color", DS_CFG_BOOL, F(model, deform_color), "false", NO_RANGE, .help = "a head for Δc"},
    {"deform_opacity", DS_CFG_BOOL, F(model, deform_opacity), "false", NO_RANGE, .help = "a head for Δo"},
    {"init_opacity", DS_CFG_FLOAT, F(model, init_opacity), "0.1", 1e-4, 0.9999, .help = "every Gaussian's opacity at init"},
    {"init_scale", DS_CFG_FLOAT, F(model, init_scale), "0.5", 1e-3, 10, .help = "x the mean spacing"},
    {"head_init", DS_CFG_FLOAT, F(model, head_init), "1e-5", 0, 1, .help = "std of the output heads' weights"},
    {"trunk_init", DS_CFG_STRING, F(model, trunk_init), "\"torch\"", NO_RANGE, .size = 16, .choices = TRUNK_INITS,
     .help = "the MLP's ReLU layers: torch (PyTorch's Linear default) or he (N(0, 2/fan_in), zero bias; Gs4dConfig.trunk_init)"},
    {"deform", DS_CFG_STRING, F(model, deform), "\"mlp\"", NO_RANGE, .size = 16, .choices = DEFORMS,
     .help = "the deformation model: mlp (D on every Gaussian, Deformable 3DGS) or nodes (D on sparse control "
             "nodes that move the Gaussians by RBF-weighted blending, SC-GS; models/gs4d/nodes.h)"},
    {"nodes", DS_CFG_INT, F(model, nodes), "512", 1, 1e7, .help = "control nodes (deform nodes; farthest-point sampled)"},
    {"node_k", DS_CFG_INT, F(model, node_k), "4", 1, 64, .help = "nodes each Gaussian follows (deform nodes)"},
    {"node_radius", DS_CFG_FLOAT, F(model, node_radius), "1", 1e-3, 100,
     .help = "the nodes' initial RBF radius x their mean nearest-node distance (learned after)"},
    {"time", DS_CFG_STRING, F(model, time), "\"fourier\"", NO_RANGE, .size = 16, .choices = TIME_CODES,
     .help = "what D sees of t: fourier (gamma(t), freq_t), latent (a learned code per training frame, "
             "interpolated between frames) or both"},
    {"node_table", DS_CFG_BOOL, F(model, node_table), "false", NO_RANGE,
     .help = "deform nodes: a learned per-frame table of node transforms added to the MLP's (the MLP the smooth "
             "prior; each frame's rows warm-started from the previous frame's as the time ramp admits it)"},
    {"latent_dim", DS_CFG_INT, F(model, latent_dim), "32", 1, 4096, .help = "length of the per-frame codes (time latent|both)"},
    {"supersample", DS_CFG_INT, F(model, supersample), "1", 1, 8,
     .help = "render at k x the resolution and box-average (1: off; Gs4dConfig.supersample)"},
    {"dilation", DS_CFG_FLOAT, F(model, dilation), "0.3", 0, 10,
     .help = "px^2 added to every splat's screen covariance, in supersampled pixels (0.3: 3DGS; Gs4dConfig.dilation)"},
    {0}};
static const DsConfigField OPTIM_FIELDS[] = {
    {"lr_means", DS_CFG_FLOAT, F(optim, lr_means), "1.6e-4", 0, 1, .help = "x scene extent"},
    {"lr_means_final", DS_CFG_FLOAT, F(optim, lr_means_final), "1.6e-6", 0, 1, .help = "x scene extent, at the last step"},
    {"lr_deform", DS_CFG_FLOAT, F(optim, lr_deform), "8e-4", 0, 1, .help = "x scene extent (Deformable 3DGS)"},
    {"lr_deform_final", DS_CFG_FLOAT, F(optim, lr_deform_final), "1.6e-6", 0, 1, .help = "x scene extent, at the last step"},
    {"lr_scales", DS_CFG_FLOAT, F(optim, lr_scales), "5e-3", 0, 1, .help = "log-scales (constant)"},
    {"lr_quats", DS_CFG_FLOAT, F(optim, lr_quats), "1e-3", 0, 1, .help = "rotations, anisotropic only (constant)"},
    {"lr_opacity", DS_CFG_FLOAT, F(optim, lr_opacity), "5e-2", 0, 1, .help = "opacity logits (constant)"},
    {"lr_color", DS_CFG_FLOAT, F(optim, lr_color), "2.5e-3", 0, 1, .help = "colors (constant)"},
    {"lambda", DS_CFG_FLOAT, F(optim, lambda), "0.2", 0, 1, .help = "D-SSIM weight"},
    {"reg_opacity", DS_CFG_FLOAT, F(optim, reg_opacity), "0", 0, 100,
     .help = "x mean opacity (3DGS-MCMC's 0.01): occluded inner Gaussians die and are relocated"},
    {"silhouette", DS_CFG_FLOAT, F(optim, silhouette), "0", 0, 1e6,
     .help = "x the silhouette Chamfer of the centers against each view's mask (long-range pull for far-moving parts)"},
    {"reg_scale", DS_CFG_FLOAT, F(optim, reg_scale), "0", 0, 100,
     .help = "x mean scale in world units (3DGS-MCMC's 0.01): small Gaussians whose centers sit on the surface"},
    {"reg_flat", DS_CFG_FLOAT, F(optim, reg_flat), "0", 0, 1e6,
     .help = "x mean smallest scale in world units (anisotropic): flat discs whose centers sit on the surface"},
    {"lr_nodes", DS_CFG_FLOAT, F(optim, lr_nodes), "1.6e-4", 0, 1,
     .help = "control node positions, x scene extent (decays as the means' rate)"},
    {"lr_node_radius", DS_CFG_FLOAT, F(optim, lr_node_radius), "5e-3", 0, 1, .help = "control node log-radii (constant)"},
    {"eps_deform", DS_CFG_FLOAT, F(optim, eps_deform), "1e-15", 0, 1,
     .help = "Adam eps of the deformation MLP (1e-15: the 3DGS optimizer's; 1e-8: PyTorch's default)"},
    {0}};
static const DsConfigField TRAIN_FIELDS[] = {
    {"iters", DS_CFG_INT, F(train, iters), "8000", 1, 1e9, .help = "optimization steps in all, warm-up included"},
    {"turntable_frames", DS_CFG_INT, F(train, turntable_frames), "48", 1, 10000,
     .help = "frames of RUN/turntable.gif (one orbit while time runs 0 to 1)"},
    {"batch", DS_CFG_INT, F(train, batch), "1", 1, 4096,
     .help = "views per step (their mean loss); under mpirun a multiple of the ranks, sharded across them"},
    {"warmup", DS_CFG_INT, F(train, warmup), "1000", 0, 1e9, .help = "static steps on the canonical set first"},
    {"time_ramp", DS_CFG_INT, F(train, time_ramp), "0", 0, 1e9,
     .help = "time curriculum (0: off): carve and warm up on the first time's views, then widen the trained "
             "times linearly to all of them over this many steps after the warm-up"},
    {"ramp_schedule", DS_CFG_BOOL, F(train, ramp_schedule), "false", NO_RANGE,
     .help = "with time_ramp: the means' and MLP's rate decay and the densification window (refine_frac) "
             "run over the steps after the ramp, so the last times admitted meet the full rates"},
    {"log_every", DS_CFG_INT, F(train, log_every), "200", 1, 1e9, .help = "JSONL line + held-out PSNR"},
    {"ckpt_every", DS_CFG_INT, F(train, ckpt_every), "1000", 0, 1e9, .help = "checkpoint period (0: end only)"},
    {"densify_every", DS_CFG_INT, F(train, densify_every), "100", 0, 1e9, .help = "clone/split/prune period (0: never)"},
    {"refine_frac", DS_CFG_FLOAT, F(train, refine_frac), "0.5", 0, 1,
     .help = "densification and opacity resets stop after this fraction of the iterations"},
    {"reset_every", DS_CFG_INT, F(train, reset_every), "0", 0, 1e9, .help = "opacity reset period (0: never)"},
    {"prune_opacity", DS_CFG_FLOAT, F(train, prune_opacity), "0.005", 0, 0.5,
     .help = "Gaussians below this opacity are relocated at densification"},
    {"densify_grad", DS_CFG_FLOAT, F(train, densify_grad), "2e-4", 0, 1, .help = "3DGS's NDC gradient threshold"},
    {"split_scale", DS_CFG_FLOAT, F(train, split_scale), "0.01", 0, 1, .help = "split above this x extent, else clone"},
    {"arap_weight", DS_CFG_FLOAT, F(train, arap_weight), "1", 0, 1e6, .help = "ARAP + distance loss weight (0: off)"},
    {"arap_k", DS_CFG_INT, F(train, arap_k), "8", 1, 64, .help = "neighbors per Gaussian"},
    {"knn_every", DS_CFG_INT, F(train, knn_every), "100", 0, 1e9, .help = "recompute the ARAP neighbors every N steps"},
    {"redo_every", DS_CFG_INT, F(train, redo_every), "0", 0, 1e9,
     .help = "recycle the deformation MLP's dead ReLU units every N deformation steps (0: off; Gs4dConfig.redo_every)"},
    {"table_smooth", DS_CFG_FLOAT, F(train, table_smooth), "1", 0, 1e9,
     .help = "model.node_table: x the squared difference of the drawn frame's table rows to its neighbors' (per node)"},
    {"random_background", DS_CFG_BOOL, F(train, random_background), "true", NO_RANGE,
     .help = "a random background color per step behind the RGBA targets (else a fixed one)"},
    {"recluster_every", DS_CFG_INT, F(train, recluster_every), "0", 0, 1e9,
     .help = "every N deformation steps, the ARAP clusters become Skelebones' LBG-VQ motion clusters of the "
             "current trajectories (0: one cluster throughout)"},
    {"recluster_bones", DS_CFG_INT, F(train, recluster_bones), "8", 1, SB_MAX_BONES, .help = "LBG-VQ's target cluster count"},
    {"recluster_frames", DS_CFG_INT, F(train, recluster_frames), "16", 1, 10000,
     .help = "training times (evenly picked) whose trajectories LBG-VQ sees"},
    {0}};
static const DsConfigField GS4D_SCHEMA[] = {
    {"seed", DS_CFG_INT, offsetof(Gs4dCmdConfig, seed), "0", 0, 9e15,
     .help = "seed of the Gaussians' and MLP's init, the view order and the random backgrounds"},
    {"data", DS_CFG_OBJECT, offsetof(Gs4dCmdConfig, data), .fields = DATA_FIELDS},
    {"model", DS_CFG_OBJECT, offsetof(Gs4dCmdConfig, model), .fields = MODEL_FIELDS},
    {"optim", DS_CFG_OBJECT, offsetof(Gs4dCmdConfig, optim), .fields = OPTIM_FIELDS},
    {"train", DS_CFG_OBJECT, offsetof(Gs4dCmdConfig, train), .fields = TRAIN_FIELDS},
    {0}};

static Gs4dConfig model_config(const Gs4dCmdConfig *c) {
    Gs4dConfig g = gs4d_defaults();
    g.n = c->model.n, g.isotropic = c->model.isotropic, g.seed = (uint64_t)c->seed;
    g.init_opacity = c->model.init_opacity, g.init_scale = c->model.init_scale;
    g.depth = (int)c->model.depth, g.width = (int)c->model.width, g.skip = (int)c->model.skip;
    g.freq_x = (int)c->model.freq_x, g.freq_t = (int)c->model.freq_t;
    g.deform_color = c->model.deform_color, g.deform_opacity = c->model.deform_opacity, g.head_init = c->model.head_init;
    g.supersample = (int)c->model.supersample, g.dilation = c->model.dilation;
    g.trunk_init = strcmp(c->model.trunk_init, "he") ? GS4D_INIT_TORCH : GS4D_INIT_HE;
    g.deform = strcmp(c->model.deform, "nodes") ? GS4D_DEFORM_MLP : GS4D_DEFORM_NODES;
    g.nodes = c->model.nodes, g.node_k = (int)c->model.node_k, g.node_radius = c->model.node_radius;
    g.time_code = !strcmp(c->model.time, "latent") ? GS4D_TIME_LATENT
                  : !strcmp(c->model.time, "both") ? GS4D_TIME_BOTH
                                                   : GS4D_TIME_FOURIER;
    g.latent_dim = (int)c->model.latent_dim;
    g.node_table = c->model.node_table, g.table_smooth = c->train.table_smooth;
    g.lr_nodes = c->optim.lr_nodes, g.lr_node_radius = c->optim.lr_node_radius;
    g.lr_means = c->optim.lr_means, g.lr_means_final = c->optim.lr_means_final;
    g.lr_deform = c->optim.lr_deform, g.lr_deform_final = c->optim.lr_deform_final, g.lr_steps = c->train.iters;
    g.lr_scales = c->optim.lr_scales, g.lr_quats = c->optim.lr_quats, g.lr_opacity = c->optim.lr_opacity;
    g.lr_color = c->optim.lr_color, g.lambda = c->optim.lambda;
    g.reg_opacity = c->optim.reg_opacity, g.reg_scale = c->optim.reg_scale, g.reg_flat = c->optim.reg_flat,
    g.eps_deform = c->optim.eps_deform,
    g.silhouette_weight = c->optim.silhouette;
    g.warmup = c->train.warmup, g.time_ramp = c->train.time_ramp, g.densify_every = c->train.densify_every;
    g.refine_until = (int64_t)(c->train.refine_frac * (double)c->train.iters), g.reset_every = c->train.reset_every;
    if (c->train.ramp_schedule && c->train.time_ramp > 0) {
        /* the schedules start when every time is in (gs4d.h, Gs4dConfig.lr_start): the decay
         * from there, and densification for refine_frac of the steps left */
        int64_t s0 = c->train.warmup + c->train.time_ramp, left = c->train.iters > s0 ? c->train.iters - s0 : 0;
        g.lr_start = s0;
        g.refine_until = s0 + (int64_t)(c->train.refine_frac * (double)left);
    }
    g.prune_opacity = c->train.prune_opacity, g.densify_grad = c->train.densify_grad, g.split_scale = c->train.split_scale;
    g.arap_weight = c->train.arap_weight, g.arap_k = (int)c->train.arap_k, g.knn_every = c->train.knn_every;
    g.redo_every = c->train.redo_every;
    g.random_background = c->train.random_background;
    g.recluster_every = c->train.recluster_every, g.recluster_frames = (int)c->train.recluster_frames;
    return g;
}

/* ---- the data -------------------------------------------------------------------------------------- */

/* the ground-truth surface per frame (the synthetic sequence's, or DIR/gt.h5's) */
typedef struct {
    int frames;
    float *times;   /* frames */
    float *verts;   /* frames × nv × 3 */
    int64_t nv, nf;
    int32_t *faces; /* nf × 3 */
    float *rest;    /* nv × 3: the rest (canonical) surface */
} GtSurface;

typedef struct {
    Gs4dSynth synth;
    bool synthetic;
    DsDnerfSplit split[2]; /* training, held-out (D-NeRF folders) */
    Gs4dView *views[2];
    const Gs4dView *train, *test;
    int n_train, n_test;
    const char *test_split;
    bool has_gt;
    GtSurface gt;
    DsMotionGt gt_file;
} RunData;

/* DIR/gt.h5 of `anima dataset motion` (datasets/motion/bench.h's reader): the surface per frame.
 * 1 read, 0 absent, -1 unreadable (err). */
static int read_gt(const char *dir, DsMotionGt *raw, GtSurface *g, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/gt.h5", dir);
    if (access(path, F_OK) != 0) return 0;
    if (ds_motion_gt_load(path, raw, err, errlen)) return -1;
    *g = (GtSurface){.frames = raw->nframes, .times = raw->times, .verts = raw->vertices, .nv = raw->nv, .nf = raw->nf,
                     .faces = raw->faces, .rest = raw->rest};
    return 1;
}

static Gs4dView *views_of(const DsDnerfSplit *s) {
    Gs4dView *v = base_malloc(sizeof(Gs4dView) * (size_t)(s->n ? s->n : 1));
    for (int i = 0; i < s->n; i++) v[i] = (Gs4dView){.cam = s->views[i].cam, .time = s->views[i].time, .rgba = s->views[i].rgba};
    return v;
}

/* the held-out views from the split `prefer` names ("test": every frame, what eval reports;
 * "val": every few frames, what fit monitors and what settings are chosen on), falling back to
 * the other one */
static int load_data(const Gs4dCmdConfig *c, const char *prefer, RunData *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    const char *dir = c->data.dir;
    if (!strncmp(dir, "synthetic", 9) && (dir[9] == 0 || dir[9] == ':')) {
        const char *cat = dir[9] ? dir + 10 : "quadruped";
        if (gs4d_synth_make(cat, (uint64_t)c->seed, (int)c->data.frames, (int)c->data.views, (int)c->data.test_views,
                            (int)c->data.size, &d->synth, err, errlen))
            return -1;
        d->synthetic = d->has_gt = true;
        d->train = d->synth.train, d->n_train = d->synth.n_train;
        d->test = d->synth.test, d->n_test = d->synth.n_test;
        d->test_split = "held-out";
        Gs4dSynth *s = &d->synth;
        d->gt = (GtSurface){.frames = s->frames, .times = s->times, .verts = s->frame_verts, .nv = s->mesh.nv,
                            .nf = s->mesh.nf, .faces = s->mesh.f, .rest = s->mesh.v};
        return 0;
    }
    if (ds_dnerf_load(dir, "train", &d->split[0], err, errlen)) return -1;
    bool val = !strcmp(prefer, "val");
    const char *order[2] = {val ? "val" : "test", val ? "test" : "val"};
    char e2[1024];
    int k = 0;
    for (; k < 2; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%.4000s/transforms_%s.json", dir, order[k]);
        if (access(p, F_OK) != 0) continue;
        if (ds_dnerf_load(dir, order[k], &d->split[1], e2, sizeof e2)) {
            snprintf(err, errlen, "%s", e2);
            ds_dnerf_free(&d->split[0]);
            return -1;
        }
        break;
    }
    if (k == 2) {
        snprintf(err, errlen, "%s: no transforms_val.json or transforms_test.json (held-out views)", dir);
        ds_dnerf_free(&d->split[0]);
        return -1;
    }
    d->test_split = order[k];
    d->views[0] = views_of(&d->split[0]), d->views[1] = views_of(&d->split[1]);
    d->train = d->views[0], d->n_train = d->split[0].n;
    d->test = d->views[1], d->n_test = d->split[1].n;
    int g = read_gt(dir, &d->gt_file, &d->gt, err, errlen);
    if (g < 0) {
        ds_dnerf_free(&d->split[0]), ds_dnerf_free(&d->split[1]);
        free(d->views[0]), free(d->views[1]);
        return -1;
    }
    d->has_gt = g == 1;
    return 0;
}

static void free_data(RunData *d) {
    if (d->synthetic) gs4d_synth_free(&d->synth);
    else {
        ds_dnerf_free(&d->split[0]), ds_dnerf_free(&d->split[1]);
        free(d->views[0]), free(d->views[1]);
        if (d->has_gt) ds_motion_gt_free(&d->gt_file);
    }
    memset(d, 0, sizeof *d);
}

/* ---- outputs ----------------------------------------------------------------------------------------- */

static const double WHITE[3] = {1, 1, 1};

/* the mean PSNR (and SSIM) over the views; per_psnr / per_ssim (NULL or d->n each) take every
 * view's own, for `eval --per-view` (which frames or cameras lose) */
static double eval_views_each(const Gs4dModel *m, const Gs4dData *d, double *ssim, double *per_psnr, double *per_ssim) {
    double s = 0, ss = 0;
    for (int v = 0; v < d->n; v++) {
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = gs4d_render(m, &d->views[v].cam, d->views[v].time, WHITE), *ref = gs4d_target(d, v, WHITE);
        double p = gs_psnr(img, ref), q = ssim || per_ssim ? gs4d_ssim(img, ref) : NAN;
        s += p, ss += q;
        if (per_psnr) per_psnr[v] = p;
        if (per_ssim) per_ssim[v] = q;
        tensor_scope_end(sc);
    }
    if (ssim) *ssim = d->n ? ss / d->n : NAN;
    return d->n ? s / d->n : NAN;
}

static double eval_views(const Gs4dModel *m, const Gs4dData *d, double *ssim) {
    return eval_views_each(m, d, ssim, NULL, NULL);
}

static int write_renders(const char *dir, const Gs4dModel *m, const Gs4dData *d, char *err, size_t errlen) {
    for (int v = 0; v < d->n; v++) {
        char path[4200];
        if (snprintf(path, sizeof path, "%s/test_%03d.png", dir, v) >= (int)sizeof path) {
            snprintf(err, errlen, "%s: path too long", dir);
            return -1;
        }
        TensorScope *sc = tensor_scope_begin();
        Tensor *a = gs4d_render(m, &d->views[v].cam, d->views[v].time, WHITE), *b = tensor_contiguous(gs4d_target(d, v, WHITE));
        int h = (int)a->shape[0], w = (int)a->shape[1];
        DsImageF im;
        int rc = ds_imagef_init(&im, 2 * w, h, 3, err, errlen);
        if (rc == 0) {
            const float *pa = tensor_f32(a), *pb = tensor_f32(b);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int k = 0; k < 3; k++) {
                        float va = pa[((size_t)y * w + x) * 3 + k];
                        im.data[((size_t)y * 2 * w + x) * 3 + k] = va < 0 ? 0 : va > 1 ? 1 : va;
                        im.data[((size_t)y * 2 * w + w + x) * 3 + k] = pb[((size_t)y * w + x) * 3 + k];
                    }
            rc = ds_imagef_write(path, &im, err, errlen);
            ds_imagef_free(&im);
        }
        tensor_scope_end(sc);
        if (rc) return -1;
    }
    return 0;
}

/* RUN/turntable.gif: a camera circling the scene once while time runs from 0 to 1, at the
 * training cameras' mean distance, 20° above their mean horizon (the mean of their image-up
 * directions is taken as the world's up), with the first training camera's field of view */
static int write_turntable(const char *path, const char *mp4_path, const Gs4dModel *m, const Gs4dData *d, int nframes,
                           char *err, size_t errlen) {
    if (!path && !mp4_path) return 0;
    double up[3] = {0, 0, 0}, dist = 0;
    for (int v = 0; v < d->n; v++) {
        const DsCamera *c = &d->views[v].cam;
        double o[3];
        ds_camera_center(c, o);
        for (int a = 0; a < 3; a++) up[a] -= c->R[3 + a]; /* image y points down: up is −(row 1 of R) */
        dist += sqrt((o[0] - d->center[0]) * (o[0] - d->center[0]) + (o[1] - d->center[1]) * (o[1] - d->center[1]) +
                     (o[2] - d->center[2]) * (o[2] - d->center[2])) / d->n;
    }
    double nu = sqrt(up[0] * up[0] + up[1] * up[1] + up[2] * up[2]);
    if (!(nu > 0)) up[0] = 0, up[1] = 1, up[2] = 0, nu = 1;
    for (int a = 0; a < 3; a++) up[a] /= nu;
    /* two horizontal axes perpendicular to up */
    double e1[3] = {1, 0, 0};
    if (fabs(up[0]) > 0.9) e1[0] = 0, e1[1] = 1;
    double dot = e1[0] * up[0] + e1[1] * up[1] + e1[2] * up[2];
    for (int a = 0; a < 3; a++) e1[a] -= dot * up[a];
    double n1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    for (int a = 0; a < 3; a++) e1[a] /= n1;
    double e2[3] = {up[1] * e1[2] - up[2] * e1[1], up[2] * e1[0] - up[0] * e1[2], up[0] * e1[1] - up[1] * e1[0]};
    const DsCamera *c0 = &d->views[0].cam;
    int w = c0->width, h = c0->height;
    double fov = 2 * atan(0.5 * h / c0->fy) * 180 / M_PI, el = 20 * M_PI / 180;
    float *frames = base_malloc(sizeof(float) * 3 * (size_t)w * h * nframes);
    for (int f = 0; f < nframes; f++) {
        double az = 2 * M_PI * f / nframes, t = nframes > 1 ? (double)f / (nframes - 1) : 0, eye[3];
        for (int a = 0; a < 3; a++)
            eye[a] = d->center[a] + dist * (cos(el) * (cos(az) * e1[a] + sin(az) * e2[a]) + sin(el) * up[a]);
        DsCamera cam = ds_camera_look_at(eye, d->center, up, w, h, fov);
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = gs4d_render(m, &cam, t, WHITE);
        memcpy(frames + (size_t)f * w * h * 3, tensor_f32(img), sizeof(float) * 3 * (size_t)w * h);
        tensor_scope_end(sc);
    }
    /* 8 hundredths of a second a frame: 12.5 fps in both formats */
    int rc = path ? ds_gif_write(path, frames, w, h, nframes, 8, err, errlen) : 0;
    if (!rc && mp4_path) rc = ds_video_write_mp4(mp4_path, frames, w, h, nframes, 12.5, err, errlen);
    free(frames);
    return rc;
}

/* the distinct times of the training and held-out views, ascending */
static int frame_times(const RunData *d, double **out) {
    int n = d->n_train + d->n_test, nf = 0;
    double *t = base_malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        double v = i < d->n_train ? d->train[i].time : d->test[i - d->n_train].time;
        bool seen = false;
        for (int j = 0; j < nf && !seen; j++) seen = t[j] == v;
        if (!seen) t[nf++] = v;
    }
    for (int i = 1; i < nf; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    *out = t;
    return nf;
}

/* RUN/trajectories.h5: /times (F); /frames/{positions (F, N, 3), scales (F, N, 1|3), colors (F, N, 3),
 * opacities (F, N)}; /canonical/{the same at rest, (N, ...)}; activated values (scales exp'd, colors
 * rgb, opacities in [0, 1]); attributes producer, step, units. */
static int write_trajectories(const char *path, const Gs4dModel *m, const double *times, int nf, char *err, size_t errlen) {
    int64_t n = m->cfg.n, ns = m->cfg.isotropic ? 1 : 3;
    size_t fn = (size_t)nf * (size_t)n;
    float *pos = base_malloc(sizeof(float) * fn * 3), *sc = base_malloc(sizeof(float) * fn * ns),
          *rgb = base_malloc(sizeof(float) * fn * 3), *op = base_malloc(sizeof(float) * fn);
    for (int f = 0; f < nf; f++)
        gs4d_state_at(m, times[f], pos + (size_t)f * n * 3, sc + (size_t)f * n * ns, rgb + (size_t)f * n * 3,
                      op + (size_t)f * n);
    /* rest: the canonical set, no deformation */
    Gs4dModel rest = *m;
    rest.step = 0;
    rest.cfg.warmup = 1; /* gs4d_state_at deforms only from the warm-up on */
    float *cp = base_malloc(sizeof(float) * (size_t)n * 3), *cs = base_malloc(sizeof(float) * (size_t)n * ns),
          *cc = base_malloc(sizeof(float) * (size_t)n * 3), *co = base_malloc(sizeof(float) * (size_t)n);
    gs4d_state_at(&rest, 0, cp, cs, cc, co);
    char tmp[4200];
    int rc = -1;
    hid_t file = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (file >= 0) {
        hsize_t dt[1] = {(hsize_t)nf};
        hsize_t d3[3] = {(hsize_t)nf, (hsize_t)n, 3}, ds[3] = {(hsize_t)nf, (hsize_t)n, (hsize_t)ns}, d2[2] = {(hsize_t)nf, (hsize_t)n};
        hsize_t c3[2] = {(hsize_t)n, 3}, cs2[2] = {(hsize_t)n, (hsize_t)ns}, c1[1] = {(hsize_t)n};
        size_t chunk = 1 << 20;
        bool ok = base_h5_write_checked(file, "times", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, dt, times, chunk, false) == 0 &&
                  base_h5_write_checked(file, "frames/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, pos, chunk, true) == 0 &&
                  base_h5_write_checked(file, "frames/scales", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, ds, sc, chunk, true) == 0 &&
                  base_h5_write_checked(file, "frames/colors", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, rgb, chunk, true) == 0 &&
                  base_h5_write_checked(file, "frames/opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, op, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, c3, cp, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/scales", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, cs2, cs, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/colors", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, c3, cc, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, c1, co, chunk, true) == 0 &&
                  base_h5_attr_str(file, "producer", "anima gs4d fit") == 0 && base_h5_attr_i64(file, "step", m->step) == 0 &&
                  base_h5_attr_str(file, "units", "positions and scales in the input cameras' world units; scales are "
                                                  "standard deviations (exp of the raw log-scales); colors RGB in [0, 1] "
                                                  "(SH degree 0); opacities in [0, 1]") == 0;
        rc = base_h5_save_end(file, tmp, path, ok, "trajectories", err, errlen);
    }
    free(pos), free(sc), free(rgb), free(op), free(cp), free(cs), free(cc), free(co);
    return rc;
}

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
                             .keys = GS4D_SCHEMA};
    int prc = cmd_args_parse(&spec, argc, argv, 1, errf, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    Gs4dCmdConfig cfg;
    char err[8192];
    bool from_ckpt = false; /* --resume without --config: the run's own config (then --set) */
    if (cmd_args_config_run(&spec, errf, config_path, &sets, GS4D_SCHEMA, &cfg, resume, out, &from_ckpt)) return 2;
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
    RunData rd;
    if (load_data(&cfg, "val", &rd, err, sizeof err)) {
        if (is_main) fprintf(stderr, "anima gs4d fit: %s\n", err);
        return 2;
    }
    TensorScope *scope = tensor_scope_begin();
    Gs4dData dtr, dte;
    if (gs4d_data_make(rd.train, rd.n_train, &dtr, err, sizeof err) ||
        gs4d_data_make(rd.test, rd.n_test, &dte, err, sizeof err)) {
        if (is_main) fprintf(stderr, "anima gs4d fit: %s: %s\n", cfg.data.dir, err);
        free_data(&rd);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return 2;
    }
    char *cfg_json = ds_config_to_json(GS4D_SCHEMA, &cfg);
    int rc = 0;
    if (is_main && cmd_make_dirs(renders) != 0) {
        fprintf(stderr, "anima gs4d fit: cannot create the output directory %s (%s)\n", renders, strerror(errno));
        rc = 1;
    } else if (is_main && cmd_write_text(cfg_path, cfg_json, err, sizeof err)) {
        fprintf(stderr, "anima gs4d fit: %s\n", err);
        rc = 1;
    }
    if (ranks > 1) rc = optim_comm_allreduce_sum_scalar(comm, rc) > 0;
    Gs4dConfig mc = model_config(&cfg);
    Gs4dModel m;
    gs4d_init(&m, &mc, &dtr, NULL);
    int bones = (int)cfg.train.recluster_bones;
    if (mc.recluster_every > 0) gs4d_set_recluster(&m, sb_cluster_labels_cb, &bones); /* Skelebones' LBG-VQ (the tool may use both model families; models/gs4d may not depend on models/skelebones) */
    double psnr0 = rc || !is_main || no_eval ? NAN : eval_views(&m, &dte, NULL);
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
        free_data(&rd);
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
        double psnr = log_now && is_main && !no_eval ? eval_views(&m, &dte, NULL) : NAN;
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
        free_data(&rd);
        free(cfg_json);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return rc;
    }
    double ssim = NAN, psnr = NAN, psnr_tr = NAN;
    /* interrupted: exit at once with the checkpoint; the final PSNRs render every held-out and
     * training view (6300 renders, minutes of CPU, on the 300-frame default benchmark) */
    bool signaled = rc >= 128;
    if (!no_eval && !signaled) psnr = eval_views(&m, &dte, &ssim), psnr_tr = eval_views(&m, &dtr, NULL);
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
        int nf = frame_times(&rd, &times);
        err[0] = 0;
        if (gs4d_export(&m, &g) || ds_gaussians_write(ply_path, &g, err, sizeof err) ||
            write_trajectories(traj_path, &m, times, nf, err, sizeof err) || write_renders(renders, &m, &dte, err, sizeof err) ||
            write_turntable(want_gif ? gif_path : NULL, want_mp4 ? mp4_path : NULL, &m, &dtr, (int)cfg.train.turntable_frames,
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
    free_data(&rd);
    free(cfg_json);
    tensor_scope_end(scope);
    tensor_runtime_shutdown();
    return rc;
}

static bool wants_cuda(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--device") && !strcmp(argv[i + 1], "cuda")) return true;
    return false;
}

static int gs4d_fit_main(int argc, char **argv) {
    /* --device cuda on several ranks: NCCL for the device gradients (host buffers still go over MPI) */
    OptimComm *comm = optim_comm_init(wants_cuda(argc, argv));
    int rc = gs4d_fit_run(argc, argv, comm);
    optim_comm_finalize(comm);
    return rc;
}

/* ---- eval ----------------------------------------------------------------------------------------------- */

static int gs4d_eval_main(int argc, char **argv) {
    static const char *const SPLITS[] = {"test", "val", NULL};
    const char *split = "test", *per_view = NULL;
    CmdArg args[] = {
        {"--split", CMD_ARG_CHOICE, &split, "S",
         "test (default; the views to report) or val (the views to choose settings on)", .choices = SPLITS},
        {"--per-view", CMD_ARG_STRING, &per_view, "FILE",
         "also write each held-out view's PSNR / SSIM (with its time and camera) and each frame's Chamfer sides, tab-separated"},
        {0}};
    const CmdArgSpec spec = {"anima gs4d eval", "RUN [--split test|val] [--per-view FILE]",
                             "held-out PSNR / SSIM of a gs4d fit, and with ground truth the Chamfer distance of the\n"
                             "Gaussian centers to the surface per frame and the local-rigidity error of the trajectories",
                             args, NULL, 1, 1};
    const char *pos[1];
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    const char *run = pos[0];
    char path[4200], ckpt[4200], err[8192];
    snprintf(path, sizeof path, "%.4000s/config.json", run);
    snprintf(ckpt, sizeof ckpt, "%.4000s/ckpt.h5", run);
    Gs4dCmdConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    if (ds_config_load(path, GS4D_SCHEMA, &cfg, err, sizeof err)) {
        fprintf(stderr, "anima gs4d eval: %s\n", err);
        return 2;
    }
    RunData rd;
    if (load_data(&cfg, split, &rd, err, sizeof err)) {
        fprintf(stderr, "anima gs4d eval: %s\n", err);
        return 2;
    }
    TensorScope *scope = tensor_scope_begin();
    Gs4dData dtr, dte;
    int rc = 0;
    if (gs4d_data_make(rd.train, rd.n_train, &dtr, err, sizeof err) || gs4d_data_make(rd.test, rd.n_test, &dte, err, sizeof err)) {
        fprintf(stderr, "anima gs4d eval: %s\n", err);
        free_data(&rd);
        tensor_scope_end(scope);
        tensor_runtime_shutdown();
        return 2;
    }
    Gs4dConfig mc = model_config(&cfg);
    Gs4dModel m;
    gs4d_init(&m, &mc, &dtr, NULL);
    OptimCheckpointMeta meta = {0};
    if (optim_checkpoint_load(ckpt, &m.params, NULL, true, &meta, err, sizeof err)) {
        fprintf(stderr, "anima gs4d eval: %s\n", err);
        rc = 1;
    } else {
        free(meta.config_json);
        gs4d_set_step(&m, meta.step);
        double *pv = per_view ? base_malloc(sizeof(double) * 2 * (size_t)(dte.n ? dte.n : 1)) : NULL;
        double ssim, psnr = eval_views_each(&m, &dte, &ssim, pv, pv ? pv + dte.n : NULL);
        /* --per-view: one line per view, then (with ground truth) one per frame, filled below */
        size_t tcap = 0, tlen = 0;
        char *text = NULL;
        if (pv) {
            tcap = 256 + 96 * (size_t)dte.n + 96 * (size_t)(rd.has_gt ? rd.gt.frames : 0);
            text = base_malloc(tcap);
            tlen += (size_t)snprintf(text + tlen, tcap - tlen, "# kind\tindex\ttime\televation_deg\tazimuth_deg\tpsnr_db\tssim\n");
            for (int v = 0; v < dte.n; v++) {
                double o[3];
                ds_camera_center(&dte.views[v].cam, o);
                for (int a = 0; a < 3; a++) o[a] -= dte.center[a];
                double r = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]);
                /* y is up in the D-NeRF (OpenGL) convention */
                double el = r > 0 ? asin(o[1] / r) * 180 / M_PI : 0, az = atan2(o[0], o[2]) * 180 / M_PI;
                tlen += (size_t)snprintf(text + tlen, tcap - tlen, "view\t%d\t%.5f\t%.1f\t%.1f\t%.3f\t%.4f\n", v,
                                         dte.views[v].time, el, az, pv[v], pv[dte.n + v]);
            }
            if (rd.has_gt)
                tlen += (size_t)snprintf(text + tlen, tcap - tlen,
                                         "# kind\tindex\ttime\tchamfer_pct\tcenters_to_surface_pct\tsurface_to_centers_pct\tvisible\t"
                                         "surface_chamfer_pct\trendered_to_surface_pct\tvisible_surface_to_rendered_pct\n");
        }
        printf("%s at step %lld: held-out PSNR %.2f dB, SSIM %.4f over %d %s views\n", run, (long long)meta.step, psnr, ssim,
               dte.n, rd.test_split);
        if (rd.has_gt) {
            const GtSurface *s = &rd.gt;
            int64_t n = mc.n, nv = s->nv;
            int ns = mc.isotropic ? 1 : 3;
            float *pos3 = base_malloc(sizeof(float) * (size_t)n * 3 * (size_t)s->frames), *sc = base_malloc(sizeof(float) * (size_t)n * ns);
            float *rgb = base_malloc(sizeof(float) * (size_t)n * 3), *op = base_malloc(sizeof(float) * (size_t)n);
            float *vis = base_malloc(sizeof(float) * (size_t)n * 3);
            /* surface samples: area-weighted barycentric points of the canonical triangles, carried
             * along with the vertices per frame (plus the vertices themselves) */
            int64_t ns_s = 20000;
            float *samp = base_malloc(sizeof(float) * 3 * (size_t)(ns_s + nv));
            double *cum = base_malloc(sizeof(double) * (size_t)(s->nf ? s->nf : 1));
            double area = 0;
            for (int64_t t = 0; t < s->nf; t++) {
                const int32_t *f = s->faces + 3 * t;
                const float *a = s->rest + 3 * f[0], *b = s->rest + 3 * f[1], *c = s->rest + 3 * f[2];
                double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
                double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
                area += 0.5 * sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
                cum[t] = area;
            }
            int64_t *tri = base_malloc(sizeof(int64_t) * (size_t)ns_s);
            double *bary = base_malloc(sizeof(double) * 2 * (size_t)ns_s);
            TensorRng g = {.seed = 7, .stream = 11};
            uint32_t w[4];
            for (int64_t i = 0; i < ns_s; i++) {
                tensor_philox(g.seed, g.stream, g.offset++, w);
                double u = w[0] / 4294967296.0 * area, r1 = w[1] / 4294967296.0, r2 = w[2] / 4294967296.0;
                int64_t lo = 0, hi = s->nf - 1;
                while (lo < hi) {
                    int64_t mid = (lo + hi) / 2;
                    if (cum[mid] > u) hi = mid;
                    else lo = mid + 1;
                }
                if (r1 + r2 > 1) r1 = 1 - r1, r2 = 1 - r2;
                tri[i] = lo, bary[2 * i] = r1, bary[2 * i + 1] = r2;
            }
            /* a pixel's footprint at the scene center, and the rasterizer's screen-space dilation
             * of every Gaussian (model.dilation px², 0.3 by default: σ ≥ 0.55 px on screen) in world
             * units: the resolution's own limit; σ_eff = √(σ² + dilation) is the blur a Gaussian's
             * silhouette has */
            double o[3], px;
            ds_camera_center(&dte.views[0].cam, o);
            px = sqrt((o[0] - dte.center[0]) * (o[0] - dte.center[0]) + (o[1] - dte.center[1]) * (o[1] - dte.center[1]) +
                      (o[2] - dte.center[2]) * (o[2] - dte.center[2])) / dte.views[0].cam.fx;
            /* (rendered at supersample × the resolution, the dilation is that much smaller) */
            double ssk = mc.supersample > 1 ? mc.supersample : 1;
            double dil2 = mc.dilation * px * px / (ssk * ssk), med_eff = 0, med_scale = 0;
            double diag_mean = 0, cham = 0, cham_max = 0, side_cs = 0, side_sc = 0, floor_c = 0, inside = 0, med_sig = 0, nvis_mean = 0;
            static const double QUANT[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
            double squant[5] = {0};
            double *dist = base_malloc(sizeof(double) * (size_t)n), *sig = base_malloc(sizeof(double) * (size_t)n);
            double *sige = base_malloc(sizeof(double) * (size_t)n);
            float *visr = base_malloc(sizeof(float) * (size_t)n);
            int64_t *near = base_malloc(sizeof(int64_t) * (size_t)n);
            float *inset_pts = base_malloc(sizeof(float) * 3 * (size_t)n);
            double inset_c = 0, inset_cs = 0, inset_sc = 0;
            /* the rendered surface (gs4d_surface_points) from the held-out views of each frame, and the
             * true surface those views see (the mesh rasterized through them), both back-projected */
            enum { SURF_PER_VIEW = 4000 };
            int maxv = 0;
            for (int f = 0, cnt = 0; f < s->frames; f++, cnt = 0) {
                for (int v = 0; v < dte.n; v++) cnt += fabs(dte.views[v].time - s->times[f]) < 1e-6;
                if (cnt > maxv) maxv = cnt;
            }
            float *surf = base_malloc(sizeof(float) * 3 * SURF_PER_VIEW * (size_t)(maxv ? maxv : 1));
            float *seen = base_malloc(sizeof(float) * 3 * SURF_PER_VIEW * (size_t)(maxv ? maxv : 1));
            double surf_c = 0, surf_cs = 0, surf_sc = 0;
            int surf_frames = 0;
            for (int f = 0; f < s->frames; f++) {
                const float *V = s->verts + (size_t)f * nv * 3;
                double lo3[3] = {INFINITY, INFINITY, INFINITY}, hi3[3] = {-INFINITY, -INFINITY, -INFINITY};
                for (int64_t i = 0; i < nv; i++)
                    for (int a = 0; a < 3; a++) {
                        samp[3 * (ns_s + i) + a] = V[3 * i + a];
                        lo3[a] = fmin(lo3[a], V[3 * i + a]), hi3[a] = fmax(hi3[a], V[3 * i + a]);
                    }
                for (int64_t i = 0; i < ns_s; i++) {
                    const int32_t *t = s->faces + 3 * tri[i];
                    for (int a = 0; a < 3; a++)
                        samp[3 * i + a] = (float)(V[3 * t[0] + a] + bary[2 * i] * (V[3 * t[1] + a] - V[3 * t[0] + a]) +
                                                  bary[2 * i + 1] * (V[3 * t[2] + a] - V[3 * t[0] + a]));
                }
                float *P = pos3 + (size_t)f * n * 3;
                gs4d_state_at(&m, s->times[f], P, sc, rgb, op);
                /* the Gaussians that show: opacity ≥ 0.05 (fainter ones are invisible floaters);
                 * their scale: the smallest axis when anisotropic (a flat splat's thickness, what
                 * blurs its silhouette edge-on) */
                int64_t nvis = 0;
                for (int64_t i = 0; i < n; i++)
                    if (op[i] >= 0.05f) {
                        visr[nvis] = mc.isotropic ? sc[i] : fminf(sc[3 * i], fminf(sc[3 * i + 1], sc[3 * i + 2]));
                        memcpy(vis + 3 * nvis++, P + 3 * i, sizeof(float) * 3);
                    }
                double diag = sqrt((hi3[0] - lo3[0]) * (hi3[0] - lo3[0]) + (hi3[1] - lo3[1]) * (hi3[1] - lo3[1]) +
                                   (hi3[2] - lo3[2]) * (hi3[2] - lo3[2]));
                double cs, scd;
                gs4d_chamfer_sides(vis, nvis, samp, ns_s + nv, &cs, &scd);
                double c = nvis ? 100 * 0.5 * (cs + scd) / diag : NAN;
                cham += c / s->frames;
                cham_max = fmax(cham_max, c);
                diag_mean += diag / s->frames;
                side_cs += 100 * cs / diag / s->frames, side_sc += 100 * scd / diag / s->frames;
                nvis_mean += (double)nvis / s->frames;
                int64_t nsurf = 0, nseen = 0;
                for (int v = 0; v < dte.n; v++) {
                    if (!(fabs(dte.views[v].time - s->times[f]) < 1e-6)) continue;
                    const DsCamera *cv = &dte.views[v].cam;
                    nsurf += gs4d_surface_points(&m, cv, s->times[f], 0.5, surf + 3 * nsurf, SURF_PER_VIEW);
                    DsMesh gm = {.nv = nv, .nf = s->nf, .v = (float *)V, .f = s->faces};
                    DsRender rr;
                    char rerr[256];
                    if (ds_raster_render(&gm, cv, NULL, &rr, rerr, sizeof rerr) == 0) {
                        nseen += ds_camera_backproject(cv, rr.depth, rr.alpha, 0.5, seen + 3 * nseen, SURF_PER_VIEW);
                        ds_render_free(&rr);
                    }
                }
                double sc_ab = NAN, sc_ba = NAN, sc_c = NAN;
                if (nsurf && nseen) {
                    double tmp;
                    gs4d_chamfer_sides(surf, nsurf, samp, ns_s + nv, &sc_ab, &tmp);
                    gs4d_chamfer_sides(seen, nseen, surf, nsurf, &sc_ba, &tmp);
                    sc_ab *= 100 / diag, sc_ba *= 100 / diag, sc_c = 0.5 * (sc_ab + sc_ba);
                    surf_c += sc_c, surf_cs += sc_ab, surf_sc += sc_ba, surf_frames++;
                }
                if (text)
                    tlen += (size_t)snprintf(text + tlen, tcap - tlen, "frame\t%d\t%.5f\t%.3f\t%.3f\t%.3f\t%lld\t%.3f\t%.3f\t%.3f\n", f,
                                             s->times[f], c, 100 * cs / diag, 100 * scd / diag, (long long)nvis, sc_c, sc_ab, sc_ba);
                /* what the metric gives for as many points as perfectly on the surface (uniform
                 * samples, the first nvis of the i.i.d. ones): the floor n Gaussians can reach */
                if (nvis && nvis <= ns_s) floor_c += 100 * gs4d_chamfer(samp, nvis, samp, ns_s + nv) / diag / s->frames;
                /* signed distance of each visible center to the surface: the distance to the
                 * nearest triangle sample, negative when behind that sample's triangle (outward
                 * normals: the winding that gives the mesh a positive volume), in units of the
                 * Gaussian's own scale */
                if (nvis) {
                    double vol6 = 0;
                    for (int64_t t = 0; t < s->nf; t++) {
                        const float *a = V + 3 * s->faces[3 * t], *b = V + 3 * s->faces[3 * t + 1], *cc = V + 3 * s->faces[3 * t + 2];
                        vol6 += a[0] * ((double)b[1] * cc[2] - (double)b[2] * cc[1]) - a[1] * ((double)b[0] * cc[2] - (double)b[2] * cc[0]) +
                                a[2] * ((double)b[0] * cc[1] - (double)b[1] * cc[0]);
                    }
                    gs4d_nearest(samp, ns_s, vis, nvis, dist, near);
                    int64_t nin = 0;
                    for (int64_t i = 0; i < nvis; i++) {
                        const int32_t *t = s->faces + 3 * tri[near[i]];
                        const float *a = V + 3 * t[0], *b = V + 3 * t[1], *cc = V + 3 * t[2];
                        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
                        double nr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
                        const float *q = samp + 3 * near[i], *pp = vis + 3 * i;
                        double dot = (pp[0] - q[0]) * nr[0] + (pp[1] - q[1]) * nr[1] + (pp[2] - q[2]) * nr[2];
                        bool in = (dot < 0) == (vol6 > 0);
                        nin += in;
                        sig[i] = (in ? -dist[i] : dist[i]) / (visr[i] > 0 ? visr[i] : 1);
                        sige[i] = (in ? -dist[i] : dist[i]) / sqrt((double)visr[i] * visr[i] + dil2);
                        dist[i] = 100 * (in ? -dist[i] : dist[i]) / diag;
                    }
                    qsort(dist, (size_t)nvis, sizeof(double), base_cmp_double);
                    for (int qi = 0; qi < 5; qi++) squant[qi] += dist[(int64_t)((nvis - 1) * QUANT[qi])] / s->frames;
                    /* the floor's samples pushed inward along their triangle's normal by the
                     * centers' median depth: what a perfect layer at that depth would score, so
                     * the inset's share of the Chamfer distance is measured, not guessed */
                    double depth = fmax(0, -dist[nvis / 2]) * diag / 100;
                    if (nvis <= ns_s) {
                        for (int64_t i = 0; i < nvis; i++) {
                            const int32_t *t = s->faces + 3 * tri[i];
                            const float *a = V + 3 * t[0], *b = V + 3 * t[1], *cc = V + 3 * t[2];
                            double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
                            double nr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
                            double ln = sqrt(nr[0] * nr[0] + nr[1] * nr[1] + nr[2] * nr[2]), sgn = vol6 > 0 ? -1 : 1;
                            for (int ax = 0; ax < 3; ax++)
                                inset_pts[3 * i + ax] = (float)(samp[3 * i + ax] + (ln > 0 ? sgn * depth * nr[ax] / ln : 0));
                        }
                        double ics, isc;
                        gs4d_chamfer_sides(inset_pts, nvis, samp, ns_s + nv, &ics, &isc);
                        inset_c += 100 * 0.5 * (ics + isc) / diag / s->frames;
                        inset_cs += 100 * ics / diag / s->frames, inset_sc += 100 * isc / diag / s->frames;
                    }
                    inside += (double)nin / (double)nvis / s->frames;
                    /* the median (selection by sorting a copy is fine at these sizes) */
                    qsort(sig, (size_t)nvis, sizeof(double), base_cmp_double);
                    med_sig += sig[nvis / 2] / s->frames;
                    qsort(sige, (size_t)nvis, sizeof(double), base_cmp_double);
                    med_eff += sige[nvis / 2] / s->frames;
                    for (int64_t i = 0; i < nvis; i++) sige[i] = visr[i];
                    qsort(sige, (size_t)nvis, sizeof(double), base_cmp_double);
                    med_scale += 100 * sige[nvis / 2] / diag / s->frames;
                }
            }
            free(dist), free(sig), free(sige), free(visr), free(near), free(inset_pts), free(surf), free(seen);
            /* rigidity: the trajectories' local neighborhoods (the kNN of the canonical centers)
             * against the ground-truth surface's own (the kNN of the canonical vertices) */
            int k = 8;
            float *rest = base_malloc(sizeof(float) * (size_t)n * 3);
            {
                Gs4dModel r = m;
                r.step = 0, r.cfg.warmup = 1;
                gs4d_state_at(&r, 0, rest, sc, rgb, op);
            }
            int32_t *nbr = base_malloc(sizeof(int32_t) * (size_t)n * k), *nbv = base_malloc(sizeof(int32_t) * (size_t)nv * k);
            gs4d_knn(rest, n, NULL, k, nbr);
            gs4d_knn(s->rest, nv, NULL, k, nbv);
            double rig = gs4d_rigidity_error(pos3, s->frames, rest, n, nbr, k);
            double rig_gt = gs4d_rigidity_error(s->verts, s->frames, s->rest, nv, nbv, k);
            if (surf_frames)
                printf("surface Chamfer (the rendered surface: expected depth at alpha > 0.5 from the held-out views, "
                       "back-projected): mean %.3f%% of the bbox diagonal over %d frames (rendered -> surface %.3f%%, the "
                       "surface those views see -> rendered %.3f%%)\n",
                       surf_c / surf_frames, surf_frames, surf_cs / surf_frames, surf_sc / surf_frames);
            else
                printf("surface Chamfer: no held-out view at a ground-truth frame's time\n");
            printf("Chamfer (visible centers vs surface): mean %.3f%%, max %.3f%% of the bbox diagonal over %d frames\n",
                   cham, cham_max, s->frames);
            printf("  sides: centers -> surface %.3f%%, surface -> centers %.3f%% (%.0f visible centers; the same number of "
                   "points exactly on the surface: Chamfer %.3f%%)\n", side_cs, side_sc, nvis_mean, floor_c);
            printf("  bbox diagonal %.4g; one pixel at the scene center is %.3f%% of it; median scale of the visible "
                   "Gaussians %.3f%%%s\n", diag_mean, 100 * px / diag_mean, med_scale, mc.isotropic ? "" : " (smallest axis)");
            printf("  signed: %.1f%% of the visible centers inside the surface, median signed distance %.2f x their own "
                   "scale, %.2f x sqrt(scale^2 + the dilation); quantiles 5/25/50/75/95%%: %.2f %.2f %.2f %.2f %.2f %% of the "
                   "diagonal\n", 100 * inside, med_sig, med_eff,
                   squant[0], squant[1], squant[2], squant[3], squant[4]);
            printf("  inset floor: the same surface points pushed inward by the median depth: Chamfer %.3f%% "
                   "(centers -> surface %.3f%%, surface -> centers %.3f%%)\n", inset_c, inset_cs, inset_sc);
            printf("local-rigidity error (RMS non-rigid residual of 8-NN neighborhoods / their size): %.3f%% "
                   "(ground truth's own: %.3f%%)\n", 100 * rig, 100 * rig_gt);
            free(pos3), free(sc), free(rgb), free(op), free(vis), free(samp), free(cum), free(tri), free(bary), free(rest);
            free(nbr), free(nbv);
        } else {
            printf("no ground truth in %s: Chamfer and rigidity not computed\n", cfg.data.dir);
        }
        if (text && cmd_write_text(per_view, text, err, sizeof err)) {
            fprintf(stderr, "anima gs4d eval: %s\n", err);
            rc = 1;
        }
        free(text), free(pv);
    }
    gs4d_free(&m);
    gs4d_data_free(&dtr), gs4d_data_free(&dte);
    free_data(&rd);
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
