#pragma once
// The store options shared by delay_kill9_test and its child: short custom delay levels.
#include <string>

#include "engine/store.h"

namespace uringmq::testing {

inline StoreOptions delay_store_options(const std::string& dir) {
  StoreOptions options;
  options.data_dir = dir;
  options.shard_count = 2;
  options.pin_threads = false;
  options.log.segment_size_bytes = 1u << 20;
  options.log.write_buffer_bytes = 1u << 20;
  options.log.limits.max_body_bytes = 64u << 10;
  options.message_delay_level = "50ms 100ms 200ms 300ms";
  return options;
}

}  // namespace uringmq::testing
