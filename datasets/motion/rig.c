/* datasets/motion/rig.c — quaternions, FK and LBS for the procedural rigs (conventions in rig.h). */
#include <math.h>
#include <string.h>

#include "datasets/motion/rig.h"

#include "base/mat3.h"

void ds_quat_identity(double q[4]) { q[0] = 1, q[1] = q[2] = q[3] = 0; }

void ds_quat_axis_angle(const double axis[3], double angle, double q[4]) {
    double n = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    if (!(n > 0)) {
        ds_quat_identity(q);
        return;
    }
    double s = sin(0.5 * angle) / n;
    q[0] = cos(0.5 * angle), q[1] = axis[0] * s, q[2] = axis[1] * s, q[3] = axis[2] * s;
}

void ds_quat_mul(const double a[4], const double b[4], double out[4]) {
    double r[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                   a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                   a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                   a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
    memcpy(out, r, sizeof r);
}

void ds_quat_from_mat3(const double R[9], double q[4]) {
    /* Shepperd's method: divide by the largest of the four diagonal combinations */
    double tr = R[0] + R[4] + R[8];
    if (tr > 0) {
        double s = 2 * sqrt(1 + tr);
        q[0] = 0.25 * s, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
    } else if (R[0] > R[4] && R[0] > R[8]) {
        double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
        q[0] = (R[7] - R[5]) / s, q[1] = 0.25 * s, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
    } else if (R[4] > R[8]) {
        double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
        q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = 0.25 * s, q[3] = (R[5] + R[7]) / s;
    } else {
        double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
        q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = 0.25 * s;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double sg = q[0] < 0 ? -1 : 1;
    for (int k = 0; k < 4; k++) q[k] *= sg / n;
}

void ds_quat_between(const double a[3], const double b[3], double q[4]) {
    double na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), nb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    if (!(na > 0) || !(nb > 0)) {
        ds_quat_identity(q);
        return;
    }
    double u[3] = {a[0] / na, a[1] / na, a[2] / na}, v[3] = {b[0] / nb, b[1] / nb, b[2] / nb};
    double d = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
    if (d < -1 + 1e-12) {
        /* opposite: a half turn about any axis perpendicular to u */
        double ax[3] = {0, -u[2], u[1]};
        if (fabs(u[0]) > 0.9) ax[0] = -u[1], ax[1] = u[0], ax[2] = 0;
        ds_quat_axis_angle(ax, M_PI, q);
        return;
    }
    /* q = (1 + u·v, u × v) normalized: half the angle between them */
    q[0] = 1 + d, q[1] = u[1] * v[2] - u[2] * v[1], q[2] = u[2] * v[0] - u[0] * v[2], q[3] = u[0] * v[1] - u[1] * v[0];
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) q[k] /= n;
}

void ds_rig_fk(int nbones, const DsBone *bones, const double *local, const double root[3], double *Rout, double *hout,
               double *skin) {
    double Rb[9 * DS_RIG_MAX_BONES], hb[3 * DS_RIG_MAX_BONES];
    if (nbones > DS_RIG_MAX_BONES) nbones = DS_RIG_MAX_BONES;
    for (int j = 0; j < nbones; j++) {
        double L[9];
        base_quat_to_mat3(local + 4 * j, L);
        /* bones are few (≤ 48 in procedural.h): world rotations and heads live on the stack */
        double *R = Rb + 9 * j, *h = hb + 3 * j;
        int p = bones[j].parent;
        if (p < 0 || p >= j) {
            memcpy(R, L, sizeof L);
            for (int k = 0; k < 3; k++) h[k] = bones[j].head[k] + root[k];
        } else {
            const double *Rp = Rb + 9 * p;
            base_mat3_mul(Rp, L, R);
            double d[3];
            for (int k = 0; k < 3; k++) d[k] = (double)bones[j].head[k] - bones[p].head[k];
            for (int k = 0; k < 3; k++) h[k] = hb[3 * p + k] + Rp[3 * k] * d[0] + Rp[3 * k + 1] * d[1] + Rp[3 * k + 2] * d[2];
        }
        if (Rout) memcpy(Rout + 9 * j, R, sizeof(double) * 9);
        if (hout) memcpy(hout + 3 * j, h, sizeof(double) * 3);
        if (skin) {
            double *S = skin + 16 * j;
            for (int r = 0; r < 3; r++) {
                double t = h[r];
                for (int c = 0; c < 3; c++) S[4 * r + c] = R[3 * r + c], t -= R[3 * r + c] * bones[j].head[c];
                S[4 * r + 3] = t;
            }
            S[12] = S[13] = S[14] = 0, S[15] = 1;
        }
    }
}

void ds_rig_lbs(int64_t nv, const float *rest, int nbones, const float *weights, const double *skin, float *out) {
#pragma omp parallel for schedule(static) if (nv > 20000)
    for (int64_t v = 0; v < nv; v++) {
        const float *x = rest + 3 * v;
        double acc[3] = {0, 0, 0};
        for (int j = 0; j < nbones; j++) {
            double w = weights[v * nbones + j];
            if (w == 0) continue;
            const double *S = skin + 16 * j;
            for (int r = 0; r < 3; r++) acc[r] += w * (S[4 * r] * x[0] + S[4 * r + 1] * x[1] + S[4 * r + 2] * x[2] + S[4 * r + 3]);
        }
        for (int r = 0; r < 3; r++) out[3 * v + r] = (float)acc[r];
    }
}
