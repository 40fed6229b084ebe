#pragma once
// Shard: one thread pinned to one CPU that owns an io_uring (UringDisk), a CommitLog and the
// queues hashed to it. Its reactor loop takes requests from every session's ring, appends and
// reads through the CommitLog, reaps disk completions, and posts completions back; when there
// is nothing to do it sleeps in io_uring_enter, woken by disk completions, a session's eventfd
// wake-up, or a timer for the log's next time-driven step (async flush, checkpoint).
// Internal to engine/store.cc. Threading: start/stop from the Store's thread; wake() from any
// session thread; everything else on the shard's own thread.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/delivery/record_prefetch.h"
#include "engine/delivery/timer_wheel.h"
#include "engine/log/commit_log.h"
#include "engine/log/log_scrub.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/consumer_offsets.h"
#include "engine/queues/dispatch.h"
#include "engine/store.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/fs_space.h"
#include "io/waker.h"
#include "sched/delay_levels.h"
#include "sched/spsc_ring.h"

namespace uringmq {

// A value crossing from a session to a shard. Views point into the session's memory.
struct ShardRequest {
  enum class Kind : uint8_t {
    append,
    read,
    pull,
    query_queue,
    search_offset,
    commit_offset,
    query_offset,
    flush_offsets,
    release_held
  };
  Kind kind = Kind::append;
  uint64_t tag = 0;
  engine::MessageInput input;   // append; topic and queue_id for every queue request
  LogOffset local_offset;       // read
  uint32_t size_bytes = 0;      // read
  std::byte* dest = nullptr;    // read
  std::string_view group;       // commit_offset, query_offset
  std::string_view tag_filter;  // pull
  std::span<std::byte> buffer;  // pull
  QueueOffset queue_offset;     // pull: the first wanted; commit: the offset
  int64_t value = 0;            // search: timestamp
  uint32_t max_messages = 0;    // pull
  int64_t wait_ms = 0;          // pull
};

// A session's rings: one to each shard, one back from each shard.
struct SessionSlot {
  std::atomic<bool> in_use{false};  // claimed by a Session (Store's thread and sessions)
  std::atomic<bool> active{false};  // rings exist and shards drain them
  std::vector<std::unique_ptr<sched::SpscRing<ShardRequest>>> to_shard;
  std::vector<std::unique_ptr<sched::SpscRing<Completion>>> from_shard;
  std::atomic<uint32_t> completion_seq{0};  // bumped by shards after posting completions
  std::atomic<bool> waiting{false};         // the session is blocked on completion_seq
  // Woken too while waiting (Session::set_completion_waker), for sessions in an event loop.
  std::atomic<io::Waker*> completion_waker{nullptr};
};

class Shard {
 public:
  Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
        std::vector<std::unique_ptr<SessionSlot>>& slots);

  // ---- Stepped mode (tests/sim/schedule_crash_sim_test.cc) ----
  // The shard runs on `disk` (a SimDisk behind a wrapper, say) on the caller's thread, with no
  // waker and no io_uring timer: open_stepped() recovers; each step() is one iteration of the
  // reactor loop, the same code the thread runs (true when it took requests); the caller polls
  // again while the disk has requests in flight and, when idle, advances its ManualClock
  // towards next_deadline_ms(), as the thread would sleep; close_stepped() is stop(). A crash is
  // the disk's crash() or crash_process() followed by destroying the shard without closing it.
  struct SteppedOptions {
    // Canaries that break exactly-once delivery on purpose, so the simulation proves it can
    // catch duplicates (and losses). Never set outside that test.
    bool unsafe_ignore_delivery_markers = false;     // recovery does not read __UMQ_DLV
    bool unsafe_checkpoint_past_deliveries = false;  // checkpoint not held below deliveries
    bool unsafe_progress_before_durable = false;     // async_flush: commit progress when written
  };
  Shard(uint32_t index, const StoreOptions& options, const sched::DelayLevels& levels,
        std::vector<std::unique_ptr<SessionSlot>>& slots, std::unique_ptr<io::Disk> disk,
        const SteppedOptions& stepped);
  io::Status open_stepped(engine::RecoveryReport* report);
  bool step();
  io::Status close_stepped();
  // Monotonic ms of the loop's next time-driven step (what the thread's sleep timer waits for).
  int64_t next_deadline_ms() const;
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Starts the thread and waits until its CommitLog is recovered (or failed to open).
  io::Status start(engine::RecoveryReport* report);
  // Stops the loop, closes the CommitLog cleanly and joins the thread.
  io::Status stop();
  // From a session thread, after pushing a request: wakes the shard if it is asleep.
  void wake_if_sleeping();
  StoreStats stats() const;
  // Adds this shard's delay-level figures into `out` (indexed by level - 1).
  void add_delay_level_stats(std::vector<DelayLevelStats>& out) const;

 private:
  struct PendingAppend {
    uint32_t slot = 0;
    uint64_t tag = 0;
    int64_t queue_offset = 0;
    uint32_t size_bytes = 0;
    int64_t store_timestamp_ms = 0;
    engine::QueueIndex queue = 0;
    int64_t tags_code = 0;
  };
  static constexpr uint32_t kPullUnits = 256;  // units one pull examines at most
  // CommitLog read tags with this bit belong to a pull or search op (its index below).
  static constexpr uint64_t kOpReadBit = uint64_t{1} << 50;
  static constexpr uint32_t kMaxFilterTags = 16;
  // An offset search reads a record whole up to this size (most records) and checks it; of a
  // larger one it reads and checks this much (magic, lengths, position).
  static constexpr uint32_t kSearchRecordBytes = 2048;
  // A pull, a held long poll or an offset search in progress.
  struct PullOp {
    enum class Kind : uint8_t { pull, search };
    enum class Stage : uint8_t { idle, units, records, held, search_unit, search_record };
    Kind kind = Kind::pull;
    Stage stage = Stage::idle;
    uint32_t slot = 0;
    uint64_t tag = 0;
    std::string_view topic;
    int32_t queue_id = 0;
    engine::QueueIndex queue = 0;
    QueueOffset offset;  // pull: the requested queue offset
    uint32_t max_messages = 0;
    std::span<std::byte> buffer;
    bool filter_all = true;
    uint32_t filter_count = 0;
    std::array<int64_t, kMaxFilterTags> filter_codes{};
    int64_t deadline_ms = 0;  // held: monotonic ms
    std::array<engine::CqUnit, kPullUnits> units{};
    uint32_t unit_count = 0;
    std::array<std::byte, kPullUnits * engine::kCqUnitBytes> unit_bytes{};
    uint32_t scanned = 0;
    uint32_t messages = 0;
    uint32_t bytes = 0;
    uint32_t reads_outstanding = 0;
    bool read_failed = false;
    // records: the unit (index into units) of each record copied, checked before it is sent
    std::array<uint16_t, kPullUnits> picked{};
    LogOffset corrupt_log_offset;  // answered corrupt: the damaged record's log offset
    // search: binary search over [lo, hi) for the first store time >= target
    QueueOffset lo, hi, mid;
    int64_t target_ms = 0;
    // search: the record read (whole when it fits, checked before its time is believed)
    std::array<std::byte, kSearchRecordBytes> header{};
  };

  void run();
  io::Status open_log(engine::RecoveryReport* report);
  io::Status init_after_recovery();
  void loop();
  bool iterate();  // one loop iteration; true when it took requests
  void finish();   // the end of loop(): drain, close
  void submit_work();
  // The CommitLog's checkpoint stays below every record recovery would still need.
  void limit_checkpoint();
  bool drain_requests();
  bool handle(uint32_t slot_index, const ShardRequest& request);
  bool handle_append(uint32_t slot_index, const ShardRequest& request);
  void handle_queue_request(uint32_t slot_index, const ShardRequest& request);
  void post(uint32_t slot_index, const Completion& completion);
  void notify_sessions();
  void deliver_acks();
  void deliver_reads();
  void route(const io::IoCompletion& completion);
  void reap(io::Wait wait);
  void sleep();
  void arm_waker();
  void publish_stats();
  int64_t now_ms() const { return clock_->monotonic_ns() / 1'000'000; }
  // tags_code: the unit's tagsCode when the caller knows it already (a timer record's deliver
  // time); else it is computed from the record.
  io::Code append_pending(uint32_t slot, uint64_t tag, const engine::MessageInput& in,
                          std::optional<int64_t> tags_code = std::nullopt);
  io::Result<engine::QueueIndex> queue_for_append(std::string_view topic, int32_t queue_id);

  // Pulls and searches (shard_consumer.cc).
  bool start_pull(uint32_t slot_index, const ShardRequest& request);
  bool start_search(uint32_t slot_index, const ShardRequest& request);
  void run_pull(uint32_t op_index);
  void pull_units_ready(uint32_t op_index);
  void pull_read_done(uint32_t op_index, int64_t result);
  void finish_pull(uint32_t op_index);
  // Checks every record the pull copied (engine::check_stored_record); a damaged one is never
  // sent: the pull ends before it, or answers corrupt when it is the first. False: answered.
  bool check_pulled_records(uint32_t op_index);
  // Logs a damaged record once (the last kCorruptReportsKept offsets are remembered) and counts
  // it; found_by names the reader (a pull, a delivery, the scrub).
  void note_corrupt(uint64_t log_offset, const char* reason, const char* found_by);
  void start_scrub(const engine::RecoveryReport& report);
  void answer_pull(uint32_t op_index, PullStatus status, QueueOffset next_offset);
  void search_step(uint32_t op_index);
  void search_record_ready(uint32_t op_index);
  // The record an offset search read: nullptr when it passes, else the failed check.
  const char* check_search_record(const PullOp& op) const;
  void cq_read_done(uint32_t op_index, int64_t result);
  void wake_held_pulls();
  void expire_held_pulls();
  // Answers the slot's held pulls now (no new message): its owner is shutting down.
  void release_held_pulls(uint32_t slot_index);
  int64_t next_held_deadline_ms() const;
  void release_op(uint32_t op_index);
  // Delivery ahead (shard_consumer.cc): a delayed or timed copy appended before its deliver time
  // (StoreOptions::delivery_lead_ms) is held back from pulls, searches and queue queries until
  // then; a queue's later units wait behind it.
  void hold_copy(engine::QueueIndex queue, int64_t queue_offset, int64_t visible_at_ms,
                 uint64_t log_offset);
  // The end of the queue as consumers see it: its max offset, or its first held copy.
  QueueOffset visible_max_offset(engine::QueueIndex queue) const;
  // Shows the held copies whose time has come (or whose time lies beyond now + lead: the clock
  // went back); wakes held pulls through dispatched_since_check_.
  void release_held_copies();
  int64_t held_copies_due_ms() const;      // the earliest held copy's time (INT64_MAX: none)
  uint64_t held_copies_low_water() const;  // the lowest held copy's log offset: recovery needs it
  // Recovery: a copy stored ahead of its time that has not come yet is held again.
  void note_held_copy(uint64_t log_offset, const engine::MessageView& record);
  void restore_held_copies();
  // Delay levels (shard_schedule.cc).
  static constexpr uint32_t kInternalSlot = UINT32_MAX;            // a PendingAppend of a delivery
  static constexpr uint64_t kScheduleReadBit = uint64_t{1} << 49;  // log and CQ read tags
  static constexpr uint64_t kPrefetchReadBit = uint64_t{1} << 47;  // RecordPrefetch's log reads
  static constexpr uint64_t kUnitsAheadBit = uint64_t{1} << 46;    // a level's units read ahead
  static constexpr uint32_t kCorruptReportsKept = 1024;
  // Records of delay-level heads and timers due within this many ms are read ahead.
  static constexpr int64_t kPrefetchAheadMs = 20;
  // A batch: up to kDeliveryBatch due heads of one level (or timers), their records read (memory
  // or io_uring, concurrently) into one arena, then delivered in order.
  static constexpr uint32_t kDeliveryBatch = 64;
  struct LevelState {
    bool exists = false;
    engine::QueueIndex queue = 0;
    int64_t progress = 0;   // every schedule offset below it is delivered (acknowledged)
    int64_t issued = 0;     // deliveries appended up to here (>= progress)
    uint32_t attempts = 0;  // failed appends of the head at `issued`
    int64_t due_wall_ms = INT64_MAX;
    int64_t head_offset = -1;  // the head at this offset is due at head_due_ms (not yet)
    int64_t head_due_ms = 0;
    // The last units read from the level's queue file: [ahead_from, ahead_from + ahead_count).
    // A head older than the units kept in memory then costs one read per kDeliveryBatch
    // deliveries, not one per batch, and the next heads' records can be read ahead. The next
    // kDeliveryBatch units are read ahead once fewer than half a batch is left in view.
    std::array<engine::CqUnit, 2 * kDeliveryBatch> ahead{};
    uint32_t ahead_count = 0;
    int64_t ahead_from = 0;
    int64_t prefetched_upto = 0;  // units below this were offered to prefetch_
    std::atomic<int64_t> stat_pending{0};
    std::atomic<int64_t> stat_next_ms{INT64_MAX};
    std::atomic<uint64_t> stat_delivered{0};
    std::atomic<uint64_t> stat_parked{0};
    std::atomic<uint64_t> stat_deleted{0};
  };
  enum class DeliveryStage : uint8_t { none, unit, record };
  bool rewrite_delayed(const engine::MessageInput& in, engine::MessageInput* out, uint32_t* level);
  void run_schedule();
  // The delivery lead's horizon for this loop iteration (take_by_ms_); see run_schedule().
  void advance_take_horizon(int64_t now_ms);
  int64_t take_wake_ms(int64_t due_ms) const;
  int64_t level_due_ms(uint32_t level, int64_t deliver_ms, int64_t now) const;
  bool head_not_due_by(const LevelState& state, uint32_t level, int64_t t, int64_t now) const;
  // Units of the level's queue from `from` on, from memory or the level's ahead units (0: none).
  size_t level_units(const LevelState& state, int64_t from, std::span<engine::CqUnit> out) const;
  // Reads ahead the records of level heads and timers due within kPrefetchAheadMs.
  void prefetch_due_soon(int64_t now_ms);
  // One level at a time: its next units, read before its head reaches the end of those in view.
  void read_level_units_ahead(LevelState& state, uint32_t level);
  void level_units_ahead_ready(int64_t result);
  bool start_batch(uint32_t level, uint32_t units);
  void deliver_batch();
  bool deliver_record(uint32_t level, std::span<const std::byte> bytes, int64_t due_ms);
  void schedule_unit_ready(int64_t result);
  void schedule_record_ready(int64_t result);
  void delivery_acked(uint32_t level, uint64_t log_offset, bool ok);
  void note_delivery_marker(uint64_t log_offset, const engine::MessageView& record);
  void load_schedule_progress();
  int64_t schedule_deadline_ms() const;
  // Monotonic ns at which delay levels or timers fall due (INT64_MAX: none): the shard wakes
  // then, to the nanosecond, not at the next whole millisecond.
  int64_t schedule_wake_ns() const;
  uint64_t delivery_low_water();
  // The acknowledgement of the shard's own append (a delivery, a roll): progress moves. Under
  // async_flush it waits in durable_waits_ until the record is durable (see deliver_acks).
  void internal_acked(const PendingAppend& pending, uint64_t log_offset, bool ok);
  bool wait_until_durable(const PendingAppend& pending, uint64_t log_offset);
  void release_durable_internal_acks();
  uint64_t internal_ack_low_water() const;
  void skip_deleted_level_units(LevelState& state, uint32_t level);
  void publish_schedule_stats();
  int32_t parked_queue_id() const;

  // Timed messages (shard_timer.cc; engine/delivery/timer_wheel.h).
  static constexpr uint64_t kTimerReadBit = uint64_t{1} << 48;  // log and CQ read tags
  static constexpr uint64_t kTimerAckBit = uint64_t{1} << 63;   // PendingAppend tag of a copy
  static constexpr uint64_t kTimerRollBit = uint64_t{1} << 62;  // ... that is not a delivery
  enum class TimerStage : uint8_t { none, unit, record };
  io::Code rewrite_timer(const engine::MessageInput& in, engine::MessageInput* out,
                         std::optional<int64_t>* tags_code);
  void run_timers();
  void scan_timer_slots(int64_t now_ms);
  void examine_timer(uint32_t slot, const engine::CqUnit& unit, int64_t now_bucket);
  void advance_timer_sweep(int64_t now_ms);
  void start_timer_batch();
  void finish_timer_batch();
  bool deliver_timer(const engine::TimerEntry& entry, bool roll, std::span<const std::byte> bytes);
  // put_ms: the timer's put time (its __UMQ_TPUT, or its first record's store timestamp).
  bool timer_cancelled(std::string_view properties, int64_t put_ms);
  void timer_done(uint32_t slot, int64_t queue_offset);
  void hold_timer_slot(uint32_t slot, uint64_t log_offset);
  // True when the acknowledged append was a timer's copy (handled here).
  bool timer_ack(const PendingAppend& pending, uint64_t log_offset, bool ok);
  static uint64_t timer_ack_tag(const engine::TimerEntry& e, bool not_delivered);
  void skip_deleted_timer_units(uint32_t slot);
  void timer_unit_ready(int64_t result);
  void timer_record_ready(int64_t result);
  void note_timer_record(uint64_t log_offset, const engine::MessageView& record);
  void load_timer_state();
  // Wall ms at which the timers need the loop (INT64_MIN: now; INT64_MAX: never).
  int64_t timer_due_wall_ms() const;
  uint64_t timer_low_water();
  void publish_timer_stats();
  bool timer_busy() const { return timer_stage_ != TimerStage::none; }

 public:
  void add_timer_stats(TimerStats& out) const;

 private:
  // Retention (shard_consumer.cc).
  void maybe_clean();
  void note_segment_first_timestamp(uint64_t log_offset, int64_t store_timestamp_ms);
  // The first queue offset some consumer still needs, per queue (README "Retention").
  struct QueueNeed {
    engine::QueueIndex queue = 0;
    QueueOffset min_offset;        // before the deletion
    QueueOffset first_unconsumed;  // min over its groups; min_offset with none
    std::vector<std::pair<std::string, QueueOffset>> groups;  // (group, committed offset)
  };
  std::vector<QueueNeed> queue_needs() const;
  // The disk's fullness (StoreOptions::space_probe or statvfs of the shard directory).
  io::Result<io::FsSpace> disk_space() const;
  // CommitLogOptions::space_check: no_space when a segment of `bytes` would take the disk past
  // disk_space_warning_ratio.
  io::Status check_segment_space(uint64_t bytes) const;
  // A log offset at or below every unit some consumer still needs (UINT64_MAX: none needed).
  uint64_t unconsumed_log_floor(const std::vector<QueueNeed>& needs) const;
  // Deleting a segment [base, end) first finds, per queue, the first units at or above base
  // and end (exact counts of what goes: a binary search over units, in memory where it can,
  // else one unit read at a time per queue), then deletes it and reports it (one WARN line).
  // One segment at a time; a pass deletes up to delete_max_files_per_pass.
  static constexpr uint64_t kRetentionReadBit = uint64_t{1} << 45;  // CQ read tags
  struct BoundarySearch {
    size_t need = 0;
    LogOffset boundary;  // the answer is the first unit at or above it
    QueueOffset lo, hi;  // the answer is in [lo, hi]; found once lo == hi
    bool in_flight = false;
    bool gave_up = false;  // a read failed: lo is a lower bound
    std::array<std::byte, engine::kCqUnitBytes> unit{};
  };
  struct SegmentDeletion {
    bool active = false;
    uint64_t base = 0, end = 0;
    std::vector<QueueNeed> needs;
    std::vector<BoundarySearch> searches;  // two per need: base, end; stable while reads fly
    size_t searches_left = 0;
    bool refused = false;  // a read was refused (busy): advance_deletion() asks again
  };
  SegmentDeletion deletion_;
  uint64_t clean_target_ = 0;  // this pass deletes segments ending at or below it
  uint32_t clean_left_ = 0;    // segments this pass may still delete
  void delete_next_segments();
  void step_search(size_t index);  // resolves from memory, or issues its next read
  void retention_unit_ready(uint32_t index, int64_t result);
  void advance_deletion();
  bool finish_deletion();  // false: the segment could not be deleted now
  void report_deleted_segment();

  const uint32_t index_;
  const StoreOptions options_;
  const SteppedOptions stepped_;
  const sched::DelayLevels levels_;
  std::vector<LevelState> level_states_;  // index level - 1
  DeliveryStage delivery_stage_ = DeliveryStage::none;
  uint32_t delivery_level_ = 0;
  engine::CqUnit delivery_unit_;  // the unit of the record deliver_record() is handling
  std::array<engine::CqUnit, kDeliveryBatch> batch_units_{};
  std::array<uint32_t, kDeliveryBatch> batch_at_{};  // arena offset of each record
  std::array<int64_t, kDeliveryBatch> batch_due_{};  // deliver time of each record
  uint32_t batch_count_ = 0;
  uint32_t batch_reads_ = 0;  // reads outstanding
  bool batch_failed_ = false;
  std::array<std::byte, kDeliveryBatch * engine::kCqUnitBytes> delivery_unit_bytes_{};
  std::vector<std::byte> delivery_record_;  // the arena (at least one largest record)
  std::string scratch_properties_;          // rewritten properties (capacity kept)
  std::string scratch_topic_;
  uint32_t schedule_rr_ = 0;
  // Copies due by this wall ms are taken (appended, held until their time) in this iteration.
  int64_t take_by_ms_ = 0;
  bool take_behind_ = false;                // a source left copies due by take_by_ms_ untaken
  size_t schedule_queues_seen_ = SIZE_MAX;  // cq_->queue_count() when levels were last looked up
  // Deliveries whose progress is committed but not yet persisted: (log offset, cycles needed).
  std::vector<std::pair<uint64_t, uint64_t>> unpersisted_deliveries_;
  // async_flush: the shard's own appends acknowledged (written, visible) but not yet durable, in
  // log order; their progress is committed only once the log is durable past their end.
  struct DurableWait {
    PendingAppend pending;
    uint64_t log_offset = 0;
  };
  std::deque<DurableWait> durable_waits_;
  uint64_t first_marker_offset_ = UINT64_MAX;  // lowest delivery record recovery's scan saw
  uint64_t checkpoint_limit_ = 0;              // the last limit_checkpoint()
  uint64_t checkpoint_floor_ = 0;  // the highest checkpoint the log may have written since
  // Timed messages: the wheel (slots on disk, near window in memory) and a delivery batch.
  std::unique_ptr<engine::TimerWheel> wheel_;
  std::unique_ptr<engine::RecordPrefetch> prefetch_;
  std::array<uint64_t, kCorruptReportsKept> corrupt_reported_{};  // log offsets already logged
  uint32_t corrupt_reported_count_ = 0;
  uint32_t corrupt_reported_next_ = 0;
  int64_t last_prefetch_ms_ = INT64_MIN;
  uint32_t units_ahead_level_ = 0;  // the level whose units are being read ahead (0: none)
  int64_t units_ahead_from_ = 0;
  std::array<std::byte, kDeliveryBatch * engine::kCqUnitBytes> units_ahead_bytes_{};
  int64_t timer_sweep_bucket_ = INT64_MIN;  // the oldest bucket whose slot is not finished
  size_t timer_queues_seen_ = SIZE_MAX;
  TimerStage timer_stage_ = TimerStage::none;
  uint32_t timer_unit_slot_ = 0;  // the slot whose units are being read
  std::array<engine::CqUnit, kDeliveryBatch> timer_units_{};
  std::array<std::byte, kDeliveryBatch * engine::kCqUnitBytes> timer_unit_bytes_{};
  std::vector<engine::TimerEntry> timer_rolls_;  // far timers examined, waiting to be rolled
  std::array<engine::TimerEntry, kDeliveryBatch> timer_batch_{};
  std::array<uint32_t, kDeliveryBatch> timer_batch_at_{};
  std::array<uint8_t, kDeliveryBatch> timer_batch_roll_{};
  uint32_t timer_batch_count_ = 0;
  uint32_t timer_batch_next_ = 0;
  uint32_t timer_batch_reads_ = 0;
  bool timer_batch_failed_ = false;
  bool timer_force_park_ = false;        // the last append of the batch's next timer failed
  std::vector<std::byte> timer_record_;  // the batch's arena
  std::string timer_properties_;
  // Timer deliveries and cancels whose progress is committed but not persisted: (log offset,
  // persist cycles needed). The checkpoint stays below them, and below every slot's hold.
  std::vector<std::pair<uint64_t, uint64_t>> timer_unpersisted_;
  uint32_t timer_holds_ = 0;    // slots with a hold
  uint64_t timer_cancels_ = 0;  // cancels recorded (none: nothing to check)
  engine::QueueIndex timer_cancel_queue_ = UINT32_MAX;
  struct RecoveredCancel {
    std::string key;
    int64_t cancel_ms = 0;
    uint64_t log_offset = 0;
  };
  std::vector<RecoveredCancel> recovered_cancels_;  // found by recovery's scan, applied at load
  std::atomic<uint64_t> stat_timer_accepted_{0}, stat_timer_in_memory_{0}, stat_timer_delivered_{0},
      stat_timer_rolled_{0}, stat_timer_cancelled_{0}, stat_timer_parked_{0},
      stat_timer_deleted_{0};
  std::vector<std::unique_ptr<SessionSlot>>& slots_;
  std::thread thread_;
  std::unique_ptr<io::Disk> disk_;
  std::unique_ptr<io::Waker> waker_;
  io::SystemClock system_clock_;
  io::Clock* clock_;
  std::unique_ptr<engine::CommitLog> log_;
  // After disk_: destroyed before it (its destructor waits for its read and closes its file).
  std::unique_ptr<engine::LogScrub> scrub_;
  std::unique_ptr<engine::CqStore> cq_;
  std::unique_ptr<engine::Dispatcher> dispatcher_;
  std::unique_ptr<engine::ConsumerOffsets> offsets_;
  std::string shard_dir_;

  // Start-up handshake and stop request (Store's thread <-> shard thread).
  std::atomic<int> state_{0};  // 0 starting, 1 running, 2 failed
  io::Status start_status_;
  engine::RecoveryReport report_;
  std::atomic<bool> stop_requested_{false};
  io::Status stop_status_;

  std::atomic<bool> sleeping_{false};
  bool waker_armed_ = false;
  // io_uring timeouts in flight (monotonic ns they fire at; INT64_MAX: free). A sleep arms one
  // more when its deadline is earlier than every armed one, so an earlier due head found after a
  // wake-up is never left waiting for an older, later timeout.
  std::array<int64_t, 8> armed_wake_ns_;

  // Shard-thread state.
  std::vector<PendingAppend> pending_;  // by CommitLog tag
  std::vector<uint32_t> free_pending_;  // free indexes into pending_
  std::vector<PendingAppend> pending_reads_;
  std::vector<uint32_t> free_reads_;
  bool has_stalled_ = false;  // a request the log answered busy, retried first
  uint32_t stalled_slot_ = 0;
  ShardRequest stalled_;
  std::vector<bool> notify_;                // sessions that got completions this iteration
  std::vector<int64_t> next_queue_offset_;  // by QueueIndex: the next offset to assign
  std::vector<PullOp> ops_;
  std::vector<uint32_t> free_ops_;
  uint32_t held_ops_ = 0;
  // Held copies (delivery ahead), per queue in queue-offset order; entries before `head` are
  // shown. A queue's entry stays once empty (one per queue that ever held a copy, so its
  // capacity is reused); held_slot_ finds it by QueueIndex, held_active_ lists the non-empty.
  struct HeldCopy {
    int64_t queue_offset = 0;
    int64_t visible_at_ms = 0;
    uint64_t log_offset = 0;
  };
  struct HeldQueue {
    engine::QueueIndex queue = 0;
    std::vector<HeldCopy> copies;
    size_t head = 0;
  };
  std::vector<HeldQueue> held_queues_;
  std::vector<uint32_t> held_slot_;    // by QueueIndex: index into held_queues_, or UINT32_MAX
  std::vector<uint32_t> held_active_;  // indexes into held_queues_ with copies held
  size_t held_copies_ = 0;
  // The least `field` of the first held copy of every queue holding copies (`none`: no copy).
  template <typename T>
  T min_of_held_fronts(T HeldCopy::*field, T none) const {
    T low = none;
    for (uint32_t i : held_active_) {
      const HeldQueue& h = held_queues_[i];
      low = std::min(low, h.copies[h.head].*field);
    }
    return low;
  }
  struct RecoveredHold {
    std::string topic;
    int32_t queue_id = 0;
    HeldCopy copy;
  };
  std::vector<RecoveredHold> recovered_holds_;
  bool dispatched_since_check_ = false;
  // flush_offsets requests waiting for a consumer-offsets persist cycle: (slot, tag, cycles).
  struct FlushWaiter {
    uint32_t slot = 0;
    uint64_t tag = 0;
    uint64_t cycles = 0;  // done once persisted_cycles() reaches this
  };
  std::vector<FlushWaiter> flush_waiters_;
  void answer_flushes();
  // Retention: first store time of each segment (by base), to know when its predecessor ends.
  std::vector<std::pair<uint64_t, int64_t>> segment_first_ts_;
  int64_t last_clean_ms_ = 0;

  std::atomic<uint64_t> stat_appends_{0}, stat_acks_{0}, stat_writes_{0}, stat_syncs_{0},
      stat_wakeups_{0};
  std::atomic<uint64_t> stat_segments_deleted_{0}, stat_unconsumed_deleted_{0};
  std::atomic<uint64_t> stat_corrupt_refused_{0}, stat_corrupt_reported_{0}, stat_scrub_bytes_{0},
      stat_scrub_corrupt_{0}, stat_scrub_finished_{0};
};

}  // namespace uringmq
