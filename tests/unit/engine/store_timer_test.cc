// Goal: timed messages (RocketMQ 5's TIMER_DELAY_SEC / TIMER_DELAY_MS / TIMER_DELIVER_MS and
// __STARTDELIVERTIME) on a real Store with a manual clock: the precedence between the
// properties and against a DELAY level, a time in the past delivered at once, the
// timerMaxDelaySec limit, never early and on time to the clock step, the near window in memory
// staying small with many far timers, long delays rolled forward past CommitLog retention,
// deliveries exactly once across a restart, cancel by key (before due, after a restart, and
// not for a timer put after the cancel), and delivery ahead (copies taken delivery_lead_ms early
// stay hidden until their time, across a restart too).
// Method: ManualClock advanced in steps; after each step every queue is pulled until everything
// due by then has arrived (bounded real wait); anything seen before its deliver time fails.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "engine/delivery/timer_message.h"
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

constexpr std::string_view kTopic = "TimerTopic";
constexpr int32_t kQueues = 2;
constexpr int64_t kStart = 1'700'000'000'000;

StoreOptions timer_options(const std::string& dir, io::Clock* clock) {
  StoreOptions o = testing::clocked_store_options(dir, 1, clock);
  o.timer_bucket_ms = 1000;
  o.timer_slot_count = 16;  // horizon 14 s: anything further is rolled
  return o;
}

struct Seen {
  int64_t at_ms = 0;  // manual clock when a pull returned it
  std::string properties;
};

class TimerFixture {
 public:
  TimerFixture(Store& store, io::ManualClock& clock) : clock_(clock) {
    session_ = std::move(*store.open_session());
  }
  // Sends message `seq` with extra properties (name, value) to queue seq % kQueues; java_style
  // ends the property text with \x02, as Java clients write it.
  Completion send(uint64_t seq, const std::vector<std::pair<std::string, std::string>>& props,
                  bool java_style = false) {
    testing::TestMessage m = testing::make_message(1, seq, 64);
    for (const auto& [name, value] : props) engine::append_property(m.properties, name, value);
    if (java_style) m.properties.push_back('\x02');
    keep_.push_back(std::move(m));
    Message msg;
    msg.topic = kTopic;
    msg.queue_id = static_cast<int32_t>(seq % kQueues);
    msg.body = keep_.back().body;
    msg.properties = keep_.back().properties;
    return session_->send(msg);
  }
  void pull_all() {
    for (int32_t q = 0; q < kQueues; q++) {
      testing::pull_to_end(*session_, kTopic, q, &next_[q], [&](const engine::MessageView& v) {
        auto s = engine::find_property(v.user_properties, "S");
        EXPECT_TRUE(s.has_value());
        EXPECT_EQ(v.topic, kTopic);
        const uint64_t seq = s ? std::stoull(std::string(*s)) : UINT64_MAX;
        EXPECT_EQ(seen_.count(seq), 0u) << "message " << seq << " delivered twice";
        seen_[seq] = Seen{clock_.now_ms(), std::string(v.user_properties)};
      });
    }
  }
  // Pulls until every message in `expected` is seen (bounded real wait).
  void pull_until(const std::set<uint64_t>& expected) {
    for (int i = 0; i < 5000; i++) {
      pull_all();
      bool all = true;
      for (uint64_t s : expected) all = all && seen_.count(s) > 0;
      if (all) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const std::map<uint64_t, Seen>& seen() const { return seen_; }
  // The property text of every record in `topic`'s queues 0 .. queues - 1, by its S.
  std::map<uint64_t, std::string> stored(std::string_view topic, int32_t queues) {
    std::map<uint64_t, std::string> out;
    for (int32_t q = 0; q < queues; q++) {
      int64_t next = 0;
      testing::pull_to_end(*session_, topic, q, &next, [&](const engine::MessageView& v) {
        if (auto s = engine::find_property(v.user_properties, "S")) {
          out[std::stoull(std::string(*s))] = std::string(v.user_properties);
        }
      });
    }
    return out;
  }
  void close() { session_.reset(); }

 private:
  io::ManualClock& clock_;
  std::unique_ptr<Session> session_;
  std::vector<testing::TestMessage> keep_;
  std::map<uint64_t, Seen> seen_;
  int64_t next_[kQueues] = {0, 0};
};

// Advances the clock to `to` in steps of `step` ms; after each step, everything due by then
// (deliver <= now) must arrive and nothing else may.
void run_clock(io::ManualClock& clock, TimerFixture& f, const std::map<uint64_t, int64_t>& due,
               int64_t to, int64_t step) {
  while (clock.now_ms() < to) {
    clock.advance_ms(std::min(step, to - clock.now_ms()));
    std::set<uint64_t> expected;
    for (const auto& [seq, at] : due) {
      if (at <= clock.now_ms()) expected.insert(seq);
    }
    f.pull_until(expected);
    for (const auto& [seq, seen] : f.seen()) {
      auto it = due.find(seq);
      if (it == due.end()) continue;
      EXPECT_GE(seen.at_ms, it->second) << "message " << seq << " delivered early";
      EXPECT_LT(seen.at_ms - it->second, step + 1) << "message " << seq << " late";
    }
    for (uint64_t seq : expected) EXPECT_TRUE(f.seen().count(seq)) << "message " << seq;
  }
}

std::string str(int64_t v) {
  return std::to_string(v);
}

TEST(StoreTimerTest, PrecedencePastTimesLimitAndNeverEarly) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  auto store = Store::open(timer_options(dir.path() + "/store", &clock));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  const int64_t t0 = clock.now_ms();
  std::map<uint64_t, int64_t> due;
  // TIMER_DELAY_SEC wins over TIMER_DELAY_MS and TIMER_DELIVER_MS.
  ASSERT_EQ(f.send(0, {{"TIMER_DELAY_SEC", "10"},
                       {"TIMER_DELAY_MS", "2000"},
                       {"TIMER_DELIVER_MS", str(t0 + 5000)}})
                .code,
            io::Code::ok);
  due[0] = t0 + 10'000;
  // TIMER_DELAY_MS wins over TIMER_DELIVER_MS.
  ASSERT_EQ(f.send(1, {{"TIMER_DELAY_MS", "2500"}, {"TIMER_DELIVER_MS", str(t0 + 5000)}}).code,
            io::Code::ok);
  due[1] = t0 + 2500;
  // TIMER_DELIVER_MS wins over its alias __STARTDELIVERTIME.
  ASSERT_EQ(
      f.send(2, {{"TIMER_DELIVER_MS", str(t0 + 5001)}, {"__STARTDELIVERTIME", str(t0 + 7000)}})
          .code,
      io::Code::ok);
  due[2] = t0 + 5001;
  ASSERT_EQ(f.send(3, {{"__STARTDELIVERTIME", str(t0 + 7003)}}).code, io::Code::ok);
  due[3] = t0 + 7003;
  // A DELAY level wins (level 2 = 5 s) and the TIMER_* properties are removed.
  ASSERT_EQ(f.send(4, {{"DELAY", "2"}, {"TIMER_DELAY_SEC", "100"}}).code, io::Code::ok);
  due[4] = t0 + 5000;
  // Beyond the wheel's horizon (14 s): rolled forward, still on time.
  ASSERT_EQ(f.send(5, {{"TIMER_DELAY_MS", "41234"}}).code, io::Code::ok);
  due[5] = t0 + 41'234;
  // Exactly timerMaxDelaySec ahead is accepted; one ms more is not; malformed values neither.
  const int64_t max_ms = (*store)->options().timer_max_delay_sec * 1000;
  EXPECT_EQ(f.send(6, {{"TIMER_DELIVER_MS", str(t0 + max_ms)}}).code, io::Code::ok);
  EXPECT_EQ(f.send(7, {{"TIMER_DELIVER_MS", str(t0 + max_ms + 1)}}).code,
            io::Code::invalid_argument);
  EXPECT_EQ(f.send(8, {{"TIMER_DELAY_SEC", str(max_ms / 1000 + 1)}}).code,
            io::Code::invalid_argument);
  EXPECT_EQ(f.send(9, {{"TIMER_DELAY_MS", "12x"}}).code, io::Code::invalid_argument);
  // A time in the past (or now) is a plain message: visible at once, clock unchanged.
  ASSERT_EQ(f.send(10, {{"TIMER_DELIVER_MS", str(t0 - 60'000)}}).code, io::Code::ok);
  ASSERT_EQ(f.send(11, {{"TIMER_DELAY_SEC", "0"}}).code, io::Code::ok);
  f.pull_until({10, 11});
  EXPECT_EQ(f.seen().size(), 2u);
  due[10] = t0;
  due[11] = t0;
  // The property text as a Java client writes it (a \x02 after every entry) is kept as it is,
  // with no empty entry; names the timer writes itself, sent by a client, are replaced.
  ASSERT_EQ(f.send(12, {{"TIMER_DELAY_MS", "3000"}, {"KEYS", "k12"}}, true).code, io::Code::ok);
  due[12] = t0 + 3000;
  ASSERT_EQ(f.send(13, {{"REAL_TOPIC", "Elsewhere"},
                        {"REAL_QID", "7"},
                        {"__UMQ_TPUT", "1"},
                        {"TIMER_DELAY_MS", "3500"}})
                .code,
            io::Code::ok);
  due[13] = t0 + 3500;
  run_clock(clock, f, due, t0 + 45'000, 250);
  EXPECT_EQ(f.seen().size(), due.size());  // 6 is 30 days away, 7..9 were rejected
  EXPECT_EQ(f.seen().count(6), 0u);
  EXPECT_EQ(engine::find_property(f.seen().at(12).properties, "KEYS"), "k12");
  EXPECT_EQ(f.seen().at(13).properties.find("Elsewhere"), std::string::npos);
  // The timer records themselves (wheel slots, still in the timer topic): the client's text kept
  // without an empty entry, no put time (the store timestamp is), the client's REAL_* dropped.
  const std::map<uint64_t, std::string> records =
      f.stored(engine::kTimerTopic, static_cast<int32_t>((*store)->options().timer_slot_count));
  ASSERT_EQ(records.count(12), 1u);
  ASSERT_EQ(records.count(13), 1u);
  EXPECT_EQ(records.at(12).find("\x02\x02"), std::string::npos) << records.at(12);
  for (uint64_t seq : {12, 13}) {
    EXPECT_FALSE(engine::find_property(records.at(seq), engine::kPropertyTimerPutMs)) << seq;
    EXPECT_EQ(engine::find_property(records.at(seq), "REAL_TOPIC"), kTopic) << seq;
  }
  for (uint64_t seq : {0, 1, 2, 3, 5, 12, 13}) {
    const std::string& p = f.seen().at(seq).properties;
    EXPECT_FALSE(engine::find_property(p, "TIMER_DELAY_SEC")) << seq;
    EXPECT_FALSE(engine::find_property(p, "TIMER_DELAY_MS")) << seq;
    EXPECT_FALSE(engine::find_property(p, "TIMER_DELIVER_MS")) << seq;
    EXPECT_EQ(engine::find_property(p, "TIMER_OUT_MS"), str(due[seq])) << seq;
    EXPECT_EQ(engine::find_property(p, "REAL_TOPIC"), kTopic) << seq;
  }
  EXPECT_FALSE(engine::find_property(f.seen().at(4).properties, "TIMER_DELAY_SEC"));
  TimerStats stats = (*store)->timer_stats();
  EXPECT_EQ(stats.accepted, 8u);  // 0, 1, 2, 3, 5, 6, 12, 13
  EXPECT_EQ(stats.delivered, 7u);
  EXPECT_GE(stats.rolled, 1u);
  f.close();
}

TEST(StoreTimerTest, FarTimersStayOnDiskTheNearWindowIsSmall) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  StoreOptions o = timer_options(dir.path() + "/store", &clock);
  o.timer_bucket_ms = 60'000;
  o.timer_slot_count = 64;  // horizon 62 min
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  const int64_t t0 = clock.now_ms();
  std::mt19937_64 rng(8);
  std::map<uint64_t, int64_t> due;
  constexpr uint64_t kFar = 20'000;
  for (uint64_t i = 0; i < kFar; i++) {  // 10 minutes to 30 days ahead
    int64_t at = t0 + 600'000 + static_cast<int64_t>(rng() % (30LL * 86'400'000 - 600'000));
    ASSERT_EQ(f.send(i, {{"TIMER_DELIVER_MS", str(at)}}).code, io::Code::ok);
  }
  for (uint64_t i = kFar; i < kFar + 50; i++) {  // and 50 within the next 90 s
    int64_t at = t0 + 1 + static_cast<int64_t>(rng() % 90'000);
    ASSERT_EQ(f.send(i, {{"TIMER_DELIVER_MS", str(at)}}).code, io::Code::ok);
    due[i] = at;
  }
  f.pull_all();
  TimerStats stats = (*store)->timer_stats();
  EXPECT_EQ(stats.accepted, kFar + 50);
  // The near window covers this bucket and the next (2 min): the 50 near ones, and of the far
  // ones none (they are 10 minutes away at least).
  EXPECT_LE(stats.in_memory, 50u);
  run_clock(clock, f, due, t0 + 120'000, 500);
  EXPECT_EQ(f.seen().size(), 50u);
  stats = (*store)->timer_stats();
  EXPECT_EQ(stats.delivered, 50u);
  EXPECT_LE(stats.in_memory, 20u);  // about 1.5 far ones per 2 minutes
  f.close();
}

// A wheel of 16 one-minute slots (horizon 14 min) over 256 KiB segments, retention checked every
// second, and filler messages of 4 KiB (4 a minute: a new segment every 16 minutes).
StoreOptions retention_options(const std::string& dir, io::Clock* clock) {
  StoreOptions o = timer_options(dir, clock);
  o.timer_bucket_ms = 60'000;
  o.timer_slot_count = 16;
  o.clean_interval_ms = 1000;
  o.log.segment_size_bytes = 256u << 10;
  return o;
}

Message filler_message() {
  static const testing::TestMessage big = testing::make_message(2, 0, 4 << 10);
  Message m;
  m.topic = "Filler";
  m.body = big.body;
  m.properties = big.properties;
  return m;
}

TEST(StoreTimerTest, LongDelaysRollForwardPastRetention) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  StoreOptions o = retention_options(dir.path() + "/store", &clock);
  o.file_reserved_time_hours = 1;
  o.disk_max_used_space_ratio = 0;  // expired segments go at any hour
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  auto filler = std::move(*(*store)->open_session());
  const int64_t t0 = clock.now_ms();
  std::map<uint64_t, int64_t> due;
  for (uint64_t i = 0; i < 4; i++) {  // 2.5 to 4 hours ahead
    due[i] = t0 + 9'000'000 + static_cast<int64_t>(i) * 1'800'000 + 7;
    ASSERT_EQ(f.send(i, {{"TIMER_DELIVER_MS", str(due[i])}}).code, io::Code::ok);
  }
  // Plain appends continue (4 x 4 KiB each step: a new 256 KiB segment every 16 steps), so old
  // segments expire and are deleted while the timers wait.
  const Message m = filler_message();
  int64_t filler_min = 0;
  while (clock.now_ms() < t0 + 4 * 3'600'000 + 60'000) {
    clock.advance_ms(60'000);
    for (int i = 0; i < 4; i++) ASSERT_EQ(filler->send(m).code, io::Code::ok);
    std::set<uint64_t> expected;
    for (const auto& [seq, at] : due) {
      if (at <= clock.now_ms()) expected.insert(seq);
    }
    f.pull_until(expected);
    for (uint64_t seq : expected) ASSERT_TRUE(f.seen().count(seq)) << seq;
    for (const auto& [seq, seen] : f.seen()) EXPECT_GE(seen.at_ms, due[seq]) << seq;
  }
  ASSERT_TRUE(filler->query_queue_async("Filler", 0, 9).is_ok());
  filler_min = filler->wait_for(9).min_offset.value;
  EXPECT_GT(filler_min, 0) << "retention never deleted a segment: the test proves nothing";
  EXPECT_EQ(f.seen().size(), 4u);
  TimerStats stats = (*store)->timer_stats();
  EXPECT_EQ(stats.delivered, 4u);
  EXPECT_GE(stats.rolled, 4u * 8);  // each rolled about every 14 minutes
  filler.reset();
  f.close();
}

// A forced clean (a nearly full disk) deletes unexpired segments, timers' records with them. The
// wheel must not wait for ever on the units it can no longer read: it counts them as deleted and
// goes on delivering the timers put afterwards.
TEST(StoreTimerTest, ForcedCleanTakesTimersButTheWheelGoesOn) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  StoreOptions o = retention_options(dir.path() + "/store", &clock);
  o.disk_force_clean_ratio = 0;         // forced clean on every pass, whatever the disk
  o.clean_file_forcibly_enable = true;  // ... of unconsumed timers too
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  auto filler = std::move(*(*store)->open_session());
  const Message m = filler_message();
  const int64_t t0 = clock.now_ms();
  // Due in 30 minutes: rolled once into the horizon's slot around minute 14, in the first
  // segment, which the forced clean deletes once the second one starts (about minute 16); the
  // sweep reaches that slot again around minute 27.
  for (uint64_t i = 0; i < 4; i++) {
    ASSERT_EQ(f.send(i, {{"TIMER_DELIVER_MS", str(t0 + 1'800'000 + 7)}}).code, io::Code::ok);
  }
  std::map<uint64_t, int64_t> due;
  for (int minute = 1; minute <= 36; minute++) {
    clock.advance_ms(60'000);
    // Fillers until minute 20: the second segment (from about minute 16) then stays the
    // writer's, so the timers put at minute 20 keep their records.
    for (int i = 0; i < 4 && minute <= 20; i++) ASSERT_EQ(filler->send(m).code, io::Code::ok);
    if (minute == 20) {
      // Due after the deleted ones' slot comes round: delivered only if the sweep gets past it.
      for (uint64_t i = 10; i < 12; i++) {
        due[i] = clock.now_ms() + 13 * 60'000 + 11;
        ASSERT_EQ(f.send(i, {{"TIMER_DELIVER_MS", str(due[i])}}).code, io::Code::ok);
      }
    }
    std::set<uint64_t> expected;
    for (const auto& [seq, at] : due) {
      if (at <= clock.now_ms()) expected.insert(seq);
    }
    f.pull_until(expected);
  }
  for (const auto& [seq, at] : due) {
    ASSERT_TRUE(f.seen().count(seq)) << "timer " << seq << " put after the clean never came";
    EXPECT_GE(f.seen().at(seq).at_ms, at);
  }
  TimerStats stats = (*store)->timer_stats();
  uint64_t old_delivered = 0;
  for (uint64_t i = 0; i < 4; i++) old_delivered += f.seen().count(i);
  EXPECT_GT(stats.deleted, 0u) << "the clean took no timer: the test proves nothing";
  EXPECT_EQ(stats.deleted + old_delivered, 4u);
  filler.reset();
  f.close();
}

// After a clock jump (or a stall) the sweep lags behind the clock and reads the slots of several
// buckets at once. A far timer it rolls must go to a slot outside them: one inside was examined
// again at once and rolled again, a roll per loop iteration until the sweep caught up.
TEST(StoreTimerTest, ALaggingSweepRollsAFarTimerOnce) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  StoreOptions o = retention_options(dir.path() + "/store", &clock);  // 16 one-minute slots
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  const int64_t t0 = clock.now_ms();
  ASSERT_EQ(f.send(0, {{"TIMER_DELIVER_MS", str(t0 + 7'200'000)}}).code, io::Code::ok);
  // Minute by minute up to just before the horizon's slot comes round...
  for (int minute = 1; minute <= 12; minute++) {
    clock.advance_ms(60'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const uint64_t rolled_before = (*store)->timer_stats().rolled;
  // Put in a fresh store, maybe before the shard's first sweep: placed at the horizon, its slot
  // not read until its bucket comes round.
  EXPECT_EQ(rolled_before, 0u) << "the timer was rolled before its slot came round";
  // ...then four minutes at once: the sweep now reads five buckets' slots, the timer's among them.
  clock.advance_ms(4 * 60'000);
  // Wait (real time, up to 20 s: a sanitizer build on a loaded machine is slow) for the roll, then
  // 500 ms more: many loop iterations, in which a roll into an examined slot would repeat.
  for (int i = 0; i < 2000 && (*store)->timer_stats().rolled == rolled_before; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const TimerStats after = (*store)->timer_stats();
  const uint64_t rolled = after.rolled - rolled_before;
  EXPECT_GE(rolled, 1u) << "the timer was not rolled: the test proves nothing (rolled before "
                        << rolled_before << ", accepted " << after.accepted << ", deleted "
                        << after.deleted << ", parked " << after.parked << ")";
  EXPECT_LE(rolled, 2u) << "the timer was rolled again and again";
  f.close();
}

TEST(StoreTimerTest, ExactlyOnceAcrossRestart) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  const int64_t t0 = clock.now_ms();
  std::map<uint64_t, int64_t> due;
  std::map<uint64_t, Seen> seen;
  {
    auto store = Store::open(timer_options(dir.path() + "/store", &clock));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    TimerFixture f(**store, clock);
    for (uint64_t i = 0; i < 300; i++) {
      due[i] = t0 + 1 + static_cast<int64_t>(i) * 97;  // up to 29 s: some rolled
      ASSERT_EQ(f.send(i, {{"TIMER_DELIVER_MS", str(due[i])}}).code, io::Code::ok);
    }
    run_clock(clock, f, due, t0 + 12'000, 1000);
    seen = f.seen();
    f.close();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  EXPECT_GT(seen.size(), 100u);
  EXPECT_LT(seen.size(), 300u);
  auto store = Store::open(timer_options(dir.path() + "/store", &clock));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  std::map<uint64_t, int64_t> rest;  // re-read ones are checked for duplicates only
  for (const auto& [seq, at] : due) {
    if (!seen.count(seq)) rest[seq] = at;
  }
  run_clock(clock, f, rest, t0 + 31'000, 1000);
  // The second run sees everything again from offset 0: each message exactly once overall.
  EXPECT_EQ(f.seen().size(), 300u);
  f.close();
}

TEST(StoreTimerTest, ADeliveryLeadOutside0To1000MsIsRefusedAtOpen) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  for (int64_t lead : {int64_t{-1}, int64_t{1001}}) {
    StoreOptions o = timer_options(dir.path() + "/store", &clock);
    o.delivery_lead_ms = lead;
    auto store = Store::open(o);
    ASSERT_FALSE(store.is_ok());
    EXPECT_EQ(store.status().code(), io::Code::invalid_argument);
    EXPECT_NE(store.status().to_string().find("delivery_lead_ms"), std::string::npos);
  }
  for (int64_t lead_max : {int64_t{-1}, int64_t{1001}}) {
    StoreOptions o = timer_options(dir.path() + "/store", &clock);
    o.delivery_lead_max_ms = lead_max;
    auto store = Store::open(o);
    ASSERT_FALSE(store.is_ok());
    EXPECT_NE(store.status().to_string().find("delivery_lead_max_ms"), std::string::npos);
  }
}

// Delivery ahead (StoreOptions::delivery_lead_ms): a timed and a delayed copy taken 40 ms
// before their time are durable but not visible; a plain message sent meanwhile to their queue
// waits behind them; a clean restart holds them again (recovery's scan); a long poll waiting on
// the queue is answered when the clock reaches their time, with both copies stamped with it.
TEST(StoreTimerTest, CopiesTakenAheadStayHiddenUntilTheirTimeAcrossARestart) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  const int64_t t0 = clock.now_ms();
  StoreOptions o = timer_options(dir.path() + "/store", &clock);
  o.delivery_lead_ms = 50;
  std::vector<std::byte> buffer(64 << 10);
  auto pull = [&](Session& s, int64_t wait_ms, uint64_t tag) {
    PullRequest p;
    p.topic = kTopic;
    p.queue_id = 0;
    p.max_messages = 16;
    p.buffer = buffer;
    p.wait_ms = wait_ms;
    EXPECT_TRUE(s.pull_async(p, tag).is_ok());
  };
  auto hidden = [&](Session& s) {
    pull(s, 0, 1);
    EXPECT_EQ(s.wait_for(1).pull_status, PullStatus::no_new_message);
    EXPECT_TRUE(s.query_queue_async(kTopic, 0, 2).is_ok());
    EXPECT_EQ(s.wait_for(2).max_offset.value, 0);
    EXPECT_TRUE(s.search_offset_async(kTopic, 0, t0 - 1000, 3).is_ok());
    EXPECT_EQ(s.wait_for(3).queue_offset.value, 0);
  };
  {
    auto store = Store::open(o);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    TimerFixture f(**store, clock);
    ASSERT_EQ(f.send(0, {{"TIMER_DELAY_MS", "1000"}}).code, io::Code::ok);  // queue 0
    ASSERT_EQ(f.send(2, {{"DELAY", "1"}}).code, io::Code::ok);              // level 1: 1 s
    clock.advance_ms(960);
    // Both are taken (appended and durable) within the lead, yet nothing shows.
    auto session = (*store)->open_session();
    ASSERT_TRUE(session.is_ok());
    for (int i = 0; i < 2500; i++) {
      hidden(**session);
      const bool timer_taken = (*store)->timer_stats().delivered == 1;
      if (timer_taken && (*store)->delay_level_stats()[0].delivered == 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ((*store)->timer_stats().delivered, 1u);
    ASSERT_EQ((*store)->delay_level_stats()[0].delivered, 1u);
    Completion plain = f.send(4, {});
    ASSERT_EQ(plain.code, io::Code::ok);
    EXPECT_EQ(plain.queue_offset.value, 2);  // behind the two held copies
    hidden(**session);
    session->reset();
    f.close();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto session = (*store)->open_session();
  ASSERT_TRUE(session.is_ok());
  hidden(**session);
  pull(**session, 60'000, 9);  // a long poll, answered when the copies show
  clock.advance_ms(39);        // 1 ms before their time
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  hidden(**session);
  std::array<Completion, 4> early;
  EXPECT_EQ((*session)->take_completions(early, false), 0u) << "the long poll was answered early";
  clock.advance_ms(1);
  Completion c = (*session)->wait_for(9);
  ASSERT_EQ(c.pull_status, PullStatus::found);
  pull(**session, 0, 10);  // everything, from offset 0
  c = (*session)->wait_for(10);
  ASSERT_EQ(c.message_count, 3u);
  size_t at = 0;
  std::vector<std::string> order;
  for (uint32_t i = 0; i < c.message_count; i++) {
    auto r = engine::decode(std::span<const std::byte>(buffer).subspan(at), {});
    ASSERT_EQ(r.outcome, engine::DecodeOutcome::ok);
    order.emplace_back(*engine::find_property(r.view.user_properties, "S"));
    if (i < 2) {
      EXPECT_EQ(r.view.store_timestamp_ms, t0 + 1000);  // the copies: their time
    }
    at += r.size;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"0", "2", "4"}));
}

TEST(StoreTimerTest, CancelByKeyBeforeDueAndAcrossRestart) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  const int64_t t0 = clock.now_ms();
  std::map<uint64_t, int64_t> due;
  {
    auto store = Store::open(timer_options(dir.path() + "/store", &clock));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    TimerFixture f(**store, clock);
    ASSERT_EQ(f.send(0, {{"KEYS", "order-1 a"}, {"TIMER_DELAY_MS", "5000"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(1, {{"KEYS", "order-2"}, {"TIMER_DELAY_MS", "5000"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(2, {{"KEYS", "order-3"}, {"TIMER_DELAY_MS", "20000"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(3, {{"KEYS", "order-4"}, {"TIMER_DELAY_MS", "40000"}}).code, io::Code::ok);
    due[1] = t0 + 5000;
    clock.advance_ms(1000);
    ASSERT_EQ(f.send(100, {{"__UMQ_CANCEL_KEY", "order-1"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(101, {{"__UMQ_CANCEL_KEY", "order-3"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(102, {{"__UMQ_CANCEL_KEY", "order-4"}}).code, io::Code::ok);
    clock.advance_ms(1);
    // Put after its cancel: not cancelled.
    ASSERT_EQ(f.send(4, {{"KEYS", "order-1"}, {"TIMER_DELAY_MS", "3000"}}).code, io::Code::ok);
    due[4] = clock.now_ms() + 3000;
    run_clock(clock, f, due, t0 + 10'000, 500);
    EXPECT_EQ(f.seen().size(), 2u);
    EXPECT_EQ(f.seen().count(0), 0u);
    EXPECT_EQ(f.seen().count(100), 0u);  // a cancel is never delivered itself
    EXPECT_EQ((*store)->timer_stats().cancelled, 1u);
    f.close();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  auto store = Store::open(timer_options(dir.path() + "/store", &clock));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  std::map<uint64_t, int64_t> none;
  run_clock(clock, f, none, t0 + 50'000, 1000);
  // The restarted store pulls from offset 0: the two delivered before, nothing more.
  EXPECT_EQ(f.seen().size(), 2u);
  EXPECT_EQ(f.seen().count(2), 0u);
  EXPECT_EQ(f.seen().count(3), 0u);
  EXPECT_EQ((*store)->timer_stats().cancelled, 2u);
  f.close();
}

// RocketMQ 5's recall: TIMER_DEL_UNIQKEY ("<topic>+<uniqKey>", or the bare unique key) cancels
// the pending timer with that UNIQ_KEY, and only it; the recall holds across a restart.
TEST(StoreTimerTest, TimerDelUniqKeyRecallsByUniqueKey) {
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  const int64_t t0 = clock.now_ms();
  std::map<uint64_t, int64_t> due{{1, t0 + 5000}};
  {
    auto store = Store::open(timer_options(dir.path() + "/store", &clock));
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    TimerFixture f(**store, clock);
    ASSERT_EQ(f.send(0, {{"UNIQ_KEY", "U0"}, {"TIMER_DELAY_MS", "5000"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(1, {{"UNIQ_KEY", "U1"}, {"TIMER_DELAY_MS", "5000"}}).code, io::Code::ok);
    ASSERT_EQ(f.send(2, {{"UNIQ_KEY", "U2"}, {"TIMER_DELAY_MS", "20000"}}).code, io::Code::ok);
    clock.advance_ms(1000);
    // The recall carries a deliver time, as RocketMQ 5's does: it is a cancel all the same.
    ASSERT_EQ(f.send(100, {{"TIMER_DEL_UNIQKEY", std::string(kTopic) + "+U0"},
                           {"TIMER_DELAY_MS", "4000"}})
                  .code,
              io::Code::ok);
    ASSERT_EQ(f.send(101, {{"TIMER_DEL_UNIQKEY", "U2"}}).code, io::Code::ok);
    run_clock(clock, f, due, t0 + 10'000, 500);
    EXPECT_EQ(f.seen().count(0), 0u) << "the recalled timer was delivered";
    EXPECT_EQ(f.seen().count(1), 1u) << "a timer that was not recalled was lost";
    EXPECT_EQ(f.seen().count(100), 0u);  // a recall is never delivered itself
    EXPECT_EQ((*store)->timer_stats().cancelled, 1u);
    f.close();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  auto store = Store::open(timer_options(dir.path() + "/store", &clock));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  std::map<uint64_t, int64_t> none;
  run_clock(clock, f, none, t0 + 30'000, 1000);
  EXPECT_EQ(f.seen().count(2), 0u) << "the recall of U2 was lost across the restart";
  EXPECT_EQ(f.seen().size(), 1u);
  EXPECT_EQ((*store)->timer_stats().cancelled, 1u);
  f.close();
}

// A cancel reaches every shard: the timed message it names may sit in any (its topic and queue
// decide), and a producer does not know which.
TEST(StoreTimerTest, CancelReachesTheTimerOnAnotherShard) {
  uint32_t shards = 2;
  while (shard_of_queue(kTopic, 0, shards) == shard_of_queue(kTopic, 1, shards)) shards++;
  testing::TempDir dir;
  io::ManualClock clock(kStart);
  StoreOptions o = timer_options(dir.path() + "/store", &clock);
  o.shard_count = shards;
  auto store = Store::open(o);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  TimerFixture f(**store, clock);
  const int64_t t0 = clock.now_ms();
  // Timers 0 and 2 on queue 0, 1 and 3 on queue 1: two shards.
  for (uint64_t i = 0; i < 4; i++) {
    ASSERT_EQ(f.send(i, {{"KEYS", "k" + std::to_string(i)}, {"TIMER_DELAY_MS", "5000"}}).code,
              io::Code::ok);
  }
  clock.advance_ms(1000);
  // Each cancel is sent to the other queue's shard.
  ASSERT_EQ(f.send(11, {{"__UMQ_CANCEL_KEY", "k0"}}).code, io::Code::ok);  // queue 1
  ASSERT_EQ(f.send(10, {{"__UMQ_CANCEL_KEY", "k1"}}).code, io::Code::ok);  // queue 0
  std::map<uint64_t, int64_t> due{{2, t0 + 5000}, {3, t0 + 5000}};
  run_clock(clock, f, due, t0 + 10'000, 500);
  EXPECT_EQ(f.seen().count(0), 0u);
  EXPECT_EQ(f.seen().count(1), 0u);
  EXPECT_EQ(f.seen().size(), 2u);
  EXPECT_EQ((*store)->timer_stats().cancelled, 2u);
  f.close();
}

}  // namespace
}  // namespace uringmq
