/* tests/cuemu/test_emu_cub.cpp — the emulated cub (tools/cuemu/include/cub/cub.cuh): the
 * temp-storage protocol, DeviceScan::InclusiveSum / ExclusiveSum against std::partial_sum
 * (in place too), DeviceRadixSort::SortPairs / SortKeys (ascending and descending; unsigned,
 * signed and float keys; begin_bit/end_bit windows) against std::stable_sort on the same bits,
 * and the emulator's reports: temp storage smaller than the sizing call asked for, temp storage
 * or an operand in host memory, an in-place sort. */
#include <cub/cub.cuh>
#include <stdint.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "emu_lib_test.h"

static std::mt19937_64 rng(777);

template <typename T> static void scan_case(size_t n, bool inclusive, bool in_place) {
    std::vector<T> h(n);
    for (T &x : h) x = (T)(rng() % 6);
    T *d_in = dev_upload(h), *d_out = in_place ? d_in : dev_alloc<T>(n);
    size_t tb = 0;
    cudaError_t e = inclusive ? cub::DeviceScan::InclusiveSum(nullptr, tb, d_in, d_out, (int)n)
                              : cub::DeviceScan::ExclusiveSum(nullptr, tb, d_in, d_out, (int)n);
    CHECK(e == cudaSuccess && tb > 0, "scan sizing call: error %d, %zu bytes", (int)e, tb);
    void *tmp = dev_alloc<char>(tb);
    e = inclusive ? cub::DeviceScan::InclusiveSum(tmp, tb, d_in, d_out, (int)n)
                  : cub::DeviceScan::ExclusiveSum(tmp, tb, d_in, d_out, (int)n);
    CHECK(e == cudaSuccess, "scan: error %d", (int)e);
    std::vector<T> ref(n);
    if (inclusive) std::partial_sum(h.begin(), h.end(), ref.begin());
    else if (n) {
        ref[0] = 0;
        std::partial_sum(h.begin(), h.end() - 1, ref.begin() + 1);
    }
    CHECK(dev_download(d_out, n) == ref, "%s sum of %zu items%s", inclusive ? "inclusive" : "exclusive", n,
          in_place ? " in place" : "");
    cudaFree(tmp), cudaFree(d_in);
    if (!in_place) cudaFree(d_out);
}

/* the key image cub documents sorting on, written here independently of the header: unsigned
 * as is, signed with the sign bit flipped, floats with negatives' bits inverted and positives'
 * sign bit set (-0.0 before +0.0); then restricted to [b0, b1) */
template <typename K> static uint64_t twiddle(K k) {
    const int bits = (int)sizeof(K) * 8;
    uint64_t u = 0, sign = 1ull << (bits - 1), all = bits == 64 ? ~0ull : (1ull << bits) - 1;
    memcpy(&u, &k, sizeof(K));
    if constexpr (std::is_floating_point_v<K>) return (u & sign) ? (~u & all) : (u | sign);
    else if constexpr (std::is_signed_v<K>) return u ^ sign;
    else return u;
}
template <typename K> static uint64_t sort_bits(K k, int b0, int b1) {
    uint64_t u = twiddle(k);
    u >>= b0;
    int w = b1 - b0;
    return w >= 64 ? u : (u & ((1ull << w) - 1));
}

template <typename K> static K rand_key(int mode) {
    if constexpr (std::is_floating_point_v<K>) {
        std::uniform_int_distribution<int> d(-8, 8);
        return (K)d(rng) * (K)0.5; /* repeats and signed zeros: stability is visible */
    } else {
        K k = (K)rng();
        if (mode == 1) k = (K)(k % 16); /* many duplicates */
        return k;
    }
}

template <typename K> static void sort_case(const char *name, size_t n, int b0, int b1, bool descending, bool pairs,
                                            int mode) {
    std::vector<K> keys(n);
    for (K &k : keys) k = rand_key<K>(mode);
    std::vector<int32_t> vals(n);
    std::iota(vals.begin(), vals.end(), 0);
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        uint64_t x = sort_bits(keys[a], b0, b1), y = sort_bits(keys[b], b0, b1);
        return descending ? x > y : x < y;
    });
    K *dk = dev_upload(keys), *dko = dev_alloc<K>(n);
    int32_t *dv = dev_upload(vals), *dvo = dev_alloc<int32_t>(n);
    size_t tb = 0;
    cudaError_t e;
    auto call = [&](void *tmp) {
        if (pairs)
            return descending ? cub::DeviceRadixSort::SortPairsDescending(tmp, tb, dk, dko, dv, dvo, (int)n, b0, b1)
                              : cub::DeviceRadixSort::SortPairs(tmp, tb, dk, dko, dv, dvo, (int)n, b0, b1);
        return descending ? cub::DeviceRadixSort::SortKeysDescending(tmp, tb, dk, dko, (int)n, b0, b1)
                          : cub::DeviceRadixSort::SortKeys(tmp, tb, dk, dko, (int)n, b0, b1);
    };
    e = call(nullptr);
    CHECK(e == cudaSuccess && tb > 0, "%s sizing: error %d", name, (int)e);
    void *tmp = dev_alloc<char>(tb);
    e = call(tmp);
    CHECK(e == cudaSuccess, "%s: error %d", name, (int)e);
    std::vector<K> got_k = dev_download(dko, n), want_k(n);
    std::vector<int32_t> got_v = dev_download(dvo, n), want_v(n);
    for (size_t i = 0; i < n; i++) want_k[i] = keys[idx[i]], want_v[i] = (int32_t)idx[i];
    bool keys_ok = n == 0 || memcmp(got_k.data(), want_k.data(), n * sizeof(K)) == 0; /* bitwise: -0.0 vs 0.0 */
    CHECK(keys_ok, "%s n %zu bits [%d, %d)%s: keys differ from std::stable_sort", name, n, b0, b1,
          descending ? " descending" : "");
    if (pairs)
        CHECK(got_v == want_v, "%s n %zu bits [%d, %d)%s: values (stability) differ", name, n, b0, b1,
              descending ? " descending" : "");
    CHECK(dev_download(dk, n) == keys, "%s: input keys changed", name);
    cudaFree(dk), cudaFree(dko), cudaFree(dv), cudaFree(dvo), cudaFree(tmp);
}

static void test_reports() {
    const int n = 100;
    std::vector<uint64_t> keys(n);
    for (auto &k : keys) k = rng();
    uint64_t *dk = dev_upload(keys), *dko = dev_alloc<uint64_t>(n);
    int32_t *dv = dev_alloc<int32_t>(n), *dvo = dev_alloc<int32_t>(n);
    cudaMemset(dv, 0, n * sizeof(int32_t));
    size_t tb = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, tb, dk, dko, dv, dvo, n, 0, 40);
    char *tmp = dev_alloc<char>(tb);
    static char host_tmp[1 << 16];
    expect_report("temp_storage_bytes one short", [&] {
        size_t small = tb - 1;
        cub::DeviceRadixSort::SortPairs(tmp, small, dk, dko, dv, dvo, n, 0, 40);
    }, {"cub::DeviceRadixSort::SortPairs", "temp_storage_bytes"});
    expect_report("temp storage in host memory", [&] {
        size_t t = tb;
        cub::DeviceRadixSort::SortPairs(host_tmp, t, dk, dko, dv, dvo, n, 0, 40);
    }, {"cub::DeviceRadixSort::SortPairs", "d_temp_storage"});
    expect_report("values out in host memory", [&] {
        static int32_t hv[n];
        size_t t = tb;
        cub::DeviceRadixSort::SortPairs(tmp, t, dk, dko, dv, hv, n, 0, 40);
    }, {"cub::DeviceRadixSort::SortPairs", "d_values_out"});
    expect_report("in-place sort", [&] {
        size_t t = tb;
        cub::DeviceRadixSort::SortPairs(tmp, t, dk, dk, dv, dvo, n, 0, 40);
    }, {"cub::DeviceRadixSort::SortPairs", "overlap"});
    int64_t *counts = dev_alloc<int64_t>(n), *incl = dev_alloc<int64_t>(n - 1);
    cudaMemset(counts, 0, n * sizeof(int64_t));
    size_t sb = 0;
    cub::DeviceScan::InclusiveSum(nullptr, sb, counts, incl, n);
    char *stmp = dev_alloc<char>(sb);
    expect_report("scan output one short", [&] {
        size_t t = sb;
        cub::DeviceScan::InclusiveSum(stmp, t, counts, incl, n);
    }, {"cub::DeviceScan::InclusiveSum", "d_out"});
    expect_report("scan temp too small", [&] {
        size_t t = sb / 2;
        cub::DeviceScan::InclusiveSum(stmp, t, counts, counts, n);
    }, {"cub::DeviceScan::InclusiveSum", "temp_storage_bytes"});
    /* what cub itself rejects: a bit window outside the key */
    size_t t = tb;
    CHECK(cub::DeviceRadixSort::SortPairs(tmp, t, dk, dko, dv, dvo, n, 0, 65) == cudaErrorInvalidValue, "end_bit 65");
    cudaFree(dk), cudaFree(dko), cudaFree(dv), cudaFree(dvo), cudaFree(tmp), cudaFree(counts), cudaFree(incl),
        cudaFree(stmp);
}

int main() {
    for (size_t n : {(size_t)0, (size_t)1, (size_t)1000, (size_t)4099})
        for (bool inc : {true, false})
            for (bool ip : {false, true}) scan_case<int64_t>(n, inc, ip);
    scan_case<int32_t>(777, true, false);
    scan_case<float>(300, false, false);
    /* the rasterizer's sort: 64-bit (tile << 32 | depth bits) keys, int32 values, [0, 32 + tile bits) */
    for (size_t n : {(size_t)0, (size_t)1, (size_t)5000})
        for (bool desc : {false, true}) {
            sort_case<uint64_t>("u64 pairs", n, 0, 64, desc, true, 0);
            sort_case<uint64_t>("u64 pairs", n, 0, 37, desc, true, 0);
            sort_case<uint64_t>("u64 pairs", n, 8, 20, desc, true, 0);
            sort_case<uint64_t>("u64 pairs dups", n, 0, 3, desc, true, 1);
            sort_case<uint64_t>("u64 pairs empty window", n, 5, 5, desc, true, 0);
            sort_case<int32_t>("i32 pairs", n, 0, 32, desc, true, 0);
            sort_case<int32_t>("i32 keys", n, 4, 31, desc, false, 0);
            sort_case<float>("f32 pairs", n, 0, 32, desc, true, 0);
            sort_case<double>("f64 keys", n, 0, 64, desc, false, 0);
            sort_case<uint16_t>("u16 pairs", n, 0, 16, desc, true, 0);
        }
    test_reports();
    return finish("cuemu cub");
}
