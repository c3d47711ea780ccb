/* nn/params.h — a model's named parameters. Modules register tensors under PyTorch-style
 * dotted names ("encoder.blocks.3.attn.c_qkv.weight"); nn_params_pack then moves every value
 * into one contiguous buffer and gives every parameter a gradient that is a view into one
 * contiguous gradient buffer, so optimizers and the data-parallel all-reduce see two flat
 * vectors. Parameters live in the scope given at init (long-lived). */
#ifndef ANIMA_NN_PARAMS_H
#define ANIMA_NN_PARAMS_H

#include "autograd/autograd.h"

typedef enum {
    NN_INIT_ZEROS,
    NN_INIT_ONES,
    NN_INIT_NORMAL,          /* N(0, a²) */
    NN_INIT_UNIFORM,         /* U(-a, a) */
    NN_INIT_XAVIER_UNIFORM,  /* U(±a·sqrt(6 / (fan_in + fan_out))), a = gain */
    NN_INIT_KAIMING_UNIFORM, /* PyTorch's Linear default: U(±1/sqrt(fan_in)) (kaiming, a = √5) */
    NN_INIT_KAIMING_NORMAL,  /* N(0, 2 / fan_in) */
} NnInit;

typedef struct {
    char *name;
    Tensor *value; /* after packing: a view into flat; ->grad a view into flat_grad */
} NnParam;

typedef struct {
    NnParam *items;
    int n, cap;
    TensorDType dtype;
    TensorScope *scope;
    TensorRng rng; /* initializers draw from it, in registration order */
    Tensor *flat, *flat_grad;
    bool packed;
} NnParams;

/* dtype f32 or f64: parameters, gradients and optimizer state stay in full precision (bf16
 * compute is nn_set_matmul_dtype's casts, nn/functional.h). */
void nn_params_init(NnParams *p, TensorScope *scope, TensorDType dtype, uint64_t seed);
void nn_params_free(NnParams *p); /* names and the table; the tensors belong to the scope */
/* Registers `prefix.name` (prefix may be NULL or ""), initialized by `init` with parameter a;
 * fan_in/fan_out read from a (out, in, ...) shape as PyTorch does. Aborts on a duplicate. */
Tensor *nn_param(NnParams *p, const char *prefix, const char *name, int ndim, const int64_t *shape, NnInit init,
                 double a);
void nn_params_pack(NnParams *p);
Tensor *nn_params_find(const NnParams *p, const char *name); /* NULL when absent */
int64_t nn_params_numel(const NnParams *p);
void nn_params_zero_grad(NnParams *p);
/* A packed copy of the packed src on device dev (training on a GPU): dst gets its own flat value
 * buffer (src's values copied) and zeroed flat gradient buffer on dev, in src's scope, and one
 * parameter per src parameter, same name and shape: a leaf view into dst->flat whose ->grad is a
 * view into dst->flat_grad. Free with nn_params_free (the tensors belong to the scope). */
void nn_params_mirror(NnParams *dst, const NnParams *src, TensorDevice dev);
/* Moves the packed p to device dev in place, as nn_params_pack packs in place: new flat value
 * and gradient buffers on dev (values and gradients copied), and every parameter's Tensor
 * header — the ones the modules hold — re-pointed into them, so a model built on the host
 * (initializers, the rank-0 broadcast) trains on dev without being rebuilt. The old buffers
 * stay in p's scope until it ends. Optimizer state made before the move stays where it was:
 * call optim_init after. No-op when p is already on dev. */
void nn_params_move(NnParams *p, TensorDevice dev);
/* "prefix.name" into buf (size ≥ 256); returns buf */
const char *nn_join(char *buf, const char *prefix, const char *name);

#endif
