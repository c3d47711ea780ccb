/* tools/cuemu/nccl.cpp — the emulator's NCCL (include/nccl.h). A communicator is a rank and a
 * size, plus an MPI communicator when there are several ranks. Collectives stage the device
 * buffer in host memory (copied inside host access: MPI never touches the emulator's device
 * heap, which is closed to host code outside kernels and library calls), exchange it over MPI
 * (MPI_Allgather for reductions, MPI_Bcast for broadcasts) and reduce the gathered copies in
 * rank order, so every rank gets the same bits whatever the type, including 16-bit floats and
 * ncclAvg, which MPI's reductions do not cover. */
#include <nccl.h>

#include <limits.h>
/* MPI's C API only: Open MPI's C++ bindings do not build under -Wextra -Werror */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <random>
#include <vector>

#include "cuemu.h"
#include "cuemu_float16.h"

struct ncclComm {
    int rank, size;
    MPI_Comm mpi; /* MPI_COMM_NULL with one rank */
};

static const char kMagic[] = "cuemu-nccl-id"; /* the first bytes of an id made by ncclGetUniqueId */
static char last_error[512];

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return r;
}

static size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
    }
}

template <typename T> static T combine(T a, T b, ncclRedOp_t op) {
    switch (op) {
    case ncclSum:
    case ncclAvg: return (T)(a + b);
    case ncclProd: return (T)(a * b);
    case ncclMax: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* out = op over the size copies in `all` (rank r's at all + r * count), in rank order */
template <typename T> static void reduce_as(T *out, const T *all, size_t count, int size, ncclRedOp_t op) {
    for (size_t i = 0; i < count; i++) {
        T v = all[i];
        for (int r = 1; r < size; r++) v = combine(v, all[(size_t)r * count + i], op);
        if (op == ncclAvg) v = (T)(v / (T)size);
        out[i] = v;
    }
}

/* 16-bit floats: combined in f32, rounded back after each step as a 16-bit ring would */
static void reduce_16(uint16_t *out, const uint16_t *all, size_t count, int size, ncclRedOp_t op, bool bf) {
    auto ld = [bf](uint16_t h) { return bf ? bf16_to_f32(h) : f16_to_f32(h); };
    auto st = [bf](float f) { return bf ? f32_to_bf16(f) : f32_to_f16(f); };
    for (size_t i = 0; i < count; i++) {
        uint16_t v = all[i];
        for (int r = 1; r < size; r++) v = st(combine(ld(v), ld(all[(size_t)r * count + i]), op));
        if (op == ncclAvg) v = st(ld(v) / (float)size);
        out[i] = v;
    }
}

static void reduce(void *out, const void *all, size_t count, int size, ncclDataType_t t, ncclRedOp_t op) {
    switch (t) {
    case ncclInt8: reduce_as((int8_t *)out, (const int8_t *)all, count, size, op); break;
    case ncclUint8: reduce_as((uint8_t *)out, (const uint8_t *)all, count, size, op); break;
    case ncclInt32: reduce_as((int32_t *)out, (const int32_t *)all, count, size, op); break;
    case ncclUint32: reduce_as((uint32_t *)out, (const uint32_t *)all, count, size, op); break;
    case ncclInt64: reduce_as((int64_t *)out, (const int64_t *)all, count, size, op); break;
    case ncclUint64: reduce_as((uint64_t *)out, (const uint64_t *)all, count, size, op); break;
    case ncclFloat32: reduce_as((float *)out, (const float *)all, count, size, op); break;
    case ncclFloat64: reduce_as((double *)out, (const double *)all, count, size, op); break;
    case ncclFloat16: reduce_16((uint16_t *)out, (const uint16_t *)all, count, size, op, false); break;
    case ncclBfloat16: reduce_16((uint16_t *)out, (const uint16_t *)all, count, size, op, true); break;
    default: break;
    }
}

static unsigned id_color(const ncclUniqueId &id) { /* FNV-1a, as a non-negative MPI color */
    uint32_t h = 2166136261u;
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) h = (h ^ (unsigned char)id.internal[i]) * 16777619u;
    return h & 0x3fffffffu;
}

static void copy_from_device(void *dst, const void *src, size_t n) {
    cuemu_host_access_begin();
    memcpy(dst, src, n);
    cuemu_host_access_end();
}

static void copy_to_device(void *dst, const void *src, size_t n) {
    cuemu_host_access_begin();
    memcpy(dst, src, n);
    cuemu_host_access_end();
}

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    static unsigned counter;
    memset(id, 0, sizeof *id);
    memcpy(id->internal, kMagic, sizeof kMagic);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    std::random_device rd;
    unsigned long long fields[5] = {(unsigned long long)getpid(), (unsigned long long)ts.tv_sec,
                                    (unsigned long long)ts.tv_nsec, ++counter, ((unsigned long long)rd() << 32) | rd()};
    memcpy(id->internal + sizeof kMagic, fields, sizeof fields);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    if (!comm) return fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    *comm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of nranks %d", rank, nranks);
    bool id_ok = memcmp(commId.internal, kMagic, sizeof kMagic) == 0;
    if (nranks == 1) {
        if (!id_ok) return fail(ncclInvalidArgument, "ncclCommInitRank: the ncclUniqueId was not made by ncclGetUniqueId");
        *comm = new ncclComm{0, 1, MPI_COMM_NULL};
        return ncclSuccess;
    }
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return fail(ncclInvalidUsage, "ncclCommInitRank: %d ranks need MPI (the emulator's transport), and MPI is %s",
                    nranks, finalized ? "finalized" : "not initialized");
    /* the ranks holding the same id form the communicator; a rank with a foreign id (one that
     * missed rank 0's broadcast) takes no part, and the others then count fewer than nranks */
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, id_ok ? (int)id_color(commId) : MPI_UNDEFINED, rank, &split);
    if (!id_ok) return fail(ncclInvalidArgument, "ncclCommInitRank: the ncclUniqueId was not made by ncclGetUniqueId");
    int size = 0;
    MPI_Comm_size(split, &size);
    std::vector<int> ranks((size_t)size);
    MPI_Allgather(&rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, split);
    bool ok = size == nranks;
    for (int r = 0; ok && r < size; r++) ok = ranks[(size_t)r] == r; /* split orders by key = rank */
    if (!ok) {
        MPI_Comm_free(&split);
        return fail(ncclInvalidArgument,
                    "ncclCommInitRank: %d process(es) hold this ncclUniqueId with ranks that are not 0..%d (was the id "
                    "broadcast to every rank?)",
                    size, nranks - 1);
    }
    *comm = new ncclComm{rank, nranks, split};
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
    if (comm->mpi != MPI_COMM_NULL) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Comm_free(&comm->mpi);
    }
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    if (!comm || !count) return fail(ncclInvalidArgument, "ncclCommCount: NULL argument");
    *count = comm->size;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    if (!comm || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: NULL argument");
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    if (!comm || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: NULL argument");
    *device = 0; /* the emulator has one device */
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return last_error;
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    size_t es = type_size(datatype);
    if (!comm) return fail(ncclInvalidArgument, "ncclAllReduce: comm is NULL");
    if (!es) return fail(ncclInvalidArgument, "ncclAllReduce: datatype %d", (int)datatype);
    if ((int)op < 0 || op >= ncclNumOps) return fail(ncclInvalidArgument, "ncclAllReduce: op %d", (int)op);
    if (count == 0) return ncclSuccess;
    size_t bytes = count * es;
    cuemu_require_device(sendbuff, bytes, "ncclAllReduce: sendbuff");
    cuemu_require_device(recvbuff, bytes, "ncclAllReduce: recvbuff");
    std::vector<char> mine(bytes), out(bytes);
    copy_from_device(mine.data(), sendbuff, bytes);
    if (comm->size == 1) {
        reduce(out.data(), mine.data(), count, 1, datatype, op);
    } else {
        if (bytes > INT_MAX) return fail(ncclInvalidUsage, "ncclAllReduce: %zu bytes: the emulator's MPI transport takes < 2 GiB", bytes);
        std::vector<char> all(bytes * (size_t)comm->size);
        if (MPI_Allgather(mine.data(), (int)bytes, MPI_BYTE, all.data(), (int)bytes, MPI_BYTE, comm->mpi) != MPI_SUCCESS)
            return fail(ncclSystemError, "ncclAllReduce: MPI_Allgather failed");
        reduce(out.data(), all.data(), count, comm->size, datatype, op);
    }
    copy_to_device(recvbuff, out.data(), bytes);
    return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
    (void)stream;
    size_t es = type_size(datatype);
    if (!comm) return fail(ncclInvalidArgument, "ncclBroadcast: comm is NULL");
    if (!es) return fail(ncclInvalidArgument, "ncclBroadcast: datatype %d", (int)datatype);
    if (root < 0 || root >= comm->size) return fail(ncclInvalidArgument, "ncclBroadcast: root %d of %d ranks", root, comm->size);
    if (count == 0) return ncclSuccess;
    size_t bytes = count * es;
    if (comm->rank == root) cuemu_require_device(sendbuff, bytes, "ncclBroadcast: sendbuff (root)");
    cuemu_require_device(recvbuff, bytes, "ncclBroadcast: recvbuff");
    std::vector<char> buf(bytes);
    if (comm->rank == root) copy_from_device(buf.data(), sendbuff, bytes);
    if (comm->size > 1) {
        if (bytes > INT_MAX) return fail(ncclInvalidUsage, "ncclBroadcast: %zu bytes: the emulator's MPI transport takes < 2 GiB", bytes);
        if (MPI_Bcast(buf.data(), (int)bytes, MPI_BYTE, root, comm->mpi) != MPI_SUCCESS)
            return fail(ncclSystemError, "ncclBroadcast: MPI_Bcast failed");
    }
    copy_to_device(recvbuff, buf.data(), bytes);
    return ncclSuccess;
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

} /* extern "C" */
