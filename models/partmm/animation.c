/* models/partmm/animation.c — the animation file (animation.h) */
#include "models/partmm/animation.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/h5file.h"

int pm_animation_write(const char *path, int F, int B, int J, const float *tb, const float *rot, const float *trans,
                         int FK, const float *krot, const float *ktrans, const char *motion, const char *rig, char *err,
                         size_t errlen) {
    char tmp[4200];
    hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, errlen);
    if (f < 0) return -1;
    hsize_t dt[4] = {(hsize_t)F, (hsize_t)B, 3, 4}, dq[3] = {(hsize_t)F, (hsize_t)J, 4}, dtr[2] = {(hsize_t)F, 3};
    bool ok = base_h5_write_checked(f, "bones/transforms", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, dt, tb, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "pose/rotations", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dq, rot, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "pose/translation", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dtr, trans, 1 << 20, false) == 0;
    /* the database's keys (the refit IK of the rig's frames), so --reuse-pose skips both IKs */
    hsize_t dk[3] = {(hsize_t)FK, (hsize_t)J, 4}, dkt[2] = {(hsize_t)FK, 3};
    ok = ok && base_h5_write_checked(f, "keys/rotations", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, dk, krot, 1 << 20, false) == 0;
    ok = ok && base_h5_write_checked(f, "keys/translation", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dkt, ktrans, 1 << 20, false) == 0;
    ok = ok && base_h5_attr_str(f, "producer", "anima animate (PartMM)") == 0;
    ok = ok && base_h5_attr_str(f, "motion", motion) == 0 && base_h5_attr_str(f, "rig", rig) == 0;
    ok = ok && base_h5_attr_i64(f, "frames", F) == 0 && base_h5_attr_i64(f, "bones", B) == 0;
    return base_h5_save_end(f, tmp, path, ok, "animation", err, errlen);
}

int pm_animation_read_pose(const char *path, const char *motion, int Q, int F, int J, float *qrot, float *qtrans, float *krot,
                        float *ktrans, char *err, size_t errlen) {
    hid_t f = base_h5_open_read(path, "an animation.h5 of anima animate", err, errlen);
    if (f < 0) return -1;
    char *m = base_h5_attr_read_str(f, "motion", 4096);
    int rc = 0;
    if (!m || strcmp(m, motion))
        rc = base_errf(err, errlen, "%s: made for --motion %s, not %s", path, m ? m : "(none)", motion);
    free(m);
    struct {
        const char *name;
        int rank;
        int64_t dims[3];
        float *dst;
    } ds[4] = {{"pose/rotations", 3, {Q, J, 4}, qrot}, {"pose/translation", 2, {Q, 3}, qtrans},
               {"keys/rotations", 3, {F, J, 4}, krot}, {"keys/translation", 2, {F, 3}, ktrans}};
    for (int k = 0; k < 4 && !rc; k++) {
        void *buf = NULL;
        int64_t want[3];
        memcpy(want, ds[k].dims, sizeof want);
        rc = base_h5_read_typed(f, path, ds[k].name, ds[k].rank, want, H5T_NATIVE_FLOAT, 4, &buf, err, errlen);
        if (!rc) {
            int64_t cnt = 1;
            for (int d = 0; d < ds[k].rank; d++) cnt *= ds[k].dims[d];
            memcpy(ds[k].dst, buf, sizeof(float) * cnt);
        }
        free(buf);
    }
    H5Fclose(f);
    return rc;
}
