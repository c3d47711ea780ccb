/* tests/test_video.c — datasets/render/video.h and the commands' --video: an MP4 written here is
 * read back by ffprobe (codec, pixel format, even size, frame count) and decoded by ffmpeg to the
 * colors written; an ffmpeg missing from PATH is a clear error that writes nothing (and `auto`
 * falls back to the GIF); an ffmpeg that fails mid-stream reports its own message rather than
 * killing the program with SIGPIPE; `anima sim --video` writes both files from its PNG frames
 * (this run's frames only), and with PATH emptied fails naming ffmpeg while keeping every frame. The ffmpeg cases skip
 * with a message when ffmpeg or ffprobe is not installed. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/render/image.h"
#include "datasets/render/video.h"
#include "tests/test.h"

static bool have(const char *prog) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", prog);
    if (system(cmd) == 0) return true;
    printf("    skipped: %s is not installed (tools/install-deps.sh)\n", prog);
    return false;
}

static void make_tmp(char *dir) {
    if (!mkdtemp(dir)) test_fail_at(__FILE__, __LINE__, "mkdtemp %s", dir);
}

static void rm_rf(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static int count_files(const char *dir, const char *pattern) {
    char cmd[8500], out[64];
    snprintf(cmd, sizeof cmd, "ls %s/%s 2>/dev/null | wc -l", dir, pattern);
    test_run_capture(cmd, out, sizeof out);
    return atoi(out);
}

/* frame k of w × h: a solid color that changes with k, except a white first column */
static float *solid_frames(int w, int h, int n) {
    float *f = malloc(sizeof(float) * 3 * (size_t)w * h * n);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < w * h; i++) {
            float *p = f + ((size_t)k * w * h + i) * 3;
            bool edge = i % w == 0;
            p[0] = edge ? 1 : 0.1f * k, p[1] = edge ? 1 : 0.5f, p[2] = edge ? 1 : 1 - 0.1f * k;
        }
    return f;
}

TEST(video_mp4_read_back_by_ffprobe) {
    if (!have("ffmpeg") || !have("ffprobe")) return;
    char dir[] = "/tmp/anima_video_XXXXXX", path[256], cmd[1024], out[512], err[1024];
    make_tmp(dir);
    snprintf(path, sizeof path, "%s/v.mp4", dir);
    int w = 33, h = 21, n = 7; /* odd sides: padded to 34 × 22 */
    float *f = solid_frames(w, h, n);
    CHECK_MSG(ds_video_write_mp4(path, f, w, h, n, 10, err, sizeof err) == 0, "%s", err);
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=codec_name,pix_fmt,width,height,"
             "nb_read_frames,r_frame_rate -of csv=p=0 %s",
             path);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "h264,34,22,yuv420p,10/1,7"), "ffprobe: rc %d: %s", rc, out);
    /* frame 3 decoded: its interior has the color written (within the codec's loss) */
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -i %s -vf \"select=eq(n\\,3)\" -frames:v 1 -y %s/f3.png", path, dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/f3.png", dir);
    DsImage img;
    if (ds_image_read(path, &img, err, sizeof err) == 0) {
        const uint8_t *p = img.data + ((size_t)10 * img.w + 16) * img.channels;
        CHECK_MSG(abs(p[0] - 77) <= 8 && abs(p[1] - 128) <= 8 && abs(p[2] - 179) <= 8, "decoded (%d, %d, %d)", p[0], p[1], p[2]);
        ds_image_free(&img);
    } else
        CHECK_MSG(0, "%s", err);
    CHECK(count_files(dir, "*tmp*") == 0 && count_files(dir, "*.log") == 0);
    /* a folder that does not exist is not a missing ffmpeg */
    snprintf(path, sizeof path, "%s/no/such/v.mp4", dir);
    CHECK(ds_video_write_mp4(path, f, w, h, n, 10, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, path) && strstr(err, "No such file") && !strstr(err, "not found on PATH"), "%s", err);
    free(f);
    rm_rf(dir);
}

TEST(video_missing_ffmpeg_is_a_clear_error) {
    char dir[] = "/tmp/anima_video_XXXXXX", path[256], gif[256], png[256], err[1024];
    make_tmp(dir);
    snprintf(path, sizeof path, "%s/v.mp4", dir);
    float *f = solid_frames(8, 6, 3);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", "", 1); /* this test runs in its own process; restored for the shell commands */
    CHECK(!ds_video_have_ffmpeg());
    CHECK(ds_video_write_mp4(path, f, 8, 6, 3, 10, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "ffmpeg not found on PATH") && strstr(err, path), "%s", err);
    setenv("PATH", old_path, 1);
    CHECK(count_files(dir, "*") == 0);
    setenv("PATH", "", 1);
    /* auto: the GIF alone; mp4: the error, the images untouched */
    DsImage img;
    CHECK(ds_image_init(&img, 8, 6, 3, err, sizeof err) == 0);
    const char *imgs[2];
    char p0[256], p1[256];
    snprintf(p0, sizeof p0, "%s/a.png", dir), snprintf(p1, sizeof p1, "%s/b.png", dir);
    imgs[0] = p0, imgs[1] = p1;
    CHECK(ds_image_write(p0, &img, err, sizeof err) == 0 && ds_image_write(p1, &img, err, sizeof err) == 0);
    ds_image_free(&img);
    snprintf(gif, sizeof gif, "%s/v.gif", dir), snprintf(png, sizeof png, "%s/v", dir);
    DsVideoKind wrote;
    CHECK_MSG(ds_video_from_images(imgs, 2, 10, DS_VIDEO_AUTO, path, gif, &wrote, err, sizeof err) == 0, "%s", err);
    CHECK(wrote == DS_VIDEO_GIF && access(gif, F_OK) == 0 && access(path, F_OK) != 0);
    CHECK(ds_video_from_images(imgs, 2, 10, DS_VIDEO_MP4, path, gif, &wrote, err, sizeof err) == -1 && wrote == DS_VIDEO_NONE);
    CHECK_MSG(strstr(err, "ffmpeg not found on PATH"), "%s", err);
    setenv("PATH", old_path, 1);
    free(old_path);
    CHECK(count_files(dir, "*.png") == 2 && access(path, F_OK) != 0);
    free(f);
    rm_rf(dir);
}

/* an "ffmpeg" that reads nothing and exits with an error: the frames hit a closed pipe (EPIPE,
 * not SIGPIPE) and the error carries its message */
TEST(video_failing_ffmpeg_reports_its_message) {
    char dir[] = "/tmp/anima_video_XXXXXX", path[256], fake[256], err[2048];
    make_tmp(dir);
    snprintf(fake, sizeof fake, "%s/ffmpeg", dir);
    FILE *fp = fopen(fake, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs("#!/bin/sh\necho 'fake ffmpeg: Unknown encoder libx264' >&2\nexit 1\n", fp);
    fclose(fp);
    chmod(fake, 0755);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", dir, 1);
    snprintf(path, sizeof path, "%s/v.mp4", dir);
    int w = 320, h = 240, n = 20; /* 4.6 MB: more than a pipe holds */
    float *f = solid_frames(w, h, n);
    CHECK(ds_video_write_mp4(path, f, w, h, n, 25, err, sizeof err) == -1);
    setenv("PATH", old_path, 1);
    free(old_path);
    CHECK_MSG(strstr(err, "fake ffmpeg: Unknown encoder libx264") && strstr(err, path), "%s", err);
    CHECK(access(path, F_OK) != 0 && count_files(dir, "*tmp*") == 0 && count_files(dir, "*.log") == 0);
    free(f);
    rm_rf(dir);
}

TEST(video_sim_cli_writes_both_and_keeps_frames_without_ffmpeg) {
    char A[PATH_MAX];
    if (access(test_anima_bin(), X_OK) != 0 || !realpath(test_anima_bin(), A)) {
        printf("    skipped: %s is not built\n", test_anima_bin());
        return;
    }
    if (!have("ffmpeg") || !have("ffprobe")) return;
    char dir[] = "/tmp/anima_video_XXXXXX", cmd[8192], out[4096];
    make_tmp(dir);
    snprintf(cmd, sizeof cmd,
             "cd %s && printf '%%s' '{\"dt\": 0.01, \"steps\": 8, \"objects\": [{\"skinning\": {\"category\": \"cactus\", "
             "\"handles\": 4, \"kind\": \"rbf\", \"cubature_res\": 8, \"mesh_res\": 16}}], \"planes\": [{}], "
             "\"output\": {\"every\": 2, \"mesh\": \"none\", \"png\": true, \"width\": 63, \"height\": 47}}' > s.json && "
             "%s sim --scene s.json --out a --quiet --video both 2>&1",
             dir, A);
    int rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "video: a/video.mp4, a/video.gif (5 frames at 50 fps)"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=width,height,nb_read_frames -of csv=p=0 "
             "%s/a/video.mp4",
             dir);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && !strncmp(out, "64,48,5", 7), "ffprobe: %s", out);
    /* a shorter run into the same folder: its own frames only, not the older run's later ones */
    snprintf(cmd, sizeof cmd, "cd %s && %s sim --scene s.json --out a --quiet --steps 4 --video mp4 2>&1", dir, A);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "video: a/video.mp4 (3 frames at 50 fps)"), "rc %d: %s", rc, out);
    /* PATH emptied: --video mp4 fails naming ffmpeg, every frame is there, no video */
    snprintf(cmd, sizeof cmd, "cd %s && PATH= %s sim --scene s.json --out b --quiet --video mp4 2>&1", dir, A);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, "anima sim: b/video.mp4: ffmpeg not found on PATH") &&
                  strstr(out, "the frames are kept in b/"),
              "rc %d: %s", rc, out);
    char b[4200];
    snprintf(b, sizeof b, "%s/b", dir);
    CHECK(count_files(b, "frame_0000?.png") == 5 && count_files(b, "video*") == 0 && count_files(b, "*tmp*") == 0);
    /* and auto falls back to the GIF */
    snprintf(cmd, sizeof cmd, "cd %s && PATH= %s sim --scene s.json --out c --quiet 2>&1", dir, A);
    rc = test_run_capture(cmd, out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "video: c/video.gif (5 frames at 50 fps); no ffmpeg on PATH, so no MP4"), "rc %d: %s", rc,
              out);
    rm_rf(dir);
}
