/* models/gaussians/loss.c — L1 and SSIM in tensor ops (see loss.h for the definition).
 * The 2D window is the outer product g gᵀ of the 1D normalized Gaussian, so the zero-padded
 * 2D convolution of a (C, H, W) stack X equals G_H X G_W with G_n the n × n banded matrix
 * G[i][k] = g[k − i + 5] (|k − i| <= 5; the missing taps at the borders are exactly the zero
 * padding). g is symmetric, so G is too and serves on both sides. O(n) work per output pixel
 * instead of 11, but two dense matmuls: cheap at training resolutions and differentiable through
 * matmul's backward with nothing hand-written. */
#include <math.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "loss.h"

static void check_pair(const char *op, const Tensor *a, const Tensor *b) {
    char s1[128], s2[128];
    if (!tensor_same_shape(a, b))
        tensor_fail(op, "images differ in shape: %s vs %s", tensor_shape_str(a, s1), tensor_shape_str(b, s2));
    if (a->ndim != 3) tensor_fail(op, "images must be (H, W, C), got %s", tensor_shape_str(a, s1));
    if (a->dtype != b->dtype || (a->dtype != TENSOR_F32 && a->dtype != TENSOR_F64))
        tensor_fail(op, "images must share one float dtype (%s, %s)", tensor_dtype_name(a->dtype), tensor_dtype_name(b->dtype));
}

/* the n × n banded Gaussian-window matrix, on x's device and in x's dtype */
static Tensor *window_matrix(int64_t n, const Tensor *like) {
    double g[GS_SSIM_WINDOW], sum = 0;
    int h = GS_SSIM_WINDOW / 2;
    for (int k = 0; k < GS_SSIM_WINDOW; k++) sum += g[k] = exp(-(double)((k - h) * (k - h)) / (2 * GS_SSIM_SIGMA * GS_SSIM_SIGMA));
    for (int k = 0; k < GS_SSIM_WINDOW; k++) g[k] /= sum;
    double *m = base_calloc((size_t)(n * n), sizeof(double));
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = i - h; k <= i + h; k++)
            if (k >= 0 && k < n) m[i * n + k] = g[k - i + h];
    Tensor *t = tensor_from_f64(2, (const int64_t[]){n, n}, like->dtype, m);
    free(m);
    return tensor_to(t, tensor_device(like));
}

/* x (C, H, W) → the window-weighted local means, same size (zero padding) */
static Tensor *blur(Tensor *x, Tensor *gh, Tensor *gw) { return tensor_matmul(tensor_matmul(gh, x), gw); }

Tensor *gs_loss_l1(Tensor *a, Tensor *b) {
    char s1[128], s2[128];
    if (!tensor_same_shape(a, b))
        tensor_fail("gs_loss_l1", "images differ in shape: %s vs %s", tensor_shape_str(a, s1), tensor_shape_str(b, s2));
    return tensor_mean_all(tensor_abs(tensor_sub(a, b)));
}

Tensor *gs_ssim(Tensor *a, Tensor *b, GsSsimPadding pad) {
    check_pair("gs_ssim", a, b);
    int64_t H = a->shape[0], W = a->shape[1];
    int h = GS_SSIM_WINDOW / 2;
    if (pad == GS_SSIM_VALID && (H < GS_SSIM_WINDOW || W < GS_SSIM_WINDOW)) {
        char s[128];
        tensor_fail("gs_ssim", "valid padding needs images of at least %dx%d, got %s", GS_SSIM_WINDOW, GS_SSIM_WINDOW,
                    tensor_shape_str(a, s));
    }
    Tensor *gh = window_matrix(H, a), *gw = window_matrix(W, a);
    Tensor *x = tensor_permute(a, TENSOR_DIMS(2, 0, 1)), *y = tensor_permute(b, TENSOR_DIMS(2, 0, 1));
    Tensor *mx = blur(x, gh, gw), *my = blur(y, gh, gw);
    Tensor *mx2 = tensor_mul(mx, mx), *my2 = tensor_mul(my, my), *mxy = tensor_mul(mx, my);
    Tensor *sx2 = tensor_sub(blur(tensor_mul(x, x), gh, gw), mx2);
    Tensor *sy2 = tensor_sub(blur(tensor_mul(y, y), gh, gw), my2);
    Tensor *sxy = tensor_sub(blur(tensor_mul(x, y), gh, gw), mxy);
    const double C1 = 0.01 * 0.01, C2 = 0.03 * 0.03;
    Tensor *num = tensor_mul(tensor_add_scalar(tensor_mul_scalar(mxy, 2), C1), tensor_add_scalar(tensor_mul_scalar(sxy, 2), C2));
    Tensor *den = tensor_mul(tensor_add_scalar(tensor_add(mx2, my2), C1), tensor_add_scalar(tensor_add(sx2, sy2), C2));
    Tensor *map = tensor_div(num, den); /* (C, H, W) */
    if (pad == GS_SSIM_VALID) /* the interior equals conv2d with padding 0 */
        map = tensor_narrow(tensor_narrow(map, 1, h, H - 2 * h), 2, h, W - 2 * h);
    return tensor_mean_all(map);
}

Tensor *gs_loss_photometric(Tensor *img, Tensor *ref, double lambda) {
    Tensor *l1 = gs_loss_l1(img, ref);
    Tensor *dssim = tensor_rsub_scalar(gs_ssim(img, ref, GS_SSIM_SAME), 1.0);
    return tensor_add(tensor_mul_scalar(l1, 1 - lambda), tensor_mul_scalar(dssim, lambda));
}
