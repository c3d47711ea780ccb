/* sim/contact.c — the IPC barrier, the spatial-hash broad phase and point–point CCD (see
 * contact.h; Li et al. 2020, "Incremental Potential Contact"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/contact.h"

double sim_barrier(double d, double dhat, double *db, double *d2b) {
    if (!(d > 0)) {
        if (db) *db = -INFINITY;
        if (d2b) *d2b = INFINITY;
        return INFINITY;
    }
    if (d >= dhat) {
        if (db) *db = 0;
        if (d2b) *d2b = 0;
        return 0;
    }
    double l = log(d / dhat), r = dhat / d;
    if (db) *db = (dhat - d) * (2 * l - r + 1);
    if (d2b) *d2b = (r + 2) * r - 2 * l - 3;
    return -(d - dhat) * (d - dhat) * l;
}

double sim_barrier_pair_curvature(double d, double dhat) {
    double d2b;
    sim_barrier(d, dhat, NULL, &d2b);
    return d2b > 0 ? d2b : 0;
}

void sim_contact_set_free(SimContactSet *s) {
    free(s->pairs), free(s->keys), free(s->ent), free(s->count), free(s->cell), free(s->use), free(s->box);
    memset(s, 0, sizeof *s);
}

static int push_pair(SimContactSet *s, int32_t a, int32_t p, int32_t b, int32_t q) {
    if (s->n == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 1024;
        SimContactPair *np = realloc(s->pairs, sizeof *np * (size_t)cap);
        if (!np) return -1;
        s->pairs = np, s->cap = cap;
    }
    if (a > b) {
        int32_t t = a;
        a = b, b = t, t = p, p = q, q = t;
    }
    s->pairs[s->n++] = (SimContactPair){.a = a, .b = b, .p = p, .q = q};
    return 0;
}

static void point_box(const SimContactBody *B, int64_t p, double margin, double lo[3], double hi[3]) {
    for (int i = 0; i < 3; i++) {
        double x0 = B->x[3 * p + i], x1 = B->dx ? x0 + B->dx[3 * p + i] : x0;
        lo[i] = fmin(x0, x1) - margin, hi[i] = fmax(x0, x1) + margin;
    }
}

static uint64_t cell_key(int64_t ix, int64_t iy, int64_t iz) {
    uint64_t h = (uint64_t)ix * 0x9E3779B97F4A7C15ull ^ (uint64_t)iy * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)iz * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

int sim_contact_broad_phase(const SimContactBody *bodies, int nbodies, double margin, SimContactSet *out) {
    out->n = 0;
    if (nbodies < 2) return 0;
    int64_t total = 0;
    for (int b = 0; b < nbodies; b++) total += bodies[b].np;
    /* every point's swept, inflated box once (lo, hi), and the bodies' boxes */
    double (*blo)[3] = malloc(sizeof(double[3]) * (size_t)nbodies), (*bhi)[3] = malloc(sizeof(double[3]) * (size_t)nbodies);
    int64_t *boff = malloc(sizeof(int64_t) * (size_t)(nbodies + 1));
    if (!blo || !bhi || !boff) goto oom;
    if (out->use_cap < total) {
        unsigned char *u = realloc(out->use, (size_t)total + 1);
        if (u) out->use = u;
        double *bx = realloc(out->box, sizeof(double) * 6 * (size_t)(total + 1));
        if (bx) out->box = bx;
        if (!u || !bx) goto oom;
        out->use_cap = total;
    }
    int64_t off = 0;
    for (int b = 0; b < nbodies; off += bodies[b].np, b++) {
        boff[b] = off;
        for (int i = 0; i < 3; i++) blo[b][i] = INFINITY, bhi[b][i] = -INFINITY;
        for (int64_t p = 0; p < bodies[b].np; p++) {
            double *bx = out->box + 6 * (off + p);
            point_box(&bodies[b], p, margin, bx, bx + 3);
            for (int i = 0; i < 3; i++) blo[b][i] = fmin(blo[b][i], bx[i]), bhi[b][i] = fmax(bhi[b][i], bx[3 + i]);
        }
    }
    /* which points can meet another body at all (its box overlaps that body's box) */
    int64_t ninsert = 0;
    double ext = 2 * margin;
    for (int a = 0; a < nbodies; a++) {
        for (int64_t p = 0; p < bodies[a].np; p++) {
            const double *lo = out->box + 6 * (boff[a] + p), *hi = lo + 3;
            unsigned char u = 0;
            for (int b = 0; b < nbodies && !u; b++) {
                if (b == a || (bodies[a].is_static && bodies[b].is_static)) continue;
                u = lo[0] <= bhi[b][0] && hi[0] >= blo[b][0] && lo[1] <= bhi[b][1] && hi[1] >= blo[b][1] &&
                    lo[2] <= bhi[b][2] && hi[2] >= blo[b][2];
            }
            out->use[boff[a] + p] = u;
            if (u) {
                ninsert++;
                for (int i = 0; i < 3; i++) ext = fmax(ext, hi[i] - lo[i]);
            }
        }
    }
    if (!ninsert) {
        free(blo), free(bhi), free(boff);
        return 0;
    }
    /* cells at least as large as any box: a box covers ≤ 2 cells per axis, ≤ 8 in all */
    double h = ext * (1 + 1e-9), inv = 1 / h;
    int64_t cap = 8 * ninsert;
    if (out->ent_cap < cap) {
        uint64_t *k = realloc(out->keys, sizeof(uint64_t) * (size_t)cap);
        if (k) out->keys = k;
        int32_t *c = realloc(out->cell, sizeof(int32_t) * 5 * (size_t)cap);
        if (c) out->cell = c;
        int64_t *e = realloc(out->ent, sizeof(int64_t) * (size_t)cap);
        if (e) out->ent = e;
        if (!k || !c || !e) goto oom;
        out->ent_cap = cap;
    }
    /* entries: key, (cell x, y, z, body, point) */
    int64_t ne = 0;
    for (int a = 0; a < nbodies; a++) {
        for (int64_t p = 0; p < bodies[a].np; p++) {
            if (!out->use[boff[a] + p]) continue;
            const double *lo = out->box + 6 * (boff[a] + p), *hi = lo + 3;
            int64_t c0[3], c1[3];
            for (int i = 0; i < 3; i++) c0[i] = (int64_t)floor(lo[i] * inv), c1[i] = (int64_t)floor(hi[i] * inv);
            for (int64_t ix = c0[0]; ix <= c1[0]; ix++)
                for (int64_t iy = c0[1]; iy <= c1[1]; iy++)
                    for (int64_t iz = c0[2]; iz <= c1[2]; iz++) {
                        out->keys[ne] = cell_key(ix, iy, iz);
                        int32_t *c = out->cell + 5 * ne;
                        c[0] = (int32_t)ix, c[1] = (int32_t)iy, c[2] = (int32_t)iz, c[3] = a, c[4] = (int32_t)p;
                        ne++;
                    }
        }
    }
    int64_t T = 1;
    while (T < 2 * ne) T <<= 1;
    if (out->table_cap < T + 1) {
        int64_t *c = realloc(out->count, sizeof(int64_t) * (size_t)(T + 1));
        if (!c) goto oom;
        out->count = c, out->table_cap = T + 1;
    }
    /* counting sort by bucket */
    memset(out->count, 0, sizeof(int64_t) * (size_t)(T + 1));
    for (int64_t e = 0; e < ne; e++) out->count[(out->keys[e] & (uint64_t)(T - 1)) + 1]++;
    for (int64_t t = 0; t < T; t++) out->count[t + 1] += out->count[t];
    for (int64_t e = 0; e < ne; e++) out->ent[out->count[out->keys[e] & (uint64_t)(T - 1)]++] = e;
    /* count[t] is now the end of bucket t; its start is count[t − 1] (0 for t = 0) */
    int64_t start = 0;
    for (int64_t t = 0; t < T; t++) {
        int64_t end = out->count[t];
        for (int64_t u = start; u < end; u++) {
            const int32_t *cu = out->cell + 5 * out->ent[u];
            const double *la = out->box + 6 * (boff[cu[3]] + cu[4]), *ha = la + 3;
            for (int64_t v = u + 1; v < end; v++) {
                const int32_t *cv = out->cell + 5 * out->ent[v];
                if (cu[3] == cv[3] || cu[0] != cv[0] || cu[1] != cv[1] || cu[2] != cv[2]) continue;
                if (bodies[cu[3]].is_static && bodies[cv[3]].is_static) continue;
                const double *lb = out->box + 6 * (boff[cv[3]] + cv[4]), *hb = lb + 3;
                int ok = 1;
                for (int i = 0; i < 3 && ok; i++) {
                    ok = la[i] <= hb[i] && lb[i] <= ha[i];
                    /* report once: in the cell holding the corner max(lo_a, lo_b) of the overlap */
                    if (ok) ok = (int64_t)floor(fmax(la[i], lb[i]) * inv) == cu[i];
                }
                if (ok && push_pair(out, cu[3], cu[4], cv[3], cv[4])) goto oom;
            }
        }
        start = end;
    }
    free(blo), free(bhi), free(boff);
    return 0;
oom:
    free(blo), free(bhi), free(boff);
    return -1;
}

static void pair_r(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3], double dr[3]) {
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    for (int i = 0; i < 3; i++) {
        double da = A->dx ? A->dx[3 * q->p + i] : 0, db = B->dx ? B->dx[3 * q->q + i] : 0;
        dr[i] = da - db;
        r[i] = A->x[3 * q->p + i] - B->x[3 * q->q + i] + alpha * dr[i];
    }
}

double sim_contact_ccd(const SimContactBody *bodies, const SimContactSet *set, double min_sep) {
    double amax = 1;
    for (int64_t k = 0; k < set->n; k++) {
        double r[3], dr[3];
        pair_r(bodies, &set->pairs[k], 0, r, dr);
        double a = dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2];
        double b = 2 * (r[0] * dr[0] + r[1] * dr[1] + r[2] * dr[2]);
        double c = (1 - min_sep * min_sep) * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
        if (!(b < 0) || !(a > 0)) continue; /* not approaching */
        double disc = b * b - 4 * a * c;
        if (disc < 0) continue;             /* closest approach stays above s‖r‖ */
        double t = 2 * c / (-b + sqrt(disc)); /* the smaller root, written without cancellation */
        if (t < amax) amax = t;
    }
    return amax < 0 ? 0 : amax;
}

double sim_contact_min_distance(const SimContactBody *bodies, const SimContactSet *set, double alpha) {
    double m = INFINITY;
    for (int64_t k = 0; k < set->n; k++) {
        double r[3], dr[3];
        pair_r(bodies, &set->pairs[k], alpha, r, dr);
        m = fmin(m, sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]));
    }
    return m;
}
