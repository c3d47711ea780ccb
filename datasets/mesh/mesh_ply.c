/* datasets/mesh/mesh_ply.c — PLY meshes in and out.
 *
 * In: the `vertex` element gives x y z (required), nx ny nz, red green blue (or diffuse_red
 * ...; integer types are scaled by their range — 255 for 8-bit, 65535 for 16-bit, 255 for
 * wider integers, which files only use for 0..255 values — floats are taken as 0..1) and
 * `value` (a per-vertex scalar, what the writer emits); any other property, of any type or a
 * list, is skipped. The `face` element's list `vertex_indices` (or `vertex_index`), with any
 * count and index types, gives polygons that are fan-triangulated; indices are checked against
 * the declared vertex count as they are read. Every other element is skipped.
 *
 * Out: ASCII, binary little endian (the default) or big endian; float x y z, float nx ny nz,
 * uchar red green blue, float value, and `list uchar int vertex_indices`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/mesh_formats.h"
#include "datasets/mesh/mesh_internal.h"

enum { P_X, P_Y, P_Z, P_NX, P_NY, P_NZ, P_R, P_G, P_B, P_VALUE, P_COUNT };
static const char *const role_names[P_COUNT][2] = {
    {"x", NULL},       {"y", NULL},         {"z", NULL},          {"nx", NULL},
    {"ny", NULL},      {"nz", NULL},        {"red", "diffuse_red"}, {"green", "diffuse_green"},
    {"blue", "diffuse_blue"}, {"value", NULL},
};

static double color_scale(PlyType t) {
    switch (t) {
    case PLY_FLOAT:
    case PLY_DOUBLE: return 1.0;
    case PLY_SHORT:
    case PLY_USHORT: return 1.0 / 65535.0;
    default: return 1.0 / 255.0;
    }
}

int ds_mesh_ply_read(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    PlyHeader h;
    if (ds_ply_header_parse(name, data, size, &h, err, errlen)) return -1;
    Vec v, n, color, scalar, tris, corners;
    ds_vec_init(&v, sizeof(float));
    ds_vec_init(&n, sizeof(float));
    ds_vec_init(&color, sizeof(float));
    ds_vec_init(&scalar, sizeof(float));
    ds_vec_init(&tris, sizeof(int32_t));
    ds_vec_init(&corners, sizeof(int32_t));
    int rc = -1;
    char w[4200];
    PlyReader r;
    ds_ply_reader_init(&r, name, data, size, &h);
#define FAIL(...)                                    \
    do {                                             \
        char m_[512];                                \
        snprintf(m_, sizeof m_, __VA_ARGS__);        \
        ds_ply_where(&r, w, sizeof w);                  \
        base_errf(err, errlen, "%s: %s", w, m_);      \
        goto done;                                   \
    } while (0)
#define OOM() FAIL("out of memory")

    int64_t nv_declared = -1;
    bool seen_vertex = false, seen_face = false;
    for (int i = 0; i < h.nelems; i++)
        if (!strcmp(h.elems[i].name, "vertex")) {
            if (nv_declared >= 0) {
                base_errf(err, errlen, "%s: two 'vertex' elements", name);
                goto done;
            }
            nv_declared = h.elems[i].count;
        }
    if (nv_declared < 0) {
        base_errf(err, errlen, "%s: no 'vertex' element", name);
        goto done;
    }
    if (nv_declared > MESH_MAX_COUNT) {
        base_errf(err, errlen, "%s: %lld vertices (at most %lld)", name, (long long)nv_declared, (long long)MESH_MAX_COUNT);
        goto done;
    }

    for (int ei = 0; ei < h.nelems; ei++) {
        const PlyElem *e = &h.elems[ei];
        if (!strcmp(e->name, "vertex")) {
            seen_vertex = true;
            int role_of[P_COUNT];
            for (int k = 0; k < P_COUNT; k++) role_of[k] = -1;
            for (int p = 0; p < e->nprops; p++)
                for (int k = 0; k < P_COUNT; k++)
                    if (!e->props[p].is_list && (!strcmp(e->props[p].name, role_names[k][0]) ||
                                                 (role_names[k][1] && !strcmp(e->props[p].name, role_names[k][1]))))
                        if (role_of[k] < 0) role_of[k] = p;
            if (role_of[P_X] < 0 || role_of[P_Y] < 0 || role_of[P_Z] < 0) {
                base_errf(err, errlen, "%s: element 'vertex' lacks x, y or z", name);
                goto done;
            }
            bool has_n = role_of[P_NX] >= 0 && role_of[P_NY] >= 0 && role_of[P_NZ] >= 0;
            bool has_c = role_of[P_R] >= 0 && role_of[P_G] >= 0 && role_of[P_B] >= 0;
            bool has_s = role_of[P_VALUE] >= 0;
            /* the header's count is already bounded by the file size */
            size_t cnt = (size_t)e->count;
            if (!ds_vec_reserve(&v, 3 * cnt) || (has_n && !ds_vec_reserve(&n, 3 * cnt)) ||
                (has_c && !ds_vec_reserve(&color, 3 * cnt)) || (has_s && !ds_vec_reserve(&scalar, cnt)))
                OOM();
            int prop_role[65536 / 64]; /* small elements are the norm; larger ones go through a heap map */
            int *role = e->nprops <= (int)(sizeof prop_role / sizeof *prop_role) ? prop_role
                                                                                  : malloc(sizeof(int) * (size_t)e->nprops);
            if (!role) OOM();
            for (int p = 0; p < e->nprops; p++) role[p] = -1;
            for (int k = 0; k < P_COUNT; k++)
                if (role_of[k] >= 0) role[role_of[k]] = k;
            for (size_t i = 0; i < cnt; i++) {
                double val[P_COUNT] = {0};
                for (int p = 0; p < e->nprops; p++) {
                    const PlyProp *pp = &e->props[p];
                    if (role[p] < 0) {
                        if (ds_ply_skip_prop(&r, pp, err, errlen)) goto vfail;
                        continue;
                    }
                    size_t at = r.pos;
                    if (ds_ply_read_value(&r, pp->type, &val[role[p]], err, errlen)) goto vfail;
                    if (role[p] <= P_NZ && !(fabs(val[role[p]]) <= 3.4028234663852886e38)) {
                        r.pos = at;
                        ds_ply_where(&r, w, sizeof w);
                        base_errf(err, errlen, "%s: vertex %zu: %s is not a finite float", w, i, pp->name);
                        goto vfail;
                    }
                    if (role[p] >= P_R && role[p] <= P_B) val[role[p]] *= color_scale(pp->type);
                }
                float *vo = (float *)v.data + v.len;
                vo[0] = (float)val[P_X], vo[1] = (float)val[P_Y], vo[2] = (float)val[P_Z];
                v.len += 3;
                if (has_n) {
                    float *no = (float *)n.data + n.len;
                    no[0] = (float)val[P_NX], no[1] = (float)val[P_NY], no[2] = (float)val[P_NZ];
                    n.len += 3;
                }
                if (has_c) {
                    float *co = (float *)color.data + color.len;
                    co[0] = (float)val[P_R], co[1] = (float)val[P_G], co[2] = (float)val[P_B];
                    color.len += 3;
                }
                if (has_s) ((float *)scalar.data)[scalar.len++] = (float)val[P_VALUE];
            }
            if (role != prop_role) free(role);
            continue;
        vfail:
            if (role != prop_role) free(role);
            goto done;
        }
        int list = -1;
        if (!strcmp(e->name, "face")) {
            if (seen_face) {
                base_errf(err, errlen, "%s: two 'face' elements", name);
                goto done;
            }
            seen_face = true;
            for (int p = 0; p < e->nprops && list < 0; p++)
                if (!strcmp(e->props[p].name, "vertex_indices") || !strcmp(e->props[p].name, "vertex_index")) list = p;
            if (list < 0 && e->count) {
                base_errf(err, errlen, "%s: element 'face' has no 'vertex_indices' property", name);
                goto done;
            }
            if (list >= 0 && !e->props[list].is_list) {
                base_errf(err, errlen, "%s: face property '%s' is not a list", name, e->props[list].name);
                goto done;
            }
        }
        for (int64_t i = 0; i < e->count; i++)
            for (int p = 0; p < e->nprops; p++) {
                const PlyProp *pp = &e->props[p];
                if (p != list) {
                    if (ds_ply_skip_prop(&r, pp, err, errlen)) goto done;
                    continue;
                }
                double x;
                if (ds_ply_read_value(&r, pp->count_type, &x, err, errlen)) goto done;
                if (x < 3) FAIL("face %lld has %.0f vertices (3 or more expected)", (long long)i, x);
                /* every index takes at least a byte: a count the data cannot hold is an error
                 * before the corner buffer grows for it */
                if (x > (double)(r.size - r.pos)) FAIL("corrupt or truncated: face %lld claims %.0f vertices, past the end of the data", (long long)i, x);
                int64_t cnt = (int64_t)x;
                corners.len = 0;
                if (!ds_vec_reserve(&corners, (size_t)cnt)) OOM();
                for (int64_t k = 0; k < cnt; k++) {
                    size_t at = r.pos;
                    int64_t line = r.line;
                    double idx;
                    if (ds_ply_read_value(&r, pp->type, &idx, err, errlen)) goto done;
                    if (!(idx >= 0 && idx < (double)nv_declared && idx == floor(idx))) {
                        r.pos = at, r.line = line;
                        FAIL("face %lld: vertex index %g out of range (%lld vertices)", (long long)i, idx,
                             (long long)nv_declared);
                    }
                    ((int32_t *)corners.data)[corners.len++] = (int32_t)idx;
                }
                if (!ds_fan_push(&tris, corners.data, cnt)) OOM();
                if ((int64_t)(tris.len / 3) > MESH_MAX_COUNT) FAIL("too many triangles");
            }
    }
    (void)seen_vertex;
    ds_mesh_take(m, &v, &n, &color, &scalar, &tris);
    rc = 0;
done:
    ds_ply_header_free(&h);
    ds_vec_free(&v);
    ds_vec_free(&n);
    ds_vec_free(&color);
    ds_vec_free(&scalar);
    ds_vec_free(&tris);
    ds_vec_free(&corners);
    return rc;
#undef FAIL
#undef OOM
}

static void put_be_or_le(FILE *f, const void *x, int n, bool be) {
    uint8_t b[8];
    memcpy(b, x, (size_t)n);
    if (be)
        for (int i = 0; i < n / 2; i++) {
            uint8_t t = b[i];
            b[i] = b[n - 1 - i], b[n - 1 - i] = t;
        }
    fwrite(b, 1, (size_t)n, f);
}

int ds_mesh_write_ply(const char *path, const DsMesh *m, DsPlyFormat fmt, char *err, size_t errlen) {
    MeshOut o;
    if (ds_mesh_out_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    static const char *fmt_name[] = {"ascii", "binary_little_endian", "binary_big_endian"};
    fprintf(f, "ply\nformat %s 1.0\ncomment written by anima\nelement vertex %lld\n", fmt_name[fmt], (long long)m->nv);
    fprintf(f, "property float x\nproperty float y\nproperty float z\n");
    if (m->n) fprintf(f, "property float nx\nproperty float ny\nproperty float nz\n");
    if (m->color) fprintf(f, "property uchar red\nproperty uchar green\nproperty uchar blue\n");
    if (m->scalar) fprintf(f, "property float value\n");
    fprintf(f, "element face %lld\nproperty list uchar int vertex_indices\nend_header\n", (long long)m->nf);
    bool be = fmt == DS_PLY_BINARY_BE;
    for (int64_t i = 0; i < m->nv; i++) {
        float x[7];
        int k = 0;
        for (int j = 0; j < 3; j++) x[k++] = m->v[3 * i + j];
        if (m->n)
            for (int j = 0; j < 3; j++) x[k++] = m->n[3 * i + j];
        if (m->scalar) x[k++] = m->scalar[i];
        uint8_t rgb[3] = {0, 0, 0};
        if (m->color)
            for (int j = 0; j < 3; j++) {
                float c = m->color[3 * i + j];
                rgb[j] = (uint8_t)lrintf(255.0f * (c > 1 ? 1 : c > 0 ? c : 0));
            }
        int nxyz = m->n ? 6 : 3;
        if (fmt == DS_PLY_ASCII) {
            for (int j = 0; j < nxyz; j++) fprintf(f, j ? " %.9g" : "%.9g", x[j]);
            if (m->color) fprintf(f, " %u %u %u", rgb[0], rgb[1], rgb[2]);
            if (m->scalar) fprintf(f, " %.9g", x[nxyz]);
            fputc('\n', f);
        } else {
            for (int j = 0; j < nxyz; j++) put_be_or_le(f, &x[j], 4, be);
            if (m->color) fwrite(rgb, 1, 3, f);
            if (m->scalar) put_be_or_le(f, &x[nxyz], 4, be);
        }
    }
    for (int64_t i = 0; i < m->nf; i++) {
        const int32_t *t = m->f + 3 * i;
        if (fmt == DS_PLY_ASCII) {
            fprintf(f, "3 %d %d %d\n", t[0], t[1], t[2]);
        } else {
            fputc(3, f);
            for (int j = 0; j < 3; j++) put_be_or_le(f, &t[j], 4, be);
        }
    }
    return ds_mesh_out_close(&o, true, err, errlen);
}

int ds_mesh_ply_write(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen) {
    return ds_mesh_write_ply(path, m, ascii ? DS_PLY_ASCII : DS_PLY_BINARY_LE, err, errlen);
}
