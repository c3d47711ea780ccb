/* autograd/autograd.h — reverse mode over the nodes the tensor ops record: backward into
 * leaves' .grad, grad() for arbitrary outputs/inputs (with create_graph for higher orders),
 * no-grad scopes, zero_grad. Each op's backward is in derivatives.c, written in tensor ops. */
#ifndef ANIMA_AUTOGRAD_H
#define ANIMA_AUTOGRAD_H

#include "../tensor/ops.h"

/* Accumulate d(root)/d(leaf) into every leaf's .grad (allocated in the leaf's scope on first
 * use). grad_root NULL means ones (root must then have one element). Without retain_graph the
 * nodes are released: a second backward through them aborts. */
void ag_backward(Tensor *root, Tensor *grad_root, bool retain_graph);

/* Leaf-ready hook: during ag_backward, fn(leaf, user) is called once per leaf that requires
 * grad and is reachable from the root, as soon as the engine has accumulated the leaf's last
 * contribution into .grad in this backward (its last consumer node has run; the engine knows
 * every leaf's consumers before it starts). .grad is final then, for this backward, and is not
 * written again before ag_backward returns — code outside autograd can start using it (the
 * data-parallel reducer all-reduces gradients while backward goes on). A leaf that is reachable
 * but received no gradient (every path through it gave none) is reported too, .grad untouched.
 * ag_grad calls no hook (it fills no .grad). Per thread; NULL fn: none (the default).
 * Returns the hook it replaces, so a caller can chain to it and restore it. */
typedef void (*AgLeafReadyFn)(Tensor *leaf, void *user);
typedef struct {
    AgLeafReadyFn fn;
    void *user;
} AgLeafHook;
AgLeafHook ag_leaf_hook_set(AgLeafHook hook);

/* Gradients of sum_j <grad_outputs[j], outputs[j]> with respect to inputs[i], returned in
 * grads[i] (NULL where an input is unreachable). With create_graph the results are themselves
 * recorded, so they can be differentiated again; .grad fields are not touched. */
void ag_grad(int n_out, Tensor *const *outputs, Tensor *const *grad_outputs, int n_in, Tensor *const *inputs,
             Tensor **grads, bool create_graph);

/* no-grad: ops inside record nothing */
bool ag_no_grad_begin(void);          /* returns the previous mode for ag_no_grad_end */
void ag_no_grad_end(bool previous);

/* Set .grad of each tensor to NULL (the next backward allocates afresh) — or, for leaves whose
 * gradient lives in a caller's buffer, fill it with zeros. */
void ag_zero_grad(int n, Tensor *const *params);

/* The backward of one primitive op: fills grad_in[i] for each input i with need[i]. Exposed
 * for the op-table tests; NULL for ops that have none. */
typedef void (*AgBackwardFn)(const TensorNode *node, Tensor *grad_out, const bool *need, Tensor **grad_in);
AgBackwardFn ag_backward_fn(TensorOpId op);

#endif
