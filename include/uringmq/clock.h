#pragma once
// uringmq public API: Clock, the source of every time the store uses (store timestamps, flush
// intervals, retention, delays), never the system directly. An embedder may pass its own in
// StoreOptions::clock; null there means the system clock. It must be thread-safe (every shard
// thread reads it) and outlive the store. The engine's SystemClock and ManualClock (io/clock.h)
// implement it.

#include <cstdint>

namespace uringmq::io {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall clock, milliseconds since the Unix epoch (RocketMQ store timestamps). May step back.
  virtual int64_t now_ms() const = 0;
  // Wall clock in nanoseconds, for waking exactly at a millisecond boundary of now_ms().
  virtual int64_t now_ns() const { return now_ms() * 1'000'000; }
  // Monotonic nanoseconds from an arbitrary origin, for intervals and latencies.
  virtual int64_t monotonic_ns() const = 0;
};

}  // namespace uringmq::io
