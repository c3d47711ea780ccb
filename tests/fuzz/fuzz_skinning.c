/* tests/fuzz/fuzz_skinning.c — libFuzzer harness for the skinning file reader (HDF5,
 * datasets/corpus/skinning_file.h), the file a scene names for each object: any bytes must give a
 * valid skinning or an error message naming the file, never a crash or a sanitizer report.
 * HDF5 reads from a path, so each input is written to a file of this process first. libhdf5
 * itself is not instrumented: ASan checks the reader's own code, and a crash inside the library
 * still stops the run. Its leaks on corrupt-file error paths are suppressed by
 * tests/fuzz/lsan.supp (as tests/valgrind.supp does for the unit tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/corpus/skinning_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/anima-fuzz-skinning-%d.h5", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    DsSkinning s;
    char err[1024];
    err[0] = 0;
    if (ds_skinning_read(path, &s, err, sizeof err) == 0) {
        /* accepted: every array is as large as it says (ASan checks the bounds) */
        double sum = 0;
        for (int64_t i = 0; i < s.nc * s.m * 3; i++) sum += s.cub_dw[i];
        for (int64_t i = 0; i < s.nv * s.m; i++) sum += s.vert_w[i];
        for (int64_t i = 0; i < s.nf * 3; i++)
            if (s.faces[i] < 0 || s.faces[i] >= s.nv) abort(); /* validated indices */
        if (sum != sum) abort(); /* validated finite */
        ds_skinning_free(&s);
    } else if (strncmp(err, path, strlen(path)) != 0) {
        abort(); /* an error must name the file */
    }
    return 0;
}
