/* models/physskin/infer.c — ps_skin_mesh (infer.h). */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "datasets/geometry.h"
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

static int write_ds(hid_t loc, const char *name, int rank, const hsize_t *dims, const float *data) {
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = d < 0 ? -1 : H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (d >= 0) H5Dclose(d);
    H5Sclose(sp);
    return st < 0 ? -1 : 0;
}

static int write_attr(hid_t loc, const char *name, int n, const double *v) {
    hsize_t dim = (hsize_t)n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    hid_t a = H5Acreate2(loc, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_DOUBLE, v);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return st < 0 ? -1 : 0;
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
    double *g = calloc((size_t)(k * k), sizeof *g), *nrm = calloc((size_t)k, sizeof *nrm);
    double *ev = calloc((size_t)k, sizeof *ev);
    if (!g || !nrm || !ev) abort();
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

int ps_skin_mesh(const char *ckpt, const char *mesh_path, const char *out, int64_t n_cubature, char *err,
                 size_t errlen) {
    PsConfig c;
    if (ps_checkpoint_config(ckpt, &c, err, errlen)) return -1;
    TensorDType dt = !strcmp(c.model.dtype, "f64") ? TENSOR_F64 : TENSOR_F32;
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, dt, 0);
    PsModel m;
    ps_model_init(&m, &p, &c);
    nn_params_pack(&p);
    DsMesh mesh = {0};
    DsPreprocessed pp = {0};
    int rc = -1;
    float *vw = NULL, *cx = NULL, *cw = NULL, *cg = NULL, *cv = NULL, *vx = NULL;
    if (optim_checkpoint_load(ckpt, &p, NULL, true, NULL, err, errlen)) goto done;
    if (ds_mesh_read(mesh_path, &mesh, err, errlen)) goto done;
    DsPreprocessOptions o;
    ds_preprocess_defaults(&o);
    o.n_surface = c.data.n_surface, o.n_dense = 0, o.n_sharp = 0, o.grid_res = (int)c.data.cubature_res;
    if (ds_preprocess(&mesh, &o, &pp, err, errlen)) goto done;
    int64_t k = c.model.handles, nv = pp.mesh.nv, nc = pp.cubature.n;
    int64_t n = n_cubature > 0 && n_cubature < nc ? n_cubature : nc;
    vw = malloc(sizeof(float) * (size_t)(nv * k + 1));
    cx = malloc(sizeof(float) * (size_t)(n * 3 + 1)), cv = malloc(sizeof(float) * (size_t)(n + 1));
    cw = malloc(sizeof(float) * (size_t)(n * k + 1)), cg = malloc(sizeof(float) * (size_t)(n * k * 3 + 1));
    vx = malloc(sizeof(float) * (size_t)(nv * 3 + 1));
    if (!vw || !cx || !cv || !cw || !cg || !vx) abort();
    /* n of the nc candidates, evenly strided (deterministic); each keeps volume·nc/n */
    for (int64_t i = 0; i < n; i++) {
        int64_t j = (int64_t)((double)i * (double)nc / (double)n);
        memcpy(cx + 3 * i, pp.cubature.x + 3 * j, sizeof(float) * 3);
        cv[i] = (float)(pp.cubature.w[j] * (double)nc / (double)n);
    }
    bool prev = ag_no_grad_begin();
    Tensor *pts = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, pp.n_surface, 3), TENSOR_F32, pp.surface), dt);
    Tensor *nrm = tensor_cast(tensor_from_data(TENSOR_SHAPE(1, pp.n_surface, 3), TENSOR_F32, pp.surface_normal), dt);
    Tensor *fh = ps_handles(&m, ps_encode(&m, pts, nrm));
    eval_points(&m, fh, pp.mesh.v, nv, dt, vw, NULL);
    eval_points(&m, fh, cx, n, dt, cw, cg);
    ag_no_grad_end(prev);
    PsSkinMetrics met;
    ps_skin_metrics(vw, nv, k, &met);
    fprintf(stderr, "%s: %lld vertices, %lld cubature points, %lld handles; at the vertices: orthogonality error "
                    "%.4g, condition number %.4g, spectral balance %.4f\n",
            mesh_path, (long long)nv, (long long)n, (long long)k, met.orth_err, met.cond, met.balance);
    /* back to the mesh file's frame: x = x_n / s + center, ∂/∂x = s ∂/∂x_n, volumes / s³ */
    float s = pp.xf.scale;
    memcpy(vx, mesh.v, sizeof(float) * (size_t)nv * 3);
    ds_points_apply_inverse(cx, n, pp.xf);
    for (int64_t i = 0; i < n * k * 3; i++) cg[i] *= s;
    for (int64_t i = 0; i < n; i++) cv[i] /= s * s * s;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", out, (int)getpid());
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        snprintf(err, errlen, "%s: cannot create", out);
        goto done;
    }
    hid_t g = H5Gcreate2(f, "cubature", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double center[3] = {pp.xf.center[0], pp.xf.center[1], pp.xf.center[2]}, sc = s, hk = (double)k;
    int bad = write_ds(f, "vertices", 2, (hsize_t[]){(hsize_t)nv, 3}, vx) |
              write_ds(f, "weights", 2, (hsize_t[]){(hsize_t)nv, (hsize_t)k}, vw) |
              write_ds(g, "points", 2, (hsize_t[]){(hsize_t)n, 3}, cx) |
              write_ds(g, "volumes", 1, (hsize_t[]){(hsize_t)n}, cv) |
              write_ds(g, "weights", 2, (hsize_t[]){(hsize_t)n, (hsize_t)k}, cw) |
              write_ds(g, "gradients", 3, (hsize_t[]){(hsize_t)n, (hsize_t)k, 3}, cg) |
              write_attr(f, "handles", 1, &hk) | write_attr(f, "center", 3, center) | write_attr(f, "scale", 1, &sc);
    H5Gclose(g);
    bad |= H5Fclose(f) < 0;
    if (bad || rename(tmp, out) != 0) {
        unlink(tmp);
        snprintf(err, errlen, "%s: write failed", out);
        goto done;
    }
    rc = 0;
done:
    free(vw), free(cx), free(cw), free(cg), free(cv), free(vx);
    ds_preprocessed_free(&pp);
    ds_mesh_free(&mesh);
    ps_model_free(&m);
    nn_params_free(&p);
    tensor_scope_end(scope);
    return rc;
}
