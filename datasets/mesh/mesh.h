/* datasets/mesh/mesh.h — triangle meshes in plain arrays, and the mesh file formats: OBJ, PLY
 * (ASCII, binary little/big endian), OFF, STL (ASCII, binary) in; OBJ and PLY out. Readers
 * never trust their input: a malformed file gives an error naming the file, the line or byte
 * offset and the problem. Each reader has a fuzz harness (tests/fuzz/). */
#ifndef ANIMA_DATASETS_MESH_H
#define ANIMA_DATASETS_MESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t nv, nf;
    float *v;      /* nv × 3 positions */
    float *n;      /* nv × 3 normals, or NULL */
    float *color;  /* nv × 3 colors in [0, 1], or NULL */
    float *scalar; /* nv scalars (written as a PLY property "value"), or NULL */
    int32_t *f;    /* nf × 3 triangles (polygons are fan-triangulated on read) */
} DsMesh;

void ds_mesh_free(DsMesh *m); /* frees the arrays, zeroes the struct */

/* Format from the extension (.obj .ply .off .stl, any case); 0 or -1 with err set. */
int ds_mesh_read(const char *path, DsMesh *m, char *err, size_t errlen);
/* The same on bytes in memory (fuzz harnesses); `name` names the source in messages and its
 * extension picks the format. */
int ds_mesh_read_mem(const char *name, const uint8_t *data, size_t size, DsMesh *m, char *err, size_t errlen);
/* .obj or .ply (binary little endian, or ASCII when ascii is true); written to a temporary
 * name and renamed. Also .off, and .stl (binary, or ASCII when ascii is true), which keep
 * positions and faces only (OFF colors are not written; STL has no shared vertices). */
int ds_mesh_write(const char *path, const DsMesh *m, bool ascii, char *err, size_t errlen);

/* Whether ds_mesh_read reads a file of this name: its extension is .obj .ply .off .stl (any case). */
bool ds_mesh_readable_name(const char *name);
/* The mesh files of folder dir: the entries whose names ds_mesh_readable_name takes, less those
 * starting with '.', in strcmp order. *names gets *n malloc'd names in a malloc'd array (free
 * them with ds_mesh_names_free). 0, or -1 with errno set when the folder cannot be read. */
int ds_mesh_list_dir(const char *dir, char ***names, int64_t *n);
void ds_mesh_names_free(char **names, int64_t n);

typedef enum { DS_PLY_ASCII, DS_PLY_BINARY_LE, DS_PLY_BINARY_BE } DsPlyFormat;
/* PLY in a chosen encoding (big endian is only for tests and tools that need one). */
int ds_mesh_write_ply(const char *path, const DsMesh *m, DsPlyFormat fmt, char *err, size_t errlen);

#endif
