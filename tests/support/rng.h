#pragma once
// Rng: the seeded generator of test workloads (splitmix64). Every run reproduces from its seed;
// a stream salt keeps two generators from the same seed (workload, disk) independent.
#include <cstdint>

namespace uringmq::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 1)
      : state_(seed * 0x9E3779B97F4A7C15ULL + stream) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  double unit() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }

 private:
  uint64_t state_;
};

}  // namespace uringmq::testing
