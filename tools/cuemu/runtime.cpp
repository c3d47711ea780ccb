/* tools/cuemu/runtime.cpp — cuemu's CUDA runtime on the CPU (docs/cuemu.md): device memory
 * (a reserved region of the address space, poisoned until written and inaccessible to host code
 * outside kernels and the library shims), the API of include/cuda_runtime.h, and kernel
 * execution: blocks run one after another, each CUDA thread of a block is a fiber on the
 * launching OS thread, and __syncthreads / warp collectives are the points where a fiber yields.
 * At each such point the emulator checks that every participant arrives at the same call site
 * with the same mask; misuse ends the process through cuemu_fail with file:line.
 *
 * Environment: CUEMU_ORDER=forward|reverse|random (the order threads and blocks are run in; a
 * different order exposes missing barriers), CUEMU_SEED (random order; printed when chosen
 * here), CUEMU_PROTECT=0 (leave device memory readable by host code), CUEMU_STACK (bytes per
 * CUDA thread stack). */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include "include/cuda_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define CUEMU_ASAN 1
#endif
#if defined(CUEMU_TSAN)
#include <sanitizer/tsan_interface.h>
#endif
#if !defined(__x86_64__) && !defined(CUEMU_UCONTEXT)
#define CUEMU_UCONTEXT 1
#endif
#ifdef CUEMU_UCONTEXT
#include <ucontext.h>
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

/* ---- failures ------------------------------------------------------------------------------ */

extern "C" void cuemu_fail(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "cuemu: %s\n", msg);
    fflush(stderr);
    abort();
}

namespace {

constexpr size_t KiB = 1024;
constexpr size_t SHARED_DEFAULT_MAX = 48 * KiB;  /* without the opt-in attribute */
constexpr size_t SHARED_OPTIN_MAX = 227 * KiB;   /* sm_90's per-block maximum */
constexpr size_t DYN_REGION = 228 * KiB;         /* page-aligned room for it, a guard page after */
constexpr size_t ALLOC_ALIGN = 256;              /* cudaMalloc's alignment */
constexpr size_t REDZONE = 256;                  /* after every allocation (poisoned under ASan) */
constexpr size_t HEAP_RESERVE = (size_t)64 << 30; /* address space only */

std::recursive_mutex mu; /* the device: one host thread at a time */
cudaError_t last_error = cudaSuccess;

/* ---- device memory -------------------------------------------------------------------------- */

char *heap = nullptr;
size_t heap_used = 0;     /* bytes of the reservation handed out so far */
std::map<size_t, size_t> live_allocs; /* offset -> size (requested) */
std::map<size_t, size_t> free_ranges; /* offset -> length, coalesced */
int access_depth = 0;
pid_t access_owner = 0;
bool protect = true;
size_t page_size = 4096;

/* The device heap is PROT_NONE whenever host code runs. Inside kernels, cudaMemcpy/cudaMemset
 * and the library shims (access_depth > 0, on the owning thread) the first touch of an
 * allocation faults, and the fault handler opens that allocation's pages; they are closed again
 * when the outermost access ends. Opening everything per launch would cost two mprotect calls
 * over the whole heap per kernel; this costs one fault per allocation a kernel touches. */
struct Range {
    char *p;
    size_t n;
};
constexpr int MAX_OPEN = 4096;
Range opened[MAX_OPEN];
int nopened = 0;

size_t slot_len(size_t n) { return ((n ? n : 1) + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN + REDZONE; }

/* from the fault handler: opens the live allocation (with its red zone) holding a */
bool open_for(const char *a) {
    size_t off = (size_t)(a - heap);
    auto it = live_allocs.upper_bound(off);
    if (it == live_allocs.begin()) return false;
    --it;
    if (off >= it->first + slot_len(it->second)) return false;
    uintptr_t lo = (uintptr_t)(heap + it->first) & ~(uintptr_t)(page_size - 1);
    uintptr_t hi = ((uintptr_t)(heap + it->first + slot_len(it->second)) + page_size - 1) & ~(uintptr_t)(page_size - 1);
    if (nopened == MAX_OPEN) return false;
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0) return false;
    opened[nopened++] = Range{(char *)lo, hi - lo};
    return true;
}

void close_all(void) {
    for (int i = 0; i < nopened; i++)
        if (mprotect(opened[i].p, opened[i].n, PROT_NONE) != 0)
            cuemu_fail("mprotect of the device heap failed: %s", strerror(errno));
    nopened = 0;
}

void segv_handler(int sig, siginfo_t *si, void *uc);

void heap_init(void) {
    if (heap) return;
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    const char *p = getenv("CUEMU_PROTECT");
    protect = !(p && !strcmp(p, "0"));
    void *m = mmap(nullptr, HEAP_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) cuemu_fail("cannot reserve the device heap: %s", strerror(errno));
    heap = (char *)m;
    if (!protect && mprotect(heap, HEAP_RESERVE, PROT_READ | PROT_WRITE) != 0)
        cuemu_fail("cannot open the device heap: %s", strerror(errno));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    /* the handler reports a CUDA thread's stack overflow too: it needs a stack of its own */
    static char altstack[64 * 1024];
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    sigaltstack(&ss, nullptr);
}

bool in_heap(const void *p) { return heap && (const char *)p >= heap && (const char *)p < heap + HEAP_RESERVE; }

/* the live allocation containing [p, p + n] (n = 0: p may be one past its end), or end() */
std::map<size_t, size_t>::iterator find_alloc(const void *p, size_t n) {
    if (!in_heap(p)) return live_allocs.end();
    size_t off = (size_t)((const char *)p - heap);
    auto it = live_allocs.upper_bound(off);
    if (it == live_allocs.begin()) return live_allocs.end();
    --it;
    size_t end = it->first + it->second;
    if (off + n > end || (n > 0 && off >= end)) return live_allocs.end();
    return it;
}

void poison_range(void *p, size_t n) {
#ifdef CUEMU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
    memset(p, 0xFF, n);
}

} // namespace

extern "C" void cuemu_host_access_begin(void) {
    mu.lock();
    heap_init();
    if (access_depth++ == 0) access_owner = gettid();
}

extern "C" void cuemu_host_access_end(void) {
    if (access_depth <= 0) cuemu_fail("cuemu_host_access_end without a matching begin");
    if (--access_depth == 0) {
        close_all();
        access_owner = 0;
    }
    mu.unlock();
}

extern "C" int cuemu_is_device(const void *p, size_t n) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    return find_alloc(p, n) != live_allocs.end();
}

extern "C" void cuemu_require_device(const void *p, size_t n, const char *what) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (find_alloc(p, n) != live_allocs.end()) return;
    if (!in_heap(p)) cuemu_fail("%s: %p is host memory, not device memory", what, p);
    cuemu_fail("%s: [%p, +%zu) is not inside one live device allocation (freed, or past its end)", what, p, n);
}

extern "C" void cuemu_require_host(const void *p, size_t n, const char *what) {
    if (!heap || n == 0) return;
    const char *a = (const char *)p, *b = a + n;
    if (b > heap && a < heap + HEAP_RESERVE) cuemu_fail("%s: %p is device memory, not host memory", what, p);
}

extern "C" void cuemu_poison(void *p, size_t n) {
    cuemu_require_device(p, n, "cuemu_poison");
    cuemu_host_access_begin();
    poison_range(p, n);
    cuemu_host_access_end();
}

/* anima's CUDA pool re-poisons what it recycles through this hook (tensor/backend.h); weak, so
 * the emulator's own tests link without the library */
extern "C" void tensor_cuda_set_recycle_hook(void (*fn)(void *p, size_t n)) __attribute__((weak));
__attribute__((constructor)) static void install_recycle_hook(void) {
    if (tensor_cuda_set_recycle_hook) tensor_cuda_set_recycle_hook(cuemu_poison);
}

extern "C" cudaError_t cudaMalloc(void **out, size_t n) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    heap_init();
    if (!out) return last_error = cudaErrorInvalidValue;
    size_t need = ((n ? n : 1) + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN + REDZONE;
    size_t off = (size_t)-1;
    for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it)
        if (it->second >= need) { /* first fit */
            off = it->first;
            size_t rest = it->second - need;
            free_ranges.erase(it);
            if (rest) free_ranges[off + need] = rest;
            break;
        }
    if (off == (size_t)-1) {
        if (heap_used + need > HEAP_RESERVE) {
            *out = nullptr;
            return last_error = cudaErrorMemoryAllocation;
        }
        off = heap_used;
        heap_used += need;
    }
    live_allocs[off] = n;
    cuemu_host_access_begin();
    poison_range(heap + off, n);
#ifdef CUEMU_ASAN
    ASAN_POISON_MEMORY_REGION(heap + off + n, need - n); /* the rounding and the red zone */
#endif
    cuemu_host_access_end();
    *out = heap + off;
    return cudaSuccess;
}

extern "C" cudaError_t cudaFree(void *p) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (!p) return cudaSuccess;
    if (!in_heap(p)) cuemu_fail("cudaFree(%p): a host pointer, not device memory", p);
    size_t off = (size_t)((char *)p - heap);
    auto it = live_allocs.find(off);
    if (it == live_allocs.end())
        cuemu_fail("cudaFree(%p): not the start of a live device allocation (freed twice, or an interior pointer)", p);
    size_t len = slot_len(it->second);
    cuemu_host_access_begin();
    poison_range(heap + off, len); /* a kernel still using it reads poison */
#ifdef CUEMU_ASAN
    ASAN_POISON_MEMORY_REGION(heap + off, len);
#endif
    cuemu_host_access_end();
    live_allocs.erase(it);
    /* coalesce with the neighbours */
    auto nx = free_ranges.lower_bound(off);
    if (nx != free_ranges.end() && off + len == nx->first) {
        len += nx->second;
        free_ranges.erase(nx);
    }
    auto pv = free_ranges.lower_bound(off);
    if (pv != free_ranges.begin()) {
        --pv;
        if (pv->first + pv->second == off) {
            pv->second += len;
            return cudaSuccess;
        }
    }
    free_ranges[off] = len;
    return cudaSuccess;
}

extern "C" cudaError_t cudaMallocHost(void **p, size_t n) {
    *p = malloc(n ? n : 1);
    return *p ? cudaSuccess : (last_error = cudaErrorMemoryAllocation);
}
extern "C" cudaError_t cudaFreeHost(void *p) {
    cuemu_require_host(p, 1, "cudaFreeHost");
    free(p);
    return cudaSuccess;
}

static bool in_kernel = false;

static void check_host_api(const char *what) {
    if (in_kernel) cuemu_fail("%s called from device code", what);
}

extern "C" cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    check_host_api("cudaMemcpy");
    if (n == 0) return cudaSuccess;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        cuemu_require_device(dst, n, "cudaMemcpy(HostToDevice): destination");
        cuemu_require_host(src, n, "cudaMemcpy(HostToDevice): source");
        break;
    case cudaMemcpyDeviceToHost:
        cuemu_require_host(dst, n, "cudaMemcpy(DeviceToHost): destination");
        cuemu_require_device(src, n, "cudaMemcpy(DeviceToHost): source");
        break;
    case cudaMemcpyDeviceToDevice:
        cuemu_require_device(dst, n, "cudaMemcpy(DeviceToDevice): destination");
        cuemu_require_device(src, n, "cudaMemcpy(DeviceToDevice): source");
        break;
    case cudaMemcpyHostToHost:
        cuemu_require_host(dst, n, "cudaMemcpy(HostToHost): destination");
        cuemu_require_host(src, n, "cudaMemcpy(HostToHost): source");
        break;
    case cudaMemcpyDefault:
        if (in_heap(dst)) cuemu_require_device(dst, n, "cudaMemcpy(Default): destination");
        if (in_heap(src)) cuemu_require_device(src, n, "cudaMemcpy(Default): source");
        break;
    default: return last_error = cudaErrorInvalidMemcpyDirection;
    }
    cuemu_host_access_begin();
    memmove(dst, src, n);
    cuemu_host_access_end();
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy(dst, src, n, kind);
}

extern "C" cudaError_t cudaMemset(void *p, int v, size_t n) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    check_host_api("cudaMemset");
    if (n == 0) return cudaSuccess;
    cuemu_require_device(p, n, "cudaMemset");
    cuemu_host_access_begin();
    memset(p, v, n);
    cuemu_host_access_end();
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) { return cudaMemset(p, v, n); }

extern "C" cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (free_bytes) *free_bytes = HEAP_RESERVE - heap_used;
    if (total_bytes) *total_bytes = HEAP_RESERVE;
    return cudaSuccess;
}

/* ---- device, errors, streams and events (everything is synchronous) ------------------------ */

extern "C" cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
extern "C" cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : (last_error = cudaErrorInvalidDevice); }
extern "C" cudaError_t cudaGetDevice(int *d) {
    *d = 0;
    return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
extern "C" cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
extern "C" cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
extern "C" cudaError_t cudaPeekAtLastError(void) { return last_error; }

extern "C" const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    }
    return "cudaErrorUnknown";
}

extern "C" const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    }
    return "unknown error";
}

struct CUstream_st {
    unsigned flags;
};
struct CUevent_st {
    unsigned flags;
    struct timespec t;
};

extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new CUstream_st{flags};
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }
static bool special_stream(cudaStream_t s) { return !s || s == cudaStreamLegacy || s == cudaStreamPerThread; }
extern "C" cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (special_stream(s)) return last_error = cudaErrorInvalidResourceHandle;
    delete s;
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
extern "C" cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned) {
    return e ? cudaSuccess : (last_error = cudaErrorInvalidResourceHandle);
}
extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    *e = new CUevent_st{flags, {0, 0}};
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
extern "C" cudaError_t cudaEventDestroy(cudaEvent_t e) {
    if (!e) return last_error = cudaErrorInvalidResourceHandle;
    delete e;
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    if (!e) return last_error = cudaErrorInvalidResourceHandle;
    clock_gettime(CLOCK_MONOTONIC, &e->t);
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    return e ? cudaSuccess : (last_error = cudaErrorInvalidResourceHandle);
}
extern "C" cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }
extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!a || !b) return last_error = cudaErrorInvalidResourceHandle;
    *ms = (float)((b->t.tv_sec - a->t.tv_sec) * 1e3 + (b->t.tv_nsec - a->t.tv_nsec) * 1e-6);
    return cudaSuccess;
}

static std::unordered_map<const void *, int> max_dyn_shared; /* kernel -> opted-in bytes */

extern "C" cudaError_t cuemu_func_set_attribute(const void *func, cudaFuncAttribute attr, int value) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || (size_t)value > SHARED_OPTIN_MAX) return last_error = cudaErrorInvalidValue;
        max_dyn_shared[func] = value;
    }
    return cudaSuccess;
}

/* ---- fibers ---------------------------------------------------------------------------------- */

namespace {

enum State { READY, AT_BARRIER, AT_WARP, EXITED };

struct Fiber {
#ifdef CUEMU_UCONTEXT
    ucontext_t uc;
#else
    void *sp;
#endif
    char *stack; /* lowest usable address (a guard page lies below) */
    uint3 tid;
    int lin, lane, warp;
    State state;
    const char *file; /* where it waits */
    int line;
    int pred, result; /* barrier */
    cuemu::Collective kind;
    unsigned mask;
    uint64_t val, res;
    int arg, width;
    void *asan_fake;
    void *tsan_fiber;
};

/* per warp: which lanes wait at a collective (and at which: every waiting lane agrees, or the
 * arrival that disagreed has failed), which wait at the block barrier, which have returned; the
 * common case, a full-warp collective, is checked in O(1) from these */
struct Warp {
    unsigned waiting, at_barrier, exited;
    cuemu::Collective kind;
    unsigned mask;
    const char *file;
    int line;
};

size_t stack_size = 0;
Warp warps[32];
std::vector<Fiber> fibers; /* one per thread of the block, stacks kept across blocks */
Fiber *cur = nullptr;
int nthreads = 0, nexited = 0, nbarrier = 0, bar_count_sum = 0;
const char *bar_file = nullptr;
int bar_line = 0;
const cuemu::LaunchSite *site = nullptr;
void (*body_fn)(void *) = nullptr;
void *body_ctx = nullptr;
#ifdef CUEMU_UCONTEXT
ucontext_t sched_uc;
#else
void *sched_sp = nullptr;
#endif
#ifdef CUEMU_ASAN
void *sched_fake = nullptr;
const void *host_stack_lo = nullptr;
size_t host_stack_size = 0;
#endif
#ifdef CUEMU_TSAN
void *tsan_host = nullptr;
/* barriers and collectives: release on arrival, acquire on leaving. Two objects per barrier
 * (and per warp), alternating by instance: a thread still to leave instance k must not acquire
 * what threads that already left it released on their way into instance k + 1 */
char tsan_launch, tsan_end, tsan_poison, tsan_bar[2], tsan_warp[32][2];
unsigned bar_gen, warp_gen[32];
#endif

/* shared memory: the static arena (SharedSlot) and the dynamic region, which ends at a guard
 * page so that an access past the launch's dynamic size faults */
char *static_arena = nullptr;
size_t static_used = 0, static_max = 0;
char *dyn_region = nullptr; /* DYN_REGION bytes + one guard page */
char *dyn_ptr = nullptr;
unsigned long block_gen = 0;

enum Order { FORWARD, REVERSE, RANDOM };
Order order = FORWARD;
std::mt19937_64 rng;
bool order_init = false;

void init_order(void) {
    if (order_init) return;
    order_init = true;
    const char *o = getenv("CUEMU_ORDER");
    if (!o || !*o || !strcmp(o, "forward")) order = FORWARD;
    else if (!strcmp(o, "reverse")) order = REVERSE;
    else if (!strcmp(o, "random")) order = RANDOM;
    else cuemu_fail("CUEMU_ORDER=%s: expected forward, reverse or random", o);
    if (order == RANDOM) {
        const char *s = getenv("CUEMU_SEED");
        unsigned long long seed;
        if (s && *s) seed = strtoull(s, nullptr, 0);
        else {
            seed = (unsigned long long)time(nullptr) ^ ((unsigned long long)getpid() << 20);
            fprintf(stderr, "cuemu: CUEMU_ORDER=random CUEMU_SEED=%llu\n", seed);
        }
        rng.seed(seed);
    }
    const char *st = getenv("CUEMU_STACK");
#ifdef CUEMU_ASAN
    stack_size = 1024 * KiB;
#else
    stack_size = 256 * KiB;
#endif
    if (st && *st) stack_size = (strtoull(st, nullptr, 0) + page_size - 1) / page_size * page_size;
}

void *map_or_die(size_t n, const char *what) {
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) cuemu_fail("cannot map %s: %s", what, strerror(errno));
    return p;
}

void ensure_fibers(int n) {
    while ((int)fibers.size() < n) {
        fibers.emplace_back();
        Fiber &f = fibers.back();
        memset((void *)&f, 0, sizeof f);
        char *m = (char *)map_or_die(stack_size + page_size, "a CUDA thread's stack");
        mprotect(m, page_size, PROT_NONE); /* guard: a stack overflow faults */
        f.stack = m + page_size;
#ifdef CUEMU_TSAN
        f.tsan_fiber = __tsan_create_fiber(0);
#endif
    }
    if (!static_arena) {
        static_arena = (char *)map_or_die(SHARED_OPTIN_MAX, "the shared-memory arena");
        dyn_region = (char *)map_or_die(DYN_REGION + page_size, "dynamic shared memory");
        if (mprotect(dyn_region + DYN_REGION, page_size, PROT_NONE) != 0)
            cuemu_fail("cannot protect the dynamic shared memory's guard page: %s", strerror(errno));
    }
}

void fiber_main(Fiber *f);

} // namespace

#ifndef CUEMU_UCONTEXT
/* cuemu_switch(save, to): saves the callee-saved registers and the stack pointer into *save, and
 * resumes the context whose stack pointer is `to`. A new context starts in cuemu_fiber_start
 * with the fiber in r12 and its entry in r13. The SSE and x87 control words are not switched
 * (their restore serializes the pipeline): CUDA threads share the launching thread's rounding
 * mode, and no kernel changes it. */
extern "C" void cuemu_switch(void **save, void *to);
extern "C" void cuemu_fiber_start(void);
asm(R"(
    .text
    .globl cuemu_switch
    .type cuemu_switch, @function
cuemu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuemu_switch, .-cuemu_switch
    .globl cuemu_fiber_start
    .type cuemu_fiber_start, @function
cuemu_fiber_start:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size cuemu_fiber_start, .-cuemu_fiber_start
)");
#else
static void fiber_trampoline(unsigned lo, unsigned hi) {
    fiber_main((Fiber *)(((uintptr_t)hi << 32) | lo));
}
#endif

namespace {

void fiber_init(Fiber *f) {
#ifdef CUEMU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(f->stack, stack_size);
#endif
#ifndef CUEMU_UCONTEXT
    uintptr_t top = ((uintptr_t)(f->stack + stack_size)) & ~(uintptr_t)15;
    /* popped by cuemu_switch: r15 r14 r13 r12 rbx rbp, then `ret` into cuemu_fiber_start with
     * rsp = top - 16, so that its call leaves fiber_main the ABI's alignment */
    uint64_t *sp = (uint64_t *)(top - 72);
    sp[0] = 0;                                /* r15 */
    sp[1] = 0;                                /* r14 */
    sp[2] = (uint64_t)(uintptr_t)&fiber_main; /* r13 */
    sp[3] = (uint64_t)(uintptr_t)f;           /* r12 */
    sp[4] = 0;                                /* rbx */
    sp[5] = 0;                                /* rbp */
    sp[6] = (uint64_t)(uintptr_t)&cuemu_fiber_start;
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = stack_size;
    f->uc.uc_link = nullptr;
    uintptr_t v = (uintptr_t)f;
    makecontext(&f->uc, (void (*)())fiber_trampoline, 2, (unsigned)(v & 0xffffffffu), (unsigned)(v >> 32));
#endif
}

/* scheduler -> fiber f */
void run_fiber(Fiber *f) {
    cur = f;
    threadIdx = f->tid;
#ifdef CUEMU_ASAN
    __sanitizer_start_switch_fiber(&sched_fake, f->stack, stack_size);
#endif
#ifdef CUEMU_TSAN
    __tsan_switch_to_fiber(f->tsan_fiber, __tsan_switch_to_fiber_no_sync);
#endif
#ifdef CUEMU_UCONTEXT
    swapcontext(&sched_uc, &f->uc);
#else
    cuemu_switch(&sched_sp, f->sp);
#endif
#ifdef CUEMU_ASAN
    __sanitizer_finish_switch_fiber(sched_fake, nullptr, nullptr);
#endif
    cur = nullptr;
}

/* fiber -> scheduler; returns when the scheduler runs this fiber again */
void yield_to_scheduler(bool exiting) {
    Fiber *f = cur;
#ifdef CUEMU_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f->asan_fake, host_stack_lo, host_stack_size);
#endif
#ifdef CUEMU_TSAN
    __tsan_switch_to_fiber(tsan_host, __tsan_switch_to_fiber_no_sync);
#endif
#ifdef CUEMU_UCONTEXT
    swapcontext(&f->uc, &sched_uc);
#else
    cuemu_switch(&f->sp, sched_sp);
#endif
    (void)exiting;
#ifdef CUEMU_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, nullptr, nullptr);
#endif
}

const char *coll_name(cuemu::Collective k) {
    switch (k) {
    case cuemu::SHFL: return "__shfl_sync";
    case cuemu::SHFL_UP: return "__shfl_up_sync";
    case cuemu::SHFL_DOWN: return "__shfl_down_sync";
    case cuemu::SHFL_XOR: return "__shfl_xor_sync";
    case cuemu::ANY: return "__any_sync";
    case cuemu::ALL: return "__all_sync";
    case cuemu::BALLOT: return "__ballot_sync";
    }
    return "?";
}

bool same_site(const char *f1, int l1, const char *f2, int l2) {
    return l1 == l2 && (f1 == f2 || !strcmp(f1, f2));
}

/* "thread (x,y,z) of block (x,y,z) of the kernel launched at file:line" */
const char *who(const Fiber *f) {
    static char buf[4][256];
    static int k = 0;
    char *b = buf[k++ & 3];
    snprintf(b, 256, "thread (%u,%u,%u) [warp %d lane %d] of block (%u,%u,%u) of the kernel launched at %s:%d",
             f->tid.x, f->tid.y, f->tid.z, f->warp, f->lane, blockIdx.x, blockIdx.y, blockIdx.z, site->file,
             site->line);
    return b;
}

Fiber *lane_fiber(int warp, int lane) {
    int i = warp * 32 + lane;
    return i < nthreads ? &fibers[i] : nullptr;
}

void fiber_exit(Fiber *f) {
    if (nbarrier > 0)
        for (int i = 0; i < nthreads; i++)
            if (fibers[i].state == AT_BARRIER)
                cuemu_fail("%s returned while %s waits at __syncthreads() at %s:%d: every thread of a block must "
                           "reach each barrier",
                           who(f), who(&fibers[i]), fibers[i].file, fibers[i].line);
    Warp &w = warps[f->warp];
    for (int l = 0; w.waiting && l < 32; l++) {
        Fiber *g = lane_fiber(f->warp, l);
        if (g && g->state == AT_WARP && (g->mask >> f->lane & 1))
            cuemu_fail("%s returned while lane %d waits for it at %s at %s:%d (mask 0x%08x)", who(f), l,
                       coll_name(g->kind), g->file, g->line, g->mask);
    }
    f->state = EXITED;
    w.exited |= 1u << f->lane;
    nexited++;
}

void fiber_main(Fiber *f) {
#ifdef CUEMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &host_stack_lo, &host_stack_size);
#endif
#ifdef CUEMU_TSAN
    __tsan_acquire(&tsan_launch);
#endif
    body_fn(body_ctx);
    fiber_exit(f);
#ifdef CUEMU_TSAN
    __tsan_release(&tsan_end);
#endif
    yield_to_scheduler(true);
    cuemu_fail("an exited CUDA thread was resumed");
}

void segv_report(const char *msg, void *addr) {
    char b[512];
    int n = snprintf(b, sizeof b, "cuemu: %s (address %p)\n", msg, addr);
    if (n > 0) {
        ssize_t w = write(2, b, (size_t)n);
        (void)w;
    }
    void *frames[64];
    int k = backtrace(frames, 64);
    backtrace_symbols_fd(frames, k, 2);
    signal(SIGABRT, SIG_DFL);
    abort();
}

void segv_handler(int sig, siginfo_t *si, void *) {
    char *a = (char *)si->si_addr;
    if (in_heap(a)) {
        if (access_depth > 0 && access_owner == gettid() && open_for(a)) return; /* retried, now open */
        if (access_depth == 0 || access_owner != gettid())
            segv_report("host code dereferenced device memory: only kernels, cudaMemcpy/cudaMemset and the "
                        "library calls may touch it",
                        a);
        segv_report("device code accessed device memory outside every allocation", a);
    }
    if (dyn_region && a >= dyn_region + DYN_REGION && a < dyn_region + DYN_REGION + page_size) {
        char b[256];
        snprintf(b, sizeof b, "a kernel launched at %s:%d accessed past the end of its %zu bytes of dynamic shared memory",
                 site ? site->file : "?", site ? site->line : 0, site ? site->shm : (size_t)0);
        segv_report(b, a);
    }
    for (const Fiber &f : fibers)
        if (a >= f.stack - page_size && a < f.stack) segv_report("a CUDA thread overflowed its stack (CUEMU_STACK)", a);
    /* not ours: the default action */
    signal(sig, SIG_DFL);
}

} // namespace

/* ---- the scheduling points ----------------------------------------------------------------- */

int cuemu::syncthreads(int pred, int count, const char *file, int line) {
    Fiber *f = cur;
    if (!f) cuemu_fail("__syncthreads() at %s:%d called outside a kernel", file, line);
    if (nexited > 0)
        for (int i = 0; i < nthreads; i++)
            if (fibers[i].state == EXITED)
                cuemu_fail("%s reached __syncthreads() at %s:%d after %s returned: the barrier can never complete",
                           who(f), file, line, who(&fibers[i]));
    if (nbarrier > 0 && !same_site(bar_file, bar_line, file, line))
        for (int i = 0; i < nthreads; i++)
            if (fibers[i].state == AT_BARRIER)
                cuemu_fail("divergent barrier: %s is at __syncthreads() at %s:%d, %s waits at __syncthreads() at %s:%d",
                           who(f), file, line, who(&fibers[i]), bar_file, bar_line);
    Warp &w = warps[f->warp];
    for (int l = 0; w.waiting && l < 32; l++) {
        Fiber *g = lane_fiber(f->warp, l);
        if (g && g->state == AT_WARP && (g->mask >> f->lane & 1))
            cuemu_fail("divergence: %s is at __syncthreads() at %s:%d while lane %d waits for it at %s at %s:%d",
                       who(f), file, line, l, coll_name(g->kind), g->file, g->line);
    }
#ifdef CUEMU_TSAN
    unsigned gen = bar_gen;
    __tsan_release(&tsan_bar[gen & 1]);
#endif
    f->pred = pred;
    bar_count_sum += pred;
    if (nbarrier == 0) bar_file = file, bar_line = line;
    if (++nbarrier == nthreads) { /* the last one: release everyone */
        int total = bar_count_sum;
        for (int i = 0; i < nthreads; i++) {
            fibers[i].result = total;
            if (fibers[i].state == AT_BARRIER) fibers[i].state = READY;
        }
        for (int k = 0; k < (nthreads + 31) / 32; k++) warps[k].at_barrier = 0;
        nbarrier = 0;
        bar_count_sum = 0;
        f->result = total;
#ifdef CUEMU_TSAN
        bar_gen++;
#endif
    } else {
        f->state = AT_BARRIER;
        f->file = file, f->line = line;
        w.at_barrier |= 1u << f->lane;
        yield_to_scheduler(false);
    }
#ifdef CUEMU_TSAN
    __tsan_acquire(&tsan_bar[gen & 1]);
#endif
    return count ? f->result : 0;
}

uint64_t cuemu::warp_collective(Collective kind, unsigned mask, uint64_t v, int arg, int width, const char *file,
                                int line) {
    Fiber *f = cur;
    if (!f) cuemu_fail("%s at %s:%d called outside a kernel", coll_name(kind), file, line);
#define name coll_name(kind)
    if (!(mask >> f->lane & 1))
        cuemu_fail("%s calls %s at %s:%d with mask 0x%08x, which does not include its own lane", who(f), name, file,
                   line, mask);
    if (width <= 0 || width > 32 || (width & (width - 1)))
        cuemu_fail("%s calls %s at %s:%d with width %d (a power of two up to 32)", who(f), name, file, line, width);
    Warp &w = warps[f->warp];
    /* the full-warp case in O(1): nobody returned or waits at the barrier, and the lanes already
     * waiting wait at this very collective; anything else takes the lane-by-lane walk below,
     * which names the culprit */
    bool fast = mask == 0xffffffffu && (f->warp + 1) * 32 <= nthreads && !w.exited && !w.at_barrier &&
                (!w.waiting || (w.kind == kind && w.mask == mask && same_site(w.file, w.line, file, line)));
    for (int l = 0; !fast && l < 32; l++) {
        Fiber *g = lane_fiber(f->warp, l);
        bool in = mask >> l & 1;
        if (!g) {
            if (in)
                cuemu_fail("%s calls %s at %s:%d with mask 0x%08x naming lane %d, which does not exist (%d threads "
                           "per block)",
                           who(f), name, file, line, mask, l, nthreads);
            continue;
        }
        if (g == f) continue;
        if (in && g->state == EXITED)
            cuemu_fail("%s calls %s at %s:%d with mask 0x%08x, but lane %d has returned", who(f), name, file, line,
                       mask, l);
        if (in && g->state == AT_BARRIER)
            cuemu_fail("divergence: %s calls %s at %s:%d (mask 0x%08x) while lane %d waits at __syncthreads() at %s:%d",
                       who(f), name, file, line, mask, l, g->file, g->line);
        if (g->state == AT_WARP && (in || (g->mask >> f->lane & 1)) &&
            (g->kind != kind || g->mask != mask || !same_site(g->file, g->line, file, line)))
            cuemu_fail("mismatched warp collective: %s calls %s at %s:%d with mask 0x%08x, lane %d waits at %s at "
                       "%s:%d with mask 0x%08x",
                       who(f), name, file, line, mask, l, coll_name(g->kind), g->file, g->line, g->mask);
    }
#ifdef CUEMU_TSAN
    unsigned gen = warp_gen[f->warp & 31];
    __tsan_release(&tsan_warp[f->warp & 31][gen & 1]);
#endif
    f->kind = kind, f->mask = mask, f->val = v, f->arg = arg, f->width = width, f->file = file, f->line = line;
    f->state = AT_WARP;
    if (!w.waiting) w.kind = kind, w.mask = mask, w.file = file, w.line = line;
    w.waiting |= 1u << f->lane;
    bool complete = (w.waiting & mask) == mask;
    if (complete) {
        w.waiting &= ~mask;
#ifdef CUEMU_TSAN
        warp_gen[f->warp & 31]++;
#endif
        Fiber *lanes = &fibers[f->warp * 32];
        uint64_t vote = 0;
        if (kind == ANY || kind == ALL || kind == BALLOT)
            for (int l = 0; l < 32; l++)
                if (mask >> l & 1) vote |= (uint64_t)(lanes[l].val != 0) << l;
        for (int l = 0; l < 32; l++) {
            if (!(mask >> l & 1)) continue;
            Fiber *g = &lanes[l];
            int seg = l & ~(width - 1), in_seg = l & (width - 1), src = l;
            switch (kind) {
            case SHFL: src = seg + (arg & (width - 1)); break;
            case SHFL_UP: src = in_seg >= arg ? l - arg : l; break;
            case SHFL_DOWN: src = in_seg + arg < width ? l + arg : l; break;
            case SHFL_XOR: src = ((l ^ arg) & ~(width - 1)) == seg ? (l ^ arg) : l; break;
            default: break;
            }
            if (kind == ANY) g->res = vote != 0;
            else if (kind == ALL) g->res = vote == (uint64_t)mask;
            else if (kind == BALLOT) g->res = vote;
            else {
                if (src < 0 || src > 31 || !(mask >> src & 1))
                    cuemu_fail("%s at %s:%d: lane %d reads lane %d, which is outside the mask 0x%08x (undefined value)",
                               name, file, line, l, src, mask);
                g->res = lanes[src].val;
            }
            g->state = READY;
        }
    } else {
        yield_to_scheduler(false);
    }
#ifdef CUEMU_TSAN
    __tsan_acquire(&tsan_warp[f->warp & 31][gen & 1]);
#endif
    return f->res;
#undef name
}

void *cuemu::dynamic_shared(void) {
    if (!cur) cuemu_fail("extern __shared__ memory used outside a kernel");
    return dyn_ptr;
}

void *cuemu::SharedSlot::get(size_t size, size_t align) {
    if (!cur) cuemu_fail("__shared__ variable used outside a kernel");
    if (gen != block_gen) {
        if (align < 16) align = 16;
        size_t o = (static_used + align - 1) / align * align;
        if (o + size > SHARED_OPTIN_MAX)
            cuemu_fail("the kernel launched at %s:%d declares more than %zu bytes of static shared memory", site->file,
                       site->line, SHARED_OPTIN_MAX);
        off = o;
        gen = block_gen;
        static_used = o + size;
        if (static_used > static_max) static_max = static_used;
        poison_range(static_arena + o, size);
#ifdef CUEMU_TSAN
        __tsan_release(&tsan_poison); /* the poison (an intercepted memset) before every use */
#endif
    }
#ifdef CUEMU_TSAN
    __tsan_acquire(&tsan_poison);
#endif
    return static_arena + off;
}

/* ---- launches ----------------------------------------------------------------------------- */

void cuemu::check_kernel_pointer(const LaunchSite &s, int index, const void *p) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (find_alloc(p, 0) != live_allocs.end()) return;
    if (in_heap(p))
        cuemu_fail("kernel launched at %s:%d: argument %d (%p) points into freed or unallocated device memory", s.file,
                   s.line, index + 1, p);
    cuemu_fail("kernel launched at %s:%d: argument %d (%p) is a host pointer, not device memory", s.file, s.line,
               index + 1, p);
}

void cuemu::check_kernel_struct(const LaunchSite &s, int index, const void *p, size_t n) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    for (size_t k = 0; k + 8 <= n; k += 8) {
        uint64_t v;
        memcpy(&v, (const char *)p + k, 8);
        if (v < 65536 || v >= ((uint64_t)1 << 47)) continue; /* not a user-space address */
        const char *a = (const char *)(uintptr_t)v;
        if (in_heap(a)) {
            if (find_alloc(a, 0) == live_allocs.end())
                cuemu_fail("kernel launched at %s:%d: argument %d (a struct) holds %p at byte %zu, which points into "
                           "freed or unallocated device memory",
                           s.file, s.line, index + 1, (const void *)a, k);
            continue;
        }
#ifdef CUEMU_ASAN
        /* ASan's shadow memory and its gap cover most of the low address space: words there
         * (pairs of small ints, say) are not taken for pointers */
        size_t scale, offset;
        __asan_get_shadow_mapping(&scale, &offset);
        if (v >= offset && v < offset + (((uint64_t)1 << 47) >> scale)) continue;
#endif
        /* mapped host memory (mincore fails with ENOMEM on unmapped pages): a host pointer. An
         * integer or a pair of floats that happens to look like an address almost never lies in
         * a mapped page. */
        unsigned char vec;
        void *page = (void *)((uintptr_t)a & ~(uintptr_t)(page_size - 1));
        if (mincore(page, 1, &vec) == 0)
            cuemu_fail("kernel launched at %s:%d: argument %d (a struct) holds %p at byte %zu, a host pointer, not "
                       "device memory",
                       s.file, s.line, index + 1, (const void *)a, k);
    }
}

void cuemu::launch(const LaunchSite &s, void (*body)(void *), void *ctx) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    heap_init();
    init_order();
    if (in_kernel) cuemu_fail("kernel launch at %s:%d from device code (dynamic parallelism is not emulated)", s.file, s.line);
    const dim3 g = s.grid, b = s.block;
    unsigned long long nt = (unsigned long long)b.x * b.y * b.z;
    if (b.x == 0 || b.y == 0 || b.z == 0 || nt > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64)
        cuemu_fail("kernel launch at %s:%d: block (%u,%u,%u): at most 1024 threads per block, x,y <= 1024, z <= 64, "
                   "none 0",
                   s.file, s.line, b.x, b.y, b.z);
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u || g.y > 65535 || g.z > 65535)
        cuemu_fail("kernel launch at %s:%d: grid (%u,%u,%u): x in 1..2^31-1, y and z in 1..65535", s.file, s.line, g.x,
                   g.y, g.z);
    size_t optin = 0;
    auto at = max_dyn_shared.find(s.kernel);
    if (at != max_dyn_shared.end()) optin = (size_t)at->second;
    if (s.shm > SHARED_DEFAULT_MAX && s.shm > optin)
        cuemu_fail("kernel launch at %s:%d: %zu bytes of dynamic shared memory exceed 48 KiB without "
                   "cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n >= %zu) (set: %zu)",
                   s.file, s.line, s.shm, s.shm, optin);
    if (s.shm > SHARED_OPTIN_MAX)
        cuemu_fail("kernel launch at %s:%d: %zu bytes of dynamic shared memory exceed the device's %zu", s.file, s.line,
                   s.shm, SHARED_OPTIN_MAX);
    nthreads = (int)nt;
    ensure_fibers(nthreads);
    site = &s;
    body_fn = body, body_ctx = ctx;
    blockDim = b, gridDim = g;
    dyn_ptr = dyn_region + DYN_REGION - (s.shm + 15) / 16 * 16;

    cuemu_host_access_begin();
    in_kernel = true;
#ifdef CUEMU_TSAN
    if (!tsan_host) tsan_host = __tsan_get_current_fiber();
#endif
    unsigned long long nblocks = (unsigned long long)g.x * g.y * g.z;
    std::vector<int> perm(nthreads);
    for (unsigned long long bi = 0; bi < nblocks; bi++) {
        unsigned long long q = order == REVERSE ? nblocks - 1 - bi : bi;
        if (order == RANDOM && nblocks > 1) { /* a random block of the not-yet-run ones: a Fisher–Yates walk */
            static std::vector<unsigned long long> bperm;
            if (bi == 0) {
                bperm.resize(nblocks);
                for (unsigned long long k = 0; k < nblocks; k++) bperm[k] = k;
                std::shuffle(bperm.begin(), bperm.end(), rng);
            }
            q = bperm[bi];
        }
        blockIdx = uint3{(unsigned)(q % g.x), (unsigned)(q / g.x % g.y), (unsigned)(q / ((unsigned long long)g.x * g.y))};
        block_gen++;
        static_used = 0;
        poison_range(dyn_ptr, s.shm);
#ifdef CUEMU_ASAN
        ASAN_POISON_MEMORY_REGION(dyn_region, (size_t)(dyn_ptr - dyn_region));
        ASAN_POISON_MEMORY_REGION(dyn_ptr + s.shm, (size_t)(dyn_region + DYN_REGION - dyn_ptr) - s.shm);
#endif
        nexited = nbarrier = bar_count_sum = 0;
        memset(warps, 0, sizeof warps);
#ifdef CUEMU_TSAN
        __tsan_release(&tsan_launch); /* the host's writes, this block's poison: before its threads */
#endif
        for (int i = 0; i < nthreads; i++) {
            Fiber &f = fibers[i];
            f.tid = uint3{(unsigned)(i % b.x), (unsigned)(i / b.x % b.y), (unsigned)(i / (b.x * b.y))};
            f.lin = i, f.lane = i & 31, f.warp = i >> 5;
            f.state = READY;
            f.asan_fake = nullptr;
            fiber_init(&f);
        }
        for (int i = 0; i < nthreads; i++) perm[i] = order == REVERSE ? nthreads - 1 - i : i;
        while (nexited < nthreads) {
            if (order == RANDOM) std::shuffle(perm.begin(), perm.end(), rng);
            bool progress = false;
            for (int i : perm)
                if (fibers[i].state == READY) {
                    run_fiber(&fibers[i]);
                    progress = true;
                }
            if (!progress) { /* every live thread waits and no wait can complete */
                for (int i = 0; i < nthreads; i++)
                    if (fibers[i].state == AT_WARP || fibers[i].state == AT_BARRIER)
                        cuemu_fail("deadlock: %s waits at %s at %s:%d, and no other thread can release it",
                                   who(&fibers[i]), fibers[i].state == AT_BARRIER ? "__syncthreads()" : coll_name(fibers[i].kind),
                                   fibers[i].file, fibers[i].line);
                cuemu_fail("deadlock in the kernel launched at %s:%d", s.file, s.line);
            }
        }
#ifdef CUEMU_TSAN
        __tsan_acquire(&tsan_end); /* the block's threads are done: before the next block's poison */
#endif
        if (bi == 0 && static_max > SHARED_DEFAULT_MAX)
            cuemu_fail("kernel launched at %s:%d: %zu bytes of static shared memory exceed 48 KiB", s.file, s.line,
                       static_max);
        if (bi == 0 && static_max + s.shm > SHARED_OPTIN_MAX)
            cuemu_fail("kernel launched at %s:%d: %zu bytes of static and %zu of dynamic shared memory exceed %zu",
                       s.file, s.line, static_max, s.shm, SHARED_OPTIN_MAX);
        static_max = 0;
    }
#ifdef CUEMU_TSAN
    __tsan_acquire(&tsan_end);
#endif
    in_kernel = false;
    site = nullptr;
    cuemu_host_access_end();
}
