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
/* A one-rank NCCL communicator in a process not started by mpirun (MPI untouched): the NCCL
 * path's parity test against the CPU. NULL when NCCL cannot start (no GPU, CUDA=0 build). */
OptimComm *optim_comm_init_nccl_one(void);
OptimCommKind optim_comm_kind(const OptimComm *c);
int optim_comm_rank(const OptimComm *c);
int optim_comm_size(const OptimComm *c);
/* [begin, end) of n items for this rank: contiguous, sizes differ by at most one */
void optim_comm_shard(const OptimComm *c, int64_t n, int64_t *begin, int64_t *end);

/* In place: every rank ends with the mean over ranks. The flat buffer is reduced in buckets
 * of bucket_bytes (0: one bucket), all posted before any is waited for. */
void optim_comm_allreduce_mean(OptimComm *c, Tensor *flat, size_t bucket_bytes);
/* The model's gradients (params->flat_grad) averaged over ranks, after backward, in buckets of
 * the communicator's bucket size. */
void optim_comm_allreduce_grads(OptimComm *c, NnParams *p);

/* Gradient buckets: the size the flat gradient buffer is cut into for the all-reduce (0: one
 * bucket) and whether optim_comm_backward overlaps it with backward. Defaults: 25 MiB and
 * overlap on (ANIMA_COMM_OVERLAP=0 in the environment turns it off at optim_comm_init). */
#define OPTIM_COMM_BUCKET_BYTES ((size_t)25 << 20)
void optim_comm_set_buckets(OptimComm *c, size_t bucket_bytes, bool overlap);

/* The overlapped reducer: begin installs an autograd leaf-ready hook (ag_leaf_hook_set), then
 * the caller runs exactly one ag_backward, then finish. params->flat_grad is cut into buckets
 * of whole parameters, about bucket_bytes each (0: one bucket), in reverse parameter order
 * (backward finishes the last layers first); as soon as every parameter of the next bucket in
 * that order has its final gradient, the bucket's all-reduce starts without blocking
 * (MPI_Iallreduce, progressed by MPI_Testall from later hooks; NCCL: ncclAllReduce on a
 * separate stream after an event on the compute stream) while backward goes on. Buckets are
 * posted in the same fixed order on every rank, as collectives must be. finish posts what is
 * left (parameters backward never reached keep what their gradient holds: zeros after a zero
 * grad), waits for all, and divides by the number of ranks: the result is the same as
 * optim_comm_allreduce_grads'. One rank (or c NULL): begin returns NULL and finish does nothing.
 * Where the overlap cannot be used (gradients not one view per parameter into flat_grad, a
 * dtype or device the backend cannot reduce) finish reduces after backward instead, like
 * optim_comm_allreduce_mean. Begin and finish are collective. */
typedef struct OptimCommReducer OptimCommReducer;
typedef struct {
    int buckets;            /* buckets the gradients were cut into (0: none, one rank) */
    int posted_in_backward; /* of them, all-reduces started from the hook while backward ran */
    bool overlapped;        /* false: reduced after backward (one rank, or the fallback) */
} OptimCommReducerStats;
OptimCommReducer *optim_comm_reducer_begin(OptimComm *c, NnParams *p, size_t bucket_bytes);
void optim_comm_reducer_finish(OptimCommReducer *r, OptimCommReducerStats *stats); /* stats may be NULL */

/* A training step's backward: ag_backward(loss, NULL, retain_graph), then the model's gradients
 * averaged over ranks — overlapped (the reducer above) when the communicator's overlap is on,
 * else optim_comm_allreduce_grads after it. c NULL or one rank: just the backward. */
void optim_comm_backward(OptimComm *c, NnParams *p, Tensor *loss, bool retain_graph);
/* root's values to every rank (initial parameters, so all ranks start equal) */
void optim_comm_broadcast(OptimComm *c, Tensor *flat, int root);
double optim_comm_allreduce_sum_scalar(OptimComm *c, double v);
void optim_comm_barrier(OptimComm *c);

#endif
