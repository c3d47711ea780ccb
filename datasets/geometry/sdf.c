/* datasets/geometry/sdf.c — signed distances of the procedural primitives and their smooth union.
 * Formulas after Quilez ("distance functions", iquilezles.org): round cone, rounded box, torus and
 * the ellipsoid bound k0(k0 − 1)/k1 (not an exact distance, but a smooth field with the right
 * zero set, which is all marching cubes and the LBS weights need). */
#include <math.h>
#include <string.h>

#include "base/par.h"
#include "datasets/geometry/procedural.h"

float ds_smin(float a, float b, float k) {
    if (k <= 0) return fminf(a, b);
    float h = fmaxf(k - fabsf(a - b), 0.0f) / k;
    return fminf(a, b) - h * h * k * 0.25f;
}

static float dot3(const float a[3], const float b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* world → local: p_l = Rᵀ (x − c) */
static void to_local(const DsSdfPrim *p, const float x[3], float l[3]) {
    float d[3] = {x[0] - p->c[0], x[1] - p->c[1], x[2] - p->c[2]};
    for (int k = 0; k < 3; k++) l[k] = p->R[k] * d[0] + p->R[3 + k] * d[1] + p->R[6 + k] * d[2];
}

static float box2(float qx, float qy, float round) {
    /* 2D rounded box, q already |p| − half + round */
    float ox = fmaxf(qx, 0), oy = fmaxf(qy, 0);
    return sqrtf(ox * ox + oy * oy) + fminf(fmaxf(qx, qy), 0.0f) - round;
}

float ds_sdf_prim(const DsSdfPrim *p, const float x[3]) {
    switch (p->kind) {
    case DS_SDF_CAPSULE: {
        /* round cone: the convex hull of the spheres (a, r0) and (b, r1) (Quilez's exact
         * formula). On the cone's side the distance is the distance to the line tilted by the
         * taper; beyond the tangent circles it is the distance to either sphere. */
        float ba[3] = {p->b[0] - p->a[0], p->b[1] - p->a[1], p->b[2] - p->a[2]};
        float pa[3] = {x[0] - p->a[0], x[1] - p->a[1], x[2] - p->a[2]};
        float l2 = dot3(ba, ba), rr = p->r0 - p->r1, a2 = l2 - rr * rr;
        float pb[3] = {x[0] - p->b[0], x[1] - p->b[1], x[2] - p->b[2]};
        if (a2 <= 1e-12f * (l2 + 1e-12f)) /* one sphere contains the other */
            return fminf(sqrtf(dot3(pa, pa)) - p->r0, sqrtf(dot3(pb, pb)) - p->r1);
        float il2 = 1.0f / l2, y = dot3(pa, ba), z = y - l2;
        float q[3] = {pa[0] * l2 - ba[0] * y, pa[1] * l2 - ba[1] * y, pa[2] * l2 - ba[2] * y};
        float x2 = dot3(q, q), y2 = y * y * l2, z2 = z * z * l2;
        float kk = (rr > 0 ? 1.0f : rr < 0 ? -1.0f : 0.0f) * rr * rr * x2;
        if ((z > 0 ? 1.0f : z < 0 ? -1.0f : 0.0f) * a2 * z2 > kk) return sqrtf(x2 + z2) * il2 - p->r1;
        if ((y > 0 ? 1.0f : y < 0 ? -1.0f : 0.0f) * a2 * y2 < kk) return sqrtf(x2 + y2) * il2 - p->r0;
        return (sqrtf(x2 * a2 * il2) + y * rr) * il2 - p->r0;
    }
    case DS_SDF_ELLIPSOID: {
        float l[3];
        to_local(p, x, l);
        float q0[3] = {l[0] / p->half[0], l[1] / p->half[1], l[2] / p->half[2]};
        float q1[3] = {q0[0] / p->half[0], q0[1] / p->half[1], q0[2] / p->half[2]};
        float k0 = sqrtf(dot3(q0, q0)), k1 = sqrtf(dot3(q1, q1));
        if (k1 <= 0) return -fminf(p->half[0], fminf(p->half[1], p->half[2]));
        return k0 * (k0 - 1.0f) / k1;
    }
    case DS_SDF_BOX: {
        float l[3], q[3], o = 0;
        to_local(p, x, l);
        for (int k = 0; k < 3; k++) {
            q[k] = fabsf(l[k]) - p->half[k] + p->r0;
            float m = fmaxf(q[k], 0);
            o += m * m;
        }
        return sqrtf(o) + fminf(fmaxf(q[0], fmaxf(q[1], q[2])), 0.0f) - p->r0;
    }
    case DS_SDF_CYLINDER: {
        float ba[3] = {p->b[0] - p->a[0], p->b[1] - p->a[1], p->b[2] - p->a[2]};
        float pa[3] = {x[0] - p->a[0], x[1] - p->a[1], x[2] - p->a[2]};
        float L = sqrtf(dot3(ba, ba));
        float t = L > 0 ? dot3(pa, ba) / L : 0;
        float rad2 = fmaxf(dot3(pa, pa) - t * t, 0.0f);
        return box2(sqrtf(rad2) - p->r0 + p->r1, fabsf(t - 0.5f * L) - 0.5f * L + p->r1, p->r1);
    }
    case DS_SDF_TORUS: {
        float l[3];
        to_local(p, x, l);
        float qx = sqrtf(l[0] * l[0] + l[2] * l[2]) - p->r0;
        return sqrtf(qx * qx + l[1] * l[1]) - p->r1;
    }
    }
    return INFINITY;
}

static void grow(float lo[3], float hi[3], const float x[3], float r) {
    for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], x[k] - r), hi[k] = fmaxf(hi[k], x[k] + r);
}

void ds_sdf_scene_finish(DsSdfScene *s) {
    for (int i = 0; i < s->nprims; i++) {
        DsSdfPrim *p = &s->prims[i];
        for (int k = 0; k < 3; k++) p->lo[k] = INFINITY, p->hi[k] = -INFINITY;
        switch (p->kind) {
        case DS_SDF_CAPSULE:
        case DS_SDF_CYLINDER: {
            float r = p->kind == DS_SDF_CAPSULE ? fmaxf(p->r0, p->r1) : p->r0;
            grow(p->lo, p->hi, p->a, r);
            grow(p->lo, p->hi, p->b, r);
            break;
        }
        case DS_SDF_ELLIPSOID:
        case DS_SDF_BOX:
            for (int k = 0; k < 3; k++) {
                float e = fabsf(p->R[3 * k]) * p->half[0] + fabsf(p->R[3 * k + 1]) * p->half[1] + fabsf(p->R[3 * k + 2]) * p->half[2];
                p->lo[k] = p->c[k] - e, p->hi[k] = p->c[k] + e;
            }
            break;
        case DS_SDF_TORUS:
            grow(p->lo, p->hi, p->c, p->r0 + p->r1);
            break;
        }
    }
}

static float box_dist(const DsSdfPrim *p, const float x[3]) {
    float o = 0;
    for (int k = 0; k < 3; k++) {
        float d = fmaxf(fmaxf(p->lo[k] - x[k], x[k] - p->hi[k]), 0.0f);
        o += d * d;
    }
    return sqrtf(o);
}

float ds_sdf_scene_eval(const DsSdfScene *s, const float x[3]) {
    float d = INFINITY;
    /* a primitive whose bounding box is ≥ d + k away cannot change the smooth minimum
     * (the blend vanishes for |a − b| ≥ k), so it is skipped */
    for (int i = 0; i < s->nprims; i++) {
        const DsSdfPrim *p = &s->prims[i];
        if (p->subtract) continue;
        if (box_dist(p, x) >= d + s->k) continue;
        d = ds_smin(d, ds_sdf_prim(p, x), s->k);
    }
    for (int i = 0; i < s->nprims; i++) {
        const DsSdfPrim *p = &s->prims[i];
        if (!p->subtract || box_dist(p, x) > 0.5f * s->k - d) continue;
        /* smooth subtraction: max(d, −d_i) with its crease rounded by k/2 */
        d = -ds_smin(-d, ds_sdf_prim(p, x), 0.5f * s->k);
    }
    return d;
}

void ds_sdf_scene_transform(DsSdfScene *s, DsTransform t) {
    for (int i = 0; i < s->nprims; i++) {
        DsSdfPrim *p = &s->prims[i];
        for (int k = 0; k < 3; k++) {
            p->a[k] = (p->a[k] - t.center[k]) * t.scale;
            p->b[k] = (p->b[k] - t.center[k]) * t.scale;
            p->c[k] = (p->c[k] - t.center[k]) * t.scale;
            p->half[k] *= t.scale;
        }
        p->r0 *= t.scale, p->r1 *= t.scale;
    }
    s->k *= t.scale;
    ds_sdf_scene_finish(s);
}

void ds_procedural_weights(const DsSdfScene *s, int nbones, const float *x, int64_t n, float sigma, float *w) {
    if (sigma <= 0) sigma = 0.04f;
    int par_nt = base_par_threads(n, 20 * (int64_t)s->nprims + nbones);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < n; i++) {
        float *wi = w + i * nbones;
        for (int b = 0; b < nbones; b++) wi[b] = INFINITY;
        for (int j = 0; j < s->nprims; j++) {
            const DsSdfPrim *p = &s->prims[j];
            if (p->subtract || p->bone < 0 || p->bone >= nbones) continue;
            wi[p->bone] = fminf(wi[p->bone], ds_sdf_prim(p, x + 3 * i));
        }
        float dmin = INFINITY;
        for (int b = 0; b < nbones; b++) dmin = fminf(dmin, wi[b]);
        double sum = 0;
        for (int b = 0; b < nbones; b++) {
            wi[b] = isinf(wi[b]) ? 0.0f : expf(-(wi[b] - dmin) / sigma);
            sum += wi[b];
        }
        for (int b = 0; b < nbones; b++) wi[b] = sum > 0 ? (float)(wi[b] / sum) : 1.0f / (float)nbones;
    }
}
