/* models/skelebones/rigging.h — the second half of the skelebones pipeline (issue 19 items 4–6, 8):
 * after SSDR (skelebones.h), on the rest shape:
 *  1. the shape as a closed mesh: the input's own faces when it has them (mesh frames, gt.h5,
 *     assimp models) and they are closed, else remeshed by their winding number
 *     (sb_remesh_winding); without faces (Gaussians, bare points) the level set of the points' summed
 *     isotropic Gaussian density, meshed with ds_marching_cubes — watertight and outward, the
 *     route skeleton.h explains; each point then corresponds to its nearest mesh vertex;
 *  2. the mean curvature skeleton of that mesh (skeleton.h), node ← surface correspondences;
 *  3. joints, tree and parts (joints.h) from the SSDR weights carried onto the mesh vertices (a
 *     meshed point cloud: each vertex takes the weights of its nearest point); the joints are
 *     renumbered parents-first (BFS from the root), the order IK needs;
 *  4. IK (ik.h) of every frame on that tree. The frame's skeleton is the rest skeleton moved by
 *     the SSDR bones: each node carries the mean SSDR weights of the points that collapsed into it
 *     (nodes no point reached take those of the nearest node that has some) and is moved by LBS,
 *     n_t = Σ_j w_nj (R_j^t n + T_j^t); the Chamfer term pulls the FK joints onto those nodes. The
 *     L2 term uses at most ik_points points (evenly strided), each bound rigidly to the joint whose
 *     rotation moves it: its node's nearest bone segment (parent → child) belongs to the parent.
 * With a true rig (gt.h5, assimp) the found rest joints are compared with the true ones (each
 * bone's head at rest, x = R_0ᵀ(h_0 − T_0), and, when the source has them (gt.h5), the rest
 * tails of the leaf bones — the limbs' ends, as tests/test_skeleton.c counts them): mean nearest
 * distance true → found and found → true, in % of the rest bounding-box diagonal; and, with the
 * true parents, the trees' topology (sb_tree_compare: matched joints, bones kept, ends, forks;
 * the true tree: each head hangs from its parent bone's head, each leaf tail from its head). */
#ifndef ANIMA_MODELS_SKELEBONES_RIGGING_H
#define ANIMA_MODELS_SKELEBONES_RIGGING_H

#include <stddef.h>
#include <stdint.h>

#include "base/h5file.h"
#include "datasets/mesh/mesh.h"
#include "models/skelebones/joints.h"
#include "models/skelebones/skelebones.h"
#include "models/skelebones/skeleton.h"

/* What sb_mesh_points did to a point set's density: grid cells the shell fill added, fragments
 * joined to the body, faces of the specks left out. */
typedef struct {
    int64_t filled_cells, bridged, speck_faces;
} SbMeshStats;

typedef struct {
    SbSkelOptions skel;
    SbJointOptions joints;
    SbIkOptions ik;
    int64_t ik_points; /* (400) */
    int grid;          /* marching-cubes cells along the longest side, points only (64) */
    int fill_votes;    /* points only: a shell's inside is filled where ≥ this many of 13 lines stab it
                        * (sb_fill_shells; 5; 0: off) */
    int density_norm;  /* points only: each point's splat divided by the density at it, opacity-weighted
                        * (sb_mesh_points; 1), so thin parts are surface as dense parts are */
    double bridge;     /* points only: a piece of the density apart from the body by at most this many
                        * cells (3: the splat's 2σ; 0: off) is joined to it by a bar, unless the bar
                        * makes a loop — a limb's end the density lost at a thin gap (sb_mesh_points) */
    int run_ik;        /* (1) */
} SbRigOptions;

void sb_rig_options_defaults(SbRigOptions *o);

typedef struct SbRigResult {
    DsMesh shape;          /* the mesh the skeleton was taken of (a copy of the input's, or meshed) */
    int meshed;            /* 0: the input's faces; 1: the points' density; 2: the faces remeshed */
    SbMeshStats mesh_stats; /* (meshed 1) what sb_mesh_points did */
    SbSkeleton skel;
    SbRig rig;             /* joints parents-first */
    int32_t *point_node;   /* N: the skeleton node of each input point */
    double seconds_skeleton, seconds_joints, seconds_ik;
    int true_joints;       /* joints of the true rig, 0 without one */
    double err_true_found, err_found_true; /* % of the diagonal; −1 without a true rig */
    int have_tree;         /* 1 when the true rig has parents: tree holds the topology comparison */
    SbTreeCompare tree;    /* joints.h, matching radius 5% of the diagonal */
    double diag;
} SbRigResult;

/* Runs steps 1–4 on t and r (SSDR done); the IK goes into r->ik, r->ik_rest, r->ik_parents. 0, or
 * -1 with err. */
int sb_rig_run(const SbTraj *t, SbResult *r, const SbRigOptions *o, SbRigResult *out, char *err, size_t errlen);
void sb_rig_result_free(SbRigResult *g);

/* The found rig against a true rig given apart from the trajectories — the rig of the motion they
 * were reconstructed from (gs4d's Gaussians against the benchmark's gt.h5). The two rest spaces
 * differ (gs4d's canonical space is its own), so the comparison is posed, frame by frame: the IK's
 * FK joints of frame f (r->ik.positions) against the true joints at that frame's time (the bones'
 * heads and the leaf bones' tails moved by their bones, as sb_rig_run counts them at rest), mean
 * nearest distance each way in % of the true rest shape's bounding-box diagonal; the mean over the
 * frames and the worst frame. times: the trajectories' frame times (r->ik.nframes of them); each
 * is matched to the true frame of the nearest time, which must lie within half a true frame. */
typedef struct {
    int frames, true_joints, found_joints;
    double true_found, found_true;             /* means over the frames, % of the diagonal */
    double worst_true_found, worst_found_true; /* the worst frame of each */
} SbPosedJointError;

int sb_rig_posed_joint_error(const SbResult *r, const float *times, const SbTraj *truth, SbPosedJointError *out,
                             char *err, size_t errlen);

/* A closed, manifold version of any mesh (open, soup): marching cubes of ½ − |its generalized
 * winding number| on a grid of res cells along the longest side. 0, or -1 with err. */
int sb_remesh_winding(const DsMesh *m, int res, DsMesh *out, char *err, size_t errlen);

/* Meshes a point set without faces (the route sb_rig_run takes for them): the level set of the
 * points' summed density on a grid of o->grid cells along the longest side; with
 * o->density_norm each point's splat is its opacity (opacity NULL: 1) over the density at it, so
 * a thin, sparse part is surface as a dense one is and a lone floater is not; with
 * o->fill_votes > 0, a shell of points (a gs4d fit's surface Gaussians, open where no camera
 * saw) is made solid where that many of 13 lines stab it, without adding a handle
 * (sb_fill_shells); with o->bridge > 0 each piece within that many cells of the body is joined
 * to it by a bar of cells, unless the bar adds a handle (a foot's tip that the density lost at
 * a thin gap); the specks left are then left out (sb_mesh_drop_specks). *st says how much of
 * each. 0, or -1 with err. */
int sb_mesh_points(const float *p, const float *opacity, int64_t n, const SbRigOptions *o, DsMesh *out,
                   SbMeshStats *st, char *err, size_t errlen);
/* Leaves out of m the pieces (edge-connected sets of faces) that carry less than frac of the
 * points' weight w (NULL: 1 each), each point counted in the piece of its nearest vertex: a tight
 * cluster of floaters dense enough to be surface, or a speck a few cells wide, that the skeleton
 * would give joints of their own (sb_mesh_points drops those below SB_SPECK_WEIGHT of the
 * opacity). The heaviest piece always stays. The vertices left are renumbered in order. Returns
 * the faces dropped, −1 if out of memory (m unchanged). */
#define SB_SPECK_WEIGHT 0.01
int64_t sb_mesh_drop_specks(DsMesh *m, const float *p, const float *w, int64_t n, double frac);
/* Closes a shell on a grid of n[0] × n[1] × n[2] cells (x fastest; in: 1 inside, 0 outside): a
 * cell outside is filled where, along at least `votes` of the 13 lines of the 26-neighbourhood,
 * both senses meet the set; the candidates go in one 6-connected piece at a time, largest first,
 * and with keep_handles a piece that gives the set a handle (its first Betti number rises: a
 * bridge between two limbs the body already joins) or a component of its own (a piece touching
 * none of the set, which would mesh as a speck) is left out; then closed cavities are filled. Filled cells are marked 2. Returns how many, −1 if out of memory. */
int64_t sb_fill_shells(uint8_t *in, const int n[3], int votes, int keep_handles);

/* The skeleton (thin red bars) and, with rig, the bones joint → parent (thicker blue bars) drawn
 * over the shape: PLY (shape + bars, may be NULL) and PNG (size × ¾size, the shape grey and the
 * bars seen through it at 75%, may be NULL). 0, or -1 with err. */
int sb_skeleton_view(const char *ply, const char *png, int width, const DsMesh *m, const SbSkeleton *s,
                     const SbRig *rig, char *err, size_t errlen);

/* The rig animated (issue 19 item 8): per frame (at most max_frames, evenly strided) the shape —
 * the input's own faces at that frame, or the skeleton's mesh moved by LBS of the SSDR bones
 * (each vertex with its nearest point's weights) — in grey with the IK's FK bones (joint →
 * parent, blue bars) seen through it, from one camera framing every frame; an animated GIF
 * (gif_path) and an MP4 through ffmpeg (mp4_path, datasets/render/video.h), either NULL to skip,
 * of width × ¾width pixels, 12.5 frames per second. Needs r's IK (sb_rig_run with run_ik). 0, or -1
 * with err. */
int sb_rig_animation(const char *gif_path, const char *mp4_path, const SbTraj *t, const SbResult *r,
                     const SbRigResult *g, int width, int max_frames, char *err, size_t errlen);

/* Writes skeleton/{nodes,edges,corr}, joints/{positions,parents,kind,node,parts} and the joint
 * errors into an open rig.h5 (skelebones.c calls it). 0 or -1. */
int sb_rig_h5_write(hid_t f, const SbRigResult *g);

#endif
