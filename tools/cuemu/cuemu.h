/* tools/cuemu/cuemu.h — the CUDA emulator's internal interface: what the emulated runtime
 * (runtime.cpp, fibers) provides to the emulated libraries (cuBLAS, cub, NCCL shims) and to the
 * replacement headers in tools/cuemu/include/. Not part of libanima; linked only into the emulated
 * build (`make test-cuda-emu`).
 *
 * Device memory is host memory that the emulator owns: allocations are registered (so a pointer
 * can be told device or host), filled with a poison (0xFF bytes: NaN for floats, -1 for
 * integers) until written, and kept inaccessible to host code outside kernels and outside the
 * library shims (which bracket their accesses with cuemu_host_access_begin/end). */
#ifndef ANIMA_TOOLS_CUEMU_H
#define ANIMA_TOOLS_CUEMU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A misuse the emulator detected: prints "cuemu: <message>" (file:line where known) and aborts,
 * or, when a test has armed cuemu_expect_failure, records it and unwinds to the test. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void cuemu_fail(const char *fmt, ...);

/* 1 when [p, p + n) lies inside one live device allocation, else 0. */
int cuemu_is_device(const void *p, size_t n);
/* Fails (naming `what`, e.g. "cublasSgemm: A") unless [p, p + n) is device memory. */
void cuemu_require_device(const void *p, size_t n, const char *what);
/* Fails (naming `what`) if [p, p + n) overlaps device memory (a device pointer where host memory
 * was expected, e.g. the wrong cudaMemcpy direction). */
void cuemu_require_host(const void *p, size_t n, const char *what);

/* Host code that touches device memory on the device's behalf (the library shims): between
 * begin and end the device heap is readable and writable. Calls nest. */
void cuemu_host_access_begin(void);
void cuemu_host_access_end(void);

#ifdef __cplusplus
}
#endif

#endif
