/* models/physskin/baseline.c — the per-object optimization baseline of eval.h: one small MLP
 * per shape, trained from scratch with the PISSL losses (Simplicits, Modi et al. 2024: a field
 * per object; PhysSkin++ §IV-C compares against it).
 *
 * Everything the generalizing model's training sees per step is reused: ps_batch_make draws
 * the cubature points (same surface/interior split, same V_c) and z from the same config, ∇W
 * is taken by central differences with the config's δ (or exactly, by autograd, when the config
 * says so), ps_losses gives the same three terms with the same normalization, and the terms are
 * combined as the config says (ConFIG by default), so the only difference is the network: a
 * per-shape MLP instead of the shape-conditioned decoder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "eval.h"
#include "losses.h"
#include "model.h"
#include "nn/modules.h"
#include "optim/optim.h"

PsBaselineOptions ps_baseline_defaults(void) {
    /* 4 frequencies (up to 8 periods over [-1,1]) rather than the decoder's 8: with no other
     * shapes to regularize it, a single field with 2^7-frequency inputs fits the sampled
     * cubature points' noise; the smoothness term then fights the inputs instead of shaping
     * the modes. Width and depth are Simplicits' scale (a few 64-wide layers). lr 1e-2: at a
     * budget of a few hundred steps Simplicits' 1e-3 is far from converged (on a held-out table,
     * 300 steps: orthogonality error 0.48 at 1e-3 vs 0.25 at 1e-2), and the budget is the point. */
    return (PsBaselineOptions){.steps = 300, .hidden = 64, .layers = 3, .n_freqs = 4, .lr = 1e-2, .seed = 0};
}

/* Fourier features (n_freqs > 0), then the MLP */
typedef struct {
    int n_freqs;
    NnStack mlp;
} Mlp;

static Tensor *mlp_forward(const Mlp *m, Tensor *x) {
    return nn_stack_forward(&m->mlp, m->n_freqs > 0 ? nn_fourier_embed(x, m->n_freqs) : x);
}

/* W and ∇W (B, Q, m, 3) at x (B, Q, 3): the decoder's two modes (model.h), for the MLP */
static void mlp_with_grad(const Mlp *m, Tensor *x, bool exact, double delta, Tensor **w, Tensor **gw) {
    int64_t B = x->shape[0], Q = x->shape[1];
    if (exact) {
        /* one backward per output column; m is small and the MLP cheap */
        Tensor *xr = tensor_requires_grad(tensor_clone(x), true);
        Tensor *wo = mlp_forward(m, xr);
        int64_t k = wo->shape[2];
        Tensor **g = base_malloc(sizeof *g * (size_t)k);
        for (int64_t j = 0; j < k; j++) {
            Tensor *s = tensor_sum_all(tensor_narrow(wo, 2, j, 1)), *gj = NULL;
            ag_grad(1, &s, NULL, 1, &xr, &gj, true);
            g[j] = gj ? gj : tensor_zeros_like(xr);
        }
        *w = wo;
        *gw = tensor_stack((int)k, g, 2); /* (B, Q, m, 3) */
        free(g);
        return;
    }
    Tensor *xs[7] = {x};
    for (int i = 0; i < 3; i++) {
        double e[3] = {0, 0, 0};
        e[i] = delta;
        Tensor *de = tensor_from_f64(TENSOR_SHAPE(1, 1, 3), x->dtype, e);
        xs[1 + 2 * i] = tensor_add(x, de);
        xs[2 + 2 * i] = tensor_sub(x, de);
    }
    Tensor *all = mlp_forward(m, tensor_cat(7, xs, 1));
    *w = tensor_narrow(all, 1, 0, Q);
    Tensor *g[3];
    for (int i = 0; i < 3; i++)
        g[i] = tensor_sub(tensor_narrow(all, 1, (1 + 2 * i) * Q, Q), tensor_narrow(all, 1, (2 + 2 * i) * Q, Q));
    *gw = tensor_mul_scalar(tensor_stack(3, g, -1), 0.5 / delta);
    (void)B;
}

void ps_baseline_fit(const PsShape *s, const PsConfig *c, const PsBaselineOptions *o, const float *x, int64_t nv,
                     float *w, double *loss, double *train_s) {
    int64_t k = c->model.handles;
    TensorScope *outer = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, outer, TENSOR_F32, o->seed);
    Mlp m = {.n_freqs = o->n_freqs};
    int64_t in = o->n_freqs > 0 ? nn_fourier_embed_dim(3, o->n_freqs) : 3;
    nn_stack_init(&m.mlp, &p, "mlp", in, o->hidden, k, (int)o->layers, ps_activation(c->model.activation));
    nn_params_pack(&p);
    OptimConfig oc = optim_defaults(OPTIM_ADAM);
    oc.lr = o->lr;
    Optim opt;
    optim_init(&opt, &p, &oc);
    OptimSchedule sched = {.peak = o->lr, .floor = 0.1 * o->lr, .warmup = 1, .total = o->steps};
    PsLossOptions lo = ps_loss_options(c);
    double wts[3] = {lo.w_pot, lo.w_orth, lo.w_smooth};
    int active[3], K = 0;
    for (int i = 0; i < 3; i++)
        if (wts[i] > 0) active[K++] = i;
    bool sum = !strcmp(c->loss.combine, "sum"), exact = !strcmp(c->loss.grad, "exact");
    /* the loader's PsData view of this one shape (ps_batch_make only reads it) */
    PsData one = {.total = 1, .begin = 0, .n = 1, .shapes = (PsShape *)s};
    int64_t idx0 = 0;
    double t0 = base_now();
    for (int64_t step = 0; step < o->steps; step++) {
        TensorScope *sc = tensor_scope_begin();
        TensorRng g = {.seed = o->seed, .stream = 0xba5e1ull, .offset = (uint64_t)step << 32};
        PsBatch b;
        ps_batch_make(&one, &idx0, 1, c, &g, TENSOR_F32, &b);
        Tensor *W, *gW;
        mlp_with_grad(&m, b.x, exact, c->loss.fd_delta, &W, &gW);
        PsLosses L;
        ps_losses(&lo, W, gW, b.x, b.v, b.z, &L);
        Tensor *terms[3] = {tensor_mul_scalar(L.pot, wts[0]), tensor_mul_scalar(L.orth, wts[1]),
                            tensor_mul_scalar(L.smooth, wts[2])};
        Tensor *total = ps_losses_total(&lo, &L);
        if (sum || K == 1) {
            nn_params_zero_grad(&p);
            ag_backward(total, NULL, false);
        } else { /* ConFIG (M-ConFIG checkpoints get plain ConFIG: one object, no need to save passes) */
            Tensor *gs[3];
            for (int i = 0; i < K; i++) {
                nn_params_zero_grad(&p);
                ag_backward(terms[active[i]], NULL, i + 1 < K);
                gs[i] = tensor_clone(p.flat_grad);
            }
            optim_config(K, gs, p.flat_grad);
        }
        optim_clip_grad_norm(&p, c->optim.clip > 0 ? c->optim.clip : INFINITY);
        optim_step(&opt, optim_schedule_lr(&sched, step));
        if (loss) loss[step] = tensor_item(total);
        tensor_scope_end(sc);
    }
    if (train_s) *train_s = base_now() - t0;
    /* the field at the requested points, in chunks (bounded activations) */
    bool prev = ag_no_grad_begin();
    for (int64_t s0 = 0; s0 < nv; s0 += 4096) {
        int64_t q = nv - s0 < 4096 ? nv - s0 : 4096;
        TensorScope *sc = tensor_scope_begin();
        Tensor *wt = mlp_forward(&m, tensor_from_data(TENSOR_SHAPE(1, q, 3), TENSOR_F32, x + 3 * s0));
        double *buf = tensor_scope_alloc(sc, sizeof(double) * (size_t)(q * k));
        tensor_to_f64_array(wt, buf);
        for (int64_t i = 0; i < q * k; i++) w[s0 * k + i] = (float)buf[i];
        tensor_scope_end(sc);
    }
    ag_no_grad_end(prev);
    nn_stack_free(&m.mlp);
    nn_params_free(&p);
    tensor_scope_end(outer);
}
