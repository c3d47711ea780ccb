/* sim/scene.c — scene files (read against a datasets/config.h schema) and the scene runner. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sort.h"
#include "datasets/render/camera.h"
#include "datasets/config.h"
#include "datasets/geometry/geometry.h"
#include "datasets/mesh/mesh.h"
#include "datasets/render/raster.h"
#include "sim/bindings.h"
#include "sim/cubature.h"
#include "sim/internal.h"
#include "sim/scene.h"

/* ---- the schema ------------------------------------------------------------------------------- */

/* fixed[].falloff when absent, × the object's rest diagonal (sim/solver.h: SimDirichlet.falloff; the
 * sag tip moved by 2% between 0.1 and 0.3) */
#define SIM_SCENE_FALLOFF 0.2
#define BIG 1e30
#define BIG_TEXT "1e30"

/* What the file says where SimScene holds something else: the schema's integers are int64_t,
 * shapes and modes are strings, and region keys are only meaningful for some shapes (their
 * presence is checked once the shape is known). */
typedef struct {
    int64_t object;
    char shape[8], mode[8];
    double fraction;
    SimDirichlet d;
    bool has_lo, has_hi, has_center, has_radius, has_falloff;
} FixedIn;

typedef struct {
    int64_t object;
    SimDrag d;
} DragIn;

typedef struct {
    int64_t object;
    char shape[8];
    SimForceField f;
    bool has_lo, has_hi, has_center, has_radius;
} ForceIn;

/* a plane with its contact material's name, resolved to SimPlane.material */
typedef struct {
    SimPlane p;
    char contact_material[24];
} PlaneIn;

typedef struct {
    char name[24];
} MaterialIn;

typedef struct {
    char a[24], b[24];
    double mu;
} PairIn;

typedef struct {
    SimScene sc; /* everything the file states as SimScene stores it */
    struct {
        int64_t max_iters, max_hessians;
        double tol, armijo, reuse_ratio, elastic_lag;
    } newton;
    FixedIn *fixed;
    DragIn *drags;
    ForceIn *forces;
    PlaneIn *planes;
    MaterialIn *materials;
    PairIn *pairs;
    int nfixed, ndrags, nforces, nplanes, nmaterials, npairs;
} SceneFile;

/* the trailing arguments: designated initializers, .help = "..." (anima sim --help lists it) */
#define NUM(k, off, def, lo, hi, ...) {k, DS_CFG_FLOAT, off, def, lo, hi, __VA_ARGS__}
#define INT(k, off, def, lo, hi, ...) {k, DS_CFG_INT, off, def, lo, hi, __VA_ARGS__}
#define BOOL(k, off, def, ...) {k, DS_CFG_BOOL, off, def, 1, 0, __VA_ARGS__}
#define STR(k, off, def, sz, ch, ...) {k, DS_CFG_STRING, off, def, 1, 0, .size = sz, .choices = ch, __VA_ARGS__}
#define VEC(k, off, def, ...) {k, DS_CFG_VEC3, off, def, 1, 0, __VA_ARGS__}
/* optional: absent leaves zero and the flag false */
#define OPT_VEC(k, T, m, flag, ...) \
    {k, DS_CFG_VEC3, offsetof(T, m), DS_CFG_KEEP, 1, 0, .present = DS_CFG_PRESENT(T, flag), __VA_ARGS__}
#define OBJ(k, off, f) {k, DS_CFG_OBJECT, off, .fields = f}
#define ARR(k, T, m, n, E, f, lo, ...) \
    {k, DS_CFG_ARRAY, offsetof(T, m), "[]", lo, 1e9, .fields = f, .elem_size = sizeof(E), .count_offset = offsetof(T, n), \
     __VA_ARGS__}

static const char *const SOURCES[] = {"procedural", "file", "physskin", NULL}, *const KINDS[] = {"bones", "rbf", NULL};
static const char *const RIGID_SHAPES[] = {"sphere", "box", "mesh", NULL};
static const char *const FIX_SHAPES[] = {"top", "bottom", "box", "sphere", NULL}, *const MODES[] = {"exact", "penalty", NULL};
static const char *const FORCE_SHAPES[] = {"all", "box", "sphere", NULL}, *const MESH_FORMATS[] = {"ply", "obj", "none", NULL};

/* "skinning" and "pose" are flat in SimSceneObject: their objects sit at offset 0 and their
 * keys at the members' offsets */
#define O(m) offsetof(SimSceneObject, m)
#define OSZ(m) sizeof(((SimSceneObject *)0)->m)
static const DsConfigField SKINNING[] = {
    STR("source", O(source), "procedural", OSZ(source), SOURCES, .help = "where the object's skinning subspace comes from: a procedural shape, or a skinning file"),
    STR("file", O(file), "", OSZ(file), NULL, .help = "source \"file\": a skinning file (anima physskin skin, anima sim skinning), relative to the scene's folder"),
    STR("ckpt", O(ckpt), "", OSZ(ckpt), NULL, .help = "source \"physskin\": a checkpoint of anima physskin train whose fields skin the procedural shape (category, seed, mesh_res), relative to the scene's folder"),
    STR("category", O(category), "cactus", OSZ(category), NULL, .help = "source \"procedural\": the shape's category (cactus, quadruped, chair, ...)"),
    INT("seed", O(seed), "1", 0, 9e15, .help = "source \"procedural\": the shape's seed"), /* larger integers are not exact in JSON */
    STR("kind", O(kind), "bones", OSZ(kind), KINDS, .help = "source \"procedural\": handles from a bone skeleton, or radial basis functions"),
    INT("handles", O(handles), "16", 1, 256, .help = "source \"procedural\": number of skinning handles"),
    INT("cubature_res", O(cubature_res), "24", 4, 256, .help = "source \"procedural\": grid of the interior cubature candidates"),
    INT("mesh_res", O(mesh_res), "48", 16, 512, .help = "source \"procedural\": marching-cubes grid of the surface mesh"),
    NUM("sigma", O(sigma), "0", 0, 10, .help = "bones: weight falloff distance (0: automatic)"),
    NUM("rbf_radius", O(rbf_radius), "0", 0, 100, .help = "rbf: kernel radius (0: automatic)"),
    BOOL("normalize", O(normalize), "true", .help = "rbf: weights summing to one"),
    {0}};
static const DsConfigField MATERIAL[] = {
    NUM("E", offsetof(SimMaterial, E), "5e4", 1e-6, 1e15, .help = "Young's modulus (Pa)"),
    NUM("nu", offsetof(SimMaterial, nu), "0.3", -0.99, 0.499, .help = "Poisson's ratio"),
    NUM("rho", offsetof(SimMaterial, rho), "1000", 1e-6, 1e8, .help = "density (kg/m³)"),
    {0}};
static const DsConfigField POSE[] = {
    NUM("scale", O(scale), "0.5", 1e-9, 1e9, .help = "uniform scale of the rest shape"),
    VEC("translate", O(translate), "[0, 1, 0]", .help = "position of the rest shape (m)"),
    VEC("rotate_deg", O(rotate_deg), "[0, 0, 0]", .help = "rotation of the rest shape: XYZ Euler angles (degrees)"),
    {0}};
static const DsConfigField OBJECT[] = {
    OBJ("skinning", 0, SKINNING),
    OBJ("material", O(material), MATERIAL),
    OBJ("pose", 0, POSE),
    VEC("color", O(color), "[0.8, 0.45, 0.3]", .help = "RGB in [0, 1] of its renders"),
    STR("gaussians", O(gaussians), "", OSZ(gaussians), NULL, .help = "a 3DGS PLY in the skinning's frame, carried along and written per frame (\"\": none)"),
    INT("cubature_points", O(cubature_points), "0", 0, 1e6, .help = "> 0: elastic forces over an optimized cubature set of at most this many points (sim/cubature.h, built at load); 0: every point"),
    INT("cubature_drops", O(cubature_drops), "8", 0, 64, .help = "cubature_points > 0: the turned drops simulated for its training poses (0: random poses only)"),
    STR("contact_material", O(contact_material), "", OSZ(contact_material), NULL, .help = "its contact material (a name from contact_materials; \"\": the default), for friction_pairs"),
    {0}};
#undef O
#undef OSZ

static const DsConfigField PLANE[] = {
    VEC("normal", offsetof(PlaneIn, p.normal), "[0, 1, 0]", .help = "the plane's normal, pointing to the free side"),
    NUM("offset", offsetof(PlaneIn, p.offset), "0", -BIG, BIG, .help = "the free side is n·x >= offset (m)"),
    NUM("stiffness", offsetof(PlaneIn, p.stiffness), "1e6", 0, BIG, .help = "penalty stiffness of the contact (N/m)"),
    STR("contact_material", offsetof(PlaneIn, contact_material), "", 24, NULL, .help = "its contact material (a name from contact_materials; \"\": the default), for friction_pairs"),
    {0}};

static const DsConfigField MATERIAL_NAME[] = {
    STR("name", offsetof(MaterialIn, name), NULL, 24, NULL, .help = "the material's name (objects', rigids' and planes' contact_material)"),
    {0}};

static const DsConfigField FRICTION_PAIR[] = {
    STR("a", offsetof(PairIn, a), NULL, 24, NULL, .help = "one contact material's name (\"\": the default)"),
    STR("b", offsetof(PairIn, b), NULL, 24, NULL, .help = "the other's"),
    NUM("mu", offsetof(PairIn, mu), NULL, 0, 10, .help = "the friction coefficient between them"),
    {0}};

/* the object index is checked against the number of objects once they are read */
#define OBJECT_INDEX(T) INT("object", offsetof(T, object), "0", 1, 0, .help = "index into objects[] of the object it acts on")

static const DsConfigField FIXED[] = {
    OBJECT_INDEX(FixedIn),
    STR("shape", offsetof(FixedIn, shape), "top", 8, FIX_SHAPES, .help = "the region: a top or bottom slab, a box or a sphere"),
    NUM("fraction", offsetof(FixedIn, fraction), "0.15", 0, 1, .help = "top/bottom: the slab's share of the object's rest height"),
    OPT_VEC("lo", FixedIn, d.region.lo, has_lo, .help = "box: lower corner (m, rest frame of the scene)"),
    OPT_VEC("hi", FixedIn, d.region.hi, has_hi, .help = "box: upper corner (m)"),
    OPT_VEC("center", FixedIn, d.region.center, has_center, .help = "sphere: center (m)"),
    {"radius", DS_CFG_FLOAT, offsetof(FixedIn, d.region.radius), DS_CFG_KEEP, 0, BIG,
     .present = DS_CFG_PRESENT(FixedIn, has_radius), .help = "sphere: radius (m)"},
    VEC("velocity", offsetof(FixedIn, d.velocity), "[0, 0, 0]", .help = "the region moves at this constant velocity (m/s; 0: held fixed)"),
    STR("mode", offsetof(FixedIn, mode), "exact", 8, MODES, .help = "exact: the subspace is restricted to the constraint; penalty: a spring"),
    NUM("stiffness", offsetof(FixedIn, d.stiffness), "1e7", 0, BIG, .help = "penalty mode: the spring's stiffness"),
    {"falloff", DS_CFG_FLOAT, offsetof(FixedIn, d.falloff), DS_CFG_KEEP, 0, BIG,
     .present = DS_CFG_PRESENT(FixedIn, has_falloff), .help = "exact fixed regions: the learned handles fade in over this distance (m; default 0.2 x the object's rest diagonal; 0: off)"},
    {0}};

static const DsConfigField DRAG[] = {
    OBJECT_INDEX(DragIn),
    VEC("grab", offsetof(DragIn, d.grab), NULL, .help = "the grabbed point, at rest (m)"),
    NUM("radius", offsetof(DragIn, d.radius), "0.1", 1e-9, BIG, .help = "Gaussian radius of the grabbed region (m)"),
    NUM("stiffness", offsetof(DragIn, d.stiffness), "1e4", 0, BIG, .help = "the pulling spring's stiffness"),
    VEC("target", offsetof(DragIn, d.target), NULL, .help = "where the grabbed point is pulled to (m)"),
    NUM("t0", offsetof(DragIn, d.t0), "0", 0, BIG, .help = "the target starts moving from the grab point (s)"),
    NUM("t1", offsetof(DragIn, d.t1), "0.5", 0, BIG, .help = "the target arrives (s)"),
    NUM("t_release", offsetof(DragIn, d.t_release), BIG_TEXT, 0, BIG, .help = "the spring lets go (s)"),
    {0}};

static const DsConfigField FORCE[] = {
    OBJECT_INDEX(ForceIn),
    VEC("accel", offsetof(ForceIn, f.accel), NULL, .help = "the acceleration (m/s²)"),
    NUM("t0", offsetof(ForceIn, f.t0), "0", 0, BIG, .help = "it starts (s)"),
    NUM("t1", offsetof(ForceIn, f.t1), BIG_TEXT, 0, BIG, .help = "it ends (s)"),
    STR("shape", offsetof(ForceIn, shape), "all", 8, FORCE_SHAPES, .help = "on all of the object's points, or on those in a box or a sphere"),
    OPT_VEC("lo", ForceIn, f.region.lo, has_lo, .help = "box: lower corner (m)"),
    OPT_VEC("hi", ForceIn, f.region.hi, has_hi, .help = "box: upper corner (m)"),
    OPT_VEC("center", ForceIn, f.region.center, has_center, .help = "sphere: center (m)"),
    {"radius", DS_CFG_FLOAT, offsetof(ForceIn, f.region.radius), DS_CFG_KEEP, 0, BIG,
     .present = DS_CFG_PRESENT(ForceIn, has_radius), .help = "sphere: radius (m)"},
    {0}};

#define R(m) offsetof(SimSceneRigid, m)
static const DsConfigField RIGID[] = {
    STR("shape", R(shape), "sphere", sizeof(((SimSceneRigid *)0)->shape), RIGID_SHAPES, .help = "a sphere, a box or a closed mesh"),
    NUM("radius", R(radius), "0.1", 1e-6, 1e6, .help = "sphere: radius (m)"),
    INT("subdiv", R(subdiv), "3", 0, 5, .help = "sphere: icosphere subdivisions of its mesh"),
    VEC("half", R(half), "[0.1, 0.1, 0.1]", .help = "box: half extents (m)"),
    STR("file", R(file), "", sizeof(((SimSceneRigid *)0)->file), NULL, .help = "shape \"mesh\": a closed mesh file"),
    NUM("density", R(density), "1000", 1e-6, 1e8, .help = "density (kg/m³)"),
    NUM("scale", R(scale), "1", 1e-9, 1e9, .help = "mesh: uniform scale"),
    VEC("translate", R(translate), "[0, 1, 0]", .help = "initial position (m)"),
    VEC("rotate_deg", R(rotate_deg), "[0, 0, 0]", .help = "initial rotation: XYZ Euler angles (degrees)"),
    VEC("velocity", R(velocity), "[0, 0, 0]", .help = "initial velocity (m/s)"),
    VEC("angular_velocity", R(angular_velocity), "[0, 0, 0]", .help = "initial angular velocity (rad/s)"),
    NUM("restitution", R(restitution), "0.3", 0, 1, .help = "bounce: 0 inelastic to 1 elastic"),
    NUM("friction", R(friction), "0.5", 0, 10, .help = "Coulomb friction coefficient against the planes (impulses)"),
    STR("contact_material", R(contact_material), "", sizeof(((SimSceneRigid *)0)->contact_material), NULL, .help = "its contact material against the objects (a name from contact_materials; \"\": the default)"),
    VEC("color", R(color), "[0.6, 0.6, 0.65]", .help = "RGB in [0, 1] of its renders"),
    {0}};
#undef R

/* absent: sim_newton_defaults, filled in before reading */
#define N(m) offsetof(SceneFile, newton.m) - offsetof(SceneFile, newton)
static const DsConfigField NEWTON[] = {
    {"max_iters", DS_CFG_INT, N(max_iters), DS_CFG_KEEP, 1, 1000, .help = "Newton iterations per step at most (default 50)"},
    {"tol", DS_CFG_FLOAT, N(tol), DS_CFG_KEEP, 0, 1, .help = "stop when the Newton decrement is below tol x the energy scale (default 1e-10)"},
    {"armijo", DS_CFG_FLOAT, N(armijo), DS_CFG_KEEP, 0, 0.5, .help = "the line search's sufficient-decrease constant (default 1e-4)"},
    {"max_hessians", DS_CFG_INT, N(max_hessians), DS_CFG_KEEP, 1, 1000, .help = "Hessian assemblies per step at most (default 50)"},
    {"reuse_ratio", DS_CFG_FLOAT, N(reuse_ratio), DS_CFG_KEEP, 0, 1, .help = "> 0: keep the Hessian (chord steps) while each step decreases the energy by this ratio (default 0: off)"},
    {"elastic_lag", DS_CFG_FLOAT, N(elastic_lag), DS_CFG_KEEP, 0, 1, .help = "reassemble the elastic Hessian only when a step's progress falls below this ratio (default 0.5, a rigged object at most 0.1: sim/rig.h; 0: every iteration)"},
    {0}};
#undef N

#define C(m) offsetof(SimContactOptions, m)
static const DsConfigField CONTACT[] = {
    BOOL("enabled", C(enabled), "true", .help = "IPC contact between the bodies (false: each is stepped on its own)"),
    NUM("dhat", C(dhat), "0", 0, 100, .help = "the barrier's reach (m; 0: from the point spacing)"),
    NUM("stiffness", C(stiffness), "0", 0, BIG, .help = "the barrier's stiffness (N/m; 0: automatic, each body's weight on its contact points at dhat/2, then adaptive)"),
    NUM("kappa_adapt", C(kappa_adapt), "0.1", 0, 1, .help = "the automatic stiffness doubles when the closest pair is inside this fraction of dhat and closing (0: never)"),
    NUM("min_sep", C(min_sep), "0.2", 0.01, 0.9, .help = "continuous collision detection: a step may shrink a pair's distance to this fraction"),
    NUM("proxy_cells", C(proxy_cells), "20", 0, 1000, .help = "collision proxies: contact on each mesh clustered to cells of side max(diagonal / proxy_cells, dhat) (0: on the render mesh)"),
    NUM("mu", C(mu), "0", 0, 10, .help = "friction coefficient between the bodies (lagged smoothed Coulomb friction; 0: none)"),
    NUM("eps_v", C(eps_v), "1e-3", 1e-9, 10, .help = "slip speed (m/s) below which friction is smoothed"),
    BOOL("friction_majorize", C(friction_majorize), "true", .help = "friction's Newton Hessian bounds it from above where a slip turns or slows (false: the exact Hessian everywhere; same solution, more iterations)"),
    BOOL("dedup", C(dedup), "true", .help = "deduplicated contact constraints: a point near a surface's edge or vertex counted once, not once per triangle there"),
    BOOL("edge_edge", C(edge_edge), "true", .help = "edge-edge pairs between surfaces besides point-triangle ones (false: thin parts can pass through each other)"),
    {0}};
#undef C

#define OUT(m) offsetof(SceneFile, sc.output.m) - offsetof(SceneFile, sc.output)
static const DsConfigField OUTPUT[] = {
    INT("every", OUT(every), "5", 1, 1000000, .help = "steps per written frame"),
    STR("mesh", OUT(mesh), "ply", 8, MESH_FORMATS, .help = "format of the per-frame meshes (none: no meshes)"),
    BOOL("png", OUT(png), "true", .help = "a PNG render per frame"),
    INT("width", OUT(width), "480", 16, 8192, .help = "render width (px)"),
    INT("height", OUT(height), "360", 16, 8192, .help = "render height (px)"),
    {"eye", DS_CFG_VEC3, OUT(eye), DS_CFG_KEEP, 1, 0, .present = OUT(has_eye) + 1, .help = "camera position (m; default: framing the objects)"},
    {"target", DS_CFG_VEC3, OUT(target), DS_CFG_KEEP, 1, 0, .present = OUT(has_target) + 1, .help = "camera target (m; default: the objects' center)"},
    NUM("fov", OUT(fov), "40", 1, 170, .help = "vertical field of view (degrees)"),
    {0}};
#undef OUT

#define S(m) offsetof(SceneFile, sc.m)
static const DsConfigField SCENE[] = {
    NUM("dt", S(dt), "0.01", 1e-6, 1, .help = "time step (s)"),
    INT("steps", S(steps), "200", 1, 100000000, .help = "steps to run (anima sim --steps overrides it)"),
    VEC("gravity", S(gravity), "[0, -9.81, 0]", .help = "gravitational acceleration (m/s²)"),
    OBJ("newton", offsetof(SceneFile, newton), NEWTON),
    {"objects", DS_CFG_ARRAY, S(objects), NULL, 1, 1e9, .fields = OBJECT, .elem_size = sizeof(SimSceneObject),
     .count_offset = S(nobjects), .help = "the deformable objects: each a skinning subspace, stepped together and coupled by IPC contact"},
    ARR("planes", SceneFile, planes, nplanes, PlaneIn, PLANE, 0, .help = "contact planes (the ground)"),
    ARR("contact_materials", SceneFile, materials, nmaterials, MaterialIn, MATERIAL_NAME, 0, .help = "named contact materials (at most 15 besides the default \"\"), for friction_pairs"),
    ARR("friction_pairs", SceneFile, pairs, npairs, PairIn, FRICTION_PAIR, 0, .help = "the friction coefficient between two contact materials (both ways; other pairs: contact.mu)"),
    ARR("fixed", SceneFile, fixed, nfixed, FixedIn, FIXED, 0, .help = "regions of an object held fixed or moved at a constant velocity"),
    ARR("drags", SceneFile, drags, ndrags, DragIn, DRAG, 0, .help = "springs pulling a region of an object towards a moving target (a mouse drag)"),
    ARR("forces", SceneFile, forces, nforces, ForceIn, FORCE, 0, .help = "external accelerations on an object, or a region of it, during [t0, t1)"),
    OBJ("output", S(output), OUTPUT),
    OBJ("contact", S(contact), CONTACT),
    ARR("rigids", SceneFile, sc.rigids, sc.nrigids, SimSceneRigid, RIGID, 0, .help = "rigid bodies (spheres, boxes, closed meshes) in contact with the objects"),
    OBJ("rig", S(rig), SIM_RIG_SCENE_FIELDS),
    {0}};
#undef S

const DsConfigField *sim_scene_schema(void) { return SCENE; }

/* ---- what the schema cannot say: cross-key rules, then SimScene's own layout ---------------- */

static int key_err(const char *src, int i, const char *array, const char *key, const char *what, char *err,
                   size_t errlen) {
    base_errf(err, errlen, "%s: key '%s[%d].%s': %s", src, array, i, key, what);
    return -1;
}

static int missing(const char *src, int i, const char *array, const char *key, const char *what, char *err,
                   size_t errlen) {
    base_errf(err, errlen, "%s: missing required key '%s[%d].%s' (%s)", src, array, i, key, what);
    return -1;
}

static int object_index(const char *src, const char *array, int i, int64_t k, int nobjects, char *err,
                        size_t errlen) {
    if (k >= 0 && k < nobjects) return 0;
    char what[96];
    snprintf(what, sizeof what, "expected an integer in [0, %d], got %lld", nobjects - 1, (long long)k);
    return key_err(src, i, array, "object", what, err, errlen);
}

/* box: lo and hi; sphere: center and radius; else the whole object */
static int region(const char *src, const char *array, int i, const char *shape, const SimRegion *in, bool lo, bool hi,
                  bool center, bool radius, SimRegion *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!strcmp(shape, "box")) {
        if (!lo) return missing(src, i, array, "lo", "an array of 3 numbers", err, errlen);
        if (!hi) return missing(src, i, array, "hi", "an array of 3 numbers", err, errlen);
        out->kind = SIM_REGION_BOX;
        memcpy(out->lo, in->lo, sizeof out->lo), memcpy(out->hi, in->hi, sizeof out->hi);
    } else if (!strcmp(shape, "sphere")) {
        if (!center) return missing(src, i, array, "center", "an array of 3 numbers", err, errlen);
        if (!radius) return missing(src, i, array, "radius", "a number", err, errlen);
        out->kind = SIM_REGION_SPHERE;
        memcpy(out->center, in->center, sizeof out->center);
        out->radius = in->radius;
    } else
        out->kind = SIM_REGION_ALL;
    return 0;
}

/* a contact material's name to its index: "" the default (0), else 1 + its place in
 * contact_materials (the key named in errors: array[i].contact_material, or friction_pairs[i]) */
static int material_id(const char *src, const char *array, int i, const char *name, const SceneFile *in, int *id,
                       char *err, size_t errlen) {
    *id = 0;
    if (!name[0]) return 0;
    for (int m = 0; m < in->nmaterials; m++)
        if (!strcmp(name, in->materials[m].name)) {
            *id = m + 1;
            return 0;
        }
    char what[96];
    snprintf(what, sizeof what, "no contact material named \"%s\" in contact_materials", name);
    return key_err(src, i, array, strcmp(array, "friction_pairs") ? "contact_material" : "a/b", what, err, errlen);
}

static int resolve(const char *src, SceneFile *in, SimScene *sc, char *err, size_t errlen) {
    char what[160];
    for (int i = 0; i < sc->nobjects; i++)
        if (!strcmp(sc->objects[i].source, "file") && !*sc->objects[i].file) {
            base_errf(err, errlen, "%s: key 'objects[%d].skinning.file': required when source is \"file\"", src, i);
            return -1;
        }
    for (int i = 0; i < sc->nobjects; i++)
        if (!strcmp(sc->objects[i].source, "physskin") && !*sc->objects[i].ckpt) {
            base_errf(err, errlen, "%s: key 'objects[%d].skinning.ckpt': required when source is \"physskin\"", src, i);
            return -1;
        }
    if (sc->rig.object >= sc->nobjects) {
        base_errf(err, errlen, "%s: key 'rig.object': expected an integer in [-1, %d], got %lld", src, sc->nobjects - 1,
                  (long long)sc->rig.object);
        return -1;
    }
    /* other deformables meet the rigged one through the IPC pairs, which see x = X + u_r + B z
     * (world.c); rigid bodies move by their own CCD against the others held still and feel the
     * barrier a step late, which a prescribed rig driving into them is not tested with */
    if (sc->rig.object >= 0 && sc->nrigids > 0) {
        base_errf(err, errlen, "%s: key 'rig': a rigged scene holds no rigid bodies (deformable objects only)", src);
        return -1;
    }
    /* contact materials: index 0 the default (""), then the named ones in order */
    if (in->nmaterials > SIM_CONTACT_MATERIALS - 1) {
        base_errf(err, errlen, "%s: key 'contact_materials': at most %d, got %d", src, SIM_CONTACT_MATERIALS - 1, in->nmaterials);
        return -1;
    }
    for (int i = 0; i < in->nmaterials; i++) {
        if (!in->materials[i].name[0]) return key_err(src, i, "contact_materials", "name", "expected a nonempty name", err, errlen);
        for (int j = 0; j < i; j++)
            if (!strcmp(in->materials[i].name, in->materials[j].name))
                return key_err(src, i, "contact_materials", "name", "a name given twice", err, errlen);
    }
    for (int i = 0; i < sc->nobjects; i++)
        if (material_id(src, "objects", i, sc->objects[i].contact_material, in, &sc->objects[i].material_id, err, errlen)) return -1;
    for (int i = 0; i < sc->nrigids; i++)
        if (material_id(src, "rigids", i, sc->rigids[i].contact_material, in, &sc->rigids[i].material_id, err, errlen)) return -1;
    sc->planes = calloc((size_t)in->nplanes + 1, sizeof *sc->planes);
    if (!sc->planes) {
        base_errf(err, errlen, "%s: out of memory", src);
        return -1;
    }
    sc->nplanes = in->nplanes;
    for (int i = 0; i < in->nplanes; i++) {
        sc->planes[i] = in->planes[i].p;
        if (material_id(src, "planes", i, in->planes[i].contact_material, in, &sc->planes[i].material, err, errlen)) return -1;
    }
    for (int i = 0; i < in->npairs; i++) {
        int a, b;
        if (material_id(src, "friction_pairs", i, in->pairs[i].a, in, &a, err, errlen) ||
            material_id(src, "friction_pairs", i, in->pairs[i].b, in, &b, err, errlen))
            return -1;
        sim_contact_set_mu(&sc->contact, a, b, in->pairs[i].mu); /* in range: the schema bounds μ, ids from material_id */
    }
    for (int i = 0; i < sc->nplanes; i++) {
        const double *n = sc->planes[i].normal;
        if (n[0] == 0 && n[1] == 0 && n[2] == 0)
            return key_err(src, i, "planes", "normal", "expected a nonzero vector, got [0,0,0]", err, errlen);
    }
    for (int i = 0; i < sc->nrigids; i++) {
        const SimSceneRigid *r = &sc->rigids[i];
        if (!strcmp(r->shape, "mesh") && !*r->file)
            return key_err(src, i, "rigids", "file", "required when shape is \"mesh\"", err, errlen);
        if (!(r->half[0] > 0 && r->half[1] > 0 && r->half[2] > 0)) {
            snprintf(what, sizeof what, "expected three positive numbers, got [%g,%g,%g]", r->half[0], r->half[1], r->half[2]);
            return key_err(src, i, "rigids", "half", what, err, errlen);
        }
    }
    sc->fixed = calloc((size_t)in->nfixed + 1, sizeof *sc->fixed);
    sc->drags = calloc((size_t)in->ndrags + 1, sizeof *sc->drags);
    sc->drag_object = calloc((size_t)in->ndrags + 1, sizeof(int));
    sc->forces = calloc((size_t)in->nforces + 1, sizeof *sc->forces);
    sc->force_object = calloc((size_t)in->nforces + 1, sizeof(int));
    if (!sc->fixed || !sc->drags || !sc->drag_object || !sc->forces || !sc->force_object) {
        base_errf(err, errlen, "%s: out of memory", src);
        return -1;
    }
    sc->nfixed = in->nfixed, sc->ndrags = in->ndrags, sc->nforces = in->nforces;
    for (int i = 0; i < in->nfixed; i++) {
        const FixedIn *f = &in->fixed[i];
        SimSceneFixed *o = &sc->fixed[i];
        if (object_index(src, "fixed", i, f->object, sc->nobjects, err, errlen)) return -1;
        o->object = (int)f->object;
        o->shape = !strcmp(f->shape, "top") ? SIM_FIX_TOP : !strcmp(f->shape, "bottom") ? SIM_FIX_BOTTOM
                 : !strcmp(f->shape, "box") ? SIM_FIX_BOX : SIM_FIX_SPHERE;
        o->fraction = f->fraction;
        o->d = f->d;
        o->d.penalty = !strcmp(f->mode, "penalty");
        if (!f->has_falloff) o->d.falloff = -1; /* resolved against the object's size in build_objects */
        if (o->shape == SIM_FIX_BOX || o->shape == SIM_FIX_SPHERE) {
            if (region(src, "fixed", i, f->shape, &f->d.region, f->has_lo, f->has_hi, f->has_center, f->has_radius,
                       &o->d.region, err, errlen))
                return -1;
        } else
            memset(&o->d.region, 0, sizeof o->d.region); /* top/bottom: set when the object exists */
    }
    for (int i = 0; i < in->ndrags; i++) {
        if (object_index(src, "drags", i, in->drags[i].object, sc->nobjects, err, errlen)) return -1;
        sc->drag_object[i] = (int)in->drags[i].object;
        sc->drags[i] = in->drags[i].d;
    }
    for (int i = 0; i < in->nforces; i++) {
        const ForceIn *f = &in->forces[i];
        if (object_index(src, "forces", i, f->object, sc->nobjects, err, errlen)) return -1;
        sc->force_object[i] = (int)f->object;
        sc->forces[i] = f->f;
        if (region(src, "forces", i, f->shape, &f->f.region, f->has_lo, f->has_hi, f->has_center, f->has_radius,
                   &sc->forces[i].region, err, errlen))
            return -1;
    }
    sc->newton.max_iters = (int)in->newton.max_iters;
    sc->newton.max_hessians = (int)in->newton.max_hessians;
    sc->newton.tol = in->newton.tol, sc->newton.armijo = in->newton.armijo;
    sc->newton.reuse_ratio = in->newton.reuse_ratio, sc->newton.elastic_lag = in->newton.elastic_lag;
    return 0;
}

void sim_scene_free(SimScene *sc) {
    free(sc->objects), free(sc->planes), free(sc->fixed), free(sc->drags), free(sc->drag_object);
    free(sc->forces), free(sc->force_object), free(sc->rigids), free(sc->rig.keys), free(sc->rig.drags);
    memset(sc, 0, sizeof *sc);
}

/* text NULL: the file at `source` */
static int scene_read(const char *text, const char *source, SimScene *sc, char *err, size_t errlen) {
    SceneFile in;
    memset(&in, 0, sizeof in);
    memset(sc, 0, sizeof *sc);
    if (err && errlen) *err = 0;
    sim_newton_defaults(&in.sc.newton);
    sim_contact_defaults(&in.sc.contact);
    in.newton.max_iters = in.sc.newton.max_iters, in.newton.max_hessians = in.sc.newton.max_hessians;
    in.newton.tol = in.sc.newton.tol, in.newton.armijo = in.sc.newton.armijo;
    in.newton.reuse_ratio = in.sc.newton.reuse_ratio, in.newton.elastic_lag = in.sc.newton.elastic_lag;
    int rc = text ? ds_config_parse(text, source, SCENE, &in, err, errlen)
                  : ds_config_load(source, SCENE, &in, err, errlen);
    if (rc) return -1;
    *sc = in.sc;
    rc = resolve(source, &in, sc, err, errlen);
    free(in.fixed), free(in.drags), free(in.forces), free(in.planes), free(in.materials), free(in.pairs);
    if (rc) sim_scene_free(sc);
    return rc;
}

int sim_scene_parse(const char *text, const char *source, SimScene *sc, char *err, size_t errlen) {
    return scene_read(text ? text : "", source, sc, err, errlen);
}

int sim_scene_load(const char *path, SimScene *sc, char *err, size_t errlen) {
    return scene_read(NULL, path, sc, err, errlen);
}

/* ---- building and running ---------------------------------------------------------------------- */

static void scene_path(const char *scene_dir, const char *file, char *path, size_t n) {
    if (file[0] == '/' || !scene_dir) snprintf(path, n, "%s", file);
    else snprintf(path, n, "%s/%s", scene_dir, file);
}

static SimCheckpointSkinner checkpoint_skinner;

void sim_scene_set_checkpoint_skinner(SimCheckpointSkinner fn) { checkpoint_skinner = fn; }

/* source "physskin": the procedural shape skinned by a trained checkpoint through the installed
 * skinner, every interior candidate a cubature point */
static int physskin_skinning(const char *ckpt, const SimSceneObject *so, SimSkinning *sk, char *err, size_t errlen) {
    if (!checkpoint_skinner) {
        base_errf(err, errlen, "source \"physskin\" (checkpoint %s) needs a checkpoint skinner, and this program "
                  "installed none (sim_scene_set_checkpoint_skinner)", ckpt);
        return -1;
    }
    DsProceduralShape sh;
    if (ds_procedural_make(so->category, (uint64_t)so->seed, (int)so->mesh_res, &sh, err, errlen)) return -1;
    int rc = checkpoint_skinner(ckpt, &sh.mesh, so->category, sk, err, errlen);
    ds_procedural_free(&sh);
    return rc;
}

/* gauss (sc->nobjects entries, or NULL): objects with a `gaussians` PLY get it bound (bindings.h);
 * rig (or NULL): the scene's rig, when it has one, built on its object (sim/rig.h) */
static int build_objects(const SimScene *sc, const char *scene_dir, SimObject *objs, SimGaussianBinding *gauss,
                         SimRig *rig, char *err, size_t errlen) {
    memset(objs, 0, sizeof(SimObject) * (size_t)sc->nobjects);
    if (gauss) memset(gauss, 0, sizeof(SimGaussianBinding) * (size_t)sc->nobjects);
    for (int k = 0; k < sc->nobjects; k++) {
        const SimSceneObject *so = &sc->objects[k];
        SimSkinning sk;
        char e2[1024];
        if (!strcmp(so->source, "file")) {
            char path[2048];
            if (so->file[0] == '/' || !scene_dir) snprintf(path, sizeof path, "%s", so->file);
            else snprintf(path, sizeof path, "%s/%s", scene_dir, so->file);
            if (sim_skinning_read(path, &sk, e2, sizeof e2)) {
                base_errf(err, errlen, "objects[%d].skinning: %s", k, e2);
                goto fail;
            }
        } else if (!strcmp(so->source, "physskin")) {
            char path[2048];
            scene_path(scene_dir, so->ckpt, path, sizeof path);
            if (physskin_skinning(path, so, &sk, e2, sizeof e2)) {
                base_errf(err, errlen, "objects[%d].skinning: %s", k, e2);
                goto fail;
            }
        } else {
            SimProceduralOptions po;
            sim_procedural_defaults(&po);
            po.category = so->category, po.seed = (uint64_t)so->seed, po.kind = so->kind;
            po.handles = (int)so->handles, po.cubature_res = (int)so->cubature_res, po.mesh_res = (int)so->mesh_res;
            po.sigma = (float)so->sigma, po.rbf_radius = so->rbf_radius, po.normalize = so->normalize;
            if (sim_skinning_procedural(&po, &sk, e2, sizeof e2)) {
                base_errf(err, errlen, "objects[%d].skinning: %s", k, e2);
                goto fail;
            }
        }
        SimPose pose = sim_pose_identity();
        pose.scale = so->scale;
        memcpy(pose.translate, so->translate, sizeof pose.translate);
        sim_pose_euler(&pose, so->rotate_deg);
        int rc = sim_object_init(&objs[k], &sk, &so->material, &pose, e2, sizeof e2);
        if (rc) {
            sim_skinning_free(&sk);
            base_errf(err, errlen, "objects[%d]: %s", k, e2);
            goto fail;
        }
        /* the rig lives in the procedural frame; a network's skinning stores its own (x − c)·k */
        double rig_c[3] = {0, 0, 0}, rig_k = 1;
        if (sk.has_frame) memcpy(rig_c, sk.center, sizeof rig_c), rig_k = sk.scale;
        if (gauss && so->gaussians[0]) {
            char gpath[2048];
            scene_path(scene_dir, so->gaussians, gpath, sizeof gpath);
            rc = sim_gaussians_bind(&gauss[k], gpath, &sk, &objs[k], &pose, e2, sizeof e2);
        }
        sim_skinning_free(&sk);
        if (rc) {
            base_errf(err, errlen, "objects[%d].gaussians: %s", k, e2);
            goto fail;
        }
        SimObject *o = &objs[k];
        memcpy(o->gravity, sc->gravity, sizeof o->gravity);
        o->contact_material = so->material_id;
        o->newton = sc->newton;
        for (int i = 0; i < sc->nplanes; i++)
            if (sim_object_add_plane(o, &sc->planes[i], e2, sizeof e2)) {
                base_errf(err, errlen, "planes[%d]: %s", i, e2);
                goto fail;
            }
        for (int i = 0; i < sc->nfixed; i++) {
            const SimSceneFixed *f = &sc->fixed[i];
            if (f->object != k) continue;
            SimDirichlet d = f->d;
            if (d.falloff < 0) d.falloff = SIM_SCENE_FALLOFF * o->diag; /* the key absent: the default */
            if (f->shape == SIM_FIX_TOP || f->shape == SIM_FIX_BOTTOM) {
                /* a share of the rest height, over all points the object has */
                double lo = INFINITY, hi = -INFINITY;
                for (int64_t c = 0; c < o->nc; c++) lo = fmin(lo, o->Xc[3 * c + 1]), hi = fmax(hi, o->Xc[3 * c + 1]);
                for (int64_t v = 0; v < o->nv; v++) lo = fmin(lo, o->Xv[3 * v + 1]), hi = fmax(hi, o->Xv[3 * v + 1]);
                d.region.kind = SIM_REGION_BOX;
                for (int a = 0; a < 3; a++) d.region.lo[a] = -BIG, d.region.hi[a] = BIG;
                if (f->shape == SIM_FIX_TOP) d.region.lo[1] = hi - f->fraction * (hi - lo);
                else d.region.hi[1] = lo + f->fraction * (hi - lo);
            }
            if (sim_object_add_dirichlet(o, &d, e2, sizeof e2)) {
                base_errf(err, errlen, "fixed[%d]: %s", i, e2);
                goto fail;
            }
        }
        for (int i = 0; i < sc->ndrags; i++)
            if (sc->drag_object[i] == k && sim_object_add_drag(o, &sc->drags[i], e2, sizeof e2)) {
                base_errf(err, errlen, "drags[%d]: %s", i, e2);
                goto fail;
            }
        for (int i = 0; i < sc->nforces; i++)
            if (sc->force_object[i] == k && sim_object_add_force(o, &sc->forces[i], e2, sizeof e2)) {
                base_errf(err, errlen, "forces[%d]: %s", i, e2);
                goto fail;
            }
        /* after the controls: the rig's rows are taken from the final rows of B (falloff) */
        if (rig && sc->rig.object == k &&
            sim_rig_from_scene(rig, o, &sc->rig, so->category, (uint64_t)so->seed, (int)so->mesh_res, rig_c, rig_k, &pose,
                               scene_dir, (double)sc->steps * sc->dt, e2, sizeof e2)) {
            base_errf(err, errlen, "rig: %s", e2);
            goto fail;
        }
        if (sim_object_prepare(o, e2, sizeof e2)) {
            base_errf(err, errlen, "objects[%d]: %s", k, e2);
            goto fail;
        }
        if (so->cubature_points > 0) { /* after prepare: the drops step the object in its scene */
            SimCubatureOptions co;
            sim_cubature_defaults(&co);
            co.max_points = (int)so->cubature_points, co.drops = (int)so->cubature_drops;
            SimCubature cub;
            if (sim_cubature_optimize(o, &co, &cub, e2, sizeof e2)) {
                base_errf(err, errlen, "objects[%d].cubature_points: %s", k, e2);
                goto fail;
            }
            rc = sim_object_set_cubature(o, cub.k, cub.idx, cub.w, e2, sizeof e2);
            sim_cubature_free(&cub);
            if (rc) {
                base_errf(err, errlen, "objects[%d].cubature_points: %s", k, e2);
                goto fail;
            }
        }
    }
    return 0;
fail:
    if (rig && rig->nbones) sim_rig_free(rig);
    for (int k = 0; k < sc->nobjects; k++) sim_object_free(&objs[k]);
    if (gauss)
        for (int k = 0; k < sc->nobjects; k++) sim_gaussians_free(&gauss[k]);
    return -1;
}

int sim_scene_build(const SimScene *sc, const char *scene_dir, SimObject *objs, char *err, size_t errlen) {
    return build_objects(sc, scene_dir, objs, NULL, NULL, err, errlen);
}

int sim_scene_build_rigged(const SimScene *sc, const char *scene_dir, SimObject *objs, SimRig *rig, char *err,
                           size_t errlen) {
    return build_objects(sc, scene_dir, objs, NULL, rig, err, errlen);
}

int sim_scene_build_rigids(const SimScene *sc, const char *scene_dir, SimRigid *rigids, char *err, size_t errlen) {
    memset(rigids, 0, sizeof(SimRigid) * (size_t)(sc->nrigids + 1));
    for (int i = 0; i < sc->nrigids; i++) {
        const SimSceneRigid *r = &sc->rigids[i];
        DsMesh m;
        char e2[1024];
        int rc;
        if (!strcmp(r->shape, "sphere")) rc = sim_mesh_icosphere(r->radius, (int)r->subdiv, &m);
        else if (!strcmp(r->shape, "box")) rc = sim_mesh_box(r->half, &m);
        else {
            char path[2048];
            scene_path(scene_dir, r->file, path, sizeof path);
            rc = ds_mesh_read(path, &m, e2, sizeof e2);
            if (rc) {
                base_errf(err, errlen, "rigids[%d].file: %s", i, e2);
                goto fail;
            }
        }
        if (rc) {
            base_errf(err, errlen, "rigids[%d]: out of memory", i);
            goto fail;
        }
        SimPose pose = sim_pose_identity();
        pose.scale = r->scale;
        memcpy(pose.translate, r->translate, sizeof pose.translate);
        sim_pose_euler(&pose, r->rotate_deg);
        rc = sim_rigid_init(&rigids[i], &m, r->density, &pose, e2, sizeof e2);
        ds_mesh_free(&m);
        if (rc) {
            base_errf(err, errlen, "rigids[%d]: %s", i, e2);
            goto fail;
        }
        SimRigid *rb = &rigids[i];
        memcpy(rb->gravity, sc->gravity, sizeof rb->gravity);
        memcpy(rb->v, r->velocity, sizeof rb->v);
        memcpy(rb->w, r->angular_velocity, sizeof rb->w);
        memcpy(rb->color, r->color, sizeof rb->color);
        rb->restitution = r->restitution, rb->friction = r->friction;
        rb->contact_material = r->material_id;
    }
    return 0;
fail:
    for (int i = 0; i < sc->nrigids; i++) sim_rigid_free(&rigids[i]);
    return -1;
}

/* All objects' binding meshes in one DsMesh (positions now), plus, for the render, a square of
 * each plane around the objects. */
static int frame_mesh(const SimScene *sc, const SimObject *objs, const SimRigid *rigids, bool with_planes,
                      const double center[3], double extent, DsMesh *m) {
    memset(m, 0, sizeof *m);
    int64_t nv = 0, nf = 0;
    for (int k = 0; k < sc->nobjects; k++) nv += objs[k].nv, nf += objs[k].nf;
    for (int k = 0; k < sc->nrigids; k++) nv += rigids[k].nv, nf += rigids[k].nf;
    if (with_planes) nv += 4 * sc->nplanes, nf += 2 * sc->nplanes;
    m->v = malloc(sizeof(float) * 3 * (size_t)(nv + 1));
    m->color = malloc(sizeof(float) * 3 * (size_t)(nv + 1));
    m->f = malloc(sizeof(int32_t) * 3 * (size_t)(nf + 1));
    double *x = NULL;
    if (!m->v || !m->color || !m->f) goto oom;
    int64_t v0 = 0, f0 = 0;
    for (int k = 0; k < sc->nobjects; k++) {
        const SimObject *o = &objs[k];
        x = malloc(sizeof(double) * 3 * (size_t)(o->nv + 1));
        if (!x) goto oom;
        sim_object_vertices(o, x);
        for (int64_t v = 0; v < o->nv; v++)
            for (int i = 0; i < 3; i++) m->v[3 * (v0 + v) + i] = (float)x[3 * v + i], m->color[3 * (v0 + v) + i] = (float)sc->objects[k].color[i];
        for (int64_t f = 0; f < 3 * o->nf; f++) m->f[3 * f0 + f] = (int32_t)(o->faces[f] + v0);
        free(x), x = NULL;
        v0 += o->nv, f0 += o->nf;
    }
    for (int k = 0; k < sc->nrigids; k++) { /* rigid bodies at their pose (sim/rigid.h) */
        const SimRigid *r = &rigids[k];
        x = malloc(sizeof(double) * 3 * (size_t)(r->nv + 1));
        if (!x) goto oom;
        sim_rigid_vertices(r, x);
        for (int64_t v = 0; v < r->nv; v++)
            for (int i = 0; i < 3; i++) m->v[3 * (v0 + v) + i] = (float)x[3 * v + i], m->color[3 * (v0 + v) + i] = (float)r->color[i];
        for (int64_t f = 0; f < 3 * r->nf; f++) m->f[3 * f0 + f] = (int32_t)(r->faces[f] + v0);
        free(x), x = NULL;
        v0 += r->nv, f0 += r->nf;
    }
    if (with_planes)
        for (int p = 0; p < sc->nplanes; p++) {
            const SimPlane *pl = &sc->planes[p];
            double n[3], l = sqrt(pl->normal[0] * pl->normal[0] + pl->normal[1] * pl->normal[1] + pl->normal[2] * pl->normal[2]);
            for (int i = 0; i < 3; i++) n[i] = pl->normal[i] / l;
            double h = pl->offset / l, a[3] = {1, 0, 0}, t1[3], t2[3];
            if (fabs(n[0]) > 0.9) a[0] = 0, a[1] = 1;
            t1[0] = n[1] * a[2] - n[2] * a[1], t1[1] = n[2] * a[0] - n[0] * a[2], t1[2] = n[0] * a[1] - n[1] * a[0];
            double tl = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
            for (int i = 0; i < 3; i++) t1[i] /= tl;
            t2[0] = n[1] * t1[2] - n[2] * t1[1], t2[1] = n[2] * t1[0] - n[0] * t1[2], t2[2] = n[0] * t1[1] - n[1] * t1[0];
            double cd = center[0] * n[0] + center[1] * n[1] + center[2] * n[2] - h, s = 3 * extent;
            static const int sg[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
            for (int q = 0; q < 4; q++)
                for (int i = 0; i < 3; i++) {
                    m->v[3 * (v0 + q) + i] = (float)(center[i] - cd * n[i] + s * (sg[q][0] * t1[i] + sg[q][1] * t2[i]));
                    m->color[3 * (v0 + q) + i] = 0.85f;
                }
            int32_t b = (int32_t)v0;
            int32_t tri[6] = {b, b + 2, b + 1, b, b + 3, b + 2};
            /* orient the quad to face along n */
            double e1[3], e2[3], cr[3];
            for (int i = 0; i < 3; i++) e1[i] = m->v[3 * (b + 1) + i] - m->v[3 * b + i], e2[i] = m->v[3 * (b + 2) + i] - m->v[3 * b + i];
            cr[0] = e1[1] * e2[2] - e1[2] * e2[1], cr[1] = e1[2] * e2[0] - e1[0] * e2[2], cr[2] = e1[0] * e2[1] - e1[1] * e2[0];
            if (cr[0] * n[0] + cr[1] * n[1] + cr[2] * n[2] > 0) tri[1] = b + 1, tri[2] = b + 2, tri[4] = b + 2, tri[5] = b + 3;
            memcpy(m->f + 3 * f0, tri, sizeof tri);
            v0 += 4, f0 += 2;
        }
    m->nv = v0, m->nf = f0;
    return 0;
oom:
    free(x);
    ds_mesh_free(m);
    return -1;
}

/* The rigged object's Gaussians (rig NULL: none): the rig's weights at their rest centers, once,
 * and per frame u_r, F_r there at the rig's current pose (x = X + u_r + B z, sim/rig.h). */
typedef struct {
    const SimRig *rig;
    int object;
    SimRigPoints pts;
    double *u, *F;
} SceneRigGauss;

static int write_frame(const SimScene *sc, const SimObject *objs, const SimRigid *rigids, SimGaussianBinding *gauss,
                       const SceneRigGauss *rg, const char *outdir, int64_t frame, const DsCamera *cam,
                       const double center[3], double extent, char *err, size_t errlen) {
    char path[4096];
    for (int k = 0; k < sc->nobjects; k++) { /* bound 3D Gaussians (sim/bindings.h) */
        if (!gauss[k].bind.n) continue;
        if (rg->rig && rg->object == k) {
            sim_rig_points_eval(rg->rig, &rg->pts, rg->rig->local, rg->rig->root, rg->u, rg->F);
            sim_gaussians_update_rigged(&gauss[k], &objs[k], rg->u, rg->F);
        } else {
            sim_gaussians_update(&gauss[k], &objs[k]);
        }
        snprintf(path, sizeof path, "%s/frame_%05lld_gaussians_%d.ply", outdir, (long long)frame, k);
        if (ds_gaussians_write(path, &gauss[k].out, err, errlen)) return -1;
    }
    if (strcmp(sc->output.mesh, "none")) {
        DsMesh m;
        if (frame_mesh(sc, objs, rigids, false, center, extent, &m)) {
            base_errf(err, errlen, "sim: out of memory writing frame %lld", (long long)frame);
            return -1;
        }
        snprintf(path, sizeof path, "%s/frame_%05lld.%s", outdir, (long long)frame, sc->output.mesh);
        int rc = ds_mesh_write(path, &m, false, err, errlen);
        ds_mesh_free(&m);
        if (rc) return -1;
    }
    if (sc->output.png) {
        DsMesh m;
        if (frame_mesh(sc, objs, rigids, true, center, extent, &m)) {
            base_errf(err, errlen, "sim: out of memory rendering frame %lld", (long long)frame);
            return -1;
        }
        DsRasterOptions ro = ds_raster_options_default();
        ro.background[0] = 0.93f, ro.background[1] = 0.95f, ro.background[2] = 0.98f;
        ro.light = DS_LIGHT_DIRECTIONAL;
        ro.light_dir[0] = 0.4, ro.light_dir[1] = 1.0, ro.light_dir[2] = 0.6;
        ro.supersample = 2;
        DsRender r;
        int rc = ds_raster_render(&m, cam, &ro, &r, err, errlen);
        ds_mesh_free(&m);
        if (rc) return -1;
        snprintf(path, sizeof path, "%s/frame_%05lld.png", outdir, (long long)frame);
        rc = ds_render_write_png(path, &r, false, err, errlen);
        ds_render_free(&r);
        if (rc) return -1;
    }
    return 0;
}

DsCamera sim_scene_camera(const SimScene *sc, const double center[3], double extent) {
    double target[3], eye[3], up[3] = {0, 1, 0};
    memcpy(target, sc->output.has_target ? sc->output.target : center, sizeof target);
    if (sc->output.has_eye) memcpy(eye, sc->output.eye, sizeof eye);
    else eye[0] = target[0] + 0.6 * extent, eye[1] = target[1] + 0.6 * extent, eye[2] = target[2] + 2.4 * extent;
    return ds_camera_look_at(eye, target, up, (int)sc->output.width, (int)sc->output.height, sc->output.fov);
}

int sim_scene_run(const SimScene *sc, const char *scene_dir, const char *outdir, SimProgressFn progress, void *ctx,
                  SimRunReport *report, char *err, size_t errlen) {
    memset(report, 0, sizeof *report);
    report->min_distance = INFINITY;
    if (mkdir(outdir, 0777) && errno != EEXIST) {
        base_errf(err, errlen, "%s: cannot create the output directory (%s)", outdir, strerror(errno));
        return -1;
    }
    SimObject *objs = calloc((size_t)sc->nobjects, sizeof *objs);
    SimGaussianBinding *gauss = calloc((size_t)sc->nobjects, sizeof *gauss);
    SimRigid *rigids = calloc((size_t)sc->nrigids + 1, sizeof *rigids);
    double *ms = malloc(sizeof(double) * (size_t)sc->steps * 2);
    if (!objs || !gauss || !rigids || !ms) {
        free(objs), free(gauss), free(rigids), free(ms);
        base_errf(err, errlen, "sim: out of memory");
        return -1;
    }
    double *cpu = ms + sc->steps;
    SimRig rig = {0};
    bool rigged = sc->rig.object >= 0;
    /* with a rig: the secondary motion's kinetic energy per step (kinetic.png) */
    double *ke = rigged ? malloc(sizeof(double) * 2 * (size_t)(sc->steps + 1)) : NULL;
    if (rigged && !ke) {
        free(objs), free(gauss), free(rigids), free(ms);
        base_errf(err, errlen, "sim: out of memory");
        return -1;
    }
    if (build_objects(sc, scene_dir, objs, gauss, rigged ? &rig : NULL, err, errlen)) {
        free(objs), free(gauss), free(rigids), free(ms), free(ke);
        return -1;
    }
    SimWorld world = {0};
    SceneRigGauss rg = {0};
    int rc = -1;
    if (sim_scene_build_rigids(sc, scene_dir, rigids, err, errlen)) {
        if (rigged) sim_rig_free(&rig);
        for (int k = 0; k < sc->nobjects; k++) sim_object_free(&objs[k]), sim_gaussians_free(&gauss[k]);
        free(objs), free(gauss), free(rigids), free(ms), free(ke);
        return -1;
    }
    /* all objects and rigid bodies in one world step (sim/world.h) */
    if (sim_world_init(&world, objs, sc->nobjects, rigids, sc->nrigids, sc->planes, sc->nplanes, &sc->contact, err,
                       errlen))
        goto done;
    /* the camera frames the rest configuration (and the floor below it) */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int k = 0; k < sc->nobjects; k++)
        for (int64_t c = 0; c < objs[k].nc; c++)
            for (int i = 0; i < 3; i++) lo[i] = fmin(lo[i], objs[k].Xc[3 * c + i]), hi[i] = fmax(hi[i], objs[k].Xc[3 * c + i]);
    for (int k = 0; k < sc->nrigids; k++)
        for (int64_t v = 0; v < rigids[k].nv; v++)
            for (int i = 0; i < 3; i++) {
                double x = rigids[k].c[i] + rigids[k].Xb[3 * v + i]; /* orientation starts at identity */
                lo[i] = fmin(lo[i], x), hi[i] = fmax(hi[i], x);
            }
    if (sc->nplanes) lo[1] = fmin(lo[1], 0);
    double center[3], extent;
    ds_box_center_extent(lo, hi, center, &extent);
    DsCamera cam = sim_scene_camera(sc, center, extent);
    SimObject *ro = rigged ? &objs[sc->rig.object] : NULL;
    if (rigged) report->rig_modes = rig.nm, report->rig_modes_kept = rig.kept;
    if (rigged && gauss[sc->rig.object].bind.n) {
        int64_t n = gauss[sc->rig.object].bind.n;
        rg.rig = &rig, rg.object = (int)sc->rig.object;
        rg.u = malloc(sizeof(double) * 3 * (size_t)n), rg.F = malloc(sizeof(double) * 9 * (size_t)n);
        if (!rg.u || !rg.F) {
            base_errf(err, errlen, "sim: out of memory");
            goto done;
        }
        SimBinding *gbind = &gauss[sc->rig.object].bind;
        if (sim_rig_points_init(&rig, n, gbind->X, &rg.pts, err, errlen)) goto done;
        sim_rig_points_project(&rig, &rg.pts, gbind->X, gbind->nb, gbind->B, gbind->G); /* B_comp (sim/rig.h) */
    }
    if (rigged) { /* frame 0 shows the rig's pose at t = 0 */
        sim_rig_advance(&rig, ro, 0);
        ke[0] = 0, ke[sc->steps + 1] = 0;
    }
    double e0 = sim_world_energy(&world);
    if (write_frame(sc, objs, rigids, gauss, &rg, outdir, 0, &cam, center, extent, err, errlen)) goto done;
    report->frames = 1;
    for (int64_t s = 1; s <= sc->steps; s++) {
        double c0 = base_cpu_now();
        if (rigged) sim_rig_advance(&rig, ro, (double)s * sc->dt);
        if (sim_world_step(&world, sc->dt, err, errlen)) goto done;
        cpu[s - 1] = 1e3 * (base_cpu_now() - c0);
        const SimWorldStats *st = &world.last;
        double step_ms = 1e3 * st->seconds;
        report->newton_iters += st->iters;
        report->newton_failures += st->failures;
        report->steps_with_failures += st->failures > 0;
        report->ccd_limited += st->ccd_limited;
        report->min_distance = fmin(report->min_distance, st->min_distance);
        ms[s - 1] = step_ms;
        report->ms_total += step_ms;
        double e = sim_world_energy(&world);
        report->max_energy_rise = fmax(report->max_energy_rise, e - e0);
        report->steps = s;
        if (rigged) {
            ke[s] = sim_object_energy(ro).kinetic, ke[sc->steps + 1 + s] = (double)s * sc->dt;
            report->rig_kinetic_max = fmax(report->rig_kinetic_max, ke[s]), report->rig_kinetic_end = ke[s];
            if (s % sc->output.every == 0)
                report->rig_projection_max = fmax(report->rig_projection_max, sim_rig_projection(&rig, ro));
        }
        if (s % sc->output.every == 0) {
            if (write_frame(sc, objs, rigids, gauss, &rg, outdir, s / sc->output.every, &cam, center, extent, err, errlen))
                goto done;
            report->frames++;
        }
        if (progress) progress(ctx, s, sc->steps, objs, sc->nobjects);
    }
    qsort(ms, (size_t)sc->steps, sizeof *ms, base_cmp_double);
    report->ms_median = ms[sc->steps / 2];
    report->ms_p90 = ms[sc->steps * 9 / 10];
    qsort(cpu, (size_t)sc->steps, sizeof *cpu, base_cmp_double);
    report->cpu_ms_median = cpu[sc->steps / 2];
    if (rigged) {
        char path[4096];
        snprintf(path, sizeof path, "%s/kinetic.png", outdir);
        if (sim_rig_write_plot(path, sc->steps + 1, ke + sc->steps + 1, ke, fmin(sc->rig.t_stop, 1e300), 640, 320, err,
                               errlen))
            goto done;
    }
    rc = 0;
done:
    sim_rig_points_free(&rg.pts), free(rg.u), free(rg.F);
    if (rigged) sim_rig_free(&rig);
    free(ke);
    sim_world_free(&world);
    for (int k = 0; k < sc->nobjects; k++) sim_object_free(&objs[k]), sim_gaussians_free(&gauss[k]);
    for (int k = 0; k < sc->nrigids; k++) sim_rigid_free(&rigids[k]);
    free(objs), free(gauss), free(rigids), free(ms);
    return rc;
}
