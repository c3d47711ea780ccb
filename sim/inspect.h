/* sim/inspect.h — what a viewer asks of a running simulation (tools/view_live.c): where one
 * vertex of an object is now, which object vertex is nearest a point, the objects' rest bounds
 * and the mean of their published positions, how far a rigid body has gone, a rig's bones in the
 * world and a rotation given in world axes as the rig's quaternion. Read-only: nothing here
 * changes a simulation. */
#ifndef ANIMA_SIM_INSPECT_H
#define ANIMA_SIM_INSPECT_H

#include <stdint.h>

#include "sim/rig.h"
#include "sim/rigid.h"
#include "sim/solver.h"

/* Vertex v of o now: x = X_v + u_r + Σ_q B_v[q] z⁽ⁱ⁾[q] (sim/solver.h; u_r the rig's displacement
 * when o is rigged). The same point sim_object_vertices gives, for one vertex. */
void sim_object_vertex_now(const SimObject *o, int64_t v, double x[3]);

/* The vertex of objs[0 .. nobj) nearest p now (sim_object_vertex_now; the first of equals):
 * returns its object and writes its index in that object to *vertex (0 and 0 when there is
 * no vertex at all). */
int sim_objects_nearest_vertex(const SimObject *objs, int nobj, const double p[3], int64_t *vertex);

/* The objects' rest vertices' (Xv) bounding box: its center and its largest side. */
void sim_objects_rest_bounds(const SimObject *objs, int nobj, double center[3], double *extent);

/* The mean of n positions (n × 3 floats, summed in double), e.g. a published frame's. */
void sim_points_centroid(const float *x, int64_t n, double c[3]);

/* |c − p|², the squared distance of b's center of mass from p. */
double sim_rigid_distance2(const SimRigid *b, const double p[3]);

/* Bone b of r at rest in the world (the rig frame's p → L p + off): its head and tail. */
void sim_rig_bone_world(const SimRig *r, int b, double head[3], double tail[3]);

/* The rotation vector rv (angle × unit axis, radians, in world axes) as a unit quaternion
 * (w, x, y, z) in the rig's axes, which are the object pose's rotation R away: axis Rᵀ rv.
 * The identity for rv = 0. What sim_rig_set_joint_rotation takes. */
void sim_rig_world_rotation(const SimRig *r, const double rv[3], double q[4]);

#endif
