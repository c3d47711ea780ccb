/* tests/oracle_io.c — parses the fixture format described in oracle_io.h. Every length read
 * from the file is checked against the bytes left before it is used, and element counts are
 * checked for overflow, so a truncated or corrupted file gives a message instead of a crash.
 * Element bytes are copied as they are: the hosts we run on (x86-64, aarch64) are
 * little-endian like the files. */
#include "base/alloc.h"
#include "tests/oracle_io.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORACLE_MAGIC "ANIMAFX1"

static bool fail(char *err, size_t errsize, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t errsize, const char *fmt, ...) {
    if (err && errsize) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errsize, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* little-endian loads from an unaligned buffer */
static uint64_t load_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

bool oracle_parse(const void *bytes, size_t size, const char *what, OracleFile *f, char *err, size_t errsize) {
    memset(f, 0, sizeof *f);
    if (size < 12 || memcmp(bytes, ORACLE_MAGIC, 8) != 0)
        return fail(err, errsize, "%s: not a fixture file (expected the magic \"" ORACLE_MAGIC "\" and a count)", what);
    uint64_t count = load_le((const unsigned char *)bytes + 8, 4);
    /* every record takes at least 13 bytes (u16 length, 1-byte name, dtype, ndim, one element
     * or one zero dim), which bounds the allocation below by the file's size */
    if (count > size / 13)
        return fail(err, errsize, "%s: header claims %llu records, more than %zu bytes can hold", what,
                    (unsigned long long)count, size);
    f->blob = malloc(size + 1);
    f->arrays = calloc(count ? count : 1, sizeof *f->arrays);
    if (!f->blob || !f->arrays) {
        oracle_free(f);
        return fail(err, errsize, "%s: out of memory for %zu bytes", what, size);
    }
    memcpy(f->blob, bytes, size);
    const unsigned char *p = (const unsigned char *)f->blob;
    size_t at = 12;
    char **names = calloc(count ? count : 1, sizeof *names);
    if (!names) {
        oracle_free(f);
        return fail(err, errsize, "%s: out of memory", what);
    }
    bool ok = true;
    for (uint64_t r = 0; r < count && ok; r++) {
        OracleArray *a = &f->arrays[r];
        if (size - at < 2) { ok = fail(err, errsize, "%s: record %llu: truncated before its name length", what, (unsigned long long)r); break; }
        size_t nlen = (size_t)load_le(p + at, 2);
        at += 2;
        if (nlen == 0 || size - at < nlen) {
            ok = fail(err, errsize, "%s: record %llu: name of %zu bytes does not fit the %zu bytes left", what,
                      (unsigned long long)r, nlen, size - at);
            break;
        }
        names[r] = malloc(nlen + 1);
        if (!names[r]) { ok = fail(err, errsize, "%s: out of memory", what); break; }
        memcpy(names[r], p + at, nlen);
        names[r][nlen] = 0;
        if (strlen(names[r]) != nlen) {
            ok = fail(err, errsize, "%s: record %llu: name contains a NUL byte", what, (unsigned long long)r);
            break;
        }
        a->name = names[r];
        at += nlen;
        if (size - at < 2) { ok = fail(err, errsize, "%s: array '%s': truncated before dtype and ndim", what, a->name); break; }
        unsigned dt = p[at], nd = p[at + 1];
        at += 2;
        if (dt > 1) { ok = fail(err, errsize, "%s: array '%s': dtype code %u (expected 0 = f64 or 1 = i64)", what, a->name, dt); break; }
        if (nd > TENSOR_MAX_DIMS) { ok = fail(err, errsize, "%s: array '%s': %u dims (at most %d)", what, a->name, nd, TENSOR_MAX_DIMS); break; }
        if (size - at < (size_t)nd * 8) { ok = fail(err, errsize, "%s: array '%s': truncated inside its shape", what, a->name); break; }
        a->dtype = (OracleDType)dt;
        a->ndim = (int)nd;
        /* saturate at "more than the file can hold" instead of overflowing; a 0 dim wins */
        uint64_t numel = 1, cap = size / 8 + 1;
        bool empty = false;
        for (unsigned d = 0; d < nd && ok; d++) {
            int64_t s = (int64_t)load_le(p + at, 8);
            at += 8;
            if (s < 0) { ok = fail(err, errsize, "%s: array '%s': negative size %lld at dim %u", what, a->name, (long long)s, d); break; }
            a->shape[d] = s;
            if (s == 0) empty = true;
            else numel = numel > cap / (uint64_t)s ? cap : numel * (uint64_t)s;
        }
        if (empty) numel = 0;
        if (!ok) break;
        if (numel > (size - at) / 8) {
            ok = fail(err, errsize, "%s: array '%s': data truncated (needs more bytes than the %zu left)", what, a->name,
                      size - at);
            break;
        }
        a->numel = (int64_t)numel;
        a->data = p + at;
        at += (size_t)numel * 8;
        for (uint64_t q = 0; q < r; q++)
            if (!strcmp(f->arrays[q].name, a->name)) {
                ok = fail(err, errsize, "%s: array '%s' appears twice", what, a->name);
                break;
            }
        f->n = (int)r + 1;
    }
    if (ok && at != size) ok = fail(err, errsize, "%s: %zu unexpected bytes after the last record", what, size - at);
    if (!ok) {
        for (uint64_t r = 0; r < count; r++) free(names[r]);
        free(names);
        f->n = 0;
        oracle_free(f);
        return false;
    }
    free(names); /* each name lives on in f->arrays[r].name; oracle_free releases it */
    return true;
}

bool oracle_load(const char *path, OracleFile *f, char *err, size_t errsize) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return fail(err, errsize, "%s: cannot open: %s (regenerate with tests/oracle/make_fixtures.py)", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(fp);
                return fail(err, errsize, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) break;
    }
    bool read_err = ferror(fp);
    fclose(fp);
    if (read_err) {
        free(buf);
        return fail(err, errsize, "%s: read error", path);
    }
    bool ok = oracle_parse(buf, len, path, f, err, errsize);
    free(buf);
    return ok;
}

void oracle_free(OracleFile *f) {
    if (f->arrays)
        for (int i = 0; i < f->n; i++) free((void *)f->arrays[i].name);
    free(f->arrays);
    free(f->blob);
    memset(f, 0, sizeof *f);
}

const OracleArray *oracle_find(const OracleFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->arrays[i].name, name)) return &f->arrays[i];
    return NULL;
}

Tensor *oracle_tensor(const OracleArray *a, TensorDType dt) {
    if (a->dtype == ORACLE_I64) {
        Tensor *t = tensor_empty(a->ndim, a->shape, TENSOR_I64);
        memcpy(tensor_data_ptr(t), a->data, (size_t)a->numel * 8);
        return t;
    }
    double *v = base_malloc(sizeof(double) * (size_t)(a->numel ? a->numel : 1));
    memcpy(v, a->data, (size_t)a->numel * 8);
    Tensor *t = tensor_from_f64(a->ndim, a->shape, dt, v);
    free(v);
    return t;
}
