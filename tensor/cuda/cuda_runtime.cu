/* tensor/cuda/cuda_runtime.cu — what every CUDA kernel file shares: the error check, the
 * caching memory pool and the strided-geometry helper. Scopes (tensor/core.c) call alloc/release
 * once per device tensor; cudaMalloc and cudaFree synchronize the device and cost tens of
 * microseconds, so released blocks go to per-size-class free lists and are handed out again (the
 * PyTorch caching-allocator idea, without stream tracking: every kernel runs on the legacy
 * default stream, so a block reused by a later launch is ordered after every earlier use of it). */
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda_kernels.h"

void cu_check(const char *op, cudaError_t err) {
    if (err != cudaSuccess) tensor_fail(op, "CUDA error: %s", cudaGetErrorString(err));
}

/* ---- the pool ---------------------------------------------------------------------------
 * Classes: 512 B, then sizes 2^k and 1.5·2^k, so a request wastes at most a third of its
 * block; a block's class is recorded by pointer for release. */
#define POOL_CLASSES 80 /* the largest class is 768 << 39 bytes */

static std::mutex pool_mu;
static std::vector<void *> pool_free[POOL_CLASSES];
static std::unordered_map<void *, int> pool_owner; /* live and cached blocks -> class */
static size_t pool_cached_bytes;

static size_t class_size(int c) {
    /* c = 2j: 512·2^j; c = 2j+1: 768·2^j */
    size_t base = (c & 1) ? 768 : 512;
    return base << (c >> 1);
}

static int size_class(size_t n) {
    int c = 0;
    while (c < POOL_CLASSES - 1 && class_size(c) < n) c++;
    return c;
}

static void pool_trim_locked(void) {
    for (int c = 0; c < POOL_CLASSES; c++) {
        for (void *p : pool_free[c]) {
            cudaFree(p);
            pool_owner.erase(p);
        }
        pool_cached_bytes -= class_size(c) * pool_free[c].size();
        pool_free[c].clear();
    }
}

/* Called on every block the pool hands out again (NULL: nothing). The CUDA emulator (tools/cuemu)
 * installs its re-poisoning at load, so a recycled block reads as poison until written, as fresh
 * memory from cudaMalloc does, and a kernel reading what it never wrote shows. A hook rather than
 * a call: the library calls nothing of the toolchain stand-in it builds against. */
static void (*recycle_hook)(void *p, size_t n);

extern "C" void tensor_cuda_set_recycle_hook(void (*fn)(void *p, size_t n)) { recycle_hook = fn; }

void *cu_pool_alloc(size_t nbytes) {
    std::lock_guard<std::mutex> lock(pool_mu);
    int c = size_class(nbytes ? nbytes : 1);
    if (class_size(c) < nbytes) tensor_fail("cuda alloc", "%zu bytes exceed the pool's largest class", nbytes);
    if (!pool_free[c].empty()) {
        void *p = pool_free[c].back();
        pool_free[c].pop_back();
        pool_cached_bytes -= class_size(c);
        if (recycle_hook) recycle_hook(p, class_size(c));
        return p;
    }
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, class_size(c));
    if (err != cudaSuccess) { /* give the cache back to the driver and try once more */
        cudaGetLastError();
        cudaDeviceSynchronize();
        pool_trim_locked();
        err = cudaMalloc(&p, class_size(c));
        if (err != cudaSuccess)
            tensor_fail("cuda alloc", "out of device memory allocating %zu bytes (%s)", nbytes, cudaGetErrorString(err));
    }
    pool_owner[p] = c;
    return p;
}

void cu_pool_release(void *p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(pool_mu);
    auto it = pool_owner.find(p);
    if (it == pool_owner.end()) tensor_fail("cuda release", "pointer %p was not allocated by the pool", p);
    pool_free[it->second].push_back(p);
    pool_cached_bytes += class_size(it->second);
}

/* ---- geometry ------------------------------------------------------------------------------ */

CuGeom cu_geom(int nd, const int64_t *shape, int nt, const Tensor *const *ts) {
    CuGeom g;
    memset(&g, 0, sizeof g);
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        if (k > 0) { /* merge d into the previous kept dim when every operand is contiguous across them */
            bool merge = true;
            for (int t = 0; t < nt; t++)
                if (g.st[t][k - 1] != ts[t]->stride[d] * shape[d]) merge = false;
            if (merge) {
                g.shape[k - 1] *= shape[d];
                for (int t = 0; t < nt; t++) g.st[t][k - 1] = ts[t]->stride[d];
                continue;
            }
        }
        g.shape[k] = shape[d];
        for (int t = 0; t < nt; t++) g.st[t][k] = ts[t]->stride[d];
        k++;
    }
    if (k == 0) {
        g.shape[0] = 1;
        for (int t = 0; t < nt; t++) g.st[t][0] = 1;
        k = 1;
    }
    g.nd = k;
    return g;
}
