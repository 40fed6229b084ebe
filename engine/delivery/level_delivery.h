#pragma once
// LevelDelivery: delay levels (RocketMQ 4's ScheduleMessageService semantics) in one shard.
//
// Put: a message with DELAY=L > 0 is stored in SCHEDULE_TOPIC_XXXX queue L-1 (L clamped to the
// table's maximum) with REAL_TOPIC and REAL_QID saved (rewrite); its unit's tagsCode is the
// deliver time, store time + delay(L). Each level is FIFO in deliver time, so only its head is
// examined.
//
// Delivery (run): each step looks at every level's head; a head whose time has come (or whose
// time lies beyond now + delay(L): the clock went back, correctDeliverTimestamp) is rebuilt as
// messageTimeup does (real topic and queue, body, flag, sysflag, born time and host, reconsume
// times, properties without DELAY; tag hash recomputed) plus the marker
// __UMQ_DLV = "<level>:<schedule offset>", and appended through the host. Heads are taken up to
// delivery_lead_ms before their time (TakeHorizon) and their copies held back from consumers
// until it (HeldCopies): never visible early.
//
// Exactly once: a level's progress moves when the delivery's append is acknowledged (acked), and
// is committed to the shard's consumer-offsets table (group %SCHEDULE_PROGRESS%). Until that
// table is persisted, low_water() keeps the CommitLog's checkpoint below the delivered record, so
// recovery's rescan sees it: progress after a crash = max(persisted progress, every marker found
// + 1) (note_marker, load_progress). A delivery that keeps failing is parked
// (SCHEDULE_PARKED_XXXX) after schedule_max_attempts.
//
// Invariants (asserted): per level progress <= issued (progress never passes what was issued);
// acknowledgements come in log order; the low-water mark only moves forward.
// Threading: the owning shard's thread, except add_stats() (any thread; relaxed atomics).

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <uringmq/store.h>

#include "engine/delivery/delivery_host.h"
#include "engine/delivery/take_horizon.h"
#include "engine/log/message_codec.h"
#include "engine/log/property_scan.h"
#include "engine/metrics_histogram.h"
#include "io/populated_memory.h"
#include "sched/completion_tags.h"
#include "sched/delay_levels.h"

namespace uringmq::engine {

class LevelDelivery {
 public:
  // Read tags (CommitLog records and ConsumeQueue units) carry one of these bits, and the level.
  static constexpr uint64_t kReadBit = sched::read_tag::kSchedule;
  static constexpr uint64_t kUnitsAheadBit =
      sched::read_tag::kUnitsAhead;  // a level's units read ahead
  // A batch: up to kBatch due heads of one level, their records read (memory or io_uring,
  // concurrently) into one arena, then delivered in order.
  static constexpr uint32_t kBatch = 64;
  // Records of heads due within this many ms (beyond the lead) are read ahead.
  static constexpr int64_t kPrefetchAheadMs = 20;

  struct Options {
    uint32_t max_attempts = 0;  // StoreOptions::schedule_max_attempts
    CodecLimits limits;         // of the CommitLog's records
    size_t arena_bytes = 0;     // at least one largest record
    // Canaries of the exactly-once simulation (Shard::SteppedOptions); never set elsewhere.
    bool unsafe_ignore_delivery_markers = false;
    bool unsafe_checkpoint_past_deliveries = false;
  };
  LevelDelivery(DeliveryHost& host, TakeHorizon& horizon, const sched::DelayLevels& levels,
                const Options& options);

  // Rewrites a delayed message for the schedule topic (level 0: not delayed, `out` untouched);
  // false when its DELAY is not a number.
  bool rewrite(const MessageInput& in, MessageInput* out, uint32_t* level);
  // The same with the append's one scan of in.properties (property_scan.h).
  bool rewrite(const MessageInput& in, const PropertyScan& scan, MessageInput* out,
               uint32_t* level);
  // Recovery's scan: a delivery marker moves its level's progress past it (`scan`: the
  // record's properties, scanned once).
  void note_marker(uint64_t log_offset, const PropertyScan& scan);
  // After recovery: progress from the table and the markers; sizes the arena.
  void load_progress();

  // One step: reads ahead the heads due soon (once per ms), then delivers due heads.
  void prefetch_due_soon(int64_t now_ms);
  void run(int64_t now_ms);
  // Wall ms the levels need the loop at (INT64_MAX: never; none while a batch's reads fly).
  int64_t due_wall_ms() const;
  // The lowest delivered record whose progress is not persisted yet (UINT64_MAX: none).
  uint64_t low_water();
  bool busy() const { return stage_ != Stage::none; }

  // Completions: the acknowledgement of a delivery of `level`, and the part's reads.
  void acked(uint32_t level, uint64_t log_offset, bool ok);
  void unit_ready(int64_t result);
  void record_ready(int64_t result);
  void units_ahead_ready(int64_t result);

  void publish_stats();
  // Adds the figures into `out` (indexed by level - 1).
  void add_stats(std::vector<DelayLevelStats>& out) const;
  // Adds how far behind their deliver times deliveries were appended (any thread).
  void add_lateness(StoreHistogram& out) const { lateness_ms_.add_to(out); }

 private:
  struct LevelState {
    bool exists = false;
    QueueIndex queue = 0;
    int64_t progress = 0;   // every schedule offset below it is delivered (acknowledged)
    int64_t issued = 0;     // deliveries appended up to here (>= progress)
    uint32_t attempts = 0;  // failed appends of the head at `issued`
    int64_t due_wall_ms = INT64_MAX;
    int64_t head_offset = -1;  // the head at this offset is due at head_due_ms (not yet)
    int64_t head_due_ms = 0;
    // The last units read from the level's queue file: [ahead_from, ahead_from + ahead_count).
    // A head older than the units kept in memory then costs one read per kBatch deliveries, not
    // one per batch, and the next heads' records can be read ahead. The next kBatch units are
    // read ahead once fewer than half a batch is left in view.
    std::array<CqUnit, 2 * kBatch> ahead{};
    uint32_t ahead_count = 0;
    int64_t ahead_from = 0;
    int64_t prefetched_upto = 0;  // units below this were offered to the prefetch
    std::atomic<int64_t> stat_pending{0};
    std::atomic<int64_t> stat_next_ms{INT64_MAX};
    std::atomic<uint64_t> stat_delivered{0};
    std::atomic<uint64_t> stat_parked{0};
    std::atomic<uint64_t> stat_deleted{0};
  };
  enum class Stage : uint8_t { none, unit, record };

  int64_t level_due_ms(uint32_t level, int64_t deliver_ms, int64_t now) const;
  bool head_not_due_by(const LevelState& state, uint32_t level, int64_t t, int64_t now) const;
  size_t level_units(const LevelState& state, int64_t from, std::span<CqUnit> out) const;
  void read_level_units_ahead(LevelState& state, uint32_t level);
  bool start_batch(uint32_t level, uint32_t units);
  void deliver_batch();
  bool deliver_record(uint32_t level, std::span<const std::byte> bytes, int64_t due_ms);
  void skip_deleted_level_units(LevelState& state, uint32_t level);

  DeliveryHost& host_;
  TakeHorizon& horizon_;
  const sched::DelayLevels levels_;
  const Options options_;
  std::vector<LevelState> states_;  // index level - 1
  Stage stage_ = Stage::none;
  uint32_t batch_level_ = 0;
  CqUnit unit_;  // the unit of the record deliver_record() is handling
  std::array<CqUnit, kBatch> batch_units_{};
  std::array<uint32_t, kBatch> batch_at_{};  // arena offset of each record
  std::array<int64_t, kBatch> batch_due_{};  // deliver time of each record
  uint32_t batch_count_ = 0;
  uint32_t batch_reads_ = 0;  // reads outstanding
  bool batch_failed_ = false;
  std::array<std::byte, kBatch * kCqUnitBytes> unit_bytes_{};
  io::PopulatedMemory arena_;  // the batch's records
  std::string properties_;     // rewritten properties (capacity kept)
  uint32_t rr_ = 0;
  size_t queues_seen_ = SIZE_MAX;  // queue_count() when levels were last looked up
  // Deliveries whose progress is committed but not yet persisted: (log offset, cycles needed).
  std::vector<std::pair<uint64_t, uint64_t>> unpersisted_;
  uint64_t last_low_water_ = 0;
  uint64_t first_marker_offset_ = UINT64_MAX;  // lowest delivery record recovery's scan saw
  int64_t last_prefetch_ms_ = INT64_MIN;
  uint32_t units_ahead_level_ = 0;  // the level whose units are being read ahead (0: none)
  int64_t units_ahead_from_ = 0;
  std::array<std::byte, kBatch * kCqUnitBytes> units_ahead_bytes_{};
  AtomicHistogram lateness_ms_{kLatenessBoundsMs};  // real-queue deliveries only
};

}  // namespace uringmq::engine
