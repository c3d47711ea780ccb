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
    free(s->pairs), free(s->keys), free(s->ent), free(s->count), free(s->cell), free(s->use), free(s->box), free(s->bucket);
    memset(s, 0, sizeof *s);
}

/* a point–point pair normalized to a < b (f = −1), or point p of a against triangle f of b */
static int push_pair(SimContactSet *s, int32_t a, int32_t p, int32_t b, int32_t q, int32_t f) {
    if (s->n == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 1024;
        SimContactPair *np = realloc(s->pairs, sizeof *np * (size_t)cap);
        if (!np) return -1;
        s->pairs = np, s->cap = cap;
    }
    if (f < 0 && a > b) {
        int32_t t = a;
        a = b, b = t, t = p, p = q, q = t;
    }
    s->pairs[s->n++] = (SimContactPair){.a = a, .b = b, .p = p, .q = f < 0 ? q : -1, .f = f};
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

/* a body's triangles (0 without a surface) */
static int64_t body_tris(const SimContactBody *B) { return B->faces ? B->nf : 0; }

/* Entities: every body's points, then the triangles of the bodies that have them; boxes in
 * out->box (6 per entity: lo, hi), entity e of body b at eoff[b] + e (points first). */
int sim_contact_broad_phase(const SimContactBody *bodies, int nbodies, double margin, SimContactSet *out) {
    out->n = 0;
    if (nbodies < 2) return 0;
    int64_t total = 0;
    for (int b = 0; b < nbodies; b++) total += bodies[b].np + body_tris(&bodies[b]);
    double (*blo)[3] = malloc(sizeof(double[3]) * (size_t)nbodies), (*bhi)[3] = malloc(sizeof(double[3]) * (size_t)nbodies);
    int64_t *eoff = malloc(sizeof(int64_t) * (size_t)(nbodies + 1));
    if (!blo || !bhi || !eoff) goto oom;
    if (out->use_cap < total) {
        unsigned char *u = realloc(out->use, (size_t)total + 1);
        if (u) out->use = u;
        double *bx = realloc(out->box, sizeof(double) * 6 * (size_t)(total + 1));
        if (bx) out->box = bx;
        if (!u || !bx) goto oom;
        out->use_cap = total;
    }
    /* every entity's swept, inflated box once, and the bodies' boxes (over their points) */
    int64_t off = 0;
    for (int b = 0; b < nbodies; b++) {
        const SimContactBody *B = &bodies[b];
        eoff[b] = off;
        for (int i = 0; i < 3; i++) blo[b][i] = INFINITY, bhi[b][i] = -INFINITY;
        for (int64_t p = 0; p < B->np; p++) {
            double *bx = out->box + 6 * (off + p);
            point_box(B, p, margin, bx, bx + 3);
            for (int i = 0; i < 3; i++) blo[b][i] = fmin(blo[b][i], bx[i]), bhi[b][i] = fmax(bhi[b][i], bx[3 + i]);
        }
        off += B->np;
        for (int64_t f = 0; f < body_tris(B); f++) {
            double *bx = out->box + 6 * (off + f);
            for (int i = 0; i < 3; i++) bx[i] = INFINITY, bx[3 + i] = -INFINITY;
            for (int k = 0; k < 3; k++) {
                const double *c = out->box + 6 * (eoff[b] + B->faces[3 * f + k]);
                for (int i = 0; i < 3; i++) bx[i] = fmin(bx[i], c[i]), bx[3 + i] = fmax(bx[3 + i], c[3 + i]);
            }
        }
        off += body_tris(B);
    }
    /* which entities can meet another body at all (their box overlaps that body's box) */
    int64_t ninsert = 0;
    double ext = 2 * margin;
    for (int a = 0; a < nbodies; a++) {
        int64_t ne_a = bodies[a].np + body_tris(&bodies[a]);
        for (int64_t e = 0; e < ne_a; e++) {
            const double *lo = out->box + 6 * (eoff[a] + e), *hi = lo + 3;
            unsigned char u = 0;
            for (int b = 0; b < nbodies && !u; b++) {
                if (b == a || (bodies[a].is_static && bodies[b].is_static)) continue;
                u = lo[0] <= bhi[b][0] && hi[0] >= blo[b][0] && lo[1] <= bhi[b][1] && hi[1] >= blo[b][1] &&
                    lo[2] <= bhi[b][2] && hi[2] >= blo[b][2];
            }
            out->use[eoff[a] + e] = u;
            if (u) {
                ninsert++;
                for (int i = 0; i < 3; i++) ext = fmax(ext, hi[i] - lo[i]);
            }
        }
    }
    if (!ninsert) {
        free(blo), free(bhi), free(eoff);
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
    /* cell entries: key, (cell x, y, z, body, entity) */
    int64_t ne = 0;
    for (int a = 0; a < nbodies; a++) {
        int64_t ne_a = bodies[a].np + body_tris(&bodies[a]);
        for (int64_t e = 0; e < ne_a; e++) {
            if (!out->use[eoff[a] + e]) continue;
            const double *lo = out->box + 6 * (eoff[a] + e), *hi = lo + 3;
            int64_t c0[3], c1[3];
            for (int i = 0; i < 3; i++) c0[i] = (int64_t)floor(lo[i] * inv), c1[i] = (int64_t)floor(hi[i] * inv);
            for (int64_t ix = c0[0]; ix <= c1[0]; ix++)
                for (int64_t iy = c0[1]; iy <= c1[1]; iy++)
                    for (int64_t iz = c0[2]; iz <= c1[2]; iz++) {
                        out->keys[ne] = cell_key(ix, iy, iz);
                        int32_t *c = out->cell + 5 * ne;
                        c[0] = (int32_t)ix, c[1] = (int32_t)iy, c[2] = (int32_t)iz, c[3] = a, c[4] = (int32_t)e;
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
    /* count[t] is now the end of bucket t; its start is count[t − 1] (0 for t = 0). Pairs: a point
     * and another body's triangle; two points of different bodies unless both bodies have
     * triangles (then the point–triangle pairs cover them). Each bucket is gathered into its
     * points and its triangles first, so the triangles are only compared with points. */
    int faceless = 0;
    for (int b = 0; b < nbodies; b++) faceless |= !body_tris(&bodies[b]);
    if (out->bucket_cap < ne) {
        int64_t *bk = realloc(out->bucket, sizeof(int64_t) * (size_t)(ne + 1));
        if (!bk) goto oom;
        out->bucket = bk, out->bucket_cap = ne;
    }
    int64_t start = 0;
    for (int64_t t = 0; t < T; t++) {
        int64_t end = out->count[t], k = end - start, npt = 0, ntri = 0;
        if (k < 2) {
            start = end;
            continue;
        }
        int64_t *pts = out->bucket + start, *tris = out->bucket + end; /* points up, triangles down */
        for (int64_t u = start; u < end; u++) {
            const int32_t *c = out->cell + 5 * out->ent[u];
            if (c[4] >= bodies[c[3]].np) tris[-1 - ntri++] = out->ent[u];
            else pts[npt++] = out->ent[u];
        }
        for (int64_t i = 0; i < npt; i++) {
            const int32_t *cu = out->cell + 5 * pts[i];
            const SimContactBody *A = &bodies[cu[3]];
            const double *la = out->box + 6 * (eoff[cu[3]] + cu[4]), *ha = la + 3;
            /* against the triangles, then (only where a body has none) the other points */
            for (int64_t j = 0; j < ntri + (faceless ? npt : 0); j++) {
                int tri = j < ntri;
                if (!tri && j - ntri <= i) continue;
                const int32_t *cv = out->cell + 5 * (tri ? tris[-1 - j] : pts[j - ntri]);
                if (cu[3] == cv[3] || cu[0] != cv[0] || cu[1] != cv[1] || cu[2] != cv[2]) continue;
                const SimContactBody *Bb = &bodies[cv[3]];
                if (A->is_static && Bb->is_static) continue;
                if (!tri && body_tris(A) && body_tris(Bb)) continue;
                const double *lb = out->box + 6 * (eoff[cv[3]] + cv[4]), *hb = lb + 3;
                int ok = 1;
                for (int d = 0; d < 3 && ok; d++) {
                    ok = la[d] <= hb[d] && lb[d] <= ha[d];
                    /* report once: in the cell holding the corner max(lo_a, lo_b) of the overlap */
                    if (ok) ok = (int64_t)floor(fmax(la[d], lb[d]) * inv) == cu[d];
                }
                if (!ok) continue;
                int rc = tri ? push_pair(out, cu[3], cu[4], cv[3], -1, (int32_t)(cv[4] - Bb->np))
                             : push_pair(out, cu[3], cu[4], cv[3], cv[4], -1);
                if (rc) goto oom;
            }
        }
        start = end;
    }
    free(blo), free(bhi), free(eoff);
    return 0;
oom:
    free(blo), free(bhi), free(eoff);
    return -1;
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

double sim_point_triangle(const double p[3], const double a[3], const double b[3], const double c[3], double w[3]) {
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int i = 0; i < 3; i++) ab[i] = b[i] - a[i], ac[i] = c[i] - a[i], ap[i] = p[i] - a[i], bp[i] = p[i] - b[i], cp[i] = p[i] - c[i];
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap), d3 = dot3(ab, bp), d4 = dot3(ac, bp), d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
    /* the closest feature (Ericson 2005, §5.1.5): a vertex, an edge, or the face */
    if (d1 <= 0 && d2 <= 0) w[0] = 1, w[1] = 0, w[2] = 0;
    else if (d3 >= 0 && d4 <= d3) w[0] = 0, w[1] = 1, w[2] = 0;
    else if (d6 >= 0 && d5 <= d6) w[0] = 0, w[1] = 0, w[2] = 1;
    else if (vc <= 0 && d1 >= 0 && d3 <= 0) w[1] = d1 / (d1 - d3), w[0] = 1 - w[1], w[2] = 0;
    else if (vb <= 0 && d2 >= 0 && d6 <= 0) w[2] = d2 / (d2 - d6), w[0] = 1 - w[2], w[1] = 0;
    else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) w[2] = (d4 - d3) / ((d4 - d3) + (d5 - d6)), w[1] = 1 - w[2], w[0] = 0;
    else if (va + vb + vc > 0) w[1] = vb / (va + vb + vc), w[2] = vc / (va + vb + vc), w[0] = 1 - w[1] - w[2];
    else { /* a degenerate triangle: the nearest corner */
        double da = dot3(ap, ap), db = dot3(bp, bp), dc = dot3(cp, cp);
        w[0] = da <= db && da <= dc, w[1] = !w[0] && db <= dc, w[2] = !w[0] && !w[1];
    }
    double r[3];
    for (int i = 0; i < 3; i++) r[i] = p[i] - (w[0] * a[i] + w[1] * b[i] + w[2] * c[i]);
    return sqrt(dot3(r, r));
}

static void body_point(const SimContactBody *B, int64_t p, double alpha, double x[3]) {
    for (int i = 0; i < 3; i++) x[i] = B->x[3 * p + i] + (B->dx ? alpha * B->dx[3 * p + i] : 0);
}

double sim_contact_pair_vector(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3],
                               double w[3], int32_t idx[3]) {
    const SimContactBody *B = &bodies[q->b];
    double xp[3], y[3], ww[3] = {1, 0, 0};
    int32_t id[3] = {q->q, -1, -1};
    body_point(&bodies[q->a], q->p, alpha, xp);
    if (q->f < 0)
        body_point(B, q->q, alpha, y);
    else {
        const int32_t *t = B->faces + 3 * q->f;
        double c[3][3];
        for (int k = 0; k < 3; k++) body_point(B, t[k], alpha, c[k]), id[k] = t[k];
        sim_point_triangle(xp, c[0], c[1], c[2], ww);
        for (int i = 0; i < 3; i++) y[i] = ww[0] * c[0][i] + ww[1] * c[1][i] + ww[2] * c[2][i];
    }
    for (int i = 0; i < 3; i++) r[i] = xp[i] - y[i];
    if (w) memcpy(w, ww, sizeof ww);
    if (idx) memcpy(idx, id, sizeof id);
    return sqrt(dot3(r, r));
}

static void pair_r(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3], double dr[3]) {
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    for (int i = 0; i < 3; i++) {
        double da = A->dx ? A->dx[3 * q->p + i] : 0, db = B->dx ? B->dx[3 * q->q + i] : 0;
        dr[i] = da - db;
        r[i] = A->x[3 * q->p + i] - B->x[3 * q->q + i] + alpha * dr[i];
    }
}

/* additive CCD for a point–triangle pair (contact.h): the largest α ≤ 1 found such that the
 * distance stays ≥ s d₀ on [0, α] */
static double accd(const SimContactBody *bodies, const SimContactPair *q, double min_sep) {
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    double lp = 0, lt = 0, r[3];
    if (A->dx) lp = sqrt(dot3(A->dx + 3 * q->p, A->dx + 3 * q->p));
    for (int k = 0; k < 3 && B->dx; k++) {
        const double *d = B->dx + 3 * B->faces[3 * q->f + k];
        lt = fmax(lt, sqrt(dot3(d, d)));
    }
    double l = lp + lt;
    if (!(l > 0)) return 1;
    double d0 = sim_contact_pair_vector(bodies, q, 0, r, NULL, NULL), target = min_sep * d0, t = 0, d = d0;
    for (int it = 0; it < 64; it++) {
        double step = (d - target) / l;
        if (t + step >= 1) return 1;
        t += step;
        d = sim_contact_pair_vector(bodies, q, t, r, NULL, NULL);
        if (d - target <= 1e-3 * (d0 - target)) break;
    }
    return t;
}

double sim_contact_ccd(const SimContactBody *bodies, const SimContactSet *set, double min_sep) {
    double amax = 1;
    for (int64_t k = 0; k < set->n; k++) {
        if (set->pairs[k].f >= 0) {
            amax = fmin(amax, accd(bodies, &set->pairs[k], min_sep));
            continue;
        }
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
        double r[3];
        m = fmin(m, sim_contact_pair_vector(bodies, &set->pairs[k], alpha, r, NULL, NULL));
    }
    return m;
}
