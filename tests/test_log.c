/* tests/test_log.c — the library never prints (base/log.h): with no log sink and no progress
 * callback installed, calls that used to write to stderr (the training loop's warning and stop
 * message, ps_train's "resuming", ps_eval's skipped files) leave it empty; with them installed,
 * the same messages arrive there, at their levels. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "models/physskin/eval.h"
#include "models/physskin/train.h"
#include "optim/train.h"
#include "tests/test.h"

typedef struct {
    char text[16384];
    int count[4];         /* messages per level */
    int events[4];        /* training progress events per kind */
    char skipped[256];    /* ps_eval: the skipped files, space-separated */
    int shapes, ready;    /* ps_eval: SHAPE and READY events */
} Heard;

static void hear(void *user, BaseLogLevel level, const char *msg) {
    Heard *h = user;
    h->count[level]++;
    size_t n = strlen(h->text);
    snprintf(h->text + n, sizeof h->text - n, "%s\n", msg);
}

static void hear_progress(const OptimProgress *p, void *user) {
    ((Heard *)user)->events[p->event]++;
}

static char *tmpdir_make(char *dir) {
    strcpy(dir, "/tmp/anima-log-XXXXXX");
    if (!mkdtemp(dir)) abort();
    return dir;
}

static void tmpdir_remove(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* ---- the training loop ---------------------------------------------------------------------- */

/* steps of min |w|² on one parameter; with_optim false checkpoints no optimizer state, which a
 * resume with an optimizer then warns about */
static int loop(const char *dir, int64_t stop_after, bool resume, bool with_optim, Heard *h) {
    char ck[256], err[1024];
    snprintf(ck, sizeof ck, "%s/ckpt.h5", dir);
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 1);
    Tensor *w = nn_param(&p, NULL, "w", TENSOR_SHAPE(4), NN_INIT_NORMAL, 1.0);
    nn_params_pack(&p);
    Optim o;
    OptimConfig oc = optim_defaults(OPTIM_ADAMW);
    optim_init(&o, &p, &oc);
    OptimTrainOptions to = {.name = "test", .total_steps = 5, .log_every = 1, .ckpt_path = ck, .resume = resume,
                            .stop_after = stop_after, .progress = h ? hear_progress : NULL, .progress_user = h};
    OptimTrain tl;
    int rc = optim_train_init(&tl, &to, &p, with_optim ? &o : NULL, (TensorRng){.seed = 1}, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    while (rc == 0 && optim_train_next(&tl)) {
        TensorScope *s = tensor_scope_begin();
        Tensor *loss = tensor_sum_all(tensor_mul(w, w));
        nn_params_zero_grad(&p);
        ag_backward(loss, NULL, false);
        if (with_optim) optim_step(&o, 1e-2);
        optim_train_step_end(&tl, tensor_item(loss), 1e-2, 0, NULL);
        tensor_scope_end(s);
    }
    if (rc == 0) rc = optim_train_finish(&tl);
    nn_params_free(&p);
    return rc;
}

/* 2 steps without optimizer state, then a resume with one: a warning and two stop messages */
static int two_runs(const char *dir, Heard *h) {
    return loop(dir, 2, false, false, h) || loop(dir, 1, true, true, h);
}

static void two_runs_child(void *dir) {
    _exit(two_runs(dir, NULL) ? 1 : 0);
}

TEST(log_training_loop_prints_nothing_without_a_sink) {
    char dir[64], buf[4096];
    int st = test_run_child(two_runs_child, tmpdir_make(dir), buf, sizeof buf);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_MSG(buf[0] == 0, "the library wrote to stderr: %s", buf);
    tmpdir_remove(dir);
}

TEST(log_training_loop_messages_reach_the_sink) {
    char dir[64];
    tmpdir_make(dir);
    Heard h = {0};
    base_log_set_sink(hear, &h);
    CHECK(two_runs(dir, &h) == 0);
    base_log_set_sink(NULL, NULL);
    CHECK_MSG(h.count[BASE_LOG_WARN] == 1 && strstr(h.text, "test: warning: ") &&
                  strstr(h.text, "holds no optimizer state"),
              "%s", h.text);
    CHECK_MSG(h.count[BASE_LOG_INFO] == 2 && strstr(h.text, "test: stopped after 2 steps at step 2/5") &&
                  strstr(h.text, "test: stopped after 1 steps at step 3/5"),
              "%s", h.text);
    CHECK(h.count[BASE_LOG_ERROR] == 0);
    /* progress went to the callback: two runs, three steps */
    CHECK(h.events[OPTIM_PROGRESS_BEGIN] == 2 && h.events[OPTIM_PROGRESS_STEP] == 3 &&
          h.events[OPTIM_PROGRESS_END] == 2);
    tmpdir_remove(dir);
}

/* ---- PhysSkin: ps_train and ps_eval --------------------------------------------------------- */

typedef struct {
    const char *dir;
    int64_t steps;
    bool resume;
} TrainRun;

static int ps_train_tiny(const TrainRun *r) {
    PsConfig c;
    char err[1024];
    CHECK_MSG(ps_config_load(&c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err) == 0, "%s", err);
    c.train.steps = r->steps;
    c.data.shapes = 2;
    char *json = ds_config_to_json(PS_CONFIG_SCHEMA, &c);
    PsTrainArgs a = {.cfg = &c, .cfg_json = json, .data = "procedural:chair,snake", .out_dir = r->dir,
                     .resume = r->resume};
    int rc = ps_train(&a);
    free(json);
    return rc;
}

static void ps_train_child(void *r) {
    _exit(ps_train_tiny(r) ? 1 : 0);
}

/* a folder of two meshes ps_eval skips: too few vertices, and no vertices at all */
static void eval_real(void *arg) {
    const char *dir = arg;
    char ck[160], data[160], err[1024];
    snprintf(ck, sizeof ck, "%s/ckpt.h5", dir);
    snprintf(data, sizeof data, "real:%s/real", dir);
    FILE *out = fopen("/dev/null", "w");
    PsEvalArgs a = {.ckpt = ck, .data = data, .shapes = 2, .baseline = ps_baseline_defaults()};
    int rc = ps_eval(&a, out, err, sizeof err);
    fclose(out);
    _exit(rc != 0 && strstr(err, "no usable mesh") ? 0 : 1);
}

static void hear_eval(const PsEvalProgress *p, void *user) {
    Heard *h = user;
    if (p->event == PS_EVAL_SKIPPED) {
        size_t n = strlen(h->skipped);
        snprintf(h->skipped + n, sizeof h->skipped - n, "%s%s: %s", n ? " | " : "", p->file, p->reason);
    }
    h->ready += p->event == PS_EVAL_READY;
    h->shapes += p->event == PS_EVAL_SHAPE;
}

/* Every call without a sink runs in a forked child first: a child forked after the parent has
 * started OpenMP's threads must not start them again (libgomp hangs), so the calls with a sink
 * run in this process only after the children. */
TEST(log_physskin_prints_nothing_without_a_sink) {
    char dir[64], buf[4096], path[160];
    tmpdir_make(dir);
    TrainRun r = {dir, 1, false};
    int st = test_run_child(ps_train_child, &r, buf, sizeof buf);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* a resume with another config: "note: the config differs" and "resuming" went to stderr */
    r.steps = 2, r.resume = true;
    st = test_run_child(ps_train_child, &r, buf, sizeof buf);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_MSG(buf[0] == 0, "ps_train wrote to stderr: %s", buf);

    /* ps_eval: the skipped files went to stderr unless --quiet; now to the callback alone */
    snprintf(path, sizeof path, "%s/real", dir);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/real/a.off", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n");
    fclose(f);
    snprintf(path, sizeof path, "%s/real/b.obj", dir);
    f = fopen(path, "w");
    fprintf(f, "junk\n");
    fclose(f);
    st = test_run_child(eval_real, dir, buf, sizeof buf);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_MSG(buf[0] == 0, "ps_eval wrote to stderr: %s", buf);

    Heard h = {0};
    r.steps = 3;
    base_log_set_sink(hear, &h);
    CHECK(ps_train_tiny(&r) == 0);
    base_log_set_sink(NULL, NULL);
    CHECK_MSG(strstr(h.text, "anima physskin train: note: the config differs") &&
                  strstr(h.text, "anima physskin train: resuming ") && strstr(h.text, "at step 2\n"),
              "%s", h.text);
    char ck[160], data[160], err[1024];
    snprintf(ck, sizeof ck, "%s/ckpt.h5", dir);
    snprintf(data, sizeof data, "real:%s/real", dir);
    Heard e = {0};
    PsEvalArgs a = {.ckpt = ck, .data = data, .shapes = 2, .baseline = ps_baseline_defaults(),
                    .progress = hear_eval, .progress_user = &e};
    FILE *out = fopen("/dev/null", "w");
    CHECK(ps_eval(&a, out, err, sizeof err) != 0 && strstr(err, "no usable mesh"));
    fclose(out);
    CHECK_MSG(strstr(e.skipped, "a.off: 3 vertices (< 4·m = ") && strstr(e.skipped, "b.obj: ") &&
                  e.ready == 0 && e.shapes == 0,
              "%s", e.skipped);
    tmpdir_remove(dir);
}
