/* tools/view_live_internal.h — the live view's state (tools/view_live.h), shared by its two
 * halves: the simulation thread with the controls it applies (view_live.c) and what the server's
 * thread reads and queues (view_live_msg.c). */
#ifndef ANIMA_TOOLS_VIEW_LIVE_INTERNAL_H
#define ANIMA_TOOLS_VIEW_LIVE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/rig.h"
#include "sim/rigid.h"
#include "sim/scene.h"
#include "sim/world.h"
#include "tools/view_live.h"

enum { QCAP = 64, MAX_BALLS = 4, MAX_PINS = 8, NTIME = 128 };

/* a user control on an object: the drag slot index in o->drags */
typedef struct {
    int obj, slot; /* slot -1: none */
    int64_t vertex;
} DragRef;

struct ViewLive {
    SimScene sc;
    char dir[4096], name[256];
    int nobj;
    SimObject *objs;
    SimRigid *rigids;   /* the scene's rigid bodies, then the balls */
    int nrigid, nscene_rigid;
    SimWorld world;
    bool world_ok;
    SimRig rig;         /* the scene's rig (rigged: on objs[sc.rig.object]) */
    bool rigged;
    double t, drag_k, drag_radius, extent, center[3];
    double **z0;        /* each object's initial z (reset) */
    int64_t *v0;        /* each object's first vertex in the frame */
    int64_t nobj_v;     /* the objects' vertices (the draggable ones) */
    DragRef drag;
    int npins;
    /* published frame (under mu) */
    pthread_mutex_t mu;
    pthread_t th;
    bool started;
    volatile int stop;
    float *pos;
    int64_t nv, pos_cap;
    uint32_t frame, ack, topo, pub_topo;
    double tpub;
    int pub_balls, pub_pins, pub_dragging; /* the controls at the published frame */
    uint32_t *faces;
    float *colors;
    int64_t nf, topo_nv;
    ViewCmd q[QCAP];
    int qn;
    double wall_ms[NTIME], cpu_ms[NTIME];
    int64_t ntime;
    double behind;      /* simulated time / wall time over the last NTIME steps */
    char bcast[512];
    uint64_t bcast_seq;
    uint32_t last_applied;
    void (*notify)(void *);
    void *ctx;
};

#endif
