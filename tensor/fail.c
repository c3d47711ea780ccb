/* tensor/fail.c — the tensor layer's one abort path and the call site it names: a misuse of the
 * API (a shape mismatch, a missing device) ends the program with one line on stderr, whatever
 * base/log.h's sink is, because there is no caller left to hand an error to. Depends on nothing
 * else in tensor/, so every file (the core, the backends, the registry) may call it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static _Thread_local TensorSite site_now;

void tensor_site_set(const char *file, int line) {
    site_now.file = file;
    site_now.line = line;
}

TensorSite tensor_site_get(void) { return site_now; }

void tensor_fail(const char *op, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (site_now.file)
        fprintf(stderr, "anima: %s: %s (at %s:%d)\n", op, msg, site_now.file, site_now.line);
    else
        fprintf(stderr, "anima: %s: %s\n", op, msg);
    fflush(stderr);
    abort();
}

