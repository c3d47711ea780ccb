/* models/gaussians/sort.c — LSD radix sort of the rasterizer's (tile << 32 | depth bits) keys
 * (gaussianimate.md §1 step 5). Depths are positive floats, whose IEEE-754 bit patterns order
 * like the values, so one integer sort orders by tile and, inside a tile, front to back. LSD
 * with a counting pass per 8-bit digit is stable: equal keys keep the order they were emitted
 * in (Gaussian index), which keeps the image deterministic. */
#include <string.h>

#include "raster_core.h"

void gs_radix_sort(uint64_t *keys, int32_t *vals, uint64_t *tmp_keys, int32_t *tmp_vals, int64_t n, int key_bits) {
    if (n <= 1) return;
    uint64_t *src_k = keys, *dst_k = tmp_keys;
    int32_t *src_v = vals, *dst_v = tmp_vals;
    for (int shift = 0; shift < key_bits; shift += 8) {
        int64_t count[256] = {0};
        for (int64_t i = 0; i < n; i++) count[(src_k[i] >> shift) & 0xff]++;
        /* a digit shared by every key orders nothing: skip the scatter */
        bool trivial = false;
        for (int d = 0; d < 256; d++)
            if (count[d] == n) trivial = true;
        if (trivial) continue;
        int64_t pos = 0;
        for (int d = 0; d < 256; d++) {
            int64_t c = count[d];
            count[d] = pos;
            pos += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t p = count[(src_k[i] >> shift) & 0xff]++;
            dst_k[p] = src_k[i];
            dst_v[p] = src_v[i];
        }
        uint64_t *tk = src_k;
        src_k = dst_k, dst_k = tk;
        int32_t *tv = src_v;
        src_v = dst_v, dst_v = tv;
    }
    if (src_k != keys) {
        memcpy(keys, src_k, sizeof *keys * (size_t)n);
        memcpy(vals, src_v, sizeof *vals * (size_t)n);
    }
}
