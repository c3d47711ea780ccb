/* models/physskin/eval.h — evaluation of trained skinning fields (PhysSkin++ §IV-B, §IV-C;
 * docs/physskin.md §5): the three skinning-matrix metrics over held-out shapes for a
 * checkpoint, its ablations and two baselines, as one markdown table (`anima physskin eval`).
 *
 * Baselines:
 *  - per-object optimization (baseline.c): the same PISSL losses and combination (the
 *    checkpoint's loss section, ConFIG or sum) minimized for one shape from scratch by a small
 *    MLP, Fourier features → MLP → m weights (Simplicits, Modi et al. 2024, trains one such
 *    field per object); its time per shape is training time;
 *  - the procedural rig weights each procedural shape ships with (datasets/geometry/procedural.h),
 *    nv × nbones (nbones varies with the shape, so K in the metrics is the bone count).
 *
 * Held-out shapes:
 *  - "procedural[:a,b,...]": `anima physskin train --data procedural...` trains on corpus
 *    indices g = 0..data.shapes−1 with seed c.seed·1000003 + g and category names[g % ncat]
 *    (data.c). Evaluation continues that corpus past its end, g = data.shapes + i, so every
 *    seed lies outside the training range; ps_eval checks this against every checkpoint it
 *    evaluates and refuses a checkpoint whose training range covers an evaluation seed.
 *  - "real:DIR": every mesh file of DIR (e.g. data/real after datasets/fetch-real.sh; never in
 *    the procedural training data), sorted by name; files that fail to load or preprocess, or
 *    have fewer than 4·m vertices (the metrics need N ≫ K), are skipped (PS_EVAL_SKIPPED).
 *  - DIR or FILE.h5 from `anima dataset make`: DIR/test.h5 (the held-out split; training reads
 *    train.h5), else DIR/real.h5; rig weights when the cache stores them.
 * Every metric is taken at the mesh vertices of the normalized shape, as `anima physskin skin`
 * reports it. */
#ifndef ANIMA_MODELS_PHYSSKIN_EVAL_H
#define ANIMA_MODELS_PHYSSKIN_EVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "data.h"
#include "infer.h"

/* ---- per-object optimization baseline (baseline.c) ------------------------------------------ */

typedef struct {
    int64_t steps;   /* optimizer steps per shape (the fixed budget) */
    int64_t hidden;  /* MLP width */
    int64_t layers;  /* hidden layers */
    int n_freqs;     /* Fourier frequencies of the input (0: the raw coordinates) */
    double lr;       /* Adam peak rate; cosine decay to lr/10 over the budget */
    uint64_t seed;
} PsBaselineOptions;

/* steps 300, hidden 64, layers 3, n_freqs 4, lr 1e-2, seed 0 */
PsBaselineOptions ps_baseline_defaults(void);

/* Trains the baseline field on shape s with c's losses (loss.*), batch sizes (data.n_cubature,
 * data.n_z) and handle count (model.handles), then writes W at the nv points x (normalized
 * frame) into w (nv × m, row-major). loss (steps values, may be NULL) gets the weighted total
 * loss of every step; *train_s (may be NULL) the wall time of the training loop alone. */
void ps_baseline_fit(const PsShape *s, const PsConfig *c, const PsBaselineOptions *o, const float *x, int64_t nv,
                     float *w, double *loss, double *train_s);

/* ---- evaluation ----------------------------------------------------------------------------- */

/* What ps_eval tells its progress callback as it goes (the numbers; tools/ formats them). */
typedef enum {
    PS_EVAL_SKIPPED, /* real:DIR: a file left out (unreadable, or too few vertices): file, reason */
    PS_EVAL_READY,   /* the shapes are loaded: shapes, min/max_vertices, seconds (loading) */
    PS_EVAL_SHAPE,   /* one method on one shape: method, shape, orth, cond, balance, seconds */
} PsEvalEvent;

typedef struct {
    PsEvalEvent event;
    const char *file, *reason;           /* SKIPPED: the file's name in the folder, why */
    int64_t shapes, min_vertices, max_vertices; /* READY */
    const char *method, *shape;          /* SHAPE: the row ("per-object MLP" for the baseline) */
    bool training_time;                  /* SHAPE: seconds is the baseline's training, not inference */
    double orth, cond, balance, seconds;
} PsEvalProgress;

typedef void (*PsEvalProgressFn)(const PsEvalProgress *p, void *user);

typedef struct {
    const char *ckpt;
    const char *data;       /* procedural[:cats] | real:DIR | DIR | FILE.h5 */
    int64_t shapes;         /* at most this many shapes (procedural: exactly) */
    bool baselines;         /* per-object MLP and (when present) rig weights */
    PsBaselineOptions baseline;
    const char *ablations;  /* comma-separated checkpoints, or NULL */
    const char *json;       /* per-shape values and the summary, or NULL */
    PsEvalProgressFn progress; /* NULL: nothing reported (ps_eval prints nothing but the table) */
    void *progress_user;       /* passed to progress */
} PsEvalArgs;

/* Loads the shapes, evaluates every method and prints the markdown table (and the target
 * checks) to out. 0, or -1 with err. */
int ps_eval(const PsEvalArgs *a, FILE *out, char *err, size_t errlen);

/* mean and sample standard deviation of the finite values of v (n); returns how many were
 * finite (condition numbers are inf for rank-deficient matrices) */
int64_t ps_eval_mean_std(const double *v, int64_t n, double *mean, double *std);

#endif
