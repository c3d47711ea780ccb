/* datasets/corpus/summary.c — see summary.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/errbuf.h"
#include "datasets/corpus/summary.h"

void ds_weight_color(float w, float rgb[3]) {
    w = w < 0 ? 0 : w > 1 ? 1 : w;
    if (w < 0.5f) rgb[0] = rgb[1] = 2 * w, rgb[2] = 1;
    else rgb[0] = 1, rgb[1] = rgb[2] = 2 * (1 - w);
}

DsShapeFields ds_shape_fields_of_record(const DsShapeRecord *r) {
    return (DsShapeFields){.mesh = &r->mesh, .n_surface = r->n_surface, .n_sharp = r->n_sharp,
                           .n_cubature = r->n_cubature, .surface = r->surface, .surface_normal = r->surface_normal,
                           .sharp = r->sharp, .sharp_normal = r->sharp_normal, .cubature = r->cubature,
                           .cubature_volume = r->cubature_volume, .nbones = r->nbones, .bones = r->bones,
                           .weights = r->weights};
}

DsShapeFields ds_shape_fields_of_preprocessed(const DsPreprocessed *pp) {
    return (DsShapeFields){.mesh = &pp->mesh, .n_surface = pp->n_surface, .n_sharp = pp->n_sharp,
                           .n_cubature = pp->cubature.n, .surface = pp->surface, .surface_normal = pp->surface_normal,
                           .sharp = pp->sharp, .sharp_normal = pp->sharp_normal, .cubature = pp->cubature.x,
                           .cubature_volume = pp->cubature.w};
}

/* a copy of n bytes, or NULL for none */
static void *copy(const void *p, size_t n) {
    if (!p) return NULL;
    void *q = base_malloc(n + 1);
    memcpy(q, p, n);
    return q;
}

/* the mesh's vertices, normals and faces copied into out */
static void copy_mesh(const DsMesh *m, DsMesh *out) {
    *out = (DsMesh){.nv = m->nv, .nf = m->nf, .v = copy(m->v, sizeof(float) * 3 * (size_t)m->nv),
                    .n = copy(m->n, sizeof(float) * 3 * (size_t)m->nv),
                    .f = copy(m->f, sizeof(int32_t) * 3 * (size_t)m->nf)};
}

/* points (n × 3) with normals or a scalar each */
static void copy_points(int64_t n, const float *x, const float *normal, const float *scalar, DsMesh *out) {
    *out = (DsMesh){.nv = n, .v = copy(x, sizeof(float) * 3 * (size_t)n),
                    .n = copy(normal, sizeof(float) * 3 * (size_t)n), .scalar = copy(scalar, sizeof(float) * (size_t)n)};
}

/* bone b of f by name, or else by index; -1 when neither */
static int bone_of(const DsShapeFields *f, const char *b) {
    int bi = -1;
    for (int i = 0; i < f->nbones; i++)
        if (!strcmp(f->bones[i].name, b)) bi = i;
    char *end;
    long v = strtol(b, &end, 10);
    if (bi < 0 && *b && !*end && v >= 0 && v < f->nbones) bi = (int)v;
    return bi;
}

int ds_shape_field_mesh(const DsShapeFields *f, const char *name, DsMesh *out, char *err, size_t errlen) {
    *out = (DsMesh){0};
    if (!strcmp(name, "mesh")) copy_mesh(f->mesh, out);
    else if (!strcmp(name, "surface")) copy_points(f->n_surface, f->surface, f->surface_normal, NULL, out);
    else if (!strcmp(name, "sharp")) copy_points(f->n_sharp, f->sharp, f->sharp_normal, NULL, out);
    else if (!strcmp(name, "cubature")) copy_points(f->n_cubature, f->cubature, NULL, f->cubature_volume, out);
    else if (!strncmp(name, "weights:", 8)) {
        const char *b = name + 8;
        if (!f->weights || f->nbones == 0) return base_errf(err, errlen, "%s: this shape has no rig weights", name);
        int bi = bone_of(f, b);
        if (bi < 0) {
            size_t used = (size_t)snprintf(err, errlen, "%s: no bone '%s' (bones:", name, b);
            for (int i = 0; i < f->nbones && used < errlen; i++)
                used += (size_t)snprintf(err + used, errlen - used, " %s", f->bones[i].name);
            if (used < errlen) snprintf(err + used, errlen - used, ")");
            return -1;
        }
        copy_mesh(f->mesh, out);
        out->scalar = base_malloc(sizeof(float) * (size_t)(out->nv + 1));
        out->color = base_malloc(sizeof(float) * 3 * (size_t)(out->nv + 1));
        for (int64_t i = 0; i < out->nv; i++)
            out->scalar[i] = f->weights[i * f->nbones + bi], ds_weight_color(out->scalar[i], out->color + 3 * i);
    } else
        return base_errf(err, errlen, "expects mesh, surface, sharp, cubature or weights:<bone>, got '%s'", name);
    return 0;
}

double ds_shape_cubature_volume(const DsShapeRecord *r) {
    double v = 0;
    for (int64_t i = 0; i < r->n_cubature; i++) v += r->cubature_volume[i];
    return v;
}

int ds_cache_summary_add(DsCacheSummary *s, DsCache *c, char *err, size_t errlen) {
    if (s->nfiles == DS_CACHE_SUMMARY_FILES)
        return base_errf(err, errlen, "a summary of at most %d files", DS_CACHE_SUMMARY_FILES);
    int file = s->nfiles++;
    for (int64_t i = 0; i < ds_cache_count(c); i++) {
        DsShapeRecord r;
        if (ds_cache_read_meta(c, i, &r, err, errlen)) return -1;
        int k = 0;
        while (k < s->ncat && strcmp(s->categories[k], r.category)) k++;
        if (k == s->ncat && s->ncat < DS_CORPUS_MAX_CATEGORIES) {
            snprintf(s->categories[k], sizeof s->categories[k], "%s", r.category);
            s->ncat++;
        }
        if (k < DS_CORPUS_MAX_CATEGORIES) s->counts[file][k]++;
        s->shapes++;
        s->watertight += r.watertight && r.manifold;
        s->vertices += r.mesh.nv;
        ds_shape_record_free(&r);
    }
    return 0;
}
