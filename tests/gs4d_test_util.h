/* tests/gs4d_test_util.h — pieces shared by gs4d's test files (defined in tests/test_gs4d.c). */
#ifndef ANIMA_TESTS_GS4D_TEST_UTIL_H
#define ANIMA_TESTS_GS4D_TEST_UTIL_H

#include <stdint.h>

#include "models/gs4d/gs4d.h"
#include "models/gs4d/synth.h"

/* the tiny preset the training tests use (500 Gaussians, MLP 4 × 32, warm-up a fifth of iters) */
Gs4dConfig gs4d_test_tiny_config(int64_t iters);
/* mean held-out PSNR of m over the synthetic sequence's test views (white background) */
double gs4d_test_eval(const Gs4dModel *m, const Gs4dSynth *s, const Gs4dData *dt);
/* cfg (its schedule set to 1500 steps, 30 with ANIMA_TEST_QUICK) trained on the tiny synthetic
 * sequence (32², 4 frames × 6 views): held-out PSNR ≥ 24 dB and ≥ 1 dB over the end of the
 * warm-up (quick: above the init); then after(model) when not NULL. what names the variant. */
void gs4d_test_tiny_sequence(const Gs4dConfig *cfg, const char *what, void (*after)(const Gs4dModel *));
/* c trained for total steps on a 2-frame × 4-view sequence, against the same stopped after stop
 * steps (a checkpoint) and resumed in a fresh model: every parameter and moment bit-identical */
void gs4d_test_resume_check(const Gs4dConfig *c, int64_t total, int64_t stop);

#endif
