/* tools/cuemu/include/cub/cub.cuh — the emulator's cub: DeviceScan (InclusiveSum, ExclusiveSum)
 * and DeviceRadixSort (SortPairs, SortKeys and their Descending forms) with cub's temp-storage
 * protocol: a first call with d_temp_storage == NULL only sets temp_storage_bytes; the second
 * does the work in that scratch. The emulator checks what cub leaves to the caller: the second
 * call's temp_storage_bytes is at least what the first asked for, the scratch and every
 * pointer operand are device memory over the extent used (cuemu_fail names the call and the
 * argument). The scratch is really used (the sort's alternate key/value buffers; the scan's
 * tile descriptors are filled with a poison), so a caller that keeps live data in it, or frees
 * it before use, is seen. Work is done when called, on the host (streams are synchronous in the
 * emulator); the sort is an LSD radix sort on 8-bit digits over [begin_bit, end_bit) of cub's
 * bit-twiddled keys (signed integers: sign bit flipped; floats: sign-magnitude to unsigned),
 * stable as cub's. */
#ifndef ANIMA_CUEMU_CUB_CUH
#define ANIMA_CUEMU_CUB_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <iterator>
#include <type_traits>
#include <vector>

#include "../../cuemu.h"

namespace cub {

namespace cuemu_detail {

/* the scratch cub would ask for: the figure is the emulator's, only the protocol is cub's */
static const size_t kAlign = 256;
inline size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

template <typename It> inline void require_range(It p, size_t n, size_t elem, const char *fn, const char *arg) {
    if constexpr (std::is_pointer_v<It>) {
        if (n == 0) return;
        char what[160];
        snprintf(what, sizeof what, "%s: %s (%zu items)", fn, arg, n);
        cuemu_require_device((const void *)p, n * elem, what);
    } else {
        (void)p, (void)n, (void)elem, (void)fn, (void)arg; /* an iterator object: nothing to check */
    }
}

inline void require_apart(const void *a, size_t na, const void *b, size_t nb, const char *fn, const char *an,
                          const char *bn) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (na && nb && x < y + nb && y < x + na) cuemu_fail("%s: %s and %s overlap (cub requires them disjoint)", fn, an, bn);
}

/* The second call of the protocol: the scratch the first call asked for, in device memory. */
inline cudaError_t check_temp(void *d_temp, size_t bytes, size_t need, const char *fn) {
    if (bytes < need) {
        cuemu_fail("%s: temp_storage_bytes %zu is smaller than the %zu the sizing call (d_temp_storage == NULL) "
                   "returned",
                   fn, bytes, need);
        return cudaErrorInvalidValue;
    }
    char what[160];
    snprintf(what, sizeof what, "%s: d_temp_storage (%zu bytes)", fn, need);
    cuemu_require_device(d_temp, need, what);
    return cudaSuccess;
}

template <typename NumItemsT> inline bool bad_count(NumItemsT n) {
    if constexpr (std::is_signed_v<NumItemsT>) return n < 0;
    else return false;
}

inline size_t scan_temp_bytes(size_t n) { return round_up(16 * (n / 128 + 1)); } /* one descriptor per tile */

template <bool Inclusive, typename InIt, typename OutIt, typename NumItemsT>
cudaError_t scan(const char *fn, void *d_temp_storage, size_t &temp_storage_bytes, InIt d_in, OutIt d_out,
                 NumItemsT num_items) {
    if (bad_count(num_items)) return cudaErrorInvalidValue;
    size_t n = (size_t)num_items, need = scan_temp_bytes(n);
    if (!d_temp_storage) {
        temp_storage_bytes = need;
        return cudaSuccess;
    }
    cudaError_t e = check_temp(d_temp_storage, temp_storage_bytes, need, fn);
    if (e != cudaSuccess) return e;
    using In = typename std::iterator_traits<InIt>::value_type;
    require_range(d_in, n, sizeof(In), fn, "d_in");
    require_range(d_out, n, sizeof(typename std::remove_reference_t<decltype(*d_out)>), fn, "d_out");
    cuemu_host_access_begin();
    memset(d_temp_storage, 0xFF, need);
    /* the accumulator has the input's value type, as cub::Sum over it; in place (d_in == d_out) works */
    In acc{};
    for (size_t i = 0; i < n; i++) {
        In x = d_in[i];
        if (Inclusive) {
            acc = i == 0 ? x : (In)(acc + x);
            d_out[i] = acc;
        } else {
            d_out[i] = acc;
            acc = (In)(acc + x);
        }
    }
    cuemu_host_access_end();
    return cudaSuccess;
}

/* cub's bit twiddling: the unsigned image whose order is the key's order */
template <typename K> struct Twiddle {
    static_assert(std::is_arithmetic_v<K>, "cub radix sort: arithmetic keys only");
    using U = std::conditional_t<sizeof(K) == 1, uint8_t,
                                 std::conditional_t<sizeof(K) == 2, uint16_t,
                                                    std::conditional_t<sizeof(K) == 4, uint32_t, uint64_t>>>;
    static U bits(K k) {
        U u;
        memcpy(&u, &k, sizeof u);
        const U sign = (U)((U)1 << (sizeof(U) * 8 - 1));
        if constexpr (std::is_floating_point_v<K>) return (u & sign) ? (U)~u : (U)(u | sign);
        else if constexpr (std::is_signed_v<K>) return (U)(u ^ sign);
        else return u;
    }
};

template <typename K, typename V>
size_t sort_temp_bytes(size_t n, bool pairs) {
    return round_up(n * sizeof(K)) + (pairs ? round_up(n * sizeof(V)) : 0) + kAlign;
}

template <bool Descending, typename K, typename V>
cudaError_t radix_sort(const char *fn, void *d_temp_storage, size_t &temp_storage_bytes, const K *keys_in, K *keys_out,
                       const V *vals_in, V *vals_out, long long num_items, int begin_bit, int end_bit) {
    const bool pairs = vals_in != nullptr || vals_out != nullptr;
    if (num_items < 0 || begin_bit < 0 || end_bit > (int)(sizeof(K) * 8) || begin_bit > end_bit)
        return cudaErrorInvalidValue;
    size_t n = (size_t)num_items, need = sort_temp_bytes<K, V>(n, pairs);
    if (!d_temp_storage) {
        temp_storage_bytes = need;
        return cudaSuccess;
    }
    cudaError_t e = check_temp(d_temp_storage, temp_storage_bytes, need, fn);
    if (e != cudaSuccess) return e;
    require_range(keys_in, n, sizeof(K), fn, "d_keys_in");
    require_range(keys_out, n, sizeof(K), fn, "d_keys_out");
    if (pairs) {
        require_range(vals_in, n, sizeof(V), fn, "d_values_in");
        require_range(vals_out, n, sizeof(V), fn, "d_values_out");
    }
    /* cub: the output ranges shall not overlap the inputs in any way (no in-place sort), and
     * the scratch is cub's own */
    require_apart(keys_in, n * sizeof(K), keys_out, n * sizeof(K), fn, "d_keys_in", "d_keys_out");
    require_apart(d_temp_storage, need, keys_in, n * sizeof(K), fn, "d_temp_storage", "d_keys_in");
    require_apart(d_temp_storage, need, keys_out, n * sizeof(K), fn, "d_temp_storage", "d_keys_out");
    if (pairs) {
        require_apart(vals_in, n * sizeof(V), vals_out, n * sizeof(V), fn, "d_values_in", "d_values_out");
        require_apart(d_temp_storage, need, vals_in, n * sizeof(V), fn, "d_temp_storage", "d_values_in");
        require_apart(d_temp_storage, need, vals_out, n * sizeof(V), fn, "d_temp_storage", "d_values_out");
    }
    cuemu_host_access_begin();
    /* the alternate buffers live in the scratch, as cub's do */
    K *kalt = (K *)d_temp_storage;
    V *valt = pairs ? (V *)((char *)d_temp_storage + round_up(n * sizeof(K))) : nullptr;
    memset(d_temp_storage, 0xFF, need);
    /* passes ping-pong between out and alt; start in whichever makes the last pass land in out */
    int passes = (end_bit - begin_bit + 7) / 8;
    K *ks[2] = {keys_out, kalt};
    V *vs[2] = {vals_out, valt};
    int cur = passes % 2 == 0 ? 0 : 1;
    if (n > 0) {
        memmove(ks[cur], keys_in, n * sizeof(K));
        if (pairs) memmove(vs[cur], vals_in, n * sizeof(V));
    }
    for (int p = 0; p < passes && n > 0; p++) {
        int shift = begin_bit + 8 * p, width = end_bit - shift < 8 ? end_bit - shift : 8;
        unsigned mask = (1u << width) - 1;
        size_t count[257] = {0};
        auto digit = [&](K k) {
            unsigned d = (unsigned)((Twiddle<K>::bits(k) >> shift) & mask);
            return Descending ? mask - d : d;
        };
        for (size_t i = 0; i < n; i++) count[digit(ks[cur][i]) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        K *kd = ks[1 - cur];
        V *vd = vs[1 - cur];
        for (size_t i = 0; i < n; i++) { /* in order: stable */
            size_t at = count[digit(ks[cur][i])]++;
            kd[at] = ks[cur][i];
            if (pairs) vd[at] = vs[cur][i];
        }
        cur = 1 - cur;
    }
    cuemu_host_access_end();
    return cudaSuccess;
}

struct NullType {};

} // namespace cuemu_detail

struct DeviceScan {
    template <typename InIt, typename OutIt, typename NumItemsT>
    static cudaError_t InclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes, InIt d_in, OutIt d_out,
                                    NumItemsT num_items, cudaStream_t stream = 0) {
        (void)stream;
        return cuemu_detail::scan<true>("cub::DeviceScan::InclusiveSum", d_temp_storage, temp_storage_bytes, d_in,
                                        d_out, num_items);
    }
    template <typename InIt, typename OutIt, typename NumItemsT>
    static cudaError_t ExclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes, InIt d_in, OutIt d_out,
                                    NumItemsT num_items, cudaStream_t stream = 0) {
        (void)stream;
        return cuemu_detail::scan<false>("cub::DeviceScan::ExclusiveSum", d_temp_storage, temp_storage_bytes, d_in,
                                         d_out, num_items);
    }
};

struct DeviceRadixSort {
    template <typename KeyT, typename ValueT, typename NumItemsT>
    static cudaError_t SortPairs(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                                 KeyT *d_keys_out, const ValueT *d_values_in, ValueT *d_values_out,
                                 NumItemsT num_items, int begin_bit = 0, int end_bit = sizeof(KeyT) * 8,
                                 cudaStream_t stream = 0) {
        (void)stream;
        return cuemu_detail::radix_sort<false>("cub::DeviceRadixSort::SortPairs", d_temp_storage, temp_storage_bytes,
                                               d_keys_in, d_keys_out, d_values_in, d_values_out,
                                               (long long)num_items, begin_bit, end_bit);
    }
    template <typename KeyT, typename ValueT, typename NumItemsT>
    static cudaError_t SortPairsDescending(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                                           KeyT *d_keys_out, const ValueT *d_values_in, ValueT *d_values_out,
                                           NumItemsT num_items, int begin_bit = 0, int end_bit = sizeof(KeyT) * 8,
                                           cudaStream_t stream = 0) {
        (void)stream;
        return cuemu_detail::radix_sort<true>("cub::DeviceRadixSort::SortPairsDescending", d_temp_storage,
                                              temp_storage_bytes, d_keys_in, d_keys_out, d_values_in, d_values_out,
                                              (long long)num_items, begin_bit, end_bit);
    }
    template <typename KeyT, typename NumItemsT>
    static cudaError_t SortKeys(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                                KeyT *d_keys_out, NumItemsT num_items, int begin_bit = 0,
                                int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
        (void)stream;
        return cuemu_detail::radix_sort<false, KeyT, cuemu_detail::NullType>(
            "cub::DeviceRadixSort::SortKeys", d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, nullptr,
            nullptr, (long long)num_items, begin_bit, end_bit);
    }
    template <typename KeyT, typename NumItemsT>
    static cudaError_t SortKeysDescending(void *d_temp_storage, size_t &temp_storage_bytes, const KeyT *d_keys_in,
                                          KeyT *d_keys_out, NumItemsT num_items, int begin_bit = 0,
                                          int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
        (void)stream;
        return cuemu_detail::radix_sort<true, KeyT, cuemu_detail::NullType>(
            "cub::DeviceRadixSort::SortKeysDescending", d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out,
            nullptr, nullptr, (long long)num_items, begin_bit, end_bit);
    }
};

} // namespace cub

#endif
