/* tensor/cpu/cpu_misc.c — random numbers, index_select / gather / scatter_add, the
 * closed-form batched 3×3 determinant and inverse, and the OpenMP team queries the other
 * kernel files share (kept here, below them, rather than in the backend's table file). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "base/par.h"
#include "cpu.h"
#include "cpu_iter.h"

int cpu_threads_in_team(void) { return omp_get_num_threads(); }
int cpu_thread_id(void) { return omp_get_thread_num(); }

/* Element i uses Philox counter offset + i/2: words (0,1) for even i, (2,3) for odd i. Uniform
 * f32 takes the top 24 bits of the first word, f64 53 bits of both; normals are Box–Muller on
 * the pair's two uniforms (cos for even, sin for odd). The CUDA backend does the same. */
void cpu_random(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal) {
    int64_t n = tensor_numel(out);
    void *p = tensor_data_ptr(out);
    bool f32 = out->dtype == TENSOR_F32;
    int par_nt = base_par_threads((n + 1) / 2, 20); /* Philox and a log, cos or sin per pair */
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < n; i += 2) {
        uint32_t w[4];
        tensor_philox(seed, stream, offset + (uint64_t)(i / 2), w);
        double u[2], v[2];
        for (int j = 0; j < 2; j++) {
            u[j] = f32 ? (double)(w[2 * j] >> 8) * (1.0 / 16777216.0)
                       : (double)(((uint64_t)w[2 * j] << 21) ^ (w[2 * j + 1] >> 11)) * (1.0 / 9007199254740992.0);
        }
        if (normal) {
            double r = sqrt(-2.0 * log(1.0 - u[0])), th = 6.283185307179586 * u[1];
            v[0] = r * cos(th);
            v[1] = r * sin(th);
        } else {
            v[0] = u[0];
            v[1] = u[1];
        }
        for (int j = 0; j < 2 && i + j < n; j++) {
            if (f32) ((float *)p)[i + j] = (float)v[j];
            else ((double *)p)[i + j] = v[j];
        }
    }
}

void cpu_index_select(Tensor *out, const Tensor *x, const int64_t *index, int64_t A, int64_t N, int64_t K,
                      int64_t C) {
    size_t es = tensor_dtype_size(x->dtype);
    char *po = tensor_data_ptr(out);
    const char *px = tensor_data_ptr(x);
    int par_nt = base_par_threads(A * K, C);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t ak = 0; ak < A * K; ak++) {
        int64_t a = ak / K, k = ak % K;
        memcpy(po + (a * K + k) * C * (int64_t)es, px + (a * N + index[k]) * C * (int64_t)es, (size_t)C * es);
    }
}

/* Offsets of element e (row-major in `shape`) in a contiguous tensor of shape `full`, with
 * the coordinate along dim replaced by repl (or kept when repl < 0). */
static int64_t remap(int nd, const int64_t *shape, const int64_t *full, int64_t e, int dim, int64_t repl) {
    int64_t off = 0, mul = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t i = e % shape[d];
        e /= shape[d];
        off += (d == dim && repl >= 0 ? repl : i) * mul;
        mul *= full[d];
    }
    return off;
}

void cpu_gather(Tensor *out, const Tensor *x, int dim, const Tensor *index) {
    int64_t n = tensor_numel(index);
    const int64_t *idx = tensor_data_ptr(index);
    size_t es = tensor_dtype_size(x->dtype);
    char *po = tensor_data_ptr(out);
    const char *px = tensor_data_ptr(x);
    for (int64_t e = 0; e < n; e++)
        memcpy(po + e * (int64_t)es, px + remap(x->ndim, index->shape, x->shape, e, dim, idx[e]) * (int64_t)es, es);
}

void cpu_scatter_add(Tensor *out, int dim, const Tensor *index, const Tensor *src) {
    int64_t n = tensor_numel(index);
    const int64_t *idx = tensor_data_ptr(index);
    for (int64_t e = 0; e < n; e++) {
        int64_t o = remap(out->ndim, index->shape, out->shape, e, dim, idx[e]);
        if (out->dtype == TENSOR_F32) ((float *)tensor_data_ptr(out))[o] += ((const float *)tensor_data_ptr(src))[e];
        else ((double *)tensor_data_ptr(out))[o] += ((const double *)tensor_data_ptr(src))[e];
    }
}

#define DEFINE_SMALL3(T, SFX)                                                                        \
    static void det3_##SFX(T *o, const T *m, int64_t n) {                                            \
        for (int64_t i = 0; i < n; i++, m += 9)                                                      \
            o[i] = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) +          \
                   m[2] * (m[3] * m[7] - m[4] * m[6]);                                               \
    }                                                                                                \
    static void inv3_##SFX(T *o, const T *m, int64_t n) {                                            \
        for (int64_t i = 0; i < n; i++, m += 9, o += 9) {                                            \
            T c00 = m[4] * m[8] - m[5] * m[7], c01 = m[5] * m[6] - m[3] * m[8], c02 = m[3] * m[7] - m[4] * m[6]; \
            T det = m[0] * c00 + m[1] * c01 + m[2] * c02, r = (T)1 / det;                            \
            o[0] = c00 * r;                                                                          \
            o[1] = (m[2] * m[7] - m[1] * m[8]) * r;                                                  \
            o[2] = (m[1] * m[5] - m[2] * m[4]) * r;                                                  \
            o[3] = c01 * r;                                                                          \
            o[4] = (m[0] * m[8] - m[2] * m[6]) * r;                                                  \
            o[5] = (m[2] * m[3] - m[0] * m[5]) * r;                                                  \
            o[6] = c02 * r;                                                                          \
            o[7] = (m[1] * m[6] - m[0] * m[7]) * r;                                                  \
            o[8] = (m[0] * m[4] - m[1] * m[3]) * r;                                                  \
        }                                                                                            \
    }
DEFINE_SMALL3(float, f32)
DEFINE_SMALL3(double, f64)

void cpu_det3(Tensor *out, const Tensor *x, int64_t n) {
    if (x->dtype == TENSOR_F32) det3_f32(tensor_data_ptr(out), tensor_data_ptr(x), n);
    else det3_f64(tensor_data_ptr(out), tensor_data_ptr(x), n);
}

void cpu_inv3(Tensor *out, const Tensor *x, int64_t n) {
    if (x->dtype == TENSOR_F32) inv3_f32(tensor_data_ptr(out), tensor_data_ptr(x), n);
    else inv3_f64(tensor_data_ptr(out), tensor_data_ptr(x), n);
}
