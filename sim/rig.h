/* sim/rig.h — rig-complementary dynamics (PhysSkin++ §III-E, §IV-D; physskin.md §9; Complementary
 * Dynamics): a procedural character's rig (datasets/geometry/procedural.h bones, LBS weights) drives
 * an object of the reduced solver, and the object's subspace adds the secondary motion:
 *
 *     x(X, t) = X + u_r(X, t) + B_comp z(t),   u_r = Σ_j w_j(X) S_j(t)(X) − X   (LBS, rig.h conventions)
 *
 * The complementary subspace. The rig space at a point is spanned per coordinate by the row
 * a(X) = [w_j(X) X̃ᵀ]_j (X̃ = [X; 1], K = 4 bones entries: J of physskin.md §9 is I₃ ⊗ a). The
 * measure of complementarity is the one L_comp trains (models/physskin/losses.h): lumped masses
 * m_c = ρ V_c at the cubature points, u_c ⊥_M span(J) ⇔ Aᵀ M u_c = 0 (A the nc × K rows a(X_c)).
 * Trained fields satisfy it only approximately, and with 12 affine parameters per bone the rig
 * expresses most of a small learned subspace (the modes' rig shares reach 0.99). So at load the
 * learned columns of B are projected, once, onto the M-orthogonal complement of the rig space:
 *
 *     B_comp = B − A C,   C = (Aᵀ M A)⁻¹ Aᵀ M B        (a ridge of 1e-12 for bones without points)
 *
 * Since a(X) is a smooth field, B_comp is one too: the vertices' rows use their own rig weights and
 * G (the deformation gradient rows) the derivative of a(X), so outputs, contact and the elastic
 * energy all see the same field. By construction Aᵀ M B_comp z = 0 for every z (up to roundoff):
 * nothing is enforced during the steps. The reduction is rank-revealing: before the projection
 * the free modes y_i of the subspace are taken M-orthogonal and diagonalizing the rig share
 * (sim_rig_modes: λ_i = ‖P B y_i‖²_M / ‖B y_i‖²_M), so after it B_comp y_i = (I − P) B y_i stay
 * M-orthogonal with norms² 1 − λ_i. Modes whose complementary share 1 − λ_i is below rank_tol
 * (default SIM_RIG_RANK_TOL) are removed by exact rows, as is the constant handle (an affine map,
 * all rig). How many modes survive is the runtime face of L_comp: fields trained for
 * complementarity keep more.
 *
 * The step. The rig displacement is prescribed input to the same implicit Euler step
 * (sim/solver.h). The inertia ½‖x − x̃‖²_M with the rig's share would add (z − z̃)ᵀ B_compᵀ M a,
 * a = u_r(t₁) − 2u_r(t₀) + u_r(t₀ − dt); but u_r(t) is in span(A) at every t (Σ_j w_j = 1), so a is,
 * and B_compᵀ M a = 0: the rig's accelerations do not push z directly, as in Complementary
 * Dynamics. Gravity's pull-back Σ_c m_c b_c vanishes for the same reason (a constant field is
 * affine). What drives z is the elastic energy at the total deformation F = F_r + (G z)ᵀ,
 * F_r = ∂(X + u_r)/∂X = Σ_j w_j R_j + Σ_j S_j(X) ⊗ ∇w_j: the rig's own strain (the blend zones of
 * LBS) and its rotations, which turn the rest frame of B_comp z.
 *
 * Rig motion, evaluated as a function of time (clamped at t_stop, after which the rig holds its
 * pose and the secondary motion decays):
 *   - a clip of datasets/motion/motion.h (a procedural gait, or a BVH clip retargeted onto the
 *     humanoid rig by joint names: CMU or Boxing_Toes names), resampled at `fps`;
 *   - keyframes per bone (local rotations, slerp between keys, held before the first and after the
 *     last), composed after the clip;
 *   - scripted joint drags: a bone turned so that its tail heads for a target point (world), the
 *     turn blended in from t0 to t1 and let go at t_release;
 *   - live control (sim_rig_set_joint_rotation, for the viewer): a bone's local rotation replaced
 *     until cleared; it takes effect at the next sim_rig_advance.
 * The per-step state keeps u_r at the last two step times, so live changes enter the inertia
 * through the same finite difference.
 *
 * Frames. The rig lives in the procedural shape's normalized frame p; the object's skinning frame
 * is s = (p − center)·k (center 0, k 1 for a procedural skinning source; a skinning file from
 * `anima physskin skin` stores its own), and the world is X = scale·R s + T (the object's
 * SimPose). Displacements map by scale·k·R, deformation gradients by R F Rᵀ. */
#ifndef ANIMA_SIM_RIG_H
#define ANIMA_SIM_RIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/config.h"
#include "datasets/geometry/procedural.h"
#include "datasets/motion/motion.h"
#include "sim/solver.h"

typedef struct {
    int bone;
    double t;
    double q[4]; /* local rotation (w, x, y, z) */
} SimRigKey;

typedef struct {
    int bone;
    double target[3];       /* world (m) */
    double t0, t1, t_release;
} SimRigDrag;

typedef struct {
    DsProceduralShape shape; /* the character: bones, weights' SDF (its mesh is not used) */
    int nbones;
    float sigma;             /* ds_procedural_weights' softness (0: its default) */
    double L[9], off[3], R[9]; /* p → world: X = L p + off; R the rotation part (F maps by R F Rᵀ) */
    int64_t nc, nv;
    double *pc, *pv;         /* rest points in the rig frame (nc × 3, nv × 3) */
    double *wc, *dwc, *wv;   /* weights nc × nb, their p-gradients nc × nb × 3, weights nv × nb */
    /* motion */
    bool has_clip, loop;     /* loop: the clip plays forward and back (ping-pong: no jump) */
    DsMotion clip;
    int nkeys, ndrags;
    SimRigKey *keys;
    SimRigDrag *drags;
    double t_stop;           /* the pose is held from here on (1e30: never) */
    double *live;            /* nb × 4 live local rotations, used where live_on */
    unsigned char *live_on;
    /* per-step state (world frame) */
    double *uc, *F, *uv;     /* u_r at the cubature points (nc × 3), F_r (nc × 9), u_r at the vertices */
    double *local, root[3];  /* the last pose evaluated (nb × 4) */
    /* the complementary subspace */
    int nm;                  /* the learned subspace's free modes before the projection */
    double *lam, *mrows;     /* their rig shares λ_i ascending (nm), exact rows removing each (nm × o->nb) */
    double *rows;            /* the exact rows given to the object (4: constant handle, plus the dropped modes) */
    double rank_tol;         /* modes with 1 − λ_i < rank_tol are dropped */
    int kept;                /* free modes per coordinate block */
    double *C;               /* the projection's C (4 nbones × 4 o->m, B_comp = B − A C), for other points' rows */
    int32_t *group;          /* each cubature point's dominant bone (nc): the object's rig_group */
} SimRig;

/* The default rank_tol: a mode is kept when at least 0.1% of its mass-weighted norm² lies outside
 * the rig space (3% of its amplitude): below that its complement is roundoff-sized relative to
 * the mode and its stiffness per unit mass large. */
#define SIM_RIG_RANK_TOL 1e-3

/* A rigged object's elastic_lag at most (sim_rig_attach lowers a larger one; solver.h's
 * SimNewtonOptions). Its lagged elastic Hessian is co-rotated with the bones each step (solver.h:
 * rig_group), which leaves the lag's error to the stretch and to z, and then a reassembly pays
 * for itself sooner than at the default 0.5. Chosen on the quadruped's walk (seed 3; the bench
 * runs the trot of seed 2) over 0.5, 0.2, 0.1, 0.05, 0.02: Newton 2.34 → 2.19 iterations per
 * step at 0.5 → 0.1 with the same median step time, below that more reassemblies than it saves. */
#define SIM_RIG_ELASTIC_LAG 0.1

/* The rig of procedural shape (category, seed, mesh_res: as the object's skinning was made;
 * sigma: ds_procedural_weights' softness, 0 its default) attached to object o, whose skinning
 * frame is (p − center)·k and whose pose is `pose`. Evaluates the weights and their gradients
 * (central differences, δ = 1e-3 in p) at the object's cubature points and vertices, replaces o's
 * learned rows by their complementary projection B_comp (above; add o's fixed regions with
 * falloff and its optimized cubature first), gives o its exact rows (constant handle, modes below
 * SIM_RIG_RANK_TOL) and prepares o again. 0, or -1 with err set. */
int sim_rig_init(SimRig *r, SimObject *o, const char *category, uint64_t seed, int mesh_res, float sigma,
                 const double center[3], double k, const SimPose *pose, char *err, size_t errlen);
void sim_rig_free(SimRig *r);
/* The complementary construction alone, for a rig whose weights come from elsewhere (sim/rig_lbs.h:
 * bone transforms and point weights): given r->nbones, nc, nv, wc, dwc (gradients in the rig frame
 * p), wv at o's cubature points and vertices, and the frame map L, R (identity when the rig frame is
 * the world), it gives o the constant handle's exact rows, takes the modes' rig shares
 * (sim_rig_modes), replaces o's rows by B_comp (r->C kept for other points,
 * sim_rig_points_project) and removes the modes below SIM_RIG_RANK_TOL, as sim_rig_init does.
 * 0, or -1 with err (the caller frees r). */
int sim_rig_attach(SimRig *r, SimObject *o, char *err, size_t errlen);

/* Bone index by name, -1 if none. */
int sim_rig_bone(const SimRig *r, const char *name);

/* Motion sources (add before the first sim_rig_advance). A clip: datasets/motion/motion.h's
 * name (procedural gait or BVH by name or path) at fps, nframes long, seeded; t past its end
 * holds the last frame. The _mapped form retargets a BVH clip by a mapping JSON (motion.h; NULL
 * or "": the built-in humanoid names). */
int sim_rig_set_clip(SimRig *r, const char *name, double fps, int nframes, uint64_t seed, int64_t bvh_start,
                     char *err, size_t errlen);
int sim_rig_set_clip_mapped(SimRig *r, const char *name, const char *map, double fps, int nframes, uint64_t seed,
                            int64_t bvh_start, char *err, size_t errlen);
int sim_rig_add_key(SimRig *r, const SimRigKey *k, char *err, size_t errlen);
int sim_rig_add_drag(SimRig *r, const SimRigDrag *d, char *err, size_t errlen);

/* Live rig control (the viewer): bone's local rotation (unit quaternion w, x, y, z, in the rig
 * conventions of datasets/motion/rig.h: about world axes at rest, carried by the parent) replaces
 * whatever the clip, keys and drags give it, from the next sim_rig_advance on, until
 * sim_rig_clear_joint. 0, or -1 with err (no such bone). */
int sim_rig_set_joint_rotation(SimRig *r, int bone, const double q[4], char *err, size_t errlen);
void sim_rig_clear_joint(SimRig *r, int bone);

/* The rig's pose at time t (local rotations nb × 4, root translation 3, in the rig frame). */
void sim_rig_pose(SimRig *r, double t, double *local, double root[3]);

/* u_r (world) at the object's cubature points (nc × 3) and vertices (nv × 3, may be NULL), and
 * F_r (nc × 9, may be NULL), for the pose (local, root). */
void sim_rig_eval(const SimRig *r, const double *local, const double root[3], double *uc, double *uv, double *F);

/* Before the step of o that ends at t₁: evaluates the rig at t₁ and points o's rig inputs (rig_F,
 * rig_uc, rig_uv; no inertial term: Bᵀ M a = 0, above) at the rig's buffers for that step. Then
 * sim_object_step or sim_world_step. */
void sim_rig_advance(SimRig *r, SimObject *o, double t1);

/* The subspace's modes by their rig content: over the free modes z = N y the prepared object has
 * (sim_object_subspace), the generalized eigenproblem Nᵀ Q N y = λ Nᵀ M_b N y with
 * Q = Bᵀ M A (Aᵀ M A)⁻¹ Aᵀ M B (one coordinate block). λ_i ∈ [0, 1] is the squared
 * mass-weighted share of mode i's displacement that the rig can express; the modes are
 * M_b-orthogonal and also diagonalize Q. sim_rig_init takes them before the projection (after it
 * every λ is 0 up to roundoff). lam (≤ nb values) ascending; rows (may be NULL; ≤ nb × nb):
 * row i = (M_b N y_i)ᵀ, the exact constraint row that removes mode i and no other. Returns the
 * number of modes, or -1. */
int sim_rig_modes(const SimRig *r, SimObject *o, double *lam, double *rows);
/* The rank-revealing reduction again with another tolerance: the modes of sim_rig_init whose
 * complementary share 1 − λ_i is below tol ([0, 1)) are removed from o's subspace (exact rows).
 * *kept (may be NULL) gets the free modes left per coordinate block. Prepares o again. 0, or -1
 * with err (e.g. nothing left). */
int sim_rig_set_rank_tol(SimRig *r, SimObject *o, double tol, int *kept, char *err, size_t errlen);

/* ---- scenes (sim/scene.h's "rig" key) ----------------------------------------------------------
 *   rig: {object [-1: none], clip [""] (motion.h name: "walk", "trot", "cmu_01_01", a .bvh path
 *         relative to the scene's folder), clip_map [""] (a mapping JSON for a BVH clip, relative to
 *         the scene's folder; "": the built-in humanoid names), fps [30] (the clip's sampling), frames [0: as long as
 *         the scene], loop [false] (forward and back), seed [1], bvh_start [-1], t_stop [1e30] (s),
 *         sigma [0], rank_tol [1e-3] (sim_rig_set_rank_tol),
 *         keys: [{bone, t, axis, deg}] (a local rotation of deg about axis at time t),
 *         drags: [{bone, target, t0 [0], t1 [0.5], t_release [1e30]}] (joint drags)}
 * The rigged object's skinning must be of the same procedural shape (its category, seed and
 * mesh_res are the rig's). Other deformable objects may share the scene: the IPC pairs between
 * bodies see the rigged one at X + u_r + B z (world.c), with the rig at the step's end time from
 * the step's start on. The rig is prescribed input that contact cannot hold back, so its own move
 * over a step (z held) is swept by CCD first, and a move that would reach another body stops the
 * run with an error (a smaller dt or a slower rig) rather than leave a crossing. Rigid bodies are refused beside a rig (their CCD move and lagged reaction are not
 * tested against prescribed motion). One rig per scene. Its gaussians move with x = X + u_r + B z and F = F_r + (G z)ᵀ
 * (sim_rig_points_*, sim_gaussians_update_rigged). */
typedef struct {
    char bone[24];
    double t, axis[3], deg;
} SimSceneRigKey;

typedef struct {
    char bone[24];
    double target[3], t0, t1, t_release;
} SimSceneRigDrag;

typedef struct {
    int64_t object;
    char clip[512], clip_map[512];
    double fps, t_stop, sigma;
    int64_t frames, seed, bvh_start;
    bool loop;
    double rank_tol;
    int nkeys, ndrags;
    SimSceneRigKey *keys;
    SimSceneRigDrag *drags;
} SimSceneRig;

/* the "rig" object's keys (datasets/config.h) */
extern const DsConfigField SIM_RIG_SCENE_FIELDS[];
/* The scene's rig on object o (built from category/seed/mesh_res with the skinning frame
 * (center, k) and pose), its clip, keys and drags resolved by bone name; clip paths relative to
 * scene_dir; duration (s) sizes a clip whose frames is 0. 0, or -1 with err. */
int sim_rig_from_scene(SimRig *r, SimObject *o, const SimSceneRig *sr, const char *category, uint64_t seed,
                       int mesh_res, const double center[3], double k, const SimPose *pose, const char *scene_dir,
                       double duration, char *err, size_t errlen);

/* A plot of a time series as a PNG (w × h): the curve v(t) in blue over [0, t_max] × [0, v_max],
 * axes in gray, a red vertical line at t_mark (when inside). For the kinetic energy of the
 * secondary motion (decay after the rig stops). 0, or -1 with err. */
int sim_rig_write_plot(const char *path, int64_t n, const double *t, const double *v, double t_mark, int w, int h,
                       char *err, size_t errlen);

/* Complementarity of the current secondary displacement u_c = B z at the cubature points: its
 * mass-weighted projection onto the rig space span(J) (J the LBS Jacobian over 12 affine
 * parameters per bone, physskin.md §9; M the lumped ρ V_c, as L_comp trains it),
 * ‖P u_c‖_M / ‖u_c‖_M (0 when u_c = 0). Roundoff-sized for the projected subspace. */
double sim_rig_projection(const SimRig *r, const SimObject *o);

/* ---- the rig at other points (3D Gaussians bound to a rigged object, sim/bindings.h) -----------
 * A point set's rig weights (and their gradients) at its world rest positions, evaluated once;
 * then u_r and F_r there for any pose, by sim_rig_eval's own LBS. */
typedef struct {
    int64_t n;
    double *p, *w, *dw; /* rig-frame rest points (n × 3), weights (n × nb), their p-gradients (n × nb × 3) */
} SimRigPoints;

/* The rig's weights at n world rest points X (n × 3: the object's frame after its pose, as
 * SimBinding.X). 0, or -1 with err (out of memory). */
int sim_rig_points_init(const SimRig *r, int64_t n, const double *X, SimRigPoints *pts, char *err, size_t errlen);
void sim_rig_points_free(SimRigPoints *pts);
/* u_r (world, n × 3) and F_r (n × 9 row-major, may be NULL) at the points for the pose (local,
 * root) — r->local, r->root after sim_rig_advance are the pose of the step just taken. */
void sim_rig_points_eval(const SimRig *r, const SimRigPoints *pts, const double *local, const double root[3], double *u,
                         double *F);
/* The complementary projection on a binding's rows at the points (sim/bindings.h's SimBinding of
 * the same n points X, world; nb = o->nb): b ← b − a(X) C, G_d ← G_d − ∂_d a(X) C, as sim_rig_init
 * projects the object's own rows, so bound points see B_comp too. */
void sim_rig_points_project(const SimRig *r, const SimRigPoints *pts, const double *X, int64_t nb, double *B, double *G);

#endif
