/* models/gs4d/gs4d.c — deformable Gaussians: data, init, the deformation MLP, the training step,
 * fixed-budget densification, metrics and export (see gs4d.h for the choices and why). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arap.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/errbuf.h"
#include "base/h5file.h"
#include "base/mat3.h"
#include "datasets/motion/rig.h"
#include "gs4d.h"
#include "models/gaussians/loss.h"
#include "models/gaussians/params.h"
#include "nodes.h"

#define SH_C0 0.28209479177387814 /* Y_0^0, gaussianimate.md §1 */

Gs4dConfig gs4d_defaults(void) {
    return (Gs4dConfig){
        .n = 20000, .isotropic = true, .seed = 0, .init_opacity = 0.1, .init_scale = 0.5,
        /* Deformable 3DGS (Yang et al. 2024): D = 8, W = 256, skip at 4, multires 10 / 6 */
        .depth = 8, .width = 256, .skip = 4, .freq_x = 10, .freq_t = 6,
        .deform_color = false, .deform_opacity = false, .head_init = 1e-5, .supersample = 1, .dilation = GS_DEFAULT_DILATION,
        /* 3DGS position 1.6e-4 → 1.6e-6; Deformable 3DGS deform 8e-4 → 1.6e-6 (both × extent),
         * over the whole run; scaling 5e-3, rotation 1e-3, opacity 5e-2, feature 2.5e-3 */
        .lr_means = 1.6e-4, .lr_means_final = 1.6e-6, .lr_deform = 8e-4, .lr_deform_final = 1.6e-6,
        .lr_steps = 40000, .lr_scales = 5e-3, .lr_quats = 1e-3, .lr_opacity = 5e-2, .lr_color = 2.5e-3,
        .deform = GS4D_DEFORM_MLP, .nodes = 512, .node_k = 4, .node_radius = 1.0, .time_code = GS4D_TIME_FOURIER,
        .latent_dim = 32, .lr_nodes = 1.6e-4, .lr_node_radius = 5e-3, .lr_root = 1e-2,
        .lambda = GS_PHOTOMETRIC_LAMBDA, .eps_deform = 1e-15, .warmup = 3000, .time_ramp = 0,
        /* 3DGS: densify every 100 until 15k, threshold 2e-4, percent_dense 0.01, reset every 3000 */
        .densify_every = 100, .refine_until = 15000, .reset_every = 3000,
        .prune_opacity = 0.005, .densify_grad = 2e-4, .split_scale = 0.01,
        .arap_weight = 1.0, .arap_k = 8, .knn_every = 100, .recluster_every = 0, .recluster_frames = 16,
        .background = {1, 1, 1}, .random_background = true, .dtype = TENSOR_F32,
    };
}

/* ---- data --------------------------------------------------------------------------------------- */

static void cam_center_axis(const DsCamera *c, double o[3], double z[3]) {
    ds_camera_center(c, o);
    for (int a = 0; a < 3; a++) z[a] = c->R[6 + a]; /* the camera's +z (forward) in the world: Rᵀ e_z */
}

int gs4d_data_make(const Gs4dView *views, int n, Gs4dData *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    if (n < 1) {
        snprintf(err, errlen, "gs4d: no views");
        return -1;
    }
    for (int v = 0; v < n; v++) {
        const DsCamera *c = &views[v].cam;
        if (c->width < 1 || c->height < 1 || !views[v].rgba || !(c->fx > 0) || !(c->fy > 0) ||
            !(views[v].time >= 0 && views[v].time <= 1)) {
            snprintf(err, errlen, "gs4d: view %d: %dx%d, fx %g, fy %g, time %g, %s: need a positive size and focal "
                                  "lengths, time in [0, 1] and an image", v, c->width, c->height, c->fx, c->fy,
                     (double)views[v].time, views[v].rgba ? "an image" : "no image");
            return -1;
        }
    }
    /* the point nearest every optical axis: Σ (I − z zᵀ) p = Σ (I − z zᵀ) o */
    double A[9] = {0}, b[3] = {0}, mean[3] = {0};
    for (int v = 0; v < n; v++) {
        double o[3], z[3];
        cam_center_axis(&views[v].cam, o, z);
        for (int r = 0; r < 3; r++) {
            mean[r] += o[r] / n;
            for (int c = 0; c < 3; c++) {
                double P = (r == c) - z[r] * z[c];
                A[3 * r + c] += P;
                b[r] += P * o[c];
            }
        }
    }
    double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) + A[2] * (A[3] * A[7] - A[4] * A[6]);
    if (fabs(det) > 1e-9 * n * n * n) {
        for (int k = 0; k < 3; k++) { /* Cramer */
            double M[9];
            memcpy(M, A, sizeof M);
            for (int r = 0; r < 3; r++) M[3 * r + k] = b[r];
            d->center[k] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
                            M[2] * (M[3] * M[7] - M[4] * M[6])) / det;
        }
    } else { /* parallel axes (one view): a point in front of the first camera */
        double o[3], z[3];
        cam_center_axis(&views[0].cam, o, z);
        for (int a = 0; a < 3; a++) d->center[a] = o[a] + z[a];
    }
    d->radius = INFINITY;
    double cam_r = 0;
    for (int v = 0; v < n; v++) {
        const DsCamera *c = &views[v].cam;
        double o[3], z[3], dist = 0, cr = 0;
        cam_center_axis(c, o, z);
        for (int a = 0; a < 3; a++) dist += (o[a] - d->center[a]) * (o[a] - d->center[a]), cr += (o[a] - mean[a]) * (o[a] - mean[a]);
        double half = atan(fmin(0.5 * c->width / c->fx, 0.5 * c->height / c->fy));
        d->radius = fmin(d->radius, sqrt(dist) * sin(half));
        cam_r = fmax(cam_r, sqrt(cr));
    }
    if (!(d->radius > 0) || !isfinite(d->radius)) {
        snprintf(err, errlen, "gs4d: the cameras do not look at a common region");
        return -1;
    }
    d->extent = 1.1 * (cam_r > 0 ? cam_r : d->radius);
    d->n = n;
    d->views = base_malloc(sizeof(Gs4dView) * (size_t)n);
    memcpy(d->views, views, sizeof(Gs4dView) * (size_t)n);
    d->by_time = base_malloc(sizeof(int) * (size_t)n);
    for (int v = 0; v < n; v++) { /* insertion sort: stable, and the lists are short */
        int j = v;
        while (j > 0 && views[d->by_time[j - 1]].time > views[v].time) d->by_time[j] = d->by_time[j - 1], j--;
        d->by_time[j] = v;
    }
    d->masks = base_calloc((size_t)n, sizeof(Gs4dMask));
    for (int v = 0; v < n; v++) gs4d_mask_make(views[v].rgba, views[v].cam.width, views[v].cam.height, &d->masks[v]);
    d->rgb = base_calloc((size_t)n, sizeof(Tensor *));
    d->alpha = base_calloc((size_t)n, sizeof(Tensor *));
    for (int v = 0; v < n; v++) {
        int H = views[v].cam.height, W = views[v].cam.width;
        Tensor *rgba = tensor_from_data(3, (int64_t[]){H, W, 4}, TENSOR_F32, views[v].rgba);
        d->rgb[v] = tensor_contiguous(tensor_narrow(rgba, 2, 0, 3));
        d->alpha[v] = tensor_contiguous(tensor_narrow(rgba, 2, 3, 1));
    }
    return 0;
}

void gs4d_data_free(Gs4dData *d) {
    for (int v = 0; d->masks && v < d->n; v++) gs4d_mask_free(&d->masks[v]);
    free(d->views), free(d->by_time), free(d->masks), free(d->rgb), free(d->alpha);
    memset(d, 0, sizeof *d);
}

Tensor *gs4d_target(const Gs4dData *d, int v, const double bg[3]) {
    /* straight alpha: rgb α + bg (1 − α) */
    Tensor *b = tensor_to(tensor_from_f64(1, (int64_t[]){3}, TENSOR_F32, bg), tensor_device(d->rgb[v]));
    Tensor *a = d->alpha[v];
    return tensor_add(tensor_mul(d->rgb[v], a), tensor_mul(tensor_rsub_scalar(a, 1.0), b));
}

/* ---- init ---------------------------------------------------------------------------------------- */

static void set_values(Tensor *t, const double *v) {
    bool prev = ag_no_grad_begin();
    tensor_copy_(t, tensor_from_f64(t->ndim, t->shape, t->dtype, v));
    ag_no_grad_end(prev);
}

static NnLinear head(NnParams *p, const char *prefix, int64_t in, int64_t out, double a) {
    NnLinear l = {.in = in, .out = out};
    l.weight = nn_param(p, prefix, "weight", 2, (int64_t[]){out, in}, NN_INIT_NORMAL, a);
    l.bias = nn_param(p, prefix, "bias", 1, (int64_t[]){out}, NN_INIT_ZEROS, 0);
    return l;
}

/* whether world point x lands on alpha > 0.5 in at least half of the first nv views of the time
 * order that see it (at most 64 views, evenly spaced over them: a long sequence has hundreds, and
 * 64 already carve the intersection of the poses) */
static bool carved_in(const Gs4dData *d, int nv, const double x[3]) {
    int seen = 0, hit = 0, stride = nv > 64 ? (nv + 63) / 64 : 1;
    for (int k = 0; k < nv; k += stride) {
        int v = d->by_time[k];
        const DsCamera *c = &d->views[v].cam;
        double uv[2], z;
        if (!ds_camera_project(c, x, uv, &z)) continue;
        int i = (int)floor(uv[0]), j = (int)floor(uv[1]);
        if (i < 0 || j < 0 || i >= c->width || j >= c->height) continue;
        seen++;
        hit += d->views[v].rgba[((size_t)j * c->width + i) * 4 + 3] > 0.5f;
    }
    return seen > 0 && 2 * hit >= seen;
}

/* Under a time curriculum the first time's views carve the canonical set and the warm-up trains on
 * them. Monocular input has one view a time, and one view carves a cone: there the warm-up's window
 * takes whole next times until it holds GS4D_FIRST_VIEWS views, and every view votes in the carving
 * (the half-vote rule tolerates the motion; measured on a 24-frame orbit: 17.1 dB at init against
 * 15.1 with the first 8 times voting). Input with several views at the first time is unchanged. */
#define GS4D_FIRST_VIEWS 8
static int first_views(const Gs4dData *d) {
    int n = 1;
    while (n < d->n && d->views[d->by_time[n]].time == d->views[d->by_time[0]].time) n++;
    bool mono = n == 1;
    while (mono && n < d->n && n < GS4D_FIRST_VIEWS) {
        float t = d->views[d->by_time[n]].time;
        while (n < d->n && d->views[d->by_time[n]].time == t) n++;
    }
    return n;
}

/* each used group's NnParams / Optim as slices of m's flat buffers and moments (wherever they
 * are now), keeping the groups' configs and steps; the headers in the current scope */
static void slice_groups(Gs4dModel *m) {
    NnParams *p = &m->params;
    for (int g = 0; g < GS4D_GROUPS; g++) {
        if (!m->used[g]) continue;
        int64_t lo = m->glo[g], len = m->ghi[g] - m->glo[g];
        NnParams *gp = &m->gparams[g];
        *gp = (NnParams){.dtype = p->dtype, .scope = p->scope, .packed = true};
        gp->flat = tensor_narrow(p->flat, 0, lo, len);
        gp->flat_grad = tensor_narrow(p->flat_grad, 0, lo, len);
        m->gopt[g].params = gp;
        m->gopt[g].exp_avg = tensor_narrow(m->optim.exp_avg, 0, lo, len);
        m->gopt[g].exp_avg_sq = tensor_narrow(m->optim.exp_avg_sq, 0, lo, len);
    }
}

/* every parameter header re-pointed into flat (same layout as m->params.flat) */
static void point_params(Gs4dModel *m, Tensor *flat) {
    int64_t off = 0;
    for (int i = 0; i < m->params.n; i++) {
        Tensor *t = m->params.items[i].value;
        Tensor *v = tensor_view_at(flat, t->ndim, t->shape, off);
        t->storage = v->storage;
        t->offset = v->offset;
        for (int a = 0; a < t->ndim; a++) t->stride[a] = v->stride[a];
        off += tensor_numel(t);
    }
    m->params.flat = flat;
}

void gs4d_to_device(Gs4dModel *m, TensorDevice dev) {
    if (tensor_device(m->params.flat) == dev) return;
    nn_params_move(&m->params, dev);
    TensorScope *prev = tensor_scope_switch(m->params.scope);
    bool grad = tensor_grad_set_enabled(false);
    m->optim.exp_avg = tensor_to(m->optim.exp_avg, dev);
    m->optim.exp_avg_sq = tensor_to(m->optim.exp_avg_sq, dev);
    slice_groups(m);
    tensor_grad_set_enabled(grad);
    tensor_scope_switch(prev);
}

void gs4d_data_to_device(Gs4dData *d, TensorDevice dev) {
    for (int v = 0; v < d->n; v++) d->rgb[v] = tensor_to(d->rgb[v], dev), d->alpha[v] = tensor_to(d->alpha[v], dev);
}

/* ---- host sessions: the per-Gaussian loops below read and write the flat buffers through
 * tensor_f32, so with the model on a device they run on host copies (made in the current scope)
 * that host_end writes back, every header restored ---- */
typedef struct {
    bool active;
    Tensor *flat, *ea, *es; /* the device buffers */
    NnParams gparams[GS4D_GROUPS];
    Optim gopt[GS4D_GROUPS];
} HostSession;

static void host_begin(Gs4dModel *m, HostSession *h) {
    h->active = tensor_device(m->params.flat) != TENSOR_CPU;
    if (!h->active) return;
    h->flat = m->params.flat, h->ea = m->optim.exp_avg, h->es = m->optim.exp_avg_sq;
    memcpy(h->gparams, m->gparams, sizeof h->gparams);
    memcpy(h->gopt, m->gopt, sizeof h->gopt);
    point_params(m, tensor_to(h->flat, TENSOR_CPU));
    m->optim.exp_avg = tensor_to(h->ea, TENSOR_CPU);
    m->optim.exp_avg_sq = tensor_to(h->es, TENSOR_CPU);
    slice_groups(m);
}

static void host_end(Gs4dModel *m, HostSession *h) {
    if (!h->active) return;
    TensorDevice dev = tensor_device(h->flat);
    tensor_copy_(h->flat, tensor_to(m->params.flat, dev));
    tensor_copy_(h->ea, tensor_to(m->optim.exp_avg, dev));
    tensor_copy_(h->es, tensor_to(m->optim.exp_avg_sq, dev));
    point_params(m, h->flat);
    m->optim.exp_avg = h->ea, m->optim.exp_avg_sq = h->es;
    memcpy(m->gparams, h->gparams, sizeof h->gparams);
    memcpy(m->gopt, h->gopt, sizeof h->gopt);
    for (int g = 0; g < GS4D_GROUPS; g++) m->gopt[g].params = &m->gparams[g];
}

int gs4d_auto_freq_t(const Gs4dData *d) {
    /* distinct training times (d->by_time is sorted) and their mean spacing */
    int nt = 0;
    double lo = 0, hi = 0, prev = 0;
    for (int i = 0; i < d->n; i++) {
        double t = d->views[d->by_time[i]].time;
        if (i == 0 || t != prev) nt++;
        if (i == 0) lo = t;
        hi = prev = t;
    }
    if (nt < 2 || !(hi > lo)) return 1;
    double dt = (hi - lo) / (nt - 1);
    int L = 1;
    while (L < 32 && ldexp(1.0, L - 1) * dt < GS4D_FREQ_T_RAD_PER_FRAME) L++;
    return L;
}

void gs4d_init(Gs4dModel *m, const Gs4dConfig *cfg_in, const Gs4dData *d, const int32_t *labels) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg_in;
    if (m->cfg.freq_t == GS4D_FREQ_T_AUTO) m->cfg.freq_t = gs4d_auto_freq_t(d);
    const Gs4dConfig *cfg = &m->cfg;
    m->extent = d->extent;
    int64_t n = cfg->n, ns = cfg->isotropic ? 1 : 3;
    if (n < 2 || cfg->depth < 1 || cfg->depth > 32 || cfg->width < 1 || cfg->arap_k < 1 || cfg->freq_x < 0 ||
        cfg->freq_t < 0)
        tensor_fail("gs4d_init", "n = %lld, depth = %d, width = %d, arap_k = %d: need n ≥ 2, depth 1..32, width ≥ 1, k ≥ 1",
                    (long long)n, cfg->depth, cfg->width, cfg->arap_k);
    NnParams *p = &m->params;
    nn_params_init(p, tensor_scope_current(), cfg->dtype, cfg->seed);
    m->means = nn_param(p, "gaussians", "means", 2, (int64_t[]){n, 3}, NN_INIT_ZEROS, 0);
    m->scales = nn_param(p, "gaussians", "scales", 2, (int64_t[]){n, ns}, NN_INIT_ZEROS, 0);
    if (!cfg->isotropic) m->quats = nn_param(p, "gaussians", "quats", 2, (int64_t[]){n, 4}, NN_INIT_ZEROS, 0);
    m->opacities = nn_param(p, "gaussians", "opacities", 2, (int64_t[]){n, 1}, NN_INIT_ZEROS, 0);
    m->colors = nn_param(p, "gaussians", "colors", 3, (int64_t[]){n, 1, 3}, NN_INIT_ZEROS, 0);
    bool nodes = cfg->deform == GS4D_DEFORM_NODES;
    if (nodes && (cfg->nodes < 1 || cfg->node_k < 1 || cfg->node_k > 64 || !(cfg->node_radius > 0)))
        tensor_fail("gs4d_init", "nodes = %lld, node_k = %d, node_radius = %g: need ≥ 1, 1..64, > 0", (long long)cfg->nodes,
                    cfg->node_k, cfg->node_radius);
    if (nodes && cfg->nodes > n) m->cfg.nodes = n;
    if (nodes && cfg->node_k > m->cfg.nodes) m->cfg.node_k = (int)m->cfg.nodes;
    bool fourier = cfg->time_code != GS4D_TIME_LATENT, latent = cfg->time_code != GS4D_TIME_FOURIER;
    if (latent && cfg->latent_dim < 1) tensor_fail("gs4d_init", "latent_dim = %d: need ≥ 1", cfg->latent_dim);
    int64_t in = nn_fourier_embed_dim(3, cfg->freq_x) + (fourier ? nn_fourier_embed_dim(1, cfg->freq_t) : 0) +
                 (latent ? cfg->latent_dim : 0),
            w = cfg->width;
    m->mlp.in_dim = in;
    for (int i = 0; i < cfg->depth; i++) {
        char pre[64];
        snprintf(pre, sizeof pre, "deform.layers.%d", i);
        int64_t li = i == 0 ? in : (i == cfg->skip ? w + in : w);
        if (cfg->trunk_init == GS4D_INIT_HE) {
            NnLinear *l = &m->mlp.layer[i];
            *l = (NnLinear){.in = li, .out = w};
            l->weight = nn_param(p, pre, "weight", 2, (int64_t[]){w, li}, NN_INIT_KAIMING_NORMAL, 0);
            l->bias = nn_param(p, pre, "bias", 1, (int64_t[]){w}, NN_INIT_ZEROS, 0);
        } else
            nn_linear_init(&m->mlp.layer[i], p, pre, li, w, true);
    }
    m->mlp.mu = head(p, "deform.mu", w, 3, cfg->head_init);
    m->mlp.scale = head(p, "deform.scale", w, ns, cfg->head_init);
    if (!cfg->isotropic || nodes) m->mlp.rot = head(p, "deform.rot", w, 4, cfg->head_init);
    bool table = nodes && cfg->node_table, root = nodes && cfg->root;
    if (cfg->root && !nodes) tensor_fail("gs4d_init", "root needs deform = nodes");
    if (latent || table || root) { /* a code / table row per distinct training time (d->by_time is sorted) */
        m->mlp.times = base_malloc(sizeof(double) * (size_t)d->n);
        for (int i = 0; i < d->n; i++) {
            double t = d->views[d->by_time[i]].time;
            if (m->mlp.frames == 0 || t != m->mlp.times[m->mlp.frames - 1]) m->mlp.times[m->mlp.frames++] = t;
        }
        if (latent)
            m->mlp.codes = nn_param(p, "deform", "codes", 2, (int64_t[]){m->mlp.frames, cfg->latent_dim}, NN_INIT_NORMAL, 0.01);
        if (table) m->mlp.table = nn_param(p, "deform", "table", 2, (int64_t[]){m->mlp.frames, 7 * cfg->nodes}, NN_INIT_ZEROS, 0);
    }
    if (nodes) {
        m->node_pos = nn_param(p, "nodes", "pos", 2, (int64_t[]){cfg->nodes, 3}, NN_INIT_ZEROS, 0);
        m->node_rho = nn_param(p, "nodes", "rho", 2, (int64_t[]){cfg->nodes, 1}, NN_INIT_ZEROS, 0);
    }
    if (cfg->deform_color) m->mlp.color = head(p, "deform.color", w, 3, cfg->head_init);
    if (cfg->deform_opacity) m->mlp.opacity = head(p, "deform.opacity", w, 1, cfg->head_init);
    if (root) m->mlp.root = nn_param(p, "root", "pose", 2, (int64_t[]){m->mlp.frames, 7}, NN_INIT_ZEROS, 0);
    m->grad_accum = nn_param(p, "buffers", "grad_accum", 1, (int64_t[]){n}, NN_INIT_ZEROS, 0);
    m->grad_count = nn_param(p, "buffers", "grad_count", 1, (int64_t[]){n}, NN_INIT_ZEROS, 0);
    m->labels = nn_param(p, "buffers", "labels", 1, (int64_t[]){n}, NN_INIT_ZEROS, 0);
    m->neighbors = nn_param(p, "buffers", "neighbors", 2, (int64_t[]){n, cfg->arap_k}, NN_INIT_ZEROS, 0);
    if (nodes) {
        m->node_knn = nn_param(p, "buffers", "node_knn", 2, (int64_t[]){n, cfg->node_k}, NN_INIT_ZEROS, 0);
        m->node_nbr = nn_param(p, "buffers", "node_nbr", 2, (int64_t[]){cfg->nodes, cfg->arap_k}, NN_INIT_ZEROS, 0);
        if (root) m->root_pivot = nn_param(p, "buffers", "root_pivot", 2, (int64_t[]){1, 3}, NN_INIT_ZEROS, 0);
    }
    nn_params_pack(p);
    OptimConfig oc = optim_defaults(OPTIM_ADAM);
    oc.eps = 1e-15; /* the 3DGS optimizer's eps: gradients of single Gaussians are tiny */
    optim_init(&m->optim, p, &oc);

    /* each group: a slice of the flat buffers and of the Adam moments */
    int64_t off = 0;
    int64_t *lo = m->glo, *hi = m->ghi;
    for (int g = 0; g < GS4D_GROUPS; g++) lo[g] = INT64_MAX, hi[g] = -1;
    for (int i = 0; i < p->n; i++) {
        const char *nm = p->items[i].name;
        int64_t k = tensor_numel(p->items[i].value);
        int g = -1;
        if (!strcmp(nm, "gaussians.means")) g = GS4D_MEANS;
        else if (!strcmp(nm, "gaussians.scales")) g = GS4D_SCALES;
        else if (!strcmp(nm, "gaussians.quats")) g = GS4D_QUATS;
        else if (!strcmp(nm, "gaussians.opacities")) g = GS4D_OPACITY;
        else if (!strcmp(nm, "gaussians.colors")) g = GS4D_COLOR;
        else if (!strncmp(nm, "deform.", 7)) g = GS4D_DEFORM;
        else if (!strcmp(nm, "nodes.pos")) g = GS4D_NODE_POS;
        else if (!strcmp(nm, "nodes.rho")) g = GS4D_NODE_RADIUS;
        else if (!strcmp(nm, "root.pose")) g = GS4D_ROOT;
        if (g >= 0) {
            if (off < lo[g]) lo[g] = off;
            if (off + k > hi[g]) hi[g] = off + k;
        }
        off += k;
    }
    double lrs[GS4D_GROUPS] = {cfg->lr_means, cfg->lr_scales, cfg->lr_quats, cfg->lr_opacity,
                               cfg->lr_color, cfg->lr_deform, cfg->lr_nodes, cfg->lr_node_radius, cfg->lr_root};
    for (int g = 0; g < GS4D_GROUPS; g++) {
        if (hi[g] < 0) continue;
        m->used[g] = true;
        OptimConfig gc = oc;
        gc.lr = lrs[g];
        if (g == GS4D_DEFORM) gc.eps = cfg->eps_deform;
        m->gopt[g] = (Optim){.cfg = gc};
    }
    slice_groups(m);

    /* canonical values: carved from the training alphas inside the region the cameras look at */
    TensorRng rng = {.seed = cfg->seed, .stream = 0x6a5e};
    GsDraw dr = {.g = &rng};
    double *mu = base_malloc(sizeof(double) * (size_t)n * 3);
    int64_t got = 0, tries = 0, max_tries = 200 * n;
    const double *c = d->center;
    double r = d->radius;
    int voters = d->n; /* with a time curriculum, the views of the first time (the warm-up's) */
    if (cfg->time_ramp > 0) {
        for (voters = 1; voters < d->n && d->views[d->by_time[voters]].time == d->views[d->by_time[0]].time;) voters++;
        if (voters == 1) voters = d->n; /* monocular (first_views) */
    }
    for (; got < n && tries < max_tries; tries++) {
        double x[3];
        for (int a = 0; a < 3; a++) x[a] = c[a] + r * (2 * gs_draw_u(&dr) - 1);
        if (carved_in(d, voters, x)) memcpy(mu + 3 * got++, x, sizeof x);
    }
    double vol = 8 * r * r * r;
    if (got < n / 4) got = 0; /* too little survives (no alpha?): the whole region */
    else vol *= (double)got / (double)tries;
    for (int64_t i = got; i < n; i++)
        for (int a = 0; a < 3; a++) mu[3 * i + a] = c[a] + r * (2 * gs_draw_u(&dr) - 1);
    set_values(m->means, mu);
    free(mu);
    double s0 = log(cfg->init_scale * cbrt(vol / (double)n)), o0 = gs_logit(cfg->init_opacity);
    double *buf = base_malloc(sizeof(double) * (size_t)n * (size_t)(4 > cfg->arap_k ? 4 : cfg->arap_k));
    for (int64_t i = 0; i < n * ns; i++) buf[i] = s0;
    set_values(m->scales, buf);
    for (int64_t i = 0; i < n; i++) buf[i] = o0;
    set_values(m->opacities, buf);
    for (int64_t i = 0; i < 3 * n; i++) buf[i] = (gs_draw_u(&dr) - 0.5) / SH_C0; /* rgb ~ U[0, 1] */
    set_values(m->colors, buf);
    if (m->quats) {
        for (int64_t i = 0; i < 4 * n; i++) buf[i] = i % 4 == 0;
        set_values(m->quats, buf);
    }
    for (int64_t i = 0; i < n; i++) buf[i] = labels ? labels[i] : 0;
    set_values(m->labels, buf);
    free(buf);
    if (cfg->dtype == TENSOR_F32) gs4d_update_neighbors(m);
}

void gs4d_free(Gs4dModel *m) {
    nn_params_free(&m->params);
    free(m->mlp.times);
    memset(m, 0, sizeof *m);
}

void gs4d_set_step(Gs4dModel *m, int64_t step) {
    m->step = step;
    m->optim.step = step;
    for (int g = 0; g < GS4D_GROUPS; g++) m->gopt[g].step = step;
    /* the MLP and the nodes are stepped only after the warm-up */
    for (int g = GS4D_DEFORM; g < GS4D_GROUPS; g++) m->gopt[g].step = step > m->cfg.warmup ? step - m->cfg.warmup : 0;
}

/* ---- forward ------------------------------------------------------------------------------------- */

GsGaussians gs4d_canonical(const Gs4dModel *m) {
    return (GsGaussians){.means = m->means, .scales = m->scales, .quats = m->quats, .opacities = m->opacities,
                         .colors = m->colors};
}

/* the trunk: [γ(x), γ(t)] through the ReLU layers (the input again before layer skip); the last
 * layer's output, and each layer's in hidden[i] when hidden is not NULL */
/* the frames around t: t = (1 − a) times[j] + a times[j + 1] (a = 0 and j the end outside them) */
static int frame_at(const Gs4dMlp *mlp, double t, double *a_out) {
    const double *ts = mlp->times;
    int f = mlp->frames, j = 0;
    double a = 0;
    if (f > 1 && t >= ts[f - 1]) j = f - 2, a = 1;
    else if (f > 1 && t > ts[0]) {
        int lo = 0, hi = f - 1; /* ts[lo] ≤ t < ts[hi] */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (ts[mid] <= t) lo = mid;
            else hi = mid;
        }
        j = lo, a = (t - ts[lo]) / (ts[hi] - ts[lo]);
    }
    *a_out = a;
    return j;
}

/* the row of rows (frames, D) at time t: linear between the rows of the training times around it
 * (the end rows outside them), (1, D) */
static Tensor *row_at(const Gs4dMlp *mlp, Tensor *rows, double t) {
    double a;
    int j = frame_at(mlp, t, &a);
    Tensor *c0 = tensor_narrow(rows, 0, j, 1);
    if (a <= 0) return c0;
    Tensor *c1 = tensor_narrow(rows, 0, j + 1, 1);
    if (a >= 1) return c1;
    return tensor_add(tensor_mul_scalar(c0, 1 - a), tensor_mul_scalar(c1, a));
}

static Tensor *code_at(const Gs4dMlp *mlp, double t) { return row_at(mlp, mlp->codes, t); }

/* Σ over frame j's neighbors of the squared difference of row j of rows to theirs (0-d) */
static Tensor *rows_smooth(const Gs4dMlp *mlp, Tensor *rows, int j) {
    Tensor *r = tensor_narrow(rows, 0, j, 1), *sum = NULL;
    for (int nb = j - 1; nb <= j + 1; nb += 2) {
        if (nb < 0 || nb >= mlp->frames) continue;
        Tensor *e = tensor_sub(r, tensor_narrow(rows, 0, nb, 1));
        Tensor *s = tensor_sum_all(tensor_mul(e, e));
        sum = sum ? tensor_add(sum, s) : s;
    }
    return sum;
}

/* table_smooth's term at time t: the nearer frame's table row against its neighbors' divided by
 * the nodes, plus its root row against theirs (0-d; NULL without a table, a root or a weight) */
static Tensor *table_smooth_loss(const Gs4dModel *m, double t) {
    const Gs4dMlp *mlp = &m->mlp;
    if ((!mlp->table && !mlp->root) || !(m->cfg.table_smooth > 0) || mlp->frames < 2) return NULL;
    double a;
    int j = frame_at(mlp, t, &a);
    if (a > 0.5) j++;
    Tensor *sum = NULL;
    if (mlp->table) sum = tensor_mul_scalar(rows_smooth(mlp, mlp->table, j), 1 / (double)m->cfg.nodes);
    if (mlp->root) {
        Tensor *r = rows_smooth(mlp, mlp->root, j);
        sum = sum ? tensor_add(sum, r) : r;
    }
    return tensor_mul_scalar(sum, m->cfg.table_smooth);
}

/* what D sees of t, (1, D): γ(t), the code, or both (Gs4dConfig.time_code) */
static Tensor *time_features(const Gs4dMlp *mlp, const Gs4dConfig *cfg, const Tensor *like, double t) {
    Tensor *parts[2];
    int np = 0;
    if (cfg->time_code != GS4D_TIME_LATENT) {
        Tensor *tt = tensor_full(2, (int64_t[]){1, 1}, t, like->dtype);
        if (tensor_device(like) != TENSOR_CPU) tt = tensor_to(tt, tensor_device(like));
        parts[np++] = nn_fourier_embed(tt, cfg->freq_t);
    }
    if (cfg->time_code != GS4D_TIME_FOURIER) parts[np++] = code_at(mlp, t);
    return np == 1 ? parts[0] : tensor_cat(2, parts, 1);
}

static Tensor *mlp_trunk(const Gs4dMlp *mlp, const Gs4dConfig *cfg, Tensor *x, double t, Tensor **hidden) {
    int64_t n = x->shape[0];
    Tensor *te = time_features(mlp, cfg, x, t);
    te = tensor_expand(te, 2, (int64_t[]){n, te->shape[1]});
    Tensor *parts[2] = {nn_fourier_embed(x, cfg->freq_x), te};
    Tensor *in = tensor_cat(2, parts, 1);
    Tensor *h = in;
    for (int i = 0; i < cfg->depth; i++) {
        if (i == cfg->skip && i > 0) {
            Tensor *sk[2] = {in, h};
            h = tensor_cat(2, sk, 1);
        }
        h = tensor_relu(nn_linear_forward(&mlp->layer[i], h));
        if (hidden) hidden[i] = h;
    }
    return h;
}

void gs4d_mlp_forward(const Gs4dMlp *mlp, const Gs4dConfig *cfg, Tensor *x, double t, Tensor **dmu, Tensor **ds,
                      Tensor **dq, Tensor **dc, Tensor **dop) {
    Tensor *h = mlp_trunk(mlp, cfg, x, t, NULL);
    *dmu = nn_linear_forward(&mlp->mu, h);
    *ds = nn_linear_forward(&mlp->scale, h);
    if (dq) *dq = mlp->rot.weight ? nn_linear_forward(&mlp->rot, h) : NULL;
    if (dc) *dc = mlp->color.weight ? nn_linear_forward(&mlp->color, h) : NULL;
    if (dop) *dop = mlp->opacity.weight ? nn_linear_forward(&mlp->opacity, h) : NULL;
}

GsGaussians gs4d_deform(const Gs4dModel *m, const GsGaussians *canon, double t) {
    /* the encoding sees the canonical mean detached (Deformable 3DGS): μ gets its gradient
     * through μ + Δμ */
    return gs4d_deform_at(m, canon, tensor_detach(canon->means), t);
}

/* the Gaussian → node lists as an index (N·K, i64, on the host) */
static Tensor *node_index(const Gs4dModel *m) {
    int64_t nk = tensor_numel(m->node_knn);
    const double *f = tensor_data_ptr(tensor_contiguous(tensor_cast(tensor_to(m->node_knn, TENSOR_CPU), TENSOR_F64)));
    Tensor *idx = tensor_empty(1, (int64_t[]){nk}, TENSOR_I64);
    int64_t *o = tensor_i64(idx);
    for (int64_t i = 0; i < nk; i++) o[i] = (int64_t)f[i];
    return idx;
}

/* the node deformation (nodes.h), the RBF weights taken at x_w and the MLP run at node_in (the
 * canonical means and the nodes detached, as the per-Gaussian MLP's input: both get their
 * gradient through the blend itself); node_xf (NULL: not wanted) the deformed nodes p + T */
static GsGaussians deform_nodes(const Gs4dModel *m, const GsGaussians *canon, Tensor *x_w, Tensor *node_in, double t,
                                Tensor **node_xf) {
    Tensor *T, *ds, *dq, *dc, *dop;
    gs4d_mlp_forward(&m->mlp, &m->cfg, node_in, t, &T, &ds, &dq, &dc, &dop);
    int k = m->cfg.node_k;
    Tensor *idx = node_index(m);
    Tensor *w = gs4d_rbf_weights(x_w, m->node_pos, m->node_rho, idx, k);
    Tensor *one = tensor_from_f64(2, (int64_t[]){1, 4}, dq->dtype, (double[]){1, 0, 0, 0});
    if (tensor_device(dq) != TENSOR_CPU) one = tensor_to(one, tensor_device(dq));
    if (m->mlp.table) { /* the per-frame residual transforms */
        Tensor *row = tensor_reshape(row_at(&m->mlp, m->mlp.table, t), 2, (int64_t[]){m->cfg.nodes, 7});
        T = tensor_add(T, tensor_narrow(row, 1, 0, 3));
        dq = tensor_add(dq, tensor_narrow(row, 1, 3, 4));
    }
    Tensor *q = tensor_add(dq, one);
    GsGaussians g = *canon;
    g.means = gs4d_node_lbs(canon->means, m->node_pos, gs4d_quat_to_rotmat(q), T, w, idx, k);
    g.scales = tensor_add(canon->scales, gs4d_node_blend(w, ds, idx, k));
    if (canon->quats) {
        Tensor *qn = tensor_div(q, tensor_norm(q, 2, 1, (int[]){1}, true));
        g.quats = gs4d_quat_mul(gs4d_node_blend(w, qn, idx, k), canon->quats);
    }
    if (dc) {
        Tensor *b = gs4d_node_blend(w, dc, idx, k);
        g.colors = tensor_add(canon->colors, tensor_reshape(b, 3, (int64_t[]){b->shape[0], 1, 3}));
    }
    if (dop) g.opacities = tensor_add(canon->opacities, gs4d_node_blend(w, dop, idx, k));
    if (node_xf) *node_xf = tensor_add(m->node_pos, T);
    if (m->mlp.root) { /* the frame's pose of the whole set: μ ← (μ − c) Rᵀ + c + T, q ← q_t ⊗ q */
        Tensor *row = row_at(&m->mlp, m->mlp.root, t); /* (1, 7) */
        Tensor *qr = tensor_add(tensor_narrow(row, 1, 3, 4), one);
        Tensor *R = tensor_reshape(gs4d_quat_to_rotmat(qr), 2, (int64_t[]){3, 3});
        Tensor *c = m->root_pivot, *Tr = tensor_narrow(row, 1, 0, 3);
        g.means = tensor_add(tensor_matmul(tensor_sub(g.means, c), tensor_transpose(R, 0, 1)), tensor_add(c, Tr));
        if (g.quats) {
            Tensor *qn = tensor_div(qr, tensor_norm(qr, 2, 1, (int[]){1}, true));
            g.quats = gs4d_quat_mul(tensor_expand(qn, 2, (int64_t[]){g.quats->shape[0], 4}), g.quats);
        }
    }
    return g;
}

GsGaussians gs4d_deform_nodes_at(const Gs4dModel *m, const GsGaussians *canon, Tensor *x_w, Tensor *node_in, double t) {
    return deform_nodes(m, canon, x_w, node_in, t, NULL);
}

GsGaussians gs4d_deform_at(const Gs4dModel *m, const GsGaussians *canon, Tensor *x_in, double t) {
    if (m->cfg.deform == GS4D_DEFORM_NODES) return deform_nodes(m, canon, x_in, tensor_detach(m->node_pos), t, NULL);
    Tensor *dmu, *ds, *dq, *dc, *dop;
    gs4d_mlp_forward(&m->mlp, &m->cfg, x_in, t, &dmu, &ds, &dq, &dc, &dop);
    GsGaussians g = *canon;
    g.means = tensor_add(canon->means, dmu);
    g.scales = tensor_add(canon->scales, ds);
    if (canon->quats && dq) g.quats = tensor_add(canon->quats, dq);
    if (dc) g.colors = tensor_add(canon->colors, tensor_reshape(dc, 3, (int64_t[]){dc->shape[0], 1, 3}));
    if (dop) g.opacities = tensor_add(canon->opacities, dop);
    return g;
}

Tensor *gs4d_regularizer(const GsGaussians *g, double reg_opacity, double reg_scale, double reg_flat) {
    Tensor *r = NULL;
    if (reg_opacity > 0) r = tensor_mul_scalar(tensor_mean_all(tensor_sigmoid(g->opacities)), reg_opacity);
    if (reg_scale > 0) {
        Tensor *s = tensor_mul_scalar(tensor_mean_all(tensor_exp(g->scales)), reg_scale);
        r = r ? tensor_add(r, s) : s;
    }
    if (reg_flat > 0) { /* exp is monotone: exp(min_k s_ik) is the smallest world-space scale */
        Tensor *f = tensor_mul_scalar(tensor_mean_all(tensor_exp(tensor_min(g->scales, 1, (int[]){1}, false))), reg_flat);
        r = r ? tensor_add(r, f) : f;
    }
    return r;
}

double gs4d_lr(const Gs4dModel *m, int g, int64_t step) {
    if (g != GS4D_MEANS && g != GS4D_DEFORM && g != GS4D_NODE_POS) return m->gopt[g].cfg.lr;
    double a = (g == GS4D_MEANS ? m->cfg.lr_means : g == GS4D_DEFORM ? m->cfg.lr_deform : m->cfg.lr_nodes) * m->extent;
    double b = (g == GS4D_MEANS  ? m->cfg.lr_means_final
                : g == GS4D_DEFORM ? m->cfg.lr_deform_final
                : m->cfg.lr_means > 0 ? m->cfg.lr_nodes * m->cfg.lr_means_final / m->cfg.lr_means
                                      : m->cfg.lr_nodes) *
               m->extent;
    int64_t s0 = m->cfg.lr_start > 0 ? m->cfg.lr_start : 0, len = m->cfg.lr_steps - s0;
    double r = len > 0 ? (double)(step - s0) / (double)len : step >= s0 ? 1 : 0;
    r = r < 0 ? 0 : r > 1 ? 1 : r;
    if (!(a > 0) || !(b > 0)) return a;
    return exp((1 - r) * log(a) + r * log(b)); /* 3DGS get_expon_lr_func without the delay */
}

static bool deforming(const Gs4dModel *m) { return m->step >= m->cfg.warmup; }

/* the last time the curriculum's window admits at step (time_ramp > 0) */
static double window_limit(const Gs4dModel *m, const Gs4dData *d, int64_t step) {
    double t0 = d->views[d->by_time[0]].time, t1 = d->views[d->by_time[d->n - 1]].time;
    double f = (double)(step - m->cfg.warmup) / (double)m->cfg.time_ramp;
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    return f >= 1 ? t1 : t0 + f * (t1 - t0);
}

int gs4d_pick_view(const Gs4dModel *m, const Gs4dData *d, int64_t step, int v) {
    if (m->cfg.time_ramp <= 0) return v;
    double f = (double)(step - m->cfg.warmup) / (double)m->cfg.time_ramp;
    double lim = window_limit(m, d, step);
    int lo = first_views(d), hi = d->n; /* views in the window: the first time's always, then by binary search */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (d->views[d->by_time[mid]].time <= lim) lo = mid + 1;
        else hi = mid;
    }
    if (f >= 1) lo = d->n;
    double fr = m->cfg.ramp_front;
    if (f > 0 && f < 1 && fr > 0 && (double)v < fr * d->n) { /* the window's front: the newest time's views */
        int nf = 1;
        while (nf < lo && d->views[d->by_time[lo - 1 - nf]].time == d->views[d->by_time[lo - 1]].time) nf++;
        return d->by_time[lo - nf + (int64_t)((double)v / (fr * d->n) * nf)];
    }
    if (f > 0 && f < 1 && fr > 0) { /* the rest of the draws, uniform over the window as without a front */
        int64_t r = (int64_t)(((double)v - fr * d->n) / ((1 - fr) * d->n) * lo);
        return d->by_time[r < lo ? r : lo - 1];
    }
    return d->by_time[(int64_t)v * lo / d->n];
}

GsRenderOut gs4d_render_set(const Gs4dModel *m, const GsGaussians *g, const DsCamera *cam, const double bg[3]) {
    int k = m->cfg.supersample > 1 ? m->cfg.supersample : 1;
    GsRenderOptions ro = {.dilation = m->cfg.dilation};
    if (k == 1) return gs_render_with(g, cam, bg, &ro);
    /* pixel centers at x + 0.5 (camera.h): scaling every intrinsic by k makes sub-pixel block
     * (x, y) of the k× image exactly pixel (x, y) of the camera's */
    DsCamera c = *cam;
    c.width *= k, c.height *= k, c.fx *= k, c.fy *= k, c.cx *= k, c.cy *= k;
    GsRenderOut r = gs_render_with(g, &c, bg, &ro);
    /* the k × k box filter on the op's packed (hk, wk, 5) output, all five channels at once, as
     * two sums over adjacent axes (no permuted copy, which a mean over axes 1 and 3 of
     * (h, k, w, k, 5) needs: it cost more than the rasterizer's forward) */
    int64_t h = cam->height, w = cam->width, C = r.packed->shape[2];
    Tensor *p = tensor_sum(tensor_reshape(r.packed, 5, (int64_t[]){h, k, w, k, C}), 1, (int[]){3}, false);
    p = tensor_mul_scalar(tensor_sum(p, 1, (int[]){1}, false), 1.0 / (double)(k * k)); /* (h, w, 5) */
    r.packed = p;
    r.image = tensor_narrow(p, 2, 0, 3); /* packed: r, g, b, alpha, depth (rasterize.h) */
    r.alpha = tensor_squeeze(tensor_narrow(p, 2, 3, 1), 2);
    r.depth = tensor_squeeze(tensor_narrow(p, 2, 4, 1), 2);
    return r;
}

Tensor *gs4d_render(const Gs4dModel *m, const DsCamera *cam, double t, const double bg[3]) {
    bool prev = ag_no_grad_begin();
    GsGaussians g = gs4d_canonical(m);
    if (deforming(m)) g = gs4d_deform(m, &g, t);
    Tensor *img = tensor_contiguous(tensor_to(gs4d_render_set(m, &g, cam, bg ? bg : m->cfg.background).image, TENSOR_CPU));
    ag_no_grad_end(prev);
    return img;
}

/* ---- densification ------------------------------------------------------------------------------ */

static void zero_moments(Gs4dModel *m, int64_t i) {
    for (int g = 0; g < GS4D_DEFORM; g++)
        if (m->used[g]) gs_rows_zero_moments(&m->gopt[g], m->cfg.n, i);
}

static void copy_gaussian(Gs4dModel *m, int64_t dst, int64_t src) {
    for (int g = 0; g < GS4D_DEFORM; g++)
        if (m->used[g]) gs_rows_copy(m->gparams[g].flat, m->cfg.n, dst, src);
    float *l = tensor_f32(m->labels);
    l[dst] = l[src];
}

/* a point drawn from N(μ_j, Σ_j) */
static void sample_in(const Gs4dModel *m, int64_t j, GsDraw *d, float out[3]) {
    const float *mu = tensor_f32(m->means);
    double z[3] = {gs_draw_n(d), gs_draw_n(d), gs_draw_n(d)}, s[3], R[9];
    gs_gaussian_frame(tensor_f32(m->scales), m->cfg.isotropic ? 1 : 3, m->quats ? tensor_f32(m->quats) : NULL, j, s, R);
    for (int a = 0; a < 3; a++)
        out[a] = (float)(mu[3 * j + a] + R[3 * a] * s[0] * z[0] + R[3 * a + 1] * s[1] * z[1] + R[3 * a + 2] * s[2] * z[2]);
}

typedef struct {
    double g;
    int64_t i;
} GradRank;

static int cmp_grad(const void *a, const void *b) {
    const GradRank *x = a, *y = b;
    if (x->g != y->g) return x->g > y->g ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int64_t densify_host(Gs4dModel *m, TensorRng *rng) {
    int64_t n = m->cfg.n;
    int ns = m->cfg.isotropic ? 1 : 3;
    float *o = tensor_f32(m->opacities), *mu = tensor_f32(m->means), *sc = tensor_f32(m->scales);
    float *acc = tensor_f32(m->grad_accum), *cnt = tensor_f32(m->grad_count);
    int64_t *dead = base_malloc(sizeof(int64_t) * (size_t)n), *live = base_malloc(sizeof(int64_t) * (size_t)n);
    double *cdf = base_malloc(sizeof(double) * (size_t)n);
    GradRank *cand = base_malloc(sizeof(GradRank) * (size_t)n);
    int64_t nd = 0, nl = 0, nc = 0;
    double tot = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = gs_sigmoid(o[i]);
        if (a < m->cfg.prune_opacity) {
            dead[nd++] = i;
            continue;
        }
        live[nl] = i, cdf[nl++] = tot += a;
        double g = cnt[i] > 0 ? acc[i] / cnt[i] : 0;
        if (g > m->cfg.densify_grad) cand[nc++] = (GradRank){g, i};
    }
    qsort(cand, (size_t)nc, sizeof(GradRank), cmp_grad);
    GsDraw dr = {.g = rng};
    m->densified = m->relocated = 0;
    double shrink = log(1.6); /* 3DGS splits into two of scale / (0.8 · 2) */
    for (int64_t k = 0; k < nd && nl > 0; k++) {
        int64_t i = dead[k], j;
        bool split = false;
        if (k < nc) {
            j = cand[k].i;
            double smax = 0;
            for (int a = 0; a < ns; a++) smax = fmax(smax, exp(sc[ns * j + a]));
            split = smax > m->cfg.split_scale * m->extent;
            m->densified++;
        } else { /* no gradient asks for more: relocate onto a live one drawn by opacity (3DGS-MCMC) */
            j = live[gs_draw_from_cdf(&dr, cdf, nl, tot)];
            m->relocated++;
        }
        copy_gaussian(m, i, j);
        float p[3];
        sample_in(m, j, &dr, p);
        if (split) {
            float q[3];
            sample_in(m, j, &dr, q);
            memcpy(mu + 3 * i, p, sizeof p);
            memcpy(mu + 3 * j, q, sizeof q);
            for (int a = 0; a < ns; a++) sc[ns * j + a] -= (float)shrink, sc[ns * i + a] -= (float)shrink;
        } else {
            /* a clone: the copy drawn from the source (a copy at μ would get the source's exact
             * gradients and stay its twin); the pair's opacity split so they stack to o */
            memcpy(mu + 3 * i, p, sizeof p);
            double a = 1 - sqrt(1 - gs_sigmoid(o[j]));
            if (a < m->cfg.prune_opacity) a = m->cfg.prune_opacity * 1.01; /* must not die at once */
            o[i] = o[j] = (float)gs_logit(a);
        }
        zero_moments(m, i);
        zero_moments(m, j);
    }
    memset(acc, 0, sizeof(float) * (size_t)n);
    memset(cnt, 0, sizeof(float) * (size_t)n);
    free(dead), free(live), free(cdf), free(cand);
    return m->densified + m->relocated;
}

static void neighbors_host(Gs4dModel *m) {
    int64_t n = m->cfg.n;
    int k = m->cfg.arap_k;
    int32_t *lab = base_malloc(sizeof(int32_t) * (size_t)n), *nbr = base_malloc(sizeof(int32_t) * (size_t)n * k);
    const float *l = tensor_f32(m->labels);
    for (int64_t i = 0; i < n; i++) lab[i] = (int32_t)l[i];
    gs4d_knn(tensor_f32(m->means), n, lab, k, nbr);
    float *dst = tensor_f32(m->neighbors);
    for (int64_t i = 0; i < n * k; i++) dst[i] = (float)nbr[i];
    free(lab), free(nbr);
}

/* ---- control nodes (host loops, inside a host session) ---- */

/* each Gaussian's node_k nearest nodes and each node's arap_k nearest nodes */
static void node_lists_host(Gs4dModel *m) {
    int64_t n = m->cfg.n, nm = m->cfg.nodes;
    int k = m->cfg.node_k, ka = m->cfg.arap_k;
    int32_t *idx = base_malloc(sizeof(int32_t) * (size_t)(n * k > nm * ka ? n * k : nm * ka));
    const float *np = tensor_f32(m->node_pos);
    gs4d_knn_to(np, nm, tensor_f32(m->means), n, k, idx);
    float *dst = tensor_f32(m->node_knn);
    for (int64_t i = 0; i < n * k; i++) dst[i] = (float)idx[i];
    gs4d_knn(np, nm, NULL, ka, idx);
    dst = tensor_f32(m->node_nbr);
    for (int64_t i = 0; i < nm * ka; i++) dst[i] = (float)idx[i];
    free(idx);
}

static void zero_group_rows(Gs4dModel *m, int g, int64_t row, int64_t per) {
    memset(tensor_f32(m->gopt[g].exp_avg) + per * row, 0, sizeof(float) * (size_t)per);
    memset(tensor_f32(m->gopt[g].exp_avg_sq) + per * row, 0, sizeof(float) * (size_t)per);
}

static void nodes_init_host(Gs4dModel *m) {
    int64_t n = m->cfg.n, nm = m->cfg.nodes;
    const float *mu = tensor_f32(m->means);
    float *np = tensor_f32(m->node_pos), *rho = tensor_f32(m->node_rho);
    /* over the live Gaussians (all of them when fewer than nm live): a faded one far out in empty
     * space would be the first a farthest-point sampling picks */
    const float *o = tensor_f32(m->opacities);
    float *live = base_malloc(sizeof(float) * 3 * (size_t)n);
    int64_t nl = 0;
    for (int64_t i = 0; i < n; i++)
        if (gs_sigmoid(o[i]) >= m->cfg.prune_opacity) memcpy(live + 3 * nl++, mu + 3 * i, sizeof(float) * 3);
    if (nl < nm) memcpy(live, mu, sizeof(float) * 3 * (size_t)(nl = n));
    int64_t *pick = base_malloc(sizeof(int64_t) * (size_t)nm);
    gs4d_fps(live, nl, nm, 0, pick);
    for (int64_t j = 0; j < nm; j++) memcpy(np + 3 * j, live + 3 * pick[j], sizeof(float) * 3);
    free(pick), free(live);
    /* the radius: node_radius × the mean distance to the nearest other node */
    double sum = 0;
    if (nm > 1) {
        int32_t *nb = base_malloc(sizeof(int32_t) * (size_t)nm);
        gs4d_knn(np, nm, NULL, 1, nb);
        for (int64_t j = 0; j < nm; j++) {
            const float *a = np + 3 * j, *b = np + 3 * nb[j];
            sum += sqrt((double)(a[0] - b[0]) * (a[0] - b[0]) + (double)(a[1] - b[1]) * (a[1] - b[1]) +
                        (double)(a[2] - b[2]) * (a[2] - b[2]));
        }
        free(nb);
    }
    double r = nm > 1 && sum > 0 ? m->cfg.node_radius * sum / (double)nm : m->cfg.node_radius * m->extent * 0.1;
    for (int64_t j = 0; j < nm; j++) rho[j] = (float)log(r);
    zero_group_rows(m, GS4D_NODE_POS, 0, 3 * nm);
    zero_group_rows(m, GS4D_NODE_RADIUS, 0, nm);
    if (m->root_pivot) {
        double c[3] = {0, 0, 0};
        for (int64_t j = 0; j < nm; j++)
            for (int a = 0; a < 3; a++) c[a] += np[3 * j + a];
        float *pv = tensor_f32(m->root_pivot);
        for (int a = 0; a < 3; a++) pv[a] = (float)(c[a] / (double)nm);
    }
    node_lists_host(m);
}

/* Nodes the Gaussians hardly use (Σ_i w_ik below one Gaussian's worth, live Gaussians only) move to
 * where the photometric gradient asks for more: onto the live Gaussian with the largest mean
 * view-space gradient above densify_grad among those of the node with the largest gradient-
 * weighted usage, that node's radius halved in area with it (the split of a node). Fixed budget,
 * as the Gaussians'. Reads the densification statistics, so it runs before densify_host clears
 * them. Returns the nodes moved. */
static int64_t nodes_refine_host(Gs4dModel *m) {
    int64_t n = m->cfg.n, nm = m->cfg.nodes;
    int k = m->cfg.node_k;
    const float *mu = tensor_f32(m->means), *o = tensor_f32(m->opacities), *kn = tensor_f32(m->node_knn);
    const float *acc = tensor_f32(m->grad_accum), *cnt = tensor_f32(m->grad_count);
    float *np = tensor_f32(m->node_pos), *rho = tensor_f32(m->node_rho);
    double *use = base_calloc((size_t)nm * 2, sizeof(double)), *score = use + nm;
    for (int64_t i = 0; i < n; i++) {
        if (gs_sigmoid(o[i]) < m->cfg.prune_opacity) continue;
        double w[64], tot = 0, g = cnt[i] > 0 ? acc[i] / cnt[i] : 0;
        for (int j = 0; j < k; j++) {
            int64_t c = (int64_t)kn[i * k + j];
            const float *p = np + 3 * c;
            double d2 = 0;
            for (int a = 0; a < 3; a++) d2 += ((double)mu[3 * i + a] - p[a]) * ((double)mu[3 * i + a] - p[a]);
            w[j] = exp(-0.5 * d2 * exp(-2.0 * rho[c]));
            tot += w[j];
        }
        for (int j = 0; j < k && tot > 0; j++) {
            int64_t c = (int64_t)kn[i * k + j];
            use[c] += w[j] / tot, score[c] += w[j] / tot * g;
        }
    }
    int64_t moved = 0;
    bool *taken = base_calloc((size_t)n, sizeof(bool));
    for (int64_t d = 0; d < nm; d++) {
        if (use[d] >= 1.0) continue;
        int64_t src = -1;
        for (int64_t c = 0; c < nm; c++)
            if (use[c] >= 1.0 && score[c] > 0 && (src < 0 || score[c] > score[src])) src = c;
        if (src < 0) break;
        int64_t best = -1;
        double bg = m->cfg.densify_grad;
        for (int64_t i = 0; i < n; i++) {
            if (taken[i] || (int64_t)kn[i * k] != src || gs_sigmoid(o[i]) < m->cfg.prune_opacity) continue;
            double g = cnt[i] > 0 ? acc[i] / cnt[i] : 0;
            if (g > bg) bg = g, best = i;
        }
        score[src] = 0; /* one new node per source per round */
        if (best < 0) continue;
        taken[best] = true;
        memcpy(np + 3 * d, mu + 3 * best, sizeof(float) * 3);
        rho[src] -= (float)(0.5 * log(2.0));
        rho[d] = rho[src];
        zero_group_rows(m, GS4D_NODE_POS, 3 * d, 3);
        zero_group_rows(m, GS4D_NODE_RADIUS, d, 1);
        zero_group_rows(m, GS4D_NODE_RADIUS, src, 1);
        moved++;
    }
    free(taken), free(use);
    return moved;
}

/* a host session in a scope of its own (the public entry points' one host loop each) */
typedef struct {
    TensorScope *scope;
    HostSession h;
} HostRun;
static void host_run_begin(Gs4dModel *m, HostRun *r) {
    r->scope = tensor_scope_begin();
    host_begin(m, &r->h);
}
static void host_run_end(Gs4dModel *m, HostRun *r) {
    host_end(m, &r->h);
    tensor_scope_end(r->scope);
}

void gs4d_nodes_init(Gs4dModel *m) {
    if (m->cfg.deform != GS4D_DEFORM_NODES) return;
    HostRun r;
    host_run_begin(m, &r);
    nodes_init_host(m);
    host_run_end(m, &r);
}

int64_t gs4d_densify(Gs4dModel *m, const Gs4dData *d, TensorRng *rng) {
    (void)d;
    HostRun r;
    host_run_begin(m, &r);
    int64_t moved = densify_host(m, rng);
    host_run_end(m, &r);
    return moved;
}

void gs4d_update_neighbors(Gs4dModel *m) {
    HostRun r;
    host_run_begin(m, &r);
    neighbors_host(m);
    host_run_end(m, &r);
}

void gs4d_set_recluster(Gs4dModel *m, Gs4dReclusterFn fn, void *user) {
    m->recluster = fn;
    m->recluster_user = user;
}

static int cmp_f64(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int gs4d_recluster(Gs4dModel *m, const Gs4dData *d) {
    if (!m->recluster) return -1;
    /* the distinct times of the views, ascending, then up to recluster_frames of them evenly */
    double *t = base_malloc(sizeof(double) * (size_t)d->n);
    for (int v = 0; v < d->n; v++) t[v] = d->views[v].time;
    qsort(t, (size_t)d->n, sizeof(double), cmp_f64);
    int nt = 0;
    for (int v = 0; v < d->n; v++)
        if (nt == 0 || t[v] != t[nt - 1]) t[nt++] = t[v];
    int nf = m->cfg.recluster_frames > 0 && m->cfg.recluster_frames < nt ? m->cfg.recluster_frames : nt;
    int64_t n = m->cfg.n, ns = m->cfg.isotropic ? 1 : 3;
    float *pos = base_malloc(sizeof(float) * 3 * (size_t)n * (size_t)(nf + 1));
    float *sc = base_malloc(sizeof(float) * (size_t)(n * ns)), *rgb = base_malloc(sizeof(float) * 3 * (size_t)n);
    float *op = base_malloc(sizeof(float) * (size_t)n);
    int32_t *lab = base_malloc(sizeof(int32_t) * (size_t)n);
    float *rest = pos + 3 * (size_t)n * (size_t)nf;
    for (int f = 0; f < nf; f++) {
        int k = nf > 1 ? (int)((int64_t)f * (nt - 1) / (nf - 1)) : 0;
        gs4d_state_at(m, t[k], pos + 3 * (size_t)n * f, sc, rgb, op);
    }
    {
        TensorScope *s = tensor_scope_begin();
        Tensor *mu = tensor_contiguous(tensor_to(m->means, TENSOR_CPU));
        memcpy(rest, tensor_f32(mu), sizeof(float) * 3 * (size_t)n);
        tensor_scope_end(s);
    }
    int rc = m->recluster(m->recluster_user, nf, n, rest, pos, lab);
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (lab[i] < 0) rc = -1;
    if (rc == 0) {
        TensorScope *s = tensor_scope_begin();
        HostSession h;
        host_begin(m, &h);
        float *l = tensor_f32(m->labels);
        for (int64_t i = 0; i < n; i++) l[i] = (float)lab[i];
        if (m->cfg.arap_weight > 0) neighbors_host(m);
        host_end(m, &h);
        tensor_scope_end(s);
        m->reclustered++;
    } else {
        m->recluster_failed++;
    }
    free(t), free(pos), free(sc), free(rgb), free(op), free(lab);
    return rc;
}

/* ---- dead trunk units (ReDo; Gs4dConfig.redo_every) ---- */

/* the flat buffers a recycling writes: parameters and both Adam moments (the same layout) */
typedef struct {
    float *p, *ea, *es;
    int64_t base; /* the flat buffer's offset: parameter t's element j is at t->offset - base + j */
} FlatRefs;

static void set_param(const FlatRefs *f, const Tensor *t, int64_t j, float v) {
    int64_t k = t->offset - f->base + j;
    f->p[k] = v, f->ea[k] = f->es[k] = 0;
}

/* recycles every trunk unit that is 0 for every canonical Gaussian (node, with nodes) at 5 times over [t0, t1];
 * returns how many (on the host session's CPU buffers) */
static int64_t redo_host(Gs4dModel *m, double t0, double t1, TensorRng *rng) {
    const Gs4dConfig *cfg = &m->cfg;
    int depth = cfg->depth, w = cfg->width;
    bool *alive = base_calloc((size_t)depth * (size_t)w, sizeof(bool));
    TensorScope *s = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    Tensor *hidden[32];
    for (int k = 0; k < 5; k++) {
        Tensor *x = cfg->deform == GS4D_DEFORM_NODES ? m->node_pos : m->means; /* the rows D runs on */
        mlp_trunk(&m->mlp, cfg, tensor_detach(x), t0 + (t1 - t0) * k / 4.0, hidden);
        for (int i = 0; i < depth; i++) {
            /* a unit is alive when its largest output over the Gaussians is > 0 */
            const float *mx = tensor_f32(tensor_contiguous(tensor_max(hidden[i], 1, (int[]){0}, false)));
            for (int j = 0; j < w; j++) alive[i * w + j] |= mx[j] > 0;
        }
    }
    ag_no_grad_end(prev);
    tensor_scope_end(s);
    GsDraw dr = {.g = rng};
    int64_t revived = 0;
    FlatRefs f = {tensor_f32(m->params.flat), tensor_f32(m->optim.exp_avg), tensor_f32(m->optim.exp_avg_sq),
                  m->params.flat->offset};
    bool he = cfg->trunk_init == GS4D_INIT_HE;
    NnLinear *heads[5] = {&m->mlp.mu, &m->mlp.scale, &m->mlp.rot, &m->mlp.color, &m->mlp.opacity};
    for (int i = 0; i < depth; i++) {
        NnLinear *l = &m->mlp.layer[i];
        int64_t fan_in = l->in;
        for (int j = 0; j < w; j++) {
            if (alive[i * w + j]) continue;
            revived++;
            /* fresh incoming weights and bias, drawn as gs4d_init's trunk init draws them */
            for (int64_t c = 0; c < fan_in; c++)
                set_param(&f, l->weight, j * fan_in + c,
                          (float)(he ? sqrt(2.0 / (double)fan_in) * gs_draw_n(&dr) : (2 * gs_draw_u(&dr) - 1) / sqrt((double)fan_in)));
            set_param(&f, l->bias, j, he ? 0.0f : (float)((2 * gs_draw_u(&dr) - 1) / sqrt((double)fan_in)));
            /* outgoing weights to zero: the deformation is unchanged at this step */
            if (i + 1 < depth) {
                NnLinear *nx = &m->mlp.layer[i + 1];
                int64_t col = i + 1 == cfg->skip ? m->mlp.in_dim + j : j;
                for (int64_t r = 0; r < nx->out; r++) set_param(&f, nx->weight, r * nx->in + col, 0);
            } else
                for (int h = 0; h < 5; h++)
                    if (heads[h]->weight)
                        for (int64_t r = 0; r < heads[h]->out; r++) set_param(&f, heads[h]->weight, r * heads[h]->in + j, 0);
        }
    }
    free(alive);
    return revived;
}

static void opacity_reset(Gs4dModel *m) { gs_opacity_reset(tensor_f32(m->opacities), m->cfg.n, &m->gopt[GS4D_OPACITY]); }

/* ---- one step ------------------------------------------------------------------------------------ */

/* the photometric L1 of the views' renders with the deformed means mu (n × 3, before the root) moved
 * by the root pose x (T, q unit) about the pivot c: R (μ − c) + c + T */
typedef struct {
    const Gs4dModel *m;
    const Gs4dData *d;
    GsGaussians g;      /* the frame's deformed set before the root */
    const float *mu;    /* its means on the host */
    double c[3];        /* the pivot */
    const int *views;
    int nv;
    Tensor **targets;   /* the views' targets over a black background */
    double *moved;      /* n × 3 scratch */
} RootSearch;

static double root_search_loss(RootSearch *r, const double x[7]) {
    int64_t n = r->m->cfg.n;
    double R[9];
    base_quat_to_mat3(x + 3, R);
    for (int64_t i = 0; i < n; i++) {
        double e[3] = {r->mu[3 * i] - r->c[0], r->mu[3 * i + 1] - r->c[1], r->mu[3 * i + 2] - r->c[2]};
        for (int a = 0; a < 3; a++) r->moved[3 * i + a] = R[3 * a] * e[0] + R[3 * a + 1] * e[1] + R[3 * a + 2] * e[2] + r->c[a] + x[a];
    }
    TensorScope *s = tensor_scope_begin();
    GsGaussians g = r->g;
    g.means = tensor_from_f64(2, (int64_t[]){n, 3}, r->g.means->dtype, r->moved);
    if (tensor_device(r->g.means) != TENSOR_CPU) g.means = tensor_to(g.means, tensor_device(r->g.means));
    static const double black[3] = {0, 0, 0};
    double sum = 0;
    for (int k = 0; k < r->nv; k++) {
        GsRenderOut o = gs4d_render_set(r->m, &g, &r->d->views[r->views[k]].cam, black);
        sum += tensor_item(gs_loss_l1(o.image, r->targets[k]));
    }
    tensor_scope_end(s);
    return sum / r->nv;
}

/* train.root_search (gs4d.h): frame f's root pose (warm-started) refined by a coordinate search over
 * rotations about the world axes through the pivot's place in the frame, by the photometric L1 of
 * up to root_search of the frame's views: at 32°, 16°, 8°, 4° and 2°, each of the six turns is
 * taken while it lowers the loss (at most 4 times a scale). Why: the root's rows stepped by Adam
 * did not find the humanoid's turn (up to 19° a frame) and wandered about every axis while the
 * body spun about the vertical. Measured (docs/gaussianimate.md §3d): the search's pose follows
 * about a third of that turn, since a few degrees move the L1 less than the fit's own error; with
 * a long ramp and its front the node deformation carries the rest without sliding. Returns the
 * loss drop. */
double gs4d_root_search(Gs4dModel *m, const Gs4dData *d, int f) {
    const Gs4dMlp *mlp = &m->mlp;
    double t = mlp->times[f];
    int lo = 0;
    while (lo < d->n && d->views[d->by_time[lo]].time < t) lo++;
    int hi = lo;
    while (hi < d->n && d->views[d->by_time[hi]].time == t) hi++;
    if (hi == lo) return 0;
    int nv = m->cfg.root_search < hi - lo ? m->cfg.root_search : hi - lo, views[64];
    if (nv > 64) nv = 64;
    for (int k = 0; k < nv; k++) views[k] = d->by_time[lo + (int)((int64_t)k * (hi - lo) / nv)]; /* spread over the ring */
    TensorScope *s = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    Gs4dModel bare = *m;
    bare.mlp.root = NULL;
    GsGaussians canon = gs4d_canonical(m);
    RootSearch r = {.m = m, .d = d, .views = views, .nv = nv};
    r.g = deform_nodes(&bare, &canon, canon.means, m->node_pos, t, NULL);
    r.mu = tensor_f32(tensor_contiguous(tensor_to(tensor_cast(r.g.means, TENSOR_F32), TENSOR_CPU)));
    const float *pv = tensor_f32(tensor_contiguous(tensor_to(m->root_pivot, TENSOR_CPU)));
    const float *row = tensor_f32(tensor_contiguous(tensor_to(tensor_narrow(mlp->root, 0, f, 1), TENSOR_CPU)));
    for (int a = 0; a < 3; a++) r.c[a] = pv[a];
    Tensor *targets[64];
    static const double black[3] = {0, 0, 0};
    for (int k = 0; k < nv; k++) targets[k] = gs4d_target(d, views[k], black);
    r.targets = targets;
    r.moved = base_malloc(sizeof(double) * 3 * (size_t)m->cfg.n);
    double x[7] = {row[0], row[1], row[2], 1 + row[3], row[4], row[5], row[6]}, qn = 0;
    for (int a = 3; a < 7; a++) qn += x[a] * x[a];
    for (int a = 3; a < 7; a++) x[a] /= sqrt(qn > 0 ? qn : 1);
    double best = root_search_loss(&r, x), first = best;
    for (double deg = 32; deg >= 2; deg /= 2) {
        double h = 0.5 * deg * M_PI / 180;
        for (int round = 0; round < 4; round++) {
            double bx[7];
            bool better = false;
            for (int c = 0; c < 6; c++) {
                double dq[4] = {cos(h), 0, 0, 0}, y[7];
                dq[1 + c / 2] = (c % 2 ? -1 : 1) * sin(h);
                memcpy(y, x, sizeof y);
                ds_quat_mul(dq, x + 3, y + 3); /* the turn after x's rotation: about the pivot's place c + T */
                double e = root_search_loss(&r, y);
                if (e < best) best = e, memcpy(bx, y, sizeof bx), better = true;
            }
            if (!better) break;
            memcpy(x, bx, sizeof x);
        }
    }
    free(r.moved);
    ag_no_grad_end(prev);
    tensor_scope_end(s);
    if (best < first) {
        HostRun hr;
        host_run_begin(m, &hr);
        float *p = tensor_f32(m->params.flat) + (mlp->root->offset - m->params.flat->offset) + 7 * f;
        for (int a = 0; a < 7; a++) p[a] = (float)(x[a] - (a == 3));
        host_run_end(m, &hr);
    }
    return first - best;
}

/* the frames the curriculum admits at this step: their table rows (and codes, with warm_codes)
 * start from the previous frame's, their root rows by constant velocity, their moments zeroed;
 * then, with root_search, each admitted frame's pose is searched */
static void table_admit(Gs4dModel *m, const Gs4dData *d) {
    double lo = window_limit(m, d, m->step - 1), hi = window_limit(m, d, m->step);
    const Gs4dMlp *mlp = &m->mlp;
    int first = -1, last = -1;
    for (int f = 1; f < mlp->frames; f++)
        if (mlp->times[f] > lo && mlp->times[f] <= hi) last = f, first = first < 0 ? f : first;
    if (first < 0) return;
    HostRun r;
    host_run_begin(m, &r);
    Tensor *rows[3] = {mlp->table, mlp->root, m->cfg.warm_codes ? mlp->codes : NULL};
    float *p = tensor_f32(m->params.flat), *ea = tensor_f32(m->optim.exp_avg), *es = tensor_f32(m->optim.exp_avg_sq);
    for (int k = 0; k < 3; k++) {
        if (!rows[k]) continue;
        int64_t w = rows[k]->shape[1], base = rows[k]->offset - m->params.flat->offset;
        for (int f = first; f <= last; f++) {
            float *row = p + base + f * w, *prev = row - w;
            if (rows[k] == mlp->root && f >= 2) /* constant velocity: 2 r_{f−1} − r_{f−2} */
                for (int64_t i = 0; i < w; i++) row[i] = 2 * prev[i] - prev[i - w];
            else
                memcpy(row, prev, sizeof(float) * (size_t)w);
            memset(ea + base + f * w, 0, sizeof(float) * (size_t)w);
            memset(es + base + f * w, 0, sizeof(float) * (size_t)w);
        }
    }
    host_run_end(m, &r);
    if (mlp->root && m->cfg.root_search > 0)
        for (int f = first; f <= last; f++) gs4d_root_search(m, d, f);
}

double gs4d_step(Gs4dModel *m, const Gs4dData *d, int v, TensorRng *rng, Gs4dStepInfo *info) {
    int64_t vv = v;
    return gs4d_step_batch(m, d, &vv, 1, rng, NULL, info);
}

double gs4d_step_batch(Gs4dModel *m, const Gs4dData *d, const int64_t *views, int batch, TensorRng *rng,
                       OptimComm *comm, Gs4dStepInfo *info) {
    if (m->cfg.dtype != TENSOR_F32) tensor_fail("gs4d_step", "training runs in f32");
    int ranks = comm ? optim_comm_size(comm) : 1;
    if (batch < 1 || batch % ranks) tensor_fail("gs4d_step", "a batch of %d views over %d ranks: need a positive multiple", batch, ranks);
    /* every rank draws every view's background, so the generators stay in step */
    double *bgs = base_malloc(sizeof(double) * 3 * (size_t)batch);
    GsDraw dr = {.g = rng};
    for (int j = 0; j < batch; j++)
        for (int a = 0; a < 3; a++) bgs[3 * j + a] = m->cfg.random_background ? gs_draw_u(&dr) : m->cfg.background[a];
    int64_t b0 = 0, b1 = batch;
    if (comm) optim_comm_shard(comm, batch, &b0, &b1);
    bool def = deforming(m), nodes = m->cfg.deform == GS4D_DEFORM_NODES;
    if (nodes && def && m->step == m->cfg.warmup) gs4d_nodes_init(m); /* the warm-up's canonical set */
    if ((m->mlp.table || m->mlp.root || (m->cfg.warm_codes && m->mlp.codes)) && def && m->cfg.time_ramp > 0 &&
        m->step > m->cfg.warmup)
        table_admit(m, d);
    double tk[7] = {0}, t_def = 0, t_ren = 0, t_loss = 0, t_back = 0;
    double ck[7] = {0}, c_def = 0, c_ren = 0, c_loss = 0, c_back = 0; /* the same on the CPU clock */
    double sums[4] = {0, 0, 0, 0}; /* loss, photometric, arap, reg: this rank's sums over its views */
    int64_t n = m->cfg.n, na = nodes ? m->cfg.nodes : n; /* the ARAP points: Gaussians, or nodes */
    int k = m->cfg.arap_k;
    int32_t *nbr = NULL;
    if (def && m->cfg.arap_weight > 0) {
        nbr = base_malloc(sizeof(int32_t) * (size_t)na * k);
        TensorScope *s = tensor_scope_begin();
        const float *nf = tensor_f32(tensor_contiguous(tensor_to(nodes ? m->node_nbr : m->neighbors, TENSOR_CPU)));
        for (int64_t i = 0; i < na * k; i++) nbr[i] = (int32_t)nf[i];
        tensor_scope_end(s);
    }
    /* this rank's densification statistics of the step, added to the buffers (after the
     * all-reduce with several ranks) */
    float *dacc = base_calloc((size_t)n * 2, sizeof(float)), *dcnt = dacc + n;
    nn_params_zero_grad(&m->params);
    /* each view's loss is scaled by 1 / (views on this rank): the gradients summed over the
     * rank's views are its mean, and the mean over ranks (equal shards) is the batch mean */
    double scale = 1.0 / (double)(b1 - b0);
    for (int64_t j = b0; j < b1; j++) {
        int v = (int)views[j];
        const Gs4dView *view = &d->views[v];
        const double *bg = bgs + 3 * j;
        tk[0] = base_now(), ck[0] = base_cpu_now();
        TensorScope *s = tensor_scope_begin();
        Tensor *target = gs4d_target(d, v, bg);
        GsGaussians canon = gs4d_canonical(m);
        Tensor *node_xf = NULL;
        GsGaussians g = !def ? canon : nodes ? deform_nodes(m, &canon, tensor_detach(canon.means), tensor_detach(m->node_pos), view->time, &node_xf) : gs4d_deform(m, &canon, view->time);
        tk[1] = base_now(), ck[1] = base_cpu_now();
        GsRenderOut r = gs4d_render_set(m, &g, &view->cam, bg);
        tk[2] = base_now(), ck[2] = base_cpu_now();
        Tensor *photo = gs_loss_photometric(r.image, target, m->cfg.lambda);
        Tensor *loss = photo, *arap = NULL;
        if (nbr) {
            arap = nodes ? gs4d_arap_loss(node_xf, m->node_pos, nbr, k) : gs4d_arap_loss(g.means, canon.means, nbr, k);
            loss = tensor_add(loss, tensor_mul_scalar(arap, m->cfg.arap_weight));
        }
        Tensor *reg = gs4d_regularizer(&g, m->cfg.reg_opacity, m->cfg.reg_scale, m->cfg.reg_flat);
        if (m->cfg.silhouette_weight > 0) { /* logged with the regularizers */
            Tensor *sil = tensor_mul_scalar(gs4d_silhouette_loss(g.means, &view->cam, &d->masks[v]), m->cfg.silhouette_weight);
            reg = reg ? tensor_add(reg, sil) : sil;
        }
        Tensor *smooth = def ? table_smooth_loss(m, view->time) : NULL;
        if (smooth) reg = reg ? tensor_add(reg, smooth) : smooth; /* logged with the regularizers */
        if (reg) loss = tensor_add(loss, reg);
        tk[3] = base_now(), ck[3] = base_cpu_now();
        ag_backward(tensor_mul_scalar(loss, scale), NULL, false);
        sums[0] += tensor_item(loss), sums[1] += tensor_item(photo), sums[2] += arap ? tensor_item(arap) : 0;
        sums[3] += reg ? tensor_item(reg) : 0;
        /* 3DGS's densification statistic: ‖∂L/∂μ'‖ of the view's own loss (undoing the scale) in
         * NDC (pixels × size / 2), summed over the steps that saw the Gaussian */
        Tensor *g2 = tensor_contiguous(tensor_to(tensor_cast(r.mean2d_grad, TENSOR_F64), TENSOR_CPU));
        const double *gg = tensor_data_ptr(g2);
        const int64_t *rad = tensor_data_ptr(tensor_contiguous(tensor_to(r.radii, TENSOR_CPU)));
        /* (in the rendered image's pixels: the same NDC gradient whatever the supersampling) */
        int ss = m->cfg.supersample > 1 ? m->cfg.supersample : 1;
        double sx = 0.5 * view->cam.width * ss / scale, sy = 0.5 * view->cam.height * ss / scale;
        for (int64_t i = 0; i < n; i++) {
            if (rad[i] <= 0) continue;
            dacc[i] += (float)hypot(gg[2 * i] * sx, gg[2 * i + 1] * sy);
            dcnt[i] += 1;
        }
        tensor_scope_end(s);
        tk[4] = base_now(), ck[4] = base_cpu_now();
        t_def += tk[1] - tk[0], t_ren += tk[2] - tk[1], t_loss += tk[3] - tk[2], t_back += tk[4] - tk[3];
        c_def += ck[1] - ck[0], c_ren += ck[2] - ck[1], c_loss += ck[3] - ck[2], c_back += ck[4] - ck[3];
    }
    free(nbr);
    free(bgs);
    if (ranks > 1) {
        tk[3] = base_now(), ck[3] = base_cpu_now();
        optim_comm_allreduce_grads(comm, &m->params);
        TensorScope *s = tensor_scope_begin();
        Tensor *st = tensor_from_data(1, (int64_t[]){2 * n}, TENSOR_F32, dacc);
        optim_comm_allreduce_mean(comm, st, 0);
        const float *sv = tensor_f32(st);
        for (int64_t i = 0; i < 2 * n; i++) dacc[i] = sv[i] * (float)ranks;
        tensor_scope_end(s);
        for (int a = 0; a < 4; a++) sums[a] = optim_comm_allreduce_sum_scalar(comm, sums[a]);
        t_back += base_now() - tk[3], c_back += base_cpu_now() - ck[3];
    }
    if (tensor_device(m->grad_accum) == TENSOR_CPU) {
        float *acc = tensor_f32(m->grad_accum), *cnt = tensor_f32(m->grad_count);
        for (int64_t i = 0; i < n; i++) acc[i] += dacc[i], cnt[i] += dcnt[i];
    } else { /* grad_accum and grad_count are adjacent in the flat buffer: one upload, one add */
        TensorScope *s = tensor_scope_begin();
        bool prev = ag_no_grad_begin();
        Tensor *st = tensor_to(tensor_from_data(1, (int64_t[]){2 * n}, TENSOR_F32, dacc), tensor_device(m->grad_accum));
        tensor_copy_(m->grad_accum, tensor_add(m->grad_accum, tensor_narrow(st, 0, 0, n)));
        tensor_copy_(m->grad_count, tensor_add(m->grad_count, tensor_narrow(st, 0, n, n)));
        ag_no_grad_end(prev);
        tensor_scope_end(s);
    }
    free(dacc);
    double lv = sums[0] / batch;
    if (info) {
        info->loss = lv;
        info->photometric = sums[1] / batch;
        info->arap = sums[2] / batch;
        info->reg = sums[3] / batch;
    }
    tk[4] = base_now(), ck[4] = base_cpu_now();
    for (int gi = 0; gi < GS4D_GROUPS; gi++) {
        if (!m->used[gi] || (gi >= GS4D_DEFORM && !def)) continue;
        optim_step(&m->gopt[gi], gs4d_lr(m, gi, m->step));
    }
    tk[5] = base_now(), ck[5] = base_cpu_now();
    m->step++;
    m->optim.step = m->step;
    m->densified = m->relocated = 0;
    bool moved = false, refine = m->step <= m->cfg.refine_until;
    bool densify = refine && m->cfg.densify_every > 0 && m->step % m->cfg.densify_every == 0;
    bool reset = refine && m->cfg.reset_every > 0 && m->step % m->cfg.reset_every == 0;
    bool knn = (m->cfg.arap_weight > 0 || nodes) && m->cfg.knn_every > 0 && m->step % m->cfg.knn_every == 0;
    bool redo = def && m->cfg.redo_every > 0 && (m->step - m->cfg.warmup) % m->cfg.redo_every == 0;
    m->revived = 0;
    if (densify || reset || knn || redo) { /* one host session (on a device: one copy down and up) */
        TensorScope *s = tensor_scope_begin();
        HostSession h;
        host_begin(m, &h);
        m->nodes_moved = 0;
        if (densify && nodes && def) m->nodes_moved = nodes_refine_host(m);
        if (densify) moved = densify_host(m, rng) > 0;
        if (reset) opacity_reset(m);
        if (redo) m->revived = redo_host(m, d->views[d->by_time[0]].time, d->views[d->by_time[d->n - 1]].time, rng);
        if (!nodes && m->cfg.arap_weight > 0 && (moved || knn)) neighbors_host(m);
        if (nodes && (moved || knn || m->nodes_moved)) node_lists_host(m);
        host_end(m, &h);
        tensor_scope_end(s);
    }
    /* after the step's own refinement, so the new clusters' neighbors are the ones the next
     * step uses (a recluster recomputes them) */
    if (m->recluster && m->cfg.recluster_every > 0 && m->step > m->cfg.warmup &&
        (m->step - m->cfg.warmup) % m->cfg.recluster_every == 0)
        gs4d_recluster(m, d);
    tk[6] = base_now(), ck[6] = base_cpu_now();
    if (info) {
        info->t_deform = t_def, info->t_render = t_ren, info->t_loss = t_loss, info->t_backward = t_back;
        info->t_optim = tk[5] - tk[4], info->t_refine = tk[6] - tk[5];
        info->c_deform = c_def, info->c_render = c_ren, info->c_loss = c_loss, info->c_backward = c_back;
        info->c_optim = ck[5] - ck[4], info->c_refine = ck[6] - ck[5];
    }
    return lv;
}

/* ---- state, export, metrics ------------------------------------------------------------------------ */

void gs4d_state_at(const Gs4dModel *m, double t, float *pos, float *scale, float *rgb, float *opacity) {
    TensorScope *s = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    GsGaussians g = gs4d_canonical(m);
    if (deforming(m)) g = gs4d_deform(m, &g, t);
    int64_t n = m->cfg.n, ns = m->cfg.isotropic ? 1 : 3;
    double *buf = base_malloc(sizeof(double) * (size_t)n * 3);
    tensor_to_f64_array(tensor_contiguous(g.means), buf);
    for (int64_t i = 0; i < 3 * n; i++) pos[i] = (float)buf[i];
    tensor_to_f64_array(tensor_contiguous(g.scales), buf);
    for (int64_t i = 0; i < ns * n; i++) scale[i] = (float)exp(buf[i]);
    tensor_to_f64_array(tensor_contiguous(g.colors), buf);
    for (int64_t i = 0; i < 3 * n; i++) rgb[i] = (float)(SH_C0 * buf[i] + 0.5);
    tensor_to_f64_array(tensor_contiguous(g.opacities), buf);
    for (int64_t i = 0; i < n; i++) opacity[i] = (float)gs_sigmoid(buf[i]);
    free(buf);
    ag_no_grad_end(prev);
    tensor_scope_end(s);
}

int64_t gs4d_surface_points(const Gs4dModel *m, const DsCamera *cam, double t, double alpha_min, float *out,
                            int64_t max_points) {
    TensorScope *s = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    GsGaussians g = gs4d_canonical(m);
    if (deforming(m)) g = gs4d_deform(m, &g, t);
    GsRenderOut r = gs4d_render_set(m, &g, cam, (double[]){0, 0, 0});
    Tensor *al = tensor_contiguous(tensor_cast(tensor_to(r.alpha, TENSOR_CPU), TENSOR_F32));
    Tensor *dp = tensor_contiguous(tensor_cast(tensor_to(r.depth, TENSOR_CPU), TENSOR_F32));
    int64_t np = (int64_t)cam->width * cam->height;
    const float *a = tensor_f32(al), *dd = tensor_f32(dp);
    float *z = base_malloc(sizeof(float) * (size_t)np);
    for (int64_t i = 0; i < np; i++) z[i] = a[i] > 0 ? dd[i] / a[i] : INFINITY; /* the expected depth */
    int64_t got = ds_camera_backproject(cam, z, a, alpha_min, out, max_points);
    free(z);
    ag_no_grad_end(prev);
    tensor_scope_end(s);
    return got;
}

int gs4d_trajectories_appearance(const char *path, int64_t n, float *log_scale, float *logit, float *rgb, char *err,
                                 size_t errlen) {
    hid_t f = base_h5_open_read(path, "a trajectories file of anima gs4d fit", err, errlen);
    if (f < 0) return -1;
    int64_t ws[3] = {-1, n, -1}, wo[2] = {-1, n}, wc[3] = {-1, n, 3};
    float *sc = NULL, *op = NULL, *co = NULL;
    int rc = base_h5_read_array(f, path, "frames/scales", 3, ws, false, (void **)&sc, err, errlen);
    if (!rc) rc = base_h5_read_array(f, path, "frames/opacities", 2, wo, false, (void **)&op, err, errlen);
    if (!rc) rc = base_h5_read_array(f, path, "frames/colors", 3, wc, false, (void **)&co, err, errlen);
    H5Fclose(f);
    if (!rc && (wo[0] != ws[0] || wc[0] != ws[0] || ws[0] < 1 || (ws[2] != 1 && ws[2] != 3)))
        rc = base_errf(err, errlen, "%s: frames/scales, opacities and colors disagree on the frames (%lld, %lld, %lld)", path,
                       (long long)ws[0], (long long)wo[0], (long long)wc[0]);
    for (int64_t i = 0; !rc && i < n; i++) {
        int64_t F = ws[0], ns = ws[2];
        double ls = 0, o = 0, c[3] = {0};
        bool bad = false;
        for (int64_t t = 0; t < F; t++) {
            for (int64_t a = 0; a < ns; a++) {
                double v = sc[(t * n + i) * ns + a];
                bad |= !(v > 0);
                ls += log(v > 0 ? v : 1e-30);
            }
            o += op[t * n + i];
            for (int k = 0; k < 3; k++) c[k] += co[(t * n + i) * 3 + k];
        }
        if (bad) {
            rc = base_errf(err, errlen, "%s: Gaussian %lld has a scale that is not positive", path, (long long)i);
            break;
        }
        o /= (double)F;
        o = o < 1e-4 ? 1e-4 : o > 1 - 1e-4 ? 1 - 1e-4 : o;
        if (log_scale) log_scale[i] = (float)(ls / (double)(F * ns));
        if (logit) logit[i] = (float)gs_logit(o);
        for (int k = 0; rgb && k < 3; k++) rgb[i * 3 + k] = (float)(c[k] / (double)F);
    }
    free(sc), free(op), free(co);
    return rc;
}

static int export_host(const Gs4dModel *m, DsGaussians *out);

int gs4d_export(const Gs4dModel *mc, DsGaussians *out) {
    /* a shallow copy, so a host session does not touch the caller's headers (they are shared,
     * and restored by host_end) */
    Gs4dModel mm = *mc, *m = &mm;
    TensorScope *scope = tensor_scope_begin();
    HostSession h;
    host_begin(m, &h);
    int rc = export_host(m, out);
    host_end(m, &h);
    tensor_scope_end(scope);
    return rc;
}

static int export_host(const Gs4dModel *m, DsGaussians *out) {
    /* colors are the degree-0 SH coefficients */
    return gs_export_params(m->cfg.n, 0, m->cfg.isotropic ? 1 : 3, tensor_f32(m->means), tensor_f32(m->scales),
                            tensor_f32(m->opacities), tensor_f32(m->colors), NULL,
                            m->quats ? tensor_f32(m->quats) : NULL, out);
}

static Tensor *clamp01(const Tensor *img) {
    int64_t n = tensor_numel(img);
    double *a = base_malloc(sizeof(double) * (size_t)n);
    tensor_to_f64_array(img, a);
    for (int64_t i = 0; i < n; i++) a[i] = a[i] < 0 ? 0 : a[i] > 1 ? 1 : a[i];
    Tensor *t = tensor_from_f64(img->ndim, img->shape, TENSOR_F64, a);
    free(a);
    return t;
}

double gs4d_ssim(const Tensor *img, const Tensor *ref) {
    TensorScope *s = tensor_scope_begin();
    bool prev = ag_no_grad_begin();
    Tensor *a = clamp01(img), *b = tensor_cast((Tensor *)ref, TENSOR_F64);
    bool valid = img->shape[0] >= GS_SSIM_WINDOW && img->shape[1] >= GS_SSIM_WINDOW;
    double v = tensor_item(gs_ssim(a, tensor_contiguous(b), valid ? GS_SSIM_VALID : GS_SSIM_SAME));
    ag_no_grad_end(prev);
    tensor_scope_end(s);
    return v;
}
