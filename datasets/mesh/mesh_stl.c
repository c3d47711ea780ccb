/* datasets/mesh/mesh_stl.c — STL (stereolithography) in and out, ASCII and binary.
 *
 * STL stores each triangle's three corners with no sharing; anima's meshes are indexed, so
 * corners are merged by exact position (-0 and +0 are one position) — which recovers the
 * connectivity a watertightness check needs for the usual STL written from an indexed mesh.
 * Facet normals are per face and DsMesh keeps per-vertex ones: they are dropped.
 *
 * Binary or ASCII: a file whose size is exactly 84 + 50·n for the triangle count n in bytes
 * 80..83 is binary even when its 80-byte header starts with "solid" (many exporters do that);
 * otherwise a file starting with "solid" with no NUL byte in its first 1 KiB is ASCII, and
 * anything else is binary (a size that
 * disagrees with n is then an error; trailing bytes after the triangles are tolerated).
 * ASCII loops with more than three vertices are fan-triangulated; several `solid` blocks are
 * merged into one mesh. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "datasets/mesh/mesh_formats.h"
#include "datasets/mesh/mesh_internal.h"

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static float lef32(const uint8_t *p) {
    uint32_t u = le32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int read_binary(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    if (size < 84) return base_errf(err, errlen, "%s: byte %zu: corrupt or truncated binary STL: shorter than its 84-byte header", name, size);
    uint64_t nt = le32(data + 80);
    if ((size - 84) / 50 < nt)
        return base_errf(err, errlen, "%s: byte 80: corrupt or truncated binary STL: it says %llu triangles, which need %llu bytes; the file has %zu",
                         name, (unsigned long long)nt, (unsigned long long)(84 + 50 * nt), size);
    Vec v, tris;
    ds_vec_init(&v, sizeof(float));
    ds_vec_init(&tris, sizeof(int32_t));
    VertexDedup d;
    int rc = -1;
    if (!ds_dedup_init(&d, &v, (size_t)nt * 3 / 2) || !ds_vec_reserve(&tris, 3 * (size_t)nt)) {
        base_errf(err, errlen, "%s: out of memory for %llu triangles", name, (unsigned long long)nt);
        goto done;
    }
    for (uint64_t i = 0; i < nt; i++) {
        const uint8_t *rec = data + 84 + 50 * i;
        for (int k = 0; k < 3; k++) {
            float p[3];
            for (int j = 0; j < 3; j++) {
                p[j] = lef32(rec + 12 + 12 * k + 4 * j);
                if (!isfinite(p[j])) {
                    base_errf(err, errlen, "%s: byte %llu: triangle %llu has a non-finite coordinate", name,
                              (unsigned long long)(84 + 50 * i + 12 + 12 * k + 4 * j), (unsigned long long)i);
                    goto done;
                }
            }
            int32_t id = ds_dedup_add(&d, p);
            if (id < 0) {
                base_errf(err, errlen, "%s: out of memory", name);
                goto done;
            }
            ((int32_t *)tris.data)[tris.len++] = id;
        }
    }
    ds_mesh_take(m, &v, NULL, NULL, NULL, &tris);
    rc = 0;
done:
    ds_dedup_free(&d);
    ds_vec_free(&v);
    ds_vec_free(&tris);
    return rc;
}

static int read_ascii(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    Vec v, tris, corners;
    ds_vec_init(&v, sizeof(float));
    ds_vec_init(&tris, sizeof(int32_t));
    ds_vec_init(&corners, sizeof(int32_t));
    VertexDedup d;
    int rc = -1;
    TextCursor c;
    ds_text_init(&c, data, size);
    Tok ln, rest, t;
    char b[40];
    /* where we are: outside a solid, in a solid, in a facet, in its loop, after the loop */
    enum { OUT, SOLID, FACET, LOOP, ENDLOOP } state = OUT;
    bool any_solid = false;
#define FAIL(...)                                         \
    do {                                                  \
        ds_line_err(err, errlen, name, c.line, __VA_ARGS__); \
        goto done;                                        \
    } while (0)
    if (!ds_dedup_init(&d, &v, size / 64)) {
        base_errf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    while (ds_line_next(&c, &ln)) {
        if (ds_has_nul(ln)) FAIL("NUL byte in an ASCII STL");
        rest = ln;
        if (!ds_tok_next(&rest, &t)) continue;
        if (ds_tok_eq_nocase(t, "solid")) {
            if (state != OUT) FAIL("'solid' inside a solid");
            state = SOLID, any_solid = true;
        } else if (ds_tok_eq_nocase(t, "endsolid")) {
            if (state != SOLID) FAIL("'endsolid' %s", state == OUT ? "without 'solid'" : "inside a facet");
            state = OUT;
        } else if (ds_tok_eq_nocase(t, "facet")) {
            if (state != SOLID) FAIL("'facet' outside a solid or inside another facet");
            state = FACET;
        } else if (ds_tok_eq_nocase(t, "outer")) {
            if (state != FACET) FAIL("'outer loop' outside a facet");
            if (!ds_tok_next(&rest, &t) || !ds_tok_eq_nocase(t, "loop")) FAIL("'outer' must be followed by 'loop'");
            state = LOOP;
            corners.len = 0;
        } else if (ds_tok_eq_nocase(t, "vertex")) {
            if (state != LOOP) FAIL("'vertex' outside 'outer loop'");
            float p[3];
            for (int j = 0; j < 3; j++)
                if (!ds_tok_next(&rest, &t) || !ds_tok_float(t, &p[j]))
                    FAIL("vertex needs 3 finite numbers%s%s%s", rest.len || t.len ? " (got '" : "",
                         t.len ? ds_tok_show(t, b, sizeof b) : "", rest.len || t.len ? "')" : "");
            if (ds_tok_next(&rest, &t)) FAIL("extra text after vertex");
            int32_t id = ds_dedup_add(&d, p);
            if (id < 0) FAIL("out of memory");
            if (!ds_vec_push(&corners, &id)) FAIL("out of memory");
        } else if (ds_tok_eq_nocase(t, "endloop")) {
            if (state != LOOP) FAIL("'endloop' without 'outer loop'");
            if (corners.len < 3) FAIL("loop with %zu vertices (3 or more expected)", corners.len);
            if (!ds_fan_push(&tris, corners.data, (int64_t)corners.len)) FAIL("out of memory");
            if ((int64_t)(tris.len / 3) > MESH_MAX_COUNT) FAIL("too many triangles");
            state = ENDLOOP;
        } else if (ds_tok_eq_nocase(t, "endfacet")) {
            if (state != ENDLOOP) FAIL("'endfacet' without a finished loop");
            state = SOLID;
        } else {
            FAIL("unknown keyword '%s' in an ASCII STL", ds_tok_show(t, b, sizeof b));
        }
    }
    if (!any_solid) FAIL("no 'solid'");
    if (state != OUT && state != SOLID) FAIL("file ends inside a facet");
    /* a missing final 'endsolid' loses nothing: accepted */
    ds_mesh_take(m, &v, NULL, NULL, NULL, &tris);
    rc = 0;
done:
    ds_dedup_free(&d);
    ds_vec_free(&v);
    ds_vec_free(&tris);
    ds_vec_free(&corners);
    return rc;
#undef FAIL
}

int ds_mesh_stl_read(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    if (size >= 84 && (uint64_t)84 + 50 * (uint64_t)le32(data + 80) == size)
        return read_binary(name, data, size, m, err, errlen);
    size_t i = 0;
    while (i < size && i < 256 && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) i++;
    /* "solid" and no NUL byte early on: text. Binary headers that start with "solid" almost
     * always have NULs (padding, the count's high bytes), so a corrupt count in one of them
     * still gets the binary message rather than a confusing ASCII one. */
    bool text = size - i >= 5 && !strncasecmp((const char *)data + i, "solid", 5) && !memchr(data, 0, size < 1024 ? size : 1024);
    if (text) return read_ascii(name, data, size, m, err, errlen);
    return read_binary(name, data, size, m, err, errlen);
}

int ds_mesh_stl_write(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen) {
    if (!ascii && m->nf > (int64_t)UINT32_MAX) return base_errf(err, errlen, "%s: too many triangles for binary STL", path);
    MeshOut o;
    if (ds_mesh_out_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    if (ascii) fprintf(f, "solid anima\n");
    else {
        char head[80] = "binary STL written by anima";
        fwrite(head, 1, 80, f);
        ds_put_i32_le(f, (int32_t)(uint32_t)m->nf);
    }
    for (int64_t i = 0; i < m->nf; i++) {
        const float *p[3] = {m->v + 3 * m->f[3 * i], m->v + 3 * m->f[3 * i + 1], m->v + 3 * m->f[3 * i + 2]};
        /* the facet normal from the corners (readers that use it expect the right-hand rule) */
        float a[3], b[3], nrm[3];
        for (int j = 0; j < 3; j++) a[j] = p[1][j] - p[0][j], b[j] = p[2][j] - p[0][j];
        nrm[0] = a[1] * b[2] - a[2] * b[1], nrm[1] = a[2] * b[0] - a[0] * b[2], nrm[2] = a[0] * b[1] - a[1] * b[0];
        float l = sqrtf(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
        for (int j = 0; j < 3; j++) nrm[j] = l > 0 ? nrm[j] / l : 0;
        if (ascii) {
            fprintf(f, "facet normal %.9g %.9g %.9g\n outer loop\n", nrm[0], nrm[1], nrm[2]);
            for (int k = 0; k < 3; k++) fprintf(f, "  vertex %.9g %.9g %.9g\n", p[k][0], p[k][1], p[k][2]);
            fprintf(f, " endloop\nendfacet\n");
        } else {
            for (int j = 0; j < 3; j++) ds_put_f32_le(f, nrm[j]);
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < 3; j++) ds_put_f32_le(f, p[k][j]);
            fputc(0, f), fputc(0, f);
        }
    }
    if (ascii) fprintf(f, "endsolid anima\n");
    return ds_mesh_out_close(&o, true, err, errlen);
}
