/* sim/contact.c — the IPC barrier, the spatial-hash broad phase and point–point CCD (see
 * contact.h; Li et al. 2020, "Incremental Potential Contact"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"
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
    free(s->pairs), free(s->keys), free(s->ent), free(s->count), free(s->cell), free(s->use), free(s->box), free(s->bucket), free(s->rkey), free(s->rord), free(s->rtmp);
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
    if ((f == -1 || f == SIM_PAIR_EE) && a > b) { /* point–point and edge–edge pairs: a < b */
        int32_t t = a;
        a = b, b = t, t = p, p = q, q = t;
    }
    s->pairs[s->n++] = (SimContactPair){.a = a, .b = b, .p = p, .q = f < 0 ? q : -1, .f = f};
    return 0;
}

/* min and max of the broad phase's box arithmetic as comparisons: fmin/fmax are library calls
 * here (their NaN rules keep GCC from inlining them), ~3% of a capped pile's samples in
 * boxes_union alone. Equal to fmin/fmax when `acc` is not NaN (the boxes start at ±∞ and are
 * built from finite coordinates), so the candidates are the same. */
static inline double lo2(double acc, double v) { return v < acc ? v : acc; }
static inline double hi2(double acc, double v) { return v > acc ? v : acc; }

static void point_box(const SimContactBody *B, int64_t p, double margin, double lo[3], double hi[3]) {
    for (int i = 0; i < 3; i++) {
        double x0 = B->x[3 * p + i], x1 = B->dx ? x0 + B->dx[3 * p + i] : x0;
        lo[i] = lo2(x0, x1) - margin, hi[i] = hi2(x0, x1) + margin;
    }
}

static uint64_t cell_key(int64_t ix, int64_t iy, int64_t iz) {
    uint64_t h = (uint64_t)ix * 0x9E3779B97F4A7C15ull ^ (uint64_t)iy * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)iz * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

/* a body's triangles (0 without a surface) and edges */
static int64_t body_tris(const SimContactBody *B) { return B->faces ? B->nf : 0; }
static int64_t body_edges(const SimContactBody *B) { return B->edges ? B->ne : 0; }
static int64_t body_ents(const SimContactBody *B) { return B->np + body_tris(B) + body_edges(B); }

/* Entities: every body's points, then the triangles of the bodies that have them; boxes in
 * out->box (6 per entity: lo, hi), entity e of body b at eoff[b] + e (points first). */
/* bx = the union of the k point boxes (lo xyz, hi xyz) of pts[idx[0..k)]: a face's or edge's box */
static void boxes_union(const double *pts, const int32_t *idx, int k, double bx[6]) {
    for (int i = 0; i < 3; i++) bx[i] = INFINITY, bx[3 + i] = -INFINITY;
    for (int j = 0; j < k; j++) {
        const double *c = pts + 6 * idx[j];
        for (int i = 0; i < 3; i++) bx[i] = lo2(bx[i], c[i]), bx[3 + i] = hi2(bx[3 + i], c[3 + i]);
    }
}

int sim_contact_broad_phase(const SimContactBody *bodies, int nbodies, double margin, SimContactSet *out) {
    out->n = 0;
    if (nbodies < 2) return 0;
    int64_t total = 0;
    for (int b = 0; b < nbodies; b++) total += body_ents(&bodies[b]);
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
            for (int i = 0; i < 3; i++) blo[b][i] = lo2(blo[b][i], bx[i]), bhi[b][i] = hi2(bhi[b][i], bx[3 + i]);
        }
        off += B->np;
        for (int64_t f = 0; f < body_tris(B); f++)
            boxes_union(out->box + 6 * eoff[b], B->faces + 3 * f, 3, out->box + 6 * (off + f));
        off += body_tris(B);
        for (int64_t e = 0; e < body_edges(B); e++)
            boxes_union(out->box + 6 * eoff[b], B->edges + 2 * e, 2, out->box + 6 * (off + e));
        off += body_edges(B);
    }
    /* which entities can meet another body at all (their box overlaps that body's box) */
    int64_t ninsert = 0;
    double ext = 2 * margin;
    for (int a = 0; a < nbodies; a++) {
        int64_t ne_a = body_ents(&bodies[a]);
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
                for (int i = 0; i < 3; i++) ext = hi2(ext, hi[i] - lo[i]);
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
        int64_t ne_a = body_ents(&bodies[a]);
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
    if (out->bucket_cap < 2 * ne) {
        int64_t *bk = realloc(out->bucket, sizeof(int64_t) * (size_t)(2 * ne + 1));
        if (!bk) goto oom;
        out->bucket = bk, out->bucket_cap = 2 * ne;
    }
    int64_t start = 0;
    for (int64_t t = 0; t < T; t++) {
        int64_t end = out->count[t], k = end - start, npt = 0, ntri = 0, ned = 0;
        if (k < 2) {
            start = end;
            continue;
        }
        /* points up, triangles down, edges in the second half */
        int64_t *pts = out->bucket + start, *tris = out->bucket + end, *eds = out->bucket + ne + start;
        for (int64_t u = start; u < end; u++) {
            const int32_t *c = out->cell + 5 * out->ent[u];
            const SimContactBody *Bc = &bodies[c[3]];
            if (c[4] >= Bc->np + body_tris(Bc)) eds[ned++] = out->ent[u];
            else if (c[4] >= Bc->np) tris[-1 - ntri++] = out->ent[u];
            else pts[npt++] = out->ent[u];
        }
        /* The counting sort is stable and the entries were made body by body, so a bucket's
         * points, triangles and edges each come in ascending body order: an entity's own body's
         * entities form one run, skipped whole instead of entry by entry (most of a contact
         * cell's entries are of the entity's own body; the skipped ones never made a pair, so
         * the candidates and their order are unchanged). */
        /* edge against edge of another body, each pair once (i < j): j from the first edge of
         * a later body */
        int64_t jnext = 0;
        for (int64_t i = 0; i < ned; i++) {
            const int32_t *cu = out->cell + 5 * eds[i];
            const double *la = out->box + 6 * (eoff[cu[3]] + cu[4]), *ha = la + 3;
            if (jnext <= i)
                for (jnext = i + 1; jnext < ned && out->cell[5 * eds[jnext] + 3] == cu[3]; jnext++) {}
            for (int64_t j = jnext; j < ned; j++) {
                const int32_t *cv = out->cell + 5 * eds[j];
                if (cu[0] != cv[0] || cu[1] != cv[1] || cu[2] != cv[2]) continue;
                if (bodies[cu[3]].is_static && bodies[cv[3]].is_static) continue;
                const double *lb = out->box + 6 * (eoff[cv[3]] + cv[4]), *hb = lb + 3;
                int ok = 1;
                for (int d = 0; d < 3 && ok; d++) {
                    ok = la[d] <= hb[d] && lb[d] <= ha[d];
                    if (ok) ok = (int64_t)floor(hi2(la[d], lb[d]) * inv) == cu[d];
                }
                if (!ok) continue;
                int32_t ea = (int32_t)(cu[4] - bodies[cu[3]].np - body_tris(&bodies[cu[3]]));
                int32_t eb = (int32_t)(cv[4] - bodies[cv[3]].np - body_tris(&bodies[cv[3]]));
                if (push_pair(out, cu[3], ea, cv[3], eb, SIM_PAIR_EE)) goto oom;
            }
        }
        /* the triangles [tlo, thi) are the current point's body's (points in ascending body
         * order too: recomputed when the body changes) */
        int64_t tlo = 0, thi = 0;
        int32_t tbody = -1;
        for (int64_t i = 0; i < npt; i++) {
            const int32_t *cu = out->cell + 5 * pts[i];
            const SimContactBody *A = &bodies[cu[3]];
            const double *la = out->box + 6 * (eoff[cu[3]] + cu[4]), *ha = la + 3;
            if (cu[3] != tbody) {
                tbody = cu[3];
                for (tlo = 0; tlo < ntri && out->cell[5 * tris[-1 - tlo] + 3] < tbody; tlo++) {}
                for (thi = tlo; thi < ntri && out->cell[5 * tris[-1 - thi] + 3] == tbody; thi++) {}
            }
            /* against the triangles, then (only where a body has none) the other points */
            for (int64_t j = tlo ? 0 : thi; j < ntri + (faceless ? npt : 0); j = j + 1 == tlo ? thi : j + 1) {
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
                    if (ok) ok = (int64_t)floor(hi2(la[d], lb[d]) * inv) == cu[d];
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

static int cmp_edge(const void *a, const void *b) {
    const int32_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

int sim_mesh_edge_uses(int64_t nf, const int32_t *faces, int64_t *ne, int32_t **edges, int32_t **uses) {
    *ne = 0, *edges = NULL;
    if (uses) *uses = NULL;
    int32_t *e = malloc(sizeof(int32_t) * 6 * (size_t)(nf + 1));
    int32_t *u = uses ? malloc(sizeof(int32_t) * 3 * (size_t)(nf + 1)) : NULL;
    if (!e || (uses && !u)) {
        free(e), free(u);
        return -1;
    }
    for (int64_t f = 0; f < nf; f++)
        for (int k = 0; k < 3; k++) {
            int32_t i = faces[3 * f + k], j = faces[3 * f + (k + 1) % 3];
            e[6 * f + 2 * k] = i < j ? i : j, e[6 * f + 2 * k + 1] = i < j ? j : i;
        }
    qsort(e, (size_t)(3 * nf), 2 * sizeof(int32_t), cmp_edge);
    int64_t n = 0;
    for (int64_t k = 0; k < 3 * nf; k++) {
        if (!n || cmp_edge(e + 2 * k, e + 2 * (n - 1))) {
            e[2 * n] = e[2 * k], e[2 * n + 1] = e[2 * k + 1];
            if (u) u[n] = 0;
            n++;
        }
        if (u) u[n - 1]++;
    }
    *ne = n, *edges = e;
    if (uses) *uses = u;
    return 0;
}

int sim_mesh_edges(int64_t nf, const int32_t *faces, int64_t *ne, int32_t **edges) {
    return sim_mesh_edge_uses(nf, faces, ne, edges, NULL);
}

static int cmp_pair(const void *x, const void *y) {
    const SimContactPair *u = x, *v = y;
    int32_t ku[5] = {u->f, u->a, u->b, u->p, u->q}, kv[5] = {v->f, v->a, v->b, v->p, v->q};
    for (int i = 0; i < 5; i++)
        if (ku[i] != kv[i]) return ku[i] < kv[i] ? -1 : 1;
    return 0;
}

static int bits_for(uint64_t v) {
    int b = 0;
    while (v >> b) b++;
    return b;
}

/* set->pairs[n0, n) in cmp_pair's order (f, a, b, p, q), by a least-significant-digit radix sort
 * on the fields packed into one 64-bit key (each less its minimum, in as many bits as its range
 * needs): the same order qsort gives, equal pairs being identical, at a fraction of its cost
 * (qsort with cmp_pair was 6% of a converged pile's samples). Keys that do not fit 64 bits fall
 * back to qsort. 0, or -1 out of memory. */
static int sort_terms(SimContactSet *set, int64_t n0, int64_t n) {
    int64_t m = n - n0;
    SimContactPair *v = set->pairs + n0;
    if (m < 2) return 0;
    int32_t lo[5], hi[5];
    for (int i = 0; i < 5; i++) lo[i] = INT32_MAX, hi[i] = INT32_MIN;
    for (int64_t k = 0; k < m; k++) {
        const int32_t f[5] = {v[k].f, v[k].a, v[k].b, v[k].p, v[k].q};
        for (int i = 0; i < 5; i++) lo[i] = f[i] < lo[i] ? f[i] : lo[i], hi[i] = f[i] > hi[i] ? f[i] : hi[i];
    }
    int nb[5], total = 0;
    for (int i = 0; i < 5; i++) total += nb[i] = bits_for((uint64_t)((int64_t)hi[i] - lo[i]));
    if (total > 64 || m > UINT32_MAX) {
        qsort(v, (size_t)m, sizeof *v, cmp_pair);
        return 0;
    }
    if (set->rcap < m) {
        uint64_t *rk = realloc(set->rkey, sizeof *rk * 2 * (size_t)m);
        if (rk) set->rkey = rk;
        uint32_t *ro = realloc(set->rord, sizeof *ro * 2 * (size_t)m);
        if (ro) set->rord = ro;
        SimContactPair *rt = realloc(set->rtmp, sizeof *rt * (size_t)m);
        if (rt) set->rtmp = rt;
        if (!rk || !ro || !rt) return -1;
        set->rcap = m;
    }
    uint64_t *key = set->rkey, *key2 = key + m;
    uint32_t *ord = set->rord, *ord2 = ord + m;
    for (int64_t k = 0; k < m; k++) {
        const int32_t f[5] = {v[k].f, v[k].a, v[k].b, v[k].p, v[k].q};
        uint64_t x = 0;
        for (int i = 0; i < 5; i++) x = (nb[i] ? x << nb[i] : x) | (uint64_t)((int64_t)f[i] - lo[i]);
        key[k] = x, ord[k] = (uint32_t)k;
    }
    for (int shift = 0; shift < total; shift += 8) {
        int64_t cnt[257] = {0};
        for (int64_t k = 0; k < m; k++) cnt[((key[k] >> shift) & 255) + 1]++;
        if (cnt[((key[0] >> shift) & 255) + 1] == m) continue; /* one digit value: the order stands */
        for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
        for (int64_t k = 0; k < m; k++) {
            int64_t at = cnt[(key[k] >> shift) & 255]++;
            key2[at] = key[k], ord2[at] = ord[k];
        }
        uint64_t *tk = key;
        key = key2, key2 = tk;
        uint32_t *to = ord;
        ord = ord2, ord2 = to;
    }
    for (int64_t k = 0; k < m; k++) set->rtmp[k] = v[ord[k]];
    memcpy(v, set->rtmp, sizeof *v * (size_t)m);
    return 0;
}

int sim_contact_dedup(const SimContactBody *bodies, SimContactSet *set) {
    int64_t n0 = set->n, extra = 0;
    for (int64_t k = 0; k < n0; k++)
        if (set->pairs[k].f >= 0 && bodies[set->pairs[k].b].face_edges) extra += 6;
    if (!extra) return 0;
    if (set->cap < n0 + extra) {
        int64_t cap = n0 + extra + (n0 + extra) / 2;
        SimContactPair *np = realloc(set->pairs, sizeof *np * (size_t)cap);
        if (!np) return -1;
        set->pairs = np, set->cap = cap;
    }
    int64_t n = n0;
    for (int64_t k = 0; k < n0; k++) {
        const SimContactPair q = set->pairs[k];
        const SimContactBody *B = &bodies[q.b];
        if (q.f < 0 || !B->face_edges) continue;
        for (int c = 0; c < 3; c++) {
            int32_t e = B->face_edges[3 * q.f + c], v = B->faces[3 * q.f + c];
            if (B->edge_uses[e] > 1) set->pairs[n++] = (SimContactPair){.a = q.a, .b = q.b, .p = q.p, .q = e, .f = SIM_PAIR_PE};
            if (B->vert_coef[v] != 0) set->pairs[n++] = (SimContactPair){.a = q.a, .b = q.b, .p = q.p, .q = v, .f = SIM_PAIR_PV};
        }
    }
    /* each (p, e) and (p, v) once */
    if (sort_terms(set, n0, n)) return -1;
    int64_t m = n0;
    for (int64_t k = n0; k < n; k++)
        if (m == n0 || cmp_pair(&set->pairs[k], &set->pairs[m - 1])) set->pairs[m++] = set->pairs[k];
    set->n = m;
    return 0;
}

double sim_contact_pair_weight(const SimContactBody *bodies, const SimContactPair *q) {
    if (q->f == SIM_PAIR_PE) return 1 - (double)bodies[q->b].edge_uses[q->q];
    if (q->f == SIM_PAIR_PV) return bodies[q->b].vert_coef[q->q];
    return 1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int sim_mesh_dedup_tables(int64_t np, int64_t nf, const int32_t *faces, int64_t ne, const int32_t *edges,
                          const int32_t *uses, int32_t **face_edges, int32_t **vert_coef) {
    int32_t *fe = malloc(sizeof(int32_t) * 3 * (size_t)(nf + 1)), *vc = malloc(sizeof(int32_t) * (size_t)(np + 1));
    int64_t *key = malloc(sizeof(int64_t) * (size_t)(ne + 1));
    if (!fe || !vc || !key) {
        free(fe), free(vc), free(key);
        return -1;
    }
    /* the edges are sorted by (i, j): key i·2³² + j is sorted too, and bsearch finds a face's */
    for (int64_t e = 0; e < ne; e++) key[e] = (int64_t)edges[2 * e] << 32 | (int64_t)edges[2 * e + 1];
    for (int64_t v = 0; v < np; v++) vc[v] = 1;
    for (int64_t f = 0; f < nf; f++)
        for (int k = 0; k < 3; k++) {
            int32_t i = faces[3 * f + k], j = faces[3 * f + (k + 1) % 3];
            int64_t want = (int64_t)(i < j ? i : j) << 32 | (int64_t)(i < j ? j : i);
            const int64_t *hit = bsearch(&want, key, (size_t)ne, sizeof *key, cmp_i64);
            fe[3 * f + k] = hit ? (int32_t)(hit - key) : -1; /* always found: edges are the faces' */
            vc[faces[3 * f + k]]--;                          /* − F_v */
        }
    for (int64_t e = 0; e < ne; e++) vc[edges[2 * e]] += uses[e] - 1, vc[edges[2 * e + 1]] += uses[e] - 1;
    free(key);
    *face_edges = fe, *vert_coef = vc;
    return 0;
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

/* Ericson 2005 §5.1.9 */
double sim_segment_segment(const double p0[3], const double p1[3], const double q0[3], const double q1[3], double *s,
                           double *t) {
    double d1[3], d2[3], r[3];
    for (int i = 0; i < 3; i++) d1[i] = p1[i] - p0[i], d2[i] = q1[i] - q0[i], r[i] = p0[i] - q0[i];
    double a = dot3(d1, d1), e = dot3(d2, d2), f = dot3(d2, r), ss, tt;
    if (a <= 0 && e <= 0) ss = tt = 0;
    else if (a <= 0) ss = 0, tt = clamp01(f / e);
    else {
        double c = dot3(d1, r);
        if (e <= 0) tt = 0, ss = clamp01(-c / a);
        else {
            double b = dot3(d1, d2), den = a * e - b * b;
            /* parallel (den ≤ ε a e): any s; take 0 and clamp t from it */
            ss = den > 1e-14 * a * e ? clamp01((b * f - c * e) / den) : 0;
            tt = (b * ss + f) / e;
            if (tt < 0) tt = 0, ss = clamp01(-c / a);
            else if (tt > 1) tt = 1, ss = clamp01((b - c) / a);
        }
    }
    double dd[3];
    for (int i = 0; i < 3; i++) dd[i] = p0[i] + ss * d1[i] - q0[i] - tt * d2[i];
    if (s) *s = ss;
    if (t) *t = tt;
    return sqrt(dot3(dd, dd));
}

double sim_ee_mollifier(const double e0[3], const double e1[3], double eps_x, double dm0[3], double dm1[3]) {
    double n[3];
    base_vec3_cross(e0, e1, n);
    double c = dot3(n, n);
    if (!(eps_x > 0) || c >= eps_x) {
        if (dm0) dm0[0] = dm0[1] = dm0[2] = 0;
        if (dm1) dm1[0] = dm1[1] = dm1[2] = 0;
        return 1;
    }
    double x = c / eps_x, dm = (2 - 2 * x) / eps_x, a[3], b[3];
    /* ∂c/∂e0 = 2 e1 × n, ∂c/∂e1 = 2 n × e0 */
    base_vec3_cross(e1, n, a), base_vec3_cross(n, e0, b);
    for (int i = 0; i < 3; i++) {
        if (dm0) dm0[i] = 2 * dm * a[i];
        if (dm1) dm1[i] = 2 * dm * b[i];
    }
    return (2 - x) * x;
}

/* ---- second-order forward differentiation over the 12 coordinates of an edge pair ------------ */
typedef struct {
    double v, g[12], h[144];
} HD;

static HD hd_var(double v, int i) {
    HD a;
    memset(&a, 0, sizeof a);
    a.v = v;
    if (i >= 0) a.g[i] = 1;
    return a;
}
static HD hd_add(const HD *a, const HD *b, double sb) {
    HD c;
    c.v = a->v + sb * b->v;
    for (int i = 0; i < 12; i++) c.g[i] = a->g[i] + sb * b->g[i];
    for (int i = 0; i < 144; i++) c.h[i] = a->h[i] + sb * b->h[i];
    return c;
}
static HD hd_mul(const HD *a, const HD *b) {
    HD c;
    c.v = a->v * b->v;
    for (int i = 0; i < 12; i++) c.g[i] = a->g[i] * b->v + a->v * b->g[i];
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++)
            c.h[12 * i + j] = a->h[12 * i + j] * b->v + a->v * b->h[12 * i + j] + a->g[i] * b->g[j] + a->g[j] * b->g[i];
    return c;
}
/* f(a) with f, f′, f″ at a.v */
static HD hd_fn(const HD *a, double f, double f1, double f2) {
    HD c;
    c.v = f;
    for (int i = 0; i < 12; i++) c.g[i] = f1 * a->g[i];
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) c.h[12 * i + j] = f1 * a->h[12 * i + j] + f2 * a->g[i] * a->g[j];
    return c;
}
static HD hd_dot(const HD *a, const HD *b) {
    HD c = hd_mul(&a[0], &b[0]), t;
    for (int k = 1; k < 3; k++) t = hd_mul(&a[k], &b[k]), c = hd_add(&c, &t, 1);
    return c;
}
static void hd_cross(const HD *a, const HD *b, HD *c) {
    for (int k = 0; k < 3; k++) {
        int i = (k + 1) % 3, j = (k + 2) % 3;
        HD x = hd_mul(&a[i], &b[j]), y = hd_mul(&a[j], &b[i]);
        c[k] = hd_add(&x, &y, -1);
    }
}
static HD hd_div(const HD *a, const HD *b) {
    HD inv = hd_fn(b, 1 / b->v, -1 / (b->v * b->v), 2 / (b->v * b->v * b->v));
    return hd_mul(a, &inv);
}
/* |u × v|² / |v|²: the squared distance of a point from a line (u = p − q0, v the line's direction) */
static HD hd_point_line2(const HD *u, const HD *v) {
    HD n[3];
    hd_cross(u, v, n);
    HD a = hd_dot(n, n), b = hd_dot(v, v);
    return hd_div(&a, &b);
}

double sim_ee_barrier(const double x[12], double dhat, double eps_x, double g[12], double H[144]) {
    double s, t;
    double d = sim_segment_segment(x, x + 3, x + 6, x + 9, &s, &t);
    if (!g && !H) {
        double e0[3], e1[3];
        for (int i = 0; i < 3; i++) e0[i] = x[3 + i] - x[i], e1[i] = x[9 + i] - x[6 + i];
        return d >= dhat ? 0 : sim_ee_mollifier(e0, e1, eps_x, NULL, NULL) * sim_barrier(d, dhat, NULL, NULL);
    }
    HD X[4][3]; /* ~40 KB of locals in all: a test's and a solver's call, not a hot loop */
    HD *P0 = X[0], *P1 = X[1], *Q0 = X[2], *Q1 = X[3];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++) X[k][i] = hd_var(x[3 * k + i], 3 * k + i);
    HD e0[3], e1[3], d2;
    for (int i = 0; i < 3; i++) e0[i] = hd_add(&P1[i], &P0[i], -1), e1[i] = hd_add(&Q1[i], &Q0[i], -1);
    /* the distance of the closest features' type: both interior (line–line), one end against the
     * other segment's line, or two ends */
    int si = s > 0 && s < 1, ti = t > 0 && t < 1;
    if (si && ti) {
        HD n[3], u[3];
        hd_cross(e0, e1, n);
        for (int i = 0; i < 3; i++) u[i] = hd_add(&P0[i], &Q0[i], -1);
        HD a = hd_dot(u, n), nn = hd_dot(n, n), a2 = hd_mul(&a, &a);
        d2 = hd_div(&a2, &nn);
    } else if (ti) {
        const HD *P = s >= 1 ? P1 : P0;
        HD u[3];
        for (int i = 0; i < 3; i++) u[i] = hd_add(&P[i], &Q0[i], -1);
        d2 = hd_point_line2(u, e1);
    } else if (si) {
        const HD *Q = t >= 1 ? Q1 : Q0;
        HD u[3];
        for (int i = 0; i < 3; i++) u[i] = hd_add(&Q[i], &P0[i], -1);
        d2 = hd_point_line2(u, e0);
    } else {
        const HD *P = s >= 1 ? P1 : P0, *Q = t >= 1 ? Q1 : Q0;
        HD u[3];
        for (int i = 0; i < 3; i++) u[i] = hd_add(&P[i], &Q[i], -1);
        d2 = hd_dot(u, u);
    }
    HD E;
    if (d >= dhat) E = hd_var(0, -1);
    else {
        double dv = sqrt(d2.v), db, d2b, b = sim_barrier(dv, dhat, &db, &d2b);
        /* b(√q): (b′/(2√q)), (b″/(4q) − b′/(4 q^1.5)) */
        HD B = hd_fn(&d2, b, db / (2 * dv), d2b / (4 * d2.v) - db / (4 * d2.v * dv));
        HD n[3];
        hd_cross(e0, e1, n);
        HD c = hd_dot(n, n);
        HD m = hd_var(1, -1);
        if (eps_x > 0 && c.v < eps_x) {
            double xx = c.v / eps_x;
            m = hd_fn(&c, (2 - xx) * xx, (2 - 2 * xx) / eps_x, -2 / (eps_x * eps_x));
        }
        E = hd_mul(&m, &B);
    }
    if (g) memcpy(g, E.g, sizeof E.g);
    if (H) memcpy(H, E.h, sizeof E.h);
    return E.v;
}

double sim_contact_pair_stencil(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3],
                                double u[2], int32_t ia[2], double w[3], int32_t ib[3]) {
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    double xa[3], y[3], uu[2] = {1, 0}, ww[3] = {1, 0, 0};
    int32_t ida[2] = {q->p, -1}, idb[3] = {q->q, -1, -1};
    if (q->f == SIM_PAIR_EE) {
        const int32_t *ea = A->edges + 2 * q->p, *eb = B->edges + 2 * q->q;
        double p0[3], p1[3], q0[3], q1[3], s, t;
        body_point(A, ea[0], alpha, p0), body_point(A, ea[1], alpha, p1);
        body_point(B, eb[0], alpha, q0), body_point(B, eb[1], alpha, q1);
        sim_segment_segment(p0, p1, q0, q1, &s, &t);
        uu[0] = 1 - s, uu[1] = s, ida[0] = ea[0], ida[1] = ea[1];
        ww[0] = 1 - t, ww[1] = t, idb[0] = eb[0], idb[1] = eb[1];
        for (int i = 0; i < 3; i++) xa[i] = uu[0] * p0[i] + uu[1] * p1[i], y[i] = ww[0] * q0[i] + ww[1] * q1[i];
    } else if (q->f == SIM_PAIR_PE) { /* a point against an edge: its closest point's weights */
        const int32_t *eb = B->edges + 2 * q->q;
        double q0[3], q1[3], t;
        body_point(A, q->p, alpha, xa);
        body_point(B, eb[0], alpha, q0), body_point(B, eb[1], alpha, q1);
        sim_segment_segment(xa, xa, q0, q1, NULL, &t);
        ww[0] = 1 - t, ww[1] = t, idb[0] = eb[0], idb[1] = eb[1];
        for (int i = 0; i < 3; i++) y[i] = ww[0] * q0[i] + ww[1] * q1[i];
    } else {
        body_point(A, q->p, alpha, xa);
        if (q->f < 0) /* a point, or a surface vertex (SIM_PAIR_PV) */
            body_point(B, q->q, alpha, y);
        else {
            const int32_t *t = B->faces + 3 * q->f;
            double c[3][3];
            for (int k = 0; k < 3; k++) body_point(B, t[k], alpha, c[k]), idb[k] = t[k];
            sim_point_triangle(xa, c[0], c[1], c[2], ww);
            for (int i = 0; i < 3; i++) y[i] = ww[0] * c[0][i] + ww[1] * c[1][i] + ww[2] * c[2][i];
        }
    }
    for (int i = 0; i < 3; i++) r[i] = xa[i] - y[i];
    if (u) memcpy(u, uu, sizeof uu);
    if (ia) memcpy(ia, ida, sizeof ida);
    if (w) memcpy(w, ww, sizeof ww);
    if (ib) memcpy(ib, idb, sizeof idb);
    return sqrt(dot3(r, r));
}

double sim_contact_pair_vector(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3],
                               double w[3], int32_t idx[3]) {
    return sim_contact_pair_stencil(bodies, q, alpha, r, NULL, NULL, w, idx);
}

double sim_contact_pair_mollifier(const SimContactBody *bodies, const SimContactPair *q, double alpha) {
    if (q->f != SIM_PAIR_EE) return 1;
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    if (!A->edge_len2 || !B->edge_len2) return 1;
    const int32_t *ea = A->edges + 2 * q->p, *eb = B->edges + 2 * q->q;
    double p0[3], p1[3], q0[3], q1[3], e0[3], e1[3];
    body_point(A, ea[0], alpha, p0), body_point(A, ea[1], alpha, p1);
    body_point(B, eb[0], alpha, q0), body_point(B, eb[1], alpha, q1);
    for (int i = 0; i < 3; i++) e0[i] = p1[i] - p0[i], e1[i] = q1[i] - q0[i];
    return sim_ee_mollifier(e0, e1, 1e-3 * A->edge_len2[q->p] * B->edge_len2[q->q], NULL, NULL);
}

static void pair_r(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3], double dr[3]) {
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    for (int i = 0; i < 3; i++) {
        double da = A->dx ? A->dx[3 * q->p + i] : 0, db = B->dx ? B->dx[3 * q->q + i] : 0;
        dr[i] = da - db;
        r[i] = A->x[3 * q->p + i] - B->x[3 * q->q + i] + alpha * dr[i];
    }
}

/* additive CCD for a point–triangle or edge–edge pair (contact.h): the largest α ≤ 1 found such
 * that the distance stays ≥ s d₀ on [0, α]. The rate bound l is taken after subtracting the
 * pair's mean displacement (the distance does not change under a common translation; IPC's ACCD
 * does the same): two bodies resting on each other and moving together do not throttle the step.
 * Only α below amax (the bound so far) matters: once an advance reaches amax the pair cannot
 * lower it, and the advances that would follow are skipped (the set's minimum is unchanged). */
static double accd(const SimContactBody *bodies, const SimContactPair *q, double min_sep, double amax) {
    const SimContactBody *A = &bodies[q->a], *B = &bodies[q->b];
    const int32_t *ia = q->f == SIM_PAIR_EE ? A->edges + 2 * q->p : &q->p;
    const int32_t *ib = q->f == SIM_PAIR_EE ? B->edges + 2 * q->q : B->faces + 3 * q->f;
    int na = q->f == SIM_PAIR_EE ? 2 : 1, nb = q->f == SIM_PAIR_EE ? 2 : 3;
    double dd[5][3], mean[3] = {0, 0, 0};
    for (int k = 0; k < na + nb; k++) {
        const SimContactBody *C = k < na ? A : B;
        int32_t v = k < na ? ia[k] : ib[k - na];
        for (int i = 0; i < 3; i++) dd[k][i] = C->dx ? C->dx[3 * v + i] : 0, mean[i] += dd[k][i] / (na + nb);
    }
    double la = 0, lb = 0;
    for (int k = 0; k < na + nb; k++) {
        double e[3] = {dd[k][0] - mean[0], dd[k][1] - mean[1], dd[k][2] - mean[2]}, n = sqrt(dot3(e, e));
        if (k < na) la = fmax(la, n);
        else lb = fmax(lb, n);
    }
    double l = la + lb;
    double r[3];
    if (!(l > 0)) return 1;
    double d0 = sim_contact_pair_vector(bodies, q, 0, r, NULL, NULL), target = min_sep * d0, t = 0, d = d0;
    for (int it = 0; it < 64; it++) {
        double step = (d - target) / l;
        if (t + step >= amax) return amax;
        t += step;
        d = sim_contact_pair_vector(bodies, q, t, r, NULL, NULL);
        if (d - target <= 1e-3 * (d0 - target)) break;
    }
    return t;
}

double sim_contact_ccd(const SimContactBody *bodies, const SimContactSet *set, double min_sep) {
    double amax = 1;
    for (int64_t k = 0; k < set->n; k++) {
        /* the deduplication's terms are never closer than their triangles' pairs */
        if (set->pairs[k].f == SIM_PAIR_PE || set->pairs[k].f == SIM_PAIR_PV) continue;
        if (set->pairs[k].f != -1) {
            amax = fmin(amax, accd(bodies, &set->pairs[k], min_sep, amax));
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

double sim_friction(const double D[3], const double T[6], double c, double eps, double g[3], double H[9]) {
    double u[2] = {dot3(T, D), dot3(T + 3, D)}, y = sqrt(u[0] * u[0] + u[1] * u[1]);
    double phi = y < eps ? y * y / eps - y * y * y / (3 * eps * eps) : y - eps / 3;
    double a = y < eps ? 2 / eps - y / (eps * eps) : 1 / y; /* f₁(y)/y, finite at 0 */
    if (g)
        for (int i = 0; i < 3; i++) g[i] = c * a * (T[i] * u[0] + T[3 + i] * u[1]);
    if (H) {
        double b = !(y > 0) ? 0 : y < eps ? -1 / (eps * eps * y) : -1 / (y * y * y), Hu[2][2];
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < 2; l++) Hu[k][l] = c * ((k == l) * a + b * u[k] * u[l]);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double v = 0;
                for (int k = 0; k < 2; k++)
                    for (int l = 0; l < 2; l++) v += T[3 * k + i] * Hu[k][l] * T[3 * l + j];
                H[3 * i + j] = v;
            }
    }
    return c * phi;
}

void sim_friction_majorizer(const double D[3], const double T[6], double c, double eps, double H[9]) {
    double u[2] = {dot3(T, D), dot3(T + 3, D)}, y = sqrt(u[0] * u[0] + u[1] * u[1]);
    double a = y < eps ? 2 / eps - y / (eps * eps) : 1 / y; /* f₁(y/ε)/y, as sim_friction's */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) H[3 * i + j] = c * a * (T[i] * T[j] + T[3 + i] * T[3 + j]);
}

/* ---- contact options and materials ------------------------------------------------------- */

void sim_contact_defaults(SimContactOptions *c) {
    c->enabled = true;
    c->dhat = 0;
    c->stiffness = 0;
    c->min_sep = 0.2;
    c->edge_edge = true;
    c->dedup = true;
    c->proxy_cells = 20;
    c->mu = 0;
    c->eps_v = 1e-3;
    c->kappa_adapt = 0.1;
    c->friction_majorize = true;
    memset(c->mu_set, 0, sizeof c->mu_set);
    memset(c->mu_pair, 0, sizeof c->mu_pair);
}

bool sim_contact_material_ok(int i) { return i >= 0 && i < SIM_CONTACT_MATERIALS; }

double sim_contact_mu(const SimContactOptions *c, int i, int j) {
    return sim_contact_material_ok(i) && sim_contact_material_ok(j) && c->mu_set[i][j] ? c->mu_pair[i][j] : c->mu;
}

int sim_contact_set_mu(SimContactOptions *c, int i, int j, double mu) {
    if (!sim_contact_material_ok(i) || !sim_contact_material_ok(j) || !(mu >= 0)) return -1;
    c->mu_set[i][j] = c->mu_set[j][i] = true;
    c->mu_pair[i][j] = c->mu_pair[j][i] = mu;
    return 0;
}

bool sim_contact_any_friction(const SimContactOptions *c) {
    if (c->mu > 0) return true;
    for (int i = 0; i < SIM_CONTACT_MATERIALS; i++)
        for (int j = 0; j < SIM_CONTACT_MATERIALS; j++)
            if (c->mu_set[i][j] && c->mu_pair[i][j] > 0) return true;
    return false;
}
