/* datasets/motion/rig.h — posing a procedural character's rig (datasets/geometry/procedural.h):
 * forward kinematics from local joint rotations and a root translation, linear blend skinning,
 * and the small quaternion helpers the motions use.
 *
 * Conventions:
 * - Every bone's rest frame is the world frame placed at its head (the procedural bones carry
 *   a head and a tail, no roll), so a bone's rest world rotation is the identity and a local
 *   rotation is expressed in world axes at rest: "rotate the upper arm by 30° about x" means
 *   about the world x axis as it was in the rest pose, carried along by the parent.
 * - Quaternions are (w, x, y, z), unit, acting on column vectors.
 * - FK: R_j = R_parent(j) · L_j (R_root = L_root); the head of bone j follows its parent rigidly:
 *   h_j(t) = h_p(t) + R_p (h_j − h_p), and the root's head is h_root + root_translation.
 *   So identity rotations and a zero translation give the rest pose exactly, and the distance
 *   between a bone's head and its parent's head never changes (bone lengths are preserved).
 * - The skinning transform of bone j maps rest positions to posed ones:
 *   S_j(x) = R_j (x − h_j) + h_j(t), stored row-major 4×4 (last row 0 0 0 1); LBS is
 *   x'_v = Σ_j w_vj S_j(x_v). */
#ifndef ANIMA_DATASETS_MOTION_RIG_H
#define ANIMA_DATASETS_MOTION_RIG_H

#include <stdint.h>

#include "datasets/geometry/procedural.h"

/* q = identity */
void ds_quat_identity(double q[4]);
/* rotation of angle (radians) about axis (normalized here; a zero axis gives the identity) */
void ds_quat_axis_angle(const double axis[3], double angle, double q[4]);
/* out = a · b (apply b first) */
void ds_quat_mul(const double a[4], const double b[4], double out[4]);
/* the unit quaternion of a rotation matrix (w ≥ 0) */
void ds_quat_from_mat3(const double R[9], double q[4]);
/* the smallest rotation taking direction a to direction b (both non-zero) */
void ds_quat_between(const double a[3], const double b[3], double q[4]);

#define DS_RIG_MAX_BONES 64

/* FK of nbones ≤ DS_RIG_MAX_BONES bones (parents first) for local rotations local (nbones × 4) and root translation
 * root (3): world rotations R (nbones × 9, may be NULL), posed heads (nbones × 3, may be NULL),
 * skinning transforms skin (nbones × 16, may be NULL). */
void ds_rig_fk(int nbones, const DsBone *bones, const double *local, const double root[3], double *R, double *heads,
               double *skin);
/* LBS: out (nv × 3) = Σ_j w_vj S_j(rest_v); weights nv × nbones. out may not alias rest. */
void ds_rig_lbs(int64_t nv, const float *rest, int nbones, const float *weights, const double *skin, float *out);

#endif
