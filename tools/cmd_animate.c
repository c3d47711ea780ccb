/* tools/cmd_animate.c — `anima animate`: a Skelebones rig (rig.h5) driven by a novel motion.
 * The motion's joint rotations on the rig's extracted skeleton come from the benchmark's held-out
 * motion (IK on its ground-truth mesh sequence only, models/partmm/rig.h); PartMM
 * (models/partmm/partmm.h) synthesizes the free-form bones' transforms from the rig's own
 * motion; the canonical Gaussians (one per rest point of the rig, colored by the benchmark's
 * texture) follow by LBS with the SSDR weights. Writes per-frame Gaussian PLYs, renders (PNG and
 * GIF) from a benchmark camera or any eye point, and DIR/animation.h5 (the synthesized bone
 * transforms and the pose); --eval adds the baselines and ablations on the held-out motion
 * (DIR/eval.json and a table on stdout). */
#include <float.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "base/errbuf.h"
#include "base/h5file.h"
#include "datasets/mesh/gaussian_ply.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "datasets/motion/motion.h"
#include "datasets/motion/rig.h"
#include "datasets/render/gif.h"
#include "datasets/render/video.h"
#include "datasets/render/image.h"
#include "models/gaussians/appearance.h"
#include "models/gaussians/fit.h"
#include "models/gaussians/rasterize.h"
#include "models/gs4d/gs4d.h"
#include "models/partmm/partmm.h"
#include "models/partmm/regress.h"
#include "models/skelebones/cluster.h"
#include "models/partmm/rig.h"
#include "models/partmm/tie.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"
#include "tools/cmd_animate_phys.h"

#define NAME "anima animate"

typedef struct {
    struct {
        int64_t patch, k, levels;
        double lambda, power;
        bool global_part, match_root;
        char keys[16], align[16];
    } partmm;
    struct {
        int64_t steps, points;
        double lr, lambda;
        char method[16];
    } ik;
    struct {
        int64_t fps, view;
        double scale, opacity, fov;
    } render;
    struct {
        int64_t every, val_frames, db_frames;
        bool regress;
    } eval;
    struct {
        int64_t hidden, layers, window, steps, batch, seed;
        double lr;
    } regress;
    struct {
        bool fit, normal_offset;
        int64_t steps, frame_every, seed;
        double lr_color, lr_scale, lr_opacity, lr_offset, lambda;
    } appearance;
} AnimConfig;

#define NO_RANGE .min = 1, .max = 0
static const char *const KEY_CHOICES[] = {"refit", "rig", NULL};
static const char *const ALIGN_CHOICES[] = {"bone", "part", "none", NULL};
#define F(sec, name) offsetof(AnimConfig, sec.name) - offsetof(AnimConfig, sec)
static const DsConfigField PARTMM_FIELDS[] = {
    {"patch", DS_CFG_INT, F(partmm, patch), "7", 1, 1000, .help = "p: frames per database patch (paper 7)"},
    {"k", DS_CFG_INT, F(partmm, k), "7", 1, 64, .help = "nearest patches per part and window (paper 7)"},
    {"levels", DS_CFG_INT, F(partmm, levels), "5", 1, 12, .help = "temporal pyramid levels, level l downsampled by 2^(levels-l) (paper 5; 1: no pyramid)"},
    {"lambda", DS_CFG_FLOAT, F(partmm, lambda), "0.7", 0, 1, .help = "coarse-to-fine weight: T(l+1) = (1-lambda) T(l) + lambda Tbar(l) (paper 0.7)"},
    {"power", DS_CFG_FLOAT, F(partmm, power), "2", 0, 16, .help = "Shepard weights of the k matches: distance^-power"},
    {"align", DS_CFG_STRING, F(partmm, align), "\"bone\"", NO_RANGE, .size = 16, .choices = ALIGN_CHOICES,
     .help = "rigid alignment of each match to the query: bone (per bone, over the joints driving it), part (one SVD rotation per part) or none"},
    {"global_part", DS_CFG_BOOL, F(partmm, global_part), "false", NO_RANGE, .help = "one part of every joint (the ablation)"},
    {"match_root", DS_CFG_BOOL, F(partmm, match_root), "false", NO_RANGE, .help = "the root's rotation (global orientation) counts in the matching distance (the ablation; default: the articulation alone, the alignment carries the placement)"},
    {"keys", DS_CFG_STRING, F(partmm, keys), "\"refit\"", NO_RANGE, .size = 16, .choices = KEY_CHOICES,
     .help = "the database's joint rotations: refit (the rig's own SSDR motion posed by the same IK as the query, so keys and queries come from one estimator) or rig (rig.h5 ik/rotations)"},
    {0}};
static const char *const IK_METHODS[] = {"fit", "adam", "fit+adam", NULL};
static const DsConfigField IK_FIELDS[] = {
    {"method", DS_CFG_STRING, F(ik, method), "\"fit+adam\"", NO_RANGE, .size = 16, .choices = IK_METHODS,
     .help = "the pose of a mesh sequence on the rig's tree (the query and the database's keys): fit (closed form: each joint's rotation the rigid fit of its bound points), adam (iterative IK, models/skelebones/ik.h, the steps/lr/lambda/points below, each frame from the previous) or fit+adam (the iterative IK started at every frame from the closed form)"},
    {"steps", DS_CFG_INT, F(ik, steps), "200", 1, 100000, .help = "Adam steps per frame of the IK (of the novel motion and of the database's keys)"},
    {"points", DS_CFG_INT, F(ik, points), "400", 1, 1e9, .help = "points of the IK's L2 term, evenly strided"},
    {"lr", DS_CFG_FLOAT, F(ik, lr), "0.03", 1e-6, 10, .help = "Adam learning rate of the IK"},
    {"lambda", DS_CFG_FLOAT, F(ik, lambda), "1", 0, 1e9, .help = "weight of the IK's point term"},
    {0}};
static const DsConfigField RENDER_FIELDS[] = {
    {"fps", DS_CFG_INT, F(render, fps), "25", 1, 100, .help = "frames per second of the GIF and MP4"},
    {"view", DS_CFG_INT, F(render, view), "0", 0, 1000, .help = "which held-out benchmark camera renders the frames (without --eye)"},
    {"scale", DS_CFG_FLOAT, F(render, scale), "0.6", 1e-3, 100, .help = "Gaussian standard deviation x the mean edge length of the rest mesh"},
    {"opacity", DS_CFG_FLOAT, F(render, opacity), "0.95", 1e-3, 0.999999, .help = "opacity of every Gaussian"},
    {"fov", DS_CFG_FLOAT, F(render, fov), "40", 1, 170, .help = "vertical field of view of an --eye camera (degrees)"},
    {0}};
static const DsConfigField EVAL_FIELDS[] = {
    {"every", DS_CFG_INT, F(eval, every), "1", 1, 100000, .help = "--eval renders every n-th frame of each held-out view"},
    {"val_frames", DS_CFG_INT, F(eval, val_frames), "16", 1, 100000, .help = "--motion val: the last n training frames are the query, the database the frames before"},
    {"db_frames", DS_CFG_INT, F(eval, db_frames), "0", 0, 100000, .help = "--motion heldout or a BVH: the database keeps the rig's first n frames (0: all), so one rig shows how PartMM scales with its database"},
    {"regress", DS_CFG_BOOL, F(eval, regress), "true", NO_RANGE, .help = "--eval trains and scores the MLP and GRU regressors (minutes; false: their rows are skipped)"},
    {0}};
static const DsConfigField REGRESS_FIELDS[] = {
    {"hidden", DS_CFG_INT, F(regress, hidden), "256", 1, 65536, .help = "--eval's MLP/GRU baselines: hidden width"},
    {"layers", DS_CFG_INT, F(regress, layers), "2", 1, 64, .help = "hidden layers (MLP) or stacked GRU layers"},
    {"window", DS_CFG_INT, F(regress, window), "7", 1, 1000, .help = "frames of context (causal), PartMM's patch length"},
    {"steps", DS_CFG_INT, F(regress, steps), "2000", 1, 1e9, .help = "Adam steps"},
    {"batch", DS_CFG_INT, F(regress, batch), "64", 1, 1e6, .help = "frames per minibatch"},
    {"lr", DS_CFG_FLOAT, F(regress, lr), "1e-3", 1e-9, 10, .help = "Adam learning rate"},
    {"seed", DS_CFG_INT, F(regress, seed), "0", 0, 9e15, .help = "initialization and minibatch seed"},
    {0}};
static const DsConfigField APPEARANCE_FIELDS[] = {
    {"fit", DS_CFG_BOOL, F(appearance, fit), "false", NO_RANGE,
     .help = "fit the canonical Gaussians' colors, sizes and opacities (one isotropic Gaussian per ground-truth vertex) to the benchmark's training views of its training motion, each view with the Gaussians at that frame's ground-truth vertices (models/gaussians/appearance.h); false: the benchmark's albedo, render.scale and render.opacity"},
    {"normal_offset", DS_CFG_BOOL, F(appearance, normal_offset), "true", NO_RANGE,
     .help = "with fit: each Gaussian sits at its vertex + s x the vertex normal of the posed mesh (every row's own geometry), s fitted per Gaussian (sharper silhouettes); false: at the vertex"},
    {"steps", DS_CFG_INT, F(appearance, steps), "2000", 0, 1e9, .help = "views rendered (one per Adam step)"},
    {"frame_every", DS_CFG_INT, F(appearance, frame_every), "1", 1, 100000, .help = "use the training views of every n-th training frame"},
    {"seed", DS_CFG_INT, F(appearance, seed), "0", 0, 9e15, .help = "the order of the views"},
    {"lr_color", DS_CFG_FLOAT, F(appearance, lr_color), "0.01", 0, 10, .help = "Adam rate of the plain RGB colors"},
    {"lr_scale", DS_CFG_FLOAT, F(appearance, lr_scale), "0.005", 0, 10, .help = "Adam rate of the log standard deviations"},
    {"lr_opacity", DS_CFG_FLOAT, F(appearance, lr_opacity), "0.05", 0, 10, .help = "Adam rate of the opacity logits"},
    {"lr_offset", DS_CFG_FLOAT, F(appearance, lr_offset), "1e-4", 0, 10, .help = "Adam rate of the normal offsets (scene units)"},
    {"lambda", DS_CFG_FLOAT, F(appearance, lambda), "0.2", 0, 1, .help = "D-SSIM weight of the loss (3DGS 0.2)"},
    {0}};
static const DsConfigField ANIM_SCHEMA[] = {
    {"partmm", DS_CFG_OBJECT, offsetof(AnimConfig, partmm), .fields = PARTMM_FIELDS},
    {"ik", DS_CFG_OBJECT, offsetof(AnimConfig, ik), .fields = IK_FIELDS},
    {"render", DS_CFG_OBJECT, offsetof(AnimConfig, render), .fields = RENDER_FIELDS},
    {"eval", DS_CFG_OBJECT, offsetof(AnimConfig, eval), .fields = EVAL_FIELDS},
    {"regress", DS_CFG_OBJECT, offsetof(AnimConfig, regress), .fields = REGRESS_FIELDS},
    {"appearance", DS_CFG_OBJECT, offsetof(AnimConfig, appearance), .fields = APPEARANCE_FIELDS},
    {0}};

static double cpu_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }
static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static PmOptions pm_opts(const AnimConfig *c) {
    PmOptions o;
    pm_options_defaults(&o);
    o.patch = (int)c->partmm.patch, o.k = (int)c->partmm.k, o.levels = (int)c->partmm.levels;
    o.lambda = c->partmm.lambda, o.power = c->partmm.power, o.global_part = c->partmm.global_part, o.match_root = c->partmm.match_root;
    o.align = !strcmp(c->partmm.align, "bone") ? PM_ALIGN_BONE : !strcmp(c->partmm.align, "part") ? PM_ALIGN_PART : PM_ALIGN_NONE;
    return o;
}

/* The canonical Gaussians: one isotropic Gaussian per rest point, its color the benchmark's
 * albedo, σ = scale × the rest mesh's mean edge length */
typedef struct {
    int64_t n;
    float *colors;    /* n × 3 */
    float *log_scale; /* n (isotropic log standard deviations) */
    float *logit;     /* n opacity logits */
    /* appearance.normal_offset: Gaussian i renders at its position + offset_i × the vertex normal
     * of the mesh (faces over the n points) at the positions rendered; NULL: at its position */
    float *offset;
    int64_t nf;
    const int32_t *faces;
} Canon;

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

/* Renders n Gaussians at pos (n × 3) over white: (H, W, 3) f32 in the current scope */
static Tensor *render_points(const Canon *c, const float *pos, const DsCamera *cam) {
    int64_t n = c->n;
    float *sc = malloc(sizeof(float) * n), *op = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++) sc[i] = c->log_scale[i], op[i] = c->logit[i];
    float *moved = NULL;
    if (c->offset) { /* along the posed mesh's normals */
        moved = malloc(sizeof(float) * n * 3);
        gs_appearance_vertex_normals(n, pos, c->nf, c->faces, moved);
        for (int64_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) moved[i * 3 + k] = pos[i * 3 + k] + c->offset[i] * moved[i * 3 + k];
    }
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

static int write_ply(const char *path, const Canon *c, const float *pos, char *err, size_t errlen) {
    DsGaussians g;
    if (ds_gaussians_alloc(&g, c->n, 0)) return base_errf(err, errlen, "%s: out of memory", path);
    const double C0 = 0.28209479177387814; /* SH band 0: rgb = C0 f + 0.5 */
    for (int64_t i = 0; i < c->n; i++) {
        for (int k = 0; k < 3; k++) {
            g.xyz[i * 3 + k] = pos[i * 3 + k];
            g.sh[i * 3 + k] = (float)((c->colors[i * 3 + k] - 0.5) / C0);
            g.scale[i * 3 + k] = c->log_scale[i];
        }
        g.opacity[i] = c->logit[i];
        g.rot[i * 4] = 1, g.rot[i * 4 + 1] = g.rot[i * 4 + 2] = g.rot[i * 4 + 3] = 0;
    }
    int rc = ds_gaussians_write(path, &g, err, errlen);
    ds_gaussians_free(&g);
    return rc;
}

static int write_png(const char *path, const Tensor *img, char *err, size_t errlen) {
    const float *p = tensor_f32(img);
    DsImageF im = {(int)img->shape[1], (int)img->shape[0], 3, (float *)p};
    return ds_imagef_write(path, &im, err, errlen);
}

/* animation.h5: the synthesized bone transforms and the pose that drove them */
static int write_anim_h5(const char *path, int F, int B, int J, const float *tb, const float *rot, const float *trans,
                         int FK, const float *krot, const float *ktrans, const char *motion, const char *rig, char *err,
                         size_t errlen) {
    char tmp[4200];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    hsize_t dt[4] = {(hsize_t)F, (hsize_t)B, 3, 4}, dq[3] = {(hsize_t)F, (hsize_t)J, 4}, dtr[2] = {(hsize_t)F, 3};
    bool ok = base_h5_write_checked(f, "bones/transforms", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, dt, tb, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "pose/rotations", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dq, rot, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "pose/translation", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dtr, trans, 1 << 20, false) == 0;
    /* the database's keys (the refit IK of the rig's frames), so --reuse-pose skips both IKs */
    hsize_t dk[3] = {(hsize_t)FK, (hsize_t)J, 4}, dkt[2] = {(hsize_t)FK, 3};
    ok = ok && base_h5_write_checked(f, "keys/rotations", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dk, krot, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "keys/translation", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dkt, ktrans, 1 << 20, false) == 0;
    ok = ok && base_h5_attr_str(f, "producer", "anima animate (PartMM)") == 0;
    ok = ok && base_h5_attr_str(f, "motion", motion) == 0 && base_h5_attr_str(f, "rig", rig) == 0;
    ok = ok && base_h5_attr_i64(f, "frames", F) == 0 && base_h5_attr_i64(f, "bones", B) == 0;
    return base_h5_save_end(f, tmp, path, ok, "animation", err, errlen);
}

/* The pose of F frames of the rig's points (the query, and the database's keys: one estimator) */
static int pose_of(const AnimConfig *cfg, const SbIkOptions *io, const PmRig *rig, int F, const float *observed, float *rot,
                   float *trans, char *err, size_t errlen) {
    if (!strcmp(cfg->ik.method, "adam")) return pm_pose_from_points(rig, F, observed, cfg->ik.points, io, rot, trans, err, errlen);
    if (pm_pose_by_fits(rig, F, observed, rot, trans, err, errlen)) return -1;
    if (!strcmp(cfg->ik.method, "fit")) return 0;
    /* fit+adam: the iterative IK refines the closed-form pose from where it is, frame by frame */
    SbIkOptions o = *io;
    o.init_rotations = rot, o.init_translation = trans;
    return pm_pose_from_points(rig, F, observed, cfg->ik.points, &o, rot, trans, err, errlen);
}

/* --reuse-pose: the query pose and the database keys of an earlier run's animation.h5 (same rig,
 * same motion), so a rerun with other PartMM options skips both IKs. 0, or -1 with err. */
static int read_pose_h5(const char *path, const char *motion, int Q, int F, int J, float *qrot, float *qtrans, float *krot,
                        float *ktrans, char *err, size_t errlen) {
    hid_t f = base_h5_open_read(path, "an animation.h5 of anima animate", err, errlen);
    if (f < 0) return -1;
    char *m = base_h5_attr_read_str(f, "motion", 4096);
    int rc = 0;
    if (!m || strcmp(m, motion))
        rc = base_errf(err, errlen, "%s: made for --motion %s, not %s", path, m ? m : "(none)", motion);
    free(m);
    struct {
        const char *name;
        int rank;
        int64_t dims[3];
        float *dst;
    } ds[4] = {{"pose/rotations", 3, {Q, J, 4}, qrot}, {"pose/translation", 2, {Q, 3}, qtrans},
               {"keys/rotations", 3, {F, J, 4}, krot}, {"keys/translation", 2, {F, 3}, ktrans}};
    for (int k = 0; k < 4 && !rc; k++) {
        void *buf = NULL;
        int64_t want[3];
        memcpy(want, ds[k].dims, sizeof want);
        rc = base_h5_read_typed(f, path, ds[k].name, ds[k].rank, want, H5T_NATIVE_FLOAT, 4, &buf, err, errlen);
        if (!rc) {
            int64_t cnt = 1;
            for (int d = 0; d < ds[k].rank; d++) cnt *= ds[k].dims[d];
            memcpy(ds[k].dst, buf, sizeof(float) * cnt);
        }
        free(buf);
    }
    H5Fclose(f);
    return rc;
}

/* ---- the evaluation: every method's point positions on the held-out frames ---------------- */

typedef struct {
    const char *name, *what;
    double rmse, psnr, ssim;
    double psnr_gs; /* PSNR against the render of the same Gaussians at their true positions */
    double seconds;
    int skip; /* not run (the regressors without eval.regress; the rig's own row off the training motion) */
} Row;

/* frame of a test view: its time × (F − 1), rounded */
static int view_frame(const DsDnerfView *v, int F) {
    int f = (int)lround(v->time * (F - 1));
    return f < 0 ? 0 : f >= F ? F - 1 : f;
}

/* ref_gs (views->n × H × W × 3, or NULL): each scored view rendered with the Gaussians at their
 * true positions. PSNR against the benchmark's images mixes two errors: where the points are,
 * and how well fixed isotropic Gaussians stand in for a rasterized textured mesh — measured,
 * the second dominates (the truth's own row scores below LBS on the quadruped). PSNR against
 * ref_gs keeps the first alone: 0 error gives +inf. */
static void score(Row *row, const float *pos, int F, int64_t n, const float *gt_v, double diag, const Canon *canon,
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
        Tensor *img = render_points(canon, pos + (int64_t)f * n * 3, &vw->cam);
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

/* appearance.fit: what was fitted and how well, for the table and eval.json */
typedef struct {
    int views;                     /* training views used */
    double loss;                   /* the fit's mean loss over its last steps */
    double val_before, val_after;  /* PSNR on the benchmark's val split (training motion, other cameras) */
    double cpu;                    /* CPU seconds of the fit */
} AppearanceInfo;

static void appearance_progress(int64_t step, double loss, void *user) {
    (void)user;
    fprintf(stderr, NAME ": appearance step %lld: loss %.4f\n", (long long)step, loss);
}

/* Mean PSNR of the canonical Gaussians at the training motion's ground-truth vertices over the
 * benchmark split's views of frames below max_frame (NAN: none) */
static double split_psnr(const Canon *c, const DsMotionGt *train, const DsDnerfSplit *s, int max_frame) {
    double ps = 0;
    int m = 0;
    for (int v = 0; v < s->n; v++) {
        int f = view_frame(&s->views[v], train->nframes);
        if (f >= max_frame) continue;
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = render_points(c, train->vertices + (int64_t)f * train->nv * 3, &s->views[v].cam);
        int H = s->height, W = s->width;
        Tensor *rt = over_white(s->views[v].rgba, H, W);
        if (rt) ps += gs_psnr(img, rt), m++;
        tensor_scope_end(sc);
    }
    return m ? ps / m : NAN;
}

/* appearance.fit: the canonical Gaussians' colors, sizes and opacities fitted to the benchmark's
 * training views of its training motion (frames below max_frame: --motion val keeps its query
 * frames out), each view with the Gaussians at that frame's ground-truth vertices. Never the
 * held-out motion or the held-out cameras: the val split (other cameras, training motion) only
 * reports how well the fit generalizes. 0, or -1 with err. */
static int fit_appearance(const AnimConfig *cfg, const char *bench_dir, const DsMotionGt *train, int max_frame, Canon *c,
                          bool progress, AppearanceInfo *info, char *err, size_t errlen) {
    DsDnerfSplit tv = {0}, vv = {0};
    if (ds_dnerf_load(bench_dir, "train", &tv, err, errlen)) return -1;
    GsAppearanceView *av = malloc(sizeof(GsAppearanceView) * (tv.n ? tv.n : 1));
    if (!av) {
        ds_dnerf_free(&tv);
        return base_errf(err, errlen, "out of memory");
    }
    /* normal offsets: the training meshes' vertex normals, per frame */
    float *nrm = NULL;
    if (cfg->appearance.normal_offset) {
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
        if (f >= max_frame || f % cfg->appearance.frame_every) continue;
        av[m++] = (GsAppearanceView){&tv.views[v].cam, train->vertices + (int64_t)f * train->nv * 3, tv.views[v].rgba,
                                     nrm ? nrm + (int64_t)f * train->nv * 3 : NULL};
    }
    int rc = 0;
    if (!m) rc = base_errf(err, errlen, "appearance.fit: %s has no training views of the training motion's frames", bench_dir);
    bool have_val = !rc && ds_dnerf_load(bench_dir, "val", &vv, err, errlen) == 0;
    info->val_before = have_val ? split_psnr(c, train, &vv, max_frame) : NAN;
    if (!rc) {
        GsAppearanceConfig ac = gs_appearance_defaults();
        ac.steps = cfg->appearance.steps, ac.seed = (uint64_t)cfg->appearance.seed, ac.lambda = cfg->appearance.lambda;
        ac.lr_color = cfg->appearance.lr_color, ac.lr_scale = cfg->appearance.lr_scale, ac.lr_opacity = cfg->appearance.lr_opacity;
        ac.normal_offset = cfg->appearance.normal_offset, ac.lr_offset = cfg->appearance.lr_offset;
        float *off = NULL;
        if (ac.normal_offset && !(off = calloc((size_t)c->n, sizeof(float)))) rc = base_errf(err, errlen, "out of memory");
        double c0 = cpu_seconds();
        if (!rc)
            info->loss = gs_appearance_fit(c->n, m, av, &ac, c->colors, c->log_scale, c->logit, off,
                                           progress ? appearance_progress : NULL, 200, NULL, err, errlen);
        info->cpu = cpu_seconds() - c0, info->views = m;
        if (rc || info->loss < 0) rc = -1, free(off);
        else c->offset = off; /* render_points moves the Gaussians along the normals from here on */
    }
    info->val_after = have_val && !rc ? split_psnr(c, train, &vv, max_frame) : NAN;
    free(av), free(nrm);
    ds_dnerf_free(&tv), ds_dnerf_free(&vv);
    return rc;
}

static void lbs_all(int F, int64_t n, int B, const float *rest, const float *w, const float *tb, float *out) {
    for (int t = 0; t < F; t++) pm_lbs(n, B, rest, w, tb + (int64_t)t * B * 12, out + (int64_t)t * n * 3);
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

static int regress_row(const AnimConfig *cfg, PmRegressKind kind, const PmRig *rig, int Q, const float *qrot,
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
    PmRegressOptions o = {kind, (int)cfg->regress.hidden, (int)cfg->regress.layers, (int)cfg->regress.window,
                          (int)cfg->regress.steps, (int)cfg->regress.batch, (float)cfg->regress.lr, (uint64_t)cfg->regress.seed};
    double w = wall_seconds();
    PmRegress *r = pm_regress_train(rot, tb, F, J, B, &o, NULL, NULL, err, errlen);
    int rc = r ? pm_regress_predict(r, qr, Q, out, err, errlen) : -1;
    *seconds = wall_seconds() - w;
    if (!rc) root_frame(Q, B, J, Sq, out, 0);
    pm_regress_free(r);
    free(S), free(tb), free(rot), free(qr);
    return rc;
}

/* A BVH on the benchmark character: the character is rebuilt from gt.h5's category and seed (and
 * the grid of its command line, default 96; its mesh must match the benchmark's vertex for
 * vertex), the BVH retargeted onto its named rig (datasets/motion/motion.h: by the mapping JSON
 * map, or without one humanoids by the CMU/Boxing joint names), and the ground-truth rest mesh posed by that rig's LBS with the benchmark's
 * weights: a mesh sequence the extracted skeleton is then fitted to by the same IK as the
 * held-out motion. frames × V × 3 into *out (malloc'd). 0, or -1 with err. */
static int bvh_vertices(const char *gt_path, const DsMotionGt *gt, const char *bvh, const char *map, int frames,
                        float **out, char *err, size_t errlen) {
    *out = NULL;
    int64_t seed = 0, grid = 96;
    hid_t f = base_h5_open_read(gt_path, "the motion benchmark's gt.h5", err, errlen);
    if (f < 0) return -1;
    if (H5Aexists(f, "seed") > 0) {
        hid_t a = H5Aopen(f, "seed", H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_INT64, &seed) < 0) seed = -1;
        if (a >= 0) H5Aclose(a);
    }
    char *cmd = base_h5_attr_read_str(f, "command", 8192);
    H5Fclose(f);
    const char *g = cmd ? strstr(cmd, "--grid ") : NULL;
    if (g) grid = atoll(g + 7);
    free(cmd);
    if (seed < 0 || grid < 16) return base_errf(err, errlen, "%s: cannot read the benchmark's seed and grid", gt_path);
    DsProceduralShape shape;
    if (ds_procedural_make(gt->category, (uint64_t)seed, (int)grid, &shape, err, errlen)) return -1;
    int rc = 0;
    DsMotion m = {0};
    if (shape.mesh.nv != gt->nv || shape.nbones != gt->nbones) {
        rc = base_errf(err, errlen, "%s: the %s of seed %lld at grid %lld has %lld vertices and %d bones, the benchmark %lld and %d",
                       gt_path, gt->category, (long long)seed, (long long)grid, (long long)shape.mesh.nv, shape.nbones,
                       (long long)gt->nv, gt->nbones);
        goto done;
    }
    DsMotionOptions mo = {gt->fps, NULL, -1, map};
    if (ds_motion_make(&shape, bvh, frames, (uint64_t)seed, &mo, &m, err, errlen)) {
        rc = -1;
        goto done;
    }
    float *v = malloc(sizeof(float) * frames * gt->nv * 3);
    double *skin = malloc(sizeof(double) * 16 * shape.nbones);
    if (!v || !skin) {
        free(v), free(skin);
        rc = base_errf(err, errlen, "out of memory");
        goto done;
    }
    for (int t = 0; t < frames; t++) {
        ds_rig_fk(shape.nbones, shape.bones, m.local + (int64_t)t * shape.nbones * 4, m.root + t * 3, NULL, NULL, skin);
        ds_rig_lbs(gt->nv, gt->rest, shape.nbones, gt->weights, skin, v + (int64_t)t * gt->nv * 3);
    }
    free(skin);
    *out = v;
done:
    ds_motion_free(&m);
    ds_procedural_free(&shape);
    return rc;
}

int cmd_animate(int argc, char **argv) {
    const char *map_path = NULL, *physics = NULL;
    const char *rig_path = NULL, *motion = NULL, *out = NULL, *bench = NULL, *config_path = NULL, *eye = NULL;
    const char *reuse = NULL, *gaussians = NULL;
    const char *video = "auto";
    bool do_eval = false, no_ply = false, no_progress = false;
    int64_t bvh_frames = 48;
    CmdArgList sets = {0};
    const CmdArg args[] = {
        {"--rig", CMD_ARG_STRING, &rig_path, "FILE|RUN", "anima skelebones' rig.h5 (with its skeleton and IK), or its run folder (RUN/rig.h5, RUN/rig/rig.h5)", .required = true},
        {"--motion", CMD_ARG_STRING, &motion, "heldout|train|FILE.bvh", "the novel motion: heldout (the benchmark's held-out motion), train (the rig's own training motion: the known-answer check, --eval then also scores the rig's own reconstruction) or a BVH (humanoids: CMU or Boxing joint names; any character with --map), each fitted onto the extracted skeleton by IK on the character's mesh sequence", .required = true},
        {"--gaussians", CMD_ARG_STRING, &gaussians, "FILE.ply|RUN", "canonical Gaussians of a gs4d run (RUN/canonical.ply, or RUN itself; their appearance from RUN/trajectories.h5) for a rig made from its trajectories (anima skelebones --traj RUN/trajectories.h5; pass --bench): tied to the ground-truth surface through the training motion, scored against it (default: one Gaussian per ground-truth vertex, the rig made from gt.h5)"},
        {"--reuse-pose", CMD_ARG_STRING, &reuse, "FILE", "take the query pose and the database keys from an earlier run's animation.h5 (same rig and motion) instead of solving both IKs again"},
        {"--map", CMD_ARG_STRING, &map_path, "FILE.json", "(BVH) a mapping JSON {\"rig bone\": \"BVH joint\", ...} (datasets/motion/motion.h) for BVHs of other joint names or other characters"},
        {"--frames", CMD_ARG_INT, &bvh_frames, "N", "(BVH) frames at the benchmark's frame rate (default 48)", 1, 100000},
        {"--out", CMD_ARG_STRING, &out, "DIR", "writes DIR/gaussians/f*.ply, DIR/frames/f*.png, DIR/animation.{gif,mp4}, DIR/animation.h5", .required = true},
        {"--video", CMD_ARG_CHOICE, &video, "KIND", CMD_VIDEO_HELP " of the frames: DIR/animation.{mp4,gif} (default auto)",
         .choices = DS_VIDEO_KINDS},
        {"--bench", CMD_ARG_STRING, &bench, "DIR", "the motion benchmark the rig was made from (default: the folder of the rig's source gt.h5)"},
        {"--config", CMD_ARG_STRING, &config_path, "FILE", "JSON config (configs/partmm.json); defaults for absent keys"},
        {"--set", CMD_ARG_LIST, &sets, "k=v", "override a config key, e.g. --set partmm.k=1"},
        {"--eye", CMD_ARG_STRING, &eye, "X,Y,Z", "render from this point looking at the character's rest center (default: a held-out benchmark camera)"},
        {"--eval", CMD_ARG_FLAG, &do_eval, NULL, "also score PartMM, its ablations and the baselines on the held-out motion: DIR/eval.json and a table"},
        {"--no-ply", CMD_ARG_FLAG, &no_ply, NULL, "no per-frame PLYs"},
        {"--physics", CMD_ARG_STRING, &physics, "CONFIG.json", "PhysSkin secondary motion on top of the animation (tools/cmd_animate_phys.c; \"\": defaults): DIR/physics.json, DIR/kinetic.png"},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress lines on stderr"},
        {0}};
    const CmdArgSpec spec = {NAME, "--rig RIG --motion heldout --out DIR [options]",
                             "novel-pose animation of a Skelebones rig by PartMM (part-wise motion matching)", args, NULL, 0, 0,
                             ANIM_SCHEMA, "config keys (--config FILE, --set key=value)"};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    AnimConfig cfg;
    if (cmd_args_config(&spec, stderr, config_path, &sets, ANIM_SCHEMA, &cfg)) return 2;
    size_t ml = strlen(motion);
    bool is_bvh = ml > 4 && !strcasecmp(motion + ml - 4, ".bvh");
    bool is_train = !strcmp(motion, "train"), is_val = !strcmp(motion, "val");
    if (strcmp(motion, "heldout") && !is_train && !is_val && !is_bvh)
        return cmd_args_fail(&spec, stderr, "--motion expects heldout, train, val or a .bvh file, got '%s'", motion);
    if (map_path && !is_bvh) return cmd_args_fail(&spec, stderr, "--map applies to --motion FILE.bvh");
    if (gaussians && is_bvh) return cmd_args_fail(&spec, stderr, "--gaussians: the ground truth of a BVH motion's Gaussians is not defined; use --motion heldout|train|val");
    if (gaussians && cfg.appearance.fit) { /* configs/partmm.json turns it on for the ground-truth path */
        fprintf(stderr, NAME ": appearance.fit is off with --gaussians: a gs4d run brings its own appearance\n");
        cfg.appearance.fit = false;
    }
    if (is_val && !do_eval) return cmd_args_fail(&spec, stderr, "--motion val is a check: it needs --eval");
    if (is_bvh && do_eval)
        return cmd_args_fail(&spec, stderr, "--eval scores the held-out motion (it has ground-truth renders): use --motion heldout");
    double eye_p[3] = {0};
    if (eye && sscanf(eye, "%lf,%lf,%lf", &eye_p[0], &eye_p[1], &eye_p[2]) != 3)
        return cmd_args_fail(&spec, stderr, "--eye expects X,Y,Z, got '%s'", eye);

    char err[12288] = "";
    /* run folders stand for their files: --rig RUN (a skelebones run, or the chain's run with
     * rig/rig.h5), --gaussians RUN (a gs4d run, or the chain's with gs4d/canonical.ply) */
    static char rig_file[4096], gs_file[4096];
    if (cmd_run_file(rig_path, (const char *const[]){"rig.h5", "rig/rig.h5", NULL}, rig_file, sizeof rig_file, err, sizeof err) ||
        (gaussians && cmd_run_file(gaussians, (const char *const[]){"canonical.ply", "gs4d/canonical.ply", NULL}, gs_file,
                                   sizeof gs_file, err, sizeof err))) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    rig_path = rig_file;
    if (gaussians) gaussians = gs_file;
    int rc = 1;
    PmRig rig;
    if (pm_rig_load(rig_path, &rig, err, sizeof err)) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    char bench_dir[4096];
    if (bench) {
        snprintf(bench_dir, sizeof bench_dir, "%s", bench);
    } else {
        hid_t f = base_h5_open_read(rig_path, "rig", err, sizeof err);
        char *src = f >= 0 ? base_h5_attr_read_str(f, "source", 4096) : NULL;
        if (f >= 0) H5Fclose(f);
        if (!src || !*src) {
            fprintf(stderr, NAME ": %s records no source; pass --bench DIR\n", rig_path);
            free(src), pm_rig_free(&rig);
            return 2;
        }
        snprintf(bench_dir, sizeof bench_dir, "%s", dirname(src));
        free(src);
    }
    if (cmd_make_dirs(out)) {
        fprintf(stderr, NAME ": cannot create %s\n", out);
        pm_rig_free(&rig);
        return 1;
    }
    DsMotionGt train = {0}, held = {0};
    DsDnerfSplit views = {0};
    float *qrot = NULL, *qtrans = NULL, *tb = NULL, *pos = NULL, *bp_d = NULL;
    double *bone_part = NULL, *bone_joint = NULL;
    float *bvh_v = NULL;
    int32_t *bind = NULL;
    PmDatabase db = {0};
    Canon canon = {0};
    AppearanceInfo ainfo = {0, NAN, NAN, NAN, 0};
    DsGaussians gply = {0};
    PmGaussianTie tie = {0};
    float *targets = NULL, *c_scale = NULL, *c_logit = NULL, *c_col = NULL;
    char path[4600], held_dir[4200];
    snprintf(path, sizeof path, "%s/gt.h5", bench_dir);
    snprintf(held_dir, sizeof held_dir, "%s/heldout", bench_dir);
    if (ds_motion_gt_load(path, &train, err, sizeof err)) goto fail;
    snprintf(path, sizeof path, "%s/gt.h5", held_dir);
    if (ds_motion_gt_load(path, &held, err, sizeof err)) goto fail;
    if (!gaussians && (train.nv != rig.n || held.nv != rig.n)) {
        snprintf(err, sizeof err, "the rig has %lld points, the benchmark %lld vertices: a rig made from %s/gt.h5 is needed",
                 (long long)rig.n, (long long)train.nv, bench_dir);
        goto fail;
    }
    int Q = held.nframes, B = rig.B, J = rig.J;
    const float *observed = held.vertices;
    /* the motion scored by --eval (its ground-truth vertices and its test views) */
    const DsMotionGt *truth = &held;
    const float *truth_v = held.vertices;
    const char *views_dir = held_dir;
    int own0 = 0; /* the first rig frame the query replays (train, val) */
    if (is_train) Q = train.nframes, observed = train.vertices, truth = &train, truth_v = train.vertices, views_dir = bench_dir;
    const int rig_frames_all = rig.F; /* before val or db_frames shorten the database */
    if (is_val) {
        /* the validation split of the training motion: the database keeps the rig's first F − V
         * frames, the query is the last V (a motion the database never saw, from training data
         * only: where constants may be chosen); scored on geometry alone (no renders) */
        int V = (int)cfg.eval.val_frames;
        if (V < 1 || V > rig.F - 2 || rig.F != train.nframes) {
            snprintf(err, sizeof err, "eval.val_frames %d: the rig has %d frames (the benchmark's training motion %d)", V, rig.F,
                     train.nframes);
            goto fail;
        }
        own0 = rig.F - V, rig.F -= V, Q = V, truth = &train;
        observed = train.vertices + (int64_t)own0 * rig.n * 3, truth_v = observed;
    }
    if (cfg.eval.db_frames > 0 && !is_train && !is_val) {
        /* a shorter database on the same rig (the rig's first frames, keys and transforms alike):
         * a rig made from more frames is also a different rig, so this separates the two */
        if (cfg.eval.db_frames > rig.F || cfg.eval.db_frames < 2) {
            snprintf(err, sizeof err, "eval.db_frames %lld: the rig has %d frames", (long long)cfg.eval.db_frames, rig.F);
            goto fail;
        }
        rig.F = (int)cfg.eval.db_frames;
    }
    if (gaussians) {
        /* the gs4d run's Gaussians: their ground-truth positions in the query's frames stand in for
         * the benchmark's vertices (the IK's observations and the RMSE's truth) */
        if (ds_gaussians_read(gaussians, &gply, err, sizeof err)) goto fail;
        if (gply.n != rig.n) {
            snprintf(err, sizeof err, "%s has %lld Gaussians, the rig %lld points: a rig made from the same run's trajectories is needed",
                     gaussians, (long long)gply.n, (long long)rig.n);
            goto fail;
        }
        double md = 0;
        for (int64_t k = 0; k < rig.n * 3; k++) md = fmax(md, fabs((double)gply.xyz[k] - rig.points[k]));
        if (md > 1e-4) {
            snprintf(err, sizeof err, "%s: the means are not the rig's rest points (off by %g): a rig made from the same run's trajectories is needed", gaussians, md);
            goto fail;
        }
        if (pm_gaussian_tie(&rig, rig_frames_all, &train, &tie, err, sizeof err)) goto fail;
        const DsMotionGt *m = is_train || is_val ? &train : &held;
        targets = malloc(sizeof(float) * Q * rig.n * 3);
        if (!targets) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        pm_gaussian_targets(&tie, rig.n, m, own0, Q, targets);
        observed = truth_v = targets;
    }
    if (is_bvh) {
        snprintf(path, sizeof path, "%s/gt.h5", bench_dir);
        if (bvh_vertices(path, &train, motion, map_path, (int)bvh_frames, &bvh_v, err, sizeof err)) goto fail;
        Q = (int)bvh_frames, observed = bvh_v;
    }
    int64_t n = rig.n;
    /* canonical Gaussians */
    canon.n = n;
    c_scale = malloc(sizeof(float) * n), c_logit = malloc(sizeof(float) * n), c_col = malloc(sizeof(float) * n * 3);
    if (!c_scale || !c_logit || !c_col) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    bool traj_appearance = false;
    if (gaussians) { /* the appearance the run renders with: its frames' mean, from trajectories.h5 beside the PLY */
        char tp[4096];
        const char *sl = strrchr(gaussians, '/');
        snprintf(tp, sizeof tp, "%.*strajectories.h5", sl ? (int)(sl - gaussians + 1) : 0, gaussians);
        char e2[1024];
        if (access(tp, R_OK) == 0) {
            if (gs4d_trajectories_appearance(tp, n, c_scale, c_logit, c_col, e2, sizeof e2)) {
                snprintf(err, sizeof err, "%s", e2);
                goto fail;
            }
            traj_appearance = true;
            printf("appearance: the Gaussians' scales, opacities and colors averaged over the %s frames\n", tp);
        } else {
            fprintf(stderr, NAME ": no %s beside %s: the canonical set's own scales and opacities (which the "
                    "run's deformation changes frame by frame) are used\n", tp, gaussians);
        }
    }
    for (int64_t i = 0; i < n; i++) {
        if (traj_appearance) continue;
        if (gaussians) { /* the run's own: isotropic (the mean of the three log-scales), SH band 0 */
            c_scale[i] = (gply.scale[i * 3] + gply.scale[i * 3 + 1] + gply.scale[i * 3 + 2]) / 3, c_logit[i] = gply.opacity[i];
            int K = (gply.sh_degree + 1) * (gply.sh_degree + 1);
            for (int k = 0; k < 3; k++) c_col[i * 3 + k] = (float)(0.28209479177387814 * gply.sh[(int64_t)i * K * 3 + k] + 0.5);
        } else {
            c_scale[i] = (float)log(cfg.render.scale * mean_edge(&train));
            c_logit[i] = (float)log(cfg.render.opacity / (1 - cfg.render.opacity));
            for (int k = 0; k < 3; k++) c_col[i * 3 + k] = train.colors[i * 3 + k];
        }
    }
    canon.colors = c_col, canon.log_scale = c_scale, canon.logit = c_logit;
    if (cfg.appearance.fit) {
        /* the per-vertex Gaussians' appearance from the training motion's training views */
        canon.nf = train.nf, canon.faces = train.faces;
        if (fit_appearance(&cfg, bench_dir, &train, is_val ? own0 : train.nframes, &canon, !no_progress, &ainfo, err, sizeof err))
            goto fail;
        printf("appearance: fitted on %d training views in %.1f s cpu (%lld steps, loss %.4f); val-split PSNR %.2f -> %.2f dB\n",
               ainfo.views, ainfo.cpu, (long long)cfg.appearance.steps, ainfo.loss, ainfo.val_before, ainfo.val_after);
        snprintf(path, sizeof path, "%s/canonical.ply", out);
        float *restp = malloc(sizeof(float) * n * 3);
        if (!restp) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        memcpy(restp, rig.points, sizeof(float) * n * 3);
        if (canon.offset) { /* at rest, moved along the rest mesh's normals as every render moves them */
            float *nr = malloc(sizeof(float) * n * 3);
            if (nr) gs_appearance_vertex_normals(n, rig.points, canon.nf, canon.faces, nr);
            for (int64_t i = 0; nr && i < n; i++)
                for (int k = 0; k < 3; k++) restp[i * 3 + k] += canon.offset[i] * nr[i * 3 + k];
            free(nr);
        }
        int bad = write_ply(path, &canon, restp, err, sizeof err);
        free(restp);
        if (bad) goto fail;
    }
    /* the novel pose: IK of the held-out ground-truth meshes on the rig's tree */
    qrot = malloc(sizeof(float) * Q * J * 4), qtrans = malloc(sizeof(float) * Q * 3);
    tb = malloc(sizeof(float) * Q * B * 12), pos = malloc(sizeof(float) * Q * n * 3);
    bone_part = malloc(sizeof(double) * B * rig.P), bind = malloc(sizeof(int32_t) * n);
    bone_joint = malloc(sizeof(double) * B * J);
    if (!qrot || !qtrans || !tb || !pos || !bone_part || !bind || !bone_joint) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    SbIkOptions io;
    sb_ik_defaults(&io);
    io.steps = (int)cfg.ik.steps, io.lr = cfg.ik.lr, io.lambda = cfg.ik.lambda;
    double t0 = wall_seconds();
    if (reuse) {
        if (read_pose_h5(reuse, motion, Q, rig.F, J, qrot, qtrans, rig.rot, rig.trans, err, sizeof err)) goto fail;
    } else {
        if (pose_of(&cfg, &io, &rig, Q, observed, qrot, qtrans, err, sizeof err)) goto fail;
        if (!no_progress)
            fprintf(stderr, NAME ": IK of %d %s frames on %d joints: %.2f s\n", Q, is_bvh ? "BVH" : motion, J, wall_seconds() - t0);
    }
    /* the database: the rig's bone transforms, keyed by its joint rotations */
    if (!reuse && !strcmp(cfg.partmm.keys, "refit")) {
        float *own = malloc(sizeof(float) * rig.F * n * 3);
        if (!own) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        lbs_all(rig.F, n, B, rig.points, rig.weights, rig.tb, own);
        t0 = wall_seconds();
        int bad = pose_of(&cfg, &io, &rig, rig.F, own, rig.rot, rig.trans, err, sizeof err);
        free(own);
        if (bad) goto fail;
        if (!no_progress) fprintf(stderr, NAME ": IK of the rig's %d frames: %.2f s\n", rig.F, wall_seconds() - t0);
    }
    pm_bind_points(J, rig.rest, rig.parents, n, rig.points, bind);
    pm_bone_parts(n, B, J, rig.P, rig.weights, bind, rig.parts, bone_part);
    pm_bone_joint_shares(n, B, J, rig.weights, bind, bone_joint);
    if (pm_db_build(&db, rig.F, J, B, rig.P, rig.rot, rig.trans, rig.rest, rig.parents, rig.tb, rig.parts, bone_part,
                    bone_joint, err, sizeof err))
        goto fail;
    PmOptions po = pm_opts(&cfg);
    double c0 = cpu_seconds(), w0 = wall_seconds();
    if (pm_synthesize(&db, Q, qrot, qtrans, &po, tb, err, sizeof err)) goto fail;
    double cpu = cpu_seconds() - c0, wall = wall_seconds() - w0;
    lbs_all(Q, n, B, rig.points, rig.weights, tb, pos);
    if (physics && cmd_animate_physics(physics, rig_path, Q, B, tb, (double)cfg.render.fps, n, rig.points, pos, out,
                                       !no_progress, err, sizeof err))
        goto fail;
    printf("partmm: %d poses from a %d-frame database (%d bones, %d joints, %d parts) in %.4f s wall, %.4f s cpu: %.0f poses/s\n",
           Q, rig.F, B, J, rig.P, wall, cpu, Q / wall);
    /* outputs */
    snprintf(path, sizeof path, "%s/animation.h5", out);
    if (write_anim_h5(path, Q, B, J, tb, qrot, qtrans, rig.F, rig.rot, rig.trans, motion, rig_path, err, sizeof err)) goto fail;
    DsCamera cam;
    if (eye) {
        double c[3] = {0}, up[3] = {0, 1, 0};
        for (int64_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) c[k] += rig.points[i * 3 + k] / n;
        cam = ds_camera_look_at(eye_p, c, up, 256, 256, cfg.render.fov);
    }
    if (ds_dnerf_load(views_dir, "test", &views, err, sizeof err)) goto fail;
    if (!eye) {
        /* the held-out cameras are the views at time 0, in order */
        int k = 0, found = 0;
        for (int v = 0; v < views.n && !found; v++)
            if (views.views[v].time == 0 && k++ == cfg.render.view) cam = views.views[v].cam, found = 1;
        if (!found) {
            snprintf(err, sizeof err, "render.view %lld: the benchmark has %d held-out cameras", (long long)cfg.render.view, k);
            goto fail;
        }
    }
    snprintf(path, sizeof path, "%s/frames", out);
    if (cmd_make_dirs(path)) {
        snprintf(err, sizeof err, "cannot create %s", path);
        goto fail;
    }
    if (!no_ply) {
        snprintf(path, sizeof path, "%s/gaussians", out);
        if (cmd_make_dirs(path)) {
            snprintf(err, sizeof err, "cannot create %s", path);
            goto fail;
        }
    }
    for (int t = 0; t < Q; t++) {
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = render_points(&canon, pos + (int64_t)t * n * 3, &cam);
        snprintf(path, sizeof path, "%s/frames/f%04d.png", out, t);
        int bad = write_png(path, img, err, sizeof err);
        tensor_scope_end(sc);
        if (!bad && !no_ply) {
            snprintf(path, sizeof path, "%s/gaussians/f%04d.ply", out, t);
            bad = write_ply(path, &canon, pos + (int64_t)t * n * 3, err, sizeof err);
        }
        if (bad) goto fail;
    }
    if (!no_progress) fprintf(stderr, NAME ": wrote %d frames to %s\n", Q, out);
    {
        char frames_dir[4200], base[4200];
        snprintf(frames_dir, sizeof frames_dir, "%s/frames", out);
        snprintf(base, sizeof base, "%s/animation", out);
        if (cmd_write_video(NAME, frames_dir, "f", ".png", Q, (double)cfg.render.fps, video, base)) {
            snprintf(err, sizeof err, "the video of %s was not written", frames_dir);
            goto fail;
        }
    }

    if (do_eval) {
        const DsDnerfSplit *sv = is_val ? NULL : &views; /* val: geometry alone */
        /* the rest mesh's bounding-box diagonal: the unit of the RMSE. Over the mesh's nv vertices,
         * not the n points: with --gaussians they are gs4d's Gaussians, n != nv (reading n
         * vertices ran past the mesh, an infinite diagonal printed RMSE 0 for the snake) */
        double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
        for (int64_t i = 0; i < truth->nv; i++)
            for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], truth->rest[i * 3 + k]), hi[k] = fmax(hi[k], truth->rest[i * 3 + k]);
        double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
        enum { NROWS = 13 };
        Row rows[NROWS] = {
            {"partmm", "PartMM with the config's options (paper: 5 parts, k 7, 5 levels, lambda 0.7)", 0, 0, 0, wall},
            {"lbs", "LBS: the kinematic skeleton alone (each point rigidly on its joint)", 0, 0, 0, 0},
            {"bag_of_bones", "bag-of-bones: SSDR bones each on its nearest joint, no tree", 0, 0, 0, 0},
            {"global_part", "PartMM, one global part", 0, 0, 0, 0},
            {"no_pyramid", "PartMM, no pyramid (1 level)", 0, 0, 0, 0},
            {"k1", "PartMM, k = 1", 0, 0, 0, 0},
            {"part_align", "PartMM, one SVD alignment per part instead of per bone", 0, 0, 0, 0},
            {"mlp", "MLP regressor R_J -> T_B (root frame), trained on the rig's motion", 0, 0, 0, 0},
            {"gru", "GRU regressor R_J -> T_B (root frame), trained on the rig's motion", 0, 0, 0, 0},
            {"oracle_ik_skin", "reference: each SSDR bone rigidly fitted to the held-out points it dominates", 0, 0, 0, 0},
            {"rig_own", "the rig's own SSDR transforms (--motion train only: what a query equal to the database must give)", 0, 0, 0, 0},
            {"match_root", "PartMM, the root's rotation (global orientation) counted in the matching", 0, 0, 0, 0},
            {"truth", "reference: the Gaussians at their ground-truth positions (RMSE 0: the renders' own PSNR/SSIM)", 0, 0, 0, 0},
        };
        rows[7].skip = rows[8].skip = !cfg.eval.regress;
        rows[10].skip = !is_train && !is_val;
        int every = (int)cfg.eval.every;
        /* the scored views rendered with the Gaussians at their true positions (psnr_gs) */
        float *ref_gs = sv && sv->n ? malloc(sizeof(float) * sv->n * sv->height * sv->width * 3) : NULL;
        for (int v = 0; ref_gs && v < sv->n; v++) {
            int f = view_frame(&sv->views[v], Q);
            if (f % every) continue;
            TensorScope *sc = tensor_scope_begin();
            Tensor *img = render_points(&canon, truth_v + (int64_t)f * n * 3, &sv->views[v].cam);
            int64_t np = (int64_t)sv->height * sv->width * 3;
            double *px = malloc(sizeof(double) * np);
            if (px) {
                tensor_to_f64_array(img, px);
                /* clamped as gs_psnr clamps the image it scores, so the truth scores +inf */
                for (int64_t k = 0; k < np; k++) ref_gs[v * np + k] = (float)(px[k] < 0 ? 0 : px[k] > 1 ? 1 : px[k]);
            }
            tensor_scope_end(sc);
            if (!px) {
                free(ref_gs);
                snprintf(err, sizeof err, "out of memory");
                goto fail;
            }
            free(px);
        }
        score(&rows[0], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        float *S = malloc(sizeof(float) * Q * J * 12), *w1 = calloc((size_t)n * J, sizeof(float));
        float *tb2 = malloc(sizeof(float) * Q * B * 12);
        int32_t *bj = malloc(sizeof(int32_t) * B);
        if (!S || !w1 || !tb2 || !bj) {
            free(S), free(w1), free(tb2), free(bj);
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        pm_skin_transforms(J, rig.rest, rig.parents, Q, qrot, qtrans, S);
        for (int64_t i = 0; i < n; i++) w1[i * J + bind[i]] = 1;
        lbs_all(Q, n, J, rig.points, w1, S, pos);
        score(&rows[1], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        pm_bone_joints(&rig, bj);
        for (int t = 0; t < Q; t++)
            for (int b = 0; b < B; b++) memcpy(tb2 + ((int64_t)t * B + b) * 12, S + ((int64_t)t * J + bj[b]) * 12, 48);
        lbs_all(Q, n, B, rig.points, rig.weights, tb2, pos);
        score(&rows[2], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        for (int r = 3; r <= 11; r++) {
            if (r == 7) r = 11; /* the PartMM ablations: rows 3..6 and 11 */
            PmOptions ab = po;
            if (r == 11) ab.match_root = !po.match_root;
            if (r == 6) ab.align = PM_ALIGN_PART;
            if (r == 3) ab.global_part = 1;
            if (r == 4) ab.levels = 1;
            if (r == 5) ab.k = 1;
            double w = wall_seconds();
            if (pm_synthesize(&db, Q, qrot, qtrans, &ab, tb2, err, sizeof err)) {
                free(S), free(w1), free(tb2), free(bj);
                goto fail;
            }
            rows[r].seconds = wall_seconds() - w;
            lbs_all(Q, n, B, rig.points, rig.weights, tb2, pos);
            score(&rows[r], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        }
        for (int r = 7; r < 9; r++) {
            if (rows[r].skip) continue;
            if (!no_progress) fprintf(stderr, NAME ": training the %s regressor\n", rows[r].name);
            if (regress_row(&cfg, r == 7 ? PM_REGRESS_MLP : PM_REGRESS_GRU, &rig, Q, qrot, S, tb2, &rows[r].seconds, err,
                            sizeof err)) {
                free(S), free(w1), free(tb2), free(bj);
                goto fail;
            }
            lbs_all(Q, n, B, rig.points, rig.weights, tb2, pos);
            score(&rows[r], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        }
        /* the reference row: each bone's rigid fit to the held-out points it dominates (per frame,
         * per bone). Not an upper bound: LBS blends bones, so a bone fitted on its own points
         * alone can do worse than a synthesized T_B (the snake: 1.52% vs PartMM's 0.48%) */
        for (int t = 0; t < Q; t++) {
            for (int b = 0; b < B; b++) {
                int64_t m = 0;
                for (int64_t i = 0; i < n; i++) {
                    int best = 0;
                    for (int c = 1; c < B; c++)
                        if (rig.weights[i * B + c] > rig.weights[i * B + best]) best = c;
                    if (best == b) m++;
                }
                double *p = malloc(sizeof(double) * (m + 1) * 3), *q = malloc(sizeof(double) * (m + 1) * 3), T[12];
                m = 0;
                for (int64_t i = 0; i < n; i++) {
                    int best = 0;
                    for (int c = 1; c < B; c++)
                        if (rig.weights[i * B + c] > rig.weights[i * B + best]) best = c;
                    if (best != b) continue;
                    for (int k = 0; k < 3; k++) p[m * 3 + k] = rig.points[i * 3 + k], q[m * 3 + k] = truth_v[((int64_t)t * n + i) * 3 + k];
                    m++;
                }
                sb_kabsch(m, p, q, NULL, T);
                for (int k = 0; k < 12; k++) tb2[((int64_t)t * B + b) * 12 + k] = (float)T[k];
                free(p), free(q);
            }
        }
        lbs_all(Q, n, B, rig.points, rig.weights, tb2, pos);
        score(&rows[9], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        if (is_train || is_val) {
            lbs_all(Q, n, B, rig.points, rig.weights, rig.tb + (int64_t)own0 * B * 12, pos);
            score(&rows[10], pos, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        }
        /* the ceiling of the image metrics: one Gaussian per point can render the truth only so
         * well (fixed isotropic size against a rasterized textured mesh), so a row's PSNR is read
         * against this one, not against infinity */
        score(&rows[12], truth_v, Q, n, truth_v, diag, &canon, sv, every, ref_gs);
        free(S), free(w1), free(tb2), free(bj), free(ref_gs);
        printf("%-16s %10s %9s %7s %10s %9s  %s\n", "method", "rmse_%diag", "psnr_dB", "ssim", "psnr_gs_dB", "synth_s", "what");
        for (int r = 0; r < NROWS; r++)
            if (!rows[r].skip)
                printf("%-16s %10.3f %9.2f %7.4f %10.2f %9.4f  %s\n", rows[r].name, rows[r].rmse, rows[r].psnr, rows[r].ssim,
                       rows[r].psnr_gs, rows[r].seconds, rows[r].what);
        char *js = malloc(16384);
        size_t u = 0;
        u += snprintf(js + u, 16384 - u, "{\n  \"bench\": \"%s\",\n  \"rig\": \"%s\",\n  \"frames\": %d,\n  \"gaussians\": \"%s\",\n  \"diag\": %.6f,\n",
                      bench_dir, rig_path, Q,
                      gaussians ? gaussians
                      : cfg.appearance.fit ? "one per ground-truth rest vertex, appearance fitted to the training views"
                                           : "one per ground-truth rest vertex, benchmark albedo",
                      diag);
        {
            /* the canonical Gaussians' appearance: the option and what the fit reached */
            char lo_s[32] = "null", vb[32] = "null", va[32] = "null";
            if (cfg.appearance.fit) snprintf(lo_s, sizeof lo_s, "%.5f", ainfo.loss);
            if (isfinite(ainfo.val_before)) snprintf(vb, sizeof vb, "%.4f", ainfo.val_before);
            if (isfinite(ainfo.val_after)) snprintf(va, sizeof va, "%.4f", ainfo.val_after);
            u += snprintf(js + u, 16384 - u,
                          "  \"appearance\": {\"fit\": %s, \"steps\": %lld, \"frame_every\": %lld, \"views\": %d, \"loss\": %s, "
                          "\"val_psnr_before\": %s, \"val_psnr_after\": %s, \"cpu_s\": %.2f, \"normal_offset\": %s},\n  \"rows\": [\n",
                          cfg.appearance.fit ? "true" : "false", (long long)cfg.appearance.steps,
                          (long long)cfg.appearance.frame_every, ainfo.views, lo_s, vb, va, ainfo.cpu,
                          canon.offset ? "true" : "false");
        }
        int last = NROWS - 1;
        while (last > 0 && rows[last].skip) last--;
        for (int r = 0; r < NROWS; r++)
            if (!rows[r].skip) {
                /* JSON has no NaN: a table without renders (--motion val) writes null */
                char ps[32] = "null", ss[32] = "null", pg[32] = "null";
                if (isfinite(rows[r].psnr)) snprintf(ps, sizeof ps, "%.4f", rows[r].psnr);
                if (isfinite(rows[r].ssim)) snprintf(ss, sizeof ss, "%.5f", rows[r].ssim);
                if (isfinite(rows[r].psnr_gs)) snprintf(pg, sizeof pg, "%.4f", rows[r].psnr_gs);
                u += snprintf(js + u, 16384 - u, "    {\"method\": \"%s\", \"rmse_pct_diag\": %.5f, \"psnr\": %s, \"ssim\": %s, \"psnr_gs\": %s, \"seconds\": %.5f}%s\n",
                              rows[r].name, rows[r].rmse, ps, ss, pg, rows[r].seconds, r < last ? "," : "");
            }
        u += snprintf(js + u, 16384 - u, "  ]\n}\n");
        snprintf(path, sizeof path, "%s/eval.json", out);
        int wr = cmd_write_text(path, js, err, sizeof err);
        free(js);
        if (wr) goto fail;
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, NAME ": %s\n", err);
    (void)bp_d;
    free(qrot), free(qtrans), free(tb), free(pos), free(bone_part), free(bind), free(bone_joint), free(bvh_v);
    free(targets), free(c_scale), free(c_logit), free(c_col), pm_gaussian_tie_free(&tie);
    ds_gaussians_free(&gply);
    free(canon.offset);
    pm_db_free(&db);
    ds_dnerf_free(&views);
    ds_motion_gt_free(&train), ds_motion_gt_free(&held);
    pm_rig_free(&rig);
    return rc;
}
