/* optim/train.h — the parts of a training loop every command repeats: progress reported to a
 * callback (tools/ draws it with base/progress.h; the loop draws nothing; warnings and stop
 * messages go to base/log.h's sink), a JSONL metrics log, SIGINT / SIGTERM turned into "finish
 * this step, checkpoint, exit 128+signal", periodic and final checkpoints (optim/checkpoint.h),
 * `--resume` that continues bit-identically, and the data order as a pure function of (seed,
 * step), so a resumed run draws the same minibatches.
 *
 *   OptimTrain tl;
 *   if (optim_train_init(&tl, &opts, &params, &opt, rng, err, sizeof err)) ...exit 1/2
 *   while (optim_train_next(&tl)) {           // false when done or interrupted
 *       TensorScope *s = tensor_scope_begin();
 *       ... draw from tl.rng, batch = optim_data_order(seed, tl.step, ...) ...
 *       optim_train_step_end(&tl, loss, lr, 1, &(OptimMetric){"grad_norm", gn});
 *       tensor_scope_end(s);
 *   }
 *   return optim_train_finish(&tl);           // 0, 128+signal, or 1 on a write error
 *
 * Bit-identical resume: everything a step reads is either in the checkpoint (parameters,
 * optimizer moments and step, the loop's TensorRng with its offset, the step count) or a pure
 * function of the config and the step (data, minibatch order, learning rate). */
#ifndef ANIMA_OPTIM_TRAIN_H
#define ANIMA_OPTIM_TRAIN_H

#include <signal.h>
#include <stdio.h>

#include "base/interrupt.h"
#include "checkpoint.h"
#include "comm.h"

/* What the loop tells its progress callback, and when. */
typedef enum {
    OPTIM_PROGRESS_BEGIN, /* end of optim_train_init: the run's clock starts at step */
    OPTIM_PROGRESS_STEP,  /* after every step */
    OPTIM_PROGRESS_BREAK, /* a message follows (base/log.h): end a line drawn in place */
    OPTIM_PROGRESS_END,   /* optim_train_finish, before its messages: the last redraw */
} OptimProgressEvent;

typedef struct {
    OptimProgressEvent event;
    const char *name;    /* the options' name */
    int64_t step;        /* steps completed */
    int64_t start_step;  /* where this run began */
    int64_t total_steps;
    int64_t log_every;   /* the JSONL cadence (≥ 1): the cadence of plain progress lines */
    double loss, lr;     /* the last step's (0 before any) */
} OptimProgress;

typedef void (*OptimProgressFn)(const OptimProgress *p, void *user);

typedef struct {
    const char *name;          /* "anima fit": prefixes messages */
    int64_t total_steps;       /* the run ends when step reaches it */
    int64_t log_every;         /* JSONL + plain progress line every N steps and the last (≥ 1) */
    int64_t ckpt_every;        /* checkpoint every N steps (0: only at the end / on a signal) */
    const char *ckpt_path;     /* NULL: never checkpoint (and no resume) */
    const char *metrics_path;  /* NULL: no JSONL log */
    const char *config_json;   /* stored in every checkpoint (may be NULL) */
    bool resume;               /* load ckpt_path first (strict) and continue from its step */
    OptimProgressFn progress;  /* NULL: no progress reported; called on rank 0 only */
    void *progress_user;       /* passed to progress */
    int64_t stop_after;        /* > 0: stop like on a signal after this many steps of this run,
                                  but finish with 0 (time-limited jobs, tests) */
    OptimComm *comm;           /* NULL (or one rank): a single process. Several ranks: every rank
                                  runs the loop with the same options; only rank 0 reports, writes
                                  the log and checkpoints; every rank reads the checkpoint on
                                  resume; a signal, or a failed write on rank 0, stops every rank
                                  on the same step (optim_train_next is collective then). */
} OptimTrainOptions;

/* An extra field of a JSONL line. Each line: {"step": steps completed, "loss", "lr", "time":
 * seconds since this run (process) started, then the extras}; non-finite values are null. */
typedef struct {
    const char *name;
    double value;
} OptimMetric;

typedef struct {
    OptimTrainOptions opt;
    NnParams *params;
    Optim *optim;       /* may be NULL */
    TensorRng rng;      /* the loop's generator: draw from it only, it is checkpointed */
    int64_t step;       /* steps completed (the next step's index, counting from 0) */
    int64_t start_step; /* where this run began (> 0 after a resume) */
    char *resumed_config; /* the config JSON stored in the resumed checkpoint (or NULL) */
    /* internal */
    FILE *metrics;
    bool finished;
    int64_t saved_step; /* step of the last checkpoint written (-1: none) */
    int64_t failed_step; /* step whose checkpoint could not be written (-1: none): not retried */
    double t_start;
    double last_loss, last_lr;
    int error;          /* a checkpoint or log write failed: finish returns 1 */
    bool is_main;       /* rank 0 (or no communicator): the rank that prints and writes */
    int stop_signal;    /* the signal every rank agreed to stop on (several ranks), 0 if none */
    BaseInterruptSaved old_actions; /* the SIGINT and SIGTERM actions to restore */
} OptimTrain;

/* Opens the log, installs the signal handlers and, with opt->resume, loads the checkpoint into
 * p, o and the rng. 0, or -1 with a message naming the file in err (nothing installed then).
 * With several ranks it is collective and fails on every rank when it fails on any: err then
 * holds the rank's own message, or (rank 0) a note that others failed, or (others) "". */
int optim_train_init(OptimTrain *t, const OptimTrainOptions *opt, NnParams *p, Optim *o, TensorRng rng, char *err,
                     size_t errlen);
/* True while a step should run: step < total, no signal seen, stop_after not reached. With
 * several ranks every rank must call it once per step (it all-reduces the stop flags). */
bool optim_train_next(OptimTrain *t);
/* Closes a step: step++, logs, reports progress, checkpoints when due. extra may be NULL. */
void optim_train_step_end(OptimTrain *t, double loss, double lr, int nextra, const OptimMetric *extra);
/* Final checkpoint (unless this step's is written), closes the log, restores the handlers.
 * Returns the process exit status: 0 done (or stop_after), 128+signal when interrupted, 1 when
 * a checkpoint or log write failed (the message went to base/log.h's sink). */
int optim_train_finish(OptimTrain *t);
/* The signal that interrupted the loop, 0 if none. */
int optim_train_signal(void);
/* Write a checkpoint of the current state now (atomically); 0 or -1 with err. */
int optim_train_save(OptimTrain *t, char *err, size_t errlen);

/* The sample indices of minibatch `step` over a dataset of n samples: epochs of a fresh
 * permutation (Fisher–Yates with Philox keyed by (seed, epoch)), cut into batches that wrap
 * across epoch ends. A pure function of its arguments, so a resumed run sees the same data. */
void optim_data_order(uint64_t seed, int64_t step, int64_t n, int64_t batch, int64_t *out);

#endif
