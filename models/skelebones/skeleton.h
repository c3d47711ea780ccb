/* models/skelebones/skeleton.h — the mean curvature skeleton (Tagliasacchi, Alhashim, Olson, Zhang,
 * "Mean Curvature Skeletons", SGP 2012) of a closed triangle mesh: a curve graph inside the shape
 * whose nodes remember which surface vertices collapsed into them (GaussiAnimate §4.1, notes §6).
 *
 * Input route for Gaussians: they have no mesh, so the caller meshes their density — evaluate
 * the canonical Gaussians' summed density on a grid, take a level set with
 * datasets/geometry/marching_cubes.c (ds_marching_cubes), which is watertight, edge-manifold and
 * outward by construction. We take this route, not the point-cloud contraction of Cao et al.
 * 2010, because the contraction below needs a manifold with a cotangent Laplacian and inside /
 * outside (for the medial poles), which marching cubes gives directly and a kNN graph does not;
 * the correspondences then go from Gaussians to their nearest mesh vertex.
 *
 * Algorithm (one iteration; w_H, w_M as in the paper and CGAL):
 *   1. contraction: x = argmin ‖L x‖² + w_H² ‖x − x^t‖² + w_M² ‖x − π‖² per coordinate, L the
 *      cotangent Laplacian of the current mesh with CGAL's scale and clamp (weights cot α + cot β,
 *      each angle's cosine clamped to ±0.999 and negative cotangents to 0: obtuse angles give no
 *      negative weights and slivers cannot blow up the system; at half that scale, as before, the
 *      flow was slower than CGAL's and stopped earlier), π the vertex's medial pole; fixed vertices have no
 *      L row and are pinned (weight 1e4). Normal equations LᵀL + diag(...) are SPD and are
 *      solved with CHOLMOD (supernodal Cholesky), as sim/fem.c does.
 *   2. edge collapse of edges shorter than min_edge (default 0.002 × bbox diagonal) when the
 *      link condition holds (the mesh stays a 2-manifold; as CGAL, only a closed tetrahedron is
 *      refused besides); the kept vertex goes to the midpoint.
 *   3. degenerate vertices (after the splits, as CGAL): the mesh within min_edge of a vertex,
 *      reached along edges, is a disk (Euler characteristic V − E + F = 1) where the surface is
 *      still a surface, and not where it has thinned into a curve; such vertices become fixed.
 *      (Fixing both ends of every short edge the link condition refuses, as before, also froze
 *      valence-3 vertices of surfaces far from thin — the bunny's body then kept a fan of long
 *      edges to its surface.)
 *   4. as CGAL, split of the edges whose opposite angles are both obtuse (> max_angle, default
 *      110°) at the projection of the vertex of the larger angle onto the edge (both faces of
 *      the edge are split), repeated until no edge qualifies. Split vertices get no pole term.
 *   Stops when the surface area changes by less than area_tol (relative to the original area)
 *   per iteration, averaged over the last two (one iteration's change is noisy), when the enclosed volume falls below vol_tol × the original, or after
 *   max_iter iterations. Then the curve graph: the remaining faces are collapsed shortest edge
 *   first with no link condition; edges left without faces are the skeleton's edges. Nodes sit at
 *   the mass-weighted mean of the contracted vertices merged into them.
 *
 * Medial poles (default, option voronoi_poles = 1; CGAL's): the pole of a vertex v is the vertex
 * of v's Voronoi cell (of the mesh vertices) farthest along the inward normal, as CGAL picks it
 * among the circumcentres of v's Delaunay cells. No tetrahedralization here: it is the optimum of
 * the 3-variable LP max (p − v)·(−n) s.t. (p − v)·(u − v) ≤ |u − v|²/2, solved by Seidel's
 * randomized incremental LP over the vertices u within a radius that grows until it certifies the
 * optimum (no u farther than 2|p − v| can cut it), inside the bounding box enlarged by 5% of its
 * diagonal. Differences from CGAL: double precision, not exact constructions; a vertex whose
 * optimum lies on that box (a cell open inward) gets no pole, where CGAL takes its farthest
 * finite Voronoi vertex; normals are area-weighted face sums (CGAL's PMP normals weight
 * differently). With them, as CGAL, a pole attracts only while it lies inside the contracted
 * surface (each iteration, the parity of a ray's crossings through the face grid below, as CGAL's
 * Side_of_triangle_mesh; the winding number > 1/2, used before, gave the same skeletons on the
 * bench's six meshes at three times the cost), and a collapse keeps the pole nearer the kept
 * vertex: without the test the flow stalls against the (shallower) poles and the bunny ran 100
 * iterations. Measured (bench/run_skeleton.sh, docs/gaussianimate.md §6): within 0.14–0.35% of
 * CGAL's skeleton on the six meshes, in less CPU time than CGAL on each (one thread).
 * Ray poles (voronoi_poles = 0): each vertex casts a ray along its inward normal and the pole is
 * the midpoint to the first surface hit — the centre of the largest ball touching the surface
 * there along the normal, which equals the Voronoi pole on tubes and blobs. Rays walk a uniform
 * grid of the faces (about two per cell), so the search is about O(V·∛F), not O(V·F); vertices
 * whose ray misses get no pole term, and the pole term stays on throughout (CGAL's inside test
 * moved these skeletons further from the procedural meshes' bones). Why one would use them: they
 * cost about half of the Voronoi mode (0.4–0.6× CGAL's time), sit deeper, and put the procedural
 * meshes' skeletons 0.3–0.4% of the diagonal nearer their generating bones (nearer than CGAL's),
 * and animation_with_skeleton's joints nearer its rig; but at a short protrusion (the bunny's
 * tail) the ray from the tip crosses the whole body, its midpoint lies in the body and the flow
 * retracts the protrusion (the bunny 1.25% from CGAL's skeleton, the one mesh over 1%).
 *
 * Cost: the mesh's edge table is rebuilt by a counting sort (linear, into kept buffers) after every
 * pass that changed the faces, and reused where none did (about a quarter fewer builds);
 * the solve is a fresh CHOLMOD factorization per iteration (the pattern changes with every
 * collapse and split); with one thread asked for, its OpenMP regions are made inactive (CHOLMOD
 * opens them per supernode with a fixed team of 4).
 *
 * Sizes: the mesh has nv vertices; corr has nv entries; nodes nnodes × 3; edges nedges × 2. */
#ifndef ANIMA_MODELS_SKELEBONES_SKELETON_H
#define ANIMA_MODELS_SKELEBONES_SKELETON_H

#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/mesh.h"

typedef struct {
    double w_h;          /* velocity / quality trade-off (0.1) */
    double w_m;          /* medial attraction (0.2; 0 turns poles off) */
    double min_edge_rel; /* edge-collapse length as a fraction of the bbox diagonal (0.002) */
    double max_angle_deg;/* obtuse split threshold (110) */
    double area_tol;     /* stop when |ΔA| / A_0 < area_tol (1e-4) */
    double vol_tol;      /* stop when V / V_0 < vol_tol (1e-9) */
    int max_iter;        /* (100) */
    int voronoi_poles;   /* 1: CGAL's Voronoi poles with its inside test (default); 0: ray poles (above) */
} SbSkelOptions;

typedef struct {
    int64_t nnodes, nedges, nsurf;
    float *nodes;    /* nnodes × 3 */
    int32_t *edges;  /* nedges × 2, a < b, no duplicates */
    int32_t *corr;   /* nsurf: the node each input vertex collapsed into */
    int iterations;  /* contraction iterations run */
    double area_ratio, volume_ratio; /* of the contracted mesh, relative to the input */
    int64_t fixed;   /* vertices fixed as degenerate when contraction stopped */
    double diag;     /* the input's bounding-box diagonal */
    float centroid[3]; /* mean of the input vertices */
} SbSkeleton;

void sb_skel_defaults(SbSkelOptions *o);
/* m: closed, outward-oriented triangle mesh. 0, or -1 with err set. */
int sb_skeleton_mcf(const DsMesh *m, const SbSkelOptions *o, SbSkeleton *out, char *err, size_t errlen);
void sb_skeleton_free(SbSkeleton *s);
/* The medial poles the contraction attracts the input vertices to (voronoi as in the options):
 * pole nv × 3, has_pole nv (0 where a vertex has none). 0, or -1 (bad mesh, out of memory). */
int sb_skeleton_poles(const DsMesh *m, int voronoi, double *pole, uint8_t *has_pole);
/* The inside test of the Voronoi mode on a closed mesh: inside[i] = 1 when q[i] (n × 3) is inside
 * m by the parity of a ray's crossings (three fixed directions, shortest first; one that meets an
 * edge or vertex gives way to the next, all three such: their majority). 0, or -1. */
int sb_mesh_inside(const DsMesh *m, int64_t n, const double *q, uint8_t *inside);
/* Connected components of the node graph, and its number of independent cycles (E − V + C). */
int sb_skeleton_components(const SbSkeleton *s, int64_t *cycles);
/* A mesh for viewing: the skeleton's edges as thin boxes (radius r) colored `rgb`, appended to a
 * copy of `shape` colored `shape_rgb` (shape may be NULL). 0 or -1. */
int sb_skeleton_to_mesh(const SbSkeleton *s, float r, const float rgb[3], const DsMesh *shape,
                        const float shape_rgb[3], DsMesh *out);

#endif
