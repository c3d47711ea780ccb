/* models/physskin/config.h — the PhysSkin++ configuration (model sizes, data, PISSL losses,
 * optimizer, training) as one struct with its JSON schema (datasets/config.h). The presets are
 * configs/physskin-{paper,small,tiny}.json. Every choice the paper leaves open (docs/physskin.md
 * says which) is a key here, so ablations are config edits. */
#ifndef ANIMA_MODELS_PHYSSKIN_CONFIG_H
#define ANIMA_MODELS_PHYSSKIN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "datasets/config.h"

typedef struct {
    int64_t seed;
    struct {
        int64_t latents;     /* M, shape latent tokens (paper 256) */
        int64_t width;       /* d (paper 768) */
        int64_t heads;       /* paper 12 */
        int64_t layers;      /* L self-attention blocks after the cross-attention (paper 8) */
        int64_t mlp_ratio;   /* transformer MLP width / d (4) */
        int64_t n_freqs;     /* Fourier frequencies per coordinate K (8: 51 values) */
        int64_t handles;     /* m skinning handles */
        int64_t head_hidden; /* ResNet head width */
        int64_t head_blocks; /* ResNet head residual blocks */
        char activation[16]; /* ResNet head activation (smooth: ∇W is taken through it) */
        bool oni;            /* ONI on the head's last layer (physskin.md §6) */
        bool qkv_bias;       /* Michelangelo: no bias on q/k/v */
        char dtype[8];
    } model;
    struct {
        int64_t shapes;         /* procedural corpus size (procedural:<categories> only) */
        int64_t mesh_res;       /* procedural marching-cubes grid */
        int64_t cubature_res;   /* interior candidate grid (paper 128) */
        int64_t pool_surface;   /* surface samples kept per shape */
        int64_t n_surface;      /* encoder input points per shape per step (paper 4096) */
        int64_t n_cubature;     /* cubature points per shape per step (paper 1000) */
        double surface_fraction;/* share of the cubature points drawn from the surface samples */
        int64_t n_z;            /* z samples per shape per step (paper 1024) */
    } data;
    struct {
        double youngs, poisson;
        bool lambda_plus_mu;  /* λ ← λ + μ in the stable neo-Hookean (physskin.md §2) */
        char energy[16];      /* "neohookean" | "linear" */
        double z_sigma;       /* z ~ N(0, σ² I) (kaolin 0.1) */
        char grad[8];         /* ∇W: "fd" (central differences) | "exact" (autograd) */
        double fd_delta;      /* δ of the central differences on [-1,1]³ */
        bool normalize;       /* on-the-fly column normalization Ŵ (PISSL; off: ablation) */
        double w_pot, w_orth, w_smooth; /* 0 drops a term; weights only matter for "sum" */
        double w_comp;        /* rig complementarity L_comp (0: off; the shapes need rigs) */
        double rig_sigma;     /* softness of the procedural rig weights (procedural.h; 0: its default) */
        char combine[8];      /* "config" | "sum" | "mconfig" */
    } loss;
    struct {
        double lr, min_lr, warmup_frac, weight_decay, beta1, beta2, eps, clip;
    } optim;
    struct {
        int64_t steps, batch, log_every, ckpt_every;
    } train;
} PsConfig;

extern const DsConfigField PS_CONFIG_SCHEMA[];

/* Defaults, then the file (NULL: none), then each "k=v" override; 0 or -1 with err. */
int ps_config_load(PsConfig *c, const char *path, int nsets, const char *const *sets, char *err, size_t errlen);
/* The same with the config's JSON text given (text NULL: read path as ps_config_load does);
 * path then only names the text in messages. */
int ps_config_load_text(PsConfig *c, const char *path, const char *text, int nsets, const char *const *sets,
                        char *err, size_t errlen);
/* The small preset, configs/physskin-small.json's text built in: what `anima physskin train`
 * runs without --config (the schema's defaults are the paper's sizes, a multi-day run). */
extern const char PS_CONFIG_SMALL_JSON[];
/* Cross-field checks (width divisible by heads, n_surface ≤ pool, ...); 0 or -1 with err. */
int ps_config_validate(const PsConfig *c, char *err, size_t errlen);

#endif
