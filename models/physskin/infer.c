/* models/physskin/infer.c — inference with a checkpoint (infer.h): the skinning file's contents
 * for a mesh, and the skinning-matrix metrics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "data.h"
#include "datasets/geometry/geometry.h"
#include "infer.h"
#include "model.h"
#include "optim/checkpoint.h"

#define CHUNK 4096 /* query points per decoder call: bounds the activations' memory */

int ps_checkpoint_config(const char *ckpt, PsConfig *c, char *err, size_t errlen) {
    OptimCheckpointMeta meta = {0};
    NnParams empty;
    nn_params_init(&empty, tensor_scope_current(), TENSOR_F32, 0);
    nn_params_pack(&empty);
    char e2[4096];
    /* non-strict on an empty model: reads only the attributes */
    int rc = optim_checkpoint_load(ckpt, &empty, NULL, false, &meta, e2, sizeof e2);
    nn_params_free(&empty);
    if (rc) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    if (!meta.config_json) {
        snprintf(err, errlen, "%s: no config stored (not a checkpoint of anima physskin train)", ckpt);
        return -1;
    }
    rc = ds_config_parse(meta.config_json, ckpt, PS_CONFIG_SCHEMA, c, err, errlen);
    free(meta.config_json);
    return rc ? rc : ps_config_validate(c, err, errlen);
}

/* W (and ∇W when g is not NULL) at n normalized points, CHUNK at a time, into w (n × m) and
 * g (n × m × 3), with respect to normalized coordinates */
static void eval_points(const PsModel *m, Tensor *fh, const float *x, int64_t n, TensorDType dt, float *w, float *g) {
    int64_t k = m->m;
    for (int64_t s = 0; s < n; s += CHUNK) {
        int64_t q = n - s < CHUNK ? n - s : CHUNK;
        TensorScope *sc = tensor_scope_begin();
        Tensor *xt = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, q, 3), TENSOR_F32, x + 3 * s), dt);
        Tensor *wt, *gt = NULL;
        if (g) ps_decode_with_grad(m, fh, xt, PS_GRAD_EXACT, 0, &wt, &gt);
        else wt = ps_decode(m, fh, xt);
        double *buf = tensor_scope_alloc(sc, sizeof(double) * (size_t)(q * k * 3));
        tensor_to_f64_array(wt, buf);
        for (int64_t i = 0; i < q * k; i++) w[s * k + i] = (float)buf[i];
        if (g) {
            tensor_to_f64_array(gt, buf);
            for (int64_t i = 0; i < q * k * 3; i++) g[s * k * 3 + i] = (float)buf[i];
        }
        tensor_scope_end(sc);
    }
}

/* eigenvalues of the symmetric k × k matrix a (destroyed) into ev: cyclic Jacobi rotations
 * (Golub & Van Loan, Matrix Computations, §8.5) until the off-diagonal part is negligible */
static void sym_eigenvalues(double *a, int64_t k, double *ev) {
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, tot = 0;
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < k; j++) *(i == j ? &tot : &off) += a[i * k + j] * a[i * k + j];
        if (off <= 1e-30 * (tot + off)) break;
        for (int64_t p = 0; p < k; p++)
            for (int64_t q = p + 1; q < k; q++) {
                double apq = a[p * k + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (a[q * k + q] - a[p * k + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), sn = t * c;
                for (int64_t r = 0; r < k; r++) { /* A ← Jᵀ A J */
                    double arp = a[r * k + p], arq = a[r * k + q];
                    a[r * k + p] = c * arp - sn * arq, a[r * k + q] = sn * arp + c * arq;
                }
                for (int64_t r = 0; r < k; r++) {
                    double apr = a[p * k + r], aqr = a[q * k + r];
                    a[p * k + r] = c * apr - sn * aqr, a[q * k + r] = sn * apr + c * aqr;
                }
            }
    }
    for (int64_t i = 0; i < k; i++) ev[i] = a[i * k + i];
}

void ps_skin_metrics(const float *W, int64_t n, int64_t k, PsSkinMetrics *out) {
    double *g = base_calloc((size_t)(k * k), sizeof *g), *nrm = base_calloc((size_t)k, sizeof *nrm);
    double *ev = base_calloc((size_t)k, sizeof *ev);
    for (int64_t i = 0; i < n; i++)
        for (int64_t a = 0; a < k; a++)
            for (int64_t b = a; b < k; b++) g[a * k + b] += (double)W[i * k + a] * W[i * k + b];
    for (int64_t a = 0; a < k; a++) nrm[a] = g[a * k + a] > 0 ? sqrt(g[a * k + a]) : 1;
    double fro = 0;
    for (int64_t a = 0; a < k; a++)
        for (int64_t b = a; b < k; b++) {
            double v = g[a * k + b] / (nrm[a] * nrm[b]);
            g[a * k + b] = g[b * k + a] = v;
            double d = v - (a == b);
            fro += (a == b ? 1 : 2) * d * d;
        }
    out->orth_err = sqrt(fro) / (double)k;
    sym_eigenvalues(g, k, ev);
    double mx = 0, mn = INFINITY, sum = 0;
    for (int64_t i = 0; i < k; i++) {
        double l = ev[i] > 0 ? ev[i] : 0;
        mx = fmax(mx, l), mn = fmin(mn, l), sum += l;
    }
    out->cond = mn > 1e-12 * mx ? sqrt(mx / mn) : INFINITY;
    double h = 0;
    for (int64_t i = 0; i < k; i++) {
        double p = (ev[i] > 0 ? ev[i] : 0) / sum;
        if (p > 0) h -= p * log(p);
    }
    out->balance = k > 1 ? h / log((double)k) : 1;
    free(g), free(nrm), free(ev);
}

int ps_skinner_load(PsSkinner *s, const char *ckpt, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    if (ps_checkpoint_config(ckpt, &s->cfg, err, errlen)) return -1;
    snprintf(s->path, sizeof s->path, "%s", ckpt);
    s->dtype = !strcmp(s->cfg.model.dtype, "f64") ? TENSOR_F64 : TENSOR_F32;
    s->scope = tensor_scope_begin();
    nn_params_init(&s->params, s->scope, s->dtype, 0);
    ps_model_init(&s->model, &s->params, &s->cfg);
    nn_params_pack(&s->params);
    /* strict: every parameter the stored config implies must be there with its shape, so a
     * checkpoint edited or trained by other code fails here, naming the file and the tensor */
    if (optim_checkpoint_load(ckpt, &s->params, NULL, true, NULL, err, errlen)) {
        ps_skinner_free(s);
        return -1;
    }
    return 0;
}

void ps_skinner_free(PsSkinner *s) {
    if (!s->scope) return;
    ps_model_free(&s->model);
    nn_params_free(&s->params);
    tensor_scope_end(s->scope);
    memset(s, 0, sizeof *s);
}

int ps_skinner_run(PsSkinner *sk, const DsMesh *mesh, const char *name, int64_t n_cubature, DsSkinning *out,
                   PsSkinMetrics *met, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const PsConfig *c = &sk->cfg;
    DsPreprocessed pp = {0};
    DsPreprocessOptions o;
    ds_preprocess_defaults(&o);
    o.n_surface = c->data.n_surface, o.n_dense = 0, o.n_sharp = 0, o.grid_res = (int)c->data.cubature_res;
    char e2[1024];
    if (ds_preprocess(mesh, &o, &pp, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: %s", name, e2);
        return -1;
    }
    int64_t k = c->model.handles, nv = pp.mesh.nv, nf = pp.mesh.nf, nc = pp.cubature.n;
    if (nc < 1 || nv < 1 || nf < 1) {
        snprintf(err, errlen, "%s: nothing to skin (%lld vertices, %lld triangles, %lld interior points at "
                              "cubature_res %lld: is the mesh closed?)", name, (long long)nv, (long long)nf,
                 (long long)nc, (long long)c->data.cubature_res);
        ds_preprocessed_free(&pp);
        return -1;
    }
    int64_t n = n_cubature > 0 && n_cubature < nc ? n_cubature : nc;
    float *cx = base_malloc(sizeof(float) * (size_t)(n * 3)), *cw = base_malloc(sizeof(float) * (size_t)(n * k));
    float *cg = base_malloc(sizeof(float) * (size_t)(n * k * 3));
    float *vw = base_malloc(sizeof(float) * (size_t)(nv * k)), *vg = base_malloc(sizeof(float) * (size_t)(nv * k * 3));
    out->m = k, out->nc = n, out->nv = nv, out->nf = nf;
    out->cub_x = base_malloc(sizeof(double) * (size_t)(n * 3)), out->cub_vol = base_malloc(sizeof(double) * (size_t)n);
    out->cub_w = base_malloc(sizeof(double) * (size_t)(n * k)), out->cub_dw = base_malloc(sizeof(double) * (size_t)(n * k * 3));
    out->vert_x = base_malloc(sizeof(double) * (size_t)(nv * 3)), out->vert_w = base_malloc(sizeof(double) * (size_t)(nv * k));
    out->vert_dw = base_malloc(sizeof(double) * (size_t)(nv * k * 3));
    out->faces = base_malloc(sizeof(int32_t) * (size_t)(nf * 3));
    /* n of the nc candidates, evenly strided (deterministic); each keeps volume·nc/n so that
     * Σ V_c still integrates the shape's volume */
    for (int64_t i = 0; i < n; i++) {
        int64_t j = (int64_t)((double)i * (double)nc / (double)n);
        memcpy(cx + 3 * i, pp.cubature.x + 3 * j, sizeof(float) * 3);
        out->cub_vol[i] = pp.cubature.w[j] * (double)nc / (double)n;
    }
    TensorScope *scope = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    const PsModel *m = &sk->model;
    Tensor *pts = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, pp.n_surface, 3), TENSOR_F32, pp.surface), sk->dtype);
    Tensor *nrm =
        tensor_cast(tensor_from_data(TENSOR_SHAPE(1, pp.n_surface, 3), TENSOR_F32, pp.surface_normal), sk->dtype);
    Tensor *fh = ps_handles(m, ps_encode(m, pts, nrm));
    /* ∇W at the vertices too: Gaussians bound to the surface need the full local F (§8) */
    eval_points(m, fh, pp.mesh.v, nv, sk->dtype, vw, vg);
    eval_points(m, fh, cx, n, sk->dtype, cw, cg);
    ag_no_grad_end(prev);
    tensor_scope_end(scope);
    if (met) ps_skin_metrics(vw, nv, k, met);
    /* everything stays in the normalized frame the network saw: the fields and their gradients
     * are defined there, and a scene's pose then means the same for every mesh whatever its
     * file's units; center/scale record the way back */
    for (int64_t i = 0; i < n * 3; i++) out->cub_x[i] = cx[i];
    for (int64_t i = 0; i < n * k; i++) out->cub_w[i] = cw[i];
    for (int64_t i = 0; i < n * k * 3; i++) out->cub_dw[i] = cg[i];
    for (int64_t i = 0; i < nv * 3; i++) out->vert_x[i] = pp.mesh.v[i];
    for (int64_t i = 0; i < nv * k; i++) out->vert_w[i] = vw[i];
    for (int64_t i = 0; i < nv * k * 3; i++) out->vert_dw[i] = vg[i];
    memcpy(out->faces, pp.mesh.f, sizeof(int32_t) * (size_t)(nf * 3));
    snprintf(out->source, sizeof out->source, "%.*s", (int)sizeof out->source - 1, sk->path);
    out->has_frame = true;
    for (int i = 0; i < 3; i++) out->center[i] = pp.xf.center[i];
    out->scale = pp.xf.scale;
    free(cx), free(cw), free(cg), free(vw), free(vg);
    ds_preprocessed_free(&pp);
    /* a checkpoint trained to NaN gives NaN fields: say so here rather than in the simulator */
    if (ds_skinning_validate(out, name, err, errlen)) {
        ds_skinning_free(out);
        return -1;
    }
    return 0;
}

int ps_skin_checkpoint(const char *ckpt, const DsMesh *mesh, const char *name, DsSkinning *out, char *err,
                       size_t errlen) {
    PsSkinner ps;
    if (ps_skinner_load(&ps, ckpt, err, errlen)) return -1;
    int rc = ps_skinner_run(&ps, mesh, name, 0, out, NULL, err, errlen);
    ps_skinner_free(&ps);
    return rc;
}

int ps_skin_mesh(const char *ckpt, const char *mesh_path, const char *out, int64_t n_cubature, char *err,
                 size_t errlen) {
    PsSkinner sk;
    if (ps_skinner_load(&sk, ckpt, err, errlen)) return -1;
    DsMesh mesh = {0};
    DsSkinning s = {0};
    PsSkinMetrics met;
    int rc = -1;
    if (ds_mesh_read(mesh_path, &mesh, err, errlen)) goto done;
    if (ps_skinner_run(&sk, &mesh, mesh_path, n_cubature, &s, &met, err, errlen)) goto done;
    base_logf(BASE_LOG_INFO, "%s: %lld vertices, %lld cubature points, %lld handles; at the vertices: orthogonality "
              "error %.4g, condition number %.4g, spectral balance %.4f",
              mesh_path, (long long)s.nv, (long long)s.nc, (long long)s.m, met.orth_err, met.cond, met.balance);
    rc = ds_skinning_write(out, &s, err, errlen);
done:
    ds_skinning_free(&s);
    ds_mesh_free(&mesh);
    ps_skinner_free(&sk);
    return rc;
}
