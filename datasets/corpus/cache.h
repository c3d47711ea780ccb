/* datasets/corpus/cache.h — the HDF5 dataset cache that `anima dataset make` writes and the training
 * loops read: one file per split (train.h5, val.h5, test.h5, or real.h5 for folders of real
 * meshes), each holding preprocessed shapes (PhysSkin++ §III-B / §IV-A) under /shapes/<id>/.
 *
 * Layout of a file (readable with h5py; HDF5 ≥ 1.10 format, see ds_cache_writer_open):
 *   /            attrs format = "anima-dataset-1", split, kind ("procedural" | "real"),
 *                count, total (over all splits), seed, categories, command, grid,
 *                cubature_res, n_surface, n_sharp, rig ("primitives" | "none")
 *   /shapes/<id>/ attrs category, source, seed, index, t, center[3], scale, watertight,
 *                manifold, genus, area, volume (divergence theorem of the stored mesh)
 *       mesh/vertices (nv,3) f32   mesh/normals (nv,3) f32   mesh/faces (nf,3) i32
 *       surface/points (ns,3) f32  surface/normals (ns,3) f32
 *       sharp/points (nk,3) f32    sharp/normals (nk,3) f32          (nk may be 0)
 *       cubature/cells (nc) i32    cubature/volumes (nc) f32         attrs res, volume
 *       skeleton/heads (nb,3) f32  skeleton/tails (nb,3) f32  skeleton/parents (nb) i32
 *       skeleton/names (nb) fixed strings                           (nb = 0 for real meshes)
 *       weights (nv,nb) f32                                         (absent for real meshes)
 * Everything is in the normalized frame ([-1,1]³); center/scale map the generating (or file)
 * frame there: x_normalized = (x − center)·scale.
 *
 * Cubature candidates are the interior cells of a res³ grid over [-1,1]³ stored as linear cell
 * indices (i fastest, ds_grid_center): a third of the bytes of float positions and exact, and
 * the reader hands out positions. Datasets are chunked with shuffle + deflate and Fletcher-32,
 * so a flipped byte is an error at read time rather than garbage geometry.
 *
 * The HDF5 library used here is the serial, non-thread-safe build: callers serialize every
 * ds_cache_* call (the writer in `anima dataset make` holds an OpenMP critical section). */
#ifndef ANIMA_DATASETS_CACHE_H
#define ANIMA_DATASETS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/geometry/geometry.h"
#include "datasets/geometry/procedural.h"

#define DS_CACHE_FORMAT "anima-dataset-1"

/* One shape as stored; every array is malloc'd and owned by the record. */
typedef struct {
    char id[32];
    char category[32];
    char source[512];   /* "procedural" or the mesh file it came from */
    uint64_t seed;
    int64_t index;      /* position in the whole corpus (all splits) */
    float t;            /* family parameter (0 unless --family) */
    DsTransform xf;     /* source frame → normalized */
    DsMesh mesh;        /* v, n, f */
    int64_t n_surface, n_sharp, n_cubature;
    float *surface, *surface_normal; /* n_surface × 3 */
    float *sharp, *sharp_normal;     /* n_sharp × 3 */
    int cubature_res;
    int32_t *cubature_cell;          /* n_cubature linear cell indices */
    float *cubature;                 /* n_cubature × 3 positions (cell centers) */
    float *cubature_volume;          /* n_cubature, Σ = the shape's volume estimate */
    int nbones;
    DsBone *bones;                   /* nbones (names, parents, heads, tails) */
    float *weights;                  /* nv × nbones, or NULL (no rig: real meshes) */
    /* the stored mesh check */
    bool watertight, manifold;
    int64_t genus;
    double area, volume;
} DsShapeRecord;

void ds_shape_record_free(DsShapeRecord *r);

/* ---- writing ------------------------------------------------------------------------------- */

typedef struct DsCacheWriter DsCacheWriter;

/* Root attributes; strings may be NULL (written as ""). */
typedef struct {
    const char *split;      /* "train", "val", "test", "real" */
    const char *kind;       /* "procedural" or "real" */
    const char *rig;        /* "primitives" or "none" */
    const char *categories; /* comma-separated */
    const char *command;    /* the command line that made it */
    uint64_t seed;
    int64_t total;          /* shapes over all splits */
    int grid, cubature_res;
    int64_t n_surface, n_sharp;
} DsCacheInfo;

/* Creates "<path>.tmp-<pid>"; nothing appears at path before ds_cache_writer_close(ok=true)
 * renames it (after fsync). NULL with err set. */
DsCacheWriter *ds_cache_writer_open(const char *path, const DsCacheInfo *info, char *err, size_t errlen);
/* Writes /shapes/<id>. pp: the preprocessed shape; bones/weights: the rig (nbones 0 and
 * weights NULL for none), in pp's normalized frame and over pp->mesh's vertices. xf overrides
 * pp->xf (procedural shapes compose their generating transform with it); NULL keeps pp->xf. */
int ds_cache_write_shape(DsCacheWriter *w, const char *id, const char *category, const char *source, uint64_t seed,
                         int64_t index, float t, const DsPreprocessed *pp, const DsTransform *xf, int nbones,
                         const DsBone *bones, const float *weights, char *err, size_t errlen);
/* ok: finish, fsync and rename into place; !ok: remove the temporary. Frees w. 0 or -1. */
int ds_cache_writer_close(DsCacheWriter *w, bool ok, char *err, size_t errlen);

/* ---- the procedural corpus ------------------------------------------------------------------ */

typedef struct {
    int grid;             /* marching-cubes cells along the longest side */
    int cubature_res;     /* interior candidates on a res³ grid */
    int64_t n_surface, n_sharp;
} DsCorpusOptions;

/* Shape `index` of the corpus of `seed`: its own seed (splitmix64 of both) and its split
 * (0 train, 1 val, 2 test; 80/10/10 by a hash that does not depend on the corpus size, so a
 * bigger corpus of the same seed keeps the smaller one's assignment). */
uint64_t ds_corpus_shape_seed(uint64_t seed, int64_t index);
int ds_corpus_split(uint64_t seed, int64_t index);

/* Makes one procedural shape (ds_procedural_make_family) and preprocesses it with the exact
 * SDF classifying the cubature grid; afterwards shape->bones are in pp's frame, shape->weights
 * index pp->mesh's vertices and *xf maps the generating frame to pp's. 0, or -1 with err set
 * (both outputs zeroed). */
int ds_corpus_prepare(const char *category, uint64_t seed, float t, const DsCorpusOptions *o, DsProceduralShape *shape,
                      DsPreprocessed *pp, DsTransform *xf, char *err, size_t errlen);

/* ---- reading ------------------------------------------------------------------------------- */

typedef struct DsCache DsCache;

/* Opens and checks the root (format tag, /shapes); NULL with "path: problem" in err. */
DsCache *ds_cache_open(const char *path, char *err, size_t errlen);
int64_t ds_cache_count(const DsCache *c);
/* The id of shape i (0 ≤ i < count), in id order. */
const char *ds_cache_id(const DsCache *c, int64_t i);
/* Root attributes (strings point into c). */
const DsCacheInfo *ds_cache_info(const DsCache *c);
/* Reads shape i and validates every dataset's type and shape against the others (counts,
 * index ranges, finite values, parents before children, rows of weights summing to 1):
 * a corrupt cache gives "path: /shapes/<id>/<dataset>: problem", never a crash. 0 or -1. */
int ds_cache_read_shape(DsCache *c, int64_t i, DsShapeRecord *out, char *err, size_t errlen);
/* Attributes and counts only (mesh.nv/nf, n_surface, n_sharp, n_cubature, nbones; no arrays,
 * nothing validated beyond the category): fast summaries of a whole file. 0 or -1. */
int ds_cache_read_meta(DsCache *c, int64_t i, DsShapeRecord *out, char *err, size_t errlen);
/* ds_cache_read_shape by id; -1 "no shape" when absent. */
int ds_cache_read_shape_id(DsCache *c, const char *id, DsShapeRecord *out, char *err, size_t errlen);
void ds_cache_close(DsCache *c);

/* True when path is an HDF5 file (any, not only a cache). */
bool ds_cache_is_hdf5(const char *path);

/* n cubature indices drawn uniformly without replacement from r (Floyd's algorithm, Philox
 * keyed by (seed, step)): the per-step subset a training loop feeds the elastic energy. The
 * subset's volume weights are the drawn ones scaled by n_cubature / n so the sum still
 * estimates the volume. n ≤ r->n_cubature; writes idx (n) and, if w is not NULL, w (n). */
void ds_shape_sample_cubature(const DsShapeRecord *r, int64_t n, uint64_t seed, uint64_t step, int64_t *idx,
                              float *w);

#endif
