/* tests/test_rig_corpus.c — PhysSkin's training shapes from rig files (issue 21 item 1:
 * "rigs from Skelebones and from files read through libassimp"): `--data rigs:a.h5,b.fbx`
 * (models/physskin/data.c) reads a Skelebones rig.h5 or a skinned model, and its batches carry the
 * file's rig, from which L_comp builds J. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/h5file.h"
#include "datasets/geometry/procedural.h"
#include "models/physskin/train.h"
#include "tests/test.h"

/* A rig.h5 in the layout `anima skelebones` writes (skelebones.h: rest/points, rest/faces,
 * bones/weights, bones/transforms, producer): the procedural humanoid's mesh and its own LBS
 * weights, one frame of identity transforms. */
static void write_rig_h5(const char *path, const DsProceduralShape *sh) {
    char tmp[4200], err[512];
    base_h5_quiet();
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, sizeof err);
    CHECK_MSG(f >= 0, "%s", err);
    int B = sh->nbones;
    int64_t N = sh->mesh.nv;
    float *T = calloc((size_t)B * 12, sizeof(float));
    for (int j = 0; j < B; j++) T[12 * j] = T[12 * j + 5] = T[12 * j + 10] = 1;
    hsize_t dr[2] = {(hsize_t)N, 3}, dw[2] = {(hsize_t)N, (hsize_t)B}, dt[4] = {1, (hsize_t)B, 3, 4},
            df[2] = {(hsize_t)sh->mesh.nf, 3};
    bool ok = base_h5_write_checked(f, "rest/points", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dr, sh->mesh.v, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "rest/faces", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, df, sh->mesh.f, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "bones/weights", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dw, sh->weights, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "bones/transforms", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, dt, T, 1 << 20, false) == 0;
    ok = ok && base_h5_attr_str(f, "producer", "anima skelebones (test)") == 0;
    CHECK_MSG(base_h5_save_end(f, tmp, path, ok, "rig", err, sizeof err) == 0, "%s", err);
    free(T);
}

/* The batch carries the shape's rig (rows summing to 1 over its bones) and L_comp on it is a
 * value in (0, 1) */
static void check_batch(const PsData *d, PsConfig *c, int nbones) {
    TensorRng g = {.seed = 1, .stream = 5};
    PsBatch b;
    ps_batch_make(d, (int64_t[]){0}, 1, c, &g, TENSOR_F64, &b);
    CHECK(b.rig != NULL);
    CHECK(b.rig->shape[2] == nbones);
    int64_t C = b.x->shape[1];
    for (int64_t i = 0; i < C; i++) {
        double sum = 0;
        for (int64_t j = 0; j < nbones; j++) {
            double r = tensor_get(b.rig, (int64_t[]){0, i, j});
            CHECK(r >= 0 && r <= 1 + 1e-6);
            sum += r;
        }
        CHECK_NEAR(sum, 1.0, 1e-5);
    }
    c->loss.w_comp = 1;
    NnParams p;
    nn_params_init(&p, tensor_scope_current(), TENSOR_F64, 7);
    snprintf(c->model.dtype, sizeof c->model.dtype, "f64");
    PsModel m;
    ps_model_init(&m, &p, c);
    PsLosses L;
    ps_step_losses(&m, &b, c, &L);
    CHECK(L.comp && tensor_item(L.comp) > 0 && tensor_item(L.comp) < 1);
    ps_model_free(&m);
    nn_params_free(&p);
}

/* A Skelebones rig.h5 as a training shape: its weights reach the sampled points (carried from the
 * vertices) close to the weights the rig's own bones give there (the generating primitives' soft
 * partition at the same points), and its batch carries the rig */
TEST(rig_corpus_skelebones_rig_h5) {
    DsProceduralShape sh;
    char err[1024];
    CHECK_MSG(ds_procedural_make("humanoid", 3, 32, &sh, err, sizeof err) == 0, "%s", err);
    char dir[] = "/tmp/anima-rigcorpus-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], src[300];
    snprintf(path, sizeof path, "%s/rig.h5", dir);
    write_rig_h5(path, &sh);
    PsConfig c;
    CHECK_MSG(ps_config_load(&c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err) == 0, "%s", err);
    snprintf(src, sizeof src, "rigs:%s", path);
    int64_t count = 0;
    CHECK_MSG(ps_data_count(src, &c, &count, err, sizeof err) == 0 && count == 1, "%s", err);
    PsData d;
    CHECK_MSG(ps_data_load(&d, src, &c, 0, 1, err, sizeof err) == 0, "%s", err);
    const PsShape *s = &d.shapes[0];
    CHECK(s->nbones == sh.nbones && s->n_surface > 0 && s->n_cubature > 0 && !strcmp(s->category, "rig.h5"));
    /* the points are in the normalized frame of the mesh: back to the shape's frame for the reference */
    DsPreprocessOptions o;
    ds_preprocess_defaults(&o);
    DsTransform xf = ds_mesh_normalizing_transform(&sh.mesh, o.margin);
    int64_t n = s->n_surface;
    float *p = malloc(sizeof(float) * 3 * (size_t)n), *w = malloc(sizeof(float) * (size_t)(n * sh.nbones));
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) p[3 * i + a] = s->surface[3 * i + a] / xf.scale + xf.center[a];
    ds_procedural_weights(&sh.scene, sh.nbones, p, n, 0, w);
    double diff = 0;
    for (int64_t k = 0; k < n * sh.nbones; k++) diff += fabs(w[k] - s->rig_surface[k]);
    diff /= (double)n;
    printf("    %d bones; mean L1 of the carried weights vs the bones' own at the surface samples: %.3f\n", s->nbones,
           diff);
    CHECK_MSG(diff < 0.1, "%g", diff);
    check_batch(&d, &c, sh.nbones);
    free(p), free(w);
    ps_data_free(&d);
    /* a rig without faces (a point cloud's) has no interior: refused with the file named */
    DsMesh keep = sh.mesh;
    sh.mesh.nf = 0;
    write_rig_h5(path, &sh);
    sh.mesh = keep;
    CHECK(ps_data_load(&d, src, &c, 0, 1, err, sizeof err) != 0 && strstr(err, "faces") && strstr(err, "rig.h5"));
    CHECK(ps_data_count("rigs:a.h5,,b.h5", &c, &count, err, sizeof err) != 0);
    CHECK(ps_data_count("rigs:a.h5,b.fbx", &c, &count, err, sizeof err) == 0 && count == 2);
    unlink(path), rmdir(dir);
    ds_procedural_free(&sh);
}

/* A skinned model read through libassimp (Debian's assimp-testmodels) as a training shape */
#define HUESITOS "/usr/share/assimp/models/FBX/huesitos.fbx"
TEST(rig_corpus_assimp_skinned_model) {
    if (access(HUESITOS, R_OK) != 0) {
        printf("    skipped: %s absent (apt-get install assimp-testmodels)\n", HUESITOS);
        return;
    }
    PsConfig c;
    char err[1024];
    CHECK_MSG(ps_config_load(&c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err) == 0, "%s", err);
    PsData d;
    CHECK_MSG(ps_data_load(&d, "rigs:" HUESITOS, &c, 0, 1, err, sizeof err) == 0, "%s", err);
    const PsShape *s = &d.shapes[0];
    printf("    %s: %d bones, %lld surface samples, %lld interior candidates\n", s->category, s->nbones,
           (long long)s->n_surface, (long long)s->n_cubature);
    CHECK(s->nbones > 1 && s->n_surface > 0);
    check_batch(&d, &c, s->nbones);
    ps_data_free(&d);
}
