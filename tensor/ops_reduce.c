/* tensor/ops_reduce.c — reductions over any set of dims (sum, max, min primitives; mean, var,
 * norm composites; argmax). The kernel sees the input as (A, R, C): R reduced, A and C kept. */
#include <math.h>
#include <string.h>

#include "internal.h"

static void out_shape(const Tensor *x, unsigned mask, bool keepdim, int *nd, int64_t *shape) {
    int k = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (mask & (1u << i)) {
            if (keepdim) shape[k++] = 1;
        } else {
            shape[k++] = x->shape[i];
        }
    }
    *nd = k;
}

/* Brings x into a contiguous (A, R, C) layout for the reduced set `mask`. */
static Tensor *reduce_layout(const Tensor *x, unsigned mask, int64_t *A, int64_t *R, int64_t *C) {
    Tensor *c = tensor_contig_raw(x);
    int first = -1, last = -1;
    for (int i = 0; i < x->ndim; i++)
        if ((mask & (1u << i)) && x->shape[i] != 1) {
            if (first < 0) first = i;
            last = i;
        }
    bool block = true;
    for (int i = first; first >= 0 && i <= last; i++)
        if (!(mask & (1u << i)) && x->shape[i] != 1) block = false;
    if (block) {
        *A = 1, *R = 1, *C = 1;
        if (first < 0) { /* nothing of size > 1 reduced */
            *C = tensor_numel(x);
            return c;
        }
        for (int i = 0; i < first; i++) *A *= x->shape[i];
        for (int i = first; i <= last; i++) *R *= x->shape[i];
        for (int i = last + 1; i < x->ndim; i++) *C *= x->shape[i];
        return c;
    }
    int perm[TENSOR_MAX_DIMS], k = 0;
    int64_t shape[TENSOR_MAX_DIMS], stride[TENSOR_MAX_DIMS];
    *A = 1, *R = 1, *C = 1;
    for (int i = 0; i < x->ndim; i++)
        if (!(mask & (1u << i))) perm[k++] = i, *A *= x->shape[i];
    for (int i = 0; i < x->ndim; i++)
        if (mask & (1u << i)) perm[k++] = i, *R *= x->shape[i];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[perm[i]], stride[i] = x->stride[perm[i]];
    Tensor *p = tensor_make_view(x, x->ndim, shape, stride, x->offset);
    return tensor_contig_raw(p);
}

static Tensor *reduce(TensorOpId op, Tensor *x, int ndims, const int *dims, bool keepdim) {
    const char *name = tensor_op_table[op].name;
    tensor_check_float(name, x);
    unsigned mask = tensor_dim_mask(name, x->ndim, ndims, dims);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS], A, R, C;
    out_shape(x, mask, keepdim, &nd, shape);
    Tensor *l = reduce_layout(x, mask, &A, &R, &C);
    if (R == 0 && op != TENSOR_OP_SUM) {
        char b[128];
        tensor_fail(name, "reduction over an empty dim of %s", tensor_shape_str(x, b));
    }
    Tensor *out = tensor_empty_on(nd, shape, op == TENSOR_OP_ARGMAX ? TENSOR_I64 : x->dtype, tensor_device(x));
    tensor_be(name, x)->reduce(op, out, l, A, R, C);
    if (op != TENSOR_OP_ARGMAX) {
        TensorNode *n = tensor_node_record(op, out, 1, &x);
        if (n) {
            n->iattr[0] = mask;
            n->iattr[1] = keepdim;
        }
    }
    return out;
}

Tensor *tensor_sum(Tensor *x, int ndims, const int *dims, bool keepdim) { return reduce(TENSOR_OP_SUM, x, ndims, dims, keepdim); }
Tensor *tensor_max(Tensor *x, int ndims, const int *dims, bool keepdim) { return reduce(TENSOR_OP_MAX, x, ndims, dims, keepdim); }
Tensor *tensor_min(Tensor *x, int ndims, const int *dims, bool keepdim) { return reduce(TENSOR_OP_MIN, x, ndims, dims, keepdim); }
Tensor *tensor_sum_all(Tensor *x) { return tensor_sum(x, 0, NULL, false); }

static int64_t reduced_count(const Tensor *x, unsigned mask) {
    int64_t r = 1;
    for (int i = 0; i < x->ndim; i++)
        if (mask & (1u << i)) r *= x->shape[i];
    return r;
}

static Tensor *scalar_of(const Tensor *x, double v) {
    Tensor *t = tensor_empty_on(0, NULL, x->dtype, tensor_device(x));
    tensor_be("scalar", x)->fill(t, v);
    return t;
}

Tensor *tensor_mean(Tensor *x, int ndims, const int *dims, bool keepdim) {
    tensor_check_float("mean", x);
    int64_t r = reduced_count(x, tensor_dim_mask("mean", x->ndim, ndims, dims));
    return tensor_mul(tensor_sum(x, ndims, dims, keepdim), scalar_of(x, 1.0 / (double)r));
}
Tensor *tensor_mean_all(Tensor *x) { return tensor_mean(x, 0, NULL, false); }

Tensor *tensor_var(Tensor *x, int ndims, const int *dims, int64_t correction, bool keepdim) {
    tensor_check_float("var", x);
    int64_t r = reduced_count(x, tensor_dim_mask("var", x->ndim, ndims, dims));
    Tensor *d = tensor_sub(x, tensor_mean(x, ndims, dims, true));
    double denom = (double)(r - correction);
    return tensor_mul(tensor_sum(tensor_mul(d, d), ndims, dims, keepdim), scalar_of(x, denom > 0 ? 1.0 / denom : NAN));
}

Tensor *tensor_norm(Tensor *x, double p, int ndims, const int *dims, bool keepdim) {
    tensor_check_float("norm", x);
    if (p == 2) return tensor_sqrt(tensor_sum(tensor_mul(x, x), ndims, dims, keepdim));
    if (p == 1) return tensor_sum(tensor_abs(x), ndims, dims, keepdim);
    if (isinf(p)) return tensor_max(tensor_abs(x), ndims, dims, keepdim);
    if (p <= 0) tensor_fail("norm", "p must be positive, got %g", p);
    Tensor *s = tensor_sum(tensor_pow(tensor_abs(x), scalar_of(x, p)), ndims, dims, keepdim);
    return tensor_pow(s, scalar_of(x, 1.0 / p));
}

Tensor *tensor_argmax(Tensor *x, int dim, bool keepdim) {
    if (dim == TENSOR_ALL_DIMS) {
        Tensor *flat = tensor_reshape(tensor_detach(x), 1, (int64_t[]){tensor_numel(x)});
        return reduce(TENSOR_OP_ARGMAX, flat, 1, (int[]){0}, keepdim);
    }
    return reduce(TENSOR_OP_ARGMAX, x, 1, &dim, keepdim);
}

Tensor *tensor_sum_to(Tensor *x, int ndim, const int64_t *shape) {
    if (ndim > x->ndim) goto bad;
    int dims[TENSOR_MAX_DIMS], k = 0, lead = x->ndim - ndim;
    for (int i = 0; i < x->ndim; i++) {
        if (i < lead) {
            dims[k++] = i;
        } else if (shape[i - lead] != x->shape[i]) {
            if (shape[i - lead] != 1) goto bad;
            dims[k++] = i;
        }
    }
    if (k == 0) return x;
    return tensor_reshape(tensor_sum(x, k, dims, true), ndim, shape);
bad:;
    char a[128], b[128];
    Tensor tmp = {.ndim = ndim};
    if (ndim) memcpy(tmp.shape, shape, sizeof(int64_t) * (size_t)ndim);
    tensor_fail("sum_to", "cannot sum %s down to %s", tensor_shape_str(x, a), tensor_shape_str(&tmp, b));
}
