/* tools/cmd_demo.c — `anima demo`: fits a two-layer tanh MLP to y = sin(3x) + 0.5 x² with
 * Adam, written directly in tensor ops, and prints the loss as it falls. Each step runs in
 * its own scope, so memory stays flat however long it runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "tools/cmd.h"

int cmd_demo(int argc, char **argv) {
    int steps = 600;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            char *end;
            steps = (int)strtol(argv[++i], &end, 10);
            if (*end || steps <= 0) {
                fprintf(stderr, "anima demo: --steps expects a positive integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "anima demo: unknown argument '%s' (expected --steps N)\n", argv[i]);
            return 2;
        }
    }
    tensor_manual_seed(1);
    const int64_t n = 256, h = 64;
    Tensor *x = tensor_mul_scalar(tensor_add_scalar(tensor_rand(TENSOR_SHAPE(n, 1), TENSOR_F32), -0.5), 4.0);
    Tensor *y = tensor_add(tensor_sin(tensor_mul_scalar(x, 3)), tensor_mul_scalar(tensor_mul(x, x), 0.5));
    Tensor *p[4] = {
        tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(1, h), TENSOR_F32), 1.0),
        tensor_zeros(TENSOR_SHAPE(h), TENSOR_F32),
        tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(h, 1), TENSOR_F32), 1.0 / sqrt((double)h)),
        tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32),
    };
    Tensor *m[4], *v[4];
    for (int i = 0; i < 4; i++) {
        tensor_requires_grad(p[i], true);
        m[i] = tensor_zeros_like(p[i]);
        v[i] = tensor_zeros_like(p[i]);
    }
    const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double first = 0, last = 0;
    printf("anima demo: fitting y = sin(3x) + x^2/2 with a 1-%lld-1 tanh MLP, Adam lr %g\n", (long long)h, lr);
    for (int step = 1; step <= steps; step++) {
        TensorScope *s = tensor_scope_begin();
        Tensor *hid = tensor_tanh(tensor_add(tensor_matmul(x, p[0]), p[1]));
        Tensor *pred = tensor_add(tensor_matmul(hid, p[2]), p[3]);
        Tensor *d = tensor_sub(pred, y);
        Tensor *loss = tensor_mean_all(tensor_mul(d, d));
        ag_zero_grad(4, p);
        ag_backward(loss, NULL, false);
        bool prev = ag_no_grad_begin();
        for (int i = 0; i < 4; i++) { /* Adam (Kingma & Ba 2015, Alg. 1) */
            tensor_scale_(m[i], b1);
            tensor_add_(m[i], p[i]->grad, 1 - b1);
            tensor_scale_(v[i], b2);
            tensor_add_(v[i], tensor_mul(p[i]->grad, p[i]->grad), 1 - b2);
            Tensor *mh = tensor_mul_scalar(m[i], 1.0 / (1 - pow(b1, step)));
            Tensor *vh = tensor_mul_scalar(v[i], 1.0 / (1 - pow(b2, step)));
            tensor_add_(p[i], tensor_div(mh, tensor_add_scalar(tensor_sqrt(vh), eps)), -lr);
        }
        ag_no_grad_end(prev);
        last = tensor_item(loss);
        if (step == 1) first = last;
        if (step == 1 || step % 50 == 0) printf("step %4d  loss %.6f\n", step, last);
        tensor_scope_end(s);
    }
    printf("loss %.6f -> %.6f (%.0fx lower)\n", first, last, first / last);
    tensor_runtime_shutdown();
    return last < first ? 0 : 1;
}
