#pragma once
// The StoreOptions every test starts from.

#include <cstdint>
#include <string>

#include "engine/store.h"

namespace uringmq::testing {

// `dir` as the data dir, `shards` shards, threads not pinned (CI has 2 cores and runs tests side
// by side), 1 MiB segments, and no forced clean. A forced clean (disk_force_clean_ratio) deletes
// unexpired segments whenever the machine's disk is at least 85% used, whatever the test stored:
// a test that runs a clean pass (10 s of its clock) then loses what it checks
// (StoreTimerTest.LongDelaysRollForwardPastRetention failed so on a shared disk). A test of the
// forced clean itself sets the ratio back. Likewise expired segments go only at
// delete_when_hour_utc, not whenever the machine's disk is more than 75% used
// (disk_max_used_space_ratio): StoreConsumerTest.RetentionDeletesExpiredSegmentsAndMinOffsetsFollow
// failed so once the shared disk crossed 75%, its segments then going in the session before the
// one it checks. A test of that ratio sets it (or a space_probe). Likewise sends are not refused on
// a nearly full disk (disk_space_warning_ratio).
inline StoreOptions store_test_options(const std::string& dir, uint32_t shards) {
  StoreOptions o;
  o.data_dir = dir;
  o.shard_count = shards;
  o.pin_threads = false;
  o.log.segment_size_bytes = 1u << 20;
  o.disk_max_used_space_ratio = 1.0;
  o.disk_force_clean_ratio = 1.0;
  o.disk_space_warning_ratio = 1.0;
  o.index.hash_slots = 4096;  // small index files (the defaults make 420 MB sparse files)
  o.index.max_entries = 100'000;
  return o;
}

}  // namespace uringmq::testing
