/* models/physskin/train.c — the PISSL training loop (train.h).
 *
 * Per step and rank: B_local shapes from this rank's shard (optim_data_order, a pure function
 * of (seed, rank, step)), every random draw from a Philox generator keyed by (seed, rank, step),
 * so --resume continues bit-identically without storing per-rank generator state. The per-loss
 * gradients g_pot, g_orth, g_smooth (and g_comp, the rig complementarity, when
 * loss.w_comp > 0) come from separate backward passes through one retained
 * graph, are averaged over the ranks (ConFIG is nonlinear: combine the global gradients, not
 * the local ones), then combined by ConFIG (physskin.md §4; Liu et al. 2024) — or summed with
 * the weights (the ablation), or M-ConFIG (one loss per step, round-robin). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "optim/comm.h"
#include "optim/train.h"
#include "train.h"

#define NAME "anima physskin train"

void ps_step_losses(const PsModel *m, const PsBatch *b, const PsConfig *c, PsLosses *out) {
    Tensor *fs = ps_encode(m, b->points, b->normals);
    Tensor *fh = ps_handles(m, fs);
    Tensor *w, *gw;
    ps_decode_with_grad(m, fh, b->x, !strcmp(c->loss.grad, "exact") ? PS_GRAD_EXACT : PS_GRAD_FD, c->loss.fd_delta,
                        &w, &gw);
    PsLossOptions o = ps_loss_options(c);
    ps_losses(&o, w, gw, b->x, b->v, b->z, out);
    if (o.w_comp > 0 && b->rig) out->comp = ps_loss_comp(&o, w, b->x, b->v, b->rig, NULL);
}

/* activations of a cross-attention block (pre-norm: LN, q/k/v, scores and softmax per head,
 * output projection, residual, LN, MLP with its activation, residual) for nq queries over nk keys */
static double cross_elems(double nq, double nk, double d, double hid, double heads) {
    return nq * d * 6 + nk * d * 3 + 2 * heads * nq * nk + nq * hid * 2;
}

PsMemEstimate ps_train_memory(const PsConfig *c, int64_t B, int64_t nshapes) {
    const double d = (double)c->model.width, hid = (double)(c->model.mlp_ratio * c->model.width);
    const double H = (double)c->model.heads, M = (double)c->model.latents, m = (double)c->model.handles;
    const double N = (double)c->data.n_surface, C = (double)c->data.n_cubature, Z = (double)c->data.n_z;
    const double hh = (double)c->model.head_hidden, hb = (double)c->model.head_blocks, L = (double)c->model.layers;
    const double pe = 3 + 6 * (double)c->model.n_freqs, es = !strcmp(c->model.dtype, "f64") ? 8 : 4;
    bool exact = !strcmp(c->loss.grad, "exact");
    /* per shape of the batch, forward values */
    double enc = N * (pe + 3 + pe + d) + cross_elems(M, N, d, hid, H) + L * cross_elems(M, M, d, hid, H) + M * d * 2;
    double handles = cross_elems(m, M, d, hid, H);
    double Q = exact ? m * C : 7 * C; /* decoded points: the FD stencil, or one replica per handle */
    double dec = Q * (3 + pe + d) + cross_elems(Q, m, d, hid, H) + Q * (d + pe) + Q * hh * (2 + 4 * hb) + Q * m;
    if (exact) dec *= 2; /* the graph of the derivatives is kept for the loss's backward */
    double loss = C * m * 12 * 3 + Z * 12 * m * 2 + Z * C * 9 * 14 + C * m * 8;
    /* kept values + their gradients + temporaries at the peak: 2.5x the forward values counted
     * here, from the growth of the peak RSS with the batch (Dec 2026, f32, FD gradients): tiny
     * preset 361 KB per shape (batch 1000 → 4000; this gives 331), small preset 54.6 MB (4 → 32;
     * this gives 56) */
    double step = 2.5 * (enc + handles + dec + loss) * es * (double)B;
    /* parameters: per attention block 4 d² + 2 d·hid, the projections and the head; ×4 with the
     * gradient and AdamW's two moments */
    double blocks = (L + 3) * (4 * d * d + 2 * d * hid + 8 * d);
    double P = blocks + (pe + 3) * d + pe * d + (M + m) * d + (d + pe) * hh + hb * 2 * hh * hh + hh * m;
    double params = P * es * 4;
    /* a prepared shape: its surface pool (points, normals) and interior candidates (at most the
     * cubature grid's cells), f32 */
    double r = (double)c->data.cubature_res;
    double data = (double)nshapes * 4 * ((double)c->data.pool_surface * 6 + r * r * r * 3);
    PsMemEstimate e = {.step = (int64_t)fmin(step, 9e18), .params = (int64_t)fmin(params, 9e18),
                       .data = (int64_t)fmin(data, 9e18)};
    e.total = (int64_t)fmin(step + params + data, 9e18);
    return e;
}

/* rank 0's state to every rank after a resume: parameters, moments, step counters */
static void sync_from_root(OptimComm *comm, NnParams *p, Optim *o, OptimTrain *tl) {
    optim_comm_broadcast(comm, p->flat, 0);
    if (o->exp_avg) optim_comm_broadcast(comm, o->exp_avg, 0);
    if (o->exp_avg_sq) optim_comm_broadcast(comm, o->exp_avg_sq, 0);
    Tensor *st = tensor_from_f64(TENSOR_SHAPE(2), TENSOR_F64, (double[]){(double)tl->step, (double)o->step});
    optim_comm_broadcast(comm, st, 0);
    tl->step = tl->start_step = (int64_t)tensor_get(st, (int64_t[]){0});
    o->step = (int64_t)tensor_get(st, (int64_t[]){1});
}

int ps_train(const PsTrainArgs *a) {
    const PsConfig *c = a->cfg;
    char err[8192];
    OptimComm *comm = optim_comm_init(a->cuda);
    int rank = optim_comm_rank(comm), size = optim_comm_size(comm);
    if (a->cuda && size > 1 && optim_comm_kind(comm) != OPTIM_COMM_NCCL) {
        /* the MPI path reduces host memory */
        if (rank == 0) base_logf(BASE_LOG_ERROR, NAME ": --device cuda on %d ranks needs NCCL, which did not start", size);
        optim_comm_finalize(comm);
        return 2;
    }
    TensorDType dt = !strcmp(c->model.dtype, "f64") ? TENSOR_F64 : TENSOR_F32;

    /* data: this rank's shard of the shapes */
    int64_t total, begin, end;
    if (ps_data_count(a->data, c, &total, err, sizeof err)) {
        if (rank == 0) base_logf(BASE_LOG_ERROR, NAME ": %s", err);
        optim_comm_finalize(comm);
        return 2;
    }
    if (total < size) {
        if (rank == 0) base_logf(BASE_LOG_ERROR, NAME ": %lld shapes for %d ranks", (long long)total, size);
        optim_comm_finalize(comm);
        return 2;
    }
    optim_comm_shard(comm, total, &begin, &end);
    int64_t B = c->train.batch / size;
    if (B < 1) B = 1;
    if (rank == 0 && B * size != c->train.batch)
        base_logf(BASE_LOG_WARN, NAME ": note: train.batch %lld over %d ranks: %lld shapes per rank per step",
                  (long long)c->train.batch, size, (long long)B);
    /* refused before any work when it cannot fit: the estimate of this rank's share against the
     * memory the machine has now (base/mem.h), rather than the OOM killer minutes in */
    int64_t avail = base_mem_check_enabled() ? base_mem_available() : -1;
    PsMemEstimate need = ps_train_memory(c, B, end - begin);
    bool too_big = avail >= 0 && need.total > avail;
    if (size > 1) too_big = optim_comm_allreduce_sum_scalar(comm, too_big) > 0;
    if (too_big) {
        char s0[32], s1[32], s2[32], s3[32], s4[32];
        if (rank == 0)
            base_logf(BASE_LOG_ERROR,
                      NAME ": this configuration needs about %s (a step's tensors for %lld shapes per step: %s; "
                           "parameters and optimizer state: %s; %lld prepared shapes: %s), more than the %s of "
                           "memory available; lower train.batch or data.n_cubature / data.n_surface / data.n_z "
                           "(ANIMA_MEM_CHECK=0 skips this check)",
                      base_mem_str(need.total, s0, sizeof s0), (long long)B, base_mem_str(need.step, s1, sizeof s1),
                      base_mem_str(need.params, s2, sizeof s2), (long long)(end - begin),
                      base_mem_str(need.data, s3, sizeof s3), base_mem_str(avail, s4, sizeof s4));
        optim_comm_finalize(comm);
        return 2;
    }
    double t0 = base_now();
    PsData data;
    int bad = ps_data_load_progress(&data, a->data, c, begin, end, rank == 0 ? a->data_progress : NULL,
                                    a->data_progress_user, err, sizeof err) != 0;
    if (size > 1) bad = optim_comm_allreduce_sum_scalar(comm, bad) > 0;
    if (bad) {
        base_logf(BASE_LOG_ERROR, NAME ": %s", err[0] ? err : "data failed on another rank");
        optim_comm_finalize(comm);
        return 1;
    }
    /* L_comp needs every shape's rig (ps_step_losses would silently leave the term out) */
    for (int64_t i = 0; !bad && c->loss.w_comp > 0 && i < data.n; i++)
        if (data.shapes[i].nbones == 0) {
            snprintf(err, sizeof err, "loss.w_comp > 0 needs rigged shapes; shape %lld of %s has no rig",
                     (long long)(begin + i), a->data);
            bad = 1;
        }
    if (size > 1) bad = optim_comm_allreduce_sum_scalar(comm, bad) > 0;
    if (bad) {
        base_logf(BASE_LOG_ERROR, NAME ": %s", err[0] ? err : "a shape without a rig on another rank");
        ps_data_free(&data);
        optim_comm_finalize(comm);
        return 1;
    }
    if (rank == 0 && a->progress) /* a status line of the display (train.h) */
        base_logf(BASE_LOG_INFO, NAME ": %lld shapes (%lld on rank 0) ready in %.1f s", (long long)total,
                  (long long)data.n, base_now() - t0);

    /* model and optimizer */
    NnParams params;
    nn_params_init(&params, tensor_scope_root(), dt, (uint64_t)c->seed);
    PsModel model;
    ps_model_init(&model, &params, c);
    nn_params_pack(&params);
    if (size > 1) optim_comm_broadcast(comm, params.flat, 0);
    /* the model keeps its Tensor headers; their storage moves (before the optimizer's state is made) */
    if (a->cuda) nn_params_move(&params, TENSOR_CUDA);
    bool mconfig = !strcmp(c->loss.combine, "mconfig"), sum = !strcmp(c->loss.combine, "sum");
    OptimConfig oc = optim_defaults(OPTIM_ADAMW);
    oc.lr = c->optim.lr, oc.weight_decay = c->optim.weight_decay, oc.eps = c->optim.eps;
    /* M-ConFIG keeps the first moments per loss itself (Liu et al. 2024, alg. 2) */
    oc.beta1 = mconfig ? 0.0 : c->optim.beta1, oc.beta2 = c->optim.beta2;
    Optim opt;
    optim_init(&opt, &params, &oc);
    int64_t warm = (int64_t)llround(c->optim.warmup_frac * (double)c->train.steps);
    OptimSchedule sched = {.peak = c->optim.lr, .floor = c->optim.min_lr, .warmup = warm > 0 ? warm : 1,
                           .total = c->train.steps};

    char ckpt[4200], log[4200];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt.h5", a->out_dir);
    snprintf(log, sizeof log, "%s/metrics.jsonl", a->out_dir);
    OptimTrainOptions to = {.name = NAME, .total_steps = c->train.steps, .log_every = c->train.log_every,
                            .ckpt_every = c->train.ckpt_every, .ckpt_path = rank == 0 ? ckpt : NULL,
                            .metrics_path = rank == 0 ? log : NULL, .config_json = a->cfg_json,
                            .resume = a->resume && rank == 0, .progress = rank == 0 ? a->progress : NULL,
                            .progress_user = a->progress_user,
                            .stop_after = rank == 0 ? a->stop_after : 0}; /* the others follow rank 0 */
    OptimTrain tl;
    bad = optim_train_init(&tl, &to, &params, &opt, (TensorRng){.seed = (uint64_t)c->seed, .stream = 3}, err,
                           sizeof err) != 0;
    if (size > 1) bad = optim_comm_allreduce_sum_scalar(comm, bad) > 0;
    if (bad) {
        if (rank == 0) base_logf(BASE_LOG_ERROR, NAME ": %s", err);
        ps_data_free(&data);
        ps_model_free(&model);
        nn_params_free(&params);
        optim_comm_finalize(comm);
        return 1;
    }
    if (a->resume && size > 1) sync_from_root(comm, &params, &opt, &tl);
    if (a->resume && rank == 0) {
        if (tl.resumed_config && a->cfg_json && strcmp(tl.resumed_config, a->cfg_json))
            base_logf(BASE_LOG_WARN, NAME ": note: the config differs from the one stored in %s; using the new one",
                      ckpt);
        base_logf(BASE_LOG_INFO, NAME ": resuming %s at step %lld", ckpt, (long long)tl.step);
    }

    PsLossOptions lo = ps_loss_options(c);
    double wts[4] = {lo.w_pot, lo.w_orth, lo.w_smooth, lo.w_comp};
    int active[4], K = 0;
    for (int i = 0; i < 4; i++)
        if (wts[i] > 0) active[K++] = i;
    OptimMConfig mc;
    if (mconfig) optim_mconfig_init(&mc, &params, K, c->optim.beta1);
    int64_t *idx = base_malloc(sizeof *idx * (size_t)B);
    double t_steps = 0;
    int64_t n_steps = 0;
    for (;;) {
        bool go = optim_train_next(&tl);
        /* every rank stops together (a signal may reach them in different steps) */
        if (size > 1) go = optim_comm_allreduce_sum_scalar(comm, go ? 1 : 0) == size;
        if (!go) break;
        double ts = base_now();
        TensorScope *s = tensor_scope_begin();
        optim_data_order((uint64_t)c->seed + 0x9e3779b97f4a7c15ull * (uint64_t)rank, tl.step, data.n, B, idx);
        TensorRng g = {.seed = (uint64_t)c->seed, .stream = 0x5053000ull + (uint64_t)rank,
                       .offset = (uint64_t)tl.step << 32};
        PsBatch batch;
        ps_batch_make(&data, idx, B, c, &g, dt, &batch);
        if (a->cuda) { /* drawn on the host (the same numbers as a CPU run), used on the device */
            Tensor **fields[6] = {&batch.points, &batch.normals, &batch.x, &batch.v, &batch.z, &batch.rig};
            for (int i = 0; i < 6; i++)
                if (*fields[i]) *fields[i] = tensor_to(*fields[i], TENSOR_CUDA);
        }
        PsLosses L;
        ps_step_losses(&model, &batch, c, &L);
        /* comp is set whenever w_comp > 0 (every shape has a rig: checked above) */
        Tensor *terms[4] = {tensor_mul_scalar(L.pot, wts[0]), tensor_mul_scalar(L.orth, wts[1]),
                            tensor_mul_scalar(L.smooth, wts[2]), L.comp ? tensor_mul_scalar(L.comp, wts[3]) : NULL};
        Tensor *total_loss = ps_losses_total(&lo, &L);
        if (sum) {
            nn_params_zero_grad(&params);
            optim_comm_backward(comm, &params, total_loss, false); /* all-reduce overlapped */
        } else if (mconfig) {
            int i = (int)(tl.step % K);
            nn_params_zero_grad(&params);
            optim_comm_backward(comm, &params, terms[active[i]], false);
            Tensor *gi = tensor_clone(params.flat_grad);
            optim_mconfig_update(&mc, i, gi, params.flat_grad);
        } else {
            Tensor *gs[4];
            for (int i = 0; i < K; i++) {
                nn_params_zero_grad(&params);
                /* each pass's temporaries in a scope of their own: the engine keeps none of them
                 * (it clears every grad_acc), so they go before the next pass instead of piling
                 * up until the step ends — the small preset's peak drops from ~900 to ~400 MB */
                TensorScope *bs = tensor_scope_begin();
                optim_comm_backward(comm, &params, terms[active[i]], i + 1 < K);
                tensor_scope_end(bs);
                gs[i] = tensor_clone(params.flat_grad);
            }
            if (K == 1) tensor_copy_(params.flat_grad, gs[0]);
            else optim_config(K, gs, params.flat_grad);
        }
        double gn = optim_clip_grad_norm(&params, c->optim.clip > 0 ? c->optim.clip : INFINITY);
        double lr = optim_schedule_lr(&sched, tl.step);
        optim_step(&opt, lr);
        double v[5] = {tensor_item(total_loss), tensor_item(L.pot), tensor_item(L.orth), tensor_item(L.smooth),
                       L.comp ? tensor_item(L.comp) : 0.0};
        if (size > 1)
            for (int i = 0; i < 5; i++) v[i] = optim_comm_allreduce_sum_scalar(comm, v[i]) / size;
        tensor_scope_end(s);
        double dts = base_now() - ts;
        t_steps += dts, n_steps++;
        OptimMetric ex[6] = {{"pot", v[1]}, {"orth", v[2]}, {"smooth", v[3]}, {"grad_norm", gn}, {"step_s", dts},
                             {"comp", v[4]}};
        optim_train_step_end(&tl, v[0], lr, lo.w_comp > 0 ? 6 : 5, ex);
    }
    free(idx);
    if (mconfig) optim_mconfig_free(&mc);
    bool done = tl.step >= c->train.steps;
    int rc = optim_train_finish(&tl);
    /* not after a failed final checkpoint: the line names a file that was not written */
    if (rc == 0 && rank == 0 && a->progress && n_steps > 0)
        base_logf(BASE_LOG_INFO, NAME ": %s at step %lld; %.3f s per step over %lld steps on %d rank(s); %s",
                  done ? "done" : "stopped", (long long)tl.step, t_steps / (double)n_steps, (long long)n_steps, size,
                  ckpt);
    ps_data_free(&data);
    ps_model_free(&model);
    nn_params_free(&params);
    optim_comm_finalize(comm);
    return rc;
}
