/* models/gaussians/rasterize.c — Tensor glue of the rasterizer: checks the inputs, brings them
 * to f64 arrays, runs a backend (raster_core.h: the CPU one for CPU tensors, the CUDA one for
 * TENSOR_CUDA tensors, whose arrays are then device f64 tensors of the current scope) and
 * registers forward and backward with ag_custom_apply. The op's single output is the packed (H, W, 5) image; gs_render hands out views
 * of it, so gradients of image, alpha and depth all flow back through one node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/custom.h"
#include "base/alloc.h"
#include "raster_core.h"
#include "rasterize.h"

enum { IN_MEANS, IN_SCALES, IN_OPAC, IN_COLORS, IN_QUATS };

typedef struct {
    GsRasterInputs meta; /* sizes, camera, flags; the array pointers are set per call */
    GsRasterState st;    /* filled by the forward, read by the backward */
    const GsRasterBackend *be;
    Tensor *radii;       /* (N) i64, written by the forward */
    const double *dev_in[5]; /* CUDA: the f64 device inputs the forward made, reused by the backward */
    Tensor *mean2d_grad; /* (N, 2), accumulated by the backward */
} GsOpCtx;

static void *scope_alloc(void *user, size_t nbytes) { return tensor_scope_alloc((TensorScope *)user, nbytes); }

#ifdef ANIMA_CUDA
/* ---- the CUDA path: every array a device tensor of the current scope (the pool's memory, freed
 * with the scope, so the forward's state lives as long as the recorded node) --------------- */

static void *scope_alloc_cuda(void *user, size_t nbytes) {
    (void)user;
    int64_t n = (int64_t)((nbytes + 7) / 8);
    if (n < 1) n = 1;
    return tensor_data_ptr(tensor_empty_on(1, &n, TENSOR_F64, TENSOR_CUDA));
}

/* t as a contiguous f64 device tensor's data (t's own when it already is one) */
static const double *dev_as_f64(Tensor *t) {
    Tensor *d = tensor_contiguous(tensor_cast(tensor_detach(t), TENSOR_F64));
    return (const double *)tensor_data_ptr(d);
}

/* The forward converts (f32 inputs: a cast kernel each) and keeps the pointers in the context;
 * the backward reuses them — they live in the forward's scope, like the state st. */
static void bind_inputs_cuda(GsOpCtx *ctx, GsRasterInputs *in, int n, Tensor *const *x) {
    for (int k = 0; k < n; k++)
        if (!ctx->dev_in[k]) ctx->dev_in[k] = dev_as_f64(x[k]);
    in->means = ctx->dev_in[IN_MEANS];
    in->scales = ctx->dev_in[IN_SCALES];
    in->opacities = ctx->dev_in[IN_OPAC];
    in->colors = ctx->dev_in[IN_COLORS];
    in->quats = n > IN_QUATS ? ctx->dev_in[IN_QUATS] : NULL;
}

static Tensor *gs_op_forward_cuda(GsOpCtx *ctx, int n, Tensor *const *x) {
    GsRasterInputs in = ctx->meta;
    bind_inputs_cuda(ctx, &in, n, x);
    ctx->st.alloc = scope_alloc_cuda;
    ctx->st.alloc_user = NULL;
    Tensor *out = tensor_empty_on(TENSOR_SHAPE(in.height, in.width, GS_OUT_N), TENSOR_F64, TENSOR_CUDA);
    ctx->be->forward(&in, &ctx->st, (double *)tensor_data_ptr(out));
    gs_cuda_radius_to_i64(ctx->st.radius, (int64_t *)tensor_data_ptr(ctx->radii), in.n);
    TensorDType dt = x[IN_MEANS]->dtype;
    return dt == TENSOR_F64 ? out : tensor_cast(out, dt);
}

static void gs_op_backward_cuda(GsOpCtx *ctx, int n, Tensor *const *x, Tensor *grad_out, const bool *need,
                                Tensor **grad_in) {
    GsRasterInputs in = ctx->meta;
    bind_inputs_cuda(ctx, &in, n, x);
    const double *go = dev_as_f64(grad_out);
    GsRasterGrads g = {0};
    double **slot[5] = {&g.means, &g.scales, &g.opacities, &g.colors, &g.quats};
    Tensor *gt[5] = {0};
    for (int k = 0; k < n; k++)
        if (need[k]) {
            gt[k] = tensor_empty_on(x[k]->ndim, x[k]->shape, TENSOR_F64, TENSOR_CUDA);
            *slot[k] = (double *)tensor_data_ptr(gt[k]);
        }
    Tensor *m2 = tensor_empty_on(TENSOR_SHAPE(in.n, 2), TENSOR_F64, TENSOR_CUDA);
    g.mean2d = (double *)tensor_data_ptr(m2);
    ctx->be->backward(&in, &ctx->st, go, &g);
    for (int k = 0; k < n; k++)
        if (need[k]) grad_in[k] = x[k]->dtype == TENSOR_F64 ? gt[k] : tensor_cast(gt[k], x[k]->dtype);
    /* the densification statistic: accumulated over every backward through this render */
    Tensor *acc = ctx->mean2d_grad;
    tensor_add_(acc, acc->dtype == TENSOR_F64 ? m2 : tensor_cast(m2, acc->dtype), 1.0);
}
#endif

/* t as contiguous f64 values: its own data when it already is, else a malloc'ed copy (*owned). */
static const double *as_f64(const Tensor *t, double **owned) {
    *owned = NULL;
    if (t->dtype == TENSOR_F64 && tensor_is_contiguous(t)) return tensor_f64(t);
    int64_t n = tensor_numel(t);
    double *p = base_malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (t->dtype == TENSOR_F32 && tensor_is_contiguous(t) && tensor_device(t) == TENSOR_CPU) {
        const float *f = tensor_f32(t);
        for (int64_t i = 0; i < n; i++) p[i] = f[i];
    } else {
        tensor_to_f64_array(t, p);
    }
    *owned = p;
    return p;
}

typedef struct {
    double *owned[5];
} Converted;

static void bind_inputs(GsRasterInputs *in, int n, Tensor *const *x, Converted *cv) {
    memset(cv, 0, sizeof *cv);
    in->means = as_f64(x[IN_MEANS], &cv->owned[0]);
    in->scales = as_f64(x[IN_SCALES], &cv->owned[1]);
    in->opacities = as_f64(x[IN_OPAC], &cv->owned[2]);
    in->colors = as_f64(x[IN_COLORS], &cv->owned[3]);
    in->quats = n > IN_QUATS ? as_f64(x[IN_QUATS], &cv->owned[4]) : NULL;
}

static void release_inputs(Converted *cv) {
    for (int k = 0; k < 5; k++) free(cv->owned[k]);
}

static Tensor *gs_op_forward(void *vctx, int n, Tensor *const *x) {
    GsOpCtx *ctx = vctx;
#ifdef ANIMA_CUDA
    if (tensor_device(x[IN_MEANS]) == TENSOR_CUDA) return gs_op_forward_cuda(ctx, n, x);
#endif
    GsRasterInputs in = ctx->meta;
    Converted cv;
    bind_inputs(&in, n, x, &cv);
    ctx->st.alloc = scope_alloc;
    ctx->st.alloc_user = tensor_scope_current();
    TensorDType dt = x[IN_MEANS]->dtype;
    Tensor *out = tensor_empty(TENSOR_SHAPE(in.height, in.width, GS_OUT_N), dt);
    size_t npx = (size_t)in.width * in.height * GS_OUT_N;
    double *buf = dt == TENSOR_F64 ? tensor_f64(out) : base_malloc(sizeof(double) * npx);
    ctx->be->forward(&in, &ctx->st, buf);
    if (dt != TENSOR_F64) {
        float *o = tensor_f32(out);
        for (size_t k = 0; k < npx; k++) o[k] = (float)buf[k];
        free(buf);
    }
    int64_t *r = tensor_i64(ctx->radii);
    for (int i = 0; i < in.n; i++) r[i] = ctx->st.radius[i];
    release_inputs(&cv);
    return out;
}

static Tensor *grad_tensor(const Tensor *like, const double *data) {
    return tensor_from_f64(like->ndim, like->shape, like->dtype, data);
}

static void gs_op_backward(void *vctx, int n, Tensor *const *x, Tensor *out, Tensor *grad_out, const bool *need,
                           Tensor **grad_in) {
    (void)out;
    GsOpCtx *ctx = vctx;
#ifdef ANIMA_CUDA
    if (tensor_device(x[IN_MEANS]) == TENSOR_CUDA) {
        gs_op_backward_cuda(ctx, n, x, grad_out, need, grad_in);
        return;
    }
#endif
    GsRasterInputs in = ctx->meta;
    Converted cv;
    bind_inputs(&in, n, x, &cv);
    double *go_owned;
    const double *go = as_f64(grad_out, &go_owned);
    GsRasterGrads g = {0};
    double **slot[5] = {&g.means, &g.scales, &g.opacities, &g.colors, &g.quats};
    for (int k = 0; k < n; k++)
        if (need[k]) {
            *slot[k] = base_malloc(sizeof(double) * (size_t)(tensor_numel(x[k]) ? tensor_numel(x[k]) : 1));
        }
    g.mean2d = base_malloc(sizeof(double) * 2 * (size_t)(in.n ? in.n : 1));
    ctx->be->backward(&in, &ctx->st, go, &g);
    for (int k = 0; k < n; k++)
        if (need[k]) grad_in[k] = grad_tensor(x[k], *slot[k]);
    /* the densification statistic: accumulated over every backward through this render */
    Tensor *m2 = ctx->mean2d_grad;
    if (m2->dtype == TENSOR_F64) {
        double *p = tensor_f64(m2);
        for (int i = 0; i < 2 * in.n; i++) p[i] += g.mean2d[i];
    } else {
        float *p = tensor_f32(m2);
        for (int i = 0; i < 2 * in.n; i++) p[i] += (float)g.mean2d[i];
    }
    for (int k = 0; k < 5; k++) free(*slot[k]);
    free(g.mean2d);
    free(go_owned);
    release_inputs(&cv);
}

static const AgCustomOp gs_rasterize_op = {"gs_rasterize", gs_op_forward, gs_op_backward};

static void check_input(const char *what, const Tensor *t, const Tensor *ref, int ndim, const int64_t *shape) {
    char b1[128], b2[128];
    if (t->dtype != ref->dtype)
        tensor_fail("gs_render", "%s is %s but means are %s", what, tensor_dtype_name(t->dtype), tensor_dtype_name(ref->dtype));
    if (tensor_device(t) != tensor_device(ref))
        tensor_fail("gs_render", "%s is on %s but means are on %s", what, tensor_device(t) == TENSOR_CUDA ? "cuda" : "cpu",
                    tensor_device(ref) == TENSOR_CUDA ? "cuda" : "cpu");
    bool ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = shape[d] < 0 || t->shape[d] == shape[d];
    if (!ok) {
        Tensor want = {.ndim = ndim};
        for (int d = 0; d < ndim; d++) want.shape[d] = shape[d];
        tensor_fail("gs_render", "%s has shape %s, expected %s (-1: any)", what, tensor_shape_str(t, b1),
                    tensor_shape_str(&want, b2));
    }
}

GsRenderOut gs_render(const GsGaussians *g, const DsCamera *cam, const double background[3]) {
    return gs_render_with(g, cam, background, NULL);
}

GsRenderOut gs_render_with(const GsGaussians *g, const DsCamera *cam, const double background[3],
                           const GsRenderOptions *opt) {
    char b[128];
    GsRenderOptions o = opt ? *opt : GS_RENDER_DEFAULTS;
    if (!g || !g->means || !g->scales || !g->opacities || !g->colors)
        tensor_fail("gs_render", "means, scales, opacities and colors are required");
    if (!(o.dilation >= 0) || !isfinite(o.dilation))
        tensor_fail("gs_render", "dilation %g px^2: must be finite and >= 0", o.dilation);
    Tensor *m = g->means;
    if (m->ndim != 2 || m->shape[1] != 3) tensor_fail("gs_render", "means must be (N, 3), got %s", tensor_shape_str(m, b));
    if (m->dtype != TENSOR_F32 && m->dtype != TENSOR_F64)
        tensor_fail("gs_render", "Gaussians must be f32 or f64, got %s", tensor_dtype_name(m->dtype));
    int64_t N = m->shape[0];
    if (N > INT32_MAX) tensor_fail("gs_render", "%lld Gaussians: at most 2^31 - 1", (long long)N);
    if (cam->width <= 0 || cam->height <= 0 || !(cam->fx > 0) || !(cam->fy > 0))
        tensor_fail("gs_render", "camera %dx%d with fx %g, fy %g: need positive size and focal lengths", cam->width,
                    cam->height, cam->fx, cam->fy);
    check_input("means", m, m, 2, (const int64_t[]){N, 3});
    bool iso = g->scales->ndim == 2 && g->scales->shape[1] == 1;
    check_input("scales", g->scales, m, 2, (const int64_t[]){N, iso ? 1 : 3});
    if (iso && g->quats) tensor_fail("gs_render", "isotropic Gaussians (scales (N, 1)) take no quaternions");
    if (!iso && !g->quats) tensor_fail("gs_render", "anisotropic Gaussians (scales (N, 3)) need quaternions (N, 4)");
    if (!iso) check_input("quats", g->quats, m, 2, (const int64_t[]){N, 4});
    if (g->opacities->ndim == 1) check_input("opacities", g->opacities, m, 1, (const int64_t[]){N});
    else check_input("opacities", g->opacities, m, 2, (const int64_t[]){N, 1});
    int deg, coeffs;
    if (g->colors->ndim == 2) {
        check_input("colors", g->colors, m, 2, (const int64_t[]){N, 3});
        deg = -1, coeffs = 1;
    } else {
        check_input("colors", g->colors, m, 3, (const int64_t[]){N, -1, 3});
        coeffs = (int)g->colors->shape[1];
        deg = coeffs == 1 ? 0 : coeffs == 4 ? 1 : coeffs == 9 ? 2 : coeffs == 16 ? 3 : -2;
        if (deg == -2)
            tensor_fail("gs_render", "colors %s: SH need (N, K, 3) with K in {1, 4, 9, 16} (degree 0..3)",
                        tensor_shape_str(g->colors, b));
    }

    GsOpCtx ctx = {0};
    GsRasterInputs *in = &ctx.meta;
    in->n = (int)N;
    in->width = cam->width, in->height = cam->height;
    in->fx = cam->fx, in->fy = cam->fy, in->cx = cam->cx, in->cy = cam->cy;
    memcpy(in->R, cam->R, sizeof in->R);
    memcpy(in->t, cam->t, sizeof in->t);
    in->znear = cam->znear > 0 ? cam->znear : 0.01;
    for (int c = 0; c < 3; c++) in->bg[c] = background ? background[c] : 0;
    in->sh_degree = deg, in->sh_coeffs = coeffs, in->isotropic = iso;
    in->dilation = o.dilation;
    TensorDevice dev = tensor_device(m);
    ctx.be = &gs_raster_backend_cpu;
    if (dev == TENSOR_CUDA) {
#ifdef ANIMA_CUDA
        ctx.be = &gs_raster_backend_cuda;
#else
        tensor_fail("gs_render", "means are on cuda but this build has no CUDA backend (CUDA=0)");
#endif
    }
    if (dev == TENSOR_CPU) {
        ctx.radii = tensor_zeros(TENSOR_SHAPE(N), TENSOR_I64);
        ctx.mean2d_grad = tensor_zeros(TENSOR_SHAPE(N, 2), m->dtype);
    } else { /* made on the device: no host-to-device copy of N-sized zeros per render */
        ctx.radii = tensor_empty_on(TENSOR_SHAPE(N), TENSOR_I64, dev); /* every entry written by the forward */
        ctx.mean2d_grad = tensor_empty_on(TENSOR_SHAPE(N, 2), m->dtype, dev);
        tensor_fill_(ctx.mean2d_grad, 0);
    }

    Tensor *inputs[5] = {g->means, g->scales, g->opacities, g->colors, g->quats};
    Tensor *packed = ag_custom_apply(&gs_rasterize_op, iso ? 4 : 5, inputs, &ctx, sizeof ctx);
    GsRenderOut r = {0};
    r.packed = packed;
    r.image = tensor_narrow(packed, 2, GS_OUT_R, 3);
    r.alpha = tensor_squeeze(tensor_narrow(packed, 2, GS_OUT_ALPHA, 1), 2);
    r.depth = tensor_squeeze(tensor_narrow(packed, 2, GS_OUT_DEPTH, 1), 2);
    r.radii = ctx.radii;
    r.mean2d_grad = ctx.mean2d_grad;
    return r;
}
