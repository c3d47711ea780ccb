/* datasets/motion/secondary.h — secondary, non-rigid motion the rig cannot express: soft regions
 * (a belly, a tail tip, a shade rim) that lag behind and jiggle when the body accelerates.
 *
 * The field (documented here because it is the ground truth a reconstruction is scored
 * against). Each soft region k has a rest center c_k carried by bone b_k, a radius r_k, a
 * natural frequency f_k and a damping ratio ζ_k. Its anchor follows the rig: a_k(t) =
 * S_{b_k}(t) c_k (rig.h). A point mass hangs on the anchor by an isotropic zero-length spring;
 * its offset u_k = y_k − a_k obeys, in world coordinates,
 *     ü_k = −ω_k² u_k − 2 ζ_k ω_k u̇_k − ä_k(t),      ω_k = 2π f_k,  u_k(0) = u̇_k(0) = 0,
 * i.e. it is driven only by the anchor's acceleration (the inertial force in the anchor's
 * frame): an anchor at rest or in uniform motion leaves it at zero, so the rest pose and any
 * constant-velocity drift produce no displacement. ä_k is the central second difference of the
 * anchor's per-frame positions (0 at the first and last frame), linearly interpolated between
 * frames; the ODE is integrated with 16 semi-implicit Euler substeps per frame. The offset
 * saturates smoothly, û = u · m tanh(|u|/m) / |u| with m = max_disp, so a hard landing cannot
 * tear the surface. A vertex v moves by
 *     d_v(t) = Σ_k w_vk û_k(t),   w_vk = (1 − |x_v − c_k|² / r_k²)² inside the ball, 0 outside,
 * (x_v its rest position), added to its LBS position: no bone transform can produce it because
 * the weight falls off inside a bone's region and the offset is not a rotation. */
#ifndef ANIMA_DATASETS_MOTION_SECONDARY_H
#define ANIMA_DATASETS_MOTION_SECONDARY_H

#include <stdint.h>

#include "datasets/geometry/procedural.h"

#define DS_SECONDARY_MAX 4

typedef struct {
    char name[24];    /* "belly", "tail_tip", ... */
    int bone;         /* the bone carrying the anchor */
    float center[3];  /* rest position of the anchor */
    float radius;     /* falloff radius (normalized units) */
    double freq_hz, damping, max_disp;
} DsSoftRegion;

typedef struct {
    int n;
    DsSoftRegion r[DS_SECONDARY_MAX];
} DsSecondarySpec;

/* The soft regions of a shape's category (two for most, centered just inside the surface),
 * frequencies drawn from seed in [2.5, 3.5] Hz, ζ = 0.12, max_disp = 0.4 r. */
void ds_secondary_spec(const DsProceduralShape *shape, uint64_t seed, DsSecondarySpec *out);
/* w (nv × spec->n), as above. */
void ds_secondary_weights(const DsSecondarySpec *spec, int64_t nv, const float *rest, float *w);
/* The displacement disp (nframes × nv × 3) for a motion whose skinning transforms are skin
 * (nframes × nbones × 16, rig.h); u_out (nframes × n × 3, the saturated offsets û) may be NULL. */
void ds_secondary_simulate(const DsSecondarySpec *spec, int nframes, double fps, int nbones, const double *skin,
                           int64_t nv, const float *w, float *disp, float *u_out);

#endif
