/* tests/test_memory.c — a 10,000-step training loop keeps resident memory flat: every step
 * runs in its own scope, and ending it returns the memory (the chunks are reused). */
#include <stdio.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "tests/test.h"

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST(training_loop_memory_is_flat) {
    int steps = test_quick() ? 600 : 10000;
    tensor_manual_seed(3);
    Tensor *x = tensor_randn(TENSOR_SHAPE(64, 8), TENSOR_F32);
    Tensor *y = tensor_sum(tensor_sin(x), TENSOR_DIMS(1), true);
    Tensor *w1 = tensor_requires_grad(tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(8, 32), TENSOR_F32), 0.3), true);
    Tensor *w2 = tensor_requires_grad(tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(32, 1), TENSOR_F32), 0.3), true);
    Tensor *params[2] = {w1, w2};
    long at_warm = 0;
    double first = 0, last = 0;
    for (int step = 0; step < steps; step++) {
        TensorScope *s = tensor_scope_begin();
        Tensor *pred = tensor_matmul(tensor_gelu(tensor_matmul(x, w1)), w2);
        Tensor *loss = tensor_mean_all(tensor_pow_scalar(tensor_sub(pred, y), 2));
        ag_zero_grad(2, params);
        ag_backward(loss, NULL, false);
        bool prev = ag_no_grad_begin();
        for (int i = 0; i < 2; i++) tensor_add_(params[i], params[i]->grad, -0.05);
        ag_no_grad_end(prev);
        last = tensor_item(loss);
        if (step == 0) first = last;
        tensor_scope_end(s);
        if (step == steps / 10) at_warm = rss_kb();
    }
    long at_end = rss_kb();
#ifdef __SANITIZE_ADDRESS__
    /* ASan keeps freed blocks in a quarantine, so RSS grows by design; leaks are its job here */
    at_end = at_warm;
#endif
    if (RUNNING_ON_VALGRIND) at_end = at_warm; /* likewise valgrind's freed-block queue */
    CHECK_MSG(at_end - at_warm < 256, "resident memory grew %ld kB between step %d and %d", at_end - at_warm, steps / 10, steps);
    CHECK_MSG(last < first * 0.5, "loss %g -> %g did not fall", first, last);
}
