/* models/partmm/bench.c — the PartMM benchmark protocol (bench.h) */
#include "models/partmm/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd/autograd.h"
#include "base/clock.h"
#include "base/errbuf.h"
#include "datasets/geometry/geometry.h"
#include "models/gaussians/fit.h"
#include "models/gaussians/rasterize.h"
#include "models/gs4d/gs4d.h"
#include "models/skelebones/cluster.h"

/* ---- the canonical Gaussians ---------------------------------------------------------------- */

static double mean_edge(const DsMotionGt *g) {
    double s = 0;
    int64_t m = 0;
    for (int64_t f = 0; f < g->nf; f++)
        for (int e = 0; e < 3; e++) {
            const float *a = g->rest + g->faces[f * 3 + e] * 3, *b = g->rest + g->faces[f * 3 + (e + 1) % 3] * 3;
            s += sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2])), m++;
        }
    return m ? s / m : 0.01;
}

/* A benchmark view's RGBA (H × W × 4, straight alpha) composited over white, as every render here
 * is: (H, W, 3) f32 in the current scope, NULL when out of memory */
static Tensor *over_white(const float *rgba, int H, int W) {
    float *ref = malloc(sizeof(float) * H * W * 3);
    if (!ref) return NULL;
    for (int64_t p = 0; p < (int64_t)H * W; p++) {
        float a = rgba[p * 4 + 3];
        for (int c = 0; c < 3; c++) ref[p * 3 + c] = rgba[p * 4 + c] * a + (1 - a);
    }
    Tensor *t = tensor_from_data(TENSOR_SHAPE(H, W, 3), TENSOR_F32, ref);
    free(ref);
    return t;
}

/* the positions the Gaussians render at: pos, moved along the posed mesh's normals by c->offset
 * (malloc'd), or NULL when there are no offsets (pos itself) */
static float *placed(const PmCanon *c, const float *pos) {
    if (!c->offset) return NULL;
    int64_t n = c->n;
    float *moved = malloc(sizeof(float) * n * 3);
    if (!moved) return NULL;
    gs_appearance_vertex_normals(n, pos, c->nf, c->faces, moved);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) moved[i * 3 + k] = pos[i * 3 + k] + c->offset[i] * moved[i * 3 + k];
    return moved;
}

Tensor *pm_canon_render(const PmCanon *c, const float *pos, const DsCamera *cam) {
    int64_t n = c->n;
    float *sc = malloc(sizeof(float) * n), *op = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++) sc[i] = c->log_scale[i], op[i] = c->logit[i];
    float *moved = placed(c, pos);
    GsGaussians g = {tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, moved ? moved : pos),
                     tensor_from_data(TENSOR_SHAPE(n, 1), TENSOR_F32, sc), NULL,
                     tensor_from_data(TENSOR_SHAPE(n, 1), TENSOR_F32, op),
                     tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, c->colors)};
    free(sc), free(op), free(moved);
    const double white[3] = {1, 1, 1};
    bool prev = ag_no_grad_begin();
    Tensor *img = tensor_contiguous(gs_render(&g, cam, white).image);
    ag_no_grad_end(prev);
    return img;
}

int pm_canon_write_ply(const char *path, const PmCanon *c, const float *pos, char *err, size_t errlen) {
    DsGaussians g;
    float *moved = placed(c, pos);
    if ((c->offset && !moved) || ds_gaussians_alloc(&g, c->n, 0)) {
        free(moved);
        return base_errf(err, errlen, "%s: out of memory", path);
    }
    const float *at = moved ? moved : pos;
    const double C0 = 0.28209479177387814; /* SH band 0: rgb = C0 f + 0.5 */
    for (int64_t i = 0; i < c->n; i++) {
        for (int k = 0; k < 3; k++) {
            g.xyz[i * 3 + k] = at[i * 3 + k];
            g.sh[i * 3 + k] = (float)((c->colors[i * 3 + k] - 0.5) / C0);
            g.scale[i * 3 + k] = c->log_scale[i];
        }
        g.opacity[i] = c->logit[i];
        g.rot[i * 4] = 1, g.rot[i * 4 + 1] = g.rot[i * 4 + 2] = g.rot[i * 4 + 3] = 0;
    }
    int rc = ds_gaussians_write(path, &g, err, errlen);
    ds_gaussians_free(&g);
    free(moved);
    return rc;
}

/* frame of a test view: its time × (F − 1), rounded */
static int view_frame(const DsDnerfView *v, int F) {
    int f = (int)lround(v->time * (F - 1));
    return f < 0 ? 0 : f >= F ? F - 1 : f;
}

/* Mean PSNR of the canonical Gaussians at the training motion's ground-truth vertices over the
 * benchmark split's views of frames below max_frame (NAN: none) */
static double split_psnr(const PmCanon *c, const DsMotionGt *train, const DsDnerfSplit *s, int max_frame) {
    double ps = 0;
    int m = 0;
    for (int v = 0; v < s->n; v++) {
        int f = view_frame(&s->views[v], train->nframes);
        if (f >= max_frame) continue;
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = pm_canon_render(c, train->vertices + (int64_t)f * train->nv * 3, &s->views[v].cam);
        int H = s->height, W = s->width;
        Tensor *rt = over_white(s->views[v].rgba, H, W);
        if (rt) ps += gs_psnr(img, rt), m++;
        tensor_scope_end(sc);
    }
    return m ? ps / m : NAN;
}

int pm_canon_fit_appearance(PmCanon *c, const char *bench_dir, const DsMotionGt *train, int max_frame, int frame_every,
                            const GsAppearanceConfig *ac, GsAppearanceProgress progress, PmAppearanceInfo *info,
                            char *err, size_t errlen) {
    DsDnerfSplit tv = {0}, vv = {0};
    if (ds_dnerf_load(bench_dir, "train", &tv, err, errlen)) return -1;
    GsAppearanceView *av = malloc(sizeof(GsAppearanceView) * (tv.n ? tv.n : 1));
    if (!av) {
        ds_dnerf_free(&tv);
        return base_errf(err, errlen, "out of memory");
    }
    /* normal offsets: the training meshes' vertex normals, per frame */
    float *nrm = NULL;
    if (ac->normal_offset) {
        nrm = malloc(sizeof(float) * (size_t)max_frame * train->nv * 3);
        if (!nrm) {
            free(av), ds_dnerf_free(&tv);
            return base_errf(err, errlen, "out of memory");
        }
        for (int f = 0; f < max_frame; f++)
            gs_appearance_vertex_normals(train->nv, train->vertices + (int64_t)f * train->nv * 3, train->nf, train->faces,
                                         nrm + (int64_t)f * train->nv * 3);
    }
    int m = 0;
    for (int v = 0; v < tv.n; v++) {
        int f = view_frame(&tv.views[v], train->nframes);
        if (f >= max_frame || f % frame_every) continue;
        av[m++] = (GsAppearanceView){&tv.views[v].cam, train->vertices + (int64_t)f * train->nv * 3, tv.views[v].rgba,
                                     nrm ? nrm + (int64_t)f * train->nv * 3 : NULL};
    }
    int rc = 0;
    if (!m) rc = base_errf(err, errlen, "appearance.fit: %s has no training views of the training motion's frames", bench_dir);
    bool have_val = !rc && ds_dnerf_load(bench_dir, "val", &vv, err, errlen) == 0;
    info->val_before = have_val ? split_psnr(c, train, &vv, max_frame) : NAN;
    if (!rc) {
        float *off = NULL;
        if (ac->normal_offset && !(off = calloc((size_t)c->n, sizeof(float)))) rc = base_errf(err, errlen, "out of memory");
        double c0 = base_cpu_now();
        if (!rc)
            info->loss = gs_appearance_fit(c->n, m, av, ac, c->colors, c->log_scale, c->logit, off, progress, 200, NULL, err, errlen);
        info->cpu = base_cpu_now() - c0, info->views = m;
        if (rc || info->loss < 0) rc = -1, free(off);
        else c->offset = off, c->nf = train->nf, c->faces = train->faces; /* pm_canon_render moves the Gaussians along the normals from here on */
    }
    info->val_after = have_val && !rc ? split_psnr(c, train, &vv, max_frame) : NAN;
    free(av), free(nrm);
    ds_dnerf_free(&tv), ds_dnerf_free(&vv);
    return rc;
}

/* ref_gs (views->n × H × W × 3, or NULL): each scored view rendered with the Gaussians at their
 * true positions. PSNR against the benchmark's images mixes two errors: where the points are,
 * and how well fixed isotropic Gaussians stand in for a rasterized textured mesh — measured,
 * the second dominates (the truth's own row scores below LBS on the quadruped). PSNR against
 * ref_gs keeps the first alone: 0 error gives +inf. */
static void score(PmBenchRow *row, const float *pos, int F, int64_t n, const float *gt_v, double diag, const PmCanon *canon,
                  const DsDnerfSplit *views, int every, const float *ref_gs) {
    double se = 0;
    for (int64_t k = 0; k < (int64_t)F * n * 3; k++) se += ((double)pos[k] - gt_v[k]) * ((double)pos[k] - gt_v[k]);
    row->rmse = 100 * sqrt(se / ((double)F * n)) / diag;
    double ps = 0, ss = 0, pg = 0;
    int m = 0;
    for (int v = 0; views && v < views->n; v++) {
        const DsDnerfView *vw = &views->views[v];
        int f = view_frame(vw, F);
        if (f % every) continue;
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = pm_canon_render(canon, pos + (int64_t)f * n * 3, &vw->cam);
        int H = views->height, W = views->width;
        Tensor *rt = over_white(vw->rgba, H, W);
        if (rt) ps += gs_psnr(img, rt), ss += gs4d_ssim(img, rt), m++;
        if (ref_gs) {
            Tensor *rg = tensor_from_data(TENSOR_SHAPE(H, W, 3), TENSOR_F32, ref_gs + (int64_t)v * H * W * 3);
            pg += gs_psnr(img, rg);
        }
        tensor_scope_end(sc);
    }
    row->psnr = m ? ps / m : NAN, row->ssim = m ? ss / m : NAN, row->psnr_gs = m && ref_gs ? pg / m : NAN;
}

/* The learned baselines predict each bone in the root joint's frame, S_root⁻¹ ∘ T_b, from the
 * joint rotations without the root's (the articulation): a regressor cannot know where the root
 * went, so the root's own motion is handed to it, as PartMM's alignment hands it the query's
 * placement. to_root: 1 world → root frame (training targets), 0 back (predictions). */
static void root_frame(int F, int B, int J, const float *S, float *tb, int to_root) {
    for (int t = 0; t < F; t++) {
        const float *R0 = S + (int64_t)t * J * 12; /* joint 0's [G | o] */
        for (int b = 0; b < B; b++) {
            float *T = tb + ((int64_t)t * B + b) * 12, o[12];
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 4; c++) {
                    double v = 0;
                    if (to_root) { /* Gᵀ (T − o) */
                        for (int k = 0; k < 3; k++) v += R0[k * 4 + r] * (T[k * 4 + c] - (c == 3 ? R0[k * 4 + 3] : 0));
                    } else { /* G T + o */
                        for (int k = 0; k < 3; k++) v += R0[r * 4 + k] * T[k * 4 + c];
                        if (c == 3) v += R0[r * 4 + 3];
                    }
                    o[r * 4 + c] = (float)v;
                }
            }
            memcpy(T, o, sizeof o);
        }
    }
}

static int regress_row(const PmRegressOptions *ro, PmRegressKind kind, const PmRig *rig, int Q, const float *qrot,
                       const float *Sq, float *out, double *seconds, char *err, size_t errlen) {
    int F = rig->F, B = rig->B, J = rig->J;
    float *S = malloc(sizeof(float) * F * J * 12), *tb = malloc(sizeof(float) * F * B * 12);
    float *rot = malloc(sizeof(float) * F * J * 4), *qr = malloc(sizeof(float) * Q * J * 4);
    if (!S || !tb || !rot || !qr) {
        free(S), free(tb), free(rot), free(qr);
        return base_errf(err, errlen, "out of memory");
    }
    pm_skin_transforms(J, rig->rest, rig->parents, F, rig->rot, rig->trans, S);
    memcpy(tb, rig->tb, sizeof(float) * F * B * 12);
    root_frame(F, B, J, S, tb, 1);
    memcpy(rot, rig->rot, sizeof(float) * F * J * 4), memcpy(qr, qrot, sizeof(float) * Q * J * 4);
    for (int t = 0; t < F; t++) rot[t * J * 4] = 1, rot[t * J * 4 + 1] = rot[t * J * 4 + 2] = rot[t * J * 4 + 3] = 0;
    for (int t = 0; t < Q; t++) qr[t * J * 4] = 1, qr[t * J * 4 + 1] = qr[t * J * 4 + 2] = qr[t * J * 4 + 3] = 0;
    PmRegressOptions o = *ro;
    o.kind = kind;
    double w = base_now();
    PmRegress *r = pm_regress_train(rot, tb, F, J, B, &o, NULL, NULL, err, errlen);
    int rc = r ? pm_regress_predict(r, qr, Q, out, err, errlen) : -1;
    *seconds = base_now() - w;
    if (!rc) root_frame(Q, B, J, Sq, out, 0);
    pm_regress_free(r);
    free(S), free(tb), free(rot), free(qr);
    return rc;
}


int pm_canon_benchmark(PmCanon *c, const DsMotionGt *train, double scale, double opacity, char *err, size_t errlen) {
    int64_t n = train->nv;
    *c = (PmCanon){.n = n, .colors = malloc(sizeof(float) * n * 3), .log_scale = malloc(sizeof(float) * n),
                   .logit = malloc(sizeof(float) * n)};
    if (!c->colors || !c->log_scale || !c->logit) {
        pm_canon_free(c);
        return base_errf(err, errlen, "out of memory");
    }
    float ls = (float)log(scale * mean_edge(train)), lo = (float)log(opacity / (1 - opacity));
    for (int64_t i = 0; i < n; i++) {
        c->log_scale[i] = ls, c->logit[i] = lo;
        for (int k = 0; k < 3; k++) c->colors[i * 3 + k] = train->colors[i * 3 + k];
    }
    return 0;
}

int pm_canon_gs4d(PmCanon *c, const char *ply, const PmRig *rig, bool *from_traj, char *err, size_t errlen) {
    int64_t n = rig->n;
    *c = (PmCanon){.n = n};
    *from_traj = false;
    DsGaussians g = {0};
    if (ds_gaussians_read(ply, &g, err, errlen)) return -1;
    int rc = 0;
    if (g.n != n) {
        rc = base_errf(err, errlen, "%s has %lld Gaussians, the rig %lld points: a rig made from the same run's trajectories is needed",
                       ply, (long long)g.n, (long long)n);
        goto done;
    }
    double md = 0;
    for (int64_t k = 0; k < n * 3; k++) md = fmax(md, fabs((double)g.xyz[k] - rig->points[k]));
    if (md > 1e-4) {
        rc = base_errf(err, errlen, "%s: the means are not the rig's rest points (off by %g): a rig made from the same run's "
                       "trajectories is needed", ply, md);
        goto done;
    }
    c->colors = malloc(sizeof(float) * n * 3), c->log_scale = malloc(sizeof(float) * n), c->logit = malloc(sizeof(float) * n);
    if (!c->colors || !c->log_scale || !c->logit) {
        rc = base_errf(err, errlen, "out of memory");
        goto done;
    }
    /* the appearance the run renders with: its frames' mean, from trajectories.h5 beside the PLY */
    char tp[4096];
    const char *sl = strrchr(ply, '/');
    snprintf(tp, sizeof tp, "%.*strajectories.h5", sl ? (int)(sl - ply + 1) : 0, ply);
    if (access(tp, R_OK) == 0) {
        rc = gs4d_trajectories_appearance(tp, n, c->log_scale, c->logit, c->colors, err, errlen);
        *from_traj = rc == 0;
        goto done;
    }
    for (int64_t i = 0; i < n; i++) { /* the PLY's own: isotropic (the mean of the three log-scales), SH band 0 */
        c->log_scale[i] = (g.scale[i * 3] + g.scale[i * 3 + 1] + g.scale[i * 3 + 2]) / 3, c->logit[i] = g.opacity[i];
        int K = (g.sh_degree + 1) * (g.sh_degree + 1);
        for (int k = 0; k < 3; k++) c->colors[i * 3 + k] = (float)(0.28209479177387814 * g.sh[(int64_t)i * K * 3 + k] + 0.5);
    }
done:
    ds_gaussians_free(&g);
    if (rc) pm_canon_free(c);
    return rc;
}

void pm_canon_free(PmCanon *c) {
    free(c->colors), free(c->log_scale), free(c->logit), free(c->offset);
    memset(c, 0, sizeof *c);
}

/* ---- the query pose -------------------------------------------------------------------------- */

int pm_pose(PmIkMethod method, const SbIkOptions *io, int64_t max_points, const PmRig *rig, int F, const float *observed,
            float *rot, float *trans, char *err, size_t errlen) {
    if (method == PM_IK_ADAM) return pm_pose_from_points(rig, F, observed, max_points, io, rot, trans, err, errlen);
    if (pm_pose_by_fits(rig, F, observed, rot, trans, err, errlen)) return -1;
    if (method == PM_IK_FIT) return 0;
    /* fit+adam: the iterative IK refines the closed-form pose from where it is, frame by frame */
    SbIkOptions o = *io;
    o.init_rotations = rot, o.init_translation = trans;
    return pm_pose_from_points(rig, F, observed, max_points, &o, rot, trans, err, errlen);
}

/* ---- the rows --------------------------------------------------------------------------------- */

double pm_bench_diagonal(const DsMotionGt *g) { return sqrt(ds_points_diagonal2(g->rest, g->nv)); }

static const PmBenchRow ROWS[PM_BENCH_ROWS] = {
    [PM_ROW_PARTMM] = {"partmm", "PartMM with the config's options (paper: 5 parts, k 7, 5 levels, lambda 0.7)"},
    [PM_ROW_LBS] = {"lbs", "LBS: the kinematic skeleton alone (each point rigidly on its joint)"},
    [PM_ROW_BAG_OF_BONES] = {"bag_of_bones", "bag-of-bones: SSDR bones each on its nearest joint, no tree"},
    [PM_ROW_GLOBAL_PART] = {"global_part", "PartMM, one global part"},
    [PM_ROW_NO_PYRAMID] = {"no_pyramid", "PartMM, no pyramid (1 level)"},
    [PM_ROW_K1] = {"k1", "PartMM, k = 1"},
    [PM_ROW_PART_ALIGN] = {"part_align", "PartMM, one SVD alignment per part instead of per bone"},
    [PM_ROW_MLP] = {"mlp", "MLP regressor R_J -> T_B (root frame), trained on the rig's motion"},
    [PM_ROW_GRU] = {"gru", "GRU regressor R_J -> T_B (root frame), trained on the rig's motion"},
    [PM_ROW_ORACLE] = {"oracle_ik_skin", "reference: each SSDR bone rigidly fitted to the held-out points it dominates"},
    [PM_ROW_RIG_OWN] = {"rig_own", "the rig's own SSDR transforms (--motion train only: what a query equal to the database must give)"},
    [PM_ROW_MATCH_ROOT] = {"match_root", "PartMM, the root's rotation (global orientation) counted in the matching"},
    [PM_ROW_TRUTH] = {"truth", "reference: the Gaussians at their ground-truth positions (RMSE 0: the renders' own PSNR/SSIM)"},
};

/* the scored views rendered with the Gaussians at their true positions (score's ref_gs); NULL
 * without views (or out of memory: *oom) */
static float *truth_renders(const PmBenchInputs *in, bool *oom) {
    const DsDnerfSplit *sv = in->views;
    *oom = false;
    if (!sv || !sv->n) return NULL;
    float *ref_gs = malloc(sizeof(float) * sv->n * sv->height * sv->width * 3);
    int64_t n = in->rig->n;
    for (int v = 0; ref_gs && v < sv->n; v++) {
        int f = view_frame(&sv->views[v], in->Q);
        if (f % in->every) continue;
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = pm_canon_render(in->canon, in->truth + (int64_t)f * n * 3, &sv->views[v].cam);
        int64_t np = (int64_t)sv->height * sv->width * 3;
        double *px = malloc(sizeof(double) * np);
        if (px) {
            tensor_to_f64_array(img, px);
            /* clamped as gs_psnr clamps the image it scores, so the truth scores +inf */
            for (int64_t k = 0; k < np; k++) ref_gs[v * np + k] = (float)(px[k] < 0 ? 0 : px[k] > 1 ? 1 : px[k]);
        }
        tensor_scope_end(sc);
        if (!px) free(ref_gs), ref_gs = NULL;
        free(px);
    }
    *oom = !ref_gs;
    return ref_gs;
}

/* the reference row: each bone's rigid fit to the truth points it dominates (per frame, per
 * bone). Not an upper bound: LBS blends bones, so a bone fitted on its own points alone can do
 * worse than a synthesized T_B (the snake: 1.52% vs PartMM's 0.48%). -1: out of memory */
static int oracle_transforms(const PmRig *rig, int Q, const float *truth, float *tb) {
    int64_t n = rig->n;
    int B = rig->B;
    /* each point's dominant bone (the first of equal weights), and the points of each bone */
    int32_t *best = malloc(sizeof(int32_t) * n);
    double *p = malloc(sizeof(double) * (n + 1) * 3), *q = malloc(sizeof(double) * (n + 1) * 3);
    if (!best || !p || !q) {
        free(best), free(p), free(q);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        best[i] = 0;
        for (int c = 1; c < B; c++)
            if (rig->weights[i * B + c] > rig->weights[i * B + best[i]]) best[i] = c;
    }
    for (int t = 0; t < Q; t++)
        for (int b = 0; b < B; b++) {
            int64_t m = 0;
            for (int64_t i = 0; i < n; i++) {
                if (best[i] != b) continue;
                for (int k = 0; k < 3; k++) p[m * 3 + k] = rig->points[i * 3 + k], q[m * 3 + k] = truth[((int64_t)t * n + i) * 3 + k];
                m++;
            }
            double T[12];
            sb_kabsch(m, p, q, NULL, T);
            for (int k = 0; k < 12; k++) tb[((int64_t)t * B + b) * 12 + k] = (float)T[k];
        }
    free(best), free(p), free(q);
    return 0;
}

int pm_bench_run(const PmBenchInputs *in, PmBenchRow rows[PM_BENCH_ROWS], char *err, size_t errlen) {
    const PmRig *rig = in->rig;
    int Q = in->Q, B = rig->B, J = rig->J;
    int64_t n = rig->n;
    memcpy(rows, ROWS, sizeof ROWS);
    rows[PM_ROW_PARTMM].seconds = in->partmm_seconds;
    rows[PM_ROW_MLP].skip = rows[PM_ROW_GRU].skip = !in->regress;
    rows[PM_ROW_RIG_OWN].skip = !in->own_tb;
    bool oom;
    float *ref_gs = truth_renders(in, &oom);
    float *S = malloc(sizeof(float) * Q * J * 12), *w1 = calloc((size_t)n * J, sizeof(float));
    float *tb2 = malloc(sizeof(float) * Q * B * 12), *pos = malloc(sizeof(float) * Q * n * 3);
    int32_t *bj = malloc(sizeof(int32_t) * B), *bind = malloc(sizeof(int32_t) * n);
    int rc = 0;
    if (oom || !S || !w1 || !tb2 || !pos || !bj || !bind) {
        rc = base_errf(err, errlen, "out of memory");
        goto done;
    }
#define SCORE(r) score(&rows[r], pos, Q, n, in->truth, in->diag, in->canon, in->views, in->every, ref_gs)
    pm_lbs_frames(Q, n, B, rig->points, rig->weights, in->partmm_tb, pos);
    SCORE(PM_ROW_PARTMM);
    /* LBS: each point rigidly on the joint it is bound to */
    pm_skin_transforms(J, rig->rest, rig->parents, Q, in->qrot, in->qtrans, S);
    pm_bind_points(J, rig->rest, rig->parents, n, rig->points, bind);
    for (int64_t i = 0; i < n; i++) w1[i * J + bind[i]] = 1;
    pm_lbs_frames(Q, n, J, rig->points, w1, S, pos);
    SCORE(PM_ROW_LBS);
    /* bag-of-bones: each SSDR bone on its nearest joint */
    pm_bone_joints(rig, bj);
    for (int t = 0; t < Q; t++)
        for (int b = 0; b < B; b++) memcpy(tb2 + ((int64_t)t * B + b) * 12, S + ((int64_t)t * J + bj[b]) * 12, 48);
    pm_lbs_frames(Q, n, B, rig->points, rig->weights, tb2, pos);
    SCORE(PM_ROW_BAG_OF_BONES);
    /* the PartMM ablations */
    static const PmBenchRowId ABLATIONS[] = {PM_ROW_GLOBAL_PART, PM_ROW_NO_PYRAMID, PM_ROW_K1, PM_ROW_PART_ALIGN, PM_ROW_MATCH_ROOT};
    for (size_t a = 0; a < sizeof ABLATIONS / sizeof *ABLATIONS; a++) {
        PmBenchRowId r = ABLATIONS[a];
        PmOptions ab = *in->options;
        if (r == PM_ROW_MATCH_ROOT) ab.match_root = !in->options->match_root;
        if (r == PM_ROW_PART_ALIGN) ab.align = PM_ALIGN_PART;
        if (r == PM_ROW_GLOBAL_PART) ab.global_part = 1;
        if (r == PM_ROW_NO_PYRAMID) ab.levels = 1;
        if (r == PM_ROW_K1) ab.k = 1;
        double w = base_now();
        if (pm_synthesize(in->db, Q, in->qrot, in->qtrans, &ab, tb2, err, errlen)) {
            rc = -1;
            goto done;
        }
        rows[r].seconds = base_now() - w;
        pm_lbs_frames(Q, n, B, rig->points, rig->weights, tb2, pos);
        SCORE(r);
    }
    /* the learned baselines */
    for (int r = PM_ROW_MLP; r <= PM_ROW_GRU; r++) {
        if (rows[r].skip) continue;
        if (in->progress) in->progress(in->user, rows[r].name);
        if (regress_row(&in->regress_options, r == PM_ROW_MLP ? PM_REGRESS_MLP : PM_REGRESS_GRU, rig, Q, in->qrot, S, tb2,
                        &rows[r].seconds, err, errlen)) {
            rc = -1;
            goto done;
        }
        pm_lbs_frames(Q, n, B, rig->points, rig->weights, tb2, pos);
        SCORE(r);
    }
    if (oracle_transforms(rig, Q, in->truth, tb2)) {
        rc = base_errf(err, errlen, "out of memory");
        goto done;
    }
    pm_lbs_frames(Q, n, B, rig->points, rig->weights, tb2, pos);
    SCORE(PM_ROW_ORACLE);
    if (in->own_tb) {
        pm_lbs_frames(Q, n, B, rig->points, rig->weights, in->own_tb, pos);
        SCORE(PM_ROW_RIG_OWN);
    }
    /* the ceiling of the image metrics: one Gaussian per point can render the truth only so well
     * (fixed isotropic size against a rasterized textured mesh), so a row's PSNR is read against
     * this one, not against infinity */
    score(&rows[PM_ROW_TRUTH], in->truth, Q, n, in->truth, in->diag, in->canon, in->views, in->every, ref_gs);
#undef SCORE
done:
    free(S), free(w1), free(tb2), free(pos), free(bj), free(bind), free(ref_gs);
    return rc;
}
