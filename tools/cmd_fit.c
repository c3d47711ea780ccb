/* tools/cmd_fit.c — `anima fit`: fits an MLP to a procedural regression target with AdamW, a
 * warm-up + cosine schedule and gradient clipping, through the training loop of optim/train.h
 * (progress, DIR/metrics.jsonl, DIR/ckpt.h5 with the config inside, SIGINT-safe, --resume).
 *
 *   anima fit [--config FILE] [--out DIR] [--resume|--force] [--set key.path=value ...]
 *             [--stop-after N] [--no-progress] [--device cpu|cuda]
 *
 * Without --config: the schema's defaults, the small preset (and it says so); a DIR that holds
 * a previous run needs --resume or --force.
 *   mpirun -np N anima fit ...     data parallel: the same arguments on every rank
 *
 * Data parallel (optim/comm.h): data.batch is the global batch; every rank draws the same
 * minibatch indices and input jitter (pure functions of the seed, the step and the loop's rng,
 * which all ranks advance alike) and computes the loss on its contiguous shard of the rows.
 * The gradients are averaged over ranks before clipping and the step, so every rank takes the
 * same update a single process with the whole batch would take (up to summation order), and
 * the run's checkpoint loads and resumes in a single process and vice versa. Rank 0 alone
 * prints and writes DIR/; every rank reads DIR/ckpt.h5 on --resume (a shared filesystem).
 *
 * --device cuda: training runs on the GPU end to end. The parameters are packed on the host
 * (initializers, the rank-0 broadcast), then mirrored once to the device (nn_params_mirror):
 * forward, backward, the NCCL all-reduce, clipping and the AdamW step (optim/optim.c's device
 * kernels) all work on the device buffers; per step only the data batch goes up and the loss
 * and the gradient norm (two scalars) come down. Checkpoints are written from the device
 * tensors (optim/checkpoint.c copies them to the host at save time) and --resume loads into
 * them, so the files are the same as a CPU run's. Several ranks with --device cuda need NCCL
 * (mpirun + CUDA=1).
 *
 * The data are a pure function of the config's seed and the minibatch order a pure function of
 * (seed, step), so a resumed run continues bit-identically. Parameter names follow a PyTorch
 * `net = nn.Sequential(Linear, act, ..., Linear)`: net.0.weight, net.0.bias, net.2.weight, ... */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/alloc.h"
#include "nn/modules.h"
#include "datasets/config.h"
#include "nn/functional.h"
#include "optim/train.h"
#include "tensor/backend.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

typedef struct {
    int64_t seed;
    struct {
        int64_t in, hidden, depth;
        char activation[16];
        char dtype[8];
        char matmul[8];
    } model;
    struct {
        int64_t n, batch;
        double noise, jitter;
    } data;
    struct {
        double lr, min_lr, weight_decay, beta1, beta2, eps, clip;
        int64_t warmup;
    } optim;
    struct {
        int64_t steps, log_every, ckpt_every;
    } train;
} FitConfig;

#define NO_RANGE .min = 1, .max = 0
static const char *const ACTIVATIONS[] = {"tanh", "relu", "gelu", NULL};
static const char *const DTYPES[] = {"f32", "f64", NULL}, *const MATMULS[] = {"f32", "bf16", NULL};

static const DsConfigField MODEL_FIELDS[] = {
    {"in", DS_CFG_INT, offsetof(FitConfig, model.in) - offsetof(FitConfig, model), "2", 1, 16, .help = "input dims"},
    {"hidden", DS_CFG_INT, offsetof(FitConfig, model.hidden) - offsetof(FitConfig, model), "64", 1, 4096,
     .help = "width of each hidden layer"},
    {"depth", DS_CFG_INT, offsetof(FitConfig, model.depth) - offsetof(FitConfig, model), "2", 1, 16,
     .help = "hidden layers"},
    {"activation", DS_CFG_STRING, offsetof(FitConfig, model.activation) - offsetof(FitConfig, model), "tanh",
     NO_RANGE, .size = 16, .choices = ACTIVATIONS, .help = "hidden layers' activation"},
    {"dtype", DS_CFG_STRING, offsetof(FitConfig, model.dtype) - offsetof(FitConfig, model), "f32", NO_RANGE,
     .size = 8, .choices = DTYPES, .help = "parameters' float type"},
    {"matmul", DS_CFG_STRING, offsetof(FitConfig, model.matmul) - offsetof(FitConfig, model), "f32", NO_RANGE,
     .size = 8, .choices = MATMULS,
     .help = "bf16: the layers' products in bf16 with f32 accumulation (nn_set_matmul_dtype; dtype f32)"},
    {0}};
static const DsConfigField DATA_FIELDS[] = {
    {"n", DS_CFG_INT, offsetof(FitConfig, data.n) - offsetof(FitConfig, data), "1024", 1, 1e7, .help = "samples"},
    {"batch", DS_CFG_INT, offsetof(FitConfig, data.batch) - offsetof(FitConfig, data), "64", 1, 1e6, .help = "minibatch size (all ranks together)"},
    {"noise", DS_CFG_FLOAT, offsetof(FitConfig, data.noise) - offsetof(FitConfig, data), "0.01", 0, 10,
     .help = "std of the label noise"},
    {"jitter", DS_CFG_FLOAT, offsetof(FitConfig, data.jitter) - offsetof(FitConfig, data), "0.01", 0, 10,
     .help = "std of the input noise drawn every step (augmentation)"},
    {0}};
static const DsConfigField OPTIM_FIELDS[] = {
    {"lr", DS_CFG_FLOAT, offsetof(FitConfig, optim.lr) - offsetof(FitConfig, optim), "3e-3", 0, 10, .help = "peak"},
    {"min_lr", DS_CFG_FLOAT, offsetof(FitConfig, optim.min_lr) - offsetof(FitConfig, optim), "1e-5", 0, 10,
     .help = "the cosine's floor"},
    {"warmup", DS_CFG_INT, offsetof(FitConfig, optim.warmup) - offsetof(FitConfig, optim), "20", 0, 1e9, .help = "linear warm-up steps"},
    {"weight_decay", DS_CFG_FLOAT, offsetof(FitConfig, optim.weight_decay) - offsetof(FitConfig, optim), "1e-4", 0, 1, .help = "AdamW's decoupled weight decay"},
    {"beta1", DS_CFG_FLOAT, offsetof(FitConfig, optim.beta1) - offsetof(FitConfig, optim), "0.9", 0, 0.999999, .help = "Adam's first-moment decay"},
    {"beta2", DS_CFG_FLOAT, offsetof(FitConfig, optim.beta2) - offsetof(FitConfig, optim), "0.999", 0, 0.999999, .help = "Adam's second-moment decay"},
    {"eps", DS_CFG_FLOAT, offsetof(FitConfig, optim.eps) - offsetof(FitConfig, optim), "1e-8", 0, 1, .help = "Adam's denominator epsilon"},
    {"clip", DS_CFG_FLOAT, offsetof(FitConfig, optim.clip) - offsetof(FitConfig, optim), "1.0", 0, 1e9,
     .help = "max global gradient norm (0: no clipping)"},
    {0}};
static const DsConfigField TRAIN_FIELDS[] = {
    {"steps", DS_CFG_INT, offsetof(FitConfig, train.steps) - offsetof(FitConfig, train), "400", 1, 1e9, .help = "optimizer steps of the whole run"},
    {"log_every", DS_CFG_INT, offsetof(FitConfig, train.log_every) - offsetof(FitConfig, train), "20", 1, 1e9, .help = "steps between metrics.jsonl lines"},
    {"ckpt_every", DS_CFG_INT, offsetof(FitConfig, train.ckpt_every) - offsetof(FitConfig, train), "100", 0, 1e9,
     .help = "0: only at the end"},
    {0}};
static const DsConfigField FIT_SCHEMA[] = {
    {"seed", DS_CFG_INT, offsetof(FitConfig, seed), "0", 0, 9e15, .help = "seed of the data, the init and the minibatches"},
    {"model", DS_CFG_OBJECT, offsetof(FitConfig, model), .fields = MODEL_FIELDS},
    {"data", DS_CFG_OBJECT, offsetof(FitConfig, data), .fields = DATA_FIELDS},
    {"optim", DS_CFG_OBJECT, offsetof(FitConfig, optim), .fields = OPTIM_FIELDS},
    {"train", DS_CFG_OBJECT, offsetof(FitConfig, train), .fields = TRAIN_FIELDS},
    {0}};

/* y = sin(3 x0) cos(2 x1) + ¼|x|² + noise: smooth, not separable, cheap. */
static void make_data(const FitConfig *c, TensorDType dt, Tensor **x, Tensor **y) {
    TensorRng gx = {.seed = (uint64_t)c->seed, .stream = 1}, gy = {.seed = (uint64_t)c->seed, .stream = 2};
    int64_t n = c->data.n, in = c->model.in;
    *x = tensor_add_scalar(tensor_mul_scalar(tensor_rand_with(&gx, TENSOR_SHAPE(n, in), dt), 2.0), -1.0);
    Tensor *x0 = tensor_narrow(*x, 1, 0, 1), *x1 = tensor_narrow(*x, 1, in > 1 ? 1 : 0, 1);
    Tensor *f = tensor_mul(tensor_sin(tensor_mul_scalar(x0, 3)), tensor_cos(tensor_mul_scalar(x1, 2)));
    f = tensor_add(f, tensor_mul_scalar(tensor_sum(tensor_mul(*x, *x), TENSOR_DIMS(1), true), 0.25));
    *y = tensor_add(f, tensor_mul_scalar(tensor_randn_with(&gy, TENSOR_SHAPE(n, 1), dt), c->data.noise));
}

/* The model on the device parameters of nn_params_mirror: dst's parameter i is the mirror of host
 * parameter i. */
static void mlp_on(NnStack *dev, const NnStack *host, const NnParams *hp, const NnParams *dp) {
    *dev = *host;
    dev->lin = base_calloc((size_t)host->layers + 1, sizeof *dev->lin);
    for (int l = 0; l <= host->layers; l++) {
        dev->lin[l] = host->lin[l];
        for (int i = 0; i < hp->n; i++) {
            if (host->lin[l].weight == hp->items[i].value) dev->lin[l].weight = dp->items[i].value;
            if (host->lin[l].bias == hp->items[i].value) dev->lin[l].bias = dp->items[i].value;
        }
    }
}

int cmd_fit(int argc, char **argv) {
    /* a one-rank world unless mpirun started us; --device cuda asks for NCCL between GPUs */
    OptimComm *comm = optim_comm_init(cmd_wants_cuda(argc, argv));
    int rc = cmd_fit_comm(argc, argv, comm);
    optim_comm_finalize(comm);
    tensor_runtime_shutdown();
    return rc;
}

int cmd_fit_comm(int argc, char **argv, OptimComm *comm) {
    const char *config_path = NULL, *out = "runs/fit", *device = "cpu";
    bool resume = false, force = false, no_progress = false;
    int64_t stop_after = 0;
    CmdArgList sets = {.n = 0};
    int rank = comm ? optim_comm_rank(comm) : 0, nranks = comm ? optim_comm_size(comm) : 1;
    bool is_main = rank == 0;
    static const char *const DEVICES[] = {"cpu", "cuda", NULL};
    const CmdArg args[] = {
        {"--config", CMD_ARG_STRING, &config_path, "FILE", "JSON config (configs/fit-mlp.json); defaults for absent keys (no file: the small preset)"},
        {"--out", CMD_ARG_STRING, &out, "DIR", "writes DIR/ckpt.h5 and DIR/metrics.jsonl (default runs/fit)"},
        {"--resume", CMD_ARG_FLAG, &resume, NULL, "continue from DIR/ckpt.h5 (bit-identical to an uninterrupted run)"},
        {"--force", CMD_ARG_FLAG, &force, NULL, "replace the run DIR already holds (without it, or --resume, that is an error)"},
        {"--set", CMD_ARG_LIST, &sets, "k=v", "override a config key, e.g. --set optim.lr=1e-3"},
        {"--stop-after", CMD_ARG_INT, &stop_after, "N", "checkpoint and stop after N steps of this run (time-limited jobs)",
         1, -1},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {"--device", CMD_ARG_CHOICE, &device, "D", "cpu (default) or cuda: train on the GPU (params, grads, optimizer there)",
         .choices = DEVICES},
        {0}};
    const CmdArgSpec spec = {"anima fit", "[--config FILE] [--out DIR] [--resume|--force] [--set key.path=value ...] [options]",
                             "fits an MLP from a JSON config (checkpoints, metrics log, --resume)", args,
                             "SIGINT/SIGTERM finish the current step, checkpoint and exit 130/143.\n"
                             "Data parallel: mpirun -np N anima fit ... (data.batch is the global batch; rank 0 writes).\n",
                             .keys = FIT_SCHEMA};
    /* every rank has the same arguments: rank 0 says what is wrong */
    int prc = cmd_args_parse(&spec, argc, argv, 1, is_main ? stderr : NULL, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    bool cuda = !strcmp(device, "cuda");
    int progress = no_progress ? 0 : -1;

    /* Every check below before the training loop is a pure function of the arguments and the
     * files, so all ranks take the same early return and none is left waiting in a collective
     * (optim_train_init then agrees on its own outcome across ranks). */
    FitConfig cfg;
    char err[8192];
    /* --resume without --config continues with the config DIR/ckpt.h5 stores (then --set), not the
     * small preset — whose model need not match the checkpoint's, as physskin train does */
    bool from_ckpt = false;
    if (cmd_args_config_run(&spec, is_main ? stderr : NULL, config_path, &sets, FIT_SCHEMA, &cfg, resume, out, &from_ckpt))
        return 2;
    if (is_main && !config_path && !from_ckpt)
        fprintf(stderr, "anima fit: no --config, using the small preset (the built-in defaults: a %lldx%lld MLP, %lld "
                        "steps)\n",
                (long long)cfg.model.depth, (long long)cfg.model.hidden, (long long)cfg.train.steps);
    int rc = 0;
    if (cfg.data.batch < nranks) {
        if (is_main)
            fprintf(stderr, "anima fit: data.batch = %lld is the global batch; it must be at least the %d ranks\n",
                    (long long)cfg.data.batch, nranks);
        return 2;
    }
    if (cuda && !tensor_backend_cuda()) {
        if (is_main) fprintf(stderr, "anima fit: --device cuda: no CUDA device (built without CUDA=1, or no GPU answered)\n");
        return 2;
    }
    if (cuda && nranks > 1 && optim_comm_kind(comm) != OPTIM_COMM_NCCL) {
        /* the MPI path reduces host memory and would leave every rank on GPU 0 */
        if (is_main) fprintf(stderr, "anima fit: --device cuda on %d ranks needs NCCL, which did not start\n", nranks);
        return 2;
    }
    {
        /* the memory the run needs, before any of it is allocated: the data (x, y and the make_data
         * temporaries: ~8 tensors of n rows), a step over the batch (per layer the pre-activation,
         * the activation and their gradients, ×2 for temporaries), the parameters with their
         * gradients and AdamW's moments */
        double es = !strcmp(cfg.model.dtype, "f64") ? 8 : 4, h = (double)cfg.model.hidden;
        double data = 8 * (double)cfg.data.n * (double)(cfg.model.in + 1) * es;
        double step = 8 * (double)cfg.data.batch * (h * (double)cfg.model.depth + (double)cfg.model.in + 1) * es;
        double par = 4 * es * ((double)(cfg.model.in + 1) * h + (double)cfg.model.depth * (h + 1) * h + h + 1);
        char what[256], s0[32], s1[32], s2[32];
        snprintf(what, sizeof what, "the data: %s; a step's tensors for data.batch=%lld: %s; parameters and optimizer "
                 "state: %s", base_mem_str((int64_t)fmin(data, 9e18), s0, sizeof s0), (long long)cfg.data.batch,
                 base_mem_str((int64_t)fmin(step, 9e18), s1, sizeof s1), base_mem_str((int64_t)fmin(par, 9e18), s2, sizeof s2));
        if (cmd_check_memory("anima fit", is_main ? stderr : NULL, (int64_t)fmin(data + step + par, 9e18), what,
                             "data.n, data.batch or model.hidden"))
            return 2;
    }
    static const char *const run_files[] = {"ckpt.h5", "metrics.jsonl", NULL};
    if (is_main) rc = cmd_check_run_dir("anima fit", stderr, out, run_files, true, resume, force);
    if (is_main && !rc && cmd_make_dirs(out) != 0) {
        fprintf(stderr, "anima fit: cannot create the output directory %s (%s)\n", out, strerror(errno));
        rc = 1; /* a runtime failure (the OS refused), as for the other commands */
    }
    /* the run directory's check and creation are rank 0's alone: share the outcome (2: a run is
     * there, 1: it cannot be created) */
    if (comm && nranks > 1) {
        double r = optim_comm_allreduce_sum_scalar(comm, rc);
        rc = r >= 2 ? 2 : r > 0 ? 1 : 0;
    }
    if (rc) return rc;
    char ckpt_path[4096], log_path[4096];
    snprintf(ckpt_path, sizeof ckpt_path, "%s/ckpt.h5", out);
    snprintf(log_path, sizeof log_path, "%s/metrics.jsonl", out);
    char *cfg_json = ds_config_to_json(FIT_SCHEMA, &cfg);

    /* Everything of this run lives in one scope, freed at the end, so the command can be called
     * more than once in a process (tests/mpi). */
    bool bf16 = !strcmp(cfg.model.matmul, "bf16");
    if (bf16 && strcmp(cfg.model.dtype, "f32")) {
        if (is_main) fprintf(stderr, "anima fit: %s: model.matmul \"bf16\" needs model.dtype \"f32\" (got \"%s\")\n",
                             config_path ? config_path : "config", cfg.model.dtype);
        free(cfg_json);
        return 2;
    }
    TensorDType prev_matmul = nn_set_matmul_dtype(bf16 ? TENSOR_BF16 : TENSOR_F32);
    TensorScope *run_scope = tensor_scope_begin();
    TensorDType dt = !strcmp(cfg.model.dtype, "f64") ? TENSOR_F64 : TENSOR_F32;
    NnParams params;
    nn_params_init(&params, run_scope, dt, (uint64_t)cfg.seed);
    /* the named activation is one of ACTIVATIONS, which the schema checked */
    NnStack mlp;
    nn_stack_init(&mlp, &params, "net", cfg.model.in, cfg.model.hidden, 1, (int)cfg.model.depth,
                  (NnActivation)nn_activation_parse(cfg.model.activation));
    nn_params_pack(&params);
    /* every rank starts from rank 0's weights (the same seed gives the same ones anyway; this
     * makes it so whatever the initializers do) */
    if (comm) optim_comm_broadcast(comm, params.flat, 0);
    /* --device cuda: everything below trains the device mirror (tp); the host set is not
     * touched again */
    NnParams dparams = {0};
    NnStack dmlp = {0};
    if (cuda) {
        nn_params_mirror(&dparams, &params, TENSOR_CUDA);
        mlp_on(&dmlp, &mlp, &params, &dparams);
    }
    NnParams *tp = cuda ? &dparams : &params;
    const NnStack *model = cuda ? &dmlp : &mlp;
    OptimConfig oc = optim_defaults(OPTIM_ADAMW);
    oc.lr = cfg.optim.lr;
    oc.weight_decay = cfg.optim.weight_decay;
    oc.beta1 = cfg.optim.beta1;
    oc.beta2 = cfg.optim.beta2;
    oc.eps = cfg.optim.eps;
    Optim opt;
    optim_init(&opt, tp, &oc);
    OptimSchedule sched = {.peak = cfg.optim.lr, .floor = cfg.optim.min_lr, .warmup = cfg.optim.warmup,
                           .total = cfg.train.steps};
    Tensor *x, *y;
    make_data(&cfg, dt, &x, &y);

    BaseProgress display;
    OptimTrainOptions to = {.name = "anima fit", .total_steps = cfg.train.steps, .log_every = cfg.train.log_every,
                            .ckpt_every = cfg.train.ckpt_every, .ckpt_path = ckpt_path, .metrics_path = log_path,
                            .config_json = cfg_json, .resume = resume, .progress = cmd_train_progress(&display, progress),
                            .progress_user = &display,
                            .stop_after = stop_after, .comm = comm};
    OptimTrain tl;
    /* stream 3: the loop's own draws (input jitter); saved and restored with the checkpoint */
    if (optim_train_init(&tl, &to, tp, &opt, (TensorRng){.seed = (uint64_t)cfg.seed, .stream = 3}, err,
                         sizeof err)) {
        if (err[0]) fprintf(stderr, "anima fit: %s\n", err);
        free(cfg_json);
        nn_params_free(&dparams);
        nn_params_free(&params);
        nn_stack_free(&dmlp), nn_stack_free(&mlp);
        tensor_scope_end(run_scope);
        nn_set_matmul_dtype(prev_matmul);
        return 1;
    }
    if (is_main && resume && tl.resumed_config && strcmp(tl.resumed_config, cfg_json))
        fprintf(stderr, "anima fit: note: the config differs from the one stored in %s; using the new one\n",
                ckpt_path);
    if (is_main && resume) fprintf(stderr, "anima fit: resuming %s at step %lld\n", ckpt_path, (long long)tl.step);
    if (is_main && nranks > 1)
        fprintf(stderr, "anima fit: %d ranks (%s), global batch %lld\n", nranks,
                optim_comm_kind(comm) == OPTIM_COMM_NCCL ? "NCCL" : "MPI", (long long)cfg.data.batch);

    /* This rank's rows [b0, b1) of every global batch. The loss on them is the shard's mean
     * scaled by (rows · ranks / B): the average over ranks of that is then sum / B, the global
     * batch's mean, even when B does not divide evenly (the scale is exactly 1 when it does). */
    const int64_t B = cfg.data.batch;
    int64_t b0 = 0, b1 = B;
    if (comm) optim_comm_shard(comm, B, &b0, &b1);
    const double shard_scale = (double)(b1 - b0) * nranks / (double)B;
    int64_t *idx = base_malloc(sizeof *idx * (size_t)B);
    while (optim_train_next(&tl)) {
        TensorScope *s = tensor_scope_begin();
        /* the whole global batch's order on every rank: the same indices as one process */
        optim_data_order((uint64_t)cfg.seed, tl.step, cfg.data.n, B, idx);
        Tensor *it = tensor_from_data(TENSOR_SHAPE(b1 - b0), TENSOR_I64, idx + b0);
        Tensor *xb = tensor_index_select(x, 0, it), *yb = tensor_index_select(y, 0, it);
        if (cfg.data.jitter > 0) {
            /* draw the whole batch's jitter and keep this rank's rows: the rng advances alike
             * on every rank, and rows get the numbers they would get in one process */
            Tensor *jit = tensor_randn_with(&tl.rng, TENSOR_SHAPE(B, cfg.model.in), dt);
            xb = tensor_add(xb, tensor_mul_scalar(tensor_narrow(jit, 0, b0, b1 - b0), cfg.data.jitter));
        }
        if (cuda) {
            xb = tensor_to(xb, TENSOR_CUDA);
            yb = tensor_to(yb, TENSOR_CUDA);
        }
        Tensor *d = tensor_sub(nn_stack_forward(model, xb), yb);
        Tensor *loss = tensor_mean_all(tensor_mul(d, d));
        if (shard_scale != 1) loss = tensor_mul_scalar(loss, shard_scale);
        nn_params_zero_grad(tp);
        /* the gradients averaged over ranks, the all-reduce overlapped with backward (NCCL for
         * --device cuda, MPI otherwise) */
        optim_comm_backward(comm, tp, loss, false);
        /* clip 0: only measure the norm (an infinite bound never scales). The gradient is the
         * global one here, so every rank clips alike. */
        double gn = optim_clip_grad_norm(tp, cfg.optim.clip > 0 ? cfg.optim.clip : INFINITY);
        double lr = optim_schedule_lr(&sched, tl.step);
        optim_step(&opt, lr);
        double lv = tensor_item(loss);
        /* the logged loss is the global batch's: the mean of the scaled shard losses */
        if (comm && nranks > 1) lv = optim_comm_allreduce_sum_scalar(comm, lv) / nranks;
        optim_train_step_end(&tl, lv, lr, 1, &(OptimMetric){"grad_norm", gn});
        tensor_scope_end(s);
    }
    free(idx);
    bool done = tl.step >= cfg.train.steps;
    rc = optim_train_finish(&tl);
    if (rc == 0 && done && is_main) {
        TensorScope *s = tensor_scope_begin();
        bool g = ag_no_grad_begin();
        Tensor *d = cuda ? tensor_sub(nn_stack_forward(model, tensor_to(x, TENSOR_CUDA)), tensor_to(y, TENSOR_CUDA))
                         : tensor_sub(nn_stack_forward(model, x), y);
        double mse = tensor_item(tensor_mean_all(tensor_mul(d, d)));
        ag_no_grad_end(g);
        fprintf(stderr, "anima fit: done, %lld steps; full-data MSE %.6g (label noise variance %.3g); %s, %s\n",
                (long long)cfg.train.steps, mse, cfg.data.noise * cfg.data.noise, ckpt_path, log_path);
        tensor_scope_end(s);
    }
    free(cfg_json);
    nn_params_free(&dparams);
    nn_params_free(&params);
    nn_stack_free(&dmlp), nn_stack_free(&mlp);
    tensor_scope_end(run_scope);
    nn_set_matmul_dtype(prev_matmul);
    return rc;
}
