/* base/mem.c — available memory (base/mem.h). */
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* "123", "4K", "2.5G" (powers of 1024) -> bytes; -1 when not a size */
static int64_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0)) return -1;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0, end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024, end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024, end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024, end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    if (*end) return -1;
    return (int64_t)(v * mul);
}

/* the first number in a one-line file ("max" and unreadable: -1) */
static int64_t read_number(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long v;
    int ok = fscanf(f, "%lld", &v) == 1;
    fclose(f);
    return ok && v >= 0 ? (int64_t)v : -1;
}

static int64_t lower(int64_t have, int64_t limit) { return limit >= 0 && (have < 0 || limit < have) ? limit : have; }

int64_t base_mem_available(void) {
    const char *fake = getenv("ANIMA_MEM_AVAILABLE");
    if (fake && *fake) {
        int64_t v = parse_size(fake);
        if (v >= 0) return v;
    }
    int64_t avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) {
                avail = (int64_t)kb * 1024;
                break;
            }
        fclose(f);
    }
    /* the cgroup's limit less what it already uses: v2 (memory.max, memory.current) or v1
     * (memory.limit_in_bytes, memory.usage_in_bytes), at the path /proc/self/cgroup names, or at
     * the hierarchy's root when that path is not visible (a container sees its own group there) */
    char v2[400] = "", v1[400] = "";
    f = fopen("/proc/self/cgroup", "r");
    if (f) {
        char line[400];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            char *mem = strstr(line, ":memory:");
            if (!strncmp(line, "0::", 3)) snprintf(v2, sizeof v2, "%s", line + 3);
            else if (mem) snprintf(v1, sizeof v1, "%s", mem + 8);
        }
        fclose(f);
    }
    static const char *const files[2][3] = {{"/sys/fs/cgroup", "memory.max", "memory.current"},
                                            {"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"}};
    for (int v = 0; v < 2; v++) {
        const char *sub = v == 0 ? v2 : v1;
        for (int tries = 0; tries < 2; tries++) {
            char p1[900], p2[900];
            snprintf(p1, sizeof p1, "%s%s/%s", files[v][0], tries ? "" : sub, files[v][1]);
            snprintf(p2, sizeof p2, "%s%s/%s", files[v][0], tries ? "" : sub, files[v][2]);
            int64_t max = read_number(p1), cur = read_number(p2);
            if (max < 0 || cur < 0) continue;
            if (max < ((int64_t)1 << 60)) avail = lower(avail, max > cur ? max - cur : 0); /* v1's "no limit" is ~2^63 */
            break;
        }
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) avail = lower(avail, (int64_t)rl.rlim_cur);
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) avail = lower(avail, (int64_t)rl.rlim_cur);
    return avail;
}

const char *base_mem_str(int64_t bytes, char *buf, size_t len) {
    double b = (double)bytes;
    if (b >= 1024.0 * 1024 * 1024) snprintf(buf, len, "%.1f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) snprintf(buf, len, "%.0f MiB", b / (1024.0 * 1024));
    else snprintf(buf, len, "%.0f KiB", b / 1024.0);
    return buf;
}

int base_mem_check_enabled(void) {
    const char *s = getenv("ANIMA_MEM_CHECK");
    return !(s && !strcmp(s, "0"));
}
