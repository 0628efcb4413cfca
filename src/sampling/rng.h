// Seeded random numbers for sampling, identical on every platform and
// standard library: xoshiro256** (Blackman & Vigna) with its state expanded
// from a 64-bit seed by splitmix64, both written out here. std:: distributions
// are avoided on purpose: their output is implementation-defined.
//
// Not thread-safe; one per sequence.
#pragma once

#include <cstdint>

namespace omnibus {

// splitmix64: a tiny generator used only to turn one seed into many
// well-mixed words (any seed, including 0, gives a non-zero xoshiro state).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    SplitMix64 mix(seed);
    for (uint64_t& word : state_) word = mix.next();
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits: exact in a double, never 1.0.
  double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace omnibus
