/* tools/view_live.h — the live simulation behind `anima view --scene` (tools/view_live.c, the
 * server's side in view_live_msg.c): a scene (sim/scene.h) stepped in its own thread at the
 * scene's rate, whose vertex positions the server (tools/view_server.h) streams and whose
 * controls (drag, pin, ball, joint, reset) the clients' JSON messages change (parsed in
 * tools/view_cmd.c). docs/viewer.md has the protocol; the byte layouts are defined here once. */
#ifndef ANIMA_TOOLS_VIEW_LIVE_H
#define ANIMA_TOOLS_VIEW_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/rig.h"

/* Binary messages, little-endian. A frame: this header then nv × 3 float32 positions. */
#define VIEW_FRAME_MAGIC 0x31465641u /* "AVF1" */
#define VIEW_TOPO_MAGIC 0x31545641u  /* "AVT1" */
typedef struct {
    uint32_t magic;   /* VIEW_FRAME_MAGIC */
    uint32_t topo;    /* the topology these positions belong to (a ball dropped changes it) */
    uint32_t frame;   /* the sim step count since start */
    uint32_t ack;     /* the id of the last client input applied before this step (0: none) */
    double t;         /* simulated time (s) */
    uint32_t nv;      /* vertices that follow */
    uint32_t nobj_v;  /* the first nobj_v vertices are the deformable objects' (draggable) */
} ViewFrameHeader;
/* A topology: magic, topo, nv, nf (4 × uint32), then nf × 3 uint32 triangle indices, then nv × 3
 * float32 colours in [0, 1]. Sent on connect and whenever topo changes, before that topo's frames. */

/* Client messages are JSON texts of at most this many bytes (longer: an error reply). */
#define VIEW_MAX_MESSAGE 4096

typedef struct ViewLive ViewLive;

/* the live view's optimized cubature set by default (sim/cubature.h's default size) */
#define VIEW_CUBATURE_POINTS 300

/* Loads the scene, builds it and starts its thread. cubature_points >= 0 replaces every object's
 * cubature_points key (sim/scene.h: > 0 an optimized set built at load, 0 every point); -1: the
 * scene's key where set, else VIEW_CUBATURE_POINTS in a scene without a rig. notify(ctx) is called from the sim thread after each published frame
 * (lws_cancel_service: the server's loop wakes and writes). 0, or -1 with err. */
int view_live_start(ViewLive **out, const char *scene_path, double drag_stiffness, int64_t cubature_points,
                    void (*notify)(void *), void *ctx, char *err, size_t errlen);
void view_live_stop(ViewLive *L);

/* One client message: validated here (in the server's thread) and queued for the sim thread.
 * Returns 0 and writes {"type":"ok","id":N} into reply, or -1 and writes {"type":"error",...}. */
int view_live_message(ViewLive *L, const char *text, size_t len, char *reply, size_t replylen);

/* The hello JSON a client gets on connect (malloc'd; NULL on no memory). */
char *view_live_hello(ViewLive *L);
/* The current topology's id. */
uint32_t view_live_topo(ViewLive *L);
/* The topology message (malloc'd with `pre` bytes of headroom before it; *len its size after
 * them); NULL on no memory. */
uint8_t *view_live_topology(ViewLive *L, size_t pre, size_t *len);
/* The newest frame if it is newer than *frame (then *frame is updated), with `pre` bytes of
 * headroom; NULL when there is none newer or no memory. *topo gets its topology id. */
uint8_t *view_live_frame(ViewLive *L, size_t pre, uint32_t *frame, uint32_t *topo, size_t *len);
/* The state for GET /api/state (malloc'd JSON): time, frame, the objects' centroid, timings;
 * vertex >= 0 adds that vertex's position. */
char *view_live_state(ViewLive *L, int64_t vertex);
/* A message the sim thread has for every client (a step that failed and reset the scene), copied
 * into buf; 0 when there is none. */
size_t view_live_broadcast(ViewLive *L, uint64_t *seen, char *buf, size_t len);

/* ---- client inputs (tools/view_cmd.c) ------------------------------------------------------ */

enum { VIEW_CMD_DRAG, VIEW_CMD_RELEASE, VIEW_CMD_PIN, VIEW_CMD_UNPIN, VIEW_CMD_BALL, VIEW_CMD_JOINT, VIEW_CMD_RESET };

/* one validated input: drag {vertex, a = target}; pin {a = center, radius}; drop_ball {a = pos,
 * b = vel, radius}; joint {vertex = the bone, a = rotation, radius 1: clear}; id the client's (0:
 * none) */
typedef struct {
    int type;
    uint32_t id;
    int64_t vertex;
    double a[3], b[3], radius;
} ViewCmd;

/* what a message is checked against */
typedef struct {
    int64_t nobj_v;     /* the draggable vertices */
    double extent;      /* the objects' bounding-box size (pin and ball radii) */
    const SimRig *rig;  /* the scene's rig, or NULL (joint refused, balls allowed) */
} ViewScope;

/* One client message (text of len bytes, JSON) into *c: 0, or -1 with the reason in why ("drag:
 * target must be an array of 3 numbers", "not JSON", ...) and c->id the message's id when it had
 * a valid one (the error reply names it). */
int view_cmd_parse(const char *text, size_t len, const ViewScope *scope, ViewCmd *c, char *why, size_t whylen);

#endif
