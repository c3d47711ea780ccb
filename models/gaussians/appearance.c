/* models/gaussians/appearance.c — the appearance of Gaussians at given positions (appearance.h) */
#include "base/rng.h"
#include "appearance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "datasets/geometry/geometry.h"
#include "loss.h"
#include "nn/params.h"
#include "optim/optim.h"
#include "rasterize.h"

GsAppearanceConfig gs_appearance_defaults(void) {
    return (GsAppearanceConfig){.steps = 2000, .normal_offset = false, .lr_offset = 1e-4, .lr_color = 0.01, .lr_scale = 0.005, .lr_opacity = 0.05, .lambda = 0.2,
                                .seed = 0, .background = {1, 1, 1}};
}


enum { COL, SCALE, OPAC, OFFSET, GROUPS };

void gs_appearance_vertex_normals(int64_t nv, const float *pos, int64_t nf, const int32_t *faces, float *out) {
    if (ds_vertex_normals(nv, pos, nf, faces, out)) memset(out, 0, sizeof(float) * nv * 3);
}

double gs_appearance_fit(int64_t n, int nv, const GsAppearanceView *views, const GsAppearanceConfig *cfg, float *colors,
                         float *log_scale, float *logit, float *offset, GsAppearanceProgress progress, int64_t every,
                         void *user, char *err, size_t errlen) {
    if (n < 1 || nv < 1 || !views || !cfg || cfg->steps < 0 || !colors || !log_scale || !logit || (cfg->normal_offset && !offset))
        return base_errf(err, errlen, "gs_appearance_fit: n %lld, %d views, %lld steps: need n >= 1, views >= 1, steps >= 0",
                         (long long)n, nv, cfg ? (long long)cfg->steps : -1LL);
    TensorScope *outer = tensor_scope_begin();
    NnParams p[GROUPS];
    Optim o[GROUPS];
    Tensor *t[GROUPS];
    const int64_t cols[GROUPS] = {3, 1, 1, 1};
    const char *names[GROUPS] = {"colors", "log_scales", "opacity_logits", "normal_offsets"};
    float *src[GROUPS] = {colors, log_scale, logit, offset};
    const double lr[GROUPS] = {cfg->lr_color, cfg->lr_scale, cfg->lr_opacity, cfg->lr_offset};
    const int ng = cfg->normal_offset ? GROUPS : OFFSET;
    for (int g = 0; g < ng; g++) {
        nn_params_init(&p[g], outer, TENSOR_F32, cfg->seed);
        t[g] = nn_param(&p[g], NULL, names[g], 2, (int64_t[]){n, cols[g]}, NN_INIT_ZEROS, 0);
        nn_params_pack(&p[g]);
        memcpy(tensor_f32(t[g]), src[g], sizeof(float) * n * cols[g]);
        OptimConfig oc = optim_defaults(OPTIM_ADAM);
        oc.lr = lr[g];
        oc.eps = 1e-15; /* as fit.c: single Gaussians' gradients are tiny */
        optim_init(&o[g], &p[g], &oc);
    }
    /* one view per step from a shuffled stack, reshuffled when it runs out (3DGS's order) */
    int *order = malloc(sizeof(int) * nv);
    int H = views[0].cam->height, W = views[0].cam->width;
    float *target = malloc(sizeof(float) * (size_t)H * W * 3);
    if (!order || !target) {
        free(order), free(target);
        for (int g = 0; g < ng; g++) nn_params_free(&p[g]);
        tensor_scope_end(outer);
        return base_errf(err, errlen, "gs_appearance_fit: out of memory");
    }
    uint64_t rs = cfg->seed ^ 0xa99ea7a9ceULL;
    int left = 0;
    double tail = 0, acc = 0;
    int64_t tail_n = 0, acc_n = 0, tail_from = cfg->steps - (cfg->steps < 100 ? cfg->steps : 100);
    int rc = 0;
    for (int64_t step = 0; step < cfg->steps; step++) {
        if (!left) {
            for (int i = 0; i < nv; i++) order[i] = i;
            for (int i = nv - 1; i > 0; i--) {
                int j = (int)(base_rng_next(&rs) % (uint64_t)(i + 1)), x = order[i];
                order[i] = order[j], order[j] = x;
            }
            left = nv;
        }
        const GsAppearanceView *v = &views[order[--left]];
        if (cfg->normal_offset && !v->normals) {
            rc = base_errf(err, errlen, "gs_appearance_fit: normal offsets need every view's normals");
            break;
        }
        if (v->cam->height != H || v->cam->width != W) {
            rc = base_errf(err, errlen, "gs_appearance_fit: views of %dx%d and %dx%d pixels", W, H, v->cam->width, v->cam->height);
            break;
        }
        for (int64_t q = 0; q < (int64_t)H * W; q++) {
            float a = v->rgba[q * 4 + 3];
            for (int c = 0; c < 3; c++) target[q * 3 + c] = v->rgba[q * 4 + c] * a + (1 - a) * (float)cfg->background[c];
        }
        TensorScope *s = tensor_scope_begin();
        Tensor *means = tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, v->means);
        if (cfg->normal_offset) /* mean + s_i × normal_i */
            means = tensor_add(means, tensor_mul(t[OFFSET], tensor_from_data(TENSOR_SHAPE(n, 3), TENSOR_F32, v->normals)));
        GsGaussians gg = {means, t[SCALE], NULL, t[OPAC], t[COL]};
        GsRenderOut r = gs_render(&gg, v->cam, cfg->background);
        Tensor *ref = tensor_from_data(TENSOR_SHAPE(H, W, 3), TENSOR_F32, target);
        Tensor *loss = gs_loss_photometric(r.image, ref, cfg->lambda);
        for (int g = 0; g < ng; g++) nn_params_zero_grad(&p[g]);
        ag_backward(loss, NULL, false);
        double lv = tensor_item(loss);
        for (int g = 0; g < ng; g++) optim_step(&o[g], lr[g]);
        tensor_scope_end(s);
        if (step >= tail_from) tail += lv, tail_n++;
        acc += lv, acc_n++;
        if (progress && every > 0 && (step + 1) % every == 0) {
            progress(step + 1, acc / acc_n, user);
            acc = 0, acc_n = 0;
        }
    }
    if (!rc)
        for (int g = 0; g < ng; g++) memcpy(src[g], tensor_f32(t[g]), sizeof(float) * n * cols[g]);
    free(order), free(target);
    for (int g = 0; g < ng; g++) nn_params_free(&p[g]);
    tensor_scope_end(outer);
    return rc ? -1 : tail_n ? tail / tail_n : 0;
}
