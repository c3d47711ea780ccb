/* tensor/ops_index.c — cat, stack, split, index_select, gather, scatter_add. */
#include <string.h>

#include "internal.h"

Tensor *tensor_cat(int n, Tensor *const *xs, int dim) {
    if (n < 1 || n > TENSOR_MAX_INPUTS) tensor_fail("cat", "needs 1..%d tensors, got %d", TENSOR_MAX_INPUTS, n);
    const Tensor *x0 = xs[0];
    dim = tensor_dim_wrap("cat", dim, x0->ndim);
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, x0->shape, sizeof shape);
    shape[dim] = 0;
    for (int i = 0; i < n; i++) {
        tensor_check_same("cat", x0, xs[i]);
        bool ok = xs[i]->ndim == x0->ndim;
        for (int d = 0; ok && d < x0->ndim; d++) ok = d == dim || xs[i]->shape[d] == x0->shape[d];
        if (!ok) {
            char a[128], b[128];
            tensor_fail("cat", "tensor %d has shape %s, incompatible with %s along dim %d", i,
                        tensor_shape_str(xs[i], a), tensor_shape_str(x0, b), dim);
        }
        shape[dim] += xs[i]->shape[dim];
    }
    Tensor *out = tensor_empty_on(x0->ndim, shape, x0->dtype, tensor_device(x0));
    const TensorBackend *be = tensor_be("cat", x0);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int64_t vs[TENSOR_MAX_DIMS];
        memcpy(vs, out->shape, sizeof vs);
        vs[dim] = xs[i]->shape[dim];
        Tensor *v = tensor_make_view(out, out->ndim, vs, out->stride, at * out->stride[dim]);
        be->copy(v, xs[i]);
        at += vs[dim];
    }
    TensorNode *node = tensor_node_record(TENSOR_OP_CAT, out, n, xs);
    if (node) node->iattr[0] = dim;
    return out;
}

Tensor *tensor_stack(int n, Tensor *const *xs, int dim) {
    if (n < 1 || n > TENSOR_MAX_INPUTS) tensor_fail("stack", "needs 1..%d tensors, got %d", TENSOR_MAX_INPUTS, n);
    if (dim < 0) dim += xs[0]->ndim + 1;
    Tensor *u[TENSOR_MAX_INPUTS];
    for (int i = 0; i < n; i++) u[i] = tensor_unsqueeze(xs[i], dim);
    return tensor_cat(n, u, dim);
}

int tensor_split(Tensor *x, int64_t size, int dim, Tensor **out, int max_out) {
    dim = tensor_dim_wrap("split", dim, x->ndim);
    if (size <= 0) tensor_fail("split", "chunk size must be positive, got %lld", (long long)size);
    int k = 0;
    for (int64_t s = 0; s < x->shape[dim]; s += size) {
        if (k >= max_out) tensor_fail("split", "more than %d chunks", max_out);
        int64_t len = x->shape[dim] - s < size ? x->shape[dim] - s : size;
        out[k++] = tensor_narrow(x, dim, s, len);
    }
    return k;
}

static void check_index(const char *op, const Tensor *index) {
    if (index->dtype != TENSOR_I64) tensor_fail(op, "index must be i64, got %s", tensor_dtype_name(index->dtype));
}

/* Indices are validated on the host (a copy when they live on a GPU); the kernel reads them
 * on the data's device. Either device is accepted for the index itself. */
static const int64_t *index_host(Tensor *ic) { return tensor_i64(tensor_to(ic, TENSOR_CPU)); }
static Tensor *index_on(Tensor *ic, const Tensor *x) { return tensor_to(ic, tensor_device(x)); }

Tensor *tensor_index_select(Tensor *x, int dim, Tensor *index) {
    check_index("index_select", index);
    dim = tensor_dim_wrap("index_select", dim, x->ndim);
    if (index->ndim != 1) {
        char b[128];
        tensor_fail("index_select", "index must be 1-D, got %s", tensor_shape_str(index, b));
    }
    Tensor *ic = tensor_contig_raw(index);
    const int64_t *idx = index_host(ic);
    int64_t K = index->shape[0], N = x->ndim ? x->shape[dim] : 1, A = 1, C = 1;
    for (int64_t i = 0; i < K; i++)
        if (idx[i] < 0 || idx[i] >= N)
            tensor_fail("index_select", "index %lld out of range [0, %lld)", (long long)idx[i], (long long)N);
    for (int i = 0; i < dim; i++) A *= x->shape[i];
    for (int i = dim + 1; i < x->ndim; i++) C *= x->shape[i];
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    if (x->ndim) shape[dim] = K;
    Tensor *out = tensor_empty_on(x->ndim, shape, x->dtype, tensor_device(x));
    ic = index_on(ic, x);
    tensor_be("index_select", x)->index_select(out, tensor_contig_raw(x), tensor_data_ptr(ic), A, N, K, C);
    TensorNode *n = tensor_node_record(TENSOR_OP_INDEX_SELECT, out, 1, &x);
    if (n) {
        n->iattr[0] = dim;
        n->saved = ic;
    }
    return out;
}

static void check_gather_shapes(const char *op, const Tensor *x, int dim, const Tensor *index, const Tensor *src) {
    char a[128], b[128];
    bool ok = index->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++) ok = d == dim || index->shape[d] <= x->shape[d];
    if (src) {
        ok = ok && src->ndim == index->ndim;
        for (int d = 0; ok && d < index->ndim; d++) ok = index->shape[d] <= src->shape[d];
    }
    if (!ok) tensor_fail(op, "index %s does not fit %s along dim %d", tensor_shape_str(index, a), tensor_shape_str(x, b), dim);
    const int64_t *idx = index_host(tensor_contig_raw(index));
    int64_t n = tensor_numel(index), lim = x->shape[dim];
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= lim)
            tensor_fail(op, "index %lld out of range [0, %lld)", (long long)idx[i], (long long)lim);
}

Tensor *tensor_gather(Tensor *x, int dim, Tensor *index) {
    check_index("gather", index);
    dim = tensor_dim_wrap("gather", dim, x->ndim);
    check_gather_shapes("gather", x, dim, index, NULL);
    Tensor *ic = index_on(tensor_contig_raw(index), x);
    Tensor *out = tensor_empty_on(index->ndim, index->shape, x->dtype, tensor_device(x));
    tensor_be("gather", x)->gather(out, tensor_contig_raw(x), dim, ic);
    TensorNode *n = tensor_node_record(TENSOR_OP_GATHER, out, 1, &x);
    if (n) {
        n->iattr[0] = dim;
        n->saved = ic;
    }
    return out;
}

Tensor *tensor_scatter_add(Tensor *x, int dim, Tensor *index, Tensor *src) {
    check_index("scatter_add", index);
    tensor_check_same("scatter_add", x, src);
    dim = tensor_dim_wrap("scatter_add", dim, x->ndim);
    check_gather_shapes("scatter_add", x, dim, index, src);
    Tensor *ic = index_on(tensor_contig_raw(index), x);
    Tensor *out = tensor_empty_like(x);
    const TensorBackend *be = tensor_be("scatter_add", x);
    be->copy(out, x);
    Tensor *sv = src;
    if (!tensor_same_shape(src, index)) /* torch uses only the index-shaped corner of src */
        sv = tensor_make_view(src, src->ndim, index->shape, src->stride, src->offset);
    be->scatter_add(out, dim, ic, tensor_contig_raw(sv));
    Tensor *in[2] = {x, src};
    TensorNode *n = tensor_node_record(TENSOR_OP_SCATTER_ADD, out, 2, in);
    if (n) {
        n->iattr[0] = dim;
        n->saved = ic;
    }
    return out;
}
