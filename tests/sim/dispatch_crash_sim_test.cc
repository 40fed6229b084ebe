// Goal: ConsumeQueues stay exact across crashes. After any crash (power loss or kill -9) and
// recovery (engine::open_log_and_queues, the sequence a shard runs at open),
// every record in the log has its unit at its queue offset, no queue has a unit for a record
// that is not in the log, queue offsets are contiguous from the queue's first, and every
// acknowledged append is present.
// Method: the shard's own sequence over SimDisk with seeded swarming (completion order, flush
// mode, io mode, tiny ConsumeQueue files so they roll, few units in memory so lookups go cold),
// crashing at random points; the checker reads every unit back through CqStore::read_units.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/log_scanner.h"
#include "engine/log/properties.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/dispatch.h"
#include "io/clock.h"
#include "testing/sim_disk.h"
#include "tests/support/env.h"
#include "tests/support/log_fixture.h"
#include "tests/support/rng.h"

namespace uringmq {
namespace {

// The workload generator (SimDisk has its own, from the same seed).
struct Rng : testing::Rng {
  explicit Rng(uint64_t seed) : testing::Rng(seed, 7) {}
};

const char* kTopics[] = {"OrderTopic", "PayTopic"};
const char* kTags[] = {"", "TagA", "TagB", "中文"};

struct World {
  io::SimDisk* disk;
  io::ManualClock* clock;
  engine::CommitLogOptions log_options;
  engine::CqStoreOptions cq_options;
};

struct Opened {
  std::unique_ptr<engine::CommitLog> log;
  std::unique_ptr<engine::CqStore> cq;
};

// The shard's own open sequence (recovery rebuilds the units in its scan, then settle).
io::Result<Opened> open_all(World& w) {
  auto opened = engine::open_log_and_queues(*w.disk, *w.clock, w.log_options, w.cq_options,
                                            sched::DelayLevels::defaults(), nullptr, nullptr);
  if (!opened.is_ok()) return opened.status();
  return Opened{std::move(opened->log), std::move(opened->cq)};
}

// Reads one unit through the cold path (the files), polling the disk.
std::optional<engine::CqUnit> read_unit(World& w, engine::CqStore& cq, engine::QueueIndex q,
                                        int64_t offset) {
  std::array<std::byte, engine::kCqUnitBytes> bytes{};
  if (!cq.read_units(q, QueueOffset{offset}, 1, bytes.data(), 1).is_ok()) return std::nullopt;
  std::array<engine::CqReadCompletion, 4> done;
  std::array<io::IoCompletion, 16> completions;
  for (int i = 0; i < 100000; i++) {
    if (cq.take_reads(done) > 0) {
      if (done[0].result != engine::kCqUnitBytes) return std::nullopt;
      return engine::decode_cq_unit(bytes);
    }
    size_t n = w.disk->poll(completions, io::Wait::at_least_one);
    for (size_t k = 0; k < n; k++) cq.complete(completions[k]);
  }
  return std::nullopt;
}

std::string check(World& w, engine::CqStore& cq) {
  std::map<std::pair<std::string, int32_t>, std::vector<std::pair<int64_t, engine::CqUnit>>> log;
  auto end =
      engine::scan_log(*w.disk, w.log_options, [&](uint64_t offset, const engine::MessageView& r) {
        log[{std::string(r.topic), r.queue_id}].push_back(
            {r.queue_offset,
             engine::unit_of(LogOffset{offset}, r, sched::DelayLevels::defaults())});
      });
  if (!end.is_ok()) return "scan: " + end.status().to_string();
  for (auto& [key, records] : log) {
    auto q = cq.queue(key.first, key.second, false);
    if (!q.is_ok()) return "queue " + key.first + " missing";
    int64_t expect = records.front().first;
    for (auto& [queue_offset, unit] : records) {
      if (queue_offset != expect) return "queue offsets not contiguous in the log";
      expect++;
      std::optional<engine::CqUnit> stored = read_unit(w, cq, *q, queue_offset);
      if (!stored || !(*stored == unit)) {
        return key.first + "/" + std::to_string(key.second) + " unit " +
               std::to_string(queue_offset) + " missing or wrong";
      }
    }
    if (cq.max_offset(*q) != QueueOffset{expect}) {
      return key.first + "/" + std::to_string(key.second) + " max offset " +
             std::to_string(cq.max_offset(*q).value) + ", log says " + std::to_string(expect);
    }
  }
  for (const engine::CqQueueInfo& info : cq.list_queues()) {
    if (!log.count({info.topic, info.queue_id}) && info.max_offset > info.min_offset) {
      return "queue " + info.topic + " has units but no records";
    }
  }
  return "";
}

struct Totals {
  uint64_t seeds = 0, cycles = 0, acked = 0, lost = 0, failures = 0, units_checked = 0;
};

void run_seed(uint64_t seed, Totals& totals, std::string* problem) {
  Rng rng(seed);
  io::SimDiskOptions disk_options;
  disk_options.seed = seed;
  disk_options.poll_complete_probability = 0.2 + 0.1 * static_cast<double>(rng.below(7));
  disk_options.crash_atomic_sectors = true;  // O_DIRECT seeds rewrite partly durable blocks
  io::SimDisk disk(disk_options);
  io::ManualClock clock;
  UMQ_ASSERT(disk.make_dir_tree_durable("/store").is_ok());
  World w{&disk, &clock, testing::small_log_options("/store/shard"), {}};
  w.cq_options.dir = "/store/shard/consumequeue";
  w.cq_options.units_per_file = 16 + rng.below(48);
  w.cq_options.memory_units_per_queue = 16;
  w.cq_options.flush_interval_ms = 50 + static_cast<int64_t>(rng.below(500));
  w.log_options.checkpoint_interval_ms = 100 + static_cast<int64_t>(rng.below(900));
  w.log_options.io_mode = rng.below(2) ? io::IoMode::direct : io::IoMode::buffered;
  std::map<std::pair<std::string, int32_t>, int64_t> next_offset;
  totals.seeds++;
  for (int cycle = 0; cycle < 3; cycle++) {
    const bool power = rng.below(3) != 0;
    w.log_options.flush_mode =
        power || rng.below(2) ? engine::FlushMode::sync_flush : engine::FlushMode::async_flush;
    auto opened = open_all(w);
    if (!opened.is_ok()) {
      *problem = "open: " + opened.status().to_string();
      return;
    }
    engine::CommitLog& log = *opened->log;
    engine::CqStore& cq = *opened->cq;
    // As the shard does: next offsets come from the queues. A queue whose only records a power
    // loss took (unacknowledged) may be gone with its directory: it starts again at 0.
    next_offset.clear();
    for (const engine::CqQueueInfo& info : cq.list_queues()) {
      next_offset[{info.topic, info.queue_id}] = info.max_offset.value;
    }
    struct Pending {
      engine::QueueIndex queue;
      int64_t queue_offset;
      engine::CqUnit unit;
    };
    std::vector<Pending> pending(8192);
    std::vector<uint64_t> acked_offsets;
    uint64_t steps = 50 + rng.below(500), tag = 0;
    engine::Dispatcher dispatcher(8192);
    dispatcher.set_dispatched(log.appended_offset());
    std::array<engine::Ack, 64> acks;
    std::array<io::IoCompletion, 64> done;
    for (uint64_t step = 0; step < steps && tag < pending.size(); step++) {
      if (rng.below(2) == 0) {
        std::string topic = kTopics[rng.below(2)];
        int32_t qid = static_cast<int32_t>(rng.below(2));
        testing::TestMessage m = testing::make_message(1, tag, 1 + rng.below(1500));
        m.topic = topic;
        const char* tagname = kTags[rng.below(4)];
        if (*tagname) engine::append_property(m.properties, "TAGS", tagname);
        engine::MessageInput in = m.input();
        in.queue_id = qid;
        int64_t& next = next_offset[{topic, qid}];
        auto r = log.append(in, next, tag);
        if (r.is_ok()) {
          auto q = cq.queue(topic, qid, true);
          UMQ_ASSERT(q.is_ok());
          pending[tag] = Pending{*q, next,
                                 engine::CqUnit{r->offset, r->size_bytes,
                                                engine::tags_code_of(*tagname ? tagname : "")}};
          next++;
          tag++;
        }
      }
      if (rng.below(5) == 0) clock.advance_ms(static_cast<int64_t>(rng.below(300)));
      log.submit_work();
      cq.submit_work();
      log.set_checkpoint_limit(cq.durable_dispatched().value);
      size_t n = disk.poll(done, rng.below(2) ? io::Wait::none : io::Wait::at_least_one);
      for (size_t i = 0; i < n; i++) {
        if (engine::CommitLog::owns(done[i].user_data))
          log.complete(done[i]);
        else
          cq.complete(done[i]);
      }
      log.submit_work();
      for (size_t k; dispatcher.has_room(acks.size()) && (k = log.take_acks(acks)) > 0;) {
        for (size_t i = 0; i < k; i++) {
          if (acks[i].outcome != engine::AckOutcome::ok) continue;
          const Pending& p = pending[acks[i].tag];
          dispatcher.push(engine::Dispatcher::Item{p.queue, QueueOffset{p.queue_offset}, p.unit});
          acked_offsets.push_back(p.unit.log_offset.value);
        }
      }
      io::Status pumped = dispatcher.pump(cq);
      if (!pumped.is_ok()) {
        *problem = "dispatch: " + pumped.to_string();
        return;
      }
    }
    if (power)
      disk.crash();
    else
      disk.crash_process();
    opened->cq.reset();
    opened->log.reset();
    totals.cycles++;
    auto reopened = open_all(w);
    if (!reopened.is_ok()) {
      *problem = "recovery: " + reopened.status().to_string();
      return;
    }
    std::string bad = check(w, *reopened->cq);
    if (!bad.empty()) {
      *problem = bad;
      return;
    }
    std::map<uint64_t, bool> present;
    auto end = engine::scan_log(
        disk, w.log_options,
        [&](uint64_t offset, const engine::MessageView&) { present[offset] = true; });
    for (uint64_t offset : acked_offsets) {
      totals.acked++;
      if (!present.count(offset)) totals.lost++;
    }
    reopened->cq.reset();
    reopened->log.reset();
    disk.crash_process();  // release locks; the next cycle recovers again
  }
}

TEST(DispatchCrashSim, ConsumeQueuesMatchTheLogAfterEveryCrash) {
  const char* one = std::getenv("URINGMQ_SEED");
  const uint64_t first = testing::env_u64("URINGMQ_SEED", 1);
  const uint64_t seeds = one ? 1 : testing::env_u64("URINGMQ_SIM_SEEDS", 400);
  Totals totals;
  for (uint64_t seed = first; seed < first + seeds; seed++) {
    std::string problem;
    run_seed(seed, totals, &problem);
    if (!problem.empty()) {
      totals.failures++;
      ADD_FAILURE() << "seed " << seed << ": " << problem << "\nreproduce: URINGMQ_SEED=" << seed
                    << " ctest -R dispatch_crash_sim_test";
    }
  }
  std::printf("dispatch-summary: seeds=%llu cycles=%llu acked=%llu lost=%llu failures=%llu\n",
              (unsigned long long)totals.seeds, (unsigned long long)totals.cycles,
              (unsigned long long)totals.acked, (unsigned long long)totals.lost,
              (unsigned long long)totals.failures);
  EXPECT_EQ(totals.failures, 0u);
  EXPECT_EQ(totals.lost, 0u);
  EXPECT_GT(totals.acked, 0u);
}

}  // namespace
}  // namespace uringmq
