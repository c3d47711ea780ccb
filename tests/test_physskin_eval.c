/* tests/test_physskin_eval.c — `anima physskin eval` (models/physskin/eval.h): the table on the
 * tiny preset (well-formed markdown, every row, the rig row equal to the metrics of the
 * regenerated held-out shape's own rig), the held-out guarantee (a checkpoint trained on an
 * evaluation seed is refused), the per-object baseline's loss going down, and the metrics of a
 * rig-like matrix with a known spectrum. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/corpus/cache.h"
#include "models/physskin/eval.h"
#include "models/physskin/train.h"
#include "tests/test.h"

static void tiny(PsConfig *c) {
    char err[1024];
    int rc = ps_config_load(c, "configs/physskin-tiny.json", 0, NULL, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
}

/* one training step of the tiny preset on procedural:chair,snake (corpus indices 0..shapes−1) */
static int train_tiny(const char *dir, int64_t shapes) {
    PsConfig c;
    tiny(&c);
    c.train.steps = 1;
    c.data.shapes = shapes;
    mkdir(dir, 0777);
    char *json = ds_config_to_json(PS_CONFIG_SCHEMA, &c);
    PsTrainArgs a = {.cfg = &c, .cfg_json = json, .data = "procedural:chair,snake", .out_dir = dir, .progress = 0};
    int rc = ps_train(&a);
    free(json);
    return rc;
}

static int count_char(const char *s, char ch) {
    int n = 0;
    for (; *s; s++) n += *s == ch;
    return n;
}

static double json_num(const cJSON *a, int i) {
    const cJSON *x = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

TEST(physskin_eval_tiny_table) {
    char dir[64], ck[96], ck4[96], js[96], err[4096];
    snprintf(dir, sizeof dir, "/tmp/anima-ps-eval-%d", (int)getpid());
    snprintf(ck, sizeof ck, "%s/a/ckpt.h5", dir);
    snprintf(ck4, sizeof ck4, "%s/b/ckpt.h5", dir);
    snprintf(js, sizeof js, "%s/eval.json", dir);
    mkdir(dir, 0777);
    char sub[96];
    snprintf(sub, sizeof sub, "%s/a", dir);
    CHECK(train_tiny(sub, 2) == 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    PsEvalArgs a = {.ckpt = ck, .data = "procedural:chair,snake", .shapes = 2, .baselines = true,
                    .baseline = ps_baseline_defaults(), .ablations = ck, .json = js};
    a.baseline.steps = 3;
    int rc = ps_eval(&a, out, err, sizeof err);
    fclose(out);
    CHECK_MSG(rc == 0, "%s", err);
    printf("%s", buf);
    /* header, separator, then model, per-object MLP, rig weights, the ablation: 8 '|' per line */
    const char *h = strstr(buf, "| method |");
    CHECK(h != NULL);
    int rows = 0, bad = 0;
    char *copy = strdup(h ? h : ""), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && line[0] == '|'; line = strtok_r(NULL, "\n", &save)) {
        rows++;
        bad += count_char(line, '|') != 8;
        if (rows > 2) bad += strstr(line, "±") == NULL; /* every data row has mean ± std */
    }
    free(copy);
    CHECK_MSG(rows == 6 && bad == 0, "%d table lines, %d malformed", rows, bad);
    CHECK(strstr(buf, "PhysSkin (ckpt.h5") && strstr(buf, "per-object MLP") && strstr(buf, "rig weights") &&
          strstr(buf, "ablation: ckpt.h5"));
    CHECK(strstr(buf, "speed: per-object training") != NULL);
    free(buf);

    /* the JSON: 4 rows of 2 values; the rig row is the metrics of the held-out shapes' own rigs,
     * regenerated here from the documented seeds (tiny: data.shapes = 2, seed 0 -> g = 2, 3) */
    FILE *f = fopen(js, "r");
    CHECK(f != NULL);
    char text[1 << 16];
    size_t nr = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[nr] = 0;
    cJSON *root = cJSON_Parse(text);
    CHECK(root != NULL);
    const cJSON *jr = cJSON_GetObjectItem(root, "rows");
    CHECK(cJSON_GetArraySize(jr) == 4);
    /* the model's complementarity residual to each shape's rig, in (0, 1]; none for the rig row */
    const cJSON *cm = cJSON_GetObjectItem(cJSON_GetArrayItem(jr, 0), "comp_residual");
    CHECK(cJSON_GetArraySize(cm) == 2);
    for (int i = 0; i < 2; i++) {
        double v = cJSON_GetNumberValue(cJSON_GetArrayItem(cm, i));
        CHECK(v > 0 && v <= 1);
    }
    const cJSON *rig = cJSON_GetArrayItem(jr, 2);
    CHECK(!strcmp(cJSON_GetObjectItem(rig, "kind")->valuestring, "rig"));
    PsConfig c;
    tiny(&c);
    const char *cats[2] = {"chair", "snake"};
    for (int i = 0; i < 2; i++) {
        int64_t g = c.data.shapes + i;
        DsCorpusOptions co = {.grid = (int)c.data.mesh_res, .cubature_res = (int)c.data.cubature_res,
                              .n_surface = c.data.pool_surface};
        DsProceduralShape sh;
        DsPreprocessed pp;
        DsTransform xf;
        CHECK(ds_corpus_prepare(cats[g % 2], (uint64_t)c.seed * 1000003ull + (uint64_t)g, 0, &co, &sh, &pp, &xf, err,
                                sizeof err) == 0);
        PsSkinMetrics m;
        ps_skin_metrics(sh.weights, pp.mesh.nv, sh.nbones, &m);
        CHECK_NEAR(json_num(cJSON_GetObjectItem(rig, "orth_err"), i), m.orth_err, 1e-9);
        CHECK_NEAR(json_num(cJSON_GetObjectItem(rig, "balance"), i), m.balance, 1e-9);
        ds_preprocessed_free(&pp);
        ds_procedural_free(&sh);
    }
    cJSON_Delete(root);

    /* a checkpoint trained on corpus indices 0..3 has seen the held-out 2, 3: refused */
    snprintf(sub, sizeof sub, "%s/b", dir);
    CHECK(train_tiny(sub, 4) == 0);
    out = open_memstream(&buf, &len);
    a.ablations = ck4, a.baselines = false, a.json = NULL;
    rc = ps_eval(&a, out, err, sizeof err);
    fclose(out);
    free(buf);
    CHECK_MSG(rc != 0 && strstr(err, "held-out"), "rc %d: %s", rc, err);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* the same losses minimized per shape: the mean of the last 30 steps' losses is clearly below
 * the first 30's (each step draws new cubature points and z, so single steps are noisy) */
TEST(physskin_baseline_loss_decreases) {
    PsConfig c;
    tiny(&c);
    c.data.n_cubature = 64, c.data.n_z = 16;
    PsData d;
    char err[1024];
    CHECK_MSG(ps_data_load(&d, "procedural:chair", &c, 0, 1, err, sizeof err) == 0, "%s", err);
    PsBaselineOptions o = ps_baseline_defaults();
    o.steps = 200, o.hidden = 32, o.layers = 2;
    double loss[200], t = 0;
    float *w = malloc(sizeof(float) * (size_t)(d.shapes[0].n_surface * c.model.handles));
    ps_baseline_fit(&d.shapes[0], &c, &o, d.shapes[0].surface, d.shapes[0].n_surface, w, loss, &t);
    double first = 0, last = 0;
    for (int i = 0; i < 30; i++) first += loss[i] / 30, last += loss[199 - i] / 30;
    printf("    baseline loss: first 30 steps %.4g, last 30 %.4g (%.2f s)\n", first, last, t);
    CHECK_MSG(last < 0.7 * first, "first %g last %g", first, last);
    for (int64_t i = 0; i < d.shapes[0].n_surface * c.model.handles; i++) CHECK(isfinite(w[i]));
    free(w);
    ps_data_free(&d);
}

/* rig-like weights (non-negative, rows summing to 1) with a known spectrum: columns
 * (1,1,0,½)/1.5 and (0,0,1,½)/√1.25 after normalization meet at cos θ = ¼ / (1.5·√1.25), so
 * σ² = 1 ± cos θ; a dead bone (a zero column, as a bone without primitives gets) makes Ŵ
 * rank-deficient: inf, which the table's mean ± std leaves out and counts */
TEST(physskin_eval_rig_metrics_known_spectrum) {
    float w[4 * 2] = {1, 0, 1, 0, 0, 1, 0.5f, 0.5f};
    PsSkinMetrics m;
    ps_skin_metrics(w, 4, 2, &m);
    double ct = 0.25 / (1.5 * sqrt(1.25)), p0 = (1 + ct) / 2, p1 = (1 - ct) / 2;
    CHECK_NEAR(m.orth_err, sqrt(2 * ct * ct) / 2, 1e-7);
    CHECK_NEAR(m.cond, sqrt((1 + ct) / (1 - ct)), 1e-6);
    CHECK_NEAR(m.balance, -(p0 * log(p0) + p1 * log(p1)) / log(2.0), 1e-7);
    /* a permutation of the rows or a scaled bone column changes nothing (Ŵ is column-normalized) */
    float v[4 * 2] = {0, 3, 0.5f, 1.5f, 1, 0, 1, 0};
    PsSkinMetrics mv;
    ps_skin_metrics(v, 4, 2, &mv);
    CHECK_NEAR(mv.orth_err, m.orth_err, 1e-7);
    CHECK_NEAR(mv.cond, m.cond, 1e-6);
    CHECK_NEAR(mv.balance, m.balance, 1e-7);
    /* three bones, the third dead */
    float u[4 * 3] = {1, 0, 0, 1, 0, 0, 0, 1, 0, 0.5f, 0.5f, 0};
    ps_skin_metrics(u, 4, 3, &m);
    CHECK(isinf(m.cond));
    double vals[3] = {2.0, INFINITY, 4.0}, mu, sd;
    CHECK(ps_eval_mean_std(vals, 3, &mu, &sd) == 2);
    CHECK_NEAR(mu, 3.0, 1e-12);
    CHECK_NEAR(sd, sqrt(2.0), 1e-12);
}
