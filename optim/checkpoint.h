/* optim/checkpoint.h — HDF5 checkpoints (libhdf5), readable with h5py:
 *   /params/<dotted.name>            one dataset per parameter (PyTorch state_dict names)
 *   /optim/exp_avg/<dotted.name>     optimizer state per parameter (when an optimizer is saved)
 *   /optim/exp_avg_sq/<dotted.name>
 *   attributes on /: format, step, rng_seed, rng_stream, rng_offset, config (the JSON text);
 *   on /optim: kind, step.
 * A save writes "<path>.tmp-<pid>", flushes it to disk and renames it over <path>, so a crash
 * or kill mid-save never destroys the previous checkpoint (temporaries of dead writers are
 * removed by the next save). Files use the HDF5 1.10 format with checksummed metadata and
 * Fletcher-32 on every non-empty dataset, so a damaged file fails to load with an error. A load
 * that fails changes nothing in the model or optimizer. */
#ifndef ANIMA_OPTIM_CHECKPOINT_H
#define ANIMA_OPTIM_CHECKPOINT_H

#include <stddef.h>

#include "optim.h"

typedef struct {
    int64_t step;
    TensorRng rng;
    char *config_json; /* save: may be NULL; load: malloc'd copy or NULL (free it) */
} OptimCheckpointMeta;

/* 0 on success; -1 with a message naming the file and the problem in err. o may be NULL. */
int optim_checkpoint_save(const char *path, const NnParams *p, const Optim *o, const OptimCheckpointMeta *meta,
                          char *err, size_t errlen);

/* Loads into p (and o when given and the file has optimizer state). Every name, shape and
 * dtype is checked first; strict mode refuses the whole load when any parameter is missing,
 * unexpected or mismatched, with one message listing all of them. Non-strict mode loads what
 * matches and leaves the list in err (returns 0). meta may be NULL. */
int optim_checkpoint_load(const char *path, NnParams *p, Optim *o, bool strict, OptimCheckpointMeta *meta,
                          char *err, size_t errlen);

#endif
