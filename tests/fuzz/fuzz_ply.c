/* tests/fuzz/fuzz_ply.c — libFuzzer harness for the PLY reader: any bytes must give a mesh or an
 * error message, never a crash, a sanitizer report or a leak. */
#include <stdio.h>
#include <stdlib.h>

#include "datasets/mesh/mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DsMesh m;
    char err[512];
    if (ds_mesh_read_mem("fuzz.ply", data, size, &m, err, sizeof err) == 0) {
        /* a mesh the reader accepts must be safe to use: every index in range */
        for (int64_t i = 0; i < 3 * m.nf; i++)
            if (m.f[i] < 0 || m.f[i] >= m.nv) abort();
        ds_mesh_free(&m);
    } else if (!err[0]) {
        abort(); /* an error must say what went wrong */
    }
    return 0;
}
