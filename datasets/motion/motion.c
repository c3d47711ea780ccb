/* datasets/motion/motion.c — procedural gaits and gestures per category, and BVH retargeting onto
 * the humanoid rig (motion.h). Angles below are in degrees; a rotation "about x" is about the
 * world x axis of the rest pose (rig.h). The procedural characters face +z (humanoid: left is
 * +x) or +x (quadruped, bird, snake), y up, as procedural.c builds them. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/mat3.h"
#include "base/errbuf.h"
#include "datasets/motion/motion.h"
#include "datasets/motion/rig.h"

#define DEG (M_PI / 180.0)

void ds_motion_free(DsMotion *m) {
    if (!m) return;
    free(m->local);
    free(m->root);
    memset(m, 0, sizeof *m);
}

static int motion_alloc(DsMotion *m, const char *name, const char *source, int nframes, double fps, int nbones,
                        char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%.63s", name);
    snprintf(m->source, sizeof m->source, "%.511s", source);
    m->nframes = nframes, m->fps = fps, m->nbones = nbones, m->src_start = -1;
    m->local = malloc(sizeof(double) * 4 * (size_t)nframes * (size_t)(nbones + 1));
    m->root = calloc(3 * (size_t)nframes, sizeof(double));
    if (!m->local || !m->root) {
        ds_motion_free(m);
        return base_errf(err, errlen, "motion %s: out of memory", name);
    }
    for (int64_t i = 0; i < (int64_t)nframes * nbones; i++) ds_quat_identity(m->local + 4 * i);
    return 0;
}

/* ---- the catalogue ------------------------------------------------------------------------------ */

typedef struct {
    const char *category;
    const char *names[8]; /* the category's own, then the generic ones are added */
    const char *train, *heldout;
} Catalogue;

static const Catalogue CATALOGUE[] = {
    {"humanoid", {"cmu_01_01", "cmu_01_03", "boxing", "walk", "wave", NULL}, "cmu_01_01", "boxing"},
    {"quadruped", {"walk", "trot", NULL}, "walk", "trot"},
    {"bird", {"flap", "hop", NULL}, "flap", "hop"},
    {"snake", {"slither", "strike", NULL}, "slither", "strike"},
    {"lamp", {"nod", "hop", NULL}, "nod", "hop"},
};
#define NCAT_MOTION (int)(sizeof CATALOGUE / sizeof CATALOGUE[0])
static const char *const GENERIC[] = {"sway", "wiggle", "rest", "repertoire", "repertoire_unseen"};
#define NGENERIC (int)(sizeof GENERIC / sizeof GENERIC[0])

const char *const *ds_motion_names(const char *category, int *count) {
    static const char *lists[64][12];
    int ncat;
    const char *const *cats = ds_procedural_categories(&ncat);
    for (int c = 0; c < ncat && c < 64; c++) {
        if (strcmp(cats[c], category)) continue;
        int n = 0;
        for (int k = 0; k < NCAT_MOTION; k++)
            if (!strcmp(CATALOGUE[k].category, category))
                for (int i = 0; CATALOGUE[k].names[i]; i++) lists[c][n++] = CATALOGUE[k].names[i];
        for (int i = 0; i < NGENERIC; i++) lists[c][n++] = GENERIC[i];
        lists[c][n] = NULL;
        if (count) *count = n;
        return lists[c];
    }
    if (count) *count = 0;
    return NULL;
}

const char *ds_motion_default(const char *category, bool heldout) {
    for (int k = 0; k < NCAT_MOTION; k++)
        if (!strcmp(CATALOGUE[k].category, category)) return heldout ? CATALOGUE[k].heldout : CATALOGUE[k].train;
    return heldout ? "wiggle" : "sway";
}

/* ---- procedural motions --------------------------------------------------------------------------- */

typedef struct {
    const DsProceduralShape *s;
    DsMotion *m;
    int f;           /* the frame being written */
    uint64_t seed;
    uint64_t counter;
} Ctx;


/* a uniform in [lo, hi] from (seed, motion, draw index): the same for every frame */
static double U(uint64_t seed, const char *motion, int k, double lo, double hi) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = motion; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    uint64_t r = base_splitmix64(base_splitmix64(seed ^ h) + (uint64_t)k);
    return lo + (hi - lo) * ((double)(r >> 11) / 9007199254740992.0);
}

static int bone_index(const DsProceduralShape *s, const char *name) {
    for (int i = 0; i < s->nbones; i++)
        if (!strcmp(s->bones[i].name, name)) return i;
    return -1;
}

/* local(bone) ← rotation(axis, deg) · local(bone); a missing bone is skipped */
static void rot(Ctx *c, int bone, const double axis[3], double deg) {
    if (bone < 0 || deg == 0) return;
    double q[4], *L = c->m->local + 4 * ((size_t)c->f * c->m->nbones + bone);
    ds_quat_axis_angle(axis, deg * DEG, q);
    ds_quat_mul(q, L, L);
}
static void rotn(Ctx *c, const char *bone, const double axis[3], double deg) { rot(c, bone_index(c->s, bone), axis, deg); }

static const double AX[3] = {1, 0, 0}, AY[3] = {0, 1, 0}, AZ[3] = {0, 0, 1};

static void bone_dir(const DsProceduralShape *s, int b, double d[3]) {
    double n = 0;
    for (int k = 0; k < 3; k++) d[k] = (double)s->bones[b].tail[k] - s->bones[b].head[k], n += d[k] * d[k];
    n = sqrt(n);
    if (n > 0)
        for (int k = 0; k < 3; k++) d[k] /= n;
    else d[0] = 0, d[1] = 1, d[2] = 0;
}

/* two unit axes perpendicular to bone b: the first horizontal where possible */
static void bone_perp(const DsProceduralShape *s, int b, double a1[3], double a2[3]) {
    double d[3];
    bone_dir(s, b, d);
    double ref[3] = {0, 1, 0};
    if (fabs(d[1]) > 0.9) ref[0] = 1, ref[1] = 0;
    a1[0] = d[1] * ref[2] - d[2] * ref[1], a1[1] = d[2] * ref[0] - d[0] * ref[2], a1[2] = d[0] * ref[1] - d[1] * ref[0];
    double n = sqrt(a1[0] * a1[0] + a1[1] * a1[1] + a1[2] * a1[2]);
    for (int k = 0; k < 3; k++) a1[k] /= n;
    a2[0] = d[1] * a1[2] - d[2] * a1[1], a2[1] = d[2] * a1[0] - d[0] * a1[2], a2[2] = d[0] * a1[1] - d[1] * a1[0];
}

static double pos(double x) { return x > 0 ? x : 0; }
static double smooth01(double x) { return x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x); }

/* t: seconds; P: period factor; A: amplitude factor; ph: start phase (radians) */
static void humanoid_walk(Ctx *c, double t, double P, double A, double ph) {
    double phi = 2 * M_PI * t / (1.1 * P) + ph;
    double hip = 26 * A, knee = 48 * A, arm = 22 * A;
    rotn(c, "leg_l_upper", AX, -hip * sin(phi));
    rotn(c, "leg_r_upper", AX, hip * sin(phi));
    rotn(c, "leg_l_lower", AX, 5 + knee * pow(pos(cos(phi)), 2));
    rotn(c, "leg_r_lower", AX, 5 + knee * pow(pos(-cos(phi)), 2));
    rotn(c, "foot_l", AX, -12 * pos(cos(phi)));
    rotn(c, "foot_r", AX, -12 * pos(-cos(phi)));
    rotn(c, "arm_l_upper", AX, arm * sin(phi));
    rotn(c, "arm_r_upper", AX, -arm * sin(phi));
    rotn(c, "arm_l_lower", AX, -(15 + 12 * (1 + sin(phi)) / 2));
    rotn(c, "arm_r_lower", AX, -(15 + 12 * (1 - sin(phi)) / 2));
    rotn(c, "hips", AY, 6 * A * sin(phi));
    rotn(c, "spine", AY, -10 * A * sin(phi));
    rotn(c, "spine", AX, 4);
    rotn(c, "head", AY, 4 * sin(phi));
    rotn(c, "head", AX, -3 * sin(2 * phi));
    c->m->root[3 * c->f + 1] = 0.025 * A * cos(2 * phi) - 0.02;
}

/* the angle of an arm from straight down, in its vertical plane, for raising it sideways */
static double down_angle(const DsProceduralShape *s, int b) {
    if (b < 0) return 45;
    double d[3];
    bone_dir(s, b, d);
    return atan2(fabs(d[0]), -d[1]) / DEG;
}

static void humanoid_wave(Ctx *c, double t, double P, double A, double ph) {
    int ru = bone_index(c->s, "arm_r_upper");
    double raise = smooth01(t / (0.5 * P)), th = down_angle(c->s, ru);
    double w = 2 * M_PI * t / (0.7 * P) + ph;
    rot(c, ru, AZ, -raise * (135 - th));
    rotn(c, "arm_r_lower", AZ, raise * (-25 + 28 * A * sin(w)));
    rotn(c, "arm_l_upper", AZ, 4 * sin(0.5 * w));
    rotn(c, "arm_l_lower", AX, -10);
    rotn(c, "spine", AZ, 4 * raise * A * sin(0.5 * w));
    rotn(c, "head", AY, 12 * A * sin(0.25 * w));
    rotn(c, "head", AZ, -5 * raise);
    rotn(c, "hips", AY, 3 * sin(0.25 * w));
}

static void quadruped_gait(Ctx *c, double t, double P, double A, double ph, bool trot) {
    double T = (trot ? 0.62 : 1.0) * P, phi = 2 * M_PI * t / T + ph;
    static const char *up[4] = {"leg_fl_upper", "leg_fr_upper", "leg_bl_upper", "leg_br_upper"};
    static const char *lo[4] = {"leg_fl_lower", "leg_fr_lower", "leg_bl_lower", "leg_br_lower"};
    /* phase offsets (fraction of a cycle): the lateral-sequence walk puts each foot a quarter
     * after the one before (BL, FL, BR, FR); the trot moves diagonal pairs together */
    static const double walk_off[4] = {0.25, 0.75, 0.0, 0.5}, trot_off[4] = {0.0, 0.5, 0.5, 0.0};
    double amp = (trot ? 30 : 24) * A, knee = (trot ? 45 : 35) * A;
    for (int i = 0; i < 4; i++) {
        double psi = phi + 2 * M_PI * (trot ? trot_off[i] : walk_off[i]);
        rotn(c, up[i], AZ, amp * sin(psi));
        rotn(c, lo[i], AZ, -knee * pow(pos(cos(psi)), 2));
    }
    rotn(c, "spine", AX, (trot ? 4 : 2.5) * sin(phi));
    rotn(c, "neck", AZ, 6 * A * sin(2 * phi));
    rotn(c, "head", AZ, -4 * sin(2 * phi));
    rotn(c, "tail", AY, (trot ? 28 : 18) * A * sin(phi));
    rotn(c, "tail", AZ, trot ? 15 : 8);
    c->m->root[3 * c->f + 1] = (trot ? 0.035 : 0.02) * A * cos(2 * phi);
}

static void bird_flap(Ctx *c, double t, double P, double A, double ph) {
    double phi = 2 * M_PI * t / (0.5 * P) + ph;
    rotn(c, "wing_l_inner", AX, -45 * A * sin(phi));
    rotn(c, "wing_r_inner", AX, 45 * A * sin(phi));
    rotn(c, "wing_l_outer", AX, -30 * A * sin(phi - 0.7));
    rotn(c, "wing_r_outer", AX, 30 * A * sin(phi - 0.7));
    rotn(c, "tail", AZ, 6 * sin(phi));
    rotn(c, "head", AZ, -5 * sin(phi));
    rotn(c, "leg_l", AZ, -35);
    rotn(c, "leg_r", AZ, -35);
    rotn(c, "body", AZ, 3 * sin(phi));
    c->m->root[3 * c->f + 1] = -0.04 * A * sin(phi);
}

static void bird_hop(Ctx *c, double t, double P, double A, double ph) {
    double phi = 2 * M_PI * t / (0.8 * P) + ph, air = pos(sin(phi)), ground = pos(-sin(phi));
    c->m->root[3 * c->f + 1] = 0.16 * A * air;
    rotn(c, "leg_l", AZ, 20 * (1 - air));
    rotn(c, "leg_r", AZ, 20 * (1 - air));
    rotn(c, "wing_l_inner", AX, -(12 + 18 * A * air));
    rotn(c, "wing_r_inner", AX, 12 + 18 * A * air);
    rotn(c, "wing_l_outer", AX, -10 * air);
    rotn(c, "wing_r_outer", AX, 10 * air);
    rotn(c, "neck", AZ, -25 * A * ground * ground);
    rotn(c, "head", AZ, -15 * ground);
    rotn(c, "tail", AZ, 10 * sin(phi));
    rotn(c, "body", AZ, -6 * air);
}

static void snake_slither(Ctx *c, double t, double P, double A, double ph) {
    double phi = 2 * M_PI * t / (1.2 * P) + ph;
    for (int k = 0; k < 16; k++) {
        char name[16];
        snprintf(name, sizeof name, "body%d", k);
        rotn(c, name, AY, 16 * A * sin(phi - 0.9 * k));
    }
    rotn(c, "head", AY, -8 * sin(phi + 0.9));
}

static void snake_strike(Ctx *c, double t, double P, double A, double ph) {
    double T = 1.4 * P, u = t / T + ph / (2 * M_PI);
    u -= floor(u);
    double rise = 0.5 - 0.5 * cos(2 * M_PI * u), lunge = exp(-pow((u - 0.55) / 0.08, 2));
    rotn(c, "head", AZ, 30 * A * rise);
    rotn(c, "body0", AZ, -22 * A * rise);
    rotn(c, "body1", AZ, -10 * A * rise);
    for (int k = 2; k < 16; k++) {
        char name[16];
        snprintf(name, sizeof name, "body%d", k);
        rotn(c, name, AY, 10 * sin(2 * M_PI * u - 0.8 * k));
    }
    c->m->root[3 * c->f + 0] = -0.06 * rise + 0.18 * A * lunge;
    c->m->root[3 * c->f + 1] = 0.08 * A * rise;
}

/* a lamp bends its pole, arm(s) and shade about the horizontal axis across its reach */
static void lamp_motion(Ctx *c, double t, double P, double A, double ph, bool hop) {
    double phi = 2 * M_PI * t / ((hop ? 0.9 : 1.6) * P) + ph;
    int shade = bone_index(c->s, "shade");
    double ax[3] = {1, 0, 0};
    if (shade >= 0) {
        double d[3];
        for (int k = 0; k < 3; k++) d[k] = (double)c->s->bones[shade].head[k];
        d[1] = 0;
        /* across the reach: y × (horizontal direction to the shade) */
        double n = sqrt(d[0] * d[0] + d[2] * d[2]);
        if (n > 1e-6) ax[0] = d[2] / n, ax[1] = 0, ax[2] = -d[0] / n;
    }
    if (hop) {
        double air = pos(sin(phi)), ground = pos(-sin(phi));
        c->m->root[3 * c->f + 1] = 0.2 * A * air;
        rotn(c, "pole", ax, 14 * A * ground);
        rotn(c, "arm", ax, -10 * sin(phi));
        rotn(c, "arm_lower", ax, -10 * sin(phi));
        rotn(c, "shade", ax, 20 * A * sin(phi + 1));
    } else {
        rotn(c, "pole", ax, 12 * A * sin(phi));
        rotn(c, "arm", ax, 15 * A * sin(phi + 0.8));
        rotn(c, "arm_lower", ax, 12 * A * sin(phi + 0.8));
        rotn(c, "arm_upper", ax, -10 * A * sin(phi + 1.2));
        rotn(c, "shade", ax, 25 * A * sin(phi + 1.6));
        rotn(c, "base", AY, 10 * sin(0.5 * phi));
    }
}

/* every bone swings about axes perpendicular to it, later bones later in phase */
static void generic(Ctx *c, double t, double P, double A, double ph, bool wiggle) {
    double phi = 2 * M_PI * t / ((wiggle ? 0.75 : 1.3) * P) + ph;
    for (int b = 0; b < c->s->nbones; b++) {
        double a1[3], a2[3];
        bone_perp(c->s, b, a1, a2);
        if (c->s->bones[b].parent < 0) {
            rot(c, b, AY, (wiggle ? 12 : 8) * A * sin(phi));
            continue;
        }
        if (wiggle) {
            rot(c, b, a2, 18 * A * sin(1.0 * phi + 1.1 * b));
            rot(c, b, a1, 8 * A * sin(2.0 * phi + 0.5 * b));
        } else {
            rot(c, b, a1, 12 * A * sin(phi + 0.9 * b));
        }
    }
}

static int procedural(const DsProceduralShape *s, const char *name, int nframes, uint64_t seed, double fps,
                      DsMotion *out, char *err, size_t errlen) {
    const char *cat = s->category;
    int kind = -1;
    static const char *const kinds[] = {"humanoid:walk", "humanoid:wave", "quadruped:walk", "quadruped:trot",
                                        "bird:flap",     "bird:hop",      "snake:slither",  "snake:strike",
                                        "lamp:nod",      "lamp:hop"};
    char key[128];
    snprintf(key, sizeof key, "%s:%s", cat, name);
    for (int k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); k++)
        if (!strcmp(kinds[k], key)) kind = k;
    bool gen = !strcmp(name, "sway") || !strcmp(name, "wiggle") || !strcmp(name, "rest");
    if (kind < 0 && !gen) {
        char list[512] = "";
        const char *const *names = ds_motion_names(cat, NULL);
        for (int i = 0; names && names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
        return base_errf(err, errlen, "motion: unknown motion '%s' for %s (expected one of: %s, or a .bvh path)", name,
                         cat, list);
    }
    if (motion_alloc(out, name, "procedural", nframes, fps, s->nbones, err, errlen)) return -1;
    if (!strcmp(name, "rest")) return 0;
    double P = U(seed, name, 0, 0.9, 1.1), A = U(seed, name, 1, 0.85, 1.15), ph = U(seed, name, 2, 0, 2 * M_PI);
    Ctx c = {s, out, 0, seed, 0};
    for (int f = 0; f < nframes; f++) {
        c.f = f;
        double t = f / fps;
        switch (kind) {
        case 0: humanoid_walk(&c, t, P, A, ph); break;
        case 1: humanoid_wave(&c, t, P, A, ph); break;
        case 2: quadruped_gait(&c, t, P, A, ph, false); break;
        case 3: quadruped_gait(&c, t, P, A, ph, true); break;
        case 4: bird_flap(&c, t, P, A, ph); break;
        case 5: bird_hop(&c, t, P, A, ph); break;
        case 6: snake_slither(&c, t, P, A, ph); break;
        case 7: snake_strike(&c, t, P, A, ph); break;
        case 8: lamp_motion(&c, t, P, A, ph, false); break;
        case 9: lamp_motion(&c, t, P, A, ph, true); break;
        default: generic(&c, t, P, A, ph, !strcmp(name, "wiggle")); break;
        }
    }
    return 0;
}

/* ---- BVH retargeting ------------------------------------------------------------------------------ */

typedef struct {
    const char *bone;
    const char *src[2][2]; /* (joint, reference joint) in the CMU names, then the Boxing_Toes names */
} MapEntry;

static const MapEntry MAP[] = {
    {"hips", {{"Hips", "Spine"}, {"Hips", "Ab"}}},
    {"spine", {{"Spine1", "Neck1"}, {"Chest", "Neck"}}},
    {"neck", {{"Neck1", "Head"}, {"Neck", "Head"}}},
    {"head", {{"Head", "Head_end"}, {"Head", "Head_end"}}},
    {"arm_l_upper", {{"LeftArm", "LeftForeArm"}, {"LeftShoulder", "LeftElbow"}}},
    {"arm_l_lower", {{"LeftForeArm", "LeftHand"}, {"LeftElbow", "LeftWrist"}}},
    {"arm_r_upper", {{"RightArm", "RightForeArm"}, {"RightShoulder", "RightElbow"}}},
    {"arm_r_lower", {{"RightForeArm", "RightHand"}, {"RightElbow", "RightWrist"}}},
    {"leg_l_upper", {{"LeftUpLeg", "LeftLeg"}, {"LeftHip", "LeftKnee"}}},
    {"leg_l_lower", {{"LeftLeg", "LeftFoot"}, {"LeftKnee", "LeftAnkle"}}},
    {"foot_l", {{"LeftFoot", "LeftToeBase"}, {"LeftAnkle", "LeftToes"}}},
    {"leg_r_upper", {{"RightUpLeg", "RightLeg"}, {"RightHip", "RightKnee"}}},
    {"leg_r_lower", {{"RightLeg", "RightFoot"}, {"RightKnee", "RightAnkle"}}},
    {"foot_r", {{"RightFoot", "RightToeBase"}, {"RightAnkle", "RightToes"}}},
};
#define NMAP (int)(sizeof MAP / sizeof MAP[0])

static int bvh_joint(const DsBvh *b, const char *name) {
    for (int j = 0; j < b->njoints; j++)
        if (!strcmp(b->joints[j].name, name)) return j;
    return -1;
}

static void rot_of(const double *W, double R[9]) {
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) R[3 * r + k] = W[4 * r + k];
}


/* ---- mapping JSON ---------------------------------------------------------------------------------- */

static void map_init(DsRetargetMap *map, const char *source) {
    memset(map, 0, sizeof *map);
    for (int k = 0; k < 9; k++) map->up[k] = k % 4 == 0;
    snprintf(map->source, sizeof map->source, "%.511s", source);
}

static int copy_name(char *dst, size_t n, const cJSON *v, const char *source, const char *key, const char *what,
                     char *err, size_t errlen) {
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= n)
        return base_errf(err, errlen, "%s: \"%s\": %s must be a non-empty string of at most %zu characters", source,
                         key, what, n - 1);
    snprintf(dst, n, "%s", v->valuestring);
    return 0;
}

int ds_retarget_map_parse(const char *text, const char *source, DsRetargetMap *map, char *err, size_t errlen) {
    map_init(map, source);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return base_errf(err, errlen, "%s: not a JSON object (a mapping {\"rig bone\": \"source joint\", ...})", source);
    }
    int rc = -1;
    for (const cJSON *it = root->child; it; it = it->next) {
        const char *key = it->string;
        if (!strcmp(key, "source_up")) {
            if (!cJSON_IsString(it) || (strcmp(it->valuestring, "y") && strcmp(it->valuestring, "z"))) {
                base_errf(err, errlen, "%s: \"source_up\" must be \"y\" or \"z\"", source);
                goto out;
            }
            if (!strcmp(it->valuestring, "z")) { /* −90° about x: z → y, y → −z */
                static const double C[9] = {1, 0, 0, 0, 0, 1, 0, -1, 0};
                memcpy(map->up, C, sizeof C);
            }
            continue;
        }
        if (map->npairs >= DS_RIG_MAX_BONES) {
            base_errf(err, errlen, "%s: more than %d bones", source, DS_RIG_MAX_BONES);
            goto out;
        }
        DsRetargetPair *pr = &map->pairs[map->npairs];
        ds_quat_identity(pr->offset);
        if (!key[0] || strlen(key) >= sizeof pr->bone) {
            base_errf(err, errlen, "%s: bone name \"%.80s\" is empty or too long", source, key);
            goto out;
        }
        for (int i = 0; i < map->npairs; i++)
            if (!strcmp(map->pairs[i].bone, key)) {
                base_errf(err, errlen, "%s: bone \"%s\" is mapped twice", source, key);
                goto out;
            }
        snprintf(pr->bone, sizeof pr->bone, "%s", key);
        if (cJSON_IsString(it)) {
            if (copy_name(pr->joint, sizeof pr->joint, it, source, key, "the source joint", err, errlen)) goto out;
        } else if (cJSON_IsObject(it)) {
            for (const cJSON *f = it->child; f; f = f->next)
                if (strcmp(f->string, "joint") && strcmp(f->string, "toward") && strcmp(f->string, "offset")) {
                    base_errf(err, errlen, "%s: \"%s.%s\": unknown key (joint, toward, offset)", source, key, f->string);
                    goto out;
                }
            if (copy_name(pr->joint, sizeof pr->joint, cJSON_GetObjectItemCaseSensitive(it, "joint"), source, key,
                          "\"joint\"", err, errlen))
                goto out;
            const cJSON *tw = cJSON_GetObjectItemCaseSensitive(it, "toward");
            if (tw && copy_name(pr->toward, sizeof pr->toward, tw, source, key, "\"toward\"", err, errlen)) goto out;
            const cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "offset");
            if (of) {
                double a[3];
                bool ok = cJSON_IsArray(of) && cJSON_GetArraySize(of) == 3;
                for (int k = 0; ok && k < 3; k++) {
                    const cJSON *x = cJSON_GetArrayItem(of, k);
                    ok = cJSON_IsNumber(x) && isfinite(x->valuedouble);
                    if (ok) a[k] = x->valuedouble * DEG;
                }
                if (!ok) {
                    base_errf(err, errlen, "%s: \"%s.offset\" must be three finite angles in degrees", source, key);
                    goto out;
                }
                /* Rz·Ry·Rx: x first, about the world axes at rest */
                static const double ax[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
                double qx[4], qy[4], qz[4], t[4];
                ds_quat_axis_angle(ax[0], a[0], qx);
                ds_quat_axis_angle(ax[1], a[1], qy);
                ds_quat_axis_angle(ax[2], a[2], qz);
                ds_quat_mul(qy, qx, t);
                ds_quat_mul(qz, t, pr->offset);
            }
        } else {
            base_errf(err, errlen, "%s: \"%s\": a source joint name or {\"joint\", \"toward\", \"offset\"}", source, key);
            goto out;
        }
        map->npairs++;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

int ds_retarget_map_load(const char *path, DsRetargetMap *map, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return base_errf(err, errlen, "%s: cannot open the mapping", path);
    char *text = NULL;
    long n = -1;
    if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && n < (1 << 24) && !fseek(f, 0, SEEK_SET) &&
        (text = malloc((size_t)n + 1)) && fread(text, 1, (size_t)n, f) == (size_t)n)
        text[n] = 0;
    else {
        free(text);
        text = NULL;
    }
    fclose(f);
    if (!text) return base_errf(err, errlen, "%s: cannot read the mapping (or over 16 MB)", path);
    int rc = ds_retarget_map_parse(text, path, map, err, errlen);
    free(text);
    return rc;
}

/* The built-in names as a map: the first scheme whose joints all exist; -1 if none does. */
static int builtin_map(const DsBvh *bvh, DsRetargetMap *map) {
    for (int sc = 0; sc < 2; sc++) {
        bool all = true;
        for (int i = 0; i < NMAP; i++) all &= bvh_joint(bvh, MAP[i].src[sc][0]) >= 0 && bvh_joint(bvh, MAP[i].src[sc][1]) >= 0;
        if (!all) continue;
        map_init(map, sc ? "the Boxing_Toes names" : "the CMU names");
        for (int i = 0; i < NMAP; i++) {
            DsRetargetPair *p = &map->pairs[map->npairs++];
            snprintf(p->bone, sizeof p->bone, "%s", MAP[i].bone);
            snprintf(p->joint, sizeof p->joint, "%s", MAP[i].src[sc][0]);
            snprintf(p->toward, sizeof p->toward, "%s", MAP[i].src[sc][1]);
            ds_quat_identity(p->offset);
        }
        return 0;
    }
    return -1;
}

/* Source and reference joints and offsets per rig bone (-1: unmapped). */
static int resolve_map(const DsBvh *bvh, const char *bvh_name, const DsProceduralShape *shape, const DsRetargetMap *map,
                       int *src, int *ref, double (*O)[4], char *err, size_t errlen) {
    int nb = shape->nbones, pair_of[DS_RIG_MAX_BONES];
    for (int b = 0; b < nb; b++) src[b] = ref[b] = pair_of[b] = -1, ds_quat_identity(O[b]);
    for (int i = 0; i < map->npairs; i++) {
        const DsRetargetPair *p = &map->pairs[i];
        int b = bone_index(shape, p->bone);
        if (b < 0)
            return base_errf(err, errlen, "%s: bone \"%s\" (mapped to joint \"%s\") is not in the %s rig", map->source,
                             p->bone, p->joint, shape->category);
        if ((src[b] = bvh_joint(bvh, p->joint)) < 0)
            return base_errf(err, errlen, "%s: bone \"%s\" is mapped to joint \"%s\", which %s does not have",
                             map->source, p->bone, p->joint, bvh_name);
        if (p->toward[0] && (ref[b] = bvh_joint(bvh, p->toward)) < 0)
            return base_errf(err, errlen, "%s: bone \"%s\" points toward joint \"%s\", which %s does not have",
                             map->source, p->bone, p->toward, bvh_name);
        pair_of[b] = i;
        memcpy(O[b], p->offset, sizeof O[b]);
    }
    for (int b = 0; b < nb; b++)
        if (shape->bones[b].parent < 0 && src[b] < 0)
            return base_errf(err, errlen, "%s: the rig's root bone \"%s\" is not mapped to a joint of %s (it carries "
                             "the root translation)", map->source, shape->bones[b].name, bvh_name);
    /* inferred references: the first mapped child bone's joint, else the joint's first child */
    for (int b = 0; b < nb; b++) {
        if (src[b] < 0 || ref[b] >= 0) continue;
        for (int c = 0; c < nb && ref[b] < 0; c++)
            if (shape->bones[c].parent == b && src[c] >= 0 && src[c] != src[b]) ref[b] = src[c];
        for (int j = 0; j < bvh->njoints && ref[b] < 0; j++)
            if (bvh->joints[j].parent == src[b]) ref[b] = j;
        if (ref[b] < 0)
            return base_errf(err, errlen, "%s: bone \"%s\": joint \"%s\" of %s has no child to point toward; give "
                             "\"toward\"", map->source, shape->bones[b].name, map->pairs[pair_of[b]].joint, bvh_name);
    }
    return 0;
}

/* World transforms of the source at frame (-1: rest), turned into the rig's axes by up. */
static void source_pose(const DsBvh *bvh, int64_t frame, const double up[9], double *W) {
    ds_bvh_pose(bvh, frame, W);
    if (up[0] == 1 && up[4] == 1 && up[8] == 1) return;
    for (int j = 0; j < bvh->njoints; j++) {
        double *M = W + 16 * j, T[12];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++) T[4 * r + c] = up[3 * r] * M[c] + up[3 * r + 1] * M[4 + c] + up[3 * r + 2] * M[8 + c];
        memcpy(M, T, sizeof T);
    }
}

int ds_motion_retarget_bvh(const DsBvh *bvh, const char *bvh_name, double start, double step_s, int nframes,
                           const DsProceduralShape *shape, const DsRetargetMap *map, DsMotion *out, char *err,
                           size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!map && strcmp(shape->category, "humanoid"))
        return base_errf(err, errlen, "%s: motion capture is retargeted onto the humanoid rig only (without a mapping "
                         "JSON), not %s", bvh_name, shape->category);
    if (nframes < 1 || !(step_s > 0) || !(start >= 0))
        return base_errf(err, errlen, "%s: bad clip (%d frames from %g, step %g)", bvh_name, nframes, start, step_s);
    double last = start + step_s * (nframes - 1);
    if (bvh->nframes < 1 || last > (double)(bvh->nframes - 1))
        return base_errf(err, errlen, "%s: the clip needs source frames %.0f..%.0f, the file has %lld", bvh_name, start,
                         ceil(last), (long long)bvh->nframes);
    int nb = shape->nbones, J = bvh->njoints;
    if (nb > DS_RIG_MAX_BONES) return base_errf(err, errlen, "%s: %d bones (at most %d)", bvh_name, nb, DS_RIG_MAX_BONES);
    DsRetargetMap auto_map;
    if (!map) {
        if (builtin_map(bvh, &auto_map))
            return base_errf(err, errlen,
                             "%s: joint names are neither the CMU ones (Hips, Spine1, LeftArm, LeftUpLeg, ...) nor "
                             "Boxing_Toes' (Hips, Chest, LeftShoulder, LeftHip, ...): cannot map them onto the rig "
                             "(give a mapping JSON)",
                             bvh_name);
        map = &auto_map;
    }
    int src[DS_RIG_MAX_BONES], ref[DS_RIG_MAX_BONES];
    double O[DS_RIG_MAX_BONES][4];
    if (resolve_map(bvh, bvh_name, shape, map, src, ref, O, err, errlen)) return -1;
    double *W = malloc(sizeof(double) * 16 * (size_t)J), *Wr = malloc(sizeof(double) * 16 * (size_t)J);
    int64_t nsrc = (int64_t)floor(last) - (int64_t)floor(start) + 2;
    double *loc = malloc(sizeof(double) * 4 * (size_t)nb * (size_t)nsrc), *rt = malloc(sizeof(double) * 3 * (size_t)nsrc);
    if (!W || !Wr || !loc || !rt) {
        free(W), free(Wr), free(loc), free(rt);
        return base_errf(err, errlen, "%s: out of memory", bvh_name);
    }
    if (motion_alloc(out, bvh_name, bvh_name, nframes, 0, nb, err, errlen)) {
        free(W), free(Wr), free(loc), free(rt);
        return -1;
    }
    /* rest: alignments A_b, leg lengths, ground heights */
    source_pose(bvh, -1, map->up, Wr);
    double A[DS_RIG_MAX_BONES][4];
    for (int b = 0; b < nb; b++) {
        ds_quat_identity(A[b]);
        if (src[b] < 0) continue;
        double dr[3], ds[3], n = 0;
        for (int k = 0; k < 3; k++) {
            dr[k] = (double)shape->bones[b].tail[k] - shape->bones[b].head[k];
            ds[k] = Wr[16 * ref[b] + 4 * k + 3] - Wr[16 * src[b] + 4 * k + 3];
            n += ds[k] * ds[k];
        }
        /* the rest rotation of the source joint is folded in below; ds is in world axes */
        if (n > 1e-12) ds_quat_between(dr, ds, A[b]);
        double t[4]; /* the rest offset after the alignment: O A */
        ds_quat_mul(O[b], A[b], t);
        memcpy(A[b], t, sizeof t);
    }
    /* the scale: leg lengths when the left leg is mapped, else all mapped bones */
    double leg_src = 0, leg_rig = 0;
    {
        int lu = bone_index(shape, "leg_l_upper"), ll = bone_index(shape, "leg_l_lower");
        bool legs = lu >= 0 && ll >= 0 && src[lu] >= 0 && src[ll] >= 0;
        for (int b = 0; b < nb; b++) {
            if (src[b] < 0 || (legs && b != lu && b != ll)) continue;
            double d = 0, e = 0;
            for (int c = 0; c < 3; c++) {
                d += pow(Wr[16 * ref[b] + 4 * c + 3] - Wr[16 * src[b] + 4 * c + 3], 2);
                e += pow((double)shape->bones[b].tail[c] - shape->bones[b].head[c], 2);
            }
            leg_src += sqrt(d), leg_rig += sqrt(e);
        }
    }
    if (!(leg_src > 1e-9)) {
        free(W), free(Wr), free(loc), free(rt);
        ds_motion_free(out);
        return base_errf(err, errlen, "%s: the source segments (legs) have zero length", bvh_name);
    }
    double scale = leg_rig / leg_src;
    /* the source's ground: the 5th percentile over the file (every 4th frame) of the lowest joint */
    int64_t nprobe = (bvh->nframes + 3) / 4;
    double *low = malloc(sizeof(double) * (size_t)nprobe);
    if (!low) {
        free(W), free(Wr), free(loc), free(rt);
        ds_motion_free(out);
        return base_errf(err, errlen, "%s: out of memory", bvh_name);
    }
    for (int64_t i = 0; i < nprobe; i++) {
        source_pose(bvh, 4 * i, map->up, W);
        double m = INFINITY;
        for (int j = 0; j < J; j++) m = fmin(m, W[16 * j + 7]);
        low[i] = m;
    }
    for (int64_t i = 1; i < nprobe; i++) /* insertion sort: a few thousand values */
        for (int64_t k = i; k > 0 && low[k - 1] > low[k]; k--) {
            double x = low[k];
            low[k] = low[k - 1], low[k - 1] = x;
        }
    double ground_src = low[nprobe / 20];
    free(low);
    double ground_rig = INFINITY;
    for (int b = 0; b < nb; b++) ground_rig = fmin(ground_rig, fmin(shape->bones[b].head[1], shape->bones[b].tail[1]));
    int hips = 0; /* the root bone (mapped: resolve_map checks) */
    while (hips < nb - 1 && shape->bones[hips].parent >= 0) hips++;
    int hsrc = src[hips];
    /* retarget each source frame the clip touches */
    int64_t s0 = (int64_t)floor(start);
    for (int64_t i = 0; i < nsrc; i++) {
        int64_t sf = s0 + i < bvh->nframes ? s0 + i : bvh->nframes - 1;
        source_pose(bvh, sf, map->up, W);
        double Rw[DS_RIG_MAX_BONES][9];
        for (int b = 0; b < nb; b++) {
            int p = shape->bones[b].parent;
            if (src[b] < 0) {
                /* an unmapped bone turns with its parent */
                if (p >= 0) memcpy(Rw[b], Rw[p], sizeof Rw[b]);
                else for (int k = 0; k < 9; k++) Rw[b][k] = k % 4 == 0;
            } else {
                double Rs[9], Rr[9], Ra[9], D[9], M[9];
                rot_of(W + 16 * src[b], Rs);
                rot_of(Wr + 16 * src[b], Rr);
                base_quat_to_mat3(A[b], Ra);
                /* D = Rs Rrᵀ, then R = D A */
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++) D[3 * r + c] = Rs[3 * r] * Rr[3 * c] + Rs[3 * r + 1] * Rr[3 * c + 1] + Rs[3 * r + 2] * Rr[3 * c + 2];
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++) M[3 * r + c] = D[3 * r] * Ra[c] + D[3 * r + 1] * Ra[3 + c] + D[3 * r + 2] * Ra[6 + c];
                memcpy(Rw[b], M, sizeof M);
            }
            double L[9];
            if (p < 0) memcpy(L, Rw[b], sizeof L);
            else
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++)
                        L[3 * r + c] = Rw[p][r] * Rw[b][c] + Rw[p][3 + r] * Rw[b][3 + c] + Rw[p][6 + r] * Rw[b][6 + c];
            double *q = loc + 4 * ((size_t)i * nb + b);
            ds_quat_from_mat3(L, q);
        }
        /* the hips' height above the source ground, put on the rig's ground */
        double P[3] = {W[16 * hsrc + 3], W[16 * hsrc + 7], W[16 * hsrc + 11]};
        rt[3 * i + 0] = scale * P[0];
        rt[3 * i + 1] = ground_rig + scale * (P[1] - ground_src) - shape->bones[hips].head[1];
        rt[3 * i + 2] = scale * P[2];
    }
    /* resample at start + f·step_s */
    double mean[2] = {0, 0};
    for (int f = 0; f < nframes; f++) {
        double x = start + step_s * f - (double)s0;
        int64_t i = (int64_t)floor(x);
        if (i >= nsrc - 1) i = nsrc - 2;
        if (i < 0) i = 0;
        double u = x - (double)i;
        if (nsrc < 2) i = 0, u = 0;
        int64_t i1 = nsrc < 2 ? 0 : i + 1;
        for (int b = 0; b < nb; b++)
            base_quat_slerp(loc + 4 * ((size_t)i * nb + b), loc + 4 * ((size_t)i1 * nb + b), u,
                  out->local + 4 * ((size_t)f * nb + b));
        for (int k = 0; k < 3; k++) out->root[3 * f + k] = (1 - u) * rt[3 * i + k] + u * rt[3 * i1 + k];
        mean[0] += out->root[3 * f] / nframes, mean[1] += out->root[3 * f + 2] / nframes;
    }
    for (int f = 0; f < nframes; f++) out->root[3 * f] -= mean[0], out->root[3 * f + 2] -= mean[1];
    /* one hemisphere for consecutive quaternions (q and −q are the same rotation) */
    for (int f = 1; f < nframes; f++)
        for (int b = 0; b < nb; b++) {
            double *q = out->local + 4 * ((size_t)f * nb + b), *p = q - 4 * (size_t)nb;
            if (q[0] * p[0] + q[1] * p[1] + q[2] * p[2] + q[3] * p[3] < 0)
                for (int k = 0; k < 4; k++) q[k] = -q[k];
        }
    out->src_start = s0;
    free(W), free(Wr), free(loc), free(rt);
    return 0;
}

/* ---- entry ------------------------------------------------------------------------------------------ */

typedef struct {
    const char *name, *file;
    double start_s; /* seconds into the file */
} NamedClip;

static const NamedClip CLIPS[] = {
    {"cmu_01_01", "01_01.bvh", 1.5}, /* forward jumps: the first jump */
    {"cmu_01_03", "01_03.bvh", 1.0}, /* turning, then climbing */
    {"boxing", "Boxing_Toes.bvh", 8.4},
};

/* ---- the repertoire ------------------------------------------------------------------------------- */

/* Segments of 1.5 s joined by 0.3 s cross-fades: as long as the default held-out clips' 1.6 s,
 * so a segment shows a whole gait cycle (periods 0.45-1.4 s) and several segments fit in a
 * few hundred frames. */
#define REP_SEG_S 1.5
#define REP_FADE_S 0.3
/* Around the category's held-out clip, when it is a named BVH clip, no repertoire segment
 * starts within REP_GUARD_S before it or ends within its first REP_EXCLUDE_S seconds (held-out
 * clips up to 4 s: 120 frames at 30 fps), plus the guard. */
#define REP_GUARD_S 1.0
#define REP_EXCLUDE_S 4.0

static int ds_motion_make_seg(const DsProceduralShape *shape, const char *name, int nframes, uint64_t seed,
                              const DsMotionOptions *opt, double fps, DsMotion *out, char *err, size_t errlen) {
    DsMotionOptions o = {fps, opt ? opt->bvh_dir : NULL, -1, NULL};
    return ds_motion_make(shape, name, nframes, seed, &o, out, err, errlen);
}

/* unseen: without the kind of the category's held-out motion (a gait never shown) */
static int repertoire(const DsProceduralShape *s, int nframes, uint64_t seed, bool unseen, const DsMotionOptions *opt,
                      double fps, DsMotion *out, char *err, size_t errlen) {
    /* the kinds: every motion of the category but rest and the repertoires */
    const char *heldout = ds_motion_default(s->category, true);
    const char *kinds[16];
    int nk = 0;
    const char *const *names = ds_motion_names(s->category, NULL);
    for (int i = 0; names && names[i] && nk < 16; i++)
        if (strcmp(names[i], "rest") && strncmp(names[i], "repertoire", 10) && !(unseen && !strcmp(names[i], heldout)))
            kinds[nk++] = names[i];
    if (nk == 0) return base_errf(err, errlen, "motion repertoire: %s has no motions", s->category);
    int seg = (int)lround(REP_SEG_S * fps), fade = (int)lround(REP_FADE_S * fps);
    if (seg < 2) seg = 2;
    if (fade > seg / 2) fade = seg / 2;
    const char *rname = unseen ? "repertoire_unseen" : "repertoire";
    if (motion_alloc(out, rname, rname, nframes, fps, s->nbones, err, errlen)) return -1;
    int nb = s->nbones, order[16];
    for (int cursor = 0, k = 0; cursor < nframes; k++) {
        int round = k / nk, slot = k % nk;
        if (slot == 0) { /* a seed-shuffled order of the kinds each round, so each appears once per round */
            for (int i = 0; i < nk; i++) order[i] = i;
            for (int i = nk - 1; i > 0; i--) {
                int j = (int)U(seed, "repertoire-order", 16 * round + i, 0, i + 1 - 1e-9);
                int t = order[i];
                order[i] = order[j], order[j] = t;
            }
        }
        const char *kind = kinds[order[slot]];
        /* a segment's own variation: the generator's ranges (procedural: P ±10%, A ±15%, any
         * phase) from a seed no plain motion of this benchmark uses (those use seed, seed + 1) */
        uint64_t sseed = base_splitmix64(base_splitmix64(seed ^ 0x7265706572746f69ull) + (uint64_t)k);
        char where[48] = "";
        DsMotion m;
        if (ds_motion_is_bvh(kind)) {
            /* a window of the file anywhere but around the held-out clip */
            const NamedClip *clip = NULL;
            for (size_t c = 0; c < sizeof CLIPS / sizeof CLIPS[0]; c++)
                if (!strcmp(CLIPS[c].name, kind)) clip = &CLIPS[c];
            char file[1024];
            snprintf(file, sizeof file, "%s/%s", opt && opt->bvh_dir ? opt->bvh_dir : DS_MOTION_BVH_DIR,
                     clip ? clip->file : kind);
            DsBvh b;
            if (ds_bvh_read(file, &b, err, errlen)) {
                ds_motion_free(out);
                return -1;
            }
            double ft = b.frame_time, dur = (b.nframes - 1) * ft, len = seg / fps;
            if (!(ft > 0) || !isfinite(ft) || dur < len) {
                ds_bvh_free(&b);
                ds_motion_free(out);
                return base_errf(err, errlen, "motion repertoire: %s is shorter than a segment (%.1f s)", file, len);
            }
            /* allowed starts: [0, dur − len] minus (a − len, b) around the held-out clip */
            double a = 1e300, bnd = 1e300;
            if (clip && !strcmp(kind, heldout))
                a = clip->start_s - REP_GUARD_S, bnd = clip->start_s + REP_EXCLUDE_S + REP_GUARD_S;
            double lo1 = 0, hi1 = fmin(dur - len, a - len), lo2 = fmax(0, bnd), hi2 = dur - len;
            double w1 = fmax(0, hi1 - lo1), w2 = fmax(0, hi2 - lo2);
            if (w1 + w2 <= 0) {
                ds_bvh_free(&b);
                ds_motion_free(out);
                return base_errf(err, errlen, "motion repertoire: %s has no window outside the held-out clip", file);
            }
            double u = U(sseed, kind, 3, 0, w1 + w2), t0 = u < w1 ? lo1 + u : lo2 + (u - w1);
            double start = floor(t0 / ft), step = 1.0 / (fps * ft);
            if (start + step * (seg - 1) > (double)(b.nframes - 1)) start = fmax(0, floor((double)(b.nframes - 1) - step * (seg - 1)));
            snprintf(where, sizeof where, "@%.2fs", start * ft);
            /* the file read once: retargeted here rather than through ds_motion_make */
            int rc = ds_motion_retarget_bvh(&b, file, start, step, seg, s, NULL, &m, err, errlen);
            ds_bvh_free(&b);
            if (rc) {
                ds_motion_free(out);
                return -1;
            }
        } else if (ds_motion_make_seg(s, kind, seg, sseed, opt, fps, &m, err, errlen)) {
            ds_motion_free(out);
            return -1;
        }
        size_t used = strlen(out->source);
        snprintf(out->source + used, sizeof out->source - used, "%s%s%s", k ? ", " : ": ", kind, where);
        /* the first segment is copied; each later one fades in over the last `fade` frames written */
        int at = k ? cursor - fade : 0;
        for (int i = 0; i < seg && at + i < nframes; i++) {
            int f = at + i;
            double w = k && i < fade ? smooth01((i + 1.0) / (fade + 1.0)) : 1;
            for (int j = 0; j < nb; j++) {
                double *q = out->local + 4 * ((size_t)f * nb + j);
                base_quat_slerp(q, m.local + 4 * ((size_t)i * nb + j), w, q);
            }
            for (int c = 0; c < 3; c++) out->root[3 * f + c] = (1 - w) * out->root[3 * f + c] + w * m.root[3 * i + c];
        }
        ds_motion_free(&m);
        cursor = at + seg;
    }
    /* one hemisphere for consecutive quaternions, as the BVH clips */
    for (int f = 1; f < nframes; f++)
        for (int j = 0; j < nb; j++) {
            double *q = out->local + 4 * ((size_t)f * nb + j), *p = q - 4 * (size_t)nb;
            if (q[0] * p[0] + q[1] * p[1] + q[2] * p[2] + q[3] * p[3] < 0)
                for (int c = 0; c < 4; c++) q[c] = -q[c];
        }
    return 0;
}

bool ds_motion_is_bvh(const char *name) {
    for (size_t k = 0; k < sizeof CLIPS / sizeof CLIPS[0]; k++)
        if (!strcmp(CLIPS[k].name, name)) return true;
    size_t len = strlen(name);
    return len > 4 && !strcmp(name + len - 4, ".bvh");
}

int ds_motion_make(const DsProceduralShape *shape, const char *name, int nframes, uint64_t seed,
                   const DsMotionOptions *opt, DsMotion *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    double fps = opt && opt->fps > 0 ? opt->fps : 30;
    if (nframes < 1 || nframes > 100000) return base_errf(err, errlen, "motion %s: %d frames (1..100000)", name, nframes);
    if (shape->nbones < 1 || shape->nbones > DS_RIG_MAX_BONES)
        return base_errf(err, errlen, "motion %s: the shape has %d bones (1..%d)", name, shape->nbones, DS_RIG_MAX_BONES);
    const NamedClip *clip = NULL;
    for (size_t k = 0; k < sizeof CLIPS / sizeof CLIPS[0]; k++)
        if (!strcmp(CLIPS[k].name, name)) clip = &CLIPS[k];
    size_t len = strlen(name);
    bool path = len > 4 && !strcmp(name + len - 4, ".bvh");
    bool mapped = opt && opt->map && opt->map[0];
    if (!strcmp(name, "repertoire") || !strcmp(name, "repertoire_unseen")) {
        if (mapped) return base_errf(err, errlen, "motion %s: a mapping JSON (%s) applies to BVH clips only", name, opt->map);
        return repertoire(shape, nframes, seed, name[10] != 0, opt, fps, out, err, errlen);
    }
    if (!clip && !path) {
        if (mapped)
            return base_errf(err, errlen, "motion %s: a mapping JSON (%s) applies to BVH clips only", name, opt->map);
        return procedural(shape, name, nframes, seed, fps, out, err, errlen);
    }
    DsRetargetMap *map = NULL;
    if (mapped) {
        if (!(map = malloc(sizeof *map))) return base_errf(err, errlen, "motion %s: out of memory", name);
        if (ds_retarget_map_load(opt->map, map, err, errlen)) {
            free(map);
            return -1;
        }
    }
    char file[1024];
    if (clip) snprintf(file, sizeof file, "%s/%s", opt && opt->bvh_dir ? opt->bvh_dir : DS_MOTION_BVH_DIR, clip->file);
    else snprintf(file, sizeof file, "%s", name);
    DsBvh b;
    if (ds_bvh_read(file, &b, err, errlen)) {
        free(map);
        return -1;
    }
    if (!(b.frame_time > 0) || !isfinite(b.frame_time)) {
        ds_bvh_free(&b);
        free(map);
        return base_errf(err, errlen, "%s: frame time %g is not positive", file, b.frame_time);
    }
    double step = 1.0 / (fps * b.frame_time), start;
    if (opt && opt->bvh_start >= 0) start = (double)opt->bvh_start;
    else start = clip ? floor(clip->start_s / b.frame_time) : 0;
    /* a clip that would run past the end starts earlier */
    double need = step * (nframes - 1);
    if (start + need > (double)(b.nframes - 1)) start = fmax(0, floor((double)(b.nframes - 1) - need));
    int rc = ds_motion_retarget_bvh(&b, file, start, step, nframes, shape, map, out, err, errlen);
    ds_bvh_free(&b);
    free(map);
    if (rc) return -1;
    snprintf(out->name, sizeof out->name, "%.63s", name);
    snprintf(out->source, sizeof out->source, "%.511s", file);
    out->fps = fps;
    return 0;
}
