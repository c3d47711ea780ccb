/* sim/solver.h — reduced elastic dynamics in a skinning subspace (PhysSkin++ §III-D,
 * physskin.md §7): one deformable object, its precomputed subspace matrices, its controls
 * (gravity, Dirichlet regions, drags, force fields, contact planes), and implicit Euler by Newton.
 *
 * Coordinates. m learned handles plus the constant one (index m), nb = 4(m+1). physskin.md §1
 * orders z by handle (vec(T_1), ..., vec(T_m)); here z is grouped by output coordinate instead:
 * z = [z⁽⁰⁾; z⁽¹⁾; z⁽²⁾], z⁽ⁱ⁾[4k + l] = T_k[i][l] — the same numbers permuted. In this order
 * every linear map of the subspace is a Kronecker product with I₃:
 *   displacement  u_i(X) = b(X)ᵀ z⁽ⁱ⁾,           b[4k+l] = w_k(X) X̃_l,  X̃ = [X; 1]
 *   deformation   F_ij(X) = δ_ij + G_j(X)ᵀ z⁽ⁱ⁾,  G_j[4k+l] = w_k δ_jl [l<3] + ∂_j w_k X̃_l
 * so B = I₃ ⊗ bᵀ, dF/dz = I₃ ⊗ G (G the 3 × nb matrix of rows G_j) and the reduced mass
 * M_r = I₃ ⊗ M_b, M_b = Σ_c ρ V_c b_c b_cᵀ. Only the elastic Hessian couples the three blocks.
 *
 * Step (implicit Euler, physskin.md §7): minimize over z
 *   E(z) = ½ (z − z̃)ᵀ M_r (z − z̃) + dt² [ Σ_c V_c Ψ(F_c(z)) + E_ext(z) ],  z̃ = z₀ + dt ż₀
 * by Newton with a PSD-projected Hessian, a dense Cholesky (LAPACK dpotrf/dpotrs), Armijo
 * backtracking, and the stop |Δzᵀg| < tol · M L² (M the object's mass, L its rest bounding-box
 * diagonal: E is an energy × dt², kg m², so the test is dimensionless). Then ż = (z − z₀)/dt.
 * The step is world.h's with one object and nothing else (world.c): the one Newton problem over
 * sim/newton.h's driver, which without contact factors the object's block directly; solver_terms.c
 * supplies the terms of E one by one (SimTerm below). The sources: solver.c (the object, its rows,
 * controls and outputs), solver_prepare.c (sim_object_prepare: the subspaces and the controls'
 * pull-backs), solver_elastic.c (the elastic term and its lagged Hessian), solver_terms.c.
 *
 * All positions are world coordinates of the rest shape (the object's pose is applied when it is
 * built). f64 throughout. */
#ifndef ANIMA_SIM_SOLVER_H
#define ANIMA_SIM_SOLVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/material.h"
#include "sim/skinning.h"

typedef enum { SIM_REGION_BOX, SIM_REGION_SPHERE, SIM_REGION_ALL } SimRegionKind;

/* A region of rest space: box [lo, hi], sphere (center, radius), or everything. */
typedef struct {
    SimRegionKind kind;
    double lo[3], hi[3];
    double center[3], radius;
} SimRegion;

bool sim_region_contains(const SimRegion *r, const double x[3]);

/* Dirichlet: the cubature and binding points inside `region` follow ū(t) = velocity · t
 * (velocity 0: fixed). Exact mode (default) restricts z to the affine subspace where those
 * points' displacements equal ū: z⁽ⁱ⁾ = z_p⁽ⁱ⁾(t) + N y⁽ⁱ⁾ with N an orthonormal basis of the
 * null space of the constrained rows C of B (SVD, singular values ≤ 1e-10 σ_max count as zero)
 * and z_p = C⁺ ū the minimum-norm particular solution; Newton then runs in y. Penalty mode adds
 * k Σ_p ‖u_p − ū_p‖² instead (physskin.md §7).
 *
 * The same N also removes the directions the cubature does not observe (sim_object_prepare,
 * physskin.md §7's column conditioning): a learned handle whose support holds too few cubature
 * points (a thin limb on a coarse grid) moves the binding vertices, where contact acts, with
 * almost no mass and no elastic energy, and a floor contact throws it (1e76 J). Directions
 * that M_b does not see, or whose surface motion exceeds the mass-weighted interior motion by
 * more than 1e3 in mean square, are cut; the constant handle always stays. N is then not NULL
 * even without a Dirichlet region; well-sampled subspaces cut nothing. */
typedef struct {
    SimRegion region;
    double velocity[3];
    bool penalty;
    double stiffness; /* penalty mode only */
    /* Fixed exact regions (velocity 0) only; 0: off. Pinning a region of a skinning subspace
     * locks every learned handle whose weight reaches into it (the constraint holds on a 3D
     * set of points, so such a handle's affine map must vanish), and the object comes out
     * stiff. With falloff ℓ > 0 the learned handles' weights are multiplied by
     * f(d) = 1 − (1 − min(d/ℓ, 1))², d the distance to the region: zero on it, rising with
     * slope 2/ℓ off it (the strain may peak at the region's edge, as in a hanging body) and 1
     * from ℓ on. The constant handle is not masked, so the constraint then pins it alone and
     * every learned handle stays free. Applied to B, G (product rule), M_b when the region is
     * added: add such regions before any cubature optimization or binding is built. */
    double falloff;
} SimDirichlet;

/* A contact plane n·x ≥ offset (n normalized on add), boundary penalty k Σ_p min(0, n·x_p −
 * offset)² over the contact points (the binding vertices, or the cubature points when the
 * object has none) — paper Eq. 14, physskin.md §7. */
typedef struct {
    double normal[3], offset, stiffness;
    int material; /* its contact material for friction (sim/world.h: SimContactOptions.mu_pair; 0 the default) */
} SimPlane;

/* Interactive drag (physskin.md §7): E = ½ k Σ_c g_c ‖u_c − d(t)‖² over the cubature points,
 * g_c = exp(−‖X_c − grab‖² / 2 radius²), i.e. each point is pulled towards its rest position
 * moved by the cursor offset d(t) = target(t) − grab, where the target goes linearly from
 * grab (t ≤ t0) to `target` (t ≥ t1), and the spring lets go after t_release. */
typedef struct {
    double grab[3], radius, stiffness;
    double target[3];
    double t0, t1, t_release;
} SimDrag;

/* An external acceleration field a on the points of `region` during [t0, t1): the potential
 * −Σ_c ρ V_c a·x_c (as gravity, restricted in space and time). */
typedef struct {
    SimRegion region;
    double accel[3];
    double t0, t1;
} SimForceField;

/* Newton options. The Hessian is the expensive part of an iteration (the blocked assembly costs
 * about 20× a gradient at 1300 points), so it can be reused: with reuse_ratio > 0, an iteration
 * after the first keeps the last Cholesky factor (the chord / modified Newton step: still a
 * descent direction since the factor is of a PD matrix, so Armijo keeps it safe; convergence is
 * linear with rate ‖I − H_old⁻¹ H‖) unless the previous step backtracked or shrank gᵀM⁻¹g by
 * less than reuse_ratio, and at most max_hessians are assembled per step. Like kaolin's
 * simulator (a fixed ≤ 5 Newton iterations), a step is bounded by max_iters rather than run to
 * roundoff. Measured on the drop of bench/bench_sim.c (16 handles, 1327 points, floor penalty
 * 1e6) over 40 steps against a tol 1e-13, 50-iteration solve (max vertex deviation / motion):
 * tol 1e-12 plain Newton 6.6e-4 at 4.95 Hessians/step; tol 1e-10 plain 1.7e-3 at 3.6; tol 1e-10
 * with reuse_ratio 0.1 9.4e-3 at 2.8; tol 1e-9 1.4e-1 with chord steps only (max_hessians 1 even
 * blew up: stiff contact changes the active set within a step). A fixed budget of 5
 * iterations (kaolin's) is not enough on impact: dropping the ten procedural categories at
 * scale 0.3 onto the 1e6 floor (tests/test_sim.c), steps stopped unconverged after 5 iterations
 * raised the mechanical energy by 8–200 J (the velocity (z − z₀)/dt of an unfinished solve
 * carries the unbalanced force), while run to the tolerance the same drops never gained energy;
 * they took up to 41 iterations on impact steps and 1 in free flight. Hence the defaults: up to
 * 50 iterations and Hessians, tol 1e-10 of M L²; the stop test, not the budget, ends a step,
 * and one that hits the budget reports converged = false.
 *
 * elastic_lag (default 0.5) lags only the elastic term, the expensive one, which changes slowly
 * from one iterate or step to the next: it is kept across iterations and steps, and reassembled
 * when an iteration that used it backtracked or shrank gᵀM⁻¹g by less than elastic_lag; the
 * inertia, contact, drag and penalty terms (cheap, and stiff contact switches on and off within a
 * step) are exact at every iterate and the n × n matrix is refactored each time (n = 204 at 16
 * handles: ~0.2 ms). The step is Newton's with a Hessian that is exact but for the lagged
 * elastic part, so descent and the stop test are as above. Same drop, 60 steps against the tol
 * 1e-13 plain-Newton run: plain Newton tol 1e-10 1.6e-3 at 3.28 Hessians/step; elastic_lag 0.5
 * 9.0e-4 at 0.47 Hessians and 4.1 iterations/step, 5.6× less time; 0.1 1.2e-3 at 0.73; tol 1e-12
 * with 0.5 1.1e-4 at 0.50. When it is on, reuse_ratio is not used (every iteration refactors,
 * except that a matrix bitwise equal to the last one factored, as in free flight or under an
 * unchanged contact set, reuses its factor). */
typedef struct {
    int max_iters;      /* Newton iterations per step (50) */
    double tol;         /* |Δzᵀg| < tol · M L² stops (1e-10) */
    double armijo;      /* sufficient decrease constant (1e-4) */
    int max_backtracks; /* halvings before the step counts as a failure (30) */
    int max_hessians;   /* Hessian assemblies per step at most (50) */
    double reuse_ratio; /* 0: a new Hessian every iteration (0); e.g. 0.1: chord steps while they
                           shrink gᵀM⁻¹g tenfold */
    double elastic_lag; /* 0: the elastic Hessian anew with every Hessian; 0.5 (default): kept
                           across iterations and steps while they shrink gᵀM⁻¹g by this ratio */
} SimNewtonOptions;

void sim_newton_defaults(SimNewtonOptions *o);

/* Pose of the object's frame in the world: x_world = scale · R x_obj + translate. */
typedef struct {
    double scale;
    double R[9]; /* row-major rotation */
    double translate[3];
} SimPose;

SimPose sim_pose_identity(void);
/* R from XYZ Euler angles in degrees (R = Rz Ry Rx). */
void sim_pose_euler(SimPose *p, const double deg[3]);

typedef struct {
    int iters;           /* Newton iterations taken */
    int hessians;        /* of which assembled a new Hessian (the others reused it) */
    int failures;        /* iterations with no descent direction or a failed line search */
    int chol_retries;    /* Cholesky factorizations retried with a larger diagonal shift */
    int projected;       /* point Hessians changed by the PSD projection (last iteration) */
    bool converged;      /* the stop test passed within max_iters */
    double decrement;    /* the last |Δzᵀg| / (M L²) */
    double seconds;
} SimStepStats;

typedef struct {
    /* subspace */
    int64_t m, nb, n;    /* learned handles, 4(m+1), 3 nb */
    double mu, lam, rho;
    int64_t nc;
    double *Xc, *Vc;     /* nc × 3 world rest positions, nc volumes (world) */
    double *Bc;          /* nc × nb: b(X_c) */
    double *Gc;          /* 3nc × nb: rows G_j(X_c) */
    int64_t nv, nf;
    double *Xv, *Bv;     /* nv × 3, nv × nb (binding vertices) */
    int32_t *faces;
    double *Mb;          /* nb × nb, M_b = Σ ρ V_c b_c b_cᵀ */
    double *mvec;        /* nb, Σ ρ V_c b_c (gravity's pull-back) */
    double mass, diag;   /* Σ ρ V_c, rest bounding-box diagonal */
    /* state */
    double t;
    double *z, *zdot;    /* n each */
    double gravity[3];
    int contact_material; /* friction with other bodies and planes (sim/world.h: mu_pair; 0 the default) */
    SimNewtonOptions newton;
    bool no_projection;  /* tests: the exact Hessian, not its PSD projection */
    /* The elastic integration rule: Σ_e w_e Ψ(F(X_{idx_e})) over ne of the nc points (an
     * optimized cubature, An et al. 2008, sim/cubature.h); ne = 0: all nc points with V_c. The
     * mass, gravity, drags and contact keep using every point. Set by sim_object_set_cubature. */
    int64_t ne;
    int64_t *eidx;
    double *ew, *Ge;     /* ne weights; 3ne × nb rows G_j of the chosen points */
    /* controls */
    int nplanes, ndirichlet, ndrags, nforces;
    SimPlane *planes;
    SimDirichlet *dirichlet;
    SimDrag *drags;
    SimForceField *forces;
    struct SimPrepared *prep; /* what sim_object_prepare derived from the controls */
    SimStepStats last;
    /* Rig-complementary dynamics (sim/rig.h, physskin.md §9): x = X + u_r(t) + B z with the rig
     * displacement u_r prescribed and B the rig's complementary rows (sim_rig_init replaces them).
     * sim_rig_advance fills these before each step; all NULL without a rig. rig_rows (rig_nrows ×
     * nb): exact constraint rows with velocity 0 that prepare adds to the fixed regions' (an object
     * given them must be prepared again): the constant handle and the modes with too little
     * complement (sim/rig.h). rig_F: nc × 9 row-major deformation gradients of the rig at the
     * cubature points, F = rig_F + (G z)ᵀ in the elastic term. rig_uc, rig_uv: u_r at the cubature
     * points and binding vertices (planes and the outputs add them). The inertia gains no rig term:
     * the rig's acceleration pulls back to Bᵀ M a = 0 through complementary rows. The IPC contact
     * of world.c does not see u_r (scenes with a rig hold one object). */
    int64_t rig_nrows;
    const double *rig_rows;
    const double *rig_F, *rig_uc, *rig_uv;
    /* counts rewrites of rig_F in place: whoever refills the array rig_F points to increments it
     * (sim_rig_advance, sim_lbs_rig_advance), so that what is derived from rig_F per step (the
     * groups' rotations below) is computed once per (rig_F, rig_F_version), not every iteration */
    uint64_t rig_F_version;
    /* The lagged elastic Hessian's co-rotation (SimNewtonOptions.elastic_lag;
     * solver_elastic.c's corotate_kel): rig_ngroups > 0 groups of the cubature points (rig_group, nc: each point's
     * dominant bone). The Hessian is kept per group and turned, before it is used, by each group's
     * rotation since its assembly (the polar factor of the group's volume-weighted rig_F), so that
     * a rig's turning bones do not leave it behind. Set by sim_rig_attach; prepare again after a
     * change. 0: off. */
    int rig_ngroups;
    const int32_t *rig_group;
} SimObject;

/* Builds the subspace from a skinning source, a material and a pose. 0, or -1 with err set. */
int sim_object_init(SimObject *o, const SimSkinning *sk, const SimMaterial *mat, const SimPose *pose, char *err,
                    size_t errlen);
void sim_object_free(SimObject *o);

/* Integrate the elastic energy with k of the cubature points (indices idx into 0..nc−1, weights
 * w ≥ 0) instead of all of them with their volumes; k = 0 restores the full set. 0, or -1 with
 * err set. */
int sim_object_set_cubature(SimObject *o, int64_t k, const int64_t *idx, const double *w, char *err, size_t errlen);

/* Controls are copied; add them before the first step (or call sim_object_prepare again). */
int sim_object_add_plane(SimObject *o, const SimPlane *p, char *err, size_t errlen);
int sim_object_add_dirichlet(SimObject *o, const SimDirichlet *d, char *err, size_t errlen);
/* The product of the fixed regions' falloff factors at a rest point X (world) and its gradient:
 * what sim_object_add_dirichlet applied to the object's rows, for bindings built later. */
double sim_object_falloff(const SimObject *o, const double X[3], double dphi[3]);
/* b (nb) and, when given, G (3 × nb rows) of a point with the learned entries scaled by phi:
 * b ← phi b, G_j ← phi G_j + ∂_j phi b (the constant handle's entries unchanged). */
void sim_falloff_rows(int64_t m, int64_t nb, double phi, const double dphi[3], double *b, double *G);
int sim_object_add_drag(SimObject *o, const SimDrag *d, char *err, size_t errlen);
int sim_object_add_force(SimObject *o, const SimForceField *f, char *err, size_t errlen);
/* Precomputes what the controls need (constraint null space, drag and force pull-backs). Called
 * by the first step when needed; 0, or -1 with err set (e.g. a Dirichlet region that holds no
 * point). */
int sim_object_prepare(SimObject *o, char *err, size_t errlen);

/* After prepare: the number of exactly constrained points and the dimension of the reduced
 * space Newton runs in (3 r; n when nothing is fixed exactly). */
void sim_object_constraint_info(const SimObject *o, int64_t *rows, int64_t *free_dims);

/* One implicit Euler step of dt: sim_world_step on a world of this object alone (world.c; kept
 * with the prepared controls). 0; -1 with err set only on a hard error (non-finite state,
 * allocation); Newton failures are counted in o->last, not errors. */
int sim_object_step(SimObject *o, double dt, char *err, size_t errlen);

/* Positions x = X + u at the binding vertices (nv × 3) or the cubature points (nc × 3). */
void sim_object_vertices(const SimObject *o, double *x);
void sim_object_cubature_positions(const SimObject *o, double *x);
/* Deformation gradients at the cubature points (nc × 9, row-major). */
void sim_object_cubature_F(const SimObject *o, double *F);

/* Mechanical energy: kinetic ½ żᵀ M_r ż, elastic Σ V Ψ, gravity −Σ ρ V g·u (zero at rest),
 * plane penalties. */
typedef struct {
    double kinetic, elastic, gravity, contact, total;
} SimEnergy;
SimEnergy sim_object_energy(const SimObject *o);

/* The elastic part alone at z (n): Σ V Ψ, and optionally its gradient (n) and PSD-projected
 * Hessian (n × n, row-major), assembled as in the solver (for tests and benchmarks). Returns the
 * energy. */
double sim_object_elastic(const SimObject *o, const double *z, double *grad, double *hess);

/* The step objective's terms, each with value, gradient and Hessian in one shape (solver_terms.c):
 *   INERTIA    ½ Σ_i (z⁽ⁱ⁾ − z̃⁽ⁱ⁾)ᵀ M_b (z⁽ⁱ⁾ − z̃⁽ⁱ⁾)
 *   ELASTIC    Σ_c V_c Ψ(F_c(z)) (Hessian PSD-projected unless no_projection)
 *   GRAVITY    −Σ ρ V a·u, gravity and the force fields active at t
 *   DRAG       ½ k Σ_c g_c ‖u_c − d(t)‖² over the drags held at t
 *   DIRICHLET  k Σ_p ‖u_p − v t‖² over the penalty fixed regions
 *   PLANES     k Σ_p min(0, n·x_p − h)² over the contact points (Gauss–Newton exact off the kink)
 * The objective is INERTIA + dt² (the rest); world.h adds the IPC barrier. */
typedef enum {
    SIM_TERM_INERTIA,
    SIM_TERM_ELASTIC,
    SIM_TERM_GRAVITY,
    SIM_TERM_DRAG,
    SIM_TERM_DIRICHLET,
    SIM_TERM_PLANES,
    SIM_NTERMS
} SimTerm;
/* One term alone at z (ztil: the inertial target, used by INERTIA; t: time), unscaled; g (n) and H
 * (n × n) are overwritten with its gradient and Hessian when given. Prepares the object if
 * needed (NAN when that fails). For the derivative checks of tests/test_sim_energy.c. */
double sim_object_term(SimObject *o, SimTerm term, const double *z, const double *ztil, double t, double *g, double *H);

/* ---- for sim/world.c (coupled multi-object steps) ---------------------------------------------
 * The step objective E(z) above at z with inertial target ztil (n each), at time t; g (n) and H
 * (n × n, row-major, PSD-projected) are overwritten when given. Prepares the object if needed
 * (NAN when that fails). */
double sim_object_objective(SimObject *o, const double *z, const double *ztil, double dt, double t, double *g,
                            double *H);
/* The step Hessian at z as above, but with the elastic term lagged (SimNewtonOptions.elastic_lag):
 * the one kept from the last assembly unless `fresh` (or none is kept), when it is assembled at z
 * and kept; inertia and the external terms are exact at z. Returns whether it assembled. */
bool sim_object_lagged_hessian(SimObject *o, const double *z, double dt, double t, bool fresh, double *H);
/* After sim_object_lagged_hessian: NULL when H holds the whole step Hessian; otherwise H left the
 * elastic term out and this is that term already in the subspace's coordinates, unscaled (3r × 3r,
 * in (I ⊗ N)ᵀ · (I ⊗ N)'s block order): the caller adds dt² times it to its reduced H. A rigged
 * object with a subspace keeps its co-rotated Hessian there (r of nb coordinates: less to turn). */
const double *sim_object_lagged_reduced(const SimObject *o);
/* The step's inertial prediction z̃ = z + dt ż (ztil, n) and initial guess (z, n): z̃, under a rig
 * plus dt² times the last step's acceleration (ż − ż at the previous call) / its dt, projected onto
 * the exact-Dirichlet subspace at time t1; tmp_n (n) and tmp_r (3r) are scratch. Remembers ż for the
 * next call. The object must be prepared. */
void sim_object_predict(SimObject *o, double dt, double t1, double *ztil, double *z, double *tmp_n, double *tmp_r);
/* The exact-Dirichlet and observable subspace: z⁽ⁱ⁾ = t · zp_rate⁽ⁱ⁾ + N y⁽ⁱ⁾ (N nb × r, NULL when
 * unconstrained and nothing is cut;
 * zp_rate 3 × nb) and Lm, the Cholesky factor (LAPACK lower, r × r) of Nᵀ M_b N. Returns r (-1 when
 * the object cannot be prepared). */
int64_t sim_object_subspace(SimObject *o, const double **N, const double **zp_rate, const double **Lm);
/* sim_object_step's world of one, kept with the prepared state it points into and released with it
 * by `release` (so the solver's sources do not call into world.c); NULL before the first step. */
void *sim_object_solo(const SimObject *o);
void sim_object_set_solo(SimObject *o, void *solo, void (*release)(void *));

#endif
