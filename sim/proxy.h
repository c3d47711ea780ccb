/* sim/proxy.h — collision proxies (issue 23 item 1): a coarse closed surface per object on which
 * contact is evaluated instead of the render mesh.
 *
 * Vertex clustering (Rossignac & Borrel 1993) on a grid of cell side h: the mesh vertices in one
 * cell merge into one proxy vertex, the cell's vertex nearest the cell's mean (so the proxy's
 * vertices are mesh vertices: they keep the mesh's skinning weights, and the proxy is bound to
 * the same skinning fields with no new weights to fit), and every triangle whose corners land in
 * three different cells becomes a proxy triangle. Why clustering rather than quadric edge
 * collapse: the map from the mesh's triangles to the proxy's is a simplicial map, and a simplicial
 * map takes a closed surface (a 2-cycle mod 2) to a closed surface: triangles that collapse drop
 * out, and identical triangles cancel in pairs (two copies are a wall of no thickness), so the
 * proxy has no boundary edge whatever h is (when the mesh has none). It may have
 * non-manifold edges and vertices (a thin part pinched to an edge); the barrier and CCD do not
 * need a manifold, only a closed surface whose every part is near the mesh.
 *
 * Its deviation: the largest distance of a mesh vertex from the proxy surface (at rest). The
 * render mesh follows the same subspace, so at any state a rendered vertex lies within about that
 * distance of its proxy's surface (exactly so for affine motion; to first order otherwise), and
 * the no-crossing guarantee of the proxies holds for the rendered surfaces to that tolerance. */
#ifndef ANIMA_SIM_PROXY_H
#define ANIMA_SIM_PROXY_H

#include <stdint.h>

typedef struct {
    int64_t np;          /* proxy vertices */
    int32_t *vert;       /* np: the mesh vertex each one is */
    int64_t nf;          /* proxy triangles over 0..np−1 */
    int32_t *faces;
    int64_t boundary;    /* edges used by an odd number of triangles (0: closed) */
    double cell;         /* the grid's cell side h */
    double deviation;    /* max over mesh vertices of the distance to the proxy surface */
} SimProxy;

/* The proxy of a triangle mesh (nv vertices X, nf faces) with cells of side h > 0. 0, or -1 out of
 * memory. A mesh whose clustering leaves fewer than 4 triangles keeps its own surface. */
int sim_proxy_build(int64_t nv, const double *X, int64_t nf, const int32_t *faces, double h, SimProxy *p);
void sim_proxy_free(SimProxy *p);

#endif
