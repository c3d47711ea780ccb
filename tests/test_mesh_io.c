/* tests/test_mesh_io.c — mesh and 3DGS PLY files: write→read→write→read round trips for every
 * format, fan triangulation, negative OBJ indices, PLY with extra properties and big endian,
 * every fuzz seed, hand-made malformed inputs (each must give an error naming the file and the
 * line or byte, never a crash), and the Debian assimp-testmodels meshes (skipped without them). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/mesh/gaussian_ply.h"
#include "datasets/mesh/mesh.h"
#include "tests/test.h"

#define ASSIMP_DIR "/usr/share/assimp/models"

static char tmpdir[64];
static const char *tmp_path(const char *file) {
    static char buf[4][256];
    static int k;
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/anima-mesh-XXXXXX");
        if (!mkdtemp(tmpdir)) abort();
    }
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, file);
    return buf[k];
}

static void tmp_cleanup(void) {
    if (!tmpdir[0]) return;
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
        if (e->d_name[0] != '.') remove(p);
    }
    if (d) closedir(d);
    rmdir(tmpdir);
    tmpdir[0] = 0;
}

/* An octahedron with uneven coordinates, normals, colors and a scalar per vertex. */
static void make_mesh(DsMesh *m) {
    static const float v[] = {1.25f, 0, 0, -1, 0, 0, 0, 2.5f, 0, 0, -1, 0, 0, 0, 0.1f, 0, 0, -3.75f};
    static const int32_t f[] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5};
    memset(m, 0, sizeof *m);
    m->nv = 6, m->nf = 8;
    m->v = malloc(sizeof v), m->f = malloc(sizeof f);
    memcpy(m->v, v, sizeof v), memcpy(m->f, f, sizeof f);
    m->n = malloc(sizeof v), m->color = malloc(sizeof v), m->scalar = malloc(6 * sizeof(float));
    for (int i = 0; i < 18; i++) {
        m->n[i] = (i % 3 == 0 ? 0.6f : i % 3 == 1 ? -0.8f : 0.0f) * (i / 3 % 2 ? 1 : -1);
        m->color[i] = (float)((i * 37) % 256) / 255.0f;
    }
    for (int i = 0; i < 6; i++) m->scalar[i] = (float)i * 0.75f - 1.0f;
}

/* Same geometry: positions per face corner equal (STL renumbers vertices; the others do not). */
static void check_same(const DsMesh *a, const DsMesh *b, bool same_numbering, const char *what) {
    CHECK_MSG(a->nf == b->nf, "%s: %lld vs %lld faces", what, (long long)a->nf, (long long)b->nf);
    if (a->nf != b->nf) return;
    if (same_numbering) CHECK_MSG(a->nv == b->nv, "%s: %lld vs %lld vertices", what, (long long)a->nv, (long long)b->nv);
    double err = 0;
    for (int64_t i = 0; i < 3 * a->nf; i++) {
        if (same_numbering && a->f[i] != b->f[i]) {
            test_fail_at(__FILE__, __LINE__, "%s: face index %lld differs", what, (long long)i);
            return;
        }
        for (int k = 0; k < 3; k++) err = fmax(err, fabs(a->v[3 * a->f[i] + k] - b->v[3 * b->f[i] + k]));
    }
    CHECK_MSG(err == 0, "%s: positions differ by %g", what, err);
}

static void check_attr(const float *a, const float *b, int64_t n, double tol, const char *what) {
    CHECK_MSG(a && b, "%s: attribute lost", what);
    if (!a || !b) return;
    double err = 0;
    for (int64_t i = 0; i < n; i++) err = fmax(err, fabs(a[i] - b[i]));
    CHECK_MSG(err <= tol, "%s: differs by %g (tol %g)", what, err, tol);
}

static int read_ok(const char *path, DsMesh *m) {
    char err[512];
    int rc = ds_mesh_read(path, m, err, sizeof err);
    CHECK_MSG(rc == 0, "read %s: %s", path, err);
    return rc;
}

TEST(mesh_roundtrip_all_formats) {
    DsMesh m;
    make_mesh(&m);
    char err[512];
    struct {
        const char *file;
        int ply; /* -1 not PLY */
        bool ascii, renumbers, normals, colors, scalars;
        double color_tol;
    } cases[] = {
        {"a.obj", -1, false, false, true, true, false, 0},
        {"a_ascii.ply", DS_PLY_ASCII, true, false, true, true, true, 0.5 / 255},
        {"a_le.ply", DS_PLY_BINARY_LE, false, false, true, true, true, 0.5 / 255},
        {"a_be.ply", DS_PLY_BINARY_BE, false, false, true, true, true, 0.5 / 255},
        {"a.off", -1, false, false, false, false, false, 0},
        {"a_ascii.stl", -1, true, true, false, false, false, 0},
        {"a_bin.stl", -1, false, true, false, false, false, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *p = tmp_path(cases[c].file);
        int rc = cases[c].ply >= 0 ? ds_mesh_write_ply(p, &m, (DsPlyFormat)cases[c].ply, err, sizeof err)
                                   : ds_mesh_write(p, &m, cases[c].ascii, err, sizeof err);
        CHECK_MSG(rc == 0, "write %s: %s", p, err);
        DsMesh a;
        if (rc || read_ok(p, &a)) continue;
        check_same(&m, &a, !cases[c].renumbers, cases[c].file);
        if (cases[c].normals) check_attr(m.n, a.n, 3 * m.nv, 0, "normals");
        else CHECK(!a.n);
        if (cases[c].colors) check_attr(m.color, a.color, 3 * m.nv, cases[c].color_tol, "colors");
        if (cases[c].scalars) check_attr(m.scalar, a.scalar, m.nv, 0, "scalars");
        /* read → write → read: what was read survives our writers unchanged */
        const char *outs[] = {"b.ply", "b.obj"};
        for (int o = 0; o < 2; o++) {
            const char *q = tmp_path(outs[o]);
            DsMesh b;
            CHECK_MSG(ds_mesh_write(q, &a, false, err, sizeof err) == 0, "%s", err);
            if (read_ok(q, &b)) continue;
            check_same(&a, &b, true, outs[o]);
            if (a.n) check_attr(a.n, b.n, 3 * a.nv, 0, "normals again");
            if (a.color) check_attr(a.color, b.color, 3 * a.nv, o == 0 ? 0.5 / 255 : 0, "colors again");
            if (a.scalar && o == 0) check_attr(a.scalar, b.scalar, a.nv, 0, "scalars again");
            ds_mesh_free(&b);
        }
        ds_mesh_free(&a);
    }
    ds_mesh_free(&m);
    /* nothing but the outputs: no temporary file left behind */
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    while (d && (e = readdir(d))) CHECK_MSG(!strstr(e->d_name, ".tmp."), "left behind: %s", e->d_name);
    if (d) closedir(d);
    tmp_cleanup();
}

static int read_text(const char *name, const char *text, DsMesh *m, char *err, size_t n) {
    return ds_mesh_read_mem(name, (const uint8_t *)text, strlen(text), m, err, n);
}

TEST(mesh_fan_triangulation) {
    const char *files[][2] = {
        {"pent.obj", "v 0 0 0\nv 1 0 0\nv 2 1 0\nv 1 2 0\nv 0 1 0\nf 1 2 3 4 5\n"},
        {"pent.off", "OFF\n5 1 0\n0 0 0\n1 0 0\n2 1 0\n1 2 0\n0 1 0\n5 0 1 2 3 4\n"},
        {"pent.ply", "ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nproperty float y\nproperty float z\n"
                     "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
                     "0 0 0\n1 0 0\n2 1 0\n1 2 0\n0 1 0\n5 0 1 2 3 4\n"},
        {"pent.stl", "solid p\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 2 1 0\nvertex 1 2 0\n"
                     "vertex 0 1 0\nendloop\nendfacet\nendsolid p\n"},
    };
    const int32_t want[] = {0, 1, 2, 0, 2, 3, 0, 3, 4};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        DsMesh m;
        char err[512];
        if (read_text(files[i][0], files[i][1], &m, err, sizeof err)) {
            test_fail_at(__FILE__, __LINE__, "%s", err);
            continue;
        }
        CHECK_MSG(m.nv == 5 && m.nf == 3, "%s: %lld vertices %lld faces", files[i][0], (long long)m.nv, (long long)m.nf);
        if (m.nf == 3) CHECK_MSG(!memcmp(m.f, want, sizeof want), "%s: fan order", files[i][0]);
        ds_mesh_free(&m);
    }
}

TEST(mesh_obj_negative_indices_and_forms) {
    const char *obj = "# header\r\n\r\nv 0 0 0\r\nv 1 0 0\r\nv 0 1 0\r\nvt 0 0\r\nvn 0 0 1\r\n"
                      "f -3 -2 -1\r\n"
                      "v 5 5 5\r\nv 6 5 5\r\nv 5 6 5   # trailing comment\r\n"
                      "f -1/-1 -2/1 -3/1\r\nf 1//1 2//-1 4//1\r\nf 1/1/1 5/1/1 6/-1/-1\r\n"
                      "g grp\r\nusemtl x\r\ns 1\r\nl 1 2\r\n";
    DsMesh m;
    char err[512];
    if (read_text("neg.obj", obj, &m, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return;
    }
    const int32_t want[] = {0, 1, 2, 5, 4, 3, 0, 1, 3, 0, 4, 5};
    CHECK(m.nv == 6 && m.nf == 4);
    if (m.nf == 4) CHECK(!memcmp(m.f, want, sizeof want));
    CHECK(m.n != NULL);
    if (m.n) CHECK_NEAR(m.n[2], 1.0, 0); /* vertex 1: always vn 1 */
    if (m.n) CHECK_NEAR(m.n[3 * 2 + 2], 0.0, 0); /* vertex 3: no face gave it a normal */
    ds_mesh_free(&m);
}

TEST(mesh_obj_normal_conflicts_average) {
    /* vertex 1 gets two different normals: the average, normalized */
    const char *obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 1 0 0\nvn 0 2 0\nf 1//1 2//1 3//1\nf 1//2 3//2 4//2\n";
    DsMesh m;
    char err[512];
    if (read_text("avg.obj", obj, &m, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return;
    }
    CHECK_NEAR(m.n[0], sqrt(0.5), 1e-6);
    CHECK_NEAR(m.n[1], sqrt(0.5), 1e-6);
    CHECK_NEAR(m.n[4 * 3 - 2], 2.0, 0); /* vertex 4 has only vn 2, kept exactly (unnormalized) */
    ds_mesh_free(&m);
}

TEST(mesh_ply_extra_properties_big_endian) {
    DsMesh m;
    char err[512];
    if (ds_mesh_read("tests/fuzz/corpus/ply/be_extra.ply", &m, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return;
    }
    CHECK(m.nv == 3 && m.nf == 1);
    CHECK(m.n && m.color && m.scalar);
    if (m.nv == 3 && m.n && m.color && m.scalar) {
        CHECK_NEAR(m.v[3], 1.0, 0);
        CHECK_NEAR(m.v[7], 1.0, 0);
        CHECK_NEAR(m.n[8], 1.0, 0);
        CHECK_NEAR(m.color[0], 1.0, 0);
        CHECK_NEAR(m.color[1], 128.0 / 255, 1e-7);
        CHECK_NEAR(m.scalar[2], 1.0, 0);
        CHECK(m.f[0] == 0 && m.f[1] == 1 && m.f[2] == 2);
    }
    ds_mesh_free(&m);
}

/* ---- malformed input ----------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *data;
    size_t size; /* 0: strlen */
    const char *want; /* the message must contain this */
} Bad;

static void check_bad(const Bad *b) {
    DsMesh m;
    char err[512] = "";
    size_t n = b->size ? b->size : strlen(b->data);
    int rc = ds_mesh_read_mem(b->name, (const uint8_t *)b->data, n, &m, err, sizeof err);
    CHECK_MSG(rc != 0, "%s: accepted", b->name);
    if (rc == 0) ds_mesh_free(&m);
    CHECK_MSG(strstr(err, b->name) == err, "%s: message does not start with the file name: %s", b->name, err);
    CHECK_MSG(strstr(err, b->want), "%s: message '%s' lacks '%s'", b->name, err, b->want);
}

static const char *PLY_HEAD = "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
                              "property float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";

TEST(mesh_malformed_inputs) {
    /* a valid binary PLY, then cut and corrupted copies of it */
    char ply[512];
    size_t h = strlen(PLY_HEAD);
    memcpy(ply, PLY_HEAD, h);
    float xyz[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    memcpy(ply + h, xyz, sizeof xyz);
    ply[h + 36] = 3;
    int32_t idx[3] = {0, 1, 2};
    memcpy(ply + h + 37, idx, sizeof idx);
    size_t full = h + 49;
    DsMesh m;
    char err[512];
    CHECK_MSG(ds_mesh_read_mem("ok.ply", (uint8_t *)ply, full, &m, err, sizeof err) == 0, "%s", err);
    ds_mesh_free(&m);

    char bad_idx[512], nan_ply[512], huge_list[512];
    memcpy(bad_idx, ply, full);
    int32_t seven = 7;
    memcpy(bad_idx + h + 41, &seven, 4);
    memcpy(nan_ply, ply, full);
    float nan = NAN;
    memcpy(nan_ply + h + 16, &nan, 4);
    memcpy(huge_list, ply, full);
    huge_list[h + 36] = (char)250;

    char stl[84 + 50] = "solid fake header that is binary";
    stl[80] = 5; /* says 5 triangles, holds 1 */
    char stl_nan[84 + 50] = {0};
    stl_nan[80] = 1;
    memcpy(stl_nan + 84 + 12, &nan, 4);

    Bad bad[] = {
        {"trunc.ply", ply, full - 3, "corrupt or truncated: unexpected end of data"},
        {"trunc2.ply", ply, h + 20, "corrupt or truncated: element"},
        {"idx.ply", bad_idx, full, "out of range"},
        {"nan.ply", nan_ply, full, "not a finite float"},
        {"list.ply", huge_list, full, "corrupt or truncated: face"},
        {"count.ply", "ply\nformat ascii 1.0\nelement vertex 99999999999\nproperty float x\nend_header\n1\n", 0, "claims"},
        {"nohead.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n", 0, "end_header"},
        {"type.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty quad x\nend_header\n", 0, ":4: unknown property type"},
        {"asc.ply", "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
                    "end_header\n0 0 0\n1 1e39 0\n", 0, "asc.ply:9: value overflows"},
        {"asc2.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                     "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 -1\n",
         0, "asc2.ply:13: face 0: vertex index -1 out of range"},
        {"idx.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", 0, "idx.obj:4: vertex index 9 out of range"},
        {"zero.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", 0, "zero.obj:4: vertex index 0"},
        {"neg.obj", "v 0 0 0\nf -1 -2 -3\n", 0, "neg.obj:2: vertex index -2 out of range"},
        {"nan.obj", "v 0 0 0\nv nan 0 0\n", 0, "nan.obj:2: bad number 'nan'"},
        {"big.obj", "v 1e39 0 0\n", 0, "big.obj:1: bad number"},
        {"two.obj", "v 0 0 0\nv 1 0 0\nf 1 2\n", 0, "two.obj:3: face with 2 vertices"},
        {"vt.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/2 2/1 3/1\n", 0, "vt.obj:5: texture index 2 out of range"},
        {"utf16.obj", "\xfe\xff\0v\0 \0001", 8, "utf16.obj:1: NUL byte"},
        {"empty.obj", "# nothing\n", 0, "no vertices"},
        {"huge.off", "OFF\n353535235358 6 0\n0 0 0\n", 0, "huge.off:2: counts"},
        {"short.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n# padding so that the counts alone look plausible\n", 0,
         "short.off:5: file ends after 2 of 3 vertices"},
        {"idx.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n", 0, "idx.off:6: face 0: vertex index 3 out of range"},
        {"fc.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n99999 0 1 2\n", 0, "more than its line holds"},
        {"hdr.off", "OFX\n", 0, "hdr.off:1: not an OFF file"},
        {"bin.stl", stl, sizeof stl, "bin.stl: byte 80: corrupt or truncated binary STL: it says 5 triangles"},
        {"nan.stl", stl_nan, sizeof stl_nan, "nan.stl: byte 96"},
        {"short.stl", "abc", 0, "short.stl: byte 3"},
        {"vtx.stl", "solid x\nfacet normal 0 0 1\nouter loop\nvertex 1 2\n", 0, "vtx.stl:4: vertex needs 3 finite numbers"},
        {"loop.stl", "solid x\nfacet normal 0 0 1\nouter loop\nvertex 1 2 3\nendloop\n", 0, "loop.stl:5: loop with 1 vertices"},
        {"open.stl", "solid x\nfacet normal 0 0 1\nouter loop\nvertex 1 2 3\n", 0, "open.stl:4: file ends inside a facet"},
        {"x.dae", "<xml/>", 0, "unknown mesh format"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) check_bad(&bad[i]);
}

/* ---- seed corpora and real files ----------------------------------------------------------- */

typedef int (*ReadMem)(const char *name, const uint8_t *d, size_t n, char *err, size_t errlen);

static int read_mesh_mem(const char *name, const uint8_t *d, size_t n, char *err, size_t errlen) {
    DsMesh m;
    int rc = ds_mesh_read_mem(name, d, n, &m, err, errlen);
    if (!rc) ds_mesh_free(&m);
    return rc;
}

static int read_gs_mem(const char *name, const uint8_t *d, size_t n, char *err, size_t errlen) {
    DsGaussians g;
    int rc = ds_gaussians_read_mem(name, d, n, &g, err, errlen);
    if (!rc) ds_gaussians_free(&g);
    return rc;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)len + 1);
    *n = fread(d, 1, (size_t)len, f);
    fclose(f);
    return d;
}

/* Every seed of a reader: accepted, or rejected with a message; "crash-*" seeds (inputs a
 * fuzzer once broke the reader with) must be read without a crash either way. Every prefix of
 * each seed too — truncation is the commonest real-world damage. */
static int run_corpus(const char *dir, const char *ext, ReadMem fn) {
    DIR *d = opendir(dir);
    CHECK_MSG(d, "no seed corpus %s (run from the repository root)", dir);
    if (!d) return 0;
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024], name[1100];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(name, sizeof name, "%s.%s", path, ext); /* the extension picks the reader */
        size_t n;
        uint8_t *data = slurp(path, &n);
        if (!data) continue;
        files++;
        char err[512] = "";
        int rc = fn(name, data, n, err, sizeof err);
        if (strncmp(e->d_name, "crash-", 6))
            CHECK_MSG(rc == 0, "seed %s rejected: %s", path, err);
        for (size_t k = 0; k < n; k += 1 + n / 64) {
            err[0] = 0;
            uint8_t *cut = malloc(k + 1);
            memcpy(cut, data, k);
            if (fn(name, cut, k, err, sizeof err)) CHECK_MSG(strstr(err, name), "seed %s cut at %zu: bad message '%s'", path, k, err);
            free(cut);
        }
        free(data);
    }
    closedir(d);
    return files;
}

TEST(mesh_seed_corpora) {
    const char *fmts[] = {"obj", "ply", "off", "stl"};
    for (int i = 0; i < 4; i++) {
        char dir[128];
        snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", fmts[i]);
        CHECK_MSG(run_corpus(dir, fmts[i], read_mesh_mem) > 0, "%s: empty corpus", dir);
    }
    CHECK(run_corpus("tests/fuzz/corpus/gsply", "ply", read_gs_mem) > 0);
}

/* ds_mesh_readable_name and ds_mesh_list_dir: the mesh files of a folder, in name order, without
 * hidden files, other extensions or sub-folders' contents */
TEST(mesh_list_dir) {
    CHECK(ds_mesh_readable_name("a.obj") && ds_mesh_readable_name("B.PLY") && ds_mesh_readable_name("c.Off") &&
          ds_mesh_readable_name("d.stl") && ds_mesh_readable_name("dir.x/e.obj"));
    CHECK(!ds_mesh_readable_name("a.h5") && !ds_mesh_readable_name("obj") && !ds_mesh_readable_name("a.obj/b") &&
          !ds_mesh_readable_name("a.objx") && !ds_mesh_readable_name(""));
    char dir[64] = "/tmp/anima-list-XXXXXX", path[128];
    CHECK(mkdtemp(dir) != NULL);
    const char *files[] = {"b.ply", "a.OBJ", ".hidden.obj", "notes.txt", "c.stl", "z.off"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "w");
        CHECK(f && fclose(f) == 0);
    }
    snprintf(path, sizeof path, "%s/sub", dir);
    CHECK(mkdir(path, 0700) == 0);
    char **names;
    int64_t n;
    CHECK(ds_mesh_list_dir(dir, &names, &n) == 0);
    CHECK_MSG(n == 4 && !strcmp(names[0], "a.OBJ") && !strcmp(names[1], "b.ply") && !strcmp(names[2], "c.stl") &&
                  !strcmp(names[3], "z.off"),
              "%lld names", (long long)n);
    ds_mesh_names_free(names, n);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK(ds_mesh_list_dir(dir, &names, &n) == -1 && errno == ENOENT && names == NULL && n == 0);
}

TEST(mesh_assimp_testmodels) {
    struct stat st;
    if (stat(ASSIMP_DIR, &st) != 0) {
        printf("    skipped: %s absent (apt-get install assimp-testmodels, or datasets/fetch-real.sh)\n", ASSIMP_DIR);
        exit(77);
    }
    /* files assimp ships as broken, or that are broken in ways anima refuses on purpose */
    static const char *const reject[][2] = {
        {"OBJ/box_UTF16BE.obj", "NUL byte"},           /* UTF-16: not a text encoding anima reads */
        {"OBJ/number_formats.obj", "bad number '3.1+e2'"}, /* "3.1+e2" is not a number */
        {"OFF/invalid.off", "face 0 has 0 vertices"},
        {"PLY/issue623.ply", "is not a uchar"},         /* declares a list the data lacks */
        {"PLY/pond.0.ply", "claims 70051 entries"},     /* truncated: 69 bytes short */
        {"invalid/OutOfMemory.off", "impossible"},
        {"invalid/empty.obj", "no vertices"},
        {"invalid/empty.off", "empty file"},
        {"invalid/empty.ply", "empty file"},
        {"invalid/malformed.obj", "vertex index 12 out of range"},
        {"invalid/malformed2.obj", "face with 0 vertices"},
    };
    const char *dirs[] = {"OBJ", "PLY", "OFF", "STL", "invalid"};
    int ok = 0, rejected = 0;
    for (int di = 0; di < 5; di++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", ASSIMP_DIR, dirs[di]);
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            const char *dot = strrchr(e->d_name, '.');
            if (!dot || (strcasecmp(dot, ".obj") && strcasecmp(dot, ".ply") && strcasecmp(dot, ".off") &&
                         strcasecmp(dot, ".stl")))
                continue;
            char rel[512], path[1024], err[512] = "";
            snprintf(rel, sizeof rel, "%s/%s", dirs[di], e->d_name);
            snprintf(path, sizeof path, "%s/%s", ASSIMP_DIR, rel);
            const char *want = NULL;
            for (size_t k = 0; k < sizeof reject / sizeof *reject; k++)
                if (!strcmp(rel, reject[k][0])) want = reject[k][1];
            DsMesh m;
            int rc = ds_mesh_read(path, &m, err, sizeof err);
            if (want) {
                CHECK_MSG(rc != 0 && strstr(err, want), "%s: expected an error with '%s', got '%s'", rel, want,
                          rc ? err : "success");
                rejected++;
            } else {
                CHECK_MSG(rc == 0, "%s: %s", rel, err);
                if (!rc) {
                    for (int64_t i = 0; i < 3 * m.nf; i++)
                        if (m.f[i] < 0 || m.f[i] >= m.nv) {
                            test_fail_at(__FILE__, __LINE__, "%s: bad index", rel);
                            break;
                        }
                    ok++;
                }
            }
            if (!rc) ds_mesh_free(&m);
        }
        closedir(d);
    }
    printf("    %d assimp test meshes read, %d rejected as expected\n", ok, rejected);
    CHECK(ok >= 30);
}

/* ---- 3D Gaussian Splatting PLY --------------------------------------------------------------- */

TEST(gaussian_ply_roundtrip) {
    char err[512];
    for (int deg = 0; deg <= 3; deg++) {
        DsGaussians g, h;
        int64_t n = 5 + deg;
        CHECK(ds_gaussians_alloc(&g, n, deg) == 0);
        int K = ds_gaussians_sh_count(deg);
        uint32_t s = 12345u + (uint32_t)deg;
#define RND() ((s = s * 1664525u + 1013904223u), (float)(s >> 8) / 16777216.0f * 4.0f - 2.0f)
        for (int64_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++) g.xyz[3 * i + k] = RND(), g.scale[3 * i + k] = RND();
            for (int k = 0; k < 4; k++) g.rot[4 * i + k] = RND();
            for (int k = 0; k < 3 * K; k++) g.sh[(size_t)i * 3 * (size_t)K + (size_t)k] = RND();
            g.opacity[i] = RND();
        }
#undef RND
        const char *p = tmp_path("g.ply");
        CHECK_MSG(ds_gaussians_write(p, &g, err, sizeof err) == 0, "%s", err);
        if (ds_gaussians_read(p, &h, err, sizeof err)) {
            test_fail_at(__FILE__, __LINE__, "%s", err);
            ds_gaussians_free(&g);
            continue;
        }
        CHECK(h.n == n && h.sh_degree == deg);
        CHECK(!memcmp(g.xyz, h.xyz, sizeof(float) * 3 * (size_t)n));
        CHECK(!memcmp(g.sh, h.sh, sizeof(float) * 3 * (size_t)K * (size_t)n));
        CHECK(!memcmp(g.opacity, h.opacity, sizeof(float) * (size_t)n));
        CHECK(!memcmp(g.scale, h.scale, sizeof(float) * 3 * (size_t)n));
        CHECK(!memcmp(g.rot, h.rot, sizeof(float) * 4 * (size_t)n));
        /* the file is the reference layout: 14 + 3K floats per Gaussian after the header */
        struct stat st;
        stat(p, &st);
        size_t n_after = (size_t)st.st_size;
        CHECK(n_after > (size_t)n * (size_t)(14 + 3 * K) * 4);
        ds_gaussians_free(&g);
        ds_gaussians_free(&h);
    }
    tmp_cleanup();
}

TEST(gaussian_ply_channel_major_rest) {
    /* degree 1, f_rest_j = j in the file (channel-major): sh[k][c] must be c·3 + (k-1) */
    char text[2048] = "ply\nformat ascii 1.0\nelement vertex 1\n";
    const char *props[] = {"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1", "scale_2",
                           "rot_0", "rot_1", "rot_2", "rot_3"};
    for (int j = 0; j < 9; j++) sprintf(text + strlen(text), "property float f_rest_%d\n", j);
    for (int i = 0; i < 14; i++) sprintf(text + strlen(text), "property float %s\n", props[i]);
    strcat(text, "property uchar extra\nend_header\n");
    for (int j = 0; j < 9; j++) sprintf(text + strlen(text), "%d ", j);
    strcat(text, "1 2 3 10 11 12 -4 -1 -2 -3 1 0 0 0 7\n");
    DsGaussians g;
    char err[512];
    if (ds_gaussians_read_mem("cm.ply", (const uint8_t *)text, strlen(text), &g, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return;
    }
    CHECK(g.n == 1 && g.sh_degree == 1);
    for (int k = 1; k < 4; k++)
        for (int c = 0; c < 3; c++) CHECK_NEAR(g.sh[3 * k + c], c * 3 + (k - 1), 0);
    CHECK_NEAR(g.sh[0], 10, 0);
    CHECK_NEAR(g.sh[2], 12, 0);
    CHECK_NEAR(g.opacity[0], -4, 0);
    CHECK_NEAR(g.scale[2], -3, 0);
    CHECK_NEAR(g.rot[0], 1, 0);
    ds_gaussians_free(&g);

    const char *bad[][2] = {
        {"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n1\n", "lacks property 'y'"},
        {"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float f_rest_50\nend_header\n", "f_rest"},
    };
    for (int i = 0; i < 2; i++) {
        err[0] = 0;
        CHECK(ds_gaussians_read_mem("bad.ply", (const uint8_t *)bad[i][0], strlen(bad[i][0]), &g, err, sizeof err) != 0);
        CHECK_MSG(strstr(err, bad[i][1]), "'%s' lacks '%s'", err, bad[i][1]);
    }
}

TEST(mesh_real_bunny) {
    /* written by datasets/fetch-real.sh (npm's bunny, converted to PLY) */
    struct stat st;
    if (stat("data/real/bunny.ply", &st) != 0) {
        printf("    skipped: data/real/bunny.ply absent (run datasets/fetch-real.sh)\n");
        exit(77);
    }
    DsMesh m;
    if (read_ok("data/real/bunny.ply", &m)) return;
    CHECK(m.nv > 1000 && m.nf > 2000);
    /* the bunny converted intact: its size, and every index in range */
    for (int64_t i = 0; i < 3 * m.nf; i++) CHECK(m.f[i] >= 0 && m.f[i] < m.nv);
    ds_mesh_free(&m);
}
