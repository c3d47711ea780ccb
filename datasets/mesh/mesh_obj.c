/* datasets/mesh/mesh_obj.c — Wavefront OBJ in and out.
 *
 * In: `v x y z [w]` or `v x y z r g b` (the common vertex-color extension), `vn`, `vt`, and `f`
 * with corners `v`, `v/vt`, `v//vn` or `v/vt/vn`; indices are 1-based, negative ones count back
 * from the last element defined so far. Polygons are fan-triangulated. Everything else (o, g,
 * s, usemtl, mtllib, l, p, ...) is geometry anima does not use and is skipped.
 *
 * OBJ indexes normals apart from positions while DsMesh keeps one normal per vertex: a vertex
 * whose corners all name the same `vn` gets that normal exactly; one whose corners disagree
 * (the hard edges of a cube) gets the normalized average. Vertices are never split, so the
 * mesh keeps the connectivity the file has (splitting would open every hard edge and break the
 * watertightness that winding numbers and manifold checks rely on). A file with normals but no
 * face that references them (a point cloud) pairs them with vertices in order when the counts
 * match. Texture coordinates are validated and dropped.
 *
 * Out: `v x y z [r g b]`, `vn` when present, `f a b c` or `f a//a b//b c//c`. Scalars have no
 * place in OBJ and are not written (PLY keeps them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/mesh_formats.h"
#include "datasets/mesh/mesh_internal.h"

typedef struct {
    int32_t first; /* first vn index named for this vertex, -1 none */
    bool conflict;
    float sum[3];
} NormalRef;

/* One face corner index: 1-based (or negative relative) into a list of `count` elements. */
static int corner_index(Tok t, int64_t count, const char *what, const char *name, int64_t line, int32_t *out,
                        char *err, size_t errlen) {
    int64_t i;
    char b[40];
    if (!ds_tok_int64(t, &i)) return base_errf(err, errlen, "%s:%lld: bad %s index '%s'", name, (long long)line, what,
                                            ds_tok_show(t, b, sizeof b));
    if (i == 0) return base_errf(err, errlen, "%s:%lld: %s index 0 (OBJ indices start at 1)", name, (long long)line, what);
    int64_t k = i > 0 ? i - 1 : count + i;
    if (k < 0 || k >= count)
        return base_errf(err, errlen, "%s:%lld: %s index %lld out of range (%lld defined so far)", name, (long long)line,
                         what, (long long)i, (long long)count);
    *out = (int32_t)k;
    return 0;
}

int ds_mesh_obj_read(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    Vec v, vn, color, tris, corners, nref;
    ds_vec_init(&v, sizeof(float));
    ds_vec_init(&vn, sizeof(float));
    ds_vec_init(&color, sizeof(float));
    ds_vec_init(&tris, sizeof(int32_t));
    ds_vec_init(&corners, sizeof(int32_t));
    ds_vec_init(&nref, sizeof(NormalRef));
    int64_t nvt = 0;
    bool any_face_normal = false;
    int rc = -1;
    TextCursor c;
    ds_text_init(&c, data, size);
    Tok ln;
    char b[40];
#define FAIL(...)                                             \
    do {                                                      \
        ds_line_err(err, errlen, name, c.line, __VA_ARGS__);     \
        goto done;                                            \
    } while (0)
#define OOM() FAIL("out of memory")
    while (ds_line_next(&c, &ln)) {
        if (ds_has_nul(ln)) FAIL("NUL byte: not a text OBJ file (binary or UTF-16?)");
        Tok rest = ln, kw;
        if (!ds_tok_next(&rest, &kw) || kw.s[0] == '#') continue;
        if (ds_tok_eq(kw, "v")) {
            float x[7];
            int k = 0;
            Tok t;
            while (ds_tok_next(&rest, &t)) {
                if (t.s[0] == '#') break;
                if (k == 7) FAIL("vertex with more than 7 values");
                if (!ds_tok_float(t, &x[k])) FAIL("bad number '%s' (finite decimal expected)", ds_tok_show(t, b, sizeof b));
                k++;
            }
            if (k != 3 && k != 4 && k != 6 && k != 7) FAIL("vertex with %d values (3, 4 or 6 expected)", k);
            if ((int64_t)v.len / 3 >= MESH_MAX_COUNT) FAIL("too many vertices");
            if (!ds_vec_reserve(&v, 3)) OOM();
            memcpy((float *)v.data + v.len, x, 3 * sizeof(float));
            v.len += 3;
            if (k >= 6 && !color.data) {
                /* the first colored vertex: earlier ones get white, the neutral color */
                if (!ds_vec_reserve(&color, v.len)) OOM();
                for (size_t i = 0; i < v.len - 3; i++) ((float *)color.data)[i] = 1.0f;
                color.len = v.len - 3;
            }
            if (color.data) {
                float rgb[3] = {1, 1, 1};
                if (k >= 6) memcpy(rgb, x + k - 3, sizeof rgb);
                if (!ds_vec_reserve(&color, 3)) OOM();
                memcpy((float *)color.data + color.len, rgb, sizeof rgb);
                color.len += 3;
            }
        } else if (ds_tok_eq(kw, "vn")) {
            float x[3];
            Tok t;
            for (int k = 0; k < 3; k++)
                if (!ds_tok_next(&rest, &t) || !ds_tok_float(t, &x[k])) FAIL("normal needs 3 finite numbers");
            if ((int64_t)vn.len / 3 >= MESH_MAX_COUNT) FAIL("too many normals");
            if (!ds_vec_reserve(&vn, 3)) OOM();
            memcpy((float *)vn.data + vn.len, x, sizeof x);
            vn.len += 3;
        } else if (ds_tok_eq(kw, "vt")) {
            Tok t;
            float x;
            int k = 0;
            while (ds_tok_next(&rest, &t) && t.s[0] != '#') {
                if (!ds_tok_float(t, &x)) FAIL("bad texture coordinate '%s'", ds_tok_show(t, b, sizeof b));
                k++;
            }
            if (k < 1 || k > 3) FAIL("texture coordinate with %d values (1 to 3 expected)", k);
            if (nvt >= MESH_MAX_COUNT) FAIL("too many texture coordinates");
            nvt++;
        } else if (ds_tok_eq(kw, "f")) {
            corners.len = 0;
            Tok t;
            int64_t nv = (int64_t)v.len / 3, nn = (int64_t)vn.len / 3;
            while (ds_tok_next(&rest, &t)) {
                if (t.s[0] == '#') break;
                /* split "a/b/c" into up to three parts; empty parts are absent */
                Tok part[3] = {{t.s, 0}, {t.s, 0}, {t.s, 0}};
                int np = 0;
                const char *s = t.s, *e = t.s + t.len;
                for (;;) {
                    const char *q = memchr(s, '/', (size_t)(e - s));
                    if (np == 3) FAIL("face corner '%s' has more than three parts", ds_tok_show(t, b, sizeof b));
                    part[np].s = s;
                    part[np].len = (size_t)((q ? q : e) - s);
                    np++;
                    if (!q) break;
                    s = q + 1;
                }
                int32_t vi, ni = -1, ti;
                if (corner_index(part[0], nv, "vertex", name, c.line, &vi, err, errlen)) goto done;
                if (np > 1 && part[1].len && corner_index(part[1], nvt, "texture", name, c.line, &ti, err, errlen))
                    goto done;
                if (np > 2 && part[2].len) {
                    if (corner_index(part[2], nn, "normal", name, c.line, &ni, err, errlen)) goto done;
                    any_face_normal = true;
                    if (!ds_vec_reserve(&nref, (size_t)nv - nref.len)) OOM();
                    while (nref.len < (size_t)nv) {
                        NormalRef r0 = {-1, false, {0, 0, 0}};
                        ((NormalRef *)nref.data)[nref.len++] = r0;
                    }
                    NormalRef *r = (NormalRef *)nref.data + vi;
                    const float *nv3 = (const float *)vn.data + 3 * (size_t)ni;
                    float len = sqrtf(nv3[0] * nv3[0] + nv3[1] * nv3[1] + nv3[2] * nv3[2]);
                    if (r->first < 0) r->first = ni;
                    else if (r->first != ni) r->conflict = true;
                    if (len > 0)
                        for (int k = 0; k < 3; k++) r->sum[k] += nv3[k] / len;
                }
                if (!ds_vec_push(&corners, &vi)) OOM();
            }
            if (corners.len < 3) FAIL("face with %zu vertices (3 or more expected)", corners.len);
            if (!ds_fan_push(&tris, corners.data, (int64_t)corners.len)) OOM();
            if ((int64_t)tris.len / 3 > MESH_MAX_COUNT) FAIL("too many faces");
        }
        /* any other statement is skipped: see the top of the file */
    }
    {
        size_t nv = v.len / 3;
        Vec n;
        ds_vec_init(&n, sizeof(float));
        if (any_face_normal) {
            if (!ds_vec_reserve(&n, 3 * nv)) OOM();
            n.len = 3 * nv;
            float *o = n.data;
            for (size_t i = 0; i < nv; i++, o += 3) {
                const NormalRef *r = i < nref.len ? (const NormalRef *)nref.data + i : NULL;
                if (!r || r->first < 0) {
                    o[0] = o[1] = o[2] = 0; /* a vertex no face gave a normal */
                } else if (!r->conflict) {
                    memcpy(o, (const float *)vn.data + 3 * (size_t)r->first, 3 * sizeof(float));
                } else {
                    float l = sqrtf(r->sum[0] * r->sum[0] + r->sum[1] * r->sum[1] + r->sum[2] * r->sum[2]);
                    for (int k = 0; k < 3; k++) o[k] = l > 0 ? r->sum[k] / l : 0;
                }
            }
        } else if (vn.len && vn.len == v.len) {
            n = vn;
            ds_vec_init(&vn, sizeof(float));
        }
        ds_mesh_take(m, &v, &n, &color, NULL, &tris);
        ds_vec_free(&n);
    }
    rc = 0;
done:
    ds_vec_free(&v);
    ds_vec_free(&vn);
    ds_vec_free(&color);
    ds_vec_free(&tris);
    ds_vec_free(&corners);
    ds_vec_free(&nref);
    return rc;
#undef FAIL
#undef OOM
}

int ds_mesh_obj_write(const char *path, const DsMesh *m, char *err, size_t errlen) {
    MeshOut o;
    if (ds_mesh_out_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    fprintf(f, "# anima mesh: %lld vertices, %lld triangles\n", (long long)m->nv, (long long)m->nf);
    /* %.9g round-trips every float exactly */
    for (int64_t i = 0; i < m->nv; i++) {
        const float *p = m->v + 3 * i;
        if (m->color) {
            const float *c = m->color + 3 * i;
            fprintf(f, "v %.9g %.9g %.9g %.9g %.9g %.9g\n", p[0], p[1], p[2], c[0], c[1], c[2]);
        } else {
            fprintf(f, "v %.9g %.9g %.9g\n", p[0], p[1], p[2]);
        }
    }
    if (m->n)
        for (int64_t i = 0; i < m->nv; i++) fprintf(f, "vn %.9g %.9g %.9g\n", m->n[3 * i], m->n[3 * i + 1], m->n[3 * i + 2]);
    for (int64_t i = 0; i < m->nf; i++) {
        const int32_t *t = m->f + 3 * i;
        if (m->n) fprintf(f, "f %d//%d %d//%d %d//%d\n", t[0] + 1, t[0] + 1, t[1] + 1, t[1] + 1, t[2] + 1, t[2] + 1);
        else fprintf(f, "f %d %d %d\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    return ds_mesh_out_close(&o, true, err, errlen);
}
