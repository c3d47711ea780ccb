/* tools/cmd_animate.c — `anima animate`: a Skelebones rig (rig.h5) driven by a novel motion.
 * The motion's joint rotations on the rig's extracted skeleton come from the benchmark's held-out
 * motion (IK on its ground-truth mesh sequence only, models/partmm/rig.h); PartMM
 * (models/partmm/partmm.h) synthesizes the free-form bones' transforms from the rig's own
 * motion; the canonical Gaussians (one per rest point of the rig, colored by the benchmark's
 * texture) follow by LBS with the SSDR weights. Writes per-frame Gaussian PLYs, renders (PNG and
 * GIF) from a benchmark camera or any eye point, and DIR/animation.h5 (the synthesized bone
 * transforms and the pose); --eval adds the baselines and ablations on the held-out motion
 * (DIR/eval.json and a table on stdout). */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "base/h5file.h"
#include "datasets/motion/bench.h"
#include "datasets/motion/dnerf.h"
#include "datasets/render/image.h"
#include "datasets/render/video.h"
#include "models/gaussians/appearance.h"
#include "models/partmm/animation.h"
#include "models/partmm/bench.h"
#include "models/partmm/partmm.h"
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

static PmOptions pm_opts(const AnimConfig *c) {
    PmOptions o;
    pm_options_defaults(&o);
    o.patch = (int)c->partmm.patch, o.k = (int)c->partmm.k, o.levels = (int)c->partmm.levels;
    o.lambda = c->partmm.lambda, o.power = c->partmm.power, o.global_part = c->partmm.global_part, o.match_root = c->partmm.match_root;
    o.align = !strcmp(c->partmm.align, "bone") ? PM_ALIGN_BONE : !strcmp(c->partmm.align, "part") ? PM_ALIGN_PART : PM_ALIGN_NONE;
    return o;
}

static PmIkMethod ik_method(const AnimConfig *c) {
    return !strcmp(c->ik.method, "adam") ? PM_IK_ADAM : !strcmp(c->ik.method, "fit") ? PM_IK_FIT : PM_IK_FIT_ADAM;
}

static void appearance_progress(int64_t step, double loss, void *user) {
    (void)user;
    fprintf(stderr, NAME ": appearance step %lld: loss %.4f\n", (long long)step, loss);
}

static void row_progress(void *user, const char *row) {
    (void)user;
    fprintf(stderr, NAME ": training the %s regressor\n", row);
}

static int write_png(const char *path, const Tensor *img, char *err, size_t errlen) {
    const float *p = tensor_f32(img);
    DsImageF im = {(int)img->shape[1], (int)img->shape[0], 3, (float *)p};
    return ds_imagef_write(path, &im, err, errlen);
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
    float *qrot = NULL, *qtrans = NULL, *tb = NULL, *pos = NULL;
    double *bone_part = NULL, *bone_joint = NULL;
    float *bvh_v = NULL;
    int32_t *bind = NULL;
    PmDatabase db = {0};
    PmCanon canon = {0};
    PmAppearanceInfo ainfo = {0, NAN, NAN, NAN, 0};
    PmGaussianTie tie = {0};
    float *targets = NULL;
    double tie_residual = NAN; /* --gaussians: pm_gaussian_tie_residual, % of the diagonal */
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
        bool from_traj;
        if (pm_canon_gs4d(&canon, gaussians, &rig, &from_traj, err, sizeof err)) goto fail;
        if (from_traj)
            printf("appearance: the Gaussians' scales, opacities and colors averaged over the %.*strajectories.h5 frames\n",
                   (int)(strrchr(gaussians, '/') ? strrchr(gaussians, '/') - gaussians + 1 : 0), gaussians);
        else
            fprintf(stderr, NAME ": no trajectories.h5 beside %s: the canonical set's own scales and opacities (which the "
                    "run's deformation changes frame by frame) are used\n", gaussians);
        if (pm_gaussian_tie(&rig, rig_frames_all, &train, &tie, err, sizeof err)) goto fail;
        tie_residual = 100 * pm_gaussian_tie_residual(&tie, &rig, rig_frames_all, &train) / pm_bench_diagonal(&train);
        printf("tie: the Gaussians on the benchmark's surface, residual %.3f%% of the diagonal on the training frames (the "
               "truth's own error; large when the fit's Gaussians slide over the surface)\n", tie_residual);
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
        if (ds_motion_gt_bvh(path, &train, motion, map_path, (int)bvh_frames, &bvh_v, err, sizeof err)) goto fail;
        Q = (int)bvh_frames, observed = bvh_v;
    }
    int64_t n = rig.n;
    if (!gaussians && pm_canon_benchmark(&canon, &train, cfg.render.scale, cfg.render.opacity, err, sizeof err)) goto fail;
    if (cfg.appearance.fit) {
        /* the per-vertex Gaussians' appearance from the training motion's training views */
        GsAppearanceConfig ac = gs_appearance_defaults();
        ac.steps = cfg.appearance.steps, ac.seed = (uint64_t)cfg.appearance.seed, ac.lambda = cfg.appearance.lambda;
        ac.lr_color = cfg.appearance.lr_color, ac.lr_scale = cfg.appearance.lr_scale, ac.lr_opacity = cfg.appearance.lr_opacity;
        ac.normal_offset = cfg.appearance.normal_offset, ac.lr_offset = cfg.appearance.lr_offset;
        if (pm_canon_fit_appearance(&canon, bench_dir, &train, is_val ? own0 : train.nframes, (int)cfg.appearance.frame_every,
                                    &ac, no_progress ? NULL : appearance_progress, &ainfo, err, sizeof err))
            goto fail;
        printf("appearance: fitted on %d training views in %.1f s cpu (%lld steps, loss %.4f); val-split PSNR %.2f -> %.2f dB\n",
               ainfo.views, ainfo.cpu, (long long)cfg.appearance.steps, ainfo.loss, ainfo.val_before, ainfo.val_after);
        snprintf(path, sizeof path, "%s/canonical.ply", out);
        int bad = pm_canon_write_ply(path, &canon, rig.points, err, sizeof err); /* at rest */
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
    double t0 = base_now();
    if (reuse) {
        if (pm_animation_read_pose(reuse, motion, Q, rig.F, J, qrot, qtrans, rig.rot, rig.trans, err, sizeof err)) goto fail;
    } else {
        if (pm_pose(ik_method(&cfg), &io, cfg.ik.points, &rig, Q, observed, qrot, qtrans, err, sizeof err)) goto fail;
        if (!no_progress)
            fprintf(stderr, NAME ": IK of %d %s frames on %d joints: %.2f s\n", Q, is_bvh ? "BVH" : motion, J, base_now() - t0);
    }
    /* the database: the rig's bone transforms, keyed by its joint rotations */
    if (!reuse && !strcmp(cfg.partmm.keys, "refit")) {
        float *own = malloc(sizeof(float) * rig.F * n * 3);
        if (!own) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
        pm_lbs_frames(rig.F, n, B, rig.points, rig.weights, rig.tb, own);
        t0 = base_now();
        int bad = pm_pose(ik_method(&cfg), &io, cfg.ik.points, &rig, rig.F, own, rig.rot, rig.trans, err, sizeof err);
        free(own);
        if (bad) goto fail;
        if (!no_progress) fprintf(stderr, NAME ": IK of the rig's %d frames: %.2f s\n", rig.F, base_now() - t0);
    }
    pm_bind_points(J, rig.rest, rig.parents, n, rig.points, bind);
    pm_bone_parts(n, B, J, rig.P, rig.weights, bind, rig.parts, bone_part);
    pm_bone_joint_shares(n, B, J, rig.weights, bind, bone_joint);
    if (pm_db_build(&db, rig.F, J, B, rig.P, rig.rot, rig.trans, rig.rest, rig.parents, rig.tb, rig.parts, bone_part,
                    bone_joint, err, sizeof err))
        goto fail;
    PmOptions po = pm_opts(&cfg);
    double c0 = base_cpu_now(), w0 = base_now();
    if (pm_synthesize(&db, Q, qrot, qtrans, &po, tb, err, sizeof err)) goto fail;
    double cpu = base_cpu_now() - c0, wall = base_now() - w0;
    pm_lbs_frames(Q, n, B, rig.points, rig.weights, tb, pos);
    if (physics && cmd_animate_physics(physics, rig_path, Q, B, tb, (double)cfg.render.fps, n, rig.points, pos, out,
                                       !no_progress, err, sizeof err))
        goto fail;
    printf("partmm: %d poses from a %d-frame database (%d bones, %d joints, %d parts) in %.4f s wall, %.4f s cpu: %.0f poses/s\n",
           Q, rig.F, B, J, rig.P, wall, cpu, Q / wall);
    /* outputs */
    snprintf(path, sizeof path, "%s/animation.h5", out);
    if (pm_animation_write(path, Q, B, J, tb, qrot, qtrans, rig.F, rig.rot, rig.trans, motion, rig_path, err, sizeof err)) goto fail;
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
        Tensor *img = pm_canon_render(&canon, pos + (int64_t)t * n * 3, &cam);
        snprintf(path, sizeof path, "%s/frames/f%04d.png", out, t);
        int bad = write_png(path, img, err, sizeof err);
        tensor_scope_end(sc);
        if (!bad && !no_ply) {
            snprintf(path, sizeof path, "%s/gaussians/f%04d.ply", out, t);
            bad = pm_canon_write_ply(path, &canon, pos + (int64_t)t * n * 3, err, sizeof err);
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
        /* the rest mesh's bounding-box diagonal: the unit of the RMSE. Over the mesh's nv vertices,
         * not the n points: with --gaussians they are gs4d's Gaussians, n != nv */
        double diag = pm_bench_diagonal(truth);
        PmBenchInputs bi = {
            .rig = &rig, .db = &db, .options = &po, .Q = Q, .qrot = qrot, .qtrans = qtrans, .partmm_tb = tb,
            .partmm_seconds = wall, .truth = truth_v, .diag = diag, .canon = &canon,
            .views = is_val ? NULL : &views, /* val: geometry alone */
            .every = (int)cfg.eval.every, .regress = cfg.eval.regress,
            .regress_options = {PM_REGRESS_MLP, (int)cfg.regress.hidden, (int)cfg.regress.layers, (int)cfg.regress.window,
                                (int)cfg.regress.steps, (int)cfg.regress.batch, (float)cfg.regress.lr, (uint64_t)cfg.regress.seed},
            .own_tb = is_train || is_val ? rig.tb + (int64_t)own0 * B * 12 : NULL,
            .progress = no_progress ? NULL : row_progress};
        PmBenchRow rows[PM_BENCH_ROWS];
        if (pm_bench_run(&bi, rows, err, sizeof err)) goto fail;
        enum { NROWS = PM_BENCH_ROWS };
        printf("%-16s %10s %9s %7s %10s %9s  %s\n", "method", "rmse_%diag", "psnr_dB", "ssim", "psnr_gs_dB", "synth_s", "what");
        for (int r = 0; r < NROWS; r++)
            if (!rows[r].skip)
                printf("%-16s %10.3f %9.2f %7.4f %10.2f %9.4f  %s\n", rows[r].name, rows[r].rmse, rows[r].psnr, rows[r].ssim,
                       rows[r].psnr_gs, rows[r].seconds, rows[r].what);
        char *js = malloc(16384);
        size_t u = 0;
        char tr_s[32] = "null";
        if (isfinite(tie_residual)) snprintf(tr_s, sizeof tr_s, "%.5f", tie_residual);
        u += snprintf(js + u, 16384 - u, "{\n  \"bench\": \"%s\",\n  \"rig\": \"%s\",\n  \"frames\": %d,\n  \"gaussians\": \"%s\",\n  \"diag\": %.6f,\n"
                      "  \"tie_residual_pct_diag\": %s,\n",
                      bench_dir, rig_path, Q,
                      gaussians ? gaussians
                      : cfg.appearance.fit ? "one per ground-truth rest vertex, appearance fitted to the training views"
                                           : "one per ground-truth rest vertex, benchmark albedo",
                      diag, tr_s);
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
    free(qrot), free(qtrans), free(tb), free(pos), free(bone_part), free(bind), free(bone_joint), free(bvh_v);
    free(targets), pm_gaussian_tie_free(&tie);
    pm_canon_free(&canon);
    pm_db_free(&db);
    ds_dnerf_free(&views);
    ds_motion_gt_free(&train), ds_motion_gt_free(&held);
    pm_rig_free(&rig);
    return rc;
}
