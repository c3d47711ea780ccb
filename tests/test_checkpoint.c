/* tests/test_checkpoint.c — HDF5 checkpoints (optim/checkpoint.h): round trip with optimizer
 * state and meta, strict and non-strict name checking, damaged files, atomic replacement under
 * SIGKILL, reading with h5py, and tools/convert_pt.py both ways against PyTorch. The Python
 * tests skip (exit 77) where /usr/bin/python3, h5py or torch is absent. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "nn/functional.h"
#include "optim/checkpoint.h"
#include "tests/test.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static void tmpdir_make(char *dir) {
    strcpy(dir, "/tmp/anima-ckpt-XXXXXX");
    if (!mkdtemp(dir)) abort();
}

static void tmpdir_remove(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

/* A two-layer MLP named like torch's `net = nn.Sequential(Linear(3, 8), Tanh(), Linear(8, 2))`
 * plus a free parameter `scale` (2). */
typedef struct {
    Tensor *w0, *b0, *w2, *b2, *scale;
} Mlp;

static void mlp_make(NnParams *p, Mlp *m, uint64_t seed, TensorDType dt) {
    nn_params_init(p, NULL, dt, seed);
    m->w0 = nn_param(p, "net", "0.weight", TENSOR_SHAPE(8, 3), NN_INIT_KAIMING_UNIFORM, 0);
    m->b0 = nn_param(p, "net", "0.bias", TENSOR_SHAPE(8), NN_INIT_UNIFORM, 0.5);
    m->w2 = nn_param(p, "net", "2.weight", TENSOR_SHAPE(2, 8), NN_INIT_KAIMING_UNIFORM, 0);
    m->b2 = nn_param(p, "net", "2.bias", TENSOR_SHAPE(2), NN_INIT_UNIFORM, 0.5);
    m->scale = nn_param(p, NULL, "scale", TENSOR_SHAPE(2), NN_INIT_NORMAL, 1.0);
    nn_params_pack(p);
}

static Tensor *mlp_forward(const Mlp *m, Tensor *x) {
    return tensor_mul(nn_linear(tensor_tanh(nn_linear(x, m->w0, m->b0)), m->w2, m->b2), m->scale);
}

/* A few AdamW steps on a fixed batch so the moments are not zero. */
static void train_a_little(NnParams *p, Optim *o, const Mlp *m, int steps) {
    TensorRng g = {.seed = 5};
    for (int s = 0; s < steps; s++) {
        TensorScope *sc = tensor_scope_begin();
        Tensor *x = tensor_randn_with(&g, TENSOR_SHAPE(16, 3), p->dtype);
        Tensor *loss = tensor_mean_all(tensor_pow_scalar(mlp_forward(m, x), 2));
        nn_params_zero_grad(p);
        ag_backward(loss, NULL, false);
        optim_step(o, 1e-2);
        tensor_scope_end(sc);
    }
}

static bool same_bits(const Tensor *a, const Tensor *b) {
    return tensor_numel(a) == tensor_numel(b) && a->dtype == b->dtype &&
           !memcmp(tensor_data_ptr(a), tensor_data_ptr(b), (size_t)tensor_numel(a) * tensor_dtype_size(a->dtype));
}

static Tensor *snapshot(const Tensor *t) { return tensor_clone((Tensor *)t); }

/* Runs a Python script (written to a file in dir) with /usr/bin/python3 from the repository
 * root, stdout into out; returns the exit status (77: a module is missing), -1 when python3
 * itself is absent. */
static int run_python(const char *dir, const char *script, char *out, size_t n) {
    /* quick mode is `make valgrind`, which traces children: it would run Python and torch
     * under valgrind (minutes, and their errors are not ours) */
    if (test_quick() || access("/usr/bin/python3", X_OK) != 0) return -1;
    char path[4096], cmd[8192];
    snprintf(path, sizeof path, "%s/script.py", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s 2>&1", path); /* errors into the report */
    return test_run_capture(cmd, out, n);
}

/* Values printed by Python as float.hex(), separated by spaces, after "<tag> " on its own line. */
static int parse_hex_line(const char *out, const char *tag, double *v, int max) {
    char key[128];
    snprintf(key, sizeof key, "\n%s ", tag);
    char *buf = malloc(strlen(out) + 2);
    buf[0] = '\n';
    strcpy(buf + 1, out);
    const char *p = strstr(buf, key);
    int n = 0;
    if (p) {
        p += strlen(key);
        while (*p && *p != '\n' && n < max) {
            char *end;
            v[n] = strtod(p, &end); /* C99 strtod reads hex floats exactly */
            if (end == p) break;
            n++;
            p = end;
            while (*p == ' ') p++;
        }
    }
    free(buf);
    return p ? n : -1;
}

/* every value of t equals the Python-printed values, bit for bit */
static void check_against_hex(const char *out, const char *tag, const Tensor *t) {
    double v[4096], mine[4096];
    int n = parse_hex_line(out, tag, v, 4096);
    CHECK_MSG(n == tensor_numel(t), "%s: python printed %d values, tensor has %lld", tag, n, (long long)tensor_numel(t));
    if (n != tensor_numel(t)) return;
    tensor_to_f64_array(t, mine);
    for (int i = 0; i < n; i++) CHECK_MSG(v[i] == mine[i], "%s[%d]: python %.9g, C %.9g", tag, i, v[i], mine[i]);
}

static void write_hex(FILE *f, const char *tag, const Tensor *t) {
    double v[4096];
    tensor_to_f64_array(t, v);
    fprintf(f, "%s = [", tag);
    for (int64_t i = 0; i < tensor_numel(t); i++) fprintf(f, "%sfloat.fromhex('%a')", i ? ", " : "", v[i]);
    fprintf(f, "]\n");
}

/* ---- round trip ----------------------------------------------------------------------------- */

TEST(checkpoint_round_trip_params_optim_meta) {
    char dir[64], path[128], err[2048] = "";
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/a.h5", dir);
    NnParams p;
    Mlp m;
    mlp_make(&p, &m, 1, TENSOR_F32);
    OptimConfig oc = optim_defaults(OPTIM_ADAMW);
    Optim o;
    optim_init(&o, &p, &oc);
    train_a_little(&p, &o, &m, 3);
    const char *cfg = "{\"lr\": 0.001, \"name\": \"r\\u00e9sum\\u00e9\"}";
    OptimCheckpointMeta meta = {.step = 1234, .rng = {.seed = 0xfedcba9876543210ull, .stream = 7, .offset = 99},
                                .config_json = (char *)cfg};
    CHECK_MSG(optim_checkpoint_save(path, &p, &o, &meta, err, sizeof err) == 0, "%s", err);

    NnParams q;
    Mlp mq;
    mlp_make(&q, &mq, 2, TENSOR_F32); /* other values */
    Optim oq;
    optim_init(&oq, &q, &oc);
    CHECK(!same_bits(p.flat, q.flat));
    OptimCheckpointMeta got = {0};
    CHECK_MSG(optim_checkpoint_load(path, &q, &oq, true, &got, err, sizeof err) == 0, "%s", err);
    CHECK(same_bits(p.flat, q.flat));
    CHECK(same_bits(o.exp_avg, oq.exp_avg) && same_bits(o.exp_avg_sq, oq.exp_avg_sq));
    CHECK(oq.step == 3);
    CHECK(got.step == 1234 && got.rng.seed == meta.rng.seed && got.rng.stream == 7 && got.rng.offset == 99);
    CHECK(got.config_json && !strcmp(got.config_json, cfg));
    free(got.config_json);
    /* f64 parameters too, and no optimizer / no meta */
    NnParams d, d2;
    Mlp md;
    mlp_make(&d, &md, 3, TENSOR_F64);
    mlp_make(&d2, &md, 4, TENSOR_F64);
    CHECK(optim_checkpoint_save(path, &d, NULL, NULL, err, sizeof err) == 0);
    CHECK(optim_checkpoint_load(path, &d2, NULL, true, NULL, err, sizeof err) == 0);
    CHECK(same_bits(d.flat, d2.flat));
    /* nothing left beside it */
    DIR *dd = opendir(dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(dd));) files += e->d_name[0] != '.';
    closedir(dd);
    CHECK_MSG(files == 1, "%d files in %s after saving (temporaries left?)", files, dir);
    nn_params_free(&p), nn_params_free(&q), nn_params_free(&d), nn_params_free(&d2);
    tmpdir_remove(dir);
}

/* ---- name checking --------------------------------------------------------------------------- */

TEST(checkpoint_strict_reports_all_mismatches) {
    char dir[64], path[128], err[4096] = "";
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/a.h5", dir);
    NnParams p;
    Mlp m;
    mlp_make(&p, &m, 1, TENSOR_F32);
    CHECK(optim_checkpoint_save(path, &p, NULL, NULL, err, sizeof err) == 0);
    /* a model with net.2.bias renamed (one missing + one unexpected), scale of another shape */
    NnParams q;
    nn_params_init(&q, NULL, TENSOR_F32, 9);
    Tensor *w0 = nn_param(&q, "net", "0.weight", TENSOR_SHAPE(8, 3), NN_INIT_NORMAL, 1);
    Tensor *b0 = nn_param(&q, "net", "0.bias", TENSOR_SHAPE(8), NN_INIT_NORMAL, 1);
    Tensor *w2 = nn_param(&q, "net", "2.weight", TENSOR_SHAPE(2, 8), NN_INIT_NORMAL, 1);
    nn_param(&q, "net", "2.b", TENSOR_SHAPE(2), NN_INIT_NORMAL, 1);
    Tensor *sc = nn_param(&q, NULL, "scale", TENSOR_SHAPE(3), NN_INIT_NORMAL, 1);
    nn_params_pack(&q);
    Tensor *before = snapshot(q.flat);
    CHECK(optim_checkpoint_load(path, &q, NULL, true, NULL, err, sizeof err) != 0);
    const char *needles[] = {path, "missing 1: net.2.b", "unexpected 1: net.2.bias", "mismatched 1: scale",
                             "[2]", "[3]"};
    for (size_t i = 0; i < sizeof needles / sizeof *needles; i++)
        CHECK_MSG(strstr(err, needles[i]), "message '%s' lacks '%s'", err, needles[i]);
    CHECK_MSG(same_bits(before, q.flat), "a refused strict load changed the model");
    /* non-strict: the three matching tensors load, the rest stays, the report stays in err */
    CHECK(optim_checkpoint_load(path, &q, NULL, false, NULL, err, sizeof err) == 0);
    CHECK(strstr(err, "partial load") && strstr(err, "net.2.b") && strstr(err, "scale"));
    CHECK(same_bits(w0, m.w0) && same_bits(b0, m.b0) && same_bits(w2, m.w2));
    CHECK(same_bits(sc, tensor_narrow(before, 0, tensor_numel(before) - 3, 3)));
    /* a dtype mismatch is a mismatch too */
    NnParams d;
    Mlp md;
    mlp_make(&d, &md, 3, TENSOR_F64);
    CHECK(optim_checkpoint_load(path, &d, NULL, true, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, "mismatched 5") && strstr(err, "file has f32"), "%s", err);
    nn_params_free(&p), nn_params_free(&q), nn_params_free(&d);
    tmpdir_remove(dir);
}

/* A load that fails after the names matched (optimizer of another kind) leaves everything as
 * it was: no half-loaded model. */
TEST(checkpoint_failed_load_changes_nothing) {
    char dir[64], path[128], err[2048] = "";
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/a.h5", dir);
    NnParams p, q;
    Mlp m, mq;
    mlp_make(&p, &m, 1, TENSOR_F32);
    OptimConfig adam = optim_defaults(OPTIM_ADAM), adamw = optim_defaults(OPTIM_ADAMW);
    Optim o, oq;
    optim_init(&o, &p, &adam);
    train_a_little(&p, &o, &m, 2);
    CHECK(optim_checkpoint_save(path, &p, &o, NULL, err, sizeof err) == 0);
    mlp_make(&q, &mq, 2, TENSOR_F32);
    optim_init(&oq, &q, &adamw);
    train_a_little(&q, &oq, &mq, 1);
    Tensor *before = snapshot(q.flat), *m_before = snapshot(oq.exp_avg);
    CHECK(optim_checkpoint_load(path, &q, &oq, true, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, path) && strstr(err, "kind"), "%s", err);
    CHECK(same_bits(before, q.flat) && same_bits(m_before, oq.exp_avg) && oq.step == 1);
    nn_params_free(&p), nn_params_free(&q);
    tmpdir_remove(dir);
}

/* ---- damaged files ------------------------------------------------------------------------------ */

static int copy_prefix(const char *src, const char *dst, off_t len) {
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    if (!a || !b) return -1;
    char buf[4096];
    off_t done = 0;
    size_t r;
    while (done < len && (r = fread(buf, 1, (size_t)(len - done < 4096 ? len - done : 4096), a)) > 0) {
        fwrite(buf, 1, r, b);
        done += (off_t)r;
    }
    fclose(a);
    fclose(b);
    return 0;
}

TEST(checkpoint_damaged_files_give_errors) {
    /* libhdf5 1.10 leaks object headers on its own corrupt-file error paths: valgrind
     * suppresses exactly those blocks (tests/valgrind.supp, by HDF5's frames) and checks the
     * rest; LeakSanitizer's stacks end inside libhdf5, so it is off for this test */
    test_no_leak_check("libhdf5 leaks on corrupt-file error paths (valgrind checks this test)");
    char dir[64], path[128], bad[160], err[2048];
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/good.h5", dir);
    snprintf(bad, sizeof bad, "%s/bad.h5", dir);
    NnParams p, q;
    Mlp m, mq;
    mlp_make(&p, &m, 1, TENSOR_F32);
    mlp_make(&q, &mq, 2, TENSOR_F32);
    Optim o;
    optim_init(&o, &p, NULL);
    CHECK(optim_checkpoint_save(path, &p, &o, NULL, err, sizeof err) == 0);
    struct stat st;
    stat(path, &st);
    /* truncated at several points, including inside the superblock and right before the end */
    off_t cuts[] = {0, 7, 100, 512, st.st_size / 2, st.st_size - 64, st.st_size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        copy_prefix(path, bad, cuts[i]);
        strcpy(err, "");
        int rc = optim_checkpoint_load(bad, &q, &o, true, NULL, err, sizeof err);
        CHECK_MSG(rc != 0, "a file truncated to %lld of %lld bytes loaded", (long long)cuts[i], (long long)st.st_size);
        CHECK_MSG(strstr(err, bad), "truncated to %lld: message '%s' does not name the file", (long long)cuts[i], err);
        /* and says what is wrong with it (issue 17: "corrupt", not "does not match the model") */
        CHECK_MSG(strstr(err, "corrupt"), "truncated to %lld: message '%s' does not say corrupt", (long long)cuts[i], err);
    }
    /* overwritten bytes: each corruption must give either an error naming the file or a clean
     * load (a flipped byte inside a tensor's data is still a well-formed file) — never a crash */
    srand(7);
    for (int k = 0; k < (test_quick() ? 20 : 200); k++) {
        copy_prefix(path, bad, st.st_size);
        int fd = open(bad, O_WRONLY);
        for (int j = 0; j < 8; j++) {
            off_t at = (off_t)(rand() % (int)st.st_size);
            unsigned char byte = (unsigned char)rand();
            pwrite(fd, &byte, 1, at);
        }
        close(fd);
        strcpy(err, "");
        if (optim_checkpoint_load(bad, &q, &o, true, NULL, err, sizeof err) != 0)
            CHECK_MSG(strstr(err, bad) && strstr(err, "corrupt"), "corruption %d: message '%s' does not name the file "
                      "and say corrupt", k, err);
    }
    /* not HDF5 at all, and absent */
    FILE *f = fopen(bad, "w");
    fputs("{\"this\": \"is JSON\"}\n", f);
    fclose(f);
    CHECK(optim_checkpoint_load(bad, &q, NULL, true, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, bad) && strstr(err, "not an HDF5 file"), "%s", err);
    unlink(bad);
    CHECK(optim_checkpoint_load(bad, &q, NULL, true, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, bad) && strstr(err, "No such file"), "%s", err);
    /* an unwritable destination */
    CHECK(optim_checkpoint_save("/nonexistent-dir/x.h5", &p, NULL, NULL, err, sizeof err) != 0);
    CHECK_MSG(strstr(err, "/nonexistent-dir/x.h5"), "%s", err);
    nn_params_free(&p), nn_params_free(&q);
    tmpdir_remove(dir);
}

/* ---- atomic replacement under SIGKILL ----------------------------------------------------------- */

/* A child saves a 16 MiB checkpoint over and over, every value of save i equal to i and
 * meta.step = i; the parent kills it at random moments. Whatever moment the kill hits (inside
 * HDF5's writes, the fsync or the rename), the path must hold one complete checkpoint. */
TEST(checkpoint_survives_sigkill_mid_save) {
    char dir[64], path[128], err[2048];
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/big.h5", dir);
    NnParams p;
    nn_params_init(&p, NULL, TENSOR_F32, 0);
    nn_param(&p, NULL, "a", TENSOR_SHAPE(1024, 1024), NN_INIT_ZEROS, 0);
    nn_param(&p, NULL, "b", TENSOR_SHAPE(3, 1024, 1024), NN_INIT_ZEROS, 0);
    nn_params_pack(&p);
    OptimCheckpointMeta meta = {.step = 0};
    double t0 = base_now();
    CHECK(optim_checkpoint_save(path, &p, NULL, &meta, err, sizeof err) == 0);
    double t1 = base_now();
    /* kill after 0.5 to 4 save durations (measured: sanitizers and a busy machine slow it), so
     * kills land at all phases of a save and some saves complete in between */
    double save_us = (t1 - t0) * 1e6;
    int kills = test_quick() ? 3 : 6;
    int64_t last = 0;
    srand((unsigned)time(NULL));
    for (int k = 0; k < kills; k++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            /* plain loops in the child: libgomp's thread pool does not survive fork */
            float *v = tensor_f32(p.flat);
            int64_t n = tensor_numel(p.flat);
            for (int64_t i = last + 1;; i++) {
                for (int64_t j = 0; j < n; j++) v[j] = (float)i;
                meta.step = i;
                optim_checkpoint_save(path, &p, NULL, &meta, NULL, 0);
            }
        }
        usleep((useconds_t)(save_us * (0.5 + 3.5 * rand() / (double)RAND_MAX)));
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        OptimCheckpointMeta got = {0};
        tensor_fill_(p.flat, -1);
        CHECK_MSG(optim_checkpoint_load(path, &p, NULL, true, &got, err, sizeof err) == 0, "after kill %d: %s", k, err);
        const float *v = tensor_f32(p.flat);
        int64_t n = tensor_numel(p.flat), bad = 0;
        for (int64_t i = 0; i < n; i++) bad += v[i] != (float)got.step;
        CHECK_MSG(bad == 0, "after kill %d: %lld values differ from the checkpoint's step %lld (a mix of saves)", k,
                  (long long)bad, (long long)got.step);
        CHECK(got.step >= last);
        last = got.step;
        free(got.config_json);
    }
    CHECK_MSG(last > 0, "no save ever completed: the kills tested nothing");
    /* the temporaries of killed writers are cleaned by the next save */
    CHECK(optim_checkpoint_save(path, &p, NULL, &meta, err, sizeof err) == 0);
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.';
    closedir(d);
    CHECK_MSG(files == 1, "%d files left in %s", files, dir);
    nn_params_free(&p);
    tmpdir_remove(dir);
}

/* ---- h5py reads what we write ----------------------------------------------------------------------- */

TEST(checkpoint_readable_with_h5py) {
    char dir[64], path[128], err[2048], script[8192], out[65536];
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/a.h5", dir);
    NnParams p;
    Mlp m;
    mlp_make(&p, &m, 1, TENSOR_F32);
    Optim o;
    optim_init(&o, &p, NULL);
    train_a_little(&p, &o, &m, 2);
    OptimCheckpointMeta meta = {.step = 42, .rng = {.seed = 11, .stream = 3, .offset = 777},
                                .config_json = "{\"seed\": 11}"};
    CHECK(optim_checkpoint_save(path, &p, &o, &meta, err, sizeof err) == 0);
    snprintf(script, sizeof script,
             "import sys\n"
             "try:\n    import h5py\nexcept ImportError:\n    sys.exit(77)\n"
             "f = h5py.File('%s', 'r')\n"
             "s = lambda a: a.decode() if isinstance(a, bytes) else str(a)\n"
             "print('format', s(f.attrs['format']))\n"
             "print('meta', int(f.attrs['step']), int(f.attrs['rng_seed']), int(f.attrs['rng_stream']),"
             " int(f.attrs['rng_offset']), int(f['optim'].attrs['step']))\n"
             "print('config', s(f.attrs['config']))\n"
             "for k in f['params']:\n"
             "    d = f['params'][k]\n"
             "    print('shape.' + k, *d.shape)\n"
             "    print('P.' + k, ' '.join(float(v).hex() for v in d[()].ravel()))\n"
             "print('M.net.0.weight', ' '.join(float(v).hex() for v in f['optim/exp_avg/net.0.weight'][()].ravel()))\n",
             path);
    int rc = run_python(dir, script, out, sizeof out);
    if (rc == -1 || rc == 77) {
        tmpdir_remove(dir);
        _exit(77);
    }
    CHECK_MSG(rc == 0, "python exited %d:\n%s", rc, out);
    CHECK_MSG(strstr(out, "format anima-checkpoint-1\n"), "%s", out);
    CHECK_MSG(strstr(out, "meta 42 11 3 777 2\n"), "%s", out);
    CHECK_MSG(strstr(out, "config {\"seed\": 11}\n"), "%s", out);
    CHECK_MSG(strstr(out, "shape.net.0.weight 8 3\n") && strstr(out, "shape.scale 2\n"), "%s", out);
    for (int i = 0; i < p.n; i++) {
        char tag[300];
        snprintf(tag, sizeof tag, "P.%s", p.items[i].name);
        check_against_hex(out, tag, p.items[i].value);
    }
    check_against_hex(out, "M.net.0.weight", tensor_view_at(o.exp_avg, 2, (int64_t[]){8, 3}, 0));
    nn_params_free(&p);
    tmpdir_remove(dir);
}

/* ---- tools/convert_pt.py against PyTorch -------------------------------------------------------------- */

/* The same model in torch: parameter names and forward match Mlp above. */
static const char *TORCH_MODEL =
    "import sys, importlib.util\n"
    "try:\n    import torch, h5py\nexcept ImportError:\n    sys.exit(77)\n"
    "spec = importlib.util.spec_from_file_location('convert_pt', 'tools/convert_pt.py')\n"
    "convert_pt = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(convert_pt)\n"
    "class M(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))\n"
    "        self.scale = torch.nn.Parameter(torch.randn(2))\n"
    "    def forward(self, x):\n"
    "        return self.net(x) * self.scale\n"
    "def hexes(t):\n"
    "    return ' '.join(float(v).hex() for v in t.detach().double().flatten().tolist())\n";

static const double X_VALUES[12] = {-1.0, -0.8, -0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.33};

static Tensor *x_input(void) {
    return tensor_cast(tensor_from_f64(TENSOR_SHAPE(4, 3), TENSOR_F64, X_VALUES), TENSOR_F32);
}

/* torch model → .pt → convert_pt.py → .h5 → strict load in C: values bit-identical, and the
 * same forward in C and torch agrees to f32 rounding. */
TEST(checkpoint_convert_pt_torch_to_anima) {
    char dir[64], err[2048], out[65536];
    tmpdir_make(dir);
    char *script = malloc(1 << 16);
    Tensor *x = x_input();
    char xs[4096];
    {
        FILE *f = fmemopen(xs, sizeof xs, "w");
        write_hex(f, "xv", x);
        fclose(f);
    }
    snprintf(script, 1 << 16,
             "%s"
             "torch.manual_seed(0)\n"
             "m = M()\n"
             "torch.save(m.state_dict(), '%s/m.pt')\n"
             "rc = convert_pt.main(['%s/m.pt', '%s/m.h5'])\n"
             "assert rc == 0, rc\n"
             "%s"
             "x = torch.tensor(xv, dtype=torch.float32).reshape(4, 3)\n"
             "for k, v in m.state_dict().items():\n"
             "    print('P.' + k, hexes(v))\n"
             "print('Y', hexes(m(x)))\n",
             TORCH_MODEL, dir, dir, dir, xs);
    int rc = run_python(dir, script, out, sizeof out);
    free(script);
    if (rc == -1 || rc == 77) {
        tmpdir_remove(dir);
        _exit(77);
    }
    CHECK_MSG(rc == 0, "python exited %d:\n%s", rc, out);
    NnParams p;
    Mlp m;
    mlp_make(&p, &m, 99, TENSOR_F32);
    char path[128];
    snprintf(path, sizeof path, "%s/m.h5", dir);
    CHECK_MSG(optim_checkpoint_load(path, &p, NULL, true, NULL, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < p.n; i++) {
        char tag[300];
        snprintf(tag, sizeof tag, "P.%s", p.items[i].name);
        check_against_hex(out, tag, p.items[i].value);
    }
    double y_torch[8];
    CHECK(parse_hex_line(out, "Y", y_torch, 8) == 8);
    Tensor *yt = tensor_from_f64(TENSOR_SHAPE(4, 2), TENSOR_F32, y_torch);
    Tensor *y = mlp_forward(&m, x);
    double e = test_rel_err(y, yt);
    CHECK_MSG(e < 1e-6, "C forward vs torch forward: relative error %g", e);
    nn_params_free(&p);
    tmpdir_remove(dir);
}

/* anima checkpoint (with optimizer state, which a state_dict does not hold) → convert_pt.py →
 * .pt → torch load_state_dict(strict=True): same values, same forward. */
TEST(checkpoint_convert_pt_anima_to_torch) {
    char dir[64], err[2048], out[65536];
    tmpdir_make(dir);
    NnParams p;
    Mlp m;
    mlp_make(&p, &m, 5, TENSOR_F32);
    Optim o;
    optim_init(&o, &p, NULL);
    train_a_little(&p, &o, &m, 2);
    char path[128];
    snprintf(path, sizeof path, "%s/a.h5", dir);
    OptimCheckpointMeta meta = {.step = 2, .config_json = "{}"};
    CHECK(optim_checkpoint_save(path, &p, &o, &meta, err, sizeof err) == 0);
    Tensor *x = x_input();
    char xs[4096];
    {
        FILE *f = fmemopen(xs, sizeof xs, "w");
        write_hex(f, "xv", x);
        fclose(f);
    }
    char *script = malloc(1 << 16);
    snprintf(script, 1 << 16,
             "%s"
             "rc = convert_pt.main(['%s/a.h5', '%s/a.pt'])\n"
             "assert rc == 0, rc\n"
             "m = M()\n"
             "sd = torch.load('%s/a.pt')\n"
             "m.load_state_dict(sd, strict=True)\n"
             "assert all(v.dtype == torch.float32 for v in sd.values())\n"
             "%s"
             "x = torch.tensor(xv, dtype=torch.float32).reshape(4, 3)\n"
             "for k, v in m.state_dict().items():\n"
             "    print('P.' + k, hexes(v))\n"
             "print('Y', hexes(m(x)))\n"
             /* and back again: .pt → .h5 gives the same datasets */
             "rc = convert_pt.main(['%s/a.pt', '%s/b.h5'])\n"
             "assert rc == 0, rc\n"
             "a, b = h5py.File('%s/a.h5', 'r'), h5py.File('%s/b.h5', 'r')\n"
             "assert sorted(a['params']) == sorted(b['params'])\n"
             "assert all((a['params'][k][()] == b['params'][k][()]).all() for k in a['params'])\n"
             "print('roundtrip ok')\n",
             TORCH_MODEL, dir, dir, dir, xs, dir, dir, dir, dir);
    int rc = run_python(dir, script, out, sizeof out);
    free(script);
    if (rc == -1 || rc == 77) {
        tmpdir_remove(dir);
        _exit(77);
    }
    CHECK_MSG(rc == 0, "python exited %d:\n%s", rc, out);
    for (int i = 0; i < p.n; i++) {
        char tag[300];
        snprintf(tag, sizeof tag, "P.%s", p.items[i].name);
        check_against_hex(out, tag, p.items[i].value);
    }
    double y_torch[8];
    CHECK(parse_hex_line(out, "Y", y_torch, 8) == 8);
    Tensor *yt = tensor_from_f64(TENSOR_SHAPE(4, 2), TENSOR_F32, y_torch);
    double e = test_rel_err(mlp_forward(&m, x), yt);
    CHECK_MSG(e < 1e-6, "C forward vs torch forward: relative error %g", e);
    CHECK_MSG(strstr(out, "roundtrip ok"), "%s", out);
    nn_params_free(&p);
    tmpdir_remove(dir);
}
