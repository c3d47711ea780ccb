/* datasets/mesh/gltf.h — glTF 2.0 binary (.glb) output: one triangle mesh (or point cloud) with
 * vertex colors, optionally skinned (a joint tree, inverse bind matrices, the 4 largest weights
 * of each vertex renormalized, rotation/translation channels per joint) or carrying a baked
 * vertex animation (morph targets, one per frame, their weights animated). The JSON is built
 * with cJSON, the binary chunk in memory; the file goes to a temporary name and is renamed,
 * every write checked (base/h5file.h's policy for every writer). Layout choices: docs/export.md.
 *
 * Frames: glTF is right-handed, +y up, metres, quaternions (x, y, z, w). anima's data are y up
 * already and are written as they are; callers convert quaternions from (w, x, y, z). */
#ifndef ANIMA_DATASETS_GLTF_H
#define ANIMA_DATASETS_GLTF_H

#include <stddef.h>
#include <stdint.h>

typedef struct DsGltfMesh_ {
    int64_t nv, nf;
    const float *pos;     /* nv × 3 rest (bind) positions */
    const float *color;   /* nv × 3 in [0, 1] (clamped), or NULL */
    const int32_t *faces; /* nf × 3 triangles, or NULL with nf = 0: a point cloud (mode POINTS) */
    const char *name;     /* mesh/node name, or NULL */

    /* a skin (njoints > 0): joints are nodes, parents first (parents[j] < j, −1 a root) */
    int njoints;
    const int32_t *parents;          /* njoints */
    const char *const *joint_names;  /* njoints, or NULL ("joint_<j>") */
    const float *weights;            /* nv × njoints (any sign/scale; the 4 largest positive ones are kept
                                        and renormalized; a vertex with none gets joint 0) */
    const float *inverse_bind;       /* njoints × 16, column-major (glTF's order) */
    const float *joint_t, *joint_r;  /* njoints × 3 rest translations, njoints × 4 rotations (x, y, z, w),
                                        local to the parent; NULL: zero / identity */

    /* animation: nframes ≥ 1 frames at fps (> 0), times k / fps */
    int nframes;
    double fps;
    /* skinned: per-frame local joint transforms (nframes × njoints × 3 and × 4); a channel is
     * written for every joint whose value changes over the frames (at least one channel) */
    const float *anim_t, *anim_r;
    /* unskinned: per-frame positions (nframes × nv × 3) baked as morph targets (frame k's
     * target holds frame k − pos; weights one-hot at frame k, LINEAR in between) */
    const float *frames;
} DsGltfMesh;

/* Writes m to path (.glb). 0, or -1 with err naming the path (bad shapes, non-finite values,
 * faces out of range, write failures). */
int ds_gltf_write(const char *path, const DsGltfMesh *m, char *err, size_t errlen);

/* The same GLB in memory (malloc'd into *out, *size bytes): the unit tests read it back. */
int ds_gltf_encode(const DsGltfMesh *m, uint8_t **out, size_t *size, char *err, size_t errlen);

/* A column-major 4×4 matrix from a row-major 3×4 [R | T] (or a row-major 4×4's top rows). */
void ds_gltf_mat_from_rows(const double *rows, float out[16]);

#endif
