/* sim/secondary.h — physics secondary motion on top of a bone animation (issue 21 item 4;
 * `anima animate --physics`): the animation's bone transforms prescribe the rig motion u_r(t)
 * (LBS with the rig's weights, sim/rig_lbs.h), a skinning subspace of the rig's rest mesh (the
 * PhysSkin fields the program computes) carries the elastic response, and the complementary part
 * B_comp z of that subspace (sim/rig.h's projected subspace) is added to n points bound at their
 * rest positions: x = X + u_r(t) + B z(t). The points' u_r is the animation's own, untouched, so
 * z = 0 reproduces the animation exactly. */
#ifndef ANIMA_SIM_SECONDARY_H
#define ANIMA_SIM_SECONDARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/solver.h"

typedef struct {
    SimMaterial material;
    double fps;        /* of the animation's frames */
    double gravity[3];
    int64_t substeps;  /* implicit Euler steps per frame */
    bool secondary;    /* false: z held at 0 (the rig alone) */
    bool rig_strain;   /* the elastic term sees the rig's strain (else only its rotation: z stays 0) */
} SimSecondaryOptions;

typedef struct {
    int64_t steps, newton_iters;
    int failures;
    double dt;
    double max_displacement;            /* the largest |B z| at a point, the rig's units */
    double kinetic_max, projection_max; /* kinetic energy (J); the rig-space share of the response */
    int64_t free_modes, cubature, handles;
    double diag;             /* the object's rest diagonal */
    double *kinetic, *times; /* steps + 1 each: the kinetic energy after each step (0 at rest), and when */
} SimSecondaryResult;

/* The Q frames of bone transforms tb (Q × B × 12, rest → frame, [R | T] row-major) on the rig of np
 * rest points rig_rest (np × 3) with weights rig_weights (np × B), whose skinning subspace sk (in
 * the normalized frame x_n = (x − center)·scale) is the object; the n points with rest positions
 * rest (n × 3) and posed positions pos (Q × n × 3, the animation's) get B z added in place, frame
 * by frame, the transforms linearly interpolated between frames at the substeps. 0 (r filled:
 * sim_secondary_free), or -1 with err. */
int sim_secondary_motion(const SimSkinning *sk, int64_t np, const float *rig_rest, const float *rig_weights, int B, int Q,
                         const float *tb, int64_t n, const float *rest, float *pos, const SimSecondaryOptions *opt,
                         SimSecondaryResult *r, char *err, size_t errlen);
void sim_secondary_free(SimSecondaryResult *r);

#endif
