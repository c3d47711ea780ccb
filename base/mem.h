/* base/mem.h — how much memory a run may use, so that a configuration that cannot fit is refused
 * before its work starts (issue 17: `train.batch=100000` on the tiny preset was accepted and the
 * process killed at 23 GB) rather than by the kernel's OOM killer minutes later. */
#ifndef ANIMA_BASE_MEM_H
#define ANIMA_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Bytes this process can still get: /proc/meminfo's MemAvailable, lowered to the cgroup's
 * memory.max − memory.current (cgroup v2) and to RLIMIT_AS/RLIMIT_DATA when those are set.
 * ANIMA_MEM_AVAILABLE (bytes, or with a K/M/G suffix) replaces the measurement — a test
 * standing in for a smaller machine. -1 when nothing could be read (no check is possible). */
int64_t base_mem_available(void);

/* "1.5 GiB", "640 MiB", "12 KiB": for messages. */
const char *base_mem_str(int64_t bytes, char *buf, size_t len);

/* Whether the checks that use base_mem_available are on: ANIMA_MEM_CHECK=0 turns them off (a
 * user who knows better, e.g. with swap or overcommit they trust). */
int base_mem_check_enabled(void);

#endif
