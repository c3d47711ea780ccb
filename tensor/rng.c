/* tensor/rng.c — Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011). Counter-based: element i of a draw uses counter (offset + i/4), so the CPU and the
 * CUDA backend produce the same numbers and every rank or stream draws its own sequence. */
#include <math.h>

#include "internal.h"
#include "tensor/philox.h"

void tensor_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
    tensor_philox_block(seed, stream, counter, out);
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
