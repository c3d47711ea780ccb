/* models/gaussians/fit.c — the 3DGS optimization loop, relocation of dead Gaussians, the
 * synthetic multi-view scene and the PLY export (see fit.h for the choices and their reasons). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/color.h"
#include "fit.h"
#include "loss.h"
#include "params.h"

#define SH_C0 0.28209479177387814 /* Y_0^0, gaussianimate.md §1 */

GsFitConfig gs_fit_defaults(void) {
    return (GsFitConfig){
        .n = 2000, .isotropic = false, .sh_degree = 0, .seed = 0,
        .init_opacity = 0.1, .init_scale = 0.5,
        /* Kerbl et al. 2023, arguments.py: position_lr_init/final 1.6e-4/1.6e-6 (× spatial_lr_scale),
         * position_lr_max_steps 30000, scaling 5e-3, rotation 1e-3, opacity 5e-2, feature 2.5e-3
         * with the higher SH bands at feature / 20 (gaussian_model.py) */
        .lr_means = 1.6e-4, .lr_means_final = 1.6e-6, .lr_means_steps = 30000,
        .lr_scales = 5e-3, .lr_quats = 1e-3, .lr_opacity = 5e-2, .lr_sh_dc = 2.5e-3, .lr_sh_rest = 2.5e-3 / 20,
        .lambda = GS_PHOTOMETRIC_LAMBDA,
        .sh_up_every = 1000,
        .relocate_every = 100, .refine_until = 1 << 30, .prune_opacity = 0.005,
        .reset_every = 0,
        .background = {1, 1, 1},
    };
}

/* ---- init / free ------------------------------------------------------------------------------- */

/* the optimizer of each group is made by gs_fit_init once the values are where they train */
static Tensor *group_param(GsFit *f, int g, const char *name, int ndim, const int64_t *shape, double lr, double *lrs) {
    NnParams *p = &f->group[g];
    nn_params_init(p, tensor_scope_current(), TENSOR_F32, f->cfg.seed);
    Tensor *t = nn_param(p, NULL, name, ndim, shape, NN_INIT_ZEROS, 0);
    nn_params_pack(p);
    lrs[g] = lr;
    f->used[g] = true;
    return t;
}

void gs_fit_init(GsFit *f, const GsFitConfig *cfg, const double lo[3], const double hi[3], double extent) {
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    f->extent = extent;
    f->rng = (TensorRng){.seed = cfg->seed, .stream = 0x6a5f};
    int64_t n = cfg->n, K = ds_gaussians_sh_count(cfg->sh_degree), ns = cfg->isotropic ? 1 : 3;
    if (n <= 0 || cfg->sh_degree < 0 || cfg->sh_degree > 3 || !(extent > 0))
        tensor_fail("gs_fit_init", "n = %lld, sh_degree = %d, extent = %g: need n > 0, degree 0..3, extent > 0",
                    (long long)n, cfg->sh_degree, extent);
    double lrs[GS_FIT_GROUPS] = {0};
    f->means = group_param(f, GS_FIT_MEANS, "means", 2, (int64_t[]){n, 3}, cfg->lr_means * extent, lrs);
    f->scales = group_param(f, GS_FIT_SCALES, "scales", 2, (int64_t[]){n, ns}, cfg->lr_scales, lrs);
    if (!cfg->isotropic) f->quats = group_param(f, GS_FIT_QUATS, "quats", 2, (int64_t[]){n, 4}, cfg->lr_quats, lrs);
    f->opacities = group_param(f, GS_FIT_OPACITY, "opacities", 2, (int64_t[]){n, 1}, cfg->lr_opacity, lrs);
    f->sh_dc = group_param(f, GS_FIT_SH_DC, "sh_dc", 3, (int64_t[]){n, 1, 3}, cfg->lr_sh_dc, lrs);
    if (K > 1)
        f->sh_rest = group_param(f, GS_FIT_SH_REST, "sh_rest", 3, (int64_t[]){n, K - 1, 3}, cfg->lr_sh_rest, lrs);

    TensorRng init_rng = {.seed = cfg->seed, .stream = 0x6a5e};
    GsDraw d = {.g = &init_rng};
    float *m = tensor_f32(f->means), *s = tensor_f32(f->scales), *o = tensor_f32(f->opacities);
    float *c = tensor_f32(f->sh_dc);
    double vol = 1;
    for (int a = 0; a < 3; a++) vol *= fmax(hi[a] - lo[a], 1e-6);
    /* the mean spacing of n uniform points; 3DGS takes the 3-NN distance of its init points */
    double s0 = log(cfg->init_scale * cbrt(vol / (double)n)), o0 = gs_logit(cfg->init_opacity);
    for (int64_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) m[3 * i + a] = (float)(lo[a] + (hi[a] - lo[a]) * gs_draw_u(&d));
        for (int a = 0; a < ns; a++) s[ns * i + a] = (float)s0;
        o[i] = (float)o0;
        for (int a = 0; a < 3; a++) c[3 * i + a] = (float)((gs_draw_u(&d) - 0.5) / SH_C0); /* rgb ~ U[0, 1] */
    }
    if (f->quats) {
        float *q = tensor_f32(f->quats);
        for (int64_t i = 0; i < n; i++) q[4 * i] = 1, q[4 * i + 1] = q[4 * i + 2] = q[4 * i + 3] = 0;
    }
    for (int g = 0; g < GS_FIT_GROUPS; g++) {
        if (!f->used[g]) continue;
        /* the headers f->means, ... keep pointing at the (moved) values */
        if (cfg->cuda) nn_params_move(&f->group[g], TENSOR_CUDA);
        OptimConfig oc = optim_defaults(OPTIM_ADAM);
        oc.lr = lrs[g];
        oc.eps = 1e-15; /* the 3DGS optimizer's eps: gradients of single Gaussians are tiny */
        optim_init(&f->optim[g], &f->group[g], &oc);
    }
}

/* ---- host copies of device state (cfg.cuda): the per-Gaussian edits below are host loops ---- */

/* h: f with every used group's values and Adam moments replaced by host copies (in the current
 * scope), the parameter headers by views of those copies */
static void host_copy(const GsFit *f, GsFit *h) {
    *h = *f;
    Tensor **hdr[GS_FIT_GROUPS] = {&h->means, &h->scales, &h->quats, &h->opacities, &h->sh_dc, &h->sh_rest};
    for (int g = 0; g < GS_FIT_GROUPS; g++) {
        if (!f->used[g]) continue;
        Tensor *flat = tensor_to(f->group[g].flat, TENSOR_CPU);
        h->group[g].flat = flat;
        *hdr[g] = tensor_view_at(flat, (*hdr[g])->ndim, (*hdr[g])->shape, 0);
        h->optim[g].exp_avg = tensor_to(f->optim[g].exp_avg, TENSOR_CPU);
        h->optim[g].exp_avg_sq = tensor_to(f->optim[g].exp_avg_sq, TENSOR_CPU);
    }
}

/* writes h's values, moments and draw counter back into f's device state */
static void host_write_back(GsFit *f, const GsFit *h) {
    TensorDevice dev = tensor_device(f->means);
    for (int g = 0; g < GS_FIT_GROUPS; g++) {
        if (!f->used[g]) continue;
        tensor_copy_(f->group[g].flat, tensor_to(h->group[g].flat, dev));
        tensor_copy_(f->optim[g].exp_avg, tensor_to(h->optim[g].exp_avg, dev));
        tensor_copy_(f->optim[g].exp_avg_sq, tensor_to(h->optim[g].exp_avg_sq, dev));
    }
    f->rng = h->rng;
    f->relocated = h->relocated;
}

static bool on_device(const GsFit *f) { return tensor_device(f->means) != TENSOR_CPU; }

void gs_fit_free(GsFit *f) {
    for (int g = 0; g < GS_FIT_GROUPS; g++)
        if (f->used[g]) nn_params_free(&f->group[g]);
    memset(f, 0, sizeof *f);
}

/* ---- forward ----------------------------------------------------------------------------------- */

static int active_degree(const GsFit *f) {
    if (f->cfg.sh_up_every <= 0) return f->cfg.sh_degree;
    int64_t d = f->step / f->cfg.sh_up_every;
    return d < f->cfg.sh_degree ? (int)d : f->cfg.sh_degree;
}

GsGaussians gs_fit_gaussians(const GsFit *f) {
    GsGaussians g = {.means = f->means, .scales = f->scales, .quats = f->quats, .opacities = f->opacities};
    int deg = active_degree(f);
    if (deg == 0) {
        g.colors = f->sh_dc;
    } else {
        /* the inactive bands get no gradient, so Adam leaves them at zero (m = v = 0) */
        Tensor *parts[2] = {f->sh_dc, tensor_narrow(f->sh_rest, 1, 0, ds_gaussians_sh_count(deg) - 1)};
        g.colors = tensor_cat(2, parts, 1);
    }
    return g;
}

double gs_fit_lr_means(const GsFit *f, int64_t step) {
    /* 3DGS get_expon_lr_func: log-linear from init to final over max_steps */
    double r = f->cfg.lr_means_steps > 0 ? (double)step / (double)f->cfg.lr_means_steps : 1;
    if (r > 1) r = 1;
    double a = f->cfg.lr_means * f->extent, b = f->cfg.lr_means_final * f->extent;
    if (!(a > 0) || !(b > 0)) return a;
    return exp((1 - r) * log(a) + r * log(b));
}

Tensor *gs_fit_render(const GsFit *f, const DsCamera *cam) {
    bool prev = ag_no_grad_begin();
    GsGaussians g = gs_fit_gaussians(f);
    Tensor *img = tensor_contiguous(gs_render(&g, cam, f->cfg.background).image);
    ag_no_grad_end(prev);
    return tensor_to(img, TENSOR_CPU);
}

/* ---- relocation and opacity reset --------------------------------------------------------------- */

/* zero the Adam moments of Gaussian i in every group (each group holds one (n, ...) parameter) */
static void zero_moments(GsFit *f, int64_t i) {
    for (int g = 0; g < GS_FIT_GROUPS; g++)
        if (f->used[g]) gs_rows_zero_moments(&f->optim[g], f->cfg.n, i);
}

static void copy_gaussian(GsFit *f, int64_t dst, int64_t src) {
    for (int g = 0; g < GS_FIT_GROUPS; g++)
        if (f->used[g]) gs_rows_copy(f->group[g].flat, f->cfg.n, dst, src);
}

static int64_t relocate_host(GsFit *f);

int64_t gs_fit_relocate(GsFit *f) {
    if (!on_device(f)) return relocate_host(f);
    TensorScope *s = tensor_scope_begin();
    GsFit h;
    host_copy(f, &h);
    int64_t moved = relocate_host(&h);
    if (moved) host_write_back(f, &h);
    f->relocated = moved;
    tensor_scope_end(s);
    return moved;
}

static int64_t relocate_host(GsFit *f) {
    int64_t n = f->cfg.n;
    float *o = tensor_f32(f->opacities);
    double *cdf = base_malloc(sizeof(double) * (size_t)n);
    int64_t *live = base_malloc(sizeof(int64_t) * (size_t)n), *dead = base_malloc(sizeof(int64_t) * (size_t)n);
    int *copies = base_calloc((size_t)n, sizeof(int));
    int64_t nl = 0, nd = 0;
    double acc = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = gs_sigmoid(o[i]);
        if (a < f->cfg.prune_opacity) dead[nd++] = i;
        else live[nl] = i, cdf[nl++] = acc += a;
    }
    if (nd == 0 || nl == 0) {
        free(cdf), free(live), free(dead), free(copies);
        return f->relocated = 0;
    }
    GsDraw d = {.g = &f->rng};
    int64_t *src = base_malloc(sizeof(int64_t) * (size_t)nd);
    for (int64_t k = 0; k < nd; k++) {
        /* a live Gaussian drawn in proportion to its opacity (3DGS-MCMC: multinomial on o) */
        int64_t pick = live[gs_draw_from_cdf(&d, cdf, nl, acc)];
        src[k] = pick;
        copies[pick]++;
    }
    float *mean = tensor_f32(f->means), *sc = tensor_f32(f->scales);
    float *q = f->quats ? tensor_f32(f->quats) : NULL;
    int ns = f->cfg.isotropic ? 1 : 3;
    for (int64_t k = 0; k < nd; k++) {
        int64_t i = dead[k], j = src[k];
        copy_gaussian(f, i, j);
        /* the copy sits at a point drawn from the source Gaussian, N(μ, Σ): a copy at μ itself
         * would get exactly the source's gradients and stay its twin forever */
        double z[3] = {gs_draw_n(&d), gs_draw_n(&d), gs_draw_n(&d)}, s[3], R[9];
        gs_gaussian_frame(sc, ns, q, j, s, R);
        for (int a = 0; a < 3; a++)
            mean[3 * i + a] += (float)(R[3 * a] * s[0] * z[0] + R[3 * a + 1] * s[1] * z[1] + R[3 * a + 2] * s[2] * z[2]);
        zero_moments(f, i);
    }
    /* 3DGS-MCMC also shrinks the scales of the pair (its Eq. 10) so the sum of the copies matches
     * the source exactly; they are kept here — the next steps correct the small difference. */
    for (int64_t k = 0; k < nl; k++) {
        int64_t j = live[k];
        if (!copies[j]) continue;
        /* 3DGS-MCMC's opacity rule: N copies of opacity 1 − (1 − o)^(1/N) stack to o */
        double a = gs_sigmoid(o[j]), an = 1 - pow(1 - a, 1.0 / (copies[j] + 1));
        if (an < f->cfg.prune_opacity) an = f->cfg.prune_opacity * 1.01; /* the copies must not die at once */
        o[j] = (float)gs_logit(an);
        zero_moments(f, j);
    }
    for (int64_t k = 0; k < nd; k++) o[dead[k]] = o[src[k]];
    free(cdf), free(live), free(dead), free(copies), free(src);
    return f->relocated = nd;
}

static void opacity_reset_host(GsFit *f);

static void opacity_reset(GsFit *f) {
    if (!on_device(f)) {
        opacity_reset_host(f);
        return;
    }
    TensorScope *s = tensor_scope_begin();
    GsFit h;
    host_copy(f, &h);
    opacity_reset_host(&h);
    host_write_back(f, &h);
    tensor_scope_end(s);
}

static void opacity_reset_host(GsFit *f) {
    /* 3DGS reset_opacity: o ← min(o, 0.01), and the optimizer state of opacity starts over */
    gs_opacity_reset(tensor_f32(f->opacities), f->cfg.n, &f->optim[GS_FIT_OPACITY]);
}

/* ---- one step ------------------------------------------------------------------------------- */

double gs_fit_step(GsFit *f, const DsCamera *cam, Tensor *target, const double background[3]) {
    TensorScope *s = tensor_scope_begin();
    GsGaussians g = gs_fit_gaussians(f);
    GsRenderOut r = gs_render(&g, cam, background ? background : f->cfg.background);
    if (tensor_device(target) != tensor_device(r.image)) target = tensor_to(target, tensor_device(r.image));
    Tensor *loss = gs_loss_photometric(r.image, target, f->cfg.lambda);
    for (int k = 0; k < GS_FIT_GROUPS; k++)
        if (f->used[k]) nn_params_zero_grad(&f->group[k]);
    ag_backward(loss, NULL, false);
    double lv = tensor_item(loss);
    for (int k = 0; k < GS_FIT_GROUPS; k++) {
        if (!f->used[k]) continue;
        double lr = k == GS_FIT_MEANS ? gs_fit_lr_means(f, f->step) : f->optim[k].cfg.lr;
        optim_step(&f->optim[k], lr);
    }
    tensor_scope_end(s);
    f->step++;
    f->relocated = 0;
    /* both stop at refine_until (3DGS: densify_until_iter, half the run), so the last steps
     * polish a fixed set instead of being measured right after a disruption */
    if (f->step > f->cfg.refine_until) return lv;
    if (f->cfg.relocate_every > 0 && f->step % f->cfg.relocate_every == 0) gs_fit_relocate(f);
    if (f->cfg.reset_every > 0 && f->step % f->cfg.reset_every == 0) opacity_reset(f);
    return lv;
}

double gs_fit_step_view(GsFit *f, const GsFitScene *s, int v) {
    if (!f->cfg.random_background) return gs_fit_step(f, &s->train[v], s->train_img[v], NULL);
    GsDraw d = {.g = &f->rng};
    double bg[3] = {gs_draw_u(&d), gs_draw_u(&d), gs_draw_u(&d)};
    TensorScope *sc = tensor_scope_begin();
    /* the targets are composited over white: rgb + (1 − α)(bg − 1) puts them over bg */
    Tensor *b = tensor_from_f64(1, (int64_t[]){3}, TENSOR_F32, (double[]){bg[0] - 1, bg[1] - 1, bg[2] - 1});
    Tensor *t = tensor_add(s->train_img[v], tensor_mul(tensor_rsub_scalar(s->train_alpha[v], 1.0), b));
    double loss = gs_fit_step(f, &s->train[v], t, bg);
    tensor_scope_end(sc);
    return loss;
}

/* ---- export and metrics ------------------------------------------------------------------------- */

static int export_host(const GsFit *f, DsGaussians *out);

int gs_fit_export(const GsFit *f, DsGaussians *out) {
    if (!on_device(f)) return export_host(f, out);
    TensorScope *s = tensor_scope_begin();
    GsFit h;
    host_copy(f, &h);
    int rc = export_host(&h, out);
    tensor_scope_end(s);
    return rc;
}

static int export_host(const GsFit *f, DsGaussians *out) {
    return gs_export_params(f->cfg.n, f->cfg.sh_degree, f->cfg.isotropic ? 1 : 3, tensor_f32(f->means),
                            tensor_f32(f->scales), tensor_f32(f->opacities), tensor_f32(f->sh_dc),
                            f->sh_rest ? tensor_f32(f->sh_rest) : NULL, f->quats ? tensor_f32(f->quats) : NULL, out);
}

double gs_psnr(const Tensor *img, const Tensor *ref) {
    int64_t n = tensor_numel(img);
    if (n != tensor_numel(ref) || n == 0) tensor_fail("gs_psnr", "images differ in size (%lld vs %lld)",
                                                      (long long)n, (long long)tensor_numel(ref));
    double *a = base_malloc(sizeof(double) * (size_t)n), *b = base_malloc(sizeof(double) * (size_t)n);
    tensor_to_f64_array(img, a);
    tensor_to_f64_array(ref, b);
    double se = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = a[i] < 0 ? 0 : a[i] > 1 ? 1 : a[i];
        se += (v - b[i]) * (v - b[i]);
    }
    free(a), free(b);
    double mse = se / (double)n;
    return mse > 0 ? 10 * log10(1 / mse) : INFINITY;
}

double gs_fit_eval(const GsFit *f, const GsFitScene *s, bool test) {
    int n = test ? s->n_test : s->n_train;
    const DsCamera *cams = test ? s->test : s->train;
    Tensor **ref = test ? s->test_img : s->train_img;
    double sum = 0;
    for (int v = 0; v < n; v++) {
        TensorScope *sc = tensor_scope_begin();
        sum += gs_psnr(gs_fit_render(f, &cams[v]), ref[v]);
        tensor_scope_end(sc);
    }
    return n ? sum / n : NAN;
}

/* ---- the synthetic scene ------------------------------------------------------------------------ */

DsRasterOptions gs_fit_raster_options(void) {
    DsRasterOptions o = ds_raster_options_default();
    o.light = DS_LIGHT_DIRECTIONAL;
    double l[3] = {0.4, 0.8, 0.45}, nl = sqrt(l[0] * l[0] + l[1] * l[1] + l[2] * l[2]);
    for (int a = 0; a < 3; a++) o.light_dir[a] = l[a] / nl;
    o.ambient = 0.35f, o.diffuse = 0.65f;
    o.supersample = 2;
    o.background[0] = o.background[1] = o.background[2] = 1;
    return o;
}

void gs_fit_vertex_colors(const DsMesh *m, const float *weights, int nbones, float *rgb) {
    if (weights && nbones > 0) {
        float *pal = base_malloc(sizeof(float) * 3 * (size_t)nbones);
        /* hues a golden angle apart, so neighboring bones differ clearly */
        for (int b = 0; b < nbones; b++) base_hsv_rgbf(0.618033988749895 * b + 0.08, 0.6, 0.9, pal + 3 * b);
        for (int64_t i = 0; i < m->nv; i++)
            for (int a = 0; a < 3; a++) {
                double c = 0;
                for (int b = 0; b < nbones; b++) c += weights[i * nbones + b] * pal[3 * b + a];
                rgb[3 * i + a] = (float)c;
            }
        free(pal);
        return;
    }
    /* by normal: the mesh's, or area-weighted face normals summed at the vertices */
    float *nrm = m->n;
    float *own = NULL;
    if (!nrm) {
        own = base_calloc((size_t)m->nv * 3 + 1, sizeof(float));
        for (int64_t t = 0; t < m->nf; t++) {
            const int32_t *f = m->f + 3 * t;
            if (f[0] < 0 || f[1] < 0 || f[2] < 0 || f[0] >= m->nv || f[1] >= m->nv || f[2] >= m->nv) continue;
            const float *a = m->v + 3 * f[0], *b = m->v + 3 * f[1], *c = m->v + 3 * f[2];
            float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
            float cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
            for (int k = 0; k < 3; k++)
                for (int a2 = 0; a2 < 3; a2++) own[3 * f[k] + a2] += cr[a2];
        }
        nrm = own;
    }
    for (int64_t i = 0; i < m->nv; i++) {
        const float *n = nrm + 3 * i;
        double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (int a = 0; a < 3; a++) rgb[3 * i + a] = (float)(0.5 + 0.45 * (l > 0 ? n[a] / l : 0));
    }
    free(own);
}

int gs_fit_scene_make(const DsMesh *m, int n_train, int n_test, int size, double fov_deg, const DsRasterOptions *opts,
                      GsFitScene *s, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    if (n_train < 1 || n_test < 0 || size < 8 || !(fov_deg > 1 && fov_deg < 170) || m->nv < 1) {
        snprintf(err, errlen, "gs fit scene: %d training and %d held-out views of %d px at %g° of a mesh of %lld "
                              "vertices: need ≥ 1 view, ≥ 0 held out, ≥ 8 px, fov in (1, 170), a non-empty mesh",
                 n_train, n_test, size, fov_deg, (long long)m->nv);
        return -1;
    }
    for (int a = 0; a < 3; a++) s->lo[a] = INFINITY, s->hi[a] = -INFINITY;
    for (int64_t i = 0; i < m->nv; i++)
        for (int a = 0; a < 3; a++) {
            double v = m->v[3 * i + a];
            if (!isfinite(v)) continue;
            if (v < s->lo[a]) s->lo[a] = v;
            if (v > s->hi[a]) s->hi[a] = v;
        }
    double c[3], r = 0;
    for (int a = 0; a < 3; a++) c[a] = 0.5 * (s->lo[a] + s->hi[a]);
    for (int64_t i = 0; i < m->nv; i++) {
        double d2 = 0;
        for (int a = 0; a < 3; a++) d2 += (m->v[3 * i + a] - c[a]) * (m->v[3 * i + a] - c[a]);
        if (isfinite(d2) && d2 > r * r) r = sqrt(d2);
    }
    if (!(r > 0)) {
        snprintf(err, errlen, "gs fit scene: the mesh has no extent");
        return -1;
    }
    /* the bounding sphere just fits the (square) field of view, with 5% to spare */
    double dist = 1.05 * r / sin(0.5 * fov_deg * M_PI / 180);
    s->extent = 1.1 * dist;
    int n = n_train + n_test;
    DsCamera *all = base_malloc(sizeof(DsCamera) * (size_t)n);
    s->train = base_malloc(sizeof(DsCamera) * (size_t)n_train);
    s->test = base_malloc(sizeof(DsCamera) * (size_t)(n_test ? n_test : 1));
    s->train_img = base_calloc((size_t)n_train, sizeof(Tensor *));
    s->train_alpha = base_calloc((size_t)n_train, sizeof(Tensor *));
    s->test_img = base_calloc((size_t)(n_test ? n_test : 1), sizeof(Tensor *));
    ds_camera_sphere(n, dist, c, size, size, fov_deg, all);
    /* held out: every (n / n_test)-th camera, offset by half a stride so the poles stay in training */
    int stride = n_test ? n / n_test : 0;
    for (int i = 0; i < n; i++) {
        bool held = n_test && i % stride == stride / 2 && s->n_test < n_test;
        if (held) s->test[s->n_test++] = all[i];
        else if (s->n_train < n_train) s->train[s->n_train++] = all[i];
        else s->test[s->n_test++] = all[i];
    }
    free(all);
    DsRasterOptions ro = opts ? *opts : gs_fit_raster_options();
    for (int a = 0; a < 3; a++) ro.background[a] = 1; /* train_alpha un-composites from white */
    for (int i = 0; i < n; i++) {
        bool tr = i < s->n_train;
        const DsCamera *cam = tr ? &s->train[i] : &s->test[i - s->n_train];
        DsRender rr;
        if (ds_raster_render(m, cam, &ro, &rr, err, errlen)) {
            gs_fit_scene_free(s);
            return -1;
        }
        Tensor *img = tensor_from_data(3, (int64_t[]){size, size, 3}, TENSOR_F32, rr.rgb);
        if (tr) {
            s->train_img[i] = img;
            s->train_alpha[i] = tensor_from_data(3, (int64_t[]){size, size, 1}, TENSOR_F32, rr.alpha);
        }
        else s->test_img[i - s->n_train] = img;
        ds_render_free(&rr);
    }
    return 0;
}

void gs_fit_scene_free(GsFitScene *s) {
    free(s->train), free(s->test), free(s->train_img), free(s->train_alpha), free(s->test_img);
    memset(s, 0, sizeof *s);
}
