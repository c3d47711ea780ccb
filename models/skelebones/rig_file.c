/* models/skelebones/rig_file.c — rig.h5 read back (rig_file.h). */
#include "models/skelebones/rig_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/h5file.h"
#include "datasets/mesh/gltf.h"
#include "datasets/motion/rig.h"
#include "models/skelebones/cluster.h"
#include "models/skelebones/skelebones.h"

void sb_rig_file_free(SbRigFile *r) {
    free(r->rest), free(r->weights), free(r->transforms), free(r->faces);
    memset(r, 0, sizeof *r);
}

int sb_rig_file_read(const char *path, SbRigFile *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    base_h5_quiet();
    hid_t f = base_h5_open_read(path, "skelebones rig (rig.h5)", err, errlen);
    if (f < 0) return -1;
    int rc = -1;
    char *prod = base_h5_attr_read_str(f, "producer", 256);
    if (!prod || strncmp(prod, SB_RIG_PRODUCER, strlen(SB_RIG_PRODUCER))) {
        base_errf(err, errlen, "%s: producer '%s', expected an `anima skelebones` rig", path, prod ? prod : "(none)");
        free(prod);
        goto done;
    }
    free(prod);
    int64_t dr[2] = {-1, 3}, dw[2], dt[4] = {-1, -1, 3, 4};
    void *p;
    if (base_h5_read_array(f, path, "rest/points", 2, dr, false, &p, err, errlen)) goto done;
    r->rest = p, r->npoints = dr[0];
    dw[0] = r->npoints, dw[1] = -1;
    if (base_h5_read_array(f, path, "bones/weights", 2, dw, false, &p, err, errlen)) goto done;
    r->weights = p, r->nbones = (int)dw[1];
    if (r->nbones < 1 || r->nbones > SB_MAX_BONES) {
        base_errf(err, errlen, "%s: bones/weights has %d bones (1 to %d)", path, r->nbones, SB_MAX_BONES);
        goto done;
    }
    dt[1] = r->nbones;
    if (base_h5_read_array(f, path, "bones/transforms", 4, dt, false, &p, err, errlen)) goto done;
    r->transforms = p, r->nframes = (int)dt[0];
    if (r->nframes < 1) {
        base_errf(err, errlen, "%s: bones/transforms has no frames", path);
        goto done;
    }
    if (H5Lexists(f, "rest", H5P_DEFAULT) > 0 && H5Lexists(f, "rest/faces", H5P_DEFAULT) > 0) {
        int64_t df[2] = {-1, 3};
        if (base_h5_read_array(f, path, "rest/faces", 2, df, true, &p, err, errlen)) goto done;
        r->faces = p, r->nfaces = df[0];
        for (int64_t i = 0; i < 3 * r->nfaces; i++)
            if (r->faces[i] < 0 || r->faces[i] >= r->npoints) {
                base_errf(err, errlen, "%s: rest/faces: face %lld refers to point %d of %lld", path, (long long)(i / 3),
                          r->faces[i], (long long)r->npoints);
                goto done;
            }
    }
    rc = 0;
done:
    H5Fclose(f);
    if (rc) sb_rig_file_free(r);
    return rc;
}

/* SSDR bones have no tree (each is a free rigid transform of the rest shape), so bone b is joint
 * 1 + b, a child of a root joint 0 that never moves (glTF wants the joints of a skin under one
 * common root), its node transform the frame's [R | T] and its inverse bind matrix the identity
 * (the transforms map rest positions directly). */
int sb_rig_file_gltf(const SbRigFile *r, double fps, struct DsGltfMesh_ *g, void **owned, char *err, size_t errlen) {
    *owned = NULL;
    int B = r->nbones, J = B + 1, F = r->nframes;
    size_t N = (size_t)r->npoints, nj = (size_t)J, nf = (size_t)F;
    /* one block: floats (ibm, at, ar, colors, weights), then parents, names, name pointers */
    size_t nfl = 16 * nj + 3 * nj * nf + 4 * nj * nf + 3 * N + N * nj;
    char *buf = calloc(1, sizeof(float) * nfl + sizeof(int32_t) * nj + 16 * nj + sizeof(char *) * nj);
    if (!buf) return base_errf(err, errlen, "skelebones rig: out of memory");
    float *ibm = (float *)buf, *at = ibm + 16 * nj, *ar = at + 3 * nj * nf, *color = ar + 4 * nj * nf, *w = color + 3 * N;
    int32_t *parents = (int32_t *)(ibm + nfl);
    char(*names)[16] = (char(*)[16])(parents + nj);
    const char **name_ptr = (const char **)(names + nj);
    for (int j = 0; j < J; j++) {
        parents[j] = j ? 0 : -1;
        float *M = ibm + 16 * (size_t)j;
        M[0] = M[5] = M[10] = M[15] = 1;
        if (j) snprintf(names[j], 16, "bone_%d", j - 1);
        else snprintf(names[j], 16, "root");
        name_ptr[j] = names[j];
    }
    for (int k = 0; k < F; k++) {
        ar[4 * (size_t)k * nj + 3] = 1; /* the root: identity */
        for (int b = 0; b < B; b++) {
            const float *T = r->transforms + 12 * ((size_t)k * (size_t)B + (size_t)b);
            float *t = at + 3 * ((size_t)k * nj + 1 + (size_t)b), *q4 = ar + 4 * ((size_t)k * nj + 1 + (size_t)b);
            double R[9], q[4];
            for (int i = 0; i < 3; i++)
                for (int c = 0; c < 3; c++) R[3 * i + c] = T[4 * i + c];
            ds_quat_from_mat3(R, q); /* (w, x, y, z) */
            q4[0] = (float)q[1], q4[1] = (float)q[2], q4[2] = (float)q[3], q4[3] = (float)q[0];
            for (int i = 0; i < 3; i++) t[i] = T[4 * i + 3];
        }
    }
    for (size_t v = 0; v < N; v++) memcpy(w + v * nj + 1, r->weights + v * (size_t)B, sizeof(float) * (size_t)B);
    sb_bone_colors(r->weights, r->npoints, B, color); /* as bones.ply and bones.png */
    *g = (DsGltfMesh){.nv = r->npoints, .nf = r->nfaces, .pos = r->rest, .color = color, .faces = r->faces,
                      .name = "skelebones", .njoints = J, .parents = parents, .joint_names = name_ptr, .weights = w,
                      .inverse_bind = ibm, .joint_t = at, .joint_r = ar, .nframes = F, .fps = fps > 0 ? fps : 30,
                      .anim_t = at, .anim_r = ar};
    *owned = buf;
    return 0;
}
