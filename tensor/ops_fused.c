/* tensor/ops_fused.c — the fused in-place updates of the op table (optim_sgd, optim_adam, gram,
 * lincomb): the optimizer steps and ConFIG's two passes over flat buffers. Each front-end checks
 * that every buffer is a contiguous f32/f64 tensor of the first one's dtype, numel and device,
 * then hands the raw storage to that device's kernel; nothing is allocated or recorded. */
#include <stdio.h>

#include "internal.h"

static _Noreturn void no_kernel(const char *op, const TensorBackend *be) {
    tensor_fail(op, "the %s backend has no %s kernel", be->name, op);
}

/* t (named what) must be a contiguous f32/f64 tensor like ref (same dtype, numel, device) */
static void check_buf(const char *op, const char *what, const Tensor *t, const Tensor *ref) {
    char b1[128], b2[128];
    if (t->dtype != TENSOR_F32 && t->dtype != TENSOR_F64)
        tensor_fail(op, "%s has dtype %s; expected f32 or f64", what, tensor_dtype_name(t->dtype));
    if (!tensor_is_contiguous(t)) tensor_fail(op, "%s %s is not contiguous", what, tensor_shape_str(t, b1));
    if (t->dtype != ref->dtype || tensor_numel(t) != tensor_numel(ref) || tensor_device(t) != tensor_device(ref))
        tensor_fail(op, "%s is %s %s on %s; expected %s with %lld elements on %s like %s", what,
                    tensor_dtype_name(t->dtype), tensor_shape_str(t, b1), tensor_device(t) == TENSOR_CPU ? "cpu" : "cuda",
                    tensor_dtype_name(ref->dtype), (long long)tensor_numel(ref),
                    tensor_device(ref) == TENSOR_CPU ? "cpu" : "cuda", tensor_shape_str(ref, b2));
}

void tensor_optim_sgd_(Tensor *w, const Tensor *g, Tensor *buf, double lr, double momentum, bool nesterov,
                       double weight_decay) {
    const char *op = "optim_sgd";
    check_buf(op, "w", w, w);
    check_buf(op, "g", g, w);
    if (buf) check_buf(op, "buf", buf, w);
    if (momentum != 0 && !buf) tensor_fail(op, "momentum %g needs a momentum buffer", momentum);
    const TensorBackend *be = tensor_be(op, w);
    if (!be->optim_sgd) no_kernel(op, be);
    be->optim_sgd(w->dtype, tensor_numel(w), tensor_data_ptr(w), tensor_data_ptr(g), buf ? tensor_data_ptr(buf) : NULL,
                    lr, momentum, nesterov, weight_decay);
}

void tensor_optim_adam_(Tensor *w, const Tensor *g, Tensor *m, Tensor *v, double beta1, double beta2, double eps,
                        double l2, double decay, double step_size, double bc2_sqrt) {
    const char *op = "optim_adam";
    check_buf(op, "w", w, w);
    check_buf(op, "g", g, w);
    check_buf(op, "m", m, w);
    check_buf(op, "v", v, w);
    const TensorBackend *be = tensor_be(op, w);
    if (!be->optim_adam) no_kernel(op, be);
    be->optim_adam(w->dtype, tensor_numel(w), tensor_data_ptr(w), tensor_data_ptr(g), tensor_data_ptr(m),
                     tensor_data_ptr(v), beta1, beta2, eps, l2, decay, step_size, bc2_sqrt);
}

/* the raw pointers of k ≤ TENSOR_GRAM_MAX_K buffers like x[0] (or like ref when given) */
static void vec_ptrs(const char *op, int k, Tensor *const *x, const Tensor *ref, const void **p) {
    if (k < 1 || k > TENSOR_GRAM_MAX_K) tensor_fail(op, "k = %d; expected 1..%d", k, TENSOR_GRAM_MAX_K);
    for (int i = 0; i < k; i++) {
        char what[32];
        snprintf(what, sizeof what, "vector %d", i);
        check_buf(op, what, x[i], ref ? ref : x[0]);
        p[i] = tensor_data_ptr(x[i]);
    }
}

void tensor_gram(int k, Tensor *const *x, double *dots) {
    const char *op = "gram";
    const void *p[TENSOR_GRAM_MAX_K];
    vec_ptrs(op, k, x, NULL, p);
    const TensorBackend *be = tensor_be(op, x[0]);
    if (!be->gram) no_kernel(op, be);
    be->gram(x[0]->dtype, tensor_numel(x[0]), k, p, dots);
}

void tensor_lincomb_(Tensor *out, int k, const double *coef, Tensor *const *x) {
    const char *op = "lincomb";
    const void *p[TENSOR_GRAM_MAX_K];
    check_buf(op, "out", out, out);
    vec_ptrs(op, k, x, out, p);
    const TensorBackend *be = tensor_be(op, out);
    if (!be->lincomb) no_kernel(op, be);
    be->lincomb(out->dtype, tensor_numel(out), k, coef, p, tensor_data_ptr(out));
}
