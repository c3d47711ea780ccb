/* sim/rig_lbs.c — rig-complementary dynamics for a rig of bone transforms and point weights
 * (rig_lbs.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "sim/bindings.h"
#include "sim/internal.h"
#include "sim/rig_lbs.h"

void sim_lbs_rig_free(SimLbsRig *r) {
    sim_rig_free(&r->rig);
    free(r->src.cub_x), free(r->src.cub_w), free(r->src.cub_dw);
    memset(r, 0, sizeof *r);
}

/* the rig points' weights at n points x (n × 3) into w (n × B) and, when dw is given, their
 * gradients by central differences of the blend (step h) */
static int carry_weights(const SimSkinning *pts, int64_t n, const double *x, double h, double *w, double *dw) {
    int64_t B = pts->m;
    if (n == 0) return 0;
    if (sim_skinning_interpolate(pts, n, x, w, NULL)) return -1;
    if (!dw) return 0;
    double *xs = malloc(sizeof(double) * 3 * (size_t)n), *ws = malloc(sizeof(double) * (size_t)(n * B));
    if (!xs || !ws) {
        free(xs), free(ws);
        return -1;
    }
    memset(dw, 0, sizeof(double) * (size_t)(n * B * 3));
    for (int a = 0; a < 3; a++)
        for (int s = -1; s <= 1; s += 2) {
            memcpy(xs, x, sizeof(double) * 3 * (size_t)n);
            for (int64_t q = 0; q < n; q++) xs[3 * q + a] += s * h;
            if (sim_skinning_interpolate(pts, n, xs, ws, NULL)) {
                free(xs), free(ws);
                return -1;
            }
            for (int64_t q = 0; q < n; q++)
                for (int64_t j = 0; j < B; j++) dw[(q * B + j) * 3 + a] += s * ws[q * B + j] / (2 * h);
        }
    free(xs), free(ws);
    return 0;
}

int sim_lbs_rig_init(SimLbsRig *r, SimObject *o, int64_t np, const double *P, const float *W, int nbones, char *err,
                     size_t errlen) {
    memset(r, 0, sizeof *r);
    if (np < 1 || nbones < 1) return base_errf(err, errlen, "rig: %lld points, %d bones", (long long)np, nbones);
    int64_t nc = o->nc, nv = o->nv, B = nbones;
    r->nbones = nbones, r->nc = nc, r->nv = nv;
    /* the rig points as a weights-only skinning source, for sim_skinning_interpolate's k-NN blend */
    SimSkinning *pts = &r->src;
    pts->m = B, pts->nc = np;
    pts->cub_x = malloc(sizeof(double) * 3 * (size_t)np), pts->cub_w = malloc(sizeof(double) * (size_t)(np * B));
    pts->cub_dw = calloc((size_t)(np * B * 3), sizeof(double));
    /* sim/rig.h's state on these weights; its rig frame is the world (L = R = I, off = 0), so its
     * gradients are the world ones and sim_rig_points_project applies unchanged */
    SimRig *g = &r->rig;
    g->nbones = nbones, g->nc = nc, g->nv = nv, g->t_stop = 1e30;
    g->L[0] = g->L[4] = g->L[8] = 1, g->R[0] = g->R[4] = g->R[8] = 1;
    g->wc = malloc(sizeof(double) * (size_t)(nc * B)), g->dwc = malloc(sizeof(double) * (size_t)(nc * B * 3));
    g->wv = malloc(sizeof(double) * (size_t)((nv + 1) * B));
    g->uc = malloc(sizeof(double) * 3 * (size_t)nc), g->F = malloc(sizeof(double) * 9 * (size_t)nc);
    g->uv = malloc(sizeof(double) * 3 * (size_t)(nv + 1));
    if (!pts->cub_x || !pts->cub_w || !pts->cub_dw || !g->wc || !g->dwc || !g->wv || !g->uc || !g->F || !g->uv) {
        sim_lbs_rig_free(r);
        return base_errf(err, errlen, "rig: out of memory");
    }
    memcpy(pts->cub_x, P, sizeof(double) * 3 * (size_t)np);
    for (int64_t k = 0; k < np * B; k++) pts->cub_w[k] = W[k];
    if (carry_weights(pts, nc, o->Xc, 1e-4 * o->diag, g->wc, g->dwc) || carry_weights(pts, nv, o->Xv, 0, g->wv, NULL)) {
        sim_lbs_rig_free(r);
        return base_errf(err, errlen, "rig: out of memory");
    }
    if (sim_rig_attach(g, o, err, errlen)) {
        o->rig_rows = NULL, o->rig_nrows = 0, o->rig_group = NULL, o->rig_ngroups = 0;
        sim_lbs_rig_free(r);
        return -1;
    }
    return 0;
}

int sim_lbs_rig_points(const SimLbsRig *r, int64_t n, const double *X, SimRigPoints *pts, char *err, size_t errlen) {
    memset(pts, 0, sizeof *pts);
    int64_t B = r->nbones;
    pts->n = n;
    pts->p = malloc(sizeof(double) * 3 * (size_t)(n + 1)), pts->w = malloc(sizeof(double) * (size_t)((n + 1) * B));
    pts->dw = malloc(sizeof(double) * (size_t)((n + 1) * B * 3));
    /* the step of the gradients' differences as at the cubature points: 1e-4 of the diagonal of
     * the rig's points */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, d2 = 0;
    for (int64_t q = 0; q < r->src.nc; q++)
        for (int a = 0; a < 3; a++) lo[a] = fmin(lo[a], r->src.cub_x[3 * q + a]), hi[a] = fmax(hi[a], r->src.cub_x[3 * q + a]);
    for (int a = 0; a < 3; a++) d2 += (hi[a] - lo[a]) * (hi[a] - lo[a]);
    if (!pts->p || !pts->w || !pts->dw || (memcpy(pts->p, X, sizeof(double) * 3 * (size_t)n), 0) ||
        carry_weights(&r->src, n, X, 1e-4 * sqrt(d2), pts->w, pts->dw)) {
        sim_rig_points_free(pts);
        return base_errf(err, errlen, "rig: out of memory for %lld points", (long long)n);
    }
    return 0;
}

void sim_lbs_rig_eval(int nbones, const double *T, int64_t n, const double *X, const double *w, const double *dw,
                      double *u, double *F) {
    for (int64_t q = 0; q < n; q++) {
        const double *p = X + 3 * q;
        double x[3];
        sim_lbs_point(nbones, T, 12, p, w + q * nbones, F ? dw + q * nbones * 3 : NULL, x, F ? F + 9 * q : NULL);
        for (int a = 0; a < 3; a++) u[3 * q + a] = x[a] - p[a];
    }
}

void sim_lbs_rig_advance(SimLbsRig *r, SimObject *o, const double *T) {
    /* no inertial term: B_compᵀ M a = 0 (sim/rig.h), as sim_rig_advance */
    SimRig *g = &r->rig;
    sim_lbs_rig_eval(r->nbones, T, r->nc, o->Xc, g->wc, g->dwc, g->uc, g->F);
    if (r->nv) sim_lbs_rig_eval(r->nbones, T, r->nv, o->Xv, g->wv, NULL, g->uv, NULL);
    if (r->rotation_only)
        for (int64_t c = 0; c < r->nc; c++) {
            double R[9], S[9];
            sim_polar3(g->F + 9 * c, R, S);
            memcpy(g->F + 9 * c, R, sizeof R);
        }
    o->rig_F = g->F, o->rig_uc = g->uc, o->rig_uv = r->nv ? g->uv : NULL;
    o->rig_F_version++;
}
