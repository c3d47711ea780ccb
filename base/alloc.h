/* base/alloc.h — allocation that cannot fail quietly: on failure it prints
 * "anima: out of memory allocating N bytes at file:line" and aborts. For the memory a library
 * routine needs to do its work at all, where there is no error path worth having (an input
 * error still returns through the error buffer, base/errbuf.h). Use the macros; they name the
 * calling line. */
#ifndef ANIMA_BASE_ALLOC_H
#define ANIMA_BASE_ALLOC_H

#include <stddef.h>

void *base_malloc_check(size_t n, const char *file, int line);
void *base_calloc_check(size_t count, size_t size, const char *file, int line);
void *base_realloc_check(void *p, size_t n, const char *file, int line);
char *base_strdup_check(const char *s, const char *file, int line);

#define base_malloc(n) base_malloc_check((n), __FILE__, __LINE__)
#define base_calloc(count, size) base_calloc_check((count), (size), __FILE__, __LINE__)
#define base_realloc(p, n) base_realloc_check((p), (n), __FILE__, __LINE__)
#define base_strdup(s) base_strdup_check((s), __FILE__, __LINE__)

#endif
