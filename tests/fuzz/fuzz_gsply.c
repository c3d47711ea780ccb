/* tests/fuzz/fuzz_gsply.c — libFuzzer harness for the 3D Gaussian Splatting PLY reader. */
#include <stdlib.h>

#include "datasets/mesh/gaussian_ply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DsGaussians g;
    char err[512];
    if (ds_gaussians_read_mem("fuzz.ply", data, size, &g, err, sizeof err) == 0) {
        if (g.sh_degree < 0 || g.sh_degree > 3 || g.n < 0) abort();
        ds_gaussians_free(&g);
    } else if (!err[0]) {
        abort();
    }
    return 0;
}
