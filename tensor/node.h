/* tensor/node.h — what an op records for autograd: its inputs, its output and the attributes
 * its backward needs. The tensor layer only stores this; autograd/ walks and interprets it. */
#ifndef ANIMA_TENSOR_NODE_H
#define ANIMA_TENSOR_NODE_H

#include "op_table.h"
#include "tensor.h"

#define TENSOR_NODE_IATTRS (3 * TENSOR_MAX_DIMS + 4)

struct TensorNode {
    TensorOpId op;
    uint64_t seq; /* creation order: a valid topological order of the tape */
    int n_inputs;
    Tensor **inputs;
    Tensor *out;
    int64_t iattr[TENSOR_NODE_IATTRS]; /* dims, shapes, flags: meaning per op */
    double fattr[4];                   /* eps, alpha, exponent: meaning per op */
    Tensor *saved;                     /* an extra tensor the backward needs (index, ...) */
    const void *custom;                /* AgCustomOp for TENSOR_OP_CUSTOM */
    void *ctx;                         /* the custom op's context (arena copy) */
    /* engine state, owned by autograd/ */
    Tensor *grad_acc;
    uint64_t visit;
    bool released;
};

/* Record a node for out when grad mode is on and any input requires grad; returns NULL
 * otherwise (then there is nothing to fill). Marks out as requiring grad. */
TensorNode *tensor_node_record(TensorOpId op, Tensor *out, int n, Tensor *const *inputs);
/* True when some input requires grad and grad mode is on. */
bool tensor_should_record(int n, Tensor *const *inputs);

#endif
