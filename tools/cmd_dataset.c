/* tools/cmd_dataset.c — `anima dataset make` builds the HDF5 training corpus (datasets/corpus/cache.h)
 * from the procedural shape families, or a cache of a folder of real meshes; `anima dataset
 * show` summarizes a cache or any mesh file and writes a PLY of one of its fields.
 *
 *   anima dataset make [--categories a,b,...] [--count N] [--seed S] [--out DIR] [--grid G]
 *                      [--surface N] [--sharp N] [--cubature-res R] [--family CATEGORY]
 *                      [--no-progress]
 *   anima dataset make --real DIR [--out DIR] [--surface N] [--sharp N] [--cubature-res R]
 *   anima dataset show FILE|DIR [--shape ID] [--check] [--ply OUT.ply --field F]
 *
 * Argument errors exit 2, file errors 1 with the reader's message, SIGINT/SIGTERM remove the
 * temporary files and exit 128+signal. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/interrupt.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/progress.h"
#include "datasets/corpus/cache.h"
#include "datasets/corpus/make.h"
#include "datasets/corpus/summary.h"
#include "datasets/geometry/geometry.h"
#include "datasets/mesh/mesh.h"
#include "datasets/geometry/procedural.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

#define NAME "anima dataset"
/* categories of a corpus, and of a cache's summary */
#define MAX_CATS DS_CORPUS_MAX_CATEGORIES

static const CmdArg NO_ARGS[] = {{0}};
static const CmdArgSpec DATASET = {
    "anima dataset", "make|show|motion [options]",
    "the training corpus and the motion benchmark (anima dataset make|show|motion --help)",
    NO_ARGS,
    "subcommands:\n"
    "  make   the HDF5 training corpus from the procedural shape families, or a cache of a folder of real meshes\n"
    "  show   a summary of a cache or of any mesh file, and a PLY of one of its fields\n"
    "  motion the multi-view motion benchmark of one character (D-NeRF / nerfstudio layout + gt.h5)\n",
    1, 1};


/* ---- make ------------------------------------------------------------------------------------ */

typedef struct {
    const char *categories[MAX_CATS];
    int ncat;
    int64_t count, grid, surface, sharp, cubature_res;
    uint64_t seed;
    const char *out, *family, *real;
    int progress; /* -1 auto, 0 off */
    char command[4096];
} MakeArgs;

static void print_table(const char *const *cats, int ncat, const int64_t counts[][MAX_CATS], const char *const *splits,
                        int nsplit) {
    printf("  %-12s", "category");
    for (int s = 0; s < nsplit; s++) printf(" %7s", splits[s]);
    printf(" %7s\n", "all");
    int64_t col[4] = {0};
    for (int c = 0; c < ncat; c++) {
        int64_t row = 0;
        printf("  %-12s", cats[c]);
        for (int s = 0; s < nsplit; s++) printf(" %7lld", (long long)counts[s][c]), row += counts[s][c], col[s] += counts[s][c];
        printf(" %7lld\n", (long long)row);
    }
    int64_t all = 0;
    printf("  %-12s", "all");
    for (int s = 0; s < nsplit; s++) printf(" %7lld", (long long)col[s]), all += col[s];
    printf(" %7lld\n", (long long)all);
}

/* a cache summary's table: its categories by its files, named files[] */
static void print_summary(const DsCacheSummary *s, const char *const *files) {
    const char *cats[MAX_CATS];
    for (int k = 0; k < s->ncat; k++) cats[k] = s->categories[k];
    print_table(cats, s->ncat, s->counts, files, s->nfiles);
}

/* a build's failure (rc < 0, err) or interruption (rc > 0) said on stderr: the exit status, or 0
 * when it succeeded */
static int failure_status(int rc, const char *err) {
    if (rc < 0) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    if (rc) {
        fprintf(stderr, NAME ": interrupted by signal %d; nothing written\n", (int)base_interrupt_signal);
        return 128 + base_interrupt_signal;
    }
    return 0;
}

static void on_progress(void *ctx, int64_t done, int64_t total) { base_progress_update(ctx, done, total, 0, 0, false); }

static int make_procedural(const MakeArgs *a) {
    /* logs: a line every 10 s or 10%, whichever comes first, and the last */
    BaseProgress pr = {.out = stderr, .name = NAME, .unit = "shapes", .count_suffix = " shapes", .rate_digits = 2,
                       .tty = isatty(STDERR_FILENO)};
    DsCorpusMakeOptions o = {.categories = a->categories, .ncat = a->ncat, .family = a->family, .count = a->count,
                             .seed = a->seed, .command = a->command, .cancel = &base_interrupt_signal,
                             .shape = {(int)a->grid, (int)a->cubature_res, a->surface, a->sharp},
                             .progress = a->progress != 0 ? on_progress : NULL, .ctx = &pr};
    DsCorpusMakeStats st;
    char err[2048];
    base_progress_begin(&pr, 0);
    double cpu0 = base_cpu_now();
    int rc = ds_corpus_make(a->out, &o, &st, err, sizeof err);
    base_progress_break(&pr);
    int status = failure_status(rc, err);
    if (status) return status;
    double wall = base_now() - pr.t0, cpu = base_cpu_now() - cpu0;
    printf("%lld shapes in %.1f s wall, %.1f s CPU (%d threads, %.2f shapes/s); %s/{train,val,test}.h5, %.1f MB\n",
           (long long)a->count, wall, cpu, omp_get_max_threads(), (double)a->count / fmax(wall, 1e-9), a->out,
           (double)st.bytes / 1e6);
    printf("mean %.0f vertices, %.0f triangles, %.0f cubature points a shape; %lld not watertight+manifold; "
           "max |cubature − mesh volume| %.2f%%\n",
           (double)st.verts / (double)a->count, (double)st.faces / (double)a->count,
           (double)st.cubature / (double)a->count, (long long)st.not_watertight, 100 * st.max_volume_error);
    const char *splits[3] = {ds_corpus_split_name(0), ds_corpus_split_name(1), ds_corpus_split_name(2)};
    print_table(a->categories, a->ncat, st.made, splits, 3);
    if (st.not_watertight) {
        fprintf(stderr, NAME ": %lld shapes are not watertight manifolds (raise --grid)\n", (long long)st.not_watertight);
        return 1;
    }
    return 0;
}

/* a line per mesh as it happens, also into a log file */
static void on_real_mesh(void *ctx, const DsRealMeshReport *r) {
    (void)ctx;
    if (r->skipped)
        printf("skipped  %s\n", r->skipped);
    else
        printf("%-8s %s: %lld vertices, %lld triangles, %s%s, %lld cubature points (%.3g vs mesh %.3g), %.2f s\n",
               "cached", r->path, (long long)r->nv, (long long)r->nf, r->watertight ? "watertight" : "not watertight",
               r->flipped ? ", was inside-out (flipped)" : "", (long long)r->n_cubature, r->cubature_volume,
               r->mesh_volume, r->seconds);
    fflush(stdout);
}

static int make_real(const MakeArgs *a) {
    DsRealMakeOptions o = {.folder = a->real, .n_surface = a->surface, .n_sharp = a->sharp,
                           .cubature_res = (int)a->cubature_res, .seed = a->seed, .command = a->command,
                           .cancel = &base_interrupt_signal, .report = on_real_mesh};
    char err[2048];
    double t0 = base_now(), cpu0 = base_cpu_now();
    int made, skipped;
    int rc = ds_corpus_make_real(a->out, &o, &made, &skipped, err, sizeof err);
    int status = failure_status(rc, err);
    if (status) return status;
    printf("%d meshes (%d skipped) in %.1f s wall, %.1f s CPU; %s/real.h5 (no rig weights: real meshes carry none)\n",
           made, skipped, base_now() - t0, base_cpu_now() - cpu0, a->out);
    return 0;
}

static int cmd_make(int argc, char **argv) {
    MakeArgs a = {.count = 100, .grid = 128, .surface = 4096, .sharp = 4096, .cubature_res = 128,
                  .out = "data/corpus", .progress = -1};
    int nall;
    const char *const *all = ds_procedural_categories(&nall);
    const char *catlist = NULL;
    bool no_progress = false;
    size_t used = snprintf(a.command, sizeof a.command, "anima dataset");
    for (int i = 0; i < argc && used < sizeof a.command; i++)
        used += snprintf(a.command + used, sizeof a.command - used, " %s", argv[i]);
    const CmdArg args[] = {
        {"--categories", CMD_ARG_STRING, &catlist, "a,b,...", "procedural categories (default: all, round robin)"},
        /* ids are the index in 6 digits, so that name order is corpus order */
        {"--count", CMD_ARG_INT, &a.count, "N", "shapes (default 100)", 1, 999999},
        {"--seed", CMD_ARG_UINT, &a.seed, "S", "corpus seed (default 0)"},
        {"--out", CMD_ARG_STRING, &a.out, "DIR", "default data/corpus"},
        /* procedural.c keeps parts and gaps >= 3 cells wide from 48 cells up; below that a shape
         * may fuse or tear, which the watertight count at the end reports */
        {"--grid", CMD_ARG_INT, &a.grid, "G", "marching-cubes cells along the longest side (default 128)", 16, 512},
        {"--surface", CMD_ARG_INT, &a.surface, "N", "surface samples (default 4096)", 1, 10000000},
        {"--sharp", CMD_ARG_INT, &a.sharp, "N", "sharp-edge samples (default 4096)", 0, 10000000},
        {"--cubature-res", CMD_ARG_INT, &a.cubature_res, "R", "interior cubature grid (default 128)", 4, 1024},
        {"--family", CMD_ARG_STRING, &a.family, "CATEGORY", "one deformable family: shape i at t = i/(N-1) of seed S"},
        {"--real", CMD_ARG_STRING, &a.real, "DIR", "every .obj/.ply/.off/.stl in DIR into OUT/real.h5 instead"},
        {"--no-progress", CMD_ARG_FLAG, &no_progress, NULL, "no progress display on stderr"},
        {0}};
    const CmdArgSpec spec = {
        "anima dataset make", "[--categories a,b,...] [--count N] [--seed S] [--out DIR] [options] | --real DIR [options]",
        "procedural shapes preprocessed as in PhysSkin++ (surface samples, sharp-edge samples, interior\n"
        "cubature grid) into DIR/train.h5, val.h5, test.h5 (80/10/10 by a seeded hash); --real DIR: every\n"
        "mesh file in DIR into OUT/real.h5 (winding-number classification, no rig)",
        args};
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, NULL, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    if (no_progress) a.progress = 0;
    char catbuf[1024], known[1024] = "";
    for (int j = 0; j < nall; j++) snprintf(known + strlen(known), sizeof known - strlen(known), " %s", all[j]);
    if (catlist) {
        snprintf(catbuf, sizeof catbuf, "%s", catlist);
        for (char *tok = strtok(catbuf, ","); tok; tok = strtok(NULL, ",")) {
            int k = 0;
            while (k < nall && strcmp(all[k], tok)) k++;
            if (k == nall || a.ncat == MAX_CATS)
                return cmd_args_fail(&spec, stderr, "unknown category '%s' (known:%s)", tok, known);
            bool dup = false;
            for (int j = 0; j < a.ncat; j++) dup |= a.categories[j] == all[k];
            if (!dup) a.categories[a.ncat++] = all[k];
        }
        if (!a.ncat) return cmd_args_fail(&spec, stderr, "--categories is empty");
    } else {
        for (int k = 0; k < nall && k < MAX_CATS; k++) a.categories[a.ncat++] = all[k];
    }
    if (a.family) {
        int k = 0;
        while (k < nall && strcmp(all[k], a.family)) k++;
        if (k == nall) return cmd_args_fail(&spec, stderr, "--family: unknown category '%s' (known:%s)", a.family, known);
        a.family = all[k];
        a.categories[0] = all[k], a.ncat = 1;
    }
    if (a.real && (a.family || catlist)) return cmd_args_fail(&spec, stderr, "--real takes no --family or --categories");
    if (cmd_make_dirs(a.out) != 0) {
        fprintf(stderr, NAME ": cannot create the output directory %s (%s)\n", a.out, strerror(errno));
        return 1;
    }
    BaseInterruptSaved saved;
    base_interrupt_catch(0, &saved);
    int rc = a.real ? make_real(&a) : make_procedural(&a);
    base_interrupt_restore(&saved);
    return rc;
}

/* ---- show ------------------------------------------------------------------------------------ */

typedef struct {
    const char *shape, *ply, *field;
    bool check;
    int64_t cubature_res;
} ShowArgs;

static void print_check(const DsMeshCheck *c) {
    printf("  bbox [%.4g %.4g %.4g] .. [%.4g %.4g %.4g]\n", c->lo[0], c->lo[1], c->lo[2], c->hi[0], c->hi[1], c->hi[2]);
    printf("  %s, %s, %s; %lld components, %lld boundary edges, %lld non-manifold edges, Euler characteristic %lld",
           c->watertight ? "watertight" : "not watertight", c->manifold ? "manifold" : "not manifold",
           c->oriented ? "consistently oriented" : "not consistently oriented", (long long)c->components,
           (long long)c->boundary_edges, (long long)c->nonmanifold_edges, (long long)c->euler);
    if (c->genus >= 0) printf(", genus %lld", (long long)c->genus);
    printf("\n  area %.6g, volume %.6g%s\n", c->area, c->volume, c->watertight ? "" : " (not closed: not a true volume)");
}

/* Writes field f of a shape (ds_shape_field_mesh) as a PLY. 0, 1 (file error) or 2. */
static int write_field(const char *out, const char *field, const DsShapeFields *f) {
    DsMesh m;
    char err[4096];
    if (ds_shape_field_mesh(f, field, &m, err, sizeof err)) {
        fprintf(stderr, NAME ": --field %s\n", err);
        return 2;
    }
    const char *dot = strrchr(out, '.');
    if (!dot || strcasecmp(dot, ".ply")) {
        ds_mesh_free(&m);
        fprintf(stderr, NAME ": --ply expects a .ply path, got '%s'\n", out);
        return 2;
    }
    int rc = ds_mesh_write(out, &m, false, err, sizeof err);
    if (rc) fprintf(stderr, NAME ": %s\n", err);
    else printf("wrote %s: %s, %lld vertices%s\n", out, field, (long long)m.nv, m.nf ? ", with faces" : " (points)");
    ds_mesh_free(&m);
    return rc ? 1 : 0;
}

static int show_mesh(const char *path, const ShowArgs *a) {
    DsMesh m;
    char err[2048];
    if (ds_mesh_read(path, &m, err, sizeof err)) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    DsMeshCheck c;
    if (ds_mesh_check(&m, &c)) {
        ds_mesh_free(&m);
        fprintf(stderr, NAME ": %s: out of memory\n", path);
        return 1;
    }
    printf("%s: mesh, %lld vertices, %lld triangles%s%s\n", path, (long long)m.nv, (long long)m.nf,
           m.n ? ", normals" : "", m.color ? ", colors" : "");
    print_check(&c);
    int rc = 0;
    if (a->ply) {
        if (!strcmp(a->field, "mesh") || !strncmp(a->field, "weights:", 8))
            rc = write_field(a->ply, a->field, &(DsShapeFields){.mesh = &m});
        else {
            /* the other fields are the preprocessing's: run it (winding numbers) on the fly */
            DsPreprocessOptions o;
            ds_preprocess_defaults(&o);
            o.n_dense = 0, o.n_sharp = 4096, o.grid_res = (int)a->cubature_res;
            DsPreprocessed pp;
            if (ds_preprocess(&m, &o, &pp, err, sizeof err)) {
                fprintf(stderr, NAME ": %s: %s\n", path, err);
                rc = 1;
            } else {
                printf("  preprocessed (normalized into [-1,1]^3): %lld surface, %lld sharp, %lld cubature points "
                       "(volume %.6g at %d^3)\n",
                       (long long)pp.n_surface, (long long)pp.n_sharp, (long long)pp.cubature.n, pp.cubature.volume,
                       pp.cubature.res);
                DsShapeFields f = ds_shape_fields_of_preprocessed(&pp);
                rc = write_field(a->ply, a->field, &f);
                ds_preprocessed_free(&pp);
            }
        }
    }
    ds_mesh_free(&m);
    return rc;
}

static int show_shape(DsCache *c, const char *path, const char *id, const ShowArgs *a) {
    DsShapeRecord r;
    char err[2048];
    int rc = id ? ds_cache_read_shape_id(c, id, &r, err, sizeof err) : ds_cache_read_shape(c, 0, &r, err, sizeof err);
    if (rc) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    DsMeshCheck mc;
    if (ds_mesh_check(&r.mesh, &mc)) abort();
    double cv = ds_shape_cubature_volume(&r);
    printf("%s: shape %s (%s, seed %llu, index %lld%s%s)\n", path, r.id, r.category, (unsigned long long)r.seed,
           (long long)r.index, r.source[0] && strcmp(r.source, "procedural") ? ", from " : "",
           r.source[0] && strcmp(r.source, "procedural") ? r.source : "");
    printf("  mesh %lld vertices, %lld triangles; normalized by center [%.4g %.4g %.4g] scale %.6g\n",
           (long long)r.mesh.nv, (long long)r.mesh.nf, r.xf.center[0], r.xf.center[1], r.xf.center[2], r.xf.scale);
    print_check(&mc);
    printf("  %lld surface points, %lld sharp-edge points, %lld cubature points on a %d^3 grid (volume %.6g, %+.2f%% vs "
           "mesh)\n",
           (long long)r.n_surface, (long long)r.n_sharp, (long long)r.n_cubature, r.cubature_res, cv,
           100 * ds_volume_error(cv, mc.volume));
    if (r.nbones) {
        printf("  skeleton %d bones:", r.nbones);
        for (int i = 0; i < r.nbones; i++)
            printf(" %s%s%s", r.bones[i].name, r.bones[i].parent >= 0 ? "<" : "",
                   r.bones[i].parent >= 0 ? r.bones[r.bones[i].parent].name : "");
        printf("\n  rig weights %s\n", r.weights ? "per vertex (rows sum to 1)" : "absent");
    } else {
        printf("  no skeleton, no rig weights\n");
    }
    rc = 0;
    DsShapeFields f = ds_shape_fields_of_record(&r);
    if (a->ply) rc = write_field(a->ply, a->field, &f);
    ds_shape_record_free(&r);
    return rc;
}

static int show_cache(const char *path, const ShowArgs *a) {
    char err[2048];
    DsCache *c = ds_cache_open(path, err, sizeof err);
    if (!c) {
        fprintf(stderr, NAME ": %s\n", err);
        return 1;
    }
    const DsCacheInfo *in = ds_cache_info(c);
    int rc = 0;
    if (a->shape || a->ply) {
        if (!ds_cache_count(c)) {
            fprintf(stderr, NAME ": %s: the cache holds no shape\n", path);
            rc = 1;
        } else {
            rc = show_shape(c, path, a->shape, a);
        }
        ds_cache_close(c);
        return rc;
    }
    printf("%s: anima dataset cache (%s), split %s, %lld shapes of %lld in the corpus, seed %llu\n", path, in->kind,
           in->split, (long long)ds_cache_count(c), (long long)in->total, (unsigned long long)in->seed);
    printf("  grid %d, cubature %d^3, %lld surface + %lld sharp points, rig %s\n  made by: %s\n", in->grid,
           in->cubature_res, (long long)in->n_surface, (long long)in->n_sharp, in->rig, in->command);
    DsCacheSummary sum = {0};
    if (ds_cache_summary_add(&sum, c, err, sizeof err)) {
        fprintf(stderr, NAME ": %s\n", err);
        ds_cache_close(c);
        return 1;
    }
    int64_t n = sum.shapes;
    printf("  %lld of %lld watertight manifold meshes, %.0f vertices a shape\n", (long long)sum.watertight,
           (long long)n, n ? (double)sum.vertices / (double)n : 0.0);
    print_summary(&sum, &in->split);
    if (a->check) {
        /* every array read and validated: what a training run would hit, found now */
        for (int64_t i = 0; i < n && rc == 0; i++) {
            DsShapeRecord r;
            if (ds_cache_read_shape(c, i, &r, err, sizeof err)) {
                fprintf(stderr, NAME ": %s\n", err);
                rc = 1;
            }
            ds_shape_record_free(&r);
        }
        if (rc == 0) printf("  check: all %lld shapes read and validated\n", (long long)n);
    }
    ds_cache_close(c);
    return rc;
}

static int show_dir(const char *dir, const ShowArgs *a) {
    const char *files[DS_CACHE_SUMMARY_FILES] = {"train", "val", "test", "real"}, *found[DS_CACHE_SUMMARY_FILES];
    DsCacheSummary sum = {0};
    char err[2048], path[4200];
    for (int s = 0; s < DS_CACHE_SUMMARY_FILES; s++) {
        snprintf(path, sizeof path, "%s/%s.h5", dir, files[s]);
        if (access(path, F_OK) != 0) continue;
        DsCache *c = ds_cache_open(path, err, sizeof err);
        if (!c) {
            fprintf(stderr, NAME ": %s\n", err);
            return 1;
        }
        if (ds_cache_summary_add(&sum, c, err, sizeof err)) {
            fprintf(stderr, NAME ": %s\n", err);
            ds_cache_close(c);
            return 1;
        }
        if (sum.nfiles == 1)
            printf("%s: anima dataset cache (%s), seed %llu, grid %d, cubature %d^3\n  made by: %s\n", dir,
                   ds_cache_info(c)->kind, (unsigned long long)ds_cache_info(c)->seed, ds_cache_info(c)->grid,
                   ds_cache_info(c)->cubature_res, ds_cache_info(c)->command);
        found[sum.nfiles - 1] = files[s];
        if (a->check) {
            ShowArgs one = *a;
            one.shape = NULL, one.ply = NULL;
            if (show_cache(path, &one)) {
                ds_cache_close(c);
                return 1;
            }
        }
        ds_cache_close(c);
    }
    if (!sum.nfiles) {
        fprintf(stderr, NAME ": %s: no train.h5, val.h5, test.h5 or real.h5 in the folder\n", dir);
        return 1;
    }
    int64_t n = sum.shapes;
    printf("  %lld shapes, %lld watertight manifold, %.0f vertices a shape\n", (long long)n, (long long)sum.watertight,
           n ? (double)sum.vertices / (double)n : 0.0);
    print_summary(&sum, found);
    return 0;
}

static int cmd_show(int argc, char **argv) {
    ShowArgs a = {.field = "mesh", .cubature_res = 64};
    const CmdArg args[] = {
        {"--shape", CMD_ARG_STRING, &a.shape, "ID", "one shape of a cache file, by id (default: the summary)"},
        {"--check", CMD_ARG_FLAG, &a.check, NULL, "read and validate every shape"},
        {"--ply", CMD_ARG_STRING, &a.ply, "OUT.ply", "writes a field of the shape (a cache's first, or --shape) or mesh"},
        {"--field", CMD_ARG_STRING, &a.field, "F", "mesh|surface|sharp|cubature|weights:<bone name or index> (default mesh)"},
        {"--cubature-res", CMD_ARG_INT, &a.cubature_res, "R", "the cubature grid of a mesh file's fields (default 64)", 4,
         1024},
        {0}};
    const CmdArgSpec spec = {"anima dataset show", "FILE|DIR [--shape ID] [--check] [--ply OUT.ply --field F]",
                             "counts, bounding box, watertight/manifold, volume, genus; for caches shapes per category\n"
                             "and split (all splits when given DIR)",
                             args, NULL, 1, 1};
    const char *file;
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, &file, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    struct stat st;
    if (stat(file, &st) != 0) {
        fprintf(stderr, NAME ": %s: cannot open (%s)\n", file, strerror(errno));
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (a.shape || a.ply)
            return cmd_args_fail(&spec, stderr, "--shape and --ply take a cache file (DIR/train.h5 ...), not a folder");
        return show_dir(file, &a);
    }
    /* HDF5 by its signature, not its name: a cache renamed .dat is still a cache, and a .h5
     * that is not HDF5 gets the mesh reader's "unknown format" message naming it */
    if (ds_cache_is_hdf5(file)) return show_cache(file, &a);
    const char *dot = strrchr(file, '.');
    if (dot && (!strcasecmp(dot, ".h5") || !strcasecmp(dot, ".hdf5"))) {
        fprintf(stderr, NAME ": %s: not an HDF5 file (bad signature: truncated or not a cache)\n", file);
        return 1;
    }
    if (a.shape) return cmd_args_fail(&spec, stderr, "--shape takes a cache file; %s is a mesh file", file);
    return show_mesh(file, &a);
}

int cmd_dataset(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "make")) return cmd_make(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "show")) return cmd_show(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "motion")) return cmd_dataset_motion(argc - 1, argv + 1);
    const char *pos[1];
    int prc = cmd_args_parse(&DATASET, argc, argv, 1, stderr, pos, NULL);
    if (prc == CMD_ARGS_HELP) return 0;
    if (prc == CMD_ARGS_OK) cmd_args_fail(&DATASET, stderr, "unknown subcommand '%s'", pos[0]);
    return 2;
}
