/* tensor/cpu/cpu_backend.c — the CPU backend's kernel table (the device lookup: tensor/device.c). */
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "cpu.h"

static void *host_alloc(size_t n) { return malloc(n); }
static void host_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

const TensorBackend tensor_backend_cpu = {
    .name = "cpu",
    .alloc = host_alloc,
    .release = free,
    .copy = cpu_copy,
    .to_host = host_copy,
    .from_host = host_copy,
    .cast = cpu_cast,
    .fill = cpu_fill,
    .arange = cpu_arange,
    .random = cpu_random,
    .binary = cpu_binary,
    .where = cpu_where,
    .unary = cpu_unary,
    .reduce = cpu_reduce,
    .matmul = cpu_matmul,
    .softmax = cpu_softmax,
    .layer_norm = cpu_layer_norm,
    .layer_norm_backward = cpu_layer_norm_backward,
    .index_select = cpu_index_select,
    .gather = cpu_gather,
    .scatter_add = cpu_scatter_add,
    .det3 = cpu_det3,
    .inv3 = cpu_inv3,
    .attention = cpu_attention,
    .attention_backward = cpu_attention_backward,
    .gru_step = cpu_gru_step,
    .gru_step_backward = cpu_gru_step_backward,
    .optim_sgd = cpu_optim_sgd,
    .optim_adam = cpu_optim_adam,
    .gram = cpu_gram,
    .lincomb = cpu_lincomb,
};
