/* tensor/cuda/cuda_none.c — built instead of the CUDA backend when CUDA=0. */
#include "../backend.h"

const TensorBackend *tensor_backend_cuda(void) { return NULL; }
