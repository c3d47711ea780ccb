/* nn/functional.c — linear, multi-head attention and the pre-LN transformer blocks, composed
 * from tensor ops only (so every backward, and every higher derivative, comes from the tape).
 * The math is PyTorch's: nn.Linear, nn.LayerNorm (biased variance, eps 1e-5), exact-erf GELU,
 * scaled dot-product attention (Vaswani et al. 2017, eq. 1). */
#include <math.h>

#include "functional.h"

#define NN_LN_EPS 1e-5

static TensorDType matmul_dtype = TENSOR_F32;

TensorDType nn_set_matmul_dtype(TensorDType dt) {
    if (dt != TENSOR_F32 && dt != TENSOR_BF16)
        tensor_fail("nn_set_matmul_dtype", "takes f32 (off) or bf16, got %s", tensor_dtype_name(dt));
    TensorDType prev = matmul_dtype;
    matmul_dtype = dt;
    return prev;
}

TensorDType nn_matmul_dtype(void) { return matmul_dtype; }

/* x as a matmul/attention operand: rounded to bf16 under the bf16 setting when it is f32 (a
 * recorded cast, whose backward brings the bf16 gradient back to f32) */
static Tensor *autocast(Tensor *x) {
    return matmul_dtype == TENSOR_BF16 && x->dtype == TENSOR_F32 ? tensor_cast(x, TENSOR_BF16) : x;
}

Tensor *nn_linear(Tensor *x, Tensor *w, Tensor *b) {
    char sx[128], sw[128];
    if (x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1])
        tensor_fail("nn_linear", "input %s does not fit weight %s (out, in)", tensor_shape_str(x, sx),
                    tensor_shape_str(w, sw));
    int64_t in = w->shape[1], out = w->shape[0];
    /* (N, in) @ (in, out): with every leading dim folded into N, backward's dW = gᵀ x is one
     * GEMM over all rows instead of a batched product followed by a reduction. */
    Tensor *x2 = autocast(tensor_reshape(x, 2, (int64_t[]){-1, in}));
    Tensor *y = tensor_matmul(x2, tensor_transpose(autocast(w), 0, 1));
    if (b) y = tensor_add(y, b);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = out;
    return tensor_reshape(y, x->ndim, shape);
}

Tensor *nn_attention(Tensor *q, Tensor *k, Tensor *v, int heads) {
    nn_attention_check("nn_attention", q, k, v, heads);
    /* one cast each: q, k, v are often narrow views of one fused projection, and a bf16 tensor
     * that fed several ops would need its gradients summed in bf16 (add does not take bf16) */
    q = autocast(q), k = autocast(k), v = autocast(v);
    bool tiled = nn_attention_wants_tiled(q, k) && nn_attention_tiled_supports(q, heads);
    return tiled ? nn_attention_tiled(q, k, v, heads) : nn_attention_naive(q, k, v, heads);
}

static Tensor *ln(Tensor *x, Tensor *w, Tensor *b) { return tensor_layer_norm(x, 1, w, b, NN_LN_EPS); }

/* the pre-LN MLP residual: x + fc2(gelu(fc(ln2 x))) */
static Tensor *mlp_residual(Tensor *x, Tensor *ln_w, Tensor *ln_b, Tensor *fc_w, Tensor *fc_b, Tensor *fc2_w,
                            Tensor *fc2_b) {
    Tensor *h = tensor_gelu(nn_linear(ln(x, ln_w, ln_b), fc_w, fc_b));
    return tensor_add(x, nn_linear(h, fc2_w, fc2_b));
}

Tensor *nn_self_block(Tensor *x, const NnSelfBlockWeights *w, int heads) {
    int64_t C = x->shape[x->ndim - 1];
    Tensor *qkv = nn_linear(ln(x, w->ln1_w, w->ln1_b), w->qkv_w, w->qkv_b);
    /* narrow views of the fused projection: split_heads' reshape sees through them */
    Tensor *q = tensor_narrow(qkv, -1, 0, C), *k = tensor_narrow(qkv, -1, C, C), *v = tensor_narrow(qkv, -1, 2 * C, C);
    x = tensor_add(x, nn_linear(nn_attention(q, k, v, heads), w->proj_w, w->proj_b));
    return mlp_residual(x, w->ln2_w, w->ln2_b, w->fc_w, w->fc_b, w->fc2_w, w->fc2_b);
}

Tensor *nn_cross_block(Tensor *x, Tensor *ctx, const NnCrossBlockWeights *w, int heads) {
    int64_t C = x->shape[x->ndim - 1];
    Tensor *q = nn_linear(ln(x, w->lnq_w, w->lnq_b), w->q_w, w->q_b);
    Tensor *kv = nn_linear(ln(ctx, w->lnkv_w, w->lnkv_b), w->kv_w, w->kv_b);
    Tensor *k = tensor_narrow(kv, -1, 0, C), *v = tensor_narrow(kv, -1, C, C);
    x = tensor_add(x, nn_linear(nn_attention(q, k, v, heads), w->proj_w, w->proj_b));
    return mlp_residual(x, w->ln2_w, w->ln2_b, w->fc_w, w->fc_b, w->fc2_w, w->fc2_b);
}
