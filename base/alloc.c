/* base/alloc.c — see alloc.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

static _Noreturn void out_of_memory(size_t n, const char *file, int line) {
    fprintf(stderr, "anima: out of memory allocating %zu bytes at %s:%d\n", n, file, line);
    abort();
}

/* Sizes of 0 may legitimately return NULL; callers that ask for 0 bytes get one so that NULL
 * always means failure. */
void *base_malloc_check(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n, file, line);
    return p;
}

void *base_calloc_check(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count && size ? count : 1, count && size ? size : 1);
    if (!p) out_of_memory(count * size, file, line);
    return p;
}

void *base_realloc_check(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n, file, line);
    return q;
}

char *base_strdup_check(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) out_of_memory(n, file, line);
    return memcpy(p, s, n);
}
