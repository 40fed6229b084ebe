// Goal: the message index is complete and consistent with the log after kill -9: every message
// the child saw acknowledged is found again by its KEYS word and by its UNIQ_KEY, exactly once
// and carrying that key, after any number of kills (recovery re-inserts what the index had not
// made durable; files roll during the run). A key never sent is never found.
// Method: fork/exec uringmq_index_child, kill it with SIGKILL after a random delay from a printed
// seed, reopen the store and look every acknowledged message up; many cycles, keys continuing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "tests/crash/index_store_options.h"
#include "tests/support/env.h"
#include "tests/support/kill_child.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

// The UNIQ_KEYs of the records a lookup of `key` returns, over both shards.
std::vector<std::string> lookup(Session& session, const std::string& key) {
  std::vector<std::string> found;
  std::vector<std::byte> buffer(1 << 16);
  for (uint32_t shard = 0; shard < 2; shard++) {
    IndexQueryRequest q{"IndexTopic", key, 0, INT64_MAX, 32, buffer};
    if (!session.query_index_async(shard, q, 9).is_ok()) return {"post failed"};
    Completion c = session.wait_for(9);
    if (c.code != io::Code::ok) return {"lookup failed"};
    size_t at = 0;
    for (uint32_t i = 0; i < c.message_count; i++) {
      engine::DecodeResult r = engine::decode(std::span(buffer).subspan(at, c.size_bytes - at), {});
      if (r.outcome != engine::DecodeOutcome::ok) return {"undecodable"};
      found.emplace_back(engine::find_property(r.view.user_properties, "UNIQ_KEY").value_or(""));
      at += r.size;
    }
  }
  return found;
}

TEST(IndexKill9, AcknowledgedKeysAreFoundAfterEveryKill) {
  const uint64_t seed = testing::env_u64("URINGMQ_SEED", 20261201);
  const int cycles = static_cast<int>(testing::env_u64("URINGMQ_KILL9_CYCLES", 8));
  testing::KillSchedule kills(seed, 300, 700);
  testing::TempDir dir;
  const std::string data = dir.path() + "/store";
  std::vector<long long> acked;
  long long next = 0;
  for (int cycle = 0; cycle < cycles; cycle++) {
    const std::string out = dir.path() + "/child-" + std::to_string(cycle) + ".out";
    std::string killed = testing::run_then_kill(INDEX_CHILD_PATH, {data, std::to_string(next)}, out,
                                                kills.next_ms());
    ASSERT_EQ(killed, "") << "cycle " << cycle << " seed " << seed;
    std::ifstream in(out);
    std::string tag;
    long long n = 0;
    const size_t acked_before = acked.size();
    while (in >> tag >> n) {
      if (tag == "A") acked.push_back(n);
    }
    const bool progressed = acked.size() > acked_before;
    kills.cycle_done(progressed);
    next = testing::next_first_key(next, progressed ? std::optional(acked.back()) : std::nullopt);
    auto store = Store::open(testing::index_crash_options(data));
    ASSERT_TRUE(store.is_ok()) << "cycle " << cycle << ": " << store.status().to_string();
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    for (size_t i = 0; i < acked.size(); i++) {
      const std::string id = std::to_string(acked[i]);
      // Every message is checked after the kill that follows it; older ones every few cycles.
      if (i + 5000 < acked.size() && (i + static_cast<size_t>(cycle)) % 7 != 0) continue;
      ASSERT_EQ(lookup(**session, "ik-" + id), std::vector<std::string>{"iu-" + id})
          << "cycle " << cycle << " seed " << seed;
      ASSERT_EQ(lookup(**session, "iu-" + id), std::vector<std::string>{"iu-" + id})
          << "cycle " << cycle << " seed " << seed;
    }
    EXPECT_TRUE(lookup(**session, "ik-never-sent").empty());
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  std::printf("index-kill9-summary: cycles=%d acked=%zu seed=%llu\n", cycles, acked.size(),
              static_cast<unsigned long long>(seed));
  EXPECT_GT(acked.size(), 100u) << "the child acknowledged too little: the test proved nothing";
}

}  // namespace
}  // namespace uringmq
