/* tools/cmd_mesh.c — `anima mesh info FILE...` and `anima mesh convert IN OUT [--ascii]`: read
 * any mesh anima reads, print a summary or write it as OBJ/PLY/OFF/STL. A malformed file exits
 * non-zero with the reader's message (file, line or byte offset, problem). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "datasets/mesh.h"
#include "tools/cmd.h"

static int usage(void) {
    fprintf(stderr, "usage: anima mesh info FILE...\n"
                    "       anima mesh convert IN OUT [--ascii]   (OUT: .ply .obj .off .stl; PLY binary unless --ascii)\n");
    return 2;
}

static void info(const char *path, const DsMesh *m) {
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < m->nv; i++)
        for (int k = 0; k < 3; k++) lo[k] = fminf(lo[k], m->v[3 * i + k]), hi[k] = fmaxf(hi[k], m->v[3 * i + k]);
    printf("%s: %lld vertices, %lld triangles%s%s%s; bbox [%g %g %g] .. [%g %g %g]\n", path, (long long)m->nv,
           (long long)m->nf, m->n ? ", normals" : "", m->color ? ", colors" : "", m->scalar ? ", scalars" : "", lo[0], lo[1],
           lo[2], hi[0], hi[1], hi[2]);
}

int cmd_mesh(int argc, char **argv) {
    if (argc < 3) return usage();
    char err[1024];
    DsMesh m;
    if (!strcmp(argv[1], "info")) {
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
    if (!strcmp(argv[1], "convert")) {
        if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--ascii"))) return usage();
        if (ds_mesh_read(argv[2], &m, err, sizeof err)) {
            fprintf(stderr, "anima mesh: %s\n", err);
            return 1;
        }
        int rc = ds_mesh_write(argv[3], &m, argc == 5, err, sizeof err);
        if (rc) fprintf(stderr, "anima mesh: %s\n", err);
        else printf("%s -> %s: %lld vertices, %lld triangles\n", argv[2], argv[3], (long long)m.nv, (long long)m.nf);
        ds_mesh_free(&m);
        return rc ? 1 : 0;
    }
    return usage();
}
