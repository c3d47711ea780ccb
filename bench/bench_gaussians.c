/* bench/bench_gaussians.c — the CPU Gaussian rasterizer (models/gaussians/rasterize.h), forward
 * and forward + backward, 100k anisotropic Gaussians with SH degree 3 (f32) at 512×512: means
 * uniform in the unit ball seen from distance 3 (45° vertical field of view, so the ball fills
 * most of the image), scales log-uniform in [0.005, 0.02] (a fitted object's), random rotations,
 * opacities sigmoid(N(0, 1)). Case names:
 *     gs_fwd_100k_512, gs_fwdbwd_100k_512
 * Besides the usual "case <name> <median_ms> <n>" line each prints
 *     rate <name> <gaussians_per_s> <pixels_per_s>
 * from its own timing of the steps (median, warm-up excluded).
 *
 * Wiring (bench/bench_main.c owns main and the timing loop), as for bench_attention.c: declare
 *     void bench_gaussians_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
 *                                void (*run_case)(const char *, void (*)(void *), void *));
 * and call bench_gaussians_cases(argc, argv, wanted, run_case) from main. These cases have no
 * PyTorch counterpart in bench/torch_bench.py (ratio: nan). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "models/gaussians/rasterize.h"

enum { GSB_N = 100000, GSB_SIZE = 512, GSB_MAX_STEPS = 512 };

typedef struct {
    GsGaussians g;
    DsCamera cam;
    Tensor *gy; /* (H, W, 3) upstream gradient of the image */
    bool backward;
    int steps;
    double t[GSB_MAX_STEPS];
} GsBenchCtx;

static void step_gs(void *p) {
    GsBenchCtx *c = p;
    double t0 = base_now();
    GsRenderOut r = gs_render(&c->g, &c->cam, NULL);
    if (c->backward) ag_backward(r.image, c->gy, false);
    if (c->steps < GSB_MAX_STEPS) c->t[c->steps] = base_now() - t0;
    c->steps++;
}

static int gsb_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* camera at (0, 0, -3) looking at the origin, OpenCV axes (y down), world y up */
static DsCamera gsb_camera(void) {
    DsCamera c = {0};
    c.width = c.height = GSB_SIZE;
    c.fx = c.fy = 0.5 * GSB_SIZE / tan(0.5 * 45.0 * M_PI / 180.0);
    c.cx = c.cy = 0.5 * GSB_SIZE;
    c.R[0] = -1, c.R[4] = -1, c.R[8] = 1; /* x right = −x_w, y down = −y_w, z = +z_w */
    c.t[2] = 3;
    c.znear = 0.01, c.zfar = 100;
    return c;
}

static void gsb_init(GsBenchCtx *c, bool backward) {
    memset(c, 0, sizeof *c);
    TensorRng rng = {.seed = 42, .stream = 3};
    int64_t n = GSB_N;
    Tensor *u = tensor_rand_with(&rng, TENSOR_SHAPE(n, 8), TENSOR_F64);
    const double *pu = tensor_f64(u);
    float *m = malloc(sizeof(float) * 3 * n), *s = malloc(sizeof(float) * 3 * n);
    for (int64_t i = 0; i < n; i++) {
        /* uniform in the ball: direction from three normals would need more draws; rejection-free
         * via radius u^(1/3) and a uniform direction (cos θ uniform) */
        double r = cbrt(pu[8 * i]), ct = 2 * pu[8 * i + 1] - 1, st = sqrt(1 - ct * ct), ph = 2 * M_PI * pu[8 * i + 2];
        m[3 * i] = (float)(r * st * cos(ph)), m[3 * i + 1] = (float)(r * st * sin(ph)), m[3 * i + 2] = (float)(r * ct);
        for (int a = 0; a < 3; a++) s[3 * i + a] = (float)(log(0.005) + (log(0.02) - log(0.005)) * pu[8 * i + 3 + a]);
    }
    c->g.means = tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, m);
    c->g.scales = tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, s);
    free(m), free(s);
    c->g.quats = tensor_randn_with(&rng, TENSOR_SHAPE(n, 4), TENSOR_F32);
    c->g.opacities = tensor_randn_with(&rng, TENSOR_SHAPE(n, 1), TENSOR_F32);
    c->g.colors = tensor_randn_with(&rng, TENSOR_SHAPE(n, 16, 3), TENSOR_F32);
    tensor_scale_(c->g.colors, 0.2);
    c->cam = gsb_camera();
    c->backward = backward;
    if (backward) {
        Tensor *ps[5] = {c->g.means, c->g.scales, c->g.quats, c->g.opacities, c->g.colors};
        for (int k = 0; k < 5; k++) tensor_requires_grad(ps[k], true);
        c->gy = tensor_randn_with(&rng, TENSOR_SHAPE(GSB_SIZE, GSB_SIZE, 3), TENSOR_F32);
    }
}

static void gsb_report(const char *name, GsBenchCtx *c) {
    int n = c->steps < GSB_MAX_STEPS ? c->steps : GSB_MAX_STEPS, skip = n > 3 ? 3 : 0; /* run_case warms up 3× */
    if (n - skip <= 0) return;
    qsort(c->t + skip, (size_t)(n - skip), sizeof(double), gsb_cmp);
    int k = n - skip;
    double med = k % 2 ? c->t[skip + k / 2] : 0.5 * (c->t[skip + k / 2 - 1] + c->t[skip + k / 2]);
    printf("rate %s %.4g %.4g\n", name, GSB_N / med, (double)GSB_SIZE * GSB_SIZE / med);
    fflush(stdout);
}

void bench_gaussians_cases(int argc, char **argv, bool (*wanted)(int, char **, const char *),
                           void (*run_case)(const char *, void (*)(void *), void *)) {
    static const char *const names[2] = {"gs_fwd_100k_512", "gs_fwdbwd_100k_512"};
    for (int b = 0; b < 2; b++) {
        if (!wanted(argc, argv, names[b])) continue;
        TensorScope *s = tensor_scope_begin();
        GsBenchCtx *c = base_malloc(sizeof *c);
        gsb_init(c, b == 1);
        run_case(names[b], step_gs, c);
        gsb_report(names[b], c);
        free(c);
        tensor_scope_end(s);
    }
}
