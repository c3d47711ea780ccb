/* models/skelebones/rig_file.h — reading back the rig.h5 `anima skelebones` writes (its layout in
 * skelebones.h): the rest points, the SSDR weights and per-frame bone transforms, the faces when
 * the input had them. For consumers of a finished rig (`anima export`). */
#ifndef ANIMA_MODELS_SKELEBONES_RIG_FILE_H
#define ANIMA_MODELS_SKELEBONES_RIG_FILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int nframes, nbones;
    int64_t npoints, nfaces;
    float *rest;       /* N × 3 */
    float *weights;    /* N × B */
    float *transforms; /* F × B × 12: rest → frame t, [R | T] row-major */
    int32_t *faces;    /* T × 3, or NULL (nfaces 0) */
} SbRigFile;

/* The file's producer attribute starts with this. */
#define SB_RIG_PRODUCER "anima skelebones"

/* Reads and validates path (shapes agree, values finite, faces index points, 1..SB_MAX_BONES
 * bones). 0, or -1 with err naming the file and the dataset. */
int sb_rig_file_read(const char *path, SbRigFile *r, char *err, size_t errlen);
void sb_rig_file_free(SbRigFile *r);

struct DsGltfMesh_;
/* r as a skinned mesh for the glTF writer (datasets/mesh/gltf.h): the bones as joints under a
 * root joint (B + 1 joints), their transforms as channels at fps (≤ 0: 30), the points colored
 * by bone (sb_bone_colors). *g points into r and into *owned (free it after writing). 0 or -1. */
int sb_rig_file_gltf(const SbRigFile *r, double fps, struct DsGltfMesh_ *g, void **owned, char *err, size_t errlen);

#endif
