/* tools/cmd_util.c — what the subcommands share. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "datasets/render/video.h"
#include "tools/cmd.h"

int cmd_make_dirs(const char *dir) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
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

bool cmd_wants_cuda(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--device") && !strcmp(argv[i + 1], "cuda")) return true;
    return false;
}

int cmd_run_file(const char *arg, const char *const *names, char *out, size_t outlen, char *err, size_t errlen) {
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(out, outlen, "%s", arg);
        return 0;
    }
    char looked[1024] = "";
    size_t u = 0;
    for (int i = 0; names[i]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", arg, names[i]);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            snprintf(out, outlen, "%s", p);
            return 0;
        }
        u += (size_t)snprintf(looked + u, u < sizeof looked ? sizeof looked - u : 0, "%s%s", i ? (names[i + 1] ? ", " : " or ") : "",
                              names[i]);
        if (u >= sizeof looked) u = sizeof looked - 1;
    }
    snprintf(err, errlen, "%s is a folder without %s", arg, looked);
    return -1;
}

void cmd_log_stderr(void *user, BaseLogLevel level, const char *msg) {
    (void)user, (void)level; /* every level: the messages carry their own "note:", "warning:" */
    fprintf(stderr, "%s\n", msg);
}

static void train_progress(const OptimProgress *p, void *user) {
    BaseProgress *d = user;
    switch (p->event) {
    case OPTIM_PROGRESS_BEGIN:
        d->name = p->name;
        d->every = p->log_every;
        base_progress_begin(d, p->start_step);
        break;
    case OPTIM_PROGRESS_STEP: base_progress_update(d, p->step, p->total_steps, p->loss, p->lr, false); break;
    case OPTIM_PROGRESS_BREAK: base_progress_break(d); break;
    case OPTIM_PROGRESS_END: base_progress_finish(d, p->step, p->total_steps, p->loss, p->lr); break;
    }
}

OptimProgressFn cmd_train_progress(BaseProgress *d, int mode) {
    *d = (BaseProgress){.out = stderr, .unit = "steps", .line_prefix = "step ", .rate_digits = 1,
                        .tty = mode < 0 && isatty(STDERR_FILENO), .show_loss = true};
    return mode ? train_progress : NULL;
}

int cmd_check_memory(const char *cmd, FILE *errf, int64_t need, const char *what, const char *lower) {
    int64_t avail = base_mem_check_enabled() ? base_mem_available() : -1;
    if (avail < 0 || need <= avail) return 0;
    char a[32], b[32];
    if (errf)
        fprintf(errf, "%s: this configuration needs about %s (%s), more than the %s of memory available; lower %s "
                      "(ANIMA_MEM_CHECK=0 skips this check)\n",
                cmd, base_mem_str(need, a, sizeof a), what, base_mem_str(avail, b, sizeof b), lower);
    return 2;
}

/* The run folder's lock: an exclusive flock on DIR/.lock, held until the process ends (the
 * kernel drops it on exit or kill), so a second process cannot --resume, --force or start a run
 * into a folder a running one writes (the two would interleave its log and checkpoints). One
 * folder per process: locking another releases the previous. 0, or 2 with a message when the
 * lock is held elsewhere; a folder that cannot be made or written is not locked here (the
 * command's own writes fail, naming their files). */
static int lock_run_dir(const char *cmd, FILE *errf, const char *dir) {
    static char locked[4200];
    static int fd = -1;
    if (fd >= 0 && !strcmp(locked, dir)) return 0;
    /* under mpirun, rank 0 holds it for the job (physskin train checks on every rank; its comm
     * starts later): the launcher's rank, Open MPI's or a PMI one's */
    const char *rk = getenv("OMPI_COMM_WORLD_RANK");
    if (!rk) rk = getenv("PMI_RANK");
    if (rk && strcmp(rk, "0")) return 0;
    char path[4200];
    if (snprintf(path, sizeof path, "%s/.lock", dir) >= (int)sizeof path || cmd_make_dirs(dir) != 0) return 0;
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (f < 0) return 0;
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(f);
        if (e != EWOULDBLOCK) return 0;
        if (errf)
            fprintf(errf, "%s: %s is in use by another process (it holds %s); wait for that run to end or stop it\n", cmd,
                    dir, path);
        return 2;
    }
    if (fd >= 0) close(fd);
    fd = f;
    snprintf(locked, sizeof locked, "%s", dir);
    return 0;
}

int cmd_check_run_dir(const char *cmd, FILE *errf, const char *dir, const char *const *files, bool can_resume,
                      bool resume, bool force) {
    char found[512] = "", path[4200];
    if (lock_run_dir(cmd, errf, dir)) return 2;
    if (force && !resume) {
        /* the old run's log is emptied now, as the run starts, not at its first log line (data
         * preparation can take a minute, during which a reader would see the old run's lines as
         * if they were this one's); its checkpoint is replaced by the first save, atomically */
        if (snprintf(path, sizeof path, "%s/metrics.jsonl", dir) < (int)sizeof path && access(path, F_OK) == 0 &&
            truncate(path, 0) != 0) {
            if (errf) fprintf(errf, "%s: --force: cannot empty %s (%s)\n", cmd, path, strerror(errno));
            return 1;
        }
        return 0;
    }
    if (resume) return 0;
    for (const char *const *f = files; *f; f++) {
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, *f) >= (int)sizeof path || stat(path, &st) != 0) continue;
        snprintf(found + strlen(found), sizeof found - strlen(found), "%s%s", *found ? ", " : "", *f);
    }
    if (!*found) return 0;
    if (errf)
        fprintf(errf, "%s: %s already holds a run (%s); pass %s--force to replace it\n", cmd, dir, found,
                can_resume ? "--resume to continue it or " : "");
    return 2;
}

/* text to path through path.tmp: written, flushed, fsynced, closed and renamed, each checked;
 * on failure the temporary is removed, path left as it was, and err names path and the OS error */
int cmd_write_text(const char *path, const char *text, char *err, size_t errlen) {
    char tmp[4200];
    FILE *fp = snprintf(tmp, sizeof tmp, "%s.tmp", path) < (int)sizeof tmp ? fopen(tmp, "w") : NULL;
    if (!fp) {
        snprintf(err, errlen, "%s: cannot write (%s)", path, strerror(errno));
        return -1;
    }
    bool ok = fputs(text, fp) >= 0 && fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    int e = errno;
    if (fclose(fp) != 0 && ok) ok = false, e = errno;
    if (ok && rename(tmp, path) != 0) ok = false, e = errno;
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "%s: cannot write (%s)", path, strerror(e ? e : EIO));
        return -1;
    }
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cmd_write_video(const char *cmd, const char *dir, const char *prefix, const char *suffix, int nframes, double fps,
                    const char *kind, const char *out) {
    int k = ds_video_kind(kind);
    if (k <= DS_VIDEO_NONE) return k == DS_VIDEO_NONE ? 0 : 2;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot list %s for the video (%s)\n", cmd, dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 1;
    size_t pl = strlen(prefix), sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < pl + sl || strncmp(e->d_name, prefix, pl) || strcmp(e->d_name + l - sl, suffix)) continue;
        if (n == cap) {
            char **p = realloc(names, sizeof(char *) * (size_t)(cap = cap ? 2 * cap : 64));
            if (!p) break;
            names = p;
        }
        size_t need = strlen(dir) + l + 2;
        if (!(names[n] = malloc(need))) break;
        snprintf(names[n], need, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    /* this run's frames only: a folder written before by a longer run keeps its later frames */
    int all = n;
    if (nframes > 0 && nframes < n) n = nframes;
    char mp4[4200], gif[4200], err[2048];
    snprintf(mp4, sizeof mp4, "%s.mp4", out);
    snprintf(gif, sizeof gif, "%s.gif", out);
    DsVideoKind wrote;
    if (n == 0) fprintf(stderr, "%s: no %s*%s frames in %s to make a video of\n", cmd, prefix, suffix, dir);
    else if (ds_video_from_images((const char *const *)names, n, fps, (DsVideoKind)k, mp4, gif, &wrote, err, sizeof err))
        fprintf(stderr, "%s: %s (the frames are kept in %s/)\n", cmd, err, dir);
    else {
        printf("  video: %s%s%s (%d frames at %.4g fps)%s\n", wrote != DS_VIDEO_GIF ? mp4 : "",
               wrote == DS_VIDEO_BOTH ? ", " : "", wrote != DS_VIDEO_MP4 ? gif : "", n, fps,
               k == DS_VIDEO_AUTO && wrote == DS_VIDEO_GIF ? "; no ffmpeg on PATH, so no MP4" : "");
        rc = 0;
    }
    for (int i = 0; i < all; i++) free(names[i]);
    free(names);
    return rc;
}
