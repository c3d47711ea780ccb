/* tests/test_cuda_optim.c — the optimizer on GPU buffers (tensor/cuda/cuda_optim.cu behind
 * optim/optim.c and optim/conflict_free.c) against the CPU loops, and `anima fit --device cuda`
 * against `--device cpu`:
 *   cuda_optim_steps   10 steps of SGD (plain, momentum, Nesterov + decay), Adam (with and
 *                      without L2) and AdamW on the same gradients, f32 and f64: parameters and
 *                      moments to 1e-6 relative in f32, 1e-12 in f64 (the kernels do the CPU's
 *                      double operations in its order, so equality is expected);
 *   cuda_optim_clip    optim_clip_grad_norm: the norm and the scaled gradient (and no scaling
 *                      when the bound is not reached);
 *   cuda_optim_config  ConFIG (k = 1, 3, 6: the three Gram kernels) and M-ConFIG;
 *   cuda_nccl_one_rank_equals_cpu   the NCCL path with one rank (optim_comm_backward: buckets
 *                      posted from the autograd hook, ncclAllReduce on the comm stream, the mean)
 *                      gives the CPU's gradients, and an AdamW step after it the CPU's parameters;
 *   cuda_fit_*         a few `./anima fit` steps ($ANIMA_CUDA_PROGRAM when set) on both devices (checkpoints compared: f64 to
 *                      1e-8, f32 to 5e-3 — the forward/backward kernels round differently and
 *                      Adam amplifies that where a gradient is near 0), and stop + --resume on the
 *                      GPU (the checkpoint path to and from device tensors) against a straight run.
 * Run with --cuda (`make test-cuda`); without a device each test exits 77 (skip).
 * ANIMA_PARITY_SELFTEST=1 puts the CPU in the device's place (the cuda_fit tests then skip). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autograd/autograd.h"
#include "optim/checkpoint.h"
#include "optim/comm.h"
#include "tensor/backend.h"
#include "tests/test.h"

static TensorDevice DEV = TENSOR_CUDA;
static bool SELFTEST;

static void need_device(void) {
    tensor_manual_seed(20240613);
    if (getenv("ANIMA_PARITY_SELFTEST")) {
        DEV = TENSOR_CPU;
        SELFTEST = true;
        return;
    }
    if (!tensor_backend_cuda()) {
        fflush(NULL);
        exit(77);
    }
}

static Tensor *to_dev(Tensor *x) {
    if (DEV == TENSOR_CPU) return tensor_clone(tensor_detach(x));
    return tensor_to(tensor_detach(x), DEV);
}

static double rel_err(const Tensor *got, const Tensor *ref) {
    return test_rel_err(tensor_to((Tensor *)got, TENSOR_CPU), tensor_to((Tensor *)ref, TENSOR_CPU));
}

static void expect_rel(const char *what, const char *part, const Tensor *got, const Tensor *ref, double tol) {
    double e = rel_err(got, ref);
    CHECK_MSG(e <= tol, "%s: %s: relative error %.3g > %.3g", what, part, e, tol);
}

/* A few parameters, one large enough (77k) for several blocks of every kernel. */
static void make_params(NnParams *p, TensorDType dt) {
    nn_params_init(p, NULL, dt, 11);
    nn_param(p, "a", "weight", TENSOR_SHAPE(33, 17), NN_INIT_KAIMING_UNIFORM, 0);
    nn_param(p, "a", "bias", TENSOR_SHAPE(33), NN_INIT_UNIFORM, 0.1);
    nn_param(p, "b", "weight", TENSOR_SHAPE(300, 257), NN_INIT_KAIMING_UNIFORM, 0);
    nn_param(p, "b", "bias", TENSOR_SHAPE(300), NN_INIT_ZEROS, 0);
    nn_params_pack(p);
}

/* dst's flat gradient (any device) = the host tensor g */
static void set_grad(NnParams *p, Tensor *g) { tensor_copy_(p->flat_grad, tensor_device(p->flat_grad) == TENSOR_CPU ? g : to_dev(g)); }

typedef struct {
    const char *name;
    OptimConfig cfg;
} OptCase;

static OptCase opt_case(const char *name, OptimKind kind, double lr, double mom, bool nesterov, double wd) {
    OptimConfig c = optim_defaults(kind);
    c.lr = lr, c.momentum = mom, c.nesterov = nesterov, c.weight_decay = wd;
    return (OptCase){name, c};
}

TEST(cuda_optim_steps) {
    need_device();
    OptCase cases[] = {
        opt_case("sgd", OPTIM_SGD, 0.1, 0, false, 0),
        opt_case("sgd momentum", OPTIM_SGD, 0.05, 0.9, false, 0),
        opt_case("sgd nesterov decay", OPTIM_SGD, 0.05, 0.9, true, 1e-2),
        opt_case("adam", OPTIM_ADAM, 1e-2, 0, false, 0),
        opt_case("adam l2", OPTIM_ADAM, 1e-2, 0, false, 1e-2),
        opt_case("adamw", OPTIM_ADAMW, 1e-2, 0, false, 0.1),
    };
    OptimSchedule sched = {.peak = 1, .floor = 0.01, .warmup = 3, .total = 10};
    for (int t = 0; t < 2; t++) {
        TensorDType dt = t ? TENSOR_F64 : TENSOR_F32;
        double tol = t ? 1e-12 : 1e-6;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            TensorScope *s = tensor_scope_begin();
            char what[96];
            snprintf(what, sizeof what, "%s %s", cases[c].name, t ? "f64" : "f32");
            NnParams hp, dp;
            make_params(&hp, dt);
            nn_params_mirror(&dp, &hp, DEV);
            CHECK(tensor_device(dp.flat) == DEV && tensor_device(dp.items[2].value->grad) == DEV);
            Optim ho, dop;
            optim_init(&ho, &hp, &cases[c].cfg);
            optim_init(&dop, &dp, &cases[c].cfg);
            CHECK(!dop.exp_avg || tensor_device(dop.exp_avg) == DEV);
            TensorRng gr = {.seed = 5, .stream = (uint64_t)c};
            int64_t n = tensor_numel(hp.flat);
            for (int step = 0; step < 10; step++) {
                TensorScope *ss = tensor_scope_begin();
                Tensor *g = tensor_randn_with(&gr, 1, &n, dt);
                set_grad(&hp, g);
                set_grad(&dp, g);
                double lr = cases[c].cfg.lr * optim_schedule_lr(&sched, step);
                optim_step(&ho, lr);
                optim_step(&dop, lr);
                tensor_scope_end(ss);
            }
            CHECK(ho.step == 10 && dop.step == 10);
            expect_rel(what, "parameters", dp.flat, hp.flat, tol);
            if (ho.exp_avg) expect_rel(what, "exp_avg", dop.exp_avg, ho.exp_avg, tol);
            if (ho.exp_avg_sq) expect_rel(what, "exp_avg_sq", dop.exp_avg_sq, ho.exp_avg_sq, tol);
            nn_params_free(&dp);
            nn_params_free(&hp);
            tensor_scope_end(s);
        }
    }
}

/* loss = Σ over parameters of Σ tanh(w) ⊙ w (every parameter gets a gradient) */
static Tensor *tanh_loss(NnParams *p) {
    Tensor *l = NULL;
    for (int i = 0; i < p->n; i++) {
        Tensor *v = p->items[i].value, *t = tensor_sum_all(tensor_mul(tensor_tanh(v), v));
        l = l ? tensor_add(l, t) : t;
    }
    return l;
}

TEST(cuda_nccl_one_rank_equals_cpu) {
    need_device();
    if (SELFTEST) { /* NCCL needs the device itself */
        fflush(NULL);
        exit(77);
    }
    OptimComm *comm = optim_comm_init_nccl_one();
    CHECK_MSG(comm && optim_comm_kind(comm) == OPTIM_COMM_NCCL, "a one-rank NCCL communicator did not start");
    if (!comm) return;
    for (int t = 0; t < 2; t++) {
        TensorDType dt = t ? TENSOR_F64 : TENSOR_F32;
        double tol = t ? 1e-12 : 1e-6;
        const char *what = t ? "nccl one rank f64" : "nccl one rank f32";
        TensorScope *s = tensor_scope_begin();
        NnParams hp, dp;
        make_params(&hp, dt);
        nn_params_mirror(&dp, &hp, DEV);
        optim_comm_set_buckets(comm, 4096, true); /* several buckets over the 78k parameters */
        ag_backward(tanh_loss(&hp), NULL, false);
        optim_comm_backward(comm, &dp, tanh_loss(&dp), false);
        expect_rel(what, "averaged gradients", dp.flat_grad, hp.flat_grad, tol);
        OptimConfig cfg = optim_defaults(OPTIM_ADAMW);
        Optim ho, dop;
        optim_init(&ho, &hp, &cfg);
        optim_init(&dop, &dp, &cfg);
        optim_step(&ho, 1e-2);
        optim_step(&dop, 1e-2);
        expect_rel(what, "parameters after AdamW", dp.flat, hp.flat, tol);
        nn_params_free(&dp);
        nn_params_free(&hp);
        tensor_scope_end(s);
    }
    optim_comm_finalize(comm);
}

TEST(cuda_optim_clip) {
    need_device();
    for (int t = 0; t < 2; t++) {
        TensorDType dt = t ? TENSOR_F64 : TENSOR_F32;
        NnParams hp, dp;
        make_params(&hp, dt);
        nn_params_mirror(&dp, &hp, DEV);
        int64_t n = tensor_numel(hp.flat);
        Tensor *g = tensor_mul_scalar(tensor_randn(1, &n, dt), 3);
        set_grad(&hp, g);
        set_grad(&dp, g);
        double nh = optim_clip_grad_norm(&hp, 1.0), nd = optim_clip_grad_norm(&dp, 1.0);
        CHECK_MSG(fabs(nh - nd) <= 1e-12 * nh, "%s: norm %.17g (device) vs %.17g", t ? "f64" : "f32", nd, nh);
        CHECK(nh > 1);
        expect_rel("clip", "scaled gradient", dp.flat_grad, hp.flat_grad, t ? 1e-14 : 1e-7);
        /* under the bound: the norm, and the gradient untouched */
        Tensor *before = tensor_to(dp.flat_grad, TENSOR_CPU);
        double n2 = optim_clip_grad_norm(&dp, 1e6);
        CHECK_NEAR(n2, 1.0, 1e-5);
        CHECK(rel_err(dp.flat_grad, before) == 0);
        nn_params_free(&dp);
        nn_params_free(&hp);
    }
}

TEST(cuda_optim_config) {
    need_device();
    int ks[3] = {1, 3, 6};
    for (int t = 0; t < 2; t++) {
        TensorDType dt = t ? TENSOR_F64 : TENSOR_F32;
        double tol = t ? 1e-12 : 1e-6;
        int64_t n = 50000;
        for (int ki = 0; ki < 3; ki++) {
            int k = ks[ki];
            Tensor *hg[6], *dg[6];
            Tensor *common = tensor_randn(1, &n, dt);
            for (int i = 0; i < k; i++) { /* partly aligned, partly conflicting */
                hg[i] = tensor_add(tensor_mul_scalar(common, 0.5 * (i % 2 ? -1 : 1)), tensor_randn(1, &n, dt));
                dg[i] = to_dev(hg[i]);
            }
            Tensor *ho = tensor_zeros(1, &n, dt), *dout = to_dev(ho);
            optim_config(k, hg, ho);
            optim_config(k, dg, dout);
            char what[64];
            snprintf(what, sizeof what, "ConFIG k=%d %s", k, t ? "f64" : "f32");
            expect_rel(what, "direction", dout, ho, tol);
            /* out aliasing the first gradient */
            optim_config(k, hg, hg[0]);
            optim_config(k, dg, dg[0]);
            expect_rel(what, "direction (aliased)", dg[0], hg[0], tol);
        }
        /* M-ConFIG: 3 losses round robin for 7 updates */
        NnParams hp, dp;
        make_params(&hp, dt);
        nn_params_mirror(&dp, &hp, DEV);
        int64_t np = tensor_numel(hp.flat);
        OptimMConfig hm, dm;
        optim_mconfig_init(&hm, &hp, 3, 0.9);
        optim_mconfig_init(&dm, &dp, 3, 0.9);
        CHECK(tensor_device(dm.moment[0]) == DEV);
        Tensor *ho = tensor_zeros(1, &np, dt), *dout = to_dev(ho);
        for (int step = 0; step < 7; step++) {
            Tensor *g = tensor_randn(1, &np, dt);
            optim_mconfig_update(&hm, step % 3, g, ho);
            optim_mconfig_update(&dm, step % 3, to_dev(g), dout);
        }
        expect_rel("M-ConFIG", "direction", dout, ho, tol);
        for (int i = 0; i < 3; i++) expect_rel("M-ConFIG", "moment", dm.moment[i], hm.moment[i], tol);
        optim_mconfig_free(&hm);
        optim_mconfig_free(&dm);
        nn_params_free(&dp);
        nn_params_free(&hp);
    }
}

/* ---- anima fit on both devices ------------------------------------------------------------ */

static void tmpdir_make(char *dir) {
    strcpy(dir, "/tmp/anima-cudafit-XXXXXX");
    if (!mkdtemp(dir)) abort();
}

static void tmpdir_remove(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

/* The program built with CUDA: $ANIMA_CUDA_PROGRAM, else the ./anima beside the tests' working
 * directory (the repository root). The emulated suite (tests/cuemu/run.sh) names its own build's
 * program: the ./anima there is the plain build's, which has no device to run --device cuda on. */
static const char *fit_program(void) {
    const char *p = getenv("ANIMA_CUDA_PROGRAM");
    return p && *p ? p : "./anima";
}

static void need_fit(void) {
    need_device();
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "%s fit --help >/dev/null 2>&1", fit_program());
    if (SELFTEST || access(fit_program(), X_OK) != 0 || system(cmd) != 0) {
        fflush(NULL);
        exit(77);
    }
}

static int fit(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s fit --no-progress %s 2>&1", fit_program(), args);
    return test_run_capture(cmd, out, n);
}

/* configs/fit-mlp.json's model at hidden 32: net.0 (32, 2), net.2 (32, 32), net.4 (1, 32) */
static void fit_params(NnParams *p, TensorDType dt) {
    nn_params_init(p, NULL, dt, 0);
    int64_t fin = 2;
    for (int l = 0; l <= 2; l++) {
        int64_t fout = l < 2 ? 32 : 1;
        char w[32], b[32];
        snprintf(w, sizeof w, "%d.weight", 2 * l);
        snprintf(b, sizeof b, "%d.bias", 2 * l);
        nn_param(p, "net", w, TENSOR_SHAPE(fout, fin), NN_INIT_ZEROS, 0);
        nn_param(p, "net", b, TENSOR_SHAPE(fout), NN_INIT_ZEROS, 0);
        fin = fout;
    }
    nn_params_pack(p);
}

/* loads DIR/ckpt.h5 (parameters and AdamW state) into fresh host sets */
static void load_fit(const char *dir, TensorDType dt, NnParams *p, Optim *o, int64_t *step) {
    char path[256], err[2048];
    snprintf(path, sizeof path, "%s/ckpt.h5", dir);
    fit_params(p, dt);
    optim_init(o, p, &(OptimConfig){.kind = OPTIM_ADAMW, .beta1 = 0.9, .beta2 = 0.999});
    OptimCheckpointMeta m = {0};
    CHECK_MSG(optim_checkpoint_load(path, p, o, true, &m, err, sizeof err) == 0, "%s", err);
    *step = m.step;
    free(m.config_json);
}

static const char *FIT_COMMON = "--config configs/fit-mlp.json --set model.hidden=32 --set train.ckpt_every=5";

static void fit_cpu_vs_cuda(const char *dtype, int steps, double tol) {
    char dc[64], dg[64], args[1024], out[16384];
    tmpdir_make(dc);
    tmpdir_make(dg);
    snprintf(args, sizeof args, "%s --set model.dtype=%s --set train.steps=%d --out %s --device cpu", FIT_COMMON,
             dtype, steps, dc);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "cpu: %s", out);
    snprintf(args, sizeof args, "%s --set model.dtype=%s --set train.steps=%d --out %s --device cuda", FIT_COMMON,
             dtype, steps, dg);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "cuda (is ./anima built with CUDA=1?): %s", out);
    TensorDType dt = !strcmp(dtype, "f64") ? TENSOR_F64 : TENSOR_F32;
    NnParams pc, pg;
    Optim oc, og;
    int64_t sc, sg;
    load_fit(dc, dt, &pc, &oc, &sc);
    load_fit(dg, dt, &pg, &og, &sg);
    CHECK(sc == steps && sg == steps && oc.step == steps && og.step == steps);
    char what[64];
    snprintf(what, sizeof what, "anima fit %s, %d steps, cuda vs cpu", dtype, steps);
    expect_rel(what, "parameters", pg.flat, pc.flat, tol);
    expect_rel(what, "exp_avg", og.exp_avg, oc.exp_avg, tol);
    expect_rel(what, "exp_avg_sq", og.exp_avg_sq, oc.exp_avg_sq, tol);
    nn_params_free(&pc);
    nn_params_free(&pg);
    tmpdir_remove(dc);
    tmpdir_remove(dg);
}

TEST(cuda_fit_matches_cpu) {
    need_fit();
    fit_cpu_vs_cuda("f64", 20, 1e-8);
    fit_cpu_vs_cuda("f32", 10, 5e-3);
}

/* stop after 10 of 20 steps and --resume on the GPU (the checkpoint is written from and read
 * back into device tensors) = 20 straight steps on the GPU */
TEST(cuda_fit_resume) {
    need_fit();
    char da[64], db[64], args[1024], out[16384];
    tmpdir_make(da);
    tmpdir_make(db);
    const char *common = "--set model.dtype=f64 --set train.steps=20 --device cuda";
    snprintf(args, sizeof args, "%s %s --out %s", FIT_COMMON, common, da);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "%s %s --out %s --stop-after 10", FIT_COMMON, common, db);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "%s %s --out %s --resume", FIT_COMMON, common, db);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    CHECK_MSG(strstr(out, "step 10"), "%s", out);
    NnParams pa, pb;
    Optim oa, ob;
    int64_t sa, sb;
    load_fit(da, TENSOR_F64, &pa, &oa, &sa);
    load_fit(db, TENSOR_F64, &pb, &ob, &sb);
    CHECK(sa == 20 && sb == 20 && oa.step == 20 && ob.step == 20);
    expect_rel("cuda resume", "parameters", pb.flat, pa.flat, 1e-12);
    expect_rel("cuda resume", "exp_avg_sq", ob.exp_avg_sq, oa.exp_avg_sq, 1e-12);
    nn_params_free(&pa);
    nn_params_free(&pb);
    tmpdir_remove(da);
    tmpdir_remove(db);
}
