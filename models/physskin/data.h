/* models/physskin/data.h — the training shapes and the per-step batch (PhysSkin++ §IV-A):
 * per shape a pool of surface samples with normals (the encoder's input, and the surface
 * cubature candidates) and the interior cubature candidates with volume weights; per step and
 * shape, n_surface encoder points, n_cubature cubature points with V_c, and n_z subspace
 * coordinates z ~ N(0, σ² I).
 *
 * Sources (`--data`): "procedural:<cat>,<cat>,..." (or "procedural" for all categories)
 * generates data.shapes shapes with ds_procedural_make + ds_preprocess on small grids
 * (data.mesh_res, data.cubature_res); a directory from `anima dataset make` (its train.h5) or
 * a cache file is read with datasets/corpus/cache.h; "rigs:<file>,<file>,..." reads rigged shapes,
 * one per file: a Skelebones rig.h5 (its rest mesh and SSDR weights) or a skinned model through
 * libassimp (FBX, glTF, Collada, ...: its rest mesh and skin weights), each preprocessed as a
 * real mesh on data.cubature_res (it needs faces) — all fill the same PsShape. */
#ifndef ANIMA_MODELS_PHYSSKIN_DATA_H
#define ANIMA_MODELS_PHYSSKIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "tensor/tensor.h"

typedef struct {
    char category[32];
    int64_t n_surface;
    float *surface, *surface_normal; /* n_surface × 3 */
    int64_t n_cubature;
    float *cubature;                 /* n_cubature × 3 interior candidates */
    double volume;                   /* Σ of the candidates' volumes (or the mesh volume) */
    /* the shape's rig (L_comp, physskin.md §9): LBS weights of nbones bones at every surface
     * sample and interior candidate (n_surface × nbones, n_cubature × nbones); nbones 0 and
     * NULL when the source has no rig. Procedural shapes: ds_procedural_weights at the points;
     * a cache or a rig file: the rig at the mesh vertices, carried to the points by inverse
     * squared distance over the 4 nearest vertices (a cache's real meshes have none) */
    int nbones;
    float *rig_surface, *rig_cubature;
} PsShape;

typedef struct {
    int64_t total;       /* shapes in the whole corpus */
    int64_t begin, n;    /* this process holds [begin, begin + n) */
    PsShape *shapes;
} PsData;

/* Number of shapes of the source; 0 or -1 with err. */
int ps_data_count(const char *source, const PsConfig *c, int64_t *count, char *err, size_t errlen);
/* Loads shapes [begin, end) of the source (a rank's shard). 0 or -1 with err. */
int ps_data_load(PsData *d, const char *source, const PsConfig *c, int64_t begin, int64_t end, char *err,
                 size_t errlen);
/* Preparation's progress: done of total shapes of this shard, after each one; the calls come one
 * at a time (never concurrently), done increasing by one from 1 to total. */
typedef void (*PsDataProgressFn)(int64_t done, int64_t total, void *user);
/* ps_data_load reporting its progress to fn (NULL: none) with user. */
int ps_data_load_progress(PsData *d, const char *source, const PsConfig *c, int64_t begin, int64_t end,
                          PsDataProgressFn fn, void *user, char *err, size_t errlen);
void ps_data_free(PsData *d);

typedef struct {
    Tensor *points, *normals; /* (B, n_surface, 3) encoder input */
    Tensor *x;                /* (B, n_cubature, 3) cubature points */
    Tensor *v;                /* (B, n_cubature) volume weights V_c = volume / n_cubature */
    Tensor *z;                /* (B, n_z, 12m) */
    Tensor *rig;              /* (B, n_cubature, nb) rig weights at x, nb the batch's largest bone
                               * count (zero columns beyond a shape's own); NULL unless every
                               * shape of the batch has a rig */
} PsBatch;

/* The batch of shapes idx[0..B) (indices into d->shapes), every draw from g: encoder points
 * without replacement from the pool, round(surface_fraction·C) cubature points from the
 * surface pool and the rest from the interior candidates (without replacement while enough),
 * and z. Tensors of dtype dt in the current scope. */
void ps_batch_make(const PsData *d, const int64_t *idx, int64_t B, const PsConfig *c, TensorRng *g, TensorDType dt,
                   PsBatch *out);

#endif
