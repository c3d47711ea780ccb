/* models/gs4d/silhouette.h — a 2D Chamfer term between the projected Gaussian centers and a
 * view's silhouette (its alpha > 0.5 pixels), for parts that move farther than their own size.
 *
 * Why: the photometric loss of a splat has local gradients. Where a part (the bird's wings:
 * ±45° at the shoulder, ±30° more at the elbow, ~3 beats in 48 frames) sits far from every Gaussian in some frame, nothing
 * pulls Gaussians there; the loss only fades the ones where the part is not, and the part is never
 * reconstructed (issue 18). A silhouette Chamfer has long-range gradients: it is the classic mask
 * fitting term of silhouette-based shape fitting (a distance-transform / Chamfer matching of the
 * projected model against the mask), here on the centers, which the silhouette bounds whatever the
 * occlusion: every point of the object projects inside every view's silhouette, and every
 * silhouette contour pixel is the projection of some surface point.
 *
 * For centers μ_i (N, 3), a camera π (pixels), the mask M and its contour C (mask pixels with a
 * 4-neighbor outside the mask or outside the image), pixel centers q, image size S = max(W, H):
 *   L = 1/|C| Σ_{q∈C} min_i ‖π(μ_i) − q‖² / S²                 (every contour pixel has a center)
 *     + 1/N  Σ_{i: π(μ_i) ∉ M} min_{q∈M} ‖π(μ_i) − q‖² / S²    (every center inside the mask)
 * The argmins are constants for autograd (the Chamfer / ICP convention); the gradient reaches μ
 * through the projection. Centers behind the camera are left out of both terms. 0 with an empty
 * mask or no center in front of the camera. The first term also pulls the centers that make the
 * silhouette onto it, against the ~2 σ inset the photometric loss leaves (docs/gaussianimate.md). */
#ifndef ANIMA_MODELS_GS4D_SILHOUETTE_H
#define ANIMA_MODELS_GS4D_SILHOUETTE_H

#include "autograd/autograd.h"
#include "datasets/render/camera.h"

/* A view's mask for the loss: contour and mask pixel centers (x, y in pixels), once per view. */
typedef struct {
    int n_contour, n_mask;
    float *contour, *mask; /* 2 × n each */
    int width, height;
    unsigned char *in; /* width × height: 1 inside the mask */
} Gs4dMask;

/* From straight-alpha RGBA (height × width × 4), alpha > 0.5 inside. */
void gs4d_mask_make(const float *rgba, int width, int height, Gs4dMask *m);
void gs4d_mask_free(Gs4dMask *m);

/* L above (0-d, the dtype of means, on its device) for means (N, 3) seen by cam. */
Tensor *gs4d_silhouette_loss(Tensor *means, const DsCamera *cam, const Gs4dMask *mask);

#endif
