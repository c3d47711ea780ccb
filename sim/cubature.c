/* sim/cubature.c — NNLS (Lawson–Hanson), the training poses (random and simulated) and An et al.'s
 * greedy cubature optimization; see cubature.h. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/par.h"
#include "sim/cubature.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/material.h"

/* ---- NNLS --------------------------------------------------------------------------------------- */

/* s_P = G_PP⁻¹ c_P on the passive set (Cholesky; a failure retries with a small diagonal shift,
 * which only happens when chosen columns are numerically dependent) */
static int solve_passive(int n, const double *G, const double *c, const bool *P, double *s, double *M, int *ix) {
    int p = 0;
    for (int i = 0; i < n; i++)
        if (P[i]) ix[p++] = i;
    for (int i = 0; i < n; i++) s[i] = 0;
    if (!p) return 0;
    double tr = 0;
    for (int a = 0; a < p; a++) tr += G[(size_t)ix[a] * n + ix[a]];
    for (int attempt = 0; attempt < 6; attempt++) {
        double shift = attempt ? tr / p * pow(10.0, -14 + 2 * attempt) : 0;
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) M[(size_t)a * p + b] = G[(size_t)ix[a] * n + ix[b]] + (a == b ? shift : 0);
        int info = 0, one = 1;
        dpotrf_("L", &p, M, &p, &info, 1);
        if (info) continue;
        double *rhs = M + (size_t)p * p;
        for (int a = 0; a < p; a++) rhs[a] = c[ix[a]];
        dpotrs_("L", &p, &one, M, &p, rhs, &p, &info, 1);
        for (int a = 0; a < p; a++) s[ix[a]] = rhs[a];
        return 0;
    }
    return -1;
}

int sim_nnls_gram(int n, const double *G, const double *c, double *x) {
    bool *P = calloc((size_t)n + 1, sizeof(bool));
    double *w = malloc(sizeof(double) * ((size_t)n + 1)), *s = malloc(sizeof(double) * ((size_t)n + 1));
    double *M = malloc(sizeof(double) * ((size_t)n * n + n + 1));
    int *ix = malloc(sizeof(int) * ((size_t)n + 1));
    int outer = -1;
    if (!P || !w || !s || !M || !ix) goto done;
    /* warm start: the passive set is where the given x is positive (Lawson–Hanson allow any
     * feasible start); the greedy loop adds one column at a time, so this saves rebuilding the
     * passive set from scratch */
    double gmax = 0;
    for (int i = 0; i < n; i++) {
        if (!(x[i] > 0)) x[i] = 0;
        P[i] = x[i] > 0;
        gmax = fmax(gmax, G[(size_t)i * n + i]);
    }
    /* the dual-feasibility threshold: w_j = (Aᵀ(b − Ax))_j below this is roundoff */
    double cmax = 0;
    for (int i = 0; i < n; i++) cmax = fmax(cmax, fabs(c[i]));
    const double eps = 1e-12 * fmax(cmax, 1e-300);
    for (outer = 0; outer < 3 * n + 10; outer++) {
        for (int i = 0; i < n; i++) {
            double gx = 0;
            for (int j = 0; j < n; j++) gx += G[(size_t)i * n + j] * x[j];
            w[i] = c[i] - gx;
        }
        int jmax = -1;
        double best = eps;
        for (int i = 0; i < n; i++)
            if (!P[i] && w[i] > best) best = w[i], jmax = i;
        /* also re-solve once on entry when warm-started (x may not be optimal on its set) */
        if (jmax < 0 && outer > 0) break;
        if (jmax >= 0) P[jmax] = true;
        for (int inner = 0; inner < 3 * n + 10; inner++) {
            if (solve_passive(n, G, c, P, s, M, ix)) {
                outer = -1;
                goto done;
            }
            double alpha = 2;
            for (int i = 0; i < n; i++)
                if (P[i] && s[i] <= 0) {
                    double a = x[i] / (x[i] - s[i]);
                    if (a < alpha) alpha = a;
                }
            if (alpha > 1) break; /* s feasible */
            for (int i = 0; i < n; i++)
                if (P[i]) {
                    x[i] += alpha * (s[i] - x[i]);
                    if (x[i] <= 1e-15 * fmax(gmax, 1)) x[i] = 0, P[i] = false;
                }
        }
        for (int i = 0; i < n; i++) x[i] = P[i] ? s[i] : 0;
        if (jmax < 0) break;
    }
done:
    free(P), free(w), free(s), free(M), free(ix);
    return outer;
}

/* ---- forces and the error metric --------------------------------------------------------------- */

/* f_c(z) = (dF/dz)_cᵀ vec P(F_c(z)): block i, entry q = Σ_j P_ij G_cj[q] (solver.h's coordinates) */
static void point_force(const SimObject *o, int64_t c, const double *z, double *fc) {
    int64_t nb = o->nb;
    const double *G = o->Gc + 3 * c * nb;
    double F[9], P[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) F[3 * i + j] = (i == j) + cblas_ddot((int)nb, G + j * nb, 1, z + i * nb, 1);
    sim_snh(F, o->mu, o->lam, P, NULL);
    for (int i = 0; i < 3; i++)
        for (int64_t q = 0; q < nb; q++) fc[i * nb + q] = P[3 * i] * G[q] + P[3 * i + 1] * G[nb + q] + P[3 * i + 2] * G[2 * nb + q];
}

void sim_cubature_force(const SimObject *o, const double *z, int64_t k, const int64_t *idx, const double *w,
                        double *f) {
    int64_t n = o->n, cnt = k ? k : o->nc;
    double *fc = malloc(sizeof(double) * (size_t)n);
    memset(f, 0, sizeof(double) * (size_t)n);
    if (!fc) return;
    for (int64_t e = 0; e < cnt; e++) {
        int64_t c = k ? idx[e] : e;
        point_force(o, c, z, fc);
        cblas_daxpy((int)n, k ? w[e] : o->Vc[c], fc, 1, f, 1);
    }
    free(fc);
}

/* L (n × n, row-major lower) with L Lᵀ = τ² K(z) + M_r: K the full set's elastic Hessian at z with
 * the per-point PSD projection (as the solver assembles it), M_r = I₃ ⊗ M_b. Block (i, i') of K
 * is Σ_c V_c Σ_jj' Ĥ_c[3i+j][3i'+j'] G_cj G_cj'ᵀ = Gcᵀ W_(ii'), W_(ii') row (c, j) =
 * Σ_j' V_c Ĥ_c[3i+j][3i'+j'] G_cj': one product Gcᵀ [W_00 … W_22] (nb × 9 nb). W: 3 nc × 9 nb,
 * K9: nb × 9 nb scratch. 0, or -1 when the factorization fails. */
static int metric_factor(const SimObject *o, const double *z, double tau, double *L, double *W, double *K9) {
    int64_t nb = o->nb, n = o->n, nc = o->nc;
    int par_nt = base_par_threads(nc, 500 + 30 * nb);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t c = 0; c < nc; c++) {
        const double *G = o->Gc + 3 * c * nb;
        double F[9], H[81];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) F[3 * i + j] = (i == j) + cblas_ddot((int)nb, G + j * nb, 1, z + i * nb, 1);
        sim_snh_hessian_psd(F, o->mu, o->lam, H);
        for (int i = 0; i < 3; i++)
            for (int ii = 0; ii < 3; ii++)
                for (int j = 0; j < 3; j++) {
                    double v = o->Vc[c], h0 = v * H[9 * (3 * i + j) + 3 * ii], h1 = v * H[9 * (3 * i + j) + 3 * ii + 1],
                           h2 = v * H[9 * (3 * i + j) + 3 * ii + 2];
                    double *w = W + (3 * c + j) * 9 * nb + (3 * i + ii) * nb;
                    for (int64_t q = 0; q < nb; q++) w[q] = h0 * G[q] + h1 * G[nb + q] + h2 * G[2 * nb + q];
                }
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nb, (int)(9 * nb), (int)(3 * nc), tau * tau, o->Gc, (int)nb, W,
                (int)(9 * nb), 0.0, K9, (int)(9 * nb));
    double tr = 0;
    for (int64_t q = 0; q < nb; q++) {
        const double *k = K9 + q * 9 * nb + q;
        tr += 3 * (k[0] + k[4 * nb] + k[8 * nb]) + 3 * o->Mb[q * nb + q];
    }
    /* a direction neither the mass nor the stiffness sees (a handle without points) makes the
     * matrix singular: retry with a small diagonal shift */
    for (int attempt = 0; attempt < 4; attempt++) {
        double shift = attempt ? tr / (double)n * pow(10.0, -15 + 3 * attempt) : 0;
        for (int i = 0; i < 3; i++)
            for (int ii = 0; ii < 3; ii++)
                for (int64_t q = 0; q < nb; q++)
                    for (int64_t qq = 0; qq < nb; qq++)
                        L[(i * nb + q) * n + ii * nb + qq] = K9[q * 9 * nb + (3 * i + ii) * nb + qq] +
                                                             (i == ii ? o->Mb[q * nb + qq] + (q == qq ? shift : 0) : 0);
        int info = 0, ni = (int)n;
        dpotrf_("U", &ni, L, &ni, &info, 1); /* column-major upper = row-major lower */
        if (!info) return 0;
    }
    return -1;
}

/* ---- poses -------------------------------------------------------------------------------------- */


/* a random pose with RMS over points of ‖F − I‖_F = amp (cubature.h) */
static void random_pose(const SimObject *o, uint64_t *st, double amp, double *z, double *Ft) {
    int64_t nb = o->nb, nc = o->nc;
    for (int64_t k = 0; k < o->n; k++) z[k] = 2 * base_rng_uniform(st) - 1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(3 * nc), 3, (int)nb, 1.0, o->Gc, (int)nb, z, (int)nb, 0.0,
                Ft, 3);
    double ss = 0;
    for (int64_t k = 0; k < 9 * nc; k++) ss += Ft[k] * Ft[k];
    double rms = sqrt(ss / (double)nc), s = rms > 0 ? amp / rms : 0;
    for (int64_t k = 0; k < o->n; k++) z[k] *= s;
}

int sim_cubature_random_poses(const SimObject *o, const SimCubatureOptions *opt, uint64_t seed, double *Z) {
    double *Ft = malloc(sizeof(double) * (size_t)(9 * o->nc));
    if (!Ft) return -1;
    uint64_t st = seed * 0x2545F4914F6CDD1Dull + 17;
    for (int64_t t = 0; t < (int64_t)opt->poses_per_amp * opt->namps; t++)
        random_pose(o, &st, opt->amps[t / opt->poses_per_amp], Z + t * o->n, Ft);
    free(Ft);
    return 0;
}

/* a rotation by an angle uniform in [0, max_deg] about an axis uniform on the sphere (Rodrigues) */
static void random_rotation(uint64_t *st, double max_deg, double R[9]) {
    double u = 2 * base_rng_uniform(st) - 1, phi = 2 * M_PI * base_rng_uniform(st), r = sqrt(fmax(1 - u * u, 0));
    double x = r * cos(phi), y = r * sin(phi), z = u, th = max_deg * M_PI / 180 * base_rng_uniform(st);
    double c = cos(th), s = sin(th), t = 1 - c;
    double M[9] = {t * x * x + c,     t * x * y - s * z, t * x * z + s * y,
                   t * x * y + s * z, t * y * y + c,     t * y * z - s * x,
                   t * x * z - s * y, t * y * z + s * x, t * z * z + c};
    memcpy(R, M, sizeof M);
}

int sim_cubature_drop_poses(SimObject *o, const SimCubatureOptions *opt, uint64_t seed, double **Zout, int64_t *Tout,
                            char *err, size_t errlen) {
    *Zout = NULL, *Tout = 0;
    int64_t n = o->n, every = opt->drop_every > 0 ? opt->drop_every : 1;
    int64_t cap = opt->drops > 0 && opt->drop_steps > 0 ? (int64_t)opt->drops * (opt->drop_steps / every) : 0;
    if (!cap) return 0;
    /* the contact points: the binding vertices, or the cubature points when there are none */
    int64_t np = o->nv ? o->nv : o->nc;
    int np_planes = o->nplanes;
    double *Z = malloc(sizeof(double) * (size_t)(cap * n)), *z0 = malloc(sizeof(double) * (size_t)n);
    double *zd0 = malloc(sizeof(double) * (size_t)n), *x = malloc(sizeof(double) * 3 * (size_t)np);
    SimPlane *planes0 = malloc(sizeof(SimPlane) * (size_t)(np_planes ? np_planes : 1));
    double *clear = malloc(sizeof(double) * (size_t)(np_planes ? np_planes : 1));
    int64_t ne0 = o->ne, *eidx0 = NULL;
    double *ew0 = NULL;
    if (ne0) {
        eidx0 = malloc(sizeof(int64_t) * (size_t)ne0), ew0 = malloc(sizeof(double) * (size_t)ne0);
        if (eidx0 && ew0)
            memcpy(eidx0, o->eidx, sizeof(int64_t) * (size_t)ne0), memcpy(ew0, o->ew, sizeof(double) * (size_t)ne0);
    }
    if (!Z || !z0 || !zd0 || !x || !planes0 || !clear || (ne0 && (!eidx0 || !ew0))) {
        free(Z), free(z0), free(zd0), free(x), free(planes0), free(clear), free(eidx0), free(ew0);
        base_errf(err, errlen, "cubature: out of memory (%lld training poses)", (long long)cap);
        return -1;
    }
    /* the state the runs start from and that is restored after them */
    memcpy(z0, o->z, sizeof(double) * (size_t)n), memcpy(zd0, o->zdot, sizeof(double) * (size_t)n);
    double t0 = o->t, g0[3] = {o->gravity[0], o->gravity[1], o->gravity[2]};
    SimStepStats last0 = o->last;
    if (np_planes) memcpy(planes0, o->planes, sizeof(SimPlane) * (size_t)np_planes);
    if (ne0) sim_object_set_cubature(o, 0, NULL, NULL, NULL, 0); /* the runs integrate with all points */
    if (o->nv)
        sim_object_vertices(o, x);
    else
        sim_object_cubature_positions(o, x);
    /* each plane's clearance below the object */
    for (int p = 0; p < np_planes; p++) {
        double lo = INFINITY;
        for (int64_t v = 0; v < np; v++) lo = fmin(lo, cblas_ddot(3, planes0[p].normal, 1, x + 3 * v, 1));
        clear[p] = fmax(lo - planes0[p].offset, 0);
    }
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 0x5DEECE66Dull;
    int64_t T = 0;
    int rc = 0;
    char serr[256];
    for (int d = 0; d < opt->drops && rc == 0; d++) {
        double R[9], h = opt->drop_height_lo + (opt->drop_height_hi - opt->drop_height_lo) * base_rng_uniform(&st);
        random_rotation(&st, opt->drop_angle, R);
        memcpy(o->z, z0, sizeof(double) * (size_t)n), memcpy(o->zdot, zd0, sizeof(double) * (size_t)n);
        o->t = t0;
        /* the scene turned by R: gravity and the plane normals, each plane then moved so that the
         * object's lowest point clears it by h times the original clearance */
        for (int i = 0; i < 3; i++) o->gravity[i] = cblas_ddot(3, R + 3 * i, 1, g0, 1);
        for (int p = 0; p < np_planes; p++) {
            SimPlane *pl = &o->planes[p];
            for (int i = 0; i < 3; i++) pl->normal[i] = cblas_ddot(3, R + 3 * i, 1, planes0[p].normal, 1);
            double lo = INFINITY;
            for (int64_t v = 0; v < np; v++) lo = fmin(lo, cblas_ddot(3, pl->normal, 1, x + 3 * v, 1));
            pl->offset = lo - h * clear[p];
        }
        for (int s = 1; s <= opt->drop_steps; s++) {
            if (sim_object_step(o, opt->dt, serr, sizeof serr)) break; /* a hard failure ends this run */
            bool finite = true;
            for (int64_t q = 0; q < n; q++) finite &= isfinite(o->z[q]) != 0;
            if (!finite) break;
            if (s % every == 0 && T < cap) memcpy(Z + T++ * n, o->z, sizeof(double) * (size_t)n);
        }
    }
    /* restore */
    memcpy(o->z, z0, sizeof(double) * (size_t)n), memcpy(o->zdot, zd0, sizeof(double) * (size_t)n);
    o->t = t0, memcpy(o->gravity, g0, sizeof g0), o->last = last0;
    if (np_planes) memcpy(o->planes, planes0, sizeof(SimPlane) * (size_t)np_planes);
    if (ne0 && sim_object_set_cubature(o, ne0, eidx0, ew0, serr, sizeof serr)) {
        base_errf(err, errlen, "cubature: %s", serr);
        rc = -1;
    }
    free(z0), free(zd0), free(x), free(planes0), free(clear), free(eidx0), free(ew0);
    if (rc) {
        free(Z);
        return -1;
    }
    *Zout = Z, *Tout = T;
    return 0;
}

void sim_cubature_defaults(SimCubatureOptions *o) {
    memset(o, 0, sizeof *o);
    o->poses_per_amp = 8;
    o->namps = 4;
    o->amps[0] = 0.05, o->amps[1] = 0.1, o->amps[2] = 0.2, o->amps[3] = 0.3;
    o->drops = 8;
    o->drop_steps = 60;
    o->drop_every = 2;
    o->dt = 0.01;
    o->drop_height_lo = 0.7, o->drop_height_hi = 1.3;
    o->drop_angle = 60;
    o->tau = 0.1;
    o->max_points = 300;
    o->tol = 0.005;
    o->seed = 1;
}

void sim_cubature_free(SimCubature *c) {
    free(c->idx), free(c->w);
    memset(c, 0, sizeof *c);
}

/* ---- the optimization --------------------------------------------------------------------------- */

/* poses whose full force is below this fraction of the largest one are at rest (free flight, the
 * start of a drop): their force is roundoff, and normalizing it would fit noise */
#define POSE_FLOOR 1e-6
/* poses whose columns go through one dsyrk */
#define POSE_BATCH 8

/* NNLS over the k chosen columns sel (warm start x), then drop the points whose weight went to
 * zero (they may come back later); *res gets ‖A x − b‖ / ‖b‖ = √(‖b‖² − 2 xᵀcv_S + xᵀ Gm_SS x) / ‖b‖ */
static int nnls_subset(int64_t nc, const double *Gm, const double *cv, double bb, int *kp, int64_t *sel, double *x,
                       bool *used, double *Gk, double *ck, double *res) {
    int k = *kp;
    for (int a = 0; a < k; a++) {
        ck[a] = cv[sel[a]];
        for (int b = 0; b < k; b++) Gk[(size_t)a * k + b] = Gm[sel[a] * nc + sel[b]];
    }
    if (sim_nnls_gram(k, Gk, ck, x) < 0) return -1;
    int kk = 0;
    for (int a = 0; a < k; a++) {
        if (x[a] > 0)
            sel[kk] = sel[a], x[kk] = x[a], kk++;
        else
            used[sel[a]] = false;
    }
    *kp = k = kk;
    double r2 = bb;
    for (int a = 0; a < k; a++) {
        double gx = 0;
        for (int b = 0; b < k; b++) gx += Gm[sel[a] * nc + sel[b]] * x[b];
        r2 += x[a] * (gx - 2 * cv[sel[a]]);
    }
    *res = sqrt(fmax(r2, 0) / bb);
    return 0;
}

int sim_cubature_optimize_poses(const SimObject *o, const SimCubatureOptions *opt, int64_t T, const double *Z,
                                SimCubature *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    double t0 = base_now();
    int64_t n = o->n, nc = o->nc, nb = o->nb;
    int kmax = opt->max_points < nc ? opt->max_points : (int)nc;
    if (T < 1 || kmax < 1) {
        base_errf(err, errlen, "cubature: need at least one pose and one point");
        return -1;
    }
    bool metric = opt->tau > 0;
    /* Gram form: with A_t (n × nc) pose t's columns and b_t its target, the NNLS and the greedy
     * scores only need Gm = Σ_t A_tᵀ A_t (nc × nc), cv = Σ_t A_tᵀ b_t and ‖b‖², accumulated a
     * batch of poses at a time; A itself (T n × nc) is never stored */
    double *Gm = calloc((size_t)(nc * nc), sizeof(double)), *cv = calloc((size_t)nc, sizeof(double));
    double *At = malloc(sizeof(double) * (size_t)(nc * n * POSE_BATCH));
    double *bt = malloc(sizeof(double) * (size_t)(n * POSE_BATCH));
    double *fn = malloc(sizeof(double) * (size_t)T), *score = malloc(sizeof(double) * (size_t)nc);
    double *Gk = malloc(sizeof(double) * (size_t)kmax * kmax), *ck = malloc(sizeof(double) * (size_t)kmax);
    double *x = calloc((size_t)kmax, sizeof(double));
    double *L = metric ? malloc(sizeof(double) * (size_t)(n * n)) : NULL;
    double *W = metric ? malloc(sizeof(double) * (size_t)(27 * nc * nb)) : NULL;
    double *K9 = metric ? malloc(sizeof(double) * (size_t)(9 * nb * nb)) : NULL;
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)kmax);
    bool *used = calloc((size_t)nc, sizeof(bool));
    int rc = -1;
    if (!Gm || !cv || !At || !bt || !fn || !score || !Gk || !ck || !x || !sel || !used || (metric && (!L || !W || !K9))) {
        base_errf(err, errlen, "cubature: out of memory (%lld points)", (long long)nc);
        goto done;
    }
    double fmaxn = 0;
    for (int64_t t = 0; t < T; t++) {
        sim_cubature_force(o, Z + t * n, 0, NULL, NULL, bt);
        fn[t] = cblas_dnrm2((int)n, bt, 1);
        fmaxn = fmax(fmaxn, fn[t]);
    }
    double bb = 0;
    int64_t used_poses = 0;
    int ld = (int)(n * POSE_BATCH);
    for (int64_t t = 0; t < T;) {
        int nbat = 0;
        for (; t < T && nbat < POSE_BATCH; t++) {
            if (!(fn[t] > POSE_FLOOR * fmaxn)) continue;
            const double *zt = Z + t * n;
            /* the batch's columns side by side: At is nc × (n · batch) row-major */
            double *blk = At + nbat * n, *b1 = bt + nbat * n;
            int par_nt = base_par_threads(nc, 200 + 10 * n);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
            for (int64_t c = 0; c < nc; c++) point_force(o, c, zt, blk + c * ld);
            /* the metric: rows L⁻¹ f, so that ‖L⁻¹ (f_S − f)‖² = δfᵀ (τ² K + M_r)⁻¹ δf */
            if (metric) {
                if (metric_factor(o, zt, opt->tau, L, W, K9)) {
                    base_errf(err, errlen, "cubature: the metric at training pose %lld is not positive definite",
                            (long long)t);
                    goto done;
                }
                cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, (int)nc, (int)n, 1.0, L, (int)n,
                            blk, ld);
            }
            /* b_t = Σ_c V_c a_c; every pose counts alike: its rows divided by ‖b_t‖ (An et al.
             * 2008, §4) */
            cblas_dgemv(CblasRowMajor, CblasTrans, (int)nc, (int)n, 1.0, blk, ld, o->Vc, 1, 0.0, b1, 1);
            double s = 1 / cblas_dnrm2((int)n, b1, 1);
            cblas_dscal((int)n, s, b1, 1);
            for (int64_t c = 0; c < nc; c++) cblas_dscal((int)n, s, blk + c * ld, 1);
            nbat++, used_poses++;
        }
        if (!nbat) break;
        int w = (int)(n * nbat);
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)nc, w, 1.0, At, ld, 1.0, Gm, (int)nc);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nc, w, 1.0, At, ld, bt, 1, 1.0, cv, 1);
        bb += cblas_ddot(w, bt, 1, bt, 1);
    }
    if (!used_poses) {
        base_errf(err, errlen, "cubature: every training pose is at rest");
        goto done;
    }
    for (int64_t a = 0; a < nc; a++) /* dsyrk filled the upper triangle */
        for (int64_t c = 0; c < a; c++) Gm[a * nc + c] = Gm[c * nc + a];
    int k = 0;
    double res = 1;
    while (k < kmax) {
        /* the candidate best aligned with the residual: (Aᵀ r)_c / ‖a_c‖, Aᵀ r = cv − Gm_S x */
        memcpy(score, cv, sizeof(double) * (size_t)nc);
        for (int a = 0; a < k; a++) cblas_daxpy((int)nc, -x[a], Gm + sel[a] * nc, 1, score, 1);
        int64_t best = -1;
        double bs = 0;
        for (int64_t c = 0; c < nc; c++) {
            double d = Gm[c * nc + c];
            if (!used[c] && d > 0 && score[c] / sqrt(d) > bs) bs = score[c] / sqrt(d), best = c;
        }
        if (best < 0) break;
        used[best] = true;
        sel[k] = best;
        x[k] = 0;
        k++;
        /* Lawson–Hanson over the chosen columns, warm-started from the last weights */
        if (nnls_subset(nc, Gm, cv, bb, &k, sel, x, used, Gk, ck, &res)) {
            base_errf(err, errlen, "cubature: NNLS failed at %d points", k);
            goto done;
        }
        if (res <= opt->tol) break;
    }
    out->k = k;
    out->idx = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    out->w = malloc(sizeof(double) * (size_t)(k ? k : 1));
    if (!out->idx || !out->w) {
        sim_cubature_free(out);
        base_errf(err, errlen, "cubature: out of memory");
        goto done;
    }
    memcpy(out->idx, sel, sizeof(int64_t) * (size_t)k);
    memcpy(out->w, x, sizeof(double) * (size_t)k);
    out->train_err = res;
    out->poses = used_poses;
    out->seconds = base_now() - t0;
    rc = 0;
done:
    free(Gm), free(cv), free(At), free(bt), free(fn), free(score), free(Gk), free(ck), free(x), free(L), free(W), free(K9);
    free(sel), free(used);
    return rc;
}

int sim_cubature_optimize(SimObject *o, const SimCubatureOptions *opt, SimCubature *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    double t0 = base_now();
    int64_t Tr = (int64_t)opt->poses_per_amp * opt->namps, Td = 0, n = o->n;
    double *Zd = NULL;
    if (sim_cubature_drop_poses(o, opt, opt->seed, &Zd, &Td, err, errlen)) return -1;
    double run_s = base_now() - t0;
    double *Z = malloc(sizeof(double) * (size_t)((Tr + Td > 0 ? Tr + Td : 1) * n));
    if (!Z || sim_cubature_random_poses(o, opt, opt->seed, Z)) {
        free(Z), free(Zd);
        base_errf(err, errlen, "cubature: out of memory");
        return -1;
    }
    if (Td) memcpy(Z + Tr * n, Zd, sizeof(double) * (size_t)(Td * n));
    free(Zd);
    int rc = sim_cubature_optimize_poses(o, opt, Tr + Td, Z, out, err, errlen);
    free(Z);
    if (rc) return rc;
    out->run_seconds = run_s;
    out->seconds += run_s;
    return 0;
}

void sim_cubature_pose_error(const SimObject *o, const SimCubature *c, int64_t T, const double *Z, double *max_rel,
                             double *mean_rel) {
    int64_t n = o->n;
    double *f = malloc(sizeof(double) * (size_t)(n * (T ? T : 1))), *fs = malloc(sizeof(double) * (size_t)n);
    *max_rel = *mean_rel = NAN;
    if (!f || !fs) goto done;
    double fmaxn = 0, mx = 0, sum = 0;
    for (int64_t t = 0; t < T; t++) {
        sim_cubature_force(o, Z + t * n, 0, NULL, NULL, f + t * n);
        fmaxn = fmax(fmaxn, cblas_dnrm2((int)n, f + t * n, 1));
    }
    int64_t cnt = 0;
    for (int64_t t = 0; t < T; t++) {
        const double *ft = f + t * n;
        double nf = cblas_dnrm2((int)n, ft, 1);
        if (!(nf > POSE_FLOOR * fmaxn)) continue; /* at rest: roundoff against roundoff */
        sim_cubature_force(o, Z + t * n, c->k, c->idx, c->w, fs);
        cblas_daxpy((int)n, -1.0, ft, 1, fs, 1);
        double rel = cblas_dnrm2((int)n, fs, 1) / nf;
        mx = fmax(mx, rel), sum += rel, cnt++;
    }
    *max_rel = mx, *mean_rel = cnt ? sum / (double)cnt : 0;
done:
    free(f), free(fs);
}

void sim_cubature_heldout_error(const SimObject *o, const SimCubature *c, const SimCubatureOptions *opt, int poses,
                                double *max_rel, double *mean_rel) {
    int64_t n = o->n;
    double *z = malloc(sizeof(double) * (size_t)n), *Ft = malloc(sizeof(double) * (size_t)(9 * o->nc));
    double *f = malloc(sizeof(double) * (size_t)n), *fs = malloc(sizeof(double) * (size_t)n);
    *max_rel = *mean_rel = NAN;
    if (!z || !Ft || !f || !fs) goto done;
    uint64_t st = (opt->seed + 0x1000) * 0x9E3779B97F4A7C15ull + 5; /* not the training stream */
    double mx = 0, sum = 0;
    int cnt = 0;
    for (int a = 0; a < opt->namps; a++)
        for (int p = 0; p < poses; p++) {
            random_pose(o, &st, opt->amps[a], z, Ft);
            sim_cubature_force(o, z, 0, NULL, NULL, f);
            sim_cubature_force(o, z, c->k, c->idx, c->w, fs);
            double d = 0, nf = 0;
            for (int64_t q = 0; q < n; q++) d += (fs[q] - f[q]) * (fs[q] - f[q]), nf += f[q] * f[q];
            double rel = nf > 0 ? sqrt(d / nf) : 0;
            mx = fmax(mx, rel), sum += rel, cnt++;
        }
    *max_rel = mx, *mean_rel = cnt ? sum / cnt : 0;
done:
    free(z), free(Ft), free(f), free(fs);
}
