/* base/log.c — see log.h. */
#include <stdarg.h>
#include <stdio.h>

#include "base/log.h"

static BaseLogFn g_sink;
static void *g_user;

void base_log_set_sink(BaseLogFn fn, void *user) {
    g_sink = fn;
    g_user = user;
}

void base_logf(BaseLogLevel level, const char *fmt, ...) {
    if (!g_sink) return; /* no formatting cost when nobody listens */
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g_sink(g_user, level, msg);
}
