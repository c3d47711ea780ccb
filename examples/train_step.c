/* examples/train_step.c — README.md's "A training step", made a whole program: least squares
 * fitted by gradient descent on the tape. Between the two README markers is the README's code
 * block verbatim (indented into main; its #include is at the top), so the README's code is what
 * compiles here: tests/examples.sh fails `make test` when the two differ.
 *
 * Against an installed anima:
 *   cc train_step.c $(pkg-config --cflags --libs anima) -o train_step && ./train_step */
#include <stdio.h>

#include "autograd/autograd.h"

int main(void) {
    /* data: 64 samples of 8 features; targets from w_true = (1, 2, ..., 8)ᵀ, so w should reach it */
    tensor_manual_seed(1);
    Tensor *x = tensor_randn(TENSOR_SHAPE(64, 8), TENSOR_F32);
    Tensor *w_true = tensor_reshape(tensor_arange(1, 9, 1, TENSOR_F32), TENSOR_SHAPE(8, 1));
    Tensor *y = tensor_matmul(x, w_true);

    /* README.md "A training step" begins */
    Tensor *w = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(8, 1), TENSOR_F32), true);
    for (int step = 0; step < 1000; step++) {
        TensorScope *s = tensor_scope_begin();          /* everything below is freed at the end */
        Tensor *loss = tensor_mean_all(tensor_pow_scalar(tensor_sub(tensor_matmul(x, w), y), 2));
        ag_zero_grad(1, &w);
        ag_backward(loss, NULL, false);                  /* w->grad lives in w's scope */
        bool prev = ag_no_grad_begin();
        tensor_add_(w, w->grad, -0.1);
        ag_no_grad_end(prev);
        printf("%g\n", tensor_item(loss));
        tensor_scope_end(s);
    }
    /* README.md "A training step" ends */

    tensor_runtime_shutdown(); /* everything lived in the root scope; for leak checkers */
    return 0;
}
