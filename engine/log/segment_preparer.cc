#include "engine/log/segment_preparer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "engine/log/file_names.h"
#include "engine/log/log_flush.h"
#include "engine/log/log_writer.h"

namespace uringmq::engine {

namespace {

// The allocator class's request index of the zero write ahead of the writer (0: preparation).
constexpr uint64_t kZeroAheadIndex = 1;

}  // namespace

SegmentPreparer::SegmentPreparer(LogState& state, SegmentFiles& files, const LogWriter& writer,
                                 const LogFlush& flush)
    : state_(state), files_(files), writer_(writer), flush_(flush) {
  files_.set_path(0, path_);
}

void SegmentPreparer::adopt_ready(const LogSegment& segment) {
  base_ = segment.base;
  file_ = segment.file;
  step_ = Step::ready;
}

io::Status SegmentPreparer::ready_status() {
  if (step_ != Step::ready) {
    if (!status_.is_ok() && state_.now_ms() < retry_at_ms_) return status_;
    roll_waiting_ = true;
    return io::Status::error(io::Code::busy, "the next segment is still being prepared");
  }
  return io::Status::ok();
}

LogSegment SegmentPreparer::take_prepared() {
  UMQ_ASSERT(step_ == Step::ready);
  UMQ_ASSERT(base_ == state_.appended());
  LogSegment segment{.base = base_, .file = file_, .read_file = {}, .dirty = false};
  file_ = io::FileHandle{};
  step_ = Step::idle;
  return segment;
}

io::Status SegmentPreparer::drop_prepared() {
  if (step_ != Step::ready) return io::Status::ok();
  state_.disk().close(file_);
  file_ = io::FileHandle{};
  step_ = Step::idle;
  return state_.disk().remove(files_.path(base_));
}

void SegmentPreparer::close_files() {
  if (file_.valid()) state_.disk().close(file_);
}

// ---- Zeroing just ahead of the writer, in its own segment ----

// With SegmentFill::zeroed, a segment created unwritten for the writer (a fresh store's first)
// gets zeros written just ahead of the writer: O_DIRECT writes into unwritten extents make each
// of its fdatasyncs commit the file system's journal (SYNC appends 4-5x slower, bench/RESULTS.md).
// Paced like the next segment's zero-fill. Safety: each zero write starts at or above the block
// after the last appended byte, and LogWriter holds any write reaching into a zero write in
// flight, so zeros never land on appended bytes, and data always lands after the zeros.
// Quiet: no append write or fdatasync in flight, no append awaiting its acknowledgement, and no
// write submitted for kQuietNs. Idle alone is not enough: a producer that waits for its
// acknowledgements leaves the log idle for microseconds before its next append, and a 1 MiB zero
// write started in that gap (2.4 ms on this ext4) held the append's write behind it in the
// device queue: a fresh store's writer ran at one append write per zero write (ASYNC 128 B,
// 64 in flight: 9,000 msgs/s against 118,000 with the segment left unwritten).
bool SegmentPreparer::quiet() const {
  return writer_.writes_in_flight() == 0 && flush_.syncs_outstanding() == 0 &&
         state_.acks().pending() == 0 &&
         state_.clock().monotonic_ns() - writer_.last_write_ns() >= kQuietNs;
}

void SegmentPreparer::maybe_zero_ahead() {
  if (!ahead_.active || ahead_.in_flight || state_.closing() || state_.fail_stopped()) return;
  const CommitLogOptions& options = state_.options();
  const uint64_t segment_size = options.segment_size_bytes;
  const uint64_t position = state_.appended() - state_.writer_segment();
  const uint64_t from = std::max(ahead_.front, align_up(position, io::kDirectAlignment));
  if (ahead_.base != state_.writer_segment() || from >= segment_size) {
    ahead_.active = false;  // the writer moved on, or its segment is zeroed to the end
    return;
  }
  if (!quiet() && options.zero_fill_lead_bytes != UINT64_MAX &&
      from >= position + options.zero_fill_lead_bytes) {
    return;  // far enough ahead for now
  }
  io::IoRequest req;
  req.kind = io::OpKind::write;
  req.file = files_.back().file;
  req.file_offset = from;
  req.length_bytes = std::min<uint64_t>(options.zero_fill_chunk_bytes, segment_size - from);
  req.buffer = zero_chunk_;
  req.user_data = log_tag(LogOp::allocator, kZeroAheadIndex);
  if (!state_.submit(req)) return;
  ahead_.in_flight = true;
  ahead_.in_flight_from = from;
}

void SegmentPreparer::on_zero_ahead_done(int64_t result) {
  UMQ_ASSERT(ahead_.in_flight);
  ahead_.in_flight = false;
  if (state_.fail_stopped()) return;
  if (result <= 0) {
    state_.fail_stop(io::Status::from_errno(
        result < 0 ? static_cast<int>(-result) : EIO,
        "zeroing ahead of the writer in segment " + offset_file_name(ahead_.base)));
    return;
  }
  ahead_.front = ahead_.in_flight_from + static_cast<uint64_t>(result);
}

// ---- Segment preparation, one ahead of the writer ----

// Pacing: the zero-fill runs back to back only while the log is quiet (quiet(): idle, and no
// append write for 2 ms), when an append waits for the segment, or at close; otherwise it keeps
// only zero_fill_lead_bytes ahead of 5/4 of the writer's position in its own segment, so it
// ends with 1/5 of the segment to spare and never floods the device queue (or, buffered, the
// io-wq workers) in front of the appends' writes. An fdatasync in flight counts as busy: under
// SYNC_FLUSH no write is in flight while it runs, and zeros sent then are what the device's
// cache flush waits for.
bool SegmentPreparer::zero_fill_should_wait() const {
  const CommitLogOptions& options = state_.options();
  if (state_.closing() || quiet() || roll_waiting_ || options.zero_fill_lead_bytes == UINT64_MAX) {
    return false;
  }
  const uint64_t position = state_.appended() - state_.writer_segment();
  return zeroed_ >= position + position / 4 + options.zero_fill_lead_bytes;
}

void SegmentPreparer::submit_work() {
  maybe_zero_ahead();
  if (zero_paused_ && !state_.fail_stopped() && !zero_fill_should_wait()) {
    zero_paused_ = false;
    continue_zero_fill();
    return;
  }
  if (step_ != Step::idle || state_.closing() || state_.fail_stopped()) return;
  if (state_.now_ms() < retry_at_ms_) return;
  const uint64_t appended = state_.appended();
  if (!roll_waiting_ &&
      state_.segment_end(appended) - appended > state_.options().prepare_ahead_bytes) {
    return;
  }
  roll_waiting_ = false;
  base_ = state_.writer_segment() + state_.options().segment_size_bytes;
  files_.set_path(base_, path_);
  if (files_.spare_present() && start_recycled()) return;
  start_new_segment();
}

void SegmentPreparer::start_new_segment() {
  const CommitLogOptions& options = state_.options();
  io::Disk& disk = state_.disk();
  if (options.space_check) {
    io::Status space = options.space_check(options.segment_size_bytes);
    UMQ_ASSERT(space.is_ok() || space.code() == io::Code::no_space);
    if (!space.is_ok()) return failed(std::move(space));
  }
  io::Result<io::FileHandle> file =
      disk.open(path_, io::OpenMode::create_exclusive, options.io_mode);
  if (!file.is_ok()) {
    failed(file.status());
    return;
  }
  file_ = *file;
  io::IoRequest req = single_op_request(LogOp::allocator, file_);
  req.kind = io::OpKind::fallocate;
  req.length_bytes = options.segment_size_bytes;
  if (!state_.submit(req)) {
    // The queue is full: give the file back and start again on a later poll.
    disk.close(file_);
    file_ = io::FileHandle{};
    (void)disk.remove(path_);
    return;
  }
  step_ = Step::fallocating;
}

// The next segment from the spare a retention pass left: renamed into place, then the directory
// fsynced. Nothing is written: its blocks and size are durable from its first life, and its old
// records carry their old PHYSICALOFFSETs, which recovery never accepts at the new positions.
// False when the request queue is full (the spare is put back; a later poll tries again).
bool SegmentPreparer::start_recycled() {
  io::Disk& disk = state_.disk();
  io::Status s = files_.use_spare(path_);
  if (!s.is_ok()) {
    failed(s);
    return true;
  }
  io::Result<io::FileHandle> file =
      disk.open(path_, io::OpenMode::read_write, state_.options().io_mode);
  if (!file.is_ok()) {
    (void)disk.remove(path_);
    failed(file.status());
    return true;
  }
  io::IoRequest req = single_op_request(LogOp::allocator, files_.dir_handle());
  req.kind = io::OpKind::fsync;
  if (!state_.submit(req)) {
    disk.close(*file);
    if (!state_.fail_stopped()) files_.put_back_spare(path_);
    return files_.spare_present() || state_.fail_stopped();
  }
  file_ = *file;
  recycled_ = true;
  step_ = Step::dir_syncing;
  return true;
}

void SegmentPreparer::failed(io::Status status) {
  if (file_.valid()) {
    state_.disk().close(file_);
    file_ = io::FileHandle{};
    (void)state_.disk().remove(path_);  // nothing in it was ever used
  }
  step_ = Step::idle;
  zero_paused_ = false;
  if (status.code() == io::Code::no_space) {
    // Appends that fit the current segment go on; those that need the next are rejected.
    const bool first = status_.is_ok();  // logged once an episode, not at every retry
    status_ = io::Status::error(io::Code::no_space, "no space to allocate CommitLog segment " +
                                                        path_ + ": " + status.to_string());
    retry_at_ms_ = state_.now_ms() + state_.options().no_space_retry_ms;
    if (first) {
      std::fprintf(stderr,
                   "uringmq: CommitLog %s: %s; appends that need the next segment are refused "
                   "(no_space), retried every %lld ms\n",
                   state_.options().dir.c_str(), status_.to_string().c_str(),
                   static_cast<long long>(state_.options().no_space_retry_ms));
    }
    return;
  }
  state_.fail_stop(status);
}

void SegmentPreparer::complete(uint64_t index, int64_t result) {
  if (index == kZeroAheadIndex) {
    on_zero_ahead_done(result);
    return;
  }
  if (state_.fail_stopped() && result >= 0 && step_ != Step::ready) {
    return;  // stopped: leave the half-prepared file for recovery to remove
  }
  on_step_done(result);
}

void SegmentPreparer::on_step_done(int64_t result) {
  const std::string& path = path_;  // for errors only
  if (result < 0) return failed(completion_error(result, "prepare " + path));
  io::IoRequest req = single_op_request(LogOp::allocator, file_);
  switch (step_) {
    case Step::fallocating:
      // Unwritten: nothing to zero, straight to the fdatasync that makes the size durable.
      zeroed_ = zero_fills_segments(state_.options()) ? 0 : state_.options().segment_size_bytes;
      step_ = Step::zeroing;
      break;
    case Step::zeroing:
      if (result == 0) {
        state_.fail_stop(
            io::Status::error(io::Code::io_error, "zero-fill of " + path + " stalled"));
        return;
      }
      zeroed_ += static_cast<uint64_t>(result);
      break;
    case Step::syncing:
      req.kind = io::OpKind::fsync;
      req.file = files_.dir_handle();
      step_ = Step::dir_syncing;
      if (!state_.submit(req)) {
        state_.fail_stop(io::Status::error(io::Code::busy, "cannot fsync " + path));
      }
      return;
    case Step::dir_syncing:
      step_ = Step::ready;
      if (!status_.is_ok()) {
        std::fprintf(stderr, "uringmq: CommitLog %s: segment %s allocated: appends resume\n",
                     state_.options().dir.c_str(), path_.c_str());
      }
      status_ = io::Status::ok();
      state_.stats().segments_prepared++;
      if (recycled_) state_.stats().segments_recycled++;
      recycled_ = false;
      return;
    default:
      UMQ_ASSERT_MSG(false, "allocator completion without a step");
  }
  continue_zero_fill();
}

// The zeroing step's next request: a chunk of zeros, or the fdatasync once all are written.
void SegmentPreparer::continue_zero_fill() {
  UMQ_ASSERT(step_ == Step::zeroing);
  const CommitLogOptions& options = state_.options();
  io::IoRequest req = single_op_request(LogOp::allocator, file_);
  if (zeroed_ < options.segment_size_bytes && zero_fill_should_wait()) {
    zero_paused_ = true;  // submit_work() resumes it
    return;
  }
  if (zeroed_ < options.segment_size_bytes) {
    req.kind = io::OpKind::write;
    req.file_offset = zeroed_;
    req.length_bytes =
        std::min<uint64_t>(options.zero_fill_chunk_bytes, options.segment_size_bytes - zeroed_);
    req.buffer = zero_chunk_;
  } else {
    req.kind = io::OpKind::fdatasync;
    step_ = Step::syncing;
  }
  if (!state_.submit(req)) {
    state_.fail_stop(io::Status::error(io::Code::busy, "cannot prepare " + path_));
  }
}

}  // namespace uringmq::engine
