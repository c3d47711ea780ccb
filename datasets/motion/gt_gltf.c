/* datasets/motion/gt_gltf.c — the motion ground truth as a skinned, animated glTF mesh
 * (bench.h: ds_motion_gt_gltf). */
#include <stdlib.h>

#include "base/errbuf.h"
#include "datasets/mesh/gltf.h"
#include "datasets/motion/bench.h"

/* rig.h's conventions map onto glTF nodes one to one. Every bone's rest frame is the world frame
 * at its head h_j, so joint j's rest node transform is a translation by h_j − h_parent (the
 * root's: h_root) with no rotation, its inverse bind matrix the translation by −h_j, and its
 * animated rotation the local rotation L_j: the node's world transform is then T(h_j(t)) R_j
 * (glTF's parent · T · R chain is rig.h's FK), and times the inverse bind matrix it is rig.h's
 * S_j(x) = R_j (x − h_j) + h_j(t). Only the root translates (h_root(t), the posed root head). */
int ds_motion_gt_gltf(const DsMotionGt *gt, double fps, DsGltfMesh *g, float **owned, char *err, size_t errlen) {
    *owned = NULL;
    int B = gt->nbones, F = gt->nframes;
    if (B < 1 || F < 1) return base_errf(err, errlen, "motion ground truth: %d bones, %d frames", B, F);
    size_t nb = (size_t)B, nf = (size_t)F;
    float *buf = calloc(3 * nb + 16 * nb + 3 * nb + 3 * nb * nf + 4 * nb * nf, sizeof(float));
    if (!buf) return base_errf(err, errlen, "motion ground truth: out of memory");
    float *heads = buf, *ibm = heads + 3 * nb, *jt = ibm + 16 * nb, *at = jt + 3 * nb, *ar = at + 3 * nb * nf;
    /* rest heads from frame 0: S = [R | T] with T = h(0) − R h, so h = Rᵀ (h(0) − T) */
    for (int j = 0; j < B; j++) {
        const float *S = gt->bone_transforms + 16 * (size_t)j, *h0 = gt->joint_positions + 3 * (size_t)j;
        for (int i = 0; i < 3; i++) {
            double x = 0;
            for (int r = 0; r < 3; r++) x += (double)S[4 * r + i] * ((double)h0[r] - S[4 * r + 3]);
            heads[3 * j + i] = (float)x;
        }
        float *M = ibm + 16 * (size_t)j; /* column-major: the translation is the last column */
        M[0] = M[5] = M[10] = M[15] = 1;
        int p = gt->parents[j];
        for (int i = 0; i < 3; i++) {
            M[12 + i] = -heads[3 * j + i];
            jt[3 * j + i] = p < 0 ? heads[3 * j + i] : heads[3 * j + i] - heads[3 * p + i];
        }
    }
    for (int k = 0; k < F; k++)
        for (int j = 0; j < B; j++) {
            size_t kj = (size_t)k * nb + (size_t)j;
            for (int i = 0; i < 3; i++) at[3 * kj + i] = gt->parents[j] < 0 ? gt->joint_positions[3 * kj + i] : jt[3 * j + i];
            const float *q = gt->local_rotations + 4 * kj; /* (w, x, y, z) → glTF's (x, y, z, w) */
            ar[4 * kj + 0] = q[1], ar[4 * kj + 1] = q[2], ar[4 * kj + 2] = q[3], ar[4 * kj + 3] = q[0];
        }
    *g = (DsGltfMesh){.nv = gt->nv, .nf = gt->nf, .pos = gt->rest, .color = gt->colors, .faces = gt->faces,
                      .name = gt->motion[0] ? gt->motion : "motion", .njoints = B, .parents = gt->parents,
                      .weights = gt->weights, .inverse_bind = ibm, .joint_t = jt, .nframes = F,
                      .fps = fps > 0 ? fps : gt->fps > 0 ? gt->fps : 30, .anim_t = at, .anim_r = ar};
    *owned = buf;
    return 0;
}
