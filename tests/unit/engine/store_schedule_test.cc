// Goal: delay levels as RocketMQ's seed scenario describes them, on a real Store with a manual
// clock. A topic with 4 queues gets messages 0..99, message i on queue i % 4 with delay level
// (i % 4) * 4 (levels 0, 4, 8, 12: 0 s, 30 s, 4 min, 8 min). Every message reaches its own
// queue, in order, never before its deliver time, with DELAY removed and its tag intact; queue 1
// trails queue 0 by 30 s. Also: a level above the maximum behaves as the maximum; a deliver time
// far in the future after the clock stepped back is delivered at once; the operator figures
// count pending messages; deliveries survive a restart exactly once.
// Method: ManualClock advanced in steps; consumers pull every queue after each step.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/pull_to_end.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

constexpr std::string_view kTopic = "TopicTest";

StoreOptions schedule_options(const std::string& dir, io::Clock* clock) {
  return testing::clocked_store_options(dir, 2, clock);
}

struct Delivered {
  uint64_t seq = 0;
  int64_t seen_at_ms = 0;  // manual clock when the pull returned it
  bool has_delay = false;
  std::string tags;
};

class ScheduleFixture {
 public:
  ScheduleFixture(Store& store, io::ManualClock& clock) : store_(store), clock_(clock) {
    session_ = std::move(*store.open_session());
  }
  Completion send(int32_t queue, uint64_t seq, int32_t level) {
    testing::TestMessage m = testing::make_message(1, seq, 64);
    engine::append_property(m.properties, "TAGS", "T" + std::to_string(queue));
    if (level != 0) engine::append_property(m.properties, "DELAY", std::to_string(level));
    keep_.push_back(std::move(m));
    Message msg;
    msg.topic = kTopic;
    msg.queue_id = queue;
    msg.body = keep_.back().body;
    msg.properties = keep_.back().properties;
    return session_->send(msg);
  }
  // Pulls everything new from every queue, noting the manual time it was seen at.
  void pull_all(std::map<int32_t, std::vector<Delivered>>& seen) {
    for (int32_t q = 0; q < 4; q++) {
      testing::pull_to_end(*session_, kTopic, q, &next_[q], [&](const engine::MessageView& v) {
        Delivered d;
        uint32_t producer = 0;
        EXPECT_TRUE(testing::parse_message(v, &producer, &d.seq));
        d.seen_at_ms = clock_.now_ms();
        d.has_delay = engine::find_property(v.user_properties, "DELAY").has_value();
        d.tags = std::string(engine::find_property(v.user_properties, "TAGS").value_or(""));
        seen[q].push_back(d);
      });
    }
  }
  Session& session() { return *session_; }
  void close() { session_.reset(); }

 private:
  Store& store_;
  io::ManualClock& clock_;
  std::unique_ptr<Session> session_;
  std::vector<testing::TestMessage> keep_;
  int64_t next_[4] = {0, 0, 0, 0};
};

// Advances the manual clock in steps, giving the shards real time to notice each step.
void advance(io::ManualClock& clock, int64_t ms) {
  clock.advance_ms(ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

TEST(StoreScheduleTest, SeedScenarioEveryMessageInItsQueueInOrderNeverEarly) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  auto store = Store::open(schedule_options(dir.path() + "/store", &clock));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ScheduleFixture f(**store, clock);
  const int64_t start = clock.now_ms();
  const int64_t delay_ms[4] = {0, 30'000, 240'000, 480'000};
  for (uint64_t i = 0; i < 100; i++) {
    Completion c = f.send(static_cast<int32_t>(i % 4), i, static_cast<int32_t>((i % 4) * 4));
    ASSERT_EQ(c.code, io::Code::ok);
  }
  std::map<int32_t, std::vector<Delivered>> seen;
  auto seen_count = [&] {
    size_t n = 0;
    for (auto& [q, v] : seen) n += v.size();
    return n;
  };
  // 10 minutes in 500 ms steps. Before each step, everything due by now is pulled (waiting 5 s
  // of real time at most): a shard slowed by a loaded machine must not fall steps behind the
  // clock and show as late; one that delivers only at a later step still does.
  for (int64_t t = 0; t <= 600'000; t += 500) {
    size_t due = 0;
    for (int64_t d : delay_ms) due += clock.now_ms() >= start + d ? 25 : 0;
    f.pull_all(seen);
    for (int i = 0; i < 500 && seen_count() < due; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      f.pull_all(seen);
    }
    advance(clock, 500);
  }
  for (int i = 0; i < 200 && seen_count() < 100; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    f.pull_all(seen);
  }
  for (int32_t q = 0; q < 4; q++) {
    ASSERT_EQ(seen[q].size(), 25u) << "queue " << q;
    for (size_t k = 0; k < 25; k++) {
      const Delivered& d = seen[q][k];
      EXPECT_EQ(d.seq, static_cast<uint64_t>(q) + 4 * k) << "queue " << q << " out of order";
      EXPECT_FALSE(d.has_delay) << "DELAY must be removed on delivery";
      EXPECT_EQ(d.tags, "T" + std::to_string(q));
      // Never early: seen no sooner than store time + delay (store time ~ start).
      EXPECT_GE(d.seen_at_ms, start + delay_ms[q]) << "queue " << q << " message " << d.seq;
      // And not much later than one step after it.
      EXPECT_LE(d.seen_at_ms, start + delay_ms[q] + 1500) << "queue " << q << " message " << d.seq;
    }
  }
  // Queue 1 trails queue 0 by 30 s.
  EXPECT_GE(seen[1][0].seen_at_ms - seen[0][0].seen_at_ms, 30'000);
  EXPECT_LE(seen[1][0].seen_at_ms - seen[0][0].seen_at_ms, 31'500);
  std::vector<DelayLevelStats> stats = (*store)->delay_level_stats();
  ASSERT_EQ(stats.size(), 18u);
  EXPECT_EQ(stats[3].delivered + stats[7].delivered + stats[11].delivered, 75u);
  EXPECT_EQ(stats[3].pending + stats[7].pending + stats[11].pending, 0);
  f.close();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreScheduleTest, ClampingAndClockStepBackAndRestartExactlyOnce) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = schedule_options(dir.path() + "/store", &clock);
  options.message_delay_level = "1s 2s 3s";  // maximum level 3
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  {
    ScheduleFixture f(**store, clock);
    // Level 99 behaves as 3 (3 s).
    ASSERT_EQ(f.send(0, 0, 99).code, io::Code::ok);
    std::map<int32_t, std::vector<Delivered>> seen;
    advance(clock, 2'900);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    f.pull_all(seen);
    EXPECT_TRUE(seen[0].empty()) << "a clamped level-3 message came before 3 s";
    advance(clock, 200);
    for (int i = 0; i < 100 && seen[0].empty(); i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      f.pull_all(seen);
    }
    ASSERT_EQ(seen[0].size(), 1u);
    // Clock steps back by an hour: a level-3 message stored then would be due an hour from
    // "now" plus 3 s, beyond now + delay(3): delivered at once (correctDeliverTimestamp).
    ASSERT_EQ(f.send(1, 1, 3).code, io::Code::ok);
    clock.set_wall_ms(clock.now_ms() - 3'600'000);
    ASSERT_EQ(f.send(1, 2, 0).code, io::Code::ok);  // an undelayed one, as a marker
    for (int i = 0; i < 100 && seen[1].size() < 2; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      f.pull_all(seen);
    }
    ASSERT_EQ(seen[1].size(), 2u) << "the far-future deliver time was not corrected";
    // Pending messages for the restart check: 10 at level 2, not yet due.
    for (uint64_t i = 10; i < 20; i++) ASSERT_EQ(f.send(2, i, 2).code, io::Code::ok);
    f.close();
  }
  ASSERT_TRUE((*store)->close().is_ok());
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  ScheduleFixture f(**store, clock);
  std::vector<DelayLevelStats> stats = (*store)->delay_level_stats();
  EXPECT_EQ(stats[1].pending, 10);
  advance(clock, 2'500);
  std::map<int32_t, std::vector<Delivered>> seen;
  for (int i = 0; i < 200 && seen[2].size() < 10; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    f.pull_all(seen);
  }
  ASSERT_EQ(seen[2].size(), 10u);
  // Exactly once across restarts: nothing delivered twice, nothing more to come.
  f.close();
  ASSERT_TRUE((*store)->close().is_ok());
  store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  ScheduleFixture again(**store, clock);
  advance(clock, 10'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::map<int32_t, std::vector<Delivered>> after;
  again.pull_all(after);
  EXPECT_EQ(after[0].size(), 1u);
  EXPECT_EQ(after[1].size(), 2u);
  EXPECT_EQ(after[2].size(), 10u) << "a delayed message was delivered twice or lost";
  again.close();
  ASSERT_TRUE((*store)->close().is_ok());
}

// Pulls one record of (topic, 0) at `offset`, waiting up to ~2 s of real time for it.
std::vector<std::byte> pull_one(Session& s, std::string_view topic, int64_t offset,
                                int32_t queue_id = 0) {
  std::vector<std::byte> buffer(64 << 10);
  for (int i = 0; i < 200; i++) {
    PullRequest p;
    p.topic = topic;
    p.queue_id = queue_id;
    p.queue_offset = QueueOffset{offset};
    p.max_messages = 1;
    p.buffer = buffer;
    EXPECT_TRUE(s.pull_async(p, 5).is_ok());
    Completion c = s.wait_for(5);
    if (c.pull_status == PullStatus::found) {
      buffer.resize(c.size_bytes);
      return buffer;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

TEST(StoreScheduleTest, SendBackGoesToRetryWithGrowingDelayThenToTheDlq) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = schedule_options(dir.path() + "/store", &clock);
  options.message_delay_level = "1s 2s 3s 4s 5s";
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  ScheduleFixture f(**store, clock);
  Completion sent = f.send(0, 7, 0);
  ASSERT_EQ(sent.code, io::Code::ok);
  std::vector<std::byte> record = pull_one(f.session(), kTopic, 0);
  ASSERT_FALSE(record.empty());
  StoreOffset record_offset = sent.offset;
  // max_reconsume_times = 3: three trips through %RETRY%G, the fourth send-back to %DLQ%G.
  for (int32_t times = 0; times < 3; times++) {
    Completion back = f.session().send_back("G", record, record_offset, 0, 3);
    ASSERT_EQ(back.code, io::Code::ok);
    advance(clock, 1000 * (3 + times) - 1);  // level 3 + reconsume times, 1 ms short
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::vector<std::byte> early(64 << 10);
    PullRequest p;
    p.topic = "%RETRY%G";
    p.buffer = early;
    p.queue_offset = QueueOffset{times};
    ASSERT_TRUE(f.session().pull_async(p, 6).is_ok());
    EXPECT_NE(f.session().wait_for(6).pull_status, PullStatus::found) << "retry came early";
    advance(clock, 1);
    record = pull_one(f.session(), "%RETRY%G", times);
    ASSERT_FALSE(record.empty()) << "retry " << times << " never came";
    auto r = engine::decode(record, {});
    ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
    EXPECT_EQ(r.view.reconsume_times, times + 1);
    EXPECT_EQ(engine::find_property(r.view.user_properties, "RETRY_TOPIC").value_or(""), kTopic);
    EXPECT_TRUE(engine::find_property(r.view.user_properties, "ORIGIN_MESSAGE_ID").has_value());
    EXPECT_FALSE(engine::find_property(r.view.user_properties, "DELAY").has_value());
    EXPECT_EQ(engine::find_property(r.view.user_properties, "S").value_or(""), "7");
    testing::TestMessage original = testing::make_message(1, 7, 64);
    EXPECT_TRUE(std::equal(r.view.body.begin(), r.view.body.end(), original.body.begin(),
                           original.body.end()));
    record_offset = StoreOffset{0};  // ORIGIN_MESSAGE_ID is kept from the first trip from now on
  }
  Completion dead = f.session().send_back("G", record, record_offset, 0, 3);
  ASSERT_EQ(dead.code, io::Code::ok);
  std::vector<std::byte> dlq = pull_one(f.session(), "%DLQ%G", 0);
  ASSERT_FALSE(dlq.empty()) << "the message did not reach the DLQ";
  auto r = engine::decode(dlq, {});
  ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
  EXPECT_EQ(r.view.reconsume_times, 4);
  f.close();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreScheduleTest, LevelAboveEighteenBehavesAsEighteen) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  auto store = Store::open(schedule_options(dir.path() + "/store", &clock));  // default table
  ASSERT_TRUE(store.is_ok());
  ScheduleFixture f(**store, clock);
  ASSERT_EQ(f.send(3, 0, 19).code, io::Code::ok);
  ASSERT_EQ(f.send(3, 1, 1000).code, io::Code::ok);
  std::map<int32_t, std::vector<Delivered>> seen;
  advance(clock, 2 * 3'600'000 - 1000);  // level 18 is 2 h
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  f.pull_all(seen);
  EXPECT_TRUE(seen[3].empty()) << "delivered before the 2 h of level 18";
  EXPECT_EQ((*store)->delay_level_stats()[17].pending, 2);
  advance(clock, 1000);
  for (int i = 0; i < 200 && seen[3].size() < 2; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    f.pull_all(seen);
  }
  ASSERT_EQ(seen[3].size(), 2u);
  f.close();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreScheduleTest, ADeliveryThatKeepsFailingIsParkedAndTheLevelMovesOn) {
  testing::TempDir dir;
  io::ManualClock clock(1'700'000'000'000);
  StoreOptions options = schedule_options(dir.path() + "/store", &clock);
  options.message_delay_level = "1s";
  options.log.limits.max_body_bytes = 8u << 10;
  auto store = Store::open(options);
  ASSERT_TRUE(store.is_ok());
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  // Properties sized so that the put fits but the delivered copy (with its delivery marker)
  // exceeds the 32767-byte property limit: every delivery attempt fails.
  std::string properties;
  engine::append_property(properties, "S", "1");
  engine::append_property(properties, "PAD", std::string(32705 - properties.size() - 5, 'p'));
  engine::append_property(properties, "DELAY", "1");
  std::string body = "parked body";
  Message m;
  m.topic = kTopic;
  m.queue_id = 0;
  m.properties = properties;
  m.body = std::as_bytes(std::span(body.data(), body.size()));
  Completion c = (*session)->send(m);
  ASSERT_EQ(c.code, io::Code::ok) << io::code_name(c.code);
  // And a normal delayed message behind it on the same level.
  std::string props2;
  engine::append_property(props2, "S", "2");
  engine::append_property(props2, "DELAY", "1");
  m.properties = props2;
  ASSERT_EQ((*session)->send(m).code, io::Code::ok);
  advance(clock, 1000);
  // The owner of queue (kTopic, 0) parks into the first parked-topic queue it owns.
  const uint32_t owner = (*store)->shard_for(kTopic, 0);
  int32_t parked_queue = 0;
  while ((*store)->shard_for(kParkedScheduleTopic, parked_queue) != owner) parked_queue++;
  std::vector<std::byte> parked = pull_one(**session, kParkedScheduleTopic, 0, parked_queue);
  ASSERT_FALSE(parked.empty()) << "the failing delivery was not parked";
  auto r = engine::decode(parked, {});
  ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
  EXPECT_EQ(engine::find_property(r.view.user_properties, "PARK_REASON").value_or(""),
            "delivery failed");
  EXPECT_EQ(engine::find_property(r.view.user_properties, "REAL_TOPIC").value_or(""), kTopic);
  EXPECT_EQ(engine::find_property(r.view.user_properties, "PARK_LEVEL").value_or(""), "1");
  std::vector<std::byte> next = pull_one(**session, kTopic, 0);
  ASSERT_FALSE(next.empty()) << "the level did not move on after parking";
  auto n = engine::decode(next, {});
  EXPECT_EQ(engine::find_property(n.view.user_properties, "S").value_or(""), "2");
  std::vector<DelayLevelStats> stats = (*store)->delay_level_stats();
  EXPECT_EQ(stats[0].parked, 1u);
  EXPECT_EQ(stats[0].pending, 0);
  session->reset();
  ASSERT_TRUE((*store)->close().is_ok());
}

TEST(StoreScheduleTest, BadDelayTableIsAClearError) {
  testing::TempDir dir;
  StoreOptions options = schedule_options(dir.path() + "/store", nullptr);
  options.message_delay_level = "1s 5q";
  auto store = Store::open(options);
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.status().message().find("messageDelayLevel entry 2"), std::string::npos);
}

}  // namespace
}  // namespace uringmq
