/* sim/internal.h — what the sim/ sources share and nobody else needs. Not a public header. */
#ifndef ANIMA_SIM_INTERNAL_H
#define ANIMA_SIM_INTERNAL_H

#include <stddef.h>

/* printf into err (n bytes, truncated; nothing when err is NULL or n is 0) */
void sim_set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* monotonic seconds */
double sim_now(void);

#endif
