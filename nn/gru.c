/* nn/gru.c — nn/gru.h: the GRU cell (composed of tensor ops) and the multi-layer GRU: a fused
 * layer (one custom-op node per layer, as cuDNN and PyTorch run it) where the device has the
 * gate kernels, the same composition of tensor ops otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/custom.h"
#include "base/alloc.h"
#include "tensor/backend.h"
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

/* ---- the fused layer ---------------------------------------------------------------------------
 * One layer over all T steps as one tape node. Forward: the input path of every step in one GEMM
 * (B·T, I)·W_ihᵀ, then per step one GEMM h·W_hhᵀ and one pass of the gate kernel
 * (TensorGruArgs), which adds both biases and writes h' into the output (B, T, H) in place.
 * Backward, steps in reverse: the gate kernel's backward, then h's gradient by one GEMM
 * dgh·W_hh; after the loop one GEMM each for dx = dgi·W_ih, dW_ih = dgiᵀ x and
 * dW_hh = dghᵀ h_prev over all steps, and the bias gradients as column sums. */
typedef struct {
    int64_t B, T, I, H;
    Tensor *gates, *ghn; /* (B, T, 3H): r, z, n of every step; (B, T, H): gh_n + b_hn */
} GruLayerCtx;

static void gru_args(TensorGruArgs *a, const GruLayerCtx *c, TensorDType dt) {
    memset(a, 0, sizeof *a);
    a->dtype = dt, a->B = c->B, a->H = c->H;
    a->sgates = c->T * 3 * c->H, a->sghn = c->T * c->H;
}

static Tensor *step_rows(Tensor *m, int64_t t) { return tensor_squeeze(tensor_narrow(m, 1, t, 1), 1); }

/* in: x (B, T, I), h0 (B, H), W_ih (3H, I), W_hh (3H, H)[, b_ih (3H), b_hh (3H)] */
static Tensor *gru_layer_forward(void *ctx, int n, Tensor *const *in) {
    GruLayerCtx *c = ctx;
    int64_t B = c->B, T = c->T, I = c->I, H = c->H;
    TensorDevice dev = tensor_device(in[0]);
    TensorDType dt = in[0]->dtype;
    const TensorBackend *be = tensor_backend_for(dev);
    Tensor *x = tensor_contiguous(in[0]), *h0 = tensor_contiguous(in[1]);
    Tensor *bih = n > 4 ? tensor_contiguous(in[4]) : NULL, *bhh = n > 4 ? tensor_contiguous(in[5]) : NULL;
    Tensor *whhT = tensor_transpose(in[3], 0, 1);
    Tensor *gi = tensor_matmul(tensor_reshape(x, 2, (int64_t[]){B * T, I}), tensor_transpose(in[2], 0, 1));
    Tensor *out = tensor_empty_on(3, (int64_t[]){B, T, H}, dt, dev);
    c->gates = tensor_empty_on(3, (int64_t[]){B, T, 3 * H}, dt, dev);
    c->ghn = tensor_empty_on(3, (int64_t[]){B, T, H}, dt, dev);
    size_t es = tensor_dtype_size(dt);
    char *pgi = tensor_data_ptr(gi), *pout = tensor_data_ptr(out);
    char *pg = tensor_data_ptr(c->gates), *pn = tensor_data_ptr(c->ghn);
    for (int64_t t = 0; t < T; t++) {
        Tensor *h = t ? step_rows(out, t - 1) : h0;
        Tensor *gh = tensor_matmul(h, whhT); /* (B, 3H) contiguous */
        TensorGruArgs a;
        gru_args(&a, c, dt);
        a.gi = pgi + (size_t)(t * 3 * H) * es, a.sgi = T * 3 * H;
        a.gh = tensor_data_ptr(gh), a.sgh = 3 * H;
        a.h = t ? pout + (size_t)((t - 1) * H) * es : tensor_data_ptr(h0), a.sh = t ? T * H : H;
        a.b_ih = bih ? tensor_data_ptr(bih) : NULL, a.b_hh = bhh ? tensor_data_ptr(bhh) : NULL;
        a.h_out = pout + (size_t)(t * H) * es, a.sout = T * H;
        a.gates = pg + (size_t)(t * 3 * H) * es, a.ghn = pn + (size_t)(t * H) * es;
        be->gru_step(&a);
    }
    return out;
}

static Tensor *gru_layer_composed(int n, Tensor *const *in);

static void gru_layer_backward(void *ctx, int n, Tensor *const *in, Tensor *out, Tensor *g, const bool *need,
                               Tensor **gin) {
    GruLayerCtx *c = ctx;
    if (tensor_grad_enabled()) {
        /* create_graph: the gradients must be differentiable again, and the raw kernels record
         * nothing: recompute the layer as tensor ops and differentiate that (as attention does) */
        ag_custom_recomposed_grads(gru_layer_composed(n, in), g, n, in, need, gin);
        return;
    }
    int64_t B = c->B, T = c->T, I = c->I, H = c->H;
    TensorDevice dev = tensor_device(in[0]);
    TensorDType dt = in[0]->dtype;
    const TensorBackend *be = tensor_backend_for(dev);
    size_t es = tensor_dtype_size(dt);
    Tensor *dy = tensor_contiguous(g), *h0 = tensor_contiguous(in[1]);
    Tensor *dgi = tensor_empty_on(3, (int64_t[]){B, T, 3 * H}, dt, dev);
    Tensor *dgh = tensor_empty_on(3, (int64_t[]){B, T, 3 * H}, dt, dev);
    char *pdy = tensor_data_ptr(dy), *pout = tensor_data_ptr(out), *pg = tensor_data_ptr(c->gates);
    char *pn = tensor_data_ptr(c->ghn), *pdgi = tensor_data_ptr(dgi), *pdgh = tensor_data_ptr(dgh);
    Tensor *carry = NULL; /* dL/dh_t from the steps after t */
    for (int64_t t = T - 1; t >= 0; t--) {
        Tensor *dh = tensor_empty_on(2, (int64_t[]){B, H}, dt, dev);
        TensorGruArgs a;
        gru_args(&a, c, dt);
        a.h = t ? pout + (size_t)((t - 1) * H) * es : tensor_data_ptr(h0), a.sh = t ? T * H : H;
        a.gates = pg + (size_t)(t * 3 * H) * es, a.ghn = pn + (size_t)(t * H) * es;
        a.dy = pdy + (size_t)(t * H) * es, a.sdy = T * H;
        a.dcarry = carry ? tensor_data_ptr(carry) : NULL;
        a.dgi = pdgi + (size_t)(t * 3 * H) * es, a.sdgi = T * 3 * H;
        a.dgh = pdgh + (size_t)(t * 3 * H) * es, a.sdgh = T * 3 * H;
        a.dh = tensor_data_ptr(dh);
        be->gru_step_backward(&a);
        if (t > 0 || need[1]) tensor_add_(dh, tensor_matmul(step_rows(dgh, t), in[3]), 1);
        carry = dh;
    }
    Tensor *dgi2 = tensor_reshape(dgi, 2, (int64_t[]){B * T, 3 * H});
    Tensor *dgh2 = tensor_reshape(dgh, 2, (int64_t[]){B * T, 3 * H});
    if (need[0]) gin[0] = tensor_reshape(tensor_matmul(dgi2, in[2]), 3, (int64_t[]){B, T, I});
    if (need[1]) gin[1] = carry;
    if (need[2])
        gin[2] = tensor_matmul(tensor_transpose(dgi2, 0, 1),
                               tensor_reshape(tensor_contiguous(in[0]), 2, (int64_t[]){B * T, I}));
    if (need[3]) { /* h_prev of every step: h0, then the outputs of steps 0..T−2 */
        Tensor *hp = T > 1 ? tensor_cat(2, (Tensor *[]){tensor_unsqueeze(h0, 1), tensor_narrow(out, 1, 0, T - 1)}, 1)
                           : tensor_unsqueeze(h0, 1);
        gin[3] = tensor_matmul(tensor_transpose(dgh2, 0, 1), tensor_reshape(hp, 2, (int64_t[]){B * T, H}));
    }
    if (n > 4 && need[4]) gin[4] = tensor_sum(dgi2, 1, (int[]){0}, false);
    if (n > 4 && need[5]) gin[5] = tensor_sum(dgh2, 1, (int[]){0}, false);
}

static const AgCustomOp gru_layer_op = {"nn_gru_layer", gru_layer_forward, gru_layer_backward};

/* Whether the fused layer runs for x and m's weights: f32 or f64 throughout, on a device with
 * the gate kernels */
static bool gru_fused_ok(const NnGru *m, const Tensor *x) {
    if (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) return false;
    for (int k = 0; k < m->layers; k++)
        if (m->layer[k].weight_ih->dtype != x->dtype || m->layer[k].weight_hh->dtype != x->dtype ||
            (m->layer[k].bias_ih && m->layer[k].bias_ih->dtype != x->dtype))
            return false;
    const TensorBackend *be = tensor_backend_for(tensor_device(x));
    return be->gru_step && be->gru_step_backward;
}

/* The layer as tensor ops, one cell step at a time: the path of devices without the gate kernels
 * and of a differentiable backward. in as gru_layer_forward's. */
static Tensor *gru_layer_composed(int n, Tensor *const *in) {
    int64_t T = in[0]->shape[1];
    NnGruCell c = {.in = in[0]->shape[2], .hidden = in[1]->shape[1], .weight_ih = in[2], .weight_hh = in[3],
                   .bias_ih = n > 4 ? in[4] : NULL, .bias_hh = n > 4 ? in[5] : NULL};
    Tensor **xs = base_malloc(sizeof *xs * (size_t)T);
    split_steps(in[0], 0, T, xs);
    Tensor *h = in[1];
    /* one input GEMM per step: one GEMM over all steps would need its output sliced per step,
     * whose backward is the quadratic scatter of split_steps' comment */
    for (int64_t t = 0; t < T; t++) xs[t] = h = cell_step(&c, nn_linear(xs[t], c.weight_ih, c.bias_ih), h);
    Tensor *out = stack_steps(T, xs);
    free(xs);
    return out;
}

Tensor *nn_gru_forward(const NnGru *m, Tensor *x, Tensor *h0, Tensor **h_n) {
    const char *op = "nn_gru_forward";
    if (x->ndim != 3 || x->shape[2] != m->in || x->shape[1] < 1)
        tensor_fail(op, "x must be (B, T ≥ 1, %lld), got %d dims", (long long)m->in, x->ndim);
    int64_t B = x->shape[0], T = x->shape[1], H = m->hidden;
    if (T > INT32_MAX) tensor_fail(op, "sequence of %lld steps is too long", (long long)T);
    if (h0 && (h0->ndim != 3 || h0->shape[0] != m->layers || h0->shape[1] != B || h0->shape[2] != H))
        tensor_fail(op, "h0 must be (%d, %lld, %lld)", m->layers, (long long)B, (long long)H);
    bool fused = gru_fused_ok(m, x);
    Tensor *cur = x, *last[NN_GRU_MAX_LAYERS];
    for (int k = 0; k < m->layers; k++) {
        const NnGruCell *c = &m->layer[k];
        Tensor *h = h0 ? tensor_squeeze(tensor_narrow(h0, 0, k, 1), 0) : zeros_hidden(x, B, H);
        Tensor *in[6] = {cur, h, c->weight_ih, c->weight_hh, c->bias_ih, c->bias_hh};
        int n = c->bias_ih ? 6 : 4;
        if (fused) {
            GruLayerCtx ctx = {.B = B, .T = T, .I = cur->shape[2], .H = H};
            cur = ag_custom_apply(&gru_layer_op, n, in, &ctx, sizeof ctx);
        } else {
            cur = gru_layer_composed(n, in);
        }
        last[k] = step_rows(cur, T - 1);
    }
    if (h_n) *h_n = tensor_stack(m->layers, last, 0);
    Tensor *out = cur;
    return out;
}
