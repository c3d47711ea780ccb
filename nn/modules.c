/* nn/modules.c — the modules of nn/modules.h: parameter registration (names and order of the
 * mirrored PyTorch modules) and forwards, which reuse nn/functional.c's math. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#include "modules.h"

#define NN_LN_EPS 1e-5

/* ---- Linear ----------------------------------------------------------------------------------- */

void nn_linear_init(NnLinear *m, NnParams *p, const char *prefix, int64_t in, int64_t out, bool bias) {
    memset(m, 0, sizeof *m);
    m->in = in, m->out = out;
    /* torch.nn.Linear.reset_parameters: kaiming_uniform_(a = √5) gives U(±1/√in) on the weight,
     * and the bias draws from U(±1/√fan_in) too. */
    m->weight = nn_param(p, prefix, "weight", TENSOR_SHAPE(out, in), NN_INIT_KAIMING_UNIFORM, 0);
    if (bias) m->bias = nn_param(p, prefix, "bias", TENSOR_SHAPE(out), NN_INIT_UNIFORM, 1.0 / sqrt((double)in));
}

Tensor *nn_linear_forward(const NnLinear *m, Tensor *x) { return nn_linear(x, m->weight, m->bias); }

/* ---- LayerNorm -------------------------------------------------------------------------------- */

void nn_layer_norm_init(NnLayerNorm *m, NnParams *p, const char *prefix, int64_t dim) {
    m->dim = dim, m->eps = NN_LN_EPS;
    m->weight = nn_param(p, prefix, "weight", TENSOR_SHAPE(dim), NN_INIT_ONES, 0);
    m->bias = nn_param(p, prefix, "bias", TENSOR_SHAPE(dim), NN_INIT_ZEROS, 0);
}

Tensor *nn_layer_norm_forward(const NnLayerNorm *m, Tensor *x) {
    return tensor_layer_norm(x, 1, m->weight, m->bias, m->eps);
}

/* ---- multi-head attention ----------------------------------------------------------------------- */

static void check_heads(const char *op, int64_t dim, int heads) {
    if (heads < 1 || dim % heads) tensor_fail(op, "width %lld is not divisible by %d heads", (long long)dim, heads);
}

void nn_mha_self_init(NnMultiheadAttention *m, NnParams *p, const char *prefix, int64_t dim, int heads, bool qkv_bias,
                      bool proj_bias) {
    char buf[256];
    check_heads("nn_mha_self_init", dim, heads);
    memset(m, 0, sizeof *m);
    m->heads = heads, m->dim = dim, m->ctx_dim = dim;
    nn_linear_init(&m->c_qkv, p, nn_join(buf, prefix, "c_qkv"), dim, 3 * dim, qkv_bias);
    nn_linear_init(&m->c_proj, p, nn_join(buf, prefix, "c_proj"), dim, dim, proj_bias);
}

void nn_mha_cross_init(NnMultiheadAttention *m, NnParams *p, const char *prefix, int64_t dim, int64_t ctx_dim,
                       int heads, bool qkv_bias, bool proj_bias) {
    char buf[256];
    check_heads("nn_mha_cross_init", dim, heads);
    memset(m, 0, sizeof *m);
    m->heads = heads, m->dim = dim, m->ctx_dim = ctx_dim, m->cross = true;
    nn_linear_init(&m->c_q, p, nn_join(buf, prefix, "c_q"), dim, dim, qkv_bias);
    nn_linear_init(&m->c_kv, p, nn_join(buf, prefix, "c_kv"), ctx_dim, 2 * dim, qkv_bias);
    nn_linear_init(&m->c_proj, p, nn_join(buf, prefix, "c_proj"), dim, dim, proj_bias);
}

Tensor *nn_mha_forward(const NnMultiheadAttention *m, Tensor *x, Tensor *ctx) {
    if (m->cross != (ctx != NULL))
        tensor_fail("nn_mha_forward", m->cross ? "a cross-attention module needs a context"
                                               : "a self-attention module takes no context");
    int64_t C = m->dim;
    Tensor *q, *k, *v;
    if (!m->cross) {
        /* one GEMM for the three projections; q, k, v are narrow views of its output (the
         * tiled kernel reads them in place through the row stride) */
        Tensor *qkv = nn_linear_forward(&m->c_qkv, x);
        q = tensor_narrow(qkv, -1, 0, C), k = tensor_narrow(qkv, -1, C, C), v = tensor_narrow(qkv, -1, 2 * C, C);
    } else {
        q = nn_linear_forward(&m->c_q, x);
        Tensor *kv = nn_linear_forward(&m->c_kv, ctx);
        k = tensor_narrow(kv, -1, 0, C), v = tensor_narrow(kv, -1, C, C);
    }
    return nn_linear_forward(&m->c_proj, nn_attention(q, k, v, m->heads));
}

/* ---- MLP -------------------------------------------------------------------------------------- */

void nn_mlp_init(NnMlp *m, NnParams *p, const char *prefix, int64_t dim, int64_t hidden) {
    char buf[256];
    nn_linear_init(&m->c_fc, p, nn_join(buf, prefix, "c_fc"), dim, hidden, true);
    nn_linear_init(&m->c_proj, p, nn_join(buf, prefix, "c_proj"), hidden, dim, true);
}

Tensor *nn_mlp_forward(const NnMlp *m, Tensor *x) {
    return nn_linear_forward(&m->c_proj, tensor_gelu(nn_linear_forward(&m->c_fc, x)));
}

/* ---- pre-LN blocks ---------------------------------------------------------------------------- */

/* Registration order = Michelangelo's attribute order (attn, ln_1, mlp, ln_2), so that
 * nn_state_dict lists keys as that module's state_dict() does. */
void nn_self_block_init(NnSelfBlock *m, NnParams *p, const char *prefix, int64_t dim, int heads, int64_t hidden,
                        bool qkv_bias) {
    char buf[256];
    nn_mha_self_init(&m->attn, p, nn_join(buf, prefix, "attn"), dim, heads, qkv_bias, true);
    nn_layer_norm_init(&m->ln_1, p, nn_join(buf, prefix, "ln_1"), dim);
    nn_mlp_init(&m->mlp, p, nn_join(buf, prefix, "mlp"), dim, hidden);
    nn_layer_norm_init(&m->ln_2, p, nn_join(buf, prefix, "ln_2"), dim);
}

NnSelfBlockWeights nn_self_block_weights(const NnSelfBlock *m) {
    return (NnSelfBlockWeights){
        .ln1_w = m->ln_1.weight, .ln1_b = m->ln_1.bias,
        .qkv_w = m->attn.c_qkv.weight, .qkv_b = m->attn.c_qkv.bias,
        .proj_w = m->attn.c_proj.weight, .proj_b = m->attn.c_proj.bias,
        .ln2_w = m->ln_2.weight, .ln2_b = m->ln_2.bias,
        .fc_w = m->mlp.c_fc.weight, .fc_b = m->mlp.c_fc.bias,
        .fc2_w = m->mlp.c_proj.weight, .fc2_b = m->mlp.c_proj.bias,
    };
}

Tensor *nn_self_block_forward(const NnSelfBlock *m, Tensor *x) {
    NnSelfBlockWeights w = nn_self_block_weights(m);
    return nn_self_block(x, &w, m->attn.heads);
}

/* Michelangelo's ResidualCrossAttentionBlock order: attn, ln_1, ln_2, mlp, ln_3. */
void nn_cross_block_init(NnCrossBlock *m, NnParams *p, const char *prefix, int64_t dim, int64_t ctx_dim, int heads,
                         int64_t hidden, bool qkv_bias) {
    char buf[256];
    nn_mha_cross_init(&m->attn, p, nn_join(buf, prefix, "attn"), dim, ctx_dim, heads, qkv_bias, true);
    nn_layer_norm_init(&m->ln_1, p, nn_join(buf, prefix, "ln_1"), dim);
    nn_layer_norm_init(&m->ln_2, p, nn_join(buf, prefix, "ln_2"), ctx_dim);
    nn_mlp_init(&m->mlp, p, nn_join(buf, prefix, "mlp"), dim, hidden);
    nn_layer_norm_init(&m->ln_3, p, nn_join(buf, prefix, "ln_3"), dim);
}

NnCrossBlockWeights nn_cross_block_weights(const NnCrossBlock *m) {
    return (NnCrossBlockWeights){
        .lnq_w = m->ln_1.weight, .lnq_b = m->ln_1.bias,
        .lnkv_w = m->ln_2.weight, .lnkv_b = m->ln_2.bias,
        .q_w = m->attn.c_q.weight, .q_b = m->attn.c_q.bias,
        .kv_w = m->attn.c_kv.weight, .kv_b = m->attn.c_kv.bias,
        .proj_w = m->attn.c_proj.weight, .proj_b = m->attn.c_proj.bias,
        .ln2_w = m->ln_3.weight, .ln2_b = m->ln_3.bias,
        .fc_w = m->mlp.c_fc.weight, .fc_b = m->mlp.c_fc.bias,
        .fc2_w = m->mlp.c_proj.weight, .fc2_b = m->mlp.c_proj.bias,
    };
}

Tensor *nn_cross_block_forward(const NnCrossBlock *m, Tensor *x, Tensor *ctx) {
    NnCrossBlockWeights w = nn_cross_block_weights(m);
    return nn_cross_block(x, ctx, &w, m->attn.heads);
}

/* ---- ResNet-style MLP block ------------------------------------------------------------------- */

Tensor *nn_activation(Tensor *x, NnActivation act) {
    switch (act) {
    case NN_ACT_RELU: return tensor_relu(x);
    case NN_ACT_ELU: return tensor_elu(x, 1.0);
    case NN_ACT_GELU: return tensor_gelu(x);
    case NN_ACT_SILU: return tensor_mul(x, tensor_sigmoid(x)); /* Elfwing et al. 2018 */
    case NN_ACT_TANH: return tensor_tanh(x);
    case NN_ACT_SOFTPLUS: return tensor_softplus(x, 1.0, 20.0);
    }
    tensor_fail("nn_activation", "unknown activation %d", (int)act);
}

void nn_res_block_init(NnResBlock *m, NnParams *p, const char *prefix, int64_t dim, int64_t hidden, NnActivation act) {
    char buf[256];
    m->act = act;
    nn_linear_init(&m->fc1, p, nn_join(buf, prefix, "fc1"), dim, hidden, true);
    nn_linear_init(&m->fc2, p, nn_join(buf, prefix, "fc2"), hidden, dim, true);
}

Tensor *nn_res_block_forward(const NnResBlock *m, Tensor *x) {
    return tensor_add(x, nn_linear_forward(&m->fc2, nn_activation(nn_linear_forward(&m->fc1, x), m->act)));
}

/* ---- ONI -------------------------------------------------------------------------------------- */

void nn_oni_linear_init(NnOniLinear *m, NnParams *p, const char *prefix, int64_t in, int64_t out, bool bias) {
    NnLinear l;
    nn_linear_init(&l, p, prefix, in, out, bias); /* Z's scale is irrelevant: ONI normalizes it */
    m->weight = l.weight, m->bias = l.bias, m->in = in, m->out = out;
    m->iters = 5, m->eps = 1e-5;
}

Tensor *nn_oni_weight(Tensor *z, int iters, double eps) {
    char sz[128];
    if (z->ndim != 2 || iters < 0) tensor_fail("nn_oni_weight", "Z %s, %d iterations: need a matrix, T ≥ 0",
                                               tensor_shape_str(z, sz), iters);
    int64_t n = z->shape[0], d = z->shape[1];
    bool wide = n <= d; /* S = Zc Zcᵀ (n × n), else ZcᵀZc (d × d) */
    int64_t m = wide ? n : d;
    /* Huang et al. 2020, alg. 1: centering, then Newton's iteration for S^{-1/2} on the
     * Frobenius-normalized S (eigenvalues in (0, 1], where the iteration converges) */
    Tensor *zc = tensor_sub(z, tensor_mean(z, TENSOR_DIMS(1), true));
    Tensor *zt = tensor_transpose(zc, 0, 1);
    Tensor *s = wide ? tensor_matmul(zc, zt) : tensor_matmul(zt, zc);
    Tensor *eye = tensor_eye(m, z->dtype);
    s = tensor_add(s, tensor_mul_scalar(eye, eps));
    Tensor *fro = tensor_sqrt(tensor_sum_all(tensor_mul(s, s)));
    s = tensor_div(s, fro);
    /* physskin.md §6 writes the iteration as B_t = 1.5 B − 0.5 B³ S (B₀ = I). That form
     * amplifies rounding errors in the parts of B that do not commute with S (Higham 1997,
     * "Stable iterations for the matrix square root", Numer. Algorithms 15: the simplified
     * Newton iteration is unstable unless κ(S) is tiny): here it converges by T ≈ 8 and then
     * diverges (8 × 16 Gaussian Z: max|WWᵀ − I| 4e-6 at T = 10, 6e-5 at 14, 128 at 18, inf at 28).
     * The coupled Newton–Schulz iteration (Higham 2008, "Functions of Matrices", §6.7)
     *     M = 1.5 I − 0.5 Z Y,  Y ← Y M,  Z ← M Z,   Y₀ = S, Z₀ = I
     * has Y_t = S B_t and Z_t = B_t in exact arithmetic — the same iterates — and is stable;
     * it costs the same three matrix products per step. */
    Tensor *b = eye, *y = s;
    for (int t = 0; t < iters; t++) {
        Tensor *mm = tensor_sub(tensor_mul_scalar(eye, 1.5), tensor_mul_scalar(tensor_matmul(b, y), 0.5));
        y = tensor_matmul(y, mm);
        b = tensor_matmul(mm, b);
    }
    Tensor *w = wide ? tensor_matmul(b, zc) : tensor_matmul(zc, b);
    return tensor_div(w, tensor_sqrt(fro));
}

Tensor *nn_oni_linear_forward(const NnOniLinear *m, Tensor *x) {
    return nn_linear(x, nn_oni_weight(m->weight, m->iters, m->eps), m->bias);
}

/* ---- Fourier positional embedding --------------------------------------------------------------- */

Tensor *nn_fourier_embed(Tensor *x, int n_freqs) {
    char sx[128];
    if (x->ndim < 1 || n_freqs < 0) tensor_fail("nn_fourier_embed", "x %s with %d frequencies", tensor_shape_str(x, sx),
                                                 n_freqs);
    if (n_freqs == 0) return x;
    double f[64];
    if (n_freqs > 64) tensor_fail("nn_fourier_embed", "%d frequencies: at most 64", n_freqs);
    for (int k = 0; k < n_freqs; k++) f[k] = ldexp(1.0, k); /* 2^k, exact in f32 */
    Tensor *freqs = tensor_from_f64(TENSOR_SHAPE(n_freqs), x->dtype, f);
    if (tensor_device(x) != TENSOR_CPU) freqs = tensor_to(freqs, tensor_device(x));
    /* (..., D, 1) · (K) -> (..., D, K) -> (..., D K): coordinate major, frequency minor */
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = x->shape[x->ndim - 1] * n_freqs;
    Tensor *e = tensor_reshape(tensor_mul(tensor_unsqueeze(x, -1), freqs), x->ndim, shape);
    Tensor *parts[3] = {x, tensor_sin(e), tensor_cos(e)};
    return tensor_cat(3, parts, -1);
}

/* ---- state dict ------------------------------------------------------------------------------- */

int nn_state_dict(const NnParams *p, const NnParam **items) {
    *items = p->items;
    return p->n;
}

bool nn_load_state_dict(NnParams *p, int n, const char *const *names, Tensor *const *values, char *err,
                        size_t errsize) {
    char s1[128], s2[128];
    /* validate everything before copying anything: nothing is loaded half */
    for (int i = 0; i < n; i++) {
        Tensor *t = nn_params_find(p, names[i]);
        if (!t) {
            snprintf(err, errsize, "unexpected key '%s' in state dict", names[i]);
            return false;
        }
        if (!tensor_same_shape(t, values[i])) {
            snprintf(err, errsize, "size mismatch for '%s': checkpoint %s, model %s", names[i],
                     tensor_shape_str(values[i], s1), tensor_shape_str(t, s2));
            return false;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) {
                snprintf(err, errsize, "key '%s' given twice", names[i]);
                return false;
            }
    }
    for (int i = 0; i < p->n; i++) {
        bool found = false;
        for (int j = 0; j < n && !found; j++) found = !strcmp(p->items[i].name, names[j]);
        if (!found) {
            snprintf(err, errsize, "missing key '%s' in state dict", p->items[i].name);
            return false;
        }
    }
    for (int i = 0; i < n; i++) tensor_copy_(nn_params_find(p, names[i]), values[i]);
    return true;
}

/* ---- a stack of Linear layers ------------------------------------------------------------------ */

void nn_stack_init(NnStack *m, NnParams *p, const char *prefix, int64_t in, int64_t hidden, int64_t out, int layers,
                   NnActivation act) {
    m->layers = layers, m->act = act;
    m->lin = base_calloc((size_t)layers + 1, sizeof *m->lin);
    char pre[256];
    for (int l = 0; l <= layers; l++) {
        snprintf(pre, sizeof pre, "%s.%d", prefix, 2 * l);
        nn_linear_init(&m->lin[l], p, pre, l == 0 ? in : hidden, l == layers ? out : hidden, true);
    }
}

Tensor *nn_stack_forward(const NnStack *m, Tensor *x) {
    for (int l = 0; l < m->layers; l++) x = nn_activation(nn_linear_forward(&m->lin[l], x), m->act);
    return nn_linear_forward(&m->lin[m->layers], x);
}

void nn_stack_free(NnStack *m) {
    free(m->lin);
    m->lin = NULL;
}

int nn_activation_parse(const char *s) {
    static const char *const NAMES[] = {[NN_ACT_RELU] = "relu", [NN_ACT_ELU] = "elu", [NN_ACT_GELU] = "gelu",
                                        [NN_ACT_SILU] = "silu", [NN_ACT_TANH] = "tanh", [NN_ACT_SOFTPLUS] = "softplus"};
    for (int a = 0; a < (int)(sizeof NAMES / sizeof *NAMES); a++)
        if (!strcmp(s, NAMES[a])) return a;
    return -1;
}
