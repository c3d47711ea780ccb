/* optim/comm_reducer.c — the gradient all-reduce overlapped with backward (comm.h): an autograd
 * leaf-ready hook marks parameters final; a bucket whose parameters are all final, and whose
 * predecessors in the fixed bucket order are posted, starts its non-blocking all-reduce. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "comm.h"
#include "comm_internal.h"

struct OptimCommReducer {
    OptimComm *c;
    NnParams *p;
    Tensor *flat;
    size_t bucket_bytes;
    bool nccl;     /* buckets go to NCCL (CUDA gradients), else to MPI (host memory) */
    bool fallback; /* no overlap: finish reduces the whole buffer after backward */
    AgLeafHook prev;
    /* per parameter: element offset in flat, length, bucket, whether its gradient is final */
    int64_t *off, *len;
    int *bucket;
    bool *ready;
    /* per bucket, bucket 0 holding the last parameters: its range of flat, the parameters
     * (with elements) not yet final, its request */
    int nb;
    int64_t *b_start, *b_len;
    int *b_pending;
    MPI_Request *req;
    int next; /* buckets [0, next) are posted */
    bool all_done;
    int posted_in_backward;
};

static void post(OptimCommReducer *r, int b) {
    Tensor *f = r->flat;
    int64_t es = (int64_t)tensor_dtype_size(f->dtype);
    char *ptr = (char *)tensor_data_ptr(f) + r->b_start[b] * es;
    if (r->nccl) {
        optim_comm_nccl_bucket_post(r->c, ptr, r->b_len[b], f->dtype);
    } else {
        MPI_Iallreduce(MPI_IN_PLACE, ptr, (int)r->b_len[b], f->dtype == TENSOR_F64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, &r->req[b]);
    }
}

/* MPI moves data only inside MPI calls (no progress thread in the usual builds): test the posted
 * requests so their rounds advance while backward computes. */
static void progress(OptimCommReducer *r) {
    if (r->nccl || r->all_done || r->next == 0) return;
    int flag = 0;
    MPI_Testall(r->next, r->req, &flag, MPI_STATUSES_IGNORE);
    if (flag && r->next == r->nb) r->all_done = true;
}

/* post every bucket that is ready and whose predecessors are posted: the same order on every
 * rank, whatever order this rank's backward finished them in */
static void post_ready(OptimCommReducer *r) {
    while (r->next < r->nb && r->b_pending[r->next] == 0) {
        post(r, r->next++);
        r->posted_in_backward++;
    }
}

/* the parameter that is leaf, or -1 (another leaf): bisect on its gradient's offset in flat */
static int find_param(const OptimCommReducer *r, const Tensor *leaf) {
    const Tensor *g = leaf->grad;
    if (!g || g->storage != r->flat->storage) return -1;
    int64_t o = g->offset - r->flat->offset;
    int lo = 0, hi = r->p->n; /* lo: the first parameter starting after o */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->off[mid] <= o) lo = mid + 1;
        else hi = mid;
    }
    /* zero-sized parameters share their offset with the next one: match the tensor itself */
    for (int i = lo - 1; i >= 0 && r->off[i] == o; i--)
        if (r->p->items[i].value == leaf) return i;
    return -1;
}

static void on_leaf_ready(Tensor *leaf, void *user) {
    OptimCommReducer *r = user;
    int i = find_param(r, leaf);
    if (i >= 0) {
        if (r->ready[i])
            tensor_fail("optim_comm_reducer", "parameter '%s' final twice: run one ag_backward between begin and finish",
                        r->p->items[i].name);
        r->ready[i] = true;
        if (r->len[i] > 0 && --r->b_pending[r->bucket[i]] == 0) post_ready(r);
        progress(r);
    }
    if (r->prev.fn) r->prev.fn(leaf, r->prev.user);
}

/* Every parameter's gradient a contiguous view into flat, the parameters tiling it in order
 * (what nn_params_pack and nn_params_mirror make): then a bucket is one range of flat. */
static bool tiles_flat(OptimCommReducer *r) {
    int64_t pos = 0;
    for (int i = 0; i < r->p->n; i++) {
        const Tensor *v = r->p->items[i].value, *g = v->grad;
        if (!g || g->storage != r->flat->storage || !tensor_is_contiguous(g)) return false;
        r->off[i] = g->offset - r->flat->offset;
        r->len[i] = tensor_numel(g);
        if (r->off[i] != pos) return false;
        pos += r->len[i];
    }
    return pos == tensor_numel(r->flat);
}

/* buckets of whole parameters from the last one back, each closed once it reaches bucket_bytes */
static void make_buckets(OptimCommReducer *r) {
    int n = r->p->n;
    int64_t es = (int64_t)tensor_dtype_size(r->flat->dtype);
    r->b_start = base_calloc((size_t)n, sizeof *r->b_start);
    r->b_len = base_calloc((size_t)n, sizeof *r->b_len);
    r->b_pending = base_calloc((size_t)n, sizeof *r->b_pending);
    r->req = base_calloc((size_t)n, sizeof *r->req);
    int nb = -1;
    int64_t bytes = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (nb < 0 || (r->bucket_bytes && bytes >= (int64_t)r->bucket_bytes)) {
            nb++;
            bytes = 0;
        }
        r->bucket[i] = nb;
        r->b_start[nb] = r->off[i];
        r->b_len[nb] += r->len[i];
        if (r->b_len[nb] > INT_MAX) tensor_fail("optim_comm_reducer", "a bucket of more than %d elements", INT_MAX);
        if (r->len[i] > 0) r->b_pending[nb]++;
        bytes += r->len[i] * es;
    }
    r->nb = nb + 1;
    for (int b = 0; b < r->nb; b++) r->req[b] = MPI_REQUEST_NULL;
}

OptimCommReducer *optim_comm_reducer_begin(OptimComm *c, NnParams *p, size_t bucket_bytes) {
    if (optim_comm_trivial(c)) return NULL;
    if (!p->packed) tensor_fail("optim_comm_reducer_begin", "pack the parameters first (nn_params_pack)");
    OptimCommReducer *r = base_calloc(1, sizeof *r);
    r->c = c;
    r->p = p;
    r->flat = p->flat_grad;
    r->bucket_bytes = bucket_bytes;
    Tensor *f = r->flat;
    bool cuda = tensor_device(f) == TENSOR_CUDA;
    r->nccl = cuda && c->kind == OPTIM_COMM_NCCL;
    if (c->size == 1 && !r->nccl) { /* a one-rank NCCL world given host gradients: nothing to do */
        free(r);
        return NULL;
    }
    r->off = base_calloc((size_t)p->n, sizeof *r->off);
    r->len = base_calloc((size_t)p->n, sizeof *r->len);
    r->bucket = base_calloc((size_t)p->n, sizeof *r->bucket);
    r->ready = base_calloc((size_t)p->n, sizeof *r->ready);
    /* what the overlap cannot do, optim_comm_allreduce_mean does after backward (or names the
     * problem: an MPI world reducing device memory) */
    r->fallback = !tensor_is_contiguous(f) || (f->dtype != TENSOR_F32 && f->dtype != TENSOR_F64) ||
                  (cuda && !r->nccl) || (!cuda && tensor_device(f) != TENSOR_CPU) || p->n == 0 || !tiles_flat(r);
    if (r->fallback) return r;
    make_buckets(r);
    r->prev = ag_leaf_hook_set((AgLeafHook){on_leaf_ready, r});
    return r;
}

void optim_comm_reducer_finish(OptimCommReducer *r, OptimCommReducerStats *stats) {
    if (stats) *stats = (OptimCommReducerStats){0};
    if (!r) return;
    if (r->fallback) {
        optim_comm_allreduce_mean(r->c, r->flat, r->bucket_bytes);
        if (stats) { /* allreduce_mean's buckets */
            int64_t n = tensor_numel(r->flat), es = (int64_t)tensor_dtype_size(r->flat->dtype);
            int64_t per = r->bucket_bytes ? (int64_t)r->bucket_bytes / es : n;
            if (per < 1) per = 1;
            stats->buckets = (int)((n + per - 1) / per);
        }
    } else {
        ag_leaf_hook_set(r->prev);
        if (stats) *stats = (OptimCommReducerStats){r->nb, r->posted_in_backward, true};
        /* buckets backward left unfinished (parameters it never reached): now, in order */
        while (r->next < r->nb) post(r, r->next++);
        if (r->nccl) optim_comm_nccl_bucket_wait(r->c);
        else MPI_Waitall(r->nb, r->req, MPI_STATUSES_IGNORE);
        optim_comm_mean_scale(r->c, r->flat);
    }
    free(r->off);
    free(r->len);
    free(r->bucket);
    free(r->ready);
    free(r->b_start);
    free(r->b_len);
    free(r->b_pending);
    free(r->req);
    free(r);
}

/* backward with the gradient all-reduce: overlapped through a reducer when the communicator
 * asks for it (here, above the reducer, so that comm.c does not depend on this file) */
void optim_comm_backward(OptimComm *c, NnParams *p, Tensor *loss, bool retain_graph) {
    if (optim_comm_trivial(c)) {
        ag_backward(loss, NULL, retain_graph);
        return;
    }
    if (!c->overlap) {
        ag_backward(loss, NULL, retain_graph);
        optim_comm_allreduce_grads(c, p);
        return;
    }
    OptimCommReducer *r = optim_comm_reducer_begin(c, p, c->bucket_bytes);
    ag_backward(loss, NULL, retain_graph);
    optim_comm_reducer_finish(r, NULL);
}
