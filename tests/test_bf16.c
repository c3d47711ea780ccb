/* tests/test_bf16.c — bf16 storage with f32 accumulation (tensor.h, TENSOR_BF16; nn/functional.h,
 * nn_set_matmul_dtype). What is checked, and against what:
 *   - conversion: every bf16 pattern round-trips; f32 -> bf16 matches an independent
 *     nearest-value reference (ties to even) on every tie pattern and a 1/251 sample of all
 *     2^32 f32 patterns; NaN stays NaN, ±inf, ±0, overflow and subnormals;
 *   - matmul: bf16 × bf16 equals the f32 product of the rounded operands (tight: summation
 *     order only, rel ≤ 1e-6), and stays within the bf16 error bound of the exact (f64) product
 *     of the unrounded operands, elementwise: |err| ≤ (2^-7 + 2^-16 + k·2^-23)·(|A||B|)
 *     (bf16 keeps 8 significant bits: each operand is off by at most u = 2^-8 relative, a
 *     product by 2u + u², then k f32 additions), and in normalized MSE within TOL_BF16;
 *   - backward through the casts: the f32 gradients equal the hand-composed bf16 recipe
 *     (tight) and the exact gradient within the bound of three roundings (3u + 3u² + f32 sums);
 *     a gradcheck-style directional derivative against central differences of the exact f64
 *     function, within the same bound;
 *   - attention (tiled and naive) with bf16 q, k, v: tight against f32 on the rounded inputs,
 *     loose against f64;
 *   - a pre-LN transformer block (self and cross) forward and backward with the bf16 option
 *     against f32, normalized MSE Σ(x − ref)² / Σ ref² within TOL_BLOCK (see below);
 *   - every other op refuses bf16 with one line naming the op and the dtype.
 * ANIMA_BF16_VERBOSE=1 prints the errors reached. */
#include <float.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "nn/modules.h"
#include "tests/test.h"

/* Stated tolerances (normalized MSE Σ(x − ref)² / Σ ref²), with what this suite measures
 * (x86-64, OpenBLAS; the inputs are N(0, 1)):
 *   TOL_BF16  one bf16 matmul or attention against the exact (f64) result of the unrounded
 *             inputs: matmul 5e-6..7e-6 (two operands each off by ~u/√3·… rms relative),
 *             attention 1.0e-5 (tiled) and 1.3e-5 (naive, which also rounds the probabilities).
 *             Checked where the output has ≥ 256 elements (fewer say little about a mean).
 *   TOL_BLOCK a pre-LN block with the option against the same block in f32: outputs ~5e-7
 *             (the residual stream is f32), gradients of every parameter, x and the context
 *             up to 3.8e-5; attention gradients against f64 up to 2.8e-5. */
#define TOL_BF16 5e-5
#define TOL_BLOCK 1e-4

static bool verbose(void) { return getenv("ANIMA_BF16_VERBOSE") != NULL; }

static double nmse(const Tensor *got, const Tensor *ref) {
    int64_t n = tensor_numel(ref);
    if (tensor_numel(got) != n) return INFINITY;
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *y = malloc(sizeof(double) * (size_t)(n + 1));
    tensor_to_f64_array(got, x);
    tensor_to_f64_array(ref, y);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
    free(x);
    free(y);
    return num == 0 ? 0 : num / (den > 1e-300 ? den : 1e-300);
}

/* the f32 tensor x rounded to bf16 and back */
static Tensor *rounded(Tensor *x) { return tensor_cast(tensor_cast(x, TENSOR_BF16), TENSOR_F32); }

/* ---- conversion ------------------------------------------------------------------------------ */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float f32_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The nearest bf16 by value (ties to the even pattern), from the two candidates that bracket f:
 * its truncation and the next pattern away from zero (2^128 standing in for inf). Independent
 * of the bit trick under test. */
static uint16_t ref_round(float f) {
    uint32_t u = f32_bits(f);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double vlo = fabs((double)tensor_bf16_to_f32(lo));
    double vhi = (hi & 0x7fff) == 0x7f80 ? ldexp(1.0, 128) : fabs((double)tensor_bf16_to_f32(hi));
    double a = fabs((double)f), dlo = a - vlo, dhi = vhi - a;
    if (dlo < dhi) return lo;
    if (dhi < dlo) return hi;
    return (lo & 1) ? hi : lo;
}

static bool is_nan16(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0; }

static int check_one(uint32_t u) {
    float f = f32_of(u);
    uint16_t got = tensor_bf16_from_f32(f);
    if (isnan(f)) return is_nan16(got) && (got & 0x8000) == ((u >> 16) & 0x8000) && (got & 0x0040) ? 0 : 1;
    return got == ref_round(f) ? 0 : 1;
}

TEST(bf16_conversion_round_trip_and_rounding) {
    /* every bf16 pattern survives bf16 -> f32 -> bf16 (NaNs as NaNs, quieted) */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t back = tensor_bf16_from_f32(tensor_bf16_to_f32((uint16_t)h));
        if (is_nan16((uint16_t)h) ? !(is_nan16(back) && back == (h | 0x0040)) : back != h) bad++;
    }
    CHECK_MSG(bad == 0, "%d bf16 patterns do not round-trip", bad);
    /* every tie (low half 0x8000) and its neighbours, for every upper half */
    static const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
    bad = 0;
    for (uint32_t hi = 0; hi < 65536; hi++)
        for (size_t j = 0; j < sizeof lows / sizeof *lows; j++) bad += check_one(hi << 16 | lows[j]);
    CHECK_MSG(bad == 0, "%d tie-neighbourhood patterns round wrongly", bad);
    /* a sample of all f32 patterns (stride 251, prime: every low-bit pattern is hit) */
    bad = 0;
    uint64_t step = test_quick() ? 65521 : 251;
    for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += step) bad += check_one((uint32_t)u);
    CHECK_MSG(bad == 0, "%d sampled f32 patterns round wrongly", bad);

    /* named cases */
    CHECK(tensor_bf16_from_f32(1.0f + 0x1p-8f) == 0x3f80);          /* tie, even below: 1 */
    CHECK(tensor_bf16_from_f32(1.0f + 3 * 0x1p-8f) == 0x3f82);      /* tie, odd below: up to 1 + 2^-6 */
    CHECK(tensor_bf16_from_f32(nextafterf(1.0f + 0x1p-8f, 2)) == 0x3f81); /* just past the tie: up */
    CHECK(tensor_bf16_from_f32(-1.0f - 0x1p-8f) == 0xbf80);         /* signs round by magnitude */
    CHECK(tensor_bf16_from_f32(0.0f) == 0x0000 && tensor_bf16_from_f32(-0.0f) == 0x8000);
    CHECK(tensor_bf16_from_f32(INFINITY) == 0x7f80 && tensor_bf16_from_f32(-INFINITY) == 0xff80);
    CHECK(tensor_bf16_from_f32(FLT_MAX) == 0x7f80);                 /* past the largest bf16's half-ulp */
    CHECK(tensor_bf16_from_f32(f32_of(0x7f7f7fff)) == 0x7f7f);      /* just below it: the largest bf16 */
    CHECK(tensor_bf16_from_f32(f32_of(0x7f7f8000)) == 0x7f80);      /* the tie there is odd: inf */
    CHECK(tensor_bf16_from_f32(f32_of(0x7fc00000)) == 0x7fc0);      /* quiet NaN */
    CHECK(is_nan16(tensor_bf16_from_f32(f32_of(0x7f800001))));      /* NaN whose payload is all low bits */
    CHECK(tensor_bf16_from_f32(f32_of(0xff800001)) == 0xffc0);      /* sign kept, quieted */
    CHECK(tensor_bf16_from_f32(f32_of(0x00000001)) == 0x0000);      /* smallest subnormal: to 0 */
    CHECK(tensor_bf16_from_f32(f32_of(0x00008000)) == 0x0000);      /* tie at 2^-134: even, 0 */
    CHECK(tensor_bf16_from_f32(f32_of(0x00018000)) == 0x0002);      /* tie between 1 and 2: 2 */
    CHECK(tensor_bf16_from_f32(f32_of(0x007fffff)) == 0x0080);      /* largest subnormal: up to 2^-126 */
    CHECK(tensor_bf16_to_f32(0x0001) == 0x1p-133f);                 /* bf16 subnormals widen exactly */

    /* the tensor cast runs the same conversion, from contiguous and strided f32 */
    static const uint32_t vals[] = {0x3f808000, 0x3f818000, 0x7f7f8000, 0x7f800001, 0x00018000, 0x80000000,
                                    0x7f800000, 0xff800000, 0x007fffff, 0x3eaaaaab, 0xc2f6e979, 0x00000001};
    enum { NV = sizeof vals / sizeof *vals };
    Tensor *x = tensor_from_data(TENSOR_SHAPE(3, 4), TENSOR_F32, vals);
    Tensor *b = tensor_cast(x, TENSOR_BF16), *bt = tensor_cast(tensor_transpose(x, 0, 1), TENSOR_BF16);
    CHECK(b->dtype == TENSOR_BF16 && tensor_dtype_size(TENSOR_BF16) == 2 && !strcmp(tensor_dtype_name(b->dtype), "bf16"));
    const uint16_t *hb = tensor_bf16(b), *ht = tensor_bf16(bt);
    Tensor *back = tensor_cast(b, TENSOR_F32);
    for (int i = 0; i < NV; i++) {
        uint16_t want = tensor_bf16_from_f32(f32_of(vals[i]));
        CHECK_MSG(hb[i] == want, "element %d: %04x, expected %04x", i, hb[i], want);
        CHECK_MSG(ht[(i % 4) * 3 + i / 4] == want, "transposed element %d", i);
        uint32_t wb = f32_bits(tensor_bf16_to_f32(want)), gb = f32_bits(tensor_f32(back)[i]);
        CHECK_MSG(gb == wb, "element %d back in f32: %08x, expected %08x", i, gb, wb);
    }
}

/* ---- storage: views, copies, fills, element access ----------------------------------------- */

TEST(bf16_views_copies_and_fills) {
    Tensor *x = tensor_randn(TENSOR_SHAPE(4, 6), TENSOR_F32);
    Tensor *b = tensor_cast(x, TENSOR_BF16);
    Tensor *r = rounded(x);
    /* views read the same bits; contiguous/clone copy them */
    Tensor *v = tensor_contiguous(tensor_narrow(tensor_transpose(tensor_reshape(b, TENSOR_SHAPE(2, 12)), 0, 1), 0, 3, 5));
    Tensor *vr = tensor_contiguous(tensor_narrow(tensor_transpose(tensor_reshape(r, TENSOR_SHAPE(2, 12)), 0, 1), 0, 3, 5));
    CHECK(v->dtype == TENSOR_BF16 && tensor_same_shape(v, vr));
    CHECK(nmse(v, vr) == 0);
    CHECK(nmse(tensor_clone(b), r) == 0);
    CHECK(nmse(tensor_expand(tensor_narrow(b, 0, 1, 1), TENSOR_SHAPE(3, 6)), tensor_expand(tensor_narrow(r, 0, 1, 1), TENSOR_SHAPE(3, 6))) == 0);
    /* element access and construction round through f32 */
    CHECK(tensor_get(b, (int64_t[]){2, 3}) == tensor_get(r, (int64_t[]){2, 3}));
    tensor_set(b, (int64_t[]){0, 0}, 1.0 + 0x1p-8);
    CHECK(tensor_get(b, (int64_t[]){0, 0}) == 1.0);
    Tensor *c = tensor_from_f64(TENSOR_SHAPE(2), TENSOR_BF16, (double[]){3.0, 1.0 / 3.0});
    CHECK(tensor_bf16(c)[0] == 0x4040 && tensor_bf16(c)[1] == 0x3eab);
    CHECK(tensor_item(tensor_ones(TENSOR_SHAPE(1), TENSOR_BF16)) == 1.0);
    Tensor *z = tensor_full(TENSOR_SHAPE(3, 3), 2.5, TENSOR_BF16);
    tensor_fill_(z, -0.75);
    CHECK(tensor_get(z, (int64_t[]){2, 1}) == -0.75);
    Tensor *e = tensor_eye(3, TENSOR_BF16);
    CHECK(tensor_get(e, (int64_t[]){1, 1}) == 1 && tensor_get(e, (int64_t[]){1, 2}) == 0);
    /* tensor_copy_ from f32 rounds; into a strided bf16 view */
    Tensor *d = tensor_zeros(TENSOR_SHAPE(6, 4), TENSOR_BF16);
    tensor_copy_(tensor_transpose(d, 0, 1), x);
    CHECK(nmse(tensor_transpose(d, 0, 1), r) == 0);
    /* keep copies it out of a scope */
    TensorScope *s = tensor_scope_begin();
    Tensor *k = tensor_keep(tensor_cast(x, TENSOR_BF16));
    tensor_scope_end(s);
    CHECK(k->dtype == TENSOR_BF16 && nmse(k, r) == 0);
    CHECK(tensor_to(k, TENSOR_CPU) == k);
}

/* ---- matmul ---------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int na, nb;
    int64_t sa[4], sb[4];
    int view; /* 0: as is; 1: a given transposed (last two dims); 2: a a narrow column view; 3: b transposed */
} MmCase;

static const MmCase MM[] = {
    {"2-D", 2, 2, {37, 53}, {53, 29}, 0},
    {"a transposed", 2, 2, {53, 37}, {53, 29}, 1},
    {"b transposed", 2, 2, {37, 53}, {29, 53}, 3},
    {"a narrow columns", 2, 2, {37, 80}, {53, 29}, 2},
    {"batch broadcast", 4, 3, {3, 1, 17, 40}, {4, 40, 9}, 0},
    {"linear fold", 3, 2, {2, 5, 64}, {64, 48}, 0},
    {"long k", 2, 2, {8, 2000}, {2000, 6}, 0},
    {"vector @ matrix", 1, 2, {31}, {31, 7}, 0},
    {"matrix @ vector", 2, 1, {7, 31}, {31}, 0},
    {"dot", 1, 1, {64}, {64}, 0},
};

static Tensor *mm_view(Tensor *x, const MmCase *c, bool is_a) {
    if (is_a && c->view == 1) return tensor_transpose(x, -1, -2);
    if (is_a && c->view == 2) return tensor_narrow(x, -1, 11, 53);
    if (!is_a && c->view == 3) return tensor_transpose(x, -1, -2);
    return x;
}

/* max over elements of |got − exact| / (|A||B|)ᵢⱼ, the error relative to the product of
 * magnitudes (the scale a rounding bound is stated on) */
static double worst_vs_bound(const Tensor *got, const Tensor *exact, const Tensor *absprod) {
    int64_t n = tensor_numel(exact);
    double *g = malloc(sizeof(double) * (size_t)n), *e = malloc(sizeof(double) * (size_t)n),
           *m = malloc(sizeof(double) * (size_t)n), worst = 0;
    tensor_to_f64_array(got, g);
    tensor_to_f64_array(exact, e);
    tensor_to_f64_array(absprod, m);
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(g[i] - e[i]) / fmax(m[i], 1e-300));
    free(g), free(e), free(m);
    return worst;
}

TEST(bf16_matmul_vs_f32_and_f64) {
    double worst_nmse = 0;
    for (size_t i = 0; i < sizeof MM / sizeof *MM; i++) {
        const MmCase *c = &MM[i];
        Tensor *A = tensor_randn(c->na, c->sa, TENSOR_F32), *B = tensor_randn(c->nb, c->sb, TENSOR_F32);
        Tensor *a16 = mm_view(tensor_cast(A, TENSOR_BF16), c, true), *b16 = mm_view(tensor_cast(B, TENSOR_BF16), c, false);
        Tensor *y = tensor_matmul(a16, b16);
        CHECK_MSG(y->dtype == TENSOR_F32, "%s: bf16 product is %s, expected f32", c->name, tensor_dtype_name(y->dtype));
        /* tight: the f32 product of the rounded operands (f32 summation order only) */
        Tensor *yr = tensor_matmul(mm_view(rounded(A), c, true), mm_view(rounded(B), c, false));
        double e32 = test_rel_err(y, yr);
        CHECK_MSG(e32 <= 1e-6, "%s: vs f32 on rounded operands: rel err %.3g > 1e-6", c->name, e32);
        /* loose: the exact product of the unrounded operands */
        Tensor *A64 = mm_view(tensor_cast(A, TENSOR_F64), c, true), *B64 = mm_view(tensor_cast(B, TENSOR_F64), c, false);
        Tensor *y64 = tensor_matmul(A64, B64), *mag = tensor_matmul(tensor_abs(A64), tensor_abs(B64));
        int64_t k = A64->shape[A64->ndim - 1];
        double bound = 0x1p-7 + 0x1p-16 + (double)k * 0x1p-23, w = worst_vs_bound(y, y64, mag), e = nmse(y, y64);
        CHECK_MSG(w <= bound, "%s: |bf16 − exact| reaches %.3g·(|A||B|), bound %.3g", c->name, w, bound);
        if (tensor_numel(y) >= 256) {
            CHECK_MSG(e <= TOL_BF16, "%s: normalized MSE vs f64 %.3g > %.3g", c->name, e, TOL_BF16);
            worst_nmse = fmax(worst_nmse, e);
        }
        if (verbose())
            fprintf(stderr, "matmul %-18s vs f32(rounded) rel %.2g; vs f64 nmse %.3g, worst %.3g·|A||B| (bound %.3g)\n",
                    c->name, e32, e, w, bound);
    }
    if (verbose()) fprintf(stderr, "matmul: worst normalized MSE vs f64 %.3g (tolerance %g)\n", worst_nmse, TOL_BF16);
}

/* ---- backward through the casts -------------------------------------------------------------- */

TEST(bf16_matmul_backward_through_casts) {
    /* L = Σ W ∘ (bf16(A) @ bf16(B)), A broadcast over a batch so B's gradient sums batches */
    Tensor *A = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(2, 3, 7, 20), TENSOR_F32), true);
    Tensor *B = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(20, 11), TENSOR_F32), true);
    Tensor *W = tensor_randn(TENSOR_SHAPE(2, 3, 7, 11), TENSOR_F32);
    Tensor *y = tensor_matmul(tensor_cast(A, TENSOR_BF16), tensor_cast(B, TENSOR_BF16));
    ag_backward(tensor_sum_all(tensor_mul(y, W)), NULL, false);
    CHECK(A->grad && B->grad && A->grad->dtype == TENSOR_F32 && B->grad->dtype == TENSOR_F32);
    if (!A->grad || !B->grad) return;

    /* tight: the recipe written out — dY rounded to bf16, bf16 products accumulated in f32,
     * B's summed over the batch in f32, each gradient rounded to bf16 and widened */
    bool g = ag_no_grad_begin();
    Tensor *W16 = tensor_cast(W, TENSOR_BF16), *A16 = tensor_cast(A, TENSOR_BF16), *B16 = tensor_cast(B, TENSOR_BF16);
    Tensor *gA = rounded(tensor_matmul(W16, tensor_transpose(B16, 0, 1)));
    Tensor *gB = rounded(tensor_sum(tensor_matmul(tensor_transpose(A16, -1, -2), W16), TENSOR_DIMS(0, 1), false));
    CHECK_MSG(test_rel_err(A->grad, gA) <= 1e-6, "dA vs the recipe: %.3g", test_rel_err(A->grad, gA));
    CHECK_MSG(test_rel_err(B->grad, gB) <= 1e-6, "dB vs the recipe: %.3g", test_rel_err(B->grad, gB));

    /* loose: the exact gradients (f64, unrounded), elementwise within the bf16 bound — two
     * rounded factors and a rounded result (3u + 3u² + u³, u = 2^-8), plus f32 sums */
    Tensor *A64 = tensor_cast(A, TENSOR_F64), *B64 = tensor_cast(B, TENSOR_F64), *W64 = tensor_cast(W, TENSOR_F64);
    Tensor *eA = tensor_matmul(W64, tensor_transpose(B64, 0, 1));
    Tensor *mA = tensor_matmul(tensor_abs(W64), tensor_transpose(tensor_abs(B64), 0, 1));
    Tensor *eB = tensor_sum(tensor_matmul(tensor_transpose(A64, -1, -2), W64), TENSOR_DIMS(0, 1), false);
    Tensor *mB = tensor_sum(tensor_matmul(tensor_transpose(tensor_abs(A64), -1, -2), tensor_abs(W64)), TENSOR_DIMS(0, 1), false);
    double bA = 3 * 0x1p-8 + 0x1p-13 + 11 * 0x1p-23, bB = 3 * 0x1p-8 + 0x1p-13 + 42 * 0x1p-23;
    double wA = worst_vs_bound(A->grad, eA, mA), wB = worst_vs_bound(B->grad, eB, mB);
    CHECK_MSG(wA <= bA, "dA vs exact: %.3g·(|W||B|) > %.3g", wA, bA);
    CHECK_MSG(wB <= bB, "dB vs exact: %.3g·(|A||W|) > %.3g", wB, bB);

    /* gradcheck-style: the directional derivative ⟨∇L, (dA, dB)⟩ against central differences of
     * the exact function L64(A + h dA, B + h dB) in f64 (bilinear: the difference quotient is
     * exact up to f64 rounding). The directional derivative of random directions cancels a lot,
     * so the error is measured on its magnitude scale ⟨|W||B|, |dA|⟩ + ⟨|A||W|, |dB|⟩, where
     * the elementwise bounds above carry over. */
    Tensor *dA = tensor_randn(A->ndim, A->shape, TENSOR_F64), *dB = tensor_randn(B->ndim, B->shape, TENSOR_F64);
    const double h = 1e-3;
    double Lp = tensor_item(tensor_sum_all(tensor_mul(W64, tensor_matmul(tensor_add(A64, tensor_mul_scalar(dA, h)),
                                                                         tensor_add(B64, tensor_mul_scalar(dB, h))))));
    double Lm = tensor_item(tensor_sum_all(tensor_mul(W64, tensor_matmul(tensor_sub(A64, tensor_mul_scalar(dA, h)),
                                                                         tensor_sub(B64, tensor_mul_scalar(dB, h))))));
    double fd = (Lp - Lm) / (2 * h);
    double an = tensor_item(tensor_sum_all(tensor_mul(tensor_cast(A->grad, TENSOR_F64), dA))) +
                tensor_item(tensor_sum_all(tensor_mul(tensor_cast(B->grad, TENSOR_F64), dB)));
    double scale = tensor_item(tensor_sum_all(tensor_mul(mA, tensor_abs(dA)))) +
                   tensor_item(tensor_sum_all(tensor_mul(mB, tensor_abs(dB))));
    double rel = fabs(an - fd) / scale;
    CHECK_MSG(rel <= fmax(bA, bB), "directional derivative %.9g vs central difference %.9g: %.3g of the scale %.4g",
              an, fd, rel, scale);
    if (verbose())
        fprintf(stderr, "backward: dA %.3g·|W||B| (bound %.3g), dB %.3g·|A||W| (bound %.3g), directional %.3g·scale "
                "(%.3g relative)\n", wA, bA, wB, bB, rel, fabs(an - fd) / fabs(fd));
    ag_no_grad_end(g);
}

/* nn_linear under the option: f32 in and out, f32 gradients for x, W and b */
TEST(bf16_linear_option) {
    Tensor *x = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(4, 6, 24), TENSOR_F32), true);
    Tensor *w = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(16, 24), TENSOR_F32), true);
    Tensor *b = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(16), TENSOR_F32), true);
    Tensor *gy = tensor_randn(TENSOR_SHAPE(4, 6, 16), TENSOR_F32);
    Tensor *in[3] = {x, w, b}, *g32[3], *g16[3];
    Tensor *y32 = nn_linear(x, w, b);
    ag_grad(1, &y32, &gy, 3, in, g32, false);
    CHECK(nn_set_matmul_dtype(TENSOR_BF16) == TENSOR_F32 && nn_matmul_dtype() == TENSOR_BF16);
    Tensor *y16 = nn_linear(x, w, b);
    ag_grad(1, &y16, &gy, 3, in, g16, false);
    nn_set_matmul_dtype(TENSOR_F32);
    CHECK(y16->dtype == TENSOR_F32 && tensor_same_shape(y16, y32));
    double ey = nmse(y16, y32);
    CHECK_MSG(ey > 0 && ey <= TOL_BF16, "y: normalized MSE %.3g (0 means the option did nothing)", ey);
    for (int i = 0; i < 3; i++) {
        CHECK(g16[i] && g16[i]->dtype == TENSOR_F32);
        double e = nmse(g16[i], g32[i]);
        CHECK_MSG(e <= TOL_BF16, "grad %d: normalized MSE %.3g", i, e);
    }
    /* the bias is added in f32 after the product: its gradient is untouched by bf16 */
    CHECK(nmse(g16[2], g32[2]) == 0);
}

/* ---- attention --------------------------------------------------------------------------------- */

TEST(bf16_attention_tiled_and_naive) {
    nn_attention_set_tiles(16, 32); /* cross tile edges */
    const int heads = 4;
    Tensor *q = tensor_randn(TENSOR_SHAPE(2, 37, 64), TENSOR_F32), *k = tensor_randn(TENSOR_SHAPE(2, 53, 64), TENSOR_F32);
    Tensor *v = tensor_randn(TENSOR_SHAPE(2, 53, 64), TENSOR_F32), *w = tensor_randn(TENSOR_SHAPE(2, 37, 64), TENSOR_F32);
    Tensor *l16[3], *l32[3], *l64[3], *src[3] = {q, k, v};
    for (int i = 0; i < 3; i++) {
        l16[i] = tensor_requires_grad(tensor_cast(src[i], TENSOR_BF16), true);
        l32[i] = tensor_requires_grad(rounded(src[i]), true);
        l64[i] = tensor_requires_grad(tensor_cast(src[i], TENSOR_F64), true);
    }
    Tensor *y16 = nn_attention_tiled(l16[0], l16[1], l16[2], heads);
    Tensor *y32 = nn_attention_tiled(l32[0], l32[1], l32[2], heads);
    Tensor *y64 = nn_attention_naive(l64[0], l64[1], l64[2], heads);
    Tensor *yn = nn_attention_naive(l16[0], l16[1], l16[2], heads);
    CHECK(y16->dtype == TENSOR_F32 && yn->dtype == TENSOR_F32);
    /* the tiled kernel's arithmetic is f32 on the bf16 values: f32 on the rounded inputs, tight */
    CHECK_MSG(test_rel_err(y16, y32) <= 1e-6, "tiled bf16 vs f32 on rounded inputs: %.3g", test_rel_err(y16, y32));
    double e64 = nmse(y16, y64), en = nmse(yn, y64);
    CHECK_MSG(e64 <= TOL_BF16, "tiled bf16 vs f64: normalized MSE %.3g", e64);
    CHECK_MSG(en <= TOL_BF16, "naive bf16 vs f64: normalized MSE %.3g", en);

    Tensor *g16[3], *g32[3], *g64[3], *gn[3];
    Tensor *L16 = tensor_sum_all(tensor_mul(y16, w)), *L32 = tensor_sum_all(tensor_mul(y32, w));
    Tensor *L64 = tensor_sum_all(tensor_mul(y64, tensor_cast(w, TENSOR_F64))), *Ln = tensor_sum_all(tensor_mul(yn, w));
    ag_grad(1, &L16, NULL, 3, l16, g16, false);
    ag_grad(1, &L32, NULL, 3, l32, g32, false);
    ag_grad(1, &L64, NULL, 3, l64, g64, false);
    ag_grad(1, &Ln, NULL, 3, l16, gn, false);
    static const char *nm[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(g16[i]->dtype == TENSOR_BF16 && gn[i]->dtype == TENSOR_BF16, "%s: a bf16 leaf's gradient is bf16", nm[i]);
        /* the f32 gradients of the rounded inputs, rounded once: the same numbers */
        double t = test_rel_err(g16[i], rounded(g32[i]));
        CHECK_MSG(t <= 1e-6, "%s: tiled bf16 vs rounded f32 gradient: %.3g", nm[i], t);
        double e = nmse(g16[i], g64[i]), n2 = nmse(gn[i], g64[i]);
        CHECK_MSG(e <= TOL_BLOCK && n2 <= TOL_BLOCK, "%s vs f64: tiled %.3g, naive %.3g (tolerance %g)", nm[i], e, n2,
                  TOL_BLOCK);
        if (verbose()) fprintf(stderr, "attention %s vs f64: tiled %.3g, naive %.3g\n", nm[i], e, n2);
    }
    if (verbose()) fprintf(stderr, "attention output vs f64: tiled %.3g, naive %.3g\n", e64, en);
    nn_attention_set_tiles(0, 0);
}

/* ---- transformer blocks with the option ------------------------------------------------------ */

typedef struct {
    double out, worst_grad;
    char worst_name[64];
} BlockErr;

/* forward and backward of sum(block(x) ∘ w) with the option off and on; every gradient and
 * the output compared */
static BlockErr block_case(bool cross, NnAttentionMode mode) {
    TensorScope *scope = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, scope, TENSOR_F32, 7);
    const int64_t B = 2, T = 24, S = 19, C = 64, Cc = 48, H = 256;
    NnSelfBlock sb;
    NnCrossBlock cb;
    if (cross) nn_cross_block_init(&cb, &p, "blk", C, Cc, 4, H, true);
    else nn_self_block_init(&sb, &p, "blk", C, 4, H, false);
    nn_params_pack(&p);
    Tensor *x = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(B, T, C), TENSOR_F32), true);
    Tensor *ctx = tensor_requires_grad(tensor_randn(TENSOR_SHAPE(B, S, Cc), TENSOR_F32), true);
    Tensor *w = tensor_randn(TENSOR_SHAPE(B, T, C), TENSOR_F32);
    NnAttentionMode prev_mode = nn_attention_set_mode(mode);
    const NnParam *items;
    int np = nn_state_dict(&p, &items);
    Tensor *y[2], *gx[2], *gc[2], *gp[2][32];
    for (int run = 0; run < 2; run++) {
        nn_set_matmul_dtype(run ? TENSOR_BF16 : TENSOR_F32);
        nn_params_zero_grad(&p);
        x->grad = ctx->grad = NULL;
        y[run] = cross ? nn_cross_block_forward(&cb, x, ctx) : nn_self_block_forward(&sb, x);
        ag_backward(tensor_sum_all(tensor_mul(y[run], w)), NULL, false);
        gx[run] = tensor_clone(x->grad);
        gc[run] = cross ? tensor_clone(ctx->grad) : NULL;
        for (int i = 0; i < np && i < 32; i++) gp[run][i] = tensor_clone(items[i].value->grad);
    }
    nn_set_matmul_dtype(TENSOR_F32);
    nn_attention_set_mode(prev_mode);
    BlockErr r = {nmse(y[1], y[0]), nmse(gx[1], gx[0]), "x"};
    CHECK(y[1]->dtype == TENSOR_F32 && gx[1]->dtype == TENSOR_F32);
    if (cross && nmse(gc[1], gc[0]) > r.worst_grad) {
        r.worst_grad = nmse(gc[1], gc[0]);
        snprintf(r.worst_name, sizeof r.worst_name, "ctx");
    }
    for (int i = 0; i < np && i < 32; i++) {
        CHECK(items[i].value->dtype == TENSOR_F32 && gp[1][i]->dtype == TENSOR_F32);
        double e = nmse(gp[1][i], gp[0][i]);
        if (e > r.worst_grad) {
            r.worst_grad = e;
            snprintf(r.worst_name, sizeof r.worst_name, "%s", items[i].name);
        }
    }
    CHECK_MSG(r.out > 0, "the option changed nothing: bf16 was not used");
    nn_params_free(&p);
    tensor_scope_end(scope);
    return r;
}

TEST(bf16_transformer_blocks_vs_f32) {
    static const char *modes[] = {"naive", "tiled"};
    for (int cross = 0; cross < 2; cross++)
        for (int m = 0; m < 2; m++) {
            BlockErr e = block_case(cross, m ? NN_ATTENTION_TILED : NN_ATTENTION_NAIVE);
            const char *what = cross ? "cross block" : "self block";
            CHECK_MSG(e.out <= TOL_BLOCK, "%s (%s attention): output normalized MSE %.3g > %g", what, modes[m], e.out,
                      TOL_BLOCK);
            CHECK_MSG(e.worst_grad <= TOL_BLOCK, "%s (%s attention): gradient of %s normalized MSE %.3g > %g", what,
                      modes[m], e.worst_name, e.worst_grad, TOL_BLOCK);
            if (verbose())
                fprintf(stderr, "%s, %s attention: output %.3g, worst gradient %s %.3g (tolerance %g)\n", what,
                        modes[m], e.out, e.worst_name, e.worst_grad, TOL_BLOCK);
        }
}

/* ---- everything else refuses bf16 ------------------------------------------------------------ */

static Tensor *b16(void) { return tensor_cast(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), TENSOR_BF16); }

static void bad_add(void *arg) {
    (void)arg;
    Tensor *a = b16();
    tensor_add(a, a);
}
static void bad_exp(void *arg) {
    (void)arg;
    tensor_exp(b16());
}
static void bad_sum(void *arg) {
    (void)arg;
    tensor_sum_all(b16());
}
static void bad_mean(void *arg) {
    (void)arg;
    tensor_mean_all(b16());
}
static void bad_softmax(void *arg) {
    (void)arg;
    tensor_softmax(b16(), -1);
}
static void bad_cat(void *arg) {
    (void)arg;
    Tensor *a[2] = {b16(), b16()};
    tensor_cat(2, a, 0);
}
static void bad_where(void *arg) {
    (void)arg;
    Tensor *x = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor_where(b16(), x, x);
}
static void bad_cast_f64(void *arg) {
    (void)arg;
    tensor_cast(b16(), TENSOR_F64);
}
static void bad_randn(void *arg) {
    (void)arg;
    tensor_randn(TENSOR_SHAPE(2), TENSOR_BF16);
}
static void bad_mixed_matmul(void *arg) {
    (void)arg;
    tensor_matmul(b16(), tensor_ones(TENSOR_SHAPE(3, 2), TENSOR_F32));
}
/* a bf16 tensor feeding two ops: backward would sum its two gradients in bf16 */
static void bad_reuse(void *arg) {
    (void)arg;
    Tensor *a = tensor_requires_grad(tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_F32), true);
    Tensor *h = tensor_cast(a, TENSOR_BF16);
    ag_backward(tensor_sum_all(tensor_add(tensor_matmul(h, h), tensor_matmul(h, h))), NULL, false);
}
static void bad_params(void *arg) {
    (void)arg;
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_BF16, 0);
}

static void expect(void (*fn)(void *), const char *const *needles, int n) {
    char buf[2048];
    int st = test_run_child(fn, NULL, buf, sizeof buf);
    CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "expected an abort, status %d (%s)", st, buf);
    CHECK_MSG(strchr(buf, '\n') == buf + strlen(buf) - 1, "expected exactly one line, got: %s", buf);
    for (int i = 0; i < n; i++) CHECK_MSG(strstr(buf, needles[i]), "missing '%s' in: %s", needles[i], buf);
}

#define NOT_SUPPORTED(op) (const char *const[]){"anima: " op ":", "bf16 [2, 3] is not supported", "test_bf16.c:"}, 3

TEST(bf16_other_ops_fail_with_one_line) {
    expect(bad_add, NOT_SUPPORTED("add"));
    expect(bad_exp, NOT_SUPPORTED("exp"));
    expect(bad_sum, NOT_SUPPORTED("sum"));
    expect(bad_mean, NOT_SUPPORTED("mean"));
    expect(bad_softmax, NOT_SUPPORTED("softmax"));
    expect(bad_cat, NOT_SUPPORTED("cat"));
    expect(bad_where, NOT_SUPPORTED("where"));
    expect(bad_cast_f64, (const char *const[]){"anima: cast:", "bf16 [2, 3] to f64", "to and from f32 only"}, 3);
    expect(bad_randn, (const char *const[]){"anima: tensor_randn:", "got bf16"}, 2);
    expect(bad_mixed_matmul, (const char *const[]){"anima: matmul:", "dtype mismatch", "bf16 [2, 3]", "f32 [3, 2]"}, 4);
    expect(bad_reuse, (const char *const[]){"anima: add:", "bf16 [2, 2] is not supported"}, 2);
    expect(bad_params, (const char *const[]){"anima: nn_params_init:", "got bf16", "nn_set_matmul_dtype"}, 3);
}
