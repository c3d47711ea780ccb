/* tensor/device.c — the device registry: which kernel table a tensor on a device dispatches to
 * (the CPU table, a test's replacement of it, or the CUDA backend when one is built and a GPU is
 * there). Its own file so that the core calls down into the backends and no backend calls back
 * up into the core for its lookup. */
#include "internal.h"

/* the table CPU tensors dispatch to: tensor_backend_cpu, or a test's replacement */
static const TensorBackend *cpu_table = &tensor_backend_cpu;

const TensorBackend *tensor_backend_cpu_replace(const TensorBackend *be) {
    const TensorBackend *prev = cpu_table;
    cpu_table = be ? be : &tensor_backend_cpu;
    return prev;
}

const TensorBackend *tensor_backend_for(TensorDevice dev) {
    if (dev == TENSOR_CPU) return cpu_table;
    const TensorBackend *be = tensor_backend_cuda();
    if (!be) tensor_fail("device", "no CUDA device available (build with CUDA=1 and run on a GPU machine)");
    return be;
}
