#include "io/clock.h"

#include <ctime>

#include "io/assert.h"

namespace uringmq::io {

namespace {
int64_t read_clock_ns(clockid_t id) {
  timespec ts{};
  int rc = clock_gettime(id, &ts);
  UMQ_ASSERT(rc == 0);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t SystemClock::now_ms() const {
  return read_clock_ns(CLOCK_REALTIME) / 1'000'000;
}
int64_t SystemClock::now_ns() const {
  return read_clock_ns(CLOCK_REALTIME);
}
int64_t SystemClock::monotonic_ns() const {
  return read_clock_ns(CLOCK_MONOTONIC);
}

void ManualClock::advance_ms(int64_t delta_ms) {
  UMQ_ASSERT(delta_ms >= 0);
  wall_ms_.fetch_add(delta_ms, std::memory_order_acq_rel);
  mono_ns_.fetch_add(delta_ms * 1'000'000, std::memory_order_acq_rel);
}

}  // namespace uringmq::io
