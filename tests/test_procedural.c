/* tests/test_procedural.c — the procedural corpus: every category gives closed, manifold,
 * oriented meshes of the promised genus for many seeds; skeletons are trees; LBS weights are
 * partitions of unity; the family mode is continuous in t; SDF and winding-number cubature
 * agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "datasets/geometry/procedural.h"
#include "tests/test.h"

/* 0 when the shape passes every structural check; otherwise a description in msg */
static int shape_problem(const DsProceduralShape *s, char *msg, size_t len) {
    DsMeshCheck c;
    if (ds_mesh_check(&s->mesh, &c)) return snprintf(msg, len, "check failed"), 1;
    if (!c.watertight || !c.manifold || !c.oriented || c.degenerate_faces)
        return snprintf(msg, len, "boundary %lld, non-manifold edges %lld / vertices %lld, misoriented %lld",
                        (long long)c.boundary_edges, (long long)c.nonmanifold_edges, (long long)c.nonmanifold_vertices,
                        (long long)c.misoriented_edges),
               1;
    if (c.components != 1 || c.euler != 2 - 2 * s->genus)
        return snprintf(msg, len, "%lld components, χ = %lld (expected one component, χ = %d)", (long long)c.components,
                        (long long)c.euler, 2 - 2 * s->genus),
               1;
    if (!(c.volume > 0)) return snprintf(msg, len, "volume %g", c.volume), 1;
    float ext = 0;
    for (int k = 0; k < 3; k++) {
        if (c.lo[k] < -1.0001f || c.hi[k] > 1.0001f) return snprintf(msg, len, "outside [-1,1]³"), 1;
        ext = fmaxf(ext, c.hi[k] - c.lo[k]);
    }
    if (fabsf(ext - 2) > 1e-4f) return snprintf(msg, len, "longest side %g, not 2", (double)ext), 1;
    for (int i = 0; i < s->nbones; i++)
        if (s->bones[i].parent >= i || (i > 0 && s->bones[i].parent < 0))
            return snprintf(msg, len, "bone %d has parent %d (not a tree rooted at bone 0)", i, s->bones[i].parent), 1;
    for (int64_t v = 0; v < s->mesh.nv; v++) {
        double sum = 0;
        for (int b = 0; b < s->nbones; b++) {
            float w = s->weights[v * s->nbones + b];
            if (!(w >= 0 && w <= 1)) return snprintf(msg, len, "weight %g", (double)w), 1;
            sum += w;
        }
        if (fabs(sum - 1) > 1e-4) return snprintf(msg, len, "vertex %lld weights sum to %g", (long long)v, sum), 1;
    }
    return 0;
}

TEST(procedural_categories_watertight) {
    int ncat;
    const char *const *cats = ds_procedural_categories(&ncat);
    CHECK(ncat >= 8);
    int nseed = test_quick() ? 10 : 100, res = 48;
    double t0 = base_now();
    for (int c = 0; c < ncat; c++) {
        int bad = 0;
        long nf = 0;
        /* shapes in parallel; each make's own loops then run on one thread */
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : bad, nf)
        for (int s = 0; s < nseed; s++) {
            DsProceduralShape sh;
            char err[256], msg[256];
            if (ds_procedural_make(cats[c], (uint64_t)s, res, &sh, err, sizeof err)) {
#pragma omp critical
                test_fail_at(__FILE__, __LINE__, "%s seed %d: %s", cats[c], s, err);
                bad++;
                continue;
            }
            if (sh.genus != ds_procedural_expected_genus(cats[c]) || shape_problem(&sh, msg, sizeof msg)) {
#pragma omp critical
                test_fail_at(__FILE__, __LINE__, "%s seed %d: %s", cats[c], s, msg);
                bad++;
            }
            nf += (long)sh.mesh.nf;
            ds_procedural_free(&sh);
        }
        printf("    %-10s %d/%d ok, %ld triangles on average\n", cats[c], nseed - bad, nseed, nf / nseed);
    }
    printf("    %d shapes at %d cells in %.1f s\n", ncat * nseed, res, base_now() - t0);
}

TEST(procedural_high_res_timing) {
    int res = test_quick() ? 64 : 128;
    DsProceduralShape sh;
    char err[256], msg[256];
    double t0 = base_now();
    CHECK_MSG(ds_procedural_make("humanoid", 7, res, &sh, err, sizeof err) == 0, "%s", err);
    double dt = base_now() - t0;
    CHECK_MSG(shape_problem(&sh, msg, sizeof msg) == 0, "%s", msg);
    printf("    humanoid at %d cells: %.3f s, %lld vertices, %d bones\n", res, dt, (long long)sh.mesh.nv, sh.nbones);
    /* cubature from the exact SDF vs from the winding number of the mesh */
    DsCubature a, b;
    int g = test_quick() ? 32 : 64;
    t0 = base_now();
    CHECK(ds_cubature_sdf(ds_procedural_sdf, &sh, g, &a, err, sizeof err) == 0);
    double ts = base_now() - t0;
    t0 = base_now();
    CHECK(ds_cubature_winding(&sh.mesh, g, &b, err, sizeof err) == 0);
    double tw = base_now() - t0;
    printf("    cubature %d³: sdf %lld pts (%.3f s), winding %lld pts (%.3f s)\n", g, (long long)a.n, ts, (long long)b.n, tw);
    CHECK(llabs((long long)(a.n - b.n)) <= a.n / 50 + 2);
    ds_cubature_free(&a), ds_cubature_free(&b);
    ds_procedural_free(&sh);
}

TEST(procedural_family_continuous) {
    int steps = test_quick() ? 5 : 11, res = 40;
    char err[256], msg[256];
    DsProceduralShape s0;
    CHECK(ds_procedural_make("quadruped", 5, res, &s0, err, sizeof err) == 0);
    double prev_vol = 0;
    float prev_head[3] = {0};
    for (int i = 0; i < steps; i++) {
        float t = (float)i / (float)(steps - 1);
        DsProceduralShape s;
        CHECK_MSG(ds_procedural_make_family("quadruped", 5, t, res, &s, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(shape_problem(&s, msg, sizeof msg) == 0, "t = %g: %s", (double)t, msg);
        CHECK(s.nbones == s0.nbones);
        DsMeshCheck c;
        ds_mesh_check(&s.mesh, &c);
        if (i == 0) {
            CHECK(s.mesh.nv == s0.mesh.nv && memcmp(s.mesh.v, s0.mesh.v, sizeof(float) * 3 * (size_t)s.mesh.nv) == 0);
        } else {
            /* small steps in t: small changes in volume and joint positions */
            CHECK_MSG(fabs(c.volume - prev_vol) < 0.25 * prev_vol, "t = %g: volume %g after %g", (double)t, c.volume, prev_vol);
            float d = 0;
            for (int k = 0; k < 3; k++) d += (s.bones[5].head[k] - prev_head[k]) * (s.bones[5].head[k] - prev_head[k]);
            CHECK_MSG(sqrtf(d) < 0.3f, "t = %g: a joint jumped by %g", (double)t, (double)sqrtf(d));
        }
        prev_vol = c.volume;
        memcpy(prev_head, s.bones[5].head, sizeof prev_head);
        ds_procedural_free(&s);
    }
    ds_procedural_free(&s0);
    DsProceduralShape x;
    CHECK(ds_procedural_make("dragon", 1, 40, &x, err, sizeof err) == -1);
    CHECK(strstr(err, "dragon") && strstr(err, "quadruped"));
    CHECK(ds_procedural_make("mug", 1, 4, &x, err, sizeof err) == -1);
    CHECK(ds_procedural_make_family("mug", 1, 1.5f, 40, &x, err, sizeof err) == -1);
}

/* the skinning weights are smooth and local: each bone dominates near its own primitive */
TEST(procedural_weights_local) {
    DsProceduralShape s;
    char err[256];
    CHECK(ds_procedural_make("snake", 3, 48, &s, err, sizeof err) == 0);
    for (int b = 1; b < s.nbones; b++) {
        /* the midpoint of a body bone lies inside the body: its own weight is largest there */
        float m[3], w[64];
        for (int k = 0; k < 3; k++) m[k] = 0.5f * (s.bones[b].head[k] + s.bones[b].tail[k]);
        ds_procedural_weights(&s.scene, s.nbones, m, 1, 0, w);
        int best = 0;
        for (int j = 1; j < s.nbones; j++)
            if (w[j] > w[best]) best = j;
        CHECK_MSG(best == b, "bone %d: the heaviest weight at its midpoint is bone %d", b, best);
    }
    ds_procedural_free(&s);
}
