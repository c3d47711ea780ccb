/* autograd/custom.h — user-defined ops: a forward and a backward supplied by the caller,
 * recorded on the tape like a built-in op. The backward may use tensor ops (then it is
 * differentiable again) or compute with raw loops (then it is not). */
#ifndef ANIMA_AUTOGRAD_CUSTOM_H
#define ANIMA_AUTOGRAD_CUSTOM_H

#include "autograd.h"

typedef struct AgCustomOp {
    const char *name;
    /* The output from the inputs. Runs with grad mode off. ctx is the op's private copy and
     * may be written (to save values for backward). */
    Tensor *(*forward)(void *ctx, int n, Tensor *const *inputs);
    /* grad_in[i] for each need[i]: the gradient of the loss with respect to inputs[i]. */
    void (*backward)(void *ctx, int n, Tensor *const *inputs, Tensor *out, Tensor *grad_out, const bool *need,
                     Tensor **grad_in);
} AgCustomOp;

/* The create_graph path of a custom backward whose kernels record nothing: y is the op's output
 * recomputed from the same inputs by differentiable ops; gin[i] (for each need[i]) becomes the
 * gradient of <g, y> with respect to in[i], itself recorded (zeros where unreachable). */
void ag_custom_recomposed_grads(Tensor *y, Tensor *g, int n, Tensor *const *in, const bool *need, Tensor **gin);

/* Run op on inputs; ctx (ctx_size bytes, may be NULL/0) is copied into the current scope. */
Tensor *ag_custom_apply(const AgCustomOp *op, int n, Tensor *const *inputs, const void *ctx, size_t ctx_size);

#endif
