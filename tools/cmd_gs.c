/* tools/cmd_gs.c — `anima gs`: 3D Gaussian Splatting commands.
 *
 *   anima gs fit [--config FILE] [--mesh FILE|procedural:<category>[:seed]] [--views N]
 *                [--test-views N] [--size PX] [--iters K] [--out DIR] [--set key.path=value ...]
 *                [--no-progress] [--force]
 *
 * fit: renders the mesh from views on a sphere with the mesh rasterizer (datasets/render/raster.h),
 * fits Gaussians initialized at random in its bounding box (models/gaussians/fit.h), prints the
 * PSNR on the held-out views and writes DIR/gaussians.ply (the standard 3DGS PLY, raw values —
 * loadable by the common 3DGS viewers), DIR/renders/{train,test}_NN.png (render | target side
 * by side), DIR/metrics.jsonl (one line per log step, held-out PSNR included) and
 * DIR/config.json (the full config used). Without --config: the schema's defaults (the same as
 * configs/gs-fit.json), and it says so; a DIR that holds a previous fit needs --force. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "datasets/config.h"
#include "datasets/geometry/geometry.h"
#include "datasets/render/image.h"
#include "datasets/geometry/procedural.h"
#include "models/gaussians/fit.h"
#include "optim/train.h"
#include "tensor/backend.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

typedef struct {
    int64_t seed;
    struct {
        char mesh[1024];
        int64_t views, test_views, size, supersample, grid;
        double fov;
    } scene;
    struct {
        int64_t n, sh_degree;
        bool isotropic;
        double init_opacity, init_scale, box_margin;
    } model;
    struct {
        double lr_means, lr_means_final, lr_scales, lr_quats, lr_opacity, lr_sh_dc, lr_sh_rest, lambda;
    } optim;
    struct {
        int64_t iters, log_every, sh_up_every, relocate_every, reset_every;
        double refine_frac, prune_opacity;
        bool random_background;
    } train;
} GsCmdConfig;

#define NO_RANGE .min = 1, .max = 0
#define F(sec, name) offsetof(GsCmdConfig, sec.name) - offsetof(GsCmdConfig, sec)

static const DsConfigField SCENE_FIELDS[] = {
    {"mesh", DS_CFG_STRING, F(scene, mesh), "\"procedural:quadruped\"", NO_RANGE, .size = 1024,
     .help = "a mesh file (OBJ/PLY/OFF/STL) or procedural:<category>[:seed]"},
    {"views", DS_CFG_INT, F(scene, views), "8", 1, 1000, .help = "training views"},
    {"test_views", DS_CFG_INT, F(scene, test_views), "4", 1, 1000, .help = "held-out views"},
    {"size", DS_CFG_INT, F(scene, size), "128", 8, 4096, .help = "image side in pixels"},
    {"fov", DS_CFG_FLOAT, F(scene, fov), "40", 5, 120, .help = "vertical field of view, degrees"},
    {"supersample", DS_CFG_INT, F(scene, supersample), "2", 1, 8, .help = "target antialiasing, s x s samples"},
    {"grid", DS_CFG_INT, F(scene, grid), "64", 16, 512, .help = "marching-cubes cells of procedural meshes"},
    {0}};
static const DsConfigField MODEL_FIELDS[] = {
    {"n", DS_CFG_INT, F(model, n), "4000", 1, 1e8, .help = "Gaussians"},
    {"sh_degree", DS_CFG_INT, F(model, sh_degree), "3", 0, 3, .help = "spherical-harmonics degree of the colours (0 to 3)"},
    {"isotropic", DS_CFG_BOOL, F(model, isotropic), "false", NO_RANGE, .help = "one scale, no rotation"},
    {"init_opacity", DS_CFG_FLOAT, F(model, init_opacity), "0.1", 1e-4, 0.9999, .help = "every Gaussian's opacity at init"},
    {"init_scale", DS_CFG_FLOAT, F(model, init_scale), "0.5", 1e-3, 10,
     .help = "x the mean spacing (box volume / n)^(1/3)"},
    {"box_margin", DS_CFG_FLOAT, F(model, box_margin), "0.05", 0, 10,
     .help = "init box = mesh bounding box grown by this fraction of its size on each side"},
    {0}};
static const DsConfigField OPTIM_FIELDS[] = {
    {"lr_means", DS_CFG_FLOAT, F(optim, lr_means), "1.6e-4", 0, 1, .help = "x scene extent (3DGS)"},
    {"lr_means_final", DS_CFG_FLOAT, F(optim, lr_means_final), "1.6e-6", 0, 1,
     .help = "x scene extent, reached at the last iteration (log-linear decay)"},
    {"lr_scales", DS_CFG_FLOAT, F(optim, lr_scales), "5e-3", 0, 1, .help = "Adam step of the log-scales"},
    {"lr_quats", DS_CFG_FLOAT, F(optim, lr_quats), "1e-3", 0, 1, .help = "Adam step of the rotations"},
    {"lr_opacity", DS_CFG_FLOAT, F(optim, lr_opacity), "5e-2", 0, 1, .help = "Adam step of the opacity logits"},
    {"lr_sh_dc", DS_CFG_FLOAT, F(optim, lr_sh_dc), "2.5e-3", 0, 1, .help = "Adam step of the base colour (SH band 0)"},
    {"lr_sh_rest", DS_CFG_FLOAT, F(optim, lr_sh_rest), "1.25e-4", 0, 1, .help = "3DGS: lr_sh_dc / 20"},
    {"lambda", DS_CFG_FLOAT, F(optim, lambda), "0.2", 0, 1, .help = "D-SSIM weight"},
    {0}};
static const DsConfigField TRAIN_FIELDS[] = {
    {"iters", DS_CFG_INT, F(train, iters), "3000", 1, 1e9, .help = "optimization steps"},
    {"log_every", DS_CFG_INT, F(train, log_every), "100", 1, 1e9, .help = "JSONL line + held-out PSNR"},
    {"sh_up_every", DS_CFG_INT, F(train, sh_up_every), "1000", 0, 1e9, .help = "one more SH band every N steps"},
    {"relocate_every", DS_CFG_INT, F(train, relocate_every), "100", 0, 1e9,
     .help = "move dead Gaussians onto live ones every N steps (0: never)"},
    {"refine_frac", DS_CFG_FLOAT, F(train, refine_frac), "0.5", 0, 1,
     .help = "relocation and opacity resets stop after this fraction of the iterations (3DGS: 15k of 30k)"},
    {"reset_every", DS_CFG_INT, F(train, reset_every), "300", 0, 1e9, .help = "opacity reset period (0: never; 3DGS: 3000 of 30k)"},
    {"prune_opacity", DS_CFG_FLOAT, F(train, prune_opacity), "0.005", 0, 0.5, .help = "relocation: Gaussians below this opacity count as dead"},
    {"random_background", DS_CFG_BOOL, F(train, random_background), "true", NO_RANGE,
     .help = "a random background color each step (empty space must become transparent)"},
    {0}};
static const DsConfigField GS_SCHEMA[] = {
    {"seed", DS_CFG_INT, offsetof(GsCmdConfig, seed), "0", 0, 9e15, .help = "seed of the Gaussians' init, the view order and the random backgrounds"},
    {"scene", DS_CFG_OBJECT, offsetof(GsCmdConfig, scene), .fields = SCENE_FIELDS},
    {"model", DS_CFG_OBJECT, offsetof(GsCmdConfig, model), .fields = MODEL_FIELDS},
    {"optim", DS_CFG_OBJECT, offsetof(GsCmdConfig, optim), .fields = OPTIM_FIELDS},
    {"train", DS_CFG_OBJECT, offsetof(GsCmdConfig, train), .fields = TRAIN_FIELDS},
    {0}};

static const char GS_FIT_ABOUT[] =
    "fits 3D Gaussians (random init in the mesh's box) to renders of the mesh and writes\n"
    "DIR/gaussians.ply (standard 3DGS PLY), DIR/renders/*.png (render | target),\n"
    "DIR/metrics.jsonl and DIR/config.json; prints the held-out PSNR.";

/* The mesh to fit, with vertex colors: procedural shapes are colored by their skinning weights
 * (each body part its own hue), files keep theirs or are colored by normal. */
static int load_mesh(const GsCmdConfig *c, DsMesh *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    const char *spec = c->scene.mesh;
    if (!strncmp(spec, "procedural:", 11)) {
        char cat[64];
        snprintf(cat, sizeof cat, "%s", spec + 11);
        uint64_t seed = (uint64_t)c->seed;
        char *colon = strchr(cat, ':');
        if (colon) {
            char *end;
            *colon = 0;
            seed = strtoull(colon + 1, &end, 10);
            if (*end || end == colon + 1) {
                snprintf(err, errlen, "scene.mesh \"%s\": the seed after the category must be an integer", spec);
                return -1;
            }
        }
        DsProceduralShape s;
        if (ds_procedural_make(cat, seed, (int)c->scene.grid, &s, err, errlen)) return -1;
        *m = s.mesh;
        s.mesh = (DsMesh){0};
        free(m->color);
        m->color = base_malloc(sizeof(float) * 3 * (size_t)m->nv);
        gs_fit_vertex_colors(m, s.weights, s.nbones, m->color);
        ds_procedural_free(&s);
        return 0;
    }
    if (ds_mesh_read(spec, m, err, errlen)) return -1;
    if (!m->color) {
        m->color = base_malloc(sizeof(float) * 3 * (size_t)(m->nv ? m->nv : 1));
        gs_fit_vertex_colors(m, NULL, 0, m->color);
    }
    return 0;
}

static int write_renders(const char *dir, const GsFit *f, const GsFitScene *s, char *err, size_t errlen) {
    for (int t = 0; t < 2; t++) {
        int n = t ? s->n_test : s->n_train;
        for (int v = 0; v < n; v++) {
            char path[4200];
            if (snprintf(path, sizeof path, "%s/%s_%02d.png", dir, t ? "test" : "train", v) >= (int)sizeof path) {
                snprintf(err, errlen, "%s: path too long", dir);
                return -1;
            }
            TensorScope *sc = tensor_scope_begin();
            Tensor *img = gs_fit_render(f, t ? &s->test[v] : &s->train[v]);
            const Tensor *ref = t ? s->test_img[v] : s->train_img[v];
            int rc = ds_imagef_write_pair(path, tensor_f32(img), tensor_f32(ref), (int)img->shape[1], (int)img->shape[0], err, errlen);
            tensor_scope_end(sc);
            if (rc) return -1;
        }
    }
    return 0;
}

static int gs_fit_main(int argc, char **argv) {
    const char *config_path = NULL, *out = "runs/gs-fit";
    bool no_progress = false, force = false;
    CmdArgList sets = {.n = 0};
    const char *device = "cpu";
    static const char *const DEVICES[] = {"cpu", "cuda", NULL};
    const CmdArg args[] = {
        {"--config", CMD_ARG_STRING, &config_path, "FILE", "JSON config (configs/gs-fit.json); defaults for absent keys (no file: the small preset)"},
        {"--mesh", CMD_ARG_KEY, &sets, "FILE|procedural:<category>[:seed]", "the mesh to fit", .key = "scene.mesh"},
        {"--views", CMD_ARG_KEY, &sets, "N", "training views", .key = "scene.views"},
        {"--test-views", CMD_ARG_KEY, &sets, "N", "held-out views", .key = "scene.test_views"},
        {"--size", CMD_ARG_KEY, &sets, "PX", "render size", .key = "scene.size"},
        {"--iters", CMD_ARG_KEY, &sets, "K", "optimization steps", .key = "train.iters"},
        {"--out", CMD_ARG_STRING, &out, "DIR", "default runs/gs-fit"},
        {"--force", CMD_ARG_FLAG, &force, NULL, "replace the fit DIR already holds (without it, that is an error)"},
        {"--set", CMD_ARG_LIST, &sets, "k=v", "override a config key, e.g. --set model.isotropic=true"},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {"--device", CMD_ARG_CHOICE, &device, "D",
         "cpu (default) or cuda: render, loss, gradients and Adam on the GPU", .choices = DEVICES},
        {0}};
    const CmdArgSpec spec = {"anima gs fit", "[--config FILE] [--mesh FILE|procedural:<category>[:seed]] [options]",
                             GS_FIT_ABOUT, args, .keys = GS_SCHEMA};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    int progress = no_progress ? 0 : -1;
    bool cuda = !strcmp(device, "cuda");
    GsCmdConfig cfg;
    char err[8192];
    if (cmd_args_config(&spec, stderr, config_path, &sets, GS_SCHEMA, &cfg)) return 2;
    if (cuda && !tensor_backend_cuda()) {
        fprintf(stderr, "anima gs fit: --device cuda: no CUDA device (built without CUDA=1, or no GPU answered)\n");
        return 2;
    }
    if (!config_path)
        fprintf(stderr, "anima gs fit: no --config, using the small preset (the built-in defaults, as configs/gs-fit.json)\n");
    {
        /* the memory the fit needs, before the mesh is made: the targets (f64 RGB of every view,
         * with their masks), one supersampled render of the mesh rasterizer (RGB, depth, hit), the
         * Gaussians (59 parameters with their gradients and Adam's moments, the projected splats),
         * the tile entries of a render (keys, values, per-entry gradients; ~4 tiles per Gaussian)
         * and a procedural mesh's grid. The peak RSS grows 1.7 KB per Gaussian at the default
         * 128 px (4000 → 200,000); this counts 2.1. */
        double views = (double)(cfg.scene.views + cfg.scene.test_views), px = (double)cfg.scene.size * (double)cfg.scene.size;
        double ss = (double)(cfg.scene.supersample * cfg.scene.supersample), n = (double)cfg.model.n;
        double g = (double)cfg.scene.grid;
        double images = views * px * 4 * 8 + px * ss * 5 * 4, gauss = n * 8 * (59 * 3 + 24) + n * 4 * 120;
        double need = images + gauss + g * g * g * 16;
        char what[256], s0[32], s1[32];
        snprintf(what, sizeof what, "the views' images: %s; %lld Gaussians with their optimizer state and tile entries: %s",
                 base_mem_str((int64_t)fmin(images, 9e18), s0, sizeof s0), (long long)cfg.model.n,
                 base_mem_str((int64_t)fmin(gauss, 9e18), s1, sizeof s1));
        if (cmd_check_memory("anima gs fit", stderr, (int64_t)fmin(need, 9e18), what,
                             "model.n, scene.size or scene.views"))
            return 2;
    }
    static const char *const run_files[] = {"gaussians.ply", "metrics.jsonl", "config.json", NULL};
    int drc = cmd_check_run_dir("anima gs fit", stderr, out, run_files, false, false, force);
    if (drc) return drc;
    int rc;
    char renders[4096], log_path[4096], ply_path[4096], cfg_path[4096];
    if (strlen(out) > 4000) {
        fprintf(stderr, "anima gs fit: --out: path too long\n");
        return 2;
    }
    snprintf(renders, sizeof renders, "%.4000s/renders", out);
    snprintf(log_path, sizeof log_path, "%.4000s/metrics.jsonl", out);
    snprintf(ply_path, sizeof ply_path, "%.4000s/gaussians.ply", out);
    snprintf(cfg_path, sizeof cfg_path, "%.4000s/config.json", out);
    double t0 = base_now();
    DsMesh mesh; /* input errors first, before anything is written */
    if (load_mesh(&cfg, &mesh, err, sizeof err)) {
        fprintf(stderr, "anima gs fit: %s\n", err);
        return 2;
    }
    if (cmd_make_dirs(renders) != 0) {
        ds_mesh_free(&mesh);
        fprintf(stderr, "anima gs fit: cannot create the output directory %s (%s)\n", renders, strerror(errno));
        return 1; /* a runtime failure (the OS refused), as for the other commands */
    }
    char *cfg_json = ds_config_to_json(GS_SCHEMA, &cfg);
    if (cmd_write_text(cfg_path, cfg_json, err, sizeof err)) {
        fprintf(stderr, "anima gs fit: %s\n", err);
        ds_mesh_free(&mesh);
        free(cfg_json);
        return 1;
    }

    TensorScope *scope = tensor_scope_begin(); /* targets, parameters, optimizer state */
    DsRasterOptions ro = gs_fit_raster_options();
    ro.supersample = (int)cfg.scene.supersample;
    GsFitScene scene;
    if (gs_fit_scene_make(&mesh, (int)cfg.scene.views, (int)cfg.scene.test_views, (int)cfg.scene.size, cfg.scene.fov,
                          &ro, &scene, err, sizeof err)) {
        fprintf(stderr, "anima gs fit: %s: %s\n", cfg.scene.mesh, err);
        ds_mesh_free(&mesh);
        free(cfg_json);
        tensor_runtime_shutdown();
        return 2;
    }
    ds_mesh_free(&mesh);

    GsFitConfig fc = gs_fit_defaults();
    fc.n = cfg.model.n, fc.isotropic = cfg.model.isotropic, fc.sh_degree = (int)cfg.model.sh_degree;
    fc.seed = (uint64_t)cfg.seed, fc.init_opacity = cfg.model.init_opacity, fc.init_scale = cfg.model.init_scale;
    fc.lr_means = cfg.optim.lr_means, fc.lr_means_final = cfg.optim.lr_means_final;
    fc.lr_means_steps = cfg.train.iters; /* 3DGS decays over its whole run (30k) */
    fc.lr_scales = cfg.optim.lr_scales, fc.lr_quats = cfg.optim.lr_quats, fc.lr_opacity = cfg.optim.lr_opacity;
    fc.lr_sh_dc = cfg.optim.lr_sh_dc, fc.lr_sh_rest = cfg.optim.lr_sh_rest, fc.lambda = cfg.optim.lambda;
    fc.sh_up_every = cfg.train.sh_up_every, fc.relocate_every = cfg.train.relocate_every;
    fc.refine_until = (int64_t)(cfg.train.refine_frac * (double)cfg.train.iters), fc.reset_every = cfg.train.reset_every;
    fc.prune_opacity = cfg.train.prune_opacity, fc.random_background = cfg.train.random_background;
    fc.cuda = cuda;
    double lo[3], hi[3];
    ds_box_grow(scene.lo, scene.hi, cfg.model.box_margin, lo, hi);
    GsFit fit;
    gs_fit_init(&fit, &fc, lo, hi, scene.extent);
    double psnr0 = gs_fit_eval(&fit, &scene, true);
    double t_setup = base_now() - t0;
    fprintf(stderr, "anima gs fit: %s, %d training + %d held-out views at %lldx%lld, %lld Gaussians (%s, SH %d); "
                    "held-out PSNR at init %.2f dB\n",
            cfg.scene.mesh, scene.n_train, scene.n_test, (long long)cfg.scene.size, (long long)cfg.scene.size,
            (long long)fc.n, fc.isotropic ? "isotropic" : "anisotropic", fc.sh_degree, psnr0);

    BaseProgress display;
    OptimTrainOptions to = {.name = "anima gs fit", .total_steps = cfg.train.iters, .log_every = cfg.train.log_every,
                            .metrics_path = log_path, .config_json = cfg_json,
                            .progress = cmd_train_progress(&display, progress), .progress_user = &display};
    OptimTrain tl;
    /* no checkpoints (ckpt_path NULL): the params handed over are only what the loop would save */
    if (optim_train_init(&tl, &to, &fit.group[GS_FIT_MEANS], &fit.optim[GS_FIT_MEANS],
                         (TensorRng){.seed = (uint64_t)cfg.seed, .stream = 3}, err, sizeof err)) {
        fprintf(stderr, "anima gs fit: %s\n", err);
        gs_fit_free(&fit);
        gs_fit_scene_free(&scene);
        free(cfg_json);
        tensor_runtime_shutdown();
        return 1;
    }
    double t_train = base_now();
    while (optim_train_next(&tl)) {
        int64_t v;
        /* 3DGS pops views off a reshuffled stack: every view once per epoch */
        optim_data_order((uint64_t)cfg.seed, tl.step, scene.n_train, 1, &v);
        double lr = gs_fit_lr_means(&fit, fit.step);
        double loss = gs_fit_step_view(&fit, &scene, (int)v);
        bool log_now = (tl.step + 1) % cfg.train.log_every == 0 || tl.step + 1 == cfg.train.iters;
        OptimMetric extra[3] = {{"test_psnr", log_now ? gs_fit_eval(&fit, &scene, true) : NAN},
                                {"relocated", (double)fit.relocated},
                                {"view", (double)v}};
        optim_train_step_end(&tl, loss, lr, 3, extra);
    }
    bool finished = tl.step >= cfg.train.iters;
    double t_loop = base_now() - t_train;
    rc = optim_train_finish(&tl);

    double psnr_test = gs_fit_eval(&fit, &scene, true), psnr_train = gs_fit_eval(&fit, &scene, false);
    DsGaussians g = {0};
    err[0] = 0;
    if (gs_fit_export(&fit, &g) || ds_gaussians_write(ply_path, &g, err, sizeof err) ||
        write_renders(renders, &fit, &scene, err, sizeof err)) {
        fprintf(stderr, "anima gs fit: %s\n", err[0] ? err : "out of memory");
        rc = 1;
    }
    ds_gaussians_free(&g);
    printf("%s after %lld iterations: held-out PSNR %.2f dB (%d views; %.2f dB at init), training PSNR %.2f dB; "
           "%.1f s (setup %.1f s, %.1f ms/iteration)\n",
           finished ? "done" : "stopped", (long long)fit.step, psnr_test, scene.n_test, psnr0, psnr_train,
           base_now() - t0, t_setup, fit.step ? 1e3 * t_loop / (double)fit.step : 0.0);
    printf("held-out PSNR per view:");
    for (int v = 0; v < scene.n_test; v++) {
        TensorScope *sc = tensor_scope_begin();
        printf(" %.2f", gs_psnr(gs_fit_render(&fit, &scene.test[v]), scene.test_img[v]));
        tensor_scope_end(sc);
    }
    printf(" dB\n");
    if (rc == 0) printf("wrote %s, %s/{train,test}_NN.png, %s\n", ply_path, renders, log_path);
    gs_fit_free(&fit);
    gs_fit_scene_free(&scene);
    tensor_scope_end(scope);
    free(cfg_json);
    tensor_runtime_shutdown();
    return rc;
}

int cmd_gs(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "fit")) return gs_fit_main(argc - 1, argv + 1);
    static const CmdArg none[] = {{0}};
    const CmdArgSpec spec = {"anima gs", "fit [options]", "3D Gaussian Splatting (anima gs fit --help)", none, NULL, 1, 1};
    const char *pos[1];
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, NULL);
    if (prc == CMD_ARGS_HELP) return 0;
    if (prc == CMD_ARGS_OK) cmd_args_fail(&spec, stderr, "unknown subcommand '%s'", pos[0]);
    return 2;
}
