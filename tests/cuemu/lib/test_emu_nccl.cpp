/* tests/cuemu/test_emu_nccl.cpp — the emulated NCCL (tools/cuemu/nccl.cpp) as
 * optim/comm_nccl.c uses it: ncclGetUniqueId on rank 0, the id sent to the others over MPI,
 * ncclCommInitRank, ncclAllReduce (sum of f32 and f64, in place and not; avg; max; bf16) and
 * ncclBroadcast. Run directly: one rank, no MPI (the collectives are copies), plus the
 * emulator's reports (host buffers, a count past the buffer's end). Under
 * `mpirun -np 2`: two ranks over MPI, results against the closed forms, and a rank that never
 * received rank 0's id makes ncclCommInitRank fail on every rank instead of hanging. */
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "emu_lib_test.h"

static float bf16_val(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t bf16_of(float f) { /* exact for the small integers used here */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static void collectives(ncclComm_t comm, int rank, int size) {
    const size_t n = 1000;
    /* f32 sum, in place: rank r holds r + i; the sum is size (size - 1) / 2 + size i */
    std::vector<float> hf(n);
    for (size_t i = 0; i < n; i++) hf[i] = (float)(rank + (int)i);
    float *df = dev_upload(hf);
    CHECK(ncclAllReduce(df, df, n, ncclFloat32, ncclSum, comm, 0) == ncclSuccess, "allreduce f32 in place");
    std::vector<float> gf = dev_download(df, n);
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += gf[i] != (float)(size * (size - 1) / 2 + size * (int)i);
    CHECK(bad == 0, "allreduce f32 sum in place: %d wrong of %zu", bad, n);
    /* f64 sum, out of place: the send buffer is unchanged */
    std::vector<double> hd(n);
    for (size_t i = 0; i < n; i++) hd[i] = 0.5 * (rank + 1) * (double)i;
    double *dd = dev_upload(hd), *dr = dev_alloc<double>(n);
    CHECK(ncclAllReduce(dd, dr, n, ncclFloat64, ncclSum, comm, 0) == ncclSuccess, "allreduce f64");
    std::vector<double> gd = dev_download(dr, n);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += gd[i] != 0.5 * (size * (size + 1) / 2) * (double)i;
    CHECK(bad == 0, "allreduce f64 sum out of place: %d wrong", bad);
    CHECK(dev_download(dd, n) == hd, "allreduce out of place changed the send buffer");
    /* avg and max of f64 */
    CHECK(ncclAllReduce(dd, dr, n, ncclFloat64, ncclAvg, comm, 0) == ncclSuccess, "allreduce avg");
    gd = dev_download(dr, n);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += fabs(gd[i] - 0.5 * (size + 1) / 2.0 * (double)i) > 1e-12 * (1 + (double)i);
    CHECK(bad == 0, "allreduce f64 avg: %d wrong", bad);
    CHECK(ncclAllReduce(dd, dr, n, ncclFloat64, ncclMax, comm, 0) == ncclSuccess, "allreduce max");
    gd = dev_download(dr, n);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += gd[i] != 0.5 * size * (double)i;
    CHECK(bad == 0, "allreduce f64 max: %d wrong", bad);
    /* bf16 sum of small integers (exact) */
    std::vector<uint16_t> hb(64);
    for (size_t i = 0; i < hb.size(); i++) hb[i] = bf16_of((float)(i % 8 + rank));
    uint16_t *db = dev_upload(hb);
    CHECK(ncclAllReduce(db, db, hb.size(), ncclBfloat16, ncclSum, comm, 0) == ncclSuccess, "allreduce bf16");
    std::vector<uint16_t> gb = dev_download(db, hb.size());
    bad = 0;
    for (size_t i = 0; i < hb.size(); i++) bad += bf16_val(gb[i]) != (float)(size * (int)(i % 8) + size * (size - 1) / 2);
    CHECK(bad == 0, "allreduce bf16 sum: %d wrong", bad);
    /* broadcast from the last rank, in place, as optim_comm_nccl_broadcast does */
    int root = size - 1;
    for (size_t i = 0; i < n; i++) hf[i] = rank == root ? (float)i * 3 : -1.0f;
    cudaMemcpy(df, hf.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    CHECK(ncclBroadcast(df, df, n, ncclFloat32, root, comm, 0) == ncclSuccess, "broadcast");
    gf = dev_download(df, n);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += gf[i] != (float)i * 3;
    CHECK(bad == 0, "broadcast from rank %d: %d wrong", root, bad);
    /* invalid arguments: NCCL's results */
    CHECK(ncclAllReduce(df, df, n, (ncclDataType_t)42, ncclSum, comm, 0) == ncclInvalidArgument, "bad datatype");
    CHECK(ncclAllReduce(df, df, n, ncclFloat32, (ncclRedOp_t)42, comm, 0) == ncclInvalidArgument, "bad op");
    CHECK(ncclBroadcast(df, df, n, ncclFloat32, size, comm, 0) == ncclInvalidArgument, "root out of range");
    int cnt = 0, rk = -1;
    CHECK(ncclCommCount(comm, &cnt) == ncclSuccess && cnt == size, "ncclCommCount %d", cnt);
    CHECK(ncclCommUserRank(comm, &rk) == ncclSuccess && rk == rank, "ncclCommUserRank %d", rk);
    cudaFree(df), cudaFree(dd), cudaFree(dr), cudaFree(db);
}

int main() {
    bool mpi = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
    int rank = 0, size = 1;
    if (mpi) {
        int provided;
        MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    /* optim/comm_nccl.c's sequence */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (rank == 0) CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    if (size > 1) MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm = nullptr;
    CHECK(ncclCommInitRank(&comm, size, id, rank) == ncclSuccess, "ncclCommInitRank: %s", ncclGetLastError(nullptr));
    if (comm) {
        collectives(comm, rank, size);
        CHECK(ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy");
    }
    CHECK(ncclCommInitRank(&comm, 2, id, 2) == ncclInvalidArgument, "rank >= nranks");
    if (size > 1) {
        /* every rank makes its own id (the broadcast forgotten): all fail, none hangs */
        ncclUniqueId own;
        ncclGetUniqueId(&own);
        ncclComm_t bad = nullptr;
        ncclResult_t r = ncclCommInitRank(&bad, size, own, rank);
        CHECK(r == ncclInvalidArgument && bad == nullptr, "ids not shared: result %d", (int)r);
        CHECK(strstr(ncclGetLastError(nullptr), "broadcast") != nullptr, "message: %s", ncclGetLastError(nullptr));
        /* rank 1 with a zeroed id (never received): rejected too */
        ncclUniqueId mixed = id;
        if (rank == 1) memset(&mixed, 0, sizeof mixed);
        r = ncclCommInitRank(&bad, size, mixed, rank);
        CHECK(r == ncclInvalidArgument, "rank 1 without the id: result %d", (int)r);
        /* the results of both ranks agree on the pass count */
        int fails = g_fail, all = 0;
        MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank != 0) {
            MPI_Finalize();
            return all ? 1 : 0; /* rank 0 prints the summary for both */
        }
        if (all > fails) fprintf(stderr, "FAIL: %d check(s) failed on other ranks\n", all - fails), g_fail += all - fails;
        MPI_Finalize();
        return finish("cuemu nccl (2 ranks)");
    }
    /* one rank, no MPI: the reports (forked children) */
    CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess, "second one-rank communicator");
    ncclCommDestroy(comm);
    CHECK(ncclCommInitRank(&comm, 2, id, 0) == ncclInvalidUsage, "two ranks without MPI: result");
    ncclCommInitRank(&comm, 1, id, 0);
    static float host[16];
    float *d = dev_alloc<float>(15);
    cudaMemset(d, 0, 15 * sizeof(float));
    expect_report("host buffer", [&] { ncclAllReduce(host, host, 16, ncclFloat32, ncclSum, comm, 0); },
                  {"ncclAllReduce", "sendbuff"});
    expect_report("count past the end", [&] { ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, 0); },
                  {"ncclAllReduce", "sendbuff"});
    expect_report("broadcast into host memory", [&] { ncclBroadcast(d, host, 15, ncclFloat32, 0, comm, 0); },
                  {"ncclBroadcast", "recvbuff"});
    ncclCommDestroy(comm);
    cudaFree(d);
    return finish("cuemu nccl (1 rank)");
}
