/* examples/skin_mesh.c — a trained PhysSkin checkpoint skins a mesh: load it once
 * (models/physskin/infer.h), read a mesh file or make a procedural humanoid, evaluate the
 * skinning fields at its vertices and at cubature points, print what came out and optionally
 * write the skinning file that `anima sim` scenes load (datasets/corpus/skinning_file.h).
 *
 *   skin_mesh CKPT [MESH|-] [OUT.h5]      e.g. skin_mesh models/physskin/pretrained/small.h5
 *
 * Against an installed anima:
 *   cc skin_mesh.c $(pkg-config --cflags --libs anima) -o skin_mesh */
#include <stdio.h>
#include <string.h>

#include "datasets/geometry/procedural.h"
#include "models/physskin/infer.h"

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s CKPT [MESH|-] [OUT.h5]\n", argv[0]);
        return 2;
    }
    char err[4096];
    PsSkinner sk;
    if (ps_skinner_load(&sk, argv[1], err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* the mesh: a file, or a procedural humanoid of a seed the small preset never trained on */
    DsProceduralShape shape = {0};
    DsMesh file_mesh = {0}, *mesh = &shape.mesh;
    DsSkinning s = {0};
    PsSkinMetrics met;
    int rc = 1;
    if (argc > 2 && strcmp(argv[2], "-")) {
        if (ds_mesh_read(argv[2], &file_mesh, err, sizeof err)) goto done;
        mesh = &file_mesh;
    } else if (ds_procedural_make("humanoid", 1000, 32, &shape, err, sizeof err)) {
        goto done;
    }
    /* the checkpoint's own cubature count, as `anima physskin skin` uses by default */
    if (ps_skinner_run(&sk, mesh, argc > 2 ? argv[2] : "humanoid", sk.cfg.data.n_cubature, &s, &met, err,
                       sizeof err))
        goto done;
    /* each vertex's weights over the handles: the network's raw output, not a partition of unity */
    double lo = 1e300, hi = -1e300;
    for (int64_t v = 0; v < s.nv; v++) {
        double sum = 0;
        for (int64_t k = 0; k < s.m; k++) sum += s.vert_w[v * s.m + k];
        lo = sum < lo ? sum : lo;
        hi = sum > hi ? sum : hi;
    }
    printf("%lld vertices, %lld cubature points, %lld handles; weight sums per vertex in [%.3f, %.3f]\n",
           (long long)s.nv, (long long)s.nc, (long long)s.m, lo, hi);
    printf("orthogonality error %.4f, condition number %.3g, spectral balance %.4f\n", met.orth_err, met.cond,
           met.balance);
    if (argc > 3 && ds_skinning_write(argv[3], &s, err, sizeof err)) goto done;
    if (argc > 3) printf("wrote %s\n", argv[3]);
    rc = 0;
done:
    if (rc) fprintf(stderr, "%s\n", err);
    ds_skinning_free(&s);
    ds_mesh_free(&file_mesh);
    ds_procedural_free(&shape);
    ps_skinner_free(&sk);
    tensor_runtime_shutdown();
    return rc;
}
