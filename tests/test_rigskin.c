/* tests/test_rigskin.c — rig-complementary PhysSkin (issue 21; physskin.md §9): L_comp against
 * the explicit JᵀMB of per-point 3×12 blocks, zero for fields mass-orthogonal to the rig space
 * and bounded by 1, its f64 gradcheck, and the rig weights the procedural batches carry. */
#include <stdlib.h>
#include <string.h>

#include "autograd/gradcheck.h"
#include "models/physskin/train.h"
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
