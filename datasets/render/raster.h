/* datasets/render/raster.h — a z-buffered, shaded triangle rasterizer on the CPU: renders a DsMesh for
 * a DsCamera into a float RGB image, a depth buffer and a coverage (alpha) mask. For previews
 * and synthetic multi-view images; not differentiable (the Gaussian rasterizer is elsewhere).
 *
 * What it does, and why:
 * - Pixel (i, j) is sampled at its center (i + 0.5, j + 0.5), as camera.h says.
 * - Coverage is exact: vertices are snapped to 1/256 pixel and edge functions are evaluated in
 *   64-bit integers with the top-left fill rule, so a pixel center on an edge shared by two
 *   triangles belongs to exactly one of them — closed meshes have no cracks and no pixel is
 *   drawn twice by adjacent triangles.
 * - Triangles are clipped in camera space against the near plane (z = znear) — a triangle that
 *   crosses it keeps its visible part rather than being dropped — and against a guard band
 *   8192 pixels outside the image (this only keeps snapped coordinates small; nothing inside the
 *   image changes). Fragments beyond zfar are discarded per pixel.
 * - Colors and normals are interpolated perspective-correctly (barycentrics weighted by 1/z),
 *   on the unsnapped vertex positions. The depth buffer stores camera z (the distance along the
 *   optical axis), not 1/z or NDC.
 * - Shading is Lambert + ambient: color × (ambient + diffuse × max(0, n·l)), n from face
 *   normals or (interpolated) vertex normals, l towards a headlight at the camera center or a
 *   fixed directional light. Back faces are lit as if facing the camera (two-sided) unless
 *   culled, so meshes with inconsistent winding still render sensibly.
 * - Depth ties go to the triangle that comes first in the mesh; the output does not depend on
 *   the number of threads (OpenMP over bands of rows, each band owned by one thread). */
#ifndef ANIMA_DATASETS_RASTER_H
#define ANIMA_DATASETS_RASTER_H

#include <stdbool.h>
#include <stddef.h>

#include "datasets/render/camera.h"
#include "datasets/render/image.h"
#include "datasets/mesh/mesh.h"

typedef enum { DS_LIGHT_HEADLIGHT, DS_LIGHT_DIRECTIONAL } DsLightKind;
typedef enum { DS_NORMALS_VERTEX, DS_NORMALS_FACE } DsNormalKind;

typedef struct {
    float background[3];    /* color where nothing is drawn */
    float color[3];         /* used when the mesh has no per-vertex colors */
    float ambient, diffuse; /* shading = color × (ambient + diffuse × max(0, n·l)) */
    DsLightKind light;
    double light_dir[3];    /* DS_LIGHT_DIRECTIONAL: world direction towards the light */
    /* DS_NORMALS_VERTEX uses mesh->n when present, else angle-weighted vertex normals computed
     * from the faces (smooth shading); DS_NORMALS_FACE shades each triangle flat. */
    DsNormalKind normals;
    bool cull_backfaces;    /* skip triangles whose front (counter-clockwise side) faces away */
    bool unlit;             /* output the interpolated color as is (no shading) */
    int supersample;        /* s × s samples per pixel, box-filtered; 1 = one sample per pixel */
} DsRasterOptions;

typedef struct {
    int w, h;
    float *rgb;   /* h × w × 3: the shaded surface composited over the background */
    float *depth; /* h × w: camera z of the nearest surface; INFINITY where nothing is drawn
                     (with supersampling: the nearest over the pixel's samples) */
    float *alpha; /* h × w: covered fraction of the pixel's samples (0 or 1 without supersampling) */
    float background[3]; /* what rgb was composited over (to un-composite for RGBA output) */
} DsRender;

/* background (1,1,1), color (0.7,0.7,0.7), ambient 0.25, diffuse 0.75, headlight, vertex
 * normals, two-sided, supersample 1 */
DsRasterOptions ds_raster_options_default(void);

/* Renders m as seen by cam into out (allocated here; free with ds_render_free). opts NULL means
 * the defaults. 0, or -1 with err set (bad face indices, bad options, out of memory). Triangles
 * with non-finite vertices are skipped. */
int ds_raster_render(const DsMesh *m, const DsCamera *cam, const DsRasterOptions *opts, DsRender *out, char *err,
                     size_t errlen);
void ds_render_free(DsRender *r);

/* The color as an RGB image, or with `with_alpha` an RGBA image whose alpha is the coverage and
 * whose color is un-composited from the background (straight alpha, as PNG has it). */
int ds_render_to_image(const DsRender *r, bool with_alpha, DsImageF *out, char *err, size_t errlen);
/* ds_render_to_image, then PNG (temporary name and rename). */
int ds_render_write_png(const char *path, const DsRender *r, bool with_alpha, char *err, size_t errlen);

#endif
