/* tensor/cpu/cpu_iter.h — strided iteration over up to four tensors of one shape: dims that
 * are contiguous in every operand are merged, then the work is split into rows (the innermost
 * merged dim) that kernels process with plain pointer loops GCC can vectorize. */
#ifndef ANIMA_CPU_ITER_H
#define ANIMA_CPU_ITER_H

#include "../tensor.h"


/* Hot f32 loops are compiled twice, for AVX-512 (x86-64-v4) and for the build's baseline, and
 * picked at load time (GCC function multi-versioning): twice the lanes where the CPU has them. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define CPU_CLONES
#endif

typedef struct {
    int nd, nt;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t st[4][TENSOR_MAX_DIMS];
    int64_t rows, len; /* rows × len elements */
} CpuIter;

static inline void cpu_iter_init(CpuIter *it, int nd, const int64_t *shape, int nt, const Tensor *const *ts) {
    it->nt = nt;
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        if (k > 0) {
            bool merge = true;
            for (int t = 0; t < nt; t++)
                if (it->st[t][k - 1] != ts[t]->stride[d] * shape[d]) merge = false;
            if (merge) {
                it->shape[k - 1] *= shape[d];
                for (int t = 0; t < nt; t++) it->st[t][k - 1] = ts[t]->stride[d];
                continue;
            }
        }
        it->shape[k] = shape[d];
        for (int t = 0; t < nt; t++) it->st[t][k] = ts[t]->stride[d];
        k++;
    }
    if (k == 0) {
        it->shape[0] = 1;
        for (int t = 0; t < nt; t++) it->st[t][0] = 1;
        k = 1;
    }
    it->nd = k;
    it->len = it->shape[k - 1];
    it->rows = 1;
    for (int d = 0; d < k - 1; d++) it->rows *= it->shape[d];
    for (int d = 0; d < nd; d++)
        if (shape[d] == 0) it->rows = 0;
}

/* Element offsets (relative to each tensor's offset) of the first element of row r. */
static inline void cpu_iter_row(const CpuIter *it, int64_t r, int64_t *off) {
    for (int t = 0; t < it->nt; t++) off[t] = 0;
    for (int d = it->nd - 2; d >= 0; d--) {
        int64_t i = r % it->shape[d];
        r /= it->shape[d];
        for (int t = 0; t < it->nt; t++) off[t] += i * it->st[t][d];
    }
}

static inline int64_t cpu_iter_inner(const CpuIter *it, int t) { return it->st[t][it->nd - 1]; }

#endif
