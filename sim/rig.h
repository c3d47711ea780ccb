/* sim/rig.h — rig-complementary dynamics (PhysSkin++ §III-E, §IV-D; physskin.md §9): a
 * procedural character's rig (datasets/geometry/procedural.h bones, LBS weights) drives an object
 * of the reduced solver, and the object's subspace adds the secondary motion:
 *
 *     x(X, t) = X + u_r(X, t) + B z(t),   u_r = Σ_j w_j(X) S_j(t)(X) − X   (LBS, rig.h conventions)
 *
 * The rig displacement is prescribed input to the same implicit Euler step (sim/solver.h): with
 * x̃ = x₀ + dt ẋ₀ the inertia ½‖x − x̃‖²_M becomes ½(z − z̃)ᵀM_r(z − z̃) + (z − z̃)ᵀBᵀM a, where
 * a = u_r(t₁) − 2u_r(t₀) + u_r(t₀ − dt) is the rig's acceleration over the step (× dt²), and the
 * elastic energy is taken at the total deformation F = F_r + (G z)ᵀ, F_r = ∂(X + u_r)/∂X =
 * Σ_j w_j R_j + Σ_j S_j(X) ⊗ ∇w_j. So the rig's accelerations and its own strain (the blend zones of
 * LBS) drive z; nothing enforces JᵀMBz = 0 at runtime — the fields are trained for it (L_comp,
 * models/physskin/losses.h). Two exact linear conditions are kept (SimObject.rig_rows): the
 * object's constant handle is held at zero, and so are the mass-weighted global affine moments
 * Σ_c m_c X̃_c (B z)_c,iᵀ — the complementarity condition of a one-bone rig, 12 of the 3·nb
 * coordinates. The rig carries the rigid and affine motion; without them a rigid motion of B z,
 * which no elastic energy restores, would drift under gravity and the rig's accelerations.
 * (Per-bone complementarity has 12 conditions per bone, more than a small subspace has
 * coordinates: it stays learned, and sim_rig_projection measures it.)
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
    int hist;                /* how many of u_prev/u_cur hold values */
    double t_cur;            /* the time u_cur was taken at */
    double *u_prev, *u_cur, *u_next; /* u_r at the cubature points at t_cur − dt, t_cur, t_next */
    double *F, *uv, *f;      /* F_r (nc × 9), u_r at the vertices (nv × 3), Bᵀ M a (o->n) */
    double *local, root[3];  /* the last pose evaluated (nb × 4) */
    double *rows;            /* the exact rows given to the object (8, plus the cut modes) */
    double cut;              /* sim_rig_set_cut's τ (1: none) */
    int kept;                /* free modes per coordinate block (after the fixed rows and any cut) */
} SimRig;

/* The rig of procedural shape (category, seed, mesh_res: as the object's skinning was made;
 * sigma: ds_procedural_weights' softness, 0 its default) attached to object o, whose skinning
 * frame is (p − center)·k and whose pose is `pose`. Evaluates the weights and their gradients
 * (central differences, δ = 1e-3 in p) at the object's cubature points and vertices, gives o
 * its exact rows (constant handle, global affine moments) and prepares o again. 0, or -1 with err set. */
int sim_rig_init(SimRig *r, SimObject *o, const char *category, uint64_t seed, int mesh_res, float sigma,
                 const double center[3], double k, const SimPose *pose, char *err, size_t errlen);
void sim_rig_free(SimRig *r);

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

/* Before the step of o from t₁ − dt to t₁: evaluates the rig at t₁ and points o's rig inputs
 * (rig_F, rig_uc, rig_uv, rig_f) at the rig's buffers for that step. Then sim_object_step or
 * sim_world_step. */
void sim_rig_advance(SimRig *r, SimObject *o, double t1, double dt);

/* The subspace's modes by their rig content: over the free modes z = N y the prepared object has
 * (sim_object_subspace: after the fixed regions and the rig's eight rows), the generalized
 * eigenproblem Nᵀ Q N y = λ Nᵀ M_b N y with Q = Bᵀ M A (Aᵀ M A)⁻¹ Aᵀ M B, A the rig's LBS basis
 * w_j X̃ᵀ at the cubature points (one coordinate block). λ_i ∈ [0, 1] is the squared
 * mass-weighted share of mode i's displacement that the rig can express; the modes are
 * M_b-orthogonal and also diagonalize Q, so any z of modes with λ ≤ τ² has its projection ≤ τ.
 * lam (≤ nb values) ascending; rows (may be NULL; ≤ nb × nb): row i = (M_b N y_i)ᵀ, the exact
 * constraint row that removes mode i and no other. Returns the number of modes, or -1. */
int sim_rig_modes(const SimRig *r, SimObject *o, double *lam, double *rows);
/* Complementarity at runtime, as an option (τ = 1: off, the paper's way): the modes whose rig
 * share λ exceeds τ² are removed from the object's subspace (exact rows), so the secondary
 * displacement's projection onto the rig space stays ≤ τ. *kept (may be NULL) gets the free
 * modes left per coordinate block. Prepares o again. 0, or -1 with err (e.g. nothing left). */
int sim_rig_set_cut(SimRig *r, SimObject *o, double tau, int *kept, char *err, size_t errlen);

/* ---- scenes (sim/scene.h's "rig" key) ----------------------------------------------------------
 *   rig: {object [-1: none], clip [""] (motion.h name: "walk", "trot", "cmu_01_01", a .bvh path
 *         relative to the scene's folder), clip_map [""] (a mapping JSON for a BVH clip, relative to
 *         the scene's folder; "": the built-in humanoid names), fps [30] (the clip's sampling), frames [0: as long as
 *         the scene], loop [false] (forward and back), seed [1], bvh_start [-1], t_stop [1e30] (s),
 *         sigma [0], cut [1] (sim_rig_set_cut's τ; 1: off),
 *         keys: [{bone, t, axis, deg}] (a local rotation of deg about axis at time t),
 *         drags: [{bone, target, t0 [0], t1 [0.5], t_release [1e30]}] (joint drags)}
 * The rigged object's skinning must be of the same procedural shape (its category, seed and
 * mesh_res are the rig's); the scene then holds that one object and no rigid bodies (world.c's
 * IPC does not see u_r). Its gaussians move with x = X + u_r + B z and F = F_r + (G z)ᵀ
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
    double cut;
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
 * parameters per bone, physskin.md §9), ‖P u_c‖_M / ‖u_c‖_M (0 when u_c = 0). */
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

#endif
