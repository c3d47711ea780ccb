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
 * stay isotropic, so moving them needs no rotation of their covariance. */
#ifndef ANIMA_MODELS_GAUSSIANS_APPEARANCE_H
#define ANIMA_MODELS_GAUSSIANS_APPEARANCE_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/render/camera.h"

typedef struct {
    int64_t steps;                      /* views rendered, one per step */
    double lr_color, lr_scale, lr_opacity; /* Adam rates: plain RGB, log σ, opacity logit */
    double lambda;                      /* D-SSIM weight of the loss (3DGS 0.2) */
    uint64_t seed;                      /* the view order */
    double background[3];               /* what the targets are composited over */
} GsAppearanceConfig;

/* 2000 steps, rates 0.01 / 0.005 / 0.05, λ 0.2, seed 0, white background. */
GsAppearanceConfig gs_appearance_defaults(void);

/* One training image: its camera, the n means (n × 3) in its frame, and the image (height ×
 * width × 4 from the camera, straight alpha, composited over cfg.background as the target). */
typedef struct {
    const DsCamera *cam;
    const float *means;
    const float *rgba;
} GsAppearanceView;

/* Optional progress: called every `every` steps with the mean loss since the last call. */
typedef void (*GsAppearanceProgress)(int64_t step, double loss, void *user);

/* Fits colors (n × 3, plain RGB), log_scale (n, log standard deviations) and logit (n, opacity
 * logits) in place, starting from their values, to the nv views. Returns the mean loss of the
 * last min(100, steps) steps, or -1 (err set) for bad arguments. */
double gs_appearance_fit(int64_t n, int nv, const GsAppearanceView *views, const GsAppearanceConfig *cfg, float *colors,
                         float *log_scale, float *logit, GsAppearanceProgress progress, int64_t every, void *user,
                         char *err, size_t errlen);

#endif
