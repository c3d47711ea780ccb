/* models/partmm/partmm.c — PartMM (partmm.h). */
#include "models/partmm/partmm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "models/skelebones/cluster.h"

void pm_options_defaults(PmOptions *o) {
    o->patch = 7;
    o->k = 7;
    o->levels = 5;
    o->lambda = 0.7;
    o->power = 2;
    o->align = PM_ALIGN_BONE;
    o->global_part = 0;
    o->match_root = 0;
}

double pm_geodesic(const float a[4], const float b[4]) {
    /* θ = 2φ for the angle φ between the unit quaternions (of the same hemisphere), from
     * φ/2 = atan2(|a − b|, |a + b|): accurate for small angles and exactly 0 for equal inputs,
     * where 2 acos⟨a, b⟩ loses half the digits (acos of 1 − ε is √(2ε)) */
    double na = 0, nb = 0, dot = 0;
    for (int c = 0; c < 4; c++) na += (double)a[c] * a[c], nb += (double)b[c] * b[c], dot += (double)a[c] * b[c];
    na = na > 0 ? 1 / sqrt(na) : 0, nb = nb > 0 ? (dot < 0 ? -1 : 1) / sqrt(nb) : 0;
    double dm = 0, dp = 0;
    for (int c = 0; c < 4; c++) {
        double x = a[c] * na, y = b[c] * nb;
        dm += (x - y) * (x - y), dp += (x + y) * (x + y);
    }
    return 4 * atan2(sqrt(dm), sqrt(dp));
}

void pm_align_rotations(int n, const double *A, const double *Bm, const double *w, double R[9]) {
    double M[9] = {0};
    for (int j = 0; j < n; j++) {
        double wj = w ? w[j] : 1;
        const double *a = A + j * 9, *b = Bm + j * 9;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                M[r * 3 + c] += wj * (b[r * 3] * a[c * 3] + b[r * 3 + 1] * a[c * 3 + 1] + b[r * 3 + 2] * a[c * 3 + 2]);
    }
    sb_rotation_from_cov(M, R);
}

/* blending accumulator: Σ w R, Σ w T, Σ w */
typedef struct {
    double M[9], T[3], w;
} Acc;

static inline void acc_add(Acc *a, const double R[9], const double T[3], double w) {
    for (int k = 0; k < 9; k++) a->M[k] += w * R[k];
    for (int k = 0; k < 3; k++) a->T[k] += w * T[k];
    a->w += w;
}

/* adds bone transform T (3×4) moved by the rigid change x ↦ Q (x − pd) + pq: R = Q T_R,
 * t = Q (T_t − pd) + pq */
static inline void acc_add_moved(Acc *a, const double Q[9], const double pd[3], const double pq[3], const double *T,
                                 double w) {
    double R[9], tt[3], x[3];
    for (int r = 0; r < 3; r++) {
        for (int q = 0; q < 3; q++) R[r * 3 + q] = Q[r * 3] * T[q] + Q[r * 3 + 1] * T[4 + q] + Q[r * 3 + 2] * T[8 + q];
        x[r] = T[r * 4 + 3] - pd[r];
    }
    for (int r = 0; r < 3; r++) tt[r] = Q[r * 3] * x[0] + Q[r * 3 + 1] * x[1] + Q[r * 3 + 2] * x[2] + pq[r];
    acc_add(a, R, tt, w);
}

static inline void acc_done(const Acc *a, double out[12]) {
    double R[9];
    sb_rotation_from_cov(a->M, R);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) out[r * 4 + c] = R[r * 3 + c];
        out[r * 4 + 3] = a->w > 0 ? a->T[r] / a->w : 0;
    }
}

static inline void split12(const double *T, double R[9], double t[3]) {
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) R[r * 3 + c] = T[r * 4 + c];
        t[r] = T[r * 4 + 3];
    }
}

void pm_blend(int n, const double *T, const double *w, double out[12]) {
    Acc a = {{0}, {0}, 0};
    for (int i = 0; i < n; i++) {
        double R[9], t[3];
        split12(T + i * 12, R, t);
        acc_add(&a, R, t, w[i]);
    }
    acc_done(&a, out);
}

int pm_level_stride(int levels, int l) { return 1 << (levels - l); }

int pm_level_active(int Q, int F, int p, int s) {
    int64_t span = (int64_t)(p - 1) * s + 1;
    return span <= Q && span <= F;
}

void pm_db_free(PmDatabase *db) {
    free(db->rest), free(db->parents), free(db->rot), free(db->grot), free(db->gpos), free(db->tb), free(db->parts);
    free(db->bone_part), free(db->bone_joint);
    memset(db, 0, sizeof *db);
}

static int check_tree(int J, const int32_t *parents, char *err, size_t errlen) {
    for (int j = 0; j < J; j++)
        if (parents[j] >= j || parents[j] < -1 || (parents[j] == -1) != (j == 0))
            return base_errf(err, errlen, "partmm: joint %d has parent %d (the root must be joint 0, parents first)", j,
                             parents[j]);
    return 0;
}

/* FK of one frame: local quaternions (float, normalized here) and the root translation → global
 * rotations (J × 9) and positions (J × 3) */
static void frame_fk(const SbTree *tree, const float *q, const float *trans, double *grot, double *gpos) {
    int J = tree->njoints;
    double rq[SB_IK_MAX_JOINTS * 4], tr[3] = {trans[0], trans[1], trans[2]};
    for (int j = 0; j < J; j++) {
        double n = 0;
        for (int c = 0; c < 4; c++) n += (double)q[j * 4 + c] * q[j * 4 + c];
        n = n > 0 ? 1 / sqrt(n) : 0;
        for (int c = 0; c < 4; c++) rq[j * 4 + c] = n > 0 ? q[j * 4 + c] * n : (c == 0);
    }
    sb_fk(tree, rq, tr, gpos, grot);
}

int pm_db_build(PmDatabase *db, int F, int J, int B, int P, const float *rot, const float *trans, const double *rest,
                const int32_t *parents, const float *tb, const uint8_t *parts, const double *bone_part,
                const double *bone_joint, char *err, size_t errlen) {
    memset(db, 0, sizeof *db);
    if (F < 1 || J < 1 || J > SB_IK_MAX_JOINTS || B < 1 || P < 1)
        return base_errf(err, errlen, "partmm: database of %d frames, %d joints (1..%d), %d bones, %d parts", F, J,
                         SB_IK_MAX_JOINTS, B, P);
    if (check_tree(J, parents, err, errlen)) return -1;
    for (int p = 0; p < P; p++) {
        int n = 0;
        for (int j = 0; j < J; j++) n += parts[p * J + j] != 0;
        if (!n) return base_errf(err, errlen, "partmm: part %d has no joints", p);
    }
    db->F = F, db->J = J, db->B = B, db->P = P;
    db->rest = malloc(sizeof(double) * J * 3);
    db->parents = malloc(sizeof(int32_t) * J);
    db->rot = malloc(sizeof(float) * F * J * 4);
    db->grot = malloc(sizeof(double) * F * J * 9);
    db->gpos = malloc(sizeof(double) * F * J * 3);
    db->tb = malloc(sizeof(double) * F * B * 12);
    db->parts = malloc((size_t)P * J);
    db->bone_part = malloc(sizeof(double) * B * P);
    db->bone_joint = bone_joint ? malloc(sizeof(double) * B * J) : NULL;
    if (!db->rest || !db->parents || !db->rot || !db->grot || !db->gpos || !db->tb || !db->parts || !db->bone_part ||
        (bone_joint && !db->bone_joint)) {
        pm_db_free(db);
        return base_errf(err, errlen, "partmm: out of memory (database of %d frames)", F);
    }
    memcpy(db->rest, rest, sizeof(double) * J * 3);
    memcpy(db->parents, parents, sizeof(int32_t) * J);
    memcpy(db->parts, parts, (size_t)P * J);
    for (int64_t i = 0; i < (int64_t)F * B * 12; i++) db->tb[i] = tb[i];
    SbTree tree = {J, db->rest, db->parents};
    for (int f = 0; f < F; f++) {
        for (int j = 0; j < J; j++) {
            const float *q = rot + ((int64_t)f * J + j) * 4;
            double n = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
            double s = (n > 0 ? 1 / n : 0) * (q[0] < 0 ? -1 : 1);
            float *o = db->rot + ((int64_t)f * J + j) * 4;
            for (int c = 0; c < 4; c++) o[c] = n > 0 ? (float)(q[c] * s) : (float)(c == 0);
        }
        frame_fk(&tree, db->rot + (int64_t)f * J * 4, trans + f * 3, db->grot + (int64_t)f * J * 9,
                 db->gpos + (int64_t)f * J * 3);
    }
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (int p = 0; p < P; p++) s += bone_part[b * P + p] > 0 ? bone_part[b * P + p] : 0;
        for (int p = 0; p < P; p++)
            db->bone_part[b * P + p] = s > 0 ? (bone_part[b * P + p] > 0 ? bone_part[b * P + p] / s : 0) : 1.0 / P;
    }
    for (int b = 0; bone_joint && b < B; b++)
        for (int j = 0; j < J; j++) db->bone_joint[b * J + j] = bone_joint[b * J + j] > 0 ? bone_joint[b * J + j] : 0;
    return 0;
}

/* What one part's synthesis shares (read-only) */
typedef struct {
    const PmDatabase *db;
    const PmOptions *o;
    int Q, P;             /* P: parts in use (1 with global_part) */
    const float *qrot;    /* Q × J × 4 */
    const double *qgrot;  /* Q × J × 9 */
    const double *qgpos;  /* Q × J × 3 */
    const double *dist;   /* P × Q × F: Σ over the part's joints of θ(query t, database f) */
} Ctx;

static inline int in_part(const Ctx *c, int p, int j) { return c->o->global_part ? 1 : c->db->parts[p * c->db->J + j]; }
static inline double bone_w(const Ctx *c, int p, int b) { return c->o->global_part ? 1 : c->db->bone_part[b * c->db->P + p]; }

/* One level of one part: T̄ (Q × B × 12, rows of bones outside the part untouched) */
static void part_level(const Ctx *c, int p, int s, int pp, Acc *acc, double *tbar, int *covered, int *idx, double *dk,
                       double *bj_w) {
    const PmDatabase *db = c->db;
    int Q = c->Q, F = db->F, J = db->J, B = db->B, K = c->o->k;
    int nq = Q - (pp - 1) * s, nl = F - (pp - 1) * s;
    if (K > nl) K = nl;
    const double *D = c->dist + (int64_t)p * Q * F;
    memset(acc, 0, sizeof(Acc) * Q * B);
    memset(covered, 0, sizeof(int) * Q);
    int pj[SB_IK_MAX_JOINTS], npj = 0;
    for (int j = 0; j < J; j++)
        if (in_part(c, p, j)) pj[npj++] = j;
    int pb[256], npb = 0; /* B ≤ SB_MAX_BONES (64) */
    for (int b = 0; b < B && npb < 256; b++)
        if (bone_w(c, p, b) > 0) pb[npb++] = b;
    double A[SB_IK_MAX_JOINTS * 9], Bq[SB_IK_MAX_JOINTS * 9];
    /* per-bone alignment: the bone's share of each of the part's joints, renormalized over them
     * (a bone none of the part's joints drives falls back to the part's alignment: uniform) */
    if (c->o->align == PM_ALIGN_BONE && db->bone_joint)
        for (int e = 0; e < npb; e++) {
            double sum = 0;
            for (int a = 0; a < npj; a++) sum += db->bone_joint[pb[e] * J + pj[a]];
            for (int a = 0; a < npj; a++) bj_w[e * npj + a] = sum > 0 ? db->bone_joint[pb[e] * J + pj[a]] / sum : 1.0 / npj;
        }
    for (int u = 0; u < nq; u++) {
        /* the K nearest patches, by insertion into a sorted list */
        int n = 0;
        for (int l = 0; l < nl; l++) {
            double d = 0;
            for (int i = 0; i < pp; i++) d += D[(int64_t)(u + i * s) * F + l + i * s];
            if (n == K && d >= dk[K - 1]) continue;
            int at = n < K ? n++ : K - 1;
            while (at > 0 && dk[at - 1] > d) dk[at] = dk[at - 1], idx[at] = idx[at - 1], at--;
            dk[at] = d, idx[at] = l;
        }
        /* Shepard weights; exact matches take everything */
        double w[64], ws = 0;
        const double exact = 1e-12;
        if (dk[0] <= exact)
            for (int m = 0; m < n; m++) w[m] = dk[m] <= exact;
        else
            for (int m = 0; m < n; m++) w[m] = pow(dk[m], -c->o->power);
        for (int m = 0; m < n; m++) ws += w[m];
        for (int m = 0; m < n; m++) w[m] /= ws;
        for (int m = 0; m < n; m++) {
            if (!(w[m] > 0)) continue;
            for (int i = 0; i < pp; i++) {
                int t = u + i * s, f = idx[m] + i * s;
                covered[t] = 1;
                if (c->o->align == PM_ALIGN_BONE && db->bone_joint) {
                    /* each joint's frame change, database → query: S_q,j ∘ S_db,j⁻¹ = [G_q G_dbᵀ | p_q − G_q G_dbᵀ p_db] */
                    for (int a = 0; a < npj; a++) {
                        int j = pj[a];
                        const double *Gd = db->grot + ((int64_t)f * J + j) * 9, *Gq = c->qgrot + ((int64_t)t * J + j) * 9;
                        double *Rj = A + a * 9;
                        for (int r = 0; r < 3; r++)
                            for (int q = 0; q < 3; q++)
                                Rj[r * 3 + q] = Gq[r * 3] * Gd[q * 3] + Gq[r * 3 + 1] * Gd[q * 3 + 1] + Gq[r * 3 + 2] * Gd[q * 3 + 2];
                    }
                    for (int e = 0; e < npb; e++) {
                        int b = pb[e];
                        const double *T = db->tb + ((int64_t)f * B + b) * 12;
                        for (int a = 0; a < npj; a++) {
                            double wj = bj_w[e * npj + a];
                            if (!(wj > 0)) continue;
                            int j = pj[a];
                            const double *Rj = A + a * 9, *pd = db->gpos + ((int64_t)f * J + j) * 3,
                                         *pq = c->qgpos + ((int64_t)t * J + j) * 3;
                            acc_add_moved(&acc[(int64_t)t * B + b], Rj, pd, pq, T, w[m] * wj);
                        }
                    }
                    continue;
                }
                double Ra[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, cq[3] = {0}, cd[3] = {0};
                if (c->o->align != PM_ALIGN_NONE) {
                    for (int a = 0; a < npj; a++) {
                        int j = pj[a];
                        memcpy(A + a * 9, db->grot + ((int64_t)f * J + j) * 9, sizeof(double) * 9);
                        memcpy(Bq + a * 9, c->qgrot + ((int64_t)t * J + j) * 9, sizeof(double) * 9);
                        for (int k = 0; k < 3; k++)
                            cd[k] += db->gpos[((int64_t)f * J + j) * 3 + k] / npj,
                                cq[k] += c->qgpos[((int64_t)t * J + j) * 3 + k] / npj;
                    }
                    pm_align_rotations(npj, A, Bq, NULL, Ra);
                }
                for (int e = 0; e < npb; e++) {
                    int b = pb[e];
                    const double *T = db->tb + ((int64_t)f * B + b) * 12;
                    acc_add_moved(&acc[(int64_t)t * B + b], Ra, cd, cq, T, w[m]);
                }
            }
        }
    }
    for (int t = 0; t < Q; t++)
        if (covered[t])
            for (int e = 0; e < npb; e++) acc_done(&acc[(int64_t)t * B + pb[e]], tbar + ((int64_t)t * B + pb[e]) * 12);
    /* frames no window of this stride reaches (short queries): blended from the nearest covered
     * frames before and after, by their distance in time — the upsampling of a pyramid level */
    for (int t = 0; t < Q; t++) {
        if (covered[t]) continue;
        int t0 = t - 1, t1 = t + 1;
        while (t0 >= 0 && !covered[t0]) t0--;
        while (t1 < Q && !covered[t1]) t1++;
        for (int e = 0; e < npb; e++) {
            int b = pb[e];
            double two[24], w2[2];
            int m = 0;
            if (t0 >= 0) memcpy(two + 12 * m, tbar + ((int64_t)t0 * B + b) * 12, 96), w2[m++] = t1 < Q ? t1 - t : 1;
            if (t1 < Q) memcpy(two + 12 * m, tbar + ((int64_t)t1 * B + b) * 12, 96), w2[m++] = t0 >= 0 ? t - t0 : 1;
            pm_blend(m, two, w2, tbar + ((int64_t)t * B + b) * 12);
        }
    }
}

int pm_synthesize(const PmDatabase *db, int Q, const float *rot, const float *trans, const PmOptions *o, float *out,
                  char *err, size_t errlen) {
    if (Q < 1) return base_errf(err, errlen, "partmm: a query of %d frames", Q);
    if (o->patch < 1 || o->k < 1 || o->k > 64 || o->levels < 1 || o->levels > 12 || !(o->lambda >= 0 && o->lambda <= 1) ||
        !(o->power >= 0) || o->align < PM_ALIGN_NONE || o->align > PM_ALIGN_BONE)
        return base_errf(err, errlen,
                         "partmm: options out of range (patch %d >= 1, k %d in 1..64, levels %d in 1..12, lambda %g in "
                         "[0, 1], power %g >= 0)",
                         o->patch, o->k, o->levels, o->lambda, o->power);
    int F = db->F, J = db->J, B = db->B, P = o->global_part ? 1 : db->P;
    /* patches never longer than the query or the database */
    int pp = o->patch;
    if (pp > Q) pp = Q;
    if (pp > F) pp = F;
    SbTree tree = {J, db->rest, db->parents};
    float *qrot = malloc(sizeof(float) * Q * J * 4);
    double *qgrot = malloc(sizeof(double) * Q * J * 9), *qgpos = malloc(sizeof(double) * Q * J * 3);
    double *dist = malloc(sizeof(double) * P * Q * F);
    double *cur = malloc(sizeof(double) * P * Q * B * 12); /* T^ℓ per part */
    if (!qrot || !qgrot || !qgpos || !dist || !cur) {
        free(qrot), free(qgrot), free(qgpos), free(dist), free(cur);
        return base_errf(err, errlen, "partmm: out of memory (%d query frames)", Q);
    }
    for (int t = 0; t < Q; t++) {
        for (int j = 0; j < J; j++) {
            const float *q = rot + ((int64_t)t * J + j) * 4;
            double n = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
            for (int c = 0; c < 4; c++) qrot[((int64_t)t * J + j) * 4 + c] = n > 0 ? (float)(q[c] / n) : (float)(c == 0);
        }
        frame_fk(&tree, qrot + (int64_t)t * J * 4, trans + t * 3, qgrot + (int64_t)t * J * 9, qgpos + (int64_t)t * J * 3);
    }
    /* per-joint geodesics summed into the parts: Q × F × J distances, once for every level */
    memset(dist, 0, sizeof(double) * P * Q * F);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < Q; t++) {
        for (int f = 0; f < F; f++) {
            double th[SB_IK_MAX_JOINTS];
            for (int j = 0; j < J; j++) th[j] = pm_geodesic(qrot + ((int64_t)t * J + j) * 4, db->rot + ((int64_t)f * J + j) * 4);
            for (int p = 0; p < P; p++) {
                double d = 0;
                for (int j = 0; j < J; j++)
                    if ((o->global_part || db->parts[p * J + j]) && (o->match_root || db->parents[j] >= 0)) d += th[j];
                dist[((int64_t)p * Q + t) * F + f] = d;
            }
        }
    }
    Ctx c = {db, o, Q, P, qrot, qgrot, qgpos, dist};
    int fail = 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (int p = 0; p < P; p++) {
        Acc *acc = malloc(sizeof(Acc) * Q * B);
        double *tbar = malloc(sizeof(double) * Q * B * 12);
        int *covered = malloc(sizeof(int) * Q), idx[64];
        double dk[64], *bjw = malloc(sizeof(double) * (B + 1) * J);
        if (!acc || !tbar || !covered || !bjw) {
#pragma omp atomic write
            fail = 1;
            free(acc), free(tbar), free(covered), free(bjw);
            continue;
        }
        double *T = cur + (int64_t)p * Q * B * 12;
        int first = 1;
        for (int l = 1; l <= o->levels; l++) {
            int s = pm_level_stride(o->levels, l);
            if (!pm_level_active(Q, F, pp, s)) continue;
            part_level(&c, p, s, pp, acc, tbar, covered, idx, dk, bjw);
            for (int t = 0; t < Q; t++)
                for (int b = 0; b < B; b++) {
                    if (!(bone_w(&c, p, b) > 0)) continue;
                    double *x = T + ((int64_t)t * B + b) * 12, *y = tbar + ((int64_t)t * B + b) * 12;
                    if (first) {
                        memcpy(x, y, 96);
                    } else {
                        double two[24], w2[2] = {1 - o->lambda, o->lambda};
                        memcpy(two, x, 96), memcpy(two + 12, y, 96);
                        pm_blend(2, two, w2, x);
                    }
                }
            first = 0;
        }
        free(acc), free(tbar), free(covered), free(bjw);
    }
    if (!fail) {
        /* each bone over its parts */
        for (int t = 0; t < Q; t++)
            for (int b = 0; b < B; b++) {
                double Ts[64 * 12], w[64];
                int m = 0;
                for (int p = 0; p < P && m < 64; p++) {
                    double wb = bone_w(&c, p, b);
                    if (!(wb > 0)) continue;
                    memcpy(Ts + 12 * m, cur + (((int64_t)p * Q + t) * B + b) * 12, 96);
                    w[m++] = wb;
                }
                double r[12];
                pm_blend(m, Ts, w, r);
                for (int k = 0; k < 12; k++) out[((int64_t)t * B + b) * 12 + k] = (float)r[k];
            }
    }
    free(qrot), free(qgrot), free(qgpos), free(dist), free(cur);
    if (fail) return base_errf(err, errlen, "partmm: out of memory (%d query frames)", Q);
    return 0;
}
