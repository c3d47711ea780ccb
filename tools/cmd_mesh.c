/* tools/cmd_mesh.c — `anima mesh info FILE...` and `anima mesh convert IN OUT [--ascii]`: read
 * any mesh anima reads, print a summary or write it as OBJ/PLY/OFF/STL. A malformed file exits
 * non-zero with the reader's message (file, line or byte offset, problem). */
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "datasets/geometry/geometry.h"
#include "datasets/mesh/mesh.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

static const CmdArg NO_ARGS[] = {{0}};
static const CmdArgSpec MESH = {"anima mesh", "info FILE... | convert IN OUT [--ascii]",
                                "mesh files: a summary, or a conversion (anima mesh convert --help)", NO_ARGS, NULL, 1, 1};

static void info(const char *path, const DsMesh *m) {
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    printf("%s: %lld vertices, %lld triangles%s%s%s; bbox [%g %g %g] .. [%g %g %g]\n", path, (long long)m->nv,
           (long long)m->nf, m->n ? ", normals" : "", m->color ? ", colors" : "", m->scalar ? ", scalars" : "", lo[0], lo[1],
           lo[2], hi[0], hi[1], hi[2]);
}

int cmd_mesh(int argc, char **argv) {
    char err[1024];
    DsMesh m;
    if (argc >= 2 && !strcmp(argv[1], "info")) {
        const CmdArgSpec spec = {"anima mesh info", "FILE...", "prints each mesh's counts, attributes and bounding box",
                                 NO_ARGS, NULL, 1, 1 << 20};
        const char **files = malloc(sizeof(char *) * (size_t)argc);
        int n = 0, prc = files ? cmd_args_parse(&spec, argc, argv, 2, stderr, files, &n) : CMD_ARGS_BAD;
        free(files); /* the files are argv[2..] (the reader took no options) */
        if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
        int rc = 0;
        for (int i = 2; i < argc; i++) {
            if (ds_mesh_read(argv[i], &m, err, sizeof err)) {
                fprintf(stderr, "anima mesh: %s\n", err);
                rc = 1;
                continue;
            }
            info(argv[i], &m);
            ds_mesh_free(&m);
        }
        return rc;
    }
    if (argc >= 2 && !strcmp(argv[1], "convert")) {
        bool ascii = false;
        const CmdArg args[] = {{"--ascii", CMD_ARG_FLAG, &ascii, NULL, "PLY as text (binary otherwise)"}, {0}};
        const CmdArgSpec spec = {"anima mesh convert", "IN OUT [--ascii]", "writes IN as OUT (.ply .obj .off .stl)", args,
                                 NULL, 2, 2};
        const char *pos[2];
        int prc = cmd_args_parse(&spec, argc, argv, 2, stderr, pos, NULL);
        if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
        if (ds_mesh_read(pos[0], &m, err, sizeof err)) {
            fprintf(stderr, "anima mesh: %s\n", err);
            return 1;
        }
        int rc = ds_mesh_write(pos[1], &m, ascii, err, sizeof err);
        if (rc) fprintf(stderr, "anima mesh: %s\n", err);
        else printf("%s -> %s: %lld vertices, %lld triangles\n", pos[0], pos[1], (long long)m.nv, (long long)m.nf);
        ds_mesh_free(&m);
        return rc ? 1 : 0;
    }
    /* no subcommand, or an unknown one */
    const char *pos[1];
    int prc = cmd_args_parse(&MESH, argc, argv, 1, stderr, pos, NULL);
    if (prc == CMD_ARGS_HELP) return 0;
    if (prc == CMD_ARGS_OK) cmd_args_fail(&MESH, stderr, "unknown subcommand '%s'", pos[0]);
    return 2;
}
