/* tensor/cuda/cuda_backend.cu — the CUDA backend's table and the device probe. The error check,
 * the memory pool and the geometry helper every kernel file uses live below it, in
 * cuda_runtime.cu, so that the kernel files and this table do not depend on each other both
 * ways. */
#include <mutex>

#include "cuda_kernels.h"

/* ---- host <-> device (synchronous: the host reads the bytes right after) ----------------- */

static void cu_to_host(void *dst, const void *src, size_t n) {
    if (n) cu_check("to_host", cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}
static void cu_from_host(void *dst, const void *src, size_t n) {
    if (n) cu_check("from_host", cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}

/* ---- the table and the probe ----------------------------------------------------------------- */

static TensorBackend cuda_table;

extern "C" const TensorBackend *tensor_backend_cuda(void) {
    /* Probed once. Any failure (no driver, "driver version is insufficient", no device) means
     * no CUDA: quietly NULL, and the error is cleared so it does not surface later. */
    static int state = -1;
    static std::once_flag once;
    std::call_once(once, [] {
        int n = 0;
        cudaError_t err = cudaGetDeviceCount(&n);
        if (err != cudaSuccess || n <= 0) {
            cudaGetLastError();
            state = 0;
            return;
        }
        TensorBackend &t = cuda_table;
        t.name = "cuda";
        t.alloc = cu_pool_alloc;
        t.release = cu_pool_release;
        t.copy = cu_copy;
        t.to_host = cu_to_host;
        t.from_host = cu_from_host;
        t.cast = cu_cast;
        t.fill = cu_fill;
        t.arange = cu_arange;
        t.random = cu_random;
        t.binary = cu_binary;
        t.where = cu_where;
        t.unary = cu_unary;
        t.reduce = cu_reduce;
        t.matmul = cu_matmul;
        t.softmax = cu_softmax;
        t.layer_norm = cu_layer_norm;
        t.layer_norm_backward = cu_layer_norm_backward;
        t.index_select = cu_index_select;
        t.gather = cu_gather;
        t.scatter_add = cu_scatter_add;
        t.det3 = cu_det3;
        t.inv3 = cu_inv3;
        t.attention = cu_attention;
        t.attention_backward = cu_attention_backward;
        t.gru_step = cu_gru_step;
        t.gru_step_backward = cu_gru_step_backward;
        t.optim_sgd = cu_optim_sgd;
        t.optim_adam = cu_optim_adam;
        t.gram = cu_gram;
        t.lincomb = cu_lincomb;
        state = 1;
    });
    return state == 1 ? &cuda_table : NULL;
}
