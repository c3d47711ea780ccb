/* models/partmm/bench.h — the PartMM benchmark protocol (docs/gaussianimate.md §5; `anima animate
 * --eval`): a rig driven by a query motion it never saw, every method's point positions on the
 * query frames, scored against the truth by geometry (RMSE, % of the rest mesh's bounding-box
 * diagonal) and by renders of the same canonical Gaussians against the benchmark's held-out views
 * (PSNR, SSIM; and PSNR against the same Gaussians rendered at their true positions, which keeps
 * the position error alone).
 *
 * Rows (PmBenchRowId): PartMM with the caller's options; LBS (the kinematic skeleton alone: each
 * point rigidly on its joint); bag-of-bones (each SSDR bone on its nearest joint, no tree); the
 * PartMM ablations (one global part, no pyramid, k = 1, one SVD alignment per part, the root's
 * rotation in the matching); the learned baselines (an MLP and a GRU regressing the bones from the
 * joint rotations, in the root joint's frame, trained on the rig's own motion); two references (each
 * bone rigidly fitted to the truth points it dominates; the truth itself, the renders' ceiling) and
 * the rig's own transforms when the query is the rig's own motion.
 *
 * The canonical Gaussians (PmCanon) every row renders: one isotropic Gaussian per rig point, of
 * the benchmark's albedo (or an appearance fitted to the benchmark's training views of its
 * training motion, models/gaussians/appearance.h), or a gs4d run's own Gaussians with the
 * appearance they render with over that run's frames. */
#ifndef ANIMA_MODELS_PARTMM_BENCH_H
#define ANIMA_MODELS_PARTMM_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/gaussian_ply.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "models/gaussians/appearance.h"
#include "models/partmm/partmm.h"
#include "models/partmm/regress.h"
#include "models/partmm/rig.h"
#include "tensor/tensor.h"

/* ---- the canonical Gaussians ---------------------------------------------------------------- */

typedef struct {
    int64_t n;
    float *colors;    /* n × 3 RGB */
    float *log_scale; /* n isotropic log standard deviations */
    float *logit;     /* n opacity logits */
    /* Gaussian i renders at its position + offset_i × the vertex normal of the mesh (faces over the
     * n points) at the positions rendered; NULL: at its position */
    float *offset;
    int64_t nf;
    const int32_t *faces;
} PmCanon;

/* One Gaussian per vertex of the benchmark's rest mesh: its albedo, σ = scale × the mean edge
 * length, the given opacity. 0, or -1 with err (out of memory). */
int pm_canon_benchmark(PmCanon *c, const DsMotionGt *train, double scale, double opacity, char *err, size_t errlen);
/* A gs4d run's canonical Gaussians (PLY) for a rig made from its trajectories: their means must be
 * the rig's rest points. The appearance is the run's frames' mean from trajectories.h5 beside the
 * PLY (gs4d_trajectories_appearance; *from_traj true), else the PLY's own (isotropic: the mean of
 * the three log-scales; SH band 0). 0, or -1 with err naming the file. */
int pm_canon_gs4d(PmCanon *c, const char *ply, const PmRig *rig, bool *from_traj, char *err, size_t errlen);
void pm_canon_free(PmCanon *c);

/* The n Gaussians at pos (n × 3) rendered through cam over white: (H, W, 3) f32 in the current
 * tensor scope. */
Tensor *pm_canon_render(const PmCanon *c, const float *pos, const DsCamera *cam);
/* The Gaussians at pos, where every render draws them (moved along the normals by c->offset), as a
 * standard 3DGS PLY (isotropic scales replicated, identity rotations). */
int pm_canon_write_ply(const char *path, const PmCanon *c, const float *pos, char *err, size_t errlen);

/* What an appearance fit did. */
typedef struct {
    int views;                    /* training views used */
    double loss;                  /* the fit's mean loss over its last steps */
    double val_before, val_after; /* PSNR on the benchmark's val split (training motion, other cameras) */
    double cpu;                   /* CPU seconds */
} PmAppearanceInfo;

/* Fits c's colors, sizes and opacities (and, with ac->normal_offset, per-Gaussian offsets along the
 * mesh normals: c->offset, with c->faces = train's) to the benchmark bench_dir's training views of
 * its training motion — frames below max_frame and every frame_every-th — each view with the
 * Gaussians at that frame's ground-truth vertices. Never the held-out motion or cameras: the val
 * split only reports how well the fit generalizes. progress (may be NULL) every 200 steps. 0, or
 * -1 with err. */
int pm_canon_fit_appearance(PmCanon *c, const char *bench_dir, const DsMotionGt *train, int max_frame, int frame_every,
                            const GsAppearanceConfig *ac, GsAppearanceProgress progress, PmAppearanceInfo *info,
                            char *err, size_t errlen);

/* ---- the query pose -------------------------------------------------------------------------- */

typedef enum {
    PM_IK_FIT,      /* closed form (pm_pose_by_fits) */
    PM_IK_ADAM,     /* iterative IK (pm_pose_from_points) */
    PM_IK_FIT_ADAM, /* the iterative IK started at every frame from the closed form */
} PmIkMethod;

/* The pose of F observed frames of the rig's points (the query, and the database's keys: one
 * estimator for both). max_points: the iterative IK's point budget. 0, or -1 with err. */
int pm_pose(PmIkMethod method, const SbIkOptions *io, int64_t max_points, const PmRig *rig, int F, const float *observed,
            float *rot, float *trans, char *err, size_t errlen);

/* ---- the rows --------------------------------------------------------------------------------- */

typedef enum {
    PM_ROW_PARTMM, PM_ROW_LBS, PM_ROW_BAG_OF_BONES, PM_ROW_GLOBAL_PART, PM_ROW_NO_PYRAMID, PM_ROW_K1, PM_ROW_PART_ALIGN,
    PM_ROW_MLP, PM_ROW_GRU, PM_ROW_ORACLE, PM_ROW_RIG_OWN, PM_ROW_MATCH_ROOT, PM_ROW_TRUTH, PM_BENCH_ROWS
} PmBenchRowId;

typedef struct {
    const char *name, *what;
    double rmse;    /* % of the diagonal */
    double psnr, ssim, psnr_gs; /* NAN without views */
    double seconds; /* synthesis (PartMM rows) or training + prediction (regressors) wall time */
    bool skip;      /* not run */
} PmBenchRow;

typedef struct {
    const PmRig *rig;          /* its rig->F frames are the database's */
    const PmDatabase *db;      /* built from the rig (pm_db_build) */
    const PmOptions *options;  /* PartMM's */
    int Q;                     /* query frames */
    const float *qrot, *qtrans;/* the query pose, Q × J × 4, Q × 3 */
    const float *partmm_tb;    /* PartMM's transforms of the query with options (Q × B × 12) */
    double partmm_seconds;
    const float *truth;        /* Q × n × 3: the points' true positions */
    double diag;               /* the unit of the RMSE */
    const PmCanon *canon;
    const DsDnerfSplit *views; /* views of the query motion (time × (Q − 1) = frame), or NULL: geometry alone */
    int every;                 /* score every n-th frame's views */
    bool regress;              /* train and score the MLP and GRU rows */
    PmRegressOptions regress_options; /* their sizes (kind is set per row) */
    const float *own_tb;       /* the rig's own transforms of the query frames (Q × B × 12), or NULL (row skipped) */
    void (*progress)(void *user, const char *row); /* before each row that takes a while (NULL: quiet) */
    void *user;
} PmBenchInputs;

/* Every row. 0, or -1 with err (out of memory, a regressor that failed). */
int pm_bench_run(const PmBenchInputs *in, PmBenchRow rows[PM_BENCH_ROWS], char *err, size_t errlen);

/* The rest mesh's bounding-box diagonal (the RMSE's unit): over its nv vertices. */
double pm_bench_diagonal(const DsMotionGt *g);

#endif
