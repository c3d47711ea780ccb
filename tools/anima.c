/* tools/anima.c — the anima program: dispatches subcommands to thin files (tools/cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include "tools/cmd.h"

static const AnimaCommand commands[] = {
    {"dataset", "training corpus: make --count N --out DIR, show FILE [--ply OUT --field F]", cmd_dataset},
    {"demo", "pretrained PhysSkin skins an unseen shape, dropped on the floor with a ball: frames (--mlp: MLP fit)", cmd_demo},
    {"fit", "fit an MLP from a JSON config (checkpoints, metrics log, --resume)", cmd_fit},
    {"gs", "3D Gaussian Splatting: fit --mesh FILE|procedural:<category> --out DIR", cmd_gs},
    {"mesh", "mesh files: info FILE..., convert IN OUT [--ascii]", cmd_mesh},
    {"sim", "reduced elastic simulation: --scene FILE.json --out DIR; skinning OUT.h5", cmd_sim},
    {"physskin", "neural skinning fields (PhysSkin++): train, skin", cmd_physskin},
};

static void usage(FILE *f) {
    fprintf(f, "usage: anima <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "anima: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
