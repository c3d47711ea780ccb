/* tests/test_gif.c — datasets/render/gif.h: files decode (a GIF89a decoder written here from the
 * specification: blocks, the LZW code widths, clear codes, the table-full case) to exactly the
 * indices the writer's quantizer gives, frame by frame; the quantized colors lie within one
 * palette step of the input; bad arguments and unwritable paths are errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/render/gif.h"
#include "tests/test.h"

typedef struct {
    const uint8_t *p;
    size_t n, at;
} Rd;

static int rbyte(Rd *r) { return r->at < r->n ? r->p[r->at++] : -1; }

/* decode one image's LZW data (after the minimum code size byte) into out (npix) */
static bool lzw_decode(Rd *r, int mcs, uint8_t *out, size_t npix) {
    /* gather the sub-blocks */
    uint8_t *data = malloc(r->n + 1);
    size_t nd = 0;
    for (;;) {
        int len = rbyte(r);
        if (len < 0) return free(data), false;
        if (len == 0) break;
        for (int i = 0; i < len; i++) {
            int b = rbyte(r);
            if (b < 0) return free(data), false;
            data[nd++] = (uint8_t)b;
        }
    }
    int clear = 1 << mcs, eoi = clear + 1, width = mcs + 1, next = eoi + 1, prev = -1;
    static uint16_t pre[4096];
    static uint8_t suf[4096], first[4096];
    static uint8_t stack[4097];
    for (int i = 0; i < clear; i++) pre[i] = 0xffff, suf[i] = (uint8_t)i, first[i] = (uint8_t)i;
    size_t bit = 0, o = 0;
    bool ok = false;
    while ((bit + (size_t)width) <= nd * 8) {
        int code = 0;
        for (int b = 0; b < width; b++, bit++) code |= ((data[bit / 8] >> (bit % 8)) & 1) << b;
        if (code == clear) {
            width = mcs + 1, next = eoi + 1, prev = -1;
            continue;
        }
        if (code == eoi) {
            ok = o == npix;
            break;
        }
        int c = code, sp = 0;
        if (prev < 0) {
            if (code >= clear) break;
        } else if (code > next || (code == next && next >= 4096)) {
            break;
        }
        uint8_t fc;
        if (prev >= 0 && code == next) { /* KwKwK: prev's string + its first character */
            fc = first[prev];
            stack[sp++] = fc;
            c = prev;
        }
        while (c != 0xffff && c >= 0) {
            stack[sp++] = suf[c];
            if (c < clear) break;
            c = pre[c];
        }
        fc = stack[sp - 1];
        while (sp > 0) {
            if (o >= npix) break;
            out[o++] = stack[--sp];
        }
        if (prev >= 0 && next < 4096) {
            pre[next] = (uint16_t)prev, suf[next] = fc, first[next] = first[prev];
            next++;
            if (next == (1 << width) && width < 12) width++;
        }
        prev = code;
    }
    free(data);
    return ok;
}

/* decode a whole file written by ds_gif_write: w, h, nframes and every frame's indices */
static bool gif_decode(const uint8_t *p, size_t n, int *w, int *h, int *nframes, int *delay, uint8_t **frames) {
    Rd r = {p, n, 0};
    if (n < 13 || memcmp(p, "GIF89a", 6)) return false;
    *w = p[6] | p[7] << 8, *h = p[8] | p[9] << 8;
    r.at = 13;
    if (p[10] & 0x80) r.at += 3u << ((p[10] & 7) + 1);
    size_t npix = (size_t)*w * *h, cap = 0;
    *nframes = 0;
    *frames = NULL;
    for (;;) {
        int b = rbyte(&r);
        if (b == 0x3b) return true;
        if (b == 0x21) { /* extension: label, sub-blocks */
            int label = rbyte(&r);
            if (label == 0xf9 && r.at + 4 < n) *delay = p[r.at + 2] | p[r.at + 3] << 8;
            for (int len; (len = rbyte(&r)) > 0;) r.at += (size_t)len;
            continue;
        }
        if (b != 0x2c || r.at + 9 > n) return false;
        int fw = p[r.at + 4] | p[r.at + 5] << 8, fh = p[r.at + 6] | p[r.at + 7] << 8;
        if (fw != *w || fh != *h || (p[r.at + 8] & 0xc0)) return false; /* full frames, no local table, not interlaced */
        r.at += 9;
        int mcs = rbyte(&r);
        if (mcs < 2 || mcs > 8) return false;
        if ((size_t)(*nframes + 1) > cap) cap = cap ? 2 * cap : 4, *frames = realloc(*frames, cap * npix);
        if (!lzw_decode(&r, mcs, *frames + (size_t)*nframes * npix, npix)) return false;
        (*nframes)++;
    }
}

TEST(gif_roundtrip_indices_and_colors) {
    /* frames large enough to fill the 4096-entry table several times (noise defeats the
     * dictionary), plus smooth gradients and flat areas (long runs: the widest codes) */
    int w = 97, h = 61, nf = 3;
    float *img = malloc(sizeof(float) * 3 * (size_t)w * h * nf);
    uint64_t st = 12345;
    for (int f = 0; f < nf; f++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int a = 0; a < 3; a++) {
                    float *v = img + (((size_t)f * h + y) * w + x) * 3 + a;
                    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
                    if (f == 0) *v = (float)(st >> 40) / (float)(1 << 24);
                    else if (f == 1) *v = (float)(x + y * a) / (float)(w + h * 2);
                    else *v = y < h / 2 ? 0.3f : 1.2f; /* out of range: clamped */
                }
    char dir[] = "/tmp/anima-gif-XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.gif", dir);
    CHECK_MSG(ds_gif_write(path, img, w, h, nf, 7, err, sizeof err) == 0, "%s", err);
    FILE *f = fopen(path, "rb");
    CHECK(f);
    uint8_t *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    int dw = 0, dh = 0, dn = 0, delay = -1;
    uint8_t *frames = NULL;
    CHECK_MSG(gif_decode(buf, n, &dw, &dh, &dn, &delay, &frames), "the GIF does not decode");
    CHECK(dw == w && dh == h && dn == nf && delay == 7);
    int bad = 0;
    double maxerr = 0;
    for (int fr = 0; fr < nf && frames; fr++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const float *v = img + (((size_t)fr * h + y) * w + x) * 3;
                int want = ds_gif_index(v[0], v[1], v[2], x, y), got = frames[((size_t)fr * h + y) * w + x];
                bad += want != got;
                float c[3];
                ds_gif_palette(got, c);
                for (int a = 0; a < 3; a++) {
                    float in = v[a] < 0 ? 0 : v[a] > 1 ? 1 : v[a];
                    maxerr = fmax(maxerr, fabs(c[a] - in));
                }
            }
    CHECK_MSG(bad == 0, "%d pixel indices differ after decoding", bad);
    CHECK_MSG(maxerr <= 1.0 / 5 + 1e-6, "a quantized color is %g from its input (one step of the 6-level axes is 0.2)", maxerr);
    free(frames), free(buf), free(img);
    /* errors */
    float px[3] = {0.5f, 0.5f, 0.5f};
    CHECK(ds_gif_write(path, px, 0, 4, 1, 5, err, sizeof err) != 0);
    snprintf(path, sizeof path, "%s/missing/b.gif", dir);
    CHECK(ds_gif_write(path, px, 1, 1, 1, 5, err, sizeof err) != 0 && strstr(err, "missing"));
    snprintf(path, sizeof path, "rm -rf %s", dir);
    CHECK(system(path) == 0);
}
