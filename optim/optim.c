/* optim/optim.c — SGD, Adam and AdamW over the flat parameter/gradient buffers, the warm-up +
 * cosine schedule and global gradient-norm clipping. Every rule is written to match PyTorch
 * 1.13's torch.optim (single-tensor, non-fused path) operation for operation, so a trajectory
 * can be replayed against it (tests/test_optim.c, tests/oracle/make_optim_fixtures.py).
 *
 * This is a hot path (one pass over every parameter per training step): the fused in-place ops
 * of the op table (tensor_optim_sgd_, tensor_optim_adam_, tensor_gram, tensor_lincomb_), which
 * run the buffers' backend kernels (tensor/cpu/cpu_optim.c: OpenMP loops over the raw storage;
 * tensor/cuda/cuda_optim.cu: the same operations in the same order), so nothing is allocated or
 * recorded and parameters, gradients and moments never leave their device. The per-element
 * arithmetic is done in double and rounded once on store; for f64 buffers this is torch's f64
 * arithmetic, for f32 it is slightly more accurate than torch's f32 kernels. */
#include <math.h>
#include <string.h>

#include "optim.h"
#include "tensor/backend.h"

OptimConfig optim_defaults(OptimKind kind) {
    /* torch.optim.SGD: momentum 0, no weight decay (lr has no default there; 1e-3 here);
     * Adam: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0;
     * AdamW: the same with weight_decay 1e-2. */
    OptimConfig c = {.kind = kind, .lr = 1e-3, .momentum = 0, .nesterov = false,
                     .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0};
    if (kind == OPTIM_ADAMW) c.weight_decay = 1e-2;
    return c;
}

/* The flat buffers must be contiguous f32/f64 arrays: on the CPU for the loops below, or on a
 * device whose backend has the fused optimizer kernels. */
static void check_flat(const char *op, const Tensor *t, const char *what) {
    TensorDevice dev = tensor_device(t);
    if (dev != TENSOR_CPU) {
        const TensorBackend *be = tensor_backend_for(dev);
        if (!be->optim_sgd || !be->optim_adam || !be->gram || !be->lincomb)
            tensor_fail(op, "%s is on %s, whose backend has no optimizer kernels", what, be->name);
    }
    if (t->dtype != TENSOR_F32 && t->dtype != TENSOR_F64)
        tensor_fail(op, "%s has dtype %s; expected f32 or f64", what, tensor_dtype_name(t->dtype));
    if (!tensor_is_contiguous(t)) tensor_fail(op, "%s is not contiguous", what);
}

void optim_init(Optim *o, NnParams *p, const OptimConfig *cfg) {
    if (!p->packed) tensor_fail("optim_init", "parameters are not packed (call nn_params_pack first)");
    check_flat("optim_init", p->flat, "params->flat");
    check_flat("optim_init", p->flat_grad, "params->flat_grad");
    if (tensor_device(p->flat) != tensor_device(p->flat_grad))
        tensor_fail("optim_init", "params->flat and params->flat_grad are on different devices");
    memset(o, 0, sizeof *o);
    o->cfg = cfg ? *cfg : optim_defaults(OPTIM_ADAM);
    o->params = p;
    if (o->cfg.kind == OPTIM_SGD && o->cfg.nesterov && o->cfg.momentum <= 0)
        tensor_fail("optim_init", "Nesterov momentum requires momentum > 0"); /* as torch.optim.SGD */
    TensorScope *prev = tensor_scope_switch(p->scope);
    bool grad = tensor_grad_set_enabled(false);
    /* torch creates SGD's momentum buffer as a clone of the first d_p; with dampening 0 a zero
     * buffer gives the same first update (0·μ + d_p), so the state can be allocated up front.
     * The state lives where the parameters do (flat is 1-D, contiguous). */
    if (o->cfg.kind != OPTIM_SGD || o->cfg.momentum != 0) o->exp_avg = tensor_zeros_like(p->flat);
    if (o->cfg.kind != OPTIM_SGD) o->exp_avg_sq = tensor_zeros_like(p->flat);
    tensor_grad_set_enabled(grad);
    tensor_scope_switch(prev);
}

/* The update rules (tensor_optim_sgd_ / tensor_optim_adam_: the CPU's loops in
 * tensor/cpu/cpu_optim.c, the GPU's kernels in tensor/cuda/cuda_optim.cu):
 *
 * torch.optim.SGD (dampening 0):  d = g + λθ;  b = μb + d;  d = nesterov ? d + μb : b;
 * θ -= lr·d.
 *
 * torch.optim.Adam / AdamW (Kingma & Ba 2015, Alg. 1; Loshchilov & Hutter 2019, Alg. 2), in
 * torch's order of operations:
 *   AdamW: θ *= 1 − lr·λ                       (decoupled decay, before the moments)
 *   Adam:  g += λθ                              (L2 folded into the gradient)
 *   m = β1·m + (1−β1)·g;   v = β2·v + (1−β2)·g²
 *   denom = √v / √(1−β2^t) + ε;   θ −= (lr / (1−β1^t)) · m / denom
 * Note ε is added after the bias correction of √v, as torch does (not √(v̂ + ε)). */
void optim_step(Optim *o, double lr) {
    NnParams *p = o->params;
    const OptimConfig *c = &o->cfg;
    o->step++;
    TensorDevice dev = tensor_device(p->flat);
    if (tensor_device(p->flat_grad) != dev || (o->exp_avg && tensor_device(o->exp_avg) != dev))
        tensor_fail("optim_step", "parameters, gradients and optimizer state must share one device");
    if (c->kind == OPTIM_SGD) {
        tensor_optim_sgd_(p->flat, p->flat_grad, o->exp_avg, lr, c->momentum, c->nesterov, c->weight_decay);
        return;
    }
    double t = (double)o->step;
    double bc1 = 1 - pow(c->beta1, t), bc2 = 1 - pow(c->beta2, t);
    double step_size = lr / bc1, bc2_sqrt = sqrt(bc2);
    double l2 = c->kind == OPTIM_ADAM ? c->weight_decay : 0;
    double decay = c->kind == OPTIM_ADAMW ? 1 - lr * c->weight_decay : 1;
    tensor_optim_adam_(p->flat, p->flat_grad, o->exp_avg, o->exp_avg_sq, c->beta1, c->beta2, c->eps, l2, decay,
                       step_size, bc2_sqrt);
}

/* Linear warm-up, then half a cosine (Loshchilov & Hutter 2017, SGDR, without restarts):
 *   step < warmup:          peak · (step + 1) / warmup
 *   warmup ≤ step < total:  floor + (peak − floor) · ½ (1 + cos(π (step − warmup) / (total − warmup)))
 *   step ≥ total:           floor
 * `step` is the number of optimizer updates already taken, so the first update (step 0) uses
 * peak / warmup rather than 0. This is exactly what torch.optim.lr_scheduler.LambdaLR gives with
 * base lr = peak and lr_lambda(s) = optim_schedule_lr(s) / peak when scheduler.step() follows
 * each optimizer.step(): LambdaLR sets lr = base · lambda(last_epoch) with last_epoch = 0 at
 * construction and +1 per scheduler.step(). The peak is reached at step warmup − 1 and held for
 * step warmup (cosine at phase 0). */
double optim_schedule_lr(const OptimSchedule *s, int64_t step) {
    if (step < 0) step = 0;
    if (step < s->warmup) return s->peak * (double)(step + 1) / (double)s->warmup;
    if (step >= s->total) return s->floor;
    double phase = (double)(step - s->warmup) / (double)(s->total - s->warmup);
    return s->floor + (s->peak - s->floor) * 0.5 * (1 + cos(M_PI * phase));
}

/* torch.nn.utils.clip_grad_norm_ (norm_type 2): total = ‖g‖₂ over all parameters,
 * coef = max_norm / (total + 1e-6), and g *= coef only when coef < 1. Like torch with
 * error_if_nonfinite=False a non-finite norm is returned, not raised; unlike torch (which would
 * multiply by NaN) the gradient is then left as it is. */
double optim_clip_grad_norm(NnParams *p, double max_norm) {
    if (!p->packed) tensor_fail("optim_clip_grad_norm", "parameters are not packed (call nn_params_pack first)");
    Tensor *gt = p->flat_grad;
    check_flat("optim_clip_grad_norm", gt, "params->flat_grad");
    /* two passes on the buffer's device: Σg² (accumulated in double), then g ← coef·g in
     * double, rounded once */
    double ss;
    tensor_gram(1, &gt, &ss);
    double total = sqrt(ss);
    double coef = max_norm / (total + 1e-6);
    if (coef < 1) tensor_lincomb_(gt, 1, &coef, &gt);
    return total;
}
