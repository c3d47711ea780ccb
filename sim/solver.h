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
 * k Σ_p ‖u_p − ū_p‖² instead (physskin.md §7). */
typedef struct {
    SimRegion region;
    double velocity[3];
    bool penalty;
    double stiffness; /* penalty mode only */
} SimDirichlet;

/* A contact plane n·x ≥ offset (n normalized on add), boundary penalty k Σ_p min(0, n·x_p −
 * offset)² over the contact points (the binding vertices, or the cubature points when the
 * object has none) — paper Eq. 14, physskin.md §7. */
typedef struct {
    double normal[3], offset, stiffness;
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

typedef struct {
    int max_iters;      /* Newton iterations per step (8) */
    double tol;         /* |Δzᵀg| < tol · M L² stops (1e-12) */
    double armijo;      /* sufficient decrease constant (1e-4) */
    int max_backtracks; /* halvings before the step counts as a failure (30) */
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
    SimNewtonOptions newton;
    bool no_projection;  /* tests: the exact Hessian, not its PSD projection */
    /* controls */
    int nplanes, ndirichlet, ndrags, nforces;
    SimPlane *planes;
    SimDirichlet *dirichlet;
    SimDrag *drags;
    SimForceField *forces;
    struct SimPrepared *prep; /* what sim_object_prepare derived from the controls */
    SimStepStats last;
} SimObject;

/* Builds the subspace from a skinning source, a material and a pose. 0, or -1 with err set. */
int sim_object_init(SimObject *o, const SimSkinning *sk, const SimMaterial *mat, const SimPose *pose, char *err,
                    size_t errlen);
void sim_object_free(SimObject *o);

/* Controls are copied; add them before the first step (or call sim_object_prepare again). */
int sim_object_add_plane(SimObject *o, const SimPlane *p, char *err, size_t errlen);
int sim_object_add_dirichlet(SimObject *o, const SimDirichlet *d, char *err, size_t errlen);
int sim_object_add_drag(SimObject *o, const SimDrag *d, char *err, size_t errlen);
int sim_object_add_force(SimObject *o, const SimForceField *f, char *err, size_t errlen);
/* Precomputes what the controls need (constraint null space, drag and force pull-backs). Called
 * by the first step when needed; 0, or -1 with err set (e.g. a Dirichlet region that holds no
 * point). */
int sim_object_prepare(SimObject *o, char *err, size_t errlen);

/* After prepare: the number of exactly constrained points and the dimension of the reduced
 * space Newton runs in (3 r; n when nothing is fixed exactly). */
void sim_object_constraint_info(const SimObject *o, int64_t *rows, int64_t *free_dims);

/* One implicit Euler step of dt. 0; -1 with err set only on a hard error (non-finite state,
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

#endif
