/* tools/view_server.c — `anima view`'s server (tools/view_server.h): one libwebsockets context that
 * serves the page (tools/web/viewer/), its JavaScript modules (build/web/node_modules, `make
 * web-deps`), the files shown (a mesh or Gaussian PLY, a skinning file's weights, a sim run's
 * frames, tools/view_files.c) and, with a live simulation, a WebSocket that streams it
 * (tools/view_live.c) and takes the user's inputs. docs/viewer.md: usage, protocol, security.
 *
 * Security: the server listens on 127.0.0.1 unless --bind names another address; then a random
 * token is printed in the URL and every HTTP request and WebSocket upgrade must carry it (the URL's
 * ?token=, or the cookie the first request with it sets, so the page's own module imports pass).
 * A WebSocket upgrade whose Origin is not the server itself is refused (another site's page in the
 * user's browser must not drive the sim), and on the loopback the Host header must name it (DNS
 * rebinding). Static paths are checked character by character, must
 * not hold "..", and are resolved with realpath under their root; files of a run are served only
 * by the names the server listed. Client messages are validated in tools/view_cmd.c. */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "tools/view_server.h"

enum { OUTQ = 256 };

typedef struct {
    struct lws_context *ctx;
    ViewLive *live;
    const char *web, *modules;
    const ViewFiles *files;
    bool need_token;
    const char *token;
    char *info_json;
} ViewServer;

static ViewServer S;
static volatile sig_atomic_t g_stop;

typedef struct Sess {
    bool hello_sent, rx_over, is_ws;
    int window, inflight; /* flow control: frames sent and not yet "ready"-ed; window 0: no limit */
    uint32_t topo_sent, frame_sent;
    uint64_t bcast_seen;
    char *outq[OUTQ];
    int oh, on;
    char rx[VIEW_MAX_MESSAGE + 1];
    size_t rxlen;
} Sess;

/* ---- HTTP ------------------------------------------------------------------------------------ */

static const char *mime_of(const char *path) {
    const char *e = strrchr(path, '.');
    if (!e) return "application/octet-stream";
    if (!strcmp(e, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(e, ".js") || !strcmp(e, ".mjs")) return "text/javascript; charset=utf-8";
    if (!strcmp(e, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(e, ".json") || !strcmp(e, ".map")) return "application/json";
    if (!strcmp(e, ".wasm")) return "application/wasm";
    if (!strcmp(e, ".png")) return "image/png";
    return "application/octet-stream";
}

/* root + rel resolved, and still under root (a symlink out of it is refused): 0, or -1 */
static int resolve_under(const char *root, const char *rel, char *out /* PATH_MAX */) {
    char joined[PATH_MAX * 2];
    snprintf(joined, sizeof joined, "%s/%s", root, rel);
    if (!realpath(joined, out)) return -1;
    size_t n = strlen(root);
    if (strncmp(out, root, n) || (out[n] != '/' && out[n] != 0)) return -1;
    struct stat st;
    if (stat(out, &st) || !S_ISREG(st.st_mode)) return -1;
    return 0;
}

static bool token_eq(const char *a, const char *b) {
    size_t n = strlen(b), m = strlen(a);
    unsigned d = (unsigned)(n ^ m);
    for (size_t i = 0; i < n; i++) d |= (unsigned)(b[i] ^ (i < m ? a[i] : 0));
    return d == 0; /* constant time in the length of the real token */
}

/* whether the request carries the token: ?token= or the cookie anima_token=; *from_url says which */
static bool has_token(struct lws *wsi, bool *from_url) {
    char buf[256];
    *from_url = false;
    if (!S.need_token) return true;
    for (int i = 0; i < 16; i++) {
        int n = lws_hdr_copy_fragment(wsi, buf, sizeof buf, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n <= 0) break;
        if (!strncmp(buf, "token=", 6) && token_eq(buf + 6, S.token)) return *from_url = true;
    }
    if (lws_hdr_copy(wsi, buf, sizeof buf, WSI_TOKEN_HTTP_COOKIE) > 0)
        for (char *c = strtok(buf, "; "); c; c = strtok(NULL, "; "))
            if (!strncmp(c, "anima_token=", 12) && token_eq(c + 12, S.token)) return true;
    return false;
}

static int url_arg(struct lws *wsi, const char *name, char *out, size_t len) {
    char buf[300];
    size_t k = strlen(name);
    for (int i = 0; i < 16; i++) {
        int n = lws_hdr_copy_fragment(wsi, buf, sizeof buf, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n <= 0) break;
        if (!strncmp(buf, name, k) && buf[k] == '=') {
            size_t m = strlen(buf + k + 1);
            if (m >= len) return -1;
            memcpy(out, buf + k + 1, m + 1);
            return 0;
        }
    }
    return -1;
}

/* a complete response with a body from memory */
static int http_reply(struct lws *wsi, unsigned status, const char *mime, const char *body, size_t len, bool cookie) {
    uint8_t hdr[LWS_PRE + 1024], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr - 1;
    if (lws_add_http_common_headers(wsi, status, mime, len, &p, end)) return 1;
    if (lws_add_http_header_by_name(wsi, (const uint8_t *)"cache-control:", (const uint8_t *)"no-store", 8, &p, end))
        return 1;
    if (cookie) {
        char c[128];
        int n = snprintf(c, sizeof c, "anima_token=%s; Path=/; HttpOnly; SameSite=Strict", S.token);
        if (lws_add_http_header_by_name(wsi, (const uint8_t *)"set-cookie:", (const uint8_t *)c, n, &p, end)) return 1;
    }
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return 1;
    uint8_t *b = malloc(LWS_PRE + len + 1);
    if (!b) return 1;
    memcpy(b + LWS_PRE, body, len);
    int w = lws_write(wsi, b + LWS_PRE, len, LWS_WRITE_HTTP_FINAL);
    free(b);
    if (w < (int)len) return 1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int http_text(struct lws *wsi, unsigned status, const char *msg) {
    return http_reply(wsi, status, "text/plain; charset=utf-8", msg, strlen(msg), false);
}

static int serve_file(struct lws *wsi, const char *path, bool cookie) {
    char extra[160];
    int n = 0;
    if (cookie) n = snprintf(extra, sizeof extra, "Set-Cookie: anima_token=%s; Path=/; HttpOnly; SameSite=Strict\r\n", S.token);
    int rc = lws_serve_http_file(wsi, path, mime_of(path), cookie ? extra : NULL, n);
    if (rc < 0 || (rc > 0 && lws_http_transaction_completed(wsi))) return -1;
    return 0;
}

/* Without a token (a loopback bind) the Host header must name the loopback: a page of another
 * site whose name the attacker re-points at 127.0.0.1 (DNS rebinding) would otherwise be of the
 * same origin as this server, and read its files and drive its sim. */
static bool host_ok(struct lws *wsi) {
    if (S.need_token) return true; /* the token guards */
    char host[256];
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0) return false;
    char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
    if (colon) colon[host[0] == '[' ? 1 : 0] = 0;
    return !strcmp(host, "127.0.0.1") || !strcmp(host, "localhost") || !strcmp(host, "[::1]");
}

static int http_request(struct lws *wsi, const char *uri) {
    bool from_url;
    if (!host_ok(wsi)) return http_text(wsi, HTTP_STATUS_FORBIDDEN, "403: Host is not this machine's loopback\n");
    if (!has_token(wsi, &from_url)) return http_text(wsi, HTTP_STATUS_FORBIDDEN, "403: this server needs its token (?token=...)\n");
    bool cookie = S.need_token && from_url;
    char path[PATH_MAX * 2];
    if (!strcmp(uri, "/api/info"))
        return http_reply(wsi, HTTP_STATUS_OK, "application/json", S.info_json, strlen(S.info_json), cookie);
    if (!strcmp(uri, "/api/state")) {
        if (!S.live) return http_text(wsi, HTTP_STATUS_NOT_FOUND, "404: no live simulation (anima view --scene X.json)\n");
        char a[32];
        int64_t v = -1;
        if (!url_arg(wsi, "vertex", a, sizeof a)) v = strtoll(a, NULL, 10);
        char *s = view_live_state(S.live, v);
        if (!s) return http_text(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, "500: out of memory\n");
        int rc = http_reply(wsi, HTTP_STATUS_OK, "application/json", s, strlen(s), cookie);
        free(s);
        return rc;
    }
    if (!strncmp(uri, "/files/", 7)) { /* only the names the server listed */
        for (int i = 0; i < S.files->n; i++)
            if (!strcmp(uri + 7, S.files->files[i].name)) {
                snprintf(path, sizeof path, "%s/%s", S.files->dir, S.files->files[i].name);
                if (!strcmp(S.files->files[i].kind, "skinning")) {
                    char err[1024];
                    char *j = view_skinning_json(path, err, sizeof err);
                    if (!j) {
                        char msg[1200] = "500: ";
                        strncat(msg, err, sizeof msg - 8);
                        strcat(msg, "\n");
                        return http_text(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, msg);
                    }
                    int rc = http_reply(wsi, HTTP_STATUS_OK, "application/json", j, strlen(j), cookie);
                    free(j);
                    return rc;
                }
                if (strcmp(S.files->files[i].kind, "mesh") && strcmp(S.files->files[i].kind, "frame") && strcmp(S.files->files[i].kind, "gaussians")) {
                    char err[1024];
                    size_t len = 0;
                    uint8_t *b = view_h5_animation(path, &len, err, sizeof err);
                    if (!b) {
                        char msg[1200] = "500: ";
                        strncat(msg, err, sizeof msg - 8);
                        strcat(msg, "\n");
                        return http_text(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, msg);
                    }
                    int rc = http_reply(wsi, HTTP_STATUS_OK, "application/octet-stream", (const char *)b, len, cookie);
                    free(b);
                    return rc;
                }
                return serve_file(wsi, path, cookie);
            }
        return http_text(wsi, HTTP_STATUS_NOT_FOUND, "404: not one of the files this viewer shows\n");
    }
    if (!view_path_ok(uri)) return http_text(wsi, HTTP_STATUS_FORBIDDEN, "403: bad path\n");
    const char *root = S.web, *rel = uri + 1;
    if (!strncmp(uri, "/node_modules/", 14)) root = S.modules, rel = uri + 14;
    else if (!strcmp(uri, "/")) rel = "index.html";
    if (!root[0] || resolve_under(root, rel, path))
        return http_text(wsi, HTTP_STATUS_NOT_FOUND, root == S.modules && !root[0]
                                                        ? "404: no node_modules (run make web-deps)\n"
                                                        : "404: not found\n");
    return serve_file(wsi, path, cookie);
}

/* ---- WebSocket --------------------------------------------------------------------------------- */

/* a WebSocket upgrade from a page of this server only: Origin (when sent) is http://<Host> */
static bool origin_ok(struct lws *wsi) {
    char origin[256], host[256];
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0) return true; /* not a browser */
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0) return false;
    const char *o = !strncmp(origin, "http://", 7) ? origin + 7 : !strncmp(origin, "https://", 8) ? origin + 8 : NULL;
    return o && !strcmp(o, host);
}

static void queue_text(Sess *s, const char *msg) {
    if (s->on >= OUTQ) return; /* a client that floods us loses replies, not the server its memory */
    char *c = strdup(msg);
    if (!c) return;
    s->outq[(s->oh + s->on++) % OUTQ] = c;
}

static int ws_write_text(struct lws *wsi, const char *msg) {
    size_t n = strlen(msg);
    uint8_t *b = malloc(LWS_PRE + n + 1);
    if (!b) return -1;
    memcpy(b + LWS_PRE, msg, n);
    int w = lws_write(wsi, b + LWS_PRE, n, LWS_WRITE_TEXT);
    free(b);
    return w < (int)n ? -1 : 0;
}

/* one message per writable callback, in order: hello, topology, replies, broadcast, frame */
static int ws_writable(struct lws *wsi, Sess *s) {
    if (!s->hello_sent) {
        char *h = S.live ? view_live_hello(S.live) : strdup("{\"type\":\"hello\",\"mode\":\"files\"}");
        int rc = h ? ws_write_text(wsi, h) : -1;
        free(h);
        s->hello_sent = true;
        lws_callback_on_writable(wsi);
        return rc;
    }
    if (s->on) {
        char *m = s->outq[s->oh];
        s->oh = (s->oh + 1) % OUTQ, s->on--;
        int rc = ws_write_text(wsi, m);
        free(m);
        lws_callback_on_writable(wsi);
        return rc;
    }
    if (!S.live) return 0;
    char bc[600];
    if (view_live_broadcast(S.live, &s->bcast_seen, bc, sizeof bc)) {
        lws_callback_on_writable(wsi);
        return ws_write_text(wsi, bc);
    }
    uint32_t cur = view_live_topo(S.live);
    size_t len;
    if (s->topo_sent != cur) {
        uint8_t *b = view_live_topology(S.live, LWS_PRE, &len);
        if (!b) return -1;
        memcpy(&s->topo_sent, b + LWS_PRE + 4, 4);
        int w = lws_write(wsi, b + LWS_PRE, len, LWS_WRITE_BINARY);
        free(b);
        lws_callback_on_writable(wsi);
        return w < (int)len ? -1 : 0;
    }
    uint32_t topo;
    if (s->window && s->inflight >= s->window) return 0; /* the client's "ready" asks for more */
    uint8_t *b = view_live_frame(S.live, LWS_PRE, &s->frame_sent, &topo, &len);
    if (!b) return 0;
    if (topo != s->topo_sent) { /* a frame of an older topology: the next one will do */
        free(b);
        lws_callback_on_writable(wsi);
        return 0;
    }
    int w = lws_write(wsi, b + LWS_PRE, len, LWS_WRITE_BINARY);
    free(b);
    s->inflight++;
    return w < (int)len ? -1 : 0;
}

/* Flow control, the server's own messages: {"type":"flow","window":W} (1..16) makes the server
 * send at most W frames ahead of the client's {"type":"ready"} (one per frame received). Without
 * it frames go out as fast as the socket takes them, and a client that draws slower than the sim
 * steps reads frames that waited in the socket buffers (on the loopback megabytes: a second of
 * stale frames between an input and its answer). Returns whether msg was one of them. */
static bool flow_message(Sess *s, const char *msg, size_t len, char *reply, size_t replylen) {
    if (len > 64) return false;
    cJSON *j = cJSON_ParseWithLength(msg, len);
    const cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "type") : NULL;
    bool ours = cJSON_IsString(t) && (!strcmp(t->valuestring, "ready") || !strcmp(t->valuestring, "flow"));
    if (ours && !strcmp(t->valuestring, "ready")) {
        if (s->inflight > 0) s->inflight--;
    } else if (ours) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "window");
        if (cJSON_IsNumber(w) && w->valuedouble >= 1 && w->valuedouble <= 16 && w->valuedouble == (int)w->valuedouble)
            s->window = (int)w->valuedouble, s->inflight = 0;
        else
            snprintf(reply, replylen, "{\"type\":\"error\",\"message\":\"flow: window must be an integer from 1 to 16\"}");
    }
    cJSON_Delete(j);
    return ours;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    Sess *s = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return http_request(wsi, (const char *)in);
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
        bool from_url;
        if (!host_ok(wsi) || !has_token(wsi, &from_url) || !origin_ok(wsi)) return -1;
        return 0;
    }
    case LWS_CALLBACK_ESTABLISHED:
        memset(s, 0, sizeof *s);
        s->is_ws = true;
        lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_CLOSED:
        while (s->on) free(s->outq[s->oh]), s->oh = (s->oh + 1) % OUTQ, s->on--;
        return 0;
    case LWS_CALLBACK_RECEIVE: {
        if (lws_is_first_fragment(wsi)) s->rxlen = 0, s->rx_over = false;
        if (s->rxlen + len > VIEW_MAX_MESSAGE) s->rx_over = true;
        else memcpy(s->rx + s->rxlen, in, len), s->rxlen += len;
        if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi)) return 0;
        char reply[512] = "";
        if (s->rx_over) snprintf(reply, sizeof reply, "{\"type\":\"error\",\"message\":\"message too large (at most %d bytes)\"}", VIEW_MAX_MESSAGE);
        else if (lws_frame_is_binary(wsi)) snprintf(reply, sizeof reply, "{\"type\":\"error\",\"message\":\"binary messages are not accepted\"}");
        else if (!S.live) snprintf(reply, sizeof reply, "{\"type\":\"error\",\"message\":\"no live simulation (anima view --scene X.json)\"}");
        else if (!flow_message(s, s->rx, s->rxlen, reply, sizeof reply)) {
            s->rx[s->rxlen] = 0;
            int rc = view_live_message(S.live, s->rx, s->rxlen, reply, sizeof reply);
            if (rc == 0 && !strstr(reply, "\"id\"")) reply[0] = 0; /* an ok without an id needs no answer */
        }
        s->rxlen = 0, s->rx_over = false;
        if (reply[0]) queue_text(s, reply);
        lws_callback_on_writable(wsi); /* a reply, or a "ready" that lets the next frame go */
        return 0;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return ws_writable(wsi, s);
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        lws_callback_on_writable_all_protocol(lws_get_context(wsi), lws_get_protocol(wsi));
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

static const struct lws_protocols PROTOCOLS[] = {
    {"anima-live", callback, sizeof(Sess), VIEW_MAX_MESSAGE, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* ---- the server's life ----------------------------------------------------------------------- */

int view_server_open(const ViewServerOptions *o, int *port) {
    memset(&S, 0, sizeof S);
    S.web = o->web, S.modules = o->modules, S.files = o->files;
    S.need_token = o->token != NULL, S.token = o->token ? o->token : "";
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = o->port;
    info.iface = !strcmp(o->bind, "0.0.0.0") ? NULL : o->bind;
    info.protocols = PROTOCOLS;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6 * (strchr(o->bind, ':') == NULL);
    info.vhost_name = "default";
    S.ctx = lws_create_context(&info);
    if (!S.ctx) return -1;
    struct lws_vhost *vh = lws_get_vhost_by_name(S.ctx, "default");
    *port = vh ? lws_get_vhost_listen_port(vh) : o->port;
    return 0;
}

void view_server_run(ViewLive *live, const char *scene) {
    S.live = live;
    /* /api/info: what the page shows */
    cJSON *j = cJSON_CreateObject(), *fl = cJSON_AddArrayToObject(j, "files");
    cJSON_AddBoolToObject(j, "live", S.live != NULL);
    if (scene) cJSON_AddStringToObject(j, "scene", scene);
    cJSON_AddBoolToObject(j, "modules", S.modules[0] != 0);
    for (int i = 0; i < S.files->n; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", S.files->files[i].name);
        cJSON_AddStringToObject(f, "kind", S.files->files[i].kind);
        cJSON_AddItemToArray(fl, f);
    }
    S.info_json = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    while (!g_stop)
        if (lws_service(S.ctx, 0) < 0) break;
}

void view_server_stop(void) {
    g_stop = 1;
    if (S.ctx) lws_cancel_service(S.ctx);
}

void view_server_wake(void *unused) {
    (void)unused;
    lws_cancel_service(S.ctx);
}

void view_server_close(void) {
    if (S.ctx) lws_context_destroy(S.ctx);
    free(S.info_json);
    memset(&S, 0, sizeof S);
}
