/* tests/mpi/mpi_tests.h — the data-parallel suites, run by tests/mpi/test_data_parallel.c's
 * main under `mpirun -np 2` (tests/run.sh). Each adds to the counts on rank 0. */
#ifndef ANIMA_TESTS_MPI_H
#define ANIMA_TESTS_MPI_H

#include <stdbool.h>
#include <stdio.h>

#include "optim/comm.h"

/* rank 0 prints and counts; every rank passes the same ok so the decision is shared */
#define MPI_CHECK(rank, ok, passed, failed, ...)                                                    \
    do {                                                                                           \
        bool ok_ = (ok);                                                                           \
        if ((rank) == 0) {                                                                         \
            printf("%s ", ok_ ? "ok  " : "FAIL");                                                  \
            printf(__VA_ARGS__);                                                                   \
            putchar('\n');                                                                         \
            fflush(stdout);                                                                        \
            ok_ ? (*(passed))++ : (*(failed))++;                                                   \
        }                                                                                          \
    } while (0)

/* `anima fit` on 2 ranks vs 1 process, resume, rank-0-only writes, a signal on one rank */
void test_fit_data_parallel(OptimComm *c, int *passed, int *failed);
/* the overlapped gradient reducer vs optim_comm_allreduce_grads (tests/mpi/test_reducer.c) */
void test_reducer(OptimComm *c, int *passed, int *failed);

#endif
