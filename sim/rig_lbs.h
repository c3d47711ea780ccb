/* sim/rig_lbs.h — rig-complementary dynamics (sim/rig.h's x = X + u_r(t) + B z) for a rig given
 * as bone transforms and point weights rather than as a procedural character: any skinned
 * character, e.g. a Skelebones rig.h5 animated by PartMM (models/partmm), whose motion is a
 * sequence of per-bone affine maps T_j(t) = [R_j | t_j] (rest → pose, world frame) and whose
 * weights live at the rig's points.
 *
 *     u_r(X, t) = Σ_j w_j(X) T_j(t) X̃ − X,      F_r = Σ_j w_j R_j + Σ_j (T_j X̃) ⊗ ∇w_j
 *
 * The weights at the object's cubature points are the rig points' weights carried by the
 * inverse-squared-distance blend of sim_skinning_interpolate (its k nearest points, the points'
 * own gradients taken as zero), their gradients by central differences of that blend (δ = 1e-4 of
 * the rest diagonal). From there the construction is sim/rig.h's own (sim_rig_attach, one code
 * path): the learned B is replaced by its complementary projection B_comp = B − A C, the constant
 * handle and the modes with no complementary share are removed by exact rows, and the step is
 * sim_rig_advance's: Aᵀ M B_comp = 0, so the rig's acceleration and gravity enter no term; what
 * drives z is the elastic energy at F = F_r + (G z)ᵀ (the rig's own strain, and its rotations,
 * which turn the rest frame of B_comp z). */
#ifndef ANIMA_SIM_RIG_LBS_H
#define ANIMA_SIM_RIG_LBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/rig.h"
#include "sim/solver.h"

typedef struct {
    int nbones;
    /* false (sim_lbs_rig_init's default): F_r as above, so the elastic term sees the rig's own
     * strain (LBS blend zones, the SSDR bones' non-rigid fits) and z answers it — the only driver
     * of the complementary subspace. true: F_r replaced by its rotation (polar factor); the posed
     * shape is then locally unstrained and, with no inertial or gravity term left (B_compᵀ M a = 0),
     * z stays 0: a check, not a mode of animation. */
    bool rotation_only;
    int64_t nc, nv;
    SimRig rig;      /* the complementary construction (sim_rig_attach) on the carried weights: wc, dwc
                      * (world gradients: its frame map L, R is the identity), wv; its uc, F, uv the
                      * per-step rig state */
    SimSkinning src; /* the rig's points as a weights-only skinning source (sim_lbs_rig_points) */
} SimLbsRig;

/* The rig of np points P (np × 3, world rest positions: the object's frame after its pose) with
 * weights W (np × B, rows summing to one) on object o: weights at o's cubature points and vertices,
 * then sim_rig_attach (o's rows become B_comp, its exact rows set, o prepared again). 0, or -1
 * with err. */
int sim_lbs_rig_init(SimLbsRig *r, SimObject *o, int64_t np, const double *P, const float *W, int nbones, char *err,
                     size_t errlen);
void sim_lbs_rig_free(SimLbsRig *r);

/* The rig's weights (and world gradients) at n other world rest points X (3D Gaussians bound to o),
 * for sim_rig_points_project(&r->rig, ...): their binding rows then see B_comp too. 0, or -1 with
 * err (out of memory). */
int sim_lbs_rig_points(const SimLbsRig *r, int64_t n, const double *X, SimRigPoints *pts, char *err, size_t errlen);

/* u_r at n points with weights w (n × B) and, when F is given, F_r from their gradients dw
 * (n × B × 3), for the bone transforms T (B × 12, [R | t] row-major, world). X: n × 3 rest. */
void sim_lbs_rig_eval(int nbones, const double *T, int64_t n, const double *X, const double *w, const double *dw,
                      double *u, double *F);

/* Before the step of o to the time of pose T (B × 12): u_r, F_r there, and o's rig inputs pointed
 * at them (as sim_rig_advance: no inertial term). Then sim_object_step. */
void sim_lbs_rig_advance(SimLbsRig *r, SimObject *o, const double *T);

#endif
