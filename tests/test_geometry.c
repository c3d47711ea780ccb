/* tests/test_geometry.c — mesh checks, area-weighted and sharp-edge sampling, generalized
 * winding numbers (fast vs exact, analytic inside/outside, holes), grid volumes, marching cubes
 * topology, the preprocessing pipeline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "datasets/geometry/geometry.h"
#include "tensor/tensor.h"
#include "tests/test.h"

/* uniform in [-1,1]³ from philox, reproducible */
static void rand_points(uint64_t seed, int64_t n, float *p) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t r[4];
        tensor_philox(seed, 7, (uint64_t)i, r);
        for (int k = 0; k < 3; k++) p[3 * i + k] = (float)(((double)r[k] + 0.5) / 4294967296.0 * 2 - 1);
    }
}

/* union-find: sets merge under their smaller root, a merge within one set reports false, and
 * find compresses the path it walks */
TEST(geom_union_find) {
    int64_t p[8];
    for (int64_t i = 0; i < 8; i++) p[i] = i;
    CHECK(ds_uf_union(p, 5, 3));
    CHECK(ds_uf_union(p, 3, 7));
    CHECK(ds_uf_union(p, 1, 7));
    CHECK(!ds_uf_union(p, 5, 1));
    for (int64_t i = 0; i < 8; i++) {
        bool in = i == 1 || i == 3 || i == 5 || i == 7;
        CHECK(ds_uf_find(p, i) == (in ? 1 : i));
    }
    /* a chain 6 → 4 → 2 → 0 is halved by one find: 6 then points at 2, and 2 at 0 */
    int64_t q[7] = {0, 1, 0, 3, 2, 5, 4};
    CHECK(ds_uf_find(q, 6) == 0);
    CHECK(q[6] == 2 && q[4] == 2 && q[2] == 0);
    int64_t comps = 8;
    int64_t r[8];
    for (int64_t i = 0; i < 8; i++) r[i] = i;
    const int64_t e[][2] = {{0, 1}, {1, 2}, {2, 0}, {4, 5}, {6, 6}};
    for (int k = 0; k < 5; k++) comps -= ds_uf_union(r, e[k][0], e[k][1]);
    CHECK(comps == 5);
}

/* area-weighted vertex normals: vertices 0 and 2 are on a triangle of area 2 facing +z and one of
 * area 1 facing +x, so their normal is (1, 0, 2)/√5; a repeated-index face, an out-of-range one
 * and the unused vertices 4 and 5 add nothing */
TEST(geom_vertex_normals) {
    const float v[] = {0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 0, 5, 5, 5};
    const int32_t f[] = {0, 1, 2, 0, 2, 3, 1, 1, 2, 0, 1, 9};
    float n[18];
    CHECK(ds_vertex_normals(6, v, 4, f, n) == 0);
    CHECK_NEAR(n[0], 1 / sqrt(5.0), 1e-7);
    CHECK_NEAR(n[1], 0, 1e-7);
    CHECK_NEAR(n[2], 2 / sqrt(5.0), 1e-7);
    CHECK(n[3] == 0 && n[4] == 0 && n[5] == 1); /* vertex 1: the z face only */
    CHECK(n[9] == 1 && n[10] == 0 && n[11] == 0); /* vertex 3: the x face only */
    CHECK(n[6] == n[0] && n[7] == n[1] && n[8] == n[2]);
    for (int k = 12; k < 18; k++) CHECK(n[k] == 0);
    /* ds_mesh_compute_normals is the same function on a mesh */
    DsMesh s;
    CHECK(ds_mesh_make_uv_sphere(0.8f, 12, 24, &s) == 0);
    float *ns = malloc(sizeof(float) * 3 * (size_t)s.nv);
    CHECK(ns && ds_vertex_normals(s.nv, s.v, s.nf, s.f, ns) == 0);
    CHECK(ds_mesh_compute_normals(&s) == 0);
    CHECK(memcmp(ns, s.n, sizeof(float) * 3 * (size_t)s.nv) == 0);
    free(ns);
    ds_mesh_free(&s);
}

TEST(geom_mesh_checks) {
    DsMesh s, t, b;
    CHECK(ds_mesh_make_uv_sphere(0.8f, 24, 48, &s) == 0);
    CHECK(ds_mesh_make_torus(0.6f, 0.25f, 48, 24, &t) == 0);
    float half[3] = {0.7f, 0.5f, 0.3f};
    CHECK(ds_mesh_make_box(half, 3, &b) == 0);
    DsMeshCheck c;
    CHECK(ds_mesh_check(&s, &c) == 0);
    CHECK(c.watertight && c.manifold && c.oriented && c.euler == 2 && c.genus == 0 && c.components == 1);
    CHECK_NEAR(c.volume, 4.0 / 3 * M_PI * 0.512, 0.03);
    CHECK(ds_mesh_check(&t, &c) == 0);
    CHECK(c.watertight && c.manifold && c.oriented && c.euler == 0 && c.genus == 1);
    CHECK(ds_mesh_check(&b, &c) == 0);
    CHECK(c.watertight && c.manifold && c.oriented && c.euler == 2);
    CHECK_NEAR(c.volume, 1.4 * 1.0 * 0.6, 1e-5);
    CHECK_NEAR(c.lo[0], -0.7, 1e-6);
    CHECK_NEAR(c.hi[2], 0.3, 1e-6);
    /* a flipped face: its three edges are misoriented, the mesh is still watertight */
    int32_t tmp = b.f[1];
    b.f[1] = b.f[2], b.f[2] = tmp;
    CHECK(ds_mesh_check(&b, &c) == 0);
    CHECK(c.watertight && !c.oriented && c.misoriented_edges == 3 && c.genus == -1);
    /* a removed face: three boundary edges */
    s.nf--;
    CHECK(ds_mesh_check(&s, &c) == 0);
    CHECK(!c.watertight && c.boundary_edges == 3 && c.edge_manifold && c.euler == 1);
    s.nf++;
    /* two spheres sharing one vertex: a non-manifold vertex, two components no more */
    DsMesh two = {0};
    two.nv = 2 * s.nv - 1, two.nf = 2 * s.nf;
    two.v = malloc(sizeof(float) * 3 * (size_t)two.nv);
    two.f = malloc(sizeof(int32_t) * 3 * (size_t)two.nf);
    memcpy(two.v, s.v, sizeof(float) * 3 * (size_t)s.nv);
    /* second copy shifted up by 1.6 and glued at its south pole (last vertex) = first's north (0) */
    for (int64_t i = 0; i < s.nv - 1; i++)
        for (int k = 0; k < 3; k++) two.v[3 * (s.nv + i) + k] = s.v[3 * i + k] + (k == 2 ? 1.6f : 0.0f);
    memcpy(two.f, s.f, sizeof(int32_t) * 3 * (size_t)s.nf);
    for (int64_t i = 0; i < 3 * s.nf; i++) {
        int32_t v = s.f[i];
        two.f[3 * s.nf + i] = v == s.nv - 1 ? 0 : (int32_t)(s.nv + v);
    }
    CHECK(ds_mesh_check(&two, &c) == 0);
    CHECK(c.watertight && c.edge_manifold && !c.manifold && c.nonmanifold_vertices == 1 && c.components == 1);
    ds_mesh_free(&two);
    ds_mesh_free(&s), ds_mesh_free(&t), ds_mesh_free(&b);
}

/* ds_mesh_flip: the box turned inside out has the negative volume, every face's corners 0, 2, 1
 * and the normals negated; flipped twice it is the box again */
TEST(geom_mesh_flip) {
    float half[3] = {0.7f, 0.5f, 0.3f};
    DsMesh b, c;
    CHECK(ds_mesh_make_box(half, 2, &b) == 0);
    CHECK(ds_mesh_compute_normals(&b) == 0);
    CHECK(ds_mesh_copy(&b, &c) == 0);
    double vol = ds_mesh_signed_volume(&b);
    ds_mesh_flip(&c);
    CHECK_NEAR(ds_mesh_signed_volume(&c), -vol, 1e-9);
    bool faces = true, normals = true;
    for (int64_t f = 0; f < b.nf; f++)
        faces &= c.f[3 * f] == b.f[3 * f] && c.f[3 * f + 1] == b.f[3 * f + 2] && c.f[3 * f + 2] == b.f[3 * f + 1];
    for (int64_t i = 0; i < 3 * b.nv; i++) normals &= c.n[i] == -b.n[i];
    CHECK(faces && normals);
    DsMeshCheck mc;
    CHECK(ds_mesh_check(&c, &mc) == 0 && mc.watertight && mc.oriented);
    ds_mesh_flip(&c);
    CHECK(!memcmp(c.f, b.f, sizeof(int32_t) * 3 * (size_t)b.nf) && !memcmp(c.n, b.n, sizeof(float) * 3 * (size_t)b.nv));
    /* without normals only the faces turn */
    free(c.n), c.n = NULL;
    ds_mesh_flip(&c);
    CHECK(c.n == NULL && c.f[1] == b.f[2]);
    ds_mesh_free(&b), ds_mesh_free(&c);
}

/* The unit square [0,1]² as one big triangle (half the area) and, over the other half, a fan of
 * 300 slivers whose areas span six orders of magnitude. A χ² test over an 8×8 grid of bins. */
TEST(geom_sample_area_uniform_chi2) {
    const int K = 300;
    DsMesh m = {0};
    m.nv = 3 + K + 1;
    m.nf = 1 + K;
    m.v = calloc((size_t)(3 * m.nv), sizeof(float));
    m.f = malloc(sizeof(int32_t) * 3 * (size_t)m.nf);
    float base[3][2] = {{0, 0}, {1, 0}, {1, 1}};
    for (int i = 0; i < 3; i++) m.v[3 * i] = base[i][0], m.v[3 * i + 1] = base[i][1];
    m.f[0] = 0, m.f[1] = 1, m.f[2] = 2;
    /* apex (0,1); points on the diagonal at t_k = (k/K)^4 */
    int apex = 3;
    m.v[3 * apex] = 0, m.v[3 * apex + 1] = 1;
    for (int k = 0; k < K; k++) {
        double t0 = pow((double)k / K, 4);
        int vi = 4 + k;
        m.v[3 * vi] = (float)t0, m.v[3 * vi + 1] = (float)t0;
    }
    for (int k = 0; k < K; k++) {
        int a = 4 + k, b = k + 1 < K ? 4 + k + 1 : 2; /* the last sliver ends at (1,1) */
        m.f[3 * (1 + k)] = a, m.f[3 * (1 + k) + 1] = b, m.f[3 * (1 + k) + 2] = apex;
    }
    int64_t n = test_quick() ? 64000 : 640000;
    float *p = malloc(sizeof(float) * 3 * (size_t)n), *nr = malloc(sizeof(float) * 3 * (size_t)n);
    CHECK(ds_sample_surface(&m, n, 1234, p, nr, NULL) == 0);
    double cnt[64] = {0};
    int64_t big = 0;
    for (int64_t i = 0; i < n; i++) {
        int bx = (int)(p[3 * i] * 8), by = (int)(p[3 * i + 1] * 8);
        if (bx > 7) bx = 7;
        if (by > 7) by = 7;
        cnt[by * 8 + bx]++;
        big += p[3 * i] >= p[3 * i + 1];
        CHECK(fabsf(p[3 * i + 2]) < 1e-6f && fabsf(fabsf(nr[3 * i + 2]) - 1) < 1e-5f);
    }
    double e = (double)n / 64, chi2 = 0;
    for (int b = 0; b < 64; b++) chi2 += (cnt[b] - e) * (cnt[b] - e) / e;
    /* 63 degrees of freedom: P(χ² > 103.4) = 0.001 */
    CHECK_MSG(chi2 < 103.4, "chi2 = %.1f over 64 bins (63 dof)", chi2);
    CHECK_NEAR((double)big / n, 0.5, 4.0 / sqrt((double)n));
    /* reproducible: the same seed gives the same points whatever the thread count */
    float *q = malloc(sizeof(float) * 3 * 1000);
    CHECK(ds_sample_surface(&m, 1000, 1234, q, NULL, NULL) == 0);
    CHECK(memcmp(p, q, sizeof(float) * 3 * 1000) == 0);
    free(p), free(nr), free(q);
    ds_mesh_free(&m);
}

TEST(geom_sharp_edges) {
    float half[3] = {0.5f, 0.5f, 0.5f};
    DsMesh b, s;
    CHECK(ds_mesh_make_box(half, 4, &b) == 0);
    CHECK(ds_mesh_make_uv_sphere(0.5f, 32, 64, &s) == 0);
    CHECK_NEAR(ds_mesh_sharp_edge_length(&b, 30), 12.0, 1e-4); /* the 12 unit edges */
    CHECK(ds_mesh_sharp_edge_length(&s, 30) == 0);
    float p[3 * 2000], n[3 * 2000];
    CHECK(ds_sample_sharp_edges(&b, 2000, 30, 5, p, n) == 2000);
    for (int i = 0; i < 2000; i++) {
        int on = 0;
        for (int k = 0; k < 3; k++) on += fabsf(fabsf(p[3 * i + k]) - 0.5f) < 1e-5f;
        CHECK(on >= 2);
        /* the normal bisects the two faces: (±1, ±1, 0)/√2 up to permutation */
        float l = sqrtf(n[3 * i] * n[3 * i] + n[3 * i + 1] * n[3 * i + 1] + n[3 * i + 2] * n[3 * i + 2]);
        CHECK(fabsf(l - 1) < 1e-5f);
    }
    CHECK(ds_sample_sharp_edges(&s, 100, 30, 5, p, n) == 0);
    ds_mesh_free(&b), ds_mesh_free(&s);
}

TEST(geom_winding_fast_vs_exact) {
    DsMesh t;
    CHECK(ds_mesh_make_torus(0.6f, 0.3f, 96, 48, &t) == 0);
    DsWinding *w = ds_winding_build(&t);
    CHECK(w != NULL);
    int n = test_quick() ? 100 : 1000;
    float *p = malloc(sizeof(float) * 3 * (size_t)n);
    rand_points(11, n, p);
    double maxerr = 0, sumerr = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs(ds_winding_eval(w, p + 3 * i) - ds_winding_exact(&t, p + 3 * i));
        if (e > maxerr) maxerr = e;
        sumerr += e;
    }
    /* order-3 far field at β = 2: the worst points sit next to the surface, where a cluster
     * just past 2R contributes up to ~0.06 with a truncation error of a few percent of it */
    printf("    fast vs exact on %d points: max %.2e, mean %.2e\n", n, maxerr, sumerr / n);
    CHECK_MSG(maxerr < 3e-2, "max |fast − exact| = %g", maxerr);
    CHECK_MSG(sumerr / n < 2e-3, "mean |fast − exact| = %g", sumerr / n);
    ds_winding_set_beta(w, 0);
    CHECK_NEAR(ds_winding_eval(w, p), ds_winding_exact(&t, p), 1e-9);
    free(p);
    ds_winding_free(w);
    ds_mesh_free(&t);
}

typedef double (*Sdf)(const float p[3]);
static double sdf_sphere(const float p[3]) { return sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) - 0.8; }
static double sdf_torus(const float p[3]) {
    double q = sqrt(p[0] * p[0] + p[1] * p[1]) - 0.6;
    return sqrt(q * q + p[2] * p[2]) - 0.3;
}

/* fraction of points with |sdf| > margin where (w > ½) == (sdf < 0); also counts them */
static double agreement(const DsMesh *m, Sdf sdf, int64_t n, double margin, int64_t *used, const float *hole_c,
                        double hole_r) {
    float *p = malloc(sizeof(float) * 3 * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
    rand_points(99, n, p);
    DsWinding *wn = ds_winding_build(m);
    ds_winding_eval_many(wn, n, p, w);
    int64_t ok = 0, cnt = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = sdf(p + 3 * i);
        if (fabs(d) <= margin) continue;
        if (hole_c) {
            double dx = p[3 * i] - hole_c[0], dy = p[3 * i + 1] - hole_c[1], dz = p[3 * i + 2] - hole_c[2];
            if (sqrt(dx * dx + dy * dy + dz * dz) < hole_r) continue;
        }
        cnt++;
        ok += (w[i] > 0.5f) == (d < 0);
    }
    ds_winding_free(wn);
    free(p), free(w);
    *used = cnt;
    return cnt ? (double)ok / (double)cnt : 0;
}

TEST(geom_winding_sphere_torus_100k) {
    DsMesh s, t;
    CHECK(ds_mesh_make_uv_sphere(0.8f, 64, 128, &s) == 0);
    CHECK(ds_mesh_make_torus(0.6f, 0.3f, 128, 64, &t) == 0);
    int64_t n = test_quick() ? 10000 : 100000, used;
    double a = agreement(&s, sdf_sphere, n, 0.01, &used, NULL, 0);
    CHECK_MSG(a == 1.0, "sphere: %.6f agreement on %lld points", a, (long long)used);
    CHECK(used > n * 9 / 10);
    a = agreement(&t, sdf_torus, n, 0.01, &used, NULL, 0);
    CHECK_MSG(a == 1.0, "torus: %.6f agreement on %lld points", a, (long long)used);
    ds_mesh_free(&s), ds_mesh_free(&t);
}

/* A sphere with a cap of faces removed (a hole ~0.5 across): the winding number still
 * separates inside from outside away from the hole. */
TEST(geom_winding_hole_punched) {
    DsMesh s;
    CHECK(ds_mesh_make_uv_sphere(0.8f, 64, 128, &s) == 0);
    int64_t k = 0;
    for (int64_t f = 0; f < s.nf; f++) {
        float cx = 0, cy = 0, cz = 0;
        for (int j = 0; j < 3; j++) {
            const float *v = s.v + 3 * (int64_t)s.f[3 * f + j];
            cx += v[0] / 3, cy += v[1] / 3, cz += v[2] / 3;
        }
        /* the hole faces +x */
        if (cx > 0.75f) continue;
        (void)cy, (void)cz;
        memmove(s.f + 3 * k, s.f + 3 * f, 3 * sizeof(int32_t));
        k++;
    }
    CHECK(k < s.nf);
    s.nf = k;
    DsMeshCheck c;
    ds_mesh_check(&s, &c);
    CHECK(!c.watertight && c.boundary_edges > 0);
    int64_t n = test_quick() ? 10000 : 100000, used;
    float hole[3] = {0.8f, 0, 0};
    double a = agreement(&s, sdf_sphere, n, 0.02, &used, hole, 0.5);
    CHECK_MSG(a > 0.99, "hole-punched sphere: %.5f agreement on %lld points", a, (long long)used);
    double all = agreement(&s, sdf_sphere, n, 0.02, &used, NULL, 0);
    printf("    hole-punched sphere: agreement %.5f away from the hole, %.5f everywhere\n", a, all);
    ds_mesh_free(&s);
}

static void rot(float R[9], float ax, float ay) {
    float cx = cosf(ax), sx = sinf(ax), cy = cosf(ay), sy = sinf(ay);
    /* R = Ry · Rx */
    float r[9] = {cy, sy * sx, sy * cx, 0, cx, -sx, -sy, cy * sx, cy * cx};
    memcpy(R, r, sizeof r);
}

TEST(geom_volume_grid_128) {
    int res = test_quick() ? 64 : 128;
    double tol = test_quick() ? 0.02 : 0.01;
    char err[256];
    DsMesh s, t, b;
    CHECK(ds_mesh_make_uv_sphere(0.8f, 70, 72, &s) == 0); /* ≈ 10k triangles */
    CHECK(ds_mesh_make_torus(0.6f, 0.3f, 128, 64, &t) == 0);
    float half[3] = {0.6f, 0.45f, 0.3f}, R[9], tr[3] = {0.03f, -0.02f, 0.01f};
    CHECK(ds_mesh_make_box(half, 4, &b) == 0);
    rot(R, 0.5f, 0.7f);
    ds_mesh_rigid(&b, R, tr);
    struct {
        const char *name;
        DsMesh *m;
        double exact;
    } cases[3] = {{"sphere", &s, 4.0 / 3 * M_PI * 0.512}, {"torus", &t, 2 * M_PI * M_PI * 0.6 * 0.09}, {"box", &b, 1.2 * 0.9 * 0.6}};
    for (int i = 0; i < 3; i++) {
        DsCubature c;
        double t0 = base_now();
        CHECK(ds_cubature_winding(cases[i].m, res, &c, err, sizeof err) == 0);
        double dt = base_now() - t0;
        double mesh_vol = ds_mesh_signed_volume(cases[i].m);
        printf("    %s: %d³ grid vs %lld triangles in %.2f s; volume %.5f (analytic %.5f, mesh %.5f, rel %.2e)\n",
               cases[i].name, res, (long long)cases[i].m->nf, dt, c.volume, cases[i].exact, mesh_vol,
               fabs(c.volume - cases[i].exact) / cases[i].exact);
        CHECK_MSG(fabs(c.volume - cases[i].exact) < tol * cases[i].exact, "%s volume %.5f vs %.5f", cases[i].name,
                  c.volume, cases[i].exact);
        double sum = 0;
        for (int64_t j = 0; j < c.n; j++) sum += c.w[j];
        CHECK_NEAR(sum, c.volume, 1e-4 * c.volume);
        ds_cubature_free(&c);
    }
    ds_mesh_free(&s), ds_mesh_free(&t), ds_mesh_free(&b);
}

/* Marching cubes on white noise (the worst case for ambiguous faces) is still watertight,
 * manifold and consistently oriented, and a sphere comes out with χ = 2 and the right volume. */
TEST(geom_marching_cubes_topology) {
    int N = test_quick() ? 24 : 48;
    float *f = malloc(sizeof(float) * (size_t)(N * N * N));
    for (int64_t i = 0; i < (int64_t)N * N * N; i++) {
        int x = (int)(i % N), y = (int)(i / N % N), z = (int)(i / N / N);
        uint32_t r[4];
        tensor_philox(3, 0, (uint64_t)i, r);
        f[i] = (x == 0 || y == 0 || z == 0 || x == N - 1 || y == N - 1 || z == N - 1) ? 1.0f : (float)r[0] / 4294967296.0f - 0.5f;
    }
    float o[3] = {-1, -1, -1};
    DsMesh m;
    DsMeshCheck c;
    CHECK(ds_marching_cubes(f, N, N, N, o, 2.0f / (N - 1), &m) == 0);
    CHECK(ds_mesh_check(&m, &c) == 0);
    CHECK_MSG(c.watertight && c.manifold && c.oriented && c.degenerate_faces == 0,
              "noise: boundary %lld nonmanifold e %lld v %lld misoriented %lld", (long long)c.boundary_edges,
              (long long)c.nonmanifold_edges, (long long)c.nonmanifold_vertices, (long long)c.misoriented_edges);
    CHECK(c.volume > 0);
    ds_mesh_free(&m);
    float h = 2.0f / (N - 1);
    for (int64_t i = 0; i < (int64_t)N * N * N; i++) {
        float x = -1 + h * (float)(i % N), y = -1 + h * (float)(i / N % N), z = -1 + h * (float)(i / N / N);
        f[i] = sqrtf(x * x + y * y + z * z) - 0.7f;
    }
    CHECK(ds_marching_cubes(f, N, N, N, o, h, &m) == 0);
    CHECK(ds_mesh_check(&m, &c) == 0);
    CHECK(c.watertight && c.manifold && c.oriented && c.euler == 2);
    CHECK_NEAR(c.volume, 4.0 / 3 * M_PI * 0.343, 0.02 * 4.0 / 3 * M_PI * 0.343);
    /* normals point outward */
    int64_t inward = 0;
    for (int64_t i = 0; i < m.nv; i++) {
        const float *p = m.v + 3 * i, *n = m.n + 3 * i;
        inward += p[0] * n[0] + p[1] * n[1] + p[2] * n[2] <= 0.6f;
    }
    CHECK(inward == 0);
    ds_mesh_free(&m);
    free(f);
}

TEST(geom_preprocess_pipeline) {
    DsMesh t;
    CHECK(ds_mesh_make_torus(3.0f, 1.0f, 64, 32, &t) == 0);
    float R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, tr[3] = {10, -5, 2};
    ds_mesh_rigid(&t, R, tr);
    DsPreprocessOptions o;
    ds_preprocess_defaults(&o);
    o.grid_res = test_quick() ? 48 : 96;
    o.n_dense = 20000;
    DsPreprocessed pp;
    char err[256];
    CHECK_MSG(ds_preprocess(&t, &o, &pp, err, sizeof err) == 0, "%s", err);
    CHECK(pp.n_surface == 4096 && pp.n_dense == 20000);
    CHECK(pp.n_sharp == 0); /* a smooth torus has no edge above 30° */
    CHECK(pp.check.watertight && pp.check.genus == 1);
    for (int k = 0; k < 3; k++) {
        CHECK(pp.check.lo[k] >= -1.0001f && pp.check.hi[k] <= 1.0001f);
        CHECK_NEAR(pp.xf.center[k], tr[k], 1e-4);
    }
    CHECK_NEAR(pp.xf.scale, 2.0 / 8.0, 1e-6);
    CHECK_NEAR(pp.check.hi[0] - pp.check.lo[0], 2.0, 1e-5);
    for (int64_t i = 0; i < pp.n_surface; i++) {
        float *p = pp.surface + 3 * i;
        double q = sqrt(p[0] * p[0] + p[1] * p[1]) - 0.75;
        CHECK(fabs(sqrt(q * q + p[2] * p[2]) - 0.25) < 0.01);
        if (fabs(sqrt(q * q + p[2] * p[2]) - 0.25) >= 0.01) break;
    }
    CHECK_NEAR(pp.cubature.volume, pp.check.volume, 0.03 * pp.check.volume);
    printf("    preprocess: %lld interior points at %d³, volume %.4f (mesh %.4f), winding %.2f s\n",
           (long long)pp.cubature.n, o.grid_res, pp.cubature.volume, pp.check.volume, pp.seconds_winding);
    ds_preprocessed_free(&pp);
    ds_mesh_free(&t);
}
