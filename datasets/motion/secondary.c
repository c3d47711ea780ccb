/* datasets/motion/secondary.c — damped springs on soft regions driven by the rig's acceleration
 * (the field is written out in secondary.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/alloc.h"
#include "datasets/motion/secondary.h"

typedef struct {
    const char *category, *name, *bone;
    float along;     /* position along the bone, 0 head .. 1 tail */
    float dir[3];    /* direction to the surface from there (0: stay on the bone) */
    float radius;
} RegionDef;

static const RegionDef DEFS[] = {
    {"humanoid", "belly", "spine", 0.25f, {0, -0.2f, 1}, 0.2f},
    {"humanoid", "seat", "hips", 0.1f, {0, -0.3f, -1}, 0.18f},
    {"quadruped", "belly", "spine", 0.5f, {0, -1, 0}, 0.25f},
    {"quadruped", "tail_tip", "tail", 1.0f, {0, 0, 0}, 0.2f},
    {"bird", "tail", "tail", 1.0f, {0, 0, 0}, 0.16f},
    {"bird", "crop", "body", 0.75f, {0.5f, -1, 0}, 0.16f},
    {"snake", "jaw", "head", 0.3f, {0, -1, 0}, 0.13f},
    {"snake", "tail_tip", "body7", 1.0f, {0, 0, 0}, 0.2f},
    {"lamp", "shade_rim", "shade", 1.0f, {0, 0, 0}, 0.22f},
};


/* from p along d (unit) to where the SDF turns positive, then back by 35% of the region radius:
 * the region's center sits just under the surface it moves */
static void to_surface(const DsProceduralShape *s, const float p[3], const float d0[3], float radius, float out[3]) {
    float n = sqrtf(d0[0] * d0[0] + d0[1] * d0[1] + d0[2] * d0[2]);
    memcpy(out, p, sizeof(float) * 3);
    if (!(n > 0) || !s->scene.prims) return;
    float d[3] = {d0[0] / n, d0[1] / n, d0[2] / n}, t = 0;
    for (int i = 0; i < 200 && t < 1.0f; i++) {
        float q[3] = {p[0] + t * d[0], p[1] + t * d[1], p[2] + t * d[2]};
        if (ds_sdf_scene_eval(&s->scene, q) > 0) break;
        t += 0.005f;
    }
    t = fmaxf(0, t - 0.35f * radius);
    for (int k = 0; k < 3; k++) out[k] = p[k] + t * d[k];
}

static void add(DsSecondarySpec *out, const DsProceduralShape *s, uint64_t seed, const char *name, int bone,
                float along, const float dir[3], float radius) {
    if (out->n >= DS_SECONDARY_MAX || bone < 0) return;
    DsSoftRegion *r = &out->r[out->n];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->bone = bone;
    float p[3];
    for (int k = 0; k < 3; k++) p[k] = s->bones[bone].head[k] + along * (s->bones[bone].tail[k] - s->bones[bone].head[k]);
    to_surface(s, p, dir, radius, r->center);
    r->radius = radius;
    r->freq_hz = 2.5 + (double)(base_splitmix64(seed * 31 + (uint64_t)out->n + 7) >> 11) / 9007199254740992.0;
    r->damping = 0.12;
    r->max_disp = 0.4 * radius;
    out->n++;
}

static int find_bone(const DsProceduralShape *s, const char *name) {
    for (int i = 0; i < s->nbones; i++)
        if (!strcmp(s->bones[i].name, name)) return i;
    return -1;
}

void ds_secondary_spec(const DsProceduralShape *shape, uint64_t seed, DsSecondarySpec *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof DEFS / sizeof DEFS[0]; i++)
        if (!strcmp(DEFS[i].category, shape->category))
            add(out, shape, seed, DEFS[i].name, find_bone(shape, DEFS[i].bone), DEFS[i].along, DEFS[i].dir,
                DEFS[i].radius);
    if (out->n || shape->nbones < 1) return;
    /* other categories: the root bone's middle, towards the bottom, and the tip of the last
     * bone (a leaf: procedural.c adds parents first) */
    static const float down[3] = {0, -1, 0}, none[3] = {0, 0, 0};
    int root = 0;
    for (int b = 0; b < shape->nbones; b++)
        if (shape->bones[b].parent < 0) {
            root = b;
            break;
        }
    add(out, shape, seed, "base", root, 0.5f, down, 0.2f);
    if (shape->nbones > 1) add(out, shape, seed, "tip", shape->nbones - 1, 1.0f, none, 0.18f);
}

void ds_secondary_weights(const DsSecondarySpec *spec, int64_t nv, const float *rest, float *w) {
    for (int64_t v = 0; v < nv; v++)
        for (int k = 0; k < spec->n; k++) {
            const DsSoftRegion *r = &spec->r[k];
            float d2 = 0;
            for (int c = 0; c < 3; c++) d2 += (rest[3 * v + c] - r->center[c]) * (rest[3 * v + c] - r->center[c]);
            float x = 1 - d2 / (r->radius * r->radius);
            w[v * spec->n + k] = x > 0 ? x * x : 0;
        }
}

void ds_secondary_simulate(const DsSecondarySpec *spec, int nframes, double fps, int nbones, const double *skin,
                           int64_t nv, const float *w, float *disp, float *u_out) {
    int S = spec->n;
    double *anchor = base_malloc(sizeof(double) * 3 * (size_t)(nframes + 1)),
           *acc = base_malloc(sizeof(double) * 3 * (size_t)(nframes + 1));
    float *uh = base_calloc((size_t)nframes * (size_t)(S + 1) * 3, sizeof(float));
    double dt = 1.0 / fps;
    enum { SUB = 16 };
    for (int k = 0; k < S; k++) {
        const DsSoftRegion *r = &spec->r[k];
        for (int f = 0; f < nframes; f++) {
            const double *M = skin + 16 * ((size_t)f * nbones + r->bone);
            for (int c = 0; c < 3; c++)
                anchor[3 * f + c] = M[4 * c] * r->center[0] + M[4 * c + 1] * r->center[1] + M[4 * c + 2] * r->center[2] + M[4 * c + 3];
        }
        for (int f = 0; f < nframes; f++)
            for (int c = 0; c < 3; c++)
                acc[3 * f + c] = f == 0 || f == nframes - 1
                                     ? 0
                                     : (anchor[3 * (f + 1) + c] - 2 * anchor[3 * f + c] + anchor[3 * (f - 1) + c]) / (dt * dt);
        double om = 2 * M_PI * r->freq_hz, u[3] = {0, 0, 0}, v[3] = {0, 0, 0}, h = dt / SUB;
        for (int f = 0; f < nframes; f++) {
            if (f > 0)
                for (int s = 0; s < SUB; s++) {
                    double a = (s + 0.5) / SUB; /* the acceleration at the substep's middle */
                    for (int c = 0; c < 3; c++) {
                        double ext = (1 - a) * acc[3 * (f - 1) + c] + a * acc[3 * f + c];
                        v[c] += h * (-om * om * u[c] - 2 * r->damping * om * v[c] - ext);
                        u[c] += h * v[c];
                    }
                }
            double n = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]), m = r->max_disp;
            double sc = n > 0 ? m * tanh(n / m) / n : 0;
            for (int c = 0; c < 3; c++) uh[3 * ((size_t)f * S + k) + c] = (float)(sc * u[c]);
        }
    }
#pragma omp parallel for schedule(static)
    for (int f = 0; f < nframes; f++)
        for (int64_t i = 0; i < nv; i++) {
            float d[3] = {0, 0, 0};
            for (int k = 0; k < S; k++) {
                float wk = w[i * S + k];
                if (wk == 0) continue;
                for (int c = 0; c < 3; c++) d[c] += wk * uh[3 * ((size_t)f * S + k) + c];
            }
            memcpy(disp + 3 * ((size_t)f * nv + i), d, sizeof d);
        }
    if (u_out) memcpy(u_out, uh, sizeof(float) * 3 * (size_t)nframes * (size_t)S);
    free(anchor), free(acc), free(uh);
}
