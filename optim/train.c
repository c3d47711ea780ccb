/* optim/train.c — progress reports, JSONL log, signal-safe stop, checkpoints and resume for a
 * training loop (see train.h for the calling pattern). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "train.h"
#include "base/clock.h"
#include "base/interrupt.h"
#include "base/errbuf.h"
#include "base/log.h"

int optim_train_signal(void) { return (int)base_interrupt_signal; }

/* ---- data order -------------------------------------------------------------------------- */

/* Philox stream for the data permutation: distinct from the streams models draw from. */
#define ORDER_STREAM 0x6f72646572ull /* "order" */

void optim_data_order(uint64_t seed, int64_t step, int64_t n, int64_t batch, int64_t *out) {
    if (n <= 0 || batch <= 0) tensor_fail("optim_data_order", "n = %lld and batch = %lld must be positive",
                                          (long long)n, (long long)batch);
    int64_t *perm = base_malloc(sizeof *perm * (size_t)n);
    int64_t epoch = -1;
    for (int64_t j = 0; j < batch; j++) {
        int64_t pos = step * batch + j; /* position in the endless sequence of epochs */
        if (pos / n != epoch) {
            epoch = pos / n;
            /* Fisher–Yates: j uniform in [0, i] from 64 Philox bits (multiply-high: no modulo) */
            for (int64_t i = 0; i < n; i++) perm[i] = i;
            for (int64_t i = n - 1; i > 0; i--) {
                uint32_t r[4];
                tensor_philox(seed, ORDER_STREAM + (uint64_t)epoch * 0x10000ull, (uint64_t)i, r);
                uint64_t x = ((uint64_t)r[0] << 32) | r[1];
                int64_t k = (int64_t)(((unsigned __int128)x * (uint64_t)(i + 1)) >> 64);
                int64_t tmp = perm[i];
                perm[i] = perm[k];
                perm[k] = tmp;
            }
        }
        out[j] = perm[pos % n];
    }
    free(perm);
}

/* ---- metrics log --------------------------------------------------------------------------- */

/* JSON has no NaN or infinity: write null so every line still parses. %.17g round-trips. */
static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

/* On resume, keep only the log lines of steps the checkpoint covers: steps logged after the
 * last checkpoint are about to be re-run, and a line cut by a kill mid-write is dropped. The
 * kept part is written to a temporary name and renamed, like checkpoints. */
static int trim_log(const char *path, int64_t upto, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? 0 : (base_errf(err, errlen, "%s: cannot read (%s)", path, strerror(errno)), -1);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *o = fopen(tmp, "wb");
    if (!o) {
        fclose(f);
        base_errf(err, errlen, "%s: cannot write (%s)", tmp, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] != '\n') break; /* cut mid-write */
        cJSON *j = cJSON_Parse(line);
        const cJSON *s = j ? cJSON_GetObjectItemCaseSensitive(j, "step") : NULL;
        if (s && cJSON_IsNumber(s) && s->valuedouble <= (double)upto) fwrite(line, 1, (size_t)len, o);
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);
    if (fflush(o) != 0 || fsync(fileno(o)) != 0 || fclose(o) != 0 || rename(tmp, path) != 0) {
        base_errf(err, errlen, "%s: cannot rewrite the log (%s)", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void report(OptimTrain *t, OptimProgressEvent ev);

static void log_line(OptimTrain *t, double loss, double lr, int nextra, const OptimMetric *extra) {
    if (!t->metrics) return;
    FILE *f = t->metrics;
    fprintf(f, "{\"step\":%lld,\"loss\":", (long long)t->step);
    json_num(f, loss);
    fputs(",\"lr\":", f);
    json_num(f, lr);
    fputs(",\"time\":", f);
    json_num(f, base_now() - t->t_start);
    for (int i = 0; i < nextra; i++) {
        /* names are the caller's identifiers; escape the two characters that would break JSON */
        fputs(",\"", f);
        for (const char *c = extra[i].name; *c; c++) {
            if (*c == '"' || *c == '\\') fputc('\\', f);
            fputc(*c, f);
        }
        fputs("\":", f);
        json_num(f, extra[i].value);
    }
    fputs("}\n", f);
    /* one complete line per flush: a reader (or a kill) sees whole records */
    if (fflush(f) != 0 || ferror(f)) {
        int e = errno; /* before the callback's own writes */
        report(t, OPTIM_PROGRESS_BREAK);
        base_logf(BASE_LOG_ERROR, "%s: %s: writing the metrics log failed (%s)", t->opt.name, t->opt.metrics_path,
                  strerror(e));
        t->error = 1;
    }
}

/* ---- progress ------------------------------------------------------------------------------ */

static void report(OptimTrain *t, OptimProgressEvent ev) {
    if (!t->opt.progress) return;
    OptimProgress p = {ev, t->opt.name, t->step, t->start_step, t->opt.total_steps, t->opt.log_every, t->last_loss,
                       t->last_lr};
    t->opt.progress(&p, t->opt.progress_user);
}

/* ---- checkpoints and the loop ---------------------------------------------------------------- */

int optim_train_save(OptimTrain *t, char *err, size_t errlen) {
    /* ranks other than 0 hold the same state (same updates from all-reduced gradients): one
     * writer, so ranks never race on the file */
    if (!t->opt.ckpt_path || !t->is_main) return 0;
    OptimCheckpointMeta meta = {.step = t->step, .rng = t->rng, .config_json = (char *)t->opt.config_json};
    if (optim_checkpoint_save(t->opt.ckpt_path, t->params, t->optim, &meta, err, errlen)) return -1;
    t->saved_step = t->step;
    return 0;
}

static int comm_size(const OptimTrain *t) { return t->opt.comm ? optim_comm_size(t->opt.comm) : 1; }

/* Several ranks: true on every rank when any rank reports failed (a collective call). */
static bool any_rank(OptimTrain *t, bool failed) {
    if (comm_size(t) == 1) return failed;
    return optim_comm_allreduce_sum_scalar(t->opt.comm, failed ? 1.0 : 0.0) > 0;
}

static int init_local(OptimTrain *t, NnParams *p, Optim *o, char *err, size_t errlen);

int optim_train_init(OptimTrain *t, const OptimTrainOptions *opt, NnParams *p, Optim *o, TensorRng rng, char *err,
                     size_t errlen) {
    memset(t, 0, sizeof *t);
    t->opt = *opt;
    if (!t->opt.name) t->opt.name = "train";
    t->is_main = !t->opt.comm || optim_comm_rank(t->opt.comm) == 0;
    if (!t->is_main) {
        /* one writer and one display: rank 0's */
        t->opt.metrics_path = NULL;
        t->opt.progress = NULL;
    }
    t->rng = rng;
    int rc = init_local(t, p, o, err, errlen);
    /* A rank that cannot start (say, the checkpoint is not on its filesystem) must not leave the
     * others waiting in the first all-reduce forever: agree, and fail together. */
    if (any_rank(t, rc != 0)) {
        if (rc == 0) {
            if (t->metrics) fclose(t->metrics);
            t->metrics = NULL;
            free(t->resumed_config);
            t->resumed_config = NULL;
            if (t->is_main) base_errf(err, errlen, "%s: another rank failed to start (its message is above)", t->opt.name);
            else base_errf(err, errlen, "%s", "");
        }
        return -1;
    }
    /* No SA_RESTART needed (the flag is only polled); SA_RESETHAND makes a second Ctrl-C kill
     * at once, the usual escape when the final checkpoint itself hangs. */
    base_interrupt_signal = 0;
    base_interrupt_catch(SA_RESETHAND, &t->old_actions);
    t->t_start = base_now();
    report(t, OPTIM_PROGRESS_BEGIN);
    return 0;
}

/* This rank's part of init: options, resume, the log. */
static int init_local(OptimTrain *t, NnParams *p, Optim *o, char *err, size_t errlen) {
    if (t->opt.log_every < 1) t->opt.log_every = 1;
    t->params = p;
    t->optim = o;
    t->saved_step = -1;
    t->failed_step = -1;
    if (t->opt.resume) {
        if (!t->opt.ckpt_path) {
            base_errf(err, errlen, "%s: --resume needs a checkpoint path", t->opt.name);
            return -1;
        }
        OptimCheckpointMeta meta = {0};
        if (optim_checkpoint_load(t->opt.ckpt_path, p, o, true, &meta, err, errlen)) return -1;
        if (t->is_main && o && meta.step > 0 && o->step == 0)
            base_logf(BASE_LOG_WARN, "%s: warning: %s holds no optimizer state; the optimizer restarts from zero",
                      t->opt.name, t->opt.ckpt_path);
        t->step = t->start_step = t->saved_step = meta.step;
        t->rng = meta.rng;
        t->resumed_config = meta.config_json;
    }
    if (t->opt.metrics_path) {
        if (t->opt.resume && trim_log(t->opt.metrics_path, t->step, err, errlen)) goto fail;
        t->metrics = fopen(t->opt.metrics_path, t->opt.resume ? "ab" : "wb");
        if (!t->metrics) {
            base_errf(err, errlen, "%s: cannot open for writing (%s)", t->opt.metrics_path, strerror(errno));
            goto fail;
        }
    }
    return 0;
fail:
    free(t->resumed_config);
    t->resumed_config = NULL;
    return -1;
}

bool optim_train_next(OptimTrain *t) {
    if (t->finished) return false;
    /* the same on every rank (a function of the options and the step): no communication */
    if (t->opt.stop_after > 0 && t->step - t->start_step >= t->opt.stop_after) return false;
    if (t->step >= t->opt.total_steps) return false;
    if (comm_size(t) == 1) return !t->error && !base_interrupt_signal;
    /* Several ranks: each may see a signal at a different moment (mpirun turns Ctrl-C into a
     * SIGTERM to every rank, a scheduler may signal one), and only rank 0 can fail a write. The
     * flags are summed over ranks every step, so every rank stops after the same step and rank 0
     * checkpoints the state all of them hold. One sum carries three counts (ranks < 1024):
     * SIGINT seen + 1024 · SIGTERM seen + 1024² · write failed. */
    int sig = (int)base_interrupt_signal;
    double v = (sig == SIGINT ? 1.0 : 0.0) + (sig == SIGTERM ? 1024.0 : 0.0) + (t->error ? 1048576.0 : 0.0);
    double all = optim_comm_allreduce_sum_scalar(t->opt.comm, v);
    int64_t n = (int64_t)all, nint = n % 1024, nterm = n / 1024 % 1024, nerr = n / 1048576;
    if (nterm) t->stop_signal = SIGTERM;
    else if (nint) t->stop_signal = SIGINT;
    if (nerr) t->error = 1; /* rank 0 printed why; every rank exits 1 */
    return !t->stop_signal && !t->error;
}

void optim_train_step_end(OptimTrain *t, double loss, double lr, int nextra, const OptimMetric *extra) {
    t->step++;
    t->last_loss = loss;
    t->last_lr = lr;
    bool last = t->step >= t->opt.total_steps;
    if (t->step % t->opt.log_every == 0 || last) log_line(t, loss, lr, nextra, extra);
    report(t, OPTIM_PROGRESS_STEP);
    /* the final checkpoint is finish's job (it also covers an interrupted run) */
    if (t->opt.ckpt_every > 0 && t->step % t->opt.ckpt_every == 0 && !last) {
        char err[1024];
        if (optim_train_save(t, err, sizeof err)) {
            report(t, OPTIM_PROGRESS_BREAK);
            base_logf(BASE_LOG_ERROR, "%s: %s", t->opt.name, err);
            t->error = 1; /* stop: training on without checkpoints would waste the run */
            t->failed_step = t->step;
        }
    }
}

int optim_train_finish(OptimTrain *t) {
    if (t->finished) return 0;
    t->finished = true;
    /* several ranks: the agreed signal (a signal that came during the last step was never
     * shared; then this rank's own) */
    int sig = t->stop_signal ? t->stop_signal : (int)base_interrupt_signal;
    report(t, OPTIM_PROGRESS_END);
    int rc = t->error ? 1 : 0;
    /* not again for a step whose save just failed: the same state on the same disk, a second
     * message about the same file */
    if (t->saved_step != t->step && t->failed_step != t->step && t->opt.ckpt_path && t->is_main) {
        char err[1024];
        if (optim_train_save(t, err, sizeof err)) {
            base_logf(BASE_LOG_ERROR, "%s: %s", t->opt.name, err);
            rc = 1;
        }
    }
    if (t->metrics && fclose(t->metrics) != 0) rc = 1;
    t->metrics = NULL;
    base_interrupt_restore(&t->old_actions);
    free(t->resumed_config);
    t->resumed_config = NULL;
    if (sig) {
        if (!t->is_main) return rc ? rc : 128 + sig;
        bool ckpt = t->opt.ckpt_path && rc == 0;
        base_logf(BASE_LOG_INFO, "%s: %s at step %lld/%lld%s%s%s", t->opt.name,
                  sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", (long long)t->step,
                  (long long)t->opt.total_steps, ckpt ? "; checkpoint " : "", ckpt ? t->opt.ckpt_path : "",
                  ckpt ? "; continue with --resume" : "");
        return rc ? rc : 128 + sig; /* the shell's convention for death by signal */
    }
    if (t->is_main && t->opt.stop_after > 0 && t->step < t->opt.total_steps && rc == 0)
        base_logf(BASE_LOG_INFO, "%s: stopped after %lld steps at step %lld/%lld; continue with --resume", t->opt.name,
                (long long)(t->step - t->start_step), (long long)t->step, (long long)t->opt.total_steps);
    return rc;
}
