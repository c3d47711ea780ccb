/* sim/scene.h — JSON scenes for `anima sim`: objects (skinning source, material, pose),
 * contact planes, fixed regions, drags, force fields, time stepping and output; and the runner
 * that steps them and writes per-frame meshes (PLY/OBJ) and PNG renders.
 *
 * Scenes are read against a datasets/config.h schema (sim/scene.c): unknown keys, wrong types
 * and out-of-range values are errors naming the file and the key path ("objects[0].material.E").
 * Keys (defaults in brackets):
 *
 *   dt [0.01] (s), steps [200], gravity [[0, -9.81, 0]] (m/s²)
 *   newton: {max_iters [50], tol [1e-10], armijo [1e-4], max_hessians [50], reuse_ratio [0],
 *            elastic_lag [0.5]} (sim/solver.h: SimNewtonOptions; elastic_lag 0 assembles the
 *           elastic Hessian with every Hessian; reuse_ratio > 0 then allows chord steps)
 *   objects: [ {                                   (at least one; stepped together by sim/world.h,
 *       skinning: {source ["procedural"] | "file",   coupled by IPC contact)
 *                  file (source "file": a skinning file, datasets/corpus/skinning_file.h, e.g.
 *                        from `anima physskin skin`; relative to the scene's folder),
 *                  category ["cactus"], seed [1], kind ["bones"] | "rbf", handles [16],
 *                  cubature_res [24], mesh_res [48], sigma [0], rbf_radius [0],
 *                  normalize [true] (rbf: weights summing to one, sim/skinning.h)},
 *       material: {E [5e4] (Pa), nu [0.3], rho [1000] (kg/m³)},
 *       pose: {scale [0.5], translate [[0, 1, 0]], rotate_deg [[0, 0, 0]]},
 *       color [[0.8, 0.45, 0.3]],
 *       cubature_points [0] (> 0: the elastic forces over an optimized set of at most this many
 *                        cubature points, sim_cubature_optimize at load with its defaults but
 *                        cubature_drops turned drops; 0: every point), cubature_drops [8],
 *       gaussians [""] (a 3DGS PLY in the skinning's frame: bound by sim/bindings.h and written
 *                       per frame as frame_NNNNN_gaussians_K.ply, K the object index; on the
 *                       rigged object they move with X + u_r + B z, sim/rig.h) } ]
 *   contact: {enabled [true], dhat [0] (m; 0: auto), stiffness [0] (N/m; 0: auto),
 *             min_sep [0.2], proxy_cells [20], mu [0], eps_v [1e-3], edge_edge [true], dedup [true]}
 *                                                  (IPC between bodies, sim/world.h)
 *   contact_materials: [ {name} ]  named contact materials (at most 15; "" is the default one)
 *   friction_pairs: [ {a, b, mu} ]  μ between two materials (by name, "" the default), both ways;
 *                   every pair not listed rubs with contact.mu. objects[].contact_material,
 *                   rigids[].contact_material and planes[].contact_material [""] name a body's.
 *   rigids: [ {shape ["sphere"] | "box" | "mesh", radius [0.1], subdiv [3], half [[0.1, 0.1, 0.1]],
 *              file (shape "mesh": a closed mesh), density [1000], scale [1], translate [[0, 1, 0]],
 *              rotate_deg [[0, 0, 0]], velocity [[0, 0, 0]], angular_velocity [[0, 0, 0]],
 *              restitution [0.3], friction [0.5], color [[0.6, 0.6, 0.65]]} ]   (sim/rigid.h)
 *   planes: [ {normal [[0, 1, 0]], offset [0], stiffness [1e6]} ]       (n·x ≥ offset)
 *   fixed:  [ {object [0], shape ["top"] | "bottom" | "box" | "sphere", fraction [0.15]
 *              (top/bottom: that share of the object's rest height), lo, hi (box), center,
 *              radius (sphere), velocity [[0, 0, 0]], mode ["exact"] | "penalty",
 *              stiffness [1e7], falloff [0.2 × the object's rest diagonal] (m; fixed exact
 *              regions: the learned handles fade in over this distance, sim/solver.h; 0: off)} ]
 *   drags:  [ {object [0], grab, radius [0.1], stiffness [1e4], target, t0 [0], t1 [0.5],
 *              t_release [1e30]} ]
 *   forces: [ {object [0], accel, t0 [0], t1 [1e30], shape ["all"] | "box" | "sphere", lo, hi,
 *              center, radius} ]
 *   rig: {object, clip, keys, drags, ...} (sim/rig.h: rig-complementary dynamics; skinning
 *         source "physskin" with ckpt [""] skins the procedural shape by a trained checkpoint)
 *   output: {every [5] (steps per frame), mesh ["ply"] | "obj" | "none", png [true],
 *            width [480], height [360], eye, target (default: framing the objects), fov [40]}
 */
#ifndef ANIMA_SIM_SCENE_H
#define ANIMA_SIM_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/render/camera.h"
#include "sim/rig.h"
#include "sim/solver.h"
#include "sim/world.h"

typedef struct {
    char source[16], file[1024], category[24], kind[8];
    char ckpt[1024]; /* source "physskin": the checkpoint whose fields skin the procedural shape */
    int64_t seed, handles, cubature_res, mesh_res;
    double sigma, rbf_radius;
    bool normalize;
    SimMaterial material;
    double scale, translate[3], rotate_deg[3], color[3];
    char gaussians[1024];
    int64_t cubature_points, cubature_drops; /* sim/cubature.h at load (0: the full set) */
    char contact_material[24]; /* its contact material's name ("": the default) */
    int material_id;           /* resolved: its index (0 the default, then contact_materials[] from 1) */
} SimSceneObject;

typedef struct {
    char shape[8], file[1024];
    double radius, half[3];
    int64_t subdiv;
    double density, scale, translate[3], rotate_deg[3], velocity[3], angular_velocity[3];
    double restitution, friction, color[3];
    char contact_material[24]; /* as the objects' */
    int material_id;
} SimSceneRigid;

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
    SimContactOptions contact;
    int nrigids;
    SimSceneRigid *rigids;
    SimSceneRig rig; /* rig.object −1: none (sim/rig.h) */
    struct {
        int64_t every, width, height;
        char mesh[8];
        bool png, has_eye, has_target;
        double eye[3], target[3], fov;
    } output;
} SimScene;

/* The skinning of an object whose source is "physskin": a trained checkpoint evaluated on the
 * object's procedural mesh (name: its category). The simulator consumes models only through
 * skinning data and includes none of them, so the program that links a model installs the
 * function that runs it (tools/anima.c installs ps_skin_checkpoint, models/physskin/infer.h);
 * without one such a scene is refused with an error that says so. Set once, before any scene is
 * built; NULL uninstalls. */
typedef int (*SimCheckpointSkinner)(const char *ckpt, const DsMesh *mesh, const char *name, SimSkinning *out,
                                    char *err, size_t errlen);
void sim_scene_set_checkpoint_skinner(SimCheckpointSkinner fn);

int sim_scene_parse(const char *text, const char *source, SimScene *sc, char *err, size_t errlen);
int sim_scene_load(const char *path, SimScene *sc, char *err, size_t errlen);

/* The scene file's schema (datasets/config.h), for `anima sim --help`'s list of keys. */
const struct DsConfigField *sim_scene_schema(void);
void sim_scene_free(SimScene *sc);

/* Builds the objects of a scene with all its controls (fixed regions resolved). objs gets
 * sc->nobjects entries. 0, or -1 with err set. */
int sim_scene_build(const SimScene *sc, const char *scene_dir, SimObject *objs, char *err, size_t errlen);
/* The same, and with a rig (sc->rig.object >= 0) the scene's rig built on its object into *rig
 * (sim_rig_free it; untouched without one): for a caller that steps the world itself (the viewer)
 * and calls sim_rig_advance before each step. */
int sim_scene_build_rigged(const SimScene *sc, const char *scene_dir, SimObject *objs, SimRig *rig, char *err,
                           size_t errlen);

typedef struct {
    int64_t steps, frames;
    int64_t newton_iters, newton_failures, steps_with_failures;
    double ms_median, ms_p90, ms_total;
    double max_energy_rise; /* max over steps of E(t) − E(0), J */
    double min_distance;    /* the smallest contact-pair distance of any step (INFINITY: none) */
    int64_t ccd_limited;    /* Newton steps shortened by the CCD bound */
    double cpu_ms_median;   /* process CPU time per step (all threads; on a shared machine the wall
                               clock also measures the other users) */
    /* with a rig: the largest mass-weighted projection of the secondary displacement B z onto the
     * rig space over the written frames (sim_rig_projection), and the kinetic energy of the
     * secondary motion at the last step; kinetic.png (and kinetic.csv) in outdir plot it */
    double rig_projection_max, rig_kinetic_end, rig_kinetic_max;
    int rig_modes, rig_modes_kept; /* learned modes per coordinate block before the rig projection, and those kept (sim/rig.h) */
} SimRunReport;

/* Builds the rigid bodies of a scene (rigids gets sc->nrigids entries). 0, or -1 with err set. */
int sim_scene_build_rigids(const SimScene *sc, const char *scene_dir, SimRigid *rigids, char *err, size_t errlen);

/* Progress callback: called after each step (step index from 1). */
typedef void (*SimProgressFn)(void *ctx, int64_t step, int64_t steps, const SimObject *objs, int nobjects);

/* The camera of the scene's output framing a box of this center and largest side (extent,
 * ds_box_center_extent): output.target and output.eye where the scene gives them, else the
 * center seen from (0.6, 0.6, 2.4) × extent away; output.width, height and fov. */
DsCamera sim_scene_camera(const SimScene *sc, const double center[3], double extent);

/* Builds, steps and writes frames into outdir (created if missing): frame_00000.{ply,obj,png}
 * for the rest state and then every output.every steps. 0, or -1 with err set. */
int sim_scene_run(const SimScene *sc, const char *scene_dir, const char *outdir, SimProgressFn progress, void *ctx,
                  SimRunReport *report, char *err, size_t errlen);

#endif
