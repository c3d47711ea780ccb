/* datasets/corpus/make.h — building the training corpus that `anima dataset make` writes: the
 * procedural shape families into the three split caches (DIR/train.h5, val.h5, test.h5), or a
 * folder of real meshes into DIR/real.h5 (datasets/corpus/cache.h has the layout). Nothing
 * appears under the names before a build has succeeded: a failure, or a cancellation through the
 * options' flag (a signal handler sets it), leaves no file behind. Progress and per-file outcomes
 * come back through callbacks; the library prints nothing. */
#ifndef ANIMA_DATASETS_CORPUS_MAKE_H
#define ANIMA_DATASETS_CORPUS_MAKE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/corpus/cache.h"

/* the most categories one corpus draws from (ds_procedural_categories has fewer) */
#define DS_CORPUS_MAX_CATEGORIES 64
/* A split's name by ds_corpus_split's value (0 train, 1 val, 2 test), which names its file. */
const char *ds_corpus_split_name(int split);

typedef struct {
    const char *const *categories; /* ncat procedural categories, shape i of categories[i % ncat] */
    int ncat;                      /* 1 .. DS_CORPUS_MAX_CATEGORIES */
    const char *family;            /* non-NULL: one deformable family instead (categories[0] is it):
                                      shape i at t = i / (count − 1), all of seed `seed` */
    int64_t count;                 /* shapes over all splits */
    uint64_t seed;                 /* the corpus seed (ds_corpus_shape_seed, ds_corpus_split) */
    DsCorpusOptions shape;         /* grid, cubature grid, surface and sharp-edge samples */
    const char *command;           /* the command line, recorded in the caches */
    volatile sig_atomic_t *cancel; /* non-NULL and non-zero: stop at the next shape, write nothing */
    /* called after each shape written (done of count), one call at a time; may be NULL */
    void (*progress)(void *ctx, int64_t done, int64_t count);
    void *ctx;
} DsCorpusMakeOptions;

typedef struct {
    int64_t made[3][DS_CORPUS_MAX_CATEGORIES]; /* shapes per split and category (options' order) */
    int64_t not_watertight;                    /* meshes that are not watertight manifolds */
    int64_t verts, faces, cubature;            /* totals over the shapes */
    double max_volume_error;                   /* max |cubature volume − mesh volume| / mesh volume */
    int64_t bytes;                             /* the three files' sizes */
} DsCorpusMakeStats;

/* Makes the procedural corpus into dir/{train,val,test}.h5 (dir must exist). Shapes are made in
 * parallel (base_par_threads over the shapes, the inner loops then single-threaded) and written
 * through one critical section, in completion order (the ids, the corpus index in 6 digits, make
 * that irrelevant to a reader). stats (zeroed first) may be NULL. Returns 0; 1 when cancelled
 * (nothing written); -1 with err ("shape 3 (chair, seed 42): ...", or a file's problem). */
int ds_corpus_make(const char *dir, const DsCorpusMakeOptions *o, DsCorpusMakeStats *stats, char *err,
                   size_t errlen);

/* the outcome of one file of a real-mesh folder, for the caller's log */
typedef struct {
    const char *path;      /* the file (folder/name) */
    const char *skipped;   /* NULL: cached; else why not (names the file) */
    /* cached: the preprocessed mesh */
    int64_t nv, nf, n_cubature;
    bool watertight;
    bool flipped;          /* wound inside out in the file (negative volume): turned (ds_mesh_flip) */
    double cubature_volume, mesh_volume;
    double seconds;        /* the preprocessing's wall time */
} DsRealMeshReport;

typedef struct {
    const char *folder;            /* every mesh file in it (ds_mesh_list_dir), in name order */
    int64_t n_surface, n_sharp;
    int cubature_res;              /* the winding-number cubature grid */
    uint64_t seed;                 /* file i is sampled with ds_corpus_shape_seed(seed, i) */
    const char *command;
    volatile sig_atomic_t *cancel; /* as in DsCorpusMakeOptions */
    void (*report)(void *ctx, const DsRealMeshReport *r); /* after each file; may be NULL */
    void *ctx;
} DsRealMakeOptions;

/* Makes dir/real.h5 from the mesh files of o->folder, one at a time (the winding-number grid is
 * parallel inside: real meshes are few and uneven). A file that cannot be read or preprocessed is
 * skipped and reported; the shape ids are "<index in 4 digits>_<file name>" with every character
 * other than [A-Za-z0-9-] as '_'. *made and *skipped count the files. Returns 0; 1 when cancelled
 * (nothing written); -1 with err (the folder, the file, or no file that could be preprocessed). */
int ds_corpus_make_real(const char *dir, const DsRealMakeOptions *o, int *made, int *skipped, char *err,
                        size_t errlen);

#endif
