/* tools/cmd.h — the subcommands of the anima program. */
#ifndef ANIMA_CMD_H
#define ANIMA_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include "base/log.h"
#include "base/progress.h"
#include "optim/train.h"

typedef struct {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
} AnimaCommand;

int cmd_dataset(int argc, char **argv);
/* `anima dataset motion` (tools/cmd_motion.c) */
int cmd_dataset_motion(int argc, char **argv);
int cmd_demo(int argc, char **argv);
/* `anima export` (tools/cmd_export.c) */
int cmd_export(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_gs(int argc, char **argv);
int cmd_gs4d(int argc, char **argv);
/* `anima fit` on a given communicator (NULL: one process, no MPI); cmd_fit makes one from the
 * environment. Lets tests run a data-parallel fit and a one-process reference in one program. */
typedef struct OptimComm OptimComm;
int cmd_fit_comm(int argc, char **argv, OptimComm *comm);
int cmd_mesh(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_physskin(int argc, char **argv);
/* `anima view` (tools/cmd_view.c: the web viewer and its live simulation) */
int cmd_view(int argc, char **argv);
/* `anima skelebones` (tools/cmd_skelebones.c) */
int cmd_skelebones(int argc, char **argv);
/* `anima animate` (tools/cmd_animate.c) */
int cmd_animate(int argc, char **argv);
/* `anima gaussianimate` (tools/cmd_gaussianimate.c): the chain from video to an animated character */
int cmd_gaussianimate(int argc, char **argv);

/* mkdir -p: creates dir and its missing parents (0777 before umask). 0, or -1 with errno set
 * (ENAMETOOLONG for a path of 4096 bytes or more). */
int cmd_make_dirs(const char *dir);
/* --video KIND (datasets/render/video.h: none gif mp4 both auto) of a command that writes frames:
 * the first nframes (≤ 0: all) images DIR/<prefix>*<suffix> in name order as OUT.mp4 and/or
 * OUT.gif at fps.
 * Prints the files written on stdout ("  video: ..."); a failure (ffmpeg missing for mp4/both)
 * goes to stderr as "<cmd>: <problem> (the frames are kept in DIR/)". 0, 1 on failure, 2 for an
 * unknown kind. */
int cmd_write_video(const char *cmd, const char *dir, const char *prefix, const char *suffix, int nframes, double fps,
                    const char *kind, const char *out);
#define CMD_VIDEO_HELP "video of the frames: mp4 (ffmpeg), gif, both, none, or auto (both with ffmpeg, else gif)"
/* Writes text to path atomically (temporary, fsync, rename), every step checked; 0 or -1 with err. */
int cmd_write_text(const char *path, const char *text, char *err, size_t errlen);

/* Whether the command line asks for "--device cuda" (read before the arguments are parsed: the
 * communicator of a data-parallel run starts first, with NCCL when the ranks train on GPUs). */
bool cmd_wants_cuda(int argc, char **argv);

/* A path argument that may name a run folder instead of the file in it (--rig RUN, --traj RUN,
 * --gaussians RUN, --ckpt RUN): arg itself when it is not a directory; in a directory, the first
 * of the NULL-terminated names (relative paths: "rig.h5", "rig/rig.h5") that exists. 0 with the
 * path in out, or -1 with err naming the folder and every name looked for. */
int cmd_run_file(const char *arg, const char *const *names, char *out, size_t outlen, char *err, size_t errlen);

/* A training command's --out: a directory that already holds a previous run (any of the NULL-
 * terminated files in it) needs --resume (can_resume: the command has one) or --force. Returns
 * 0 to go on, or 2 after saying on errf (NULL: silently) "anima x: DIR already holds a run
 * (ckpt.h5, metrics.jsonl); pass --resume to continue it or --force to replace it". With
 * --force, DIR/metrics.jsonl is emptied here, before the run starts (1 with a message when it
 * cannot be). It first makes DIR and takes its lock (an flock on DIR/.lock, held until the
 * process ends): a folder a running process holds gives 2 and a message naming the lock, before
 * anything in it is touched. */
int cmd_check_run_dir(const char *cmd, FILE *errf, const char *dir, const char *const *files, bool can_resume,
                      bool resume, bool force);

/* A run estimated to need `need` bytes (what: "…" naming the parts, for the message) against the
 * memory available now (base/mem.h): 2 with one line on errf (which may be NULL: quiet) naming
 * both and what to lower, when it does not fit; 0 when it does, when nothing could be measured,
 * or with ANIMA_MEM_CHECK=0. */
int cmd_check_memory(const char *cmd, FILE *errf, int64_t need, const char *what, const char *lower);

/* The anima program's log sink (base/log.h), installed by main: every message on stderr, one
 * line each, as the library printed them before it had a sink. */
void cmd_log_stderr(void *user, BaseLogLevel level, const char *msg);

/* The training commands' progress display, for OptimTrainOptions.progress with d as its user
 * pointer (d must outlive the loop). mode -1: a bar on a terminal, lines otherwise; 1: lines;
 * 0: none (returns NULL). */
OptimProgressFn cmd_train_progress(BaseProgress *d, int mode);

#endif
