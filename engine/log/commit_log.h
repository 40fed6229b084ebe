#pragma once
// CommitLog: one shard's append-only message log, on an io::Disk.
//
// Files under options.dir:
//   lock                 held (flock) while open: two processes never share a log
//   abort                present while open; found at open = the last stop was unclean
//   checkpoint           the durable watermark (engine/log/checkpoint.h)
//   commitlog/<20 digits> segments of segment_size_bytes, named by their first log offset
//   commitlog/recycled   a retired segment kept for reuse as the next one (at most one)
//
// Writes: append() encodes the record straight into an aligned, registered write buffer (no
// allocation) and returns its log offset and store time; poll() submits the buffered bytes, one
// write per buffer range, and issues fdatasyncs. A record never spans segments: a segment that
// cannot hold the next record plus 8 bytes ends with the blank record. The next segment is
// prepared one ahead of the writer and its directory fsynced before the writer may use it: the
// spare a retention pass recycled (commitlog/recycled, renamed into place: nothing written), or
// a new file fallocated, zero-filled paced behind the writer (SegmentFill::zeroed, the default)
// and fdatasynced. A segment created at open is only fallocated (a fresh store opens at once)
// and zeroed just ahead of the writer. A recycled segment's old records are never taken for new
// ones: recovery requires each record's PHYSICALOFFSET to equal its position, and an old
// record's is its old position (engine/log/README.md).
//
// Offsets: appended_ >= written_ >= durable_ (asserted on every update).
//   appended_  end of the bytes encoded into buffers
//   written_   end of the contiguous prefix whose writes completed
//   durable_   end of the prefix covered by a completed fdatasync submitted after those writes
//              completed
//
// Durability contract:
//   FlushMode::sync_flush (default): an append is acknowledged once durable_ passes its end.
//     One fdatasync covers every write completed before it was submitted (group commit).
//   FlushMode::async_flush: acknowledged once written_ passes its end; fdatasync runs every
//     async_flush_interval_ms (RocketMQ's 500 ms) and when max_unsynced_bytes accumulate.
//   Fail-stop: a failed write, fdatasync or directory fsync is never retried. The log stops:
//     pending appends are reported indeterminate, new appends are rejected (fail_stopped), and
//     restart recovery decides what survived.
//   ENOSPC surfaces when the next segment is allocated: appends that need it are rejected with
//     no_space (nothing stored is touched) and allocation is retried every second.
//   Writes are never submitted beyond durable_ + max_unsynced_bytes, so after a crash no byte
//     of this run lies further than that past the durable point; recovery relies on it to tell a
//     torn tail from corruption (engine/README.md).
//
// Threading: one thread (the shard's) calls every method. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uringmq/offsets.h>
#include <uringmq/options.h>
#include <uringmq/recovery_report.h>

#include "engine/log/message_codec.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "sched/participant.h"

namespace uringmq::engine {

class AtomicHistogram;  // engine/metrics_histogram.h

// A byte position in the CommitLog stream (RocketMQ's PHYSICALOFFSET). Not a file offset.
// Defined with the other offset kinds in include/uringmq/offsets.h.
using uringmq::LogOffset;

// FlushMode and CommitLogOptions: include/uringmq/options.h.

// RecoveryReport (what recovery found at open): include/uringmq/recovery_report.h.

struct AppendResult {
  LogOffset offset;         // PHYSICALOFFSET of the record
  uint32_t size_bytes = 0;  // TOTALSIZE
  int64_t store_timestamp_ms = 0;
};

enum class AckOutcome : uint8_t {
  ok,             // stored as the flush mode promises
  indeterminate,  // the log fail-stopped first: the record may or may not have survived
};

struct Ack {
  uint64_t tag = 0;  // the caller's tag given to append()
  LogOffset offset;
  AckOutcome outcome = AckOutcome::ok;
};

struct ReadCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes read, or -errno
};

struct CommitLogStats {
  uint64_t appends = 0;
  uint64_t writes_submitted = 0;
  uint64_t bytes_submitted = 0;  // bytes of those writes (direct mode: rewritten blocks too)
  uint64_t writes_held = 0;      // times a small write waited for the one in flight
  uint64_t fdatasyncs_completed = 0;
  uint64_t acks_ok = 0;
  uint64_t segments_prepared = 0;  // recycled ones included
  uint64_t segments_recycled = 0;  // of those, retired segments renamed into place
  uint64_t checkpoints_written = 0;
};

// A participant of the shard's loop (sched/participant.h): it drains while busy, and closes last.
class CommitLog final : public sched::Participant {
 public:
  // Opens (creating if needed) and recovers the log in options.dir. Synchronous: nothing else
  // may be in flight on `disk`. Errors: locked (another process), corruption (naming file and
  // offset) below the durable watermark, invalid_argument (options), io errors.
  // `recovery_visitor` (if set) sees every valid record recovery's scan checks, in log order,
  // after the lock is taken and with nothing else in flight on the disk. `scan_disk` (if set):
  // an idle disk of the same thread for the scan's reads (LogScanner::set_read_disk).
  static io::Result<std::unique_ptr<CommitLog>> open(
      io::Disk& disk, io::Clock& clock, const CommitLogOptions& options,
      RecoveryReport* report = nullptr,
      const std::function<void(uint64_t, const MessageView&)>& recovery_visitor = nullptr,
      io::Disk* scan_disk = nullptr);
  ~CommitLog() override;  // without close(): waits for in-flight IO, then behaves like a crash
  CommitLog(const CommitLog&) = delete;
  CommitLog& operator=(const CommitLog&) = delete;

  // Encodes the record at the end of the log. Its acknowledgement (tag) arrives via take_acks()
  // after a later poll(). Errors: invalid_argument/too_large (the message; names the field),
  // busy (buffers or ack queue full, or the next segment is not ready: poll and retry),
  // no_space (the next segment could not be allocated), fail_stopped, shut_down.
  io::Result<AppendResult> append(const MessageInput& input, int64_t queue_offset, uint64_t tag);

  // ---- Replica (a copy of a master's log, StoreOptions::replica) ----
  // Appends raw log bytes copied from a master at `offset`, which must be appended_offset():
  // records may be split anywhere between two calls, a sealed segment's tail comes whole (the
  // blank record and its padding), and `bytes` never cross a segment end. The bytes go out
  // through the write buffers like appends (no acknowledgements: the caller watches
  // durable_offset()). Errors: invalid_argument (another offset, a chunk crossing a segment
  // end or larger than a write buffer less 8 KiB; names both offsets), busy (buffers in flight,
  // or the next segment is not ready yet: poll and retry), no_space, fail_stopped, shut_down.
  io::Status append_raw(LogOffset offset, std::span<const std::byte> bytes);
  // Moves an empty log (nothing appended since its first segment) to start at `base`, a
  // multiple of the segment size: its empty segment is renamed to base (a prepared next one is
  // removed) and the directory fsynced through the ring; append_raw() answers busy until that
  // fsync completed, so no byte is written under a name a crash could undo. Recovery then finds
  // the log starting at base (a checkpoint below the first segment is read as its start). A
  // replica's log starts where its master's stream does. Errors: invalid_argument (not empty,
  // base not aligned), busy (the log's IO in flight: poll and retry).
  io::Status rebase_empty(LogOffset base);

  // Drives IO: submits buffered bytes, flushes, prepares segments, writes checkpoints, reaps
  // completions. Wait::at_least_one blocks until some IO completes (if any is in flight).
  // Equivalent to submit_work(), disk.poll(), complete() for each completion, submit_work().
  void poll(io::Wait wait);

  // For a reactor that shares the Disk with other users: submit_work() queues what can be
  // submitted now and releases acknowledgements; complete() takes one completion whose
  // user_data this log issued (owns() is true for it).
  void submit_work() override;
  void complete(const io::IoCompletion& completion) override;
  // True for the classes sched::TagClass::log_write .. log_retention.
  static bool owns(uint64_t user_data);
  // The monotonic time (ms) by which submit_work() should run again even if no IO completes
  // (async flush, checkpoint, allocation retry); INT64_MAX when nothing is time-driven.
  int64_t next_deadline_ms() const override;
  // Work in flight a clean stop waits for (none once fail-stopped: it will not complete).
  bool busy() const override { return pending_work() > 0 && !fail_stopped(); }

  // Moves ready acknowledgements into `out`; returns how many.
  size_t take_acks(std::span<Ack> out);

  // Reads size_bytes at `offset` into dest (valid until its completion), asynchronously.
  // Only bytes below written_ can be read (not_found otherwise). Completion via take_reads().
  io::Status read(LogOffset offset, uint32_t size_bytes, std::byte* dest, uint64_t tag);
  size_t take_reads(std::span<ReadCompletion> out);

  // Copies a log range from the write buffers if they still hold all of it (hot read), across
  // buffers; false if not (dest may then hold part of it).
  bool read_memory(LogOffset offset, uint32_t size_bytes, std::byte* dest) const;

  // The checkpoint never records a watermark above `limit` (default: no limit). A shard sets it
  // to the point below which its ConsumeQueues are durable, so that recovery's rescan (from the
  // watermark's segment) re-dispatches every record whose units a crash may have lost.
  void set_checkpoint_limit(uint64_t limit);

  // Retention: deletes whole segments, oldest first, that end at or below `offset` (never the
  // writer's segment, nor one with a read in flight or unsynced writes), at most max_files.
  // Returns how many were deleted; min_offset() moves up. Synchronous unlink.
  io::Result<uint32_t> delete_segments_before(LogOffset offset, uint32_t max_files);
  // Base offsets of the segments, ascending (the last is the writer's).
  std::vector<uint64_t> segment_bases() const;

  // Flushes everything, writes the checkpoint, removes the abort file and releases the lock.
  // After close() only the destructor may be called.
  io::Status close() override;

  LogOffset appended_offset() const { return LogOffset{appended_}; }
  LogOffset written_offset() const { return LogOffset{written_}; }
  LogOffset durable_offset() const { return LogOffset{durable_}; }
  LogOffset min_offset() const;
  bool fail_stopped() const { return !fail_status_.is_ok(); }
  const io::Status& fail_status() const { return fail_status_; }
  const CommitLogStats& stats() const { return stats_; }
  // Where each completed round of fdatasyncs is observed: its latency (us, from submission to
  // the last completion) and the records appended since the previous round. Both outlive the
  // log (the shard's); null: not observed.
  void set_sync_metrics(AtomicHistogram* latency_us, AtomicHistogram* records) {
    sync_latency_us_ = latency_us;
    sync_records_ = records;
  }
  const CommitLogOptions& options() const { return options_; }
  // Pending acknowledgements plus IO in flight: 0 means poll() has nothing left to do.
  size_t pending_work() const;

  // The 20-digit file name of the segment starting at `base_offset`.
  static std::string segment_name(uint64_t base_offset);

  struct Segment {
    uint64_t base = 0;
    io::FileHandle file;       // opened in options.io_mode, for writes and fdatasync
    io::FileHandle read_file;  // buffered, opened on the first read
    bool dirty = false;        // a write completed since the last fdatasync was submitted
  };
  struct WriteBuffer {
    std::byte* data = nullptr;
    int32_t index = 0;          // registered-buffer index, or -1 when registration was refused
    uint64_t log_start = 0;     // log offset of data[0]; a multiple of align_bytes_
    uint64_t segment_base = 0;  // the segment all of its bytes belong to
    uint64_t fill = 0;          // bytes encoded
    uint64_t submitted = 0;     // bytes handed to the disk
    uint64_t seal_end = 0;      // when non-zero, its last write completes the segment up to here
    uint32_t writes_in_flight = 0;
  };
  struct WriteSlot {
    uint32_t buffer = 0;
    uint64_t file_offset = 0;
    uint64_t length = 0;
    uint64_t log_data_end = 0;  // written_ moves here when this and all earlier slots are done
    std::byte* data = nullptr;
    uint64_t segment_base = 0;
    io::FileHandle file;
    bool done = false;
  };
  struct PendingAck {
    uint64_t end = 0;  // log offset just past the record
    uint64_t tag = 0;
    uint64_t offset = 0;
  };
  enum class AllocStep : uint8_t { idle, fallocating, zeroing, syncing, dir_syncing, ready };
  static constexpr std::string_view kRecycledFile = "recycled";

  CommitLog(io::Disk& disk, io::Clock& clock, const CommitLogOptions& options);
  io::Status start(uint64_t end_offset, int64_t last_store_timestamp_ms,
                   uint64_t checkpoint_offset);
  io::Status reserve(uint32_t size_bytes);
  io::Status roll_segment();
  io::Status roll_raw();
  // Ok when the prepared next segment is ready to take over; busy (the roll waits) or the
  // preparation's error otherwise.
  io::Status prepared_segment_ready();
  // The prepared segment (based at alloc_base_) becomes the writer's.
  void adopt_prepared_segment();
  io::Status check_open() const;
  // The current write buffer takes `size_bytes` more of the writer's segment, or the next one
  // does (switch_buffer).
  io::Status ensure_buffer_room(uint64_t size_bytes);
  io::Status switch_buffer();
  Segment* find_segment(uint64_t base);
  void submit_writes();
  bool submit_range(WriteBuffer& buffer);
  void maybe_sync();
  void maybe_checkpoint();
  void advance_allocator();
  void start_allocation();
  bool start_recycled_allocation();
  io::Status adopt_spare();
  io::Status retire_segment(const std::string& path);
  void on_write_done(uint32_t slot, int64_t result);
  void on_sync_done(int64_t result);
  void on_allocator_done(int64_t result);
  void continue_zero_fill();
  void maybe_zero_ahead();
  void on_zero_ahead_done(int64_t result);
  bool zero_fill_should_wait() const;
  bool quiet() const;
  static constexpr int64_t kQuietNs = 2'000'000;
  void on_checkpoint_done(int64_t result);
  void allocation_failed(io::Status status);
  bool close_done() const;
  uint64_t checkpoint_offset() const;
  void release_acks();
  void fail_stop(io::Status status);
  bool submit_slot_write(uint32_t index);
  bool submit_op(const io::IoRequest& request);
  io::Result<Segment*> segment_for_read(uint64_t offset);
  void set_written(uint64_t offset);
  void set_durable(uint64_t offset);
  bool flush_pending() const;
  int64_t now_ms() const { return clock_.monotonic_ns() / 1'000'000; }
  int64_t last_write_ns_ = 0;  // monotonic: the last append write submitted (quiet())
  uint64_t segment_end(uint64_t offset) const;
  void set_segment_path(uint64_t base, std::string& out) const;

  io::Disk& disk_;
  io::Clock& clock_;
  CommitLogOptions options_;
  uint64_t align_bytes_ = 1;  // 1 (buffered) or io::kDirectAlignment (direct)
  std::string segment_dir_;
  // Paths the steady state uses, built at construction so that no poll() allocates: the
  // checkpoint's temporary and final files, and the segment being prepared (rewritten in place
  // for each segment: the same length every time, so its capacity is reused).
  std::string checkpoint_temp_path_;
  std::string checkpoint_path_;
  std::string alloc_path_;
  std::string spare_path_;      // commitlog/recycled
  bool spare_present_ = false;  // spare_path_ holds a whole retired segment

  uint64_t appended_ = 0;
  uint64_t written_ = 0;
  uint64_t durable_ = 0;
  int64_t last_store_timestamp_ms_ = 0;
  int64_t durable_store_timestamp_ms_ = 0;
  uint64_t writer_segment_ = 0;  // base of the segment appends go to

  std::vector<Segment> segments_;  // every open segment, ascending base
  std::byte* memory_ = nullptr;    // write buffers, then the zero-fill chunk; 4 KiB aligned
  size_t memory_bytes_ = 0;
  std::byte* zero_chunk_ = nullptr;
  std::vector<WriteBuffer> buffers_;  // used in ring order: log order = ring order
  uint32_t current_buffer_ = 0;       // receives appends
  uint32_t oldest_unsubmitted_ = 0;   // first buffer in ring order with bytes to submit
  std::vector<WriteSlot> slots_;      // ring of writes in flight, in log order
  uint32_t slot_head_ = 0;
  uint32_t slot_count_ = 0;
  std::vector<PendingAck> acks_;  // ring of appends awaiting acknowledgement, in log order
  uint32_t ack_head_ = 0;
  uint32_t ack_count_ = 0;
  std::vector<Ack> ready_acks_;  // ring of acknowledgements for take_acks()
  uint32_t ready_head_ = 0;
  uint32_t ready_count_ = 0;
  std::vector<ReadCompletion> ready_reads_;
  uint32_t ops_in_flight_ = 0;

  uint32_t syncs_outstanding_ = 0;
  bool sync_failed_ = false;
  uint64_t sync_target_ = 0;
  int64_t sync_target_timestamp_ms_ = 0;
  int64_t last_sync_ms_ = 0;
  AtomicHistogram* sync_latency_us_ = nullptr;
  AtomicHistogram* sync_records_ = nullptr;
  int64_t sync_started_ns_ = 0;      // monotonic: the round in flight was submitted
  uint64_t sync_round_records_ = 0;  // records appended between the previous round and it
  uint64_t appends_at_sync_ = 0;     // stats_.appends when the round in flight was submitted

  AllocStep alloc_step_ = AllocStep::idle;
  uint64_t alloc_base_ = 0;
  io::FileHandle alloc_file_;
  uint64_t alloc_zeroed_ = 0;
  uint32_t alloc_writes_in_flight_ = 0;
  int64_t alloc_retry_at_ms_ = 0;
  bool roll_waiting_ = false;       // an append needed the next segment before it was ready
  bool alloc_zero_paused_ = false;  // zeroing waits for the writer (zero_fill_should_wait)
  bool alloc_recycled_ = false;     // the segment being prepared is the recycled spare
  io::Status alloc_status_;         // no_space while allocation is failing for lack of space
  // Zeros written just ahead of the writer in its own segment (SegmentFill::zeroed; a segment
  // created unwritten at open). front: file offset up to which they are written.
  struct ZeroAhead {
    bool active = false;
    uint64_t base = 0;
    uint64_t front = 0;
    bool in_flight = false;
    uint64_t in_flight_from = 0;
  };
  ZeroAhead ahead_;
  io::FileHandle segment_dir_handle_;

  enum class CheckpointStep : uint8_t { idle, writing, syncing, renaming, dir_syncing };
  CheckpointStep checkpoint_step_ = CheckpointStep::idle;
  io::FileHandle checkpoint_file_;
  io::FileHandle root_dir_handle_;
  std::byte* checkpoint_bytes_ = nullptr;  // 4 KiB aligned, inside memory_
  uint64_t checkpoint_target_ = 0;
  uint64_t checkpoint_limit_ = UINT64_MAX;
  uint32_t reads_in_flight_ = 0;
  bool retention_sync_in_flight_ = false;
  uint64_t checkpoint_written_ = 0;  // bytes of the checkpoint write completed
  int64_t last_checkpoint_ms_ = 0;

  enum class RebaseSync : uint8_t { none, wanted, in_flight };
  RebaseSync rebase_sync_ = RebaseSync::none;  // rebase_empty()'s directory fsync

  io::Status fail_status_;
  bool closing_ = false;
  bool closed_ = false;
  CommitLogStats stats_;
};

}  // namespace uringmq::engine
