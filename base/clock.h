/* base/clock.h — the two clocks the project times itself with: wall time that never steps back
 * (progress rates, ETAs, per-step seconds in reports) and the process's CPU time (benchmarks on a
 * shared machine, where the wall clock also measures the other users). */
#ifndef ANIMA_BASE_CLOCK_H
#define ANIMA_BASE_CLOCK_H

#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC: only differences mean anything. */
double base_now(void);

/* The same clock in whole nanoseconds (for deadlines kept in an integer, as an atomic). */
int64_t base_now_ns(void);

/* CPU seconds used so far by every thread of this process (CLOCK_PROCESS_CPUTIME_ID). */
double base_cpu_now(void);

#endif
