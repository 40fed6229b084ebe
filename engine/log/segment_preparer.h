#pragma once
// SegmentPreparer: the next segment, prepared one ahead of the writer, and the zeros written
// just ahead of the writer in its own segment (engine/log/README.md, "Segment preparation").
// The next segment is the spare renamed into place, or a new file fallocated, zero-filled
// (SegmentFill::zeroed) paced behind the writer, and fdatasynced; then the directory is
// fsynced, and only then may the writer roll into it (take_prepared).
//
// Invariants: at most one preparation step and one zero write ahead in flight. A zero write
// ahead starts at or above the block after appended, and LogWriter holds any write reaching
// into one in flight (zeros_in_flight_below), so zeros never land on appended bytes. ENOSPC
// is not fatal: no_space is kept (ready_status) and the preparation retried after
// no_space_retry_ms; any other failure fail-stops the log.
// Threading: the shard's thread only.

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/log/log_state.h"
#include "engine/log/segment_files.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq::engine {

class LogWriter;
class LogFlush;

class SegmentPreparer {
 public:
  // The writer and the flush are only asked whether the log is quiet (quiet()).
  SegmentPreparer(LogState& state, SegmentFiles& files, const LogWriter& writer,
                  const LogFlush& flush);
  SegmentPreparer(const SegmentPreparer&) = delete;
  SegmentPreparer& operator=(const SegmentPreparer&) = delete;

  // The chunk of zeros (zero_fill_chunk_bytes, 4 KiB aligned) every zero write sends.
  void init(std::byte* zero_chunk) { zero_chunk_ = zero_chunk; }
  // At open: a segment past the writer's (a clean stop kept it) is the prepared next one.
  void adopt_ready(const LogSegment& segment);
  // At open (SegmentFill::zeroed): the writer's segment may hold unwritten blocks ahead of it
  // (created just now, or by an earlier run that stopped before zeroing it).
  void zero_ahead_of_writer() {
    ahead_ = ZeroAhead{.active = true, .base = state_.writer_segment()};
  }

  // ok when the prepared segment may take over; busy (the roll waits, and the preparation
  // runs unpaced) or the preparation's no_space otherwise.
  io::Status ready_status();
  // The prepared segment, based at appended, becomes the writer's: returned to be added.
  LogSegment take_prepared();
  // No preparation step in flight (nothing prepared, or prepared and waiting).
  bool settled() const { return step_ == Step::idle || step_ == Step::ready; }
  // An empty log moves: a segment prepared for its old base is removed (prepared again later).
  io::Status drop_prepared();
  // The zeros ahead follow the writer's segment, now based at `base`.
  void move_zero_ahead(uint64_t base) { ahead_.base = base; }

  // Submits the next step: a zero write ahead, the zero-fill's next chunk, or a preparation.
  void submit_work();
  // A completion of the allocator class.
  void complete(uint64_t index, int64_t result);
  // When a preparation that failed for lack of space is retried (INT64_MAX: none waits).
  int64_t deadline_ms() const { return step_ == Step::idle ? retry_at_ms_ : INT64_MAX; }
  // A zero write ahead is in flight in segment `base` below `file_end`.
  bool zeros_in_flight_below(uint64_t base, uint64_t file_end) const {
    return ahead_.in_flight && base == ahead_.base && file_end > ahead_.in_flight_from;
  }
  // Closes the prepared segment's handle, if any (the log is going away).
  void close_files();

 private:
  enum class Step : uint8_t { idle, fallocating, zeroing, syncing, dir_syncing, ready };
  // Zeros written just ahead of the writer in its own segment. front: file offset up to
  // which they are written.
  struct ZeroAhead {
    bool active = false;
    uint64_t base = 0;
    uint64_t front = 0;
    bool in_flight = false;
    uint64_t in_flight_from = 0;
  };
  static constexpr int64_t kQuietNs = 2'000'000;

  bool quiet() const;
  bool zero_fill_should_wait() const;
  void maybe_zero_ahead();
  void on_zero_ahead_done(int64_t result);
  void start_new_segment();
  bool start_recycled();
  void on_step_done(int64_t result);
  void continue_zero_fill();
  void failed(io::Status status);

  LogState& state_;
  SegmentFiles& files_;
  const LogWriter& writer_;
  const LogFlush& flush_;
  std::byte* zero_chunk_ = nullptr;
  Step step_ = Step::idle;
  uint64_t base_ = 0;  // of the segment being prepared
  io::FileHandle file_;
  uint64_t zeroed_ = 0;
  int64_t retry_at_ms_ = 0;
  bool roll_waiting_ = false;  // an append needed the next segment before it was ready
  bool zero_paused_ = false;   // zeroing waits for the writer (zero_fill_should_wait)
  bool recycled_ = false;      // the segment being prepared is the recycled spare
  io::Status status_;          // no_space while preparation is failing for lack of space
  // The path of the segment being prepared, rewritten in place for each segment (the same
  // length every time), so that no poll() allocates.
  std::string path_;
  ZeroAhead ahead_;
};

}  // namespace uringmq::engine
