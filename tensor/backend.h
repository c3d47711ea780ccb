/* tensor/backend.h — the kernels a device provides. The op front-ends (tensor/ops_*.c) check
 * shapes and dtypes, allocate outputs and bring the inputs into the layout a kernel expects;
 * a kernel only computes. Every kernel writes a contiguous `out`. Inputs may be strided
 * unless the comment says "contiguous". A backend leaves a kernel NULL when it lacks it; the
 * front-end then fails naming the op and the device. bf16 tensors reach only copy, cast
 * (to and from f32), fill and matmul (bf16 a and b, f32 out), and the attention kernels; the
 * front-ends stop them before any other kernel (tensor_check_bf16). */
#ifndef ANIMA_TENSOR_BACKEND_H
#define ANIMA_TENSOR_BACKEND_H

#include "op_table.h"
#include "tensor.h"

#define TENSOR_ATTENTION_MAX_D 128 /* largest head dim of the fused attention kernels */

/* One multi-head attention problem, softmax(scale · Q Kᵀ) V per (batch, head): q (B, Tq, h·d),
 * k and v (B, Tk, h·d), given by their first element, batch stride and row stride (elements;
 * unit last stride), so the narrow views of a fused qkv projection are read in place. */
typedef struct TensorAttentionArgs {
    /* f32 or f64; or bf16: q, k, v and the gradients gq, gk, gv in bf16, o, lse and go in f32,
     * every product and the softmax computed in f32 */
    TensorDType dtype;
    const void *q, *k, *v;
    int64_t sq0, sq1, sk0, sk1, sv0, sv1;
    int64_t B, Tq, Tk, h, d;
    double scale;
    int bq, bk;         /* the CPU kernels' query and key tile sizes (0: their defaults; the CUDA
                         * kernels use their own) */
    void *o, *lse;      /* forward writes: o (B, Tq, h·d) contiguous, lse (B, h, Tq) */
    const void *go;     /* backward reads dO (B, Tq, h·d) contiguous, with o and lse */
    void *gq, *gk, *gv; /* backward writes every element: contiguous (B, Tq|Tk, h·d) */
} TensorAttentionArgs;

/* One GRU step over a batch of B rows (nn/gru.c's fused layer; PyTorch's gate order r, z, n):
 *   r = σ(gi_r + b_ir + gh_r + b_hr), z = σ(gi_z + b_iz + gh_z + b_hz),
 *   n = tanh(gi_n + b_in + r ∘ (gh_n + b_hn)),  h' = n + z ∘ (h − n),
 * gi = x W_ihᵀ and gh = h W_hhᵀ (B, 3H) without their biases. Every matrix is given by its first
 * element and row stride (elements; unit last stride), so the steps of one (B, T, ·) buffer are
 * read and written in place. */
typedef struct TensorGruArgs {
    TensorDType dtype; /* f32 or f64 */
    int64_t B, H;
    const void *gi, *gh, *h;  /* (B, 3H), (B, 3H), (B, H): rows sgi, sgh, sh apart */
    const void *b_ih, *b_hh;  /* (3H) contiguous, or NULL */
    int64_t sgi, sgh, sh;
    void *h_out, *gates, *ghn; /* forward writes h' (B, H), the gates r, z, n (B, 3H) and */
    int64_t sout, sgates, sghn; /* ghn = gh_n + b_hn (B, H), which backward reads with h */
    /* backward: dy (B, H) the gradient of h' from the layer's output (rows sdy apart) and dcarry
     * (B, H) contiguous the one from the next step (NULL at the last); writes dgi, dgh (B, 3H),
     * the gradients of gi and gh (biases included), and dh (B, H) contiguous, h's gradient
     * through h' alone (z ∘ dh'; the caller adds dgh W_hh) */
    const void *dy, *dcarry;
    int64_t sdy, sdgi, sdgh;
    void *dgi, *dgh, *dh;
} TensorGruArgs;

typedef struct TensorBackend {
    const char *name;
    void *(*alloc)(size_t nbytes);
    void (*release)(void *p);
    /* dst (any layout) = src (same shape, same dtype; src may have stride-0 dims) */
    void (*copy)(Tensor *dst, const Tensor *src);
    /* host <-> device for contiguous bytes */
    void (*to_host)(void *dst, const void *src, size_t nbytes);
    void (*from_host)(void *dst, const void *src, size_t nbytes);
    void (*cast)(Tensor *out, const Tensor *x);  /* x contiguous */
    void (*fill)(Tensor *out, double value);
    void (*arange)(Tensor *out, double start, double step);
    void (*random)(Tensor *out, uint64_t seed, uint64_t stream, uint64_t offset, bool normal);
    /* a and b already expanded to out's shape (stride 0 on broadcast dims) */
    void (*binary)(TensorOpId op, Tensor *out, const Tensor *a, const Tensor *b);
    void (*where)(Tensor *out, const Tensor *cond, const Tensor *a, const Tensor *b);
    /* x contiguous, same numel as out; p0/p1: elu alpha, softplus beta/threshold */
    void (*unary)(TensorOpId op, Tensor *out, const Tensor *x, double p0, double p1);
    /* x contiguous seen as (A, R, C); out (A, C). op: SUM, MAX, MIN, ARGMAX (out i64) */
    void (*reduce)(TensorOpId op, Tensor *out, const Tensor *x, int64_t A, int64_t R, int64_t C);
    /* a (B..., n, k), b (B..., k, m) with batch dims expanded to out's (B..., n, m);
     * the last two dims of a and b may be row- or column-major. */
    void (*matmul)(Tensor *out, const Tensor *a, const Tensor *b);
    /* x contiguous (rows, cols), softmax over cols */
    void (*softmax)(Tensor *out, const Tensor *x, int64_t rows, int64_t cols, bool log);
    void (*layer_norm)(Tensor *out, const Tensor *x, const Tensor *w, const Tensor *b,
                       int64_t rows, int64_t cols, double eps); /* x contiguous; w/b NULL or contiguous */
    /* layer_norm's input gradient (tensor_layer_norm_backward): g, x contiguous (rows, cols),
     * w NULL or contiguous (cols) */
    void (*layer_norm_backward)(Tensor *out, const Tensor *g, const Tensor *x, const Tensor *w,
                                int64_t rows, int64_t cols, double eps);
    /* x contiguous (A, N, C) -> out (A, K, C) picking index[K] along N */
    void (*index_select)(Tensor *out, const Tensor *x, const int64_t *index, int64_t A, int64_t N,
                         int64_t K, int64_t C);
    /* gather / scatter-add along dim of contiguous tensors (index has out's/src's shape) */
    void (*gather)(Tensor *out, const Tensor *x, int dim, const Tensor *index);
    void (*scatter_add)(Tensor *out, int dim, const Tensor *index, const Tensor *src); /* out += */
    void (*det3)(Tensor *out, const Tensor *x, int64_t n); /* x contiguous (n, 3, 3) */
    void (*inv3)(Tensor *out, const Tensor *x, int64_t n);

    /* ---- fused kernels of the layers above (op table: attention, optim_sgd, optim_adam,
     * gram, lincomb) ----------------------------------------------------------------------------
     * Every backend has them (the CPU's: tensor/cpu/cpu_attention.c, tensor/cpu/cpu_optim.c);
     * a device backend may leave them NULL, and the layers above then refuse its tensors. */
    /* nn_attention_tiled's forward: o and lse from q, k, v (TensorAttentionArgs above) */
    void (*attention)(const TensorAttentionArgs *a);
    /* its backward: gq, gk, gv from q, k, v, o, lse and go */
    void (*attention_backward)(const TensorAttentionArgs *a);
    /* nn_gru_forward's fused layer: one step's gates, and their backward (TensorGruArgs); a
     * backend without them gets the GRU composed of tensor ops */
    void (*gru_step)(const TensorGruArgs *a);
    void (*gru_step_backward)(const TensorGruArgs *a);
    /* The optimizer steps and ConFIG's two passes, every backend (the CPU's in tensor/cpu/
     * cpu_optim.c), reached through tensor_optim_sgd_, tensor_optim_adam_, tensor_gram and
     * tensor_lincomb_ (tensor/ops.h), which check the buffers.
     * optim/optim.c's update rules over contiguous flat buffers of n elements of dtype dt
     * (f32/f64), each element computed in double and rounded once on store like the CPU loops.
     * sgd: buf NULL when momentum is 0. */
    void (*optim_sgd)(TensorDType dt, int64_t n, void *w, const void *g, void *buf, double lr, double mu,
                      bool nesterov, double wd);
    void (*optim_adam)(TensorDType dt, int64_t n, void *w, const void *g, void *m, void *v, double b1, double b2,
                       double eps, double l2, double decay, double step_size, double bc2_sqrt);
    /* The k(k+1)/2 inner products x_a·x_b (a ≤ b, packed row by row) of k ≤ 16 (TENSOR_GRAM_MAX_K) contiguous
     * vectors, accumulated in double, into host memory (synchronizes). */
    void (*gram)(TensorDType dt, int64_t n, int k, const void *const *x, double *dots);
    /* out = Σ_i coef[i]·x_i, in double from 0, rounded once; out may be one of the x_i. */
    void (*lincomb)(TensorDType dt, int64_t n, int k, const double *coef, const void *const *x, void *out);
} TensorBackend;

extern const TensorBackend tensor_backend_cpu;
const TensorBackend *tensor_backend_for(TensorDevice dev); /* aborts if the device is absent */
/* Tests only: from now on CPU tensors dispatch to be (NULL: tensor_backend_cpu again); returns
 * the previous table. tests/test_backend_ops.c installs deliberately wrong copies of the CPU
 * table to show that its parity comparison fails on a broken kernel. What builds on the CPU
 * table directly (the constructors, random draws) keeps tensor_backend_cpu. */
const TensorBackend *tensor_backend_cpu_replace(const TensorBackend *be);
/* Set by tensor/cuda when compiled in and a device answers; NULL otherwise. */
const TensorBackend *tensor_backend_cuda(void);
/* The CUDA backend's caching pool calls fn on every block it hands out again (NULL: none); the
 * CUDA emulator installs its re-poisoning here (tools/cuemu/runtime.cpp). A no-op without CUDA. */
void tensor_cuda_set_recycle_hook(void (*fn)(void *p, size_t n));

#endif
