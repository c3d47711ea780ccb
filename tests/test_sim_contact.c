/* tests/test_sim_contact.c — complete IPC contact (issue 23 item 2): the segment–segment
 * distance against brute force, the mollified edge–edge barrier's gradient and Hessian against
 * finite differences (every closest-feature type and the mollified band), the broad phase's
 * edge–edge pairs against brute force, edge–edge CCD, and two thin bars crossing at speed, which
 * pass through each other with point–triangle pairs alone and never cross with edge–edge ones;
 * collision proxies (sim/proxy.h): closed, coarse, near the mesh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/mesh.h"
#include "sim/contact.h"
#include "sim/proxy.h"
#include "sim/rigid.h"
#include "sim/scene.h"
#include "sim/skinning.h"
#include "sim/world.h"
#include "tests/test.h"

static double urand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

TEST(sim_segment_segment_matches_brute_force) {
    uint64_t seed = 7;
    double worst = 0;
    for (int trial = 0; trial < 200; trial++) {
        double x[12];
        for (int i = 0; i < 12; i++) x[i] = 2 * urand(&seed) - 1;
        if (trial % 4 == 0) /* parallel segments */
            for (int i = 0; i < 3; i++) x[9 + i] = x[6 + i] + 0.7 * (x[3 + i] - x[i]);
        double s, t, d = sim_segment_segment(x, x + 3, x + 6, x + 9, &s, &t), best = INFINITY;
        CHECK(s >= 0 && s <= 1 && t >= 0 && t <= 1);
        /* the parameters give the distance returned */
        double r2 = 0;
        for (int i = 0; i < 3; i++) {
            double ri = x[i] + s * (x[3 + i] - x[i]) - x[6 + i] - t * (x[9 + i] - x[6 + i]);
            r2 += ri * ri;
        }
        CHECK_NEAR(sqrt(r2), d, 1e-12);
        for (int a = 0; a <= 400; a++)
            for (int b = 0; b <= 400; b++) {
                double q2 = 0;
                for (int i = 0; i < 3; i++) {
                    double ri = x[i] + a / 400.0 * (x[3 + i] - x[i]) - x[6 + i] - b / 400.0 * (x[9 + i] - x[6 + i]);
                    q2 += ri * ri;
                }
                best = fmin(best, q2);
            }
        best = sqrt(best);
        CHECK_MSG(d <= best + 1e-12, "trial %d: %g > grid %g", trial, d, best);
        worst = fmax(worst, best - d);
    }
    CHECK_MSG(worst < 1e-3, "the grid's closest pair %.3g above the distance returned", worst); /* the grid's resolution */
}

/* central differences of f over the 12 coordinates */
static void fd_grad(const double x[12], double dhat, double eps, double g[12]) {
    for (int i = 0; i < 12; i++) {
        double xp[12], xm[12], h = 1e-7;
        memcpy(xp, x, sizeof xp), memcpy(xm, x, sizeof xm);
        xp[i] += h, xm[i] -= h;
        g[i] = (sim_ee_barrier(xp, dhat, eps, NULL, NULL) - sim_ee_barrier(xm, dhat, eps, NULL, NULL)) / (2 * h);
    }
}

/* One configuration: p0 + s e0 against q0 + t e1 at distance d along their common normal, the
 * types chosen by where s and t fall; twist turns e1 towards e0 (nearly parallel: mollified). */
static void ee_config(uint64_t *seed, double s, double t, double d, double twist, double x[12]) {
    double e0[3] = {1, 0.1 * urand(seed), 0.1 * urand(seed)}, e1[3] = {twist, 1, 0.2 * urand(seed)};
    double n[3] = {e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2], e0[0] * e1[1] - e0[1] * e1[0]};
    double ln = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    double c[3] = {0.3 * urand(seed), 0.2 * urand(seed), -0.1 * urand(seed)};
    for (int i = 0; i < 3; i++) {
        x[i] = c[i] - s * e0[i], x[3 + i] = x[i] + e0[i];
        x[6 + i] = c[i] + d * n[i] / ln - t * e1[i], x[9 + i] = x[6 + i] + e1[i];
    }
}

TEST(sim_ee_barrier_derivatives_match_fd) {
    uint64_t seed = 11;
    double dhat = 0.1;
    /* (s, t): interior–interior, end–interior both ways, end–end (beyond the ends), then nearly
     * parallel edges in the mollifier's band */
    const double st[6][3] = {{0.4, 0.6, 0}, {-0.03, 0.5, 0}, {0.5, 1.03, 0}, {-0.02, 1.02, 0}, {0.45, 0.5, 1}, {0.3, 0.7, 2}};
    int mollified = 0;
    for (int c = 0; c < 6; c++)
        for (int k = 0; k < 3; k++) {
            double x[12], g[12], H[144], gf[12], d = dhat * (0.2 + 0.25 * k);
            double twist = st[c][2] == 0 ? 0.3 : (st[c][2] == 1 ? 1e4 : -1e4);
            if (st[c][2] != 0) { /* nearly parallel: q is p shifted by d along a normal and by
                                  * (s − t) along the edge, its far end tilted out of line */
                double e0[3] = {1, 0.1 * urand(&seed), 0}, n1[3] = {-e0[1], 1, 0}, n2[3] = {0, 0, 1};
                double ln = sqrt(n1[0] * n1[0] + n1[1] * n1[1]), tilt = twist > 0 ? 0.01 : -0.02;
                for (int i = 0; i < 3; i++) {
                    x[i] = 0.1 * i, x[3 + i] = x[i] + e0[i];
                    x[6 + i] = x[i] + d * n1[i] / ln + (st[c][0] - st[c][1]) * e0[i];
                    x[9 + i] = x[6 + i] + e0[i] + tilt * n2[i];
                }
            } else
                ee_config(&seed, st[c][0], st[c][1], d, twist, x);
            double e0[3], e1[3];
            for (int i = 0; i < 3; i++) e0[i] = x[3 + i] - x[i], e1[i] = x[9 + i] - x[6 + i];
            double eps = 1e-3 * (e0[0] * e0[0] + e0[1] * e0[1] + e0[2] * e0[2]) * (e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
            double m = sim_ee_mollifier(e0, e1, eps, NULL, NULL);
            mollified += m < 1;
            double E = sim_ee_barrier(x, dhat, eps, g, H);
            CHECK_MSG(E > 0 && isfinite(E), "config %d/%d: E %g", c, k, E);
            fd_grad(x, dhat, eps, gf);
            double gmax = 0, gerr = 0, hmax = 0, herr = 0;
            for (int i = 0; i < 12; i++) gmax = fmax(gmax, fabs(g[i])), gerr = fmax(gerr, fabs(g[i] - gf[i]));
            for (int i = 0; i < 12; i++) {
                double xp[12], xm[12], gp[12], gm[12], h = 1e-6;
                memcpy(xp, x, sizeof xp), memcpy(xm, x, sizeof xm);
                xp[i] += h, xm[i] -= h;
                sim_ee_barrier(xp, dhat, eps, gp, NULL), sim_ee_barrier(xm, dhat, eps, gm, NULL);
                for (int j = 0; j < 12; j++) {
                    double fd = (gp[j] - gm[j]) / (2 * h);
                    hmax = fmax(hmax, fabs(H[12 * j + i])), herr = fmax(herr, fabs(H[12 * j + i] - fd));
                    CHECK_MSG(fabs(H[12 * i + j] - H[12 * j + i]) <= 1e-9 * (1 + fabs(H[12 * i + j])), "H not symmetric");
                }
            }
            CHECK_MSG(gerr <= 1e-6 * gmax, "config %d/%d (m %.3f): gradient off by %.3g of %.3g", c, k, m, gerr, gmax);
            CHECK_MSG(herr <= 1e-5 * hmax, "config %d/%d (m %.3f): Hessian off by %.3g of %.3g", c, k, m, herr, hmax);
        }
    CHECK(mollified >= 6);
    /* beyond d̂: nothing */
    double x[12];
    ee_config(&seed, 0.5, 0.5, 1.5 * dhat, 0.3, x);
    CHECK(sim_ee_barrier(x, dhat, 0, NULL, NULL) == 0);
}

TEST(sim_ee_mollifier_gradient_matches_fd) {
    uint64_t seed = 3;
    int inside = 0;
    for (int trial = 0; trial < 40; trial++) {
        double e0[3], e1[3], g0[3], g1[3];
        for (int i = 0; i < 3; i++) e0[i] = 2 * urand(&seed) - 1;
        for (int i = 0; i < 3; i++) e1[i] = 0.8 * e0[i] + (trial % 2 ? 0.03 : 0.5) * (2 * urand(&seed) - 1);
        double eps = 1e-3 * 4, m = sim_ee_mollifier(e0, e1, eps, g0, g1);
        inside += m < 1;
        for (int i = 0; i < 3; i++) {
            double h = 1e-7, a[3], b[3];
            memcpy(a, e0, sizeof a), memcpy(b, e0, sizeof b);
            a[i] += h, b[i] -= h;
            CHECK_NEAR(g0[i], (sim_ee_mollifier(a, e1, eps, NULL, NULL) - sim_ee_mollifier(b, e1, eps, NULL, NULL)) / (2 * h), 1e-5 * (1 + fabs(g0[i])));
            memcpy(a, e1, sizeof a), memcpy(b, e1, sizeof b);
            a[i] += h, b[i] -= h;
            CHECK_NEAR(g1[i], (sim_ee_mollifier(e0, a, eps, NULL, NULL) - sim_ee_mollifier(e0, b, eps, NULL, NULL)) / (2 * h), 1e-5 * (1 + fabs(g1[i])));
        }
        CHECK(m >= 0 && m <= 1);
    }
    CHECK(inside >= 5);
}

static int box_mesh_body(const double half[3], const double at[3], DsMesh *m, double **x) {
    if (sim_mesh_box(half, m)) return -1;
    *x = malloc(sizeof(double) * 3 * (size_t)m->nv);
    for (int64_t v = 0; v < m->nv; v++)
        for (int i = 0; i < 3; i++) (*x)[3 * v + i] = m->v[3 * v + i] + at[i];
    return 0;
}

/* Σ w b(d) over a point's pairs with a surface: the deduplicated set (weights, sim_contact_dedup)
 * or the plain point–triangle sum; the point is body 0 (a point alone), its point–point pairs
 * with the surface's vertices (a faceless body meets points too) left out */
static double point_surface_energy(SimContactBody bodies[2], const double p[3], double dhat, bool dedup) {
    bodies[0].x = p;
    SimContactSet set = {0};
    CHECK(sim_contact_broad_phase(bodies, 2, 0.5 * dhat, &set) == 0);
    int64_t m = 0;
    for (int64_t k = 0; k < set.n; k++)
        if (set.pairs[k].f != -1) set.pairs[m++] = set.pairs[k];
    set.n = m;
    if (dedup) CHECK(sim_contact_dedup(bodies, &set) == 0);
    double E = 0, r[3];
    for (int64_t k = 0; k < set.n; k++) {
        double d = sim_contact_pair_vector(bodies, &set.pairs[k], 0, r, NULL, NULL);
        E += sim_contact_pair_weight(bodies, &set.pairs[k]) * sim_barrier(d, dhat, NULL, NULL);
    }
    sim_contact_set_free(&set);
    return E;
}

/* A closed box as a contact body with the deduplication's tables (contact.h); free with
 * dedup_box_free. */
typedef struct {
    DsMesh m;
    double *x;
    int64_t ne;
    int32_t *edges, *uses, *fe, *vc;
} DedupBox;

static SimContactBody dedup_box(const double half[3], DedupBox *b) {
    CHECK(box_mesh_body(half, (double[3]){0, 0, 0}, &b->m, &b->x) == 0);
    CHECK(sim_mesh_edge_uses(b->m.nf, b->m.f, &b->ne, &b->edges, &b->uses) == 0);
    CHECK(sim_mesh_dedup_tables(b->m.nv, b->m.nf, b->m.f, b->ne, b->edges, b->uses, &b->fe, &b->vc) == 0);
    return (SimContactBody){.np = b->m.nv, .x = b->x, .nf = b->m.nf, .faces = b->m.f, .edges = b->edges, .face_edges = b->fe,
                            .edge_uses = b->uses, .vert_coef = b->vc};
}

static void dedup_box_free(DedupBox *b) {
    free(b->edges), free(b->uses), free(b->fe), free(b->vc), free(b->x), ds_mesh_free(&b->m);
}

/* Deduplication (contact.h): a point over a closed box's corner, along an arc around one of its
 * edges (from over one face, over the edge, to over the other face) and over a face feels the
 * barrier of its distance to the box once — Σ w b = b(d) — where the plain point–triangle sum
 * counts the corner once per triangle there (3–6) and the edge twice. Along the arc the sum is
 * continuous across the changes of the closest feature. */
TEST(sim_contact_dedup_counts_each_feature_once) {
    double half[3] = {0.1, 0.1, 0.1}, dhat = 0.02, d = 0.01, p[3];
    DedupBox bx;
    SimContactBody bodies[2] = {{.np = 1}, dedup_box(half, &bx)};
    const DsMesh m = bx.m;
    const double *xb = bx.x;
    for (int64_t v = 0; v < m.nv; v++) CHECK(bx.vc[v] == 1); /* closed and manifold */
    for (int64_t f = 0; f < m.nf; f++)
        for (int k = 0; k < 3; k++) {
            const int32_t *e = bx.edges + 2 * bx.fe[3 * f + k];
            int32_t i = m.f[3 * f + k], j = m.f[3 * f + (k + 1) % 3];
            CHECK((e[0] == i && e[1] == j) || (e[0] == j && e[1] == i));
        }
    double b = sim_barrier(d, dhat, NULL, NULL);
    for (int64_t v = 0; v < m.nv; v++) /* the box as stored (single-precision corners) */
        for (int i = 0; i < 3; i++) half[i] = xb[3 * v + i];
    for (int i = 0; i < 3; i++) half[i] = fabs(half[i]);
    /* over a corner, along the diagonal: every triangle there is closest at the corner */
    for (int i = 0; i < 3; i++) p[i] = half[i] + d / sqrt(3.0);
    double Ed = point_surface_energy(bodies, p, dhat, true), Ep = point_surface_energy(bodies, p, dhat, false);
    printf("    corner: deduplicated %.4g b(d), plain %.4g b(d); ", Ed / b, Ep / b);
    CHECK_MSG(fabs(Ed - b) <= 1e-9 * b, "corner: %g vs b(d) %g", Ed, b);
    CHECK(Ep >= 2.9 * b);
    /* over a face, away from its diagonal and edges */
    p[0] = half[0] + d, p[1] = 0.05, p[2] = 0;
    CHECK(fabs(point_surface_energy(bodies, p, dhat, true) - b) <= 1e-9 * b);
    /* an arc of radius d around the edge x = y = 0.1 (at z = 0): over face x+ for θ < 0 (distance
     * d cos θ), over the edge for 0 ≤ θ ≤ 90°, over face y+ beyond (d sin θ) */
    double worst = 0, plain_edge = 0;
    for (int k = 0; k <= 42; k++) {
        double th = (-60 + 5 * k) * M_PI / 180;
        p[0] = half[0] + d * cos(th), p[1] = half[1] + d * sin(th), p[2] = 0;
        double dist = th < 0 ? d * cos(th) : th <= M_PI / 2 ? d : d * sin(th), want = sim_barrier(dist, dhat, NULL, NULL);
        double E = point_surface_energy(bodies, p, dhat, true);
        worst = fmax(worst, fabs(E - want) / want);
        if (th >= 0 && th <= M_PI / 2) plain_edge = fmax(plain_edge, point_surface_energy(bodies, p, dhat, false) / want);
    }
    printf("around an edge: deduplicated within %.2g of b(distance), plain up to %.3g b\n", worst, plain_edge);
    CHECK(worst <= 1e-9);
    CHECK(plain_edge >= 1.99);
    dedup_box_free(&bx);
}

/* The deduplication's terms come out sorted by (f, a, b, p, q) and unique, whatever order the
 * candidates arrive in: many points of several bodies against every triangle of a box, shuffled
 * (sim_contact_dedup sorts them by a radix sort on packed keys; the barrier sum's order, so the
 * trajectories, depend on that order being qsort's). */
TEST(sim_contact_dedup_terms_sorted_and_unique) {
    double half[3] = {0.1, 0.1, 0.1};
    DedupBox bx;
    SimContactBody bodies[4] = {{.np = 3000}, {.np = 70000}, {.np = 5}, dedup_box(half, &bx)};
    const DsMesh m = bx.m;
    SimContactSet set = {0};
    uint64_t seed = 5;
    int64_t n = 0;
    set.cap = 40000 * 7, set.pairs = malloc(sizeof *set.pairs * (size_t)set.cap);
    CHECK(set.pairs != NULL);
    for (int k = 0; k < 40000; k++) {
        int32_t a = (int32_t)(urand(&seed) * 3);
        set.pairs[n++] = (SimContactPair){.a = a, .b = 3, .p = (int32_t)(urand(&seed) * bodies[a].np), .q = 0,
                                          .f = (int32_t)(urand(&seed) * m.nf)};
    }
    set.n = n;
    CHECK(sim_contact_dedup(bodies, &set) == 0);
    int64_t terms = set.n - n, bad = 0;
    for (int64_t k = n + 1; k < set.n; k++) {
        const SimContactPair *u = &set.pairs[k - 1], *v = &set.pairs[k];
        int32_t ku[5] = {u->f, u->a, u->b, u->p, u->q}, kv[5] = {v->f, v->a, v->b, v->p, v->q};
        int c = 0;
        for (int i = 0; i < 5 && !c; i++) c = ku[i] < kv[i] ? -1 : ku[i] > kv[i];
        bad += c >= 0; /* out of order, or a repeat */
    }
    printf("    %lld candidates, %lld terms, %lld out of order or repeated\n", (long long)n, (long long)terms, (long long)bad);
    CHECK(terms > 1000);
    CHECK(bad == 0);
    for (int64_t k = 0; k < n; k++) CHECK(set.pairs[k].f >= 0); /* the candidates stay where they were */
    sim_contact_set_free(&set);
    dedup_box_free(&bx);
}

/* two moving boxes' edges: the broad phase reports every edge pair whose swept, inflated boxes
 * overlap, once, and no other */
TEST(sim_broad_phase_edges_match_brute_force) {
    uint64_t seed = 5;
    for (int trial = 0; trial < 20; trial++) {
        DsMesh m[2];
        double *x[2], *dx[2];
        int32_t *edges[2];
        int64_t ne[2];
        SimContactBody bodies[2];
        for (int b = 0; b < 2; b++) {
            double half[3] = {0.1 + 0.2 * urand(&seed), 0.02, 0.05}, at[3] = {0.2 * urand(&seed), 0.1 * b, 0.1 * urand(&seed)};
            CHECK(box_mesh_body(half, at, &m[b], &x[b]) == 0);
            dx[b] = malloc(sizeof(double) * 3 * (size_t)m[b].nv);
            for (int64_t k = 0; k < 3 * m[b].nv; k++) dx[b][k] = 0.05 * (2 * urand(&seed) - 1);
            CHECK(sim_mesh_edges(m[b].nf, m[b].f, &ne[b], &edges[b]) == 0);
            CHECK(ne[b] == 18); /* a triangulated box: 12 + 6 diagonals */
            bodies[b] = (SimContactBody){.np = m[b].nv, .x = x[b], .dx = dx[b], .nf = m[b].nf, .faces = m[b].f,
                                         .ne = ne[b], .edges = edges[b]};
        }
        double margin = 0.01;
        SimContactSet set = {0};
        CHECK(sim_contact_broad_phase(bodies, 2, margin, &set) == 0);
        int64_t expect = 0, found = 0, wrong = 0;
        for (int64_t i = 0; i < ne[0]; i++)
            for (int64_t j = 0; j < ne[1]; j++) {
                double lo[2][3], hi[2][3];
                for (int b = 0; b < 2; b++) {
                    const int32_t *e = edges[b] + 2 * (b ? j : i);
                    for (int c = 0; c < 3; c++) {
                        lo[b][c] = INFINITY, hi[b][c] = -INFINITY;
                        for (int k = 0; k < 2; k++) {
                            double a0 = x[b][3 * e[k] + c], a1 = a0 + dx[b][3 * e[k] + c];
                            lo[b][c] = fmin(lo[b][c], fmin(a0, a1) - margin), hi[b][c] = fmax(hi[b][c], fmax(a0, a1) + margin);
                        }
                    }
                }
                int ov = 1;
                for (int c = 0; c < 3; c++) ov &= lo[0][c] <= hi[1][c] && lo[1][c] <= hi[0][c];
                int n = 0;
                for (int64_t k = 0; k < set.n; k++)
                    n += set.pairs[k].f == SIM_PAIR_EE && set.pairs[k].a == 0 && set.pairs[k].p == i && set.pairs[k].q == j;
                expect += ov, found += n;
                wrong += n != ov;
            }
        CHECK_MSG(wrong == 0, "trial %d: %lld edge pairs expected, %lld found, %lld wrong", trial, (long long)expect,
                  (long long)found, (long long)wrong);
        sim_contact_set_free(&set);
        for (int b = 0; b < 2; b++) free(x[b]), free(dx[b]), free(edges[b]), ds_mesh_free(&m[b]);
    }
}

/* five bodies crowded into a few cells — four moving or static boxes with surfaces and a point
 * cloud — so that a hash bucket holds the points, triangles and edges of several bodies: every
 * point–triangle, point–point (the cloud's) and edge–edge pair whose swept, inflated boxes overlap
 * is reported once, none else, and none between two static bodies (the bucket's own body's
 * entries are skipped as a run: a wrong run would drop another body's pairs) */
static void swept_box(const double *x, const double *dx, const int32_t *idx, int k, double margin, double lo[3], double hi[3]) {
    for (int c = 0; c < 3; c++) {
        lo[c] = INFINITY, hi[c] = -INFINITY;
        for (int j = 0; j < k; j++) {
            double a0 = x[3 * idx[j] + c], a1 = dx ? a0 + dx[3 * idx[j] + c] : a0;
            lo[c] = fmin(lo[c], fmin(a0, a1) - margin), hi[c] = fmax(hi[c], fmax(a0, a1) + margin);
        }
    }
}
static bool boxes_meet(const double la[3], const double ha[3], const double lb[3], const double hb[3]) {
    return la[0] <= hb[0] && lb[0] <= ha[0] && la[1] <= hb[1] && lb[1] <= ha[1] && la[2] <= hb[2] && lb[2] <= ha[2];
}
TEST(sim_broad_phase_many_bodies_match_brute_force) {
    uint64_t seed = 11;
    enum { NB = 5, NCLOUD = 30 };
    int64_t total = 0;
    for (int trial = 0; trial < 8; trial++) {
        DsMesh m[NB - 1];
        double *x[NB], *dx[NB];
        int32_t *edges[NB - 1];
        int64_t ne[NB - 1];
        SimContactBody bodies[NB];
        for (int b = 0; b < NB; b++) {
            int is_static = b == 2 || b == 3; /* two static bodies: never paired with each other */
            if (b < NB - 1) {
                double half[3] = {0.03 + 0.05 * urand(&seed), 0.03 + 0.05 * urand(&seed), 0.03 + 0.05 * urand(&seed)};
                double at[3] = {0.1 * urand(&seed), 0.1 * urand(&seed), 0.1 * urand(&seed)};
                CHECK(box_mesh_body(half, at, &m[b], &x[b]) == 0);
                CHECK(sim_mesh_edges(m[b].nf, m[b].f, &ne[b], &edges[b]) == 0);
                bodies[b] = (SimContactBody){.np = m[b].nv, .x = x[b], .nf = m[b].nf, .faces = m[b].f, .ne = ne[b], .edges = edges[b]};
            } else {
                x[b] = malloc(sizeof(double) * 3 * NCLOUD);
                for (int k = 0; k < 3 * NCLOUD; k++) x[b][k] = -0.05 + 0.2 * urand(&seed);
                bodies[b] = (SimContactBody){.np = NCLOUD, .x = x[b]};
            }
            dx[b] = NULL;
            if (!is_static) {
                dx[b] = malloc(sizeof(double) * 3 * (size_t)bodies[b].np);
                for (int64_t k = 0; k < 3 * bodies[b].np; k++) dx[b][k] = 0.03 * (2 * urand(&seed) - 1);
            }
            bodies[b].dx = dx[b], bodies[b].is_static = is_static;
        }
        double margin = 0.005;
        SimContactSet set = {0};
        CHECK(sim_contact_broad_phase(bodies, NB, margin, &set) == 0);
        int64_t expect = 0, wrong = 0;
        for (int a = 0; a < NB; a++)
            for (int b = 0; b < NB; b++) {
                if (a == b || (bodies[a].is_static && bodies[b].is_static)) continue;
                /* points of a against triangles of b */
                for (int64_t p = 0; p < bodies[a].np; p++) {
                    double la[3], ha[3], lb[3], hb[3];
                    int32_t ip = (int32_t)p;
                    swept_box(x[a], dx[a], &ip, 1, margin, la, ha);
                    for (int64_t f = 0; f < (b < NB - 1 ? m[b].nf : 0); f++) {
                        swept_box(x[b], dx[b], m[b].f + 3 * f, 3, margin, lb, hb);
                        int ov = boxes_meet(la, ha, lb, hb), n = 0;
                        for (int64_t k = 0; k < set.n; k++) {
                            const SimContactPair *q = &set.pairs[k];
                            n += q->f == f && q->a == a && q->p == p && q->b == b;
                        }
                        expect += ov, wrong += n != ov;
                    }
                    /* and the cloud's points against other bodies' points, a < b */
                    if (a < b && (a == NB - 1 || b == NB - 1))
                        for (int64_t r = 0; r < bodies[b].np; r++) {
                            int32_t ir = (int32_t)r;
                            swept_box(x[b], dx[b], &ir, 1, margin, lb, hb);
                            int ov = boxes_meet(la, ha, lb, hb), n = 0;
                            for (int64_t k = 0; k < set.n; k++) {
                                const SimContactPair *q = &set.pairs[k];
                                n += q->f == -1 && q->a == a && q->p == p && q->b == b && q->q == r;
                            }
                            expect += ov, wrong += n != ov;
                        }
                }
                /* edges, a < b */
                if (a < b && b < NB - 1)
                    for (int64_t i = 0; i < ne[a]; i++)
                        for (int64_t j = 0; j < ne[b]; j++) {
                            double la[3], ha[3], lb[3], hb[3];
                            swept_box(x[a], dx[a], edges[a] + 2 * i, 2, margin, la, ha);
                            swept_box(x[b], dx[b], edges[b] + 2 * j, 2, margin, lb, hb);
                            int ov = boxes_meet(la, ha, lb, hb), n = 0;
                            for (int64_t k = 0; k < set.n; k++) {
                                const SimContactPair *q = &set.pairs[k];
                                n += q->f == SIM_PAIR_EE && q->a == a && q->p == i && q->b == b && q->q == j;
                            }
                            expect += ov, wrong += n != ov;
                        }
            }
        CHECK_MSG(wrong == 0 && expect == set.n, "trial %d: %lld pairs expected, %lld found, %lld wrong", trial,
                  (long long)expect, (long long)set.n, (long long)wrong);
        total += expect;
        sim_contact_set_free(&set);
        for (int b = 0; b < NB; b++) {
            free(x[b]), free(dx[b]);
            if (b < NB - 1) free(edges[b]), ds_mesh_free(&m[b]);
        }
    }
    printf("    %lld pairs over 8 crowded scenes, each found once\n", (long long)total);
    CHECK(total > 1000);
}

/* an edge sweeping across another (no corner near any face): CCD stops it short, at ≥ s d₀ */
TEST(sim_ccd_edge_edge_stops_before_crossing) {
    double xa[6] = {-1, 0.1, 0, 1, 0.1, 0}, da[6] = {0, -1, 0, 0, -1, 0};
    double xb[6] = {0, 0, -1, 0, 0, 1};
    int32_t e[2] = {0, 1};
    SimContactBody bodies[2] = {{.np = 2, .x = xa, .dx = da, .ne = 1, .edges = e},
                                {.np = 2, .x = xb, .is_static = 1, .ne = 1, .edges = e}};
    SimContactSet set = {0};
    CHECK(sim_contact_broad_phase(bodies, 2, 0.01, &set) == 0);
    CHECK(set.n == 1 && set.pairs[0].f == SIM_PAIR_EE);
    double s = 0.2, a = sim_contact_ccd(bodies, &set, s), d = sim_contact_min_distance(bodies, &set, a);
    CHECK(a > 0 && a < 0.1); /* the edges meet at α = 0.1 */
    CHECK(d >= s * 0.1 * (1 - 1e-9) && d < s * 0.1 * 1.01);
    da[1] = da[4] = 1; /* moving apart */
    CHECK(sim_contact_ccd(bodies, &set, s) == 1);
    sim_contact_set_free(&set);
}

/* A thin deformable bar: its 8-corner box mesh as binding points and surface, a grid of cubature
 * points, two Wendland handles. */
static void block_object(SimObject *o, const double half[3], const double at[3], double rot_z_deg, double rho, int sub);
static void bar_object_rot(SimObject *o, const double half[3], const double at[3], double rot_z_deg) {
    block_object(o, half, at, rot_z_deg, 1000, 0);
}
static void bar_object(SimObject *o, const double half[3], const double at[3]) { bar_object_rot(o, half, at, 0); }

/* the box's surface with every triangle split in four (edge midpoints) sub times: a face of the
 * box carries (2^sub + 1)² vertices */
static void box_mesh_subdivided(const double half[3], int sub, DsMesh *m) {
    CHECK(sim_mesh_box(half, m) == 0);
    for (int level = 0; level < sub; level++) {
        int64_t nv = m->nv, nf = m->nf, cap = nv + 3 * nf;
        float *v = malloc(sizeof(float) * 3 * (size_t)cap);
        int32_t *f = malloc(sizeof(int32_t) * 12 * (size_t)nf), *ea = malloc(sizeof(int32_t) * 3 * (size_t)(3 * nf));
        CHECK(v && f && ea);
        memcpy(v, m->v, sizeof(float) * 3 * (size_t)nv);
        int64_t ne = 0;
        for (int64_t t = 0; t < nf; t++) {
            int32_t c[3], mid[3];
            for (int k = 0; k < 3; k++) c[k] = m->f[3 * t + k];
            for (int k = 0; k < 3; k++) {
                int32_t a = c[k], b = c[(k + 1) % 3], lo = a < b ? a : b, hi = a < b ? b : a;
                mid[k] = -1;
                for (int64_t e = 0; e < ne && mid[k] < 0; e++)
                    if (ea[3 * e] == lo && ea[3 * e + 1] == hi) mid[k] = ea[3 * e + 2];
                if (mid[k] < 0) {
                    for (int i = 0; i < 3; i++) v[3 * nv + i] = 0.5f * (v[3 * a + i] + v[3 * b + i]);
                    ea[3 * ne] = lo, ea[3 * ne + 1] = hi, ea[3 * ne + 2] = (int32_t)nv, mid[k] = (int32_t)nv++, ne++;
                }
            }
            int32_t T[12] = {c[0], mid[0], mid[2], mid[0], c[1], mid[1], mid[2], mid[1], c[2], mid[0], mid[1], mid[2]};
            memcpy(f + 12 * t, T, sizeof T);
        }
        free(m->v), free(m->f), free(ea);
        m->v = v, m->f = f, m->nv = nv, m->nf = 4 * nf;
    }
}

/* a deformable box of half extents half at `at`, turned rot_z_deg about z, of density rho, its
 * surface subdivided sub times (box_mesh_subdivided); two RBF handles along its longest axis */
static void block_object(SimObject *o, const double half[3], const double at[3], double rot_z_deg, double rho, int sub) {
    SimSkinning sk;
    memset(&sk, 0, sizeof sk);
    int cres = 4;
    sk.m = 2, sk.nc = (int64_t)cres * cres * cres;
    sk.cub_x = malloc(sizeof(double) * 3 * (size_t)sk.nc), sk.cub_vol = malloc(sizeof(double) * (size_t)sk.nc);
    sk.cub_w = malloc(sizeof(double) * (size_t)(sk.nc * sk.m)), sk.cub_dw = malloc(sizeof(double) * 3 * (size_t)(sk.nc * sk.m));
    for (int64_t c = 0; c < sk.nc; c++) {
        int64_t ijk[3] = {c % cres, (c / cres) % cres, c / (cres * cres)};
        for (int i = 0; i < 3; i++) sk.cub_x[3 * c + i] = -half[i] + (ijk[i] + 0.5) * 2 * half[i] / cres;
        sk.cub_vol[c] = 8 * half[0] * half[1] * half[2] / (double)sk.nc;
    }
    DsMesh m;
    box_mesh_subdivided(half, sub, &m);
    sk.nv = m.nv, sk.nf = m.nf;
    sk.vert_x = malloc(sizeof(double) * 3 * (size_t)m.nv);
    for (int64_t k = 0; k < 3 * m.nv; k++) sk.vert_x[k] = m.v[k];
    sk.faces = malloc(sizeof(int32_t) * 3 * (size_t)m.nf);
    memcpy(sk.faces, m.f, sizeof(int32_t) * 3 * (size_t)m.nf);
    ds_mesh_free(&m);
    sk.vert_w = malloc(sizeof(double) * (size_t)(sk.nv * sk.m)), sk.vert_dw = malloc(sizeof(double) * 3 * (size_t)(sk.nv * sk.m));
    double L = fmax(half[0], fmax(half[1], half[2])), centers[6] = {0};
    int ax = half[0] == L ? 0 : half[1] == L ? 1 : 2;
    centers[ax] = -0.5 * L, centers[3 + ax] = 0.5 * L;
    sim_rbf_eval(2, centers, 1.5 * L, sk.nc, sk.cub_x, sk.cub_w, sk.cub_dw);
    sim_rbf_eval(2, centers, 1.5 * L, sk.nv, sk.vert_x, sk.vert_w, sk.vert_dw);
    snprintf(sk.source, sizeof sk.source, "test bar");
    SimMaterial mat = {.E = 1e6, .nu = 0.3, .rho = rho};
    SimPose pose = sim_pose_identity();
    sim_pose_euler(&pose, (double[3]){0, 0, rot_z_deg});
    memcpy(pose.translate, at, sizeof pose.translate);
    char err[256];
    int rc = sim_object_init(o, &sk, &mat, &pose, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    sim_skinning_free(&sk);
}

/* does segment [a, b] pass through triangle (p, q, r)? (Möller–Trumbore on the segment) */
static int segment_hits_triangle(const double *a, const double *b, const double *p, const double *q, const double *r) {
    double d[3], e1[3], e2[3], h[3], s[3], qv[3];
    for (int i = 0; i < 3; i++) d[i] = b[i] - a[i], e1[i] = q[i] - p[i], e2[i] = r[i] - p[i], s[i] = a[i] - p[i];
    h[0] = d[1] * e2[2] - d[2] * e2[1], h[1] = d[2] * e2[0] - d[0] * e2[2], h[2] = d[0] * e2[1] - d[1] * e2[0];
    double det = e1[0] * h[0] + e1[1] * h[1] + e1[2] * h[2];
    if (fabs(det) < 1e-300) return 0;
    double u = (s[0] * h[0] + s[1] * h[1] + s[2] * h[2]) / det;
    if (u < 0 || u > 1) return 0;
    qv[0] = s[1] * e1[2] - s[2] * e1[1], qv[1] = s[2] * e1[0] - s[0] * e1[2], qv[2] = s[0] * e1[1] - s[1] * e1[0];
    double v = (d[0] * qv[0] + d[1] * qv[1] + d[2] * qv[2]) / det, t = (e2[0] * qv[0] + e2[1] * qv[1] + e2[2] * qv[2]) / det;
    return v >= 0 && u + v <= 1 && t >= 0 && t <= 1;
}

/* two closed box surfaces overlap when an edge of one passes through a face of the other (or one
 * holds the other whole: a corner of one inside the other's box, not possible here at the sizes) */
static int surfaces_cross(const SimObject *A, const double *xa, const SimObject *B, const double *xb) {
    for (int side = 0; side < 2; side++) {
        const SimObject *E = side ? B : A, *F = side ? A : B;
        const double *xe = side ? xb : xa, *xf = side ? xa : xb;
        for (int64_t f = 0; f < E->nf; f++)
            for (int k = 0; k < 3; k++) {
                const double *a = xe + 3 * E->faces[3 * f + k], *b = xe + 3 * E->faces[3 * f + (k + 1) % 3];
                for (int64_t g = 0; g < F->nf; g++)
                    if (segment_hits_triangle(a, b, xf + 3 * F->faces[3 * g], xf + 3 * F->faces[3 * g + 1], xf + 3 * F->faces[3 * g + 2]))
                        return 1;
            }
    }
    return 0;
}

/* Two bars 2 cm thick crossing at right angles, one at rest, one thrown down at it at 8 m/s
 * (8 cm a step, four times their thickness); no corner of either ever comes near a face of the
 * other. Returns the falling bar's lowest centre height relative to the other's; the smallest
 * pair distance seen and the steps whose surfaces cross (an edge through a face). */
static double bars_crossing(bool edge_edge, double *dmin, int *crossed) {
    SimObject bars[2];
    double ha[3] = {0.25, 0.01, 0.01}, hb[3] = {0.01, 0.01, 0.25}, at_a[3] = {0.02, 0.1, 0.03}, at_b[3] = {0, 0, 0};
    bar_object(&bars[0], ha, at_a);
    bar_object(&bars[1], hb, at_b);
    bars[0].zdot[1 * bars[0].nb + 4 * bars[0].m + 3] = -8;
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.edge_edge = edge_edge;
    c.dhat = 0.004;
    SimWorld w;
    char err[256];
    int rc = sim_world_init(&w, bars, 2, NULL, 0, NULL, 0, &c, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    double low = INFINITY;
    *dmin = INFINITY, *crossed = 0;
    for (int s = 0; s < 20 && rc == 0; s++) {
        rc = sim_world_step(&w, 0.01, err, sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        *dmin = fmin(*dmin, w.last.min_distance);
        double x[2][24], y[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            sim_object_vertices(&bars[k], x[k]);
            for (int v = 0; v < 8; v++) y[k] += x[k][3 * v + 1] / 8;
        }
        low = fmin(low, y[0] - y[1]);
        *crossed += surfaces_cross(&bars[0], x[0], &bars[1], x[1]);
    }
    sim_world_free(&w);
    sim_object_free(&bars[0]), sim_object_free(&bars[1]);
    return low;
}

TEST(sim_world_thin_bars_crossing_at_speed_never_cross) {
    double dmin_pt, dmin_ee;
    int cross_pt, cross_ee;
    double low_pt = bars_crossing(false, &dmin_pt, &cross_pt), low_ee = bars_crossing(true, &dmin_ee, &cross_ee);
    printf("    bars: lowest centre of the thrown bar over the other's %.4f m with point-triangle pairs alone (%d steps "
           "with surfaces crossing), %.4f m with edge-edge pairs (%d steps); min pair distance %.3g m\n", low_pt, cross_pt,
           low_ee, cross_ee, dmin_ee);
    CHECK(low_pt < -0.02); /* without edge pairs the bar goes through */
    CHECK(cross_ee == 0 && low_ee > 0 && dmin_ee > 0);
}

/* The pile's objects' proxies at the default resolution: closed (no boundary edge), fewer
 * vertices than the mesh, every proxy vertex a mesh vertex, the mesh within a cell of the proxy;
 * a finer grid is closer. */
TEST(sim_proxy_is_closed_coarse_and_near_the_mesh) {
    SimScene sc;
    char err[512];
    CHECK_MSG(sim_scene_load("scenes/pile.json", &sc, err, sizeof err) == 0, "%s", err);
    SimObject objs[3];
    CHECK_MSG(sim_scene_build(&sc, "scenes", objs, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < 3; k++) {
        const SimObject *o = &objs[k];
        SimProxy p, fine;
        double h = o->diag / sc.contact.proxy_cells;
        CHECK(sim_proxy_build(o->nv, o->Xv, o->nf, o->faces, h, &p) == 0);
        CHECK(sim_proxy_build(o->nv, o->Xv, o->nf, o->faces, h / 2, &fine) == 0);
        printf("    object %d: mesh %lld vertices %lld triangles; proxy (h %.3g m) %lld vertices %lld triangles, "
               "%lld boundary edges, deviation %.3g m (%.2f h); at h/2 %lld vertices, deviation %.3g m\n", k,
               (long long)o->nv, (long long)o->nf, h, (long long)p.np, (long long)p.nf, (long long)p.boundary, p.deviation,
               p.deviation / h, (long long)fine.np, fine.deviation);
        CHECK(p.boundary == 0 && fine.boundary == 0);
        CHECK(p.np < o->nv && p.nf > 20);
        CHECK(p.deviation > 0 && p.deviation < h);
        CHECK(fine.deviation < p.deviation && fine.np > p.np);
        for (int64_t v = 0; v < p.np; v++) CHECK(p.vert[v] >= 0 && p.vert[v] < o->nv);
        sim_proxy_free(&p), sim_proxy_free(&fine);
        sim_object_free(&objs[k]);
    }
    sim_scene_free(&sc);
}

/* a closed mesh whose clustering leaves nothing (one cell) keeps its own surface */
TEST(sim_proxy_of_a_tiny_mesh_is_the_mesh) {
    DsMesh m;
    double half[3] = {0.1, 0.1, 0.1}, *x;
    CHECK(box_mesh_body(half, (double[3]){0, 0, 0}, &m, &x) == 0);
    SimProxy p;
    CHECK(sim_proxy_build(m.nv, x, m.nf, m.f, 10, &p) == 0);
    CHECK(p.np == m.nv && p.nf == m.nf && p.boundary == 0 && p.deviation == 0);
    sim_proxy_free(&p);
    free(x), ds_mesh_free(&m);
}

/* The friction potential's gradient and Hessian in the relative displacement against finite
 * differences, below and beyond the smoothing threshold, and the Hessian PSD. */
TEST(sim_friction_derivatives_match_fd) {
    uint64_t seed = 17;
    double eps = 1e-3;
    for (int trial = 0; trial < 40; trial++) {
        double n[3], T[6], a[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) n[i] = 2 * urand(&seed) - 1;
        double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (int i = 0; i < 3; i++) n[i] /= l;
        a[fabs(n[0]) < 0.5 ? 0 : 1] = 1;
        T[0] = n[1] * a[2] - n[2] * a[1], T[1] = n[2] * a[0] - n[0] * a[2], T[2] = n[0] * a[1] - n[1] * a[0];
        l = sqrt(T[0] * T[0] + T[1] * T[1] + T[2] * T[2]);
        for (int i = 0; i < 3; i++) T[i] /= l;
        T[3] = n[1] * T[2] - n[2] * T[1], T[4] = n[2] * T[0] - n[0] * T[2], T[5] = n[0] * T[1] - n[1] * T[0];
        /* slips from 0.05 ε to 20 ε */
        double D[3], mag = eps * 0.05 * pow(400, trial / 39.0), c = 2.5, g[3], H[9];
        for (int i = 0; i < 3; i++) D[i] = mag * (2 * urand(&seed) - 1);
        double E = sim_friction(D, T, c, eps, g, H);
        CHECK(E >= 0);
        double gmax = 0, hmax = 0;
        for (int i = 0; i < 3; i++) gmax = fmax(gmax, fabs(g[i]));
        for (int i = 0; i < 9; i++) hmax = fmax(hmax, fabs(H[i]));
        for (int i = 0; i < 3; i++) {
            double h = 1e-4 * fmin(mag, eps), Dp[3], Dm[3], gp[3], gm[3];
            memcpy(Dp, D, sizeof Dp), memcpy(Dm, D, sizeof Dm);
            Dp[i] += h, Dm[i] -= h;
            double fd = (sim_friction(Dp, T, c, eps, gp, NULL) - sim_friction(Dm, T, c, eps, gm, NULL)) / (2 * h);
            CHECK_MSG(fabs(fd - g[i]) <= 1e-5 * gmax + 1e-12, "trial %d (|D| %.3g ε): gradient %g vs %g", trial, mag / eps, g[i], fd);
            for (int j = 0; j < 3; j++)
                CHECK_MSG(fabs((gp[j] - gm[j]) / (2 * h) - H[3 * j + i]) <= 1e-4 * hmax, "trial %d: Hessian (%d, %d) %g vs %g",
                          trial, j, i, H[3 * j + i], (gp[j] - gm[j]) / (2 * h));
        }
        for (int k = 0; k < 10; k++) {
            double v[3] = {2 * urand(&seed) - 1, 2 * urand(&seed) - 1, 2 * urand(&seed) - 1}, q = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) q += v[i] * H[3 * i + j] * v[j];
            CHECK(q >= -1e-12 * hmax);
        }
    }
    /* no slip along the normal: friction ignores it */
    double T[6] = {1, 0, 0, 0, 0, 1}, D[3] = {0, 0.3, 0};
    CHECK(sim_friction(D, T, 1, 1e-3, NULL, NULL) == 0);
}

/* The majorizer (sim_friction_majorizer) lies above the friction term along every step, from any
 * slip (0.05 ε to 20 ε) to any other, reversals included, and is ⪰ the exact Hessian; the exact
 * Hessian's model does not (a sliding pair reversed: the exact model has no curvature along the
 * slip and falls 2 c y below the term). */
TEST(sim_friction_majorizer_bounds_the_term_from_above) {
    uint64_t seed = 29;
    double eps = 1e-3, c = 1.5, T[6] = {1, 0, 0, 0, 0, 1};
    int exact_below = 0;
    for (int trial = 0; trial < 200; trial++) {
        double mag = eps * 0.05 * pow(400, (trial % 40) / 39.0), D[3], g[3], H[9], Hm[9];
        for (int i = 0; i < 3; i++) D[i] = mag * (2 * urand(&seed) - 1);
        double E = sim_friction(D, T, c, eps, g, H);
        sim_friction_majorizer(D, T, c, eps, Hm);
        /* ⪰ the exact Hessian */
        for (int k = 0; k < 5; k++) {
            double v[3] = {2 * urand(&seed) - 1, 2 * urand(&seed) - 1, 2 * urand(&seed) - 1}, q = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) q += v[i] * (Hm[3 * i + j] - H[3 * i + j]) * v[j];
            CHECK_MSG(q >= -1e-9 * c / eps, "trial %d: majorizer below the exact Hessian by %g", trial, q);
        }
        /* steps to random slips of up to 40 ε, and the reversal */
        for (int k = 0; k < 20; k++) {
            double s[3];
            for (int i = 0; i < 3; i++) s[i] = k == 0 ? -2 * D[i] : 40 * eps * (2 * urand(&seed) - 1) - D[i];
            double Dn[3] = {D[0] + s[0], D[1] + s[1], D[2] + s[2]}, En = sim_friction(Dn, T, c, eps, NULL, NULL);
            double lin = E, qm = 0, qe = 0;
            for (int i = 0; i < 3; i++) {
                lin += g[i] * s[i];
                for (int j = 0; j < 3; j++) qm += 0.5 * s[i] * Hm[3 * i + j] * s[j], qe += 0.5 * s[i] * H[3 * i + j] * s[j];
            }
            CHECK_MSG(En <= lin + qm + 1e-12 * (1 + fabs(En)), "trial %d step %d: term %.9g above the majorizer's model %.9g", trial, k,
                      En, lin + qm);
            exact_below += k == 0 && En > lin + qe + 1e-3 * c * mag;
        }
    }
    /* the exact model falls below the term on the reversals of sliding pairs */
    CHECK_MSG(exact_below > 50, "the exact Hessian's model fell below the term on %d reversals", exact_below);
}

/* A 10 cm block resting on a fixed incline tilted θ about z, μ between them: it sticks below the
 * friction angle atan μ and slides above it with a = g (sin θ − μ cos θ) (frictionless: g sin θ).
 * Returns the block's travel down the slope in 0.5 s. */
static double incline_travel(double theta_deg, double mu) {
    double th = theta_deg * M_PI / 180, dhat = 0.004, hb[3] = {0.05, 0.05, 0.05}, hi[3] = {0.6, 0.05, 0.3};
    /* the incline's top face normal (−sin θ, cos θ, 0); the block above its centre at d̂/2 */
    double nrm[3] = {-sin(th), cos(th), 0}, off = hi[1] + hb[1] + 0.5 * dhat, at[3];
    for (int i = 0; i < 3; i++) at[i] = off * nrm[i];
    SimObject block;
    bar_object_rot(&block, hb, at, theta_deg);
    block.gravity[1] = -9.81;
    DsMesh m;
    CHECK(sim_mesh_box(hi, &m) == 0);
    SimPose pose = sim_pose_identity();
    sim_pose_euler(&pose, (double[3]){0, 0, theta_deg});
    SimRigid incline;
    char err[256];
    CHECK_MSG(sim_rigid_init(&incline, &m, 1e9, &pose, err, sizeof err) == 0, "%s", err); /* immovable */
    ds_mesh_free(&m);
    memset(incline.gravity, 0, sizeof incline.gravity);
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.dhat = dhat, c.mu = mu;
    /* the block's weight on its four bottom corners at d̂/2 (−b′(d̂/2) ≈ 1.19 d̂) */
    c.stiffness = block.mass * 9.81 / (4 * 1.19 * dhat);
    SimWorld w;
    CHECK_MSG(sim_world_init(&w, &block, 1, &incline, 1, NULL, 0, &c, err, sizeof err) == 0, "%s", err);
    double x0[24], x1[24], s0 = 0, s1 = 0, dir[3] = {-cos(th), -sin(th), 0}; /* down the slope */
    sim_object_vertices(&block, x0);
    for (int s = 0; s < 50; s++) {
        CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
        CHECK(w.last.min_distance > 0);
    }
    sim_object_vertices(&block, x1);
    for (int v = 0; v < 8; v++)
        for (int i = 0; i < 3; i++) s0 += dir[i] * x0[3 * v + i] / 8, s1 += dir[i] * x1[3 * v + i] / 8;
    sim_world_free(&w);
    sim_rigid_free(&incline);
    sim_object_free(&block);
    return s1 - s0;
}

TEST(sim_world_block_on_incline_sticks_below_the_friction_angle) {
    double mu = 0.5, crit = atan(mu) * 180 / M_PI, t = 0.5, g = 9.81;
    double below = crit - 7, above = crit + 7;
    double stick = incline_travel(below, mu), slide = incline_travel(above, mu), free_ = incline_travel(below, 0);
    double a_slide = g * (sin(above * M_PI / 180) - mu * cos(above * M_PI / 180)), a_free = g * sin(below * M_PI / 180);
    printf("    incline, μ %.2f (friction angle %.1f°): at %.1f° the block travels %.2f mm in %.1f s (sticks), at %.1f° "
           "%.1f mm (Coulomb %.1f mm), frictionless at %.1f° %.1f mm (%.1f mm)\n", mu, crit, below, 1e3 * stick, t, above,
           1e3 * slide, 1e3 * 0.5 * a_slide * t * t, below, 1e3 * free_, 1e3 * 0.5 * a_free * t * t);
    CHECK(fabs(stick) < 3e-3);
    CHECK(slide > 0.7 * 0.5 * a_slide * t * t && slide < 1.3 * 0.5 * a_slide * t * t);
    CHECK(free_ > 0.8 * 0.5 * a_free * t * t);
}

/* μ per material pair: two 10 cm blocks side by side on one incline tilted θ about z, each of its
 * own contact material against the incline's (rubber μ 0.7: friction angle 35.0°; ice μ 0.3:
 * 16.7°; the default μ between other pairs 0.5, which would hold both at 25°). At θ = 25° the
 * rubber block sticks and the ice block slides with a = g (sin θ − μ cos θ). travel gets each
 * block's travel down the slope in 0.5 s. */
static void incline_two_materials(double theta_deg, const double mu_pair[2], double travel[2]) {
    double th = theta_deg * M_PI / 180, dhat = 0.004, hb[3] = {0.05, 0.05, 0.05}, hi[3] = {0.6, 0.05, 0.4};
    double nrm[3] = {-sin(th), cos(th), 0}, off = hi[1] + hb[1] + 0.5 * dhat;
    SimObject blocks[2];
    for (int k = 0; k < 2; k++) {
        double at[3];
        for (int i = 0; i < 3; i++) at[i] = off * nrm[i];
        at[2] = k ? 0.2 : -0.2; /* apart along the slope's horizontal (z): they never touch */
        bar_object_rot(&blocks[k], hb, at, theta_deg);
        blocks[k].gravity[1] = -9.81;
        blocks[k].contact_material = 1 + k; /* 1: rubber, 2: ice */
    }
    DsMesh m;
    CHECK(sim_mesh_box(hi, &m) == 0);
    SimPose pose = sim_pose_identity();
    sim_pose_euler(&pose, (double[3]){0, 0, theta_deg});
    SimRigid incline;
    char err[256];
    CHECK_MSG(sim_rigid_init(&incline, &m, 1e9, &pose, err, sizeof err) == 0, "%s", err);
    ds_mesh_free(&m);
    memset(incline.gravity, 0, sizeof incline.gravity);
    incline.contact_material = 3;
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.dhat = dhat, c.mu = 0.5;
    CHECK(sim_contact_set_mu(&c, 1, 3, mu_pair[0]) == 0 && sim_contact_set_mu(&c, 2, 3, mu_pair[1]) == 0);
    CHECK(sim_contact_mu(&c, 3, 1) == mu_pair[0] && sim_contact_mu(&c, 1, 2) == 0.5 && sim_contact_mu(&c, 0, 0) == 0.5);
    CHECK(sim_contact_set_mu(&c, 1, SIM_CONTACT_MATERIALS, 0.1) == -1 && sim_contact_set_mu(&c, 1, 2, -0.1) == -1);
    c.stiffness = blocks[0].mass * 9.81 / (4 * 1.19 * dhat);
    SimWorld w;
    CHECK_MSG(sim_world_init(&w, blocks, 2, &incline, 1, NULL, 0, &c, err, sizeof err) == 0, "%s", err);
    double x0[2][24], x1[2][24], dir[3] = {-cos(th), -sin(th), 0};
    for (int k = 0; k < 2; k++) sim_object_vertices(&blocks[k], x0[k]);
    for (int s = 0; s < 50; s++) {
        CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
        CHECK(w.last.min_distance > 0);
    }
    for (int k = 0; k < 2; k++) {
        sim_object_vertices(&blocks[k], x1[k]);
        double s0 = 0, s1 = 0;
        for (int v = 0; v < 8; v++)
            for (int i = 0; i < 3; i++) s0 += dir[i] * x0[k][3 * v + i] / 8, s1 += dir[i] * x1[k][3 * v + i] / 8;
        travel[k] = s1 - s0;
    }
    sim_world_free(&w);
    sim_rigid_free(&incline);
    sim_object_free(&blocks[0]), sim_object_free(&blocks[1]);
}

TEST(sim_world_mu_per_material_pair_one_block_sticks_one_slides) {
    double theta = 25, th = theta * M_PI / 180, t = 0.5, g = 9.81, mu[2] = {0.7, 0.3}, tr[2];
    incline_two_materials(theta, mu, tr);
    double coulomb = 0.5 * g * (sin(th) - mu[1] * cos(th)) * t * t;
    printf("    one incline at %.0f°: rubber (μ %.1f, friction angle %.1f°) travels %.2f mm, ice (μ %.1f, %.1f°) %.1f mm "
           "(Coulomb %.1f mm) in %.1f s\n", theta, mu[0], atan(mu[0]) * 180 / M_PI, 1e3 * tr[0], mu[1],
           atan(mu[1]) * 180 / M_PI, 1e3 * tr[1], 1e3 * coulomb, t);
    CHECK(fabs(tr[0]) < 3e-3);
    CHECK(tr[1] > 0.7 * coulomb && tr[1] < 1.3 * coulomb);
    /* the same pair table swapped: the blocks swap roles (the table, not the blocks, decides) */
    double sw[2] = {mu[1], mu[0]};
    incline_two_materials(theta, sw, tr);
    CHECK(fabs(tr[1]) < 3e-3);
    CHECK(tr[0] > 0.7 * coulomb && tr[0] < 1.3 * coulomb);
}

/* The scene keys: contact_materials names them, friction_pairs sets μ per pair, objects', planes'
 * and rigids' contact_material pick one; unknown names and duplicates are errors. */
TEST(sim_scene_contact_materials_and_friction_pairs) {
    const char *json = "{\"objects\": [{\"contact_material\": \"rubber\"}, {}], \"planes\": [{\"contact_material\": \"ice\"}],"
                       " \"rigids\": [{\"contact_material\": \"ice\"}], \"contact\": {\"mu\": 0.4},"
                       " \"contact_materials\": [{\"name\": \"rubber\"}, {\"name\": \"ice\"}],"
                       " \"friction_pairs\": [{\"a\": \"rubber\", \"b\": \"ice\", \"mu\": 0.05}, {\"a\": \"\", \"b\": \"ice\", \"mu\": 0}]}";
    SimScene sc;
    char err[512];
    int rc = sim_scene_parse(json, "t.json", &sc, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (!rc) {
        CHECK(sc.objects[0].material_id == 1 && sc.objects[1].material_id == 0);
        CHECK(sc.planes[0].material == 2 && sc.rigids[0].material_id == 2);
        CHECK(sim_contact_mu(&sc.contact, 1, 2) == 0.05 && sim_contact_mu(&sc.contact, 2, 1) == 0.05);
        CHECK(sim_contact_mu(&sc.contact, 0, 2) == 0 && sim_contact_mu(&sc.contact, 0, 1) == 0.4);
        sim_scene_free(&sc);
    }
    const struct {
        const char *json, *expect;
    } cases[] = {
        {"{\"objects\": [{\"contact_material\": \"wood\"}]}", "'objects[0].contact_material'"},
        {"{\"objects\": [{}], \"planes\": [{\"contact_material\": \"wood\"}]}", "'planes[0].contact_material'"},
        {"{\"objects\": [{}], \"contact_materials\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}", "'contact_materials[1].name'"},
        {"{\"objects\": [{}], \"contact_materials\": [{\"name\": \"a\"}], \"friction_pairs\": [{\"a\": \"a\", \"b\": \"b\", \"mu\": 1}]}",
         "'friction_pairs[0]"},
        {"{\"objects\": [{}], \"contact_materials\": [{\"name\": \"a\"}], \"friction_pairs\": [{\"a\": \"a\", \"b\": \"a\", \"mu\": -1}]}",
         "'friction_pairs[0].mu'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rc = sim_scene_parse(cases[i].json, "t.json", &sc, err, sizeof err);
        CHECK_MSG(rc != 0, "case %zu parsed", i);
        if (!rc) {
            sim_scene_free(&sc);
            continue;
        }
        CHECK_MSG(strstr(err, cases[i].expect) != NULL, "case %zu: %s", i, err);
    }
}

/* Two 10 cm blocks thrown along a floor plane at 1 m/s (the plane's penalty contact, friction μ
 * with it): each stops after v²/(2 μ g); frictionless they keep going. Returns the first block's
 * travel in 0.5 s; the step's friction Hessian with or without the majorizer rule
 * (SimContactOptions.friction_majorize), and the Newton iterations and backtracks of all steps. */
static double floor_travel_counted(double mu, bool majorize, int *iters, int *backtracks) {
    double hb[3] = {0.05, 0.05, 0.05}, v0 = 1;
    SimObject blocks[2];
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
    char err[256];
    for (int k = 0; k < 2; k++) {
        bar_object(&blocks[k], hb, (double[3]){1.5 * k, 0.05, 0});
        blocks[k].gravity[1] = -9.81;
        blocks[k].zdot[0 * blocks[k].nb + 4 * blocks[k].m + 3] = v0;
        CHECK(sim_object_add_plane(&blocks[k], &floor, err, sizeof err) == 0);
    }
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.mu = mu, c.friction_majorize = majorize;
    SimWorld w;
    CHECK_MSG(sim_world_init(&w, blocks, 2, NULL, 0, &floor, 1, &c, err, sizeof err) == 0, "%s", err);
    double x0[24], x1[24], s = 0;
    sim_object_vertices(&blocks[0], x0);
    *iters = *backtracks = 0;
    for (int st = 0; st < 50; st++) {
        CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
        *iters += w.last.iters, *backtracks += w.last.backtracks;
    }
    sim_object_vertices(&blocks[0], x1);
    for (int v = 0; v < 8; v++) s += (x1[3 * v] - x0[3 * v]) / 8;
    sim_world_free(&w);
    sim_object_free(&blocks[0]), sim_object_free(&blocks[1]);
    return s;
}

static double floor_travel(double mu) {
    int it, bt;
    return floor_travel_counted(mu, true, &it, &bt);
}

TEST(sim_world_block_thrown_along_the_floor_stops_after_coulomb_distance) {
    double mu = 0.5, g = 9.81, expect = 1.0 / (2 * mu * g);
    double with = floor_travel(mu), without = floor_travel(0);
    printf("    floor: a block thrown at 1 m/s travels %.1f mm with μ %.1f (Coulomb %.1f mm), %.1f mm frictionless in 0.5 s\n",
           1e3 * with, mu, 1e3 * expect, 1e3 * without);
    CHECK(with > 0.8 * expect && with < 1.2 * expect);
    CHECK(without > 0.45);
    int it[2], bt[2];
    double t[2] = {floor_travel_counted(mu, true, &it[0], &bt[0]), floor_travel_counted(mu, false, &it[1], &bt[1])};
    printf("    friction's majorizer where a slip turns or slows: %.4f mm, %d Newton iterations, %d backtracks; the exact Hessian "
           "everywhere: %.4f mm, %d, %d\n", 1e3 * t[0], it[0], bt[0], 1e3 * t[1], it[1], bt[1]);
    CHECK(fabs(t[0] - t[1]) < 1e-6 * fabs(t[1])); /* the Hessian changes the path, not the minimizer */
}

/* A 10 cm block of density rho, its surface subdivided sub times, released 0.9 d̂ above a fixed
 * slab and left to settle for 1 s; returns its gap (the smallest pair distance) over d̂. κ
 * automatic (stiffness 0), or set. */
static double resting_gap(double rho, int sub, double stiffness) {
    double dhat = 0.004, hb[3] = {0.05, 0.05, 0.05}, hs[3] = {0.6, 0.05, 0.6}, at[3] = {0, hs[1] + hb[1] + 0.9 * dhat, 0};
    SimObject block;
    block_object(&block, hb, at, 0, rho, sub);
    block.gravity[1] = -9.81;
    DsMesh m;
    CHECK(sim_mesh_box(hs, &m) == 0);
    SimPose pose = sim_pose_identity();
    SimRigid slab;
    char err[256];
    CHECK_MSG(sim_rigid_init(&slab, &m, 1e9, &pose, err, sizeof err) == 0, "%s", err); /* immovable */
    ds_mesh_free(&m);
    memset(slab.gravity, 0, sizeof slab.gravity);
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.dhat = dhat, c.proxy_cells = 0, c.stiffness = stiffness;
    SimWorld w;
    CHECK_MSG(sim_world_init(&w, &block, 1, &slab, 1, NULL, 0, &c, err, sizeof err) == 0, "%s", err);
    for (int s = 0; s < 100; s++) CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
    double gap = sim_world_min_distance(&w) / dhat;
    sim_world_free(&w);
    sim_rigid_free(&slab);
    sim_object_free(&block);
    return gap;
}

/* The automatic κ counts contacts: a block resting on a face rests at d̂/2 (within the band
 * [0.35, 0.65] d̂) whatever its mass and however many contact points its face has (4 corners, or
 * 25 or 81 points of a subdivided surface). The earlier rule, κ = M g / (24 d̂), sized for a
 * contact counted 2–6 times, puts the same blocks at 0.2 d̂ (4 corners: each carries 6 pairs'
 * share) to 0.8 d̂ (81 points). */
TEST(sim_world_resting_block_gap_is_half_dhat_whatever_mass_and_contact_count) {
    const double rho[4] = {1000, 8000, 1000, 250};
    const int sub[4] = {0, 0, 2, 3};
    int old_outside = 0;
    for (int k = 0; k < 4; k++) {
        double gap = resting_gap(rho[k], sub[k], 0);
        SimObject probe;
        double hb[3] = {0.05, 0.05, 0.05}, at[3] = {0, 0, 0};
        block_object(&probe, hb, at, 0, rho[k], sub[k]);
        double old = resting_gap(rho[k], sub[k], probe.mass * 9.81 / (24 * 0.004));
        sim_object_free(&probe);
        printf("    block ρ %.0f, %d points on its face: rests at %.3f d̂ (earlier rule: %.3f d̂)\n", rho[k],
               (1 << sub[k]) * (1 << sub[k]) + 2 * (1 << sub[k]) + 1, gap, old);
        CHECK(gap > 0.35 && gap < 0.65);
        old_outside += !(old > 0.35 && old < 0.65);
    }
    CHECK(old_outside >= 2);
}

/* IPC's adaptive κ: a 10 cm block whose faces carry 81 points each rests on three fixed spikes
 * (pyramids' apexes, 3 cm from its centre). The initial κ holds its weight on the 81 points of a
 * face at d̂/2; on three points each carries 27 points' share, −b′(d) is 27 times larger and the
 * block sinks to about 0.04 d̂. With the adaptive increase κ doubles while the closest pair is
 * inside 0.1 d̂ and closing. Returns the block's lowest point above the apexes over d̂ after 1 s and
 * the final κ over the initial one. */
static double tripod_gap(double adapt, double *kappa_ratio) {
    double dhat = 0.004, hb[3] = {0.05, 0.05, 0.05}, at[3] = {0, hb[1] + 0.6 * dhat, 0};
    SimObject block;
    block_object(&block, hb, at, 0, 1000, 3);
    block.gravity[1] = -9.81;
    /* three pyramids, apex up at y = 0 (base half-width 2 cm, height 2 cm) */
    DsMesh m = {0};
    m.nv = 15, m.nf = 18;
    m.v = malloc(sizeof(float) * 45), m.f = malloc(sizeof(int32_t) * 54);
    CHECK(m.v && m.f);
    for (int p = 0; p < 3; p++) {
        double cx = 0.03 * cos(2 * M_PI * p / 3), cz = 0.03 * sin(2 * M_PI * p / 3);
        float *v = m.v + 15 * p;
        for (int k = 0; k < 4; k++)
            v[3 * k] = (float)(cx + (k & 1 ? 0.02 : -0.02)), v[3 * k + 1] = -0.02f, v[3 * k + 2] = (float)(cz + (k & 2 ? 0.02 : -0.02));
        v[12] = (float)cx, v[13] = 0, v[14] = (float)cz;
        /* outward: base (y down) 0 1 3, 0 3 2; sides toward the apex 4 */
        const int32_t F[18] = {0, 1, 3, 0, 3, 2, 0, 4, 1, 1, 4, 3, 3, 4, 2, 2, 4, 0};
        for (int k = 0; k < 18; k++) m.f[18 * p + k] = 5 * p + F[k];
    }
    SimPose pose = sim_pose_identity();
    SimRigid spikes;
    char err[256];
    CHECK_MSG(sim_rigid_init(&spikes, &m, 1e9, &pose, err, sizeof err) == 0, "%s", err); /* immovable */
    ds_mesh_free(&m);
    memset(spikes.gravity, 0, sizeof spikes.gravity);
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.dhat = dhat, c.proxy_cells = 0, c.kappa_adapt = adapt, c.mu = 0.5;
    SimWorld w;
    CHECK_MSG(sim_world_init(&w, &block, 1, &spikes, 1, NULL, 0, &c, err, sizeof err) == 0, "%s", err);
    double k0 = w.kappa;
    for (int s = 0; s < 100; s++) {
        CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
        CHECK(w.last.min_distance > 0);
    }
    double gap = sim_world_min_distance(&w) / dhat;
    *kappa_ratio = w.kappa / k0;
    sim_world_free(&w);
    sim_rigid_free(&spikes);
    sim_object_free(&block);
    return gap;
}

TEST(sim_world_adaptive_kappa_holds_a_block_on_spikes_above_a_tenth_of_dhat) {
    double r_on, r_off, on = tripod_gap(0.1, &r_on), off = tripod_gap(0, &r_off);
    printf("    block of 81 points a face on three spikes: rests at %.3f d̂ with the adaptive κ (κ × %.0f), %.3f d̂ without\n",
           on, r_on, off);
    CHECK(off < 0.1 && r_off == 1);
    CHECK(on > 0.1 && on < 0.65 && r_on > 1);
}
