/* tests/test_camera.c — pinhole cameras: look-at frames are rotations in the OpenCV convention
 * (x right, y down, z forward), targets land on the principal point at their distance, rings
 * and Fibonacci spheres all look at their target, and projection tells front from behind. */
#include <string.h>

#include "datasets/render/camera.h"
#include "datasets/render/raster.h"
#include "tests/test.h"

static double dist3(const double a[3], const double b[3]) {
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

/* R Rᵀ = I and det R = +1 (a rotation, not a reflection) */
static void check_rotation(const DsCamera *c) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double d = 0;
            for (int k = 0; k < 3; k++) d += c->R[3 * i + k] * c->R[3 * j + k];
            CHECK_NEAR(d, i == j ? 1.0 : 0.0, 1e-12);
        }
    const double *R = c->R;
    double det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) +
                 R[2] * (R[3] * R[7] - R[4] * R[6]);
    CHECK_NEAR(det, 1.0, 1e-12);
}

TEST(camera_look_at_target_at_principal_point) {
    double eye[3] = {1, 2, 3}, target[3] = {0.5, -1, 0.2}, up[3] = {0, 1, 0};
    DsCamera c = ds_camera_look_at(eye, target, up, 640, 480, 50);
    check_rotation(&c);
    CHECK_NEAR(c.cx, 320, 0);
    CHECK_NEAR(c.cy, 240, 0);
    CHECK_NEAR(c.fy, 240 / tan(25 * M_PI / 180), 1e-9);
    CHECK_NEAR(c.fx, c.fy, 0);
    double uv[2], depth;
    CHECK(ds_camera_project(&c, target, uv, &depth));
    CHECK_NEAR(uv[0], c.cx, 1e-9);
    CHECK_NEAR(uv[1], c.cy, 1e-9);
    CHECK_NEAR(depth, dist3(eye, target), 1e-12);
    double center[3];
    ds_camera_center(&c, center);
    CHECK_NEAR(dist3(center, eye), 0, 1e-12);
    /* the field of view: a point at the top edge of the view cone lands on the top image row */
    double half = 25 * M_PI / 180, d = dist3(eye, target);
    double fwd[3] = {c.R[6], c.R[7], c.R[8]}, dn[3] = {c.R[3], c.R[4], c.R[5]};
    double top[3];
    for (int k = 0; k < 3; k++) top[k] = eye[k] + d * fwd[k] - d * tan(half) * dn[k];
    CHECK(ds_camera_project(&c, top, uv, &depth));
    CHECK_NEAR(uv[1], 0, 1e-9);
    CHECK_NEAR(uv[0], 320, 1e-9);
}

TEST(camera_look_at_orientation_opencv) {
    /* looking along +z from z = −5 with y up: world +y is up in the image (v smaller), and the
     * viewer's right is world −x (right-handed world) */
    double eye[3] = {0, 0, -5}, target[3] = {0, 0, 0}, up[3] = {0, 1, 0};
    DsCamera c = ds_camera_look_at(eye, target, up, 101, 101, 60);
    double uv[2], depth, X[3] = {0, 1, 0};
    CHECK(ds_camera_project(&c, X, uv, &depth));
    CHECK(uv[1] < c.cy);
    CHECK_NEAR(uv[0], c.cx, 1e-9);
    double Y[3] = {-1, 0, 0};
    CHECK(ds_camera_project(&c, Y, uv, &depth));
    CHECK(uv[0] > c.cx);
    CHECK_NEAR(uv[1], c.cy, 1e-9);
    CHECK_NEAR(depth, 5, 1e-12);
    /* the frame rows are right, down, forward */
    CHECK_NEAR(c.R[0], -1, 1e-12);
    CHECK_NEAR(c.R[4], -1, 1e-12);
    CHECK_NEAR(c.R[8], 1, 1e-12);
}

TEST(camera_look_at_degenerate_up) {
    /* looking straight down with up = y (parallel): still a rotation seeing the target */
    double eye[3] = {0.3, 4, -0.2}, target[3] = {0.3, 0, -0.2}, up[3] = {0, 1, 0};
    DsCamera c = ds_camera_look_at(eye, target, up, 64, 48, 45);
    check_rotation(&c);
    double uv[2], depth;
    CHECK(ds_camera_project(&c, target, uv, &depth));
    CHECK_NEAR(uv[0], 32, 1e-9);
    CHECK_NEAR(uv[1], 24, 1e-9);
    CHECK_NEAR(depth, 4, 1e-12);
    double zero[3] = {0, 0, 0};
    c = ds_camera_look_at(eye, target, zero, 64, 48, 45);
    check_rotation(&c);
}

TEST(camera_ring_sees_target_at_center) {
    enum { N = 8 };
    DsCamera cams[N];
    double target[3] = {0.2, 0.1, -0.3};
    CHECK(ds_camera_ring(N, 3.0, 1.0, target, 200, 150, 40, cams) == N);
    for (int i = 0; i < N; i++) {
        check_rotation(&cams[i]);
        double uv[2], depth, c[3];
        CHECK(ds_camera_project(&cams[i], target, uv, &depth));
        CHECK_NEAR(uv[0], 100, 1e-9);
        CHECK_NEAR(uv[1], 75, 1e-9);
        CHECK_NEAR(depth, sqrt(10.0), 1e-12);
        ds_camera_center(&cams[i], c);
        CHECK_NEAR(c[1], target[1] + 1.0, 1e-12);
        CHECK_NEAR(hypot(c[0] - target[0], c[2] - target[2]), 3.0, 1e-12);
        /* evenly spaced: neighbors 45° apart around the ring */
        double a = atan2(c[2] - target[2], c[0] - target[0]);
        double want = 2 * M_PI * i / N;
        CHECK_NEAR(remainder(a - want, 2 * M_PI), 0, 1e-12);
        /* world up stays up in the image */
        double above[3] = {target[0], target[1] + 0.5, target[2]};
        CHECK(ds_camera_project(&cams[i], above, uv, &depth));
        CHECK(uv[1] < 75);
    }
    CHECK(ds_camera_ring(0, 3.0, 1.0, target, 200, 150, 40, cams) == 0);
}

TEST(camera_sphere_fibonacci) {
    enum { N = 60 };
    DsCamera cams[N];
    double target[3] = {1, -2, 0.5};
    CHECK(ds_camera_sphere(N, 2.5, target, 64, 64, 30, cams) == N);
    double mean[3] = {0, 0, 0};
    double closest = 1e9;
    for (int i = 0; i < N; i++) {
        check_rotation(&cams[i]);
        double uv[2], depth, c[3];
        CHECK(ds_camera_project(&cams[i], target, uv, &depth));
        CHECK_NEAR(uv[0], 32, 1e-9);
        CHECK_NEAR(uv[1], 32, 1e-9);
        CHECK_NEAR(depth, 2.5, 1e-12);
        ds_camera_center(&cams[i], c);
        for (int k = 0; k < 3; k++) mean[k] += (c[k] - target[k]) / 2.5 / N;
        for (int j = 0; j < i; j++) {
            double o[3];
            ds_camera_center(&cams[j], o);
            if (dist3(c, o) < closest) closest = dist3(c, o);
        }
    }
    /* spread evenly: centroid near the target, no two cameras bunched together (the spacing
     * of N points on a sphere is about sqrt(4π/N) · radius ≈ 0.57 here) */
    CHECK_MSG(sqrt(mean[0] * mean[0] + mean[1] * mean[1] + mean[2] * mean[2]) < 0.05, "mean %g %g %g", mean[0],
              mean[1], mean[2]);
    CHECK_MSG(closest > 0.3, "closest pair %g apart", closest);
    CHECK(ds_camera_sphere(1, 2.5, target, 64, 64, 30, cams) == 1);
    check_rotation(&cams[0]);
}

TEST(camera_project_front_and_behind) {
    double eye[3] = {0, 0, 0}, target[3] = {0, 0, 1}, up[3] = {0, -1, 0};
    /* with up = −y the camera frame equals the world frame: R = I, t = 0 */
    DsCamera c = ds_camera_look_at(eye, target, up, 100, 80, 90);
    for (int i = 0; i < 9; i++) CHECK_NEAR(c.R[i], i % 4 == 0 ? 1.0 : 0.0, 1e-12);
    double uv[2] = {-1, -1}, depth = 0;
    double front[3] = {0.5, -0.25, 2};
    CHECK(ds_camera_project(&c, front, uv, &depth));
    CHECK_NEAR(depth, 2, 1e-12);
    CHECK_NEAR(uv[0], c.fx * 0.25 + 50, 1e-9);
    CHECK_NEAR(uv[1], c.fy * -0.125 + 40, 1e-9);
    double behind[3] = {0.5, -0.25, -2};
    uv[0] = uv[1] = -7;
    CHECK(!ds_camera_project(&c, behind, uv, &depth));
    CHECK_NEAR(depth, -2, 1e-12);
    CHECK(uv[0] == -7 && uv[1] == -7);
    double on_plane[3] = {1, 1, 0};
    CHECK(!ds_camera_project(&c, on_plane, uv, NULL));
}

/* ds_camera_unproject inverts ds_camera_project (pixel and camera z back to the world point), and
 * ds_camera_backproject of a rasterized plane's depth map (camera z) lands on the plane */
TEST(camera_unproject_and_backproject) {
    double eye[3] = {1.5, 0.7, -2.5}, at[3] = {0.1, 0, 0.2}, up[3] = {0, -1, 0};
    DsCamera c = ds_camera_look_at(eye, at, up, 40, 30, 45);
    for (int k = 0; k < 20; k++) {
        double X[3] = {0.3 * sin(k), 0.2 * cos(3.0 * k), 0.25 * sin(0.7 * k)}, uv[2], z, Y[3];
        CHECK(ds_camera_project(&c, X, uv, &z));
        ds_camera_unproject(&c, uv[0], uv[1], z, Y);
        for (int a = 0; a < 3; a++) CHECK_MSG(fabs(X[a] - Y[a]) < 1e-12, "point %d axis %d: %g vs %g", k, a, X[a], Y[a]);
    }
    /* the plane y = 0.1 as two big triangles */
    float v[12] = {-5, 0.1f, -5, 5, 0.1f, -5, 5, 0.1f, 5, -5, 0.1f, 5};
    int32_t f[6] = {0, 1, 2, 0, 2, 3};
    DsMesh m = {.nv = 4, .nf = 2, .v = v, .f = f};
    DsRender r;
    char err[256];
    CHECK_MSG(ds_raster_render(&m, &c, NULL, &r, err, sizeof err) == 0, "%s", err);
    float pts[3 * 40 * 30];
    int64_t n = ds_camera_backproject(&c, r.depth, r.alpha, 0.5, pts, 40 * 30);
    CHECK(n > 100);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(pts[3 * i + 1] - 0.1));
    CHECK_MSG(worst < 1e-4, "a back-projected pixel lies %g off the plane", worst);
    CHECK(ds_camera_backproject(&c, r.depth, r.alpha, 0.5, pts, 7) == 7);
    ds_render_free(&r);
}

/* where a camera sits, seen from its target: elevation above the y = 0 plane, azimuth about y
 * from +z toward +x */
TEST(camera_elevation_azimuth) {
    const double target[3] = {0.5, -1, 2}, up[3] = {0, 1, 0};
    const double cases[][2] = {{0, 0}, {30, 0}, {-20, 90}, {45, -135}, {10, 170}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double e = cases[i][0] * M_PI / 180, a = cases[i][1] * M_PI / 180, r = 3.5;
        double eye[3] = {target[0] + r * cos(e) * sin(a), target[1] + r * sin(e), target[2] + r * cos(e) * cos(a)};
        DsCamera c = ds_camera_look_at(eye, target, up, 64, 48, 40);
        double el, az;
        ds_camera_elevation_azimuth(&c, target, &el, &az);
        CHECK_MSG(fabs(el - cases[i][0]) < 1e-9 && fabs(az - cases[i][1]) < 1e-9, "case %zu: %g %g", i, el, az);
    }
}
