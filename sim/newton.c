/* sim/newton.c — the Newton driver (newton.h). */
#include <math.h>
#include <string.h>

#include "sim/lapack.h"
#include "sim/newton.h"

double sim_newton_backtrack_step(double alpha, double E, double dec, double Et) {
    double curv = Et - E - dec * alpha; /* > 0: Et lies above the tangent (the trial failed) */
    if (!isfinite(Et) || !(curv > 0)) return 0.5 * alpha;
    double a = -dec * alpha * alpha / (2 * curv);
    return fmin(0.5 * alpha, fmax(0.1 * alpha, a));
}

int sim_newton_solve(SimNewtonProblem *P, const SimNewtonPolicy *o, double E0, bool *kel_stale, SimNewtonResult *r) {
    int64_t n = P->n;
    double E = E0, prev_bound = INFINITY, last_alpha = 1;
    const bool lagged = o->elastic_lag > 0;
    bool refreshed = false, refresh_ok = true;
    memset(r, 0, sizeof *r);
    for (int it = 0; it < o->max_iters; it++) {
        double bound = INFINITY;
        if (P->measure) {
            bound = P->measure(P->ctx, P->g);
            r->decrement = bound / o->scale;
            if (bound < o->tol * o->scale) {
                r->converged = true;
                break;
            }
        }
        r->iters++;
        /* without a measure there is no contraction to watch: every iteration is poor */
        bool poor = !P->measure || ((o->backtrack_is_poor || !lagged) && last_alpha < 1) ||
                    bound > (lagged ? o->elastic_lag : o->reuse_ratio) * prev_bound;
        bool fresh, fresh_el = false;
        if (lagged) {
            /* the elastic term anew when the last iteration that used it was poor (in this step
             * or the last: *kel_stale persists), within max_hessians; the problem reassembles it
             * anyway when it keeps none. The rest of the Hessian is exact every iteration. */
            if (it > 0) *kel_stale = poor;
            if (o->one_refresh && it > 0 && poor && refreshed) refresh_ok = false;
            fresh_el = *kel_stale && refresh_ok && r->hessians < o->max_hessians;
            refreshed = fresh_el;
            fresh = true;
        } else /* a chord step with the last factors unless the last iteration was poor */
            fresh = it == 0 || (r->hessians < o->max_hessians && poor);
        prev_bound = bound;
        int rc = 0;
        if (fresh) {
            rc = P->hessian(P->ctx, P->z, lagged, fresh_el);
            if (rc < 0) return -1;
            if (rc > 0) {
                r->hessians++;
                if (lagged) *kel_stale = false;
            }
        }
        rc = P->direction(P->ctx, fresh, lagged, P->dz);
        if (rc < 0) return -1;
        if (rc > 0) {
            r->failures++;
            break;
        }
        double dec = cblas_ddot((int)n, P->dz, 1, P->g, 1);
        r->decrement = fabs(dec) / o->scale;
        if (o->stop_on_direction && fabs(dec) < o->tol * o->scale) {
            r->converged = true;
            break;
        }
        if (!(dec < 0)) { /* no descent direction: reported, not hidden */
            r->failures++;
            break;
        }
        double alpha = 1;
        if (P->step_bound && P->step_bound(P->ctx, P->z, P->dz, &alpha)) return -1;
        double Et = NAN;
        int bt = 0;
        for (; bt <= o->max_backtracks; bt++) {
            for (int64_t k = 0; k < n; k++) P->zt[k] = P->z[k] + alpha * P->dz[k];
            /* the gradient with the energy: a trial that passes is the next iterate */
            Et = P->trial(P->ctx, P->zt, alpha, o->grad_every_trial || bt == 0 ? P->gt : NULL);
            if (Et <= E + o->armijo * alpha * dec) break;
            alpha = o->interpolate ? sim_newton_backtrack_step(alpha, E, dec, Et) : 0.5 * alpha;
        }
        r->backtracks += bt;
        if (bt > o->max_backtracks) {
            r->failures++;
            r->line_search_failed = true;
            break;
        }
        last_alpha = alpha;
        memcpy(P->z, P->zt, sizeof(double) * (size_t)n);
        bool have_grad = o->grad_every_trial || bt == 0;
        if (have_grad) {
            double *t = P->g;
            P->g = P->gt, P->gt = t;
        }
        if (P->accept) {
            if (P->accept(P->ctx, P->z, have_grad, Et, &E, P->g)) return -1;
        } else
            E = Et;
        if (!o->stop_on_direction && fabs(dec) < o->tol * o->scale) {
            r->converged = true;
            break;
        }
    }
    return 0;
}

bool sim_newton_finite(int64_t n, const double *z) {
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(z[k])) return false;
    return true;
}

void sim_newton_velocity(int64_t n, const double *z_new, double dt, double *z, double *zdot) {
    for (int64_t k = 0; k < n; k++) zdot[k] = (z_new[k] - z[k]) / dt;
    memcpy(z, z_new, sizeof(double) * (size_t)n);
}
