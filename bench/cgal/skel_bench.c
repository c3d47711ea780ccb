/* bench/cgal/skel_bench.c — anima's side of bench/run_skeleton.sh (a program of its own, built by
 * that script against build/libanima.a; not part of anima-bench):
 *   skel_bench procedural CAT SEED RES OUT.off   a procedural shape, meshed, as OFF, and its
 *                                                generating bones (head → tail segments) as
 *                                                OUT.off.true.skel
 *   skel_bench run MESH OUT.skel [VIEW]          the mean curvature skeleton; prints the time of
 *                                                the skeletonization alone; with VIEW also writes
 *                                                VIEW.ply (shape + skeleton bars) and VIEW.png
 *                                                (the skeleton drawn over a see-through shape)
 *   skel_bench remesh MESH RES OUT.off           a closed, manifold version of any mesh (open, soup):
 *                                                marching cubes of ½ − its generalized winding
 *                                                number on a grid of RES cells along the longest
 *                                                side — the route a Gaussian cloud's density
 *                                                takes too (models/skelebones/skeleton.h)
 *   skel_bench rig CAT SEED VIEW                 skeleton, then joints / tree / parts from the
 *                                                shape's own rig weights; VIEW.png shows the
 *                                                bones (joint → parent, blue) over the skeleton
 *   skel_bench chamfer A.skel B.skel MESH        symmetric Chamfer distance between two
 *                                                skeletons (their edges sampled every 0.2% of
 *                                                the mesh's diagonal; mean of both directions'
 *                                                mean nearest distances), % of that diagonal
 * The .skel text format ("nodes N edges E", N lines "x y z", E lines "a b") is the one
 * bench/cgal/cgal_skeleton.cpp writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "datasets/geometry/geometry.h"
#include "datasets/geometry/procedural.h"
#include "datasets/render/raster.h"
#include "models/skelebones/joints.h"
#include "models/skelebones/rigging.h"
#include "models/skelebones/skeleton.h"

static double diag_of(const DsMesh *m) {
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

static int write_skel(const char *path, const SbSkeleton *s) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "nodes %lld edges %lld\n", (long long)s->nnodes, (long long)s->nedges);
    for (int64_t i = 0; i < s->nnodes; i++)
        fprintf(f, "%.7g %.7g %.7g\n", s->nodes[3 * i], s->nodes[3 * i + 1], s->nodes[3 * i + 2]);
    for (int64_t e = 0; e < s->nedges; e++) fprintf(f, "%d %d\n", s->edges[2 * e], s->edges[2 * e + 1]);
    if (fclose(f)) return -1;
    return rename(tmp, path);
}

static int read_skel(const char *path, SbSkeleton *s) {
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long n, e;
    if (fscanf(f, "nodes %lld edges %lld", &n, &e) != 2 || n < 0 || e < 0 || n > 100000000 || e > 100000000) {
        fclose(f);
        return -1;
    }
    s->nnodes = n, s->nedges = e;
    s->nodes = malloc((size_t)(n + 1) * 3 * sizeof(float));
    s->edges = malloc((size_t)(e + 1) * 2 * sizeof(int32_t));
    int ok = s->nodes && s->edges;
    for (long long i = 0; ok && i < n; i++)
        ok = fscanf(f, "%f %f %f", &s->nodes[3 * i], &s->nodes[3 * i + 1], &s->nodes[3 * i + 2]) == 3;
    for (long long i = 0; ok && i < e; i++)
        ok = fscanf(f, "%d %d", &s->edges[2 * i], &s->edges[2 * i + 1]) == 2 && s->edges[2 * i] >= 0 &&
             s->edges[2 * i] < n && s->edges[2 * i + 1] >= 0 && s->edges[2 * i + 1] < n;
    fclose(f);
    if (!ok) sb_skeleton_free(s);
    return ok ? 0 : -1;
}

/* points along the edges every `step` (the nodes included) */
static float *sample(const SbSkeleton *s, double step, int64_t *np) {
    int64_t cap = s->nnodes + 16, n = 0;
    float *p = malloc((size_t)cap * 3 * sizeof *p);
    if (!p) return NULL;
    memcpy(p, s->nodes, (size_t)s->nnodes * 3 * sizeof *p);
    n = s->nnodes;
    for (int64_t e = 0; e < s->nedges; e++) {
        const float *a = s->nodes + 3 * s->edges[2 * e], *b = s->nodes + 3 * s->edges[2 * e + 1];
        double l = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
        int k = (int)(l / step);
        for (int i = 1; i <= k; i++) {
            if (n == cap) {
                cap *= 2;
                float *q = realloc(p, (size_t)cap * 3 * sizeof *q);
                if (!q) return free(p), NULL;
                p = q;
            }
            double t = (double)i / (k + 1);
            for (int c = 0; c < 3; c++) p[3 * n + c] = (float)(a[c] + t * (b[c] - a[c]));
            n++;
        }
    }
    *np = n;
    return p;
}

static double mean_nearest(const float *a, int64_t na, const float *b, int64_t nb) {
    double sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (int64_t i = 0; i < na; i++) {
        double best = INFINITY;
        for (int64_t j = 0; j < nb; j++) {
            double d0 = a[3 * i] - b[3 * j], d1 = a[3 * i + 1] - b[3 * j + 1], d2 = a[3 * i + 2] - b[3 * j + 2];
            double d = d0 * d0 + d1 * d1 + d2 * d2;
            if (d < best) best = d;
        }
        sum += sqrt(best);
    }
    return na ? sum / (double)na : 0;
}

/* prefix.ply and prefix.png: the skeleton (and rig) drawn over the shape (sb_skeleton_view) */
static int view(const char *prefix, const DsMesh *m, const SbSkeleton *s, double diag, const SbRig *rig) {
    (void)diag;
    char ply[4096], png[4096], err[256];
    snprintf(ply, sizeof ply, "%s.ply", prefix);
    snprintf(png, sizeof png, "%s.png", prefix);
    int rc = sb_skeleton_view(ply, png, 640, m, s, rig, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    return rc;
}

int main(int argc, char **argv) {
    char err[512];
    if (argc == 6 && !strcmp(argv[1], "procedural")) {
        DsProceduralShape sh;
        if (ds_procedural_make(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), &sh, err, sizeof err))
            return fprintf(stderr, "%s\n", err), 1;
        int rc = ds_mesh_write(argv[5], &sh.mesh, true, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        SbSkeleton t = {0};
        t.nnodes = 2 * sh.nbones, t.nedges = sh.nbones;
        t.nodes = malloc((size_t)t.nnodes * 3 * sizeof(float));
        t.edges = malloc((size_t)t.nedges * 2 * sizeof(int32_t));
        if (!t.nodes || !t.edges) return fprintf(stderr, "out of memory\n"), 1;
        for (int b = 0; b < sh.nbones; b++) {
            memcpy(t.nodes + 6 * b, sh.bones[b].head, 3 * sizeof(float));
            memcpy(t.nodes + 6 * b + 3, sh.bones[b].tail, 3 * sizeof(float));
            t.edges[2 * b] = 2 * b, t.edges[2 * b + 1] = 2 * b + 1;
        }
        char tp[4096];
        snprintf(tp, sizeof tp, "%s.true.skel", argv[5]);
        if (!rc && write_skel(tp, &t)) {
            fprintf(stderr, "%s: cannot write\n", tp);
            rc = 1;
        }
        sb_skeleton_free(&t);
        ds_procedural_free(&sh);
        return rc ? 1 : 0;
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "run")) {
        DsMesh m;
        if (ds_mesh_read(argv[2], &m, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
        SbSkeleton s;
        SbSkelOptions so;
        sb_skel_defaults(&so);
        /* SKEL_POLES=ray: the ray poles instead of CGAL's Voronoi poles (the default), for comparing the two */
        const char *pe = getenv("SKEL_POLES");
        so.voronoi_poles = !(pe && !strcmp(pe, "ray"));
        double t0 = base_now();
        clock_t c0 = clock();
        if (sb_skeleton_mcf(&m, &so, &s, err, sizeof err)) return fprintf(stderr, "%s: %s\n", argv[2], err), 1;
        double dt = base_now() - t0, cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
        int64_t cycles;
        int comps = sb_skeleton_components(&s, &cycles);
        printf("anima_seconds %.4f cpu_seconds %.4f nodes %lld edges %lld components %d cycles %lld iterations %d vertices %lld\n", dt, cpu,
               (long long)s.nnodes, (long long)s.nedges, comps, (long long)cycles, s.iterations, (long long)m.nv);
        if (write_skel(argv[3], &s)) return fprintf(stderr, "%s: cannot write\n", argv[3]), 1;
        if (argc == 5 && view(argv[4], &m, &s, diag_of(&m), NULL)) return 1;
        sb_skeleton_free(&s), ds_mesh_free(&m);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "rig")) {
        DsProceduralShape sh;
        if (ds_procedural_make(argv[2], strtoull(argv[3], NULL, 10), 40, &sh, err, sizeof err))
            return fprintf(stderr, "%s\n", err), 1;
        SbSkeleton s;
        SbRig r;
        if (sb_skeleton_mcf(&sh.mesh, NULL, &s, err, sizeof err) ||
            sb_rig_from_skeleton(&s, sh.weights, sh.nbones, NULL, &r, err, sizeof err))
            return fprintf(stderr, "%s\n", err), 1;
        printf("%d joints, root %d, %d parts\n", r.njoints, r.root, r.nparts);
        for (int p = 0; p < r.nparts; p++) {
            printf("part %d:", p);
            for (int j = 0; j < r.njoints; j++)
                if (r.part[p * r.njoints + j]) printf(" %d", j);
            printf("\n");
        }
        int rc = view(argv[4], &sh.mesh, &s, s.diag, &r);
        sb_rig_free(&r), sb_skeleton_free(&s), ds_procedural_free(&sh);
        return rc ? 1 : 0;
    }
    if (argc == 5 && !strcmp(argv[1], "remesh")) {
        DsMesh m, out;
        if (ds_mesh_read(argv[2], &m, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
        int res = atoi(argv[3]);
        if (res < 8 || res > 512) return fprintf(stderr, "RES must be in [8, 512]\n"), 1;
        if (sb_remesh_winding(&m, res, &out, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
        int rc = ds_mesh_write(argv[4], &out, true, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        printf("remeshed %s: %lld vertices, %lld faces\n", argv[2], (long long)out.nv, (long long)out.nf);
        ds_mesh_free(&m), ds_mesh_free(&out);
        return rc ? 1 : 0;
    }
    if (argc == 5 && !strcmp(argv[1], "chamfer")) {
        SbSkeleton a, b;
        DsMesh m;
        if (read_skel(argv[2], &a) || read_skel(argv[3], &b)) return fprintf(stderr, "cannot read a skeleton\n"), 1;
        if (ds_mesh_read(argv[4], &m, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
        double diag = diag_of(&m);
        int64_t na, nb;
        float *pa = sample(&a, 0.002 * diag, &na), *pb = sample(&b, 0.002 * diag, &nb);
        if (!pa || !pb) return fprintf(stderr, "out of memory\n"), 1;
        double ab = mean_nearest(pa, na, pb, nb), ba = mean_nearest(pb, nb, pa, na);
        printf("chamfer_pct %.3f a_to_b_pct %.3f b_to_a_pct %.3f\n", 100 * 0.5 * (ab + ba) / diag, 100 * ab / diag,
               100 * ba / diag);
        free(pa), free(pb), sb_skeleton_free(&a), sb_skeleton_free(&b), ds_mesh_free(&m);
        return 0;
    }
    fprintf(stderr, "usage: skel_bench procedural CAT SEED RES OUT.off | run MESH OUT.skel [VIEW] | chamfer A B MESH\n");
    return 2;
}
