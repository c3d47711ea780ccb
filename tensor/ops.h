/* tensor/ops.h — the ops. Each computes eagerly on the inputs' device and, when grad mode is
 * on and an input requires grad, records a node for autograd/ (see tensor/op_table.h for the
 * list and autograd/derivatives.c for each backward). Binary ops broadcast like NumPy. dtypes
 * must match (no silent promotion); a mismatch aborts naming the op, the shapes and the
 * caller's file:line (the macros at the end record the call site). */
#ifndef ANIMA_TENSOR_OPS_H
#define ANIMA_TENSOR_OPS_H

#include "tensor.h"
#include "op_table.h"

/* ---- views and layout (views share storage; contiguous/cast copy) ----------------------- */
Tensor *tensor_reshape(Tensor *x, int ndim, const int64_t *shape); /* one -1 allowed; copies if needed */
Tensor *tensor_view(Tensor *x, int ndim, const int64_t *shape);    /* like reshape, never copies */
Tensor *tensor_permute(Tensor *x, int ndim, const int *perm);
Tensor *tensor_transpose(Tensor *x, int d0, int d1);
Tensor *tensor_expand(Tensor *x, int ndim, const int64_t *shape); /* -1 keeps a dim */
Tensor *tensor_narrow(Tensor *x, int dim, int64_t start, int64_t length);
Tensor *tensor_slice(Tensor *x, int dim, int64_t start, int64_t end, int64_t step);
/* zeros of `shape` with src written into the slice (dim, start, end, step): slice's adjoint */
Tensor *tensor_slice_scatter(Tensor *src, int ndim, const int64_t *shape, int dim, int64_t start,
                             int64_t end, int64_t step);
Tensor *tensor_squeeze(Tensor *x, int dim);
Tensor *tensor_unsqueeze(Tensor *x, int dim);
Tensor *tensor_flatten(Tensor *x, int start_dim, int end_dim);
Tensor *tensor_contiguous(Tensor *x); /* x itself when already contiguous */
Tensor *tensor_cast(Tensor *x, TensorDType dt);
Tensor *tensor_clone(Tensor *x); /* always a fresh contiguous copy (recorded like contiguous) */

/* ---- broadcasting binary ------------------------------------------------------------------ */
Tensor *tensor_add(Tensor *a, Tensor *b);
Tensor *tensor_sub(Tensor *a, Tensor *b);
Tensor *tensor_mul(Tensor *a, Tensor *b);
Tensor *tensor_div(Tensor *a, Tensor *b);
Tensor *tensor_pow(Tensor *a, Tensor *b);
Tensor *tensor_maximum(Tensor *a, Tensor *b); /* ties split the gradient evenly */
Tensor *tensor_minimum(Tensor *a, Tensor *b);
/* g · gelu'(x) = g (Φ(x) + x φ(x)), the exact (erf) gelu's backward in one pass (aten::gelu_backward) */
Tensor *tensor_gelu_backward(Tensor *g, Tensor *x);
Tensor *tensor_eq(Tensor *a, Tensor *b); /* comparisons give 1/0 in the inputs' dtype */
Tensor *tensor_ne(Tensor *a, Tensor *b);
Tensor *tensor_lt(Tensor *a, Tensor *b);
Tensor *tensor_le(Tensor *a, Tensor *b);
Tensor *tensor_gt(Tensor *a, Tensor *b);
Tensor *tensor_ge(Tensor *a, Tensor *b);
Tensor *tensor_where(Tensor *cond, Tensor *a, Tensor *b); /* cond != 0 picks a */
/* scalar conveniences (a 0-d tensor of x's dtype, then the broadcasting op) */
Tensor *tensor_add_scalar(Tensor *x, double s);
Tensor *tensor_mul_scalar(Tensor *x, double s);
Tensor *tensor_pow_scalar(Tensor *x, double p);
Tensor *tensor_rsub_scalar(Tensor *x, double s); /* s - x */

/* ---- unary -------------------------------------------------------------------------------- */
Tensor *tensor_neg(Tensor *x);
Tensor *tensor_abs(Tensor *x);
Tensor *tensor_sign(Tensor *x);
Tensor *tensor_exp(Tensor *x);
Tensor *tensor_log(Tensor *x);
Tensor *tensor_sqrt(Tensor *x);
Tensor *tensor_rsqrt(Tensor *x);
Tensor *tensor_sin(Tensor *x);
Tensor *tensor_cos(Tensor *x);
Tensor *tensor_tanh(Tensor *x);
Tensor *tensor_sigmoid(Tensor *x);
Tensor *tensor_relu(Tensor *x);
Tensor *tensor_elu(Tensor *x, double alpha);
Tensor *tensor_gelu(Tensor *x);      /* x Φ(x), exact (erf) */
Tensor *tensor_gelu_tanh(Tensor *x); /* tanh approximation */
Tensor *tensor_softplus(Tensor *x, double beta, double threshold); /* PyTorch's: linear above threshold */
Tensor *tensor_erf(Tensor *x);

/* ---- reductions: over `ndims` dims (ndims == 0: all dims) ------------------------------- */
Tensor *tensor_sum(Tensor *x, int ndims, const int *dims, bool keepdim);
Tensor *tensor_mean(Tensor *x, int ndims, const int *dims, bool keepdim);
Tensor *tensor_max(Tensor *x, int ndims, const int *dims, bool keepdim); /* ties share the gradient */
Tensor *tensor_min(Tensor *x, int ndims, const int *dims, bool keepdim);
Tensor *tensor_var(Tensor *x, int ndims, const int *dims, int64_t correction, bool keepdim);
Tensor *tensor_norm(Tensor *x, double p, int ndims, const int *dims, bool keepdim);
Tensor *tensor_argmax(Tensor *x, int dim, bool keepdim); /* i64; dim < -ndim: over all (flat) */
Tensor *tensor_sum_all(Tensor *x);
Tensor *tensor_mean_all(Tensor *x);
/* Sum x down to `shape` (the adjoint of broadcasting to x's shape). */
Tensor *tensor_sum_to(Tensor *x, int ndim, const int64_t *shape);
#define TENSOR_ALL_DIMS (-100)

/* ---- linear algebra ----------------------------------------------------------------------- */
Tensor *tensor_matmul(Tensor *a, Tensor *b); /* torch.matmul semantics, batch dims broadcast */
Tensor *tensor_det3(Tensor *a);              /* (..., 3, 3) -> (...) */
Tensor *tensor_inv3(Tensor *a);              /* (..., 3, 3) -> (..., 3, 3) */

/* ---- normalization ------------------------------------------------------------------------ */
Tensor *tensor_softmax(Tensor *x, int dim);
Tensor *tensor_log_softmax(Tensor *x, int dim);
/* Normalizes over the last `nnorm` dims; weight/bias (shape of those dims) may be NULL. */
Tensor *tensor_layer_norm(Tensor *x, int nnorm, Tensor *weight, Tensor *bias, double eps);
/* layer_norm's input gradient in one pass per row (aten::native_layer_norm_backward's first
 * output): r (ĝ - mean(ĝ) - x̂ mean(ĝ x̂)), ĝ = g w, x̂ = (x - μ) r, r = (σ² + ε)^-1/2 over the
 * last `nnorm` dims, μ and r recomputed as tensor_layer_norm computes them; g has x's shape,
 * weight (shape of those dims) may be NULL. */
Tensor *tensor_layer_norm_backward(Tensor *g, Tensor *x, int nnorm, Tensor *weight, double eps);

/* ---- joining and indexing (index tensors are i64) ----------------------------------------- */
Tensor *tensor_cat(int n, Tensor *const *xs, int dim);
Tensor *tensor_stack(int n, Tensor *const *xs, int dim);
/* Chunks of `size` along dim (the last may be shorter) into out[]; returns how many. */
int tensor_split(Tensor *x, int64_t size, int dim, Tensor **out, int max_out);
Tensor *tensor_index_select(Tensor *x, int dim, Tensor *index);
Tensor *tensor_gather(Tensor *x, int dim, Tensor *index);
Tensor *tensor_scatter_add(Tensor *x, int dim, Tensor *index, Tensor *src);

/* ---- fused updates (op table: optim_sgd, optim_adam, gram, lincomb) -------------------------
 * The optimizer's and ConFIG's passes over flat buffers, on the buffers' device (the backend's
 * kernels: tensor/cpu/cpu_optim.c, tensor/cuda/cuda_optim.cu). Every tensor is contiguous,
 * f32 or f64, of one dtype, numel and device; updates are in place and never recorded. Each
 * element is computed in double and rounded once on store. optim/optim.c states the rules. */
#define TENSOR_GRAM_MAX_K 16 /* most vectors of one gram / lincomb */
/* torch.optim.SGD (dampening 0); buf NULL when momentum is 0 */
void tensor_optim_sgd_(Tensor *w, const Tensor *g, Tensor *buf, double lr, double momentum, bool nesterov,
                       double weight_decay);
/* torch.optim.Adam (l2: weight decay folded into g) / AdamW (decay = 1 − lr·λ applied to w
 * first); step_size = lr / (1 − β1^t), bc2_sqrt = √(1 − β2^t) */
void tensor_optim_adam_(Tensor *w, const Tensor *g, Tensor *m, Tensor *v, double beta1, double beta2, double eps,
                        double l2, double decay, double step_size, double bc2_sqrt);
/* The k(k+1)/2 inner products x_a·x_b (a ≤ b, packed row by row) of k ≤ TENSOR_GRAM_MAX_K
 * vectors, accumulated in double, into host memory. */
void tensor_gram(int k, Tensor *const *x, double *dots);
/* out = Σ_i coef[i]·x_i in double, rounded once; out may be one of the x_i. */
void tensor_lincomb_(Tensor *out, int k, const double *coef, Tensor *const *x);

/* ---- call-site recording -------------------------------------------------------------------
 * In user code each op name is a macro that records __FILE__/__LINE__ before the call, so an
 * error names the user's line. Library code compiles with TENSOR_NO_SITE and calls directly. */
#ifndef TENSOR_NO_SITE
#define TENSOR_AT_(fn, ...) (tensor_site_set(__FILE__, __LINE__), (fn)(__VA_ARGS__))
#define tensor_reshape(...) TENSOR_AT_(tensor_reshape, __VA_ARGS__)
#define tensor_view(...) TENSOR_AT_(tensor_view, __VA_ARGS__)
#define tensor_permute(...) TENSOR_AT_(tensor_permute, __VA_ARGS__)
#define tensor_transpose(...) TENSOR_AT_(tensor_transpose, __VA_ARGS__)
#define tensor_expand(...) TENSOR_AT_(tensor_expand, __VA_ARGS__)
#define tensor_narrow(...) TENSOR_AT_(tensor_narrow, __VA_ARGS__)
#define tensor_slice(...) TENSOR_AT_(tensor_slice, __VA_ARGS__)
#define tensor_slice_scatter(...) TENSOR_AT_(tensor_slice_scatter, __VA_ARGS__)
#define tensor_squeeze(...) TENSOR_AT_(tensor_squeeze, __VA_ARGS__)
#define tensor_unsqueeze(...) TENSOR_AT_(tensor_unsqueeze, __VA_ARGS__)
#define tensor_flatten(...) TENSOR_AT_(tensor_flatten, __VA_ARGS__)
#define tensor_cast(...) TENSOR_AT_(tensor_cast, __VA_ARGS__)
#define tensor_add(...) TENSOR_AT_(tensor_add, __VA_ARGS__)
#define tensor_sub(...) TENSOR_AT_(tensor_sub, __VA_ARGS__)
#define tensor_mul(...) TENSOR_AT_(tensor_mul, __VA_ARGS__)
#define tensor_div(...) TENSOR_AT_(tensor_div, __VA_ARGS__)
#define tensor_pow(...) TENSOR_AT_(tensor_pow, __VA_ARGS__)
#define tensor_maximum(...) TENSOR_AT_(tensor_maximum, __VA_ARGS__)
#define tensor_minimum(...) TENSOR_AT_(tensor_minimum, __VA_ARGS__)
#define tensor_gelu_backward(...) TENSOR_AT_(tensor_gelu_backward, __VA_ARGS__)
#define tensor_eq(...) TENSOR_AT_(tensor_eq, __VA_ARGS__)
#define tensor_ne(...) TENSOR_AT_(tensor_ne, __VA_ARGS__)
#define tensor_lt(...) TENSOR_AT_(tensor_lt, __VA_ARGS__)
#define tensor_le(...) TENSOR_AT_(tensor_le, __VA_ARGS__)
#define tensor_gt(...) TENSOR_AT_(tensor_gt, __VA_ARGS__)
#define tensor_ge(...) TENSOR_AT_(tensor_ge, __VA_ARGS__)
#define tensor_where(...) TENSOR_AT_(tensor_where, __VA_ARGS__)
#define tensor_sum(...) TENSOR_AT_(tensor_sum, __VA_ARGS__)
#define tensor_mean(...) TENSOR_AT_(tensor_mean, __VA_ARGS__)
#define tensor_max(...) TENSOR_AT_(tensor_max, __VA_ARGS__)
#define tensor_min(...) TENSOR_AT_(tensor_min, __VA_ARGS__)
#define tensor_var(...) TENSOR_AT_(tensor_var, __VA_ARGS__)
#define tensor_norm(...) TENSOR_AT_(tensor_norm, __VA_ARGS__)
#define tensor_argmax(...) TENSOR_AT_(tensor_argmax, __VA_ARGS__)
#define tensor_sum_to(...) TENSOR_AT_(tensor_sum_to, __VA_ARGS__)
#define tensor_matmul(...) TENSOR_AT_(tensor_matmul, __VA_ARGS__)
#define tensor_det3(...) TENSOR_AT_(tensor_det3, __VA_ARGS__)
#define tensor_inv3(...) TENSOR_AT_(tensor_inv3, __VA_ARGS__)
#define tensor_softmax(...) TENSOR_AT_(tensor_softmax, __VA_ARGS__)
#define tensor_log_softmax(...) TENSOR_AT_(tensor_log_softmax, __VA_ARGS__)
#define tensor_layer_norm(...) TENSOR_AT_(tensor_layer_norm, __VA_ARGS__)
#define tensor_layer_norm_backward(...) TENSOR_AT_(tensor_layer_norm_backward, __VA_ARGS__)
#define tensor_cat(...) TENSOR_AT_(tensor_cat, __VA_ARGS__)
#define tensor_stack(...) TENSOR_AT_(tensor_stack, __VA_ARGS__)
#define tensor_split(...) TENSOR_AT_(tensor_split, __VA_ARGS__)
#define tensor_index_select(...) TENSOR_AT_(tensor_index_select, __VA_ARGS__)
#define tensor_gather(...) TENSOR_AT_(tensor_gather, __VA_ARGS__)
#define tensor_scatter_add(...) TENSOR_AT_(tensor_scatter_add, __VA_ARGS__)
#define tensor_optim_sgd_(...) TENSOR_AT_(tensor_optim_sgd_, __VA_ARGS__)
#define tensor_optim_adam_(...) TENSOR_AT_(tensor_optim_adam_, __VA_ARGS__)
#define tensor_gram(...) TENSOR_AT_(tensor_gram, __VA_ARGS__)
#define tensor_lincomb_(...) TENSOR_AT_(tensor_lincomb_, __VA_ARGS__)
#endif

#endif
