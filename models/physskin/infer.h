/* models/physskin/infer.h — inference with a trained checkpoint (PhysSkin++ §III-B, §III-D's
 * input): the skinning weights at a mesh's vertices, and at cubature points the weights, their
 * spatial gradients and volume weights — what the reduced simulator consumes. */
#ifndef ANIMA_MODELS_PHYSSKIN_INFER_H
#define ANIMA_MODELS_PHYSSKIN_INFER_H

#include "config.h"

/* The config stored in a checkpoint written by `anima physskin train`; 0 or -1 with err. */
int ps_checkpoint_config(const char *ckpt, PsConfig *c, char *err, size_t errlen);

/* Reads the mesh, normalizes and samples it like the training data (data.n_surface encoder
 * points, a data.cubature_res grid of interior candidates), evaluates the fields and writes
 * `out` (HDF5, atomically), everything in the mesh file's own frame:
 *   /vertices (nv,3)  /weights (nv,m)                   W at the mesh vertices
 *   /cubature/points (n,3) /cubature/volumes (n)        n = n_cubature drawn uniformly from the
 *   /cubature/weights (n,m) /cubature/gradients (n,m,3)  candidates (all when n ≤ 0 or more than
 *                                                        there are), ∂w_k/∂x_j by autograd
 *   attrs handles, center[3], scale (x_normalized = (x − center)·scale), checkpoint
 * W is the network output (not column-normalized). 0 or -1 with err. */
int ps_skin_mesh(const char *ckpt, const char *mesh, const char *out, int64_t n_cubature, char *err, size_t errlen);

/* The skinning-matrix metrics of physskin.md §5 (PhysSkin++ §IV-B) on the column-l2-normalized
 * Ŵ of W (n × k, row-major): orthogonality error ‖ŴᵀŴ − I‖_F / k, condition number
 * σ_max/σ_min (inf when rank-deficient), spectral balance −Σ p_i log p_i / log k with
 * p_i = σ_i² / Σ σ_j² (1 = balanced). σ_i² are the eigenvalues of the k × k Gram matrix ŴᵀŴ
 * (cyclic Jacobi, k is small). */
typedef struct {
    double orth_err, cond, balance;
} PsSkinMetrics;
void ps_skin_metrics(const float *W, int64_t n, int64_t k, PsSkinMetrics *out);

#endif
