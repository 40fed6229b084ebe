#pragma once
// The StoreOptions every test starts from.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"

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

// store_test_options with log_fixture.h's small CommitLog (1 MiB segments) and the test's clock:
// where the schedule, timer and transaction tests start.
inline StoreOptions clocked_store_options(const std::string& dir, uint32_t shards,
                                          io::Clock* clock) {
  StoreOptions o = store_test_options(dir, shards);
  o.log = small_log_options("");
  o.log.segment_size_bytes = 1u << 20;
  o.clock = clock;
  return o;
}

// A child process's store and its session.
struct ChildStore {
  std::unique_ptr<Store> store;
  std::unique_ptr<Session> session;
};

// Opens the store and a session; nullopt (the store's error printed on stderr) when either fails.
inline std::optional<ChildStore> open_child_store(const StoreOptions& options) {
  auto store = Store::open(options);
  if (!store.is_ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().to_string().c_str());
    return std::nullopt;
  }
  auto session = (*store)->open_session();
  if (!session.is_ok()) {
    std::fprintf(stderr, "open_session: %s\n", session.status().to_string().c_str());
    return std::nullopt;
  }
  return ChildStore{std::move(*store), std::move(*session)};
}

}  // namespace uringmq::testing
