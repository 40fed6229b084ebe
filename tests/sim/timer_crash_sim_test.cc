// Goal: timed messages (TIMER_DELIVER_MS, __STARTDELIVERTIME, TIMER_DELAY_MS, TIMER_DELAY_SEC)
// and their cancels are exactly-once across crashes at random points: after any power
// loss (unsynced pages kept, dropped or torn) or kill -9, and recovery, every timed message whose
// put was acknowledged (or whose record is in the log) is delivered to its REAL_TOPIC/REAL_QID
// exactly once, never before its deliver time, never when a cancel won, nothing from nowhere;
// every acknowledged plain message is present; a clean restart delivers nothing more.
// Method: the real Shard (engine/delivery/timer_delivery.cc: the wheel's slots in
// rmq_sys_wheel_timer, rolls, the __UMQ_DLV "T<slot>:<offset>" marker, progress in
// %TIMER_PROGRESS%, cancels in %TIMER_CANCEL%, the checkpoint held below unpersisted deliveries and
// cancels) in stepped mode over SimDisk with a ManualClock, on the harness the delay-level
// simulation uses (tests/support/stepped_shard_sim.h). Each seed draws a small wheel (4-16 slots of
// 5-100 ms, so timers past the horizon roll and slots wrap within a cycle), sometimes a near window
// of a few entries (loading waits: late, never early), and puts timed messages due in the past,
// now, in the next buckets, within and far beyond the horizon, plain messages, and cancels by KEYS,
// UNIQ_KEY or a key several timers share, while the clock moves in steps and now and then jumps
// by up to two horizons; it crashes at a random step, during an offsets-table persist, or right
// after a delivery with more due.
//
// The cancel rule, from timer_delivery.cc: a cancel is recorded in the offsets table with its time
// (the shard's clock, c) when the shard takes it, before its append is acknowledged; a timer put
// at p (its first record's store time, which a rolled copy carries as __UMQ_TPUT) and due at d is
// skipped when, at delivery or roll, a cancel naming one of its keys has c >= p. Each cancel key
// here is used by one cancel only, and the checker reads c from the cancel's record and p from the
// timer's, so for a timer and a cancel naming it:
//   - cancel record in the log, c < p: no effect (delivered exactly once);
//   - cancel record in the log, p <= c < d - lead (the most the seed's lead can be): the cancel
//     wins, the timer is never delivered (a delivery is decided at or after d - lead > c, when
//     the cancel is already recorded, in that process or, through recovery's re-dispatch of the
//     record, in a later one);
//   - cancel record in the log, c >= d - lead: raced with the delivery: at most once;
//   - cancel acknowledged but absent from the log: a failure (a crash must not lose it), unless
//     an ASYNC_FLUSH power loss may have taken it (async_power_loss seeds): at most once;
//   - cancel not acknowledged and absent: its table entry may have been persisted or not: at
//     most once when p <= the clock at the end of the cycle it was sent in, else no effect.
// A timer stored at once (deliver time not after its put) is a plain record in its topic: cancels
// do not apply to it. The simulation's canaries (recovery ignoring the markers; the checkpoint
// passing unpersisted deliveries) must be caught duplicating. A failing seed prints the line
// that reproduces it; URINGMQ_TIMER_SIM_SEEDS sets the seeds (CI default below), URINGMQ_SEED=n
// replays one. Power-loss cycles run under either flush mode (an acknowledged ASYNC_FLUSH put lost
// with its record is allowed, counted in async_lost; a record that survived must be served). The
// ASYNC_FLUSH runs found that a cancelled timer's skip persisted the slot's progress before the
// timer's record was durable; the offsets a power loss took were then given to new timers, which
// were skipped (URINGMQ_SEED=1692 with the fix reverted).
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "engine/delivery/timer_message.h"
#include "engine/log/properties.h"
#include "engine/shard.h"
#include "tests/support/env.h"
#include "tests/support/log_fixture.h"
#include "tests/support/stepped_shard_sim.h"

namespace uringmq {
namespace {

using namespace testing;  // the stepped-shard harness

constexpr std::string_view kTimedTopic = "TimedTopic";
constexpr std::string_view kPlainTopic = "PlainTopic";
constexpr int32_t kQueues = 3;
constexpr uint64_t kDefaultSeeds = 300;  // CI: about 7 s in RelWithDebInfo on 2 shared cores

int64_t parse_ms(std::string_view properties, std::string_view name) {
  auto v = engine::find_property(properties, name);
  int64_t out = INT64_MIN;
  if (v) (void)std::from_chars(v->data(), v->data() + v->size(), out);
  return out;
}

// Counters of this simulation beyond the shared ones.
struct TimerTotals {
  uint64_t acked_cancels = 0, cancel_lost = 0, bad_deliver_time = 0;
};

class TimerSim final : public testing::SteppedShardSim {
 public:
  TimerSim(uint64_t seed, const SimSeedOptions& seed_options, TimerTotals& timer_totals)
      : SteppedShardSim(seed, seed_options,
                        {engine::kTimerTopic, {kTimedTopic, kPlainTopic}, kQueues}),
        timer_totals_(timer_totals) {
    options().timer_bucket_ms = 5 + static_cast<int64_t>(rng().below(96));
    options().timer_slot_count = 4 + static_cast<uint32_t>(rng().below(13));
    if (rng().below(3) == 0) options().timer_window_entries_max = 4 + rng().below(60);
    horizon_ms_ = (options().timer_slot_count - 2) * options().timer_bucket_ms;
  }

 private:
  struct Timed {
    bool absolute = false;
    int64_t value_ms = 0;      // absolute: the deliver time; relative: the delay
    int64_t due_after_ms = 0;  // the deliver time is not before this
    std::vector<std::string> keys;
  };
  struct Cancel {
    std::string key;
    uint32_t cycle = 0;  // sent in
  };

  void make_put(SimPut& p) override {
    p.queue_id = static_cast<int32_t>(rng().below(kQueues));
    engine::append_property(p.properties, "K", std::to_string(p.key));
    const uint64_t what = rng().below(10);
    if (what == 2 && make_cancel(p)) return;
    if (what <= 2) {
      p.kind = SimPut::Kind::plain;
      p.topic = rng().below(2) == 0 ? kPlainTopic : kTimedTopic;
    } else {
      make_timed(p);
    }
    p.body = testing::body_of(p.key, 1 + static_cast<uint32_t>(rng().below(max_body_bytes())));
  }

  // Due in the past or now, in the next two buckets, within the horizon, or up to three
  // horizons beyond it (rolled, more than once for the furthest).
  int64_t draw_offset_ms() {
    const int64_t bucket = options().timer_bucket_ms;
    switch (rng().below(6)) {
      case 0:
        return -static_cast<int64_t>(rng().below(static_cast<uint64_t>(2 * bucket)));
      case 1:
        return static_cast<int64_t>(rng().below(static_cast<uint64_t>(2 * bucket)));
      case 2:
        return static_cast<int64_t>(rng().below(static_cast<uint64_t>(horizon_ms_)));
      case 3:
        return 1 + static_cast<int64_t>(rng().below(50));
      default:
        return horizon_ms_ +
               static_cast<int64_t>(rng().below(static_cast<uint64_t>(3 * horizon_ms_)));
    }
  }

  void make_timed(SimPut& p) {
    p.kind = SimPut::Kind::deferred;
    p.topic = kTimedTopic;
    Timed& t = timed_[p.key];
    const int64_t offset = draw_offset_ms();
    char number[24];
    auto text = [&](int64_t v) {
      auto [end, ec] = std::to_chars(number, number + sizeof(number), v);
      (void)ec;
      return std::string_view(number, end - number);
    };
    switch (rng().below(4)) {
      case 0:
      case 1:
        t.absolute = true;
        t.value_ms = clock().now_ms() + offset;
        engine::append_property(p.properties,
                                rng().below(2) == 0 ? engine::kPropertyTimerDeliverMs
                                                    : engine::kPropertyStartDeliverTime,
                                text(t.value_ms));
        break;
      case 2:
        t.value_ms = offset;
        engine::append_property(p.properties, engine::kPropertyTimerDelayMs, text(t.value_ms));
        break;
      default:
        t.value_ms = 1000 * (offset / 1000);
        engine::append_property(p.properties, engine::kPropertyTimerDelaySec, text(offset / 1000));
        break;
    }
    t.due_after_ms = t.absolute ? t.value_ms : clock().now_ms() + t.value_ms;
    max_wait_ms_ = std::max(max_wait_ms_, t.due_after_ms - clock().now_ms());
    t.keys.push_back("k" + std::to_string(p.key));
    if (rng().below(2) == 0) t.keys.push_back("g" + std::to_string(p.key / 8));
    std::string keys;
    for (const std::string& k : t.keys) keys += (keys.empty() ? "" : " ") + k;
    engine::append_property(p.properties, "KEYS", keys);
    if (rng().below(2) == 0) {
      t.keys.push_back("u" + std::to_string(p.key));
      engine::append_property(p.properties, "UNIQ_KEY", t.keys.back());
    }
    timed_keys_.push_back(p.key);
  }

  // A cancel of one of the last timed puts (one not yet due if a few draws find it: those are
  // the cancels that must win), by one of its keys not cancelled yet.
  bool make_cancel(SimPut& p) {
    if (timed_keys_.empty()) return false;
    const uint64_t recent = std::min<uint64_t>(timed_keys_.size(), 64);
    uint64_t target = 0;
    for (int draw = 0; draw < 4; draw++) {
      target = timed_keys_[timed_keys_.size() - 1 - rng().below(recent)];
      if (timed_.at(target).due_after_ms > clock().now_ms()) break;
    }
    const Timed& t = timed_.at(target);
    const std::string& key = t.keys[rng().below(t.keys.size())];
    if (!cancelled_keys_.emplace(key, p.key).second) return false;
    p.kind = SimPut::Kind::control;
    p.topic = kTimedTopic;
    p.queue_id = puts()[target].queue_id;
    engine::append_property(p.properties, engine::kPropertyTimerCancelKey, key);
    p.body = testing::body_of(p.key, 1 + static_cast<uint32_t>(rng().below(16)));
    cancels_[p.key] = Cancel{key, cycle_index()};
    return true;
  }

  // The clock jumps now and then (a stall, a suspended VM): the sweep catches up many buckets.
  void before_step() override {
    if (rng().below(64) == 0) {
      clock().advance_ms(static_cast<int64_t>(rng().below(static_cast<uint64_t>(2 * horizon_ms_))));
    }
  }

  TimerStats stats() const {
    TimerStats s;
    shard().add_timer_stats(s);
    return s;
  }
  uint64_t delivered_count() const override {
    const TimerStats s = stats();
    return s.delivered + s.rolled + s.cancelled;
  }
  int64_t pending_count() const override { return static_cast<int64_t>(stats().in_memory); }
  // Past every deliver time, and a whole turn of the wheel more.
  int64_t drain_span_ms() const override {
    return std::max<int64_t>(max_wait_ms_, 0) +
           (options().timer_slot_count + 2) * options().timer_bucket_ms + 100;
  }

  void note_record(uint64_t, const engine::MessageView& r) override {
    if (r.topic != engine::kTimerTopic || r.queue_id != engine::kTimerCancelQueue) return;
    auto key = engine::find_property(r.user_properties, engine::kPropertyTimerCancelKey);
    if (key)
      cancel_ms_[std::string(*key)] = parse_ms(r.user_properties, engine::kPropertyTimerPutMs);
  }

  SimVerdict judge(const SimPut& p, const SimSource* source,
                   std::span<const SimCopy> copies) override {
    const Timed& t = timed_.at(p.key);
    SimVerdict v;
    if (source == nullptr) {
      // Stored at once (a plain record, no marker), or not stored at all.
      v.sourced = !copies.empty() && copies.front().marker.empty();
      if (v.sourced && t.absolute) v.not_before_ms = t.value_ms;
      return v;
    }
    v.sourced = true;
    // A rolled copy carries __UMQ_TPUT; the first record's put time is its store timestamp.
    int64_t put_ms = parse_ms(source->properties, engine::kPropertyTimerPutMs);
    if (put_ms == INT64_MIN) put_ms = source->store_ms;
    const int64_t deliver_ms = t.absolute ? t.value_ms : put_ms + t.value_ms;
    if (parse_ms(source->properties, engine::kPropertyTimerOutMs) != deliver_ms ||
        put_ms == INT64_MIN) {
      timer_totals_.bad_deliver_time++;
      note(&bad_, "bad-deliver-time:" + std::to_string(p.key));
    }
    v.not_before_ms = deliver_ms;
    for (const std::string& key : t.keys) {
      auto c = cancelled_keys_.find(key);
      if (c == cancelled_keys_.end()) continue;
      const SimVerdict::Expect e = cancel_effect(puts()[c->second], key, put_ms, deliver_ms);
      if (e == SimVerdict::Expect::never) v.expect = e;
      if (e == SimVerdict::Expect::at_most_once && v.expect == SimVerdict::Expect::once) {
        v.expect = e;
      }
    }
    return v;
  }

  // What one cancel does to a timer put at put_ms, due at deliver_ms (the header's rule).
  SimVerdict::Expect cancel_effect(const SimPut& cancel, const std::string& key, int64_t put_ms,
                                   int64_t deliver_ms) {
    if (auto c = cancel_ms_.find(key); c != cancel_ms_.end()) {
      if (c->second < put_ms) return SimVerdict::Expect::once;
      const int64_t lead = std::max(options().delivery_lead_ms, options().delivery_lead_max_ms);
      return c->second < deliver_ms - lead ? SimVerdict::Expect::never
                                           : SimVerdict::Expect::at_most_once;
    }
    if (cancel.acked) return SimVerdict::Expect::at_most_once;  // lost: check_more judges it
    return put_ms <= cycle_end_ms(cancels_.at(cancel.key).cycle) ? SimVerdict::Expect::at_most_once
                                                                 : SimVerdict::Expect::once;
  }

  void check_more(SimTotals&, std::string* bad) override {
    for (const auto& [put_key, cancel] : cancels_) {
      const SimPut& p = puts()[put_key];
      if (!p.acked) continue;
      timer_totals_.acked_cancels++;
      if (cancel_ms_.count(cancel.key) == 0 && !may_be_lost(p)) {
        timer_totals_.cancel_lost++;
        note(bad, "cancel-lost:" + std::to_string(put_key));
      }
    }
    if (!bad_.empty()) *bad += bad_;
  }

  TimerTotals& timer_totals_;
  int64_t horizon_ms_ = 0;
  int64_t max_wait_ms_ = 0;                         // the furthest deliver time from its put
  std::map<uint64_t, Timed> timed_;                 // by put key
  std::vector<uint64_t> timed_keys_;                // put keys of timed puts, in order
  std::map<std::string, uint64_t> cancelled_keys_;  // cancel key -> the cancel's put key
  std::map<uint64_t, Cancel> cancels_;              // by the cancel's put key
  std::map<std::string, int64_t> cancel_ms_;        // cancel key -> c, from its record
  std::string bad_;
};

void run_seed(uint64_t seed, const SimSeedOptions& seed_options, SimTotals& totals,
              TimerTotals& timer_totals, std::string* problem) {
  TimerSim sim(seed, seed_options, timer_totals);
  sim.run(totals, problem);
}

void print_summary(const char* mode, const SimTotals& t, const TimerTotals& tt) {
  const testing::SummaryField extra[] = {
      {"rolled_records", t.rerouted},
      {"acked_cancels", tt.acked_cancels},
      {"cancelled", t.never_expected},
      {"cancelled_delivered", t.delivered_never},
      {"cancel_raced", t.open_race},
      {"cancel_raced_delivered", t.open_race_delivered},
      {"cancel_lost", tt.cancel_lost},
      {"bad_deliver_time", tt.bad_deliver_time},
      {"async_power_crashes", t.async_power_crashes},
      {"async_lost", t.async_lost},
  };
  testing::print_summary("timer", mode, t, "acked_timed", extra);
}

TEST(TimerCrashSim, TimedMessagesAreDeliveredExactlyOnceAcrossCrashes) {
  SimSeedOptions seed_options;
  seed_options.async_power_loss = true;
  SimTotals totals;
  TimerTotals timer_totals;
  run_seeds(
      "URINGMQ_TIMER_SIM_SEEDS", kDefaultSeeds, " ctest -R timer_crash_sim_test",
      [&](uint64_t seed, SimTotals& t, std::string* problem) {
        run_seed(seed, seed_options, t, timer_totals, problem);
      },
      totals);
  print_summary("exactly-once", totals, timer_totals);
  expect_exactly_once(totals);
  EXPECT_EQ(totals.delivered_never, 0u);
  EXPECT_EQ(timer_totals.cancel_lost, 0u);
  EXPECT_EQ(timer_totals.bad_deliver_time, 0u);
  if (!std::getenv("URINGMQ_SEED")) {
    EXPECT_GT(totals.rerouted, 0u);        // rolls happened
    EXPECT_GT(totals.never_expected, 0u);  // cancels won
    EXPECT_GT(totals.async_power_crashes, 0u);
  }
}

// Each canary breaks one half of exactly-once; the simulation must see duplicates within a few
// seeds, or it could not have seen them in the real code either.
void expect_canary_caught(const char* mode, const Shard::SteppedOptions& stepped) {
  TimerTotals timer_totals;
  testing::expect_canary_caught(
      mode,
      [&](uint64_t seed, SimTotals& t, std::string* problem) {
        run_seed(seed, SimSeedOptions{stepped}, t, timer_totals, problem);
      },
      [&](const char* m, const SimTotals& t) { print_summary(m, t, timer_totals); },
      &SimTotals::duplicated, 50);
}

TEST(TimerCrashSim, CanaryIgnoringMarkersIsCaughtDuplicating) {
  expect_canary_caught("canary-ignore-markers", {.unsafe_ignore_delivery_markers = true});
}

TEST(TimerCrashSim, CanaryCheckpointPastDeliveriesIsCaughtDuplicating) {
  expect_canary_caught("canary-checkpoint-past-deliveries",
                       {.unsafe_checkpoint_past_deliveries = true});
}

// ---- A timer acknowledged after its bucket ended ----

// Holds every completion back while held: the device has the requests, the shard hears nothing.
class HeldDisk final : public BorrowedDisk {
 public:
  using BorrowedDisk::BorrowedDisk;
  void hold(bool on) { held_ = on; }
  size_t poll(std::span<io::IoCompletion> out, io::Wait wait) override {
    return held_ ? 0 : BorrowedDisk::poll(out, wait);
  }

 private:
  bool held_ = false;
};

// One stepped shard on a SimDisk that can hold its completions, with a manual clock at a
// bucket boundary: 100 ms buckets, 8 slots (a rotation is 800 ms).
struct SteppedTimerShard {
  io::SimDisk disk{[] {
    io::SimDiskOptions d;
    d.poll_complete_probability = 1;
    return d;
  }()};
  io::ManualClock clock{1'000'000};
  sched::DelayLevels levels = *sched::DelayLevels::parse("1s");
  std::vector<std::unique_ptr<SessionSlot>> slots;
  HeldDisk* held = nullptr;
  std::unique_ptr<Shard> shard;

  SteppedTimerShard() {
    EXPECT_TRUE(disk.make_dir_tree_durable("/store").is_ok());
    StoreOptions o;
    o.log = small_log_options("");
    o.data_dir = "/store";
    o.shard_count = 1;
    o.pin_threads = false;
    o.session_window = 16;
    o.max_sessions = 1;
    o.clock = &clock;
    o.clean_interval_ms = int64_t{1} << 40;  // retention never runs (it asks the real fs)
    o.disk_space_warning_ratio = 1.0;        // segments are allocated without asking it
    o.timer_bucket_ms = 100;
    o.timer_slot_count = 8;
    slots.push_back(stepped_session_slot(16));
    auto owned = std::make_unique<HeldDisk>(disk);
    held = owned.get();
    shard = std::make_unique<Shard>(0, o, levels, slots, std::move(owned), Shard::SteppedOptions{});
  }
  SessionSlot& session() { return *slots.back(); }
  void run(int steps) {
    for (int i = 0; i < steps; i++) (void)shard->step();
  }
  TimerStats stats() {
    TimerStats out;
    shard->add_timer_stats(out);
    return out;
  }
  // Pushes a put of a message due at deliver_ms (the shard takes it at its next step).
  void put(int64_t deliver_ms, const std::string& body) {
    properties.clear();
    engine::append_property(properties, "TIMER_DELIVER_MS", std::to_string(deliver_ms));
    bodies.push_back(body);
    shard_request::Append request;
    request.tag = 7;
    request.input.topic = "TimedTopic";
    request.input.properties = properties;
    request.input.body = std::as_bytes(std::span(bodies.back()));
    request.input.born_timestamp_ms = clock.now_ms();
    ASSERT_TRUE(session().to_shard[0]->push(ShardRequest(request)));
  }
  std::string properties;
  std::deque<std::string> bodies;  // the puts' bodies, alive until the shard copies them
};

// A put is given its slot queue's offset at append, but its unit becomes visible there only when
// dispatched, after its write and fdatasync. The sweep used to finish a bucket once the clock had
// left it and its slot showed nothing unexamined: a put due in the current bucket, acknowledged
// after the bucket ended, was then found only when its slot came round again, a rotation late
// (StoreTimerTest.PrecedencePastTimesLimitAndNeverEarly failed so now and then on a loaded
// machine, with a rolled copy). The stepped shard, a held disk and a manual clock replay it.
TEST(TimerSweep, ATimerAcknowledgedAfterItsBucketEndedIsDeliveredThen) {
  SteppedTimerShard t;
  engine::RecoveryReport report;
  ASSERT_TRUE(t.shard->open_stepped(&report).is_ok());
  t.run(20);
  t.clock.advance_ms(50);  // put at 1,000,050 a timer due at 1,000,090, in the same bucket
  t.held->hold(true);
  t.put(1'000'090, "due in this bucket");
  t.run(20);                // appended and submitted; nothing completes
  t.clock.advance_ms(100);  // 1,000,150: the clock has left the put's bucket
  t.run(20);
  t.held->hold(false);
  for (int i = 0; i < 1000 && t.stats().delivered == 0; i++) t.run(1);
  Completion done;
  ASSERT_TRUE(t.session().from_shard[0]->pop(&done));
  EXPECT_EQ(done.code, io::Code::ok);
  EXPECT_EQ(t.stats().delivered, 1u) << "at " << t.clock.now_ms() << ", due at 1000090";
  ASSERT_TRUE(t.shard->close_stepped().is_ok());
}

// A fresh store's wheel had no sweep position until its first sweep. A far timer put before it
// went to the horizon's slot (now + slots - 2), and that first sweep, reading the whole ring from
// now - slots + 2, took the slot for an old bucket's and rolled the timer at once (twice in a
// row in StoreTimerTest.ALaggingSweepRollsAFarTimerOnce, which failed so now and then on a loaded
// machine).
// The stepped shard takes the put before its first sweep every time.
TEST(TimerSweep, AFarTimerPutBeforeTheFirstSweepWaitsForItsSlot) {
  SteppedTimerShard t;
  engine::RecoveryReport report;
  ASSERT_TRUE(t.shard->open_stepped(&report).is_ok());
  t.put(1'000'000 + 60'000, "a minute away, past the 800 ms ring");
  t.run(50);
  Completion done;
  ASSERT_TRUE(t.session().from_shard[0]->pop(&done));
  EXPECT_EQ(done.code, io::Code::ok);
  EXPECT_EQ(t.stats().rolled, 0u) << "rolled before its slot came round";
  // Its slot comes round 600 ms on (bucket now + 6): rolled once then.
  for (int i = 0; i < 8; i++) {
    t.clock.advance_ms(100);
    t.run(20);
  }
  EXPECT_EQ(t.stats().rolled, 1u);
  ASSERT_TRUE(t.shard->close_stepped().is_ok());
}

}  // namespace
}  // namespace uringmq
