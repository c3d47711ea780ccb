/* datasets/corpus/summary.h — what `anima dataset show` asks of a shape or a cache: one of a
 * shape's fields as a mesh of its own (a PLY to look at; rig weights as blue-white-red colours),
 * the cubature's volume, and a cache's shapes counted per category and file. */
#ifndef ANIMA_DATASETS_CORPUS_SUMMARY_H
#define ANIMA_DATASETS_CORPUS_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/corpus/cache.h"
#include "datasets/corpus/make.h"

/* Blue → white → red for a weight w in [0, 1] (clamped): 0 blue (0,0,1), ½ white, 1 red (1,0,0). */
void ds_weight_color(float w, float rgb[3]);

/* The fields of one shape, borrowed (NULL / 0 where the shape has none). */
typedef struct {
    const DsMesh *mesh;
    int64_t n_surface, n_sharp, n_cubature;
    const float *surface, *surface_normal;   /* n_surface × 3 */
    const float *sharp, *sharp_normal;       /* n_sharp × 3 */
    const float *cubature, *cubature_volume; /* n_cubature × 3, n_cubature */
    int nbones;
    const DsBone *bones;
    const float *weights;                    /* mesh->nv × nbones, or NULL */
} DsShapeFields;

/* The fields of a cached shape, and of a freshly preprocessed mesh (no rig). */
DsShapeFields ds_shape_fields_of_record(const DsShapeRecord *r);
DsShapeFields ds_shape_fields_of_preprocessed(const DsPreprocessed *pp);

/* Field `name` of f as a mesh of its own (every array copied; ds_mesh_free): "mesh" (vertices,
 * normals, faces), "surface" and "sharp" (points with normals), "cubature" (points, the volume
 * weights as the scalar), "weights:B" (the mesh with bone B's weights as the scalar and
 * ds_weight_color colours; B a bone name, or else an index). 0, or -1 with the reason in err,
 * worded to follow the option that named the field ("weights:x: no bone 'x' (bones: a b)",
 * "expects mesh, surface, sharp, cubature or weights:<bone>, got 'y'"). */
int ds_shape_field_mesh(const DsShapeFields *f, const char *name, DsMesh *out, char *err, size_t errlen);

/* Σ of the cubature's volume weights, in order: the shape's volume estimate. */
double ds_shape_cubature_volume(const DsShapeRecord *r);

/* ---- a cache's summary ----------------------------------------------------------------------- */

#define DS_CACHE_SUMMARY_FILES 4 /* train, val, test, real */

typedef struct {
    int nfiles, ncat;
    char categories[DS_CORPUS_MAX_CATEGORIES][32]; /* in the order first seen */
    int64_t counts[DS_CACHE_SUMMARY_FILES][DS_CORPUS_MAX_CATEGORIES]; /* shapes per file and category */
    int64_t shapes, watertight, vertices; /* over every file: shapes, watertight manifold ones, Σ vertices */
} DsCacheSummary;

/* Adds the shapes of the open cache c as the summary's next file (s zeroed before the first):
 * their metadata only (ds_cache_read_meta). Categories past DS_CORPUS_MAX_CATEGORIES are not
 * counted per category. 0, or -1 with err (a read error, or DS_CACHE_SUMMARY_FILES files already). */
int ds_cache_summary_add(DsCacheSummary *s, DsCache *c, char *err, size_t errlen);

#endif
