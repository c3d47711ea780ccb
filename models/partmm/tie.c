/* models/partmm/tie.c — models/partmm/tie.h: Gaussians of a fit tied to a benchmark's
 * ground-truth surface through the training motion (the full path's truth). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/mat3.h"
#include "models/partmm/tie.h"

static void gt_linear(const DsMotionGt *g, int t, int64_t v, double L[9]) {
    for (int k = 0; k < 9; k++) L[k] = 0;
    for (int b = 0; b < g->nbones; b++) {
        double w = g->weights[v * g->nbones + b];
        if (w == 0) continue;
        const float *T = g->bone_transforms + ((int64_t)t * g->nbones + b) * 16;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) L[r * 3 + c] += w * T[r * 4 + c];
    }
}

int pm_gaussian_tie(const PmRig *rig, int F, const DsMotionGt *train, PmGaussianTie *tie, char *err, size_t errlen) {
    int64_t n = rig->n, nv = train->nv;
    if (F != train->nframes)
        return base_errf(err, errlen, "the rig has %d frames, the benchmark's training motion %d: --gaussians needs a rig made from a run on that motion", F, train->nframes);
    float *own = malloc(sizeof(float) * F * n * 3);
    tie->anchor = malloc(sizeof(int32_t) * n), tie->offset = malloc(sizeof(float) * n * 3);
    if (!own || !tie->anchor || !tie->offset) {
        free(own);
        return base_errf(err, errlen, "out of memory");
    }
    for (int t = 0; t < F; t++) pm_lbs(n, rig->B, rig->points, rig->weights, rig->tb + (int64_t)t * rig->B * 12, own + (int64_t)t * n * 3);
    int bad = 0;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t i = 0; i < n; i++) {
        double best = INFINITY;
        int32_t a = 0;
        for (int64_t v = 0; v < nv; v++) {
            double d = 0;
            for (int t = 0; t < F && d < best; t += 4)
                for (int k = 0; k < 3; k++) {
                    double e = own[((int64_t)t * n + i) * 3 + k] - train->vertices[((int64_t)t * nv + v) * 3 + k];
                    d += e * e;
                }
            if (d < best) best = d, a = (int32_t)v;
        }
        tie->anchor[i] = a;
        double acc[3] = {0};
        int m = 0;
        for (int t = 0; t < F; t++) {
            double L[9], X[9], e[3];
            gt_linear(train, t, a, L);
            if (!(fabs(base_mat3_inv(L, X)) > 1e-12)) continue; /* a singular frame says nothing */
            for (int k = 0; k < 3; k++) e[k] = own[((int64_t)t * n + i) * 3 + k] - train->vertices[((int64_t)t * nv + a) * 3 + k];
            for (int k = 0; k < 3; k++) acc[k] += X[k * 3] * e[0] + X[k * 3 + 1] * e[1] + X[k * 3 + 2] * e[2];
            m++;
        }
        if (!m) {
#pragma omp atomic write
            bad = 1;
        }
        for (int k = 0; k < 3; k++) tie->offset[i * 3 + k] = m ? (float)(acc[k] / m) : 0;
    }
    free(own);
    return bad ? base_errf(err, errlen, "a ground-truth skinning matrix is singular") : 0;
}

void pm_gaussian_targets(const PmGaussianTie *tie, int64_t n, const DsMotionGt *g, int t0, int Q, float *out) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < Q; t++)
        for (int64_t i = 0; i < n; i++) {
            double L[9];
            int64_t a = tie->anchor[i];
            gt_linear(g, t0 + t, a, L);
            const float *o = tie->offset + i * 3, *v = g->vertices + ((int64_t)(t0 + t) * g->nv + a) * 3;
            for (int k = 0; k < 3; k++)
                out[((int64_t)t * n + i) * 3 + k] = (float)(v[k] + L[k * 3] * o[0] + L[k * 3 + 1] * o[1] + L[k * 3 + 2] * o[2]);
        }
}

double pm_gaussian_tie_residual(const PmGaussianTie *tie, const PmRig *rig, int F, const DsMotionGt *train) {
    int64_t n = rig->n;
    float *own = malloc(sizeof(float) * n * 3), *tg = malloc(sizeof(float) * n * 3);
    double s = 0;
    for (int t = 0; own && tg && t < F; t++) {
        pm_lbs(n, rig->B, rig->points, rig->weights, rig->tb + (int64_t)t * rig->B * 12, own);
        pm_gaussian_targets(tie, n, train, t, 1, tg);
        for (int64_t k = 0; k < n * 3; k++) s += ((double)own[k] - tg[k]) * ((double)own[k] - tg[k]);
    }
    double r = own && tg && F > 0 && n > 0 ? sqrt(s / ((double)F * n)) : NAN;
    free(own), free(tg);
    return r;
}

void pm_gaussian_tie_free(PmGaussianTie *tie) {
    free(tie->anchor), free(tie->offset);
    tie->anchor = NULL, tie->offset = NULL;
}
