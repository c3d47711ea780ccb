/* tensor/ops_view.c — views (reshape, permute, expand, slice, ...), contiguous and cast. Views
 * share storage with their input; a reshape that no strides can express copies. */
#include <string.h>

#include "internal.h"

/* ---- shape helpers -------------------------------------------------------------------------- */

int tensor_broadcast_shape(const char *op, const Tensor *a, const Tensor *b, int64_t *out) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int ia = a->ndim - n + i, ib = b->ndim - n + i;
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char x[128], y[128];
            tensor_fail(op, "shapes %s and %s do not broadcast", tensor_shape_str(a, x), tensor_shape_str(b, y));
        }
        out[i] = sa == 1 ? sb : sa;
    }
    return n;
}

Tensor *tensor_expand_raw(const Tensor *x, int ndim, const int64_t *shape) {
    int64_t stride[TENSOR_MAX_DIMS];
    if (ndim < x->ndim) goto bad;
    for (int i = 0; i < ndim; i++) {
        int ix = x->ndim - ndim + i;
        int64_t sx = ix >= 0 ? x->shape[ix] : 1;
        if (sx == shape[i]) stride[i] = ix >= 0 ? x->stride[ix] : 0;
        else if (sx == 1) stride[i] = 0;
        else goto bad;
    }
    return tensor_make_view(x, ndim, shape, stride, x->offset);
bad:;
    char a[128];
    Tensor tmp = {.ndim = ndim};
    if (ndim) memcpy(tmp.shape, shape, sizeof(int64_t) * (size_t)ndim);
    char b[128];
    tensor_fail("expand", "cannot expand %s to %s", tensor_shape_str(x, a), tensor_shape_str(&tmp, b));
}

Tensor *tensor_contig_raw(const Tensor *x) {
    if (tensor_is_contiguous(x)) return (Tensor *)x;
    Tensor *o = tensor_empty_like(x);
    tensor_be("contiguous", x)->copy(o, x);
    return o;
}

/* Strides expressing x as `shape` without a copy, after PyTorch's rule: the new shape must
 * split or merge only dims that are contiguous with each other. Returns false when impossible. */
static bool view_strides(const Tensor *x, int ndim, const int64_t *shape, int64_t *stride) {
    int64_t oshape[TENSOR_MAX_DIMS], ostride[TENSOR_MAX_DIMS];
    int on = x->ndim;
    if (on) memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)on);
    if (on) memcpy(ostride, x->stride, sizeof(int64_t) * (size_t)on);
    if (on == 0) on = 1, oshape[0] = 1, ostride[0] = 1;
    if (tensor_numel(x) == 0) {
        tensor_contig_strides(ndim, shape, stride);
        return true;
    }
    int vd = ndim - 1;
    int64_t base = ostride[on - 1], tnum = 1, vnum = 1;
    for (int td = on - 1; td >= 0; td--) {
        tnum *= oshape[td];
        if (td == 0 || (oshape[td - 1] != 1 && ostride[td - 1] != tnum * base)) {
            while (vd >= 0 && (vnum < tnum || shape[vd] == 1)) {
                stride[vd] = vnum * base;
                vnum *= shape[vd];
                vd--;
            }
            if (vnum != tnum) return false;
            if (td > 0) {
                base = ostride[td - 1];
                tnum = 1;
                vnum = 1;
            }
        }
    }
    return vd == -1;
}

static void resolve_shape(const char *op, const Tensor *x, int ndim, const int64_t *in, int64_t *out) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) tensor_fail(op, "%d dims (at most %d)", ndim, TENSOR_MAX_DIMS);
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        out[i] = in[i];
        if (in[i] == -1) {
            if (infer >= 0) tensor_fail(op, "more than one -1 in the target shape");
            infer = i;
        } else if (in[i] < 0) {
            tensor_fail(op, "negative size %lld", (long long)in[i]);
        } else {
            known *= in[i];
        }
    }
    int64_t n = tensor_numel(x);
    if (infer >= 0) out[infer] = known ? n / known : 0;
    int64_t total = 1;
    for (int i = 0; i < ndim; i++) total *= out[i];
    if (total != n) {
        char a[128], b[128];
        Tensor tmp = {.ndim = ndim};
        if (ndim) memcpy(tmp.shape, out, sizeof(int64_t) * (size_t)ndim);
        if (infer >= 0) tmp.shape[infer] = -1;
        tensor_fail(op, "cannot reshape %s (%lld elements) to %s", tensor_shape_str(x, a), (long long)n,
                    tensor_shape_str(&tmp, b));
    }
}

static Tensor *reshape_impl(const char *op, Tensor *x, int ndim, const int64_t *shape_in, bool may_copy) {
    int64_t shape[TENSOR_MAX_DIMS], stride[TENSOR_MAX_DIMS];
    resolve_shape(op, x, ndim, shape_in, shape);
    Tensor *out;
    if (view_strides(x, ndim, shape, stride)) {
        out = tensor_make_view(x, ndim, shape, stride, x->offset);
    } else {
        if (!may_copy) {
            char a[128];
            tensor_fail(op, "%s is not viewable with that shape (use tensor_reshape, which copies)",
                        tensor_shape_str(x, a));
        }
        Tensor *c = tensor_contig_raw(x);
        tensor_contig_strides(ndim, shape, stride);
        out = tensor_make_view(c, ndim, shape, stride, c->offset);
    }
    TensorNode *n = tensor_node_record(TENSOR_OP_RESHAPE, out, 1, &x);
    if (n) {
        n->iattr[0] = x->ndim;
        if (x->ndim) memcpy(&n->iattr[1], x->shape, sizeof(int64_t) * (size_t)x->ndim);
    }
    return out;
}

Tensor *tensor_reshape(Tensor *x, int ndim, const int64_t *shape) { return reshape_impl("reshape", x, ndim, shape, true); }
Tensor *tensor_view(Tensor *x, int ndim, const int64_t *shape) { return reshape_impl("view", x, ndim, shape, false); }

Tensor *tensor_permute(Tensor *x, int ndim, const int *perm) {
    if (ndim != x->ndim) {
        char a[128];
        tensor_fail("permute", "%d dims given for a tensor of shape %s", ndim, tensor_shape_str(x, a));
    }
    int64_t shape[TENSOR_MAX_DIMS] = {0}, stride[TENSOR_MAX_DIMS] = {0};
    unsigned seen = 0;
    for (int i = 0; i < ndim; i++) {
        int d = tensor_dim_wrap("permute", perm[i], ndim);
        if (seen & (1u << d)) tensor_fail("permute", "dim %d repeated", d);
        seen |= 1u << d;
        shape[i] = x->shape[d];
        stride[i] = x->stride[d];
    }
    Tensor *out = tensor_make_view(x, ndim, shape, stride, x->offset);
    TensorNode *n = tensor_node_record(TENSOR_OP_PERMUTE, out, 1, &x);
    if (n) {
        n->iattr[0] = ndim;
        for (int i = 0; i < ndim; i++) n->iattr[1 + i] = tensor_dim_wrap("permute", perm[i], ndim);
    }
    return out;
}

Tensor *tensor_transpose(Tensor *x, int d0, int d1) {
    int perm[TENSOR_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) perm[i] = i;
    d0 = tensor_dim_wrap("transpose", d0, x->ndim);
    d1 = tensor_dim_wrap("transpose", d1, x->ndim);
    perm[d0] = d1;
    perm[d1] = d0;
    return tensor_permute(x, x->ndim, perm);
}

Tensor *tensor_expand(Tensor *x, int ndim, const int64_t *shape_in) {
    int64_t shape[TENSOR_MAX_DIMS];
    if (ndim < x->ndim || ndim > TENSOR_MAX_DIMS) {
        char a[128];
        tensor_fail("expand", "cannot expand %s to %d dims", tensor_shape_str(x, a), ndim);
    }
    for (int i = 0; i < ndim; i++) {
        int ix = x->ndim - ndim + i;
        shape[i] = shape_in[i] == -1 && ix >= 0 ? x->shape[ix] : shape_in[i];
    }
    Tensor *out = tensor_expand_raw(x, ndim, shape);
    TensorNode *n = tensor_node_record(TENSOR_OP_EXPAND, out, 1, &x);
    if (n) {
        n->iattr[0] = x->ndim;
        if (x->ndim) memcpy(&n->iattr[1], x->shape, sizeof(int64_t) * (size_t)x->ndim);
    }
    return out;
}

static void slice_bounds(const char *op, const Tensor *x, int dim, int64_t *start, int64_t *end, int64_t step) {
    int64_t len = x->shape[dim];
    if (step <= 0) tensor_fail(op, "step must be positive, got %lld", (long long)step);
    if (*start < 0) *start += len;
    if (*end < 0) *end += len;
    if (*start < 0) *start = 0;
    if (*end > len) *end = len;
    if (*start > len) *start = len;
    if (*end < *start) *end = *start;
}

Tensor *tensor_slice(Tensor *x, int dim, int64_t start, int64_t end, int64_t step) {
    dim = tensor_dim_wrap("slice", dim, x->ndim);
    slice_bounds("slice", x, dim, &start, &end, step);
    int64_t shape[TENSOR_MAX_DIMS], stride[TENSOR_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    memcpy(stride, x->stride, sizeof stride);
    shape[dim] = (end - start + step - 1) / step;
    stride[dim] = x->stride[dim] * step;
    Tensor *out = tensor_make_view(x, x->ndim, shape, stride, x->offset + start * x->stride[dim]);
    TensorNode *n = tensor_node_record(TENSOR_OP_SLICE, out, 1, &x);
    if (n) {
        n->iattr[0] = x->ndim;
        if (x->ndim) memcpy(&n->iattr[1], x->shape, sizeof(int64_t) * (size_t)x->ndim);
        n->iattr[1 + TENSOR_MAX_DIMS] = dim;
        n->iattr[2 + TENSOR_MAX_DIMS] = start;
        n->iattr[3 + TENSOR_MAX_DIMS] = end;
        n->iattr[4 + TENSOR_MAX_DIMS] = step;
    }
    return out;
}

Tensor *tensor_narrow(Tensor *x, int dim, int64_t start, int64_t length) {
    dim = tensor_dim_wrap("narrow", dim, x->ndim);
    if (start < 0) start += x->shape[dim];
    if (start < 0 || length < 0 || start + length > x->shape[dim]) {
        char a[128];
        tensor_fail("narrow", "[%lld, %lld) out of range for dim %d of %s", (long long)start,
                    (long long)(start + length), dim, tensor_shape_str(x, a));
    }
    return tensor_slice(x, dim, start, start + length, 1);
}

Tensor *tensor_slice_scatter(Tensor *src, int ndim, const int64_t *shape, int dim, int64_t start, int64_t end,
                             int64_t step) {
    Tensor *out = tensor_empty_on(ndim, shape, src->dtype, tensor_device(src));
    const TensorBackend *be = tensor_be("slice_scatter", src);
    be->fill(out, 0);
    dim = tensor_dim_wrap("slice_scatter", dim, ndim);
    slice_bounds("slice_scatter", out, dim, &start, &end, step);
    int64_t vshape[TENSOR_MAX_DIMS], vstride[TENSOR_MAX_DIMS];
    memcpy(vshape, out->shape, sizeof vshape);
    memcpy(vstride, out->stride, sizeof vstride);
    vshape[dim] = (end - start + step - 1) / step;
    vstride[dim] *= step;
    Tensor *view = tensor_make_view(out, ndim, vshape, vstride, start * out->stride[dim]);
    if (!tensor_same_shape(view, src)) {
        char a[128], b[128];
        tensor_fail("slice_scatter", "source %s does not fit the slice %s", tensor_shape_str(src, a),
                    tensor_shape_str(view, b));
    }
    be->copy(view, src);
    TensorNode *n = tensor_node_record(TENSOR_OP_SLICE_SCATTER, out, 1, &src);
    if (n) {
        n->iattr[0] = dim;
        n->iattr[1] = start;
        n->iattr[2] = end;
        n->iattr[3] = step;
    }
    return out;
}

Tensor *tensor_squeeze(Tensor *x, int dim) {
    dim = tensor_dim_wrap("squeeze", dim, x->ndim);
    if (x->shape[dim] != 1) return x;
    int64_t shape[TENSOR_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != dim) shape[k++] = x->shape[i];
    return tensor_reshape(x, k, shape);
}

Tensor *tensor_unsqueeze(Tensor *x, int dim) {
    if (x->ndim >= TENSOR_MAX_DIMS) tensor_fail("unsqueeze", "already %d dims", x->ndim);
    if (dim < 0) dim += x->ndim + 1;
    if (dim < 0 || dim > x->ndim) tensor_fail("unsqueeze", "dim out of range");
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0, k = 0; i <= x->ndim; i++) shape[i] = i == dim ? 1 : x->shape[k++];
    return tensor_reshape(x, x->ndim + 1, shape);
}

Tensor *tensor_flatten(Tensor *x, int start_dim, int end_dim) {
    if (x->ndim == 0) return tensor_reshape(x, 1, (int64_t[]){1});
    start_dim = tensor_dim_wrap("flatten", start_dim, x->ndim);
    end_dim = tensor_dim_wrap("flatten", end_dim, x->ndim);
    int64_t shape[TENSOR_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < start_dim; i++) shape[k++] = x->shape[i];
    int64_t m = 1;
    for (int i = start_dim; i <= end_dim; i++) m *= x->shape[i];
    shape[k++] = m;
    for (int i = end_dim + 1; i < x->ndim; i++) shape[k++] = x->shape[i];
    return tensor_reshape(x, k, shape);
}

static Tensor *copy_recorded(Tensor *x) {
    Tensor *o = tensor_empty_like(x);
    tensor_be("contiguous", x)->copy(o, x);
    tensor_node_record(TENSOR_OP_CONTIGUOUS, o, 1, &x);
    return o;
}

Tensor *tensor_contiguous(Tensor *x) { return tensor_is_contiguous(x) ? x : copy_recorded(x); }
Tensor *tensor_clone(Tensor *x) { return copy_recorded(x); }

void tensor_check_cast(const char *op, const Tensor *x, TensorDType dt) {
    bool bf16 = x->dtype == TENSOR_BF16 || dt == TENSOR_BF16;
    if (bf16 && x->dtype != dt && x->dtype != TENSOR_F32 && dt != TENSOR_F32) {
        char b[128];
        tensor_fail(op, "%s %s to %s: bf16 converts to and from f32 only", tensor_dtype_name(x->dtype),
                    tensor_shape_str(x, b), tensor_dtype_name(dt));
    }
}

Tensor *tensor_cast(Tensor *x, TensorDType dt) {
    if (x->dtype == dt) return x;
    tensor_check_cast("cast", x, dt);
    Tensor *c = tensor_contig_raw(x);
    Tensor *o = tensor_empty_on(x->ndim, x->shape, dt, tensor_device(x));
    tensor_be("cast", x)->cast(o, c);
    if (dt != TENSOR_I64 && x->dtype != TENSOR_I64) {
        TensorNode *n = tensor_node_record(TENSOR_OP_CAST, o, 1, &x);
        if (n) n->iattr[0] = x->dtype;
    }
    return o;
}
