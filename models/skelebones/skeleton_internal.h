/* models/skelebones/skeleton_internal.h — private to the mean curvature skeleton's three files:
 * the working mesh that the contraction (skeleton.c) moves, collapses and splits, the uniform grid
 * that the ray queries walk (skeleton_grid.c: nearest hits, crossings, the inside test), and the
 * entry points of the medial poles (skeleton_poles.c: ray and Voronoi poles) that the contraction
 * calls. See skeleton.h for the algorithm. */
#ifndef ANIMA_MODELS_SKELEBONES_SKELETON_INTERNAL_H
#define ANIMA_MODELS_SKELEBONES_SKELETON_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>


/* The edges and adjacency of the working mesh (connectivity only: positions may change while it
 * stays current). Its arrays are kept between builds and grow as needed: it is rebuilt several
 * times per contraction iteration. */
typedef struct {
    int64_t ne;
    int32_t *a, *b;   /* a < b */
    int32_t *f0, *f1; /* up to two faces; nfc counts all */
    int32_t *nfc;
    int64_t *vadj_off; /* nv + 1 */
    int32_t *vadj;     /* sorted neighbor lists */
    int64_t *vf_off;
    int32_t *vf;       /* faces of each vertex */
    int64_t *boff, *fill; /* build scratch, nv + 2 */
    int32_t *bb, *bf;     /* build scratch, 3 × faces + 1 */
    int64_t capv, capm;   /* capacities: per vertex (nv + 2), per face corner (3 × faces + 1) */
} Topo;

typedef struct {
    int64_t nv, capv, nf, capf;
    double *x;       /* capv × 3 */
    double *pole;    /* capv × 3 */
    uint8_t *has_pole, *fixed;
    uint8_t *pole_in; /* the pole is inside the contracted surface (CGAL's test; ray poles: always) */
    bool voronoi;     /* Voronoi poles: CGAL's inside test and pole choice on collapse */
    double *mass;    /* vertices merged into this one (for the curve graph's node positions) */
    int64_t *parent; /* union-find: the vertex this one collapsed into (itself while alive) */
    int32_t *f;      /* capf × 3 */
    uint8_t *falive;
    /* the connectivity of f/falive while topo_ok (work_topo); every change of the faces clears
     * topo_ok. Between a pass that changes nothing and the next step (the last collapse pass and
     * the first split pass, the last split pass and the degeneracy test, that test and the next
     * iteration's solve) the mesh's connectivity is the same, and the build is skipped. */
    Topo topo;
    bool topo_ok;
} Work;

/* n = (b − a) × (c − a): twice the triangle's area along its normal */
static inline void sb_skel_tri_normal(const double *a, const double *b, const double *c, double n[3]) {
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    n[0] = u[1] * v[2] - u[2] * v[1];
    n[1] = u[2] * v[0] - u[0] * v[2];
    n[2] = u[0] * v[1] - u[1] * v[0];
}

/* A uniform grid over the faces' bounding box, each cell listing the faces whose bounding box
 * overlaps it (about two faces per cell), walked cell by cell along a ray (Amanatides & Woo
 * 1987) so a ray tests only the faces near its path and stops in the first cell that holds its
 * nearest hit: the pole search costs about O(V·∛F) instead of O(V·F). */
typedef struct {
    int n[3];
    double lo[3], h;
    int64_t *off;  /* cells + 1 */
    int32_t *item; /* the cells' lists, one after another: faces here, vertices for the Voronoi
                      poles' grid (vgrid_build) */
} CellGrid;

/* the cell of coordinate x along axis k, clamped to the grid */
static inline int sb_skel_grid_cell(const CellGrid *g, int k, double x) {
    int c = (int)floor((x - g->lo[k]) / g->h);
    return c < 0 ? 0 : c >= g->n[k] ? g->n[k] - 1 : c;
}

/* The cells of a grid over the box lo..hi: cubes of side g->h, about ncells of them over the box's
 * volume (a flat extent counted as 1e-3 of the longest), at most cap along an axis; sets g->n,
 * g->lo and g->h and returns the number of cells (skeleton_grid.c). */
int64_t sb_skel_grid_shape(CellGrid *g, const double lo[3], const double hi[3], double ncells, int cap);
/* The face grid of w's live faces (skeleton_grid.c); an empty grid (off NULL) when none is
 * alive. 0, or -1 out of memory. */
int sb_skel_grid_build(const Work *w, CellGrid *g);
void sb_skel_grid_free(CellGrid *g);
/* the nearest hit along the ray o + t d (t > 0) with a face not touching vertex `skip`, or INFINITY */
double sb_skel_grid_ray(const CellGrid *g, const Work *w, const double *o, const double *d, int64_t skip);
/* CGAL's inside test of each alive, free vertex's pole against the current surface, into
 * w->pole_in (skeleton_grid.c). 0, or -1 out of memory. */
int sb_skel_poles_inside(Work *w);

/* The medial poles of w's vertices into w->pole / w->has_pole (skeleton_poles.c): along the
 * inward normal to the first surface hit (ray origin eps inside), or CGAL's Voronoi poles. Out of
 * memory leaves every vertex without a pole. */
void sb_skel_ray_poles(Work *w, double eps);
void sb_skel_voronoi_poles(Work *w);

#endif
