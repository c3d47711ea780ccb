/* tools/view_h5.c — the HDF5 files `anima view` shows besides skinning files, turned into one
 * binary "animation" the page draws (tools/web/viewer/viewer.js, showAnimation):
 *   motion      the motion benchmark's gt.h5 (datasets/motion/bench.h): the surface over the frames
 *               (vertices F×V×3, mesh/faces, mesh/colors) and the true bones (rig/joint_positions
 *               F×B×3, rig/parents) as lines from each bone's head to its parent's;
 *   rig         skelebones' rig.h5 (models/skelebones/skelebones.h): the rest points (rest/points,
 *               faces when present) coloured by bone (bones/labels), the found skeleton's joints over
 *               the frames (ik/joints F×J×3 with ik/parents; without IK joints/positions, parents);
 *   trajectories  point trajectories (positions F×N×3, faces when present: skelebones' --traj
 *               input; or frames/positions: anima gs4d fit's trajectories.h5).
 * A skinning file is told by its format tag; any other HDF5 file (a checkpoint, an animation.h5)
 * is not shown.
 * Layout (little-endian): uint32 magic "AVA1" (0x31415641), uint32 n, then n bytes of JSON
 * (padded with spaces to a multiple of 4): {"kind", "frames", "arrays": [{"name", "type" ("f32" or
 * "i32"), "shape"}]}, then the arrays in that order. */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/errbuf.h"
#include "base/h5file.h"
#include "datasets/corpus/skinning_file.h"
#include "tools/view_server.h"

enum { MAXA = 8 };
#define MAX_ELEMS ((hsize_t)1 << 28) /* 1 GiB of float32: beyond any file the viewer should draw */

typedef struct {
    const char *name;
    bool f32;
    int rank;
    hsize_t dims[4];
    void *data;
    size_t bytes;
} Arr;

/* whether every component of a path like "rig/parents" exists */
static bool has(hid_t f, const char *path) { return base_h5_path_exists(f, path) > 0; }

/* a dataset as float32 or int32, of rank min_rank..4 and last dimension last (0: any) */
static int read_arr(hid_t f, const char *path, const char *as, bool f32, int rank_lo, int rank_hi, hsize_t last, Arr *a,
                    char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->name = as, a->f32 = f32;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0) return base_errf(err, errlen, "%s: cannot open", path);
    hid_t sp = H5Dget_space(d);
    int r = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
    if (r >= rank_lo && r <= rank_hi) H5Sget_simple_extent_dims(sp, a->dims, NULL);
    if (sp >= 0) H5Sclose(sp);
    hsize_t n = 1;
    for (int i = 0; i < r && r <= 4; i++) n = a->dims[i] && n <= MAX_ELEMS / a->dims[i] ? n * a->dims[i] : MAX_ELEMS + 1;
    if (r < rank_lo || r > rank_hi || (last && a->dims[r - 1] != last) || n > MAX_ELEMS) {
        H5Dclose(d);
        return base_errf(err, errlen, "%s: unexpected shape (rank %d)", path, r);
    }
    a->rank = r, a->bytes = 4 * (size_t)n;
    a->data = malloc(a->bytes + 4);
    if (!a->data || H5Dread(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data) < 0) {
        H5Dclose(d);
        free(a->data), a->data = NULL;
        return base_errf(err, errlen, "%s: cannot read", path);
    }
    H5Dclose(d);
    return 0;
}

const char *view_h5_kind(const char *path) {
    base_h5_quiet();
    char err[256];
    hid_t f = base_h5_open_read(path, "file", err, sizeof err);
    if (f < 0) return NULL;
    /* a skinning file carries its format tag (datasets/corpus/skinning_file.h); trajectories are
     * skelebones' (positions) or gs4d fit's (frames/positions); any other HDF5 file (a checkpoint,
     * an animation.h5) is not shown */
    char *fmt = base_h5_attr_read_str(f, "format", 64);
    const char *k = has(f, "vertices") && has(f, "mesh/faces") && has(f, "rig/joint_positions") && has(f, "rig/parents")
                        ? "motion"
                    : has(f, "rest/points")                              ? "rig"
                    : has(f, "positions") || has(f, "frames/positions") ? "trajectories"
                    : fmt && !strcmp(fmt, DS_SKINNING_FORMAT)            ? "skinning"
                                                                         : NULL;
    free(fmt);
    H5Fclose(f);
    return k;
}

uint8_t *view_h5_animation(const char *path, size_t *len, char *err, size_t errlen) {
    base_h5_quiet();
    const char *kind = view_h5_kind(path);
    if (!kind || !strcmp(kind, "skinning")) {
        base_errf(err, errlen, "%s: not a gt.h5, rig.h5 or trajectories file", path);
        return NULL;
    }
    hid_t f = base_h5_open_read(path, "file", err, errlen);
    if (f < 0) return NULL;
    Arr a[MAXA];
    int n = 0, rc = 0;
    if (!strcmp(kind, "motion")) {
        rc = read_arr(f, "vertices", "positions", true, 3, 3, 3, &a[n++], err, errlen) ||
             read_arr(f, "mesh/faces", "faces", false, 2, 2, 3, &a[n++], err, errlen) ||
             read_arr(f, "rig/joint_positions", "joints", true, 3, 3, 3, &a[n++], err, errlen) ||
             read_arr(f, "rig/parents", "parents", false, 1, 1, 0, &a[n++], err, errlen);
        if (!rc && has(f, "mesh/colors")) rc = read_arr(f, "mesh/colors", "colors", true, 2, 2, 3, &a[n++], err, errlen);
    } else if (!strcmp(kind, "rig")) {
        rc = read_arr(f, "rest/points", "positions", true, 2, 2, 3, &a[n++], err, errlen);
        if (!rc && has(f, "faces")) rc = read_arr(f, "faces", "faces", false, 2, 2, 3, &a[n++], err, errlen);
        if (!rc && has(f, "bones/labels")) rc = read_arr(f, "bones/labels", "labels", false, 1, 1, 0, &a[n++], err, errlen);
        if (!rc && has(f, "ik/joints") && has(f, "ik/parents"))
            rc = read_arr(f, "ik/joints", "joints", true, 3, 3, 3, &a[n++], err, errlen) ||
                 read_arr(f, "ik/parents", "parents", false, 1, 1, 0, &a[n++], err, errlen);
        else if (!rc && has(f, "joints/positions") && has(f, "joints/parents"))
            rc = read_arr(f, "joints/positions", "joints", true, 2, 2, 3, &a[n++], err, errlen) ||
                 read_arr(f, "joints/parents", "parents", false, 1, 1, 0, &a[n++], err, errlen);
    } else {
        rc = read_arr(f, has(f, "positions") ? "positions" : "frames/positions", "positions", true, 2, 3, 3, &a[n++], err, errlen);
        if (!rc && has(f, "faces")) rc = read_arr(f, "faces", "faces", false, 2, 2, 3, &a[n++], err, errlen);
    }
    H5Fclose(f);
    uint8_t *out = NULL;
    if (rc) goto done;
    /* indices must point inside what they index: the page trusts them */
    int64_t npts = a[0].rank == 3 ? (int64_t)a[0].dims[1] : (int64_t)a[0].dims[0], njoints = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(a[i].name, "joints")) njoints = a[i].rank == 3 ? (int64_t)a[i].dims[1] : (int64_t)a[i].dims[0];
    for (int i = 0; i < n; i++) {
        int64_t lim = !strcmp(a[i].name, "faces") ? npts : !strcmp(a[i].name, "parents") ? njoints : -1;
        const int32_t *v = a[i].data;
        for (size_t k = 0; lim >= 0 && k < a[i].bytes / 4; k++)
            if (v[k] >= lim || v[k] < (!strcmp(a[i].name, "parents") ? -1 : 0)) {
                base_errf(err, errlen, "%s: %s holds an index out of range", path, a[i].name);
                goto done;
            }
    }
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "arrays");
    cJSON_AddStringToObject(j, "kind", kind);
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *sh = cJSON_AddArrayToObject(o, "shape");
        cJSON_AddStringToObject(o, "name", a[i].name);
        cJSON_AddStringToObject(o, "type", a[i].f32 ? "f32" : "i32");
        for (int r = 0; r < a[i].rank; r++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)a[i].dims[r]));
        cJSON_AddItemToArray(arr, o);
    }
    char *js = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!js) {
        base_errf(err, errlen, "out of memory");
        goto done;
    }
    size_t jl = strlen(js), jp = (jl + 3) / 4 * 4, total = 8 + jp;
    for (int i = 0; i < n; i++) total += a[i].bytes;
    out = malloc(total);
    if (!out) {
        free(js);
        base_errf(err, errlen, "out of memory");
        goto done;
    }
    uint32_t h[2] = {0x31415641u, (uint32_t)jp};
    memcpy(out, h, 8);
    memset(out + 8, ' ', jp);
    memcpy(out + 8, js, jl);
    free(js);
    size_t off = 8 + jp;
    for (int i = 0; i < n; i++) memcpy(out + off, a[i].data, a[i].bytes), off += a[i].bytes;
    *len = total;
done:
    for (int i = 0; i < n; i++) free(a[i].data);
    return out;
}
