/* models/gs4d/eval.h — how well a gs4d model fits: the held-out photometric figures (PSNR, SSIM
 * per view) and, where the data has a ground-truth surface, the geometry (docs/gaussianimate.md §3):
 *
 *  - surface Chamfer: the surface the splats render (expected depth at alpha > 0.5 from each
 *    held-out view of a frame, back-projected: gs4d_surface_points) against the true surface
 *    (area-weighted samples of the frame's mesh) one way, and the part of the true surface those
 *    views see (the mesh rasterized through them, back-projected) against the rendered one the
 *    other way; % of the frame's bounding-box diagonal;
 *  - center Chamfer: the centers of the visible Gaussians (opacity ≥ 0.05) against the surface,
 *    with its two sides (accuracy, completeness), what as many points exactly on the surface
 *    score (the floor for that many Gaussians), and the signed distances of the visible centers
 *    (negative inside; the median also in units of each Gaussian's scale; quantiles) — what tells
 *    a thin layer from a shrunken one; round splats' centers sit ~2 σ inside the silhouette;
 *  - local rigidity of the trajectories (models/gs4d/arap.h) beside the true surface's own;
 *  - correspondence drift: how far the Gaussians slide over the true surface (Gs4dGeometry.drift).
 * The surface samples are drawn from a fixed stream (seed 7), so figures repeat exactly. */
#ifndef ANIMA_MODELS_GS4D_EVAL_H
#define ANIMA_MODELS_GS4D_EVAL_H

#include <stdint.h>

#include "models/gs4d/gs4d.h"
#include "models/gs4d/run.h"

/* The mean PSNR over d's views rendered over white (and the mean SSIM into *ssim, NULL: not
 * computed); per_psnr / per_ssim (NULL or d->n each) take every view's own. NAN for no views. */
double gs4d_eval_views(const Gs4dModel *m, const Gs4dData *d, double *ssim, double *per_psnr, double *per_ssim);

/* One ground-truth frame's geometry, % of its bounding-box diagonal (NAN where not defined:
 * no visible Gaussian, no held-out view at the frame's time). */
typedef struct {
    double time;
    double chamfer, centers_to_surface, surface_to_centers; /* visible centers */
    int64_t visible;
    double surface_chamfer, rendered_to_surface, seen_to_rendered; /* the rendered surface */
    double drift; /* median correspondence drift (below) of this frame, % of the rest diagonal */
} Gs4dFrameGeometry;

/* The geometry over the frames (means over frames unless named otherwise; % of the diagonal). */
typedef struct {
    int frames;
    /* the rendered surface, over the frames that have held-out views (surface_frames) */
    int surface_frames;
    double surface_chamfer, rendered_to_surface, seen_to_rendered;
    /* the visible centers */
    double chamfer, chamfer_max, centers_to_surface, surface_to_centers, visible, floor;
    double diag;             /* the mean bounding-box diagonal, world units */
    double pixel;            /* one pixel of the first held-out view at the scene center, world units */
    double median_scale;     /* of the visible Gaussians (smallest axis when anisotropic) */
    double inside;           /* fraction of the visible centers inside the surface */
    double median_signed;    /* median signed distance / own scale */
    double median_signed_eff;/* the same / √(scale² + the rasterizer's dilation) */
    double quantiles[5];     /* 5/25/50/75/95 % of the signed distances */
    double inset, inset_cs, inset_sc; /* the floor's samples pushed inward by the median depth */
    /* RMS non-rigid residual of 8-NN neighborhoods / their size (fraction), the truth's own */
    double rigidity, rigidity_gt;
    /* correspondence drift: whether the Gaussians follow the material they sit on. The Gaussians
     * visible in the first frame (tracked of them), each frame's nearest true vertex, and how far
     * that vertex lies on the rest surface from the one of the first frame: the median over the
     * Gaussians and its 90th percentile, means over frames, % of the rest diagonal. A fit can
     * render every view well while its Gaussians slide over the surface (photometrically
     * ambiguous texture); a rig made of such trajectories, and any truth tied to the surface
     * through them (models/partmm/tie.h), inherit the slide. */
    double drift, drift_p90;
    int64_t tracked;
    Gs4dFrameGeometry *per_frame; /* frames (malloc'd; gs4d_geometry_free) */
} Gs4dGeometry;

/* Called after each ground-truth frame (user, frames done, frames). */
typedef void (*Gs4dEvalProgressFn)(void *user, int done, int total);

/* The geometry of m against the ground truth gt, with the surface seen from held_out's views
 * at each frame's time, into out (gs4d_geometry_free it). */
void gs4d_eval_geometry(const Gs4dModel *m, const Gs4dData *held_out, const Gs4dSurfaceSeq *gt, Gs4dEvalProgressFn progress,
                        void *user, Gs4dGeometry *out);
void gs4d_geometry_free(Gs4dGeometry *g);

#endif
