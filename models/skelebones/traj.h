/* models/skelebones/traj.h — point trajectories, the input of clustering and SSDR: F frames ×
 * N points × 3 and the rest (canonical) positions, from
 * - a trajectories HDF5: dataset "positions" (F × N × 3, any float type; another name may be
 *   given), optional "rest" (N × 3; absent: the first frame is the rest pose) and optional
 *   "faces" (T × 3 integers indexing the points) and optional "times" (F, each frame's time). `anima gs4d fit` output is read this way
 *   with the dataset of its per-frame Gaussian means;
 * - the motion benchmark's gt.h5 (datasets/motion/bench.h): vertices, rest, faces, and the true
 *   rig (weights, bone transforms) kept for evaluation;
 * - a folder of mesh frames (.obj/.ply/.off/.stl, taken in name order) sharing one connectivity:
 *   the first frame is the rest pose.
 * Every reader validates sizes and values (finite) and names the file in its errors. */
#ifndef ANIMA_MODELS_SKELEBONES_TRAJ_H
#define ANIMA_MODELS_SKELEBONES_TRAJ_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int nframes;
    int64_t npoints, nfaces;
    float *pos;      /* F × N × 3 */
    float *rest;     /* N × 3 */
    int32_t *faces;  /* T × 3, or NULL */
    /* the true rig, when the source has one (gt.h5); else true_bones = 0 and NULLs */
    int true_bones;
    float *true_weights;     /* N × B */
    double *true_transforms; /* F × B × 12 (rest → frame, [R | T]) */
    int32_t *true_parents;   /* B (−1: the root; parents first) */
    float *true_joints;      /* F × B × 3: each bone's head per frame */
    float *true_tails;       /* B × 3: each bone's tail at rest (gt.h5 rig/tails), or NULL */
    float *times;            /* F: each frame's time (gt.h5 times, a trajectories file's "times"), or NULL */
    float *opacity;          /* N: each point's opacity in [0, 1] (a gs4d run's canonical/opacities, a
                                trajectories file's "opacities"), or NULL: every point counts in full */
    char source[512];
} SbTraj;

#define SB_TRAJ_DATASET "positions"

/* dataset NULL: SB_TRAJ_DATASET. 0, or -1 with err. */
int sb_traj_read_h5(const char *path, const char *dataset, SbTraj *t, char *err, size_t errlen);
int sb_traj_read_gt(const char *path, SbTraj *t, char *err, size_t errlen);
int sb_traj_read_meshes(const char *dir, SbTraj *t, char *err, size_t errlen);
/* An animated, skinned model read through libassimp (glTF, FBX, Collada, .x, ...;
 * models/skelebones/traj_assimp.c): animation anim_index sampled at nframes evenly spaced times
 * over its duration, all meshes merged; rest = the static node hierarchy; the file's rig kept as
 * the true rig (weights, rest → frame transforms, bone heads per frame, parents). 0, or -1. */
int sb_traj_read_assimp(const char *path, int nframes, int anim_index, SbTraj *t, char *err, size_t errlen);
/* Writes positions, rest and (when present) faces in the layout sb_traj_read_h5 reads (temporary
 * name, renamed). 0, or -1 with err. */
int sb_traj_write_h5(const char *path, const SbTraj *t, char *err, size_t errlen);
/* Keeps the first nframes frames (1..F; the progressive runs); the true transforms follow. */
void sb_traj_keep_frames(SbTraj *t, int nframes);
void sb_traj_free(SbTraj *t);

#endif
