/* nn/modules.h — modules with named parameters: Linear, LayerNorm, multi-head attention (self
 * with a fused qkv projection, cross with q + fused kv), the GELU MLP, the pre-LN self- and
 * cross-attention blocks, a ResNet-style MLP block, the ONI-orthogonalized Linear, and the
 * parameter-free Fourier positional embedding; plus the state dict (names and values).
 *
 * Each module's init registers its parameters in an NnParams under `prefix` (PyTorch dotted
 * names: "blocks.0.attn.c_qkv.weight"), in the order the mirrored PyTorch module's state_dict
 * lists them, and keeps the Tensor pointers; forward reads them (so it also works after
 * nn_params_pack, which re-points those headers into the flat buffer). Layouts are PyTorch's:
 * Linear weight (out, in), bias (out). Attention modules and blocks mirror Michelangelo's
 * (michelangelo/models/modules/transformer_blocks.py, itself from OpenAI's shap-e):
 *     MultiheadAttention       c_qkv, c_proj
 *     MultiheadCrossAttention  c_q, c_kv, c_proj
 *     MLP                      c_fc, c_proj              (GELU, exact erf)
 *     ResidualAttentionBlock   attn, ln_1, mlp, ln_2     (x += attn(ln_1 x); x += mlp(ln_2 x))
 *     ResidualCrossAttentionBlock  attn, ln_1, ln_2, mlp, ln_3
 *                              (x += attn(ln_1 x, ln_2 ctx); x += mlp(ln_3 x))
 * One difference in layout: c_qkv's 3C rows here are [q (all heads) | k | v] and c_kv's 2C rows
 * [k | v] (PyTorch nn.MultiheadAttention's in_proj and nn/functional.h's layout), whereas
 * Michelangelo interleaves per head ([q_h | k_h | v_h] for each head h); a loader of its
 * checkpoints permutes those rows. tests/oracle/make_nn_fixtures.py holds the PyTorch twins. */
#ifndef ANIMA_NN_MODULES_H
#define ANIMA_NN_MODULES_H

#include "functional.h"
#include "params.h"

/* ---- Linear: y = x Wᵀ + b. torch.nn.Linear's init: W ~ U(±1/√in) (kaiming_uniform, a = √5),
 * b ~ U(±1/√in). ------------------------------------------------------------------------------ */
typedef struct {
    Tensor *weight, *bias; /* (out, in), (out) or NULL */
    int64_t in, out;
} NnLinear;
void nn_linear_init(NnLinear *m, NnParams *p, const char *prefix, int64_t in, int64_t out, bool bias);
Tensor *nn_linear_forward(const NnLinear *m, Tensor *x);

/* ---- LayerNorm over the last dim, weight 1, bias 0 (torch.nn.LayerNorm(dim), eps 1e-5) ------ */
typedef struct {
    Tensor *weight, *bias; /* (dim) */
    int64_t dim;
    double eps;
} NnLayerNorm;
void nn_layer_norm_init(NnLayerNorm *m, NnParams *p, const char *prefix, int64_t dim);
Tensor *nn_layer_norm_forward(const NnLayerNorm *m, Tensor *x);

/* ---- multi-head attention ----------------------------------------------------------------------
 * self:  c_qkv Linear(C, 3C, qkv_bias), c_proj Linear(C, C, proj_bias)
 * cross: c_q Linear(C, C, qkv_bias), c_kv Linear(Cc, 2C, qkv_bias), c_proj Linear(C, C, proj_bias)
 * The softmax runs in f32 or f64 (under nn_set_matmul_dtype(TENSOR_BF16) the bf16 q·k product
 * returns f32 scores). Long sequences go through the tiled kernel (see nn_attention). */
typedef struct {
    NnLinear c_qkv, c_q, c_kv, c_proj;
    int heads;
    bool cross;
    int64_t dim, ctx_dim;
} NnMultiheadAttention;
void nn_mha_self_init(NnMultiheadAttention *m, NnParams *p, const char *prefix, int64_t dim, int heads, bool qkv_bias,
                      bool proj_bias);
void nn_mha_cross_init(NnMultiheadAttention *m, NnParams *p, const char *prefix, int64_t dim, int64_t ctx_dim,
                       int heads, bool qkv_bias, bool proj_bias);
/* x (B, T, C); ctx (B, S, Cc) for a cross module, NULL for a self module. -> (B, T, C) */
Tensor *nn_mha_forward(const NnMultiheadAttention *m, Tensor *x, Tensor *ctx);

/* ---- MLP: c_proj(gelu(c_fc x)), c_fc Linear(C, H), c_proj Linear(H, C), both with bias ------- */
typedef struct {
    NnLinear c_fc, c_proj;
} NnMlp;
void nn_mlp_init(NnMlp *m, NnParams *p, const char *prefix, int64_t dim, int64_t hidden);
Tensor *nn_mlp_forward(const NnMlp *m, Tensor *x);

/* ---- pre-LN transformer blocks (forward through nn_self_block / nn_cross_block) ------------- */
typedef struct {
    NnMultiheadAttention attn;
    NnLayerNorm ln_1, ln_2;
    NnMlp mlp;
} NnSelfBlock;
/* MLP hidden width `hidden` (4·dim in the paper); c_proj of attn always has a bias. */
void nn_self_block_init(NnSelfBlock *m, NnParams *p, const char *prefix, int64_t dim, int heads, int64_t hidden,
                        bool qkv_bias);
Tensor *nn_self_block_forward(const NnSelfBlock *m, Tensor *x);
/* The block's weights as nn/functional.h's struct (pointers into m). */
NnSelfBlockWeights nn_self_block_weights(const NnSelfBlock *m);

typedef struct {
    NnMultiheadAttention attn;
    NnLayerNorm ln_1, ln_2, ln_3; /* ln_1 on the queries x, ln_2 on the context, ln_3 before the MLP */
    NnMlp mlp;
} NnCrossBlock;
void nn_cross_block_init(NnCrossBlock *m, NnParams *p, const char *prefix, int64_t dim, int64_t ctx_dim, int heads,
                         int64_t hidden, bool qkv_bias);
Tensor *nn_cross_block_forward(const NnCrossBlock *m, Tensor *x, Tensor *ctx);
NnCrossBlockWeights nn_cross_block_weights(const NnCrossBlock *m);

/* ---- ResNet-style MLP block: x + fc2(act(fc1 x)) (He et al. 2016, the residual unit with
 * linear layers; PhysSkin++ §III-B's decoder head). fc1 Linear(dim, hidden), fc2
 * Linear(hidden, dim). ---------------------------------------------------------------------- */
typedef enum { NN_ACT_RELU, NN_ACT_ELU, NN_ACT_GELU, NN_ACT_SILU, NN_ACT_TANH, NN_ACT_SOFTPLUS } NnActivation;
Tensor *nn_activation(Tensor *x, NnActivation act); /* ELU α = 1; softplus β = 1, threshold 20 */

/* A multilayer perceptron: layers hidden Linear layers of width hidden, each followed by act, then
 * a Linear to out, named as torch.nn.Sequential(Linear, act, ..., Linear) names them:
 * prefix.0, prefix.2, ... (the activations take the odd indices). PyTorch's Linear init, the
 * layers registered in order (weight, then bias). */
typedef struct {
    int layers;
    NnLinear *lin; /* layers + 1 (malloc'd; nn_stack_free) */
    NnActivation act;
} NnStack;
void nn_stack_init(NnStack *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, int64_t out, int layers,
                   NnActivation act);
Tensor *nn_stack_forward(const NnStack *m, Tensor *x);
void nn_stack_free(NnStack *m);
/* The activation named by s ("relu", "elu", "gelu", "silu", "tanh", "softplus"); -1 for another. */
int nn_activation_parse(const char *s);
typedef struct {
    NnLinear fc1, fc2;
    NnActivation act;
} NnResBlock;
void nn_res_block_init(NnResBlock *m, NnParams *p, const char *prefix, int64_t dim, int64_t hidden, NnActivation act);
Tensor *nn_res_block_forward(const NnResBlock *m, Tensor *x);

/* ---- ONI-orthogonalized Linear (Huang et al. 2020, "Controllable Orthogonalization in
 * Training DNNs", alg. 1; physskin.md §6). The free parameter is Z ("weight", (out, in));
 * the layer applies W = oni(Z) and the bias. ------------------------------------------------ */
typedef struct {
    Tensor *weight, *bias; /* Z (out, in), (out) or NULL */
    int64_t in, out;
    int iters;  /* Newton iterations T (5) */
    double eps; /* ε added to S's diagonal (1e-5) */
} NnOniLinear;
void nn_oni_linear_init(NnOniLinear *m, NnParams *p, const char *prefix, int64_t in, int64_t out, bool bias);
Tensor *nn_oni_linear_forward(const NnOniLinear *m, Tensor *x);
/* W from Z (n × d), composed of tensor ops (differentiable through the iterations, to any
 * order): Zc = Z − rowmean(Z); S = Zc Zcᵀ + εI; s = ‖S‖_F; S ← S / s; B₀ = I;
 * B_t = 1.5 B − 0.5 B³ S; W = B_T Zc / √s (B_t computed by the equivalent, numerically stable,
 * coupled Newton–Schulz form; see modules.c). Then W Wᵀ → I as T grows (n ≤ d − 1: centering
 * leaves rank ≤ d − 1). T = 5 is only roughly orthogonal: max|WWᵀ − I| = 0.14 for an 8 × 16
 * Gaussian Z (κ(S) ≈ 30), 1e-3 at T = 7, 4e-6 (the ε floor) from T = 8. For n > d the same
 * on the d × d matrix ZcᵀZc, W = Zc B_T / √s: the columns become orthonormal within the
 * complement of 1 (Zc 1 = 0, so Wᵀ W → I − 11ᵀ/d). */
Tensor *nn_oni_weight(Tensor *z, int iters, double eps);

/* ---- Fourier positional embedding (NeRF, Mildenhall et al. 2020, eq. 4, without π; the
 * FourierEmbedder of Michelangelo with include_pi=False, include_input=True).
 * x (..., D) -> (..., D (2K + 1)), laid out exactly as Michelangelo's:
 *     [ x_0 .. x_{D−1} |
 *       sin(2⁰ x_0) .. sin(2^{K−1} x_0), sin(2⁰ x_1) .. , sin(2^{K−1} x_{D−1}) |
 *       cos(...) in the same order as the sines ]
 * i.e. input first, then all sines with the coordinate major and the frequency minor, then all
 * cosines. D = 3, K = 8 gives 51 values. Composed of tensor ops (differentiable in x). */
Tensor *nn_fourier_embed(Tensor *x, int n_freqs);
static inline int64_t nn_fourier_embed_dim(int64_t dim, int n_freqs) { return dim * (2 * n_freqs + 1); }

/* ---- state dict: PyTorch state_dict keys and tensors, in registration order -------------- */
/* Number of entries; *items points at p's table (valid until the next nn_param). */
int nn_state_dict(const NnParams *p, const NnParam **items);
/* Copy values into the registered parameters by name. Every parameter must be given exactly
 * once with its shape, and no unknown name may appear (PyTorch's load_state_dict(strict=True));
 * else returns false with a message in err naming the key. Values may be of another dtype. */
bool nn_load_state_dict(NnParams *p, int n, const char *const *names, Tensor *const *values, char *err,
                        size_t errsize);

#endif
