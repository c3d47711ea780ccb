/* models/gaussians/loss.h — the photometric loss of 3D Gaussian Splatting
 * (docs/gaussianimate.md §2): L = (1 − λ) L1 + λ (1 − SSIM), λ = 0.2.
 *
 * Images are (H, W, C) — the rasterizer's layout — of one float dtype. SSIM follows the 3DGS
 * reference (Kerbl et al. 2023, after Wang et al. 2004): an 11×11 Gaussian window (σ = 1.5,
 * normalized to sum 1) applied per channel as a 2D convolution with zero padding of 5
 * (torch conv2d(padding = window // 2, groups = C)), C1 = 0.01², C2 = 0.03²,
 *   SSIM = ((2 μx μy + C1)(2 σxy + C2)) / ((μx² + μy² + C1)(σx² + σy² + C2)),
 * σx² = G∗x² − μx² etc., averaged over every pixel and channel of the map. GS_SSIM_SAME keeps
 * the full H × W map (what 3DGS trains with; the borders see the zero padding); GS_SSIM_VALID
 * averages only the (H − 10) × (W − 10) pixels whose window lies inside the image (conv2d with
 * padding 0). Everything is built from tensor ops (the separable window as two banded matrix
 * products), so it is differentiable to any order and runs on any backend. */
#ifndef ANIMA_MODELS_GAUSSIANS_LOSS_H
#define ANIMA_MODELS_GAUSSIANS_LOSS_H

#include "autograd/autograd.h"

#define GS_SSIM_WINDOW 11
#define GS_SSIM_SIGMA 1.5
#define GS_PHOTOMETRIC_LAMBDA 0.2

typedef enum { GS_SSIM_SAME, GS_SSIM_VALID } GsSsimPadding;

/* mean |a − b| over every element (0-d) */
Tensor *gs_loss_l1(Tensor *a, Tensor *b);
/* mean SSIM (0-d); a and b (H, W, C); VALID needs H, W >= 11 */
Tensor *gs_ssim(Tensor *a, Tensor *b, GsSsimPadding pad);
/* (1 − lambda) L1 + lambda (1 − SSIM same-padded): the 3DGS training loss (lambda 0.2) */
Tensor *gs_loss_photometric(Tensor *img, Tensor *ref, double lambda);

#endif
