/* datasets/corpus/make.c — the corpus builds of make.h: procedural shapes into the split caches,
 * a folder of real meshes into real.h5. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "base/par.h"
#include "datasets/corpus/make.h"
#include "datasets/mesh/mesh.h"

const char *ds_corpus_split_name(int split) {
    static const char *const NAMES[3] = {"train", "val", "test"};
    return split >= 0 && split < 3 ? NAMES[split] : "?";
}

static bool cancelled(volatile sig_atomic_t *flag) { return flag && *flag; }

static int64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* ---- procedural ------------------------------------------------------------------------------ */

/* one shape's counts into the totals */
static void tally_shape(DsCorpusMakeStats *st, const DsCorpusMakeOptions *o, int split, const char *cat,
                        const DsPreprocessed *pp) {
    int ci = 0;
    while (ci < o->ncat && strcmp(o->categories[ci], cat)) ci++;
    st->made[split][ci < o->ncat ? ci : 0]++;
    st->not_watertight += !pp->check.watertight || !pp->check.manifold;
    st->verts += pp->mesh.nv, st->faces += pp->mesh.nf, st->cubature += pp->cubature.n;
    double ve = fabs(ds_volume_error(pp->cubature.volume, pp->check.volume));
    if (ve > st->max_volume_error) st->max_volume_error = ve;
}

int ds_corpus_make(const char *dir, const DsCorpusMakeOptions *o, DsCorpusMakeStats *stats, char *err,
                   size_t errlen) {
    DsCorpusMakeStats local;
    DsCorpusMakeStats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    char cats[1024] = "", paths[3][4200];
    for (int i = 0; i < o->ncat; i++)
        snprintf(cats + strlen(cats), sizeof cats - strlen(cats), "%s%s", i ? "," : "", o->categories[i]);
    DsCacheInfo info = {.kind = "procedural", .rig = "primitives", .categories = cats, .command = o->command,
                        .seed = o->seed, .total = o->count, .grid = o->shape.grid,
                        .cubature_res = o->shape.cubature_res, .n_surface = o->shape.n_surface,
                        .n_sharp = o->shape.n_sharp};
    DsCacheWriter *w[3] = {0};
    for (int s = 0; s < 3; s++) {
        snprintf(paths[s], sizeof paths[s], "%s/%s.h5", dir, ds_corpus_split_name(s));
        info.split = ds_corpus_split_name(s);
        if (!(w[s] = ds_cache_writer_open(paths[s], &info, err, errlen))) {
            for (int k = 0; k < s; k++) ds_cache_writer_close(w[k], false, NULL, 0);
            return -1;
        }
    }
    int64_t done = 0;
    volatile int failed = 0;
    char fail_msg[2048] = "";
    /* Shapes in parallel, one thread each (the inner OpenMP loops of marching cubes and the grid
     * classification then run single-threaded, as nested regions): a shape is ~0.5 CPU-s of
     * small loops, which scale better across shapes than inside one. HDF5 (the serial build)
     * is not thread-safe, so writes and the progress go through one critical section; shapes
     * land in completion order, which the id (the corpus index) makes irrelevant. */
    int par_nt = base_par_threads(o->count, BASE_PAR_GRAIN);
#pragma omp parallel for schedule(dynamic, 1) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < o->count; i++) {
        if (failed || cancelled(o->cancel)) continue;
        char e[1024];
        const char *cat = o->family ? o->family : o->categories[i % o->ncat];
        uint64_t seed = o->family ? o->seed : ds_corpus_shape_seed(o->seed, i);
        float t = o->family ? (o->count > 1 ? (float)i / (float)(o->count - 1) : 0.0f) : 0.0f;
        DsProceduralShape shape;
        DsPreprocessed pp;
        DsTransform xf;
        int rc = ds_corpus_prepare(cat, seed, t, &o->shape, &shape, &pp, &xf, e, sizeof e);
        int sp = ds_corpus_split(o->seed, i);
        char id[32];
        snprintf(id, sizeof id, "%06lld", (long long)i);
#pragma omp critical(anima_dataset_h5)
        {
            if (rc == 0 && !failed)
                rc = ds_cache_write_shape(w[sp], id, cat, "procedural", seed, i, t, &pp, &xf, shape.nbones, shape.bones,
                                          shape.weights, e, sizeof e);
            if (rc && !failed) {
                failed = 1;
                snprintf(fail_msg, sizeof fail_msg, "shape %lld (%s, seed %llu): %s", (long long)i, cat,
                         (unsigned long long)seed, e);
            }
            if (rc == 0) {
                tally_shape(st, o, sp, cat, &pp);
                done++;
                if (o->progress) o->progress(o->ctx, done, o->count);
            }
        }
        /* both are zeroed on failure, so freeing is always safe */
        ds_preprocessed_free(&pp);
        ds_procedural_free(&shape);
    }
    bool ok = !failed && !cancelled(o->cancel);
    char cerr[2048] = "";
    int closed = 0;
    for (int s = 0; s < 3; s++)
        if (ds_cache_writer_close(w[s], ok, cerr, sizeof cerr) && ok) {
            base_errf(err, errlen, "%s", cerr);
            ok = false, closed = -1;
        }
    if (failed) return base_errf(err, errlen, "%s", fail_msg);
    if (cancelled(o->cancel)) return 1;
    if (closed) return -1;
    for (int s = 0; s < 3; s++) st->bytes += file_size(paths[s]);
    return 0;
}

/* ---- real meshes ----------------------------------------------------------------------------- */

/* "<i in 4 digits>_<name>" with every character of name other than [A-Za-z0-9-] as '_' */
static void real_id(int i, const char *name, char *id, size_t len) {
    char stem[128];
    snprintf(stem, sizeof stem, "%s", name);
    for (char *c = stem; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
            *c = '_';
    snprintf(id, len, "%04d_%s", i, stem);
}

static void report(const DsRealMakeOptions *o, const DsRealMeshReport *r) {
    if (o->report) o->report(o->ctx, r);
}

/* File i (folder/name) preprocessed and written as shape i: 0; 1 skipped (reported); -1 a write
 * error in err. */
static int real_one(DsCacheWriter *w, const DsRealMakeOptions *o, int i, const char *name, char *err,
                    size_t errlen) {
    char full[4200], e[2048];
    snprintf(full, sizeof full, "%s/%s", o->folder, name);
    DsRealMeshReport r = {.path = full};
    DsMesh m;
    if (ds_mesh_read(full, &m, e, sizeof e)) {
        r.skipped = e;
        report(o, &r);
        return 1;
    }
    /* Inside-out files (assimp's Wuson.off is wound clockwise) have winding number −1 inside,
     * which the w > ½ test reads as outside: flip them so the interior is kept */
    r.flipped = ds_mesh_signed_volume(&m) < 0;
    if (r.flipped) ds_mesh_flip(&m);
    DsPreprocessOptions po;
    ds_preprocess_defaults(&po);
    po.n_surface = o->n_surface, po.n_dense = 0, po.n_sharp = o->n_sharp, po.grid_res = o->cubature_res;
    po.seed = ds_corpus_shape_seed(o->seed, i);
    DsPreprocessed pp;
    double t1 = base_now();
    if (ds_preprocess(&m, &po, &pp, e, sizeof e)) {
        char why[sizeof full + sizeof e + 2];
        snprintf(why, sizeof why, "%s: %s", full, e);
        r.skipped = why;
        report(o, &r);
        ds_mesh_free(&m);
        return 1;
    }
    char id[160];
    real_id(i, name, id, sizeof id);
    int rc = 0;
    if (ds_cache_write_shape(w, id, "real", full, po.seed, i, 0, &pp, NULL, 0, NULL, NULL, err, errlen)) {
        rc = -1;
    } else {
        r.nv = pp.mesh.nv, r.nf = pp.mesh.nf, r.n_cubature = pp.cubature.n, r.watertight = pp.check.watertight;
        r.cubature_volume = pp.cubature.volume, r.mesh_volume = pp.check.volume, r.seconds = base_now() - t1;
        report(o, &r);
    }
    ds_preprocessed_free(&pp);
    ds_mesh_free(&m);
    return rc;
}

int ds_corpus_make_real(const char *dir, const DsRealMakeOptions *o, int *made, int *skipped, char *err,
                        size_t errlen) {
    *made = 0, *skipped = 0;
    char **names;
    int64_t n;
    if (ds_mesh_list_dir(o->folder, &names, &n))
        return base_errf(err, errlen, "%s: cannot open the folder (%s)", o->folder, strerror(errno));
    char path[4200];
    snprintf(path, sizeof path, "%s/real.h5", dir);
    DsCacheInfo info = {.split = "real", .kind = "real", .rig = "none", .categories = "real", .command = o->command,
                        .seed = o->seed, .total = 0, .grid = 0, .cubature_res = o->cubature_res,
                        .n_surface = o->n_surface, .n_sharp = o->n_sharp};
    DsCacheWriter *w = ds_cache_writer_open(path, &info, err, errlen);
    if (!w) {
        ds_mesh_names_free(names, n);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc && !cancelled(o->cancel); i++) {
        int r = real_one(w, o, i, names[i], err, errlen);
        if (r < 0) rc = -1;
        else if (r) ++*skipped;
        else ++*made;
    }
    ds_mesh_names_free(names, n);
    bool ok = !rc && !cancelled(o->cancel) && *made > 0;
    char cerr[2048];
    if (ds_cache_writer_close(w, ok, cerr, sizeof cerr) && ok) return base_errf(err, errlen, "%s", cerr);
    if (cancelled(o->cancel)) return 1;
    if (rc) return rc;
    if (!*made) return base_errf(err, errlen, "%s: no mesh anima can preprocess (%d skipped)", o->folder, *skipped);
    return 0;
}
