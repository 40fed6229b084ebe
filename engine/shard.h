#pragma once
// Shard: one thread pinned to one CPU that owns an io_uring (UringDisk), a CommitLog and the
// queues hashed to it. Its reactor loop takes requests from every session's ring, appends and
// reads through the CommitLog, reaps disk completions, and posts completions back; when there
// is nothing to do it sleeps in io_uring_enter, woken by disk completions, a session's eventfd
// wake-up, or a timer for the log's next time-driven step (async flush, checkpoint).
// Its parts (the log, the ConsumeQueues, the offsets, and its own pulls, deliveries, retention
// and scrub) are participants of a sched::ParticipantLoop: iterate, sleep, finish and the
// checkpoint limit are loops over them, in the order register_parts() gives.
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
#include <type_traits>
#include <variant>
#include <vector>

#include "engine/delivery/delivery_host.h"
#include "engine/delivery/durable_acks.h"
#include "engine/delivery/held_copies.h"
#include "engine/delivery/level_delivery.h"
#include "engine/delivery/record_prefetch.h"
#include "engine/delivery/take_horizon.h"
#include "engine/delivery/timer_delivery.h"
#include "engine/delivery/transactions.h"
#include "engine/log/commit_log.h"
#include "engine/log/log_scrub.h"
#include "engine/metrics_histogram.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/consumer_offsets.h"
#include "engine/queues/dispatch.h"
#include "engine/queues/index_store.h"
#include "engine/queues/sql_filter.h"
#include "engine/store.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/fs_space.h"
#include "io/waker.h"
#include "sched/completion_tags.h"
#include "sched/delay_levels.h"
#include "sched/hook_participant.h"
#include "sched/participant_loop.h"
#include "sched/slot_pool.h"
#include "sched/spsc_ring.h"

namespace uringmq {

// Requests crossing from a session to a shard: one struct per kind, holding exactly the fields
// its handler reads (and the tag its completion carries), so a handler cannot read a field its
// kind never set. ShardRequest is the variant of them, copied by value through the SPSC rings
// (trivially copyable, as large as the largest kind: no allocation per request). Views point
// into the session's memory, which outlives the request's completion.
namespace shard_request {

struct Append {
  uint64_t tag = 0;
  engine::MessageInput input;
};
// Every message into one queue (Session::send_batch_async); each one's store-wide offset is
// written into offsets before the completion.
struct AppendBatch {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
  engine::HostAddress store_host;
  std::span<const Message> messages;
  std::span<StoreOffset> offsets;
};
struct Read {
  uint64_t tag = 0;
  LogOffset local_offset;
  uint32_t size_bytes = 0;
  std::byte* dest = nullptr;
};
struct Pull {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset queue_offset;  // the first wanted
  uint32_t max_messages = 0;
  std::string_view tag_filter;
  const engine::SqlFilter* sql_filter = nullptr;  // PullRequest::sql_filter
  std::span<std::byte> buffer;
  int64_t wait_ms = 0;
};
struct QueryQueue {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
};
// The first queue offset stored at or after timestamp_ms.
struct SearchOffset {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
  int64_t timestamp_ms = 0;
};
struct CommitOffset {
  uint64_t tag = 0;
  std::string_view group;
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset queue_offset;
};
struct QueryOffset {
  uint64_t tag = 0;
  std::string_view group;
  std::string_view topic;
  int32_t queue_id = 0;
};
// Done once every offset committed before it is persisted.
struct FlushOffsets {
  uint64_t tag = 0;
};
// The session's held long polls answered now.
struct ReleaseHeld {
  uint64_t tag = 0;
};
// Records whose KEYS or UNIQ_KEY is key, stored in [begin_ms, end_ms] (engine/shard_index.cc).
struct QueryIndex {
  uint64_t tag = 0;
  std::string_view topic;
  std::string_view key;
  int64_t begin_ms = 0;
  int64_t end_ms = 0;
  uint32_t max_messages = 0;
  std::span<std::byte> buffer;
};
// The record at local_offset, checked, into buffer.
struct ViewRecord {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<std::byte> buffer;
};
// Transactional messages: the half at local_offset (its bytes in record; empty: the shard looks
// in its log's memory) ended by end; producer_group and queue_offset are RocketMQ's check
// fields (empty group: none).
struct EndTransaction {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<const std::byte> record;
  TransactionEnd end = TransactionEnd::commit;
  std::string_view producer_group;
  QueueOffset queue_offset;
};
// The due halves into checks.
struct TransactionChecks {
  uint64_t tag = 0;
  std::span<TransactionCheck> checks;
};
// Every consumer offset of the shard into *out.
struct ListOffsets {
  uint64_t tag = 0;
  std::vector<ConsumerOffsetEntry>* out = nullptr;
};
// A replica's raw log bytes from its master at local_offset; empty: only asks for the log's ends
// (engine/shard_replica.cc).
struct Replicate {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<const std::byte> bytes;
};

}  // namespace shard_request

struct ShardRequest
    : std::variant<shard_request::Append, shard_request::AppendBatch, shard_request::Read,
                   shard_request::Pull, shard_request::QueryQueue, shard_request::SearchOffset,
                   shard_request::CommitOffset, shard_request::QueryOffset,
                   shard_request::FlushOffsets, shard_request::ReleaseHeld,
                   shard_request::QueryIndex, shard_request::ViewRecord,
                   shard_request::EndTransaction, shard_request::TransactionChecks,
                   shard_request::ListOffsets, shard_request::Replicate> {
  using variant::variant;
};
static_assert(std::is_trivially_copyable_v<ShardRequest>);

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

class Shard final : private engine::DeliveryHost {
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
    bool unsafe_txn_ended_at_append = false;         // a half ended before its outcome is durable
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
  // Adds this shard's counters into `out`.
  void add_stats(StoreStats& out) const;
  LogEnds log_ends() const {
    return LogEnds{.min_offset = stat_log_min_.load(std::memory_order_acquire),
                   .stream_end = stat_stream_end_.load(std::memory_order_acquire),
                   .written_end = stat_written_end_.load(std::memory_order_acquire)};
  }
  void set_log_waker(io::Waker* waker) { log_waker_.store(waker, std::memory_order_release); }
  // Adds this shard's delay-level figures into `out` (indexed by level - 1).
  void add_delay_level_stats(std::vector<DelayLevelStats>& out) const;
  void add_transaction_stats(TransactionStats& out) const { txn_.add_stats(out); }

 private:
  struct PendingAppend {
    uint32_t slot = 0;
    uint64_t tag = 0;
    int64_t queue_offset = 0;
    uint32_t size_bytes = 0;
    int64_t store_timestamp_ms = 0;
    engine::QueueIndex queue = 0;
    int64_t tags_code = 0;
    uint32_t batch = UINT32_MAX;  // a batch member: its index in batches_ (else UINT32_MAX)
    uint32_t batch_index = 0;     // its place in the batch
    int64_t start_ns = 0;         // monotonic: the drain that took its request (drain_ns_)
  };
  // Where an append went (append_pending's optional answer).
  struct Appended {
    uint64_t log_offset = 0;
    uint32_t size_bytes = 0;
    int64_t queue_offset = 0;
    int64_t store_timestamp_ms = 0;
  };
  // A batch being appended or acknowledged: one completion once every record it appended is
  // acknowledged (Session::send_batch_async). batches_ is sized at start; none free: busy.
  static constexpr uint32_t kNoBatch = UINT32_MAX;
  static constexpr uint32_t kMaxOpenBatches = 1024;
  struct BatchAck {
    uint32_t slot = 0;
    uint64_t tag = 0;
    std::span<StoreOffset> offsets;  // the session's: each record's store-wide offset
    uint32_t appended = 0;           // records appended so far
    uint32_t acks_left = 0;          // of those, not yet acknowledged
    bool closed = false;             // nothing more will be appended
    io::Code code = io::Code::ok;
    StoreOffset first_offset;
    QueueOffset first_queue_offset{-1};
    int64_t first_store_timestamp_ms = 0;
    uint32_t size_bytes = 0;
  };
  static constexpr uint32_t kPullUnits = 256;  // units one pull examines at most
  // CommitLog read tags with this bit belong to a pull or search op (its index below).
  static constexpr uint64_t kOpReadBit = sched::read_tag::kPullOp;
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
    // evaluated on each record read
    const engine::SqlFilter* sql_filter = nullptr;
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
  // Each request to its kind's handler. False when the log is busy: the request is kept and
  // retried first after the next poll.
  bool handle(uint32_t slot_index, const ShardRequest& request);
  // A replica's log is its master's copy: an append of its own is refused (true: refused).
  bool refused_on_replica(uint32_t slot_index, uint64_t tag);
  bool handle_append(uint32_t slot_index, const shard_request::Append& request);
  bool handle_read(uint32_t slot_index, const shard_request::Read& request);
  // A batch: every record appended before any other request is taken (a busy log stalls the
  // request, which resumes at open_batch_next_) and no delivery is appended meanwhile, so its
  // queue offsets are consecutive. False: stalled (retried first).
  bool handle_append_batch(uint32_t slot_index, const shard_request::AppendBatch& request);
  io::Code check_batch(const shard_request::AppendBatch& request) const;
  void batch_acked(const PendingAppend& pending, LogOffset log_offset, bool ok);
  void finish_batch(uint32_t batch);  // posts its completion once closed and acknowledged
  // The kinds answered at once (a flush once the offsets are persisted), never stalled.
  void answer(uint32_t slot_index, const shard_request::QueryQueue& request);
  void answer(uint32_t slot_index, const shard_request::CommitOffset& request);
  void answer(uint32_t slot_index, const shard_request::QueryOffset& request);
  void answer(uint32_t slot_index, const shard_request::FlushOffsets& request);
  void answer(uint32_t slot_index, const shard_request::ReleaseHeld& request);
  void answer(uint32_t slot_index, const shard_request::ListOffsets& request);
  void answer(uint32_t slot_index, const shard_request::TransactionChecks& request);
  void post(uint32_t slot_index, const Completion& completion);
  void notify_sessions();
  void deliver_acks();
  void deliver_reads();
  // The loop's parts, in the order their submit_work() runs (the log, its queues, the offsets,
  // then the shard's own parts below): see register_parts().
  void register_parts();
  using Part = sched::HookParticipant<Shard>;
  void add_part(const Part::Hooks& hooks, std::initializer_list<sched::TagClass> classes = {});
  void wakeup_done(const io::IoCompletion& completion);
  void reap(io::Wait wait);
  void sleep();
  void arm_waker();
  void publish_stats();
  // The log's bounds replication streams (Store::log_ends): before acknowledgements are posted,
  // so a client that sees its send acknowledged finds the end past it.
  void publish_log_ends();
  int64_t now_ms() const { return clock_->monotonic_ns() / 1'000'000; }
  // tags_code: the unit's tagsCode when the caller knows it already (a timer record's deliver
  // time); else it is computed from the record. scan: the caller's one scan of in.properties
  // (handle_append's), or nullptr: scanned here when needed. appended: where the record went
  // (its queue offset in queue_offset), when asked.
  io::Code append_pending(uint32_t slot, uint64_t tag, const engine::MessageInput& in,
                          std::optional<int64_t> tags_code = std::nullopt,
                          uint32_t batch = kNoBatch, uint32_t batch_index = 0,
                          const engine::PropertyScan* scan = nullptr, Appended* appended = nullptr);
  // Transactional messages (engine/delivery/transactions.h).
  bool append_half(uint32_t slot_index, uint64_t tag, const engine::MessageInput& input,
                   const engine::PropertyScan& scan);
  io::Code check_half_delivery(const engine::PropertyScan& scan) const;
  io::Code rewrite_commit_copy(const engine::PropertyScan& scan, engine::MessageInput* copy,
                               std::optional<int64_t>* tags_code);
  bool handle_end_transaction(uint32_t slot_index, const shard_request::EndTransaction& request);
  void commit_transaction_progress();
  std::span<const std::byte> half_in_memory(LogOffset offset);
  std::vector<std::byte> txn_half_;  // a half read from memory for its end (sized at open)
  int64_t txn_progress_committed_ = -1;
  io::Result<engine::QueueIndex> queue_for_append(std::string_view topic, int32_t queue_id);

  // Pulls and searches (shard_consumer.cc).
  bool start_pull(uint32_t slot_index, const shard_request::Pull& request);
  bool start_search(uint32_t slot_index, const shard_request::SearchOffset& request);
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
  void apply_sql_filter(PullOp& op);
  void cq_read_done(uint32_t op_index, int64_t result);
  void wake_held_pulls();
  void expire_held_pulls();
  // Answers the slot's held pulls now (no new message): its owner is shutting down.
  void release_held_pulls(uint32_t slot_index);
  int64_t next_held_deadline_ms() const;
  void release_op(uint32_t op_index);
  uint32_t acquire_op(PullOp::Kind kind, uint32_t slot_index, uint64_t tag, std::string_view topic,
                      int32_t queue_id);
  // The end of the queue as consumers see it: its max offset, or its first held copy (held_).
  QueueOffset visible_max_offset(engine::QueueIndex queue) const {
    return QueueOffset{held_.visible_end(queue, cq_->max_offset(queue).value)};
  }
  // Delay levels (engine/delivery/level_delivery.h) and the parts' shared pieces.
  static constexpr uint32_t kInternalSlot = UINT32_MAX;  // a PendingAppend of a delivery
  static constexpr uint64_t kPrefetchReadBit =
      sched::read_tag::kPrefetch;  // RecordPrefetch's log reads
  static constexpr uint32_t kCorruptReportsKept = 1024;
  // One step of the delivery parts: the take horizon, reads ahead, timers, then delay levels.
  void run_schedule();
  int64_t schedule_deadline_ms() const;
  // Monotonic ns at which delay levels or timers fall due (INT64_MAX: none): the shard wakes
  // then, to the nanosecond, not at the next whole millisecond.
  int64_t schedule_wake_ns() const;
  // The acknowledgement of the shard's own append (a delivery, a roll): progress moves. Under
  // async_flush it waits in durable_ until the record is durable (see deliver_acks).
  void internal_acked(uint64_t tag, uint64_t log_offset, bool ok);

  // engine::DeliveryHost: the delivery parts' view of the shard.
  engine::CommitLog& log() override { return *log_; }
  engine::CqStore& queues() override { return *cq_; }
  engine::ConsumerOffsets& offsets() override { return *offsets_; }
  engine::RecordPrefetch& prefetch() override { return *prefetch_; }
  int64_t wall_ms() const override { return clock_->now_ms(); }
  io::Code append_internal(uint64_t tag, const engine::MessageInput& in,
                           std::optional<int64_t> tags_code) override {
    return append_pending(kInternalSlot, tag, in, tags_code);
  }
  void refuse_corrupt(uint64_t log_offset, std::span<const std::byte> bytes,
                      const char* found_by) override;
  int32_t parked_queue_id() const override;
  int64_t appended_end(engine::QueueIndex queue) const override;

 public:
  void add_timer_stats(TimerStats& out) const;

 private:
  // Replica (shard_replica.cc): raw bytes from a master appended at the log's end; whole
  // records are dispatched once durable (ConsumeQueues, index); a request is answered once its
  // bytes are durable, with the log's appended and durable ends.
  bool handle_replicate(uint32_t slot_index, const shard_request::Replicate& request);
  void replica_advance();
  // False: the index has no room yet (dispatched on a later iteration).
  bool replica_dispatch(uint64_t log_offset, const engine::MessageView& record);
  void replica_answer(uint32_t slot_index, uint64_t tag, io::Code code);
  struct ReplicaWait {
    uint32_t slot = 0;
    uint64_t tag = 0;
    uint64_t end = 0;  // answered once the log is durable to here
  };
  std::deque<ReplicaWait> replica_waits_;  // bounded by the sessions' windows
  // The log's bytes from replica_pos_ (the first not dispatched) to its appended end: whole
  // records are taken from the front, so it holds at most one record plus what is not durable.
  std::vector<std::byte> replica_tail_;
  uint64_t replica_pos_ = 0;
  size_t replica_progress_ = 0;  // bytes of a stalled replicate request already appended
  bool replica_failed_ = false;  // a record failed its checks: nothing more is dispatched
  uint64_t replica_dispatched() const { return replica_pos_; }

  // Retention (shard_consumer.cc).
  void maybe_clean();
  void note_segment_first_timestamp(uint64_t log_offset, int64_t store_timestamp_ms);
  // The first queue offset some consumer still needs, per queue (engine/README.md, "Retention").
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
  static constexpr uint64_t kRetentionReadBit = sched::read_tag::kRetention;  // CQ read tags
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

  // The message index (shard_index.cc): built as records are appended, rebuilt by recovery,
  // asked by query_index and view_record requests (one IndexQuery each, at most
  // kIndexMaxLookups at once): index lookup -> candidate offsets -> records read and checked.
  static constexpr uint64_t kIndexReadBit = uint64_t{1} << 44;  // CommitLog read tags
  struct IndexQuery {
    enum class Stage : uint8_t { idle, lookup, size, record };
    Stage stage = Stage::idle;
    bool by_offset = false;  // view_record
    uint32_t slot = 0;
    uint64_t tag = 0;
    std::string_view topic;
    std::string_view key;
    int64_t begin_ms = 0, end_ms = 0;
    std::span<std::byte> buffer;
    uint32_t used = 0;
    uint32_t messages = 0;
    uint32_t max_messages = 0;
    uint32_t candidates = 0;
    uint32_t next = 0;
    std::array<uint64_t, engine::kIndexMaxHits> offsets{};
    std::array<std::byte, 4> size_bytes{};
    uint32_t record_size = 0;
    bool retry = false;  // a read was refused (busy): retried on the next iteration
  };
  io::Status open_index(uint64_t first_scanned);
  io::Status rescan_index(uint64_t from);
  void index_recovered_record(uint64_t offset, const engine::MessageView& record);
  bool start_index_query(uint32_t slot_index, const shard_request::QueryIndex& request);
  bool start_view_record(uint32_t slot_index, const shard_request::ViewRecord& request);
  // A free query reset for (slot, tag, buffer), or index_queries_.size() when all are busy.
  uint32_t claim_index_query(uint32_t slot_index, uint64_t tag, std::span<std::byte> buffer);
  void index_lookups_ready();
  void index_read_next(uint32_t id);
  void index_read_done(uint32_t id, int64_t result);
  void index_check_record(uint32_t id);
  void answer_index_query(uint32_t id, io::Code code);
  // Before an append: room in the index for the record's keys (busy: the append waits); *keys:
  // how many (0: no index, or none: append_pending skips the insert). scan: the record's
  // properties, never nullptr while there is an index.
  io::Code index_prepare(const engine::PropertyScan* scan, uint32_t* keys);
  uint64_t index_durable() const {
    return msg_index_ != nullptr ? msg_index_->durable_dispatched() : UINT64_MAX;
  }
  bool index_busy() const;  // queries in progress or index IO in flight
  bool index_opened_ = false;
  io::Status index_status_;                  // recovery: the first failure of the index
  uint64_t index_rescan_from_ = UINT64_MAX;  // recovery: the index is rebuilt by a rescan
  std::array<IndexQuery, engine::kIndexMaxLookups> index_queries_{};

  const uint32_t index_;
  const StoreOptions options_;
  const SteppedOptions stepped_;
  const sched::DelayLevels levels_;
  uint64_t checkpoint_limit_ = 0;  // the last limit_checkpoint()
  uint64_t checkpoint_floor_ = 0;  // the highest checkpoint the log may have written since
  std::unique_ptr<engine::RecordPrefetch> prefetch_;
  std::array<uint64_t, kCorruptReportsKept> corrupt_reported_{};  // log offsets already logged
  uint32_t corrupt_reported_count_ = 0;
  uint32_t corrupt_reported_next_ = 0;
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
  std::unique_ptr<engine::IndexStore> msg_index_;  // null when StoreOptions::index is disabled
  std::unique_ptr<engine::Dispatcher> dispatcher_;
  std::unique_ptr<engine::ConsumerOffsets> offsets_;
  std::string shard_dir_;
  // The loop's participants: the parts above, and the shard's own parts (its wake-ups, pulls,
  // deliveries, retention, scrub) adapted by hooks, owned here.
  sched::ParticipantLoop loop_;
  std::vector<std::unique_ptr<Part>> own_parts_;

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
  sched::SlotPool pending_pool_;        // which of pending_ are in use
  std::vector<PendingAppend> pending_reads_;
  sched::SlotPool read_pool_;  // which of pending_reads_ are in use
  std::vector<BatchAck> batches_;
  sched::SlotPool batch_pool_;      // which of batches_ are in use
  uint32_t open_batch_ = kNoBatch;  // the batch being appended (stalled on a busy log)
  uint32_t open_batch_next_ = 0;    // its next message to append
  bool has_stalled_ = false;        // a request the log answered busy, retried first
  uint32_t stalled_slot_ = 0;
  ShardRequest stalled_;
  std::vector<bool> notify_;                // sessions that got completions this iteration
  std::vector<int64_t> next_queue_offset_;  // by QueueIndex: the next offset to assign
  std::vector<PullOp> ops_;
  sched::SlotPool op_pool_;  // which of ops_ are in use
  uint32_t held_ops_ = 0;
  // Delivery ahead: copies appended before their time, held back from consumers until it.
  engine::TakeHorizon horizon_;  // before held_: held_ is built with its max_lead_ms()
  engine::HeldCopies held_;
  // async_flush: the shard's own appends acknowledged (written, visible) but not yet durable.
  engine::DurableAcks durable_;
  engine::LevelDelivery delayed_;
  engine::TimerDelivery timers_;
  engine::Transactions txn_;
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
  // Operator figures (StoreStats): histograms and gauges written by the shard thread only.
  int64_t drain_ns_ = 0;  // monotonic, read at the first append of a drain of the request rings
  engine::AtomicHistogram append_latency_us_{kLatencyBoundsUs};
  engine::AtomicHistogram sync_latency_us_{kLatencyBoundsUs};
  engine::AtomicHistogram sync_records_{kBatchBoundsMessages};
  std::atomic<uint64_t> stat_log_bytes_{0}, stat_flush_behind_{0}, stat_dispatch_lag_{0};
  std::atomic<uint64_t> stat_log_min_{0}, stat_stream_end_{0};  // LogEnds (release/acquire)
  std::atomic<uint64_t> stat_written_end_{0};
  std::atomic<io::Waker*> log_waker_{nullptr};  // woken when stat_written_end_ moves
};

}  // namespace uringmq
