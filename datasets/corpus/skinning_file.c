/* datasets/corpus/skinning_file.c — the skinning file (skinning_file.h): HDF5 reader, writer, checks,
 * and the colored preview. */
#include <hdf5.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/color.h"
#include "datasets/render/camera.h"
#include "datasets/render/raster.h"
#include "datasets/corpus/skinning_file.h"
#include "base/h5file.h"
#include "base/errbuf.h"
#include "base/finite.h"

void ds_skinning_free(DsSkinning *s) {
    free(s->cub_x), free(s->cub_vol), free(s->cub_w), free(s->cub_dw);
    free(s->vert_x), free(s->vert_w), free(s->vert_dw), free(s->faces);
    memset(s, 0, sizeof *s);
}

int ds_skinning_validate(const DsSkinning *s, const char *what, char *err, size_t errlen) {
    if (s->m < 1 || s->nc < 1) {
        base_errf(err, errlen, "%s: needs at least one handle and one cubature point (got m = %lld, C = %lld)", what,
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
            base_errf(err, errlen, "%s: %s missing", what, arrays[i].name);
            return -1;
        }
        if (arrays[i].n > 0 && !base_all_finite_d(arrays[i].a, (size_t)arrays[i].n)) {
            base_errf(err, errlen, "%s: %s holds a NaN or infinity", what, arrays[i].name);
            return -1;
        }
    }
    for (int64_t c = 0; c < s->nc; c++)
        if (s->cub_vol[c] < 0) {
            base_errf(err, errlen, "%s: /cubature/volumes[%lld] = %g is negative", what, (long long)c, s->cub_vol[c]);
            return -1;
        }
    if (s->nf && !s->faces) {
        base_errf(err, errlen, "%s: /mesh/faces missing", what);
        return -1;
    }
    for (int64_t f = 0; f < s->nf * 3; f++)
        if (s->faces[f] < 0 || s->faces[f] >= s->nv) {
            base_errf(err, errlen, "%s: /mesh/faces[%lld] = %d is outside [0, %lld)", what, (long long)(f / 3), s->faces[f],
                        (long long)s->nv);
            return -1;
        }
    if (s->has_frame && (!(s->scale > 0) || !isfinite(s->scale) || !base_all_finite_d(s->center, 3))) {
        base_errf(err, errlen, "%s: attributes center/scale are not finite with scale > 0 (scale %g)", what, s->scale);
        return -1;
    }
    return 0;
}

/* ---- writing ----------------------------------------------------------------------------------- */

/* checksummed, in chunks of at most 64 MiB (base/h5file.h) */
static int write_ds(hid_t f, const char *name, hid_t type, int nd, const hsize_t *dims, const void *data) {
    return base_h5_write_checked(f, name, type, type, nd, dims, data, (size_t)64 << 20, false);
}

int ds_skinning_write(const char *path, const DsSkinning *s, char *err, size_t errlen) {
    if (ds_skinning_validate(s, path, err, errlen)) return -1;
    char tmp[4096];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    int rc = 0;
    hsize_t m = (hsize_t)s->m, c = (hsize_t)s->nc, v = (hsize_t)s->nv;
    rc |= base_h5_attr_str(f, "format", DS_SKINNING_FORMAT);
    rc |= base_h5_attr_str(f, "source", s->source);
    rc |= base_h5_attr_i64(f, "handles", s->m);
    if (s->has_frame) rc |= base_h5_attr_write_num(f, "center", H5T_NATIVE_DOUBLE, 3, s->center) |
                            base_h5_attr_write_num(f, "scale", H5T_NATIVE_DOUBLE, 0, &s->scale);
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
    return base_h5_save_end(f, tmp, path, rc == 0, "skinning file", err, errlen);
}

/* ---- reading ----------------------------------------------------------------------------------- */

/* Reads dataset `name` of rank nd; dims[k] < 0 on entry means "any" and is filled in, else
 * it must match. *out is malloc'd. Missing → 1 when optional, else an error. */
static int read_ds(hid_t f, const char *path, const char *name, hid_t type, size_t esize, int nd, int64_t *dims,
                   bool optional, void **out, char *err, size_t errlen) {
    *out = NULL;
    /* a damaged file (checksums, sizes or links that do not add up) is refused as "corrupt",
     * told apart from one that lacks a dataset or holds another kind of object (issue 17) */
    htri_t e = base_h5_path_exists(f, name);
    if (e < 0) {
        base_errf(err, errlen, "%s: corrupt file: the link to %s cannot be read", path, name);
        return -1;
    }
    if (e == 0) {
        if (optional) return 1;
        base_errf(err, errlen, "%s: dataset %s missing (a corrupt or incomplete skinning file)", path, name);
        return -1;
    }
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0) {
        H5O_info_t oi;
        if (H5Oget_info_by_name(f, name, &oi, H5P_DEFAULT) >= 0 && oi.type != H5O_TYPE_DATASET)
            base_errf(err, errlen, "%s: %s is not a dataset", path, name);
        else base_errf(err, errlen, "%s: corrupt file: %s cannot be opened (its object header does not read back)", path, name);
        return -1;
    }
    hid_t sp = H5Dget_space(ds);
    int got = H5Sget_simple_extent_ndims(sp);
    hsize_t d[8] = {0};
    if (got == nd) H5Sget_simple_extent_dims(sp, d, NULL);
    H5Sclose(sp);
    if (got != nd) {
        H5Dclose(ds);
        base_errf(err, errlen, "%s: %s has rank %d, expected %d", path, name, got, nd);
        return -1;
    }
    size_t total = 1;
    for (int k = 0; k < nd; k++) {
        if (dims[k] >= 0 && (int64_t)d[k] != dims[k]) {
            H5Dclose(ds);
            base_errf(err, errlen, "%s: %s has extent %llu along dimension %d, expected %lld", path, name,
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
        base_errf(err, errlen, "%s: %s has the wrong element type (expected %s)", path, name,
                  want_float ? "floats" : "integers");
        return -1;
    }
    *out = malloc(esize * (total ? total : 1));
    if (!*out || (total && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)) {
        H5Dclose(ds);
        bool oom = !*out;
        free(*out), *out = NULL;
        if (!oom) base_errf(err, errlen, "%s: corrupt file: reading %s failed (a checksum mismatch or truncated data)", path, name);
        else base_errf(err, errlen, "%s: out of memory reading %s", path, name);
        return -1;
    }
    H5Dclose(ds);
    return 0;
}

/* A fixed-length string attribute into buf (truncated to n − 1 characters); "" when absent,
 * not a string or a variable-length one (base/h5file.h). */
static void read_attr_str(hid_t f, const char *name, char *buf, size_t n) {
    char *v = base_h5_attr_read_str(f, name, 4096);
    snprintf(buf, n, "%s", v ? v : "");
    free(v);
}

int ds_skinning_read(const char *path, DsSkinning *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    hid_t f = base_h5_open_read(path, "skinning file", err, errlen);
    if (f < 0) return -1;
    int rc = -1;
    /* the format tag first: a checkpoint or any other HDF5 file passed by mistake says so */
    char fmt[64];
    read_attr_str(f, "format", fmt, sizeof fmt);
    if (!fmt[0] && base_h5_attr_is_vlen_str(f, "format")) {
        base_errf(err, errlen,
                  "%s: attribute format is a variable-length string, which is not read (HDF5 keeps those in "
                  "an unchecked heap); write it fixed-length (h5py: f.attrs['format'] = np.bytes_(\"%s\"))",
                  path, DS_SKINNING_FORMAT);
        goto done;
    }
    if (strcmp(fmt, DS_SKINNING_FORMAT)) {
        if (!fmt[0] && H5Aexists(f, "format") != 0) /* there, or its header unreadable, but no text */
            base_errf(err, errlen, "%s: corrupt file: attribute format does not read back", path);
        else
            base_errf(err, errlen, "%s: attribute format is \"%s\", expected \"%s\" (not a skinning file, or a corrupt one)",
                      path, fmt, DS_SKINNING_FORMAT);
        goto done;
    }
    int64_t m = -1;
    if (base_h5_attr_read_num(f, "handles", H5T_NATIVE_INT64, 1, &m)) m = -1;
    if (m < 1 || m > 4096) {
        base_errf(err, errlen, "%s: attribute handles missing or out of range [1, 4096] (got %lld)", path, (long long)m);
        goto done;
    }
    read_attr_str(f, "source", s->source, sizeof s->source);
    int rc_c = base_h5_attr_read_num(f, "center", H5T_NATIVE_DOUBLE, 3, s->center);
    int rc_s = base_h5_attr_read_num(f, "scale", H5T_NATIVE_DOUBLE, 1, &s->scale);
    if (rc_c < 0 || rc_s < 0 || rc_c != rc_s) {
        base_errf(err, errlen, "%s: attributes center (3 numbers) and scale (1 number) must come together%s", path,
                  rc_c < 0 || rc_s < 0 ? " and be numeric of that size" : "");
        goto done;
    }
    s->has_frame = rc_c == 0;
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
    rc = ds_skinning_validate(s, path, err, errlen);
    if (rc) { /* read back, well formed to HDF5, but not a skinning a writer makes */
        char why[1024];
        snprintf(why, sizeof why, "%s", err);
        const char *tail = strncmp(why, path, strlen(path)) ? why : why + strlen(path) + (why[strlen(path)] == ':' ? 2 : 0);
        base_errf(err, errlen, "%s: corrupt or invalid skinning file: %s", path, tail);
    }
done:
    H5Fclose(f);
    if (rc) ds_skinning_free(s);
    return rc;
}

/* ---- previews ---------------------------------------------------------------------------------- */

/* HSV (h in turns, s, v in [0, 1]) to RGB */
void ds_skinning_colors(const DsSkinning *s, float *rgb) {
    int64_t m = s->m;
    double *mx = base_calloc((size_t)m + 1, sizeof *mx);
    float(*hue)[3] = base_malloc(sizeof *hue * (size_t)(m + 1));
    for (int64_t k = 0; k < m; k++) base_hsv_rgbf(0.61803398875 * (double)k, 0.75, 0.95, hue[k]);
    for (int64_t v = 0; v < s->nv; v++)
        for (int64_t k = 0; k < m; k++) mx[k] = fmax(mx[k], fabs(s->vert_w[v * m + k]));
    for (int64_t v = 0; v < s->nv; v++) {
        double acc[3] = {0, 0, 0}, tot = 0;
        for (int64_t k = 0; k < m; k++) {
            double a = mx[k] > 0 ? fabs(s->vert_w[v * m + k]) / mx[k] : 0;
            a = a * a, a = a * a;
            for (int c = 0; c < 3; c++) acc[c] += a * hue[k][c];
            tot += a;
        }
        for (int c = 0; c < 3; c++) rgb[3 * v + c] = tot > 0 ? (float)(acc[c] / tot) : 0.7f;
    }
    free(mx), free(hue);
}

int ds_skinning_mesh(const DsSkinning *s, DsMesh *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!s->nv || !s->nf) {
        base_errf(err, errlen, "skinning (%s): no mesh to color (%lld vertices, %lld faces)", s->source, (long long)s->nv,
                  (long long)s->nf);
        return -1;
    }
    out->v = malloc(sizeof(float) * 3 * (size_t)s->nv);
    out->color = malloc(sizeof(float) * 3 * (size_t)s->nv);
    out->f = malloc(sizeof(int32_t) * 3 * (size_t)s->nf);
    if (!out->v || !out->color || !out->f) {
        ds_mesh_free(out);
        base_errf(err, errlen, "skinning: out of memory");
        return -1;
    }
    out->nv = s->nv, out->nf = s->nf;
    for (int64_t i = 0; i < 3 * s->nv; i++) out->v[i] = (float)s->vert_x[i];
    memcpy(out->f, s->faces, sizeof(int32_t) * 3 * (size_t)s->nf);
    ds_skinning_colors(s, out->color);
    return 0;
}

int ds_skinning_render_png(const DsSkinning *s, const char *path, int width, int height, char *err, size_t errlen) {
    DsMesh m;
    if (ds_skinning_mesh(s, &m, err, errlen)) return -1;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t v = 0; v < m.nv; v++)
        for (int i = 0; i < 3; i++) lo[i] = fmin(lo[i], m.v[3 * v + i]), hi[i] = fmax(hi[i], m.v[3 * v + i]);
    double c[3], r = 0;
    for (int i = 0; i < 3; i++) c[i] = 0.5 * (lo[i] + hi[i]), r = fmax(r, 0.5 * (hi[i] - lo[i]));
    /* a 3/4 view: 35° to the right, 25° above, at 0.65× the distance at which the bounding
     * box's sphere (radius r·√3) would just fit the 35° field of view: that sphere is
     * conservative, and at this distance a typical shape fills about two thirds of the frame */
    double dist = 0.65 * r * sqrt(3.0) / tan(0.5 * 35 * M_PI / 180);
    double az = 35 * M_PI / 180, el = 25 * M_PI / 180, up[3] = {0, 1, 0};
    double eye[3] = {c[0] + dist * cos(el) * sin(az), c[1] + dist * sin(el), c[2] + dist * cos(el) * cos(az)};
    DsCamera cam = ds_camera_look_at(eye, c, up, width, height, 35);
    DsRasterOptions ro = ds_raster_options_default();
    ro.light = DS_LIGHT_DIRECTIONAL;
    ro.light_dir[0] = 0.4, ro.light_dir[1] = 1.0, ro.light_dir[2] = 0.6;
    ro.ambient = 0.35f, ro.diffuse = 0.65f;
    ro.supersample = 2;
    DsRender rr;
    int rc = ds_raster_render(&m, &cam, &ro, &rr, err, errlen);
    ds_mesh_free(&m);
    if (rc) return -1;
    rc = ds_render_write_png(path, &rr, false, err, errlen);
    ds_render_free(&rr);
    return rc;
}
