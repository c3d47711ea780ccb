/* datasets/render/image.h — images in memory and PNG files (libpng). Two in-memory forms:
 *   DsImage  — 8-bit, what PNG files hold; exact round trips.
 *   DsImageF — float in [0, 1], what renderers and models produce and consume.
 * Both are row-major with the top row first and channels interleaved: the value of channel k
 * of pixel (x, y) is data[(y * w + x) * channels + k]. channels is 1 (gray), 2 (gray+alpha),
 * 3 (RGB) or 4 (RGBA). Values are stored as the file has them (no gamma or color-space
 * conversion: PNGs are taken to be sRGB, as nearly all are). Alpha is straight, not
 * premultiplied, as in PNG.
 *
 * Readers never trust the file: a malformed or truncated PNG gives -1 and an error naming the
 * file ("<path>: <problem>"), never a crash. Writers go to a temporary name and rename, so a
 * failed write leaves no partial file. All functions return 0, or -1 with err set. */
#ifndef ANIMA_DATASETS_IMAGE_H
#define ANIMA_DATASETS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int w, h, channels;
    uint8_t *data; /* h × w × channels */
} DsImage;

typedef struct {
    int w, h, channels;
    float *data; /* h × w × channels, nominally in [0, 1] */
} DsImageF;

/* Largest image a reader accepts (w × h × channels bytes after conversion to 8 bits): a few
 * hundred bytes of PNG can claim a gigapixel, so the limit is checked before allocating. */
#define DS_IMAGE_MAX_BYTES ((size_t)1 << 28)
#define DS_IMAGE_MAX_SIDE 65535

/* Zero-filled image (channels 1..4); -1 with err on bad sizes or out of memory. */
int ds_image_init(DsImage *img, int w, int h, int channels, char *err, size_t errlen);
int ds_imagef_init(DsImageF *img, int w, int h, int channels, char *err, size_t errlen);
void ds_image_free(DsImage *img); /* frees data, zeroes the struct */
void ds_imagef_free(DsImageF *img);

/* Any PNG: 1/2/4/8/16-bit gray, gray+alpha, RGB, RGBA and palette images are converted to 8 bits
 * per channel (16-bit values are scaled with rounding, palettes expanded to RGB, a tRNS chunk
 * becomes an alpha channel, interlacing undone). The result has 1–4 channels as above. */
int ds_image_read(const char *path, DsImage *img, char *err, size_t errlen);
/* The same from bytes in memory (fuzz harnesses); `name` names the source in messages. */
int ds_image_read_mem(const char *name, const uint8_t *data, size_t size, DsImage *img, char *err, size_t errlen);
/* 8-bit PNG with the image's channel count (gray, gray+alpha, RGB or RGBA). */
int ds_image_write(const char *path, const DsImage *img, char *err, size_t errlen);

/* Float images through 8 bits: values are clamped to [0, 1] and rounded to the nearest of
 * k / 255 (NaN becomes 0), and read back as k / 255. */
int ds_imagef_read(const char *path, DsImageF *img, char *err, size_t errlen);
int ds_imagef_write(const char *path, const DsImageF *img, char *err, size_t errlen);
/* Two RGB float images of h × w × 3 (row-major) side by side, left | right, as ds_imagef_write
 * writes one (a render beside its target). */
int ds_imagef_write_pair(const char *path, const float *left, const float *right, int w, int h, char *err, size_t errlen);
/* Conversions (dst is allocated; free it with the matching free). */
int ds_image_to_float(const DsImage *src, DsImageF *dst, char *err, size_t errlen);
int ds_imagef_to_u8(const DsImageF *src, DsImage *dst, char *err, size_t errlen);
/* One float in [0, 1] to 8 bits (clamped, rounded to nearest, NaN → 0). */
uint8_t ds_image_quantize(float v);

#endif
