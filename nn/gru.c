/* nn/gru.c — nn/gru.h: the GRU cell and the multi-layer GRU, composed of tensor ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "functional.h"
#include "gru.h"

/* Registers one cell's four parameters under the given names. torch.nn.GRU / GRUCell
 * reset_parameters: every weight and bias ~ U(±1/√H), in state_dict order. */
static void cell_init(NnGruCell *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, bool bias,
                      const char *suffix) {
    if (in < 1 || hidden < 1) tensor_fail("nn_gru_init", "sizes must be ≥ 1 (in %lld, hidden %lld)", (long long)in,
                                          (long long)hidden);
    char name[64];
    double a = 1.0 / sqrt((double)hidden);
    m->in = in, m->hidden = hidden;
    snprintf(name, sizeof name, "weight_ih%s", suffix);
    m->weight_ih = nn_param(p, prefix, name, TENSOR_SHAPE(3 * hidden, in), NN_INIT_UNIFORM, a);
    snprintf(name, sizeof name, "weight_hh%s", suffix);
    m->weight_hh = nn_param(p, prefix, name, TENSOR_SHAPE(3 * hidden, hidden), NN_INIT_UNIFORM, a);
    m->bias_ih = m->bias_hh = NULL;
    if (bias) {
        snprintf(name, sizeof name, "bias_ih%s", suffix);
        m->bias_ih = nn_param(p, prefix, name, TENSOR_SHAPE(3 * hidden), NN_INIT_UNIFORM, a);
        snprintf(name, sizeof name, "bias_hh%s", suffix);
        m->bias_hh = nn_param(p, prefix, name, TENSOR_SHAPE(3 * hidden), NN_INIT_UNIFORM, a);
    }
}

void nn_gru_cell_init(NnGruCell *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, bool bias) {
    cell_init(m, p, prefix, in, hidden, bias, "");
}

static Tensor *zeros_hidden(const Tensor *like, int64_t batch, int64_t hidden) {
    Tensor *h = tensor_empty_on(TENSOR_SHAPE(batch, hidden), like->dtype, like->storage->device);
    tensor_fill_(h, 0);
    return h;
}

/* One step from the input projection gi = W_ih x + b_ih (B, 3H) and h (B, H). The r and z gates
 * share one sigmoid over the first 2H columns. */
static Tensor *cell_step(const NnGruCell *m, Tensor *gi, Tensor *h) {
    int64_t H = m->hidden;
    Tensor *gh = nn_linear(h, m->weight_hh, m->bias_hh);
    Tensor *rz = tensor_sigmoid(tensor_add(tensor_narrow(gi, -1, 0, 2 * H), tensor_narrow(gh, -1, 0, 2 * H)));
    Tensor *r = tensor_narrow(rz, -1, 0, H), *z = tensor_narrow(rz, -1, H, H);
    /* r multiplies W_hn h + b_hn (PyTorch; the original paper's variant gates h before W_hn) */
    Tensor *n = tensor_tanh(tensor_add(tensor_narrow(gi, -1, 2 * H, H), tensor_mul(r, tensor_narrow(gh, -1, 2 * H, H))));
    /* (1 − z) n + z h = n + z (h − n): one op fewer */
    return tensor_add(n, tensor_mul(z, tensor_sub(h, n)));
}

static void check_2d(const char *op, const Tensor *t, const char *what, int64_t rows, int64_t cols) {
    if (t->ndim != 2 || (rows >= 0 && t->shape[0] != rows) || t->shape[1] != cols)
        tensor_fail(op, "%s must be (%s, %lld), got %d dims", what, rows >= 0 ? "B" : "any", (long long)cols, t->ndim);
}

Tensor *nn_gru_cell_forward(const NnGruCell *m, Tensor *x, Tensor *h) {
    check_2d("nn_gru_cell_forward", x, "x", -1, m->in);
    if (h) check_2d("nn_gru_cell_forward", h, "h", x->shape[0], m->hidden);
    else h = zeros_hidden(x, x->shape[0], m->hidden);
    return cell_step(m, nn_linear(x, m->weight_ih, m->bias_ih), h);
}

void nn_gru_init(NnGru *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, int layers, bool bias) {
    if (layers < 1 || layers > NN_GRU_MAX_LAYERS)
        tensor_fail("nn_gru_init", "layers must be 1..%d, got %d", NN_GRU_MAX_LAYERS, layers);
    m->layers = layers, m->in = in, m->hidden = hidden;
    for (int k = 0; k < layers; k++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "_l%d", k);
        cell_init(&m->layer[k], p, prefix, k ? hidden : in, hidden, bias, suffix);
    }
}

/* tensor_cat of any number of tensors (a recorded op takes at most TENSOR_MAX_INPUTS): groups
 * are concatenated first, then the groups' results. xs is overwritten. */
static Tensor *cat_many(int n, Tensor **xs, int dim) {
    while (n > TENSOR_MAX_INPUTS) {
        int m = 0;
        for (int i = 0; i < n; i += TENSOR_MAX_INPUTS) {
            int c = n - i < TENSOR_MAX_INPUTS ? n - i : TENSOR_MAX_INPUTS;
            xs[m++] = c == 1 ? xs[i] : tensor_cat(c, xs + i, dim);
        }
        n = m;
    }
    return n == 1 ? xs[0] : tensor_cat(n, xs, dim);
}

/* (B, H) states of T steps -> (B, T, H) */
static Tensor *stack_steps(int64_t T, Tensor **hs) {
    for (int64_t t = 0; t < T; t++) hs[t] = tensor_unsqueeze(hs[t], 1);
    return cat_many((int)T, hs, 1);
}

/* The T steps of x (B, T, C) as (B, C) views, split by a binary tree of narrows: the backward
 * of a narrow scatters into a zero tensor of its input's size, so T narrows of x itself would
 * cost O(T²·B·C) in backward; halving at each level costs O(T log T·B·C). */
static void split_steps(Tensor *x, int64_t t0, int64_t T, Tensor **out) {
    if (T == 1) {
        out[t0] = tensor_squeeze(x, 1);
        return;
    }
    int64_t h = T / 2;
    split_steps(tensor_narrow(x, 1, 0, h), t0, h, out);
    split_steps(tensor_narrow(x, 1, h, T - h), t0 + h, T - h, out);
}

Tensor *nn_gru_forward(const NnGru *m, Tensor *x, Tensor *h0, Tensor **h_n) {
    const char *op = "nn_gru_forward";
    if (x->ndim != 3 || x->shape[2] != m->in || x->shape[1] < 1)
        tensor_fail(op, "x must be (B, T ≥ 1, %lld), got %d dims", (long long)m->in, x->ndim);
    int64_t B = x->shape[0], T = x->shape[1], H = m->hidden;
    if (T > INT32_MAX) tensor_fail(op, "sequence of %lld steps is too long", (long long)T);
    if (h0 && (h0->ndim != 3 || h0->shape[0] != m->layers || h0->shape[1] != B || h0->shape[2] != H))
        tensor_fail(op, "h0 must be (%d, %lld, %lld)", m->layers, (long long)B, (long long)H);
    /* xs[t]: the current layer's input at step t — x's steps for layer 0, then the previous
     * layer's states themselves (no slicing of a stacked tensor, for the same reason) */
    Tensor **xs = base_malloc(sizeof *xs * (size_t)T);
    split_steps(x, 0, T, xs);
    Tensor *last[NN_GRU_MAX_LAYERS];
    for (int k = 0; k < m->layers; k++) {
        const NnGruCell *c = &m->layer[k];
        Tensor *h = h0 ? tensor_squeeze(tensor_narrow(h0, 0, k, 1), 0) : zeros_hidden(x, B, H);
        /* one input GEMM per step: one GEMM over all steps would need its output sliced per
         * step, whose backward is the quadratic scatter above */
        for (int64_t t = 0; t < T; t++) xs[t] = h = cell_step(c, nn_linear(xs[t], c->weight_ih, c->bias_ih), h);
        last[k] = h;
    }
    if (h_n) *h_n = tensor_stack(m->layers, last, 0);
    Tensor *out = stack_steps(T, xs);
    free(xs);
    return out;
}
