/* optim/comm.c — the communicator: one process, or MPI ranks (NCCL in comm_nccl.c). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "comm.h"
#include "comm_internal.h"

static bool launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

OptimComm *optim_comm_init(bool want_nccl) {
    OptimComm *c = base_calloc(1, sizeof *c);
    c->kind = OPTIM_COMM_SINGLE;
    c->size = 1;
    c->bucket_bytes = OPTIM_COMM_BUCKET_BYTES;
    const char *ov = getenv("ANIMA_COMM_OVERLAP");
    c->overlap = !(ov && !strcmp(ov, "0"));
    if (!launched_by_mpirun()) return c;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        c->owns_mpi = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->kind = OPTIM_COMM_MPI;
    if (want_nccl && optim_comm_nccl_init(c) != 0) {
        if (c->rank == 0) base_logf(BASE_LOG_WARN, "anima: NCCL unavailable (no GPU or built without CUDA); using MPI");
    }
    return c;
}

OptimComm *optim_comm_init_nccl_one(void) {
    OptimComm *c = base_calloc(1, sizeof *c);
    c->kind = OPTIM_COMM_SINGLE;
    c->size = 1;
    c->bucket_bytes = OPTIM_COMM_BUCKET_BYTES;
    c->overlap = true;
    if (optim_comm_nccl_init(c) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

void optim_comm_finalize(OptimComm *c) {
    if (!c) return;
    optim_comm_nccl_finalize(c);
    if (c->owns_mpi) {
        int fin = 0;
        MPI_Finalized(&fin);
        if (!fin) MPI_Finalize();
    }
    free(c);
}

OptimCommKind optim_comm_kind(const OptimComm *c) { return c->kind; }
int optim_comm_rank(const OptimComm *c) { return c->rank; }
int optim_comm_size(const OptimComm *c) { return c->size; }

void optim_comm_shard(const OptimComm *c, int64_t n, int64_t *begin, int64_t *end) {
    int64_t q = n / c->size, r = n % c->size;
    *begin = c->rank * q + (c->rank < r ? c->rank : r);
    *end = *begin + q + (c->rank < r ? 1 : 0);
}

void optim_comm_set_buckets(OptimComm *c, size_t bucket_bytes, bool overlap) {
    c->bucket_bytes = bucket_bytes;
    c->overlap = overlap;
}

static MPI_Datatype mpi_type(const Tensor *t) { return t->dtype == TENSOR_F64 ? MPI_DOUBLE : MPI_FLOAT; }

static void scale(Tensor *t, double s) {
    bool g = tensor_grad_set_enabled(false);
    tensor_scale_(t, s);
    tensor_grad_set_enabled(g);
}

void optim_comm_mean_scale(OptimComm *c, Tensor *flat) { scale(flat, 1.0 / c->size); }

bool optim_comm_trivial(const OptimComm *c) { return !c || (c->size == 1 && c->kind != OPTIM_COMM_NCCL); }

void optim_comm_allreduce_mean(OptimComm *c, Tensor *flat, size_t bucket_bytes) {
    if (optim_comm_trivial(c) || (c->size == 1 && tensor_device(flat) != TENSOR_CUDA)) return;
    if (!tensor_is_contiguous(flat) || flat->dtype == TENSOR_I64)
        tensor_fail("optim_comm_allreduce_mean", "needs a contiguous float buffer");
    if (c->kind == OPTIM_COMM_NCCL && tensor_device(flat) == TENSOR_CUDA) {
        optim_comm_nccl_allreduce_sum(c, flat);
    } else {
        if (tensor_device(flat) != TENSOR_CPU)
            tensor_fail("optim_comm_allreduce_mean", "MPI reduces host memory; use NCCL for CUDA tensors");
        int64_t n = tensor_numel(flat), es = (int64_t)tensor_dtype_size(flat->dtype);
        int64_t per = bucket_bytes ? (int64_t)bucket_bytes / es : n;
        if (per < 1) per = 1;
        int64_t nb = (n + per - 1) / per;
        MPI_Request *req = base_malloc(sizeof *req * (size_t)(nb ? nb : 1));
        char *base = tensor_data_ptr(flat);
        /* post every bucket, then wait: the library can pipeline them */
        for (int64_t b = 0; b < nb; b++) {
            int64_t s = b * per, len = s + per < n ? per : n - s;
            MPI_Iallreduce(MPI_IN_PLACE, base + s * es, (int)len, mpi_type(flat), MPI_SUM, MPI_COMM_WORLD, &req[b]);
        }
        MPI_Waitall((int)nb, req, MPI_STATUSES_IGNORE);
        free(req);
    }
    scale(flat, 1.0 / c->size);
}

void optim_comm_allreduce_grads(OptimComm *c, NnParams *p) {
    if (!p->packed) tensor_fail("optim_comm_allreduce_grads", "pack the parameters first (nn_params_pack)");
    optim_comm_allreduce_mean(c, p->flat_grad, c->bucket_bytes);
}

void optim_comm_broadcast(OptimComm *c, Tensor *flat, int root) {
    if (c->size == 1) return;
    if (c->kind == OPTIM_COMM_NCCL && tensor_device(flat) == TENSOR_CUDA) {
        optim_comm_nccl_broadcast(c, flat, root);
        return;
    }
    MPI_Bcast(tensor_data_ptr(flat), (int)tensor_numel(flat), mpi_type(flat), root, MPI_COMM_WORLD);
}

double optim_comm_allreduce_sum_scalar(OptimComm *c, double v) {
    if (c->size == 1) return v;
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
}

void optim_comm_barrier(OptimComm *c) {
    if (c->size > 1) MPI_Barrier(MPI_COMM_WORLD);
}
