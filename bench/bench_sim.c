/* bench/bench_sim.c — the simulator's speed lines (issue 7, item 7), a program of its own
 * (bench/run_sim.sh runs it; bench/bench_main.c's binary does not link it, see the Makefile).
 *
 * Cases (one object, 16 handles + the constant one, stable neo-Hookean, floor contact by penalty
 * on the 1302 mesh vertices, the drop of tests/test_sim.c: cactus, 1327 cubature points):
 *   sim_drop_full       all cubature points
 *   sim_drop_cubature   the optimized set (sim/cubature.h; its build, turned training drops included,
 *                       is not timed, printed apart)
 *   sim_sag_reduced, sim_sag_fem   the sag scene (scenes/sag.json: pinned top under gravity),
 *                       reduced vs tetrahedral FEM (sim/fem.h) per implicit Euler step
 *   sim_pile            three deformables piling up (scenes/pile.json), IPC contact between them:
 *                       the frames with contact pairs in reach; then sim_pile_cap1, _cap2, _cap4:
 *                       the real-time mode (a fixed cap of Newton iterations per frame), each with
 *                       "check sim_pile_capN_rmse <% of the diagonal>" against the converged run;
 *                       sim_pile_cap1, _cap2, _cap4 named: that cap alone, no RMSE; sim_pile_conv
 *                       named: the converged run alone
 *   sim_pile10          ten objects piling up (scenes/pile10.json): converged, then caps 1 and 2 with
 *                       their RMSE against it; sim_pile10_cap1, _cap2: one cap alone, no RMSE
 *                       sim_pile and sim_pile10 also run cap 1 from BENCH_STARTS (6) starts with every
 *                       object moved horizontally by up to 2 mm (seeded) and print "starts <name>
 *                       <mean_ms> <median_ms> <n>" over the starts' medians: under a cap the trajectory
 *                       and its cost are chaotic, so that mean is the figure to quote;
 *                       sim_pile_cap1_starts, sim_pile10_cap1_starts named: the starts alone
 * The pile cases also print "parts <name> ..." (broad phase, pairs, Hessians, solves per frame).
 * Each prints "case <name> <median_ms> <n>" with the median over frames of the wall time, and
 * "cpu <name> <median_ms>" with the median of the process CPU time (all threads: on a shared
 * machine the wall clock also measures the other users). Then:
 *   ratio sim_vs_fem <reduced/fem>           per-frame time on the sag scene (wall medians)
 *   check cubature_traj <max dev / motion>   drop trajectory, optimized vs full set
 *   check sag_tip <reduced> <fem> <rel diff> static tip displacement (m) under gravity; only
 *                                            when the case sim_sag_tip is named (~30 s)
 * Usage: anima-bench-sim [case ...]; BENCH_FRAMES (default 60) frames per reduced case; BENCH_START k
 * runs the named single-cap pile cases from perturbed start k (0: the scene as shipped);
 * BENCH_FEM_QUALITY the TetGen radius-edge bound (3); BENCH_CUB_POINTS, BENCH_CUB_TAU the cubature's
 * max_points and tau (sim/cubature.h's defaults). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "bench/bench_stats.h"
#include "base/clock.h"
#include "sim/cubature.h"
#include "sim/fem.h"
#include "sim/scene.h"
#include "sim/solver.h"
#include "sim/world.h"
#include "tensor/tensor.h"

static bool wanted(int argc, char **argv, const char *name) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name)) return true;
    return false;
}
static void die(const char *what, const char *err) {
    fprintf(stderr, "bench_sim: %s: %s\n", what, err);
    exit(1);
}

/* the drop of tests/test_sim.c (drop_object("rbf", 16, 30, 0.6)) */
static void drop_object(SimObject *o) {
    SimProceduralOptions po;
    sim_procedural_defaults(&po);
    po.category = "cactus", po.kind = "rbf", po.handles = 16, po.cubature_res = 30, po.mesh_res = 32;
    SimSkinning sk;
    char err[256];
    if (sim_skinning_procedural(&po, &sk, err, sizeof err)) die("skinning", err);
    SimMaterial mat = {.E = 5e4, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    pose.scale = 0.5, pose.translate[1] = 0.6;
    double deg[3] = {0, 0, 20};
    sim_pose_euler(&pose, deg);
    if (sim_object_init(o, &sk, &mat, &pose, err, sizeof err)) die("init", err);
    sim_skinning_free(&sk);
    o->gravity[1] = -9.81;
    SimPlane floor = {.normal = {0, 1, 0}, .offset = 0, .stiffness = 1e6};
    if (sim_object_add_plane(o, &floor, err, sizeof err)) die("plane", err);
}

/* Steps `frames` frames; fills per-frame wall/CPU ms and (when traj) the vertex positions. */
static void run_frames(SimObject *o, int frames, double *wall, double *cpu, double *traj, int *hessians) {
    char err[256];
    *hessians = 0;
    for (int f = 0; f < frames; f++) {
        double w0 = base_now(), c0 = base_cpu_now();
        if (sim_object_step(o, 0.01, err, sizeof err)) die("step", err);
        wall[f] = 1e3 * (base_now() - w0), cpu[f] = 1e3 * (base_cpu_now() - c0);
        *hessians += o->last.hessians;
        if (traj) sim_object_vertices(o, traj + (size_t)f * 3 * (size_t)o->nv);
    }
}

/* One run of a pile scene: the frames with at least one contact pair within reach are timed
 * (free flight costs what the objects cost alone). cap > 0: Newton iterations per frame at most
 * (real-time mode; 0: the scene's settings). Prints "case/cpu <name>", an info line and the
 * per-frame cost broken down; keeps every frame's rendered vertices when keep. */
typedef struct {
    double *x;       /* frames × vertices × 3 */
    int64_t n;
    double diag, dmin;
    double cpu_median; /* ms per contact frame */
    double parts[5];   /* broad phase + CCD, pairs, Hessians, solves, rest: ms, means per contact frame */
} PileRun;

/* Start k > 0 of a scene: every object's initial position moved horizontally by a seeded offset
 * of at most PERTURB_M (uniform in the disc; philox keyed by (k, object)); start 0 is the scene as
 * shipped. Under a Newton cap the pile's trajectory, and with it the cost of a frame, is chaotic
 * (docs/contact.md: 14.5–40.2 ms at cap 1 over six starts 2 mm apart), so the figure to quote is
 * the mean over starts, not one trajectory. Horizontal, so no object starts nearer the floor. */
#define PERTURB_M 0.002
static void perturb_scene(SimScene *sc, int k) {
    if (k <= 0) return;
    for (int o = 0; o < sc->nobjects; o++) {
        uint32_t r[4];
        tensor_philox(0x50113ull + (uint64_t)k, (uint64_t)o, 0, r);
        double rad = PERTURB_M * sqrt(r[0] / 4294967296.0), ang = 2 * M_PI * (r[1] / 4294967296.0);
        sc->objects[o].translate[0] += rad * cos(ang), sc->objects[o].translate[2] += rad * sin(ang);
    }
}

/* quiet: no per-run lines (the starts' summary prints instead) */
static void run_pile(const char *scene, int start, int cap, const char *name, bool keep, bool quiet, PileRun *out) {
    SimScene sc;
    char err[512];
    memset(out, 0, sizeof *out);
    if (sim_scene_load(scene, &sc, err, sizeof err)) die("scene", err);
    perturb_scene(&sc, start);
    SimObject *objs = calloc((size_t)sc.nobjects, sizeof *objs);
    if (!objs || sim_scene_build(&sc, "scenes", objs, err, sizeof err)) die("scene", err);
    if (cap > 0)
        for (int k = 0; k < sc.nobjects; k++) objs[k].newton.max_iters = cap;
    SimWorld world = {0};
    if (sim_world_init(&world, objs, sc.nobjects, NULL, 0, sc.planes, sc.nplanes, &sc.contact, err, sizeof err))
        die("world", err);
    int steps = (int)sc.steps, ncontact = 0, iters = 0, hess = 0, fact = 0, prods = 0, unconverged = 0, bt = 0, swept = 0;
    double *cw = malloc(sizeof(double) * (size_t)steps), *cc = malloc(sizeof(double) * (size_t)steps), dmin = INFINITY;
    double part[5] = {0, 0, 0, 0, 0}; /* broad, pairs, Hessians, solves, rest: sums over contact frames */
    int64_t pts = 0, nv = 0, proxy = 0;
    for (int k = 0; k < sc.nobjects; k++) {
        pts += objs[k].nc, nv += objs[k].nv;
        const SimProxy *px = sim_world_proxy(&world, k);
        proxy += px ? px->np : objs[k].nv;
    }
    double *x = keep ? malloc(sizeof(double) * 3 * (size_t)(nv * steps)) : NULL;
    if (keep && !x) die("pile", "out of memory");
    {
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, *v = malloc(sizeof(double) * 3 * (size_t)(nv + 1));
        int64_t off = 0;
        for (int k = 0; k < sc.nobjects; k++) {
            sim_object_vertices(&objs[k], v + 3 * off);
            off += objs[k].nv;
        }
        for (int64_t q = 0; q < nv; q++)
            for (int i = 0; i < 3; i++) lo[i] = fmin(lo[i], v[3 * q + i]), hi[i] = fmax(hi[i], v[3 * q + i]);
        out->diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
        free(v);
    }
    for (int f = 0; f < steps; f++) {
        double w0 = base_now(), c0 = base_cpu_now();
        if (sim_world_step(&world, sc.dt, err, sizeof err)) die("pile step", err);
        double w1 = 1e3 * (base_now() - w0), c1 = 1e3 * (base_cpu_now() - c0);
        const SimWorldStats *st = &world.last;
        dmin = fmin(dmin, st->min_distance);
        if (!(st->min_distance > 0)) die(name, "a pair distance reached 0: a crossing");
        if (getenv("BENCH_VERBOSE"))
            printf("frame %d: %.1f ms, %d iterations, %d Hessians, %d factorizations, %d CG products (%d negative), %d CCD-limited, %d sweep-limited, %d backtracks, "
                   "%lld candidates, %lld active, converged %d\n", f, c1, st->iters, st->hessians, st->factorizations,
                   st->cg_products, st->negative, st->ccd_limited, st->sweep_limited, st->backtracks, (long long)st->candidates, (long long)st->active,
                   st->converged);
        if (st->active > 0 || st->candidates > 0) {
            cw[ncontact] = w1, cc[ncontact] = c1, ncontact++, iters += st->iters, hess += st->hessians,
            fact += st->factorizations, prods += st->cg_products, unconverged += !st->converged, bt += st->backtracks,
            swept += st->sweep_limited;
            part[0] += st->t_broad, part[1] += st->t_pairs, part[2] += st->t_hessian, part[3] += st->t_solve;
            part[4] += st->t_cpu - st->t_broad - st->t_pairs - st->t_hessian - st->t_solve;
        }
        if (keep) {
            int64_t off = 0;
            for (int k = 0; k < sc.nobjects; k++) {
                sim_object_vertices(&objs[k], x + 3 * ((int64_t)f * nv + off));
                off += objs[k].nv;
            }
        }
    }
    if (!ncontact) die(name, "no frame had contact pairs");
    /* at the end: the largest horizontal distance between two objects' centres (the pile's
     * spread) and the fastest vertex */
    double spread = 0, vmax = 0;
    {
        double (*c)[3] = calloc((size_t)sc.nobjects, sizeof *c), *v = malloc(sizeof(double) * 3 * (size_t)(nv + 1));
        for (int k = 0; k < sc.nobjects && c && v; k++) {
            sim_object_vertices(&objs[k], v);
            for (int64_t q = 0; q < objs[k].nv; q++)
                for (int i = 0; i < 3; i++) c[k][i] += v[3 * q + i] / (double)objs[k].nv;
            for (int64_t q = 0; q < objs[k].nv; q++) {
                double u[3] = {0, 0, 0};
                for (int i = 0; i < 3; i++)
                    for (int64_t j = 0; j < objs[k].nb; j++) u[i] += objs[k].Bv[q * objs[k].nb + j] * objs[k].zdot[i * objs[k].nb + j];
                vmax = fmax(vmax, sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]));
            }
        }
        for (int a = 0; a < sc.nobjects && c; a++)
            for (int b = a + 1; b < sc.nobjects; b++)
                spread = fmax(spread, hypot(c[a][0] - c[b][0], c[a][2] - c[b][2]));
        free(c), free(v);
    }
    out->cpu_median = bench_median(cc, ncontact);
    for (int i = 0; i < 5; i++) out->parts[i] = 1e3 * part[i] / ncontact;
    if (!quiet) {
        printf("info %s %d objects, %lld cubature points in all, %lld contact points (proxies), %d of %d frames in contact, "
               "%.1f Newton iterations (%.1f CG products each), %.1f elastic Hessians, %.1f factorizations and %.1f backtracks per "
               "contact frame, %d sweep-limited iterations, %d frames unconverged, min pair distance %.3g m (d̂ %.3g m, κ %.3g, μ %.2g); at the end the "
               "centres %.3f m apart horizontally at most, the fastest vertex at %.3f m/s\n",
               name, sc.nobjects, (long long)pts, (long long)proxy, ncontact, steps, (double)iters / ncontact,
               (double)prods / fmax(iters, 1), (double)hess / ncontact, (double)fact / ncontact, (double)bt / ncontact, swept, unconverged, dmin, world.dhat,
               world.kappa, sc.contact.mu, spread, vmax);
        printf("parts %s ms per contact frame (CPU, means): broad phase + CCD %.2f, pairs %.2f, Hessians %.2f, solves %.2f, "
               "rest %.2f\n", name, 1e3 * part[0] / ncontact, 1e3 * part[1] / ncontact, 1e3 * part[2] / ncontact,
               1e3 * part[3] / ncontact, 1e3 * part[4] / ncontact);
        printf("case %s %.4f %d\ncpu %s %.4f\n", name, bench_median(cw, ncontact), ncontact, name, out->cpu_median);
    }
    out->x = x, out->n = 3 * nv * steps, out->dmin = dmin;
    free(cw), free(cc);
    sim_world_free(&world);
    for (int k = 0; k < sc.nobjects; k++) sim_object_free(&objs[k]);
    free(objs);
    sim_scene_free(&sc);
}

/* a capped run's deviation from the converged one: RMSE over every rendered vertex of every
 * frame, % of the pile's bounding-box diagonal at the start */
static void print_cap_rmse(const char *name, const PileRun *conv, const PileRun *rt) {
    double se = 0;
    for (int64_t k = 0; k < conv->n; k++) se += (rt->x[k] - conv->x[k]) * (rt->x[k] - conv->x[k]);
    printf("check %s_rmse %.3f %% of the diagonal %.3f m (min pair distance %.3g m)\n", name,
           100 * sqrt(se / (double)(conv->n / 3)) / conv->diag, conv->diag, rt->dmin);
}

/* cap 1 over the perturbed starts 1..n of a scene (perturb_scene): "starts <name> <mean> <median>
 * <n>" (ms per contact frame: the mean and the median of the starts' medians) and the parts'
 * means over the starts */
static void run_starts(const char *scene, int cap, const char *name, int n) {
    if (n <= 0) return;
    double *m = malloc(sizeof(double) * (size_t)n), parts[5] = {0, 0, 0, 0, 0}, sum = 0, lo = INFINITY, hi = 0;
    if (!m) die(name, "out of memory");
    for (int k = 1; k <= n; k++) {
        PileRun r;
        run_pile(scene, k, cap, name, false, true, &r);
        m[k - 1] = r.cpu_median, sum += r.cpu_median, lo = fmin(lo, r.cpu_median), hi = fmax(hi, r.cpu_median);
        for (int i = 0; i < 5; i++) parts[i] += r.parts[i] / n;
    }
    printf("parts %s_starts ms per contact frame (CPU, means over %d starts): broad phase + CCD %.2f, pairs %.2f, "
           "Hessians %.2f, solves %.2f, rest %.2f\n", name, n, parts[0], parts[1], parts[2], parts[3], parts[4]);
    printf("info %s_starts %d starts moved by up to %.0f mm: CPU ms per contact frame (medians) %.2f to %.2f\n", name, n,
           1e3 * PERTURB_M, lo, hi);
    printf("starts %s %.4f %.4f %d\n", name, sum / n, bench_median(m, n), n);
    free(m);
}

int main(int argc, char **argv) {
    int frames = getenv("BENCH_FRAMES") ? atoi(getenv("BENCH_FRAMES")) : 60;
    if (frames < 5) frames = 5;
    int cap = frames > 40 ? frames : 40; /* the sag cases time up to 30 and 8 frames */
    double *wall = malloc(sizeof(double) * (size_t)cap), *cpu = malloc(sizeof(double) * (size_t)cap);
    double *traj_full = NULL;
    int64_t nv = 0;
    SimObject ref;
    bool have_full = false;
    if (wanted(argc, argv, "sim_drop_full") || wanted(argc, argv, "sim_drop_cubature")) {
        drop_object(&ref);
        nv = ref.nv;
        traj_full = malloc(sizeof(double) * 3 * (size_t)nv * (size_t)frames);
        int h;
        run_frames(&ref, frames, wall, cpu, traj_full, &h);
        have_full = true;
        if (wanted(argc, argv, "sim_drop_full")) {
            printf("info sim_drop_full %lld handles + 1, %lld cubature points, %lld contact points, %.2f Hessians/frame\n",
                   (long long)ref.m, (long long)ref.nc, (long long)ref.nv, (double)h / frames);
            double mc = bench_median(cpu, frames);
            printf("case sim_drop_full %.4f %d\ncpu sim_drop_full %.4f\n", bench_median(wall, frames), frames, mc);
        }
    }
    if (wanted(argc, argv, "sim_drop_cubature")) {
        SimObject o;
        drop_object(&o);
        SimCubatureOptions co;
        sim_cubature_defaults(&co);
        /* the trade-off curve (sim/cubature.h): BENCH_CUB_POINTS, BENCH_CUB_TAU override */
        if (getenv("BENCH_CUB_POINTS")) co.max_points = atoi(getenv("BENCH_CUB_POINTS"));
        if (getenv("BENCH_CUB_TAU")) co.tau = atof(getenv("BENCH_CUB_TAU"));
        SimCubature cub;
        char err[256];
        if (sim_cubature_optimize(&o, &co, &cub, err, sizeof err)) die("cubature", err);
        double mx, mean, dmx = NAN, dmean = NAN;
        sim_cubature_heldout_error(&o, &cub, &co, 4, &mx, &mean);
        /* held-out simulated poses: two more turned drops from another rotation stream */
        SimCubatureOptions ho = co;
        ho.drops = 2;
        double *Zh;
        int64_t Th;
        if (sim_cubature_drop_poses(&o, &ho, co.seed + 1000, &Zh, &Th, err, sizeof err)) die("cubature", err);
        sim_cubature_pose_error(&o, &cub, Th, Zh, &dmx, &dmean);
        free(Zh);
        printf("info sim_drop_cubature %lld of %lld points, %lld training poses (%d turned drops, tau %g s), training "
               "residual %.3g, held-out force error: random poses max %.3g mean %.3g, drop poses max %.3g mean %.3g; "
               "built in %.1f s (%.1f s of it the drops)\n",
               (long long)cub.k, (long long)o.nc, (long long)cub.poses, co.drops, co.tau, cub.train_err, mx, mean, dmx,
               dmean, cub.seconds, cub.run_seconds);
        if (sim_object_set_cubature(&o, cub.k, cub.idx, cub.w, err, sizeof err)) die("cubature", err);
        double *traj = malloc(sizeof(double) * 3 * (size_t)nv * (size_t)frames);
        int h;
        run_frames(&o, frames, wall, cpu, traj, &h);
        printf("case sim_drop_cubature %.4f %d\ncpu sim_drop_cubature %.4f\n", bench_median(wall, frames), frames,
               bench_median(cpu, frames));
        /* max over frames and vertices of ‖x_S − x_full‖ / max ‖x_full − X‖ */
        double dev = 0, amp = 0;
        for (int f = 0; f < frames; f++)
            for (int64_t v = 0; v < nv; v++) {
                const double *a = traj + ((size_t)f * (size_t)nv + (size_t)v) * 3, *b = traj_full + ((size_t)f * (size_t)nv + (size_t)v) * 3;
                double d = 0, m = 0;
                for (int i = 0; i < 3; i++) d += (a[i] - b[i]) * (a[i] - b[i]), m += (b[i] - o.Xv[3 * v + i]) * (b[i] - o.Xv[3 * v + i]);
                dev = fmax(dev, sqrt(d)), amp = fmax(amp, sqrt(m));
            }
        printf("check cubature_traj %.3g (max deviation %.3g m over %d frames, motion %.3g m)\n", dev / amp, dev, frames,
               amp);
        free(traj);
        sim_cubature_free(&cub);
        sim_object_free(&o);
    }
    if (have_full) sim_object_free(&ref);
    free(traj_full);
    if (wanted(argc, argv, "sim_sag_reduced") || wanted(argc, argv, "sim_sag_fem") || wanted(argc, argv, "sim_vs_fem") ||
        wanted(argc, argv, "sim_sag_tip")) {
        SimScene sc;
        char err[512];
        const char *scene = getenv("BENCH_SAG_SCENE") ? getenv("BENCH_SAG_SCENE") : "scenes/sag.json";
        if (sim_scene_load(scene, &sc, err, sizeof err)) die("scene", err);
        SimObject o;
        if (sim_scene_build(&sc, "scenes", &o, err, sizeof err)) die("scene", err);
        /* the FEM on the same surface mesh (world coordinates), the same pinned region */
        double *nodes;
        int32_t *tets;
        int64_t nn, nt;
        double t0 = base_now();
        /* radius-edge bound 3: 21k nodes on this mesh, the tip within 3% of the 1.5 mesh's (48k
         * nodes, 10 s a step); BENCH_FEM_QUALITY overrides */
        double quality = getenv("BENCH_FEM_QUALITY") ? atof(getenv("BENCH_FEM_QUALITY")) : 3.0;
        if (sim_fem_tetrahedralize(o.Xv, o.nv, o.faces, o.nf, quality, 0, &nodes, &nn, &tets, &nt, err, sizeof err))
            die("tetgen", err);
        double t_tet = base_now() - t0;
        SimFem fem;
        if (sim_fem_init(&fem, nodes, nn, tets, nt, &sc.objects[0].material, err, sizeof err)) die("fem", err);
        free(nodes), free(tets);
        memcpy(fem.gravity, o.gravity, sizeof fem.gravity);
        int64_t pinned = sim_fem_fix(&fem, &o.dirichlet[0].region);
        printf("info sim_sag reduced: %lld handles + 1, %lld cubature points; fem: %lld nodes, %lld tets (tetgen %.2f s), "
               "%lld pinned nodes\n",
               (long long)o.m, (long long)o.nc, (long long)nn, (long long)nt, t_tet, (long long)pinned);
        /* per-frame time at the scene's dt */
        int fr = frames < 30 ? frames : 30, ff = 4;
        double red_ms = NAN, fem_ms = NAN;
        for (int f = 0; f < fr; f++) {
            double w0 = base_now(), c0 = base_cpu_now();
            if (sim_object_step(&o, sc.dt, err, sizeof err)) die("step", err);
            wall[f] = 1e3 * (base_now() - w0), cpu[f] = 1e3 * (base_cpu_now() - c0);
        }
        red_ms = bench_median(wall, fr);
        printf("case sim_sag_reduced %.4f %d\ncpu sim_sag_reduced %.4f\n", red_ms, fr, bench_median(cpu, fr));
        int fem_it = 0;
        for (int f = 0; f < ff; f++) {
            double w0 = base_now(), c0 = base_cpu_now();
            if (sim_fem_step(&fem, sc.dt, err, sizeof err)) die("fem step", err);
            wall[f] = 1e3 * (base_now() - w0), cpu[f] = 1e3 * (base_cpu_now() - c0);
            fem_it += fem.last.iters;
        }
        fem_ms = bench_median(wall, ff);
        printf("case sim_sag_fem %.4f %d\ncpu sim_sag_fem %.4f (%.1f Newton iterations per step)\n", fem_ms, ff,
               bench_median(cpu, ff), (double)fem_it / ff);
        printf("ratio sim_vs_fem %.4f\n", red_ms / fem_ms);
        /* static equilibrium: quasi-static steps (velocity zeroed; dt 1000 s, so the inertia term
         * is a proximal weight M/dt² that barely damps even the softest modes, and it vanishes at
         * the fixed point) until no vertex moves more than 1e-7 of the object's diagonal. With
         * dt 10 s the soft modes (arms bending) crept by ~8% a step and 30 steps stopped far from
         * equilibrium. The static comparison takes several FEM solves: only when named. */
        bool tip = false;
        for (int i = 1; i < argc; i++) tip |= !strcmp(argv[i], "sim_sag_tip");
        bool red_done = !tip, fem_done = !tip;
        int red_steps = 0, fem_steps = 0;
        const double dts = 1000.0;
        double *xa = malloc(sizeof(double) * 3 * (size_t)o.nv), *xb = malloc(sizeof(double) * 3 * (size_t)o.nv);
        for (int k = 0; k < 100 && !(red_done && fem_done); k++) {
            if (!red_done) {
                sim_object_vertices(&o, xa);
                memset(o.zdot, 0, sizeof(double) * (size_t)o.n);
                if (sim_object_step(&o, dts, err, sizeof err)) die("static", err);
                sim_object_vertices(&o, xb);
                double mv = 0;
                for (int64_t q = 0; q < 3 * o.nv; q++) mv = fmax(mv, fabs(xb[q] - xa[q]));
                red_done = mv < 1e-7 * o.diag, red_steps++;
                if (getenv("BENCH_VERBOSE")) printf("static reduced %d: max vertex move %.3g m\n", k, mv);
            }
            if (!fem_done) {
                memset(fem.v, 0, sizeof(double) * 3 * (size_t)fem.nn);
                if (sim_fem_step(&fem, dts, err, sizeof err)) die("fem static", err);
                double mv = 0;
                for (int64_t q = 0; q < 3 * fem.nn; q++) mv = fmax(mv, fabs(fem.v[q]) * dts);
                fem_done = mv < 1e-7 * fem.diag, fem_steps++;
                if (getenv("BENCH_VERBOSE")) printf("static fem %d: max node move %.3g m\n", k, mv);
            }
        }
        free(xa), free(xb);
        if (tip)
            printf("info sag static solve: reduced %s after %d steps, fem %s after %d (dt %g s)\n",
                   red_done ? "converged" : "NOT converged", red_steps, fem_done ? "converged" : "NOT converged",
                   fem_steps, dts);
        if (tip) {
        /* the tip: the mesh vertex lowest at rest (the input vertices are the FEM's first nodes) */
        int64_t tv = 0;
        for (int64_t v = 0; v < o.nv; v++)
            if (o.Xv[3 * v + 1] < o.Xv[3 * tv + 1]) tv = v;
        double *x = malloc(sizeof(double) * 3 * (size_t)o.nv), ur = 0, uf = 0, ury, ufy;
        sim_object_vertices(&o, x);
        for (int i = 0; i < 3; i++) {
            ur += (x[3 * tv + i] - o.Xv[3 * tv + i]) * (x[3 * tv + i] - o.Xv[3 * tv + i]);
            uf += (fem.x[3 * tv + i] - fem.X[3 * tv + i]) * (fem.x[3 * tv + i] - fem.X[3 * tv + i]);
        }
        ury = x[3 * tv + 1] - o.Xv[3 * tv + 1], ufy = fem.x[3 * tv + 1] - fem.X[3 * tv + 1];
        {
            double vsum = 0;
            for (int64_t t = 0; t < fem.nt; t++) vsum += fem.vol[t];
            SimEnergy en = sim_object_energy(&o);
            double ef = sim_fem_elastic(&fem, fem.x, NULL), gf = 0;
            for (int64_t i = 0; i < fem.nn; i++) gf -= fem.mass[i] * 9.81 * -(fem.x[3 * i + 1] - fem.X[3 * i + 1]);
            printf("info sag mass reduced %.5g kg, fem %.5g kg (volume %.5g); static energy: reduced elastic %.4g gravity %.4g, "
                   "fem elastic %.4g gravity %.4g; last iters %d/%d, decrement %.3g/%.3g, failures %d/%d\n",
                   o.mass, fem.total_mass, vsum, en.elastic, en.gravity, ef, gf, o.last.iters, fem.last.iters,
                   o.last.decrement, fem.last.decrement, o.last.failures, fem.last.failures);
        }
        printf("check sag_tip %.5g %.5g %.3g (|u| reduced, fem in m, relative difference; u_y %.5g vs %.5g)\n", sqrt(ur),
               sqrt(uf), fabs(sqrt(ur) - sqrt(uf)) / sqrt(uf), ury, ufy);
        free(x);
        }
        sim_fem_free(&fem);
        sim_object_free(&o);
        sim_scene_free(&sc);
    }
    /* perturbed starts for the cap-1 lines (BENCH_STARTS, default 6; 0: none); BENCH_START k runs
     * the named single-cap cases below from start k instead of the shipped one */
    int nstarts = getenv("BENCH_STARTS") ? atoi(getenv("BENCH_STARTS")) : 6, start = getenv("BENCH_START") ? atoi(getenv("BENCH_START")) : 0;
    const char *pile = getenv("BENCH_PILE_SCENE") ? getenv("BENCH_PILE_SCENE") : "scenes/pile.json";
    if (wanted(argc, argv, "sim_pile")) {
        /* three deformables piling up (scenes/pile.json), converged (the scene's Newton settings) */
        PileRun conv;
        run_pile(pile, 0, 0, "sim_pile", true, false, &conv);
        /* real-time mode: a fixed cap of Newton iterations per frame; the trajectory's deviation
         * from the converged one: RMSE over every rendered vertex of every frame, % of the pile's
         * bounding-box diagonal at the start */
        const int caps[3] = {1, 2, 4};
        for (int c = 0; c < 3; c++) {
            char name[64];
            snprintf(name, sizeof name, "sim_pile_cap%d", caps[c]);
            PileRun rt;
            run_pile(pile, 0, caps[c], name, true, false, &rt);
            print_cap_rmse(name, &conv, &rt);
            free(rt.x);
            if (caps[c] == 1) run_starts(pile, 1, name, nstarts);
        }
        free(conv.x);
    }
    if (wanted(argc, argv, "sim_pile10")) {
        /* ten objects piling up (scenes/pile10.json), converged and real-time mode (caps 1 and
         * 2), with the capped runs' RMSE against the converged one as for sim_pile */
        PileRun conv;
        run_pile("scenes/pile10.json", 0, 0, "sim_pile10", true, false, &conv);
        for (int cap = 1; cap <= 2; cap++) {
            char name[64];
            snprintf(name, sizeof name, "sim_pile10_cap%d", cap);
            PileRun rt;
            run_pile("scenes/pile10.json", 0, cap, name, true, false, &rt);
            print_cap_rmse(name, &conv, &rt);
            free(rt.x);
            if (cap == 1) run_starts("scenes/pile10.json", 1, name, nstarts);
        }
        free(conv.x);
    }
    /* the converged three-object pile alone (not in the default run), no caps: for profiling
     * and side-by-side timing of the converged solve */
    if (argc > 1 && wanted(argc, argv, "sim_pile_conv")) {
        PileRun a;
        run_pile(pile, start, 0, "sim_pile_conv", false, false, &a);
    }
    /* one real-time cap of the three-object pile alone (not in the default run), no RMSE: for
     * profiling and side-by-side timing without the converged run */
    for (int cap = 1; cap <= 4 && argc > 1; cap *= 2) {
        char name[64];
        snprintf(name, sizeof name, "sim_pile_cap%d", cap);
        PileRun a;
        if (wanted(argc, argv, name)) run_pile(pile, start, cap, name, false, false, &a);
    }
    /* one real-time cap of the ten-object pile alone (not in the default run: the converged
     * line above takes minutes), for profiling and for the cap 1 vs cap 2 choice */
    for (int cap = 1; cap <= 2 && argc > 1; cap++) {
        char name[64];
        snprintf(name, sizeof name, "sim_pile10_cap%d", cap);
        PileRun a;
        if (wanted(argc, argv, name)) run_pile("scenes/pile10.json", start, cap, name, false, false, &a);
    }
    /* cap 1 over the perturbed starts alone (not in the default run): the figure the targets are
     * held to, without the converged runs */
    if (argc > 1 && wanted(argc, argv, "sim_pile_cap1_starts")) run_starts(pile, 1, "sim_pile_cap1", nstarts);
    if (argc > 1 && wanted(argc, argv, "sim_pile10_cap1_starts")) run_starts("scenes/pile10.json", 1, "sim_pile10_cap1", nstarts);
    free(wall), free(cpu);
    return 0;
}
