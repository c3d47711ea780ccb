/* datasets/geometry/procedural.c — the shape categories of the procedural corpus.
 *
 * Each category is a small program that draws its proportions and places primitives and bones.
 * Sizes are in a generating frame about 2 units tall or long; the finished mesh is normalized
 * into [-1,1]³. Every part is kept at least ~0.1 units thick and every gap that must stay open
 * (between legs, inside a mug handle, between a cactus arm and its trunk) at least ~0.12 units
 * wide, so that meshing at 48–64 cells along the longest side (0.04 units per cell) never fuses
 * parts or breaks a thin one: each shape comes out as one closed surface with the genus its
 * category promises (0, or 1 for the mug's handle). Higher resolutions only sharpen them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "datasets/geometry/procedural.h"
#include "tensor/tensor.h"

#define MAX_PRIMS 96
#define MAX_BONES 48
#define DEG (float)(M_PI / 180.0)

typedef struct {
    float x, y, z;
} V3;

static V3 v3(float x, float y, float z) { return (V3){x, y, z}; }
static V3 add(V3 a, V3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static V3 sub(V3 a, V3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static V3 mul(V3 a, float s) { return v3(a.x * s, a.y * s, a.z * s); }
static float len(V3 a) { return sqrtf(a.x * a.x + a.y * a.y + a.z * a.z); }
static V3 unit(V3 a) {
    float l = len(a);
    return l > 0 ? mul(a, 1 / l) : v3(0, 1, 0);
}
static V3 cross(V3 a, V3 b) { return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x); }
static void put(float o[3], V3 a) { o[0] = a.x, o[1] = a.y, o[2] = a.z; }

typedef struct {
    uint64_t seed, stream_a, stream_b;
    float t;
    uint64_t counter;
    DsSdfPrim prims[MAX_PRIMS];
    int np;
    DsBone bones[MAX_BONES];
    int nb;
    float k;
    bool overflow;
} Builder;

/* A continuous proportion: lerp of the draws from the two family streams at t. */
static float U(Builder *b, float lo, float hi) {
    uint32_t r[4], s[4];
    tensor_philox(b->seed, b->stream_a, b->counter, r);
    tensor_philox(b->seed, b->stream_b, b->counter, s);
    b->counter++;
    double ua = ((double)r[0] + 0.5) / 4294967296.0, ub = ((double)s[0] + 0.5) / 4294967296.0;
    return lo + (hi - lo) * (float)((1 - b->t) * ua + b->t * ub);
}
/* A discrete choice in [lo, hi], from the first stream only: fixed along a family. */
static int I(Builder *b, int lo, int hi) {
    uint32_t r[4];
    tensor_philox(b->seed, b->stream_a, b->counter++, r);
    return lo + (int)(r[1] % (uint32_t)(hi - lo + 1));
}

static int bone(Builder *b, const char *name, int parent, V3 head, V3 tail) {
    if (b->nb >= MAX_BONES) {
        b->overflow = true;
        return 0;
    }
    DsBone *d = &b->bones[b->nb];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->parent = parent;
    put(d->head, head);
    put(d->tail, tail);
    return b->nb++;
}

static DsSdfPrim *prim(Builder *b, DsSdfKind kind, int bone_id) {
    if (b->np >= MAX_PRIMS) {
        b->overflow = true;
        return &b->prims[MAX_PRIMS - 1];
    }
    DsSdfPrim *p = &b->prims[b->np++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->bone = bone_id;
    p->R[0] = p->R[4] = p->R[8] = 1;
    return p;
}

/* R with columns (x, y, z) = an orthonormal frame whose local axis `axis` is along dir */
static void frame(float R[9], V3 dir, int axis) {
    V3 d = unit(dir), ref = fabsf(d.y) < 0.9f ? v3(0, 1, 0) : v3(1, 0, 0);
    V3 u = unit(cross(ref, d)), w = cross(d, u);
    V3 col[3];
    col[axis] = d, col[(axis + 1) % 3] = u, col[(axis + 2) % 3] = w;
    for (int c = 0; c < 3; c++) R[c] = (&col[c].x)[0], R[3 + c] = (&col[c].x)[1], R[6 + c] = (&col[c].x)[2];
}

/* R with the given columns */
static void frame_cols(float R[9], V3 cx, V3 cy, V3 cz) {
    V3 col[3] = {cx, cy, cz};
    for (int c = 0; c < 3; c++) R[c] = col[c].x, R[3 + c] = col[c].y, R[6 + c] = col[c].z;
}

static void capsule(Builder *b, int bn, V3 a, V3 c, float r0, float r1) {
    DsSdfPrim *p = prim(b, DS_SDF_CAPSULE, bn);
    put(p->a, a), put(p->b, c);
    p->r0 = r0, p->r1 = r1;
}
static void ellipsoid(Builder *b, int bn, V3 c, V3 half, V3 xdir) {
    DsSdfPrim *p = prim(b, DS_SDF_ELLIPSOID, bn);
    put(p->c, c);
    p->half[0] = half.x, p->half[1] = half.y, p->half[2] = half.z;
    frame(p->R, xdir, 0);
}
static void ellipsoid_R(Builder *b, int bn, V3 c, V3 half, V3 cx, V3 cy, V3 cz) {
    DsSdfPrim *p = prim(b, DS_SDF_ELLIPSOID, bn);
    put(p->c, c);
    p->half[0] = half.x, p->half[1] = half.y, p->half[2] = half.z;
    frame_cols(p->R, cx, cy, cz);
}
static void box(Builder *b, int bn, V3 c, V3 half, float round, V3 cx, V3 cy, V3 cz) {
    DsSdfPrim *p = prim(b, DS_SDF_BOX, bn);
    put(p->c, c);
    p->half[0] = half.x, p->half[1] = half.y, p->half[2] = half.z;
    p->r0 = round;
    frame_cols(p->R, cx, cy, cz);
}
static DsSdfPrim *cylinder(Builder *b, int bn, V3 a, V3 c, float r, float round) {
    DsSdfPrim *p = prim(b, DS_SDF_CYLINDER, bn);
    put(p->a, a), put(p->b, c);
    p->r0 = r, p->r1 = round;
    return p;
}
static void torus(Builder *b, int bn, V3 c, V3 axis, float R0, float r1) {
    DsSdfPrim *p = prim(b, DS_SDF_TORUS, bn);
    put(p->c, c);
    frame(p->R, axis, 1);
    p->r0 = R0, p->r1 = r1;
}

static const V3 X = {1, 0, 0}, Y = {0, 1, 0}, Z = {0, 0, 1};

/* ---- categories --------------------------------------------------------------------------- */

static void make_quadruped(Builder *b) {
    float L = U(b, 1.2f, 1.8f), bh = U(b, 0.22f, 0.32f), bw = U(b, 0.2f, 0.3f), legH = U(b, 0.5f, 0.85f);
    float rl = U(b, 0.07f, 0.1f);
    float yb = legH + bh * 0.6f;
    int spine = bone(b, "spine", -1, v3(-0.4f * L, yb, 0), v3(0.4f * L, yb, 0));
    ellipsoid(b, spine, v3(0, yb, 0), v3(0.5f * L, bh, bw), X);
    static const char *names[4][2] = {{"leg_fl_upper", "leg_fl_lower"}, {"leg_fr_upper", "leg_fr_lower"},
                                      {"leg_bl_upper", "leg_bl_lower"}, {"leg_br_upper", "leg_br_lower"}};
    for (int i = 0; i < 4; i++) {
        float fx = i < 2 ? 1.0f : -1.0f, sz = i % 2 ? -1.0f : 1.0f;
        float x0 = fx * 0.32f * L, z0 = sz * fmaxf(0.55f * bw, rl + 0.1f);
        V3 hip = v3(x0, yb - 0.3f * bh, z0), knee = v3(x0 + fx * U(b, -0.1f, 0.1f), 0.5f * legH + rl, z0),
           foot = v3(x0, rl, z0);
        int up = bone(b, names[i][0], spine, hip, knee), lo = bone(b, names[i][1], up, knee, foot);
        capsule(b, up, hip, knee, rl * 1.2f, rl);
        capsule(b, lo, knee, foot, rl, rl * 0.9f);
    }
    V3 nb = v3(0.42f * L, yb + 0.4f * bh, 0);
    float nl = U(b, 0.25f, 0.55f), na = U(b, 25, 70) * DEG, hr = U(b, 0.12f, 0.18f);
    V3 hp = add(nb, v3(nl * cosf(na), nl * sinf(na), 0));
    int neck = bone(b, "neck", spine, nb, hp);
    capsule(b, neck, nb, hp, U(b, 0.09f, 0.13f), 0.08f);
    int head = bone(b, "head", neck, hp, add(hp, v3(2.2f * hr, 0, 0)));
    ellipsoid(b, head, add(hp, v3(0.7f * hr, 0, 0)), v3(1.4f * hr, hr, 0.9f * hr), X);
    V3 tb = v3(-0.46f * L, yb + 0.3f * bh, 0);
    float tl = U(b, 0.3f, 0.7f), ta = U(b, -40, 30) * DEG;
    V3 tt = add(tb, v3(-tl * cosf(ta), tl * sinf(ta), 0));
    int tail = bone(b, "tail", spine, tb, tt);
    capsule(b, tail, tb, tt, U(b, 0.065f, 0.085f), 0.06f);
}

static void make_humanoid(Builder *b) {
    float legLen = U(b, 0.8f, 1.0f), rl = U(b, 0.075f, 0.1f), hipW = rl + U(b, 0.07f, 0.11f);
    float torso = U(b, 0.55f, 0.75f), shoulderW = U(b, 0.22f, 0.3f), hr = U(b, 0.12f, 0.16f);
    float yp = legLen + rl, yc = yp + torso;
    int hips = bone(b, "hips", -1, v3(0, yp, 0), v3(0, yp + 0.3f * torso, 0));
    ellipsoid(b, hips, v3(0, yp, 0), v3(hipW + rl, 0.13f, 0.13f), X);
    int spine = bone(b, "spine", hips, v3(0, yp + 0.3f * torso, 0), v3(0, yc, 0));
    capsule(b, spine, v3(0, yp, 0), v3(0, yc - 0.1f, 0), U(b, 0.13f, 0.17f), 0.14f);
    ellipsoid(b, spine, v3(0, yc - 0.12f, 0), v3(shoulderW, 0.17f, 0.13f), X);
    int neck = bone(b, "neck", spine, v3(0, yc, 0), v3(0, yc + 0.12f, 0));
    capsule(b, neck, v3(0, yc - 0.05f, 0), v3(0, yc + 0.12f, 0), 0.065f, 0.06f);
    int head = bone(b, "head", neck, v3(0, yc + 0.12f, 0), v3(0, yc + 0.12f + 2 * hr, 0));
    ellipsoid(b, head, v3(0, yc + 0.1f + hr, 0.02f), v3(0.85f * hr, hr, 0.95f * hr), X);
    float th = U(b, 35, 70) * DEG, bend = U(b, 0, 25) * DEG, ua = U(b, 0.28f, 0.36f), fa = U(b, 0.25f, 0.33f);
    float ra = U(b, 0.06f, 0.075f);
    for (int s = 0; s < 2; s++) {
        float sx = s ? -1.0f : 1.0f;
        V3 sh = v3(sx * shoulderW * 0.85f, yc - 0.08f, 0);
        V3 el = add(sh, v3(sx * ua * sinf(th), -ua * cosf(th), 0));
        V3 wr = add(el, v3(sx * fa * sinf(th + bend), -fa * cosf(th + bend), 0));
        int u = bone(b, s ? "arm_r_upper" : "arm_l_upper", spine, sh, el);
        int f = bone(b, s ? "arm_r_lower" : "arm_l_lower", u, el, wr);
        capsule(b, u, sh, el, ra * 1.1f, ra);
        capsule(b, f, el, wr, ra, ra * 0.9f);
    }
    float spread = U(b, 0, 8) * DEG, knee_fw = U(b, 0, 0.06f), foot = U(b, 0.15f, 0.22f);
    for (int s = 0; s < 2; s++) {
        float sx = s ? -1.0f : 1.0f;
        V3 hp = v3(sx * hipW, yp, 0);
        V3 kn = add(hp, v3(sx * 0.5f * legLen * sinf(spread), -0.5f * legLen, knee_fw));
        V3 an = add(kn, v3(sx * 0.5f * legLen * sinf(spread), -(0.5f * legLen - 0.02f), -knee_fw));
        V3 toe = add(an, v3(0, -0.02f, foot));
        int t = bone(b, s ? "leg_r_upper" : "leg_l_upper", hips, hp, kn);
        int l = bone(b, s ? "leg_r_lower" : "leg_l_lower", t, kn, an);
        int fo = bone(b, s ? "foot_r" : "foot_l", l, an, toe);
        capsule(b, t, hp, kn, rl * 1.15f, rl);
        capsule(b, l, kn, an, rl, rl * 0.8f);
        capsule(b, fo, an, toe, rl * 0.8f, rl * 0.7f);
    }
}

static void make_bird(Builder *b) {
    float bl = U(b, 0.35f, 0.5f), bh = U(b, 0.2f, 0.28f), bw = U(b, 0.18f, 0.25f);
    int body = bone(b, "body", -1, v3(-bl, 0, 0), v3(bl, 0, 0));
    ellipsoid(b, body, v3(0, 0, 0), v3(bl, bh, bw), X);
    float hr = U(b, 0.12f, 0.17f), bk = U(b, 0.1f, 0.25f);
    V3 nb = v3(0.6f * bl, 0.4f * bh, 0), hc = v3(0.95f * bl, 0.9f * bh + U(b, 0, 0.15f), 0);
    int neck = bone(b, "neck", body, nb, hc);
    capsule(b, neck, nb, hc, 0.1f, 0.09f);
    int head = bone(b, "head", neck, hc, add(hc, v3(hr + bk, 0, 0)));
    ellipsoid(b, head, hc, v3(hr, hr, hr), X);
    capsule(b, head, add(hc, v3(0.6f * hr, 0, 0)), add(hc, v3(hr + bk, -0.03f, 0)), 0.06f, 0.045f);
    float s1 = U(b, 0.3f, 0.5f), s2 = U(b, 0.3f, 0.5f), dih = U(b, -15, 30) * DEG, sweep = U(b, 0, 25) * DEG;
    float chord = U(b, 0.13f, 0.2f), thick = U(b, 0.06f, 0.075f);
    for (int s = 0; s < 2; s++) {
        float sz = s ? -1.0f : 1.0f;
        V3 root = v3(0.05f, 0.4f * bh, sz * 0.6f * bw);
        V3 d1 = unit(v3(-sinf(sweep) * 0.5f, sinf(dih), sz * cosf(dih)));
        V3 elbow = add(root, mul(d1, s1 + 0.4f * bw));
        V3 d2 = unit(v3(-sinf(sweep), sinf(dih) * 0.5f, sz));
        V3 tip = add(elbow, mul(d2, s2));
        int w1 = bone(b, s ? "wing_r_inner" : "wing_l_inner", body, root, elbow);
        int w2 = bone(b, s ? "wing_r_outer" : "wing_l_outer", w1, elbow, tip);
        /* flat wing panels: ellipsoids along the span, thin in the local y, wide in chord */
        V3 m1 = mul(add(root, elbow), 0.5f), m2 = mul(add(elbow, tip), 0.5f);
        V3 up1 = unit(cross(d1, X)), up2 = unit(cross(d2, X));
        if (up1.y < 0) up1 = mul(up1, -1);
        if (up2.y < 0) up2 = mul(up2, -1);
        ellipsoid_R(b, w1, m1, v3(0.5f * len(sub(elbow, root)) + 0.05f, thick, chord), d1, up1, cross(d1, up1));
        ellipsoid_R(b, w2, m2, v3(0.5f * s2 + 0.04f, thick, 0.85f * chord), d2, up2, cross(d2, up2));
    }
    V3 tb = v3(-0.9f * bl, 0.05f, 0), tc = v3(-bl - U(b, 0.12f, 0.25f), 0.08f, 0);
    int tail = bone(b, "tail", body, tb, tc);
    ellipsoid_R(b, tail, mul(add(tb, tc), 0.5f), v3(0.5f * len(sub(tc, tb)) + 0.05f, 0.06f, U(b, 0.1f, 0.16f)), X, Y, Z);
    float leg = U(b, 0.15f, 0.3f), rl = 0.06f;
    for (int s = 0; s < 2; s++) {
        float sz = s ? -1.0f : 1.0f;
        V3 hip = v3(0, -0.7f * bh, sz * fmaxf(0.5f * bw, 0.13f)), ft = add(hip, v3(0.05f, -0.3f * bh - leg, 0));
        int l = bone(b, s ? "leg_r" : "leg_l", body, hip, ft);
        capsule(b, l, hip, ft, rl, rl);
        capsule(b, l, ft, add(ft, v3(0.14f, 0, 0)), rl, 0.055f);
    }
}

static void make_chair(Builder *b) {
    float W = U(b, 0.8f, 1.1f), D = U(b, 0.75f, 1.0f), T = U(b, 0.11f, 0.15f), H = U(b, 0.8f, 1.0f);
    float rl = U(b, 0.055f, 0.08f), splay = I(b, 0, 1) ? U(b, 0.02f, 0.08f) : 0.0f;
    float backH = U(b, 0.7f, 1.0f), backT = U(b, 0.1f, 0.14f), tilt = U(b, 0, 15) * DEG, bw = U(b, 0.8f, 1.0f);
    int seat = bone(b, "seat", -1, v3(0, H, 0.5f * D), v3(0, H, -0.5f * D));
    box(b, seat, v3(0, H - 0.5f * T, 0), v3(0.5f * W, 0.5f * T, 0.5f * D), 0.02f, X, Y, Z);
    static const char *legs[4] = {"leg_fl", "leg_fr", "leg_bl", "leg_br"};
    for (int i = 0; i < 4; i++) {
        float sx = i % 2 ? -1.0f : 1.0f, sz = i < 2 ? 1.0f : -1.0f;
        V3 top = v3(sx * (0.5f * W - rl - 0.03f), H - 0.5f * T, sz * (0.5f * D - rl - 0.03f));
        V3 bot = v3(top.x + sx * splay, 0, top.z + sz * splay);
        int l = bone(b, legs[i], seat, top, bot);
        cylinder(b, l, top, bot, rl, 0.015f);
    }
    V3 up = v3(0, cosf(tilt), -sinf(tilt)), fw = v3(0, sinf(tilt), cosf(tilt));
    V3 b0 = v3(0, H - 0.2f * T, -0.5f * D + 0.5f * backT), b1 = add(b0, mul(up, backH));
    int back = bone(b, "back", seat, b0, b1);
    box(b, back, mul(add(b0, b1), 0.5f), v3(0.5f * W * bw, 0.5f * backH, 0.5f * backT), 0.03f, X, up, fw);
    if (I(b, 0, 1)) {
        float ah = U(b, 0.25f, 0.35f), ar = U(b, 0.05f, 0.065f);
        for (int s = 0; s < 2; s++) {
            float sx = s ? -1.0f : 1.0f;
            V3 a0 = add(v3(sx * (0.5f * W * bw - ar), 0, 0), add(b0, mul(up, ah + 0.5f * T)));
            V3 a1 = v3(a0.x, a0.y, 0.3f * D);
            int a = bone(b, s ? "arm_r" : "arm_l", back, a0, a1);
            capsule(b, a, a0, a1, ar, ar);
        }
    }
}

static void make_table(Builder *b) {
    float W = U(b, 1.4f, 2.2f), D = U(b, 0.8f, 1.4f), T = U(b, 0.1f, 0.15f), H = U(b, 0.7f, 1.0f);
    int round_top = I(b, 0, 2) == 0, pedestal = I(b, 0, 2) == 0;
    int top = bone(b, "top", -1, v3(0, H, 0), v3(0, H, 0.5f * D));
    if (round_top) cylinder(b, top, v3(0, H - T, 0), v3(0, H, 0), 0.5f * D, 0.02f);
    else box(b, top, v3(0, H - 0.5f * T, 0), v3(0.5f * W, 0.5f * T, 0.5f * D), 0.02f, X, Y, Z);
    float ex = round_top ? 0.35f * D : 0.5f * W, ez = round_top ? 0.35f * D : 0.5f * D;
    if (pedestal) {
        float rc = U(b, 0.1f, 0.16f), rf = U(b, 0.3f, 0.45f);
        int col = bone(b, "column", top, v3(0, H - T, 0), v3(0, 0.1f, 0));
        cylinder(b, col, v3(0, 0.08f, 0), v3(0, H - 0.5f * T, 0), rc, 0.01f);
        int foot = bone(b, "foot", col, v3(0, 0.1f, 0), v3(0, 0, 0));
        cylinder(b, foot, v3(0, 0, 0), v3(0, 0.11f, 0), fminf(rf, 0.45f * D), 0.03f);
    } else {
        float rl = U(b, 0.055f, 0.09f), inset = U(b, 0.03f, 0.12f);
        static const char *legs[4] = {"leg_fl", "leg_fr", "leg_bl", "leg_br"};
        for (int i = 0; i < 4; i++) {
            float sx = i % 2 ? -1.0f : 1.0f, sz = i < 2 ? 1.0f : -1.0f;
            float px = sx * (ex - rl - inset), pz = sz * (ez - rl - inset);
            if (round_top) px *= 0.72f, pz *= 0.72f;
            V3 t0 = v3(px, H - 0.5f * T, pz), t1 = v3(px, 0, pz);
            int l = bone(b, legs[i], top, t0, t1);
            cylinder(b, l, t0, t1, rl, 0.015f);
        }
    }
}

static void make_lamp(Builder *b) {
    float rb = U(b, 0.25f, 0.4f), tb = U(b, 0.1f, 0.14f), P = U(b, 1.0f, 1.4f), rp = U(b, 0.05f, 0.07f);
    float sr0 = U(b, 0.08f, 0.12f), sr1 = U(b, 0.18f, 0.28f), sl = sr1 - sr0 + U(b, 0.1f, 0.2f);
    float reach = sr1 + rp + U(b, 0.16f, 0.3f), rise = U(b, 0.0f, 0.3f), tiltS = U(b, 0, 25) * DEG;
    float az = U(b, 0, 360) * DEG;
    V3 dir = v3(cosf(az), 0, sinf(az));
    int base = bone(b, "base", -1, v3(0, 0, 0), v3(0, tb, 0));
    cylinder(b, base, v3(0, 0, 0), v3(0, tb, 0), rb, 0.03f);
    int pole = bone(b, "pole", base, v3(0, tb, 0), v3(0, P, 0));
    capsule(b, pole, v3(0, tb * 0.5f, 0), v3(0, P, 0), rp, rp);
    V3 top = v3(0, P, 0), end = add(top, add(mul(dir, reach), v3(0, rise, 0)));
    int arm;
    if (I(b, 0, 1)) {
        V3 el = add(top, add(mul(dir, 0.5f * reach), v3(0, rise + U(b, 0.1f, 0.3f), 0)));
        int a1 = bone(b, "arm_lower", pole, top, el);
        capsule(b, a1, top, el, rp, rp);
        arm = bone(b, "arm_upper", a1, el, end);
        capsule(b, arm, el, end, rp, rp);
    } else {
        arm = bone(b, "arm", pole, top, end);
        capsule(b, arm, top, end, rp, rp);
    }
    V3 sdir = unit(add(v3(0, -cosf(tiltS), 0), mul(dir, sinf(tiltS))));
    V3 s1 = add(end, mul(sdir, sl));
    int shade = bone(b, "shade", arm, end, s1);
    capsule(b, shade, end, s1, sr0, sr1);
}

static void make_airplane(Builder *b) {
    float fl = U(b, 1.6f, 2.2f), rf = U(b, 0.1f, 0.15f);
    int fus = bone(b, "fuselage", -1, v3(-0.5f * fl, 0, 0), v3(0.5f * fl, 0, 0));
    capsule(b, fus, v3(-0.2f * fl, 0, 0), v3(0.45f * fl, 0, 0), rf, rf * 0.9f);
    capsule(b, fus, v3(-0.5f * fl, 0.5f * rf, 0), v3(-0.2f * fl, 0, 0), 0.55f * rf, rf);
    float S = U(b, 0.7f, 1.1f), chord = U(b, 0.25f, 0.4f), wt = U(b, 0.05f, 0.06f), sweep = U(b, 0, 30) * DEG;
    float dih = U(b, 0, 8) * DEG, xw = U(b, -0.05f, 0.15f) * fl;
    int engines = I(b, 0, 1);
    for (int s = 0; s < 2; s++) {
        float sz = s ? -1.0f : 1.0f;
        V3 span = unit(v3(-sinf(sweep), sinf(dih), sz * cosf(sweep)));
        V3 root = v3(xw, -0.3f * rf, 0), tip = add(root, mul(span, S));
        int w = bone(b, s ? "wing_r" : "wing_l", fus, root, tip);
        V3 up = unit(cross(span, X));
        if (up.y < 0) up = mul(up, -1);
        V3 ch = cross(up, span);
        box(b, w, mul(add(root, tip), 0.5f), v3(0.5f * chord, wt, 0.5f * S), 0.03f, ch, up, span);
        if (engines) {
            V3 at = add(root, mul(span, 0.4f * S)), e0 = add(at, v3(0.12f, -wt - 0.06f, 0));
            int e = bone(b, s ? "engine_r" : "engine_l", w, add(e0, v3(-0.35f, 0, 0)), e0);
            capsule(b, e, add(e0, v3(-0.3f, 0, 0)), e0, 0.08f, 0.085f);
        }
    }
    float hs = U(b, 0.25f, 0.4f), hc = U(b, 0.14f, 0.2f), vh = U(b, 0.25f, 0.4f);
    V3 tr = v3(-0.5f * fl + 0.12f, 0.5f * rf, 0);
    for (int s = 0; s < 2; s++) {
        float sz = s ? -1.0f : 1.0f;
        V3 tip = add(tr, v3(-0.08f, 0, sz * hs));
        int h = bone(b, s ? "stabilizer_r" : "stabilizer_l", fus, tr, tip);
        box(b, h, mul(add(tr, tip), 0.5f), v3(0.5f * hc, 0.05f, 0.5f * hs + 0.03f), 0.025f, X, Y, Z);
    }
    V3 ft = add(tr, v3(-0.1f, vh, 0));
    int fin = bone(b, "fin", fus, tr, ft);
    box(b, fin, mul(add(tr, ft), 0.5f), v3(0.5f * hc + 0.04f, 0.5f * vh + 0.03f, 0.05f), 0.025f, X, Y, Z);
}

static void make_mug(Builder *b) {
    float R = U(b, 0.35f, 0.5f), H = U(b, 0.7f, 1.1f), wall = U(b, 0.08f, 0.11f), bot = U(b, 0.08f, 0.12f);
    float rh = U(b, 0.05f, 0.07f);
    float Rh = U(b, 0.5f, 0.8f) * (0.5f * H - rh - 0.08f) + rh + 0.1f;
    float off = U(b, 0.0f, 0.35f) * Rh;
    /* the ring must meet the wall at two heights inside the mug: |y − H/2| = √(Rh² − off²) + rh */
    if (sqrtf(fmaxf(Rh * Rh - off * off, 0)) + rh > 0.5f * H - 0.06f) Rh = 0.5f * H - 0.06f - rh, off = 0;
    int body = bone(b, "body", -1, v3(0, 0, 0), v3(0, H, 0));
    cylinder(b, body, v3(0, 0, 0), v3(0, H, 0), R, 0.03f);
    DsSdfPrim *cav = cylinder(b, -1, v3(0, bot, 0), v3(0, H + 0.3f, 0), R - wall, 0.02f);
    cav->subtract = 1;
    V3 hc = v3(R + off, 0.5f * H, 0);
    float dy = sqrtf(fmaxf(Rh * Rh - off * off, 0));
    int handle = bone(b, "handle", body, v3(R, 0.5f * H + dy, 0), v3(R, 0.5f * H - dy, 0));
    torus(b, handle, hc, Z, Rh, rh);
}

static void make_cactus(Builder *b) {
    float rt = U(b, 0.15f, 0.22f), Ht = U(b, 1.3f, 1.9f);
    int trunk = bone(b, "trunk", -1, v3(0, 0, 0), v3(0, Ht, 0));
    capsule(b, trunk, v3(0, rt, 0), v3(0, Ht - rt * 0.9f, 0), rt, rt * 0.9f);
    int n = I(b, 1, 3);
    float az0 = U(b, 0, 360) * DEG;
    static const char *nb[3] = {"arm0_base", "arm1_base", "arm2_base"}, *nu[3] = {"arm0_up", "arm1_up", "arm2_up"};
    for (int i = 0; i < n; i++) {
        float az = az0 + (float)i * 2.0f * (float)M_PI / (float)n + U(b, -0.3f, 0.3f);
        float ra = U(b, 0.09f, 0.13f), h = Ht * U(b, 0.3f, 0.65f), d = rt + ra + U(b, 0.14f, 0.3f);
        V3 dir = v3(cosf(az), 0, sinf(az));
        V3 a0 = v3(0, h, 0), a1 = add(mul(dir, d), v3(0, U(b, 0, 0.1f), 0)), a2 = add(a1, v3(0, U(b, 0.25f, 0.6f), 0));
        int bb = bone(b, nb[i], trunk, a0, a1), bu = bone(b, nu[i], bb, a1, a2);
        capsule(b, bb, a0, a1, ra, ra);
        capsule(b, bu, a1, a2, ra, ra * 0.9f);
    }
}

static void make_snake(Builder *b) {
    float Ls = U(b, 1.8f, 2.4f), lam = U(b, 0.8f, 1.4f), rh = U(b, 0.08f, 0.11f), ph = U(b, 0, 2 * (float)M_PI);
    float rt = fmaxf(0.55f * rh, 0.055f);
    float w = 2 * (float)M_PI / lam;
    /* the tube around z = A sin(wx) stays embedded while its radius is below the curvature
     * radius 1/(A w²) */
    float A = U(b, 0.4f, 0.9f) / (w * w * (rh + 0.08f));
    if (A > 0.3f) A = 0.3f;
    enum { NSEG = 24, NB = 8 };
    V3 p[NSEG + 1];
    float r[NSEG + 1];
    for (int j = 0; j <= NSEG; j++) {
        float s = (float)j / NSEG, x = 0.5f * Ls - Ls * s;
        r[j] = rh + (rt - rh) * s;
        p[j] = v3(x, r[j], A * sinf(w * x + ph));
    }
    float hr = 1.25f * rh;
    V3 d0 = unit(sub(p[0], p[1]));
    int head = bone(b, "head", -1, p[0], add(p[0], mul(d0, 2 * hr)));
    ellipsoid_R(b, head, add(p[0], mul(d0, 0.6f * hr)), v3(1.5f * hr, 0.8f * hr, hr), d0, Y, cross(d0, Y));
    int parent = head;
    for (int k = 0; k < NB; k++) {
        int j0 = k * NSEG / NB, j1 = (k + 1) * NSEG / NB;
        char name[24];
        snprintf(name, sizeof name, "body%d", k);
        int bn = bone(b, name, parent, p[j0], p[j1]);
        for (int j = j0; j < j1; j++) capsule(b, bn, p[j], p[j + 1], r[j], r[j + 1]);
        parent = bn;
    }
}

typedef struct {
    const char *name;
    void (*make)(Builder *);
    int genus;
} Category;

static const Category categories[] = {
    {"quadruped", make_quadruped, 0}, {"humanoid", make_humanoid, 0}, {"bird", make_bird, 0},
    {"chair", make_chair, 0},         {"table", make_table, 0},       {"lamp", make_lamp, 0},
    {"airplane", make_airplane, 0},   {"mug", make_mug, 1},           {"cactus", make_cactus, 0},
    {"snake", make_snake, 0},
};
#define NCAT (int)(sizeof categories / sizeof categories[0])

const char *const *ds_procedural_categories(int *count) {
    static const char *names[NCAT + 1];
    for (int i = 0; i < NCAT; i++) names[i] = categories[i].name;
    names[NCAT] = NULL;
    if (count) *count = NCAT;
    return names;
}

static const Category *find(const char *name) {
    for (int i = 0; i < NCAT; i++)
        if (!strcmp(categories[i].name, name)) return &categories[i];
    return NULL;
}

int ds_procedural_expected_genus(const char *category) {
    const Category *c = find(category);
    return c ? c->genus : -1;
}

void ds_procedural_free(DsProceduralShape *s) {
    ds_mesh_free(&s->mesh);
    free(s->bones);
    free(s->weights);
    free(s->scene.prims);
    memset(s, 0, sizeof *s);
}

float ds_procedural_sdf(void *shape, const float p[3]) {
    return ds_sdf_scene_eval(&((DsProceduralShape *)shape)->scene, p);
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int ds_procedural_make_family(const char *category, uint64_t seed, float t, int grid_res, DsProceduralShape *out,
                              char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const Category *cat = find(category);
    if (!cat) {
        int n;
        const char *const *names = ds_procedural_categories(&n);
        char list[256] = "";
        for (int i = 0; i < n; i++) {
            strncat(list, names[i], sizeof list - strlen(list) - 1);
            if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        snprintf(err, errlen, "procedural: unknown category \"%s\" (expected one of: %s)", category, list);
        return -1;
    }
    if (grid_res < 16 || grid_res > 1024) {
        snprintf(err, errlen, "procedural: grid resolution %d out of range [16, 1024]", grid_res);
        return -1;
    }
    if (!(t >= 0 && t <= 1)) {
        snprintf(err, errlen, "procedural: family parameter t = %g outside [0, 1]", (double)t);
        return -1;
    }
    Builder *b = calloc(1, sizeof *b);
    if (!b) goto oom;
    b->seed = seed;
    b->stream_a = name_hash(category);
    b->stream_b = b->stream_a ^ 0x9e3779b97f4a7c15ull;
    b->t = t;
    b->k = 0.05f;
    cat->make(b);
    if (b->overflow) {
        snprintf(err, errlen, "procedural: %s uses more than %d primitives or %d bones", category, MAX_PRIMS, MAX_BONES);
        free(b);
        return -1;
    }
    snprintf(out->category, sizeof out->category, "%s", category);
    out->seed = seed, out->t = t, out->genus = cat->genus;
    out->scene.nprims = b->np;
    out->scene.k = b->k;
    out->scene.prims = malloc(sizeof(DsSdfPrim) * (size_t)b->np);
    out->nbones = b->nb;
    out->bones = malloc(sizeof(DsBone) * (size_t)(b->nb + 1));
    if (!out->scene.prims || !out->bones) goto oom;
    memcpy(out->scene.prims, b->prims, sizeof(DsSdfPrim) * (size_t)b->np);
    memcpy(out->bones, b->bones, sizeof(DsBone) * (size_t)b->nb);
    free(b);
    b = NULL;
    ds_sdf_scene_finish(&out->scene);

    /* grid: grid_res cells along the longest side of the primitives' bounding box grown by k
     * (the smooth union bulges out by at most k/4), plus one cell of positive border all round
     * so marching cubes closes every surface */
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < out->scene.nprims; i++) {
        const DsSdfPrim *p = &out->scene.prims[i];
        if (p->subtract) continue;
        for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], p->lo[k] - out->scene.k), hi[k] = fmaxf(hi[k], p->hi[k] + out->scene.k);
    }
    float ext = fmaxf(hi[0] - lo[0], fmaxf(hi[1] - lo[1], hi[2] - lo[2]));
    float h = ext / (float)(grid_res - 2);
    int n[3];
    float origin[3];
    for (int k = 0; k < 3; k++) {
        n[k] = (int)ceilf((hi[k] - lo[k]) / h) + 3;
        origin[k] = lo[k] - h;
    }
    int64_t np = (int64_t)n[0] * n[1] * n[2];
    float *f = malloc(sizeof(float) * (size_t)np);
    if (!f) goto oom;
    /* blocks of 4³ samples whose center is farther from the surface than the block's reach
     * plus 3 cells take the center's value: the SDF is 1-Lipschitz, so their sign is right,
     * and marching cubes reads exact values only at sign changes and their neighbours, which
     * are within 2 cells of the surface. 5–10× fewer evaluations at 128³. */
    int nbk[3] = {(n[0] + 3) / 4, (n[1] + 3) / 4, (n[2] + 3) / 4};
    int par_nt = base_par_threads((int64_t)nbk[0] * nbk[1] * nbk[2], 2000);
#pragma omp parallel for schedule(dynamic, 4) num_threads(par_nt) if (par_nt > 1)
    for (int64_t blk = 0; blk < (int64_t)nbk[0] * nbk[1] * nbk[2]; blk++) {
        int b0[3] = {(int)(blk % nbk[0]) * 4, (int)(blk / nbk[0] % nbk[1]) * 4, (int)(blk / ((int64_t)nbk[0] * nbk[1])) * 4};
        int b1[3];
        float c[3];
        for (int k = 0; k < 3; k++) {
            b1[k] = b0[k] + 4 < n[k] ? b0[k] + 4 : n[k];
            c[k] = origin[k] + h * 0.5f * (float)(b0[k] + b1[k] - 1);
        }
        float dc = ds_sdf_scene_eval(&out->scene, c);
        bool far = fabsf(dc) > h * (1.5f * 1.7321f + 3.0f);
        for (int z = b0[2]; z < b1[2]; z++)
            for (int y = b0[1]; y < b1[1]; y++)
                for (int x = b0[0]; x < b1[0]; x++) {
                    float p[3] = {origin[0] + h * (float)x, origin[1] + h * (float)y, origin[2] + h * (float)z};
                    f[x + (int64_t)n[0] * (y + (int64_t)n[1] * z)] = far ? dc : ds_sdf_scene_eval(&out->scene, p);
                }
    }
    int rc = ds_marching_cubes(f, n[0], n[1], n[2], origin, h, &out->mesh);
    free(f);
    if (rc) goto oom;
    if (out->mesh.nf == 0) {
        snprintf(err, errlen, "procedural: %s seed %llu produced an empty mesh", category, (unsigned long long)seed);
        ds_procedural_free(out);
        return -1;
    }
    out->xf = ds_mesh_normalizing_transform(&out->mesh, 0.0f);
    ds_mesh_apply_transform(&out->mesh, out->xf);
    ds_sdf_scene_transform(&out->scene, out->xf);
    for (int i = 0; i < out->nbones; i++) {
        ds_points_apply_transform(out->bones[i].head, 1, out->xf);
        ds_points_apply_transform(out->bones[i].tail, 1, out->xf);
    }
    out->weights = malloc(sizeof(float) * (size_t)(out->mesh.nv * out->nbones + 1));
    if (!out->weights) goto oom;
    ds_procedural_weights(&out->scene, out->nbones, out->mesh.v, out->mesh.nv, 0.04f, out->weights);
    return 0;
oom:
    free(b);
    ds_procedural_free(out);
    snprintf(err, errlen, "procedural: out of memory");
    return -1;
}

int ds_procedural_make(const char *category, uint64_t seed, int grid_res, DsProceduralShape *out, char *err,
                       size_t errlen) {
    return ds_procedural_make_family(category, seed, 0.0f, grid_res, out, err, errlen);
}
