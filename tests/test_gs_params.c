/* tests/test_gs_params.c — the per-Gaussian parameter helpers the 3DGS fit and the deformable
 * Gaussians share (models/gaussians/params.h): draws, activations, row edits, the opacity reset,
 * a Gaussian's frame and the export. */
#include <math.h>
#include <string.h>

#include "models/gaussians/params.h"
#include "nn/params.h"
#include "tests/test.h"

/* uniform draws take the words of each Philox block last first, one counter per block; normal
 * draws are Box–Muller of two uniform ones */
TEST(gs_params_draws) {
    TensorRng g = {.seed = 7, .stream = 0x6a5e, .offset = 3};
    GsDraw d = {.g = &g};
    uint32_t w[4];
    for (uint64_t block = 3; block < 5; block++) {
        tensor_philox(7, 0x6a5e, block, w);
        for (int k = 3; k >= 0; k--) CHECK(gs_draw_u(&d) == w[k] * (1.0 / 4294967296.0));
        CHECK(g.offset == block + 1);
    }
    TensorRng g2 = {.seed = 7, .stream = 1};
    GsDraw a = {.g = &g2};
    TensorRng g3 = g2;
    GsDraw b = {.g = &g3};
    for (int i = 0; i < 5; i++) {
        double u1 = gs_draw_u(&b), u2 = gs_draw_u(&b);
        CHECK(gs_draw_n(&a) == sqrt(-2.0 * log(1.0 - u1)) * cos(2 * M_PI * u2));
    }
    CHECK(g2.offset == g3.offset);
    /* draws from running sums: weights 1, 0, 3 are picked 1/4, never, 3/4 of the time, each the
     * first index whose sum exceeds u · total */
    const double cdf[3] = {1, 1, 4};
    int64_t count[3] = {0, 0, 0};
    TensorRng g4 = {.seed = 3};
    GsDraw c = {.g = &g4};
    TensorRng g5 = g4;
    GsDraw e = {.g = &g5};
    for (int i = 0; i < 4000; i++) {
        int64_t k = gs_draw_from_cdf(&c, cdf, 3, 4);
        double u = gs_draw_u(&e) * 4;
        CHECK(k == (u < 1 ? 0 : 2));
        count[k]++;
    }
    CHECK(count[1] == 0 && count[0] > 850 && count[0] < 1150);
    CHECK(gs_draw_from_cdf(&c, cdf, 1, 1) == 0);
    CHECK_NEAR(gs_sigmoid(gs_logit(0.3)), 0.3, 1e-15);
    CHECK(gs_sigmoid(0) == 0.5 && gs_logit(0.5) == 0);
}

/* a group of 3 rows of 2 values and its Adam moments: copy a row, zero one row's moments, and
 * the opacity reset of a 3-row opacity group */
TEST(gs_params_rows) {
    TensorScope *s = tensor_scope_begin();
    NnParams p = {.flat = tensor_from_f64(1, (int64_t[]){6}, TENSOR_F32, (double[]){1, 2, 3, 4, 5, 6})};
    Optim o = {.params = &p, .exp_avg = tensor_from_f64(1, (int64_t[]){6}, TENSOR_F32, (double[]){1, 1, 1, 1, 1, 1}),
               .exp_avg_sq = tensor_from_f64(1, (int64_t[]){6}, TENSOR_F32, (double[]){2, 2, 2, 2, 2, 2})};
    gs_rows_copy(p.flat, 3, 0, 2);
    const float *v = tensor_f32(p.flat);
    CHECK(v[0] == 5 && v[1] == 6 && v[2] == 3 && v[3] == 4 && v[4] == 5 && v[5] == 6);
    gs_rows_zero_moments(&o, 3, 1);
    const float *m = tensor_f32(o.exp_avg), *q = tensor_f32(o.exp_avg_sq);
    for (int i = 0; i < 6; i++) CHECK(m[i] == (i / 2 == 1 ? 0 : 1) && q[i] == (i / 2 == 1 ? 0 : 2));

    NnParams po = {.flat = tensor_from_f64(1, (int64_t[]){3}, TENSOR_F32, (double[]){-6, 0, 2})};
    Optim oo = {.params = &po, .exp_avg = tensor_from_f64(1, (int64_t[]){3}, TENSOR_F32, (double[]){1, 1, 1}),
                .exp_avg_sq = tensor_from_f64(1, (int64_t[]){3}, TENSOR_F32, (double[]){1, 1, 1})};
    float *op = tensor_f32(po.flat);
    gs_opacity_reset(op, 3, &oo);
    CHECK(op[0] == -6 && op[1] == (float)gs_logit(0.01) && op[2] == (float)gs_logit(0.01));
    for (int i = 0; i < 3; i++) CHECK(tensor_f32(oo.exp_avg)[i] == 0 && tensor_f32(oo.exp_avg_sq)[i] == 0);
    tensor_scope_end(s);
}

/* a Gaussian's scales and rotation: isotropic scales repeat, no quaternions is the identity, and a
 * quaternion (scaled, not unit) of a quarter turn about z gives that rotation */
TEST(gs_params_frame) {
    const float ls_iso[2] = {0, logf(2)}, ls[6] = {0, 0, 0, logf(1), logf(2), logf(3)};
    double s[3], R[9];
    gs_gaussian_frame(ls_iso, 1, NULL, 1, s, R);
    for (int a = 0; a < 3; a++) CHECK_NEAR(s[a], 2, 1e-6);
    for (int k = 0; k < 9; k++) CHECK(R[k] == (k % 4 == 0));
    const float c = 3 * cosf((float)M_PI / 4), sn = 3 * sinf((float)M_PI / 4);
    const float quats[8] = {1, 0, 0, 0, c, 0, 0, sn};
    gs_gaussian_frame(ls, 3, quats, 1, s, R);
    CHECK_NEAR(s[0], 1, 1e-6);
    CHECK_NEAR(s[1], 2, 1e-6);
    CHECK_NEAR(s[2], 3, 1e-6);
    const double want[9] = {0, -1, 0, 1, 0, 0, 0, 0, 1};
    for (int k = 0; k < 9; k++) CHECK_NEAR(R[k], want[k], 1e-6);
}

/* the export's layout: DC then the rest per Gaussian, isotropic scales repeated, the identity
 * quaternion without quats */
TEST(gs_params_export) {
    const float mean[6] = {1, 2, 3, 4, 5, 6}, ls[2] = {-1, -2}, op[2] = {0.5f, -0.5f};
    const float dc[6] = {10, 11, 12, 13, 14, 15}, rest[18] = {[0] = 100, [8] = 108, [9] = 109, [17] = 117};
    DsGaussians g = {0};
    CHECK(gs_export_params(2, 1, 1, mean, ls, op, dc, rest, NULL, &g) == 0);
    CHECK(g.n == 2 && g.sh_degree == 1);
    CHECK(memcmp(g.xyz, mean, sizeof mean) == 0);
    CHECK(g.sh[0] == 10 && g.sh[2] == 12 && g.sh[3] == 100 && g.sh[11] == 108);
    CHECK(g.sh[12] == 13 && g.sh[15] == 109 && g.sh[23] == 117);
    CHECK(g.opacity[0] == 0.5f && g.opacity[1] == -0.5f);
    CHECK(g.scale[0] == -1 && g.scale[2] == -1 && g.scale[3] == -2 && g.scale[5] == -2);
    CHECK(g.rot[0] == 1 && g.rot[1] == 0 && g.rot[4] == 1 && g.rot[7] == 0);
    ds_gaussians_free(&g);
    const float q[8] = {0, 1, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f};
    CHECK(gs_export_params(2, 0, 1, mean, ls, op, dc, NULL, q, &g) == 0);
    CHECK(g.sh[3] == 13 && memcmp(g.rot, q, sizeof q) == 0);
    ds_gaussians_free(&g);
}
