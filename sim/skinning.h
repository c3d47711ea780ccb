/* sim/skinning.h — the simulator's skinning input: weights, weight gradients and volumes at
 * cubature points, and the binding points (mesh vertices) with their weights, all in f64. It is
 * the one interface between a skinning source (the PhysSkin network through `anima physskin
 * skin`, any weights file, or the procedural rigs below) and the reduced solver (sim/solver.h).
 *
 * The m fields here are the learned ones only; the solver appends the constant handle
 * (physskin.md §1: w ≡ 1, ∇w = 0) itself, so a source never has to.
 *
 * The file format ("anima-skinning-1": cubature points, volumes, weights, gradients; vertices;
 * faces; the normalization back to the mesh file's frame) is owned by datasets/corpus/skinning_file.h;
 * SimSkinning is that struct, and the sim_skinning_* file functions below are its functions
 * under the simulator's prefix, so the solver, the scene runner and `anima physskin skin` read
 * and write one format through one reader. */
#ifndef ANIMA_SIM_SKINNING_H
#define ANIMA_SIM_SKINNING_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "datasets/corpus/skinning_file.h"

#define SIM_SKINNING_FORMAT DS_SKINNING_FORMAT

/* m learned handles (the constant handle is not included), nc cubature points, nv binding
 * points, nf triangles: see datasets/corpus/skinning_file.h */
typedef DsSkinning SimSkinning;

void sim_skinning_free(SimSkinning *s); /* frees the arrays, zeroes the struct */

/* ds_skinning_read/write/validate (datasets/corpus/skinning_file.h): 0, or -1 with err naming the file
 * and the dataset. */
int sim_skinning_read(const char *path, SimSkinning *s, char *err, size_t errlen);
int sim_skinning_write(const char *path, const SimSkinning *s, char *err, size_t errlen);
int sim_skinning_validate(const SimSkinning *s, const char *what, char *err, size_t errlen);

/* ---- builders (stand-in skinning sources until the neural one exists) --------------------- */

typedef struct {
    const char *category; /* datasets/geometry/procedural.h category */
    uint64_t seed;
    int mesh_res;         /* marching-cubes grid (≥ 16) */
    int cubature_res;     /* interior grid res³ over [-1,1]³ (ds_cubature_sdf) */
    float sigma;          /* softmax temperature of ds_procedural_weights (0: its default) */
    /* "bones": the shape's own LBS weights, the last bone dropped (see sim_skinning_procedural);
     * "rbf": `handles` Wendland C2 bumps at farthest-point-sampled cubature points */
    const char *kind;
    int handles;          /* rbf only */
    double rbf_radius;    /* rbf support radius in the shape's frame; 0: from the point spacing */
    /* rbf: divide the bumps by their sum at each point (Shepard), so the weights sum to one and
     * the learned handles alone reproduce any affine motion (sim_rbf_normalize). Scenes turn it
     * on by default; false here keeps the figures measured with the plain bumps (tests, bench). */
    bool normalize;
} SimProceduralOptions;

void sim_procedural_defaults(SimProceduralOptions *o);

/* A procedural shape with its weights at the cubature points of ds_cubature_sdf and at the mesh
 * vertices, in the shape's normalized frame.
 *
 * "bones": w from ds_procedural_weights, ∇w by central differences (δ = 1e-3, the weights are
 * f32). Those weights are a partition of unity, so Σ_k w_k ≡ 1 is the constant handle the
 * solver appends: keeping all of them would make the subspace rank deficient (B's columns
 * dependent). The last bone is dropped instead; span{w_1..w_{n−1}, 1} = span{w_1..w_n}.
 *
 * "rbf": w_k(x) = φ(‖x − c_k‖ / r), φ(q) = (1 − q)⁴₊ (4q + 1) (Wendland 1995, C², compact
 * support) with analytic gradients. Compact support matters for exact Dirichlet regions
 * (sim/solver.h): a handle whose support misses the region stays entirely free, where a
 * Gaussian's 1e-6 tail would lock it. Centers: farthest-point sampling of the cubature points
 * from the one nearest the centroid, so any handle count works on any shape. */
int sim_skinning_procedural(const SimProceduralOptions *o, SimSkinning *s, char *err, size_t errlen);

/* Weights and gradients of the rbf kind at arbitrary points (n × m, n × m × 3), for tests and
 * for binding extra points after a build. centers m × 3. */
void sim_rbf_eval(int64_t m, const double *centers, double radius, int64_t n, const double *x, double *w,
                  double *dw);
/* In place: w_k ← w_k / Σ_j w_j and, when dw is given, ∇w_k ← (∇w_k − w_k Σ_j ∇w_j) / Σ_j w_j (the
 * new w_k); a point with Σ w = 0 keeps its zeros. */
void sim_rbf_normalize(int64_t m, int64_t n, double *w, double *dw);

#endif
