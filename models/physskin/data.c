/* models/physskin/data.c — shapes and batches (data.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/par.h"
#include "base/alloc.h"
#include "data.h"
#include "datasets/corpus/cache.h"
#include "datasets/geometry/geometry.h"
#include "datasets/geometry/procedural.h"
#include "datasets/motion/rig.h"
#include "models/skelebones/rig_file.h"
#include "models/skelebones/traj.h"
#include "tensor/ops.h"

#define PROC "procedural"
#define RIGS "rigs:"

/* "procedural[:a,b,c]" -> the category list (NULL-terminated, into names[]); -1 if unknown */
static int parse_categories(const char *source, char names[][32], int max, char *err, size_t errlen) {
    int ncat = 0;
    const char *const *all = ds_procedural_categories(&ncat);
    const char *list = source + strlen(PROC);
    if (*list == 0 || !strcmp(list, ":") || !strcmp(list, ":all")) {
        for (int i = 0; i < ncat && i < max; i++) snprintf(names[i], 32, "%s", all[i]);
        return ncat < max ? ncat : max;
    }
    if (*list != ':') {
        snprintf(err, errlen, "--data %s: expected procedural:<category>,... or a dataset directory", source);
        return -1;
    }
    int n = 0;
    for (const char *p = list + 1; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (n == max || len == 0 || len >= 32) {
            snprintf(err, errlen, "--data %s: bad category list", source);
            return -1;
        }
        memcpy(names[n], p, len);
        names[n][len] = 0;
        if (ds_procedural_expected_genus(names[n]) < 0) {
            snprintf(err, errlen, "--data %s: unknown category '%s' (known:", source, names[n]);
            for (int i = 0; i < ncat; i++) snprintf(err + strlen(err), errlen - strlen(err), " %s", all[i]);
            snprintf(err + strlen(err), errlen - strlen(err), ")");
            return -1;
        }
        n++;
        p += len + (e ? 1 : 0);
    }
    return n;
}

/* a cache file, or DIR/train.h5 for a directory from `anima dataset make` */
static int cache_path(const char *source, char *path, size_t n, char *err, size_t errlen) {
    struct stat st;
    if (stat(source, &st) != 0) {
        snprintf(err, errlen, "--data %s: no such file or directory (expected a dataset cache or "
                              "procedural:<categories>)", source);
        return -1;
    }
    snprintf(path, n, S_ISDIR(st.st_mode) ? "%s/train.h5" : "%s", source);
    return 0;
}

/* "rigs:a,b,..." -> the number of files (paths must not contain commas); -1 if an entry is empty */
static int64_t rigs_count(const char *source, char *err, size_t errlen) {
    const char *p = source + strlen(RIGS);
    int64_t n = 0;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= 4096) {
            snprintf(err, errlen, "--data %s: expected rigs:<rig.h5 or skinned model>,...", source);
            return -1;
        }
        n++;
        if (!e) return n;
        p = e + 1;
    }
}

/* entry i of "rigs:a,b,..." into path */
static void rigs_entry(const char *source, int64_t i, char *path, size_t n) {
    const char *p = source + strlen(RIGS);
    for (int64_t k = 0; k < i; k++) p = strchr(p, ',') + 1;
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    snprintf(path, n, "%.*s", (int)(len < n ? len : n - 1), p);
}

int ps_data_count(const char *source, const PsConfig *c, int64_t *count, char *err, size_t errlen) {
    if (!strncmp(source, RIGS, strlen(RIGS))) return (*count = rigs_count(source, err, errlen)) < 0 ? -1 : 0;
    if (!strncmp(source, PROC, strlen(PROC))) {
        char names[32][32];
        if (parse_categories(source, names, 32, err, errlen) < 0) return -1;
        *count = c->data.shapes;
        return 0;
    }
    char path[4096];
    if (cache_path(source, path, sizeof path, err, errlen)) return -1;
    DsCache *cache = ds_cache_open(path, err, errlen);
    if (!cache) return -1;
    *count = ds_cache_count(cache);
    ds_cache_close(cache);
    if (*count == 0) {
        snprintf(err, errlen, "%s: no shapes", path);
        return -1;
    }
    return 0;
}

/* The shape takes the preprocessed surface and cubature points (pp keeps its mesh) */
static void shape_take_points(PsShape *s, DsPreprocessed *pp) {
    s->n_surface = pp->n_surface;
    s->surface = pp->surface, s->surface_normal = pp->surface_normal;
    pp->surface = pp->surface_normal = NULL;
    s->n_cubature = pp->cubature.n;
    s->cubature = pp->cubature.x;
    pp->cubature.x = NULL;
    /* parts thinner than a cell have no interior candidate; the mesh volume then stands in */
    s->volume = pp->cubature.n > 0 ? pp->cubature.volume : fabs(pp->check.volume);
}

static int load_procedural(PsShape *s, const char *category, uint64_t seed, const PsConfig *c, char *err,
                           size_t errlen) {
    DsProceduralShape sh;
    if (ds_procedural_make(category, seed, (int)c->data.mesh_res, &sh, err, errlen)) return -1;
    DsPreprocessOptions o;
    ds_preprocess_defaults(&o);
    o.n_surface = c->data.pool_surface, o.n_dense = 0, o.n_sharp = 0;
    o.grid_res = (int)c->data.cubature_res, o.seed = seed;
    o.sdf = ds_procedural_sdf, o.sdf_ctx = &sh; /* exact inside test (procedural.h) */
    DsPreprocessed pp;
    int rc = ds_preprocess(&sh.mesh, &o, &pp, err, errlen);
    if (rc == 0) {
        snprintf(s->category, sizeof s->category, "%s", category);
        shape_take_points(s, &pp);
        ds_preprocessed_free(&pp);
        /* the category's rig, its weights from the generating primitives at the very points the
         * batches draw (the mesh-vertex weights would need an interpolation inside) */
        s->nbones = sh.nbones;
        if (sh.nbones > 0) {
            s->rig_surface = base_malloc(sizeof(float) * (size_t)(s->n_surface * sh.nbones));
            ds_procedural_weights(&sh.scene, sh.nbones, s->surface, s->n_surface, (float)c->loss.rig_sigma,
                                  s->rig_surface);
            s->rig_cubature = base_malloc(sizeof(float) * (size_t)((s->n_cubature > 0 ? s->n_cubature : 1) * sh.nbones));
            if (s->n_cubature > 0)
                ds_procedural_weights(&sh.scene, sh.nbones, s->cubature, s->n_cubature, (float)c->loss.rig_sigma,
                                      s->rig_cubature);
        }
    }
    ds_procedural_free(&sh);
    return rc;
}

/* A rig stored at the mesh vertices (nv × nb) carried to n other points: inverse squared distance
 * weights over the RIG_K nearest vertices, rows summing to one. Surface samples lie on the mesh,
 * where the nearest vertices are its own neighbours; an interior point blends the parts around
 * it, as LBS weights fade across a joint. Brute force: nv × n distances per shape, once. */
#define RIG_K 4
static float *rig_at(const float *verts, const float *w, int64_t nv, int nb, const float *x, int64_t n) {
    float *out = base_malloc(sizeof(float) * (size_t)((n > 0 ? n : 1) * nb));
    int par_nt = base_par_threads(n, 64);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < n; i++) {
        int64_t best[RIG_K];
        double bd[RIG_K];
        for (int k = 0; k < RIG_K; k++) best[k] = -1, bd[k] = INFINITY;
        for (int64_t v = 0; v < nv; v++) {
            double d = 0;
            for (int a = 0; a < 3; a++) d += ((double)x[3 * i + a] - verts[3 * v + a]) * ((double)x[3 * i + a] - verts[3 * v + a]);
            if (d >= bd[RIG_K - 1]) continue;
            int k = RIG_K - 1;
            while (k > 0 && bd[k - 1] > d) bd[k] = bd[k - 1], best[k] = best[k - 1], k--;
            bd[k] = d, best[k] = v;
        }
        double acc[DS_RIG_MAX_BONES] = {0}, tot = 0;
        for (int k = 0; k < RIG_K && best[k] >= 0; k++) {
            double f = 1.0 / (bd[k] + 1e-12);
            for (int j = 0; j < nb; j++) acc[j] += f * w[best[k] * nb + j];
            tot += f;
        }
        double sum = 0;
        for (int j = 0; j < nb; j++) sum += acc[j] / tot;
        for (int j = 0; j < nb; j++) out[i * nb + j] = (float)(sum > 0 ? acc[j] / tot / sum : 0);
    }
    return out;
}

/* A rigged shape from a file: a Skelebones rig.h5 (its rest points, faces and SSDR weights;
 * models/skelebones/rig_file.h) or an animated skinned model read through libassimp (its rest
 * mesh and skin weights, models/skelebones/traj.h). The rest mesh is preprocessed as a real mesh
 * is (normalized, surface samples, winding-number interior candidates) and the rig's vertex weights
 * are carried to the points by rig_at. The mesh must be a closed surface: a rig of a point cloud
 * (a gs4d run's Gaussians) has no faces and is refused. */
static int load_rig_file(PsShape *s, const char *path, uint64_t seed, const PsConfig *c, char *err, size_t errlen) {
    DsMesh mesh = {0};
    float *weights = NULL;
    int nb = 0, rc = -1;
    const char *dot = strrchr(path, '.');
    if (dot && !strcmp(dot, ".h5")) {
        SbRigFile r;
        if (sb_rig_file_read(path, &r, err, errlen)) return -1;
        mesh.nv = r.npoints, mesh.nf = r.nfaces, mesh.v = r.rest, mesh.f = r.faces;
        weights = r.weights, nb = r.nbones;
        r.rest = r.weights = NULL, r.faces = NULL;
        sb_rig_file_free(&r);
    } else {
        SbTraj t;
        if (sb_traj_read_assimp(path, 1, 0, &t, err, errlen)) return -1;
        if (t.true_bones < 1) {
            sb_traj_free(&t);
            snprintf(err, errlen, "%s: the model has no skin weights", path);
            return -1;
        }
        mesh.nv = t.npoints, mesh.nf = t.nfaces, mesh.v = t.rest, mesh.f = t.faces;
        weights = t.true_weights, nb = t.true_bones;
        t.rest = t.true_weights = NULL, t.faces = NULL;
        sb_traj_free(&t);
    }
    if (mesh.nf < 1) {
        snprintf(err, errlen, "%s: the rig has no faces (a closed mesh is needed for the interior points)", path);
        goto done;
    }
    if (nb > DS_RIG_MAX_BONES) {
        snprintf(err, errlen, "%s: %d bones (at most %d)", path, nb, DS_RIG_MAX_BONES);
        goto done;
    }
    DsPreprocessOptions o;
    ds_preprocess_defaults(&o);
    o.n_surface = c->data.pool_surface, o.n_dense = 0, o.n_sharp = 0;
    o.grid_res = (int)c->data.cubature_res, o.seed = seed;
    DsPreprocessed pp;
    if (ds_preprocess(&mesh, &o, &pp, err, errlen)) goto done;
    const char *base = strrchr(path, '/');
    snprintf(s->category, sizeof s->category, "%.31s", base ? base + 1 : path); /* the file's name */
    shape_take_points(s, &pp);
    /* the normalized copy keeps the vertex order, so the weights stay on their vertices */
    s->nbones = nb;
    s->rig_surface = rig_at(pp.mesh.v, weights, pp.mesh.nv, nb, s->surface, s->n_surface);
    s->rig_cubature = rig_at(pp.mesh.v, weights, pp.mesh.nv, nb, s->cubature, s->n_cubature);
    ds_preprocessed_free(&pp);
    rc = 0;
done:
    free(mesh.v), free(mesh.f), free(weights);
    return rc;
}

/* Shapes [d->begin, d->begin + d->n) of "rigs:..." (one by one: HDF5 and assimp readers) */
static int load_rigs(PsData *d, const char *source, const PsConfig *c, PsDataProgressFn fn, void *user, char *err,
                     size_t errlen) {
    for (int64_t i = 0; i < d->n; i++) {
        char path[4096];
        rigs_entry(source, d->begin + i, path, sizeof path);
        uint64_t seed = (uint64_t)c->seed * 1000003ull + (uint64_t)(d->begin + i);
        if (load_rig_file(&d->shapes[i], path, seed, c, err, errlen)) {
            ps_data_free(d);
            return -1;
        }
        if (fn) fn(i + 1, d->n, user);
    }
    return 0;
}

/* Shapes [d->begin, d->begin + d->n) of a cache (HDF5 is not thread-safe here: one by one). */
static int load_cache(PsData *d, const char *source, PsDataProgressFn fn, void *user, char *err, size_t errlen) {
    char path[4096];
    if (cache_path(source, path, sizeof path, err, errlen)) return -1;
    DsCache *cache = ds_cache_open(path, err, errlen);
    if (!cache) return -1;
    int rc = 0;
    for (int64_t i = 0; i < d->n && rc == 0; i++) {
        DsShapeRecord r;
        if ((rc = ds_cache_read_shape(cache, d->begin + i, &r, err, errlen))) break;
        PsShape *s = &d->shapes[i];
        snprintf(s->category, sizeof s->category, "%s", r.category);
        s->n_surface = r.n_surface, s->surface = r.surface, s->surface_normal = r.surface_normal;
        s->n_cubature = r.n_cubature, s->cubature = r.cubature;
        double vol = 0;
        for (int64_t k = 0; k < r.n_cubature; k++) vol += r.cubature_volume[k];
        s->volume = r.n_cubature > 0 ? vol : fabs(r.volume);
        /* the stored rig (procedural shapes; real meshes have none) at the batch's points */
        if (r.weights && r.nbones > 0 && r.nbones <= DS_RIG_MAX_BONES && r.mesh.nv > 0) {
            s->nbones = r.nbones;
            s->rig_surface = rig_at(r.mesh.v, r.weights, r.mesh.nv, r.nbones, r.surface, r.n_surface);
            s->rig_cubature = rig_at(r.mesh.v, r.weights, r.mesh.nv, r.nbones, r.cubature, r.n_cubature);
        }
        r.surface = r.surface_normal = r.cubature = NULL;
        ds_shape_record_free(&r);
        if (s->n_surface < 1) {
            snprintf(err, errlen, "%s: shape %s has no surface samples", path, ds_cache_id(cache, d->begin + i));
            rc = -1;
        }
        if (!rc && fn) fn(i + 1, d->n, user);
    }
    ds_cache_close(cache);
    if (rc) ps_data_free(d);
    return rc;
}

int ps_data_load(PsData *d, const char *source, const PsConfig *c, int64_t begin, int64_t end, char *err,
                 size_t errlen) {
    return ps_data_load_progress(d, source, c, begin, end, NULL, NULL, err, errlen);
}

int ps_data_load_progress(PsData *d, const char *source, const PsConfig *c, int64_t begin, int64_t end,
                          PsDataProgressFn fn, void *user, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    if (ps_data_count(source, c, &d->total, err, errlen)) return -1;
    if (begin < 0 || end > d->total || begin >= end) {
        snprintf(err, errlen, "--data %s: empty shard [%lld, %lld) of %lld shapes", source, (long long)begin,
                 (long long)end, (long long)d->total);
        return -1;
    }
    d->begin = begin, d->n = end - begin;
    d->shapes = base_calloc((size_t)d->n, sizeof *d->shapes);
    if (!strncmp(source, RIGS, strlen(RIGS))) return load_rigs(d, source, c, fn, user, err, errlen);
    if (strncmp(source, PROC, strlen(PROC))) return load_cache(d, source, fn, user, err, errlen);
    char names[32][32];
    int ncat = parse_categories(source, names, 32, err, errlen);
    int failed = 0;
    int64_t done = 0;
    char first_err[1024] = "";
    /* shapes are independent; the generators are thread-safe (plain arrays, Philox) */
    int par_nt = base_par_threads(d->n, BASE_PAR_GRAIN);
#pragma omp parallel for schedule(dynamic, 1) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < d->n; i++) {
        int64_t g = begin + i;
        char e[512];
        uint64_t seed = (uint64_t)c->seed * 1000003ull + (uint64_t)g;
        if (load_procedural(&d->shapes[i], names[g % ncat], seed, c, e, sizeof e)) {
#pragma omp critical(ps_data_err)
            {
                if (!failed) snprintf(first_err, sizeof first_err, "shape %lld (%s): %s", (long long)g,
                                      names[g % ncat], e);
                failed = 1;
            }
        }
        if (fn) {
            /* one report at a time, in order (the callback draws) */
#pragma omp critical(ps_data_progress)
            fn(++done, d->n, user);
        }
    }
    if (failed) {
        snprintf(err, errlen, "--data %s: %.900s", source, first_err);
        ps_data_free(d);
        return -1;
    }
    return 0;
}

void ps_data_free(PsData *d) {
    for (int64_t i = 0; d->shapes && i < d->n; i++) {
        free(d->shapes[i].surface), free(d->shapes[i].surface_normal);
        free(d->shapes[i].cubature);
        free(d->shapes[i].rig_surface), free(d->shapes[i].rig_cubature);
    }
    free(d->shapes);
    memset(d, 0, sizeof *d);
}

/* ---- batches ------------------------------------------------------------------------------- */

static uint64_t draw_u64(TensorRng *g) {
    uint32_t r[4];
    tensor_philox(g->seed, g->stream, g->offset++, r);
    return ((uint64_t)r[0] << 32) | r[1];
}

static int64_t draw_below(TensorRng *g, int64_t n) {
    return (int64_t)(((unsigned __int128)draw_u64(g) * (uint64_t)n) >> 64);
}

/* k indices in [0, n): without replacement when k ≤ n (rejection on a bitmap for k ≤ n/2,
 * a partial Fisher–Yates otherwise), uniform with replacement when k > n */
static void sample_indices(TensorRng *g, int64_t n, int64_t k, int64_t *out) {
    if (k > n) {
        for (int64_t i = 0; i < k; i++) out[i] = draw_below(g, n);
        return;
    }
    if (2 * k <= n) {
        unsigned char *seen = base_calloc((size_t)n / 8 + 1, 1);
        for (int64_t i = 0; i < k;) {
            int64_t j = draw_below(g, n);
            if (seen[j >> 3] & (1u << (j & 7))) continue;
            seen[j >> 3] |= (unsigned char)(1u << (j & 7));
            out[i++] = j;
        }
        free(seen);
        return;
    }
    int64_t *p = base_malloc(sizeof *p * (size_t)n);
    for (int64_t i = 0; i < n; i++) p[i] = i;
    for (int64_t i = 0; i < k; i++) {
        int64_t j = i + draw_below(g, n - i), t = p[i];
        p[i] = p[j], p[j] = t;
        out[i] = p[i];
    }
    free(p);
}

void ps_batch_make(const PsData *d, const int64_t *idx, int64_t B, const PsConfig *c, TensorRng *g, TensorDType dt,
                   PsBatch *out) {
    int64_t Ns = c->data.n_surface, C = c->data.n_cubature, m = c->model.handles;
    double *pts = base_malloc(sizeof(double) * (size_t)(B * Ns * 3)), *nrm = base_malloc(sizeof(double) * (size_t)(B * Ns * 3));
    double *x = base_malloc(sizeof(double) * (size_t)(B * C * 3)), *v = base_malloc(sizeof(double) * (size_t)(B * C));
    int64_t *sel = base_malloc(sizeof(int64_t) * (size_t)(Ns > C ? Ns : C));
    int nb = 0;
    bool rigged = true;
    for (int64_t b = 0; b < B; b++) {
        const PsShape *s = &d->shapes[idx[b]];
        rigged = rigged && s->nbones > 0;
        if (s->nbones > nb) nb = s->nbones;
    }
    double *rig = rigged ? base_calloc((size_t)(B * C * nb), sizeof(double)) : NULL;
    for (int64_t b = 0; b < B; b++) {
        const PsShape *s = &d->shapes[idx[b]];
        sample_indices(g, s->n_surface, Ns, sel);
        for (int64_t i = 0; i < Ns; i++)
            for (int j = 0; j < 3; j++) {
                pts[(b * Ns + i) * 3 + j] = s->surface[sel[i] * 3 + j];
                nrm[(b * Ns + i) * 3 + j] = s->surface_normal[sel[i] * 3 + j];
            }
        /* cubature points: the paper's candidate set is surface samples plus interior grid
         * points (§IV-A); each carries V_c = volume / C (physskin.md §4) */
        int64_t ns = s->n_cubature > 0 ? (int64_t)llround(c->data.surface_fraction * (double)C) : C;
        int64_t ni = C - ns;
        sample_indices(g, s->n_surface, ns, sel);
        for (int64_t i = 0; i < ns; i++) {
            for (int j = 0; j < 3; j++) x[(b * C + i) * 3 + j] = s->surface[sel[i] * 3 + j];
            for (int j = 0; rig && j < s->nbones; j++)
                rig[(b * C + i) * nb + j] = s->rig_surface[sel[i] * s->nbones + j];
        }
        if (ni > 0) {
            sample_indices(g, s->n_cubature, ni, sel);
            for (int64_t i = 0; i < ni; i++) {
                for (int j = 0; j < 3; j++) x[(b * C + ns + i) * 3 + j] = s->cubature[sel[i] * 3 + j];
                for (int j = 0; rig && j < s->nbones; j++)
                    rig[(b * C + ns + i) * nb + j] = s->rig_cubature[sel[i] * s->nbones + j];
            }
        }
        for (int64_t i = 0; i < C; i++) v[b * C + i] = s->volume / (double)C;
    }
    out->points = tensor_from_f64(TENSOR_SHAPE(B, Ns, 3), dt, pts);
    out->normals = tensor_from_f64(TENSOR_SHAPE(B, Ns, 3), dt, nrm);
    out->x = tensor_from_f64(TENSOR_SHAPE(B, C, 3), dt, x);
    out->v = tensor_from_f64(TENSOR_SHAPE(B, C), dt, v);
    out->z = tensor_mul_scalar(tensor_randn_with(g, TENSOR_SHAPE(B, c->data.n_z, 12 * m), dt), c->loss.z_sigma);
    out->rig = rig ? tensor_from_f64(TENSOR_SHAPE(B, C, nb), dt, rig) : NULL;
    free(pts), free(nrm), free(x), free(v), free(sel), free(rig);
}
