/* optim/comm_internal.h — the communicator's state, shared by comm.c, comm_nccl.c and
 * comm_reducer.c. */
#ifndef ANIMA_OPTIM_COMM_INTERNAL_H
#define ANIMA_OPTIM_COMM_INTERNAL_H

#include "comm.h"

struct OptimComm {
    OptimCommKind kind;
    int rank, size;
    bool owns_mpi;
    void *nccl;   /* ncclComm_t when kind is NCCL */
    void *stream; /* cudaStream_t for NCCL calls */
    void *ovl_stream, *ovl_event; /* the reducer's: a non-blocking cudaStream_t and a cudaEvent_t */
    size_t bucket_bytes;          /* optim_comm_set_buckets */
    bool overlap;
};

/* Nothing to reduce: no communicator, or one process, unless it is a one-rank NCCL world
 * (optim_comm_init_nccl_one), whose reductions do go through NCCL so that the path can be
 * checked against the CPU. */
bool optim_comm_trivial(const OptimComm *c);

/* flat *= 1 / ranks, with grad mode off: the mean's last step */
void optim_comm_mean_scale(OptimComm *c, Tensor *flat);

int optim_comm_nccl_init(OptimComm *c); /* 0: c->kind becomes NCCL */
void optim_comm_nccl_finalize(OptimComm *c);
void optim_comm_nccl_allreduce_sum(OptimComm *c, Tensor *flat);
void optim_comm_nccl_broadcast(OptimComm *c, Tensor *flat, int root);
/* The reducer's NCCL side. post: once the compute stream's work so far is done (an event),
 * sum n elements at ptr (device memory) over ranks on ovl_stream, without blocking the host.
 * wait: the compute stream waits for everything posted (the host does not). */
void optim_comm_nccl_bucket_post(OptimComm *c, void *ptr, int64_t n, TensorDType dt);
void optim_comm_nccl_bucket_wait(OptimComm *c);

#endif
