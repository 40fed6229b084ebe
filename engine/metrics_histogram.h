#pragma once
// AtomicHistogram: a fixed-bucket histogram written by one thread (a shard's) and read by any
// (Store::stats(), the broker's metrics endpoint).
//
// Why relaxed loads and stores and not fetch_add: there is one writer, so an increment is a
// plain load and store (no locked instruction, no fence) on the append path; a reader sees each
// field whole, perhaps a few observations behind the others (a scrape is a snapshot, not a
// transaction). The bounds table is static (include/uringmq/store.h); nothing allocates.

#include <array>
#include <atomic>
#include <cstdint>

#include <uringmq/store.h>

namespace uringmq::engine {

class AtomicHistogram {
 public:
  explicit AtomicHistogram(const std::array<uint64_t, kHistogramBounds>& bounds)
      : bounds_(&bounds) {}
  AtomicHistogram(const AtomicHistogram&) = delete;
  AtomicHistogram& operator=(const AtomicHistogram&) = delete;

  // The writer thread only.
  void observe(uint64_t value) {
    size_t i = 0;
    while (i < kHistogramBounds && value > (*bounds_)[i]) i++;
    bump(counts_[i], 1);
    bump(sum_, value);
  }
  // Any thread: adds this histogram into `out` (shards' histograms sum).
  void add_to(StoreHistogram& out) const {
    for (size_t i = 0; i < counts_.size(); i++) {
      out.counts[i] += counts_[i].load(std::memory_order_relaxed);
    }
    out.sum += sum_.load(std::memory_order_relaxed);
  }

 private:
  static void bump(std::atomic<uint64_t>& field, uint64_t by) {
    field.store(field.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  const std::array<uint64_t, kHistogramBounds>* bounds_;
  std::array<std::atomic<uint64_t>, kHistogramBounds + 1> counts_{};
  std::atomic<uint64_t> sum_{0};
};

}  // namespace uringmq::engine
