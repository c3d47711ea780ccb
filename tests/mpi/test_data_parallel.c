/* tests/mpi/test_data_parallel.c — run under `mpirun -np 2`: one data-parallel AdamW step with
 * batch B/2 per rank (gradients averaged by optim_comm_allreduce_grads) must leave the same
 * parameters as one single-process step with batch B; then the overlapped reducer's suite
 * (test_reducer.c) and the `anima fit` suite of test_fit_dp.c. Prints "N passed, N failed" on
 * rank 0 (the whole program's total). */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "mpi_tests.h"
#include "optim/comm.h"
#include "optim/optim.h"

typedef struct {
    NnParams p;
    Tensor *w1, *b1, *w2;
} Mlp;

static void mlp_init(Mlp *m, TensorScope *scope) {
    nn_params_init(&m->p, scope, TENSOR_F64, 11);
    m->w1 = nn_param(&m->p, "net.0", "weight", TENSOR_SHAPE(16, 3), NN_INIT_KAIMING_UNIFORM, 0);
    m->b1 = nn_param(&m->p, "net.0", "bias", TENSOR_SHAPE(16), NN_INIT_UNIFORM, 0.1);
    m->w2 = nn_param(&m->p, "net.2", "weight", TENSOR_SHAPE(1, 16), NN_INIT_KAIMING_UNIFORM, 0);
    nn_params_pack(&m->p);
}

/* mean squared error of the MLP on rows [b, e) of (x, y) */
static Tensor *loss_on(Mlp *m, Tensor *x, Tensor *y, int64_t b, int64_t e) {
    Tensor *xs = tensor_narrow(x, 0, b, e - b), *ys = tensor_narrow(y, 0, b, e - b);
    Tensor *h = tensor_tanh(tensor_add(tensor_matmul(xs, tensor_transpose(m->w1, 0, 1)), m->b1));
    Tensor *d = tensor_sub(tensor_matmul(h, tensor_transpose(m->w2, 0, 1)), ys);
    return tensor_mean_all(tensor_mul(d, d));
}

static void step(Mlp *m, Optim *o, OptimComm *c, Tensor *x, Tensor *y, int64_t b, int64_t e) {
    TensorScope *s = tensor_scope_begin();
    nn_params_zero_grad(&m->p);
    ag_backward(loss_on(m, x, y, b, e), NULL, false);
    if (c) optim_comm_allreduce_grads(c, &m->p);
    optim_step(o, 1e-2);
    tensor_scope_end(s);
}

int main(void) {
    /* one ordered stream: mpirun forwards stdout and stderr separately, and the fit runs'
     * messages (stderr) would otherwise land after the summary line tests/run.sh looks for */
    setvbuf(stdout, NULL, _IOLBF, 0);
    dup2(STDOUT_FILENO, STDERR_FILENO);
    OptimComm *c = optim_comm_init(false);
    int rank = optim_comm_rank(c), size = optim_comm_size(c), passed = 0, failed = 0;
    const int64_t B = 8;
    TensorRng g = {.seed = 3};
    Tensor *x = tensor_randn_with(&g, TENSOR_SHAPE(B, 3), TENSOR_F64);
    Tensor *y = tensor_sin(tensor_sum(x, TENSOR_DIMS(1), true));

    Mlp dp;
    mlp_init(&dp, tensor_scope_root());
    optim_comm_broadcast(c, dp.p.flat, 0); /* every rank starts from rank 0's weights */
    OptimConfig cfg = optim_defaults(OPTIM_ADAMW);
    Optim odp, oref;
    optim_init(&odp, &dp.p, &cfg);
    int64_t b, e;
    optim_comm_shard(c, B, &b, &e);
    for (int k = 0; k < 3; k++) step(&dp, &odp, c, x, y, b, e);

    if (rank == 0) {
        Mlp fresh;
        mlp_init(&fresh, tensor_scope_root()); /* same seed: the same initial weights */
        optim_init(&oref, &fresh.p, &cfg);
        for (int k = 0; k < 3; k++) step(&fresh, &oref, NULL, x, y, 0, B);
        double err = tensor_item(tensor_max(tensor_abs(tensor_sub(dp.p.flat, fresh.p.flat)), 0, NULL, false));
        bool ok = size == 2 && err <= 1e-6;
        printf("%s dp_step_matches_single_process (2 ranks × B/2 vs 1 × B, 3 AdamW steps): max |Δθ| = %.3g\n",
               ok ? "ok  " : "FAIL", err);
        ok ? passed++ : failed++;
        nn_params_free(&fresh.p);
    }
    /* every rank ends with identical parameters */
    double local = tensor_item(tensor_sum_all(dp.p.flat));
    double sum = optim_comm_allreduce_sum_scalar(c, local);
    if (rank == 0) {
        bool ok = fabs(sum - size * local) <= 1e-12 * fabs(sum);
        printf("%s dp_ranks_stay_in_sync\n", ok ? "ok  " : "FAIL");
        ok ? passed++ : failed++;
    }
    nn_params_free(&dp.p);
    fflush(stdout);
    test_reducer(c, &passed, &failed);
    fflush(stdout);
    test_fit_data_parallel(c, &passed, &failed);
    if (rank == 0) printf("%d passed, %d failed\n", passed, failed);
    optim_comm_finalize(c);
    tensor_runtime_shutdown();
    return failed ? 1 : 0;
}
