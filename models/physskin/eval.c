/* models/physskin/eval.c — `anima physskin eval` (eval.h): held-out shapes, the checkpoint and
 * its ablations at the mesh vertices, the baselines, one markdown table. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/par.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "datasets/corpus/cache.h"
#include "datasets/geometry/geometry.h"
#include "datasets/geometry/procedural.h"
#include "datasets/mesh/mesh.h"
#include "eval.h"
#include "losses.h"
#include "model.h"
#include "optim/checkpoint.h"

#define CHUNK 4096         /* query points per decoder call (as infer.c) */
#define SEED_STRIDE 1000003ull /* data.c: shape g of a corpus has seed c.seed·1000003 + g */

/* one held-out shape: the training-side view (surface pool, cubature candidates) plus the mesh
 * vertices where the metrics are taken and the rig weights when it has any */
typedef struct {
    char name[96];
    PsShape s;      /* surface pool + normals, cubature candidates, volume (normalized frame) */
    int64_t nv;
    float *verts;   /* nv × 3, normalized frame */
    int nbones;
    float *rig;     /* nv × nbones, or NULL */
    uint64_t seed;  /* procedural: the generating seed */
} EvalShape;

static void shape_free(EvalShape *e) {
    free(e->s.surface), free(e->s.surface_normal), free(e->s.cubature);
    free(e->verts), free(e->rig);
    memset(e, 0, sizeof *e);
}

static float *dup_floats(const float *x, int64_t n) {
    float *y = base_malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (n > 0) memcpy(y, x, sizeof(float) * (size_t)n);
    return y;
}

/* fills e from a preprocessed mesh (takes the surface and cubature arrays out of pp) */
static void shape_from_pp(EvalShape *e, const char *category, DsPreprocessed *pp) {
    snprintf(e->s.category, sizeof e->s.category, "%s", category);
    e->s.n_surface = pp->n_surface;
    e->s.surface = pp->surface, e->s.surface_normal = pp->surface_normal;
    pp->surface = pp->surface_normal = NULL;
    e->s.n_cubature = pp->cubature.n;
    e->s.cubature = pp->cubature.x;
    pp->cubature.x = NULL;
    /* as data.c: parts thinner than a cell have no interior candidate, the mesh volume stands in */
    e->s.volume = pp->cubature.n > 0 ? pp->cubature.volume : fabs(pp->check.volume);
    e->nv = pp->mesh.nv;
    e->verts = dup_floats(pp->mesh.v, pp->mesh.nv * 3);
}

/* "procedural[:a,b]" -> category names; validated by ps_data_count first */
static int categories(const char *src, char names[][32], int max) {
    int ncat = 0;
    const char *const *all = ds_procedural_categories(&ncat);
    const char *list = strchr(src, ':');
    if (!list || !list[1] || !strcmp(list, ":all")) {
        for (int i = 0; i < ncat && i < max; i++) snprintf(names[i], 32, "%s", all[i]);
        return ncat < max ? ncat : max;
    }
    int n = 0;
    for (const char *p = list + 1; *p && n < max;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        snprintf(names[n++], 32, "%.*s", (int)len, p);
        p += len + (e ? 1 : 0);
    }
    return n;
}

static int load_procedural(const char *src, const PsConfig *c, int64_t count, EvalShape **out, int64_t *n,
                           char *err, size_t errlen) {
    int64_t dummy;
    if (ps_data_count(src, c, &dummy, err, errlen)) return -1; /* validates the category list */
    char names[32][32];
    int ncat = categories(src, names, 32);
    EvalShape *es = base_calloc((size_t)count, sizeof *es);
    DsCorpusOptions co = {.grid = (int)c->data.mesh_res, .cubature_res = (int)c->data.cubature_res,
                          .n_surface = c->data.pool_surface, .n_sharp = 0};
    int failed = 0;
    char first[1024] = "";
    /* shapes are independent and the generators thread-safe (data.c does the same) */
    int par_nt = base_par_threads(count, BASE_PAR_GRAIN);
#pragma omp parallel for schedule(dynamic, 1) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < count; i++) {
        /* the training corpus continued past its end: never one of its seeds (eval.h) */
        int64_t g = c->data.shapes + i;
        uint64_t seed = (uint64_t)c->seed * SEED_STRIDE + (uint64_t)g;
        const char *cat = names[g % ncat];
        DsProceduralShape sh;
        DsPreprocessed pp;
        DsTransform xf;
        char e[512];
        if (ds_corpus_prepare(cat, seed, 0.0f, &co, &sh, &pp, &xf, e, sizeof e)) {
#pragma omp critical(ps_eval_err)
            {
                if (!failed) snprintf(first, sizeof first, "held-out shape %lld (%s): %s", (long long)g, cat, e);
                failed = 1;
            }
            continue;
        }
        EvalShape *s = &es[i];
        snprintf(s->name, sizeof s->name, "%s#%lld", cat, (long long)g);
        shape_from_pp(s, cat, &pp);
        s->seed = seed;
        s->nbones = sh.nbones;
        /* ds_corpus_prepare: shape weights index pp's vertices */
        s->rig = sh.nbones > 0 ? dup_floats(sh.weights, pp.mesh.nv * sh.nbones) : NULL;
        ds_preprocessed_free(&pp);
        ds_procedural_free(&sh);
    }
    if (failed) {
        for (int64_t i = 0; i < count; i++) shape_free(&es[i]);
        free(es);
        snprintf(err, errlen, "--data %s: %.900s", src, first);
        return -1;
    }
    *out = es, *n = count;
    return 0;
}

/* the progress callback, when one is installed */
static void tell(const PsEvalArgs *a, PsEvalProgress p) {
    if (a->progress) a->progress(&p, a->progress_user);
}

static int load_real(const PsEvalArgs *a, const char *dir, const PsConfig *c, int64_t count, EvalShape **out,
                     int64_t *n, char *err, size_t errlen) {
    char **files;
    int64_t nf;
    if (ds_mesh_list_dir(dir, &files, &nf)) {
        snprintf(err, errlen, "--data real:%s: cannot open the directory (run datasets/fetch-real.sh?)", dir);
        return -1;
    }
    EvalShape *es = base_calloc((size_t)(nf > 0 ? nf : 1), sizeof *es);
    int64_t k = 0, min_nv = 4 * c->model.handles;
    for (int64_t i = 0; i < nf && k < count; i++) {
        char path[4400], e[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        DsMesh mesh = {0};
        DsPreprocessed pp = {0};
        DsPreprocessOptions o;
        ds_preprocess_defaults(&o);
        o.n_surface = c->data.pool_surface, o.n_dense = 0, o.n_sharp = 0, o.grid_res = (int)c->data.cubature_res;
        o.seed = 0;
        if (ds_mesh_read(path, &mesh, e, sizeof e) || ds_preprocess(&mesh, &o, &pp, e, sizeof e)) {
            tell(a, (PsEvalProgress){.event = PS_EVAL_SKIPPED, .file = files[i], .reason = e});
        } else if (pp.mesh.nv < min_nv || pp.n_surface < 1) {
            snprintf(e, sizeof e, "%lld vertices (< 4·m = %lld)", (long long)pp.mesh.nv, (long long)min_nv);
            tell(a, (PsEvalProgress){.event = PS_EVAL_SKIPPED, .file = files[i], .reason = e});
        } else {
            snprintf(es[k].name, sizeof es[k].name, "%.95s", files[i]);
            shape_from_pp(&es[k], "real", &pp);
            k++;
        }
        ds_preprocessed_free(&pp);
        ds_mesh_free(&mesh);
    }
    ds_mesh_names_free(files, nf);
    if (k == 0) {
        free(es);
        snprintf(err, errlen, "--data real:%s: no usable mesh", dir);
        return -1;
    }
    *out = es, *n = k;
    return 0;
}

static int load_cache(const char *src, int64_t count, EvalShape **out, int64_t *n, char *err, size_t errlen) {
    char path[4400];
    struct stat st;
    if (stat(src, &st) != 0) {
        snprintf(err, errlen, "--data %s: no such file or directory", src);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        /* the held-out split; a folder of real meshes has only real.h5 */
        snprintf(path, sizeof path, "%s/test.h5", src);
        if (stat(path, &st) != 0) snprintf(path, sizeof path, "%s/real.h5", src);
    } else snprintf(path, sizeof path, "%s", src);
    DsCache *cache = ds_cache_open(path, err, errlen);
    if (!cache) return -1;
    int64_t total = ds_cache_count(cache), m = total < count ? total : count;
    EvalShape *es = base_calloc((size_t)(m > 0 ? m : 1), sizeof *es);
    int rc = 0;
    for (int64_t i = 0; i < m && rc == 0; i++) {
        DsShapeRecord r;
        if ((rc = ds_cache_read_shape(cache, i, &r, err, errlen))) break;
        EvalShape *e = &es[i];
        snprintf(e->name, sizeof e->name, "%.40s/%.40s", r.category, r.id);
        snprintf(e->s.category, sizeof e->s.category, "%s", r.category);
        e->s.n_surface = r.n_surface, e->s.surface = r.surface, e->s.surface_normal = r.surface_normal;
        e->s.n_cubature = r.n_cubature, e->s.cubature = r.cubature;
        double vol = 0;
        for (int64_t j = 0; j < r.n_cubature; j++) vol += r.cubature_volume[j];
        e->s.volume = r.n_cubature > 0 ? vol : fabs(r.volume);
        e->nv = r.mesh.nv, e->verts = dup_floats(r.mesh.v, r.mesh.nv * 3);
        e->nbones = r.weights ? r.nbones : 0;
        e->rig = r.weights ? dup_floats(r.weights, r.mesh.nv * r.nbones) : NULL;
        e->seed = r.seed;
        r.surface = r.surface_normal = r.cubature = NULL;
        ds_shape_record_free(&r);
        if (e->s.n_surface < 1) {
            snprintf(err, errlen, "%s: shape %s has no surface samples", path, ds_cache_id(cache, i));
            rc = -1;
        }
    }
    ds_cache_close(cache);
    if (rc || m == 0) {
        for (int64_t i = 0; i < m; i++) shape_free(&es[i]);
        free(es);
        if (!rc) snprintf(err, errlen, "%s: no shapes", path);
        return -1;
    }
    *out = es, *n = m;
    return 0;
}

/* ---- a loaded checkpoint -------------------------------------------------------------------- */

typedef struct {
    PsConfig c;
    TensorDType dt;
    TensorScope *scope;
    NnParams p;
    PsModel m;
} Loaded;

static int model_load(const char *ckpt, Loaded *l, char *err, size_t errlen) {
    if (ps_checkpoint_config(ckpt, &l->c, err, errlen)) return -1;
    l->dt = !strcmp(l->c.model.dtype, "f64") ? TENSOR_F64 : TENSOR_F32;
    l->scope = tensor_scope_begin();
    nn_params_init(&l->p, l->scope, l->dt, 0);
    ps_model_init(&l->m, &l->p, &l->c);
    nn_params_pack(&l->p);
    if (optim_checkpoint_load(ckpt, &l->p, NULL, true, NULL, err, errlen)) {
        ps_model_free(&l->m);
        nn_params_free(&l->p);
        tensor_scope_end(l->scope);
        return -1;
    }
    return 0;
}

static void model_free(Loaded *l) {
    ps_model_free(&l->m);
    nn_params_free(&l->p);
    tensor_scope_end(l->scope);
}

/* the generalizing model's inference on one shape: encoder on n_surface points of the pool
 * (the pool is i.i.d. area samples, so its first n are a uniform draw), then W at the
 * vertices; returns the wall time of exactly that (no file I/O, no preprocessing) */
static double model_infer(const Loaded *l, const EvalShape *e, float *w) {
    double t0 = base_now();
    TensorScope *sc = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    int64_t ns = l->c.data.n_surface, k = l->m.m;
    float *pts = tensor_scope_alloc(sc, sizeof(float) * (size_t)ns * 3);
    float *nrm = tensor_scope_alloc(sc, sizeof(float) * (size_t)ns * 3);
    for (int64_t i = 0; i < ns; i++) { /* a pool smaller than n_surface repeats itself */
        int64_t j = i % e->s.n_surface;
        memcpy(pts + 3 * i, e->s.surface + 3 * j, sizeof(float) * 3);
        memcpy(nrm + 3 * i, e->s.surface_normal + 3 * j, sizeof(float) * 3);
    }
    Tensor *pt = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, ns, 3), TENSOR_F32, pts), l->dt);
    Tensor *nt = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, ns, 3), TENSOR_F32, nrm), l->dt);
    Tensor *fh = ps_handles(&l->m, ps_encode(&l->m, pt, nt));
    for (int64_t s = 0; s < e->nv; s += CHUNK) {
        int64_t q = e->nv - s < CHUNK ? e->nv - s : CHUNK;
        TensorScope *c2 = tensor_scope_begin();
        Tensor *xt = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, q, 3), TENSOR_F32, e->verts + 3 * s), l->dt);
        Tensor *wt = ps_decode(&l->m, fh, xt);
        double *buf = tensor_scope_alloc(c2, sizeof(double) * (size_t)(q * k));
        tensor_to_f64_array(wt, buf);
        for (int64_t i = 0; i < q * k; i++) w[s * k + i] = (float)buf[i];
        tensor_scope_end(c2);
    }
    ag_no_grad_end(prev);
    tensor_scope_end(sc);
    return base_now() - t0;
}

/* ---- rows ----------------------------------------------------------------------------------- */

typedef enum { ROW_MODEL, ROW_BASELINE, ROW_RIG, ROW_ABLATION } RowKind;

typedef struct {
    char name[160];
    RowKind kind;
    int64_t n;                      /* shapes with a value */
    double *orth, *cond, *bal, *t;  /* per shape (NAN: not evaluated) */
    double *comp;                   /* complementarity residual to the shape's rig (NAN: no rig) */
} Row;

static void row_init(Row *r, RowKind kind, const char *name, int64_t n) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->orth = base_malloc(sizeof(double) * (size_t)n), r->cond = base_malloc(sizeof(double) * (size_t)n);
    r->bal = base_malloc(sizeof(double) * (size_t)n), r->t = base_malloc(sizeof(double) * (size_t)n);
    r->comp = base_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) r->orth[i] = r->cond[i] = r->bal[i] = r->t[i] = r->comp[i] = NAN;
}

static void row_free(Row *r) { free(r->orth), free(r->cond), free(r->bal), free(r->t), free(r->comp); }

/* The complementarity residual ‖JᵀMB‖_F / (‖M^½J‖_F ‖M^½B‖_F) of fields w (nv × k) to the shape's
 * rig at its vertices, M uniform (the vertices are where every metric here is taken): the square
 * root of L_comp (losses.h, the same code) on the column-normalized fields. NAN without a rig. */
static double comp_residual(const EvalShape *e, const float *w, int64_t k) {
    if (!e->rig) return NAN;
    TensorScope *sc = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    Tensor *W = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, e->nv, k), TENSOR_F32, (float *)w), TENSOR_F64);
    Tensor *X = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, e->nv, 3), TENSOR_F32, e->verts), TENSOR_F64);
    Tensor *R = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, e->nv, e->nbones), TENSOR_F32, e->rig), TENSOR_F64);
    Tensor *V = tensor_full(TENSOR_SHAPE(1, e->nv), 1.0 / (double)e->nv, TENSOR_F64);
    PsLossOptions o = {.normalize = true};
    double r = sqrt(tensor_item(ps_loss_comp(&o, W, X, V, R, NULL)));
    ag_no_grad_end(prev);
    tensor_scope_end(sc);
    return r;
}

static void row_set(Row *r, int64_t i, const EvalShape *e, const float *w, int64_t nv, int64_t k, double t) {
    PsSkinMetrics m;
    ps_skin_metrics(w, nv, k, &m);
    r->orth[i] = m.orth_err, r->cond[i] = m.cond, r->bal[i] = m.balance, r->t[i] = t;
    /* the rig's own weights against themselves say nothing */
    r->comp[i] = r->kind == ROW_RIG ? NAN : comp_residual(e, w, k);
    r->n++;
}

int64_t ps_eval_mean_std(const double *v, int64_t n, double *mean, double *std) {
    int64_t k = 0;
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) k++, s += v[i];
    *mean = k ? s / (double)k : NAN;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) s2 += (v[i] - *mean) * (v[i] - *mean);
    *std = k > 1 ? sqrt(s2 / (double)(k - 1)) : 0;
    return k;
}

/* "mean ± std", plus how many values were infinite (rank-deficient Ŵ) or missing */
static void fmt_stat(char *buf, size_t len, const double *v, int64_t n, const char *numfmt) {
    double mu, sd;
    int64_t k = ps_eval_mean_std(v, n, &mu, &sd), inf = 0;
    for (int64_t i = 0; i < n; i++) inf += isinf(v[i]);
    if (k == 0) {
        if (inf) snprintf(buf, len, "inf (%lld)", (long long)inf);
        else snprintf(buf, len, "—");
        return;
    }
    char a[32], b[32];
    snprintf(a, sizeof a, numfmt, mu);
    snprintf(b, sizeof b, numfmt, sd);
    int w = snprintf(buf, len, "%s ± %s", a, b);
    if (inf > 0 && w > 0 && (size_t)w < len) snprintf(buf + w, len - (size_t)w, " (+%lld inf)", (long long)inf);
}

static void fmt_time(char *buf, size_t len, double s) {
    if (!isfinite(s)) snprintf(buf, len, "—");
    else if (s < 1) snprintf(buf, len, "%.1f ms", 1e3 * s);
    else snprintf(buf, len, "%.2f s", s);
}

/* "k=v, k=v" for every leaf where the ablation's stored config differs from the reference's */
static void diff_json(const cJSON *a, const cJSON *b, char *out, size_t len) {
    for (const cJSON *x = a ? a->child : NULL; x; x = x->next) {
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (cJSON_IsObject(x)) {
            diff_json(x, y, out, len);
            continue;
        }
        if (y && cJSON_Compare(x, y, true)) continue;
        char *v = cJSON_PrintUnformatted(x);
        size_t u = strlen(out);
        snprintf(out + u, len - u, "%s%s=%s", u ? ", " : "", x->string, v ? v : "?");
        free(v);
    }
}

static void ablation_name(const PsConfig *ref, const PsConfig *c, const char *path, char *out, size_t len) {
    char *ja = ds_config_to_json(PS_CONFIG_SCHEMA, c), *jb = ds_config_to_json(PS_CONFIG_SCHEMA, ref);
    cJSON *a = cJSON_Parse(ja), *b = cJSON_Parse(jb);
    char d[140] = "";
    diff_json(a, b, d, sizeof d);
    cJSON_Delete(a), cJSON_Delete(b);
    free(ja), free(jb);
    const char *base = strrchr(path, '/');
    snprintf(out, len, "ablation: %s", d[0] ? d : (base ? base + 1 : path));
}

/* refuses a checkpoint whose procedural training range covers an evaluation seed */
static int check_held_out(const PsConfig *c, const char *ckpt, const EvalShape *es, int64_t n, char *err,
                          size_t errlen) {
    uint64_t lo = (uint64_t)c->seed * SEED_STRIDE, hi = lo + (uint64_t)c->data.shapes;
    for (int64_t i = 0; i < n; i++)
        if (es[i].seed >= lo && es[i].seed < hi) {
            snprintf(err, errlen, "%s trained on procedural seeds [%llu, %llu), which include held-out shape %s "
                                  "(seed %llu); evaluate it with its own checkpoint first (--ckpt)", ckpt,
                     (unsigned long long)lo, (unsigned long long)hi, es[i].name, (unsigned long long)es[i].seed);
            return -1;
        }
    return 0;
}

static int eval_model_row(const char *ckpt, Row *r, RowKind kind, const PsConfig *ref, const EvalShape *es, int64_t n,
                          bool procedural, const PsEvalArgs *a, char *err, size_t errlen) {
    Loaded l;
    if (model_load(ckpt, &l, err, errlen)) return -1;
    if (procedural && check_held_out(&l.c, ckpt, es, n, err, errlen)) {
        model_free(&l);
        return -1;
    }
    char name[160];
    if (kind == ROW_ABLATION) ablation_name(ref, &l.c, ckpt, name, sizeof name);
    else {
        const char *base = strrchr(ckpt, '/');
        snprintf(name, sizeof name, "PhysSkin (%s, %lld steps)", base ? base + 1 : ckpt, (long long)l.c.train.steps);
    }
    row_init(r, kind, name, n);
    int64_t k = l.m.m;
    for (int64_t i = 0; i < n; i++) {
        float *w = base_malloc(sizeof(float) * (size_t)(es[i].nv * k));
        if (i == 0) model_infer(&l, &es[0], w); /* warm-up: first-touch allocations, thread start */
        double t = model_infer(&l, &es[i], w);
        row_set(r, i, &es[i], w, es[i].nv, k, t);
        tell(a, (PsEvalProgress){.event = PS_EVAL_SHAPE, .method = name, .shape = es[i].name, .orth = r->orth[i],
                                 .cond = r->cond[i], .balance = r->bal[i], .seconds = t});
        free(w);
    }
    model_free(&l);
    return 0;
}

static void print_table(FILE *out, const char *title, const Row *rows, int nrows, int64_t n) {
    fprintf(out, "\n%s\n\n", title);
    fprintf(out, "| method | orthogonality error ↓ | condition number ↓ | spectral balance ↑ | rig complementarity "
                 "residual ↓ | time per shape | shapes |\n");
    fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        const Row *r = &rows[i];
        char o[128], c[128], b[128], t[48], cp[128];
        fmt_stat(cp, sizeof cp, r->comp, n, "%.4f");
        fmt_stat(o, sizeof o, r->orth, n, "%.4f");
        fmt_stat(c, sizeof c, r->cond, n, "%.3g");
        fmt_stat(b, sizeof b, r->bal, n, "%.4f");
        double mt, st;
        ps_eval_mean_std(r->t, n, &mt, &st);
        fmt_time(t, sizeof t, mt);
        const char *what = r->kind == ROW_BASELINE ? " (training)" : r->kind == ROW_RIG ? "" : " (inference)";
        fprintf(out, "| %s | %s | %s | %s | %s | %s%s | %lld |\n", r->name, o, c, b, cp, t, isfinite(mt) ? what : "",
                (long long)r->n);
    }
}

/* the targets: the model within 10% of per-object optimization (or better) on each
 * metric, and inference ≥ 100× faster than per-object training */
static void print_targets(FILE *out, const Row *model, const Row *base, int64_t n, cJSON *js) {
    double mo, mc, mb, mt, bo, bc, bb, bt, sd;
    ps_eval_mean_std(model->orth, n, &mo, &sd), ps_eval_mean_std(base->orth, n, &bo, &sd);
    ps_eval_mean_std(model->cond, n, &mc, &sd), ps_eval_mean_std(base->cond, n, &bc, &sd);
    ps_eval_mean_std(model->bal, n, &mb, &sd), ps_eval_mean_std(base->bal, n, &bb, &sd);
    ps_eval_mean_std(model->t, n, &mt, &sd), ps_eval_mean_std(base->t, n, &bt, &sd);
    bool ok_o = mo <= 1.1 * bo, ok_c = mc <= 1.1 * bc, ok_b = mb >= 0.9 * bb, ok_t = bt / mt >= 100;
    fprintf(out, "\nTargets (model vs per-object optimization, means over the shapes):\n");
    fprintf(out, "- orthogonality error %.4f vs %.4f (≤ 1.1×): %s\n", mo, bo, ok_o ? "met" : "MISSED");
    fprintf(out, "- condition number %.3g vs %.3g (≤ 1.1×): %s\n", mc, bc, ok_c ? "met" : "MISSED");
    fprintf(out, "- spectral balance %.4f vs %.4f (≥ 0.9×): %s\n", mb, bb, ok_b ? "met" : "MISSED");
    fprintf(out, "- speed: per-object training %.3g s / inference %.3g s = %.0f× (≥ 100×): %s\n", bt, mt, bt / mt,
            ok_t ? "met" : "MISSED");
    if (js) {
        cJSON *t = cJSON_AddObjectToObject(js, "targets");
        cJSON_AddBoolToObject(t, "orthogonality", ok_o);
        cJSON_AddBoolToObject(t, "condition", ok_c);
        cJSON_AddBoolToObject(t, "balance", ok_b);
        cJSON_AddNumberToObject(t, "speed_ratio", bt / mt);
        cJSON_AddBoolToObject(t, "speed", ok_t);
    }
}

static cJSON *json_array(const double *v, int64_t n) {
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, isfinite(v[i]) ? cJSON_CreateNumber(v[i])
                                               : isinf(v[i]) ? cJSON_CreateString("inf") : cJSON_CreateNull());
    return a;
}

static int write_json(const char *path, cJSON *root, char *err, size_t errlen) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    char *text = cJSON_Print(root);
    FILE *f = fopen(tmp, "w");
    int bad = !f || !text || fputs(text, f) < 0 || fputc('\n', f) < 0;
    if (f) bad |= fclose(f) != 0;
    free(text);
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}

int ps_eval(const PsEvalArgs *a, FILE *out, char *err, size_t errlen) {
    PsConfig ref;
    if (ps_checkpoint_config(a->ckpt, &ref, err, errlen)) return -1;
    int64_t want = a->shapes > 0 ? a->shapes : 16;
    bool procedural = !strncmp(a->data, "procedural", 10), real = !strncmp(a->data, "real:", 5);
    EvalShape *es = NULL;
    int64_t n = 0;
    double t0 = base_now();
    int rc = procedural ? load_procedural(a->data, &ref, want, &es, &n, err, errlen)
             : real     ? load_real(a, a->data + 5, &ref, want, &es, &n, err, errlen)
                        : load_cache(a->data, want, &es, &n, err, errlen);
    if (rc) return -1;
    double t_data = base_now() - t0;
    int64_t vmin = es[0].nv, vmax = es[0].nv;
    for (int64_t i = 0; i < n; i++) vmin = es[i].nv < vmin ? es[i].nv : vmin, vmax = es[i].nv > vmax ? es[i].nv : vmax;
    tell(a, (PsEvalProgress){.event = PS_EVAL_READY, .shapes = n, .min_vertices = vmin, .max_vertices = vmax,
                             .seconds = t_data});

    /* rows: the model, the baselines, then the ablations */
    int nabl = 0;
    char *abl = a->ablations && *a->ablations ? strdup(a->ablations) : NULL;
    for (char *p = abl; p && *p; p++) nabl += *p == ',';
    if (abl) nabl++;
    Row *rows = base_calloc((size_t)(3 + nabl), sizeof *rows);
    int nrows = 0;
    rc = eval_model_row(a->ckpt, &rows[nrows], ROW_MODEL, &ref, es, n, procedural, a, err, errlen);
    if (rc == 0) nrows++;
    Row *base = NULL;
    if (rc == 0 && a->baselines) {
        base = &rows[nrows++];
        char name[160];
        snprintf(name, sizeof name, "per-object MLP (%lld steps, %lld×%lld, %d freqs)", (long long)a->baseline.steps,
                 (long long)a->baseline.layers, (long long)a->baseline.hidden, a->baseline.n_freqs);
        row_init(base, ROW_BASELINE, name, n);
        int64_t k = ref.model.handles;
        for (int64_t i = 0; i < n; i++) {
            float *w = base_malloc(sizeof(float) * (size_t)(es[i].nv * k));
            double ts;
            ps_baseline_fit(&es[i].s, &ref, &a->baseline, es[i].verts, es[i].nv, w, NULL, &ts);
            row_set(base, i, &es[i], w, es[i].nv, k, ts);
            tell(a, (PsEvalProgress){.event = PS_EVAL_SHAPE, .method = "per-object MLP", .shape = es[i].name,
                                     .training_time = true, .orth = base->orth[i], .cond = base->cond[i],
                                     .balance = base->bal[i], .seconds = ts});
            free(w);
        }
        bool any_rig = false;
        for (int64_t i = 0; i < n; i++) any_rig |= es[i].rig != NULL;
        if (any_rig) {
            Row *r = &rows[nrows++];
            row_init(r, ROW_RIG, "procedural rig weights (K = bones)", n);
            for (int64_t i = 0; i < n; i++)
                if (es[i].rig) row_set(r, i, &es[i], es[i].rig, es[i].nv, es[i].nbones, NAN);
        }
    }
    for (char *p = abl, *save = NULL; rc == 0 && p; p = NULL) {
        for (char *tok = strtok_r(p, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
            rc = eval_model_row(tok, &rows[nrows], ROW_ABLATION, &ref, es, n, procedural, a, err, errlen);
            if (rc == 0) nrows++;
        }
    }
    free(abl);
    if (rc == 0) {
        char title[4400];
        snprintf(title, sizeof title, "Skinning-matrix metrics at the mesh vertices (physskin.md §5), mean ± std over "
                 "%lld held-out shapes of %s", (long long)n, a->data);
        print_table(out, title, rows, nrows, n);
        cJSON *js = a->json ? cJSON_CreateObject() : NULL;
        if (base) print_targets(out, &rows[0], base, n, js);
        if (nabl > 0)
            fprintf(out, "\nAblation rows are named by how their stored config differs from %s.\n", a->ckpt);
        fflush(out);
        if (js) {
            cJSON_AddStringToObject(js, "ckpt", a->ckpt);
            cJSON_AddStringToObject(js, "data", a->data);
            cJSON *names = cJSON_AddArrayToObject(js, "shapes"), *nvs = cJSON_AddArrayToObject(js, "vertices");
            for (int64_t i = 0; i < n; i++) {
                cJSON_AddItemToArray(names, cJSON_CreateString(es[i].name));
                cJSON_AddItemToArray(nvs, cJSON_CreateNumber((double)es[i].nv));
            }
            cJSON *jr = cJSON_AddArrayToObject(js, "rows");
            static const char *const kinds[] = {"model", "per_object", "rig", "ablation"};
            for (int i = 0; i < nrows; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", rows[i].name);
                cJSON_AddStringToObject(o, "kind", kinds[rows[i].kind]);
                cJSON_AddItemToObject(o, "orth_err", json_array(rows[i].orth, n));
                cJSON_AddItemToObject(o, "cond", json_array(rows[i].cond, n));
                cJSON_AddItemToObject(o, "balance", json_array(rows[i].bal, n));
                cJSON_AddItemToObject(o, "time_s", json_array(rows[i].t, n));
                cJSON_AddItemToObject(o, "comp_residual", json_array(rows[i].comp, n));
                cJSON_AddItemToArray(jr, o);
            }
            rc = write_json(a->json, js, err, errlen);
            cJSON_Delete(js);
        }
    }
    for (int i = 0; i < nrows; i++) row_free(&rows[i]);
    free(rows);
    for (int64_t i = 0; i < n; i++) shape_free(&es[i]);
    free(es);
    return rc;
}
