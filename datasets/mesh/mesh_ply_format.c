/* datasets/mesh/mesh_ply_format.c — the PLY container, apart from what its elements mean: header
 * parsing (format, elements, scalar and list properties of the eight PLY types, also under
 * their sized names int8..float64) and reading values in ASCII or either binary byte order.
 * The mesh reader (mesh_ply.c) and the 3DGS reader (gaussian_ply.c) both use it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/mesh_internal.h"

static const struct {
    const char *name, *alias;
    PlyType t;
} ply_types[] = {
    {"char", "int8", PLY_CHAR},    {"uchar", "uint8", PLY_UCHAR}, {"short", "int16", PLY_SHORT},
    {"ushort", "uint16", PLY_USHORT}, {"int", "int32", PLY_INT},    {"uint", "uint32", PLY_UINT},
    {"float", "float32", PLY_FLOAT}, {"double", "float64", PLY_DOUBLE},
};

int ds_ply_type_size(PlyType t) {
    static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 8};
    return sz[t];
}

const char *ds_ply_type_name(PlyType t) { return ply_types[t].name; }

static bool parse_type(Tok t, PlyType *out) {
    for (size_t i = 0; i < sizeof ply_types / sizeof *ply_types; i++)
        if (ds_tok_eq(t, ply_types[i].name) || ds_tok_eq(t, ply_types[i].alias)) {
            *out = ply_types[i].t;
            return true;
        }
    return false;
}

static void copy_name(char *dst, Tok t) {
    memcpy(dst, t.s, t.len);
    dst[t.len] = 0;
}

void ds_ply_header_free(PlyHeader *h) {
    for (int i = 0; i < h->nelems; i++) free(h->elems[i].props);
    free(h->elems);
    memset(h, 0, sizeof *h);
}

int ds_ply_header_parse(const char *name, const uint8_t *data, size_t size, PlyHeader *h, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    TextCursor c;
    ds_text_init(&c, data, size);
    Tok ln, t, rest;
    char b[40];
    bool have_format = false, ended = false;
    Vec elems;
    ds_vec_init(&elems, sizeof(PlyElem));
#define FAIL(...)                                         \
    do {                                                  \
        ds_line_err(err, errlen, name, c.line, __VA_ARGS__); \
        goto fail;                                        \
    } while (0)
    if (size == 0) {
        base_errf(err, errlen, "%s: empty file (not a PLY file)", name);
        goto fail;
    }
    if (!ds_line_next(&c, &ln) || (rest = ln, !ds_tok_next(&rest, &t)) || !ds_tok_eq(t, "ply") || ds_tok_next(&rest, &t))
        FAIL("not a PLY file (first line must be 'ply')");
    while (!ended && ds_line_next(&c, &ln)) {
        if (ds_has_nul(ln)) FAIL("NUL byte in the PLY header");
        rest = ln;
        if (!ds_tok_next(&rest, &t)) continue;
        if (ds_tok_eq(t, "comment") || ds_tok_eq(t, "obj_info")) continue;
        if (ds_tok_eq(t, "end_header")) {
            ended = true;
        } else if (ds_tok_eq(t, "format")) {
            if (have_format) FAIL("second 'format' line");
            if (!ds_tok_next(&rest, &t)) FAIL("'format' without a format");
            if (ds_tok_eq(t, "ascii")) h->format = PLY_ASCII;
            else if (ds_tok_eq(t, "binary_little_endian")) h->format = PLY_BINARY_LE;
            else if (ds_tok_eq(t, "binary_big_endian")) h->format = PLY_BINARY_BE;
            else FAIL("unknown format '%s' (ascii, binary_little_endian or binary_big_endian)", ds_tok_show(t, b, sizeof b));
            if (!ds_tok_next(&rest, &t) || !ds_tok_eq(t, "1.0")) FAIL("only PLY version 1.0 is known");
            have_format = true;
        } else if (ds_tok_eq(t, "element")) {
            PlyElem e = {{0}, 0, 0, NULL};
            if (!ds_tok_next(&rest, &t)) FAIL("'element' without a name");
            if (t.len >= sizeof e.name) FAIL("element name longer than %zu characters", sizeof e.name - 1);
            copy_name(e.name, t);
            if (!ds_tok_next(&rest, &t) || !ds_tok_int64(t, &e.count) || e.count < 0)
                FAIL("element '%s' needs a count >= 0", e.name);
            if (ds_tok_next(&rest, &t)) FAIL("extra text after element '%s'", e.name);
            if (elems.len >= 4096) FAIL("more than 4096 elements");
            if (!ds_vec_push(&elems, &e)) FAIL("out of memory");
        } else if (ds_tok_eq(t, "property")) {
            if (!elems.len) FAIL("'property' before any 'element'");
            PlyElem *e = (PlyElem *)elems.data + elems.len - 1;
            PlyProp p;
            memset(&p, 0, sizeof p);
            if (!ds_tok_next(&rest, &t)) FAIL("'property' without a type");
            if (ds_tok_eq(t, "list")) {
                p.is_list = true;
                if (!ds_tok_next(&rest, &t) || !parse_type(t, &p.count_type)) FAIL("list without a count type");
                if (p.count_type == PLY_FLOAT || p.count_type == PLY_DOUBLE) FAIL("list count type must be an integer type");
                if (!ds_tok_next(&rest, &t)) FAIL("list without an item type");
            }
            if (!parse_type(t, &p.type)) FAIL("unknown property type '%s'", ds_tok_show(t, b, sizeof b));
            if (!ds_tok_next(&rest, &t)) FAIL("property without a name");
            if (t.len >= sizeof p.name) FAIL("property name longer than %zu characters", sizeof p.name - 1);
            copy_name(p.name, t);
            if (ds_tok_next(&rest, &t)) FAIL("extra text after property '%s'", p.name);
            for (int i = 0; i < e->nprops; i++)
                if (!strcmp(e->props[i].name, p.name)) FAIL("property '%s' given twice in element '%s'", p.name, e->name);
            if (e->nprops >= 65536) FAIL("more than 65536 properties in element '%s'", e->name);
            PlyProp *np = realloc(e->props, sizeof *np * (size_t)(e->nprops + 1));
            if (!np) FAIL("out of memory");
            e->props = np;
            e->props[e->nprops++] = p;
        }
        /* any other header line is skipped like a comment: old Blender exporters wrote a bare
         * "Created by ..." line, and nothing but the keywords above changes how data reads */
    }
    if (!ended) FAIL("header ends without 'end_header'");
    if (!have_format) FAIL("header without a 'format' line");
    h->elems = elems.data;
    h->nelems = (int)elems.len;
    ds_vec_init(&elems, sizeof(PlyElem));
    h->body = (size_t)(c.p - (const char *)data);
    h->body_line = c.line;
    /* every element needs some bytes: more elements than the rest of the file can hold is an
     * error now, before anyone allocates for them */
    {
        uint64_t left = size - h->body, total = 0;
        for (int i = 0; i < h->nelems; i++) {
            const PlyElem *e = &h->elems[i];
            if (!e->count) continue;
            if (!e->nprops) FAIL("element '%s' has %lld entries but no properties", e->name, (long long)e->count);
            uint64_t per = 0;
            for (int k = 0; k < e->nprops; k++)
                per += h->format == PLY_ASCII ? 2 : (uint64_t)ds_ply_type_size(e->props[k].is_list ? e->props[k].count_type
                                                                                              : e->props[k].type);
            /* the last ASCII value may end the file without a separator */
            uint64_t avail = left + (h->format == PLY_ASCII ? 1 : 0);
            if ((uint64_t)e->count > avail / per || total + (uint64_t)e->count * per > avail)
                FAIL("corrupt or truncated: element '%s' claims %lld entries, more than the %llu bytes after the header can hold", e->name,
                     (long long)e->count, (unsigned long long)left);
            total += (uint64_t)e->count * per;
        }
    }
    return 0;
fail:
    if (elems.data) { /* failed while reading the header: the elements are still in the vector */
        h->elems = elems.data;
        h->nelems = (int)elems.len;
    }
    ds_ply_header_free(h);
    return -1;
#undef FAIL
}

void ds_ply_reader_init(PlyReader *r, const char *name, const uint8_t *data, size_t size, const PlyHeader *h) {
    r->name = name;
    r->data = data;
    r->size = size;
    r->pos = h->body;
    r->format = h->format;
    r->line = h->body_line + 1;
}

void ds_ply_where(const PlyReader *r, char *buf, size_t n) {
    if (r->format == PLY_ASCII) snprintf(buf, n, "%s:%lld", r->name, (long long)r->line);
    else snprintf(buf, n, "%s: byte %zu", r->name, r->pos);
}

static int reader_err(const PlyReader *r, char *err, size_t errlen, const char *what, PlyType t) {
    char w[4200];
    ds_ply_where(r, w, sizeof w);
    return base_errf(err, errlen, "%s: %s (reading a %s)", w, what, ds_ply_type_name(t));
}

int ds_ply_read_value(PlyReader *r, PlyType t, double *out, char *err, size_t errlen) {
    if (r->format == PLY_ASCII) {
        const char *p = (const char *)r->data + r->pos, *e = (const char *)r->data + r->size;
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v')) {
            if (*p == '\n') r->line++;
            p++;
        }
        r->pos = (size_t)(p - (const char *)r->data);
        if (p == e) return reader_err(r, err, errlen, "corrupt or truncated: unexpected end of file", t);
        const char *q = p;
        while (q < e && !(*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n' || *q == '\f' || *q == '\v')) q++;
        Tok tok = {p, (size_t)(q - p)};
        double x;
        char b[40], what[80];
        if (!ds_tok_double(tok, &x)) {
            snprintf(what, sizeof what, "bad number '%s'", ds_tok_show(tok, b, sizeof b));
            return reader_err(r, err, errlen, what, t);
        }
        static const double lo[] = {-128, 0, -32768, 0, -2147483648.0, 0}, hi[] = {127, 255, 32767, 65535, 2147483647.0,
                                                                                     4294967295.0};
        if (t < PLY_FLOAT && (x != floor(x) || x < lo[t] || x > hi[t])) {
            snprintf(what, sizeof what, "'%s' is not a %s", ds_tok_show(tok, b, sizeof b), ds_ply_type_name(t));
            return reader_err(r, err, errlen, what, t);
        }
        if (t == PLY_FLOAT && fabs(x) > 3.4028234663852886e38) return reader_err(r, err, errlen, "value overflows", t);
        r->pos = (size_t)(q - (const char *)r->data);
        *out = x;
        return 0;
    }
    int n = ds_ply_type_size(t);
    if (r->size - r->pos < (size_t)n) return reader_err(r, err, errlen, "corrupt or truncated: unexpected end of data", t);
    uint8_t b[8];
    for (int i = 0; i < n; i++) b[i] = r->data[r->pos + (r->format == PLY_BINARY_LE ? i : n - 1 - i)];
    r->pos += (size_t)n;
    /* b is little-endian now */
    uint64_t u = 0;
    for (int i = n - 1; i >= 0; i--) u = u << 8 | b[i];
    switch (t) {
    case PLY_CHAR: *out = (int8_t)u; break;
    case PLY_UCHAR: *out = (uint8_t)u; break;
    case PLY_SHORT: *out = (int16_t)u; break;
    case PLY_USHORT: *out = (uint16_t)u; break;
    case PLY_INT: *out = (int32_t)(uint32_t)u; break;
    case PLY_UINT: *out = (uint32_t)u; break;
    case PLY_FLOAT: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        *out = f;
        break;
    }
    case PLY_DOUBLE: memcpy(out, &u, 8); break;
    }
    return 0;
}

int ds_ply_skip_prop(PlyReader *r, const PlyProp *p, char *err, size_t errlen) {
    double x;
    if (!p->is_list) {
        if (r->format != PLY_ASCII) {
            size_t n = (size_t)ds_ply_type_size(p->type);
            if (r->size - r->pos < n) return reader_err(r, err, errlen, "corrupt or truncated: unexpected end of data", p->type);
            r->pos += n;
            return 0;
        }
        return ds_ply_read_value(r, p->type, &x, err, errlen);
    }
    if (ds_ply_read_value(r, p->count_type, &x, err, errlen)) return -1;
    if (x < 0) return reader_err(r, err, errlen, "negative list length", p->count_type);
    uint64_t n = (uint64_t)x;
    if (r->format != PLY_ASCII) {
        uint64_t bytes = n * (uint64_t)ds_ply_type_size(p->type); /* n < 2^32, so no overflow */
        if (r->size - r->pos < bytes) return reader_err(r, err, errlen, "list runs past the end of the data", p->type);
        r->pos += (size_t)bytes;
        return 0;
    }
    for (uint64_t i = 0; i < n; i++)
        if (ds_ply_read_value(r, p->type, &x, err, errlen)) return -1;
    return 0;
}
