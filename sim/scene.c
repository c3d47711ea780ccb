/* sim/scene.c — scene files (schema-checked JSON) and the scene runner. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datasets/camera.h"
#include "datasets/mesh.h"
#include "datasets/raster.h"
#include "sim/bindings.h"
#include "sim/internal.h"
#include "sim/scene.h"

/* ---- a small schema walker with datasets/config.c's messages --------------------------------- */

typedef struct {
    const char *src;
    char *err;
    size_t errlen;
} Ctx;

static void describe(const cJSON *v, char *buf, size_t n) {
    char *s = cJSON_PrintUnformatted(v);
    snprintf(buf, n, "%s", s ? s : "?");
    if (strlen(buf) > 60) strcpy(buf + 57, "...");
    free(s);
}

/* "path.key" (or "key" at the top level), truncated to n − 1 characters */
static void kp(char *out, size_t n, const char *path, const char *key) {
    size_t k = 0;
    for (const char *s = path; *s && k + 1 < n; s++) out[k++] = *s;
    if (*path && k + 1 < n) out[k++] = '.';
    for (const char *s = key; *s && k + 1 < n; s++) out[k++] = *s;
    out[k] = 0;
}

static int wrong(Ctx *c, const char *path, const char *key, const char *expected, const cJSON *v) {
    char k[256], got[80];
    kp(k, sizeof k, path, key);
    describe(v, got, sizeof got);
    base_errf(c->err, c->errlen, "%s: key '%s': expected %s, got %s", c->src, k, expected, got);
    return -1;
}

static int check_keys(Ctx *c, const cJSON *obj, const char *path, const char *const *known) {
    if (!cJSON_IsObject(obj)) {
        char got[80];
        describe(obj, got, sizeof got);
        base_errf(c->err, c->errlen, "%s: key '%s': expected an object, got %s", c->src, *path ? path : "(top level)", got);
        return -1;
    }
    for (const cJSON *e = obj->child; e; e = e->next) {
        for (const cJSON *d = obj->child; d != e; d = d->next)
            if (!strcmp(d->string, e->string)) {
                char k[256];
                kp(k, sizeof k, path, e->string);
                base_errf(c->err, c->errlen, "%s: key '%s' given twice", c->src, k);
                return -1;
            }
        const char *const *p = known;
        while (*p && strcmp(*p, e->string)) p++;
        if (!*p) {
            char k[256], list[512] = "";
            kp(k, sizeof k, path, e->string);
            for (p = known; *p; p++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", p == known ? "" : ", ", *p);
            base_errf(c->err, c->errlen, "%s: unknown key '%s' (known here: %s)", c->src, k, list);
            return -1;
        }
    }
    return 0;
}

/* fixed[].falloff when absent, × the object's rest diagonal (sim/solver.h: SimDirichlet.falloff; the
 * sag tip moved by 2% between 0.1 and 0.3) */
#define SIM_SCENE_FALLOFF 0.2
static int get_num(Ctx *c, const cJSON *o, const char *path, const char *key, double def, double lo, double hi,
                   double *out) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!v) {
        if (isnan(def)) {
            char k[256];
            kp(k, sizeof k, path, key);
            base_errf(c->err, c->errlen, "%s: missing required key '%s' (a number)", c->src, k);
            return -1;
        }
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return wrong(c, path, key, "a number", v);
    if (v->valuedouble < lo || v->valuedouble > hi) {
        char e[96];
        snprintf(e, sizeof e, "a number in [%g, %g]", lo, hi);
        return wrong(c, path, key, e, v);
    }
    *out = v->valuedouble;
    return 0;
}

static int get_int(Ctx *c, const cJSON *o, const char *path, const char *key, int64_t def, int64_t lo, int64_t hi,
                   int64_t *out) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!v) {
        *out = def;
        return 0;
    }
    char e[96];
    snprintf(e, sizeof e, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi)
        return wrong(c, path, key, e, v);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int get_bool(Ctx *c, const cJSON *o, const char *path, const char *key, bool def, bool *out) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return wrong(c, path, key, "true or false", v);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* def NULL: required */
static int get_vec3(Ctx *c, const cJSON *o, const char *path, const char *key, const double *def, double out[3]) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!v) {
        if (!def) {
            char k[256];
            kp(k, sizeof k, path, key);
            base_errf(c->err, c->errlen, "%s: missing required key '%s' (an array of 3 numbers)", c->src, k);
            return -1;
        }
        memcpy(out, def, sizeof(double) * 3);
        return 0;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3) return wrong(c, path, key, "an array of 3 numbers", v);
    for (int i = 0; i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) return wrong(c, path, key, "an array of 3 numbers", v);
        out[i] = e->valuedouble;
    }
    return 0;
}

static int get_str(Ctx *c, const cJSON *o, const char *path, const char *key, const char *def,
                   const char *const *choices, char *out, size_t size) {
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    const char *s = def;
    if (v) {
        if (!cJSON_IsString(v)) return wrong(c, path, key, "a string", v);
        s = v->valuestring;
    }
    if (choices) {
        const char *const *p = choices;
        while (*p && strcmp(*p, s)) p++;
        if (!*p) {
            char e[256] = "one of ";
            for (p = choices; *p; p++) snprintf(e + strlen(e), sizeof e - strlen(e), "%s\"%s\"", p == choices ? "" : ", ", *p);
            return wrong(c, path, key, e, v);
        }
    }
    if (strlen(s) + 1 > size) return wrong(c, path, key, "a shorter string", v);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

/* an optional array of objects: *n elements (0 when absent) */
static int get_array(Ctx *c, const cJSON *o, const char *key, const cJSON **arr, int *n, int min_n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *arr = v, *n = 0;
    if (!v) {
        if (min_n > 0) {
            base_errf(c->err, c->errlen, "%s: missing required key '%s' (an array of at least %d objects)", c->src, key,
                    min_n);
            return -1;
        }
        return 0;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < min_n) {
        char e[64];
        snprintf(e, sizeof e, "an array of at least %d objects", min_n);
        return wrong(c, "", key, e, v);
    }
    *n = cJSON_GetArraySize(v);
    return 0;
}

#define BIG 1e30

static int parse_object(Ctx *c, const cJSON *e, const char *path, SimSceneObject *o) {
    static const char *const keys[] = {"skinning", "material", "pose", "color", "gaussians", NULL};
    static const char *const sk_keys[] = {"source", "file", "category", "seed", "kind", "handles", "cubature_res",
                                          "mesh_res", "sigma", "rbf_radius", "normalize", NULL};
    static const char *const sources[] = {"procedural", "file", NULL}, *const kinds[] = {"bones", "rbf", NULL};
    static const char *const mat_keys[] = {"E", "nu", "rho", NULL}, *const pose_keys[] = {"scale", "translate", "rotate_deg", NULL};
    if (check_keys(c, e, path, keys)) return -1;
    char p[256];
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "skinning");
    kp(p, sizeof p, path, "skinning");
    if (s && check_keys(c, s, p, sk_keys)) return -1;
    if (get_str(c, s, p, "source", "procedural", sources, o->source, sizeof o->source) ||
        get_str(c, s, p, "file", "", NULL, o->file, sizeof o->file) ||
        get_str(c, s, p, "category", "cactus", NULL, o->category, sizeof o->category) ||
        get_int(c, s, p, "seed", 1, 0, INT64_MAX / 2, &o->seed) ||
        get_str(c, s, p, "kind", "bones", kinds, o->kind, sizeof o->kind) ||
        get_int(c, s, p, "handles", 16, 1, 256, &o->handles) ||
        get_int(c, s, p, "cubature_res", 24, 4, 256, &o->cubature_res) ||
        get_int(c, s, p, "mesh_res", 48, 16, 512, &o->mesh_res) || get_num(c, s, p, "sigma", 0, 0, 10, &o->sigma) ||
        get_num(c, s, p, "rbf_radius", 0, 0, 100, &o->rbf_radius) ||
        get_bool(c, s, p, "normalize", true, &o->normalize))
        return -1;
    if (!strcmp(o->source, "file") && !*o->file) {
        base_errf(c->err, c->errlen, "%s: key '%s.file': required when source is \"file\"", c->src, p);
        return -1;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "material");
    kp(p, sizeof p, path, "material");
    if (m && check_keys(c, m, p, mat_keys)) return -1;
    if (get_num(c, m, p, "E", 5e4, 1e-6, 1e15, &o->material.E) ||
        get_num(c, m, p, "nu", 0.3, -0.99, 0.499, &o->material.nu) ||
        get_num(c, m, p, "rho", 1000, 1e-6, 1e8, &o->material.rho))
        return -1;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(e, "pose");
    kp(p, sizeof p, path, "pose");
    if (q && check_keys(c, q, p, pose_keys)) return -1;
    static const double t0[3] = {0, 1, 0}, zero[3] = {0, 0, 0}, col[3] = {0.8, 0.45, 0.3};
    if (get_num(c, q, p, "scale", 0.5, 1e-9, 1e9, &o->scale) || get_vec3(c, q, p, "translate", t0, o->translate) ||
        get_vec3(c, q, p, "rotate_deg", zero, o->rotate_deg) || get_vec3(c, e, path, "color", col, o->color) ||
        get_str(c, e, path, "gaussians", "", NULL, o->gaussians, sizeof o->gaussians))
        return -1;
    return 0;
}

static int parse_region(Ctx *c, const cJSON *e, const char *path, const char *shape, SimRegion *r) {
    if (!strcmp(shape, "box")) {
        r->kind = SIM_REGION_BOX;
        if (get_vec3(c, e, path, "lo", NULL, r->lo) || get_vec3(c, e, path, "hi", NULL, r->hi)) return -1;
    } else if (!strcmp(shape, "sphere")) {
        r->kind = SIM_REGION_SPHERE;
        if (get_vec3(c, e, path, "center", NULL, r->center) || get_num(c, e, path, "radius", NAN, 0, BIG, &r->radius))
            return -1;
    } else
        r->kind = SIM_REGION_ALL;
    return 0;
}

static int object_index(Ctx *c, const cJSON *e, const char *path, int nobjects, int *out) {
    int64_t k;
    if (get_int(c, e, path, "object", 0, 0, nobjects - 1, &k)) return -1;
    *out = (int)k;
    return 0;
}

/* ---- contact and rigid bodies (sim/world.h, sim/rigid.h) ---- */
static int parse_contact_rigids(Ctx *c, const cJSON *root, SimScene *sc) {
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "contact");
    static const char *const ckeys[] = {"enabled", "dhat", "stiffness", "min_sep", NULL};
    if (ct && check_keys(c, ct, "contact", ckeys)) return -1;
    sim_contact_defaults(&sc->contact);
    if (get_bool(c, ct, "contact", "enabled", true, &sc->contact.enabled) ||
        get_num(c, ct, "contact", "dhat", 0, 0, 100, &sc->contact.dhat) ||
        get_num(c, ct, "contact", "stiffness", 0, 0, BIG, &sc->contact.stiffness) ||
        get_num(c, ct, "contact", "min_sep", 0.2, 0.01, 0.9, &sc->contact.min_sep))
        return -1;
    const cJSON *arr;
    int n;
    if (get_array(c, root, "rigids", &arr, &n, 0)) return -1;
    sc->rigids = calloc((size_t)n + 1, sizeof *sc->rigids);
    if (!sc->rigids) return -1;
    sc->nrigids = n;
    static const char *const rkeys[] = {"shape", "radius", "subdiv", "half", "file", "density", "scale", "translate",
                                        "rotate_deg", "velocity", "angular_velocity", "restitution", "friction",
                                        "color", NULL};
    static const char *const rshapes[] = {"sphere", "box", "mesh", NULL};
    static const double zero[3] = {0, 0, 0}, up[3] = {0, 1, 0}, h0[3] = {0.1, 0.1, 0.1}, grey[3] = {0.6, 0.6, 0.65};
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(arr, i);
        SimSceneRigid *r = &sc->rigids[i];
        char p[64];
        snprintf(p, sizeof p, "rigids[%d]", i);
        if (check_keys(c, e, p, rkeys) || get_str(c, e, p, "shape", "sphere", rshapes, r->shape, sizeof r->shape) ||
            get_num(c, e, p, "radius", 0.1, 1e-6, 1e6, &r->radius) || get_int(c, e, p, "subdiv", 3, 0, 5, &r->subdiv) ||
            get_vec3(c, e, p, "half", h0, r->half) || get_str(c, e, p, "file", "", NULL, r->file, sizeof r->file) ||
            get_num(c, e, p, "density", 1000, 1e-6, 1e8, &r->density) || get_num(c, e, p, "scale", 1, 1e-9, 1e9, &r->scale) ||
            get_vec3(c, e, p, "translate", up, r->translate) || get_vec3(c, e, p, "rotate_deg", zero, r->rotate_deg) ||
            get_vec3(c, e, p, "velocity", zero, r->velocity) ||
            get_vec3(c, e, p, "angular_velocity", zero, r->angular_velocity) ||
            get_num(c, e, p, "restitution", 0.3, 0, 1, &r->restitution) ||
            get_num(c, e, p, "friction", 0.5, 0, 10, &r->friction) || get_vec3(c, e, p, "color", grey, r->color))
            return -1;
        if (!strcmp(r->shape, "mesh") && !*r->file) {
            base_errf(c->err, c->errlen, "%s: key '%s.file': required when shape is \"mesh\"", c->src, p);
            return -1;
        }
        for (int k = 0; k < 3; k++)
            if (!(r->half[k] > 0)) return wrong(c, p, "half", "three positive numbers", cJSON_GetObjectItemCaseSensitive(e, "half"));
    }
    return 0;
}

static int parse_root(Ctx *c, const cJSON *root, SimScene *sc) {
    static const char *const keys[] = {"dt", "steps", "gravity", "newton", "objects", "planes", "fixed", "drags",
                                       "forces", "output", "contact", "rigids", NULL};
    if (check_keys(c, root, "", keys)) return -1;
    static const double g0[3] = {0, -9.81, 0};
    if (get_num(c, root, "", "dt", 0.01, 1e-6, 1, &sc->dt) || get_int(c, root, "", "steps", 200, 1, 100000000, &sc->steps) ||
        get_vec3(c, root, "", "gravity", g0, sc->gravity))
        return -1;
    sim_newton_defaults(&sc->newton);
    const cJSON *nw = cJSON_GetObjectItemCaseSensitive(root, "newton");
    static const char *const nkeys[] = {"max_iters", "tol", "armijo", "max_hessians", "reuse_ratio", "elastic_lag", NULL};
    if (nw && check_keys(c, nw, "newton", nkeys)) return -1;
    int64_t it, nh;
    if (get_int(c, nw, "newton", "max_iters", sc->newton.max_iters, 1, 1000, &it) ||
        get_num(c, nw, "newton", "tol", sc->newton.tol, 0, 1, &sc->newton.tol) ||
        get_num(c, nw, "newton", "armijo", sc->newton.armijo, 0, 0.5, &sc->newton.armijo) ||
        get_int(c, nw, "newton", "max_hessians", sc->newton.max_hessians, 1, 1000, &nh) ||
        get_num(c, nw, "newton", "reuse_ratio", sc->newton.reuse_ratio, 0, 1, &sc->newton.reuse_ratio) ||
        get_num(c, nw, "newton", "elastic_lag", sc->newton.elastic_lag, 0, 1, &sc->newton.elastic_lag))
        return -1;
    sc->newton.max_iters = (int)it;
    sc->newton.max_hessians = (int)nh;
    const cJSON *arr;
    int n;
    char p[256];
    if (get_array(c, root, "objects", &arr, &n, 1)) return -1;
    sc->objects = calloc((size_t)n, sizeof *sc->objects);
    if (!sc->objects) return -1;
    sc->nobjects = n;
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "objects[%d]", i);
        if (parse_object(c, cJSON_GetArrayItem(arr, i), p, &sc->objects[i])) return -1;
    }
    if (get_array(c, root, "planes", &arr, &n, 0)) return -1;
    sc->planes = calloc((size_t)n + 1, sizeof *sc->planes);
    sc->nplanes = n;
    static const char *const pkeys[] = {"normal", "offset", "stiffness", NULL};
    static const double up[3] = {0, 1, 0};
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(arr, i);
        SimPlane *pl = &sc->planes[i];
        snprintf(p, sizeof p, "planes[%d]", i);
        if (check_keys(c, e, p, pkeys) || get_vec3(c, e, p, "normal", up, pl->normal) ||
            get_num(c, e, p, "offset", 0, -BIG, BIG, &pl->offset) || get_num(c, e, p, "stiffness", 1e6, 0, BIG, &pl->stiffness))
            return -1;
        if (pl->normal[0] == 0 && pl->normal[1] == 0 && pl->normal[2] == 0)
            return wrong(c, p, "normal", "a nonzero vector", cJSON_GetObjectItemCaseSensitive(e, "normal"));
    }
    if (get_array(c, root, "fixed", &arr, &n, 0)) return -1;
    sc->fixed = calloc((size_t)n + 1, sizeof *sc->fixed);
    sc->nfixed = n;
    static const char *const fkeys[] = {"object", "shape", "fraction", "lo", "hi", "center", "radius", "velocity",
                                        "mode", "stiffness", "falloff", NULL};
    static const char *const fshapes[] = {"top", "bottom", "box", "sphere", NULL}, *const modes[] = {"exact", "penalty", NULL};
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(arr, i);
        SimSceneFixed *f = &sc->fixed[i];
        char shape[8], mode[8];
        static const double zero[3] = {0, 0, 0};
        snprintf(p, sizeof p, "fixed[%d]", i);
        if (check_keys(c, e, p, fkeys) || object_index(c, e, p, sc->nobjects, &f->object) ||
            get_str(c, e, p, "shape", "top", fshapes, shape, sizeof shape) ||
            get_num(c, e, p, "fraction", 0.15, 0, 1, &f->fraction) || get_vec3(c, e, p, "velocity", zero, f->d.velocity) ||
            get_str(c, e, p, "mode", "exact", modes, mode, sizeof mode) ||
            get_num(c, e, p, "stiffness", 1e7, 0, BIG, &f->d.stiffness) ||
            get_num(c, e, p, "falloff", -1, 0, BIG, &f->d.falloff))
            return -1;
        f->shape = !strcmp(shape, "top") ? SIM_FIX_TOP : !strcmp(shape, "bottom") ? SIM_FIX_BOTTOM
                 : !strcmp(shape, "box") ? SIM_FIX_BOX : SIM_FIX_SPHERE;
        f->d.penalty = !strcmp(mode, "penalty");
        if ((f->shape == SIM_FIX_BOX || f->shape == SIM_FIX_SPHERE) && parse_region(c, e, p, shape, &f->d.region)) return -1;
    }
    if (get_array(c, root, "drags", &arr, &n, 0)) return -1;
    sc->drags = calloc((size_t)n + 1, sizeof *sc->drags);
    sc->drag_object = calloc((size_t)n + 1, sizeof(int));
    sc->ndrags = n;
    static const char *const dkeys[] = {"object", "grab", "radius", "stiffness", "target", "t0", "t1", "t_release", NULL};
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(arr, i);
        SimDrag *d = &sc->drags[i];
        snprintf(p, sizeof p, "drags[%d]", i);
        if (check_keys(c, e, p, dkeys) || object_index(c, e, p, sc->nobjects, &sc->drag_object[i]) ||
            get_vec3(c, e, p, "grab", NULL, d->grab) || get_num(c, e, p, "radius", 0.1, 1e-9, BIG, &d->radius) ||
            get_num(c, e, p, "stiffness", 1e4, 0, BIG, &d->stiffness) || get_vec3(c, e, p, "target", NULL, d->target) ||
            get_num(c, e, p, "t0", 0, 0, BIG, &d->t0) || get_num(c, e, p, "t1", 0.5, 0, BIG, &d->t1) ||
            get_num(c, e, p, "t_release", BIG, 0, BIG, &d->t_release))
            return -1;
    }
    if (get_array(c, root, "forces", &arr, &n, 0)) return -1;
    sc->forces = calloc((size_t)n + 1, sizeof *sc->forces);
    sc->force_object = calloc((size_t)n + 1, sizeof(int));
    sc->nforces = n;
    static const char *const xkeys[] = {"object", "accel", "t0", "t1", "shape", "lo", "hi", "center", "radius", NULL};
    static const char *const xshapes[] = {"all", "box", "sphere", NULL};
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(arr, i);
        SimForceField *f = &sc->forces[i];
        char shape[8];
        snprintf(p, sizeof p, "forces[%d]", i);
        if (check_keys(c, e, p, xkeys) || object_index(c, e, p, sc->nobjects, &sc->force_object[i]) ||
            get_vec3(c, e, p, "accel", NULL, f->accel) || get_num(c, e, p, "t0", 0, 0, BIG, &f->t0) ||
            get_num(c, e, p, "t1", BIG, 0, BIG, &f->t1) || get_str(c, e, p, "shape", "all", xshapes, shape, sizeof shape) ||
            parse_region(c, e, p, shape, &f->region))
            return -1;
    }
    if (parse_contact_rigids(c, root, sc)) return -1;
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(root, "output");
    static const char *const okeys[] = {"every", "mesh", "png", "width", "height", "eye", "target", "fov", NULL};
    static const char *const mfmt[] = {"ply", "obj", "none", NULL};
    if (out && check_keys(c, out, "output", okeys)) return -1;
    if (get_int(c, out, "output", "every", 5, 1, 1000000, &sc->output.every) ||
        get_str(c, out, "output", "mesh", "ply", mfmt, sc->output.mesh, sizeof sc->output.mesh) ||
        get_bool(c, out, "output", "png", true, &sc->output.png) ||
        get_int(c, out, "output", "width", 480, 16, 8192, &sc->output.width) ||
        get_int(c, out, "output", "height", 360, 16, 8192, &sc->output.height) ||
        get_num(c, out, "output", "fov", 40, 1, 170, &sc->output.fov))
        return -1;
    sc->output.has_eye = out && cJSON_GetObjectItemCaseSensitive(out, "eye");
    sc->output.has_target = out && cJSON_GetObjectItemCaseSensitive(out, "target");
    if ((sc->output.has_eye && get_vec3(c, out, "output", "eye", NULL, sc->output.eye)) ||
        (sc->output.has_target && get_vec3(c, out, "output", "target", NULL, sc->output.target)))
        return -1;
    return 0;
}

void sim_scene_free(SimScene *sc) {
    free(sc->objects), free(sc->planes), free(sc->fixed), free(sc->drags), free(sc->drag_object);
    free(sc->forces), free(sc->force_object), free(sc->rigids);
    memset(sc, 0, sizeof *sc);
}

int sim_scene_parse(const char *text, const char *source, SimScene *sc, char *err, size_t errlen) {
    memset(sc, 0, sizeof *sc);
    if (err && errlen) *err = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text ? text : "", &end, true);
    if (!root) {
        int line = 1, col = 1;
        for (const char *q = text; q && end && q < end && *q; q++) {
            if (*q == '\n') line++, col = 1;
            else col++;
        }
        base_errf(err, errlen, "%s:%d:%d: invalid JSON", source, line, col);
        return -1;
    }
    Ctx c = {source, err, errlen};
    int rc = parse_root(&c, root, sc);
    cJSON_Delete(root);
    if (rc) {
        if (err && !*err) base_errf(err, errlen, "%s: out of memory", source);
        sim_scene_free(sc);
    }
    return rc;
}

int sim_scene_load(const char *path, SimScene *sc, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        base_errf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (!text || (n > 0 && fread(text, 1, (size_t)n, f) != (size_t)n)) {
        fclose(f), free(text);
        base_errf(err, errlen, "%s: cannot read", path);
        return -1;
    }
    fclose(f);
    text[n > 0 ? n : 0] = 0;
    if (err && errlen) *err = 0;
    int rc = sim_scene_parse(text, path, sc, err, errlen);
    free(text);
    return rc;
}

/* ---- building and running ---------------------------------------------------------------------- */

static void scene_path(const char *scene_dir, const char *file, char *path, size_t n) {
    if (file[0] == '/' || !scene_dir) snprintf(path, n, "%s", file);
    else snprintf(path, n, "%s/%s", scene_dir, file);
}

/* gauss (sc->nobjects entries, or NULL): objects with a `gaussians` PLY get it bound (bindings.h) */
static int build_objects(const SimScene *sc, const char *scene_dir, SimObject *objs, SimGaussianBinding *gauss,
                         char *err, size_t errlen) {
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
        if (sim_object_prepare(o, e2, sizeof e2)) {
            base_errf(err, errlen, "objects[%d]: %s", k, e2);
            goto fail;
        }
    }
    return 0;
fail:
    for (int k = 0; k < sc->nobjects; k++) sim_object_free(&objs[k]);
    if (gauss)
        for (int k = 0; k < sc->nobjects; k++) sim_gaussians_free(&gauss[k]);
    return -1;
}

int sim_scene_build(const SimScene *sc, const char *scene_dir, SimObject *objs, char *err, size_t errlen) {
    return build_objects(sc, scene_dir, objs, NULL, err, errlen);
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

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int write_frame(const SimScene *sc, const SimObject *objs, const SimRigid *rigids, SimGaussianBinding *gauss,
                       const char *outdir, int64_t frame, const DsCamera *cam, const double center[3], double extent,
                       char *err, size_t errlen) {
    char path[4096];
    for (int k = 0; k < sc->nobjects; k++) { /* bound 3D Gaussians (sim/bindings.h) */
        if (!gauss[k].bind.n) continue;
        sim_gaussians_update(&gauss[k], &objs[k]);
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
    if (build_objects(sc, scene_dir, objs, gauss, err, errlen)) {
        free(objs), free(gauss), free(rigids), free(ms);
        return -1;
    }
    SimWorld world = {0};
    int rc = -1;
    if (sim_scene_build_rigids(sc, scene_dir, rigids, err, errlen)) {
        for (int k = 0; k < sc->nobjects; k++) sim_object_free(&objs[k]), sim_gaussians_free(&gauss[k]);
        free(objs), free(gauss), free(rigids), free(ms);
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
    double center[3], extent = 0;
    for (int i = 0; i < 3; i++) center[i] = 0.5 * (lo[i] + hi[i]), extent = fmax(extent, hi[i] - lo[i]);
    double target[3], eye[3], upv[3] = {0, 1, 0};
    memcpy(target, sc->output.has_target ? sc->output.target : center, sizeof target);
    if (sc->output.has_eye) memcpy(eye, sc->output.eye, sizeof eye);
    else eye[0] = target[0] + 0.6 * extent, eye[1] = target[1] + 0.6 * extent, eye[2] = target[2] + 2.4 * extent;
    DsCamera cam = ds_camera_look_at(eye, target, upv, (int)sc->output.width, (int)sc->output.height, sc->output.fov);
    double e0 = sim_world_energy(&world);
    if (write_frame(sc, objs, rigids, gauss, outdir, 0, &cam, center, extent, err, errlen)) goto done;
    report->frames = 1;
    for (int64_t s = 1; s <= sc->steps; s++) {
        double c0 = base_cpu_now();
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
        if (s % sc->output.every == 0) {
            if (write_frame(sc, objs, rigids, gauss, outdir, s / sc->output.every, &cam, center, extent, err, errlen))
                goto done;
            report->frames++;
        }
        if (progress) progress(ctx, s, sc->steps, objs, sc->nobjects);
    }
    qsort(ms, (size_t)sc->steps, sizeof *ms, cmp_d);
    report->ms_median = ms[sc->steps / 2];
    report->ms_p90 = ms[sc->steps * 9 / 10];
    qsort(cpu, (size_t)sc->steps, sizeof *cpu, cmp_d);
    report->cpu_ms_median = cpu[sc->steps / 2];
    rc = 0;
done:
    sim_world_free(&world);
    for (int k = 0; k < sc->nobjects; k++) sim_object_free(&objs[k]), sim_gaussians_free(&gauss[k]);
    for (int k = 0; k < sc->nrigids; k++) sim_rigid_free(&rigids[k]);
    free(objs), free(gauss), free(rigids), free(ms);
    return rc;
}
