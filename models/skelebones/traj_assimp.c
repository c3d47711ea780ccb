/* models/skelebones/traj_assimp.c — trajectories from an animated, skinned model read through
 * libassimp's C API (glTF, FBX, Collada, .x, ...): the animation is sampled at F evenly spaced
 * times, every node's local transform is interpolated from its channel's keys (linear position
 * and scale, normalized-lerp rotation — keys are dense enough in these files that slerp's
 * difference is below float noise), node globals are composed down the hierarchy, and each
 * vertex is skinned: Σ_b w_b · G_b(t) · offset_b · v (weights normalized; a vertex no bone
 * weights follows its mesh's node; G_b is the root-relative global, so points are in the root's
 * frame). All meshes are merged into one point set. The rest pose is
 * the file's node hierarchy without animation (meshes placed by their nodes' static globals);
 * the true rig kept for evaluation: bones (parents first, parent = the nearest bone ancestor),
 * their weights, rest → frame transforms G_b(t) · offset_b · M_mesh⁻¹ and heads G_b(t)'s
 * origin per frame. */
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mat3.h"
#include "models/skelebones/traj.h"

/* 3 × 4 row-major affine transforms [R | T] in double */
typedef struct {
    double m[12];
} Aff;

static Aff aff_from_ai(const struct aiMatrix4x4 *a) {
    Aff r = {{a->a1, a->a2, a->a3, a->a4, a->b1, a->b2, a->b3, a->b4, a->c1, a->c2, a->c3, a->c4}};
    return r;
}

static Aff aff_mul(const Aff *x, const Aff *y) {
    Aff r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double s = j == 3 ? x->m[i * 4 + 3] : 0;
            for (int k = 0; k < 3; k++) s += x->m[i * 4 + k] * y->m[k * 4 + j];
            r.m[i * 4 + j] = s;
        }
    return r;
}

/* the general inverse of an affine map (offsets may carry scale): 0, or -1 when singular */
static int aff_inv(const Aff *a, Aff *r) {
    const double *m = a->m;
    double c00 = m[5] * m[10] - m[6] * m[9], c01 = m[6] * m[8] - m[4] * m[10], c02 = m[4] * m[9] - m[5] * m[8];
    double det = m[0] * c00 + m[1] * c01 + m[2] * c02;
    if (!(fabs(det) > 1e-300)) return -1;
    double inv[9] = {c00, m[2] * m[9] - m[1] * m[10], m[1] * m[6] - m[2] * m[5],
                     c01, m[0] * m[10] - m[2] * m[8], m[2] * m[4] - m[0] * m[6],
                     c02, m[1] * m[8] - m[0] * m[9],  m[0] * m[5] - m[1] * m[4]};
    for (int i = 0; i < 3; i++) {
        double t = 0;
        for (int k = 0; k < 3; k++) {
            r->m[i * 4 + k] = inv[i * 3 + k] / det;
            t -= r->m[i * 4 + k] * m[k * 4 + 3];
        }
        r->m[i * 4 + 3] = t;
    }
    return 0;
}

static void aff_apply(const Aff *a, const double p[3], double out[3]) {
    for (int i = 0; i < 3; i++) out[i] = a->m[i * 4] * p[0] + a->m[i * 4 + 1] * p[1] + a->m[i * 4 + 2] * p[2] + a->m[i * 4 + 3];
}

/* key index i with keys[i].time <= t < keys[i+1].time and the blend factor */
#define FIND_KEY(keys, n, t, i, u)                                                             \
    do {                                                                                       \
        i = 0;                                                                                 \
        while (i + 1 < (n) && (keys)[i + 1].mTime <= (t)) i++;                                 \
        u = 0;                                                                                 \
        if (i + 1 < (n) && (t) > (keys)[i].mTime) {                                            \
            double span = (keys)[i + 1].mTime - (keys)[i].mTime;                               \
            u = span > 0 ? ((t) - (keys)[i].mTime) / span : 0;                                 \
        }                                                                                      \
    } while (0)

static void lerp_vec(const struct aiVectorKey *k, unsigned n, double t, double out[3]) {
    unsigned i;
    double u;
    FIND_KEY(k, n, t, i, u);
    const struct aiVector3D *a = &k[i].mValue, *b = &k[i + 1 < n ? i + 1 : i].mValue;
    out[0] = a->x + u * (b->x - a->x), out[1] = a->y + u * (b->y - a->y), out[2] = a->z + u * (b->z - a->z);
}

/* a node's local transform at time t from its channel: T · R · S */
static Aff channel_at(const struct aiNodeAnim *ch, const Aff *fallback, double t) {
    if (!ch->mNumPositionKeys || !ch->mNumRotationKeys || !ch->mNumScalingKeys) return *fallback;
    double p[3], s[3];
    lerp_vec(ch->mPositionKeys, ch->mNumPositionKeys, t, p);
    lerp_vec(ch->mScalingKeys, ch->mNumScalingKeys, t, s);
    unsigned i;
    double u;
    FIND_KEY(ch->mRotationKeys, ch->mNumRotationKeys, t, i, u);
    const struct aiQuaternion *a = &ch->mRotationKeys[i].mValue;
    const struct aiQuaternion *b = &ch->mRotationKeys[i + 1 < ch->mNumRotationKeys ? i + 1 : i].mValue;
    /* the shorter arc: q and -q are the same rotation */
    double sg = a->w * b->w + a->x * b->x + a->y * b->y + a->z * b->z < 0 ? -1 : 1;
    double w = a->w + u * (sg * b->w - a->w), x = a->x + u * (sg * b->x - a->x);
    double y = a->y + u * (sg * b->y - a->y), z = a->z + u * (sg * b->z - a->z);
    double nq = sqrt(w * w + x * x + y * y + z * z);
    if (!(nq > 0)) return *fallback;
    double q[4] = {w / nq, x / nq, y / nq, z / nq}, R[9];
    base_unit_quat_to_mat3(q, R);
    Aff r;
    for (int row = 0; row < 3; row++) {
        for (int c = 0; c < 3; c++) r.m[row * 4 + c] = R[row * 3 + c] * s[c];
        r.m[row * 4 + 3] = p[row];
    }
    return r;
}

typedef struct {
    const struct aiNode **node; /* all nodes, parents first */
    int *parent;                /* index into node, -1 for the root */
    int n, cap;
} Nodes;

static int collect(Nodes *ns, const struct aiNode *nd, int parent) {
    if (ns->n == ns->cap) {
        int cap = ns->cap ? 2 * ns->cap : 64;
        const struct aiNode **a = realloc(ns->node, (size_t)cap * sizeof *a);
        if (!a) return -1;
        ns->node = a;
        int *p = realloc(ns->parent, (size_t)cap * sizeof *p);
        if (!p) return -1;
        ns->parent = p, ns->cap = cap;
    }
    int me = ns->n++;
    ns->node[me] = nd, ns->parent[me] = parent;
    for (unsigned c = 0; c < nd->mNumChildren; c++)
        if (collect(ns, nd->mChildren[c], me)) return -1;
    return 0;
}

static int find_node(const Nodes *ns, const struct aiString *name) {
    for (int i = 0; i < ns->n; i++)
        if (ns->node[i]->mName.length == name->length && !memcmp(ns->node[i]->mName.data, name->data, name->length)) return i;
    return -1;
}

/* node globals at time t (anim NULL: the static hierarchy) */
static void globals_at(const Nodes *ns, const struct aiAnimation *anim, const int *chan, double t, Aff *g) {
    for (int i = 0; i < ns->n; i++) {
        Aff local = aff_from_ai(&ns->node[i]->mTransformation);
        if (anim && chan[i] >= 0) local = channel_at(anim->mChannels[chan[i]], &local, t);
        g[i] = ns->parent[i] < 0 ? local : aff_mul(&g[ns->parent[i]], &local);
    }
}

int sb_traj_read_assimp(const char *path, int nframes, int anim_index, SbTraj *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    if (nframes < 1 || nframes > 100000) return snprintf(err, errlen, "%s: frames must be in [1, 100000]", path), -1;
    const struct aiScene *sc = aiImportFile(path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices);
    if (!sc) return snprintf(err, errlen, "%s: %s", path, aiGetErrorString()), -1;
    int rc = -1;
    Nodes ns = {0};
    Aff *g = NULL, *g0 = NULL, *offs = NULL, *meshinv = NULL;
    int *chan = NULL, *bone_node = NULL, *node_bone = NULL, *mesh_node = NULL;
    float *wsum = NULL;
    double *acc = NULL;
    if (!sc->mRootNode || !sc->mNumMeshes) {
        snprintf(err, errlen, "%s: no meshes", path);
        goto done;
    }
    if (anim_index < 0 || (unsigned)anim_index >= sc->mNumAnimations) {
        snprintf(err, errlen, "%s: animation %d requested, the file has %u", path, anim_index, sc->mNumAnimations);
        goto done;
    }
    const struct aiAnimation *an = sc->mAnimations[anim_index];
    if (collect(&ns, sc->mRootNode, -1)) goto oom;
    g = malloc((size_t)ns.n * sizeof *g), g0 = malloc((size_t)ns.n * sizeof *g0);
    chan = malloc((size_t)ns.n * sizeof *chan), node_bone = malloc((size_t)ns.n * sizeof *node_bone);
    mesh_node = malloc(sc->mNumMeshes * sizeof *mesh_node), meshinv = malloc(sc->mNumMeshes * sizeof *meshinv);
    if (!g || !g0 || !chan || !node_bone || !mesh_node || !meshinv) goto oom;
    for (int i = 0; i < ns.n; i++) chan[i] = -1, node_bone[i] = -1;
    for (unsigned c = 0; c < an->mNumChannels; c++) {
        int i = find_node(&ns, &an->mChannels[c]->mNodeName);
        if (i >= 0) chan[i] = (int)c;
    }
    globals_at(&ns, NULL, chan, 0, g0);
    /* each mesh's node (the first that references it) */
    for (unsigned m = 0; m < sc->mNumMeshes; m++) mesh_node[m] = 0;
    for (int i = ns.n - 1; i >= 0; i--)
        for (unsigned k = 0; k < ns.node[i]->mNumMeshes; k++)
            if (ns.node[i]->mMeshes[k] < sc->mNumMeshes) mesh_node[ns.node[i]->mMeshes[k]] = i;
    for (unsigned m = 0; m < sc->mNumMeshes; m++)
        if (aff_inv(&g0[mesh_node[m]], &meshinv[m])) {
            snprintf(err, errlen, "%s: mesh %u's node transform is singular", path, m);
            goto done;
        }
    /* bones: nodes named by some mesh bone, numbered in hierarchy order (parents first) */
    int64_t N = 0, T = 0;
    for (unsigned m = 0; m < sc->mNumMeshes; m++) {
        const struct aiMesh *me = sc->mMeshes[m];
        N += me->mNumVertices;
        for (unsigned f = 0; f < me->mNumFaces; f++) T += me->mFaces[f].mNumIndices == 3;
        for (unsigned b = 0; b < me->mNumBones; b++) {
            int i = find_node(&ns, &me->mBones[b]->mName);
            if (i < 0) {
                snprintf(err, errlen, "%s: bone '%s' names no node", path, me->mBones[b]->mName.data);
                goto done;
            }
            node_bone[i] = 1;
        }
    }
    int B = 0;
    for (int i = 0; i < ns.n; i++)
        if (node_bone[i] > 0) node_bone[i] = B++;
    if (B == 0) {
        snprintf(err, errlen, "%s: no mesh has bones (not a skinned model)", path);
        goto done;
    }
    bone_node = malloc((size_t)B * sizeof *bone_node), offs = calloc((size_t)B, sizeof *offs);
    int *offset_set = calloc((size_t)B, sizeof(int));
    t->pos = malloc((size_t)nframes * N * 3 * sizeof(float)), t->rest = malloc((size_t)N * 3 * sizeof(float));
    t->faces = T ? malloc((size_t)T * 3 * sizeof(int32_t)) : NULL;
    t->true_weights = calloc((size_t)N * B, sizeof(float)), wsum = calloc((size_t)N, sizeof(float));
    acc = malloc((size_t)N * 3 * sizeof *acc);
    t->true_transforms = malloc((size_t)nframes * B * 12 * sizeof(double));
    t->true_parents = malloc((size_t)B * sizeof(int32_t)), t->true_joints = malloc((size_t)nframes * B * 3 * sizeof(float));
    if (!bone_node || !offs || !offset_set || !t->pos || !t->rest || (T && !t->faces) || !t->true_weights || !wsum || !acc ||
        !t->true_transforms || !t->true_parents || !t->true_joints) {
        free(offset_set);
        goto oom;
    }
    for (int i = 0; i < ns.n; i++)
        if (node_bone[i] >= 0) {
            int b = node_bone[i], p = ns.parent[i];
            while (p >= 0 && node_bone[p] < 0) p = ns.parent[p];
            bone_node[b] = i, t->true_parents[b] = p < 0 ? -1 : node_bone[p];
        }
    /* weights, rest, faces; the true transforms need offset_b · M_mesh⁻¹ (the first mesh's) */
    int64_t v0 = 0, f0 = 0;
    for (unsigned m = 0; m < sc->mNumMeshes; m++) {
        const struct aiMesh *me = sc->mMeshes[m];
        for (unsigned b = 0; b < me->mNumBones; b++) {
            const struct aiBone *bo = me->mBones[b];
            int bi = node_bone[find_node(&ns, &bo->mName)];
            if (!offset_set[bi]) {
                Aff o = aff_from_ai(&bo->mOffsetMatrix);
                offs[bi] = aff_mul(&o, &meshinv[m]), offset_set[bi] = 1;
            }
            for (unsigned k = 0; k < bo->mNumWeights; k++) {
                unsigned v = bo->mWeights[k].mVertexId;
                float w = bo->mWeights[k].mWeight;
                if (v < me->mNumVertices && w > 0 && isfinite(w)) t->true_weights[(v0 + v) * B + bi] += w;
            }
        }
        for (unsigned v = 0; v < me->mNumVertices; v++) {
            double p[3] = {me->mVertices[v].x, me->mVertices[v].y, me->mVertices[v].z}, q[3];
            aff_apply(&g0[mesh_node[m]], p, q);
            for (int c = 0; c < 3; c++) t->rest[(v0 + v) * 3 + c] = (float)q[c];
        }
        for (unsigned f = 0; f < me->mNumFaces; f++)
            if (me->mFaces[f].mNumIndices == 3) {
                for (int c = 0; c < 3; c++) t->faces[f0 * 3 + c] = (int32_t)(v0 + me->mFaces[f].mIndices[c]);
                f0++;
            }
        v0 += me->mNumVertices;
    }
    free(offset_set);
    for (int64_t v = 0; v < N; v++) {
        double s = 0;
        for (int b = 0; b < B; b++) s += t->true_weights[v * B + b];
        wsum[v] = (float)s;
        if (s > 0)
            for (int b = 0; b < B; b++) t->true_weights[v * B + b] = (float)(t->true_weights[v * B + b] / s);
    }
    /* sample: F evenly spaced times over [0, duration] (ticks) */
    for (int fr = 0; fr < nframes; fr++) {
        double time = nframes > 1 ? an->mDuration * fr / (nframes - 1) : 0;
        globals_at(&ns, an, chan, time, g);
        for (int b = 0; b < B; b++) {
            const Aff *gb = &g[bone_node[b]];
            Aff tr = aff_mul(gb, &offs[b]);
            memcpy(t->true_transforms + ((size_t)fr * B + b) * 12, tr.m, sizeof tr.m);
            for (int c = 0; c < 3; c++) t->true_joints[((size_t)fr * B + b) * 3 + c] = (float)gb->m[c * 4 + 3];
        }
        /* the skin, as the file defines it: mesh-space vertices through each of the mesh's own
         * bones' G_b(t) · offset_b (not the true transforms above, so that those reproducing these
         * positions from rest is a check that the static hierarchy is the bind pose) */
        memset(acc, 0, (size_t)N * 3 * sizeof *acc);
        v0 = 0;
        for (unsigned m = 0; m < sc->mNumMeshes; m++) {
            const struct aiMesh *me = sc->mMeshes[m];
            for (unsigned b = 0; b < me->mNumBones; b++) {
                const struct aiBone *bo = me->mBones[b];
                Aff o = aff_from_ai(&bo->mOffsetMatrix);
                Aff sk = aff_mul(&g[find_node(&ns, &bo->mName)], &o);
                for (unsigned k = 0; k < bo->mNumWeights; k++) {
                    unsigned v = bo->mWeights[k].mVertexId;
                    float w = bo->mWeights[k].mWeight;
                    if (v >= me->mNumVertices || !(w > 0) || !isfinite(w)) continue;
                    double p[3] = {me->mVertices[v].x, me->mVertices[v].y, me->mVertices[v].z}, r[3];
                    aff_apply(&sk, p, r);
                    for (int c = 0; c < 3; c++) acc[(v0 + v) * 3 + c] += w * r[c];
                }
            }
            for (unsigned v = 0; v < me->mNumVertices; v++) {
                int64_t gv = v0 + v;
                double q[3];
                if (wsum[gv] > 0) {
                    for (int c = 0; c < 3; c++) q[c] = acc[gv * 3 + c] / wsum[gv];
                } else {
                    double p[3] = {me->mVertices[v].x, me->mVertices[v].y, me->mVertices[v].z};
                    aff_apply(&g[mesh_node[m]], p, q);
                }
                for (int c = 0; c < 3; c++) {
                    float x = (float)q[c];
                    if (!isfinite(x)) {
                        snprintf(err, errlen, "%s: frame %d vertex %lld is not finite", path, fr, (long long)gv);
                        goto done;
                    }
                    t->pos[((size_t)fr * N + gv) * 3 + c] = x;
                }
            }
            v0 += me->mNumVertices;
        }
    }
    t->nframes = nframes, t->npoints = N, t->nfaces = T, t->true_bones = B;
    snprintf(t->source, sizeof t->source, "%s", path);
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
done:
    if (rc) sb_traj_free(t);
    free(ns.node), free(ns.parent), free(g), free(g0), free(offs), free(meshinv), free(chan), free(bone_node);
    free(node_bone), free(mesh_node), free(wsum), free(acc);
    aiReleaseImport(sc);
    return rc;
}
