/* base/par.c — team sizes by work, and bounded waiting for OpenMP's idle threads (base/par.h
 * says why and how). */
#include "base/par.h"
#include "base/clock.h"

#include <fcntl.h>
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* -1: not decided yet, 0: off (the user's spin policy, or ANIMA_OMP_DEFAULTS=0), 1: on */
static _Atomic int load_aware = -1;
static _Atomic int64_t sample_due_ns; /* CLOCK_MONOTONIC ns of the next /proc/loadavg read */
static _Atomic int free_cached = 1 << 20;
static int host_cpus;

int base_par_free_cpus(void) {
    int aware = atomic_load_explicit(&load_aware, memory_order_relaxed);
    if (aware < 0) {
        const char *w = getenv("OMP_WAIT_POLICY"), *d = getenv("ANIMA_OMP_DEFAULTS");
        /* spinning helpers of our own are runnable between regions: they would count as load */
        aware = !((w && !strcasecmp(w, "active")) || getenv("GOMP_SPINCOUNT") || (d && !strcmp(d, "0")));
        host_cpus = get_nprocs();
        atomic_store(&load_aware, aware);
    }
    if (!aware) return 1 << 20;
    int64_t t = base_now_ns();
    if (t < atomic_load_explicit(&sample_due_ns, memory_order_relaxed))
        return atomic_load_explicit(&free_cached, memory_order_relaxed);
    atomic_store_explicit(&sample_due_ns, t + 10000000, memory_order_relaxed); /* every 10 ms at most */
    /* the 4th field, "running/total": tasks runnable at this instant, host-wide, this thread
     * among them (the team's helpers sleep between regions) */
    int running = -1, fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[128];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = 0;
            if (sscanf(buf, "%*f %*f %*f %d/", &running) != 1) running = -1;
        }
    }
    int free = running < 1 ? 1 << 20 : host_cpus - (running - 1);
    if (free < 1) free = 1;
    atomic_store_explicit(&free_cached, free, memory_order_relaxed);
    return free;
}

/* the team size of the program while base_par_blas_serial holds the ICV at 1 (0: none) */
static _Thread_local int max_override;

int base_par_blas_serial_begin(void) {
    int prev = max_override;
    if (omp_in_parallel()) return prev;
    if (!prev) max_override = omp_get_max_threads();
    omp_set_num_threads(1);
    return prev;
}

void base_par_blas_serial_end(int prev) {
    if (omp_in_parallel()) return;
    if (!prev && max_override) omp_set_num_threads(max_override);
    max_override = prev;
}

int base_par_serial_regions_begin(void) {
    if (omp_in_parallel() || omp_get_max_threads() != 1) return -1;
    int levels = omp_get_max_active_levels();
    omp_set_max_active_levels(0);
    return levels;
}

void base_par_serial_regions_end(int saved) {
    if (saved >= 0) omp_set_max_active_levels(saved);
}

int base_par_threads(int64_t n, int64_t cost) {
    if (n <= 1 || omp_in_parallel()) return 1;
    if (cost < 1) cost = 1;
    int64_t work = n > INT64_MAX / cost ? INT64_MAX : n * cost;
    int64_t t = work / BASE_PAR_GRAIN;
    if (t <= 1) return 1;
    int max = max_override ? max_override : omp_get_max_threads();
    if (t > max) t = max;
    if (t > n) t = n;
    if (t > 1) { /* only a region that would use threads pays for the look at the load */
        int free = base_par_free_cpus();
        if (t > free) t = free;
    }
    return (int)t;
}

static bool bounded; /* set by par_preinit when it narrowed the mask; read by par_restore */
static cpu_set_t saved_mask;

bool base_par_bounded_wait(void) { return bounded; }

/* A variable of envp: in .preinit_array getenv cannot be used yet (glibc sets environ for it
 * only in libc's own initializer, which runs after), but the kernel's envp is passed in. */
static const char *env_of(char **envp, const char *name) {
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* The user's settings of how threads wait or where they run: any of them, and libgomp is left
 * exactly as the user configured it. */
static bool user_chose(char **envp) {
    static const char *const vars[] = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_PLACES", "OMP_PROC_BIND",
                                       "GOMP_CPU_AFFINITY", "OMP_DYNAMIC"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (env_of(envp, vars[i])) return true;
    const char *d = env_of(envp, "ANIMA_OMP_DEFAULTS");
    return d && !strcmp(d, "0");
}

/* .preinit_array: before libgomp's and OpenBLAS's initializers. (Unused in libanima.so.) */
__attribute__((unused)) static void par_preinit(int argc, char **argv, char **envp) {
    (void)argc, (void)argv;
    if (user_chose(envp)) return;
    if (sched_getaffinity(0, sizeof saved_mask, &saved_mask) || CPU_COUNT(&saved_mask) < 2) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &saved_mask)) {
            CPU_SET(c, &one);
            break;
        }
    bounded = sched_setaffinity(0, sizeof one, &one) == 0;
}

/* OpenBLAS (its OpenMP build) sizes itself from the mask at load too; weak, so that base/ does
 * not require it of a program that links libanima without BLAS calls pulled in. */
extern void openblas_set_num_threads(int) __attribute__((weak));

/* A constructor of the program: runs after every shared library's initializer. */
__attribute__((constructor)) static void par_restore(void) {
    if (!bounded) return;
    if (sched_setaffinity(0, sizeof saved_mask, &saved_mask)) {
        bounded = false; /* one CPU it is: still correct, only slower; nothing to restore */
        return;
    }
    int n = CPU_COUNT(&saved_mask);
    /* what libgomp and OpenBLAS would have chosen with the whole mask: the user's counts, capped
     * by the CPUs as they cap them, else every CPU. OpenBLAS first: in its OpenMP build it also
     * calls omp_set_num_threads. */
    const char *o = getenv("OMP_NUM_THREADS"), *b = getenv("OPENBLAS_NUM_THREADS");
    int nomp = o && atoi(o) > 0 ? atoi(o) : n, nblas = b && atoi(b) > 0 ? atoi(b) : nomp;
    if (openblas_set_num_threads) openblas_set_num_threads(nblas < n ? nblas : n);
    omp_set_num_threads(nomp); /* libgomp's own count was 1 (one CPU at its load) or the user's */
}

/* Only an executable may have a .preinit_array: the objects of libanima.a, linked into one, do;
 * the position-independent objects of libanima.so (-fPIC without -fPIE) do not. */
#if !defined(__PIC__) || defined(__PIE__)
__attribute__((section(".preinit_array"), used)) static void (*const par_preinit_p)(int, char **,
                                                                                      char **) = par_preinit;
#endif
