/* optim/optim.h — optimizers over a model's flat parameter and gradient buffers (nn/params.h):
 * SGD with momentum, Adam, AdamW (decoupled weight decay), the warm-up + cosine learning-rate
 * schedule, global gradient-norm clipping, and ConFIG / M-ConFIG for combining per-loss
 * gradients (docs/physskin.md §4). Update rules follow PyTorch's torch.optim so
 * trajectories can be compared step for step. */
#ifndef ANIMA_OPTIM_H
#define ANIMA_OPTIM_H

#include "nn/params.h"

typedef enum { OPTIM_SGD, OPTIM_ADAM, OPTIM_ADAMW } OptimKind;

typedef struct {
    OptimKind kind;
    double lr;           /* base rate; optim_step takes the scheduled one */
    double momentum;     /* SGD */
    bool nesterov;       /* SGD */
    double beta1, beta2; /* Adam/AdamW */
    double eps;
    double weight_decay; /* SGD/Adam: L2 added to the gradient; AdamW: decoupled */
} OptimConfig;

OptimConfig optim_defaults(OptimKind kind); /* PyTorch's defaults */

typedef struct {
    OptimConfig cfg;
    NnParams *params; /* must be packed */
    Tensor *exp_avg;    /* flat first moment (or SGD momentum buffer), in params->scope */
    Tensor *exp_avg_sq; /* flat second moment (Adam/AdamW) */
    int64_t step;       /* updates taken */
} Optim;

/* cfg NULL: Adam with PyTorch's defaults. The flat buffers must be contiguous f32/f64, on the CPU
 * or on a GPU (nn_params_mirror): the state is allocated beside them and optim_step,
 * optim_clip_grad_norm and ConFIG then run as device kernels with the CPU's arithmetic. */
void optim_init(Optim *o, NnParams *p, const OptimConfig *cfg);
/* One update of every parameter from params->flat_grad with learning rate lr (the scheduled
 * one; AdamW's decoupled decay uses it too, as torch's group['lr']). */
void optim_step(Optim *o, double lr);

/* Linear warm-up to peak over `warmup` steps, then cosine decay to `floor` at `total`:
 * peak·(step+1)/warmup for step < warmup, then floor + (peak−floor)·½(1 + cos(π(step−warmup)/
 * (total−warmup))), floor from `total` on. `step` = updates already taken, so this equals torch's
 * LambdaLR(base lr = peak, lambda = this / peak) with scheduler.step() after each optimizer.step(). */
typedef struct {
    double peak, floor;
    int64_t warmup, total;
} OptimSchedule;
double optim_schedule_lr(const OptimSchedule *s, int64_t step); /* step counts from 0 */

/* Scales the flat gradient so its l2 norm is at most max_norm; returns the norm before.
 * As torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied when < 1. */
double optim_clip_grad_norm(NnParams *p, double max_norm);

/* ConFIG (Liu et al. 2024, "ConFIG: Towards Conflict-free Training of Physics Informed Neural
 * Networks"): combine K flat gradients g_i (each of the params' numel) into one update
 * direction written to out, per physskin.md §4. 1 ≤ k ≤ 16; grads and out are contiguous
 * tensors of one dtype (f32/f64), numel and device; out may be one of the grads. A zero g_i takes no
 * part; when no direction exists (all zero, or exactly opposite pairs only) out is 0. */
void optim_config(int k, Tensor *const *grads, Tensor *out);

/* M-ConFIG: one loss per step (round-robin), per-loss first moments with Adam-style β1;
 * combine the bias-corrected moments with ConFIG (a loss not yet seen takes no part). State
 * lives in params->scope. The paper's update (Liu et al. 2024, Alg. 2) keeps the second moment
 * over the combined direction: feed out to Adam/AdamW with beta1 = 0. */
typedef struct {
    int k;
    double beta1;
    Tensor **moment;   /* k flat first moments */
    int64_t *count;    /* updates of each moment (bias correction) */
} OptimMConfig;
void optim_mconfig_init(OptimMConfig *m, NnParams *p, int k, double beta1);
void optim_mconfig_free(OptimMConfig *m);
/* Fold loss i's fresh gradient into its moment and write the combined direction to out. */
void optim_mconfig_update(OptimMConfig *m, int i, const Tensor *grad, Tensor *out);

#endif
