/* tools/cmd_physskin.c — `anima physskin`: the PhysSkin++ neural skinning fields
 * (models/physskin/).
 *
 *   anima physskin train --config FILE --data SRC --out DIR [--resume] [--set k=v ...]
 *                        [--stop-after N] [--no-progress]
 *
 *   anima physskin skin --ckpt CKPT --mesh IN|DIR --out OUT.h5|DIR [--ply OUT] [--png OUT] [--cubature N]
 *
 * SRC is a dataset directory from `anima dataset make` or procedural:<category>,... (shapes
 * generated on the fly). Under `mpirun -np N` the shapes are sharded over the ranks. `skin`
 * writes the skinning file the simulator reads (datasets/skinning_file.h: weights and spatial
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

#include "base/alloc.h"
#include "datasets/mesh.h"
#include "datasets/skinning_file.h"
#include "models/physskin/eval.h"
#include "models/physskin/infer.h"
#include "models/physskin/train.h"
#include "tools/cmd.h"

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: anima physskin train --config FILE --data SRC [--out DIR] [--resume] [--set k=v ...]\n"
               "                            [--stop-after N] [--no-progress]\n"
               "  --config FILE   JSON config (configs/physskin-{paper,small,tiny}.json)\n"
               "  --data SRC      a dataset directory, or procedural:<category>,... (procedural: all)\n"
               "  --out DIR       writes DIR/ckpt.h5 and DIR/metrics.jsonl (default runs/physskin)\n"
               "  --resume        continue from DIR/ckpt.h5\n"
               "  --set k=v       override a config key, e.g. --set loss.combine=sum (repeatable)\n"
               "  --stop-after N  checkpoint and stop after N steps of this run\n"
               "  --no-progress   no progress display on stderr\n"
               "Run under mpirun -np N for data parallelism (shapes sharded over ranks).\n"
               "SIGINT/SIGTERM finish the current step, checkpoint and exit 130/143.\n");
    return rc;
}

static int cmd_train(int argc, char **argv) {
    const char *config_path = NULL, *out = "runs/physskin", *data = NULL;
    bool resume = false;
    int progress = -1;
    int64_t stop_after = 0;
    const char *sets[64];
    int nsets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout, 0);
        else if (!strcmp(a, "--config") && has_val) config_path = argv[++i];
        else if (!strcmp(a, "--data") && has_val) data = argv[++i];
        else if (!strcmp(a, "--out") && has_val) out = argv[++i];
        else if (!strcmp(a, "--resume")) resume = true;
        else if (!strcmp(a, "--no-progress")) progress = 0;
        else if (!strcmp(a, "--set") && has_val) {
            if (nsets == 64) {
                fprintf(stderr, "anima physskin train: more than 64 --set overrides\n");
                return 2;
            }
            sets[nsets++] = argv[++i];
        } else if (!strcmp(a, "--stop-after") && has_val) {
            char *end;
            stop_after = strtoll(argv[++i], &end, 10);
            if (*end || end == argv[i] || stop_after <= 0) {
                fprintf(stderr, "anima physskin train: --stop-after expects a positive integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            bool known = !strcmp(a, "--config") || !strcmp(a, "--out") || !strcmp(a, "--set") ||
                         !strcmp(a, "--data") || !strcmp(a, "--stop-after");
            fprintf(stderr, known ? "anima physskin train: %s needs a value\n"
                                  : "anima physskin train: unknown argument '%s'\n", a);
            return usage(stderr, 2);
        }
    }
    if (!data) {
        fprintf(stderr, "anima physskin train: --data is required\n");
        return usage(stderr, 2);
    }
    PsConfig cfg;
    char err[8192];
    if (ps_config_load(&cfg, config_path, nsets, sets, err, sizeof err)) {
        fprintf(stderr, "anima physskin train: %s\n", err);
        return 2;
    }
    if (cmd_make_dirs(out) != 0) {
        fprintf(stderr, "anima physskin train: cannot create the output directory %s (%s)\n", out, strerror(errno));
        return 2;
    }
    char *cfg_json = ds_config_to_json(PS_CONFIG_SCHEMA, &cfg);
    BaseProgress display;
    PsTrainArgs ta = {.cfg = &cfg, .cfg_json = cfg_json, .data = data, .out_dir = out, .resume = resume,
                      .progress = cmd_train_progress(&display, progress), .progress_user = &display,
                      .stop_after = stop_after};
    int rc = ps_train(&ta);
    free(cfg_json);
    tensor_runtime_shutdown();
    return rc;
}

static const char *SKIN_USAGE =
    "usage: anima physskin skin --ckpt CKPT --mesh IN --out OUT.h5 [--ply OUT.ply] [--png OUT.png]\n"
    "                           [--cubature N] [--size WxH]\n"
    "  --mesh IN       a mesh file (OBJ, PLY, OFF, STL), or a folder: every mesh file in it\n"
    "  --out OUT.h5    the skinning file (datasets/skinning_file.h) that `anima sim` scenes load\n"
    "                  as skinning {source: \"file\"}; with a folder: a folder, OUT/<name>.h5\n"
    "  --ply OUT.ply   the mesh (its file's frame) colored by handle; with a folder: a folder\n"
    "  --png OUT.png   that mesh rendered from a 3/4 view; with a folder: a folder\n"
    "  --cubature N    cubature points (default: the checkpoint's data.n_cubature; 0: all)\n"
    "  --size WxH      the render's size (default 640x480)\n"
    "Exit 1 when any input or the checkpoint is bad (each error names its file).\n";

static bool is_mesh_file(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return false;
    static const char *const exts[] = {".obj", ".ply", ".off", ".stl"};
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
        if (!strcasecmp(dot, exts[i])) return true;
    return false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

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
    int w = 640, h = 480;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(SKIN_USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--ckpt") && has_val) ckpt = argv[++i];
        else if (!strcmp(a, "--mesh") && has_val) mesh = argv[++i];
        else if (!strcmp(a, "--out") && has_val) out = argv[++i];
        else if (!strcmp(a, "--ply") && has_val) ply = argv[++i];
        else if (!strcmp(a, "--png") && has_val) png = argv[++i];
        else if (!strcmp(a, "--size") && has_val) {
            if (sscanf(argv[++i], "%dx%d", &w, &h) != 2 || w < 16 || h < 16 || w > 8192 || h > 8192) {
                fprintf(stderr, "anima physskin skin: --size expects WxH in [16, 8192], got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--cubature") && has_val) {
            char *end;
            ncub = strtoll(argv[++i], &end, 10);
            if (*end || end == argv[i] || ncub < 0) {
                fprintf(stderr, "anima physskin skin: --cubature expects a count, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "anima physskin skin: unknown argument or missing value '%s'\n", a);
            fputs(SKIN_USAGE, stderr);
            return 2;
        }
    }
    if (!ckpt || !mesh || !out) {
        fputs(SKIN_USAGE, stderr);
        return 2;
    }
    struct stat st;
    if (stat(mesh, &st) != 0) {
        fprintf(stderr, "anima physskin skin: %s: %s\n", mesh, strerror(errno));
        return 1;
    }
    char err[8192];
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
        if (n) qsort(names, n, sizeof *names, cmp_str);
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

/* `anima physskin eval` (models/physskin/eval.h): the §5 metrics table over held-out shapes */
static const char *EVAL_USAGE =
    "usage: anima physskin eval --ckpt CKPT --data SRC [--shapes N] [--baselines] [--ablations C1,C2,...]\n"
    "                           [--json OUT] [--baseline-steps N] [--baseline-hidden H] [--baseline-layers L]\n"
    "                           [--baseline-freqs K] [--baseline-lr LR] [--quiet]\n"
    "  --data SRC        procedural[:cat,...] (corpus indices past the checkpoint's training range),\n"
    "                    real:DIR (every mesh file in DIR, e.g. data/real), or a dataset directory\n"
    "                    from `anima dataset make` (its test.h5)\n"
    "  --shapes N        at most N shapes (default 16)\n"
    "  --baselines       add per-object optimization (a small MLP per shape, same losses) and the\n"
    "                    procedural rig weights\n"
    "  --ablations LIST  more checkpoints, one row each, named by how their config differs\n"
    "  --json OUT        per-shape values and the target checks\n"
    "  --baseline-*      the per-object MLP's budget and size (defaults: 300 steps, 3 layers of 64,\n"
    "                    4 Fourier frequencies, lr 1e-2)\n";

static int parse_i64(const char *flag, const char *s, int64_t min, int64_t *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || end == s || v < min) {
        fprintf(stderr, "anima physskin eval: %s expects an integer ≥ %lld, got '%s'\n", flag, (long long)min, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int cmd_eval(int argc, char **argv) {
    PsEvalArgs a = {.shapes = 16, .baseline = ps_baseline_defaults()};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        bool has_val = i + 1 < argc;
        int64_t v;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            fputs(EVAL_USAGE, stdout);
            return 0;
        } else if (!strcmp(f, "--baselines")) a.baselines = true;
        else if (!strcmp(f, "--quiet")) a.quiet = true;
        else if (!has_val) {
            fprintf(stderr, "anima physskin eval: unknown argument or missing value '%s'\n%s", f, EVAL_USAGE);
            return 2;
        } else if (!strcmp(f, "--ckpt")) a.ckpt = argv[++i];
        else if (!strcmp(f, "--data")) a.data = argv[++i];
        else if (!strcmp(f, "--ablations")) a.ablations = argv[++i];
        else if (!strcmp(f, "--json")) a.json = argv[++i];
        else if (!strcmp(f, "--baseline-lr")) {
            char *end;
            a.baseline.lr = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(a.baseline.lr > 0)) {
                fprintf(stderr, "anima physskin eval: --baseline-lr expects a positive number, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(f, "--shapes") || !strcmp(f, "--baseline-steps") || !strcmp(f, "--baseline-hidden") ||
                   !strcmp(f, "--baseline-layers") || !strcmp(f, "--baseline-freqs")) {
            bool freqs = !strcmp(f, "--baseline-freqs"), layers = !strcmp(f, "--baseline-layers");
            if (parse_i64(f, argv[++i], freqs || layers ? 0 : 1, &v)) return 2;
            if (!strcmp(f, "--shapes")) a.shapes = v;
            else if (!strcmp(f, "--baseline-steps")) a.baseline.steps = v;
            else if (!strcmp(f, "--baseline-hidden")) a.baseline.hidden = v;
            else if (layers) a.baseline.layers = v;
            else a.baseline.n_freqs = (int)(v < 32 ? v : 32);
        } else {
            fprintf(stderr, "anima physskin eval: unknown argument '%s'\n%s", f, EVAL_USAGE);
            return 2;
        }
    }
    if (!a.ckpt || !a.data) {
        fprintf(stderr, "anima physskin eval: --ckpt and --data are required\n%s", EVAL_USAGE);
        return 2;
    }
    char err[8192];
    int rc = ps_eval(&a, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "anima physskin eval: %s\n", err);
    tensor_runtime_shutdown();
    return rc ? 1 : 0;
}

int cmd_physskin(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: anima physskin train|skin|eval [options]   (anima physskin <sub> --help)\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "skin")) return cmd_skin(argc - 1, argv + 1);
    if (!strcmp(argv[1], "eval")) return cmd_eval(argc - 1, argv + 1);
    fprintf(stderr, "anima physskin: unknown subcommand '%s'\n", argv[1]);
    return 2;
}
