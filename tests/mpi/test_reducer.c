/* tests/mpi/test_reducer.c — the overlapped reducer (optim_comm_reducer_*) on 2 ranks: with
 * several small buckets, a parameter backward never reaches and one used twice, it must give
 * the same averaged gradients as optim_comm_allreduce_grads after backward, bit for bit (2
 * ranks: each sum is a + b either way), and start some all-reduce while backward still runs. */
#include <math.h>

#include "mpi_tests.h"

typedef struct {
    NnParams p;
    Tensor *unused, *w1, *b1, *w2, *b2, *w3, *b3;
} Net;

static void net_init(Net *m, TensorDType dt) {
    nn_params_init(&m->p, tensor_scope_root(), dt, 17);
    /* first registered: the last bucket, posted by finish (backward never reaches it) */
    m->unused = nn_param(&m->p, "emb", "weight", TENSOR_SHAPE(5, 3), NN_INIT_NORMAL, 1.0);
    m->w1 = nn_param(&m->p, "net.0", "weight", TENSOR_SHAPE(16, 3), NN_INIT_KAIMING_UNIFORM, 0);
    m->b1 = nn_param(&m->p, "net.0", "bias", TENSOR_SHAPE(16), NN_INIT_UNIFORM, 0.1);
    m->w2 = nn_param(&m->p, "net.2", "weight", TENSOR_SHAPE(16, 16), NN_INIT_KAIMING_UNIFORM, 0);
    m->b2 = nn_param(&m->p, "net.2", "bias", TENSOR_SHAPE(16), NN_INIT_UNIFORM, 0.1);
    m->w3 = nn_param(&m->p, "net.4", "weight", TENSOR_SHAPE(1, 16), NN_INIT_KAIMING_UNIFORM, 0);
    m->b3 = nn_param(&m->p, "net.4", "bias", TENSOR_SHAPE(1), NN_INIT_UNIFORM, 0.1);
    nn_params_pack(&m->p);
}

static Tensor *linear(Tensor *x, Tensor *w, Tensor *b) {
    return tensor_add(tensor_matmul(x, tensor_transpose(w, 0, 1)), b);
}

/* w2 is applied twice (shared weights): its gradient has two contributions */
static Tensor *net_loss(Net *m, Tensor *x, Tensor *y) {
    Tensor *h = tensor_tanh(linear(x, m->w1, m->b1));
    h = tensor_tanh(linear(h, m->w2, m->b2));
    h = tensor_tanh(linear(h, m->w2, m->b2));
    Tensor *d = tensor_sub(linear(h, m->w3, m->b3), y);
    return tensor_mean_all(tensor_mul(d, d));
}

static double max_abs_diff(Tensor *a, Tensor *b) {
    return tensor_item(tensor_max(tensor_abs(tensor_sub(a, b)), 0, NULL, false));
}

static void one_case(OptimComm *c, TensorDType dt, size_t bucket_bytes, int *passed, int *failed) {
    int rank = optim_comm_rank(c);
    TensorScope *s = tensor_scope_begin();
    Net m;
    net_init(&m, dt);
    optim_comm_broadcast(c, m.p.flat, 0);
    /* each rank its own data, so the mean differs from every rank's own gradient */
    TensorRng g = {.seed = 5, .stream = 100 + (uint64_t)rank};
    Tensor *x = tensor_randn_with(&g, TENSOR_SHAPE(6, 3), dt);
    Tensor *y = tensor_sin(tensor_sum(x, TENSOR_DIMS(1), true));

    /* the unreached parameter's gradient is whatever its buffer holds: reduced all the same */
    nn_params_zero_grad(&m.p);
    tensor_fill_(m.unused->grad, 1.0 + rank);
    OptimCommReducer *r = optim_comm_reducer_begin(c, &m.p, bucket_bytes);
    ag_backward(net_loss(&m, x, y), NULL, false);
    OptimCommReducerStats st;
    optim_comm_reducer_finish(r, &st);
    Tensor *ovl = tensor_clone(m.p.flat_grad);

    bool unused_ok = tensor_item(tensor_min(m.unused->grad, 0, NULL, false)) == 1.5 &&
                     tensor_item(tensor_max(m.unused->grad, 0, NULL, false)) == 1.5;
    nn_params_zero_grad(&m.p);
    tensor_fill_(m.unused->grad, 1.0 + rank);
    ag_backward(net_loss(&m, x, y), NULL, false);
    Tensor *local = tensor_clone(m.p.flat_grad);
    optim_comm_allreduce_grads(c, &m.p);
    Tensor *ref = m.p.flat_grad;

    /* the mean must differ from this rank's own gradient beyond the unreached parameter's */
    int64_t skip = tensor_numel(m.unused), n = tensor_numel(ref);
    double err = max_abs_diff(ovl, ref);
    double moved = max_abs_diff(tensor_narrow(local, 0, skip, n - skip), tensor_narrow(ref, 0, skip, n - skip));
    /* every rank's difference counts (2 ranks: the same sums, so exactly 0 on each) */
    double errs = optim_comm_allreduce_sum_scalar(c, err);
    double rank_sum = optim_comm_allreduce_sum_scalar(c, tensor_item(tensor_sum_all(ovl)));
    double mine = tensor_item(tensor_sum_all(ovl));
    int n_posted = st.posted_in_backward;
    MPI_CHECK(rank, errs == 0 && moved > 0 && unused_ok, passed, failed,
              "reducer_matches_allreduce_grads (%s, %zu-byte buckets: %d): max |Δg| = %.3g over ranks (mean vs local %.3g)",
              dt == TENSOR_F64 ? "f64" : "f32", bucket_bytes, st.buckets, errs, moved);
    MPI_CHECK(rank, st.overlapped && st.buckets >= 3 && n_posted >= 1 && n_posted < st.buckets, passed, failed,
              "reducer_posts_during_backward (%d of %d buckets posted before backward returned)", n_posted,
              st.buckets);
    MPI_CHECK(rank, fabs(rank_sum - 2 * mine) <= 1e-12 * fabs(rank_sum), passed, failed,
              "reducer_ranks_agree (%s)", dt == TENSOR_F64 ? "f64" : "f32");
    nn_params_free(&m.p);
    tensor_scope_end(s);
}

void test_reducer(OptimComm *c, int *passed, int *failed) {
    if (optim_comm_size(c) != 2) {
        MPI_CHECK(optim_comm_rank(c), false, passed, failed, "reducer tests need 2 ranks");
        return;
    }
    one_case(c, TENSOR_F64, 256, passed, failed);
    one_case(c, TENSOR_F32, 100, passed, failed);

    /* optim_comm_backward: the overlapped path and the after-backward one agree too */
    int rank = optim_comm_rank(c);
    TensorScope *s = tensor_scope_begin();
    Net m;
    net_init(&m, TENSOR_F64);
    optim_comm_broadcast(c, m.p.flat, 0);
    TensorRng g = {.seed = 6, .stream = 200 + (uint64_t)rank};
    Tensor *x = tensor_randn_with(&g, TENSOR_SHAPE(6, 3), TENSOR_F64);
    Tensor *y = tensor_cos(tensor_sum(x, TENSOR_DIMS(1), true));
    optim_comm_set_buckets(c, 512, true);
    nn_params_zero_grad(&m.p);
    optim_comm_backward(c, &m.p, net_loss(&m, x, y), false);
    Tensor *a = tensor_clone(m.p.flat_grad);
    optim_comm_set_buckets(c, 512, false);
    nn_params_zero_grad(&m.p);
    optim_comm_backward(c, &m.p, net_loss(&m, x, y), false);
    optim_comm_set_buckets(c, OPTIM_COMM_BUCKET_BYTES, true);
    double err = optim_comm_allreduce_sum_scalar(c, max_abs_diff(a, m.p.flat_grad));
    MPI_CHECK(rank, err == 0, passed, failed, "comm_backward_overlap_on_off_agree: max |Δg| = %.3g", err);
    nn_params_free(&m.p);
    tensor_scope_end(s);
}
