/* datasets/mesh/mesh_off.c — Object File Format (Geomview) in and out.
 *
 * In: a header keyword [ST][C][N]OFF (plain OFF, COFF with per-vertex colors, NOFF with
 * normals, STOFF with texture coordinates, and their combinations), the counts `nv nf [ne]`
 * (on the header line or the next), then one vertex per line and one face per line
 * (`n i0 ... i(n-1)`, 0-based, polygons fan-triangulated). '#' starts a comment anywhere.
 * Values after a vertex's or a face's own (a face color, or colors in a file that does not
 * say COFF) are ignored, as Geomview does. COFF colors are 3 or 4 values (alpha dropped),
 * either 0..1 floats or 0..255 integers: when any component in the file exceeds 1 they are all
 * scaled by 1/255. The 4OFF/nOFF (non-3D) variants are rejected.
 *
 * Out: plain OFF, positions and triangles. */
#include <string.h>

#include "datasets/mesh/mesh_formats.h"
#include "datasets/mesh/mesh_internal.h"

/* Next line with something on it other than a comment; the comment is cut off. */
static bool content_line(TextCursor *c, Tok *ln) {
    while (ds_line_next(c, ln)) {
        const char *hash = memchr(ln->s, '#', ln->len);
        if (hash) ln->len = (size_t)(hash - ln->s);
        Tok rest = *ln, t;
        if (ds_tok_next(&rest, &t)) return true;
    }
    return false;
}

int ds_mesh_off_read(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    Vec v, n, color, tris, corners;
    ds_vec_init(&v, sizeof(float));
    ds_vec_init(&n, sizeof(float));
    ds_vec_init(&color, sizeof(float));
    ds_vec_init(&tris, sizeof(int32_t));
    ds_vec_init(&corners, sizeof(int32_t));
    int rc = -1;
    TextCursor c;
    ds_text_init(&c, data, size);
    Tok ln, rest, t;
    char b[40];
#define FAIL(...)                                         \
    do {                                                  \
        ds_line_err(err, errlen, name, c.line, __VA_ARGS__); \
        goto done;                                        \
    } while (0)
#define OOM() FAIL("out of memory")
    for (size_t i = 0; i < size && i < 4096; i++)
        if (!data[i]) {
            base_errf(err, errlen, "%s: byte %zu: NUL byte: not a text OFF file (binary OFF is not supported)", name, i);
            goto done;
        }
    if (!content_line(&c, &ln)) {
        base_errf(err, errlen, "%s: empty file (an OFF header was expected)", name);
        goto done;
    }
    rest = ln;
    ds_tok_next(&rest, &t);
    bool st = false, col = false, nrm = false;
    {
        const char *s = t.s, *e = t.s + t.len;
        if (e - s >= 2 && s[0] == 'S' && s[1] == 'T') st = true, s += 2;
        if (s < e && *s == 'C') col = true, s++;
        if (s < e && *s == 'N') nrm = true, s++;
        if (s < e && (*s == '4' || *s == 'n')) FAIL("'%s': only 3D OFF files are supported", ds_tok_show(t, b, sizeof b));
        if (e - s != 3 || memcmp(s, "OFF", 3)) FAIL("not an OFF file (header '%s')", ds_tok_show(t, b, sizeof b));
    }
    if (!ds_tok_next(&rest, &t)) {
        if (!content_line(&c, &ln)) FAIL("missing vertex and face counts");
        rest = ln;
        ds_tok_next(&rest, &t);
    }
    int64_t nv, nf, ne;
    if (!ds_tok_int64(t, &nv) || !ds_tok_next(&rest, &t) || !ds_tok_int64(t, &nf)) FAIL("counts 'nv nf [ne]' expected");
    if (ds_tok_next(&rest, &t) && (!ds_tok_int64(t, &ne) || ds_tok_next(&rest, &t))) FAIL("counts 'nv nf [ne]' expected");
    {
        /* a vertex line takes at least 6 bytes ("0 0 0\n"), a face line 8 ("3 0 1 2\n") */
        int64_t left = (int64_t)(c.end - c.p) + 1;
        if (nv < 0 || nf < 0 || nv > MESH_MAX_COUNT || nf > MESH_MAX_COUNT || nv > left / 6 || nf > left / 8 ||
            nv * 6 + nf * 8 > left + 8)
            FAIL("counts %lld vertices, %lld faces are impossible for the %lld bytes left", (long long)nv, (long long)nf,
                 (long long)left - 1);
    }
    if (!ds_vec_reserve(&v, 3 * (size_t)nv) || (nrm && !ds_vec_reserve(&n, 3 * (size_t)nv)) ||
        (col && !ds_vec_reserve(&color, 3 * (size_t)nv)))
        OOM();
    bool bytes = false;
    for (int64_t i = 0; i < nv; i++) {
        if (!content_line(&c, &ln)) FAIL("file ends after %lld of %lld vertices", (long long)i, (long long)nv);
        float x[16];
        int k = 0;
        rest = ln;
        while (k < 16 && ds_tok_next(&rest, &t)) {
            if (!ds_tok_float(t, &x[k])) FAIL("vertex %lld: bad number '%s'", (long long)i, ds_tok_show(t, b, sizeof b));
            k++;
        }
        int need = 3 + (nrm ? 3 : 0) + (col ? 3 : 0) + (st ? 2 : 0);
        if (k < need) FAIL("vertex %lld has %d values (%d expected)", (long long)i, k, need);
        memcpy((float *)v.data + v.len, x, 3 * sizeof(float));
        v.len += 3;
        if (nrm) {
            memcpy((float *)n.data + n.len, x + 3, 3 * sizeof(float));
            n.len += 3;
        }
        if (col) {
            const float *cc = x + (nrm ? 6 : 3);
            for (int j = 0; j < 3; j++) {
                if (cc[j] > 1) bytes = true;
                ((float *)color.data)[color.len++] = cc[j];
            }
        }
    }
    if (bytes)
        for (size_t i = 0; i < color.len; i++) ((float *)color.data)[i] /= 255.0f;
    for (int64_t i = 0; i < nf; i++) {
        if (!content_line(&c, &ln)) FAIL("file ends after %lld of %lld faces", (long long)i, (long long)nf);
        rest = ln;
        int64_t cnt;
        ds_tok_next(&rest, &t);
        if (!ds_tok_int64(t, &cnt)) FAIL("face %lld: bad vertex count '%s'", (long long)i, ds_tok_show(t, b, sizeof b));
        if (cnt < 3) FAIL("face %lld has %lld vertices (3 or more expected)", (long long)i, (long long)cnt);
        /* each index takes at least two characters of the line */
        if ((uint64_t)cnt > ln.len / 2) FAIL("face %lld claims %lld vertices, more than its line holds", (long long)i, (long long)cnt);
        corners.len = 0;
        if (!ds_vec_reserve(&corners, (size_t)cnt)) OOM();
        for (int64_t k = 0; k < cnt; k++) {
            int64_t idx;
            if (!ds_tok_next(&rest, &t)) FAIL("face %lld: %lld of %lld indices", (long long)i, (long long)k, (long long)cnt);
            if (!ds_tok_int64(t, &idx)) FAIL("face %lld: bad index '%s'", (long long)i, ds_tok_show(t, b, sizeof b));
            if (idx < 0 || idx >= nv)
                FAIL("face %lld: vertex index %lld out of range (%lld vertices)", (long long)i, (long long)idx, (long long)nv);
            ((int32_t *)corners.data)[corners.len++] = (int32_t)idx;
        }
        if (!ds_fan_push(&tris, corners.data, cnt)) OOM();
        if ((int64_t)(tris.len / 3) > MESH_MAX_COUNT) FAIL("too many triangles");
    }
    ds_mesh_take(m, &v, &n, &color, NULL, &tris);
    rc = 0;
done:
    ds_vec_free(&v);
    ds_vec_free(&n);
    ds_vec_free(&color);
    ds_vec_free(&tris);
    ds_vec_free(&corners);
    return rc;
#undef FAIL
#undef OOM
}

int ds_mesh_off_write(const char *path, const DsMesh *m, char *err, size_t errlen) {
    MeshOut o;
    if (ds_mesh_out_open(&o, path, err, errlen)) return -1;
    fprintf(o.f, "OFF\n%lld %lld 0\n", (long long)m->nv, (long long)m->nf);
    for (int64_t i = 0; i < m->nv; i++) fprintf(o.f, "%.9g %.9g %.9g\n", m->v[3 * i], m->v[3 * i + 1], m->v[3 * i + 2]);
    for (int64_t i = 0; i < m->nf; i++) fprintf(o.f, "3 %d %d %d\n", m->f[3 * i], m->f[3 * i + 1], m->f[3 * i + 2]);
    return ds_mesh_out_close(&o, true, err, errlen);
}
