/* base/mat3.h — small 3×3, 3-vector and quaternion arithmetic on plain double arrays, header only: the
 * products, determinant, inverse and cross product that sim/ (rigid bodies, bindings, the FEM baseline)
 * and datasets/ (cameras) each used to carry a private copy of.
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
