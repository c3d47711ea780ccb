/* autograd/gradcheck.c — f64 central differences of L = sum(f(x) * w) against ag_grad. */
#include <math.h>
#include <stdlib.h>

#include "../tensor/internal.h"
#include "base/alloc.h"
#include "gradcheck.h"

static double project(AgFn f, int n, Tensor *const *inputs, void *user, Tensor *w) {
    /* grad mode stays as it is: f may itself differentiate (a gradient-of-gradient check) */
    TensorScope *s = tensor_scope_begin();
    Tensor *y = f(n, inputs, user);
    double v = tensor_item(tensor_sum_all(tensor_mul(tensor_cast(y, TENSOR_F64), w)));
    tensor_scope_end(s);
    return v;
}

bool ag_gradcheck(AgFn f, int n, Tensor *const *inputs, void *user, double eps, double atol, double rtol,
                  AgGradcheckReport *rep) {
    AgGradcheckReport local = {.bad_input = -1};
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad &&
            (inputs[i]->dtype != TENSOR_F64 || !tensor_is_contiguous(inputs[i]) || inputs[i]->node))
            tensor_fail("gradcheck", "input %d must be a contiguous f64 leaf", i);
    Tensor *y = f(n, inputs, user);
    TensorRng rng = {.seed = 1234, .stream = 7};
    Tensor *w = tensor_randn_with(&rng, y->ndim, y->shape, TENSOR_F64);
    Tensor *L = tensor_sum_all(tensor_mul(tensor_cast(y, TENSOR_F64), w));
    Tensor **grads = base_calloc((size_t)n, sizeof *grads);
    if (L->requires_grad) ag_grad(1, &L, NULL, n, inputs, grads, false);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        Tensor *x = inputs[i];
        if (!x || !x->requires_grad) continue;
        double *p = tensor_f64(x);
        int64_t cnt = tensor_numel(x);
        for (int64_t e = 0; e < cnt; e++) {
            double keep = p[e];
            p[e] = keep + eps;
            double lp = project(f, n, inputs, user, w);
            p[e] = keep - eps;
            double lm = project(f, n, inputs, user, w);
            p[e] = keep;
            double num = (lp - lm) / (2 * eps);
            double ana = grads[i] ? tensor_get(tensor_reshape(grads[i], 1, &cnt), &e) : 0.0;
            double err = fabs(ana - num);
            if (err > local.max_abs_err || isnan(err)) local.max_abs_err = isnan(err) ? INFINITY : err;
            if (fabs(num) > local.max_ref) local.max_ref = fabs(num);
            if (!(err <= atol + rtol * fabs(num))) {
                local.bad_input = i;
                local.bad_index = e;
                local.analytic = ana;
                local.numeric = num;
                ok = false;
                break;
            }
        }
    }
    free(grads);
    if (rep) *rep = local;
    return ok;
}
