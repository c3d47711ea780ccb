/* sim/rig.c — rig-complementary dynamics (rig.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"
#include "datasets/config.h"
#include "datasets/motion/rig.h"
#include "datasets/render/image.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/rig.h"

#define RIG_FD 1e-3 /* central-difference step of the weights' gradients (rig frame; f32 weights) */

/* the f32 weights of point q in double, rescaled to sum to 1: u_r must lie in the rig space
 * span_j(w_j X̃) exactly (its −X term is −Σ_j w_j X), or the rig's acceleration and gravity leak
 * into the complementary subspace at the f32 rounding of the sum (1e-5 of a step's acceleration) */
static void unit_sum(int nb, const float *wf, double *w) {
    double sum = 0;
    for (int j = 0; j < nb; j++) sum += wf[j];
    for (int j = 0; j < nb; j++) w[j] = sum > 0 ? wf[j] / sum : 0;
}

/* weights of the rig at n points p (n × 3, rig frame) into w (n × nb), and their gradients dw
 * (n × nb × 3) when given (of the rescaled weights, so Σ_j ∇w_j = 0 to roundoff) */
static int rig_weights(const SimRig *r, int64_t n, const double *p, double *w, double *dw) {
    int nb = r->nbones;
    if (n == 0) return 0;
    float *pf = malloc(sizeof(float) * 3 * (size_t)n), *wf = malloc(sizeof(float) * (size_t)(n * nb));
    if (!pf || !wf) {
        free(pf), free(wf);
        return -1;
    }
    for (int64_t k = 0; k < 3 * n; k++) pf[k] = (float)p[k];
    ds_procedural_weights(&r->shape.scene, nb, pf, n, r->sigma, wf);
    for (int64_t q = 0; q < n; q++) unit_sum(nb, wf + q * nb, w + q * nb);
    double one[DS_RIG_MAX_BONES];
    for (int a = 0; dw && a < 3; a++)
        for (int s = -1; s <= 1; s += 2) {
            for (int64_t k = 0; k < 3 * n; k++) pf[k] = (float)p[k];
            for (int64_t q = 0; q < n; q++) pf[3 * q + a] = (float)(p[3 * q + a] + s * RIG_FD);
            ds_procedural_weights(&r->shape.scene, nb, pf, n, r->sigma, wf);
            for (int64_t q = 0; q < n; q++) {
                unit_sum(nb, wf + q * nb, one);
                for (int j = 0; j < nb; j++) dw[(q * nb + j) * 3 + a] += s * one[j] / (2 * RIG_FD);
            }
        }
    free(pf), free(wf);
    return 0;
}

static void rig_basis(const SimRig *r, const SimObject *o, double *A, double *m);
static int gram_chol(const double *A, const double *m, int64_t nc, int K, double *Gm);
static int rig_complement(SimRig *r, SimObject *o);

int sim_rig_init(SimRig *r, SimObject *o, const char *category, uint64_t seed, int mesh_res, float sigma,
                 const double center[3], double k, const SimPose *pose, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    char e2[512];
    if (ds_procedural_make(category, seed, mesh_res, &r->shape, e2, sizeof e2))
        return base_errf(err, errlen, "rig: %s", e2);
    int nb = r->nbones = r->shape.nbones;
    if (nb < 1 || nb > DS_RIG_MAX_BONES) {
        ds_procedural_free(&r->shape);
        return base_errf(err, errlen, "rig: %s has %d bones (1 to %d)", category, nb, DS_RIG_MAX_BONES);
    }
    r->sigma = sigma;
    double s = pose->scale * k;
    memcpy(r->R, pose->R, sizeof r->R);
    for (int a = 0; a < 9; a++) r->L[a] = s * pose->R[a];
    for (int a = 0; a < 3; a++) r->off[a] = pose->translate[a] - (r->L[3 * a] * center[0] + r->L[3 * a + 1] * center[1] + r->L[3 * a + 2] * center[2]);
    r->nc = o->nc, r->nv = o->nv;
    int64_t nc = o->nc, nv = o->nv;
    r->pc = malloc(sizeof(double) * 3 * (size_t)nc), r->pv = malloc(sizeof(double) * 3 * (size_t)(nv + 1));
    r->wc = malloc(sizeof(double) * (size_t)(nc * nb)), r->dwc = calloc((size_t)(nc * nb * 3), sizeof(double));
    r->wv = malloc(sizeof(double) * (size_t)((nv + 1) * nb));
    r->live = malloc(sizeof(double) * 4 * (size_t)nb), r->live_on = calloc((size_t)nb, 1);
    r->uc = malloc(sizeof(double) * 3 * (size_t)nc), r->F = malloc(sizeof(double) * 9 * (size_t)nc);
    r->uv = malloc(sizeof(double) * 3 * (size_t)(nv + 1));
    r->local = malloc(sizeof(double) * 4 * (size_t)nb);
    if (!r->pc || !r->pv || !r->wc || !r->dwc || !r->wv || !r->live || !r->live_on || !r->uc ||
        !r->F || !r->uv || !r->local) {
        sim_rig_free(r);
        return base_errf(err, errlen, "rig: out of memory");
    }
    r->t_stop = 1e30;
    /* p = L⁻¹ (X − off), L = s R: L⁻¹ = Rᵀ / s */
    for (int64_t q = 0; q < nc + nv; q++) {
        const double *X = q < nc ? o->Xc + 3 * q : o->Xv + 3 * (q - nc);
        double *p = q < nc ? r->pc + 3 * q : r->pv + 3 * (q - nc);
        double d[3] = {X[0] - r->off[0], X[1] - r->off[1], X[2] - r->off[2]};
        for (int a = 0; a < 3; a++) p[a] = (r->R[a] * d[0] + r->R[3 + a] * d[1] + r->R[6 + a] * d[2]) / s;
    }
    if (rig_weights(r, nc, r->pc, r->wc, r->dwc) || rig_weights(r, nv, r->pv, r->wv, NULL)) {
        sim_rig_free(r);
        return base_errf(err, errlen, "rig: out of memory");
    }
    if (sim_rig_attach(r, o, err, errlen)) {
        sim_rig_free(r);
        return -1;
    }
    return 0;
}

int sim_rig_attach(SimRig *r, SimObject *o, char *err, size_t errlen) {
    char e2[512];
    /* rows 0..3: the constant handle's coefficients (rig.h: the rig carries the affine motion) */
    int64_t nbz = o->nb;
    r->rows = calloc((size_t)(4 * nbz), sizeof(double));
    r->lam = malloc(sizeof(double) * (size_t)nbz), r->mrows = malloc(sizeof(double) * (size_t)(nbz * nbz));
    if (!r->rows || !r->lam || !r->mrows) return base_errf(err, errlen, "rig: out of memory");
    for (int l = 0; l < 4; l++) r->rows[l * nbz + 4 * o->m + l] = 1;
    o->rig_rows = r->rows, o->rig_nrows = 4;
    /* the lagged elastic Hessian turns with the bones (solver.h: rig_group): each cubature point
     * in the group of its dominant bone */
    r->group = malloc(sizeof(int32_t) * (size_t)(r->nc + 1));
    if (!r->group) return base_errf(err, errlen, "rig: out of memory");
    for (int64_t c = 0; c < r->nc; c++) {
        int b = 0;
        for (int j = 1; j < r->nbones; j++)
            if (r->wc[c * r->nbones + j] > r->wc[c * r->nbones + b]) b = j;
        r->group[c] = b;
    }
    o->rig_group = r->group, o->rig_ngroups = r->nbones;
    o->newton.elastic_lag = fmin(o->newton.elastic_lag, SIM_RIG_ELASTIC_LAG);
    if (sim_object_prepare(o, e2, sizeof e2)) return base_errf(err, errlen, "rig: %s", e2);
    /* the learned subspace's modes by rig share, before the projection (they stay M-orthogonal
     * after it, with complementary share 1 − λ: rig.h) */
    r->nm = sim_rig_modes(r, o, r->lam, r->mrows);
    if (r->nm < 1) return base_errf(err, errlen, "rig: the rig-space eigenproblem failed");
    if (rig_complement(r, o)) return base_errf(err, errlen, "rig: the projection onto the rig's complement failed");
    return sim_rig_set_rank_tol(r, o, SIM_RIG_RANK_TOL, NULL, err, errlen);
}

void sim_rig_free(SimRig *r) {
    ds_procedural_free(&r->shape);
    if (r->has_clip) ds_motion_free(&r->clip);
    free(r->pc), free(r->pv), free(r->wc), free(r->dwc), free(r->wv), free(r->keys), free(r->drags);
    free(r->live), free(r->live_on), free(r->uc), free(r->F), free(r->uv);
    free(r->local), free(r->rows), free(r->lam), free(r->mrows);
    free(r->C), free(r->group);
    memset(r, 0, sizeof *r);
}

int sim_rig_bone(const SimRig *r, const char *name) {
    for (int j = 0; j < r->nbones; j++)
        if (!strcmp(r->shape.bones[j].name, name)) return j;
    return -1;
}

int sim_rig_set_clip(SimRig *r, const char *name, double fps, int nframes, uint64_t seed, int64_t bvh_start,
                     char *err, size_t errlen) {
    return sim_rig_set_clip_mapped(r, name, NULL, fps, nframes, seed, bvh_start, err, errlen);
}

int sim_rig_set_clip_mapped(SimRig *r, const char *name, const char *map, double fps, int nframes, uint64_t seed,
                            int64_t bvh_start, char *err, size_t errlen) {
    if (r->has_clip) ds_motion_free(&r->clip), r->has_clip = false;
    DsMotionOptions mo = {.fps = fps, .bvh_dir = NULL, .bvh_start = bvh_start, .map = map};
    char e2[1024];
    if (ds_motion_make(&r->shape, name, nframes, seed, &mo, &r->clip, e2, sizeof e2))
        return base_errf(err, errlen, "rig clip: %s", e2);
    r->has_clip = true;
    return 0;
}

int sim_rig_add_key(SimRig *r, const SimRigKey *k, char *err, size_t errlen) {
    if (k->bone < 0 || k->bone >= r->nbones) return base_errf(err, errlen, "rig key: no bone %d", k->bone);
    SimRigKey *n = realloc(r->keys, sizeof *n * (size_t)(r->nkeys + 1));
    if (!n) return base_errf(err, errlen, "rig: out of memory");
    r->keys = n;
    /* kept sorted by time (stable: equal times keep their order) */
    int i = r->nkeys++;
    while (i > 0 && r->keys[i - 1].t > k->t) r->keys[i] = r->keys[i - 1], i--;
    r->keys[i] = *k;
    return 0;
}

int sim_rig_add_drag(SimRig *r, const SimRigDrag *d, char *err, size_t errlen) {
    if (d->bone < 0 || d->bone >= r->nbones) return base_errf(err, errlen, "rig drag: no bone %d", d->bone);
    if (!(d->t1 >= d->t0)) return base_errf(err, errlen, "rig drag: t1 before t0");
    SimRigDrag *n = realloc(r->drags, sizeof *n * (size_t)(r->ndrags + 1));
    if (!n) return base_errf(err, errlen, "rig: out of memory");
    r->drags = n;
    r->drags[r->ndrags++] = *d;
    return 0;
}

int sim_rig_set_joint_rotation(SimRig *r, int bone, const double q[4], char *err, size_t errlen) {
    if (bone < 0 || bone >= r->nbones) return base_errf(err, errlen, "rig: no bone %d (of %d)", bone, r->nbones);
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(n > 0) || !isfinite(n)) return base_errf(err, errlen, "rig: bone %d: not a rotation", bone);
    for (int a = 0; a < 4; a++) r->live[4 * bone + a] = q[a] / n;
    r->live_on[bone] = 1;
    return 0;
}

void sim_rig_clear_joint(SimRig *r, int bone) {
    if (bone >= 0 && bone < r->nbones) r->live_on[bone] = 0;
}


void sim_rig_pose(SimRig *r, double t, double *local, double root[3]) {
    int nb = r->nbones;
    if (t > r->t_stop) t = r->t_stop;
    for (int j = 0; j < nb; j++) ds_quat_identity(local + 4 * j);
    root[0] = root[1] = root[2] = 0;
    if (r->has_clip && r->clip.nframes > 0) { /* the clip, frames slerped */
        int last = r->clip.nframes - 1;
        double fpos = t * r->clip.fps;
        if (r->loop && last > 0) { /* ping-pong: forward over [0, last], back over [last, 2 last] */
            fpos = fmod(fmax(fpos, 0), 2.0 * last);
            if (fpos > last) fpos = 2.0 * last - fpos;
        }
        if (fpos < 0) fpos = 0;
        if (fpos > last) fpos = last;
        int f0 = (int)floor(fpos), f1 = f0 < last ? f0 + 1 : f0;
        double s = fpos - f0;
        for (int j = 0; j < nb; j++)
            base_quat_slerp(r->clip.local + ((size_t)f0 * nb + j) * 4, r->clip.local + ((size_t)f1 * nb + j) * 4, s, local + 4 * j);
        for (int a = 0; a < 3; a++) root[a] = (1 - s) * r->clip.root[3 * f0 + a] + s * r->clip.root[3 * f1 + a];
    }
    for (int j = 0; j < nb; j++) { /* keyframes of bone j, composed after the clip */
        const SimRigKey *prev = NULL, *next = NULL;
        for (int k = 0; k < r->nkeys; k++) {
            if (r->keys[k].bone != j) continue;
            if (r->keys[k].t <= t) prev = &r->keys[k];
            else if (!next) next = &r->keys[k];
        }
        if (!prev && !next) continue;
        double q[4];
        if (prev && next) base_quat_slerp(prev->q, next->q, (t - prev->t) / (next->t - prev->t), q);
        else memcpy(q, prev ? prev->q : next->q, sizeof q);
        ds_quat_mul(local + 4 * j, q, local + 4 * j);
    }
    for (int d = 0; d < r->ndrags; d++) { /* joint drags: the bone's tail heads for the target */
        const SimRigDrag *dr = &r->drags[d];
        if (t < dr->t0 || t >= dr->t_release) continue;
        double s = dr->t1 > dr->t0 ? (t - dr->t0) / (dr->t1 - dr->t0) : 1;
        s = s > 1 ? 1 : s;
        double Rw[DS_RIG_MAX_BONES * 9], heads[DS_RIG_MAX_BONES * 3];
        ds_rig_fk(nb, r->shape.bones, local, root, Rw, heads, NULL);
        int j = dr->bone, par = r->shape.bones[j].parent;
        const DsBone *b = &r->shape.bones[j];
        double rest[3], cur[3], want[3], tp[3], dt_[3];
        for (int a = 0; a < 3; a++) rest[a] = (double)b->tail[a] - b->head[a];
        for (int a = 0; a < 3; a++) cur[a] = Rw[9 * j + 3 * a] * rest[0] + Rw[9 * j + 3 * a + 1] * rest[1] + Rw[9 * j + 3 * a + 2] * rest[2];
        /* the target in the rig frame: p = L⁻¹ (x − off) */
        for (int a = 0; a < 3; a++) dt_[a] = dr->target[a] - r->off[a];
        double sc = sqrt(r->L[0] * r->L[0] + r->L[3] * r->L[3] + r->L[6] * r->L[6]);
        for (int a = 0; a < 3; a++) tp[a] = (r->R[a] * dt_[0] + r->R[3 + a] * dt_[1] + r->R[6 + a] * dt_[2]) / sc;
        for (int a = 0; a < 3; a++) want[a] = tp[a] - heads[3 * j + a];
        double qb[4], qs[4], id[4], Rnew[9], Rp[9], Rl[9], ql[4];
        ds_quat_between(cur, want, qb);
        ds_quat_identity(id);
        base_quat_slerp(id, qb, s, qs);
        /* new world rotation Q·R_j; local = R_parentᵀ (Q R_j) */
        double Q[9];
        base_quat_to_mat3(qs, Q);
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
                Rnew[3 * a + c] = Q[3 * a] * Rw[9 * j + c] + Q[3 * a + 1] * Rw[9 * j + 3 + c] + Q[3 * a + 2] * Rw[9 * j + 6 + c];
        if (par >= 0) memcpy(Rp, Rw + 9 * par, sizeof Rp);
        else for (int a = 0; a < 9; a++) Rp[a] = a % 4 == 0;
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
                Rl[3 * a + c] = Rp[a] * Rnew[c] + Rp[3 + a] * Rnew[3 + c] + Rp[6 + a] * Rnew[6 + c];
        ds_quat_from_mat3(Rl, ql);
        memcpy(local + 4 * j, ql, sizeof ql);
    }
    for (int j = 0; j < nb; j++) /* live control wins */
        if (r->live_on[j]) memcpy(local + 4 * j, r->live + 4 * j, 4 * sizeof(double));
}

/* points per block of sim_rig_eval's products (its scratch on the stack: 64 × (12 + 3 · 64) doubles) */
#define EVAL_BLOCK 64

void sim_rig_eval(const SimRig *r, const double *local, const double root[3], double *uc, double *uv, double *F) {
    int nb = r->nbones;
    double skin[DS_RIG_MAX_BONES * 16];
    ds_rig_fk(nb, r->shape.bones, local, root, NULL, NULL, skin);
    double sc = sqrt(r->L[0] * r->L[0] + r->L[3] * r->L[3] + r->L[6] * r->L[6]);
    /* LBS as sim_lbs_point takes it, x = Σ_j w_j S_j p̃ and F = Σ_j w_j A_j + Σ_j (S_j p̃) ⊗ ∇w_j, by
     * blocks of points: the blended affine maps Σ_j w_j S_j (3 × 4 each) as one product W S, and
     * (for F) every bone's S_j p̃ as another, P̃ Sᵀ; then per point x = M p̃ and the 3 × 3 sum
     * over bones (the scalar per-bone loop cost 0.15 ms a step at 720 + 918 points, 12 bones) */
    double S12[DS_RIG_MAX_BONES * 12], St[4 * DS_RIG_MAX_BONES * 3];
    for (int j = 0; j < nb; j++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 4; b++) S12[12 * j + 4 * a + b] = skin[16 * j + 4 * a + b], St[b * 3 * nb + 3 * j + a] = skin[16 * j + 4 * a + b];
    double M[EVAL_BLOCK * 12], Pt[EVAL_BLOCK * 4], SP[EVAL_BLOCK * 3 * DS_RIG_MAX_BONES];
    for (int pass = 0; pass < 2; pass++) {
        int64_t n = pass ? r->nv : r->nc;
        double *u = pass ? uv : uc;
        const double *P = pass ? r->pv : r->pc, *W = pass ? r->wv : r->wc;
        bool withF = !pass && F;
        if (!u) continue;
        for (int64_t q0 = 0; q0 < n; q0 += EVAL_BLOCK) {
            int cn = (int)(n - q0 < EVAL_BLOCK ? n - q0 : EVAL_BLOCK);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cn, 12, nb, 1.0, W + q0 * nb, nb, S12, 12, 0.0, M, 12);
            if (withF) {
                for (int k = 0; k < cn; k++)
                    Pt[4 * k] = P[3 * (q0 + k)], Pt[4 * k + 1] = P[3 * (q0 + k) + 1], Pt[4 * k + 2] = P[3 * (q0 + k) + 2], Pt[4 * k + 3] = 1;
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, cn, 3 * nb, 4, 1.0, Pt, 4, St, 3 * nb, 0.0, SP, 3 * nb);
            }
            for (int k = 0; k < cn; k++) {
                int64_t q = q0 + k;
                const double *p = P + 3 * q, *Mk = M + 12 * k;
                double x[3], d[3];
                for (int a = 0; a < 3; a++) x[a] = Mk[4 * a] * p[0] + Mk[4 * a + 1] * p[1] + Mk[4 * a + 2] * p[2] + Mk[4 * a + 3];
                for (int a = 0; a < 3; a++) d[a] = x[a] - p[a];
                /* world displacement L d = sc R d */
                for (int a = 0; a < 3; a++) u[3 * q + a] = sc * (r->R[3 * a] * d[0] + r->R[3 * a + 1] * d[1] + r->R[3 * a + 2] * d[2]);
                if (!withF) continue;
                double Fp[9];
                const double *spk = SP + 3 * nb * k, *dw = r->dwc + q * nb * 3;
                /* bones outermost: nine independent sums (each in the same order as one sum at a
                 * time, which waited on its own additions: 0.06 ms a step in the bench) */
                double f00 = Mk[0], f01 = Mk[1], f02 = Mk[2], f10 = Mk[4], f11 = Mk[5], f12 = Mk[6];
                double f20 = Mk[8], f21 = Mk[9], f22 = Mk[10];
                for (int j = 0; j < nb; j++) {
                    const double s0 = spk[3 * j], s1 = spk[3 * j + 1], s2 = spk[3 * j + 2];
                    const double g0 = dw[3 * j], g1 = dw[3 * j + 1], g2 = dw[3 * j + 2];
                    f00 += s0 * g0, f01 += s0 * g1, f02 += s0 * g2;
                    f10 += s1 * g0, f11 += s1 * g1, f12 += s1 * g2;
                    f20 += s2 * g0, f21 += s2 * g1, f22 += s2 * g2;
                }
                Fp[0] = f00, Fp[1] = f01, Fp[2] = f02, Fp[3] = f10, Fp[4] = f11, Fp[5] = f12;
                Fp[6] = f20, Fp[7] = f21, Fp[8] = f22;
                double T[9]; /* R F Rᵀ */
                for (int a = 0; a < 3; a++)
                    for (int c = 0; c < 3; c++) T[3 * a + c] = r->R[3 * a] * Fp[c] + r->R[3 * a + 1] * Fp[3 + c] + r->R[3 * a + 2] * Fp[6 + c];
                for (int a = 0; a < 3; a++)
                    for (int c = 0; c < 3; c++)
                        F[9 * q + 3 * a + c] = T[3 * a] * r->R[3 * c] + T[3 * a + 1] * r->R[3 * c + 1] + T[3 * a + 2] * r->R[3 * c + 2];
            }
        }
    }
}

void sim_lbs_point(int nbones, const double *S, int stride, const double p[3], const double *w, const double *dw,
                   double x[3], double *F) {
    x[0] = x[1] = x[2] = 0;
    if (F) memset(F, 0, 9 * sizeof *F);
    for (int j = 0; j < nbones; j++) {
        const double *Sj = S + (int64_t)stride * j;
        double sp[3];
        for (int a = 0; a < 3; a++) sp[a] = Sj[4 * a] * p[0] + Sj[4 * a + 1] * p[1] + Sj[4 * a + 2] * p[2] + Sj[4 * a + 3];
        for (int a = 0; a < 3; a++) x[a] += w[j] * sp[a];
        if (F)
            for (int a = 0; a < 3; a++)
                for (int c = 0; c < 3; c++) F[3 * a + c] += w[j] * Sj[4 * a + c] + sp[a] * dw[3 * j + c];
    }
}

void sim_rig_advance(SimRig *r, SimObject *o, double t1) {
    /* the rig's acceleration enters no term: Bᵀ M a = 0 for the complementary B (rig.h) */
    sim_rig_pose(r, t1, r->local, r->root);
    sim_rig_eval(r, r->local, r->root, r->uc, r->nv ? r->uv : NULL, r->F);
    o->rig_F = r->F, o->rig_uc = r->uc, o->rig_uv = r->nv ? r->uv : NULL;
    o->rig_F_version++;
}

/* A (nc × K, K = 4 nb_rig): A[c, (j, l)] = w_cj X̃_cl in the world frame — the rig's affine maps act
 * on world rest positions as well as on the rig frame's (an affine change of frame) — and the
 * lumped masses m_c = ρ V_c. */
static void rig_basis(const SimRig *r, const SimObject *o, double *A, double *m) {
    int K = 4 * r->nbones;
    for (int64_t c = 0; c < o->nc; c++) {
        const double *X = o->Xc + 3 * c;
        double xh[4] = {X[0], X[1], X[2], 1};
        m[c] = o->rho * o->Vc[c];
        for (int j = 0; j < r->nbones; j++)
            for (int l = 0; l < 4; l++) A[c * K + 4 * j + l] = r->wc[c * r->nbones + j] * xh[l];
    }
}

/* Cholesky (lower, row-major upper = column-major lower) of the K × K Gram AᵀMA with a ridge of
 * 1e-12 of its largest diagonal (bones holding no point give zero columns). 0 or -1. */
static int gram_chol(const double *A, const double *m, int64_t nc, int K, double *Gm) {
    memset(Gm, 0, sizeof(double) * (size_t)K * K);
    for (int64_t c = 0; c < nc; c++) cblas_dsyr(CblasRowMajor, CblasUpper, K, m[c], A + c * K, 1, Gm, K);
    double dmax = 0;
    for (int k = 0; k < K; k++) dmax = fmax(dmax, Gm[k * K + k]);
    for (int k = 0; k < K; k++) Gm[k * K + k] += 1e-12 * dmax + 1e-300;
    int info = 0;
    dpotrf_("L", &K, Gm, &K, &info, 1);
    return info ? -1 : 0;
}

/* ∇_X w (world) from ∇_p w: p = Rᵀ (X − off) / s, so ∇_X w = R ∇_p w / s */
static void world_gradient(const SimRig *r, const double *dwp, double *dwx) {
    double s = sqrt(r->L[0] * r->L[0] + r->L[3] * r->L[3] + r->L[6] * r->L[6]);
    for (int a = 0; a < 3; a++) dwx[a] = (r->R[3 * a] * dwp[0] + r->R[3 * a + 1] * dwp[1] + r->R[3 * a + 2] * dwp[2]) / s;
}

/* The rig space's orthonormal basis in the mass metric: the thin SVD M½A = U Σ Vᵀ (U nc × K and Vᵀ
 * K × K column-major, as LAPACK gives them), with rank *rk: singular values above 1e-13 of the
 * largest (bones holding no point give zero columns). An SVD of M½A rather than a Cholesky of
 * AᵀMA, whose ridge would leave the weakly sampled bones' directions (σ² near the ridge) partly
 * unprojected: 1e-5 of a step's rig acceleration then leaked into B_comp. 0 or -1. */
static int rig_range(const SimRig *r, const SimObject *o, double *U, double *sv, double *VT, double *m, int *rk) {
    int64_t nc = o->nc;
    int K = 4 * r->nbones, M = (int)nc, info = 0, lwork = -1, kk = M < K ? M : K;
    double *A = malloc(sizeof(double) * (size_t)(nc * K)), *S = malloc(sizeof(double) * (size_t)(nc * K)), wq;
    double *work = NULL;
    int rc = -1;
    if (!A || !S) goto done;
    rig_basis(r, o, A, m);
    for (int64_t c = 0; c < nc; c++)
        for (int k = 0; k < K; k++) S[(size_t)k * nc + c] = sqrt(m[c]) * A[c * K + k];
    dgesvd_("S", "S", &M, &K, S, &M, sv, U, &M, VT, &kk, &wq, &lwork, &info, 1, 1);
    lwork = (int)wq;
    work = malloc(sizeof(double) * (size_t)(lwork > 1 ? lwork : 1));
    if (!work) goto done;
    dgesvd_("S", "S", &M, &K, S, &M, sv, U, &M, VT, &kk, work, &lwork, &info, 1, 1);
    if (info) goto done;
    *rk = 0;
    while (*rk < kk && sv[*rk] > 1e-13 * sv[0]) (*rk)++;
    rc = 0;
done:
    free(A), free(S), free(work);
    return rc;
}

/* B_comp = B − A C, C = (AᵀMA)⁺ AᵀM B over the learned columns (rig.h), by rig_range's SVD:
 * C = V Σ⁺ Uᵀ M½ B. The rows b, G of the cubature points and b of the vertices are replaced in
 * place. A row a(X) = [w_j(X) X̃ᵀ]_j is a smooth field, so the correction is exact everywhere: at
 * the vertices by their own rig weights, and in G by its derivative ∂_d a[4j + l] = ∂_d w_j X̃_l +
 * w_j δ_dl. A second pass (iterative refinement) takes the residual AᵀM B_comp to roundoff. 0 or -1. */
static int rig_complement(SimRig *r, SimObject *o) {
    int64_t nc = o->nc, nv = o->nv, nb = o->nb;
    int K = 4 * r->nbones, Lc = (int)(4 * o->m), nbr = r->nbones, rk = 0, kk = nc < K ? (int)nc : K;
    if (Lc == 0) return 0;
    double *A = malloc(sizeof(double) * (size_t)(nc * K)), *m = malloc(sizeof(double) * (size_t)nc);
    double *U = malloc(sizeof(double) * (size_t)(nc * K)), *sv = malloc(sizeof(double) * (size_t)K);
    double *VT = malloc(sizeof(double) * (size_t)K * K), *C = malloc(sizeof(double) * (size_t)K * Lc);
    double *Y = malloc(sizeof(double) * (size_t)K * Lc), *SB = malloc(sizeof(double) * (size_t)(nc * Lc));
    double *row = malloc(sizeof(double) * (size_t)(3 * K));
    int rc = -1;
    if (!A || !m || !U || !sv || !VT || !C || !Y || !SB || !row) goto done;
    if (rig_range(r, o, U, sv, VT, m, &rk)) goto done;
    free(r->C);
    if (!(r->C = calloc((size_t)K * Lc, sizeof(double)))) goto done;
    rig_basis(r, o, A, m);
    for (int pass = 0; pass < 2; pass++) {
        /* SB = M½ B_L (row-major nc × Lc); Y = Uᵀ SB (row-major K × Lc, rows past the rank 0; the
         * column-major U is the row-major Uᵀ) */
        for (int64_t c = 0; c < nc; c++)
            for (int q = 0; q < Lc; q++) SB[c * Lc + q] = sqrt(m[c]) * o->Bc[c * nb + q];
        memset(Y, 0, sizeof(double) * (size_t)K * Lc);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rk, Lc, (int)nc, 1.0, U, (int)nc, SB, Lc, 0.0, Y, Lc);
        for (int k = 0; k < rk; k++) cblas_dscal(Lc, 1 / sv[k], Y + (size_t)k * Lc, 1);
        /* C = V Y: Vᵀ column-major kk × K is row-major V (K × kk) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, Lc, rk, 1.0, VT, kk, Y, Lc, 0.0, C, Lc);
        cblas_daxpy(K * Lc, 1.0, C, 1, r->C, 1); /* the total over the passes (sim_rig_points_project) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nc, Lc, K, -1.0, A, K, C, Lc, 1.0, o->Bc, (int)nb);
        for (int64_t c = 0; c < nc; c++) { /* G rows: ∂_d a_c C */
            const double *X = o->Xc + 3 * c;
            double xh[4] = {X[0], X[1], X[2], 1};
            for (int j = 0; j < nbr; j++) {
                double w = r->wc[c * nbr + j], dw[3];
                world_gradient(r, r->dwc + (c * nbr + j) * 3, dw);
                for (int d = 0; d < 3; d++)
                    for (int l = 0; l < 4; l++) row[d * K + 4 * j + l] = dw[d] * xh[l] + (l == d ? w : 0);
            }
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 3, Lc, K, -1.0, row, K, C, Lc, 1.0, o->Gc + 3 * c * nb,
                        (int)nb);
        }
        for (int64_t v = 0; v < nv; v++) { /* vertex rows: a_v C */
            const double *X = o->Xv + 3 * v;
            double xh[4] = {X[0], X[1], X[2], 1};
            for (int j = 0; j < nbr; j++)
                for (int l = 0; l < 4; l++) row[4 * j + l] = r->wv[v * nbr + j] * xh[l];
            cblas_dgemv(CblasRowMajor, CblasTrans, K, Lc, -1.0, C, Lc, row, 1, 1.0, o->Bv + v * nb, 1);
        }
    }
    rc = sim_object_rows_changed(o);
done:
    free(A), free(m), free(U), free(sv), free(VT), free(C), free(Y), free(SB), free(row);
    return rc;
}

int sim_rig_set_rank_tol(SimRig *r, SimObject *o, double tol, int *kept, char *err, size_t errlen) {
    int64_t nb = o->nb;
    if (!(tol >= 0 && tol < 1)) return base_errf(err, errlen, "rig: rank_tol must be in [0, 1) (got %g)", tol);
    int ncut = 0;
    for (int i = 0; i < r->nm; i++) ncut += 1 - r->lam[i] < tol;
    if (ncut == r->nm)
        return base_errf(err, errlen, "rig: rank_tol %g leaves none of the %d modes (the largest complementary share "
                                      "is %.3g); lower it", tol, r->nm, 1 - r->lam[0]);
    double *nr = malloc(sizeof(double) * (size_t)((4 + ncut) * nb));
    if (!nr) return base_errf(err, errlen, "rig: out of memory");
    memcpy(nr, r->rows, sizeof(double) * (size_t)(4 * nb)); /* the constant handle's rows come first */
    int k = 4;
    for (int i = 0; i < r->nm; i++)
        if (1 - r->lam[i] < tol) memcpy(nr + (size_t)(k++) * nb, r->mrows + (size_t)i * nb, sizeof(double) * (size_t)nb);
    free(r->rows);
    r->rows = nr, r->rank_tol = tol;
    o->rig_rows = r->rows, o->rig_nrows = k;
    char e2[512];
    if (sim_object_prepare(o, e2, sizeof e2)) return base_errf(err, errlen, "rig: %s", e2);
    int64_t fixed_rows, free_dims;
    sim_object_constraint_info(o, &fixed_rows, &free_dims);
    r->kept = (int)(free_dims / 3);
    if (kept) *kept = r->kept;
    if (r->kept == 0) /* what the rig leaves was cut as unobservable (solver.h): too few points */
        return base_errf(err, errlen, "rig: no free mode outside the rig space (%lld cubature points against %d rig "
                                      "columns per coordinate); use more cubature points", (long long)o->nc, 4 * r->nbones);
    return 0;
}

int sim_rig_modes(const SimRig *r, SimObject *o, double *lam, double *rows) {
    int64_t nc = o->nc;
    int nb = (int)o->nb, K = 4 * r->nbones, info = 0;
    const double *N = NULL, *zp, *Lm;
    int64_t rr = sim_object_subspace(o, &N, &zp, &Lm); /* the free modes: z = N y (N NULL: all) */
    if (rr < 1) return -1;
    int R = (int)rr;
    double *A = malloc(sizeof(double) * (size_t)(nc * K)), *m = malloc(sizeof(double) * (size_t)nc);
    double *Gm = malloc(sizeof(double) * (size_t)K * K), *G = calloc((size_t)K * nb, sizeof(double));
    double *GN = malloc(sizeof(double) * (size_t)K * R), *Y = malloc(sizeof(double) * (size_t)K * R);
    double *Q = malloc(sizeof(double) * (size_t)R * R), *MN = malloc(sizeof(double) * (size_t)nb * R);
    double *U = malloc(sizeof(double) * (size_t)R * R), *work = NULL;
    int rc = -1;
    if (!A || !m || !Gm || !G || !GN || !Y || !Q || !MN || !U) goto done;
    rig_basis(r, o, A, m);
    if (gram_chol(A, m, nc, K, Gm)) goto done;
    /* G = Aᵀ M B (K × nb), GN = G N (K × R) */
    for (int64_t c = 0; c < nc; c++)
        cblas_dger(CblasRowMajor, K, nb, m[c], A + c * K, 1, o->Bc + c * nb, 1, G, nb);
    if (N) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, R, nb, 1.0, G, nb, N, R, 0.0, GN, R);
    else memcpy(GN, G, sizeof(double) * (size_t)K * nb);
    /* Y = (AᵀMA)⁻¹ GN, column-major K × R (LAPACK's layout) */
    for (int k = 0; k < K; k++)
        for (int q = 0; q < R; q++) Y[(size_t)q * K + k] = GN[(size_t)k * R + q];
    dpotrs_("L", &K, &R, Gm, &K, Y, &K, &info, 1);
    if (info) goto done;
    /* Q = GNᵀ Y (R × R) */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, R, R, K, 1.0, GN, R, Y, K, 0.0, Q, R);
    for (int p = 0; p < R; p++)
        for (int q = 0; q < p; q++) Q[p * R + q] = Q[q * R + p] = 0.5 * (Q[p * R + q] + Q[q * R + p]);
    /* the free modes' mass Nᵀ M_b N = Uᵀ U; MN = M_b N (nb × R) for the rows */
    if (N) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, R, nb, 1.0, o->Mb, nb, N, R, 0.0, MN, R);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, R, nb, 1.0, N, R, MN, R, 0.0, U, R);
    } else {
        memcpy(MN, o->Mb, sizeof(double) * (size_t)nb * nb);
        memcpy(U, o->Mb, sizeof(double) * (size_t)nb * nb);
    }
    dpotrf_("L", &R, U, &R, &info, 1); /* column-major lower = row-major upper U */
    if (info) goto done;
    for (int p = 0; p < R; p++)
        for (int q = 0; q < p; q++) U[p * R + q] = 0;
    /* S = U⁻ᵀ Q U⁻¹; its eigenvectors w give the modes y = U⁻¹ w */
    cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, R, R, 1.0, U, R, Q, R);
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, R, R, 1.0, U, R, Q, R);
    int lwork = -1;
    double wq;
    dsyev_("V", "U", &R, Q, &R, lam, &wq, &lwork, &info, 1, 1);
    lwork = (int)wq;
    work = malloc(sizeof(double) * (size_t)(lwork > 1 ? lwork : 1));
    if (!work) goto done;
    dsyev_("V", "U", &R, Q, &R, lam, work, &lwork, &info, 1, 1);
    if (info) goto done;
    /* row i = (M_b N y_i)ᵀ, y_i = U⁻¹ w_i (w_i column i of the column-major Q) */
    for (int i = 0; rows && i < R; i++) {
        double *y = Q + (size_t)i * R;
        cblas_dtrsv(CblasRowMajor, CblasUpper, CblasNoTrans, CblasNonUnit, R, U, R, y, 1);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, nb, R, 1.0, MN, R, y, 1, 0.0, rows + (size_t)i * nb, 1);
    }
    rc = R;
done:
    free(A), free(m), free(Gm), free(G), free(GN), free(Y), free(Q), free(MN), free(U), free(work);
    return rc;
}

double sim_rig_projection(const SimRig *r, const SimObject *o) {
    int64_t nc = o->nc, nb = o->nb;
    int K = 4 * r->nbones, rk = 0;
    double *U = malloc(sizeof(double) * (size_t)(nc * K)), *sv = malloc(sizeof(double) * (size_t)K);
    double *VT = malloc(sizeof(double) * (size_t)K * K), *m = malloc(sizeof(double) * (size_t)nc);
    double *u = malloc(sizeof(double) * 3 * (size_t)nc), *p = malloc(sizeof(double) * 3 * (size_t)K);
    double res = NAN;
    if (!U || !sv || !VT || !m || !u || !p || rig_range(r, o, U, sv, VT, m, &rk)) goto done;
    /* M½ u_c, u_c = B z at the cubature points (nc × 3) */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nc, 3, (int)nb, 1.0, o->Bc, (int)nb, o->z, (int)nb, 0.0,
                u, 3);
    double un = 0, pn = 0;
    for (int64_t c = 0; c < nc; c++)
        for (int i = 0; i < 3; i++) u[3 * c + i] *= sqrt(m[c]), un += u[3 * c + i] * u[3 * c + i];
    /* ‖P u‖²_M = ‖U_rᵀ M½ u‖² per coordinate */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rk, 3, (int)nc, 1.0, U, (int)nc, u, 3, 0.0, p, 3);
    for (int k = 0; k < 3 * rk; k++) pn += p[k] * p[k];
    res = un > 0 ? sqrt(pn / un) : 0;
done:
    free(U), free(sv), free(VT), free(m), free(u), free(p);
    return res;
}

/* ---- scenes ------------------------------------------------------------------------------------ */

#define RK(m) offsetof(SimSceneRigKey, m)
static const DsConfigField RIG_KEY[] = {
    {"bone", DS_CFG_STRING, RK(bone), NULL, 1, 0, .size = sizeof(((SimSceneRigKey *)0)->bone), .help = "the bone's name (procedural.h)"},
    {"t", DS_CFG_FLOAT, RK(t), NULL, 0, 1e30, .help = "time of the key (s)"},
    {"axis", DS_CFG_VEC3, RK(axis), "[0, 0, 1]", 1, 0, .help = "rotation axis (rig frame: world axes at rest)"},
    {"deg", DS_CFG_FLOAT, RK(deg), "0", -1e6, 1e6, .help = "rotation angle (degrees)"},
    {0}};
#undef RK
#define RD(m) offsetof(SimSceneRigDrag, m)
static const DsConfigField RIG_DRAG[] = {
    {"bone", DS_CFG_STRING, RD(bone), NULL, 1, 0, .size = sizeof(((SimSceneRigDrag *)0)->bone), .help = "the dragged bone (its tail heads for the target)"},
    {"target", DS_CFG_VEC3, RD(target), NULL, 1, 0, .help = "where the bone's tail is pulled to (m, world)"},
    {"t0", DS_CFG_FLOAT, RD(t0), "0", 0, 1e30, .help = "the drag starts (s)"},
    {"t1", DS_CFG_FLOAT, RD(t1), "0.5", 0, 1e30, .help = "the bone points at the target from here (s)"},
    {"t_release", DS_CFG_FLOAT, RD(t_release), "1e30", 0, 1e30, .help = "the drag lets go (s)"},
    {0}};
#undef RD
#define RS(m) offsetof(SimSceneRig, m)
const DsConfigField SIM_RIG_SCENE_FIELDS[] = {
    {"object", DS_CFG_INT, RS(object), "-1", -1, 1e6, .help = "index into objects[] of the rigged object (-1: no rig)"},
    {"clip", DS_CFG_STRING, RS(clip), "", 1, 0, .size = sizeof(((SimSceneRig *)0)->clip),
     .help = "rig motion: a motion of datasets/motion/motion.h (walk, trot, cmu_01_01, ...) or a .bvh path (\"\": none)"},
    {"clip_map", DS_CFG_STRING, RS(clip_map), "", 1, 0, .size = sizeof(((SimSceneRig *)0)->clip_map),
     .help = "a mapping JSON {rig bone: BVH joint, ...} for a .bvh clip (\"\": the built-in humanoid names)"},
    {"fps", DS_CFG_FLOAT, RS(fps), "30", 1e-3, 1e4, .help = "the clip's sampling rate (frames per second)"},
    {"frames", DS_CFG_INT, RS(frames), "0", 0, 1e7, .help = "clip frames (0: as long as the scene)"},
    {"seed", DS_CFG_INT, RS(seed), "1", 0, 9e15, .help = "seed of a procedural clip"},
    {"rank_tol", DS_CFG_FLOAT, RS(rank_tol), "1e-3", 0, 0.999999,
     .help = "drop the modes whose complement of the rig space holds less than this share of their mass-weighted norm² (sim_rig_set_rank_tol)"},
    {"loop", DS_CFG_BOOL, RS(loop), "false", 1, 0, .help = "play the clip forward and back for as long as the scene runs"},
    {"bvh_start", DS_CFG_INT, RS(bvh_start), "-1", -1, 1e9, .help = "BVH clip: first source frame (-1: the clip's default)"},
    {"t_stop", DS_CFG_FLOAT, RS(t_stop), "1e30", 0, 1e30, .help = "the rig holds its pose from this time on (s)"},
    {"sigma", DS_CFG_FLOAT, RS(sigma), "0", 0, 10, .help = "softness of the rig's LBS weights (0: procedural.h's default)"},
    {"keys", DS_CFG_ARRAY, RS(keys), "[]", 0, 1e9, .fields = RIG_KEY, .elem_size = sizeof(SimSceneRigKey),
     .count_offset = RS(nkeys), .help = "keyframed local rotations per bone (slerp between keys)"},
    {"drags", DS_CFG_ARRAY, RS(drags), "[]", 0, 1e9, .fields = RIG_DRAG, .elem_size = sizeof(SimSceneRigDrag),
     .count_offset = RS(ndrags), .help = "scripted joint drags"},
    {0}};
#undef RS


int sim_rig_from_scene(SimRig *r, SimObject *o, const SimSceneRig *sr, const char *category, uint64_t seed,
                       int mesh_res, const double center[3], double k, const SimPose *pose, const char *scene_dir,
                       double duration, char *err, size_t errlen) {
    if (sim_rig_init(r, o, category, seed, mesh_res, (float)sr->sigma, center, k, pose, err, errlen)) return -1;
    r->t_stop = sr->t_stop, r->loop = sr->loop;
    if (sr->rank_tol != SIM_RIG_RANK_TOL && sim_rig_set_rank_tol(r, o, sr->rank_tol, NULL, err, errlen)) goto fail;
    if (sr->clip[0]) {
        char path[2048];
        size_t len = strlen(sr->clip);
        /* a .bvh path is relative to the scene; a motion name is not a path */
        if (len > 4 && !strcmp(sr->clip + len - 4, ".bvh") && sr->clip[0] != '/' && scene_dir)
            snprintf(path, sizeof path, "%s/%s", scene_dir, sr->clip);
        else
            snprintf(path, sizeof path, "%s", sr->clip);
        char map[2048] = "";
        if (sr->clip_map[0] && sr->clip_map[0] != '/' && scene_dir)
            snprintf(map, sizeof map, "%s/%s", scene_dir, sr->clip_map);
        else
            snprintf(map, sizeof map, "%s", sr->clip_map);
        int frames = sr->frames > 0 ? (int)sr->frames : (int)ceil(duration * sr->fps) + 2;
        if (sim_rig_set_clip_mapped(r, path, map, sr->fps, frames, (uint64_t)sr->seed, sr->bvh_start, err, errlen))
            goto fail;
    } else if (sr->clip_map[0]) {
        base_errf(err, errlen, "rig: clip_map %s without a clip", sr->clip_map);
        goto fail;
    }
    for (int i = 0; i < sr->nkeys; i++) {
        const SimSceneRigKey *kk = &sr->keys[i];
        SimRigKey key = {.bone = sim_rig_bone(r, kk->bone), .t = kk->t};
        if (key.bone < 0) {
            base_errf(err, errlen, "rig.keys[%d].bone: %s has no bone '%s'", i, category, kk->bone);
            goto fail;
        }
        ds_quat_axis_angle(kk->axis, kk->deg * M_PI / 180, key.q);
        if (sim_rig_add_key(r, &key, err, errlen)) goto fail;
    }
    for (int i = 0; i < sr->ndrags; i++) {
        const SimSceneRigDrag *dd = &sr->drags[i];
        SimRigDrag d = {.bone = sim_rig_bone(r, dd->bone), .t0 = dd->t0, .t1 = dd->t1, .t_release = dd->t_release};
        memcpy(d.target, dd->target, sizeof d.target);
        if (d.bone < 0) {
            base_errf(err, errlen, "rig.drags[%d].bone: %s has no bone '%s'", i, category, dd->bone);
            goto fail;
        }
        if (sim_rig_add_drag(r, &d, err, errlen)) goto fail;
    }
    return 0;
fail:
    sim_rig_free(r);
    return -1;
}

static void put_px(DsImage *im, int x, int y, const uint8_t c[3]) {
    if (x < 0 || y < 0 || x >= im->w || y >= im->h) return;
    memcpy(im->data + 3 * ((size_t)y * im->w + x), c, 3);
}

/* a line by unit steps along its longer axis, 2 px thick */
static void line(DsImage *im, double x0, double y0, double x1, double y1, const uint8_t c[3]) {
    int n = (int)ceil(fmax(fabs(x1 - x0), fabs(y1 - y0))) + 1;
    for (int i = 0; i <= n; i++) {
        double s = (double)i / n, x = x0 + s * (x1 - x0), y = y0 + s * (y1 - y0);
        put_px(im, (int)lround(x), (int)lround(y), c), put_px(im, (int)lround(x) + 1, (int)lround(y), c);
        put_px(im, (int)lround(x), (int)lround(y) + 1, c);
    }
}

int sim_rig_write_plot(const char *path, int64_t n, const double *t, const double *v, double t_mark, int w, int h,
                       char *err, size_t errlen) {
    DsImage im;
    if (ds_image_init(&im, w, h, 3, err, errlen)) return -1;
    memset(im.data, 255, (size_t)w * h * 3);
    double tmax = 0, vmax = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) tmax = fmax(tmax, t[i]), vmax = fmax(vmax, v[i]);
    if (!(tmax > 0)) tmax = 1;
    if (!(vmax > 0)) vmax = 1;
    int mx = 40, my = 30;
    double W = w - 2 * mx, H = h - 2 * my;
    static const uint8_t gray[3] = {120, 120, 120}, light[3] = {225, 225, 225}, blue[3] = {30, 80, 200}, red[3] = {210, 40, 40};
    for (int k = 1; k <= 4; k++) line(&im, mx, my + H * (1 - k / 4.0), mx + W, my + H * (1 - k / 4.0), light);
    line(&im, mx, my + H, mx + W, my + H, gray), line(&im, mx, my, mx, my + H, gray);
    if (t_mark > 0 && t_mark < tmax) line(&im, mx + W * t_mark / tmax, my, mx + W * t_mark / tmax, my + H, red);
    for (int64_t i = 1; i < n; i++)
        if (isfinite(v[i - 1]) && isfinite(v[i]))
            line(&im, mx + W * t[i - 1] / tmax, my + H * (1 - v[i - 1] / vmax), mx + W * t[i] / tmax,
                 my + H * (1 - v[i] / vmax), blue);
    int rc = ds_image_write(path, &im, err, errlen);
    ds_image_free(&im);
    return rc;
}

/* ---- the rig at other points (rig.h) ---------------------------------------------------------- */

void sim_rig_points_free(SimRigPoints *pts) {
    free(pts->p), free(pts->w), free(pts->dw);
    memset(pts, 0, sizeof *pts);
}

int sim_rig_points_init(const SimRig *r, int64_t n, const double *X, SimRigPoints *pts, char *err, size_t errlen) {
    memset(pts, 0, sizeof *pts);
    int nb = r->nbones;
    pts->n = n;
    pts->p = malloc(sizeof(double) * 3 * (size_t)(n + 1)), pts->w = malloc(sizeof(double) * (size_t)((n + 1) * nb));
    pts->dw = calloc((size_t)((n + 1) * nb * 3), sizeof(double));
    if (!pts->p || !pts->w || !pts->dw) {
        sim_rig_points_free(pts);
        return base_errf(err, errlen, "rig: out of memory for %lld points", (long long)n);
    }
    /* p = L⁻¹ (X − off), L = s R (as sim_rig_init maps the object's points) */
    double s = sqrt(r->L[0] * r->L[0] + r->L[3] * r->L[3] + r->L[6] * r->L[6]);
    for (int64_t q = 0; q < n; q++) {
        double d[3] = {X[3 * q] - r->off[0], X[3 * q + 1] - r->off[1], X[3 * q + 2] - r->off[2]};
        for (int a = 0; a < 3; a++)
            pts->p[3 * q + a] = (r->R[a] * d[0] + r->R[3 + a] * d[1] + r->R[6 + a] * d[2]) / s;
    }
    if (rig_weights(r, n, pts->p, pts->w, pts->dw)) {
        sim_rig_points_free(pts);
        return base_errf(err, errlen, "rig: out of memory for %lld points", (long long)n);
    }
    return 0;
}

void sim_rig_points_eval(const SimRig *r, const SimRigPoints *pts, const double *local, const double root[3], double *u,
                         double *F) {
    /* the points as the cubature set of a view of the rig: sim_rig_eval's LBS and F_r, unchanged */
    SimRig v = *r;
    v.nc = pts->n, v.pc = pts->p, v.wc = pts->w, v.dwc = pts->dw;
    v.nv = 0, v.pv = NULL, v.wv = NULL;
    sim_rig_eval(&v, local, root, u, NULL, F);
}

void sim_rig_points_project(const SimRig *r, const SimRigPoints *pts, const double *X, int64_t nb, double *B, double *G) {
    if (!r->C) return;
    int K = 4 * r->nbones, nbr = r->nbones, Lc = (int)(nb / 4 - 1) * 4;
    double *row = malloc(sizeof(double) * (size_t)(3 * K));
    if (!row) return;
    for (int64_t p = 0; p < pts->n; p++) { /* as rig_complement does the object's rows */
        const double *x = X + 3 * p;
        double xh[4] = {x[0], x[1], x[2], 1};
        for (int j = 0; j < nbr; j++)
            for (int l = 0; l < 4; l++) row[4 * j + l] = pts->w[p * nbr + j] * xh[l];
        cblas_dgemv(CblasRowMajor, CblasTrans, K, Lc, -1.0, r->C, Lc, row, 1, 1.0, B + p * nb, 1);
        for (int j = 0; j < nbr; j++) {
            double dw[3];
            world_gradient(r, pts->dw + (p * nbr + j) * 3, dw);
            for (int d = 0; d < 3; d++)
                for (int l = 0; l < 4; l++) row[d * K + 4 * j + l] = dw[d] * xh[l] + (l == d ? pts->w[p * nbr + j] : 0);
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 3, Lc, K, -1.0, row, K, r->C, Lc, 1.0, G + 3 * p * nb, (int)nb);
    }
    free(row);
}
