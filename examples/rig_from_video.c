/* examples/rig_from_video.c — from a multi-view video of a moving character to an animated rig,
 * through the public headers: deformable Gaussians on sparse control nodes (models/gs4d) fitted
 * to the video, their trajectories, a Skelebones rig made of them (models/skelebones), and PartMM
 * driving that rig with a motion it never saw, scored against LBS by the benchmark protocol
 * (models/partmm/bench.h). The chain `anima gaussianimate` runs, small enough to read.
 *
 *   rig_from_video BENCH OUT [CONFIG.json] [STEPS]
 *
 * BENCH: a motion benchmark as `anima dataset motion --out BENCH` writes it (the video as a D-NeRF
 * folder, BENCH/gt.h5, and BENCH/heldout/ with the held-out motion); CONFIG: a gs4d run config
 * (configs/gs4d-demo.json; default: the built-in defaults); STEPS: training steps (default the
 * config's train.iters). Writes OUT/canonical.ply, OUT/trajectories.h5 and OUT/rig.h5.
 *
 * Against an installed anima:
 *   cc rig_from_video.c $(pkg-config --cflags --libs anima) -o rig_from_video */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/gaussian_ply.h"
#include "models/gs4d/config.h"
#include "models/gs4d/eval.h"
#include "models/gs4d/run.h"
#include "models/partmm/bench.h"
#include "models/partmm/tie.h"
#include "models/skelebones/rigging.h"
#include "models/skelebones/skelebones.h"
#include "optim/train.h"

static int fail(const char *err) {
    fprintf(stderr, "rig_from_video: %s\n", err);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s BENCH OUT [CONFIG.json] [STEPS]\n", argv[0]);
        return 2;
    }
    const char *bench = argv[1], *out = argv[2];
    char err[8192], path[4200];
    TensorScope *scope = tensor_scope_begin();

    /* 1. The video: the benchmark's training views, and its val views held out. */
    Gs4dRunConfig rc;
    int bad = argc > 3 ? ds_config_load(argv[3], GS4D_RUN_SCHEMA, &rc, err, sizeof err)
                       : ds_config_parse("{}", "defaults", GS4D_RUN_SCHEMA, &rc, err, sizeof err);
    if (bad) return fail(err);
    snprintf(rc.data.dir, sizeof rc.data.dir, "%s", bench);
    if (argc > 4) rc.train.iters = atoll(argv[4]);
    Gs4dRunData rd;
    Gs4dData train, test;
    if (gs4d_run_data_load(&rc, "val", &rd, err, sizeof err)) return fail(err);
    if (gs4d_data_make(rd.train, rd.n_train, &train, err, sizeof err) ||
        gs4d_data_make(rd.test, rd.n_test, &test, err, sizeof err))
        return fail(err);

    /* 2. Deformable Gaussians: the whole training loop. */
    Gs4dConfig mc = gs4d_run_model_config(&rc);
    Gs4dModel m;
    gs4d_init(&m, &mc, &train, NULL);
    TensorRng rng = {.seed = (uint64_t)rc.seed, .stream = 3};
    for (int64_t step = 0; step < rc.train.iters; step++) {
        int64_t v;
        optim_data_order((uint64_t)rc.seed, step, train.n, 1, &v); /* every view once per epoch */
        v = gs4d_pick_view(&m, &train, step, (int)v);
        Gs4dStepInfo info;
        double loss = gs4d_step(&m, &train, (int)v, &rng, &info);
        if ((step + 1) % 500 == 0 || step + 1 == rc.train.iters)
            printf("step %lld/%lld: loss %.4f\n", (long long)step + 1, (long long)rc.train.iters, loss);
    }
    double ssim, psnr = gs4d_eval_views(&m, &test, &ssim, NULL, NULL);
    printf("gs4d: held-out PSNR %.2f dB, SSIM %.4f over %d views\n", psnr, ssim, test.n);

    /* 3. Its products: the canonical set and every Gaussian's trajectory over the frames. */
    double *times;
    int nf = gs4d_run_frame_times(&rd, &times);
    DsGaussians g = {0};
    char ply[4200], traj[4200];
    snprintf(ply, sizeof ply, "%s/canonical.ply", out);
    snprintf(traj, sizeof traj, "%s/trajectories.h5", out);
    if (gs4d_export(&m, &g) || ds_gaussians_write(ply, &g, err, sizeof err) ||
        gs4d_write_trajectories(traj, &m, times, nf, err, sizeof err))
        return fail(err[0] ? err : "out of memory");
    ds_gaussians_free(&g);
    free(times);

    /* 4. Skelebones: bones by motion clustering and SSDR, then skeleton, joints, tree and parts. */
    SbTraj t;
    if (sb_traj_read_h5(traj, NULL, &t, err, sizeof err)) return fail(err);
    SbOptions so;
    sb_options_defaults(&so);
    so.cluster.bones = 12;
    SbResult sr;
    SbRigOptions ro;
    sb_rig_options_defaults(&ro);
    SbRigResult sg;
    snprintf(path, sizeof path, "%s/rig.h5", out);
    if (sb_run(&t, &so, &sr, err, sizeof err) || sb_rig_run(&t, &sr, &ro, &sg, err, sizeof err) ||
        sb_rig_write(path, &t, &sr, &sg, "examples/rig_from_video", err, sizeof err))
        return fail(err);
    printf("skelebones: %d bones, %d joints from %d frames of %lld Gaussians\n", sr.skin.nbones, sg.rig.njoints, t.nframes,
           (long long)t.npoints);
    sb_rig_result_free(&sg), sb_result_free(&sr), sb_traj_free(&t);

    /* 5. PartMM on the held-out motion. The truth of each Gaussian there: tied to the benchmark's
     * surface through the training motion (tie.h). */
    PmRig rig;
    DsMotionGt gt_train, gt_held;
    char gt1[4200], gt2[4200];
    snprintf(gt1, sizeof gt1, "%s/gt.h5", bench), snprintf(gt2, sizeof gt2, "%s/heldout/gt.h5", bench);
    if (pm_rig_load(path, &rig, err, sizeof err) || ds_motion_gt_load(gt1, &gt_train, err, sizeof err) ||
        ds_motion_gt_load(gt2, &gt_held, err, sizeof err))
        return fail(err);
    int Q = gt_held.nframes, B = rig.B, J = rig.J, P = rig.P;
    int64_t n = rig.n;
    PmGaussianTie tie;
    if (pm_gaussian_tie(&rig, rig.F, &gt_train, &tie, err, sizeof err)) return fail(err);
    float *truth = malloc(sizeof(float) * Q * n * 3), *own = malloc(sizeof(float) * rig.F * n * 3);
    float *qrot = malloc(sizeof(float) * Q * J * 4), *qtrans = malloc(sizeof(float) * Q * 3);
    float *tb = malloc(sizeof(float) * Q * B * 12);
    double *bone_part = malloc(sizeof(double) * B * P), *bone_joint = malloc(sizeof(double) * B * J);
    int32_t *bind = malloc(sizeof(int32_t) * n);
    if (!truth || !own || !qrot || !qtrans || !tb || !bone_part || !bone_joint || !bind) return fail("out of memory");
    pm_gaussian_targets(&tie, n, &gt_held, 0, Q, truth);
    /* the query's pose, and the database's keys by the same IK (the rig's own reconstruction) */
    SbIkOptions io;
    sb_ik_defaults(&io);
    pm_lbs_frames(rig.F, n, B, rig.points, rig.weights, rig.tb, own);
    if (pm_pose(PM_IK_FIT_ADAM, &io, 400, &rig, Q, truth, qrot, qtrans, err, sizeof err) ||
        pm_pose(PM_IK_FIT_ADAM, &io, 400, &rig, rig.F, own, rig.rot, rig.trans, err, sizeof err))
        return fail(err);
    pm_bind_points(J, rig.rest, rig.parents, n, rig.points, bind);
    pm_bone_parts(n, B, J, P, rig.weights, bind, rig.parts, bone_part);
    pm_bone_joint_shares(n, B, J, rig.weights, bind, bone_joint);
    PmDatabase db;
    PmOptions po;
    pm_options_defaults(&po);
    po.patch = Q < 7 ? Q : 7;
    if (pm_db_build(&db, rig.F, J, B, P, rig.rot, rig.trans, rig.rest, rig.parents, rig.tb, rig.parts, bone_part, bone_joint,
                    err, sizeof err) ||
        pm_synthesize(&db, Q, qrot, qtrans, &po, tb, err, sizeof err))
        return fail(err);

    /* 6. Every row rendered with the fit's own Gaussians against the held-out motion's views. */
    PmCanon canon;
    bool from_traj;
    DsDnerfSplit views;
    char held[4200];
    snprintf(held, sizeof held, "%s/heldout", bench);
    if (pm_canon_gs4d(&canon, ply, &rig, &from_traj, err, sizeof err) || ds_dnerf_load(held, "test", &views, err, sizeof err))
        return fail(err);
    PmBenchInputs in = {.rig = &rig, .db = &db, .options = &po, .Q = Q, .qrot = qrot, .qtrans = qtrans, .partmm_tb = tb,
                        .truth = truth, .diag = pm_bench_diagonal(&gt_held), .canon = &canon, .views = &views, .every = 1};
    PmBenchRow rows[PM_BENCH_ROWS];
    if (pm_bench_run(&in, rows, err, sizeof err)) return fail(err);
    printf("%-14s %10s %8s\n", "method", "rmse_%diag", "psnr_dB");
    for (int r = 0; r < PM_BENCH_ROWS; r++)
        if (!rows[r].skip) printf("%-14s %10.3f %8.2f\n", rows[r].name, rows[r].rmse, rows[r].psnr);

    ds_dnerf_free(&views), pm_canon_free(&canon), pm_db_free(&db);
    free(truth), free(own), free(qrot), free(qtrans), free(tb), free(bone_part), free(bone_joint), free(bind);
    pm_gaussian_tie_free(&tie), ds_motion_gt_free(&gt_train), ds_motion_gt_free(&gt_held), pm_rig_free(&rig);
    gs4d_free(&m), gs4d_data_free(&train), gs4d_data_free(&test), gs4d_run_data_free(&rd);
    tensor_scope_end(scope);
    return 0;
}
