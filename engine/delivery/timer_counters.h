#pragma once
// TimerCounters: one shard's timer figures (TimerStats) and how far behind their deliver times
// timers were delivered. Written by the owning shard's thread with relaxed atomic operations (no
// locked instruction on its path beyond the counter itself, no allocation); read by any thread.

#include <atomic>
#include <cstdint>

#include <uringmq/store.h>

#include "engine/metrics_histogram.h"

namespace uringmq::engine {

struct TimerCounters {
  // Adds the counters into `out` (any thread).
  void add_to(TimerStats& out) const {
    out.accepted += accepted.load(std::memory_order_relaxed);
    out.in_memory += in_memory.load(std::memory_order_relaxed);
    out.delivered += delivered.load(std::memory_order_relaxed);
    out.rolled += rolled.load(std::memory_order_relaxed);
    out.cancelled += cancelled.load(std::memory_order_relaxed);
    out.parked += parked.load(std::memory_order_relaxed);
    out.deleted += deleted.load(std::memory_order_relaxed);
  }

  std::atomic<uint64_t> accepted{0}, in_memory{0}, delivered{0}, rolled{0}, cancelled{0}, parked{0},
      deleted{0};
  AtomicHistogram lateness_ms{kLatenessBoundsMs};  // real-queue deliveries only
};

}  // namespace uringmq::engine
