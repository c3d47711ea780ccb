/* tests/mpi/test_fit_dp.c — `anima fit` under `mpirun -np 2` (through cmd_fit_comm, the same
 * code `mpirun -np 2 anima fit` runs):
 *   fit_dp_matches_single_process   2 ranks × shards of a global batch of 15 (uneven: 8 + 7
 *                                   rows) leave the parameters and loss log of one process with
 *                                   batch 15, ≤ 1e-6 (f64; in practice ~1e-16)
 *   fit_dp_only_rank0_writes        rank 1, run in its own empty working directory with the
 *                                   same relative --out, writes nothing there
 *   fit_dp_resume_all_ranks         --stop-after 3 then --resume on 2 ranks (every rank reads
 *                                   the checkpoint) equals the uninterrupted 2-rank run
 *   fit_dp_ckpt_loads_single        the 2-rank checkpoint resumes in one process (strict load)
 *   train_dp_signal_on_one_rank     SIGINT seen by rank 1 alone: both ranks stop after the same
 *                                   step, both return 130, rank 0's checkpoint has that step */
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_tests.h"
#include "optim/train.h"
#include "tools/cmd.h"

static int fit(OptimComm *c, const char *out, int nextra, const char *const *extra) {
    const char *base[] = {"fit", "--no-progress", "--out", out,
                          "--set", "model.dtype=f64", "--set", "model.hidden=8", "--set", "model.depth=2",
                          "--set", "data.n=64", "--set", "data.batch=15", "--set", "train.steps=6",
                          "--set", "train.log_every=1", "--set", "train.ckpt_every=2", "--set", "optim.warmup=2",
                          "--set", "optim.lr=1e-2"};
    int nb = (int)(sizeof base / sizeof *base);
    char *argv[64];
    for (int i = 0; i < nb; i++) argv[i] = (char *)base[i];
    for (int i = 0; i < nextra; i++) argv[nb + i] = (char *)extra[i];
    argv[nb + nextra] = NULL;
    return cmd_fit_comm(nb + nextra, argv, c);
}

/* ---- reading checkpoints back (plain HDF5, independent of the model code) ------------------ */

typedef struct {
    hid_t other;
    double maxdiff;
    int n, missing;
} CmpState;

static double *read_ds(hid_t file, const char *name, int64_t *n) {
    char path[512];
    snprintf(path, sizeof path, "/params/%s", name);
    if (H5Lexists(file, path, H5P_DEFAULT) <= 0) return NULL;
    hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
    hid_t sp = H5Dget_space(ds);
    *n = H5Sget_simple_extent_npoints(sp);
    double *buf = malloc(sizeof *buf * (size_t)(*n ? *n : 1));
    H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Sclose(sp);
    H5Dclose(ds);
    return buf;
}

static herr_t cmp_one(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    CmpState *st = arg;
    hid_t file = H5Iget_file_id(g);
    int64_t na = 0, nb = 0;
    double *a = read_ds(file, name, &na), *b = read_ds(st->other, name, &nb);
    H5Fclose(file);
    if (!a || !b || na != nb) st->missing++;
    else
        for (int64_t i = 0; i < na; i++) st->maxdiff = fmax(st->maxdiff, fabs(a[i] - b[i]));
    st->n++;
    free(a);
    free(b);
    return 0;
}

/* max |a − b| over every /params dataset; +inf when a file or a parameter is missing */
static double ckpt_maxdiff(const char *pa, const char *pb) {
    H5E_BEGIN_TRY {
        hid_t fa = H5Fopen(pa, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(pb, H5F_ACC_RDONLY, H5P_DEFAULT);
        double r = INFINITY;
        if (fa >= 0 && fb >= 0) {
            CmpState st = {.other = fb};
            hid_t g = H5Gopen2(fa, "/params", H5P_DEFAULT);
            if (g >= 0) {
                H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, cmp_one, &st);
                H5Gclose(g);
                if (st.n > 0 && !st.missing) r = st.maxdiff;
            }
        }
        if (fa >= 0) H5Fclose(fa);
        if (fb >= 0) H5Fclose(fb);
        return r;
    }
    H5E_END_TRY;
}

/* the "loss" of every line of a metrics log; returns the count (≤ max) */
static int read_losses(const char *path, double *loss, int max) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"loss\":");
        if (p) loss[n++] = strtod(p + 7, NULL);
    }
    fclose(f);
    return n;
}

/* entries of dir, not counting the run folder's lock (.lock, cmd_check_run_dir's) */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".lock")) n++;
    closedir(d);
    return n;
}

static bool all_ranks(OptimComm *c, bool ok) {
    return optim_comm_allreduce_sum_scalar(c, ok ? 0 : 1) == 0;
}

static void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- a signal on one rank (the loop's API directly, so the test picks the step) ----------- */

static void signal_on_one_rank(OptimComm *c, const char *root, int *passed, int *failed) {
    int rank = optim_comm_rank(c);
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/sig.h5", root);
    TensorScope *s = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, s, TENSOR_F64, 1);
    nn_param(&p, NULL, "w", TENSOR_SHAPE(3), NN_INIT_NORMAL, 1.0);
    nn_params_pack(&p);
    OptimTrainOptions o = {.name = "sigtest", .total_steps = 10, .ckpt_path = ckpt, .progress = 0, .comm = c};
    OptimTrain tl;
    char err[1024];
    int rc = optim_train_init(&tl, &o, &p, NULL, (TensorRng){.seed = 1}, err, sizeof err);
    int64_t stopped = -1;
    if (rc == 0) {
        while (optim_train_next(&tl)) {
            /* rank 1 alone is signalled during step 2; the flag is shared at the next check */
            if (rank == 1 && tl.step == 2) raise(SIGINT);
            optim_train_step_end(&tl, 0, 0, 0, NULL);
        }
        stopped = tl.step;
        rc = optim_train_finish(&tl);
    }
    double sum = optim_comm_allreduce_sum_scalar(c, (double)stopped);
    bool same = sum == 2.0 * (double)stopped && stopped == 3;
    bool rc_ok = all_ranks(c, rc == 130);
    int64_t saved = -1;
    if (rank == 0) {
        OptimCheckpointMeta meta = {0};
        if (optim_checkpoint_load(ckpt, &p, NULL, true, &meta, err, sizeof err) == 0) saved = meta.step;
        free(meta.config_json);
    }
    MPI_CHECK(rank, all_ranks(c, same) && rc_ok && (rank != 0 || saved == 3), passed, failed,
              "train_dp_signal_on_one_rank (SIGINT on rank 1 in step 2: all stop at 3, exit 130, rank 0 saved step %lld)",
              (long long)saved);
    nn_params_free(&p);
    tensor_scope_end(s);
}

void test_fit_data_parallel(OptimComm *c, int *passed, int *failed) {
    int rank = optim_comm_rank(c);
    char root[256] = {0};
    if (rank == 0) {
        snprintf(root, sizeof root, "/tmp/anima-mpi-XXXXXX");
        if (!mkdtemp(root)) root[0] = 0;
    }
    MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!root[0]) {
        MPI_CHECK(rank, false, passed, failed, "fit_dp: cannot create a temporary directory");
        return;
    }
    char cwd[4096], mine[300], r0[300];
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    snprintf(mine, sizeof mine, "%s/rank%d", root, rank);
    snprintf(r0, sizeof r0, "%s/rank0", root);
    bool ok = mkdir(mine, 0777) == 0 && chdir(mine) == 0;

    /* 1. the same arguments on both ranks, a relative --out: each rank would write under its
     * own working directory, so rank 1's staying empty shows it wrote nothing */
    int rc = ok ? fit(c, "dp", 0, NULL) : -1;
    bool ran = all_ranks(c, rc == 0);
    int rank1_entries = rank == 1 ? count_entries(mine) : 0;
    bool quiet = all_ranks(c, rank1_entries == 0);
    if (cwd[0] && chdir(cwd) != 0) ok = false;

    /* 2. stop after 3 steps, resume on both ranks (absolute --out: both read the checkpoint) */
    char dp2[320];
    snprintf(dp2, sizeof dp2, "%s/dp2", r0);
    const char *stop[] = {"--stop-after", "3"}, *res[] = {"--resume"};
    int rc2 = ran ? fit(c, dp2, 2, stop) : -1;
    int rc3 = rc2 == 0 ? fit(c, dp2, 1, res) : -1;
    bool resumed = all_ranks(c, rc2 == 0 && rc3 == 0);

    /* 3. the one-process reference and the comparisons, on rank 0 while rank 1 waits */
    char dp[320], ref[320], p1[400], p2[400];
    snprintf(dp, sizeof dp, "%s/dp", r0);
    snprintf(ref, sizeof ref, "%s/ref", r0);
    if (rank == 0) {
        int rcr = fit(NULL, ref, 0, NULL);
        snprintf(p1, sizeof p1, "%s/ckpt.h5", dp);
        snprintf(p2, sizeof p2, "%s/ckpt.h5", ref);
        double dparam = rcr == 0 ? ckpt_maxdiff(p1, p2) : INFINITY;
        double la[16], lb[16], dloss = INFINITY;
        snprintf(p1, sizeof p1, "%s/metrics.jsonl", dp);
        snprintf(p2, sizeof p2, "%s/metrics.jsonl", ref);
        int na = read_losses(p1, la, 16), nb = read_losses(p2, lb, 16);
        if (na == 6 && nb == 6) {
            dloss = 0;
            for (int i = 0; i < 6; i++) dloss = fmax(dloss, fabs(la[i] - lb[i]) / fmax(fabs(lb[i]), 1e-300));
        }
        MPI_CHECK(rank, ran && dparam <= 1e-6 && dloss <= 1e-9, passed, failed,
                  "fit_dp_matches_single_process (2 ranks × 8+7 rows vs 1 × 15, 6 AdamW steps, f64): "
                  "max |Δθ| = %.3g, max rel Δloss = %.3g over %d/%d log lines",
                  dparam, dloss, na, nb);
        MPI_CHECK(rank, ran && quiet && count_entries(dp) == 2, passed, failed,
                  "fit_dp_only_rank0_writes (rank 1's directory: %s; rank 0's run dir: %d files)",
                  quiet ? "empty" : "NOT empty", count_entries(dp));
        snprintf(p1, sizeof p1, "%s/ckpt.h5", dp2);
        snprintf(p2, sizeof p2, "%s/ckpt.h5", dp);
        double dres = resumed ? ckpt_maxdiff(p1, p2) : INFINITY;
        MPI_CHECK(rank, resumed && dres == 0, passed, failed,
                  "fit_dp_resume_all_ranks (stop after 3 + resume on 2 ranks vs uninterrupted: max |Δθ| = %.3g)", dres);
        /* the 2-rank checkpoint continues in one process: a strict load of every parameter
         * and the optimizer state */
        const char *more[] = {"--resume", "--set", "train.steps=8"};
        int rcs = ran ? fit(NULL, dp, 3, more) : -1;
        MPI_CHECK(rank, rcs == 0, passed, failed, "fit_dp_ckpt_loads_single (one process resumes it to step 8: exit %d)",
                  rcs);
    }
    optim_comm_barrier(c);

    signal_on_one_rank(c, r0, passed, failed);
    optim_comm_barrier(c);
    if (rank == 0) rm_rf(root);
}
