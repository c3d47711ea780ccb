/* tensor/cuda/cuda_none.c — built instead of the CUDA backend when CUDA=0. */
#include "../backend.h"

const TensorBackend *tensor_backend_cuda(void) { return NULL; }
void tensor_cuda_set_recycle_hook(void (*fn)(void *p, size_t n)) { (void)fn; }
