/* sim/scene.h — JSON scenes for `anima sim`: objects (skinning source, material, pose),
 * contact planes, fixed regions, drags, force fields, time stepping and output; and the runner
 * that steps them and writes per-frame meshes (PLY/OBJ) and PNG renders.
 *
 * datasets/config.h has no arrays or vectors, so scenes are read here with the same rules and
 * messages: unknown keys, wrong types and out-of-range values are errors naming the file and
 * the key path ("objects[0].material.E"). Keys (defaults in brackets):
 *
 *   dt [0.01] (s), steps [200], gravity [[0, -9.81, 0]] (m/s²)
 *   newton: {max_iters [8], tol [1e-12], armijo [1e-4]}
 *   objects: [ {                                   (at least one; solved independently — no
 *       skinning: {source ["procedural"] | "file",   object–object contact yet)
 *                  file (source "file": a skinning file, sim/skinning.h),
 *                  category ["cactus"], seed [1], kind ["bones"] | "rbf", handles [16],
 *                  cubature_res [24], mesh_res [48], sigma [0], rbf_radius [0]},
 *       material: {E [5e4] (Pa), nu [0.3], rho [1000] (kg/m³)},
 *       pose: {scale [0.5], translate [[0, 1, 0]], rotate_deg [[0, 0, 0]]},
 *       color [[0.8, 0.45, 0.3]] } ]
 *   planes: [ {normal [[0, 1, 0]], offset [0], stiffness [1e6]} ]       (n·x ≥ offset)
 *   fixed:  [ {object [0], shape ["top"] | "bottom" | "box" | "sphere", fraction [0.15]
 *              (top/bottom: that share of the object's rest height), lo, hi (box), center,
 *              radius (sphere), velocity [[0, 0, 0]], mode ["exact"] | "penalty",
 *              stiffness [1e7]} ]
 *   drags:  [ {object [0], grab, radius [0.1], stiffness [1e4], target, t0 [0], t1 [0.5],
 *              t_release [1e30]} ]
 *   forces: [ {object [0], accel, t0 [0], t1 [1e30], shape ["all"] | "box" | "sphere", lo, hi,
 *              center, radius} ]
 *   output: {every [5] (steps per frame), mesh ["ply"] | "obj" | "none", png [true],
 *            width [480], height [360], eye, target (default: framing the objects), fov [40]}
 */
#ifndef ANIMA_SIM_SCENE_H
#define ANIMA_SIM_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/solver.h"

typedef struct {
    char source[16], file[1024], category[24], kind[8];
    int64_t seed, handles, cubature_res, mesh_res;
    double sigma, rbf_radius;
    SimMaterial material;
    double scale, translate[3], rotate_deg[3], color[3];
} SimSceneObject;

typedef enum { SIM_FIX_BOX, SIM_FIX_SPHERE, SIM_FIX_TOP, SIM_FIX_BOTTOM } SimFixShape;

typedef struct {
    int object;
    SimFixShape shape;
    double fraction;
    SimDirichlet d; /* region filled for box/sphere; top/bottom resolved when the object exists */
} SimSceneFixed;

typedef struct {
    double dt;
    int64_t steps;
    double gravity[3];
    SimNewtonOptions newton;
    int nobjects, nplanes, nfixed, ndrags, nforces;
    SimSceneObject *objects;
    SimPlane *planes;
    SimSceneFixed *fixed;
    SimDrag *drags;
    int *drag_object;
    SimForceField *forces;
    int *force_object;
    struct {
        int64_t every, width, height;
        char mesh[8];
        bool png, has_eye, has_target;
        double eye[3], target[3], fov;
    } output;
} SimScene;

int sim_scene_parse(const char *text, const char *source, SimScene *sc, char *err, size_t errlen);
int sim_scene_load(const char *path, SimScene *sc, char *err, size_t errlen);
void sim_scene_free(SimScene *sc);

/* Builds the objects of a scene with all its controls (fixed regions resolved). objs gets
 * sc->nobjects entries. 0, or -1 with err set. */
int sim_scene_build(const SimScene *sc, const char *scene_dir, SimObject *objs, char *err, size_t errlen);

typedef struct {
    int64_t steps, frames;
    int64_t newton_iters, newton_failures, steps_with_failures;
    double ms_median, ms_p90, ms_total;
    double max_energy_rise; /* max over steps of E(t) − E(0), J */
} SimRunReport;

/* Progress callback: called after each step (step index from 1). */
typedef void (*SimProgressFn)(void *ctx, int64_t step, int64_t steps, const SimObject *objs, int nobjects);

/* Builds, steps and writes frames into outdir (created if missing): frame_00000.{ply,obj,png}
 * for the rest state and then every output.every steps. 0, or -1 with err set. */
int sim_scene_run(const SimScene *sc, const char *scene_dir, const char *outdir, SimProgressFn progress, void *ctx,
                  SimRunReport *report, char *err, size_t errlen);

#endif
