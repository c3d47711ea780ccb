/* datasets/corpus/skinning_file.h — the skinning file (HDF5, format tag "anima-skinning-1"): weights,
 * weight gradients and volumes at cubature points, and the binding points (mesh vertices) with
 * their weights and triangles. It is the one interchange format between skinning sources
 * (`anima physskin skin`, `anima sim skinning`, any other producer) and consumers (the reduced
 * simulator, sim/skinning.h). It lives in datasets/ because datasets own the file formats: the
 * model writes it and the simulator reads it without either including the other's internals.
 *
 *   attributes on /:  format   = "anima-skinning-1"   (string, required)
 *                     handles  = m                    (int64, required; equals the weight columns)
 *                     source   = free text            (string, optional: what produced it, e.g.
 *                                                      the checkpoint path)
 *                     center   = (3,) f64, scale = f64 (optional, together: the normalization
 *                                x_file = (x_mesh − center) · scale that maps the original mesh
 *                                file's frame to the frame stored here; absent when the data
 *                                were made in their own frame, e.g. procedural shapes)
 *   /cubature/points   (C, 3)    rest positions X_c
 *   /cubature/volumes  (C,)      quadrature weights V_c ≥ 0 (Σ V_c ≈ the object's volume)
 *   /cubature/weights  (C, m)    w_k(X_c)
 *   /cubature/grads    (C, m, 3) ∇w_k(X_c), the spatial gradient (physskin.md §1)
 *   /vertices/points   (V, 3)    binding points (mesh vertices), optional group
 *   /vertices/weights  (V, m)
 *   /vertices/grads    (V, m, 3) optional (needed for Gaussians' A = F, physskin.md §8)
 *   /mesh/faces        (F, 3)    int32 triangles into /vertices/points, optional
 *
 * Floats may be stored as f32 or f64 (HDF5 converts on read); the writer stores f64 because the
 * simulator's Newton solve is in f64 and a round trip must be exact. It writes as checkpoints are
 * written (base/h5file.h): to a temporary, flushed and renamed into place, in the HDF5 1.10
 * format (checksummed metadata) with a Fletcher-32 checksum on every dataset, so a damaged file is
 * refused, naming it, rather than read. Readers accept the 1.10 format or newer with fixed-length
 * string attributes only (base/h5file.h: libhdf5 reads damaged older formats and variable-length
 * strings out of bounds); from h5py: h5py.File(path, 'w', libver=('v110', 'latest')) and
 * f.attrs['format'] = np.bytes_("anima-skinning-1"). All coordinates are in one
 * frame, the one the weights and gradients were evaluated in (for PhysSkin: the normalized
 * [-1,1]³ frame the network saw, so a scene's pose means the same thing for every object).
 * Rows of the weights need not sum to one. Readers check every shape, finiteness, V_c ≥ 0 and
 * face indices, and name the file and the dataset in each error. */
#ifndef ANIMA_DATASETS_SKINNING_FILE_H
#define ANIMA_DATASETS_SKINNING_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/mesh.h"

#define DS_SKINNING_FORMAT "anima-skinning-1"

typedef struct {
    int64_t m;        /* handles (a solver adds its own constant handle; sources never store it) */
    int64_t nc;       /* cubature points */
    double *cub_x;    /* nc × 3 */
    double *cub_vol;  /* nc */
    double *cub_w;    /* nc × m */
    double *cub_dw;   /* nc × m × 3 */
    int64_t nv;       /* binding points (0 when absent) */
    double *vert_x;   /* nv × 3 */
    double *vert_w;   /* nv × m */
    double *vert_dw;  /* nv × m × 3, or NULL */
    int64_t nf;       /* triangles (0 when absent) */
    int32_t *faces;   /* nf × 3 */
    char source[512]; /* what produced it (free text; truncated on read when longer) */
    bool has_frame;   /* center/scale below are set */
    double center[3], scale; /* x_stored = (x_mesh_file − center) · scale */
} DsSkinning;

void ds_skinning_free(DsSkinning *s); /* frees the arrays, zeroes the struct */

/* 0, or -1 with err naming the file and the dataset. */
int ds_skinning_read(const char *path, DsSkinning *s, char *err, size_t errlen);
/* Validated, then written to a temporary name and renamed. 0, or -1 with err set. */
int ds_skinning_write(const char *path, const DsSkinning *s, char *err, size_t errlen);
/* Shape and value checks shared by the reader, the writer and consumers (NaN, negative volumes,
 * faces out of range, scale ≤ 0); `what` names the source in the message. */
int ds_skinning_validate(const DsSkinning *s, const char *what, char *err, size_t errlen);

/* ---- previews ---------------------------------------------------------------------------- */

/* Per-vertex colors (nv × 3 into rgb) from the vertex weights: handle k gets a distinct hue
 * (golden-ratio steps around the color wheel, so neighbours in index differ most) and each
 * vertex blends them with a_k = |ŵ_k|⁴, ŵ_k = w_k / max_v |w_k| (the network's columns have
 * arbitrary scale and sign; the 4th power lets the dominant handle show while keeping the
 * boundaries between handles smooth). */
void ds_skinning_colors(const DsSkinning *s, float *rgb);
/* The binding mesh (vertices and faces, in the stored frame) with those colors. -1 with err
 * when the file has no vertices or no faces. */
int ds_skinning_mesh(const DsSkinning *s, DsMesh *out, char *err, size_t errlen);
/* That mesh rendered from a 3/4 view (above, front-right) at width × height, framed on its
 * bounding box, to a PNG (datasets/render/raster.h). */
int ds_skinning_render_png(const DsSkinning *s, const char *path, int width, int height, char *err, size_t errlen);

#endif
