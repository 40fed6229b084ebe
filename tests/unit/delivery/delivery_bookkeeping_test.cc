// Goal: the delivery parts' bookkeeping holds without a shard. DurableAcks hands acknowledgements
// back only once the log is durable past their record, in the order they came, and keeps the
// checkpoint below the first waiting record; TakeHorizon moves one ms per iteration only when no
// source is behind and never lies before now nor beyond now + lead; LevelDelivery rewrites a
// delayed put for its level's schedule queue (clamped, REAL_TOPIC and REAL_QID kept) and, with
// no level queue, asks the loop for nothing.
// Method: drive the classes directly; LevelDelivery runs against a fake DeliveryHost that fails
// the test if the part reaches for the log, the queues or the clock where it must not.
#include <gtest/gtest.h>

#include <cstdlib>

#include <string>
#include <utility>
#include <vector>

#include "engine/delivery/durable_acks.h"
#include "engine/delivery/level_delivery.h"
#include "engine/delivery/take_horizon.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "engine/queues/dispatch.h"

namespace uringmq {
namespace {

using engine::DurableAcks;
using engine::TakeHorizon;

struct Acked {
  uint64_t tag;
  uint64_t log_offset;
  bool operator==(const Acked&) const = default;
};

TEST(DurableAcks, ReleasedInOrderOnceDurable) {
  DurableAcks acks(DurableAcks::Options{});
  std::vector<Acked> got;
  auto collect = [&](uint64_t tag, uint32_t, uint64_t log_offset) {
    got.push_back(Acked{tag, log_offset});
  };
  EXPECT_FALSE(acks.wait(1, 100, 0, /*durable_offset=*/100));  // durable already: no wait
  EXPECT_EQ(acks.low_water(), UINT64_MAX);
  EXPECT_TRUE(acks.wait(2, 100, 100, 100));
  // Durable already, but behind one waiting: waits too (progress stays in log order).
  EXPECT_TRUE(acks.wait(3, 100, 200, 400));
  EXPECT_EQ(acks.low_water(), 100u);
  acks.release(199, collect);
  EXPECT_TRUE(got.empty());
  acks.release(250, collect);
  EXPECT_EQ(got, (std::vector<Acked>{{2, 100}}));
  EXPECT_EQ(acks.low_water(), 200u);
  acks.release(300, collect);
  EXPECT_EQ(got, (std::vector<Acked>{{2, 100}, {3, 200}}));
  EXPECT_EQ(acks.low_water(), UINT64_MAX);
  EXPECT_TRUE(acks.empty());
}

TEST(DurableAcks, CanariesBreakTheContract) {
  DurableAcks eager(DurableAcks::Options{true, false});
  EXPECT_FALSE(eager.wait(1, 100, 100, 0));  // progress before durable
  DurableAcks leaky(DurableAcks::Options{false, true});
  EXPECT_TRUE(leaky.wait(1, 100, 100, 0));
  EXPECT_EQ(leaky.low_water(), UINT64_MAX);  // the checkpoint may pass it
}

TEST(TakeHorizon, MovesOneMsAtATimeUnlessBehind) {
  TakeHorizon h(/*lead_ms=*/3);
  h.advance(1000);
  EXPECT_EQ(h.by_ms(), 1000);  // never before now
  h.advance(1000);
  EXPECT_EQ(h.by_ms(), 1001);
  h.mark_behind();
  EXPECT_EQ(h.wake_ms(1005), 1005);  // beyond the horizon while behind: at its own time
  EXPECT_EQ(h.wake_ms(1001), 998);
  h.advance(1000);
  EXPECT_EQ(h.by_ms(), 1001);  // a source was behind: the horizon waits
  h.advance(1000);
  h.advance(1000);
  h.advance(1000);
  EXPECT_EQ(h.by_ms(), 1003);  // never beyond now + lead
  EXPECT_EQ(h.wake_ms(1010), 1007);
  h.advance(990);  // the wall clock went back
  EXPECT_EQ(h.by_ms(), 993);
  EXPECT_EQ(h.wake_ms(INT64_MAX), INT64_MAX);
}

// The lead grows to cover 1.5x the slowest acknowledgement plus 1 ms, within [lead, max], and
// decays by a quarter per second of wall time; a fixed lead ignores acknowledgements.
TEST(TakeHorizon, LeadGrowsWithSlowAcknowledgementsAndDecays) {
  TakeHorizon fixed(/*lead_ms=*/10);
  fixed.note_ack_latency(500'000);
  EXPECT_EQ(fixed.lead_ms(), 10);
  EXPECT_EQ(fixed.max_lead_ms(), 10);

  TakeHorizon h(/*lead_ms=*/10, /*lead_max_ms=*/100);
  EXPECT_EQ(h.max_lead_ms(), 100);
  h.advance(1000);
  h.note_ack_latency(4'000);  // 4 ms: 1.5 x 4 + 1 = 7, below the floor
  EXPECT_EQ(h.lead_ms(), 10);
  h.note_ack_latency(20'000);  // 20 ms: 31
  EXPECT_EQ(h.lead_ms(), 31);
  EXPECT_EQ(h.wake_ms(2000), 1969);
  h.note_ack_latency(10'000);  // faster than the slowest: no change
  EXPECT_EQ(h.lead_ms(), 31);
  for (int64_t now = 1000; now < 1031; now++) h.advance(now);
  EXPECT_EQ(h.by_ms(), 1030 + 1);  // the horizon moves one ms per iteration towards now + lead
  h.note_ack_latency(900'000);     // capped
  EXPECT_EQ(h.lead_ms(), 100);
  h.advance(1999);  // under a second since the decay clock started (1000)
  EXPECT_EQ(h.lead_ms(), 100);
  h.advance(3000);  // 900 -> 675 ms: still capped
  h.advance(4000);  // 506.25
  h.advance(5000);  // 379.7
  h.advance(6000);  // 284.8
  h.advance(7000);  // 213.6
  h.advance(8000);  // 160.2
  h.advance(9000);  // 120.1
  EXPECT_EQ(h.lead_ms(), 100);
  h.advance(10'000);  // 90.1 ms: 136.1 -> capped
  h.advance(11'000);  // 67.6 -> 102.4 -> capped
  h.advance(12'000);  // 50.7 -> 77
  EXPECT_LT(h.lead_ms(), 100);
  EXPECT_GT(h.lead_ms(), 10);
  for (int64_t now = 13'000; now < 40'000; now += 1000) h.advance(now);
  EXPECT_EQ(h.lead_ms(), 10);  // back at the floor
  EXPECT_GE(h.by_ms(), 39'000);
  EXPECT_LE(h.by_ms(), 39'000 + 10);
}

// Any use of the shard but rewrite() and the step's "nothing to do" fails the test.
class NoShard final : public engine::DeliveryHost {
 public:
  engine::CommitLog& log() override { return fail<engine::CommitLog>("log"); }
  engine::CqStore& queues() override { return fail<engine::CqStore>("queues"); }
  engine::ConsumerOffsets& offsets() override { return fail<engine::ConsumerOffsets>("offsets"); }
  engine::RecordPrefetch& prefetch() override { return fail<engine::RecordPrefetch>("prefetch"); }
  int64_t wall_ms() const override {
    ADD_FAILURE() << "wall_ms";
    return 0;
  }
  io::Code append_internal(uint64_t, const engine::MessageInput&, std::optional<int64_t>) override {
    ADD_FAILURE() << "append_internal";
    return io::Code::busy;
  }
  void refuse_corrupt(uint64_t, std::span<const std::byte>, const char*) override {
    ADD_FAILURE() << "refuse_corrupt";
  }
  int32_t parked_queue_id() const override { return 0; }
  int64_t appended_end(engine::QueueIndex) const override { return 0; }

 private:
  template <typename T>
  T& fail(const char* what) {
    ADD_FAILURE() << what;
    std::abort();
  }
};

engine::LevelDelivery::Options level_options() {
  engine::LevelDelivery::Options o;
  o.max_attempts = 3;
  o.arena_bytes = 1 << 16;
  return o;
}

TEST(LevelDelivery, RewritesADelayedPutForItsLevel) {
  NoShard host;
  TakeHorizon horizon(0);
  const sched::DelayLevels levels = sched::DelayLevels::defaults();
  engine::LevelDelivery part(host, horizon, levels, level_options());
  EXPECT_FALSE(part.busy());
  EXPECT_EQ(part.due_wall_ms(), INT64_MAX);

  std::string props;
  engine::append_property(props, engine::kPropertyDelayTimeLevel, "3");
  engine::append_property(props, "KEYS", "k1");
  engine::MessageInput in;
  in.topic = "orders";
  in.queue_id = 5;
  in.properties = props;
  engine::MessageInput out;
  uint32_t level = 0;
  ASSERT_TRUE(part.rewrite(in, &out, &level));
  EXPECT_EQ(level, 3u);
  EXPECT_EQ(out.topic, engine::kScheduleTopic);
  EXPECT_EQ(out.queue_id, 2);
  EXPECT_EQ(engine::find_property(out.properties, engine::kPropertyRealTopic), "orders");
  EXPECT_EQ(engine::find_property(out.properties, engine::kPropertyRealQueueId), "5");
  EXPECT_EQ(engine::find_property(out.properties, "KEYS"), "k1");

  props.clear();
  engine::append_property(props, engine::kPropertyDelayTimeLevel, "999");
  in.properties = props;
  ASSERT_TRUE(part.rewrite(in, &out, &level));
  EXPECT_EQ(level, levels.max_level());  // clamped
  EXPECT_EQ(out.queue_id, static_cast<int32_t>(levels.max_level()) - 1);

  props.clear();
  engine::append_property(props, engine::kPropertyDelayTimeLevel, "soon");
  in.properties = props;
  EXPECT_FALSE(part.rewrite(in, &out, &level));  // not a number

  props.clear();
  engine::append_property(props, engine::kPropertyDelayTimeLevel, "0");
  in.properties = props;
  out = engine::MessageInput{};
  ASSERT_TRUE(part.rewrite(in, &out, &level));
  EXPECT_EQ(level, 0u);
  EXPECT_TRUE(out.topic.empty());  // untouched: not delayed
}

TEST(LevelDeliveryDeath, AcknowledgementOfNoDeliveryAborts) {
  EXPECT_DEATH(
      {
        NoShard host;
        TakeHorizon horizon(0);
        engine::LevelDelivery part(host, horizon, sched::DelayLevels::defaults(), level_options());
        part.acked(1, 100, true);  // nothing was issued: progress would pass it
      },
      "progress passed");
}

}  // namespace
}  // namespace uringmq
