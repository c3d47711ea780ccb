/* tensor/ops_inplace.c — the in-place updates (copy_, fill_, add_, scale_) and device transfer
 * (tensor_to). They sit above the view and elementwise ops they are built from, so that core.c
 * (scopes, headers, metadata) depends on no op front-end. */
#include "internal.h"

/* ---- in-place helpers ----------------------------------------------------------------------- */

/* A 0-d tensor holding v on t's device (tensor_scalar is CPU-only). */
static Tensor *scalar_on(const Tensor *t, double v, TensorDType dt) {
    Tensor *s = tensor_empty_on(0, NULL, dt, tensor_device(t));
    tensor_be("scalar", t)->fill(s, v);
    return s;
}

static void check_inplace(const char *op, const Tensor *t) {
    if (t->node)
        tensor_fail(op, "in-place update of a tensor recorded on the tape");
}

void tensor_copy_(Tensor *dst, const Tensor *src) {
    check_inplace("tensor_copy_", dst);
    Tensor *s = (Tensor *)src;
    if (src->dtype != dst->dtype) {
        tensor_check_cast("tensor_copy_", src, dst->dtype);
        s = tensor_empty_on(src->ndim, src->shape, dst->dtype, tensor_device(src));
        tensor_be("tensor_copy_", src)->cast(s, tensor_contig_raw(src));
    }
    tensor_check_same("tensor_copy_", dst, s);
    Tensor *e = tensor_expand_raw(s, dst->ndim, dst->shape);
    tensor_be("tensor_copy_", dst)->copy(dst, e);
}

void tensor_fill_(Tensor *t, double value) {
    check_inplace("tensor_fill_", t);
    if (tensor_is_contiguous(t)) {
        tensor_be("tensor_fill_", t)->fill(t, value);
    } else {
        Tensor *v = scalar_on(t, value, t->dtype);
        tensor_copy_(t, v);
    }
}

void tensor_add_(Tensor *dst, const Tensor *src, double alpha) {
    check_inplace("tensor_add_", dst);
    tensor_check_same("tensor_add_", dst, src);
    bool prev = tensor_grad_set_enabled(false);
    Tensor *s = (Tensor *)src;
    if (alpha != 1) s = tensor_mul(s, scalar_on(src, alpha, src->dtype));
    Tensor *sum = tensor_add(dst, s);
    tensor_grad_set_enabled(prev);
    char a[128], b[128];
    if (!tensor_same_shape(sum, dst))
        tensor_fail("tensor_add_", "%s cannot take a %s update", tensor_shape_str(dst, a), tensor_shape_str(src, b));
    tensor_be("tensor_add_", dst)->copy(dst, sum);
}

void tensor_scale_(Tensor *t, double alpha) {
    check_inplace("tensor_scale_", t);
    bool prev = tensor_grad_set_enabled(false);
    Tensor *s = tensor_mul(t, scalar_on(t, alpha, t->dtype));
    tensor_grad_set_enabled(prev);
    tensor_be("tensor_scale_", t)->copy(t, s);
}

/* ---- device transfer ------------------------------------------------------------------------ */

Tensor *tensor_to(Tensor *x, TensorDevice dev) {
    TensorDevice from = tensor_device(x);
    if (from == dev) return x;
    Tensor *c = tensor_contig_raw(x);
    Tensor *o = tensor_empty_on(x->ndim, x->shape, x->dtype, dev);
    size_t n = o->storage->nbytes;
    if (n == 0) return o;
    if (dev == TENSOR_CPU) /* device -> host */
        tensor_backend_for(from)->to_host(tensor_data_ptr(o), tensor_data_ptr(c), n);
    else if (from == TENSOR_CPU) /* host -> device */
        tensor_backend_for(dev)->from_host(tensor_data_ptr(o), tensor_data_ptr(c), n);
    else
        tensor_fail("tensor_to", "device-to-device transfers between backends are not supported");
    return o;
}
