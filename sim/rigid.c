/* sim/rigid.c — rigid bodies: mass properties, symplectic Euler, plane impulses (rigid.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"
#include "sim/internal.h"
#include "sim/rigid.h"

static int mat3_inv(const double A[9], double B[9]) {
    double c0 = A[4] * A[8] - A[5] * A[7], c1 = A[5] * A[6] - A[3] * A[8], c2 = A[3] * A[7] - A[4] * A[6];
    double det = A[0] * c0 + A[1] * c1 + A[2] * c2;
    if (!(fabs(det) > 0)) return -1;
    double id = 1 / det;
    B[0] = c0 * id, B[1] = (A[2] * A[7] - A[1] * A[8]) * id, B[2] = (A[1] * A[5] - A[2] * A[4]) * id;
    B[3] = c1 * id, B[4] = (A[0] * A[8] - A[2] * A[6]) * id, B[5] = (A[2] * A[3] - A[0] * A[5]) * id;
    B[6] = c2 * id, B[7] = (A[1] * A[6] - A[0] * A[7]) * id, B[8] = (A[0] * A[4] - A[1] * A[3]) * id;
    return 0;
}

void sim_rigid_free(SimRigid *r) {
    free(r->Xb), free(r->faces);
    memset(r, 0, sizeof *r);
}

int sim_rigid_init(SimRigid *r, const DsMesh *mesh, double density, const SimPose *pose, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    if (!(density > 0) || mesh->nv < 4 || mesh->nf < 4) {
        base_errf(err, errlen, "rigid body: need density > 0 and a closed mesh (got %lld vertices, %lld faces)",
                (long long)mesh->nv, (long long)mesh->nf);
        return -1;
    }
    r->nv = mesh->nv, r->nf = mesh->nf;
    r->Xb = malloc(sizeof(double) * 3 * (size_t)r->nv);
    r->faces = malloc(sizeof(int32_t) * 3 * (size_t)r->nf);
    if (!r->Xb || !r->faces) {
        sim_rigid_free(r);
        base_errf(err, errlen, "rigid body: out of memory");
        return -1;
    }
    /* the mesh scaled and rotated (not translated) */
    for (int64_t v = 0; v < r->nv; v++) {
        double X[3] = {mesh->v[3 * v], mesh->v[3 * v + 1], mesh->v[3 * v + 2]};
        for (int i = 0; i < 3; i++)
            r->Xb[3 * v + i] = pose->scale * (pose->R[3 * i] * X[0] + pose->R[3 * i + 1] * X[1] + pose->R[3 * i + 2] * X[2]);
    }
    memcpy(r->faces, mesh->f, sizeof(int32_t) * 3 * (size_t)r->nf);
    /* signed tetrahedra (0, a, b, c): V = det/6, first moment V (a+b+c)/4, second moment
     * C = V/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ), s = a + b + c (Tonon 2004) */
    double V = 0, m1[3] = {0, 0, 0}, C[9] = {0};
    for (int64_t f = 0; f < r->nf; f++) {
        const double *a = r->Xb + 3 * r->faces[3 * f], *b = r->Xb + 3 * r->faces[3 * f + 1], *c = r->Xb + 3 * r->faces[3 * f + 2];
        double bc[3];
        base_vec3_cross(b, c, bc);
        double v = (a[0] * bc[0] + a[1] * bc[1] + a[2] * bc[2]) / 6;
        double s[3] = {a[0] + b[0] + c[0], a[1] + b[1] + c[1], a[2] + b[2] + c[2]};
        V += v;
        for (int i = 0; i < 3; i++) {
            m1[i] += v * s[i] / 4;
            for (int j = 0; j < 3; j++) C[3 * i + j] += v / 20 * (a[i] * a[j] + b[i] * b[j] + c[i] * c[j] + s[i] * s[j]);
        }
    }
    if (!(V > 0)) {
        sim_rigid_free(r);
        base_errf(err, errlen, "rigid body: the mesh encloses volume %g (must be closed and outward-oriented)", V);
        return -1;
    }
    double com[3] = {m1[0] / V, m1[1] / V, m1[2] / V};
    r->mass = density * V;
    /* about the COM: C_com = C − V com comᵀ; I = ρ (tr(C) I₃ − C) */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[3 * i + j] -= V * com[i] * com[j];
    double trC = C[0] + C[4] + C[8];
    for (int i = 0; i < 9; i++) r->Ib[i] = density * ((i % 4 == 0) * trC - C[i]);
    if (mat3_inv(r->Ib, r->Ib_inv)) {
        sim_rigid_free(r);
        base_errf(err, errlen, "rigid body: singular inertia tensor");
        return -1;
    }
    for (int64_t v = 0; v < r->nv; v++)
        for (int i = 0; i < 3; i++) r->Xb[3 * v + i] -= com[i];
    for (int i = 0; i < 3; i++) r->c[i] = pose->translate[i] + com[i];
    r->q[0] = 1; /* the pose's rotation is baked into Xb */
    r->restitution = 0.3, r->friction = 0.5;
    r->color[0] = r->color[1] = r->color[2] = 0.6;
    return 0;
}

void sim_rigid_vertices(const SimRigid *r, double *x) {
    double R[9];
    base_unit_quat_to_mat3(r->q, R);
    for (int64_t v = 0; v < r->nv; v++) {
        base_mat3_vec(R, r->Xb + 3 * v, x + 3 * v);
        for (int i = 0; i < 3; i++) x[3 * v + i] += r->c[i];
    }
}

static void world_inertia(const SimRigid *r, const double R[9], double I[9], double Iinv[9]) {
    double T[9], Rt[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Rt[3 * i + j] = R[3 * j + i];
    if (I) base_mat3_mul(R, r->Ib, T), base_mat3_mul(T, Rt, I);
    if (Iinv) base_mat3_mul(R, r->Ib_inv, T), base_mat3_mul(T, Rt, Iinv);
}

void sim_rigid_update_velocity(SimRigid *r, const SimPlane *planes, int nplanes, double dt) {
    double R[9], I[9], Iinv[9], Iw[3], gyro[3], tq[3], dw[3];
    base_unit_quat_to_mat3(r->q, R);
    world_inertia(r, R, I, Iinv);
    for (int i = 0; i < 3; i++) r->v[i] += dt * (r->gravity[i] + r->force[i] / r->mass);
    base_mat3_vec(I, r->w, Iw);
    base_vec3_cross(r->w, Iw, gyro);
    for (int i = 0; i < 3; i++) tq[i] = r->torque[i] - gyro[i];
    base_mat3_vec(Iinv, tq, dw);
    for (int i = 0; i < 3; i++) r->w[i] += dt * dw[i];
    /* sequential impulses on the vertices whose end position would be below a plane: the
     * normal impulse makes the approach speed −e × its value (e = 0 at low speed, so a resting
     * body does not jitter), the tangential one is clamped by Coulomb's cone. A few sweeps over
     * the contacts converge for the convex bodies the scenes use. */
    for (int sweep = 0; sweep < 4; sweep++) {
        int any = 0;
        for (int pl = 0; pl < nplanes; pl++) {
            const double *n = planes[pl].normal;
            for (int64_t k = 0; k < r->nv; k++) {
                double rv[3], x[3], vp[3], wr[3];
                base_mat3_vec(R, r->Xb + 3 * k, rv);
                for (int i = 0; i < 3; i++) x[i] = r->c[i] + rv[i];
                base_vec3_cross(r->w, rv, wr);
                for (int i = 0; i < 3; i++) vp[i] = r->v[i] + wr[i];
                double gap = n[0] * x[0] + n[1] * x[1] + n[2] * x[2] - planes[pl].offset;
                double vn = n[0] * vp[0] + n[1] * vp[1] + n[2] * vp[2];
                if (gap + dt * vn >= 0 || vn >= 0) continue;
                /* effective mass along a direction u: 1/m + (r × u)ᵀ I⁻¹ (r × u) */
                double rn[3], Irn[3], e = -vn > 0.1 ? r->restitution : 0;
                base_vec3_cross(rv, n, rn);
                base_mat3_vec(Iinv, rn, Irn);
                double kn = 1 / r->mass + rn[0] * Irn[0] + rn[1] * Irn[1] + rn[2] * Irn[2];
                double jn = -(1 + e) * vn / kn, J[3];
                double vt[3] = {vp[0] - vn * n[0], vp[1] - vn * n[1], vp[2] - vn * n[2]};
                double vtl = sqrt(vt[0] * vt[0] + vt[1] * vt[1] + vt[2] * vt[2]), jt = 0, t[3] = {0, 0, 0};
                if (vtl > 1e-12) {
                    for (int i = 0; i < 3; i++) t[i] = vt[i] / vtl;
                    double rt[3], Irt[3];
                    base_vec3_cross(rv, t, rt);
                    base_mat3_vec(Iinv, rt, Irt);
                    double kt = 1 / r->mass + rt[0] * Irt[0] + rt[1] * Irt[1] + rt[2] * Irt[2];
                    jt = fmin(vtl / kt, r->friction * jn);
                }
                for (int i = 0; i < 3; i++) J[i] = jn * n[i] - jt * t[i];
                double rJ[3], dW[3];
                base_vec3_cross(rv, J, rJ);
                base_mat3_vec(Iinv, rJ, dW);
                for (int i = 0; i < 3; i++) r->v[i] += J[i] / r->mass, r->w[i] += dW[i];
                any = 1;
            }
        }
        if (!any) break;
    }
}

/* q ← exp(θ/2 axis) q for the rotation vector θ = w dt β */
static void rotate_q(double q[4], const double w[3], double h) {
    double th[3] = {w[0] * h, w[1] * h, w[2] * h};
    double a = sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2]);
    double s = a > 1e-12 ? sin(a / 2) / a : 0.5, dq[4] = {cos(a / 2), s * th[0], s * th[1], s * th[2]};
    double n[4] = {dq[0] * q[0] - dq[1] * q[1] - dq[2] * q[2] - dq[3] * q[3],
                   dq[0] * q[1] + dq[1] * q[0] + dq[2] * q[3] - dq[3] * q[2],
                   dq[0] * q[2] - dq[1] * q[3] + dq[2] * q[0] + dq[3] * q[1],
                   dq[0] * q[3] + dq[1] * q[2] - dq[2] * q[1] + dq[3] * q[0]};
    double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2] + n[3] * n[3]);
    for (int i = 0; i < 4; i++) q[i] = n[i] / l;
}

void sim_rigid_trial_displacement(const SimRigid *r, double dt, double *dx) {
    SimRigid t = *r;
    double R0[9], R1[9];
    base_unit_quat_to_mat3(r->q, R0);
    rotate_q(t.q, r->w, dt);
    base_unit_quat_to_mat3(t.q, R1);
    for (int64_t v = 0; v < r->nv; v++) {
        double a[3], b[3];
        base_mat3_vec(R0, r->Xb + 3 * v, a);
        base_mat3_vec(R1, r->Xb + 3 * v, b);
        for (int i = 0; i < 3; i++) dx[3 * v + i] = b[i] - a[i] + dt * r->v[i];
    }
}

void sim_rigid_move(SimRigid *r, const SimPlane *planes, int nplanes, double dt, double beta) {
    for (int i = 0; i < 3; i++) r->c[i] += beta * dt * r->v[i];
    rotate_q(r->q, r->w, beta * dt);
    double R[9];
    base_unit_quat_to_mat3(r->q, R);
    for (int pl = 0; pl < nplanes; pl++) {
        const double *n = planes[pl].normal;
        double lowest = INFINITY;
        for (int64_t k = 0; k < r->nv; k++) {
            double rv[3];
            base_mat3_vec(R, r->Xb + 3 * k, rv);
            lowest = fmin(lowest, n[0] * (r->c[0] + rv[0]) + n[1] * (r->c[1] + rv[1]) + n[2] * (r->c[2] + rv[2]) - planes[pl].offset);
        }
        if (lowest < 0)
            for (int i = 0; i < 3; i++) r->c[i] -= lowest * n[i];
    }
}

double sim_rigid_energy(const SimRigid *r) {
    double R[9], I[9], Iw[3];
    base_unit_quat_to_mat3(r->q, R);
    world_inertia(r, R, I, NULL);
    base_mat3_vec(I, r->w, Iw);
    double e = 0.5 * r->mass * (r->v[0] * r->v[0] + r->v[1] * r->v[1] + r->v[2] * r->v[2]);
    e += 0.5 * (r->w[0] * Iw[0] + r->w[1] * Iw[1] + r->w[2] * Iw[2]);
    e -= r->mass * (r->gravity[0] * r->c[0] + r->gravity[1] * r->c[1] + r->gravity[2] * r->c[2]);
    return e;
}

/* ---- meshes --------------------------------------------------------------------------------- */

static int64_t mid_vertex(double *v, int64_t *nv, int64_t a, int64_t b, int64_t *cache_a, int64_t *cache_b, int64_t *cache_m,
                          int64_t *nc) {
    for (int64_t k = 0; k < *nc; k++)
        if ((cache_a[k] == a && cache_b[k] == b) || (cache_a[k] == b && cache_b[k] == a)) return cache_m[k];
    double m[3], l = 0;
    for (int i = 0; i < 3; i++) m[i] = 0.5 * (v[3 * a + i] + v[3 * b + i]), l += m[i] * m[i];
    l = sqrt(l);
    for (int i = 0; i < 3; i++) v[3 * *nv + i] = m[i] / l;
    cache_a[*nc] = a, cache_b[*nc] = b, cache_m[*nc] = *nv;
    (*nc)++;
    return (*nv)++;
}

int sim_mesh_icosphere(double radius, int subdiv, DsMesh *m) {
    memset(m, 0, sizeof *m);
    if (subdiv < 0 || subdiv > 5) return -1;
    int64_t nf_final = 20, nv_final = 12;
    for (int s = 0; s < subdiv; s++) nv_final += nf_final * 3 / 2, nf_final *= 4;
    double *v = malloc(sizeof(double) * 3 * (size_t)nv_final);
    int32_t *f = malloc(sizeof(int32_t) * 3 * (size_t)nf_final), *g = malloc(sizeof(int32_t) * 3 * (size_t)nf_final);
    int64_t *ca = malloc(sizeof(int64_t) * (size_t)nf_final * 2), *cb = malloc(sizeof(int64_t) * (size_t)nf_final * 2),
            *cm = malloc(sizeof(int64_t) * (size_t)nf_final * 2);
    if (!v || !f || !g || !ca || !cb || !cm) {
        free(v), free(f), free(g), free(ca), free(cb), free(cm);
        return -1;
    }
    double t = (1 + sqrt(5.0)) / 2;
    const double base[12][3] = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0}, {0, -1, t}, {0, 1, t},
                                {0, -1, -t}, {0, 1, -t}, {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
    const int32_t tri[20][3] = {{0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
                                {11, 10, 2}, {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8},
                                {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1}};
    for (int k = 0; k < 12; k++) {
        double l = sqrt(base[k][0] * base[k][0] + base[k][1] * base[k][1] + base[k][2] * base[k][2]);
        for (int i = 0; i < 3; i++) v[3 * k + i] = base[k][i] / l;
    }
    memcpy(f, tri, sizeof tri);
    int64_t nv = 12, nf = 20;
    for (int s = 0; s < subdiv; s++) {
        /* the edge-midpoint cache is searched linearly per level: fine for ≤ 5 levels of a
         * handful of rigid bodies, built once */
        int64_t nc = 0, ng = 0;
        for (int64_t k = 0; k < nf; k++) {
            int64_t a = f[3 * k], b = f[3 * k + 1], c = f[3 * k + 2];
            int64_t ab = mid_vertex(v, &nv, a, b, ca, cb, cm, &nc), bc = mid_vertex(v, &nv, b, c, ca, cb, cm, &nc),
                    cx = mid_vertex(v, &nv, c, a, ca, cb, cm, &nc);
            int32_t q[12] = {(int32_t)a, (int32_t)ab, (int32_t)cx, (int32_t)b, (int32_t)bc, (int32_t)ab,
                             (int32_t)c, (int32_t)cx, (int32_t)bc, (int32_t)ab, (int32_t)bc, (int32_t)cx};
            memcpy(g + 3 * ng, q, sizeof q);
            ng += 4;
        }
        memcpy(f, g, sizeof(int32_t) * 3 * (size_t)ng);
        nf = ng;
    }
    m->nv = nv, m->nf = nf;
    m->v = malloc(sizeof(float) * 3 * (size_t)nv);
    m->f = f;
    free(g), free(ca), free(cb), free(cm);
    if (!m->v) {
        free(v), ds_mesh_free(m);
        return -1;
    }
    for (int64_t k = 0; k < 3 * nv; k++) m->v[k] = (float)(radius * v[k]);
    free(v);
    return 0;
}

int sim_mesh_box(const double half[3], DsMesh *m) {
    memset(m, 0, sizeof *m);
    m->nv = 8, m->nf = 12;
    m->v = malloc(sizeof(float) * 24);
    m->f = malloc(sizeof(int32_t) * 36);
    if (!m->v || !m->f) {
        ds_mesh_free(m);
        return -1;
    }
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 3; i++) m->v[3 * k + i] = (float)((k >> i & 1) ? half[i] : -half[i]);
    /* outward-oriented: corner k has bit i set for +half along axis i */
    static const int32_t F[36] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                  2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
    memcpy(m->f, F, sizeof F);
    return 0;
}
