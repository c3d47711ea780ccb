/* models/gs4d/config.h — the configuration of a gs4d run: the JSON file `anima gs4d fit --config`
 * reads (configs/gs4d-*.json) and RUN/config.json keeps, as one struct with its schema
 * (datasets/config.h: defaults, ranges, help), and the model configuration it makes. A program
 * that loads a run (models/gs4d/run.h) reads the same file through the same schema. */
#ifndef ANIMA_MODELS_GS4D_CONFIG_H
#define ANIMA_MODELS_GS4D_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "datasets/config.h"
#include "models/gs4d/gs4d.h"

/* train.recluster_bones at most (Skelebones' SB_MAX_BONES, which the program that installs the
 * LBG-VQ callback checks against it) */
#define GS4D_MAX_RECLUSTER 64

typedef struct {
    int64_t seed;
    struct {
        char dir[1024];
        int64_t size, frames, views, test_views;
    } data;
    struct {
        int64_t n, depth, width, skip, freq_x, freq_t, supersample, nodes, node_k, latent_dim;
        bool isotropic, deform_color, deform_opacity, node_table, root;
        double init_opacity, init_scale, head_init, dilation, node_radius;
        char trunk_init[16], deform[16], time[16];
    } model;
    struct {
        double lr_means, lr_means_final, lr_deform, lr_deform_final, lr_scales, lr_quats, lr_opacity, lr_color, lambda;
        double reg_opacity, reg_scale, reg_flat, silhouette, eps_deform, lr_nodes, lr_node_radius, lr_root;
    } optim;
    struct {
        int64_t iters, batch, turntable_frames, warmup, time_ramp, log_every, ckpt_every, densify_every, reset_every, knn_every, arap_k;
        int64_t redo_every, root_search;
        int64_t recluster_every, recluster_bones, recluster_frames;
        double refine_frac, prune_opacity, densify_grad, split_scale, arap_weight, table_smooth, ramp_front;
        bool random_background, ramp_schedule, warm_codes;
    } train;
} Gs4dRunConfig;

/* The schema of Gs4dRunConfig (ds_config_load / ds_config_to_json): sections seed, data, model,
 * optim, train; every key's default, range and help. */
extern const DsConfigField GS4D_RUN_SCHEMA[];

/* The model configuration of a run's config (gs4d_defaults() with the file's values). */
Gs4dConfig gs4d_run_model_config(const Gs4dRunConfig *c);

#endif
