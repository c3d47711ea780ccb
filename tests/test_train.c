/* tests/test_train.c — the training loop (optim/train.h) and `anima fit`: stop + resume is
 * bit-identical to an uninterrupted run, SIGINT ends with a checkpoint and exit 130, every
 * JSONL line is valid JSON, bad arguments exit 2 naming the key or file. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nn/functional.h"
#include "optim/train.h"
#include "tests/test.h"

static void tmpdir_make(char *dir) {
    strcpy(dir, "/tmp/anima-train-XXXXXX");
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

static bool same_bits(const Tensor *a, const Tensor *b) {
    return tensor_numel(a) == tensor_numel(b) && a->dtype == b->dtype &&
           !memcmp(tensor_data_ptr(a), tensor_data_ptr(b), (size_t)tensor_numel(a) * tensor_dtype_size(a->dtype));
}

/* Every line parses as a JSON object with the standard fields; steps strictly increase.
 * Returns the number of lines (-1 on a bad one). */
static int check_jsonl(const char *path, int64_t *last_step) {
    FILE *f = fopen(path, "r");
    CHECK_MSG(f, "%s missing", path);
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    int64_t prev = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        CHECK_MSG(j && cJSON_IsObject(j), "%s line %d is not a JSON object: %s", path, n + 1, line);
        if (!j) {
            n = -1;
            break;
        }
        const char *keys[] = {"step", "loss", "lr", "time"};
        for (int k = 0; k < 4; k++)
            CHECK_MSG(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, keys[k])), "%s line %d lacks %s", path,
                      n + 1, keys[k]);
        int64_t s = (int64_t)cJSON_GetObjectItemCaseSensitive(j, "step")->valuedouble;
        CHECK_MSG(s > prev, "%s line %d: step %lld after %lld", path, n + 1, (long long)s, (long long)prev);
        prev = s;
        cJSON_Delete(j);
        n++;
    }
    free(line);
    fclose(f);
    if (last_step) *last_step = prev;
    return n;
}

/* ---- the loop in-process ------------------------------------------------------------------- */

typedef struct {
    NnParams p;
    Optim o;
    Tensor *w0, *b0, *w1, *b1;
    Tensor *x, *y;
    TensorRng rng_end;
    int64_t step_end;
} Run;

/* A 2-32-1 tanh MLP on 200 samples, batch 16 (epochs do not divide evenly: wrapping batches),
 * AdamW + warm-up/cosine + clipping, input jitter drawn from the loop's rng. */
static int run_loop(Run *r, const char *dir, int64_t total, int64_t stop_after, bool resume) {
    char ck[256], log[256], err[2048];
    snprintf(ck, sizeof ck, "%s/ckpt.h5", dir);
    snprintf(log, sizeof log, "%s/metrics.jsonl", dir);
    nn_params_init(&r->p, NULL, TENSOR_F32, 3);
    r->w0 = nn_param(&r->p, "net", "0.weight", TENSOR_SHAPE(32, 2), NN_INIT_KAIMING_UNIFORM, 0);
    r->b0 = nn_param(&r->p, "net", "0.bias", TENSOR_SHAPE(32), NN_INIT_UNIFORM, 0.5);
    r->w1 = nn_param(&r->p, "net", "2.weight", TENSOR_SHAPE(1, 32), NN_INIT_KAIMING_UNIFORM, 0);
    r->b1 = nn_param(&r->p, "net", "2.bias", TENSOR_SHAPE(1), NN_INIT_UNIFORM, 0.1);
    nn_params_pack(&r->p);
    OptimConfig oc = optim_defaults(OPTIM_ADAMW);
    optim_init(&r->o, &r->p, &oc);
    TensorRng gd = {.seed = 3, .stream = 1};
    r->x = tensor_randn_with(&gd, TENSOR_SHAPE(200, 2), TENSOR_F32);
    r->y = tensor_sin(tensor_sum(r->x, TENSOR_DIMS(1), true));
    OptimSchedule sched = {.peak = 1e-2, .floor = 1e-4, .warmup = 10, .total = total};
    OptimTrainOptions to = {.name = "test", .total_steps = total, .log_every = 10, .ckpt_every = 30,
                            .ckpt_path = ck, .metrics_path = log, .config_json = "{\"test\": 1}",
                            .resume = resume, .progress = 0, .stop_after = stop_after};
    OptimTrain tl;
    if (optim_train_init(&tl, &to, &r->p, &r->o, (TensorRng){.seed = 3, .stream = 3}, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return -1;
    }
    int64_t idx[16];
    while (optim_train_next(&tl)) {
        TensorScope *s = tensor_scope_begin();
        optim_data_order(3, tl.step, 200, 16, idx);
        Tensor *it = tensor_from_data(TENSOR_SHAPE(16), TENSOR_I64, idx);
        Tensor *xb = tensor_index_select(r->x, 0, it), *yb = tensor_index_select(r->y, 0, it);
        xb = tensor_add(xb, tensor_mul_scalar(tensor_randn_with(&tl.rng, TENSOR_SHAPE(16, 2), TENSOR_F32), 0.05));
        Tensor *h = tensor_tanh(nn_linear(xb, r->w0, r->b0));
        Tensor *d = tensor_sub(nn_linear(h, r->w1, r->b1), yb);
        Tensor *loss = tensor_mean_all(tensor_mul(d, d));
        nn_params_zero_grad(&r->p);
        ag_backward(loss, NULL, false);
        double gn = optim_clip_grad_norm(&r->p, 0.5);
        double lr = optim_schedule_lr(&sched, tl.step);
        optim_step(&r->o, lr);
        optim_train_step_end(&tl, tensor_item(loss), lr, 1, &(OptimMetric){"grad_norm", gn});
        tensor_scope_end(s);
    }
    r->rng_end = tl.rng;
    r->step_end = tl.step;
    return optim_train_finish(&tl);
}

TEST(train_resume_is_bit_identical) {
    char da[64], db[64];
    tmpdir_make(da);
    tmpdir_make(db);
    Run a, b1, b2;
    CHECK(run_loop(&a, da, 200, 0, false) == 0);
    CHECK(a.step_end == 200);
    CHECK(run_loop(&b1, db, 200, 100, false) == 0); /* stops at 100 with a checkpoint */
    CHECK(b1.step_end == 100);
    CHECK(!same_bits(a.p.flat, b1.p.flat));
    CHECK(run_loop(&b2, db, 200, 0, true) == 0); /* fresh model (other values), then resume */
    CHECK(b2.step_end == 200);
    CHECK_MSG(same_bits(a.p.flat, b2.p.flat), "parameters differ after 100 + resume 100 vs 200 steps");
    CHECK(same_bits(a.o.exp_avg, b2.o.exp_avg) && same_bits(a.o.exp_avg_sq, b2.o.exp_avg_sq));
    CHECK(a.o.step == b2.o.step && a.o.step == 200);
    CHECK(a.rng_end.offset == b2.rng_end.offset && a.rng_end.stream == b2.rng_end.stream);
    nn_params_free(&a.p), nn_params_free(&b1.p), nn_params_free(&b2.p);
    /* the logs hold the same steps and losses (times differ) */
    char la[128], lb[128];
    snprintf(la, sizeof la, "%s/metrics.jsonl", da);
    snprintf(lb, sizeof lb, "%s/metrics.jsonl", db);
    CHECK(check_jsonl(la, NULL) == 20 && check_jsonl(lb, NULL) == 20);
    FILE *fa = fopen(la, "r"), *fb = fopen(lb, "r");
    char x[512], y[512];
    while (fgets(x, sizeof x, fa) && fgets(y, sizeof y, fb)) {
        *strstr(x, ",\"time\"") = 0;
        *strstr(y, ",\"time\"") = 0;
        CHECK_MSG(!strcmp(x, y), "log lines differ: %s vs %s", x, y);
    }
    fclose(fa);
    fclose(fb);
    tmpdir_remove(da);
    tmpdir_remove(db);
}

/* A kill between two checkpoints: the log has lines past the checkpoint (and maybe half a
 * line); resume drops them, so the log again reads as one run. */
TEST(train_resume_trims_the_log) {
    char d[64];
    tmpdir_make(d);
    Run r, r2;
    CHECK(run_loop(&r, d, 200, 60, false) == 0);
    char log[128];
    snprintf(log, sizeof log, "%s/metrics.jsonl", d);
    FILE *f = fopen(log, "a");
    fputs("{\"step\":70,\"loss\":1,\"lr\":1,\"time\":1}\n{\"step\":80,\"lo", f); /* as if killed at 85 */
    fclose(f);
    CHECK(run_loop(&r2, d, 200, 0, true) == 0);
    int64_t last;
    CHECK(check_jsonl(log, &last) == 20 && last == 200);
    nn_params_free(&r.p), nn_params_free(&r2.p);
    tmpdir_remove(d);
}

/* ---- SIGINT ------------------------------------------------------------------------------------ */

static void signal_run(int sig) {
    char d[64];
    tmpdir_make(d);
    char log[128], ck[128], err[2048];
    snprintf(log, sizeof log, "%s/metrics.jsonl", d);
    snprintf(ck, sizeof ck, "%s/ckpt.h5", d);
    /* fork before any tensor work here: libgomp's threads do not survive a fork */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        Run r;
        int rc = run_loop(&r, d, 100000000, 0, false);
        nn_params_free(&r.p);
        _exit(rc);
    }
    /* wait until it is training (the log has lines), then interrupt */
    struct stat st;
    for (int i = 0; i < 500 && (stat(log, &st) != 0 || st.st_size < 200); i++) usleep(10000);
    kill(pid, sig);
    int status;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig, "child: %s %d",
              WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    Run r;
    nn_params_init(&r.p, NULL, TENSOR_F32, 0);
    nn_param(&r.p, "net", "0.weight", TENSOR_SHAPE(32, 2), NN_INIT_ZEROS, 0);
    nn_param(&r.p, "net", "0.bias", TENSOR_SHAPE(32), NN_INIT_ZEROS, 0);
    nn_param(&r.p, "net", "2.weight", TENSOR_SHAPE(1, 32), NN_INIT_ZEROS, 0);
    nn_param(&r.p, "net", "2.bias", TENSOR_SHAPE(1), NN_INIT_ZEROS, 0);
    nn_params_pack(&r.p);
    OptimCheckpointMeta meta = {0};
    CHECK_MSG(optim_checkpoint_load(ck, &r.p, NULL, true, &meta, err, sizeof err) == 0, "%s", err);
    CHECK(meta.step > 0 && meta.config_json && !strcmp(meta.config_json, "{\"test\": 1}"));
    free(meta.config_json);
    int64_t last;
    CHECK(check_jsonl(log, &last) > 0 && last <= meta.step);
    /* the interrupted step was finished: the checkpoint is at a step boundary past the log */
    CHECK(meta.step - last < 10);
    nn_params_free(&r.p);
    tmpdir_remove(d);
}

TEST(train_sigint_checkpoints_and_exits_130) { signal_run(SIGINT); }
TEST(train_sigterm_checkpoints_and_exits_143) { signal_run(SIGTERM); }

/* ---- data order ---------------------------------------------------------------------------- */

TEST(train_data_order_is_a_permutation_per_epoch) {
    int64_t n = 10, idx[4], seen[10] = {0};
    /* steps 0..4 with batch 4 cover positions 0..19: epochs 0 and 1, batch 2 straddles them */
    for (int64_t s = 0; s < 5; s++) {
        optim_data_order(1, s, n, 4, idx);
        for (int j = 0; j < 4; j++) {
            CHECK(idx[j] >= 0 && idx[j] < n);
            seen[idx[j]]++;
        }
    }
    for (int i = 0; i < n; i++) CHECK_MSG(seen[i] == 2, "sample %d seen %lld times in 2 epochs", i, (long long)seen[i]);
    int64_t a[4], b[4];
    optim_data_order(1, 3, n, 4, a);
    optim_data_order(1, 3, n, 4, b);
    CHECK(!memcmp(a, b, sizeof a)); /* pure */
    optim_data_order(2, 3, n, 4, b);
    CHECK(memcmp(a, b, sizeof a)); /* another seed, another order */
}

/* ---- anima fit ----------------------------------------------------------------------------- */

/* The anima program beside the tests' working directory (the repository root); skip when it
 * is not built or predates `fit`. */
static bool have_fit(void) {
    return access("./anima", X_OK) == 0 && system("./anima fit --help >/dev/null 2>&1") == 0;
}

/* Runs `./anima fit ARGS` with stderr into out; returns the exit status (128+sig on a signal). */
static int fit(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "./anima fit --no-progress %s 2>&1", args);
    return test_run_capture(cmd, out, n);
}

static void fit_params(NnParams *p) {
    nn_params_init(p, NULL, TENSOR_F32, 0);
    nn_param(p, "net", "0.weight", TENSOR_SHAPE(16, 2), NN_INIT_ZEROS, 0);
    nn_param(p, "net", "0.bias", TENSOR_SHAPE(16), NN_INIT_ZEROS, 0);
    nn_param(p, "net", "2.weight", TENSOR_SHAPE(16, 16), NN_INIT_ZEROS, 0);
    nn_param(p, "net", "2.bias", TENSOR_SHAPE(16), NN_INIT_ZEROS, 0);
    nn_param(p, "net", "4.weight", TENSOR_SHAPE(1, 16), NN_INIT_ZEROS, 0);
    nn_param(p, "net", "4.bias", TENSOR_SHAPE(1), NN_INIT_ZEROS, 0);
    nn_params_pack(p);
}

TEST(train_fit_cli_resume_bit_identical) {
    if (!have_fit()) _exit(77);
    char da[64], db[64], args[1024], out[16384], err[2048];
    tmpdir_make(da);
    tmpdir_make(db);
    const char *common = "--config configs/fit-mlp.json --set model.hidden=16 --set train.steps=200 "
                         "--set train.ckpt_every=50";
    snprintf(args, sizeof args, "%s --out %s", common, da);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "%s --out %s --stop-after 100", common, db);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "%s --out %s --resume", common, db);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    CHECK_MSG(strstr(out, "resuming") && strstr(out, "step 100"), "%s", out);
    NnParams pa, pb;
    fit_params(&pa);
    fit_params(&pb);
    char ca[128], cb[128];
    snprintf(ca, sizeof ca, "%s/ckpt.h5", da);
    snprintf(cb, sizeof cb, "%s/ckpt.h5", db);
    OptimCheckpointMeta ma = {0}, mb = {0};
    CHECK_MSG(optim_checkpoint_load(ca, &pa, NULL, true, &ma, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(optim_checkpoint_load(cb, &pb, NULL, true, &mb, err, sizeof err) == 0, "%s", err);
    CHECK(ma.step == 200 && mb.step == 200 && ma.rng.offset == mb.rng.offset);
    CHECK_MSG(same_bits(pa.flat, pb.flat), "anima fit: 100 + resume differs from 200 uninterrupted");
    /* the stored config is the effective one (overrides applied), as JSON */
    cJSON *c = ma.config_json ? cJSON_Parse(ma.config_json) : NULL;
    CHECK(c && cJSON_GetObjectItem(cJSON_GetObjectItem(c, "model"), "hidden")->valueint == 16);
    cJSON_Delete(c);
    free(ma.config_json);
    free(mb.config_json);
    nn_params_free(&pa), nn_params_free(&pb);
    char log[128];
    snprintf(log, sizeof log, "%s/metrics.jsonl", db);
    int64_t last;
    CHECK(check_jsonl(log, &last) == 10 && last == 200);
    tmpdir_remove(da);
    tmpdir_remove(db);
}

/* model.matmul = bf16 (nn_set_matmul_dtype): the same fit trains to about the f32 run's error,
 * the checkpoint holds f32 parameters, and bf16 with f64 parameters is refused up front */
TEST(train_fit_cli_bf16_matmul) {
    if (!have_fit()) _exit(77);
    char d[64], args[1024], out[16384];
    double mse[2];
    for (int k = 0; k < 2; k++) {
        tmpdir_make(d);
        snprintf(args, sizeof args,
                 "--config configs/fit-mlp.json --set model.hidden=16 --set train.steps=300 --set model.matmul=%s --out %s",
                 k ? "bf16" : "f32", d);
        CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
        const char *m = strstr(out, "full-data MSE ");
        CHECK_MSG(m && sscanf(m, "full-data MSE %lf", &mse[k]) == 1, "%s", out);
        tmpdir_remove(d);
    }
    printf("    full-data MSE after 300 steps: f32 matmuls %.5g, bf16 matmuls %.5g\n", mse[0], mse[1]);
    CHECK(mse[1] < 2 * mse[0] + 1e-3);
    tmpdir_make(d);
    snprintf(args, sizeof args, "--config configs/fit-mlp.json --set model.dtype=f64 --set model.matmul=bf16 --out %s", d);
    CHECK(fit(args, out, sizeof out) == 2 && strstr(out, "model.matmul"));
    tmpdir_remove(d);
}

TEST(train_fit_cli_sigint) {
    if (!have_fit()) _exit(77);
    char d[64], log[128], ck[128];
    tmpdir_make(d);
    snprintf(log, sizeof log, "%s/metrics.jsonl", d);
    snprintf(ck, sizeof ck, "%s/ckpt.h5", d);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execl("./anima", "anima", "fit", "--config", "configs/fit-mlp.json", "--out", d, "--set",
              "train.steps=100000000", "--set", "train.log_every=10", "--set", "model.hidden=16", (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 500 && (stat(log, &st) != 0 || st.st_size < 300); i++) usleep(10000);
    kill(pid, SIGINT);
    int status;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 130, "anima fit: %s %d",
              WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    NnParams p;
    fit_params(&p);
    char err[2048];
    OptimCheckpointMeta meta = {0};
    CHECK_MSG(optim_checkpoint_load(ck, &p, NULL, true, &meta, err, sizeof err) == 0, "%s", err);
    int64_t last;
    CHECK(check_jsonl(log, &last) > 0 && last <= meta.step && meta.step > 0);
    free(meta.config_json);
    nn_params_free(&p);
    /* and it continues from there */
    char args[512], out[16384];
    snprintf(args, sizeof args, "--config configs/fit-mlp.json --out %s --set model.hidden=16 --set train.steps=%lld "
             "--resume", d, (long long)meta.step + 15);
    CHECK_MSG(fit(args, out, sizeof out) == 0, "%s", out);
    CHECK(check_jsonl(log, &last) > 0 && last == meta.step + 15);
    tmpdir_remove(d);
}

TEST(train_fit_cli_bad_input_exits_2) {
    if (!have_fit()) _exit(77);
    char out[16384];
    struct {
        const char *args, *needle1, *needle2;
    } cases[] = {
        {"--bogus", "unknown argument '--bogus'", "usage"},
        {"--config", "--config needs a value", "usage"},
        {"--config /nonexistent/fit.json", "/nonexistent/fit.json", "cannot open"},
        {"--set optim.lr=fast", "'optim.lr'", "number"},
        {"--set optim.lrr=1", "optim.lrr", "unknown"},
        {"--set train.steps=0", "'train.steps'", "got 0"},
        {"--set model.activation=swish", "'model.activation'", "\"tanh\""},
        {"--stop-after -3", "--stop-after", "positive"},
        {"--config tests/test_train.c", "tests/test_train.c:1:", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = fit(cases[i].args, out, sizeof out);
        CHECK_MSG(rc == 2, "'%s': exit %d (want 2): %s", cases[i].args, rc, out);
        CHECK_MSG(strstr(out, cases[i].needle1) && strstr(out, cases[i].needle2), "'%s': message lacks '%s'/'%s': %s",
                  cases[i].args, cases[i].needle1, cases[i].needle2, out);
    }
}
