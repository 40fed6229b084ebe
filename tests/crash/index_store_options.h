#pragma once
// The StoreOptions index_kill9_test and its child share: two shards, small index files (a few
// thousand entries: they roll during a run) and a small write-back window.
#include <string>

#include "engine/store.h"
#include "tests/support/store_options.h"

namespace uringmq::testing {

inline StoreOptions index_crash_options(const std::string& dir) {
  StoreOptions o = store_test_options(dir, 2);
  o.log.write_buffer_bytes = 1u << 20;
  o.log.limits.max_body_bytes = 64u << 10;
  o.index.hash_slots = 997;
  o.index.max_entries = 3000;
  o.index.memory_entries = 256;
  o.index.flush_interval_ms = 20;
  return o;
}

}  // namespace uringmq::testing
