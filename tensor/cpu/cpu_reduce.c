/* tensor/cpu/cpu_reduce.c — sum / max / min / argmax over the middle axis of (A, R, C).
 * Sums accumulate in double so f32 results do not depend on the length of the reduction. */
/* no errno from libm calls, no trap semantics: lets the loops below vectorize; a*b+c contracted
 * to FMA (ISO C mode, -std=c11, otherwise keeps them apart) */
#pragma GCC optimize("no-math-errno", "no-trapping-math", "fp-contract=fast")
#include <math.h>
#include <stdlib.h>

#include "base/par.h"
#include "cpu.h"
#include "cpu_iter.h"

#define DEFINE_REDUCE(T, SFX)                                                                        \
    static void reduce_##SFX(TensorOpId op, void *outp, const T *x, int64_t A, int64_t R, int64_t C) { \
        if (C == 1) {                                                                                \
            int par_nt = base_par_threads(A, R);                                                     \
            _Pragma("omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)")         \
            for (int64_t a = 0; a < A; a++) {                                                        \
                const T *row = x + a * R;                                                            \
                if (op == TENSOR_OP_SUM) {                                                           \
                    double s = 0;                                                                    \
                    _Pragma("omp simd reduction(+ : s)") for (int64_t r = 0; r < R; r++) s += row[r]; \
                    ((T *)outp)[a] = (T)s;                                                           \
                } else {                                                                             \
                    T m = row[0];                                                                    \
                    int64_t at = 0;                                                                  \
                    for (int64_t r = 1; r < R; r++) {                                                \
                        T v = row[r];                                                                \
                        bool better = op == TENSOR_OP_MIN ? v < m : v > m;                           \
                        if (better || (v != v && m == m)) m = v, at = r;                             \
                    }                                                                                \
                    if (op == TENSOR_OP_ARGMAX) ((int64_t *)outp)[a] = at;                           \
                    else ((T *)outp)[a] = m;                                                         \
                }                                                                                    \
            }                                                                                        \
            return;                                                                                  \
        }                                                                                            \
        /* column blocks of W: narrower when there are too few blocks to share among threads */ \
        int64_t W = A * ((C + 255) / 256) >= 16 ? 256 : 64, nb = (C + W - 1) / W;                  \
        int par_nt = base_par_threads(A * nb, R * W);                                                \
        _Pragma("omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)")             \
        for (int64_t ac = 0; ac < A * nb; ac++) {                                                    \
            int64_t a = ac / nb, c0 = (ac % nb) * W;                                                 \
            int64_t cn = C - c0 < W ? C - c0 : W;                                                    \
            double acc[256];                                                                         \
            int64_t arg[256];                                                                        \
            const T *base = x + a * R * C + c0;                                                      \
            for (int64_t c = 0; c < cn; c++) acc[c] = R ? base[c] : 0, arg[c] = 0;                   \
            for (int64_t r = 1; r < R; r++) {                                                        \
                const T *row = base + r * C;                                                         \
                if (op == TENSOR_OP_SUM) {                                                           \
                    _Pragma("omp simd") for (int64_t c = 0; c < cn; c++) acc[c] += row[c];           \
                } else {                                                                             \
                    for (int64_t c = 0; c < cn; c++) {                                               \
                        double v = row[c];                                                           \
                        bool better = op == TENSOR_OP_MIN ? v < acc[c] : v > acc[c];                 \
                        if (better || (v != v && acc[c] == acc[c])) acc[c] = v, arg[c] = r;          \
                    }                                                                                \
                }                                                                                    \
            }                                                                                        \
            for (int64_t c = 0; c < cn; c++) {                                                       \
                if (op == TENSOR_OP_ARGMAX) ((int64_t *)outp)[a * C + c0 + c] = arg[c];              \
                else ((T *)outp)[a * C + c0 + c] = (T)acc[c];                                        \
            }                                                                                        \
        }                                                                                            \
    }

DEFINE_REDUCE(float, f32)
DEFINE_REDUCE(double, f64)

void cpu_reduce(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C) {
    if (R == 0) { /* empty sum */
        cpu_fill(out, 0);
        return;
    }
    if (x->dtype == TENSOR_F32) reduce_f32(op, tensor_data_ptr(out), tensor_data_ptr(x), A, R, C);
    else reduce_f64(op, tensor_data_ptr(out), tensor_data_ptr(x), A, R, C);
}
