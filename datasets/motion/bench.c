/* datasets/motion/bench.c — the multi-view motion benchmark generator and its ground-truth file
 * (layout in bench.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/alloc.h"
#include "base/color.h"
#include "base/errbuf.h"
#include "base/h5file.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "datasets/motion/motion.h"
#include "datasets/motion/rig.h"
#include "datasets/motion/secondary.h"
#include "datasets/render/raster.h"

/* snprintf whose truncation is checked by the caller's buffer sizes (paths are bounded by the
 * options' out, which the command limits): through va_list, so no format-truncation warning */
static void textf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void textf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

void ds_motion_bench_defaults(DsMotionBenchOptions *o) {
    memset(o, 0, sizeof *o);
    o->category = "humanoid";
    /* the category's own gait, 48 frames. The repertoire (--motion repertoire --frames 300) is what
     * PartMM's database needs, but gs4d-small does not fit 300 frames in its 16000 steps (20.8 dB,
     * near the static set's ~20; docs/gaussianimate.md §3), so it is not the default until a gs4d
     * preset does (docs/partmm.md) */
    o->frames = 48, o->views = 24, o->size = 128, o->grid = 96, o->supersample = 2;
    o->holdout_every = 6, o->val_every = 4;
    o->fps = 30, o->fov_deg = 40;
    o->bvh_start = -1;
    o->orbit_deg = 360, o->orbit_start_deg = 0, o->orbit_elevation_deg = 20, o->orbit_bob_deg = 12;
    o->orbit_bob_cycles = 2;
}

/* ---- texture ------------------------------------------------------------------------------------ */


static double lattice(int64_t x, int64_t y, int64_t z, uint64_t seed) {
    uint64_t h = base_splitmix64(seed ^ base_splitmix64((uint64_t)x * 0x9e3779b1ull ^ base_splitmix64((uint64_t)y * 0x85ebca77ull ^ base_splitmix64((uint64_t)z))));
    return (double)(h >> 11) / 9007199254740992.0;
}

/* value noise in [0, 1]: smoothstep-weighted trilinear blend of hashed lattice values */
static double vnoise(const double p[3], uint64_t seed) {
    double fl[3], t[3];
    int64_t i[3];
    for (int k = 0; k < 3; k++) {
        fl[k] = floor(p[k]);
        i[k] = (int64_t)fl[k];
        double u = p[k] - fl[k];
        t[k] = u * u * (3 - 2 * u);
    }
    double acc = 0;
    for (int c = 0; c < 8; c++) {
        double w = 1;
        for (int k = 0; k < 3; k++) w *= (c >> k) & 1 ? t[k] : 1 - t[k];
        acc += w * lattice(i[0] + (c & 1), i[1] + ((c >> 1) & 1), i[2] + ((c >> 2) & 1), seed);
    }
    return acc;
}

static double fbm(const double p[3], uint64_t seed) {
    double acc = 0, amp = 0.5, norm = 0, q[3] = {p[0], p[1], p[2]};
    for (int o = 0; o < 4; o++) {
        acc += amp * vnoise(q, seed + (uint64_t)o * 1013);
        norm += amp;
        amp *= 0.5;
        for (int k = 0; k < 3; k++) q[k] *= 2.03;
    }
    return acc / norm;
}

void ds_motion_texture(const DsProceduralShape *shape, uint64_t seed, float *rgb) {
    int nb = shape->nbones;
    double(*base)[3] = base_malloc(sizeof(double) * 3 * (size_t)(nb + 1));
    double hue0 = (double)(base_splitmix64(seed * 7 + 1) >> 11) / 9007199254740992.0;
    for (int b = 0; b < nb; b++) {
        /* golden-ratio hue steps: neighbouring bones get clearly different colors */
        double r = (double)(base_splitmix64(seed * 131 + (uint64_t)b) >> 11) / 9007199254740992.0;
        base_hsv_rgb(hue0 + 0.618034 * b, 0.45 + 0.3 * r, 0.7 + 0.2 * r, base[b]);
    }
    double axis[3] = {0.6, 0.7, 0.39};
    uint64_t sd = base_splitmix64(seed ^ 0x51ed270b2705ull);
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < shape->mesh.nv; v++) {
        const float *x = shape->mesh.v + 3 * v;
        double c[3] = {0, 0, 0};
        for (int b = 0; b < nb; b++) {
            double w = shape->weights ? shape->weights[v * nb + b] : (b == 0);
            for (int k = 0; k < 3; k++) c[k] += w * base[b][k];
        }
        double p3[3] = {3.0 * x[0], 3.0 * x[1], 3.0 * x[2]}, p7[3] = {7.0 * x[0] + 11, 7.0 * x[1] - 5, 7.0 * x[2] + 3};
        double n1 = fbm(p3, sd), spots = vnoise(p7, sd + 99);
        spots = spots < 0.6 ? 0 : spots > 0.7 ? 1 : (spots - 0.6) / 0.1;
        double stripe = 0.5 + 0.5 * sin(2 * M_PI * 5 * (axis[0] * x[0] + axis[1] * x[1] + axis[2] * x[2]) + 5 * n1);
        for (int k = 0; k < 3; k++) {
            double a = c[k] * (0.8 + 1.0 * (n1 - 0.5));
            double dark = 0.3 * c[(k + 1) % 3] + 0.08;
            a = (1 - 0.85 * spots) * a + 0.85 * spots * dark;
            a *= 0.85 + 0.15 * stripe;
            rgb[3 * v + k] = (float)(a < 0.02 ? 0.02 : a > 0.98 ? 0.98 : a);
        }
    }
    free(base);
}

/* ---- HDF5 -------------------------------------------------------------------------------------- */

static int wr(hid_t loc, const char *name, bool is_int, int rank, const hsize_t *dims, const void *data) {
    int64_t n = 1;
    for (int k = 0; k < rank; k++) n *= (int64_t)dims[k];
    return base_h5_write_checked(loc, name, is_int ? H5T_STD_I32LE : H5T_IEEE_F32LE,
                                 is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT, rank, dims, data, (size_t)1 << 20,
                                 n > 4096);
}

static int attr_f64(hid_t loc, const char *name, double v) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = sp >= 0 ? H5Acreate2(loc, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

typedef struct {
    const DsProceduralShape *shape;
    const DsMotion *motion;
    const DsSecondarySpec *spec;
    const float *albedo, *soft_w, *verts, *disp, *u;
    const double *skin, *worldR, *heads;
    const DsCamera *cams;
    const int *heldout;
    int ncam;
    const DsMotionBenchOptions *o;
    const char *split;
    const DsCamera *orbit; /* monocular: the training camera of each frame; else NULL */
    double orbit_distance;
} GtData;

/* the cameras as world_to_camera (n,3,4) and intrinsics (n,4) datasets */
static int write_cams(hid_t f, const char *w2c_name, const char *k_name, const DsCamera *cams, int C) {
    float *w2c = base_malloc(sizeof(float) * 12 * (size_t)C), *K = base_malloc(sizeof(float) * 4 * (size_t)C);
    for (int c = 0; c < C; c++) {
        for (int r = 0; r < 3; r++) {
            for (int k = 0; k < 3; k++) w2c[12 * c + 4 * r + k] = (float)cams[c].R[3 * r + k];
            w2c[12 * c + 4 * r + 3] = (float)cams[c].t[r];
        }
        K[4 * c] = (float)cams[c].fx, K[4 * c + 1] = (float)cams[c].fy;
        K[4 * c + 2] = (float)cams[c].cx, K[4 * c + 3] = (float)cams[c].cy;
    }
    hsize_t dc[3] = {(hsize_t)C, 3, 4}, dk[2] = {(hsize_t)C, 4};
    int bad = wr(f, w2c_name, false, 3, dc, w2c) | wr(f, k_name, false, 2, dk, K);
    free(w2c), free(K);
    return bad;
}

static int write_gt(const char *path, const GtData *g, char *err, size_t errlen) {
    char tmp[4200];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    const DsProceduralShape *s = g->shape;
    const DsMotion *m = g->motion;
    int F = m->nframes, B = s->nbones, S = g->spec->n, C = g->ncam;
    hsize_t V = (hsize_t)s->mesh.nv;
    int bad = 0;
    bad |= base_h5_attr_str(f, "format", "anima-motion-1");
    bad |= base_h5_attr_str(f, "category", s->category) | base_h5_attr_i64(f, "seed", (int64_t)s->seed);
    bad |= base_h5_attr_str(f, "motion", m->name) | base_h5_attr_str(f, "source", m->source);
    bad |= base_h5_attr_str(f, "split", g->split) | attr_f64(f, "fps", m->fps);
    bad |= base_h5_attr_i64(f, "frames", F) | base_h5_attr_i64(f, "views", C);
    bad |= base_h5_attr_i64(f, "source_start_frame", m->src_start);
    bad |= base_h5_attr_str(f, "command", g->o->command ? g->o->command : "");
    bad |= base_h5_attr_str(f, "units", "the character's normalized frame: rest mesh in [-1,1]^3, y up");
    bad |= base_h5_attr_str(f, "conventions",
                            "bone_transforms map rest positions to posed ones (x' = sum_j w_j T_j x); rotations are "
                            "(w,x,y,z); every bone's rest frame is the world frame at its head; vertices = LBS + "
                            "secondary/displacement; cameras OpenCV world-to-camera");
    float *times = base_malloc(sizeof(float) * (size_t)F);
    for (int i = 0; i < F; i++) times[i] = F > 1 ? (float)i / (float)(F - 1) : 0.0f;
    hsize_t d1[1] = {(hsize_t)F};
    bad |= wr(f, "times", false, 1, d1, times);
    free(times);
    hsize_t dv[3] = {(hsize_t)F, V, 3};
    bad |= wr(f, "vertices", false, 3, dv, g->verts);
    hsize_t dr[2] = {V, 3}, dfc[2] = {(hsize_t)s->mesh.nf, 3};
    bad |= wr(f, "mesh/rest_vertices", false, 2, dr, s->mesh.v);
    bad |= wr(f, "mesh/faces", true, 2, dfc, s->mesh.f);
    bad |= wr(f, "mesh/colors", false, 2, dr, g->albedo);
    /* rig */
    float *hb = base_malloc(sizeof(float) * 6 * (size_t)(B + 1));
    int32_t *par = base_malloc(sizeof(int32_t) * (size_t)(B + 1));
    char *names = base_calloc((size_t)(B + 1), sizeof s->bones->name);
    for (int b = 0; b < B; b++) {
        memcpy(hb + 3 * b, s->bones[b].head, sizeof(float) * 3);
        memcpy(hb + 3 * (B + b), s->bones[b].tail, sizeof(float) * 3);
        par[b] = s->bones[b].parent;
        memcpy(names + b * sizeof s->bones->name, s->bones[b].name, sizeof s->bones->name);
    }
    hsize_t db[1] = {(hsize_t)B}, db3[2] = {(hsize_t)B, 3}, dw[2] = {V, (hsize_t)B};
    bad |= wr(f, "rig/parents", true, 1, db, par) | wr(f, "rig/heads", false, 2, db3, hb) |
           wr(f, "rig/tails", false, 2, db3, hb + 3 * B) | wr(f, "rig/weights", false, 2, dw, s->weights);
    hid_t sty = H5Tcopy(H5T_C_S1);
    H5Tset_size(sty, sizeof s->bones->name);
    H5Tset_strpad(sty, H5T_STR_NULLTERM);
    bad |= base_h5_write_checked(f, "rig/names", sty, sty, 1, db, names, (size_t)1 << 20, false);
    H5Tclose(sty);
    free(hb), free(par), free(names);
    size_t FB = (size_t)F * (size_t)B;
    float *T = base_malloc(sizeof(float) * 16 * FB), *Q = base_malloc(sizeof(float) * 4 * FB),
          *QW = base_malloc(sizeof(float) * 4 * FB), *J = base_malloc(sizeof(float) * 3 * FB),
          *rt = base_malloc(sizeof(float) * 3 * (size_t)F);
    for (size_t i = 0; i < FB; i++) {
        for (int k = 0; k < 16; k++) T[16 * i + k] = (float)g->skin[16 * i + k];
        for (int k = 0; k < 4; k++) Q[4 * i + k] = (float)m->local[4 * i + k];
        double q[4];
        ds_quat_from_mat3(g->worldR + 9 * i, q);
        for (int k = 0; k < 4; k++) QW[4 * i + k] = (float)q[k];
        for (int k = 0; k < 3; k++) J[3 * i + k] = (float)g->heads[3 * i + k];
    }
    for (int i = 0; i < 3 * F; i++) rt[i] = (float)m->root[i];
    hsize_t dT[4] = {(hsize_t)F, (hsize_t)B, 4, 4}, dQ[3] = {(hsize_t)F, (hsize_t)B, 4}, dJ[3] = {(hsize_t)F, (hsize_t)B, 3},
            dR[2] = {(hsize_t)F, 3};
    bad |= wr(f, "rig/bone_transforms", false, 4, dT, T) | wr(f, "rig/local_rotations", false, 3, dQ, Q) |
           wr(f, "rig/world_rotations", false, 3, dQ, QW) | wr(f, "rig/joint_positions", false, 3, dJ, J) |
           wr(f, "rig/root_translation", false, 2, dR, rt);
    free(T), free(Q), free(QW), free(J), free(rt);
    /* secondary */
    bad |= wr(f, "secondary/displacement", false, 3, dv, g->disp);
    if (S > 0) {
        float cen[3 * DS_SECONDARY_MAX], rad[DS_SECONDARY_MAX], fr[DS_SECONDARY_MAX], dmp[DS_SECONDARY_MAX];
        int32_t bo[DS_SECONDARY_MAX];
        char snames[DS_SECONDARY_MAX][24];
        for (int k = 0; k < S; k++) {
            const DsSoftRegion *r = &g->spec->r[k];
            memcpy(cen + 3 * k, r->center, sizeof(float) * 3);
            rad[k] = r->radius, fr[k] = (float)r->freq_hz, dmp[k] = (float)r->damping, bo[k] = r->bone;
            memcpy(snames[k], r->name, 24);
        }
        hsize_t ds[1] = {(hsize_t)S}, ds3[2] = {(hsize_t)S, 3}, dsw[2] = {V, (hsize_t)S},
                du[3] = {(hsize_t)F, (hsize_t)S, 3};
        bad |= wr(f, "secondary/weights", false, 2, dsw, g->soft_w) | wr(f, "secondary/centers", false, 2, ds3, cen) |
               wr(f, "secondary/radii", false, 1, ds, rad) | wr(f, "secondary/frequencies", false, 1, ds, fr) |
               wr(f, "secondary/damping", false, 1, ds, dmp) | wr(f, "secondary/bones", true, 1, ds, bo) |
               wr(f, "secondary/offsets", false, 3, du, g->u);
        hid_t st2 = H5Tcopy(H5T_C_S1);
        H5Tset_size(st2, 24);
        H5Tset_strpad(st2, H5T_STR_NULLTERM);
        bad |= base_h5_write_checked(f, "secondary/names", st2, st2, 1, ds, snames, (size_t)1 << 20, false);
        H5Tclose(st2);
    }
    /* cameras (monocular: the ring's training views have no images; the orbit's do) */
    hsize_t dh[1] = {(hsize_t)C};
    bad |= write_cams(f, "cameras/world_to_camera", "cameras/intrinsics", g->cams, C) |
           wr(f, "cameras/heldout", true, 1, dh, g->heldout);
    const DsMotionBenchOptions *o = g->o;
    bad |= base_h5_attr_i64(f, "monocular", g->orbit != NULL);
    if (g->orbit) {
        bad |= write_cams(f, "cameras/orbit_world_to_camera", "cameras/orbit_intrinsics", g->orbit, F);
        bad |= attr_f64(f, "orbit_deg", o->orbit_deg) | attr_f64(f, "orbit_start_deg", o->orbit_start_deg) |
               attr_f64(f, "orbit_elevation_deg", o->orbit_elevation_deg) | attr_f64(f, "orbit_bob_deg", o->orbit_bob_deg) |
               attr_f64(f, "orbit_bob_cycles", o->orbit_bob_cycles) | attr_f64(f, "orbit_distance", g->orbit_distance);
    }
    return base_h5_save_end(f, tmp, path, !bad, "ground truth", err, errlen);
}

/* ---- posing ------------------------------------------------------------------------------------- */

typedef struct {
    DsMotion m;
    double *skin, *worldR, *heads; /* F × B × 16, × 9, × 3 */
    float *verts, *disp, *u;       /* F × V × 3, F × V × 3, F × S × 3 */
} Posed;

static void posed_free(Posed *p) {
    ds_motion_free(&p->m);
    free(p->skin), free(p->worldR), free(p->heads), free(p->verts), free(p->disp), free(p->u);
    memset(p, 0, sizeof *p);
}

static void pose_all(Posed *p, const DsProceduralShape *s, const DsSecondarySpec *spec, const float *soft_w) {
    int F = p->m.nframes, B = s->nbones;
    int64_t V = s->mesh.nv;
    p->skin = base_malloc(sizeof(double) * 16 * (size_t)F * (size_t)B);
    p->worldR = base_malloc(sizeof(double) * 9 * (size_t)F * (size_t)B);
    p->heads = base_malloc(sizeof(double) * 3 * (size_t)F * (size_t)B);
    p->verts = base_malloc(sizeof(float) * 3 * (size_t)F * (size_t)V);
    p->disp = base_malloc(sizeof(float) * 3 * (size_t)F * (size_t)V);
    p->u = base_calloc((size_t)F * (size_t)(spec->n + 1) * 3, sizeof(float));
    for (int f = 0; f < F; f++)
        ds_rig_fk(B, s->bones, p->m.local + 4 * (size_t)f * B, p->m.root + 3 * f, p->worldR + 9 * (size_t)f * B,
                  p->heads + 3 * (size_t)f * B, p->skin + 16 * (size_t)f * B);
    ds_secondary_simulate(spec, F, p->m.fps, B, p->skin, V, soft_w, p->disp, p->u);
#pragma omp parallel for schedule(static)
    for (int f = 0; f < F; f++) {
        float *x = p->verts + 3 * (size_t)f * V;
        ds_rig_lbs(V, s->mesh.v, B, s->weights, p->skin + 16 * (size_t)f * B, x);
        const float *d = p->disp + 3 * (size_t)f * V;
        for (int64_t i = 0; i < 3 * V; i++) x[i] += d[i];
    }
}

/* ---- the benchmark ------------------------------------------------------------------------------ */

static int mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    struct stat st;
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

static int remove_jsons(const char *dir, char *err, size_t errlen) {
    static const char *sp[3] = {"train", "val", "test"};
    for (int k = 0; k < 3; k++) {
        char p[4200];
        textf(p, sizeof p, "%s/transforms_%s.json", dir, sp[k]);
        if (unlink(p) != 0 && errno != ENOENT) return base_errf(err, errlen, "%s: cannot remove (%s)", p, strerror(errno));
    }
    return 0;
}

typedef struct {
    const DsMotionBenchOptions *o;
    const DsProceduralShape *s;
    const float *albedo;
    const DsCamera *cams;
    const int *heldout;
    const DsCamera *orbit; /* monocular: frame f's training camera (else NULL) */
    int64_t done, total;
    double coverage_sum;
} RenderJob;

/* the images of one frame: every view (multi-view), or the held-out views and the orbit's
 * (monocular, whose ring training views have no images) */
static int64_t shots_per_frame(const DsMotionBenchOptions *o, const int *heldout) {
    if (!o->monocular) return o->views;
    int64_t n = 1;
    for (int v = 0; v < o->views; v++) n += heldout[v] != 0;
    return n;
}

/* renders every (frame, view) of one posed motion into dir/{train,test}/ (monocular: the
 * held-out views into test/, frame f's orbit camera into train/f%04d_orbit.png) */
static int render_motion(RenderJob *job, const Posed *p, const char *dir, char *err, size_t errlen) {
    const DsMotionBenchOptions *o = job->o;
    int F = p->m.nframes;
    /* shot k of a frame: ring view vw[k], or the orbit (-1) */
    int vw[100], Vw = 0;
    for (int v = 0; v < o->views; v++)
        if (!o->monocular || job->heldout[v]) vw[Vw++] = v;
    if (o->monocular) vw[Vw++] = -1;
    char sub[2][4200];
    textf(sub[0], sizeof sub[0], "%s/train", dir);
    textf(sub[1], sizeof sub[1], "%s/test", dir);
    for (int k = 0; k < 2; k++)
        if (mkdir_p(sub[k])) return base_errf(err, errlen, "%s: cannot create the folder (%s)", sub[k], strerror(errno));
    DsRasterOptions ro = ds_raster_options_default();
    ro.background[0] = ro.background[1] = ro.background[2] = 0;
    ro.supersample = o->supersample;
    ro.unlit = !o->lit;
    ro.light = DS_LIGHT_DIRECTIONAL;
    ro.light_dir[0] = 0.35, ro.light_dir[1] = 0.9, ro.light_dir[2] = 0.25;
    ro.ambient = 0.45f, ro.diffuse = 0.55f;
    volatile int failed = 0;
    char msg[1024] = "";
    const DsProceduralShape *s = job->s;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t idx = 0; idx < (int64_t)F * Vw; idx++) {
        if (failed || (o->cancel && *o->cancel)) continue;
        int f = (int)(idx / Vw), v = vw[idx % Vw];
        DsMesh mesh = {.nv = s->mesh.nv, .nf = s->mesh.nf, .v = p->verts + 3 * (size_t)f * s->mesh.nv,
                       .color = (float *)job->albedo, .f = s->mesh.f};
        DsRender r;
        char e[1024], path[4400];
        int rc = ds_raster_render(&mesh, v < 0 ? &job->orbit[f] : &job->cams[v], &ro, &r, e, sizeof e);
        double cov = 0;
        if (!rc) {
            for (int64_t i = 0; i < (int64_t)r.w * r.h; i++) cov += r.alpha[i] > 0;
            cov /= (double)r.w * r.h;
            if (v < 0) textf(path, sizeof path, "%s/f%04d_orbit.png", sub[0], f);
            else textf(path, sizeof path, "%s/f%04d_v%02d.png", sub[job->heldout[v]], f, v);
            rc = ds_render_write_png(path, &r, true, e, sizeof e);
            ds_render_free(&r);
        }
#pragma omp critical(ds_motion_bench)
        {
            if (rc && !failed) {
                failed = 1;
                snprintf(msg, sizeof msg, "%s", e);
            }
            if (!rc) {
                job->done++;
                job->coverage_sum += cov;
                if (o->progress) o->progress(o->progress_ctx, job->done, job->total);
            }
        }
    }
    if (failed) return base_errf(err, errlen, "%s", msg);
    if (o->cancel && *o->cancel) return base_errf(err, errlen, "%s: interrupted", dir);
    return 0;
}

static int write_jsons(const DsMotionBenchOptions *o, const Posed *p, const char *dir, const DsCamera *cams,
                       const int *heldout, const DsCamera *orbit, double orbit_distance, const char *split, char *err,
                       size_t errlen) {
    int F = p->m.nframes, Vw = o->views;
    DsDnerfFrameOut *fr = base_malloc(sizeof *fr * (size_t)F * (size_t)Vw);
    char(*names)[48] = base_malloc(sizeof *names * (size_t)F * (size_t)Vw);
    /* the motion name may be a user's path: keep the JSON valid whatever it holds */
    char mname[64];
    textf(mname, sizeof mname, "%s", p->m.name);
    for (char *c = mname; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = '_';
    char extra[1024];
    textf(extra, sizeof extra,
             "\"anima_format\": \"anima-motion-1\", \"category\": \"%s\", \"seed\": %llu, \"motion\": \"%s\", "
             "\"split_motion\": \"%s\", \"fps\": %.9g, \"num_frames\": %d",
             o->category, (unsigned long long)o->seed, mname, split, p->m.fps, F);
    if (orbit) {
        size_t len = strlen(extra);
        textf(extra + len, sizeof extra - len,
              ", \"monocular\": true, \"orbit_deg\": %.9g, \"orbit_start_deg\": %.9g, \"orbit_elevation_deg\": %.9g, "
              "\"orbit_bob_deg\": %.9g, \"orbit_bob_cycles\": %.9g, \"orbit_distance\": %.9g",
              o->orbit_deg, o->orbit_start_deg, o->orbit_elevation_deg, o->orbit_bob_deg, o->orbit_bob_cycles,
              orbit_distance);
    }
    static const char *which[3] = {"train", "val", "test"};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++) {
        int n = 0;
        for (int f = 0; f < F; f++) {
            if (k == 1 && f % o->val_every != 0) continue;
            if (k == 0 && orbit) { /* monocular: frame f's one training image */
                snprintf(names[n], sizeof names[n], "./train/f%04d_orbit", f);
                fr[n] = (DsDnerfFrameOut){orbit[f], F > 1 ? (float)f / (float)(F - 1) : 0.0f, names[n], -1, f};
                n++;
                continue;
            }
            for (int v = 0; v < Vw; v++) {
                if ((k == 0) == (heldout[v] != 0)) continue;
                snprintf(names[n], sizeof names[n], "./%s/f%04d_v%02d", heldout[v] ? "test" : "train", f, v);
                fr[n] = (DsDnerfFrameOut){cams[v], F > 1 ? (float)f / (float)(F - 1) : 0.0f, names[n], v, f};
                n++;
            }
        }
        char path[4200];
        textf(path, sizeof path, "%s/transforms_%s.json", dir, which[k]);
        rc = ds_dnerf_write_json(path, fr, n, extra, err, errlen);
    }
    free(fr), free(names);
    return rc;
}

/* the distance from center along the axis of c (a camera at unit distance looking at center)
 * at which every vertex of every frame of the nm motions projects inside the image with
 * |x_c| ≤ tanh_ (d − z_c) (below) */
static double fit_distance(const DsCamera *c, const double center[3], const Posed *P, int nm, const int *nframes,
                           int64_t V, double tanh_) {
    const double *Rc = c->R;
    double dist = 0;
    for (int k = 0; k < nm; k++)
        for (int64_t i2 = 0; i2 < (int64_t)nframes[k] * V; i2++) {
            double q[3], c3[3];
            for (int a = 0; a < 3; a++) q[a] = P[k].verts[3 * i2 + a] - center[a];
            for (int r = 0; r < 3; r++) c3[r] = Rc[3 * r] * q[0] + Rc[3 * r + 1] * q[1] + Rc[3 * r + 2] * q[2];
            /* OpenCV: z_c forward, so the offset towards the camera is −c3[2] */
            dist = fmax(dist, -c3[2] + fmax(fabs(c3[0]), fabs(c3[1])) / tanh_);
        }
    return dist;
}

/* the monocular orbit's unit direction from the center at frame f of F */
static void orbit_dir(const DsMotionBenchOptions *o, int f, int F, double d[3]) {
    double u = (double)f / (double)F;
    double az = (o->orbit_start_deg + o->orbit_deg * u) * M_PI / 180;
    double el = (o->orbit_elevation_deg + o->orbit_bob_deg * sin(2 * M_PI * o->orbit_bob_cycles * u)) * M_PI / 180;
    d[0] = cos(el) * cos(az), d[1] = sin(el), d[2] = cos(el) * sin(az);
}

int ds_motion_bench_make(const DsMotionBenchOptions *o, DsMotionBenchStats *st, char *err, size_t errlen) {
    DsMotionBenchStats dummy;
    if (!st) st = &dummy;
    memset(st, 0, sizeof *st);
    if (o->frames < 1 || o->views < 2 || o->size < 8 || o->holdout_every < 2 || o->val_every < 1 ||
        !(o->fps > 0) || !(o->fov_deg > 5 && o->fov_deg < 150) || o->supersample < 1 || o->supersample > 8)
        return base_errf(err, errlen, "motion benchmark: bad options (frames %d, views %d, size %d, holdout every %d)",
                         o->frames, o->views, o->size, o->holdout_every);
    if (o->views > 99) return base_errf(err, errlen, "motion benchmark: %d views (at most 99)", o->views);
    /* the orbit stays off the poles (up = y would be degenerate there) */
    if (o->monocular &&
        (!(o->orbit_deg > 0 && o->orbit_deg <= 3600) || !(fabs(o->orbit_start_deg) <= 3600) ||
         !(fabs(o->orbit_elevation_deg) + fabs(o->orbit_bob_deg) <= 80) || !(o->orbit_bob_cycles >= 0 && o->orbit_bob_cycles <= 1000)))
        return base_errf(err, errlen,
                         "motion benchmark: bad orbit (sweep %g deg in (0, 3600], start %g, elevation %g +- %g deg "
                         "within +-80, %g periods in [0, 1000])",
                         o->orbit_deg, o->orbit_start_deg, o->orbit_elevation_deg, o->orbit_bob_deg, o->orbit_bob_cycles);
    if (o->frames > 9999) return base_errf(err, errlen, "motion benchmark: %d frames (at most 9999)", o->frames);
    if (o->heldout_frames < 0 || o->heldout_frames > 9999)
        return base_errf(err, errlen, "motion benchmark: %d held-out frames (0: min(frames, %d), at most 9999)",
                         o->heldout_frames, DS_MOTION_HELDOUT_FRAMES);
    const int nframes[2] = {o->frames, o->heldout_frames                          ? o->heldout_frames
                                       : o->frames < DS_MOTION_HELDOUT_FRAMES ? o->frames
                                                                              : DS_MOTION_HELDOUT_FRAMES};
    /* every path below is built in 4 kB buffers: refuse what would not fit rather than write
     * somewhere else */
    if (!o->out || !o->out[0] || strlen(o->out) > 3000)
        return base_errf(err, errlen, "motion benchmark: output folder name empty or longer than 3000 bytes");
    DsProceduralShape shape;
    if (ds_procedural_make(o->category, o->seed, o->grid, &shape, err, errlen)) return -1;
    if (shape.nbones > DS_RIG_MAX_BONES) {
        ds_procedural_free(&shape);
        return base_errf(err, errlen, "motion benchmark: %s has %d bones", o->category, shape.nbones);
    }
    int64_t V = shape.mesh.nv;
    float *albedo = base_malloc(sizeof(float) * 3 * (size_t)V);
    ds_motion_texture(&shape, o->seed, albedo);
    DsSecondarySpec spec;
    ds_secondary_spec(&shape, o->seed, &spec);
    float *soft_w = base_calloc((size_t)V * (size_t)(spec.n + 1), sizeof(float));
    ds_secondary_weights(&spec, V, shape.mesh.v, soft_w);

    const char *names[2] = {o->motion ? o->motion : ds_motion_default(o->category, false),
                            o->heldout_motion ? o->heldout_motion : ds_motion_default(o->category, true)};
    int nm = strcmp(names[1], "none") ? 2 : 1;
    /* a training motion chosen equal to the category's held-out default: the held-out motion
     * becomes the training default (or a generic one), so it stays a different clip */
    if (nm == 2 && !o->heldout_motion && !strcmp(names[0], names[1])) {
        const char *alt[3] = {ds_motion_default(o->category, false), "wiggle", "sway"};
        for (int k = 0; k < 3; k++)
            if (strcmp(alt[k], names[0])) {
                names[1] = alt[k];
                break;
            }
    }
    Posed P[2];
    memset(P, 0, sizeof P);
    DsMotionOptions mo = {o->fps, o->bvh_dir, o->bvh_start, o->bvh_map};
    int rc = -1;
    DsCamera *cams = NULL, *orbit = NULL;
    int *heldout = NULL;
    for (int k = 0; k < nm; k++) {
        /* the held-out motion draws its own variation: seed + 1 */
        /* the mapping is for the BVH motions; a procedural one (the other of the two) has none */
        mo.map = ds_motion_is_bvh(names[k]) ? o->bvh_map : NULL;
        if (ds_motion_make(&shape, names[k], nframes[k], o->seed + (uint64_t)k, &mo, &P[k].m, err, errlen)) goto out;
        pose_all(&P[k], &shape, &spec, soft_w);
    }
    /* cameras: a bounding sphere of every frame of both motions */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int k = 0; k < nm; k++)
        for (int64_t i = 0; i < (int64_t)nframes[k] * V; i++)
            for (int c = 0; c < 3; c++) {
                double x = P[k].verts[3 * i + c];
                if (!isfinite(x)) {
                    base_errf(err, errlen, "motion %s: a non-finite vertex at frame %lld", P[k].m.name, (long long)(i / V));
                    goto out;
                }
                lo[c] = fmin(lo[c], x), hi[c] = fmax(hi[c], x);
            }
    double center[3], R = 0;
    for (int c = 0; c < 3; c++) center[c] = 0.5 * (lo[c] + hi[c]);
    for (int k = 0; k < nm; k++)
        for (int64_t i = 0; i < (int64_t)nframes[k] * V; i++) {
            double d = 0;
            for (int c = 0; c < 3; c++) d += pow(P[k].verts[3 * i + c] - center[c], 2);
            R = fmax(R, sqrt(d));
        }
    st->extent = R;
    /* the camera directions first (at unit distance), then one distance for all: the smallest
     * at which every vertex of every frame of both motions projects inside the image with a 6%
     * margin, |x_c| ≤ 0.94 tan(fov/2) (d − z_c) for the point's offsets (x_c, y_c, z_c) from
     * the center in camera axes (z_c towards the camera): tighter than a bounding sphere for
     * tall, thin characters */
    cams = base_malloc(sizeof *cams * (size_t)o->views);
    heldout = base_malloc(sizeof(int) * (size_t)o->views);
    int nup = o->views / 3, nlow = o->views - nup;
    static const double up[3] = {0, 1, 0};
    double dir[99][3], dist = 0, tanh_ = 0.94 * tan(0.5 * o->fov_deg * M_PI / 180);
    for (int v = 0; v < o->views; v++) {
        bool upper = v >= nlow;
        int i = upper ? v - nlow : v, n = upper ? nup : nlow;
        double el = (upper ? 40.0 : 8.0) * M_PI / 180, az = 2 * M_PI * (i + (upper ? 0.5 : 0.0)) / n;
        dir[v][0] = cos(el) * cos(az), dir[v][1] = sin(el), dir[v][2] = cos(el) * sin(az);
        double eye[3] = {center[0] + dir[v][0], center[1] + dir[v][1], center[2] + dir[v][2]};
        cams[v] = ds_camera_look_at(eye, center, up, o->size, o->size, o->fov_deg);
        dist = fmax(dist, fit_distance(&cams[v], center, P, nm, nframes, V, tanh_));
        heldout[v] = v % o->holdout_every == o->holdout_every - 1;
        if (heldout[v]) st->heldout_views++;
        else st->train_views++;
    }
    if (st->heldout_views == 0) {
        /* fewer views than holdout_every: the last one is held out, so val and test exist */
        heldout[o->views - 1] = 1;
        st->heldout_views = 1, st->train_views--;
    }
    dist = fmax(dist, 1.5 * R); /* never inside the character */
    for (int v = 0; v < o->views; v++) {
        double eye[3] = {center[0] + dist * dir[v][0], center[1] + dist * dir[v][1], center[2] + dist * dir[v][2]};
        cams[v] = ds_camera_look_at(eye, center, up, o->size, o->size, o->fov_deg);
    }
    st->distance = dist;
    /* monocular: one orbit over the training clip, the same one (by frame fraction) over the
     * held-out clip; the ring's distance unless a direction of the orbit needs more. Computed
     * after the ring, so the held-out views are the multi-view set's */
    double odist = 0;
    int ofr = nframes[0] > (nm > 1 ? nframes[1] : 0) ? nframes[0] : nframes[1];
    if (o->monocular) {
        for (int k = 0; k < nm; k++)
            for (int f = 0; f < nframes[k]; f++) {
                double d[3];
                orbit_dir(o, f, nframes[k], d);
                double eye[3] = {center[0] + d[0], center[1] + d[1], center[2] + d[2]};
                DsCamera c = ds_camera_look_at(eye, center, up, o->size, o->size, o->fov_deg);
                odist = fmax(odist, fit_distance(&c, center, P, nm, nframes, V, tanh_));
            }
        odist = fmax(odist, dist);
        st->orbit_distance = odist, st->train_views = 1;
        orbit = base_malloc(sizeof *orbit * (size_t)ofr); /* each motion's in turn */
    }
    /* render, then the ground truth, then the JSONs */
    int64_t per = shots_per_frame(o, heldout);
    RenderJob job = {o, &shape, albedo, cams, heldout, NULL, 0, (int64_t)(nframes[0] + (nm > 1 ? nframes[1] : 0)) * per, 0};
    for (int k = 0; k < nm; k++) {
        char dir[4200];
        textf(dir, sizeof dir, k ? "%s/heldout" : "%s", o->out);
        if (mkdir_p(dir)) {
            base_errf(err, errlen, "%s: cannot create the folder (%s)", dir, strerror(errno));
            goto out;
        }
        if (orbit)
            for (int f = 0; f < nframes[k]; f++) {
                double d[3];
                orbit_dir(o, f, nframes[k], d);
                double eye[3] = {center[0] + odist * d[0], center[1] + odist * d[1], center[2] + odist * d[2]};
                orbit[f] = ds_camera_look_at(eye, center, up, o->size, o->size, o->fov_deg);
            }
        job.orbit = orbit;
        if (remove_jsons(dir, err, errlen) || render_motion(&job, &P[k], dir, err, errlen)) goto out;
        char gt[4300];
        textf(gt, sizeof gt, "%s/gt.h5", dir);
        GtData g = {&shape, &P[k].m, &spec, albedo, soft_w, P[k].verts, P[k].disp, P[k].u, P[k].skin, P[k].worldR,
                    P[k].heads, cams, heldout, o->views, o, k ? "heldout" : "train", orbit, odist};
        if (write_gt(gt, &g, err, errlen)) goto out;
        if (write_jsons(o, &P[k], dir, cams, heldout, orbit, odist, k ? "heldout" : "train", err, errlen)) goto out;
        double mx = 0;
        for (int64_t i = 0; i < (int64_t)nframes[k] * V; i++) {
            const float *d = P[k].disp + 3 * i;
            mx = fmax(mx, sqrt((double)d[0] * d[0] + (double)d[1] * d[1] + (double)d[2] * d[2]));
        }
        st->max_secondary[k] = mx, st->frames[k] = nframes[k];
        textf(st->motion[k], sizeof st->motion[k], "%s", P[k].m.name);
    }
    st->nv = V, st->nf = shape.mesh.nf, st->nbones = shape.nbones, st->nsoft = spec.n, st->motions = nm;
    st->images = job.done;
    st->coverage = job.done ? job.coverage_sum / (double)job.done : 0;
    rc = 0;
out:
    for (int k = 0; k < 2; k++) posed_free(&P[k]);
    free(cams), free(orbit), free(heldout), free(albedo), free(soft_w);
    ds_procedural_free(&shape);
    return rc;
}

/* ---- the ground-truth reader -------------------------------------------------------------------- */

void ds_motion_gt_free(DsMotionGt *g) {
    if (!g) return;
    free(g->times), free(g->vertices), free(g->secondary), free(g->rest), free(g->colors), free(g->faces);
    free(g->weights), free(g->parents), free(g->bone_transforms), free(g->local_rotations), free(g->joint_positions);
    memset(g, 0, sizeof *g);
}

int ds_motion_gt_load(const char *path, DsMotionGt *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    base_h5_quiet();
    hid_t f = base_h5_open_read(path, "anima motion ground truth", err, errlen);
    if (f < 0) return -1;
    int rc = -1;
    char *fmt = base_h5_attr_read_str(f, "format", 64);
    if (!fmt || strcmp(fmt, "anima-motion-1")) {
        base_errf(err, errlen, "%s: format '%s', expected anima-motion-1", path, fmt ? fmt : "(none)");
        free(fmt);
        goto done;
    }
    free(fmt);
    char *s;
    if ((s = base_h5_attr_read_str(f, "category", 64))) snprintf(g->category, sizeof g->category, "%s", s), free(s);
    if ((s = base_h5_attr_read_str(f, "motion", 1024))) snprintf(g->motion, sizeof g->motion, "%s", s), free(s);
    if ((s = base_h5_attr_read_str(f, "split", 64))) snprintf(g->split, sizeof g->split, "%s", s), free(s);
    if (H5Aexists(f, "fps") > 0) {
        hid_t a = H5Aopen(f, "fps", H5P_DEFAULT);
        if (a >= 0) {
            if (H5Aread(a, H5T_NATIVE_DOUBLE, &g->fps) < 0) g->fps = 0;
            H5Aclose(a);
        }
    }
    int64_t dF[1] = {-1}, dV3[3] = {-1, -1, 3}, dr[2] = {-1, 3}, dfc[2] = {-1, 3};
    void *p;
    if (base_h5_read_array(f, path, "times", 1, dF, false, &p, err, errlen)) goto done;
    g->times = p, g->nframes = (int)dF[0];
    dV3[0] = dF[0];
    if (base_h5_read_array(f, path, "vertices", 3, dV3, false, &p, err, errlen)) goto done;
    g->vertices = p, g->nv = dV3[1];
    if (base_h5_read_array(f, path, "secondary/displacement", 3, dV3, false, &p, err, errlen)) goto done;
    g->secondary = p;
    dr[0] = g->nv;
    if (base_h5_read_array(f, path, "mesh/rest_vertices", 2, dr, false, &p, err, errlen)) goto done;
    g->rest = p;
    if (base_h5_read_array(f, path, "mesh/colors", 2, dr, false, &p, err, errlen)) goto done;
    g->colors = p;
    if (base_h5_read_array(f, path, "mesh/faces", 2, dfc, true, &p, err, errlen)) goto done;
    g->faces = p, g->nf = dfc[0];
    for (int64_t i = 0; i < 3 * g->nf; i++)
        if (g->faces[i] < 0 || g->faces[i] >= g->nv) {
            base_errf(err, errlen, "%s: mesh/faces: face %lld refers to vertex %d of %lld", path, (long long)(i / 3),
                      g->faces[i], (long long)g->nv);
            goto done;
        }
    int64_t dB[1] = {-1};
    if (base_h5_read_array(f, path, "rig/parents", 1, dB, true, &p, err, errlen)) goto done;
    g->parents = p, g->nbones = (int)dB[0];
    for (int b = 0; b < g->nbones; b++)
        if (g->parents[b] < -1 || g->parents[b] >= b) {
            base_errf(err, errlen, "%s: rig/parents: bone %d has parent %d (parents come first)", path, b, g->parents[b]);
            goto done;
        }
    int64_t dw[2] = {g->nv, g->nbones}, dT[4] = {g->nframes, g->nbones, 4, 4}, dQ[3] = {g->nframes, g->nbones, 4},
            dJ[3] = {g->nframes, g->nbones, 3};
    if (base_h5_read_array(f, path, "rig/weights", 2, dw, false, &p, err, errlen)) goto done;
    g->weights = p;
    if (base_h5_read_array(f, path, "rig/bone_transforms", 4, dT, false, &p, err, errlen)) goto done;
    g->bone_transforms = p;
    if (base_h5_read_array(f, path, "rig/local_rotations", 3, dQ, false, &p, err, errlen)) goto done;
    g->local_rotations = p;
    if (base_h5_read_array(f, path, "rig/joint_positions", 3, dJ, false, &p, err, errlen)) goto done;
    g->joint_positions = p;
    rc = 0;
done:
    H5Fclose(f);
    if (rc) ds_motion_gt_free(g);
    return rc;
}

int ds_motion_gt_bvh(const char *gt_path, const DsMotionGt *gt, const char *bvh, const char *map, int frames, float **out,
                     char *err, size_t errlen) {
    *out = NULL;
    int64_t seed = 0, grid = 96;
    hid_t f = base_h5_open_read(gt_path, "the motion benchmark's gt.h5", err, errlen);
    if (f < 0) return -1;
    if (H5Aexists(f, "seed") > 0) {
        hid_t a = H5Aopen(f, "seed", H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_INT64, &seed) < 0) seed = -1;
        if (a >= 0) H5Aclose(a);
    }
    char *cmd = base_h5_attr_read_str(f, "command", 8192);
    H5Fclose(f);
    const char *g = cmd ? strstr(cmd, "--grid ") : NULL;
    if (g) grid = atoll(g + 7);
    free(cmd);
    if (seed < 0 || grid < 16) return base_errf(err, errlen, "%s: cannot read the benchmark's seed and grid", gt_path);
    DsProceduralShape shape;
    if (ds_procedural_make(gt->category, (uint64_t)seed, (int)grid, &shape, err, errlen)) return -1;
    int rc = 0;
    DsMotion m = {0};
    if (shape.mesh.nv != gt->nv || shape.nbones != gt->nbones) {
        rc = base_errf(err, errlen, "%s: the %s of seed %lld at grid %lld has %lld vertices and %d bones, the benchmark %lld and %d",
                       gt_path, gt->category, (long long)seed, (long long)grid, (long long)shape.mesh.nv, shape.nbones,
                       (long long)gt->nv, gt->nbones);
        goto done;
    }
    DsMotionOptions mo = {gt->fps, NULL, -1, map};
    if (ds_motion_make(&shape, bvh, frames, (uint64_t)seed, &mo, &m, err, errlen)) {
        rc = -1;
        goto done;
    }
    float *v = malloc(sizeof(float) * frames * gt->nv * 3);
    double *skin = malloc(sizeof(double) * 16 * shape.nbones);
    if (!v || !skin) {
        free(v), free(skin);
        rc = base_errf(err, errlen, "out of memory");
        goto done;
    }
    for (int t = 0; t < frames; t++) {
        ds_rig_fk(shape.nbones, shape.bones, m.local + (int64_t)t * shape.nbones * 4, m.root + t * 3, NULL, NULL, skin);
        ds_rig_lbs(gt->nv, gt->rest, shape.nbones, gt->weights, skin, v + (int64_t)t * gt->nv * 3);
    }
    free(skin);
    *out = v;
done:
    ds_motion_free(&m);
    ds_procedural_free(&shape);
    return rc;
}
