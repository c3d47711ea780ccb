/* models/partmm/rig.h — what PartMM and its baselines need from a Skelebones rig.h5
 * (models/skelebones/skelebones.h has the layout): the canonical points and their SSDR weights,
 * the bone transforms, the IK tree and its per-frame rotations, and the parts; plus the pieces
 * built on them:
 * - the rigid binding of each rest point to a joint (the joint whose rotation moves the nearest
 *   bone segment parent → child: the parent — skelebones' rigging.c binds its IK points the same
 *   way);
 * - each free-form bone's share in each part: a_bj = Σ_i w_ib [bind(i) = j], summed over the
 *   part's joints, so a bone whose skin straddles two parts is blended across them;
 * - novel poses of the held-out motion by IK (models/skelebones/ik.h) on a ground-truth mesh
 *   sequence only: the Chamfer targets of frame t are the rig's rest joints carried by rigid fits
 *   of the point groups bound to the joint and to its parent (each fit: Kabsch of the group's rest
 *   points onto their observed positions), the point term the observed points themselves;
 * - the skinning transforms of a joint pose S_j = [G_j | p_j − G_j x_j] (ik.h), LBS.
 * Sizes: N points, B bones, J joints, P parts, F frames; transforms 3 × 4 row-major [R | T], rest →
 * frame; quaternions w x y z. */
#ifndef ANIMA_MODELS_PARTMM_RIG_H
#define ANIMA_MODELS_PARTMM_RIG_H

#include <stddef.h>
#include <stdint.h>

#include "models/skelebones/ik.h"

typedef struct {
    int64_t n;
    int F, B, J, P;
    float *points;     /* N × 3 rest */
    float *weights;    /* N × B */
    float *tb;         /* F × B × 12 */
    double *rest;      /* J × 3 rest joints (ik/rest_joints) */
    int32_t *parents;  /* J */
    float *rot;        /* F × J × 4 (ik/rotations) */
    float *trans;      /* F × 3 (ik/translation) */
    uint8_t *parts;    /* P × J (joints/parts) */
} PmRig;

/* Reads rig.h5 (it needs the IK and the parts: anima skelebones without --no-skeleton/--no-ik).
 * 0, or -1 with err naming the file and the dataset. */
int pm_rig_load(const char *path, PmRig *r, char *err, size_t errlen);
void pm_rig_free(PmRig *r);

/* The joint each of the n points (n × 3) is bound to (out n). */
void pm_bind_points(int J, const double *rest, const int32_t *parents, int64_t n, const float *points, int32_t *out);
/* Each bone's share of each joint (B × J, rows summing to 1): a_bj = Σ_i w_ib [bind(i) = j],
 * normalized; a bone without weight: spread evenly. */
void pm_bone_joint_shares(int64_t n, int B, int J, const float *weights, const int32_t *bind, double *bone_joint);
/* bone_part (B × P, rows summing to 1; a bone no part drives: spread evenly) from the points'
 * weights (n × B) and binding. */
void pm_bone_parts(int64_t n, int B, int J, int P, const float *weights, const int32_t *bind, const uint8_t *parts,
                   double *bone_part);

/* Joint rotations (F × J × 4) and root translations (F × 3) of the rig's tree for F observed
 * frames of its points (observed F × N × 3, the same points in the same order as r->points), by
 * sb_ik_solve with o (NULL: its defaults) on at most max_points points. 0, or -1 with err. */
int pm_pose_from_points(const PmRig *r, int F, const float *observed, int64_t max_points, const SbIkOptions *o,
                        float *rot, float *trans, char *err, size_t errlen);

/* The same pose in closed form (partmm.ik = fit): each joint's global rotation is the rigid
 * (Kabsch) fit of the rest points bound to it onto their observed positions, a joint without 3
 * points of its own rigid with its parent; local rotations L_j = G_parentᵀ G_j, the root
 * translation from the root group's fit. The global optimum of each fit, so nearly equal inputs
 * give nearly equal poses — the iterative IK can settle in another basin for a weakly observed
 * twist (a hand turned by 167° between the held-out query and the database's keys). */
int pm_pose_by_fits(const PmRig *r, int F, const float *observed, float *rot, float *trans, char *err, size_t errlen);

/* S_j per frame (F × J × 12) of a pose sequence (rot F × J × 4, trans F × 3) on the tree. */
void pm_skin_transforms(int J, const double *rest, const int32_t *parents, int F, const float *rot, const float *trans,
                        float *out);
/* Bag-of-bones: bone b follows the joint nearest its weighted rest centroid (out B); then
 * T_b = S_joint(b). */
void pm_bone_joints(const PmRig *r, int32_t *out);
/* LBS of n rest points with weights (n × B) under one frame's transforms (B × 12) → out n × 3. */
void pm_lbs(int64_t n, int B, const float *rest, const float *weights, const float *tb, float *out);
/* pm_lbs of F frames: tb F × B × 12, out F × n × 3 */
void pm_lbs_frames(int F, int64_t n, int B, const float *rest, const float *weights, const float *tb, float *out);

#endif
