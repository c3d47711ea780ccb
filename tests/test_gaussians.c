/* tests/test_gaussians.c — the Gaussian rasterizer (models/gaussians/rasterize.h) and the
 * photometric loss (models/gaussians/loss.h): the radix sort, the analytic footprint of one
 * Gaussian, f64 finite-difference gradchecks of every input on tiny multi-tile images (anisotropic
 * and isotropic; SH degree 0, 1, 3 and plain RGB; overlapping, partly off-screen, behind the
 * camera, outside the field-of-view clamp), f32 vs f64 agreement, thread-count determinism.
 *
 * The op is non-smooth where α crosses 1/255 or 0.99, where T crosses 1e-4 and at tile and 3σ box
 * edges; the scenes keep opacities ≤ 0.7 and few layers, so only the 1/255 contour and the box
 * edges are met, and a perturbation of 1e-6 crosses them with negligible probability. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd/gradcheck.h"
#include "models/gaussians/raster_core.h"
#include "models/gaussians/loss.h"
#include "models/gaussians/rasterize.h"
#include "tests/oracle_io.h"
#include <valgrind/valgrind.h>

#include "tests/test.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* OpenCV look-at (x right, y down, z forward), world up (0, 1, 0); kept local so this file does
 * not depend on datasets/render/camera.c. */
static DsCamera test_camera(int w, int h, double f, const double eye[3], const double target[3]) {
    DsCamera c = {0};
    c.width = w, c.height = h, c.fx = c.fy = f, c.cx = 0.5 * w, c.cy = 0.5 * h, c.znear = 0.01, c.zfar = 100;
    double z[3], x[3], y[3], up[3] = {0, 1, 0}, n;
    for (int a = 0; a < 3; a++) z[a] = target[a] - eye[a];
    n = sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2]);
    for (int a = 0; a < 3; a++) z[a] /= n;
    x[0] = z[1] * up[2] - z[2] * up[1], x[1] = z[2] * up[0] - z[0] * up[2], x[2] = z[0] * up[1] - z[1] * up[0];
    n = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    for (int a = 0; a < 3; a++) x[a] /= n;
    y[0] = z[1] * x[2] - z[2] * x[1], y[1] = z[2] * x[0] - z[0] * x[2], y[2] = z[0] * x[1] - z[1] * x[0];
    for (int a = 0; a < 3; a++) c.R[a] = x[a], c.R[3 + a] = y[a], c.R[6 + a] = z[a];
    for (int r = 0; r < 3; r++) c.t[r] = -(c.R[3 * r] * eye[0] + c.R[3 * r + 1] * eye[1] + c.R[3 * r + 2] * eye[2]);
    return c;
}

/* world point whose camera coordinates are tc: X = Rᵀ (tc − t) */
static void cam_to_world(const DsCamera *c, const double tc[3], double X[3]) {
    for (int a = 0; a < 3; a++)
        X[a] = c->R[a] * (tc[0] - c->t[0]) + c->R[3 + a] * (tc[1] - c->t[1]) + c->R[6 + a] * (tc[2] - c->t[2]);
}

static uint64_t lcg_state = 88172645463325252ull;
static double urand(double lo, double hi) {
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(lcg_state >> 11) / 9007199254740992.0;
}

static Tensor *leaf(int ndim, const int64_t *shape, const double *v, TensorDType dt) {
    return tensor_requires_grad(tensor_from_f64(ndim, shape, dt, v), true);
}

/* ---- the gradcheck scenes --------------------------------------------------------------- */

enum { NG = 7, GC_W = 24, GC_H = 20 };
/* camera-space placements: 0–2 overlap in the middle, 3 straddles the right edge, 4 is behind
 * the camera (culled), 5 is farther away, 6 is centered beyond 1.3× the field of view (J is
 * clamped) with a footprint reaching into the image */
static const double place[NG][3] = {{0.0, 0.0, 3.0},  {0.25, 0.1, 2.6},   {-0.35, 0.25, 3.6}, {1.85, -0.2, 3.1},
                                    {0.1, 0.0, -1.5}, {-0.5, -0.55, 4.4}, {2.7, 0.3, 3.0}};
static const double sizes[NG][3] = {{0.30, 0.18, 0.24}, {0.20, 0.25, 0.15}, {0.35, 0.20, 0.30}, {0.25, 0.30, 0.20},
                                    {0.30, 0.30, 0.30}, {0.40, 0.30, 0.35}, {0.50, 0.45, 0.50}};
enum { CULLED = 4, CLAMPED = 6, OFFSCREEN = 3 };

typedef struct {
    DsCamera cam;
    double bg[3];
    int n_in; /* 4 (isotropic) or 5 */
    Tensor *in[5]; /* means, scales, opacities, colors, quats */
    GsRenderOptions opt;
} Scene;

/* sh_degree −1: plain RGB colors */
static Scene make_scene(bool iso, int sh_degree, TensorDType dt) {
    Scene s = {.opt = GS_RENDER_DEFAULTS};
    double eye[3] = {0.4, -0.6, -3.2}, target[3] = {0, 0, 0};
    s.cam = test_camera(GC_W, GC_H, 20.0, eye, target);
    s.bg[0] = 0.2, s.bg[1] = 0.5, s.bg[2] = 0.9;
    lcg_state = 88172645463325252ull;
    int K = sh_degree < 0 ? 1 : (sh_degree + 1) * (sh_degree + 1);
    double means[NG * 3], scales[NG * 3], quats[NG * 4], opac[NG], colors[NG * 16 * 3];
    for (int i = 0; i < NG; i++) {
        cam_to_world(&s.cam, place[i], means + 3 * i);
        if (iso) scales[i] = log((sizes[i][0] + sizes[i][1] + sizes[i][2]) / 3);
        else
            for (int a = 0; a < 3; a++) scales[3 * i + a] = log(sizes[i][a]);
        for (int a = 0; a < 4; a++) quats[4 * i + a] = urand(-1, 1);
        quats[4 * i] += 1.5; /* away from zero norm */
        opac[i] = urand(-0.5, 0.8);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < 3; c++)
                colors[(i * K + k) * 3 + c] = sh_degree < 0 ? urand(0.1, 0.9) : k == 0 ? urand(-0.6, 0.6) : urand(-0.12, 0.12);
    }
    s.in[0] = leaf(TENSOR_SHAPE(NG, 3), means, dt);
    s.in[1] = iso ? leaf(TENSOR_SHAPE(NG, 1), scales, dt) : leaf(TENSOR_SHAPE(NG, 3), scales, dt);
    s.in[2] = leaf(TENSOR_SHAPE(NG, 1), opac, dt);
    s.in[3] = sh_degree < 0 ? leaf(TENSOR_SHAPE(NG, 3), colors, dt) : leaf(TENSOR_SHAPE(NG, K, 3), colors, dt);
    s.in[4] = iso ? NULL : leaf(TENSOR_SHAPE(NG, 4), quats, dt);
    s.n_in = iso ? 4 : 5;
    return s;
}

static GsRenderOut scene_render(const Scene *s, Tensor *const *x) {
    GsGaussians g = {x[0], x[1], s->n_in > 4 ? x[4] : NULL, x[2], x[3]};
    return gs_render_with(&g, &s->cam, s->bg, &s->opt);
}

/* every output, flattened: image, alpha, depth */
static Tensor *render_all(int n, Tensor *const *x, void *user) {
    (void)n;
    GsRenderOut r = scene_render(user, x);
    Tensor *parts[3] = {tensor_flatten(r.image, 0, -1), tensor_flatten(r.alpha, 0, -1), tensor_flatten(r.depth, 0, -1)};
    return tensor_cat(3, parts, 0);
}

static const char *const in_names[5] = {"means", "scales", "opacities", "colors", "quats"};

static void gradcheck_scene(bool iso, int sh_degree, double dilation) {
    Scene s = make_scene(iso, sh_degree, TENSOR_F64);
    s.opt.dilation = dilation;
    GsRenderOut r = scene_render(&s, s.in);
    const int64_t *radii = tensor_i64(r.radii);
    for (int i = 0; i < NG; i++)
        CHECK_MSG(i == CULLED ? radii[i] == 0 : radii[i] > 0, "Gaussian %d radius %lld", i, (long long)radii[i]);

    AgGradcheckReport rep;
    bool ok = ag_gradcheck(render_all, s.n_in, s.in, &s, 1e-6, 1e-6, 1e-5, &rep);
    CHECK_MSG(ok, "input %s[%lld]: analytic %.10g numeric %.10g (max abs err %.3g)", in_names[rep.bad_input < 0 ? 0 : rep.bad_input],
              (long long)rep.bad_index, rep.analytic, rep.numeric, rep.max_abs_err);
    if (getenv("GS_VERBOSE"))
        fprintf(stderr, "    iso %d sh %d: max abs err %.3g, max |numeric| %.3g\n", iso, sh_degree, rep.max_abs_err, rep.max_ref);

    /* not trivially passing: every input gets a real gradient, the culled Gaussian none, and the
     * partly off-screen and clamped ones do contribute */
    Tensor *y = render_all(s.n_in, s.in, &s);
    TensorRng rng = {.seed = 5, .stream = 1};
    Tensor *w = tensor_randn_with(&rng, y->ndim, y->shape, TENSOR_F64);
    Tensor *L = tensor_sum_all(tensor_mul(y, w));
    Tensor *g[5];
    ag_grad(1, &L, NULL, s.n_in, s.in, g, false);
    for (int k = 0; k < s.n_in; k++) {
        CHECK_MSG(g[k], "no gradient for %s", in_names[k]);
        if (!g[k]) continue;
        int64_t cols = tensor_numel(g[k]) / NG;
        const double *p = tensor_f64(g[k]);
        for (int i = 0; i < NG; i++) {
            double mx = 0;
            for (int64_t c = 0; c < cols; c++) mx = fmax(mx, fabs(p[i * cols + c]));
            if (i == CULLED) CHECK_MSG(mx == 0, "culled Gaussian has %s gradient %g", in_names[k], mx);
            else CHECK_MSG(mx > 1e-4, "Gaussian %d: %s gradient only %g", i, in_names[k], mx);
        }
    }
}

TEST(gs_gradcheck_aniso_sh3) { gradcheck_scene(false, 3, GS_DEFAULT_DILATION); }
TEST(gs_gradcheck_aniso_sh1) { gradcheck_scene(false, 1, GS_DEFAULT_DILATION); }
TEST(gs_gradcheck_aniso_rgb) { gradcheck_scene(false, -1, GS_DEFAULT_DILATION); }
TEST(gs_gradcheck_iso_sh0) { gradcheck_scene(true, 0, GS_DEFAULT_DILATION); }
TEST(gs_gradcheck_iso_sh3) { gradcheck_scene(true, 3, GS_DEFAULT_DILATION); }
TEST(gs_gradcheck_iso_rgb) { gradcheck_scene(true, -1, GS_DEFAULT_DILATION); }
/* a smaller and a larger low-pass dilation (GsRenderOptions). The render is discontinuous where
 * a pixel crosses a splat's α = 1/255 cutoff (3DGS skips such contributions); a gradcheck holds
 * only where no pixel lies within the finite-difference step of it. With dilation 1.0 one does
 * here: means[0]'s finite difference depends on the step (9.7 at 1e-6, 3.3 at 1e-7) where the
 * analytic gradient is 2.6. */
TEST(gs_gradcheck_aniso_sharp) { gradcheck_scene(false, 3, 0.02); }
TEST(gs_gradcheck_iso_wide) { gradcheck_scene(true, 1, 0.6); }

/* ---- one Gaussian renders its analytic footprint ----------------------------------------- */

static void footprint(TensorDType dt, double tol, double dilation) {
    /* camera at the origin looking down +z: t = μ, W = I */
    DsCamera cam = {.width = 40, .height = 36, .fx = 30, .fy = 34, .cx = 19.3, .cy = 17.6, .znear = 0.01};
    cam.R[0] = cam.R[4] = cam.R[8] = 1;
    double mu[3] = {0.1, -0.08, 2.5}, ls[3] = {log(0.22), log(0.1), log(0.15)}, q[4] = {0.9, 0.2, -0.3, 0.25};
    double oraw = 0.4, rgb[3] = {0.8, 0.3, 0.1}, bg[3] = {0.1, 0.2, 0.3};
    if (dt == TENSOR_F32) { /* the analytic side sees the values the op sees */
        for (int a = 0; a < 3; a++) mu[a] = (float)mu[a], ls[a] = (float)ls[a], rgb[a] = (float)rgb[a];
        for (int a = 0; a < 4; a++) q[a] = (float)q[a];
        oraw = (float)oraw;
    }
    GsGaussians g = {tensor_from_f64(TENSOR_SHAPE(1, 3), dt, mu), tensor_from_f64(TENSOR_SHAPE(1, 3), dt, ls),
                     tensor_from_f64(TENSOR_SHAPE(1, 4), dt, q), tensor_from_f64(TENSOR_SHAPE(1), dt, &oraw),
                     tensor_from_f64(TENSOR_SHAPE(1, 3), dt, rgb)};
    GsRenderOut r = gs_render_with(&g, &cam, bg, &(GsRenderOptions){.dilation = dilation});

    /* independently: Σ = R diag(s²) Rᵀ, J of the pinhole at μ, Σ' = J Σ Jᵀ + dilation I */
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    double R[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                      {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                      {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
    double S[3][3] = {{0}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) S[i][j] += R[i][k] * exp(2 * ls[k]) * R[j][k];
    double J[2][3] = {{cam.fx / mu[2], 0, -cam.fx * mu[0] / (mu[2] * mu[2])}, {0, cam.fy / mu[2], -cam.fy * mu[1] / (mu[2] * mu[2])}};
    double C[2][2] = {{dilation, 0}, {0, dilation}};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) C[a][b] += J[a][i] * S[i][j] * J[b][j];
    double det = C[0][0] * C[1][1] - C[0][1] * C[1][0];
    double m2[2] = {cam.fx * mu[0] / mu[2] + cam.cx, cam.fy * mu[1] / mu[2] + cam.cy};
    double mid = 0.5 * (C[0][0] + C[1][1]), lmax = mid + sqrt(fmax(mid * mid - det, 0.1));
    double rad = ceil(3 * sqrt(lmax)), o = 1 / (1 + exp(-oraw));
    CHECK_NEAR((double)tensor_i64(r.radii)[0], rad, 0);

    int inside = 0;
    for (int py = 0; py < cam.height; py++)
        for (int px = 0; px < cam.width; px++) {
            double dx = px + 0.5 - m2[0], dy = py + 0.5 - m2[1];
            double sig = 0.5 * (C[1][1] * dx * dx - 2 * C[0][1] * dx * dy + C[0][0] * dy * dy) / det;
            double a = fmin(0.99, o * exp(-sig));
            double got = tensor_get(r.alpha, (int64_t[]){py, px});
            if (a < 1.0 / 255) {
                CHECK_MSG(got == 0, "pixel (%d, %d): alpha %g where the footprint is below 1/255", px, py, got);
                continue;
            }
            if (fabs(dx) <= rad && fabs(dy) <= rad) {
                inside++;
                CHECK_MSG(fabs(got - a) <= tol, "pixel (%d, %d): alpha %.9g, analytic %.9g", px, py, got, a);
                for (int c = 0; c < 3; c++)
                    CHECK_NEAR(tensor_get(r.image, (int64_t[]){py, px, c}), rgb[c] * a + (1 - a) * bg[c], tol);
                CHECK_NEAR(tensor_get(r.depth, (int64_t[]){py, px}), mu[2] * a, tol * 4);
            } else { /* beyond the 3σ box: truncated unless its tile is listed anyway */
                CHECK_MSG(got == 0 || fabs(got - a) <= tol, "pixel (%d, %d): alpha %g vs %g", px, py, got, a);
            }
        }
    CHECK_MSG(inside > 100, "only %d pixels compared", inside);
}

TEST(gs_footprint_f64) { footprint(TENSOR_F64, 1e-12, GS_DEFAULT_DILATION); }
TEST(gs_footprint_f32) { footprint(TENSOR_F32, 1e-6, GS_DEFAULT_DILATION); }
/* the footprint follows the dilation (none at all, a sharper and a wider one) */
TEST(gs_footprint_dilations) {
    footprint(TENSOR_F64, 1e-12, 0);
    footprint(TENSOR_F64, 1e-12, 0.05);
    footprint(TENSOR_F64, 1e-12, 1.5);
}

/* ---- front-to-back order, saturation, f32 ≡ f64, thread determinism ---------------------- */

TEST(gs_depth_order) {
    /* two nearly opaque, large Gaussians on the axis: the nearer one's color dominates whatever
     * their input order */
    DsCamera cam = {.width = 20, .height = 20, .fx = 20, .fy = 20, .cx = 10, .cy = 10, .znear = 0.01};
    cam.R[0] = cam.R[4] = cam.R[8] = 1;
    for (int flip = 0; flip < 2; flip++) {
        double zs[2] = {flip ? 4.0 : 2.0, flip ? 2.0 : 4.0};
        double mu[6] = {0, 0, zs[0], 0, 0, zs[1]}, ls[2] = {log(0.5), log(0.5)}, op[2] = {8, 8};
        double col[6] = {1, 0, 0, 0, 0, 1}; /* red, blue */
        GsGaussians g = {tensor_from_f64(TENSOR_SHAPE(2, 3), TENSOR_F64, mu), tensor_from_f64(TENSOR_SHAPE(2, 1), TENSOR_F64, ls),
                         NULL, tensor_from_f64(TENSOR_SHAPE(2, 1), TENSOR_F64, op), tensor_from_f64(TENSOR_SHAPE(2, 3), TENSOR_F64, col)};
        GsRenderOut r = gs_render(&g, &cam, NULL);
        double red = tensor_get(r.image, (int64_t[]){10, 10, 0}), blue = tensor_get(r.image, (int64_t[]){10, 10, 2});
        /* near the center α ≈ 0.99 (clamped or nearly): front ≈ 0.99, back ≈ 0.0099 */
        if (!flip) CHECK(red > 0.98 && blue < 0.02);
        else CHECK(blue > 0.98 && red < 0.02);
        CHECK(tensor_get(r.alpha, (int64_t[]){10, 10}) > 0.999);
    }
}

TEST(gs_f32_matches_f64) {
    Scene a = make_scene(false, 3, TENSOR_F64), b = make_scene(false, 3, TENSOR_F32);
    GsRenderOut ra = scene_render(&a, a.in), rb = scene_render(&b, b.in);
    CHECK(rb.packed->dtype == TENSOR_F32);
    CHECK(test_rel_err(rb.packed, ra.packed) < 1e-6);
    Tensor *La = tensor_sum_all(tensor_mul(ra.image, ra.image)), *Lb = tensor_sum_all(tensor_mul(rb.image, rb.image));
    ag_backward(La, NULL, false);
    ag_backward(Lb, NULL, false);
    for (int k = 0; k < 5; k++) {
        CHECK(b.in[k]->grad && b.in[k]->grad->dtype == TENSOR_F32);
        CHECK_MSG(test_rel_err(b.in[k]->grad, a.in[k]->grad) < 1e-4, "%s: rel err %g", in_names[k],
                  test_rel_err(b.in[k]->grad, a.in[k]->grad));
    }
    /* the densification statistic was filled */
    CHECK(test_rel_err(rb.mean2d_grad, ra.mean2d_grad) < 1e-4);
    double m = 0;
    for (int i = 0; i < 2 * NG; i++) m = fmax(m, fabs(tensor_f64(ra.mean2d_grad)[i]));
    CHECK(m > 0);
}

/* a cloud of n random anisotropic SH-1 Gaussians in front of a 96×80 camera, big enough for the
 * CPU backend's parallel paths (raster_core: GS_PAR_MIN) */
static Scene make_cloud(int n) {
    Scene s = {0};
    double eye[3] = {0.2, 0.3, -3}, target[3] = {0, 0, 0};
    s.cam = test_camera(96, 80, 90, eye, target);
    s.bg[0] = s.bg[1] = s.bg[2] = 0.3;
    lcg_state = 12345;
    double *m = malloc(sizeof(double) * 3 * n), *sc = malloc(sizeof(double) * 3 * n), *q = malloc(sizeof(double) * 4 * n);
    double *o = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * 12 * n);
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) m[3 * i + a] = urand(-1, 1), sc[3 * i + a] = log(urand(0.01, 0.06));
        for (int a = 0; a < 4; a++) q[4 * i + a] = urand(-1, 1);
        o[i] = urand(-2, 2);
        for (int k = 0; k < 12; k++) c[12 * i + k] = urand(-0.5, 0.5);
    }
    s.in[0] = leaf(TENSOR_SHAPE(n, 3), m, TENSOR_F64);
    s.in[1] = leaf(TENSOR_SHAPE(n, 3), sc, TENSOR_F64);
    s.in[2] = leaf(TENSOR_SHAPE(n, 1), o, TENSOR_F64);
    s.in[3] = leaf(TENSOR_SHAPE(n, 4, 3), c, TENSOR_F64);
    s.in[4] = leaf(TENSOR_SHAPE(n, 4), q, TENSOR_F64);
    s.n_in = 5;
    free(m), free(sc), free(q), free(o), free(c);
    return s;
}

TEST(gs_threads_bitwise) {
    /* per-entry accumulation and a serial reduction: image and gradients do not depend on the
     * team size */
    if (RUNNING_ON_VALGRIND) { /* libgomp worker stacks alive at _exit read as leaks */
        printf("    skipped under valgrind\n");
        fflush(stdout);
        _exit(77);
    }
    Tensor *g1[6], *g2[6];
    for (int pass = 0; pass < 2; pass++) {
        omp_set_num_threads(pass ? 2 : 1);
        Scene s = make_cloud(3000);
        GsRenderOut r = scene_render(&s, s.in);
        double a = tensor_item(tensor_mean_all(r.alpha));
        CHECK_MSG(a > 0.3, "mean alpha %g: the cloud should cover the image", a);
        ag_backward(tensor_sum_all(tensor_mul(r.packed, r.packed)), NULL, false);
        for (int k = 0; k < 5; k++) (pass ? g2 : g1)[k] = s.in[k]->grad;
        (pass ? g2 : g1)[5] = r.packed;
    }
    for (int k = 0; k < 6; k++) CHECK(test_rel_err(g1[k], g2[k]) == 0);
}

/* ---- radix sort ---------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

TEST(gs_radix_sort) {
    enum { N = 5000 };
    uint64_t *k = malloc(sizeof *k * 2 * N), *ref = malloc(sizeof *ref * N);
    int32_t *v = malloc(sizeof *v * 2 * N);
    for (int i = 0; i < N; i++) {
        float d = (float)urand(0.01, 50);
        uint32_t bits;
        memcpy(&bits, &d, 4);
        k[i] = (uint64_t)(uint32_t)(urand(0, 37)) << 32 | (i % 7 ? bits : 0x3f800000u); /* many ties */
        v[i] = i;
        ref[i] = k[i];
    }
    uint64_t orig[N];
    memcpy(orig, k, sizeof orig);
    gs_radix_sort(k, v, k + N, v + N, N, 38);
    qsort(ref, N, sizeof *ref, cmp_u64);
    for (int i = 0; i < N; i++) {
        CHECK(k[i] == ref[i]);
        CHECK(orig[v[i]] == k[i]);
        if (i && k[i] == k[i - 1]) CHECK(v[i] > v[i - 1]); /* stable */
        if (test_quick() && i > 100) break;
    }
    free(k), free(ref), free(v);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void bad_colors(void *arg) {
    (void)arg;
    DsCamera cam = {.width = 8, .height = 8, .fx = 8, .fy = 8, .cx = 4, .cy = 4};
    GsGaussians g = {tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32), NULL,
                     tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(2, 5, 3), TENSOR_F32)};
    gs_render(&g, &cam, NULL);
}

static void bad_dilation(void *arg) {
    DsCamera cam = {.width = 8, .height = 8, .fx = 8, .fy = 8, .cx = 4, .cy = 4};
    GsGaussians g = {tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32), NULL,
                     tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32)};
    gs_render_with(&g, &cam, NULL, &(GsRenderOptions){.dilation = *(const double *)arg});
}

TEST(gs_bad_input_message) {
    char buf[1024];
    int st = test_run_child(bad_colors, NULL, buf, sizeof buf);
    CHECK(st != 0);
    CHECK_MSG(strstr(buf, "gs_render") && strstr(buf, "[2, 5, 3]"), "message: %s", buf);
    const double bad[2] = {-0.1, NAN};
    for (int k = 0; k < 2; k++) {
        st = test_run_child(bad_dilation, (void *)&bad[k], buf, sizeof buf);
        CHECK(st != 0);
        CHECK_MSG(strstr(buf, "gs_render") && strstr(buf, "dilation"), "message: %s", buf);
    }
}

/* ---- photometric loss against PyTorch (tests/oracle/make_ssim_fixtures.py) --------------- */

static Tensor *loss_value(const char *key, Tensor *a, Tensor *b) {
    if (!strcmp(key, "l1")) return gs_loss_l1(a, b);
    if (!strcmp(key, "ssim_same")) return gs_ssim(a, b, GS_SSIM_SAME);
    if (!strcmp(key, "ssim_valid")) return gs_ssim(a, b, GS_SSIM_VALID);
    return gs_loss_photometric(a, b, GS_PHOTOMETRIC_LAMBDA);
}

static void loss_oracle(TensorDType dt, double tol) {
    const char *dir = getenv("ANIMA_ORACLE_DIR");
    char path[512], err[512], name[128];
    snprintf(path, sizeof path, "%s/ssim_loss.afx", dir && *dir ? dir : "tests/oracle/fixtures");
    OracleFile f;
    if (!oracle_load(path, &f, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s (regenerate with tests/oracle/make_ssim_fixtures.py)", err);
        return;
    }
    static const char *const cases[] = {"smooth", "noise", "tiny"};
    static const char *const keys[] = {"l1", "ssim_same", "ssim_valid", "loss"};
    int compared = 0;
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "%s/%s", cases[c], keys[k]);
            const OracleArray *want = oracle_find(&f, name);
            if (!want) continue; /* ssim_valid of an image smaller than the window */
            snprintf(name, sizeof name, "%s/a", cases[c]);
            Tensor *a = tensor_requires_grad(oracle_tensor(oracle_find(&f, name), dt), true);
            snprintf(name, sizeof name, "%s/b", cases[c]);
            Tensor *b = tensor_requires_grad(oracle_tensor(oracle_find(&f, name), dt), true);
            Tensor *v = loss_value(keys[k], a, b);
            double ref = tensor_item(oracle_tensor(want, TENSOR_F64));
            double e = fabs(tensor_item(v) - ref);
            CHECK_MSG(e <= tol * fmax(1, fabs(ref)), "%s/%s: %.12g vs torch %.12g", cases[c], keys[k], tensor_item(v), ref);
            ag_backward(v, NULL, false);
            const char *side[2] = {"grad_a", "grad_b"};
            Tensor *got[2] = {a->grad, b->grad};
            for (int s = 0; s < 2; s++) {
                snprintf(name, sizeof name, "%s/%s/%s", cases[c], keys[k], side[s]);
                Tensor *g = oracle_tensor(oracle_find(&f, name), TENSOR_F64);
                double re = got[s] ? test_rel_err(got[s], g) : INFINITY;
                if (getenv("ANIMA_ORACLE_VERBOSE"))
                    fprintf(stderr, "    %s %s: value err %.3g, grad rel err %.3g\n", tensor_dtype_name(dt), name, e, re);
                CHECK_MSG(re <= tol, "%s: gradient rel err %g", name, re);
            }
            compared++;
        }
    CHECK(compared == 11);
    oracle_free(&f);
}

TEST(gs_loss_oracle_f64) { loss_oracle(TENSOR_F64, 1e-10); }
TEST(gs_loss_oracle_f32) { loss_oracle(TENSOR_F32, 1e-5); }

/* the loss composes with the renderer: one backward from the photometric loss reaches the
 * Gaussians (f64 gradcheck of the whole chain) */
static Tensor *render_loss(int n, Tensor *const *x, void *user) {
    (void)n;
    const Scene *s = user;
    GsRenderOut r = scene_render(s, x);
    int64_t shape[3] = {GC_H, GC_W, 3};
    Tensor *ref = tensor_full(3, shape, 0.4, TENSOR_F64);
    return gs_loss_photometric(r.image, ref, GS_PHOTOMETRIC_LAMBDA);
}

TEST(gs_gradcheck_render_loss) {
    Scene s = make_scene(false, 1, TENSOR_F64);
    AgGradcheckReport rep;
    /* L1's kinks sit where a pixel equals the reference: none do here */
    bool ok = ag_gradcheck(render_loss, s.n_in, s.in, &s, 1e-6, 1e-8, 1e-5, &rep);
    CHECK_MSG(ok, "input %s[%lld]: analytic %.10g numeric %.10g", in_names[rep.bad_input < 0 ? 0 : rep.bad_input],
              (long long)rep.bad_index, rep.analytic, rep.numeric);
    CHECK(rep.max_ref > 1e-4);
}
