/* models/skelebones/skeleton.c — mean curvature skeleton: the contraction of the working mesh and
 * the curve graph it ends in (see skeleton.h for the algorithm; the poles: skeleton_poles.c). */
#include "base/errbuf.h"
#include "base/par.h"
#include "models/skelebones/skeleton.h"
#include "models/skelebones/skeleton_internal.h"

#include "datasets/geometry/geometry.h"

#include <cholmod.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void sb_skel_defaults(SbSkelOptions *o) {
    o->w_h = 0.1;
    o->w_m = 0.2;
    o->min_edge_rel = 0.002;
    o->max_angle_deg = 110.0;
    o->area_tol = 1e-4;
    o->vol_tol = 1e-9;
    o->max_iter = 100;
    o->voronoi_poles = 1;
}

void sb_skeleton_free(SbSkeleton *s) {
    if (!s) return;
    free(s->nodes), free(s->edges), free(s->corr);
    memset(s, 0, sizeof *s);
}

/* ---- the working mesh ------------------------------------------------------------------------ */

static void topo_free(Topo *t) {
    free(t->a), free(t->b), free(t->f0), free(t->f1), free(t->nfc), free(t->vadj_off), free(t->vadj);
    free(t->vf_off), free(t->vf), free(t->boff), free(t->fill), free(t->bb), free(t->bf);
    memset(t, 0, sizeof *t);
}

static int work_growv(Work *w, int64_t need) {
    if (need <= w->capv) return 0;
    int64_t c = w->capv * 2 > need ? w->capv * 2 : need;
    double *x = realloc(w->x, (size_t)c * 3 * sizeof *x);
    if (!x) return -1;
    w->x = x;
    double *p = realloc(w->pole, (size_t)c * 3 * sizeof *p);
    if (!p) return -1;
    w->pole = p;
    uint8_t *h = realloc(w->has_pole, (size_t)c);
    if (!h) return -1;
    w->has_pole = h;
    uint8_t *fx = realloc(w->fixed, (size_t)c);
    if (!fx) return -1;
    w->fixed = fx;
    uint8_t *pi = realloc(w->pole_in, (size_t)c);
    if (!pi) return -1;
    w->pole_in = pi;
    double *ms = realloc(w->mass, (size_t)c * sizeof *ms);
    if (!ms) return -1;
    w->mass = ms;
    int64_t *pa = realloc(w->parent, (size_t)c * sizeof *pa);
    if (!pa) return -1;
    w->parent = pa;
    w->capv = c;
    return 0;
}

static int work_growf(Work *w, int64_t need) {
    if (need <= w->capf) return 0;
    int64_t c = w->capf * 2 > need ? w->capf * 2 : need;
    int32_t *f = realloc(w->f, (size_t)c * 3 * sizeof *f);
    if (!f) return -1;
    w->f = f;
    uint8_t *a = realloc(w->falive, (size_t)c);
    if (!a) return -1;
    w->falive = a;
    w->capf = c;
    return 0;
}

static void work_free(Work *w) {
    free(w->x), free(w->pole), free(w->has_pole), free(w->fixed), free(w->pole_in), free(w->mass), free(w->parent);
    free(w->f), free(w->falive);
    topo_free(&w->topo);
}

static double dist3(const double *a, const double *b) {
    double d0 = a[0] - b[0], d1 = a[1] - b[1], d2 = a[2] - b[2];
    return sqrt(d0 * d0 + d1 * d1 + d2 * d2);
}

static double work_area(const Work *w) {
    double A = 0;
    for (int64_t i = 0; i < w->nf; i++) {
        if (!w->falive[i]) continue;
        const int32_t *t = w->f + 3 * i;
        double n[3];
        sb_skel_tri_normal(w->x + 3 * t[0], w->x + 3 * t[1], w->x + 3 * t[2], n);
        A += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    }
    return A;
}

static double work_volume(const Work *w) {
    double V = 0;
    for (int64_t i = 0; i < w->nf; i++) {
        if (!w->falive[i]) continue;
        const int32_t *t = w->f + 3 * i;
        const double *a = w->x + 3 * t[0], *b = w->x + 3 * t[1], *c = w->x + 3 * t[2];
        V += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
              a[2] * (b[0] * c[1] - b[1] * c[0])) / 6.0;
    }
    return fabs(V);
}

/* ---- edges and adjacency of the current mesh ---------------------------------------------------- */

static int cmp_u64(const void *p, const void *q) {
    uint64_t a = *(const uint64_t *)p, b = *(const uint64_t *)q;
    return a < b ? -1 : a > b;
}

/* Edges in (a, b) order, a < b, each with its faces in face order (the order a stable sort of
 * the (a, b) keys gives): a counting sort by a, then each vertex's few (b, face) pairs by
 * insertion sort. It runs several times per contraction iteration, so it is linear, not a
 * general sort. Neighbour lists come out sorted because edges are visited in (a, b) order. */
static int topo_grow(void **p, size_t n, size_t elem) {
    void *q = realloc(*p, n * elem);
    if (!q) return -1;
    *p = q;
    return 0;
}

static int topo_build(const Work *w, Topo *t) {
    int64_t nv = w->nv, nfa = 0;
    for (int64_t i = 0; i < w->nf; i++) nfa += w->falive[i];
    int64_t m = 3 * nfa;
    t->ne = 0;
    if (nv + 2 > t->capv) {
        size_t c = (size_t)(nv + 2) * 2;
        if (topo_grow((void **)&t->boff, c, sizeof *t->boff) || topo_grow((void **)&t->fill, c, sizeof *t->fill) ||
            topo_grow((void **)&t->vadj_off, c, sizeof *t->vadj_off) ||
            topo_grow((void **)&t->vf_off, c, sizeof *t->vf_off))
            return -1;
        t->capv = (int64_t)c;
    }
    if (m + 1 > t->capm) {
        size_t c = (size_t)(m + 1) * 2;
        /* vadj holds both directions of every edge: at most 2 × corners */
        if (topo_grow((void **)&t->bb, c, sizeof *t->bb) || topo_grow((void **)&t->bf, c, sizeof *t->bf) ||
            topo_grow((void **)&t->a, c, sizeof *t->a) || topo_grow((void **)&t->b, c, sizeof *t->b) ||
            topo_grow((void **)&t->f0, c, sizeof *t->f0) || topo_grow((void **)&t->f1, c, sizeof *t->f1) ||
            topo_grow((void **)&t->nfc, c, sizeof *t->nfc) || topo_grow((void **)&t->vf, c, sizeof *t->vf) ||
            topo_grow((void **)&t->vadj, 2 * c, sizeof *t->vadj))
            return -1;
        t->capm = (int64_t)c;
    }
    int64_t *boff = t->boff, *fill = t->fill;
    int32_t *bb = t->bb, *bf = t->bf;
    memset(boff, 0, (size_t)(nv + 2) * sizeof *boff);
    memset(t->vadj_off, 0, (size_t)(nv + 1) * sizeof *t->vadj_off);
    memset(t->vf_off, 0, (size_t)(nv + 1) * sizeof *t->vf_off);
    for (int64_t i = 0; i < w->nf; i++) {
        if (!w->falive[i]) continue;
        for (int c = 0; c < 3; c++) {
            int32_t a = w->f[3 * i + c], b = w->f[3 * i + (c + 1) % 3];
            boff[(a < b ? a : b) + 1]++;
        }
    }
    for (int64_t v = 0; v < nv; v++) boff[v + 1] += boff[v];
    memcpy(fill, boff, (size_t)nv * sizeof *fill);
    for (int64_t i = 0; i < w->nf; i++) {
        if (!w->falive[i]) continue;
        for (int c = 0; c < 3; c++) {
            int32_t a = w->f[3 * i + c], b = w->f[3 * i + (c + 1) % 3];
            if (a > b) { int32_t s = a; a = b; b = s; }
            int64_t q = fill[a]++;
            bb[q] = b, bf[q] = (int32_t)i;
        }
    }
    int64_t ne = 0;
    for (int64_t a = 0; a < nv; a++) {
        int64_t lo = boff[a], hi = boff[a + 1];
        for (int64_t q = lo + 1; q < hi; q++) { /* stable: equal b keep face order */
            int32_t kb = bb[q], kf = bf[q];
            int64_t r = q - 1;
            while (r >= lo && bb[r] > kb) bb[r + 1] = bb[r], bf[r + 1] = bf[r], r--;
            bb[r + 1] = kb, bf[r + 1] = kf;
        }
        for (int64_t q = lo; q < hi;) {
            int64_t r = q;
            while (r < hi && bb[r] == bb[q]) r++;
            t->a[ne] = (int32_t)a, t->b[ne] = bb[q], t->f0[ne] = bf[q], t->f1[ne] = r - q > 1 ? bf[q + 1] : -1;
            t->nfc[ne] = (int32_t)(r - q);
            ne++;
            q = r;
        }
    }
    t->ne = ne;
    for (int64_t e = 0; e < ne; e++) t->vadj_off[t->a[e] + 1]++, t->vadj_off[t->b[e] + 1]++;
    for (int64_t v = 0; v < nv; v++) t->vadj_off[v + 1] += t->vadj_off[v];
    memcpy(fill, t->vadj_off, (size_t)nv * sizeof *fill);
    for (int64_t e = 0; e < ne; e++) t->vadj[fill[t->a[e]]++] = t->b[e], t->vadj[fill[t->b[e]]++] = t->a[e];
    for (int64_t i = 0; i < w->nf; i++)
        if (w->falive[i])
            for (int c = 0; c < 3; c++) t->vf_off[w->f[3 * i + c] + 1]++;
    for (int64_t v = 0; v < nv; v++) t->vf_off[v + 1] += t->vf_off[v];
    memcpy(fill, t->vf_off, (size_t)nv * sizeof *fill);
    for (int64_t i = 0; i < w->nf; i++)
        if (w->falive[i])
            for (int c = 0; c < 3; c++) t->vf[fill[w->f[3 * i + c]]++] = (int32_t)i;
    return 0;
}

/* the current connectivity of w (built when the faces changed since the last call); NULL when out
 * of memory */
static const Topo *work_topo(Work *w) {
    if (!w->topo_ok) {
        if (topo_build(w, &w->topo)) return NULL;
        w->topo_ok = true;
    }
    return &w->topo;
}



/* the vertex of face fi that is neither a nor b */
static int32_t opposite(const Work *w, int32_t fi, int32_t a, int32_t b) {
    for (int c = 0; c < 3; c++) {
        int32_t v = w->f[3 * fi + c];
        if (v != a && v != b) return v;
    }
    return -1;
}

/* link condition for collapsing edge e: the common neighbors of a and b are exactly the
 * vertices opposite e in its (two) faces */
static bool link_ok(const Work *w, const Topo *t, int64_t e) {
    if (t->nfc[e] != 2) return false;
    int32_t a = t->a[e], b = t->b[e];
    int32_t o0 = opposite(w, t->f0[e], a, b), o1 = opposite(w, t->f1[e], a, b);
    const int32_t *na = t->vadj + t->vadj_off[a], *nb = t->vadj + t->vadj_off[b];
    int64_t la = t->vadj_off[a + 1] - t->vadj_off[a], lb = t->vadj_off[b + 1] - t->vadj_off[b];
    int64_t i = 0, j = 0, common = 0;
    while (i < la && j < lb) {
        if (na[i] < nb[j]) i++;
        else if (na[i] > nb[j]) j++;
        else {
            if (na[i] != o0 && na[i] != o1) return false;
            common++, i++, j++;
        }
    }
    /* a closed tetrahedron (both ends have exactly three neighbors: the whole component) would
     * collapse to a flat double triangle; refuse only that, as CGAL's link condition does. Refusing
     * every edge with one end of valence 3, as before, left short edges that could never collapse
     * and that the degeneracy test then froze as skeletal: the contraction of the bunny's body
     * stalled as a sheet with thousands of fixed vertices and ended in a fan of branches. */
    if (la <= 3 && lb <= 3) return false;
    return common == 2;
}

/* merges b into a (a survives); faces holding both die. Uses t's face lists of b (current as
 * long as the caller touches no vertex twice in a pass). Died faces' edges go to *ge when ge. */
static void collapse(Work *w, const Topo *t, int32_t a, int32_t b, int32_t **ge, int64_t *nge, int64_t *cge,
                     bool midpoint) {
    w->topo_ok = false;
    for (int64_t q = t->vf_off[b]; q < t->vf_off[b + 1]; q++) {
        int32_t fi = t->vf[q];
        if (!w->falive[fi]) continue;
        int32_t *F = w->f + 3 * fi;
        bool has_a = F[0] == a || F[1] == a || F[2] == a;
        if (has_a) {
            w->falive[fi] = 0;
            if (ge) {
                if (*nge + 3 > *cge) {
                    int64_t c = *cge * 2 + 64;
                    int32_t *g = realloc(*ge, (size_t)c * 2 * sizeof *g);
                    if (!g) continue; /* an edge lost only if out of memory; checked by caller via counts */
                    *ge = g, *cge = c;
                }
                for (int c = 0; c < 3; c++) {
                    (*ge)[2 * *nge] = F[c], (*ge)[2 * *nge + 1] = F[(c + 1) % 3];
                    (*nge)++;
                }
            }
        } else {
            for (int c = 0; c < 3; c++)
                if (F[c] == b) F[c] = a;
        }
    }
    double ma = w->mass[a], mb = w->mass[b];
    if (w->fixed[b] && !w->fixed[a]) memcpy(w->x + 3 * a, w->x + 3 * b, 3 * sizeof(double));
    else if (!w->fixed[a] || !w->fixed[b]) {
        for (int c = 0; c < 3; c++)
            w->x[3 * a + c] = midpoint ? 0.5 * (w->x[3 * a + c] + w->x[3 * b + c])
                                       : (ma * w->x[3 * a + c] + mb * w->x[3 * b + c]) / (ma + mb);
    }
    /* the kept vertex keeps its pole, or takes b's if it has none; with the Voronoi poles, as
     * CGAL's update_pole, the nearer of the two */
    if (w->has_pole[b] && (!w->has_pole[a] || (w->voronoi && dist3(w->pole + 3 * b, w->x + 3 * a) <
                                                                 dist3(w->pole + 3 * a, w->x + 3 * a)))) {
        memcpy(w->pole + 3 * a, w->pole + 3 * b, 3 * sizeof(double));
        w->has_pole[a] = 1, w->pole_in[a] = w->pole_in[b];
    }
    w->fixed[a] |= w->fixed[b];
    w->mass[a] = ma + mb;
    w->parent[b] = a;
}

static void mark_ring(const Topo *t, uint8_t *dirty, int32_t v) {
    dirty[v] = 1;
    for (int64_t q = t->vadj_off[v]; q < t->vadj_off[v + 1]; q++) dirty[t->vadj[q]] = 1;
}

/* one pass of short-edge collapse with the link condition; degenerate vertices get fixed.
 * Returns collapses done, -1 on allocation failure. */
static int64_t collapse_pass(Work *w, double min_len) {
    const Topo *t = work_topo(w);
    if (!t) return -1;
    uint8_t *dirty = calloc((size_t)w->nv, 1);
    if (!dirty) return -1;
    int64_t done = 0;
    for (int64_t e = 0; e < t->ne; e++) {
        int32_t a = t->a[e], b = t->b[e];
        if (dirty[a] || dirty[b]) continue;
        if (dist3(w->x + 3 * a, w->x + 3 * b) >= min_len) continue;
        if (w->fixed[a] && w->fixed[b]) continue;
        /* short but not collapsible: left to the degeneracy test (detect_degenerate) */
        if (!link_ok(w, t, e)) continue;
        mark_ring(t, dirty, a), mark_ring(t, dirty, b);
        collapse(w, t, a, b, NULL, NULL, NULL, true);
        done++;
    }
    free(dirty);
    return done;
}

/* Degenerate vertices (Tagliasacchi et al. §4; CGAL's is_vertex_degenerate): the part of the mesh
 * within min_len of a vertex, reached along edges, is a disk (Euler characteristic V − E + F = 1)
 * while the surface there is still a surface; where it has thinned into a curve the short edges
 * form a ring or a path without faces and the count differs. Such vertices are skeletal: they get
 * fixed. Returns the number newly fixed, -1 on allocation failure. */
static int64_t detect_degenerate(Work *w, double min_len) {
    const Topo *t = work_topo(w);
    if (!t) return -1;
    int32_t *disk = malloc((size_t)w->nv * sizeof *disk);
    int32_t *mark = malloc((size_t)w->nv * sizeof *mark);
    uint8_t *newfix = calloc((size_t)w->nv + 1, 1);
    if (!disk || !mark || !newfix) {
        free(disk), free(mark), free(newfix);
        return -1;
    }
    for (int64_t v = 0; v < w->nv; v++) mark[v] = -1;
    double l2 = min_len * min_len;
    for (int64_t r = 0; r < w->nv; r++) {
        if (w->fixed[r] || t->vf_off[r + 1] == t->vf_off[r]) continue;
        /* breadth first from r over edges, keeping vertices closer than min_len to r */
        int64_t nd = 0;
        disk[nd++] = (int32_t)r, mark[r] = (int32_t)r;
        for (int64_t q = 0; q < nd; q++) {
            int32_t v = disk[q];
            for (int64_t k = t->vadj_off[v]; k < t->vadj_off[v + 1]; k++) {
                int32_t u = t->vadj[k];
                if (mark[u] == (int32_t)r) continue;
                const double *pu = w->x + 3 * u, *pr = w->x + 3 * r;
                double d0 = pu[0] - pr[0], d1 = pu[1] - pr[1], d2 = pu[2] - pr[2];
                if (d0 * d0 + d1 * d1 + d2 * d2 < l2) mark[u] = (int32_t)r, disk[nd++] = u;
            }
        }
        if (nd == 1) continue; /* a lone vertex is a disk */
        int64_t E = 0, F = 0;
        for (int64_t q = 0; q < nd; q++) {
            int32_t v = disk[q];
            for (int64_t k = t->vadj_off[v]; k < t->vadj_off[v + 1]; k++) E += t->vadj[k] > v && mark[t->vadj[k]] == (int32_t)r;
            for (int64_t k = t->vf_off[v]; k < t->vf_off[v + 1]; k++) {
                const int32_t *Fv = w->f + 3 * t->vf[k];
                /* count each face once: at its smallest vertex */
                int32_t lo = Fv[0] < Fv[1] ? (Fv[0] < Fv[2] ? Fv[0] : Fv[2]) : (Fv[1] < Fv[2] ? Fv[1] : Fv[2]);
                if (lo == v && mark[Fv[0]] == (int32_t)r && mark[Fv[1]] == (int32_t)r && mark[Fv[2]] == (int32_t)r) F++;
            }
        }
        if (nd - E + F != 1) newfix[r] = 1;
    }
    int64_t n = 0;
    for (int64_t v = 0; v < w->nv; v++)
        if (newfix[v]) w->fixed[v] = 1, n++;
    free(disk), free(mark), free(newfix);
    return n;
}

/* splits edges between two obtuse triangles at the foot of the larger obtuse angle (one pass: a
 * face is split at most once); returns splits, -1 on failure */
static int64_t split_pass(Work *w, double max_angle_rad) {
    const Topo *t = work_topo(w);
    if (!t) return -1;
    double cmax = cos(max_angle_rad);
    uint8_t *ftouched = calloc((size_t)w->nf + 1, 1);
    if (!ftouched) return -1;
    int64_t done = 0, nf0 = w->nf;
    for (int64_t e = 0; e < t->ne; e++) {
        if (t->nfc[e] != 2) continue;
        int32_t a = t->a[e], b = t->b[e], f0 = t->f0[e], f1 = t->f1[e];
        if (ftouched[f0] || ftouched[f1]) continue;
        /* an edge between two skeletal (fixed) vertices is part of the curve already */
        if (w->fixed[a] && w->fixed[b]) continue;
        /* As CGAL: an edge is split only when the angles opposite it on both sides are obtuse
         * (> max_angle), at the foot of the larger one. Splitting where either side is obtuse,
         * as before, multiplied the vertices (the bunny's 10k became 88k) and was kept only
         * because, with the link condition above refusing valence-3 collapses, the quadruped's
         * leg curves cut through the creases where the legs meet the body; with CGAL's link
         * condition they do not (bench/run_skeleton.sh, against the generating bones). */
        double cs[2], foot[2];
        bool ok = true;
        for (int s = 0; s < 2 && ok; s++) {
            int32_t fi = s ? f1 : f0, c = opposite(w, fi, a, b);
            const double *pa = w->x + 3 * a, *pb = w->x + 3 * b, *pc = w->x + 3 * c;
            double u[3], v[3], d[3], uu = 0, vv = 0, uv = 0, dd = 0, du = 0;
            for (int k = 0; k < 3; k++) {
                u[k] = pa[k] - pc[k], v[k] = pb[k] - pc[k], d[k] = pb[k] - pa[k];
                uu += u[k] * u[k], vv += v[k] * v[k], uv += u[k] * v[k], dd += d[k] * d[k];
                du += d[k] * (pc[k] - pa[k]);
            }
            ok = uu > 0 && vv > 0 && dd > 0;
            if (ok) cs[s] = uv / sqrt(uu * vv), foot[s] = du / dd, ok = cs[s] < cmax;
        }
        if (!ok) continue;
        /* the foot of the larger angle (CGAL puts no length condition on it) */
        double tt = cs[0] < cs[1] ? foot[0] : foot[1];

        if (work_growv(w, w->nv + 1) || work_growf(w, w->nf + 2)) {
            free(ftouched);
            return -1;
        }
        int32_t p = (int32_t)w->nv++;
        for (int k = 0; k < 3; k++) {
            w->x[3 * p + k] = (1 - tt) * w->x[3 * a + k] + tt * w->x[3 * b + k];
            w->pole[3 * p + k] = (1 - tt) * w->pole[3 * a + k] + tt * w->pole[3 * b + k];
        }
        /* no pole for a split vertex (CGAL attracts only input vertices to their poles): an
         * interpolated pole lies between two poles, off the medial axis */
        w->has_pole[p] = 0;
        /* a small mass: a node made only of split vertices still gets a position, and one with input
         * vertices is placed by them */
        w->fixed[p] = 0, w->mass[p] = 1e-3, w->parent[p] = p;
        int32_t fs[2] = {f0, f1};
        for (int s = 0; s < 2; s++) {
            int32_t fi = fs[s], nf = (int32_t)w->nf++;
            memcpy(w->f + 3 * nf, w->f + 3 * fi, 3 * sizeof(int32_t));
            w->falive[nf] = 1;
            for (int c = 0; c < 3; c++) {
                if (w->f[3 * fi + c] == b) w->f[3 * fi + c] = p;
                if (w->f[3 * nf + c] == a) w->f[3 * nf + c] = p;
            }
            ftouched[fi] = 1;
        }
        w->topo_ok = false;
        done++;
    }
    (void)nf0;
    free(ftouched);
    return done;
}

/* ---- contraction solve ------------------------------------------------------------------------ */

static double cot_at(const double *o, const double *p, const double *q) {
    double u[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]}, v[3] = {q[0] - o[0], q[1] - o[1], q[2] - o[2]};
    double d = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
    double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    double s = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    double nrm = sqrt(d * d + s * s);
    if (nrm <= 1e-300) return 0;
    double cs = d / nrm;
    cs = cs > 0.999 ? 0.999 : cs < -0.999 ? -0.999 : cs;
    double r = cs / sqrt(1 - cs * cs);
    return r < 0 ? 0 : r;
}

static int contract(Work *w, const SbSkelOptions *o, cholmod_common *cm, char *err, size_t errlen) {
    const Topo *t = work_topo(w);
    if (!t) return (void)base_errf(err, errlen, "skeleton: out of memory"), -1;
    int64_t nv = w->nv;
    /* the active vertices (on some alive face) get consecutive indices */
    int32_t *idx = malloc((size_t)nv * sizeof *idx);
    if (!idx) return (void)base_errf(err, errlen, "skeleton: out of memory"), -1;
    int64_t n = 0;
    for (int64_t v = 0; v < nv; v++) idx[v] = t->vf_off[v + 1] > t->vf_off[v] ? (int32_t)n++ : -1;
    cholmod_triplet *T = cholmod_allocate_triplet((size_t)n, (size_t)n, (size_t)(n + 2 * t->ne), 0, CHOLMOD_REAL, cm);
    cholmod_triplet *D = cholmod_allocate_triplet((size_t)n, (size_t)n, (size_t)n, 0, CHOLMOD_REAL, cm);
    cholmod_dense *B = cholmod_zeros((size_t)n, 3, CHOLMOD_REAL, cm);
    double *diag = calloc((size_t)n + 1, sizeof *diag);
    int rc = -1;
    cholmod_sparse *Mt = NULL, *A = NULL, *Ds = NULL, *S = NULL, *Su = NULL;
    cholmod_factor *L = NULL;
    cholmod_dense *X = NULL;
    if (!T || !D || !B || !diag) goto done;
    int32_t *Ti = T->i, *Tj = T->j;
    double *Tx = T->x;
    int64_t nz = 0;
    /* Mt = transpose of the Laplacian with fixed rows removed: column j holds row j of L */
    for (int64_t e = 0; e < t->ne; e++) {
        int32_t a = t->a[e], b = t->b[e];
        double wgt = 0;
        for (int s = 0; s < 2; s++) {
            int32_t fi = s ? t->f1[e] : t->f0[e];
            if (fi < 0) continue;
            int32_t c = opposite(w, fi, a, b);
            if (c >= 0) wgt += cot_at(w->x + 3 * c, w->x + 3 * a, w->x + 3 * b);
        }
        int32_t ia = idx[a], ib = idx[b];
        if (!w->fixed[a]) Ti[nz] = ib, Tj[nz] = ia, Tx[nz] = wgt, nz++, diag[ia] -= wgt;
        if (!w->fixed[b]) Ti[nz] = ia, Tj[nz] = ib, Tx[nz] = wgt, nz++, diag[ib] -= wgt;
    }
    for (int64_t v = 0; v < nv; v++)
        if (idx[v] >= 0 && !w->fixed[v]) Ti[nz] = idx[v], Tj[nz] = idx[v], Tx[nz] = diag[idx[v]], nz++;
    T->nnz = (size_t)nz;
    int32_t *Di = D->i, *Dj = D->j;
    double *Dx = D->x, *Bx = B->x;
    for (int64_t v = 0; v < nv; v++) {
        int32_t i = idx[v];
        if (i < 0) continue;
        double wd, wp = 0;
        if (w->fixed[v]) wd = 1e8;
        else {
            wd = o->w_h * o->w_h;
            if (w->has_pole[v] && w->pole_in[v]) wp = o->w_m * o->w_m;
        }
        Di[i] = Dj[i] = i, Dx[i] = wd + wp;
        for (int c = 0; c < 3; c++) Bx[i + c * n] = wd * w->x[3 * v + c] + (wp > 0 ? wp * w->pole[3 * v + c] : 0);
    }
    D->nnz = (size_t)n;
    Mt = cholmod_triplet_to_sparse(T, 0, cm);
    Ds = cholmod_triplet_to_sparse(D, 0, cm);
    if (!Mt || !Ds) goto done;
    A = cholmod_aat(Mt, NULL, 0, 1, cm); /* Mt Mtᵀ = LᵀL over the free rows */
    if (!A) goto done;
    double one[2] = {1, 0};
    S = cholmod_add(A, Ds, one, one, 1, 1, cm);
    if (!S) goto done;
    Su = cholmod_copy(S, 1, 1, cm); /* symmetric, upper part */
    if (!Su) goto done;
    /* CHOLMOD's fixed 4-thread regions stay inactive when the caller runs one thread (the CGAL
     * comparison: OMP_NUM_THREADS=1): 0.61 -> 0.41 CPU s of the bunny's contraction (base/par.h) */
    int saved = base_par_serial_regions_begin();
    L = cholmod_analyze(Su, cm);
    int fac_ok = L && cholmod_factorize(Su, L, cm) && cm->status == CHOLMOD_OK;
    if (fac_ok) X = cholmod_solve(CHOLMOD_A, L, B, cm);
    base_par_serial_regions_end(saved);
    if (!fac_ok || !X) goto done;
    const double *Xx = X->x;
    for (int64_t v = 0; v < nv; v++)
        if (idx[v] >= 0 && !w->fixed[v])
            for (int c = 0; c < 3; c++) w->x[3 * v + c] = Xx[idx[v] + c * n];
    rc = 0;
done:
    if (rc) (void)base_errf(err, errlen, "skeleton: the contraction solve failed (CHOLMOD status %d)", cm->status);
    cholmod_free_triplet(&T, cm), cholmod_free_triplet(&D, cm), cholmod_free_dense(&B, cm);
    cholmod_free_sparse(&Mt, cm), cholmod_free_sparse(&Ds, cm), cholmod_free_sparse(&A, cm);
    cholmod_free_sparse(&S, cm), cholmod_free_sparse(&Su, cm), cholmod_free_factor(&L, cm);
    cholmod_free_dense(&X, cm);
    free(diag), free(idx);
    return rc;
}

/* ---- the whole thing ------------------------------------------------------------------------ */

int sb_skeleton_mcf(const DsMesh *m, const SbSkelOptions *opt, SbSkeleton *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    SbSkelOptions o;
    if (opt) o = *opt;
    else sb_skel_defaults(&o);
    if (!m || m->nv < 4 || m->nf < 4 || m->nv > INT32_MAX / 4)
        return (void)base_errf(err, errlen, "skeleton: need a closed mesh of at least 4 vertices and faces"), -1;
    for (int64_t i = 0; i < 3 * m->nf; i++)
        if (m->f[i] < 0 || m->f[i] >= m->nv) return (void)base_errf(err, errlen, "skeleton: face index out of range"), -1;
    /* the contraction and the poles need inside and outside: a closed, edge-manifold, oriented
     * surface (an open or polygon-soup mesh gives a meaningless "skeleton") */
    DsMeshCheck mc;
    if (ds_mesh_check(m, &mc)) return (void)base_errf(err, errlen, "skeleton: out of memory"), -1;
    if (!mc.watertight || !mc.oriented)
        return (void)base_errf(err, errlen,
                      "skeleton: the mesh is not closed and consistently oriented (%lld boundary, %lld non-manifold, "
                      "%lld misoriented edges)",
                      (long long)mc.boundary_edges, (long long)mc.nonmanifold_edges, (long long)mc.misoriented_edges),
               -1;
    Work w = {0};
    if (work_growv(&w, m->nv * 2) || work_growf(&w, m->nf * 2)) {
        work_free(&w);
        return (void)base_errf(err, errlen, "skeleton: out of memory"), -1;
    }
    w.nv = m->nv, w.nf = m->nf;
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    for (int64_t v = 0; v < m->nv; v++) {
        for (int k = 0; k < 3; k++) {
            w.x[3 * v + k] = m->v[3 * v + k];
            if (w.x[3 * v + k] < lo[k]) lo[k] = w.x[3 * v + k];
            if (w.x[3 * v + k] > hi[k]) hi[k] = w.x[3 * v + k];
        }
        w.fixed[v] = 0, w.mass[v] = 1, w.parent[v] = v;
    }
    memcpy(w.f, m->f, (size_t)m->nf * 3 * sizeof(int32_t));
    memset(w.falive, 1, (size_t)m->nf);
    for (int64_t i = 0; i < m->nf; i++) {
        const int32_t *F = m->f + 3 * i;
        if (F[0] == F[1] || F[1] == F[2] || F[0] == F[2]) w.falive[i] = 0;
    }
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    double min_len = o.min_edge_rel * diag;
    double cen[3] = {0, 0, 0};
    for (int64_t v = 0; v < m->nv; v++)
        for (int k = 0; k < 3; k++) cen[k] += w.x[3 * v + k] / (double)m->nv;
    if (o.w_m > 0 && !o.voronoi_poles) sb_skel_ray_poles(&w, 1e-6 * diag);
    else if (o.w_m > 0) sb_skel_voronoi_poles(&w);
    else memset(w.has_pole, 0, (size_t)w.nv);
    memset(w.pole_in, 1, (size_t)w.capv);
    w.voronoi = o.voronoi_poles != 0;
    double A0 = work_area(&w), V0 = work_volume(&w), Aprev = A0, Aprev2 = A0;
    cholmod_common cm;
    cholmod_start(&cm);
    cm.print = 0;
    int rc = -1, it = 0;
    for (it = 0; it < o.max_iter; it++) {
        if (o.w_m > 0 && o.voronoi_poles && sb_skel_poles_inside(&w)) goto oom;
        if (contract(&w, &o, &cm, err, errlen)) goto out;
        for (int pass = 0; pass < 20; pass++) {
            int64_t c = collapse_pass(&w, min_len);
            if (c < 0) goto oom;
            if (c == 0) break;
        }
        /* split until no edge qualifies, as CGAL does (a split can leave a new doubly obtuse
         * edge); the cap only guards against a cycle */
        for (int pass = 0; pass < 50; pass++) {
            int64_t c = split_pass(&w, o.max_angle_deg * M_PI / 180.0);
            if (c < 0) goto oom;
            if (c == 0) break;
        }
        if (detect_degenerate(&w, min_len) < 0) goto oom;
        double A = work_area(&w);
        double V = work_volume(&w);
        /* converged: the area's mean change over the last two iterations under area_tol. One
         * iteration's change is noisy (collapses and splits move area around) and fell under
         * the tolerance by chance after 6 of the procedural quadruped's ~18 iterations, with
         * its legs still tubes. */
        if ((it > 0 && fabs(A - Aprev2) / (2 * A0) < o.area_tol) || V / V0 < o.vol_tol) {
            it++;
            break;
        }
        Aprev2 = Aprev, Aprev = A;
    }
    out->iterations = it;
    out->area_ratio = work_area(&w) / A0;
    out->volume_ratio = work_volume(&w) / V0;
    for (int64_t v = 0; v < w.nv; v++) out->fixed += w.fixed[v] && w.parent[v] == v;
    /* the curve graph: collapse every remaining face, shortest edge first */
    int32_t *ge = NULL;
    int64_t nge = 0, cge = 0;
    for (;;) {
        const Topo *t = work_topo(&w);
        if (!t) goto oom;
        if (t->ne == 0) break;
        double *len = malloc((size_t)t->ne * sizeof *len);
        int64_t *ord = malloc((size_t)t->ne * sizeof *ord);
        uint8_t *dirty = calloc((size_t)w.nv, 1);
        if (!len || !ord || !dirty) {
            free(len), free(ord), free(dirty), free(ge);
            goto oom;
        }
        /* sort edges by length (pack the length's bits, non-negative doubles sort as integers) */
        uint64_t *key = malloc((size_t)t->ne * 2 * sizeof *key);
        if (!key) {
            free(len), free(ord), free(dirty), free(ge);
            goto oom;
        }
        for (int64_t e = 0; e < t->ne; e++) {
            double l = dist3(w.x + 3 * t->a[e], w.x + 3 * t->b[e]);
            memcpy(&key[2 * e], &l, sizeof l);
            key[2 * e + 1] = (uint64_t)e;
        }
        qsort(key, (size_t)t->ne, 2 * sizeof *key, cmp_u64);
        int64_t done = 0;
        for (int64_t q = 0; q < t->ne; q++) {
            int64_t e = (int64_t)key[2 * q + 1];
            int32_t a = t->a[e], b = t->b[e];
            if (dirty[a] || dirty[b]) continue;
            mark_ring(t, dirty, a), mark_ring(t, dirty, b);
            int64_t before = nge;
            collapse(&w, t, a, b, &ge, &nge, &cge, false);
            (void)before;
            done++;
        }
        free(key), free(len), free(ord), free(dirty);
        if (!done) break;
    }
    /* nodes: the union-find roots reached from input vertices and from graph edges */
    int32_t *nid = malloc((size_t)w.nv * sizeof *nid);
    if (!nid) { free(ge); goto oom; }
    for (int64_t v = 0; v < w.nv; v++) nid[v] = -1;
    int64_t nn = 0;
    for (int64_t v = 0; v < m->nv; v++) {
        int64_t r = ds_uf_find(w.parent, v);
        if (nid[r] < 0) nid[r] = (int32_t)nn++;
    }
    for (int64_t i = 0; i < 2 * nge; i++) {
        int64_t r = ds_uf_find(w.parent, ge[i]);
        if (nid[r] < 0) nid[r] = (int32_t)nn++;
    }
    out->nnodes = nn;
    out->nsurf = m->nv;
    out->diag = diag;
    for (int k = 0; k < 3; k++) out->centroid[k] = (float)cen[k];
    out->nodes = malloc((size_t)(nn + 1) * 3 * sizeof(float));
    out->corr = malloc((size_t)m->nv * sizeof(int32_t));
    uint64_t *ek = malloc((size_t)(nge + 1) * sizeof *ek);
    if (!out->nodes || !out->corr || !ek) {
        free(nid), free(ge), free(ek);
        goto oom;
    }
    for (int64_t v = 0; v < w.nv; v++)
        if (w.parent[v] == v && nid[v] >= 0)
            for (int k = 0; k < 3; k++) out->nodes[3 * nid[v] + k] = (float)w.x[3 * v + k];
    for (int64_t v = 0; v < m->nv; v++) out->corr[v] = nid[ds_uf_find(w.parent, v)];
    int64_t ne = 0;
    for (int64_t i = 0; i < nge; i++) {
        uint32_t a = (uint32_t)nid[ds_uf_find(w.parent, ge[2 * i])], b = (uint32_t)nid[ds_uf_find(w.parent, ge[2 * i + 1])];
        if (a == b) continue;
        if (a > b) { uint32_t s = a; a = b; b = s; }
        ek[ne++] = ((uint64_t)a << 32) | b;
    }
    qsort(ek, (size_t)ne, sizeof *ek, cmp_u64);
    int64_t u = 0;
    for (int64_t i = 0; i < ne; i++)
        if (!u || ek[i] != ek[u - 1]) ek[u++] = ek[i];
    out->edges = malloc((size_t)(u + 1) * 2 * sizeof(int32_t));
    if (!out->edges) {
        free(nid), free(ge), free(ek);
        goto oom;
    }
    for (int64_t i = 0; i < u; i++)
        out->edges[2 * i] = (int32_t)(ek[i] >> 32), out->edges[2 * i + 1] = (int32_t)(ek[i] & 0xffffffffu);
    out->nedges = u;
    free(nid), free(ge), free(ek);
    rc = 0;
    goto out;
oom:
    (void)base_errf(err, errlen, "skeleton: out of memory");
out:
    cholmod_finish(&cm);
    work_free(&w);
    if (rc) sb_skeleton_free(out);
    return rc;
}

int sb_skeleton_components(const SbSkeleton *s, int64_t *cycles) {
    int64_t *p = malloc((size_t)(s->nnodes + 1) * sizeof *p);
    if (!p) return -1;
    for (int64_t i = 0; i < s->nnodes; i++) p[i] = i;
    int64_t comps = s->nnodes;
    for (int64_t e = 0; e < s->nedges; e++) comps -= ds_uf_union(p, s->edges[2 * e], s->edges[2 * e + 1]);
    free(p);
    if (cycles) *cycles = s->nedges - s->nnodes + comps;
    return (int)comps;
}

int sb_skeleton_to_mesh(const SbSkeleton *s, float r, const float rgb[3], const DsMesh *shape, const float shape_rgb[3],
                        DsMesh *out) {
    memset(out, 0, sizeof *out);
    int64_t sv = shape ? shape->nv : 0, sf = shape ? shape->nf : 0;
    int64_t nv = sv + 8 * s->nedges, nf = sf + 12 * s->nedges;
    out->v = malloc((size_t)(nv + 1) * 3 * sizeof(float));
    out->color = malloc((size_t)(nv + 1) * 3 * sizeof(float));
    out->f = malloc((size_t)(nf + 1) * 3 * sizeof(int32_t));
    if (!out->v || !out->color || !out->f) {
        ds_mesh_free(out);
        return -1;
    }
    out->nv = nv, out->nf = nf;
    if (shape) {
        memcpy(out->v, shape->v, (size_t)sv * 3 * sizeof(float));
        memcpy(out->f, shape->f, (size_t)sf * 3 * sizeof(int32_t));
        for (int64_t v = 0; v < sv; v++) memcpy(out->color + 3 * v, shape_rgb, 3 * sizeof(float));
    }
    /* a box around each segment: two squares of side 2r perpendicular to it, joined */
    static const int32_t quads[6][4] = {{0, 1, 2, 3}, {7, 6, 5, 4}, {0, 4, 5, 1}, {1, 5, 6, 2}, {2, 6, 7, 3}, {3, 7, 4, 0}};
    for (int64_t e = 0; e < s->nedges; e++) {
        const float *a = s->nodes + 3 * s->edges[2 * e], *b = s->nodes + 3 * s->edges[2 * e + 1];
        float d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        float l = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (l <= 0) l = 1, d[0] = 1, d[1] = d[2] = 0;
        for (int k = 0; k < 3; k++) d[k] /= l;
        float h[3] = {fabsf(d[0]) < 0.9f ? 1.f : 0.f, fabsf(d[0]) < 0.9f ? 0.f : 1.f, 0};
        float u[3] = {d[1] * h[2] - d[2] * h[1], d[2] * h[0] - d[0] * h[2], d[0] * h[1] - d[1] * h[0]};
        float ul = sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        for (int k = 0; k < 3; k++) u[k] /= ul;
        float v[3] = {d[1] * u[2] - d[2] * u[1], d[2] * u[0] - d[0] * u[2], d[0] * u[1] - d[1] * u[0]};
        int64_t base = sv + 8 * e;
        static const float cs[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
        for (int end = 0; end < 2; end++)
            for (int c = 0; c < 4; c++) {
                const float *p = end ? b : a;
                float *o = out->v + 3 * (base + 4 * end + c);
                for (int k = 0; k < 3; k++) o[k] = p[k] + r * (cs[c][0] * u[k] + cs[c][1] * v[k]);
                memcpy(out->color + 3 * (base + 4 * end + c), rgb, 3 * sizeof(float));
            }
        int32_t *F = out->f + 3 * (sf + 12 * e);
        for (int q = 0; q < 6; q++) {
            int32_t i0 = (int32_t)base + quads[q][0], i1 = (int32_t)base + quads[q][1];
            int32_t i2 = (int32_t)base + quads[q][2], i3 = (int32_t)base + quads[q][3];
            F[6 * q + 0] = i0, F[6 * q + 1] = i1, F[6 * q + 2] = i2;
            F[6 * q + 3] = i0, F[6 * q + 4] = i2, F[6 * q + 5] = i3;
        }
    }
    return 0;
}
