/* models/skelebones/ik.c — per-frame IK with autograd and Adam (ik.h). The objective is written
 * with tensor ops only, so its gradient is the tape's; the FK recursion is a short loop over
 * joints (parents first) building the global rotations and positions. */
#include "models/skelebones/ik.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/mat3.h"
#include "nn/params.h"
#include "optim/optim.h"

void sb_ik_defaults(SbIkOptions *o) {
    memset(o, 0, sizeof *o);
    o->steps = 150;
    o->lr = 0.03;
    o->lambda = 1.0;
}

void sb_ik_result_free(SbIkResult *r) {
    free(r->rotations), free(r->translation), free(r->positions), free(r->loss);
    memset(r, 0, sizeof *r);
}

static void quat_mat(const double *q, double *R) {
    double w = q[0], x = q[1], y = q[2], z = q[3], n = sqrt(w * w + x * x + y * y + z * z);
    if (!(n > 0)) w = 1, x = y = z = 0, n = 1;
    double u[4] = {w / n, x / n, y / n, z / n};
    base_unit_quat_to_mat3(u, R);
}

void sb_fk(const SbTree *tr, const double *rot, const double *trans, double *pos, double *global) {
    double *G = global ? global : malloc((size_t)tr->njoints * 9 * sizeof(double));
    for (int j = 0; j < tr->njoints; j++) {
        double L[9];
        quat_mat(rot + j * 4, L);
        int p = tr->parents[j];
        if (p < 0) {
            memcpy(G + j * 9, L, sizeof L);
            for (int c = 0; c < 3; c++) pos[j * 3 + c] = tr->joints[j * 3 + c] + trans[c];
        } else {
            base_mat3_mul(G + p * 9, L, G + j * 9);
            for (int r = 0; r < 3; r++) {
                double acc = pos[p * 3 + r];
                for (int c = 0; c < 3; c++) acc += G[p * 9 + r * 3 + c] * (tr->joints[j * 3 + c] - tr->joints[p * 3 + c]);
                pos[j * 3 + r] = acc;
            }
        }
    }
    if (!global) free(G);
}

/* (J × 4) quaternions → (J × 3 × 3) rotations, normalized first (so any non-zero q is valid) */
static Tensor *quat_to_mat_t(Tensor *q) {
    int64_t J = q->shape[0];
    Tensor *n = tensor_sqrt(tensor_sum(tensor_mul(q, q), 1, (int[]){1}, true));
    Tensor *qn = tensor_div(q, n);
    Tensor *w = tensor_narrow(qn, 1, 0, 1), *x = tensor_narrow(qn, 1, 1, 1), *y = tensor_narrow(qn, 1, 2, 1),
           *z = tensor_narrow(qn, 1, 3, 1);
#define SB_MUL(a, b) tensor_mul(a, b)
    Tensor *e[9] = {
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(SB_MUL(y, y), SB_MUL(z, z)), 2), 1),
        tensor_mul_scalar(tensor_sub(SB_MUL(x, y), SB_MUL(w, z)), 2),
        tensor_mul_scalar(tensor_add(SB_MUL(x, z), SB_MUL(w, y)), 2),
        tensor_mul_scalar(tensor_add(SB_MUL(x, y), SB_MUL(w, z)), 2),
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(SB_MUL(x, x), SB_MUL(z, z)), 2), 1),
        tensor_mul_scalar(tensor_sub(SB_MUL(y, z), SB_MUL(w, x)), 2),
        tensor_mul_scalar(tensor_sub(SB_MUL(x, z), SB_MUL(w, y)), 2),
        tensor_mul_scalar(tensor_add(SB_MUL(y, z), SB_MUL(w, x)), 2),
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(SB_MUL(x, x), SB_MUL(y, y)), 2), 1),
    };
#undef SB_MUL
    return tensor_reshape(tensor_cat(9, e, 1), 3, (int64_t[]){J, 3, 3});
}

typedef struct {
    const SbTree *tree;
    Tensor *X;     /* J × 3 rest joints (constant) */
    Tensor *Y;     /* M × 3 skeleton nodes of the frame (constant) */
    Tensor *U;     /* N × 3 rest points, or NULL */
    Tensor *Wt;    /* J × N × 1 weights */
    Tensor *V;     /* N × 3 observed */
    double lambda;
} IkFrame;

/* the objective of one frame as a graph of q (J × 4) and t (3); joints_out: the FK joints */
static Tensor *ik_loss(const IkFrame *f, Tensor *q, Tensor *t, Tensor **joints_out) {
    int J = f->tree->njoints;
    Tensor *R = quat_to_mat_t(q);
    Tensor **G = malloc((size_t)J * sizeof(Tensor *)), **P = malloc((size_t)J * sizeof(Tensor *));
    for (int j = 0; j < J; j++) {
        Tensor *L = tensor_reshape(tensor_narrow(R, 0, j, 1), 2, (int64_t[]){3, 3});
        Tensor *xj = tensor_reshape(tensor_narrow(f->X, 0, j, 1), 1, (int64_t[]){3});
        int p = f->tree->parents[j];
        if (p < 0) {
            G[j] = L;
            P[j] = tensor_add(xj, t);
        } else {
            G[j] = tensor_matmul(G[p], L);
            Tensor *xp = tensor_reshape(tensor_narrow(f->X, 0, p, 1), 1, (int64_t[]){3});
            P[j] = tensor_add(P[p], tensor_matmul(G[p], tensor_sub(xj, xp)));
        }
    }
    Tensor *Gs = tensor_stack(J, G, 0), *Ps = tensor_stack(J, P, 0); /* J × 3 × 3, J × 3 */
    free(G), free(P);
    if (joints_out) *joints_out = Ps;
    /* Chamfer: squared distances J × M */
    Tensor *diff = tensor_sub(tensor_unsqueeze(Ps, 1), tensor_unsqueeze(f->Y, 0));
    Tensor *d2 = tensor_sum(tensor_mul(diff, diff), 1, (int[]){2}, false);
    Tensor *loss = tensor_add(tensor_mean_all(tensor_min(d2, 1, (int[]){1}, false)),
                              tensor_mean_all(tensor_min(d2, 1, (int[]){0}, false)));
    if (f->U && f->lambda > 0) {
        /* S_j(u) = G_j u + (p_j − G_j x_j), blended by the weights */
        Tensor *A = tensor_matmul(tensor_unsqueeze(f->U, 0), tensor_transpose(Gs, 1, 2)); /* J × N × 3 */
        Tensor *Gx = tensor_matmul(Gs, tensor_unsqueeze(f->X, 2));                          /* J × 3 × 1 */
        Tensor *off = tensor_sub(Ps, tensor_reshape(Gx, 2, (int64_t[]){J, 3}));              /* J × 3 */
        Tensor *S = tensor_add(A, tensor_unsqueeze(off, 1));
        Tensor *pred = tensor_sum(tensor_mul(S, f->Wt), 1, (int[]){0}, false); /* N × 3 */
        Tensor *e = tensor_sub(pred, f->V);
        Tensor *pt = tensor_mean_all(tensor_sum(tensor_mul(e, e), 1, (int[]){1}, false));
        loss = tensor_add(loss, tensor_mul_scalar(pt, f->lambda));
    }
    return loss;
}

int sb_ik_solve(const SbTree *tree, int F, const double *nodes, const int64_t *off, int64_t N, const float *points,
                const float *weights, const float *observed, const SbIkOptions *o, SbIkResult *out, char *err,
                size_t errlen) {
    memset(out, 0, sizeof *out);
    int J = tree->njoints;
    if (J < 1 || F < 1) return base_errf(err, errlen, "IK: no joints or no frames (%d joints, %d frames)", J, F);
    if (J > SB_IK_MAX_JOINTS) return base_errf(err, errlen, "IK: %d joints, at most %d", J, SB_IK_MAX_JOINTS);
    for (int j = 0; j < J; j++)
        if (tree->parents[j] >= j || tree->parents[j] < -1)
            return base_errf(err, errlen, "IK: joint %d has parent %d (parents must come first; -1: the root)", j,
                             tree->parents[j]);
    for (int t = 0; t < F; t++)
        if (off[t + 1] <= off[t]) return base_errf(err, errlen, "IK: frame %d has no skeleton nodes", t);
    if (N > 0 && (!points || !weights || !observed)) return base_errf(err, errlen, "IK: points without weights or observations");
    out->nframes = F, out->njoints = J;
    out->rotations = malloc((size_t)F * J * 4 * sizeof(double));
    out->translation = malloc((size_t)F * 3 * sizeof(double));
    out->positions = malloc((size_t)F * J * 3 * sizeof(double));
    out->loss = malloc((size_t)F * sizeof(double));
    if (!out->rotations || !out->translation || !out->positions || !out->loss) {
        sb_ik_result_free(out);
        return base_errf(err, errlen, "IK: out of memory");
    }
    TensorScope *outer = tensor_scope_begin();
    NnParams p;
    nn_params_init(&p, outer, TENSOR_F64, 0);
    nn_param(&p, NULL, "rotations", 2, (int64_t[]){J, 4}, NN_INIT_ZEROS, 0);
    nn_param(&p, NULL, "translation", 1, (int64_t[]){3}, NN_INIT_ZEROS, 0);
    nn_params_pack(&p);
    Tensor *q = nn_params_find(&p, "rotations"), *tr = nn_params_find(&p, "translation");
    double *flat = tensor_f64(p.flat); /* rotations (J × 4) then translation (3) */
    for (int j = 0; j < J; j++) flat[j * 4] = 1;
    IkFrame fr = {tree, NULL, NULL, NULL, NULL, NULL, o->lambda};
    fr.X = tensor_from_f64(2, (int64_t[]){J, 3}, TENSOR_F64, tree->joints);
    double *buf = N > 0 ? malloc((size_t)N * (J > 3 ? J : 3) * sizeof(double)) : NULL;
    if (N > 0) {
        for (int64_t i = 0; i < N * 3; i++) buf[i] = points[i];
        fr.U = tensor_from_f64(2, (int64_t[]){N, 3}, TENSOR_F64, buf);
        for (int j = 0; j < J; j++)
            for (int64_t i = 0; i < N; i++) buf[j * N + i] = weights[i * J + j];
        fr.Wt = tensor_from_f64(3, (int64_t[]){J, N, 1}, TENSOR_F64, buf);
    }
    for (int t = 0; t < F; t++) {
        TensorScope *fs = tensor_scope_begin();
        Optim opt;
        OptimConfig cfg = optim_defaults(OPTIM_ADAM);
        cfg.lr = o->lr;
        optim_init(&opt, &p, &cfg); /* fresh moments per frame: each frame is its own problem */
        if (o->init_rotations && o->init_translation) {
            for (int k = 0; k < J * 4; k++) flat[k] = o->init_rotations[(size_t)t * J * 4 + k];
            for (int k = 0; k < 3; k++) flat[J * 4 + k] = o->init_translation[(size_t)t * 3 + k];
        }
        fr.Y = tensor_from_f64(2, (int64_t[]){off[t + 1] - off[t], 3}, TENSOR_F64, nodes + off[t] * 3);
        if (N > 0) {
            for (int64_t i = 0; i < N * 3; i++) buf[i] = observed[(size_t)t * N * 3 + i];
            fr.V = tensor_from_f64(2, (int64_t[]){N, 3}, TENSOR_F64, buf);
        }
        double last = 0;
        for (int s = 0; s <= o->steps; s++) {
            TensorScope *ss = tensor_scope_begin();
            bool grad = s < o->steps;
            bool prev = grad ? false : ag_no_grad_begin();
            Tensor *loss = ik_loss(&fr, q, tr, NULL);
            last = tensor_item(loss);
            if (grad) {
                nn_params_zero_grad(&p);
                ag_backward(loss, NULL, false);
                optim_step(&opt, o->lr);
            } else ag_no_grad_end(prev);
            tensor_scope_end(ss);
        }
        /* normalize the quaternions (the objective normalizes them; the stored ones are unit) */
        for (int j = 0; j < J; j++) {
            double *qq = flat + j * 4, n = sqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
            for (int k = 0; k < 4; k++) qq[k] /= n;
            if (qq[0] < 0)
                for (int k = 0; k < 4; k++) qq[k] = -qq[k];
        }
        memcpy(out->rotations + (size_t)t * J * 4, flat, (size_t)J * 4 * sizeof(double));
        memcpy(out->translation + (size_t)t * 3, flat + J * 4, 3 * sizeof(double));
        sb_fk(tree, out->rotations + (size_t)t * J * 4, out->translation + (size_t)t * 3, out->positions + (size_t)t * J * 3, NULL);
        out->loss[t] = last;
        tensor_scope_end(fs);
        if (o->progress && o->progress(o->user, t, F, last)) break;
    }
    free(buf);
    nn_params_free(&p);
    tensor_scope_end(outer);
    return 0;
}
