/* tests/test_faults.c — writes on a full disk: each command that writes runs under the LD_PRELOAD
 * shim tests/faults/fullshim.c ($(BUILD)/fullshim.so), which fails write/pwrite/fsync (and the
 * stdio writes) with ENOSPC once a few bytes have gone to the files under test, at several fill
 * points. Each time: exit status 1 (not a crash), no success line, the final file absent or
 * byte-identical to the one there before, no temporary left behind, and one message naming the
 * file and the OS error. A roomy run under the same shim succeeds, so the shim itself breaks
 * nothing. Skips (77) when ./anima or the shim is not built. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/corpus/skinning_file.h"
#include "test.h"

static const char *shim_path(void) {
    static char p[4096];
    const char *e = getenv("ANIMA_FULLSHIM");
    if (e && *e) return e;
    const char *b = getenv("BUILD");
    snprintf(p, sizeof p, "%s/fullshim.so", b && *b ? b : "build");
    return p;
}

static void need_tools(void) {
    if (access(test_anima_bin(), X_OK) != 0 || access(shim_path(), R_OK) != 0) {
        printf("    skipped: %s or %s not built\n", test_anima_bin(), shim_path());
        _exit(77);
    }
    if (test_quick()) { /* make valgrind: some 100 runs of ./anima, each ~40 s under memcheck */
        printf("    skipped under ANIMA_TEST_QUICK (make valgrind): make test and SANITIZE=1 run them\n");
        _exit(77);
    }
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    fclose(f);
    return b;
}

/* a name in dir holding ".tmp" (a temporary left behind), else NULL */
static const char *find_temp(const char *dir) {
    static char name[512];
    DIR *d = opendir(dir);
    if (!d) return NULL;
    struct dirent *e;
    const char *found = NULL;
    while (!found && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp")) snprintf(name, sizeof name, "%s", e->d_name), found = name;
    closedir(d);
    return found;
}

/* Runs `anima args` in dir with the disk full after `bytes` bytes to files whose path holds
 * match; output (stdout then stderr) into out. Its exit status. */
static int run_full(const char *dir, const char *match, long bytes, const char *args, char *out, size_t n) {
    char cmd[8192], abs_bin[4096];
    const char *bin = test_anima_bin();
    if (bin[0] != '/' && getcwd(abs_bin, sizeof abs_bin)) {
        size_t l = strlen(abs_bin);
        snprintf(abs_bin + l, sizeof abs_bin - l, "/%s", bin);
        bin = abs_bin;
    }
    char shim[4096];
    if (shim_path()[0] != '/' && getcwd(shim, sizeof shim)) {
        size_t l = strlen(shim);
        snprintf(shim + l, sizeof shim - l, "/%s", shim_path());
    } else snprintf(shim, sizeof shim, "%s", shim_path());
    snprintf(cmd, sizeof cmd,
             "cd %s && OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "
             "ANIMA_FAULT_MATCH='%s' ANIMA_FAULT_BYTES=%ld LD_PRELOAD=%s %s %s 2>&1",
             dir, match, bytes, shim, bin, args);
    return test_run_capture(cmd, out, n);
}

typedef struct {
    const char *args;    /* run in the test's directory */
    const char *final;   /* the file that must be whole or absent, relative to it */
    const char *tmpdir;  /* where a temporary would be left ("." or a subdirectory) */
    const char *match;   /* the files the disk fills up for */
    const char *success; /* what only a successful run prints */
    const char *named;   /* what the message names (NULL: final) */
} FaultCase;

/* The case at each fill point: refused, nothing half-written. With keep_previous, a good
 * final file is made first (a roomy run) and must come through unchanged. */
static void check_case(const char *name, const FaultCase *c, const long *fills, int nfill, bool keep_previous,
                       void (*setup)(const char *dir)) {
    char dir[256], final[512], tdir[512], out[65536];
    snprintf(dir, sizeof dir, "/tmp/anima-faults-%s-%d", name, (int)getpid());
    snprintf(final, sizeof final, "%s/%s", dir, c->final);
    snprintf(tdir, sizeof tdir, "%s/%s", dir, c->tmpdir);
    for (int i = 0; i < nfill; i++) {
        char rm[600];
        snprintf(rm, sizeof rm, "rm -rf %s && mkdir -p %s", dir, dir);
        CHECK(system(rm) == 0);
        if (setup) setup(dir);
        char *prev = NULL;
        size_t nprev = 0;
        if (keep_previous) {
            int rc = run_full(dir, "/nothing-matches/", 0, c->args, out, sizeof out);
            CHECK_MSG(rc == 0, "%s: the roomy run exited %d:\n%s", name, rc, out);
            CHECK_MSG(strstr(out, c->success), "%s: the roomy run lacks '%s':\n%s", name, c->success, out);
            prev = slurp(final, &nprev);
            CHECK_MSG(prev && nprev > 0, "%s: no %s after the roomy run", name, final);
        }
        int rc = run_full(dir, c->match, fills[i], c->args, out, sizeof out);
        const char *what = keep_previous ? "over a previous file" : "";
        CHECK_MSG(rc == 1, "%s at %ld bytes %s: exit %d (want 1):\n%s", name, fills[i], what, rc, out);
        CHECK_MSG(!strstr(out, c->success), "%s at %ld bytes: claims success ('%s'):\n%s", name, fills[i], c->success, out);
        CHECK_MSG(!strstr(out, "HDF5-DIAG"), "%s at %ld bytes: libhdf5's own error stack printed:\n%s", name, fills[i], out);
        CHECK_MSG(strstr(out, "No space left on device"), "%s at %ld bytes: no OS error in:\n%s", name, fills[i], out);
        const char *named = c->named ? c->named : c->final;
        CHECK_MSG(strstr(out, named), "%s at %ld bytes: no message naming %s:\n%s", name, fills[i], named, out);
        size_t ncur = 0;
        char *cur = slurp(final, &ncur);
        if (prev) CHECK_MSG(cur && ncur == nprev && !memcmp(cur, prev, nprev), "%s at %ld bytes: %s changed (%zu bytes, was %zu)",
                            name, fills[i], final, ncur, nprev);
        else CHECK_MSG(!cur, "%s at %ld bytes: %s exists (%zu bytes) after a failed write", name, fills[i], final, ncur);
        const char *t = find_temp(tdir);
        CHECK_MSG(!t, "%s at %ld bytes: temporary %s/%s left behind", name, fills[i], tdir, t);
        free(cur), free(prev);
    }
    /* the same shim with room enough: the command works and writes its file */
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(rm) == 0);
    if (setup) setup(dir);
    int rc = run_full(dir, c->match, 1L << 30, c->args, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, c->success), "%s with room: exit %d:\n%s", name, rc, out);
    struct stat st;
    CHECK_MSG(stat(final, &st) == 0 && st.st_size > 0, "%s with room: no %s", name, final);
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    CHECK(system(rm) == 0);
}

static void write_cube(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/cube.obj", dir);
    FILE *f = fopen(p, "w");
    if (!f) return;
    for (int i = 0; i < 8; i++) fprintf(f, "v %d %d %d\n", i & 1 ? 1 : -1, i & 2 ? 1 : -1, i & 4 ? 1 : -1);
    static const int tri[12][3] = {{1, 4, 2}, {1, 3, 4}, {5, 6, 8}, {5, 8, 7}, {1, 2, 6}, {1, 6, 5},
                                   {3, 7, 8}, {3, 8, 4}, {1, 5, 7}, {1, 7, 3}, {2, 4, 8}, {2, 8, 6}};
    for (int i = 0; i < 12; i++) fprintf(f, "f %d %d %d\n", tri[i][0], tri[i][1], tri[i][2]);
    fclose(f);
}

/* found bug 1 and 2: a skinning file on a full disk exited 0 with zeros read back, or crashed at
 * exit (SEGV in H5F__close_cb from H5_term_library) after a failed H5Dclose/H5Fclose */
TEST(faults_physskin_skin_full_disk) {
    need_tools();
    static char args[4096];
    char cwd[2048];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(args, sizeof args, "physskin skin --ckpt %s/models/physskin/pretrained/small.h5 --mesh cube.obj --out b.h5", cwd);
    FaultCase c = {args, "b.h5", ".", "b.h5", " -> ", NULL};
    const long fills[] = {0, 4096, 32768, 49152};
    check_case("skin", &c, fills, 4, false, write_cube);
    check_case("skin-prev", &c, fills, 4, true, write_cube);
}

/* found bug 2: `anima fit` crashed at exit after a failed checkpoint write */
TEST(faults_fit_checkpoint_full_disk) {
    need_tools();
    static char args[4096];
    char cwd[2048];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(args, sizeof args,
             "fit --config %s/configs/fit-mlp.json --out run --set train.steps=20 --set train.ckpt_every=20 --no-progress",
             cwd);
    FaultCase c = {args, "run/ckpt.h5", "run", "ckpt.h5", "anima fit: done", NULL};
    const long fills[] = {0, 4096, 16384};
    check_case("fit", &c, fills, 3, false, NULL);
    /* a periodic checkpoint that fails stops the run with one message, not a second attempt at
     * the same step's save (which said "cannot create the temporary file" next) */
    char dir[256], out[65536], a2[4200];
    snprintf(dir, sizeof dir, "/tmp/anima-faults-fit1-%d", (int)getpid());
    snprintf(a2, sizeof a2, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(a2) == 0);
    snprintf(a2, sizeof a2, "fit --config %s/configs/fit-mlp.json --out run --set train.steps=20 --set train.ckpt_every=10 --no-progress",
             cwd);
    int rc = run_full(dir, "ckpt.h5", 4096, a2, out, sizeof out);
    int n = 0;
    for (const char *p = out; (p = strstr(p, "ckpt.h5")); p++) n++;
    CHECK_MSG(rc == 1 && n == 1, "exit %d, %d messages naming ckpt.h5 (want 1):\n%s", rc, n, out);
    snprintf(a2, sizeof a2, "rm -rf %s", dir);
    CHECK(system(a2) == 0);
}

/* found bug 3: `gs fit` printed "wrote …/gaussians.ply" after its write failed, and left
 * config.json.tmp behind when config.json could not be written */
TEST(faults_gs_fit_full_disk) {
    need_tools();
    static const char *args = "gs fit --mesh cube.obj --views 2 --test-views 1 --size 32 --iters 3 --out run --no-progress";
    const long fills[] = {0, 4096, 400000};
    FaultCase ply = {args, "run/gaussians.ply", "run", "gaussians.ply", "wrote ", NULL};
    check_case("gs-ply", &ply, fills, 3, false, write_cube);
    /* the renders: the last one is absent, the one that failed is named with the OS error */
    FaultCase png = {args, "run/renders/test_00.png", "run/renders", ".png", "wrote ", ".png: write failed"};
    check_case("gs-png", &png, fills, 2, false, write_cube);
    /* everything under run/: config.json is the first file */
    FaultCase all = {args, "run/config.json", "run", "run/", "wrote ", NULL};
    check_case("gs-all", &all, fills, 1, false, write_cube);
}

/* found bug 2: `dataset make` crashed at exit and printed libhdf5's error stacks (from its writer
 * thread) when a cache could not be written; the fill points reach train.h5, then val.h5 after
 * a complete train.h5 (an empty cache: its failure is in the metadata flush) */
TEST(faults_dataset_make_full_disk) {
    need_tools();
    static const char *args = "dataset make --count 2 --grid 16 --surface 64 --sharp 16 --cubature-res 8 --out ds --no-progress";
    const long fills[] = {0, 4096, 8192, 16384};
    FaultCase train = {args, "ds/train.h5", "ds", "ds/", "shapes/s)", NULL};
    check_case("ds-train", &train, fills, 4, false, NULL);
    const long later[] = {32768};
    FaultCase rest = {args, "ds/test.h5", "ds", "ds/", "shapes/s)", "ds/val.h5"};
    check_case("ds-rest", &rest, later, 1, false, NULL);
}

/* found bug 2: `physskin train` crashed at exit after "writing the checkpoint failed" */
TEST(faults_physskin_train_full_disk) {
    need_tools();
    static char args[4096];
    char cwd[2048];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(args, sizeof args, "physskin train --config %s/configs/physskin-tiny.json --data procedural:chair --out run", cwd);
    const long fills[] = {0, 4096, 65536};
    FaultCase c = {args, "run/ckpt.h5", "run", "ckpt.h5", "done at step", NULL};
    check_case("pstrain", &c, fills, 3, false, NULL);
}

/* `anima sim`'s frames (PLY, PNG) on a full disk */
TEST(faults_sim_full_disk) {
    need_tools();
    static char args[4096];
    char cwd[2048];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(args, sizeof args, "sim --scene %s/scenes/drop.json --out run --steps 2 --quiet", cwd);
    const long fills[] = {0, 4096};
    FaultCase c = {args, "run/frame_00000.ply", "run", "run/", "frames in", NULL};
    check_case("sim", &c, fills, 2, false, NULL);
}

/* `anima gaussianimate`'s stage logs (RUN/logs/<stage>.txt, the stages' stdout written by the
 * chain itself) on a full disk: the run stops naming the log, no half log or temporary is left;
 * with room the whole chain runs (a tiny benchmark and a fit of a few steps) */
static void tiny_motion_bench(const char *dir) {
    char cmd[8192], bin[4096];
    if (!realpath(test_anima_bin(), bin)) return; /* the runs below then fail naming the missing benchmark */
    snprintf(cmd, sizeof cmd, "cd %s && OMP_NUM_THREADS=1 %s dataset motion --category humanoid --out bench --frames 6 --views 6 "
             "--size 24 --grid 24 --motion cmu_01_01 --no-progress > /dev/null 2>&1", dir, bin);
    if (system(cmd) != 0) {
        /* as above */
    }
}

TEST(faults_gaussianimate_logs_full_disk) {
    need_tools();
    char cwd[1024], args[8192];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(args, sizeof args,
             "gaussianimate --data bench --out run --config %s/configs/gs4d-tiny.json --set train.iters=20 --set train.warmup=5 "
             "--bones 4 --rig-args '--iters 3 --ik-steps 5 --ik-points 50' --partmm-config %s/configs/partmm.json "
             "--animate-args '--set ik.method=fit --no-ply --set regress.steps=5' --no-progress", cwd, cwd);
    FaultCase c = {args, "run/logs/gs4d.txt", "run/logs", "logs/", "look at:", NULL};
    const long fills[] = {0, 64};
    check_case("gaussianimate", &c, fills, 2, false, tiny_motion_bench);
}

/* An output directory that cannot be written: chmod 555 when not root; as root (which ignores
 * permissions) a regular file stands where the directory should be (ENOTDIR). Each command
 * exits non-zero without crashing (1; fit and gs fit say 2 when they cannot create the output
 * directory), naming the path, claims nothing and leaves nothing behind. */
TEST(faults_unwritable_directory) {
    need_tools();
    char dir[256], ro[512], cmd[1024], out[65536], cwd[2048], args[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(dir, sizeof dir, "/tmp/anima-faults-ro-%d", (int)getpid());
    snprintf(ro, sizeof ro, "%s/ro", dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(cmd) == 0);
    write_cube(dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/bench && touch %s/bench/transforms_train.json", dir, dir); /* gaussianimate's --data check */
    CHECK(system(cmd) == 0);
    bool root = geteuid() == 0;
    if (root) {
        printf("    running as root, which ignores chmod: a regular file stands in for the directory\n");
        FILE *f = fopen(ro, "w");
        CHECK(f && fclose(f) == 0);
    } else {
        CHECK(mkdir(ro, 0755) == 0 && chmod(ro, 0555) == 0);
    }
    const struct {
        const char *fmt, *success, *named;
    } cases[] = {
        {"physskin skin --ckpt %s/models/physskin/pretrained/small.h5 --mesh cube.obj --out ro/b.h5", " -> ", "ro/b.h5"},
        {"fit --config %s/configs/fit-mlp.json --out ro/run --set train.steps=5 --no-progress", "anima fit: done", "ro/run"},
        {"gs fit --mesh cube.obj --views 2 --test-views 1 --size 32 --iters 2 --out ro/gs --no-progress", "wrote ", "ro/gs"},
        {"sim --scene %s/scenes/drop.json --out ro/sim --steps 1 --quiet", "frames in", "ro/sim"},
        {"dataset make --count 1 --grid 16 --surface 64 --sharp 16 --cubature-res 8 --out ro --no-progress", "shapes/s)", "ro/"},
        {"gaussianimate --data bench --out ro/run --no-progress", "look at:", "ro/run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(args, sizeof args, cases[i].fmt, cwd);
        int rc = run_full(dir, "/nothing-matches/", 0, args, out, sizeof out);
        CHECK_MSG(rc == 1 || rc == 2, "%s: exit %d (want 1 or 2):\n%s", args, rc, out);
        CHECK_MSG(!strstr(out, cases[i].success), "%s: claims success:\n%s", args, out);
        CHECK_MSG(strstr(out, cases[i].named), "%s: no message naming %s:\n%s", args, cases[i].named, out);
        CHECK_MSG(!strstr(out, "HDF5-DIAG"), "%s: libhdf5's error stack:\n%s", args, out);
        if (!root) CHECK_MSG(!find_temp(ro), "%s: temporary %s left in %s", args, find_temp(ro), ro);
    }
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", dir, dir);
    CHECK(system(cmd) == 0);
}

/* A real full disk: a small tmpfs, filled but for `room` bytes, when the suite may mount one
 * (root in a namespace that allows it); else skipped, saying why. The same checks as the shim's. */
static bool tmpfs_mount(const char *mnt) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && mount -t tmpfs -o size=4m tmpfs %s 2>/dev/null", mnt, mnt);
    return system(cmd) == 0;
}

static void tmpfs_fill(const char *mnt, long room) {
    char cmd[1024];
    /* everything but `room` bytes: a filler written until the disk refuses, then cut back */
    snprintf(cmd, sizeof cmd,
             "cd %s && find . -mindepth 1 -delete; (dd if=/dev/zero of=filler bs=4096 2>/dev/null; true) && "
             "sz=$(stat -c %%s filler) && truncate -s $((sz - %ld)) filler",
             mnt, room);
    CHECK(system(cmd) == 0);
}

TEST(faults_tmpfs_full_disk) {
    need_tools();
    char mnt[256], src[256], cmd[1024], out[65536], cwd[2048], args[4096], final[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(mnt, sizeof mnt, "/tmp/anima-faults-tmpfs-%d", (int)getpid());
    if (geteuid() != 0 || !tmpfs_mount(mnt)) {
        printf("    skipped: cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN); the LD_PRELOAD shim covers it\n");
        rmdir(mnt);
        _exit(77);
    }
    snprintf(src, sizeof src, "/tmp/anima-faults-tmpfs-src-%d", (int)getpid());
    CHECK(mkdir(src, 0755) == 0);
    write_cube(src);
    const struct {
        const char *fmt, *final, *success, *named;
    } cases[] = {
        {"physskin skin --ckpt %s/models/physskin/pretrained/small.h5 --mesh %s/cube.obj --out b.h5", "b.h5", " -> ", "b.h5"},
        {"fit --config %s/configs/fit-mlp.json --out run --set train.steps=20 --set train.ckpt_every=20 --no-progress",
         "run/ckpt.h5", "anima fit: done", "run/"},
        {"gs fit --mesh %2$s/cube.obj --views 2 --test-views 1 --size 32 --iters 2 --out run --no-progress",
         "run/gaussians.ply", "wrote ", "run/"},
    };
    const long rooms[] = {0, 4096, 16384, 40960};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int k = 0; k < 4; k++) {
            tmpfs_fill(mnt, rooms[k]);
            snprintf(args, sizeof args, cases[i].fmt, cwd, src);
            int rc = run_full(mnt, "/nothing-matches/", 0, args, out, sizeof out);
            CHECK_MSG(rc == 1, "%s with %ld bytes free: exit %d (want 1):\n%s", args, rooms[k], rc, out);
            CHECK_MSG(!strstr(out, cases[i].success), "%s with %ld bytes free: claims success:\n%s", args, rooms[k], out);
            CHECK_MSG(strstr(out, cases[i].named) && strstr(out, "No space left on device"),
                      "%s with %ld bytes free: no message naming %s and the OS error:\n%s", args, rooms[k], cases[i].named, out);
            CHECK_MSG(!strstr(out, "HDF5-DIAG"), "%s: libhdf5's error stack:\n%s", args, out);
            snprintf(final, sizeof final, "%s/%s", mnt, cases[i].final);
            CHECK_MSG(access(final, F_OK) != 0, "%s with %ld bytes free: %s exists after a failed write", args, rooms[k], final);
            const char *t = find_temp(mnt);
            if (!t) {
                char sub[512];
                snprintf(sub, sizeof sub, "%s/run", mnt);
                t = find_temp(sub);
            }
            CHECK_MSG(!t, "%s with %ld bytes free: temporary %s left behind", args, rooms[k], t);
        }
    snprintf(cmd, sizeof cmd, "umount %s && rmdir %s && rm -rf %s", mnt, mnt, src);
    CHECK(system(cmd) == 0);
}

/* SIGKILL at points through a save over a previous file: afterwards the file is the previous one
 * or a complete new one (it reads back, checksums and sizes checked), never half-written; the
 * temporaries of the killed writers are removed by the next save. (issue 17 must-exist 2c) */
TEST(faults_sigkill_skin_keeps_a_whole_file) {
    need_tools();
    char dir[256], args[3000], cmd[16384], out[65536], cwd[2048], final[512], err[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(dir, sizeof dir, "/tmp/anima-faults-kill-%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    CHECK(system(cmd) == 0);
    write_cube(dir);
    snprintf(final, sizeof final, "%s/b.h5", dir);
    snprintf(args, sizeof args, "physskin skin --ckpt %s/models/physskin/pretrained/small.h5 --mesh cube.obj --out b.h5", cwd);
    CHECK(run_full(dir, "/nothing-matches/", 0, args, out, sizeof out) == 0);
    size_t nprev = 0;
    char *prev = slurp(final, &nprev);
    CHECK(prev && nprev > 0);
    const char *bin = test_anima_bin();
    char abs_bin[6200];
    if (bin[0] != '/') snprintf(abs_bin, sizeof abs_bin, "%s/%s", cwd, bin), bin = abs_bin;
    int new_files = 0;
    for (int i = 0; i < 12; i++) {
        /* delays spread over the run (~0.3 s: loading, skinning, writing) */
        snprintf(cmd, sizeof cmd, "cd %s && OMP_NUM_THREADS=1 %s %s >/dev/null 2>&1 & sleep 0.%03d; kill -9 $! 2>/dev/null; wait",
                 dir, bin, args, 25 * i + 5);
        CHECK(system(cmd) >= 0);
        size_t ncur = 0;
        char *cur = slurp(final, &ncur);
        CHECK_MSG(cur != NULL, "kill %d: %s is gone", i, final);
        if (cur && !(ncur == nprev && !memcmp(cur, prev, nprev))) {
            DsSkinning sk;
            int rc = ds_skinning_read(final, &sk, err, sizeof err);
            CHECK_MSG(rc == 0, "kill %d: %s is neither the previous file nor a whole new one: %s", i, final, err);
            if (rc == 0) ds_skinning_free(&sk);
            new_files++;
            free(prev);
            prev = cur, nprev = ncur, cur = NULL;
        }
        free(cur);
    }
    printf("    %d of 12 killed runs had renamed a whole new file into place\n", new_files);
    /* one more save removes the killed writers' temporaries */
    CHECK(run_full(dir, "/nothing-matches/", 0, args, out, sizeof out) == 0);
    const char *t = find_temp(dir);
    CHECK_MSG(!t, "temporary %s left behind after a later save", t);
    free(prev);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
