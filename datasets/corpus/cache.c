/* datasets/corpus/cache.c — the HDF5 dataset cache (layout in cache.h): an atomic writer (temporary
 * file + fsync + rename, base/h5file.h, as for checkpoints) and a reader that validates every
 * dataset before handing out arrays. */
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/alloc.h"
#include "datasets/corpus/cache.h"
#include "base/h5file.h"
#include "tensor/tensor.h"
#include "base/errbuf.h"

/* a corrupt header could claim any size; no dataset of a real cache comes near this */
#define MAX_ELEMS ((hsize_t)1 << 28)
#define MAX_ATTR_STR ((size_t)1 << 16)

void ds_shape_record_free(DsShapeRecord *r) {
    if (!r) return;
    ds_mesh_free(&r->mesh);
    free(r->surface), free(r->surface_normal);
    free(r->sharp), free(r->sharp_normal);
    free(r->cubature_cell), free(r->cubature), free(r->cubature_volume);
    free(r->bones), free(r->weights);
    memset(r, 0, sizeof *r);
}

bool ds_cache_is_hdf5(const char *path) {
    base_h5_quiet();
    if (access(path, R_OK) != 0) return false;
    return H5Fis_hdf5(path) > 0;
}

/* ==== writing ================================================================================ */

struct DsCacheWriter {
    char path[4096], tmp[4200];
    hid_t file, shapes;
    int64_t count;
};

static int attr_f64(hid_t loc, const char *name, double v) { return base_h5_attr_write_num(loc, name, H5T_NATIVE_DOUBLE, 0, &v); }

/* A dataset of rows × cols (cols 0: 1-D) elements of mem_type, checksummed (base/h5file.h)
 * with byte shuffle + deflate 1 (marching-cubes meshes and sorted cell indices shrink ~2×,
 * constant volumes to nothing, at a few ms per shape), in chunks of ≤ 256k elements: big enough
 * for deflate, small enough to read a part. */
static int write_ds(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, int64_t rows, int64_t cols,
                    const void *data) {
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
    return base_h5_write_checked(loc, name, file_type, mem_type, cols > 0 ? 2 : 1, dims, data,
                                 ((size_t)1 << 18) * H5Tget_size(file_type), true);
}

static int write_f32(hid_t loc, const char *name, int64_t rows, int64_t cols, const float *data) {
    return write_ds(loc, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, rows, cols, data);
}

static int write_i32(hid_t loc, const char *name, int64_t rows, int64_t cols, const int32_t *data) {
    return write_ds(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, rows, cols, data);
}

DsCacheWriter *ds_cache_writer_open(const char *path, const DsCacheInfo *info, char *err, size_t errlen) {
    DsCacheWriter *w = calloc(1, sizeof *w);
    if (!w) {
        base_errf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    w->file = base_h5_save_begin(path, w->tmp, sizeof w->tmp, err, errlen);
    if (w->file < 0) {
        free(w);
        return NULL;
    }
    int bad = base_h5_attr_str(w->file, "format", DS_CACHE_FORMAT);
    bad |= base_h5_attr_str(w->file, "split", info->split) | base_h5_attr_str(w->file, "kind", info->kind);
    bad |= base_h5_attr_str(w->file, "rig", info->rig) | base_h5_attr_str(w->file, "categories", info->categories);
    bad |= base_h5_attr_str(w->file, "command", info->command);
    bad |= base_h5_attr_i64(w->file, "seed", (int64_t)info->seed) | base_h5_attr_i64(w->file, "total", info->total);
    bad |= base_h5_attr_i64(w->file, "grid", info->grid);
    bad |= base_h5_attr_i64(w->file, "cubature_res", info->cubature_res);
    bad |= base_h5_attr_i64(w->file, "n_surface", info->n_surface);
    bad |= base_h5_attr_i64(w->file, "n_sharp", info->n_sharp);
    w->shapes = H5Gcreate2(w->file, "shapes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (bad || w->shapes < 0) {
        base_errf(err, errlen, "%s: writing the file header failed", path);
        ds_cache_writer_close(w, false, NULL, 0);
        return NULL;
    }
    return w;
}

int ds_cache_write_shape(DsCacheWriter *w, const char *id, const char *category, const char *source, uint64_t seed,
                         int64_t index, float t, const DsPreprocessed *pp, const DsTransform *xf, int nbones,
                         const DsBone *bones, const float *weights, char *err, size_t errlen) {
    const DsMesh *m = &pp->mesh;
    DsTransform x = xf ? *xf : pp->xf;
    hid_t g = H5Gcreate2(w->shapes, id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return base_errf(err, errlen, "%s: cannot create /shapes/%s (duplicate id?)", w->path, id);
    int bad = base_h5_attr_str(g, "category", category) | base_h5_attr_str(g, "source", source);
    bad |= base_h5_attr_i64(g, "seed", (int64_t)seed) | base_h5_attr_i64(g, "index", index) | attr_f64(g, "t", t);
    bad |= base_h5_attr_write_num(g, "center", H5T_NATIVE_FLOAT, 3, x.center) | attr_f64(g, "scale", x.scale);
    bad |= base_h5_attr_i64(g, "watertight", pp->check.watertight);
    bad |= base_h5_attr_i64(g, "manifold", pp->check.manifold);
    bad |= base_h5_attr_i64(g, "genus", pp->check.genus);
    bad |= attr_f64(g, "area", pp->check.area) | attr_f64(g, "volume", pp->check.volume);

    hid_t gm = H5Gcreate2(g, "mesh", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    bad |= gm < 0 || write_f32(gm, "vertices", m->nv, 3, m->v) || write_i32(gm, "faces", m->nf, 3, m->f);
    if (m->n) bad |= write_f32(gm, "normals", m->nv, 3, m->n);
    if (gm >= 0) H5Gclose(gm);

    hid_t gs = H5Gcreate2(g, "surface", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    bad |= gs < 0 || write_f32(gs, "points", pp->n_surface, 3, pp->surface) ||
           write_f32(gs, "normals", pp->n_surface, 3, pp->surface_normal);
    if (gs >= 0) H5Gclose(gs);

    hid_t gk = H5Gcreate2(g, "sharp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    bad |= gk < 0 || write_f32(gk, "points", pp->n_sharp, 3, pp->sharp) ||
           write_f32(gk, "normals", pp->n_sharp, 3, pp->sharp_normal);
    if (gk >= 0) H5Gclose(gk);

    /* cell indices from positions: ds_grid_center's inverse (positions are exact cell centers) */
    const DsCubature *c = &pp->cubature;
    int32_t *cells = malloc(sizeof(int32_t) * (size_t)(c->n + 1));
    if (!cells) {
        H5Gclose(g);
        return base_errf(err, errlen, "%s: out of memory", w->path);
    }
    for (int64_t i = 0; i < c->n; i++) {
        int64_t ijk[3];
        for (int k = 0; k < 3; k++) {
            ijk[k] = (int64_t)floor(((double)c->x[3 * i + k] + 1.0) * c->res / 2.0);
            if (ijk[k] < 0) ijk[k] = 0;
            if (ijk[k] >= c->res) ijk[k] = c->res - 1;
        }
        cells[i] = (int32_t)(ijk[0] + (int64_t)c->res * (ijk[1] + (int64_t)c->res * ijk[2]));
    }
    hid_t gc = H5Gcreate2(g, "cubature", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    bad |= gc < 0 || write_i32(gc, "cells", c->n, 0, cells) || write_f32(gc, "volumes", c->n, 0, c->w);
    if (gc >= 0) {
        bad |= base_h5_attr_i64(gc, "res", c->res) | attr_f64(gc, "volume", c->volume);
        H5Gclose(gc);
    }
    free(cells);

    hid_t gb = H5Gcreate2(g, "skeleton", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float *ht = malloc(sizeof(float) * 6 * (size_t)(nbones + 1));
    int32_t *par = malloc(sizeof(int32_t) * (size_t)(nbones + 1));
    char *names = calloc((size_t)(nbones + 1), sizeof bones->name);
    if (!ht || !par || !names) bad = 1;
    else {
        for (int i = 0; i < nbones; i++) {
            memcpy(ht + 3 * i, bones[i].head, sizeof(float) * 3);
            memcpy(ht + 3 * (nbones + i), bones[i].tail, sizeof(float) * 3);
            par[i] = bones[i].parent;
            memcpy(names + i * sizeof bones->name, bones[i].name, sizeof bones->name);
        }
        bad |= gb < 0 || write_f32(gb, "heads", nbones, 3, ht) || write_f32(gb, "tails", nbones, 3, ht + 3 * nbones) ||
               write_i32(gb, "parents", nbones, 0, par);
        hid_t sty = H5Tcopy(H5T_C_S1);
        H5Tset_size(sty, sizeof bones->name);
        H5Tset_strpad(sty, H5T_STR_NULLTERM);
        if (gb >= 0) bad |= write_ds(gb, "names", sty, sty, nbones, 0, names);
        H5Tclose(sty);
    }
    free(ht), free(par), free(names);
    if (gb >= 0) H5Gclose(gb);

    if (weights && nbones > 0) bad |= write_f32(g, "weights", m->nv, nbones, weights);
    H5Gclose(g);
    if (bad) return base_errf(err, errlen, "%s: writing /shapes/%s failed (%s)", w->path, id, base_h5_save_error());
    w->count++;
    return 0;
}

int ds_cache_writer_close(DsCacheWriter *w, bool ok, char *err, size_t errlen) {
    if (!w) return -1;
    if (ok) ok = base_h5_attr_i64(w->file, "count", w->count) == 0;
    if (w->shapes >= 0 && H5Gclose(w->shapes) < 0) ok = false;
    int rc = base_h5_save_end(w->file, w->tmp, w->path, ok, "cache", err, errlen);
    free(w);
    return rc;
}

/* ==== the procedural corpus ================================================================== */

/* shape seeds and splits: sub-streams of the corpus seed (base/rng.h) */

uint64_t ds_corpus_shape_seed(uint64_t seed, int64_t index) { return base_rng_split(seed, (uint64_t)index); }

int ds_corpus_split(uint64_t seed, int64_t index) {
    uint64_t h = base_rng_split(seed ^ 0x73706c6974ull, (uint64_t)index) % 10;
    return h < 8 ? 0 : h == 8 ? 1 : 2;
}

/* The procedural SDF seen from ds_preprocess's frame: ds_preprocess renormalizes the (already
 * normalized) mesh by a transform that is the identity up to rounding; mapping back through it
 * keeps the inside test exact instead of off by that rounding. */
typedef struct {
    DsProceduralShape *shape;
    DsTransform xf;
} SdfInFrame;

static float sdf_in_frame(void *ctx, const float p[3]) {
    const SdfInFrame *s = ctx;
    float q[3] = {p[0], p[1], p[2]};
    ds_points_apply_inverse(q, 1, s->xf);
    return ds_procedural_sdf(s->shape, q) * s->xf.scale;
}

int ds_corpus_prepare(const char *category, uint64_t seed, float t, const DsCorpusOptions *o, DsProceduralShape *shape,
                      DsPreprocessed *pp, DsTransform *xf, char *err, size_t errlen) {
    memset(pp, 0, sizeof *pp);
    *xf = (DsTransform){{0, 0, 0}, 1};
    if (ds_procedural_make_family(category, seed, t, o->grid, shape, err, errlen)) return -1;
    /* ds_preprocess computes this same transform from the same mesh */
    SdfInFrame ctx = {shape, ds_mesh_normalizing_transform(&shape->mesh, 0.0f)};
    DsPreprocessOptions po;
    ds_preprocess_defaults(&po);
    po.n_surface = o->n_surface;
    /* the 100k dense surface candidates are not stored (2.4 MB a shape): a loader that wants
     * them draws them from the stored mesh with ds_sample_surface */
    po.n_dense = 0;
    po.n_sharp = o->n_sharp;
    po.grid_res = o->cubature_res;
    po.seed = seed;
    po.sdf = sdf_in_frame;
    po.sdf_ctx = &ctx;
    if (ds_preprocess(&shape->mesh, &po, pp, err, errlen)) {
        ds_procedural_free(shape);
        return -1;
    }
    /* bones into pp's frame (weights are per vertex: unchanged); the stored transform maps the
     * generating frame all the way: x2 = ((x0 − c1)·s1 − c2)·s2 = (x0 − (c1 + c2/s1))·s1·s2 */
    for (int b = 0; b < shape->nbones; b++) {
        ds_points_apply_transform(shape->bones[b].head, 1, pp->xf);
        ds_points_apply_transform(shape->bones[b].tail, 1, pp->xf);
    }
    for (int k = 0; k < 3; k++) xf->center[k] = shape->xf.center[k] + pp->xf.center[k] / shape->xf.scale;
    xf->scale = shape->xf.scale * pp->xf.scale;
    return 0;
}

/* ==== reading ================================================================================ */

struct DsCache {
    char path[4096];
    hid_t file, shapes;
    int64_t n;
    char **ids;
    DsCacheInfo info;
    char *split, *kind, *rig, *categories, *command;
};

/* A string attribute as a malloc'd C string, NULL if absent or bad. */
static char *read_attr_str(hid_t loc, const char *name) { return base_h5_attr_read_str(loc, name, MAX_ATTR_STR); }

/* A scalar or n-vector numeric attribute converted to double; false if absent or mis-shaped. */
static bool read_attr_num(hid_t loc, const char *name, double *v, int64_t n) {
    return base_h5_attr_read_num(loc, name, H5T_NATIVE_DOUBLE, n, v) == 0;
}

/* Integers natively: seeds are 64-bit and would lose bits through a double. */
static int64_t attr_int_or(hid_t loc, const char *name, int64_t def) {
    if (H5Aexists(loc, name) <= 0) return def;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return def;
    hid_t sp = H5Aget_space(a), ty = H5Aget_type(a);
    int64_t v = def;
    bool ok = sp >= 0 && ty >= 0 && H5Sget_simple_extent_npoints(sp) == 1 && H5Tget_class(ty) == H5T_INTEGER &&
              H5Aread(a, H5T_NATIVE_INT64, &v) >= 0;
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    H5Aclose(a);
    return ok ? v : def;
}

typedef struct {
    char **names;
    int64_t n, cap;
    bool oom;
} NameList;

static herr_t collect_name(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    (void)g, (void)info;
    NameList *l = data;
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->names, sizeof *p * (size_t)cap);
        if (!p) return (l->oom = true), -1;
        l->names = p, l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name))) return (l->oom = true), -1;
    l->n++;
    return 0;
}

static char *dup_or_empty(char *s) { return s ? s : strdup(""); }

DsCache *ds_cache_open(const char *path, char *err, size_t errlen) {
    hid_t f = base_h5_open_read(path, "dataset cache", err, errlen);
    if (f < 0) return NULL;
    char *fmt = read_attr_str(f, "format");
    if (!fmt || strcmp(fmt, DS_CACHE_FORMAT)) {
        base_errf(err, errlen, "%s: root attribute 'format' is %s%s%s, expected \"%s\" (not an anima dataset cache)", path,
                  fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "", DS_CACHE_FORMAT);
        free(fmt);
        H5Fclose(f);
        return NULL;
    }
    free(fmt);
    hid_t shapes = H5Lexists(f, "shapes", H5P_DEFAULT) > 0 ? H5Gopen2(f, "shapes", H5P_DEFAULT) : -1;
    if (shapes < 0) {
        base_errf(err, errlen, "%s: no /shapes group (truncated or corrupt cache)", path);
        H5Fclose(f);
        return NULL;
    }
    NameList l = {0};
    herr_t it = H5Literate(shapes, H5_INDEX_NAME, H5_ITER_INC, NULL, collect_name, &l);
    DsCache *c = calloc(1, sizeof *c);
    if (it < 0 || l.oom || !c) {
        base_errf(err, errlen, "%s: cannot list /shapes (%s)", path, l.oom || !c ? "out of memory" : "corrupt index");
        for (int64_t i = 0; i < l.n; i++) free(l.names[i]);
        free(l.names);
        free(c);
        H5Gclose(shapes);
        H5Fclose(f);
        return NULL;
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    c->file = f, c->shapes = shapes, c->n = l.n, c->ids = l.names;
    c->split = dup_or_empty(read_attr_str(f, "split"));
    c->kind = dup_or_empty(read_attr_str(f, "kind"));
    c->rig = dup_or_empty(read_attr_str(f, "rig"));
    c->categories = dup_or_empty(read_attr_str(f, "categories"));
    c->command = dup_or_empty(read_attr_str(f, "command"));
    c->info = (DsCacheInfo){.split = c->split, .kind = c->kind, .rig = c->rig, .categories = c->categories,
                            .command = c->command, .seed = (uint64_t)attr_int_or(f, "seed", 0),
                            .total = attr_int_or(f, "total", 0), .grid = (int)attr_int_or(f, "grid", 0),
                            .cubature_res = (int)attr_int_or(f, "cubature_res", 0),
                            .n_surface = attr_int_or(f, "n_surface", 0), .n_sharp = attr_int_or(f, "n_sharp", 0)};
    /* a folder of real meshes does not know its total before the last file: 0 there */
    if (c->info.total < l.n) c->info.total = l.n;
    int64_t count = attr_int_or(f, "count", -1);
    if (count != l.n) {
        /* the writer sets count last, just before the rename: a mismatch is a damaged file */
        base_errf(err, errlen, "%s: root attribute 'count' is %lld but /shapes holds %lld groups (corrupt cache)", path,
                  (long long)count, (long long)l.n);
        ds_cache_close(c);
        return NULL;
    }
    return c;
}

int64_t ds_cache_count(const DsCache *c) { return c->n; }
const char *ds_cache_id(const DsCache *c, int64_t i) { return i >= 0 && i < c->n ? c->ids[i] : NULL; }
const DsCacheInfo *ds_cache_info(const DsCache *c) { return &c->info; }

void ds_cache_close(DsCache *c) {
    if (!c) return;
    for (int64_t i = 0; i < c->n; i++) free(c->ids[i]);
    free(c->ids);
    free(c->split), free(c->kind), free(c->rig), free(c->categories), free(c->command);
    if (c->shapes >= 0) H5Gclose(c->shapes);
    if (c->file >= 0) H5Fclose(c->file);
    free(c);
}

/* Context for the messages of one shape's reads. */
typedef struct {
    const char *path, *id;
    char *err;
    size_t errlen;
} Where;

static int where_err(const Where *w, const char *obj, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int where_err(const Where *w, const char *obj, const char *fmt, ...) {
    if (!w->err || !w->errlen) return -1;
    int k = snprintf(w->err, w->errlen, "%s: /shapes/%s/%s: ", w->path, w->id, obj);
    if (k >= 0 && (size_t)k < w->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err + k, w->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Reads dataset `obj` (relative to g) as float or int32: it must be of class cls, rank 1 (cols
 * = 0) or 2, with rows == *rows when *rows ≥ 0 (else *rows is set) and the given cols. The
 * buffer is malloc'd (one extra element so empty datasets still get a pointer). */
static int read_ds(const Where *w, hid_t g, const char *obj, H5T_class_t cls, int64_t *rows, int64_t cols, void **out) {
    *out = NULL;
    if (base_h5_path_exists(g, obj) <= 0) return where_err(w, obj, "missing");
    hid_t ds = H5Dopen2(g, obj, H5P_DEFAULT);
    if (ds < 0) return where_err(w, obj, "not a dataset");
    hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds);
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    hsize_t dims[2] = {0, 0};
    int rc = 0;
    size_t esize = ty >= 0 ? H5Tget_size(ty) : 0;
    if (ty < 0 || H5Tget_class(ty) != cls || (cls == H5T_INTEGER && esize > 8) || (cls == H5T_FLOAT && esize > 8))
        rc = where_err(w, obj, "expected %s data", cls == H5T_FLOAT ? "float" : "integer");
    else if (rank != (cols > 0 ? 2 : 1))
        rc = where_err(w, obj, "expected rank %d, got %d", cols > 0 ? 2 : 1, rank);
    else if (H5Sget_simple_extent_dims(sp, dims, NULL) < 0)
        rc = where_err(w, obj, "unreadable dataspace");
    else if (cols > 0 && dims[1] != (hsize_t)cols)
        rc = where_err(w, obj, "expected %lld columns, got %llu", (long long)cols, (unsigned long long)dims[1]);
    else if (*rows >= 0 && dims[0] != (hsize_t)*rows)
        rc = where_err(w, obj, "expected %lld rows (to match the other datasets), got %llu", (long long)*rows,
                       (unsigned long long)dims[0]);
    else if (dims[0] * (cols > 0 ? (hsize_t)cols : 1) > MAX_ELEMS)
        rc = where_err(w, obj, "implausible size %llu rows", (unsigned long long)dims[0]);
    if (rc == 0) {
        size_t n = (size_t)dims[0] * (size_t)(cols > 0 ? cols : 1);
        void *buf = malloc(4 * (n + 1));
        if (!buf) rc = where_err(w, obj, "out of memory for %zu elements", n);
        else if (n > 0 && H5Dread(ds, cls == H5T_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32, H5S_ALL, H5S_ALL,
                                  H5P_DEFAULT, buf) < 0) {
            free(buf);
            rc = where_err(w, obj, "read failed (checksum mismatch, truncated or corrupt file)");
        } else {
            *out = buf;
            *rows = (int64_t)dims[0];
        }
    }
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(ds);
    return rc;
}

static int check_finite(const Where *w, const char *obj, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return where_err(w, obj, "element %lld is not finite", (long long)i);
    return 0;
}

/* A points + normals pair (surface, sharp): same row count, finite. */
static int read_points(const Where *w, hid_t g, const char *grp, int64_t *n, float **pts, float **nrm) {
    char a[64], b[64];
    snprintf(a, sizeof a, "%s/points", grp);
    snprintf(b, sizeof b, "%s/normals", grp);
    *n = -1;
    void *p = NULL, *q = NULL;
    if (read_ds(w, g, a, H5T_FLOAT, n, 3, &p) || read_ds(w, g, b, H5T_FLOAT, n, 3, &q) ||
        check_finite(w, a, p, 3 * *n) || check_finite(w, b, q, 3 * *n)) {
        free(p), free(q);
        return -1;
    }
    *pts = p, *nrm = q;
    return 0;
}

/* The row count of a dataset, -1 if absent or unreadable. */
static int64_t ds_rows(hid_t g, const char *obj) {
    if (H5Lexists(g, obj, H5P_DEFAULT) <= 0) return -1;
    hid_t ds = H5Dopen2(g, obj, H5P_DEFAULT);
    if (ds < 0) return -1;
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[8] = {0};
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    int64_t n = rank >= 1 && rank <= 8 && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0 ? (int64_t)dims[0] : -1;
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(ds);
    return n;
}

static int read_shape(DsCache *c, const char *id, bool meta_only, DsShapeRecord *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    Where w = {c->path, id, err, errlen};
    hid_t g = H5Gopen2(c->shapes, id, H5P_DEFAULT);
    if (g < 0) return base_errf(err, errlen, "%s: /shapes/%s: not a group", c->path, id);
    snprintf(r->id, sizeof r->id, "%s", id);
    int rc = -1;
    char *s = read_attr_str(g, "category");
    if (!s) {
        where_err(&w, "category", "missing attribute");
        goto out;
    }
    snprintf(r->category, sizeof r->category, "%s", s);
    free(s);
    if ((s = read_attr_str(g, "source"))) snprintf(r->source, sizeof r->source, "%s", s), free(s);
    r->seed = (uint64_t)attr_int_or(g, "seed", 0);
    r->index = attr_int_or(g, "index", -1);
    double v[3];
    r->t = read_attr_num(g, "t", v, 1) ? (float)v[0] : 0;
    r->xf.scale = 1;
    if (read_attr_num(g, "center", v, 3))
        for (int k = 0; k < 3; k++) r->xf.center[k] = (float)v[k];
    if (read_attr_num(g, "scale", v, 1)) r->xf.scale = (float)v[0];
    r->watertight = attr_int_or(g, "watertight", 0) != 0;
    r->manifold = attr_int_or(g, "manifold", 0) != 0;
    r->genus = attr_int_or(g, "genus", -1);
    r->area = read_attr_num(g, "area", v, 1) ? v[0] : NAN;
    r->volume = read_attr_num(g, "volume", v, 1) ? v[0] : NAN;
    if (meta_only) {
        /* counts from the dataspaces alone: a summary of a whole file without decompressing */
        r->mesh.nv = ds_rows(g, "mesh/vertices");
        r->mesh.nf = ds_rows(g, "mesh/faces");
        r->n_surface = ds_rows(g, "surface/points");
        r->n_sharp = ds_rows(g, "sharp/points");
        r->n_cubature = ds_rows(g, "cubature/cells");
        int64_t nb = ds_rows(g, "skeleton/parents");
        r->nbones = nb > 0 && nb < 4096 ? (int)nb : 0;
        rc = 0;
        goto out;
    }

    /* mesh */
    int64_t nv = -1, nf = -1;
    void *p;
    if (read_ds(&w, g, "mesh/vertices", H5T_FLOAT, &nv, 3, &p)) goto out;
    r->mesh.v = p, r->mesh.nv = nv;
    if (nv < 1) {
        where_err(&w, "mesh/vertices", "no vertices");
        goto out;
    }
    if (check_finite(&w, "mesh/vertices", r->mesh.v, 3 * nv)) goto out;
    if (read_ds(&w, g, "mesh/faces", H5T_INTEGER, &nf, 3, &p)) goto out;
    r->mesh.f = p, r->mesh.nf = nf;
    for (int64_t i = 0; i < 3 * nf; i++)
        if (r->mesh.f[i] < 0 || r->mesh.f[i] >= nv) {
            where_err(&w, "mesh/faces", "face %lld refers to vertex %d of %lld", (long long)(i / 3), r->mesh.f[i],
                      (long long)nv);
            goto out;
        }
    if (H5Lexists(g, "mesh/normals", H5P_DEFAULT) > 0) {
        if (read_ds(&w, g, "mesh/normals", H5T_FLOAT, &nv, 3, &p)) goto out;
        r->mesh.n = p;
        if (check_finite(&w, "mesh/normals", r->mesh.n, 3 * nv)) goto out;
    }

    if (read_points(&w, g, "surface", &r->n_surface, &r->surface, &r->surface_normal)) goto out;
    if (read_points(&w, g, "sharp", &r->n_sharp, &r->sharp, &r->sharp_normal)) goto out;

    /* cubature */
    r->cubature_res = -1;
    hid_t gc = H5Lexists(g, "cubature", H5P_DEFAULT) > 0 ? H5Gopen2(g, "cubature", H5P_DEFAULT) : -1;
    if (gc >= 0) r->cubature_res = (int)attr_int_or(gc, "res", -1), H5Gclose(gc);
    if (r->cubature_res < 1 || r->cubature_res > 1024) {
        where_err(&w, "cubature", "attribute res missing or outside [1, 1024]");
        goto out;
    }
    int64_t nc = -1;
    if (read_ds(&w, g, "cubature/cells", H5T_INTEGER, &nc, 0, &p)) goto out;
    r->cubature_cell = p, r->n_cubature = nc;
    if (read_ds(&w, g, "cubature/volumes", H5T_FLOAT, &nc, 0, &p)) goto out;
    r->cubature_volume = p;
    int64_t ncell = (int64_t)r->cubature_res * r->cubature_res * r->cubature_res;
    r->cubature = malloc(sizeof(float) * 3 * (size_t)(nc + 1));
    if (!r->cubature) {
        where_err(&w, "cubature", "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < nc; i++) {
        if (r->cubature_cell[i] < 0 || r->cubature_cell[i] >= ncell) {
            where_err(&w, "cubature/cells", "cell %lld is %d, outside the %d³ grid", (long long)i, r->cubature_cell[i],
                      r->cubature_res);
            goto out;
        }
        if (!(r->cubature_volume[i] >= 0) || !isfinite(r->cubature_volume[i])) {
            where_err(&w, "cubature/volumes", "element %lld is %g (expected a finite volume ≥ 0)", (long long)i,
                      (double)r->cubature_volume[i]);
            goto out;
        }
        ds_grid_center(r->cubature_res, r->cubature_cell[i], r->cubature + 3 * i);
    }

    /* skeleton */
    int64_t nb = -1;
    float *heads = NULL, *tails = NULL;
    int32_t *par = NULL;
    char *names = NULL;
    int brc = -1;
    if (read_ds(&w, g, "skeleton/heads", H5T_FLOAT, &nb, 3, &p)) goto bones_out;
    heads = p;
    if (read_ds(&w, g, "skeleton/tails", H5T_FLOAT, &nb, 3, &p)) goto bones_out;
    tails = p;
    if (read_ds(&w, g, "skeleton/parents", H5T_INTEGER, &nb, 0, &p)) goto bones_out;
    par = p;
    if (nb > 4096) {
        where_err(&w, "skeleton", "%lld bones (implausible)", (long long)nb);
        goto bones_out;
    }
    if (check_finite(&w, "skeleton/heads", heads, 3 * nb) || check_finite(&w, "skeleton/tails", tails, 3 * nb))
        goto bones_out;
    r->bones = calloc((size_t)(nb + 1), sizeof *r->bones);
    if (!r->bones) {
        where_err(&w, "skeleton", "out of memory");
        goto bones_out;
    }
    r->nbones = (int)nb;
    /* names: fixed-length strings read into the bone's name field (converted to its size) */
    if (nb > 0) {
        hid_t ds = H5Lexists(g, "skeleton/names", H5P_DEFAULT) > 0 ? H5Dopen2(g, "skeleton/names", H5P_DEFAULT) : -1;
        hid_t ty = ds >= 0 ? H5Dget_type(ds) : -1, sp = ds >= 0 ? H5Dget_space(ds) : -1;
        bool ok = ty >= 0 && H5Tget_class(ty) == H5T_STRING && H5Tis_variable_str(ty) == 0 && sp >= 0 &&
                  H5Sget_simple_extent_npoints(sp) == nb;
        if (ok) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, sizeof r->bones->name);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            names = calloc((size_t)nb, sizeof r->bones->name);
            ok = names && H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, names) >= 0;
            H5Tclose(mt);
        }
        if (sp >= 0) H5Sclose(sp);
        if (ty >= 0) H5Tclose(ty);
        if (ds >= 0) H5Dclose(ds);
        if (!ok) {
            where_err(&w, "skeleton/names", "missing, not %lld fixed-length strings, or unreadable", (long long)nb);
            goto bones_out;
        }
    }
    for (int64_t i = 0; i < nb; i++) {
        DsBone *b = &r->bones[i];
        memcpy(b->name, names + i * sizeof b->name, sizeof b->name);
        b->name[sizeof b->name - 1] = 0;
        b->parent = par[i];
        memcpy(b->head, heads + 3 * i, sizeof b->head);
        memcpy(b->tail, tails + 3 * i, sizeof b->tail);
        if (par[i] < -1 || par[i] >= i) {
            where_err(&w, "skeleton/parents", "bone %lld has parent %d (parents must come first)", (long long)i, par[i]);
            goto bones_out;
        }
    }
    brc = 0;
bones_out:
    free(heads), free(tails), free(par), free(names);
    if (brc) goto out;

    /* weights: nv × nbones, rows on the simplex */
    if (H5Lexists(g, "weights", H5P_DEFAULT) > 0) {
        if (nb < 1) {
            where_err(&w, "weights", "present but the skeleton has no bones");
            goto out;
        }
        int64_t rows = nv;
        if (read_ds(&w, g, "weights", H5T_FLOAT, &rows, nb, &p)) goto out;
        r->weights = p;
        for (int64_t i = 0; i < nv; i++) {
            double sum = 0;
            for (int64_t j = 0; j < nb; j++) {
                float x = r->weights[i * nb + j];
                if (!(x >= -1e-6f && x <= 1 + 1e-6f)) {
                    where_err(&w, "weights", "row %lld column %lld is %g (expected a weight in [0, 1])", (long long)i,
                              (long long)j, (double)x);
                    goto out;
                }
                sum += x;
            }
            if (fabs(sum - 1) > 1e-3) {
                where_err(&w, "weights", "row %lld sums to %.6g (expected 1)", (long long)i, sum);
                goto out;
            }
        }
    }
    rc = 0;
out:
    H5Gclose(g);
    if (rc) ds_shape_record_free(r);
    return rc;
}

int ds_cache_read_shape(DsCache *c, int64_t i, DsShapeRecord *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= c->n)
        return base_errf(err, errlen, "%s: shape %lld out of range (the file holds %lld)", c->path, (long long)i,
                         (long long)c->n);
    return read_shape(c, c->ids[i], false, out, err, errlen);
}

int ds_cache_read_meta(DsCache *c, int64_t i, DsShapeRecord *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= c->n)
        return base_errf(err, errlen, "%s: shape %lld out of range (the file holds %lld)", c->path, (long long)i,
                         (long long)c->n);
    return read_shape(c, c->ids[i], true, out, err, errlen);
}

int ds_cache_read_shape_id(DsCache *c, const char *id, DsShapeRecord *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < c->n; i++)
        if (!strcmp(c->ids[i], id)) return read_shape(c, id, false, out, err, errlen);
    return base_errf(err, errlen, "%s: no shape '%s' (the file holds %lld%s%s%s)", c->path, id, (long long)c->n,
                     c->n ? ": " : "", c->n ? c->ids[0] : "", c->n > 1 ? " ..." : "");
}

#define STREAM_CUBATURE 0x43554241ull /* "CUBA" */

void ds_shape_sample_cubature(const DsShapeRecord *r, int64_t n, uint64_t seed, uint64_t step, int64_t *idx, float *w) {
    int64_t N = r->n_cubature;
    if (n > N) n = N;
    if (n <= 0) return;
    /* Floyd's algorithm: n distinct indices in O(n) draws with a bitmap of N bits */
    uint8_t *used = base_calloc((size_t)(N + 7) / 8, 1);
    int64_t k = 0;
    for (int64_t j = N - n; j < N; j++) {
        uint32_t rr[4];
        tensor_philox(seed, STREAM_CUBATURE + (step << 32), (uint64_t)j, rr);
        int64_t t = (int64_t)((((uint64_t)rr[0] << 32) | rr[1]) % (uint64_t)(j + 1));
        int64_t pick = (used[t >> 3] >> (t & 7)) & 1 ? j : t;
        used[pick >> 3] |= (uint8_t)(1u << (pick & 7));
        idx[k++] = pick;
    }
    free(used);
    if (w) {
        float s = (float)((double)N / (double)n);
        for (int64_t i = 0; i < n; i++) w[i] = r->cubature_volume[idx[i]] * s;
    }
}
