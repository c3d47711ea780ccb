/* models/gaussians/fit.h — fitting 3D Gaussians to posed images: the optimization loop of 3D
 * Gaussian Splatting (Kerbl et al. 2023, §5 and the reference implementation's defaults) over the
 * differentiable rasterizer (rasterize.h) and the photometric loss (loss.h), plus the synthetic
 * multi-view scene it is tested on (a mesh rendered by datasets/render/raster.h) and the export to the
 * standard Gaussian PLY (datasets/mesh/gaussian_ply.h).
 *
 * What it does, and why:
 * - Gaussians start uniformly at random inside a box (no SfM points exist for a synthetic mesh),
 *   with isotropic scales sized to the mean spacing (box volume / n)^(1/3), identity rotations,
 *   opacity 0.1 and random colors — what 3DGS does for the NeRF-synthetic scenes (random points
 *   in a cube).
 * - Each parameter kind is its own NnParams group with its own Adam (eps 1e-15) because the
 *   3DGS learning rates differ by orders of magnitude, and scaling gradients per group cannot
 *   express that: Adam's step is invariant to the gradient's scale. Rates (3DGS defaults): means
 *   1.6e-4 → 1.6e-6 × scene extent, log-linear decay; log-scales 5e-3; quaternions 1e-3; opacity
 *   logits 5e-2; SH DC 2.5e-3 and higher SH bands 2.5e-3 / 20.
 * - One random training view per step (a fixed permutation per epoch, as 3DGS pops views off a
 *   shuffled stack); loss (1 − λ) L1 + λ D-SSIM, λ = 0.2.
 * - SH bands are switched on one at a time every `sh_up_every` steps (3DGS: every 1000), so the
 *   colors are explained by the DC term before view-dependent terms can overfit the few views.
 * - Instead of 3DGS's clone/split/prune (which changes n and reallocates every buffer), dead
 *   Gaussians (opacity < prune_opacity) are periodically relocated onto live ones, sampled in
 *   proportion to their opacity, the source's opacity split among its N copies as
 *   1 − (1 − o)^(1/N) so the rendering barely changes — the relocation move of 3DGS-MCMC
 *   (Kheradmand et al. 2024, §4.2). n stays fixed, so the parameter and Adam buffers never move; the moved
 *   Gaussians' Adam moments are zeroed. From a random box init most Gaussians are in empty
 *   space and die quickly; relocation puts them back to work on the surface.
 * - Optional periodic opacity reset (3DGS: clamp to 0.01 every 3000 steps) to shed floaters;
 *   with 8 views it is what lifts held-out PSNR most (64×64 quadruped: 27.7 → 28.5 dB).
 * Relocation and resets stop at refine_until (3DGS stops densifying at half its run). */
#ifndef ANIMA_MODELS_GAUSSIANS_FIT_H
#define ANIMA_MODELS_GAUSSIANS_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "datasets/render/camera.h"
#include "datasets/mesh/gaussian_ply.h"
#include "datasets/mesh/mesh.h"
#include "datasets/render/raster.h"
#include "models/gaussians/rasterize.h"
#include "optim/optim.h"

typedef struct {
    int64_t n;              /* Gaussians */
    bool isotropic;         /* one scale, no rotation (the GaussiAnimate paper's choice) */
    int sh_degree;          /* 0..3 */
    uint64_t seed;
    double init_opacity;    /* activated, in (0, 1) */
    double init_scale;      /* × (box volume / n)^(1/3) */
    /* learning rates (Kerbl et al. 2023 defaults); lr_means* are multiplied by the extent */
    double lr_means, lr_means_final;
    int64_t lr_means_steps; /* the decay reaches lr_means_final here and stays */
    double lr_scales, lr_quats, lr_opacity, lr_sh_dc, lr_sh_rest;
    double lambda;          /* D-SSIM weight of the loss */
    int64_t sh_up_every;    /* 0: every band from the start */
    int64_t relocate_every; /* 0: never */
    int64_t refine_until;   /* last step that relocates or resets opacities */
    double prune_opacity;   /* "dead" below this opacity */
    int64_t reset_every;    /* opacity reset period, 0: never */
    double background[3];   /* renders and PSNR are over it (white: what the targets are over) */
    /* Train each step over a random uniform background color (3DGS's --random_background), with
     * the target recomposited from its coverage: empty space must then be transparent rather
     * than merely background-colored, which removes the floaters that are invisible against a
     * fixed background in the training views but not in new ones. Needs the scene's alphas.
     * (Measured neutral on the 64×64 quadruped, 28.4 dB either way; kept on in the command.) */
    bool random_background;
    /* Train on the CUDA device: the Gaussians are initialized on the host (the same values as a
     * CPU run) and moved (nn_params_move); renders, the loss, gradients and Adam run there, each
     * step's target goes up; relocation, opacity resets and the export work on host copies of
     * the parameters and Adam moments (written back). Renders (gs_fit_render) come back to the
     * host. The caller checks a device exists. */
    bool cuda;
} GsFitConfig;

/* n 2000, anisotropic, SH degree 0 (bands every 1000 steps when raised), the 3DGS rates above
 * (means decaying over 30000 steps), relocation every 100 steps throughout, no opacity reset,
 * white background, no random background. */
GsFitConfig gs_fit_defaults(void);

enum { GS_FIT_MEANS, GS_FIT_SCALES, GS_FIT_QUATS, GS_FIT_OPACITY, GS_FIT_SH_DC, GS_FIT_SH_REST, GS_FIT_GROUPS };

typedef struct {
    GsFitConfig cfg;
    double extent;                   /* scene scale the mean learning rate is relative to */
    NnParams group[GS_FIT_GROUPS];   /* one parameter each; a group absent by config is unused */
    Optim optim[GS_FIT_GROUPS];
    bool used[GS_FIT_GROUPS];
    Tensor *means, *scales, *quats, *opacities, *sh_dc, *sh_rest; /* quats / sh_rest may be NULL */
    int64_t step;                    /* updates taken */
    TensorRng rng;                   /* relocation draws */
    int64_t relocated;               /* Gaussians moved by the last relocation */
} GsFit;

/* Gaussians uniform in the box [lo, hi]; extent: the scene scale (3DGS: 1.1 × the radius of the
 * camera centers around their mean). Parameters and optimizer state are allocated in the
 * current tensor scope, which must outlive f (end it after gs_fit_free). */
void gs_fit_init(GsFit *f, const GsFitConfig *cfg, const double lo[3], const double hi[3], double extent);
void gs_fit_free(GsFit *f);
/* The Gaussians as the rasterizer takes them, colors with the SH bands active at f->step. */
GsGaussians gs_fit_gaussians(const GsFit *f);
/* The learning rate of the means at step (already multiplied by the extent). */
double gs_fit_lr_means(const GsFit *f, int64_t step);
/* One optimization step on one view (target (H, W, 3) f32): render, loss, backward, Adam for
 * every group, then relocation / opacity reset when due; background NULL: the config's.
 * Returns the loss. */
double gs_fit_step(GsFit *f, const DsCamera *cam, Tensor *target, const double background[3]);
/* One step on training view v of scene s (target and background as the config says). */
typedef struct GsFitScene GsFitScene;
double gs_fit_step_view(GsFit *f, const GsFitScene *s, int v);
/* Render without recording (H, W, 3), f32, on the host (copied back from the device under
 * cfg.cuda), in the current scope. */
Tensor *gs_fit_render(const GsFit *f, const DsCamera *cam);
/* Relocate dead Gaussians now; returns how many moved. */
int64_t gs_fit_relocate(GsFit *f);
/* Copy out for the PLY writer (raw values; isotropic scales replicated, rotation identity). */
int gs_fit_export(const GsFit *f, DsGaussians *out);

/* PSNR in dB of img against ref ((H, W, 3) each), img clamped to [0, 1] first (what a viewer
 * shows): 10 log10(1 / MSE). */
double gs_psnr(const Tensor *img, const Tensor *ref);

/* ---- the synthetic multi-view scene ---------------------------------------------------------- */

struct GsFitScene {
    int n_train, n_test;
    DsCamera *train, *test;
    Tensor **train_img, **test_img; /* (H, W, 3) f32 targets over white, in the scope current at make time */
    Tensor **train_alpha;           /* (H, W, 1) f32 coverage of the training targets */
    double lo[3], hi[3];            /* the mesh's bounding box */
    double extent;                  /* 1.1 × camera distance (3DGS's spatial_lr_scale) */
};

/* Renders m from n_train + n_test cameras on a Fibonacci sphere around its bounding box center,
 * at a distance that fits the bounding sphere into the field of view; every
 * ((n_train + n_test) / n_test)-th camera is held out (the interleaved split of the NeRF
 * benchmarks), so the held-out views lie between training views. Shading (opts; NULL: a fixed
 * directional light, not a headlight, so the appearance is view-independent and the target is
 * consistent across views, 2×2 supersampling for antialiased edges, white background). 0, or -1
 * with err set. */
int gs_fit_scene_make(const DsMesh *m, int n_train, int n_test, int size, double fov_deg, const DsRasterOptions *opts,
                      GsFitScene *s, char *err, size_t errlen);
void gs_fit_scene_free(GsFitScene *s);
/* The default shading of gs_fit_scene_make. */
DsRasterOptions gs_fit_raster_options(void);

/* Per-vertex colors for a mesh without any: a blend of a per-bone palette by skinning weights
 * (nv × nbones, rows summing to 1), or, with weights NULL, the normal mapped to RGB
 * (0.5 + 0.45 n). Writes nv × 3. */
void gs_fit_vertex_colors(const DsMesh *m, const float *weights, int nbones, float *rgb);

/* Mean PSNR over the held-out (test = true) or training views. */
double gs_fit_eval(const GsFit *f, const GsFitScene *s, bool test);

#endif
