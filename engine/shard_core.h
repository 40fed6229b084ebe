#pragma once
// ShardCore: the state of one shard that none of its parts owns alone: its identity and
// options, its clocks and disk, the CommitLog, the ConsumeQueues, the dispatcher, the consumer
// offsets and the record prefetch (opened by the Shard, in that order, closed by it in the
// reverse), the sessions' rings and the shard's figures. Every part of the shard holds one
// reference to it, as the broker's parts share the BrokerCore. It also remembers the damaged
// records already reported, so each is logged once whoever finds it.
//
// Invariant: the disk outlives everything opened on it (declared first, destroyed last).
// Threading: the shard's thread, except `stats` (read by any thread).

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/delivery/record_prefetch.h"
#include "engine/log/commit_log.h"
#include "engine/log/quarantine_file.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/consumer_offsets.h"
#include "engine/queues/dispatch.h"
#include "engine/shard_sessions.h"
#include "engine/shard_stats.h"
#include "engine/store.h"
#include "io/clock.h"
#include "io/disk.h"
#include "sched/delay_levels.h"

namespace uringmq {

// Canaries that break exactly-once delivery on purpose, so the crash simulations prove they can
// catch duplicates (and losses). Never set outside those tests (Shard::SteppedOptions).
struct ShardSteppedOptions {
  bool unsafe_ignore_delivery_markers = false;     // recovery does not read __UMQ_DLV
  bool unsafe_checkpoint_past_deliveries = false;  // checkpoint not held below deliveries
  bool unsafe_progress_before_durable = false;     // async_flush: commit progress when written
  bool unsafe_txn_ended_at_append = false;         // a half ended before its outcome is durable
};

struct ShardCore {
  static constexpr uint32_t kCorruptReportsKept = 1024;

  // disk: the stepped mode's (nullptr: the shard opens an io_uring of its own on its thread).
  ShardCore(uint32_t shard_index, const StoreOptions& store_options,
            const sched::DelayLevels& delay_levels,
            std::vector<std::unique_ptr<SessionSlot>>& slots, std::unique_ptr<io::Disk> own_disk,
            const ShardSteppedOptions& stepped_options);
  ShardCore(const ShardCore&) = delete;
  ShardCore& operator=(const ShardCore&) = delete;

  int64_t now_ms() const { return clock->monotonic_ns() / 1'000'000; }
  void post(uint32_t slot_index, const Completion& completion) {
    sessions.post(slot_index, completion);
  }
  // The path of the CommitLog segment at `base`.
  std::string segment_path(uint64_t base) const;
  // Logs a damaged record once (the last kCorruptReportsKept offsets are remembered) and counts
  // it; found_by names the reader (a pull, a delivery, the scrub).
  void note_corrupt(uint64_t log_offset, const char* reason, const char* found_by);
  // A record a reader refused: counted as refused, its failed check reported once.
  void refuse_corrupt(uint64_t log_offset, std::span<const std::byte> bytes, const char* found_by);

  const uint32_t index;
  const StoreOptions options;
  const ShardSteppedOptions stepped;
  const sched::DelayLevels levels;
  io::SystemClock system_clock;
  io::Clock* clock;
  std::string dir;  // <data_dir>/shard-<index>, set at open
  ShardSessions sessions;
  ShardStats stats;
  std::unique_ptr<io::Disk> disk;
  std::unique_ptr<engine::CommitLog> log;
  std::unique_ptr<engine::CqStore> cq;
  std::unique_ptr<engine::Dispatcher> dispatcher;
  std::unique_ptr<engine::ConsumerOffsets> offsets;
  std::unique_ptr<engine::RecordPrefetch> prefetch;
  // Damaged records kept aside (corruptRecordPolicy=repair), opened once recovered.
  std::unique_ptr<engine::QuarantineFile> quarantine;
  // A repair's write-back is in flight (ShardRepairs): retention deletes no segment meanwhile
  // (a deleted segment may be recycled as the next one, and the write must not land in it).
  bool repair_writing = false;

 private:
  std::array<uint64_t, kCorruptReportsKept> corrupt_reported_{};  // log offsets already logged
  uint32_t corrupt_reported_count_ = 0;
  uint32_t corrupt_reported_next_ = 0;
};

}  // namespace uringmq
