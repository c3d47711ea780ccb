/* models/skelebones/joints.h — joints, the kinematic tree and the PartMM parts from a curve skeleton
 * and per-point skinning weights (GaussiAnimate §4.2, notes §6; issue 19 item 5).
 *
 * Steps:
 *  1. Node weights: each skeleton node gets the mean of the weights of the surface points that
 *     collapsed into it (SbSkeleton.corr); nodes no point collapsed into (vertices made by
 *     obtuse splits) take the mean of their already-weighted neighbors, repeated until all have
 *     one.
 *  2. The weight gradient along the curve, smoothed: for each edge of a chain (step 3), the net
 *     change g = ½‖W_b − W_a‖₁ · (h / arc(a, b)) between the chain nodes a, b half a window
 *     h = grad_len × bbox diagonal (0.05) before and after the edge's midpoint (clamped to the
 *     chain). ½‖ΔW‖₁ ∈ [0, 1] is the fraction of skinning weight that changes bones, so g > τ
 *     reads "more than τ of the weight moves to other bones within 5% of the diagonal"; with
 *     τ = 0.3 (the paper's threshold) this is dimensionless and independent of how densely the
 *     skeleton is sampled. Per edge (no window) the gradient of noisy weights dipped below τ
 *     inside one transition and gave several joints for one articulation (30 joints for the
 *     procedural quadruped's 18 with its own rig weights; 21 with the window).
 *  3. Spurs first: an end chain (end node to the first branch node) shorter than prune_rel ×
 *     diagonal (0.05) is a contraction artifact — rounded tips and surface bumps grow them — not
 *     a limb; it gets no joint and its nodes go to the branch node's joint. So is an end chain
 *     of any length leaving a fan (a node of degree ≥ 4) along which the weights never differ
 *     from the fan node's by τ (nothing articulates along it; flat or flared parts contract to
 *     such fans), repeatedly, until the fan is a plain fork.
 *     Joints: the curve is cut into chains between nodes of degree ≠ 2 (not counting spurs). Every end (degree 1) and
 *     branch node (degree ≥ 3) is a joint; inside a chain, each run of consecutive edges with
 *     g > τ gives one joint at the node where half of the run's weight change has happened. A
 *     gradient joint within merge_rel × diagonal (0.03) of a joint already placed is dropped
 *     (it is the same articulation seen twice).
 *  4. Tree: two joints are adjacent when a skeleton path joins them without passing another
 *     joint; the root is the joint nearest the centroid of the surface points; a depth-first
 *     search from it over that joint graph gives each joint its parent (with a cyclic skeleton
 *     the DFS simply keeps the first edge that reaches a joint, so the result is always a tree
 *     over the joints it reaches). Each node belongs to the joint nearest to it along the curve.
 *  5. Parts (PartMM's five overlapping parts): a limb is the path from a leaf joint up to, and
 *     including, the first joint with two or more children (or the root). The four limbs with the
 *     most joints (ties: longer path first) are parts 0–3 — for a quadruped the legs, for a
 *     humanoid arms and legs; part 4, the core, is every joint not inside a limb plus the limbs'
 *     attachment joints. Parts overlap in the attachment joints, so blended motions agree there.
 *     With fewer than four limbs there are that many limb parts plus the core.
 *
 * Sizes: W is nsurf × nbones (rows sum to 1); joints njoints × 3; part is nparts × njoints. */
#ifndef ANIMA_MODELS_SKELEBONES_JOINTS_H
#define ANIMA_MODELS_SKELEBONES_JOINTS_H

#include <stddef.h>
#include <stdint.h>

#include "models/skelebones/skeleton.h"

typedef struct {
    double tau;       /* gradient threshold (0.3) */
    double grad_len;  /* h as a fraction of the bbox diagonal (0.05) */
    double merge_rel; /* (0.03) */
    double prune_rel; /* spur length below which an end chain is ignored (0.05) */
    double merge_bone; /* a bone shorter than this × its neighbours' mean length is merged (1/3; 0: off) */
} SbJointOptions;

enum { SB_JOINT_END = 0, SB_JOINT_BRANCH = 1, SB_JOINT_GRADIENT = 2 };

typedef struct {
    int njoints, root, nparts;
    float *joints;       /* njoints × 3 */
    int32_t *parent;     /* njoints, −1 for the root */
    int32_t *joint_node; /* njoints: the skeleton node each joint sits on */
    uint8_t *kind;       /* njoints: SB_JOINT_* */
    int32_t *node_joint; /* nnodes */
    uint8_t *part;       /* nparts × njoints, 1 where the joint belongs to the part */
} SbRig;

void sb_joint_defaults(SbJointOptions *o);
/* W: s->nsurf × nbones. 0, or -1 with err set. */
int sb_rig_from_skeleton(const SbSkeleton *s, const float *W, int nbones, const SbJointOptions *o, SbRig *out,
                         char *err, size_t errlen);
/* As sb_rig_from_skeleton, with the bones' motion T (nframes × nbones × 12, rows [R | t] mapping
 * rest to frame, as SbSkin.transforms): inside each run of g > τ a joint goes at every change of
 * dominant bone along the chain, at the two bones' common rotation centre (the nearest chain
 * node to it), instead of one joint per run; see joints.c. T NULL: sb_rig_from_skeleton. */
int sb_rig_from_motion(const SbSkeleton *s, const float *W, int nbones, const double *T, int nframes,
                       const SbJointOptions *o, SbRig *out, char *err, size_t errlen);
void sb_rig_free(SbRig *r);

/* The found tree against a true rig's (issue 19 item 9: "tree topology compared with the true
 * rig"). Each tree is given as joints with parents (−1 for a root); joints closer than 1e-4 ×
 * diag are one joint (a rig's sibling bones often start at one point). Matching: (true, found)
 * pairs taken nearest first, each joint at most once, only within radius_rel × diag (0.05, the
 * joint-error target). Then
 *  - matched: true joints with a found partner;
 *  - edges: true bones (tree edges) whose two ends matched; kept: those whose partners the found
 *    tree joins by a path through no other matched joint — a found tree that puts extra,
 *    unmatched joints along a bone still keeps it, one that wires the limbs to the wrong place
 *    does not; it does not depend on which joint is the root;
 *  - ends / branches: joints of tree degree 1 / ≥ 3 in each tree (limbs and forks). */
typedef struct {
    int true_joints, found_joints, matched;
    int edges, kept;
    int true_ends, found_ends, true_branches, found_branches;
} SbTreeCompare;

/* 0, or -1 on allocation failure. */
int sb_tree_compare(const float *tj, const int32_t *tpar, int nt, const float *fj, const int32_t *fpar, int nf,
                    double diag, double radius_rel, SbTreeCompare *out);

#endif
