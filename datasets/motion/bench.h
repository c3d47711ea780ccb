/* datasets/motion/bench.h — the multi-view motion benchmark (issue 18): one procedural character
 * (datasets/geometry/procedural.h) with a procedural texture, posed by a training motion and a
 * held-out motion (motion.h), with secondary soft-body motion (secondary.h), rendered with alpha
 * by the mesh rasterizer from a ring and an upper ring of cameras, written in the D-NeRF /
 * nerfstudio convention (dnerf.h) with its ground truth in HDF5.
 *
 * Layout of OUT (the training motion; OUT/heldout/ holds the held-out motion the same way):
 *   transforms_train.json   training views × every frame
 *   transforms_val.json     held-out views × every val_every-th frame (quick validation)
 *   transforms_test.json    held-out views × every frame (novel-view evaluation)
 *   train/f%04d_v%02d.png   RGBA, straight alpha (file_path "./train/f0000_v00", no extension)
 *   test/f%04d_v%02d.png    the held-out views' images (val and test name the same files)
 *   gt.h5                   ground truth (below)
 * Both motions use the same cameras and the same character, so a model fitted on OUT can be
 * scored on OUT/heldout for novel poses. time = frame / (frames − 1).
 *
 * Monocular (o->monocular; `anima dataset motion --monocular`): transforms_train.json has ONE
 * image per frame (train/f%04d_orbit.png, keys "frame" and no "view"), seen by one camera that
 * orbits the character over the clip: frame f at azimuth orbit_start + orbit·f/frames (so a full
 * 360° turn repeats no pose) and elevation orbit_elevation + orbit_bob·sin(2π orbit_bob_cycles
 * f/frames), looking at the center of the ring, with the ring's intrinsics, at the ring's distance
 * (or farther, when an orbit direction needs more to keep every vertex in the image). val and
 * test are the multi-view set's, unchanged (the same held-out ring views, cameras and pixels as
 * a multi-view set of the same options), so their scores compare; the ring's training views are
 * not rendered. OUT/heldout gets the same orbit. The JSONs' top level adds "monocular": true and
 * "orbit_deg", "orbit_start_deg", "orbit_elevation_deg", "orbit_bob_deg", "orbit_bob_cycles",
 * "orbit_distance"; gt.h5 the same as attributes (monocular 0 or 1 always) and
 * cameras/orbit_world_to_camera (F,3,4), cameras/orbit_intrinsics (F,4).
 *
 * gt.h5 (format "anima-motion-1"; attributes: category, seed, motion, source, split ("train" or
 * "heldout"), fps, frames, views, command; lengths in the character's normalized units, the
 * rest mesh in [-1,1]³, y up; F frames, V vertices, B bones, S soft regions, C cameras):
 *   times (F) · vertices (F,V,3): the rendered surface = LBS + secondary displacement ·
 *   mesh/rest_vertices (V,3), mesh/faces (T,3) int32, mesh/colors (V,3) albedo in [0,1] ·
 *   rig/names (B) strings, rig/parents (B) int32, rig/heads, rig/tails (B,3) at rest,
 *   rig/weights (V,B), rig/bone_transforms (F,B,4,4) rest → posed (rig.h's S_j),
 *   rig/local_rotations (F,B,4) (w,x,y,z) relative to the parent (rig.h), rig/world_rotations
 *   (F,B,4), rig/joint_positions (F,B,3) posed heads, rig/root_translation (F,3) ·
 *   secondary/displacement (F,V,3) (vertices − displacement is the LBS surface),
 *   secondary/weights (V,S), secondary/centers (S,3), secondary/radii, frequencies, damping
 *   (S), secondary/bones (S) int32, secondary/offsets (F,S,3) the saturated spring offsets û ·
 *   cameras/world_to_camera (C,3,4) OpenCV, cameras/intrinsics (C,4) fx fy cx cy,
 *   cameras/heldout (C) int32 (1: a held-out view). */
#ifndef ANIMA_DATASETS_MOTION_BENCH_H
#define ANIMA_DATASETS_MOTION_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/geometry/procedural.h"

typedef struct {
    const char *category;
    uint64_t seed;
    const char *motion;         /* NULL (the default): the category's own gait,
                                   ds_motion_default(category, false); "repertoire": every motion
                                   of the category but the held-out clip (motion.h: what PartMM's
                                   database must span) */
    const char *heldout_motion; /* NULL: ds_motion_default(category, true), or when that is the
                                   training motion the training default (else "wiggle"); "none":
                                   no held-out motion */
    int frames, views, size;    /* per motion; cameras in all; image side in pixels */
    int heldout_frames;         /* the held-out motion's frames; 0: min(frames,
                                   DS_MOTION_HELDOUT_FRAMES), so a small run stays small. A longer training
                                   motion (a larger PartMM database, more gs4d data) keeps the
                                   held-out clip the default one: both start at their clip's
                                   start, so its first frames do not depend on the length asked */
    int grid;                   /* marching-cubes cells of the character (ds_procedural_make) */
    int supersample;            /* anti-aliased edges and alpha: s × s samples per pixel */
    int holdout_every;          /* view i is held out when i % holdout_every == holdout_every − 1
                                   (with fewer views, the last one) */
    int val_every;              /* transforms_val.json keeps every val_every-th frame */
    double fps, fov_deg;
    bool lit;                   /* Lambert shading under a fixed light; false: the albedo (unlit) */
    bool monocular;             /* one orbiting training camera, one image per frame (above) */
    double orbit_deg;           /* monocular: azimuth swept over the clip (default 360), > 0 */
    double orbit_start_deg;     /* the azimuth of frame 0 (default 0: the ring's camera 0) */
    double orbit_elevation_deg; /* mean elevation (default 20: between the rings' 8 and 40) */
    double orbit_bob_deg;       /* elevation amplitude (default 12) */
    double orbit_bob_cycles;    /* elevation periods over the clip (default 2) */
    const char *bvh_dir;        /* NULL: DS_MOTION_BVH_DIR */
    int64_t bvh_start;          /* -1: the named clip's window */
    const char *bvh_map;        /* a mapping JSON for BVH motions (motion.h); NULL: the built-in names */
    const char *out;
    const char *command;        /* recorded in gt.h5 (may be NULL) */
    /* called after each image (from one thread at a time) */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
    volatile sig_atomic_t *cancel; /* non-zero: stop soon, -1 with "interrupted" */
} DsMotionBenchOptions;

typedef struct {
    int64_t nv, nf, images;
    int nbones, nsoft, train_views, heldout_views, motions; /* train_views 1 when monocular */
    char motion[2][64];
    int frames[2];            /* each motion's frames */
    double max_secondary[2];  /* the largest |displacement| of each motion */
    double extent;            /* the bounding-sphere radius of every frame */
    double distance;          /* the cameras' distance from its center */
    double coverage;          /* mean fraction of pixels with alpha > 0 */
    double orbit_distance;    /* monocular: the orbiting camera's distance (≥ distance); else 0 */
} DsMotionBenchStats;

/* The default benchmark (`make motion-data`): the category's training gait, 48 frames, held-out
 * 48 frames, 24 views, 128 px, grid 96, supersample 2, holdout_every 6, val_every 4, 30 fps,
 * fov 40°, unlit, seed 0; multi-view (monocular off; its orbit: 360° from azimuth 0, elevation
 * 20 ± 12° over 2 periods) */
void ds_motion_bench_defaults(DsMotionBenchOptions *o);
#define DS_MOTION_HELDOUT_FRAMES 48
/* Builds the benchmark into o->out (created if missing). 0, or -1 with err. Images and gt.h5
 * go to temporary names and are renamed; the transforms JSONs are written last (and any old
 * ones removed first), so an interrupted run leaves no JSON describing half-written images. */
int ds_motion_bench_make(const DsMotionBenchOptions *o, DsMotionBenchStats *stats, char *err, size_t errlen);

/* The albedo of each rest vertex of shape (nv × 3): per-bone base hues blended by the rig
 * weights, modulated by 3-D value-noise fBm, spots and stripes in rest coordinates, so every
 * part of the surface has texture a photometric loss can lock onto and the pattern moves with
 * the surface. Deterministic in seed. */
void ds_motion_texture(const DsProceduralShape *shape, uint64_t seed, float *rgb);

/* ---- reading the ground truth ----------------------------------------------------------------- */

typedef struct {
    int nframes, nbones;
    int64_t nv, nf;
    double fps;
    char category[32], motion[64], split[16];
    float *times;           /* F */
    float *vertices;        /* F × V × 3 */
    float *secondary;       /* F × V × 3 */
    float *rest;            /* V × 3 */
    float *colors;          /* V × 3 */
    int32_t *faces;         /* T × 3 */
    float *weights;         /* V × B */
    int32_t *parents;       /* B */
    float *bone_transforms; /* F × B × 16 */
    float *local_rotations; /* F × B × 4 */
    float *joint_positions; /* F × B × 3 */
} DsMotionGt;

/* Reads and validates gt.h5 (shapes agree, faces index vertices, values finite). 0 or -1 with
 * err naming the file and the dataset. */
int ds_motion_gt_load(const char *path, DsMotionGt *gt, char *err, size_t errlen);
void ds_motion_gt_free(DsMotionGt *gt);
/* A BVH on the benchmark character whose gt.h5 is gt_path (read as gt): the character rebuilt
 * from the file's category, seed and grid (its command line's --grid, default 96; its mesh must
 * match the benchmark's vertex for vertex), the BVH retargeted onto its named rig (motion.h: by
 * the mapping JSON map, or without one humanoids by the CMU/Boxing joint names) and the
 * ground-truth rest mesh posed by that rig's LBS with the benchmark's weights, frames frames at
 * the benchmark's rate: frames × V × 3 into *out (malloc'd). What a rig extracted from the
 * benchmark is fitted to by IK to play a BVH. 0, or -1 with err. */
int ds_motion_gt_bvh(const char *gt_path, const DsMotionGt *gt, const char *bvh, const char *map, int frames, float **out,
                     char *err, size_t errlen);

struct DsGltfMesh_;
/* gt as a skinned mesh for the glTF writer (datasets/mesh/gltf.h; gt_gltf.c): the rest mesh with
 * its colors, the rig's bones as joints, the motion as rotation channels (and the root's
 * translation) at fps (≤ 0: gt's own, else 30). *g points into gt and into *owned (free it after
 * writing). 0, or -1 with err. */
int ds_motion_gt_gltf(const DsMotionGt *gt, double fps, struct DsGltfMesh_ *g, float **owned, char *err, size_t errlen);

#endif
