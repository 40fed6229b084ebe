// Goal: delayed delivery is exactly-once across crashes at random points: after any
// power loss (unsynced pages kept, dropped or torn) or kill -9, and recovery, every delayed
// message whose put was acknowledged is delivered to its real topic and queue exactly once, never
// before its deliver time; no message is delivered twice, none appears from nowhere; every
// acknowledged plain message is present; what the log holds is what the queues show.
// Method: the real Shard (engine/shard.cc, delivery/level_delivery.cc: batched head delivery, the
// __UMQ_DLV marker, progress in %SCHEDULE_PROGRESS%, the checkpoint held below unpersisted
// deliveries) in stepped mode over SimDisk with a ManualClock, fed through its own session rings.
// Each seed swarms its parameters (completion order, io mode, flush mode, checkpoint, offsets
// and ConsumeQueue intervals, tiny segments and ConsumeQueue files, few units in memory so
// delivery reads go cold) and runs cycles of puts (delayed at levels "10ms 50ms 200ms 1s", one
// above the maximum, and plain) while the clock moves, crashing at a random step, at a step
// where the offsets table is being persisted, or right after a delivery moved with more due.
// A final open runs every level dry, a clean restart must deliver nothing more, and the checker
// reads the whole log. Two canaries (recovery ignoring the markers; the checkpoint passing
// unpersisted deliveries) must be caught duplicating. A failing seed prints the line that
// reproduces it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/log/properties.h"
#include "engine/queues/dispatch.h"
#include "engine/shard.h"
#include "sched/delay_levels.h"
#include "tests/support/env.h"
#include "tests/support/stepped_shard_sim.h"

namespace uringmq {
namespace {

using namespace testing;  // the stepped-shard harness

constexpr std::string_view kLevels = "10ms 50ms 200ms 1s";
constexpr std::string_view kDelayTopic = "DelayTopic";
constexpr std::string_view kPlainTopic = "PlainTopic";
constexpr int32_t kQueues = 3;

// Delay levels on the shared stepped-shard harness (tests/support/stepped_shard_sim.h).
class ScheduleSim final : public testing::SteppedShardSim {
 public:
  ScheduleSim(uint64_t seed, const SimSeedOptions& seed_options)
      : SteppedShardSim(seed, seed_options,
                        {engine::kScheduleTopic, {kDelayTopic, kPlainTopic}, kQueues, kLevels}) {}

 private:
  // A delayed put (levels 1..5; 5 is above the table and clamps to 4) or a plain one.
  void make_put(SimPut& p) override {
    p.queue_id = static_cast<int32_t>(rng().below(kQueues));
    const bool delayed = rng().below(4) != 0;
    p.kind = delayed ? SimPut::Kind::deferred : SimPut::Kind::plain;
    p.topic = delayed ? kDelayTopic : kPlainTopic;
    engine::append_property(p.properties, "K", std::to_string(p.key));
    if (rng().below(2) == 0)
      engine::append_property(p.properties, "TAGS", "T" + std::to_string(p.queue_id));
    if (delayed) {
      const int64_t requested = 1 + static_cast<int64_t>(rng().below(5));
      level_.resize(p.key + 1);
      level_[p.key] = levels().clamp(requested);
      engine::append_property(p.properties, "DELAY", std::to_string(requested));
    }
    p.body = testing::body_of(p.key, 1 + static_cast<uint32_t>(rng().below(max_body_bytes())));
  }

  uint64_t delivered_count() const override {
    uint64_t n = 0;
    for (const DelayLevelStats& s : stats()) n += s.delivered;
    return n;
  }
  int64_t pending_count() const override {
    int64_t n = 0;
    for (const DelayLevelStats& s : stats()) n += s.pending;
    return n;
  }
  int64_t drain_span_ms() const override { return levels().delay_ms(levels().max_level()) + 100; }

  // Exactly once, never before its store time in the schedule topic + its level's delay.
  SimVerdict judge(const SimPut& p, const SimSource* source,
                   std::span<const SimCopy> copies) override {
    (void)copies;
    SimVerdict v;
    v.sourced = source != nullptr;
    if (source != nullptr) v.not_before_ms = source->store_ms + levels().delay_ms(level_[p.key]);
    return v;
  }

  std::vector<DelayLevelStats> stats() const {
    std::vector<DelayLevelStats> stats(levels().max_level());
    shard().add_delay_level_stats(stats);
    return stats;
  }

  std::vector<uint32_t> level_;  // by key: the clamped level of a delayed put
};

void run_seed(uint64_t seed, const SimSeedOptions& seed_options, SimTotals& totals,
              std::string* problem) {
  ScheduleSim sim(seed, seed_options);
  sim.run(totals, problem);
}

void print_summary(const char* mode, const SimTotals& t) {
  const testing::SummaryField extra[] = {{"async_power_crashes", t.async_power_crashes},
                                         {"async_lost", t.async_lost}};
  testing::print_summary("schedule", mode, t, "acked_delayed", extra);
}

// Power loss under ASYNC_FLUSH too: an acknowledged put lost with its record is allowed (an
// ASYNC_FLUSH acknowledgement does not promise to survive it); a record that survived must be
// served.
SimSeedOptions seed_options_with(const Shard::SteppedOptions& stepped) {
  SimSeedOptions o;
  o.stepped = stepped;
  o.async_power_loss = true;
  return o;
}

TEST(ScheduleCrashSim, DelayedMessagesAreDeliveredExactlyOnceAcrossCrashes) {
  SimTotals totals;
  const uint64_t seeds = env_u64("URINGMQ_SCHEDULE_SIM_SEEDS", 500);
  run_seeds(
      "URINGMQ_SCHEDULE_SIM_SEEDS", 500, " ctest -R schedule_crash_sim_test",
      [](uint64_t seed, SimTotals& t, std::string* problem) {
        run_seed(seed, seed_options_with({}), t, problem);
      },
      totals);
  print_summary("exactly-once", totals);
  expect_exactly_once(totals);
  if (!std::getenv("URINGMQ_SEED") && seeds >= 100) {
    EXPECT_GT(totals.async_power_crashes, 0u);
  }
}

// Each canary breaks one half of exactly-once; the simulation must see duplicates within a few
// seeds, or it could not have seen them in the real code either.
void expect_canary_caught(const char* mode, const Shard::SteppedOptions& stepped,
                          uint64_t SimTotals::*caught = &SimTotals::duplicated,
                          uint64_t seeds = 50) {
  testing::expect_canary_caught(
      mode,
      [&](uint64_t seed, SimTotals& t, std::string* problem) {
        run_seed(seed, seed_options_with(stepped), t, problem);
      },
      [](const char* m, const SimTotals& t) { print_summary(m, t); }, caught, seeds);
}

TEST(ScheduleCrashSim, CanaryIgnoringMarkersIsCaughtDuplicating) {
  expect_canary_caught("canary-ignore-markers", {.unsafe_ignore_delivery_markers = true});
}

TEST(ScheduleCrashSim, CanaryCheckpointPastDeliveriesIsCaughtDuplicating) {
  expect_canary_caught("canary-checkpoint-past-deliveries",
                       {.unsafe_checkpoint_past_deliveries = true});
}

// async_flush acknowledges a delivery when written; committing its progress then lets the offsets
// table persist ahead of the copy, and a power loss loses the message.
TEST(ScheduleCrashSim, CanaryProgressBeforeDurableIsCaughtLosing) {
  expect_canary_caught("canary-progress-before-durable", {.unsafe_progress_before_durable = true},
                       &SimTotals::lost, 500);
}

}  // namespace
}  // namespace uringmq
