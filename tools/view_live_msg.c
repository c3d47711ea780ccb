/* tools/view_live_msg.c — the server's side of the live view (tools/view_live.h): client messages
 * validated (tools/view_cmd.c) and queued for the sim thread, and what the server sends, read
 * under the published frame's lock: the hello, the topology and frame bytes, the state JSON and
 * the sim thread's broadcasts. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "sim/inspect.h"
#include "tools/view_live_internal.h"

static int reply_json(char *reply, size_t len, bool ok, uint32_t id, const char *msg) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "type", ok ? "ok" : "error");
    if (id) cJSON_AddNumberToObject(j, "id", id);
    if (msg) cJSON_AddStringToObject(j, "message", msg);
    if (!j || !cJSON_PrintPreallocated(j, reply, (int)len, false)) snprintf(reply, len, "{\"type\":\"error\"}");
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

int view_live_message(ViewLive *L, const char *text, size_t len, char *reply, size_t replylen) {
    ViewScope scope = {L->nobj_v, L->extent, L->rigged ? &L->rig : NULL};
    ViewCmd c;
    char why[160];
    if (view_cmd_parse(text, len, &scope, &c, why, sizeof why)) return reply_json(reply, replylen, false, c.id, why);
    pthread_mutex_lock(&L->mu);
    int ok = 1;
    /* a drag of the same vertex as the last queued one replaces it (mouse moves coalesce) */
    if (c.type == VIEW_CMD_DRAG && L->qn && L->q[L->qn - 1].type == VIEW_CMD_DRAG && L->q[L->qn - 1].vertex == c.vertex)
        L->q[L->qn - 1] = c;
    else if (L->qn < QCAP)
        L->q[L->qn++] = c;
    else
        ok = 0;
    pthread_mutex_unlock(&L->mu);
    if (!ok) return reply_json(reply, replylen, false, c.id, "busy: too many inputs queued");
    return reply_json(reply, replylen, true, c.id, NULL);
}

char *view_live_hello(ViewLive *L) {
    cJSON *j = cJSON_CreateObject(), *objs = cJSON_AddArrayToObject(j, "objects");
    cJSON_AddStringToObject(j, "type", "hello");
    cJSON_AddStringToObject(j, "mode", "live");
    cJSON_AddStringToObject(j, "scene", L->name);
    cJSON_AddNumberToObject(j, "dt", L->sc.dt);
    cJSON_AddNumberToObject(j, "nobj_v", (double)L->nobj_v);
    cJSON_AddNumberToObject(j, "extent", L->extent);
    cJSON_AddItemToObject(j, "center", cJSON_CreateDoubleArray(L->center, 3));
    cJSON_AddNumberToObject(j, "drag_radius", L->drag_radius);
    cJSON_AddBoolToObject(j, "rig", L->rigged);
    if (L->rigged) { /* the bones at rest in the world (rig frame p → L p + off) for the page's joint list */
        cJSON *bs = cJSON_AddArrayToObject(j, "bones");
        for (int b = 0; b < L->rig.nbones; b++) {
            const DsBone *db = &L->rig.shape.bones[b];
            double h[3], tl[3];
            sim_rig_bone_world(&L->rig, b, h, tl);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", db->name);
            cJSON_AddNumberToObject(o, "parent", db->parent);
            cJSON_AddItemToObject(o, "head", cJSON_CreateDoubleArray(h, 3));
            cJSON_AddItemToObject(o, "tail", cJSON_CreateDoubleArray(tl, 3));
            cJSON_AddItemToArray(bs, o);
        }
    }
    cJSON_AddBoolToObject(j, "contact", L->sc.contact.enabled);
    for (int k = 0; k < L->nobj; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "v0", (double)L->v0[k]);
        cJSON_AddNumberToObject(o, "nv", (double)L->objs[k].nv);
        cJSON_AddNumberToObject(o, "handles", (double)L->objs[k].m);
        cJSON_AddNumberToObject(o, "cubature", (double)(L->objs[k].ne ? L->objs[k].ne : L->objs[k].nc));
        cJSON_AddItemToArray(objs, o);
    }
    cJSON *pl = cJSON_AddArrayToObject(j, "planes");
    for (int p = 0; p < L->sc.nplanes; p++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "normal", cJSON_CreateDoubleArray(L->sc.planes[p].normal, 3));
        cJSON_AddNumberToObject(o, "offset", L->sc.planes[p].offset);
        cJSON_AddItemToArray(pl, o);
    }
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

uint32_t view_live_topo(ViewLive *L) {
    pthread_mutex_lock(&L->mu);
    uint32_t t = L->topo;
    pthread_mutex_unlock(&L->mu);
    return t;
}

uint8_t *view_live_topology(ViewLive *L, size_t pre, size_t *len) {
    pthread_mutex_lock(&L->mu);
    size_t n = 16 + 12 * (size_t)L->nf + 12 * (size_t)L->topo_nv;
    uint8_t *b = malloc(pre + n);
    if (b) {
        uint32_t h[4] = {VIEW_TOPO_MAGIC, L->topo, (uint32_t)L->topo_nv, (uint32_t)L->nf};
        memcpy(b + pre, h, 16);
        memcpy(b + pre + 16, L->faces, 12 * (size_t)L->nf);
        memcpy(b + pre + 16 + 12 * (size_t)L->nf, L->colors, 12 * (size_t)L->topo_nv);
        *len = n;
    }
    pthread_mutex_unlock(&L->mu);
    return b;
}

uint8_t *view_live_frame(ViewLive *L, size_t pre, uint32_t *frame, uint32_t *topo, size_t *len) {
    pthread_mutex_lock(&L->mu);
    uint8_t *b = NULL;
    if (L->frame != *frame && L->pub_topo == L->topo) {
        size_t n = sizeof(ViewFrameHeader) + 12 * (size_t)L->nv;
        b = malloc(pre + n);
        if (b) {
            ViewFrameHeader h = {VIEW_FRAME_MAGIC, L->topo, L->frame, L->ack, L->tpub, (uint32_t)L->nv, (uint32_t)L->nobj_v};
            memcpy(b + pre, &h, sizeof h);
            memcpy(b + pre + sizeof h, L->pos, 12 * (size_t)L->nv);
            *len = n, *frame = L->frame, *topo = L->topo;
        }
    }
    pthread_mutex_unlock(&L->mu);
    return b;
}

char *view_live_state(ViewLive *L, int64_t vertex) {
    cJSON *j = cJSON_CreateObject();
    double cen[3], w[NTIME], c[NTIME];
    pthread_mutex_lock(&L->mu);
    sim_points_centroid(L->pos, L->nobj_v, cen);
    cJSON_AddNumberToObject(j, "t", L->tpub);
    cJSON_AddNumberToObject(j, "frame", L->frame);
    cJSON_AddNumberToObject(j, "ack", L->ack);
    cJSON_AddNumberToObject(j, "topo", L->topo);
    cJSON_AddNumberToObject(j, "nv", (double)L->nv);
    cJSON_AddNumberToObject(j, "nobj_v", (double)L->nobj_v);
    cJSON_AddItemToObject(j, "centroid", cJSON_CreateDoubleArray(cen, 3));
    if (vertex >= 0 && vertex < L->nv) {
        double x[3] = {L->pos[3 * vertex], L->pos[3 * vertex + 1], L->pos[3 * vertex + 2]};
        cJSON_AddItemToObject(j, "vertex", cJSON_CreateDoubleArray(x, 3));
    }
    int nt = (int)(L->ntime < NTIME ? L->ntime : NTIME);
    memcpy(w, L->wall_ms, sizeof(double) * (size_t)nt);
    memcpy(c, L->cpu_ms, sizeof(double) * (size_t)nt);
    cJSON_AddNumberToObject(j, "realtime", L->behind);
    cJSON_AddNumberToObject(j, "balls", L->pub_balls);
    cJSON_AddNumberToObject(j, "pins", L->pub_pins);
    cJSON_AddBoolToObject(j, "dragging", L->pub_dragging);
    pthread_mutex_unlock(&L->mu);
    if (nt) { /* the last NTIME steps: wall and process-CPU milliseconds per step, medians */
        qsort(w, (size_t)nt, sizeof *w, base_cmp_double);
        qsort(c, (size_t)nt, sizeof *c, base_cmp_double);
        cJSON_AddNumberToObject(j, "step_ms_median", w[nt / 2]);
        cJSON_AddNumberToObject(j, "step_cpu_ms_median", c[nt / 2]);
    }
    cJSON_AddNumberToObject(j, "dt", L->sc.dt);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

size_t view_live_broadcast(ViewLive *L, uint64_t *seen, char *buf, size_t len) {
    size_t n = 0;
    pthread_mutex_lock(&L->mu);
    if (L->bcast_seq != *seen) {
        snprintf(buf, len, "%s", L->bcast);
        n = strlen(buf);
        *seen = L->bcast_seq;
    }
    pthread_mutex_unlock(&L->mu);
    return n;
}
