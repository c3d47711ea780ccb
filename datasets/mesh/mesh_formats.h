/* datasets/mesh/mesh_formats.h — the per-format mesh readers and writers (one file each:
 * mesh_obj.c, mesh_ply.c, mesh_off.c, mesh_stl.c), which mesh_file.c dispatches to by
 * extension. Apart from mesh_internal.h, the helpers they sit on. Not a public header. */
#ifndef ANIMA_DATASETS_MESH_FORMATS_H
#define ANIMA_DATASETS_MESH_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datasets/mesh/mesh.h"

int ds_mesh_obj_read(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int ds_mesh_ply_read(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int ds_mesh_off_read(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int ds_mesh_stl_read(const char *name, const uint8_t *d, size_t n, DsMesh *m, char *err, size_t errlen);
int ds_mesh_obj_write(const char *path, const DsMesh *m, char *err, size_t errlen);
int ds_mesh_ply_write(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen);
int ds_mesh_off_write(const char *path, const DsMesh *m, char *err, size_t errlen);
int ds_mesh_stl_write(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen);

#endif
