/* tests/test_cuda_gaussians.c — CPU vs CUDA parity of the Gaussian rasterizer
 * (models/gaussians/rasterize_cuda.cu against the reference rasterize_cpu.c), run with --cuda
 * (`make test-cuda`; without a device each test exits 77, skip).
 *
 * Random scenes of a few thousand Gaussians (SH degree 3 and others, anisotropic and isotropic,
 * some behind the camera, some off-screen, some with α clamped at 0.99, multi-batch tile lists)
 * are rendered on both backends from the same inputs; compared by normalized MSE
 * Σ(got − ref)² / Σ ref²:
 *  - image, alpha, depth: <= 1e-7. The CUDA backend projects in f64 like the CPU but blends in
 *    f32, so only rounding and the rare α ≈ 1/255 or T ≈ 1e-4 threshold flip separate them;
 *  - every input gradient of sum(packed · w), w random, and the accumulated mean2d_grad: <= 1e-6.
 *    Looser: the CUDA pixel backward recovers T by f32 division and sums each splat's gradient
 *    with f32 warp shuffles and atomics, in an order that changes from run to run;
 *  - radii: equal except for at most 0.1% of the Gaussians (f64 code on both sides, but nvcc may
 *    contract to FMAs differently, moving a ceil() at an integer boundary).
 * ANIMA_PARITY_SELFTEST=1 puts the CPU in the device's place (the checks themselves, no GPU). */
#include <stdlib.h>
#include <string.h>

#include "datasets/render/camera.h"
#include "models/gaussians/rasterize.h"
#include "tensor/backend.h"
#include "tests/test.h"

#define GS_TOL_IMAGE 1e-7
#define GS_TOL_GRAD 1e-6

static TensorDevice DEV = TENSOR_CUDA;

static void need_device(void) {
    tensor_manual_seed(20240917);
    if (getenv("ANIMA_PARITY_SELFTEST")) {
        DEV = TENSOR_CPU;
        return;
    }
    if (!tensor_backend_cuda()) {
        fflush(NULL);
        exit(77);
    }
}

static Tensor *to_dev(Tensor *x) {
    if (DEV == TENSOR_CPU) return tensor_clone(tensor_detach(x));
    return tensor_to(x, DEV);
}

static double nmse(const Tensor *got, const Tensor *ref) {
    Tensor *g = tensor_to((Tensor *)got, TENSOR_CPU), *r = tensor_to((Tensor *)ref, TENSOR_CPU);
    int64_t n = tensor_numel(r);
    if (tensor_numel(g) != n || !tensor_same_shape(g, r)) return INFINITY;
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *y = malloc(sizeof(double) * (size_t)(n + 1));
    tensor_to_f64_array(g, x);
    tensor_to_f64_array(r, y);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) {
            num = INFINITY;
            break;
        }
        num += (x[i] - y[i]) * (x[i] - y[i]);
        den += y[i] * y[i];
    }
    free(x);
    free(y);
    return num == 0 ? 0 : num / (den > 1e-300 ? den : 1e-300);
}

static void expect_close(const char *what, const char *part, const Tensor *got, const Tensor *ref, double tol) {
    double e = nmse(got, ref);
    fprintf(stderr, "    %-28s %-10s nmse %.3g (tol %.0e)\n", what, part, e, tol);
    CHECK_MSG(e <= tol, "%s: %s: normalized MSE %.3g > %.3g", what, part, e, tol);
}

/* ---- scenes ----------------------------------------------------------------------------------- */

static uint64_t lcg = 0x9e3779b97f4a7c15ull;
static double urand(double lo, double hi) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(lcg >> 11) / 9007199254740992.0;
}

typedef struct {
    int n, width, height, sh_degree; /* sh_degree −1: plain RGB */
    bool iso;
    double depth_lo, depth_hi; /* camera-space z range of the visible part */
    double size_lo, size_hi;   /* world scale range (log-uniform) */
    double culled_frac;        /* fraction placed behind the camera / before the near plane */
    double clamp_frac;         /* fraction with o ≈ 0.998 (α clamped at 0.99) */
    double dilation;           /* GsRenderOptions.dilation; 0: the default */
} SceneSpec;

typedef struct {
    DsCamera cam;
    double bg[3];
    int n_in;
    Tensor *in[5]; /* means, scales, opacities, colors, quats (host, f64) */
    GsRenderOptions opt;
} Scene;

static Scene make_scene(const SceneSpec *sp, uint64_t seed) {
    Scene s = {.opt = {.dilation = sp->dilation > 0 ? sp->dilation : GS_DEFAULT_DILATION}};
    lcg = seed;
    double eye[3] = {0.3, -0.4, -4.0}, target[3] = {0, 0, 0}, up[3] = {0, -1, 0};
    s.cam = ds_camera_look_at(eye, target, up, sp->width, sp->height, 50.0);
    s.bg[0] = 0.1, s.bg[1] = 0.3, s.bg[2] = 0.6;
    int n = sp->n, K = sp->sh_degree < 0 ? 1 : (sp->sh_degree + 1) * (sp->sh_degree + 1);
    double *means = malloc(sizeof(double) * 3 * n), *scales = malloc(sizeof(double) * 3 * n);
    double *quats = malloc(sizeof(double) * 4 * n), *opac = malloc(sizeof(double) * n);
    double *colors = malloc(sizeof(double) * 3 * K * n);
    double tx = 0.5 * sp->width / s.cam.fx, ty = 0.5 * sp->height / s.cam.fy;
    for (int i = 0; i < n; i++) {
        double tc[3];
        tc[2] = urand(sp->depth_lo, sp->depth_hi);
        if (urand(0, 1) < sp->culled_frac) tc[2] = urand(-2.0, 0.009); /* behind, or before znear 0.01 */
        double zz = fabs(tc[2]) > 0.5 ? fabs(tc[2]) : 0.5;
        tc[0] = urand(-1.3, 1.3) * tx * zz; /* ~15% of them partly or fully off-screen */
        tc[1] = urand(-1.3, 1.3) * ty * zz;
        for (int a = 0; a < 3; a++) /* world X = Rᵀ (tc − t) */
            means[3 * i + a] = s.cam.R[a] * (tc[0] - s.cam.t[0]) + s.cam.R[3 + a] * (tc[1] - s.cam.t[1]) +
                               s.cam.R[6 + a] * (tc[2] - s.cam.t[2]);
        double base = urand(log(sp->size_lo), log(sp->size_hi));
        for (int a = 0; a < 3; a++) scales[3 * i + a] = base + urand(-1.0, 1.0); /* up to e² anisotropy */
        if (sp->iso) scales[i] = base;
        for (int a = 0; a < 4; a++) quats[4 * i + a] = urand(-1, 1);
        quats[4 * i] += 0.3;
        opac[i] = urand(0, 1) < sp->clamp_frac ? 6.0 : urand(-3.0, 3.0);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < 3; c++)
                colors[(i * K + k) * 3 + c] = sp->sh_degree < 0 ? urand(0.0, 1.0) : k == 0 ? urand(-1.2, 1.2) : urand(-0.3, 0.3);
    }
    s.in[0] = tensor_from_f64(TENSOR_SHAPE(n, 3), TENSOR_F64, means);
    s.in[1] = sp->iso ? tensor_from_f64(TENSOR_SHAPE(n, 1), TENSOR_F64, scales) : tensor_from_f64(TENSOR_SHAPE(n, 3), TENSOR_F64, scales);
    s.in[2] = tensor_from_f64(TENSOR_SHAPE(n, 1), TENSOR_F64, opac);
    s.in[3] = sp->sh_degree < 0 ? tensor_from_f64(TENSOR_SHAPE(n, 3), TENSOR_F64, colors)
                                : tensor_from_f64(TENSOR_SHAPE(n, K, 3), TENSOR_F64, colors);
    s.in[4] = sp->iso ? NULL : tensor_from_f64(TENSOR_SHAPE(n, 4), TENSOR_F64, quats);
    s.n_in = sp->iso ? 4 : 5;
    free(means), free(scales), free(quats), free(opac), free(colors);
    return s;
}

static GsRenderOut render(const Scene *s, Tensor *const *x) {
    GsGaussians g = {x[0], x[1], s->n_in > 4 ? x[4] : NULL, x[2], x[3]};
    return gs_render_with(&g, &s->cam, s->bg, &s->opt);
}

static const char *const in_names[5] = {"means", "scales", "opacities", "colors", "quats"};

/* Render s on the CPU and on the device from inputs of dtype dt; compare outputs, radii, every
 * input gradient of sum(packed · w) and the accumulated mean2d_grad. */
static void parity_scene(const char *what, const Scene *s, TensorDType dt) {
    Tensor *hc[5] = {0}, *hd[5] = {0}, *gc[5] = {0}, *gd[5] = {0};
    for (int k = 0; k < s->n_in; k++) {
        hc[k] = tensor_requires_grad(tensor_cast(s->in[k], dt), true);
        hd[k] = tensor_requires_grad(to_dev(tensor_detach(hc[k])), true);
        CHECK_MSG(tensor_device(hd[k]) == DEV, "%s: input %s not moved", what, in_names[k]);
    }
    GsRenderOut rc = render(s, hc), rd = render(s, hd);
    CHECK_MSG(tensor_device(rd.packed) == DEV && tensor_device(rd.radii) == DEV, "%s: outputs not on the device", what);
    CHECK_MSG(rd.packed->dtype == dt, "%s: output dtype %s", what, tensor_dtype_name(rd.packed->dtype));

    /* the scene is not trivial: most Gaussians visible, a good part of the image covered */
    int64_t n = s->in[0]->shape[0], visible = 0, differ = 0;
    Tensor *radc = rc.radii, *radd = tensor_to(rd.radii, TENSOR_CPU);
    for (int64_t i = 0; i < n; i++) {
        visible += tensor_i64(radc)[i] > 0;
        differ += tensor_i64(radc)[i] != tensor_i64(radd)[i];
    }
    double cover = tensor_item(tensor_mean_all(tensor_cast(rc.alpha, TENSOR_F64)));
    fprintf(stderr, "    %-28s %lld Gaussians, %lld visible, mean alpha %.3f, radii differ %lld\n", what, (long long)n,
            (long long)visible, cover, (long long)differ);
    CHECK_MSG(visible > n / 3 && cover > 0.2, "%s: scene too sparse (%lld visible, mean alpha %.3f)", what,
              (long long)visible, cover);
    CHECK_MSG(differ <= n / 1000, "%s: %lld of %lld radii differ", what, (long long)differ, (long long)n);

    expect_close(what, "image", rd.image, rc.image, GS_TOL_IMAGE);
    expect_close(what, "alpha", rd.alpha, rc.alpha, GS_TOL_IMAGE);
    expect_close(what, "depth", rd.depth, rc.depth, GS_TOL_IMAGE);

    Tensor *w = tensor_randn(rc.packed->ndim, rc.packed->shape, dt);
    Tensor *lc = tensor_sum_all(tensor_mul(rc.packed, w)), *ld = tensor_sum_all(tensor_mul(rd.packed, to_dev(w)));
    ag_grad(1, &lc, NULL, s->n_in, hc, gc, false);
    ag_grad(1, &ld, NULL, s->n_in, hd, gd, false);
    for (int k = 0; k < s->n_in; k++) {
        CHECK_MSG(gc[k] && gd[k], "%s: no gradient for %s", what, in_names[k]);
        if (!gc[k] || !gd[k]) continue;
        CHECK_MSG(tensor_device(gd[k]) == DEV && gd[k]->dtype == dt, "%s: %s gradient device/dtype", what, in_names[k]);
        expect_close(what, in_names[k], gd[k], gc[k], GS_TOL_GRAD);
    }
    expect_close(what, "mean2d", rd.mean2d_grad, rc.mean2d_grad, GS_TOL_GRAD);
}

static const SceneSpec BASE = {.n = 4000, .width = 250, .height = 190, .sh_degree = 3, .depth_lo = 2.0,
                               .depth_hi = 8.0, .size_lo = 0.01, .size_hi = 0.12, .culled_frac = 0.03,
                               .clamp_frac = 0.03};

TEST(cuda_gs_parity_aniso_sh3_f32) {
    need_device();
    Scene s = make_scene(&BASE, 11);
    parity_scene("aniso sh3 f32", &s, TENSOR_F32);
}

TEST(cuda_gs_parity_iso_sh3_f32) {
    need_device();
    SceneSpec sp = BASE;
    sp.iso = true;
    Scene s = make_scene(&sp, 12);
    parity_scene("iso sh3 f32", &s, TENSOR_F32);
}

TEST(cuda_gs_parity_aniso_sh1_f64) {
    need_device();
    SceneSpec sp = BASE;
    sp.sh_degree = 1, sp.n = 2500;
    Scene s = make_scene(&sp, 13);
    parity_scene("aniso sh1 f64", &s, TENSOR_F64);
}

TEST(cuda_gs_parity_iso_rgb_f64) {
    need_device();
    SceneSpec sp = BASE;
    sp.iso = true, sp.sh_degree = -1, sp.n = 2500;
    Scene s = make_scene(&sp, 14);
    parity_scene("iso rgb f64", &s, TENSOR_F64);
}

/* The sharper low-pass filter of supersampled renders (gs4d's model.dilation): thinner splats,
 * smaller radii and tile lists, the same on both backends. */
TEST(cuda_gs_parity_sharp_dilation_f32) {
    need_device();
    SceneSpec sp = BASE;
    sp.dilation = 0.05;
    Scene s = make_scene(&sp, 16);
    parity_scene("aniso sh3 f32, dilation 0.05", &s, TENSOR_F32);
}

/* Many small, faint Gaussians over a small image: tile lists of many hundreds (several 256-splat
 * batches, forward and backward), and pixels that reach the T < 1e-4 early stop. */
TEST(cuda_gs_parity_dense_batches) {
    need_device();
    SceneSpec sp = BASE;
    sp.n = 6000, sp.width = 70, sp.height = 52, sp.size_lo = 0.02, sp.size_hi = 0.3, sp.clamp_frac = 0.1;
    Scene s = make_scene(&sp, 15);
    parity_scene("dense batches f32", &s, TENSOR_F32);
}

/* Nothing in front of the camera: no (tile, Gaussian) pair at all — the background, zero
 * gradients, zero radii on both backends. */
TEST(cuda_gs_all_culled) {
    need_device();
    SceneSpec sp = BASE;
    sp.n = 300, sp.culled_frac = 1.0;
    Scene s = make_scene(&sp, 16);
    Tensor *hd[5] = {0};
    for (int k = 0; k < s.n_in; k++) hd[k] = tensor_requires_grad(to_dev(tensor_cast(s.in[k], TENSOR_F32)), true);
    GsRenderOut rd = render(&s, hd);
    Tensor *img = tensor_to(rd.image, TENSOR_CPU), *al = tensor_to(rd.alpha, TENSOR_CPU);
    const float *p = tensor_f32(tensor_contiguous(img)), *a = tensor_f32(tensor_contiguous(al));
    int64_t npx = (int64_t)sp.width * sp.height;
    int bad = 0;
    for (int64_t i = 0; i < npx; i++) {
        for (int c = 0; c < 3; c++) bad += fabs(p[3 * i + c] - s.bg[c]) > 1e-6;
        bad += a[i] != 0;
    }
    CHECK_MSG(bad == 0, "%d pixel values are not the background", bad);
    Tensor *gd[5] = {0}, *L = tensor_sum_all(rd.packed);
    ag_grad(1, &L, NULL, s.n_in, hd, gd, false);
    for (int k = 0; k < s.n_in; k++) {
        CHECK_MSG(gd[k], "no gradient for %s", in_names[k]);
        if (gd[k]) CHECK_MSG(tensor_item(tensor_sum_all(tensor_abs(gd[k]))) == 0, "%s gradient not zero", in_names[k]);
    }
    CHECK(tensor_item(tensor_sum_all(tensor_cast(rd.radii, TENSOR_F64))) == 0);
}
