/* bench/cuda/bench_cuda.c — the anima side of `make bench-cuda`: the CPU bench's cases
 * (bench/bench_main.c: same names, sizes and method) on CUDA-resident tensors. Each case runs a
 * few warm-up steps, then N timed steps (N from the warm-up, about BENCH_SECONDS in all) and
 * prints
 *   case <name> <median_ms> <n>
 * Kernels are launched asynchronously, so a step's time is only its own once the device has
 * finished it: the device is synchronized before the clock starts and before it stops, by
 * copying one element of the step's result to the host (the backend's to_host is a blocking
 * cudaMemcpy on the legacy default stream every kernel runs on, so it returns only when all
 * earlier work is done). torch_bench_cuda.py does the same with torch.cuda.synchronize().
 *
 * The gs_* cases (the Gaussian rasterizer at 1080p) have no PyTorch side; run.sh compares them
 * with the published figures instead.
 *
 * Usage: anima-bench-cuda [case ...]   (no argument: all cases)
 *        anima-bench-cuda --probe      exit 0 when a CUDA device answers, 1 otherwise
 * Without a CUDA device it prints "skipped: no CUDA device" and exits 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "autograd/autograd.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "datasets/render/camera.h"
#include "models/gaussians/rasterize.h"
#include "nn/functional.h"
#include "tensor/backend.h"

/* Wait for the device: a blocking copy of t's first element (any device tensor would do; the
 * step's result makes the dependency obvious). */
static void sync_on(const Tensor *t) {
    char buf[8];
    tensor_backend_cuda()->to_host(buf, tensor_data_ptr(t), tensor_dtype_size(t->dtype));
}

/* a step returns a device tensor that depends on all of its work */
typedef Tensor *(*StepFn)(void *ctx);

static void run_case(const char *name, StepFn step, void *ctx, const Tensor *any) {
    double budget = getenv("BENCH_SECONDS") ? atof(getenv("BENCH_SECONDS")) : 2.0;
    double t_warm = 1e9;
    sync_on(any); /* the inputs' uploads are done */
    for (int i = 0; i < 3; i++) {
        TensorScope *s = tensor_scope_begin();
        double t0 = base_now();
        sync_on(step(ctx));
        double dt = base_now() - t0;
        tensor_scope_end(s);
        if (dt < t_warm) t_warm = dt;
        if (getenv("BENCH_VERBOSE")) fprintf(stderr, "warm-up %s %.3f ms\n", name, dt * 1e3);
    }
    int n = (int)(budget / (t_warm > 1e-6 ? t_warm : 1e-6));
    n = n < 5 ? 5 : n > 2000 ? 2000 : n;
    double *t = base_malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) {
        TensorScope *s = tensor_scope_begin();
        double t0 = base_now();
        sync_on(step(ctx));
        t[i] = base_now() - t0;
        tensor_scope_end(s); /* blocks go back to the pool; no device sync */
    }
    qsort(t, (size_t)n, sizeof *t, base_cmp_double);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    printf("case %s %.4f %d\n", name, med * 1e3, n);
    fflush(stdout);
    free(t);
}

/* N(0, 1) drawn on the host (the same numbers as the CPU bench), then uploaded: a device leaf */
static Tensor *dev_randn(int ndim, const int64_t *shape) {
    return tensor_to(tensor_randn(ndim, shape, TENSOR_F32), TENSOR_CUDA);
}

/* ---- kernels ------------------------------------------------------------------------------ */

typedef struct {
    Tensor *a, *b, *w;
} KCtx;

static Tensor *step_sgemm(void *p) {
    KCtx *c = p;
    return tensor_matmul(c->a, c->b);
}
static Tensor *step_softmax(void *p) {
    KCtx *c = p;
    return tensor_softmax(c->a, -1);
}
static Tensor *step_layer_norm(void *p) {
    KCtx *c = p;
    return tensor_layer_norm(c->a, 1, c->w, c->b, 1e-5);
}
static Tensor *step_gelu(void *p) {
    KCtx *c = p;
    return tensor_gelu(c->a);
}

/* ---- the pre-LN self-attention block, forward + backward (bench_main.c's sizes) ------------ */

enum { BB = 4, BT = 256, BC = 256, BH = 8, BM = 4 * BC };

typedef struct {
    Tensor *x, *gy;
    NnSelfBlockWeights w;
} BlockCtx;

static Tensor *leaf(Tensor *host) { return tensor_requires_grad(tensor_to(host, TENSOR_CUDA), true); }

static Tensor *param(int ndim, const int64_t *shape, double scale) {
    Tensor *t = tensor_randn(ndim, shape, TENSOR_F32);
    tensor_scale_(t, scale);
    return leaf(t);
}

static void block_init(BlockCtx *c) {
    double s = 1.0 / sqrt((double)BC), sm = 1.0 / sqrt((double)BM);
    c->x = leaf(tensor_randn(TENSOR_SHAPE(BB, BT, BC), TENSOR_F32));
    c->gy = dev_randn(TENSOR_SHAPE(BB, BT, BC));
    NnSelfBlockWeights *w = &c->w;
    w->ln1_w = leaf(tensor_ones(TENSOR_SHAPE(BC), TENSOR_F32));
    w->ln1_b = leaf(tensor_zeros(TENSOR_SHAPE(BC), TENSOR_F32));
    w->qkv_w = param(TENSOR_SHAPE(3 * BC, BC), s);
    w->qkv_b = param(TENSOR_SHAPE(3 * BC), s);
    w->proj_w = param(TENSOR_SHAPE(BC, BC), s);
    w->proj_b = param(TENSOR_SHAPE(BC), s);
    w->ln2_w = leaf(tensor_ones(TENSOR_SHAPE(BC), TENSOR_F32));
    w->ln2_b = leaf(tensor_zeros(TENSOR_SHAPE(BC), TENSOR_F32));
    w->fc_w = param(TENSOR_SHAPE(BM, BC), s);
    w->fc_b = param(TENSOR_SHAPE(BM), s);
    w->fc2_w = param(TENSOR_SHAPE(BC, BM), sm);
    w->fc2_b = param(TENSOR_SHAPE(BC), sm);
}

/* Gradients accumulate into the leaves' .grad, as in the CPU bench and the torch script. The
 * first layer's weight gradient is among the last written by backward: sync on it. */
static Tensor *step_block(void *p) {
    BlockCtx *c = p;
    Tensor *y = nn_self_block(c->x, &c->w, BH);
    ag_backward(y, c->gy, false);
    return c->w.ln1_w->grad;
}

/* ---- fused multi-head attention (nn_attention_tiled: tensor/cuda/cuda_attention.cu) --------
 * bench_attention.c's shape at T = 1024: B = 1, 8 heads of 64, self-attention; attn_fwd_1024
 * the forward (grad mode off), attn_fwdbwd_1024 forward + backward into q, k, v. The torch side
 * is F.scaled_dot_product_attention (whichever f32 kernel it picks). */

typedef struct {
    Tensor *q, *k, *v, *gy;
    bool backward;
} AttCtx;

static void att_init(AttCtx *c, bool backward) {
    c->q = leaf(tensor_randn(TENSOR_SHAPE(1, 1024, 512), TENSOR_F32));
    c->k = leaf(tensor_randn(TENSOR_SHAPE(1, 1024, 512), TENSOR_F32));
    c->v = leaf(tensor_randn(TENSOR_SHAPE(1, 1024, 512), TENSOR_F32));
    c->gy = dev_randn(TENSOR_SHAPE(1, 1024, 512));
    c->backward = backward;
}

static Tensor *step_attention(void *p) {
    AttCtx *c = p;
    if (!c->backward) {
        bool g = ag_no_grad_begin();
        Tensor *y = nn_attention_tiled(c->q, c->k, c->v, 8);
        ag_no_grad_end(g);
        return y;
    }
    ag_backward(nn_attention_tiled(c->q, c->k, c->v, 8), c->gy, false);
    return c->k->grad; /* written by the second backward kernel */
}

/* ---- the Gaussian rasterizer at 1080p (models/gaussians, CUDA backend) ----------------------
 * A synthetic scene standing in for a fitted one: n anisotropic Gaussians filling the view
 * frustum at depths 2–12, world scales log-uniform in [0.002, 0.02] (3σ screen radii of a few
 * pixels, like a converged 3DGS scene), opacities sigmoid(N(0, 2²)), SH degree 3 — the layout of
 * the published figures (gaussianimate.md §1: ~2.8M Gaussians at 1080p). Inputs are f32 device
 * tensors. gs_fwd_*: the forward only, grad mode off; gs_fwdbwd_*: forward + backward of
 * sum(packed · g) into every input (the leaves' .grad accumulate, as in the block case). */

typedef struct {
    Tensor *in[5]; /* means, scales, opacities, colors, quats */
    Tensor *gy;
    DsCamera cam;
    bool backward;
} GsCtx;

static uint64_t gs_lcg = 0x2545f4914f6cdd1dull;
static double gs_u(void) {
    gs_lcg = gs_lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(gs_lcg >> 11) / 9007199254740992.0;
}
static double gs_n(void) { /* Box–Muller */
    double u = gs_u(), v = gs_u();
    return sqrt(-2 * log(u > 1e-300 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

static void gs_init(GsCtx *c, int64_t n, bool backward) {
    double eye[3] = {0, 0, -6}, target[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    c->cam = ds_camera_look_at(eye, target, up, 1920, 1080, 50.0);
    c->backward = backward;
    Tensor *h[5] = {tensor_empty(TENSOR_SHAPE(n, 3), TENSOR_F32), tensor_empty(TENSOR_SHAPE(n, 3), TENSOR_F32),
                    tensor_empty(TENSOR_SHAPE(n, 1), TENSOR_F32), tensor_empty(TENSOR_SHAPE(n, 16, 3), TENSOR_F32),
                    tensor_empty(TENSOR_SHAPE(n, 4), TENSOR_F32)};
    float *m = tensor_f32(h[0]), *s = tensor_f32(h[1]), *o = tensor_f32(h[2]), *col = tensor_f32(h[3]), *q = tensor_f32(h[4]);
    const DsCamera *cm = &c->cam;
    double tx = 0.55 * cm->width / cm->fx, ty = 0.55 * cm->height / cm->fy;
    for (int64_t i = 0; i < n; i++) {
        double tc[3];
        tc[2] = 2 + 10 * cbrt(gs_u()); /* uniform in the frustum's volume */
        tc[0] = (2 * gs_u() - 1) * tx * tc[2], tc[1] = (2 * gs_u() - 1) * ty * tc[2];
        for (int a = 0; a < 3; a++)
            m[3 * i + a] = (float)(cm->R[a] * (tc[0] - cm->t[0]) + cm->R[3 + a] * (tc[1] - cm->t[1]) +
                                   cm->R[6 + a] * (tc[2] - cm->t[2]));
        double base = log(0.002) + gs_u() * log(10.0);
        for (int a = 0; a < 3; a++) s[3 * i + a] = (float)(base + 0.5 * gs_n());
        for (int a = 0; a < 4; a++) q[4 * i + a] = (float)gs_n();
        o[i] = (float)(2 * gs_n());
        for (int k = 0; k < 16; k++)
            for (int ch = 0; ch < 3; ch++) col[(16 * i + k) * 3 + ch] = (float)(k == 0 ? gs_n() : 0.2 * gs_n());
    }
    for (int k = 0; k < 5; k++) {
        c->in[k] = tensor_to(h[k], TENSOR_CUDA);
        if (backward) tensor_requires_grad(c->in[k], true);
    }
    c->gy = backward ? dev_randn(TENSOR_SHAPE(1080, 1920, 5)) : NULL;
}

static Tensor *step_gs(void *p) {
    GsCtx *c = p;
    GsGaussians g = {c->in[0], c->in[1], c->in[4], c->in[2], c->in[3]};
    double bg[3] = {0, 0, 0};
    if (!c->backward) {
        bool prev = tensor_grad_set_enabled(false);
        GsRenderOut r = gs_render(&g, &c->cam, bg);
        tensor_grad_set_enabled(prev);
        return r.packed;
    }
    GsRenderOut r = gs_render(&g, &c->cam, bg);
    ag_backward(r.packed, c->gy, false);
    return c->in[0]->grad; /* means: written by the last kernel of the backward */
}

static bool wanted(int argc, char **argv, const char *name);

static void gs_case(int argc, char **argv, const char *name, int64_t n, bool backward) {
    if (!wanted(argc, argv, name)) return;
    TensorScope *s = tensor_scope_begin();
    GsCtx c;
    gs_init(&c, n, backward);
    run_case(name, step_gs, &c, c.in[3]);
    tensor_scope_end(s);
}

/* ---- main --------------------------------------------------------------------------------- */

static bool wanted(int argc, char **argv, const char *name) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name)) return true;
    return false;
}

int main(int argc, char **argv) {
    if (!tensor_backend_cuda()) {
        if (argc > 1 && !strcmp(argv[1], "--probe")) return 1;
        printf("skipped: no CUDA device\n");
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) return 0;
    tensor_manual_seed(0);
    if (wanted(argc, argv, "sgemm_1024")) {
        KCtx c = {dev_randn(TENSOR_SHAPE(1024, 1024)), dev_randn(TENSOR_SHAPE(1024, 1024)), NULL};
        run_case("sgemm_1024", step_sgemm, &c, c.b);
    }
    if (wanted(argc, argv, "softmax_4096x1024")) {
        KCtx c = {dev_randn(TENSOR_SHAPE(4096, 1024)), NULL, NULL};
        run_case("softmax_4096x1024", step_softmax, &c, c.a);
    }
    if (wanted(argc, argv, "layer_norm_4096x1024")) {
        KCtx c = {dev_randn(TENSOR_SHAPE(4096, 1024)), dev_randn(TENSOR_SHAPE(1024)), dev_randn(TENSOR_SHAPE(1024))};
        run_case("layer_norm_4096x1024", step_layer_norm, &c, c.b);
    }
    if (wanted(argc, argv, "gelu_16M")) {
        KCtx c = {dev_randn(TENSOR_SHAPE(16 << 20)), NULL, NULL};
        run_case("gelu_16M", step_gelu, &c, c.a);
    }
    if (wanted(argc, argv, "block_fwd_bwd")) {
        BlockCtx c;
        block_init(&c);
        run_case("block_fwd_bwd", step_block, &c, c.gy);
    }
    if (wanted(argc, argv, "attn_fwd_1024")) {
        AttCtx c;
        att_init(&c, false);
        run_case("attn_fwd_1024", step_attention, &c, c.gy);
    }
    if (wanted(argc, argv, "attn_fwdbwd_1024")) {
        AttCtx c;
        att_init(&c, true);
        run_case("attn_fwdbwd_1024", step_attention, &c, c.gy);
    }
    gs_case(argc, argv, "gs_fwd_1M_1080p", 1000000, false);
    gs_case(argc, argv, "gs_fwdbwd_1M_1080p", 1000000, true);
    gs_case(argc, argv, "gs_fwd_2.8M_1080p", 2800000, false);
    gs_case(argc, argv, "gs_fwdbwd_2.8M_1080p", 2800000, true);
    gs_case(argc, argv, "gs_fwd_3M_1080p", 3000000, false);
    gs_case(argc, argv, "gs_fwdbwd_3M_1080p", 3000000, true);
    tensor_runtime_shutdown();
    return 0;
}
