/* optim/conflict_free.c — ConFIG and M-ConFIG (Liu, Chu, Thuerey 2024, "ConFIG: Towards Conflict-free
 * Training of Physics Informed Neural Networks", Eq. 3 and Alg. 2), per physskin.md §4:
 *   û_i = g_i / ‖g_i‖ (0 when g_i = 0);   x = Ûᵀ (ÛÛᵀ)⁺ 1;   ĝ = x / ‖x‖;   g = (Σ_i g_iᵀ ĝ) ĝ.
 * ĝ has the same projection 1/‖x‖ on every û_i, so the update decreases every loss at the same
 * rate to first order and never increases one of them.
 *
 * K (the number of losses) is small, so everything except two passes over the P-vectors is done
 * on the K×K Gram matrix G = ÛÛᵀ, in double:
 *   pass 1: all inner products g_i·g_j (one fused pass: tensor_gram);
 *   K-space: G = V Λ Vᵀ (LAPACK dsyev), G⁺ = Σ_{λ_k > cut} v_k v_kᵀ / λ_k, w = G⁺ 1,
 *            ‖x‖² = 1ᵀ G⁺ 1 = Σ (v_k·1)² / λ_k,   Σ_i g_i·x = Σ_i ‖g_i‖ (G w)_i;
 *   pass 2: out = c · Σ_i (w_i / ‖g_i‖) g_i  with c = (Σ_i g_i·x) / ‖x‖².
 * Writing out only in pass 2 (reading every g at index j before writing out[j]) lets out alias
 * one of the inputs. The two passes are the op table's gram and lincomb (the backend kernels of
 * the buffers' device: tensor/cpu/cpu_optim.c, tensor/cuda/cuda_optim.cu; double accumulation)
 * and the K-space step stays on the host. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "optim.h"
#include "tensor/backend.h"

#define OPTIM_CONFIG_MAX_K TENSOR_GRAM_MAX_K
/* Eigenvalues of G below this fraction of the largest are treated as zero. G's entries carry
 * rounding of order √P·ε from the dot products; its eigenvalues are the squared singular values
 * of Û, so this cut corresponds to singular values below 1e-5 of the largest (numpy/torch pinv
 * cut those of Û itself near P·ε, which the Gram cannot resolve). Directions that nearly
 * coincide are then merged, and exactly opposite gradients (no conflict-free direction) give 0. */
#define OPTIM_CONFIG_RCUT 1e-10

/* LAPACK (gfortran ABI: the two character arguments carry hidden lengths at the end). */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                   double *work, const int *lwork, int *info, size_t jobz_len, size_t uplo_len);

/* ConFIG of the effective gradients scale[i]·grads[i] (scale NULL: all 1); M-ConFIG passes its
 * bias corrections here so the corrected moments are never materialized. */
static void config_combine(const char *op, int k, Tensor *const *grads, const double *scale, Tensor *out) {
    if (k < 1 || k > OPTIM_CONFIG_MAX_K) tensor_fail(op, "k = %d; expected 1..%d", k, OPTIM_CONFIG_MAX_K);
    int64_t n = tensor_numel(out);
    TensorDevice dev = tensor_device(out);
    if (!tensor_is_contiguous(out) || (out->dtype != TENSOR_F64 && out->dtype != TENSOR_F32))
        tensor_fail(op, "out must be a contiguous f32/f64 tensor");
    for (int i = 0; i < k; i++) {
        const Tensor *g = grads[i];
        if (tensor_numel(g) != n || g->dtype != out->dtype || tensor_device(g) != dev || !tensor_is_contiguous(g)) {
            char b1[128], b2[128];
            tensor_fail(op, "gradient %d is %s %s; expected a contiguous %s tensor of %lld elements on out's device like out %s",
                        i, tensor_dtype_name(g->dtype), tensor_shape_str(g, b1), tensor_dtype_name(out->dtype),
                        (long long)n, tensor_shape_str(out, b2));
        }
    }

    /* pass 1: raw inner products, upper triangle packed row by row (tensor_gram) */
    double dot[OPTIM_CONFIG_MAX_K * (OPTIM_CONFIG_MAX_K + 1) / 2];
    tensor_gram(k, grads, dot);

    /* K-space: norms, Gram of the unit vectors, its eigendecomposition */
    double s[OPTIM_CONFIG_MAX_K], nrm[OPTIM_CONFIG_MAX_K], G[OPTIM_CONFIG_MAX_K * OPTIM_CONFIG_MAX_K];
    for (int i = 0; i < k; i++) s[i] = scale ? scale[i] : 1.0;
    for (int a = 0, q = 0; a < k; a++)
        for (int b = a; b < k; b++, q++)
            if (a == b) nrm[a] = fabs(s[a]) * sqrt(dot[q]);
    for (int a = 0, q = 0; a < k; a++)
        for (int b = a; b < k; b++, q++) {
            /* a zero gradient has û = 0: its row and column of G are 0 and the cut drops it */
            double gab = nrm[a] > 0 && nrm[b] > 0 ? s[a] * s[b] * dot[q] / (nrm[a] * nrm[b]) : 0;
            if (a == b && nrm[a] > 0) gab = 1; /* exactly, not dot/(√dot)² */
            G[a * k + b] = G[b * k + a] = gab;
        }
    double lam[OPTIM_CONFIG_MAX_K], work[64 * OPTIM_CONFIG_MAX_K];
    int kk = k, lwork = (int)(sizeof work / sizeof *work), info = 0;
    dsyev_("V", "U", &kk, G, &kk, lam, work, &lwork, &info, 1, 1);
    if (info != 0) tensor_fail(op, "dsyev failed (info %d) on the %dx%d Gram matrix", info, k, k);
    /* column c of G (column-major) is the eigenvector of lam[c], ascending */
    double lmax = lam[k - 1];
    double w[OPTIM_CONFIG_MAX_K] = {0}, Gw[OPTIM_CONFIG_MAX_K] = {0}, xx = 0;
    if (lmax > 0 && isfinite(lmax)) {
        for (int c = 0; c < k; c++) {
            if (!(lam[c] > OPTIM_CONFIG_RCUT * lmax)) continue;
            const double *vc = G + (size_t)c * (size_t)k;
            double v1 = 0;
            for (int i = 0; i < k; i++) v1 += vc[i];
            xx += v1 * v1 / lam[c];
            for (int i = 0; i < k; i++) {
                w[i] += vc[i] * v1 / lam[c]; /* G⁺ 1 */
                Gw[i] += vc[i] * v1;         /* G G⁺ 1: 1 projected on range(G) */
            }
        }
    }
    double proj = 0; /* Σ_i g_i·x */
    for (int i = 0; i < k; i++) proj += nrm[i] * Gw[i];
    double coef[OPTIM_CONFIG_MAX_K];
    bool zero = !(xx > 0) || !isfinite(xx) || !isfinite(proj);
    double cst = zero ? 0 : proj / xx;
    for (int i = 0; i < k; i++) coef[i] = nrm[i] > 0 && !zero ? cst * w[i] * s[i] / nrm[i] : 0;

    /* pass 2 (tensor_lincomb_: every g at index j is read before out[j] is written) */
    tensor_lincomb_(out, k, coef, grads);
}

void optim_config(int k, Tensor *const *grads, Tensor *out) { config_combine("optim_config", k, grads, NULL, out); }

void optim_mconfig_init(OptimMConfig *m, NnParams *p, int k, double beta1) {
    if (!p->packed) tensor_fail("optim_mconfig_init", "parameters are not packed (call nn_params_pack first)");
    if (k < 1 || k > OPTIM_CONFIG_MAX_K) tensor_fail("optim_mconfig_init", "k = %d; expected 1..%d", k, OPTIM_CONFIG_MAX_K);
    if (!(beta1 >= 0 && beta1 < 1)) tensor_fail("optim_mconfig_init", "beta1 = %g; expected [0, 1)", beta1);
    memset(m, 0, sizeof *m);
    m->k = k;
    m->beta1 = beta1;
    m->moment = base_calloc((size_t)k, sizeof *m->moment);
    m->count = base_calloc((size_t)k, sizeof *m->count);
    TensorScope *prev = tensor_scope_switch(p->scope);
    bool grad = tensor_grad_set_enabled(false);
    for (int i = 0; i < k; i++) m->moment[i] = tensor_zeros_like(p->flat); /* on the params' device */
    tensor_grad_set_enabled(grad);
    tensor_scope_switch(prev);
}

void optim_mconfig_free(OptimMConfig *m) {
    free(m->moment);
    free(m->count);
    memset(m, 0, sizeof *m);
}

/* M-ConFIG (Liu et al. 2024, Alg. 2): m_i = β1 m_i + (1 − β1) g_i for the one loss whose
 * gradient was computed this step; then ConFIG of the bias-corrected moments m_j / (1 − β1^{t_j})
 * of all losses (t_j: updates of m_j; a moment never updated counts as a zero gradient). The
 * paper's second moment is taken over the combined direction: feeding `out` to Adam with β1 = 0
 * (or AdamW) reproduces its update exactly. */
void optim_mconfig_update(OptimMConfig *m, int i, const Tensor *grad, Tensor *out) {
    if (i < 0 || i >= m->k) tensor_fail("optim_mconfig_update", "loss %d of %d", i, m->k);
    Tensor *mi = m->moment[i];
    int64_t n = tensor_numel(mi);
    if (tensor_numel(grad) != n || grad->dtype != mi->dtype || tensor_device(grad) != tensor_device(mi) ||
        !tensor_is_contiguous(grad))
        tensor_fail("optim_mconfig_update", "gradient must be a contiguous %s tensor of %lld elements on the moments' device",
                    tensor_dtype_name(mi->dtype), (long long)n);
    /* 0 + β1·m + (1−β1)·g in double, rounded once */
    Tensor *xs[2] = {mi, (Tensor *)grad};
    double b1 = m->beta1, cf[2] = {b1, 1 - b1};
    tensor_lincomb_(mi, 2, cf, xs);
    m->count[i]++;
    double scale[OPTIM_CONFIG_MAX_K];
    for (int j = 0; j < m->k; j++)
        scale[j] = m->count[j] > 0 ? 1 / (1 - pow(b1, (double)m->count[j])) : 0;
    config_combine("optim_mconfig_update", m->k, m->moment, scale, out);
}
