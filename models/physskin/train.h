/* models/physskin/train.h — PISSL training (PhysSkin++ §III-C, §IV-A): one step's losses from a
 * batch, and the whole loop behind `anima physskin train` (optim/train.h: progress, JSONL,
 * HDF5 checkpoints, --resume; optim/comm.h: under mpirun the shapes are sharded over the
 * ranks and the per-loss gradients averaged before they are combined). */
#ifndef ANIMA_MODELS_PHYSSKIN_TRAIN_H
#define ANIMA_MODELS_PHYSSKIN_TRAIN_H

#include "data.h"
#include "losses.h"
#include "model.h"
#include "optim/train.h"

/* encoder → handles → W, ∇W at batch->x (by c->loss.grad) → PISSL terms */
void ps_step_losses(const PsModel *m, const PsBatch *b, const PsConfig *c, PsLosses *out);

/* Memory a training run needs, estimated from the config before anything is allocated (bytes):
 * a step's tensors for B shapes (forward activations the graph keeps, their gradients and the
 * temporaries: counted per layer, times a factor measured on the tiny and small presets), the
 * parameters with their gradient and AdamW moments, and nshapes prepared shapes. */
typedef struct {
    int64_t step, params, data, total;
} PsMemEstimate;
PsMemEstimate ps_train_memory(const PsConfig *c, int64_t B, int64_t nshapes);

typedef struct {
    const PsConfig *cfg;
    const char *cfg_json;   /* stored in checkpoints */
    const char *data;       /* --data: a cache directory or procedural:<categories> */
    const char *out_dir;    /* ckpt.h5 and metrics.jsonl go here (created by the caller) */
    bool resume;
    OptimProgressFn progress; /* optim/train.h's callback (NULL: quiet), with its user pointer */
    void *progress_user;
    int64_t stop_after;
    PsDataProgressFn data_progress; /* preparing the data (rank 0's shard; NULL: quiet), with its user */
    void *data_progress_user;
    /* train on the CUDA device: the parameters are initialized on the host (the same values as a
     * CPU run) and moved (nn_params_move); batches, losses, gradients and the optimizer live on
     * the device; several ranks then reduce over NCCL. The caller checks a device exists. */
    bool cuda;
} PsTrainArgs;

/* Runs the loop; returns the process exit status. Messages (errors, notes, "resuming") go to
 * base/log.h's sink, prefixed "anima physskin train"; the status lines around the steps ("ready
 * in", "done at step") only when a progress callback is installed: they belong to the display. */
int ps_train(const PsTrainArgs *a);

#endif
