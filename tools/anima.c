/* tools/anima.c — the anima program: dispatches subcommands to thin files (tools/cmd_*.c), with
 * the help and messages of tools/cmd_args.h. */
#include <stdio.h>
#include <string.h>

#include "models/physskin/infer.h"
#include "sim/scene.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

static const AnimaCommand commands[] = {
    {"dataset", "training corpus: make --count N --out DIR, show FILE [--ply OUT --field F]", cmd_dataset},
    {"demo", "pretrained PhysSkin skins an unseen shape, dropped on the floor with a ball: frames (--mlp: MLP fit)", cmd_demo},
    {"export", "glTF 2.0 (.glb) of a sim run, a skinning file, a motion gt.h5, a skelebones rig.h5, a mesh: RUN|FILE --gltf OUT.glb", cmd_export},
    {"fit", "fit an MLP from a JSON config (checkpoints, metrics log, --resume)", cmd_fit},
    {"gs", "3D Gaussian Splatting: fit --mesh FILE|procedural:<category> --out DIR", cmd_gs},
    {"gs4d", "deformable 3D Gaussians from multi-view video: fit --data DIR --out RUN, eval RUN", cmd_gs4d},
    {"mesh", "mesh files: info FILE..., convert IN OUT [--ascii]", cmd_mesh},
    {"sim", "reduced elastic simulation: --scene FILE.json --out DIR; skinning OUT.h5", cmd_sim},
    {"physskin", "neural skinning fields (PhysSkin++): train, skin, eval", cmd_physskin},
    {"view", "web viewer: [RUN|FILE] meshes, weights, Gaussians, frames; --scene X.json: a live sim to drag", cmd_view},
    {"skelebones", "skinning decomposition of trajectories (LBG-VQ + SSDR): --traj|--meshes|--gt --out DIR", cmd_skelebones},
    {"gaussianimate", "video -> deformable Gaussians -> rig -> PartMM animation -> glTF in one run: --data DIR --out RUN (resumes)", cmd_gaussianimate},
    {"animate", "novel-pose animation of a Skelebones rig by PartMM: --rig RIG --motion heldout --out DIR [--eval]", cmd_animate},
};

int main(int argc, char **argv) {
    base_log_set_sink(cmd_log_stderr, NULL); /* the library's messages reach the user here */
    sim_scene_set_checkpoint_skinner(ps_skin_checkpoint); /* scenes that name a PhysSkin checkpoint */
    enum { N = sizeof commands / sizeof *commands };
    char footer[2048] = "commands:\n";
    for (size_t i = 0; i < N; i++)
        snprintf(footer + strlen(footer), sizeof footer - strlen(footer), "  %-10s %s\n", commands[i].name,
                 commands[i].help);
    static const CmdArg none[] = {{0}};
    const CmdArgSpec spec = {"anima", "<command> [options]", "anima <command> --help: that command's options", none,
                             footer, 1, 1};
    if (argc < 2) { /* a bare `anima`: what there is to run, where a user looks first */
        cmd_args_help(&spec, stderr);
        return 2;
    }
    for (size_t i = 0; i < N; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    /* not a command: -h/--help, an unknown option, or an unknown command */
    const char *pos[1];
    int prc = cmd_args_parse(&spec, 2, argv, 1, stderr, pos, NULL);
    if (prc == CMD_ARGS_HELP) return 0;
    if (prc == CMD_ARGS_OK) cmd_args_fail(&spec, stderr, "unknown command '%s'", pos[0]);
    return 2;
}
