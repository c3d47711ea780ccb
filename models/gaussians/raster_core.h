/* models/gaussians/raster_core.h — the rasterizer's backend seam. Everything below is plain C on
 * flat arrays (no Tensor), so a backend (rasterize_cpu.c, rasterize_cuda.cu) only has to
 * implement gs_raster_*_forward / _backward over these structs. For the CUDA backend
 * (rasterize_cuda.cu) every array pointer below — inputs, state, outputs, gradients — is a device
 * pointer; the scalars are host values. rasterize.c is the Tensor glue:
 * it converts the inputs, calls a backend through GsRasterBackend and registers the custom op.
 *
 * Algorithm and conventions: docs/gaussianimate.md §1 (EWA splatting, Zwicker et al.
 * 2001; tile rasterizer of Kerbl et al. 2023). Camera: datasets/render/camera.h (OpenCV pinhole, pixel
 * (i, j) sampled at (i + 0.5, j + 0.5)). */
#ifndef ANIMA_MODELS_GAUSSIANS_RASTER_CORE_H
#define ANIMA_MODELS_GAUSSIANS_RASTER_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_TILE 16                  /* tile side in pixels (gaussianimate.md §1 step 5) */
#define GS_ALPHA_MAX 0.99           /* α clamp (§1 step 6) */
#define GS_ALPHA_MIN (1.0 / 255.0)  /* skip contributions below one 8-bit level */
#define GS_T_MIN 1e-4               /* stop once transmittance would fall below */
#define GS_FOV_CLAMP 1.3            /* clamp t_x/t_z, t_y/t_z to 1.3× the field of view (J only) */
#define GS_SH_MAX 16                /* coefficients of degree 3 */

#ifdef __cplusplus
extern "C" {
#endif

/* The per-Gaussian quantities the blending stage reads, and whose gradients it produces:
 * pixel mean μ' (2), conic Q = Σ'⁻¹ as (a, b, c), activated opacity o, rgb (3), camera depth z. */
enum { GS_SPLAT_MX, GS_SPLAT_MY, GS_SPLAT_A, GS_SPLAT_B, GS_SPLAT_C, GS_SPLAT_O, GS_SPLAT_R, GS_SPLAT_G,
       GS_SPLAT_BL, GS_SPLAT_Z, GS_SPLAT_N };

/* Output channels of the packed image (H, W, GS_OUT_N). */
enum { GS_OUT_R, GS_OUT_G, GS_OUT_B, GS_OUT_ALPHA, GS_OUT_DEPTH, GS_OUT_N };

typedef struct {
    int n;             /* Gaussians */
    int width, height; /* pixels */
    double fx, fy, cx, cy;
    double R[9], t[3]; /* world → camera, row-major */
    double znear;      /* cull t_z <= znear */
    double bg[3];
    int sh_degree;     /* 0..3, or -1 for plain RGB colors (N, 3) used as they are */
    int sh_coeffs;     /* (sh_degree + 1)², 1 for plain RGB */
    bool isotropic;    /* scales (N, 1), no quaternions: Σ = s² I */
    double dilation;   /* px² added to Σ's diagonal: the EWA low-pass filter (§1 step 3) */
    const double *means;     /* n × 3 */
    const double *scales;    /* n × 3 (or n × 1), raw: s = exp(raw) */
    const double *quats;     /* n × 4 raw (w, x, y, z), NULL when isotropic */
    const double *opacities; /* n, raw: o = sigmoid(raw) */
    const double *colors;    /* n × sh_coeffs × 3 (SH, coefficient-major) or n × 3 */
} GsRasterInputs;

/* What the forward keeps for the backward. Buffers come from `alloc` (the glue passes the tensor
 * scope's arena, so they live as long as the recorded node). */
typedef struct {
    void *(*alloc)(void *user, size_t nbytes);
    void *alloc_user;
    int tiles_x, tiles_y;
    double *splat;          /* n × GS_SPLAT_N (CPU backend; NULL on CUDA) */
    float *splat_f32;       /* CUDA backend: n × 12, the splats in f32 as three float4 per Gaussian
                               (mx, my, o, z), (a, b, c, 0), (r, g, b, 0); NULL on the CPU */
    int32_t *radius;        /* n: pixel radius, 0 when culled */
    double *extent;         /* n × 3: σ bound and half-widths of the α >= 1/255 box (CPU; NULL on CUDA) */
    int64_t n_entries;      /* (tile, Gaussian) pairs */
    int32_t *entry_gauss;   /* n_entries: the Gaussian of each pair, per tile in depth order */
    int64_t *tile_start;    /* tiles + 1: the entries of tile k are [tile_start[k], tile_start[k+1]) */
    double *T_final;        /* H × W: transmittance left after the last contributor */
    int32_t *n_contrib;     /* H × W: entries walked up to and including the last one blended */
} GsRasterState;

/* Gradients the backward produces, in the layouts of the inputs (each may be NULL when not
 * needed; the arrays are overwritten). */
typedef struct {
    double *means, *scales, *quats, *opacities, *colors;
    double *mean2d; /* optional n × 2: dL/dμ' (screen-space gradient, for densification) */
} GsRasterGrads;

typedef struct {
    const char *name;
    /* out: H × W × GS_OUT_N (r, g, b, alpha, depth); fills st. */
    void (*forward)(const GsRasterInputs *in, GsRasterState *st, double *out);
    /* grad_out: H × W × GS_OUT_N. */
    void (*backward)(const GsRasterInputs *in, const GsRasterState *st, const double *grad_out,
                     GsRasterGrads *g);
} GsRasterBackend;

extern const GsRasterBackend gs_raster_backend_cpu;
/* rasterize_cuda.cu, linked only in CUDA=1 builds (ANIMA_CUDA): device arrays, f32 blending. */
extern const GsRasterBackend gs_raster_backend_cuda;
/* rasterize_cuda.cu: dst[i] = src[i] for n device values (the radii output). */
void gs_cuda_radius_to_i64(const int32_t *src, int64_t *dst, int n);

/* sort.c: LSD radix sort of (key, value) pairs by the low `key_bits` bits of key, 8 bits a
 * pass, stable. tmp_keys / tmp_vals hold n elements each. The result is in keys / vals. */
void gs_radix_sort(uint64_t *keys, int32_t *vals, uint64_t *tmp_keys, int32_t *tmp_vals, int64_t n, int key_bits);

#ifdef __cplusplus
}
#endif

#endif
