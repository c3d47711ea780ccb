/* tensor/rng.c — Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011). Counter-based: element i of a draw uses counter (offset + i/4), so the CPU and the
 * CUDA backend produce the same numbers and every rank or stream draws its own sequence. */
#include <math.h>

#include "internal.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void tensor_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static _Thread_local TensorRng global_rng = {.seed = 0x414e494d41ull};

void tensor_manual_seed(uint64_t seed) { global_rng = (TensorRng){.seed = seed}; }
TensorRng *tensor_rng_global(void) { return &global_rng; }

static Tensor *draw(TensorRng *g, int ndim, const int64_t *shape, TensorDType dt, bool normal) {
    if (dt == TENSOR_I64 || dt == TENSOR_BF16) tensor_fail(normal ? "tensor_randn" : "tensor_rand", "needs f32 or f64, got %s", tensor_dtype_name(dt));
    Tensor *t = tensor_empty(ndim, shape, dt);
    tensor_backend_cpu.random(t, g->seed, g->stream, g->offset, normal);
    /* each element uses at most 2 words (f64 or a Box-Muller pair): n/2 counters suffice */
    g->offset += ((uint64_t)tensor_numel(t) + 1) / 2 + 1;
    return t;
}

Tensor *tensor_rand_with(TensorRng *g, int ndim, const int64_t *shape, TensorDType dt) {
    return draw(g, ndim, shape, dt, false);
}
Tensor *tensor_randn_with(TensorRng *g, int ndim, const int64_t *shape, TensorDType dt) {
    return draw(g, ndim, shape, dt, true);
}
Tensor *tensor_rand(int ndim, const int64_t *shape, TensorDType dt) { return draw(&global_rng, ndim, shape, dt, false); }
Tensor *tensor_randn(int ndim, const int64_t *shape, TensorDType dt) { return draw(&global_rng, ndim, shape, dt, true); }
