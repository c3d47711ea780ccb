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
    if (c->size > 1) MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD); /* one rank: no MPI */
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, c->size, id, c->rank) != ncclSuccess) return -1;
    cudaStream_t s, ovl;
    cudaStreamCreate(&s);
    /* the reducer's stream must not wait for the legacy default stream, where the tensor kernels
     * run, or its all-reduces could not overlap backward: it waits for events instead */
    cudaStreamCreateWithFlags(&ovl, cudaStreamNonBlocking);
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    c->nccl = comm;
    c->stream = s;
    c->ovl_stream = ovl;
    c->ovl_event = ev;
    c->kind = OPTIM_COMM_NCCL;
    return 0;
}

void optim_comm_nccl_finalize(OptimComm *c) {
    if (!c->nccl) return;
    ncclCommDestroy((ncclComm_t)c->nccl);
    cudaStreamDestroy((cudaStream_t)c->stream);
    cudaStreamDestroy((cudaStream_t)c->ovl_stream);
    cudaEventDestroy((cudaEvent_t)c->ovl_event);
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

static void cu_ok(cudaError_t e) {
    if (e != cudaSuccess) tensor_fail("optim_comm_reducer", "CUDA: %s", cudaGetErrorString(e));
}

/* The tensor kernels run on the legacy default stream (cudaStreamLegacy; also right if they
 * moved to per-thread default streams, which the legacy stream waits for). One event serves
 * every bucket: cudaStreamWaitEvent takes the event's state when it is called. */
void optim_comm_nccl_bucket_post(OptimComm *c, void *ptr, int64_t n, TensorDType dt) {
    cudaStream_t ovl = (cudaStream_t)c->ovl_stream;
    cudaEvent_t ev = (cudaEvent_t)c->ovl_event;
    cu_ok(cudaEventRecord(ev, cudaStreamLegacy)); /* the bucket's last gradient kernel is queued */
    cu_ok(cudaStreamWaitEvent(ovl, ev, 0));
    ncclResult_t r = ncclAllReduce(ptr, ptr, (size_t)n, dt == TENSOR_F64 ? ncclFloat64 : ncclFloat32, ncclSum,
                                   (ncclComm_t)c->nccl, ovl);
    if (r != ncclSuccess) tensor_fail("optim_comm_reducer", "NCCL: %s", ncclGetErrorString(r));
}

void optim_comm_nccl_bucket_wait(OptimComm *c) {
    cudaEvent_t ev = (cudaEvent_t)c->ovl_event;
    cu_ok(cudaEventRecord(ev, (cudaStream_t)c->ovl_stream));
    cu_ok(cudaStreamWaitEvent(cudaStreamLegacy, ev, 0)); /* the mean's scale and the optimizer come after */
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
void optim_comm_nccl_bucket_post(OptimComm *c, void *ptr, int64_t n, TensorDType dt) {
    (void)c, (void)ptr, (void)n, (void)dt;
    tensor_fail("optim_comm_reducer", "built without CUDA: no NCCL");
}
void optim_comm_nccl_bucket_wait(OptimComm *c) {
    (void)c;
    tensor_fail("optim_comm_reducer", "built without CUDA: no NCCL");
}

#endif
