// Goal: delayed delivery is exactly-once across crashes at random points (issue 5): after any
// power loss (unsynced pages kept, dropped or torn) or kill -9, and recovery, every delayed
// message whose put was acknowledged is delivered to its real topic and queue exactly once, never
// before its deliver time; no message is delivered twice, none appears from nowhere; every
// acknowledged plain message is present; what the log holds is what the queues show.
// Method: the real Shard (engine/shard.cc, shard_schedule.cc: batched head delivery, the
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

#include <array>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/dispatch.h"
#include "engine/log_scanner.h"
#include "engine/properties.h"
#include "engine/shard.h"
#include "io/clock.h"
#include "io/sim_disk.h"
#include "sched/delay_levels.h"
#include "tests/support/env.h"
#include "tests/support/log_fixture.h"
#include "tests/support/rng.h"

namespace uringmq {
namespace {

constexpr std::string_view kLevels = "10ms 50ms 200ms 1s";
constexpr std::string_view kDelayTopic = "DelayTopic";
constexpr std::string_view kPlainTopic = "PlainTopic";
constexpr int32_t kQueues = 3;
constexpr uint32_t kWindow = 256;  // session ring size: requests outstanding at most
constexpr const char* kStoreDir = "/store";
constexpr const char* kShardDir = "/store/shard-0";

// The workload generator (SimDisk has its own, from the same seed).
struct Rng : testing::Rng {
  explicit Rng(uint64_t seed) : testing::Rng(seed, 11) {}
};

// The SimDisk outlives every shard that runs on it (a crash destroys the shard, not the disk):
// each shard gets this non-owning view of it.
class BorrowedDisk final : public io::Disk {
 public:
  explicit BorrowedDisk(io::Disk& disk) : d_(disk) {}
  io::Result<io::FileHandle> open(std::string_view path, io::OpenMode mode,
                                  io::IoMode io_mode) override {
    return d_.open(path, mode, io_mode);
  }
  void close(io::FileHandle file) override { d_.close(file); }
  io::Result<uint64_t> size(io::FileHandle file) override { return d_.size(file); }
  io::Status truncate(io::FileHandle file, uint64_t size_bytes) override {
    return d_.truncate(file, size_bytes);
  }
  io::Status rename(std::string_view from, std::string_view to) override {
    return d_.rename(from, to);
  }
  io::Status remove(std::string_view path) override { return d_.remove(path); }
  io::Status make_dir(std::string_view path) override { return d_.make_dir(path); }
  io::Result<std::vector<std::string>> list_dir(std::string_view path) override {
    return d_.list_dir(path);
  }
  io::Result<bool> exists(std::string_view path) override { return d_.exists(path); }
  io::Status lock(std::string_view path) override { return d_.lock(path); }
  void unlock(std::string_view path) override { d_.unlock(path); }
  io::Status submit(const io::IoRequest& request) override { return d_.submit(request); }
  size_t poll(std::span<io::IoCompletion> out, io::Wait wait) override {
    return d_.poll(out, wait);
  }
  size_t in_flight() const override { return d_.in_flight(); }
  io::Status register_buffers(std::span<const std::span<std::byte>> buffers) override {
    return d_.register_buffers(buffers);
  }
  void unregister_buffers() override { d_.unregister_buffers(); }

 private:
  io::Disk& d_;
};

// One put. Kept in a deque: the shard reads topic, properties and body through views until the
// put's completion, so they never move.
struct Put {
  uint64_t key = 0;
  uint32_t level = 0;  // clamped; 0: plain
  int32_t queue_id = 0;
  bool acked = false;
  // async_flush: acknowledged when written. Until a clean stop it may not be durable; a power
  // loss in that time may take it (may_be_lost), but if its record survived it must be served.
  bool unflushed = false;
  bool may_be_lost = false;
  std::string topic;
  std::string properties;
  std::vector<std::byte> body;
};

std::vector<std::byte> body_of(uint64_t key, uint32_t size_bytes) {
  std::vector<std::byte> body(size_bytes);
  uint64_t x = key * 0x9E3779B97F4A7C15ULL + 1;
  for (uint32_t i = 0; i < size_bytes; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    body[i] = static_cast<std::byte>(x);
  }
  return body;
}

struct Totals {
  uint64_t seeds = 0, cycles = 0, power_crashes = 0, process_crashes = 0, clean_stops = 0;
  uint64_t crashes_in_persist = 0, crashes_after_delivery = 0;
  uint64_t acked_delayed = 0, acked_plain = 0, delivered = 0, lost = 0, duplicated = 0;
  uint64_t early = 0, phantom = 0, misrouted = 0, stranded = 0, plain_lost = 0, parked = 0;
  uint64_t invisible = 0, failures = 0;
  uint64_t async_power_crashes = 0, async_lost = 0;  // acknowledged unflushed, gone: allowed
};

struct SeedOptions {
  Shard::SteppedOptions stepped;
  bool canary = false;
};

// What the shard is fed and what came back, across every cycle of a seed.
class Harness {
 public:
  Harness(uint64_t seed, const SeedOptions& seed_options)
      : rng_(seed), seed_options_(seed_options), levels_(*sched::DelayLevels::parse(kLevels)) {
    io::SimDiskOptions d;
    d.seed = seed;
    d.poll_complete_probability = 0.1 + 0.8 * rng_.unit();
    o_.log = testing::small_log_options("");
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
    o_.clock = &clock_;
    o_.message_delay_level = std::string(kLevels);
    o_.clean_interval_ms = int64_t{1} << 40;  // retention never runs (it asks the real fs)
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
    max_body_bytes_ = 1 + static_cast<uint32_t>(rng_.below(2000));
    max_advance_ms_ = 1 + static_cast<int64_t>(rng_.below(100));
  }

  // One cycle: open (recover), a workload, then a crash (or a clean stop).
  bool cycle(Totals& totals, std::string* problem) {
    const int kind = static_cast<int>(rng_.below(6));  // 0-3 power loss, 4 kill -9, 5 clean
    const bool power = kind <= 3;
    o_.log.flush_mode =
        rng_.below(2) == 0 ? engine::FlushMode::sync_flush : engine::FlushMode::async_flush;
    if (!open(problem)) return false;
    const uint64_t steps = 50 + rng_.below(800);
    const uint64_t crash_at = rng_.below(steps);
    const int trigger = static_cast<int>(rng_.below(3));  // 0 step, 1 persist, 2 delivery
    const int puts_per_step = 1 + static_cast<int>(rng_.below(4));
    for (uint64_t step = 0; step < steps; step++) {
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
      std::printf("cycle end: kind=%d trigger=%d puts=%zu delivered=%llu pending=%lld\n", kind,
                  trigger, puts_.size(), (unsigned long long)delivered_count(),
                  (long long)pending_count());
    }
    if (kind == 5) {
      totals.clean_stops++;
      io::Status s = shard_->close_stepped();
      shard_.reset();
      if (!s.is_ok()) *problem = "clean stop: " + s.to_string();
      for (Put& p : puts_) p.unflushed = false;  // the stop flushed the log
      return s.is_ok();
    }
    if (power) {
      disk_->crash();
      totals.power_crashes++;
      if (o_.log.flush_mode == engine::FlushMode::async_flush) totals.async_power_crashes++;
      for (Put& p : puts_) {
        p.may_be_lost = p.may_be_lost || p.unflushed;
        p.unflushed = false;  // what survived the crash image is on the disk
      }
    } else {
      disk_->crash_process();
      totals.process_crashes++;
    }
    shard_.reset();
    return true;
  }

  // Opens once more, lets every level run dry (the clock past every deliver time), stops
  // cleanly, then opens and runs again: a clean restart must deliver nothing more.
  bool drain(std::string* problem) {
    for (int round = 0; round < 2; round++) {
      o_.log.flush_mode = engine::FlushMode::sync_flush;
      if (!open(problem)) return false;
      const int64_t until_ms = clock_.now_ms() + levels_.delay_ms(levels_.max_level()) + 100;
      for (uint64_t guard = 0;; guard++) {
        if (guard > 2'000'000) {
          *problem = "delivery does not finish: " + std::to_string(pending_count()) + " pending";
          return false;
        }
        const bool worked = shard_->step();
        take_completions();
        if (clock_.now_ms() >= until_ms && pending_count() == 0 && disk_->in_flight() == 0) {
          break;
        }
        idle_or_tick(worked);
      }
      if (round == 0 && !check_visible(problem)) return false;
      io::Status s = shard_->close_stepped();
      shard_.reset();
      if (!s.is_ok()) {
        *problem = "final stop: " + s.to_string();
        return false;
      }
    }
    return true;
  }

  // Reads the whole log and holds it to the ledger.
  bool check(Totals& totals, std::string* problem) {
    struct Scheduled {
      int64_t store_ms = 0;
    };
    struct Copy {
      int64_t store_ms = 0;
      int32_t queue_id = 0;
      bool body_ok = false;
      uint64_t offset = 0;
      std::string marker;
    };
    std::map<uint64_t, Scheduled> scheduled;          // key -> its record in the schedule topic
    std::map<uint64_t, std::vector<Copy>> delivered;  // key -> its records in the real topic
    std::map<uint64_t, int> plain;
    engine::CommitLogOptions log_options = o_.log;
    log_options.dir = kShardDir;
    std::string bad;
    auto key_of = [](const engine::MessageView& r) -> std::optional<uint64_t> {
      auto k = engine::find_property(r.user_properties, "K");
      if (!k) return std::nullopt;
      return std::stoull(std::string(*k));
    };
    auto end =
        engine::scan_log(*disk_, log_options, [&](uint64_t offset, const engine::MessageView& r) {
          std::optional<uint64_t> key = key_of(r);
          if (r.topic == kParkedScheduleTopic) {
            totals.parked++;
            return;
          }
          if (!key || *key >= puts_.size()) {
            if (r.topic == kDelayTopic || r.topic == kPlainTopic) totals.phantom++;
            return;
          }
          const Put& p = puts_[*key];
          const bool body_ok = r.body.size() == p.body.size() &&
                               std::equal(r.body.begin(), r.body.end(), p.body.begin());
          if (r.topic == engine::kScheduleTopic) {
            scheduled[*key] = Scheduled{r.store_timestamp_ms};
          } else if (r.topic == kDelayTopic) {
            delivered[*key].push_back(Copy{
                r.store_timestamp_ms, r.queue_id, body_ok, offset,
                std::string(engine::find_property(r.user_properties, "__UMQ_DLV").value_or(""))});
          } else if (r.topic == kPlainTopic) {
            plain[*key]++;
            if (!body_ok || r.queue_id != p.queue_id) totals.misrouted++;
          }
        });
    if (!end.is_ok()) {
      *problem = "scan: " + end.status().to_string();
      return false;
    }
    auto note = [&](const std::string& what) {
      if (bad.size() < 600) bad += " " + what;
    };
    for (const Put& p : puts_) {
      const std::string key = std::to_string(p.key);
      if (p.level == 0) {
        totals.acked_plain += p.acked ? 1 : 0;
        auto it = plain.find(p.key);
        const int copies = it == plain.end() ? 0 : it->second;
        if (p.acked && copies == 0 && p.may_be_lost) {
          totals.async_lost++;
        } else if (p.acked && copies == 0) {
          totals.plain_lost++, note("plain-lost:" + key);
        }
        if (copies > 1) totals.duplicated++, note("plain-dup:" + key);
        continue;
      }
      totals.acked_delayed += p.acked ? 1 : 0;
      auto s = scheduled.find(p.key);
      auto d = delivered.find(p.key);
      const size_t copies = d == delivered.end() ? 0 : d->second.size();
      totals.delivered += copies;
      // An unflushed put lost with its record is allowed; a record that survived must be served.
      if (p.acked && copies == 0 && p.may_be_lost && s == scheduled.end()) {
        totals.async_lost++;
      } else if (p.acked && copies == 0) {
        totals.lost++, note("lost:" + key);
      }
      if (copies > 1) {
        totals.duplicated++;
        std::string where;
        for (const Copy& c : d->second) where += "@" + std::to_string(c.offset) + "=" + c.marker;
        note("dup:" + key + where);
      }
      if (s != scheduled.end() && copies == 0 && !p.acked) {
        totals.stranded++, note("stranded:" + key);  // stored, never delivered
      }
      if (copies > 0 && s == scheduled.end()) totals.phantom++, note("no-source:" + key);
      for (size_t i = 0; i < copies; i++) {
        const Copy& c = d->second[i];
        if (c.queue_id != p.queue_id || !c.body_ok) totals.misrouted++, note("misrouted:" + key);
        if (s != scheduled.end() && c.store_ms < s->second.store_ms + levels_.delay_ms(p.level)) {
          totals.early++, note("early:" + key);
        }
      }
    }
    for (const auto& [key, copies] : delivered) {
      if (puts_[key].level == 0) totals.phantom++, note("phantom:" + std::to_string(key));
    }
    if (!bad.empty()) *problem = "ledger:" + bad;
    return bad.empty();
  }

  uint64_t invisible() const { return invisible_; }

 private:
  bool open(std::string* problem) {
    slots_.clear();
    auto slot = std::make_unique<SessionSlot>();
    slot->to_shard.push_back(std::make_unique<sched::SpscRing<ShardRequest>>(kWindow));
    slot->from_shard.push_back(std::make_unique<sched::SpscRing<Completion>>(kWindow));
    slot->in_use.store(true);
    slot->active.store(true);
    slots_.push_back(std::move(slot));
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
                  (unsigned long long)report.scan_start_offset,
                  (unsigned long long)report.end_offset,
                  (unsigned long long)report.torn_bytes_truncated);
    }
    return true;
  }

  // A delayed put (levels 1..5; 5 is above the table and clamps to 4) or a plain one.
  void put() {
    if (outstanding_ >= kWindow) return;
    Put& p = puts_.emplace_back();
    p.key = puts_.size() - 1;
    p.queue_id = static_cast<int32_t>(rng_.below(kQueues));
    const bool delayed = rng_.below(4) != 0;
    p.topic = delayed ? kDelayTopic : kPlainTopic;
    engine::append_property(p.properties, "K", std::to_string(p.key));
    if (rng_.below(2) == 0)
      engine::append_property(p.properties, "TAGS", "T" + std::to_string(p.queue_id));
    if (delayed) {
      const int64_t requested = 1 + static_cast<int64_t>(rng_.below(5));
      p.level = levels_.clamp(requested);
      engine::append_property(p.properties, "DELAY", std::to_string(requested));
    }
    p.body = body_of(p.key, 1 + static_cast<uint32_t>(rng_.below(max_body_bytes_)));
    ShardRequest request;
    request.kind = ShardRequest::Kind::append;
    request.tag = p.key;
    request.input.topic = p.topic;
    request.input.queue_id = p.queue_id;
    request.input.body = p.body;
    request.input.properties = p.properties;
    request.input.born_timestamp_ms = clock_.now_ms();
    request.input.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 40000);
    request.input.store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
    UMQ_ASSERT(slots_[0]->to_shard[0]->push(request));
    outstanding_++;
  }

  void take_completions() {
    Completion c;
    while (slots_[0]->from_shard[0]->pop(&c)) {
      UMQ_ASSERT(outstanding_ > 0);
      outstanding_--;
      if (c.tag >= kQueryTag) {
        queries_[c.tag - kQueryTag] = c;
        continue;
      }
      if (c.code != io::Code::ok) continue;
      puts_[c.tag].acked = true;
      puts_[c.tag].unflushed = o_.log.flush_mode == engine::FlushMode::async_flush;
    }
  }

  // As the shard thread sleeps when idle: with nothing in flight the clock moves to the next
  // timed step (at most max_advance_ms_); otherwise time passes now and then while IO runs.
  void idle_or_tick(bool worked) {
    if (!worked && disk_->in_flight() == 0) {
      const int64_t now_mono_ms = clock_.monotonic_ns() / 1'000'000;
      clock_.advance_ms(
          std::clamp<int64_t>(shard_->next_deadline_ms() - now_mono_ms, 1, max_advance_ms_));
    } else if (rng_.below(4) == 0) {
      clock_.advance_ms(
          static_cast<int64_t>(rng_.below(static_cast<uint64_t>(max_advance_ms_) + 1)));
    }
  }

  uint64_t delivered_count() const {
    std::vector<DelayLevelStats> stats(levels_.max_level());
    shard_->add_delay_level_stats(stats);
    uint64_t n = 0;
    for (const DelayLevelStats& s : stats) n += s.delivered;
    return n;
  }
  int64_t pending_count() const {
    std::vector<DelayLevelStats> stats(levels_.max_level());
    shard_->add_delay_level_stats(stats);
    int64_t n = 0;
    for (const DelayLevelStats& s : stats) n += s.pending;
    return n;
  }

  // What consumers see: each real queue's units match its records in the log (count of records
  // = max - min offset; the dispatch simulation checks the units themselves).
  bool check_visible(std::string* problem) {
    std::map<std::pair<std::string, int32_t>, int64_t> records;
    engine::CommitLogOptions log_options = o_.log;
    log_options.dir = kShardDir;
    auto end = engine::scan_log(*disk_, log_options, [&](uint64_t, const engine::MessageView& r) {
      if (r.topic == kDelayTopic || r.topic == kPlainTopic) {
        records[{std::string(r.topic), r.queue_id}]++;
      }
    });
    if (!end.is_ok()) {
      *problem = "scan: " + end.status().to_string();
      return false;
    }
    queries_.assign(2 * kQueues, Completion{});
    std::array<std::string_view, 2> topics = {kDelayTopic, kPlainTopic};
    for (uint32_t i = 0; i < queries_.size(); i++) {
      ShardRequest request;
      request.kind = ShardRequest::Kind::query_queue;
      request.tag = kQueryTag + i;
      request.input.topic = topics[i / kQueues];
      request.input.queue_id = static_cast<int32_t>(i % kQueues);
      UMQ_ASSERT(slots_[0]->to_shard[0]->push(request));
      outstanding_++;
    }
    for (int guard = 0; outstanding_ > 0; guard++) {
      UMQ_ASSERT_MSG(guard < 100000, "queue queries are not answered");
      (void)shard_->step();
      take_completions();
    }
    for (uint32_t i = 0; i < queries_.size(); i++) {
      const int64_t in_log =
          records[{std::string(topics[i / kQueues]), static_cast<int32_t>(i % kQueues)}];
      if (queries_[i].max_offset - queries_[i].min_offset != in_log) {
        invisible_++;
        *problem = std::string(topics[i / kQueues]) + "/" + std::to_string(i % kQueues) +
                   " shows " + std::to_string(queries_[i].max_offset - queries_[i].min_offset) +
                   " units, the log holds " + std::to_string(in_log) + " records";
        return false;
      }
    }
    return true;
  }

  static constexpr uint64_t kQueryTag = uint64_t{1} << 40;
  Rng rng_;
  SeedOptions seed_options_;
  sched::DelayLevels levels_;
  io::ManualClock clock_;
  std::unique_ptr<io::SimDisk> disk_;
  StoreOptions o_;
  std::vector<std::unique_ptr<SessionSlot>> slots_;
  std::unique_ptr<Shard> shard_;
  std::deque<Put> puts_;
  std::vector<Completion> queries_;
  uint32_t outstanding_ = 0;
  uint32_t max_body_bytes_ = 1;
  int64_t max_advance_ms_ = 1;
  uint64_t invisible_ = 0;
  const bool verbose_ = std::getenv("URINGMQ_SIM_VERBOSE") != nullptr;
};

void run_seed(uint64_t seed, const SeedOptions& seed_options, Totals& totals,
              std::string* problem) {
  Harness h(seed, seed_options);
  totals.seeds++;
  Rng cycles_rng(seed ^ 0x5EED);
  const uint64_t cycles = 2 + cycles_rng.below(3);
  for (uint64_t c = 0; c < cycles; c++) {
    if (!h.cycle(totals, problem)) {
      *problem = "cycle " + std::to_string(c) + ": " + *problem;
      return;
    }
  }
  if (!h.drain(problem)) return;
  totals.invisible += h.invisible();
  (void)h.check(totals, problem);
}

void print_summary(const char* mode, const Totals& t) {
  std::printf(
      "schedule-summary: mode=%s seeds=%llu cycles=%llu power_crashes=%llu "
      "process_crashes=%llu clean_stops=%llu crashes_in_persist=%llu "
      "crashes_after_delivery=%llu acked_delayed=%llu acked_plain=%llu delivered=%llu "
      "lost=%llu duplicated=%llu early=%llu phantom=%llu misrouted=%llu stranded=%llu "
      "plain_lost=%llu parked=%llu invisible=%llu failures=%llu async_power_crashes=%llu "
      "async_lost=%llu\n",
      mode, (unsigned long long)t.seeds, (unsigned long long)t.cycles,
      (unsigned long long)t.power_crashes, (unsigned long long)t.process_crashes,
      (unsigned long long)t.clean_stops, (unsigned long long)t.crashes_in_persist,
      (unsigned long long)t.crashes_after_delivery, (unsigned long long)t.acked_delayed,
      (unsigned long long)t.acked_plain, (unsigned long long)t.delivered,
      (unsigned long long)t.lost, (unsigned long long)t.duplicated, (unsigned long long)t.early,
      (unsigned long long)t.phantom, (unsigned long long)t.misrouted,
      (unsigned long long)t.stranded, (unsigned long long)t.plain_lost,
      (unsigned long long)t.parked, (unsigned long long)t.invisible,
      (unsigned long long)t.failures, (unsigned long long)t.async_power_crashes,
      (unsigned long long)t.async_lost);
}

TEST(ScheduleCrashSim, DelayedMessagesAreDeliveredExactlyOnceAcrossCrashes) {
  const uint64_t first = testing::env_u64("URINGMQ_SEED", 1);
  const uint64_t seeds =
      std::getenv("URINGMQ_SEED") ? 1 : testing::env_u64("URINGMQ_SCHEDULE_SIM_SEEDS", 500);
  Totals totals;
  for (uint64_t seed = first; seed < first + seeds; seed++) {
    std::string problem;
    run_seed(seed, SeedOptions{}, totals, &problem);
    if (!problem.empty()) {
      totals.failures++;
      ADD_FAILURE() << "seed " << seed << ": " << problem << "\nreproduce: URINGMQ_SEED=" << seed
                    << " ctest -R schedule_crash_sim_test";
    }
  }
  print_summary("exactly-once", totals);
  EXPECT_EQ(totals.failures, 0u);
  EXPECT_EQ(totals.lost, 0u);
  EXPECT_EQ(totals.duplicated, 0u);
  EXPECT_EQ(totals.early, 0u);
  EXPECT_EQ(totals.phantom, 0u);
  EXPECT_GT(totals.acked_delayed, 0u);
  EXPECT_GT(totals.power_crashes, 0u);
  EXPECT_GT(totals.process_crashes, 0u);
  if (seeds >= 100) {
    EXPECT_GT(totals.async_power_crashes, 0u);
  }
}

// Each canary breaks one half of exactly-once; the simulation must see duplicates within a few
// seeds, or it could not have seen them in the real code either.
void expect_canary_caught(const char* mode, const Shard::SteppedOptions& stepped,
                          uint64_t Totals::*caught = &Totals::duplicated, uint64_t seeds = 50) {
  Totals totals;
  SeedOptions seed_options{stepped, true};
  for (uint64_t seed = 1; seed <= seeds && totals.*caught == 0; seed++) {
    std::string problem;
    run_seed(seed, seed_options, totals, &problem);
  }
  print_summary(mode, totals);
  EXPECT_GT(totals.*caught, 0u) << mode << ": the simulation did not catch the canary";
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
  expect_canary_caught("canary-progress-before-durable",
                       {.unsafe_progress_before_durable = true}, &Totals::lost, 500);
}

}  // namespace
}  // namespace uringmq
