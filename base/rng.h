/* base/rng.h — the library's one small seedable generator, for the host-side draws that are not
 * tensors (shape seeds, dataset splits, shuffles, random poses, lattice noise): splitmix64
 * (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number generators"). Tensors draw from
 * tensor/rng (Philox, counter-based, the same on every device); this is for plain loops.
 *
 * The stream: a state s advances by γ = 0x9e3779b97f4a7c15 (2^64 / φ, odd) per draw, and each
 * draw is the finalizer of the new state: base_rng_next(&s) = base_splitmix64(s), s += γ.
 * base_splitmix64(x) is also a good 64-bit hash of x on its own (every input bit reaches every
 * output bit), which is how a seed splits into independent sub-streams: base_rng_split(seed, k)
 * is the seed of stream k. Header only, libc only. */
#ifndef ANIMA_BASE_RNG_H
#define ANIMA_BASE_RNG_H

#include <stdint.h>

#define BASE_RNG_GAMMA 0x9e3779b97f4a7c15ull

/* the draw of a stream whose state is x before it: finalizer(x + γ) */
static inline uint64_t base_splitmix64(uint64_t x) {
    x += BASE_RNG_GAMMA;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* the next 64 bits of the stream at *state, which advances */
static inline uint64_t base_rng_next(uint64_t *state) {
    uint64_t z = base_splitmix64(*state);
    *state += BASE_RNG_GAMMA;
    return z;
}

/* a uniform double in [0, 1) with 53 random bits */
static inline double base_rng_uniform(uint64_t *state) { return (double)(base_rng_next(state) >> 11) / 9007199254740992.0; }

/* the seed of sub-stream k of seed: streams of different k (or seeds) are independent */
static inline uint64_t base_rng_split(uint64_t seed, uint64_t k) { return base_splitmix64(base_splitmix64(seed) ^ k); }

#endif
