/* optim/comm_nccl.c — NCCL ranks on GPUs: rank 0 creates the ncclUniqueId and broadcasts it
 * over MPI; each rank uses GPU (rank % devices). Built with CUDA=1 (ANIMA_CUDA); otherwise
 * NCCL is reported unavailable and the communicator stays on MPI. */
#include "comm_internal.h"

#ifdef ANIMA_CUDA
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>

#include "tensor/backend.h"

int optim_comm_nccl_init(OptimComm *c) {
    int ndev = 0;
    if (!tensor_backend_cuda() || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) return -1;
    cudaSetDevice(c->rank % ndev);
    ncclUniqueId id;
    if (c->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return -1;
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, c->size, id, c->rank) != ncclSuccess) return -1;
    cudaStream_t s;
    cudaStreamCreate(&s);
    c->nccl = comm;
    c->stream = s;
    c->kind = OPTIM_COMM_NCCL;
    return 0;
}

void optim_comm_nccl_finalize(OptimComm *c) {
    if (!c->nccl) return;
    ncclCommDestroy((ncclComm_t)c->nccl);
    cudaStreamDestroy((cudaStream_t)c->stream);
    c->nccl = NULL;
}

static ncclDataType_t nccl_type(const Tensor *t) { return t->dtype == TENSOR_F64 ? ncclFloat64 : ncclFloat32; }

void optim_comm_nccl_allreduce_sum(OptimComm *c, Tensor *flat) {
    void *p = tensor_data_ptr(flat);
    ncclResult_t r = ncclAllReduce(p, p, (size_t)tensor_numel(flat), nccl_type(flat), ncclSum, (ncclComm_t)c->nccl,
                                   (cudaStream_t)c->stream);
    if (r != ncclSuccess) tensor_fail("optim_comm_allreduce_mean", "NCCL: %s", ncclGetErrorString(r));
    cudaStreamSynchronize((cudaStream_t)c->stream);
}

void optim_comm_nccl_broadcast(OptimComm *c, Tensor *flat, int root) {
    void *p = tensor_data_ptr(flat);
    ncclResult_t r = ncclBroadcast(p, p, (size_t)tensor_numel(flat), nccl_type(flat), root, (ncclComm_t)c->nccl,
                                   (cudaStream_t)c->stream);
    if (r != ncclSuccess) tensor_fail("optim_comm_broadcast", "NCCL: %s", ncclGetErrorString(r));
    cudaStreamSynchronize((cudaStream_t)c->stream);
}

#else

int optim_comm_nccl_init(OptimComm *c) {
    (void)c;
    return -1;
}
void optim_comm_nccl_finalize(OptimComm *c) { (void)c; }
void optim_comm_nccl_allreduce_sum(OptimComm *c, Tensor *flat) {
    (void)c, (void)flat;
    tensor_fail("optim_comm_allreduce_mean", "built without CUDA: no NCCL");
}
void optim_comm_nccl_broadcast(OptimComm *c, Tensor *flat, int root) {
    (void)c, (void)flat, (void)root;
    tensor_fail("optim_comm_broadcast", "built without CUDA: no NCCL");
}

#endif
