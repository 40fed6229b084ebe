#pragma once
// Clocks: every time the engine uses comes from an io::Clock (the interface is public,
// include/uringmq/clock.h), never from the system directly, so tests can run hours of delays in
// milliseconds with ManualClock.
// SystemClock and ManualClock are thread-safe.

#include <atomic>
#include <cstdint>

#include <uringmq/clock.h>

namespace uringmq::io {

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override;
  int64_t now_ns() const override;
  int64_t monotonic_ns() const override;
};

// Time moves only when a test says so. The wall clock may be set backwards (clock steps); the
// monotonic clock only moves forward, by advance_ms().
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : wall_ms_(start_ms) {}
  int64_t now_ms() const override { return wall_ms_.load(std::memory_order_acquire); }
  int64_t monotonic_ns() const override { return mono_ns_.load(std::memory_order_acquire); }
  void advance_ms(int64_t delta_ms);
  // Steps the wall clock to `wall_ms` (possibly backwards); the monotonic clock is unchanged.
  void set_wall_ms(int64_t wall_ms) { wall_ms_.store(wall_ms, std::memory_order_release); }

 private:
  std::atomic<int64_t> wall_ms_;
  std::atomic<int64_t> mono_ns_{0};
};

}  // namespace uringmq::io
