/* sim/rigid.h — rigid bodies for the world step (sim/world.h): mass properties from a closed
 * triangle mesh, a symplectic Euler integrator for position/quaternion and linear/angular
 * velocity, impulse contact with the planes, and the contact force the deformables exert on it.
 *
 * Coupling with the deformables (issue 7 item 3, physskin.md §7 "rigid–deformable") is
 * staggered with a one-step lag: the rigid body moves first, with the barrier reaction forces
 * from the previous deformable solve; during the deformable solve its vertices are prescribed
 * geometry (fixed at the new pose); the solve's barrier forces on those vertices are then stored
 * for the next step. The rigid move is itself limited by point–point CCD against the
 * deformables' current points, so the IPC invariant (every pair distance > 0) also holds for
 * rigid–deformable pairs. The lag makes the exchange explicit: stable while the barrier's
 * stiffness κ b″ stays below ~4 m / dt² of the rigid mass m (the world picks κ accordingly). */
#ifndef ANIMA_SIM_RIGID_H
#define ANIMA_SIM_RIGID_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/mesh.h"
#include "sim/solver.h"

typedef struct {
    /* body frame: origin at the center of mass */
    int64_t nv, nf;
    double *Xb;        /* nv × 3 vertices in the body frame */
    int32_t *faces;    /* nf × 3 */
    double mass, Ib[9];/* inertia tensor about the COM, body frame */
    double Ib_inv[9];
    /* state */
    double c[3], q[4]; /* COM position, orientation quaternion (w, x, y, z), body → world */
    double v[3], w[3]; /* linear velocity, angular velocity (world) */
    double gravity[3];
    double restitution, friction; /* plane impulses: normal restitution e, Coulomb μ */
    int contact_material;         /* friction with the deformables (sim/world.h: mu_pair; 0 the default) */
    /* contact force and torque (about c) from the last deformable solve (the one-step lag) */
    double force[3], torque[3];
    double color[3];
} SimRigid;

/* Mass properties by the divergence theorem over signed tetrahedra (origin, triangle): volume,
 * center of mass and the second moment of a closed, outward-oriented mesh (Mirtich 1996; Tonon
 * 2004). Vertices are re-centred on the COM; the pose places that COM at `pose` (scale, rotation,
 * translation apply to the mesh as given). 0, or -1 with err set (open/inverted mesh: V ≤ 0). */
int sim_rigid_init(SimRigid *r, const DsMesh *mesh, double density, const SimPose *pose, char *err, size_t errlen);
void sim_rigid_free(SimRigid *r);

/* A closed icosphere of the given radius (`subdiv` Loop-style midpoint subdivisions of the
 * icosahedron: 12, 42, 162, 642, ... vertices) and an axis-aligned box mesh, as DsMesh. */
int sim_mesh_icosphere(double radius, int subdiv, DsMesh *m);
int sim_mesh_box(const double half[3], DsMesh *m);

/* world positions of the vertices: c + R(q) X_b (nv × 3) */
void sim_rigid_vertices(const SimRigid *r, double *x);

/* The velocity update of symplectic Euler: v += dt (g + f/m), ω += dt I⁻¹(τ − ω × I ω) (world
 * inertia I = R I_b Rᵀ), then sequential impulses against the planes for the vertices that
 * would end below them, so the velocity used for the move is already contact-free. */
void sim_rigid_update_velocity(SimRigid *r, const SimPlane *planes, int nplanes, double dt);
/* Moves by the fraction beta ∈ [0, 1] of the step c += β dt v, q ← exp(β dt ω/2) q (the CCD
 * limit; 1 normally), then lifts the body out of any plane it still penetrates. */
void sim_rigid_move(SimRigid *r, const SimPlane *planes, int nplanes, double dt, double beta);
/* The vertex displacement of a full move (nv × 3), for the CCD of the move against deformables */
void sim_rigid_trial_displacement(const SimRigid *r, double dt, double *dx);

/* kinetic ½ m v² + ½ ωᵀ I ω and gravity −m g·c */
double sim_rigid_energy(const SimRigid *r);

#endif
