/* tests/test_gltf.c — datasets/mesh/gltf.h and `anima export`: the GLB's bytes (header, chunk
 * lengths and alignment, the JSON parsed back, accessor counts, bounds and alignment), the 4
 * largest weights renormalized, baked frames decoded back from the morph targets, and skinned
 * meshes posed by the glTF rules (node TRS chain × inverse bind matrix, read from the bytes)
 * against the rig's own LBS (datasets/motion/rig.h) and a Skelebones rig's transforms; bad inputs
 * and unwritable paths are errors; `anima export` of truncated or damaged HDF5 names the file. The
 * Khronos validator, Blender and three.js checks of the files `anima export` writes are in
 * tests/gltf/run.sh. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mat3.h"
#include "datasets/geometry/procedural.h"
#include "datasets/mesh/gltf.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/motion.h"
#include "datasets/motion/rig.h"
#include "models/skelebones/rig_file.h"
#include "tests/test.h"

/* ---- a GLB read back, by the specification --------------------------------------------------- */

typedef struct {
    cJSON *json;
    const uint8_t *bin;
    size_t bin_len;
} Glb;

static uint32_t u32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* checks the container (header, chunk types, lengths, padding) and parses the JSON */
static bool glb_open(const uint8_t *b, size_t n, Glb *g) {
    memset(g, 0, sizeof *g);
    CHECK(n >= 20 && !memcmp(b, "glTF", 4) && u32(b + 4) == 2 && u32(b + 8) == n);
    if (n < 20) return false;
    uint32_t jl = u32(b + 12);
    CHECK(jl % 4 == 0 && !memcmp(b + 16, "JSON", 4) && 20 + (size_t)jl <= n);
    if (20 + (size_t)jl > n) return false;
    /* JSON padding is spaces */
    size_t end = 20 + jl;
    while (end > 20 && b[end - 1] == ' ') end--;
    g->json = cJSON_ParseWithLength((const char *)b + 20, end - 20);
    CHECK(g->json != NULL);
    size_t at = 20 + jl;
    if (at < n) {
        uint32_t bl = u32(b + at);
        CHECK(bl % 4 == 0 && !memcmp(b + at + 4, "BIN\0", 4) && at + 8 + bl == n);
        g->bin = b + at + 8, g->bin_len = bl;
    } else
        CHECK(at == n);
    return g->json != NULL;
}

static int num(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? (int)x->valuedouble : -1;
}

static const cJSON *item(const Glb *g, const char *arr, int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g->json, arr), i);
}

/* accessor i's data: its view must lie in the buffer, start 4-aligned and hold count elements */
static const void *acc_data(const Glb *g, int i, int *count, int *comp, const char **type) {
    const cJSON *a = item(g, "accessors", i);
    CHECK(a != NULL);
    if (!a) return NULL;
    const cJSON *v = item(g, "bufferViews", num(a, "bufferView"));
    int off = num(v, "byteOffset"), len = num(v, "byteLength");
    *count = num(a, "count"), *comp = num(a, "componentType");
    *type = cJSON_GetObjectItemCaseSensitive(a, "type")->valuestring;
    int nc = !strcmp(*type, "SCALAR") ? 1 : !strcmp(*type, "VEC3") ? 3 : !strcmp(*type, "VEC4") ? 4 : 16;
    int cs = *comp == 5121 ? 1 : *comp == 5123 ? 2 : 4;
    CHECK(off % 4 == 0 && off >= 0 && (size_t)off + (size_t)len <= g->bin_len && len == *count * nc * cs);
    CHECK(num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g->json, "buffers"), 0), "byteLength") <= (int)g->bin_len);
    return g->bin + off;
}

static const float *acc_f32(const Glb *g, int i, int want_count, const char *want_type) {
    int count, comp;
    const char *type;
    const void *p = acc_data(g, i, &count, &comp, &type);
    CHECK_MSG(count == want_count && comp == 5126 && !strcmp(type, want_type), "accessor %d: %d %s (type %d), expected %d %s",
              i, count, type, comp, want_count, want_type);
    return p;
}

static uint8_t *encode(const DsGltfMesh *m, size_t *n) {
    uint8_t *b = NULL;
    char err[512];
    int rc = ds_gltf_encode(m, &b, n, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    return b;
}

/* ---- posing a skinned GLB by the glTF rules -------------------------------------------------- */

static void mat_mul(const double *a, const double *b, double *c) { /* column-major 4×4 */
    double t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += a[4 * k + i] * b[4 * j + k];
            t[4 * j + i] = s;
        }
    memcpy(c, t, sizeof t);
}

static void trs(const float *t, const float *q, double *m) { /* T · R, column-major */
    double x = q[0], y = q[1], z = q[2], w = q[3];
    double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), 2 * (x * y + z * w), 1 - 2 * (x * x + z * z),
                   2 * (y * z - x * w), 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}; /* row-major */
    memset(m, 0, 16 * sizeof(double));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) m[4 * c + r] = R[3 * r + c];
    for (int r = 0; r < 3; r++) m[12 + r] = t[r];
    m[15] = 1;
}

/* the skinned positions (nv × 3) of keyframe k of the GLB's mesh 0 */
static void pose_glb(const Glb *g, int k, int64_t nv, float *out) {
    int nn = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g->json, "nodes"));
    float *t = calloc((size_t)nn * 3, sizeof(float)), *q = calloc((size_t)nn * 4, sizeof(float));
    int *parent = malloc(sizeof(int) * (size_t)nn);
    double *world = malloc(sizeof(double) * 16 * (size_t)nn);
    for (int i = 0; i < nn; i++) {
        const cJSON *n = item(g, "nodes", i), *a;
        parent[i] = -1, q[4 * i + 3] = 1;
        if ((a = cJSON_GetObjectItemCaseSensitive(n, "translation")))
            for (int c = 0; c < 3; c++) t[3 * i + c] = (float)cJSON_GetArrayItem(a, c)->valuedouble;
        if ((a = cJSON_GetObjectItemCaseSensitive(n, "rotation")))
            for (int c = 0; c < 4; c++) q[4 * i + c] = (float)cJSON_GetArrayItem(a, c)->valuedouble;
    }
    for (int i = 0; i < nn; i++) {
        const cJSON *kids = cJSON_GetObjectItemCaseSensitive(item(g, "nodes", i), "children"), *c;
        cJSON_ArrayForEach(c, kids) parent[(int)c->valuedouble] = i;
    }
    const cJSON *anim = item(g, "animations", 0), *ch;
    cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(anim, "channels")) {
        const cJSON *tg = cJSON_GetObjectItemCaseSensitive(ch, "target");
        const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(anim, "samplers"), num(ch, "sampler"));
        int node = num(tg, "node"), count, comp;
        const char *type, *path = cJSON_GetObjectItemCaseSensitive(tg, "path")->valuestring;
        const float *o = acc_data(g, num(s, "output"), &count, &comp, &type);
        if (!strcmp(path, "rotation")) memcpy(q + 4 * node, o + 4 * k, 4 * sizeof(float));
        else if (!strcmp(path, "translation")) memcpy(t + 3 * node, o + 3 * k, 3 * sizeof(float));
    }
    for (int i = 0; i < nn; i++) { /* parents come first in our files: one pass */
        CHECK(parent[i] < i);
        trs(t + 3 * i, q + 4 * i, world + 16 * i);
        if (parent[i] >= 0) mat_mul(world + 16 * parent[i], world + 16 * i, world + 16 * i);
    }
    const cJSON *skin = item(g, "skins", 0), *attrs = cJSON_GetObjectItemCaseSensitive(
                                                    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item(g, "meshes", 0), "primitives"), 0),
                                                    "attributes");
    int nj = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(skin, "joints")), count, comp;
    const char *type;
    const float *ibm = acc_f32(g, num(skin, "inverseBindMatrices"), nj, "MAT4");
    const float *pos = acc_f32(g, num(attrs, "POSITION"), (int)nv, "VEC3");
    const float *w = acc_f32(g, num(attrs, "WEIGHTS_0"), (int)nv, "VEC4");
    const void *jd = acc_data(g, num(attrs, "JOINTS_0"), &count, &comp, &type);
    double *jm = malloc(sizeof(double) * 16 * (size_t)nj);
    for (int j = 0; j < nj; j++) {
        double ib[16];
        for (int c = 0; c < 16; c++) ib[c] = ibm[16 * j + c];
        mat_mul(world + 16 * (int)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(skin, "joints"), j)->valuedouble, ib,
                jm + 16 * j);
    }
    for (int64_t v = 0; v < nv; v++) {
        double x[3] = {0, 0, 0};
        for (int s = 0; s < 4; s++) {
            int j = comp == 5121 ? ((const uint8_t *)jd)[4 * v + s] : ((const uint16_t *)jd)[4 * v + s];
            const double *M = jm + 16 * j;
            for (int r = 0; r < 3; r++)
                x[r] += w[4 * v + s] * (M[r] * pos[3 * v] + M[4 + r] * pos[3 * v + 1] + M[8 + r] * pos[3 * v + 2] + M[12 + r]);
        }
        for (int r = 0; r < 3; r++) out[3 * v + r] = (float)x[r];
    }
    free(t), free(q), free(parent), free(world), free(jm);
}

/* the test's own choice of the 4 largest weights, renormalized (dense nv × nb) */
static void top4_dense(const float *w, int64_t nv, int nb, float *out) {
    for (int64_t v = 0; v < nv; v++) {
        const float *row = w + v * nb;
        float *o = out + v * nb;
        memset(o, 0, sizeof(float) * (size_t)nb);
        double sum = 0;
        for (int s = 0; s < 4; s++) {
            int best = -1;
            for (int j = 0; j < nb; j++)
                if (row[j] > 0 && o[j] == 0 && (best < 0 || row[j] > row[best])) best = j;
            if (best < 0) break;
            o[best] = row[best], sum += row[best];
        }
        for (int j = 0; j < nb; j++) o[j] = (float)(o[j] / sum);
    }
}

/* ---- tests ------------------------------------------------------------------------------------ */

TEST(gltf_glb_layout_and_bounds) {
    /* a quad of 2 triangles with colors, 5 frames baked */
    float pos[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, -2}, col[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 2, -1, 0.5f};
    int32_t f[6] = {0, 1, 2, 0, 2, 3};
    float frames[5 * 12];
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < 12; i++) frames[12 * k + i] = pos[i] + (i % 3 == 1 ? 0.1f * k : 0) + (i == 5 ? 0.01f * k * k : 0);
    DsGltfMesh m = {.nv = 4, .nf = 2, .pos = pos, .color = col, .faces = f, .nframes = 5, .fps = 10, .frames = frames};
    size_t n;
    uint8_t *b = encode(&m, &n);
    Glb g;
    if (!b || !glb_open(b, n, &g)) {
        free(b);
        return;
    }
    CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(g.json, "asset"), "version")->valuestring, "2.0"));
    const cJSON *prim = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item(&g, "meshes", 0), "primitives"), 0);
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(prim, "attributes");
    CHECK(num(prim, "mode") == 4);
    int count, comp;
    const char *type;
    const uint16_t *idx = acc_data(&g, num(prim, "indices"), &count, &comp, &type);
    CHECK(count == 6 && comp == 5123 && !strcmp(type, "SCALAR"));
    for (int i = 0; i < 6; i++) CHECK(idx[i] == f[i]);
    const cJSON *pa = item(&g, "accessors", num(attrs, "POSITION"));
    const float *p = acc_f32(&g, num(attrs, "POSITION"), 4, "VEC3");
    float lo[3] = {0, 0, -2}, hi[3] = {1, 1, 0};
    for (int c = 0; c < 3; c++) {
        CHECK(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pa, "min"), c)->valuedouble == lo[c]);
        CHECK(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pa, "max"), c)->valuedouble == hi[c]);
    }
    CHECK(!memcmp(p, pos, sizeof pos));
    const float *c = acc_f32(&g, num(attrs, "COLOR_0"), 4, "VEC3");
    CHECK(c[9] == 1 && c[10] == 0 && c[11] == 0.5f); /* clamped to [0, 1] */
    /* morph targets: rest + target k is frame k exactly; weights one-hot at time k / fps */
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(prim, "targets");
    CHECK(cJSON_GetArraySize(targets) == 5);
    for (int k = 0; k < 5 && k < cJSON_GetArraySize(targets); k++) {
        int ai = num(cJSON_GetArrayItem(targets, k), "POSITION");
        const float *d = acc_f32(&g, ai, 4, "VEC3");
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(item(&g, "accessors", ai), "min");
        CHECK(mn != NULL);
        for (int i = 0; i < 12; i++) CHECK_NEAR(p[i] + d[i], frames[12 * k + i], 1e-6);
    }
    const cJSON *anim = item(&g, "animations", 0);
    const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(anim, "samplers"), 0);
    const float *tin = acc_f32(&g, num(s, "input"), 5, "SCALAR"), *wout = acc_f32(&g, num(s, "output"), 25, "SCALAR");
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item(&g, "accessors", num(s, "input")), "max"), 0)->valuedouble == tin[4]);
    for (int k = 0; k < 5; k++) {
        CHECK_NEAR(tin[k], k / 10.0, 1e-7);
        for (int j = 0; j < 5; j++) CHECK(wout[5 * k + j] == (j == k));
    }
    cJSON_Delete(g.json);
    free(b);
    /* 65535 or more vertices: 32-bit indices (65535 is the primitive restart value) */
    float *big = calloc(3 * 65535, sizeof(float));
    int32_t tri[3] = {0, 1, 65534};
    DsGltfMesh mb = {.nv = 65535, .nf = 1, .pos = big, .faces = tri};
    b = encode(&mb, &n);
    if (b && glb_open(b, n, &g)) {
        prim = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item(&g, "meshes", 0), "primitives"), 0);
        const uint32_t *i32 = acc_data(&g, num(prim, "indices"), &count, &comp, &type);
        CHECK(comp == 5125 && i32[2] == 65534);
        cJSON_Delete(g.json);
    }
    free(b), free(big);
}

TEST(gltf_four_largest_weights_renormalized) {
    float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    /* 6 joints: row 0 has six weights (the four largest kept), row 1 none positive, row 2 one */
    float w[18] = {0.1f, 0.3f, 0.05f, 0.2f, 0.15f, 0.2f, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0.7f, 0};
    int32_t par[6] = {-1, 0, 1, 1, 0, 4};
    float ibm[96] = {0};
    for (int j = 0; j < 6; j++) ibm[16 * j] = ibm[16 * j + 5] = ibm[16 * j + 10] = ibm[16 * j + 15] = 1;
    DsGltfMesh m = {.nv = 3, .pos = pos, .njoints = 6, .parents = par, .weights = w, .inverse_bind = ibm};
    size_t n;
    uint8_t *b = encode(&m, &n);
    Glb g;
    if (!b || !glb_open(b, n, &g)) {
        free(b);
        return;
    }
    const cJSON *prim = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item(&g, "meshes", 0), "primitives"), 0);
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(prim, "attributes");
    CHECK(num(prim, "mode") == 0); /* no faces: points */
    int count, comp;
    const char *type;
    const uint8_t *J = acc_data(&g, num(attrs, "JOINTS_0"), &count, &comp, &type);
    const float *W = acc_f32(&g, num(attrs, "WEIGHTS_0"), 3, "VEC4");
    CHECK(comp == 5121 && count == 3 && !strcmp(type, "VEC4"));
    double tot = 0.3 + 0.2 + 0.2 + 0.15, want[6] = {0, 0.3 / tot, 0, 0.2 / tot, 0.15 / tot, 0.2 / tot};
    float got[6] = {0};
    for (int s = 0; s < 4; s++) got[J[s]] += W[s];
    for (int j = 0; j < 6; j++) CHECK_NEAR(got[j], want[j], 1e-6);
    CHECK(W[0] + W[1] + W[2] + W[3] == 1.0f);
    CHECK(J[4] == 0 && W[4] == 1 && W[5] == 0 && W[6] == 0 && W[7] == 0); /* no positive weight: joint 0 */
    CHECK(J[8] == 4 && W[8] == 1 && W[9] == 0);
    /* the tree: joint j is node 1 + j with its children; the mesh node is a root with the skin */
    const cJSON *kids = cJSON_GetObjectItemCaseSensitive(item(&g, "nodes", 2), "children");
    CHECK(cJSON_GetArraySize(kids) == 2 && cJSON_GetArrayItem(kids, 0)->valuedouble == 3 &&
          cJSON_GetArrayItem(kids, 1)->valuedouble == 4);
    CHECK(num(item(&g, "nodes", 0), "skin") == 0 && num(item(&g, "skins", 0), "skeleton") == 1);
    cJSON_Delete(g.json);
    free(b);
}

/* A procedural humanoid walking, as gt.h5 stores it, exported and posed by the glTF rules: every
 * keyframe equals the rig's LBS (with the same 4 largest weights) to float precision. */
TEST(gltf_skin_poses_match_rig_lbs) {
    char err[512];
    DsProceduralShape sh;
    CHECK_MSG(ds_procedural_make("humanoid", 3, 24, &sh, err, sizeof err) == 0, "%s", err);
    DsMotion mo;
    DsMotionOptions opt = {.fps = 30, .bvh_start = -1};
    int F = 6, B = sh.nbones;
    CHECK_MSG(ds_motion_make(&sh, "walk", F, 1, &opt, &mo, err, sizeof err) == 0, "%s", err);
    int64_t nv = sh.mesh.nv;
    DsMotionGt gt = {.nframes = F, .nbones = B, .nv = nv, .nf = sh.mesh.nf, .fps = 30, .rest = sh.mesh.v,
                     .faces = sh.mesh.f, .weights = sh.weights};
    int32_t par[DS_RIG_MAX_BONES];
    for (int j = 0; j < B; j++) par[j] = sh.bones[j].parent;
    gt.parents = par;
    gt.bone_transforms = malloc(sizeof(float) * 16 * (size_t)(F * B));
    gt.local_rotations = malloc(sizeof(float) * 4 * (size_t)(F * B));
    gt.joint_positions = malloc(sizeof(float) * 3 * (size_t)(F * B));
    double *skin = malloc(sizeof(double) * 16 * (size_t)(F * B)), heads[3 * DS_RIG_MAX_BONES];
    for (int k = 0; k < F; k++) {
        ds_rig_fk(B, sh.bones, mo.local + 4 * (size_t)k * B, mo.root + 3 * k, NULL, heads, skin + 16 * (size_t)k * B);
        for (int i = 0; i < 16 * B; i++) gt.bone_transforms[16 * k * B + i] = (float)skin[16 * k * B + i];
        for (int i = 0; i < 4 * B; i++) gt.local_rotations[4 * k * B + i] = (float)mo.local[4 * k * B + i];
        for (int i = 0; i < 3 * B; i++) gt.joint_positions[3 * k * B + i] = (float)heads[i];
    }
    DsGltfMesh g;
    float *owned;
    CHECK_MSG(ds_motion_gt_gltf(&gt, 0, &g, &owned, err, sizeof err) == 0, "%s", err);
    size_t n;
    uint8_t *b = encode(&g, &n);
    Glb glb;
    float *w4 = malloc(sizeof(float) * (size_t)nv * B), *want = malloc(sizeof(float) * 3 * (size_t)nv),
          *got = malloc(sizeof(float) * 3 * (size_t)nv);
    top4_dense(sh.weights, nv, B, w4);
    if (b && glb_open(b, n, &glb)) {
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(item(&glb, "skins", 0), "joints")) == B);
        double worst = 0, moved = 0;
        for (int k = 0; k < F; k++) {
            ds_rig_lbs(nv, sh.mesh.v, B, w4, skin + 16 * (size_t)k * B, want);
            pose_glb(&glb, k, nv, got);
            for (int64_t i = 0; i < 3 * nv; i++)
                worst = fmax(worst, fabs(got[i] - want[i])), moved = fmax(moved, fabs(want[i] - sh.mesh.v[i]));
        }
        CHECK_MSG(worst < 2e-5, "glTF pose vs rig LBS: max |diff| %g (the motion moves vertices up to %g)", worst, moved);
        CHECK(moved > 0.05); /* the comparison is not of rest poses */
        cJSON_Delete(glb.json);
    }
    free(b), free(owned), free(w4), free(want), free(got), free(skin);
    free(gt.bone_transforms), free(gt.local_rotations), free(gt.joint_positions);
    ds_motion_free(&mo);
    ds_procedural_free(&sh);
}

/* A Skelebones rig (free rigid bones) exported and posed by the glTF rules: Σ w_b (R_b x + T_b). */
TEST(gltf_skelebones_rig_poses_match_transforms) {
    enum { N = 40, B = 3, F = 4 };
    float rest[3 * N], w[N * B], T[F * B * 12];
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < 3; c++) rest[3 * i + c] = (float)sin(1.7 * i + 2.3 * c);
        float s = 0;
        for (int b = 0; b < B; b++) s += w[B * i + b] = (float)(1 + sin(0.9 * i * (b + 1))) * (b != i % B);
        for (int b = 0; b < B; b++) w[B * i + b] /= s;
    }
    for (int k = 0; k < F; k++)
        for (int b = 0; b < B; b++) {
            double ax[3] = {1, 0.3 * b, -0.5}, q[4], R[9];
            ds_quat_axis_angle(ax, 0.4 * k + 0.2 * b, q);
            base_quat_to_mat3(q, R);
            float *M = T + 12 * (k * B + b);
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++) M[4 * r + c] = (float)R[3 * r + c];
                M[4 * r + 3] = 0.1f * k * (r + 1) - 0.2f * b;
            }
        }
    SbRigFile r = {.nframes = F, .nbones = B, .npoints = N, .rest = rest, .weights = w, .transforms = T};
    DsGltfMesh g;
    void *owned;
    char err[256];
    CHECK_MSG(sb_rig_file_gltf(&r, 0, &g, &owned, err, sizeof err) == 0, "%s", err);
    CHECK(g.njoints == B + 1 && g.fps == 30);
    size_t n;
    uint8_t *b = encode(&g, &n);
    Glb glb;
    if (b && glb_open(b, n, &glb)) {
        float got[3 * N];
        double worst = 0;
        for (int k = 0; k < F; k++) {
            pose_glb(&glb, k, N, got);
            for (int i = 0; i < N; i++)
                for (int c = 0; c < 3; c++) {
                    double x = 0;
                    for (int bb = 0; bb < B; bb++) {
                        const float *M = T + 12 * (k * B + bb);
                        x += w[B * i + bb] * (M[4 * c] * rest[3 * i] + M[4 * c + 1] * rest[3 * i + 1] + M[4 * c + 2] * rest[3 * i + 2] + M[4 * c + 3]);
                    }
                    worst = fmax(worst, fabs(x - got[3 * i + c]));
                }
        }
        CHECK_MSG(worst < 1e-5, "glTF pose vs rig.h5 transforms: max |diff| %g", worst);
        cJSON_Delete(glb.json);
    }
    free(b), free(owned);
}

TEST(gltf_bad_inputs_and_unwritable_paths) {
    float pos[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    int32_t f[3] = {0, 1, 3};
    char err[512];
    uint8_t *b;
    size_t n;
    DsGltfMesh m = {.nv = 3, .nf = 1, .pos = pos, .faces = f};
    CHECK(ds_gltf_encode(&m, &b, &n, err, sizeof err) == -1 && strstr(err, "refers to vertex 3") && !b);
    f[2] = 2;
    pos[4] = NAN;
    CHECK(ds_gltf_encode(&m, &b, &n, err, sizeof err) == -1 && strstr(err, "not finite"));
    pos[4] = 0;
    int32_t par[2] = {1, -1};
    float w[6] = {1, 0, 1, 0, 0, 1}, ibm[32] = {0};
    DsGltfMesh s = {.nv = 3, .pos = pos, .njoints = 2, .parents = par, .weights = w, .inverse_bind = ibm};
    CHECK(ds_gltf_encode(&s, &b, &n, err, sizeof err) == -1 && strstr(err, "parents come first"));
    DsGltfMesh a = {.nv = 3, .pos = pos, .nframes = 4, .fps = 0};
    CHECK(ds_gltf_encode(&a, &b, &n, err, sizeof err) == -1 && strstr(err, "frames per second"));
    /* an unwritable path: an error naming it, no temporary left behind */
    char dir[] = "/tmp/anima_gltf_XXXXXX", path[128];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/no/such/dir/x.glb", dir);
    CHECK(ds_gltf_write(path, &m, err, sizeof err) == -1 && strstr(err, path));
    snprintf(path, sizeof path, "%s/x.glb", dir);
    CHECK_MSG(ds_gltf_write(path, &m, err, sizeof err) == 0, "%s", err);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 100);
    char cmd[256], out[256];
    snprintf(cmd, sizeof cmd, "ls %s | wc -l", dir);
    test_run_capture(cmd, out, sizeof out);
    CHECK(atoi(out) == 1); /* only x.glb */
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* `anima export` of files it cannot use: truncated and damaged HDF5, another HDF5, a folder
 * without frames, another extension: exit 1 with a message naming the file, never a crash */
TEST(gltf_export_bad_files_name_the_file) {
    char A[4096];
    if (access(test_anima_bin(), X_OK) != 0 || !realpath(test_anima_bin(), A)) { /* the commands cd */
        printf("    skipped: %s is not built\n", test_anima_bin());
        return;
    }
    char dir[] = "/tmp/anima_export_XXXXXX", cmd[9000], out[4096];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(cmd, sizeof cmd,
             "cd %s && %s dataset motion --category lamp --out mo --frames 3 --views 2 --size 8 --grid 24 --supersample 1 "
             "--motion nod --heldout none --no-progress >/dev/null 2>&1 && %s export mo/gt.h5 --gltf ok.glb 2>&1",
             dir, A, A);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "3 frames"), "rc %d: %s", rc, out);
    struct {
        const char *prep, *in, *want;
    } cases[] = {
        {"head -c 3000 mo/gt.h5 > trunc.h5", "trunc.h5", "trunc.h5"},
        /* damage bytes in the middle (past the superblock): checksums refuse it */
        {"cp mo/gt.h5 dmg.h5 && s=$(stat -c %s dmg.h5) && printf 'XXXXXXXXXXXXXXXX' | dd of=dmg.h5 bs=1 seek=$((s / 2)) conv=notrunc 2>/dev/null",
         "dmg.h5", "dmg.h5"},
        {"printf 'not hdf5' > text.h5", "text.h5", "text.h5: not an HDF5 file"},
        {"mkdir -p empty", "empty", "empty: no frame_NNNNN.ply"},
        {"echo '{}' > scene.json", "scene.json", "scene.json: not a sim run folder"},
        {"true", "missing.h5", "missing.h5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s && %s export %s --gltf out.glb 2>&1", dir, cases[i].prep, A, cases[i].in);
        rc = test_run_capture(cmd, out, sizeof out);
        CHECK_MSG(rc == 1 && strstr(out, "anima export: ") && strstr(out, cases[i].want), "%s: rc %d: %s", cases[i].in, rc, out);
    }
    snprintf(cmd, sizeof cmd, "test ! -e %s/out.glb", dir);
    CHECK(system(cmd) == 0); /* nothing written on failure */
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* `anima export RUN`: a run folder stands for its rig (RUN/rig.h5 of `anima skelebones --out
 * RUN`, RUN/rig/rig.h5 of `anima gaussianimate --out RUN`), the same glTF as the file itself */
TEST(gltf_export_run_folder_is_its_rig) {
    char A[4096];
    if (access(test_anima_bin(), X_OK) != 0 || !realpath(test_anima_bin(), A)) {
        printf("    skipped: %s is not built\n", test_anima_bin());
        return;
    }
    char dir[] = "/tmp/anima_export_run_XXXXXX", cmd[30000], out[4096];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(cmd, sizeof cmd,
             "cd %s && %s dataset motion --category lamp --out mo --frames 4 --views 2 --size 8 --grid 24 --supersample 1 "
             "--motion nod --heldout none --no-progress >/dev/null 2>&1 && %s skelebones --gt mo/gt.h5 --bones 3 --iters 3 "
             "--no-skeleton --out chain/rig --no-progress >/dev/null 2>&1 && %s export chain/rig/rig.h5 --gltf file.glb 2>&1 && "
             "%s export chain --gltf run.glb 2>&1 && %s export chain/rig --gltf run2.glb 2>&1 && cmp file.glb run.glb && cmp file.glb run2.glb",
             dir, A, A, A, A, A);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "skelebones rig chain/rig/rig.h5"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
