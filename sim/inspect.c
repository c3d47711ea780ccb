/* sim/inspect.c — see inspect.h. */
#include <math.h>

#include "datasets/geometry/geometry.h"
#include "datasets/motion/rig.h"
#include "sim/inspect.h"

void sim_object_vertex_now(const SimObject *o, int64_t v, double x[3]) {
    for (int i = 0; i < 3; i++) {
        double s = o->Xv[3 * v + i] + (o->rig_uv ? o->rig_uv[3 * v + i] : 0);
        for (int64_t q = 0; q < o->nb; q++) s += o->Bv[v * o->nb + q] * o->z[i * o->nb + q];
        x[i] = s;
    }
}

int sim_objects_nearest_vertex(const SimObject *objs, int nobj, const double p[3], int64_t *vertex) {
    double best = INFINITY, x[3];
    int bk = 0;
    int64_t bv = 0;
    for (int k = 0; k < nobj; k++)
        for (int64_t v = 0; v < objs[k].nv; v++) {
            sim_object_vertex_now(&objs[k], v, x);
            double r2 = 0;
            for (int i = 0; i < 3; i++) r2 += (x[i] - p[i]) * (x[i] - p[i]);
            if (r2 < best) best = r2, bk = k, bv = v;
        }
    *vertex = bv;
    return bk;
}

void sim_objects_rest_bounds(const SimObject *objs, int nobj, double center[3], double *extent) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int k = 0; k < nobj; k++)
        for (int64_t v = 0; v < objs[k].nv; v++)
            for (int i = 0; i < 3; i++)
                lo[i] = fmin(lo[i], objs[k].Xv[3 * v + i]), hi[i] = fmax(hi[i], objs[k].Xv[3 * v + i]);
    ds_box_center_extent(lo, hi, center, extent);
}

void sim_points_centroid(const float *x, int64_t n, double c[3]) {
    c[0] = c[1] = c[2] = 0;
    for (int64_t v = 0; v < n; v++)
        for (int i = 0; i < 3; i++) c[i] += x[3 * v + i];
    for (int i = 0; i < 3; i++) c[i] /= (double)n;
}

double sim_rigid_distance2(const SimRigid *b, const double p[3]) {
    double d2 = 0;
    for (int i = 0; i < 3; i++) d2 += (b->c[i] - p[i]) * (b->c[i] - p[i]);
    return d2;
}

void sim_rig_bone_world(const SimRig *r, int b, double head[3], double tail[3]) {
    const DsBone *db = &r->shape.bones[b];
    for (int i = 0; i < 3; i++) {
        head[i] = r->off[i], tail[i] = r->off[i];
        for (int k = 0; k < 3; k++) head[i] += r->L[3 * i + k] * db->head[k], tail[i] += r->L[3 * i + k] * db->tail[k];
    }
}

void sim_rig_world_rotation(const SimRig *r, const double rv[3], double q[4]) {
    double a[3];
    for (int i = 0; i < 3; i++) a[i] = r->R[i] * rv[0] + r->R[3 + i] * rv[1] + r->R[6 + i] * rv[2];
    ds_quat_axis_angle(a, sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), q);
}
