/* tools/cmd_args.c — table-driven argv for the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nn/params.h"
#include "optim/checkpoint.h"
#include "tools/cmd_args.h"

static void usage_line(const CmdArgSpec *spec, FILE *f) {
    fprintf(f, "usage: %s %s\n", spec->cmd, spec->usage ? spec->usage : "[options]");
}

int cmd_args_fail(const CmdArgSpec *spec, FILE *errf, const char *fmt, ...) {
    if (!errf) return CMD_ARGS_BAD;
    fprintf(errf, "%s: ", spec->cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(errf, fmt, ap);
    va_end(ap);
    fprintf(errf, " (see %s --help)\n", spec->cmd);
    usage_line(spec, errf);
    return CMD_ARGS_BAD;
}

/* a bound as the option's kind writes it: counts as integers (1000000, not 1e+06) */
static void bound(const CmdArg *a, double v, char *buf, size_t n) {
    if (a->kind == CMD_ARG_DOUBLE) snprintf(buf, n, "%g", v);
    else snprintf(buf, n, "%lld", (long long)v);
}

/* what a number option expects, for messages and the help */
static void expects(const CmdArg *a, char *buf, size_t n) {
    char lo[32], hi[32];
    bound(a, a->min, lo, sizeof lo);
    bound(a, a->max, hi, sizeof hi);
    if (a->kind == CMD_ARG_UINT) {
        snprintf(buf, n, "a non-negative integer");
        return;
    }
    if (a->kind == CMD_ARG_SIZE) {
        snprintf(buf, n, "WxH in [%s, %s]", lo, hi);
        return;
    }
    const char *what = a->kind == CMD_ARG_INT ? "an integer" : "a number", *bare = what + (what[1] == 'n' ? 3 : 2);
    if (a->min < a->max) snprintf(buf, n, "%s in %c%s, %s]", what, a->above_min ? '(' : '[', lo, hi);
    else if (a->max < a->min && a->min == 0) snprintf(buf, n, "a %s %s", a->above_min ? "positive" : "non-negative", bare);
    else if (a->max < a->min && a->min == 1 && a->kind == CMD_ARG_INT && !a->above_min) snprintf(buf, n, "a positive integer");
    else if (a->max < a->min) snprintf(buf, n, "%s %s %s", what, a->above_min ? ">" : ">=", lo);
    else snprintf(buf, n, "%s", what);
}

static bool in_bounds(const CmdArg *a, double v) {
    bool lo = a->above_min ? v > a->min : v >= a->min;
    if (a->min < a->max) return lo && v <= a->max;
    if (a->max < a->min) return lo;
    return true;
}

static int take(const CmdArgSpec *spec, const CmdArg *a, const char *v, FILE *errf) {
    char want[96];
    switch (a->kind) {
    case CMD_ARG_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno || !in_bounds(a, (double)x)) {
            expects(a, want, sizeof want);
            return cmd_args_fail(spec, errf, "%s expects %s, got '%s'", a->name, want, v);
        }
        *(int64_t *)a->dst = x;
        return 0;
    }
    case CMD_ARG_UINT: {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-') {
            expects(a, want, sizeof want);
            return cmd_args_fail(spec, errf, "%s expects %s, got '%s'", a->name, want, v);
        }
        *(uint64_t *)a->dst = x;
        return 0;
    }
    case CMD_ARG_SIZE: {
        int w, h, k = 0;
        if (sscanf(v, "%dx%d%n", &w, &h, &k) != 2 || v[k] || !in_bounds(a, w) || !in_bounds(a, h)) {
            expects(a, want, sizeof want);
            return cmd_args_fail(spec, errf, "%s expects %s, got '%s'", a->name, want, v);
        }
        ((int *)a->dst)[0] = w, ((int *)a->dst)[1] = h;
        return 0;
    }
    case CMD_ARG_DOUBLE: {
        char *end;
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x) || !in_bounds(a, x)) {
            expects(a, want, sizeof want);
            return cmd_args_fail(spec, errf, "%s expects %s, got '%s'", a->name, want, v);
        }
        *(double *)a->dst = x;
        return 0;
    }
    case CMD_ARG_CHOICE: {
        const char *const *c = a->choices;
        while (*c && strcmp(*c, v)) c++;
        if (!*c) {
            char list[256] = "";
            for (c = a->choices; *c; c++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", c == a->choices ? "" : c[1] ? ", " : " or ", *c);
            return cmd_args_fail(spec, errf, "%s expects %s, got '%s'", a->name, list, v);
        }
        *(const char **)a->dst = v;
        return 0;
    }
    case CMD_ARG_LIST:
    case CMD_ARG_KEY: {
        CmdArgList *l = a->dst;
        if (l->n == (int)(sizeof l->v / sizeof *l->v))
            return cmd_args_fail(spec, errf, "more than %d config overrides", l->n);
        if (a->kind == CMD_ARG_KEY) {
            size_t room = sizeof l->buf - l->used;
            int k = snprintf(l->buf + l->used, room, "%s=%s", a->key, v);
            if (k < 0 || (size_t)k >= room) return cmd_args_fail(spec, errf, "%s: value too long", a->name);
            v = l->buf + l->used;
            l->used += (size_t)k + 1;
        }
        l->v[l->n++] = v;
        return 0;
    }
    case CMD_ARG_STRING: *(const char **)a->dst = v; return 0;
    case CMD_ARG_FLAG: break;
    }
    return 0;
}

int cmd_args_parse(const CmdArgSpec *spec, int argc, char **argv, int first, FILE *errf, const char **pos,
                   int *npos) {
    int np = 0, nargs = 0;
    while (spec->args[nargs].name) nargs++;
    bool seen[128] = {false};
    for (int i = first; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            if (errf) cmd_args_help(spec, stdout);
            return CMD_ARGS_HELP;
        }
        if (s[0] != '-' || !s[1]) {
            if (np >= spec->max_pos) return cmd_args_fail(spec, errf, "unexpected argument '%s'", s);
            pos[np++] = s;
            continue;
        }
        const CmdArg *a = spec->args;
        while (a->name && strcmp(a->name, s)) a++;
        if (!a->name) return cmd_args_fail(spec, errf, "unknown argument '%s'", s);
        if (a - spec->args < 128) seen[a - spec->args] = true;
        if (a->kind == CMD_ARG_FLAG) {
            *(bool *)a->dst = true;
            continue;
        }
        if (i + 1 >= argc) return cmd_args_fail(spec, errf, "%s needs a value", s);
        if (take(spec, a, argv[++i], errf)) return CMD_ARGS_BAD;
    }
    for (int k = 0; k < nargs && k < 128; k++)
        if (spec->args[k].required && !seen[k]) return cmd_args_fail(spec, errf, "%s is required", spec->args[k].name);
    if (np < spec->min_pos) return cmd_args_fail(spec, errf, "missing arguments");
    if (npos) *npos = np;
    return CMD_ARGS_OK;
}

/* text from column col on, wrapped at word boundaries under that column: a terminal's 100 columns */
static void wrap(FILE *f, const char *text, size_t col) {
    const size_t width = 100;
    size_t at = col;
    fputc(' ', f);
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (!n) break;
        if (at > col && at + 1 + n > width) {
            fprintf(f, "\n%*s", (int)col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, n, f);
        at += n, p += n;
    }
    fputc('\n', f);
}

void cmd_args_help(const CmdArgSpec *spec, FILE *f) {
    usage_line(spec, f);
    if (spec->about) fprintf(f, "%s\n", spec->about);
    fprintf(f, "options:\n");
    for (const CmdArg *a = spec->args; a->name; a++) {
        char left[64], want[96] = "";
        snprintf(left, sizeof left, "%s%s%s", a->name, a->kind == CMD_ARG_FLAG ? "" : " ",
                 a->kind == CMD_ARG_FLAG ? "" : a->meta ? a->meta : "VALUE");
        if (a->kind == CMD_ARG_UINT) expects(a, want, sizeof want);
        else if (a->kind == CMD_ARG_INT || a->kind == CMD_ARG_DOUBLE || a->kind == CMD_ARG_SIZE) {
            if (a->min != 0 || a->max != 0 || a->above_min) expects(a, want, sizeof want);
        } else if (a->kind == CMD_ARG_CHOICE) {
            snprintf(want, sizeof want, "one of");
            for (const char *const *c = a->choices; *c; c++)
                snprintf(want + strlen(want), sizeof want - strlen(want), " %s", *c);
        }
        if (a->kind == CMD_ARG_KEY) snprintf(want, sizeof want, "--set %s=%s", a->key, a->meta ? a->meta : "VALUE");
        char text[1024];
        snprintf(text, sizeof text, "%s%s%s%s%s%s", a->help ? a->help : "", *want ? " (" : "", want, *want ? ")" : "",
                 a->required ? " [required]" : "", a->kind == CMD_ARG_LIST ? " [repeatable]" : "");
        if (strlen(left) > 22) fprintf(f, "  %s\n%24s", left, ""); /* a long one: its text under the others' */
        else fprintf(f, "  %-22s", left);
        wrap(f, text, 25);
    }
    fprintf(f, "  %-22s %s\n", "-h, --help", "this help");
    if (spec->keys) cmd_args_help_keys(spec->keys, spec->keys_title, f);
    if (spec->footer) fprintf(f, "%s", spec->footer);
}

static void key_lines(const DsConfigField *fields, const char *prefix, FILE *f) {
    for (const DsConfigField *k = fields; k->key; k++) {
        char path[256], what[512] = "";
        snprintf(path, sizeof path, "%s%s%s", prefix, k->key, k->type == DS_CFG_ARRAY ? "[]" : "");
        if (k->type == DS_CFG_OBJECT) { /* its keys, a.b */
            char sub[260];
            snprintf(sub, sizeof sub, "%s.", path);
            key_lines(k->fields, sub, f);
            continue;
        }
        switch (k->type) {
        case DS_CFG_INT: snprintf(what, sizeof what, "integer"); break;
        case DS_CFG_FLOAT: snprintf(what, sizeof what, "number"); break;
        case DS_CFG_BOOL: snprintf(what, sizeof what, "true or false"); break;
        case DS_CFG_VEC3: snprintf(what, sizeof what, "[x, y, z]"); break;
        case DS_CFG_ARRAY: snprintf(what, sizeof what, "a list of objects with the keys below"); break;
        case DS_CFG_STRING:
            if (k->choices) {
                snprintf(what, sizeof what, "one of");
                for (const char *const *c = k->choices; *c; c++)
                    snprintf(what + strlen(what), sizeof what - strlen(what), " %s", *c);
            } else snprintf(what, sizeof what, "text");
            break;
        case DS_CFG_OBJECT: break;
        }
        if (k->type != DS_CFG_ARRAY) {
            if (!k->def) snprintf(what + strlen(what), sizeof what - strlen(what), ", required");
            else if (k->def == DS_CFG_KEEP) snprintf(what + strlen(what), sizeof what - strlen(what), ", default: see help");
            else snprintf(what + strlen(what), sizeof what - strlen(what), ", default %s", k->def);
        }
        if ((k->type == DS_CFG_INT || k->type == DS_CFG_FLOAT || k->type == DS_CFG_VEC3 || k->type == DS_CFG_ARRAY) &&
            k->min <= k->max && !(k->min == 0 && k->max == 0) && k->max < 1e29)
            snprintf(what + strlen(what), sizeof what - strlen(what), ", %s%g to %g", k->type == DS_CFG_ARRAY ? "count " : "",
                     k->min, k->max);
        else if ((k->type == DS_CFG_INT || k->type == DS_CFG_FLOAT) && k->min <= k->max && k->max >= 1e29)
            snprintf(what + strlen(what), sizeof what - strlen(what), ", at least %g", k->min);
        char text[1200];
        snprintf(text, sizeof text, "%s (%s)", k->help && *k->help ? k->help : "UNDOCUMENTED", what);
        if (strlen(path) > 26) fprintf(f, "  %s\n%28s", path, "");
        else fprintf(f, "  %-26s", path);
        wrap(f, text, 29);
        if (k->type == DS_CFG_ARRAY) {
            char sub[260];
            snprintf(sub, sizeof sub, "%s.", path);
            key_lines(k->fields, sub, f);
        }
    }
}

void cmd_args_help_keys(const DsConfigField *schema, const char *title, FILE *f) {
    fprintf(f, "%s\n", title ? title : "config keys (in the JSON config, or --set KEY=VALUE):");
    key_lines(schema, "", f);
}

int cmd_args_config(const CmdArgSpec *spec, FILE *errf, const char *path, const CmdArgList *sets,
                    const DsConfigField *schema, void *cfg) {
    char err[8192];
    int rc = path ? ds_config_load(path, schema, cfg, err, sizeof err)
                  : ds_config_parse(NULL, "defaults", schema, cfg, err, sizeof err);
    for (int i = 0; sets && i < sets->n && rc == 0; i++) rc = ds_config_set(sets->v[i], schema, cfg, err, sizeof err);
    if (rc) {
        if (errf) fprintf(errf, "%s: %s\n", spec->cmd, err);
        return CMD_ARGS_BAD;
    }
    return 0;
}

int cmd_args_config_run(const CmdArgSpec *spec, FILE *errf, const char *path, const CmdArgList *sets,
                        const DsConfigField *schema, void *cfg, bool resume, const char *run_dir, bool *from_ckpt) {
    char stored[4200], err[8192];
    struct stat st;
    bool use = !path && resume && snprintf(stored, sizeof stored, "%s/ckpt.h5", run_dir) < (int)sizeof stored &&
               stat(stored, &st) == 0;
    if (from_ckpt) *from_ckpt = use;
    if (!use) return cmd_args_config(spec, errf, path, sets, schema, cfg);
    OptimCheckpointMeta meta = {0};
    NnParams empty;
    nn_params_init(&empty, tensor_scope_current(), TENSOR_F32, 0);
    nn_params_pack(&empty);
    /* non-strict on an empty model: reads only the attributes */
    int rc = optim_checkpoint_load(stored, &empty, NULL, false, &meta, err, sizeof err);
    nn_params_free(&empty);
    if (!rc && !meta.config_json) {
        snprintf(err, sizeof err, "%s: no config stored (not a checkpoint of %s)", stored, spec->cmd);
        rc = -1;
    }
    if (!rc) rc = ds_config_parse(meta.config_json, stored, schema, cfg, err, sizeof err);
    free(meta.config_json);
    for (int i = 0; sets && i < sets->n && !rc; i++) rc = ds_config_set(sets->v[i], schema, cfg, err, sizeof err);
    if (rc) {
        if (errf) fprintf(errf, "%s: %s\n", spec->cmd, err);
        return CMD_ARGS_BAD;
    }
    if (errf) fprintf(errf, "%s: no --config, resuming with the config stored in %s\n", spec->cmd, stored);
    return 0;
}
