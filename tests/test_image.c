/* tests/test_image.c — PNG reading and writing: exact 8-bit round trips, float quantization,
 * libpng's other formats (16-bit, palette + tRNS, 1-bit gray, interlaced) through the reader's
 * transforms, and malformed input (every truncation of a file, a non-PNG file, random byte
 * flips) giving errors that name the file instead of crashing. */
#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/render/image.h"
#include "tests/test.h"

static void tmp_path(char *buf, size_t n, const char *tag) {
    snprintf(buf, n, "/tmp/anima-test-img-%ld-%s.png", (long)getpid(), tag);
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

static bool file_exists(const char *p) { return access(p, F_OK) == 0; }

/* The temp files a writer would have left behind for `path` (pid-tagged). */
static bool temp_left(const char *path) {
    char pat[600];
    snprintf(pat, sizeof pat, "ls %s.tmp.* >/dev/null 2>&1", path);
    return system(pat) == 0;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

TEST(image_png_roundtrip_exact) {
    uint32_t seed = 7;
    for (int ch = 1; ch <= 4; ch++) {
        DsImage a, b;
        char err[512], path[256], tag[16];
        CHECK(ds_image_init(&a, 37, 23, ch, err, sizeof err) == 0);
        for (size_t i = 0; i < (size_t)37 * 23 * (size_t)ch; i++) a.data[i] = (uint8_t)(lcg(&seed) >> 24);
        a.data[0] = 0, a.data[1] = 255; /* the extremes */
        snprintf(tag, sizeof tag, "rt%d", ch);
        tmp_path(path, sizeof path, tag);
        CHECK_MSG(ds_image_write(path, &a, err, sizeof err) == 0, "%s", err);
        CHECK(!temp_left(path));
        CHECK_MSG(ds_image_read(path, &b, err, sizeof err) == 0, "%s", err);
        CHECK(b.w == 37 && b.h == 23 && b.channels == ch);
        if (b.data) CHECK(memcmp(a.data, b.data, (size_t)37 * 23 * (size_t)ch) == 0);
        ds_image_free(&a);
        ds_image_free(&b);
        remove(path);
    }
}

TEST(image_float_roundtrip_quantized) {
    DsImageF a, b;
    char err[512], path[256];
    CHECK(ds_imagef_init(&a, 19, 11, 3, err, sizeof err) == 0);
    uint32_t seed = 3;
    for (size_t i = 0; i < (size_t)19 * 11 * 3; i++) a.data[i] = (float)(lcg(&seed) >> 8) / 16777216.0f * 1.4f - 0.2f;
    a.data[0] = NAN, a.data[1] = -5, a.data[2] = 7; /* NaN → 0, clamped below and above */
    tmp_path(path, sizeof path, "float");
    CHECK_MSG(ds_imagef_write(path, &a, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(ds_imagef_read(path, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.w == 19 && b.h == 11 && b.channels == 3);
    CHECK(b.data[0] == 0 && b.data[1] == 0 && b.data[2] == 1);
    double worst = 0;
    for (size_t i = 3; b.data && i < (size_t)19 * 11 * 3; i++) {
        double want = a.data[i] < 0 ? 0 : a.data[i] > 1 ? 1 : a.data[i];
        if (fabs(b.data[i] - want) > worst) worst = fabs(b.data[i] - want);
    }
    CHECK_MSG(worst <= 0.5 / 255 + 1e-6, "worst quantization error %g", worst);
    /* quantization of k/255 is exact, so float → 8 bit → float → 8 bit is stable */
    for (int k = 0; k < 256; k++) CHECK(ds_image_quantize((float)k / 255.0f) == k);
    ds_imagef_free(&a);
    ds_imagef_free(&b);
    remove(path);
}

/* ds_imagef_write_pair: left | right side by side, each half the image it was given; an
 * unwritable path is an error naming it */
TEST(image_write_pair_side_by_side) {
    enum { W = 7, H = 5 };
    float l[W * H * 3], r[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) l[i] = (float)(i % 256) / 255.0f, r[i] = (float)((7 * i) % 256) / 255.0f;
    char err[512], path[256];
    tmp_path(path, sizeof path, "pair");
    CHECK_MSG(ds_imagef_write_pair(path, l, r, W, H, err, sizeof err) == 0, "%s", err);
    DsImageF b;
    CHECK_MSG(ds_imagef_read(path, &b, err, sizeof err) == 0, "%s", err);
    CHECK(b.w == 2 * W && b.h == H && b.channels == 3);
    int bad = 0;
    for (int y = 0; b.data && y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < 3; k++) {
                bad += b.data[(y * 2 * W + x) * 3 + k] != l[(y * W + x) * 3 + k];
                bad += b.data[(y * 2 * W + W + x) * 3 + k] != r[(y * W + x) * 3 + k];
            }
    CHECK_MSG(bad == 0, "%d values off", bad);
    ds_imagef_free(&b);
    remove(path);
    CHECK(ds_imagef_write_pair("/nonexistent-dir/p.png", l, r, W, H, err, sizeof err) == -1 && strstr(err, "/nonexistent-dir/p.png"));
}

/* Writes a PNG with libpng directly, in formats anima's writer never produces. */
static bool write_raw_png(const char *path, int w, int h, int depth, int ctype, int interlace, png_bytep *rows,
                          const png_color *pal, int npal, const png_byte *trns, int ntrns) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return false;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (pal) png_set_PLTE(png, info, pal, npal);
    if (trns) png_set_tRNS(png, info, trns, ntrns, NULL);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    return true;
}

TEST(image_png_converts_other_formats) {
    char err[512], path[256];
    DsImage img;
    enum { W = 9, H = 7 };
    /* 16-bit RGB with values k·257, which scale exactly to k */
    {
        static uint8_t px[H][W * 6];
        png_bytep rows[H];
        for (int y = 0; y < H; y++) {
            rows[y] = px[y];
            for (int i = 0; i < W * 3; i++) {
                unsigned v = (unsigned)((y * 31 + i * 7) % 256) * 257u;
                px[y][2 * i] = (uint8_t)(v >> 8), px[y][2 * i + 1] = (uint8_t)v;
            }
        }
        tmp_path(path, sizeof path, "rgb16");
        CHECK(write_raw_png(path, W, H, 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0));
        CHECK_MSG(ds_image_read(path, &img, err, sizeof err) == 0, "%s", err);
        CHECK(img.w == W && img.h == H && img.channels == 3);
        for (int y = 0; y < H && img.data; y++)
            for (int i = 0; i < W * 3; i++) CHECK(img.data[y * W * 3 + i] == (y * 31 + i * 7) % 256);
        ds_image_free(&img);
        remove(path);
    }
    /* 4-bit palette with a tRNS chunk: RGBA */
    {
        png_color pal[4] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
        png_byte trns[4] = {255, 128, 0, 255};
        static uint8_t px[H][(W + 1) / 2];
        png_bytep rows[H];
        for (int y = 0; y < H; y++) {
            rows[y] = px[y];
            memset(px[y], 0, sizeof px[y]);
            for (int x = 0; x < W; x++) px[y][x / 2] |= (uint8_t)(((x + y) % 4) << (x % 2 ? 0 : 4));
        }
        tmp_path(path, sizeof path, "pal");
        CHECK(write_raw_png(path, W, H, 4, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, rows, pal, 4, trns, 4));
        CHECK_MSG(ds_image_read(path, &img, err, sizeof err) == 0, "%s", err);
        CHECK(img.w == W && img.h == H && img.channels == 4);
        for (int y = 0; y < H && img.data; y++)
            for (int x = 0; x < W; x++) {
                int k = (x + y) % 4;
                const uint8_t *p = img.data + (y * W + x) * 4;
                CHECK(p[0] == pal[k].red && p[1] == pal[k].green && p[2] == pal[k].blue && p[3] == trns[k]);
            }
        ds_image_free(&img);
        remove(path);
    }
    /* 1-bit gray: 0 and 255 */
    {
        static uint8_t px[H][(W + 7) / 8];
        png_bytep rows[H];
        for (int y = 0; y < H; y++) {
            rows[y] = px[y];
            memset(px[y], 0, sizeof px[y]);
            for (int x = 0; x < W; x++)
                if ((x ^ y) & 1) px[y][x / 8] |= (uint8_t)(0x80 >> (x % 8));
        }
        tmp_path(path, sizeof path, "g1");
        CHECK(write_raw_png(path, W, H, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, rows, NULL, 0, NULL, 0));
        CHECK_MSG(ds_image_read(path, &img, err, sizeof err) == 0, "%s", err);
        CHECK(img.w == W && img.h == H && img.channels == 1);
        for (int y = 0; y < H && img.data; y++)
            for (int x = 0; x < W; x++) CHECK(img.data[y * W + x] == (((x ^ y) & 1) ? 255 : 0));
        ds_image_free(&img);
        remove(path);
    }
    /* Adam7-interlaced 8-bit RGBA */
    {
        static uint8_t px[H][W * 4];
        png_bytep rows[H];
        for (int y = 0; y < H; y++) {
            rows[y] = px[y];
            for (int i = 0; i < W * 4; i++) px[y][i] = (uint8_t)(y * 37 + i * 11);
        }
        tmp_path(path, sizeof path, "adam7");
        CHECK(write_raw_png(path, W, H, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_ADAM7, rows, NULL, 0, NULL, 0));
        CHECK_MSG(ds_image_read(path, &img, err, sizeof err) == 0, "%s", err);
        CHECK(img.w == W && img.h == H && img.channels == 4);
        for (int y = 0; y < H && img.data; y++) CHECK(memcmp(img.data + y * W * 4, px[y], W * 4) == 0);
        ds_image_free(&img);
        remove(path);
    }
}

TEST(image_truncated_and_not_png) {
    char err[512], path[256];
    DsImage a, b;
    CHECK(ds_image_init(&a, 40, 30, 3, err, sizeof err) == 0);
    uint32_t seed = 11;
    for (size_t i = 0; i < (size_t)40 * 30 * 3; i++) a.data[i] = (uint8_t)(lcg(&seed) >> 24);
    tmp_path(path, sizeof path, "full");
    CHECK_MSG(ds_image_write(path, &a, err, sizeof err) == 0, "%s", err);
    size_t n = 0;
    uint8_t *bytes = slurp(path, &n);
    CHECK(bytes && n > 100);
    /* every proper prefix fails cleanly with the source named (the reader goes on to IEND) */
    for (size_t len = 0; bytes && len < n; len++) {
        err[0] = 0;
        int rc = ds_image_read_mem("cut.png", bytes, len, &b, err, sizeof err);
        CHECK_MSG(rc == -1 && !b.data && strstr(err, "cut.png"), "prefix %zu of %zu: rc %d, '%s'", len, n, rc, err);
        if (rc == 0) ds_image_free(&b);
    }
    /* a file cut in the middle of the pixel data, read from disk: the message names the file */
    char cut[256];
    tmp_path(cut, sizeof cut, "truncated");
    FILE *f = fopen(cut, "wb");
    fwrite(bytes, 1, n / 2, f);
    fclose(f);
    CHECK(ds_image_read(cut, &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, cut) && strstr(err, "truncated"), "'%s'", err);
    printf("    truncated: %s\n", err);
    remove(cut);
    /* not a PNG at all */
    char txt[256];
    tmp_path(txt, sizeof txt, "text");
    f = fopen(txt, "wb");
    fputs("this is not an image, it is a text file that ends with .png\n", f);
    fclose(f);
    CHECK(ds_image_read(txt, &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, txt) && strstr(err, "not a PNG"), "'%s'", err);
    printf("    not png:   %s\n", err);
    remove(txt);
    /* a file larger than any image could be (sparse: no disk used) is refused before reading */
    char big[256];
    tmp_path(big, sizeof big, "huge");
    f = fopen(big, "wb");
    CHECK(f && ftruncate(fileno(f), (off_t)(2 * DS_IMAGE_MAX_BYTES + 1)) == 0);
    if (f) fclose(f);
    CHECK(ds_image_read(big, &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, big) && strstr(err, "too large for an image"), "'%s'", err);
    printf("    too large: %s\n", err);
    remove(big);
    /* missing file and a directory */
    CHECK(ds_image_read("/nonexistent/anima.png", &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "/nonexistent/anima.png"), "'%s'", err);
    CHECK(ds_image_read("/tmp", &b, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "/tmp"), "'%s'", err);
    free(bytes);
    ds_image_free(&a);
    remove(path);
}

/* CRC-32 as PNG uses it (ISO 3309), to re-seal chunks after corrupting them. */
static uint32_t crc32_png(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* Recomputes every chunk's CRC, so the damage reaches the header and zlib decoders instead of
 * stopping at the first CRC check. */
static void reseal_chunks(uint8_t *b, size_t n) {
    size_t pos = 8;
    while (pos + 12 <= n) {
        size_t len = (size_t)b[pos] << 24 | (size_t)b[pos + 1] << 16 | (size_t)b[pos + 2] << 8 | b[pos + 3];
        if (len > n - pos - 12) break;
        uint32_t c = crc32_png(b + pos + 4, len + 4);
        uint8_t *q = b + pos + 8 + len;
        q[0] = (uint8_t)(c >> 24), q[1] = (uint8_t)(c >> 16), q[2] = (uint8_t)(c >> 8), q[3] = (uint8_t)c;
        pos += 12 + len;
    }
}

/* Random byte flips: every read either succeeds with a consistent image or fails with a message
 * naming the source; none crashes (the test runs in a child, so a crash fails it) or leaks
 * (valgrind runs the suite). Half the files have their CRCs fixed up after the damage. */
TEST(image_corrupt_bytes_never_crash) {
    char err[512];
    DsImage a, b;
    CHECK(ds_image_init(&a, 16, 12, 4, err, sizeof err) == 0);
    uint32_t seed = 5;
    for (size_t i = 0; i < (size_t)16 * 12 * 4; i++) a.data[i] = (uint8_t)((i * 7) ^ (lcg(&seed) >> 30));
    char path[256];
    tmp_path(path, sizeof path, "fuzz");
    CHECK(ds_image_write(path, &a, err, sizeof err) == 0);
    size_t n = 0;
    uint8_t *good = slurp(path, &n);
    uint8_t *buf = malloc(n);
    int ok = 0, failed = 0, iters = test_quick() ? 100 : 2000;
    for (int it = 0; good && it < iters; it++) {
        memcpy(buf, good, n);
        int flips = 1 + (int)(lcg(&seed) % 4);
        for (int k = 0; k < flips; k++) {
            /* mostly after the signature, so libpng gets to parse the damage */
            size_t at = 8 + lcg(&seed) % (n - 8);
            buf[at] ^= (uint8_t)(1u << (lcg(&seed) >> 29));
        }
        if (it % 2) reseal_chunks(buf, n);
        err[0] = 0;
        if (ds_image_read_mem("fuzz.png", buf, n, &b, err, sizeof err) == 0) {
            CHECK(b.w > 0 && b.h > 0 && b.channels >= 1 && b.channels <= 4 && b.data);
            ok++;
            ds_image_free(&b);
        } else {
            CHECK_MSG(strncmp(err, "fuzz.png: ", 10) == 0, "'%s'", err);
            failed++;
        }
    }
    printf("    %d corrupted files: %d read, %d rejected\n", ok + failed, ok, failed);
    CHECK(ok > 0 && failed > 0); /* both paths were exercised */
    free(buf);
    free(good);
    ds_image_free(&a);
    remove(path);
}

TEST(image_write_errors) {
    char err[512];
    DsImage a;
    CHECK(ds_image_init(&a, 4, 4, 3, err, sizeof err) == 0);
    CHECK(ds_image_write("/nonexistent-dir/x.png", &a, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "/nonexistent-dir/x.png"), "'%s'", err);
    a.channels = 5;
    CHECK(ds_image_write("/tmp/never.png", &a, err, sizeof err) == -1);
    CHECK(!file_exists("/tmp/never.png"));
    a.channels = 3;
    ds_image_free(&a);
    CHECK(ds_image_init(&a, 0, 4, 3, err, sizeof err) == -1 && !a.data);
    CHECK(ds_image_init(&a, 4, 4, 0, err, sizeof err) == -1 && !a.data);
}
