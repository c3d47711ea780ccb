/* nn/attention.c — memory-efficient ("tiled", flash-style) scaled dot-product attention,
 * registered as a custom op (autograd/custom.h) with a hand-written backward.
 *
 * Why: the naive path (nn_attention_naive) materializes the (B, h, Tq, Tk) score and
 * probability tensors, and its tape keeps them for backward: at B = 1, h = 8, T = 4096 that is
 * 2 × 512 MiB in f32. Here no more than one BQ × BK tile of scores exists per thread.
 *
 * Forward: the online softmax of Milakov & Gimelshein 2018 ("Online normalizer calculation for
 * softmax", alg. 3), applied to attention as in Dao et al. 2022 (FlashAttention, alg. 1): for
 * each query tile keep a running row max m and denominator l; for each key tile
 *     S = scale · Q Kⱼᵀ,  m' = max(m, rowmax S),  P = exp(S − m'),
 *     l ← l·e^{m−m'} + rowsum P,  O ← O·e^{m−m'} + P Vⱼ,
 * and at the end O ← O / l, with the row's log-sum-exp L = m + log l saved for backward.
 *
 * Backward (Dao et al. 2022, alg. 4; FlashAttention-2, Dao 2023, alg. 2): with Dᵢ = rowsum(dO ∘ O)
 * (= Σⱼ Pᵢⱼ dPᵢⱼ, the softmax Jacobian's correction term), per tile pair
 *     P = exp(S − L),  dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − D),
 *     dQ += scale · dS K,  dK += scale · dSᵀ Q,
 * recomputing S instead of storing it. One (batch, head) pair is one task, so dK/dV (summed over
 * query tiles) and dQ (summed over key tiles) are each written by one thread only.
 *
 * The kernels are the backend's (TensorBackend.attention and .attention_backward; the op
 * table's `attention`): tensor/cpu/cpu_attention.c (BLAS tile products reading q, k, v in place
 * through their row stride, so the narrow views of a fused qkv projection need no copy) and
 * tensor/cuda/cuda_attention.cu (the same algorithm, for head dims up to
 * TENSOR_ATTENTION_MAX_D), on the same operands and with the same saved log-sum-exp. The
 * backward kernels record nothing; under create_graph (a backward that must be differentiable
 * again) this op recomputes through the naive tensor-op path instead, so second derivatives
 * stay correct.
 *
 * bf16 q, k, v (mixed precision, nn_set_matmul_dtype): the scores, the softmax and both
 * products are f32, the output and the log-sum-exp are f32, and the gradients of q, k, v are
 * rounded to bf16 once at the end. The GPU kernels load bf16 tiles and convert them in
 * registers; the CPU runs its f32 kernels on f32 copies of q, k, v (exact), which is the same
 * arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/custom.h"
#include "attention.h"
#include "tensor/backend.h"

/* Tile sizes of the CPU kernels (0: tensor/cpu/cpu_attention.c's defaults). Settable (tests use
 * tiny tiles to cross tile edges on gradcheck-sized inputs). */
static int att_bq, att_bk;

void nn_attention_set_tiles(int bq, int bk) {
    att_bq = bq > 0 ? bq : 0;
    att_bk = bk > 0 ? bk : 0;
}

/* ---- the custom op ---------------------------------------------------------------------------- */

typedef struct {
    int heads;
    Tensor *lse; /* (B, heads, Tq), written by forward */
} AttCtx;

/* x itself when BLAS can read its (B, T, C) rows in place (unit last stride, row stride ≥ C),
 * else a contiguous copy. bf16 on the CPU (widen): an f32 copy — exact — for the f32 kernels,
 * which then do what a bf16 kernel with f32 arithmetic does (the CUDA kernels load bf16 and
 * convert in registers). */
static Tensor *att_operand(Tensor *x, bool widen) {
    if (widen) return tensor_cast(x, TENSOR_F32);
    if (x->stride[2] == 1 && (x->stride[1] >= x->shape[2] || x->shape[1] == 1)) return x;
    return tensor_contiguous(x);
}

/* The operands in the backend's argument block (C = h·d). */
static void att_args(TensorAttentionArgs *a, Tensor *q, Tensor *k, Tensor *v, int heads) {
    memset(a, 0, sizeof *a);
    a->dtype = q->dtype;
    a->q = tensor_data_ptr(q), a->k = tensor_data_ptr(k), a->v = tensor_data_ptr(v);
    a->sq0 = q->stride[0], a->sq1 = q->shape[1] == 1 ? q->shape[2] : q->stride[1];
    a->sk0 = k->stride[0], a->sk1 = k->shape[1] == 1 ? k->shape[2] : k->stride[1];
    a->sv0 = v->stride[0], a->sv1 = v->shape[1] == 1 ? v->shape[2] : v->stride[1];
    a->B = q->shape[0], a->Tq = q->shape[1], a->Tk = k->shape[1], a->h = heads;
    a->d = q->shape[2] / heads;
    a->scale = 1.0 / sqrt((double)a->d); /* Vaswani et al. 2017, eq. 1 */
    a->bq = att_bq, a->bk = att_bk;
}

/* bf16 q, k, v give an f32 output and log-sum-exp (the softmax and both products accumulate in
 * f32) and bf16 gradients. */
static TensorDType att_out_dtype(const Tensor *q) { return q->dtype == TENSOR_BF16 ? TENSOR_F32 : q->dtype; }

static Tensor *att_forward(void *ctx, int n, Tensor *const *in) {
    (void)n;
    AttCtx *c = ctx;
    TensorDevice dev = tensor_device(in[0]);
    bool widen = dev == TENSOR_CPU && in[0]->dtype == TENSOR_BF16;
    Tensor *q = att_operand(in[0], widen), *k = att_operand(in[1], widen), *v = att_operand(in[2], widen);
    TensorAttentionArgs a;
    att_args(&a, q, k, v, c->heads);
    int64_t C = q->shape[2];
    Tensor *o = tensor_empty_on(3, (int64_t[]){a.B, a.Tq, C}, att_out_dtype(q), dev);
    c->lse = tensor_empty_on(3, (int64_t[]){a.B, a.h, a.Tq}, att_out_dtype(q), dev);
    a.o = tensor_data_ptr(o), a.lse = tensor_data_ptr(c->lse);
    tensor_backend_for(dev)->attention(&a);
    return o;
}

static void att_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need, Tensor **gin) {
    (void)n;
    AttCtx *c = ctx;
    if (tensor_grad_enabled()) {
        /* create_graph: the gradients must be differentiable again (second derivatives, e.g.
         * a loss on ∂output/∂input). The raw kernels record nothing, so recompute through the
         * naive, tensor-op path — correct to any order, at the naive path's memory. */
        ag_custom_recomposed_grads(nn_attention_naive(in[0], in[1], in[2], c->heads), g, 3, in, need, gin);
        return;
    }
    bool prev = ag_no_grad_begin(); /* raw kernels: nothing here is recorded */
    TensorDevice dev = tensor_device(in[0]);
    bool widen = dev == TENSOR_CPU && in[0]->dtype == TENSOR_BF16;
    Tensor *q = att_operand(in[0], widen), *k = att_operand(in[1], widen), *v = att_operand(in[2], widen);
    TensorAttentionArgs a;
    att_args(&a, q, k, v, c->heads);
    int64_t C = q->shape[2];
    Tensor *go = tensor_contiguous(g), *o = tensor_contiguous(out);
    /* the kernels write every element: no zeroing */
    Tensor *gq = tensor_empty_on(3, (int64_t[]){a.B, a.Tq, C}, q->dtype, dev);
    Tensor *gk = tensor_empty_on(3, (int64_t[]){a.B, a.Tk, C}, q->dtype, dev);
    Tensor *gv = tensor_empty_on(3, (int64_t[]){a.B, a.Tk, C}, q->dtype, dev);
    a.o = tensor_data_ptr(o), a.lse = tensor_data_ptr(c->lse), a.go = tensor_data_ptr(go);
    a.gq = tensor_data_ptr(gq), a.gk = tensor_data_ptr(gk), a.gv = tensor_data_ptr(gv);
    tensor_backend_for(dev)->attention_backward(&a);
    if (widen) { /* a gradient has its tensor's dtype */
        gq = tensor_cast(gq, TENSOR_BF16);
        gk = tensor_cast(gk, TENSOR_BF16);
        gv = tensor_cast(gv, TENSOR_BF16);
    }
    ag_no_grad_end(prev);
    if (need[0]) gin[0] = gq;
    if (need[1]) gin[1] = gk;
    if (need[2]) gin[2] = gv;
}

static const AgCustomOp att_op = {"nn_attention_tiled", att_forward, att_backward};

void nn_attention_check(const char *op, Tensor *q, Tensor *k, Tensor *v, int heads) {
    char sq[128], sk[128], sv[128];
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || heads < 1 || q->shape[2] % heads != 0 ||
        k->shape[2] != q->shape[2] || v->shape[2] != q->shape[2] || k->shape[0] != q->shape[0] ||
        v->shape[0] != q->shape[0] || k->shape[1] != v->shape[1] || k->shape[1] < 1)
        tensor_fail(op, "q %s, k %s, v %s with %d heads: need (B, Tq, C), (B, Tk, C), (B, Tk, C), Tk ≥ 1, "
                    "C divisible by heads", tensor_shape_str(q, sq), tensor_shape_str(k, sk),
                    tensor_shape_str(v, sv), heads);
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        tensor_fail(op, "q, k, v dtypes differ (%s, %s, %s)", tensor_dtype_name(q->dtype),
                    tensor_dtype_name(k->dtype), tensor_dtype_name(v->dtype));
}

/* Whether the backend of dev has the fused kernels for head dim d (the CPU always has). */
static bool att_device_ok(TensorDevice dev, int64_t d) {
    if (dev == TENSOR_CPU) return true;
    const TensorBackend *be = tensor_backend_for(dev);
    return be->attention && be->attention_backward && d <= TENSOR_ATTENTION_MAX_D;
}

Tensor *nn_attention_tiled(Tensor *q, Tensor *k, Tensor *v, int heads) {
    nn_attention_check("nn_attention_tiled", q, k, v, heads);
    TensorDevice dev = tensor_device(q);
    if (tensor_device(k) != dev || tensor_device(v) != dev)
        tensor_fail("nn_attention_tiled", "q, k, v on different devices");
    if (q->dtype == TENSOR_I64) tensor_fail("nn_attention_tiled", "needs f32, f64 or bf16, got i64");
    if (!att_device_ok(dev, q->shape[2] / heads))
        tensor_fail("nn_attention_tiled", "head dim %lld on %s: the fused kernel takes up to %d (nn_attention "
                    "falls back to nn_attention_naive)", (long long)(q->shape[2] / heads),
                    tensor_backend_for(dev)->name, TENSOR_ATTENTION_MAX_D);
    AttCtx c = {.heads = heads};
    Tensor *in[3] = {q, k, v};
    return ag_custom_apply(&att_op, 3, in, &c, sizeof c);
}

/* ---- the naive path ----------------------------------------------------------------------- */

/* (B, T, C) -> (B, h, T, d): heads become a batch dim of the matmuls */
static Tensor *split_heads(Tensor *x, int heads) {
    int64_t B = x->shape[0], T = x->shape[1], C = x->shape[2];
    Tensor *r = tensor_reshape(x, 4, (int64_t[]){B, T, heads, C / heads});
    return tensor_permute(r, 4, (int[]){0, 2, 1, 3});
}

Tensor *nn_attention_naive(Tensor *q, Tensor *k, Tensor *v, int heads) {
    nn_attention_check("nn_attention", q, k, v, heads);
    int64_t B = q->shape[0], Tq = q->shape[1], C = q->shape[2], d = C / heads;
    Tensor *qh = split_heads(q, heads), *kh = split_heads(k, heads), *vh = split_heads(v, heads);
    /* softmax(Q Kᵀ / √d) V (Vaswani et al. 2017, eq. 1); √d keeps the logits' variance O(1) */
    Tensor *s = tensor_matmul(qh, tensor_transpose(kh, -1, -2));
    s = tensor_mul_scalar(s, 1.0 / sqrt((double)d));
    Tensor *p = tensor_softmax(s, -1);
    if (vh->dtype == TENSOR_BF16) p = tensor_cast(p, TENSOR_BF16); /* s and p are f32 */
    Tensor *o = tensor_matmul(p, vh);
    o = tensor_permute(o, 4, (int[]){0, 2, 1, 3});
    return tensor_reshape(o, 3, (int64_t[]){B, Tq, C});
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static NnAttentionMode att_mode = NN_ATTENTION_AUTO;

NnAttentionMode nn_attention_set_mode(NnAttentionMode mode) {
    NnAttentionMode prev = att_mode;
    att_mode = mode;
    return prev;
}

bool nn_attention_tiled_supports(const Tensor *q, int heads) {
    if (q->dtype == TENSOR_I64 || heads < 1 || q->ndim != 3) return false;
    return att_device_ok(tensor_device(q), q->shape[2] / heads);
}

bool nn_attention_wants_tiled(const Tensor *q, const Tensor *k) {
    TensorDevice dev = tensor_device(q);
    if (tensor_device(k) != dev || q->dtype == TENSOR_I64) return false;
    if (dev != TENSOR_CPU && !tensor_backend_for(dev)->attention) return false;
    NnAttentionMode mode = att_mode;
    const char *env = getenv("ANIMA_ATTENTION");
    if (mode == NN_ATTENTION_AUTO && env) {
        if (!strcmp(env, "tiled")) mode = NN_ATTENTION_TILED;
        else if (!strcmp(env, "naive")) mode = NN_ATTENTION_NAIVE;
    }
    if (mode != NN_ATTENTION_AUTO) return mode == NN_ATTENTION_TILED;
    /* On a GPU the fused kernel at every size: one launch instead of the naive path's five
     * (two batched GEMMs, scale, softmax, permute-copy), and O(T) memory on the tape. */
    if (dev != TENSOR_CPU) return true;
    /* Below this the (Tq, Tk) score matrix is small, the naive path's two batched GEMMs are
     * at least as fast, and its backward is differentiable again. */
    return q->shape[1] * k->shape[1] > NN_ATTENTION_TILED_MIN;
}
