/* models/partmm/regress.h — learned baselines of issue 20 item 5(iii): MLP and GRU regressors from
 * local joint rotations R_J to bone transforms T_B, trained with anima's autograd and Adam (the
 * rest of models/partmm/ is PartMM itself; this file is only the regressors it is compared with).
 *
 * Data (frame-major, float):
 *   rot: F × J × 4 local joint quaternions (w x y z), any sign, need not be exactly unit;
 *   tb:  F × B × 12 bone transforms [R | T], row-major 3 × 4 (R in columns 0..2, T in column 3),
 *        the skelebones convention (models/skelebones/cluster.h).
 *
 * Input features: each quaternion is normalized and turned into its rotation matrix, and the
 * first two columns of that matrix (the "6D" representation of Zhou et al. 2019, "On the
 * continuity of rotation representations in neural networks") are the joint's 6 features. The
 * matrix is the same for q and −q, so the sign flips of quaternion tracks do not reach the
 * network, and the map SO(3) → 6D is continuous (raw quaternions are neither).
 *
 * Outputs: per bone 9 numbers, the first two columns of R (6D again) and T (translations
 * standardized by the training set's per-coordinate mean and one overall scale, so the loss
 * weighs rotation and translation comparably whatever the units). The training loss is the
 * mean squared error of those 9 numbers; prediction maps the 6D pair back to a rotation by
 * Gram–Schmidt (a = c₀/‖c₀‖, b = c₁ − (a·c₁)a normalized, third column a × b), so every
 * predicted R is orthonormal with det +1, and un-standardizes T.
 *
 * Temporal context: both models predict frame t from the `window` frames t−window+1 .. t (the
 * frames before 0 repeat frame 0), causal, so they could drive an interactive animation.
 *   MLP: the window's features concatenated (window · 6J) → `layers` hidden Linear+ReLU layers
 *        of width `hidden` → Linear → 9B.
 *   GRU: a `layers`-deep GRU of width `hidden` (nn/gru.h, PyTorch's equations) reads the
 *        window's frames in order from h₀ = 0; its last hidden state → Linear → 9B.
 * Training: `steps` Adam steps (optim/, learning rate `lr`, no decay) on minibatches of `batch`
 * frames drawn uniformly (with replacement) from the F training frames by a Philox stream of
 * `seed`; parameters initialized as PyTorch's from the same seed. f32 on the CPU. The result
 * is a deterministic function of (data, options): same seed, same weights and predictions. */
#ifndef ANIMA_MODELS_PARTMM_REGRESS_H
#define ANIMA_MODELS_PARTMM_REGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { PM_REGRESS_MLP, PM_REGRESS_GRU } PmRegressKind;

/* A field ≤ 0 (lr ≤ 0) takes its default: hidden 256, layers 2, window 7 (PartMM's patch
 * length p), steps 2000, batch 64, lr 1e-3. seed is used as given (0 is a seed like any other). */
typedef struct {
    PmRegressKind kind;
    int hidden, layers, window, steps, batch;
    float lr;
    uint64_t seed;
} PmRegressOptions;

typedef struct PmRegress PmRegress;

/* progress: called every few steps (and after the last) with the minibatch training loss;
 * return nonzero to stop training early (the model trained so far is returned). May be NULL. */
typedef int (*PmRegressProgressFn)(void *user, int step, int steps, double loss);

/* rot: F × J × 4 local joint quaternions (w x y z); tb: F × B × 12 bone transforms [R|T]
 * row-major. NULL with err on failure (bad sizes or options, a zero quaternion, non-finite
 * values). */
PmRegress *pm_regress_train(const float *rot, const float *tb, int F, int J, int B, const PmRegressOptions *o,
                            PmRegressProgressFn progress, void *user, char *err, size_t errlen);

/* rot: F × J × 4 (J as trained; F ≥ 1, any sequence, not only the training one) →
 * tb_out: F × B × 12, rotations orthonormal. 0, or -1 with err. */
int pm_regress_predict(const PmRegress *r, const float *rot, int F, float *tb_out, char *err, size_t errlen);

void pm_regress_free(PmRegress *r); /* NULL is fine */

#endif
