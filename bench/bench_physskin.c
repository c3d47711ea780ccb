/* bench/bench_physskin.c — one PhysSkin++ training step of the small preset
 * (configs/physskin-small.json), the same work as one iteration of ps_train (models/physskin/
 * train.c) minus the data sampling: encoder → handles → W and ∇W (the config's "fd": all 7C
 * points in one decoder call) → PISSL terms, one backward pass per term through the retained
 * graph, ConFIG (optim_config), gradient clipping, AdamW. The batch is synthetic and fixed:
 * B = train.batch shapes, n_surface points and unit normals uniform in [-1, 1]³, n_cubature
 * cubature points uniform in [-1, 1]³ with V_c = 8 / n_cubature, z ~ N(0, z_sigma² I) of
 * n_z × 12m. Case name: physskin_step. bench/physskin_torch.py is the same step in PyTorch.
 *
 * Besides the "case" line it prints
 *     params physskin_step <count>
 *     mem physskin_step <peak_rss_MiB> <peak_rss_growth_MiB>
 * the parameter count (the PyTorch side prints its own; they must match) and the process's
 * peak resident set (getrusage ru_maxrss) after the case, and its growth over the peak before
 * the model was built. bench/run.sh runs each case in a fresh process, so the peak is this
 * case's.
 *
 * PHYSSKIN_DUMP=FILE also writes the initial parameters (state-dict names), the batch, the
 * three loss values and the gradients of one step (per loss, and the ConFIG combination before
 * clipping) to FILE, before the timing; `physskin_torch.py --check FILE` loads them into the
 * PyTorch twin and compares. Layout (little-endian): "PSB1", then records
 *     u32 name_len, name, u32 ndim, i64 shape[ndim], f32 values[numel]
 * until the end of the file.
 *
 * Wiring: bench/bench_main.c calls bench_physskin_cases(argc, argv, wanted, run_case). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/alloc.h"
#include "models/physskin/train.h"
#include "optim/optim.h"

typedef struct {
    PsConfig cfg;
    PsModel model;
    NnParams params;
    Optim opt;
    PsBatch batch;
    double wts[3];
} PsBenchCtx;

static Tensor *uniform_pm1(int64_t B, int64_t n) {
    Tensor *t = tensor_rand(TENSOR_SHAPE(B, n, 3), TENSOR_F32);
    float *p = tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) p[i] = 2 * p[i] - 1;
    return t;
}

/* the losses and the per-loss gradients of the step; gs[i] are clones of flat_grad */
static void psb_losses_grads(PsBenchCtx *c, PsLosses *L, Tensor *gs[3]) {
    ps_step_losses(&c->model, &c->batch, &c->cfg, L);
    Tensor *terms[3] = {tensor_mul_scalar(L->pot, c->wts[0]), tensor_mul_scalar(L->orth, c->wts[1]),
                        tensor_mul_scalar(L->smooth, c->wts[2])};
    for (int i = 0; i < 3; i++) {
        nn_params_zero_grad(&c->params);
        TensorScope *bs = tensor_scope_begin(); /* as ps_train: each pass's temporaries go after it */
        ag_backward(terms[i], NULL, i + 1 < 3);
        tensor_scope_end(bs);
        gs[i] = tensor_clone(c->params.flat_grad);
    }
}

/* ps_train's "config" branch with every weight > 0 (the small preset) */
static void step_physskin(void *p) {
    PsBenchCtx *c = p;
    PsLosses L;
    Tensor *gs[3];
    psb_losses_grads(c, &L, gs);
    optim_config(3, gs, c->params.flat_grad);
    optim_clip_grad_norm(&c->params, c->cfg.optim.clip > 0 ? c->cfg.optim.clip : 1e300);
    optim_step(&c->opt, c->cfg.optim.lr);
    (void)tensor_item(L.pot), (void)tensor_item(L.orth), (void)tensor_item(L.smooth);
}

static void put(FILE *f, const char *name, Tensor *t) {
    t = tensor_contiguous(tensor_detach(t));
    uint32_t len = (uint32_t)strlen(name), nd = (uint32_t)t->ndim;
    fwrite(&len, 4, 1, f);
    fwrite(name, 1, len, f);
    fwrite(&nd, 4, 1, f);
    for (int i = 0; i < t->ndim; i++) fwrite(&t->shape[i], 8, 1, f);
    fwrite(tensor_data_ptr(t), 4, (size_t)tensor_numel(t), f);
}

static void dump(PsBenchCtx *c, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "bench_physskin: cannot write %s\n", path);
        exit(1);
    }
    fwrite("PSB1", 1, 4, f);
    const NnParam *items;
    int n = nn_state_dict(&c->params, &items);
    char name[300];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "param/%s", items[i].name);
        put(f, name, items[i].value);
    }
    put(f, "batch/points", c->batch.points);
    put(f, "batch/normals", c->batch.normals);
    put(f, "batch/x", c->batch.x);
    put(f, "batch/v", c->batch.v);
    put(f, "batch/z", c->batch.z);
    TensorScope *s = tensor_scope_begin();
    PsLosses L;
    Tensor *gs[3];
    psb_losses_grads(c, &L, gs);
    put(f, "loss/pot", L.pot);
    put(f, "loss/orth", L.orth);
    put(f, "loss/smooth", L.smooth);
    put(f, "grad/pot", gs[0]);
    put(f, "grad/orth", gs[1]);
    put(f, "grad/smooth", gs[2]);
    optim_config(3, gs, c->params.flat_grad);
    put(f, "grad/config", c->params.flat_grad);
    nn_params_zero_grad(&c->params);
    tensor_scope_end(s);
    fclose(f);
    fprintf(stderr, "bench_physskin: wrote %s\n", path);
}

static double max_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

/* the model, optimizer and batch of the case (exits on a bad config) */
static PsBenchCtx *psb_init(void) {
    PsBenchCtx *c = base_calloc(1, sizeof *c);
    char err[1024];
    const char *cfg = getenv("PHYSSKIN_CONFIG") ? getenv("PHYSSKIN_CONFIG") : "configs/physskin-small.json";
    if (ps_config_load(&c->cfg, cfg, 0, NULL, err, sizeof err)) {
        fprintf(stderr, "bench_physskin: %s\n", err);
        exit(1);
    }
    if (strcmp(c->cfg.loss.combine, "config") || strcmp(c->cfg.model.dtype, "f32") || c->cfg.loss.w_pot <= 0 ||
        c->cfg.loss.w_orth <= 0 || c->cfg.loss.w_smooth <= 0) {
        fprintf(stderr, "bench_physskin: %s: the bench times the f32 ConFIG step with three active terms\n", cfg);
        exit(1);
    }
    const PsConfig *k = &c->cfg;
    nn_params_init(&c->params, tensor_scope_root(), TENSOR_F32, (uint64_t)k->seed);
    ps_model_init(&c->model, &c->params, k);
    nn_params_pack(&c->params);
    OptimConfig oc = optim_defaults(OPTIM_ADAMW);
    oc.lr = k->optim.lr, oc.weight_decay = k->optim.weight_decay, oc.eps = k->optim.eps;
    oc.beta1 = k->optim.beta1, oc.beta2 = k->optim.beta2;
    optim_init(&c->opt, &c->params, &oc);
    PsLossOptions lo = ps_loss_options(k);
    c->wts[0] = lo.w_pot, c->wts[1] = lo.w_orth, c->wts[2] = lo.w_smooth;

    int64_t B = k->train.batch, N = k->data.n_surface, C = k->data.n_cubature, Z = k->data.n_z, m = k->model.handles;
    tensor_manual_seed(1);
    c->batch.points = uniform_pm1(B, N);
    Tensor *nr = uniform_pm1(B, N);
    c->batch.normals = tensor_div(nr, tensor_sqrt(tensor_sum(tensor_mul(nr, nr), TENSOR_DIMS(-1), true)));
    c->batch.x = uniform_pm1(B, C);
    c->batch.v = tensor_full(TENSOR_SHAPE(B, C), 8.0 / (double)C, TENSOR_F32);
    c->batch.z = tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(B, Z, 12 * m), TENSOR_F32), k->loss.z_sigma);
    return c;
}

void bench_physskin_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                          void (*run_case)(const char *, void (*)(void *), void *)) {
    if (!wanted(argc, argv, "physskin_step")) return;
    double rss0 = max_rss_mib();
    PsBenchCtx *c = psb_init();
    if (getenv("PHYSSKIN_DUMP")) dump(c, getenv("PHYSSKIN_DUMP"));
    printf("params physskin_step %lld\n", (long long)nn_params_numel(&c->params));
    run_case("physskin_step", step_physskin, c);
    double rss = max_rss_mib();
    printf("mem physskin_step %.1f %.1f\n", rss, rss - rss0);
    fflush(stdout);
    ps_model_free(&c->model);
    /* the optimizer state and the parameters belong to the root scope; the table is ours */
    nn_params_free(&c->params);
    free(c);
}
