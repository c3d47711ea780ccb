/* sim/internal.c — see sim/internal.h. */
#include <time.h>

#include "sim/internal.h"

double sim_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
