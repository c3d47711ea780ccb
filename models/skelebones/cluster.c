/* models/skelebones/cluster.c — Horn's rotation fit, weighted Kabsch and LBG-VQ motion
 * clustering (cluster.h). */
#include "models/skelebones/cluster.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"

/* Eigen-decomposition of a symmetric 4 × 4 matrix by cyclic Jacobi rotations (exact enough after
 * a few sweeps at this size); a is destroyed, vec's columns are the eigenvectors. */
static void jacobi4(double a[4][4], double val[4], double vec[4][4]) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) vec[i][j] = i == j;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = 0, diag = 0;
        for (int i = 0; i < 4; i++) {
            diag += a[i][i] * a[i][i];
            for (int j = i + 1; j < 4; j++) off += a[i][j] * a[i][j];
        }
        if (off <= 1e-30 * diag || off == 0) break;
        for (int p = 0; p < 4; p++)
            for (int q = p + 1; q < 4; q++) {
                if (a[p][q] == 0) continue;
                double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 4; k++) { /* columns p, q */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq, a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 4; k++) { /* rows p, q */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk, a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 4; k++) {
                    double vkp = vec[k][p], vkq = vec[k][q];
                    vec[k][p] = c * vkp - s * vkq, vec[k][q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < 4; i++) val[i] = a[i][i];
}

void sb_rotation_from_cov(const double M[9], double R[9]) {
    /* Horn 1987: S_ab = Σ p_a q_b = M[b][a] */
    double Sxx = M[0], Syx = M[1], Szx = M[2], Sxy = M[3], Syy = M[4], Szy = M[5], Sxz = M[6], Syz = M[7], Szz = M[8];
    double N[4][4] = {{Sxx + Syy + Szz, Syz - Szy, Szx - Sxz, Sxy - Syx},
                      {Syz - Szy, Sxx - Syy - Szz, Sxy + Syx, Szx + Sxz},
                      {Szx - Sxz, Sxy + Syx, -Sxx + Syy - Szz, Syz + Szy},
                      {Sxy - Syx, Szx + Sxz, Syz + Szy, -Sxx - Syy + Szz}};
    double val[4], vec[4][4];
    jacobi4(N, val, vec);
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (val[i] > val[best]) best = i;
    double w = vec[0][best], x = vec[1][best], y = vec[2][best], z = vec[3][best];
    double nrm = sqrt(w * w + x * x + y * y + z * z);
    if (!(nrm > 0)) w = 1, x = y = z = 0, nrm = 1;
    double q[4] = {w / nrm, x / nrm, y / nrm, z / nrm};
    base_unit_quat_to_mat3(q, R);
}

double sb_kabsch(int64_t n, const double *p, const double *q, const double *w, double out[12]) {
    double ws = 0, pc[3] = {0}, qc[3] = {0};
    for (int64_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1;
        ws += wi;
        for (int c = 0; c < 3; c++) pc[c] += wi * p[i * 3 + c], qc[c] += wi * q[i * 3 + c];
    }
    memset(out, 0, 12 * sizeof(double));
    out[0] = out[5] = out[10] = 1;
    if (!(ws > 0)) return 0;
    for (int c = 0; c < 3; c++) pc[c] /= ws, qc[c] /= ws;
    double M[9] = {0};
    for (int64_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1, a[3], b[3];
        for (int c = 0; c < 3; c++) a[c] = p[i * 3 + c] - pc[c], b[c] = q[i * 3 + c] - qc[c];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) M[r * 3 + c] += wi * b[r] * a[c];
    }
    double R[9];
    sb_rotation_from_cov(M, R);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) out[r * 4 + c] = R[r * 3 + c];
        out[r * 4 + 3] = qc[r] - (R[r * 3] * pc[0] + R[r * 3 + 1] * pc[1] + R[r * 3 + 2] * pc[2]);
    }
    return ws;
}

void sb_cluster_defaults(SbClusterOptions *o) {
    o->bones = 10;
    o->rounds = 8;
    o->min_points = 3;
}

void sb_clusters_free(SbClusters *c) {
    free(c->labels), free(c->transforms);
    memset(c, 0, sizeof *c);
}

static inline double apply_err(const double *T, const float *u, const float *v) {
    double e = 0;
    for (int r = 0; r < 3; r++) {
        double x = T[r * 4] * u[0] + T[r * 4 + 1] * u[1] + T[r * 4 + 2] * u[2] + T[r * 4 + 3] - v[r];
        e += x * x;
    }
    return e;
}

double sb_point_bone_error(int nframes, int64_t npoints, int nbones, const float *rest, const float *pos,
                           const double *transforms, int64_t i, int j) {
    double e = 0;
    for (int t = 0; t < nframes; t++)
        e += apply_err(transforms + ((int64_t)t * nbones + j) * 12, rest + i * 3, pos + ((int64_t)t * npoints + i) * 3);
    return e;
}

/* Fits every cluster's transform in every frame from its members (plain Kabsch, all weights 1);
 * an empty cluster keeps the identity. Frames are independent: one OpenMP task each. */
static void fit_all(int F, int64_t N, int B, const float *rest, const float *pos, const int32_t *labels,
                    double *T) {
    /* rest centroids and counts per cluster, shared by all frames */
    double *pc = calloc((size_t)B * 4, sizeof(double));
    for (int64_t i = 0; i < N; i++) {
        double *c = pc + labels[i] * 4;
        for (int k = 0; k < 3; k++) c[k] += rest[i * 3 + k];
        c[3] += 1;
    }
    for (int j = 0; j < B; j++)
        if (pc[j * 4 + 3] > 0)
            for (int k = 0; k < 3; k++) pc[j * 4 + k] /= pc[j * 4 + 3];
#pragma omp parallel for schedule(dynamic)
    for (int t = 0; t < F; t++) {
        double *qc = calloc((size_t)B * 3, sizeof(double)), *M = calloc((size_t)B * 9, sizeof(double));
        const float *v = pos + (int64_t)t * N * 3;
        for (int64_t i = 0; i < N; i++)
            for (int k = 0; k < 3; k++) qc[labels[i] * 3 + k] += v[i * 3 + k];
        for (int j = 0; j < B; j++)
            if (pc[j * 4 + 3] > 0)
                for (int k = 0; k < 3; k++) qc[j * 3 + k] /= pc[j * 4 + 3];
        for (int64_t i = 0; i < N; i++) {
            int j = labels[i];
            double a[3], b[3];
            for (int k = 0; k < 3; k++) a[k] = rest[i * 3 + k] - pc[j * 4 + k], b[k] = v[i * 3 + k] - qc[j * 3 + k];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) M[j * 9 + r * 3 + c] += b[r] * a[c];
        }
        for (int j = 0; j < B; j++) {
            double *o = T + ((int64_t)t * B + j) * 12, R[9];
            sb_rotation_from_cov(M + j * 9, R);
            if (!(pc[j * 4 + 3] > 0)) memset(R, 0, sizeof R), R[0] = R[4] = R[8] = 1;
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++) o[r * 4 + c] = R[r * 3 + c];
                o[r * 4 + 3] = qc[j * 3 + r] - (R[r * 3] * pc[j * 4] + R[r * 3 + 1] * pc[j * 4 + 1] + R[r * 3 + 2] * pc[j * 4 + 2]);
            }
        }
        free(qc), free(M);
    }
    free(pc);
}

/* err (N × B): every point's error under every bone, over all frames. */
static void all_errors(int F, int64_t N, int B, const float *rest, const float *pos, const double *T, double *err) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < N; i++)
        for (int j = 0; j < B; j++) err[i * B + j] = sb_point_bone_error(F, N, B, rest, pos, T, i, j);
}

/* Assigns each point to its least-error bone among the live ones; returns how many changed. */
static int64_t reassign(int64_t N, int B, const double *err, const int *alive, int32_t *labels) {
    int64_t changed = 0;
    for (int64_t i = 0; i < N; i++) {
        int best = -1;
        for (int j = 0; j < B; j++)
            if (alive[j] && (best < 0 || err[i * B + j] < err[i * B + best])) best = j;
        if (best >= 0 && best != labels[i]) labels[i] = best, changed++;
    }
    return changed;
}

/* Renumbers labels so that the clusters with members are 0..k-1 in order of first appearance of
 * their old index (deterministic); returns k and compacts T to match. */
static int compact(int F, int64_t N, int B, int32_t *labels, double *T) {
    int map[SB_MAX_BONES], k = 0;
    int64_t count[SB_MAX_BONES] = {0};
    for (int64_t i = 0; i < N; i++) count[labels[i]]++;
    for (int j = 0; j < B; j++) map[j] = count[j] > 0 ? k++ : -1;
    for (int64_t i = 0; i < N; i++) labels[i] = map[labels[i]];
    for (int t = 0; t < F; t++)
        for (int j = 0; j < B; j++)
            if (map[j] >= 0)
                memmove(T + ((int64_t)t * k + map[j]) * 12, T + ((int64_t)t * B + j) * 12, 12 * sizeof(double));
    return k;
}

int sb_cluster_lbgvq(int F, int64_t N, const float *rest, const float *pos, const SbClusterOptions *o,
                     SbClusters *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (F < 1 || N < 1 || !rest || !pos) {
        snprintf(err, errlen, "clustering: no frames or no points (%d frames, %lld points)", F, (long long)N);
        return -1;
    }
    if (o->bones < 1 || o->bones > SB_MAX_BONES) {
        snprintf(err, errlen, "clustering: the bone count must be 1..%d, got %d", SB_MAX_BONES, o->bones);
        return -1;
    }
    int minpts = o->min_points < 3 ? 3 : o->min_points, rounds = o->rounds < 1 ? 1 : o->rounds;
    int32_t *labels = calloc((size_t)N, sizeof(int32_t));
    double *T = malloc((size_t)F * SB_MAX_BONES * 12 * sizeof(double));
    double *E = malloc((size_t)N * SB_MAX_BONES * sizeof(double));
    if (!labels || !T || !E) {
        free(labels), free(T), free(E);
        snprintf(err, errlen, "clustering: out of memory (%lld points, %d frames)", (long long)N, F);
        return -1;
    }
    int B = 1;
    fit_all(F, N, B, rest, pos, labels, T);
    all_errors(F, N, B, rest, pos, T, E);
    while (B < o->bones) {
        /* cluster errors, centroids and counts */
        double cerr[SB_MAX_BONES] = {0}, cen[SB_MAX_BONES][3] = {{0}};
        int64_t cnt[SB_MAX_BONES] = {0};
        for (int64_t i = 0; i < N; i++) {
            int j = labels[i];
            cerr[j] += E[i * B + j], cnt[j]++;
            for (int k = 0; k < 3; k++) cen[j][k] += rest[i * 3 + k];
        }
        for (int j = 0; j < B; j++)
            for (int k = 0; k < 3; k++) cen[j][k] /= cnt[j] > 0 ? (double)cnt[j] : 1;
        /* the clusters to split: largest error first, only those big enough to leave two viable halves */
        int order[SB_MAX_BONES], n = 0;
        for (int j = 0; j < B; j++)
            if (cnt[j] >= 2 * minpts && cerr[j] > 0) order[n++] = j;
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0 && cerr[order[b]] > cerr[order[b - 1]]; b--) {
                int tmp = order[b];
                order[b] = order[b - 1], order[b - 1] = tmp;
            }
        int nsplit = n < o->bones - B ? n : o->bones - B;
        if (nsplit == 0) break;
        int Bn = B, before = B;
        for (int s = 0; s < nsplit; s++) {
            int j = order[s];
            double emin = INFINITY, dmin = INFINITY;
            for (int64_t i = 0; i < N; i++)
                if (labels[i] == j) {
                    double d = sqrt(pow(rest[i * 3] - cen[j][0], 2) + pow(rest[i * 3 + 1] - cen[j][1], 2) +
                                    pow(rest[i * 3 + 2] - cen[j][2], 2));
                    if (E[i * B + j] < emin) emin = E[i * B + j];
                    if (d < dmin) dmin = d;
                }
            int64_t seed = -1;
            double best = -1;
            for (int64_t i = 0; i < N; i++)
                if (labels[i] == j) {
                    double d = sqrt(pow(rest[i * 3] - cen[j][0], 2) + pow(rest[i * 3 + 1] - cen[j][1], 2) +
                                    pow(rest[i * 3 + 2] - cen[j][2], 2));
                    double score = (E[i * B + j] - emin) * (d - dmin);
                    if (score > best) best = score, seed = i;
                }
            if (seed < 0) continue;
            /* the members nearer the seed than the centroid move to the new cluster */
            for (int64_t i = 0; i < N; i++)
                if (labels[i] == j) {
                    double ds = 0, dc = 0;
                    for (int k = 0; k < 3; k++)
                        ds += pow(rest[i * 3 + k] - rest[seed * 3 + k], 2), dc += pow(rest[i * 3 + k] - cen[j][k], 2);
                    if (ds < dc) labels[i] = Bn;
                }
            Bn++;
        }
        B = Bn;
        for (int r = 0; r < rounds; r++) {
            fit_all(F, N, B, rest, pos, labels, T);
            all_errors(F, N, B, rest, pos, T, E);
            int alive[SB_MAX_BONES];
            for (int j = 0; j < B; j++) alive[j] = 1;
            int64_t changed = reassign(N, B, E, alive, labels);
            /* prune the clusters under min_points: their points go to the best live bone */
            int64_t cnt2[SB_MAX_BONES] = {0};
            for (int64_t i = 0; i < N; i++) cnt2[labels[i]]++;
            int pruned = 0;
            for (int j = 0; j < B; j++)
                if (cnt2[j] < minpts) alive[j] = 0, pruned++;
            if (pruned) {
                reassign(N, B, E, alive, labels);
                /* reassign keeps labels of points already on a live bone; move the dead ones */
                for (int64_t i = 0; i < N; i++)
                    if (!alive[labels[i]]) {
                        int best = -1;
                        for (int j = 0; j < B; j++)
                            if (alive[j] && (best < 0 || E[i * B + j] < E[i * B + best])) best = j;
                        labels[i] = best;
                    }
            }
            int Bc = compact(F, N, B, labels, T);
            if (Bc != B) {
                B = Bc;
                fit_all(F, N, B, rest, pos, labels, T);
                all_errors(F, N, B, rest, pos, T, E);
            }
            if (changed == 0 && !pruned) break;
        }
        fit_all(F, N, B, rest, pos, labels, T);
        all_errors(F, N, B, rest, pos, T, E);
        if (B <= before) break; /* every new cluster pruned: no growth */
    }
    double total = 0;
    for (int64_t i = 0; i < N; i++) total += E[i * B + labels[i]];
    out->nframes = F, out->npoints = N, out->nbones = B;
    out->labels = labels;
    out->transforms = realloc(T, (size_t)F * B * 12 * sizeof(double));
    if (!out->transforms) out->transforms = T;
    out->rmse = sqrt(total / ((double)F * (double)N));
    free(E);
    return 0;
}

int sb_cluster_random(int F, int64_t N, const float *rest, const float *pos, int bones, uint64_t seed, SbClusters *out,
                      char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (F < 1 || N < 1 || bones < 1 || bones > SB_MAX_BONES || bones > N) {
        snprintf(err, errlen, "random clusters: %d bones for %lld points and %d frames", bones, (long long)N, F);
        return -1;
    }
    int64_t picks[SB_MAX_BONES];
    int n = 0;
    uint64_t s = seed * 2862933555777941757ULL + 3037000493ULL;
    while (n < bones) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t c = (int64_t)((s >> 17) % (uint64_t)N);
        int dup = 0;
        for (int k = 0; k < n; k++) dup |= picks[k] == c;
        if (!dup) picks[n++] = c;
    }
    int32_t *labels = malloc((size_t)N * sizeof(int32_t));
    double *T = malloc((size_t)F * bones * 12 * sizeof(double));
    if (!labels || !T) {
        free(labels), free(T);
        snprintf(err, errlen, "random clusters: out of memory");
        return -1;
    }
    for (int64_t i = 0; i < N; i++) {
        int best = 0;
        double bd = INFINITY;
        for (int k = 0; k < bones; k++) {
            double d = 0;
            for (int c = 0; c < 3; c++) d += pow(rest[i * 3 + c] - rest[picks[k] * 3 + c], 2);
            if (d < bd) bd = d, best = k;
        }
        labels[i] = best;
    }
    fit_all(F, N, bones, rest, pos, labels, T);
    double total = 0;
    for (int64_t i = 0; i < N; i++) total += sb_point_bone_error(F, N, bones, rest, pos, T, i, labels[i]);
    out->nframes = F, out->npoints = N, out->nbones = bones;
    out->labels = labels, out->transforms = T;
    out->rmse = sqrt(total / ((double)F * (double)N));
    return 0;
}

int sb_cluster_labels_cb(void *user, int nframes, int64_t npoints, const float *rest, const float *pos,
                         int32_t *labels) {
    SbClusterOptions o;
    sb_cluster_defaults(&o);
    o.bones = *(const int *)user;
    SbClusters c;
    char err[256];
    if (sb_cluster_lbgvq(nframes, npoints, rest, pos, &o, &c, err, sizeof err)) return -1;
    memcpy(labels, c.labels, sizeof(int32_t) * (size_t)npoints);
    sb_clusters_free(&c);
    return 0;
}
