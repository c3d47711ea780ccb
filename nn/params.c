/* nn/params.c — parameter registry, initializers, packing into flat value/grad buffers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "params.h"

void nn_params_init(NnParams *p, TensorScope *scope, TensorDType dtype, uint64_t seed) {
    if (dtype != TENSOR_F32 && dtype != TENSOR_F64)
        tensor_fail("nn_params_init", "parameters are f32 or f64, got %s (for bf16 matmuls keep f32 parameters and "
                    "call nn_set_matmul_dtype)", tensor_dtype_name(dtype));
    memset(p, 0, sizeof *p);
    p->scope = scope ? scope : tensor_scope_root();
    p->dtype = dtype;
    p->rng = (TensorRng){.seed = seed, .stream = 0x4e4e};
}

void nn_params_free(NnParams *p) {
    for (int i = 0; i < p->n; i++) free(p->items[i].name);
    free(p->items);
    memset(p, 0, sizeof *p);
}

const char *nn_join(char *buf, const char *prefix, const char *name) {
    if (prefix && *prefix) snprintf(buf, 256, "%s.%s", prefix, name);
    else snprintf(buf, 256, "%s", name);
    return buf;
}

/* fan_in = size(1) · receptive field, fan_out = size(0) · receptive field (torch.nn.init) */
static void fans(int ndim, const int64_t *shape, double *fin, double *fout) {
    double rf = 1;
    for (int i = 2; i < ndim; i++) rf *= (double)shape[i];
    *fin = ndim >= 2 ? (double)shape[1] * rf : (double)(ndim ? shape[0] : 1);
    *fout = ndim >= 2 ? (double)shape[0] * rf : (double)(ndim ? shape[0] : 1);
}

Tensor *nn_param(NnParams *p, const char *prefix, const char *name, int ndim, const int64_t *shape, NnInit init,
                 double a) {
    char full[256];
    nn_join(full, prefix, name);
    if (p->packed) tensor_fail("nn_param", "'%s' registered after nn_params_pack", full);
    if (nn_params_find(p, full)) tensor_fail("nn_param", "parameter '%s' registered twice", full);
    TensorScope *prev = tensor_scope_switch(p->scope);
    bool grad = tensor_grad_set_enabled(false);
    double fin, fout;
    fans(ndim, shape, &fin, &fout);
    Tensor *t;
    switch (init) {
    case NN_INIT_ZEROS: t = tensor_zeros(ndim, shape, p->dtype); break;
    case NN_INIT_ONES: t = tensor_ones(ndim, shape, p->dtype); break;
    case NN_INIT_NORMAL: t = tensor_mul_scalar(tensor_randn_with(&p->rng, ndim, shape, p->dtype), a); break;
    case NN_INIT_KAIMING_NORMAL:
        t = tensor_mul_scalar(tensor_randn_with(&p->rng, ndim, shape, p->dtype), sqrt(2.0 / fin));
        break;
    default: {
        double bound = init == NN_INIT_UNIFORM ? a
                     : init == NN_INIT_XAVIER_UNIFORM ? a * sqrt(6.0 / (fin + fout))
                                                      : 1.0 / sqrt(fin);
        Tensor *u = tensor_rand_with(&p->rng, ndim, shape, p->dtype);
        t = tensor_add_scalar(tensor_mul_scalar(u, 2 * bound), -bound);
    }
    }
    tensor_grad_set_enabled(grad);
    tensor_scope_switch(prev);
    tensor_requires_grad(t, true);
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 32;
        p->items = base_realloc(p->items, sizeof *p->items * (size_t)p->cap);
    }
    p->items[p->n].name = strdup(full);
    p->items[p->n++].value = t;
    return t;
}

int64_t nn_params_numel(const NnParams *p) {
    int64_t n = 0;
    for (int i = 0; i < p->n; i++) n += tensor_numel(p->items[i].value);
    return n;
}

/* Re-point every parameter (the Tensor headers modules hold) into the flat buffers. */
void nn_params_pack(NnParams *p) {
    if (p->packed) return;
    int64_t total = nn_params_numel(p);
    TensorScope *prev = tensor_scope_switch(p->scope);
    p->flat = tensor_zeros(1, &total, p->dtype);
    p->flat_grad = tensor_zeros(1, &total, p->dtype);
    int64_t off = 0;
    for (int i = 0; i < p->n; i++) {
        Tensor *t = p->items[i].value;
        int64_t n = tensor_numel(t);
        Tensor *dst = tensor_view_at(p->flat, t->ndim, t->shape, off);
        tensor_copy_(dst, t);
        Tensor *g = tensor_view_at(p->flat_grad, t->ndim, t->shape, off);
        t->storage = dst->storage;
        t->offset = dst->offset;
        for (int d = 0; d < t->ndim; d++) t->stride[d] = dst->stride[d];
        t->grad = g;
        off += n;
    }
    tensor_scope_switch(prev);
    p->packed = true;
}

void nn_params_move(NnParams *p, TensorDevice dev) {
    if (!p->packed) tensor_fail("nn_params_move", "parameters are not packed (call nn_params_pack first)");
    if (tensor_device(p->flat) == dev) return;
    TensorScope *prev = tensor_scope_switch(p->scope);
    bool grad = tensor_grad_set_enabled(false);
    Tensor *flat = tensor_to(p->flat, dev), *flat_grad = tensor_to(p->flat_grad, dev);
    int64_t off = 0;
    for (int i = 0; i < p->n; i++) {
        Tensor *t = p->items[i].value;
        Tensor *dst = tensor_view_at(flat, t->ndim, t->shape, off);
        t->storage = dst->storage;
        t->offset = dst->offset;
        for (int d = 0; d < t->ndim; d++) t->stride[d] = dst->stride[d];
        t->grad = tensor_view_at(flat_grad, t->ndim, t->shape, off);
        off += tensor_numel(t);
    }
    p->flat = flat;
    p->flat_grad = flat_grad;
    tensor_grad_set_enabled(grad);
    tensor_scope_switch(prev);
}

Tensor *nn_params_find(const NnParams *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->items[i].name, name)) return p->items[i].value;
    return NULL;
}

void nn_params_zero_grad(NnParams *p) {
    if (p->packed) {
        tensor_fill_(p->flat_grad, 0);
        return;
    }
    for (int i = 0; i < p->n; i++)
        if (p->items[i].value->grad) tensor_fill_(p->items[i].value->grad, 0);
}

void nn_params_mirror(NnParams *dst, const NnParams *src, TensorDevice dev) {
    if (!src->packed) tensor_fail("nn_params_mirror", "parameters are not packed (call nn_params_pack first)");
    memset(dst, 0, sizeof *dst);
    dst->scope = src->scope;
    dst->dtype = src->dtype;
    dst->rng = src->rng;
    TensorScope *prev = tensor_scope_switch(src->scope);
    bool grad = tensor_grad_set_enabled(false);
    dst->flat = tensor_to(src->flat, dev);
    if (dst->flat == src->flat) dst->flat = tensor_clone(src->flat); /* same device: still a copy */
    dst->flat_grad = tensor_zeros_like(dst->flat);
    dst->cap = src->n ? src->n : 1;
    dst->items = base_malloc(sizeof *dst->items * (size_t)dst->cap);
    int64_t off = 0;
    for (int i = 0; i < src->n; i++) {
        const Tensor *t = src->items[i].value;
        Tensor *v = tensor_view_at(dst->flat, t->ndim, t->shape, off);
        tensor_requires_grad(v, true);
        /* backward accumulates into an existing ->grad in place: into the flat buffer */
        v->grad = tensor_view_at(dst->flat_grad, t->ndim, t->shape, off);
        dst->items[i].name = base_strdup(src->items[i].name);
        dst->items[i].value = v;
        off += tensor_numel(t);
    }
    dst->n = src->n;
    dst->packed = true;
    tensor_grad_set_enabled(grad);
    tensor_scope_switch(prev);
}
