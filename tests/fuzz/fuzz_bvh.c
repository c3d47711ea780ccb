/* tests/fuzz/fuzz_bvh.c — libFuzzer harness for the BVH reader; an accepted file is also posed
 * (first and last frame) so forward kinematics sees whatever the reader lets through. */
#include <math.h>
#include <stdlib.h>

#include "datasets/mesh/bvh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DsBvh b;
    char err[512];
    if (ds_bvh_read_mem("fuzz.bvh", data, size, &b, err, sizeof err) == 0) {
        double *w = malloc(sizeof(double) * 16 * (size_t)b.njoints);
        if (!w) abort();
        ds_bvh_pose(&b, -1, w);
        if (b.nframes > 0) ds_bvh_pose(&b, b.nframes - 1, w);
        for (int j = 0; j < b.njoints; j++)
            if (b.joints[j].parent >= j || b.joints[j].chan_start + b.joints[j].nchan > b.nchannels) abort();
        free(w);
        ds_bvh_free(&b);
    } else if (!err[0]) {
        abort();
    }
    return 0;
}
