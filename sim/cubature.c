/* sim/cubature.c — NNLS (Lawson–Hanson) and An et al.'s greedy cubature optimization; see
 * cubature.h. */
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/cubature.h"
#include "sim/lapack.h"
#include "sim/material.h"

static void set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t n, const char *fmt, ...) {
    if (!err || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

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

/* ---- forces ------------------------------------------------------------------------------------- */

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

static double urand(uint64_t *s) { /* splitmix64 */
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (double)((x ^ (x >> 31)) >> 11) / 9007199254740992.0;
}

/* a random pose with RMS over points of ‖F − I‖_F = amp (cubature.h) */
static void random_pose(const SimObject *o, uint64_t *st, double amp, double *z, double *Ft) {
    int64_t nb = o->nb, nc = o->nc;
    for (int64_t k = 0; k < o->n; k++) z[k] = 2 * urand(st) - 1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(3 * nc), 3, (int)nb, 1.0, o->Gc, (int)nb, z, (int)nb, 0.0,
                Ft, 3);
    double ss = 0;
    for (int64_t k = 0; k < 9 * nc; k++) ss += Ft[k] * Ft[k];
    double rms = sqrt(ss / (double)nc), s = rms > 0 ? amp / rms : 0;
    for (int64_t k = 0; k < o->n; k++) z[k] *= s;
}

void sim_cubature_defaults(SimCubatureOptions *o) {
    memset(o, 0, sizeof *o);
    o->poses_per_amp = 8;
    o->namps = 4;
    o->amps[0] = 0.05, o->amps[1] = 0.1, o->amps[2] = 0.2, o->amps[3] = 0.3;
    o->max_points = 200;
    o->tol = 0.002;
    o->seed = 1;
}

void sim_cubature_free(SimCubature *c) {
    free(c->idx), free(c->w);
    memset(c, 0, sizeof *c);
}

int sim_cubature_optimize(const SimObject *o, const SimCubatureOptions *opt, SimCubature *out, char *err,
                          size_t errlen) {
    memset(out, 0, sizeof *out);
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    int64_t n = o->n, nc = o->nc, T = (int64_t)opt->poses_per_amp * opt->namps, R = T * n;
    int kmax = opt->max_points < nc ? opt->max_points : (int)nc;
    if (T < 1 || kmax < 1) {
        set_err(err, errlen, "cubature: need at least one pose and one point");
        return -1;
    }
    /* A is stored by candidate: column c (R values) contiguous */
    double *A = malloc(sizeof(double) * (size_t)(R * nc)), *b = calloc((size_t)R, sizeof(double));
    double *z = malloc(sizeof(double) * (size_t)n), *Ft = malloc(sizeof(double) * (size_t)(9 * nc));
    double *fc = malloc(sizeof(double) * (size_t)n), *anorm = malloc(sizeof(double) * (size_t)nc);
    double *r = malloc(sizeof(double) * (size_t)R), *score = malloc(sizeof(double) * (size_t)nc);
    double *G = calloc((size_t)kmax * kmax, sizeof(double)), *cv = malloc(sizeof(double) * (size_t)kmax);
    double *x = calloc((size_t)kmax, sizeof(double)), *Gk = malloc(sizeof(double) * (size_t)kmax * kmax);
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)kmax);
    bool *used = calloc((size_t)nc, sizeof(bool));
    int rc = -1;
    if (!A || !b || !z || !Ft || !fc || !anorm || !r || !score || !G || !cv || !x || !Gk || !sel || !used) {
        set_err(err, errlen, "cubature: out of memory (%lld poses × %lld dofs × %lld points)", (long long)T,
                (long long)n, (long long)nc);
        goto done;
    }
    uint64_t st = opt->seed * 0x2545F4914F6CDD1Dull + 17;
    for (int64_t t = 0; t < T; t++) {
        random_pose(o, &st, opt->amps[t / opt->poses_per_amp], z, Ft);
        double *bt = b + t * n;
        for (int64_t c = 0; c < nc; c++) {
            point_force(o, c, z, fc);
            memcpy(A + c * R + t * n, fc, sizeof(double) * (size_t)n);
            cblas_daxpy((int)n, o->Vc[c], fc, 1, bt, 1);
        }
        /* every pose counts alike: divide its rows by ‖f(z_t)‖ (An et al. 2008, §4) */
        double nrm = cblas_dnrm2((int)n, bt, 1), s = nrm > 0 ? 1 / nrm : 0;
        cblas_dscal((int)n, s, bt, 1);
        for (int64_t c = 0; c < nc; c++) cblas_dscal((int)n, s, A + c * R + t * n, 1);
    }
    for (int64_t c = 0; c < nc; c++) anorm[c] = cblas_dnrm2((int)R, A + c * R, 1);
    double bnorm = cblas_dnrm2((int)R, b, 1);
    memcpy(r, b, sizeof(double) * (size_t)R);
    int k = 0;
    double res = 1;
    while (k < kmax) {
        /* the candidate best aligned with the residual */
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nc, (int)R, 1.0, A, (int)R, r, 1, 0.0, score, 1);
        int64_t best = -1;
        double bs = 0;
        for (int64_t c = 0; c < nc; c++)
            if (!used[c] && anorm[c] > 0 && score[c] / anorm[c] > bs) bs = score[c] / anorm[c], best = c;
        if (best < 0) break;
        used[best] = true;
        sel[k] = best;
        for (int a = 0; a <= k; a++) { /* the new Gram row/column */
            double g = cblas_ddot((int)R, A + sel[a] * R, 1, A + best * R, 1);
            G[(size_t)a * kmax + k] = G[(size_t)k * kmax + a] = g;
        }
        cv[k] = cblas_ddot((int)R, A + best * R, 1, b, 1);
        x[k] = 0;
        k++;
        for (int a = 0; a < k; a++)
            for (int c2 = 0; c2 < k; c2++) Gk[(size_t)a * k + c2] = G[(size_t)a * kmax + c2];
        if (sim_nnls_gram(k, Gk, cv, x) < 0) {
            set_err(err, errlen, "cubature: NNLS failed at %d points", k);
            goto done;
        }
        /* drop points whose weight went to zero (they may come back later) */
        int kk = 0;
        for (int a = 0; a < k; a++) {
            if (x[a] > 0) {
                sel[kk] = sel[a], x[kk] = x[a], cv[kk] = cv[a];
                kk++;
            } else
                used[sel[a]] = false;
        }
        if (kk != k) { /* rare: rebuild the kept Gram block */
            for (int a = 0; a < kk; a++)
                for (int c2 = 0; c2 < kk; c2++)
                    G[(size_t)a * kmax + c2] = cblas_ddot((int)R, A + sel[a] * R, 1, A + sel[c2] * R, 1);
            k = kk;
        }
        memcpy(r, b, sizeof(double) * (size_t)R);
        for (int a = 0; a < k; a++) cblas_daxpy((int)R, -x[a], A + sel[a] * R, 1, r, 1);
        res = cblas_dnrm2((int)R, r, 1) / bnorm;
        if (res <= opt->tol) break;
    }
    out->k = k;
    out->idx = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    out->w = malloc(sizeof(double) * (size_t)(k ? k : 1));
    if (!out->idx || !out->w) {
        sim_cubature_free(out);
        set_err(err, errlen, "cubature: out of memory");
        goto done;
    }
    memcpy(out->idx, sel, sizeof(int64_t) * (size_t)k);
    memcpy(out->w, x, sizeof(double) * (size_t)k);
    out->train_err = res;
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    out->seconds = (double)(ts1.tv_sec - ts0.tv_sec) + 1e-9 * (double)(ts1.tv_nsec - ts0.tv_nsec);
    rc = 0;
done:
    free(A), free(b), free(z), free(Ft), free(fc), free(anorm), free(r), free(score), free(G), free(cv), free(x);
    free(Gk), free(sel), free(used);
    return rc;
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
