/* datasets/motion/motion.h — motions of the procedural characters: per-frame local joint rotations
 * and a root translation for a rig of datasets/geometry/procedural.h (conventions in rig.h).
 *
 * Two sources:
 * - procedural gaits and gestures, functions of time in seconds written per category from the
 *   bone names procedural.c gives (humanoid walk and wave, quadruped walk and trot, bird flap
 *   and hop, snake slither and strike, lamp nod and hop), and for every category "sway" and
 *   "wiggle" (each bone swings about axes perpendicular to it) and "rest" (the rest pose);
 *   the seed varies periods (±10%), amplitudes (±15%) and the starting phase;
 * - "repertoire" (every category): the character's whole repertoire in one training motion,
 *   for motion matching (PartMM) whose database must span the poses a novel clip asks for.
 *   1.5 s segments joined by 0.3 s cross-fades (slerp of the local rotations, the root
 *   translation blended linearly); each round of segments shows every motion of the category
 *   but rest once, in a seed-shuffled order. A procedural segment draws its own period,
 *   amplitude and phase from the ranges above with a seed of its own (from seed and the
 *   segment's index, never seed or seed + 1, which the benchmark's plain motions use); a BVH
 *   segment (the humanoid: the CMU clips and the boxing capture) is a window at a seeded time
 *   of its file. Fair as a training motion for the benchmark's held-out clip: the held-out
 *   clip is the category's default held-out motion with seed + 1 (a parameter combination no
 *   segment draws), and for a BVH held-out clip (boxing) no window within 1 s of the clip's
 *   first 4 s (held-out clips up to 120 frames at 30 fps) is used. The repertoire is built
 *   from the generator's ranges and the files alone, never from the held-out frames; the
 *   held-out gait's kind is in it (a trot, a hop, boxing), as in the paper's training videos
 *   of an actor's repertoire, which are then driven by novel clips. "repertoire_unseen" is the
 *   same without the held-out motion's kind (no trot, hop, strike or boxing): a gait never
 *   shown, the harder test;
 * - CMU motion capture (BVH, datasets/mesh/bvh.h) retargeted onto the humanoid rig: named clips
 *   "cmu_01_01" (forward jumps), "cmu_01_03" (climbing, jumps), "boxing" from the folder of
 *   assimp's test models, or any BVH file by path whose joints carry the CMU or the
 *   Boxing_Toes names.
 *
 * Retargeting (rotations, not positions, so the rig keeps its own bone lengths): each rig bone
 * j is paired with a source joint s and a reference joint below it. A_j is the smallest
 * rotation taking the rig bone's rest direction (tail − head) onto the source segment's rest
 * direction; the rig bone's world rotation at frame t is R_j(t) = W_s(t) W_s(rest)ᵀ A_j, with W
 * the source joint's world rotation, so the bone points along the source segment and follows
 * its twist. Local rotations are R_parentᵀ R_j. The root translation is the source hips'
 * displacement scaled by the ratio of leg lengths, its height measured above the source's
 * ground (the 5th percentile over the file of the lowest joint) and put on the rig's ground
 * (its lowest joint at rest), its horizontal drift removed (the clip's mean), so the
 * character stays in the cameras' view. Source frames are resampled to the requested rate
 * (quaternion slerp of the retargeted local rotations between the two nearest frames).
 *
 * The pairing (bone j, source joint s, reference joint) comes from the built-in humanoid name
 * sets (CMU, Boxing_Toes), or from a mapping JSON (DsRetargetMap), any category then:
 *   { "hips": "Hips",                                   rig bone: source joint
 *     "spine": {"joint": "Spine1", "toward": "Neck1",   the reference joint below it
 *               "offset": [0, 0, 10]},                  degrees, a rest-offset rotation
 *     "source_up": "z" }                                 the source's up axis, "y" (default) or "z"
 * A plain string's reference joint is the source joint of the rig bone's first mapped child
 * bone, else the source joint's first child in the BVH. The offset O (world axes at rest,
 * Rz·Ry·Rx of the three angles) turns the rig bone from the source segment's rest direction:
 * R_j(t) = W_s(t) W_s(rest)ᵀ O A_j. With "source_up": "z" every source world transform is
 * first turned by −90° about x (z up → y up). The rig's root bone must be mapped (it carries
 * the root translation); bones left out turn with their parents. The root translation's scale
 * is the ratio of leg lengths when the rig has leg_l_upper and leg_l_lower mapped, else the
 * ratio of the summed lengths of the mapped bones to their source segments. */
#ifndef ANIMA_DATASETS_MOTION_MOTION_H
#define ANIMA_DATASETS_MOTION_MOTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/geometry/procedural.h"
#include "datasets/mesh/bvh.h"
#include "datasets/motion/rig.h"

typedef struct {
    char name[64];    /* "walk", "cmu_01_01", or the BVH file's path */
    char source[512]; /* "procedural", or the BVH file read */
    int nframes;
    double fps;
    int nbones;
    double *local;    /* nframes × nbones × 4: local rotations (w, x, y, z) */
    double *root;     /* nframes × 3: root translation from rest */
    int64_t src_start; /* BVH: the first source frame used (-1 for procedural) */
} DsMotion;

typedef struct {
    double fps;          /* frames per second of the output (> 0) */
    const char *bvh_dir; /* the folder of the named clips; NULL: DS_MOTION_BVH_DIR */
    int64_t bvh_start;   /* the clip's first source frame; -1: the named clip's default window (0 for paths) */
    const char *map;     /* a mapping JSON for BVH clips (above); NULL or "": the built-in humanoid names */
} DsMotionOptions;

typedef struct {
    char bone[64];    /* the rig bone */
    char joint[64];   /* its source joint */
    char toward[64];  /* the reference joint below it; "": inferred (above) */
    double offset[4]; /* rest-offset rotation (quaternion w, x, y, z) */
} DsRetargetPair;

typedef struct {
    int npairs;
    DsRetargetPair pairs[DS_RIG_MAX_BONES];
    double up[9];     /* source world axes → rig world axes (row-major) */
    char source[512]; /* the file, for messages */
} DsRetargetMap;

/* A mapping JSON (text from `source`, or the file at path); 0, or -1 with err naming the
 * source and the key (not an object, a value neither a string nor an object, unknown keys,
 * empty names, an offset not three finite numbers, more than DS_RIG_MAX_BONES bones). */
int ds_retarget_map_parse(const char *text, const char *source, DsRetargetMap *map, char *err, size_t errlen);
int ds_retarget_map_load(const char *path, DsRetargetMap *map, char *err, size_t errlen);

#define DS_MOTION_BVH_DIR "/usr/share/assimp/models/BVH"

/* The motions a category has (NULL-terminated; count may be NULL); NULL for an unknown one. */
const char *const *ds_motion_names(const char *category, int *count);
/* The benchmark's default training (heldout false) or held-out motion of a category. */
const char *ds_motion_default(const char *category, bool heldout);

/* nframes (≥ 1) frames of motion `name` for shape's rig; seed varies the procedural ones. 0, or
 * -1 with err (unknown motion for the category, unreadable BVH, a BVH whose joints cannot be
 * mapped, a clip too short). */
int ds_motion_make(const DsProceduralShape *shape, const char *name, int nframes, uint64_t seed,
                   const DsMotionOptions *opt, DsMotion *out, char *err, size_t errlen);
/* The retargeting alone: frames start, start + step_s, ... (step_s in source frames, > 0,
 * fractional steps interpolate) of bvh onto shape, by map (NULL: the built-in names, a
 * humanoid shape). A mapped bone the rig lacks, a joint or reference the BVH lacks, or an
 * unmapped root bone are errors naming the bone and the joint. */
int ds_motion_retarget_bvh(const DsBvh *bvh, const char *bvh_name, double start, double step_s, int nframes,
                           const DsProceduralShape *shape, const DsRetargetMap *map, DsMotion *out, char *err,
                           size_t errlen);
/* Whether ds_motion_make reads `name` from a BVH (a named clip or a .bvh path). */
bool ds_motion_is_bvh(const char *name);
void ds_motion_free(DsMotion *m);

#endif
