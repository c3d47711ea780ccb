/* datasets/mesh/bvh.h — BVH motion capture (Biovision Hierarchy): the skeleton, its per-frame
 * channels, and forward kinematics to joint world transforms.
 *
 * Conventions (the ones the CMU files and Blender's importer use):
 * - A joint's local transform is T(offset + p) · R, where p is its position channels (zero
 *   when it has none) and R its rotation channels composed in the order CHANNELS lists them,
 *   as intrinsic rotations: for "Zrotation Xrotation Yrotation", R = Rz(z) · Rx(x) · Ry(y).
 *   Angles are in degrees; rotations are right-handed about the parent-frame axes.
 * - World = World(parent) · Local; matrices act on column vectors, stored row-major 4×4.
 * - "End Site" blocks become joints with no channels (end_site true), named "<parent>_end",
 *   so leaf bones have lengths too.
 * - Several ROOTs (rare) are all kept as roots (parent -1).
 * - "Frames: N" decides how many frames are read; whole frames after them are ignored (some
 *   exporters write one more than they declare), a partial one is an error. */
#ifndef ANIMA_DATASETS_BVH_H
#define ANIMA_DATASETS_BVH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { DS_BVH_XPOS, DS_BVH_YPOS, DS_BVH_ZPOS, DS_BVH_XROT, DS_BVH_YROT, DS_BVH_ZROT } DsBvhChannel;

typedef struct {
    char name[64];
    int parent;        /* index of the parent joint, -1 for a root; parents come before children */
    float offset[3];
    int nchan;         /* 0..6 */
    DsBvhChannel chan[6];
    int chan_start;    /* column of the first channel in a frame row */
    bool end_site;
} DsBvhJoint;

typedef struct {
    int njoints;
    DsBvhJoint *joints;
    int nchannels;     /* columns per frame */
    int64_t nframes;
    double frame_time; /* seconds */
    float *motion;     /* nframes × nchannels */
} DsBvh;

int ds_bvh_read(const char *path, DsBvh *b, char *err, size_t errlen);
/* The same on bytes in memory (fuzz harness); `name` names the source in messages. */
int ds_bvh_read_mem(const char *name, const uint8_t *data, size_t size, DsBvh *b, char *err, size_t errlen);
void ds_bvh_free(DsBvh *b);

/* World transforms of every joint at `frame` (0 <= frame < nframes; frame -1 gives the rest
 * pose, all channels zero): world[16·j ..] is joint j's row-major 4×4 matrix. Its last column
 * holds the joint's world position. */
void ds_bvh_pose(const DsBvh *b, int64_t frame, double *world);

#endif
