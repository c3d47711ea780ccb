/* models/physskin/model.c — the autoencoder of model.h (PhysSkin++ §III-B, physskin.md §3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "model.h"

NnActivation ps_activation(const char *name) {
    int a = nn_activation_parse(name);
    return a < 0 || a == NN_ACT_RELU ? NN_ACT_GELU : (NnActivation)a;
}

void ps_model_init(PsModel *m, NnParams *p, const PsConfig *c) {
    char buf[256], pre[64];
    memset(m, 0, sizeof *m);
    m->M = c->model.latents, m->d = c->model.width, m->m = c->model.handles, m->n_freqs = c->model.n_freqs;
    m->heads = (int)c->model.heads;
    m->layers = (int)c->model.layers;
    m->head_blocks = (int)c->model.head_blocks;
    m->oni = c->model.oni;
    m->act = ps_activation(c->model.activation);
    int64_t d = m->d, hid = c->model.mlp_ratio * d, pe = nn_fourier_embed_dim(3, (int)m->n_freqs);
    bool qb = c->model.qkv_bias;
    /* encoder, in Michelangelo's PerceiverCrossAttentionEncoder attribute order (query,
     * input_proj, cross_attn, self_attn, ln_post) */
    m->query = nn_param(p, "encoder", "query", TENSOR_SHAPE(m->M, d), NN_INIT_NORMAL, 0.02);
    nn_linear_init(&m->input_proj, p, "encoder.input_proj", pe + 3, d, true);
    nn_cross_block_init(&m->cross_attn, p, "encoder.cross_attn", d, d, m->heads, hid, qb);
    m->resblocks = base_calloc((size_t)m->layers + 1, sizeof *m->resblocks);
    for (int i = 0; i < m->layers; i++) {
        snprintf(pre, sizeof pre, "encoder.self_attn.resblocks.%d", i);
        nn_self_block_init(&m->resblocks[i], p, pre, d, m->heads, hid, qb);
    }
    nn_layer_norm_init(&m->ln_post, p, "encoder.ln_post", d);
    /* decoder (§III-B "Neural Skinning Fields Decoding") */
    m->handle_tokens = nn_param(p, "decoder", "handle_tokens", TENSOR_SHAPE(m->m, d), NN_INIT_NORMAL, 0.02);
    nn_cross_block_init(&m->handle_attn, p, "decoder.handle_attn", d, d, m->heads, hid, qb);
    nn_linear_init(&m->point_proj, p, "decoder.point_proj", pe, d, true);
    nn_cross_block_init(&m->point_attn, p, "decoder.point_attn", d, d, m->heads, hid, qb);
    int64_t hh = c->model.head_hidden;
    nn_linear_init(&m->head_in, p, "decoder.head.in_proj", d + pe, hh, true);
    m->head = base_calloc((size_t)m->head_blocks + 1, sizeof *m->head);
    for (int i = 0; i < m->head_blocks; i++) {
        snprintf(pre, sizeof pre, "decoder.head.blocks.%d", i);
        nn_res_block_init(&m->head[i], p, pre, hh, hh, m->act);
    }
    if (m->oni) nn_oni_linear_init(&m->head_out_oni, p, nn_join(buf, "decoder.head", "out"), hh, m->m, true);
    else nn_linear_init(&m->head_out, p, nn_join(buf, "decoder.head", "out"), hh, m->m, true);
}

void ps_model_free(PsModel *m) {
    free(m->resblocks);
    free(m->head);
    m->resblocks = NULL, m->head = NULL;
}

/* (n, d) learned tokens -> (B, n, d) */
static Tensor *tokens(Tensor *t, int64_t B) {
    return tensor_expand(tensor_unsqueeze(t, 0), TENSOR_SHAPE(B, t->shape[0], t->shape[1]));
}

Tensor *ps_encode(const PsModel *m, Tensor *points, Tensor *normals) {
    Tensor *parts[2] = {nn_fourier_embed(points, (int)m->n_freqs), normals};
    Tensor *data = nn_linear_forward(&m->input_proj, tensor_cat(2, parts, -1)); /* (B, N, d) */
    Tensor *q = nn_cross_block_forward(&m->cross_attn, tokens(m->query, points->shape[0]), data);
    for (int i = 0; i < m->layers; i++) q = nn_self_block_forward(&m->resblocks[i], q);
    return nn_layer_norm_forward(&m->ln_post, q);
}

Tensor *ps_handles(const PsModel *m, Tensor *fs) {
    return nn_cross_block_forward(&m->handle_attn, tokens(m->handle_tokens, fs->shape[0]), fs);
}

Tensor *ps_decode(const PsModel *m, Tensor *fh, Tensor *x) {
    Tensor *pe = nn_fourier_embed(x, (int)m->n_freqs);
    Tensor *fp = nn_cross_block_forward(&m->point_attn, nn_linear_forward(&m->point_proj, pe), fh);
    Tensor *parts[2] = {fp, pe};
    Tensor *h = nn_linear_forward(&m->head_in, tensor_cat(2, parts, -1));
    for (int i = 0; i < m->head_blocks; i++) h = nn_res_block_forward(&m->head[i], h);
    h = nn_activation(h, m->act);
    return m->oni ? nn_oni_linear_forward(&m->head_out_oni, h) : nn_linear_forward(&m->head_out, h);
}

static void grad_fd(const PsModel *m, Tensor *fh, Tensor *x, double delta, Tensor **w, Tensor **gw) {
    int64_t Q = x->shape[1];
    Tensor *xs[7] = {x};
    for (int i = 0; i < 3; i++) {
        double e[3] = {0, 0, 0};
        e[i] = delta;
        Tensor *de = tensor_from_f64(TENSOR_SHAPE(1, 1, 3), x->dtype, e);
        if (tensor_device(x) != TENSOR_CPU) de = tensor_to(de, tensor_device(x));
        xs[1 + 2 * i] = tensor_add(x, de);
        xs[2 + 2 * i] = tensor_sub(x, de);
    }
    Tensor *all = ps_decode(m, fh, tensor_cat(7, xs, 1)); /* (B, 7Q, m) */
    *w = tensor_narrow(all, 1, 0, Q);
    Tensor *g[3];
    for (int i = 0; i < 3; i++)
        g[i] = tensor_sub(tensor_narrow(all, 1, (1 + 2 * i) * Q, Q), tensor_narrow(all, 1, (2 + 2 * i) * Q, Q));
    *gw = tensor_mul_scalar(tensor_stack(3, g, -1), 0.5 / delta); /* (B, Q, m, 3) */
}

static void grad_exact(const PsModel *m, Tensor *fh, Tensor *x, Tensor **w, Tensor **gw) {
    int64_t B = x->shape[0], Q = x->shape[1], k = m->m;
    bool create = tensor_grad_enabled(); /* inference needs no graph through the derivatives */
    bool prev = tensor_grad_set_enabled(true);
    /* replica r of every point (a fresh leaf): only output r of replica r enters the sum */
    Tensor *xr = tensor_contiguous(tensor_expand(tensor_unsqueeze(tensor_detach(x), 1), TENSOR_SHAPE(B, k, Q, 3)));
    if (xr == x) xr = tensor_clone(tensor_detach(x));
    tensor_requires_grad(xr, true);
    Tensor *wr = tensor_reshape(ps_decode(m, fh, tensor_reshape(xr, TENSOR_SHAPE(B, k * Q, 3))),
                                TENSOR_SHAPE(B, k, Q, k));
    Tensor *eye = tensor_reshape(tensor_eye(k, x->dtype), TENSOR_SHAPE(k, 1, k));
    if (tensor_device(x) != TENSOR_CPU) eye = tensor_to(eye, tensor_device(x));
    Tensor *s = tensor_sum_all(tensor_mul(wr, eye));
    Tensor *g = NULL;
    ag_grad(1, &s, NULL, 1, &xr, &g, create);
    if (!g) g = tensor_zeros_like(xr);
    *gw = tensor_permute(g, TENSOR_DIMS(0, 2, 1, 3)); /* (B, Q, m, 3) */
    *w = tensor_reshape(tensor_narrow(wr, 1, 0, 1), TENSOR_SHAPE(B, Q, k));
    tensor_grad_set_enabled(prev);
    if (!create) {
        *w = tensor_detach(*w);
        *gw = tensor_detach(*gw);
    }
}

void ps_decode_with_grad(const PsModel *m, Tensor *fh, Tensor *x, PsGradMode mode, double delta, Tensor **w,
                         Tensor **grad_w) {
    if (x->ndim != 3 || x->shape[2] != 3) tensor_fail("ps_decode_with_grad", "query points must be (B, Q, 3)");
    if (mode == PS_GRAD_EXACT) grad_exact(m, fh, x, w, grad_w);
    else grad_fd(m, fh, x, delta, w, grad_w);
}
