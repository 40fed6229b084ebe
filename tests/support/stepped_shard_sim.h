#pragma once
// SteppedShardSim: what the crash simulations of deferred delivery (delay levels:
// tests/sim/schedule_crash_sim_test.cc; timed messages: tests/sim/timer_crash_sim_test.cc)
// share. The real Shard runs in stepped mode (engine/shard.h) on one seeded SimDisk with a
// ManualClock and is fed through its own session ring; each cycle opens it (recovery), puts
// while the clock moves, and ends in a power loss, a kill -9 or a clean stop; a final drain runs
// every deferred message dry, a clean restart must deliver nothing more, and the checker reads
// the whole log and holds it to the ledger of puts.
//
// A subclass says what a put is (make_put), how far delivery has come (delivered_count,
// pending_count), how long the drain runs, and what each deferred put may do (judge): delivered
// exactly once, never (cancelled), or at most once (a race the rules leave open). The checker
// does the rest: a deferred put whose put was acknowledged or whose source record is in the log
// is delivered exactly once to its topic and queue with its body, never before its time; every
// acknowledged plain put is present once; nothing comes from nowhere; each queue's units equal
// its records.
//
// Power loss and ASYNC_FLUSH: by default a power-loss cycle runs SYNC_FLUSH (an ASYNC_FLUSH
// acknowledgement does not promise to survive a power loss). With
// SimSeedOptions::async_power_loss the flush mode is drawn for those cycles too, and an
// acknowledged put that is absent from the recovered log (no source record, no copy) is allowed
// when it was acknowledged under ASYNC_FLUSH and a power loss came before a clean stop flushed
// it: counted in async_lost. Every source record that IS in the recovered log must still be
// delivered once.
//
// Threading: one test thread; everything reproduces from the seed.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/shard.h"
#include "io/clock.h"
#include "testing/sim_disk.h"
#include "tests/support/borrowed_disk.h"
#include "tests/support/rng.h"

namespace uringmq::testing {

// A body derived from the put's key: verifiable without storing payloads.
std::vector<std::byte> body_of(uint64_t key, uint32_t size_bytes);

// The one session a stepped shard is fed through: rings of `window` entries each way, in use.
std::unique_ptr<SessionSlot> stepped_session_slot(uint32_t window);

// One put. Kept in a deque: the shard reads topic, properties and body through views until the
// put's completion, so they never move.
struct SimPut {
  enum class Kind : uint8_t {
    plain,     // stored in its topic and queue as it is
    deferred,  // stored in the source topic, delivered to its topic and queue later
    control,   // neither (a cancel, say): the subclass checks it
  };
  uint64_t key = 0;  // index in the ledger; property K
  Kind kind = Kind::plain;
  int32_t queue_id = 0;
  bool acked = false;
  // Acknowledged under ASYNC_FLUSH (when written): until a clean stop it may not be durable.
  bool unflushed = false;
  // A power loss came while it was unflushed: it may be gone (if its record survived, it must
  // be served all the same).
  bool power_lost_unflushed = false;
  std::string topic;
  std::string properties;
  std::vector<std::byte> body;
};

// A record of a deferred put in the source topic (the first one; later ones are counted).
struct SimSource {
  uint64_t log_offset = 0;
  int64_t store_ms = 0;
  std::string properties;
  uint32_t records = 0;  // in the source topic with this key (> 1: rolled copies)
};

// A deferred put's record in its own topic.
struct SimCopy {
  int64_t store_ms = 0;
  int32_t queue_id = 0;
  bool body_ok = false;
  bool topic_ok = false;
  uint64_t log_offset = 0;
  std::string marker;  // __UMQ_DLV
};

// What a deferred put may do, as the subclass reads the log.
struct SimVerdict {
  enum class Expect : uint8_t { once, never, at_most_once };
  Expect expect = Expect::once;
  bool sourced = false;               // it was stored (a source record, or stored directly)
  int64_t not_before_ms = INT64_MIN;  // no copy may be stored earlier
};

struct SimTotals {
  uint64_t seeds = 0, cycles = 0, power_crashes = 0, process_crashes = 0, clean_stops = 0;
  uint64_t crashes_in_persist = 0, crashes_after_delivery = 0;
  uint64_t acked_deferred = 0, acked_plain = 0, delivered = 0, lost = 0, duplicated = 0;
  uint64_t early = 0, phantom = 0, misrouted = 0, stranded = 0, plain_lost = 0, parked = 0;
  uint64_t invisible = 0, failures = 0;
  // Delivery ahead: copies found by an open with their time still ahead (each must be hidden),
  // and queues that showed one (shown_early: a failure).
  uint64_t held_at_open = 0, shown_early = 0;
  uint64_t async_power_crashes = 0, async_lost = 0;  // async_power_loss seeds only
  uint64_t never_expected = 0, delivered_never = 0;  // e.g. cancelled, yet delivered
  uint64_t open_race = 0, open_race_delivered = 0;   // at most once: how many were delivered
  uint64_t rerouted = 0;                             // source records beyond a put's first (rolls)
};

// "<name>-summary: mode=<mode> seeds=... failures=..." then the extra fields, one line: the
// first fields' names and order are what the schedule simulation has always printed.
struct SummaryField {
  const char* name;
  uint64_t value;
};
void print_summary(const char* name, const char* mode, const SimTotals& totals,
                   const char* acked_deferred_name, std::span<const SummaryField> extra = {});

struct SimSeedOptions {
  Shard::SteppedOptions stepped;
  // Power-loss cycles draw their flush mode too (default: SYNC_FLUSH); see the header.
  bool async_power_loss = false;
};

// What a simulation stores and where (fixed per test).
struct SimLayout {
  std::string_view source_topic;         // deferred puts wait here
  std::vector<std::string_view> topics;  // the topics puts name
  int32_t queues = 3;                    // per topic
  std::string_view delay_levels = "1s";  // StoreOptions::message_delay_level
};

// ---- Running seeds (both simulations' tests) ----
// One seed: runs it, adding to totals; *problem stays empty when it passed.
using SimRunSeed = std::function<void(uint64_t seed, SimTotals& totals, std::string* problem)>;
// Seeds [URINGMQ_SEED or 1, + count_var or default_count), or only URINGMQ_SEED when it is set;
// a failing seed adds a test failure ending in the line that reproduces it (`reproduce`:
// what follows URINGMQ_SEED=n on that line).
void run_seeds(const char* count_var, uint64_t default_count, const std::string& reproduce,
               const SimRunSeed& run_seed, SimTotals& totals);
// What every exactly-once run must show (and that it crashed both ways at least once).
void expect_exactly_once(const SimTotals& totals);
// Runs seeds 1.. until the counter `caught` moves (at most `seeds`); prints the summary with
// `print` and fails if the canary was not caught.
void expect_canary_caught(const char* mode, const SimRunSeed& run_seed,
                          const std::function<void(const char*, const SimTotals&)>& print,
                          uint64_t SimTotals::*caught, uint64_t seeds);

class SteppedShardSim {
 public:
  static constexpr uint32_t kWindow = 256;  // session ring size: requests outstanding at most

  SteppedShardSim(uint64_t seed, const SimSeedOptions& seed_options, const SimLayout& layout);
  virtual ~SteppedShardSim();
  SteppedShardSim(const SteppedShardSim&) = delete;
  SteppedShardSim& operator=(const SteppedShardSim&) = delete;

  // Runs 2-4 cycles, the drain and the check; *problem is empty when the seed passed.
  void run(SimTotals& totals, std::string* problem);

 protected:
  // ---- What a subclass provides ----
  // Fills everything of p but key (already set) for one put; the caller pushes it.
  virtual void make_put(SimPut& p) = 0;
  virtual uint64_t delivered_count() const = 0;
  virtual int64_t pending_count() const = 0;
  // How long the final drain runs at least, from now, ms.
  virtual int64_t drain_span_ms() const = 0;
  // Called before each step of a cycle (the clock may jump here).
  virtual void before_step() {}
  // Every record of the recovered log, before the shared checker sees it.
  virtual void note_record(uint64_t log_offset, const engine::MessageView& record) {
    (void)log_offset;
    (void)record;
  }
  virtual SimVerdict judge(const SimPut& p, const SimSource* source,
                           std::span<const SimCopy> copies) = 0;
  // After the shared checks (control puts, say); appends what is wrong to *bad.
  virtual void check_more(SimTotals& totals, std::string* bad) {
    (void)totals;
    (void)bad;
  }

  // ---- For subclasses ----
  Rng& rng() { return rng_; }
  io::ManualClock& clock() { return clock_; }
  StoreOptions& options() { return o_; }
  const StoreOptions& options() const { return o_; }
  const SimSeedOptions& seed_options() const { return seed_options_; }
  const sched::DelayLevels& levels() const { return levels_; }
  Shard& shard() { return *shard_; }
  const Shard& shard() const { return *shard_; }
  const std::deque<SimPut>& puts() const { return puts_; }
  uint32_t cycle_index() const { return cycle_index_; }
  // The clock when cycle `cycle` ended (crashed or stopped); every cycle has ended at check().
  int64_t cycle_end_ms(uint32_t cycle) const { return cycle_end_ms_.at(cycle); }
  uint32_t max_body_bytes() const { return max_body_bytes_; }
  // An acknowledged put may be absent from the log (async_power_loss seeds; see the header).
  bool may_be_lost(const SimPut& p) const;
  static void note(std::string* bad, const std::string& what);

 private:
  bool cycle(SimTotals& totals, std::string* problem);
  bool drain(std::string* problem);
  bool check(SimTotals& totals, std::string* problem);
  bool open(std::string* problem);
  void put();
  void take_completions();
  void idle_or_tick(bool worked);
  bool check_visible(std::string* problem);
  bool check_not_shown_early(SimTotals& totals, std::string* problem);
  // Every layout queue's min and max offsets as a consumer sees them, into queries_.
  void query_queues();
  // Visits every valid record of the log of the layout's topics; false (problem set) when the
  // scan fails.
  bool scan_layout(const std::function<void(const engine::MessageView&)>& fn, std::string* problem);
  void judge_deferred(const SimPut& p, const SimSource* source, std::span<const SimCopy> copies,
                      SimTotals& totals, std::string* bad);

  static constexpr uint64_t kQueryTag = uint64_t{1} << 40;
  Rng rng_;
  SimSeedOptions seed_options_;
  SimLayout layout_;
  sched::DelayLevels levels_;
  io::ManualClock clock_;
  std::unique_ptr<io::SimDisk> disk_;
  StoreOptions o_;
  std::vector<std::unique_ptr<SessionSlot>> slots_;
  std::unique_ptr<Shard> shard_;
  std::deque<SimPut> puts_;
  std::vector<Completion> queries_;
  uint32_t outstanding_ = 0;
  uint32_t max_body_bytes_ = 1;
  int64_t max_advance_ms_ = 1;
  uint64_t invisible_ = 0;
  int64_t past_end_ = 0;  // pending_count() below zero at a drain's end
  uint64_t seed_ = 0;
  uint32_t cycle_index_ = 0;
  std::vector<int64_t> cycle_end_ms_;  // by cycle
  const bool verbose_;                 // URINGMQ_SIM_VERBOSE: a line per open and per cycle
  const uint64_t trace_key_;           // URINGMQ_SIM_TRACE_KEY=k: the check prints put k's records
};

}  // namespace uringmq::testing
