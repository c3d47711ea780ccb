/* models/partmm/rig.c — rig.h5 for PartMM (rig.h). */
#include "models/partmm/rig.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/finite.h"
#include "base/h5file.h"
#include "datasets/motion/rig.h"
#include "models/skelebones/cluster.h"

void pm_rig_free(PmRig *r) {
    free(r->points), free(r->weights), free(r->tb), free(r->rest), free(r->parents), free(r->rot), free(r->trans);
    free(r->parts);
    memset(r, 0, sizeof *r);
}

int pm_rig_load(const char *path, PmRig *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    base_h5_quiet();
    hid_t f = base_h5_open_read(path, "rig (anima skelebones' rig.h5)", err, errlen);
    if (f < 0) return -1;
    int64_t dp[2], dw[2], dt[4], dj[2], dpa[1], dq[3], dtr[2], dparts[2];
    void *points = NULL, *weights = NULL, *tb = NULL, *rest = NULL, *parents = NULL, *rot = NULL, *trans = NULL,
         *parts = NULL;
    int rc = base_h5_read_dims(f, path, "rest/points", 2, dp, H5T_NATIVE_FLOAT, 4, false, &points, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "bones/weights", 2, dw, H5T_NATIVE_FLOAT, 4, false, &weights, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "bones/transforms", 4, dt, H5T_NATIVE_FLOAT, 4, false, &tb, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "ik/rest_joints", 2, dj, H5T_NATIVE_DOUBLE, 8, false, &rest, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "ik/parents", 1, dpa, H5T_NATIVE_INT32, 4, false, &parents, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "ik/rotations", 3, dq, H5T_NATIVE_FLOAT, 4, false, &rot, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "ik/translation", 2, dtr, H5T_NATIVE_FLOAT, 4, false, &trans, err, errlen);
    rc = rc ? rc : base_h5_read_dims(f, path, "joints/parts", 2, dparts, H5T_NATIVE_UINT8, 1, false, &parts, err, errlen);
    H5Fclose(f);
    r->points = points, r->weights = weights, r->tb = tb, r->rest = rest, r->parents = parents, r->rot = rot;
    r->trans = trans, r->parts = parts;
    if (rc) {
        pm_rig_free(r);
        return -1;
    }
    r->n = (int64_t)dp[0], r->B = (int)dw[1], r->F = (int)dt[0], r->J = (int)dj[0], r->P = (int)dparts[0];
    const char *bad = NULL;
    if (dp[1] != 3) bad = "rest/points is not N × 3";
    else if (dw[0] != dp[0]) bad = "bones/weights has another point count than rest/points";
    else if (dt[1] != dw[1] || dt[2] != 3 || dt[3] != 4) bad = "bones/transforms is not F × B × 3 × 4";
    else if (dj[1] != 3 || dpa[0] != dj[0]) bad = "ik/rest_joints and ik/parents disagree";
    else if (dq[0] != dt[0] || dq[1] != dj[0] || dq[2] != 4) bad = "ik/rotations is not F × J × 4";
    else if (dtr[0] != dt[0] || dtr[1] != 3) bad = "ik/translation is not F × 3";
    else if (dparts[1] != dj[0] || dparts[0] < 1) bad = "joints/parts is not P × J (with the IK's J)";
    else if (r->J < 1 || r->J > SB_IK_MAX_JOINTS) bad = "the tree has no joints or more than the IK allows";
    else if (r->F < 1 || r->B < 1 || r->n < 1) bad = "it has no frames, bones or points";
    else if (!base_all_finite_f(r->points, (size_t)r->n * 3) || !base_all_finite_f(r->weights, (size_t)r->n * r->B) ||
             !base_all_finite_f(r->tb, (size_t)r->F * r->B * 12) || !base_all_finite_f(r->rot, (size_t)r->F * r->J * 4) ||
             !base_all_finite_f(r->trans, (size_t)r->F * 3))
        bad = "it holds a non-finite value";
    for (int j = 0; !bad && j < r->J; j++)
        if (r->parents[j] >= j || r->parents[j] < -1 || (r->parents[j] == -1) != (j == 0))
            bad = "ik/parents is not parents-first with joint 0 the root";
    if (bad) {
        pm_rig_free(r);
        return base_errf(err, errlen, "%s: %s", path, bad);
    }
    return 0;
}

static double seg_dist2(const double *a, const double *b, const float *p) {
    double ab[3], ap[3], l2 = 0, t = 0;
    for (int c = 0; c < 3; c++) ab[c] = b[c] - a[c], ap[c] = p[c] - a[c], l2 += ab[c] * ab[c], t += ab[c] * ap[c];
    t = l2 > 0 ? t / l2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double d = 0;
    for (int c = 0; c < 3; c++) {
        double x = ap[c] - t * ab[c];
        d += x * x;
    }
    return d;
}

void pm_bind_points(int J, const double *rest, const int32_t *parents, int64_t n, const float *points, int32_t *out) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double best = INFINITY;
        int bj = 0;
        for (int j = 1; j < J; j++) {
            double d = seg_dist2(rest + parents[j] * 3, rest + j * 3, points + i * 3);
            if (d < best) best = d, bj = parents[j];
        }
        out[i] = bj;
    }
}

void pm_bone_joint_shares(int64_t n, int B, int J, const float *weights, const int32_t *bind, double *bone_joint) {
    memset(bone_joint, 0, sizeof(double) * B * J);
    for (int64_t i = 0; i < n; i++)
        for (int b = 0; b < B; b++) bone_joint[b * J + bind[i]] += weights[i * B + b];
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (int j = 0; j < J; j++) s += bone_joint[b * J + j];
        for (int j = 0; j < J; j++) bone_joint[b * J + j] = s > 0 ? bone_joint[b * J + j] / s : 1.0 / J;
    }
}

void pm_bone_parts(int64_t n, int B, int J, int P, const float *weights, const int32_t *bind, const uint8_t *parts,
                   double *bone_part) {
    double *a = malloc(sizeof(double) * B * J);
    pm_bone_joint_shares(n, B, J, weights, bind, a);
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (int p = 0; p < P; p++) {
            double v = 0;
            for (int j = 0; j < J; j++)
                if (parts[p * J + j]) v += a[b * J + j];
            bone_part[b * P + p] = v, s += v;
        }
        for (int p = 0; p < P; p++) bone_part[b * P + p] = s > 0 ? bone_part[b * P + p] / s : 1.0 / P;
    }
    free(a);
}

/* Rigid fit of the rest points of a group onto frame t: out [R | T]; 0 when fewer than 3 points */
static int group_fit(int64_t m, const int64_t *idx, const float *points, const float *obs, double *buf, double out[12]) {
    if (m < 3) return 0;
    double *p = buf, *q = buf + m * 3;
    for (int64_t k = 0; k < m; k++)
        for (int c = 0; c < 3; c++) p[k * 3 + c] = points[idx[k] * 3 + c], q[k * 3 + c] = obs[idx[k] * 3 + c];
    sb_kabsch(m, p, q, NULL, out);
    return 1;
}

int pm_pose_from_points(const PmRig *r, int F, const float *observed, int64_t max_points, const SbIkOptions *o,
                        float *rot, float *trans, char *err, size_t errlen) {
    int J = r->J;
    int64_t n = r->n;
    if (F < 1 || max_points < 1) return base_errf(err, errlen, "partmm: IK of %d frames on %lld points", F, (long long)max_points);
    int32_t *bind = malloc(sizeof(int32_t) * n);
    int64_t *order = malloc(sizeof(int64_t) * n), *start = calloc((size_t)J + 1, sizeof(int64_t));
    double *buf = malloc(sizeof(double) * n * 6), *fits = malloc(sizeof(double) * J * 12);
    int *has = malloc(sizeof(int) * J);
    int64_t np = n < max_points ? n : max_points;
    float *pts = malloc(sizeof(float) * np * 3), *pw = calloc((size_t)np * J, sizeof(float));
    float *pobs = malloc(sizeof(float) * (size_t)F * np * 3);
    double *nodes = malloc(sizeof(double) * (size_t)F * J * 3);
    int64_t *off = malloc(sizeof(int64_t) * (F + 1));
    int rc = 0;
    if (!bind || !order || !start || !buf || !fits || !has || !pts || !pw || !pobs || !nodes || !off) {
        rc = base_errf(err, errlen, "partmm: out of memory (IK of %d frames)", F);
        goto done;
    }
    pm_bind_points(J, r->rest, r->parents, n, r->points, bind);
    /* the points of each joint's group, contiguous */
    for (int64_t i = 0; i < n; i++) start[bind[i] + 1]++;
    for (int j = 0; j < J; j++) start[j + 1] += start[j];
    {
        int64_t *fill = calloc((size_t)J, sizeof(int64_t));
        if (!fill) {
            rc = base_errf(err, errlen, "partmm: out of memory");
            goto done;
        }
        for (int64_t i = 0; i < n; i++) order[start[bind[i]] + fill[bind[i]]++] = i;
        free(fill);
    }
    off[0] = 0;
    for (int t = 0; t < F; t++) {
        const float *obs = observed + (int64_t)t * n * 3;
        for (int j = 0; j < J; j++) has[j] = group_fit(start[j + 1] - start[j], order + start[j], r->points, obs, buf, fits + j * 12);
        int64_t m = off[t];
        for (int j = 0; j < J; j++) {
            /* a joint sits where its own group and its parent's meet: both fits carry it */
            const double *x = r->rest + j * 3;
            double acc[3] = {0};
            int cnt = 0;
            int cand[2] = {j, r->parents[j]};
            for (int c = 0; c < 2; c++) {
                int g = cand[c];
                if (g < 0 || !has[g]) continue;
                const double *T = fits + g * 12;
                for (int k = 0; k < 3; k++) acc[k] += T[k * 4] * x[0] + T[k * 4 + 1] * x[1] + T[k * 4 + 2] * x[2] + T[k * 4 + 3];
                cnt++;
            }
            if (!cnt) continue;
            for (int k = 0; k < 3; k++) nodes[m * 3 + k] = acc[k] / cnt;
            m++;
        }
        if (m == off[t]) {
            rc = base_errf(err, errlen, "partmm: frame %d: no joint group has 3 points to fit", t);
            goto done;
        }
        off[t + 1] = m;
    }
    /* the point term: evenly strided points, each bound rigidly to its joint */
    for (int64_t k = 0; k < np; k++) {
        int64_t i = k * n / np;
        memcpy(pts + k * 3, r->points + i * 3, sizeof(float) * 3);
        pw[k * J + bind[i]] = 1;
        for (int t = 0; t < F; t++) memcpy(pobs + ((int64_t)t * np + k) * 3, observed + ((int64_t)t * n + i) * 3, sizeof(float) * 3);
    }
    {
        SbIkOptions io;
        if (o) io = *o;
        else sb_ik_defaults(&io);
        SbTree tree = {J, r->rest, r->parents};
        SbIkResult res;
        if (sb_ik_solve(&tree, F, nodes, off, np, pts, pw, pobs, &io, &res, err, errlen)) {
            rc = -1;
            goto done;
        }
        for (int64_t k = 0; k < (int64_t)F * J * 4; k++) rot[k] = (float)res.rotations[k];
        for (int64_t k = 0; k < (int64_t)F * 3; k++) trans[k] = (float)res.translation[k];
        sb_ik_result_free(&res);
    }
done:
    free(bind), free(order), free(start), free(buf), free(fits), free(has), free(pts), free(pw), free(pobs), free(nodes);
    free(off);
    return rc;
}

int pm_pose_by_fits(const PmRig *r, int F, const float *observed, float *rot, float *trans, char *err, size_t errlen) {
    int J = r->J;
    int64_t n = r->n;
    if (F < 1) return base_errf(err, errlen, "partmm: a pose of %d frames", F);
    int32_t *bind = malloc(sizeof(int32_t) * n);
    int64_t *order = malloc(sizeof(int64_t) * n), *start = calloc((size_t)J + 1, sizeof(int64_t));
    int64_t *fill = calloc((size_t)J, sizeof(int64_t));
    int rc = 0;
    if (!bind || !order || !start || !fill) {
        rc = base_errf(err, errlen, "partmm: out of memory (a pose of %d frames)", F);
        goto done;
    }
    pm_bind_points(J, r->rest, r->parents, n, r->points, bind);
    for (int64_t i = 0; i < n; i++) start[bind[i] + 1]++;
    for (int j = 0; j < J; j++) start[j + 1] += start[j];
    for (int64_t i = 0; i < n; i++) order[start[bind[i]] + fill[bind[i]]++] = i;
    int fail = 0;
#pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < F; t++) {
        const float *obs = observed + (int64_t)t * n * 3;
        double G[SB_IK_MAX_JOINTS * 9], T[12], troot[3] = {0, 0, 0};
        double *buf = malloc(sizeof(double) * (n > 0 ? n : 1) * 6);
        if (!buf) {
#pragma omp atomic write
            fail = 1;
            continue;
        }
        for (int j = 0; j < J; j++) {
            int p = r->parents[j];
            if (group_fit(start[j + 1] - start[j], order + start[j], r->points, obs, buf, T)) {
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++) G[j * 9 + a * 3 + b] = T[a * 4 + b];
                if (p < 0) /* p_root = T(x_root) = x_root + translation */
                    for (int a = 0; a < 3; a++)
                        troot[a] = T[a * 4] * r->rest[0] + T[a * 4 + 1] * r->rest[1] + T[a * 4 + 2] * r->rest[2] + T[a * 4 + 3] - r->rest[a];
            } else if (p >= 0) {
                memcpy(G + j * 9, G + p * 9, sizeof(double) * 9); /* no group of its own: rigid with its parent */
            } else {
                for (int k = 0; k < 9; k++) G[k] = k % 4 == 0;
            }
            /* the local rotation L_j = G_parentᵀ G_j (FK: G_j = G_parent L_j) */
            double L[9], q[4];
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    double v = 0;
                    for (int k = 0; k < 3; k++) v += (p >= 0 ? G[p * 9 + k * 3 + a] : (double)(k == a)) * G[j * 9 + k * 3 + b];
                    L[a * 3 + b] = v;
                }
            ds_quat_from_mat3(L, q);
            double s = q[0] < 0 ? -1 : 1;
            for (int k = 0; k < 4; k++) rot[((int64_t)t * J + j) * 4 + k] = (float)(s * q[k]);
        }
        for (int a = 0; a < 3; a++) trans[t * 3 + a] = (float)troot[a];
        free(buf);
    }
    if (fail) rc = base_errf(err, errlen, "partmm: out of memory (a pose of %d frames)", F);
done:
    free(bind), free(order), free(start), free(fill);
    return rc;
}

void pm_skin_transforms(int J, const double *rest, const int32_t *parents, int F, const float *rot, const float *trans,
                        float *out) {
    SbTree tree = {J, rest, parents};
#pragma omp parallel for schedule(static)
    for (int t = 0; t < F; t++) {
        double q[SB_IK_MAX_JOINTS * 4], tr[3], pos[SB_IK_MAX_JOINTS * 3], G[SB_IK_MAX_JOINTS * 9];
        for (int j = 0; j < J; j++) {
            const float *s = rot + ((int64_t)t * J + j) * 4;
            double nn = sqrt((double)s[0] * s[0] + (double)s[1] * s[1] + (double)s[2] * s[2] + (double)s[3] * s[3]);
            for (int c = 0; c < 4; c++) q[j * 4 + c] = nn > 0 ? s[c] / nn : (c == 0);
        }
        for (int c = 0; c < 3; c++) tr[c] = trans[t * 3 + c];
        sb_fk(&tree, q, tr, pos, G);
        for (int j = 0; j < J; j++) {
            float *o = out + ((int64_t)t * J + j) * 12;
            const double *g = G + j * 9, *x = rest + j * 3;
            for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 3; b++) o[a * 4 + b] = (float)g[a * 3 + b];
                o[a * 4 + 3] = (float)(pos[j * 3 + a] - (g[a * 3] * x[0] + g[a * 3 + 1] * x[1] + g[a * 3 + 2] * x[2]));
            }
        }
    }
}

void pm_bone_joints(const PmRig *r, int32_t *out) {
    for (int b = 0; b < r->B; b++) {
        double c[3] = {0}, ws = 0;
        for (int64_t i = 0; i < r->n; i++) {
            double w = r->weights[i * r->B + b];
            for (int k = 0; k < 3; k++) c[k] += w * r->points[i * 3 + k];
            ws += w;
        }
        for (int k = 0; k < 3; k++) c[k] = ws > 0 ? c[k] / ws : 0;
        double best = INFINITY;
        out[b] = 0;
        for (int j = 0; j < r->J; j++) {
            double d = 0;
            for (int k = 0; k < 3; k++) d += (c[k] - r->rest[j * 3 + k]) * (c[k] - r->rest[j * 3 + k]);
            if (d < best) best = d, out[b] = j;
        }
    }
}

void pm_lbs(int64_t n, int B, const float *rest, const float *weights, const float *tb, float *out) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float *u = rest + i * 3;
        double v[3] = {0};
        for (int b = 0; b < B; b++) {
            double w = weights[i * B + b];
            if (w == 0) continue;
            const float *T = tb + (int64_t)b * 12;
            for (int k = 0; k < 3; k++) v[k] += w * (T[k * 4] * u[0] + T[k * 4 + 1] * u[1] + T[k * 4 + 2] * u[2] + T[k * 4 + 3]);
        }
        for (int k = 0; k < 3; k++) out[i * 3 + k] = (float)v[k];
    }
}

void pm_lbs_frames(int F, int64_t n, int B, const float *rest, const float *weights, const float *tb, float *out) {
    for (int t = 0; t < F; t++) pm_lbs(n, B, rest, weights, tb + (int64_t)t * B * 12, out + (int64_t)t * n * 3);
}
