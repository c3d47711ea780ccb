/* models/gs4d/config.c — the run configuration's schema and its model configuration (config.h) */
#include "models/gs4d/config.h"

#include <stddef.h>
#include <string.h>


#define NO_RANGE .min = 1, .max = 0
#define F(sec, name) offsetof(Gs4dRunConfig, sec.name) - offsetof(Gs4dRunConfig, sec)

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
    {"root", DS_CFG_BOOL, F(model, root), "false", NO_RANGE,
     .help = "deform nodes: a learned rigid transform of the whole set per training frame (the body's pose), "
             "after the node deformation, about the nodes' centroid; warm-started like the table"},
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
    {"lr_root", DS_CFG_FLOAT, F(optim, lr_root), "1e-2", 0, 1, .help = "model.root's per-frame poses (constant, not x extent)"},
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
     .help = "model.node_table / model.root: x the squared difference of the drawn frame's rows to its neighbors' "
             "(the table's per node)"},
    {"ramp_front", DS_CFG_FLOAT, F(train, ramp_front), "0", 0, 0.99,
     .help = "with time_ramp: the fraction of the ramp's draws that train on the newest admitted time's views "
             "(sequential per-frame tracking; Gs4dConfig.ramp_front)"},
    {"root_search", DS_CFG_INT, F(train, root_search), "0", 0, 64,
     .help = "model.root with time_ramp: each admitted frame's pose refined by a search over turns (32 to 2 "
             "degrees about the world axes), by the L1 of this many of its views (0: off)"},
    {"warm_codes", DS_CFG_BOOL, F(train, warm_codes), "false", NO_RANGE,
     .help = "under the time ramp, each newly admitted frame's time code starts from the previous frame's, as "
             "its table and root rows do (else from its random init)"},
    {"random_background", DS_CFG_BOOL, F(train, random_background), "true", NO_RANGE,
     .help = "a random background color per step behind the RGBA targets (else a fixed one)"},
    {"recluster_every", DS_CFG_INT, F(train, recluster_every), "0", 0, 1e9,
     .help = "every N deformation steps, the ARAP clusters become Skelebones' LBG-VQ motion clusters of the "
             "current trajectories (0: one cluster throughout)"},
    {"recluster_bones", DS_CFG_INT, F(train, recluster_bones), "8", 1, GS4D_MAX_RECLUSTER, .help = "LBG-VQ's target cluster count"},
    {"recluster_frames", DS_CFG_INT, F(train, recluster_frames), "16", 1, 10000,
     .help = "training times (evenly picked) whose trajectories LBG-VQ sees"},
    {0}};
const DsConfigField GS4D_RUN_SCHEMA[] = {
    {"seed", DS_CFG_INT, offsetof(Gs4dRunConfig, seed), "0", 0, 9e15,
     .help = "seed of the Gaussians' and MLP's init, the view order and the random backgrounds"},
    {"data", DS_CFG_OBJECT, offsetof(Gs4dRunConfig, data), .fields = DATA_FIELDS},
    {"model", DS_CFG_OBJECT, offsetof(Gs4dRunConfig, model), .fields = MODEL_FIELDS},
    {"optim", DS_CFG_OBJECT, offsetof(Gs4dRunConfig, optim), .fields = OPTIM_FIELDS},
    {"train", DS_CFG_OBJECT, offsetof(Gs4dRunConfig, train), .fields = TRAIN_FIELDS},
    {0}};

Gs4dConfig gs4d_run_model_config(const Gs4dRunConfig *c) {
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
    g.node_table = c->model.node_table, g.table_smooth = c->train.table_smooth, g.root = c->model.root;
    g.warm_codes = c->train.warm_codes, g.ramp_front = c->train.ramp_front, g.root_search = (int)c->train.root_search;
    g.lr_nodes = c->optim.lr_nodes, g.lr_node_radius = c->optim.lr_node_radius, g.lr_root = c->optim.lr_root;
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
