/* models/skelebones/skeleton_grid.c — the skeleton's ray queries through a uniform grid of the
 * working mesh's faces: the nearest hit (ray poles), the crossings and the inside test (CGAL's,
 * for the Voronoi poles) and sb_mesh_inside. See skeleton.h. */
#include "models/skelebones/skeleton.h"
#include "models/skelebones/skeleton_internal.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- the face grid ---------------------------------------------------------------------------- */

/* Möller–Trumbore; the distance along d to the triangle, or INFINITY */
static double ray_tri(const double *o, const double *d, const double *a, const double *b, const double *c) {
    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double p[3] = {d[1] * e2[2] - d[2] * e2[1], d[2] * e2[0] - d[0] * e2[2], d[0] * e2[1] - d[1] * e2[0]};
    double det = e1[0] * p[0] + e1[1] * p[1] + e1[2] * p[2];
    if (fabs(det) < 1e-300) return INFINITY;
    double inv = 1.0 / det, s[3] = {o[0] - a[0], o[1] - a[1], o[2] - a[2]};
    double u = (s[0] * p[0] + s[1] * p[1] + s[2] * p[2]) * inv;
    if (u < -1e-9 || u > 1 + 1e-9) return INFINITY; /* a ray through an edge hits one of its faces */
    double q[3] = {s[1] * e1[2] - s[2] * e1[1], s[2] * e1[0] - s[0] * e1[2], s[0] * e1[1] - s[1] * e1[0]};
    double v = (d[0] * q[0] + d[1] * q[1] + d[2] * q[2]) * inv;
    if (v < -1e-9 || u + v > 1 + 1e-9) return INFINITY;
    double tt = (e2[0] * q[0] + e2[1] * q[1] + e2[2] * q[2]) * inv;
    return tt > 0 ? tt : INFINITY;
}

void sb_skel_grid_free(CellGrid *g) {
    free(g->off), free(g->item);
    memset(g, 0, sizeof *g);
}

int64_t sb_skel_grid_shape(CellGrid *g, const double lo[3], const double hi[3], double ncells, int cap) {
    double ext[3], vol = 1, maxe = 0;
    for (int k = 0; k < 3; k++) ext[k] = hi[k] - lo[k], maxe = fmax(maxe, ext[k]);
    for (int k = 0; k < 3; k++) vol *= fmax(ext[k], 1e-3 * maxe);
    g->h = cbrt(vol / ncells);
    if (!(g->h > 0)) g->h = maxe > 0 ? maxe : 1;
    int64_t cells = 1;
    for (int k = 0; k < 3; k++) {
        g->n[k] = (int)(ext[k] / g->h) + 1;
        if (g->n[k] > cap) g->n[k] = cap;
        g->lo[k] = lo[k], cells *= g->n[k];
    }
    for (int k = 0; k < 3; k++) /* the cell size after the cap: the longest side decides */
        if (ext[k] / g->n[k] > g->h) g->h = ext[k] / g->n[k] * (1 + 1e-9);
    return cells;
}

int sb_skel_grid_build(const Work *w, CellGrid *g) {
    memset(g, 0, sizeof *g);
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    int64_t nfa = 0;
    for (int64_t i = 0; i < w->nf; i++) {
        if (!w->falive[i]) continue;
        nfa++;
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++) {
                double x = w->x[3 * w->f[3 * i + c] + k];
                lo[k] = x < lo[k] ? x : lo[k], hi[k] = x > hi[k] ? x : hi[k];
            }
    }
    if (!nfa) return 0;
    int64_t cells = sb_skel_grid_shape(g, lo, hi, 0.5 * (double)nfa + 1, 512);
    g->off = calloc((size_t)cells + 1, sizeof *g->off);
    if (!g->off) return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < w->nf; i++) {
            if (!w->falive[i]) continue;
            int c0[3], c1[3];
            for (int k = 0; k < 3; k++) {
                double a = w->x[3 * w->f[3 * i] + k], b = w->x[3 * w->f[3 * i + 1] + k], c = w->x[3 * w->f[3 * i + 2] + k];
                double mn = a < b ? (a < c ? a : c) : (b < c ? b : c), mx = a > b ? (a > c ? a : c) : (b > c ? b : c);
                c0[k] = sb_skel_grid_cell(g, k, mn), c1[k] = sb_skel_grid_cell(g, k, mx);
            }
            for (int z = c0[2]; z <= c1[2]; z++)
                for (int y = c0[1]; y <= c1[1]; y++)
                    for (int x = c0[0]; x <= c1[0]; x++) {
                        int64_t cell = ((int64_t)z * g->n[1] + y) * g->n[0] + x;
                        if (pass == 0) g->off[cell + 1]++;
                        else g->item[g->off[cell]++] = (int32_t)i;
                    }
        }
        if (pass == 0) {
            for (int64_t c = 0; c < cells; c++) g->off[c + 1] += g->off[c];
            g->item = malloc((size_t)(g->off[cells] + 1) * sizeof *g->item);
            if (!g->item) return sb_skel_grid_free(g), -1;
        }
    }
    for (int64_t c = cells; c > 0; c--) g->off[c] = g->off[c - 1]; /* the fill pass advanced each start */
    g->off[0] = 0;
    return 0;
}

/* A walk of the ray o + t d through the grid's cells in the order it meets them (3D DDA): from
 * the cell where it enters the grid's box; start is false when it misses the box. */
typedef struct {
    int c[3], step[3];
    double tmax[3], tdelta[3]; /* t of the next boundary on each axis; t between two of them */
} GridWalk;

static bool grid_walk_start(const CellGrid *g, const double *o, const double *d, GridWalk *gw) {
    double t0 = 0, t1 = INFINITY;
    for (int k = 0; k < 3; k++) {
        double a = g->lo[k], b = g->lo[k] + g->n[k] * g->h;
        if (fabs(d[k]) < 1e-300) {
            if (o[k] < a || o[k] > b) return false;
            continue;
        }
        double ta = (a - o[k]) / d[k], tb = (b - o[k]) / d[k];
        if (ta > tb) { double s = ta; ta = tb; tb = s; }
        t0 = ta > t0 ? ta : t0, t1 = tb < t1 ? tb : t1;
    }
    if (t0 > t1) return false;
    for (int k = 0; k < 3; k++) {
        gw->c[k] = sb_skel_grid_cell(g, k, o[k] + t0 * d[k]);
        if (d[k] > 0)
            gw->step[k] = 1, gw->tmax[k] = (g->lo[k] + (gw->c[k] + 1) * g->h - o[k]) / d[k], gw->tdelta[k] = g->h / d[k];
        else if (d[k] < 0)
            gw->step[k] = -1, gw->tmax[k] = (g->lo[k] + gw->c[k] * g->h - o[k]) / d[k], gw->tdelta[k] = -g->h / d[k];
        else gw->step[k] = 0, gw->tmax[k] = INFINITY, gw->tdelta[k] = INFINITY;
    }
    return true;
}

static int64_t grid_walk_cell(const CellGrid *g, const GridWalk *gw) {
    return ((int64_t)gw->c[2] * g->n[1] + gw->c[1]) * g->n[0] + gw->c[0];
}

static int grid_walk_axis(const GridWalk *gw) {
    const double *t = gw->tmax;
    return t[0] < t[1] ? (t[0] < t[2] ? 0 : 2) : (t[1] < t[2] ? 1 : 2);
}

/* the t at which the ray leaves the current cell */
static double grid_walk_exit(const GridWalk *gw) { return gw->tmax[grid_walk_axis(gw)]; }

/* on to the next cell; false when the ray leaves the grid */
static bool grid_walk_next(const CellGrid *g, GridWalk *gw) {
    int k = grid_walk_axis(gw);
    gw->c[k] += gw->step[k];
    if (gw->c[k] < 0 || gw->c[k] >= g->n[k]) return false;
    gw->tmax[k] += gw->tdelta[k];
    return true;
}

/* the nearest hit along the ray o + t d (t > 0) with a face not touching vertex `skip` */
double sb_skel_grid_ray(const CellGrid *g, const Work *w, const double *o, const double *d, int64_t skip) {
    GridWalk gw;
    if (!g->off || !grid_walk_start(g, o, d, &gw)) return INFINITY;
    double best = INFINITY;
    for (;;) {
        int64_t cell = grid_walk_cell(g, &gw);
        for (int64_t q = g->off[cell]; q < g->off[cell + 1]; q++) {
            const int32_t *F = w->f + 3 * g->item[q];
            if (F[0] == skip || F[1] == skip || F[2] == skip) continue;
            double tt = ray_tri(o, d, w->x + 3 * F[0], w->x + 3 * F[1], w->x + 3 * F[2]);
            if (tt < best) best = tt;
        }
        if (best <= grid_walk_exit(&gw)) return best; /* no later cell can hold a nearer hit */
        if (!grid_walk_next(g, &gw)) return best;
    }
}

/* The faces the ray o + t d (t > 0) crosses, counted once each (a face spanning several cells is
 * met in each). *degenerate is set when a crossing is within a tolerance of a face's edge or of
 * the origin: there the count may be off by one (the ray through an edge meets both faces or
 * neither), and the caller tries another direction (the count is still returned, for a vote).
 * Faces (nearly) parallel to the ray are skipped: a ray through such a face also crosses an edge
 * of a neighbour, which flags the ray. */
static int grid_ray_crossings(const CellGrid *g, const Work *w, const double *o, const double *d, bool *degenerate) {
    *degenerate = false;
    GridWalk gw;
    if (!g->off || !grid_walk_start(g, o, d, &gw)) return 0;
    enum { MAXHIT = 256 };
    int32_t hit[MAXHIT];
    int nhit = 0;
    const double tol = 1e-9;
    for (;;) {
        int64_t cell = grid_walk_cell(g, &gw);
        for (int64_t q = g->off[cell]; q < g->off[cell + 1]; q++) {
            int32_t fi = g->item[q];
            const int32_t *F = w->f + 3 * fi;
            const double *a = w->x + 3 * F[0], *b = w->x + 3 * F[1], *cc = w->x + 3 * F[2];
            double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
            double pv[3] = {d[1] * e2[2] - d[2] * e2[1], d[2] * e2[0] - d[0] * e2[2], d[0] * e2[1] - d[1] * e2[0]};
            double det = e1[0] * pv[0] + e1[1] * pv[1] + e1[2] * pv[2];
            double sc = sqrt((e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]) * (e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]));
            if (!(fabs(det) > 1e-12 * sc)) continue;
            double inv = 1.0 / det, sv[3] = {o[0] - a[0], o[1] - a[1], o[2] - a[2]};
            double u = (sv[0] * pv[0] + sv[1] * pv[1] + sv[2] * pv[2]) * inv;
            if (u < -tol || u > 1 + tol) continue;
            double qv[3] = {sv[1] * e1[2] - sv[2] * e1[1], sv[2] * e1[0] - sv[0] * e1[2], sv[0] * e1[1] - sv[1] * e1[0]};
            double v = (d[0] * qv[0] + d[1] * qv[1] + d[2] * qv[2]) * inv;
            if (v < -tol || u + v > 1 + tol) continue;
            double tt = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) * inv;
            double tl = tol * sqrt(sc);
            if (tt < -tl) continue;
            if (tt <= tl || u < tol || v < tol || u + v > 1 - tol) *degenerate = true;
            bool seen = false;
            for (int i = 0; i < nhit && !seen; i++) seen = hit[i] == fi;
            if (seen) continue;
            if (nhit == MAXHIT) { *degenerate = true; return nhit; }
            hit[nhit++] = fi;
        }
        if (!grid_walk_next(g, &gw)) return nhit;
    }
}

/* CGAL's inside test, each iteration: a Voronoi pole attracts its vertex only while it lies inside
 * the contracted surface; once the surface has contracted past the medial axis the pole would pull
 * it back outward. As CGAL's Side_of_triangle_mesh: the parity of a ray's crossings with the
 * surface, along the first of three fixed directions whose ray meets no edge or vertex (if all
 * three do, their majority). The face grid of the ray poles makes it about O(∛F) per pole; the
 * generalized winding number used before (> 1/2) classified the bench's poles alike but its
 * hierarchy, rebuilt each iteration, cost a fifth of the whole contraction (bench/run_skeleton.sh). */
static bool grid_inside(const CellGrid *g, const Work *w, const double *q) {
    /* directions with no simple ratios between components: an axis-aligned ray would run along
     * grid-aligned edges of marching-cubes meshes */
    static const double dirs[3][3] = {{0.438743940212, 0.781178235012, -0.444144481076},
                                      {-0.691293574456, 0.229097870545, 0.685293630225},
                                      {0.552682883676, -0.603081322861, 0.575182186884}};
    /* the six directions ±dirs by the length of their path to the grid's boundary (the walk's
     * cost); three tries of different lines at most */
    double len[6];
    int ord[6];
    for (int r = 0; r < 6; r++) {
        double t = INFINITY, sg = r < 3 ? 1 : -1;
        for (int k = 0; k < 3; k++) {
            double dk = sg * dirs[r % 3][k], bound = dk > 0 ? g->lo[k] + g->n[k] * g->h : g->lo[k];
            if (dk != 0) t = fmin(t, (bound - q[k]) / dk);
        }
        len[r] = t, ord[r] = r;
    }
    for (int i = 1; i < 6; i++)
        for (int j = i; j > 0 && len[ord[j]] < len[ord[j - 1]]; j--) {
            int tmp = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = tmp;
        }
    int votes = 0, tried = 0;
    bool line_used[3] = {false, false, false};
    for (int i = 0; i < 6 && tried < 3; i++) {
        int r = ord[i];
        if (line_used[r % 3]) continue; /* the opposite ray of a degenerate one meets the same edge */
        line_used[r % 3] = true, tried++;
        double d[3];
        for (int k = 0; k < 3; k++) d[k] = (r < 3 ? 1 : -1) * dirs[r % 3][k];
        bool deg;
        int n = grid_ray_crossings(g, w, q, d, &deg);
        if (!deg) return n & 1;
        votes += n & 1;
    }
    return votes >= 2;
}

int sb_skel_poles_inside(Work *w) {
    if (w->nv <= 0) return 0;
    CellGrid g;
    if (sb_skel_grid_build(w, &g)) return -1;
    int64_t nv = w->nv;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t v = 0; v < nv; v++) {
        w->pole_in[v] = 0;
        /* only the vertices whose pole the solve uses: alive (not collapsed into another), not fixed */
        if (!w->has_pole[v] || w->parent[v] != v || w->fixed[v]) continue;
        w->pole_in[v] = grid_inside(&g, w, w->pole + 3 * v);
    }
    sb_skel_grid_free(&g);
    return 0;
}

int sb_mesh_inside(const DsMesh *m, int64_t n, const double *q, uint8_t *inside) {
    if (!m || m->nv < 1 || m->nv > INT32_MAX / 4 || n < 0) return -1;
    for (int64_t i = 0; i < 3 * m->nf; i++)
        if (m->f[i] < 0 || m->f[i] >= m->nv) return -1;
    Work w = {0};
    w.nv = w.capv = m->nv, w.nf = w.capf = m->nf;
    w.x = malloc((size_t)m->nv * 3 * sizeof *w.x);
    w.falive = malloc((size_t)m->nf + 1);
    CellGrid g;
    if (!w.x || !w.falive) return free(w.x), free(w.falive), -1;
    for (int64_t i = 0; i < 3 * m->nv; i++) w.x[i] = m->v[i];
    memset(w.falive, 1, (size_t)m->nf);
    w.f = m->f;
    if (sb_skel_grid_build(&w, &g)) return free(w.x), free(w.falive), -1;
    for (int64_t i = 0; i < n; i++) inside[i] = grid_inside(&g, &w, q + 3 * i);
    sb_skel_grid_free(&g);
    free(w.x), free(w.falive);
    return 0;
}
