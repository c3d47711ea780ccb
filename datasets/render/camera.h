/* datasets/render/camera.h — pinhole cameras in the OpenCV/COLMAP convention used by 3D Gaussian
 * Splatting: camera x right, y down, z forward (looking along +z); a world point X maps to
 * camera coordinates Xc = R X + t and to pixels u = fx Xc.x / Xc.z + cx, v = fy Xc.y / Xc.z + cy,
 * The image spans [0, width] × [0, height] in (u, v); pixel (i, j) covers [i, i+1) × [j, j+1)
 * and renderers sample it at its center (i + 0.5, j + 0.5). */
#ifndef ANIMA_DATASETS_CAMERA_H
#define ANIMA_DATASETS_CAMERA_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int width, height;
    double fx, fy, cx, cy; /* intrinsics in pixels */
    double R[9];           /* world → camera rotation, row-major */
    double t[3];           /* world → camera translation */
    double znear, zfar;
} DsCamera;

/* A camera at eye looking at target, `up` roughly up in the image; vertical field of view in
 * degrees; principal point at the image center; znear 0.01, zfar 100. */
DsCamera ds_camera_look_at(const double eye[3], const double target[3], const double up[3], int width, int height,
                           double fov_y_deg);
/* n cameras on a horizontal ring (y up in the world) of `radius` at height `height` around
 * target, all looking at it; returns n. */
int ds_camera_ring(int n, double radius, double height, const double target[3], int width, int height_px,
                   double fov_y_deg, DsCamera *out);
/* n cameras on a Fibonacci sphere of `radius` around target. */
int ds_camera_sphere(int n, double radius, const double target[3], int width, int height, double fov_y_deg,
                     DsCamera *out);
/* Camera center in world coordinates (−Rᵀ t). */
void ds_camera_center(const DsCamera *c, double out[3]);
/* Where camera c sits as seen from target, y up (the D-NeRF / OpenGL convention): elevation above
 * the horizontal plane and azimuth about y from +z toward +x, in degrees (0, 0 at the target). */
void ds_camera_elevation_azimuth(const DsCamera *c, const double target[3], double *elevation_deg, double *azimuth_deg);
/* Pixel coordinates and depth (camera z) of a world point; false when behind the camera. */
bool ds_camera_project(const DsCamera *c, const double X[3], double uv[2], double *depth);
/* The world point at pixel coordinates (u, v) and camera depth z (camera z, as ds_camera_project
 * gives): the inverse of the projection. */
void ds_camera_unproject(const DsCamera *c, double u, double v, double z, double X[3]);
/* Every pixel of an h × w depth map (camera z at the pixel centers) whose alpha is above
 * alpha_min and whose depth is finite and positive, back-projected to world points: at most
 * max_points of them into out (max_points × 3), every k-th in row-major order (k the smallest
 * stride that fits them, so the subset is spread over the image and deterministic). Returns how
 * many were written. */
int64_t ds_camera_backproject(const DsCamera *c, const float *depth, const float *alpha, double alpha_min, float *out,
                              int64_t max_points);

#endif
