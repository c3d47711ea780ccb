/* tests/test_tensor.c — views and strides, scopes, the random generator. */
#include <string.h>

#include "tests/test.h"

static Tensor *iota(int nd, const int64_t *shape, TensorDType dt) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return tensor_reshape(tensor_arange(0, (double)n, 1, dt), nd, shape);
}

TEST(views_share_storage_and_respect_strides) {
    Tensor *x = iota(TENSOR_SHAPE(2, 3, 4), TENSOR_F32);
    Tensor *p = tensor_permute(x, TENSOR_DIMS(2, 0, 1)); /* (4, 2, 3) */
    CHECK(p->storage == x->storage && !tensor_is_contiguous(p));
    CHECK(tensor_get(p, (int64_t[]){3, 1, 2}) == tensor_get(x, (int64_t[]){1, 2, 3}));
    /* an op on a permuted view computes on the logical layout */
    Tensor *y = tensor_add(p, tensor_scalar(0, TENSOR_F32));
    CHECK(tensor_is_contiguous(y));
    for (int64_t a = 0; a < 4; a++)
        for (int64_t b = 0; b < 2; b++)
            for (int64_t c = 0; c < 3; c++)
                CHECK(tensor_get(y, (int64_t[]){a, b, c}) == (double)(b * 12 + c * 4 + a));
    /* reshape of a non-viewable layout copies; of a viewable one it does not */
    Tensor *r1 = tensor_reshape(p, TENSOR_SHAPE(8, 3));
    CHECK(r1->storage != x->storage && tensor_get(r1, (int64_t[]){7, 2}) == tensor_get(p, (int64_t[]){3, 1, 2}));
    Tensor *r2 = tensor_reshape(x, TENSOR_SHAPE(6, -1));
    CHECK(r2->storage == x->storage && r2->shape[1] == 4);
    /* slice with a step, narrow, expand */
    Tensor *s = tensor_slice(x, 2, 1, 4, 2); /* (2,3,2): columns 1 and 3 */
    CHECK(tensor_get(s, (int64_t[]){1, 2, 1}) == 1 * 12 + 2 * 4 + 3);
    Tensor *e = tensor_expand(tensor_narrow(x, 1, 1, 1), TENSOR_SHAPE(2, 5, 4));
    CHECK(e->stride[1] == 0 && tensor_get(e, (int64_t[]){1, 4, 2}) == 12 + 4 + 2);
    Tensor *sum = tensor_sum(e, TENSOR_DIMS(1), false);
    CHECK(tensor_get(sum, (int64_t[]){1, 2}) == 5 * (12 + 4 + 2));
    /* matmul straight from transposed views (BLAS trans flags, no copy needed) */
    Tensor *a = iota(TENSOR_SHAPE(3, 2), TENSOR_F64), *b = iota(TENSOR_SHAPE(3, 4), TENSOR_F64);
    Tensor *m = tensor_matmul(tensor_transpose(a, 0, 1), b); /* (2,3)@(3,4) */
    double ref = 0;
    for (int k = 0; k < 3; k++) ref += (double)(k * 2 + 1) * (double)(k * 4 + 2);
    CHECK(tensor_get(m, (int64_t[]){1, 2}) == ref);
}

TEST(reductions_over_dim_sets) {
    Tensor *x = iota(TENSOR_SHAPE(2, 3, 4), TENSOR_F64);
    Tensor *s = tensor_sum(x, TENSOR_DIMS(0, 2), true);
    CHECK(s->ndim == 3 && s->shape[0] == 1 && s->shape[1] == 3 && s->shape[2] == 1);
    double ref = 0;
    for (int a = 0; a < 2; a++)
        for (int c = 0; c < 4; c++) ref += a * 12 + 1 * 4 + c;
    CHECK(tensor_get(s, (int64_t[]){0, 1, 0}) == ref);
    Tensor *am = tensor_argmax(tensor_permute(x, TENSOR_DIMS(2, 1, 0)), 2, false);
    CHECK(am->dtype == TENSOR_I64 && tensor_get(am, (int64_t[]){0, 0}) == 1);
    CHECK(tensor_item(tensor_argmax(x, TENSOR_ALL_DIMS, false)) == 23);
    CHECK_NEAR(tensor_item(tensor_var(x, 0, NULL, 1, false)), 50.0, 1e-12); /* var of 0..23 */
}

TEST(scopes_free_and_keep) {
    TensorScope *outer = tensor_scope_begin();
    Tensor *kept = NULL;
    size_t before = tensor_scope_bytes(outer);
    TensorScope *inner = tensor_scope_begin();
    Tensor *big = tensor_ones(TENSOR_SHAPE(1000, 1000), TENSOR_F32);
    CHECK(tensor_scope_bytes(inner) >= 4000000);
    kept = tensor_keep(tensor_sum_all(big));
    tensor_scope_end(inner);
    CHECK(tensor_item(kept) == 1e6);
    CHECK(tensor_scope_bytes(outer) - before < 4096);
    tensor_scope_end(outer);
}

TEST(random_is_seeded_and_distributed) {
    tensor_manual_seed(42);
    Tensor *a = tensor_randn(TENSOR_SHAPE(200000), TENSOR_F64);
    tensor_manual_seed(42);
    Tensor *b = tensor_randn(TENSOR_SHAPE(200000), TENSOR_F64);
    CHECK(test_rel_err(a, b) == 0);
    CHECK_NEAR(tensor_item(tensor_mean_all(a)), 0.0, 0.01);
    CHECK_NEAR(tensor_item(tensor_var(a, 0, NULL, 1, false)), 1.0, 0.01);
    Tensor *u = tensor_rand(TENSOR_SHAPE(200000), TENSOR_F32);
    CHECK_NEAR(tensor_item(tensor_mean_all(u)), 0.5, 0.005);
    CHECK(tensor_item(tensor_min(u, 0, NULL, false)) >= 0 && tensor_item(tensor_max(u, 0, NULL, false)) < 1);
    /* a later draw continues the stream: not a repeat */
    Tensor *c = tensor_randn(TENSOR_SHAPE(200000), TENSOR_F64);
    CHECK(test_rel_err(a, c) > 0.1);
    /* streams are independent: correlation ~ 0 */
    TensorRng g1 = {.seed = 1, .stream = 1}, g2 = {.seed = 1, .stream = 2};
    Tensor *x = tensor_randn_with(&g1, TENSOR_SHAPE(100000), TENSOR_F64), *y = tensor_randn_with(&g2, TENSOR_SHAPE(100000), TENSOR_F64);
    CHECK_NEAR(tensor_item(tensor_mean_all(tensor_mul(x, y))), 0.0, 0.02);
    /* chi-square of 10 bins of U[0,1) */
    int64_t n = tensor_numel(u);
    int bins[10] = {0};
    const float *p = tensor_f32(u);
    for (int64_t i = 0; i < n; i++) bins[(int)(p[i] * 10)]++;
    double chi = 0, e = (double)n / 10;
    for (int i = 0; i < 10; i++) chi += (bins[i] - e) * (bins[i] - e) / e;
    CHECK_MSG(chi < 27.9, "chi2 = %g (p < 0.001 at 9 dof)", chi);
}

TEST(philox_known_answer) {
    /* Random123's published known-answer vector for philox4x32-10, counter = key = 0 */
    uint32_t w[4];
    tensor_philox(0, 0, 0, w);
    CHECK(w[0] == 0x6627e8d5u && w[1] == 0xe169c58du && w[2] == 0xbc57ac4cu && w[3] == 0x9b00dbd8u);
}
