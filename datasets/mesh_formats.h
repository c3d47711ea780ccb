/* datasets/mesh_formats.h — the per-format mesh readers and writers (one file each:
 * mesh_obj.c, mesh_ply.c, mesh_off.c, mesh_stl.c), which mesh_file.c dispatches to by
 * extension. Apart from mesh_internal.h, the helpers they sit on. Not a public header. */
#ifndef ANIMA_DATASETS_MESH_FORMATS_H
#define ANIMA_DATASETS_MESH_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh.h"

int mesh_read_obj(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int mesh_read_ply(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int mesh_read_off(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int mesh_read_stl(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int mesh_write_obj(const char *path, const DsMesh *m, char *err, size_t errlen);
int mesh_write_ply(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen);
int mesh_write_off(const char *path, const DsMesh *m, char *err, size_t errlen);
int mesh_write_stl(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen);

#endif
