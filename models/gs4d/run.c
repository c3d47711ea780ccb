/* models/gs4d/run.c — a gs4d run's data, products and reopening (run.h) */
#include "models/gs4d/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/h5file.h"
#include "datasets/render/gif.h"
#include "datasets/render/image.h"
#include "datasets/render/video.h"
#include "models/gaussians/fit.h"
#include "optim/checkpoint.h"

static const double WHITE[3] = {1, 1, 1};

/* DIR/gt.h5 of `anima dataset motion` (datasets/motion/bench.h's reader): the surface per frame.
 * 1 read, 0 absent, -1 unreadable (err). */
static int read_gt(const char *dir, DsMotionGt *raw, Gs4dSurfaceSeq *g, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/gt.h5", dir);
    if (access(path, F_OK) != 0) return 0;
    if (ds_motion_gt_load(path, raw, err, errlen)) return -1;
    *g = (Gs4dSurfaceSeq){.frames = raw->nframes, .times = raw->times, .verts = raw->vertices, .nv = raw->nv, .nf = raw->nf,
                     .faces = raw->faces, .rest = raw->rest};
    return 1;
}

static Gs4dView *views_of(const DsDnerfSplit *s) {
    Gs4dView *v = base_malloc(sizeof(Gs4dView) * (size_t)(s->n ? s->n : 1));
    for (int i = 0; i < s->n; i++) v[i] = (Gs4dView){.cam = s->views[i].cam, .time = s->views[i].time, .rgba = s->views[i].rgba};
    return v;
}

/* the held-out views from the split `prefer` names ("test": every frame, what eval reports;
 * "val": every few frames, what fit monitors and what settings are chosen on), falling back to
 * the other one */
int gs4d_run_data_load(const Gs4dRunConfig *c, const char *prefer, Gs4dRunData *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    const char *dir = c->data.dir;
    if (!strncmp(dir, "synthetic", 9) && (dir[9] == 0 || dir[9] == ':')) {
        const char *cat = dir[9] ? dir + 10 : "quadruped";
        if (gs4d_synth_make(cat, (uint64_t)c->seed, (int)c->data.frames, (int)c->data.views, (int)c->data.test_views,
                            (int)c->data.size, &d->synth, err, errlen))
            return -1;
        d->synthetic = d->has_gt = true;
        d->train = d->synth.train, d->n_train = d->synth.n_train;
        d->test = d->synth.test, d->n_test = d->synth.n_test;
        d->test_split = "held-out";
        Gs4dSynth *s = &d->synth;
        d->gt = (Gs4dSurfaceSeq){.frames = s->frames, .times = s->times, .verts = s->frame_verts, .nv = s->mesh.nv,
                            .nf = s->mesh.nf, .faces = s->mesh.f, .rest = s->mesh.v};
        return 0;
    }
    if (ds_dnerf_load(dir, "train", &d->split[0], err, errlen)) return -1;
    bool val = !strcmp(prefer, "val");
    const char *order[2] = {val ? "val" : "test", val ? "test" : "val"};
    char e2[1024];
    int k = 0;
    for (; k < 2; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%.4000s/transforms_%s.json", dir, order[k]);
        if (access(p, F_OK) != 0) continue;
        if (ds_dnerf_load(dir, order[k], &d->split[1], e2, sizeof e2)) {
            snprintf(err, errlen, "%s", e2);
            ds_dnerf_free(&d->split[0]);
            return -1;
        }
        break;
    }
    if (k == 2) {
        snprintf(err, errlen, "%s: no transforms_val.json or transforms_test.json (held-out views)", dir);
        ds_dnerf_free(&d->split[0]);
        return -1;
    }
    d->test_split = order[k];
    d->views[0] = views_of(&d->split[0]), d->views[1] = views_of(&d->split[1]);
    d->train = d->views[0], d->n_train = d->split[0].n;
    d->test = d->views[1], d->n_test = d->split[1].n;
    int g = read_gt(dir, &d->gt_file, &d->gt, err, errlen);
    if (g < 0) {
        ds_dnerf_free(&d->split[0]), ds_dnerf_free(&d->split[1]);
        free(d->views[0]), free(d->views[1]);
        return -1;
    }
    d->has_gt = g == 1;
    return 0;
}

void gs4d_run_data_free(Gs4dRunData *d) {
    if (d->synthetic) gs4d_synth_free(&d->synth);
    else {
        ds_dnerf_free(&d->split[0]), ds_dnerf_free(&d->split[1]);
        free(d->views[0]), free(d->views[1]);
        if (d->has_gt) ds_motion_gt_free(&d->gt_file);
    }
    memset(d, 0, sizeof *d);
}

int gs4d_write_renders(const char *dir, const Gs4dModel *m, const Gs4dData *d, char *err, size_t errlen) {
    for (int v = 0; v < d->n; v++) {
        char path[4200];
        if (snprintf(path, sizeof path, "%s/test_%03d.png", dir, v) >= (int)sizeof path) {
            snprintf(err, errlen, "%s: path too long", dir);
            return -1;
        }
        TensorScope *sc = tensor_scope_begin();
        Tensor *a = gs4d_render(m, &d->views[v].cam, d->views[v].time, WHITE), *b = tensor_contiguous(gs4d_target(d, v, WHITE));
        /* (ds_imagef_write clamps to [0, 1]) */
        int rc = ds_imagef_write_pair(path, tensor_f32(a), tensor_f32(b), (int)a->shape[1], (int)a->shape[0], err, errlen);
        tensor_scope_end(sc);
        if (rc) return -1;
    }
    return 0;
}

/* RUN/turntable.gif: a camera circling the scene once while time runs from 0 to 1, at the
 * training cameras' mean distance, 20° above their mean horizon (the mean of their image-up
 * directions is taken as the world's up), with the first training camera's field of view */
int gs4d_write_turntable(const char *gif_path, const char *mp4_path, const Gs4dModel *m, const Gs4dData *d, int nframes,
                           char *err, size_t errlen) {
    if (!gif_path && !mp4_path) return 0;
    double up[3] = {0, 0, 0}, dist = 0;
    for (int v = 0; v < d->n; v++) {
        const DsCamera *c = &d->views[v].cam;
        double o[3];
        ds_camera_center(c, o);
        for (int a = 0; a < 3; a++) up[a] -= c->R[3 + a]; /* image y points down: up is −(row 1 of R) */
        dist += sqrt((o[0] - d->center[0]) * (o[0] - d->center[0]) + (o[1] - d->center[1]) * (o[1] - d->center[1]) +
                     (o[2] - d->center[2]) * (o[2] - d->center[2])) / d->n;
    }
    double nu = sqrt(up[0] * up[0] + up[1] * up[1] + up[2] * up[2]);
    if (!(nu > 0)) up[0] = 0, up[1] = 1, up[2] = 0, nu = 1;
    for (int a = 0; a < 3; a++) up[a] /= nu;
    /* two horizontal axes perpendicular to up */
    double e1[3] = {1, 0, 0};
    if (fabs(up[0]) > 0.9) e1[0] = 0, e1[1] = 1;
    double dot = e1[0] * up[0] + e1[1] * up[1] + e1[2] * up[2];
    for (int a = 0; a < 3; a++) e1[a] -= dot * up[a];
    double n1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    for (int a = 0; a < 3; a++) e1[a] /= n1;
    double e2[3] = {up[1] * e1[2] - up[2] * e1[1], up[2] * e1[0] - up[0] * e1[2], up[0] * e1[1] - up[1] * e1[0]};
    const DsCamera *c0 = &d->views[0].cam;
    int w = c0->width, h = c0->height;
    double fov = 2 * atan(0.5 * h / c0->fy) * 180 / M_PI, el = 20 * M_PI / 180;
    float *frames = base_malloc(sizeof(float) * 3 * (size_t)w * h * nframes);
    for (int f = 0; f < nframes; f++) {
        double az = 2 * M_PI * f / nframes, t = nframes > 1 ? (double)f / (nframes - 1) : 0, eye[3];
        for (int a = 0; a < 3; a++)
            eye[a] = d->center[a] + dist * (cos(el) * (cos(az) * e1[a] + sin(az) * e2[a]) + sin(el) * up[a]);
        DsCamera cam = ds_camera_look_at(eye, d->center, up, w, h, fov);
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = gs4d_render(m, &cam, t, WHITE);
        memcpy(frames + (size_t)f * w * h * 3, tensor_f32(img), sizeof(float) * 3 * (size_t)w * h);
        tensor_scope_end(sc);
    }
    /* 8 hundredths of a second a frame: 12.5 fps in both formats */
    int rc = gif_path ? ds_gif_write(gif_path, frames, w, h, nframes, 8, err, errlen) : 0;
    if (!rc && mp4_path) rc = ds_video_write_mp4(mp4_path, frames, w, h, nframes, 12.5, err, errlen);
    free(frames);
    return rc;
}

/* the distinct times of the training and held-out views, ascending */
int gs4d_run_frame_times(const Gs4dRunData *d, double **out) {
    int n = d->n_train + d->n_test, nf = 0;
    double *t = base_malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        double v = i < d->n_train ? d->train[i].time : d->test[i - d->n_train].time;
        bool seen = false;
        for (int j = 0; j < nf && !seen; j++) seen = t[j] == v;
        if (!seen) t[nf++] = v;
    }
    for (int i = 1; i < nf; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    *out = t;
    return nf;
}

/* RUN/trajectories.h5: /times (F); /frames/{positions (F, N, 3), scales (F, N, 1|3), colors (F, N, 3),
 * opacities (F, N)}; /canonical/{the same at rest, (N, ...)}; activated values (scales exp'd, colors
 * rgb, opacities in [0, 1]); attributes producer, step, units. */
int gs4d_write_trajectories(const char *path, const Gs4dModel *m, const double *times, int nf, char *err, size_t errlen) {
    int64_t n = m->cfg.n, ns = m->cfg.isotropic ? 1 : 3;
    size_t fn = (size_t)nf * (size_t)n;
    float *pos = base_malloc(sizeof(float) * fn * 3), *sc = base_malloc(sizeof(float) * fn * ns),
          *rgb = base_malloc(sizeof(float) * fn * 3), *op = base_malloc(sizeof(float) * fn);
    for (int f = 0; f < nf; f++)
        gs4d_state_at(m, times[f], pos + (size_t)f * n * 3, sc + (size_t)f * n * ns, rgb + (size_t)f * n * 3,
                      op + (size_t)f * n);
    /* rest: the canonical set, no deformation */
    Gs4dModel rest = *m;
    rest.step = 0;
    rest.cfg.warmup = 1; /* gs4d_state_at deforms only from the warm-up on */
    float *cp = base_malloc(sizeof(float) * (size_t)n * 3), *cs = base_malloc(sizeof(float) * (size_t)n * ns),
          *cc = base_malloc(sizeof(float) * (size_t)n * 3), *co = base_malloc(sizeof(float) * (size_t)n);
    gs4d_state_at(&rest, 0, cp, cs, cc, co);
    char tmp[4200];
    int rc = -1;
    hid_t file = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (file >= 0) {
        hsize_t dt[1] = {(hsize_t)nf};
        hsize_t d3[3] = {(hsize_t)nf, (hsize_t)n, 3}, ds[3] = {(hsize_t)nf, (hsize_t)n, (hsize_t)ns}, d2[2] = {(hsize_t)nf, (hsize_t)n};
        hsize_t c3[2] = {(hsize_t)n, 3}, cs2[2] = {(hsize_t)n, (hsize_t)ns}, c1[1] = {(hsize_t)n};
        size_t chunk = 1 << 20;
        bool ok = base_h5_write_checked(file, "times", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, dt, times, chunk, false) == 0 &&
                  base_h5_write_checked(file, "frames/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, pos, chunk, true) == 0 &&
                  base_h5_write_checked(file, "frames/scales", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, ds, sc, chunk, true) == 0 &&
                  base_h5_write_checked(file, "frames/colors", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3, rgb, chunk, true) == 0 &&
                  base_h5_write_checked(file, "frames/opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d2, op, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, c3, cp, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/scales", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, cs2, cs, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/colors", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, c3, cc, chunk, true) == 0 &&
                  base_h5_write_checked(file, "canonical/opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, c1, co, chunk, true) == 0 &&
                  base_h5_attr_str(file, "producer", "anima gs4d fit") == 0 && base_h5_attr_i64(file, "step", m->step) == 0 &&
                  base_h5_attr_str(file, "units", "positions and scales in the input cameras' world units; scales are "
                                                  "standard deviations (exp of the raw log-scales); colors RGB in [0, 1] "
                                                  "(SH degree 0); opacities in [0, 1]") == 0;
        rc = base_h5_save_end(file, tmp, path, ok, "trajectories", err, errlen);
    }
    free(pos), free(sc), free(rgb), free(op), free(cp), free(cs), free(cc), free(co);
    return rc;
}


int gs4d_run_open(const char *run, const char *split, Gs4dRun *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/config.json", run);
    if (ds_config_load(path, GS4D_RUN_SCHEMA, &r->cfg, err, errlen)) return -1;
    if (gs4d_run_data_load(&r->cfg, split, &r->data, err, errlen)) return -1;
    if (gs4d_data_make(r->data.train, r->data.n_train, &r->train, err, errlen)) {
        gs4d_run_data_free(&r->data);
        return -1;
    }
    if (gs4d_data_make(r->data.test, r->data.n_test, &r->test, err, errlen)) {
        gs4d_data_free(&r->train);
        gs4d_run_data_free(&r->data);
        return -1;
    }
    Gs4dConfig mc = gs4d_run_model_config(&r->cfg);
    gs4d_init(&r->model, &mc, &r->train, NULL);
    snprintf(path, sizeof path, "%.4000s/ckpt.h5", run);
    OptimCheckpointMeta meta = {0};
    if (optim_checkpoint_load(path, &r->model.params, NULL, true, &meta, err, errlen)) {
        gs4d_free(&r->model);
        gs4d_data_free(&r->train), gs4d_data_free(&r->test);
        gs4d_run_data_free(&r->data);
        return -1;
    }
    free(meta.config_json);
    gs4d_set_step(&r->model, meta.step);
    r->step = meta.step;
    return 0;
}

void gs4d_run_close(Gs4dRun *r) {
    gs4d_free(&r->model);
    gs4d_data_free(&r->train), gs4d_data_free(&r->test);
    gs4d_run_data_free(&r->data);
    memset(r, 0, sizeof *r);
}
