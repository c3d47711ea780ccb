/* models/gs4d/synth.c — the synthetic sequence of synth.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/color.h"
#include "datasets/geometry/procedural.h"
#include "datasets/render/raster.h"
#include "synth.h"

void gs4d_synth_motion(double t, const float in[3], float out[3]) {
    double x = in[0], y = in[1] + 0.3 * t * in[0] * in[0], z = in[2];
    double a = 0.6 * t, c = cos(a), s = sin(a);
    out[0] = (float)(c * x + s * z), out[1] = (float)y, out[2] = (float)(-s * x + c * z);
}

int gs4d_synth_make(const char *category, uint64_t seed, int frames, int views, int test_views, int size,
                    Gs4dSynth *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    if (frames < 1 || views < 1 || test_views < 0 || size < 8) {
        snprintf(err, errlen, "gs4d synthetic: %d frames, %d + %d views, %d px: need ≥ 1 frame and view, ≥ 8 px",
                 frames, views, test_views, size);
        return -1;
    }
    DsProceduralShape sh;
    if (ds_procedural_make(category, seed, 32, &sh, err, errlen)) return -1;
    s->mesh = sh.mesh;
    sh.mesh = (DsMesh){0};
    DsMesh *m = &s->mesh;
    free(m->n); /* normals would go stale under the motion; unlit rendering needs none */
    m->n = NULL;
    free(m->color);
    m->color = base_malloc(sizeof(float) * 3 * (size_t)m->nv);
    float *pal = base_malloc(sizeof(float) * 3 * (size_t)(sh.nbones > 0 ? sh.nbones : 1));
    for (int b = 0; b < sh.nbones; b++) base_hsv_rgbf(0.618033988749895 * b + 0.08, 0.6, 0.9, pal + 3 * b);
    for (int64_t i = 0; i < m->nv; i++) {
        const float *p = m->v + 3 * i;
        double stripe = 0.65 + 0.35 * sin(7 * p[0]) * sin(7 * p[1] + 1) * sin(7 * p[2] + 2);
        for (int a = 0; a < 3; a++) {
            double c = 0;
            for (int b = 0; b < sh.nbones; b++) c += sh.weights[i * sh.nbones + b] * pal[3 * b + a];
            if (sh.nbones == 0) c = 0.7;
            m->color[3 * i + a] = (float)(c * stripe);
        }
    }
    free(pal);
    ds_procedural_free(&sh);
    s->frames = frames;
    s->times = base_malloc(sizeof(float) * (size_t)frames);
    s->frame_verts = base_malloc(sizeof(float) * 3 * (size_t)m->nv * (size_t)frames);
    double r = 0;
    for (int f = 0; f < frames; f++) {
        s->times[f] = frames > 1 ? (float)f / (float)(frames - 1) : 0;
        for (int64_t i = 0; i < m->nv; i++) {
            float *o = s->frame_verts + ((size_t)f * m->nv + i) * 3;
            gs4d_synth_motion(s->times[f], m->v + 3 * i, o);
            r = fmax(r, sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]));
        }
    }
    int nc = views + test_views;
    DsCamera *rig = base_malloc(sizeof(DsCamera) * (size_t)nc);
    double c0[3] = {0, 0, 0}, fov = 40;
    ds_camera_sphere(nc, 1.05 * r / sin(0.5 * fov * M_PI / 180), c0, size, size, fov, rig);
    bool *held = base_calloc((size_t)nc, sizeof(bool));
    int stride = test_views ? nc / test_views : 0, nh = 0;
    for (int i = 0; i < nc && test_views; i++)
        if (i % stride == stride / 2 && nh < test_views) held[i] = true, nh++;
    for (int i = nc - 1; i >= 0 && nh < test_views; i--)
        if (!held[i]) held[i] = true, nh++;
    s->train = base_malloc(sizeof(Gs4dView) * (size_t)frames * views);
    s->test = base_malloc(sizeof(Gs4dView) * (size_t)frames * (test_views ? test_views : 1));
    size_t px = (size_t)size * size * 4;
    s->pixels = base_malloc(sizeof(float) * px * (size_t)frames * nc);
    DsRasterOptions ro = ds_raster_options_default();
    ro.unlit = true;
    ro.supersample = 2;
    ro.background[0] = ro.background[1] = ro.background[2] = 0; /* rgb is then premultiplied */
    DsMesh fm = *m;
    int k = 0;
    for (int f = 0; f < frames; f++) {
        fm.v = s->frame_verts + (size_t)f * m->nv * 3;
        for (int c = 0; c < nc; c++, k++) {
            DsRender rr;
            if (ds_raster_render(&fm, &rig[c], &ro, &rr, err, errlen)) {
                free(rig), free(held);
                gs4d_synth_free(s);
                return -1;
            }
            float *dst = s->pixels + px * (size_t)k;
            for (size_t p = 0; p < (size_t)size * size; p++) {
                float a = rr.alpha[p];
                for (int ch = 0; ch < 3; ch++) dst[4 * p + ch] = a > 0 ? fminf(1.f, rr.rgb[3 * p + ch] / a) : 0;
                dst[4 * p + 3] = a;
            }
            ds_render_free(&rr);
            Gs4dView v = {.cam = rig[c], .time = s->times[f], .rgba = dst};
            if (held[c]) s->test[s->n_test++] = v;
            else s->train[s->n_train++] = v;
        }
    }
    free(rig), free(held);
    return 0;
}

void gs4d_synth_free(Gs4dSynth *s) {
    free(s->train), free(s->test), free(s->pixels), free(s->frame_verts), free(s->times);
    ds_mesh_free(&s->mesh);
    memset(s, 0, sizeof *s);
}
