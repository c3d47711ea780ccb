/* datasets/motion/dnerf.h — multi-view image sets in the D-NeRF / nerfstudio convention: a folder
 * with transforms_train.json, transforms_val.json, transforms_test.json and the images they name.
 *
 * The JSON (what this reads; other keys are ignored):
 *   intrinsics, at the top level or per frame (a frame's own keys win):
 *     fl_x, fl_y, cx, cy, w, h           (nerfstudio; pixels)
 *     camera_angle_x [, camera_angle_y]  (D-NeRF / Blender: horizontal field of view in radians;
 *                                         fx = fy = w / (2 tan(camera_angle_x / 2)) unless
 *                                         camera_angle_y or fl_y gives fy)
 *     missing cx, cy: the image center (w/2, h/2); missing w, h: the image's size.
 *     k1 k2 k3 k4 p1 p2 must be 0 when present, camera_model "OPENCV" or "PINHOLE" (distortion and
 *     fisheye/equirectangular models are refused, not ignored).
 *   frames[]: file_path (relative to the folder, "./" allowed; without an extension ".png" is
 *     appended, as D-NeRF's and nerfstudio's Blender/D-NeRF readers do), transform_matrix (4×4,
 *     rows, camera-to-world in the OpenGL/Blender convention: camera x right, y up, looking
 *     along −z), time (in [0, 1]; absent in every frame: 0, a static scene).
 * Pixels: pixel (i, j) covers [i, i+1) × [j, j+1) and cx = w/2 is the image center, as in
 * nerfstudio and datasets/render/camera.h. Images are PNG (gray, gray+alpha, RGB, RGBA, any bit
 * depth libpng reads); RGB and gray images get alpha 1.
 *
 * The reader never trusts the file: malformed JSON, wrong types, non-finite numbers, a
 * transform whose rotation is not a rotation, missing or unreadable images and images of
 * different sizes give -1 and one message naming the JSON file (and the frame and key). */
#ifndef ANIMA_DATASETS_DNERF_H
#define ANIMA_DATASETS_DNERF_H

#include <stdbool.h>
#include <stddef.h>

#include "datasets/render/camera.h"

typedef struct { DsCamera cam; float time; float *rgba; /* height*width*4, row-major, [0,1], straight alpha */ char path[512]; } DsDnerfView;
typedef struct { int n; DsDnerfView *views; int width, height; } DsDnerfSplit;
/* Reads DIR/transforms_<split>.json (split "train", "val" or "test") and its PNGs; converts the OpenGL camera-to-world to DsCamera (OpenCV world-to-camera). 0 on success, -1 with a message in err naming the file. */
int ds_dnerf_load(const char *dir, const char *split, DsDnerfSplit *out, char *err, size_t errlen);
void ds_dnerf_free(DsDnerfSplit *s);

/* ---- beyond the contract ----------------------------------------------------------------------- */

/* ds_dnerf_load on JSON text in memory (tests, fuzzing); `name` names it in messages, image
 * paths are relative to dir. */
int ds_dnerf_load_text(const char *name, const char *text, size_t len, const char *dir, DsDnerfSplit *out, char *err,
                       size_t errlen);

/* OpenCV world-to-camera (DsCamera) ↔ OpenGL camera-to-world 4×4 (row-major). The OpenGL axes are
 * (x, −y, −z) of the OpenCV ones; the camera center is −Rᵀt. */
void ds_dnerf_c2w_from_camera(const DsCamera *cam, double c2w[16]);
/* Fails (-1, message without a file name) when c2w is not finite, its last row is not 0 0 0 1
 * (within 1e-4), or its 3×3 block is not a rotation within 1e-3 (a slightly off one is
 * re-orthonormalized). Intrinsics and size as given; znear 0.01, zfar 100 as ds_camera_look_at. */
int ds_dnerf_camera_from_c2w(const double c2w[16], double fx, double fy, double cx, double cy, int width, int height,
                             DsCamera *out, char *err, size_t errlen);

typedef struct {
    DsCamera cam;
    float time;
    const char *file_path; /* as written into the JSON ("./train/f0000_v00", no extension) */
    int view, frame;       /* written as extra keys "view", "frame" (-1: not written) */
} DsDnerfFrameOut;

/* Writes a transforms JSON for frames that all share the intrinsics of frames[0].cam (fl_x fl_y
 * cx cy w h and camera_angle_x, numbers with 17 significant digits so cameras read back
 * exactly); `extra` (NULL or a JSON object's members, "\"a\": 1, \"b\": \"x\"") is added at the
 * top level. Temporary name, fsync, rename. 0 or -1 with err naming path. */
int ds_dnerf_write_json(const char *path, const DsDnerfFrameOut *frames, int n, const char *extra, char *err,
                        size_t errlen);

#endif
