/* tests/test_cli.c — the subcommands' arguments (tools/cmd_args.h) through ./anima (or $ANIMA):
 * every command says the same things the same way — an unknown option, a missing value, a bad
 * number — exits 2, and its --help lists every option of its table. Skips (77) when the program
 * is not built. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

static const char *anima_bin(void) {
    const char *b = getenv("ANIMA");
    return b && *b ? b : "./anima";
}

static int run(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s %s 2>&1", anima_bin(), args);
    return test_run_capture(cmd, out, n);
}

static void need_anima(void) {
    if (access(anima_bin(), X_OK) != 0) {
        printf("    skipped: %s not built\n", anima_bin());
        _exit(77);
    }
}

#define CHECK_OUT(out, ...)                                                                      \
    do {                                                                                         \
        const char *needles_[] = {__VA_ARGS__};                                                  \
        for (size_t k_ = 0; k_ < sizeof needles_ / sizeof *needles_; k_++)                       \
            CHECK_MSG(strstr(out, needles_[k_]), "output lacks '%s':\n%s", needles_[k_], out);   \
    } while (0)

TEST(cli_bad_arguments_exit_2_naming_them) {
    need_anima();
    char out[16384];
    const struct {
        const char *args, *needles[3];
    } cases[] = {
        {"sim --scene scenes/drop.json --out /tmp/x --foo", {"anima sim: unknown argument '--foo'", "usage: anima sim", "--help"}},
        {"sim --scene", {"anima sim: --scene needs a value", "usage: anima sim", "--help"}},
        {"sim --scene scenes/drop.json --out /tmp/x --steps x", {"anima sim: --steps expects a positive integer", "'x'", "usage"}},
        {"sim --out /tmp/x", {"anima sim: --scene is required", "usage", "--help"}},
        {"sim skinning /tmp/x.h5 --kind cone", {"anima sim skinning: --kind expects bones or rbf", "'cone'", "usage"}},
        {"fit --stop-after 2.5", {"anima fit: --stop-after expects a positive integer", "'2.5'", "usage"}},
        {"fit --device tpu", {"anima fit: --device expects cpu or cuda", "'tpu'", "usage"}},
        {"fit --frobnicate", {"anima fit: unknown argument '--frobnicate'", "usage: anima fit", "--help"}},
        {"gs fit --iters", {"anima gs fit: --iters needs a value", "usage: anima gs fit", "--help"}},
        {"gs fit --set train.iters=0", {"anima gs fit:", "'train.iters'", "got 0"}},
        {"gs draw", {"anima gs: unknown subcommand 'draw'", "usage: anima gs", "--help"}},
        {"mesh convert a.ply", {"anima mesh convert: missing arguments", "usage: anima mesh convert IN OUT", "--help"}},
        {"mesh convert a.ply b.ply --binary", {"anima mesh convert: unknown argument '--binary'", "usage", "--help"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = run(cases[i].args, out, sizeof out);
        CHECK_MSG(rc == 2, "'%s': exit %d (want 2): %s", cases[i].args, rc, out);
        CHECK_OUT(out, cases[i].needles[0], cases[i].needles[1], cases[i].needles[2]);
    }
}

TEST(cli_help_lists_every_option) {
    need_anima();
    char out[16384];
    const struct {
        const char *cmd, *options[8];
    } cases[] = {
        {"sim", {"--scene", "--out", "--steps", "--quiet"}},
        {"sim skinning", {"--category", "--kind", "--handles", "--seed", "--cubature-res", "--mesh-res", "--normalize"}},
        {"fit", {"--config", "--out", "--resume", "--set", "--stop-after", "--no-progress", "--device"}},
        {"mesh convert", {"--ascii"}},
        {"gs fit", {"--config", "--mesh", "--views", "--test-views", "--size", "--iters", "--out", "--set"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[256];
        snprintf(args, sizeof args, "%s --help", cases[i].cmd);
        int rc = run(args, out, sizeof out);
        CHECK_MSG(rc == 0, "'%s': exit %d: %s", args, rc, out);
        CHECK_OUT(out, "usage: anima", "options:", "-h, --help");
        for (int k = 0; k < 8 && cases[i].options[k]; k++) CHECK_OUT(out, cases[i].options[k]);
    }
}
