/* datasets/mesh/mesh_io.c — the helpers every mesh reader and writer shares (mesh_internal.h): strict
 * tokens and numbers, growable arrays, vertex deduplication, reading a whole file, writing
 * through a temporary file. The entry points that pick a format are above the format files, in
 * mesh_file.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/mesh/mesh_internal.h"

int ds_line_err(char *err, size_t n, const char *name, int64_t line, const char *fmt, ...) {
    if (err && n) {
        int k = snprintf(err, n, "%s:%lld: ", name, (long long)line);
        if (k >= 0 && (size_t)k < n) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + k, n - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* ---- text ---------------------------------------------------------------------------------- */

void ds_text_init(TextCursor *c, const uint8_t *data, size_t size) {
    c->p = (const char *)data;
    c->end = (const char *)data + size;
    c->line = 0;
}

bool ds_line_next(TextCursor *c, Tok *ln) {
    if (c->p >= c->end) return false;
    const char *s = c->p, *e = memchr(s, '\n', (size_t)(c->end - s));
    if (!e) e = c->end;
    c->p = e < c->end ? e + 1 : e;
    /* a lone '\r' ends a line in old Mac files; CRLF leaves a '\r' that is whitespace below */
    c->line++;
    ln->s = s;
    ln->len = (size_t)(e - s);
    return true;
}

static bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v'; }

bool ds_tok_next(Tok *rest, Tok *tok) {
    const char *p = rest->s, *e = rest->s + rest->len;
    while (p < e && is_space(*p)) p++;
    if (p == e) {
        rest->s = e, rest->len = 0;
        return false;
    }
    const char *q = p;
    while (q < e && !is_space(*q)) q++;
    tok->s = p, tok->len = (size_t)(q - p);
    rest->s = q, rest->len = (size_t)(e - q);
    return true;
}

bool ds_tok_eq(Tok t, const char *s) { return strlen(s) == t.len && !memcmp(t.s, s, t.len); }
bool ds_tok_eq_nocase(Tok t, const char *s) { return strlen(s) == t.len && !strncasecmp(t.s, s, t.len); }

bool ds_has_nul(Tok line) { return memchr(line.s, 0, line.len) != NULL; }

/* Copies a token into a NUL-terminated buffer for strtod/strtoll; numbers longer than the
 * buffer are not numbers anyone writes, so they are rejected rather than truncated. */
static bool tok_cstr(Tok t, char *buf, size_t n) {
    if (t.len == 0 || t.len >= n || memchr(t.s, 0, t.len)) return false;
    memcpy(buf, t.s, t.len);
    buf[t.len] = 0;
    return true;
}

bool ds_tok_double(Tok t, double *out) {
    char buf[128], *end;
    if (!tok_cstr(t, buf, sizeof buf)) return false;
    /* strtod also takes hex floats, "inf" and "nan"; only finite decimal values are geometry */
    for (size_t i = 0; i < t.len; i++)
        if (!strchr("0123456789+-.eE", buf[i])) return false;
    errno = 0;
    double x = strtod(buf, &end);
    if (*end || !isfinite(x)) return false;
    *out = x;
    return true;
}

bool ds_tok_float(Tok t, float *out) {
    double x;
    if (!ds_tok_double(t, &x) || fabs(x) > 3.4028234663852886e38) return false;
    *out = (float)x;
    return true;
}

bool ds_tok_int64(Tok t, int64_t *out) {
    char buf[32], *end;
    if (!tok_cstr(t, buf, sizeof buf)) return false;
    if (!strchr("+-0123456789", buf[0])) return false;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end || errno == ERANGE) return false;
    *out = (int64_t)x;
    return true;
}

const char *ds_tok_show(Tok t, char *buf, size_t n) {
    size_t k = t.len < 24 ? t.len : 24;
    size_t j = 0;
    for (size_t i = 0; i < k && j + 5 < n; i++) buf[j++] = (t.s[i] >= 32 && t.s[i] < 127) ? t.s[i] : '?';
    if (k < t.len && j + 4 < n) buf[j++] = '.', buf[j++] = '.', buf[j++] = '.';
    buf[j] = 0;
    return buf;
}

/* ---- arrays -------------------------------------------------------------------------------- */

void ds_vec_init(Vec *v, size_t elem) {
    v->data = NULL;
    v->len = v->cap = 0;
    v->elem = elem;
}

bool ds_vec_reserve(Vec *v, size_t more) {
    if (more > SIZE_MAX / v->elem - v->len) return false;
    size_t need = v->len + more;
    if (need <= v->cap) return true;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / v->elem) return false;
        cap *= 2;
    }
    void *p = realloc(v->data, cap * v->elem);
    if (!p) return false;
    v->data = p;
    v->cap = cap;
    return true;
}

bool ds_vec_push(Vec *v, const void *x) {
    if (!ds_vec_reserve(v, 1)) return false;
    memcpy((char *)v->data + v->len * v->elem, x, v->elem);
    v->len++;
    return true;
}

void ds_vec_free(Vec *v) {
    free(v->data);
    ds_vec_init(v, v->elem);
}

bool ds_fan_push(Vec *tris, const int32_t *idx, int64_t n) {
    if (n < 3) return true;
    if (!ds_vec_reserve(tris, (size_t)(n - 2) * 3)) return false;
    int32_t *t = (int32_t *)tris->data + tris->len;
    for (int64_t k = 1; k + 1 < n; k++, t += 3) t[0] = idx[0], t[1] = idx[k], t[2] = idx[k + 1];
    tris->len += (size_t)(n - 2) * 3;
    return true;
}

static void *take(Vec *v) {
    void *p = v ? v->data : NULL;
    if (v) ds_vec_init(v, v->elem);
    return p;
}

void ds_mesh_take(DsMesh *m, Vec *v, Vec *n, Vec *color, Vec *scalar, Vec *tris) {
    memset(m, 0, sizeof *m);
    m->nv = (int64_t)(v->len / 3);
    m->nf = (int64_t)(tris->len / 3);
    m->v = take(v);
    m->n = take(n);
    m->color = take(color);
    m->scalar = take(scalar);
    m->f = take(tris);
    /* a mesh without faces keeps f NULL; malloc(0) results are not worth keeping apart */
    if (!m->nf) free(m->f), m->f = NULL;
}

void ds_mesh_free(DsMesh *m) {
    if (!m) return;
    free(m->v);
    free(m->n);
    free(m->color);
    free(m->scalar);
    free(m->f);
    memset(m, 0, sizeof *m);
}

/* ---- vertex deduplication ------------------------------------------------------------------ */

static uint64_t hash3(const float p[3]) {
    uint32_t b[3];
    memcpy(b, p, sizeof b);
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 3; i++) h = (h ^ b[i]) * 1099511628211ull, h ^= h >> 29;
    return h;
}

bool ds_dedup_init(VertexDedup *d, Vec *v, size_t expected) {
    size_t cap = 64;
    while (cap < 2 * expected && cap < ((size_t)1 << 31)) cap *= 2;
    d->slot = malloc(cap * sizeof *d->slot);
    if (!d->slot) return false;
    memset(d->slot, 0xff, cap * sizeof *d->slot);
    d->mask = cap - 1;
    d->v = v;
    return true;
}

static bool dedup_grow(VertexDedup *d) {
    size_t cap = (d->mask + 1) * 2;
    int32_t *s = malloc(cap * sizeof *s);
    if (!s) return false;
    memset(s, 0xff, cap * sizeof *s);
    const float *v = d->v->data;
    for (size_t i = 0; i < d->v->len / 3; i++) {
        size_t h = (size_t)hash3(v + 3 * i) & (cap - 1);
        while (s[h] >= 0) h = (h + 1) & (cap - 1);
        s[h] = (int32_t)i;
    }
    free(d->slot);
    d->slot = s;
    d->mask = cap - 1;
    return true;
}

int32_t ds_dedup_add(VertexDedup *d, const float p[3]) {
    /* -0 and +0 are the same position; their bit patterns differ, so fold them before hashing */
    float q[3] = {p[0] == 0 ? 0.0f : p[0], p[1] == 0 ? 0.0f : p[1], p[2] == 0 ? 0.0f : p[2]};
    size_t nv = d->v->len / 3;
    if ((nv + 1) * 2 > d->mask + 1 && !dedup_grow(d)) return -1;
    size_t h = (size_t)hash3(q) & d->mask;
    const float *v = d->v->data;
    for (; d->slot[h] >= 0; h = (h + 1) & d->mask) {
        const float *w = v + 3 * (size_t)d->slot[h];
        if (w[0] == q[0] && w[1] == q[1] && w[2] == q[2]) return d->slot[h];
    }
    if ((int64_t)nv >= MESH_MAX_COUNT || !ds_vec_reserve(d->v, 3)) return -1;
    memcpy((float *)d->v->data + 3 * nv, q, sizeof q);
    d->v->len += 3;
    d->slot[h] = (int32_t)nv;
    return (int32_t)nv;
}

void ds_dedup_free(VertexDedup *d) {
    free(d->slot);
    d->slot = NULL;
}

/* ---- files --------------------------------------------------------------------------------- */

int ds_file_slurp(const char *path, size_t max, const char *what, uint8_t **data, size_t *size, char *err, size_t errlen) {
    *data = NULL, *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return base_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return base_errf(err, errlen, "%s: not a regular file", path);
    }
    if (max && (uint64_t)st.st_size > (uint64_t)max) {
        fclose(f);
        return base_errf(err, errlen, "%s: file too large for %s (%lld bytes)", path, what, (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return base_errf(err, errlen, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        free(buf);
        return base_errf(err, errlen, "%s: read error after %zu of %zu bytes", path, got, n);
    }
    *data = buf, *size = n;
    return 0;
}

int ds_mesh_out_open(MeshOut *o, const char *path, char *err, size_t errlen) {
    o->path = path;
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof o->tmp)
        return base_errf(err, errlen, "%s: path too long", path);
    o->f = fopen(o->tmp, "wb");
    if (!o->f) return base_errf(err, errlen, "%s: cannot create: %s", o->tmp, strerror(errno));
    return 0;
}

int ds_mesh_out_close(MeshOut *o, bool ok, char *err, size_t errlen) {
    /* fflush writes the last buffer, ferror catches a failed fwrite anywhere earlier (errno is
     * still its error: successful calls leave errno alone), fsync the disk's own write-back
     * (ENOSPC), fclose the rest */
    bool bad = fflush(o->f) != 0 || ferror(o->f) != 0 || fsync(fileno(o->f)) != 0;
    int e = bad ? (errno ? errno : EIO) : 0;
    if (fclose(o->f) != 0 && !bad) bad = true, e = errno;
    o->f = NULL;
    if (ok && !bad && rename(o->tmp, o->path) != 0) bad = true, e = errno;
    if (!ok || bad) {
        remove(o->tmp);
        if (!ok) return -1; /* the caller already set err */
        return base_errf(err, errlen, "%s: write failed: %s", o->path, strerror(e));
    }
    return 0;
}

void ds_put_f32_le(FILE *f, float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    uint8_t c[4] = {(uint8_t)b, (uint8_t)(b >> 8), (uint8_t)(b >> 16), (uint8_t)(b >> 24)};
    fwrite(c, 1, 4, f);
}

void ds_put_i32_le(FILE *f, int32_t x) {
    uint32_t b = (uint32_t)x;
    uint8_t c[4] = {(uint8_t)b, (uint8_t)(b >> 8), (uint8_t)(b >> 16), (uint8_t)(b >> 24)};
    fwrite(c, 1, 4, f);
}
