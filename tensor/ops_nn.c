/* tensor/ops_nn.c — softmax, log_softmax and layer_norm: fused forward kernels; their
 * backward (autograd/derivatives.c) is written in tensor ops so it differentiates again, with
 * layer_norm's input gradient one fused op of its own (layer_norm_backward). */
#include <string.h>

#include "internal.h"

static Tensor *softmax_impl(TensorOpId op, Tensor *x, int dim) {
    const char *name = tensor_op_table[op].name;
    tensor_check_float(name, x);
    if (x->ndim == 0) tensor_fail(name, "needs at least 1 dim");
    dim = tensor_dim_wrap(name, dim, x->ndim);
    int perm[TENSOR_MAX_DIMS];
    int64_t shape[TENSOR_MAX_DIMS], stride[TENSOR_MAX_DIMS];
    for (int i = 0, k = 0; i < x->ndim; i++)
        if (i != dim) perm[k++] = i;
    perm[x->ndim - 1] = dim;
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[perm[i]], stride[i] = x->stride[perm[i]];
    Tensor *c = tensor_contig_raw(tensor_make_view(x, x->ndim, shape, stride, x->offset));
    int64_t cols = x->shape[dim], rows = cols ? tensor_numel(x) / cols : 0;
    Tensor *o = tensor_empty_like(c);
    tensor_be(name, x)->softmax(o, c, rows, cols, op == TENSOR_OP_LOG_SOFTMAX);
    /* permute back: out dim i is o's dim inv[i] */
    int64_t os[TENSOR_MAX_DIMS], ost[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) os[perm[i]] = o->shape[i], ost[perm[i]] = o->stride[i];
    Tensor *out = dim == x->ndim - 1 ? o : tensor_make_view(o, x->ndim, os, ost, 0);
    TensorNode *n = tensor_node_record(op, out, 1, &x);
    if (n) n->iattr[0] = dim;
    return out;
}

Tensor *tensor_softmax(Tensor *x, int dim) { return softmax_impl(TENSOR_OP_SOFTMAX, x, dim); }
Tensor *tensor_log_softmax(Tensor *x, int dim) { return softmax_impl(TENSOR_OP_LOG_SOFTMAX, x, dim); }

/* The number of elements in the last nnorm dims of x; checks w and b (NULL or that shape). */
static int64_t ln_check(const char *name, Tensor *x, int nnorm, Tensor *w, Tensor *b) {
    tensor_check_float(name, x);
    char sx[128], sw[128];
    if (nnorm < 1 || nnorm > x->ndim)
        tensor_fail(name, "cannot normalize the last %d dims of %s", nnorm, tensor_shape_str(x, sx));
    int64_t cols = 1;
    for (int i = x->ndim - nnorm; i < x->ndim; i++) cols *= x->shape[i];
    Tensor *p[2] = {w, b};
    for (int j = 0; j < 2; j++) {
        if (!p[j]) continue;
        tensor_check_same(name, x, p[j]);
        bool ok = p[j]->ndim == nnorm;
        for (int i = 0; ok && i < nnorm; i++) ok = p[j]->shape[i] == x->shape[x->ndim - nnorm + i];
        if (!ok)
            tensor_fail(name, "%s %s does not match the normalized dims of %s", j ? "bias" : "weight",
                        tensor_shape_str(p[j], sw), tensor_shape_str(x, sx));
    }
    return cols;
}

/* the tape node of either layer-norm op, with its normalized width and ε */
static void ln_record(TensorOpId op, Tensor *out, Tensor *in[3], int nnorm, double eps) {
    TensorNode *n = tensor_node_record(op, out, 3, in);
    if (n) {
        n->iattr[0] = nnorm;
        n->fattr[0] = eps;
    }
}

Tensor *tensor_layer_norm(Tensor *x, int nnorm, Tensor *w, Tensor *b, double eps) {
    int64_t cols = ln_check("layer_norm", x, nnorm, w, b);
    Tensor *c = tensor_contig_raw(x);
    Tensor *out = tensor_empty_like(x);
    int64_t rows = cols ? tensor_numel(x) / cols : 0;
    tensor_be("layer_norm", x)->layer_norm(out, c, w ? tensor_contig_raw(w) : NULL, b ? tensor_contig_raw(b) : NULL,
                                           rows, cols, eps);
    Tensor *in[3] = {x, w, b};
    ln_record(TENSOR_OP_LAYER_NORM, out, in, nnorm, eps);
    return out;
}

/* The input gradient of layer_norm (autograd/derivatives.c bw_layer_norm); its own backward
 * (bw_layer_norm_backward) is written in tensor ops, so layer_norm differentiates twice. */
Tensor *tensor_layer_norm_backward(Tensor *g, Tensor *x, int nnorm, Tensor *w, double eps) {
    const char *name = "layer_norm_backward";
    int64_t cols = ln_check(name, x, nnorm, w, NULL);
    tensor_check_same(name, x, g);
    if (!tensor_same_shape(g, x)) {
        char sg[128], sx[128];
        tensor_fail(name, "gradient %s does not match input %s", tensor_shape_str(g, sg), tensor_shape_str(x, sx));
    }
    Tensor *out = tensor_empty_like(x);
    int64_t rows = cols ? tensor_numel(x) / cols : 0;
    const TensorBackend *be = tensor_be(name, x);
    if (!be->layer_norm_backward) tensor_fail(name, "no kernel on this device");
    be->layer_norm_backward(out, tensor_contig_raw(g), tensor_contig_raw(x), w ? tensor_contig_raw(w) : NULL, rows,
                            cols, eps);
    Tensor *in[3] = {g, x, w};
    ln_record(TENSOR_OP_LAYER_NORM_BACKWARD, out, in, nnorm, eps);
    return out;
}
