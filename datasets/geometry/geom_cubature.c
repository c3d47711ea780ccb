/* datasets/geometry/geom_cubature.c — interior cubature candidates on a grid and the preprocessing
 * pipeline of PhysSkin++ §III-B "Cubature Points Sampling" / §IV-A: normalize into [-1,1]³,
 * 4096 area-weighted surface points with normals for the encoder, 100k surface candidates,
 * sharp-edge samples (SES), and the interior points of a 128³ grid.
 *
 * The paper makes the mesh watertight and classifies grid points by ray casting; we classify by
 * the generalized winding number instead (w > ½), which needs neither a watertight mesh nor a
 * consistent orientation of its parts and gives the same answer on closed meshes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "base/clock.h"
#include "datasets/geometry/geometry.h"

void ds_grid_center(int res, int64_t cell, float p[3]) {
    double h = 2.0 / res;
    int64_t i = cell % res, j = cell / res % res, k = cell / ((int64_t)res * res);
    p[0] = (float)(-1 + (i + 0.5) * h);
    p[1] = (float)(-1 + (j + 0.5) * h);
    p[2] = (float)(-1 + (k + 0.5) * h);
}

void ds_cubature_free(DsCubature *c) {
    free(c->x);
    free(c->w);
    memset(c, 0, sizeof *c);
}

/* Keep the cells whose value passes; values are winding numbers (inside: |w| > ½, so a mesh
 * wound inside out still classifies) or distances (inside: < 0). */
static int gather(int res, const float *val, bool is_sdf, DsCubature *out, char *err, size_t errlen) {
    int64_t ncell = (int64_t)res * res * res, n = 0;
    for (int64_t i = 0; i < ncell; i++) n += is_sdf ? val[i] < 0 : fabsf(val[i]) > 0.5f;
    memset(out, 0, sizeof *out);
    out->res = res;
    double h = 2.0 / res;
    out->cell_volume = h * h * h;
    out->x = malloc(sizeof(float) * 3 * (size_t)(n + 1));
    out->w = malloc(sizeof(float) * (size_t)(n + 1));
    if (!out->x || !out->w) {
        ds_cubature_free(out);
        snprintf(err, errlen, "cubature: out of memory for %lld points", (long long)n);
        return -1;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < ncell; i++) {
        if (!(is_sdf ? val[i] < 0 : fabsf(val[i]) > 0.5f)) continue;
        ds_grid_center(res, i, out->x + 3 * k);
        out->w[k++] = (float)out->cell_volume;
    }
    out->n = n;
    out->volume = out->cell_volume * (double)n;
    return 0;
}

int ds_cubature_winding(const DsMesh *m, int res, DsCubature *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (res < 1 || res > 1024) {
        snprintf(err, errlen, "cubature: grid resolution %d out of range [1, 1024]", res);
        return -1;
    }
    DsWinding *w = ds_winding_build(m);
    if (!w) {
        snprintf(err, errlen, "cubature: cannot build the winding-number hierarchy (%lld faces)", (long long)m->nf);
        return -1;
    }
    int64_t ncell = (int64_t)res * res * res;
    float *val = malloc(sizeof(float) * (size_t)ncell);
    if (!val) {
        ds_winding_free(w);
        snprintf(err, errlen, "cubature: out of memory for a %d³ grid", res);
        return -1;
    }
    int par_nt = base_par_threads(ncell, 1000);
#pragma omp parallel for schedule(dynamic, 1024) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < ncell; i++) {
        float p[3];
        ds_grid_center(res, i, p);
        val[i] = (float)ds_winding_eval(w, p);
    }
    ds_winding_free(w);
    int rc = gather(res, val, false, out, err, errlen);
    free(val);
    return rc;
}

int ds_cubature_sdf(DsSdfFn sdf, void *ctx, int res, DsCubature *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (res < 1 || res > 1024) {
        snprintf(err, errlen, "cubature: grid resolution %d out of range [1, 1024]", res);
        return -1;
    }
    int64_t ncell = (int64_t)res * res * res;
    float *val = malloc(sizeof(float) * (size_t)ncell);
    if (!val) {
        snprintf(err, errlen, "cubature: out of memory for a %d³ grid", res);
        return -1;
    }
    int par_nt = base_par_threads(ncell, 200);
#pragma omp parallel for schedule(dynamic, 1024) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < ncell; i++) {
        float p[3];
        ds_grid_center(res, i, p);
        val[i] = sdf(ctx, p);
    }
    int rc = gather(res, val, true, out, err, errlen);
    free(val);
    return rc;
}

void ds_preprocess_defaults(DsPreprocessOptions *o) {
    memset(o, 0, sizeof *o);
    o->n_surface = 4096;
    o->n_dense = 100000;
    o->n_sharp = 16384;
    o->sharp_angle_deg = 30.0f;
    o->grid_res = 128;
    o->margin = 0.0f;
    o->seed = 0;
}

void ds_preprocessed_free(DsPreprocessed *p) {
    ds_mesh_free(&p->mesh);
    free(p->surface), free(p->surface_normal);
    free(p->dense), free(p->dense_normal);
    free(p->sharp), free(p->sharp_normal);
    ds_cubature_free(&p->cubature);
    memset(p, 0, sizeof *p);
}

int ds_preprocess(const DsMesh *in, const DsPreprocessOptions *o, DsPreprocessed *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (in->nv <= 0 || in->nf <= 0) {
        snprintf(err, errlen, "preprocess: empty mesh (%lld vertices, %lld faces)", (long long)in->nv, (long long)in->nf);
        return -1;
    }
    for (int64_t i = 0; i < 3 * in->nf; i++)
        if (in->f[i] < 0 || in->f[i] >= in->nv) {
            snprintf(err, errlen, "preprocess: face %lld refers to vertex %d of %lld", (long long)(i / 3), in->f[i],
                     (long long)in->nv);
            return -1;
        }
    if (ds_mesh_copy(in, &out->mesh)) goto oom;
    out->xf = ds_mesh_normalizing_transform(&out->mesh, o->margin);
    ds_mesh_apply_transform(&out->mesh, out->xf);
    if (ds_mesh_check(&out->mesh, &out->check)) goto oom;
    if (!(out->check.area > 0)) {
        snprintf(err, errlen, "preprocess: the mesh has zero surface area");
        ds_preprocessed_free(out);
        return -1;
    }
    /* distinct seeds per sample set so that the 4096 encoder points are not a prefix of the
     * 100k candidates */
    uint64_t s0 = o->seed * 4 + 1, s1 = o->seed * 4 + 2, s2 = o->seed * 4 + 3;
    out->n_surface = o->n_surface, out->n_dense = o->n_dense;
    out->surface = malloc(sizeof(float) * 3 * (size_t)(o->n_surface + 1));
    out->surface_normal = malloc(sizeof(float) * 3 * (size_t)(o->n_surface + 1));
    out->dense = malloc(sizeof(float) * 3 * (size_t)(o->n_dense + 1));
    out->dense_normal = malloc(sizeof(float) * 3 * (size_t)(o->n_dense + 1));
    out->sharp = malloc(sizeof(float) * 3 * (size_t)(o->n_sharp + 1));
    out->sharp_normal = malloc(sizeof(float) * 3 * (size_t)(o->n_sharp + 1));
    if (!out->surface || !out->surface_normal || !out->dense || !out->dense_normal || !out->sharp || !out->sharp_normal)
        goto oom;
    if (ds_sample_surface(&out->mesh, o->n_surface, s0, out->surface, out->surface_normal, NULL) ||
        ds_sample_surface(&out->mesh, o->n_dense, s1, out->dense, out->dense_normal, NULL))
        goto oom;
    out->n_sharp = ds_sample_sharp_edges(&out->mesh, o->n_sharp, o->sharp_angle_deg, s2, out->sharp, out->sharp_normal);
    double t0 = base_now();
    int rc = o->sdf ? ds_cubature_sdf(o->sdf, o->sdf_ctx, o->grid_res, &out->cubature, err, errlen)
                    : ds_cubature_winding(&out->mesh, o->grid_res, &out->cubature, err, errlen);
    out->seconds_winding = base_now() - t0;
    if (rc) {
        ds_preprocessed_free(out);
        return -1;
    }
    return 0;
oom:
    ds_preprocessed_free(out);
    snprintf(err, errlen, "preprocess: out of memory");
    return -1;
}
