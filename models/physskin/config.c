/* models/physskin/config.c — PS_CONFIG_SCHEMA: defaults are the paper's sizes (PhysSkin++
 * §IV-A; Michelangelo's encoder) and physskin.md's choices; the presets override them. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

#define NO_RANGE .min = 1, .max = 0
#define M(f) offsetof(PsConfig, model.f) - offsetof(PsConfig, model)
#define D(f) offsetof(PsConfig, data.f) - offsetof(PsConfig, data)
#define L(f) offsetof(PsConfig, loss.f) - offsetof(PsConfig, loss)
#define O(f) offsetof(PsConfig, optim.f) - offsetof(PsConfig, optim)
#define T(f) offsetof(PsConfig, train.f) - offsetof(PsConfig, train)

static const char *const ACTS[] = {"gelu", "elu", "silu", "tanh", "softplus", NULL};
static const char *const DTYPES[] = {"f32", "f64", NULL};
static const char *const ENERGIES[] = {"neohookean", "linear", NULL};
static const char *const GRADS[] = {"fd", "exact", NULL};
static const char *const COMBINES[] = {"config", "sum", "mconfig", NULL};

static const DsConfigField MODEL[] = {
    {"latents", DS_CFG_INT, M(latents), "256", 1, 65536, .help = "M shape latents (paper 256)"},
    {"width", DS_CFG_INT, M(width), "768", 1, 65536, .help = "d (paper 768)"},
    {"heads", DS_CFG_INT, M(heads), "12", 1, 1024, .help = "attention heads (model.width must divide by it)"},
    {"layers", DS_CFG_INT, M(layers), "8", 0, 1024, .help = "self-attention blocks (paper 8)"},
    {"mlp_ratio", DS_CFG_INT, M(mlp_ratio), "4", 1, 64, .help = "transformer MLP width / model.width"},
    {"n_freqs", DS_CFG_INT, M(n_freqs), "8", 0, 32, .help = "Fourier frequencies K (8 -> 51 values)"},
    /* The paper's text does not state m (its figures show the modes, not the count); 16 is
     * our choice, between Simplicits' usual 10 and 20+. */
    {"handles", DS_CFG_INT, M(handles), "16", 1, 1024, .help = "m skinning handles"},
    {"head_hidden", DS_CFG_INT, M(head_hidden), "256", 1, 65536, .help = "ResNet head width"},
    {"head_blocks", DS_CFG_INT, M(head_blocks), "2", 0, 64, .help = "ResNet head residual blocks"},
    {"activation", DS_CFG_STRING, M(activation), "gelu", NO_RANGE, .size = 16, .choices = ACTS,
     .help = "head activation; smooth, since ∇W is taken through it"},
    {"oni", DS_CFG_BOOL, M(oni), "false", NO_RANGE, .help = "ONI on the head's last layer"},
    {"qkv_bias", DS_CFG_BOOL, M(qkv_bias), "false", NO_RANGE, .help = "biases on q/k/v (Michelangelo: none)"},
    {"dtype", DS_CFG_STRING, M(dtype), "f32", NO_RANGE, .size = 8, .choices = DTYPES, .help = "parameters' and activations' float type"},
    {0}};
static const DsConfigField DATA[] = {
    {"shapes", DS_CFG_INT, D(shapes), "1000", 1, 1e8, .help = "procedural corpus size"},
    {"mesh_res", DS_CFG_INT, D(mesh_res), "96", 16, 1024, .help = "procedural marching-cubes grid"},
    {"cubature_res", DS_CFG_INT, D(cubature_res), "128", 4, 1024, .help = "interior candidate grid (paper 128)"},
    {"pool_surface", DS_CFG_INT, D(pool_surface), "8192", 1, 1e8, .help = "surface samples kept per shape"},
    {"n_surface", DS_CFG_INT, D(n_surface), "4096", 1, 1e7, .help = "encoder points per shape (paper 4096)"},
    {"n_cubature", DS_CFG_INT, D(n_cubature), "1000", 2, 1e7, .help = "cubature points per shape per step"},
    {"surface_fraction", DS_CFG_FLOAT, D(surface_fraction), "0.25", 0, 1,
     .help = "share of cubature points drawn from the surface candidates"},
    {"n_z", DS_CFG_INT, D(n_z), "1024", 1, 1e7, .help = "z samples per shape per step (paper 1024)"},
    {0}};
static const DsConfigField LOSS[] = {
    {"youngs", DS_CFG_FLOAT, L(youngs), "1e5", 1e-12, 1e15, .help = "Young's modulus E of the potential energy (Pa)"},
    {"poisson", DS_CFG_FLOAT, L(poisson), "0.45", 0, 0.4999, .help = "Poisson's ratio of the potential energy"},
    {"lambda_plus_mu", DS_CFG_BOOL, L(lambda_plus_mu), "true", NO_RANGE,
     .help = "use λ+μ in stable neo-Hookean so its linearization has the Lamé λ"},
    {"energy", DS_CFG_STRING, L(energy), "neohookean", NO_RANGE, .size = 16, .choices = ENERGIES, .help = "elastic energy: stable neo-Hookean or linear"},
    {"z_sigma", DS_CFG_FLOAT, L(z_sigma), "0.1", 0, 1e6, .help = "z ~ N(0, z_sigma² I): the subspace coordinates sampled per step"},
    {"grad", DS_CFG_STRING, L(grad), "fd", NO_RANGE, .size = 8, .choices = GRADS,
     .help = "spatial derivatives of W: fd or exact (autograd)"},
    {"fd_delta", DS_CFG_FLOAT, L(fd_delta), "1e-3", 1e-12, 1, .help = "grad fd: the central differences' step on [-1, 1]³"},
    {"normalize", DS_CFG_BOOL, L(normalize), "true", NO_RANGE, .help = "column normalization (off: ablation)"},
    {"w_pot", DS_CFG_FLOAT, L(w_pot), "1", 0, 1e12, .help = "weight of the potential-energy term"},
    {"w_orth", DS_CFG_FLOAT, L(w_orth), "1", 0, 1e12, .help = "weight of the orthogonality term"},
    {"w_smooth", DS_CFG_FLOAT, L(w_smooth), "1", 0, 1e12, .help = "weight of the smoothness term"},
    {"w_comp", DS_CFG_FLOAT, L(w_comp), "0", 0, 1e12,
     .help = "weight of the rig-complementarity term L_comp (0: off; needs rigged shapes)"},
    {"rig_sigma", DS_CFG_FLOAT, L(rig_sigma), "0", 0, 10,
     .help = "softness of the procedural rigs' LBS weights at the cubature points (0: procedural.h's default)"},
    {"combine", DS_CFG_STRING, L(combine), "config", NO_RANGE, .size = 8, .choices = COMBINES,
     .help = "ConFIG, weighted sum (ablation) or M-ConFIG"},
    {0}};
static const DsConfigField OPTIM[] = {
    {"lr", DS_CFG_FLOAT, O(lr), "5e-4", 0, 10, .help = "peak (paper 5e-4)"},
    {"min_lr", DS_CFG_FLOAT, O(min_lr), "5e-5", 0, 10, .help = "cosine floor (paper 5e-5)"},
    {"warmup_frac", DS_CFG_FLOAT, O(warmup_frac), "0.01", 0, 1, .help = "warm-up share of steps (paper 1%)"},
    {"weight_decay", DS_CFG_FLOAT, O(weight_decay), "0.01", 0, 1, .help = "AdamW's decoupled weight decay"},
    {"beta1", DS_CFG_FLOAT, O(beta1), "0.9", 0, 0.999999, .help = "Adam's first-moment decay"},
    {"beta2", DS_CFG_FLOAT, O(beta2), "0.999", 0, 0.999999, .help = "Adam's second-moment decay"},
    {"eps", DS_CFG_FLOAT, O(eps), "1e-8", 0, 1, .help = "Adam's denominator epsilon"},
    {"clip", DS_CFG_FLOAT, O(clip), "1.0", 0, 1e9, .help = "max gradient norm (0: none)"},
    {0}};
static const DsConfigField TRAIN[] = {
    {"steps", DS_CFG_INT, T(steps), "100000", 1, 1e10, .help = "optimizer steps of the whole run"},
    {"batch", DS_CFG_INT, T(batch), "8", 1, 1e6, .help = "shapes per step (all ranks together)"},
    {"log_every", DS_CFG_INT, T(log_every), "50", 1, 1e9, .help = "steps between metrics.jsonl lines"},
    {"ckpt_every", DS_CFG_INT, T(ckpt_every), "1000", 0, 1e9, .help = "steps between checkpoints (0: only at the end)"},
    {0}};

const DsConfigField PS_CONFIG_SCHEMA[] = {
    {"seed", DS_CFG_INT, offsetof(PsConfig, seed), "0", 0, 9e15, .help = "seed of the parameters' init, the procedural corpus and the batches"},
    {"model", DS_CFG_OBJECT, offsetof(PsConfig, model), .fields = MODEL},
    {"data", DS_CFG_OBJECT, offsetof(PsConfig, data), .fields = DATA},
    {"loss", DS_CFG_OBJECT, offsetof(PsConfig, loss), .fields = LOSS},
    {"optim", DS_CFG_OBJECT, offsetof(PsConfig, optim), .fields = OPTIM},
    {"train", DS_CFG_OBJECT, offsetof(PsConfig, train), .fields = TRAIN},
    {0}};

int ps_config_validate(const PsConfig *c, char *err, size_t errlen) {
    if (c->model.width % c->model.heads) {
        snprintf(err, errlen, "model.width %lld is not divisible by model.heads %lld", (long long)c->model.width,
                 (long long)c->model.heads);
        return -1;
    }
    if (c->data.n_surface > c->data.pool_surface) {
        snprintf(err, errlen, "data.n_surface %lld exceeds data.pool_surface %lld", (long long)c->data.n_surface,
                 (long long)c->data.pool_surface);
        return -1;
    }
    if (c->loss.w_pot == 0 && c->loss.w_orth == 0 && c->loss.w_smooth == 0 && c->loss.w_comp == 0) {
        snprintf(err, errlen, "loss: every weight is 0");
        return -1;
    }
    return 0;
}

/* configs/physskin-small.json, verbatim (tests/test_physskin.c checks that the two agree) */
const char PS_CONFIG_SMALL_JSON[] =
    "{\n"
    "  \"seed\": 0,\n"
    "  \"model\": {\"latents\": 32, \"width\": 64, \"heads\": 4, \"layers\": 2, \"mlp_ratio\": 4, \"n_freqs\": 8,\n"
    "            \"handles\": 8, \"head_hidden\": 64, \"head_blocks\": 2, \"activation\": \"gelu\", \"oni\": false,\n"
    "            \"qkv_bias\": false, \"dtype\": \"f32\"},\n"
    "  \"data\": {\"shapes\": 64, \"mesh_res\": 40, \"cubature_res\": 24, \"pool_surface\": 2048,\n"
    "           \"n_surface\": 512, \"n_cubature\": 256, \"surface_fraction\": 0.25, \"n_z\": 64},\n"
    "  \"loss\": {\"youngs\": 1e5, \"poisson\": 0.45, \"lambda_plus_mu\": true, \"energy\": \"neohookean\",\n"
    "           \"z_sigma\": 0.1, \"grad\": \"fd\", \"fd_delta\": 1e-3, \"normalize\": true,\n"
    "           \"w_pot\": 1, \"w_orth\": 1, \"w_smooth\": 1, \"combine\": \"config\"},\n"
    "  \"optim\": {\"lr\": 5e-4, \"min_lr\": 5e-5, \"warmup_frac\": 0.01, \"weight_decay\": 0.01,\n"
    "            \"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-8, \"clip\": 1.0},\n"
    "  \"train\": {\"steps\": 1500, \"batch\": 4, \"log_every\": 20, \"ckpt_every\": 100}\n"
    "}\n";

int ps_config_load(PsConfig *c, const char *path, int nsets, const char *const *sets, char *err, size_t errlen) {
    return ps_config_load_text(c, path, NULL, nsets, sets, err, errlen);
}

int ps_config_load_text(PsConfig *c, const char *path, const char *text, int nsets, const char *const *sets,
                        char *err, size_t errlen) {
    int rc = text ? ds_config_parse(text, path ? path : "config", PS_CONFIG_SCHEMA, c, err, errlen)
         : path   ? ds_config_load(path, PS_CONFIG_SCHEMA, c, err, errlen)
                  : ds_config_parse(NULL, "defaults", PS_CONFIG_SCHEMA, c, err, errlen);
    for (int i = 0; i < nsets && rc == 0; i++) rc = ds_config_set(sets[i], PS_CONFIG_SCHEMA, c, err, errlen);
    return rc ? rc : ps_config_validate(c, err, errlen);
}
