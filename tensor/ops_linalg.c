/* tensor/ops_linalg.c — matmul with torch.matmul semantics (1-D promotion, broadcast batch
 * dims) on BLAS, and batched closed-form 3×3 determinant and inverse for elasticity. bf16
 * operands multiply with f32 accumulation into an f32 result (mixed precision: what follows a
 * matmul — bias, activation, softmax — runs in f32). */
#include <string.h>

#include "internal.h"

Tensor *tensor_matmul(Tensor *a, Tensor *b) {
    tensor_check_same("matmul", a, b);
    tensor_check_float("matmul", a);
    char sa[128], sb[128];
    if (a->ndim == 0 || b->ndim == 0)
        tensor_fail("matmul", "needs at least 1-D inputs, got %s and %s", tensor_shape_str(a, sa), tensor_shape_str(b, sb));
    Tensor *a2 = a->ndim == 1 ? tensor_make_view(a, 2, (int64_t[]){1, a->shape[0]}, (int64_t[]){0, a->stride[0]}, a->offset) : a;
    Tensor *b2 = b->ndim == 1 ? tensor_make_view(b, 2, (int64_t[]){b->shape[0], 1}, (int64_t[]){b->stride[0], 0}, b->offset) : b;
    int64_t n = a2->shape[a2->ndim - 2], k = a2->shape[a2->ndim - 1];
    int64_t k2 = b2->shape[b2->ndim - 2], m = b2->shape[b2->ndim - 1];
    if (k != k2)
        tensor_fail("matmul", "inner dims differ: %s @ %s", tensor_shape_str(a, sa), tensor_shape_str(b, sb));
    /* broadcast batch dims */
    Tensor ba = {.ndim = a2->ndim - 2}, bb = {.ndim = b2->ndim - 2};
    memcpy(ba.shape, a2->shape, sizeof(int64_t) * (size_t)ba.ndim);
    memcpy(bb.shape, b2->shape, sizeof(int64_t) * (size_t)bb.ndim);
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t bshape[TENSOR_MAX_DIMS];
    int nb = ba.ndim > bb.ndim ? ba.ndim : bb.ndim;
    for (int i = 0; i < nb; i++) {
        int ia = ba.ndim - nb + i, ib = bb.ndim - nb + i;
        int64_t x = ia >= 0 ? ba.shape[ia] : 1, y = ib >= 0 ? bb.shape[ib] : 1;
        if (x != y && x != 1 && y != 1)
            tensor_fail("matmul", "batch dims do not broadcast: %s @ %s", tensor_shape_str(a, sa), tensor_shape_str(b, sb));
        bshape[i] = x == 1 ? y : x;
    }
    if (nb + 2 > TENSOR_MAX_DIMS) tensor_fail("matmul", "too many dims");
    if (nb) memcpy(shape, bshape, sizeof(int64_t) * (size_t)nb);
    shape[nb] = n, shape[nb + 1] = k;
    Tensor *ea = tensor_expand_raw(a2, nb + 2, shape);
    shape[nb] = k, shape[nb + 1] = m;
    Tensor *eb = tensor_expand_raw(b2, nb + 2, shape);
    shape[nb] = n, shape[nb + 1] = m;
    TensorDType odt = a->dtype == TENSOR_BF16 ? TENSOR_F32 : a->dtype;
    Tensor *out = tensor_empty_on(nb + 2, shape, odt, tensor_device(a));
    tensor_be("matmul", a)->matmul(out, ea, eb);
    if (a->ndim == 1 || b->ndim == 1) { /* drop the promoted dims */
        int64_t s[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
        int nd = 0;
        for (int i = 0; i < nb; i++) s[nd++] = shape[i];
        if (a->ndim != 1) s[nd++] = n;
        if (b->ndim != 1) s[nd++] = m;
        tensor_contig_strides(nd, s, st);
        out = tensor_make_view(out, nd, s, st, 0);
    }
    Tensor *in[2] = {a, b};
    tensor_node_record(TENSOR_OP_MATMUL, out, 2, in);
    return out;
}

static Tensor *small3(TensorOpId op, Tensor *x) {
    const char *name = tensor_op_table[op].name;
    tensor_check_float(name, x);
    if (x->ndim < 2 || x->shape[x->ndim - 1] != 3 || x->shape[x->ndim - 2] != 3) {
        char b[128];
        tensor_fail(name, "needs (..., 3, 3), got %s", tensor_shape_str(x, b));
    }
    Tensor *c = tensor_contig_raw(x);
    int64_t cnt = tensor_numel(x) / 9;
    Tensor *out = op == TENSOR_OP_DET3 ? tensor_empty_on(x->ndim - 2, x->shape, x->dtype, tensor_device(x)) : tensor_empty_like(x);
    const TensorBackend *be = tensor_be(name, x);
    if (op == TENSOR_OP_DET3) be->det3(out, c, cnt);
    else be->inv3(out, c, cnt);
    tensor_node_record(op, out, 1, &x);
    return out;
}

Tensor *tensor_det3(Tensor *x) { return small3(TENSOR_OP_DET3, x); }
Tensor *tensor_inv3(Tensor *x) { return small3(TENSOR_OP_INV3, x); }
