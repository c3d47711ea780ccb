/* models/gs4d/run.h — a gs4d run as files: its data (the views a config names, with the ground-truth
 * surface when the data has one), its products (RUN/trajectories.h5, RUN/renders/, the turntable)
 * and a finished run opened again (RUN/config.json + RUN/ckpt.h5) for evaluation or export.
 *
 * A run folder, as `anima gs4d fit --out RUN` writes it:
 *   config.json       the run's configuration (models/gs4d/config.h)
 *   ckpt.h5           parameters, Adam moments, step (optim/checkpoint.h)
 *   metrics.jsonl     one line per log step
 *   canonical.ply     the canonical set, standard 3DGS PLY (gs4d_export)
 *   trajectories.h5   every Gaussian at every frame (gs4d_write_trajectories)
 *   renders/          test_NNN.png, render | target per held-out view (gs4d_write_renders)
 *   turntable.gif|mp4 one orbit while time runs 0 → 1 (gs4d_write_turntable)
 *
 * The data: data.dir = a D-NeRF / nerfstudio folder (datasets/motion/dnerf.h; transforms_train.json
 * trains, the held-out views are transforms_val.json or transforms_test.json, each falling back to
 * the other; DIR/gt.h5, when present, is the ground truth, datasets/motion/bench.h), or
 * synthetic[:category] (models/gs4d/synth.h, always with ground truth). */
#ifndef ANIMA_MODELS_GS4D_RUN_H
#define ANIMA_MODELS_GS4D_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "models/gs4d/config.h"
#include "models/gs4d/gs4d.h"
#include "models/gs4d/synth.h"

/* The ground-truth surface, frame by frame (views into the data that owns it). */
typedef struct {
    int frames;
    const float *times;   /* frames */
    const float *verts;   /* frames × nv × 3 */
    int64_t nv, nf;
    const int32_t *faces; /* nf × 3 */
    const float *rest;    /* nv × 3: the rest (canonical) surface */
} Gs4dSurfaceSeq;

/* The views of a run's data. */
typedef struct {
    const Gs4dView *train, *test; /* training and held-out views */
    int n_train, n_test;
    const char *test_split;       /* "val", "test" (folders) or "held-out" (synthetic) */
    bool has_gt;
    Gs4dSurfaceSeq gt;            /* when has_gt */
    /* owned storage */
    Gs4dSynth synth;
    bool synthetic;
    DsDnerfSplit split[2];
    Gs4dView *views[2];
    DsMotionGt gt_file;
} Gs4dRunData;

/* Loads c->data.dir. prefer names the held-out split of a folder: "test" (every frame, what
 * evaluation reports) or "val" (every few frames, what fitting monitors and settings are chosen
 * on); the other is taken when it is absent. 0, or -1 with err. */
int gs4d_run_data_load(const Gs4dRunConfig *c, const char *prefer, Gs4dRunData *d, char *err, size_t errlen);
void gs4d_run_data_free(Gs4dRunData *d);
/* The distinct times of the training and held-out views, ascending, into *out (malloc'd);
 * returns how many. */
int gs4d_run_frame_times(const Gs4dRunData *d, double **out);

/* RUN/trajectories.h5: /times (F); /frames/{positions (F, N, 3), scales (F, N, 1|3), colors (F, N, 3),
 * opacities (F, N)}; /canonical/{the same at rest, (N, ...)}; activated values (scales exp'd,
 * colors rgb, opacities in [0, 1]); attributes producer, step, units. Written to a temporary name
 * and renamed, every write checked. 0, or -1 with err naming the file. */
int gs4d_write_trajectories(const char *path, const Gs4dModel *m, const double *times, int nf, char *err, size_t errlen);
/* DIR/test_NNN.png for every view of d: the render | the target, side by side, over white. */
int gs4d_write_renders(const char *dir, const Gs4dModel *m, const Gs4dData *d, char *err, size_t errlen);
/* A camera circling the scene once while time runs from 0 to 1, nframes frames, at d's cameras'
 * mean distance, 20° above their mean horizon (the mean of their image-up directions is taken as
 * the world's up), with the first camera's field of view; written as a GIF (gif_path) and/or an
 * MP4 (mp4_path), either may be NULL; 12.5 fps. */
int gs4d_write_turntable(const char *gif_path, const char *mp4_path, const Gs4dModel *m, const Gs4dData *d, int nframes,
                         char *err, size_t errlen);

/* A finished (or checkpointed) run opened again: its config, data, the views as Gs4dData and the
 * model at its checkpoint's step. Its tensors live in the caller's current tensor scope. */
typedef struct {
    Gs4dRunConfig cfg;
    Gs4dRunData data;
    Gs4dData train, test;
    Gs4dModel model;
    int64_t step;
} Gs4dRun;

/* Opens RUN (RUN/config.json, the data it names with held-out split `split` as for
 * gs4d_run_data_load, RUN/ckpt.h5). 0, or -1 with err naming the file; nothing to close then. */
int gs4d_run_open(const char *run, const char *split, Gs4dRun *r, char *err, size_t errlen);
void gs4d_run_close(Gs4dRun *r);

#endif
