/* bench/bench_gs4d.c — one gs4d training step (models/gs4d/gs4d.h: deform, render, photometric +
 * ARAP loss, backward, Adam) at the gs4d-small preset's size (3000 isotropic Gaussians, MLP 8 × 128
 * with the skip at 4, freq_x 10 / freq_t 6, 2× supersampled 128² renders, ARAP k 8 at weight 10, He
 * init), in the deformation phase, with each deformation model side by side:
 *     gs4d_step_mlp         the per-Gaussian MLP (Deformable 3DGS; the paper's)
 *     gs4d_step_nodes       512 control nodes, K = 4 (SC-GS), D on the nodes only, γ(t)
 *     gs4d_step_nodes_codes the same with a 32-float code per frame beside γ(t) (model.time both)
 * Densification, ReDo and the kNN refresh are off, so every step does the same work. After the
 * cases that ran, one line per node case
 *     ratio gs4d_<case>_vs_mlp <node ms / mlp ms> (target <= 0.35)
 * from the medians of this run (issue 37), and per case the stages' CPU time
 *     stages <case> CPU ms per step: deform …, rasterize …, losses …, backward …, Adam …, refine … No PyTorch counterpart (bench/run.sh's table does not
 * list them; `make bench` runs them after it). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "models/gs4d/gs4d.h"
#include "models/gs4d/synth.h"

enum { G4B_MAX = 512 };

typedef struct {
    Gs4dModel m;
    Gs4dData d;
    TensorRng rng;
    int steps;
    double t[G4B_MAX];
    double cpu[6]; /* the stages' CPU seconds summed over the steps after the warm-up */
} G4Bench;

static void step_gs4d(void *p) {
    G4Bench *c = p;
    double t0 = base_now();
    Gs4dStepInfo info;
    gs4d_step(&c->m, &c->d, c->steps % c->d.n, &c->rng, &info);
    if (c->steps < G4B_MAX) c->t[c->steps] = base_now() - t0;
    if (c->steps >= 3) {
        double v[6] = {info.c_deform, info.c_render, info.c_loss, info.c_backward, info.c_optim, info.c_refine};
        for (int k = 0; k < 6; k++) c->cpu[k] += v[k];
    }
    c->steps++;
}

static int g4b_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double g4b_median(G4Bench *c) { /* run_case's 3 warm-up steps excluded */
    int n = c->steps < G4B_MAX ? c->steps : G4B_MAX, skip = n > 3 ? 3 : 0, k = n - skip;
    if (k <= 0) return NAN;
    qsort(c->t + skip, (size_t)k, sizeof(double), g4b_cmp);
    return k % 2 ? c->t[skip + k / 2] : 0.5 * (c->t[skip + k / 2 - 1] + c->t[skip + k / 2]);
}

void bench_gs4d_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                      void (*run_case)(const char *, void (*)(void *), void *)) {
    static const char *const names[3] = {"gs4d_step_mlp", "gs4d_step_nodes", "gs4d_step_nodes_codes"};
    bool any = false;
    for (int b = 0; b < 3; b++) any |= wanted(argc, argv, names[b]);
    if (!any) return;
    TensorScope *s = tensor_scope_begin();
    Gs4dSynth syn;
    char err[512];
    if (gs4d_synth_make("quadruped", 0, 4, 4, 0, 128, &syn, err, sizeof err)) {
        fprintf(stderr, "bench gs4d: %s\n", err);
        tensor_scope_end(s);
        return;
    }
    double med[3] = {NAN, NAN, NAN};
    for (int b = 0; b < 3; b++) {
        if (!wanted(argc, argv, names[b])) continue;
        TensorScope *sb = tensor_scope_begin();
        G4Bench *c = calloc(1, sizeof *c);
        if (gs4d_data_make(syn.train, syn.n_train, &c->d, err, sizeof err)) {
            fprintf(stderr, "bench gs4d: %s\n", err);
            free(c);
            tensor_scope_end(sb);
            continue;
        }
        Gs4dConfig g = gs4d_defaults();
        g.n = 3000, g.depth = 8, g.width = 128, g.skip = 4, g.freq_x = 10, g.freq_t = 6, g.supersample = 2;
        g.trunk_init = GS4D_INIT_HE, g.arap_weight = 10, g.arap_k = 8, g.warmup = 0, g.lr_steps = 16000;
        g.densify_every = 0, g.reset_every = 0, g.knn_every = 0, g.redo_every = 0;
        if (b > 0) g.deform = GS4D_DEFORM_NODES, g.nodes = 512, g.node_k = 4;
        if (b == 2) g.time_code = GS4D_TIME_BOTH, g.latent_dim = 32;
        gs4d_init(&c->m, &g, &c->d, NULL);
        c->rng = (TensorRng){.seed = 7, .stream = 1};
        run_case(names[b], step_gs4d, c);
        med[b] = g4b_median(c);
        int k = c->steps - 3;
        if (k > 0)
            printf("stages %s CPU ms per step: deform %.1f, rasterize %.1f, losses %.1f, backward %.1f, Adam %.1f, refine %.1f\n",
                   names[b], 1e3 * c->cpu[0] / k, 1e3 * c->cpu[1] / k, 1e3 * c->cpu[2] / k, 1e3 * c->cpu[3] / k,
                   1e3 * c->cpu[4] / k, 1e3 * c->cpu[5] / k);
        gs4d_free(&c->m);
        gs4d_data_free(&c->d);
        free(c);
        tensor_scope_end(sb);
    }
    for (int b = 1; b < 3; b++)
        if (isfinite(med[0]) && isfinite(med[b]))
            printf("ratio %s_vs_mlp %.2f (target <= 0.35; %.1f ms against %.1f ms)\n", names[b], med[b] / med[0], med[b] * 1e3,
                   med[0] * 1e3);
    fflush(stdout);
    gs4d_synth_free(&syn);
    tensor_scope_end(s);
}
