/* nn/attention.h — scaled dot-product attention's two implementations (naive, composed of tensor
 * ops; tiled, a custom op over key tiles) and the switches that pick one. nn_attention
 * (functional.h) dispatches between them; this header sits below functional.h so that the
 * tiled op's backward can fall back to the naive path without including its caller. */
#ifndef ANIMA_NN_ATTENTION_H
#define ANIMA_NN_ATTENTION_H

#include "autograd/autograd.h"

/* Composed of tensor ops: materializes the (B, heads, Tq, Tk) scores; any backend; its
 * backward is differentiable again. bf16 q, k, v: f32 scores and softmax, the probabilities
 * rounded to bf16 for the product with V (as under PyTorch's autocast), f32 output. */
Tensor *nn_attention_naive(Tensor *q, Tensor *k, Tensor *v, int heads);
/* nn/attention.c: online-softmax attention over key tiles (Milakov & Gimelshein 2018; Dao et
 * al. 2022), a custom op whose backward recomputes the scores tile by tile from the saved
 * per-row log-sum-exp. Memory O(B·T·C) instead of O(B·h·Tq·Tk). f32/f64, or bf16 q, k, v with
 * f32 arithmetic and an f32 output; CPU (BLAS tiles) and
 * CUDA (tensor/cuda/cuda_attention.cu, head dim ≤ TENSOR_ATTENTION_MAX_D). Under create_graph
 * its backward falls back to the naive path's (differentiable, O(Tq·Tk) memory). */
Tensor *nn_attention_tiled(Tensor *q, Tensor *k, Tensor *v, int heads);
/* Whether nn_attention_tiled takes q's device, dtype and head dim (C / heads). */
bool nn_attention_tiled_supports(const Tensor *q, int heads);
/* Tile sizes (queries × keys) of nn_attention_tiled; ≤ 0 restores the default 64 × 128. */
void nn_attention_set_tiles(int bq, int bk);

#define NN_ATTENTION_TILED_MIN (256 * 256) /* Tq·Tk above which nn_attention goes tiled */
typedef enum { NN_ATTENTION_AUTO, NN_ATTENTION_NAIVE, NN_ATTENTION_TILED } NnAttentionMode;
/* Force one path for every nn_attention call (AUTO: by size on the CPU, tiled on the GPU; the
 * environment variable ANIMA_ATTENTION=naive|tiled overrides AUTO). TILED still takes the naive
 * path where nn_attention_tiled_supports says no. Returns the previous mode. */
NnAttentionMode nn_attention_set_mode(NnAttentionMode mode);
bool nn_attention_wants_tiled(const Tensor *q, const Tensor *k);
/* Aborts, naming op, unless q (B, Tq, C), k and v (B, Tk, C) fit `heads` heads. */
void nn_attention_check(const char *op, Tensor *q, Tensor *k, Tensor *v, int heads);

#endif
