/* datasets/render/gif.c — the GIF89a writer of gif.h. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "gif.h"

enum { LEVELS_R = 6, LEVELS_G = 7, LEVELS_B = 6 };

/* 4 × 4 Bayer thresholds, (b + 0.5) / 16 − 0.5 in [−0.47, 0.47] of one quantization step */
static const int BAYER[4][4] = {{0, 8, 2, 10}, {12, 4, 14, 6}, {3, 11, 1, 9}, {15, 7, 13, 5}};

static int level(float v, int levels, double dither) {
    if (!(v > 0)) v = 0; /* NaN too */
    if (v > 1) v = 1;
    double q = v * (levels - 1) + dither;
    int k = (int)(q + 0.5);
    return k < 0 ? 0 : k >= levels ? levels - 1 : k;
}

int ds_gif_index(float r, float g, float b, int x, int y) {
    double d = (BAYER[y & 3][x & 3] + 0.5) / 16.0 - 0.5;
    return (level(r, LEVELS_R, d) * LEVELS_G + level(g, LEVELS_G, d)) * LEVELS_B + level(b, LEVELS_B, d);
}

void ds_gif_palette(int index, float rgb[3]) {
    if (index < 0 || index >= LEVELS_R * LEVELS_G * LEVELS_B) {
        rgb[0] = rgb[1] = rgb[2] = 0;
        return;
    }
    rgb[2] = (float)(index % LEVELS_B) / (LEVELS_B - 1);
    rgb[1] = (float)(index / LEVELS_B % LEVELS_G) / (LEVELS_G - 1);
    rgb[0] = (float)(index / (LEVELS_B * LEVELS_G)) / (LEVELS_R - 1);
}

/* ---- LZW with GIF's variable-width codes, packed LSB first into ≤ 255-byte sub-blocks ---------- */

typedef struct {
    FILE *f;
    bool ok;
    uint8_t block[255];
    int nblock;
    uint32_t acc;
    int nacc;
} BitOut;

static void put_byte(BitOut *o, uint8_t b) {
    o->block[o->nblock++] = b;
    if (o->nblock == 255) {
        uint8_t n = 255;
        o->ok &= fwrite(&n, 1, 1, o->f) == 1 && fwrite(o->block, 1, 255, o->f) == 255;
        o->nblock = 0;
    }
}

static void put_code(BitOut *o, int code, int width) {
    o->acc |= (uint32_t)code << o->nacc;
    o->nacc += width;
    while (o->nacc >= 8) {
        put_byte(o, (uint8_t)(o->acc & 0xff));
        o->acc >>= 8;
        o->nacc -= 8;
    }
}

static void finish_bits(BitOut *o) {
    if (o->nacc > 0) put_byte(o, (uint8_t)(o->acc & 0xff));
    o->acc = 0, o->nacc = 0;
    if (o->nblock) {
        uint8_t n = (uint8_t)o->nblock;
        o->ok &= fwrite(&n, 1, 1, o->f) == 1 && fwrite(o->block, 1, (size_t)o->nblock, o->f) == (size_t)o->nblock;
        o->nblock = 0;
    }
    uint8_t z = 0;
    o->ok &= fwrite(&z, 1, 1, o->f) == 1; /* block terminator */
}

/* idx: n palette indices (< 256), minimum code size 8 */
static void lzw(BitOut *o, const uint8_t *idx, size_t n, int16_t *dict /* 4096 × 256 */) {
    const int clear = 256, eoi = 257;
    int width = 9, next = 258;
    memset(dict, 0xff, sizeof(int16_t) * 4096 * 256); /* −1: no entry */
    put_code(o, clear, width);
    if (n == 0) {
        put_code(o, eoi, width);
        return;
    }
    int prefix = idx[0];
    for (size_t i = 1; i < n; i++) {
        int k = idx[i];
        int16_t c = dict[(size_t)prefix * 256 + k];
        if (c >= 0) {
            prefix = c;
            continue;
        }
        put_code(o, prefix, width);
        if (next < 4096) {
            dict[(size_t)prefix * 256 + k] = (int16_t)next;
            /* the decoder adds this entry one code later and widens once its next free code
             * reaches 2^width: the encoder widens right after adding entry 2^width */
            if (next == (1 << width) && width < 12) width++;
            next++;
        } else { /* the table is full: start over */
            put_code(o, clear, width);
            memset(dict, 0xff, sizeof(int16_t) * 4096 * 256);
            width = 9, next = 258;
        }
        prefix = k;
    }
    put_code(o, prefix, width);
    put_code(o, eoi, width);
}

static void put16(uint8_t *p, int v) { p[0] = (uint8_t)(v & 0xff), p[1] = (uint8_t)((v >> 8) & 0xff); }

int ds_gif_write(const char *path, const float *frames, int w, int h, int nframes, int delay_cs, char *err,
                 size_t errlen) {
    if (w < 1 || h < 1 || w > 65535 || h > 65535 || nframes < 1 || delay_cs < 0 || delay_cs > 65535)
        return base_errf(err, errlen, "%s: a GIF of %d×%d, %d frames, delay %d: need 1..65535 pixels a side, ≥ 1 frame, "
                                      "delay 0..65535", path, w, h, nframes, delay_cs);
    static atomic_uint seq;
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1)) >= sizeof tmp)
        return base_errf(err, errlen, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return base_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
    int16_t *dict = malloc(sizeof(int16_t) * 4096 * 256);
    uint8_t *idx = malloc((size_t)w * h);
    if (!dict || !idx) {
        free(dict), free(idx);
        fclose(f);
        remove(tmp);
        return base_errf(err, errlen, "%s: out of memory", path);
    }
    BitOut o = {.f = f, .ok = true};
    /* header, logical screen (global color table of 256 entries), loop extension */
    uint8_t hdr[13] = {'G', 'I', 'F', '8', '9', 'a'};
    put16(hdr + 6, w), put16(hdr + 8, h);
    hdr[10] = 0xf7; /* global table present, 8 bits of color resolution, 2^(7+1) entries */
    hdr[11] = 0, hdr[12] = 0;
    o.ok &= fwrite(hdr, 1, 13, f) == 13;
    uint8_t pal[256 * 3] = {0};
    for (int i = 0; i < LEVELS_R * LEVELS_G * LEVELS_B; i++) {
        float c[3];
        ds_gif_palette(i, c);
        for (int a = 0; a < 3; a++) pal[3 * i + a] = (uint8_t)(c[a] * 255 + 0.5f);
    }
    o.ok &= fwrite(pal, 1, sizeof pal, f) == sizeof pal;
    static const uint8_t loop[19] = {0x21, 0xff, 11, 'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0', 3, 1, 0, 0, 0};
    o.ok &= fwrite(loop, 1, sizeof loop, f) == sizeof loop;
    for (int fr = 0; fr < nframes && o.ok; fr++) {
        uint8_t gce[8] = {0x21, 0xf9, 4, 0x04 /* disposal: leave in place */, 0, 0, 0, 0};
        put16(gce + 4, delay_cs);
        uint8_t desc[10] = {0x2c};
        put16(desc + 5, w), put16(desc + 7, h);
        o.ok &= fwrite(gce, 1, 8, f) == 8 && fwrite(desc, 1, 10, f) == 10;
        const float *p = frames + (size_t)fr * w * h * 3;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const float *c = p + ((size_t)y * w + x) * 3;
                idx[(size_t)y * w + x] = (uint8_t)ds_gif_index(c[0], c[1], c[2], x, y);
            }
        uint8_t mcs = 8;
        o.ok &= fwrite(&mcs, 1, 1, f) == 1;
        lzw(&o, idx, (size_t)w * h, dict);
        finish_bits(&o);
    }
    uint8_t trailer = 0x3b;
    o.ok &= fwrite(&trailer, 1, 1, f) == 1;
    free(dict), free(idx);
    int e = 0;
    if (!o.ok || fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        remove(tmp);
        return base_errf(err, errlen, "%s: writing the GIF failed: %s", path, strerror(e));
    }
    return 0;
}
