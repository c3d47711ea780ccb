/* datasets/config.c — schema-checked JSON configs on cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "config.h"
#include "base/errbuf.h"

static const char *type_name(DsConfigType t) {
    switch (t) {
    case DS_CFG_INT: return "an integer";
    case DS_CFG_FLOAT: return "a number";
    case DS_CFG_BOOL: return "true or false";
    case DS_CFG_STRING: return "a string";
    case DS_CFG_OBJECT: return "an object";
    case DS_CFG_VEC3: return "an array of 3 numbers";
    case DS_CFG_ARRAY: return "an array of objects";
    }
    return "?";
}

const char DS_CFG_KEEP[] = "(keep)";

/* what a field expects, with an array's bounds on its length */
static void type_desc(const DsConfigField *f, char *buf, size_t n) {
    if (f->type == DS_CFG_ARRAY && f->min <= f->max && f->min > 0) {
        if (f->max >= 1e9) snprintf(buf, n, "an array of at least %g objects", f->min);
        else snprintf(buf, n, "an array of %g to %g objects", f->min, f->max);
    } else
        snprintf(buf, n, "%s", type_name(f->type));
}

/* Frees what the reader allocated under the fields [schema, end) (end NULL: all of them). */
static void free_fields(const DsConfigField *schema, const DsConfigField *end, char *base) {
    for (const DsConfigField *f = schema; f->key && f != end; f++) {
        if (f->type == DS_CFG_OBJECT) free_fields(f->fields, NULL, base + f->offset);
        if (f->type != DS_CFG_ARRAY) continue;
        char **arr = (char **)(base + f->offset);
        int *count = (int *)(base + f->count_offset);
        for (int i = 0; *arr && i < *count; i++) free_fields(f->fields, NULL, *arr + (size_t)i * f->elem_size);
        free(*arr);
        *arr = NULL, *count = 0;
    }
}

void ds_config_free(const DsConfigField *schema, void *cfg) { free_fields(schema, NULL, cfg); }

static void describe(const cJSON *v, char *buf, size_t n) {
    char *s = cJSON_PrintUnformatted(v);
    snprintf(buf, n, "%s", s ? s : "?");
    if (strlen(buf) > 60) strcpy(buf + 57, "...");
    free(s);
}

static void join(char *out, size_t n, const char *path, const char *key) {
    if (*path) snprintf(out, n, "%s.%s", path, key);
    else snprintf(out, n, "%s", key);
}

/* A value given as text (a schema default or a --set override): JSON when the whole text parses
 * as JSON, else the bare text as a string. A string field always takes text that is not a JSON
 * string as it is, so `name=123` or a default "true" stays a string. Trailing text after a
 * valid prefix ("12abc") is not JSON: cJSON_Parse alone would read it as 12. */
static cJSON *parse_value(const DsConfigField *f, const char *text) {
    cJSON *v = cJSON_ParseWithOpts(text, NULL, true);
    if (v && (f->type != DS_CFG_STRING || cJSON_IsString(v))) return v;
    cJSON_Delete(v);
    return cJSON_CreateString(text);
}

/* One value into its field. */
static int assign(const DsConfigField *f, const cJSON *v, const char *src, const char *kp, char *base, char *err,
                  size_t errlen);

static int fill_object(const DsConfigField *schema, const cJSON *obj, const char *src, const char *path, char *base,
                       char *err, size_t errlen) {
    if (obj && !cJSON_IsObject(obj)) {
        char got[80];
        describe(obj, got, sizeof got);
        base_errf(err, errlen, "%s: key '%s': expected an object, got %s", src, *path ? path : "(top level)", got);
        return -1;
    }
    /* unknown keys first: a typo should not be hidden behind a default */
    for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
        /* cJSON keeps both copies of a repeated key and lookups return the first: the second
         * would be silently ignored, so a repeat is an error */
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (!strcmp(d->string, c->string)) {
                char kp[512];
                join(kp, sizeof kp, path, c->string);
                base_errf(err, errlen, "%s: key '%s' given twice", src, kp);
                return -1;
            }
        const DsConfigField *f = schema;
        while (f->key && strcmp(f->key, c->string)) f++;
        if (!f->key) {
            char kp[512], known[512] = "";
            join(kp, sizeof kp, path, c->string);
            for (f = schema; f->key; f++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", f == schema ? "" : ", ", f->key);
            base_errf(err, errlen, "%s: unknown key '%s' (known here: %s)", src, kp, known);
            return -1;
        }
    }
    for (const DsConfigField *f = schema; f->key; f++) {
        char kp[512];
        join(kp, sizeof kp, path, f->key);
        const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, f->key) : NULL;
        if (f->present) *(bool *)(base + f->present - 1) = v != NULL;
        if (f->type == DS_CFG_OBJECT) {
            if (fill_object(f->fields, v, src, kp, base + f->offset, err, errlen)) goto fail;
            continue;
        }
        cJSON *def = NULL;
        if (!v) {
            if (f->def == DS_CFG_KEEP) continue;
            if (!f->def) {
                char what[96];
                type_desc(f, what, sizeof what);
                base_errf(err, errlen, "%s: missing required key '%s' (%s%s%s)", src, kp, what, f->help ? ": " : "",
                            f->help ? f->help : "");
                goto fail;
            }
            def = parse_value(f, f->def);
            v = def;
        }
        int rc = assign(f, v, def ? "the schema's default" : src, kp, base, err, errlen);
        cJSON_Delete(def);
        if (rc) {
        fail:
            free_fields(schema, f, base); /* the arrays of the fields before this one */
            return -1;
        }
    }
    return 0;
}

static int assign(const DsConfigField *f, const cJSON *v, const char *src, const char *kp, char *base, char *err,
                  size_t errlen) {
    char got[80];
    describe(v, got, sizeof got);
    void *dst = base + f->offset;
    bool ranged = f->min <= f->max;
    switch (f->type) {
    case DS_CFG_INT: {
        double d = v->valuedouble;
        if (!cJSON_IsNumber(v) || d != floor(d) || fabs(d) > 9.0e15) goto wrong_type;
        if (ranged && (d < f->min || d > f->max)) goto out_of_range;
        *(int64_t *)dst = (int64_t)d;
        return 0;
    }
    case DS_CFG_FLOAT: {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) goto wrong_type;
        double d = v->valuedouble;
        if (ranged && (d < f->min || d > f->max)) goto out_of_range;
        *(double *)dst = d;
        return 0;
    }
    case DS_CFG_BOOL:
        if (!cJSON_IsBool(v)) goto wrong_type;
        *(bool *)dst = cJSON_IsTrue(v);
        return 0;
    case DS_CFG_STRING: {
        if (!cJSON_IsString(v)) goto wrong_type;
        const char *s = v->valuestring;
        if (f->choices) {
            const char *const *c = f->choices;
            while (*c && strcmp(*c, s)) c++;
            if (!*c) {
                char opts[256] = "";
                for (c = f->choices; *c; c++)
                    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s\"%s\"", c == f->choices ? "" : ", ", *c);
                base_errf(err, errlen, "%s: key '%s': expected one of %s, got %s", src, kp, opts, got);
                return -1;
            }
        }
        if (strlen(s) + 1 > f->size) {
            base_errf(err, errlen, "%s: key '%s': string longer than %zu characters", src, kp, f->size - 1);
            return -1;
        }
        memcpy(dst, s, strlen(s) + 1);
        return 0;
    }
    case DS_CFG_VEC3: {
        double x[3];
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3) goto wrong_type;
        for (int i = 0; i < 3; i++) {
            const cJSON *e = cJSON_GetArrayItem(v, i);
            if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) goto wrong_type;
            x[i] = e->valuedouble;
            if (ranged && (x[i] < f->min || x[i] > f->max)) goto out_of_range;
        }
        memcpy(dst, x, sizeof x);
        return 0;
    }
    case DS_CFG_ARRAY: {
        if (!cJSON_IsArray(v)) goto wrong_type;
        int n = cJSON_GetArraySize(v);
        if (ranged && (n < f->min || n > f->max)) goto wrong_type;
        char *arr = calloc((size_t)n + 1, f->elem_size);
        if (!arr) {
            base_errf(err, errlen, "%s: key '%s': out of memory", src, kp);
            return -1;
        }
        int i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            char ep[512];
            snprintf(ep, sizeof ep, "%s[%d]", kp, i);
            if (fill_object(f->fields, e, src, ep, arr + (size_t)i * f->elem_size, err, errlen)) {
                for (int j = 0; j < i; j++) free_fields(f->fields, NULL, arr + (size_t)j * f->elem_size);
                free(arr);
                return -1;
            }
        }
        *(char **)dst = arr;
        *(int *)(base + f->count_offset) = n;
        return 0;
    }
    case DS_CFG_OBJECT: break;
    }
    char what[96];
wrong_type:
    type_desc(f, what, sizeof what);
    base_errf(err, errlen, "%s: key '%s': expected %s, got %s", src, kp, what, got);
    return -1;
out_of_range:
    base_errf(err, errlen, "%s: key '%s': expected %s in [%g, %g], got %s", src, kp, type_name(f->type), f->min, f->max, got);
    return -1;
}

/* line and column of a byte offset, for syntax errors */
static void locate(const char *text, const char *at, int *line, int *col) {
    *line = 1, *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') (*line)++, *col = 1;
        else (*col)++;
    }
}

int ds_config_parse(const char *text, const char *source, const DsConfigField *schema, void *out, char *err,
                    size_t errlen) {
    if (!text || !*text) return fill_object(schema, NULL, source, "", out, err, errlen);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, true);
    if (!root) {
        const char *at = end ? end : cJSON_GetErrorPtr();
        int line = 0, col = 0;
        if (at) locate(text, at, &line, &col);
        base_errf(err, errlen, "%s:%d:%d: invalid JSON near '%.20s'", source, line, col, at ? at : "");
        return -1;
    }
    int rc = fill_object(schema, root, source, "", out, err, errlen);
    cJSON_Delete(root);
    return rc;
}

int ds_config_load(const char *path, const DsConfigField *schema, void *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_errf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
        return -1;
    }
    /* fopen of a directory succeeds on Linux and its fread fails (EISDIR): without these checks
     * a directory, like an empty file, would read as {} and run on every default */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        base_errf(err, errlen, "%s: is a directory, not a JSON config", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = base_malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 >= cap) {
            if (cap > ((size_t)64 << 20)) {
                free(buf);
                fclose(f);
                base_errf(err, errlen, "%s: larger than 64 MiB, not a config", path);
                return -1;
            }
            cap *= 2;
            buf = base_realloc(buf, cap);
        }
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        base_errf(err, errlen, "%s: cannot read (%s)", path, strerror(e));
        return -1;
    }
    fclose(f);
    buf[n] = 0;
    if (strlen(buf) != n) {
        free(buf);
        base_errf(err, errlen, "%s: contains a NUL byte, not a JSON text", path);
        return -1;
    }
    if (!buf[strspn(buf, " \t\r\n")]) {
        free(buf);
        base_errf(err, errlen, "%s: empty file, not a JSON config", path);
        return -1;
    }
    int rc = ds_config_parse(buf, path, schema, out, err, errlen);
    free(buf);
    return rc;
}

int ds_config_set(const char *assignment, const DsConfigField *schema, void *out, char *err, size_t errlen) {
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        base_errf(err, errlen, "override '%s': expected key.path=value", assignment);
        return -1;
    }
    char key[512];
    snprintf(key, sizeof key, "%.*s", (int)(eq - assignment), assignment);
    const DsConfigField *s = schema;
    char *base = out, *part = key, *dot;
    while ((dot = strchr(part, '.'))) {
        *dot = 0;
        const DsConfigField *f = s;
        while (f->key && (strcmp(f->key, part) || f->type != DS_CFG_OBJECT)) f++;
        if (!f->key) {
            base_errf(err, errlen, "override '%s': no object '%s' in the schema", assignment, part);
            return -1;
        }
        base += f->offset;
        s = f->fields;
        part = dot + 1;
    }
    const DsConfigField *f = s;
    while (f->key && strcmp(f->key, part)) f++;
    if (f->key && f->type == DS_CFG_ARRAY) {
        base_errf(err, errlen, "override '%s': key '%.*s' is an array of objects, set in the file", assignment,
                    (int)(eq - assignment), assignment);
        return -1;
    }
    if (!f->key || f->type == DS_CFG_OBJECT) {
        base_errf(err, errlen, "override '%s': unknown key '%.*s'", assignment, (int)(eq - assignment), assignment);
        return -1;
    }
    cJSON *v = parse_value(f, eq + 1);
    char kp[512];
    snprintf(kp, sizeof kp, "%.*s", (int)(eq - assignment), assignment);
    int rc = assign(f, v, "command line", kp, base, err, errlen);
    cJSON_Delete(v);
    return rc;
}

/* cJSON prints %.15g and accepts it when it is within an epsilon, so 0.1 + 0.2 would come back
 * as 0.3: print the shortest form that reads back exactly (the config stored in a checkpoint
 * must reproduce the run) */
static cJSON *number_json(double d) {
    char num[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(num, sizeof num, "%.*g", prec, d);
        if (strtod(num, NULL) == d) break;
    }
    return cJSON_CreateRaw(num);
}

static cJSON *to_json(const DsConfigField *schema, const char *base) {
    cJSON *o = cJSON_CreateObject();
    for (const DsConfigField *f = schema; f->key; f++) {
        const void *p = base + f->offset;
        switch (f->type) {
        case DS_CFG_INT: {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)*(const int64_t *)p);
            cJSON_AddRawToObject(o, f->key, num);
            break;
        }
        case DS_CFG_FLOAT: cJSON_AddItemToObject(o, f->key, number_json(*(const double *)p)); break;
        case DS_CFG_BOOL: cJSON_AddBoolToObject(o, f->key, *(const bool *)p); break;
        case DS_CFG_STRING: cJSON_AddStringToObject(o, f->key, (const char *)p); break;
        case DS_CFG_OBJECT: cJSON_AddItemToObject(o, f->key, to_json(f->fields, base + f->offset)); break;
        case DS_CFG_VEC3: {
            cJSON *a = cJSON_AddArrayToObject(o, f->key);
            for (int i = 0; i < 3; i++) cJSON_AddItemToArray(a, number_json(((const double *)p)[i]));
            break;
        }
        case DS_CFG_ARRAY: {
            cJSON *a = cJSON_AddArrayToObject(o, f->key);
            const char *arr = *(const char *const *)p;
            int n = *(const int *)(base + f->count_offset);
            for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, to_json(f->fields, arr + (size_t)i * f->elem_size));
            break;
        }
        }
    }
    return o;
}

char *ds_config_to_json(const DsConfigField *schema, const void *cfg) {
    cJSON *o = to_json(schema, cfg);
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    return s;
}
