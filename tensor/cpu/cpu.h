/* tensor/cpu/cpu.h — the CPU backend's kernels (see tensor/backend.h for their contracts). */
#ifndef ANIMA_CPU_H
#define ANIMA_CPU_H

#include "../backend.h"

int cpu_threads_in_team(void);
int cpu_thread_id(void);

void cpu_binary(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b);
void cpu_where(Tensor *out, const Tensor *c, const Tensor *a, const Tensor *b);
void cpu_unary(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1);
void cpu_copy(Tensor *dst, const Tensor *src);
void cpu_cast(Tensor *out, const Tensor *x);
void cpu_fill(Tensor *out, double v);
void cpu_arange(Tensor *out, double start, double step);
void cpu_random(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal);
void cpu_reduce(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C);
void cpu_matmul(Tensor *out, const Tensor *a, const Tensor *b);
void cpu_softmax(Tensor *out, const Tensor *x, int64_t rows, int64_t cols, bool log);
void cpu_layer_norm(Tensor *out, const Tensor *x, const Tensor *w, const Tensor *b, int64_t rows, int64_t cols,
                    double eps);
void cpu_layer_norm_backward(Tensor *out, const Tensor *g, const Tensor *x, const Tensor *w, int64_t rows,
                             int64_t cols, double eps);
void cpu_index_select(Tensor *out, const Tensor *x, const int64_t *index, int64_t A, int64_t N, int64_t K,
                      int64_t C);
void cpu_gather(Tensor *out, const Tensor *x, int dim, const Tensor *index);
void cpu_scatter_add(Tensor *out, int dim, const Tensor *index, const Tensor *src);
void cpu_det3(Tensor *out, const Tensor *x, int64_t n);
void cpu_inv3(Tensor *out, const Tensor *x, int64_t n);
void cpu_attention(const TensorAttentionArgs *a);
void cpu_gru_step(const TensorGruArgs *a);
void cpu_gru_step_backward(const TensorGruArgs *a);
void cpu_attention_backward(const TensorAttentionArgs *a);
void cpu_optim_sgd(TensorDType dt, int64_t n, void *w, const void *g, void *buf, double lr, double mu, bool nesterov,
                   double wd);
void cpu_optim_adam(TensorDType dt, int64_t n, void *w, const void *g, void *m, void *v, double b1, double b2,
                    double eps, double l2, double decay, double step_size, double bc2_sqrt);
void cpu_gram(TensorDType dt, int64_t n, int k, const void *const *x, double *dots);
void cpu_lincomb(TensorDType dt, int64_t n, int k, const double *coef, const void *const *x, void *out);

#endif
