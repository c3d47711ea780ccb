/* tests/fuzz/fuzz_dnerf.c — libFuzzer harness for the D-NeRF / nerfstudio transforms reader
 * (datasets/motion/dnerf.h): any JSON text must give a split or an error naming the source, never
 * a crash, a sanitizer report or a leak. The images it may name ("a", "b.png", "./c") are made
 * once in a temporary folder (4x3 RGBA, 4x3 RGB, 2x2 gray). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/motion/dnerf.h"
#include "datasets/render/image.h"

static char g_dir[64];

static void make_png(const char *name, int w, int h, int ch) {
    char path[128], err[256];
    DsImage img;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (ds_image_init(&img, w, h, ch, err, sizeof err)) abort();
    for (int i = 0; i < w * h * ch; i++) img.data[i] = (uint8_t)(37 * i);
    if (ds_image_write(path, &img, err, sizeof err)) abort();
    ds_image_free(&img);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(g_dir, sizeof g_dir, "/tmp/anima-fuzz-dnerf-XXXXXX");
    if (!mkdtemp(g_dir)) abort();
    make_png("a.png", 4, 3, 4);
    make_png("b.png", 4, 3, 3);
    make_png("c.png", 2, 2, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    DsDnerfSplit s;
    char err[1024];
    err[0] = 0;
    if (ds_dnerf_load_text("fuzz.json", (const char *)data, size, g_dir, &s, err, sizeof err) == 0) {
        /* an accepted split must be what it says: touch every pixel (ASan checks the bounds) */
        if (s.n < 1 || s.width < 1 || s.height < 1 || !s.views) abort();
        float sum = 0;
        for (int i = 0; i < s.n; i++) {
            if (!s.views[i].rgba || !(s.views[i].time >= 0 && s.views[i].time <= 1)) abort();
            if (!(s.views[i].cam.fx > 0) || s.views[i].cam.width != s.width) abort();
            for (size_t k = 0; k < 4 * (size_t)s.width * (size_t)s.height; k++) sum += s.views[i].rgba[k];
        }
        if (sum < 0) abort();
        ds_dnerf_free(&s);
    } else if (strncmp(err, "fuzz.json", 9) != 0 || s.n != 0 || s.views) {
        abort(); /* an error names the source and leaves nothing allocated */
    }
    return 0;
}
