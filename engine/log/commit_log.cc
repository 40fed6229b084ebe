#include "engine/log/commit_log.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/log/checkpoint.h"
#include "engine/log/file_names.h"
#include "engine/log/log_recovery.h"
#include "engine/metrics_histogram.h"
#include "sched/completion_tags.h"

namespace uringmq::engine {

namespace {

constexpr size_t kCheckpointBlockBytes = 4096;
constexpr std::string_view kLockFile = "lock";
constexpr std::string_view kAbortFile = "abort";

io::Status validate(const CommitLogOptions& o) {
  auto bad = [](const std::string& what) {
    return io::Status::error(io::Code::invalid_argument, what);
  };
  if (o.dir.empty()) return bad("CommitLog directory is empty");
  if (o.segment_size_bytes < (64u << 10) || o.segment_size_bytes % io::kDirectAlignment != 0) {
    return bad("segment size " + std::to_string(o.segment_size_bytes) +
               " must be a multiple of 4096 and at least 65536 bytes");
  }
  uint64_t max_record = uint64_t{o.limits.max_body_bytes} + kMaxPropertiesBytes + 1024;
  if (o.write_buffer_bytes % io::kDirectAlignment != 0 ||
      o.write_buffer_bytes < max_record + 2 * io::kDirectAlignment) {
    return bad("write buffer of " + std::to_string(o.write_buffer_bytes) +
               " bytes cannot hold the largest record (" + std::to_string(max_record) +
               " bytes) plus 8 KiB; raise the buffer size or lower maxMessageSize");
  }
  if (o.segment_size_bytes < max_record + kBlankRecordBytes) {
    return bad("segment size " + std::to_string(o.segment_size_bytes) +
               " cannot hold the largest record");
  }
  if (o.write_buffer_count < 2) return bad("at least 2 write buffers are needed");
  if (o.max_writes_in_flight == 0 || o.max_writes_in_flight > 62) {
    return bad("max_writes_in_flight must be between 1 and 62");
  }
  if (o.max_write_bytes < io::kDirectAlignment || o.max_write_bytes % io::kDirectAlignment != 0) {
    return bad("max_write_bytes must be a positive multiple of 4096");
  }
  if (o.max_pending_acks == 0) return bad("max_pending_acks must be positive");
  if (o.zero_fill_chunk_bytes == 0 || o.zero_fill_chunk_bytes % io::kDirectAlignment != 0 ||
      o.segment_size_bytes % o.zero_fill_chunk_bytes != 0) {
    return bad("zero_fill_chunk_bytes must be a multiple of 4096 dividing the segment size");
  }
  return io::Status::ok();
}

}  // namespace

std::string CommitLog::segment_name(uint64_t base_offset) {
  return offset_file_name(base_offset);
}

CommitLog::CommitLog(io::Disk& disk, io::Clock& clock, const CommitLogOptions& options)
    : state_(disk, clock, options, acks_),
      files_(state_),
      reads_(state_, files_),
      flush_(state_, files_),
      writer_(state_, files_, preparer_),
      preparer_(state_, files_, writer_, flush_),
      checkpoint_(state_) {}

// One line per recovered log (the per-GiB progress lines come from the scan): how the last
// stop ended, what was checked and how fast, and what was repaired.
static void log_recovery_summary(const std::string& dir, const RecoveryReport& r) {
  const double seconds = static_cast<double>(r.duration_ns) / 1e9;
  const double mib = static_cast<double>(r.bytes_scanned) / (1 << 20);
  std::fprintf(stderr,
               "uringmq: recovered %s: %s stop, %.1f MiB (%llu records) checked from log offset "
               "%llu in %.3f s (%.0f MiB/s), log ends at %llu, %llu torn bytes zeroed, "
               "%u segment(s) removed, %u damaged record(s) repaired from a replica%s\n",
               dir.c_str(), r.unclean_stop ? "unclean" : "clean", mib,
               static_cast<unsigned long long>(r.records_scanned),
               static_cast<unsigned long long>(r.scan_start_offset), seconds,
               seconds > 0 ? mib / seconds : 0.0, static_cast<unsigned long long>(r.end_offset),
               static_cast<unsigned long long>(r.torn_bytes_truncated), r.segments_removed,
               r.records_repaired, r.checkpoint_rebuilt ? ", checkpoint rebuilt" : "");
}

io::Result<std::unique_ptr<CommitLog>> CommitLog::open(
    io::Disk& disk, io::Clock& clock, const CommitLogOptions& options, RecoveryReport* report_out,
    const std::function<void(uint64_t, const MessageView&)>& recovery_visitor,
    io::Disk* scan_disk) {
  UMQ_RETURN_IF_ERROR(validate(options));
  int64_t started_ns = clock.monotonic_ns();
  UMQ_RETURN_IF_ERROR(disk.make_dir(options.dir));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, io::dir_name(options.dir)));  // the entry of dir itself
  UMQ_RETURN_IF_ERROR(disk.lock(io::path_join(options.dir, kLockFile)));
  std::unique_ptr<CommitLog> log(new CommitLog(disk, clock, options));
  RecoveryReport report;
  auto fail = [&](io::Status s) -> io::Result<std::unique_ptr<CommitLog>> {
    log.reset();  // releases the lock
    return s;
  };
  io::Status s = disk.make_dir(log->files_.dir());
  if (s.is_ok()) s = io::sync_dir(disk, options.dir);
  if (!s.is_ok()) return fail(s);
  io::Result<bool> abort_present = disk.exists(io::path_join(options.dir, kAbortFile));
  if (!abort_present.is_ok()) return fail(abort_present.status());
  report.unclean_stop = *abort_present;
  io::Result<RecoveredLog> recovered =
      recover_log(disk, options, report.unclean_stop, report, recovery_visitor, scan_disk);
  if (!recovered.is_ok()) return fail(recovered.status());
  s = log->files_.open_recovered(recovered->segment_bases);
  if (!s.is_ok()) return fail(s);
  s = log->start(recovered->end_offset, recovered->last_store_timestamp_ms,
                 std::min(report.checkpoint_offset, recovered->end_offset));
  if (!s.is_ok()) return fail(s);
  report.duration_ns = clock.monotonic_ns() - started_ns;
  if (report.end_offset > 0 || report.unclean_stop) log_recovery_summary(options.dir, report);
  if (report_out != nullptr) *report_out = report;
  return log;
}

// Creates a segment synchronously: the writer's first segment, or one recovery removed.
// fallocate and fdatasync only, so a fresh store opens at once whatever the segment size; with
// SegmentFill::zeroed its blocks are zeroed just ahead of the writer after open (ZeroAhead).
static io::Status create_segment_sync(io::Disk& disk, const std::string& segment_dir, uint64_t base,
                                      const CommitLogOptions& options, io::FileHandle* out) {
  std::string path = io::path_join(segment_dir, CommitLog::segment_name(base));
  io::Result<io::FileHandle> file =
      disk.open(path, io::OpenMode::create_exclusive, options.io_mode);
  if (!file.is_ok()) return file.status();
  io::IoRequest req;
  req.kind = io::OpKind::fallocate;
  req.file = *file;
  req.length_bytes = options.segment_size_bytes;
  io::Status s = io::run_sync(disk, req, "fallocate " + path);
  if (s.is_ok()) s = io::fdatasync_sync(disk, *file, "fdatasync " + path);
  if (s.is_ok()) s = io::sync_dir(disk, segment_dir);
  if (!s.is_ok()) {
    disk.close(*file);
    (void)disk.remove(path);
    return s;
  }
  *out = *file;
  return io::Status::ok();
}

io::Status CommitLog::start(uint64_t end_offset, int64_t last_store_timestamp_ms,
                            uint64_t checkpoint_offset) {
  const CommitLogOptions& options = state_.options();
  const uint64_t buffers_bytes = options.write_buffer_bytes * options.write_buffer_count;
  io::Result<io::PopulatedMemory> memory = io::PopulatedMemory::allocate(
      buffers_bytes + options.zero_fill_chunk_bytes + kCheckpointBlockBytes);
  if (!memory.is_ok()) return memory.status();
  memory_ = std::move(*memory);
  std::byte* const base = memory_.data();
  writer_.init(base);
  preparer_.init(base + buffers_bytes);
  checkpoint_.init(base + buffers_bytes + options.zero_fill_chunk_bytes);
  files_.reserve_room();
  acks_.init(options.max_pending_acks);
  reads_.init();

  UMQ_RETURN_IF_ERROR(files_.adopt_spare());
  state_.set_writer_segment(align_down(end_offset, options.segment_size_bytes));
  UMQ_RETURN_IF_ERROR(start_segments());
  state_.reset_ends(end_offset);
  state_.set_last_store_timestamp_ms(last_store_timestamp_ms);
  state_.set_durable_store_timestamp_ms(last_store_timestamp_ms);
  UMQ_RETURN_IF_ERROR(writer_.start(end_offset));
  // The watermark does not move at open: an owner (a shard and its ConsumeQueues) may still
  // need the records above the old one re-dispatched, and says so with set_checkpoint_limit().
  UMQ_RETURN_IF_ERROR(checkpoint_.write_at_open(checkpoint_offset));
  UMQ_RETURN_IF_ERROR(start_files());
  const int64_t now_ms = state_.now_ms();
  flush_.start(now_ms);
  checkpoint_.start_interval(now_ms);
  return io::Status::ok();
}

io::Status CommitLog::start_segments() {
  const uint64_t writer_segment = state_.writer_segment();
  if (files_.empty() || files_.back().base < writer_segment) {
    io::FileHandle file;
    UMQ_RETURN_IF_ERROR(
        create_segment_sync(state_.disk(), files_.dir(), writer_segment, state_.options(), &file));
    files_.add(LogSegment{.base = writer_segment, .file = file, .read_file = {}, .dirty = false});
    state_.stats().segments_prepared++;
  }
  if (files_.back().base > writer_segment) {
    // A clean stop kept the prepared next segment: it is ready for the writer.
    preparer_.adopt_ready(files_.take_last());
  }
  UMQ_ASSERT(files_.back().base == writer_segment);
  if (zero_fills_segments(state_.options())) {
    // The writer's segment may hold unwritten blocks ahead of it (created just now, or by an
    // earlier run that stopped before zeroing it): zero them just ahead of the writer.
    preparer_.zero_ahead_of_writer();
  }
  return io::Status::ok();
}

io::Status CommitLog::start_files() {
  io::Disk& disk = state_.disk();
  const std::string& dir = state_.options().dir;
  std::string abort_path = io::path_join(dir, kAbortFile);
  io::Result<bool> abort_present = disk.exists(abort_path);
  if (!abort_present.is_ok()) return abort_present.status();
  if (!*abort_present) {
    io::Result<io::FileHandle> abort_file = disk.open(abort_path, io::OpenMode::create_exclusive);
    if (!abort_file.is_ok()) return abort_file.status();
    disk.close(*abort_file);
  }
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, dir));
  UMQ_RETURN_IF_ERROR(files_.open_dir_handle());
  return checkpoint_.open_dir_handle();
}

CommitLog::~CommitLog() {
  io::Disk& disk = state_.disk();
  const std::string& dir = state_.options().dir;
  if (memory_.data() == nullptr) {
    disk.unlock(io::path_join(dir, kLockFile));
    return;
  }
  // Buffers must outlive the requests that use them. (A simulated crash drops its requests:
  // then the disk has nothing in flight and there is nothing to wait for.)
  while (state_.ops_in_flight() > 0 && disk.in_flight() > 0) {
    std::array<io::IoCompletion, 64> done;
    size_t n = disk.poll(done, io::Wait::at_least_one);
    state_.forget_completed(static_cast<uint32_t>(n));
  }
  files_.close_files();
  preparer_.close_files();
  checkpoint_.close_files();
  disk.unregister_buffers();
  if (!state_.closed()) disk.unlock(io::path_join(dir, kLockFile));
}

LogOffset CommitLog::min_offset() const {
  return LogOffset{files_.empty() ? 0 : files_.front().base};
}

size_t CommitLog::pending_work() const {
  return acks_.pending() + state_.ops_in_flight();
}

// ---- Appends ----

io::Result<AppendResult> CommitLog::append(const MessageInput& input, int64_t queue_offset,
                                           uint64_t tag) {
  UMQ_RETURN_IF_ERROR(state_.check_open());
  if (acks_.full()) {
    return io::Status::error(io::Code::busy, "too many appends awaiting acknowledgement");
  }
  io::Result<uint32_t> size = encoded_size(input, state_.options().limits);
  if (!size.is_ok()) return size.status();
  UMQ_RETURN_IF_ERROR(reserve(*size));
  const AppendResult result = writer_.encode_record(input, queue_offset, *size);
  acks_.push(state_.appended(), tag, result.offset.value);
  state_.stats().appends++;
  return result;
}

io::Status CommitLog::roll_segment() {
  UMQ_RETURN_IF_ERROR(preparer_.ready_status());
  UMQ_RETURN_IF_ERROR(writer_.seal_segment());
  adopt_prepared_segment();
  return io::Status::ok();
}

// The writer has reached the prepared segment's base (a roll's blank record, or the master's
// tail whole): the prepared segment becomes the writer's.
void CommitLog::adopt_prepared_segment() {
  const LogSegment segment = preparer_.take_prepared();
  files_.add(segment);
  state_.set_writer_segment(segment.base);
}

// ---- Raw appends (a replica) ----

io::Status CommitLog::append_raw(LogOffset offset, std::span<const std::byte> bytes) {
  UMQ_RETURN_IF_ERROR(state_.check_open());
  const CommitLogOptions& options = state_.options();
  const uint64_t appended = state_.appended();
  if (offset.value != appended) {
    return io::Status::error(io::Code::invalid_argument,
                             "replicated bytes at log offset " + std::to_string(offset.value) +
                                 " but " + options.dir + " ends at " + std::to_string(appended));
  }
  if (bytes.empty()) return io::Status::ok();
  if (files_.rebase_pending()) {
    return io::Status::error(io::Code::busy, "the log's new first segment is not durable yet");
  }
  if (bytes.size() + 2 * io::kDirectAlignment > options.write_buffer_bytes) {
    return io::Status::error(io::Code::invalid_argument,
                             "replicated chunk of " + std::to_string(bytes.size()) +
                                 " bytes is larger than a write buffer allows");
  }
  const uint64_t segment_size = options.segment_size_bytes;
  if (appended == state_.writer_segment() + segment_size) {
    // The writer's segment is full (the master sent its tail whole): the prepared one takes over.
    UMQ_RETURN_IF_ERROR(preparer_.ready_status());
    adopt_prepared_segment();
  }
  if (appended + bytes.size() > state_.writer_segment() + segment_size) {
    return io::Status::error(io::Code::invalid_argument, "replicated chunk at log offset " +
                                                             std::to_string(appended) + " of " +
                                                             std::to_string(bytes.size()) +
                                                             " bytes crosses the end of segment " +
                                                             segment_name(state_.writer_segment()));
  }
  UMQ_RETURN_IF_ERROR(writer_.ensure_buffer_room(bytes.size()));
  writer_.copy_raw(bytes);
  return io::Status::ok();
}

io::Status CommitLog::rebase_empty(LogOffset base) {
  UMQ_RETURN_IF_ERROR(state_.check_open());
  const uint64_t segment_size = state_.options().segment_size_bytes;
  const uint64_t appended = state_.appended();
  if (base.value % segment_size != 0) {
    return io::Status::error(io::Code::invalid_argument,
                             "log base " + std::to_string(base.value) +
                                 " is not a multiple of the segment size " +
                                 std::to_string(segment_size));
  }
  if (files_.count() != 1 || appended != files_.front().base) {
    return io::Status::error(io::Code::invalid_argument,
                             state_.options().dir + " is not empty (it ends at " +
                                 std::to_string(appended) + "): it cannot move to " +
                                 std::to_string(base.value));
  }
  if (base.value == appended) return io::Status::ok();
  if (state_.ops_in_flight() > 0 || acks_.pending() > 0 || !preparer_.settled()) {
    return io::Status::error(io::Code::busy, "IO in flight; the log moves once it is done");
  }
  // A segment prepared for the old base is prepared again later. The empty segment
  // (fallocated, its zeros as far as they went) takes the new name; appends wait for the
  // directory fsync that makes the name durable (SegmentFiles::rebase_pending).
  UMQ_RETURN_IF_ERROR(preparer_.drop_prepared());
  UMQ_RETURN_IF_ERROR(files_.rename_only_segment(base.value));
  state_.set_writer_segment(base.value);
  state_.reset_ends(base.value);
  writer_.reset_at(base.value);
  preparer_.move_zero_ahead(base.value);
  return io::Status::ok();
}

// ---- The loop ----

void CommitLog::poll(io::Wait wait) {
  if (state_.closed()) return;
  submit_work();
  std::array<io::IoCompletion, 64> done;
  size_t n = state_.disk().poll(done, state_.ops_in_flight() > 0 ? wait : io::Wait::none);
  for (size_t i = 0; i < n; i++) complete(done[i]);
  submit_work();
}

void CommitLog::submit_work() {
  if (state_.closed()) return;
  files_.submit_work();
  writer_.submit_writes();
  flush_.submit_work();
  checkpoint_.submit_work();
  preparer_.submit_work();
  release_acks();
}

bool CommitLog::owns(uint64_t user_data) {
  uint64_t op = user_data >> 56;
  return op >= static_cast<uint64_t>(LogOp::write) && op <= static_cast<uint64_t>(LogOp::retention);
}

int64_t CommitLog::next_deadline_ms() const {
  return std::min({flush_.deadline_ms(), checkpoint_.deadline_ms(), preparer_.deadline_ms()});
}

void CommitLog::complete(const io::IoCompletion& completion) {
  state_.note_completed();
  const uint64_t index = sched::index_of(completion.user_data);
  switch (log_op_of(completion.user_data)) {
    case LogOp::write:
      writer_.complete(static_cast<uint32_t>(index), completion.result);
      break;
    case LogOp::sync:
      flush_.complete(index, completion.result);
      break;
    case LogOp::allocator:
      preparer_.complete(index, completion.result);
      break;
    case LogOp::checkpoint:
      checkpoint_.complete(completion.result);
      break;
    case LogOp::retention:
      files_.complete(index, completion.result);
      break;
    case LogOp::read:
      reads_.complete(index, completion.result);
      break;
    default:
      UMQ_ASSERT_MSG(false, "completion of an unknown operation");
  }
}

void CommitLog::release_acks() {
  const CommitLogOptions& options = state_.options();
  const bool ack_on_write =
      options.flush_mode == FlushMode::async_flush || options.unsafe_ack_before_sync;
  const uint64_t watermark = ack_on_write ? state_.written() : state_.durable();
  state_.stats().acks_ok += acks_.release(watermark);
}

size_t CommitLog::take_acks(std::span<Ack> out) {
  return acks_.take(out);
}

// ---- Reads ----

io::Status CommitLog::read(LogOffset offset, uint32_t size_bytes, std::byte* dest, uint64_t tag) {
  return reads_.read(offset.value, size_bytes, dest, tag);
}

size_t CommitLog::take_reads(std::span<ReadCompletion> out) {
  return reads_.take(out);
}

bool CommitLog::read_memory(LogOffset offset, uint32_t size_bytes, std::byte* dest) const {
  return writer_.read_memory(offset.value, size_bytes, dest);
}

// ---- Clean stop ----

bool CommitLog::close_done() const {
  return state_.ops_in_flight() == 0 && preparer_.settled() && checkpoint_.idle() &&
         state_.written() == state_.appended() && state_.durable() == state_.written();
}

io::Status CommitLog::close() {
  UMQ_ASSERT(!state_.closed());
  state_.begin_closing();
  while (!state_.fail_stopped() && !close_done()) poll(io::Wait::at_least_one);
  while (state_.ops_in_flight() > 0) poll(io::Wait::at_least_one);
  release_acks();
  if (state_.fail_stopped()) return state_.fail_status();  // the abort file stays: recovery decides
  io::Disk& disk = state_.disk();
  const std::string& dir = state_.options().dir;
  UMQ_RETURN_IF_ERROR(checkpoint_.write_final());
  UMQ_RETURN_IF_ERROR(disk.remove(io::path_join(dir, kAbortFile)));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk, dir));
  disk.unlock(io::path_join(dir, kLockFile));
  state_.mark_closed();
  return io::Status::ok();
}

// ---- Checkpoint limit, retention ----

void CommitLog::set_checkpoint_limit(uint64_t limit) {
  // The watermark may not pass what the owner says is safe (its ConsumeQueues' durable
  // dispatch point): recovery re-dispatches everything above it. Stays a record boundary:
  // both the durable end and the owner's point are record ends.
  checkpoint_.set_limit(limit);
}

io::Result<uint32_t> CommitLog::delete_segments_before(LogOffset below, uint32_t max_files) {
  return files_.delete_before(below.value, max_files, reads_.in_flight());
}

std::vector<uint64_t> CommitLog::segment_bases() const {
  return files_.bases();
}

}  // namespace uringmq::engine
