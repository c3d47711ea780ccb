/* sim/skinning.c — the skinning file (HDF5) and the procedural skinning sources. */
#include <hdf5.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/geometry.h"
#include "datasets/procedural.h"
#include "sim/skinning.h"

static void set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t n, const char *fmt, ...) {
    if (!err || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

void sim_skinning_free(SimSkinning *s) {
    free(s->cub_x), free(s->cub_vol), free(s->cub_w), free(s->cub_dw);
    free(s->vert_x), free(s->vert_w), free(s->vert_dw), free(s->faces);
    memset(s, 0, sizeof *s);
}

static int all_finite(const double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 0;
    return 1;
}

int sim_skinning_validate(const SimSkinning *s, const char *what, char *err, size_t errlen) {
    if (s->m < 1 || s->nc < 1) {
        set_err(err, errlen, "%s: needs at least one handle and one cubature point (got m = %lld, C = %lld)", what,
                (long long)s->m, (long long)s->nc);
        return -1;
    }
    const struct {
        const char *name;
        const double *a;
        int64_t n;
    } arrays[] = {
        {"/cubature/points", s->cub_x, s->nc * 3},        {"/cubature/volumes", s->cub_vol, s->nc},
        {"/cubature/weights", s->cub_w, s->nc * s->m},    {"/cubature/grads", s->cub_dw, s->nc * s->m * 3},
        {"/vertices/points", s->vert_x, s->nv * 3},       {"/vertices/weights", s->vert_w, s->nv * s->m},
        {"/vertices/grads", s->vert_dw, s->vert_dw ? s->nv * s->m * 3 : 0},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
        if (arrays[i].n && !arrays[i].a) {
            set_err(err, errlen, "%s: %s missing", what, arrays[i].name);
            return -1;
        }
        if (arrays[i].n && !all_finite(arrays[i].a, arrays[i].n)) {
            set_err(err, errlen, "%s: %s holds a NaN or infinity", what, arrays[i].name);
            return -1;
        }
    }
    for (int64_t c = 0; c < s->nc; c++)
        if (s->cub_vol[c] < 0) {
            set_err(err, errlen, "%s: /cubature/volumes[%lld] = %g is negative", what, (long long)c, s->cub_vol[c]);
            return -1;
        }
    for (int64_t f = 0; f < s->nf * 3; f++)
        if (s->faces[f] < 0 || s->faces[f] >= s->nv) {
            set_err(err, errlen, "%s: /mesh/faces[%lld] = %d is outside [0, %lld)", what, (long long)(f / 3), s->faces[f],
                    (long long)s->nv);
            return -1;
        }
    return 0;
}

/* ---- HDF5 ------------------------------------------------------------------------------------ */

static int write_ds(hid_t f, const char *name, hid_t type, int nd, const hsize_t *dims, const void *data) {
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t sp = H5Screate_simple(nd, dims, NULL);
    hid_t ds = H5Dcreate2(f, name, type, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = ds < 0 ? -1 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    H5Pclose(lcpl);
    return st < 0 ? -1 : 0;
}

static int write_attr_str(hid_t loc, const char *name, const char *s) {
    hid_t ty = H5Tcopy(H5T_C_S1);
    H5Tset_size(ty, strlen(s) + 1);
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(loc, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = a < 0 ? -1 : H5Awrite(a, ty, s);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(ty);
    return st < 0 ? -1 : 0;
}

int sim_skinning_write(const char *path, const SimSkinning *s, char *err, size_t errlen) {
    if (sim_skinning_validate(s, path, err, errlen)) return -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        set_err(err, errlen, "%s: cannot create", tmp);
        return -1;
    }
    int rc = 0;
    hsize_t m = (hsize_t)s->m, c = (hsize_t)s->nc, v = (hsize_t)s->nv;
    rc |= write_attr_str(f, "format", SIM_SKINNING_FORMAT);
    rc |= write_attr_str(f, "source", s->source);
    {
        hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, "handles", H5T_NATIVE_INT64, sp, H5P_DEFAULT, H5P_DEFAULT);
        rc |= a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &s->m) < 0;
        if (a >= 0) H5Aclose(a);
        H5Sclose(sp);
    }
    rc |= write_ds(f, "/cubature/points", H5T_NATIVE_DOUBLE, 2, (hsize_t[]){c, 3}, s->cub_x);
    rc |= write_ds(f, "/cubature/volumes", H5T_NATIVE_DOUBLE, 1, (hsize_t[]){c}, s->cub_vol);
    rc |= write_ds(f, "/cubature/weights", H5T_NATIVE_DOUBLE, 2, (hsize_t[]){c, m}, s->cub_w);
    rc |= write_ds(f, "/cubature/grads", H5T_NATIVE_DOUBLE, 3, (hsize_t[]){c, m, 3}, s->cub_dw);
    if (s->nv) {
        rc |= write_ds(f, "/vertices/points", H5T_NATIVE_DOUBLE, 2, (hsize_t[]){v, 3}, s->vert_x);
        rc |= write_ds(f, "/vertices/weights", H5T_NATIVE_DOUBLE, 2, (hsize_t[]){v, m}, s->vert_w);
        if (s->vert_dw) rc |= write_ds(f, "/vertices/grads", H5T_NATIVE_DOUBLE, 3, (hsize_t[]){v, m, 3}, s->vert_dw);
    }
    if (s->nf) rc |= write_ds(f, "/mesh/faces", H5T_NATIVE_INT32, 2, (hsize_t[]){(hsize_t)s->nf, 3}, s->faces);
    rc |= H5Fclose(f) < 0;
    if (rc || rename(tmp, path)) {
        unlink(tmp);
        set_err(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}

/* Reads dataset `name` of rank nd; dims[k] < 0 on entry means "any" and is filled in, else
 * it must match. *out is malloc'd. Missing → 1 when optional, else an error. */
static int read_ds(hid_t f, const char *path, const char *name, hid_t type, size_t esize, int nd, int64_t *dims,
                   bool optional, void **out, char *err, size_t errlen) {
    *out = NULL;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0 || H5Oexists_by_name(f, name, H5P_DEFAULT) <= 0) {
        if (optional) return 1;
        set_err(err, errlen, "%s: dataset %s missing", path, name);
        return -1;
    }
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0) {
        set_err(err, errlen, "%s: %s is not a dataset", path, name);
        return -1;
    }
    hid_t sp = H5Dget_space(ds);
    int got = H5Sget_simple_extent_ndims(sp);
    hsize_t d[8] = {0};
    if (got == nd) H5Sget_simple_extent_dims(sp, d, NULL);
    H5Sclose(sp);
    if (got != nd) {
        H5Dclose(ds);
        set_err(err, errlen, "%s: %s has rank %d, expected %d", path, name, got, nd);
        return -1;
    }
    size_t total = 1;
    for (int k = 0; k < nd; k++) {
        if (dims[k] >= 0 && (int64_t)d[k] != dims[k]) {
            H5Dclose(ds);
            set_err(err, errlen, "%s: %s has extent %llu along dimension %d, expected %lld", path, name,
                    (unsigned long long)d[k], k, (long long)dims[k]);
            return -1;
        }
        dims[k] = (int64_t)d[k];
        total *= (size_t)d[k];
    }
    hid_t ty = H5Dget_type(ds);
    H5T_class_t cls = H5Tget_class(ty);
    H5Tclose(ty);
    bool want_float = type == H5T_NATIVE_DOUBLE;
    if ((want_float && cls != H5T_FLOAT && cls != H5T_INTEGER) || (!want_float && cls != H5T_INTEGER)) {
        H5Dclose(ds);
        set_err(err, errlen, "%s: %s has the wrong element type (expected %s)", path, name,
                want_float ? "floats" : "integers");
        return -1;
    }
    *out = malloc(esize * (total ? total : 1));
    if (!*out || (total && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)) {
        H5Dclose(ds);
        free(*out), *out = NULL;
        set_err(err, errlen, "%s: cannot read %s", path, name);
        return -1;
    }
    H5Dclose(ds);
    return 0;
}

int sim_skinning_read(const char *path, SimSkinning *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        set_err(err, errlen, "%s: cannot open as HDF5", path);
        return -1;
    }
    int rc = -1;
    /* the format tag first: a checkpoint or any other HDF5 file passed by mistake says so */
    char fmt[64] = "";
    if (H5Aexists(f, "format") > 0) {
        hid_t a = H5Aopen(f, "format", H5P_DEFAULT);
        hid_t ty = H5Aget_type(a);
        if (H5Tget_class(ty) == H5T_STRING && !H5Tis_variable_str(ty) && H5Tget_size(ty) < sizeof fmt) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, sizeof fmt);
            H5Aread(a, mt, fmt);
            H5Tclose(mt);
        }
        H5Tclose(ty);
        H5Aclose(a);
    }
    if (strcmp(fmt, SIM_SKINNING_FORMAT)) {
        set_err(err, errlen, "%s: attribute format is \"%s\", expected \"%s\" (not a skinning file)", path, fmt,
                SIM_SKINNING_FORMAT);
        goto done;
    }
    int64_t m = -1;
    if (H5Aexists(f, "handles") > 0) {
        hid_t a = H5Aopen(f, "handles", H5P_DEFAULT);
        if (H5Aread(a, H5T_NATIVE_INT64, &m) < 0) m = -1;
        H5Aclose(a);
    }
    if (m < 1 || m > 4096) {
        set_err(err, errlen, "%s: attribute handles missing or out of range [1, 4096] (got %lld)", path, (long long)m);
        goto done;
    }
    if (H5Aexists(f, "source") > 0) {
        hid_t a = H5Aopen(f, "source", H5P_DEFAULT);
        hid_t ty = H5Aget_type(a);
        if (H5Tget_class(ty) == H5T_STRING && !H5Tis_variable_str(ty) && H5Tget_size(ty) <= sizeof s->source) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, sizeof s->source);
            H5Aread(a, mt, s->source);
            H5Tclose(mt);
        }
        H5Tclose(ty);
        H5Aclose(a);
    }
    s->m = m;
    int64_t d2[2] = {-1, 3}, d1[1], dw[2], dg[3];
    void *p;
    if (read_ds(f, path, "/cubature/points", H5T_NATIVE_DOUBLE, 8, 2, d2, false, &p, err, errlen)) goto done;
    s->cub_x = p, s->nc = d2[0];
    d1[0] = s->nc;
    if (read_ds(f, path, "/cubature/volumes", H5T_NATIVE_DOUBLE, 8, 1, d1, false, &p, err, errlen)) goto done;
    s->cub_vol = p;
    dw[0] = s->nc, dw[1] = m;
    if (read_ds(f, path, "/cubature/weights", H5T_NATIVE_DOUBLE, 8, 2, dw, false, &p, err, errlen)) goto done;
    s->cub_w = p;
    dg[0] = s->nc, dg[1] = m, dg[2] = 3;
    if (read_ds(f, path, "/cubature/grads", H5T_NATIVE_DOUBLE, 8, 3, dg, false, &p, err, errlen)) goto done;
    s->cub_dw = p;
    d2[0] = -1, d2[1] = 3;
    int r = read_ds(f, path, "/vertices/points", H5T_NATIVE_DOUBLE, 8, 2, d2, true, &p, err, errlen);
    if (r < 0) goto done;
    if (r == 0) {
        s->vert_x = p, s->nv = d2[0];
        dw[0] = s->nv, dw[1] = m;
        if (read_ds(f, path, "/vertices/weights", H5T_NATIVE_DOUBLE, 8, 2, dw, false, &p, err, errlen)) goto done;
        s->vert_w = p;
        dg[0] = s->nv, dg[1] = m, dg[2] = 3;
        r = read_ds(f, path, "/vertices/grads", H5T_NATIVE_DOUBLE, 8, 3, dg, true, &p, err, errlen);
        if (r < 0) goto done;
        s->vert_dw = r == 0 ? p : NULL;
    }
    d2[0] = -1, d2[1] = 3;
    r = read_ds(f, path, "/mesh/faces", H5T_NATIVE_INT32, 4, 2, d2, true, &p, err, errlen);
    if (r < 0) goto done;
    if (r == 0) s->faces = p, s->nf = d2[0];
    rc = sim_skinning_validate(s, path, err, errlen);
done:
    H5Fclose(f);
    if (rc) sim_skinning_free(s);
    return rc;
}

/* ---- procedural sources ---------------------------------------------------------------------- */

void sim_procedural_defaults(SimProceduralOptions *o) {
    memset(o, 0, sizeof *o);
    o->category = "snake";
    o->seed = 1;
    o->mesh_res = 48;
    o->cubature_res = 24;
    o->kind = "bones";
    o->handles = 16;
}

/* Wendland C2: φ(q) = (1 − q)⁴ (4q + 1) on [0, 1); φ'(q) = −20 q (1 − q)³ */
void sim_rbf_eval(int64_t m, const double *centers, double radius, int64_t n, const double *x, double *w,
                  double *dw) {
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = 0; k < m; k++) {
            double d[3], r2 = 0;
            for (int i = 0; i < 3; i++) d[i] = x[3 * p + i] - centers[3 * k + i], r2 += d[i] * d[i];
            double q = sqrt(r2) / radius, wv = 0, g = 0;
            if (q < 1) {
                double a = 1 - q;
                wv = a * a * a * a * (4 * q + 1);
                g = -20 * a * a * a / (radius * radius); /* φ'(q)/(q r²) · d = ∇φ: the q cancels */
            }
            w[p * m + k] = wv;
            if (dw)
                for (int i = 0; i < 3; i++) dw[(p * m + k) * 3 + i] = g * d[i];
        }
}

static int bone_weights(const DsProceduralShape *sh, float sigma, int64_t n, const double *x, int m, double *w,
                        double *dw) {
    int nb = sh->nbones;
    float *xf = calloc(3 * (size_t)n + 1, sizeof(float)), *wf = malloc(sizeof(float) * (size_t)(n * nb));
    if (!xf || !wf) {
        free(xf), free(wf);
        return -1;
    }
    for (int64_t i = 0; i < 3 * n; i++) xf[i] = (float)x[i];
    ds_procedural_weights(&sh->scene, nb, xf, n, sigma, wf);
    for (int64_t p = 0; p < n; p++)
        for (int k = 0; k < m; k++) w[p * m + k] = wf[p * nb + k];
    /* ∇w by central differences: the weights are f32 softmaxes of SDFs, so δ = 1e-3 balances
     * truncation (O(δ²)) against rounding (O(ε_f32/δ) ≈ 1e-4) */
    const float h = 1e-3f;
    float *wp = malloc(sizeof(float) * (size_t)(n * nb)), *wm = malloc(sizeof(float) * (size_t)(n * nb));
    if (!wp || !wm) {
        free(xf), free(wf), free(wp), free(wm);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        for (int64_t p = 0; p < n; p++) xf[3 * p + i] = (float)x[3 * p + i] + h;
        ds_procedural_weights(&sh->scene, nb, xf, n, sigma, wp);
        for (int64_t p = 0; p < n; p++) xf[3 * p + i] = (float)x[3 * p + i] - h;
        ds_procedural_weights(&sh->scene, nb, xf, n, sigma, wm);
        for (int64_t p = 0; p < n; p++) {
            xf[3 * p + i] = (float)x[3 * p + i];
            for (int k = 0; k < m; k++) dw[(p * m + k) * 3 + i] = ((double)wp[p * nb + k] - wm[p * nb + k]) / (2.0 * h);
        }
    }
    free(xf), free(wf), free(wp), free(wm);
    return 0;
}

int sim_skinning_procedural(const SimProceduralOptions *o, SimSkinning *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    bool rbf = !strcmp(o->kind, "rbf");
    if (!rbf && strcmp(o->kind, "bones")) {
        set_err(err, errlen, "procedural skinning: kind \"%s\" is not \"bones\" or \"rbf\"", o->kind);
        return -1;
    }
    if (o->cubature_res < 4 || o->cubature_res > 256) {
        set_err(err, errlen, "procedural skinning: cubature_res %d out of range [4, 256]", o->cubature_res);
        return -1;
    }
    DsProceduralShape sh;
    if (ds_procedural_make(o->category, o->seed, o->mesh_res, &sh, err, errlen)) return -1;
    DsCubature cub = {0};
    if (ds_cubature_sdf(ds_procedural_sdf, &sh, o->cubature_res, &cub, err, errlen)) {
        ds_procedural_free(&sh);
        return -1;
    }
    int m = rbf ? o->handles : sh.nbones - 1;
    if (m < 1 || (rbf && m > cub.n)) {
        set_err(err, errlen, "procedural skinning: %s gives %d handles (%s %d, %lld cubature points)", o->category, m,
                rbf ? "asked for" : "bones", rbf ? o->handles : sh.nbones, (long long)cub.n);
        ds_cubature_free(&cub), ds_procedural_free(&sh);
        return -1;
    }
    s->m = m, s->nc = cub.n, s->nv = sh.mesh.nv, s->nf = sh.mesh.nf;
    s->cub_x = malloc(sizeof(double) * 3 * (size_t)s->nc);
    s->cub_vol = malloc(sizeof(double) * (size_t)s->nc);
    s->cub_w = malloc(sizeof(double) * (size_t)(s->nc * m));
    s->cub_dw = malloc(sizeof(double) * 3 * (size_t)(s->nc * m));
    s->vert_x = malloc(sizeof(double) * 3 * (size_t)s->nv);
    s->vert_w = malloc(sizeof(double) * (size_t)(s->nv * m));
    s->vert_dw = malloc(sizeof(double) * 3 * (size_t)(s->nv * m));
    s->faces = malloc(sizeof(int32_t) * 3 * (size_t)s->nf);
    double *centers = rbf ? malloc(sizeof(double) * 3 * (size_t)m) : NULL;
    int rc = -1;
    if (!s->cub_x || !s->cub_vol || !s->cub_w || !s->cub_dw || !s->vert_x || !s->vert_w || !s->vert_dw || !s->faces ||
        (rbf && !centers)) {
        set_err(err, errlen, "procedural skinning: out of memory");
        goto done;
    }
    for (int64_t i = 0; i < 3 * s->nc; i++) s->cub_x[i] = cub.x[i];
    for (int64_t i = 0; i < s->nc; i++) s->cub_vol[i] = cub.w[i];
    for (int64_t i = 0; i < 3 * s->nv; i++) s->vert_x[i] = sh.mesh.v[i];
    memcpy(s->faces, sh.mesh.f, sizeof(int32_t) * 3 * (size_t)s->nf);
    if (rbf) {
        /* farthest-point sampling from the point nearest the centroid */
        double cen[3] = {0, 0, 0};
        for (int64_t c = 0; c < s->nc; c++)
            for (int i = 0; i < 3; i++) cen[i] += s->cub_x[3 * c + i] / (double)s->nc;
        double *d2 = malloc(sizeof(double) * (size_t)s->nc);
        if (!d2) {
            set_err(err, errlen, "procedural skinning: out of memory");
            goto done;
        }
        int64_t pick = 0;
        double best = INFINITY;
        for (int64_t c = 0; c < s->nc; c++) {
            double r = 0;
            for (int i = 0; i < 3; i++) r += (s->cub_x[3 * c + i] - cen[i]) * (s->cub_x[3 * c + i] - cen[i]);
            if (r < best) best = r, pick = c;
            d2[c] = INFINITY;
        }
        double spacing = 0;
        for (int k = 0; k < m; k++) {
            memcpy(centers + 3 * k, s->cub_x + 3 * pick, sizeof(double) * 3);
            double far = -1;
            int64_t next = 0;
            for (int64_t c = 0; c < s->nc; c++) {
                double r = 0;
                for (int i = 0; i < 3; i++) r += (s->cub_x[3 * c + i] - centers[3 * k + i]) * (s->cub_x[3 * c + i] - centers[3 * k + i]);
                if (r < d2[c]) d2[c] = r;
                if (d2[c] > far) far = d2[c], next = c;
            }
            spacing = sqrt(far); /* after the last center: the covering radius of the centers */
            pick = next;
        }
        free(d2);
        /* 2.5× the covering radius: every point sees a few handles, none sees all of them */
        double radius = o->rbf_radius > 0 ? o->rbf_radius : 2.5 * fmax(spacing, 1e-3);
        sim_rbf_eval(m, centers, radius, s->nc, s->cub_x, s->cub_w, s->cub_dw);
        sim_rbf_eval(m, centers, radius, s->nv, s->vert_x, s->vert_w, s->vert_dw);
        snprintf(s->source, sizeof s->source, "procedural %s seed %llu, %d Wendland bumps of radius %.4g",
                 o->category, (unsigned long long)o->seed, m, radius);
    } else {
        if (bone_weights(&sh, o->sigma, s->nc, s->cub_x, m, s->cub_w, s->cub_dw) ||
            bone_weights(&sh, o->sigma, s->nv, s->vert_x, m, s->vert_w, s->vert_dw)) {
            set_err(err, errlen, "procedural skinning: out of memory");
            goto done;
        }
        snprintf(s->source, sizeof s->source, "procedural %s seed %llu, bone weights (%d of %d bones)", o->category,
                 (unsigned long long)o->seed, m, sh.nbones);
    }
    rc = 0;
done:
    free(centers);
    ds_cubature_free(&cub);
    ds_procedural_free(&sh);
    if (rc) sim_skinning_free(s);
    return rc;
}
