/* datasets/mesh/gltf.c — the .glb writer (gltf.h). One bufferView per accessor (no byteStride,
 * each view starting on a 4-byte boundary, as the spec asks of vertex attributes), so any
 * reader can take the views as they are; min/max on every accessor the spec requires them of
 * (POSITION, morph target POSITION, animation inputs). */
#include "datasets/mesh/gltf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/finite.h"

enum { GL_UBYTE = 5121, GL_USHORT = 5123, GL_UINT = 5125, GL_FLOAT = 5126 };
enum { GL_ARRAY_BUFFER = 34962, GL_ELEMENT_ARRAY_BUFFER = 34963 };

typedef struct {
    uint8_t *bin;
    size_t len, cap;
    cJSON *views, *accessors;
    bool oom;
} Glb;

static int bin_append(Glb *g, const void *data, size_t n) {
    size_t start = (g->len + 3) & ~(size_t)3;
    if (start + n > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < start + n) cap *= 2;
        uint8_t *p = realloc(g->bin, cap);
        if (!p) return g->oom = true, -1;
        g->bin = p, g->cap = cap;
    }
    memset(g->bin + g->len, 0, start - g->len);
    memcpy(g->bin + start, data, n);
    g->len = start + n;
    return (int)start;
}

/* An accessor over its own bufferView of count elements of `type` (ncomp components each).
 * min/max (ncomp each) or NULL. Returns the accessor index, or -1 (out of memory). */
static int add_accessor(Glb *g, const void *data, int comp, int64_t count, const char *type, int ncomp, int target,
                        const float *mn, const float *mx) {
    size_t csize = comp == GL_UBYTE ? 1 : comp == GL_USHORT ? 2 : 4;
    size_t bytes = csize * (size_t)ncomp * (size_t)count;
    int off = bin_append(g, data, bytes);
    if (off < 0) return -1;
    cJSON *v = cJSON_CreateObject();
    cJSON_AddNumberToObject(v, "buffer", 0);
    cJSON_AddNumberToObject(v, "byteOffset", off);
    cJSON_AddNumberToObject(v, "byteLength", (double)bytes);
    if (target) cJSON_AddNumberToObject(v, "target", target);
    cJSON_AddItemToArray(g->views, v);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "bufferView", cJSON_GetArraySize(g->views) - 1);
    cJSON_AddNumberToObject(a, "componentType", comp);
    cJSON_AddNumberToObject(a, "count", (double)count);
    cJSON_AddStringToObject(a, "type", type);
    if (mn && mx) {
        cJSON *lo = cJSON_AddArrayToObject(a, "min"), *hi = cJSON_AddArrayToObject(a, "max");
        for (int i = 0; i < ncomp; i++) {
            cJSON_AddItemToArray(lo, cJSON_CreateNumber(mn[i]));
            cJSON_AddItemToArray(hi, cJSON_CreateNumber(mx[i]));
        }
    }
    cJSON_AddItemToArray(g->accessors, a);
    return cJSON_GetArraySize(g->accessors) - 1;
}

static void bounds(const float *x, int64_t n, int ncomp, float *mn, float *mx) {
    for (int i = 0; i < ncomp; i++) mn[i] = INFINITY, mx[i] = -INFINITY;
    for (int64_t k = 0; k < n; k++)
        for (int i = 0; i < ncomp; i++) mn[i] = fminf(mn[i], x[k * ncomp + i]), mx[i] = fmaxf(mx[i], x[k * ncomp + i]);
}

static int check(const DsGltfMesh *m, char *err, size_t errlen) {
    if (m->nv <= 0 || !m->pos) return base_errf(err, errlen, "glTF: no vertices");
    if (m->nv >= ((int64_t)1 << 31) - 1 || m->nf < 0 || m->nf > ((int64_t)1 << 30))
        return base_errf(err, errlen, "glTF: %lld vertices, %lld triangles: too many", (long long)m->nv, (long long)m->nf);
    if (m->nf > 0 && !m->faces) return base_errf(err, errlen, "glTF: %lld triangles but no faces", (long long)m->nf);
    if (!base_all_finite_f(m->pos, 3 * (size_t)m->nv)) return base_errf(err, errlen, "glTF: a vertex position is not finite");
    if (m->color && !base_all_finite_f(m->color, 3 * (size_t)m->nv)) return base_errf(err, errlen, "glTF: a color is not finite");
    for (int64_t i = 0; i < 3 * m->nf; i++)
        if (m->faces[i] < 0 || m->faces[i] >= m->nv)
            return base_errf(err, errlen, "glTF: triangle %lld refers to vertex %d of %lld", (long long)(i / 3), m->faces[i],
                             (long long)m->nv);
    if (m->nframes < 0 || (m->nframes > 0 && !(m->fps > 0 && isfinite(m->fps))))
        return base_errf(err, errlen, "glTF: %d frames at %g frames per second", m->nframes, m->fps);
    if (m->njoints < 0 || m->njoints > 65535) return base_errf(err, errlen, "glTF: %d joints", m->njoints);
    if (m->njoints > 0) {
        if (!m->parents || !m->weights || !m->inverse_bind) return base_errf(err, errlen, "glTF: a skin needs parents, weights and inverse bind matrices");
        for (int j = 0; j < m->njoints; j++)
            if (m->parents[j] < -1 || m->parents[j] >= j)
                return base_errf(err, errlen, "glTF: joint %d has parent %d (parents come first)", j, m->parents[j]);
        if (!base_all_finite_f(m->weights, (size_t)m->nv * (size_t)m->njoints) || !base_all_finite_f(m->inverse_bind, 16 * (size_t)m->njoints) ||
            (m->joint_t && !base_all_finite_f(m->joint_t, 3 * (size_t)m->njoints)) ||
            (m->joint_r && !base_all_finite_f(m->joint_r, 4 * (size_t)m->njoints)))
            return base_errf(err, errlen, "glTF: a skin value is not finite");
        if (m->frames) return base_errf(err, errlen, "glTF: a skinned mesh cannot also carry baked frames");
        if (m->nframes > 0) {
            if (!m->anim_t || !m->anim_r) return base_errf(err, errlen, "glTF: an animated skin needs per-frame joint translations and rotations");
            size_t n = (size_t)m->nframes * (size_t)m->njoints;
            if (!base_all_finite_f(m->anim_t, 3 * n) || !base_all_finite_f(m->anim_r, 4 * n))
                return base_errf(err, errlen, "glTF: an animated joint value is not finite");
        }
    } else if (m->nframes > 0) {
        if (!m->frames) return base_errf(err, errlen, "glTF: %d frames but no per-frame positions", m->nframes);
        if (!base_all_finite_f(m->frames, (size_t)m->nframes * 3 * (size_t)m->nv))
            return base_errf(err, errlen, "glTF: a frame's position is not finite");
    }
    return 0;
}

static void quat_normalize(float *q) {
    double l = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] + (double)q[3] * q[3]);
    if (!(l > 0)) q[0] = q[1] = q[2] = 0, q[3] = 1;
    else
        for (int i = 0; i < 4; i++) q[i] = (float)(q[i] / l);
}

/* The 4 largest positive weights of a row renormalized to sum to 1 (glTF's WEIGHTS_0 must), with
 * their joints; unused slots get weight 0 and joint 0. A row with no positive weight is bound
 * rigidly to joint 0. The sum is made exact in float by giving the rounding residue to the
 * largest. */
static void top4(const float *w, int nj, uint16_t j4[4], float w4[4]) {
    int idx[4] = {-1, -1, -1, -1};
    float val[4] = {0, 0, 0, 0};
    for (int j = 0; j < nj; j++) {
        float x = w[j];
        if (!(x > 0)) continue;
        int k = 4;
        while (k > 0 && x > val[k - 1]) k--;
        if (k == 4) continue;
        for (int s = 3; s > k; s--) val[s] = val[s - 1], idx[s] = idx[s - 1];
        val[k] = x, idx[k] = j;
    }
    double sum = 0;
    for (int k = 0; k < 4; k++) sum += val[k];
    if (!(sum > 0)) {
        j4[0] = j4[1] = j4[2] = j4[3] = 0;
        w4[0] = 1, w4[1] = w4[2] = w4[3] = 0;
        return;
    }
    float rest = 1;
    for (int k = 3; k >= 0; k--) {
        j4[k] = idx[k] < 0 ? 0 : (uint16_t)idx[k];
        w4[k] = idx[k] < 0 ? 0 : (float)(val[k] / sum);
        if (k > 0) rest -= w4[k];
    }
    w4[0] = rest;
}

static cJSON *num_array(const float *x, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]));
    return a;
}

static int add_times(Glb *g, int nframes, double fps) {
    float *t = malloc(sizeof(float) * (size_t)nframes);
    if (!t) return g->oom = true, -1;
    for (int k = 0; k < nframes; k++) t[k] = (float)(k / fps);
    float mn = t[0], mx = t[nframes - 1];
    int a = add_accessor(g, t, GL_FLOAT, nframes, "SCALAR", 1, 0, &mn, &mx);
    free(t);
    return a;
}

static void add_channel(cJSON *samplers, cJSON *channels, int input, int output, const char *interp, int node,
                        const char *path) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "input", input);
    cJSON_AddNumberToObject(s, "output", output);
    cJSON_AddStringToObject(s, "interpolation", interp);
    cJSON_AddItemToArray(samplers, s);
    cJSON *c = cJSON_CreateObject(), *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "sampler", cJSON_GetArraySize(samplers) - 1);
    cJSON_AddNumberToObject(t, "node", node);
    cJSON_AddStringToObject(t, "path", path);
    cJSON_AddItemToObject(c, "target", t);
    cJSON_AddItemToArray(channels, c);
}

/* The skin's attributes, joints, inverse bind matrices and animation. */
static int build_skin(Glb *g, const DsGltfMesh *m, cJSON *root, cJSON *attrs, cJSON *nodes, cJSON *scene_nodes) {
    int nj = m->njoints;
    size_t nv = (size_t)m->nv;
    bool wide = nj > 256;
    uint8_t *j8 = malloc(4 * nv);
    uint16_t *j16 = malloc(sizeof(uint16_t) * 4 * nv);
    float *w = malloc(sizeof(float) * 4 * nv);
    if (!j8 || !j16 || !w) {
        free(j8), free(j16), free(w);
        return g->oom = true, -1;
    }
    for (size_t v = 0; v < nv; v++) {
        top4(m->weights + v * (size_t)nj, nj, j16 + 4 * v, w + 4 * v);
        for (int k = 0; k < 4; k++) j8[4 * v + k] = (uint8_t)j16[4 * v + k];
    }
    int aj = add_accessor(g, wide ? (void *)j16 : (void *)j8, wide ? GL_USHORT : GL_UBYTE, m->nv, "VEC4", 4, GL_ARRAY_BUFFER, NULL, NULL);
    int aw = add_accessor(g, w, GL_FLOAT, m->nv, "VEC4", 4, GL_ARRAY_BUFFER, NULL, NULL);
    free(j8), free(j16), free(w);
    int aibm = add_accessor(g, m->inverse_bind, GL_FLOAT, nj, "MAT4", 16, 0, NULL, NULL);
    if (aj < 0 || aw < 0 || aibm < 0) return -1;
    cJSON_AddNumberToObject(attrs, "JOINTS_0", aj);
    cJSON_AddNumberToObject(attrs, "WEIGHTS_0", aw);
    /* joint j is node 1 + j (node 0 is the mesh) */
    int nroots = 0, first_root = -1;
    for (int j = 0; j < nj; j++) {
        cJSON *n = cJSON_CreateObject();
        char name[64];
        if (m->joint_names && m->joint_names[j]) cJSON_AddStringToObject(n, "name", m->joint_names[j]);
        else snprintf(name, sizeof name, "joint_%d", j), cJSON_AddStringToObject(n, "name", name);
        if (m->joint_t) cJSON_AddItemToObject(n, "translation", num_array(m->joint_t + 3 * j, 3));
        if (m->joint_r) {
            float q[4];
            memcpy(q, m->joint_r + 4 * j, sizeof q);
            quat_normalize(q);
            cJSON_AddItemToObject(n, "rotation", num_array(q, 4));
        }
        cJSON *kids = NULL;
        for (int c = j + 1; c < nj; c++)
            if (m->parents[c] == j) {
                if (!kids) kids = cJSON_AddArrayToObject(n, "children");
                cJSON_AddItemToArray(kids, cJSON_CreateNumber(1 + c));
            }
        cJSON_AddItemToArray(nodes, n);
        if (m->parents[j] < 0) {
            cJSON_AddItemToArray(scene_nodes, cJSON_CreateNumber(1 + j));
            if (first_root < 0) first_root = j;
            nroots++;
        }
    }
    cJSON *skin = cJSON_CreateObject(), *joints = cJSON_AddArrayToObject(skin, "joints");
    cJSON_AddNumberToObject(skin, "inverseBindMatrices", aibm);
    for (int j = 0; j < nj; j++) cJSON_AddItemToArray(joints, cJSON_CreateNumber(1 + j));
    if (nroots == 1) cJSON_AddNumberToObject(skin, "skeleton", 1 + first_root);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "skins"), skin);
    if (m->nframes <= 0) return 0;
    int F = m->nframes, tin = add_times(g, F, m->fps);
    if (tin < 0) return -1;
    cJSON *anim = cJSON_CreateObject();
    cJSON_AddStringToObject(anim, "name", m->name ? m->name : "animation");
    cJSON *samplers = cJSON_AddArrayToObject(anim, "samplers"), *channels = cJSON_AddArrayToObject(anim, "channels");
    float *buf = malloc(sizeof(float) * 4 * (size_t)F);
    if (!buf) return g->oom = true, -1;
    int nch = 0;
    for (int j = 0; j < nj; j++) {
        /* rotations: every joint (a pose is its rotations); signs made continuous so that the
         * shortest-path interpolation of every reader agrees with the frames */
        for (int k = 0; k < F; k++) {
            float *q = buf + 4 * k;
            memcpy(q, m->anim_r + 4 * ((size_t)k * nj + j), 4 * sizeof(float));
            quat_normalize(q);
            if (k > 0 && q[0] * q[-4] + q[1] * q[-3] + q[2] * q[-2] + q[3] * q[-1] < 0)
                for (int i = 0; i < 4; i++) q[i] = -q[i];
        }
        int a = add_accessor(g, buf, GL_FLOAT, F, "VEC4", 4, 0, NULL, NULL);
        if (a < 0) break;
        add_channel(samplers, channels, tin, a, "LINEAR", 1 + j, "rotation"), nch++;
        /* translations: only where they move (roots; bones whose heads do not follow rigidly) */
        bool moves = false;
        for (int k = 0; k < F; k++)
            for (int i = 0; i < 3; i++) {
                float x = m->anim_t[3 * ((size_t)k * nj + j) + i];
                buf[3 * k + i] = x;
                moves |= x != (m->joint_t ? m->joint_t[3 * j + i] : 0.0f);
            }
        if (!moves) continue;
        a = add_accessor(g, buf, GL_FLOAT, F, "VEC3", 3, 0, NULL, NULL);
        if (a < 0) break;
        add_channel(samplers, channels, tin, a, "LINEAR", 1 + j, "translation"), nch++;
    }
    free(buf);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "animations"), anim);
    return g->oom ? -1 : 0;
}

/* Baked frames as morph targets: target k = frame k − rest; weights one-hot at frame k. */
static int build_morph(Glb *g, const DsGltfMesh *m, cJSON *root, cJSON *prim, cJSON *mesh) {
    int F = m->nframes;
    size_t nv = (size_t)m->nv;
    float *d = malloc(sizeof(float) * 3 * nv);
    if (!d) return g->oom = true, -1;
    cJSON *targets = cJSON_AddArrayToObject(prim, "targets"), *mw = cJSON_AddArrayToObject(mesh, "weights");
    cJSON *names = cJSON_CreateArray();
    for (int k = 0; k < F; k++) {
        const float *x = m->frames + (size_t)k * 3 * nv;
        for (size_t i = 0; i < 3 * nv; i++) d[i] = x[i] - m->pos[i];
        float mn[3], mx[3];
        bounds(d, m->nv, 3, mn, mx);
        int a = add_accessor(g, d, GL_FLOAT, m->nv, "VEC3", 3, GL_ARRAY_BUFFER, mn, mx);
        if (a < 0) break;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "POSITION", a);
        cJSON_AddItemToArray(targets, t);
        cJSON_AddItemToArray(mw, cJSON_CreateNumber(k == 0));
        char name[32];
        snprintf(name, sizeof name, "frame_%05d", k);
        cJSON_AddItemToArray(names, cJSON_CreateString(name));
    }
    free(d);
    /* three.js and Blender name the targets (shape keys) from mesh.extras.targetNames */
    cJSON *extras = cJSON_AddObjectToObject(mesh, "extras");
    cJSON_AddItemToObject(extras, "targetNames", names);
    if (g->oom) return -1;
    int tin = add_times(g, F, m->fps);
    float *w = calloc((size_t)F * (size_t)F, sizeof(float));
    if (tin < 0 || !w) return free(w), g->oom = true, -1;
    for (int k = 0; k < F; k++) w[(size_t)k * F + k] = 1;
    int aw = add_accessor(g, w, GL_FLOAT, (int64_t)F * F, "SCALAR", 1, 0, NULL, NULL);
    free(w);
    if (aw < 0) return -1;
    cJSON *anim = cJSON_CreateObject();
    cJSON_AddStringToObject(anim, "name", m->name ? m->name : "animation");
    add_channel(cJSON_AddArrayToObject(anim, "samplers"), cJSON_AddArrayToObject(anim, "channels"), tin, aw, "LINEAR", 0,
                "weights");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "animations"), anim);
    return 0;
}

static int encode_json(const DsGltfMesh *m, Glb *g, char **json) {
    cJSON *root = cJSON_CreateObject();
    cJSON *asset = cJSON_AddObjectToObject(root, "asset");
    cJSON_AddStringToObject(asset, "version", "2.0");
    cJSON_AddStringToObject(asset, "generator", "anima (datasets/mesh/gltf.c)");
    cJSON_AddNumberToObject(root, "scene", 0);
    cJSON *scene = cJSON_CreateObject(), *scene_nodes = cJSON_AddArrayToObject(scene, "nodes");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "scenes"), scene);
    cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
    g->views = cJSON_CreateArray(), g->accessors = cJSON_CreateArray();
    /* node 0: the mesh, a root without a transform (a skinned mesh's must be, spec §3.7.3) */
    cJSON *mn = cJSON_CreateObject();
    cJSON_AddStringToObject(mn, "name", m->name ? m->name : "mesh");
    cJSON_AddNumberToObject(mn, "mesh", 0);
    if (m->njoints > 0) cJSON_AddNumberToObject(mn, "skin", 0);
    cJSON_AddItemToArray(nodes, mn);
    cJSON_AddItemToArray(scene_nodes, cJSON_CreateNumber(0));
    cJSON *mesh = cJSON_CreateObject(), *prim = cJSON_CreateObject(), *attrs = cJSON_AddObjectToObject(prim, "attributes");
    cJSON_AddStringToObject(mesh, "name", m->name ? m->name : "mesh");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(mesh, "primitives"), prim);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "meshes"), mesh);
    /* vertex colors multiply the base color: a white, rough, non-metallic material shows them */
    cJSON *mat = cJSON_CreateObject(), *pbr = cJSON_AddObjectToObject(mat, "pbrMetallicRoughness");
    cJSON_AddStringToObject(mat, "name", "vertex_colors");
    cJSON_AddNumberToObject(pbr, "metallicFactor", 0);
    cJSON_AddNumberToObject(pbr, "roughnessFactor", 0.8);
    cJSON_AddBoolToObject(mat, "doubleSided", true);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "materials"), mat);
    cJSON_AddNumberToObject(prim, "material", 0);
    float lo[3], hi[3];
    bounds(m->pos, m->nv, 3, lo, hi);
    int ap = add_accessor(g, m->pos, GL_FLOAT, m->nv, "VEC3", 3, GL_ARRAY_BUFFER, lo, hi);
    if (ap >= 0) cJSON_AddNumberToObject(attrs, "POSITION", ap);
    if (m->color && ap >= 0) {
        float *c = malloc(sizeof(float) * 3 * (size_t)m->nv);
        if (!c) g->oom = true;
        else {
            for (int64_t i = 0; i < 3 * m->nv; i++) c[i] = fminf(fmaxf(m->color[i], 0.0f), 1.0f);
            int ac = add_accessor(g, c, GL_FLOAT, m->nv, "VEC3", 3, GL_ARRAY_BUFFER, NULL, NULL);
            free(c);
            if (ac >= 0) cJSON_AddNumberToObject(attrs, "COLOR_0", ac);
        }
    }
    if (m->nf > 0 && !g->oom) {
        /* the largest index type value is primitive restart, which glTF forbids in indices */
        bool u16 = m->nv < 65535;
        size_t n = 3 * (size_t)m->nf;
        void *idx = malloc(n * (u16 ? 2 : 4));
        if (!idx) g->oom = true;
        else {
            for (size_t i = 0; i < n; i++)
                if (u16) ((uint16_t *)idx)[i] = (uint16_t)m->faces[i];
                else ((uint32_t *)idx)[i] = (uint32_t)m->faces[i];
            int ai = add_accessor(g, idx, u16 ? GL_USHORT : GL_UINT, (int64_t)n, "SCALAR", 1, GL_ELEMENT_ARRAY_BUFFER, NULL, NULL);
            free(idx);
            if (ai >= 0) cJSON_AddNumberToObject(prim, "indices", ai);
        }
        cJSON_AddNumberToObject(prim, "mode", 4);
    } else
        cJSON_AddNumberToObject(prim, "mode", 0);
    if (!g->oom) {
        if (m->njoints > 0) build_skin(g, m, root, attrs, nodes, scene_nodes);
        else if (m->nframes > 1) build_morph(g, m, root, prim, mesh);
    }
    cJSON_AddItemToObject(root, "bufferViews", g->views);
    cJSON_AddItemToObject(root, "accessors", g->accessors);
    cJSON *buffer = cJSON_CreateObject();
    cJSON_AddNumberToObject(buffer, "byteLength", (double)g->len);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "buffers"), buffer);
    *json = g->oom ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return *json ? 0 : -1;
}

static void put32(uint8_t *p, uint32_t x) {
    p[0] = (uint8_t)x, p[1] = (uint8_t)(x >> 8), p[2] = (uint8_t)(x >> 16), p[3] = (uint8_t)(x >> 24);
}

int ds_gltf_encode(const DsGltfMesh *m, uint8_t **out, size_t *size, char *err, size_t errlen) {
    *out = NULL, *size = 0;
    if (check(m, err, errlen)) return -1;
    Glb g = {0};
    char *json = NULL;
    if (encode_json(m, &g, &json)) {
        free(g.bin);
        return base_errf(err, errlen, "glTF: out of memory");
    }
    /* chunks padded to 4 bytes: the JSON with spaces, the binary with zeros (GLB spec) */
    size_t jl = strlen(json), jp = (jl + 3) & ~(size_t)3, bp = (g.len + 3) & ~(size_t)3;
    size_t total = 12 + 8 + jp + (g.len ? 8 + bp : 0);
    if (total > UINT32_MAX) {
        free(json), free(g.bin);
        return base_errf(err, errlen, "glTF: %zu bytes, more than a GLB can hold (4 GiB)", total);
    }
    uint8_t *b = malloc(total);
    if (!b) {
        free(json), free(g.bin);
        return base_errf(err, errlen, "glTF: out of memory");
    }
    memcpy(b, "glTF", 4), put32(b + 4, 2), put32(b + 8, (uint32_t)total);
    put32(b + 12, (uint32_t)jp), memcpy(b + 16, "JSON", 4);
    memcpy(b + 20, json, jl), memset(b + 20 + jl, ' ', jp - jl);
    if (g.len) {
        uint8_t *c = b + 20 + jp;
        put32(c, (uint32_t)bp), memcpy(c + 4, "BIN\0", 4);
        memcpy(c + 8, g.bin, g.len), memset(c + 8 + g.len, 0, bp - g.len);
    }
    free(json), free(g.bin);
    *out = b, *size = total;
    return 0;
}

int ds_gltf_write(const char *path, const DsGltfMesh *m, char *err, size_t errlen) {
    uint8_t *b;
    size_t n;
    if (ds_gltf_encode(m, &b, &n, err, errlen)) {
        char e2[1024];
        snprintf(e2, sizeof e2, "%s", err);
        return base_errf(err, errlen, "%s: %s", path, e2);
    }
    static atomic_uint seq;
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1)) >= sizeof tmp) {
        free(b);
        return base_errf(err, errlen, "%s: path too long", path);
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        free(b);
        return base_errf(err, errlen, "%s: cannot create (%s)", path, strerror(e));
    }
    int e = 0;
    if (fwrite(b, 1, n, f) != n || fflush(f) != 0 || fsync(fileno(f)) != 0) e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    free(b);
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        remove(tmp);
        return base_errf(err, errlen, "%s: cannot write (%s)", path, strerror(e));
    }
    return 0;
}

void ds_gltf_mat_from_rows(const double *rows, float out[16]) {
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) out[4 * c + r] = (float)rows[4 * r + c];
    out[3] = out[7] = out[11] = 0, out[15] = 1;
}
