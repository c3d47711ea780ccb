/* datasets/render/video.h — animations as videos: MP4 (H.264, yuv420p, the format every browser
 * and player opens) by spawning `ffmpeg` with raw RGB frames on a pipe, and animated GIF
 * (datasets/render/gif.h, no dependency). The MP4 goes to a temporary name and is renamed when
 * ffmpeg has finished well; ffmpeg's own error lines come back in err (the library never prints).
 * H.264 in yuv420p needs even sides: an odd width or height is padded by repeating the last
 * column or row. */
#ifndef ANIMA_DATASETS_VIDEO_H
#define ANIMA_DATASETS_VIDEO_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { DS_VIDEO_NONE, DS_VIDEO_GIF, DS_VIDEO_MP4, DS_VIDEO_BOTH, DS_VIDEO_AUTO } DsVideoKind;

/* The names of the kinds, NULL-terminated, in the enum's order: "none" "gif" "mp4" "both" "auto"
 * (auto: MP4 and GIF when ffmpeg is on PATH, else GIF alone). For a command's --video. */
extern const char *const DS_VIDEO_KINDS[];
/* The kind of a name, or -1. */
int ds_video_kind(const char *name);
/* Whether an executable `ffmpeg` is on PATH. */
bool ds_video_have_ffmpeg(void);

/* A streaming MP4 writer: ffmpeg started on open, one frame per call, finished by close. */
typedef struct DsMp4 DsMp4;
/* w × h frames at fps (> 0). NULL with err when ffmpeg cannot be started ("ffmpeg not found on
 * PATH ..." when it is missing). */
DsMp4 *ds_mp4_open(const char *path, int w, int h, double fps, char *err, size_t errlen);
/* rgb: h × w × 3 floats in [0, 1] (clamped), top row first. 0, or -1 with err (ffmpeg exited). */
int ds_mp4_frame(DsMp4 *v, const float *rgb, char *err, size_t errlen);
/* Waits for ffmpeg; when ok and it succeeded, renames the temporary to path; otherwise removes
 * it. Frees v. 0, or -1 with err (ffmpeg's last error lines). */
int ds_mp4_close(DsMp4 *v, bool ok, char *err, size_t errlen);

/* nframes × h × w × 3 frames in memory to an MP4. 0, or -1 with err. */
int ds_video_write_mp4(const char *path, const float *frames, int w, int h, int nframes, double fps, char *err,
                       size_t errlen);

/* A sequence of image files (PNG, all one size; RGBA composited over white) as a video: an MP4
 * to mp4_path and/or a GIF to gif_path as kind says (AUTO: both when ffmpeg is on PATH, else the
 * GIF; a NULL path skips that format). *wrote gets DS_VIDEO_* of what was written (may be NULL).
 * The images are left as they are whatever happens. 0, or -1 with err. */
int ds_video_from_images(const char *const *images, int n, double fps, DsVideoKind kind, const char *mp4_path,
                         const char *gif_path, DsVideoKind *wrote, char *err, size_t errlen);

#endif
