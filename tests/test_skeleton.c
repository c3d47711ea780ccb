/* tests/test_skeleton.c — the mean curvature skeleton (models/skelebones/skeleton.h) and the joints,
 * tree and parts built on it (models/skelebones/joints.h). */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "datasets/geometry/geometry.h"
#include "datasets/geometry/procedural.h"
#include "models/skelebones/joints.h"
#include "models/skelebones/rigging.h"
#include "models/skelebones/skeleton.h"
#include "tests/test.h"

/* a capsule (segment a→b, radius r) meshed by marching cubes at spacing h */
static int make_capsule(const float a[3], const float b[3], float r, float h, DsMesh *out) {
    DsSdfPrim p;
    memset(&p, 0, sizeof p);
    p.kind = DS_SDF_CAPSULE;
    memcpy(p.a, a, sizeof p.a), memcpy(p.b, b, sizeof p.b);
    p.r0 = p.r1 = r;
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = fminf(a[k], b[k]) - r - 2 * h;
        hi[k] = fmaxf(a[k], b[k]) + r + 2 * h;
    }
    int n[3];
    for (int k = 0; k < 3; k++) n[k] = (int)ceilf((hi[k] - lo[k]) / h) + 1;
    float *f = malloc((size_t)n[0] * n[1] * n[2] * sizeof *f);
    if (!f) return -1;
    for (int k = 0; k < n[2]; k++)
        for (int j = 0; j < n[1]; j++)
            for (int i = 0; i < n[0]; i++) {
                float x[3] = {lo[0] + i * h, lo[1] + j * h, lo[2] + k * h};
                f[((size_t)k * n[1] + j) * n[0] + i] = ds_sdf_prim(&p, x);
            }
    int rc = ds_marching_cubes(f, n[0], n[1], n[2], lo, h, out);
    free(f);
    return rc;
}

static double mesh_diag(const DsMesh *m) {
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

static void check_corr(const SbSkeleton *s) {
    for (int64_t v = 0; v < s->nsurf; v++)
        CHECK_MSG(s->corr[v] >= 0 && s->corr[v] < s->nnodes, "vertex %lld maps to node %d of %lld", (long long)v,
                  s->corr[v], (long long)s->nnodes);
    for (int64_t e = 0; e < s->nedges; e++)
        CHECK(s->edges[2 * e] >= 0 && s->edges[2 * e] < s->edges[2 * e + 1] && s->edges[2 * e + 1] < s->nnodes);
}

/* A capsule contracts to its axis in the given pole mode: one curve, no cycle, converged before the
 * iteration cap, along the cylindrical part within 1% of the diagonal of the axis */
static void capsule_axis(int voronoi) {
    float a[3] = {-0.6f, 0, 0}, b[3] = {0.6f, 0, 0};
    DsMesh m;
    CHECK(make_capsule(a, b, 0.25f, 0.05f, &m) == 0);
    double diag = mesh_diag(&m), t0 = base_now();
    SbSkelOptions o;
    sb_skel_defaults(&o);
    o.voronoi_poles = voronoi;
    SbSkeleton s;
    char err[256];
    CHECK_MSG(sb_skeleton_mcf(&m, &o, &s, err, sizeof err) == 0, "%s", err);
    double dt = base_now() - t0;
    check_corr(&s);
    int64_t cycles;
    int comps = sb_skeleton_components(&s, &cycles);
    /* off: along the cylindrical part (|x| < 0.45, away from the caps); off_all: anywhere (the
     * caps' centers grow short spurs, as MCF skeletons do) */
    double off = 0, off_all = 0, xmin = 1e9, xmax = -1e9;
    for (int64_t i = 0; i < s.nnodes; i++) {
        const float *p = s.nodes + 3 * i;
        double r = sqrt(p[1] * p[1] + p[2] * p[2]);
        if (fabs(p[0]) < 0.45) off = fmax(off, r);
        off_all = fmax(off_all, r);
        xmin = fmin(xmin, p[0]), xmax = fmax(xmax, p[0]);
    }
    printf("    capsule (%s poles): %lld vertices → %lld nodes, %lld edges, %d components, %lld cycles, %d iterations, "
           "area ratio %.2e, max off-axis %.2f%% of diagonal (%.2f%% with the caps), x ∈ [%.3f, %.3f], %.2f s\n",
           voronoi ? "Voronoi" : "ray", (long long)m.nv, (long long)s.nnodes, (long long)s.nedges, comps,
           (long long)cycles, s.iterations, s.area_ratio, 100 * off / diag, 100 * off_all / diag, xmin, xmax, dt);
    CHECK(comps == 1);
    CHECK(cycles == 0);
    CHECK(s.nedges >= 3);
    CHECK(s.iterations < 100);
    CHECK_MSG(off < 0.01 * diag, "a node %.4f off the axis", off);
    CHECK_MSG(off_all < 0.03 * diag, "a node %.4f off the axis", off_all);
    /* the curve spans most of the segment (MCF skeletons stop short of the caps' ends) */
    CHECK(xmin < -0.4 && xmax > 0.4);
    sb_skeleton_free(&s);
    ds_mesh_free(&m);
}

/* the default (CGAL's Voronoi poles) */
TEST(skeleton_capsule_axis) {
    SbSkelOptions o;
    sb_skel_defaults(&o);
    CHECK(o.voronoi_poles == 1);
    capsule_axis(1);
}

/* the procedural quadruped's skeleton in one pole mode: one tree with at least five ends, and at
 * most `out_frac` of its nodes more than 0.5% of the diagonal outside the shape, none beyond
 * `worst_max` of the diagonal */
static void quadruped_tree(int voronoi, double out_frac, double worst_max) {
    DsProceduralShape sh;
    char err[256];
    CHECK_MSG(ds_procedural_make("quadruped", 3, 40, &sh, err, sizeof err) == 0, "%s", err);
    double t0 = base_now();
    SbSkeleton s;
    SbSkelOptions o;
    sb_skel_defaults(&o);
    o.voronoi_poles = voronoi;
    CHECK_MSG(sb_skeleton_mcf(&sh.mesh, &o, &s, err, sizeof err) == 0, "%s", err);
    double dt = base_now() - t0, diag = mesh_diag(&sh.mesh);
    check_corr(&s);
    int64_t cycles;
    int comps = sb_skeleton_components(&s, &cycles);
    int outside = 0;
    double worst = -1e9;
    for (int64_t i = 0; i < s.nnodes; i++) {
        float d = ds_sdf_scene_eval(&sh.scene, s.nodes + 3 * i);
        worst = fmax(worst, d);
        outside += d > 0.005 * diag;
    }
    int64_t *deg = calloc((size_t)s.nnodes + 1, sizeof *deg);
    CHECK(deg != NULL);
    for (int64_t e = 0; e < s.nedges; e++) deg[s.edges[2 * e]]++, deg[s.edges[2 * e + 1]]++;
    int ends = 0, branches = 0;
    for (int64_t i = 0; i < s.nnodes; i++) ends += deg[i] == 1, branches += deg[i] >= 3;
    free(deg);
    printf("    quadruped (%s poles): %lld vertices → %lld nodes, %lld edges, %d components, %lld cycles, %d ends, "
           "%d branch nodes, %d iterations, area ratio %.2e, worst node SDF %.2f%% of the diagonal (%d outside), "
           "%.2f s\n",
           voronoi ? "Voronoi" : "ray", (long long)sh.mesh.nv, (long long)s.nnodes, (long long)s.nedges, comps,
           (long long)cycles, ends, branches, s.iterations, s.area_ratio, 100 * worst / diag, outside, dt);
    CHECK(comps == 1);
    CHECK(cycles == 0);
    CHECK_MSG(worst < worst_max * diag, "a node %.2f%% of the diagonal outside the shape", 100 * worst / diag);
    CHECK_MSG(outside < out_frac * s.nnodes, "%d of %lld nodes outside the shape", outside, (long long)s.nnodes);
    /* four legs, a head/neck and a tail: at least five ends */
    CHECK(ends >= 5);
    sb_skeleton_free(&s);
    ds_procedural_free(&sh);
}

/* Nodes may poke out of the concave creases where the legs meet the body, as CGAL's do: CGAL's
 * own skeleton of this mesh (bench/run_skeleton.sh) has 12 of 179 nodes more than 0.5% of the
 * diagonal outside, the worst 1.59%. With CGAL's poles (the default) ours has 13 of 182, the
 * worst 1.35%: the bound is CGAL's own, rounded up (10%, 2%). */
TEST(skeleton_quadruped_tree) { quadruped_tree(1, 0.10, 0.02); }

/* The ray poles sit deeper and keep the nodes further in: with CGAL's split rule 6 of 178 nodes
 * are outside, the worst 0.89% (5%, 1%). Splitting at any obtuse angle kept every node inside
 * but left the Stanford bunny 2.7% from CGAL's skeleton. */
TEST(skeleton_quadruped_tree_ray) { quadruped_tree(0, 0.05, 0.01); }

/* the true joints of a procedural rig: every bone's head and the tails of bones with no child */
static int true_joints(const DsProceduralShape *sh, float *out) {
    int n = 0;
    for (int b = 0; b < sh->nbones; b++) {
        memcpy(out + 3 * n++, sh->bones[b].head, 3 * sizeof(float));
        bool leaf = true;
        for (int c = 0; c < sh->nbones; c++) leaf &= sh->bones[c].parent != b;
        if (leaf) memcpy(out + 3 * n++, sh->bones[b].tail, 3 * sizeof(float));
    }
    return n;
}

/* mean over a of the distance to the nearest point of b */
static double mean_nearest(const float *a, int na, const float *b, int nb) {
    double sum = 0;
    for (int i = 0; i < na; i++) {
        double best = INFINITY;
        for (int j = 0; j < nb; j++) {
            double d0 = a[3 * i] - b[3 * j], d1 = a[3 * i + 1] - b[3 * j + 1], d2 = a[3 * i + 2] - b[3 * j + 2];
            best = fmin(best, sqrt(d0 * d0 + d1 * d1 + d2 * d2));
        }
        sum += best;
    }
    return na ? sum / na : 0;
}

static void check_tree(const SbRig *r) {
    int roots = 0;
    for (int j = 0; j < r->njoints; j++) {
        roots += r->parent[j] < 0;
        CHECK(r->parent[j] >= -1 && r->parent[j] < r->njoints);
        /* following parents reaches the root in fewer than njoints steps: no cycle */
        int c = j, steps = 0;
        while (c >= 0 && steps <= r->njoints) c = r->parent[c], steps++;
        CHECK_MSG(c < 0, "joint %d: a cycle through its parents", j);
    }
    CHECK(roots == 1);
    CHECK(r->parent[r->root] == -1);
}

static void rig_case(const char *cat, uint64_t seed, double *err_tf, double *err_ft) {
    DsProceduralShape sh;
    char err[256];
    CHECK_MSG(ds_procedural_make(cat, seed, 40, &sh, err, sizeof err) == 0, "%s", err);
    SbSkeleton s;
    CHECK_MSG(sb_skeleton_mcf(&sh.mesh, NULL, &s, err, sizeof err) == 0, "%s", err);
    SbRig r;
    double t0 = base_now();
    CHECK_MSG(sb_rig_from_skeleton(&s, sh.weights, sh.nbones, NULL, &r, err, sizeof err) == 0, "%s", err);
    double dt = base_now() - t0;
    check_tree(&r);
    for (int64_t i = 0; i < s.nnodes; i++) CHECK(r.node_joint[i] >= 0 && r.node_joint[i] < r.njoints);
    float *tj = malloc((size_t)sh.nbones * 2 * 3 * sizeof *tj);
    CHECK(tj != NULL);
    int nt = true_joints(&sh, tj);
    double diag = s.diag;
    *err_tf = 100 * mean_nearest(tj, nt, r.joints, r.njoints) / diag;
    *err_ft = 100 * mean_nearest(r.joints, r.njoints, tj, nt) / diag;
    int kinds[3] = {0, 0, 0};
    for (int j = 0; j < r.njoints; j++) kinds[r.kind[j]]++;
    /* the true tree: each bone's head hangs from its parent's head, each leaf's tail from its head */
    int32_t *tpar = malloc((size_t)sh.nbones * 2 * sizeof *tpar);
    CHECK(tpar != NULL);
    int nh = 0;
    for (int b = 0; b < sh.nbones; b++) tpar[nh++] = sh.bones[b].parent;
    for (int b = 0; b < sh.nbones; b++) {
        bool leaf = true;
        for (int c = 0; c < sh.nbones; c++) leaf &= sh.bones[c].parent != b;
        if (leaf) tpar[nh++] = b;
    }
    CHECK(nh == nt);
    SbTreeCompare tc;
    CHECK(sb_tree_compare(tj, tpar, nt, r.joints, r.parent, r.njoints, diag, 0.05, &tc) == 0);
    printf("    %-9s tree: %d of %d distinct true joints matched within 5%%, %d of %d bones kept; ends %d (true %d), "
           "branches %d (true %d)\n",
           cat, tc.matched, tc.true_joints, tc.kept, tc.edges, tc.found_ends, tc.true_ends, tc.found_branches,
           tc.true_branches);
    free(tpar);
    printf("    %-9s seed %llu: %d true bones / %d joints, found %d joints (%d ends, %d branches, %d gradient) → %d "
           "bones, %d parts; joint error true→found %.2f%%, found→true %.2f%% of diagonal; %.1f ms\n",
           cat, (unsigned long long)seed, sh.nbones, nt, r.njoints, kinds[0], kinds[1], kinds[2], r.njoints - 1,
           r.nparts, *err_tf, *err_ft, 1e3 * dt);
    /* not many more joints than the rig has: one per articulation (the smoothed gradient and
     * the merge of short bones; 30 and 31 joints for these 18 and 19 before them) */
    CHECK_MSG(2 * r.njoints <= 3 * nt, "%d joints for %d true ones", r.njoints, nt);
    /* one end joint per true leaf: the contraction's spurs (rounded tips) are pruned */
    CHECK_MSG(kinds[0] == nt - sh.nbones, "%d end joints for %d true leaves", kinds[0], nt - sh.nbones);
    /* every part has joints, and together they cover every joint */
    for (int j = 0; j < r.njoints; j++) {
        int in = 0;
        for (int p = 0; p < r.nparts; p++) in += r.part[p * r.njoints + j];
        CHECK(in >= 1);
    }
    free(tj);
    sb_rig_free(&r);
    sb_skeleton_free(&s);
    ds_procedural_free(&sh);
}

TEST(skeleton_joints_vs_rig) {
    const char *cats[] = {"quadruped", "humanoid"};
    for (int c = 0; c < 2; c++) {
        double tf, ft;
        rig_case(cats[c], 3, &tf, &ft);
        /* the target: joints within 5% of the diagonal, both ways */
        CHECK_MSG(tf <= 5.0 && ft <= 5.0, "%s: joint error %.2f%% / %.2f%%", cats[c], tf, ft);
    }
}

TEST(skeleton_rejects_open_mesh) {
    /* a capsule with a few faces removed has a boundary: an error naming it, not a skeleton */
    float a[3] = {-0.5f, 0, 0}, b[3] = {0.5f, 0, 0};
    DsMesh m;
    CHECK(make_capsule(a, b, 0.25f, 0.05f, &m) == 0);
    m.nf -= 5;
    SbSkeleton s;
    char err[256] = "";
    CHECK(sb_skeleton_mcf(&m, NULL, &s, err, sizeof err) == -1);
    CHECK(strstr(err, "not closed") != NULL);
    CHECK(s.nodes == NULL && s.nnodes == 0);
    ds_mesh_free(&m);
}

/* the skeleton of a capsule from a to b (radius r, edge length h) squashed along z by `squash`,
 * with the Voronoi (1) or ray (0) poles; returns the mesh's diagonal */
static double flat_capsule_skeleton(const float a[3], const float b[3], float r, float h, float squash, int voronoi,
                                    DsMesh *m, SbSkeleton *s) {
    CHECK(make_capsule(a, b, r, h, m) == 0);
    for (int64_t v = 0; v < m->nv; v++) m->v[3 * v + 2] *= squash;
    char err[256];
    SbSkelOptions o;
    sb_skel_defaults(&o);
    o.voronoi_poles = voronoi;
    CHECK_MSG(sb_skeleton_mcf(m, &o, s, err, sizeof err) == 0, "%s", err);
    check_corr(s);
    return mesh_diag(m);
}

/* A flattened tube (a capsule squashed to 40% across): its medial axis is a ribbon, not a curve,
 * and its surface forms valence-3 vertices and short edges the link condition refuses long before
 * it has thinned into a curve. Those vertices must not be frozen on the surface (that left a fan
 * of long edges from the middle to the surface on the Stanford bunny's body): nearly all nodes
 * end near the axis. With the ray poles, with which the counts below were measured (the Voronoi
 * poles, the default, end with no node that far either way). */
TEST(skeleton_flat_tube_contracts_to_axis) {
    float a[3] = {-0.6f, 0, 0}, b[3] = {0.6f, 0, 0};
    DsMesh m;
    SbSkeleton s;
    double diag = flat_capsule_skeleton(a, b, 0.3f, 0.035f, 0.4f, 0, &m, &s);
    double off = 0, longest = 0;
    int far = 0;
    for (int64_t i = 0; i < s.nnodes; i++) {
        const float *p = s.nodes + 3 * i;
        double x = fmin(fmax(p[0], a[0]), b[0]);
        double d = sqrt((p[0] - x) * (p[0] - x) + p[1] * p[1] + p[2] * p[2]);
        off = fmax(off, d);
        far += d > 0.15;
    }
    for (int64_t e = 0; e < s.nedges; e++) {
        const float *p = s.nodes + 3 * s.edges[2 * e], *q = s.nodes + 3 * s.edges[2 * e + 1];
        longest = fmax(longest, sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) +
                                     (p[2] - q[2]) * (p[2] - q[2])));
    }
    int64_t cycles;
    int comps = sb_skeleton_components(&s, &cycles);
    printf("    flat tube: %lld vertices → %lld nodes, %d components, %lld cycles, %d iterations, farthest node from "
           "the axis %.2f%%, longest edge %.2f%% of the diagonal, %d nodes > 0.15 off\n",
           (long long)m.nv, (long long)s.nnodes, comps, (long long)cycles, s.iterations, 100 * off / diag,
           100 * longest / diag, far);
    CHECK(comps == 1 && cycles == 0);
    CHECK_MSG(off < 0.1 * diag, "a node %.2f%% of the diagonal off the axis", 100 * off / diag);
    /* nodes more than half the tube's half-width (0.15) from the axis: 9 of 148 with the disk
     * test for degenerate vertices, 30 of 134 when every refused collapse froze its two vertices */
    CHECK_MSG(far * 10 < s.nnodes, "%d of %lld nodes more than 0.15 off the axis", far, (long long)s.nnodes);
    sb_skeleton_free(&s);
    ds_mesh_free(&m);
}

/* sb_tree_compare on hand-made trees: a true chain A–B–C with a branch B–D (and a second joint
 * at B, as sibling bones starting at one point give); found trees that keep it with an extra
 * joint along A–B, that wire C between A and B, and that miss D. */
TEST(skeleton_tree_compare_counts) {
    const float tj[] = {0, 0, 0, 1, 0, 0, 2, 0, 0, 1, 1, 0, 1, 0, 0}; /* A B C D B' */
    const int32_t tp[] = {-1, 0, 1, 1, 1};
    SbTreeCompare c;
    /* found: A' X B' C' D' (X off the true joints), parents X→A', B'→X, C'→B', D'→B' */
    const float f1[] = {0.02f, 0, 0, 0.5f, 0.4f, 0, 1, 0.02f, 0, 2, 0, 0.02f, 1, 1.02f, 0};
    const int32_t p1[] = {-1, 0, 1, 2, 2};
    CHECK(sb_tree_compare(tj, tp, 5, f1, p1, 5, 10.0, 0.01, &c) == 0);
    CHECK(c.true_joints == 4 && c.found_joints == 5 && c.matched == 4);
    CHECK_MSG(c.edges == 3 && c.kept == 3, "edges %d kept %d", c.edges, c.kept);
    CHECK(c.true_ends == 3 && c.found_ends == 3 && c.true_branches == 1 && c.found_branches == 1);
    /* wrong wiring: A'–C'–B'–D' (C' between A' and B'): A–B is not kept (the path passes C'),
     * B–C and B–D are */
    const float f2[] = {0, 0, 0, 1, 0, 0, 2, 0, 0, 1, 1, 0};
    const int32_t p2[] = {-1, 2, 0, 1};
    CHECK(sb_tree_compare(tj, tp, 5, f2, p2, 4, 10.0, 0.01, &c) == 0);
    CHECK(c.matched == 4 && c.edges == 3);
    CHECK_MSG(c.kept == 2, "kept %d", c.kept);
    CHECK(c.found_ends == 2 && c.found_branches == 0);
    /* D missed (the found joint is farther than the radius): two true bones left to compare */
    const float f3[] = {0, 0, 0, 1, 0, 0, 2, 0, 0, 1, 2, 0};
    const int32_t p3[] = {-1, 0, 1, 1};
    CHECK(sb_tree_compare(tj, tp, 5, f3, p3, 4, 10.0, 0.01, &c) == 0);
    CHECK(c.matched == 3 && c.edges == 2 && c.kept == 2);
}

/* 2-D rigid motions in the xy plane as [R | t] rows (3 × 4), composed a ∘ b */
static void rig2_compose(const double *a, const double *b, double *out) {
    double r[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double acc = j == 3 ? a[i * 4 + 3] : 0;
            for (int k = 0; k < 3; k++) acc += a[i * 4 + k] * b[k * 4 + j];
            r[i * 4 + j] = acc;
        }
    memcpy(out, r, sizeof r);
}

/* rotation by th about the z axis through (cx, 0, 0) */
static void rig2_rot(double cx, double th, double *m) {
    double c = cos(th), s = sin(th);
    const double r[12] = {c, -s, 0, cx - c * cx, s, c, 0, -s * cx, 0, 0, 1, 0};
    memcpy(m, r, sizeof r);
}

TEST(skeleton_joints_chain_from_motion) {
    /* A snake-like chain: a straight curve x ∈ [0, 1] with articulations at x = 0.1 … 0.9 bending
     * about z. As SSDR with more bones than the rig gives it, each articulation's blend zone
     * (±0.03) has a bone of its own (half the articulation's rotation), so the weights cross
     * over twice per articulation, 0.015 either side of it, and the rigid stretches between are
     * 0.04 long, shorter than the gradient window: the smoothed gradient stays above τ along the
     * whole chain. The weights alone give one run, and one joint in it, for nine articulations
     * (the snake's miss, issue 19); with the bones' motion each crossover's joint goes to the two
     * bones' rotation centre, the articulation itself. */
    enum { N = 201, NA = 9, NB = 2 * NA + 1, F = 8 };
    SbSkeleton s;
    memset(&s, 0, sizeof s);
    s.nnodes = s.nsurf = N, s.nedges = N - 1, s.diag = 1.0;
    s.nodes = calloc(3 * N, sizeof *s.nodes);
    s.edges = malloc(2 * (N - 1) * sizeof *s.edges);
    s.corr = malloc(N * sizeof *s.corr);
    float *W = calloc((size_t)N * NB, sizeof *W);
    double *T = malloc((size_t)F * NB * 12 * sizeof *T);
    CHECK(s.nodes && s.edges && s.corr && W && T);
    s.centroid[0] = 0.5f;
    /* bones: 0..NA segments (segment k between articulations k and k+1), NA+1.. blend bones */
    for (int i = 0; i < N; i++) {
        double x = (double)i / (N - 1), w = 0.03;
        s.nodes[3 * i] = (float)x, s.corr[i] = i;
        if (i + 1 < N) s.edges[2 * i] = i, s.edges[2 * i + 1] = i + 1;
        int j = (int)lround(x * 10); /* nearest articulation */
        double d = x - 0.1 * j;
        float *wr = W + (size_t)i * NB;
        if (j < 1 || j > NA || fabs(d) >= w) {
            int seg = (int)floor(x * 10);
            wr[seg > NA ? NA : seg] = 1;
        } else if (d <= 0) {
            double t = (d + w) / w;
            wr[j - 1] = (float)(1 - t), wr[NA + j] = (float)t;
        } else {
            double t = d / w;
            wr[NA + j] = (float)(1 - t), wr[j] = (float)t;
        }
    }
    for (int f = 0; f < F; f++) {
        double *Tf = T + (size_t)f * NB * 12, rot[12];
        const double id[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
        memcpy(Tf, id, sizeof id);
        for (int k = 1; k <= NA; k++) { /* segment k = segment k−1 ∘ the rotation at x_k */
            double th = 0.4 * sin(0.7 * f + k);
            rig2_rot(0.1 * k, 0.5 * th, rot);
            rig2_compose(Tf + (k - 1) * 12, rot, Tf + (NA + k) * 12);
            rig2_rot(0.1 * k, th, rot);
            rig2_compose(Tf + (k - 1) * 12, rot, Tf + k * 12);
        }
    }
    char err[256];
    SbRig r;
    CHECK_MSG(sb_rig_from_motion(&s, W, NB, T, F, NULL, &r, err, sizeof err) == 0, "%s", err);
    check_tree(&r);
    CHECK_MSG(r.njoints == NA + 2, "%d joints (%d articulations and 2 ends)", r.njoints, NA);
    for (int j = 1; j <= NA; j++) {
        double best = INFINITY;
        for (int k = 0; k < r.njoints; k++) best = fmin(best, fabs(r.joints[3 * k] - 0.1 * j));
        CHECK_MSG(best <= 0.006, "articulation at x = %.1f: nearest joint %.3f away", 0.1 * j, best);
    }
    sb_rig_free(&r);
    free(s.nodes), free(s.edges), free(s.corr), free(W), free(T);
}

TEST(skeleton_joints_fan_pruned) {
    /* A trunk x ∈ [0, 1] ending in a fan: six single edges 0.15 long (three times the spur
     * length) leaving its end node, as a flared part contracts (huesitos' foot). Weights: bone 0
     * everywhere but the tip of spoke 0, which is bone 1 — that spoke articulates, the other
     * five do not. The five are pruned until the fan is a plain fork (trunk, spoke 0 and one
     * more): three ends, spoke 0's among them. Without the fan rule all seven ends stay. */
    enum { NT = 101, NS = 6, N = NT + NS, NB = 2 };
    SbSkeleton s;
    memset(&s, 0, sizeof s);
    s.nnodes = s.nsurf = N, s.nedges = N - 1, s.diag = 1.0;
    s.nodes = calloc(3 * N, sizeof *s.nodes);
    s.edges = malloc(2 * (N - 1) * sizeof *s.edges);
    s.corr = malloc(N * sizeof *s.corr);
    float *W = calloc((size_t)N * NB, sizeof *W);
    CHECK(s.nodes && s.edges && s.corr && W);
    int e = 0;
    for (int i = 0; i < NT; i++) {
        s.nodes[3 * i] = (float)i / (NT - 1), s.corr[i] = i, W[i * NB] = 1;
        if (i + 1 < NT) s.edges[2 * e] = i, s.edges[2 * e + 1] = i + 1, e++;
    }
    for (int k = 0; k < NS; k++) {
        int v = NT + k;
        double a = 2 * M_PI * k / NS;
        s.nodes[3 * v] = 1, s.nodes[3 * v + 1] = (float)(0.15 * cos(a)), s.nodes[3 * v + 2] = (float)(0.15 * sin(a));
        s.corr[v] = v, W[v * NB + (k == 0)] = 1;
        s.edges[2 * e] = NT - 1, s.edges[2 * e + 1] = v, e++;
    }
    s.centroid[0] = 0.5f;
    char err[256];
    SbRig r;
    CHECK_MSG(sb_rig_from_skeleton(&s, W, NB, NULL, &r, err, sizeof err) == 0, "%s", err);
    check_tree(&r);
    int ends = 0, spoke0 = 0;
    for (int j = 0; j < r.njoints; j++) {
        ends += r.kind[j] == SB_JOINT_END;
        spoke0 |= r.joint_node[j] == NT;
    }
    CHECK_MSG(ends == 3, "%d ends (trunk start, spoke 0 and one more spoke)", ends);
    CHECK(spoke0);
    sb_rig_free(&r);
    free(s.nodes), free(s.edges), free(s.corr), free(W);
}

/* A fat, flattened blob (a short capsule squashed to half its thickness: its medial axis is a
 * sheet, as the Stanford bunny's body is). The contraction must still end in a curve along the
 * long axis, as CGAL's does. When the edge collapse refused every edge with an end of valence 3
 * (CGAL refuses only a closed tetrahedron), short edges stayed, the degeneracy test froze their
 * vertices, and the blob stayed a sheet that ended in a fan of branches: 18 ends, 25 of 97 nodes
 * more than 0.09 (a fifth of the half-width) off the long axis (45 ends, 113 of 390 with the
 * old split rule as well), with the ray poles; with the Voronoi poles (the default, run here) 12
 * ends against 2 with CGAL's link condition. */
TEST(skeleton_flat_blob_contracts_to_curve) {
    float a[3] = {-0.45f, 0, 0}, b[3] = {0.45f, 0, 0};
    DsMesh m;
    SbSkeleton s;
    double diag = flat_capsule_skeleton(a, b, 0.45f, 0.04f, 0.5f, 1, &m, &s);
    int64_t *deg = calloc((size_t)s.nnodes + 1, sizeof *deg);
    CHECK(deg != NULL);
    for (int64_t e = 0; e < 2 * s.nedges; e++) deg[s.edges[e]]++;
    int ends = 0, far = 0;
    for (int64_t i = 0; i < s.nnodes; i++) {
        const float *p = s.nodes + 3 * i;
        ends += deg[i] == 1;
        far += sqrt(p[1] * p[1] + p[2] * p[2]) > 0.09;
    }
    int64_t cycles;
    int comps = sb_skeleton_components(&s, &cycles);
    printf("    flat blob: %lld vertices → %lld nodes, %d ends, %d components, %lld cycles, %d iterations, "
           "area ratio %.2e, %d nodes > 0.09 off the long axis (diagonal %.2f)\n",
           (long long)m.nv, (long long)s.nnodes, ends, comps, (long long)cycles, s.iterations, s.area_ratio, far, diag);
    CHECK(comps == 1 && cycles == 0);
    CHECK_MSG(ends <= 4, "%d ends: the blob stayed a sheet", ends);
    CHECK_MSG(far * 5 < s.nnodes, "%d of %lld nodes off the long axis", far, (long long)s.nnodes);
    free(deg);
    sb_skeleton_free(&s);
    ds_mesh_free(&m);
}

/* CGAL's Voronoi poles (sb_skeleton_poles, voronoi = 1): every finite Voronoi vertex of points on
 * a sphere is its centre, so every pole is; on a long box the pole of a vertex on a long face's
 * midline, away from the ends, is the axis point below it (the ball touching four faces). The
 * LP's bounding box lies 5% of the diagonal outside the mesh, so a pole that missed the cell's
 * true vertex would land far off. */
TEST(skeleton_voronoi_poles) {
    DsMesh m;
    CHECK(ds_mesh_make_uv_sphere(1.0f, 24, 48, &m) == 0);
    double *p = malloc((size_t)m.nv * 3 * sizeof *p);
    uint8_t *has = malloc((size_t)m.nv);
    CHECK(p && has);
    CHECK(sb_skeleton_poles(&m, 1, p, has) == 0);
    double worst = 0;
    int64_t n = 0;
    for (int64_t v = 0; v < m.nv; v++) {
        if (!has[v]) continue;
        n++;
        worst = fmax(worst, sqrt(p[3 * v] * p[3 * v] + p[3 * v + 1] * p[3 * v + 1] + p[3 * v + 2] * p[3 * v + 2]));
    }
    printf("    sphere: %lld of %lld vertices have a pole, farthest %.2e from the centre\n", (long long)n,
           (long long)m.nv, worst);
    CHECK(n == m.nv);
    CHECK_MSG(worst < 1e-3, "a pole %.2e from the centre", worst);
    free(p), free(has), ds_mesh_free(&m);

    const float half[3] = {2.0f, 0.5f, 0.5f};
    CHECK(ds_mesh_make_box(half, 24, &m) == 0);
    p = malloc((size_t)m.nv * 3 * sizeof *p), has = malloc((size_t)m.nv);
    CHECK(p && has);
    CHECK(sb_skeleton_poles(&m, 1, p, has) == 0);
    double off = 0, along = 0;
    int64_t tested = 0;
    for (int64_t v = 0; v < m.nv; v++) {
        const float *x = m.v + 3 * v;
        /* the midlines of the four long faces: one of y, z at ±0.5, the other 0 */
        bool mid = (fabsf(fabsf(x[1]) - 0.5f) < 1e-6f && fabsf(x[2]) < 1e-6f) ||
                   (fabsf(fabsf(x[2]) - 0.5f) < 1e-6f && fabsf(x[1]) < 1e-6f);
        if (!mid || fabsf(x[0]) > 1.2f) continue;
        tested++;
        CHECK_MSG(has[v], "vertex %lld has no pole", (long long)v);
        if (!has[v]) continue;
        off = fmax(off, sqrt(p[3 * v + 1] * p[3 * v + 1] + p[3 * v + 2] * p[3 * v + 2]));
        along = fmax(along, fabs(p[3 * v] - x[0]));
    }
    printf("    long box: %lld midline vertices, poles at most %.3f off the axis and %.3f along it from the "
           "vertex\n", (long long)tested, off, along);
    CHECK(tested >= 4 * 10);
    CHECK_MSG(off < 0.05, "a pole %.3f off the axis", off);   /* the half width is 0.5 */
    CHECK_MSG(along < 0.17, "a pole %.3f along the axis", along); /* the x spacing is 1/6 */
    free(p), free(has), ds_mesh_free(&m);
}

/* the option: the ray poles */
TEST(skeleton_ray_capsule_axis) { capsule_axis(0); }

/* With one thread asked for, the contraction solve makes CHOLMOD's OpenMP regions inactive (its
 * fixed team of 4 ignores the caller's count): the skeleton must be the one the threaded solve
 * gives (the same factorization; at most rounding apart), and the caller's max-active-levels
 * setting must come back unchanged. */
TEST(skeleton_one_thread_solve_same) {
    float a[3] = {-0.6f, 0, 0}, b[3] = {0.6f, 0, 0};
    DsMesh m;
    CHECK(make_capsule(a, b, 0.25f, 0.05f, &m) == 0);
    double diag = mesh_diag(&m);
    SbSkelOptions o;
    sb_skel_defaults(&o);
    o.voronoi_poles = 1;
    SbSkeleton s1, sn;
    char err[256];
    int nt = omp_get_max_threads(), levels = omp_get_max_active_levels();
    omp_set_num_threads(1);
    int rc1 = sb_skeleton_mcf(&m, &o, &s1, err, sizeof err);
    int levels1 = omp_get_max_active_levels();
    omp_set_num_threads(nt > 1 ? nt : 2);
    int rcn = sb_skeleton_mcf(&m, &o, &sn, err, sizeof err);
    omp_set_num_threads(nt);
    CHECK_MSG(rc1 == 0 && rcn == 0, "%s", err);
    CHECK_MSG(levels1 == levels, "max active levels %d after the one-thread solve, was %d", levels1, levels);
    CHECK(s1.nnodes == sn.nnodes && s1.nedges == sn.nedges && s1.iterations == sn.iterations);
    double dmax = 0;
    for (int64_t i = 0; s1.nnodes == sn.nnodes && i < 3 * s1.nnodes; i++)
        dmax = fmax(dmax, fabs((double)s1.nodes[i] - sn.nodes[i]));
    printf("    capsule (Voronoi poles): one thread vs %d: %lld nodes, largest node difference %.1e of the diagonal\n",
           nt > 1 ? nt : 2, (long long)s1.nnodes, dmax / diag);
    CHECK(dmax <= 1e-6 * diag);
    sb_skeleton_free(&s1), sb_skeleton_free(&sn);
    ds_mesh_free(&m);
}

/* The Voronoi mode's inside test (sb_mesh_inside: ray-crossing parity through the face grid) on a
 * box meshed with one cell per face (12 triangles, each spanning many grid cells: a crossing
 * must count once, not once per cell) and with 6 per side (grid-aligned vertices and edges), and
 * on a UV sphere; query points on a lattice that shares the meshes' vertex coordinates, so rays
 * from them meet edges and vertices; points within 1e-3 of the surface are skipped. */
TEST(skeleton_inside_parity) {
    const float half[3] = {1.0f, 0.5f, 0.5f};
    for (int pass = 0; pass < 3; pass++) {
        DsMesh m;
        if (pass < 2) CHECK(ds_mesh_make_box(half, pass == 0 ? 1 : 6, &m) == 0);
        else CHECK(ds_mesh_make_uv_sphere(1.0f, 12, 24, &m) == 0);
        enum { N = 13 };
        double *q = malloc((size_t)N * N * N * 3 * sizeof *q);
        uint8_t *in = malloc((size_t)N * N * N);
        CHECK(q && in);
        int64_t n = 0;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                for (int k = 0; k < N; k++) {
                    /* steps of 1/4 from −1.5: many on the boxes' vertex coordinates (0, ±1, ±0.5) */
                    q[3 * n] = -1.5 + 0.25 * i, q[3 * n + 1] = -1.5 + 0.25 * j, q[3 * n + 2] = -1.5 + 0.25 * k;
                    n++;
                }
        CHECK(sb_mesh_inside(&m, n, q, in) == 0);
        int64_t tested = 0, wrong = 0, nin = 0;
        for (int64_t p = 0; p < n; p++) {
            const double *x = q + 3 * p;
            double d; /* signed distance-like: < 0 inside */
            if (pass < 2) d = fmax(fabs(x[0]) - half[0], fmax(fabs(x[1]) - half[1], fabs(x[2]) - half[2]));
            else d = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) - 1.0;
            /* the UV sphere is inscribed: its faces lie up to about 0.03 inside the sphere */
            if (d < 1e-3 && d > (pass < 2 ? -1e-3 : -0.04)) continue;
            tested++, nin += d < 0;
            wrong += in[p] != (d < 0);
        }
        printf("    %s: %lld points tested (%lld inside), %lld misclassified\n",
               pass == 0 ? "box, 12 faces" : pass == 1 ? "box, 6 per side" : "UV sphere", (long long)tested,
               (long long)nin, (long long)wrong);
        CHECK(tested > 1000 && nin > 50);
        CHECK(wrong == 0);
        free(q), free(in), ds_mesh_free(&m);
    }
}

/* A gs4d fit's Gaussians are a shell: the points of a body's surface, none inside and none where
 * no camera looked. The shell here is an ellipsoid open at both ends of its long axis (a thick
 * tube: a handle, a loop in its skeleton) with two legs under it, 0.6 apart at the hips and 0.2
 * at the feet. Filled (sb_mesh_points, 5 votes of 13; with the plain density and with each splat
 * over the density at its point) the mesh is one solid without handles
 * (χ = V − F/2 = 2) with the body's middle inside and the gap between the feet outside (the
 * legs not webbed). Unfilled, the middle is outside and the mesh has a handle (χ ≤ 0). The rule
 * against new handles is tested on cells below. */
TEST(skeleton_shell_of_points_filled) {
    const float ax = 1.0f, ay = 0.45f, az = 0.4f, legr = 0.1f;
    const float hip[2] = {-0.25f, 0.55f}, foot[2] = {-0.25f, -0.25f + 2 * 0.1f + 0.2f}; /* leg centres, x */
    enum { NS = 6000, NLEG = 1200 };
    float *p = malloc((size_t)(NS + 2 * NLEG) * 3 * sizeof *p);
    CHECK(p != NULL);
    int64_t n = 0;
    for (int i = 0; i < NS; i++) { /* Fibonacci points on the ellipsoid, the ends |x| > 0.75 ax left out */
        double x = 1 - 2 * (i + 0.5) / NS, r = sqrt(1 - x * x), ph = i * M_PI * (3 - sqrt(5.0));
        if (fabs(x) > 0.75) continue;
        p[3 * n] = (float)(ax * x), p[3 * n + 1] = (float)(ay * r * cos(ph)), p[3 * n + 2] = (float)(az * r * sin(ph));
        n++;
    }
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < NLEG; i++) { /* a leg's surface from its foot (y = −1.2) up into the body, and its sole */
            double a = 2 * M_PI * (i % 24) / 24, u = (i / 24) / (NLEG / 24 - 1.0), rr = legr;
            if (i / 24 == 0) rr = legr * (i % 3) / 3.0, a += i;
            float q[3] = {(float)(foot[l] + u * (hip[l] - foot[l]) + rr * cos(a)), (float)(-1.2 + 0.9 * u), (float)(rr * sin(a))};
            if ((q[0] / ax) * (q[0] / ax) + (q[1] / ay) * (q[1] / ay) + (q[2] / az) * (q[2] / az) < 1) continue;
            memcpy(p + 3 * n, q, sizeof q), n++;
        }
    /* the body's middle; the middle of the feet's gap, 0.1 above the soles */
    const double u = 0.1 / 0.9, gx = 0.5 * (foot[0] + u * (hip[0] - foot[0]) + foot[1] + u * (hip[1] - foot[1]));
    const double probe[6] = {0, 0, 0, gx, -1.1, 0};
    /* unfilled, filled, filled with each splat over the density at its point (the default) */
    int64_t chi[3];
    SbMeshStats filled[3];
    uint8_t in[3][2];
    for (int run = 0; run < 3; run++) {
        DsMesh m;
        char err[256];
        SbRigOptions o;
        sb_rig_options_defaults(&o);
        o.fill_votes = run ? 5 : 0, o.density_norm = run == 2;
        CHECK(sb_mesh_points(p, NULL, n, &o, &m, &filled[run], err, sizeof err) == 0);
        CHECK(m.nf % 2 == 0);
        chi[run] = m.nv - m.nf / 2;
        CHECK(sb_mesh_inside(&m, 2, probe, in[run]) == 0);
        ds_mesh_free(&m);
        printf("    %s: %lld cells filled, χ %lld, middle %s, feet's gap %s\n",
               run == 0 ? "unfilled" : run == 1 ? "filled" : "filled, density_norm", (long long)filled[run].filled_cells,
               (long long)chi[run], in[run][0] ? "inside" : "outside", in[run][1] ? "inside" : "outside");
    }
    CHECK(filled[0].filled_cells == 0 && filled[1].filled_cells > 0 && filled[2].filled_cells > 0);
    CHECK(chi[0] <= 0 && !in[0][0]); /* the shape needs the fill: a tube, hollow */
    for (int run = 1; run < 3; run++) CHECK(chi[run] == 2 && in[run][0] && !in[run][1]);
    free(p);
}

/* sb_fill_shells on cells. A C-shaped ring (a thick ring in the xy plane cut by a slot 3 cells
 * wide): the lines across the slot stab it, but filling it closes the ring — a handle — so with
 * keep_handles it stays empty, and without, it fills. A hollow box with a 6 × 6 window in its
 * top: its inside fills but for a dent under the window (fewer than the window's 36 cells: the
 * lines out through it escape), the outside does not. */
TEST(skeleton_fill_shells_no_new_handle) {
    const int n[3] = {48, 48, 16};
    size_t cells = (size_t)n[0] * n[1] * n[2];
    uint8_t *in = malloc(cells);
    CHECK(in != NULL);
    for (int keep = 0; keep < 2; keep++) {
        for (int z = 0; z < n[2]; z++)
            for (int y = 0; y < n[1]; y++)
                for (int x = 0; x < n[0]; x++) {
                    double r = hypot(x - 23.5, y - 23.5);
                    int slot = y > 24 && abs(x - 24) <= 1;
                    in[((size_t)z * n[1] + y) * n[0] + x] = r >= 8 && r < 16 && z >= 4 && z < 12 && !slot;
                }
        int64_t added = sb_fill_shells(in, n, 5, keep);
        int64_t slot_filled = 0, hole_filled = 0;
        for (int y = 25; y < 40; y++)
            for (int x = 23; x <= 25; x++) slot_filled += in[((size_t)8 * n[1] + y) * n[0] + x] == 2 && hypot(x - 23.5, y - 23.5) >= 8;
        hole_filled = in[((size_t)8 * n[1] + 24) * n[0] + 24] != 0;
        printf("    C ring, keep_handles %d: %lld cells added, %lld of the slot's mid-plane, hole %s\n", keep,
               (long long)added, (long long)slot_filled, hole_filled ? "filled" : "open");
        CHECK(added >= 0 && !hole_filled);
        if (keep) CHECK(slot_filled == 0);
        else CHECK(slot_filled > 10);
    }
    /* a box shell (walls 1 cell thick) with a 6 × 6 window in its top */
    for (int z = 0; z < n[2]; z++)
        for (int y = 0; y < n[1]; y++)
            for (int x = 0; x < n[0]; x++) {
                int box = x >= 8 && x < 40 && y >= 8 && y < 40 && z >= 2 && z < 14;
                int inner = x >= 9 && x < 39 && y >= 9 && y < 39 && z >= 3 && z < 13;
                int window = z == 13 && abs(x - 24) < 3 && abs(y - 24) < 3;
                in[((size_t)z * n[1] + y) * n[0] + x] = box && !inner && !window;
            }
    int64_t added = sb_fill_shells(in, n, 5, 1), inside_open = 0, outside_filled = 0;
    for (int z = 0; z < n[2]; z++)
        for (int y = 0; y < n[1]; y++)
            for (int x = 0; x < n[0]; x++) {
                int inner = x >= 9 && x < 39 && y >= 9 && y < 39 && z >= 3 && z < 13;
                int box = x >= 8 && x < 40 && y >= 8 && y < 40 && z >= 2 && z < 14;
                uint8_t v = in[((size_t)z * n[1] + y) * n[0] + x];
                inside_open += inner && !v, outside_filled += !box && v;
            }
    printf("    box with a window: %lld cells added, %lld inside left open, %lld outside filled\n", (long long)added,
           (long long)inside_open, (long long)outside_filled);
    CHECK(inside_open < 36 && outside_filled == 0 && added > 8000);
    free(in);
}

/* A dense body (4000 points in a ball of radius 0.3) with a thin tail: 40 points along a line of length 1.
 * By the plain density (level a third of its median at the points) the tail's far half is not
 * surface; with each splat over the density at its point (density_norm) the whole tail is. A
 * transparent copy of the tail (opacity 0.01) is not surface either way. All faint, the points
 * are still meshed. */
/* sb_fill_shells adds no piece of its own: eight 4-cell cubes at the corners of a 22-cell cage.
 * Its centre is stabbed by the four body diagonals (each meets a cube both ways), the cells next
 * to a cube by hardly any, so at 4 votes the candidates are a ball floating in the middle. With
 * the rules it is left out — a new component, which would mesh as a speck of its own (the
 * monocular quadruped's fill made one under its belly, and the skeleton two end joints in it);
 * without, it fills. (Pieces that join cubes without closing a loop go in either way.) */
TEST(skeleton_fill_shells_no_floating_piece) {
    const int n[3] = {26, 26, 26};
    uint8_t *in = malloc(26 * 26 * 26);
    CHECK(in);
    int64_t filled[2];
    for (int run = 0; run < 2; run++) {
        memset(in, 0, 26 * 26 * 26);
        for (int z = 0; z < 26; z++)
            for (int y = 0; y < 26; y++)
                for (int x = 0; x < 26; x++) {
                    int cx = x >= 2 && x < 6 ? 1 : x >= 20 && x < 24 ? 1 : 0, cy = y >= 2 && y < 6 ? 1 : y >= 20 && y < 24 ? 1 : 0,
                        cz = z >= 2 && z < 6 ? 1 : z >= 20 && z < 24 ? 1 : 0;
                    in[(z * 26 + y) * 26 + x] = cx && cy && cz;
                }
        filled[run] = sb_fill_shells(in, n, 4, !run);
        printf("    keep_handles %d: %lld cells filled, the centre %s\n", !run, (long long)filled[run],
               in[(13 * 26 + 13) * 26 + 13] ? "inside" : "outside");
        CHECK(!in[(13 * 26 + 13) * 26 + 13] == !run);
    }
    CHECK(filled[0] < filled[1]);
    free(in);
}

/* sb_mesh_drop_specks: a body (a capsule), a speck (a small ball) and a limb apart from it (a thin
 * capsule) in one mesh, the speck between the two in vertex order, the points their vertices
 * (the speck's 0.35% of them, the limb's 15%): the speck goes, the limb stays, and what is left is
 * the body's and the limb's faces on their own vertices, renumbered in order. Then the route from
 * points: a dense ball with a tight cluster of 6 opaque floaters beside it meshes as the ball
 * alone, and the same cluster spread into a blob of 300 points stays. With a bar that no piece
 * reaches, the heaviest piece stays. */
TEST(skeleton_points_speck_dropped) {
    const float a0[3] = {0, 0, 0}, b0[3] = {1, 0, 0}, a1[3] = {0.5f, 0.6f, 0}, a2[3] = {0, 0.6f, 0}, b2[3] = {0.3f, 0.6f, 0};
    DsMesh part[3], m;
    CHECK(make_capsule(a0, b0, 0.2f, 0.02f, &part[0]) == 0);
    CHECK(make_capsule(a1, a1, 0.03f, 0.02f, &part[1]) == 0);
    CHECK(make_capsule(a2, b2, 0.1f, 0.02f, &part[2]) == 0);
    memset(&m, 0, sizeof m);
    for (int k = 0; k < 3; k++) m.nv += part[k].nv, m.nf += part[k].nf;
    m.v = malloc((size_t)m.nv * 3 * sizeof *m.v), m.f = malloc((size_t)m.nf * 3 * sizeof *m.f);
    CHECK(m.v && m.f);
    int64_t ov = 0, of = 0;
    for (int k = 0; k < 3; k++) {
        memcpy(m.v + 3 * ov, part[k].v, (size_t)part[k].nv * 3 * sizeof *m.v);
        for (int64_t t = 0; t < 3 * part[k].nf; t++) m.f[3 * of + t] = part[k].f[t] + (int32_t)ov;
        ov += part[k].nv, of += part[k].nf;
    }
    printf("    vertices: body %lld, speck %lld, limb %lld\n", (long long)part[0].nv, (long long)part[1].nv, (long long)part[2].nv);
    CHECK(part[1].nv < SB_SPECK_WEIGHT * m.nv && part[2].nv > 0.1 * m.nv);
    float *pts = malloc((size_t)m.nv * 3 * sizeof *pts);
    CHECK(pts);
    memcpy(pts, m.v, (size_t)m.nv * 3 * sizeof *pts);
    CHECK(sb_mesh_drop_specks(&m, pts, NULL, ov, SB_SPECK_WEIGHT) == part[1].nf);
    free(pts);
    CHECK(m.nv == part[0].nv + part[2].nv && m.nf == part[0].nf + part[2].nf);
    CHECK(memcmp(m.v, part[0].v, (size_t)part[0].nv * 3 * sizeof *m.v) == 0);
    CHECK(memcmp(m.v + 3 * part[0].nv, part[2].v, (size_t)part[2].nv * 3 * sizeof *m.v) == 0);
    for (int64_t t = 0; t < 3 * part[2].nf; t++) CHECK(m.f[3 * part[0].nf + t] == part[2].f[t] + (int32_t)part[0].nv);
    /* a bar no piece reaches (the body carries 85%): the heaviest stays rather than nothing */
    pts = malloc((size_t)m.nv * 3 * sizeof *pts);
    CHECK(pts);
    memcpy(pts, m.v, (size_t)m.nv * 3 * sizeof *pts);
    CHECK(sb_mesh_drop_specks(&m, pts, NULL, m.nv, 0.99) == part[2].nf);
    CHECK(m.nv == part[0].nv && m.nf == part[0].nf);
    free(pts);
    ds_mesh_free(&m);
    for (int k = 0; k < 3; k++) ds_mesh_free(&part[k]);

    enum { NB = 4000, NS = 300 };
    float *p = malloc((size_t)(NB + NS) * 3 * sizeof *p);
    CHECK(p);
    uint64_t st = 11;
    for (int i = 0; i < NB + NS; i++) { /* the ball of radius 0.4; then the cluster around (0.9, 0, 0) */
        float q[3], r2, rad = i < NB ? 0.4f : 0.004f;
        do {
            for (int c = 0; c < 3; c++) st = st * 6364136223846793005ULL + 1442695040888963407ULL, q[c] = 2 * rad * ((float)(st >> 40) / 16777216.0f - 0.5f);
            r2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
        } while (r2 > rad * rad);
        if (i >= NB) q[0] += 0.9f;
        memcpy(p + 3 * i, q, sizeof q);
    }
    const double probe[6] = {0.9, 0, 0, 0, 0, 0};
    uint8_t in[2][2];
    for (int run = 0; run < 2; run++) {
        if (run) /* the blob: the cluster's points spread over a radius of 0.08 */
            for (int i = NB; i < NB + NS; i++) p[3 * i] = 0.9f + 20 * (p[3 * i] - 0.9f), p[3 * i + 1] *= 20, p[3 * i + 2] *= 20;
        SbRigOptions o;
        sb_rig_options_defaults(&o);
        DsMesh mp;
        SbMeshStats filled;
        char err[256];
        CHECK(sb_mesh_points(p, NULL, run ? NB + NS : NB + 6, &o, &mp, &filled, err, sizeof err) == 0);
        CHECK(sb_mesh_inside(&mp, 2, probe, in[run]) == 0);
        printf("    %s: %lld vertices, its center %s\n", run ? "a blob of 300" : "6 floaters", (long long)mp.nv,
               in[run][0] ? "inside" : "outside");
        ds_mesh_free(&mp);
    }
    CHECK(!in[0][0] && in[0][1] && in[1][0] && in[1][1]);
    free(p);
}

/* SbRigOptions.bridge: a ball of 4000 points and, beyond a gap of about two cells, a toe of 150
 * points (a limb's end the density lost at a thin neck). With the bridge the toe is joined by a
 * bar — one piece — and without it the toe is a piece apart (kept: it carries 3.6% of the
 * points); a toe four cells further off stays apart either way. The points lie on the spheres.
 * The near toe's place (x 0.56) was chosen from a scan: at 0.52 the density alone already joins
 * it, at 0.54–0.56 only the bridge does, from 0.58 on neither. */
TEST(skeleton_points_fragment_bridged) {
    enum { NB = 4000, NT = 150 };
    float *p = malloc((size_t)(NB + NT) * 3 * sizeof *p);
    CHECK(p);
    double offs[2] = {0, 0};
    for (int far = 0; far < 2; far++) {
        uint64_t st = 5;
        for (int i = 0; i < NB + NT; i++) {
            float q[3], r2, rad = i < NB ? 0.4f : 0.05f;
            do { /* on the sphere, as a fit's Gaussians lie on the surface */
                for (int c = 0; c < 3; c++) st = st * 6364136223846793005ULL + 1442695040888963407ULL, q[c] = 2 * ((float)(st >> 40) / 16777216.0f - 0.5f);
                r2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
            } while (r2 > 1 || r2 < 1e-4f);
            for (int c = 0; c < 3; c++) q[c] *= rad / sqrtf(r2);
            if (i >= NB) q[0] += far ? 0.62f : 0.56f;
            memcpy(p + 3 * i, q, sizeof q);
        }
        offs[far] = far ? 0.62 : 0.56;
        for (int bridge = 0; bridge < 2; bridge++) {
            SbRigOptions o;
            sb_rig_options_defaults(&o);
            if (!bridge) o.bridge = 0;
            DsMesh m;
            SbMeshStats ms;
            char err[256];
            CHECK(sb_mesh_points(p, NULL, NB + NT, &o, &m, &ms, err, sizeof err) == 0);
            /* the mesh's pieces: closed spheres, χ = V − E + F = 2 each */
            int pieces = (int)((m.nv - 3 * m.nf / 2 + m.nf) / 2);
            printf("    toe at %.2f, bridge %s: %lld joined, %d piece(s)\n", offs[far], bridge ? "on" : "off", (long long)ms.bridged, pieces);
            CHECK(pieces == (bridge && !far ? 1 : 2));
            CHECK(ms.bridged == (bridge && !far ? 1 : 0) && ms.speck_faces == 0);
            ds_mesh_free(&m);
        }
    }
    free(p);
}

TEST(skeleton_points_thin_tail_meshed) {
    enum { NB = 4000, NT = 40 };
    float *p = malloc((size_t)(NB + 2 * NT) * 3 * sizeof *p), *op = malloc((size_t)(NB + 2 * NT) * sizeof *op);
    CHECK(p && op);
    uint64_t st = 7;
    for (int i = 0; i < NB; i++) { /* uniform in the ball of radius 0.4 */
        float q[3], r2;
        do {
            for (int c = 0; c < 3; c++) st = st * 6364136223846793005ULL + 1442695040888963407ULL, q[c] = 0.6f * ((float)(st >> 40) / 16777216.0f - 0.5f);
            r2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
        } while (r2 > 0.09f);
        memcpy(p + 3 * i, q, sizeof q), op[i] = 1;
    }
    for (int i = 0; i < NT; i++) { /* the tail along +x from the ball's surface; its copy along −y */
        float t = 0.3f + 1.0f * i / (NT - 1);
        float *a = p + 3 * (NB + i), *b = p + 3 * (NB + NT + i);
        a[0] = t, a[1] = 0, a[2] = 0, op[NB + i] = 1;
        b[0] = 0, b[1] = -t, b[2] = 0, op[NB + NT + i] = 0.01f;
    }
    const double probe[6] = {1.1, 0, 0, 0, -1.1, 0}; /* the tail's far part; the transparent tail's */
    uint8_t in[2][2];
    for (int norm = 0; norm < 2; norm++) {
        SbRigOptions o;
        sb_rig_options_defaults(&o);
        o.density_norm = norm;
        DsMesh m;
        SbMeshStats filled;
        char err[256];
        CHECK(sb_mesh_points(p, op, NB + 2 * NT, &o, &m, &filled, err, sizeof err) == 0);
        CHECK(sb_mesh_inside(&m, 2, probe, in[norm]) == 0);
        printf("    density_norm %d: %lld vertices, the tail's far part %s, the transparent tail's %s\n", norm, (long long)m.nv,
               in[norm][0] ? "inside" : "outside", in[norm][1] ? "inside" : "outside");
        ds_mesh_free(&m);
    }
    CHECK(!in[0][0] && in[1][0]);
    CHECK(!in[1][1]);
    /* every point faint (a barely started fit): no point has two opaque points' worth near it, so
     * the first pass's field is meshed rather than nothing */
    for (int i = 0; i < NB + 2 * NT; i++) op[i] = 1e-3f;
    SbRigOptions o;
    sb_rig_options_defaults(&o);
    DsMesh m;
    SbMeshStats filled;
    char err[256];
    CHECK(sb_mesh_points(p, op, NB + 2 * NT, &o, &m, &filled, err, sizeof err) == 0 && m.nf > 100);
    ds_mesh_free(&m);
    free(p), free(op);
}
