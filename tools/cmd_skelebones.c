/* tools/cmd_skelebones.c — `anima skelebones`: trajectories (a trajectories HDF5, the motion
 * benchmark's gt.h5, a folder of mesh frames, or an animated skinned model through libassimp)
 * → LBG-VQ clusters → SSDR → mean curvature skeleton of the rest shape → joints, tree, parts →
 * IK of every frame (models/skelebones/rigging.h) → DIR/rig.h5, DIR/bones.ply, DIR/bones.png,
 * DIR/skeleton.ply, DIR/skeleton.png and, with IK, DIR/rig.{gif,mp4} (the rig animated over the shape;
 * models/skelebones/skelebones.h, rigging.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/geometry/geometry.h"
#include "datasets/render/video.h"
#include "models/skelebones/rigging.h"
#include "models/skelebones/skelebones.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

#define NAME "anima skelebones"

static int progress_line(void *user, int it, int iters, double rmse) {
    if (*(bool *)user) fprintf(stderr, "ssdr %d/%d rmse %.6g\n", it, iters, rmse);
    return 0;
}

int cmd_skelebones(int argc, char **argv) {
    const char *traj = NULL, *dataset = NULL, *meshes = NULL, *gt = NULL, *model = NULL, *out = NULL, *export_traj = NULL,
               *true_rig = NULL;
    int64_t model_frames = 40, model_anim = 0;
    int64_t bones = 20, iters = 30, influences = 8, bone_iters = 5, knn = 8, rounds = 8;
    double smooth = 1e-4, fraction = 1.0, min_opacity = 0;
    bool no_progress = false;
    const char *init = "lbgvq";
    const char *video = "auto";
    bool ik = false, no_skeleton = false, no_ik = false, ray_poles = false, plain_density = false;
    int64_t ik_steps = 50, ik_points = 400, grid = 64, fill_votes = 5;
    double bridge = 3;
    double ik_lambda = 1.0;
    uint64_t seed = 0;
    static const char *const inits[] = {"lbgvq", "random", NULL};
    const CmdArg args[] = {
        {"--traj", CMD_ARG_STRING, &traj, "FILE|RUN", "trajectories HDF5 (or a gs4d run folder: RUN/trajectories.h5): dataset 'positions' (F x N x 3), optional 'rest', 'faces'; or anima gs4d fit's trajectories.h5 as it is"},
        {"--dataset", CMD_ARG_STRING, &dataset, "NAME", "the trajectories dataset in --traj (default positions)"},
        {"--meshes", CMD_ARG_STRING, &meshes, "DIR", "a folder of mesh frames (.obj .ply .off .stl, name order, one connectivity)"},
        {"--gt", CMD_ARG_STRING, &gt, "FILE", "the motion benchmark's gt.h5 (its true rig is reported for comparison)"},
        {"--true-rig", CMD_ARG_STRING, &true_rig, "FILE", "(--traj with frame times, as gs4d writes them) the true rig of the motion the trajectories show (the benchmark's gt.h5): the found joints against it, posed, frame by frame at the same times"},
        {"--model", CMD_ARG_STRING, &model, "FILE", "an animated, skinned model through libassimp (glTF, FBX, Collada, .x); its rig is the true one"},
        {"--model-frames", CMD_ARG_INT, &model_frames, "F", "(--model) frames sampled evenly over the animation (default 40)", 1, 100000},
        {"--model-anim", CMD_ARG_INT, &model_anim, "K", "(--model) which of the file's animations (default 0)", 0, 1000000},
        {"--out", CMD_ARG_STRING, &out, "DIR", "writes DIR/rig.h5, DIR/bones.ply, (meshes) DIR/bones.png, DIR/skeleton.{png,ply}, (with IK) DIR/rig.{gif,mp4}", 0, 0, NULL, false},
        {"--video", CMD_ARG_CHOICE, &video, "KIND", CMD_VIDEO_HELP " of the rig animation: DIR/rig.{mp4,gif} (default auto)",
         .choices = DS_VIDEO_KINDS},
        {"--bones", CMD_ARG_INT, &bones, "B", "bones (1..64; default 20)", 1, SB_MAX_BONES},
        {"--iters", CMD_ARG_INT, &iters, "N", "SSDR iterations (default 30)", 0, 100000},
        {"--influences", CMD_ARG_INT, &influences, "K", "most bones per point (default 8)", 1, SB_MAX_BONES},
        {"--bone-iters", CMD_ARG_INT, &bone_iters, "N", "bone passes per iteration (default 5)", 1, 1000},
        {"--smooth", CMD_ARG_DOUBLE, &smooth, "S", "weight smoothing over the kNN graph (default 1e-4; 0: none)", 0, 1e6},
        {"--knn", CMD_ARG_INT, &knn, "K", "neighbors of the smoothing graph (default 8)", 1, 64},
        {"--cluster-rounds", CMD_ARG_INT, &rounds, "N", "LBG-VQ fit/reassign rounds per split (default 8)", 1, 1000},
        {"--init", CMD_ARG_CHOICE, &init, "I", "lbgvq (default) or random: random Voronoi cells at rest (the ablation)", 0, 0, inits},
        {"--seed", CMD_ARG_UINT, &seed, "S", "the random start's seed (default 0)"},
        {"--min-opacity", CMD_ARG_DOUBLE, &min_opacity, "X", "(trajectories with opacities: a gs4d run's Gaussians) points less opaque than X are left out of the clusters, bones, skeleton and IK and follow the bones the others found (default 0: all fit; 0.2 helps the monocular bird's joints, hurts the multi-view bird's full path: docs/gaussianimate.md)", 0, 1},
        {"--frames-fraction", CMD_ARG_DOUBLE, &fraction, "X", "use the first X of the frames (0 < X <= 1; default 1)", 0, 1, NULL, false, NULL, true},
        {"--export-traj", CMD_ARG_STRING, &export_traj, "FILE", "also write the trajectories used (after --frames-fraction) as a trajectories HDF5"},
        {"--ik-true-tree", CMD_ARG_FLAG, &ik, NULL, "(--gt, --model) IK per frame on the true tree against the true joints: rig.h5 ik/ (instead of the found tree)"},
        {"--no-skeleton", CMD_ARG_FLAG, &no_skeleton, NULL, "stop after SSDR: no skeleton, joints, tree, parts or IK"},
        {"--ray-poles", CMD_ARG_FLAG, &ray_poles, NULL, "the skeleton's medial poles by inward rays (default: CGAL's Voronoi poles)"},
        {"--no-ik", CMD_ARG_FLAG, &no_ik, NULL, "skeleton, joints, tree and parts, but no IK"},
        {"--grid", CMD_ARG_INT, &grid, "N", "(inputs without faces) marching-cubes cells along the longest side of the points' density (default 64)", 8, 1024},
        {"--fill-votes", CMD_ARG_INT, &fill_votes, "V", "(inputs without faces) a cell outside the points' density is filled where V of the 13 lines through it meet the density both ways: a gs4d fit's shell, open where no camera saw, meshed solid (default 5; 0: off; docs/gaussianimate.md §6)", 0, 13},
        {"--bridge-gap", CMD_ARG_DOUBLE, &bridge, "C", "(inputs without faces) a piece of the points' density within C grid cells of the body is joined to it by a bar unless that makes a loop: a foot's tip the density lost at a thin gap (default 3, the splat's 2 sigma; 0: off; docs/gaussianimate.md §6)", 0, 64},
        {"--plain-density", CMD_ARG_FLAG, &plain_density, NULL, "(inputs without faces) every point splats the same (default: its opacity over the density at it, so a thin tail is surface as the body is and a lone transparent floater is not)"},
        {"--ik-lambda", CMD_ARG_DOUBLE, &ik_lambda, "L", "the weight of the IK's point term (default 1)", 0, 1e9},
        {"--ik-steps", CMD_ARG_INT, &ik_steps, "N", "Adam steps per frame of the IK (default 50; each frame starts from the previous one)", 1, 100000},
        {"--ik-points", CMD_ARG_INT, &ik_points, "N", "points the IK's L2 term uses, evenly strided (default 400)", 1, 1000000000},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no per-iteration RMSE lines on stderr"},
        {0}};
    const CmdArgSpec spec = {NAME, "--traj FILE|--meshes DIR|--gt FILE|--model FILE --out DIR [--bones B] [options]",
                             "skinning decomposition of point trajectories: LBG-VQ motion clusters (Le & Deng 2014),\n"
                             "then SSDR (Le & Deng 2012): bone transforms per frame and sparse skinning weights; then the\n"
                             "mean curvature skeleton of the rest shape (its faces, or the points' density meshed), joints\n"
                             "where the weights change along it, the kinematic tree and parts, and IK of every frame",
                             args, NULL, 0, 0};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    if ((traj != NULL) + (meshes != NULL) + (gt != NULL) + (model != NULL) != 1)
        return cmd_args_fail(&spec, stderr, "give exactly one of --traj, --meshes, --gt, --model");
    if (!out && !export_traj) return cmd_args_fail(&spec, stderr, "--out is required");
    if (ik && !gt && !model) return cmd_args_fail(&spec, stderr, "--ik-true-tree needs --gt or --model (the true tree)");
    if (true_rig && !traj) return cmd_args_fail(&spec, stderr, "--true-rig is for --traj (--gt and --model carry their own rig)");
    if (true_rig && (no_skeleton || no_ik)) return cmd_args_fail(&spec, stderr, "--true-rig compares the IK's joints: drop --no-skeleton / --no-ik");
    char command[4096];
    size_t used = (size_t)snprintf(command, sizeof command, "anima");
    for (int i = 0; i < argc && used < sizeof command; i++)
        used += (size_t)snprintf(command + used, sizeof command - used, " %s", argv[i]);
    char err[1024];
    static char traj_file[4096];
    if (traj && cmd_run_file(traj, (const char *const[]){"trajectories.h5", "gs4d/trajectories.h5", NULL}, traj_file,
                             sizeof traj_file, err, sizeof err)) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    if (traj) traj = traj_file;
    SbTraj t;
    int rc = traj ? sb_traj_read_h5(traj, dataset, &t, err, sizeof err)
             : gt ? sb_traj_read_gt(gt, &t, err, sizeof err)
             : model ? sb_traj_read_assimp(model, (int)model_frames, (int)model_anim, &t, err, sizeof err)
                  : sb_traj_read_meshes(meshes, &t, err, sizeof err);
    if (rc) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    if (true_rig && !t.times) {
        fprintf(stderr, NAME ": %s: --true-rig: the trajectories carry no frame times (a \"times\" dataset)\n", t.source);
        sb_traj_free(&t);
        return 1;
    }
    int all_frames = t.nframes, keep = (int)ceil(fraction * t.nframes - 1e-9);
    sb_traj_keep_frames(&t, keep < 1 ? 1 : keep);
    fprintf(stderr, NAME ": %s: %d frames, %lld points%s\n", t.source, t.nframes, (long long)t.npoints,
            t.true_bones ? " (with its true rig)" : "");
    if (export_traj && sb_traj_write_h5(export_traj, &t, err, sizeof err)) {
        fprintf(stderr, NAME ": %s\n", err);
        sb_traj_free(&t);
        return 1;
    }
    if (!out) {
        sb_traj_free(&t);
        return 0;
    }
    if (cmd_make_dirs(out)) {
        fprintf(stderr, NAME ": cannot make the folder %s\n", out);
        sb_traj_free(&t);
        return 1;
    }
    SbOptions o;
    sb_options_defaults(&o);
    o.cluster.bones = (int)bones, o.cluster.rounds = (int)rounds;
    o.ssdr.iters = (int)iters, o.ssdr.max_influences = (int)influences, o.ssdr.bone_iters = (int)bone_iters;
    o.ssdr.smooth = smooth, o.ssdr.knn = (int)knn;
    o.random_init = !strcmp(init, "random"), o.seed = seed, o.min_opacity = min_opacity;
    bool show = !no_progress;
    o.ssdr.progress = progress_line, o.ssdr.user = &show;
    SbResult r;
    if (sb_run(&t, &o, &r, err, sizeof err)) {
        fprintf(stderr, NAME ": %s\n", err);
        sb_traj_free(&t);
        return 1;
    }
    double joint_err = -1;
    if (ik) {
        SbIkOptions io;
        sb_ik_defaults(&io);
        io.steps = (int)ik_steps;
        if (sb_run_ik_true_tree(&t, &io, ik_points, &r, &joint_err, err, sizeof err)) {
            fprintf(stderr, NAME ": %s\n", err);
            sb_result_free(&r);
            sb_traj_free(&t);
            return 1;
        }
    }
    SbRigResult g;
    bool have_rig = false;
    if (!no_skeleton) {
        SbRigOptions ro;
        sb_rig_options_defaults(&ro);
        ro.ik.steps = (int)ik_steps, ro.ik.lambda = ik_lambda, ro.ik_points = ik_points, ro.grid = (int)grid;
        ro.fill_votes = (int)fill_votes, ro.density_norm = !plain_density, ro.bridge = bridge;
        ro.run_ik = !ik && !no_ik;
        ro.skel.voronoi_poles = !ray_poles;
        if (sb_rig_run(&t, &r, &ro, &g, err, sizeof err)) {
            fprintf(stderr, NAME ": %s\n", err);
            sb_result_free(&r);
            sb_traj_free(&t);
            return 1;
        }
        have_rig = true;
    }
    SbPosedJointError pe = {0};
    if (true_rig) {
        SbTraj truth;
        int prc2 = sb_traj_read_gt(true_rig, &truth, err, sizeof err);
        if (prc2 == 0) {
            prc2 = sb_rig_posed_joint_error(&r, t.times, &truth, &pe, err, sizeof err);
            sb_traj_free(&truth);
        }
        if (prc2) {
            fprintf(stderr, NAME ": %s\n", err);
            if (have_rig) sb_rig_result_free(&g);
            sb_result_free(&r);
            sb_traj_free(&t);
            return 1;
        }
    }
    char path[4200], path2[4200];
    snprintf(path, sizeof path, "%s/rig.h5", out);
    rc = sb_rig_write(path, &t, &r, have_rig ? &g : NULL, command, err, sizeof err);
    if (rc == 0 && have_rig) {
        snprintf(path, sizeof path, "%s/skeleton.ply", out);
        snprintf(path2, sizeof path2, "%s/skeleton.png", out);
        rc = sb_skeleton_view(path, path2, 640, &g.shape, &g.skel, &g.rig, err, sizeof err);
    }
    if (rc == 0 && have_rig && r.ik.njoints > 0) { /* the rig animated: the IK's bones over the shape */
        int vk = ds_video_kind(video);
        if (vk == DS_VIDEO_AUTO) vk = ds_video_have_ffmpeg() ? DS_VIDEO_BOTH : DS_VIDEO_GIF;
        snprintf(path, sizeof path, "%s/rig.gif", out);
        snprintf(path2, sizeof path2, "%s/rig.mp4", out);
        if (vk != DS_VIDEO_NONE)
            rc = sb_rig_animation(vk == DS_VIDEO_GIF || vk == DS_VIDEO_BOTH ? path : NULL,
                                  vk == DS_VIDEO_MP4 || vk == DS_VIDEO_BOTH ? path2 : NULL, &t, &r, &g, 320, 60, err,
                                  sizeof err);
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/bones.ply", out);
        rc = sb_bones_ply(path, &t, &r, err, sizeof err);
    }
    if (rc == 0 && t.faces && t.nfaces > 0) {
        snprintf(path, sizeof path, "%s/bones.png", out);
        rc = sb_bones_png(path, &t, &r, 512, err, sizeof err);
    }
    if (rc) fprintf(stderr, NAME ": %s\n", err);
    else {
        printf("frames %d points %lld bones %d rmse %.6g cluster_rmse %.6g time_s %.3f (cluster %.3f, ssdr %.3f)",
               t.nframes, (long long)t.npoints, r.skin.nbones, r.skin.rmse[r.skin.niters], r.clusters.rmse,
               r.seconds_cluster + r.seconds_ssdr, r.seconds_cluster, r.seconds_ssdr);
        if (r.true_rmse >= 0) printf(" true_rig_rmse %.6g bones_true %d", r.true_rmse, t.true_bones);
        if (r.fitted) printf(" fitted_points %lld (opacity >= %g; rmse over them)", (long long)r.nfitted, o.min_opacity);
        if (have_rig) {
            int64_t cycles = 0;
            int comps = sb_skeleton_components(&g.skel, &cycles);
            char how[128] = "";
            if (g.meshed == 1) snprintf(how, sizeof how, " (meshed from the points, %lld cells filled, %lld fragments joined, %lld speck faces left out)",
                                       (long long)g.mesh_stats.filled_cells, (long long)g.mesh_stats.bridged,
                                       (long long)g.mesh_stats.speck_faces);
            else if (g.meshed == 2) snprintf(how, sizeof how, " (faces remeshed)");
            printf(" skeleton_nodes %lld skeleton_edges %lld components %d cycles %lld%s joints %d found_bones %d parts %d"
                   " time_skeleton_s %.3f time_joints_s %.3f",
                   (long long)g.skel.nnodes, (long long)g.skel.nedges, comps, (long long)cycles, how, g.rig.njoints, g.rig.njoints - 1, g.rig.nparts,
                   g.seconds_skeleton, g.seconds_joints);
            if (g.err_true_found >= 0)
                printf(" joint_err_true_to_found %.3f%% joint_err_found_to_true %.3f%% (of the diagonal) true_joints %d",
                       g.err_true_found, g.err_found_true, g.true_joints);
            if (g.have_tree)
                printf(" tree_matched %d/%d tree_bones_kept %d/%d ends %d (true %d) branches %d (true %d)", g.tree.matched,
                       g.tree.true_joints, g.tree.kept, g.tree.edges, g.tree.found_ends, g.tree.true_ends,
                       g.tree.found_branches, g.tree.true_branches);
            if (r.ik.njoints > 0 && !ik) {
                double l0 = r.ik.loss[0], lm = 0;
                for (int f = 0; f < r.ik.nframes; f++) lm += r.ik.loss[f];
                printf(" ik_loss_frame0 %.6g ik_loss_mean %.6g time_ik_s %.3f", l0, lm / r.ik.nframes, g.seconds_ik);
            }
            printf(" time_total_s %.3f", r.seconds_cluster + r.seconds_ssdr + g.seconds_skeleton + g.seconds_joints + g.seconds_ik);
        }
        if (pe.frames > 0)
            printf(" posed_joint_err_true_to_found %.3f%% posed_joint_err_found_to_true %.3f%% (of the true diagonal, mean"
                   " of %d frames; worst frame %.3f%% / %.3f%%) true_joints %d",
                   pe.true_found, pe.found_true, pe.frames, pe.worst_true_found, pe.worst_found_true, pe.true_joints);
        if (joint_err >= 0) {
            double d = sqrt(ds_points_diagonal2(t.rest, t.npoints));
            printf(" ik_joint_err %.6g (%.3f%% of the diagonal)", joint_err, 100 * joint_err / d);
        }
        if (all_frames > t.nframes) {
            /* the weights found on the frames used, bones refit on every frame: how well the
             * decomposition of part of the motion explains all of it */
            double *T = malloc((size_t)all_frames * r.skin.nbones * 12 * sizeof(double));
            if (T && sb_ssdr_fit_bones(all_frames, t.npoints, r.skin.nbones, t.rest, t.pos, r.skin.weights,
                                       o.ssdr.bone_iters, T, err, sizeof err) == 0)
                printf(" all_frames %d all_frames_rmse %.6g", all_frames,
                       sb_lbs_rmse(all_frames, t.npoints, r.skin.nbones, t.rest, t.pos, r.skin.weights, T));
            free(T);
        }
        printf("\n");
    }
    if (have_rig) sb_rig_result_free(&g);
    sb_result_free(&r);
    sb_traj_free(&t);
    return rc ? 1 : 0;
}
