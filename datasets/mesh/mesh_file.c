/* datasets/mesh/mesh_file.c — the mesh IO entry points of mesh.h (ds_mesh_read, ds_mesh_read_mem,
 * ds_mesh_write): the format by the name's extension, then the format's reader or writer
 * (mesh_formats.h). Apart from mesh_io.c so that the format files, which use its helpers, and
 * the dispatch over them do not depend on each other both ways. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "datasets/mesh/mesh_formats.h"
#include "datasets/mesh/mesh_internal.h"

static const char *ext_of(const char *name) {
    const char *slash = strrchr(name, '/'), *dot = strrchr(name, '.');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

int ds_mesh_read_mem(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    const char *ext = ext_of(name);
    int rc;
    if (!strcasecmp(ext, "obj")) rc = ds_mesh_obj_read(name, data, size, m, err, errlen);
    else if (!strcasecmp(ext, "ply")) rc = ds_mesh_ply_read(name, data, size, m, err, errlen);
    else if (!strcasecmp(ext, "off")) rc = ds_mesh_off_read(name, data, size, m, err, errlen);
    else if (!strcasecmp(ext, "stl")) rc = ds_mesh_stl_read(name, data, size, m, err, errlen);
    else return base_errf(err, errlen, "%s: unknown mesh format '.%s' (anima reads .obj .ply .off .stl)", name, ext);
    if (rc) {
        ds_mesh_free(m);
        return -1;
    }
    if (m->nv == 0) {
        ds_mesh_free(m);
        return base_errf(err, errlen, "%s: no vertices", name);
    }
    return 0;
}

int ds_mesh_read(const char *path, DsMesh *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    uint8_t *data;
    size_t size;
    if (ds_file_slurp(path, 0, NULL, &data, &size, err, errlen)) return -1;
    int rc = ds_mesh_read_mem(path, data, size, m, err, errlen);
    free(data);
    return rc;
}

int ds_mesh_write(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen) {
    for (int64_t i = 0; i < 3 * m->nf; i++)
        if (m->f[i] < 0 || m->f[i] >= m->nv)
            return base_errf(err, errlen, "%s: face %lld refers to vertex %d of %lld", path, (long long)(i / 3),
                               m->f[i], (long long)m->nv);
    const char *ext = ext_of(path);
    if (!strcasecmp(ext, "obj")) return ds_mesh_obj_write(path, m, err, errlen);
    if (!strcasecmp(ext, "ply")) return ds_mesh_ply_write(path, m, ascii, err, errlen);
    if (!strcasecmp(ext, "off")) return ds_mesh_off_write(path, m, err, errlen);
    if (!strcasecmp(ext, "stl")) return ds_mesh_stl_write(path, m, ascii, err, errlen);
    return base_errf(err, errlen, "%s: unknown mesh format '.%s' (anima writes .obj .ply .off .stl)", path, ext);
}
