#include "tests/support/stepped_shard_sim.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>

#include <gtest/gtest.h>

#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"
#include "tests/support/env.h"
#include "tests/support/log_fixture.h"

namespace uringmq::testing {

namespace {
constexpr const char* kStoreDir = "/store";
constexpr const char* kShardDir = "/store/shard-0";

std::optional<uint64_t> key_of(const engine::MessageView& r) {
  auto k = engine::find_property(r.user_properties, "K");
  if (!k) return std::nullopt;
  return std::stoull(std::string(*k));
}
}  // namespace

std::unique_ptr<SessionSlot> stepped_session_slot(uint32_t window) {
  auto slot = std::make_unique<SessionSlot>();
  slot->to_shard.push_back(std::make_unique<sched::SpscRing<ShardRequest>>(window));
  slot->from_shard.push_back(std::make_unique<sched::SpscRing<Completion>>(window));
  slot->in_use.store(true);
  slot->active.store(true);
  return slot;
}

std::vector<std::byte> body_of(uint64_t key, uint32_t size_bytes) {
  std::vector<std::byte> body(size_bytes);
  uint64_t x = key * 0x9E3779B97F4A7C15ULL + 1;
  for (uint32_t i = 0; i < size_bytes; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    body[i] = static_cast<std::byte>(x);
  }
  return body;
}

void print_summary(const char* name, const char* mode, const SimTotals& t,
                   const char* acked_deferred_name, std::span<const SummaryField> extra) {
  const SummaryField fields[] = {
      {"seeds", t.seeds},
      {"cycles", t.cycles},
      {"power_crashes", t.power_crashes},
      {"process_crashes", t.process_crashes},
      {"clean_stops", t.clean_stops},
      {"crashes_in_persist", t.crashes_in_persist},
      {"crashes_after_delivery", t.crashes_after_delivery},
      {acked_deferred_name, t.acked_deferred},
      {"acked_plain", t.acked_plain},
      {"delivered", t.delivered},
      {"lost", t.lost},
      {"duplicated", t.duplicated},
      {"early", t.early},
      {"phantom", t.phantom},
      {"misrouted", t.misrouted},
      {"stranded", t.stranded},
      {"plain_lost", t.plain_lost},
      {"parked", t.parked},
      {"invisible", t.invisible},
      {"held_at_open", t.held_at_open},
      {"shown_early", t.shown_early},
      {"failures", t.failures},
  };
  std::string line = std::string(name) + "-summary: mode=" + mode;
  for (const SummaryField& f : fields)
    line += " " + std::string(f.name) + "=" + std::to_string(f.value);
  for (const SummaryField& f : extra)
    line += " " + std::string(f.name) + "=" + std::to_string(f.value);
  std::printf("%s\n", line.c_str());
}

void run_seeds(const char* count_var, uint64_t default_count, const std::string& reproduce,
               const SimRunSeed& run_seed, SimTotals& totals) {
  const uint64_t first = env_u64("URINGMQ_SEED", 1);
  const uint64_t seeds = std::getenv("URINGMQ_SEED") ? 1 : env_u64(count_var, default_count);
  for (uint64_t seed = first; seed < first + seeds; seed++) {
    std::string problem;
    run_seed(seed, totals, &problem);
    if (!problem.empty()) {
      totals.failures++;
      ADD_FAILURE() << "seed " << seed << ": " << problem << "\nreproduce: URINGMQ_SEED=" << seed
                    << reproduce;
    }
  }
}

void expect_exactly_once(const SimTotals& totals) {
  EXPECT_EQ(totals.failures, 0u);
  EXPECT_EQ(totals.lost, 0u);
  EXPECT_EQ(totals.duplicated, 0u);
  EXPECT_EQ(totals.early, 0u);
  EXPECT_EQ(totals.phantom, 0u);
  if (std::getenv("URINGMQ_SEED") != nullptr) return;  // one seed replayed: no coverage asked
  EXPECT_GT(totals.acked_deferred, 0u);
  EXPECT_GT(totals.power_crashes, 0u);
  EXPECT_GT(totals.process_crashes, 0u);
}

void expect_canary_caught(const char* mode, const SimRunSeed& run_seed,
                          const std::function<void(const char*, const SimTotals&)>& print,
                          uint64_t SimTotals::*caught, uint64_t seeds) {
  SimTotals totals;
  for (uint64_t seed = 1; seed <= seeds && totals.*caught == 0; seed++) {
    std::string problem;
    run_seed(seed, totals, &problem);
  }
  print(mode, totals);
  EXPECT_GT(totals.*caught, 0u) << mode << ": the simulation did not catch the canary";
}

SteppedShardSim::SteppedShardSim(uint64_t seed, const SimSeedOptions& seed_options,
                                 const SimLayout& layout)
    : rng_(seed, 11),
      seed_options_(seed_options),
      layout_(layout),
      levels_(*sched::DelayLevels::parse(layout.delay_levels)),
      seed_(seed),
      verbose_(std::getenv("URINGMQ_SIM_VERBOSE") != nullptr),
      trace_key_(env_u64("URINGMQ_SIM_TRACE_KEY", UINT64_MAX)) {
  io::SimDiskOptions d;
  d.seed = seed;
  d.poll_complete_probability = 0.1 + 0.8 * rng_.unit();
  o_.log = small_log_options("");
  o_.log.io_mode = rng_.below(2) == 0 ? io::IoMode::buffered : io::IoMode::direct;
  // O_DIRECT rewrites partly durable blocks: only safe on power-loss-atomic sectors
  // (engine/README.md); buffered seeds keep the harsher model.
  d.crash_atomic_sectors = o_.log.io_mode == io::IoMode::direct;
  disk_ = std::make_unique<io::SimDisk>(d);
  UMQ_ASSERT(disk_->make_dir_tree_durable(kStoreDir).is_ok());
  o_.data_dir = kStoreDir;
  o_.shard_count = 1;
  o_.pin_threads = false;
  o_.session_window = kWindow;
  o_.max_sessions = 1;
  o_.max_pulls = 4;
  // No message index: it holds the checkpoint back too, which would hide the checkpoint canary
  // (tests/sim/index_crash_sim_test.cc crashes the index).
  o_.index.enabled = false;
  o_.clock = &clock_;
  o_.message_delay_level = std::string(layout.delay_levels);
  o_.clean_interval_ms = int64_t{1} << 40;  // retention never runs (it asks the real fs)
  o_.disk_space_warning_ratio = 1.0;        // segments are allocated without asking it
  o_.log.checkpoint_interval_ms = 20 + static_cast<int64_t>(rng_.below(1000));
  o_.consumer_offsets_persist_interval_ms = 10 + static_cast<int64_t>(rng_.below(1500));
  o_.consume_queue.units_per_file = 16 + rng_.below(48);
  o_.consume_queue.memory_units_per_queue = 16;
  o_.consume_queue.flush_interval_ms = 20 + static_cast<int64_t>(rng_.below(500));
  if (seed_options.stepped.unsafe_checkpoint_past_deliveries) {
    // The checkpoint canary needs checkpoints to pass deliveries before the table persists.
    o_.log.checkpoint_interval_ms = 10;
    o_.consume_queue.flush_interval_ms = 10;
    o_.consumer_offsets_persist_interval_ms = 5000;
  }
  // Delivery ahead: copies taken up to this long before their time and held (own stream, so the
  // other draws of a seed stay as they were).
  Rng lead_rng(seed ^ 0x1EAD, 7);
  constexpr int64_t kLeads[] = {0, 1, 10, 10, 40};
  o_.delivery_lead_ms = kLeads[lead_rng.below(std::size(kLeads))];
  // The lead's growth with slow acknowledgements: fixed (0), or up to 40 or 200 ms.
  constexpr int64_t kLeadMaxes[] = {0, 40, 200};
  o_.delivery_lead_max_ms = kLeadMaxes[lead_rng.below(std::size(kLeadMaxes))];
  max_body_bytes_ = 1 + static_cast<uint32_t>(rng_.below(2000));
  max_advance_ms_ = 1 + static_cast<int64_t>(rng_.below(100));
}

SteppedShardSim::~SteppedShardSim() = default;

void SteppedShardSim::run(SimTotals& totals, std::string* problem) {
  totals.seeds++;
  Rng cycles_rng(seed_ ^ 0x5EED, 11);
  const uint64_t cycles = 2 + cycles_rng.below(3);
  for (uint64_t c = 0; c < cycles; c++) {
    if (!cycle(totals, problem)) {
      *problem = "cycle " + std::to_string(c) + ": " + *problem;
      return;
    }
  }
  if (!drain(problem)) return;
  totals.invisible += invisible_;
  if (check(totals, problem) && past_end_ > 0) {
    *problem = "progress is " + std::to_string(past_end_) + " units past its queue's end";
  }
}

// One cycle: open (recover), a workload, then a crash (or a clean stop).
bool SteppedShardSim::cycle(SimTotals& totals, std::string* problem) {
  const int kind = static_cast<int>(rng_.below(6));  // 0-3 power loss, 4 kill -9, 5 clean
  const bool power = kind <= 3;
  o_.log.flush_mode = (power && !seed_options_.async_power_loss) || rng_.below(2) == 0
                          ? engine::FlushMode::sync_flush
                          : engine::FlushMode::async_flush;
  const bool async = o_.log.flush_mode == engine::FlushMode::async_flush;
  if (!open(problem) || !check_not_shown_early(totals, problem)) return false;
  const uint64_t steps = 50 + rng_.below(800);
  const uint64_t crash_at = rng_.below(steps);
  const int trigger = static_cast<int>(rng_.below(3));  // 0 step, 1 persist, 2 delivery
  const int puts_per_step = 1 + static_cast<int>(rng_.below(4));
  for (uint64_t step = 0; step < steps; step++) {
    before_step();
    if (rng_.below(3) == 0) {
      for (int i = 0; i < puts_per_step; i++) put();
    }
    const uint64_t delivered_before = delivered_count();
    const bool worked = shard_->step();
    take_completions();
    idle_or_tick(worked);
    if (step < crash_at) continue;
    if (trigger == 0 || step + 1 == steps) break;
    if (trigger == 1 && *disk_->exists(std::string(kShardDir) + "/" +
                                       std::string(engine::kConsumerOffsetsTempFile))) {
      totals.crashes_in_persist++;
      break;
    }
    if (trigger == 2 && delivered_count() != delivered_before && pending_count() > 0) {
      totals.crashes_after_delivery++;
      break;
    }
  }
  totals.cycles++;
  if (verbose_) {
    std::printf("cycle end: kind=%d trigger=%d async=%d puts=%zu delivered=%llu pending=%lld\n",
                kind, trigger, async, puts_.size(), (unsigned long long)delivered_count(),
                (long long)pending_count());
  }
  cycle_index_++;
  cycle_end_ms_.push_back(clock_.now_ms());
  if (kind == 5) {
    totals.clean_stops++;
    io::Status s = shard_->close_stepped();
    shard_.reset();
    if (!s.is_ok()) *problem = "clean stop: " + s.to_string();
    for (SimPut& p : puts_) p.unflushed = false;  // the stop flushed the log
    return s.is_ok();
  }
  if (power) {
    disk_->crash();
    totals.power_crashes++;
    totals.async_power_crashes += async ? 1 : 0;
    for (SimPut& p : puts_) {
      p.power_lost_unflushed = p.power_lost_unflushed || p.unflushed;
      p.unflushed = false;  // what survived the crash image is on the disk
    }
  } else {
    disk_->crash_process();
    totals.process_crashes++;
  }
  shard_.reset();
  return true;
}

bool SteppedShardSim::may_be_lost(const SimPut& p) const {
  return seed_options_.async_power_loss && p.acked && p.power_lost_unflushed;
}

// Opens once more, lets every deferred put run dry (the clock past every deliver time), stops
// cleanly, then opens and runs again: a clean restart must deliver nothing more.
bool SteppedShardSim::drain(std::string* problem) {
  for (int round = 0; round < 2; round++) {
    o_.log.flush_mode = engine::FlushMode::sync_flush;
    if (!open(problem)) return false;
    const int64_t until_ms = clock_.now_ms() + drain_span_ms();
    for (uint64_t guard = 0;; guard++) {
      if (guard > 2'000'000) {
        *problem = "delivery does not finish: " + std::to_string(pending_count()) + " pending";
        return false;
      }
      const bool worked = shard_->step();
      take_completions();
      // Less than nothing pending: progress past a queue's end (copies lost under it). Waiting
      // cannot mend that; the ledger check says what was lost, then run() fails the seed.
      if (clock_.now_ms() >= until_ms && pending_count() <= 0 && disk_->in_flight() == 0) {
        past_end_ = std::max(past_end_, -pending_count());
        break;
      }
      idle_or_tick(worked);
    }
    if (round == 0 && !check_visible(problem)) return false;
    const uint64_t again = round == 1 ? delivered_count() : 0;
    io::Status s = shard_->close_stepped();
    shard_.reset();
    if (!s.is_ok()) {
      *problem = "final stop: " + s.to_string();
      return false;
    }
    if (again > 0) {
      *problem = "a clean restart delivered " + std::to_string(again) + " more";
      return false;
    }
  }
  return true;
}

bool SteppedShardSim::open(std::string* problem) {
  slots_.clear();
  slots_.push_back(stepped_session_slot(kWindow));
  outstanding_ = 0;
  shard_ = std::make_unique<Shard>(0, o_, levels_, slots_, std::make_unique<BorrowedDisk>(*disk_),
                                   seed_options_.stepped);
  engine::RecoveryReport report;
  io::Status s = shard_->open_stepped(&report);
  if (!s.is_ok()) {
    *problem = "open: " + s.to_string();
    shard_.reset();
    return false;
  }
  if (verbose_) {
    std::printf("open: unclean=%d checkpoint=%llu scan_start=%llu end=%llu torn=%llu\n",
                report.unclean_stop, (unsigned long long)report.checkpoint_offset,
                (unsigned long long)report.scan_start_offset, (unsigned long long)report.end_offset,
                (unsigned long long)report.torn_bytes_truncated);
  }
  return true;
}

void SteppedShardSim::put() {
  if (outstanding_ >= kWindow) return;
  SimPut& p = puts_.emplace_back();
  p.key = puts_.size() - 1;
  make_put(p);
  shard_request::Append request;
  request.tag = p.key;
  request.input.topic = p.topic;
  request.input.queue_id = p.queue_id;
  request.input.body = p.body;
  request.input.properties = p.properties;
  request.input.born_timestamp_ms = clock_.now_ms();
  request.input.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000);
  request.input.store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
  UMQ_ASSERT(slots_[0]->to_shard[0]->push(ShardRequest(request)));
  outstanding_++;
}

void SteppedShardSim::take_completions() {
  Completion c;
  while (slots_[0]->from_shard[0]->pop(&c)) {
    UMQ_ASSERT(outstanding_ > 0);
    outstanding_--;
    if (c.tag >= kQueryTag) {
      queries_[c.tag - kQueryTag] = c;
      continue;
    }
    if (c.code != io::Code::ok) continue;
    SimPut& p = puts_[c.tag];
    p.acked = true;
    p.unflushed = o_.log.flush_mode == engine::FlushMode::async_flush;
  }
}

// As the shard thread sleeps when idle: with nothing in flight the clock moves to the next
// timed step (at most max_advance_ms_); otherwise time passes now and then while IO runs.
void SteppedShardSim::idle_or_tick(bool worked) {
  if (!worked && disk_->in_flight() == 0) {
    const int64_t now_mono_ms = clock_.monotonic_ns() / 1'000'000;
    clock_.advance_ms(
        std::clamp<int64_t>(shard_->next_deadline_ms() - now_mono_ms, 1, max_advance_ms_));
  } else if (rng_.below(4) == 0) {
    clock_.advance_ms(static_cast<int64_t>(rng_.below(static_cast<uint64_t>(max_advance_ms_) + 1)));
  }
}

// What consumers see: each queue's units match its records in the log (count of records
// = max - min offset; the dispatch simulation checks the units themselves).
bool SteppedShardSim::check_visible(std::string* problem) {
  std::map<std::pair<std::string, int32_t>, int64_t> records;
  auto count = [&](const engine::MessageView& r) { records[{std::string(r.topic), r.queue_id}]++; };
  if (!scan_layout(count, problem)) return false;
  query_queues();
  const uint32_t queues = static_cast<uint32_t>(layout_.queues);
  for (uint32_t i = 0; i < queries_.size(); i++) {
    const std::string topic(layout_.topics[i / queues]);
    const int64_t in_log = records[{topic, static_cast<int32_t>(i % queues)}];
    const int64_t shown = queries_[i].max_offset - queries_[i].min_offset;
    if (shown != in_log) {
      invisible_++;
      *problem = topic + "/" + std::to_string(i % queues) + " shows " + std::to_string(shown) +
                 " units, the log holds " + std::to_string(in_log) + " records";
      return false;
    }
  }
  return true;
}

// Right after an open (recovery), before the clock moves: no queue shows a record whose store
// time is still ahead. Such records are delivered copies taken ahead of their time (the clock
// only moves forward here); recovery must hold them again until then.
bool SteppedShardSim::check_not_shown_early(SimTotals& totals, std::string* problem) {
  const int64_t now = clock_.now_ms();
  std::map<std::pair<std::string, int32_t>, std::pair<int64_t, int64_t>> first_ahead;  // offset, ts
  if (!scan_layout(
          [&](const engine::MessageView& r) {
            if (r.store_timestamp_ms <= now) return;
            totals.held_at_open++;
            auto [it, fresh] = first_ahead.try_emplace({std::string(r.topic), r.queue_id},
                                                       r.queue_offset, r.store_timestamp_ms);
            if (!fresh && r.queue_offset < it->second.first) {
              it->second = {r.queue_offset, r.store_timestamp_ms};
            }
          },
          problem)) {
    return false;
  }
  if (first_ahead.empty()) return true;
  query_queues();
  const uint32_t queues = static_cast<uint32_t>(layout_.queues);
  for (uint32_t i = 0; i < queries_.size(); i++) {
    const std::string topic(layout_.topics[i / queues]);
    auto it = first_ahead.find({topic, static_cast<int32_t>(i % queues)});
    if (it == first_ahead.end() || queries_[i].max_offset.value <= it->second.first) continue;
    totals.shown_early++;
    *problem = topic + "/" + std::to_string(i % queues) + " shows offset " +
               std::to_string(it->second.first) + ", stored for " +
               std::to_string(it->second.second) + ", at " + std::to_string(now);
    return false;
  }
  return true;
}

bool SteppedShardSim::scan_layout(const std::function<void(const engine::MessageView&)>& fn,
                                  std::string* problem) {
  engine::CommitLogOptions log_options = o_.log;
  log_options.dir = kShardDir;
  auto end = engine::scan_log(*disk_, log_options, [&](uint64_t, const engine::MessageView& r) {
    if (std::find(layout_.topics.begin(), layout_.topics.end(), r.topic) != layout_.topics.end()) {
      fn(r);
    }
  });
  if (!end.is_ok()) *problem = "scan: " + end.status().to_string();
  return end.is_ok();
}

void SteppedShardSim::query_queues() {
  const uint32_t queues = static_cast<uint32_t>(layout_.queues);
  queries_.assign(layout_.topics.size() * queues, Completion{});
  for (uint32_t i = 0; i < queries_.size(); i++) {
    const ShardRequest request =
        shard_request::QueryQueue{.tag = kQueryTag + i,
                                  .topic = layout_.topics[i / queues],
                                  .queue_id = static_cast<int32_t>(i % queues)};
    UMQ_ASSERT(slots_[0]->to_shard[0]->push(request));
    outstanding_++;
  }
  for (int guard = 0; outstanding_ > 0; guard++) {
    UMQ_ASSERT_MSG(guard < 100000, "queue queries are not answered");
    (void)shard_->step();
    take_completions();
  }
}

void SteppedShardSim::note(std::string* bad, const std::string& what) {
  if (bad->size() < 600) *bad += " " + what;
}

// Reads the whole log and holds it to the ledger.
bool SteppedShardSim::check(SimTotals& totals, std::string* problem) {
  std::map<uint64_t, SimSource> sources;            // key -> its records in the source topic
  std::map<uint64_t, std::vector<SimCopy>> copies;  // key -> its records in its topic
  std::map<uint64_t, int> plain;
  engine::CommitLogOptions log_options = o_.log;
  log_options.dir = kShardDir;
  std::string bad;
  auto end =
      engine::scan_log(*disk_, log_options, [&](uint64_t offset, const engine::MessageView& r) {
        note_record(offset, r);
        if (r.topic == kParkedScheduleTopic) {
          totals.parked++;
          return;
        }
        const bool user_topic = std::find(layout_.topics.begin(), layout_.topics.end(), r.topic) !=
                                layout_.topics.end();
        std::optional<uint64_t> key = key_of(r);
        if (key && *key == trace_key_) {
          std::printf("trace key %llu: @%llu %.*s/%d store_ms=%lld %.*s\n",
                      (unsigned long long)*key, (unsigned long long)offset,
                      static_cast<int>(r.topic.size()), r.topic.data(), r.queue_id,
                      (long long)r.store_timestamp_ms, static_cast<int>(r.user_properties.size()),
                      r.user_properties.data());
        }
        if (!key || *key >= puts_.size()) {
          if (user_topic) totals.phantom++;
          return;
        }
        const SimPut& p = puts_[*key];
        const bool body_ok = r.body.size() == p.body.size() &&
                             std::equal(r.body.begin(), r.body.end(), p.body.begin());
        if (r.topic == layout_.source_topic) {
          auto [it, first] = sources.try_emplace(
              *key, SimSource{offset, r.store_timestamp_ms, std::string(r.user_properties), 0});
          it->second.records++;
          if (!first) totals.rerouted++;
        } else if (user_topic && p.kind == SimPut::Kind::deferred) {
          copies[*key].push_back(SimCopy{
              r.store_timestamp_ms, r.queue_id, body_ok, r.topic == p.topic, offset,
              std::string(engine::find_property(r.user_properties, "__UMQ_DLV").value_or(""))});
        } else if (user_topic && p.kind == SimPut::Kind::plain) {
          plain[*key]++;
          if (!body_ok || r.queue_id != p.queue_id || r.topic != p.topic) totals.misrouted++;
        } else if (user_topic) {
          totals.phantom++, note(&bad, "control-stored:" + std::to_string(*key));
        }
      });
  if (!end.is_ok()) {
    *problem = "scan: " + end.status().to_string();
    return false;
  }
  for (const SimPut& p : puts_) {
    const std::string key = std::to_string(p.key);
    if (p.kind == SimPut::Kind::plain) {
      totals.acked_plain += p.acked ? 1 : 0;
      auto it = plain.find(p.key);
      const int n = it == plain.end() ? 0 : it->second;
      if (p.acked && n == 0 && may_be_lost(p)) {
        totals.async_lost++;
      } else if (p.acked && n == 0) {
        totals.plain_lost++, note(&bad, "plain-lost:" + key);
      }
      if (n > 1) totals.duplicated++, note(&bad, "plain-dup:" + key);
    } else if (p.kind == SimPut::Kind::deferred) {
      auto s = sources.find(p.key);
      auto c = copies.find(p.key);
      judge_deferred(p, s == sources.end() ? nullptr : &s->second,
                     c == copies.end() ? std::span<const SimCopy>() : std::span(c->second), totals,
                     &bad);
    }
  }
  check_more(totals, &bad);
  if (!bad.empty()) *problem = "ledger:" + bad;
  return bad.empty();
}

void SteppedShardSim::judge_deferred(const SimPut& p, const SimSource* source,
                                     std::span<const SimCopy> copies, SimTotals& totals,
                                     std::string* bad) {
  const std::string key = std::to_string(p.key);
  totals.acked_deferred += p.acked ? 1 : 0;
  totals.delivered += copies.size();
  if (source == nullptr && copies.empty() && may_be_lost(p)) {
    totals.async_lost++;  // acknowledged under ASYNC_FLUSH, gone with a power loss
    return;
  }
  const SimVerdict v = judge(p, source, copies);
  switch (v.expect) {
    case SimVerdict::Expect::once:
      if (p.acked && copies.empty()) totals.lost++, note(bad, "lost:" + key);
      if (!p.acked && v.sourced && copies.empty()) {
        totals.stranded++, note(bad, "stranded:" + key);  // stored, never delivered
      }
      break;
    case SimVerdict::Expect::never:
      totals.never_expected++;
      if (!copies.empty()) totals.delivered_never++, note(bad, "delivered-cancelled:" + key);
      break;
    case SimVerdict::Expect::at_most_once:
      totals.open_race++;
      totals.open_race_delivered += copies.empty() ? 0 : 1;
      break;
  }
  if (copies.size() > 1) {
    totals.duplicated++;
    std::string where;
    for (const SimCopy& c : copies) where += "@" + std::to_string(c.log_offset) + "=" + c.marker;
    note(bad, "dup:" + key + where);
  }
  if (!copies.empty() && !v.sourced) totals.phantom++, note(bad, "no-source:" + key);
  for (const SimCopy& c : copies) {
    if (c.queue_id != p.queue_id || !c.body_ok || !c.topic_ok) {
      totals.misrouted++, note(bad, "misrouted:" + key);
    }
    if (v.sourced && c.store_ms < v.not_before_ms) totals.early++, note(bad, "early:" + key);
  }
}

}  // namespace uringmq::testing
