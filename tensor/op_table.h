/* tensor/op_table.h — the one list of ops. Every public op appears here exactly once:
 *   OP(ID, "name", KIND)
 * KIND is TENSOR_OPK_PRIMITIVE (records a tape node; its backward lives in
 * autograd/derivatives.c), TENSOR_OPK_COMPOSITE (built from primitives, or from a custom-op
 * node with its own backward, so differentiable through them) or TENSOR_OPK_NONDIFF (no
 * gradient: comparisons, argmax, constructors, in-place updates).
 * The tests iterate this list: an op without a gradcheck case (or, for NONDIFF, an oracle
 * case) fails the suite, and so does an op without a backend parity case
 * (tests/test_backend_ops.c). */
#ifndef ANIMA_TENSOR_OP_TABLE_H
#define ANIMA_TENSOR_OP_TABLE_H

#define TENSOR_OP_LIST(OP)                                  \
    /* views and layout */                                  \
    OP(RESHAPE, "reshape", TENSOR_OPK_PRIMITIVE)            \
    OP(PERMUTE, "permute", TENSOR_OPK_PRIMITIVE)            \
    OP(EXPAND, "expand", TENSOR_OPK_PRIMITIVE)              \
    OP(SLICE, "slice", TENSOR_OPK_PRIMITIVE)                \
    OP(SLICE_SCATTER, "slice_scatter", TENSOR_OPK_PRIMITIVE) \
    OP(CONTIGUOUS, "contiguous", TENSOR_OPK_PRIMITIVE)      \
    OP(CAST, "cast", TENSOR_OPK_PRIMITIVE)                  \
    OP(VIEW, "view", TENSOR_OPK_COMPOSITE)                  \
    OP(TRANSPOSE, "transpose", TENSOR_OPK_COMPOSITE)        \
    OP(NARROW, "narrow", TENSOR_OPK_COMPOSITE)              \
    OP(SQUEEZE, "squeeze", TENSOR_OPK_COMPOSITE)            \
    OP(UNSQUEEZE, "unsqueeze", TENSOR_OPK_COMPOSITE)        \
    OP(FLATTEN, "flatten", TENSOR_OPK_COMPOSITE)            \
    /* broadcasting binary */                               \
    OP(ADD, "add", TENSOR_OPK_PRIMITIVE)                    \
    OP(SUB, "sub", TENSOR_OPK_PRIMITIVE)                    \
    OP(MUL, "mul", TENSOR_OPK_PRIMITIVE)                    \
    OP(DIV, "div", TENSOR_OPK_PRIMITIVE)                    \
    OP(POW, "pow", TENSOR_OPK_PRIMITIVE)                    \
    OP(MAXIMUM, "maximum", TENSOR_OPK_PRIMITIVE)            \
    OP(MINIMUM, "minimum", TENSOR_OPK_PRIMITIVE)            \
    OP(GELU_BACKWARD, "gelu_backward", TENSOR_OPK_PRIMITIVE) \
    OP(EQ, "eq", TENSOR_OPK_NONDIFF)                        \
    OP(NE, "ne", TENSOR_OPK_NONDIFF)                        \
    OP(LT, "lt", TENSOR_OPK_NONDIFF)                        \
    OP(LE, "le", TENSOR_OPK_NONDIFF)                        \
    OP(GT, "gt", TENSOR_OPK_NONDIFF)                        \
    OP(GE, "ge", TENSOR_OPK_NONDIFF)                        \
    OP(WHERE, "where", TENSOR_OPK_PRIMITIVE)                \
    /* unary */                                             \
    OP(NEG, "neg", TENSOR_OPK_PRIMITIVE)                    \
    OP(ABS, "abs", TENSOR_OPK_PRIMITIVE)                    \
    OP(SIGN, "sign", TENSOR_OPK_NONDIFF)                    \
    OP(EXP, "exp", TENSOR_OPK_PRIMITIVE)                    \
    OP(LOG, "log", TENSOR_OPK_PRIMITIVE)                    \
    OP(SQRT, "sqrt", TENSOR_OPK_PRIMITIVE)                  \
    OP(RSQRT, "rsqrt", TENSOR_OPK_PRIMITIVE)                \
    OP(SIN, "sin", TENSOR_OPK_PRIMITIVE)                    \
    OP(COS, "cos", TENSOR_OPK_PRIMITIVE)                    \
    OP(TANH, "tanh", TENSOR_OPK_PRIMITIVE)                  \
    OP(SIGMOID, "sigmoid", TENSOR_OPK_PRIMITIVE)            \
    OP(RELU, "relu", TENSOR_OPK_PRIMITIVE)                  \
    OP(ELU, "elu", TENSOR_OPK_PRIMITIVE)                    \
    OP(GELU, "gelu", TENSOR_OPK_PRIMITIVE)                  \
    OP(GELU_TANH, "gelu_tanh", TENSOR_OPK_PRIMITIVE)        \
    OP(SOFTPLUS, "softplus", TENSOR_OPK_PRIMITIVE)          \
    OP(ERF, "erf", TENSOR_OPK_PRIMITIVE)                    \
    /* reductions */                                        \
    OP(SUM, "sum", TENSOR_OPK_PRIMITIVE)                    \
    OP(MAX, "max", TENSOR_OPK_PRIMITIVE)                    \
    OP(MIN, "min", TENSOR_OPK_PRIMITIVE)                    \
    OP(MEAN, "mean", TENSOR_OPK_COMPOSITE)                  \
    OP(VAR, "var", TENSOR_OPK_COMPOSITE)                    \
    OP(NORM, "norm", TENSOR_OPK_COMPOSITE)                  \
    OP(ARGMAX, "argmax", TENSOR_OPK_NONDIFF)                \
    /* linear algebra */                                    \
    OP(MATMUL, "matmul", TENSOR_OPK_PRIMITIVE)              \
    OP(DET3, "det3", TENSOR_OPK_PRIMITIVE)                  \
    OP(INV3, "inv3", TENSOR_OPK_PRIMITIVE)                  \
    /* normalization */                                     \
    OP(SOFTMAX, "softmax", TENSOR_OPK_PRIMITIVE)            \
    OP(LOG_SOFTMAX, "log_softmax", TENSOR_OPK_PRIMITIVE)    \
    OP(LAYER_NORM, "layer_norm", TENSOR_OPK_PRIMITIVE)      \
    OP(LAYER_NORM_BACKWARD, "layer_norm_backward", TENSOR_OPK_PRIMITIVE) \
    /* joining and indexing */                              \
    OP(CAT, "cat", TENSOR_OPK_PRIMITIVE)                    \
    OP(STACK, "stack", TENSOR_OPK_COMPOSITE)                \
    OP(SPLIT, "split", TENSOR_OPK_COMPOSITE)                \
    OP(INDEX_SELECT, "index_select", TENSOR_OPK_PRIMITIVE)  \
    OP(GATHER, "gather", TENSOR_OPK_PRIMITIVE)              \
    OP(SCATTER_ADD, "scatter_add", TENSOR_OPK_PRIMITIVE)    \
    /* constructors */                                      \
    OP(ZEROS, "zeros", TENSOR_OPK_NONDIFF)                  \
    OP(ONES, "ones", TENSOR_OPK_NONDIFF)                    \
    OP(FULL, "full", TENSOR_OPK_NONDIFF)                    \
    OP(ARANGE, "arange", TENSOR_OPK_NONDIFF)                \
    OP(LINSPACE, "linspace", TENSOR_OPK_NONDIFF)            \
    OP(EYE, "eye", TENSOR_OPK_NONDIFF)                      \
    OP(RAND, "rand", TENSOR_OPK_NONDIFF)                    \
    OP(RANDN, "randn", TENSOR_OPK_NONDIFF)                  \
    /* fused kernels of the layers above: attention is nn_attention_tiled (nn/attention.c), \
     * a custom-op node (autograd/custom.h) with its own backward, so COMPOSITE; the         \
     * optimizer steps and ConFIG's passes update flat buffers in place (tensor/ops.h) */   \
    OP(ATTENTION, "attention", TENSOR_OPK_COMPOSITE)        \
    OP(OPTIM_SGD, "optim_sgd", TENSOR_OPK_NONDIFF)          \
    OP(OPTIM_ADAM, "optim_adam", TENSOR_OPK_NONDIFF)        \
    OP(GRAM, "gram", TENSOR_OPK_NONDIFF)                    \
    OP(LINCOMB, "lincomb", TENSOR_OPK_NONDIFF)              \
    /* user-registered ops (autograd/custom.h) */           \
    OP(CUSTOM, "custom", TENSOR_OPK_PRIMITIVE)

typedef enum { TENSOR_OPK_PRIMITIVE, TENSOR_OPK_COMPOSITE, TENSOR_OPK_NONDIFF } TensorOpKind;

#define TENSOR_OP_ENUM_(id, name, kind) TENSOR_OP_##id,
typedef enum { TENSOR_OP_LIST(TENSOR_OP_ENUM_) TENSOR_OP_COUNT } TensorOpId;
#undef TENSOR_OP_ENUM_

typedef struct {
    TensorOpId id;
    const char *name;
    TensorOpKind kind;
} TensorOpInfo;

extern const TensorOpInfo tensor_op_table[TENSOR_OP_COUNT];

#endif
