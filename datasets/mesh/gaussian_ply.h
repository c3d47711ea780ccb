/* datasets/mesh/gaussian_ply.h — 3D Gaussian sets and the standard 3D Gaussian Splatting PLY
 * (graphdeco-inria layout; notes: gaussianimate.md §1), in and out.
 *
 * The file is one `vertex` element of float properties
 *     x y z  nx ny nz  f_dc_0..2  f_rest_0..(3(K-1)-1)  opacity  scale_0..2  rot_0..3
 * with K = (d+1)² spherical-harmonic coefficients per color channel for degree d = 0..3.
 * Values are raw, before activation: opacity is a logit (sigmoid gives alpha), scales are logs
 * (exp gives the standard deviations), rot is an unnormalized quaternion (w, x, y, z). nx ny nz
 * are always zero (the reference writes them as placeholders).
 *
 * SH order. The reference keeps features as (N, K, 3) — coefficient-major, the layout a
 * renderer evaluating SH wants — but writes f_rest by flattening the transposed (N, 3, K-1)
 * tensor, so in the file f_rest is channel-major: f_rest_j holds channel c = j / (K-1),
 * coefficient k = 1 + j % (K-1). DsGaussians keeps the (N, K, 3) order in memory (sh below);
 * the reader and writer do the transposition, so a file round-trips with every f_rest_j in
 * place and renderers index sh[(i·K + k)·3 + c] directly.
 *
 * The reader accepts any PLY encoding and any numeric property types (converted to float),
 * ignores properties it does not know, and requires x y z, f_dc_0..2, opacity, scale_0..2,
 * rot_0..3 and an f_rest count of 0, 9, 24 or 45. The writer emits exactly the reference
 * layout in binary little endian, through a temporary file. */
#ifndef ANIMA_DATASETS_GAUSSIAN_PLY_H
#define ANIMA_DATASETS_GAUSSIAN_PLY_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t n;
    int sh_degree;  /* 0..3 */
    float *xyz;     /* n × 3 means */
    float *sh;      /* n × K × 3, K = (sh_degree+1)²; k = 0 is f_dc */
    float *opacity; /* n logits */
    float *scale;   /* n × 3 log standard deviations */
    float *rot;     /* n × 4 quaternions (w, x, y, z), not normalized */
} DsGaussians;

static inline int ds_gaussians_sh_count(int degree) { return (degree + 1) * (degree + 1); }

/* Allocates zeroed arrays for n Gaussians of the given SH degree; 0, or -1 when out of memory. */
int ds_gaussians_alloc(DsGaussians *g, int64_t n, int sh_degree);
void ds_gaussians_free(DsGaussians *g); /* frees the arrays, zeroes the struct */

int ds_gaussians_read(const char *path, DsGaussians *g, char *err, size_t errlen);
/* The same on bytes in memory (fuzz harness); `name` names the source in messages. */
int ds_gaussians_read_mem(const char *name, const uint8_t *data, size_t size, DsGaussians *g, char *err, size_t errlen);
int ds_gaussians_write(const char *path, const DsGaussians *g, char *err, size_t errlen);

#endif
