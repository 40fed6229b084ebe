#pragma once
// The StoreOptions index_kill9_test and its child share: two shards, small index files (a few
// thousand entries: they roll during a run) and a small write-back window; and the first key of
// each cycle's child.
#include <optional>
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

// The first key n of the next cycle's child, given this cycle's first key and the last key it
// acknowledged (none: the kill came first). The child sends one message at a time, so it may have
// stored one key past its last acknowledged one, or its first key when it acknowledged none: a
// send is durable before its acknowledgement reaches the child. The next child starts a million
// past either, never at a key that may be in the log already (a reused key is two messages).
inline long long next_first_key(long long first, std::optional<long long> last_acked) {
  return last_acked.value_or(first) + 1'000'000;
}

}  // namespace uringmq::testing
