/* models/partmm/regress.c — models/partmm/regress.h: the MLP and GRU regressors R_J → T_B.
 *
 * The trained weights live in the PmRegress as one plain float array (the packed NnParams
 * buffer), not in tensors: tensor scopes nest as a stack, so a model that outlives the call
 * which trained it cannot keep a scope of its own. Each train and predict call opens a scope,
 * rebuilds the modules in it (same registration order, so the same flat layout), copies the
 * weights in or out, and closes it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/errbuf.h"
#include "base/mat3.h"
#include "nn/gru.h"
#include "nn/modules.h"
#include "optim/optim.h"
#include "regress.h"

#define PM_MLP_MAX_LAYERS 16
#define PM_PROGRESS_EVERY 10
#define PM_PREDICT_CHUNK 1024 /* frames per forward at prediction (bounds the memory) */

struct PmRegress {
    PmRegressOptions o; /* defaults filled in */
    int J, B;
    int64_t in_dim, out_dim; /* 6J per frame; 9B */
    float *tmean;            /* B × 3: the translations' mean over the training frames */
    float tscale;            /* one scale for all translations (their RMS about the mean) */
    int64_t nweights;
    float *weights; /* the packed parameters */
};

typedef struct {
    NnLinear mlp[PM_MLP_MAX_LAYERS]; /* MLP: hidden layers */
    NnGru gru;                       /* GRU */
    NnLinear head;                   /* hidden → 9B */
} Net;

static void net_init(Net *n, NnParams *p, const PmRegress *r) {
    const PmRegressOptions *o = &r->o;
    if (o->kind == PM_REGRESS_MLP) {
        int64_t in = r->in_dim * o->window;
        for (int k = 0; k < o->layers; k++) {
            char name[32];
            snprintf(name, sizeof name, "mlp.%d", k);
            nn_linear_init(&n->mlp[k], p, name, k ? o->hidden : in, o->hidden, true);
        }
    } else
        nn_gru_init(&n->gru, p, "gru", r->in_dim, o->hidden, o->layers, true);
    nn_linear_init(&n->head, p, "head", o->hidden, r->out_dim, true);
}

/* x (N, window, 6J) → (N, 9B) */
static Tensor *net_forward(const Net *n, const PmRegress *r, Tensor *x) {
    const PmRegressOptions *o = &r->o;
    Tensor *h;
    if (o->kind == PM_REGRESS_MLP) {
        h = tensor_reshape(x, TENSOR_SHAPE(x->shape[0], -1));
        for (int k = 0; k < o->layers; k++) h = tensor_relu(nn_linear_forward(&n->mlp[k], h));
    } else {
        Tensor *hn;
        nn_gru_forward(&n->gru, x, NULL, &hn);
        h = tensor_squeeze(tensor_narrow(hn, 0, o->layers - 1, 1), 0);
    }
    return nn_linear_forward(&n->head, h);
}

/* ---- features --------------------------------------------------------------------------------- */

/* rot F × J × 4 → feat F × 6J (the first two columns of each joint's matrix). -1 on a zero or
 * non-finite quaternion. */
static int features(const float *rot, int F, int J, float *feat, char *err, size_t errlen) {
    for (int t = 0; t < F; t++)
        for (int j = 0; j < J; j++) {
            const float *qf = rot + ((size_t)t * J + j) * 4;
            double q[4], nn = 0;
            for (int k = 0; k < 4; k++) q[k] = qf[k], nn += q[k] * q[k];
            if (!isfinite(nn) || nn < 1e-12)
                return base_errf(err, errlen, "regressor: joint %d of frame %d has a %s quaternion", j, t,
                                 isfinite(nn) ? "zero" : "non-finite");
            nn = 1 / sqrt(nn);
            for (int k = 0; k < 4; k++) q[k] *= nn;
            double R[9];
            base_unit_quat_to_mat3(q, R);
            float *f = feat + ((size_t)t * J + j) * 6;
            for (int c = 0; c < 2; c++)
                for (int i = 0; i < 3; i++) f[c * 3 + i] = (float)R[i * 3 + c];
        }
    return 0;
}

/* the indices of frame t's window, t−W+1 .. t, clamped at 0 */
static void window_rows(int t, int W, int64_t *rows) {
    for (int w = 0; w < W; w++) {
        int s = t - (W - 1) + w;
        rows[w] = s < 0 ? 0 : s;
    }
}

/* 9 numbers per bone → [R | T] with R by Gram–Schmidt (regress.h) */
static void decode_bone(const PmRegress *r, int b, const float *y, float *out) {
    double a[3] = {y[0], y[1], y[2]}, c1[3] = {y[3], y[4], y[5]};
    double na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    if (!(na > 1e-12)) a[0] = 1, a[1] = a[2] = 0, na = 1; /* degenerate output: any axis */
    for (int i = 0; i < 3; i++) a[i] /= na;
    double d = a[0] * c1[0] + a[1] * c1[1] + a[2] * c1[2];
    double bb[3] = {c1[0] - d * a[0], c1[1] - d * a[1], c1[2] - d * a[2]};
    double nb = sqrt(bb[0] * bb[0] + bb[1] * bb[1] + bb[2] * bb[2]);
    if (!(nb > 1e-12)) { /* c1 parallel to a: the unit axis least aligned with a, orthogonalized */
        int k = fabs(a[0]) <= fabs(a[1]) && fabs(a[0]) <= fabs(a[2]) ? 0 : fabs(a[1]) <= fabs(a[2]) ? 1 : 2;
        double e[3] = {0, 0, 0};
        e[k] = 1;
        d = a[k];
        for (int i = 0; i < 3; i++) bb[i] = e[i] - d * a[i];
        nb = sqrt(bb[0] * bb[0] + bb[1] * bb[1] + bb[2] * bb[2]);
    }
    for (int i = 0; i < 3; i++) bb[i] /= nb;
    double c[3] = {a[1] * bb[2] - a[2] * bb[1], a[2] * bb[0] - a[0] * bb[2], a[0] * bb[1] - a[1] * bb[0]};
    for (int i = 0; i < 3; i++) {
        out[i * 4 + 0] = (float)a[i], out[i * 4 + 1] = (float)bb[i], out[i * 4 + 2] = (float)c[i];
        out[i * 4 + 3] = y[6 + i] * r->tscale + r->tmean[b * 3 + i];
    }
}

/* ---- options ----------------------------------------------------------------------------------- */

static int resolve_options(const PmRegressOptions *in, PmRegressOptions *o, char *err, size_t errlen) {
    *o = in ? *in : (PmRegressOptions){0};
    if (o->kind != PM_REGRESS_MLP && o->kind != PM_REGRESS_GRU)
        return base_errf(err, errlen, "regressor: unknown kind %d", (int)o->kind);
    if (o->hidden <= 0) o->hidden = 256;
    if (o->layers <= 0) o->layers = 2;
    if (o->window <= 0) o->window = 7;
    if (o->steps <= 0) o->steps = 2000;
    if (o->batch <= 0) o->batch = 64;
    if (!(o->lr > 0)) o->lr = 1e-3f;
    int maxl = o->kind == PM_REGRESS_MLP ? PM_MLP_MAX_LAYERS : NN_GRU_MAX_LAYERS;
    if (o->layers > maxl) return base_errf(err, errlen, "regressor: layers must be 1..%d, got %d", maxl, o->layers);
    if (o->hidden > 8192) return base_errf(err, errlen, "regressor: hidden must be 1..8192, got %d", o->hidden);
    if (o->window > 1024) return base_errf(err, errlen, "regressor: window must be 1..1024, got %d", o->window);
    if (o->batch > 65536) return base_errf(err, errlen, "regressor: batch must be 1..65536, got %d", o->batch);
    if (!isfinite(o->lr)) return base_errf(err, errlen, "regressor: the learning rate is not finite");
    return 0;
}

/* ---- train ------------------------------------------------------------------------------------- */

PmRegress *pm_regress_train(const float *rot, const float *tb, int F, int J, int B, const PmRegressOptions *opt,
                            PmRegressProgressFn progress, void *user, char *err, size_t errlen) {
    PmRegressOptions o;
    if (resolve_options(opt, &o, err, errlen)) return NULL;
    if (F < 1 || J < 1 || B < 1 || !rot || !tb) {
        base_errf(err, errlen, "regressor: needs frames, joints and bones (F %d, J %d, B %d)%s", F, J, B,
                  !rot || !tb ? " and data" : "");
        return NULL;
    }
    if ((int64_t)J * 6 > (1 << 20) || (int64_t)B * 9 > (1 << 20)) {
        base_errf(err, errlen, "regressor: %d joints, %d bones: too many", J, B);
        return NULL;
    }
    for (size_t i = 0; i < (size_t)F * B * 12; i++)
        if (!isfinite(tb[i])) {
            base_errf(err, errlen, "regressor: bone transform %zu of frame %zu is not finite", i / 12 % (size_t)B,
                      i / 12 / (size_t)B);
            return NULL;
        }
    PmRegress *r = base_calloc(1, sizeof *r);
    r->o = o, r->J = J, r->B = B, r->in_dim = 6 * (int64_t)J, r->out_dim = 9 * (int64_t)B;
    float *feat = base_malloc(sizeof(float) * (size_t)F * (size_t)r->in_dim);
    if (features(rot, F, J, feat, err, errlen)) {
        free(feat);
        pm_regress_free(r);
        return NULL;
    }
    /* targets: 6D of R, then T standardized (regress.h) */
    r->tmean = base_calloc((size_t)B * 3, sizeof(float));
    double *mean = base_calloc((size_t)B * 3, sizeof(double)), ss = 0;
    for (int t = 0; t < F; t++)
        for (int b = 0; b < B; b++)
            for (int i = 0; i < 3; i++) mean[b * 3 + i] += tb[((size_t)t * B + b) * 12 + i * 4 + 3];
    for (int k = 0; k < B * 3; k++) mean[k] /= F, r->tmean[k] = (float)mean[k];
    for (int t = 0; t < F; t++)
        for (int b = 0; b < B; b++)
            for (int i = 0; i < 3; i++) {
                double d = tb[((size_t)t * B + b) * 12 + i * 4 + 3] - mean[b * 3 + i];
                ss += d * d;
            }
    double rms = sqrt(ss / ((double)F * B * 3));
    /* a still skeleton has nothing to scale: any scale reproduces the mean */
    r->tscale = rms > 1e-6 ? (float)rms : 1.0f;
    float *target = base_malloc(sizeof(float) * (size_t)F * (size_t)r->out_dim);
    for (int t = 0; t < F; t++)
        for (int b = 0; b < B; b++) {
            const float *m = tb + ((size_t)t * B + b) * 12;
            float *y = target + ((size_t)t * B + b) * 9;
            for (int c = 0; c < 2; c++)
                for (int i = 0; i < 3; i++) y[c * 3 + i] = m[i * 4 + c];
            for (int i = 0; i < 3; i++) y[6 + i] = (float)((m[i * 4 + 3] - mean[b * 3 + i]) / r->tscale);
        }
    free(mean);

    TensorScope *outer = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, outer, TENSOR_F32, o.seed);
    Net net;
    net_init(&net, &p, r);
    nn_params_pack(&p);
    OptimConfig cfg = optim_defaults(OPTIM_ADAM);
    cfg.lr = o.lr;
    Optim opt_state;
    optim_init(&opt_state, &p, &cfg);
    Tensor *X = tensor_from_data(TENSOR_SHAPE(F, r->in_dim), TENSOR_F32, feat);
    Tensor *Y = tensor_from_data(TENSOR_SHAPE(F, r->out_dim), TENSOR_F32, target);
    free(feat), free(target);
    int64_t *rows = base_malloc(sizeof(int64_t) * (size_t)o.batch * (size_t)o.window);
    int64_t *frames = base_malloc(sizeof(int64_t) * (size_t)o.batch);
    for (int s = 0; s < o.steps; s++) {
        TensorScope *ss_scope = tensor_scope_begin();
        /* the minibatch: frames uniform with replacement from one Philox stream of the seed */
        for (int i = 0; i < o.batch; i++) {
            uint32_t u[4];
            tensor_philox(o.seed, 0x524547 /* "REG" */, (uint64_t)s * (uint64_t)o.batch + (uint64_t)i, u);
            frames[i] = (int64_t)((((uint64_t)u[0] << 32) | u[1]) % (uint64_t)F);
            window_rows((int)frames[i], o.window, rows + (size_t)i * o.window);
        }
        Tensor *ri = tensor_from_data(TENSOR_SHAPE((int64_t)o.batch * o.window), TENSOR_I64, rows);
        Tensor *fi = tensor_from_data(TENSOR_SHAPE(o.batch), TENSOR_I64, frames);
        Tensor *x = tensor_view(tensor_index_select(X, 0, ri), TENSOR_SHAPE(o.batch, o.window, r->in_dim));
        Tensor *d = tensor_sub(net_forward(&net, r, x), tensor_index_select(Y, 0, fi));
        Tensor *loss = tensor_mean_all(tensor_mul(d, d));
        nn_params_zero_grad(&p);
        ag_backward(loss, NULL, false);
        optim_step(&opt_state, o.lr);
        double lv = tensor_item(loss);
        tensor_scope_end(ss_scope);
        bool report = (s + 1) % PM_PROGRESS_EVERY == 0 || s + 1 == o.steps;
        if (progress && report && progress(user, s + 1, o.steps, lv)) break;
    }
    free(rows), free(frames);
    r->nweights = nn_params_numel(&p);
    r->weights = base_malloc(sizeof(float) * (size_t)r->nweights);
    memcpy(r->weights, tensor_data_ptr(p.flat), sizeof(float) * (size_t)r->nweights);
    nn_params_free(&p);
    tensor_scope_end(outer);
    return r;
}

/* ---- predict ----------------------------------------------------------------------------------- */

int pm_regress_predict(const PmRegress *r, const float *rot, int F, float *tb_out, char *err, size_t errlen) {
    if (!r || !rot || !tb_out || F < 1)
        return base_errf(err, errlen, "regressor: predict needs a model, F ≥ 1 frames (got %d) and buffers", F);
    int J = r->J, W = r->o.window;
    float *feat = base_malloc(sizeof(float) * (size_t)F * (size_t)r->in_dim);
    if (features(rot, F, J, feat, err, errlen)) {
        free(feat);
        return -1;
    }
    TensorScope *outer = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    NnParams p;
    nn_params_init(&p, outer, TENSOR_F32, 0);
    Net net;
    net_init(&net, &p, r);
    nn_params_pack(&p);
    memcpy(tensor_data_ptr(p.flat), r->weights, sizeof(float) * (size_t)r->nweights);
    Tensor *X = tensor_from_data(TENSOR_SHAPE(F, r->in_dim), TENSOR_F32, feat);
    free(feat);
    int chunk = F < PM_PREDICT_CHUNK ? F : PM_PREDICT_CHUNK;
    int64_t *rows = base_malloc(sizeof(int64_t) * (size_t)chunk * (size_t)W);
    for (int t0 = 0; t0 < F; t0 += chunk) {
        int n = F - t0 < chunk ? F - t0 : chunk;
        TensorScope *cs = tensor_scope_begin();
        for (int i = 0; i < n; i++) window_rows(t0 + i, W, rows + (size_t)i * W);
        Tensor *ri = tensor_from_data(TENSOR_SHAPE((int64_t)n * W), TENSOR_I64, rows);
        Tensor *x = tensor_view(tensor_index_select(X, 0, ri), TENSOR_SHAPE(n, W, r->in_dim));
        Tensor *y = tensor_contiguous(net_forward(&net, r, x));
        const float *yd = tensor_data_ptr(y);
        for (int i = 0; i < n; i++)
            for (int b = 0; b < r->B; b++)
                decode_bone(r, b, yd + ((size_t)i * r->B + b) * 9, tb_out + (((size_t)t0 + i) * r->B + b) * 12);
        tensor_scope_end(cs);
    }
    free(rows);
    nn_params_free(&p);
    ag_no_grad_end(prev);
    tensor_scope_end(outer);
    return 0;
}

void pm_regress_free(PmRegress *r) {
    if (!r) return;
    free(r->tmean);
    free(r->weights);
    free(r);
}
