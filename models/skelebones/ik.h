/* models/skelebones/ik.h — per-frame inverse kinematics on a joint tree (issue 19 item 6), with
 * anima's autograd and Adam: for each frame, local joint rotations (unit quaternions, w x y z)
 * and a root translation minimizing
 *     Chamfer(FK joints, that frame's skeleton nodes) + λ · mean_i ‖Σ_j w_ij S_j(u_i) − v_i‖²,
 * where the Chamfer distance is the mean squared distance from each FK joint to its nearest node
 * plus from each node to its nearest FK joint, and S_j is the skinning transform of joint j.
 *
 * Conventions (those of datasets/motion/rig.h): a joint's rest frame is the world frame placed
 * at its rest position x_j; FK: G_j = G_parent(j) · L_j (G_root = L_root), the joint follows its
 * parent rigidly, p_j = p_parent + G_parent (x_j − x_parent), p_root = x_root + root
 * translation; S_j(x) = G_j (x − x_j) + p_j. Point weights bind points to the joint whose
 * rotation moves them (the bone starting at that joint). Frames are solved in order, each
 * starting from the previous frame's solution (the first from the rest pose). */
#ifndef ANIMA_MODELS_SKELEBONES_IK_H
#define ANIMA_MODELS_SKELEBONES_IK_H

#include <stddef.h>
#include <stdint.h>

#include "models/skelebones/ssdr.h"

#define SB_IK_MAX_JOINTS 64 /* the FK stacks the joints' tensors (tensor_stack takes at most 64) */

/* the kinematic tree the skeleton stage hands over (its joints and DFS parents) */
typedef struct {
    int njoints;
    const double *joints;   /* J × 3 rest positions */
    const int32_t *parents; /* J: −1 for the root; every parent comes before its children */
} SbTree;

typedef struct {
    int steps;     /* Adam steps per frame (default 150) */
    double lr;     /* Adam learning rate (default 0.03) */
    double lambda; /* the weight of the point term (default 1) */
    SbProgressFn progress; /* (user, frame, frames, final loss of that frame) */
    void *user;
    /* NULL (default): each frame starts from the previous frame's solution (the first from
     * rest); else each frame t starts from init_rotations[t] (J × 4) and init_translation[t] (3):
     * a refinement of a given pose, so the solution stays in that pose's basin */
    const float *init_rotations, *init_translation;
} SbIkOptions;

void sb_ik_defaults(SbIkOptions *o);

typedef struct {
    int nframes, njoints;
    double *rotations;   /* F × J × 4 local rotations (w, x, y, z), unit */
    double *translation; /* F × 3 root translations */
    double *positions;   /* F × J × 3 FK joint positions */
    double *loss;        /* F: the objective at the end of each frame */
} SbIkResult;

/* Solves F frames. nodes: the skeleton nodes of every frame, nodes_off (F + 1) offsets into
 * nodes (M_t × 3 each, M_t ≥ 1); points: N rest points (may be 0 with NULL arrays: joints
 * only), weights N × J, observed F × N × 3. 0, or -1 with err (bad tree, sizes). */
int sb_ik_solve(const SbTree *tree, int nframes, const double *nodes, const int64_t *nodes_off, int64_t npoints,
                const float *points, const float *weights, const float *observed, const SbIkOptions *o,
                SbIkResult *out, char *err, size_t errlen);
void sb_ik_result_free(SbIkResult *r);

/* FK alone (plain doubles): local rotations (J × 4), root translation (3) → joint positions (J × 3)
 * and global rotations (J × 9, row-major; may be NULL). */
void sb_fk(const SbTree *tree, const double *rotations, const double *translation, double *positions, double *global);

#endif
