/* tools/cmd_view.c — `anima view [RUN|FILE] [--scene X.json] [--port P] [--bind ADDR]`: a local web
 * viewer: the page's folders found, the files to show listed (tools/view_files.c), the server
 * started (tools/view_server.c: HTTP, WebSocket, security) with, given --scene, a live simulation
 * (tools/view_live.c) it streams, and the URL printed. docs/viewer.md: usage, protocol, security.
 * Off the loopback a random token is printed in the URL, which every request must carry. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cmd.h"
#include "tools/cmd_args.h"
#include "tools/view_server.h"

static void on_signal(int sig) {
    (void)sig;
    view_server_stop();
}

/* the first existing directory of: the option, then beside the program (./anima, build/anima) */
static int find_dir(const char *opt, const char *const *rel, char *out) {
    if (opt) return realpath(opt, out) ? 0 : -1;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    *strrchr(exe, '/') = 0;
    for (int i = 0; rel[i]; i++) {
        char p[PATH_MAX * 2];
        snprintf(p, sizeof p, "%s/%s", exe, rel[i]);
        struct stat st;
        if (!stat(p, &st) && S_ISDIR(st.st_mode) && realpath(p, out)) return 0;
    }
    return -1;
}

static bool loopback(const char *a) { return !strcmp(a, "127.0.0.1") || !strcmp(a, "::1") || !strcmp(a, "localhost"); }

int cmd_view(int argc, char **argv) {
    const char *scene = NULL, *bind = "127.0.0.1", *web = NULL, *modules = NULL;
    int64_t port = 8720;
    double drag_k = 0;
    int64_t cubature = -1;
    const CmdArg args[] = {
        {"--scene", CMD_ARG_STRING, &scene, "FILE.json", "a scene (sim/scene.h) to simulate live and drag in the browser"},
        {"--port", CMD_ARG_INT, &port, "P", "TCP port (0: any free one, printed)", 0, 65535},
        {"--bind", CMD_ARG_STRING, &bind, "ADDR", "listen address; not loopback: a token is required (printed in the URL)"},
        {"--drag-stiffness", CMD_ARG_DOUBLE, &drag_k, "K", "the mouse drag's spring (N/m; default: the scene's first drag, else 2e5)", 0, -1, .above_min = true},
        {"--cubature", CMD_ARG_INT, &cubature, "N", "live: every object's elastic forces over an optimized set of at most N cubature points built at load (sim/cubature.h; 0: every point; default: the scene's cubature_points, else 300 without a rig)", 0, 1000000},
        {"--web", CMD_ARG_STRING, &web, "DIR", "the page's files (default: tools/web/viewer beside the program)"},
        {"--modules", CMD_ARG_STRING, &modules, "DIR", "node_modules with three.js (default: build/web/node_modules, make web-deps)"},
        {0}};
    const CmdArgSpec spec = {"anima view", "[RUN|FILE] [--scene FILE.json] [options]",
                             "serves a web viewer: meshes, skinning weights, Gaussians, a run's frames; a live simulation with --scene",
                             args, "  the page: open the printed URL; docs/viewer.md has the controls and the protocol\n", 0, 1};
    const char *pos[1] = {NULL};
    int npos = 0;
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, &npos);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    if (!npos && !scene) return cmd_args_fail(&spec, stderr, "give a RUN directory or FILE to show, or --scene FILE.json");
    char err[2048] = "", web_dir[PATH_MAX], modules_dir[PATH_MAX];
    static const char *const WEB[] = {"tools/web/viewer", "../tools/web/viewer", NULL},
                             *const MODS[] = {"build/web/node_modules", "web/node_modules", "../build/web/node_modules", NULL};
    if (find_dir(web, WEB, web_dir)) {
        fprintf(stderr, "anima view: cannot find the page's files (%s); pass --web DIR\n", web ? web : "tools/web/viewer");
        return 1;
    }
    if (find_dir(modules, MODS, modules_dir)) {
        if (modules) {
            fprintf(stderr, "anima view: %s: %s\n", modules, strerror(errno));
            return 1;
        }
        modules_dir[0] = 0;
        fprintf(stderr, "anima view: warning: no build/web/node_modules (run make web-deps): the page cannot load three.js\n");
    }
    ViewFiles files = {0};
    if (npos && view_files_scan(pos[0], &files, err, sizeof err)) {
        fprintf(stderr, "anima view: %s\n", err);
        view_files_free(&files);
        return 1;
    }
    char token[33] = "";
    if (!loopback(bind)) {
        uint8_t r[16];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            fprintf(stderr, "anima view: no randomness for the token (%s)\n", strerror(errno));
            view_files_free(&files);
            return 1;
        }
        for (int i = 0; i < 16; i++) snprintf(token + 2 * i, 3, "%02x", r[i]);
    }
    ViewServerOptions so = {.web = web_dir, .modules = modules_dir, .files = &files, .bind = bind, .port = (int)port,
                            .token = token[0] ? token : NULL};
    int lport;
    if (view_server_open(&so, &lport)) {
        fprintf(stderr, "anima view: cannot listen on %s:%lld (in use? another --port)\n", bind, (long long)port);
        view_files_free(&files);
        return 1;
    }
    ViewLive *live = NULL;
    if (scene && view_live_start(&live, scene, drag_k, cubature, view_server_wake, NULL, err, sizeof err)) {
        fprintf(stderr, "anima view: %s\n", err);
        view_server_close();
        view_files_free(&files);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    const char *host = !strcmp(bind, "0.0.0.0") ? "127.0.0.1" : bind;
    printf("anima view: http://%s%s%s:%d/%s%s\n", strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", lport,
           token[0] ? "?token=" : "", token);
    if (live) printf("  live: %s (drag with the mouse; docs/viewer.md)\n", scene);
    if (files.n) printf("  showing %d file%s from %s\n", files.n, files.n == 1 ? "" : "s", files.dir);
    fflush(stdout);
    view_server_run(live, scene);
    /* the sim thread stops first: its notify uses the server */
    view_live_stop(live);
    view_server_close();
    view_files_free(&files);
    printf("anima view: stopped\n");
    return 0;
}
