/* datasets/mesh/mesh_internal.h — what the mesh readers and writers share and nobody else needs:
 * error formatting, a text scanner that counts lines, strict number parsing, growable arrays,
 * the generic PLY header/value layer (the mesh PLY and the 3DGS PLY readers both sit on it),
 * and writing through a temporary file (defined in mesh_io.c and mesh_ply_format.c). The
 * per-format readers and writers are in mesh_formats.h. Not a public header. */
#ifndef ANIMA_DATASETS_MESH_INTERNAL_H
#define ANIMA_DATASETS_MESH_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "datasets/mesh/mesh.h"
#include "base/errbuf.h"

/* Largest vertex or face count a reader accepts: indices are int32 and counts must fit
 * int32-indexed arrays. Counts also have to be possible for the input's size (checked apart). */
#define MESH_MAX_COUNT ((int64_t)INT32_MAX)

/* "<name>:<line>: <problem>", returning -1 */
int ds_line_err(char *err, size_t n, const char *name, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- text scanning ------------------------------------------------------------------------ */

/* A cursor over a byte buffer with a line counter. Text readers work line by line: `ds_line_next`
 * hands out one line (without its terminator; a trailing '\r' is dropped too), and `ds_tok_next`
 * splits a line into whitespace-separated tokens. Tokens are (pointer, length) slices: the
 * input is never modified and need not be NUL-terminated. */
typedef struct {
    const char *p, *end;
    int64_t line; /* 1-based number of the line last returned */
} TextCursor;

typedef struct {
    const char *s;
    size_t len;
} Tok;

void ds_text_init(TextCursor *c, const uint8_t *data, size_t size);
/* Next line into *ln (ln->s/ln->len); false at end of input. */
bool ds_line_next(TextCursor *c, Tok *ln);
/* Next token of *rest (advancing it); false when only whitespace is left. */
bool ds_tok_next(Tok *rest, Tok *tok);
bool ds_tok_eq(Tok t, const char *s);
bool ds_tok_eq_nocase(Tok t, const char *s);
/* Strict numbers: the whole token must be the number (so "3.1+e2" is an error, not 3.1).
 * Floats must be finite after rounding to float. */
bool ds_tok_float(Tok t, float *out);
bool ds_tok_double(Tok t, double *out);
bool ds_tok_int64(Tok t, int64_t *out);
/* The token quoted for messages, shortened when long ("'abc...'"). */
const char *ds_tok_show(Tok t, char *buf, size_t n);
/* A NUL byte in a text file almost always means the file is binary or UTF-16: say so. */
bool ds_has_nul(Tok line);

/* ---- growable arrays ---------------------------------------------------------------------- */

typedef struct {
    void *data;
    size_t len, cap, elem; /* len and cap in elements */
} Vec;

void ds_vec_init(Vec *v, size_t elem);
/* Room for `more` elements past len; false if the allocation failed (or would overflow). */
bool ds_vec_reserve(Vec *v, size_t more);
bool ds_vec_push(Vec *v, const void *x);
void ds_vec_free(Vec *v);

/* ---- the mesh being built ----------------------------------------------------------------- */

/* Appends triangles (a, b, c) fanned from a polygon's corners: (i0, i1, i2), (i0, i2, i3), ... */
bool ds_fan_push(Vec *tris, const int32_t *idx, int64_t n);
/* Moves the vectors into m (nv vertices, nf = tris->len / 3); the vectors are emptied. */
void ds_mesh_take(DsMesh *m, Vec *v, Vec *n, Vec *color, Vec *scalar, Vec *tris);

/* Deduplicates vertices by exact position (STL stores corners, not shared vertices). */
typedef struct {
    int32_t *slot; /* hash table of vertex indices, -1 empty */
    size_t mask;
    Vec *v;        /* the positions, 3 floats per vertex */
} VertexDedup;
bool ds_dedup_init(VertexDedup *d, Vec *v, size_t expected);
/* Index of the vertex at p (added if new); -1 when out of memory or past MESH_MAX_COUNT. */
int32_t ds_dedup_add(VertexDedup *d, const float p[3]);
void ds_dedup_free(VertexDedup *d);

/* ---- PLY header and values ---------------------------------------------------------------- */

typedef enum { PLY_CHAR, PLY_UCHAR, PLY_SHORT, PLY_USHORT, PLY_INT, PLY_UINT, PLY_FLOAT, PLY_DOUBLE } PlyType;
typedef enum { PLY_ASCII, PLY_BINARY_LE, PLY_BINARY_BE } PlyFormat;

typedef struct {
    char name[64];
    bool is_list;
    PlyType type;       /* the value type (list items for a list) */
    PlyType count_type; /* lists only */
} PlyProp;

typedef struct {
    char name[64];
    int64_t count;
    int nprops;
    PlyProp *props;
} PlyElem;

typedef struct {
    PlyFormat format;
    int nelems;
    PlyElem *elems;
    size_t body;       /* byte offset of the first data byte */
    int64_t body_line; /* line number of the last header line (ASCII bodies count from it) */
} PlyHeader;

/* Parses the header up to and including "end_header". Element counts are checked against the
 * bytes left after the header (each element needs at least one byte per property in binary,
 * two in ASCII), so an absurd count is an error here and no allocation trusts it. */
int ds_ply_header_parse(const char *name, const uint8_t *data, size_t size, PlyHeader *h, char *err, size_t errlen);
void ds_ply_header_free(PlyHeader *h);
int ds_ply_type_size(PlyType t);
const char *ds_ply_type_name(PlyType t);

/* Reads values from the body in the header's format. `where` formats the current position
 * ("<name>:<line>" or "<name>: byte <offset>") for messages. */
typedef struct {
    const char *name;
    const uint8_t *data;
    size_t size, pos;
    PlyFormat format;
    int64_t line;
} PlyReader;

void ds_ply_reader_init(PlyReader *r, const char *name, const uint8_t *data, size_t size, const PlyHeader *h);
int ds_ply_read_value(PlyReader *r, PlyType t, double *out, char *err, size_t errlen);
/* Skips one property (a list reads its count, then skips the items). */
int ds_ply_skip_prop(PlyReader *r, const PlyProp *p, char *err, size_t errlen);
void ds_ply_where(const PlyReader *r, char *buf, size_t n);

/* ---- writing ------------------------------------------------------------------------------ */

/* Opens "<path>.tmp.<pid>" for writing; ds_mesh_out_close flushes, checks every write and renames
 * it over `path` (or removes it on failure), so no reader ever sees half a file. */
typedef struct {
    FILE *f;
    char tmp[4096];
    const char *path;
} MeshOut;
int ds_mesh_out_open(MeshOut *o, const char *path, char *err, size_t errlen);
int ds_mesh_out_close(MeshOut *o, bool ok, char *err, size_t errlen);
void ds_put_f32_le(FILE *f, float x);
void ds_put_i32_le(FILE *f, int32_t x);

/* Reads a whole regular file into memory (malloc'd *data of *size bytes); a file over `max`
 * bytes (0: no bound) is refused with "<path>: file too large for <what> (N bytes)". The image
 * reader uses it too. 0, or -1 with err naming the file. */
int ds_file_slurp(const char *path, size_t max, const char *what, uint8_t **data, size_t *size, char *err, size_t errlen);

#endif
