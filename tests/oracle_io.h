/* tests/oracle_io.h — the reader for the PyTorch oracle's fixture files (ops.afx and blocks.afx
 * in tests/oracle/fixtures/, written by tests/oracle/make_fixtures.py). Format, little-endian:
 *     file   := magic "ANIMAFX1" | u32 count | count x record
 *     record := u16 name_len | name bytes | u8 dtype (0 f64, 1 i64) | u8 ndim (0..8)
 *               | ndim x i64 shape | prod(shape) x 8-byte elements, row-major
 * and nothing after the last record. A malformed file is an input error: the loader returns
 * false with a message naming the file, the record and what was expected; it never reads out
 * of bounds. */
#ifndef ANIMA_TESTS_ORACLE_IO_H
#define ANIMA_TESTS_ORACLE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/tensor.h"

typedef enum { ORACLE_F64 = 0, ORACLE_I64 = 1 } OracleDType;

typedef struct {
    const char *name; /* NUL-terminated copy */
    OracleDType dtype;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t numel;
    const void *data; /* numel elements; not necessarily 8-byte aligned, read with memcpy */
} OracleArray;

typedef struct {
    int n;
    OracleArray *arrays;
    char *blob; /* the file's bytes and the names (owned) */
} OracleFile;

/* Parse `size` bytes (copied). `what` names the source in messages. */
bool oracle_parse(const void *bytes, size_t size, const char *what, OracleFile *f, char *err, size_t errsize);
bool oracle_load(const char *path, OracleFile *f, char *err, size_t errsize);
void oracle_free(OracleFile *f);
const OracleArray *oracle_find(const OracleFile *f, const char *name);
/* The array as a new tensor: f64 arrays in `dt` (f32 or f64), i64 arrays always as i64. */
Tensor *oracle_tensor(const OracleArray *a, TensorDType dt);

#endif
