/* tests/cuemu/test_cuemu.cu — the emulator's checks, each shown to fire: small kernels written
 * for the test with one bug injected, and next to each its correct twin, which must pass under
 * every thread order (no false alarms). A case runs in a child process with CUEMU_ORDER set;
 * the parent reads the child's stderr and exit status:
 *   OK     the kernel ran and its results are right (exit 0)
 *   WRONG  it ran and its results are wrong: the poison or the thread order exposed the bug
 *          (exit 3)
 *   FAIL   the emulator stopped it (SIGABRT) with a message containing the expected text,
 *          usually the file:line of the culprit
 * `cuemu-tests` runs every case; `cuemu-tests --tsan` the ThreadSanitizer cases, whose bugs
 * only a race detector sees (make test-cuda-emu-tsan). */
#include <cuda_runtime.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#define FULL 0xffffffffu
#define N 256

static void ck(cudaError_t e) {
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA error %s\n", cudaGetErrorString(e));
        exit(2);
    }
}

static float *dev_floats(int n) {
    float *p;
    ck(cudaMalloc((void **)&p, sizeof(float) * n));
    return p;
}

static std::vector<float> to_host(const float *d, int n) {
    std::vector<float> h(n);
    ck(cudaMemcpy(h.data(), d, sizeof(float) * n, cudaMemcpyDeviceToHost));
    return h;
}

/* ---- block reduction: any one of its three barriers removed ------------------------------ */

static const int L_REDUCE_LOOP = __LINE__ + 9;
/* SKIP: which barrier is left out (0: none); NT threads */
template <int SKIP, int NT>
__device__ float block_sum(float v) {
    __shared__ float buf[NT];
    int t = threadIdx.x;
    buf[t] = v;
    if (SKIP != 1) __syncthreads();
    for (int s = NT / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s]; /* L_REDUCE_LOOP */
        if (SKIP != 2) __syncthreads();
    }
    float r = buf[0];
    if (SKIP != 3) __syncthreads(); /* buf is reused by the next call */
    return r;
}

/* two sums in a row, as layer_norm's statistics: the second call reuses buf */
template <int SKIP, int NT>
__global__ void k_two_sums(float *out) {
    float a = block_sum<SKIP, NT>((float)threadIdx.x);
    float b = block_sum<SKIP, NT>(1.0f);
    out[threadIdx.x] = a + 1000.0f * b;
}

/* NT = 64 for ThreadSanitizer, which tells apart only a few hundred threads (fibers) at once */
template <int SKIP, int NT = N>
static int case_reduce(void) {
    float *o = dev_floats(NT);
    k_two_sums<SKIP, NT><<<1, NT>>>(o);
    std::vector<float> h = to_host(o, NT);
    float want = (float)(NT * (NT - 1) / 2) + 1000.0f * NT;
    for (int i = 0; i < NT; i++)
        if (h[i] != want) return 3;
    return 0;
}

/* ---- barriers ----------------------------------------------------------------------------- */

static const int L_DIV_A = __LINE__ + 3;
static const int L_DIV_B = __LINE__ + 3;
__global__ void k_divergent_barrier(float *out) {
    if (threadIdx.x < 16) __syncthreads();
    else __syncthreads();
    out[threadIdx.x] = 1;
}
static int case_divergent_barrier(void) {
    k_divergent_barrier<<<1, 64>>>(dev_floats(64));
    return 0;
}

static const int L_EARLY = __LINE__ + 4;
__global__ void k_early_return(float *out, int n) {
    int i = threadIdx.x;
    if (i >= n) return; /* the bug: the threads past n skip the barrier below */
    __syncthreads();
    out[i] = 1;
}
static int case_early_return(void) {
    k_early_return<<<1, 64>>>(dev_floats(64), 40);
    return 0;
}

__global__ void k_syncthreads_count(float *out) {
    int c = __syncthreads_count(threadIdx.x % 3 == 0);
    out[threadIdx.x] = (float)c;
}
static int case_syncthreads_count(void) {
    float *o = dev_floats(100);
    k_syncthreads_count<<<1, 100>>>(o);
    for (float v : to_host(o, 100))
        if (v != 34.0f) return 3;
    return 0;
}

/* ---- warp collectives ------------------------------------------------------------------------ */

static const int L_SHFL_A = __LINE__ + 4;
static const int L_SHFL_B = __LINE__ + 4;
__global__ void k_divergent_shuffle(float *out) {
    float v = (float)threadIdx.x;
    if ((threadIdx.x & 31) < 16) v = __shfl_xor_sync(FULL, v, 1);
    else v = __shfl_xor_sync(FULL, v, 2);
    out[threadIdx.x] = v;
}
static int case_divergent_shuffle(void) {
    k_divergent_shuffle<<<1, 64>>>(dev_floats(64));
    return 0;
}

static const int L_SHFL_EXIT = __LINE__ + 4;
__global__ void k_shuffle_after_exit(float *out) {
    float v = (float)threadIdx.x;
    if ((threadIdx.x & 31) == 7) return;
    v = __shfl_down_sync(FULL, v, 1);
    out[threadIdx.x] = v;
}
static int case_shuffle_after_exit(void) {
    k_shuffle_after_exit<<<1, 32>>>(dev_floats(32));
    return 0;
}

__global__ void k_outside_mask(float *out, unsigned mask, int src) {
    float v = (float)threadIdx.x;
    if (mask >> (threadIdx.x & 31) & 1) v = __shfl_sync(mask, v, src);
    out[threadIdx.x] = v;
}
static int case_outside_mask(void) {
    k_outside_mask<<<1, 32>>>(dev_floats(32), 0x0000ffffu, 20); /* lanes 0..15 read lane 20 */
    return 0;
}
static int case_partial_mask_ok(void) {
    float *o = dev_floats(32);
    k_outside_mask<<<1, 32>>>(o, 0x0000ffffu, 3);
    std::vector<float> h = to_host(o, 32);
    for (int i = 0; i < 32; i++)
        if (h[i] != (i < 16 ? 3.0f : (float)i)) return 3;
    return 0;
}

__global__ void k_own_lane_missing(float *out) {
    out[threadIdx.x] = (float)__ballot_sync(0x1u, 1); /* every lane, with a mask naming lane 0 only */
}
static int case_own_lane_missing(void) {
    k_own_lane_missing<<<1, 32>>>(dev_floats(32));
    return 0;
}

/* shuffles and votes compute what the hardware does */
__global__ void k_warp_ops(float *out) {
    int lane = threadIdx.x & 31;
    float v = (float)threadIdx.x;
    float s = v;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(FULL, s, o);
    float x = __shfl_xor_sync(FULL, v, 5);
    float u = __shfl_up_sync(FULL, v, 3);
    float b = __shfl_sync(FULL, v, 9, 16); /* width 16: lane 9 of each half */
    unsigned bal = __ballot_sync(FULL, lane % 4 == 1);
    int any = __any_sync(FULL, lane == 31), all = __all_sync(FULL, lane < 31);
    float *o = out + 8 * threadIdx.x;
    o[0] = s, o[1] = x, o[2] = u, o[3] = b, o[4] = (float)bal, o[5] = (float)any, o[6] = (float)all, o[7] = 0;
}
static int case_warp_ops(void) {
    float *d = dev_floats(8 * 64);
    k_warp_ops<<<1, 64>>>(d);
    std::vector<float> h = to_host(d, 8 * 64);
    for (int t = 0; t < 64; t++) {
        int lane = t & 31, w0 = t - lane;
        const float *o = &h[8 * t];
        float want_s = 0;
        if (lane == 0)
            for (int k = 0; k < 32; k++) want_s += (float)(w0 + k);
        if (lane == 0 && o[0] != want_s) return 3;
        if (o[1] != (float)(w0 + (lane ^ 5))) return 3;
        if (o[2] != (float)(lane >= 3 ? t - 3 : t)) return 3;
        if (o[3] != (float)(w0 + (lane & 16) + 9)) return 3;
        if (o[4] != (float)0x22222222u || o[5] != 1.0f || o[6] != 0.0f) return 3;
    }
    return 0;
}

/* ---- poison: device memory until written, shared memory per block ----------------------------- */

__global__ void k_count(float *acc, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(acc, 1.0f);
}
static int case_atomic_no_memset(bool memset_first) {
    float *acc = dev_floats(1);
    if (memset_first) ck(cudaMemset(acc, 0, sizeof(float)));
    k_count<<<2, 64>>>(acc, 100);
    return to_host(acc, 1)[0] == 200.0f ? 0 : 3;
}
static int case_atomic_memset_ok(void) { return case_atomic_no_memset(true); }
static int case_atomic_missing_memset(void) { return case_atomic_no_memset(false); }

template <bool WRITE_FIRST>
__global__ void k_shared_read(float *out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (WRITE_FIRST) {
        s[t] = (float)t;
        __syncthreads();
    }
    out[t] = s[(t + 1) & 63];
}
template <bool WRITE_FIRST>
static int case_shared_read(void) {
    float *o = dev_floats(64);
    k_shared_read<WRITE_FIRST><<<1, 64>>>(o);
    std::vector<float> h = to_host(o, 64);
    for (int t = 0; t < 64; t++)
        if (h[t] != (float)((t + 1) & 63)) return 3;
    return 0;
}

/* block 1 reads what only block 0 wrote: on a GPU another block's (or stale) shared memory */
__global__ void k_shared_across_blocks(float *out) {
    __shared__ float s[32];
    if (blockIdx.x == 0) s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x];
}
static int case_shared_across_blocks(void) {
    float *o = dev_floats(64);
    k_shared_across_blocks<<<2, 32>>>(o);
    for (float v : to_host(o, 64))
        if (v != 1.0f) return 3;
    return 0;
}

/* ---- launch limits ------------------------------------------------------------------------- */

__global__ void k_noop(float *out) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = 1;
    if (threadIdx.x == 0) out[0] = dyn[0];
}
static const int L_LAUNCH_1025 = __LINE__ + 2;
static int case_too_many_threads(void) {
    k_noop<<<1, 1025, 1025 * 4>>>(dev_floats(1));
    return 0;
}
static const int L_LAUNCH_GRID = __LINE__ + 2;
static int case_grid_too_large(void) {
    k_noop<<<dim3(1, 70000), 32, 128>>>(dev_floats(1));
    return 0;
}
static const int L_LAUNCH_SHM = __LINE__ + 2;
static int case_dyn_shared_no_attribute(void) {
    k_noop<<<1, 32, 64 * 1024>>>(dev_floats(1));
    return 0;
}
static int case_dyn_shared_attribute_ok(void) {
    ck(cudaFuncSetAttribute(k_noop, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    float *o = dev_floats(1);
    k_noop<<<1, 32, 64 * 1024>>>(o);
    return to_host(o, 1)[0] == 1.0f ? 0 : 3;
}
/* dynamic shared memory 32 bytes too small: 32 floats written into 96 bytes */
static int case_dyn_shared_too_small(void) {
    k_noop<<<1, 32, 32 * 4 - 32>>>(dev_floats(1));
    return 0;
}

/* 4 bytes too small: the access lands in the 16-byte rounding before the guard page, which only
 * AddressSanitizer sees (the slack is poisoned) */
static int case_dyn_shared_4_bytes_too_small(void) {
    k_noop<<<1, 26, 25 * 4>>>(dev_floats(1));
    return 0;
}

/* one element past a device allocation: inside its red zone, poisoned under ASan */
__global__ void k_write_n(float *p, int n) {
    if ((int)threadIdx.x <= n) p[threadIdx.x] = 1.0f; /* the bug: <= */
}
static int case_device_overflow(void) {
    k_write_n<<<1, 32>>>(dev_floats(25), 25);
    return 0;
}

/* ---- host and device memory ------------------------------------------------------------------ */

static int case_host_dereference(void) {
    float *d = dev_floats(4);
    d[1] = 2.0f; /* the bug: host code writes device memory */
    return 0;
}
static int case_memcpy_wrong_direction(void) {
    float *d = dev_floats(4), h[4] = {1, 2, 3, 4};
    ck(cudaMemcpy(d, h, sizeof h, cudaMemcpyDeviceToHost)); /* should be HostToDevice */
    return 0;
}
static int case_memcpy_ok(void) {
    float *d = dev_floats(4), h[4] = {1, 2, 3, 4}, g[4];
    ck(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    ck(cudaMemcpy(g, d, sizeof g, cudaMemcpyDeviceToHost));
    return memcmp(g, h, sizeof h) ? 3 : 0;
}
static int case_kernel_host_pointer(void) {
    static float h[64];
    k_shared_read<true><<<1, 64>>>(h);
    return 0;
}
static int case_kernel_freed_pointer(void) {
    float *d = dev_floats(64);
    ck(cudaFree(d));
    k_shared_read<true><<<1, 64>>>(d);
    return 0;
}

/* pointers inside a struct passed by value (as TensorAttentionArgs, GsRasterInputs) */
struct TwoArrays {
    const float *a;
    int n;
    float *out;
};
__global__ void k_struct_arg(TwoArrays t) {
    if ((int)threadIdx.x < t.n) t.out[threadIdx.x] = 2.0f * t.a[threadIdx.x];
}
static int case_struct_pointers(bool host_a) {
    static float h[32];
    float *d = dev_floats(32), *o = dev_floats(32);
    for (int i = 0; i < 32; i++) h[i] = (float)i;
    ck(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    TwoArrays t = {host_a ? h : d, 32, o};
    k_struct_arg<<<1, 32>>>(t);
    std::vector<float> r = to_host(o, 32);
    for (int i = 0; i < 32; i++)
        if (r[i] != 2.0f * (float)i) return 3;
    return 0;
}
static int case_struct_device_pointers_ok(void) { return case_struct_pointers(false); }
static int case_struct_host_pointer(void) { return case_struct_pointers(true); }

/* ---- races only ThreadSanitizer sees (make test-cuda-emu-tsan) ------------------------------- */

__global__ void k_scatter_add(float *out, const int *idx, const float *src, int n, bool atomic) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (atomic) atomicAdd(out + idx[i], src[i]);
        else out[idx[i]] += src[i];
    }
}
static int case_scatter(bool atomic) {
    const int n = 64;
    int hi[n];
    float hs[n];
    for (int i = 0; i < n; i++) hi[i] = i % 4, hs[i] = 1.0f;
    int *di;
    float *ds = dev_floats(n), *o = dev_floats(4);
    ck(cudaMalloc((void **)&di, sizeof hi));
    ck(cudaMemcpy(di, hi, sizeof hi, cudaMemcpyHostToDevice));
    ck(cudaMemcpy(ds, hs, sizeof hs, cudaMemcpyHostToDevice));
    ck(cudaMemset(o, 0, 4 * sizeof(float)));
    k_scatter_add<<<2, 32>>>(o, di, ds, n, atomic);
    for (float v : to_host(o, 4))
        if (v != 16.0f) return 3;
    return 0;
}
static int case_scatter_atomic_ok(void) { return case_scatter(true); }
static int case_scatter_plain(void) { return case_scatter(false); }

/* ---- the runner ------------------------------------------------------------------------------ */

enum Expect { OK, WRONG, FAIL, WRONG_IN_SOME_ORDER };

struct Case {
    const char *name;
    int (*fn)(void);
    Expect expect;
    std::string text; /* FAIL: must appear in the emulator's message ('|' separates several) */
    bool tsan;        /* a ThreadSanitizer case */
    bool asan = false; /* only in the AddressSanitizer build */
};

#if defined(__SANITIZE_ADDRESS__)
static const bool ASAN = true;
#else
static const bool ASAN = false;
#endif

static std::string at(int line) { return "test_cuemu.cu:" + std::to_string(line); }

static const char *ORDERS[3] = {"forward", "reverse", "random"};

/* runs fn in a child under the order; returns its status and stderr */
static int run_child(int (*fn)(void), const char *order, std::string &err) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        setenv("CUEMU_ORDER", order, 1);
        if (!getenv("CUEMU_SEED")) setenv("CUEMU_SEED", "12345", 1);
        signal(SIGABRT, SIG_DFL);
        _exit(fn());
    }
    close(fd[1]);
    char buf[4096];
    ssize_t k;
    while ((k = read(fd[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)k);
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

int main(int argc, char **argv) {
    bool tsan = argc > 1 && !strcmp(argv[1], "--tsan");
    const char *only = argc > 1 + tsan ? argv[1 + tsan] : NULL; /* one case, its output shown */
    std::vector<Case> cases = {
        {"reduce_all_barriers_ok", case_reduce<0>, OK, "", false},
        {"reduce_first_barrier_removed", case_reduce<1>, WRONG_IN_SOME_ORDER, "", false},
        {"reduce_loop_barrier_removed", case_reduce<2>, WRONG_IN_SOME_ORDER, "", false},
        {"reduce_reuse_barrier_removed", case_reduce<3>, WRONG_IN_SOME_ORDER, "", false},
        {"divergent_barrier", case_divergent_barrier, FAIL, "divergent barrier|" + at(L_DIV_A) + "|" + at(L_DIV_B), false},
        {"early_return_at_barrier", case_early_return, FAIL, at(L_EARLY), false},
        {"syncthreads_count_ok", case_syncthreads_count, OK, "", false},
        {"divergent_shuffle", case_divergent_shuffle, FAIL, "mismatched warp collective|" + at(L_SHFL_A) + "|" + at(L_SHFL_B), false},
        {"shuffle_lane_returned", case_shuffle_after_exit, FAIL, at(L_SHFL_EXIT), false},
        {"shuffle_reads_outside_mask", case_outside_mask, FAIL, "outside the mask", false},
        {"shuffle_partial_mask_ok", case_partial_mask_ok, OK, "", false},
        {"ballot_mask_without_own_lane", case_own_lane_missing, FAIL, "does not include its own lane", false},
        {"warp_ops_values_ok", case_warp_ops, OK, "", false},
        {"atomic_after_memset_ok", case_atomic_memset_ok, OK, "", false},
        {"atomic_missing_memset", case_atomic_missing_memset, WRONG, "", false},
        {"shared_written_first_ok", case_shared_read<true>, OK, "", false},
        {"shared_read_before_write", case_shared_read<false>, WRONG, "", false},
        {"shared_repoisoned_per_block", case_shared_across_blocks, WRONG, "", false},
        {"launch_1025_threads", case_too_many_threads, FAIL, at(L_LAUNCH_1025) + ": block (1025,1,1)", false},
        {"launch_grid_y_70000", case_grid_too_large, FAIL, at(L_LAUNCH_GRID) + ": grid (1,70000,1)", false},
        {"launch_dyn_shared_64k_no_attribute", case_dyn_shared_no_attribute, FAIL, at(L_LAUNCH_SHM) + ": 65536 bytes",
         false},
        {"launch_dyn_shared_64k_attribute_ok", case_dyn_shared_attribute_ok, OK, "", false},
        {"dyn_shared_32_bytes_too_small", case_dyn_shared_too_small, FAIL, "past the end of its 96 bytes of dynamic shared",
         false},
        {"host_dereferences_device_memory", case_host_dereference, FAIL, "host code dereferenced device memory", false},
        {"memcpy_wrong_direction", case_memcpy_wrong_direction, FAIL, "is device memory, not host memory", false},
        {"memcpy_ok", case_memcpy_ok, OK, "", false},
        {"kernel_gets_host_pointer", case_kernel_host_pointer, FAIL, "argument 1", false},
        {"kernel_gets_freed_pointer", case_kernel_freed_pointer, FAIL, "freed or unallocated", false},
        {"struct_arg_device_pointers_ok", case_struct_device_pointers_ok, OK, "", false},
        {"struct_arg_host_pointer", case_struct_host_pointer, FAIL, "argument 1 (a struct) holds", false},
        {"dyn_shared_4_bytes_too_small_asan", case_dyn_shared_4_bytes_too_small, FAIL, "AddressSanitizer", false, true},
        {"device_overflow_into_red_zone_asan", case_device_overflow, FAIL, "AddressSanitizer", false, true},
        {"scatter_atomic_ok", case_scatter_atomic_ok, OK, "", true},
        {"scatter_without_atomics", case_scatter_plain, FAIL, "data race", true},
        {"reduce_all_barriers_ok_tsan", case_reduce<0, 64>, OK, "", true},
        {"reduce_loop_barrier_removed_tsan", case_reduce<2, 64>, FAIL, "data race|test_cuemu.cu:" + std::to_string(L_REDUCE_LOOP), true},
    };
    int pass = 0, fail = 0;
    for (const Case &c : cases) {
        if (c.tsan != tsan || (c.asan && !ASAN) || (only && strcmp(only, c.name))) continue;
        std::string why;
        bool ok = true, some_wrong = false;
        for (const char *order : ORDERS) {
            std::string err;
            int st = run_child(c.fn, order, err);
            if (only) fprintf(stderr, "-- %s, order %s:\n%s", c.name, order, err.c_str());
            bool aborted = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
            /* TSan's exitcode (66, run.sh sets it, when the case itself exits 0); ASan exits 1 */
            bool san_report = (tsan && WIFEXITED(st) && WEXITSTATUS(st) != 0) || (ASAN && WIFEXITED(st) && WEXITSTATUS(st) == 1);
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            bool good = false;
            switch (c.expect) {
            case OK: good = code == 0 && err.find("cuemu:") == std::string::npos; break;
            case WRONG: good = code == 3; break;
            case WRONG_IN_SOME_ORDER:
                good = code == 0 || code == 3;
                some_wrong |= code == 3;
                break;
            case FAIL: {
                good = aborted || san_report;
                size_t p = 0;
                while (good && p <= c.text.size()) {
                    size_t q = c.text.find('|', p);
                    if (q == std::string::npos) q = c.text.size();
                    good = err.find(c.text.substr(p, q - p)) != std::string::npos;
                    p = q + 1;
                }
                break;
            }
            }
            if (!good) {
                ok = false;
                char b[128];
                snprintf(b, sizeof b, "order %s: status %s %d; ", order, WIFSIGNALED(st) ? "signal" : "exit",
                         WIFSIGNALED(st) ? WTERMSIG(st) : code);
                why += b;
                why += err.substr(0, 600);
            }
        }
        if (c.expect == WRONG_IN_SOME_ORDER && !some_wrong) {
            ok = false;
            why += "the result was right under every order";
        }
        printf("%s %-40s %s\n", ok ? "ok  " : "FAIL", c.name, ok ? "" : why.c_str());
        ok ? pass++ : fail++;
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
