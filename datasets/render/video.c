/* datasets/render/video.c — MP4 through a spawned ffmpeg, GIF through gif.h (video.h). */
#include "datasets/render/video.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "datasets/render/gif.h"
#include "datasets/render/image.h"

extern char **environ;

const char *const DS_VIDEO_KINDS[] = {"none", "gif", "mp4", "both", "auto", NULL};

int ds_video_kind(const char *name) {
    for (int k = 0; DS_VIDEO_KINDS[k]; k++)
        if (name && !strcmp(name, DS_VIDEO_KINDS[k])) return k;
    return -1;
}

bool ds_video_have_ffmpeg(void) {
    const char *path = getenv("PATH");
    if (!path) return false;
    char dir[4096];
    for (const char *p = path;; p++) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0 && n < sizeof dir - 8) {
            snprintf(dir, sizeof dir, "%.*s/ffmpeg", (int)n, p);
            if (access(dir, X_OK) == 0) return true;
        }
        if (!e) return false;
        p = e;
    }
}

struct DsMp4 {
    pid_t pid;
    int fd;       /* ffmpeg's stdin */
    int w, h, W, H; /* frame size, and padded to even */
    uint8_t *row; /* one padded frame, RGB24 */
    char path[4096], tmp[4200], log[4200];
};

/* ffmpeg's last lines of stderr (its log file), for messages */
static void log_tail(const char *log, char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen(log, "rb");
    if (!f) return;
    char buf[4096];
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, sz > 600 ? sz - 600 : 0, SEEK_SET);
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[r] = 0;
    while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == '\r')) buf[--r] = 0;
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    size_t m = strlen(buf) < n ? strlen(buf) : n - 1;
    memcpy(out, buf, m);
    out[m] = 0;
}

DsMp4 *ds_mp4_open(const char *path, int w, int h, double fps, char *err, size_t errlen) {
    if (w < 1 || h < 1 || w > 16384 || h > 16384 || !(fps > 0 && fps <= 1000)) {
        base_errf(err, errlen, "%s: a %dx%d video at %g frames per second", path, w, h, fps);
        return NULL;
    }
    DsMp4 *v = calloc(1, sizeof *v);
    if (!v) {
        base_errf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    static atomic_uint seq;
    unsigned s = atomic_fetch_add(&seq, 1);
    if ((size_t)snprintf(v->path, sizeof v->path, "%s", path) >= sizeof v->path) {
        free(v);
        base_errf(err, errlen, "%s: path too long", path);
        return NULL;
    }
    snprintf(v->tmp, sizeof v->tmp, "%s.tmp.%ld.%u", path, (long)getpid(), s);
    snprintf(v->log, sizeof v->log, "%s.ffmpeg.%ld.%u.log", path, (long)getpid(), s);
    v->w = w, v->h = h, v->W = w + (w & 1), v->H = h + (h & 1), v->fd = -1, v->pid = -1;
    v->row = malloc((size_t)v->W * (size_t)v->H * 3);
    char size[32], rate[32];
    snprintf(size, sizeof size, "%dx%d", v->W, v->H);
    snprintf(rate, sizeof rate, "%.6g", fps);
    char *argv[] = {"ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", size,
                    "-r", rate, "-i", "pipe:0", "-an", "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt",
                    "yuv420p", "-movflags", "+faststart", "-f", "mp4", v->tmp, NULL};
    int pfd[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    bool fa_ok = false;
    int e = 0;
    if (!v->row) e = ENOMEM;
    else if (pipe2(pfd, O_CLOEXEC) != 0) e = errno;
    else if ((e = posix_spawn_file_actions_init(&fa)) == 0) {
        fa_ok = true;
        /* stdin from the pipe, stdout nowhere, stderr into the log (read back on failure) */
        if ((e = posix_spawn_file_actions_adddup2(&fa, pfd[0], 0)) == 0 &&
            (e = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)) == 0 &&
            (e = posix_spawn_file_actions_addopen(&fa, 2, v->log, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == 0)
            e = posix_spawnp(&v->pid, "ffmpeg", &fa, NULL, argv, environ);
    }
    if (fa_ok) posix_spawn_file_actions_destroy(&fa);
    if (pfd[0] >= 0) close(pfd[0]);
    if (e) {
        if (pfd[1] >= 0) close(pfd[1]);
        unlink(v->log);
        /* ENOENT is also what a missing output folder gives (the log file is opened there) */
        if (e == ENOENT && !ds_video_have_ffmpeg())
            base_errf(err, errlen, "%s: ffmpeg not found on PATH (install it: tools/install-deps.sh, or use --video gif)", path);
        else base_errf(err, errlen, "%s: cannot start ffmpeg writing there (%s)", path, strerror(e));
        free(v->row), free(v);
        return NULL;
    }
    v->fd = pfd[1];
    return v;
}

/* write all of buf to fd with SIGPIPE blocked in this thread, so that an ffmpeg that exited
 * gives EPIPE here rather than ending the program; a SIGPIPE this raised is consumed */
static int write_all(int fd, const uint8_t *buf, size_t n) {
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int e = 0;
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            break;
        }
        buf += w, n -= (size_t)w;
    }
    if (e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
}

int ds_mp4_frame(DsMp4 *v, const float *rgb, char *err, size_t errlen) {
    for (int y = 0; y < v->H; y++) {
        const float *src = rgb + (size_t)(y < v->h ? y : v->h - 1) * v->w * 3;
        uint8_t *dst = v->row + (size_t)y * v->W * 3;
        for (int x = 0; x < v->W; x++)
            for (int c = 0; c < 3; c++) dst[3 * x + c] = ds_image_quantize(src[3 * (x < v->w ? x : v->w - 1) + c]);
    }
    int e = write_all(v->fd, v->row, (size_t)v->W * v->H * 3);
    if (e) {
        char tail[700];
        log_tail(v->log, tail, sizeof tail);
        return base_errf(err, errlen, "%s: ffmpeg stopped reading frames (%s)%s%s", v->path, strerror(e), tail[0] ? ": " : "",
                         tail);
    }
    return 0;
}

int ds_mp4_close(DsMp4 *v, bool ok, char *err, size_t errlen) {
    close(v->fd);
    int status = 0;
    while (waitpid(v->pid, &status, 0) < 0 && errno == EINTR) {}
    int rc = 0;
    if (ok && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        char tail[700];
        log_tail(v->log, tail, sizeof tail);
        if (WIFEXITED(status))
            base_errf(err, errlen, "%s: ffmpeg failed (exit %d)%s%s", v->path, WEXITSTATUS(status), tail[0] ? ": " : "", tail);
        else base_errf(err, errlen, "%s: ffmpeg was killed (signal %d)", v->path, WTERMSIG(status));
        rc = -1;
    } else if (ok) {
        /* ffmpeg closed its output; flush it to disk before it replaces the old file */
        int fd = open(v->tmp, O_RDONLY);
        if (fd < 0 || fsync(fd) != 0 || rename(v->tmp, v->path) != 0) {
            rc = base_errf(err, errlen, "%s: cannot write (%s)", v->path, strerror(errno));
        }
        if (fd >= 0) close(fd);
    }
    if (!ok || rc) unlink(v->tmp);
    unlink(v->log);
    free(v->row), free(v);
    return ok ? rc : -1;
}

int ds_video_write_mp4(const char *path, const float *frames, int w, int h, int nframes, double fps, char *err,
                       size_t errlen) {
    if (nframes < 1) return base_errf(err, errlen, "%s: no frames", path);
    DsMp4 *v = ds_mp4_open(path, w, h, fps, err, errlen);
    if (!v) return -1;
    bool ok = true;
    for (int k = 0; k < nframes && ok; k++) ok = ds_mp4_frame(v, frames + (size_t)k * w * h * 3, err, errlen) == 0;
    if (!ok) {
        ds_mp4_close(v, false, NULL, 0);
        return -1;
    }
    return ds_mp4_close(v, true, err, errlen);
}

/* an image as h × w × 3 floats (gray replicated, RGBA over white) */
static int read_rgb(const char *path, DsImageF *img, char *err, size_t errlen) {
    if (ds_imagef_read(path, img, err, errlen)) return -1;
    int c = img->channels;
    if (c == 3) return 0;
    size_t n = (size_t)img->w * img->h;
    float *rgb = malloc(sizeof(float) * 3 * n);
    if (!rgb) {
        ds_imagef_free(img);
        return base_errf(err, errlen, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) {
        const float *p = img->data + i * c;
        float a = c == 4 || c == 2 ? p[c - 1] : 1;
        for (int k = 0; k < 3; k++) rgb[3 * i + k] = (c >= 3 ? p[k] : p[0]) * a + (1 - a);
    }
    free(img->data);
    img->data = rgb, img->channels = 3;
    return 0;
}

int ds_video_from_images(const char *const *images, int n, double fps, DsVideoKind kind, const char *mp4_path,
                         const char *gif_path, DsVideoKind *wrote, char *err, size_t errlen) {
    if (wrote) *wrote = DS_VIDEO_NONE;
    if (kind == DS_VIDEO_AUTO) kind = ds_video_have_ffmpeg() ? DS_VIDEO_BOTH : DS_VIDEO_GIF;
    bool mp4 = (kind == DS_VIDEO_MP4 || kind == DS_VIDEO_BOTH) && mp4_path;
    bool gif = (kind == DS_VIDEO_GIF || kind == DS_VIDEO_BOTH) && gif_path;
    if (!mp4 && !gif) return 0;
    if (n < 1) return base_errf(err, errlen, "%s: no frames to make a video of", mp4 ? mp4_path : gif_path);
    if (!(fps > 0)) return base_errf(err, errlen, "%s: %g frames per second", mp4 ? mp4_path : gif_path, fps);
    DsMp4 *v = NULL;
    float *all = NULL;
    int w = 0, h = 0, rc = -1;
    for (int k = 0; k < n; k++) {
        DsImageF img;
        if (read_rgb(images[k], &img, err, errlen)) goto done;
        if (k == 0) {
            w = img.w, h = img.h;
            if (mp4 && !(v = ds_mp4_open(mp4_path, w, h, fps, err, errlen))) {
                ds_imagef_free(&img);
                goto done;
            }
            if (gif && !(all = malloc(sizeof(float) * 3 * (size_t)w * h * (size_t)n))) {
                ds_imagef_free(&img);
                base_errf(err, errlen, "%s: out of memory for %d frames of %dx%d", gif_path, n, w, h);
                goto done;
            }
        } else if (img.w != w || img.h != h) {
            base_errf(err, errlen, "%s: %dx%d, but the first frame (%s) is %dx%d", images[k], img.w, img.h, images[0], w, h);
            ds_imagef_free(&img);
            goto done;
        }
        int e = v ? ds_mp4_frame(v, img.data, err, errlen) : 0;
        if (all) memcpy(all + (size_t)k * w * h * 3, img.data, sizeof(float) * 3 * (size_t)w * h);
        ds_imagef_free(&img);
        if (e) goto done;
    }
    if (v) {
        DsMp4 *t = v;
        v = NULL;
        if (ds_mp4_close(t, true, err, errlen)) goto done;
        if (wrote) *wrote = DS_VIDEO_MP4;
    }
    if (all) {
        int cs = (int)lround(100.0 / fps);
        if (ds_gif_write(gif_path, all, w, h, n, cs < 2 ? 2 : cs, err, errlen)) goto done;
        if (wrote) *wrote = *wrote == DS_VIDEO_MP4 ? DS_VIDEO_BOTH : DS_VIDEO_GIF;
    }
    rc = 0;
done:
    if (v) ds_mp4_close(v, false, NULL, 0);
    free(all);
    return rc;
}
