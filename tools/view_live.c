/* tools/view_live.c — the live simulation behind `anima view --scene`: the scene's objects and
 * rigid bodies in one SimWorld (sim/world.h), stepped in a thread of their own at the scene's dt in
 * real time (slower when a step takes longer than dt), each step's vertex positions published for
 * the server (tools/view_server.c) to stream. Clients change the controls through JSON messages,
 * validated in the server's thread (tools/view_cmd.c) and applied by the sim thread between two steps:
 *
 *   drag {vertex, target}   the drag energy of sim/solver.h (SimDrag): the cubature points near the
 *                           vertex's rest position pulled towards it moved by target − rest, so the
 *                           vertex goes to target. Dragging the same vertex again moves only the
 *                           target (no re-preparation: the drag's pull-back does not depend on it).
 *   release                 the drag lets go (its t_release set in the past).
 *   pin {center, radius}    a drag that holds the points near the vertex closest to center at the
 *                           offset they have now (5 × the drag stiffness, never released); unpin
 *                           removes them all. An exact Dirichlet region would be relative to the
 *                           rest shape (sim/solver.h: ū = v t) and snap a deformed region back.
 *   drop_ball {pos, vel, radius?}  a rigid sphere (sim/rigid.h) in the world, IPC contact with the
 *                           objects when the scene's contact is on; at most 4 (the oldest goes).
 *   joint {joint, rotation | clear}  a rigged scene's bone (index or name) given a local rotation
 *                           (rotation vector in radians, axis × angle about world axes at rest,
 *                           carried by the parent: rig.h's conventions) that
 *                           replaces the scene's motion for that bone (sim_rig_set_joint_rotation)
 *                           until clear:true gives it back. Without a rig: "no rig in scene".
 *   reset                   rest state, no drags, pins or balls, t = 0.
 *
 * A rigged scene's rig (sim/rig.h: its clip, keys and drags) plays on the live clock, advanced
 * before every step; balls are refused there (the IPC contact does not see the rig's displacement).
 * The scene's own scripted drags are left out: in the viewer the user drags. A control change that
 * needs the object re-prepared (a new grab point, a pin, a ball) rebuilds the world around the same
 * objects (its caches point into the prepared state); the object's z and ż are kept.
 *
 * This file is the sim thread's side; what the server's thread reads and queues is in
 * tools/view_live_msg.c, the state both share in tools/view_live_internal.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "datasets/mesh/mesh.h"
#include "sim/inspect.h"
#include "tools/view_live_internal.h"


/* ---- building -------------------------------------------------------------------------------- */

static int world_rebuild(ViewLive *L, char *err, size_t errlen) {
    if (L->world_ok) sim_world_free(&L->world), L->world_ok = false;
    for (int k = 0; k < L->nobj; k++)
        if (sim_object_prepare(&L->objs[k], err, errlen)) return -1;
    if (sim_world_init(&L->world, L->objs, L->nobj, L->rigids, L->nrigid, L->sc.planes, L->sc.nplanes, &L->sc.contact,
                       err, errlen))
        return -1;
    L->world.t = L->t;
    L->world_ok = true;
    return 0;
}

/* faces and colours of the objects then the rigid bodies; called with mu held */
static int topology_build(ViewLive *L) {
    int64_t nv = 0, nf = 0;
    for (int k = 0; k < L->nobj; k++) nv += L->objs[k].nv, nf += L->objs[k].nf;
    for (int r = 0; r < L->nrigid; r++) nv += L->rigids[r].nv, nf += L->rigids[r].nf;
    uint32_t *f = malloc(sizeof(uint32_t) * 3 * (size_t)(nf + 1));
    float *c = malloc(sizeof(float) * 3 * (size_t)(nv + 1));
    if (!f || !c) {
        free(f), free(c);
        return -1;
    }
    int64_t v0 = 0, f0 = 0;
    for (int k = 0; k < L->nobj; k++) {
        const SimObject *o = &L->objs[k];
        for (int64_t i = 0; i < 3 * o->nf; i++) f[3 * f0 + i] = (uint32_t)(o->faces[i] + v0);
        for (int64_t v = 0; v < o->nv; v++)
            for (int i = 0; i < 3; i++) c[3 * (v0 + v) + i] = (float)L->sc.objects[k].color[i];
        v0 += o->nv, f0 += o->nf;
    }
    for (int r = 0; r < L->nrigid; r++) {
        const SimRigid *b = &L->rigids[r];
        for (int64_t i = 0; i < 3 * b->nf; i++) f[3 * f0 + i] = (uint32_t)(b->faces[i] + v0);
        for (int64_t v = 0; v < b->nv; v++)
            for (int i = 0; i < 3; i++) c[3 * (v0 + v) + i] = (float)b->color[i];
        v0 += b->nv, f0 += b->nf;
    }
    free(L->faces), free(L->colors);
    L->faces = f, L->colors = c, L->nf = nf, L->topo_nv = nv;
    L->topo++;
    return 0;
}

/* the positions now into L->pos; called with mu held */
static int publish(ViewLive *L, uint32_t ack) {
    int64_t nv = L->topo_nv;
    if (nv > L->pos_cap) {
        float *p = realloc(L->pos, sizeof(float) * 3 * (size_t)nv);
        if (!p) return -1;
        L->pos = p, L->pos_cap = nv;
    }
    int64_t mx = 1;
    for (int k = 0; k < L->nobj; k++) mx = L->objs[k].nv > mx ? L->objs[k].nv : mx;
    for (int r = 0; r < L->nrigid; r++) mx = L->rigids[r].nv > mx ? L->rigids[r].nv : mx;
    double *x = malloc(sizeof(double) * 3 * (size_t)mx);
    if (!x) return -1;
    int64_t v0 = 0;
    for (int k = 0; k < L->nobj; k++) {
        sim_object_vertices(&L->objs[k], x);
        for (int64_t i = 0; i < 3 * L->objs[k].nv; i++) L->pos[3 * v0 + i] = (float)x[i];
        v0 += L->objs[k].nv;
    }
    for (int r = 0; r < L->nrigid; r++) {
        sim_rigid_vertices(&L->rigids[r], x);
        for (int64_t i = 0; i < 3 * L->rigids[r].nv; i++) L->pos[3 * v0 + i] = (float)x[i];
        v0 += L->rigids[r].nv;
    }
    free(x);
    L->nv = nv;
    L->pub_topo = L->topo;
    L->pub_balls = L->nrigid - L->nscene_rigid, L->pub_pins = L->npins;
    L->pub_dragging = L->drag.slot >= 0 && L->objs[L->drag.obj].drags[L->drag.slot].t_release > 0;
    L->frame++;
    L->ack = ack;
    L->tpub = L->t;
    return 0;
}

static void free_all(ViewLive *L) {
    if (L->world_ok) sim_world_free(&L->world);
    for (int k = 0; k < L->nobj; k++) sim_object_free(&L->objs[k]);
    for (int r = 0; r < L->nrigid; r++) sim_rigid_free(&L->rigids[r]);
    if (L->rigged) sim_rig_free(&L->rig);
    if (L->z0)
        for (int k = 0; k < L->nobj; k++) free(L->z0[k]);
    free(L->z0), free(L->objs), free(L->rigids), free(L->v0);
    free(L->pos), free(L->faces), free(L->colors);
    sim_scene_free(&L->sc);
    pthread_mutex_destroy(&L->mu);
    free(L);
}

static int rigids_reset(ViewLive *L, char *err, size_t errlen) {
    for (int r = 0; r < L->nrigid; r++) sim_rigid_free(&L->rigids[r]);
    L->nrigid = 0;
    if (sim_scene_build_rigids(&L->sc, L->dir, L->rigids, err, errlen)) return -1;
    L->nrigid = L->nscene_rigid;
    return 0;
}

/* ---- controls (sim thread) ------------------------------------------------------------------- */

static int obj_of(const ViewLive *L, int64_t v, int64_t *local) {
    for (int k = L->nobj - 1; k >= 0; k--)
        if (v >= L->v0[k]) {
            *local = v - L->v0[k];
            return k;
        }
    return -1;
}

static void remove_slot(SimObject *o, int slot) {
    memmove(o->drags + slot, o->drags + slot + 1, sizeof(SimDrag) * (size_t)(o->ndrags - slot - 1));
    o->ndrags--;
}

/* the rig's pose at t = 0 shown (as sim/scene.c's run does) */
static void rig_start(ViewLive *L) {
    sim_rig_advance(&L->rig, &L->objs[L->sc.rig.object], 0);
}

static int apply(ViewLive *L, const ViewCmd *c, char *err, size_t errlen) {
    switch (c->type) {
    case VIEW_CMD_DRAG: {
        int64_t lv = 0;
        int k = obj_of(L, c->vertex, &lv);
        SimObject *o = &L->objs[k];
        if (L->drag.slot >= 0 && L->drag.obj == k && L->drag.vertex == c->vertex) {
            SimDrag *d = &o->drags[L->drag.slot]; /* the same grab: only the target moves */
            memcpy(d->target, c->a, sizeof d->target);
            d->t_release = 1e30;
            return 0;
        }
        if (L->drag.slot >= 0) { /* a new grab point: the old drag goes */
            SimObject *po = &L->objs[L->drag.obj];
            remove_slot(po, L->drag.slot);
            L->drag.slot = -1;
        }
        SimDrag d = {.radius = L->drag_radius, .stiffness = L->drag_k, .t0 = -1, .t1 = -1, .t_release = 1e30};
        memcpy(d.grab, o->Xv + 3 * lv, sizeof d.grab);
        memcpy(d.target, c->a, sizeof d.target);
        if (sim_object_add_drag(o, &d, err, errlen)) return -1;
        L->drag = (DragRef){k, o->ndrags - 1, c->vertex};
        return world_rebuild(L, err, errlen);
    }
    case VIEW_CMD_RELEASE:
        if (L->drag.slot >= 0) L->objs[L->drag.obj].drags[L->drag.slot].t_release = -1e30;
        return 0;
    case VIEW_CMD_PIN: {
        if (L->npins >= MAX_PINS) {
            base_errf(err, errlen, "at most %d pins (unpin first)", MAX_PINS);
            return -1;
        }
        /* the object vertex closest to center now */
        int64_t bv;
        int bk = sim_objects_nearest_vertex(L->objs, L->nobj, c->a, &bv);
        SimObject *o = &L->objs[bk];
        SimDrag d = {.radius = c->radius, .stiffness = 5 * L->drag_k, .t0 = -1, .t1 = -1, .t_release = 1e30};
        memcpy(d.grab, o->Xv + 3 * bv, sizeof d.grab);
        sim_object_vertex_now(o, bv, d.target);
        /* pins go before the user's drag so the drag's slot index stays valid: insert at 0 */
        if (sim_object_add_drag(o, &d, err, errlen)) return -1;
        memmove(o->drags + 1, o->drags, sizeof(SimDrag) * (size_t)(o->ndrags - 1));
        o->drags[0] = d;
        if (L->drag.slot >= 0 && L->drag.obj == bk) L->drag.slot++;
        L->npins++;
        return world_rebuild(L, err, errlen);
    }
    case VIEW_CMD_UNPIN:
        for (int k = 0; k < L->nobj; k++) {
            SimObject *o = &L->objs[k];
            if (L->drag.slot >= 0 && L->drag.obj == k) { /* keep the drag alone, at slot 0 */
                o->drags[0] = o->drags[L->drag.slot];
                o->ndrags = 1, L->drag.slot = 0;
            } else
                o->ndrags = 0;
        }
        L->npins = 0;
        return world_rebuild(L, err, errlen);
    case VIEW_CMD_BALL: {
        if (L->nrigid - L->nscene_rigid >= MAX_BALLS) { /* the oldest ball goes */
            sim_rigid_free(&L->rigids[L->nscene_rigid]);
            memmove(L->rigids + L->nscene_rigid, L->rigids + L->nscene_rigid + 1,
                    sizeof(SimRigid) * (size_t)(L->nrigid - L->nscene_rigid - 1));
            L->nrigid--;
        }
        DsMesh m;
        if (sim_mesh_icosphere(c->radius, 2, &m)) {
            base_errf(err, errlen, "out of memory");
            return -1;
        }
        SimPose p = sim_pose_identity();
        memcpy(p.translate, c->a, sizeof p.translate);
        SimRigid *b = &L->rigids[L->nrigid];
        int rc = sim_rigid_init(b, &m, 2000, &p, err, errlen);
        ds_mesh_free(&m);
        if (rc) return -1;
        memcpy(b->gravity, L->sc.gravity, sizeof b->gravity);
        memcpy(b->v, c->b, sizeof b->v);
        b->restitution = 0.3, b->friction = 0.5;
        b->color[0] = 0.3, b->color[1] = 0.45, b->color[2] = 0.85;
        L->nrigid++;
        pthread_mutex_lock(&L->mu);
        rc = topology_build(L);
        pthread_mutex_unlock(&L->mu);
        if (rc) {
            base_errf(err, errlen, "out of memory");
            return -1;
        }
        return world_rebuild(L, err, errlen);
    }
    case VIEW_CMD_JOINT: {
        if (c->radius > 0) {
            sim_rig_clear_joint(&L->rig, (int)c->vertex);
            return 0;
        }
        /* the rotation vector is given in world axes (rig.h: world = scale·R p + T) */
        double q[4];
        sim_rig_world_rotation(&L->rig, c->a, q);
        return sim_rig_set_joint_rotation(&L->rig, (int)c->vertex, q, err, errlen);
    }
    case VIEW_CMD_RESET:
    default: {
        for (int k = 0; k < L->nobj; k++) {
            SimObject *o = &L->objs[k];
            memcpy(o->z, L->z0[k], sizeof(double) * (size_t)o->n);
            memset(o->zdot, 0, sizeof(double) * (size_t)o->n);
            o->ndrags = 0, o->t = 0;
        }
        L->drag.slot = -1, L->npins = 0, L->t = 0;
        if (L->rigged) { /* the scene's motion again from t = 0, every bone given back */
            for (int b = 0; b < L->rig.nbones; b++) sim_rig_clear_joint(&L->rig, b);
            rig_start(L);
        }
        if (rigids_reset(L, err, errlen)) return -1;
        pthread_mutex_lock(&L->mu);
        int rc = topology_build(L);
        pthread_mutex_unlock(&L->mu);
        if (rc) {
            base_errf(err, errlen, "out of memory");
            return -1;
        }
        return world_rebuild(L, err, errlen);
    }
    }
}

/* ---- the sim thread -------------------------------------------------------------------------- */

static void say_all(ViewLive *L, const char *msg) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "type", "error");
    cJSON_AddStringToObject(j, "message", msg);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    pthread_mutex_lock(&L->mu);
    snprintf(L->bcast, sizeof L->bcast, "%s", s ? s : "{\"type\":\"error\",\"message\":\"simulation reset\"}");
    L->bcast_seq++;
    pthread_mutex_unlock(&L->mu);
    free(s);
}

static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static void *sim_thread(void *arg) {
    ViewLive *L = arg;
    char err[1024];
    double next = base_now(), wall0 = next, sim0 = L->t;
    while (!L->stop) {
        ViewCmd cmds[QCAP];
        pthread_mutex_lock(&L->mu);
        int n = L->qn;
        memcpy(cmds, L->q, sizeof(ViewCmd) * (size_t)n);
        L->qn = 0;
        pthread_mutex_unlock(&L->mu);
        for (int i = 0; i < n; i++) {
            if (apply(L, &cmds[i], err, sizeof err)) {
                char msg[1200];
                snprintf(msg, sizeof msg, "input %u not applied: %s", cmds[i].id, err);
                say_all(L, msg);
                if (!L->world_ok && world_rebuild(L, err, sizeof err)) {
                    say_all(L, "the simulation cannot continue");
                    return NULL;
                }
            }
            if (cmds[i].id) L->last_applied = cmds[i].id;
        }
        double c0 = base_cpu_now(), w0 = base_now();
        if (L->rigged) sim_rig_advance(&L->rig, &L->objs[L->sc.rig.object], L->t + L->sc.dt);
        if (sim_world_step(&L->world, L->sc.dt, err, sizeof err)) {
            char msg[1200];
            snprintf(msg, sizeof msg, "step failed (%s): scene reset", err);
            say_all(L, msg);
            ViewCmd r = {.type = VIEW_CMD_RESET};
            if (apply(L, &r, err, sizeof err)) {
                say_all(L, "the simulation cannot continue");
                return NULL;
            }
            next = base_now(), wall0 = next, sim0 = 0;
            continue;
        }
        L->t = L->world.t;
        double w1 = base_now();
        /* balls that left the scene (no gravity, or thrown away) go */
        for (int r = L->nrigid - 1; r >= L->nscene_rigid; r--) {
            if (sim_rigid_distance2(&L->rigids[r], L->center) > 400 * L->extent * L->extent) {
                sim_rigid_free(&L->rigids[r]);
                memmove(L->rigids + r, L->rigids + r + 1, sizeof(SimRigid) * (size_t)(L->nrigid - r - 1));
                L->nrigid--;
                pthread_mutex_lock(&L->mu);
                topology_build(L);
                pthread_mutex_unlock(&L->mu);
                if (world_rebuild(L, err, sizeof err)) {
                    say_all(L, "the simulation cannot continue");
                    return NULL;
                }
            }
        }
        pthread_mutex_lock(&L->mu);
        L->wall_ms[L->ntime % NTIME] = 1e3 * (w1 - w0);
        L->cpu_ms[L->ntime % NTIME] = 1e3 * (base_cpu_now() - c0);
        L->ntime++;
        int prc = publish(L, L->last_applied);
        pthread_mutex_unlock(&L->mu);
        if (prc) say_all(L, "out of memory publishing a frame");
        if (L->notify) L->notify(L->ctx);
        /* real time: the next step when the wall clock reaches its simulated time; a sim that is
         * behind by more than a tenth of a second runs on from now instead of catching up */
        next += L->sc.dt;
        double now = base_now();
        if (now > next + 0.1) next = now;
        sleep_s(next - now);
        if (L->ntime % NTIME == 0) {
            double wn = base_now();
            pthread_mutex_lock(&L->mu);
            L->behind = wn > wall0 ? (L->t - sim0) / (wn - wall0) : 1;
            pthread_mutex_unlock(&L->mu);
            wall0 = wn, sim0 = L->t;
        }
    }
    return NULL;
}

int view_live_start(ViewLive **out, const char *scene_path, double drag_stiffness, int64_t cubature_points,
                    void (*notify)(void *), void *ctx, char *err, size_t errlen) {
    *out = NULL;
    ViewLive *L = calloc(1, sizeof *L);
    if (!L) {
        base_errf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&L->mu, NULL);
    L->notify = notify, L->ctx = ctx, L->drag.slot = -1, L->behind = 1;
    if (sim_scene_load(scene_path, &L->sc, err, errlen)) {
        sim_scene_free(&L->sc);
        pthread_mutex_destroy(&L->mu);
        free(L);
        return -1;
    }
    snprintf(L->dir, sizeof L->dir, "%s", scene_path);
    char *d = dirname(L->dir);
    memmove(L->dir, d, strlen(d) + 1);
    char nb[4096];
    snprintf(nb, sizeof nb, "%s", scene_path);
    snprintf(L->name, sizeof L->name, "%s", basename(nb));
    /* the scripted drags are `anima sim`'s; here the user drags. Their stiffness and radius are
     * the user's drag's (scenes/drag.json: 2e5 N/m, 0.08 m) */
    L->drag_k = L->sc.ndrags ? L->sc.drags[0].stiffness : 2e5;
    L->drag_radius = L->sc.ndrags ? L->sc.drags[0].radius : 0;
    if (drag_stiffness > 0) L->drag_k = drag_stiffness;
    L->sc.ndrags = 0;
    /* an optimized cubature by default: on drop.json and drag.json it cut the sim's CPU per step
     * (2.4 -> 1.2 ms on the drop at rest) and left the browser more of the 2 cores (docs/viewer.md);
     * not under a rig, whose skinning is a network's and whose drops would not move the rig */
    for (int k = 0; k < L->sc.nobjects; k++)
        if (cubature_points >= 0) L->sc.objects[k].cubature_points = cubature_points;
        else if (!L->sc.objects[k].cubature_points && L->sc.rig.object < 0)
            L->sc.objects[k].cubature_points = VIEW_CUBATURE_POINTS;
    L->nobj = L->sc.nobjects;
    L->objs = calloc((size_t)L->nobj, sizeof *L->objs);
    L->rigids = calloc((size_t)(L->sc.nrigids + MAX_BALLS + 1), sizeof *L->rigids);
    L->z0 = calloc((size_t)L->nobj, sizeof *L->z0);
    L->v0 = calloc((size_t)L->nobj + 1, sizeof *L->v0);
    if (!L->objs || !L->rigids || !L->z0 || !L->v0) {
        base_errf(err, errlen, "out of memory");
        goto fail;
    }
    if (sim_scene_build_rigged(&L->sc, L->dir, L->objs, &L->rig, err, errlen)) {
        L->nobj = 0; /* sim_scene_build_rigged freed them (and the rig) */
        goto fail;
    }
    L->rigged = L->sc.rig.object >= 0;
    if (L->rigged) rig_start(L);
    L->nscene_rigid = L->sc.nrigids;
    if (rigids_reset(L, err, errlen)) goto fail;
    for (int k = 0; k < L->nobj; k++) {
        SimObject *o = &L->objs[k];
        if (!o->nv) {
            base_errf(err, errlen, "objects[%d]: no surface mesh to show", k);
            goto fail;
        }
        L->v0[k] = L->nobj_v;
        L->nobj_v += o->nv;
        L->z0[k] = malloc(sizeof(double) * (size_t)o->n);
        if (!L->z0[k]) {
            base_errf(err, errlen, "out of memory");
            goto fail;
        }
        memcpy(L->z0[k], o->z, sizeof(double) * (size_t)o->n);
        if (!(L->drag_radius > 0)) L->drag_radius = 0.1 * o->diag;
    }
    sim_objects_rest_bounds(L->objs, L->nobj, L->center, &L->extent);
    if (world_rebuild(L, err, errlen) || topology_build(L) || publish(L, 0)) {
        if (!err[0]) base_errf(err, errlen, "out of memory");
        goto fail;
    }
    if (pthread_create(&L->th, NULL, sim_thread, L)) {
        base_errf(err, errlen, "cannot start the simulation thread");
        goto fail;
    }
    L->started = true;
    *out = L;
    return 0;
fail:
    free_all(L);
    return -1;
}

void view_live_stop(ViewLive *L) {
    if (!L) return;
    L->stop = 1;
    if (L->started) pthread_join(L->th, NULL);
    free_all(L);
}
