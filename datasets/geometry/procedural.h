/* datasets/geometry/procedural.h — the procedural training corpus: shape families built from primitives
 * (capsules, ellipsoids, boxes, cylinders, tori) joined by a smooth SDF union, meshed by marching
 * cubes into watertight manifold meshes, each with its generating skeleton and smooth LBS
 * weights (the rigs later issues need). Public 3D datasets cannot be downloaded here; this
 * stands in for ShapeNet / RigNet in PhysSkin++ §IV-A.
 *
 * Coordinates: y up. Every shape is normalized into [-1,1]³ (bounding-box center, uniform
 * scale; the transform from the generating frame is kept), like the paper's meshes. */
#ifndef ANIMA_DATASETS_PROCEDURAL_H
#define ANIMA_DATASETS_PROCEDURAL_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/geometry/geometry.h"
#include "datasets/mesh/mesh.h"

/* ---- signed distance primitives (datasets/geometry/sdf.c) ---------------------------------------------- */

typedef enum {
    DS_SDF_CAPSULE,   /* segment a→b, radius r0 at a, r1 at b (linearly tapered) */
    DS_SDF_ELLIPSOID, /* center c, semi-axes half[] along the columns of R */
    DS_SDF_BOX,       /* center c, half extents half[] along R's columns, edges rounded by r0 */
    DS_SDF_CYLINDER,  /* axis a→b, radius r0, edges rounded by r1 */
    DS_SDF_TORUS,     /* center c, ring in the plane ⟂ R's column 1 (local y), radii r0 (major), r1 */
} DsSdfKind;

typedef struct {
    DsSdfKind kind;
    int bone;      /* the bone whose weight this primitive drives; -1: none */
    int subtract;  /* 1: carved out of the union (max(d, −d_i)) instead of added */
    float a[3], b[3], c[3];
    float R[9];    /* row-major local→world rotation, columns are the local axes */
    float half[3];
    float r0, r1;
    float lo[3], hi[3]; /* bounding box (filled by ds_sdf_scene_finish) */
} DsSdfPrim;

typedef struct {
    int nprims;
    DsSdfPrim *prims;
    float k; /* smooth-union radius (Quilez polynomial smooth-min) */
} DsSdfScene;

float ds_sdf_prim(const DsSdfPrim *p, const float x[3]);
/* smooth union of the additive primitives, then the subtractions; negative inside */
float ds_sdf_scene_eval(const DsSdfScene *s, const float x[3]);
/* computes each primitive's bounding box (enables culling in ds_sdf_scene_eval) */
void ds_sdf_scene_finish(DsSdfScene *s);
/* maps the scene by x ← (x − center)·scale */
void ds_sdf_scene_transform(DsSdfScene *s, DsTransform t);
/* polynomial smooth minimum (Quilez, "smooth minimum", 2013): equals min(a, b) when
 * |a − b| ≥ k and rounds the crease within k */
float ds_smin(float a, float b, float k);

/* ---- skeletons and shapes -------------------------------------------------------------------- */

typedef struct {
    char name[24];
    int parent;      /* index of the parent bone, -1 for the root; parents come first */
    float head[3];   /* joint position */
    float tail[3];
} DsBone;

typedef struct {
    char category[24];
    uint64_t seed;
    float t;                 /* family parameter (0 for ds_procedural_make) */
    DsMesh mesh;             /* normalized into [-1,1]³, outward, with vertex normals */
    int nbones;
    DsBone *bones;           /* in the same normalized frame */
    float *weights;          /* nv × nbones, rows sum to 1 */
    DsSdfScene scene;        /* the generating SDF, in the normalized frame */
    DsTransform xf;          /* generating frame → normalized */
    int genus;               /* the genus the category is built to have */
} DsProceduralShape;

/* The category names (NULL-terminated) and their count. */
const char *const *ds_procedural_categories(int *count);
/* The genus shapes of `category` are built to have (mug: 1, others 0); -1 if unknown. */
int ds_procedural_expected_genus(const char *category);

/* One random member of a category: proportions drawn from (seed, category), meshed on a grid
 * with grid_res cells along the longest side (≥ 16). 0, or -1 with err set. */
int ds_procedural_make(const char *category, uint64_t seed, int grid_res, DsProceduralShape *out, char *err,
                       size_t errlen);
/* The deformable-family mode: each continuous proportion is lerp(draw(seed), draw(seed'), t)
 * for t ∈ [0, 1], discrete choices (part counts, styles) come from `seed` alone, so the shape
 * varies continuously with t and keeps its topology and skeleton. t = 0 gives
 * ds_procedural_make's shape. */
int ds_procedural_make_family(const char *category, uint64_t seed, float t, int grid_res, DsProceduralShape *out,
                              char *err, size_t errlen);
void ds_procedural_free(DsProceduralShape *s);
/* ds_sdf_scene_eval on s->scene, shaped as a DsSdfFn for ds_cubature_sdf / DsPreprocessOptions */
float ds_procedural_sdf(void *shape, const float p[3]);

/* LBS weights from the primitives: w_i(x) = softmax_i(−d_i(x)/σ) with d_i the smooth union of
 * bone i's primitives and σ = sigma (normalized units; 0 → the default 0.04). A bone with no
 * primitive gets weight 0. Writes n × nbones. */
void ds_procedural_weights(const DsSdfScene *s, int nbones, const float *x, int64_t n, float sigma, float *w);

#endif
