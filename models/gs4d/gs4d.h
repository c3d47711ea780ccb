/* models/gs4d/gs4d.h — deformable 3D Gaussians (GaussiAnimate §3.1, after Deformable 3DGS, Yang
 * et al. 2024, and SC-GS; ../shared/notes/gaussianimate.md §3): a canonical set of Gaussians
 * plus a deformation MLP D(γ(x), γ(t)) → Δμ, Δs (Δq when anisotropic), optionally Δc, Δo,
 * fitted to posed, timed RGBA images with the 3DGS photometric loss (models/gaussians/loss.h)
 * and the ARAP + distance regularizer (arap.h).
 *
 * Model
 * - Canonical Gaussians: means (N, 3), raw log-scales (N, 1) isotropic (the paper's choice) or
 *   (N, 3), raw quaternions (N, 4) when anisotropic, opacity logits (N, 1), SH DC colors (N, 1, 3)
 *   (SH degree 0: the benchmark's surfaces are Lambertian).
 * - MLP: input [γ(x), γ(t)] with γ the NeRF encoding without π (nn_fourier_embed: input, then
 *   sines, then cosines; freq_x = 10, freq_t = 6 in the paper), x the canonical mean *detached*
 *   (as Deformable 3DGS feeds get_xyz.detach(): the positional gradient reaches μ through μ + Δμ
 *   only, not through the encoding, whose high frequencies would make it noisy); `depth` ReLU
 *   layers of `width` (8 × 256), the input concatenated again before layer `skip` (4); linear heads
 *   for Δμ (3), Δs (1 or 3), Δq (4), Δc (3), Δo (1), weights N(0, head_init²) (1e-5: the
 *   deformation starts at the identity but every layer already gets a gradient) and zero biases.
 *   Deformed: μ + Δμ, s + Δs (log space), q + Δq, c + Δc, o + Δo (logit), as Deformable 3DGS adds.
 *
 * Training (gs4d_step)
 * - One training view per step (a permutation per epoch, optim_data_order); the target is its
 *   RGB composited over the step's background (a random color with random_background, else
 *   cfg.background), so empty space must become transparent.
 * - Static warm-up: the first `warmup` steps render the canonical set alone (Deformable 3DGS:
 *   3000 of 40k), so the MLP starts from a reasonable shape; then the deformed set at the view's
 *   time, plus arap_weight × the ARAP loss between the deformed and canonical means.
 * - Time curriculum (time_ramp > 0; off in the presets, docs/gaussianimate.md §3): the canonical set is carved from, and warmed up
 *   on, the first time's views (with monocular input, the first times' until 8 views); then the window of times a step may draw widens to all of them
 *   over time_ramp steps (gs4d_pick_view), so a fast part is never asked to jump further than
 *   the MLP's extrapolation in t brings it (why: Gs4dConfig.time_ramp).
 * - Optional silhouette Chamfer term (silhouette_weight, silhouette.h): a long-range pull of the
 *   centers into each view's mask and onto its contour.
 * - Parameters live in one NnParams (one flat buffer, so optim/checkpoint.h saves and resumes
 *   everything) with one Adam per group over its slice of the flat buffers: Adam is invariant
 *   to the gradient's scale, so the 3DGS learning rates that differ by orders of magnitude need
 *   separate optimizers. Means and MLP rates decay log-linearly from lr_start to their final
 *   values at lr_steps (3DGS / Deformable 3DGS schedules, ×extent).
 * - Densification at a fixed budget n (the house style of models/gaussians/fit.h, which keeps the
 *   flat parameter and Adam buffers and the MLP batch shape fixed, so a checkpoint has one shape
 *   for the whole run): every densify_every steps up to refine_until, Gaussians whose opacity
 *   fell below prune_opacity are "pruned" by becoming the new Gaussians 3DGS's densification
 *   would add: sources are the live Gaussians whose view-space positional gradient, averaged over
 *   the steps that saw them, exceeds densify_grad (3DGS's NDC units), largest first; a source
 *   larger than split_scale × extent is split (both halves drawn from N(μ, Σ), scales / 1.6),
 *   a smaller one is cloned (a copy drawn from N(μ, Σ), the pair's opacity split as
 *   1 − (1 − o)^(1/2)); dead slots left over are relocated onto live Gaussians drawn by opacity
 *   (3DGS-MCMC), as in the static fitter. Opacity reset (o ← min(o, 0.01)) every reset_every.
 *   The adaptation to isotropy: "larger" is the single scale, and the split samples an isotropic
 *   N(μ, s² I).
 * - The kNN pairs of the ARAP loss are recomputed every knn_every steps from the canonical means
 *   inside the cluster labels given to gs4d_init (all 0 for now; moved Gaussians take their
 *   source's label).
 * - Everything a step reads is in the NnParams (the densification statistics, labels and
 *   neighbor lists ride along as buffers, like PyTorch's registered buffers in a state_dict),
 *   in the caller's TensorRng, or a function of (config, step), so a run resumed from a
 *   checkpoint continues bit-identically. */
#ifndef ANIMA_MODELS_GS4D_GS4D_H
#define ANIMA_MODELS_GS4D_GS4D_H

#include <stdbool.h>
#include <stdint.h>

#include "datasets/mesh/gaussian_ply.h"
#include "datasets/render/camera.h"
#include "models/gaussians/rasterize.h"
#include "nn/modules.h"
#include "optim/comm.h"
#include "optim/optim.h"
#include "silhouette.h"

enum { GS4D_INIT_TORCH, GS4D_INIT_HE };
/* the deformation model: a per-Gaussian MLP (Deformable 3DGS; the paper's) or sparse control
 * nodes (SC-GS, nodes.h) */
enum { GS4D_DEFORM_MLP, GS4D_DEFORM_NODES };
/* what the MLP sees of time: γ(t) (the NeRF encoding), a learned code per training frame
 * (linearly interpolated between frames; Nerfies / HyperNeRF's per-frame latents), or both */
enum { GS4D_TIME_FOURIER, GS4D_TIME_LATENT, GS4D_TIME_BOTH };

typedef struct {
    int64_t n;
    bool isotropic;
    uint64_t seed;
    double init_opacity, init_scale; /* init_scale × the mean spacing (box volume / n)^(1/3) */
    /* deformation MLP */
    /* freq_t: GS4D_FREQ_T_AUTO (-1) derives it from the training times (gs4d_auto_freq_t) */
    int depth, width, skip, freq_x, freq_t;
    bool deform_color, deform_opacity;
    double head_init;
    /* the trunk's init. GS4D_INIT_TORCH: PyTorch's nn.Linear default, U(±1/√fan_in) on weights
     * and biases (Deformable 3DGS). GS4D_INIT_HE: He's N(0, 2/fan_in) weights and zero biases, the
     * ReLU init. Why: under the PyTorch default each ReLU layer shrinks the input-dependent part
     * of its pre-activations ~2.5×, and by layer 8 it is ~0.01 against biases of ~0.05, so the
     * trunk's output hardly depends on (x, t) at the start; Adam (eps 1e-15) moves every bias by
     * ~lr (≈ 1e-3) a step, which soon outweighs that part: layers go dead or constant and some runs
     * end with one rigid motion for every Gaussian (docs/gaussianimate.md §3, session 24). He's
     * init keeps the spread ~0.5 through all eight layers; alone it did not stop every collapse
     * (redo_every does). */
    int trunk_init;
    /* the deformation model (GS4D_DEFORM_MLP: D runs on every Gaussian; GS4D_DEFORM_NODES: D runs
     * on `nodes` control nodes only, farthest-point sampled from the canonical means when the
     * warm-up ends, and each Gaussian follows its node_k nearest by normalized RBF weights, nodes.h).
     * Why nodes: the MLP's cost scales with the rows it runs on (forward + backward were 52 of
     * 68 ms of a step at 3000 Gaussians), and a long clip's motion lives in a few hundred rigid-ish
     * pieces, not in every splat. node_radius: the nodes' initial RBF radius × the mean distance
     * between neighboring nodes (learned after, per node, in log space). */
    int deform;
    int64_t nodes;
    int node_k;
    double node_radius;
    /* what D sees of t (GS4D_TIME_*) and the per-frame codes' length. Why codes: t is normalized to
     * [0, 1] over the clip, so γ(t) with a few frequencies resolves a fixed fraction of it; 300
     * frames of different motions need more bandwidth in t than 6–9 octaves give (the repertoire
     * stayed at the static set's 20 dB with freq_t 6 and 9, docs/gaussianimate.md §3). A code per
     * frame has none of that limit; held-out times between frames take the interpolated code. */
    int time_code;
    int latent_dim;
    /* nodes: a learned table of per-frame node transforms (F × M × (3 + 4), zero at the start) added
     * to the MLP's translation and quaternion, linear between frames (the MLP stays the smooth prior,
     * the table carries what it cannot fit; issue 37's "per-node per-frame transforms"), with
     * table_smooth × the squared difference of the drawn frame's rows to its neighbors' (per node)
     * and, under a time curriculum, each newly admitted frame's rows started from the previous
     * frame's (the warm start of sequential per-frame fitting) */
    bool node_table;
    double table_smooth;
    /* nodes: a learned rigid transform of the whole set per training frame, (F × (3 + 4)), zero at
     * the start, applied after the node deformation about the nodes' centroid at their init
     * (buffers.root_pivot): μ ← R_t (μ − c) + c + T_t, q ← q_t ⊗ q. Why: a body that turns (the
     * repertoire's humanoid, up to 178°) must turn every node by the same rotation, and the nodes'
     * own transforms found it by re-painting the turned body with Gaussians that slid over it
     * (docs/gaussianimate.md §3c); one shared pose per frame is the turn itself. Measured (§3d):
     * stepped by Adam it does not find the turn, searched (root_search) it follows about a third
     * of it; the drift fell with it, the ramp's front and warm codes under a long ramp. Linear between
     * frames, smoothed by table_smooth (not divided by the nodes), and warm-started by constant
     * velocity: an admitted frame's row is 2 r_{f−1} − r_{f−2} (r_{f−1} for the second frame).
     * The ARAP term sees the nodes before it (it is rotation-invariant anyway). */
    bool root;
    /* under a time curriculum, each newly admitted frame's time code starts from the previous
     * frame's (as its table and root rows do): the frame then starts as the deformation of the
     * frame before it, not as the MLP's answer to a random code */
    bool warm_codes;
    /* model.root under a time curriculum: each admitted frame's pose is refined by a coordinate
     * search over turns about the world axes, by the photometric L1 of this many of its views
     * (0: off; gs4d_root_search) */
    int root_search;
    /* supersampling (1: off): every render, in training and after, is made at supersample × the
     * camera's resolution (intrinsics scaled, so each image pixel is exactly a block of
     * supersample² sub-pixels) and averaged over each block, the box filter a real pixel is. Why:
     * the rasterizer widens every splat by its 0.3 px² low-pass dilation (σ ≥ 0.55 px on screen,
     * about 0.45% of the diagonal at 128²), and a silhouette made of splats lies about 2 σ_eff
     * outside their centers, so the photometric fit sits the centers that far inside the surface
     * (issue 18's Chamfer distance); at k× the dilation is k× smaller in world units. */
    int supersample;
    /* the rasterizer's low-pass dilation in px² of the rendered (supersampled) image
     * (GsRenderOptions.dilation; 0.3 as 3DGS). Why smaller: a silhouette drawn by splats lies
     * outside the splats that draw it (an edge-on disc's alpha halves ~1.2 σ_eff from its center),
     * so the photometric optimum sits their centers inside the surface (Gaussians started exactly
     * on the surface sink there: docs/gaussianimate.md §3, session 25); with supersampling the box
     * filter already antialiases, and the dilation only needs to keep splats from falling between
     * sub-pixel samples. Thin sheets (the bird's wings) can fit worse with less (one seed of two). */
    double dilation;
    /* learning rates (3DGS / Deformable 3DGS); means and deform × extent, decaying to *_final */
    double lr_means, lr_means_final, lr_deform, lr_deform_final;
    int64_t lr_steps;
    /* the step the decay of the means' and MLP's rates starts at (0: the first step, as 3DGS);
     * before it they stay at lr_means / lr_deform, then decay log-linearly to their finals at
     * lr_steps. Why: with a time curriculum the last times enter at warmup + time_ramp, and a
     * decay from step 0 meets them with a rate already cut (to 22% at 2500 of 8000; the tool's
     * train.ramp_schedule sets this to warmup + time_ramp). */
    int64_t lr_start;
    double lr_scales, lr_quats, lr_opacity, lr_color;
    /* the nodes' positions (× extent, decaying with the means' ratio lr_means_final / lr_means)
     * and log-radii (constant) */
    double lr_nodes, lr_node_radius;
    /* model.root's rows (constant; not × extent: its quaternion part is unitless). Why its own: a
     * body spinning 19° a frame (the repertoire humanoid's frames 36–44) needs Δq ≈ 0.17 in the
     * few steps a frame is the ramp's newest; lr_deform × extent moves it ~2e-3 a step */
    double lr_root;
    double lambda; /* D-SSIM weight */
    /* 3DGS-MCMC's regularizers (Kheradmand et al. 2024) on the rendered set: reg_opacity × mean
     * opacity + reg_scale × mean scale (world units); 0 (every preset): off. Tried for issue 18's
     * Chamfer distance: `anima gs4d eval` measured the visible centers sitting inside the true
     * surface (98%, median −1.9% of the diagonal ≈ 2 σ_eff, σ_eff² = σ² + the rasterizer's 0.3 px²
     * dilation), since a silhouette lies about 2 σ_eff outside the centers that make it; the terms
     * were meant to shrink σ and fade occluded inner layers for densification to relocate. At
     * 0.01 each they did not: the quadruped moved from −1.71% to −1.61% (Chamfer 2.14% → 2.03%)
     * with σ no smaller, and once densification stops the opacity term fades Gaussians nothing
     * recycles (the snake kept 556 of 3000 visible). Measurements: docs/gaussianimate.md §3. */
    double reg_opacity, reg_scale;
    /* Flatness (anisotropic Gaussians; 0, every preset: off): reg_flat × the mean over Gaussians of
     * the smallest of the three world-space scales, exp(min log-scale), in world units as
     * reg_scale (the 2DGS / SuGaR "min-scale" idea). Why: the splats that draw a silhouette put
     * their centers ~2 σ_eff inside it, σ_eff² = σ_min² + the rasterizer's dilation; a disc
     * tangent to the surface draws the silhouette with its tangential extent and, thin across,
     * can keep its center on the surface (issue 18's Chamfer; docs/gaussianimate.md §3). With
     * isotropic Gaussians it is a second reg_scale. */
    double reg_flat;
    /* Adam's eps for the deformation MLP (1e-15: the 3DGS optimizer's, as every group). 1e-8
     * (PyTorch's default) scales down the trunk's steps while its gradients are tiny (the heads
     * start near zero, head_init). Session 23 used it against runs whose deformation collapsed to
     * one rigid motion; session 24 found the cause (the last ReLU layer dies, redo_every) and that
     * 1e-8 does not prevent it (both bird seeds collapsed on the 16000-step schedule with it), so
     * the presets are back at 1e-15 with redo_every (docs/gaussianimate.md §3). */
    double eps_deform;
    int64_t warmup;
    /* time curriculum (0: off, every training view from step 0 on). Else the canonical set is
     * carved from the views of the first time alone and the warm-up trains on them, then the
     * window of times trained on widens linearly from that first time (at step warmup) to every
     * time (at warmup + time_ramp); gs4d_pick_view maps a uniform draw into the window. Why:
     * photometric gradients are local, so a part that moves farther than its own size between
     * the times a step may draw (the bird's wings: ±45° at the shoulder, ±30° more at the elbow) is not pulled toward where it
     * is but faded where it is not: a canonical set carved or warmed up over every time loses
     * it, and one fitted to the first time alone fades it as soon as all times are drawn. Within
     * a widening window the MLP's smooth extrapolation in t puts each newly admitted time's part
     * near its image, where the local gradient can finish the job (the coarse-to-fine-in-time
     * schedule of sequential dynamic fitting, e.g. Luiten et al.'s Dynamic 3D Gaussians, which
     * fits frame after frame). */
    int64_t time_ramp;
    /* during the time ramp, this fraction of the draws (0 ≤ ramp_front < 1) trains on the views of
     * the newest admitted time, the rest uniform over the window. Why: drawn uniformly, the newest
     * frame of a 300-frame ramp gets ~20 / f of the steps while it is the newest, so most frames
     * enter as a copy of a predecessor that was never fitted either (table_admit's warm start
     * then copies a stale pose down the chain), and a body that turned 20° since is matched by
     * sliding its Gaussians, not by turning them. With a front, each frame is fitted from the
     * fitted frame before it: sequential per-frame tracking, as Luiten et al.'s Dynamic 3D
     * Gaussians fit frame after frame. */
    double ramp_front;
    /* silhouette_weight × the silhouette Chamfer of the rendered centers against the view's mask
     * (silhouette.h; 0: off), added in every step from the first */
    double silhouette_weight;
    /* densification (fixed n) */
    int64_t densify_every, refine_until, reset_every;
    /* dead-unit recycling (ReDo, Sokar et al. 2023; 0: off) for the deformation MLP: every
     * redo_every steps of the deformation phase, a trunk unit whose ReLU output is 0 for every
     * canonical Gaussian at each of 5 times spread over the training clip gets fresh incoming
     * weights (the trunk's init, model.trunk_init), and its outgoing weights (the next layer's
     * column, or the heads' for the last layer) and the Adam moments of all of them are zeroed,
     * so the deformation is unchanged at that step. Why: the heads start near zero (head_init), so
     * early in the deformation phase the error the trunk sees is mostly one global motion, and
     * Adam moves all of a unit's incoming weights by ~lr in the same direction (its inputs are
     * ReLU outputs, ≥ 0), shifting its pre-activation by ~lr Σh a step; whole layers die. A run
     * whose last layer dies deforms by one rigid motion for good (ARAP exactly 0; measured: the
     * last layer 0–1 of 128 units alive, docs/gaussianimate.md §3, session 24); a dead unit never
     * gets a gradient again, so nothing else brings it back. */
    int64_t redo_every;
    double prune_opacity, densify_grad, split_scale;
    /* ARAP */
    double arap_weight;
    int arap_k;
    int64_t knn_every;
    /* motion clusters: every recluster_every steps of the deformation phase (0: never) the
     * trajectories of the canonical Gaussians at up to recluster_frames of the training times go
     * to the model's recluster callback (gs4d_set_recluster), whose labels replace the ARAP
     * clusters (the paper's clustering, issue 19: Skelebones' LBG-VQ, wired by the tool, as this
     * layer may not depend on models/skelebones) */
    int64_t recluster_every;
    int recluster_frames;
    double background[3];
    bool random_background;
    TensorDType dtype; /* f32 for training; f64 for gradchecks */
} Gs4dConfig;

/* The paper's sizes: 8 × 256, skip 4, freq 10 / 6, isotropic, 40k steps with 3k warm-up. */
Gs4dConfig gs4d_defaults(void);

/* A posed, timed training or held-out image. */
typedef struct {
    DsCamera cam;
    float time;        /* in [0, 1] */
    const float *rgba; /* height × width × 4, row-major, [0, 1], straight alpha (not owned) */
} Gs4dView;

/* The views as tensors: rgb (H, W, 3) and alpha (H, W, 1), f32, in the scope current at make. */
typedef struct {
    int n;
    Gs4dView *views; /* a copy of the array (rgba still the caller's) */
    Tensor **rgb, **alpha;
    double center[3], radius; /* the region the cameras look at */
    double extent;            /* 1.1 × the camera centers' radius around their mean (3DGS) */
    int *by_time;             /* the view indices sorted by time (stable): the curriculum's order */
    Gs4dMask *masks;          /* each view's alpha > 0.5 mask, for the silhouette term */
} Gs4dData;

/* Checks sizes (every image cam.width × cam.height), finds the center (least-squares point
 * nearest every optical axis) and radius (what the narrowest view's field of view covers at its
 * distance). 0, or -1 with err. */
int gs4d_data_make(const Gs4dView *views, int n, Gs4dData *d, char *err, size_t errlen);
void gs4d_data_free(Gs4dData *d);

/* The time encoding's frequencies from the data: the fewest L whose highest band, sin(2^(L-1) t),
 * turns by at least GS4D_FREQ_T_RAD_PER_FRAME between neighboring training times (their mean
 * spacing over the distinct times; 1 for a single time). gs4d_init uses it when freq_t is
 * GS4D_FREQ_T_AUTO. Why: t is normalized to [0, 1] whatever the clip's length, so a fixed L
 * resolves a fixed fraction of the clip: freq_t = 6 (the paper's, and the presets' on the 48-frame
 * benchmark: 32 rad over 47 gaps, 0.68 rad a frame) spreads one band's period over 59 frames of a
 * 300-frame clip (0.11 rad a frame): a bird's wing beat (about 15 frames) then spans a quarter of
 * the band's period, and the MLP must build the beat's fast changes out of slowly varying inputs.
 * 2/3 rad a frame gives 6 on 48 frames (unchanged) and 9 on 300. */
#define GS4D_FREQ_T_AUTO (-1)
#define GS4D_FREQ_T_RAD_PER_FRAME (2.0 / 3.0)
int gs4d_auto_freq_t(const Gs4dData *d);

/* the per-Gaussian groups come first (densification copies their rows), then the MLP, then the
 * control nodes' */
enum { GS4D_MEANS, GS4D_SCALES, GS4D_QUATS, GS4D_OPACITY, GS4D_COLOR, GS4D_DEFORM, GS4D_NODE_POS, GS4D_NODE_RADIUS,
       GS4D_ROOT, GS4D_GROUPS };

typedef struct {
    NnLinear layer[32];
    /* rot/color/opacity unused (weight NULL) when off; with nodes mu is each node's translation
     * and rot its quaternion (always) */
    NnLinear mu, scale, rot, color, opacity;
    int64_t in_dim;
    /* per-frame time codes (time_code latent / both; NULL otherwise): codes (frames, latent_dim)
     * at the distinct training times `times` (ascending, host) */
    Tensor *codes;
    double *times;
    int frames;
    Tensor *table; /* node_table: (frames, nodes · 7), NULL otherwise */
    Tensor *root;  /* root: (frames, 7) ("root.pose", its own Adam group), NULL otherwise */
} Gs4dMlp;

/* Labels for n points from their trajectories: rest (n × 3, the canonical means), pos (frames × n
 * × 3, frame-major, the deformed means at each frame); writes labels (n, ≥ 0). 0, or -1 (the
 * labels are then left as they were). Must be deterministic for the run to resume bit-identically. */
typedef int (*Gs4dReclusterFn)(void *user, int frames, int64_t n, const float *rest, const float *pos, int32_t *labels);

typedef struct {
    Gs4dConfig cfg;
    double extent;
    Gs4dReclusterFn recluster; /* NULL: the labels stay as given to gs4d_init */
    void *recluster_user;
    int64_t reclustered, recluster_failed; /* calls that replaced the labels / that failed */
    NnParams params; /* everything, one flat buffer (checkpointed whole) */
    Optim optim;     /* Adam state over params->flat (what the checkpoint stores); stepped per group */
    NnParams gparams[GS4D_GROUPS];
    Optim gopt[GS4D_GROUPS];
    bool used[GS4D_GROUPS];
    Tensor *means, *scales, *quats, *opacities, *colors;
    Gs4dMlp mlp;
    /* buffers (in params, never stepped) */
    Tensor *grad_accum, *grad_count; /* (N): Σ ‖view-space mean gradient‖ and how many steps saw it */
    Tensor *labels;                  /* (N): cluster labels (exact integers in f32) */
    Tensor *neighbors;               /* (N, arap_k): the ARAP kNN (−1: none) */
    /* control nodes (deform = nodes; NULL otherwise): positions (M, 3), log-radii (M, 1), each
     * Gaussian's node_k nearest nodes (N, node_k) and each node's arap_k nearest nodes (M, arap_k),
     * the ARAP pairs with nodes */
    Tensor *node_pos, *node_rho, *node_knn, *node_nbr;
    Tensor *root_pivot; /* root: (1, 3), the nodes' centroid at their init (a buffer) */
    int64_t nodes_moved; /* nodes relocated by the last densification */
    int64_t step;
    int64_t densified, relocated;    /* by the last densification */
    int64_t revived;                 /* trunk units recycled by the last dead-unit check (redo_every) */
    int64_t glo[GS4D_GROUPS], ghi[GS4D_GROUPS]; /* each group's slice of the flat buffers */
} Gs4dModel;

/* Canonical Gaussians in the region d looks at, carved by the training alphas (a point is kept
 * when at least half of the views that see it have alpha > 0.5 there; with cfg->time_ramp > 0
 * only the views of the first time vote, or every view when the first time has one (monocular input;
 * gs4d.c: first_views); uniform in the region when too few survive), labels (n; NULL: one cluster). Allocates in the current scope, which must
 * outlive m. The Adam steps of every group start at 0. */
void gs4d_init(Gs4dModel *m, const Gs4dConfig *cfg, const Gs4dData *d, const int32_t *labels);
void gs4d_free(Gs4dModel *m);
/* The view a step trains on, given v, a uniform draw in [0, d->n) (optim_data_order's): v itself
 * without a time curriculum (cfg.time_ramp = 0); else the view at rank ⌊v m / n⌋ in time order,
 * m the number of views whose time is in the window at `step` (see Gs4dConfig.time_ramp); during
 * the ramp a draw v < ramp_front · n picks among the newest time's views instead
 * (Gs4dConfig.ramp_front). */
int gs4d_pick_view(const Gs4dModel *m, const Gs4dData *d, int64_t step, int v);
/* model.root: frame f's pose (row f of mlp.root, as it stands) refined by the coordinate search over
 * turns of Gs4dConfig.root_search, by the photometric L1 of up to root_search (≥ 1) of the views at
 * the frame's time; the row is replaced when the search lowered the loss. Returns the drop (≥ 0).
 * Called by the step for every frame the time ramp admits. */
double gs4d_root_search(Gs4dModel *m, const Gs4dData *d, int f);
/* Control nodes (deform = nodes): farthest-point samples of the canonical means, the radius from
 * their spacing, the Gaussian → node and node → node neighbors, Adam moments of the node groups
 * zeroed. The step calls it when the warm-up ends; tests and benchmarks may call it earlier. */
void gs4d_nodes_init(Gs4dModel *m);
/* After optim_checkpoint_load into m->params / m->optim: the step of the model and of each group. */
void gs4d_set_step(Gs4dModel *m, int64_t step);

/* Training on a GPU (--device cuda): moves the parameters, their gradients and the Adam moments
 * to dev in place (nn_params_move: the headers m->means, the MLP's layers, ... keep pointing at
 * them), so the MLP runs on cuBLAS, the rasterizer's CUDA backend and the losses on the device,
 * and Adam steps there. Call after the checkpoint is loaded (it stays on the host until then);
 * the checkpoint writer copies device buffers back itself. The per-Gaussian host loops
 * (densification, opacity reset, the kNN, export) run on host copies of the flat buffers written
 * back afterwards, like models/gaussians/fit.c; the ARAP rotation fits (3×3 SVDs) run on the host
 * from a copy of the positions, the loss itself on the device. No-op when already on dev. */
void gs4d_to_device(Gs4dModel *m, TensorDevice dev);
/* The training images rgb / alpha copied to dev (new tensors in the current scope). */
void gs4d_data_to_device(Gs4dData *d, TensorDevice dev);

/* The canonical Gaussians as the rasterizer takes them. */
GsGaussians gs4d_canonical(const Gs4dModel *m);
/* The Gaussians deformed to time t (recorded when grad mode is on). */
GsGaussians gs4d_deform(const Gs4dModel *m, const GsGaussians *canon, double t);
/* The same with the MLP's input positions given (gs4d_deform passes canon->means detached; the
 * gradchecks pass a constant, so finite differences see the function autograd differentiates).
 * With control nodes the MLP runs on the nodes (their positions detached) and x_in is where the
 * Gaussians' RBF weights are taken. */
GsGaussians gs4d_deform_at(const Gs4dModel *m, const GsGaussians *canon, Tensor *x_in, double t);
/* With control nodes, both inputs given: the Gaussians' weight positions x_w and the nodes' MLP
 * input positions node_in (gs4d_deform passes the means and m->node_pos detached). */
GsGaussians gs4d_deform_nodes_at(const Gs4dModel *m, const GsGaussians *canon, Tensor *x_w, Tensor *node_in, double t);
/* The MLP's raw outputs for positions x (N, 3) at time t: dmu (N, 3), ds (N, 1|3), dq (N, 4) or
 * NULL, dc (N, 3) or NULL, dop (N, 1) or NULL. */
void gs4d_mlp_forward(const Gs4dMlp *mlp, const Gs4dConfig *cfg, Tensor *x, double t, Tensor **dmu, Tensor **ds,
                      Tensor **dq, Tensor **dc, Tensor **dop);

/* reg_opacity · mean(sigmoid(opacities)) + reg_scale · mean(exp(scales))
 * + reg_flat · mean_i exp(min_k scales[i, k]) of g (0-d, g's dtype; NULL when every weight is 0). */
Tensor *gs4d_regularizer(const GsGaussians *g, double reg_opacity, double reg_scale, double reg_flat);

/* The learning rate of group g at step (means and deform: constant up to lr_start, then a
 * log-linear decay to the final rate at lr_steps, ×extent). */
double gs4d_lr(const Gs4dModel *m, int g, int64_t step);

typedef struct {
    double loss, photometric, arap, reg; /* means over the batch (reg: gs4d_regularizer's) */
    /* seconds spent per stage (wall clock): the MLP forward, the rasterizer forward, the losses'
     * forward (photometric + ARAP with its rotation fits), the whole backward, the Adam updates,
     * and densification / opacity reset / kNN */
    double t_deform, t_render, t_loss, t_backward, t_optim, t_refine;
    /* the same stages in this process's CPU seconds (base_cpu_now): on a loaded machine the wall
     * clock also counts the time other processes held the cores */
    double c_deform, c_render, c_loss, c_backward, c_optim, c_refine;
} Gs4dStepInfo;

/* One training step on view v of d, drawing the background (and relocations) from rng. */
double gs4d_step(Gs4dModel *m, const Gs4dData *d, int v, TensorRng *rng, Gs4dStepInfo *info);
/* One step on a batch of views (the loss is their mean; each view renders at its own time and
 * adds its ARAP term). With a communicator of several ranks (batch a multiple of the ranks),
 * each rank renders its shard of the batch (optim_comm_shard), then the gradients are averaged
 * and the densification statistics summed over ranks, so every rank takes the same update and
 * stays identical; every rank calls it with the same views and an rng in the same state. */
double gs4d_step_batch(Gs4dModel *m, const Gs4dData *d, const int64_t *views, int batch, TensorRng *rng,
                       OptimComm *comm, Gs4dStepInfo *info);
/* Densify / relocate now (the step runs it when due); returns the Gaussians moved. */
int64_t gs4d_densify(Gs4dModel *m, const Gs4dData *d, TensorRng *rng);
/* Recompute the ARAP neighbors from the canonical means (the step does it when due). */
void gs4d_update_neighbors(Gs4dModel *m);
/* The callback the step calls every cfg.recluster_every steps (of the deformation phase). */
void gs4d_set_recluster(Gs4dModel *m, Gs4dReclusterFn fn, void *user);
/* Recluster now: the deformed means at up to cfg.recluster_frames distinct times of d's views
 * (evenly picked) go to the callback, its labels replace m->labels and the ARAP neighbors are
 * recomputed inside the new clusters. 0, or -1 (no callback, or it failed: labels unchanged). */
int gs4d_recluster(Gs4dModel *m, const Gs4dData *d);

/* Render at time t without recording, (H, W, 3) f32 on the host over bg (NULL: cfg.background). Before the
 * warm-up ends (m->step < warmup) the canonical set is rendered, as in training. */
Tensor *gs4d_render(const Gs4dModel *m, const DsCamera *cam, double t, const double bg[3]);
/* g rendered through cam as every render of m is (gs_render, at cfg.supersample × and block-
 * averaged back to cam's resolution: image, alpha and depth; packed is NULL then; radii and
 * mean2d_grad are the k× render's) */
GsRenderOut gs4d_render_set(const Gs4dModel *m, const GsGaussians *g, const DsCamera *cam, const double bg[3]);
/* The view's target over bg, (H, W, 3) f32. */
Tensor *gs4d_target(const Gs4dData *d, int v, const double bg[3]);

/* Activated per-Gaussian state at time t, written into arrays of n rows: positions (3), scales
 * (exp; 1 or 3 per row), rgb (SH DC → C0·f + 0.5, 3), opacities (sigmoid, 1). */
void gs4d_state_at(const Gs4dModel *m, double t, float *pos, float *scale, float *rgb, float *opacity);
/* The surface the splats render through cam at time t: each pixel whose rendered alpha is above
 * alpha_min, at its expected depth (the alpha-weighted depth / alpha, camera z), back-projected to
 * a world point (ds_camera_backproject: at most max_points, spread over the image). Returns how
 * many were written into out (max_points × 3). The geometry figure that the splats' centers are
 * not: round splats' centers sit ~2 σ inside the silhouette they draw (docs/gaussianimate.md §3). */
int64_t gs4d_surface_points(const Gs4dModel *m, const DsCamera *cam, double t, double alpha_min, float *out,
                            int64_t max_points);
/* The canonical set for the standard 3DGS PLY (raw values; isotropic scales replicated). */
int gs4d_export(const Gs4dModel *m, DsGaussians *out);
/* The appearance each Gaussian renders with, averaged over the frames of a run's trajectories
 * file (RUN/trajectories.h5: frames/scales, frames/opacities, frames/colors of n Gaussians):
 * log_scale[i] the mean over frames and axes of the log of its scales, logit[i] the logit of its
 * mean opacity (clamped to [1e-4, 1 − 1e-4]), rgb[3i..] its mean color. The deformation moves
 * scales (and, when configured, colors and opacities) frame by frame, so the canonical set's own
 * values (gs4d_export) are not what any frame shows: a Gaussian the deformation shrinks to a
 * point in every frame can sit in the canonical set with σ a third of the body. An animation of
 * the canonical Gaussians by another model (anima animate --gaussians) takes these. Any of the
 * outputs may be NULL. 0, or -1 with err naming the file (missing, other n). */
int gs4d_trajectories_appearance(const char *path, int64_t n, float *log_scale, float *logit, float *rgb, char *err,
                                 size_t errlen);

/* SSIM (11×11 Gaussian window, valid region) of img against ref, (H, W, 3) each, img clamped to
 * [0, 1]; PSNR is models/gaussians/fit.h's gs_psnr. */
double gs4d_ssim(const Tensor *img, const Tensor *ref);

#endif
