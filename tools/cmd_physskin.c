/* tools/cmd_physskin.c — `anima physskin`: the PhysSkin++ neural skinning fields
 * (models/physskin/).
 *
 *   anima physskin train --config FILE --data SRC --out DIR [--resume] [--set k=v ...]
 *                        [--stop-after N] [--no-progress]
 *
 *   anima physskin skin --ckpt CKPT --mesh IN --out OUT.h5 [--cubature N]
 *
 * SRC is a dataset directory from `anima dataset make` or procedural:<category>,... (shapes
 * generated on the fly). Under `mpirun -np N` the shapes are sharded over the ranks. `skin`
 * writes the weights at the mesh vertices and, at N cubature points, weights, spatial
 * gradients and volumes (models/physskin/infer.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static int make_dirs(const char *dir) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            if (!c) break;
            *p = c;
        }
    }
    return 0;
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
    if (make_dirs(out) != 0) {
        fprintf(stderr, "anima physskin train: cannot create the output directory %s (%s)\n", out, strerror(errno));
        return 2;
    }
    char *cfg_json = ds_config_to_json(PS_CONFIG_SCHEMA, &cfg);
    PsTrainArgs ta = {.cfg = &cfg, .cfg_json = cfg_json, .data = data, .out_dir = out, .resume = resume,
                      .progress = progress, .stop_after = stop_after};
    int rc = ps_train(&ta);
    free(cfg_json);
    tensor_runtime_shutdown();
    return rc;
}

static int cmd_skin(int argc, char **argv) {
    const char *ckpt = NULL, *mesh = NULL, *out = NULL;
    int64_t ncub = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: anima physskin skin --ckpt CKPT --mesh IN --out OUT.h5 [--cubature N]\n"
                   "  N cubature points (default: the checkpoint's data.n_cubature; 0: every candidate)\n");
            return 0;
        } else if (!strcmp(a, "--ckpt") && has_val) ckpt = argv[++i];
        else if (!strcmp(a, "--mesh") && has_val) mesh = argv[++i];
        else if (!strcmp(a, "--out") && has_val) out = argv[++i];
        else if (!strcmp(a, "--cubature") && has_val) {
            char *end;
            ncub = strtoll(argv[++i], &end, 10);
            if (*end || end == argv[i] || ncub < 0) {
                fprintf(stderr, "anima physskin skin: --cubature expects a count, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "anima physskin skin: unknown argument or missing value '%s'\n", a);
            return 2;
        }
    }
    if (!ckpt || !mesh || !out) {
        fprintf(stderr, "usage: anima physskin skin --ckpt CKPT --mesh IN --out OUT.h5 [--cubature N]\n");
        return 2;
    }
    char err[8192];
    if (ncub < 0) {
        PsConfig c;
        if (ps_checkpoint_config(ckpt, &c, err, sizeof err)) {
            fprintf(stderr, "anima physskin skin: %s\n", err);
            return 1;
        }
        ncub = c.data.n_cubature;
    }
    int rc = ps_skin_mesh(ckpt, mesh, out, ncub, err, sizeof err);
    if (rc) fprintf(stderr, "anima physskin skin: %s\n", err);
    tensor_runtime_shutdown();
    return rc ? 1 : 0;
}

int cmd_physskin(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: anima physskin train|skin [options]   (anima physskin <sub> --help)\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "skin")) return cmd_skin(argc - 1, argv + 1);
    fprintf(stderr, "anima physskin: unknown subcommand '%s'\n", argv[1]);
    return 2;
}
