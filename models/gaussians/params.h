/* models/gaussians/params.h — host-side edits of per-Gaussian parameters that the 3DGS fit
 * (fit.c) and the deformable Gaussians (models/gs4d) share: the random draws of their
 * initialization and densification, the opacity activation, rows of a parameter group and of its
 * Adam moments (one row per Gaussian), 3DGS's opacity reset, the frame of a Gaussian, and the
 * export of the raw parameters to a DsGaussians. All on CPU f32 tensors (a fit on the GPU runs
 * them on host copies). */
#ifndef ANIMA_MODELS_GAUSSIANS_PARAMS_H
#define ANIMA_MODELS_GAUSSIANS_PARAMS_H

#include <math.h>
#include <stdint.h>

#include "datasets/mesh/gaussian_ply.h"
#include "optim/optim.h"
#include "tensor/tensor.h"

/* Draws from Philox on g (keyed by its seed and stream): each block of 4 words takes one counter,
 * g->offset, which advances as blocks are used; the words of a block are used last first. */
typedef struct {
    TensorRng *g;
    uint32_t w[4];
    int left; /* words of w not used yet */
} GsDraw;

/* U[0, 1) with 32 random bits */
double gs_draw_u(GsDraw *d);
/* N(0, 1) by Box–Muller, from two gs_draw_u */
double gs_draw_n(GsDraw *d);
/* An index drawn in proportion to the weights whose running sums are cdf[0..n) (n ≥ 1, total =
 * cdf[n − 1]): the first k with cdf[k] > u · total for u = gs_draw_u (n − 1 when none is). */
int64_t gs_draw_from_cdf(GsDraw *d, const double *cdf, int64_t n, double total);

/* the opacity activation and its inverse (raw opacities are logits) */
static inline double gs_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static inline double gs_logit(double p) { return log(p / (1 - p)); }

/* Of a parameter group of n rows (flat: its values, numel a multiple of n): row dst = row src. */
void gs_rows_copy(Tensor *flat, int64_t n, int64_t dst, int64_t src);
/* The Adam moments of row i of the group opt updates (n rows) set to 0. */
void gs_rows_zero_moments(const Optim *opt, int64_t n, int64_t i);
/* 3DGS's reset_opacity: each of the n raw opacities o capped at logit(0.01), and the Adam
 * moments of the opacity group (opt, one value per Gaussian) set to 0. */
void gs_opacity_reset(float *o, int64_t n, const Optim *opt);

/* The scales s (exp of the raw log scales: ns per Gaussian, 1 isotropic or 3) and the rotation R
 * (row-major; from the unit quaternion w x y z of quats, normalized here; the identity when
 * quats is NULL) of Gaussian j. */
void gs_gaussian_frame(const float *log_scales, int ns, const float *quats, int64_t j, double s[3], double R[9]);

/* The raw parameters of n Gaussians into out (allocated here, SH degree sh_degree): means n × 3,
 * log_scales n × ns, opacities n (logits), sh_dc n × 3, sh_rest n × (K − 1) × 3 for the K SH
 * coefficients of the degree (NULL at degree 0), quats n × 4 (NULL: the identity). 0, or -1 out
 * of memory. */
int gs_export_params(int64_t n, int sh_degree, int ns, const float *means, const float *log_scales,
                     const float *opacities, const float *sh_dc, const float *sh_rest, const float *quats,
                     DsGaussians *out);

#endif
