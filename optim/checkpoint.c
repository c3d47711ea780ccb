/* optim/checkpoint.c — HDF5 save (temporary file + fsync + rename, base/h5file.h) and checked
 * load. Parameters and optimizer state may live on a GPU (training with nn_params_mirror): a
 * save copies each tensor to the host as it writes it, a load stages on the host and copies
 * into the device. */
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checkpoint.h"
#include "tensor/backend.h"
#include "base/h5file.h"
#include "base/errbuf.h"

#define FORMAT_TAG "anima-checkpoint-1"

static hid_t h5_type(TensorDType dt) { return dt == TENSOR_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT; }

/* Checksummed (base/h5file.h: a flipped or truncated byte in a tensor fails the load instead
 * of loading garbage), in chunks cut along dim 0 to stay under 64 MiB (HDF5's limit is 4 GiB). */
static int write_tensor(hid_t loc, const char *name, const Tensor *t) {
    hsize_t dims[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) dims[i] = (hsize_t)t->shape[i];
    bool grad = tensor_grad_set_enabled(false);
    Tensor *c = tensor_to(tensor_contiguous((Tensor *)t), TENSOR_CPU); /* the caller's scope frees it */
    tensor_grad_set_enabled(grad);
    return base_h5_write_checked(loc, name, h5_type(t->dtype), h5_type(t->dtype), t->ndim, dims, tensor_data_ptr(c),
                                 (size_t)64 << 20, false);
}

int optim_checkpoint_save(const char *path, const NnParams *p, const Optim *o, const OptimCheckpointMeta *meta,
                          char *err, size_t errlen) {
    char tmp[4096];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    TensorScope *s = tensor_scope_begin();
    int bad = 0;
    hid_t gp = H5Gcreate2(f, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (int i = 0; i < p->n && !bad; i++) bad |= write_tensor(gp, p->items[i].name, p->items[i].value);
    H5Gclose(gp);
    if (o && o->exp_avg && !bad) {
        hid_t go = H5Gcreate2(f, "optim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        bad |= base_h5_attr_i64(go, "kind", o->cfg.kind) | base_h5_attr_i64(go, "step", o->step);
        const char *names[2] = {"exp_avg", "exp_avg_sq"};
        Tensor *state[2] = {o->exp_avg, o->exp_avg_sq};
        for (int k = 0; k < 2 && !bad; k++) {
            if (!state[k]) continue;
            hid_t g = H5Gcreate2(go, names[k], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            int64_t off = 0;
            for (int i = 0; i < p->n && !bad; i++) {
                const Tensor *v = p->items[i].value;
                bad |= write_tensor(g, p->items[i].name, tensor_view_at(state[k], v->ndim, v->shape, off));
                off += tensor_numel(v);
            }
            H5Gclose(g);
        }
        H5Gclose(go);
    }
    if (!bad) {
        bad |= base_h5_attr_str(f, "format", FORMAT_TAG);
        if (meta) {
            bad |= base_h5_attr_i64(f, "step", meta->step);
            bad |= base_h5_attr_i64(f, "rng_seed", (int64_t)meta->rng.seed) |
                   base_h5_attr_i64(f, "rng_stream", (int64_t)meta->rng.stream) |
                   base_h5_attr_i64(f, "rng_offset", (int64_t)meta->rng.offset);
            if (meta->config_json) bad |= base_h5_attr_str(f, "config", meta->config_json);
        }
    }
    tensor_scope_end(s);
    return base_h5_save_end(f, tmp, path, !bad, "checkpoint", err, errlen);
}

/* ---- load ------------------------------------------------------------------------------ */

typedef struct {
    char **names;
    int n, cap;
} NameList;

static herr_t collect_name(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    (void)g, (void)info;
    NameList *l = data;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->names = base_realloc(l->names, sizeof *l->names * (size_t)l->cap);
    }
    l->names[l->n++] = strdup(name);
    return 0;
}

static void names_free(NameList *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
}

/* Compare a dataset's shape and type with t; returns a description of the mismatch or NULL. */
static const char *describe_mismatch(hid_t ds, const Tensor *t, char *buf, size_t n) {
    hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds);
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[32] = {0};
    if (nd > 0 && nd <= 32) H5Sget_simple_extent_dims(sp, dims, NULL);
    bool ok = nd == t->ndim;
    for (int i = 0; ok && i < nd; i++) ok = dims[i] == (hsize_t)t->shape[i];
    size_t size = H5Tget_size(ty);
    bool is_float = H5Tget_class(ty) == H5T_FLOAT;
    bool dt_ok = is_float && size == tensor_dtype_size(t->dtype);
    char fs[160] = "[", ms[128];
    for (int i = 0; i < nd && i < 8; i++) snprintf(fs + strlen(fs), sizeof fs - strlen(fs), i ? ", %llu" : "%llu", (unsigned long long)dims[i]);
    strcat(fs, "]");
    H5Sclose(sp);
    H5Tclose(ty);
    if (ok && dt_ok) return NULL;
    snprintf(buf, n, "file has %s %s, model has %s %s", is_float ? (size == 8 ? "f64" : size == 4 ? "f32" : "float?") : "non-float",
             fs, tensor_dtype_name(t->dtype), tensor_shape_str(t, ms));
    return buf;
}

/* Datasets read ahead of the copy into the model (see optim_checkpoint_load). */
typedef struct {
    struct {
        Tensor *dst;
        void *buf;
    } *items;
    int n, cap;
} Staged;

static int stage_read(Staged *st, hid_t ds, Tensor *dst) {
    size_t nbytes = (size_t)tensor_numel(dst) * tensor_dtype_size(dst->dtype);
    void *buf = base_malloc(nbytes ? nbytes : 1);
    if (ds < 0 || H5Dread(ds, h5_type(dst->dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        free(buf);
        return -1;
    }
    if (st->n == st->cap) {
        st->cap = st->cap ? 2 * st->cap : 64;
        st->items = base_realloc(st->items, sizeof *st->items * (size_t)st->cap);
    }
    st->items[st->n].dst = dst;
    st->items[st->n++].buf = buf;
    return 0;
}

/* Targets are contiguous: parameters (packed views or fresh tensors) and views of the flat
 * optimizer state. Views are written through to their storage. */
static void stage_commit(Staged *st) {
    for (int i = 0; i < st->n; i++) {
        Tensor *t = st->items[i].dst;
        size_t n = (size_t)tensor_numel(t) * tensor_dtype_size(t->dtype);
        if (tensor_device(t) == TENSOR_CPU) memcpy(tensor_data_ptr(t), st->items[i].buf, n);
        else if (n) tensor_backend_for(tensor_device(t))->from_host(tensor_data_ptr(t), st->items[i].buf, n);
    }
}

static void stage_free(Staged *st) {
    for (int i = 0; i < st->n; i++) free(st->items[i].buf);
    free(st->items);
    memset(st, 0, sizeof *st);
}

/* a numeric scalar attribute as int64 (base/h5file.h); false when absent or not one number */
static bool read_attr_i64(hid_t loc, const char *name, int64_t *v) {
    return base_h5_attr_read_num(loc, name, H5T_NATIVE_INT64, 1, v) == 0;
}

/* Appends to a bounded message buffer. */
static void add(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t n, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (used + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

int optim_checkpoint_load(const char *path, NnParams *p, Optim *o, bool strict, OptimCheckpointMeta *meta,
                          char *err, size_t errlen) {
    if (meta) meta->config_json = NULL; /* defined even when the load fails */
    hid_t f = base_h5_open_read(path, "checkpoint", err, errlen);
    if (f < 0) return -1;
    /* A damaged file (a flipped or lost byte: the checksums, sizes and links of HDF5's own
     * structures do not add up) is refused as "corrupt", never as a model mismatch (issue 17):
     * the links and objects that cannot be read are told apart from those that are not there. */
    htri_t has = H5Lexists(f, "params", H5P_DEFAULT);
    if (has <= 0) {
        H5Fclose(f);
        if (has < 0) base_errf(err, errlen, "%s: corrupt file: its root group cannot be read", path);
        else base_errf(err, errlen, "%s: no /params group: not an anima checkpoint, or a corrupt one", path);
        return -1;
    }
    hid_t gp = H5Gopen2(f, "params", H5P_DEFAULT);
    NameList in_file = {0};
    if (gp < 0 || H5Literate(gp, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, collect_name, &in_file) < 0) {
        names_free(&in_file);
        if (gp >= 0) H5Gclose(gp);
        H5Fclose(f);
        base_errf(err, errlen, "%s: corrupt file: the /params group cannot be read", path);
        return -1;
    }
    char damaged[1024] = "";
    char missing[2048] = "", unexpected[2048] = "", mismatched[4096] = "";
    int n_missing = 0, n_unexpected = 0, n_mismatched = 0;
    bool *match = base_calloc((size_t)(p->n ? p->n : 1), sizeof *match);
    for (int i = 0; i < p->n; i++) {
        const char *name = p->items[i].name;
        htri_t e = H5Lexists(gp, name, H5P_DEFAULT);
        if (e < 0) {
            if (!*damaged) snprintf(damaged, sizeof damaged, "the link to /params/%s cannot be read", name);
            continue;
        }
        if (e == 0) {
            add(missing, sizeof missing, "%s%s", n_missing++ ? ", " : "", name);
            continue;
        }
        hid_t ds = H5Dopen2(gp, name, H5P_DEFAULT);
        H5O_info_t oi;
        if (ds < 0 && H5Oget_info_by_name(gp, name, &oi, H5P_DEFAULT) < 0) {
            /* linked, but the object's header does not read back */
            if (!*damaged) snprintf(damaged, sizeof damaged, "/params/%s cannot be read", name);
            continue;
        }
        char why[512];
        const char *bad = ds < 0 ? "not a dataset" : describe_mismatch(ds, p->items[i].value, why, sizeof why);
        if (ds >= 0) H5Dclose(ds);
        if (bad) add(mismatched, sizeof mismatched, "%s%s (%s)", n_mismatched++ ? "; " : "", name, bad);
        else match[i] = true;
    }
    for (int j = 0; j < in_file.n; j++)
        if (!nn_params_find(p, in_file.names[j]))
            add(unexpected, sizeof unexpected, "%s%s", n_unexpected++ ? ", " : "", in_file.names[j]);
    names_free(&in_file);
    char report[8192] = "";
    if (n_missing) add(report, sizeof report, "missing %d: %s. ", n_missing, missing);
    if (n_unexpected) add(report, sizeof report, "unexpected %d: %s. ", n_unexpected, unexpected);
    if (n_mismatched) add(report, sizeof report, "mismatched %d: %s. ", n_mismatched, mismatched);
    int rc = 0;
    /* every parameter of the model missing, and nothing else there: an empty /params group where
     * a checkpoint always has some — a damaged group, not another model */
    if (!*damaged && p->n > 0 && n_missing == p->n && in_file.n == 0)
        snprintf(damaged, sizeof damaged, "the /params group lists no parameters");
    /* Everything is read into staging buffers first and copied into the model only when all of
     * it succeeded: a load that fails half-way (optimizer of another kind, a truncated file)
     * must leave the model and the optimizer as they were, not half-overwritten. */
    Staged stage = {0};
    int64_t ostep = -1;
    if (*damaged) {
        base_errf(err, errlen, "%s: corrupt file: %s", path, damaged);
        rc = -1;
    } else if (*report && strict) {
        base_errf(err, errlen, "%s: checkpoint does not match the model: %s(non-strict loading takes what matches)", path, report);
        rc = -1;
    } else {
        if (err && errlen) base_errf(err, errlen, "%s%s", *report ? "partial load: " : "", report);
        for (int i = 0; i < p->n && rc == 0; i++) {
            if (!match[i]) continue;
            hid_t ds = H5Dopen2(gp, p->items[i].name, H5P_DEFAULT);
            if (stage_read(&stage, ds, p->items[i].value) != 0) {
                base_errf(err, errlen, "%s: corrupt file: reading /params/%s failed (a checksum mismatch or truncated data)",
                          path, p->items[i].name);
                rc = -1;
            }
            H5Dclose(ds);
        }
        if (rc == 0 && o && o->exp_avg && H5Lexists(f, "optim", H5P_DEFAULT) > 0) {
            hid_t go = H5Gopen2(f, "optim", H5P_DEFAULT);
            int64_t kind = -1, step = 0;
            bool attrs = go >= 0 && read_attr_i64(go, "kind", &kind) && read_attr_i64(go, "step", &step);
            if (!attrs) {
                base_errf(err, errlen, "%s: corrupt file: the optimizer's attributes (/optim kind, step) cannot be read",
                          path);
                rc = -1;
            } else if (kind != o->cfg.kind) {
                base_errf(err, errlen, "%s: optimizer state is of kind %lld, the run uses kind %d", path, (long long)kind,
                          (int)o->cfg.kind);
                rc = -1;
            }
            const char *names[2] = {"exp_avg", "exp_avg_sq"};
            Tensor *state[2] = {o->exp_avg, o->exp_avg_sq};
            TensorScope *s = tensor_scope_begin(); /* the views below */
            for (int k = 0; k < 2 && rc == 0; k++) {
                if (!state[k]) continue;
                htri_t ge = rc == 0 ? H5Lexists(go, names[k], H5P_DEFAULT) : 0;
                if (ge < 0) {
                    base_errf(err, errlen, "%s: corrupt file: the link to /optim/%s cannot be read", path, names[k]);
                    rc = -1;
                    continue;
                }
                if (ge == 0) {
                    /* strict: a state missing for a matched model would silently restart it */
                    if (strict) {
                        base_errf(err, errlen, "%s: /optim/%s is missing", path, names[k]);
                        rc = -1;
                    }
                    continue;
                }
                hid_t g = H5Gopen2(go, names[k], H5P_DEFAULT);
                int64_t off = 0;
                for (int i = 0; i < p->n && rc == 0; i++) {
                    const Tensor *v = p->items[i].value;
                    Tensor *dst = tensor_view_at(state[k], v->ndim, v->shape, off);
                    off += tensor_numel(v);
                    if (!match[i]) continue;
                    htri_t le = g >= 0 ? H5Lexists(g, p->items[i].name, H5P_DEFAULT) : -1;
                    if (le <= 0) {
                        /* a save writes every state tensor of the parameters it writes: one absent
                         * beside its parameter is a damaged file too */
                        if (strict || le < 0) {
                            base_errf(err, errlen, "%s: corrupt file: /optim/%s/%s %s", path, names[k], p->items[i].name,
                                      le < 0 ? "cannot be read" : "is missing");
                            rc = -1;
                        }
                        continue;
                    }
                    hid_t ds = H5Dopen2(g, p->items[i].name, H5P_DEFAULT);
                    char why[512];
                    if (ds < 0 || describe_mismatch(ds, dst, why, sizeof why) || stage_read(&stage, ds, dst) != 0) {
                        base_errf(err, errlen, "%s: corrupt file: /optim/%s/%s: the optimizer state does not read back",
                                  path, names[k], p->items[i].name);
                        rc = -1;
                    }
                    if (ds >= 0) H5Dclose(ds);
                }
                H5Gclose(g);
            }
            if (rc == 0) ostep = step;
            H5Gclose(go);
            if (rc == 0) stage_commit(&stage);
            tensor_scope_end(s);
        } else if (rc == 0) {
            stage_commit(&stage);
        }
        if (rc == 0 && ostep >= 0) o->step = ostep;
    }
    stage_free(&stage);
    free(match);
    H5Gclose(gp);
    if (rc == 0 && meta) {
        int64_t v = 0;
        meta->step = read_attr_i64(f, "step", &v) ? v : 0;
        meta->rng.seed = read_attr_i64(f, "rng_seed", &v) ? (uint64_t)v : 0;
        meta->rng.stream = read_attr_i64(f, "rng_stream", &v) ? (uint64_t)v : 0;
        meta->rng.offset = read_attr_i64(f, "rng_offset", &v) ? (uint64_t)v : 0;
        meta->config_json = base_h5_attr_read_str(f, "config", SIZE_MAX);
    }
    H5Fclose(f);
    return rc;
}
