/* base/mat3.h — small 3×3, 3-vector and quaternion arithmetic on plain double arrays, header only: the
 * products, determinant, inverse, cross product and quaternion → rotation matrix that sim/ (rigid
 * bodies, bindings, the FEM baseline), datasets/ (cameras, rigs) and models/ (skelebones, partmm,
 * gaussians) each used to carry a private copy of.
 *
 * Matrices are row-major double[9]. Every function evaluates the same expression, in the same
 * order, as the copies it replaces, so callers' results are unchanged bit for bit (the build uses
 * -std=c11, which keeps the compiler from contracting a·b + c into an FMA). The outputs may alias
 * the inputs only where a function says so. */
#ifndef ANIMA_BASE_MAT3_H
#define ANIMA_BASE_MAT3_H

#include <math.h>

/* C = A B (C must not alias A or B) */
static inline void base_mat3_mul(const double A[9], const double B[9], double C[9]) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/* y = A x (y must not alias x) */
static inline void base_mat3_vec(const double A[9], const double x[3], double y[3]) {
    for (int i = 0; i < 3; i++) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

/* det A, expanded along the first row */
static inline double base_mat3_det(const double A[9]) {
    return A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) + A[2] * (A[3] * A[7] - A[4] * A[6]);
}

/* B = A⁻¹ as the adjugate over the determinant, each entry divided by det A (B must not alias A);
 * returns det A, for the caller to decide what is too singular to use (B is then inf or NaN
 * where det A is 0) */
static inline double base_mat3_inv(const double A[9], double B[9]) {
    double d = base_mat3_det(A);
    B[0] = (A[4] * A[8] - A[5] * A[7]) / d, B[1] = (A[2] * A[7] - A[1] * A[8]) / d, B[2] = (A[1] * A[5] - A[2] * A[4]) / d;
    B[3] = (A[5] * A[6] - A[3] * A[8]) / d, B[4] = (A[0] * A[8] - A[2] * A[6]) / d, B[5] = (A[2] * A[3] - A[0] * A[5]) / d;
    B[6] = (A[3] * A[7] - A[4] * A[6]) / d, B[7] = (A[1] * A[6] - A[0] * A[7]) / d, B[8] = (A[0] * A[4] - A[1] * A[3]) / d;
    return d;
}

/* c = a × b (c may alias a or b) */
static inline void base_vec3_cross(const double a[3], const double b[3], double c[3]) {
    double t0 = a[1] * b[2] - a[2] * b[1], t1 = a[2] * b[0] - a[0] * b[2], t2 = a[0] * b[1] - a[1] * b[0];
    c[0] = t0, c[1] = t1, c[2] = t2;
}

/* R = the row-major rotation matrix of the quaternion q (w x y z) taken as unit length, as given
 * (not normalized) */
static inline void base_unit_quat_to_mat3(const double q[4], double R[9]) {
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

/* R = the rotation matrix of q (w x y z) divided by its length (NaN where q is 0) */
static inline void base_quat_to_mat3(const double q[4], double R[9]) {
    double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double u[4] = {q[0] / l, q[1] / l, q[2] / l, q[3] / l};
    base_unit_quat_to_mat3(u, R);
}

/* out = the unit quaternion a fraction u of the way from a to b (w x y z) along the shorter arc
 * (b's sign flipped when a·b < 0); linear blending, renormalized, when they are within ~1.8° of
 * each other (sin θ too small to divide by). out may alias a or b. */
static inline void base_quat_slerp(const double a[4], const double b0[4], double u, double out[4]) {
    double b[4], d = a[0] * b0[0] + a[1] * b0[1] + a[2] * b0[2] + a[3] * b0[3];
    double s = d < 0 ? -1 : 1;
    for (int k = 0; k < 4; k++) b[k] = s * b0[k];
    d = fabs(d);
    double wa = 1 - u, wb = u;
    if (d < 0.9995) {
        double th = acos(d), sn = sin(th);
        wa = sin((1 - u) * th) / sn, wb = sin(u * th) / sn;
    }
    double n = 0;
    for (int k = 0; k < 4; k++) out[k] = wa * a[k] + wb * b[k], n += out[k] * out[k];
    n = sqrt(n);
    for (int k = 0; k < 4; k++) out[k] /= n;
}

#endif
