/* models/gaussians/rasterize.h — the differentiable 3D Gaussian rasterizer as a custom autograd
 * op (autograd/custom.h): render Gaussians through a pinhole camera into an RGB image, an alpha
 * (accumulated opacity) and a depth map, with hand-written gradients for every Gaussian input, so
 * ag_backward runs through it. Algorithm: docs/gaussianimate.md §1 (EWA splatting,
 * Zwicker et al. 2001; tile-based rasterizer of Kerbl et al. 2023). The backend seam (CPU and
 * CUDA backends) is raster_core.h.
 *
 * Conventions
 *  - parameters are raw (pre-activation): s = exp(scales), q = quats / |quats| as (w, x, y, z),
 *    o = sigmoid(opacities);
 *  - colors (N, K, 3) are SH coefficients of degree sqrt(K) − 1 ∈ {0..3}, coefficient-major
 *    (colors[i][k][c]), evaluated along the direction camera center → mean:
 *    rgb = max(0, Σ_k Y_k f_k + 0.5); colors (N, 3) are plain RGB, used as given (no clamp);
 *  - camera: datasets/render/camera.h (OpenCV: x right, y down, z forward; pixel (i, j) sampled at
 *    (i + 0.5, j + 0.5)); Gaussians with camera z <= znear (0.01 when the camera's is <= 0) are
 *    culled and get zero gradient;
 *  - image = Σ_i c_i α_i T_i + T_final · background; alpha = 1 − T_final;
 *    depth = Σ_i z_i α_i T_i (z = camera-space z of the mean) — the alpha-weighted, unnormalized
 *    depth: divide by alpha for the expected depth of the visible surface. All three outputs are
 *    differentiable.
 * Inputs are f32 or f64 (all the same), all on the CPU or all on CUDA (then the outputs, radii and
 * mean2d_grad are CUDA tensors too). The CPU reference computes in f64 throughout; the CUDA backend
 * (rasterize_cuda.cu) projects in f64 and blends in f32. */
#ifndef ANIMA_MODELS_GAUSSIANS_RASTERIZE_H
#define ANIMA_MODELS_GAUSSIANS_RASTERIZE_H

#include "autograd/autograd.h"
#include "datasets/render/camera.h"

typedef struct {
    Tensor *means;     /* (N, 3) world positions */
    Tensor *scales;    /* (N, 3) raw log-scales, or (N, 1) for isotropic Gaussians */
    Tensor *quats;     /* (N, 4) raw (w, x, y, z); NULL when isotropic */
    Tensor *opacities; /* (N, 1) or (N) raw logits */
    Tensor *colors;    /* (N, K, 3) SH, K ∈ {1, 4, 9, 16}; or (N, 3) plain RGB */
} GsGaussians;

typedef struct {
    Tensor *image;  /* (H, W, 3) */
    Tensor *alpha;  /* (H, W) */
    Tensor *depth;  /* (H, W) */
    Tensor *packed; /* (H, W, 5): r, g, b, alpha, depth — the op's output; the above are views */
    Tensor *radii;  /* (N) i64: 3σ screen radius in pixels; 0 when culled, off-screen or o < 1/255 */
    /* (N, 2) of the input dtype, zeros until a backward runs through this render, then
     * accumulated dL/dμ' (pixel-space mean gradient, the densification statistic of 3DGS). */
    Tensor *mean2d_grad;
} GsRenderOut;

/* What a render does beyond the camera. */
typedef struct {
    /* px² added to every splat's screen-space covariance Σ' (the low-pass filter of EWA
     * splatting; 3DGS uses 0.3, so every splat covers about a pixel). A smaller one draws sharper
     * silhouettes, where antialiasing comes from elsewhere (supersampled renders). >= 0. */
    double dilation;
} GsRenderOptions;

#define GS_DEFAULT_DILATION 0.3
#define GS_RENDER_DEFAULTS ((GsRenderOptions){.dilation = GS_DEFAULT_DILATION})

/* Render g through cam (width × height from cam) over background (RGB; NULL = black), with the
 * default options. */
GsRenderOut gs_render(const GsGaussians *g, const DsCamera *cam, const double background[3]);
/* The same with options (NULL: GS_RENDER_DEFAULTS). */
GsRenderOut gs_render_with(const GsGaussians *g, const DsCamera *cam, const double background[3],
                           const GsRenderOptions *opt);

#endif
