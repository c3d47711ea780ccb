/* bench/bench_main.c — the CPU side of the side-by-side benchmark (bench/run.sh joins it with
 * bench/torch_bench.py). Each case runs a few warm-up steps, then N timed steps with N chosen
 * so the case takes about BENCH_SECONDS (default 2) in all; it prints one line
 *   case <name> <median_ms> <n>
 * Every step runs inside its own tensor scope, so the arena's chunks are reused from step to
 * step as in a training loop. Usage: anima-bench [case ...] (no argument: all cases);
 * BENCH_VERBOSE=1 prints the warm-up times to stderr. The other bench/ C files add their
 * cases through a *_cases(argc, argv, wanted, run_case) hook called from main. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "autograd/autograd.h"
#include "base/clock.h"
#include "nn/functional.h"

typedef void (*StepFn)(void *ctx);

/* Warm up, size N from the warm-up time, then report the median of N timed steps. */
static void run_case(const char *name, StepFn step, void *ctx) {
    double budget = getenv("BENCH_SECONDS") ? atof(getenv("BENCH_SECONDS")) : 2.0;
    double t_warm = 1e9;
    for (int i = 0; i < 3; i++) {
        TensorScope *s = tensor_scope_begin();
        double t0 = base_now();
        step(ctx);
        double dt = base_now() - t0;
        tensor_scope_end(s);
        if (dt < t_warm) t_warm = dt;
        if (getenv("BENCH_VERBOSE")) fprintf(stderr, "warm-up %s %.2f ms\n", name, dt * 1e3);
    }
    int n = (int)(budget / (t_warm > 1e-6 ? t_warm : 1e-6));
    n = n < 5 ? 5 : n > 500 ? 500 : n;
    double *t = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) {
        TensorScope *s = tensor_scope_begin();
        double t0 = base_now();
        step(ctx);
        t[i] = base_now() - t0;
        tensor_scope_end(s);
    }
    qsort(t, (size_t)n, sizeof *t, base_cmp_double);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    printf("case %s %.4f %d\n", name, med * 1e3, n);
    fflush(stdout);
    free(t);
}

/* ---- kernels ------------------------------------------------------------------------------ */

typedef struct {
    Tensor *a, *b, *w;
} KCtx;

static void step_sgemm(void *p) {
    KCtx *c = p;
    (void)tensor_matmul(c->a, c->b);
}
static void step_softmax(void *p) {
    KCtx *c = p;
    (void)tensor_softmax(c->a, -1);
}
static void step_layer_norm(void *p) {
    KCtx *c = p;
    (void)tensor_layer_norm(c->a, 1, c->w, c->b, 1e-5);
}
static void step_gelu(void *p) {
    KCtx *c = p;
    (void)tensor_gelu(c->a);
}

/* ---- the pre-LN self-attention block, forward + backward ---------------------------------- */

enum { BB = 4, BT = 256, BC = 256, BH = 8, BM = 4 * BC };

typedef struct {
    Tensor *x, *gy;
    NnSelfBlockWeights w;
    Tensor *params[13];
} BlockCtx;

static Tensor *param(int ndim, const int64_t *shape, double scale) {
    Tensor *t = tensor_randn(ndim, shape, TENSOR_F32);
    tensor_scale_(t, scale);
    return tensor_requires_grad(t, true);
}

static void block_init(BlockCtx *c) {
    double s = 1.0 / sqrt((double)BC), sm = 1.0 / sqrt((double)BM);
    c->x = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(BB, BT, BC), TENSOR_F32), true);
    c->gy = tensor_randn(TENSOR_SHAPE(BB, BT, BC), TENSOR_F32);
    NnSelfBlockWeights *w = &c->w;
    w->ln1_w = tensor_requires_grad(tensor_ones(TENSOR_SHAPE(BC), TENSOR_F32), true);
    w->ln1_b = tensor_requires_grad(tensor_zeros(TENSOR_SHAPE(BC), TENSOR_F32), true);
    w->qkv_w = param(TENSOR_SHAPE(3 * BC, BC), s);
    w->qkv_b = param(TENSOR_SHAPE(3 * BC), s);
    w->proj_w = param(TENSOR_SHAPE(BC, BC), s);
    w->proj_b = param(TENSOR_SHAPE(BC), s);
    w->ln2_w = tensor_requires_grad(tensor_ones(TENSOR_SHAPE(BC), TENSOR_F32), true);
    w->ln2_b = tensor_requires_grad(tensor_zeros(TENSOR_SHAPE(BC), TENSOR_F32), true);
    w->fc_w = param(TENSOR_SHAPE(BM, BC), s);
    w->fc_b = param(TENSOR_SHAPE(BM), s);
    w->fc2_w = param(TENSOR_SHAPE(BC, BM), sm);
    w->fc2_b = param(TENSOR_SHAPE(BC), sm);
    Tensor *ps[13] = {c->x, w->ln1_w, w->ln1_b, w->qkv_w, w->qkv_b, w->proj_w, w->proj_b,
                      w->ln2_w, w->ln2_b, w->fc_w, w->fc_b, w->fc2_w, w->fc2_b};
    memcpy(c->params, ps, sizeof ps);
}

/* Gradients accumulate into the leaves' .grad (allocated once, in the leaves' scope), as
 * PyTorch's do when they are not reset between steps. */
static void step_block(void *p) {
    BlockCtx *c = p;
    Tensor *y = nn_self_block(c->x, &c->w, BH);
    ag_backward(y, c->gy, false);
}

/* ---- main --------------------------------------------------------------------------------- */

void bench_attention_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                           void (*run_case)(const char *, void (*)(void *), void *));
void bench_gaussians_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                           void (*run_case)(const char *, void (*)(void *), void *));
void bench_physskin_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                          void (*run_case)(const char *, void (*)(void *), void *));
void bench_gru_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                     void (*run_case)(const char *, void (*)(void *), void *));
void bench_partmm_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                        void (*run_case)(const char *, void (*)(void *), void *));
void bench_gs4d_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                      void (*run_case)(const char *, void (*)(void *), void *));

static bool wanted(int argc, char **argv, const char *name) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name)) return true;
    return false;
}

int main(int argc, char **argv) {
    tensor_manual_seed(0);
    if (wanted(argc, argv, "sgemm_1024")) {
        KCtx c = {tensor_randn(TENSOR_SHAPE(1024, 1024), TENSOR_F32), tensor_randn(TENSOR_SHAPE(1024, 1024), TENSOR_F32), NULL};
        run_case("sgemm_1024", step_sgemm, &c);
    }
    if (wanted(argc, argv, "softmax_4096x1024")) {
        KCtx c = {tensor_randn(TENSOR_SHAPE(4096, 1024), TENSOR_F32), NULL, NULL};
        run_case("softmax_4096x1024", step_softmax, &c);
    }
    if (wanted(argc, argv, "layer_norm_4096x1024")) {
        KCtx c = {tensor_randn(TENSOR_SHAPE(4096, 1024), TENSOR_F32), tensor_randn(TENSOR_SHAPE(1024), TENSOR_F32),
                  tensor_randn(TENSOR_SHAPE(1024), TENSOR_F32)};
        run_case("layer_norm_4096x1024", step_layer_norm, &c);
    }
    if (wanted(argc, argv, "gelu_16M")) {
        KCtx c = {tensor_randn(TENSOR_SHAPE(16 << 20), TENSOR_F32), NULL, NULL};
        run_case("gelu_16M", step_gelu, &c);
    }
    if (wanted(argc, argv, "block_fwd_bwd")) {
        BlockCtx c;
        block_init(&c);
        run_case("block_fwd_bwd", step_block, &c);
    }
    bench_attention_cases(argc, argv, wanted, run_case);
    bench_gaussians_cases(argc, argv, wanted, run_case);
    bench_physskin_cases(argc, argv, wanted, run_case);
    bench_gru_cases(argc, argv, wanted, run_case);
    bench_partmm_cases(argc, argv, wanted, run_case);
    bench_gs4d_cases(argc, argv, wanted, run_case);
    tensor_runtime_shutdown();
    return 0;
}
