/* tests/test_physskin.c — PhysSkin++ (models/physskin/): the energy density (rest state,
 * first Piola–Kirchhoff stress by autograd, frame indifference), the subspace deformation
 * gradient against per-point loops and an affine z, L_pot = 0 at z = 0, ∇W by finite
 * differences and by autograd against an f64 reference, an f64 gradcheck of the whole PISSL
 * loss on the tiny preset (both ∇W modes: the exact one differentiates a gradient), the
 * presets' schema, and a train → stop → resume run equal to an uninterrupted one. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autograd/gradcheck.h"
#include "models/physskin/train.h"
#include "optim/checkpoint.h"
#include "tests/test.h"

static void tiny_config(PsConfig *c) {
    char err[1024];
    int rc = ps_config_load(c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
}

static Tensor *rand_F(uint64_t seed, int64_t n, double scale) {
    TensorRng g = {.seed = seed, .stream = 1};
    return tensor_add(tensor_eye(3, TENSOR_F64), tensor_mul_scalar(tensor_randn_with(&g, TENSOR_SHAPE(n, 3, 3), TENSOR_F64), scale));
}

/* every activation the config offers maps to its own NnActivation; an unknown name is GELU */
TEST(physskin_activation_names) {
    CHECK(ps_activation("gelu") == NN_ACT_GELU);
    CHECK(ps_activation("elu") == NN_ACT_ELU);
    CHECK(ps_activation("silu") == NN_ACT_SILU);
    CHECK(ps_activation("tanh") == NN_ACT_TANH);
    CHECK(ps_activation("softplus") == NN_ACT_SOFTPLUS);
    CHECK(ps_activation("relu6") == NN_ACT_GELU);
}

TEST(physskin_psi_rest_and_stress) {
    double mu, lam;
    base_lame(1e5, 0.45, true, &mu, &lam);
    Tensor *F = tensor_requires_grad(tensor_clone(tensor_reshape(tensor_eye(3, TENSOR_F64), TENSOR_SHAPE(1, 3, 3))), true);
    Tensor *psi = tensor_sum_all(ps_psi_neohookean(F, mu, lam));
    CHECK_NEAR(tensor_item(psi), 0.0, 1e-9);
    Tensor *P = NULL;
    ag_grad(1, &psi, NULL, 1, &F, &P, false);
    CHECK(P != NULL);
    for (int64_t i = 0; i < 9; i++) CHECK_NEAR(tensor_get(tensor_reshape(P, TENSOR_SHAPE(9)), &i), 0.0, 1e-7 * mu);
    Tensor *Fl = tensor_reshape(tensor_eye(3, TENSOR_F64), TENSOR_SHAPE(1, 3, 3));
    CHECK_NEAR(tensor_item(tensor_sum_all(ps_psi_linear(Fl, mu, lam))), 0.0, 1e-12);
    /* away from rest: autograd's P equals μF + (λ(J − 1) − μ) J F⁻ᵀ (physskin.md §2) */
    Tensor *G = tensor_requires_grad(rand_F(3, 5, 0.2), true);
    Tensor *s = tensor_sum_all(ps_psi_neohookean(G, mu, lam));
    Tensor *PG = NULL;
    ag_grad(1, &s, NULL, 1, &G, &PG, false);
    Tensor *J = tensor_reshape(tensor_det3(G), TENSOR_SHAPE(5, 1, 1));
    Tensor *coef = tensor_mul(tensor_add_scalar(tensor_mul_scalar(tensor_add_scalar(J, -1), lam), -mu), J);
    Tensor *ref = tensor_add(tensor_mul_scalar(G, mu), tensor_mul(coef, tensor_transpose(tensor_inv3(G), 1, 2)));
    CHECK_MSG(test_rel_err(PG, ref) < 1e-10, "P rel err %g", test_rel_err(PG, ref));
}

TEST(physskin_psi_rotation_invariant) {
    double mu, lam;
    base_lame(1e5, 0.45, true, &mu, &lam);
    Tensor *F = rand_F(5, 16, 0.3);
    /* a rotation from the polar-free route: Rodrigues of a fixed axis-angle */
    double ax[3] = {0.3, -0.5, 0.8}, th = 1.1, n = sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
    for (int i = 0; i < 3; i++) ax[i] /= n;
    double K[9] = {0, -ax[2], ax[1], ax[2], 0, -ax[0], -ax[1], ax[0], 0}, R[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double kk = 0;
            for (int l = 0; l < 3; l++) kk += K[i * 3 + l] * K[l * 3 + j];
            R[i * 3 + j] = (i == j) + sin(th) * K[i * 3 + j] + (1 - cos(th)) * kk;
        }
    Tensor *Rt = tensor_from_f64(TENSOR_SHAPE(3, 3), TENSOR_F64, R);
    Tensor *p0 = ps_psi_neohookean(F, mu, lam);
    Tensor *pl = ps_psi_neohookean(tensor_matmul(Rt, F), mu, lam); /* frame indifference */
    Tensor *pr = ps_psi_neohookean(tensor_matmul(F, Rt), mu, lam); /* isotropy */
    CHECK_MSG(test_rel_err(pl, p0) < 1e-10, "left %g", test_rel_err(pl, p0));
    CHECK_MSG(test_rel_err(pr, p0) < 1e-10, "right %g", test_rel_err(pr, p0));
    CHECK(tensor_item(tensor_min(p0, 0, NULL, false)) > 0);
}

/* fields with a partition of unity: w_0 = 0.3 + 0.2x − 0.1z, w_1 = 0.5 − 0.2x + 0.3y, w_2 = 1 − w_0 − w_1 */
static void affine_fields(int64_t C, Tensor **W, Tensor **gW, Tensor **X) {
    TensorRng g = {.seed = 9, .stream = 2};
    *X = tensor_add_scalar(tensor_mul_scalar(tensor_rand_with(&g, TENSOR_SHAPE(1, C, 3), TENSOR_F64), 2), -1);
    double *x = tensor_f64(*X);
    double *w = malloc(sizeof(double) * (size_t)C * 3), *gw = malloc(sizeof(double) * (size_t)C * 9);
    double G[3][3] = {{0.2, 0, -0.1}, {-0.2, 0.3, 0}, {0, -0.3, 0.1}};
    for (int64_t c = 0; c < C; c++) {
        w[c * 3 + 0] = 0.3 + 0.2 * x[c * 3] - 0.1 * x[c * 3 + 2];
        w[c * 3 + 1] = 0.5 - 0.2 * x[c * 3] + 0.3 * x[c * 3 + 1];
        w[c * 3 + 2] = 1 - w[c * 3] - w[c * 3 + 1];
        memcpy(gw + c * 9, G, sizeof G);
    }
    *W = tensor_from_f64(TENSOR_SHAPE(1, C, 3), TENSOR_F64, w);
    *gW = tensor_from_f64(TENSOR_SHAPE(1, C, 3, 3), TENSOR_F64, gw);
    free(w), free(gw);
}

TEST(physskin_deformation_gradient) {
    int64_t C = 7, m = 3, Z = 4;
    Tensor *W, *gW, *X;
    affine_fields(C, &W, &gW, &X);
    TensorRng g = {.seed = 4, .stream = 3};
    Tensor *z = tensor_mul_scalar(tensor_randn_with(&g, TENSOR_SHAPE(1, Z, 12 * m), TENSOR_F64), 0.3);
    Tensor *F = ps_deformation_gradient(W, gW, X, z); /* (1, Z, C, 3, 3) */
    /* per-point loops of physskin.md §1 */
    double *w = tensor_f64(W), *gw = tensor_f64(gW), *x = tensor_f64(X), *zz = tensor_f64(z);
    double err = 0;
    for (int64_t s = 0; s < Z; s++)
        for (int64_t c = 0; c < C; c++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    double ref = i == j;
                    for (int k = 0; k < m; k++) {
                        const double *T = zz + s * 12 * m + 12 * k;
                        double tx = T[i * 4 + 3];
                        for (int l = 0; l < 3; l++) tx += T[i * 4 + l] * x[c * 3 + l];
                        ref += w[c * 3 + k] * T[i * 4 + j] + tx * gw[(c * 3 + k) * 3 + j];
                    }
                    double got = tensor_get(F, (int64_t[]){0, s, c, i, j});
                    err = fmax(err, fabs(got - ref));
                }
    CHECK_MSG(err < 1e-12, "F vs loops: %g", err);
    /* every handle with the same affine T: x = X + T[X;1] (Σw = 1, Σ∇w = 0), so F = I + T[:, :3] */
    double T[12] = {0.1, -0.2, 0.05, 0.3, 0.02, 0.15, -0.1, -0.2, 0.07, 0.0, -0.12, 0.4};
    double za[36];
    for (int k = 0; k < 3; k++) memcpy(za + 12 * k, T, sizeof T);
    Tensor *Fa = ps_deformation_gradient(W, gW, X, tensor_from_f64(TENSOR_SHAPE(1, 1, 36), TENSOR_F64, za));
    err = 0;
    for (int64_t c = 0; c < C; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                err = fmax(err, fabs(tensor_get(Fa, (int64_t[]){0, 0, c, i, j}) - ((i == j) + T[i * 4 + j])));
    CHECK_MSG(err < 1e-12, "affine z: %g", err);
    /* z = 0: the rest state, zero energy */
    PsLossOptions o = {.mu = 1e3, .lambda = 5e3, .normalize = true};
    PsLosses L;
    ps_losses(&o, W, gW, X, tensor_ones(TENSOR_SHAPE(1, C), TENSOR_F64), tensor_zeros(TENSOR_SHAPE(1, 2, 36), TENSOR_F64), &L);
    CHECK_NEAR(tensor_item(L.pot), 0.0, 1e-12);
}

/* the tiny model with f64 parameters on a fixed two-shape batch */
typedef struct {
    PsConfig c;
    NnParams p;
    PsModel m;
    PsData d;
    PsBatch b;
} Tiny;

static void tiny_init(Tiny *t, TensorDType dt, const char *grad) {
    char err[1024];
    tiny_config(&t->c);
    snprintf(t->c.model.dtype, sizeof t->c.model.dtype, "%s", dt == TENSOR_F64 ? "f64" : "f32");
    snprintf(t->c.loss.grad, sizeof t->c.loss.grad, "%s", grad);
    nn_params_init(&t->p, tensor_scope_current(), dt, 7);
    ps_model_init(&t->m, &t->p, &t->c);
    CHECK_MSG(ps_data_load(&t->d, "procedural:chair,snake", &t->c, 0, 2, err, sizeof err) == 0, "%s", err);
    TensorRng g = {.seed = 1, .stream = 5};
    ps_batch_make(&t->d, (int64_t[]){0, 1}, 2, &t->c, &g, dt, &t->b);
}

static void tiny_free(Tiny *t) {
    ps_data_free(&t->d);
    ps_model_free(&t->m);
    nn_params_free(&t->p);
}

TEST(physskin_pot_zero_at_rest_model) {
    for (int oni = 0; oni < 2; oni++) {
        Tiny t;
        tiny_init(&t, TENSOR_F32, "fd");
        if (oni) { /* the ONI head (physskin.md §6) */
            ps_model_free(&t.m);
            nn_params_free(&t.p);
            t.c.model.oni = true;
            nn_params_init(&t.p, tensor_scope_current(), TENSOR_F32, 7);
            ps_model_init(&t.m, &t.p, &t.c);
            CHECK(nn_params_find(&t.p, "decoder.head.out.weight") != NULL);
        }
        t.b.z = tensor_zeros_like(t.b.z);
        PsLosses L;
        ps_step_losses(&t.m, &t.b, &t.c, &L);
        CHECK_NEAR(tensor_item(L.pot), 0.0, 1e-6);
        CHECK(tensor_item(L.orth) > 0 && isfinite(tensor_item(L.smooth)));
        tiny_free(&t);
    }
}

/* ∇W: f64 autograd is the reference; f64 central differences at δ = 1e-6 agree to ~1e-8; the
 * f32 model (same weights) by central differences at δ = 1e-3 and by autograd */
TEST(physskin_spatial_gradient_fd_vs_exact) {
    Tiny a, b;
    tiny_init(&a, TENSOR_F64, "exact");
    tiny_init(&b, TENSOR_F32, "fd");
    const NnParam *items;
    int n = nn_state_dict(&a.p, &items);
    const char **names = malloc(sizeof *names * (size_t)n);
    Tensor **vals = malloc(sizeof *vals * (size_t)n);
    for (int i = 0; i < n; i++) names[i] = items[i].name, vals[i] = items[i].value;
    char err[256];
    CHECK(nn_load_state_dict(&b.p, n, names, vals, err, sizeof err));
    free(names), free(vals);
    bool prev = ag_no_grad_begin();
    Tensor *fh64 = ps_handles(&a.m, ps_encode(&a.m, a.b.points, a.b.normals));
    Tensor *fh32 = ps_handles(&b.m, ps_encode(&b.m, tensor_cast(a.b.points, TENSOR_F32), tensor_cast(a.b.normals, TENSOR_F32)));
    Tensor *x32 = tensor_cast(a.b.x, TENSOR_F32);
    Tensor *w, *g_ref, *g_fd64, *g_fd32, *g_ex32, *w32;
    ps_decode_with_grad(&a.m, fh64, a.b.x, PS_GRAD_EXACT, 0, &w, &g_ref);
    ps_decode_with_grad(&a.m, fh64, a.b.x, PS_GRAD_FD, 1e-6, &w, &g_fd64);
    ps_decode_with_grad(&b.m, fh32, x32, PS_GRAD_FD, 1e-3, &w32, &g_fd32);
    ps_decode_with_grad(&b.m, fh32, x32, PS_GRAD_EXACT, 0, &w32, &g_ex32);
    ag_no_grad_end(prev);
    double e_fd64 = test_rel_err(g_fd64, g_ref), e_fd32 = test_rel_err(g_fd32, g_ref), e_ex32 = test_rel_err(g_ex32, g_ref);
    printf("    ∇W rel err vs f64 exact: f64 fd(1e-6) %.2e, f32 fd(1e-3) %.2e, f32 exact %.2e\n", e_fd64, e_fd32, e_ex32);
    CHECK(e_fd64 < 1e-6);
    CHECK(e_fd32 < 1e-2);
    CHECK(e_ex32 < 1e-4);
    CHECK(test_rel_err(w32, w) < 1e-4);
    tiny_free(&a), tiny_free(&b);
}

typedef struct {
    Tiny *t;
    double pot_scale;
} GcCtx;

static Tensor *gc_loss(int n, Tensor *const *in, void *user) {
    (void)n, (void)in;
    GcCtx *ctx = user;
    PsLosses L;
    ps_step_losses(&ctx->t->m, &ctx->t->b, &ctx->t->c, &L);
    /* each term on its own scale so that none hides the others' errors */
    Tensor *v[3] = {tensor_mul_scalar(L.pot, ctx->pot_scale), L.orth, L.smooth};
    return tensor_stack(3, v, 0);
}

/* The small parameter tensors (biases, LayerNorms, tokens: one or more in every module, so
 * every module's backward chain is on the path) and every stride-th larger one (0: none); the
 * rest are held fixed. One OpenMP thread: these tensors are far too small to share, and a busy
 * machine turns every parallel region into a wait. */
static void gradcheck_mode(const char *mode, double eps, int stride) {
    omp_set_num_threads(1);
    Tiny t;
    tiny_init(&t, TENSOR_F64, mode);
    GcCtx ctx = {&t, 1.0};
    PsLosses L0;
    ps_step_losses(&t.m, &t.b, &t.c, &L0);
    ctx.pot_scale = 1.0 / fmax(1e-30, fabs(tensor_item(L0.pot))); /* a constant of the check */
    int n = t.p.n;
    Tensor **in = malloc(sizeof *in * (size_t)n);
    for (int i = 0; i < n; i++) {
        in[i] = t.p.items[i].value;
        bool big = tensor_numel(in[i]) > 72;
        if (big && (stride == 0 || i % stride)) tensor_requires_grad(in[i], false);
    }
    AgGradcheckReport r;
    bool ok = ag_gradcheck(gc_loss, n, in, &ctx, eps, 1e-7, 1e-4, &r);
    CHECK_MSG(ok, "%s: %s elem %lld analytic %.10g numeric %.10g", mode,
              r.bad_input >= 0 ? t.p.items[r.bad_input].name : "-", (long long)r.bad_index, r.analytic, r.numeric);
    free(in);
    tiny_free(&t);
}

/* the exact mode's loss differentiates a gradient (second-order paths through the decoder) */
TEST(physskin_gradcheck_tiny_fd) { gradcheck_mode("fd", 1e-6, 0); }
TEST(physskin_gradcheck_tiny_exact) { gradcheck_mode("exact", 1e-6, 4); }

TEST(physskin_presets_load) {
    const char *files[3] = {"configs/physskin-paper.json", "configs/physskin-small.json", "configs/physskin-tiny.json"};
    for (int i = 0; i < 3; i++) {
        PsConfig c;
        char err[1024];
        CHECK_MSG(ps_config_load(&c, files[i], 0, NULL, err, sizeof err) == 0, "%s", err);
    }
    PsConfig c;
    char err[1024];
    const char *bad[1] = {"model.heads=3"};
    CHECK(ps_config_load(&c, "configs/physskin-small.json", 1, bad, err, sizeof err) != 0);
    CHECK(strstr(err, "heads") != NULL);
    PsData d;
    CHECK(ps_data_load(&d, "procedural:dragon", &c, 0, 1, err, sizeof err) != 0 && strstr(err, "dragon"));
    CHECK(ps_data_load(&d, "/nonexistent/dir", &c, 0, 1, err, sizeof err) != 0 && strstr(err, "/nonexistent"));
}

/* the small preset built in (what `anima physskin train` runs without --config) is
 * configs/physskin-small.json, byte for byte */
TEST(physskin_small_preset_built_in) {
    FILE *f = fopen("configs/physskin-small.json", "rb");
    CHECK(f != NULL);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    CHECK_MSG(!strcmp(text, PS_CONFIG_SMALL_JSON), "PS_CONFIG_SMALL_JSON differs from configs/physskin-small.json");
    PsConfig a, b;
    char err[1024];
    CHECK_MSG(ps_config_load(&a, "configs/physskin-small.json", 0, NULL, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ps_config_load_text(&b, "the small preset", PS_CONFIG_SMALL_JSON, 0, NULL, err, sizeof err) == 0, "%s", err);
    char *ja = ds_config_to_json(PS_CONFIG_SCHEMA, &a), *jb = ds_config_to_json(PS_CONFIG_SCHEMA, &b);
    CHECK(!strcmp(ja, jb) && b.model.width == 64);
    free(ja), free(jb);
}

typedef struct {
    int64_t calls, last, total;
    bool in_order;
} DataHeard;

static void heard_data(int64_t done, int64_t total, void *user) {
    DataHeard *h = user;
    h->in_order &= done == h->last + 1;
    h->calls++, h->last = done, h->total = total;
}

/* preparing the data reports each shape, in order, one call at a time (issue 17: `physskin
 * train` was silent for ~45 s while preparing) */
TEST(physskin_data_load_reports_progress) {
    PsConfig c;
    char err[1024];
    const char *sets[1] = {"data.shapes=3"};
    CHECK_MSG(ps_config_load(&c, "configs/physskin-tiny.json", 1, sets, err, sizeof err) == 0, "%s", err);
    PsData d;
    DataHeard h = {.in_order = true};
    CHECK_MSG(ps_data_load_progress(&d, "procedural:chair,snake", &c, 0, 3, heard_data, &h, err, sizeof err) == 0,
              "%s", err);
    CHECK_MSG(h.calls == 3 && h.last == 3 && h.total == 3 && h.in_order, "%lld calls, last %lld of %lld",
              (long long)h.calls, (long long)h.last, (long long)h.total);
    ps_data_free(&d);
}

static int train_run(const char *dir, int64_t steps, int64_t stop_after, bool resume) {
    PsConfig c;
    tiny_config(&c);
    c.train.steps = steps;
    mkdir(dir, 0777);
    char *json = ds_config_to_json(PS_CONFIG_SCHEMA, &c);
    PsTrainArgs a = {.cfg = &c, .cfg_json = json, .data = "procedural:chair,snake", .out_dir = dir, .resume = resume,
                     .progress = 0, .stop_after = stop_after};
    int rc = ps_train(&a);
    free(json);
    return rc;
}

static Tensor *ckpt_params(const char *path) {
    PsConfig c;
    tiny_config(&c);
    NnParams p;
    nn_params_init(&p, tensor_scope_current(), TENSOR_F32, 0);
    PsModel m;
    ps_model_init(&m, &p, &c);
    nn_params_pack(&p);
    char err[1024];
    int rc = optim_checkpoint_load(path, &p, NULL, true, NULL, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    Tensor *flat = p.flat;
    ps_model_free(&m);
    nn_params_free(&p);
    return flat;
}

TEST(physskin_train_resume_bit_identical) {
    char a[64], b[64], pa[96], pb[96];
    snprintf(a, sizeof a, "/tmp/anima-ps-a-%d", (int)getpid());
    snprintf(b, sizeof b, "/tmp/anima-ps-b-%d", (int)getpid());
    CHECK(train_run(a, 4, 0, false) == 0);
    CHECK(train_run(b, 4, 2, false) == 0);
    CHECK(train_run(b, 4, 0, true) == 0);
    snprintf(pa, sizeof pa, "%s/ckpt.h5", a);
    snprintf(pb, sizeof pb, "%s/ckpt.h5", b);
    Tensor *x = ckpt_params(pa), *y = ckpt_params(pb);
    CHECK(tensor_numel(x) == tensor_numel(y));
    CHECK(memcmp(tensor_f32(x), tensor_f32(y), sizeof(float) * (size_t)tensor_numel(x)) == 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", a, b);
    CHECK(system(cmd) == 0);
}

#include "datasets/geometry/geometry.h"
#include "datasets/corpus/skinning_file.h"
#include "models/physskin/infer.h"
#include "sim/solver.h"

/* `skin` on a sphere of radius 1.5 centered at (2, 0, -1), read back with the simulator's reader:
 * the file is the skinning file (datasets/corpus/skinning_file.h) in the normalized frame, and its
 * center/scale lead back to the mesh file's frame (vertices as given, cubature inside the
 * sphere, volumes summing to its volume); the simulator then drops it on a floor for a few
 * steps without a Newton failure or a NaN. */
TEST(physskin_skin_mesh_feeds_the_simulator) {
    char dir[64], ck[96], obj[96], out[96], err[1024];
    snprintf(dir, sizeof dir, "/tmp/anima-ps-skin-%d", (int)getpid());
    CHECK(train_run(dir, 1, 0, false) == 0);
    snprintf(ck, sizeof ck, "%s/ckpt.h5", dir);
    snprintf(obj, sizeof obj, "%s/sphere.obj", dir);
    snprintf(out, sizeof out, "%s/skin.h5", dir);
    DsMesh s;
    CHECK(ds_mesh_make_uv_sphere(1.5f, 16, 24, &s) == 0);
    for (int64_t i = 0; i < s.nv; i++) s.v[3 * i] += 2.0f, s.v[3 * i + 2] -= 1.0f;
    CHECK(ds_mesh_write(obj, &s, true, err, sizeof err) == 0);
    int rc = ps_skin_mesh(ck, obj, out, 0, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    SimSkinning sk;
    rc = sim_skinning_read(out, &sk, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    CHECK(sk.m == 3 && sk.nv == s.nv && sk.nf == s.nf && sk.vert_dw && sk.has_frame && sk.nc > 0);
    CHECK_MSG(!strcmp(sk.source, ck), "source '%s'", sk.source);
    double err_v = 0, vsum = 0, rmax = 0, inv = 1 / sk.scale;
    for (int64_t i = 0; i < s.nv; i++)
        for (int k = 0; k < 3; k++) err_v = fmax(err_v, fabs(sk.vert_x[3 * i + k] * inv + sk.center[k] - s.v[3 * i + k]));
    for (int64_t i = 0; i < sk.nc; i++) {
        vsum += sk.cub_vol[i] * inv * inv * inv;
        double x = sk.cub_x[3 * i] * inv + sk.center[0] - 2, y = sk.cub_x[3 * i + 1] * inv + sk.center[1];
        double z = sk.cub_x[3 * i + 2] * inv + sk.center[2] + 1;
        rmax = fmax(rmax, sqrt(x * x + y * y + z * z));
    }
    double ref = 4.0 / 3.0 * M_PI * 1.5 * 1.5 * 1.5;
    CHECK_MSG(err_v < 1e-5, "vertices off by %g", err_v);
    CHECK_MSG(rmax < 1.5, "cubature point at radius %g", rmax);
    CHECK_MSG(fabs(vsum - ref) < 0.3 * ref, "volume %g vs %g", vsum, ref); /* an 8³ grid */
    /* the simulator takes it as is: a few steps falling onto a floor */
    SimMaterial mat = {.E = 1e5, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    pose.scale = 0.3, pose.translate[1] = 0.32;
    SimObject o;
    rc = sim_object_init(&o, &sk, &mat, &pose, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc == 0) {
        o.gravity[1] = -9.81;
        SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
        CHECK(sim_object_add_plane(&o, &floor, err, sizeof err) == 0);
        double *x = malloc(sizeof(double) * 3 * (size_t)o.nv);
        int failures = 0;
        for (int step = 0; step < 10; step++) {
            CHECK_MSG(sim_object_step(&o, 0.01, err, sizeof err) == 0, "%s", err);
            failures += o.last.failures;
        }
        sim_object_vertices(&o, x);
        bool finite = true;
        double ymean = 0;
        for (int64_t v = 0; v < o.nv; v++) {
            for (int k = 0; k < 3; k++) finite &= isfinite(x[3 * v + k]);
            ymean += x[3 * v + 1] / (double)o.nv;
        }
        CHECK(finite && failures == 0);
        CHECK_MSG(ymean < 0.32 - 0.001, "the object did not fall (mean y %g)", ymean);
        free(x);
        sim_object_free(&o);
    }
    sim_skinning_free(&sk);
    /* errors name the file: a mesh file as the checkpoint, a missing mesh, a corrupt mesh */
    PsConfig c;
    CHECK(ps_checkpoint_config(obj, &c, err, sizeof err) != 0);
    CHECK(ps_skin_mesh(obj, obj, out, 0, err, sizeof err) != 0 && strstr(err, obj));
    CHECK(ps_skin_mesh(out, obj, out, 0, err, sizeof err) != 0 && strstr(err, out)); /* a skinning file */
    char missing[128], bad[128];
    snprintf(missing, sizeof missing, "%s/none.obj", dir);
    CHECK(ps_skin_mesh(ck, missing, out, 0, err, sizeof err) != 0 && strstr(err, missing));
    snprintf(bad, sizeof bad, "%s/bad.off", dir);
    FILE *f = fopen(bad, "w");
    fputs("OFF\n3 1 0\n0 0 0\n", f);
    fclose(f);
    CHECK(ps_skin_mesh(ck, bad, out, 0, err, sizeof err) != 0 && strstr(err, bad));
    ds_mesh_free(&s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* physskin.md §5 on matrices with known spectra */
TEST(physskin_skin_metrics) {
    /* orthogonal columns of different norms: Ŵ orthonormal */
    float w[4 * 3] = {2, 0, 0, 0, 3, 0, 0, 0, 0.5f, 0, 0, 0};
    PsSkinMetrics m;
    ps_skin_metrics(w, 4, 3, &m);
    CHECK_NEAR(m.orth_err, 0, 1e-12);
    CHECK_NEAR(m.cond, 1, 1e-9);
    CHECK_NEAR(m.balance, 1, 1e-9);
    /* two columns at 60°: Gram [[1, ½], [½, 1]], σ² = 3/2 and 1/2 */
    float v[2 * 2] = {1, 0.5f, 0, 0.8660254f};
    ps_skin_metrics(v, 2, 2, &m);
    CHECK_NEAR(m.orth_err, sqrt(0.5) / 2, 1e-6);
    CHECK_NEAR(m.cond, sqrt(3.0), 1e-5);
    CHECK_NEAR(m.balance, -(0.75 * log(0.75) + 0.25 * log(0.25)) / log(2.0), 1e-6);
    /* identical columns: rank 1 */
    float u[3 * 2] = {1, 1, 2, 2, 3, 3};
    ps_skin_metrics(u, 3, 2, &m);
    CHECK(isinf(m.cond));
}
