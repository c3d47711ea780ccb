/* models/gaussians/appearance.h — fitting the appearance of Gaussians whose positions are given.
 *
 * n isotropic Gaussians whose means in every training image are known (the vertices of a
 * ground-truth mesh sequence, a rig's points posed in that frame, ...) get their colors (plain
 * RGB), log-scales and opacity logits fitted to those images: the optimization loop of
 * fit.h (one view per step from a seeded shuffled stack, (1 − λ) L1 + λ D-SSIM, one Adam per
 * parameter kind) with the means held where each view puts them. What it is for: PartMM's
 * evaluation renders one Gaussian per ground-truth vertex; with the benchmark's albedo and a
 * fixed σ those render the shaded, rasterized benchmark images at only 19–22 dB even at their
 * true positions, so image metrics measured the representation, not the motion
 * (docs/partmm.md). Fitted on a training motion's views, the same Gaussians can then be moved by
 * any method and rendered in novel poses with an appearance that is the images'. The Gaussians
 * stay isotropic, so moving them needs no rotation of their covariance.
 *
 * Normal offsets (optional): Gaussians pinned to the surface blur every silhouette outward by
 * their footprint (at least ≈ 0.55 px: the rasterizer's 0.3 px² low-pass), which at 128 px costs
 * more than all the rest. With per-view unit normals (n × 3, e.g. the posed mesh's vertex
 * normals) each Gaussian sits at its mean + s_i × normal, the scalar s_i fitted with the rest:
 * one number per Gaussian that any posed copy of the mesh carries through its own normals. */
#ifndef ANIMA_MODELS_GAUSSIANS_APPEARANCE_H
#define ANIMA_MODELS_GAUSSIANS_APPEARANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/render/camera.h"

typedef struct {
    int64_t steps;                      /* views rendered, one per step */
    bool normal_offset;                 /* fit s_i: Gaussian i at mean + s_i × normal (above) */
    double lr_offset;                   /* Adam rate of s_i (scene units) */
    double lr_color, lr_scale, lr_opacity; /* Adam rates: plain RGB, log σ, opacity logit */
    double lambda;                      /* D-SSIM weight of the loss (3DGS 0.2) */
    uint64_t seed;                      /* the view order */
    double background[3];               /* what the targets are composited over */
} GsAppearanceConfig;

/* 2000 steps, no normal offsets (rate 1e-4 when on), rates 0.01 / 0.005 / 0.05, λ 0.2, seed 0,
 * white background. */
GsAppearanceConfig gs_appearance_defaults(void);

/* One training image: its camera, the n means (n × 3) in its frame, and the image (height ×
 * width × 4 from the camera, straight alpha, composited over cfg.background as the target). */
typedef struct {
    const DsCamera *cam;
    const float *means;
    const float *rgba;
    const float *normals; /* n × 3 unit normals at the means (cfg.normal_offset), else unused */
} GsAppearanceView;

/* Optional progress: called every `every` steps with the mean loss since the last call. */
typedef void (*GsAppearanceProgress)(int64_t step, double loss, void *user);

/* Fits colors (n × 3, plain RGB), log_scale (n, log standard deviations), logit (n, opacity
 * logits) and, under cfg.normal_offset, offset (n, the s_i) in place, starting from their values, to the nv views. Returns the mean loss of the
 * last min(100, steps) steps, or -1 (err set) for bad arguments. */
double gs_appearance_fit(int64_t n, int nv, const GsAppearanceView *views, const GsAppearanceConfig *cfg, float *colors,
                         float *log_scale, float *logit, float *offset, GsAppearanceProgress progress, int64_t every,
                         void *user, char *err, size_t errlen);

/* Area-weighted unit vertex normals (nv × 3) of a triangle mesh at positions pos (nv × 3); a
 * vertex on no face (or only degenerate ones) gets 0. */
void gs_appearance_vertex_normals(int64_t nv, const float *pos, int64_t nf, const int32_t *faces, float *out);

#endif
