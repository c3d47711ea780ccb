/* autograd/gradcheck.h — f64 central finite differences against the tape's gradients. */
#ifndef ANIMA_AUTOGRAD_GRADCHECK_H
#define ANIMA_AUTOGRAD_GRADCHECK_H

#include "autograd.h"

/* The function under test: any tensor-valued function of the inputs. */
typedef Tensor *(*AgFn)(int n, Tensor *const *inputs, void *user);

typedef struct {
    double max_abs_err; /* largest |analytic - numeric| */
    double max_ref;     /* largest |numeric| seen */
    int bad_input;      /* first failing input, -1 if none */
    int64_t bad_index;  /* its element */
    double analytic, numeric;
} AgGradcheckReport;

/* Checks d/dx of L = sum(f(x) * w) (w fixed, random) for every input that requires grad.
 * Inputs must be f64 contiguous leaves. Passes when every element satisfies
 * |analytic - numeric| <= atol + rtol * |numeric|. */
bool ag_gradcheck(AgFn f, int n, Tensor *const *inputs, void *user, double eps, double atol, double rtol,
                  AgGradcheckReport *report);

#endif
