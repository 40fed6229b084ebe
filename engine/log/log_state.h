#pragma once
// LogState: what every part of one CommitLog shares (engine/log/README.md, "The CommitLog's
// parts"): the disk, the clock and the options; the three ends and the writer's segment; the
// lifecycle (open, closing, closed, fail-stopped); the requests in flight and the counters.
//
// Invariants: appended >= written >= durable, asserted whenever written or durable moves
// (appended only grows: add_appended, set_appended). The writer's segment is the one holding
// appended (or ending exactly there until the next roll). Once fail-stopped the status never
// changes and every pending acknowledgement has been reported indeterminate.
// Threading: the shard's thread only, like the CommitLog that owns it.

#include <cstdint>
#include <string>

#include <uringmq/options.h>

#include "engine/log/ack_queue.h"
#include "engine/log/log_types.h"
#include "io/assert.h"
#include "io/clock.h"
#include "io/disk.h"
#include "io/status.h"
#include "sched/completion_tags.h"

namespace uringmq::engine {

// user_data of a CommitLog's disk request: its class (sched/completion_tags.h) in the top byte,
// an index below. One contiguous range of classes (CommitLog::owns).
enum class LogOp : uint64_t {
  write = static_cast<uint64_t>(sched::TagClass::log_write),
  sync = static_cast<uint64_t>(sched::TagClass::log_sync),
  allocator = static_cast<uint64_t>(sched::TagClass::log_allocator),
  checkpoint = static_cast<uint64_t>(sched::TagClass::log_checkpoint),
  read = static_cast<uint64_t>(sched::TagClass::log_read),
  retention = static_cast<uint64_t>(sched::TagClass::log_retention)
};
constexpr uint64_t log_tag(LogOp op, uint64_t index) {
  return sched::tag_of(static_cast<sched::TagClass>(op), index);
}
constexpr LogOp log_op_of(uint64_t user_data) {
  return static_cast<LogOp>(sched::class_of(user_data));
}

// A request on `file` for the one op of its class that is ever in flight (the allocator's, the
// checkpoint's).
inline io::IoRequest single_op_request(LogOp op, io::FileHandle file) {
  io::IoRequest req;
  req.file = file;
  req.user_data = log_tag(op, 0);
  return req;
}

// The status of a failed completion (result < 0 carries -errno).
inline io::Status completion_error(int64_t result, const std::string& what) {
  return io::Status::from_errno(static_cast<int>(-result), what);
}

inline uint64_t align_down(uint64_t value, uint64_t align) {
  return value - value % align;
}
inline uint64_t align_up(uint64_t value, uint64_t align) {
  return align_down(value + align - 1, align);
}

class LogState {
 public:
  // `acks` outlives this state: a fail-stop reports its pending appends.
  LogState(io::Disk& disk, io::Clock& clock, const CommitLogOptions& options, AckQueue& acks)
      : disk_(disk),
        clock_(clock),
        options_(options),
        align_bytes_(options.io_mode == io::IoMode::direct ? io::kDirectAlignment : 1),
        acks_(acks) {}
  LogState(const LogState&) = delete;
  LogState& operator=(const LogState&) = delete;

  io::Disk& disk() const { return disk_; }
  io::Clock& clock() const { return clock_; }
  const CommitLogOptions& options() const { return options_; }
  // 1 (buffered) or io::kDirectAlignment (direct): the unit every write is aligned to.
  uint64_t align_bytes() const { return align_bytes_; }
  int64_t now_ms() const { return clock_.monotonic_ns() / 1'000'000; }
  // The end of the segment holding `offset`.
  uint64_t segment_end(uint64_t offset) const {
    return align_down(offset, options_.segment_size_bytes) + options_.segment_size_bytes;
  }

  // ---- The ends ----
  uint64_t appended() const { return appended_; }
  uint64_t written() const { return written_; }
  uint64_t durable() const { return durable_; }
  // The encoder wrote `bytes` more (the hot path: nothing to assert, it only grows).
  void add_appended(uint64_t bytes) { appended_ += bytes; }
  void set_appended(uint64_t offset) {
    UMQ_ASSERT(offset >= appended_);
    appended_ = offset;
  }
  void set_written(uint64_t offset) {
    UMQ_ASSERT(offset >= written_);
    UMQ_ASSERT(offset <= appended_);
    written_ = offset;
  }
  void set_durable(uint64_t offset) {
    UMQ_ASSERT(offset >= durable_);
    UMQ_ASSERT(offset <= written_);
    durable_ = offset;
  }
  // At open and when an empty log moves: all three ends at `offset`, nothing in flight.
  void reset_ends(uint64_t offset) { appended_ = written_ = durable_ = offset; }
  uint64_t writer_segment() const { return writer_segment_; }
  void set_writer_segment(uint64_t base) { writer_segment_ = base; }
  // The store time of the last record appended, and of the last one below durable.
  int64_t last_store_timestamp_ms() const { return last_store_timestamp_ms_; }
  void set_last_store_timestamp_ms(int64_t ms) { last_store_timestamp_ms_ = ms; }
  int64_t durable_store_timestamp_ms() const { return durable_store_timestamp_ms_; }
  void set_durable_store_timestamp_ms(int64_t ms) { durable_store_timestamp_ms_ = ms; }

  // ---- The lifecycle ----
  bool closing() const { return closing_; }
  bool closed() const { return closed_; }
  void begin_closing() { closing_ = true; }
  void mark_closed() { closed_ = true; }
  bool fail_stopped() const { return !fail_status_.is_ok(); }
  const io::Status& fail_status() const { return fail_status_; }
  // The first failure stops the log for good: logged, and every pending append is reported
  // indeterminate. Later failures are ignored (the first is the cause).
  void fail_stop(io::Status status);
  // ok while appends are taken; shut_down (closing) or fail_stopped otherwise.
  io::Status check_open() const {
    if (!closing_ && !closed_ && fail_status_.is_ok()) return io::Status::ok();
    return open_error();
  }

  // ---- Requests in flight ----
  // Submits a request this log completes; false if the disk refused it (busy: try later;
  // any other error fail-stops the log).
  bool submit(const io::IoRequest& request);
  // A request submitted directly on the disk (a read, whose error goes to its caller).
  void note_submitted() { ops_in_flight_++; }
  void note_completed() {
    UMQ_ASSERT(ops_in_flight_ > 0);
    ops_in_flight_--;
  }
  // The destructor's wait: completions taken without being handled.
  void forget_completed(uint32_t n) { ops_in_flight_ -= n < ops_in_flight_ ? n : ops_in_flight_; }
  uint32_t ops_in_flight() const { return ops_in_flight_; }

  CommitLogStats& stats() { return stats_; }
  const CommitLogStats& stats() const { return stats_; }
  const AckQueue& acks() const { return acks_; }

 private:
  io::Status open_error() const;

  io::Disk& disk_;
  io::Clock& clock_;
  const CommitLogOptions options_;
  const uint64_t align_bytes_;
  AckQueue& acks_;

  uint64_t appended_ = 0;        // end of the bytes encoded into write buffers
  uint64_t written_ = 0;         // end of the contiguous prefix whose writes completed
  uint64_t durable_ = 0;         // end of the prefix covered by an fdatasync submitted after them
  uint64_t writer_segment_ = 0;  // base of the segment appends go to
  int64_t last_store_timestamp_ms_ = 0;
  int64_t durable_store_timestamp_ms_ = 0;

  io::Status fail_status_;
  bool closing_ = false;
  bool closed_ = false;
  uint32_t ops_in_flight_ = 0;
  CommitLogStats stats_;
};

}  // namespace uringmq::engine
