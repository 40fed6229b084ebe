#pragma once
// SimRandom: the one seeded random generator of a SimDisk (xoshiro256**, seeded through
// splitmix64). Every random choice of the disk, its fault model and its crash model comes from
// one instance, in call order: the same seed and the same calls give the same draws.
//
// Threading: one thread, like the SimDisk that owns it.

#include <array>
#include <cstdint>

#include "io/assert.h"

namespace uringmq::io {

class SimRandom {
 public:
  explicit SimRandom(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t& word : state_) word = splitmix64(sm);
  }

  // The next 64 random bits.
  uint64_t next() {
    std::array<uint64_t, 4>& s = state_;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }

  // [0, bound), bound > 0.
  uint64_t uniform(uint64_t bound) {
    UMQ_ASSERT(bound > 0);
    return next() % bound;  // the bias is irrelevant at simulation sizes
  }

  // A uniform double in [0, 1), from one draw.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // true with `probability`; draws nothing when it is <= 0 or >= 1.
  bool chance(double probability) {
    if (probability <= 0) return false;
    if (probability >= 1) return true;
    return unit() < probability;
  }

 private:
  static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::array<uint64_t, 4> state_{};
};

}  // namespace uringmq::io
