/* nn/gru.h — the gated recurrent unit (Cho et al. 2014) as PyTorch defines it: a cell
 * (torch.nn.GRUCell) and a multi-layer GRU over a sequence (torch.nn.GRU with batch_first=True,
 * unidirectional, no dropout). Composed of tensor ops, so differentiable to any order; no fused op:
 * a step costs two GEMMs, (B, in) × (in, 3H) and (B, H) × (H, 3H), plus a few elementwise ops on
 * (B, H), and backward stays linear in the sequence length (see nn_gru_forward in gru.c).
 *
 * Equations (torch.nn.GRU's documentation), gates stacked in the order r, z, n:
 *     r  = σ(W_ir x + b_ir + W_hr h + b_hr)
 *     z  = σ(W_iz x + b_iz + W_hz h + b_hz)
 *     n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))      (r gates the hidden projection *with* its bias)
 *     h' = (1 − z) ⊙ n + z ⊙ h
 * Parameters (PyTorch names, shapes and state_dict order):
 *     cell:  weight_ih (3H, in), weight_hh (3H, H), bias_ih (3H), bias_hh (3H)
 *     GRU:   weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} for k = 0 .. layers−1, layer
 *            k > 0 reading the previous layer's hidden states (in = H)
 * rows [0, H) of each are r's, [H, 2H) z's, [2H, 3H) n's. Initialization as PyTorch's: every
 * parameter ~ U(−1/√H, 1/√H), drawn in registration order from the NnParams generator.
 * A checkpoint (optim/checkpoint.h) of a GRU thus has torch.nn.GRU's state_dict keys. */
#ifndef ANIMA_NN_GRU_H
#define ANIMA_NN_GRU_H

#include "params.h"

#define NN_GRU_MAX_LAYERS 16

typedef struct {
    Tensor *weight_ih, *weight_hh; /* (3H, in), (3H, H) */
    Tensor *bias_ih, *bias_hh;     /* (3H) or NULL (bias = false) */
    int64_t in, hidden;
} NnGruCell;

/* torch.nn.GRUCell(in, hidden, bias): names prefix.weight_ih, .weight_hh, .bias_ih, .bias_hh. */
void nn_gru_cell_init(NnGruCell *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, bool bias);
/* One step: x (B, in), h (B, H) or NULL for zeros -> h' (B, H). */
Tensor *nn_gru_cell_forward(const NnGruCell *m, Tensor *x, Tensor *h);

typedef struct {
    NnGruCell layer[NN_GRU_MAX_LAYERS]; /* layer k's parameters (names *_l{k}) */
    int layers;
    int64_t in, hidden;
} NnGru;

/* torch.nn.GRU(in, hidden, layers, bias, batch_first=True); 1 ≤ layers ≤ NN_GRU_MAX_LAYERS. */
void nn_gru_init(NnGru *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, int layers, bool bias);
/* x (B, T, in), T ≥ 1; h0 (layers, B, H) or NULL for zeros. Returns the last layer's hidden
 * state at every step, (B, T, H) (torch's `output`); *h_n, when h_n is not NULL, gets every
 * layer's state after the last step, (layers, B, H) (torch's `h_n`). */
Tensor *nn_gru_forward(const NnGru *m, Tensor *x, Tensor *h0, Tensor **h_n);

#endif
