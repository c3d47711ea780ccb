/* models/physskin/losses.c — PISSL (losses.h). */
#include <string.h>

#include "losses.h"

static Tensor *on(Tensor *t, const Tensor *like) {
    return tensor_device(like) != TENSOR_CPU ? tensor_to(t, tensor_device(like)) : t;
}

/* base_neohookean_psi (neohookean.h) on tensors */
Tensor *ps_psi_neohookean(Tensor *F, double mu, double lambda) {
    Tensor *ic = tensor_sum(tensor_mul(F, F), TENSOR_DIMS(-2, -1), false); /* tr FᵀF */
    Tensor *jm1 = tensor_add_scalar(tensor_det3(F), -1.0);
    Tensor *psi = tensor_mul_scalar(tensor_add_scalar(ic, -3.0), 0.5 * mu);
    psi = tensor_add(psi, tensor_mul_scalar(tensor_mul(jm1, jm1), 0.5 * lambda));
    return tensor_sub(psi, tensor_mul_scalar(jm1, mu));
}

Tensor *ps_psi_linear(Tensor *F, double mu, double lambda) {
    Tensor *eye = on(tensor_eye(3, F->dtype), F);
    Tensor *eps = tensor_sub(tensor_mul_scalar(tensor_add(F, tensor_transpose(F, -2, -1)), 0.5), eye);
    Tensor *tr = tensor_sum(tensor_mul(eps, eye), TENSOR_DIMS(-2, -1), false);
    Tensor *ee = tensor_sum(tensor_mul(eps, eps), TENSOR_DIMS(-2, -1), false);
    return tensor_add(tensor_mul_scalar(ee, mu), tensor_mul_scalar(tensor_mul(tr, tr), 0.5 * lambda));
}

Tensor *ps_deformation_gradient(Tensor *W, Tensor *grad_w, Tensor *X, Tensor *z) {
    char s1[128], s2[128], s3[128], s4[128];
    int64_t B = W->shape[0], C = W->shape[1], m = W->shape[2], Z = z->ndim == 3 ? z->shape[1] : 0;
    if (W->ndim != 3 || grad_w->ndim != 4 || X->ndim != 3 || z->ndim != 3 || grad_w->shape[0] != B ||
        grad_w->shape[1] != C || grad_w->shape[2] != m || grad_w->shape[3] != 3 || X->shape[0] != B ||
        X->shape[1] != C || X->shape[2] != 3 || z->shape[0] != B || z->shape[2] != 12 * m)
        tensor_fail("ps_deformation_gradient", "W %s, ∇W %s, X %s, z %s: need (B,C,m), (B,C,m,3), (B,C,3), (B,Z,12m)",
                    tensor_shape_str(W, s1), tensor_shape_str(grad_w, s2), tensor_shape_str(X, s3),
                    tensor_shape_str(z, s4));
    /* D[b, c, k, l, j] = Xh[b, c, l] ∂_j w_k + w_k δ_lj  (l < 3; row l = 3 has no δ) */
    Tensor *parts[2] = {X, on(tensor_ones(TENSOR_SHAPE(B, C, 1), X->dtype), X)};
    Tensor *xh = tensor_reshape(tensor_cat(2, parts, -1), TENSOR_SHAPE(B, C, 1, 4, 1));
    double e[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    Tensor *E = on(tensor_from_f64(TENSOR_SHAPE(4, 3), W->dtype, e), W);
    Tensor *D = tensor_add(tensor_mul(xh, tensor_unsqueeze(grad_w, 3)),
                           tensor_mul(tensor_reshape(W, TENSOR_SHAPE(B, C, m, 1, 1)), E)); /* (B, C, m, 4, 3) */
    D = tensor_reshape(tensor_permute(tensor_reshape(D, TENSOR_SHAPE(B, C, 4 * m, 3)), TENSOR_DIMS(0, 2, 1, 3)),
                       TENSOR_SHAPE(B, 4 * m, 3 * C));
    /* z[12k + 4i + l] = T_k[i, l] -> T'[(z, i), (k, l)] */
    Tensor *T = tensor_permute(tensor_reshape(z, TENSOR_SHAPE(B, Z, m, 3, 4)), TENSOR_DIMS(0, 1, 3, 2, 4));
    T = tensor_reshape(T, TENSOR_SHAPE(B, 3 * Z, 4 * m));
    Tensor *dF = tensor_reshape(tensor_matmul(T, D), TENSOR_SHAPE(B, Z, 3, C, 3));
    dF = tensor_permute(dF, TENSOR_DIMS(0, 1, 3, 2, 4));
    return tensor_add(dF, on(tensor_eye(3, W->dtype), W));
}

PsLossOptions ps_loss_options(const PsConfig *c) {
    PsLossOptions o = {.linear = !strcmp(c->loss.energy, "linear"), .normalize = c->loss.normalize,
                       .w_pot = c->loss.w_pot, .w_orth = c->loss.w_orth, .w_smooth = c->loss.w_smooth,
                       .w_comp = c->loss.w_comp};
    base_lame(c->loss.youngs, c->loss.poisson, c->loss.lambda_plus_mu, &o.mu, &o.lambda);
    return o;
}

void ps_normalize(Tensor *W, Tensor *grad_w, Tensor **w_hat, Tensor **grad_w_hat) {
    /* the tiny floor keeps a dead column (all zeros) finite; it is far below any live norm */
    Tensor *n = tensor_sqrt(tensor_add_scalar(tensor_sum(tensor_mul(W, W), TENSOR_DIMS(1), true), 1e-20));
    *w_hat = tensor_div(W, n);
    if (grad_w_hat) *grad_w_hat = tensor_div(grad_w, tensor_unsqueeze(n, -1));
}

void ps_losses(const PsLossOptions *o, Tensor *W, Tensor *grad_w, Tensor *X, Tensor *V, Tensor *z, PsLosses *out) {
    Tensor *wh = W, *gh = grad_w;
    if (o->normalize) ps_normalize(W, grad_w, &wh, &gh);
    int64_t m = W->shape[2];
    /* potential energy: Σ_c V_c Ψ(F_c(z)) per (shape, z), then the mean */
    Tensor *F = ps_deformation_gradient(wh, gh, X, z);
    Tensor *psi = o->linear ? ps_psi_linear(F, o->mu, o->lambda) : ps_psi_neohookean(F, o->mu, o->lambda);
    Tensor *e = tensor_sum(tensor_mul(psi, tensor_unsqueeze(V, 1)), TENSOR_DIMS(2), false); /* (B, Z) */
    out->pot = tensor_mean_all(e);
    /* orthogonality: (ŴᵀŴ − I)², mean over the m² entries and the shapes */
    Tensor *g = tensor_sub(tensor_matmul(tensor_transpose(wh, 1, 2), wh), on(tensor_eye(m, W->dtype), W));
    out->orth = tensor_mean_all(tensor_mul(g, g));
    /* smoothness: Dirichlet energy Σ_c V_c Σ_k |∇ŵ_k|² */
    Tensor *d = tensor_sum(tensor_mul(gh, gh), TENSOR_DIMS(2, 3), false); /* (B, C) */
    out->smooth = tensor_mean_all(tensor_sum(tensor_mul(d, V), TENSOR_DIMS(1), false));
    out->comp = NULL;
}

/* f (B, C, n) ⊗ [X;1] -> (B, C, 4n), column 4j + l = f_j · Xh_l */
static Tensor *times_xh(Tensor *f, Tensor *X) {
    int64_t B = f->shape[0], C = f->shape[1], n = f->shape[2];
    Tensor *parts[2] = {X, on(tensor_ones(TENSOR_SHAPE(B, C, 1), X->dtype), X)};
    Tensor *xh = tensor_unsqueeze(tensor_cat(2, parts, -1), 2); /* (B, C, 1, 4) */
    return tensor_reshape(tensor_mul(tensor_unsqueeze(f, -1), xh), TENSOR_SHAPE(B, C, 4 * n));
}

Tensor *ps_loss_comp(const PsLossOptions *o, Tensor *W, Tensor *X, Tensor *V, Tensor *R, Tensor **per_shape) {
    char s1[128], s2[128], s3[128], s4[128];
    int64_t B = W->shape[0], C = W->shape[1];
    if (W->ndim != 3 || X->ndim != 3 || V->ndim != 2 || R->ndim != 3 || X->shape[0] != B || X->shape[1] != C ||
        X->shape[2] != 3 || V->shape[0] != B || V->shape[1] != C || R->shape[0] != B || R->shape[1] != C)
        tensor_fail("ps_loss_comp", "W %s, X %s, V %s, R %s: need (B,C,m), (B,C,3), (B,C), (B,C,nb)",
                    tensor_shape_str(W, s1), tensor_shape_str(X, s2), tensor_shape_str(V, s3),
                    tensor_shape_str(R, s4));
    Tensor *wh = W;
    if (o->normalize) ps_normalize(W, NULL, &wh, NULL);
    Tensor *A = times_xh(R, X), *Bh = times_xh(wh, X); /* (B, C, 4nb), (B, C, 4m) */
    Tensor *Vc = tensor_unsqueeze(V, -1);
    Tensor *G = tensor_matmul(tensor_transpose(tensor_mul(A, Vc), 1, 2), Bh); /* (B, 4nb, 4m) */
    Tensor *g2 = tensor_sum(tensor_mul(G, G), TENSOR_DIMS(1, 2), false);
    /* ‖M^½J‖² = 3 Σ_c V_c Σ_(j,l) A², the same for B; ‖JᵀMB‖² = 3‖G‖²: ratio ‖G‖² / (3 a b) */
    Tensor *a = tensor_sum(tensor_mul(tensor_mul(A, A), Vc), TENSOR_DIMS(1, 2), false);
    Tensor *b = tensor_sum(tensor_mul(tensor_mul(Bh, Bh), Vc), TENSOR_DIMS(1, 2), false);
    /* the floor keeps a shape without bones (R = 0, so G = 0) at 0 instead of 0/0 */
    Tensor *r = tensor_div(g2, tensor_add_scalar(tensor_mul_scalar(tensor_mul(a, b), 3.0), 1e-30));
    if (per_shape) *per_shape = r;
    return tensor_mean_all(r);
}

Tensor *ps_losses_total(const PsLossOptions *o, const PsLosses *l) {
    Tensor *t = tensor_mul_scalar(l->pot, o->w_pot);
    t = tensor_add(t, tensor_mul_scalar(l->orth, o->w_orth));
    t = tensor_add(t, tensor_mul_scalar(l->smooth, o->w_smooth));
    return l->comp ? tensor_add(t, tensor_mul_scalar(l->comp, o->w_comp)) : t;
}
