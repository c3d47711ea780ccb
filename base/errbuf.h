/* base/errbuf.h — the one way input errors are reported (docs/architecture.md, Errors): a message
 * printed into the caller's buffer. Every layer above uses it, so it sits in the lowest one. */
#ifndef ANIMA_BASE_ERRBUF_H
#define ANIMA_BASE_ERRBUF_H

#include <stddef.h>

/* printf into err (n bytes, truncated; nothing when err is NULL or n is 0). Returns -1, so an
 * error path can end with `return base_errf(err, errlen, "...", ...);`. */
int base_errf(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
