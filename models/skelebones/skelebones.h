/* models/skelebones/skelebones.h — the skinning-decomposition pipeline on trajectories
 * (traj.h): LBG-VQ clusters (cluster.h) → SSDR (ssdr.h), and its files:
 * - rig.h5: rest/points (N × 3), bones/labels (N, the LBG-VQ rigid labels), bones/weights (N × B,
 *   ≤ K non-zeros per row, rows summing to 1), bones/fitted (N, 1 where the point took part in
 *   the fit; only when some did not: SbOptions.min_opacity), bones/transforms (F × B × 3 × 4: rest → frame t,
 *   [R | T], row-major), ssdr/rmse (iterations + 1), attributes: producer, source, frames,
 *   bones, influences, rmse, cluster_rmse, seconds_cluster, seconds_ssdr, command, units
 *   (those of the input positions); faces (T × 3) when the input has them; with IK: ik/rest_joints
 *   (J × 3), ik/parents (J), ik/rotations (F × J × 4, local, w x y z), ik/translation (F × 3),
 *   ik/joints (F × J × 3, FK positions), ik/loss (F); with the skeleton stage (rigging.h):
 *   skeleton/nodes (M × 3), skeleton/edges (E × 2), skeleton/corr (the node of each vertex of the
 *   mesh it was taken of), skeleton/node_joint (M), joints/positions (J × 3), joints/parents (J,
 *   parents first, −1 the root), joints/node, joints/kind (end, branch, gradient), joints/parts
 *   (P × J, 1 where the joint belongs to the part), attributes joints, joint errors, timings;
 * - a PLY of the rest shape colored by bone (each point the weight-blend of its bones' colors). */
#ifndef ANIMA_MODELS_SKELEBONES_SKELEBONES_H
#define ANIMA_MODELS_SKELEBONES_SKELEBONES_H

#include <stddef.h>
#include <stdint.h>

#include "models/skelebones/cluster.h"
#include "models/skelebones/ik.h"
#include "models/skelebones/ssdr.h"
#include "models/skelebones/traj.h"

typedef struct {
    SbClusterOptions cluster;
    SbSsdrOptions ssdr;
    int random_init;      /* 1: sb_cluster_random instead of LBG-VQ (the ablation) */
    uint64_t seed;        /* of the random start */
    double min_opacity;   /* points whose opacity (SbTraj.opacity) is below this take no part in the
                             clusters, the bones, the skeleton's shape or the IK; they get weights for
                             the bones the others found (sb_ssdr_weights) (0: every point fits). A
                             nearly transparent Gaussian is barely constrained by the images it was
                             fitted to, so its trajectory is noise the bones should not follow; on
                             the repertoire fits 0.2 helped some rigs and hurt others (docs/
                             gaussianimate.md), so it is not the default */
} SbOptions;

void sb_options_defaults(SbOptions *o);

typedef struct {
    SbClusters clusters;
    SbSkin skin;
    double seconds_cluster, seconds_ssdr;
    double true_rmse; /* the source's own rig (LBS of its weights and transforms) on these frames; −1 without one */
    uint8_t *fitted;  /* N: 1 for the points the clusters and bones were fitted to (min_opacity), or
                         NULL when all were; the rig stage (rigging.h) takes its shape and IK from them */
    int64_t nfitted;  /* how many (N when fitted is NULL) */
    /* IK, when run (ik.njoints > 0): the tree it ran on (rest joints J × 3, parents J) */
    SbIkResult ik;
    double *ik_rest;
    int32_t *ik_parents;
} SbResult;

/* Clusters and decomposes t (with o->min_opacity and t->opacity: its opaque points, the others
 * then weighted to the bones found; the skin's rmse is over the fitted points). 0, or -1 with err
 * (also when fewer than 2 × the bones' points are opaque enough). */
int sb_run(const SbTraj *t, const SbOptions *o, SbResult *r, char *err, size_t errlen);
void sb_result_free(SbResult *r);

/* IK on the source's own tree (gt.h5 inputs: true_parents, true_joints, true_transforms): rest
 * joints from frame 0 (x_j = R_jᵀ(h_j − T_j)), each frame's true joints as its skeleton nodes,
 * at most max_points of the points (evenly strided) with the true weights. Validates the IK on
 * real rigs until the skeleton stage supplies trees; fills r->ik, r->ik_rest, r->ik_parents and
 * the mean FK-joint error (*joint_err, input units). 0, or -1 with err (no true rig). */
int sb_run_ik_true_tree(const SbTraj *t, const SbIkOptions *o, int64_t max_points, SbResult *r, double *joint_err,
                        char *err, size_t errlen);

struct SbRigResult; /* rigging.h */
/* rig.h5 as above (command: recorded, may be NULL); with g (may be NULL) also the skeleton, joints,
 * tree and parts (rigging.h, sb_rig_h5_write). 0, or -1 with err. */
int sb_rig_write(const char *path, const SbTraj *t, const SbResult *r, const struct SbRigResult *g, const char *command,
                 char *err, size_t errlen);
/* The rest shape (with the input's faces, if any) colored by bone, binary PLY. 0, or -1 with err. */
int sb_bones_ply(const char *path, const SbTraj *t, const SbResult *r, char *err, size_t errlen);
/* The rest shape colored by bone rendered to a size × size PNG (needs faces: -1 without), seen
 * from the front (+z) and a little above, y up. 0, or -1 with err. */
int sb_bones_png(const char *path, const SbTraj *t, const SbResult *r, int size, char *err, size_t errlen);
/* The color of bone j of B (distinct hues by the golden ratio), rgb in [0, 1]. */
void sb_bone_color(int j, float rgb[3]);
/* Each of N points' color (N × 3 into rgb): its weights (N × B, B ≤ SB_MAX_BONES) blending the
 * bones' colors (bones.ply, bones.png, `anima export` of a rig.h5). */
void sb_bone_colors(const float *weights, int64_t N, int B, float *rgb);

#endif
