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
// a new file fallocated, zero-filled paced behind the writer (SegmentFill::zeroed, the default
// under SYNC_FLUSH; ASYNC_FLUSH leaves it unwritten) and fdatasynced. A segment created at open
// is only fallocated (a fresh store opens at once) and zeroed just ahead of the writer. A recycled
// segment's old records are never taken for new ones: recovery requires each record's
// PHYSICALOFFSET to equal its position, and an old record's is its old position
// (engine/log/README.md).
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
// Parts (engine/log/README.md, "The CommitLog's parts"): this class is the facade the engine
// uses; it owns the parts below, each with its own state, and routes the loop and the
// completions to them. LogState (shared ends, lifecycle, requests in flight), AckQueue,
// SegmentFiles (the segments, the spare, retention), SegmentPreparer (the next segment, the
// zeros ahead), LogWriter (buffers and writes), LogFlush (fdatasync rounds, durable),
// CheckpointWriter, LogReads.
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

#include "engine/log/ack_queue.h"
#include "engine/log/checkpoint_writer.h"
#include "engine/log/log_flush.h"
#include "engine/log/log_reads.h"
#include "engine/log/log_state.h"
#include "engine/log/log_types.h"
#include "engine/log/log_writer.h"
#include "engine/log/message_codec.h"
#include "engine/log/segment_files.h"
#include "engine/log/segment_preparer.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/populated_memory.h"
#include "io/status.h"
#include "sched/participant.h"

namespace uringmq::engine {

class AtomicHistogram;  // engine/metrics_histogram.h

// FlushMode and CommitLogOptions: include/uringmq/options.h.

// RecoveryReport (what recovery found at open): include/uringmq/recovery_report.h.

// AppendResult, Ack, ReadCompletion, CommitLogStats: engine/log/log_types.h.

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

  LogOffset appended_offset() const { return LogOffset{state_.appended()}; }
  LogOffset written_offset() const { return LogOffset{state_.written()}; }
  LogOffset durable_offset() const { return LogOffset{state_.durable()}; }
  LogOffset min_offset() const;
  bool fail_stopped() const { return state_.fail_stopped(); }
  const io::Status& fail_status() const { return state_.fail_status(); }
  const CommitLogStats& stats() const { return state_.stats(); }
  // Where each completed round of fdatasyncs is observed: its latency (us, from submission to
  // the last completion) and the records appended since the previous round. Both outlive the
  // log (the shard's); null: not observed.
  void set_sync_metrics(AtomicHistogram* latency_us, AtomicHistogram* records) {
    flush_.set_metrics(latency_us, records);
  }
  const CommitLogOptions& options() const { return state_.options(); }
  // Pending acknowledgements plus IO in flight: 0 means poll() has nothing left to do.
  size_t pending_work() const;

  // The 20-digit file name of the segment starting at `base_offset`.
  static std::string segment_name(uint64_t base_offset);

 private:
  CommitLog(io::Disk& disk, io::Clock& clock, const CommitLogOptions& options);
  io::Status start(uint64_t end_offset, int64_t last_store_timestamp_ms,
                   uint64_t checkpoint_offset);
  // The writer's segment at open: created when recovery left none for it, and the prepared
  // next one when a clean stop kept it.
  io::Status start_segments();
  // The abort file (present while open) and the directory handles.
  io::Status start_files();
  // Room for a record of `size_bytes`: the writer rolls to the next segment if this one
  // cannot hold it plus the blank record, and the current buffer has room.
  io::Status reserve(uint32_t size_bytes) {
    const uint64_t appended = state_.appended();
    if (appended + size_bytes + kBlankRecordBytes > state_.segment_end(appended)) {
      UMQ_RETURN_IF_ERROR(roll_segment());
    }
    return writer_.ensure_buffer_room(size_bytes);
  }
  io::Status roll_segment();
  // The prepared segment becomes the writer's (appended is at its base).
  void adopt_prepared_segment();
  void release_acks();
  bool close_done() const;

  // Declared in construction order: every part refers to the state and to the parts above it
  // (the writer also to the preparer below: it asks only, never during construction).
  AckQueue acks_;
  LogState state_;
  SegmentFiles files_;
  LogReads reads_;
  LogFlush flush_;
  LogWriter writer_;
  SegmentPreparer preparer_;
  CheckpointWriter checkpoint_;
  io::PopulatedMemory memory_;  // write buffers, zero-fill chunk, checkpoint block; all zero
};

}  // namespace uringmq::engine
