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
 * the rest diagonal). The step is sim/rig.h's: the rig's acceleration over the step enters the
 * inertia as Bᵀ M a, its strain the elastic term through F = F_r + (G z)ᵀ, and the object's
 * constant handle and global affine moments of B z are held at zero (the exact rows of
 * SimObject.rig_rows: the rig carries the rigid and affine motion). */
#ifndef ANIMA_SIM_RIG_LBS_H
#define ANIMA_SIM_RIG_LBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/solver.h"

typedef struct {
    int nbones;
    /* false (sim_lbs_rig_init's default): F_r as above, so the elastic term also sees the rig's own
     * strain (LBS blend zones, the SSDR bones' non-rigid fits) and z pushes back against it
     * wherever the subspace can express it. true: F_r replaced by its rotation (polar factor), so
     * the rig's posed shape is locally unstrained and only the rig's accelerations (and gravity)
     * drive z — secondary motion about the animation rather than a correction of it. */
    bool rotation_only;
    int64_t nc, nv;
    double *wc, *dwc;              /* weights at the cubature points (nc × B), world gradients (nc × B × 3) */
    double *wv;                    /* weights at the binding vertices (nv × B) */
    int hist;                      /* how many of u_prev/u_cur hold values */
    double *u_prev, *u_cur, *u_next; /* u_r at the cubature points at the last three rig times */
    double *F, *uv, *f, *rows;     /* F_r (nc × 9), u_r at the vertices (nv × 3), Bᵀ M a (n), 8 exact rows */
    double *Mchol;                 /* M_b's Cholesky factor (nb × nb) */
} SimLbsRig;

/* The rig of np points P (np × 3, world rest positions: the object's frame after its pose) with
 * weights W (np × B, rows summing to one) on object o: weights at o's cubature points and vertices,
 * o's exact rows, o prepared again. 0, or -1 with err. */
int sim_lbs_rig_init(SimLbsRig *r, SimObject *o, int64_t np, const double *P, const float *W, int nbones, char *err,
                     size_t errlen);
void sim_lbs_rig_free(SimLbsRig *r);

/* u_r at n points with weights w (n × B) and, when F is given, F_r from their gradients dw
 * (n × B × 3), for the bone transforms T (B × 12, [R | t] row-major, world). X: n × 3 rest. */
void sim_lbs_rig_eval(int nbones, const double *T, int64_t n, const double *X, const double *w, const double *dw,
                      double *u, double *F);

/* Before the step of o (length dt) to the time of pose T (B × 12): u_r, F_r there, and o's rig
 * inputs pointed at them; the inertia's linear term f = Bᵀ M a, a = u_r(T) − 2 u_r(previous pose)
 * + u_r(the one before), enters as the equivalent shift of the prediction: ż₀ −= M_r⁻¹ f / dt
 * (the solver no longer takes the term itself: sim/rig.h's projected B_comp makes it vanish,
 * whereas this rig keeps the learned B). Then sim_object_step. Poses come one per step time; a
 * missing history repeats the first pose (the rig was at rest before it). */
void sim_lbs_rig_advance(SimLbsRig *r, SimObject *o, const double *T, double dt);

#endif
