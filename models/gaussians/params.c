/* models/gaussians/params.c — host-side edits of per-Gaussian parameters (params.h). */
#include "models/gaussians/params.h"

#include <string.h>

#include "base/mat3.h"

double gs_draw_u(GsDraw *d) {
    if (d->left == 0) tensor_philox(d->g->seed, d->g->stream, d->g->offset++, d->w), d->left = 4;
    return d->w[--d->left] * (1.0 / 4294967296.0);
}

double gs_draw_n(GsDraw *d) {
    double u1 = gs_draw_u(d), u2 = gs_draw_u(d);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2 * M_PI * u2);
}

int64_t gs_draw_from_cdf(GsDraw *d, const double *cdf, int64_t n, double total) {
    double u = gs_draw_u(d) * total;
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (cdf[mid] > u) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

void gs_rows_copy(Tensor *flat, int64_t n, int64_t dst, int64_t src) {
    int64_t per = tensor_numel(flat) / n;
    float *p = tensor_f32(flat);
    memcpy(p + per * dst, p + per * src, sizeof(float) * (size_t)per);
}

void gs_rows_zero_moments(const Optim *opt, int64_t n, int64_t i) {
    int64_t per = tensor_numel(opt->params->flat) / n;
    memset(tensor_f32(opt->exp_avg) + per * i, 0, sizeof(float) * (size_t)per);
    memset(tensor_f32(opt->exp_avg_sq) + per * i, 0, sizeof(float) * (size_t)per);
}

void gs_opacity_reset(float *o, int64_t n, const Optim *opt) {
    double cap = gs_logit(0.01);
    for (int64_t i = 0; i < n; i++) {
        if (o[i] > cap) o[i] = (float)cap;
        gs_rows_zero_moments(opt, n, i);
    }
}

void gs_gaussian_frame(const float *log_scales, int ns, const float *quats, int64_t j, double s[3], double R[9]) {
    for (int a = 0; a < 3; a++) s[a] = exp(log_scales[ns * j + (ns == 3 ? a : 0)]);
    if (!quats) {
        static const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        memcpy(R, I, sizeof I);
        return;
    }
    const float *q = quats + 4 * j;
    double u[4] = {q[0], q[1], q[2], q[3]}, nq = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2] + u[3] * u[3]);
    if (nq > 0)
        for (int k = 0; k < 4; k++) u[k] /= nq;
    base_unit_quat_to_mat3(u, R);
}

int gs_export_params(int64_t n, int sh_degree, int ns, const float *means, const float *log_scales,
                     const float *opacities, const float *sh_dc, const float *sh_rest, const float *quats,
                     DsGaussians *out) {
    int K = ds_gaussians_sh_count(sh_degree);
    if (ds_gaussians_alloc(out, n, sh_degree)) return -1;
    for (int64_t i = 0; i < n; i++) {
        memcpy(out->xyz + 3 * i, means + 3 * i, sizeof(float) * 3);
        memcpy(out->sh + (size_t)K * 3 * i, sh_dc + 3 * i, sizeof(float) * 3);
        if (sh_rest)
            memcpy(out->sh + (size_t)K * 3 * i + 3, sh_rest + (size_t)(K - 1) * 3 * i, sizeof(float) * 3 * (K - 1));
        out->opacity[i] = opacities[i];
        for (int a = 0; a < 3; a++) out->scale[3 * i + a] = log_scales[ns * i + (ns == 3 ? a : 0)];
        if (quats) memcpy(out->rot + 4 * i, quats + 4 * i, sizeof(float) * 4);
        else out->rot[4 * i] = 1, out->rot[4 * i + 1] = out->rot[4 * i + 2] = out->rot[4 * i + 3] = 0;
    }
    return 0;
}
