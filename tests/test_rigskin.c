/* tests/test_rigskin.c — rig-complementary PhysSkin (issue 21; physskin.md §9): L_comp against
 * the explicit JᵀMB of per-point 3×12 blocks, zero for fields mass-orthogonal to the rig space
 * and bounded by 1, its f64 gradcheck, and the rig weights the procedural batches carry. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd/gradcheck.h"
#include "base/clock.h"
#include "datasets/motion/rig.h"
#include "models/physskin/train.h"
#include "sim/internal.h"
#include "sim/rig.h"
#include "sim/scene.h"
#include "sim/world.h"
#include "tests/sim_test_util.h"
#include "tests/test.h"

static Tensor *rand_t(uint64_t seed, int nd, const int64_t *shape, double lo, double hi) {
    TensorRng g = {.seed = seed, .stream = 11};
    return tensor_add_scalar(tensor_mul_scalar(tensor_rand_with(&g, nd, shape, TENSOR_F64), hi - lo), lo);
}

/* random rig weights (rows sum to 1) */
static Tensor *rand_rig(uint64_t seed, int64_t B, int64_t C, int64_t nb) {
    Tensor *r = rand_t(seed, TENSOR_SHAPE(B, C, nb), 0.05, 1.0);
    return tensor_div(r, tensor_sum(r, TENSOR_DIMS(2), true));
}

/* ‖JᵀMB‖²/(‖M^½J‖²‖M^½B‖²) of shape b with J and B formed as dense 3C × 12n matrices */
static double comp_dense(const double *w, const double *x, const double *v, const double *r, int64_t C, int64_t m,
                         int64_t nb) {
    double *J = calloc((size_t)(3 * C * 12 * nb), sizeof(double)), *Bm = calloc((size_t)(3 * C * 12 * m), sizeof(double));
    for (int64_t c = 0; c < C; c++) {
        double xh[4] = {x[c * 3], x[c * 3 + 1], x[c * 3 + 2], 1};
        for (int i = 0; i < 3; i++)
            for (int l = 0; l < 4; l++) {
                for (int64_t j = 0; j < nb; j++) J[(3 * c + i) * 12 * nb + 12 * j + 4 * i + l] = r[c * nb + j] * xh[l];
                for (int64_t k = 0; k < m; k++) Bm[(3 * c + i) * 12 * m + 12 * k + 4 * i + l] = w[c * m + k] * xh[l];
            }
    }
    double num = 0, nj = 0, nbm = 0;
    for (int64_t p = 0; p < 12 * nb; p++)
        for (int64_t q = 0; q < 12 * m; q++) {
            double g = 0;
            for (int64_t row = 0; row < 3 * C; row++) g += J[row * 12 * nb + p] * v[row / 3] * Bm[row * 12 * m + q];
            num += g * g;
        }
    for (int64_t row = 0; row < 3 * C; row++) {
        for (int64_t p = 0; p < 12 * nb; p++) nj += v[row / 3] * J[row * 12 * nb + p] * J[row * 12 * nb + p];
        for (int64_t q = 0; q < 12 * m; q++) nbm += v[row / 3] * Bm[row * 12 * m + q] * Bm[row * 12 * m + q];
    }
    free(J), free(Bm);
    return num / (nj * nbm);
}

TEST(rigskin_comp_matches_dense_jacobian) {
    int64_t B = 2, C = 30, m = 3, nb = 4;
    Tensor *W = rand_t(1, TENSOR_SHAPE(B, C, m), -1, 1), *X = rand_t(2, TENSOR_SHAPE(B, C, 3), -1, 1);
    Tensor *V = rand_t(3, TENSOR_SHAPE(B, C), 0.5, 2), *R = rand_rig(4, B, C, nb);
    PsLossOptions o = {.normalize = false};
    Tensor *per;
    Tensor *L = ps_loss_comp(&o, W, X, V, R, &per);
    double mean = 0;
    for (int64_t b = 0; b < B; b++) {
        double ref = comp_dense(tensor_f64(W) + b * C * m, tensor_f64(X) + b * C * 3, tensor_f64(V) + b * C,
                                tensor_f64(R) + b * C * nb, C, m, nb);
        double got = tensor_get(per, (int64_t[]){b});
        CHECK_MSG(fabs(got - ref) < 1e-12 * fmax(1, ref), "shape %lld: %.15g vs dense %.15g", (long long)b, got, ref);
        CHECK(got > 0 && got <= 1);
        mean += ref / (double)B;
    }
    CHECK_NEAR(tensor_item(L), mean, 1e-13);
    /* normalized columns: the same as feeding Ŵ by hand */
    o.normalize = true;
    Tensor *wh;
    ps_normalize(W, NULL, &wh, NULL);
    PsLossOptions raw = {.normalize = false};
    CHECK_NEAR(tensor_item(ps_loss_comp(&o, W, X, V, R, NULL)), tensor_item(ps_loss_comp(&raw, wh, X, V, R, NULL)),
               1e-14);
    /* the fields equal to the rig weights: B = J, JᵀMJ is PSD of trace ‖M^½J‖² and rank ≤ 12nb,
     * so ‖JᵀMJ‖²_F ≥ (trace)²/(12nb): the loss is at least 1/(12nb), far from complementary */
    double self = tensor_item(ps_loss_comp(&raw, R, X, V, R, NULL));
    CHECK_MSG(self >= 1.0 / (12.0 * (double)nb) - 1e-12 && self <= 1, "B = J: %g", self);
}

/* fields made V-orthogonal to every R_j·Xh_l·Xh_l' (the products JᵀMB sums) have JᵀMB = 0 */
TEST(rigskin_comp_zero_for_complementary_fields) {
    int64_t C = 120, m = 2, nb = 3, nf = nb * 10;
    Tensor *Wt = rand_t(5, TENSOR_SHAPE(1, C, m), -1, 1), *X = rand_t(6, TENSOR_SHAPE(1, C, 3), -1, 1);
    Tensor *V = rand_t(7, TENSOR_SHAPE(1, C), 0.5, 2), *R = rand_rig(8, 1, C, nb);
    double *w = tensor_f64(Wt), *x = tensor_f64(X), *v = tensor_f64(V), *r = tensor_f64(R);
    /* basis f_(j,l≤l')(c) = R_cj Xh_cl Xh_cl', V-orthonormalized by modified Gram–Schmidt */
    double *F = calloc((size_t)(nf * C), sizeof(double));
    int64_t nbasis = 0;
    for (int64_t j = 0; j < nb; j++)
        for (int l = 0; l < 4; l++)
            for (int lp = l; lp < 4; lp++) {
                double *f = F + nbasis * C;
                for (int64_t c = 0; c < C; c++) {
                    double xh[4] = {x[c * 3], x[c * 3 + 1], x[c * 3 + 2], 1};
                    f[c] = r[c * nb + j] * xh[l] * xh[lp];
                }
                for (int pass = 0; pass < 2; pass++)
                    for (int64_t q = 0; q < nbasis; q++) {
                        double d = 0;
                        for (int64_t c = 0; c < C; c++) d += v[c] * f[c] * F[q * C + c];
                        for (int64_t c = 0; c < C; c++) f[c] -= d * F[q * C + c];
                    }
                double n2 = 0;
                for (int64_t c = 0; c < C; c++) n2 += v[c] * f[c] * f[c];
                if (n2 < 1e-20) continue; /* dependent (Σ_j R_j = 1 repeats the monomials) */
                for (int64_t c = 0; c < C; c++) f[c] /= sqrt(n2);
                nbasis++;
            }
    for (int64_t k = 0; k < m; k++)
        for (int pass = 0; pass < 2; pass++)
            for (int64_t q = 0; q < nbasis; q++) {
                double d = 0;
                for (int64_t c = 0; c < C; c++) d += v[c] * w[c * m + k] * F[q * C + c];
                for (int64_t c = 0; c < C; c++) w[c * m + k] -= d * F[q * C + c];
            }
    free(F);
    PsLossOptions o = {.normalize = true};
    double comp = tensor_item(ps_loss_comp(&o, Wt, X, V, R, NULL));
    CHECK_MSG(comp < 1e-24, "comp of complementary fields %g", comp);
}

typedef struct {
    Tensor *X, *V, *R;
} CompCtx;

static Tensor *comp_fn(int n, Tensor *const *in, void *user) {
    (void)n;
    CompCtx *c = user;
    PsLossOptions o = {.normalize = true};
    return ps_loss_comp(&o, in[0], c->X, c->V, c->R, NULL);
}

TEST(rigskin_comp_gradcheck) {
    int64_t B = 2, C = 12, m = 3, nb = 2;
    CompCtx c = {rand_t(9, TENSOR_SHAPE(B, C, 3), -1, 1), rand_t(10, TENSOR_SHAPE(B, C), 0.5, 2),
                 rand_rig(11, B, C, nb)};
    Tensor *W = tensor_requires_grad(rand_t(12, TENSOR_SHAPE(B, C, m), -1, 1), true);
    AgGradcheckReport r;
    bool ok = ag_gradcheck(comp_fn, 1, (Tensor *[]){W}, &c, 1e-6, 1e-9, 1e-5, &r);
    CHECK_MSG(ok, "elem %lld analytic %.10g numeric %.10g", (long long)r.bad_index, r.analytic, r.numeric);
}

/* the procedural batches carry the category's rig at the cubature points: weights in [0, 1],
 * rows summing to 1 over the shape's own bones, zero columns past them */
TEST(rigskin_batch_carries_rigs) {
    PsConfig c;
    char err[1024];
    CHECK_MSG(ps_config_load(&c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err) == 0, "%s", err);
    PsData d;
    CHECK_MSG(ps_data_load(&d, "procedural:chair,snake", &c, 0, 2, err, sizeof err) == 0, "%s", err);
    CHECK(d.shapes[0].nbones > 0 && d.shapes[1].nbones > 0);
    TensorRng g = {.seed = 1, .stream = 5};
    PsBatch b;
    ps_batch_make(&d, (int64_t[]){0, 1}, 2, &c, &g, TENSOR_F64, &b);
    CHECK(b.rig != NULL);
    int64_t C = b.x->shape[1], nb = b.rig->shape[2];
    CHECK(nb == (d.shapes[0].nbones > d.shapes[1].nbones ? d.shapes[0].nbones : d.shapes[1].nbones));
    for (int64_t s = 0; s < 2; s++)
        for (int64_t i = 0; i < C; i++) {
            double sum = 0;
            for (int64_t j = 0; j < nb; j++) {
                double r = tensor_get(b.rig, (int64_t[]){s, i, j});
                CHECK(r >= 0 && r <= 1 + 1e-6);
                if (j >= d.shapes[s].nbones) CHECK(r == 0);
                sum += r;
            }
            CHECK_NEAR(sum, 1.0, 1e-5);
        }
    /* L_comp through the model on this batch, and only when asked for */
    c.loss.w_comp = 1;
    NnParams p;
    nn_params_init(&p, tensor_scope_current(), TENSOR_F64, 7);
    snprintf(c.model.dtype, sizeof c.model.dtype, "f64");
    PsModel m;
    ps_model_init(&m, &p, &c);
    PsLosses L;
    ps_step_losses(&m, &b, &c, &L);
    CHECK(L.comp && tensor_item(L.comp) > 0 && tensor_item(L.comp) < 1);
    c.loss.w_comp = 0;
    ps_step_losses(&m, &b, &c, &L);
    CHECK(L.comp == NULL);
    ps_model_free(&m);
    nn_params_free(&p);
    ps_data_free(&d);
}

/* ---- the runtime (sim/rig.h) ------------------------------------------------------------------ */

typedef struct {
    SimSkinning sk;
    SimPose pose;
    SimObject o;
    SimRig r;
} Rigged;

static void rigged_init(Rigged *g, const char *category, const char *clip) {
    SimProceduralOptions po;
    sim_procedural_defaults(&po);
    po.category = category, po.kind = "rbf", po.handles = 12, po.cubature_res = 24, po.mesh_res = 32, po.seed = 1;
    po.normalize = true;
    char err[1024];
    CHECK_MSG(sim_skinning_procedural(&po, &g->sk, err, sizeof err) == 0, "%s", err);
    SimMaterial mat = {.E = 2e4, .nu = 0.3, .rho = 1000};
    g->pose = sim_pose_identity();
    g->pose.scale = 0.5, g->pose.translate[1] = 0.6;
    sim_pose_euler(&g->pose, (double[]){0, 30, 0});
    CHECK_MSG(sim_object_init(&g->o, &g->sk, &mat, &g->pose, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(sim_rig_init(&g->r, &g->o, category, 1, 32, 0, (double[]){0, 0, 0}, 1, &g->pose, err, sizeof err) == 0,
              "%s", err);
    if (clip) CHECK_MSG(sim_rig_set_clip(&g->r, clip, 30, 60, 1, -1, err, sizeof err) == 0, "%s", err);
}

static void rigged_free(Rigged *g) {
    sim_rig_free(&g->r);
    sim_object_free(&g->o);
    sim_skinning_free(&g->sk);
}

/* sim_rig_eval's blocked products (W S for the blended maps, P̃ Sᵀ for every bone's S_j p̃) against
 * the per-point, per-bone LBS of sim_lbs_point, mapped to the world as before (u = L (x − p),
 * F = R F_p Rᵀ): u_r at the cubature points and vertices and F_r, posed (a 30° pose turn, a walk
 * frame), to 1e-12 of their scale */
TEST(rigskin_eval_blocked_matches_per_point_lbs) {
    Rigged g;
    rigged_init(&g, "humanoid", "walk");
    const SimRig *r = &g.r;
    int nb = r->nbones;
    double local[4 * DS_RIG_MAX_BONES], root[3], skin[16 * DS_RIG_MAX_BONES];
    sim_rig_pose(&g.r, 0.9, local, root);
    double *uc = malloc(sizeof(double) * 3 * (size_t)r->nc), *uv = malloc(sizeof(double) * 3 * (size_t)r->nv);
    double *F = malloc(sizeof(double) * 9 * (size_t)r->nc);
    sim_rig_eval(r, local, root, uc, uv, F);
    ds_rig_fk(nb, r->shape.bones, local, root, NULL, NULL, skin);
    double sc = sqrt(r->L[0] * r->L[0] + r->L[3] * r->L[3] + r->L[6] * r->L[6]), eu = 0, eF = 0, su = 0, sF = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t q = 0; q < (pass ? r->nv : r->nc); q++) {
            const double *p = (pass ? r->pv : r->pc) + 3 * q, *w = (pass ? r->wv : r->wc) + q * nb;
            double x[3], Fp[9];
            sim_lbs_point(nb, skin, 16, p, w, pass ? NULL : r->dwc + q * nb * 3, x, pass ? NULL : Fp);
            for (int a = 0; a < 3; a++) {
                double ua = 0;
                for (int b = 0; b < 3; b++) ua += sc * r->R[3 * a + b] * (x[b] - p[b]);
                const double *u = pass ? uv : uc;
                eu = fmax(eu, fabs(u[3 * q + a] - ua)), su = fmax(su, fabs(ua));
            }
            for (int a = 0; !pass && a < 3; a++)
                for (int c = 0; c < 3; c++) {
                    double v = 0; /* (R Fp Rᵀ)_ac */
                    for (int b = 0; b < 3; b++)
                        for (int e = 0; e < 3; e++) v += r->R[3 * a + b] * Fp[3 * b + e] * r->R[3 * c + e];
                    eF = fmax(eF, fabs(F[9 * q + 3 * a + c] - v)), sF = fmax(sF, fabs(v));
                }
        }
    printf("    %lld cubature points, %lld vertices, %d bones: |u − u_ref| %.2e of %.3g m, |F − F_ref| %.2e of %.3g\n",
           (long long)r->nc, (long long)r->nv, nb, eu, su, eF, sF);
    CHECK(su > 0.05 && sF > 0.5);
    CHECK(eu <= 1e-12 * su && eF <= 1e-12 * sF);
    free(uc), free(uv), free(F);
    rigged_free(&g);
}

/* z = 0 (no physics): the object's vertices are exactly the rig's LBS of the mesh (ds_rig_lbs with
 * the shape's own vertex weights, mapped by the pose), at every time of the clip */
TEST(rigskin_zero_z_is_the_rig_animation) {
    Rigged g;
    rigged_init(&g, "humanoid", "walk");
    DsProceduralShape *sh = &g.r.shape;
    int64_t nv = g.o.nv;
    CHECK(nv == sh->mesh.nv);
    double *x = malloc(sizeof(double) * 3 * (size_t)nv), local[4 * DS_RIG_MAX_BONES], root[3], skin[16 * DS_RIG_MAX_BONES];
    float *ref = malloc(sizeof(float) * 3 * (size_t)nv);
    double err_max = 0, motion = 0;
    for (int s = 1; s <= 40; s += 13) {
        double t = s / 30.0;
        sim_rig_advance(&g.r, &g.o, t);
        memset(g.o.z, 0, sizeof(double) * (size_t)g.o.n);
        sim_object_vertices(&g.o, x);
        sim_rig_pose(&g.r, t, local, root);
        ds_rig_fk(sh->nbones, sh->bones, local, root, NULL, NULL, skin);
        ds_rig_lbs(nv, sh->mesh.v, sh->nbones, sh->weights, skin, ref);
        for (int64_t v = 0; v < nv; v++)
            for (int a = 0; a < 3; a++) {
                double w = g.pose.translate[a];
                for (int b = 0; b < 3; b++) w += g.pose.scale * g.pose.R[3 * a + b] * ref[3 * v + b];
                err_max = fmax(err_max, fabs(x[3 * v + a] - w));
                motion = fmax(motion, fabs(x[3 * v + a] - g.o.Xv[3 * v + a]));
            }
    }
    printf("    max |x(z=0) − LBS| %.2e m (rig motion up to %.3f m)\n", err_max, motion);
    CHECK(motion > 0.05);
    CHECK_MSG(err_max < 1e-5, "%g", err_max); /* the f32 weights and rest positions */
    free(x), free(ref);
    rigged_free(&g);
}

/* the start of a rigged step (sim_object_predict): the inertial prediction z̃ = z + dt ż, and the
 * guess z̃ + dt (ż − ż₋₁) (dt² times the last step's acceleration) projected onto the exact rows'
 * subspace; without the rig, z̃ projected (fails when the start ignores the acceleration) */
TEST(rigskin_start_extrapolates_the_rig_acceleration) {
    Rigged g;
    rigged_init(&g, "humanoid", "walk");
    SimObject *o = &g.o;
    double dt = 1 / 60.0;
    char err[256];
    int64_t n = o->n;
    double *za = malloc(sizeof(double) * (size_t)(7 * n)), *ztil = za + n, *zs = ztil + n, *zp0 = zs + n,
           *tn = zp0 + n, *tr = tn + n, *d = tr + n;
    for (int f = 1; f <= 8; f++) {
        if (f == 8) memcpy(za, o->zdot, sizeof(double) * (size_t)n);
        sim_rig_advance(&g.r, o, f * dt);
        CHECK_MSG(sim_object_step(o, dt, err, sizeof err) == 0, "%s", err);
    }
    double t1 = 9 * dt;
    sim_rig_advance(&g.r, o, t1);
    sim_object_predict(o, dt, t1, ztil, zs, tn, tr);
    const double *rigF = o->rig_F;
    o->rig_F = NULL; /* the same prediction as an object without a rig: z̃ projected */
    sim_object_predict(o, dt, t1, ztil, zp0, tn, tr);
    o->rig_F = rigF;
    const double *N, *zp, *Lm;
    int64_t nb = o->nb, r = sim_object_subspace(o, &N, &zp, &Lm);
    double e = 0, scale = 0, ep = 0;
    for (int64_t k = 0; k < n; k++) ep = fmax(ep, fabs(ztil[k] - (o->z[k] + dt * o->zdot[k])));
    for (int64_t k = 0; k < n; k++) d[k] = dt * (o->zdot[k] - za[k]);
    for (int i = 0; i < 3; i++) /* the expected difference: (I ⊗ N Nᵀ) d */
        for (int64_t a = 0; a < nb; a++) {
            double v = d[i * nb + a];
            if (N) {
                v = 0;
                for (int64_t j = 0; j < r; j++) {
                    double c = 0;
                    for (int64_t b = 0; b < nb; b++) c += N[b * r + j] * d[i * nb + b];
                    v += N[a * r + j] * c;
                }
            }
            scale = fmax(scale, fabs(v));
            e = fmax(e, fabs(zs[i * nb + a] - zp0[i * nb + a] - v));
        }
    printf("    start − projected z̃ against dt²·a projected: %.2e of %.2e\n", e, scale);
    CHECK(ep == 0);
    CHECK(scale > 1e-6);
    CHECK_MSG(e < 1e-10 * fmax(scale, 1), "%g of %g", e, scale);
    free(za);
    rigged_free(&g);
}

/* the complementary subspace (rig.h): the rig's acceleration over a step, and gravity, pull back to
 * zero through B_comp (they are rig fields), while through the same object's unprojected B they do
 * not; the step's inertia and elastic terms keep their derivatives (finite differences) */
TEST(rigskin_complement_sees_no_rig_acceleration) {
    Rigged g;
    rigged_init(&g, "quadruped", "trot");
    SimObject plain; /* the same skinning and pose without the rig: the original rows */
    char err[512];
    SimMaterial mat = {.E = 2e4, .nu = 0.3, .rho = 1000};
    CHECK_MSG(sim_object_init(&plain, &g.sk, &mat, &g.pose, err, sizeof err) == 0, "%s", err);
    int64_t nc = g.o.nc, nb = g.o.nb, L = 4 * g.o.m;
    CHECK(plain.nc == nc && plain.nb == nb);
    double dt = 1 / 60.0, *u[3], local[4 * DS_RIG_MAX_BONES], root[3];
    for (int k = 0; k < 3; k++) {
        u[k] = malloc(sizeof(double) * 3 * (size_t)nc);
        sim_rig_pose(&g.r, (10 + k) * dt, local, root);
        sim_rig_eval(&g.r, local, root, u[k], NULL, NULL);
    }
    /* relative size of Σ_c m_c b_c a_c over the learned columns: |f| / (‖b‖_M ‖a‖_M) */
    double rel[2][2] = {{0}}; /* [projected, plain][acceleration, gravity] */
    for (int which = 0; which < 2; which++) {
        const double *B = which ? plain.Bc : g.o.Bc;
        double fmax_ = 0, gmax = 0;
        for (int64_t q = 0; q < L; q++) {
            double bn = 0, an = 0, f[3] = {0, 0, 0}, grav = 0;
            for (int64_t c = 0; c < nc; c++) {
                double m = g.o.rho * g.o.Vc[c], b = B[c * nb + q];
                bn += m * b * b, grav += m * b;
                for (int i = 0; i < 3; i++) {
                    double a = u[2][3 * c + i] - 2 * u[1][3 * c + i] + u[0][3 * c + i];
                    f[i] += m * b * a, an += m * a * a;
                }
            }
            if (bn > 0) {
                fmax_ = fmax(fmax_, sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) / sqrt(bn * an));
                gmax = fmax(gmax, fabs(grav) / sqrt(bn * g.o.mass));
            }
        }
        rel[which][0] = fmax_, rel[which][1] = gmax;
    }
    printf("    |Bᵀ M a| / (‖b‖‖a‖): %.2e projected, %.2e plain; gravity's pull-back %.2e projected, %.2e plain\n",
           rel[0][0], rel[1][0], rel[0][1], rel[1][1]);
    CHECK(rel[0][0] < 1e-9 && rel[0][1] < 1e-9);
    CHECK(rel[1][0] > 1e-3 && rel[1][1] > 1e-3);
    for (int s = 1; s <= 3; s++) sim_rig_advance(&g.r, &g.o, s * dt);
    int64_t n = g.o.n;
    double *z = malloc(sizeof(double) * (size_t)n), *zt = calloc((size_t)n, sizeof(double)), *gr = malloc(sizeof(double) * (size_t)n);
    TensorRng rg = {.seed = 3, .stream = 1};
    Tensor *rz = tensor_randn_with(&rg, TENSOR_SHAPE(n), TENSOR_F64);
    for (int64_t q = 0; q < n; q++) z[q] = 1e-2 * tensor_f64(rz)[q];
    for (int term = SIM_TERM_INERTIA; term <= SIM_TERM_ELASTIC; term++) {
        sim_object_term(&g.o, term, z, zt, 3 * dt, gr, NULL);
        double worst = 0, scale = 0;
        for (int64_t q = 0; q < n; q += 7) {
            double h = 1e-6, z0 = z[q];
            z[q] = z0 + h;
            double ep = sim_object_term(&g.o, term, z, zt, 3 * dt, NULL, NULL);
            z[q] = z0 - h;
            double em = sim_object_term(&g.o, term, z, zt, 3 * dt, NULL, NULL);
            z[q] = z0;
            worst = fmax(worst, fabs((ep - em) / (2 * h) - gr[q])), scale = fmax(scale, fabs(gr[q]));
        }
        CHECK_MSG(worst < 1e-5 * fmax(scale, 1e-9) + 1e-9, "term %d: fd error %g of %g", term, worst, scale);
    }
    free(z), free(zt), free(gr);
    for (int k = 0; k < 3; k++) free(u[k]);
    sim_object_free(&plain);
    rigged_free(&g);
}

/* a trot for 0.5 s, then the rig holds its pose: no NaN, no Newton failure, secondary motion
 * present while the rig moves and decaying after it stops (implicit Euler's damping) */
TEST(rigskin_secondary_motion_decays_after_the_rig_stops) {
    Rigged g;
    rigged_init(&g, "quadruped", "trot");
    g.r.t_stop = 0.5;
    g.o.newton.max_iters = 30;
    double dt = 1 / 60.0, ke_moving = 0, ke_end = 0;
    char err[256];
    int steps = test_quick() ? 60 : 90, fails = 0;
    for (int s = 1; s <= steps; s++) {
        sim_rig_advance(&g.r, &g.o, s * dt);
        CHECK_MSG(sim_object_step(&g.o, dt, err, sizeof err) == 0, "%s", err);
        fails += g.o.last.failures;
        double ke = sim_object_energy(&g.o).kinetic;
        CHECK(isfinite(ke));
        if (s * dt <= 0.5) ke_moving = fmax(ke_moving, ke);
        ke_end = ke;
    }
    printf("    kinetic energy of the secondary motion: max %.3e J while the rig moves, %.3e J %.2f s after it stops\n",
           ke_moving, ke_end, steps * dt - 0.5);
    CHECK(fails == 0);
    CHECK(ke_moving > 1e-6);
    CHECK(ke_end < 0.1 * ke_moving);
    rigged_free(&g);
}

/* live control and the scripted joint drag: the tail's world direction follows */
TEST(rigskin_live_joint_and_drag) {
    Rigged g;
    rigged_init(&g, "quadruped", NULL);
    int tail = sim_rig_bone(&g.r, "tail");
    CHECK(tail >= 0);
    char err[256];
    double q[4], local[4 * DS_RIG_MAX_BONES], root[3], Rw[9 * DS_RIG_MAX_BONES], heads[3 * DS_RIG_MAX_BONES];
    ds_quat_axis_angle((double[]){0, 1, 0}, 0.7, q);
    CHECK(sim_rig_set_joint_rotation(&g.r, tail, q, err, sizeof err) == 0);
    CHECK(sim_rig_set_joint_rotation(&g.r, 999, q, err, sizeof err) != 0);
    sim_rig_pose(&g.r, 0.1, local, root);
    CHECK_NEAR(local[4 * tail], q[0], 1e-12);
    CHECK_NEAR(local[4 * tail + 2], q[2], 1e-12);
    sim_rig_clear_joint(&g.r, tail);
    /* a drag: at t ≥ t1 the tail bone points at the target (rig frame → world by the pose) */
    const DsBone *b = &g.r.shape.bones[tail];
    double tgt_p[3] = {b->head[0] - 0.2, b->head[1] + 0.5, b->head[2] + 0.3}, tgt[3];
    for (int a = 0; a < 3; a++) {
        tgt[a] = g.r.off[a];
        for (int c = 0; c < 3; c++) tgt[a] += g.r.L[3 * a + c] * tgt_p[c];
    }
    SimRigDrag d = {.bone = tail, .t0 = 0, .t1 = 0.2, .t_release = 1};
    memcpy(d.target, tgt, sizeof tgt);
    CHECK(sim_rig_add_drag(&g.r, &d, err, sizeof err) == 0);
    sim_rig_pose(&g.r, 0.5, local, root);
    ds_rig_fk(g.r.nbones, g.r.shape.bones, local, root, Rw, heads, NULL);
    double rest[3], dir[3], want[3], c = 0, n1 = 0, n2 = 0;
    for (int a = 0; a < 3; a++) rest[a] = (double)b->tail[a] - b->head[a];
    for (int a = 0; a < 3; a++) {
        dir[a] = Rw[9 * tail + 3 * a] * rest[0] + Rw[9 * tail + 3 * a + 1] * rest[1] + Rw[9 * tail + 3 * a + 2] * rest[2];
        want[a] = tgt_p[a] - heads[3 * tail + a];
        c += dir[a] * want[a], n1 += dir[a] * dir[a], n2 += want[a] * want[a];
    }
    CHECK_MSG(c / sqrt(n1 * n2) > 1 - 1e-9, "cos %.12f", c / sqrt(n1 * n2));
    /* after the release the drag is gone: the rest pose */
    sim_rig_pose(&g.r, 1.5, local, root);
    CHECK_NEAR(local[4 * tail], 1.0, 1e-12);
    rigged_free(&g);
}

/* a rigged scene: parsed (rig key, rules), run through sim_scene_run with the kinetic-energy plot */
TEST(rigskin_scene_runs_with_a_rig) {
    const char *text =
        "{\"dt\": 0.02, \"steps\": 20, \"gravity\": [0, 0, 0],"
        " \"objects\": [{\"skinning\": {\"source\": \"procedural\", \"category\": \"quadruped\", \"seed\": 1,"
        "   \"kind\": \"rbf\", \"handles\": 10, \"cubature_res\": 24, \"mesh_res\": 32},"
        "   \"material\": {\"E\": 5e3}, \"pose\": {\"scale\": 0.5, \"translate\": [0, 0.5, 0]}}],"
        " \"planes\": [{\"normal\": [0, 1, 0], \"offset\": -1}],"
        " \"rig\": {\"object\": 0, \"clip\": \"trot\", \"t_stop\": 0.2,"
        "   \"keys\": [{\"bone\": \"tail\", \"t\": 0.1, \"axis\": [0, 1, 0], \"deg\": 40}],"
        "   \"drags\": [{\"bone\": \"neck\", \"target\": [0.5, 1.2, 0], \"t0\": 0, \"t1\": 0.2}]},"
        " \"output\": {\"every\": 10, \"mesh\": \"none\", \"png\": false}}";
    SimScene sc;
    char err[1024];
    CHECK_MSG(sim_scene_parse(text, "inline", &sc, err, sizeof err) == 0, "%s", err);
    CHECK(sc.rig.object == 0 && sc.rig.nkeys == 1 && sc.rig.ndrags == 1);
    char dir[] = "/tmp/anima-rigskin-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    SimRunReport rep;
    CHECK_MSG(sim_scene_run(&sc, NULL, dir, NULL, NULL, &rep, err, sizeof err) == 0, "%s", err);
    CHECK(rep.steps == 20 && rep.newton_failures == 0);
    CHECK(rep.rig_kinetic_max > 0 && isfinite(rep.rig_projection_max) && rep.rig_projection_max <= 1 + 1e-9);
    char path[256];
    snprintf(path, sizeof path, "%s/kinetic.png", dir);
    CHECK(access(path, F_OK) == 0);
    unlink(path), rmdir(dir);
    sim_scene_free(&sc);
    /* a scene without "rig" has none; a rig beside a second object is fine, beside a rigid body or on
     * an object the scene lacks it is refused */
    CHECK(sim_scene_parse("{\"objects\": [{}]}", "inline", &sc, err, sizeof err) == 0 && sc.rig.object == -1);
    sim_scene_free(&sc);
    CHECK_MSG(sim_scene_parse("{\"objects\": [{}, {}], \"rig\": {\"object\": 0}}", "inline", &sc, err, sizeof err) == 0,
              "%s", err);
    sim_scene_free(&sc);
    CHECK(sim_scene_parse("{\"objects\": [{}], \"rigids\": [{}], \"rig\": {\"object\": 0}}", "inline", &sc, err,
                          sizeof err) != 0);
    CHECK(strstr(err, "rigid") != NULL);
    CHECK(sim_scene_parse("{\"objects\": [{}], \"rig\": {\"object\": 1}}", "inline", &sc, err, sizeof err) != 0);
}

/* the controls under rig motion: an exact fixed region follows the rig (B z = 0 there); a floor
 * raised into the rig's path pushes the vertices back up (the penalty sees X + u_r + B z). Only
 * partly: the rig is prescribed and the complementary subspace cannot undo motion the rig space
 * holds (a foot bone lowered through the floor), only deform against it (rig.h) */
TEST(rigskin_controls_under_rig_motion) {
    Rigged g;
    rigged_init(&g, "quadruped", "trot");
    SimObject *o = &g.o;
    char err[512];
    double ymax = -INFINITY, ymin = INFINITY, xmin = INFINITY;
    for (int64_t v = 0; v < o->nv; v++)
        ymax = fmax(ymax, o->Xv[3 * v + 1]), ymin = fmin(ymin, o->Xv[3 * v + 1]), xmin = fmin(xmin, o->Xv[3 * v]);
    /* fixed: the top 10% (exact, no falloff) */
    SimDirichlet d = {.region = {.kind = SIM_REGION_BOX, .lo = {-9, ymax - 0.1 * (ymax - ymin), -9}, .hi = {9, 9, 9}}};
    CHECK(sim_object_add_dirichlet(o, &d, err, sizeof err) == 0);
    /* a floor 2 cm above the feet's rest height */
    SimPlane fl = {.normal = {0, 1, 0}, .offset = ymin + 0.02, .stiffness = 1e6};
    CHECK(sim_object_add_plane(o, &fl, err, sizeof err) == 0);
    CHECK_MSG(sim_object_prepare(o, err, sizeof err) == 0, "%s", err);
    double dt = 1 / 60.0, fixed_err = 0, sink = 0, sink_rig = 0;
    double *x = malloc(sizeof(double) * 3 * (size_t)o->nv), *bz = malloc(sizeof(double) * 3 * (size_t)o->nv);
    for (int s = 1; s <= 40; s++) {
        sim_rig_advance(&g.r, o, s * dt);
        CHECK_MSG(sim_object_step(o, dt, err, sizeof err) == 0, "%s", err);
        CHECK(o->last.failures == 0);
        sim_object_vertices(o, x);
        for (int64_t v = 0; v < o->nv; v++) {
            for (int a = 0; a < 3; a++) bz[3 * v + a] = x[3 * v + a] - o->Xv[3 * v + a] - o->rig_uv[3 * v + a];
            if (sim_region_contains(&d.region, o->Xv + 3 * v))
                fixed_err = fmax(fixed_err, sqrt(bz[3 * v] * bz[3 * v] + bz[3 * v + 1] * bz[3 * v + 1] + bz[3 * v + 2] * bz[3 * v + 2]));
            sink = fmax(sink, fl.offset - x[3 * v + 1]);
            sink_rig = fmax(sink_rig, fl.offset - o->Xv[3 * v + 1] - o->rig_uv[3 * v + 1]);
        }
    }
    printf("    fixed region off the rig by %.2e m; deepest vertex %.2e m below the raised floor (%.2e m with the rig "
           "alone)\n", fixed_err, sink, sink_rig);
    CHECK(fixed_err < 1e-8); /* of 0.2 m of rig motion: the null space's roundoff */
    CHECK(sink < 0.9 * sink_rig && sink_rig > 0.02);
    free(x), free(bz);
    rigged_free(&g);
}

/* a dataset cache (anima dataset make) stores each procedural shape's rig at its mesh vertices;
 * loading it for training carries the rig to the surface samples and cubature candidates */
TEST(rigskin_cache_shapes_carry_rigs) {
    char dir[] = "/tmp/anima-rigcache-XXXXXX", cmd[1024], out[8192], err[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd,
             "%s dataset make --count 3 --seed 5 --grid 40 --cubature-res 16 --surface 512 --sharp 0 --no-progress "
             "--out %s 2>&1", test_anima_bin(), dir);
    CHECK_MSG(test_run_capture(cmd, out, sizeof out) == 0, "%s", out);
    PsConfig c;
    CHECK_MSG(ps_config_load(&c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err) == 0, "%s", err);
    PsData d;
    CHECK_MSG(ps_data_load(&d, dir, &c, 0, 1, err, sizeof err) == 0, "%s", err);
    const PsShape *s = &d.shapes[0];
    CHECK(s->nbones > 0 && s->rig_surface && s->rig_cubature);
    double worst = 0;
    for (int64_t i = 0; i < s->n_surface + s->n_cubature; i++) {
        const float *w = i < s->n_surface ? s->rig_surface + i * s->nbones : s->rig_cubature + (i - s->n_surface) * s->nbones;
        double sum = 0;
        for (int j = 0; j < s->nbones; j++) {
            CHECK(w[j] >= 0);
            sum += w[j];
        }
        worst = fmax(worst, fabs(sum - 1));
    }
    CHECK_MSG(worst < 1e-5, "rows sum to 1 within %g", worst);
    TensorRng g = {.seed = 1, .stream = 5};
    PsBatch b;
    ps_batch_make(&d, (int64_t[]){0}, 1, &c, &g, TENSOR_F64, &b);
    CHECK(b.rig != NULL && b.rig->shape[2] == s->nbones);
    ps_data_free(&d);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* the rank-revealing reduction: the modes' rig shares (before the projection) in [0, 1], ascending,
 * most of the subspace inside the rig space (why a runtime projection is needed); the kept modes
 * are exactly those with complementary share 1 − λ ≥ rank_tol; and the dynamics' secondary
 * displacement has no component in the rig space (roundoff), which the unprojected rows have */
TEST(rigskin_complement_rank_and_projection) {
    Rigged g;
    rigged_init(&g, "quadruped", "trot");
    int nm = g.r.nm;
    CHECK(nm > 0 && nm <= g.o.nb);
    for (int i = 0; i < nm; i++)
        CHECK(g.r.lam[i] > -1e-9 && g.r.lam[i] < 1 + 1e-9 && (i == 0 || g.r.lam[i] >= g.r.lam[i - 1]));
    CHECK(g.r.lam[nm - 1] > 0.9); /* the unprojected subspace: some mode almost all rig */
    int expect = 0;
    for (int i = 0; i < nm; i++) expect += 1 - g.r.lam[i] >= SIM_RIG_RANK_TOL;
    int64_t fixed_rows, free_dims;
    sim_object_constraint_info(&g.o, &fixed_rows, &free_dims);
    CHECK_MSG(g.r.kept == expect && expect > 0 && free_dims == 3 * expect, "kept %d, expected %d, free %lld", g.r.kept,
              expect, (long long)free_dims);
    double dt = 1 / 60.0, worst = 0, ke = 0;
    char err[256];
    for (int s = 1; s <= 40; s++) {
        sim_rig_advance(&g.r, &g.o, s * dt);
        CHECK_MSG(sim_object_step(&g.o, dt, err, sizeof err) == 0, "%s", err);
        CHECK(g.o.last.failures == 0);
        worst = fmax(worst, sim_rig_projection(&g.r, &g.o));
        ke = fmax(ke, sim_object_energy(&g.o).kinetic);
    }
    printf("    rig shares %.3f .. %.3f; %d of %d modes keep >= %g outside the rig; projection over 40 steps <= %.2e, "
           "secondary KE up to %.2e J\n", g.r.lam[0], g.r.lam[nm - 1], expect, nm, SIM_RIG_RANK_TOL, worst, ke);
    CHECK(ke > 0);
    CHECK_MSG(worst < 1e-8, "projection %g", worst);
    /* another tolerance keeps exactly its modes; one that keeps nothing is refused */
    int kept = 0, want = 0;
    for (int i = 0; i < nm; i++) want += 1 - g.r.lam[i] >= 0.3;
    CHECK_MSG(sim_rig_set_rank_tol(&g.r, &g.o, 0.3, &kept, err, sizeof err) == 0 || want == 0, "%s", err);
    if (want) CHECK(kept == want);
    CHECK(sim_rig_set_rank_tol(&g.r, &g.o, 1, &kept, err, sizeof err) != 0);
    rigged_free(&g);
}

/* the scene's clip_map (relative to the scene's folder) reaches the retargeting: the CMU names
 * written as a mapping give exactly the built-in clip, an offset on one bone changes it, and a
 * joint the BVH lacks is an error naming the bone and the joint */
TEST(rigskin_scene_clip_map) {
    if (access("/usr/share/assimp/models/BVH/01_01.bvh", R_OK)) _exit(77);
    static const char *const cmu[][3] = {
        {"hips", "Hips", "Spine"}, {"spine", "Spine1", "Neck1"}, {"neck", "Neck1", "Head"}, {"head", "Head", "Head_end"},
        {"arm_l_upper", "LeftArm", "LeftForeArm"}, {"arm_l_lower", "LeftForeArm", "LeftHand"},
        {"arm_r_upper", "RightArm", "RightForeArm"}, {"arm_r_lower", "RightForeArm", "RightHand"},
        {"leg_l_upper", "LeftUpLeg", "LeftLeg"}, {"leg_l_lower", "LeftLeg", "LeftFoot"},
        {"foot_l", "LeftFoot", "LeftToeBase"}, {"leg_r_upper", "RightUpLeg", "RightLeg"},
        {"leg_r_lower", "RightLeg", "RightFoot"}, {"foot_r", "RightFoot", "RightToeBase"}};
    Rigged g;
    rigged_init(&g, "humanoid", NULL);
    char dir[] = "/tmp/anima-rigmap-XXXXXX", path[256], err[1024];
    CHECK(mkdtemp(dir) != NULL);
    SimSceneRig sr = {.object = 0, .fps = 30, .frames = 8, .seed = 1, .bvh_start = 300, .rank_tol = SIM_RIG_RANK_TOL, .t_stop = 1e30};
    snprintf(sr.clip, sizeof sr.clip, "/usr/share/assimp/models/BVH/01_01.bvh");
    DsMotion ref;
    DsMotionOptions o = {.fps = 30, .bvh_start = 300};
    CHECK_MSG(ds_motion_make(&g.r.shape, sr.clip, 8, 1, &o, &ref, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < 3; k++) {
        /* 0: the CMU names; 1: the same with a 20° offset on the left thigh; 2: a joint 01_01 lacks */
        char json[4096];
        size_t n = (size_t)snprintf(json, sizeof json, "{");
        for (int i = 0; i < 14; i++)
            n += (size_t)snprintf(json + n, sizeof json - n, "%s\"%s\": {\"joint\": \"%s\", \"toward\": \"%s\"%s}",
                                  i ? ", " : "", cmu[i][0], k == 2 && i == 8 ? "LeftThigh" : cmu[i][1], cmu[i][2],
                                  k == 1 && i == 8 ? ", \"offset\": [0, 0, 20]" : "");
        snprintf(json + n, sizeof json - n, "}");
        snprintf(path, sizeof path, "%s/map.json", dir);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(json, f) >= 0 && fclose(f) == 0);
        snprintf(sr.clip_map, sizeof sr.clip_map, "map.json");
        sim_rig_free(&g.r);
        int rc = sim_rig_from_scene(&g.r, &g.o, &sr, "humanoid", 1, 32, (double[]){0, 0, 0}, 1, &g.pose, dir, 1.0, err,
                                    sizeof err);
        if (k == 2) {
            CHECK_MSG(rc == -1 && strstr(err, "leg_l_upper") && strstr(err, "LeftThigh"), "%s", err);
            CHECK(sim_rig_init(&g.r, &g.o, "humanoid", 1, 32, 0, (double[]){0, 0, 0}, 1, &g.pose, err, sizeof err) == 0);
            break;
        }
        CHECK_MSG(rc == 0 && g.r.has_clip && g.r.clip.nframes == 8, "%s", err);
        double d = 0, dr = 0;
        for (int i = 0; i < 4 * 8 * ref.nbones; i++) d = fmax(d, fabs(g.r.clip.local[i] - ref.local[i]));
        for (int i = 0; i < 3 * 8; i++) dr = fmax(dr, fabs(g.r.clip.root[i] - ref.root[i]));
        CHECK_MSG(k == 0 ? d == 0 && dr == 0 : d > 0.05 && dr == 0, "map %d: rotations differ by %g, root by %g", k, d, dr);
    }
    ds_motion_free(&ref);
    unlink(path);
    rmdir(dir);
    rigged_free(&g);
}

/* A quadruped (rigged, objs[0] with rig r) and a free mug (objs[1], unrigged) in a world without
 * gravity or floor: the tail keyframed to swing 70° about the vertical in swing_t seconds (0: no
 * keys), the mug
 * centred three quarters along the tail at 35° of the swing, about a third of the tail across.
 * *len: the tail's length (m). */
static void tail_and_mug(SimObject objs[2], SimRig *r, SimWorld *w, double swing_t, double *len) {
    SimProceduralOptions po;
    sim_procedural_defaults(&po);
    po.kind = "rbf", po.normalize = true, po.seed = 1;
    SimSkinning sk;
    SimMaterial mat = {.E = 2e4, .nu = 0.3, .rho = 1000};
    char err[1024];
    po.category = "quadruped", po.handles = 10, po.cubature_res = 24, po.mesh_res = 32;
    CHECK_MSG(sim_skinning_procedural(&po, &sk, err, sizeof err) == 0, "%s", err);
    SimPose pq = sim_pose_identity();
    pq.scale = 0.5, pq.translate[1] = 0.5;
    CHECK_MSG(sim_object_init(&objs[0], &sk, &mat, &pq, err, sizeof err) == 0, "%s", err);
    sim_skinning_free(&sk);
    CHECK_MSG(sim_rig_init(r, &objs[0], "quadruped", 1, 32, 0, (double[]){0, 0, 0}, 1, &pq, err, sizeof err) == 0,
              "%s", err);
    int tail = sim_rig_bone(r, "tail");
    CHECK(tail >= 0);
    /* the tail in the world (X = L p + off) */
    double base[3], tip[3], d[3], l2 = 0;
    for (int a = 0; a < 3; a++) {
        base[a] = r->off[a], tip[a] = r->off[a];
        for (int b = 0; b < 3; b++)
            base[a] += r->L[3 * a + b] * r->shape.bones[tail].head[b], tip[a] += r->L[3 * a + b] * r->shape.bones[tail].tail[b];
    }
    for (int a = 0; a < 3; a++) d[a] = tip[a] - base[a], l2 += d[a] * d[a];
    *len = sqrt(l2);
    double th = 35 * M_PI / 180, at[3] = {base[0] + 0.75 * (cos(th) * d[0] + sin(th) * d[2]), base[1] + 0.75 * d[1],
                                          base[2] + 0.75 * (-sin(th) * d[0] + cos(th) * d[2])};
    SimRigKey k0 = {.bone = tail, .t = 0, .q = {1, 0, 0, 0}}, k1 = {.bone = tail, .t = swing_t};
    ds_quat_axis_angle((double[]){0, 1, 0}, 70 * M_PI / 180, k1.q);
    if (swing_t > 0) CHECK(sim_rig_add_key(r, &k0, err, sizeof err) == 0 && sim_rig_add_key(r, &k1, err, sizeof err) == 0);
    po.category = "mug", po.handles = 6, po.cubature_res = 16, po.mesh_res = 24;
    CHECK_MSG(sim_skinning_procedural(&po, &sk, err, sizeof err) == 0, "%s", err);
    SimPose pm = sim_pose_identity();
    pm.scale = 0.18 * *len;
    memcpy(pm.translate, at, sizeof at);
    CHECK_MSG(sim_object_init(&objs[1], &sk, &mat, &pm, err, sizeof err) == 0, "%s", err);
    sim_skinning_free(&sk);
    SimContactOptions co;
    sim_contact_defaults(&co);
    sim_rig_advance(r, &objs[0], 0);
    CHECK_MSG(sim_world_init(w, objs, 2, NULL, 0, NULL, 0, &co, err, sizeof err) == 0, "%s", err);
}

/* Multi-body contact under rig motion (world.c's obj_points): the IPC pairs between bodies see a
 * rigged object at x = X + u_r + B z. The quadruped's tail sweeps through where the free mug
 * floats (tail_and_mug, 0.6 s). The tail must push the mug away, with no rendered vertex of either
 * deeper inside the other than the two collision proxies' deviations (sim/proxy.h), and every pair
 * apart at every step. Before, contact saw the rigged body at X + B z (its rest pose plus the
 * secondary motion): the tail went through the mug and left it where it was. */
TEST(rigskin_rigged_body_pushes_a_free_body) {
    SimObject objs[2];
    SimRig r;
    SimWorld w;
    double len;
    tail_and_mug(objs, &r, &w, 0.6, &len);
    char err[1024];
    double dev = (sim_world_proxy(&w, 0) ? sim_world_proxy(&w, 0)->deviation : 0) +
                 (sim_world_proxy(&w, 1) ? sim_world_proxy(&w, 1)->deviation : 0);
    double dt = 1 / 60.0, c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0}, dmin = INFINITY;
    int64_t nv = objs[1].nv, deep = 0, any = 0, failures = 0;
    double *x = malloc(sizeof(double) * 3 * (size_t)nv);
    sim_object_vertices(&objs[1], x);
    for (int64_t v = 0; v < nv; v++)
        for (int a = 0; a < 3; a++) c0[a] += x[3 * v + a] / nv;
    int steps = test_quick() ? 30 : 45;
    for (int s = 1; s <= steps; s++) {
        sim_rig_advance(&r, &objs[0], s * dt);
        CHECK_MSG(sim_world_step(&w, dt, err, sizeof err) == 0, "step %d: %s", s, err);
        failures += w.last.failures;
        dmin = fmin(dmin, w.last.min_distance);
        for (int a = 0; a < 2; a++) {
            int64_t n = vertices_inside(&objs[a], &objs[1 - a], dev, &any);
            deep = n > deep ? n : deep;
        }
    }
    sim_object_vertices(&objs[1], x);
    for (int64_t v = 0; v < nv; v++)
        for (int a = 0; a < 3; a++) c1[a] += x[3 * v + a] / nv;
    double moved = sqrt((c1[0] - c0[0]) * (c1[0] - c0[0]) + (c1[1] - c0[1]) * (c1[1] - c0[1]) + (c1[2] - c0[2]) * (c1[2] - c0[2]));
    printf("    tail %.3f m swept 70°: the mug moved %.3f m; %lld vertices deeper inside the other body than the "
           "proxies' deviations (%.3g m; %lld inside at all); min pair distance %.3g m; %lld Newton failures\n",
           len, moved, (long long)deep, dev, (long long)any, dmin, (long long)failures);
    CHECK(deep == 0);
    CHECK(moved > 0.1 * len);
    CHECK(dmin > 0 && failures == 0);
    free(x);
    sim_world_free(&w);
    sim_rig_free(&r);
    for (int k = 0; k < 2; k++) sim_object_free(&objs[k]);
}

/* The rig is prescribed: contact cannot hold it back, so its own move over a step is swept by CCD
 * before the step (world.c's rig_sweep). The same tail swung 70° in one step jumps from one side of
 * the mug to the other: the step must stop with an error, not leave the tail through the mug (no
 * pair of the end pose need be at distance ≤ 0, so the step's own checks did not see it). */
TEST(rigskin_rig_jump_through_a_body_is_an_error) {
    SimObject objs[2];
    SimRig r;
    SimWorld w;
    double len, dt = 1 / 60.0;
    tail_and_mug(objs, &r, &w, 0, &len);
    char err[1024] = "";
    /* the first step only records where the rig left the bodies (nothing to sweep from yet): the
     * jump comes at the second */
    SimRigKey k0 = {.bone = sim_rig_bone(&r, "tail"), .t = dt, .q = {1, 0, 0, 0}}, k1 = {.bone = k0.bone, .t = 2 * dt};
    ds_quat_axis_angle((double[]){0, 1, 0}, 70 * M_PI / 180, k1.q);
    CHECK(sim_rig_add_key(&r, &k0, err, sizeof err) == 0 && sim_rig_add_key(&r, &k1, err, sizeof err) == 0);
    sim_rig_advance(&r, &objs[0], dt);
    CHECK_MSG(sim_world_step(&w, dt, err, sizeof err) == 0, "%s", err);
    sim_rig_advance(&r, &objs[0], 2 * dt);
    int rc = sim_world_step(&w, dt, err, sizeof err);
    printf("    70° in one step: %s\n", rc ? err : "no error");
    CHECK(rc != 0 && strstr(err, "rig's move") != NULL);
    sim_world_free(&w);
    sim_rig_free(&r);
    for (int k = 0; k < 2; k++) sim_object_free(&objs[k]);
}
