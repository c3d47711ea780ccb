/* models/physskin/infer.h — inference with a trained checkpoint (PhysSkin++ §III-B, §III-D's
 * input): the skinning weights at a mesh's vertices, and at cubature points the weights, their
 * spatial gradients and volume weights — what the reduced simulator consumes. */
#ifndef ANIMA_MODELS_PHYSSKIN_INFER_H
#define ANIMA_MODELS_PHYSSKIN_INFER_H

#include "config.h"
#include "datasets/mesh/mesh.h"
#include "datasets/corpus/skinning_file.h"
#include "model.h"

/* The config stored in a checkpoint written by `anima physskin train`; 0 or -1 with err. */
int ps_checkpoint_config(const char *ckpt, PsConfig *c, char *err, size_t errlen);

/* The skinning-matrix metrics of physskin.md §5 (PhysSkin++ §IV-B) on the column-l2-normalized
 * Ŵ of W (n × k, row-major): orthogonality error ‖ŴᵀŴ − I‖_F / k, condition number
 * σ_max/σ_min (inf when rank-deficient), spectral balance −Σ p_i log p_i / log k with
 * p_i = σ_i² / Σ σ_j² (1 = balanced). σ_i² are the eigenvalues of the k × k Gram matrix ŴᵀŴ
 * (cyclic Jacobi, k is small). */
typedef struct {
    double orth_err, cond, balance;
} PsSkinMetrics;
void ps_skin_metrics(const float *W, int64_t n, int64_t k, PsSkinMetrics *out);

/* A checkpoint loaded once for inference over many meshes (`anima physskin skin` on a folder):
 * the config stored in it, the model and its parameters in a scope of their own. */
typedef struct {
    PsConfig cfg;
    TensorDType dtype;
    TensorScope *scope; /* the parameters' scope; ps_skinner_free ends it (innermost rule) */
    NnParams params;
    PsModel model;
    char path[1024];
} PsSkinner;

/* 0, or -1 with err naming the checkpoint: not HDF5, not a checkpoint of `anima physskin train`
 * (no config, or a config that is not PhysSkin's), or parameters that do not match the model
 * its config describes (names, shapes). */
int ps_skinner_load(PsSkinner *s, const char *ckpt, char *err, size_t errlen);
void ps_skinner_free(PsSkinner *s);

/* Normalizes and samples the mesh like the training data (data.n_surface encoder points, a
 * data.cubature_res grid of interior candidates), evaluates the fields and fills `out` in the
 * skinning file's layout (datasets/corpus/skinning_file.h), in the normalized frame the network saw
 * (x_n = (x − center)·scale, stored as out->center/scale so the mesh file's frame can be
 * recovered):
 *   cubature: n = n_cubature points drawn evenly from the candidates (all when n ≤ 0 or more
 *             than there are), volumes, W and ∂w_k/∂x_j by autograd (PS_GRAD_EXACT);
 *   vertices: the mesh's vertices with W and ∇W; faces: the mesh's triangles;
 *   source:   the checkpoint path.
 * W is the network output (not column-normalized). `name` names the mesh in errors. met, when
 * not NULL, gets physskin.md §5's metrics of W at the vertices. 0, or -1 with err. */
int ps_skinner_run(PsSkinner *s, const DsMesh *mesh, const char *name, int64_t n_cubature, DsSkinning *out,
                   PsSkinMetrics *met, char *err, size_t errlen);

/* Load the checkpoint, run it on the mesh with every interior candidate a cubature point, free:
 * the one-shot form of the two calls above, with the signature a simulator scene's checkpoint
 * skinner takes (sim/scene.h: sim_scene_set_checkpoint_skinner). 0, or -1 with err. */
int ps_skin_checkpoint(const char *ckpt, const DsMesh *mesh, const char *name, DsSkinning *out, char *err,
                       size_t errlen);

/* Load, read the mesh file, run, write `out` (ds_skinning_write: atomically); one summary line
 * (counts and the metrics) goes to base/log.h's sink. */
int ps_skin_mesh(const char *ckpt, const char *mesh, const char *out, int64_t n_cubature, char *err, size_t errlen);

#endif
