/* tests/test_cuda_attention.c — the fused attention kernels (tensor/cuda/cuda_attention.cu, the
 * CUDA half of nn_attention_tiled's custom op) against the CPU's naive path (nn_attention_naive,
 * composed of tensor ops): output and the gradients of sum(y · w) for a random w, by normalized
 * MSE Σ(got − ref)² / Σ ref² ≤ 1e-7 in f32 (1e-20 in f64; the mean square where the reference is
 * exactly 0), over shapes that cross the kernels'
 * tile edges (16 / 8 query or key rows per block, 32 per tile; Tq, Tk not multiples of either),
 * head dims 8..128 (32, 64, 128 and in between, the template bounds' zero padding), batch and
 * heads > 1, k given through a permuted (strided-batch) view, and q, k, v as the narrow views of
 * one fused qkv tensor. Also: nn_attention takes this path on the GPU, falls back to the naive
 * one for head dims > 128 and under create_graph (second derivatives).
 * Run with --cuda (`make test-cuda`); without a device each test exits 77 (skip).
 * ANIMA_PARITY_SELFTEST=1 puts the CPU in the device's place — the CPU tiled kernel is then
 * what is compared — to check the tests themselves on a machine without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "nn/functional.h"
#include "tensor/backend.h"
#include "tests/test.h"

static TensorDevice DEV = TENSOR_CUDA;
static bool SELFTEST;

static void need_device(void) {
    tensor_manual_seed(20240612);
    if (getenv("ANIMA_PARITY_SELFTEST")) {
        DEV = TENSOR_CPU;
        SELFTEST = true;
        return;
    }
    if (!tensor_backend_cuda()) {
        fflush(NULL);
        exit(77);
    }
}

/* a fresh leaf on the device (a copy even when the device is the CPU, for the self-test) */
static Tensor *to_dev(Tensor *x) {
    if (DEV == TENSOR_CPU) return tensor_clone(tensor_detach(x));
    return tensor_to(tensor_detach(x), DEV);
}

static double nmse(const Tensor *got, const Tensor *ref) {
    Tensor *g = tensor_to((Tensor *)got, TENSOR_CPU), *r = tensor_to((Tensor *)ref, TENSOR_CPU);
    int64_t n = tensor_numel(r);
    if (tensor_numel(g) != n || !tensor_same_shape(g, r)) return INFINITY;
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *y = malloc(sizeof(double) * (size_t)(n + 1));
    tensor_to_f64_array(g, x);
    tensor_to_f64_array(r, y);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i] - y[i];
        num += isfinite(d) ? d * d : INFINITY;
        den += y[i] * y[i];
    }
    free(x);
    free(y);
    /* a reference that is 0 (q and k gradients when Tk = 1: a softmax over one key is constant)
     * is compared by the mean square of the difference instead */
    if (num == 0) return 0;
    return den > 1e-30 ? num / den : num / (double)(n ? n : 1);
}

static void expect_close(const char *what, const char *part, const Tensor *got, const Tensor *ref) {
    double tol = ref->dtype == TENSOR_F32 ? 1e-7 : 1e-20;
    double e = nmse(got, ref);
    CHECK_MSG(e <= tol, "%s: %s: normalized MSE %.3g > %.3g", what, part, e, tol);
}

static bool same_bits(const Tensor *a, const Tensor *b) {
    Tensor *x = tensor_to((Tensor *)a, TENSOR_CPU), *y = tensor_to((Tensor *)b, TENSOR_CPU);
    return tensor_numel(x) == tensor_numel(y) && x->dtype == y->dtype &&
           !memcmp(tensor_data_ptr(x), tensor_data_ptr(y), (size_t)tensor_numel(x) * tensor_dtype_size(x->dtype));
}

typedef struct {
    int64_t B, Tq, Tk;
    int heads, d;
    bool fused; /* q, k, v narrow views of one (B, T, 3C) tensor (Tq == Tk) */
    double qscale; /* larger: sharper softmax rows */
} AttCase;

/* The leaves of one case and the q, k, v views made from them (the same on either device). */
typedef struct {
    Tensor *leaf[3];
    int nleaf;
    Tensor *q, *k, *v;
} AttInputs;

static void views(AttInputs *in, const AttCase *c) {
    int64_t C = (int64_t)c->heads * c->d;
    if (c->fused) {
        Tensor *qkv = in->leaf[0];
        in->q = tensor_mul_scalar(tensor_narrow(qkv, -1, 0, C), c->qscale);
        in->k = tensor_narrow(qkv, -1, C, C), in->v = tensor_narrow(qkv, -1, 2 * C, C);
        /* the scaled q is contiguous; keep one input a strided view: k and v are */
        return;
    }
    in->q = tensor_mul_scalar(in->leaf[0], c->qscale);
    in->k = tensor_permute(in->leaf[1], TENSOR_DIMS(1, 0, 2)); /* (Tk, B, C) storage: batch stride C */
    in->v = in->leaf[2];
}

static void make_inputs(AttInputs *cpu, AttInputs *dev, const AttCase *c, TensorDType dt) {
    int64_t C = (int64_t)c->heads * c->d;
    memset(cpu, 0, sizeof *cpu);
    memset(dev, 0, sizeof *dev);
    if (c->fused) {
        cpu->leaf[0] = tensor_randn(TENSOR_SHAPE(c->B, c->Tq, 3 * C), dt);
        cpu->nleaf = 1;
    } else {
        cpu->leaf[0] = tensor_randn(TENSOR_SHAPE(c->B, c->Tq, C), dt);
        cpu->leaf[1] = tensor_randn(TENSOR_SHAPE(c->Tk, c->B, C), dt);
        cpu->leaf[2] = tensor_randn(TENSOR_SHAPE(c->B, c->Tk, C), dt);
        cpu->nleaf = 3;
    }
    dev->nleaf = cpu->nleaf;
    for (int i = 0; i < cpu->nleaf; i++) {
        dev->leaf[i] = to_dev(cpu->leaf[i]);
        tensor_requires_grad(cpu->leaf[i], true);
        tensor_requires_grad(dev->leaf[i], true);
    }
    views(cpu, c);
    views(dev, c);
}

static void att_case(const AttCase *c, TensorDType dt) {
    char what[160];
    snprintf(what, sizeof what, "%s B=%lld Tq=%lld Tk=%lld heads=%d d=%d%s", dt == TENSOR_F32 ? "f32" : "f64",
             (long long)c->B, (long long)c->Tq, (long long)c->Tk, c->heads, c->d, c->fused ? " fused-qkv" : "");
    TensorScope *s = tensor_scope_begin();
    AttInputs ci, di;
    make_inputs(&ci, &di, c, dt);
    Tensor *ref = nn_attention_naive(ci.q, ci.k, ci.v, c->heads);
    Tensor *got = nn_attention_tiled(di.q, di.k, di.v, c->heads);
    CHECK_MSG(tensor_device(got) == DEV, "%s: output not on the device", what);
    expect_close(what, "forward", got, ref);
    Tensor *w = tensor_randn(ref->ndim, ref->shape, dt);
    Tensor *lc = tensor_sum_all(tensor_mul(ref, w)), *ld = tensor_sum_all(tensor_mul(got, to_dev(w)));
    Tensor *gc[3] = {0}, *gd[3] = {0};
    ag_grad(1, &lc, NULL, ci.nleaf, ci.leaf, gc, false);
    ag_grad(1, &ld, NULL, di.nleaf, di.leaf, gd, false);
    static const char *names[2][3] = {{"grad qkv"}, {"grad q", "grad k", "grad v"}};
    for (int i = 0; i < ci.nleaf; i++) {
        CHECK_MSG(gc[i] && gd[i], "%s: %s missing", what, names[!c->fused][i]);
        if (gc[i] && gd[i]) expect_close(what, names[!c->fused][i], gd[i], gc[i]);
    }
    tensor_scope_end(s);
}

static const AttCase CASES[] = {
    {1, 1, 1, 1, 16, false, 1.0},    /* a single query and key */
    {2, 37, 53, 2, 32, false, 1.0},  /* partial query blocks and key tiles */
    {1, 100, 70, 4, 64, false, 2.0}, /* d = 64, sharper rows */
    {2, 33, 129, 1, 128, false, 1.0}, /* d = 128, one key past four full tiles */
    {1, 17, 300, 8, 8, false, 1.0},  /* small d in the 32 bound, many heads */
    {2, 45, 45, 2, 100, false, 1.0}, /* d between the bounds: zero-padded to 128 */
    {3, 50, 50, 3, 48, true, 1.0},   /* fused qkv narrow views, d = 48 */
    {2, 65, 65, 2, 128, true, 1.5},  /* fused qkv at d = 128 */
};

TEST(cuda_attention_parity) {
    need_device();
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) att_case(&CASES[i], t ? TENSOR_F64 : TENSOR_F32);
}

/* many tiles each way: the running max / denominator over 30+ key tiles, the dK/dV pass over
 * as many query tiles */
TEST(cuda_attention_long) {
    need_device();
    int64_t T = test_quick() ? 300 : 1030;
    AttCase c = {1, T, T, 2, 64, true, 1.0};
    att_case(&c, TENSOR_F32);
    AttCase x = {2, T / 3, T, 4, 32, false, 1.0}; /* cross attention, Tq ≠ Tk */
    att_case(&x, TENSOR_F32);
}

/* nn_attention picks the fused kernel on the GPU at any size (the same bits as calling it),
 * the naive path for head dims over TENSOR_ATTENTION_MAX_D and under ANIMA_ATTENTION=naive. */
TEST(cuda_attention_dispatch) {
    need_device();
    if (SELFTEST) nn_attention_set_mode(NN_ATTENTION_TILED); /* the CPU's AUTO is size-based */
    AttCase c = {2, 20, 24, 2, 32, false, 1.0};
    AttInputs ci, di;
    make_inputs(&ci, &di, &c, TENSOR_F32);
    bool g = ag_no_grad_begin();
    Tensor *auto_ = nn_attention(di.q, di.k, di.v, 2), *fused = nn_attention_tiled(di.q, di.k, di.v, 2);
    CHECK_MSG(same_bits(auto_, fused), "nn_attention on the device did not take the fused kernel");
    nn_attention_set_mode(NN_ATTENTION_NAIVE);
    Tensor *naive = nn_attention(di.q, di.k, di.v, 2);
    CHECK_MSG(same_bits(naive, nn_attention_naive(di.q, di.k, di.v, 2)), "NN_ATTENTION_NAIVE not honoured");
    nn_attention_set_mode(NN_ATTENTION_AUTO);
    ag_no_grad_end(g);
    /* head dim 160 > 128: nn_attention must not call the kernel (it would abort) */
    Tensor *wide = to_dev(tensor_randn(TENSOR_SHAPE(1, 9, 160), TENSOR_F32));
    CHECK(DEV == TENSOR_CPU || !nn_attention_tiled_supports(wide, 1));
    Tensor *wr = nn_attention(wide, wide, wide, 1);
    Tensor *wc = tensor_to(wide, TENSOR_CPU);
    expect_close("d = 160 fallback", "forward", wr, nn_attention_naive(wc, wc, wc, 1));
}

/* create_graph: the custom op's backward recomputes through the naive path, so a loss on the
 * gradient (a gradient penalty) differentiates again; compared with the CPU naive path. */
TEST(cuda_attention_create_graph) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = t ? TENSOR_F64 : TENSOR_F32;
        AttCase c = {2, 19, 23, 2, 32, false, 1.0};
        AttInputs ci, di;
        make_inputs(&ci, &di, &c, dt);
        Tensor *yc = nn_attention_naive(ci.q, ci.k, ci.v, 2), *yd = nn_attention_tiled(di.q, di.k, di.v, 2);
        Tensor *w = tensor_randn(yc->ndim, yc->shape, dt);
        Tensor *lc = tensor_sum_all(tensor_mul(yc, w)), *ld = tensor_sum_all(tensor_mul(yd, to_dev(w)));
        Tensor *gc[3], *gd[3];
        ag_grad(1, &lc, NULL, 3, ci.leaf, gc, true);
        ag_grad(1, &ld, NULL, 3, di.leaf, gd, true);
        expect_close("create_graph", "grad q", gd[0], gc[0]);
        /* penalty ‖∂L/∂q‖², differentiated with respect to k and v */
        Tensor *pc = tensor_sum_all(tensor_mul(gc[0], gc[0])), *pd = tensor_sum_all(tensor_mul(gd[0], gd[0]));
        Tensor *hc[2], *hd[2];
        ag_grad(1, &pc, NULL, 2, ci.leaf + 1, hc, false);
        ag_grad(1, &pd, NULL, 2, di.leaf + 1, hd, false);
        expect_close("second order", "d penalty / dk", hd[0], hc[0]);
        expect_close("second order", "d penalty / dv", hd[1], hc[1]);
    }
}
