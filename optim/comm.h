/* optim/comm.h — the communicator for data parallelism: one process, MPI ranks on the CPU
 * (MPI_Allreduce), or NCCL ranks on GPUs (the ncclUniqueId broadcast over MPI). Processes are
 * launched with `mpirun -np N anima <command>`; a process started without mpirun is a
 * one-rank world and never touches MPI. Rank 0 writes checkpoints and logs; each rank reads
 * its own shard of the data (optim_comm_shard). */
#ifndef ANIMA_OPTIM_COMM_H
#define ANIMA_OPTIM_COMM_H

#include "nn/params.h"

typedef enum { OPTIM_COMM_SINGLE, OPTIM_COMM_MPI, OPTIM_COMM_NCCL } OptimCommKind;

typedef struct OptimComm OptimComm;

/* SINGLE unless launched by mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE in the environment);
 * want_nccl selects NCCL for CUDA tensors (each rank takes GPU rank % device count). */
OptimComm *optim_comm_init(bool want_nccl);
void optim_comm_finalize(OptimComm *c);
OptimCommKind optim_comm_kind(const OptimComm *c);
int optim_comm_rank(const OptimComm *c);
int optim_comm_size(const OptimComm *c);
/* [begin, end) of n items for this rank: contiguous, sizes differ by at most one */
void optim_comm_shard(const OptimComm *c, int64_t n, int64_t *begin, int64_t *end);

/* In place: every rank ends with the mean over ranks. The flat buffer is reduced in buckets
 * of bucket_bytes (0: one bucket), all posted before any is waited for. */
void optim_comm_allreduce_mean(OptimComm *c, Tensor *flat, size_t bucket_bytes);
/* The model's gradients (params->flat_grad) averaged over ranks. */
void optim_comm_allreduce_grads(OptimComm *c, NnParams *p);
/* root's values to every rank (initial parameters, so all ranks start equal) */
void optim_comm_broadcast(OptimComm *c, Tensor *flat, int root);
double optim_comm_allreduce_sum_scalar(OptimComm *c, double v);
void optim_comm_barrier(OptimComm *c);

#endif
