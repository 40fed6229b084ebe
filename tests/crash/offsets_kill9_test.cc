// Goal: consumer-group offsets survive kill -9. A child commits offsets through a real Store and
// reports each round it has flushed; it is killed with SIGKILL at random moments. After every
// kill, the store reopens (recovery must succeed) and every queue's offset is at least the last
// round the child reported flushed, and never above what it could have committed.
// Method: fork/exec uringmq_offsets_child, random delays from a printed seed, many cycles.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "engine/store.h"
#include "tests/support/env.h"
#include "tests/support/kill_child.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

int64_t last_flushed(const std::string& path) {
  std::ifstream in(path);
  std::string tag;
  long long round = 0, last = 0;
  while (in >> tag >> round) {
    if (tag == "F") last = round;
  }
  return last;
}

TEST(OffsetsKill9, CommittedAndFlushedOffsetsSurvive) {
  const uint64_t seed = testing::env_u64("URINGMQ_SEED", 20261130);
  const int cycles = static_cast<int>(testing::env_u64("URINGMQ_KILL9_CYCLES", 10));
  testing::KillSchedule kills(seed, 300, 700);
  testing::TempDir dir;
  const std::string data = dir.path() + "/store";
  int64_t flushed_total = 0, lost = 0;
  // What the previous cycle left: a child killed before its first flush (a slow start) prints no
  // "F" line, and its store still holds what the cycle before committed.
  int64_t previous = 0;
  for (int cycle = 0; cycle < cycles; cycle++) {
    const std::string out = dir.path() + "/child-" + std::to_string(cycle) + ".out";
    std::string killed = testing::run_then_kill(OFFSETS_CHILD_PATH, {data}, out, kills.next_ms());
    ASSERT_EQ(killed, "") << "cycle " << cycle;
    const int64_t flushed = last_flushed(out);
    kills.cycle_done(flushed > 0);
    flushed_total += flushed > 0 ? 1 : 0;
    StoreOptions options = testing::store_test_options(data, 2);
    options.log.write_buffer_bytes = 1u << 20;
    options.log.limits.max_body_bytes = 64u << 10;
    auto store = Store::open(options);
    ASSERT_TRUE(store.is_ok()) << "cycle " << cycle << ": " << store.status().to_string();
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    int64_t cycle_max = 0;
    for (int32_t q = 0; q < 4; q++) {
      ASSERT_TRUE((*session)->query_offset_async("G", "TopicTest", q, 1).is_ok());
      // -1: the group has no offset for the queue, as when no child reached its first commit
      // (rounds count from 1, so -1 against any flushed round is still a loss).
      const int64_t offset = std::max<int64_t>((*session)->wait_for(1).queue_offset.value, 0);
      lost += offset < flushed ? 1 : 0;
      EXPECT_GE(offset, flushed) << "cycle " << cycle << " queue " << q << " seed " << seed;
      EXPECT_LE(offset, std::max(flushed, previous) + 10)
          << "an offset beyond any the child committed";
      cycle_max = std::max(cycle_max, offset);
    }
    previous = cycle_max;
    session->reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  std::printf("offsets-kill9-summary: cycles=%d cycles_with_flushes=%lld lost=%lld seed=%llu\n",
              cycles, static_cast<long long>(flushed_total), static_cast<long long>(lost),
              static_cast<unsigned long long>(seed));
  EXPECT_GT(flushed_total, 0) << "no cycle flushed anything: the test proved nothing";
}

}  // namespace
}  // namespace uringmq
