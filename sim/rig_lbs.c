/* sim/rig_lbs.c — rig-complementary dynamics for a rig of bone transforms and point weights
 * (rig_lbs.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "sim/bindings.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/rig_lbs.h"

void sim_lbs_rig_free(SimLbsRig *r) {
    free(r->wc), free(r->dwc), free(r->wv), free(r->u_prev), free(r->u_cur), free(r->u_next);
    free(r->F), free(r->uv), free(r->f), free(r->rows), free(r->Mchol);
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
    int64_t nc = o->nc, nv = o->nv, B = nbones, nbz = o->nb;
    r->nbones = nbones, r->nc = nc, r->nv = nv;
    /* the rig points as a weights-only skinning source, for sim_skinning_interpolate's k-NN blend */
    SimSkinning pts = {.m = B, .nc = np};
    pts.cub_x = malloc(sizeof(double) * 3 * (size_t)np), pts.cub_w = malloc(sizeof(double) * (size_t)(np * B));
    pts.cub_dw = calloc((size_t)(np * B * 3), sizeof(double));
    r->wc = malloc(sizeof(double) * (size_t)(nc * B)), r->dwc = malloc(sizeof(double) * (size_t)(nc * B * 3));
    r->wv = malloc(sizeof(double) * (size_t)((nv + 1) * B));
    r->u_prev = malloc(sizeof(double) * 3 * (size_t)nc), r->u_cur = malloc(sizeof(double) * 3 * (size_t)nc);
    r->u_next = malloc(sizeof(double) * 3 * (size_t)nc), r->F = malloc(sizeof(double) * 9 * (size_t)nc);
    r->uv = malloc(sizeof(double) * 3 * (size_t)(nv + 1)), r->f = malloc(sizeof(double) * (size_t)o->n);
    r->rows = calloc((size_t)(8 * nbz), sizeof(double));
    r->Mchol = malloc(sizeof(double) * (size_t)(nbz * nbz));
    int rc = -1;
    if (!pts.cub_x || !pts.cub_w || !pts.cub_dw || !r->wc || !r->dwc || !r->wv || !r->u_prev || !r->u_cur ||
        !r->u_next || !r->F || !r->uv || !r->f || !r->rows || !r->Mchol)
        goto oom;
    memcpy(pts.cub_x, P, sizeof(double) * 3 * (size_t)np);
    for (int64_t k = 0; k < np * B; k++) pts.cub_w[k] = W[k];
    if (carry_weights(&pts, nc, o->Xc, 1e-4 * o->diag, r->wc, r->dwc) || carry_weights(&pts, nv, o->Xv, 0, r->wv, NULL))
        goto oom;
    /* the exact rows, as sim_rig_init gives them: the constant handle, and Σ_c ρ V_c X̃_c,l b_c */
    for (int l = 0; l < 4; l++) r->rows[l * nbz + 4 * o->m + l] = 1;
    for (int64_t c = 0; c < nc; c++) {
        const double *X = o->Xc + 3 * c;
        double xh[4] = {X[0], X[1], X[2], 1}, m = o->rho * o->Vc[c];
        for (int l = 0; l < 4; l++) cblas_daxpy((int)nbz, m * xh[l], o->Bc + c * nbz, 1, r->rows + (4 + l) * nbz, 1);
    }
    /* M_b's Cholesky factor, for the inertia term's shift of the prediction (advance), with a ridge
     * of 1e-10 of its largest diagonal: weights summing to one make the constant handle a
     * combination of the others (M_b singular); f = Bᵀ M a lies in M_b's range, and a shift along
     * its null space changes no position */
    memcpy(r->Mchol, o->Mb, sizeof(double) * (size_t)(nbz * nbz));
    double dmax = 0;
    for (int64_t k = 0; k < nbz; k++) dmax = fmax(dmax, r->Mchol[k * nbz + k]);
    for (int64_t k = 0; k < nbz; k++) r->Mchol[k * nbz + k] += 1e-10 * dmax + 1e-300;
    int info = 0, nn = (int)nbz;
    dpotrf_("L", &nn, r->Mchol, &nn, &info, 1);
    if (info) {
        base_errf(err, errlen, "rig: the subspace's mass matrix is not positive definite");
        goto fail;
    }
    o->rig_rows = r->rows, o->rig_nrows = 8;
    char e2[512];
    if (sim_object_prepare(o, e2, sizeof e2)) {
        base_errf(err, errlen, "rig: %s", e2);
        goto fail;
    }
    rc = 0;
    goto done;
oom:
    base_errf(err, errlen, "rig: out of memory");
fail:
    o->rig_rows = NULL, o->rig_nrows = 0;
    sim_lbs_rig_free(r);
done:
    free(pts.cub_x), free(pts.cub_w), free(pts.cub_dw);
    return rc;
}

void sim_lbs_rig_eval(int nbones, const double *T, int64_t n, const double *X, const double *w, const double *dw,
                      double *u, double *F) {
    for (int64_t q = 0; q < n; q++) {
        const double *p = X + 3 * q;
        double x[3] = {0, 0, 0}, Fp[9] = {0};
        for (int j = 0; j < nbones; j++) {
            double wj = w[q * nbones + j];
            const double *S = T + 12 * j;
            double sp[3];
            for (int a = 0; a < 3; a++) sp[a] = S[4 * a] * p[0] + S[4 * a + 1] * p[1] + S[4 * a + 2] * p[2] + S[4 * a + 3];
            for (int a = 0; a < 3; a++) x[a] += wj * sp[a];
            if (F) {
                const double *g = dw + (q * nbones + j) * 3;
                for (int a = 0; a < 3; a++)
                    for (int c = 0; c < 3; c++) Fp[3 * a + c] += wj * S[4 * a + c] + sp[a] * g[c];
            }
        }
        for (int a = 0; a < 3; a++) u[3 * q + a] = x[a] - p[a];
        if (F) memcpy(F + 9 * q, Fp, sizeof Fp);
    }
}

void sim_lbs_rig_advance(SimLbsRig *r, SimObject *o, const double *T, double dt) {
    int64_t nc = r->nc, nb = o->nb;
    sim_lbs_rig_eval(r->nbones, T, nc, o->Xc, r->wc, r->dwc, r->u_next, r->F);
    if (r->nv) sim_lbs_rig_eval(r->nbones, T, r->nv, o->Xv, r->wv, NULL, r->uv, NULL);
    if (r->rotation_only)
        for (int64_t c = 0; c < nc; c++) {
            double R[9], S[9];
            sim_polar3(r->F + 9 * c, R, S);
            memcpy(r->F + 9 * c, R, sizeof R);
        }
    if (r->hist == 0) memcpy(r->u_cur, r->u_next, sizeof(double) * 3 * (size_t)nc);
    if (r->hist <= 1) memcpy(r->u_prev, r->u_cur, sizeof(double) * 3 * (size_t)nc);
    /* f⁽ⁱ⁾ = Σ_c ρ V_c b_c a_c,i (sim/rig.h) */
    memset(r->f, 0, sizeof(double) * (size_t)o->n);
    for (int64_t c = 0; c < nc; c++) {
        double m = o->rho * o->Vc[c];
        for (int i = 0; i < 3; i++) {
            double a = r->u_next[3 * c + i] - 2 * r->u_cur[3 * c + i] + r->u_prev[3 * c + i];
            if (a != 0) cblas_daxpy((int)nb, m * a, o->Bc + c * nb, 1, r->f + i * nb, 1);
        }
    }
    /* the inertia ½‖z − z̃‖²_M_r + fᵀ(z − z̃) is ½‖z − (z̃ − M_r⁻¹ f)‖²_M_r + const: the rig's
     * acceleration shifts the prediction z̃ = z₀ + dt ż₀, i.e. ż₀ by −M_r⁻¹ f / dt (the step then
     * takes ż₁ = (z₁ − z₀)/dt from positions, so the shift does not persist) */
    int nn = (int)nb, one = 1, info = 0;
    for (int i = 0; i < 3; i++) {
        dpotrs_("L", &nn, &one, r->Mchol, &nn, r->f + i * nb, &nn, &info, 1);
        if (!info) cblas_daxpy((int)nb, -1 / dt, r->f + i * nb, 1, o->zdot + i * nb, 1);
    }
    double *tmp = r->u_prev;
    r->u_prev = r->u_cur, r->u_cur = r->u_next, r->u_next = tmp;
    r->hist = r->hist < 2 ? r->hist + 1 : 2;
    o->rig_F = r->F, o->rig_uc = r->u_cur, o->rig_uv = r->nv ? r->uv : NULL;
}
