/* models/physskin/model.h — the neural skinning fields autoencoder (PhysSkin++ §III-B, §IV-A;
 * docs/physskin.md §3).
 *
 * Encoder (Michelangelo's perceiver, names as its state_dict): Fourier features of the surface
 * points (K frequencies, 3(2K+1) values) and the 3 normal components → encoder.input_proj →
 * M learned queries (encoder.query, N(0, 0.02²)) attend the points in one pre-LN cross block
 * (encoder.cross_attn) → L pre-LN self blocks (encoder.self_attn.resblocks.<i>) →
 * encoder.ln_post: the shape latents F_s (B, M, d).
 * Decoder: m handle tokens (decoder.handle_tokens) attend F_s (decoder.handle_attn) → F_h
 * (B, m, d); a query point's Fourier features → decoder.point_proj → attend F_h
 * (decoder.point_attn) → F_p; [F_p, PE(X)] → decoder.head (in_proj, blocks.<i> ResNet units,
 * out — an ONI Linear behind model.oni) → W (B, Q, m).
 * Query points never attend each other, so w(X) depends on X alone (given the shape): the
 * spatial derivatives of a batch of points are the per-point derivatives. */
#ifndef ANIMA_MODELS_PHYSSKIN_MODEL_H
#define ANIMA_MODELS_PHYSSKIN_MODEL_H

#include "config.h"
#include "nn/modules.h"

typedef struct {
    int64_t M, d, m, n_freqs;
    int heads;
    /* encoder */
    NnLinear input_proj;
    Tensor *query; /* (M, d) */
    NnCrossBlock cross_attn;
    int layers;
    NnSelfBlock *resblocks;
    NnLayerNorm ln_post;
    /* decoder */
    Tensor *handle_tokens; /* (m, d) */
    NnCrossBlock handle_attn;
    NnLinear point_proj;
    NnCrossBlock point_attn;
    NnLinear head_in;
    int head_blocks;
    NnResBlock *head;
    bool oni;
    NnLinear head_out;
    NnOniLinear head_out_oni;
    NnActivation act;
} PsModel;

/* Registers every parameter in p (not packed here). */
void ps_model_init(PsModel *m, NnParams *p, const PsConfig *c);
/* the activation that model.activation names (config.c's choices: gelu elu silu tanh softplus);
 * any other name: GELU */
NnActivation ps_activation(const char *name);
void ps_model_free(PsModel *m);

/* surface points and normals (B, N, 3) -> F_s (B, M, d) */
Tensor *ps_encode(const PsModel *m, Tensor *points, Tensor *normals);
/* F_s (B, M, d) -> handle latents F_h (B, m, d) */
Tensor *ps_handles(const PsModel *m, Tensor *fs);
/* F_h (B, m, d), query points (B, Q, 3) -> skinning weights W (B, Q, m) */
Tensor *ps_decode(const PsModel *m, Tensor *fh, Tensor *x);

/* W and its spatial gradient ∇W (B, Q, m, 3) at x (physskin.md §1):
 *  PS_GRAD_FD: central differences (w(X + δe_i) − w(X − δe_i)) / 2δ, all 7Q points in one
 *    decoder call; truncation error ≈ (ωδ)²/6 for a component of frequency ω (2^{K−1} = 128
 *    at K = 8: 0.3% at δ = 1e-3), rounding ≈ ε|w|/δ.
 *  PS_GRAD_EXACT: reverse mode through the decoder with create_graph, so ∇W stays
 *    differentiable in the parameters. m outputs per point need m backward sweeps; instead the
 *    points are replicated m times and replica k contributes only output k, so one ag_grad of
 *    Σ_k Σ_p W[k-th replica of p, k] gives every ∂w_k/∂X at once.
 * Both are differentiable to the parameters (the loss goes through ∇W). */
typedef enum { PS_GRAD_FD, PS_GRAD_EXACT } PsGradMode;
void ps_decode_with_grad(const PsModel *m, Tensor *fh, Tensor *x, PsGradMode mode, double delta, Tensor **w,
                         Tensor **grad_w);

#endif
