/* models/gs4d/synth.h — a small synthetic multi-view sequence with ground truth, for the tests and
 * for `anima gs4d fit --data synthetic[:SIZE]` before a benchmark folder exists: a procedural
 * shape (datasets/geometry/procedural.h), colored by body part and modulated by a 3D stripe
 * pattern (a texture, so photometric fitting is well posed), moved by an analytic motion —
 * a rigid rotation about the vertical axis, θ(t) = 0.6 t, after a bend that lifts the shape's ends,
 * y += 0.3 t x² — and rendered unlit (the appearance is the surface's own, as in a diffuse
 * capture under ambient light) with datasets/render/raster.h from a fixed rig of cameras on a
 * Fibonacci sphere at every frame. Every (views / test_views)-th camera of the rig is held out. */
#ifndef ANIMA_MODELS_GS4D_SYNTH_H
#define ANIMA_MODELS_GS4D_SYNTH_H

#include "datasets/mesh/mesh.h"
#include "models/gs4d/gs4d.h"

typedef struct {
    int frames, n_train, n_test;
    Gs4dView *train, *test;  /* frame-major: view v of frame f at f × per-frame count + v */
    float *pixels;           /* every image's RGBA, owned */
    DsMesh mesh;             /* the canonical (t = 0) mesh */
    float *frame_verts;      /* frames × nv × 3: the ground-truth surface per frame */
    float *times;            /* frames */
} Gs4dSynth;

/* The motion at time t applied to a canonical point. */
void gs4d_synth_motion(double t, const float in[3], float out[3]);
/* frames ≥ 1 (times f / (frames − 1)), views + test_views cameras per frame, size² pixels;
 * category e.g. "quadruped". 0, or -1 with err. */
int gs4d_synth_make(const char *category, uint64_t seed, int frames, int views, int test_views, int size,
                    Gs4dSynth *s, char *err, size_t errlen);
void gs4d_synth_free(Gs4dSynth *s);

#endif
