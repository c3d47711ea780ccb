/* datasets/render/image.c — PNG reading and writing on libpng, and 8-bit/float image conversions.
 *
 * libpng reports errors by calling an error function that must not return; we longjmp back to
 * the setjmp in decode()/encode(). Everything those functions touch after setjmp lives in a
 * context struct owned by the caller (not in locals of the function that called setjmp), so
 * its values are well-defined after the longjmp (C11 7.13.2.1p3), and the cleanup path frees
 * whatever had been allocated by then. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datasets/render/image.h"
#include "datasets/mesh/mesh_internal.h"
#include "base/errbuf.h"

static int check_dims(const char *what, int w, int h, int channels, char *err, size_t errlen) {
    if (w <= 0 || h <= 0 || w > DS_IMAGE_MAX_SIDE || h > DS_IMAGE_MAX_SIDE)
        return base_errf(err, errlen, "%s: bad image size %d x %d (1..%d each)", what, w, h, DS_IMAGE_MAX_SIDE);
    if (channels < 1 || channels > 4)
        return base_errf(err, errlen, "%s: bad channel count %d (1..4)", what, channels);
    return 0;
}

int ds_image_init(DsImage *img, int w, int h, int channels, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (check_dims("image", w, h, channels, err, errlen)) return -1;
    img->data = calloc((size_t)w * (size_t)h * (size_t)channels, 1);
    if (!img->data) return base_errf(err, errlen, "image: out of memory for %d x %d x %d", w, h, channels);
    img->w = w, img->h = h, img->channels = channels;
    return 0;
}

int ds_imagef_init(DsImageF *img, int w, int h, int channels, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (check_dims("image", w, h, channels, err, errlen)) return -1;
    img->data = calloc((size_t)w * (size_t)h * (size_t)channels, sizeof(float));
    if (!img->data) return base_errf(err, errlen, "image: out of memory for %d x %d x %d", w, h, channels);
    img->w = w, img->h = h, img->channels = channels;
    return 0;
}

void ds_image_free(DsImage *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

void ds_imagef_free(DsImageF *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

uint8_t ds_image_quantize(float v) {
    if (!(v > 0.0f)) return 0; /* also NaN */
    if (v >= 1.0f) return 255;
    return (uint8_t)(v * 255.0f + 0.5f);
}

int ds_image_to_float(const DsImage *src, DsImageF *dst, char *err, size_t errlen) {
    if (ds_imagef_init(dst, src->w, src->h, src->channels, err, errlen)) return -1;
    size_t n = (size_t)src->w * (size_t)src->h * (size_t)src->channels;
    for (size_t i = 0; i < n; i++) dst->data[i] = (float)src->data[i] / 255.0f;
    return 0;
}

int ds_imagef_to_u8(const DsImageF *src, DsImage *dst, char *err, size_t errlen) {
    if (ds_image_init(dst, src->w, src->h, src->channels, err, errlen)) return -1;
    size_t n = (size_t)src->w * (size_t)src->h * (size_t)src->channels;
    for (size_t i = 0; i < n; i++) dst->data[i] = ds_image_quantize(src->data[i]);
    return 0;
}

/* ---- libpng glue --------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const uint8_t *data; /* reading: the whole file */
    size_t size, pos;
    char msg[256];       /* libpng's error message */
    uint8_t *pixels;     /* allocated inside decode(); freed by the caller on error */
    png_bytep *rows;
} PngCtx;

static void on_error(png_structp png, png_const_charp msg) {
    PngCtx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "libpng error");
    png_longjmp(png, 1);
}

/* Warnings (bad ancillary chunks, which libpng skips) do not stop a read. */
static void on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void read_bytes(png_structp png, png_bytep out, size_t n) {
    PngCtx *c = png_get_io_ptr(png);
    if (n > c->size - c->pos) png_error(png, "truncated file (unexpected end of data)");
    memcpy(out, c->data + c->pos, n);
    c->pos += n;
}

/* 0, or -1 with c->msg set; c->pixels is the image on success. */
static int decode(PngCtx *c, png_structp png, png_infop info, DsImage *img) {
    if (setjmp(png_jmpbuf(png))) return -1;
    png_set_read_fn(png, c, read_bytes);
    png_set_user_limits(png, DS_IMAGE_MAX_SIDE, DS_IMAGE_MAX_SIDE);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* a fuzzer's mutations would nearly all die at the CRC check; skip it to reach the decoder */
    png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
#endif
    png_read_info(png, info);
    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    /* everything becomes 8-bit gray, gray+alpha, RGB or RGBA */
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16) png_set_scale_16(png); /* rounds, unlike png_set_strip_16 */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int ch = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (ch < 1 || ch > 4 || png_get_bit_depth(png, info) != 8 || rowbytes != (size_t)w * (size_t)ch) {
        snprintf(c->msg, sizeof c->msg, "unsupported pixel layout after conversion (%d channels, %d bits)", ch,
                 png_get_bit_depth(png, info));
        return -1;
    }
    if ((size_t)h * rowbytes > DS_IMAGE_MAX_BYTES) {
        snprintf(c->msg, sizeof c->msg, "image %u x %u x %d is larger than the %zu-byte limit", (unsigned)w,
                 (unsigned)h, ch, DS_IMAGE_MAX_BYTES);
        return -1;
    }
    c->pixels = malloc((size_t)h * rowbytes);
    c->rows = malloc((size_t)h * sizeof *c->rows);
    if (!c->pixels || !c->rows) {
        snprintf(c->msg, sizeof c->msg, "out of memory for %u x %u x %d", (unsigned)w, (unsigned)h, ch);
        return -1;
    }
    for (png_uint_32 y = 0; y < h; y++) c->rows[y] = c->pixels + (size_t)y * rowbytes;
    png_read_image(png, c->rows);
    /* reads up to IEND, so a file cut anywhere, even after the pixels, is an error */
    png_read_end(png, NULL);
    img->w = (int)w, img->h = (int)h, img->channels = ch;
    return 0;
}

int ds_image_read_mem(const char *name, const uint8_t *data, size_t size, DsImage *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (size < 8 || png_sig_cmp(data, 0, 8))
        return base_errf(err, errlen, "%s: not a PNG file (%s)", name, size < 8 ? "too short" : "bad signature");
    PngCtx c = {.name = name, .data = data, .size = size};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return base_errf(err, errlen, "%s: out of memory", name);
    }
    int rc = decode(&c, png, info, img);
    png_destroy_read_struct(&png, &info, NULL);
    free(c.rows);
    if (rc) {
        free(c.pixels);
        memset(img, 0, sizeof *img);
        return base_errf(err, errlen, "%s: bad PNG: %s", name, c.msg);
    }
    img->data = c.pixels;
    return 0;
}

int ds_image_read(const char *path, DsImage *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    uint8_t *buf;
    size_t n;
    /* compressed data is never larger than the pixel limit plus generous chunk overhead */
    if (ds_file_slurp(path, 2 * (size_t)DS_IMAGE_MAX_BYTES, "an image", &buf, &n, err, errlen)) return -1;
    int rc = ds_image_read_mem(path, buf, n, img, err, errlen);
    free(buf);
    return rc;
}

static int encode(PngCtx *c, png_structp png, png_infop info, FILE *f, const DsImage *img) {
    if (setjmp(png_jmpbuf(png))) return -1;
    static const int ctypes[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA};
    png_init_io(png, f); /* libpng's fwrite-based writer raises an error on a short write */
    png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, 8, ctypes[img->channels], PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, c->rows);
    png_write_end(png, NULL);
    return 0;
}

int ds_image_write(const char *path, const DsImage *img, char *err, size_t errlen) {
    if (check_dims(path, img->w, img->h, img->channels, err, errlen)) return -1;
    if (!img->data) return base_errf(err, errlen, "%s: image has no data", path);
    /* pid and a counter: two threads or processes writing the same path never share a temp */
    static atomic_uint seq;
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1)) >=
        sizeof tmp)
        return base_errf(err, errlen, "%s: path too long", path);
    PngCtx c = {.name = path};
    c.rows = malloc((size_t)img->h * sizeof *c.rows);
    if (!c.rows) return base_errf(err, errlen, "%s: out of memory", path);
    size_t stride = (size_t)img->w * (size_t)img->channels;
    for (int y = 0; y < img->h; y++) c.rows[y] = (png_bytep)(img->data + (size_t)y * stride);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        free(c.rows);
        return base_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(e));
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &c, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = info ? encode(&c, png, info, f, img) : -1;
    int enc_errno = errno; /* a short fwrite's (libpng only says "Write Error") */
    if (!info) snprintf(c.msg, sizeof c.msg, "out of memory");
    png_destroy_write_struct(&png, info ? &info : NULL);
    free(c.rows);
    /* fflush writes the last buffer, ferror catches a failed fwrite libpng did not see, fsync the
     * disk's own write-back (ENOSPC) */
    int e = rc && ferror(f) ? (enc_errno ? enc_errno : EIO) : 0;
    if (!rc && (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0)) rc = -1, e = errno ? errno : EIO;
    if (fclose(f) != 0 && !rc) rc = -1, e = errno;
    if (!rc && rename(tmp, path) != 0) rc = -1, e = errno;
    if (rc) {
        remove(tmp);
        if (e) return base_errf(err, errlen, "%s: write failed: %s", path, strerror(e));
        return base_errf(err, errlen, "%s: write failed: %s", path, c.msg);
    }
    return 0;
}

int ds_imagef_read(const char *path, DsImageF *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    DsImage u;
    if (ds_image_read(path, &u, err, errlen)) return -1;
    int rc = ds_image_to_float(&u, img, err, errlen);
    ds_image_free(&u);
    return rc;
}

int ds_imagef_write(const char *path, const DsImageF *img, char *err, size_t errlen) {
    if (check_dims(path, img->w, img->h, img->channels, err, errlen)) return -1;
    if (!img->data) return base_errf(err, errlen, "%s: image has no data", path);
    DsImage u;
    if (ds_imagef_to_u8(img, &u, err, errlen)) return -1;
    int rc = ds_image_write(path, &u, err, errlen);
    ds_image_free(&u);
    return rc;
}

int ds_imagef_write_pair(const char *path, const float *left, const float *right, int w, int h, char *err, size_t errlen) {
    DsImageF im;
    if (ds_imagef_init(&im, 2 * w, h, 3, err, errlen)) return -1;
    for (int y = 0; y < h; y++) {
        memcpy(im.data + (size_t)y * 2 * w * 3, left + (size_t)y * w * 3, sizeof(float) * 3 * (size_t)w);
        memcpy(im.data + ((size_t)y * 2 * w + w) * 3, right + (size_t)y * w * 3, sizeof(float) * 3 * (size_t)w);
    }
    int rc = ds_imagef_write(path, &im, err, errlen);
    ds_imagef_free(&im);
    return rc;
}
