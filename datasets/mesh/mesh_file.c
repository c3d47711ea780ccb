/* datasets/mesh/mesh_file.c — the mesh IO entry points of mesh.h (ds_mesh_read, ds_mesh_read_mem,
 * ds_mesh_write): the format by the name's extension, then the format's reader or writer
 * (mesh_formats.h); and the mesh files of a folder (ds_mesh_list_dir). Apart from mesh_io.c so that the format files, which use its helpers, and
 * the dispatch over them do not depend on each other both ways. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/sort.h"
#include "datasets/mesh/mesh_formats.h"
#include "datasets/mesh/mesh_internal.h"

static const char *ext_of(const char *name) {
    const char *slash = strrchr(name, '/'), *dot = strrchr(name, '.');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

bool ds_mesh_readable_name(const char *name) {
    const char *ext = ext_of(name);
    return !strcasecmp(ext, "obj") || !strcasecmp(ext, "ply") || !strcasecmp(ext, "off") || !strcasecmp(ext, "stl");
}

int ds_mesh_list_dir(const char *dir, char ***names, int64_t *n) {
    *names = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t cap = 0;
    errno = 0;
    for (struct dirent *e; (e = readdir(d)); errno = 0) {
        if (e->d_name[0] == '.' || !ds_mesh_readable_name(e->d_name)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            *names = base_realloc(*names, sizeof **names * (size_t)cap);
        }
        (*names)[(*n)++] = base_strdup(e->d_name);
    }
    int rd = errno;
    closedir(d);
    if (rd) {
        ds_mesh_names_free(*names, *n);
        *names = NULL, *n = 0;
        errno = rd;
        return -1;
    }
    qsort(*names, (size_t)*n, sizeof **names, base_cmp_str);
    return 0;
}

void ds_mesh_names_free(char **names, int64_t n) {
    for (int64_t i = 0; i < n; i++) free(names[i]);
    free(names);
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
