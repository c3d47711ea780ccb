/* tools/view_cmd.c — the live view's client inputs (tools/view_live.h, docs/viewer.md): a JSON
 * message parsed and validated in the server's thread into the ViewCmd the sim thread applies.
 * Nothing of the message reaches the sim unchecked: types, integer ranges, finite vectors within
 * bounds, a bone of the rig. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tools/view_live.h"

/* a finite 3-vector with every |component| <= lim */
static const char *vec3(const cJSON *o, const char *key, double lim, double v[3]) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!a) return "is missing";
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3) return "must be an array of 3 numbers";
    for (int i = 0; i < 3; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return "must be an array of 3 finite numbers";
        if (fabs(x->valuedouble) > lim) return "is out of range";
        v[i] = x->valuedouble;
    }
    return NULL;
}

int view_cmd_parse(const char *text, size_t len, const ViewScope *s, ViewCmd *c, char *why, size_t whylen) {
    memset(c, 0, sizeof *c);
    if (len > VIEW_MAX_MESSAGE) {
        snprintf(why, whylen, "message too large");
        return -1;
    }
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j) {
        snprintf(why, whylen, "not JSON");
        return -1;
    }
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(j, "type"), *jid = cJSON_GetObjectItemCaseSensitive(j, "id");
    if (!cJSON_IsObject(j) || !cJSON_IsString(ty)) {
        snprintf(why, whylen, "a message is an object with a string \"type\"");
        goto bad;
    }
    if (jid) {
        if (!cJSON_IsNumber(jid) || !(jid->valuedouble >= 1 && jid->valuedouble <= 2147483647.0) ||
            jid->valuedouble != floor(jid->valuedouble)) {
            snprintf(why, whylen, "id must be an integer from 1 to 2147483647");
            goto bad;
        }
        c->id = (uint32_t)jid->valuedouble;
    }
    /* positions within a kilometre, speeds within 100 m/s: far beyond any scene, and a bound on
     * what a spring or a ball can put into the solver */
    const double LIM = 1e3;
    const char *t = ty->valuestring, *e;
    if (!strcmp(t, "drag")) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "vertex");
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || !(v->valuedouble >= 0) ||
            v->valuedouble >= (double)s->nobj_v) {
            snprintf(why, whylen, "drag: vertex must be an integer from 0 to %lld", (long long)s->nobj_v - 1);
            goto bad;
        }
        if ((e = vec3(j, "target", LIM, c->a))) {
            snprintf(why, whylen, "drag: target %s", e);
            goto bad;
        }
        c->type = VIEW_CMD_DRAG, c->vertex = (int64_t)v->valuedouble;
    } else if (!strcmp(t, "release")) {
        c->type = VIEW_CMD_RELEASE;
    } else if (!strcmp(t, "pin")) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "radius");
        if ((e = vec3(j, "center", LIM, c->a))) {
            snprintf(why, whylen, "pin: center %s", e);
            goto bad;
        }
        if (!cJSON_IsNumber(r) || !(r->valuedouble > 0 && r->valuedouble <= s->extent)) {
            snprintf(why, whylen, "pin: radius must be a number in (0, %g]", s->extent);
            goto bad;
        }
        c->type = VIEW_CMD_PIN, c->radius = r->valuedouble;
    } else if (!strcmp(t, "unpin")) {
        c->type = VIEW_CMD_UNPIN;
    } else if (!strcmp(t, "drop_ball")) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "radius");
        if ((e = vec3(j, "pos", LIM, c->a))) {
            snprintf(why, whylen, "drop_ball: pos %s", e);
            goto bad;
        }
        if ((e = vec3(j, "vel", 100, c->b))) {
            snprintf(why, whylen, "drop_ball: vel %s", e);
            goto bad;
        }
        if (s->rig) { /* world.c's IPC does not see the rig's displacement (sim/scene.h) */
            snprintf(why, whylen, "drop_ball: not in a rigged scene (contact does not see the rig)");
            goto bad;
        }
        c->radius = 0.1 * s->extent;
        if (r) {
            if (!cJSON_IsNumber(r) || !(r->valuedouble >= 0.01 * s->extent && r->valuedouble <= s->extent)) {
                snprintf(why, whylen, "drop_ball: radius must be a number in [%g, %g]", 0.01 * s->extent, s->extent);
                goto bad;
            }
            c->radius = r->valuedouble;
        }
        c->type = VIEW_CMD_BALL;
    } else if (!strcmp(t, "joint")) {
        if (!s->rig) {
            snprintf(why, whylen, "no rig in scene");
            goto bad;
        }
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "joint"), *cl = cJSON_GetObjectItemCaseSensitive(j, "clear");
        int bone = -1;
        if (cJSON_IsString(b)) bone = sim_rig_bone(s->rig, b->valuestring); /* names are fixed after the load */
        else if (cJSON_IsNumber(b) && b->valuedouble == floor(b->valuedouble) && b->valuedouble >= 0 &&
                 b->valuedouble < s->rig->nbones)
            bone = (int)b->valuedouble;
        if (bone < 0) {
            snprintf(why, whylen, "joint: joint must be a bone name or an integer from 0 to %d", s->rig->nbones - 1);
            goto bad;
        }
        if (cl && !cJSON_IsBool(cl)) {
            snprintf(why, whylen, "joint: clear must be true or false");
            goto bad;
        }
        if (cJSON_IsTrue(cl)) {
            c->radius = 1;
        } else if ((e = vec3(j, "rotation", 4 * M_PI, c->a))) {
            snprintf(why, whylen, "joint: rotation %s", e);
            goto bad;
        }
        c->type = VIEW_CMD_JOINT, c->vertex = bone;
    } else if (!strcmp(t, "reset")) {
        c->type = VIEW_CMD_RESET;
    } else {
        snprintf(why, whylen, "unknown type (drag, release, pin, unpin, drop_ball, joint, reset)");
        goto bad;
    }
    cJSON_Delete(j);
    return 0;
bad:
    cJSON_Delete(j);
    return -1;
}
