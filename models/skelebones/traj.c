/* models/skelebones/traj.c — trajectory readers and writer (traj.h). */
#include "base/sort.h"
#include "models/skelebones/traj.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/errbuf.h"
#include "base/finite.h"
#include "base/h5file.h"
#include "datasets/mesh/mesh.h"
#include "datasets/motion/bench.h"

void sb_traj_free(SbTraj *t) {
    free(t->pos), free(t->rest), free(t->faces), free(t->true_weights), free(t->true_transforms);
    free(t->true_parents), free(t->true_joints), free(t->true_tails), free(t->times);
    free(t->opacity);
    memset(t, 0, sizeof *t);
}

void sb_traj_keep_frames(SbTraj *t, int nframes) {
    if (nframes < 1 || nframes >= t->nframes) return;
    t->nframes = nframes; /* frame-major arrays: the first frames are a prefix */
}

static int check_faces(const char *path, const int32_t *f, int64_t nf, int64_t nv, char *err, size_t errlen) {
    for (int64_t k = 0; k < nf * 3; k++)
        if (f[k] < 0 || f[k] >= nv)
            return base_errf(err, errlen, "%s: face %lld indexes point %d of %lld", path, (long long)(k / 3), f[k],
                             (long long)nv);
    return 0;
}

int sb_traj_read_h5(const char *path, const char *dataset, SbTraj *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    base_h5_quiet();
    hid_t f = base_h5_open_read(path, "trajectories file", err, errlen);
    if (f < 0) return -1;
    /* `anima gs4d fit`'s trajectories.h5 keeps the per-frame centers in frames/positions and the
     * canonical ones in canonical/positions (tools/cmd_gs4d.c): read it as it is */
    const char *rest_name = "rest", *opacity_name = "opacities";
    if (!dataset) {
        dataset = SB_TRAJ_DATASET;
        if (H5Lexists(f, SB_TRAJ_DATASET, H5P_DEFAULT) <= 0 && H5Lexists(f, "frames", H5P_DEFAULT) > 0 &&
            H5Lexists(f, "frames/positions", H5P_DEFAULT) > 0) {
            dataset = "frames/positions";
            if (H5Lexists(f, "canonical", H5P_DEFAULT) > 0 && H5Lexists(f, "canonical/positions", H5P_DEFAULT) > 0)
                rest_name = "canonical/positions";
            if (H5Lexists(f, "canonical", H5P_DEFAULT) > 0 && H5Lexists(f, "canonical/opacities", H5P_DEFAULT) > 0)
                opacity_name = "canonical/opacities";
        }
    }
    int64_t dp[3] = {0}, dr[2] = {0}, df[2] = {0};
    void *pos = NULL, *rest = NULL, *faces = NULL;
    int rc = base_h5_read_dims(f, path, dataset, 3, dp, H5T_NATIVE_FLOAT, 4, true, &pos, err, errlen);
    if (rc == 1) rc = base_errf(err, errlen, "%s: no dataset '%s' (F × N × 3 trajectories)", path, dataset);
    if (rc == 0 && (dp[0] < 1 || dp[1] < 1 || dp[2] != 3))
        rc = base_errf(err, errlen, "%s: %s is %llu × %llu × %llu, expected F × N × 3 with F, N ≥ 1", path, dataset,
                       (unsigned long long)dp[0], (unsigned long long)dp[1], (unsigned long long)dp[2]);
    if (rc == 0) {
        int r = base_h5_read_dims(f, path, rest_name, 2, dr, H5T_NATIVE_FLOAT, 4, true, &rest, err, errlen);
        if (r < 0) rc = -1;
        else if (r == 0 && (dr[0] != dp[1] || dr[1] != 3))
            rc = base_errf(err, errlen, "%s: %s is %llu × %llu, expected %llu × 3", path, rest_name, (unsigned long long)dr[0],
                           (unsigned long long)dr[1], (unsigned long long)dp[1]);
    }
    if (rc == 0) {
        int r = base_h5_read_dims(f, path, "faces", 2, df, H5T_NATIVE_INT32, 4, true, &faces, err, errlen);
        if (r < 0) rc = -1;
        else if (r == 0 && df[1] != 3) rc = base_errf(err, errlen, "%s: faces has %llu columns, expected 3", path, (unsigned long long)df[1]);
    }
    void *times = NULL;
    if (rc == 0) { /* optional: the frames' times (gs4d's trajectories.h5 has them) */
        int64_t dt[1] = {0};
        int r = base_h5_read_dims(f, path, "times", 1, dt, H5T_NATIVE_FLOAT, 4, true, &times, err, errlen);
        if (r < 0) rc = -1;
        else if (r == 0 && dt[0] != dp[0])
            rc = base_errf(err, errlen, "%s: times has %llu entries for %llu frames", path, (unsigned long long)dt[0],
                           (unsigned long long)dp[0]);
    }
    void *opac = NULL;
    if (rc == 0) { /* optional: each point's opacity (gs4d's Gaussians: the canonical ones) */
        int64_t dn[1] = {0};
        int r = base_h5_read_dims(f, path, opacity_name, 1, dn, H5T_NATIVE_FLOAT, 4, true, &opac, err, errlen);
        if (r < 0) rc = -1;
        else if (r == 0 && dn[0] != dp[1])
            rc = base_errf(err, errlen, "%s: %s has %llu entries for %llu points", path, opacity_name, (unsigned long long)dn[0],
                           (unsigned long long)dp[1]);
    }
    H5Fclose(f);
    t->times = times, t->opacity = opac;
    t->nframes = (int)dp[0], t->npoints = (int64_t)dp[1];
    t->pos = pos, t->rest = rest, t->faces = faces, t->nfaces = faces ? (int64_t)df[0] : 0;
    if (rc == 0 && !base_all_finite_f(t->pos, (size_t)t->nframes * t->npoints * 3))
        rc = base_errf(err, errlen, "%s: %s holds a non-finite value", path, dataset);
    if (rc == 0 && t->rest && !base_all_finite_f(t->rest, (size_t)t->npoints * 3))
        rc = base_errf(err, errlen, "%s: rest holds a non-finite value", path);
    if (rc == 0 && faces) rc = check_faces(path, t->faces, t->nfaces, t->npoints, err, errlen);
    for (int64_t i = 0; rc == 0 && t->opacity && i < t->npoints; i++)
        if (!(t->opacity[i] >= 0 && t->opacity[i] <= 1)) /* NaN fails too */
            rc = base_errf(err, errlen, "%s: %s[%lld] = %g is not an opacity in [0, 1]", path, opacity_name, (long long)i,
                           (double)t->opacity[i]);
    if (rc == 0 && !t->rest) {
        t->rest = malloc((size_t)t->npoints * 3 * sizeof(float));
        if (!t->rest) rc = base_errf(err, errlen, "%s: out of memory", path);
        else memcpy(t->rest, t->pos, (size_t)t->npoints * 3 * sizeof(float));
    }
    if (rc) {
        sb_traj_free(t);
        return -1;
    }
    snprintf(t->source, sizeof t->source, "%s", path);
    return 0;
}

int sb_traj_read_gt(const char *path, SbTraj *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    DsMotionGt g;
    if (ds_motion_gt_load(path, &g, err, errlen)) return -1;
    int F = g.nframes, B = g.nbones;
    int64_t N = g.nv;
    t->nframes = F, t->npoints = N, t->nfaces = g.nf, t->true_bones = B;
    t->pos = g.vertices, t->rest = g.rest, t->faces = g.faces, t->true_weights = g.weights;
    t->true_parents = g.parents, t->true_joints = g.joint_positions, t->times = g.times;
    g.vertices = NULL, g.rest = NULL, g.faces = NULL, g.weights = NULL, g.parents = NULL, g.joint_positions = NULL;
    g.times = NULL;
    t->true_transforms = malloc((size_t)F * B * 12 * sizeof(double));
    if (!t->true_transforms) {
        ds_motion_gt_free(&g), sb_traj_free(t);
        return base_errf(err, errlen, "%s: out of memory", path);
    }
    for (int64_t k = 0; k < (int64_t)F * B; k++)
        for (int e = 0; e < 12; e++) t->true_transforms[k * 12 + e] = g.bone_transforms[k * 16 + e];
    ds_motion_gt_free(&g);
    /* the bones' rest tails (the leaves' ends are joints of the true skeleton too); optional */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) {
        if (H5Lexists(f, "rig", H5P_DEFAULT) > 0 && H5Lexists(f, "rig/tails", H5P_DEFAULT) > 0) {
            hid_t d = H5Dopen2(f, "rig/tails", H5P_DEFAULT);
            hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
            hsize_t dims[2] = {0, 0};
            if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 2 && H5Sget_simple_extent_dims(sp, dims, NULL) == 2 &&
                dims[0] == (hsize_t)B && dims[1] == 3 && (t->true_tails = malloc((size_t)B * 3 * sizeof(float))) &&
                H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->true_tails) < 0) {
                free(t->true_tails);
                t->true_tails = NULL;
            }
            if (sp >= 0) H5Sclose(sp);
            if (d >= 0) H5Dclose(d);
        }
        H5Fclose(f);
    }
    snprintf(t->source, sizeof t->source, "%s", path);
    return 0;
}

static int has_mesh_ext(const char *name) {
    const char *d = strrchr(name, '.');
    return d && (!strcasecmp(d, ".obj") || !strcasecmp(d, ".ply") || !strcasecmp(d, ".off") || !strcasecmp(d, ".stl"));
}

int sb_traj_read_meshes(const char *dir, SbTraj *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    DIR *d = opendir(dir);
    if (!d) return base_errf(err, errlen, "%s: cannot open the folder of mesh frames", dir);
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_mesh_ext(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *names);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc) {
        for (int k = 0; k < n; k++) free(names[k]);
        free(names);
        return base_errf(err, errlen, "%s: out of memory listing the folder", dir);
    }
    if (n == 0) {
        free(names);
        return base_errf(err, errlen, "%s: no mesh frames (.obj .ply .off .stl) in the folder", dir);
    }
    qsort(names, (size_t)n, sizeof *names, base_cmp_str);
    char path[4096];
    for (int k = 0; k < n && rc == 0; k++) {
        DsMesh m = {0};
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if (ds_mesh_read(path, &m, err, errlen)) {
            rc = -1;
            break;
        }
        if (k == 0) {
            t->npoints = m.nv, t->nfaces = m.nf, t->nframes = n;
            t->pos = malloc((size_t)n * m.nv * 3 * sizeof(float) + 4);
            t->rest = malloc((size_t)m.nv * 3 * sizeof(float) + 4);
            t->faces = m.f, m.f = NULL;
            if (!t->pos || !t->rest) rc = base_errf(err, errlen, "%s: out of memory (%d frames)", dir, n);
            else memcpy(t->rest, m.v, (size_t)m.nv * 3 * sizeof(float));
        } else if (m.nv != t->npoints || m.nf != t->nfaces || (m.nf && memcmp(m.f, t->faces, (size_t)m.nf * 3 * sizeof(int32_t)))) {
            rc = base_errf(err, errlen, "%s: %lld vertices and %lld faces, or other faces, than the first frame %s (%lld, %lld): frames must share one connectivity",
                           path, (long long)m.nv, (long long)m.nf, names[0], (long long)t->npoints, (long long)t->nfaces);
        }
        if (rc == 0) {
            memcpy(t->pos + (size_t)k * t->npoints * 3, m.v, (size_t)m.nv * 3 * sizeof(float));
            if (!base_all_finite_f(m.v, (size_t)m.nv * 3)) rc = base_errf(err, errlen, "%s: a non-finite vertex", path);
        }
        ds_mesh_free(&m);
    }
    if (rc == 0 && t->npoints < 1) rc = base_errf(err, errlen, "%s/%s: no vertices", dir, names[0]);
    for (int k = 0; k < n; k++) free(names[k]);
    free(names);
    if (rc) {
        sb_traj_free(t);
        return -1;
    }
    snprintf(t->source, sizeof t->source, "%s", dir);
    return 0;
}

int sb_traj_write_h5(const char *path, const SbTraj *t, char *err, size_t errlen) {
    char tmp[4200];
    base_h5_quiet();
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    hsize_t dp[3] = {(hsize_t)t->nframes, (hsize_t)t->npoints, 3}, dr[2] = {(hsize_t)t->npoints, 3},
            df[2] = {(hsize_t)t->nfaces, 3};
    bool ok = base_h5_write_checked(f, SB_TRAJ_DATASET, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dp, t->pos, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "rest", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dr, t->rest, 1 << 20, false) == 0;
    if (t->faces && t->nfaces)
        ok = ok && base_h5_write_checked(f, "faces", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, df, t->faces, 1 << 20, false) == 0;
    hsize_t dt[1] = {(hsize_t)t->nframes};
    if (t->times) ok = ok && base_h5_write_checked(f, "times", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, dt, t->times, 1 << 20, false) == 0;
    hsize_t dn[1] = {(hsize_t)t->npoints};
    if (t->opacity)
        ok = ok && base_h5_write_checked(f, "opacities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, dn, t->opacity, 1 << 20, false) == 0;
    ok = ok && base_h5_attr_str(f, "producer", "anima skelebones (models/skelebones/traj.c)") == 0;
    ok = ok && base_h5_attr_str(f, "layout", "positions: F x N x 3 per-frame point positions; rest: N x 3; faces: T x 3 (optional); "
                                             "times: F (optional); opacities: N (optional)") == 0;
    return base_h5_save_end(f, tmp, path, ok, "trajectories", err, errlen);
}
