/* base/par.h — how many threads a parallel loop gets, and how idle OpenMP threads wait.
 *
 * Two things make threads a loss on a busy machine (issue 17, item 4: with one other busy
 * process on a 2-core machine, default runs were 2-20x slower than OMP_NUM_THREADS=1):
 *
 *  1. Small parallel regions. Starting a team and joining it costs ~5 µs when the helper
 *     threads spin and ~15-50 µs when they sleep (measured on the 2-core VM); a region whose
 *     work is below that is slower on two threads than on one, and under load the helper may
 *     not run at all until the other process's time slice ends (milliseconds). So every loop
 *     asks base_par_threads for its team size, from its work: one thread below BASE_PAR_GRAIN
 *     units of work (PyTorch's grain, 32768 elements of an elementwise op), then one more
 *     thread per grain, up to omp_get_max_threads() and to the CPUs other processes leave free
 *     (base_par_free_cpus). Use it as
 *         int nt = base_par_threads(n, cost);
 *         #pragma omp parallel for num_threads(nt) if (nt > 1)
 *     where cost is the work of one iteration in elementwise-op units (1 for a float add; a
 *     3x3 SVD with its Hessian is hundreds).
 *
 *  2. Spin-waiting. libgomp's helpers spin ~3 ms after each region before sleeping (its default
 *     when OMP_WAIT_POLICY is unset). On a core shared with another process the spinning helper
 *     competes with it for the core, and is often descheduled exactly when the next region needs
 *     it. libgomp reads its settings once, when it is loaded — before any code of the program
 *     runs, so setting OMP_WAIT_POLICY with setenv from the program is too late (and glibc resets
 *     the environment after .preinit_array functions run, so not even those can set it). What
 *     libgomp does read is the CPU count of the process's affinity mask at load: when a team has
 *     more threads than that, helpers spin only 100 iterations (~1 µs) and then sleep. So in a
 *     program linking libanima.a, a .preinit_array function (it runs before every shared
 *     library's initializer) narrows the main thread's mask to one CPU while libgomp and
 *     OpenBLAS load, and a constructor of the program (after them) restores it and sets the
 *     thread count back to the CPU count (omp_set_num_threads, openblas_set_num_threads):
 *     bounded waiting by default, with every thread. This is skipped — the user's choice
 *     stands — when OMP_WAIT_POLICY, GOMP_SPINCOUNT or ANIMA_OMP_DEFAULTS=0 is in the
 *     environment; OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are honoured either way. The
 *     shared libanima.so cannot run before libgomp (it depends on it): a program using it gets
 *     libgomp's own defaults unless it exports OMP_WAIT_POLICY=passive (docs/api.md). */
#ifndef ANIMA_BASE_PAR_H
#define ANIMA_BASE_PAR_H

#include <stdbool.h>
#include <stdint.h>

#define BASE_PAR_GRAIN 32768 /* units of work (elementwise ops) per thread, at least */

/* Threads for a loop of n iterations of `cost` units each: 1 below 2 grains of work (a second
 * thread must have a whole grain to be worth waking), else work / grain capped by
 * omp_get_max_threads() and by n. 1 inside a parallel region (no nested teams). */
int base_par_threads(int64_t n, int64_t cost);

/* CPUs of the host not taken by other runnable tasks right now (at least 1): /proc/loadavg's
 * count of runnable tasks less this thread, against get_nprocs(), read at most every 10 ms (a
 * region on a thread whose core another process holds waits for that process's time slice: with
 * one busy process on a 2-core machine, a 2-thread softmax took 2.2x its 1-thread time). Large
 * (no cap) when the user chose spinning helpers (OMP_WAIT_POLICY=active, GOMP_SPINCOUNT: they
 * are runnable between regions and would count) or ANIMA_OMP_DEFAULTS=0. base_par_threads caps
 * its count by it. */
int base_par_free_cpus(void);

/* Between begin and end, BLAS calls run single-threaded while base_par_threads sizes teams as
 * before: OpenBLAS's OpenMP build threads every call above its small threshold (64³ for a GEMM)
 * over omp_get_max_threads(), and each such call wakes the team — with bounded waiting ~20-50 µs,
 * more than a simulator's many mid-sized products take (drop.json: 25 ms a step with 2 threads
 * vs 4.3 with one). begin sets the ICV to 1 and returns what end needs; nestable; a no-op inside
 * a parallel region. The library's own GEMMs (tensor/cpu) choose their threads per call. */
int base_par_blas_serial_begin(void);
void base_par_blas_serial_end(int prev);

/* Between begin and end, when the calling team is one thread (OMP_NUM_THREADS=1, or inside a
 * blas_serial section), every OpenMP region opened by a library called in between is inactive.
 * For libraries whose regions carry a fixed num_threads clause that ignores the caller's count:
 * CHOLMOD's supernodal factorization asks for CHOLMOD_OMP_NUM_THREADS (4) per supernode, so a
 * one-thread run still woke three helpers thousands of times per solve (the skeleton's
 * contraction: 0.61 -> 0.41 CPU s on the bunny without them). It sets max-active-levels to 0
 * and returns what end restores (-1: nothing changed, with more threads or inside a region:
 * then OpenBLAS, called inside, sizes its own team and must keep doing so: max-active-levels 0
 * for a whole run with the default thread count hung the skeleton's solves, not traced further). */
int base_par_serial_regions_begin(void);
void base_par_serial_regions_end(int saved);

/* Whether this process runs with the bounded waiting described above (false: the user set
 * OMP_WAIT_POLICY/GOMP_SPINCOUNT/ANIMA_OMP_DEFAULTS=0, or a shared libanima, or one CPU). */
bool base_par_bounded_wait(void);

#endif
