/* tools/cmd_animate_phys.h — `anima animate --physics CONFIG` (tools/cmd_animate_phys.c):
 * PhysSkin secondary motion on top of a PartMM animation. */
#ifndef ANIMA_CMD_ANIMATE_PHYS_H
#define ANIMA_CMD_ANIMATE_PHYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The animation's Q poses of the rig (rig_path: its rest mesh and weights) as bone transforms tb
 * (Q × B × 12, rest → frame, [R | T] row-major, frames 1/fps apart) prescribe u_r(t) (LBS with the
 * rig's weights); the rig mesh's PhysSkin fields (the config's checkpoint) add the complementary
 * response B z (sim/rig_lbs.h). The n Gaussians with rest centers rest (n × 3) and posed centers
 * pos (Q × n × 3, the animation's own: X + u_r) get B z at their rest centers added in place, so
 * pos stays the animation's output wherever z = 0. config: a JSON file of the keys below (NULL or
 * "": the defaults); out: the folder for physics.json and kinetic.png. Prints a summary line on
 * stdout (progress: timings on stderr). 0, or -1 with err. */
int cmd_animate_physics(const char *config, const char *rig_path, int Q, int B, const float *tb, double fps, int64_t n,
                        const float *rest, float *pos, const char *out, bool progress, char *err, size_t errlen);

#endif
