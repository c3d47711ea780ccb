/* tests/test_sim_world.c — the coupled world step (sim/world.h): IPC barrier derivatives, the
 * point–triangle distance and its gradient, the spatial-hash broad phase (points and triangles)
 * against brute force, point–point and point–triangle CCD, a three-object pile-up whose every
 * contact distance stays > 0 on every step, the shipped pile scene without interpenetration,
 * momentum in a head-on collision, rigid bodies
 * (mass properties, floor, ball on a deformable), and bindings (affine motion transforms
 * Gaussians exactly; polar decomposition). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sort.h"
#include "base/clock.h"
#include "base/par.h"
#include "datasets/geometry/geometry.h"
#include "sim/bindings.h"
#include "sim/contact.h"
#include "sim/newton.h"
#include "sim/rigid.h"
#include "sim/scene.h"
#include "sim/world.h"
#include "sim/world_internal.h"
#include "tests/sim_test_util.h"
#include "tests/test.h"

static double urand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

TEST(sim_barrier_derivatives_match_fd) {
    double dhat = 0.05;
    for (int k = 1; k < 20; k++) {
        double d = dhat * k / 20.0, db, d2b, h = 1e-7 * dhat;
        sim_barrier(d, dhat, &db, &d2b);
        double fd1 = (sim_barrier(d + h, dhat, NULL, NULL) - sim_barrier(d - h, dhat, NULL, NULL)) / (2 * h);
        double p, m;
        sim_barrier(d + h, dhat, &p, NULL), sim_barrier(d - h, dhat, &m, NULL);
        CHECK_NEAR(db, fd1, 1e-6 * (fabs(fd1) + dhat));
        CHECK_NEAR(d2b, (p - m) / (2 * h), 1e-5 * (fabs(d2b) + 1));
        CHECK(d2b > 0 && db < 0);
    }
    CHECK(sim_barrier(dhat, dhat, NULL, NULL) == 0 && sim_barrier(2 * dhat, dhat, NULL, NULL) == 0);
    CHECK(isinf(sim_barrier(0, dhat, NULL, NULL)) && isinf(sim_barrier(-1, dhat, NULL, NULL)));
}

TEST(sim_broad_phase_matches_brute_force) {
    uint64_t s = 11;
    enum { NB = 4, NP = 300 };
    double x[NB][NP * 3], dx[NB][NP * 3];
    SimContactBody bodies[NB];
    for (int b = 0; b < NB; b++) {
        for (int p = 0; p < NP; p++)
            for (int i = 0; i < 3; i++) x[b][3 * p + i] = urand(&s) * 0.6 + 0.1 * b, dx[b][3 * p + i] = 0.05 * (urand(&s) - 0.5);
        bodies[b] = (SimContactBody){.np = NP, .x = x[b], .dx = b == 2 ? NULL : dx[b], .is_static = b >= 2};
    }
    double margin = 0.02;
    SimContactSet set = {0};
    CHECK(sim_contact_broad_phase(bodies, NB, margin, &set) == 0);
    /* brute force: inflated swept boxes overlap */
    int64_t expect = 0;
    for (int a = 0; a < NB; a++)
        for (int b = a + 1; b < NB; b++) {
            if (bodies[a].is_static && bodies[b].is_static) continue;
            for (int p = 0; p < NP; p++)
                for (int q = 0; q < NP; q++) {
                    int ok = 1;
                    for (int i = 0; i < 3 && ok; i++) {
                        double a0 = x[a][3 * p + i], a1 = a0 + (bodies[a].dx ? dx[a][3 * p + i] : 0);
                        double b0 = x[b][3 * q + i], b1 = b0 + (bodies[b].dx ? dx[b][3 * q + i] : 0);
                        ok = fmin(a0, a1) - margin <= fmax(b0, b1) + margin && fmin(b0, b1) - margin <= fmax(a0, a1) + margin;
                    }
                    expect += ok;
                }
        }
    CHECK_MSG(set.n == expect, "broad phase found %lld pairs, brute force %lld", (long long)set.n, (long long)expect);
    /* no duplicates */
    int dup = 0;
    for (int64_t u = 0; u < set.n && u < 2000; u++)
        for (int64_t v = u + 1; v < set.n; v++)
            dup += !memcmp(&set.pairs[u], &set.pairs[v], sizeof set.pairs[u]);
    CHECK(dup == 0);
    sim_contact_set_free(&set);
}

TEST(sim_point_triangle_distance_matches_brute_force) {
    uint64_t s = 5;
    double worst = 0;
    for (int it = 0; it < 300; it++) {
        double p[3], t[3][3], w[3];
        for (int i = 0; i < 3; i++) {
            p[i] = 2 * urand(&s) - 1;
            for (int k = 0; k < 3; k++) t[k][i] = urand(&s) - 0.5;
        }
        double d = sim_point_triangle(p, t[0], t[1], t[2], w), best = INFINITY;
        CHECK(w[0] >= 0 && w[1] >= 0 && w[2] >= 0 && fabs(w[0] + w[1] + w[2] - 1) < 1e-12);
        double q[3], r = 0; /* the weights give the closest point */
        for (int i = 0; i < 3; i++) q[i] = w[0] * t[0][i] + w[1] * t[1][i] + w[2] * t[2][i], r += (p[i] - q[i]) * (p[i] - q[i]);
        CHECK_NEAR(sqrt(r), d, 1e-12);
        for (int u = 0; u <= 100; u++)
            for (int v = 0; u + v <= 100; v++) {
                double a = u / 100.0, b = v / 100.0, e = 0;
                for (int i = 0; i < 3; i++) {
                    double y = (1 - a - b) * t[0][i] + a * t[1][i] + b * t[2][i];
                    e += (p[i] - y) * (p[i] - y);
                }
                best = fmin(best, sqrt(e));
            }
        CHECK_MSG(d <= best + 1e-12, "distance %g above a sampled one %g", d, best);
        worst = fmax(worst, best - d);
        /* the gradient the solver uses (the closest point's weights held): r/d on p, −w_k r/d
         * on corner k, against central differences of the distance */
        double h = 1e-7, wd[3];
        for (int i = 0; i < 3; i++) {
            double pp[3] = {p[0], p[1], p[2]}, pm[3] = {p[0], p[1], p[2]};
            pp[i] += h, pm[i] -= h;
            double fd = (sim_point_triangle(pp, t[0], t[1], t[2], wd) - sim_point_triangle(pm, t[0], t[1], t[2], wd)) / (2 * h);
            CHECK_NEAR(fd, (p[i] - q[i]) / d, 1e-6);
            int k = it % 3;
            double c0 = t[k][i];
            t[k][i] = c0 + h;
            double dp = sim_point_triangle(p, t[0], t[1], t[2], wd);
            t[k][i] = c0 - h;
            double dm = sim_point_triangle(p, t[0], t[1], t[2], wd);
            t[k][i] = c0;
            CHECK_NEAR((dp - dm) / (2 * h), -w[k] * (p[i] - q[i]) / d, 1e-6);
        }
    }
    CHECK(worst < 0.02); /* the 1/100 grid's resolution */
}

/* points against other bodies' triangles (and points against points where a body has none), as
 * the swept, inflated boxes say */
TEST(sim_broad_phase_with_triangles_matches_brute_force) {
    uint64_t s = 17;
    enum { NB = 3, NP = 60, NF = 80 };
    double x[NB][3 * NP], dx[NB][3 * NP], m = 0.03;
    int32_t f[NB][3 * NF];
    SimContactBody B[NB];
    for (int b = 0; b < NB; b++) {
        for (int k = 0; k < 3 * NP; k++) x[b][k] = urand(&s) * 0.5 + (k % 3 == 0 ? 0.1 * b : 0), dx[b][k] = (urand(&s) - 0.5) * 0.1;
        for (int k = 0; k < 3 * NF; k++) f[b][k] = (int32_t)(urand(&s) * NP) % NP;
        B[b] = (SimContactBody){.np = NP, .x = x[b], .dx = b == 2 ? NULL : dx[b], .is_static = b == 2,
                                .nf = b == 1 ? 0 : NF, .faces = b == 1 ? NULL : f[b]};
    }
    SimContactSet set = {0};
    CHECK(sim_contact_broad_phase(B, NB, m, &set) == 0);
    int64_t expect = 0, wrong = 0;
    for (int a = 0; a < NB; a++)
        for (int b = 0; b < NB; b++) {
            if (a == b || (B[a].is_static && B[b].is_static)) continue;
            for (int p = 0; p < NP; p++) {
                double la[3], ha[3];
                for (int i = 0; i < 3; i++) {
                    double x0 = x[a][3 * p + i], x1 = x0 + (B[a].dx ? dx[a][3 * p + i] : 0);
                    la[i] = fmin(x0, x1) - m, ha[i] = fmax(x0, x1) + m;
                }
                /* p against b's triangles; against b's points (once per unordered pair) unless
                 * both bodies have triangles */
                for (int tri = 0; tri < 2; tri++) {
                    if (tri ? B[b].faces == NULL : a > b || (B[a].faces && B[b].faces)) continue;
                    for (int e = 0; e < (tri ? NF : NP); e++) {
                        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
                        for (int k = 0; k < (tri ? 3 : 1); k++) {
                            int v = tri ? f[b][3 * e + k] : e;
                            for (int i = 0; i < 3; i++) {
                                double y0 = x[b][3 * v + i], y1 = y0 + (B[b].dx ? dx[b][3 * v + i] : 0);
                                lo[i] = fmin(lo[i], fmin(y0, y1) - m), hi[i] = fmax(hi[i], fmax(y0, y1) + m);
                            }
                        }
                        int ov = 1;
                        for (int i = 0; i < 3; i++) ov &= la[i] <= hi[i] && lo[i] <= ha[i];
                        if (!ov) continue;
                        expect++;
                        int hit = 0;
                        for (int64_t k = 0; k < set.n; k++) {
                            const SimContactPair *q = &set.pairs[k];
                            hit += tri ? q->f == e && q->a == a && q->b == b && q->p == p
                                       : q->f < 0 && q->a == a && q->b == b && q->p == p && q->q == e;
                        }
                        wrong += hit != 1;
                    }
                }
            }
        }
    CHECK_MSG(set.n == expect && wrong == 0, "broad phase %lld pairs, brute force %lld, %lld missing or repeated",
              (long long)set.n, (long long)expect, (long long)wrong);
    sim_contact_set_free(&set);
}

/* a point flying through a triangle: additive CCD stops it in front, at no less than s d₀ */
TEST(sim_ccd_point_triangle_stops_before_the_face) {
    double tri[9] = {-1, -1, 0, 1, -1, 0, 0, 1, 0}, p[3] = {0.1, 0, 0.5}, dp[3] = {0.05, 0.02, -1};
    int32_t faces[3] = {0, 1, 2};
    SimContactBody bodies[2] = {{.np = 1, .x = p, .dx = dp}, {.np = 3, .x = tri, .is_static = 1, .nf = 1, .faces = faces}};
    SimContactSet set = {0};
    CHECK(sim_contact_broad_phase(bodies, 2, 0.05, &set) == 0);
    CHECK(set.n == 1 && set.pairs[0].f == 0);
    double s = 0.2, a = sim_contact_ccd(bodies, &set, s);
    double d = sim_contact_min_distance(bodies, &set, a);
    CHECK(a > 0 && a < 0.5);                   /* it would cross the face at α = 0.5 */
    CHECK(d >= s * 0.5 * (1 - 1e-9) && d < s * 0.5 * 1.01); /* stopped just short of s d₀ */
    dp[2] = 1; /* moving away: no limit */
    CHECK(sim_contact_ccd(bodies, &set, s) == 1);
    sim_contact_set_free(&set);
}

TEST(sim_ccd_point_point_is_exact) {
    double xa[3] = {0, 0, 0}, xb[3] = {1, 0.1, 0}, da[3] = {2, 0, 0};
    SimContactBody bodies[2] = {{.np = 1, .x = xa, .dx = da}, {.np = 1, .x = xb, .is_static = 1}};
    SimContactSet set = {0};
    CHECK(sim_contact_broad_phase(bodies, 2, 0.05, &set) == 0);
    CHECK(set.n == 1);
    double s = 0.2, a = sim_contact_ccd(bodies, &set, s), d0 = sqrt(1.01);
    double d = sim_contact_min_distance(bodies, &set, a);
    CHECK_NEAR(d, s * d0, 1e-12);
    /* moving apart: no limit */
    da[0] = -2;
    CHECK(sim_contact_ccd(bodies, &set, s) == 1);
    sim_contact_set_free(&set);
}

/* A box with grid cubature, Wendland handles and a grid of surface points as binding vertices. */
static void box_skinning(const double half[3], int cres, int sres, int m, uint64_t seed, SimSkinning *sk) {
    memset(sk, 0, sizeof *sk);
    sk->m = m;
    sk->nc = (int64_t)cres * cres * cres;
    sk->cub_x = malloc(sizeof(double) * 3 * (size_t)sk->nc);
    sk->cub_vol = malloc(sizeof(double) * (size_t)sk->nc);
    sk->cub_w = malloc(sizeof(double) * (size_t)(sk->nc * m));
    sk->cub_dw = malloc(sizeof(double) * 3 * (size_t)(sk->nc * m));
    for (int64_t c = 0; c < sk->nc; c++) {
        int64_t ijk[3] = {c % cres, (c / cres) % cres, c / (cres * cres)};
        for (int i = 0; i < 3; i++) sk->cub_x[3 * c + i] = -half[i] + (ijk[i] + 0.5) * 2 * half[i] / cres;
        sk->cub_vol[c] = 8 * half[0] * half[1] * half[2] / (double)sk->nc;
    }
    /* surface grid: points with at least one coordinate on the boundary */
    int64_t cap = (int64_t)sres * sres * sres, nv = 0;
    sk->vert_x = malloc(sizeof(double) * 3 * (size_t)cap);
    for (int a = 0; a < sres; a++)
        for (int b = 0; b < sres; b++)
            for (int c = 0; c < sres; c++) {
                if (a && b && c && a < sres - 1 && b < sres - 1 && c < sres - 1) continue;
                int id[3] = {a, b, c};
                for (int i = 0; i < 3; i++) sk->vert_x[3 * nv + i] = -half[i] + 2 * half[i] * id[i] / (sres - 1);
                nv++;
            }
    sk->nv = nv;
    sk->vert_w = malloc(sizeof(double) * (size_t)(nv * m));
    sk->vert_dw = malloc(sizeof(double) * 3 * (size_t)(nv * m));
    double *centers = malloc(sizeof(double) * 3 * (size_t)m), r = 1.5 * fmax(half[0], fmax(half[1], half[2]));
    for (int k = 0; k < m; k++)
        for (int i = 0; i < 3; i++) centers[3 * k + i] = half[i] * (2 * urand(&seed) - 1);
    sim_rbf_eval(m, centers, r, sk->nc, sk->cub_x, sk->cub_w, sk->cub_dw);
    sim_rbf_eval(m, centers, r, nv, sk->vert_x, sk->vert_w, sk->vert_dw);
    free(centers);
    snprintf(sk->source, sizeof sk->source, "test box");
}

static void make_box_object(SimObject *o, const double half[3], const double at[3], double E, uint64_t seed) {
    SimSkinning sk;
    box_skinning(half, 5, 7, 4, seed, &sk);
    SimMaterial mat = {.E = E, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    memcpy(pose.translate, at, sizeof pose.translate);
    char err[256];
    int rc = sim_object_init(o, &sk, &mat, &pose, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    sim_skinning_free(&sk);
}

/* brute-force smallest distance between contact points of different objects */
static double brute_min_distance(SimObject *objs, int n) {
    double *x[8];
    for (int k = 0; k < n; k++) {
        x[k] = malloc(sizeof(double) * 3 * (size_t)objs[k].nv);
        sim_object_vertices(&objs[k], x[k]);
    }
    double m = INFINITY;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            for (int64_t p = 0; p < objs[a].nv; p++)
                for (int64_t q = 0; q < objs[b].nv; q++) {
                    double d2 = 0;
                    for (int i = 0; i < 3; i++) d2 += (x[a][3 * p + i] - x[b][3 * q + i]) * (x[a][3 * p + i] - x[b][3 * q + i]);
                    m = fmin(m, d2);
                }
    for (int k = 0; k < n; k++) free(x[k]);
    return sqrt(m);
}

TEST(sim_world_pile_keeps_every_pair_distance_positive) {
    SimObject objs[3];
    double half[3] = {0.15, 0.1, 0.15};
    double at[3][3] = {{0, 0.12, 0}, {0.05, 0.36, 0.02}, {-0.04, 0.60, -0.03}};
    for (int k = 0; k < 3; k++) {
        make_box_object(&objs[k], half, at[k], 3e4, 5 + k);
        objs[k].gravity[1] = -9.81;
        SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
        char err[256];
        CHECK(sim_object_add_plane(&objs[k], &floor, err, sizeof err) == 0);
    }
    SimWorld w;
    SimContactOptions co;
    sim_contact_defaults(&co);
    char err[256];
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
    CHECK_MSG(sim_world_init(&w, objs, 3, NULL, 0, &floor, 1, &co, err, sizeof err) == 0, "%s", err);
    double e0 = sim_world_energy(&w), emax = e0, dmin = INFINITY, bmin = INFINITY;
    int steps = test_quick() ? 60 : 150, failures = 0, contacts = 0, factorizations = 0, products = 0, iters = 0;
    double hv = 0; /* the matrix-free exact Hessian against the assembled one */
    double *cpu = malloc(sizeof(double) * (size_t)steps);
    for (int s = 0; s < steps; s++) {
        double c0 = base_cpu_now();
        int rc = sim_world_step(&w, 0.01, err, sizeof err);
        cpu[s] = 1e3 * (base_cpu_now() - c0);
        CHECK_MSG(rc == 0, "step %d: %s", s, err);
        if (rc) break;
        failures += w.last.failures;
        contacts += w.last.active > 0;
        factorizations += w.last.factorizations, products += w.last.cg_products, iters += w.last.iters;
        if (w.last.active > 0 && s % 10 == 0) hv = fmax(hv, sim_world_hessian_product_error(&w, 0.01));
        /* the solver's own record (every accepted iterate) and an independent brute force */
        CHECK_MSG(w.last.min_distance > 0, "step %d: pair distance %g", s, w.last.min_distance);
        double bd = brute_min_distance(objs, 3);
        CHECK_MSG(bd > 0, "step %d: brute-force pair distance %g", s, bd);
        dmin = fmin(dmin, w.last.min_distance), bmin = fmin(bmin, bd);
        double e = sim_world_energy(&w);
        CHECK_MSG(isfinite(e), "step %d: energy %g", s, e);
        emax = fmax(emax, e);
    }
    qsort(cpu, (size_t)steps, sizeof *cpu, base_cmp_double);
    double lowest = INFINITY, x[1024];
    for (int k = 0; k < 3; k++) {
        sim_object_vertices(&objs[k], x);
        for (int64_t v = 0; v < objs[k].nv; v++) lowest = fmin(lowest, x[3 * v + 1]);
    }
    printf("    pile: 3 boxes, d̂ %.3g m, κ %.3g N/m; min pair distance %.3g m (brute force %.3g), steps in contact %d, "
           "Newton failures %d, E0 %.4g J max %.4g J, lowest vertex %.3g m; CPU ms/step median %.2f p90 %.2f; "
           "%d Newton iterations, %d factorizations, %d CG products; matrix-free Hessian off by %.2g\n",
           w.dhat, w.kappa, dmin, bmin, contacts, failures, e0, emax, lowest, cpu[steps / 2], cpu[steps * 9 / 10], iters,
           factorizations, products, hv);
    CHECK(hv < 1e-10);
    CHECK(contacts > steps / 3);
    CHECK(emax <= e0 + 1e-6 * fabs(e0) + 1e-9); /* implicit Euler with a conservative barrier dissipates */
    CHECK(lowest > -0.02);
    free(cpu);
    sim_world_free(&w);
    for (int k = 0; k < 3; k++) sim_object_free(&objs[k]);
}

/* tests/sim_test_util.h */
int64_t vertices_inside(SimObject *a, SimObject *b, double tol, int64_t *any) {
    double *xa = malloc(sizeof(double) * 3 * (size_t)a->nv), *xb = malloc(sizeof(double) * 3 * (size_t)b->nv);
    float *vb = malloc(sizeof(float) * 3 * (size_t)b->nv);
    sim_object_vertices(a, xa), sim_object_vertices(b, xb);
    for (int64_t k = 0; k < 3 * b->nv; k++) vb[k] = (float)xb[k];
    DsMesh m = {.nv = b->nv, .nf = b->nf, .v = vb, .f = b->faces};
    DsWinding *wn = ds_winding_build(&m);
    int64_t inside = 0;
    for (int64_t v = 0; wn && v < a->nv; v++) {
        float q[3] = {(float)xa[3 * v], (float)xa[3 * v + 1], (float)xa[3 * v + 2]};
        if (!(ds_winding_eval(wn, q) > 0.5)) continue;
        ++*any;
        double depth = INFINITY, w[3];
        for (int64_t f = 0; f < b->nf && depth > tol; f++) {
            const int32_t *t = b->faces + 3 * f;
            depth = fmin(depth, sim_point_triangle(xa + 3 * v, xb + 3 * t[0], xb + 3 * t[1], xb + 3 * t[2], w));
        }
        inside += depth > tol;
    }
    ds_winding_free(wn);
    free(xa), free(xb), free(vb);
    return wn ? inside : -1;
}

/* The shipped pile (scenes/pile.json): a mug falls ~1.2 m onto another. With point pairs alone it
 * passed through it (hundreds of vertices inside the other mesh from the first impact on: the
 * barrier between points stays finite, so a heavy fast body pushes its points between the
 * other's); point–triangle pairs stop that. Contact is on the collision proxies (sim/proxy.h): a
 * rendered vertex of a may lie inside b's rendered surface by up to the two proxies' deviations
 * from their meshes (dev_a + dev_b), never deeper. */
TEST(sim_world_pile_scene_objects_never_interpenetrate) {
    SimScene sc;
    char err[512];
    CHECK_MSG(sim_scene_load("scenes/pile.json", &sc, err, sizeof err) == 0, "%s", err);
    SimObject objs[3];
    CHECK(sc.nobjects == 3);
    CHECK_MSG(sim_scene_build(&sc, "scenes", objs, err, sizeof err) == 0, "%s", err);
    SimWorld w;
    /* frictionless (the scene ships with μ 0.5): the objects bounce and slide off each other, the
     * harder case for crossing, in half the Newton iterations; friction has its own tests */
    sc.contact.mu = 0;
    CHECK_MSG(sim_world_init(&w, objs, 3, NULL, 0, sc.planes, sc.nplanes, &sc.contact, err, sizeof err) == 0, "%s", err);
    int steps = test_quick() ? 40 : 70;
    int64_t worst = 0, tri_pairs = 0, loose = 0;
    double dmin = INFINITY, hv = 0, dev[3];
    for (int k = 0; k < 3; k++) dev[k] = sim_world_proxy(&w, k) ? sim_world_proxy(&w, k)->deviation : 0;
    for (int s = 0; s < steps; s++) {
        CHECK_MSG(sim_world_step(&w, sc.dt, err, sizeof err) == 0, "step %d: %s", s, err);
        dmin = fmin(dmin, w.last.min_distance);
        tri_pairs = w.last.active > tri_pairs ? w.last.active : tri_pairs;
        if (w.last.active > 0 && s % 10 == 9) hv = fmax(hv, sim_world_hessian_product_error(&w, sc.dt));
        if (s % 5 == 4)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    if (a != b) {
                        /* and inside at all (no tolerance): what the proxies' deviation allows */
                        int64_t any = 0, n = vertices_inside(&objs[a], &objs[b], dev[a] + dev[b], &any);
                        worst = worst > n ? worst : n;
                        loose = loose > any ? loose : any;
                    }
    }
    printf("    pile scene, %d steps: at most %lld vertices of one object deeper inside another than the proxies' "
           "deviations (%.3g, %.3g, %.3g m; %lld inside at all), min pair distance %.3g m, up to %lld active pairs, "
           "matrix-free Hessian off by %.2g\n",
           steps, (long long)worst, dev[0], dev[1], dev[2], (long long)loose, dmin, (long long)tri_pairs, hv);
    CHECK(worst == 0);
    CHECK(tri_pairs > 0 && hv < 1e-10);
    CHECK(dmin > 0);
    sim_world_free(&w);
    for (int k = 0; k < 3; k++) sim_object_free(&objs[k]);
    sim_scene_free(&sc);
}

/* the shipped three-object pile (scenes/pile.json) capped at one Newton iteration per frame */
/* the Armijo backtrack's quadratic fit (sim/newton.h): exact on a parabola inside [α/10, α/2],
 * clamped outside, halving where the trial is not finite or not above the tangent */
TEST(sim_newton_backtrack_step_fits_a_parabola) {
    /* E(a) = 1 − 2 a + c a²: minimizer 1 / c */
    double E = 1, dec = -2;
    for (double c = 2.5; c <= 9.5; c += 1) {
        double a = 1, Et = E + dec * a + c * a * a;
        CHECK(fabs(sim_newton_backtrack_step(a, E, dec, Et) - 1 / c) < 1e-15);
    }
    CHECK(sim_newton_backtrack_step(1, E, dec, E + dec + 1.5) == 0.5);  /* minimizer 2/3 > α/2 */
    CHECK(sim_newton_backtrack_step(1, E, dec, E + dec + 100) == 0.1);  /* minimizer 0.01 < α/10 */
    CHECK(sim_newton_backtrack_step(0.4, E, dec, INFINITY) == 0.2);
    CHECK(sim_newton_backtrack_step(0.4, E, dec, NAN) == 0.2);
    CHECK(sim_newton_backtrack_step(0.4, E, dec, E + dec * 0.4 - 1) == 0.2); /* below the tangent */
}

/* the shipped pile (scenes/pile.json) in a world; cap > 0: at most that many Newton iterations a frame */
static void pile_init(SimScene *sc, SimObject objs[3], SimWorld *w, int cap) {
    char err[512];
    CHECK_MSG(sim_scene_load("scenes/pile.json", sc, err, sizeof err) == 0, "%s", err);
    CHECK(sc->nobjects == 3);
    CHECK_MSG(sim_scene_build(sc, "scenes", objs, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < 3 && cap > 0; k++) objs[k].newton.max_iters = cap;
    CHECK_MSG(sim_world_init(w, objs, 3, NULL, 0, sc->planes, sc->nplanes, &sc->contact, err, sizeof err) == 0, "%s", err);
}

/* The objects' reduced blocks (sim_world_objects_hessian) reuse the last reduction when an
 * object's step Hessian is bitwise the one it came from: every block, kept or new, must be
 * bitwise the one a fresh reduction gives, both where the Hessian repeats (free flight, the
 * elastic term lagged) and where it changed (an object pushed through the floor plane). */
TEST(sim_world_kept_block_reduction_equals_a_fresh_one) {
    SimScene sc;
    char err[512];
    SimObject objs[3];
    SimWorld w;
    pile_init(&sc, objs, &w, 0);
    for (int s = 0; s < 3; s++) CHECK_MSG(sim_world_step(&w, sc.dt, err, sizeof err) == 0, "%s", err);
    struct SimWorldScratch *ws = w.ws;
    int64_t N = ws->ntot, H = 0;
    for (int k = 0; k < 3; k++) {
        CHECK(ws->oi[k].N != NULL); /* the pile's objects reduce to their observable subspace */
        H += ws->oi[k].m * ws->oi[k].m;
    }
    double *Z = malloc(sizeof(double) * (size_t)N), *kept = malloc(sizeof(double) * (size_t)H);
    for (int k = 0; k < 3; k++) memcpy(Z + ws->oi[k].off, objs[k].z, sizeof(double) * (size_t)objs[k].n);
    /* BLAS single-threaded as in the step (sim_world_step), so that a fresh reduction takes the
     * same arithmetic as the kept ones the steps made */
    int prev = base_par_blas_serial_begin();
    for (int pass = 0; pass < 2; pass++) {
        if (pass) /* object 0 half a metre down (its y block's translation, the last entry): its
                   * vertices below the floor change its Hessian */
            Z[ws->oi[0].off + 2 * objs[0].nb - 1] -= 0.5;
        sim_world_objects_hessian(&w, Z, Z, sc.dt, w.t, true, false);
        sim_world_objects_hessian(&w, Z, Z, sc.dt, w.t, true, false); /* the second call: kept reductions */
        memcpy(kept, ws->Hob, sizeof(double) * (size_t)H);
        memset(ws->hred_ok, 0, sizeof(bool) * 3);
        sim_world_objects_hessian(&w, Z, Z, sc.dt, w.t, true, false);
        CHECK(!memcmp(kept, ws->Hob, sizeof(double) * (size_t)H));
        for (int k = 0; k < 3; k++) CHECK(ws->hred_ok[k]);
    }
    base_par_blas_serial_end(prev);
    free(Z), free(kept);
    sim_world_free(&w);
    for (int k = 0; k < 3; k++) sim_object_free(&objs[k]);
    sim_scene_free(&sc);
}

/* The real-time mode keeps gaps at the energy's scale: the shipped pile (μ 0.5) under a cap of one
 * Newton iteration per frame. The CCD-filtered initial guess alone may shrink every gap to
 * min_sep of its value at each step, and one iteration did not win it back: the pairs closed to
 * ~1e-8 m within a dozen frames (where additive CCD then crawls and cuts every later step to
 * nothing). With the guess held to E(guess) ≤ E(start) they stay at a fraction of d̂. */
TEST(sim_world_capped_pile_keeps_gaps_at_the_barrier_scale) {
    SimScene sc;
    SimObject objs[3];
    SimWorld w;
    char err[512];
    pile_init(&sc, objs, &w, 1);
    double dmin = INFINITY;
    int contact = 0, steps = 90;
    for (int s = 0; s < steps; s++) {
        CHECK_MSG(sim_world_step(&w, sc.dt, err, sizeof err) == 0, "step %d: %s", s, err);
        dmin = fmin(dmin, w.last.min_distance);
        contact += w.last.active > 0;
    }
    printf("    pile capped at 1 Newton iteration, %d steps (%d in contact): min pair distance %.3g m (d̂ %.3g m)\n", steps,
           contact, dmin, w.dhat);
    CHECK(contact > 20);
    CHECK(dmin > 1e-2 * w.dhat);
    sim_world_free(&w);
    for (int k = 0; k < 3; k++) sim_object_free(&objs[k]);
    sim_scene_free(&sc);
}

/* A Newton direction can move points far beyond the step's own motion (truncated CG on the
 * barrier's indefinite Hessian), and the broad phase over such a sweep holds a large part of the
 * scene: the ten-object pile under cap 2 had frames with 2-13 M candidates against ~40 k. The
 * line search is capped to the fraction of the direction that keeps every contact point within
 * max(2 d̂, 2 × the step's predicted move) (world.c, ws_step_bound): on the three-object pile
 * capped at one iteration the largest line search sees 2.7× the median candidate count (11×
 * without the cap: 60 k against 5.4 k), and the pairs stay apart. */
TEST(sim_world_capped_pile_sweeps_stay_local) {
    SimScene sc;
    SimObject objs[3];
    SimWorld w;
    char err[512];
    pile_init(&sc, objs, &w, 1);
    enum { STEPS = 90 };
    double cand[STEPS], dmin = INFINITY;
    int n = 0;
    int64_t cmax = 0;
    for (int s = 0; s < STEPS; s++) {
        CHECK_MSG(sim_world_step(&w, sc.dt, err, sizeof err) == 0, "step %d: %s", s, err);
        dmin = fmin(dmin, w.last.min_distance);
        if (w.last.candidates > 0) cand[n++] = (double)w.last.candidates, cmax = w.last.candidates > cmax ? w.last.candidates : cmax;
    }
    qsort(cand, (size_t)n, sizeof *cand, base_cmp_double);
    double med = n ? cand[n / 2] : 0;
    printf("    pile capped at 1 Newton iteration, %d steps with candidates: median %.0f, max %lld; min pair distance %.3g m\n",
           n, med, (long long)cmax, dmin);
    CHECK(n > 20);
    CHECK(dmin > 0);
    CHECK((double)cmax <= 4 * med);
    sim_world_free(&w);
    for (int k = 0; k < 3; k++) sim_object_free(&objs[k]);
    sim_scene_free(&sc);
}

TEST(sim_world_head_on_collision_conserves_momentum) {
    SimObject objs[2];
    double half[3] = {0.1, 0.1, 0.1}, at0[3] = {-0.2, 0, 0}, at1[3] = {0.2, 0.01, 0};
    make_box_object(&objs[0], half, at0, 5e4, 3);
    make_box_object(&objs[1], half, at1, 5e4, 4);
    /* the constant handle's translation column (solver.h: z⁽ⁱ⁾[4m + 3]) carries rigid velocity */
    objs[0].zdot[0 * objs[0].nb + 4 * objs[0].m + 3] = 1.0;
    objs[1].zdot[0 * objs[1].nb + 4 * objs[1].m + 3] = -0.5;
    SimWorld w;
    char err[256];
    CHECK_MSG(sim_world_init(&w, objs, 2, NULL, 0, NULL, 0, NULL, err, sizeof err) == 0, "%s", err);
    double p0[3], p1[3];
    sim_world_momentum(&w, p0);
    int hit = 0;
    for (int s = 0; s < 80; s++) {
        CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(w.last.min_distance > 0, "step %d: %g", s, w.last.min_distance);
        hit |= w.last.active > 0;
    }
    sim_world_momentum(&w, p1);
    /* centre-of-mass velocities after the bounce: the first box must have turned back */
    double v0 = objs[0].zdot[4 * objs[0].m + 3], v1 = objs[1].zdot[4 * objs[1].m + 3];
    printf("    collision: momentum before (%.6f, %.6f, %.6f), after (%.6f, %.6f, %.6f) kg m/s; translation velocities "
           "after %.3f, %.3f m/s\n",
           p0[0], p0[1], p0[2], p1[0], p1[1], p1[2], v0, v1);
    CHECK(hit);
    double mass = objs[0].mass + objs[1].mass;
    for (int i = 0; i < 3; i++) CHECK_NEAR(p1[i], p0[i], 1e-3 * mass);
    CHECK(v0 < v1);
    sim_world_free(&w);
    sim_object_free(&objs[0]), sim_object_free(&objs[1]);
}

/* The assembled Newton matrix clears only the object blocks the last assembly's pairs coupled
 * (world.c, hr_from_objects): two boxes in contact are assembled coupled, then the second is moved
 * 1 m away without a step between; the next assembly must hold no trace of the coupling (the
 * matrix-free product, which has none, agrees) */
TEST(sim_world_newton_matrix_drops_a_coupling_that_ended) {
    SimObject objs[3];
    double half[3] = {0.1, 0.1, 0.1}, at0[3] = {-0.2, 0, 0}, at1[3] = {0.2, 0.01, 0}, at2[3] = {0, 1, 0};
    make_box_object(&objs[0], half, at0, 5e4, 3);
    make_box_object(&objs[1], half, at1, 5e4, 4);
    make_box_object(&objs[2], half, at2, 5e4, 5);
    objs[0].zdot[4 * objs[0].m + 3] = 1.0;
    objs[1].zdot[4 * objs[1].m + 3] = -0.5;
    SimWorld w;
    char err[256];
    CHECK_MSG(sim_world_init(&w, objs, 3, NULL, 0, NULL, 0, NULL, err, sizeof err) == 0, "%s", err);
    int s = 0;
    for (; s < 60 && w.last.active == 0; s++) CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
    CHECK(w.last.active > 0);
    double coupled = sim_world_hessian_product_error(&w, 0.01);
    objs[1].z[4 * objs[1].m + 3] += 1.0; /* the translation column: 1 m along x */
    double apart = sim_world_hessian_product_error(&w, 0.01);
    printf("    contact from step %d: matrix-free vs assembled %.2g in contact, %.2g after moving apart\n", s, coupled, apart);
    CHECK(coupled <= 1e-9);
    CHECK(apart <= 1e-9);
    sim_world_free(&w);
    for (int k = 0; k < 3; k++) sim_object_free(&objs[k]);
}

TEST(sim_rigid_mass_properties_and_floor) {
    DsMesh m;
    CHECK(sim_mesh_icosphere(0.1, 4, &m) == 0);
    SimPose pose = sim_pose_identity();
    pose.translate[1] = 0.5;
    SimRigid r;
    char err[256];
    CHECK_MSG(sim_rigid_init(&r, &m, 1000, &pose, err, sizeof err) == 0, "%s", err);
    double V = 4.0 / 3.0 * M_PI * 1e-3, I = 0.4 * 1000 * V * 0.01;
    CHECK_NEAR(r.mass, 1000 * V, 0.01 * 1000 * V);
    for (int i = 0; i < 3; i++) CHECK_NEAR(r.Ib[4 * i], I, 0.02 * I);
    CHECK_NEAR(r.c[1], 0.5, 1e-6);
    ds_mesh_free(&m);
    double half[3] = {0.1, 0.2, 0.3};
    CHECK(sim_mesh_box(half, &m) == 0);
    SimRigid b;
    CHECK_MSG(sim_rigid_init(&b, &m, 1000, &pose, err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(b.mass, 1000 * 0.2 * 0.4 * 0.6, 1e-5); /* f32 mesh vertices */
    CHECK_NEAR(b.Ib[0], b.mass / 12 * (0.16 + 0.36), 1e-5);
    ds_mesh_free(&m);
    sim_rigid_free(&b);
    /* dropped on the floor it comes to rest on it */
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0};
    r.gravity[1] = -9.81;
    double *x = malloc(sizeof(double) * 3 * (size_t)r.nv), lowest = INFINITY;
    for (int s = 0; s < 300; s++) {
        sim_rigid_update_velocity(&r, &floor, 1, 0.01);
        sim_rigid_move(&r, &floor, 1, 0.01, 1);
        sim_rigid_vertices(&r, x);
        for (int64_t v = 0; v < r.nv; v++) lowest = fmin(lowest, x[3 * v + 1]);
    }
    printf("    rigid: mass %.4f kg (exact %.4f), I %.3g (exact %.3g); at rest c_y %.4f, |v| %.2g\n", r.mass, 1000 * V, r.Ib[0],
           I, r.c[1], fabs(r.v[1]));
    CHECK(lowest > -1e-9);
    CHECK_NEAR(r.c[1], 0.1, 2e-3);
    CHECK(fabs(r.v[1]) < 0.05);
    free(x);
    sim_rigid_free(&r);
}

TEST(sim_world_rigid_ball_on_deformable) {
    SimObject jelly;
    double half[3] = {0.2, 0.1, 0.2}, at[3] = {0, 0.1, 0};
    make_box_object(&jelly, half, at, 2e4, 9);
    jelly.gravity[1] = -9.81;
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
    char err[256];
    CHECK(sim_object_add_plane(&jelly, &floor, err, sizeof err) == 0);
    DsMesh m;
    CHECK(sim_mesh_icosphere(0.06, 2, &m) == 0);
    SimPose pose = sim_pose_identity();
    pose.translate[1] = 0.35;
    SimRigid ball;
    CHECK_MSG(sim_rigid_init(&ball, &m, 2000, &pose, err, sizeof err) == 0, "%s", err);
    ds_mesh_free(&m);
    ball.gravity[1] = -9.81;
    ball.v[1] = -1;
    SimWorld w;
    CHECK_MSG(sim_world_init(&w, &jelly, 1, &ball, 1, &floor, 1, NULL, err, sizeof err) == 0, "%s", err);
    int touched = 0;
    /* the ball's centre while it is over the jelly after landing (contact is frictionless: it may
     * slide off an edge later) */
    double dmin = INFINITY, emax = -INFINITY, hv = 0, low = INFINITY;
    for (int s = 0; s < 120; s++) {
        CHECK_MSG(sim_world_step(&w, 0.01, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(w.last.min_distance > 0, "step %d: %g", s, w.last.min_distance);
        double d = sim_world_min_distance(&w);
        CHECK_MSG(d > 0, "step %d: distance now %g", s, d);
        dmin = fmin(dmin, fmin(d, w.last.min_distance));
        touched += w.last.active > 0;
        if (touched && fabs(ball.c[0]) < half[0] - 0.06 && fabs(ball.c[2]) < half[2] - 0.06) low = fmin(low, ball.c[1]);
        /* pairs with a rigid point: one side only in the matrix-free product */
        if (w.last.active > 0 && s % 10 == 0) hv = fmax(hv, sim_world_hessian_product_error(&w, 0.01));
        double e = sim_world_energy(&w);
        CHECK(isfinite(e));
        emax = fmax(emax, e);
    }
    printf("    ball on jelly: lowest centre over the jelly %.3f m (radius 0.06, top of the jelly at rest 0.2), at the end "
           "(%.3f, %.3f, %.3f), min distance %.3g m, steps in contact %d, max energy %.3g J, matrix-free Hessian off by %.2g\n",
           low, ball.c[0], ball.c[1], ball.c[2], dmin, touched, emax, hv);
    CHECK(hv < 1e-10);
    CHECK(touched > 20);
    CHECK(low > 0.23 && low < 0.35); /* it landed on the jelly and the jelly carried it */
    sim_world_free(&w);
    sim_rigid_free(&ball);
    sim_object_free(&jelly);
}

TEST(sim_polar_decomposition) {
    uint64_t s = 21;
    /* random (some with det < 0), then rank 2 (a flat Gaussian), rank 1, zero, a reflection */
    const double fixed[5][9] = {{1, 0.2, 0, 0.3, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0.3, 0.4, 0},
                                {0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 1, 0, 0, 0, -2},
                                {0, 1, 0, 1, 0, 0, 0, 0, 1}};
    for (int t = 0; t < 105; t++) {
        double A[9], R[9], S[9];
        for (int k = 0; k < 9; k++) A[k] = t < 100 ? (k % 4 == 0) + 0.8 * (2 * urand(&s) - 1) : fixed[t - 100][k];
        sim_polar3(A, R, S);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double rs = 0, rr = 0;
                for (int k = 0; k < 3; k++) rs += R[3 * i + k] * S[3 * k + j], rr += R[3 * k + i] * R[3 * k + j];
                CHECK_NEAR(rs, A[3 * i + j], 1e-9);
                CHECK_NEAR(rr, i == j, 1e-9);
                CHECK_NEAR(S[3 * i + j], S[3 * j + i], 1e-9);
            }
        double det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
        CHECK_NEAR(det, 1, 1e-9);
    }
}

static void quat_R(const double q[4], double R[9]) {
    double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), w = q[0] / l, x = q[1] / l, y = q[2] / l, z = q[3] / l;
    double M[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), 2 * (x * y + w * z), 1 - 2 * (x * x + z * z),
                   2 * (y * z - w * x), 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
    memcpy(R, M, sizeof M);
}

static void cov(const double q[4], const double sc[3], double C[9]) {
    double R[9];
    quat_R(q, R);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            C[3 * i + j] = 0;
            for (int k = 0; k < 3; k++) C[3 * i + j] += R[3 * i + k] * sc[k] * sc[k] * R[3 * j + k];
        }
}

TEST(sim_gaussians_transform_exactly_under_affine_motion) {
    SimSkinning sk;
    double half[3] = {0.3, 0.2, 0.25};
    box_skinning(half, 6, 5, 5, 17, &sk);
    SimMaterial mat = {.E = 1e4, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    pose.scale = 1.5, pose.translate[1] = 0.4;
    double deg[3] = {10, 20, 30};
    sim_pose_euler(&pose, deg);
    SimObject o;
    char err[256];
    CHECK_MSG(sim_object_init(&o, &sk, &mat, &pose, err, sizeof err) == 0, "%s", err);
    /* Gaussians at random points with random rotations and scales, bound through interpolated weights */
    uint64_t s = 5;
    int n = 64;
    DsGaussians g;
    CHECK(ds_gaussians_alloc(&g, n, 0) == 0);
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < 3; i++) g.xyz[3 * p + i] = (float)(half[i] * (1.6 * urand(&s) - 0.8));
        for (int i = 0; i < 3; i++) g.scale[3 * p + i] = (float)log(0.01 + 0.05 * urand(&s));
        for (int i = 0; i < 4; i++) g.rot[4 * p + i] = (float)(2 * urand(&s) - 1);
    }
    char path[] = "/tmp/anima_gauss_XXXXXX.ply";
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0);
    close(fd);
    CHECK_MSG(ds_gaussians_write(path, &g, err, sizeof err) == 0, "%s", err);
    SimGaussianBinding gb;
    CHECK_MSG(sim_gaussians_bind(&gb, path, &sk, &o, &pose, err, sizeof err) == 0, "%s", err);
    unlink(path);
    /* z = a global affine motion in the constant handle: x ↦ x + T [x; 1], so F = I + T[:, :3] everywhere */
    double T[12] = {0.2, -0.1, 0.05, 0.3, 0.07, -0.15, 0.12, -0.2, -0.05, 0.1, 0.25, 0.1};
    int64_t m = o.m;
    for (int i = 0; i < 3; i++)
        for (int l = 0; l < 4; l++) o.z[i * o.nb + 4 * m + l] = T[4 * i + l];
    sim_gaussians_update(&gb, &o);
    double A[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) A[3 * i + j] = (i == j) + T[4 * i + j];
    double worst_x = 0, worst_c = 0;
    for (int p = 0; p < n; p++) {
        /* rest Gaussian in the world: X = sR x + t, Σ_w = (sR) Σ₀ (sR)ᵀ; deformed: A X + T[:, 3], A Σ_w Aᵀ */
        double X[3], xe[3], q0[4], s0[3], C0[9], Cw[9], Ce[9], Cg[9], q[4], sc[3], sR[9], M[9];
        for (int i = 0; i < 3; i++) {
            X[i] = pose.translate[i];
            for (int j = 0; j < 3; j++) X[i] += pose.scale * pose.R[3 * i + j] * g.xyz[3 * p + j];
        }
        for (int i = 0; i < 3; i++) xe[i] = X[i] + T[4 * i] * X[0] + T[4 * i + 1] * X[1] + T[4 * i + 2] * X[2] + T[4 * i + 3];
        for (int i = 0; i < 4; i++) q0[i] = g.rot[4 * p + i];
        for (int i = 0; i < 3; i++) s0[i] = exp(g.scale[3 * p + i]);
        cov(q0, s0, C0);
        for (int k = 0; k < 9; k++) sR[k] = pose.scale * pose.R[k];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                M[3 * i + j] = 0;
                for (int k = 0; k < 3; k++) M[3 * i + j] += A[3 * i + k] * sR[3 * k + j];
            }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                Cw[3 * i + j] = 0;
                for (int k = 0; k < 3; k++)
                    for (int l = 0; l < 3; l++) Cw[3 * i + j] += M[3 * i + k] * C0[3 * k + l] * M[3 * j + l];
            }
        memcpy(Ce, Cw, sizeof Ce);
        for (int i = 0; i < 4; i++) q[i] = gb.out.rot[4 * p + i];
        for (int i = 0; i < 3; i++) sc[i] = exp(gb.out.scale[3 * p + i]);
        cov(q, sc, Cg);
        double cs = 0;
        for (int k = 0; k < 9; k++) cs = fmax(cs, fabs(Ce[k]));
        for (int k = 0; k < 9; k++) worst_c = fmax(worst_c, fabs(Cg[k] - Ce[k]) / cs);
        for (int i = 0; i < 3; i++) worst_x = fmax(worst_x, fabs(gb.out.xyz[3 * p + i] - xe[i]));
    }
    printf("    gaussians under affine z: max center error %.2g m, max relative covariance error %.2g (f32 storage)\n",
           worst_x, worst_c);
    CHECK(worst_x < 1e-5);
    CHECK(worst_c < 1e-5);
    sim_gaussians_free(&gb);
    ds_gaussians_free(&g);
    sim_object_free(&o);
    sim_skinning_free(&sk);
}

TEST(sim_binding_interpolated_weights_reproduce_cubature) {
    SimSkinning sk;
    double half[3] = {0.3, 0.2, 0.25};
    box_skinning(half, 8, 4, 5, 23, &sk);
    /* at the cubature points themselves the Taylor average returns the stored weights */
    int n = 20;
    double *w = malloc(sizeof(double) * (size_t)(n * sk.m)), *dw = malloc(sizeof(double) * 3 * (size_t)(n * sk.m));
    CHECK(sim_skinning_interpolate(&sk, n, sk.cub_x, w, dw) == 0);
    double e = 0;
    for (int64_t k = 0; k < n * sk.m; k++) e = fmax(e, fabs(w[k] - sk.cub_w[k]));
    CHECK_MSG(e < 1e-3, "interpolated weights off by %g at the cubature points", e);
    free(w), free(dw);
    sim_skinning_free(&sk);
}

TEST(sim_scene_ipc_scenes_parse_and_errors) {
    const char *files[] = {"scenes/pile.json", "scenes/ball_on_jelly.json", "scenes/pile10.json"};
    for (int k = 0; k < 3; k++) {
        SimScene sc;
        char err[512];
        int rc = sim_scene_load(files[k], &sc, err, sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        if (!rc) {
            CHECK(k == 0 ? sc.nobjects == 3 : k == 1 ? sc.nrigids == 1 : sc.nobjects == 10);
            sim_scene_free(&sc);
        }
    }
    const struct {
        const char *json, *expect;
    } cases[] = {
        {"{\"objects\": [{}], \"rigids\": [{\"shape\": \"cone\"}]}", "'rigids[0].shape'"},
        {"{\"objects\": [{}], \"rigids\": [{\"radius\": -1}]}", "'rigids[0].radius'"},
        {"{\"objects\": [{}], \"contact\": {\"dhat\": \"big\"}}", "'contact.dhat'"},
        {"{\"objects\": [{}], \"contact\": {\"kappa\": 1}}", "unknown key 'contact.kappa'"},
        {"{\"objects\": [{\"gaussians\": 3}]}", "'objects[0].gaussians'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        SimScene sc;
        char err[512];
        int rc = sim_scene_parse(cases[i].json, "t.json", &sc, err, sizeof err);
        CHECK_MSG(rc != 0, "case %zu parsed", i);
        if (!rc) {
            sim_scene_free(&sc);
            continue;
        }
        CHECK_MSG(strstr(err, cases[i].expect) != NULL, "case %zu: %s", i, err);
    }
}

/* The object key cubature_points (sim/scene.h): > 0 builds an optimized cubature set at load
 * (sim_cubature_optimize) of at most that many points and installs it; absent, every point; the
 * viewer's default (tools/view_live.c) rests on it. Random poses only (cubature_drops 0) and a
 * small grid keep it to a fraction of a second. */
TEST(sim_scene_cubature_points_key_installs_an_optimized_set) {
    const char *fmt = "{\"dt\": 0.01, \"gravity\": [0, -9.81, 0], \"objects\": [{\"skinning\": {\"category\": \"cactus\", "
                      "\"kind\": \"rbf\", \"handles\": 4, \"cubature_res\": 12, \"mesh_res\": 24}%s}], "
                      "\"planes\": [{\"normal\": [0, 1, 0], \"offset\": 0}]}";
    char text[1024], err[512];
    int64_t ne[2], nc = 0;
    for (int with = 0; with < 2; with++) {
        snprintf(text, sizeof text, fmt, with ? ", \"cubature_points\": 30, \"cubature_drops\": 0" : "");
        SimScene sc;
        CHECK_MSG(sim_scene_parse(text, "test", &sc, err, sizeof err) == 0, "%s", err);
        SimObject o;
        CHECK_MSG(sim_scene_build(&sc, NULL, &o, err, sizeof err) == 0, "%s", err);
        ne[with] = o.ne, nc = o.nc;
        if (with) {
            double wsum = 0;
            for (int64_t e = 0; e < o.ne; e++) wsum += o.ew[e];
            CHECK_MSG(wsum > 0, "the set's weights sum to %g", wsum);
        }
        sim_object_free(&o);
        sim_scene_free(&sc);
    }
    CHECK_MSG(ne[0] == 0 && ne[1] > 0 && ne[1] <= 30 && nc > 30, "full %lld, optimized %lld of %lld points",
              (long long)ne[0], (long long)ne[1], (long long)nc);
    SimScene sc;
    snprintf(text, sizeof text, fmt, ", \"cubature_points\": -1");
    CHECK(sim_scene_parse(text, "test", &sc, err, sizeof err) != 0 && strstr(err, "cubature_points"));
}

/* ---- the contact terms one at a time (sim/barrier.c, sim/friction.c) ------------------------
 * Each term's gradient against central differences of its value and its assembled Hessian
 * against central differences of its gradient, at a state where two boxes' contact points (point
 * sets: point–point pairs, whose pinned-closest-point Hessian is exact) face each other within
 * d̂, with a small deterministic deformation so no pair is symmetric. The tolerances are far below
 * any one pair's share: a flipped sign, a missing tangential term or a dropped pair fails them. */

/* the two boxes 0.03 m apart along x (d̂ ≈ 0.05), z perturbed; Z: the stacked z */
static void contact_pair_world(SimObject objs[2], SimWorld *w, const SimContactOptions *c, double *Z) {
    double half[3] = {0.1, 0.1, 0.1}, at0[3] = {-0.115, 0, 0}, at1[3] = {0.115, 0.01, 0};
    make_box_object(&objs[0], half, at0, 5e4, 3);
    make_box_object(&objs[1], half, at1, 5e4, 4);
    char err[256];
    CHECK_MSG(sim_world_init(w, objs, 2, NULL, 0, NULL, 0, c, err, sizeof err) == 0, "%s", err);
    for (int k = 0, off = 0; k < 2; off += (int)objs[k].n, k++)
        for (int64_t i = 0; i < objs[k].n; i++) Z[off + i] = objs[k].z[i] + 2e-3 * sin(3.1 * (double)(off + i) + 0.4);
}

/* max |g − central differences of E| / max |g| and max |H − central differences of g| / max |H|
 * over every coordinate, steps h */
static void contact_term_fd(SimWorld *w, SimWorldTerm term, const double *Z, int64_t n, double h, double *gerr, double *herr,
                            double *gmax, double *hmax) {
    double *g = malloc(sizeof(double) * (size_t)n), *H = malloc(sizeof(double) * (size_t)(n * n));
    double *gp = malloc(sizeof(double) * (size_t)n), *gm = malloc(sizeof(double) * (size_t)n), *Zh = malloc(sizeof(double) * (size_t)n);
    sim_world_contact_term(w, term, Z, g, H);
    *gerr = *herr = *gmax = *hmax = 0;
    for (int64_t i = 0; i < n; i++) *gmax = fmax(*gmax, fabs(g[i]));
    for (int64_t i = 0; i < n * n; i++) *hmax = fmax(*hmax, fabs(H[i]));
    memcpy(Zh, Z, sizeof(double) * (size_t)n);
    for (int64_t j = 0; j < n; j++) {
        Zh[j] = Z[j] + h;
        double Ep = sim_world_contact_term(w, term, Zh, gp, NULL);
        Zh[j] = Z[j] - h;
        double Em = sim_world_contact_term(w, term, Zh, gm, NULL);
        Zh[j] = Z[j];
        *gerr = fmax(*gerr, fabs((Ep - Em) / (2 * h) - g[j]));
        for (int64_t i = 0; i < n; i++) *herr = fmax(*herr, fabs((gp[i] - gm[i]) / (2 * h) - H[i * n + j]));
    }
    *gerr /= fmax(*gmax, 1e-300), *herr /= fmax(*hmax, 1e-300);
    free(g), free(H), free(gp), free(gm), free(Zh);
}

TEST(sim_world_barrier_term_value_gradient_hessian_match_fd) {
    SimObject objs[2];
    SimWorld w;
    double Z[256];
    contact_pair_world(objs, &w, NULL, Z);
    int64_t n = objs[0].n + objs[1].n;
    CHECK(n <= 256);
    /* the value: κ Σ b(|x_p − y_q|) over every pair of the two boxes' points within d̂ */
    double E = sim_world_contact_term(&w, SIM_WORLD_BARRIER, Z, NULL, NULL), want = 0;
    double *x[2];
    for (int k = 0; k < 2; k++) {
        memcpy(objs[k].z, Z + (k ? objs[0].n : 0), sizeof(double) * (size_t)objs[k].n);
        x[k] = malloc(sizeof(double) * 3 * (size_t)objs[k].nv);
        sim_object_vertices(&objs[k], x[k]);
    }
    int64_t pairs = 0;
    for (int64_t p = 0; p < objs[0].nv; p++)
        for (int64_t q = 0; q < objs[1].nv; q++) {
            double d2 = 0;
            for (int i = 0; i < 3; i++) d2 += (x[0][3 * p + i] - x[1][3 * q + i]) * (x[0][3 * p + i] - x[1][3 * q + i]);
            if (sqrt(d2) < w.dhat) want += w.kappa * sim_barrier(sqrt(d2), w.dhat, NULL, NULL), pairs++;
        }
    free(x[0]), free(x[1]);
    double gerr, herr, gmax, hmax;
    contact_term_fd(&w, SIM_WORLD_BARRIER, Z, n, 1e-6, &gerr, &herr, &gmax, &hmax);
    printf("    barrier: %lld pairs within d̂ %.3g m, E %.6g (brute force %.6g), gradient vs fd %.2g of %.3g, Hessian vs fd %.2g "
           "of %.3g\n", (long long)pairs, w.dhat, E, want, gerr, gmax, herr, hmax);
    CHECK(pairs > 10 && w.ws->nact == pairs);
    CHECK_MSG(fabs(E - want) <= 1e-12 * want, "E %.17g vs %.17g", E, want);
    CHECK(gerr < 1e-6);
    CHECK(herr < 1e-5);
    sim_world_free(&w);
    sim_object_free(&objs[0]), sim_object_free(&objs[1]);
}

TEST(sim_world_friction_term_value_gradient_hessian_match_fd) {
    SimObject objs[2];
    SimWorld w;
    SimContactOptions c;
    sim_contact_defaults(&c);
    c.mu = 0.5;
    double Z[256], Z0[256];
    contact_pair_world(objs, &w, &c, Z);
    /* a floor through box 0's bottom: friction against the plane too */
    SimPlane floor = {.normal = {0, 1, 0}, .offset = -0.095, .stiffness = 1e5};
    char err[256];
    CHECK(sim_object_add_plane(&objs[0], &floor, err, sizeof err) == 0);
    CHECK(sim_object_prepare(&objs[0], err, sizeof err) == 0);
    int64_t n = objs[0].n + objs[1].n;
    CHECK(n <= 256);
    memcpy(Z0, objs[0].z, sizeof(double) * (size_t)objs[0].n), memcpy(Z0 + objs[0].n, objs[1].z, sizeof(double) * (size_t)objs[1].n);
    CHECK(sim_world_lag_friction(&w, 0.01) == 0);
    int64_t planes = 0;
    for (int64_t f = 0; f < w.ws->nfr; f++) planes += w.ws->fr[f].b < 0;
    /* slips near ε_v dt = 1e-5 m (both branches of the smoothing): a step far below it */
    double gerr, herr, gmax, hmax;
    contact_term_fd(&w, SIM_WORLD_FRICTION, Z, n, 1e-8, &gerr, &herr, &gmax, &hmax);
    /* the value: positive where the boxes slid, none (but the rounding of the lagged stencils)
     * where nothing did */
    double g0[256], E = sim_world_contact_term(&w, SIM_WORLD_FRICTION, Z, NULL, NULL), g0max = 0;
    double E0 = sim_world_contact_term(&w, SIM_WORLD_FRICTION, Z0, g0, NULL);
    for (int64_t i = 0; i < n; i++) g0max = fmax(g0max, fabs(g0[i]));
    printf("    friction: %lld pairs (%lld against the floor), E %.6g (%.2g unmoved, gradient %.2g), gradient vs fd %.2g of "
           "%.3g, Hessian vs fd %.2g of %.3g\n",
           (long long)w.ws->nfr, (long long)planes, E, E0, g0max, gerr, gmax, herr, hmax);
    CHECK(w.ws->nfr > planes && planes > 0);
    CHECK(E > 0);
    CHECK(fabs(E0) <= 1e-12 * E && g0max <= 1e-9 * gmax);
    CHECK(gerr < 1e-6);
    CHECK(herr < 1e-5);
    sim_world_free(&w);
    sim_object_free(&objs[0]), sim_object_free(&objs[1]);
}
