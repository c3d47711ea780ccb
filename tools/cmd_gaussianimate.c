/* tools/cmd_gaussianimate.c — `anima gaussianimate --data DIR --out RUN`: the GaussiAnimate chain
 * in one command, from multi-view (or monocular) video to an animated character:
 *
 *   1. gs4d     RUN/gs4d/     deformable Gaussians fitted to the video (anima gs4d fit)
 *   2. eval     RUN/logs/eval.txt    their held-out PSNR/SSIM and Chamfer (anima gs4d eval)
 *   3. rig      RUN/rig/      a skeleton and skinning from their trajectories (anima skelebones)
 *   4. animate  RUN/anim/     PartMM on the held-out motion or a BVH, scored when the benchmark
 *                             has the held-out renders; --physics adds PhysSkin secondary motion
 *                             (anima animate)
 *   5. export   RUN/character.glb   the rig as glTF 2.0 (anima export)
 *
 * Each stage runs as a child process of this program (the same binary), writes its own
 * sub-folder, and counts as done when its output exists: a rerun resumes at the first unfinished
 * stage (an interrupted gs4d fit continues from its checkpoint, bit-identical), --from STAGE
 * redoes that stage and the ones after it. SIGINT stops the running stage the way that stage
 * stops (gs4d saves its checkpoint) and leaves every finished stage intact. The stages' progress
 * is on stderr as each shows it, under one "[k/5] stage" header per stage; their stdout goes to
 * RUN/logs/<stage>.txt; a closing summary prints each stage's figures and time and where to
 * look. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "base/interrupt.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

#define NAME "anima gaussianimate"

enum { ST_GS4D, ST_EVAL, ST_RIG, ST_ANIMATE, ST_EXPORT, ST_N };
static const char *const stage_names[ST_N] = {"gs4d", "eval", "rig", "animate", "export"};

typedef struct {
    double wall, cpu; /* seconds; 0 when skipped */
    bool ran, skipped;
} StageTime;

static bool exists(const char *dir, const char *file) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    struct stat st;
    return stat(p, &st) == 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -r path (absent: fine); 0 or -1 with errno */
static int remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The outputs of a stage, removed by --from (a stage redone starts from nothing) */
static void stage_paths(int s, const char *run, char out[2][4200]) {
    out[0][0] = out[1][0] = 0;
    switch (s) {
    case ST_GS4D: snprintf(out[0], 4200, "%s/gs4d", run); break;
    case ST_EVAL: snprintf(out[0], 4200, "%s/logs/eval.txt", run); break;
    case ST_RIG: snprintf(out[0], 4200, "%s/rig", run); break;
    case ST_ANIMATE: snprintf(out[0], 4200, "%s/anim", run); break;
    case ST_EXPORT: snprintf(out[0], 4200, "%s/character.glb", run); break;
    }
}

static bool stage_done(int s, const char *run, bool scored) {
    char d[4200];
    switch (s) {
    case ST_GS4D: snprintf(d, sizeof d, "%s/gs4d", run); return exists(d, "trajectories.h5") && exists(d, "canonical.ply");
    case ST_EVAL: return exists(run, "logs/eval.txt");
    case ST_RIG: return exists(run, "rig/rig.h5");
    case ST_ANIMATE: return exists(run, "anim/animation.h5") && (!scored || exists(run, "anim/eval.json"));
    case ST_EXPORT: return exists(run, "character.glb");
    }
    return false;
}

/* Runs this program with argv (argv[0] unused) as a child: its stdout comes back through a pipe
 * and this process writes it to log.tmp, every write, the flush, fsync and close checked, then
 * renames it to log when the stage succeeded (a full disk or an unwritable folder is an error
 * naming the log, and no half log is left); stderr is shared. The parent ignores SIGINT and
 * SIGTERM while the child runs (the child gets them from the terminal, or from the parent
 * passing them on, and stops its own way). Returns the child's exit status (128 + signal when it
 * was killed), 1 when the log could not be written, -1 when the child could not start. */
static int run_stage(char **argv, const char *log, StageTime *t) {
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%.4300s.tmp", log);
    FILE *f = fopen(tmp, "we"); /* close-on-exec: the stage must not hold it */
    if (!f) {
        fprintf(stderr, NAME ": cannot write %s (%s)\n", tmp, strerror(errno));
        return 1;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        fclose(f), remove(tmp);
        return -1;
    }
    double w0 = base_now();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]), fclose(f), remove(tmp);
        return -1;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
        if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(127);
        close(fds[0]), close(fds[1]);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fds[1]);
    BaseInterruptSaved saved;
    base_interrupt_catch(0, &saved);
    int passed = 0, werr = 0;
    char buf[8192];
    for (;;) { /* the child's stdout until it closes it; a failed write stops the writing, not the reading */
        ssize_t k = read(fds[0], buf, sizeof buf);
        if (k == 0) break;
        if (k < 0) {
            if (errno != EINTR) break;
            if (base_interrupt_signal && passed != base_interrupt_signal) { /* a signal sent to us alone (kill PID) reaches the stage */
                passed = base_interrupt_signal;
                kill(pid, base_interrupt_signal);
            }
            continue;
        }
        if (!werr && fwrite(buf, 1, (size_t)k, f) != (size_t)k) werr = errno ? errno : EIO;
    }
    close(fds[0]);
    int status = 0;
    struct rusage ru = {0};
    for (;;) {
        pid_t r = wait4(pid, &status, 0, &ru);
        if (r == pid || (r < 0 && errno != EINTR)) break;
        if (base_interrupt_signal && passed != base_interrupt_signal) passed = base_interrupt_signal, kill(pid, base_interrupt_signal);
    }
    base_interrupt_restore(&saved);
    if (!werr && (fflush(f) != 0 || fsync(fileno(f)) != 0)) werr = errno ? errno : EIO;
    if (fclose(f) != 0 && !werr) werr = errno ? errno : EIO;
    t->wall = base_now() - w0;
    t->cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
             1e-6 * (double)ru.ru_stime.tv_usec;
    t->ran = true;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    if (werr) {
        fprintf(stderr, NAME ": cannot write %s (%s)\n", log, strerror(werr));
        remove(tmp);
        return rc == 0 ? 1 : rc;
    }
    if (rc == 0 && rename(tmp, log) != 0) {
        fprintf(stderr, NAME ": cannot rename %s to %s (%s)\n", tmp, log, strerror(errno));
        remove(tmp);
        return 1;
    }
    return rc;
}

/* argv builder: strings live in a fixed arena of the builder */
typedef struct {
    char *v[96];
    int n;
    char buf[16384];
    size_t used;
} Argv;

static void arg(Argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(Argv *a, const char *fmt, ...) {
    if (a->n >= 95) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(a->buf + a->used, sizeof a->buf - a->used, fmt, ap);
    va_end(ap);
    if (k < 0 || a->used + (size_t)k + 1 > sizeof a->buf) return;
    a->v[a->n++] = a->buf + a->used;
    a->used += (size_t)k + 1;
    a->v[a->n] = NULL;
}

/* words of a user's "--rig-args '...'" string, split on spaces */
static void words(Argv *a, const char *s) {
    if (!s) return;
    char w[1024];
    while (*s) {
        while (*s == ' ') s++;
        size_t k = 0;
        while (*s && *s != ' ' && k + 1 < sizeof w) w[k++] = *s++;
        w[k] = 0;
        if (k) arg(a, "%s", w);
    }
}

/* the first line of a text file containing needle, copied into out (empty when none) */
static void grep_line(const char *path, const char *needle, char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[4096];
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, n, "%s", line);
            break;
        }
    fclose(f);
}

/* the token after the word key in a "key value key value" line ("" when absent) */
static void token_after(const char *line, const char *key, char *out, size_t n) {
    out[0] = 0;
    size_t k = strlen(key);
    for (const char *p = line; (p = strstr(p, key)); p += k)
        if ((p == line || p[-1] == ' ') && p[k] == ' ') {
            p += k + 1;
            size_t m = strcspn(p, " ");
            snprintf(out, n, "%.*s", (int)m, p);
            return;
        }
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) free(s), s = NULL;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static void summary(const char *run, const StageTime *t, bool scored) {
    char p[4400], line[4096];
    printf("\n" NAME ": %s\n", run);
    for (int s = 0; s < ST_N; s++)
        printf("  %-8s %s\n", stage_names[s],
               t[s].ran ? (snprintf(line, sizeof line, "%.1f s wall, %.1f CPU-s", t[s].wall, t[s].cpu), line)
                        : "done earlier (kept)");
    snprintf(p, sizeof p, "%s/logs/eval.txt", run);
    grep_line(p, "held-out PSNR", line, sizeof line);
    if (line[0]) printf("  gs4d:    %s\n", line);
    grep_line(p, "surface Chamfer", line, sizeof line);
    if (line[0]) printf("  gs4d:    %s\n", line);
    grep_line(p, "correspondence drift", line, sizeof line); /* do the Gaussians follow the material? */
    if (line[0]) printf("  gs4d:    %s\n", line);
    snprintf(p, sizeof p, "%s/logs/rig.txt", run);
    grep_line(p, "found_bones", line, sizeof line);
    if (line[0]) {
        char j[32], b[32], e1[32], e2[32];
        token_after(line, "joints", j, sizeof j), token_after(line, "found_bones", b, sizeof b);
        token_after(line, "posed_joint_err_true_to_found", e1, sizeof e1);
        token_after(line, "posed_joint_err_found_to_true", e2, sizeof e2);
        printf("  rig:     %s joints, %s bones found", j, b);
        if (e1[0]) printf("; joints against the true rig, posed: %s true->found, %s found->true", e1, e2);
        printf("\n");
    }
    snprintf(p, sizeof p, "%s/anim/eval.json", run);
    char *js = scored ? read_all(p) : NULL;
    cJSON *root = js ? cJSON_Parse(js) : NULL;
    const cJSON *rows = root ? cJSON_GetObjectItemCaseSensitive(root, "rows") : NULL, *r;
    const cJSON *tie = root ? cJSON_GetObjectItemCaseSensitive(root, "tie_residual_pct_diag") : NULL;
    if (cJSON_IsNumber(tie))
        printf("  animate: the truth, tied to the benchmark's surface, lies %.3f%% of the diagonal from the fit's own motion\n",
               tie->valuedouble);
    cJSON_ArrayForEach(r, rows) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
        if (!cJSON_IsString(m) || (strcmp(m->valuestring, "partmm") && strcmp(m->valuestring, "lbs") &&
                                   strcmp(m->valuestring, "truth")))
            continue;
        const cJSON *rm = cJSON_GetObjectItemCaseSensitive(r, "rmse_pct_diag"), *ps = cJSON_GetObjectItemCaseSensitive(r, "psnr");
        printf("  animate: %-7s RMSE %.3f%% of the diagonal, PSNR %s dB\n", m->valuestring, cJSON_IsNumber(rm) ? rm->valuedouble : -1,
               cJSON_IsNumber(ps) ? (snprintf(line, sizeof line, "%.2f", ps->valuedouble), line) : "-");
    }
    cJSON_Delete(root);
    free(js);
    printf("  look at: %s/anim/animation.mp4 (or .gif), %s/gs4d/turntable.mp4, %s/character.glb; anima view %s\n",
           run, run, run, run);
}

int cmd_gaussianimate(int argc, char **argv) {
    const char *data = NULL, *out = NULL, *config = NULL, *motion = "heldout", *physics = NULL, *from = NULL;
    const char *rig_args = NULL, *animate_args = NULL, *partmm_config = NULL;
    int64_t bones = 20;
    bool no_progress = false;
    CmdArgList sets = {0};
    static const char *const stages[] = {"gs4d", "eval", "rig", "animate", "export", NULL};
    const CmdArg args[] = {
        {"--data", CMD_ARG_STRING, &data, "DIR", "the video: a benchmark of anima dataset motion (transforms_*.json, multi-view or --monocular; with gt.h5 and heldout/ the joints and the animation are scored)", .required = true},
        {"--out", CMD_ARG_STRING, &out, "RUN", "the run folder: RUN/gs4d, RUN/logs, RUN/rig, RUN/anim, RUN/character.glb", .required = true},
        {"--config", CMD_ARG_STRING, &config, "FILE.json", "the gs4d fit's config (default configs/gs4d-repertoire.json)"},
        {"--set", CMD_ARG_LIST, &sets, "KEY=VALUE", "a gs4d config key (repeatable)"},
        {"--bones", CMD_ARG_INT, &bones, "B", "Skelebones' bone count (default 20)", 2, 200},
        {"--motion", CMD_ARG_STRING, &motion, "heldout|FILE.bvh", "what the character performs (default the benchmark's held-out motion)"},
        {"--physics", CMD_ARG_STRING, &physics, "CONFIG.json", "PhysSkin secondary motion on top of the animation (\"\": defaults)"},
        {"--partmm-config", CMD_ARG_STRING, &partmm_config, "FILE.json", "animate's config (default configs/partmm.json when it exists)"},
        {"--rig-args", CMD_ARG_STRING, &rig_args, "'ARGS'", "more arguments for anima skelebones (space-separated)"},
        {"--animate-args", CMD_ARG_STRING, &animate_args, "'ARGS'", "more arguments for anima animate (space-separated)"},
        {"--from", CMD_ARG_CHOICE, &from, "STAGE", "redo this stage and the ones after it (gs4d eval rig animate export)", .choices = stages},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress displays from the stages"},
        {0}};
    const CmdArgSpec spec = {NAME, "--data DIR --out RUN [options]",
                             "video -> deformable Gaussians -> Skelebones rig -> PartMM animation -> glTF, one stage per sub-folder; a rerun resumes",
                             args, "Exit 0 when every stage finished, 130 when interrupted (rerun to resume), 1 when a stage failed.\n"};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    struct stat st;
    char tj[4200];
    snprintf(tj, sizeof tj, "%s/transforms_train.json", data);
    if (stat(tj, &st) != 0) {
        fprintf(stderr, NAME ": %s has no transforms_train.json (anima dataset motion writes one)\n", data);
        return 1;
    }
    if (!config) config = "configs/gs4d-repertoire.json";
    if (!partmm_config && stat("configs/partmm.json", &st) == 0) partmm_config = "configs/partmm.json";
    bool is_bvh = strlen(motion) > 4 && !strcmp(motion + strlen(motion) - 4, ".bvh");
    bool has_gt = exists(data, "gt.h5");
    bool scored = !is_bvh && exists(data, "heldout/transforms_test.json");
    char logs[4200];
    snprintf(logs, sizeof logs, "%s/logs", out);
    if (cmd_make_dirs(logs) != 0) {
        fprintf(stderr, NAME ": cannot create %s (%s)\n", logs, strerror(errno));
        return 1;
    }
    int first = 0;
    if (from)
        for (int s = 0; s < ST_N; s++)
            if (!strcmp(from, stage_names[s])) first = s;
    if (from) /* redo: the stage's outputs and every later one's go first */
        for (int s = first; s < ST_N; s++) {
            char p[2][4200];
            stage_paths(s, out, p);
            if (p[0][0] && remove_tree(p[0]) != 0) {
                fprintf(stderr, NAME ": cannot remove %s (%s)\n", p[0], strerror(errno));
                return 1;
            }
        }
    StageTime t[ST_N] = {0};
    for (int s = 0; s < ST_N; s++) {
        if (stage_done(s, out, scored)) {
            t[s].skipped = true;
            fprintf(stderr, "[%d/%d] %s: done earlier, kept\n", s + 1, ST_N, stage_names[s]);
            continue;
        }
        Argv a = {0};
        arg(&a, "anima");
        char d[4200];
        switch (s) {
        case ST_GS4D:
            snprintf(d, sizeof d, "%s/gs4d", out);
            arg(&a, "gs4d"), arg(&a, "fit"), arg(&a, "--data"), arg(&a, "%s", data), arg(&a, "--config"), arg(&a, "%s", config);
            for (int i = 0; i < sets.n; i++) arg(&a, "--set"), arg(&a, "%s", sets.v[i]);
            arg(&a, "--out"), arg(&a, "%s", d);
            if (exists(d, "ckpt.h5")) arg(&a, "--resume");
            else if (stat(d, &st) == 0) arg(&a, "--force"); /* a start without a checkpoint yet: nothing to keep */
            break;
        case ST_EVAL: arg(&a, "gs4d"), arg(&a, "eval"), arg(&a, "%s/gs4d", out); break;
        case ST_RIG:
            arg(&a, "skelebones"), arg(&a, "--traj"), arg(&a, "%s/gs4d", out), arg(&a, "--bones"), arg(&a, "%lld", (long long)bones);
            if (has_gt) arg(&a, "--true-rig"), arg(&a, "%s/gt.h5", data);
            arg(&a, "--out"), arg(&a, "%s/rig", out);
            words(&a, rig_args);
            break;
        case ST_ANIMATE:
            arg(&a, "animate"), arg(&a, "--rig"), arg(&a, "%s/rig", out), arg(&a, "--gaussians"), arg(&a, "%s/gs4d", out);
            arg(&a, "--bench"), arg(&a, "%s", data), arg(&a, "--motion"), arg(&a, "%s", motion);
            if (scored) arg(&a, "--eval");
            if (partmm_config) arg(&a, "--config"), arg(&a, "%s", partmm_config);
            if (physics) arg(&a, "--physics"), arg(&a, "%s", physics);
            arg(&a, "--out"), arg(&a, "%s/anim", out);
            words(&a, animate_args);
            break;
        case ST_EXPORT: arg(&a, "export"), arg(&a, "%s", out), arg(&a, "--gltf"), arg(&a, "%s/character.glb", out); break;
        }
        if (no_progress && s != ST_EVAL && s != ST_EXPORT) arg(&a, "--no-progress");
        fprintf(stderr, "[%d/%d] %s:", s + 1, ST_N, stage_names[s]);
        for (int i = 0; i < a.n; i++) fprintf(stderr, " %s", a.v[i]);
        fprintf(stderr, "\n");
        char log[4300];
        snprintf(log, sizeof log, "%s/%s.txt", logs, stage_names[s]);
        int rc = run_stage(a.v, log, &t[s]);
        if (rc == 130 || rc == 143 || rc == 128 + SIGINT || rc == 128 + SIGTERM) {
            fprintf(stderr, NAME ": interrupted in stage %s; the finished stages are kept: rerun the same command to "
                    "resume\n", stage_names[s]);
            return 130;
        }
        if (rc != 0) {
            /* the finished stages stay; this one's partial output, when it could be written, is its .tmp log */
            char tmp[4400];
            snprintf(tmp, sizeof tmp, "%.4300s.tmp", log);
            if (access(tmp, F_OK) == 0)
                fprintf(stderr, NAME ": stage %s failed (exit %d; its output: %s, its messages above)\n", stage_names[s], rc, tmp);
            else
                fprintf(stderr, NAME ": stage %s failed (exit %d; its messages above)\n", stage_names[s], rc);
            return 1;
        }
    }
    summary(out, t, scored);
    return 0;
}
