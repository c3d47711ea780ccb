/* nn/functional.h — stateless building blocks over tensors: linear, multi-head attention and
 * the pre-LN transformer blocks (self-attention and cross-attention, each followed by a GELU
 * MLP). Weights are passed in; nn modules with named parameters wrap these. Weight layout
 * follows PyTorch: Linear weight (out, in), bias (out). Every function is built from tensor
 * ops, so it is differentiable to any order. */
#ifndef ANIMA_NN_FUNCTIONAL_H
#define ANIMA_NN_FUNCTIONAL_H

#include "attention.h"

/* Mixed precision (autocast): with TENSOR_BF16, nn_linear and nn_attention — so every module
 * and block built on them — cast their f32 operands (input and weight; q, k, v) to bf16 right
 * before the matmul or the attention kernel, which accumulate in f32 and return f32. Bias,
 * LayerNorm, GELU, residuals, the loss, the parameters, their gradients (the cast's backward
 * turns each bf16 gradient back into f32) and the optimizer state stay f32; f64 operands are
 * left alone. TENSOR_F32 (the default) turns it off. Returns the previous setting. Accuracy
 * against f32: see tests/test_bf16.c and the README. */
TensorDType nn_set_matmul_dtype(TensorDType dt);
TensorDType nn_matmul_dtype(void);

/* y = x Wᵀ + b over the last dim of x (leading dims flattened so backward is one GEMM);
 * b may be NULL. */
Tensor *nn_linear(Tensor *x, Tensor *w, Tensor *b);

/* Scaled dot-product attention with `heads` heads: q (B, Tq, C), k and v (B, Tk, C) ->
 * (B, Tq, C); softmax(Q Kᵀ / sqrt(C / heads)) V per head, heads concatenated.
 * Dispatches (nn_attention_wants_tiled) between attention.h's two implementations: on the CPU,
 * when Tq·Tk > NN_ATTENTION_TILED_MIN, the tiled one; on the GPU the tiled (fused) one at every
 * size when the head dim is ≤ TENSOR_ATTENTION_MAX_D (128), else the naive one. */
Tensor *nn_attention(Tensor *q, Tensor *k, Tensor *v, int heads);
typedef struct {
    Tensor *ln1_w, *ln1_b;   /* (C) */
    Tensor *qkv_w, *qkv_b;   /* (3C, C), (3C): fused q, k, v projections, in that order */
    Tensor *proj_w, *proj_b; /* (C, C), (C) */
    Tensor *ln2_w, *ln2_b;   /* (C) */
    Tensor *fc_w, *fc_b;     /* (H, C), (H) */
    Tensor *fc2_w, *fc2_b;   /* (C, H), (C) */
} NnSelfBlockWeights;

/* x + proj(attn(ln1 x)); then + fc2(gelu(fc(ln2 x))). x (B, T, C). LayerNorm eps 1e-5. */
Tensor *nn_self_block(Tensor *x, const NnSelfBlockWeights *w, int heads);

typedef struct {
    Tensor *lnq_w, *lnq_b;   /* (C): on the queries x */
    Tensor *lnkv_w, *lnkv_b; /* (Cc): on the context */
    Tensor *q_w, *q_b;       /* (C, C), (C) */
    Tensor *kv_w, *kv_b;     /* (2C, Cc), (2C): fused k, v projections, in that order */
    Tensor *proj_w, *proj_b; /* (C, C), (C) */
    Tensor *ln2_w, *ln2_b;   /* (C) */
    Tensor *fc_w, *fc_b;     /* (H, C), (H) */
    Tensor *fc2_w, *fc2_b;   /* (C, H), (C) */
} NnCrossBlockWeights;

/* x + proj(attn(q(lnq x), kv(lnkv ctx))); then + fc2(gelu(fc(ln2 x))). x (B, T, C),
 * ctx (B, S, Cc). */
Tensor *nn_cross_block(Tensor *x, Tensor *ctx, const NnCrossBlockWeights *w, int heads);

#endif
