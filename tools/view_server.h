/* tools/view_server.h — `anima view`'s HTTP + WebSocket server (tools/view_server.c, on
 * libwebsockets) and what it shows: the files of a run folder or one file (tools/view_files.c) and
 * HDF5 files turned into the page's animation (tools/view_h5.c). docs/viewer.md has the protocol
 * and the security model. One server per process. */
#ifndef ANIMA_TOOLS_VIEW_SERVER_H
#define ANIMA_TOOLS_VIEW_SERVER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/view_live.h"

/* ---- what to show (tools/view_files.c) ------------------------------------------------------ */

typedef struct {
    char name[256];  /* as listed and requested: /files/<name> */
    char kind[16];   /* "mesh", "gaussians", "frame" (a run's mesh frame), "skinning", "motion", "rig",
                        "trajectories" (tools/view_h5.c) */
} ViewFile;

typedef struct {
    char dir[PATH_MAX]; /* the folder they are in (resolved) */
    ViewFile *files;    /* n, in name order */
    int n;
} ViewFiles;

/* The files target shows: every PLY (mesh or 3DGS Gaussians) and HDF5 file the viewer draws in a
 * folder (at most 4096), or target itself. 0, or -1 with err (none to show, or unreadable). */
int view_files_scan(const char *target, ViewFiles *out, char *err, size_t errlen);
void view_files_free(ViewFiles *f);

/* A request path the static roots may serve: "/" then [A-Za-z0-9._@/-], no "..", no "//", at most
 * 512 bytes. */
bool view_path_ok(const char *path);

/* A skinning file (sim/skinning.h) as the page's JSON {handles, vertices, faces, weights (nv × m)}
 * (malloc'd); NULL with err, also for a file without a binding mesh. */
char *view_skinning_json(const char *path, char *err, size_t errlen);

/* tools/view_h5.c: which HDF5 file path is ("motion": a gt.h5, "rig": a rig.h5, "trajectories",
 * "skinning" by its format tag; NULL for another HDF5 file or one that cannot be opened), and a
 * motion, rig or trajectories file as the page's binary animation (malloc'd, *len bytes; NULL
 * with err). */
const char *view_h5_kind(const char *path);
uint8_t *view_h5_animation(const char *path, size_t *len, char *err, size_t errlen);

/* ---- the server (tools/view_server.c) -------------------------------------------------------- */

typedef struct {
    const char *web;          /* the page's files (resolved) */
    const char *modules;      /* node_modules with three.js (resolved), or "" when there is none */
    const ViewFiles *files;   /* what /files/ serves (n may be 0) */
    const char *bind;         /* the listen address ("0.0.0.0": every interface) */
    int port;                 /* 0: any free one */
    const char *token;        /* NULL on the loopback; else what every request and upgrade must carry */
} ViewServerOptions;

/* Listens; the options' strings must outlive the server. 0 with the port listened on in *port, or
 * -1 (the address in use, or not one of this machine's). */
int view_server_open(const ViewServerOptions *o, int *port);
/* Serves, streaming live (NULL: files only; scene names it in /api/info) until view_server_stop. */
void view_server_run(ViewLive *live, const char *scene);
/* Ends view_server_run's loop; safe in a signal handler. */
void view_server_stop(void);
/* A ViewLive notify (view_live_start): wakes the loop so that it writes the new frame; any thread. */
void view_server_wake(void *unused);
/* Closes the listener and frees the server (after view_live_stop: the sim's notify uses it). */
void view_server_close(void);

#endif
