/* tensor/ops_elementwise.c — broadcasting binary ops, comparisons, where, unary ops. */
#include "internal.h"

static Tensor *binary(TensorOpId op, Tensor *a, Tensor *b) {
    const char *name = tensor_op_table[op].name;
    tensor_check_same(name, a, b);
    if (a->dtype == TENSOR_I64 && op != TENSOR_OP_EQ && op != TENSOR_OP_NE)
        tensor_fail(name, "i64 tensors only compare for equality");
    int64_t shape[TENSOR_MAX_DIMS];
    int nd = tensor_broadcast_shape(name, a, b, shape);
    Tensor *out = tensor_empty_on(nd, shape, a->dtype, tensor_device(a));
    Tensor *ea = tensor_expand_raw(a, nd, shape), *eb = tensor_expand_raw(b, nd, shape);
    const TensorBackend *be = tensor_be(name, a);
    be->binary(op, out, ea, eb);
    if (tensor_op_table[op].kind != TENSOR_OPK_NONDIFF) {
        Tensor *in[2] = {a, b};
        tensor_node_record(op, out, 2, in);
    }
    return out;
}

Tensor *tensor_add(Tensor *a, Tensor *b) { return binary(TENSOR_OP_ADD, a, b); }
Tensor *tensor_sub(Tensor *a, Tensor *b) { return binary(TENSOR_OP_SUB, a, b); }
Tensor *tensor_mul(Tensor *a, Tensor *b) { return binary(TENSOR_OP_MUL, a, b); }
Tensor *tensor_div(Tensor *a, Tensor *b) { return binary(TENSOR_OP_DIV, a, b); }
Tensor *tensor_pow(Tensor *a, Tensor *b) { return binary(TENSOR_OP_POW, a, b); }
Tensor *tensor_maximum(Tensor *a, Tensor *b) { return binary(TENSOR_OP_MAXIMUM, a, b); }
Tensor *tensor_minimum(Tensor *a, Tensor *b) { return binary(TENSOR_OP_MINIMUM, a, b); }
Tensor *tensor_gelu_backward(Tensor *g, Tensor *x) { return binary(TENSOR_OP_GELU_BACKWARD, g, x); }
Tensor *tensor_eq(Tensor *a, Tensor *b) { return binary(TENSOR_OP_EQ, a, b); }
Tensor *tensor_ne(Tensor *a, Tensor *b) { return binary(TENSOR_OP_NE, a, b); }
Tensor *tensor_lt(Tensor *a, Tensor *b) { return binary(TENSOR_OP_LT, a, b); }
Tensor *tensor_le(Tensor *a, Tensor *b) { return binary(TENSOR_OP_LE, a, b); }
Tensor *tensor_gt(Tensor *a, Tensor *b) { return binary(TENSOR_OP_GT, a, b); }
Tensor *tensor_ge(Tensor *a, Tensor *b) { return binary(TENSOR_OP_GE, a, b); }

static Tensor *scalar_like(const Tensor *x, double s) {
    Tensor *t = tensor_empty_on(0, NULL, x->dtype, tensor_device(x));
    tensor_be("scalar", x)->fill(t, s);
    return t;
}
Tensor *tensor_add_scalar(Tensor *x, double s) { return tensor_add(x, scalar_like(x, s)); }
Tensor *tensor_mul_scalar(Tensor *x, double s) { return tensor_mul(x, scalar_like(x, s)); }
Tensor *tensor_pow_scalar(Tensor *x, double p) { return tensor_pow(x, scalar_like(x, p)); }
Tensor *tensor_rsub_scalar(Tensor *x, double s) { return tensor_sub(scalar_like(x, s), x); }

Tensor *tensor_where(Tensor *cond, Tensor *a, Tensor *b) {
    tensor_check_same("where", a, b);
    if (tensor_device(cond) != tensor_device(a)) tensor_fail("where", "condition on another device");
    tensor_check_bf16("where", cond);
    int64_t s1[TENSOR_MAX_DIMS], shape[TENSOR_MAX_DIMS];
    int n1 = tensor_broadcast_shape("where", a, b, s1);
    Tensor tmp = {.ndim = n1};
    for (int i = 0; i < n1; i++) tmp.shape[i] = s1[i];
    int nd = tensor_broadcast_shape("where", cond, &tmp, shape);
    Tensor *out = tensor_empty_on(nd, shape, a->dtype, tensor_device(a));
    tensor_be("where", a)->where(out, tensor_expand_raw(cond, nd, shape), tensor_expand_raw(a, nd, shape),
                                 tensor_expand_raw(b, nd, shape));
    Tensor *in[3] = {cond, a, b};
    if (tensor_should_record(2, in + 1)) tensor_node_record(TENSOR_OP_WHERE, out, 3, in);
    return out;
}

static Tensor *unary(TensorOpId op, Tensor *x, double p0, double p1) {
    const char *name = tensor_op_table[op].name;
    if (x->dtype == TENSOR_I64 && op != TENSOR_OP_NEG && op != TENSOR_OP_ABS && op != TENSOR_OP_SIGN)
        tensor_fail(name, "needs a floating-point tensor, got i64");
    Tensor *c = tensor_contig_raw(x);
    Tensor *out = tensor_empty_like(x);
    tensor_be(name, x)->unary(op, out, c, p0, p1);
    if (tensor_op_table[op].kind != TENSOR_OPK_NONDIFF) {
        TensorNode *n = tensor_node_record(op, out, 1, &x);
        if (n) n->fattr[0] = p0, n->fattr[1] = p1;
    }
    return out;
}

Tensor *tensor_neg(Tensor *x) { return unary(TENSOR_OP_NEG, x, 0, 0); }
Tensor *tensor_abs(Tensor *x) { return unary(TENSOR_OP_ABS, x, 0, 0); }
Tensor *tensor_sign(Tensor *x) { return unary(TENSOR_OP_SIGN, x, 0, 0); }
Tensor *tensor_exp(Tensor *x) { return unary(TENSOR_OP_EXP, x, 0, 0); }
Tensor *tensor_log(Tensor *x) { return unary(TENSOR_OP_LOG, x, 0, 0); }
Tensor *tensor_sqrt(Tensor *x) { return unary(TENSOR_OP_SQRT, x, 0, 0); }
Tensor *tensor_rsqrt(Tensor *x) { return unary(TENSOR_OP_RSQRT, x, 0, 0); }
Tensor *tensor_sin(Tensor *x) { return unary(TENSOR_OP_SIN, x, 0, 0); }
Tensor *tensor_cos(Tensor *x) { return unary(TENSOR_OP_COS, x, 0, 0); }
Tensor *tensor_tanh(Tensor *x) { return unary(TENSOR_OP_TANH, x, 0, 0); }
Tensor *tensor_sigmoid(Tensor *x) { return unary(TENSOR_OP_SIGMOID, x, 0, 0); }
Tensor *tensor_relu(Tensor *x) { return unary(TENSOR_OP_RELU, x, 0, 0); }
Tensor *tensor_elu(Tensor *x, double alpha) { return unary(TENSOR_OP_ELU, x, alpha, 0); }
Tensor *tensor_gelu(Tensor *x) { return unary(TENSOR_OP_GELU, x, 0, 0); }
Tensor *tensor_gelu_tanh(Tensor *x) { return unary(TENSOR_OP_GELU_TANH, x, 0, 0); }
Tensor *tensor_softplus(Tensor *x, double beta, double threshold) {
    if (beta <= 0) tensor_fail("softplus", "beta must be positive, got %g", beta);
    return unary(TENSOR_OP_SOFTPLUS, x, beta, threshold);
}
Tensor *tensor_erf(Tensor *x) { return unary(TENSOR_OP_ERF, x, 0, 0); }
