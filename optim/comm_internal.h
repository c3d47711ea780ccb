/* optim/comm_internal.h — the communicator's state, shared by comm.c and comm_nccl.c. */
#ifndef ANIMA_OPTIM_COMM_INTERNAL_H
#define ANIMA_OPTIM_COMM_INTERNAL_H

#include "comm.h"

struct OptimComm {
    OptimCommKind kind;
    int rank, size;
    bool owns_mpi;
    void *nccl;   /* ncclComm_t when kind is NCCL */
    void *stream; /* cudaStream_t for NCCL calls */
};

int optim_comm_nccl_init(OptimComm *c); /* 0: c->kind becomes NCCL */
void optim_comm_nccl_finalize(OptimComm *c);
void optim_comm_nccl_allreduce_sum(OptimComm *c, Tensor *flat);
void optim_comm_nccl_broadcast(OptimComm *c, Tensor *flat, int root);

#endif
