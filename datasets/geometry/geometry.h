/* datasets/geometry/geometry.h — geometry on DsMesh: mesh checks (watertight, manifold, orientation,
 * Euler characteristic, volume), normalization into [-1,1]³, area-weighted and sharp-edge
 * surface sampling, generalized winding numbers with the fast hierarchical evaluation, interior
 * cubature candidates on a grid, marching cubes, a few analytic test meshes, and the whole
 * preprocessing pipeline of PhysSkin++ §III-B / §IV-A ("Cubature Points Sampling").
 *
 * Everything is plain malloc'd C arrays (x, y, z interleaved, float) so that the cache writer
 * and the samplers can hand them to tensors without copies of copies. All random draws come
 * from tensor_philox keyed by (seed, stream, index): a sample's value depends only on its
 * index, not on the thread count. */
#ifndef ANIMA_DATASETS_GEOMETRY_H
#define ANIMA_DATASETS_GEOMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/mesh.h"

/* ---- topology and measures ------------------------------------------------------------------ */

/* One undirected edge a < b. f0/f1 are the first two incident faces (-1 if absent), nf the
 * number of incident faces; `oriented` is true when nf == 2 and the two faces traverse the edge
 * in opposite directions (consistent orientation). */
typedef struct {
    int32_t a, b;
    int32_t f0, f1;
    int32_t nf;
    bool oriented;
} DsEdge;

/* The unique edges of m, sorted by (a, b); returns their count (or -1 on allocation failure)
 * and a malloc'd array in *out. Degenerate faces (a repeated vertex) contribute no edges. */
int64_t ds_mesh_edges(const DsMesh *m, DsEdge **out);

/* Union-find over indices 0..n-1 in p (p[i] = i: each its own set). ds_uf_find returns the root
 * of i's set, halving the path on the way; ds_uf_union merges the sets of a and b under the
 * smaller root and returns whether they were two sets. */
int64_t ds_uf_find(int64_t *p, int64_t i);
bool ds_uf_union(int64_t *p, int64_t a, int64_t b);

typedef struct {
    int64_t nv_used;          /* vertices referenced by some face */
    int64_t nedges;
    int64_t boundary_edges;   /* edges with one face */
    int64_t nonmanifold_edges;/* edges with three or more faces */
    int64_t misoriented_edges;/* two-face edges traversed in the same direction by both faces */
    int64_t nonmanifold_vertices; /* vertices whose incident faces form more than one fan */
    int64_t degenerate_faces; /* a repeated vertex index, or an index out of range */
    int64_t components;       /* connected components of the faces (sharing a vertex) */
    int64_t euler;            /* χ = V - E + F, V = nv_used */
    bool watertight;          /* every edge has exactly two faces */
    bool edge_manifold;       /* every edge has at most two faces */
    bool manifold;            /* edge_manifold and no non-manifold vertex */
    bool oriented;            /* no misoriented edge */
    int64_t genus;            /* (2·components − χ) / 2 when closed, oriented and manifold; else -1 */
    double area;
    double volume;            /* signed, divergence theorem; meaningful for closed oriented meshes */
    float lo[3], hi[3];       /* bounding box of all vertices */
} DsMeshCheck;

/* Fills *out; returns 0, or -1 on allocation failure. */
int ds_mesh_check(const DsMesh *m, DsMeshCheck *out);
void ds_mesh_bbox(const DsMesh *m, float lo[3], float hi[3]);
double ds_mesh_area(const DsMesh *m);
/* Σ_f (v0 · (v1 × v2)) / 6 — the divergence theorem on a closed, outward-oriented mesh. */
double ds_mesh_signed_volume(const DsMesh *m);
/* Unit vertex normals n (nv × 3) of the triangles f (nf × 3) at positions v (nv × 3): the sum of
 * the incident faces' normals weighted by their area, normalized; faces with an index out of
 * range or repeated are skipped, and a vertex on none gets 0. 0, or -1 out of memory. */
int ds_vertex_normals(int64_t nv, const float *v, int64_t nf, const int32_t *f, float *n);
/* ds_vertex_normals of m into m->n (allocated if NULL). */
int ds_mesh_compute_normals(DsMesh *m);
/* Turns m inside out: every triangle's winding reversed (its second and third corners swapped)
 * and the normals, when present, negated. A file wound clockwise (negative signed volume) comes
 * out outward-oriented. */
void ds_mesh_flip(DsMesh *m);
/* A deep copy (all present arrays); 0 or -1. */
int ds_mesh_copy(const DsMesh *src, DsMesh *dst);

/* ---- normalization (paper §IV-A: "re-center and normalize into [-1,1]³") --------------------- */

/* x_normalized = (x − center) · scale. */
typedef struct {
    float center[3];
    float scale;
} DsTransform;

/* Bounding-box center and the uniform scale that maps the longest side onto 2·(1 − margin),
 * so the shape fits [-1 + margin, 1 − margin]³ and touches it along the longest axis. */
DsTransform ds_mesh_normalizing_transform(const DsMesh *m, float margin);
/* Applies t to positions in place (normals unchanged: the scale is uniform). */
void ds_mesh_apply_transform(DsMesh *m, DsTransform t);
void ds_points_apply_transform(float *p, int64_t n, DsTransform t);
/* The inverse: x = x_normalized / scale + center. */
void ds_points_apply_inverse(float *p, int64_t n, DsTransform t);

/* ---- surface sampling ------------------------------------------------------------------------ */

/* n points uniform by area: a face is picked with probability area/total (inverse CDF), then a
 * point uniformly in it (√u barycentrics, Osada et al. 2002 "Shape distributions" §4.2). pts
 * gets n × 3; nrm (optional) the unit face normal; face (optional) the face index. Returns 0,
 * or -1 when the mesh has no area. Reproducible: sample i uses philox(seed, stream, i). */
int ds_sample_surface(const DsMesh *m, int64_t n, uint64_t seed, float *pts, float *nrm, int32_t *face);

/* Sharp Edge Sampling (Dora, Chen et al. 2024 — the paper's [11]): edges whose two faces meet at
 * a dihedral angle above angle_deg (the angle between the face normals) are collected, and n
 * points are drawn uniformly by length along them; each gets the normalized sum of its two face
 * normals. Boundary and non-manifold edges are not sharp edges. Returns the number of points
 * written: n, or 0 when the mesh has no sharp edge (callers then fall back to area samples). */
int64_t ds_sample_sharp_edges(const DsMesh *m, int64_t n, float angle_deg, uint64_t seed, float *pts, float *nrm);
/* Total length of the edges ds_sample_sharp_edges would sample from. */
double ds_mesh_sharp_edge_length(const DsMesh *m, float angle_deg);

/* ---- generalized winding number ------------------------------------------------------------- */

/* w(q) = (1/4π) Σ_t Ω_t(q) (Jacobson, Kavan, Sorkine-Hornung 2013 "Robust inside-outside
 * segmentation using generalized winding numbers"): 1 inside and 0 outside a closed outward
 * mesh, and a smooth, harmonic value that degrades gracefully at holes, so w > 1/2 classifies
 * points of non-watertight meshes. Evaluated with the hierarchy of Barill, Dickson, Schmidt,
 * Levin, Jacobson 2018 "Fast winding numbers for soups and clouds": a BVH over the triangles,
 * each node holding the Taylor expansion of its dipoles about its area-weighted centroid (order
 * 1 and 2); nodes farther than beta × their radius use the expansion, near leaves use exact
 * solid angles (Van Oosterom & Strackee 1983). */
typedef struct DsWinding DsWinding;

DsWinding *ds_winding_build(const DsMesh *m); /* NULL on allocation failure or an empty mesh */
void ds_winding_free(DsWinding *w);
/* beta: the far-field acceptance ratio (default 2, Barill et al. §3.3); 0 forces exact sums. */
void ds_winding_set_beta(DsWinding *w, double beta);
double ds_winding_eval(const DsWinding *w, const float q[3]);
/* n queries, OpenMP-parallel. */
void ds_winding_eval_many(const DsWinding *w, int64_t n, const float *q, float *out);
/* The O(F) direct sum, for tests. */
double ds_winding_exact(const DsMesh *m, const float q[3]);
/* Signed solid angle of triangle (a, b, c) seen from q (positive when q is on the back side
 * of the counter-clockwise face), Van Oosterom & Strackee 1983. */
double ds_solid_angle(const double a[3], const double b[3], const double c[3], const double q[3]);

/* ---- interior cubature candidates ------------------------------------------------------------ */

/* Cell centers of a res³ grid over [-1,1]³: cell (i, j, k), i fastest, is at
 * −1 + (i + ½)·h with h = 2/res. */
void ds_grid_center(int res, int64_t cell, float p[3]);

/* The interior points of a res³ grid and their volume weights. Each inside cell carries its own
 * volume h³, so Σ w = h³ · (inside count): the midpoint-rule estimate of the shape's volume. It
 * converges at O(h) relative to the surface (boundary cells are all-or-nothing), which is well
 * under 1% at 128³ for the training shapes; parts thinner than a cell can lose all their points
 * (and their volume), which is why the candidate set also contains surface samples (with
 * weight 0) — compare `volume` with ds_mesh_signed_volume on closed meshes to see how much. */
typedef struct {
    int res;
    double cell_volume; /* h³ */
    int64_t n;
    float *x;           /* n × 3 */
    float *w;           /* n volume weights */
    double volume;      /* Σ w */
} DsCubature;

/* Classification by the winding number of m (assumed already in [-1,1]³): w > 1/2 inside.
 * 0 or -1 with err set. */
int ds_cubature_winding(const DsMesh *m, int res, DsCubature *out, char *err, size_t errlen);
/* Classification by a signed distance (negative inside), for procedural shapes. */
typedef float (*DsSdfFn)(void *ctx, const float p[3]);
int ds_cubature_sdf(DsSdfFn sdf, void *ctx, int res, DsCubature *out, char *err, size_t errlen);
void ds_cubature_free(DsCubature *c);

/* ---- marching cubes ------------------------------------------------------------------------- */

/* The zero level set of a sampled scalar field (negative inside) as a triangle mesh: f holds
 * nx × ny × nz samples (x fastest) at origin + (i, j, k)·h. Lorensen & Cline 1987, with the
 * face ambiguity resolved by one fixed rule (Montani, Scateni, Scopigno 1994: on an ambiguous
 * face the positive corners are always cut off), which both cells sharing the face apply
 * alike; each cell's polygons are then closed loops on the cell boundary. Vertices live on grid
 * edges and are shared by edge index, so when f > 0 on the grid border the result is
 * watertight, edge-manifold and oriented outward (towards positive f). Normals are the
 * normalized central-difference gradient interpolated along each edge. 0 or -1. */
int ds_marching_cubes(const float *f, int nx, int ny, int nz, const float origin[3], float h, DsMesh *out);

/* ---- analytic test meshes (closed, outward-oriented) ----------------------------------------- */

int ds_mesh_make_uv_sphere(float radius, int nlat, int nlon, DsMesh *out);
/* a torus around the z axis: major radius R, minor r */
int ds_mesh_make_torus(float R, float r, int nmajor, int nminor, DsMesh *out);
/* an axis-aligned box of half extents, each face split into n × n quads */
int ds_mesh_make_box(const float half[3], int n, DsMesh *out);
/* p ← R p + t (R row-major 3×3), normals rotated too */
void ds_mesh_rigid(DsMesh *m, const float R[9], const float t[3]);

/* ---- the preprocessing pipeline ------------------------------------------------------------- */

typedef struct {
    int64_t n_surface;     /* encoder input, paper: 4096 */
    int64_t n_dense;       /* surface cubature candidates, paper: 100k */
    int64_t n_sharp;       /* sharp-edge samples (fewer if the mesh has no sharp edge) */
    float sharp_angle_deg; /* 30 */
    int grid_res;          /* interior candidates, paper: 128 */
    float margin;          /* normalization margin, 0 = touches [-1,1]³ */
    uint64_t seed;
    /* when set, classify grid cells by sdf < 0 (normalized coordinates) instead of by the
     * winding number — procedural shapes know their exact inside */
    DsSdfFn sdf;
    void *sdf_ctx;
} DsPreprocessOptions;

void ds_preprocess_defaults(DsPreprocessOptions *o);

typedef struct {
    DsMesh mesh;             /* normalized copy */
    DsTransform xf;          /* input → normalized */
    int64_t n_surface, n_dense, n_sharp;
    float *surface, *surface_normal; /* n_surface × 3 each */
    float *dense, *dense_normal;     /* n_dense × 3 */
    float *sharp, *sharp_normal;     /* n_sharp × 3 */
    DsCubature cubature;     /* interior candidates with volume weights */
    DsMeshCheck check;       /* of the normalized mesh (volume: divergence theorem) */
    double seconds_winding;  /* time spent classifying the grid */
} DsPreprocessed;

/* Normalize, sample and classify. `in` is not modified. 0 or -1 with err set. */
int ds_preprocess(const DsMesh *in, const DsPreprocessOptions *o, DsPreprocessed *out, char *err, size_t errlen);
void ds_preprocessed_free(DsPreprocessed *p);

/* ---- measures (geom_measure.c) ----------------------------------------------------------- */

/* (estimate − volume) / max(|volume|, 1e-12): a volume estimate's signed error relative to a
 * mesh's volume (the cubature's against the divergence theorem's). */
double ds_volume_error(double estimate, double volume);

/* The box of n points (n × 3) from their 1st to their 99th percentile per axis (the values at
 * sorted ranks n/100 and n − 1 − n/100): a few stray points left out. n = 0 leaves lo and hi
 * as they are. 0, or -1 when out of memory (lo and hi untouched). */
int ds_points_percentile_box(const float *x, int64_t n, double lo[3], double hi[3]);

/* The squared diagonal of n points' (n × 3) bounding box, Σ over the axes of (hi − lo)²
 * (+inf for n = 0): the scale of a shape that errors are given as a share of. */
double ds_points_diagonal2(const float *x, int64_t n);

/* The box lo..hi grown by margin × its side on each side of each axis, into out_lo..out_hi. */
void ds_box_grow(const double lo[3], const double hi[3], double margin, double out_lo[3], double out_hi[3]);

/* The box lo..hi's center and its largest side (0 when lo > hi on every axis). */
void ds_box_center_extent(const double lo[3], const double hi[3], double center[3], double *extent);

#endif
