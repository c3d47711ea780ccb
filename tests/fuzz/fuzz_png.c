/* tests/fuzz/fuzz_png.c — libFuzzer harness for the PNG reader: any bytes must give an image or
 * an error message naming the source, never a crash, a sanitizer report or a leak. */
#include <stdlib.h>
#include <string.h>

#include "datasets/render/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DsImage img;
    char err[512];
    err[0] = 0;
    if (ds_image_read_mem("fuzz.png", data, size, &img, err, sizeof err) == 0) {
        /* an accepted image must be what it says: touch every byte (ASan checks the bounds) */
        if (img.w <= 0 || img.h <= 0 || img.channels < 1 || img.channels > 4 || !img.data) abort();
        size_t n = (size_t)img.w * (size_t)img.h * (size_t)img.channels;
        unsigned sum = 0;
        for (size_t i = 0; i < n; i++) sum += img.data[i];
        if (sum == 0xFFFFFFFFu) abort(); /* keeps the loop */
        ds_image_free(&img);
    } else if (strncmp(err, "fuzz.png: ", 10) != 0) {
        abort(); /* an error must name the source */
    }
    return 0;
}
