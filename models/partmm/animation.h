/* models/partmm/animation.h — DIR/animation.h5, what `anima animate` writes: the synthesized bone
 * transforms and the pose that drove them, and the database's keys (the IK of the rig's own
 * frames), so a rerun with other PartMM options can take both poses back instead of solving both
 * IKs again (--reuse-pose).
 *
 * Layout: bones/transforms (F, B, 3, 4) rest → frame [R | T]; pose/rotations (F, J, 4) w x y z,
 * pose/translation (F, 3); keys/rotations (FK, J, 4), keys/translation (FK, 3); attributes
 * producer, motion (what drove it: heldout, train, val or a BVH path), rig (its path), frames,
 * bones. */
#ifndef ANIMA_MODELS_PARTMM_ANIMATION_H
#define ANIMA_MODELS_PARTMM_ANIMATION_H

#include <stddef.h>

/* Written to a temporary name and renamed, every write checked. 0, or -1 with err naming the file. */
int pm_animation_write(const char *path, int F, int B, int J, const float *tb, const float *rot, const float *trans,
                       int FK, const float *krot, const float *ktrans, const char *motion, const char *rig, char *err,
                       size_t errlen);
/* The query pose (Q frames) and the keys (F frames) of a file written for the same motion. 0, or
 * -1 with err (another motion, other sizes, unreadable). */
int pm_animation_read_pose(const char *path, const char *motion, int Q, int F, int J, float *qrot, float *qtrans, float *krot,
                           float *ktrans, char *err, size_t errlen);

#endif
