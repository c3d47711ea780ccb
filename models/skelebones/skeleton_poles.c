/* models/skelebones/skeleton_poles.c — the medial poles the skeleton's contraction attracts the
 * surface to: ray poles (the midpoint to the first hit along the inward normal) and CGAL's
 * Voronoi poles (a 3-variable LP per vertex); see skeleton.h. */
#include "models/skelebones/skeleton.h"
#include "models/skelebones/skeleton_internal.h"

#include "datasets/geometry/geometry.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- ray poles ------------------------------------------------------------------------------- */

/* area-weighted vertex normals (unnormalized) of the live faces, added into vn (nv x 3, zeroed) */
static void vertex_normals(const Work *w, double *vn) {
    for (int64_t i = 0; i < w->nf; i++) {
        if (!w->falive[i]) continue;
        const int32_t *F = w->f + 3 * i;
        double n[3];
        sb_skel_tri_normal(w->x + 3 * F[0], w->x + 3 * F[1], w->x + 3 * F[2], n);
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++) vn[3 * F[c] + k] += n[k];
    }
}

void sb_skel_ray_poles(Work *w, double eps) {
    int64_t nv = w->nv;
    double *vn = calloc((size_t)nv * 3, sizeof *vn);
    CellGrid g;
    if (!vn || sb_skel_grid_build(w, &g)) {
        free(vn);
        memset(w->has_pole, 0, (size_t)nv);
        return;
    }
    vertex_normals(w, vn);
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t v = 0; v < nv; v++) {
        double *n = vn + 3 * v, l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        w->has_pole[v] = 0;
        if (l <= 0) continue;
        double d[3] = {-n[0] / l, -n[1] / l, -n[2] / l};
        double o[3] = {w->x[3 * v] + eps * d[0], w->x[3 * v + 1] + eps * d[1], w->x[3 * v + 2] + eps * d[2]};
        double best = sb_skel_grid_ray(&g, w, o, d, v);
        if (!isfinite(best)) continue;
        double h = 0.5 * (best + eps);
        for (int k = 0; k < 3; k++) w->pole[3 * v + k] = w->x[3 * v + k] + h * d[k];
        w->has_pole[v] = 1;
    }
    sb_skel_grid_free(&g);
    free(vn);
}

/* ---- Voronoi poles (CGAL's) ------------------------------------------------------------------ */

/* CGAL's pole of a surface vertex v: of the vertices of v's Voronoi cell (Voronoi diagram of the
 * mesh vertices), the one farthest along the inward normal d. That vertex is the optimum of the
 * linear program  max d·x  s.t.  (u − v)·x ≤ |u − v|²/2 for every other vertex u  (x = p − v),
 * solved here without a Delaunay tetrahedralization by Seidel's randomized incremental LP
 * (expected O(n) in 3 variables), bounded by the mesh's bounding box. The constraints come from a
 * uniform vertex grid: a vertex u with |u − v| > 2|x| satisfies (u − v)·x ≤ |u − v||x| <
 * |u − v|²/2, so only vertices near v can cut the optimum, and those that do lie in the ball
 * through v centred at the current optimum; constraints are added from that ball until it is
 * empty (the optimum's Delaunay ball), which certifies the optimum for all vertices. */
typedef struct {
    double a[3], b;
} LpHalf;

/* max c·x over lo ≤ x ≤ hi (d coordinates, d ≤ 3) and h[0..n); h[0..start) already hold at x
 * (start = 0: x is set from the box). buf holds (n + 2) × (d − 1) projected constraints. The
 * problem is never infeasible (x = 0, the vertex itself, satisfies every constraint), so a
 * numerically empty interval takes its midpoint. */
static void lp_seidel(int d, const double *c, const double *lo, const double *hi, const LpHalf *h, int n, int start,
                      double *x, LpHalf *buf) {
    if (d == 1) {
        double L = lo[0], H = hi[0];
        for (int i = 0; i < n; i++) {
            double a = h[i].a[0], b = h[i].b;
            if (a > 0) H = fmin(H, b / a);
            else if (a < 0) L = fmax(L, b / a);
        }
        x[0] = L > H ? 0.5 * (L + H) : c[0] > 0 ? H : c[0] < 0 ? L : 0.5 * (L + H);
        return;
    }
    if (start == 0)
        for (int k = 0; k < d; k++) x[k] = c[k] > 0 ? hi[k] : c[k] < 0 ? lo[k] : 0.5 * (lo[k] + hi[k]);
    for (int i = start; i < n; i++) {
        const double *a = h[i].a;
        double ax = 0, an = 0;
        for (int k = 0; k < d; k++) ax += a[k] * x[k], an += fabs(a[k]);
        if (an == 0 || ax - h[i].b <= 1e-12 * (fabs(h[i].b) + fabs(ax))) continue;
        /* the new optimum lies on a·x = b: eliminate the coordinate k with the largest |a_k|,
         * x_k = β + Σ γ_j x_j, and solve the constraints before i (and x_k's box) in d − 1 */
        int k = 0;
        for (int j = 1; j < d; j++)
            if (fabs(a[j]) > fabs(a[k])) k = j;
        int r[2], m = 0;
        for (int j = 0; j < d; j++)
            if (j != k) r[m++] = j;
        double beta = h[i].b / a[k], gam[2], c2[2], lo2[2], hi2[2];
        for (int j = 0; j < m; j++)
            gam[j] = -a[r[j]] / a[k], c2[j] = c[r[j]] + c[k] * gam[j], lo2[j] = lo[r[j]], hi2[j] = hi[r[j]];
        LpHalf *p = buf;
        int np = 0;
        for (int q = -2; q < i; q++) {
            double g[3] = {0, 0, 0}, e;
            if (q == -2) g[k] = 1, e = hi[k];
            else if (q == -1) g[k] = -1, e = -lo[k];
            else memcpy(g, h[q].a, sizeof g), e = h[q].b;
            for (int j = 0; j < m; j++) p[np].a[j] = g[r[j]] + g[k] * gam[j];
            p[np].b = e - g[k] * beta;
            np++;
        }
        double y[2];
        lp_seidel(d - 1, c2, lo2, hi2, p, np, 0, y, buf + np);
        x[k] = beta;
        for (int j = 0; j < m; j++) x[r[j]] = y[j], x[k] += gam[j] * y[j];
    }
}

/* the mesh's vertices sorted into a uniform grid of cubes of side h, one vertex per cell of the
 * bounding box's volume (a surface's vertices crowd the cells it crosses; 3 per cell made the LP
 * start with about 400 constraints and ran 1.5× slower on the bunny) */
static int vgrid_build(const Work *w, const double *lo, const double *hi, CellGrid *g) {
    memset(g, 0, sizeof *g);
    int64_t cells = sb_skel_grid_shape(g, lo, hi, (double)w->nv, 256);
    g->off = calloc((size_t)cells + 1, sizeof *g->off);
    g->item = malloc((size_t)w->nv * sizeof *g->item);
    if (!g->off || !g->item) return sb_skel_grid_free(g), -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t v = 0; v < w->nv; v++) {
            const double *p = w->x + 3 * v;
            int64_t cell = ((int64_t)sb_skel_grid_cell(g, 2, p[2]) * g->n[1] + sb_skel_grid_cell(g, 1, p[1])) * g->n[0] +
                           sb_skel_grid_cell(g, 0, p[0]);
            if (pass == 0) g->off[cell + 1]++;
            else g->item[g->off[cell]++] = (int32_t)v;
        }
        if (pass == 0)
            for (int64_t c = 0; c < cells; c++) g->off[c + 1] += g->off[c];
    }
    for (int64_t c = cells; c > 0; c--) g->off[c] = g->off[c - 1];
    g->off[0] = 0;
    return 0;
}

/* per thread: the constraints of one vertex and the LP's projection buffer */
typedef struct {
    LpHalf *h, *buf;
    int n, cap;
} LpWork;

static int lpw_reserve(LpWork *L, int need) {
    if (need <= L->cap) return 0;
    int c = L->cap ? L->cap : 64;
    while (c < need) c *= 2;
    LpHalf *h = realloc(L->h, (size_t)c * sizeof *h);
    if (!h) return -1;
    L->h = h;
    LpHalf *b = realloc(L->buf, (size_t)(c + 3) * 2 * sizeof *b);
    if (!b) return -1;
    L->buf = b, L->cap = c;
    return 0;
}

/* the pole of vertex v along the inward direction d (unit); 1 with pole set, 0 without (the cell
 * is open to the box that way: no finite Voronoi vertex there, as for CGAL's infinite cells), -1 out
 * of memory */
static int voronoi_pole(const Work *w, const CellGrid *g, const double *blo, const double *bhi, double diag, int64_t v,
                        const double *d, LpWork *L, double *pole) {
    const double *pv = w->x + 3 * v;
    double lo[3], hi[3], x[3];
    for (int k = 0; k < 3; k++) lo[k] = blo[k] - pv[k], hi[k] = bhi[k] - pv[k];
    uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(v + 1);
    /* first the vertices within 2 grid cells of v; then, each round, those strictly inside the
     * ball centred at the current optimum p through v — exactly the constraints p violates
     * ((u − v)·x > |u − v|²/2 ⟺ |u − p| < |p − v|) — until there are none: p is then optimal for
     * all vertices (the ball lies within 2|x| of v, the radius argument above) */
    double c[3] = {pv[0], pv[1], pv[2]}, r = 2 * g->h;
    L->n = 0;
    for (int round = 0; round < 64; round++) {
        int start = L->n, c0[3], c1[3];
        for (int k = 0; k < 3; k++) c0[k] = sb_skel_grid_cell(g, k, c[k] - r), c1[k] = sb_skel_grid_cell(g, k, c[k] + r);
        for (int z = c0[2]; z <= c1[2]; z++)
            for (int y = c0[1]; y <= c1[1]; y++)
                for (int xx = c0[0]; xx <= c1[0]; xx++) {
                    int64_t cell = ((int64_t)z * g->n[1] + y) * g->n[0] + xx;
                    for (int64_t q = g->off[cell]; q < g->off[cell + 1]; q++) {
                        const double *pu = w->x + 3 * g->item[q];
                        double e[3] = {pu[0] - pv[0], pu[1] - pv[1], pu[2] - pv[2]};
                        double l2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
                        if (l2 <= 0) continue; /* coincident vertices give no plane */
                        if (round == 0) {
                            if (l2 > r * r) continue;
                        } else {
                            double ex = e[0] * x[0] + e[1] * x[1] + e[2] * x[2];
                            /* violated beyond the LP's tolerance: not among the constraints yet */
                            if (ex - 0.5 * l2 <= 1e-10 * (0.5 * l2 + fabs(ex))) continue;
                        }
                        if (lpw_reserve(L, L->n + 1)) return -1;
                        LpHalf *hh = L->h + L->n++;
                        memcpy(hh->a, e, sizeof e), hh->b = 0.5 * l2;
                    }
                }
        if (round > 0 && L->n == start) break;
        for (int i = L->n - 1; i > start; i--) { /* Seidel's expected bound needs a random order */
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int j = start + (int)((seed >> 33) % (uint64_t)(i - start + 1));
            LpHalf t = L->h[i];
            L->h[i] = L->h[j], L->h[j] = t;
        }
        lp_seidel(3, d, lo, hi, L->h, L->n, start, x, L->buf);
        r = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
        for (int k = 0; k < 3; k++) c[k] = pv[k] + x[k];
    }
    for (int k = 0; k < 3; k++)
        if (x[k] <= lo[k] + 1e-9 * diag || x[k] >= hi[k] - 1e-9 * diag) return 0;
    if (d[0] * x[0] + d[1] * x[1] + d[2] * x[2] <= 0) return 0;
    for (int k = 0; k < 3; k++) pole[k] = pv[k] + x[k];
    return 1;
}

void sb_skel_voronoi_poles(Work *w) {
    int64_t nv = w->nv;
    double *vn = calloc((size_t)nv * 3, sizeof *vn);
    double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
    memset(w->has_pole, 0, (size_t)nv);
    for (int64_t v = 0; v < nv; v++)
        for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], w->x[3 * v + k]), hi[k] = fmax(hi[k], w->x[3 * v + k]);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    CellGrid g;
    if (!vn || !(diag > 0) || vgrid_build(w, lo, hi, &g)) return free(vn);
    double blo[3], bhi[3]; /* the LP's box: the mesh's, a little larger so no surface vertex is on it */
    for (int k = 0; k < 3; k++) blo[k] = lo[k] - 0.05 * diag, bhi[k] = hi[k] + 0.05 * diag;
    vertex_normals(w, vn);
#pragma omp parallel
    {
        LpWork L = {0};
#pragma omp for schedule(dynamic, 64)
        for (int64_t v = 0; v < nv; v++) {
            double *n = vn + 3 * v, l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            if (l <= 0) continue;
            double d[3] = {-n[0] / l, -n[1] / l, -n[2] / l};
            w->has_pole[v] = voronoi_pole(w, &g, blo, bhi, diag, v, d, &L, w->pole + 3 * v) == 1;
        }
        free(L.h), free(L.buf);
    }
    sb_skel_grid_free(&g);
    free(vn);
}

int sb_skeleton_poles(const DsMesh *m, int voronoi, double *pole, uint8_t *has_pole) {
    Work w = {0};
    if (!m || m->nv < 4 || m->nv > INT32_MAX / 4) return -1;
    w.nv = w.capv = m->nv, w.nf = w.capf = m->nf;
    w.x = malloc((size_t)m->nv * 3 * sizeof *w.x);
    w.falive = malloc((size_t)m->nf + 1);
    if (!w.x || !w.falive) return free(w.x), free(w.falive), -1;
    for (int64_t i = 0; i < 3 * m->nv; i++) w.x[i] = m->v[i];
    for (int64_t i = 0; i < 3 * m->nf; i++)
        if (m->f[i] < 0 || m->f[i] >= m->nv) return free(w.x), free(w.falive), -1;
    memset(w.falive, 1, (size_t)m->nf);
    w.f = m->f, w.pole = pole, w.has_pole = has_pole;
    if (!voronoi) {
        float lo[3], hi[3];
        ds_mesh_bbox(m, lo, hi);
        double diag = sqrt((double)(hi[0] - lo[0]) * (hi[0] - lo[0]) + (double)(hi[1] - lo[1]) * (hi[1] - lo[1]) +
                           (double)(hi[2] - lo[2]) * (hi[2] - lo[2]));
        sb_skel_ray_poles(&w, 1e-6 * diag);
    } else
        sb_skel_voronoi_poles(&w);
    free(w.x), free(w.falive);
    return 0;
}
