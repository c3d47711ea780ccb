/* models/partmm/tie.h — the truth of a full-path evaluation (video → gs4d → Skelebones →
 * PartMM; anima animate --gaussians):  where a fit's Gaussians are in the benchmark's motions.
 *
 * Canonical Gaussians of a gs4d run (RUN/canonical.ply) for a rig made from that run's
 * trajectories (anima skelebones --traj RUN/trajectories.h5): the rig's rest points are the
 * Gaussians' canonical means, in gs4d's canonical space, not the benchmark's rest mesh. Each
 * Gaussian is tied to the ground-truth surface through the training motion alone: its anchor is
 * the benchmark vertex nearest to its trajectory (the rig's own reconstruction of the training
 * frames: Σ_f ‖x_i(f) − v(f)‖², every 4th frame), its offset from the anchor is carried back to the
 * anchor's rest frame by the ground-truth skinning matrix L_a(f) = Σ_b w_ab T_b(f) (3 × 3 part) and
 * averaged over the frames. Its ground-truth position in any frame t of a benchmark motion m is
 * then v_a(t) + L_a(t) δ_i: the targets of the IK and of the RMSE. Needs the rig's frames to be
 * the benchmark's training frames (F of them, all the rig has, whatever --motion val keeps). */
#ifndef ANIMA_MODELS_PARTMM_TIE_H
#define ANIMA_MODELS_PARTMM_TIE_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/motion/bench.h"
#include "models/partmm/rig.h"

typedef struct {
    int32_t *anchor; /* n: the benchmark vertex each Gaussian follows */
    float *offset;   /* n × 3: its offset, in the anchor's rest frame */
} PmGaussianTie;

/* Ties the rig's n points (the Gaussians' canonical means) to train's vertices, from the rig's
 * own reconstruction of its F frames (F must be train's frame count). 0, or -1 with err (out of
 * memory, another frame count, a singular ground-truth skinning matrix). */
int pm_gaussian_tie(const PmRig *rig, int F, const DsMotionGt *train, PmGaussianTie *tie, char *err, size_t errlen);
/* The tied Gaussians' ground-truth positions in frames [t0, t0 + Q) of motion g: out Q × n × 3 */
void pm_gaussian_targets(const PmGaussianTie *tie, int64_t n, const DsMotionGt *g, int t0, int Q, float *out);
/* How well the tie holds on the motion it was made from: the RMS over the n points and the F frames
 * of the distance between the rig's own reconstruction of the training frames and the tied
 * positions (world units). Near 0 when the Gaussians follow the surface's material; large when
 * they slide over it (gs4d eval's correspondence drift), and then the truth of every row is that
 * far from the fit's own motion. */
double pm_gaussian_tie_residual(const PmGaussianTie *tie, const PmRig *rig, int F, const DsMotionGt *train);
void pm_gaussian_tie_free(PmGaussianTie *tie);

#endif
