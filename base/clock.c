/* base/clock.c — see clock.h. */
#include <time.h>

#include "base/clock.h"

static double seconds(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double base_now(void) { return seconds(CLOCK_MONOTONIC); }

int64_t base_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double base_cpu_now(void) { return seconds(CLOCK_PROCESS_CPUTIME_ID); }
