/* tests/test_demo.c — `anima demo` (what `make demo` runs) end to end at a reduced size: the
 * pretrained checkpoint skins the demo shape, the simulator drops it with a ball, frames come
 * out. Runs ./anima (or $ANIMA) as a user would; skips (77) when the program is not built or
 * the committed checkpoint is missing. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datasets/corpus/skinning_file.h"
#include "test.h"

#define DEMO_CKPT "models/physskin/pretrained/small.h5"

static int run(const char *args, char *out, size_t n) {
    char cmd[4096];
    /* 2 threads unless the caller chose: `make valgrind` runs with 1, since valgrind serializes
     * threads and libgomp's spin-waiting then costs minutes */
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} %s demo %s 2>&1", test_anima_bin(), args);
    return test_run_capture(cmd, out, n);
}

static void need_demo(void) {
    if (access(test_anima_bin(), X_OK) != 0 || access(DEMO_CKPT, R_OK) != 0) {
        printf("    skipped: %s not built or %s missing\n", test_anima_bin(), DEMO_CKPT);
        fflush(stdout);
        _exit(77);
    }
}

/* both shape paths: the procedural one always, and the default (the bunny when fetched) */
TEST(demo_runs_to_completion_reduced) {
    need_demo();
    char dir[96], args[512], path[256], out[16384];
    snprintf(dir, sizeof dir, "/tmp/anima-demo-%d", (int)getpid());
    const char *meshes[2] = {"--mesh procedural", ""};
    /* quick (valgrind): the procedural shape only; the skinning step alone costs minutes there */
    for (int k = 0; k < (test_quick() ? 1 : 2); k++) {
        snprintf(args, sizeof args, "--out %s %s --steps 10 --every 5 --size 96x72", dir, meshes[k]);
        int rc = run(args, out, sizeof out);
        CHECK_MSG(rc == 0, "anima demo %s: exit %d\n%s", args, rc, out);
        for (int s = 1; s <= 4; s++) {
            char tag[8];
            snprintf(tag, sizeof tag, "[%d/4]", s);
            CHECK_MSG(strstr(out, tag), "no %s line:\n%s", tag, out);
        }
        CHECK_MSG(strstr(out, "3 frames"), "%s", out);
        const char *files[] = {"skinning.h5", "skinned.ply", "skinned.png", "scene.json", "frames/frame_00000.ply",
                               "frames/frame_00002.png"};
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            CHECK_MSG(access(path, R_OK) == 0, "%s missing", path);
        }
        /* what the demo skinned is a skinning file the simulator's reader takes */
        DsSkinning s;
        char err[1024];
        snprintf(path, sizeof path, "%s/skinning.h5", dir);
        CHECK_MSG(ds_skinning_read(path, &s, err, sizeof err) == 0, "%s", err);
        ds_skinning_free(&s);
    }
    /* a bad checkpoint: exit 1, naming it */
    snprintf(args, sizeof args, "--out %s --ckpt %s/scene.json --steps 2", dir, dir);
    int rc = run(args, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "scene.json"), "exit %d: %s", rc, out);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    CHECK(system(args) == 0);
}

TEST(demo_mlp_still_available) {
    need_demo();
    char out[16384];
    int rc = run("--mlp --steps 60", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "lower"), "exit %d: %s", rc, out);
}
