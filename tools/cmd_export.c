/* tools/cmd_export.c — `anima export RUN|FILE --gltf OUT.glb`: anima's results as glTF 2.0
 * (datasets/mesh/gltf.h; layout choices in docs/export.md):
 *   - a sim run folder (what `anima sim` writes: frame_NNNNN.ply|.obj sharing one connectivity):
 *     the frames baked as morph targets, played at --fps;
 *   - a skinning file (`anima physskin skin`, `anima sim skinning`; format anima-skinning-1): the
 *     binding mesh with the weights shown as colors (ds_skinning_colors, as its PNG and PLY);
 *   - a motion ground truth (`anima dataset motion` gt.h5; format anima-motion-1): the rest mesh
 *     skinned to the rig, its motion (procedural or BVH-retargeted) as joint channels;
 *   - a Skelebones rig (`anima skelebones` rig.h5, or the run folder holding it as rig.h5 or
 *     rig/rig.h5, as `anima gaussianimate` writes it): the SSDR bones as joints with their
 *     per-frame transforms;
 *   - any mesh file anima reads (.ply .obj .off .stl): a static mesh.
 * Anything else exits 1 with a message naming the file. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/sort.h"
#include "base/errbuf.h"
#include "base/h5file.h"
#include "datasets/corpus/skinning_file.h"
#include "datasets/mesh/gltf.h"
#include "datasets/mesh/mesh.h"
#include "datasets/motion/bench.h"
#include "models/skelebones/rig_file.h"
#include "tools/cmd.h"
#include "tools/cmd_args.h"

/* The frame meshes of a sim run folder, in frame order. */
static int export_run(const char *dir, const char *out, double fps, char *err, size_t errlen, char *summary, size_t slen) {
    DIR *d = opendir(dir);
    if (!d) return base_errf(err, errlen, "%s: cannot open the folder (%s)", dir, strerror(errno)), -1;
    char **names = NULL;
    int n = 0, cap = 0, rc = -1;
    struct dirent *e;
    const char *ext = NULL;
    while ((e = readdir(d))) {
        const char *s = e->d_name, *dot = strrchr(s, '.');
        /* frame_NNNNN.ply (not the per-object Gaussians, frame_NNNNN_gaussians_K.ply) */
        if (strncmp(s, "frame_", 6) || !dot || dot - s != 11 || strspn(s + 6, "0123456789") != 5) continue;
        if (strcasecmp(dot, ".ply") && strcasecmp(dot, ".obj")) continue;
        if (ext && strcasecmp(ext, dot)) continue; /* one format: the first seen */
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **p = realloc(names, sizeof(char *) * (size_t)cap);
            if (!p) break;
            names = p;
        }
        if (!(names[n] = strdup(s))) break;
        if (!ext) ext = strrchr(names[n], '.');
        n++;
    }
    closedir(d);
    DsMesh first = {0}, m = {0};
    float *frames = NULL;
    if (n == 0) {
        base_errf(err, errlen, "%s: no frame_NNNNN.ply or .obj files (a folder `anima sim` wrote), rig.h5 or rig/rig.h5 (a "
                  "skelebones or gaussianimate run)", dir);
        goto done;
    }
    qsort(names, (size_t)n, sizeof *names, base_cmp_str);
    char path[4400];
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        DsMesh *dst = k ? &m : &first;
        if (ds_mesh_read(path, dst, err, errlen)) goto done;
        if (k == 0) {
            frames = malloc(sizeof(float) * 3 * (size_t)first.nv * (size_t)n);
            if (!frames) {
                base_errf(err, errlen, "%s: out of memory for %d frames of %lld vertices", dir, n, (long long)first.nv);
                goto done;
            }
            memcpy(frames, first.v, sizeof(float) * 3 * (size_t)first.nv);
            continue;
        }
        if (m.nv != first.nv || m.nf != first.nf || memcmp(m.f, first.f, sizeof(int32_t) * 3 * (size_t)m.nf)) {
            base_errf(err, errlen, "%s: %lld vertices and %lld triangles, but %s has %lld and %lld (or other triangles): "
                     "the frames of a run share one connectivity", path, (long long)m.nv, (long long)m.nf, names[0],
                     (long long)first.nv, (long long)first.nf);
            goto done;
        }
        memcpy(frames + (size_t)k * 3 * (size_t)m.nv, m.v, sizeof(float) * 3 * (size_t)m.nv);
        ds_mesh_free(&m);
    }
    DsGltfMesh g = {.nv = first.nv, .nf = first.nf, .pos = first.v, .color = first.color, .faces = first.f,
                    .name = "sim", .nframes = n, .fps = fps, .frames = frames};
    if (ds_gltf_write(out, &g, err, errlen)) goto done;
    snprintf(summary, slen, "sim run %s: %lld vertices, %lld triangles, %d frames at %g fps as morph targets", dir,
             (long long)first.nv, (long long)first.nf, n, fps);
    rc = 0;
done:
    for (int k = 0; k < n; k++) free(names[k]);
    free(names), free(frames);
    ds_mesh_free(&first), ds_mesh_free(&m);
    return rc;
}

static int export_mesh(const char *in, const char *out, char *err, size_t errlen, char *summary, size_t slen) {
    DsMesh m;
    if (ds_mesh_read(in, &m, err, errlen)) return -1;
    DsGltfMesh g = {.nv = m.nv, .nf = m.nf, .pos = m.v, .color = m.color, .faces = m.f, .name = "mesh"};
    int rc = ds_gltf_write(out, &g, err, errlen);
    if (!rc) snprintf(summary, slen, "mesh %s: %lld vertices, %lld triangles", in, (long long)m.nv, (long long)m.nf);
    ds_mesh_free(&m);
    return rc;
}

static int export_skinning(const char *in, const char *out, char *err, size_t errlen, char *summary, size_t slen) {
    DsSkinning s;
    if (ds_skinning_read(in, &s, err, errlen)) return -1;
    DsMesh m;
    int rc = -1;
    if (ds_skinning_mesh(&s, &m, err, errlen)) {
        char e2[1024];
        snprintf(e2, sizeof e2, "%s", err);
        base_errf(err, errlen, "%s: %s", in, e2);
        ds_skinning_free(&s);
        return -1;
    }
    DsGltfMesh g = {.nv = m.nv, .nf = m.nf, .pos = m.v, .color = m.color, .faces = m.f, .name = "skinning"};
    rc = ds_gltf_write(out, &g, err, errlen);
    if (!rc)
        snprintf(summary, slen, "skinning %s: %lld vertices, %lld triangles, %lld handles as colors", in, (long long)m.nv,
                 (long long)m.nf, (long long)s.m);
    ds_mesh_free(&m);
    ds_skinning_free(&s);
    return rc;
}

/* gt.h5: the rest mesh skinned to the rig, the motion as joint channels (ds_motion_gt_gltf) */
static int export_gt(const char *in, const char *out, double fps, char *err, size_t errlen, char *summary, size_t slen) {
    DsMotionGt gt;
    if (ds_motion_gt_load(in, &gt, err, errlen)) return -1;
    DsGltfMesh g;
    float *owned;
    int rc = ds_motion_gt_gltf(&gt, fps, &g, &owned, err, errlen) || ds_gltf_write(out, &g, err, errlen) ? -1 : 0;
    if (!rc)
        snprintf(summary, slen, "motion %s (%s, %s): %lld vertices, %lld triangles, %d joints, %d frames at %g fps", in,
                 gt.category, gt.motion, (long long)gt.nv, (long long)gt.nf, gt.nbones, gt.nframes, g.fps);
    free(owned);
    ds_motion_gt_free(&gt);
    return rc;
}

/* rig.h5: the SSDR bones as joints under a root joint, their transforms as channels (sb_rig_file_gltf) */
static int export_sb_rig(const char *in, const char *out, double fps, char *err, size_t errlen, char *summary, size_t slen) {
    SbRigFile r;
    if (sb_rig_file_read(in, &r, err, errlen)) return -1;
    DsGltfMesh g;
    void *owned;
    int rc = sb_rig_file_gltf(&r, fps, &g, &owned, err, errlen) || ds_gltf_write(out, &g, err, errlen) ? -1 : 0;
    if (!rc)
        snprintf(summary, slen, "skelebones rig %s: %lld points, %lld triangles, %d bones (+ a root joint), %d frames at %g fps",
                 in, (long long)r.npoints, (long long)r.nfaces, r.nbones, r.nframes, g.fps);
    free(owned);
    sb_rig_file_free(&r);
    return rc;
}

/* Which kind of HDF5 file: its format attribute (skinning, motion) or its producer (skelebones). */
static int export_h5(const char *in, const char *out, double fps, char *err, size_t errlen, char *summary, size_t slen) {
    base_h5_quiet();
    hid_t f = base_h5_open_read(in, "skinning file, motion ground truth (gt.h5) or skelebones rig (rig.h5)", err, errlen);
    if (f < 0) return -1;
    char *fmt = base_h5_attr_read_str(f, "format", 64), *prod = base_h5_attr_read_str(f, "producer", 256);
    H5Fclose(f);
    bool skin = fmt && !strcmp(fmt, DS_SKINNING_FORMAT), gt = fmt && !strcmp(fmt, "anima-motion-1");
    bool sb = prod && !strncmp(prod, SB_RIG_PRODUCER, strlen(SB_RIG_PRODUCER));
    if (!skin && !gt && !sb)
        base_errf(err, errlen, "%s: format '%s', producer '%s': not a file anima exports (expected %s, anima-motion-1 or an "
                 "`anima skelebones` rig.h5)", in, fmt ? fmt : "(none)", prod ? prod : "(none)", DS_SKINNING_FORMAT);
    free(fmt), free(prod);
    if (skin) return export_skinning(in, out, err, errlen, summary, slen);
    if (gt) return export_gt(in, out, fps, err, errlen, summary, slen);
    if (sb) return export_sb_rig(in, out, fps, err, errlen, summary, slen);
    return -1;
}

int cmd_export(int argc, char **argv) {
    const char *out = NULL;
    double fps = 0;
    const CmdArg args[] = {
        {"--gltf", CMD_ARG_STRING, &out, "OUT.glb", "the glTF 2.0 binary to write", .required = true},
        {"--fps", CMD_ARG_DOUBLE, &fps, "F",
         "frames per second (default: gt.h5's own; a sim run 20, the scenes' 1 / (dt · output.every); a rig.h5 30)", 0, 1000,
         NULL, false, NULL, true},
        {0}};
    const CmdArgSpec spec = {"anima export", "RUN|FILE --gltf OUT.glb",
                             "writes a sim run folder, a rig run folder, a skinning file, a motion gt.h5, a skelebones rig.h5 or a mesh as glTF 2.0 (.glb)",
                             args, "  docs/export.md: what each becomes (morph targets, skins, animations)\n", 1, 1};
    const char *pos[1];
    int prc = cmd_args_parse(&spec, argc, argv, 1, stderr, pos, NULL);
    if (prc) return prc == CMD_ARGS_HELP ? 0 : 2;
    const char *in = pos[0];
    char err[2048] = "", summary[1024] = "";
    struct stat st;
    int rc;
    const char *dot = strrchr(in, '.');
    if (stat(in, &st) != 0) {
        fprintf(stderr, "anima export: %s: %s\n", in, strerror(errno));
        return 1;
    }
    /* a run folder of a rig (`anima skelebones --out RUN`, or `anima gaussianimate --out RUN`'s
     * rig/rig.h5) stands for its rig.h5; any other folder is a sim run's frames */
    char rig[4096];
    static const char *const RIG_FILES[] = {"rig.h5", "rig/rig.h5", NULL};
    if (S_ISDIR(st.st_mode) && cmd_run_file(in, RIG_FILES, rig, sizeof rig, err, sizeof err) == 0)
        rc = export_h5(rig, out, fps, err, sizeof err, summary, sizeof summary);
    else if (S_ISDIR(st.st_mode)) rc = export_run(in, out, fps > 0 ? fps : 20, err, sizeof err, summary, sizeof summary);
    else if (dot && (!strcasecmp(dot, ".h5") || !strcasecmp(dot, ".hdf5")))
        rc = export_h5(in, out, fps, err, sizeof err, summary, sizeof summary);
    else if (dot && (!strcasecmp(dot, ".ply") || !strcasecmp(dot, ".obj") || !strcasecmp(dot, ".off") || !strcasecmp(dot, ".stl")))
        rc = export_mesh(in, out, err, sizeof err, summary, sizeof summary);
    else {
        base_errf(err, sizeof err, "%s: not a sim run folder, an HDF5 file (.h5) or a mesh (.ply .obj .off .stl)", in);
        rc = -1;
    }
    if (rc) {
        fprintf(stderr, "anima export: %s\n", err);
        return 1;
    }
    printf("anima export: %s -> %s\n", summary, out);
    return 0;
}
