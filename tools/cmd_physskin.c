/* tools/cmd_physskin.c — `anima physskin`: the PhysSkin++ neural skinning fields
 * (models/physskin/).
 *
 *   anima physskin train [--config FILE] --data SRC --out DIR [--resume|--force] [--set k=v ...]
 *                        [--stop-after N] [--no-progress]
 *
 * Without --config it trains the small preset (configs/physskin-small.json, built in), or with
 * --resume the config DIR/ckpt.h5 stores, and says which; a DIR that holds a previous run needs
 * --resume or --force.
 *
 *   anima physskin skin --ckpt CKPT --mesh IN|DIR --out OUT.h5|DIR [--ply OUT] [--png OUT] [--cubature N]
 *
 * SRC is a dataset directory from `anima dataset make` or procedural:<category>,... (shapes
 * generated on the fly). Under `mpirun -np N` the shapes are sharded over the ranks. `skin`
 * writes the skinning file the simulator reads (datasets/corpus/skinning_file.h: weights and spatial
 * gradients at N cubature points and at the vertices, volumes, faces, the normalization),
 * optionally the mesh colored by handle (PLY) and a render of it (PNG); given a folder it loads
 * the checkpoint once and skins every mesh file in it (models/physskin/infer.h).
 *
 *   anima physskin eval --ckpt CKPT --data SRC [--shapes N] [--baselines] [--ablations C1,...] [--json OUT]
 *
 * `eval` prints the skinning-matrix metrics over held-out shapes (models/physskin/eval.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sort.h"
#include "base/alloc.h"
#include "datasets/mesh/mesh.h"
#include "datasets/corpus/skinning_file.h"
#include "models/physskin/eval.h"
#include "models/physskin/infer.h"
#include "models/physskin/train.h"
#include "tensor/backend.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

/* preparing the data: the display counts shapes */
static void data_progress(int64_t done, int64_t total, void *user) {
    BaseProgress *d = user;
    base_progress_update(d, done, total, 0, 0, done == total);
    if (done == total) base_progress_break(d);
}

static int cmd_train(int argc, char **argv) {
    const char *config_path = NULL, *out = "runs/physskin", *data = NULL;
    bool resume = false, force = false, no_progress = false;
    int64_t stop_after = 0;
    CmdArgList sets = {.n = 0};
    const char *device = "cpu";
    static const char *const DEVICES[] = {"cpu", "cuda", NULL};
    const CmdArg args[] = {
        {"--config", CMD_ARG_STRING, &config_path, "FILE",
         "JSON config (configs/physskin-{paper,small,tiny}.json; default: the small preset)"},
        {"--data", CMD_ARG_STRING, &data, "SRC", "a dataset directory, procedural:<category>,... (procedural: all), or rigs:<rig.h5|skinned model>,...",
         .required = true},
        {"--out", CMD_ARG_STRING, &out, "DIR", "writes DIR/ckpt.h5 and DIR/metrics.jsonl (default runs/physskin)"},
        {"--resume", CMD_ARG_FLAG, &resume, NULL, "continue from DIR/ckpt.h5"},
        {"--force", CMD_ARG_FLAG, &force, NULL, "replace the run DIR already holds (without it, or --resume, that is an error)"},
        {"--set", CMD_ARG_LIST, &sets, "k=v", "override a config key, e.g. --set loss.combine=sum"},
        {"--stop-after", CMD_ARG_INT, &stop_after, "N", "checkpoint and stop after N steps of this run", 1, -1},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {"--device", CMD_ARG_CHOICE, &device, "D",
         "cpu (default) or cuda: train on the GPU (parameters, batches, losses, optimizer there)", .choices = DEVICES},
        {0}};
    const CmdArgSpec spec = {"anima physskin train", "[--config FILE] --data SRC [--out DIR] [--resume|--force] [--set k=v ...] [options]",
                             "trains a PhysSkin++ skinning field (models/physskin/train.h)", args,
                             "Run under mpirun -np N for data parallelism (shapes sharded over ranks).\n"
                             "SIGINT/SIGTERM finish the current step, checkpoint and exit 130/143.\n",
                             .keys = PS_CONFIG_SCHEMA};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    int progress = no_progress ? 0 : -1;
    bool cuda = !strcmp(device, "cuda");
    if (cuda && !tensor_backend_cuda()) {
        fprintf(stderr, "anima physskin train: --device cuda: no CUDA device (built without CUDA=1, or no GPU answered)\n");
        return 2;
    }
    PsConfig cfg;
    char err[8192];
    /* never the schema's defaults (the paper's sizes: 10,000 shapes, width 768, 100k steps) by
     * accident: no --config is the small preset, and the run says so; --resume without one
     * continues with the config the checkpoint stores (its model's sizes) */
    char stored[4200];
    struct stat st;
    bool from_ckpt = !config_path && resume && snprintf(stored, sizeof stored, "%s/ckpt.h5", out) < (int)sizeof stored &&
                     stat(stored, &st) == 0;
    int crc = 0;
    if (from_ckpt) {
        crc = ps_checkpoint_config(stored, &cfg, err, sizeof err);
        for (int i = 0; i < sets.n && crc == 0; i++) crc = ds_config_set(sets.v[i], PS_CONFIG_SCHEMA, &cfg, err, sizeof err);
        if (crc == 0) crc = ps_config_validate(&cfg, err, sizeof err);
    } else
        crc = ps_config_load_text(&cfg, config_path ? config_path : "the small preset",
                                  config_path ? NULL : PS_CONFIG_SMALL_JSON, sets.n, sets.v, err, sizeof err);
    if (crc) {
        fprintf(stderr, "anima physskin train: %s\n", err);
        return 2;
    }
    if (from_ckpt)
        fprintf(stderr, "anima physskin train: no --config, resuming with the config stored in %s\n", stored);
    else if (!config_path)
        fprintf(stderr, "anima physskin train: no --config, using the small preset (configs/physskin-small.json)\n");
    static const char *const run_files[] = {"ckpt.h5", "metrics.jsonl", NULL};
    int drc = cmd_check_run_dir("anima physskin train", stderr, out, run_files, true, resume, force);
    if (drc) return drc;
    if (cmd_make_dirs(out) != 0) {
        fprintf(stderr, "anima physskin train: cannot create the output directory %s (%s)\n", out, strerror(errno));
        return 1; /* a runtime failure (the OS refused), as for the other commands */
    }
    char *cfg_json = ds_config_to_json(PS_CONFIG_SCHEMA, &cfg);
    BaseProgress display;
    /* preparing the data takes a while (tens of seconds for the larger presets): shown too */
    BaseProgress prep = {.out = stderr, .name = "anima physskin train: preparing data", .unit = "shapes",
                         .count_suffix = " shapes", .rate_digits = 1, .tty = progress < 0 && isatty(STDERR_FILENO)};
    PsTrainArgs ta = {.cfg = &cfg, .cfg_json = cfg_json, .data = data, .out_dir = out, .resume = resume,
                      .progress = cmd_train_progress(&display, progress), .progress_user = &display,
                      .stop_after = stop_after, .data_progress = progress ? data_progress : NULL,
                      .data_progress_user = &prep, .cuda = cuda};
    base_progress_begin(&prep, 0);
    int rc = ps_train(&ta);
    free(cfg_json);
    tensor_runtime_shutdown();
    return rc;
}

static bool is_mesh_file(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return false;
    static const char *const exts[] = {".obj", ".ply", ".off", ".stl"};
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
        if (!strcasecmp(dot, exts[i])) return true;
    return false;
}

/* One mesh: read, run, write the skinning file and the optional colored PLY and PNG. */
static int skin_one(PsSkinner *sk, const char *mesh_path, const char *out, const char *ply, const char *png,
                    int64_t ncub, int w, int h) {
    char err[8192];
    DsMesh mesh = {0}, colored = {0};
    DsSkinning s = {0};
    PsSkinMetrics met;
    int rc = 1;
    if (ds_mesh_read(mesh_path, &mesh, err, sizeof err) ||
        ps_skinner_run(sk, &mesh, mesh_path, ncub, &s, &met, err, sizeof err) ||
        ds_skinning_write(out, &s, err, sizeof err)) {
        fprintf(stderr, "anima physskin skin: %s\n", err);
        goto done;
    }
    printf("%s -> %s: %lld vertices, %lld cubature points, %lld handles; orthogonality error %.4g, condition "
           "number %.4g, spectral balance %.4f\n",
           mesh_path, out, (long long)s.nv, (long long)s.nc, (long long)s.m, met.orth_err, met.cond, met.balance);
    if (ply) {
        if (ds_skinning_mesh(&s, &colored, err, sizeof err)) goto fail;
        /* back to the input file's frame, so the PLY overlays the mesh it came from */
        for (int64_t v = 0; v < colored.nv; v++)
            for (int i = 0; i < 3; i++)
                colored.v[3 * v + i] = (float)(colored.v[3 * v + i] / s.scale + s.center[i]);
        if (ds_mesh_write(ply, &colored, false, err, sizeof err)) goto fail;
        printf("  colored by handle: %s\n", ply);
    }
    if (png) {
        if (ds_skinning_render_png(&s, png, w, h, err, sizeof err)) goto fail;
        printf("  render: %s\n", png);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "anima physskin skin: %s\n", err);
done:
    ds_mesh_free(&colored);
    ds_skinning_free(&s);
    ds_mesh_free(&mesh);
    return rc;
}

static int cmd_skin(int argc, char **argv) {
    const char *ckpt = NULL, *mesh = NULL, *out = NULL, *ply = NULL, *png = NULL;
    int64_t ncub = -1;
    int size[2] = {640, 480};
    const CmdArg args[] = {
        {"--ckpt", CMD_ARG_STRING, &ckpt, "CKPT|RUN", "the checkpoint (anima physskin train), or its run folder", .required = true},
        {"--mesh", CMD_ARG_STRING, &mesh, "IN", "a mesh file (OBJ, PLY, OFF, STL), or a folder: every mesh file in it",
         .required = true},
        {"--out", CMD_ARG_STRING, &out, "OUT.h5",
         "the skinning file (datasets/corpus/skinning_file.h) that `anima sim` scenes load as skinning {source: \"file\"}; "
         "with a folder: a folder, OUT/<name>.h5",
         .required = true},
        {"--ply", CMD_ARG_STRING, &ply, "OUT.ply", "the mesh (its file's frame) colored by handle; with a folder: a folder"},
        {"--png", CMD_ARG_STRING, &png, "OUT.png", "that mesh rendered from a 3/4 view; with a folder: a folder"},
        {"--cubature", CMD_ARG_INT, &ncub, "N", "cubature points (default: the checkpoint's data.n_cubature; 0: all)", 0,
         -1},
        {"--size", CMD_ARG_SIZE, size, "WxH", "the render's size (default 640x480)", 16, 8192},
        {0}};
    const CmdArgSpec spec = {"anima physskin skin", "--ckpt CKPT --mesh IN --out OUT.h5 [options]",
                             "skins a mesh (or every mesh of a folder) with a trained checkpoint", args,
                             "Exit 1 when any input or the checkpoint is bad (each error names its file).\n"};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    int w = size[0], h = size[1];
    struct stat st;
    if (stat(mesh, &st) != 0) {
        fprintf(stderr, "anima physskin skin: %s: %s\n", mesh, strerror(errno));
        return 1;
    }
    char err[8192];
    static char ckpt_file[4096];
    if (cmd_run_file(ckpt, (const char *const[]){"ckpt.h5", NULL}, ckpt_file, sizeof ckpt_file, err, sizeof err)) {
        fprintf(stderr, "anima physskin skin: %s\n", err);
        return 1;
    }
    ckpt = ckpt_file;
    PsSkinner sk;
    if (ps_skinner_load(&sk, ckpt, err, sizeof err)) {
        fprintf(stderr, "anima physskin skin: %s\n", err);
        tensor_runtime_shutdown();
        return 1;
    }
    if (ncub < 0) ncub = sk.cfg.data.n_cubature;
    int rc = 0;
    if (!S_ISDIR(st.st_mode)) {
        rc = skin_one(&sk, mesh, out, ply, png, ncub, w, h);
    } else {
        /* a folder: every mesh file in it, sorted; one bad file is reported and the rest still
         * run, and the exit status says that something failed */
        DIR *d = opendir(mesh);
        char **names = NULL;
        size_t n = 0, cap = 0;
        if (!d) {
            fprintf(stderr, "anima physskin skin: %s: %s\n", mesh, strerror(errno));
            rc = 1;
            goto out;
        }
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.' || !is_mesh_file(e->d_name)) continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                char **nn = base_realloc(names, cap * sizeof *names);
                names = nn;
            }
            names[n] = base_strdup(e->d_name);
            n++;
        }
        closedir(d);
        if (n) qsort(names, n, sizeof *names, base_cmp_str);
        if (!n) {
            fprintf(stderr, "anima physskin skin: %s: no mesh files (.obj .ply .off .stl) in the folder\n", mesh);
            rc = 1;
        }
        const char *dirs[3] = {out, ply, png};
        for (int k = 0; k < 3 && n; k++)
            if (dirs[k] && cmd_make_dirs(dirs[k]) != 0) {
                fprintf(stderr, "anima physskin skin: cannot create the output folder %s (%s)\n", dirs[k],
                        strerror(errno));
                rc = 1, n = 0;
            }
        int failed = 0;
        for (size_t i = 0; i < n; i++) {
            char in[4096], o[4096], p1[4096], p2[4096], stem[1024];
            snprintf(stem, sizeof stem, "%s", names[i]);
            *strrchr(stem, '.') = 0;
            snprintf(in, sizeof in, "%s/%s", mesh, names[i]);
            snprintf(o, sizeof o, "%s/%s.h5", out, stem);
            if (ply) snprintf(p1, sizeof p1, "%s/%s.ply", ply, stem);
            if (png) snprintf(p2, sizeof p2, "%s/%s.png", png, stem);
            fprintf(stderr, "[%zu/%zu] %s\n", i + 1, n, in);
            failed += skin_one(&sk, in, o, ply ? p1 : NULL, png ? p2 : NULL, ncub, w, h) != 0;
        }
        if (failed) {
            fprintf(stderr, "anima physskin skin: %d of %zu meshes in %s failed (errors above)\n", failed, n, mesh);
            rc = 1;
        }
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
    }
out:
    ps_skinner_free(&sk);
    tensor_runtime_shutdown();
    return rc;
}

/* ps_eval's progress on stderr: the notes and one line per method and shape */
static void eval_progress(const PsEvalProgress *p, void *user) {
    (void)user;
    switch (p->event) {
    case PS_EVAL_SKIPPED: fprintf(stderr, "anima physskin eval: skipping %s: %s\n", p->file, p->reason); break;
    case PS_EVAL_READY:
        fprintf(stderr, "anima physskin eval: %lld shapes (%lld–%lld vertices) ready in %.1f s\n", (long long)p->shapes,
                (long long)p->min_vertices, (long long)p->max_vertices, p->seconds);
        break;
    case PS_EVAL_SHAPE:
        /* inference in milliseconds, the baseline's per-shape training in seconds */
        fprintf(stderr, "  %-34.34s %-24.24s orth %.4f cond %8.3g bal %.4f  ", p->method, p->shape, p->orth, p->cond,
                p->balance);
        if (p->training_time) fprintf(stderr, "%.2f s\n", p->seconds);
        else fprintf(stderr, "%.1f ms\n", 1e3 * p->seconds);
        break;
    }
}

/* `anima physskin eval` (models/physskin/eval.h): the §5 metrics table over held-out shapes */
static int cmd_eval(int argc, char **argv) {
    PsEvalArgs a = {.shapes = 16, .baseline = ps_baseline_defaults(), .progress = eval_progress};
    bool quiet = false;
    int64_t freqs = a.baseline.n_freqs;
    const CmdArg args[] = {
        {"--ckpt", CMD_ARG_STRING, &a.ckpt, "CKPT|RUN", "the checkpoint to evaluate, or its run folder", .required = true},
        {"--data", CMD_ARG_STRING, &a.data, "SRC",
         "procedural[:cat,...] (corpus indices past the checkpoint's training range), real:DIR (every mesh file in DIR, "
         "e.g. data/real), or a dataset directory from `anima dataset make` (its test.h5)",
         .required = true},
        {"--shapes", CMD_ARG_INT, &a.shapes, "N", "at most N shapes (default 16)", 1, -1},
        {"--baselines", CMD_ARG_FLAG, &a.baselines, NULL,
         "add per-object optimization (a small MLP per shape, same losses) and the procedural rig weights"},
        {"--ablations", CMD_ARG_STRING, &a.ablations, "C1,C2,...",
         "more checkpoints, one row each, named by how their config differs"},
        {"--json", CMD_ARG_STRING, &a.json, "OUT", "per-shape values and the target checks"},
        {"--baseline-steps", CMD_ARG_INT, &a.baseline.steps, "N", "the per-object MLP's steps (default 300)", 1, -1},
        {"--baseline-hidden", CMD_ARG_INT, &a.baseline.hidden, "H", "its width (default 64)", 1, -1},
        {"--baseline-layers", CMD_ARG_INT, &a.baseline.layers, "L", "its hidden layers (default 3)", 0, -1},
        {"--baseline-freqs", CMD_ARG_INT, &freqs, "K", "its Fourier frequencies (default 4; at most 32 are used)", 0, -1},
        {"--baseline-lr", CMD_ARG_DOUBLE, &a.baseline.lr, "LR", "its Adam rate (default 1e-2)", 0, -1,
         .above_min = true},
        {"--quiet", CMD_ARG_FLAG, &quiet, NULL, "no per-shape progress on stderr"},
        {0}};
    const CmdArgSpec spec = {"anima physskin eval", "--ckpt CKPT --data SRC [options]",
                             "the skinning-matrix metrics over held-out shapes (models/physskin/eval.h)", args};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    a.baseline.n_freqs = (int)(freqs < 32 ? freqs : 32);
    if (quiet) a.progress = NULL;
    char err[8192];
    static char ckpt_file[4096];
    if (cmd_run_file(a.ckpt, (const char *const[]){"ckpt.h5", NULL}, ckpt_file, sizeof ckpt_file, err, sizeof err)) {
        fprintf(stderr, "anima physskin eval: %s\n", err);
        return 1;
    }
    a.ckpt = ckpt_file;
    int rc = ps_eval(&a, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "anima physskin eval: %s\n", err);
    tensor_runtime_shutdown();
    return rc ? 1 : 0;
}

int cmd_physskin(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "skin")) return cmd_skin(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "eval")) return cmd_eval(argc - 1, argv + 1);
    static const CmdArg none[] = {{0}};
    const CmdArgSpec spec = {"anima physskin", "train|skin|eval [options]",
                             "neural skinning fields (PhysSkin++): anima physskin <train|skin|eval> --help", none, NULL,
                             1, 1};
    const char *pos[1];
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, NULL);
    if (prc == CMD_ARGS_HELP) return 0;
    if (prc == CMD_ARGS_OK) cmd_args_fail(&spec, stderr, "unknown subcommand '%s'", pos[0]);
    return 2;
}
