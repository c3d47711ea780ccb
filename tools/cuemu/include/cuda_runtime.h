/* tools/cuemu/include/cuda_runtime.h — cuemu's replacement for the CUDA runtime header: what
 * anima's .cu files and optim/comm_nccl.c use, implemented on the CPU by tools/cuemu/runtime.cpp
 * (docs/cuemu.md). The C part (types, the API) is plain C so C files can include it; the C++
 * part gives kernels their built-in variables, qualifiers, vector types, warp collectives,
 * barriers, atomics and intrinsics, and the launch object the source rewrite
 * (tools/cuemu/rewrite.py) turns k<<<g, b, shm, s>>>(args) into. Streams and events exist but
 * everything runs synchronously, in issue order. */
#ifndef CUEMU_CUDA_RUNTIME_H
#define CUEMU_CUDA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "../cuemu.h"

#define __CUEMU__ 1
/* The API's enums get int as their fixed underlying type in C++: the emulated libraries and
 * their tests check out-of-range values (a wrong cublasOperation_t must give
 * CUBLAS_STATUS_INVALID_VALUE), and holding such a value in an enum without a fixed type is
 * undefined behaviour in C++ (UBSan reports it). C has no such rule. */
#ifdef __cplusplus
#define CUEMU_ENUM_INT : int
#else
#define CUEMU_ENUM_INT
#endif
#define CUDART_VERSION 12040

/* ---- C part ------------------------------------------------------------------------------ */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError CUEMU_ENUM_INT {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600
} cudaError_t;

typedef enum cudaMemcpyKind CUEMU_ENUM_INT {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaFuncAttribute CUEMU_ENUM_INT {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9
} cudaFuncAttribute;

#ifndef CUEMU_LIBRARY_TYPES
#define CUEMU_LIBRARY_TYPES
/* library_types.h of the real toolkit: the element types of the cuBLAS Ex entry points */
typedef enum cudaDataType_t CUEMU_ENUM_INT {
    CUDA_R_16F = 2,
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_R_16BF = 14,
    CUDA_R_32I = 10
} cudaDataType_t;
typedef cudaDataType_t cudaDataType;
#endif

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);

cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t n);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemset(void *p, int value, size_t n);
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* cuemu's own: the attribute set on a kernel (by its address), and a re-poison of memory a
 * caching allocator hands out again (so a kernel reading it before writing sees NaN / -1, as
 * with fresh memory from cudaMalloc) */
cudaError_t cuemu_func_set_attribute(const void *func, cudaFuncAttribute attr, int value);
void cuemu_poison(void *p, size_t n);

#ifdef __cplusplus
}
#endif

/* vector types (vector_types.h), plain structs in C and C++ */
typedef struct { unsigned x, y, z; } uint3;
typedef struct { int x, y; } int2;
typedef struct { int x, y, z; } int3;
typedef struct { int x, y, z, w; } int4;
typedef struct { float x, y; } float2;
typedef struct { float x, y, z; } float3;
typedef struct __attribute__((aligned(16))) { float x, y, z, w; } float4;
typedef struct { double x, y; } double2;
typedef struct { double x, y, z; } double3;
typedef struct { unsigned x, y; } uint2;
typedef struct { unsigned x, y, z, w; } uint4;

/* ---- C++ part: device code ------------------------------------------------------------- */
#ifdef __cplusplus
#include <math.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __CUDA_ARCH_EMU__ 900

/* The built-in variables of the running CUDA thread: the scheduler stores the fiber's own
 * values here before every switch to it (all fibers run on one OS thread). */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
#define warpSize 32

namespace cuemu {

enum Collective { SHFL, SHFL_UP, SHFL_DOWN, SHFL_XOR, ANY, ALL, BALLOT };

/* the runtime's scheduling points (runtime.cpp): they return when every participant arrived */
int syncthreads(int pred, int count, const char *file, int line);
/* v: the calling lane's 8 bytes; returns the lane's result (its source lane's value, or the vote) */
uint64_t warp_collective(Collective kind, unsigned mask, uint64_t v, int arg, int width, const char *file, int line);
void *dynamic_shared(void);

/* one static __shared__ declaration (rewrite.py): the block's copy in the shared arena,
 * allocated and poisoned by the first thread of each block that reaches the declaration */
struct SharedSlot {
    unsigned long gen = 0;
    size_t off = 0;
    void *get(size_t size, size_t align);
};

template <typename T>
inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}

struct LaunchSite {
    const char *file;
    int line;
    const void *kernel;
    dim3 grid, block;
    size_t shm;
};
void launch(const LaunchSite &site, void (*body)(void *), void *ctx);
void check_kernel_pointer(const LaunchSite &site, int index, const void *p);
/* a struct passed by value: every aligned word that points into device memory must point into
 * a live allocation, and none may point into mapped host memory */
void check_kernel_struct(const LaunchSite &site, int index, const void *p, size_t n);

/* k<<<g, b, shm, s>>>(args) after the rewrite: Launch(file, line, g, b, shm, s).run(k, args).
 * The arguments are converted to the parameter types once (as the real launch copies them to
 * parameter space); each CUDA thread calls the kernel with its own copies. */
struct Launch {
    LaunchSite site;
    Launch(const char *file, int line, dim3 g, dim3 b, size_t shm = 0, cudaStream_t s = 0)
        : site{file, line, nullptr, g, b, shm} {
        (void)s;
    }
    template <typename... P, typename... A>
    void run(void (*k)(P...), A &&...a) {
        static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
        using Args = std::tuple<std::decay_t<P>...>;
        struct Ctx {
            void (*k)(P...);
            Args args;
        } ctx{k, Args(static_cast<std::decay_t<P>>(std::forward<A>(a))...)};
        site.kernel = (const void *)k;
        check_pointers(ctx.args, std::index_sequence_for<P...>{});
        launch(site, [](void *c) { std::apply(((Ctx *)c)->k, ((Ctx *)c)->args); }, &ctx);
    }

  private:
    template <typename Tup, size_t... I>
    void check_pointers(const Tup &t, std::index_sequence<I...>) {
        (check_one<I>(std::get<I>(t)), ...);
    }
    template <size_t I, typename T>
    void check_one(const T &v) {
        if constexpr (std::is_pointer_v<T>) {
            if (v) check_kernel_pointer(site, (int)I, (const void *)v);
        } else if constexpr (std::is_class_v<T> && std::is_trivially_copyable_v<T> && alignof(T) >= 8) {
            check_kernel_struct(site, (int)I, &v, sizeof v);
        }
    }
};

} // namespace cuemu

template <typename F>
inline cudaError_t cudaFuncSetAttribute(F *func, cudaFuncAttribute attr, int value) {
    return cuemu_func_set_attribute((const void *)func, attr, value);
}

/* ---- barriers and warp collectives: scheduling points naming their call site ---------------- */
inline void __syncthreads(const char *f = __builtin_FILE(), int l = __builtin_LINE()) {
    cuemu::syncthreads(0, 0, f, l);
}
inline int __syncthreads_count(int pred, const char *f = __builtin_FILE(), int l = __builtin_LINE()) {
    return cuemu::syncthreads(pred != 0, 1, f, l);
}
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32, const char *f = __builtin_FILE(),
                     int l = __builtin_LINE()) {
    return cuemu::from_bits<T>(cuemu::warp_collective(cuemu::SHFL, mask, cuemu::to_bits(v), src, width, f, l));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32, const char *f = __builtin_FILE(),
                        int l = __builtin_LINE()) {
    return cuemu::from_bits<T>(cuemu::warp_collective(cuemu::SHFL_UP, mask, cuemu::to_bits(v), (int)d, width, f, l));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32, const char *f = __builtin_FILE(),
                          int l = __builtin_LINE()) {
    return cuemu::from_bits<T>(cuemu::warp_collective(cuemu::SHFL_DOWN, mask, cuemu::to_bits(v), (int)d, width, f, l));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32, const char *f = __builtin_FILE(),
                         int l = __builtin_LINE()) {
    return cuemu::from_bits<T>(cuemu::warp_collective(cuemu::SHFL_XOR, mask, cuemu::to_bits(v), m, width, f, l));
}
inline int __any_sync(unsigned mask, int pred, const char *f = __builtin_FILE(), int l = __builtin_LINE()) {
    return (int)cuemu::warp_collective(cuemu::ANY, mask, pred != 0, 0, 32, f, l);
}
inline int __all_sync(unsigned mask, int pred, const char *f = __builtin_FILE(), int l = __builtin_LINE()) {
    return (int)cuemu::warp_collective(cuemu::ALL, mask, pred != 0, 0, 32, f, l);
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char *f = __builtin_FILE(), int l = __builtin_LINE()) {
    return (unsigned)cuemu::warp_collective(cuemu::BALLOT, mask, pred != 0, 0, 32, f, l);
}

/* ---- atomics: fibers are never preempted, but __atomic keeps ThreadSanitizer's view right --- */
template <typename T>
inline T cuemu_atomic_rmw(T *p, T v, int op) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4- and 8-byte words");
    using W = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    W *w = (W *)p;
    W old = __atomic_load_n(w, __ATOMIC_RELAXED);
    for (;;) {
        T o, n;
        memcpy(&o, &old, sizeof o);
        n = op == 0 ? (T)(o + v) : op == 1 ? (v > o ? v : o) : op == 2 ? (v < o ? v : o) : v;
        W nw;
        memcpy(&nw, &n, sizeof nw);
        if (__atomic_compare_exchange_n(w, &old, nw, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return o;
    }
}
inline float atomicAdd(float *p, float v) { return cuemu_atomic_rmw(p, v, 0); }
inline double atomicAdd(double *p, double v) { return cuemu_atomic_rmw(p, v, 0); }
inline int atomicAdd(int *p, int v) { return cuemu_atomic_rmw(p, v, 0); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return cuemu_atomic_rmw(p, v, 0); }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { return cuemu_atomic_rmw(p, v, 0); }
inline int atomicMax(int *p, int v) { return cuemu_atomic_rmw(p, v, 1); }
inline unsigned atomicMax(unsigned *p, unsigned v) { return cuemu_atomic_rmw(p, v, 1); }
inline int atomicMin(int *p, int v) { return cuemu_atomic_rmw(p, v, 2); }
inline unsigned atomicMin(unsigned *p, unsigned v) { return cuemu_atomic_rmw(p, v, 2); }
inline int atomicExch(int *p, int v) { return cuemu_atomic_rmw(p, v, 3); }
inline float atomicExch(float *p, float v) { return cuemu_atomic_rmw(p, v, 3); }
inline int atomicCAS(int *p, int cmp, int v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp, unsigned long long v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return cmp;
}
inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ---- intrinsics and device math ------------------------------------------------------------ */
/* the _rn forms are single IEEE operations; the emulated build compiles with -ffp-contract=off,
 * so no multiply-add is fused anywhere (the intrinsics' purpose on the GPU) */
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
inline int __float_as_int(float x) { int u; memcpy(&u, &x, 4); return u; }
inline float __uint_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
inline float __int_as_float(int u) { float x; memcpy(&x, &u, 4); return x; }
inline long long __double_as_longlong(double x) { long long u; memcpy(&u, &x, 8); return u; }
inline double __longlong_as_double(long long u) { double x; memcpy(&x, &u, 8); return x; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
template <typename T>
inline T __ldg(const T *p) { return *p; }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline double2 make_double2(double x, double y) { return double2{x, y}; }
inline double3 make_double3(double x, double y, double z) { return double3{x, y, z}; }

#endif /* __cplusplus */
#endif
