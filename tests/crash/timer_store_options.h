#pragma once
// The store options shared by timer_kill9_test and its child: a small, fast wheel (100 ms
// buckets, 16 slots: a 1.4 s horizon, so the longer delays are rolled forward at least once).
#include <string>

#include "engine/store.h"

namespace uringmq::testing {

inline StoreOptions timer_store_options(const std::string& dir) {
  StoreOptions options;
  options.data_dir = dir;
  options.shard_count = 2;
  options.pin_threads = false;
  options.log.segment_size_bytes = 1u << 20;
  options.log.write_buffer_bytes = 1u << 20;
  options.log.limits.max_body_bytes = 64u << 10;
  options.timer_bucket_ms = 100;
  options.timer_slot_count = 16;
  return options;
}

}  // namespace uringmq::testing
