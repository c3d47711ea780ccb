/* sim/skinning.c — the procedural skinning sources, and the skinning file under sim_ names. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/geometry/geometry.h"
#include "datasets/geometry/procedural.h"
#include "sim/internal.h"
#include "sim/skinning.h"

/* the file functions are datasets/corpus/skinning_file.h's, under the simulator's prefix */
void sim_skinning_free(SimSkinning *s) { ds_skinning_free(s); }
int sim_skinning_validate(const SimSkinning *s, const char *what, char *err, size_t errlen) {
    return ds_skinning_validate(s, what, err, errlen);
}
int sim_skinning_read(const char *path, SimSkinning *s, char *err, size_t errlen) {
    return ds_skinning_read(path, s, err, errlen);
}
int sim_skinning_write(const char *path, const SimSkinning *s, char *err, size_t errlen) {
    return ds_skinning_write(path, s, err, errlen);
}

/* ---- procedural sources ---------------------------------------------------------------------- */

void sim_procedural_defaults(SimProceduralOptions *o) {
    memset(o, 0, sizeof *o);
    o->category = "snake";
    o->seed = 1;
    o->mesh_res = 48;
    o->cubature_res = 24;
    o->kind = "bones";
    o->handles = 16;
}

/* Wendland C2: φ(q) = (1 − q)⁴ (4q + 1) on [0, 1); φ'(q) = −20 q (1 − q)³ */
void sim_rbf_eval(int64_t m, const double *centers, double radius, int64_t n, const double *x, double *w,
                  double *dw) {
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = 0; k < m; k++) {
            double d[3], r2 = 0;
            for (int i = 0; i < 3; i++) d[i] = x[3 * p + i] - centers[3 * k + i], r2 += d[i] * d[i];
            double q = sqrt(r2) / radius, wv = 0, g = 0;
            if (q < 1) {
                double a = 1 - q;
                wv = a * a * a * a * (4 * q + 1);
                g = -20 * a * a * a / (radius * radius); /* φ'(q)/(q r²) · d = ∇φ: the q cancels */
            }
            w[p * m + k] = wv;
            if (dw)
                for (int i = 0; i < 3; i++) dw[(p * m + k) * 3 + i] = g * d[i];
        }
}

void sim_rbf_normalize(int64_t m, int64_t n, double *w, double *dw) {
    for (int64_t p = 0; p < n; p++) {
        double S = 0, gS[3] = {0, 0, 0};
        for (int64_t k = 0; k < m; k++) {
            S += w[p * m + k];
            if (dw)
                for (int i = 0; i < 3; i++) gS[i] += dw[(p * m + k) * 3 + i];
        }
        if (!(S > 0)) continue;
        for (int64_t k = 0; k < m; k++) {
            w[p * m + k] /= S;
            if (dw)
                for (int i = 0; i < 3; i++) dw[(p * m + k) * 3 + i] = (dw[(p * m + k) * 3 + i] - w[p * m + k] * gS[i]) / S;
        }
    }
}

static int bone_weights(const DsProceduralShape *sh, float sigma, int64_t n, const double *x, int m, double *w,
                        double *dw) {
    int nb = sh->nbones;
    float *xf = calloc(3 * (size_t)n + 1, sizeof(float)), *wf = malloc(sizeof(float) * (size_t)(n * nb));
    if (!xf || !wf) {
        free(xf), free(wf);
        return -1;
    }
    for (int64_t i = 0; i < 3 * n; i++) xf[i] = (float)x[i];
    ds_procedural_weights(&sh->scene, nb, xf, n, sigma, wf);
    for (int64_t p = 0; p < n; p++)
        for (int k = 0; k < m; k++) w[p * m + k] = wf[p * nb + k];
    /* ∇w by central differences: the weights are f32 softmaxes of SDFs, so δ = 1e-3 balances
     * truncation (O(δ²)) against rounding (O(ε_f32/δ) ≈ 1e-4) */
    const float h = 1e-3f;
    float *wp = malloc(sizeof(float) * (size_t)(n * nb)), *wm = malloc(sizeof(float) * (size_t)(n * nb));
    if (!wp || !wm) {
        free(xf), free(wf), free(wp), free(wm);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        for (int64_t p = 0; p < n; p++) xf[3 * p + i] = (float)x[3 * p + i] + h;
        ds_procedural_weights(&sh->scene, nb, xf, n, sigma, wp);
        for (int64_t p = 0; p < n; p++) xf[3 * p + i] = (float)x[3 * p + i] - h;
        ds_procedural_weights(&sh->scene, nb, xf, n, sigma, wm);
        for (int64_t p = 0; p < n; p++) {
            xf[3 * p + i] = (float)x[3 * p + i];
            for (int k = 0; k < m; k++) dw[(p * m + k) * 3 + i] = ((double)wp[p * nb + k] - wm[p * nb + k]) / (2.0 * h);
        }
    }
    free(xf), free(wf), free(wp), free(wm);
    return 0;
}

int sim_skinning_procedural(const SimProceduralOptions *o, SimSkinning *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    bool rbf = !strcmp(o->kind, "rbf");
    if (!rbf && strcmp(o->kind, "bones")) {
        base_errf(err, errlen, "procedural skinning: kind \"%s\" is not \"bones\" or \"rbf\"", o->kind);
        return -1;
    }
    if (o->cubature_res < 4 || o->cubature_res > 256) {
        base_errf(err, errlen, "procedural skinning: cubature_res %d out of range [4, 256]", o->cubature_res);
        return -1;
    }
    DsProceduralShape sh;
    if (ds_procedural_make(o->category, o->seed, o->mesh_res, &sh, err, errlen)) return -1;
    DsCubature cub = {0};
    if (ds_cubature_sdf(ds_procedural_sdf, &sh, o->cubature_res, &cub, err, errlen)) {
        ds_procedural_free(&sh);
        return -1;
    }
    int m = rbf ? o->handles : sh.nbones - 1;
    if (m < 1 || (rbf && m > cub.n)) {
        base_errf(err, errlen, "procedural skinning: %s gives %d handles (%s %d, %lld cubature points)", o->category, m,
                rbf ? "asked for" : "bones", rbf ? o->handles : sh.nbones, (long long)cub.n);
        ds_cubature_free(&cub), ds_procedural_free(&sh);
        return -1;
    }
    s->m = m, s->nc = cub.n, s->nv = sh.mesh.nv, s->nf = sh.mesh.nf;
    s->cub_x = malloc(sizeof(double) * 3 * (size_t)s->nc);
    s->cub_vol = malloc(sizeof(double) * (size_t)s->nc);
    s->cub_w = malloc(sizeof(double) * (size_t)(s->nc * m));
    s->cub_dw = malloc(sizeof(double) * 3 * (size_t)(s->nc * m));
    s->vert_x = malloc(sizeof(double) * 3 * (size_t)s->nv);
    s->vert_w = malloc(sizeof(double) * (size_t)(s->nv * m));
    s->vert_dw = malloc(sizeof(double) * 3 * (size_t)(s->nv * m));
    s->faces = malloc(sizeof(int32_t) * 3 * (size_t)s->nf);
    double *centers = rbf ? malloc(sizeof(double) * 3 * (size_t)m) : NULL;
    int rc = -1;
    if (!s->cub_x || !s->cub_vol || !s->cub_w || !s->cub_dw || !s->vert_x || !s->vert_w || !s->vert_dw || !s->faces ||
        (rbf && !centers)) {
        base_errf(err, errlen, "procedural skinning: out of memory");
        goto done;
    }
    for (int64_t i = 0; i < 3 * s->nc; i++) s->cub_x[i] = cub.x[i];
    for (int64_t i = 0; i < s->nc; i++) s->cub_vol[i] = cub.w[i];
    for (int64_t i = 0; i < 3 * s->nv; i++) s->vert_x[i] = sh.mesh.v[i];
    memcpy(s->faces, sh.mesh.f, sizeof(int32_t) * 3 * (size_t)s->nf);
    if (rbf) {
        /* farthest-point sampling from the point nearest the centroid */
        double cen[3] = {0, 0, 0};
        for (int64_t c = 0; c < s->nc; c++)
            for (int i = 0; i < 3; i++) cen[i] += s->cub_x[3 * c + i] / (double)s->nc;
        double *d2 = malloc(sizeof(double) * (size_t)s->nc);
        if (!d2) {
            base_errf(err, errlen, "procedural skinning: out of memory");
            goto done;
        }
        int64_t pick = 0;
        double best = INFINITY;
        for (int64_t c = 0; c < s->nc; c++) {
            double r = 0;
            for (int i = 0; i < 3; i++) r += (s->cub_x[3 * c + i] - cen[i]) * (s->cub_x[3 * c + i] - cen[i]);
            if (r < best) best = r, pick = c;
            d2[c] = INFINITY;
        }
        double spacing = 0;
        for (int k = 0; k < m; k++) {
            memcpy(centers + 3 * k, s->cub_x + 3 * pick, sizeof(double) * 3);
            double far = -1;
            int64_t next = 0;
            for (int64_t c = 0; c < s->nc; c++) {
                double r = 0;
                for (int i = 0; i < 3; i++) r += (s->cub_x[3 * c + i] - centers[3 * k + i]) * (s->cub_x[3 * c + i] - centers[3 * k + i]);
                if (r < d2[c]) d2[c] = r;
                if (d2[c] > far) far = d2[c], next = c;
            }
            spacing = sqrt(far); /* after the last center: the covering radius of the centers */
            pick = next;
        }
        free(d2);
        /* 2.5× the covering radius: every point sees a few handles, none sees all of them */
        double radius = o->rbf_radius > 0 ? o->rbf_radius : 2.5 * fmax(spacing, 1e-3);
        sim_rbf_eval(m, centers, radius, s->nc, s->cub_x, s->cub_w, s->cub_dw);
        sim_rbf_eval(m, centers, radius, s->nv, s->vert_x, s->vert_w, s->vert_dw);
        if (o->normalize) {
            sim_rbf_normalize(m, s->nc, s->cub_w, s->cub_dw);
            sim_rbf_normalize(m, s->nv, s->vert_w, s->vert_dw);
        }
        snprintf(s->source, sizeof s->source, "procedural %s seed %llu, %d Wendland bumps of radius %.4g",
                 o->category, (unsigned long long)o->seed, m, radius);
    } else {
        if (bone_weights(&sh, o->sigma, s->nc, s->cub_x, m, s->cub_w, s->cub_dw) ||
            bone_weights(&sh, o->sigma, s->nv, s->vert_x, m, s->vert_w, s->vert_dw)) {
            base_errf(err, errlen, "procedural skinning: out of memory");
            goto done;
        }
        snprintf(s->source, sizeof s->source, "procedural %s seed %llu, bone weights (%d of %d bones)", o->category,
                 (unsigned long long)o->seed, m, sh.nbones);
    }
    rc = 0;
done:
    free(centers);
    ds_cubature_free(&cub);
    ds_procedural_free(&sh);
    if (rc) sim_skinning_free(s);
    return rc;
}
