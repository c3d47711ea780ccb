/* bench/bench_gru.c — the GRU case of anima-bench (nn/gru.h), with its twin in
 * bench/torch_bench.py: gru_fwd_bwd is forward and backward of a 2-layer GRU of width 256 over
 * 7 steps of 64 sequences of 120 features (the PartMM GRU regressor's default size for 20
 * joints, models/partmm/regress.h), gradients of the input and every weight. */
#include <stdbool.h>

#include "autograd/autograd.h"
#include "nn/gru.h"

typedef struct {
    NnGru g;
    Tensor *x, *gy;
} GruBenchCtx;

static void step_gru(void *p) {
    GruBenchCtx *c = p;
    ag_backward(nn_gru_forward(&c->g, c->x, NULL, NULL), c->gy, false);
}

void bench_gru_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                     void (*run_case)(const char *, void (*)(void *), void *)) {
    if (!wanted(argc, argv, "gru_fwd_bwd")) return;
    const int64_t B = 64, T = 7, I = 120, H = 256;
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 0);
    GruBenchCtx c;
    nn_gru_init(&c.g, &p, "", I, H, 2, true);
    nn_params_pack(&p);
    c.x = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(B, T, I), TENSOR_F32), true);
    c.gy = tensor_randn(TENSOR_SHAPE(B, T, H), TENSOR_F32);
    run_case("gru_fwd_bwd", step_gru, &c);
    nn_params_free(&p);
}
