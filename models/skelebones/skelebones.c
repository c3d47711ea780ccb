/* models/skelebones/skelebones.c — the pipeline and its files (skelebones.h). */
#include "models/skelebones/skelebones.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "base/h5file.h"
#include "datasets/mesh/mesh.h"
#include "datasets/render/raster.h"
#include "models/skelebones/rigging.h"

void sb_options_defaults(SbOptions *o) {
    sb_cluster_defaults(&o->cluster);
    sb_ssdr_defaults(&o->ssdr);
    o->random_init = 0;
    o->seed = 0;
    o->min_opacity = 0;
}

void sb_result_free(SbResult *r) {
    sb_clusters_free(&r->clusters);
    sb_skin_free(&r->skin);
    sb_ik_result_free(&r->ik);
    free(r->ik_rest), free(r->ik_parents), free(r->fitted);
    r->ik_rest = NULL, r->ik_parents = NULL, r->fitted = NULL;
}

/* clusters and SSDR of F frames of N points */
static int decompose(int F, int64_t N, const float *rest, const float *pos, const SbOptions *o, SbResult *r, char *err,
                     size_t errlen) {
    double t0 = base_now();
    int rc = o->random_init ? sb_cluster_random(F, N, rest, pos, o->cluster.bones, o->seed, &r->clusters, err, errlen)
                            : sb_cluster_lbgvq(F, N, rest, pos, &o->cluster, &r->clusters, err, errlen);
    if (rc) return -1;
    double t1 = base_now();
    if (sb_ssdr(F, N, rest, pos, &r->clusters, &o->ssdr, &r->skin, err, errlen)) return -1;
    r->seconds_cluster = t1 - t0, r->seconds_ssdr = base_now() - t1;
    return 0;
}

/* The decomposition of t's opaque points (fit[i]), n of them, carried to all N: labels and weight
 * rows back in place, the others' weights solved for the bones found, each one's label its
 * heaviest bone. */
static int decompose_opaque(const SbTraj *t, const uint8_t *fit, int64_t n, const SbOptions *o, SbResult *r, char *err,
                            size_t errlen) {
    int F = t->nframes;
    int64_t N = t->npoints, m = N - n;
    float *rest = malloc((size_t)n * 3 * sizeof *rest), *pos = malloc((size_t)F * n * 3 * sizeof *pos);
    float *orest = malloc((size_t)(m + 1) * 3 * sizeof *orest), *opos = malloc((size_t)F * (m + 1) * 3 * sizeof *opos);
    int rc = -1;
    if (!rest || !pos || !orest || !opos) {
        base_errf(err, errlen, "skelebones: out of memory");
        goto done;
    }
    for (int64_t i = 0, a = 0, b = 0; i < N; i++) {
        float *dr = fit[i] ? rest + 3 * a : orest + 3 * b;
        memcpy(dr, t->rest + 3 * i, 3 * sizeof *dr);
        for (int f = 0; f < F; f++)
            memcpy(fit[i] ? pos + ((size_t)f * n + a) * 3 : opos + ((size_t)f * m + b) * 3, t->pos + ((size_t)f * N + i) * 3,
                   3 * sizeof(float));
        fit[i] ? a++ : b++;
    }
    if (decompose(F, n, rest, pos, o, r, err, errlen)) goto done;
    int B = r->skin.nbones;
    float *W = malloc((size_t)N * B * sizeof *W), *OW = malloc((size_t)(m + 1) * B * sizeof *OW);
    int32_t *L = malloc((size_t)N * sizeof *L);
    if (!W || !OW || !L) {
        free(W), free(OW), free(L);
        base_errf(err, errlen, "skelebones: out of memory");
        goto done;
    }
    if (sb_ssdr_weights(F, m, B, o->ssdr.max_influences, orest, opos, r->skin.transforms, OW, err, errlen)) {
        free(W), free(OW), free(L);
        goto done;
    }
    for (int64_t i = 0, a = 0, b = 0; i < N; i++) {
        const float *w = fit[i] ? r->skin.weights + (size_t)a * B : OW + (size_t)b * B;
        memcpy(W + (size_t)i * B, w, (size_t)B * sizeof *W);
        if (fit[i]) L[i] = r->clusters.labels[a++];
        else {
            int best = 0;
            for (int j = 1; j < B; j++)
                if (w[j] > w[best]) best = j;
            L[i] = best, b++;
        }
    }
    free(r->skin.weights), free(r->clusters.labels), free(OW);
    r->skin.weights = W, r->clusters.labels = L;
    r->skin.npoints = r->clusters.npoints = N;
    rc = 0;
done:
    free(rest), free(pos), free(orest), free(opos);
    return rc;
}

int sb_run(const SbTraj *t, const SbOptions *o, SbResult *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->true_rmse = -1;
    int64_t N = t->npoints, n = N;
    if (t->opacity && o->min_opacity > 0) {
        n = 0;
        for (int64_t i = 0; i < N; i++) n += t->opacity[i] >= o->min_opacity;
    }
    int rc;
    if (n == N) {
        rc = decompose(t->nframes, N, t->rest, t->pos, o, r, err, errlen);
        r->nfitted = N;
    } else if (n < 2 * (int64_t)o->cluster.bones) {
        rc = base_errf(err, errlen, "%s: %lld of %lld points have opacity >= %g, too few for %d bones (lower the opacity "
                       "threshold)", t->source, (long long)n, (long long)N, o->min_opacity, o->cluster.bones);
    } else {
        r->fitted = malloc((size_t)N);
        if (!r->fitted) rc = base_errf(err, errlen, "skelebones: out of memory");
        else {
            for (int64_t i = 0; i < N; i++) r->fitted[i] = t->opacity[i] >= o->min_opacity;
            r->nfitted = n;
            rc = decompose_opaque(t, r->fitted, n, o, r, err, errlen);
        }
    }
    if (rc) {
        sb_result_free(r);
        return -1;
    }
    if (t->true_bones > 0)
        r->true_rmse = sb_lbs_rmse(t->nframes, t->npoints, t->true_bones, t->rest, t->pos, t->true_weights, t->true_transforms);
    return 0;
}

int sb_run_ik_true_tree(const SbTraj *t, const SbIkOptions *o, int64_t max_points, SbResult *r, double *joint_err,
                        char *err, size_t errlen) {
    int J = t->true_bones, F = t->nframes;
    if (J < 1 || !t->true_parents || !t->true_joints || !t->true_transforms)
        return base_errf(err, errlen, "IK: the input has no true rig (only gt.h5 inputs have one)");
    int64_t stride = max_points > 0 && t->npoints > max_points ? (t->npoints + max_points - 1) / max_points : 1;
    int64_t M = (t->npoints + stride - 1) / stride;
    double *X = malloc((size_t)J * 3 * sizeof(double)), *nodes = malloc((size_t)F * J * 3 * sizeof(double));
    int32_t *par = malloc((size_t)J * sizeof(int32_t));
    int64_t *off = malloc((size_t)(F + 1) * sizeof(int64_t));
    float *U = malloc((size_t)M * 3 * sizeof(float)), *W = malloc((size_t)M * J * sizeof(float)),
          *V = malloc((size_t)F * M * 3 * sizeof(float));
    if (!X || !nodes || !par || !off || !U || !W || !V) {
        free(X), free(nodes), free(par), free(off), free(U), free(W), free(V);
        return base_errf(err, errlen, "IK: out of memory");
    }
    for (int j = 0; j < J; j++) {
        const double *T = t->true_transforms + (size_t)j * 12;
        const float *h = t->true_joints + (size_t)j * 3;
        for (int a = 0; a < 3; a++) {
            double acc = 0;
            for (int b = 0; b < 3; b++) acc += T[b * 4 + a] * (h[b] - T[b * 4 + 3]);
            X[j * 3 + a] = acc;
        }
        par[j] = t->true_parents[j];
    }
    for (int f = 0; f <= F; f++) off[f] = (int64_t)f * J;
    for (int64_t k = 0; k < (int64_t)F * J * 3; k++) nodes[k] = t->true_joints[k];
    for (int64_t m = 0; m < M; m++) {
        int64_t i = m * stride;
        memcpy(U + m * 3, t->rest + i * 3, 3 * sizeof(float));
        memcpy(W + m * J, t->true_weights + i * J, (size_t)J * sizeof(float));
        for (int f = 0; f < F; f++) memcpy(V + ((size_t)f * M + m) * 3, t->pos + ((size_t)f * t->npoints + i) * 3, 3 * sizeof(float));
    }
    SbTree tree = {J, X, par};
    int rc = sb_ik_solve(&tree, F, nodes, off, M, U, W, V, o, &r->ik, err, errlen);
    if (rc == 0) {
        double e = 0;
        for (int64_t k = 0; k < (int64_t)F * J; k++) {
            double d = 0;
            for (int c = 0; c < 3; c++) d += pow(r->ik.positions[k * 3 + c] - t->true_joints[k * 3 + c], 2);
            e += sqrt(d);
        }
        *joint_err = e / ((double)F * J);
        r->ik_rest = X, r->ik_parents = par, X = NULL, par = NULL;
    }
    free(X), free(nodes), free(par), free(off), free(U), free(W), free(V);
    return rc;
}

void sb_bone_color(int j, float rgb[3]) {
    double h = fmod(0.13 + 0.618033988749895 * j, 1.0) * 6, s = 0.75, v = 0.95;
    int k = (int)h;
    double f = h - k, p = v * (1 - s), q = v * (1 - s * f), u = v * (1 - s * (1 - f));
    double c[6][3] = {{v, u, p}, {q, v, p}, {p, v, u}, {p, q, v}, {u, p, v}, {v, p, q}};
    for (int a = 0; a < 3; a++) rgb[a] = (float)c[k % 6][a];
}

int sb_rig_write(const char *path, const SbTraj *t, const SbResult *r, const struct SbRigResult *g, const char *command,
                 char *err, size_t errlen) {
    const SbSkin *s = &r->skin;
    int F = s->nframes, B = s->nbones;
    int64_t N = s->npoints;
    char tmp[4200];
    base_h5_quiet();
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    float *T = malloc((size_t)F * B * 12 * sizeof(float) + 4);
    bool ok = T != NULL;
    if (ok)
        for (int64_t k = 0; k < (int64_t)F * B * 12; k++) T[k] = (float)s->transforms[k];
    hsize_t dr[2] = {(hsize_t)N, 3}, dl[1] = {(hsize_t)N}, dw[2] = {(hsize_t)N, (hsize_t)B},
            dt[4] = {(hsize_t)F, (hsize_t)B, 3, 4}, dh[1] = {(hsize_t)s->niters + 1}, df[2] = {(hsize_t)t->nfaces, 3};
    const size_t ch = 1 << 20;
    ok = ok && base_h5_write_checked(f, "rest/points", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dr, t->rest, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "bones/labels", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dl, r->clusters.labels, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "bones/weights", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dw, s->weights, ch, true) == 0;
    ok = ok && base_h5_write_checked(f, "bones/transforms", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, dt, T, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "ssdr/rmse", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, dh, s->rmse, ch, false) == 0;
    if (r->fitted) /* which points the bones were fitted to (the others follow them) */
        ok = ok && base_h5_write_checked(f, "bones/fitted", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, dl, r->fitted, ch, false) == 0;
    if (t->faces && t->nfaces)
        ok = ok && base_h5_write_checked(f, "rest/faces", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, df, t->faces, ch, false) == 0;
    if (r->ik.njoints > 0 && r->ik_rest && r->ik_parents) {
        int J = r->ik.njoints, FI = r->ik.nframes;
        hsize_t dj[2] = {(hsize_t)J, 3}, dp[1] = {(hsize_t)J}, dq[3] = {(hsize_t)FI, (hsize_t)J, 4},
                dtr[2] = {(hsize_t)FI, 3}, dpos[3] = {(hsize_t)FI, (hsize_t)J, 3}, dl[1] = {(hsize_t)FI};
        ok = ok && base_h5_write_checked(f, "ik/rest_joints", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, dj, r->ik_rest, ch, false) == 0;
        ok = ok && base_h5_write_checked(f, "ik/parents", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dp, r->ik_parents, ch, false) == 0;
        ok = ok && base_h5_write_checked(f, "ik/rotations", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, dq, r->ik.rotations, ch, false) == 0;
        ok = ok && base_h5_write_checked(f, "ik/translation", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, dtr, r->ik.translation, ch, false) == 0;
        ok = ok && base_h5_write_checked(f, "ik/joints", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, dpos, r->ik.positions, ch, false) == 0;
        ok = ok && base_h5_write_checked(f, "ik/loss", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, dl, r->ik.loss, ch, false) == 0;
    }
    if (g) ok = ok && sb_rig_h5_write(f, g) == 0;
    char num[64];
    ok = ok && base_h5_attr_str(f, "producer", "anima skelebones (models/skelebones: LBG-VQ + SSDR)") == 0;
    ok = ok && base_h5_attr_str(f, "source", t->source) == 0;
    ok = ok && base_h5_attr_str(f, "command", command) == 0;
    ok = ok && base_h5_attr_str(f, "units", "those of the input positions") == 0;
    ok = ok && base_h5_attr_str(f, "transforms", "rest -> frame t: v = R u + T, [R | T] row-major 3 x 4") == 0;
    ok = ok && base_h5_attr_i64(f, "frames", F) == 0 && base_h5_attr_i64(f, "bones", B) == 0;
    int64_t K = 0;
    for (int64_t i = 0; i < N; i++) {
        int64_t nz = 0;
        for (int j = 0; j < B; j++) nz += s->weights[i * B + j] > 0;
        if (nz > K) K = nz;
    }
    ok = ok && base_h5_attr_i64(f, "influences", K) == 0;
    snprintf(num, sizeof num, "%.9g", s->rmse[s->niters]);
    ok = ok && base_h5_attr_str(f, "rmse", num) == 0;
    snprintf(num, sizeof num, "%.9g", r->clusters.rmse);
    ok = ok && base_h5_attr_str(f, "cluster_rmse", num) == 0;
    snprintf(num, sizeof num, "%.6g", r->seconds_cluster);
    ok = ok && base_h5_attr_str(f, "seconds_cluster", num) == 0;
    snprintf(num, sizeof num, "%.6g", r->seconds_ssdr);
    ok = ok && base_h5_attr_str(f, "seconds_ssdr", num) == 0;
    if (r->true_rmse >= 0) {
        snprintf(num, sizeof num, "%.9g", r->true_rmse);
        ok = ok && base_h5_attr_str(f, "true_rig_rmse", num) == 0;
    }
    free(T);
    return base_h5_save_end(f, tmp, path, ok, "rig", err, errlen);
}

void sb_bone_colors(const float *weights, int64_t N, int B, float *col) {
    float rgb[SB_MAX_BONES][3];
    for (int j = 0; j < B && j < SB_MAX_BONES; j++) sb_bone_color(j, rgb[j]);
    for (int64_t i = 0; i < N; i++)
        for (int c = 0; c < 3; c++) {
            float x = 0;
            for (int j = 0; j < B && j < SB_MAX_BONES; j++) x += weights[i * B + j] * rgb[j][c];
            col[i * 3 + c] = x;
        }
}

/* the colors of the rest points (N × 3, malloc'd; sb_bone_colors) */
static float *bone_colors(const SbTraj *t, const SbResult *r) {
    float *col = malloc((size_t)t->npoints * 3 * sizeof(float) + 4);
    if (col) sb_bone_colors(r->skin.weights, t->npoints, r->skin.nbones, col);
    return col;
}

int sb_bones_png(const char *path, const SbTraj *t, const SbResult *r, int size, char *err, size_t errlen) {
    if (!t->faces || t->nfaces < 1) return base_errf(err, errlen, "%s: the input has no faces to render", path);
    DsMesh m = {0};
    m.nv = t->npoints, m.nf = t->nfaces, m.v = t->rest, m.f = t->faces;
    if (!(m.color = bone_colors(t, r))) return base_errf(err, errlen, "%s: out of memory", path);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, c[3], diag = 0;
    for (int64_t i = 0; i < m.nv; i++)
        for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], m.v[i * 3 + k]), hi[k] = fmax(hi[k], m.v[i * 3 + k]);
    for (int k = 0; k < 3; k++) c[k] = 0.5 * (lo[k] + hi[k]), diag += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    diag = sqrt(diag);
    double eye[3] = {c[0] + 0.35 * diag, c[1] + 0.3 * diag, c[2] + 1.5 * diag}, up[3] = {0, 1, 0};
    DsCamera cam = ds_camera_look_at(eye, c, up, size, size, 40);
    /* clip planes in the shape's units, as the skeleton pictures' (rigging.c): assimp models come
     * in centimeters or worse, and the look-at default 0.01..100 left this picture blank */
    cam.znear = 0.01 * diag, cam.zfar = 10 * diag;
    DsRasterOptions ro = ds_raster_options_default();
    ro.supersample = 2;
    DsRender out;
    int rc = ds_raster_render(&m, &cam, &ro, &out, err, errlen);
    if (rc == 0) {
        rc = ds_render_write_png(path, &out, false, err, errlen);
        ds_render_free(&out);
    }
    free(m.color);
    return rc;
}

int sb_bones_ply(const char *path, const SbTraj *t, const SbResult *r, char *err, size_t errlen) {
    DsMesh m = {0};
    m.nv = t->npoints, m.nf = t->faces ? t->nfaces : 0;
    m.v = t->rest, m.f = t->faces;
    if (!(m.color = bone_colors(t, r))) return base_errf(err, errlen, "%s: out of memory", path);
    int rc = ds_mesh_write_ply(path, &m, DS_PLY_BINARY_LE, err, errlen);
    free(m.color);
    return rc;
}
