/* base/errbuf.c — see errbuf.h. */
#include <stdarg.h>
#include <stdio.h>

#include "base/errbuf.h"

int base_errf(char *err, size_t n, const char *fmt, ...) {
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}
