/* models/partmm/partmm.h — PartMM, part-wise motion matching (GaussiAnimate §5; notes:
 * gaussianimate.md §7): given a novel sequence of joint rotations R_J of the extracted skeleton,
 * synthesize the free-form (SSDR) bone transforms T_B by matching patches of a motion database
 * built from a Skelebones rig.
 *
 * Database: the rig's F frames of (R_J, T_B); a patch is p consecutive frames (L = F − p + 1 of
 * them at the finest level). Parts: P overlapping sets of joints (rig.h5 joints/parts); each bone
 * belongs to the parts with weights bone_part (B × P, rows summing to 1: the share of the bone's
 * skin driven by the part's joints).
 *
 * Synthesis, per pyramid level ℓ = 1..levels (stride s = 2^(levels − ℓ): the sequence downsampled
 * by s at every phase, so a "patch" is p frames s apart and coarse levels match longer context;
 * a level whose dilated patch, (p − 1)s + 1 frames, is longer than the query or the database is
 * skipped), per part, per query window u (frames u, u + s, …, u + (p−1)s):
 *  1. k nearest database patches by d = Σ_i Σ_{j∈part} θ(R_q(u+is, j), R_db(l+is, j)), θ the SO(3)
 *     geodesic 2 acos|⟨q₁, q₂⟩| (= arccos((tr R₁ᵀR₂ − 1)/2)) of the local joint rotations, the
 *     root's excluded (match_root 0): its local rotation is the global orientation, which the
 *     alignment below makes irrelevant — counted, a held-out motion facing another way (147° on
 *     the humanoid) picks patches by heading instead of by pose;
 *  2. per matched frame pair, the rigid alignment (PM_ALIGN_PART) of the part: R_align = argmin Σ_{j∈part}
 *     ‖R G_db,j − G_q,j‖²_F over the joints' global rotations (the SVD/polar solution, through
 *     Horn's quaternion eigenvector, skelebones' sb_rotation_from_cov), about the part's joint
 *     centroids c: T' = R_align (T − c_db) + c_q, so a part moves where the query's part is
 *     whatever the database's global placement; or (PM_ALIGN_BONE, the default) the same
 *     alignment done per bone over the joints that drive it: with a_bj the bone's share of joint
 *     j (bone_joint, renormalized over the part's joints), the candidate is the blend over j of
 *     S_q,j ∘ S_db,j⁻¹ ∘ T_db (S_j(x) = G_j (x − x_j) + p_j: joint j's frame change from the
 *     matched frame to the query's, i.e. R_align = G_q,j G_db,jᵀ about the pivot p_j), so a bone
 *     keeps the database's motion relative to its own joints; one rotation per part cannot follow
 *     a part whose joints bend differently from the match's;
 *  3. the aligned transforms of the part's bones are blended into each of the window's frames
 *     with Shepard (inverse-distance) weights d^(−power) normalized over the k matches (a match at
 *     distance 0 takes all the weight — the interpolation limit, so a query equal to a database
 *     window returns that window), every window covering a frame counting once;
 * then T^(ℓ+1) = (1 − λ) T^ℓ + λ T̄^ℓ (the first active level: T = T̄), and finally each bone
 * blended over its parts with bone_part.
 * Blending rigid transforms: rotations by quaternion averaging (Markley et al. 2007: the
 * eigenvector of the largest eigenvalue of Σ w q qᵀ, which is also the rotation nearest in
 * Frobenius norm to Σ w R; computed as the latter, from the rotation matrices, so the sign
 * ambiguity of q never arises and no hemisphere alignment is needed), translations linearly —
 * after alignment every candidate is expressed about the same pivot, so the rotation–translation
 * coupling dual quaternions add is not needed.
 *
 * Conventions: quaternions w x y z; transforms rest → frame, 3 × 4 row-major [R | T] (12 floats),
 * frame-major (F × B × 12); FK as models/skelebones/ik.h (sb_fk). */
#ifndef ANIMA_MODELS_PARTMM_PARTMM_H
#define ANIMA_MODELS_PARTMM_PARTMM_H

#include <stddef.h>
#include <stdint.h>

#include "models/skelebones/ik.h"

typedef enum {
    PM_ALIGN_NONE, /* the matched transforms as the database has them (an ablation) */
    PM_ALIGN_PART, /* one rigid alignment per part (step 2 above) */
    PM_ALIGN_BONE, /* per bone: the frame change of each joint driving it, blended (below) */
} PmAlign;

typedef struct {
    int patch;         /* p, frames per patch (7) */
    int k;             /* nearest patches per part and window (7) */
    int levels;        /* temporal pyramid levels (5; 1: no pyramid) */
    double lambda;     /* the refinement weight λ (0.7) */
    double power;      /* Shepard weights d^(−power) (2) */
    PmAlign align;     /* (PM_ALIGN_BONE when the database has bone_joint, else as PART) */
    int global_part;   /* 1: one part holding every joint and bone (the ablation; 0) */
    int match_root;    /* 1: the root joint's rotation (the global orientation) counts in the
                          matching distance; 0 (default): matching sees the articulation alone,
                          the alignment carries the global placement (the ablation: 1) */
} PmOptions;

void pm_options_defaults(PmOptions *o);

typedef struct {
    int F, J, B, P;
    double *rest;       /* J × 3 rest joints */
    int32_t *parents;   /* J */
    float *rot;         /* F × J × 4 local rotations, unit, w ≥ 0 */
    double *grot;       /* F × J × 9 global rotations (FK) */
    double *gpos;       /* F × J × 3 joint positions (FK) */
    double *tb;         /* F × B × 12 */
    uint8_t *parts;     /* P × J */
    double *bone_part;  /* B × P, rows summing to 1 */
    double *bone_joint; /* B × J: how much of each bone's skin each joint drives (NULL: none) */
} PmDatabase;

/* Copies the rig's data (trans: F × 3 root translations; parts P × J; bone_part B × P, rows
 * normalized here, a row of zeros spread evenly; bone_joint B × J or NULL). 0, or -1 with err
 * (sizes, a bad tree, a part without joints). */
int pm_db_build(PmDatabase *db, int F, int J, int B, int P, const float *rot, const float *trans, const double *rest,
                const int32_t *parents, const float *tb, const uint8_t *parts, const double *bone_part,
                const double *bone_joint, char *err, size_t errlen);
void pm_db_free(PmDatabase *db);

/* Synthesizes T_B (Q × B × 12) for Q query frames (rot Q × J × 4 local, trans Q × 3). 0, or -1
 * with err (sizes, Q < 1, options out of range). */
int pm_synthesize(const PmDatabase *db, int Q, const float *rot, const float *trans, const PmOptions *o, float *out,
                  char *err, size_t errlen);

/* ---- the pieces (exposed for the tests) --------------------------------------------------------- */

/* The SO(3) geodesic distance (radians, [0, π]) between the rotations of two unit quaternions. */
double pm_geodesic(const float a[4], const float b[4]);
/* R minimizing Σ_j w_j ‖R A_j − B_j‖²_F over n rotation pairs (n × 9 each, row-major; w NULL: ones). */
void pm_align_rotations(int n, const double *A, const double *Bm, const double *w, double R[9]);
/* Weighted blend of n rigid transforms (n × 12): rotation the Frobenius-nearest to Σ w R (the
 * quaternion average), translation Σ w T / Σ w. Weights ≥ 0 with a positive sum. */
void pm_blend(int n, const double *T, const double *w, double out[12]);
/* The stride of pyramid level l (1..levels): 2^(levels − l). */
int pm_level_stride(int levels, int l);
/* Whether a level of stride s runs for a query of Q frames, a database of F and patches of p. */
int pm_level_active(int Q, int F, int p, int s);

#endif
