#pragma once
// The store options shared by delay_kill9_test, timer_kill9_test and their child
// (deferred_child.cc): short custom delay levels and a short timer-wheel horizon.
#include <string>

#include "engine/store.h"
#include "tests/support/store_options.h"

namespace uringmq::testing {

inline StoreOptions deferred_store_options(const std::string& dir) {
  StoreOptions options = testing::store_test_options(dir, 2);
  options.log.write_buffer_bytes = 1u << 20;
  options.log.limits.max_body_bytes = 64u << 10;
  options.message_delay_level = "50ms 100ms 200ms 300ms";
  // Timed messages: 16 slots of 50 ms, a 0.7 s horizon, so 1.5 s timers are rolled forward.
  options.timer_bucket_ms = 50;
  options.timer_slot_count = 16;
  return options;
}

}  // namespace uringmq::testing
