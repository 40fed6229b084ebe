#pragma once
// The kill -9 loop delay_kill9_test and timer_kill9_test share. A child
// (uringmq_deferred_child <kind>) sends deferred messages to four queues of one topic and prints
// each acknowledged one; it is killed with SIGKILL at random moments (mid-send, mid-delivery,
// mid-roll). After each kill the store reopens, every pending message falls due, and reading
// every real queue from its start must show each acknowledged message exactly once, and no
// other message more than once. URINGMQ_SEED and URINGMQ_KILL9_CYCLES (10) set the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "tests/crash/deferred_store_options.h"
#include "tests/support/env.h"
#include "tests/support/kill_child.h"
#include "tests/support/pull_to_end.h"
#include "tests/support/temp_dir.h"

namespace uringmq::testing {

struct DeferredKill9 {
  const char* kind;                    // the child's first argument, and the summary's name
  std::string_view topic;              // the real topic the child's messages go to
  std::function<void(Store&)> settle;  // returns once every pending message has been delivered
};

// Every message in the real queues: seq -> copies.
inline std::map<uint64_t, int> read_all(Session& session, std::string_view topic) {
  std::map<uint64_t, int> copies;
  for (int32_t q = 0; q < 4; q++) {
    int64_t offset = 0;
    pull_to_end(
        session, topic, q, &offset,
        [&](const engine::MessageView& v) {
          auto seq = engine::find_property(v.user_properties, "S");
          EXPECT_TRUE(seq.has_value());
          copies[std::stoull(std::string(seq.value_or("0")))]++;
        },
        256);
  }
  return copies;
}

inline void run_deferred_kill9(const DeferredKill9& k) {
  const uint64_t seed = testing::env_u64("URINGMQ_SEED", 20261130);
  const int cycles = static_cast<int>(testing::env_u64("URINGMQ_KILL9_CYCLES", 10));
  testing::KillSchedule kills(seed, 200, 600);
  testing::TempDir dir;
  const std::string data = dir.path() + "/store";
  std::set<uint64_t> acked;
  uint64_t next_seq = 0, lost = 0, duplicated = 0, delivered = 0;
  uint64_t lost_total = 0, duplicated_total = 0;
  for (int cycle = 0; cycle < cycles; cycle++) {
    const std::string out = dir.path() + "/child-" + std::to_string(cycle) + ".out";
    std::string killed = testing::run_then_kill(
        DEFERRED_CHILD_PATH, {k.kind, data, std::to_string(next_seq)}, out, kills.next_ms());
    ASSERT_EQ(killed, "") << "cycle " << cycle;
    std::ifstream in(out);
    std::string tag;
    unsigned long long seq = 0;
    const size_t acked_before = acked.size();
    while (in >> tag >> seq) {
      if (tag == "A") acked.insert(seq);
    }
    kills.cycle_done(acked.size() > acked_before);
    auto store = Store::open(testing::deferred_store_options(data));
    ASSERT_TRUE(store.is_ok()) << "cycle " << cycle << ": " << store.status().to_string();
    k.settle(**store);  // every pending message falls due and is delivered
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    std::map<uint64_t, int> copies = read_all(**session, k.topic);
    uint64_t max_seen = 0;
    std::string examples;
    for (auto& [s, n] : copies) {
      max_seen = std::max(max_seen, s);
      if (n > 1) {
        duplicated++;
        if (examples.size() < 200)
          examples += " dup " + std::to_string(s) + "x" + std::to_string(n);
      }
      delivered++;
    }
    for (uint64_t s : acked) {
      if (copies.find(s) == copies.end()) {
        lost++;
        if (examples.size() < 400) examples += " lost " + std::to_string(s);
      }
    }
    if (lost + duplicated > 0) std::printf("cycle %d:%s\n", cycle, examples.c_str());
    EXPECT_EQ(lost, 0u) << "cycle " << cycle << " seed " << seed;
    EXPECT_EQ(duplicated, 0u) << "cycle " << cycle << " seed " << seed;
    lost_total += lost;
    duplicated_total += duplicated;
    delivered = 0;
    lost = duplicated = 0;
    next_seq = std::max<uint64_t>(next_seq, max_seen + 1) + 100000;  // fresh seqs per cycle
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  std::printf("%s-kill9-summary: cycles=%d acked=%zu lost=%llu duplicated=%llu seed=%llu\n", k.kind,
              cycles, acked.size(), static_cast<unsigned long long>(lost_total),
              static_cast<unsigned long long>(duplicated_total),
              static_cast<unsigned long long>(seed));
  EXPECT_GT(acked.size(), 0u);
}

}  // namespace uringmq::testing
