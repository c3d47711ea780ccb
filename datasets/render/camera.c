/* datasets/render/camera.c — pinhole cameras (OpenCV convention, see camera.h): look-at, rings and
 * Fibonacci spheres of cameras around an object, projection. */
#include <math.h>
#include <string.h>

#include "base/mat3.h"
#include "datasets/render/camera.h"

static void sub3(const double a[3], const double b[3], double out[3]) {
    for (int i = 0; i < 3; i++) out[i] = a[i] - b[i];
}

static double norm3(const double a[3]) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

static bool normalize3(double a[3]) {
    double n = norm3(a);
    if (!(n > 1e-300) || !isfinite(n)) return false;
    for (int i = 0; i < 3; i++) a[i] /= n;
    return true;
}

DsCamera ds_camera_look_at(const double eye[3], const double target[3], const double up[3], int width, int height,
                           double fov_y_deg) {
    DsCamera c = {.width = width, .height = height, .znear = 0.01, .zfar = 100.0};
    /* focal length from the vertical field of view: half the image height subtends fov/2 */
    double f = 0.5 * height / tan(0.5 * fov_y_deg * M_PI / 180.0);
    c.fx = c.fy = f; /* square pixels */
    c.cx = 0.5 * width, c.cy = 0.5 * height;

    /* camera axes in world coordinates: z forward (to the target), x right, y down; x × y = z.
     * Looking along z with `up` up, "right" is forward × up (right-handed world). */
    double z[3], x[3], y[3];
    sub3(target, eye, z);
    if (!normalize3(z)) z[0] = 0, z[1] = 0, z[2] = 1; /* eye on the target: any direction will do */
    base_vec3_cross(z, up, x);
    if (!(norm3(x) > 1e-9 * norm3(up)) || !normalize3(x)) {
        /* up (anti)parallel to the view direction, or zero: take the world axis least aligned
         * with the view, so cameras at the poles of a sphere still get a valid frame */
        double alt[3] = {0, 0, 0};
        int k = fabs(z[0]) < fabs(z[1]) ? (fabs(z[0]) < fabs(z[2]) ? 0 : 2) : (fabs(z[1]) < fabs(z[2]) ? 1 : 2);
        alt[k] = 1;
        base_vec3_cross(z, alt, x);
        normalize3(x);
    }
    base_vec3_cross(z, x, y); /* down = forward × right, so that right × down = forward */
    for (int i = 0; i < 3; i++) c.R[i] = x[i], c.R[3 + i] = y[i], c.R[6 + i] = z[i];
    for (int r = 0; r < 3; r++) c.t[r] = -(c.R[3 * r] * eye[0] + c.R[3 * r + 1] * eye[1] + c.R[3 * r + 2] * eye[2]);
    return c;
}

int ds_camera_ring(int n, double radius, double height, const double target[3], int width, int height_px,
                   double fov_y_deg, DsCamera *out) {
    static const double up[3] = {0, 1, 0};
    /* `height` is measured from the target, so height 0 gives a ring of level views. Camera 0
     * sits on +x of the target and the ring runs towards +z. */
    for (int i = 0; i < n; i++) {
        double a = 2.0 * M_PI * i / n;
        double eye[3] = {target[0] + radius * cos(a), target[1] + height, target[2] + radius * sin(a)};
        out[i] = ds_camera_look_at(eye, target, up, width, height_px, fov_y_deg);
    }
    return n > 0 ? n : 0;
}

int ds_camera_sphere(int n, double radius, const double target[3], int width, int height, double fov_y_deg,
                     DsCamera *out) {
    static const double up[3] = {0, 1, 0};
    /* Fibonacci lattice: equal-area bands in y (offset half a band so no camera sits exactly on
     * a pole) and the golden angle in longitude, the most even spread for any n. */
    const double golden = M_PI * (3.0 - sqrt(5.0));
    for (int i = 0; i < n; i++) {
        double y = 1.0 - 2.0 * (i + 0.5) / n;
        double r = sqrt(fmax(0.0, 1.0 - y * y)), a = golden * i;
        double eye[3] = {target[0] + radius * r * cos(a), target[1] + radius * y, target[2] + radius * r * sin(a)};
        out[i] = ds_camera_look_at(eye, target, up, width, height, fov_y_deg);
    }
    return n > 0 ? n : 0;
}

void ds_camera_center(const DsCamera *c, double out[3]) {
    for (int i = 0; i < 3; i++) out[i] = -(c->R[i] * c->t[0] + c->R[3 + i] * c->t[1] + c->R[6 + i] * c->t[2]);
}

void ds_camera_unproject(const DsCamera *c, double u, double v, double z, double X[3]) {
    double p[3] = {(u - c->cx) / c->fx * z - c->t[0], (v - c->cy) / c->fy * z - c->t[1], z - c->t[2]};
    for (int i = 0; i < 3; i++) X[i] = c->R[i] * p[0] + c->R[3 + i] * p[1] + c->R[6 + i] * p[2]; /* Rᵀ (Xc − t) */
}

int64_t ds_camera_backproject(const DsCamera *c, const float *depth, const float *alpha, double alpha_min, float *out,
                              int64_t max_points) {
    int64_t np = (int64_t)c->width * c->height, count = 0;
    for (int64_t i = 0; i < np; i++) count += alpha[i] > alpha_min && isfinite(depth[i]) && depth[i] > 0;
    if (count == 0 || max_points <= 0) return 0;
    int64_t stride = (count + max_points - 1) / max_points, k = 0, got = 0;
    for (int64_t i = 0; i < np && got < max_points; i++) {
        if (!(alpha[i] > alpha_min && isfinite(depth[i]) && depth[i] > 0)) continue;
        if (k++ % stride) continue;
        double X[3];
        ds_camera_unproject(c, (double)(i % c->width) + 0.5, (double)(i / c->width) + 0.5, depth[i], X);
        for (int a = 0; a < 3; a++) out[3 * got + a] = (float)X[a];
        got++;
    }
    return got;
}

bool ds_camera_project(const DsCamera *c, const double X[3], double uv[2], double *depth) {
    double p[3];
    for (int r = 0; r < 3; r++) p[r] = c->R[3 * r] * X[0] + c->R[3 * r + 1] * X[1] + c->R[3 * r + 2] * X[2] + c->t[r];
    if (depth) *depth = p[2];
    /* on or behind the camera plane there is no image point; uv is left untouched */
    if (!(p[2] > 0)) return false;
    if (uv) uv[0] = c->fx * p[0] / p[2] + c->cx, uv[1] = c->fy * p[1] / p[2] + c->cy;
    return true;
}

void ds_camera_elevation_azimuth(const DsCamera *c, const double target[3], double *elevation_deg, double *azimuth_deg) {
    double o[3];
    ds_camera_center(c, o);
    for (int a = 0; a < 3; a++) o[a] -= target[a];
    double r = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]);
    *elevation_deg = r > 0 ? asin(o[1] / r) * 180 / M_PI : 0;
    *azimuth_deg = atan2(o[0], o[2]) * 180 / M_PI;
}
