/* bench/bench_attention.c — naive vs tiled multi-head attention (nn/functional.h), forward and
 * forward + backward, at B = 1, 8 heads of 64 (C = 512), T = 1024 and T = 4096 (self-attention
 * shapes, Tq = Tk = T). Case names:
 *     attn_{naive,tiled}_{fwd,fwdbwd}_{1024,4096}
 * The naive path holds the (B, h, T, T) scores and probabilities: 32 MiB each at T = 1024,
 * 512 MiB each at T = 4096 (f32), plus as much again in backward; the tiled one O(B T C).
 *
 * Wiring (bench/bench_main.c owns main and the timing loop): declare
 *     void bench_attention_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
 *                                void (*run_case)(const char *, void (*)(void *), void *));
 * and call bench_attention_cases(argc, argv, wanted, run_case) from main. With no case named on
 * the command line only the T = 1024 cases run (the 4096 naive ones need ~2 GiB and seconds per
 * step); name a 4096 case to run it. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "autograd/autograd.h"
#include "nn/functional.h"

typedef struct {
    Tensor *q, *k, *v, *gy;
    int heads;
    bool tiled, backward;
} AttnBenchCtx;

static void step_attention(void *p) {
    AttnBenchCtx *c = p;
    Tensor *y = c->tiled ? nn_attention_tiled(c->q, c->k, c->v, c->heads) : nn_attention_naive(c->q, c->k, c->v, c->heads);
    if (c->backward) ag_backward(y, c->gy, false);
}

static Tensor *leaf(int64_t B, int64_t T, int64_t C) {
    return tensor_requires_grad(tensor_randn(TENSOR_SHAPE(B, T, C), TENSOR_F32), true);
}

void bench_attention_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                           void (*run_case)(const char *, void (*)(void *), void *)) {
    const int64_t B = 1, H = 8, D = 64, C = H * D;
    const int64_t Ts[2] = {1024, 4096};
    for (int ti = 0; ti < 2; ti++) {
        int64_t T = Ts[ti];
        bool run[4] = {false}, any = false;
        char names[4][64];
        for (int mode = 0; mode < 4; mode++) {
            snprintf(names[mode], sizeof names[mode], "attn_%s_%s_%lld", mode & 1 ? "tiled" : "naive",
                     mode >> 1 ? "fwdbwd" : "fwd", (long long)T);
            bool named = false;
            for (int i = 1; i < argc; i++) named |= !strcmp(argv[i], names[mode]);
            /* the big ones only on request */
            run[mode] = (T <= 1024 || named) && wanted(argc, argv, names[mode]);
            any |= run[mode];
        }
        if (!any) continue; /* no inputs allocated: they would count in another case's peak RSS */
        AttnBenchCtx c = {leaf(B, T, C), leaf(B, T, C), leaf(B, T, C),
                          tensor_randn(TENSOR_SHAPE(B, T, C), TENSOR_F32), (int)H, false, false};
        for (int mode = 0; mode < 4; mode++) {
            if (!run[mode]) continue;
            c.tiled = mode & 1, c.backward = mode >> 1;
            run_case(names[mode], step_attention, &c);
        }
    }
}
