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

// user_data of a disk request: its class (sched/completion_tags.h) in the top byte, an index
// below.
enum class OpClass : uint64_t {
  write = static_cast<uint64_t>(sched::TagClass::log_write),
  sync = static_cast<uint64_t>(sched::TagClass::log_sync),
  allocator = static_cast<uint64_t>(sched::TagClass::log_allocator),
  checkpoint = static_cast<uint64_t>(sched::TagClass::log_checkpoint),
  read = static_cast<uint64_t>(sched::TagClass::log_read),
  retention = static_cast<uint64_t>(sched::TagClass::log_retention)
};
constexpr uint64_t tag_of(OpClass op, uint64_t index) {
  return sched::tag_of(static_cast<sched::TagClass>(op), index);
}
constexpr OpClass class_of(uint64_t user_data) {
  return static_cast<OpClass>(sched::class_of(user_data));
}
constexpr uint64_t index_of(uint64_t user_data) {
  return sched::index_of(user_data);
}

// A request on file for the one op of its class that is ever in flight (the allocator's, the
// checkpoint's).
io::IoRequest single_op_request(OpClass op, io::FileHandle file) {
  io::IoRequest req;
  req.file = file;
  req.user_data = tag_of(op, 0);
  return req;
}

// The status of a failed completion (result < 0 carries -errno).
io::Status completion_error(int64_t result, const std::string& what) {
  return io::Status::from_errno(static_cast<int>(-result), what);
}

constexpr uint32_t kWriteSlots = 64;
// The allocator class's request index of the zero write ahead of the writer (0: preparation).
constexpr uint64_t kZeroAheadIndex = 1;
// The retention class's request index of the directory fsync after rebase_empty (0: retention).
constexpr uint64_t kRebaseSyncIndex = 1;
constexpr size_t kCheckpointBlockBytes = 4096;
constexpr std::string_view kLockFile = "lock";
constexpr std::string_view kAbortFile = "abort";

uint64_t align_down(uint64_t value, uint64_t align) {
  return value - value % align;
}
uint64_t align_up(uint64_t value, uint64_t align) {
  return align_down(value + align - 1, align);
}

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
    : disk_(disk),
      clock_(clock),
      options_(options),
      align_bytes_(options.io_mode == io::IoMode::direct ? io::kDirectAlignment : 1),
      segment_dir_(io::path_join(options.dir, "commitlog")),
      checkpoint_temp_path_(io::path_join(options.dir, kCheckpointTempFile)),
      checkpoint_path_(io::path_join(options.dir, kCheckpointFile)),
      spare_path_(io::path_join(segment_dir_, kRecycledFile)) {
  set_segment_path(0, alloc_path_);
}

// Writes segment_dir_/<20 digits> into `out` without allocating once `out` has held such a
// path (every segment path has the same length).
void CommitLog::set_segment_path(uint64_t base, std::string& out) const {
  char name[32];
  int n = std::snprintf(name, sizeof(name), "%020llu", static_cast<unsigned long long>(base));
  out.assign(segment_dir_);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name, static_cast<size_t>(n));
}

// One line per recovered log (the per-GiB progress lines come from the scan): how the last
// stop ended, what was checked and how fast, and what was repaired.
static void log_recovery_summary(const std::string& dir, const RecoveryReport& r) {
  const double seconds = static_cast<double>(r.duration_ns) / 1e9;
  const double mib = static_cast<double>(r.bytes_scanned) / (1 << 20);
  std::fprintf(stderr,
               "uringmq: recovered %s: %s stop, %.1f MiB (%llu records) checked from log offset "
               "%llu in %.3f s (%.0f MiB/s), log ends at %llu, %llu torn bytes zeroed, "
               "%u segment(s) removed%s\n",
               dir.c_str(), r.unclean_stop ? "unclean" : "clean", mib,
               static_cast<unsigned long long>(r.records_scanned),
               static_cast<unsigned long long>(r.scan_start_offset), seconds,
               seconds > 0 ? mib / seconds : 0.0, static_cast<unsigned long long>(r.end_offset),
               static_cast<unsigned long long>(r.torn_bytes_truncated), r.segments_removed,
               r.checkpoint_rebuilt ? ", checkpoint rebuilt" : "");
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
  io::Status s = disk.make_dir(log->segment_dir_);
  if (s.is_ok()) s = io::sync_dir(disk, options.dir);
  if (!s.is_ok()) return fail(s);
  io::Result<bool> abort_present = disk.exists(io::path_join(options.dir, kAbortFile));
  if (!abort_present.is_ok()) return fail(abort_present.status());
  report.unclean_stop = *abort_present;
  io::Result<RecoveredLog> recovered =
      recover_log(disk, options, report.unclean_stop, report, recovery_visitor, scan_disk);
  if (!recovered.is_ok()) return fail(recovered.status());
  for (uint64_t base : recovered->segment_bases) {
    io::Result<io::FileHandle> file =
        disk.open(io::path_join(log->segment_dir_, segment_name(base)), io::OpenMode::read_write,
                  options.io_mode);
    if (!file.is_ok()) return fail(file.status());
    log->segments_.push_back(Segment{.base = base, .file = *file, .read_file = {}, .dirty = false});
  }
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
  const uint64_t buffer_bytes = options_.write_buffer_bytes;
  memory_bytes_ = buffer_bytes * options_.write_buffer_count + options_.zero_fill_chunk_bytes +
                  kCheckpointBlockBytes;
  memory_ = static_cast<std::byte*>(std::aligned_alloc(io::kDirectAlignment, memory_bytes_));
  UMQ_ASSERT(memory_ != nullptr);
  std::memset(memory_, 0, memory_bytes_);
  std::vector<std::span<std::byte>> registered;
  for (uint32_t i = 0; i < options_.write_buffer_count; i++) {
    WriteBuffer b;
    b.data = memory_ + i * buffer_bytes;
    b.index = static_cast<int32_t>(i);
    buffers_.push_back(b);
    registered.emplace_back(b.data, buffer_bytes);
  }
  zero_chunk_ = memory_ + buffer_bytes * options_.write_buffer_count;
  checkpoint_bytes_ = zero_chunk_ + options_.zero_fill_chunk_bytes;
  io::Status registered_status = disk_.register_buffers(registered);
  if (!registered_status.is_ok()) {
    // Pinning is charged to RLIMIT_MEMLOCK (8 MiB by default for non-root): write through
    // ordinary buffers instead of failing; only the per-write page pinning is lost.
    std::fprintf(stderr, "uringmq: CommitLog %s writes without registered buffers: %s\n",
                 options_.dir.c_str(), registered_status.to_string().c_str());
    for (WriteBuffer& b : buffers_) b.index = -1;
  }
  slots_.resize(kWriteSlots);
  segments_.reserve(segments_.size() + 64);  // rolling to a new segment does not allocate
  acks_.resize(options_.max_pending_acks);
  ready_acks_.resize(options_.max_pending_acks);
  ready_reads_.reserve(1024);

  const uint64_t segment_size = options_.segment_size_bytes;
  UMQ_RETURN_IF_ERROR(adopt_spare());
  writer_segment_ = align_down(end_offset, segment_size);
  if (segments_.empty() || segments_.back().base < writer_segment_) {
    io::FileHandle file;
    UMQ_RETURN_IF_ERROR(create_segment_sync(disk_, segment_dir_, writer_segment_, options_, &file));
    segments_.push_back(
        Segment{.base = writer_segment_, .file = file, .read_file = {}, .dirty = false});
    stats_.segments_prepared++;
  }
  if (segments_.back().base > writer_segment_) {
    // A clean stop kept the prepared next segment: it is ready for the writer.
    alloc_base_ = segments_.back().base;
    alloc_file_ = segments_.back().file;
    segments_.pop_back();
    alloc_step_ = AllocStep::ready;
  }
  UMQ_ASSERT(segments_.back().base == writer_segment_);
  if (options_.segment_fill == SegmentFill::zeroed) {
    // The writer's segment may hold unwritten blocks ahead of it (created just now, or by an
    // earlier run that stopped before zeroing it): zero them just ahead of the writer.
    ahead_ = ZeroAhead{.active = true, .base = writer_segment_};
  }
  appended_ = written_ = durable_ = end_offset;
  last_store_timestamp_ms_ = durable_store_timestamp_ms_ = last_store_timestamp_ms;
  // The first buffer starts at the aligned-down end; in direct mode it holds the partial block.
  WriteBuffer& first = buffers_[0];
  first.log_start = align_down(end_offset, align_bytes_);
  first.segment_base = writer_segment_;
  first.fill = first.submitted = end_offset - first.log_start;
  if (first.fill > 0) {
    // Direct mode only (align 1 leaves nothing partial): read the whole aligned block.
    io::Status s = io::read_exact(disk_, segments_.back().file, first.log_start - writer_segment_,
                                  std::span(first.data, align_bytes_), "read partial block");
    UMQ_RETURN_IF_ERROR(s);
  }
  // The watermark does not move at open: an owner (a shard and its ConsumeQueues) may still
  // need the records above the old one re-dispatched, and says so with set_checkpoint_limit().
  Checkpoint checkpoint{checkpoint_offset, last_store_timestamp_ms, segment_size};
  UMQ_RETURN_IF_ERROR(write_checkpoint_sync(disk_, options_.dir, checkpoint));
  checkpoint_target_ = checkpoint_offset;
  std::string abort_path = io::path_join(options_.dir, kAbortFile);
  io::Result<bool> abort_present = disk_.exists(abort_path);
  if (!abort_present.is_ok()) return abort_present.status();
  if (!*abort_present) {
    io::Result<io::FileHandle> abort_file = disk_.open(abort_path, io::OpenMode::create_exclusive);
    if (!abort_file.is_ok()) return abort_file.status();
    disk_.close(*abort_file);
  }
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk_, options_.dir));
  io::Result<io::FileHandle> seg_dir = disk_.open(segment_dir_, io::OpenMode::directory);
  if (!seg_dir.is_ok()) return seg_dir.status();
  segment_dir_handle_ = *seg_dir;
  io::Result<io::FileHandle> root_dir = disk_.open(options_.dir, io::OpenMode::directory);
  if (!root_dir.is_ok()) return root_dir.status();
  root_dir_handle_ = *root_dir;
  last_sync_ms_ = last_checkpoint_ms_ = now_ms();
  return io::Status::ok();
}

CommitLog::~CommitLog() {
  if (memory_ == nullptr) {
    disk_.unlock(io::path_join(options_.dir, kLockFile));
    return;
  }
  // Buffers must outlive the requests that use them. (A simulated crash drops its requests:
  // then the disk has nothing in flight and there is nothing to wait for.)
  while (ops_in_flight_ > 0 && disk_.in_flight() > 0) {
    std::array<io::IoCompletion, 64> done;
    size_t n = disk_.poll(done, io::Wait::at_least_one);
    ops_in_flight_ -= static_cast<uint32_t>(std::min<size_t>(n, ops_in_flight_));
  }
  for (Segment& segment : segments_) {
    disk_.close(segment.file);
    if (segment.read_file.valid()) disk_.close(segment.read_file);
  }
  if (alloc_file_.valid()) disk_.close(alloc_file_);
  if (checkpoint_file_.valid()) disk_.close(checkpoint_file_);
  if (segment_dir_handle_.valid()) disk_.close(segment_dir_handle_);
  if (root_dir_handle_.valid()) disk_.close(root_dir_handle_);
  disk_.unregister_buffers();
  if (!closed_) disk_.unlock(io::path_join(options_.dir, kLockFile));
  std::free(memory_);
}

uint64_t CommitLog::segment_end(uint64_t offset) const {
  return align_down(offset, options_.segment_size_bytes) + options_.segment_size_bytes;
}

LogOffset CommitLog::min_offset() const {
  return LogOffset{segments_.empty() ? 0 : segments_.front().base};
}

size_t CommitLog::pending_work() const {
  return ack_count_ + ops_in_flight_;
}

// ---- Appends ----

io::Result<AppendResult> CommitLog::append(const MessageInput& input, int64_t queue_offset,
                                           uint64_t tag) {
  UMQ_RETURN_IF_ERROR(check_open());
  if (ack_count_ + ready_count_ >= options_.max_pending_acks) {
    return io::Status::error(io::Code::busy, "too many appends awaiting acknowledgement");
  }
  io::Result<uint32_t> size = encoded_size(input, options_.limits);
  if (!size.is_ok()) return size.status();
  UMQ_RETURN_IF_ERROR(reserve(*size));
  WriteBuffer& buffer = buffers_[current_buffer_];
  const uint64_t offset = appended_;
  AppendStamp stamp;
  stamp.queue_offset = queue_offset;
  stamp.physical_offset = static_cast<int64_t>(offset);
  stamp.store_timestamp_ms = std::max(clock_.now_ms(), input.visible_at_ms);
  encode(input, stamp, std::span(buffer.data + (offset - buffer.log_start), *size));
  buffer.fill += *size;
  appended_ += *size;
  UMQ_ASSERT(buffer.fill <= options_.write_buffer_bytes);
  UMQ_ASSERT(appended_ + kBlankRecordBytes <= segment_end(offset));
  PendingAck& ack = acks_[(ack_head_ + ack_count_) % acks_.size()];
  ack = PendingAck{appended_, tag, offset};
  ack_count_++;
  last_store_timestamp_ms_ = stamp.store_timestamp_ms;
  stats_.appends++;
  return AppendResult{LogOffset{offset}, *size, stamp.store_timestamp_ms};
}

io::Status CommitLog::reserve(uint32_t size_bytes) {
  if (appended_ + size_bytes + kBlankRecordBytes > segment_end(appended_)) {
    UMQ_RETURN_IF_ERROR(roll_segment());
  }
  return ensure_buffer_room(size_bytes);
}

io::Status CommitLog::ensure_buffer_room(uint64_t size_bytes) {
  const WriteBuffer& buffer = buffers_[current_buffer_];
  if (buffer.segment_base != writer_segment_ ||
      appended_ + size_bytes > buffer.log_start + options_.write_buffer_bytes) {
    UMQ_RETURN_IF_ERROR(switch_buffer());
  }
  return io::Status::ok();
}

io::Status CommitLog::prepared_segment_ready() {
  if (alloc_step_ != AllocStep::ready) {
    if (!alloc_status_.is_ok() && now_ms() < alloc_retry_at_ms_) return alloc_status_;
    roll_waiting_ = true;
    return io::Status::error(io::Code::busy, "the next segment is still being prepared");
  }
  return io::Status::ok();
}

// The writer has reached the prepared segment's base (a roll's blank record, or the master's
// tail whole): the prepared segment becomes the writer's.
void CommitLog::adopt_prepared_segment() {
  UMQ_ASSERT(alloc_step_ == AllocStep::ready);
  UMQ_ASSERT(alloc_base_ == appended_);
  segments_.push_back(
      Segment{.base = alloc_base_, .file = alloc_file_, .read_file = {}, .dirty = false});
  alloc_file_ = io::FileHandle{};
  alloc_step_ = AllocStep::idle;
  writer_segment_ = alloc_base_;
}

io::Status CommitLog::roll_segment() {
  UMQ_RETURN_IF_ERROR(prepared_segment_ready());
  if (appended_ + kBlankRecordBytes >
      buffers_[current_buffer_].log_start + options_.write_buffer_bytes) {
    UMQ_RETURN_IF_ERROR(switch_buffer());
  }
  WriteBuffer& buffer = buffers_[current_buffer_];
  const uint64_t seg_end = segment_end(appended_);
  UMQ_ASSERT(alloc_base_ == seg_end);
  encode_blank(static_cast<uint32_t>(seg_end - appended_),
               std::span(buffer.data + (appended_ - buffer.log_start), kBlankRecordBytes));
  buffer.fill += kBlankRecordBytes;
  buffer.seal_end = seg_end;
  appended_ = seg_end;
  adopt_prepared_segment();
  return io::Status::ok();
}

io::Status CommitLog::switch_buffer() {
  // Buffers wholly handed to the disk leave the window [oldest_unsubmitted_, current_buffer_]
  // first. Otherwise a burst of appends between two polls could wrap the ring onto a submitted
  // oldest buffer: submit_writes() would then see oldest == current and skip the buffers in
  // between, and written_ would jump over bytes never written (acknowledging lost records).
  while (oldest_unsubmitted_ != current_buffer_ &&
         buffers_[oldest_unsubmitted_].submitted == buffers_[oldest_unsubmitted_].fill) {
    oldest_unsubmitted_ = (oldest_unsubmitted_ + 1) % buffers_.size();
  }
  const uint32_t next = (current_buffer_ + 1) % buffers_.size();
  UMQ_ASSERT(next != oldest_unsubmitted_ || oldest_unsubmitted_ == current_buffer_ ||
             buffers_[next].submitted < buffers_[next].fill);
  WriteBuffer& fresh = buffers_[next];
  if (fresh.writes_in_flight > 0 || fresh.submitted < fresh.fill) {
    return io::Status::error(io::Code::busy, "all write buffers are in flight");
  }
  const WriteBuffer& old = buffers_[current_buffer_];
  fresh.log_start = align_down(appended_, align_bytes_);
  fresh.segment_base = writer_segment_;
  fresh.seal_end = 0;
  const uint64_t carry = appended_ - fresh.log_start;  // direct mode: the partial last block
  if (carry > 0) {
    UMQ_ASSERT(old.segment_base == writer_segment_);
    std::memcpy(fresh.data, old.data + (fresh.log_start - old.log_start), carry);
  }
  fresh.fill = fresh.submitted = carry;
  current_buffer_ = next;
  return io::Status::ok();
}

// ---- Raw appends (a replica) ----

io::Status CommitLog::check_open() const {
  if (closing_ || closed_) {
    return io::Status::error(io::Code::shut_down, "CommitLog " + options_.dir + " is closing");
  }
  if (!fail_status_.is_ok()) {
    return io::Status::error(
        io::Code::fail_stopped,
        "CommitLog " + options_.dir + " stopped after: " + fail_status_.to_string());
  }
  return io::Status::ok();
}

io::Status CommitLog::append_raw(LogOffset offset, std::span<const std::byte> bytes) {
  UMQ_RETURN_IF_ERROR(check_open());
  if (offset.value != appended_) {
    return io::Status::error(io::Code::invalid_argument,
                             "replicated bytes at log offset " + std::to_string(offset.value) +
                                 " but " + options_.dir + " ends at " + std::to_string(appended_));
  }
  if (bytes.empty()) return io::Status::ok();
  if (rebase_sync_ != RebaseSync::none) {
    return io::Status::error(io::Code::busy, "the log's new first segment is not durable yet");
  }
  if (bytes.size() + 2 * io::kDirectAlignment > options_.write_buffer_bytes) {
    return io::Status::error(io::Code::invalid_argument,
                             "replicated chunk of " + std::to_string(bytes.size()) +
                                 " bytes is larger than a write buffer allows");
  }
  const uint64_t segment_size = options_.segment_size_bytes;
  if (appended_ == writer_segment_ + segment_size) UMQ_RETURN_IF_ERROR(roll_raw());
  if (appended_ + bytes.size() > writer_segment_ + segment_size) {
    return io::Status::error(io::Code::invalid_argument, "replicated chunk at log offset " +
                                                             std::to_string(appended_) + " of " +
                                                             std::to_string(bytes.size()) +
                                                             " bytes crosses the end of segment " +
                                                             segment_name(writer_segment_));
  }
  UMQ_RETURN_IF_ERROR(ensure_buffer_room(bytes.size()));
  WriteBuffer& buffer = buffers_[current_buffer_];
  std::memcpy(buffer.data + (appended_ - buffer.log_start), bytes.data(), bytes.size());
  buffer.fill += bytes.size();
  appended_ += bytes.size();
  UMQ_ASSERT(buffer.fill <= options_.write_buffer_bytes);
  UMQ_ASSERT(appended_ <= writer_segment_ + segment_size);
  return io::Status::ok();
}

// The writer's segment is full (the master sent its tail whole): the prepared one takes over.
io::Status CommitLog::roll_raw() {
  UMQ_RETURN_IF_ERROR(prepared_segment_ready());
  adopt_prepared_segment();
  return io::Status::ok();
}

io::Status CommitLog::rebase_empty(LogOffset base) {
  UMQ_RETURN_IF_ERROR(check_open());
  const uint64_t segment_size = options_.segment_size_bytes;
  if (base.value % segment_size != 0) {
    return io::Status::error(io::Code::invalid_argument,
                             "log base " + std::to_string(base.value) +
                                 " is not a multiple of the segment size " +
                                 std::to_string(segment_size));
  }
  if (segments_.size() != 1 || appended_ != segments_.front().base) {
    return io::Status::error(io::Code::invalid_argument,
                             options_.dir + " is not empty (it ends at " +
                                 std::to_string(appended_) + "): it cannot move to " +
                                 std::to_string(base.value));
  }
  if (base.value == appended_) return io::Status::ok();
  const bool alloc_settled = alloc_step_ == AllocStep::idle || alloc_step_ == AllocStep::ready;
  if (ops_in_flight_ > 0 || ack_count_ > 0 || !alloc_settled) {
    return io::Status::error(io::Code::busy, "IO in flight; the log moves once it is done");
  }
  if (alloc_step_ == AllocStep::ready) {  // prepared for the old base: prepared again later
    disk_.close(alloc_file_);
    alloc_file_ = io::FileHandle{};
    alloc_step_ = AllocStep::idle;
    UMQ_RETURN_IF_ERROR(disk_.remove(io::path_join(segment_dir_, segment_name(alloc_base_))));
  }
  // The empty segment (fallocated, its zeros as far as they went) takes the new name; appends
  // wait for the directory fsync that makes the name durable (rebase_sync_).
  Segment& segment = segments_.back();
  UMQ_RETURN_IF_ERROR(disk_.rename(io::path_join(segment_dir_, segment_name(segment.base)),
                                   io::path_join(segment_dir_, segment_name(base.value))));
  segment.base = base.value;
  writer_segment_ = appended_ = written_ = durable_ = base.value;
  for (WriteBuffer& b : buffers_) b.fill = b.submitted = b.seal_end = 0;
  WriteBuffer& first = buffers_[current_buffer_];
  first.log_start = first.segment_base = base.value;
  oldest_unsubmitted_ = current_buffer_;
  ahead_.base = base.value;
  rebase_sync_ = RebaseSync::wanted;
  return io::Status::ok();
}

// ---- Writes ----

void CommitLog::submit_writes() {
  while (fail_status_.is_ok()) {
    WriteBuffer& buffer = buffers_[oldest_unsubmitted_];
    if (buffer.submitted < buffer.fill) {
      if (!submit_range(buffer)) return;
      continue;
    }
    if (oldest_unsubmitted_ == current_buffer_) return;
    oldest_unsubmitted_ = (oldest_unsubmitted_ + 1) % buffers_.size();
  }
}

bool CommitLog::submit_range(WriteBuffer& buffer) {
  if (slot_count_ == slots_.size()) return false;
  const uint64_t from = buffer.log_start + buffer.submitted;
  const uint64_t to = buffer.log_start + buffer.fill;
  if (from > durable_ + options_.max_unsynced_bytes) return false;  // wait for an fdatasync
  if (slot_count_ > 0 && to - from < options_.min_write_bytes && !closing_ &&
      &buffer == &buffers_[current_buffer_] && buffer.seal_end == 0) {
    // Coalesce: the write in flight completes soon and submit_work() runs again then; until
    // then, more appends join this range. (A full or sealed buffer is never held back.)
    stats_.writes_held++;
    return false;
  }
  const uint64_t file_from = align_down(from, align_bytes_);
  const uint64_t file_to = align_up(to, align_bytes_);
  Segment* segment = find_segment(buffer.segment_base);
  UMQ_ASSERT(segment != nullptr);
  if (ahead_.in_flight && buffer.segment_base == ahead_.base &&
      file_to - buffer.segment_base > ahead_.in_flight_from) {
    return false;  // zeros are in flight there: the data must land after them
  }
  if (slot_count_ > 0) {
    // Direct mode: never two writes in flight over the same block (the later could land first).
    const WriteSlot& last = slots_[(slot_head_ + slot_count_ - 1) % slots_.size()];
    if (!last.done && last.segment_base == buffer.segment_base &&
        last.file_offset + last.length > file_from - buffer.segment_base) {
      return false;
    }
  }
  last_write_ns_ = clock_.monotonic_ns();
  if (file_to > to) std::memset(buffer.data + (to - buffer.log_start), 0, file_to - to);
  const uint32_t index = (slot_head_ + slot_count_) % slots_.size();
  WriteSlot& slot = slots_[index];
  slot.buffer = static_cast<uint32_t>(&buffer - buffers_.data());
  slot.file_offset = file_from - buffer.segment_base;
  slot.length = file_to - file_from;
  slot.log_data_end = buffer.seal_end != 0 ? buffer.seal_end : to;
  slot.data = buffer.data + (file_from - buffer.log_start);
  slot.segment_base = buffer.segment_base;
  slot.file = segment->file;
  slot.done = false;
  if (!submit_slot_write(index)) return false;
  slot_count_++;
  buffer.writes_in_flight++;
  buffer.submitted = buffer.fill;
  stats_.writes_submitted++;
  stats_.bytes_submitted += slot.length;
  return true;
}

// Submits what is left of write slot index's range.
bool CommitLog::submit_slot_write(uint32_t index) {
  const WriteSlot& slot = slots_[index];
  io::IoRequest req;
  req.kind = io::OpKind::write;
  req.file = slot.file;
  req.file_offset = slot.file_offset;
  req.length_bytes = slot.length;
  req.buffer = slot.data;
  req.registered_buffer = buffers_[slot.buffer].index;
  req.user_data = tag_of(OpClass::write, index);
  return submit_op(req);
}

bool CommitLog::submit_op(const io::IoRequest& request) {
  io::Status s = disk_.submit(request);
  if (s.is_ok()) {
    ops_in_flight_++;
    return true;
  }
  if (s.code() != io::Code::busy) fail_stop(s);
  return false;
}

void CommitLog::on_write_done(uint32_t index, int64_t result) {
  WriteSlot& slot = slots_[index];
  UMQ_ASSERT(!slot.done);
  if (result > 0 && static_cast<uint64_t>(result) < slot.length && fail_status_.is_ok()) {
    // A short write: resubmit the remainder (it made progress, so this cannot loop forever).
    slot.file_offset += static_cast<uint64_t>(result);
    slot.data += result;
    slot.length -= static_cast<uint64_t>(result);
    if (submit_slot_write(index)) return;
  } else if (result <= 0) {
    fail_stop(io::Status::from_errno(result < 0 ? static_cast<int>(-result) : EIO,
                                     "write to segment " + segment_name(slot.segment_base) +
                                         " at file offset " + std::to_string(slot.file_offset)));
  }
  slot.done = true;
  buffers_[slot.buffer].writes_in_flight--;
  if (!fail_status_.is_ok()) return;
  find_segment(slot.segment_base)->dirty = true;
  while (slot_count_ > 0 && slots_[slot_head_].done) {
    set_written(slots_[slot_head_].log_data_end);
    slot_head_ = (slot_head_ + 1) % slots_.size();
    slot_count_--;
  }
}

void CommitLog::set_written(uint64_t offset) {
  UMQ_ASSERT(offset >= written_);
  UMQ_ASSERT(offset <= appended_);
  written_ = offset;
}

void CommitLog::set_durable(uint64_t offset) {
  UMQ_ASSERT(offset >= durable_);
  UMQ_ASSERT(offset <= written_);
  durable_ = offset;
}

CommitLog::Segment* CommitLog::find_segment(uint64_t base) {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    if (it->base == base) return &*it;
  }
  return nullptr;
}

// ---- Flushes ----

bool CommitLog::flush_pending() const {
  if (written_ == durable_) return false;
  if (options_.flush_mode == FlushMode::sync_flush || closing_) return true;
  return now_ms() - last_sync_ms_ >= options_.async_flush_interval_ms ||
         written_ - durable_ >= options_.max_unsynced_bytes / 2;
}

void CommitLog::maybe_sync() {
  if (syncs_outstanding_ > 0 || !fail_status_.is_ok() || !flush_pending()) return;
  sync_target_ = written_;
  sync_target_timestamp_ms_ = last_store_timestamp_ms_;
  last_sync_ms_ = now_ms();
  for (Segment& segment : segments_) {
    if (!segment.dirty) continue;
    io::IoRequest req;
    req.kind = io::OpKind::fdatasync;
    req.file = segment.file;
    req.user_data = tag_of(OpClass::sync, segment.base);
    if (!submit_op(req)) {
      // Busy: this segment and any newer dirty one stay dirty for the next round. The
      // fdatasyncs already submitted (of older segments) cover only the log below this one.
      if (segment.base < sync_target_) {
        sync_target_ = segment.base;
        sync_target_timestamp_ms_ = durable_store_timestamp_ms_;
      }
      return;
    }
    segment.dirty = false;
    syncs_outstanding_++;
  }
  if (syncs_outstanding_ == 0) {
    set_durable(sync_target_);
    return;
  }
  sync_started_ns_ = clock_.monotonic_ns();
  sync_round_records_ = stats_.appends - appends_at_sync_;
  appends_at_sync_ = stats_.appends;
}

void CommitLog::on_sync_done(int64_t result) {
  UMQ_ASSERT(syncs_outstanding_ > 0);
  syncs_outstanding_--;
  if (result < 0) {
    fail_stop(completion_error(result, "fdatasync of a segment in " + segment_dir_));
    return;
  }
  stats_.fdatasyncs_completed++;
  if (syncs_outstanding_ == 0 && sync_latency_us_ != nullptr) {
    const int64_t took_ns = clock_.monotonic_ns() - sync_started_ns_;
    sync_latency_us_->observe(static_cast<uint64_t>(std::max<int64_t>(0, took_ns)) / 1000);
    sync_records_->observe(sync_round_records_);
  }
  if (syncs_outstanding_ == 0 && fail_status_.is_ok() && sync_target_ > durable_) {
    set_durable(sync_target_);
    durable_store_timestamp_ms_ = sync_target_timestamp_ms_;
  }
}

void CommitLog::release_acks() {
  const bool ack_on_write =
      options_.flush_mode == FlushMode::async_flush || options_.unsafe_ack_before_sync;
  const uint64_t watermark = ack_on_write ? written_ : durable_;
  while (ack_count_ > 0 && acks_[ack_head_].end <= watermark) {
    const PendingAck& pending = acks_[ack_head_];
    ready_acks_[(ready_head_ + ready_count_) % ready_acks_.size()] =
        Ack{pending.tag, LogOffset{pending.offset}, AckOutcome::ok};
    ready_count_++;
    stats_.acks_ok++;
    ack_head_ = (ack_head_ + 1) % acks_.size();
    ack_count_--;
  }
}

size_t CommitLog::take_acks(std::span<Ack> out) {
  size_t n = std::min<size_t>(out.size(), ready_count_);
  for (size_t i = 0; i < n; i++) {
    out[i] = ready_acks_[ready_head_];
    ready_head_ = (ready_head_ + 1) % ready_acks_.size();
  }
  ready_count_ -= static_cast<uint32_t>(n);
  return n;
}

void CommitLog::fail_stop(io::Status status) {
  if (!fail_status_.is_ok()) return;
  UMQ_ASSERT(!status.is_ok());
  fail_status_ = std::move(status);
  std::fprintf(stderr, "uringmq: CommitLog %s fail-stopped: %s\n", options_.dir.c_str(),
               fail_status_.to_string().c_str());
  while (ack_count_ > 0) {
    const PendingAck& pending = acks_[ack_head_];
    ready_acks_[(ready_head_ + ready_count_) % ready_acks_.size()] =
        Ack{pending.tag, LogOffset{pending.offset}, AckOutcome::indeterminate};
    ready_count_++;
    ack_head_ = (ack_head_ + 1) % acks_.size();
    ack_count_--;
  }
}

// ---- Zeroing just ahead of the writer, in its own segment ----

// With SegmentFill::zeroed, a segment created unwritten for the writer (a fresh store's first)
// gets zeros written just ahead of the writer: O_DIRECT writes into unwritten extents make each
// of its fdatasyncs commit the file system's journal (SYNC appends 4-5x slower, bench/RESULTS.md).
// Paced like the next segment's zero-fill. Safety: each zero write starts at or above the block
// after the last appended byte, and submit_range() holds any write reaching into a zero write in
// flight, so zeros never land on appended bytes, and data always lands after the zeros.
// Quiet: no append write or fdatasync in flight, no append awaiting its acknowledgement, and no
// write submitted for kQuietNs. Idle alone is not enough: a producer that waits for its
// acknowledgements leaves the log idle for microseconds before its next append, and a 1 MiB zero
// write started in that gap (2.4 ms on this ext4) held the append's write behind it in the
// device queue: a fresh store's writer ran at one append write per zero write (ASYNC 128 B,
// 64 in flight: 9,000 msgs/s against 118,000 with the segment left unwritten).
bool CommitLog::quiet() const {
  return slot_count_ == 0 && syncs_outstanding_ == 0 && ack_count_ == 0 &&
         clock_.monotonic_ns() - last_write_ns_ >= kQuietNs;
}

void CommitLog::maybe_zero_ahead() {
  if (!ahead_.active || ahead_.in_flight || closing_ || !fail_status_.is_ok()) return;
  const uint64_t segment_size = options_.segment_size_bytes;
  const uint64_t position = appended_ - writer_segment_;
  const uint64_t from = std::max(ahead_.front, align_up(position, io::kDirectAlignment));
  if (ahead_.base != writer_segment_ || from >= segment_size) {
    ahead_.active = false;  // the writer moved on, or its segment is zeroed to the end
    return;
  }
  if (!quiet() && options_.zero_fill_lead_bytes != UINT64_MAX &&
      from >= position + options_.zero_fill_lead_bytes) {
    return;  // far enough ahead for now
  }
  io::IoRequest req;
  req.kind = io::OpKind::write;
  req.file = segments_.back().file;
  req.file_offset = from;
  req.length_bytes = std::min<uint64_t>(options_.zero_fill_chunk_bytes, segment_size - from);
  req.buffer = zero_chunk_;
  req.user_data = tag_of(OpClass::allocator, kZeroAheadIndex);
  if (!submit_op(req)) return;
  ahead_.in_flight = true;
  ahead_.in_flight_from = from;
}

void CommitLog::on_zero_ahead_done(int64_t result) {
  UMQ_ASSERT(ahead_.in_flight);
  ahead_.in_flight = false;
  if (!fail_status_.is_ok()) return;
  if (result <= 0) {
    fail_stop(io::Status::from_errno(
        result < 0 ? static_cast<int>(-result) : EIO,
        "zeroing ahead of the writer in segment " + segment_name(ahead_.base)));
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
bool CommitLog::zero_fill_should_wait() const {
  if (closing_ || quiet() || roll_waiting_ || options_.zero_fill_lead_bytes == UINT64_MAX) {
    return false;
  }
  const uint64_t position = appended_ - writer_segment_;
  return alloc_zeroed_ >= position + position / 4 + options_.zero_fill_lead_bytes;
}

void CommitLog::advance_allocator() {
  maybe_zero_ahead();
  if (alloc_zero_paused_ && fail_status_.is_ok() && !zero_fill_should_wait()) {
    alloc_zero_paused_ = false;
    continue_zero_fill();
    return;
  }
  if (alloc_step_ != AllocStep::idle || closing_ || !fail_status_.is_ok()) return;
  if (now_ms() < alloc_retry_at_ms_) return;
  if (!roll_waiting_ && segment_end(appended_) - appended_ > options_.prepare_ahead_bytes) return;
  roll_waiting_ = false;
  alloc_base_ = writer_segment_ + options_.segment_size_bytes;
  set_segment_path(alloc_base_, alloc_path_);
  if (spare_present_ && start_recycled_allocation()) return;
  if (options_.space_check) {
    io::Status space = options_.space_check(options_.segment_size_bytes);
    UMQ_ASSERT(space.is_ok() || space.code() == io::Code::no_space);
    if (!space.is_ok()) return allocation_failed(std::move(space));
  }
  io::Result<io::FileHandle> file =
      disk_.open(alloc_path_, io::OpenMode::create_exclusive, options_.io_mode);
  if (!file.is_ok()) {
    allocation_failed(file.status());
    return;
  }
  alloc_file_ = *file;
  io::IoRequest req = single_op_request(OpClass::allocator, alloc_file_);
  req.kind = io::OpKind::fallocate;
  req.length_bytes = options_.segment_size_bytes;
  if (!submit_op(req)) {
    // The queue is full: give the file back and start again on a later poll.
    disk_.close(alloc_file_);
    alloc_file_ = io::FileHandle{};
    (void)disk_.remove(alloc_path_);
    return;
  }
  alloc_step_ = AllocStep::fallocating;
}

// The next segment from the spare a retention pass left: renamed into place, then the directory
// fsynced. Nothing is written: its blocks and size are durable from its first life, and its old
// records carry their old PHYSICALOFFSETs, which recovery never accepts at the new positions.
// False when the request queue is full (the spare is put back; a later poll tries again).
bool CommitLog::start_recycled_allocation() {
  io::Status s = disk_.rename(spare_path_, alloc_path_);
  if (!s.is_ok()) {
    allocation_failed(s);
    return true;
  }
  spare_present_ = false;
  io::Result<io::FileHandle> file =
      disk_.open(alloc_path_, io::OpenMode::read_write, options_.io_mode);
  if (!file.is_ok()) {
    (void)disk_.remove(alloc_path_);
    allocation_failed(file.status());
    return true;
  }
  io::IoRequest req = single_op_request(OpClass::allocator, segment_dir_handle_);
  req.kind = io::OpKind::fsync;
  if (!submit_op(req)) {
    disk_.close(*file);
    if (fail_status_.is_ok() && disk_.rename(alloc_path_, spare_path_).is_ok()) {
      spare_present_ = true;
    }
    return spare_present_ || !fail_status_.is_ok();
  }
  alloc_file_ = *file;
  alloc_recycled_ = true;
  alloc_step_ = AllocStep::dir_syncing;
  return true;
}

// Retention's end of a segment: renamed to the spare when recycling and none is kept yet, else
// deleted. Either is durable after the directory fsync retention submits.
io::Status CommitLog::retire_segment(const std::string& path) {
  if (!options_.recycle_segments || spare_present_) return disk_.remove(path);
  UMQ_RETURN_IF_ERROR(disk_.rename(path, spare_path_));
  spare_present_ = true;
  return io::Status::ok();
}

// At open: a spare the previous run left is kept when it is a whole segment and recycling is
// on; otherwise it is removed.
io::Status CommitLog::adopt_spare() {
  io::Result<bool> present = disk_.exists(spare_path_);
  if (!present.is_ok()) return present.status();
  if (!*present) return io::Status::ok();
  io::Result<io::FileHandle> file = disk_.open(spare_path_, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk_.size(*file);
  disk_.close(*file);
  if (!size.is_ok()) return size.status();
  if (options_.recycle_segments && *size == options_.segment_size_bytes) {
    spare_present_ = true;
    return io::Status::ok();
  }
  UMQ_RETURN_IF_ERROR(disk_.remove(spare_path_));
  return io::sync_dir(disk_, segment_dir_);
}

void CommitLog::allocation_failed(io::Status status) {
  const std::string& path = alloc_path_;
  if (alloc_file_.valid()) {
    disk_.close(alloc_file_);
    alloc_file_ = io::FileHandle{};
    (void)disk_.remove(path);  // nothing in it was ever used
  }
  alloc_step_ = AllocStep::idle;
  alloc_zero_paused_ = false;
  if (status.code() == io::Code::no_space) {
    // Appends that fit the current segment go on; those that need the next are rejected.
    alloc_status_ =
        io::Status::error(io::Code::no_space, "no space to allocate CommitLog segment " + path +
                                                  ": " + status.to_string());
    alloc_retry_at_ms_ = now_ms() + options_.no_space_retry_ms;
    return;
  }
  fail_stop(status);
}

void CommitLog::on_allocator_done(int64_t result) {
  const std::string& path = alloc_path_;  // for errors only
  if (result < 0) return allocation_failed(completion_error(result, "prepare " + path));
  io::IoRequest req = single_op_request(OpClass::allocator, alloc_file_);
  switch (alloc_step_) {
    case AllocStep::fallocating:
      // Unwritten: nothing to zero, straight to the fdatasync that makes the size durable.
      alloc_zeroed_ =
          options_.segment_fill == SegmentFill::zeroed ? 0 : options_.segment_size_bytes;
      alloc_step_ = AllocStep::zeroing;
      break;
    case AllocStep::zeroing:
      if (result == 0) {
        fail_stop(io::Status::error(io::Code::io_error, "zero-fill of " + path + " stalled"));
        return;
      }
      alloc_zeroed_ += static_cast<uint64_t>(result);
      break;
    case AllocStep::syncing:
      req.kind = io::OpKind::fsync;
      req.file = segment_dir_handle_;
      alloc_step_ = AllocStep::dir_syncing;
      if (!submit_op(req)) fail_stop(io::Status::error(io::Code::busy, "cannot fsync " + path));
      return;
    case AllocStep::dir_syncing:
      alloc_step_ = AllocStep::ready;
      alloc_status_ = io::Status::ok();
      stats_.segments_prepared++;
      if (alloc_recycled_) stats_.segments_recycled++;
      alloc_recycled_ = false;
      return;
    default:
      UMQ_ASSERT_MSG(false, "allocator completion without a step");
  }
  continue_zero_fill();
}

// The zeroing step's next request: a chunk of zeros, or the fdatasync once all are written.
void CommitLog::continue_zero_fill() {
  UMQ_ASSERT(alloc_step_ == AllocStep::zeroing);
  const std::string& path = alloc_path_;  // for errors only
  io::IoRequest req = single_op_request(OpClass::allocator, alloc_file_);
  if (alloc_zeroed_ < options_.segment_size_bytes && zero_fill_should_wait()) {
    alloc_zero_paused_ = true;  // advance_allocator() resumes it
    return;
  }
  if (alloc_zeroed_ < options_.segment_size_bytes) {
    req.kind = io::OpKind::write;
    req.file_offset = alloc_zeroed_;
    req.length_bytes = std::min<uint64_t>(options_.zero_fill_chunk_bytes,
                                          options_.segment_size_bytes - alloc_zeroed_);
    req.buffer = zero_chunk_;
  } else {
    req.kind = io::OpKind::fdatasync;
    alloc_step_ = AllocStep::syncing;
  }
  if (!submit_op(req)) fail_stop(io::Status::error(io::Code::busy, "cannot prepare " + path));
}

// ---- Checkpoints ----

void CommitLog::maybe_checkpoint() {
  if (checkpoint_step_ != CheckpointStep::idle || !fail_status_.is_ok() || closing_) return;
  const uint64_t target = checkpoint_offset();
  if (target == checkpoint_target_) return;
  if (now_ms() - last_checkpoint_ms_ < options_.checkpoint_interval_ms) return;
  const std::string& temp = checkpoint_temp_path_;
  io::Result<bool> stale = disk_.exists(temp);
  io::Status s = stale.is_ok() ? io::Status::ok() : stale.status();
  if (s.is_ok() && *stale) s = disk_.remove(temp);
  io::Result<io::FileHandle> file =
      s.is_ok() ? disk_.open(temp, io::OpenMode::create_exclusive) : io::Result<io::FileHandle>(s);
  if (!file.is_ok()) {
    fail_stop(file.status());
    return;
  }
  checkpoint_file_ = *file;
  checkpoint_target_ = target;
  Checkpoint checkpoint{target, durable_store_timestamp_ms_, options_.segment_size_bytes};
  encode_checkpoint(checkpoint,
                    std::span<std::byte, kCheckpointBytes>(checkpoint_bytes_, kCheckpointBytes));
  io::IoRequest req = single_op_request(OpClass::checkpoint, checkpoint_file_);
  req.kind = io::OpKind::write;
  req.length_bytes = kCheckpointBytes;
  req.buffer = checkpoint_bytes_;
  last_checkpoint_ms_ = now_ms();
  checkpoint_written_ = 0;
  checkpoint_step_ = CheckpointStep::writing;
  if (!submit_op(req)) fail_stop(io::Status::error(io::Code::busy, "cannot write " + temp));
}

void CommitLog::on_checkpoint_done(int64_t result) {
  const std::string& temp = checkpoint_temp_path_;  // for errors only
  if (result < 0) return fail_stop(completion_error(result, "checkpoint " + temp));
  io::IoRequest req = single_op_request(OpClass::checkpoint, checkpoint_file_);
  if (checkpoint_step_ == CheckpointStep::writing) {
    checkpoint_written_ += static_cast<uint64_t>(result);
    if (result == 0) {
      fail_stop(io::Status::error(io::Code::io_error, "write of " + temp + " made no progress"));
      return;
    }
    if (checkpoint_written_ < kCheckpointBytes) {  // a short write: resubmit the remainder
      req.kind = io::OpKind::write;
      req.file_offset = checkpoint_written_;
      req.length_bytes = kCheckpointBytes - checkpoint_written_;
      req.buffer = checkpoint_bytes_ + checkpoint_written_;
      if (!submit_op(req)) fail_stop(io::Status::error(io::Code::busy, "cannot write " + temp));
      return;
    }
    req.kind = io::OpKind::fdatasync;
    checkpoint_step_ = CheckpointStep::syncing;
  } else if (checkpoint_step_ == CheckpointStep::syncing) {
    disk_.close(checkpoint_file_);
    checkpoint_file_ = io::FileHandle{};
    io::Status s = disk_.rename(temp, checkpoint_path_);
    if (!s.is_ok()) {
      fail_stop(s);
      return;
    }
    req.kind = io::OpKind::fsync;
    req.file = root_dir_handle_;
    checkpoint_step_ = CheckpointStep::dir_syncing;
  } else {
    UMQ_ASSERT(checkpoint_step_ == CheckpointStep::dir_syncing);
    checkpoint_step_ = CheckpointStep::idle;
    stats_.checkpoints_written++;
    return;
  }
  if (!submit_op(req)) fail_stop(io::Status::error(io::Code::busy, "cannot checkpoint " + temp));
}

// ---- The loop ----

void CommitLog::poll(io::Wait wait) {
  if (closed_) return;
  submit_work();
  std::array<io::IoCompletion, 64> done;
  size_t n = disk_.poll(done, ops_in_flight_ > 0 ? wait : io::Wait::none);
  for (size_t i = 0; i < n; i++) complete(done[i]);
  submit_work();
}

void CommitLog::submit_work() {
  if (closed_) return;
  if (rebase_sync_ == RebaseSync::wanted) {
    io::IoRequest req = single_op_request(OpClass::retention, segment_dir_handle_);
    req.kind = io::OpKind::fsync;
    req.user_data = tag_of(OpClass::retention, kRebaseSyncIndex);
    if (submit_op(req)) rebase_sync_ = RebaseSync::in_flight;
  }
  submit_writes();
  maybe_sync();
  maybe_checkpoint();
  advance_allocator();
  release_acks();
}

bool CommitLog::owns(uint64_t user_data) {
  uint64_t op = user_data >> 56;
  return op >= static_cast<uint64_t>(OpClass::write) &&
         op <= static_cast<uint64_t>(OpClass::retention);
}

int64_t CommitLog::next_deadline_ms() const {
  int64_t deadline = INT64_MAX;
  if (options_.flush_mode == FlushMode::async_flush && written_ > durable_) {
    deadline = std::min(deadline, last_sync_ms_ + options_.async_flush_interval_ms);
  }
  if (checkpoint_offset() != checkpoint_target_) {
    deadline = std::min(deadline, last_checkpoint_ms_ + options_.checkpoint_interval_ms);
  }
  if (alloc_step_ == AllocStep::idle) deadline = std::min(deadline, alloc_retry_at_ms_);
  return deadline;
}

void CommitLog::complete(const io::IoCompletion& completion) {
  UMQ_ASSERT(ops_in_flight_ > 0);
  ops_in_flight_--;
  const uint64_t index = index_of(completion.user_data);
  switch (class_of(completion.user_data)) {
    case OpClass::write:
      on_write_done(static_cast<uint32_t>(index), completion.result);
      break;
    case OpClass::sync:
      on_sync_done(completion.result);
      break;
    case OpClass::allocator:
      if (index == kZeroAheadIndex) {
        on_zero_ahead_done(completion.result);
        break;
      }
      if (!fail_status_.is_ok() && completion.result >= 0 && alloc_step_ != AllocStep::ready) {
        return;  // stopped: leave the half-prepared file for recovery to remove
      }
      on_allocator_done(completion.result);
      break;
    case OpClass::checkpoint:
      if (!fail_status_.is_ok()) return;
      on_checkpoint_done(completion.result);
      break;
    case OpClass::retention:
      if (index == kRebaseSyncIndex) {
        rebase_sync_ = RebaseSync::none;
        if (completion.result < 0) {
          fail_stop(completion_error(completion.result,
                                     "fsync of " + segment_dir_ + " after moving the log's base"));
        }
        break;
      }
      retention_sync_in_flight_ = false;
      if (completion.result < 0) {
        fail_stop(completion_error(completion.result,
                                   "fsync of " + segment_dir_ + " after deleting segments"));
      }
      break;
    case OpClass::read:
      reads_in_flight_--;
      ready_reads_.push_back(ReadCompletion{index, completion.result});
      break;
    default:
      UMQ_ASSERT_MSG(false, "completion of an unknown operation");
  }
}

// ---- Reads ----

io::Status CommitLog::read(LogOffset offset, uint32_t size_bytes, std::byte* dest, uint64_t tag) {
  UMQ_ASSERT(tag <= sched::kTagIndexMask);
  if (offset.value + size_bytes > written_) {
    return io::Status::error(io::Code::not_found,
                             "log offset " + std::to_string(offset.value) + " is not written yet");
  }
  const uint64_t base = align_down(offset.value, options_.segment_size_bytes);
  if (offset.value + size_bytes > base + options_.segment_size_bytes) {
    return io::Status::error(io::Code::invalid_argument, "read crosses a segment end");
  }
  Segment* segment = find_segment(base);
  if (segment == nullptr) {
    return io::Status::error(io::Code::not_found, "log offset " + std::to_string(offset.value) +
                                                      " was deleted (below the log's first "
                                                      "segment)");
  }
  if (!segment->read_file.valid()) {
    io::Result<io::FileHandle> file =
        disk_.open(io::path_join(segment_dir_, segment_name(base)), io::OpenMode::read_only);
    if (!file.is_ok()) return file.status();
    segment->read_file = *file;
  }
  io::IoRequest req;
  req.kind = io::OpKind::read;
  req.file = segment->read_file;
  req.file_offset = offset.value - base;
  req.length_bytes = size_bytes;
  req.buffer = dest;
  req.user_data = tag_of(OpClass::read, tag);
  UMQ_RETURN_IF_ERROR(disk_.submit(req));
  ops_in_flight_++;
  reads_in_flight_++;
  return io::Status::ok();
}

size_t CommitLog::take_reads(std::span<ReadCompletion> out) {
  size_t n = std::min(out.size(), ready_reads_.size());
  std::copy_n(ready_reads_.begin(), n, out.begin());
  ready_reads_.erase(ready_reads_.begin(), ready_reads_.begin() + static_cast<ptrdiff_t>(n));
  return n;
}

// ---- Clean stop ----

bool CommitLog::close_done() const {
  bool allocating = alloc_step_ != AllocStep::idle && alloc_step_ != AllocStep::ready;
  return ops_in_flight_ == 0 && !allocating && checkpoint_step_ == CheckpointStep::idle &&
         written_ == appended_ && durable_ == written_;
}

io::Status CommitLog::close() {
  UMQ_ASSERT(!closed_);
  closing_ = true;
  while (fail_status_.is_ok() && !close_done()) poll(io::Wait::at_least_one);
  while (ops_in_flight_ > 0) poll(io::Wait::at_least_one);
  release_acks();
  if (!fail_status_.is_ok()) return fail_status_;  // the abort file stays: recovery decides
  Checkpoint checkpoint{checkpoint_offset(), durable_store_timestamp_ms_,
                        options_.segment_size_bytes};
  UMQ_RETURN_IF_ERROR(write_checkpoint_sync(disk_, options_.dir, checkpoint));
  UMQ_RETURN_IF_ERROR(disk_.remove(io::path_join(options_.dir, kAbortFile)));
  UMQ_RETURN_IF_ERROR(io::sync_dir(disk_, options_.dir));
  disk_.unlock(io::path_join(options_.dir, kLockFile));
  closed_ = true;
  return io::Status::ok();
}

// ---- Checkpoint limit, hot reads, retention ----

uint64_t CommitLog::checkpoint_offset() const {
  // The watermark may not pass what the owner says is safe (its ConsumeQueues' durable
  // dispatch point): recovery re-dispatches everything above it. Stays a record boundary:
  // both the durable end and the owner's point are record ends.
  return std::min(durable_, checkpoint_limit_);
}

void CommitLog::set_checkpoint_limit(uint64_t limit) {
  checkpoint_limit_ = limit;
}

// A range may span buffers: consecutive buffers in ring order hold consecutive log bytes, so
// each piece is looked up on its own. On false, dest may hold some of the range (the caller
// reads it from the file into the same place).
bool CommitLog::read_memory(LogOffset offset, uint32_t size_bytes, std::byte* dest) const {
  const uint64_t end = offset.value + size_bytes;
  if (end > written_) return false;
  for (uint64_t at = offset.value; at < end;) {
    const WriteBuffer* held = nullptr;
    for (const WriteBuffer& b : buffers_) {
      if (at >= b.log_start && at < b.log_start + b.fill) held = &b;
    }
    if (held == nullptr) return false;
    const uint64_t piece_end = std::min(end, held->log_start + held->fill);
    std::memcpy(dest + (at - offset.value), held->data + (at - held->log_start), piece_end - at);
    at = piece_end;
  }
  return true;
}

io::Result<uint32_t> CommitLog::delete_segments_before(LogOffset below, uint32_t max_files) {
  const uint64_t offset = below.value;
  uint32_t deleted = 0;
  while (deleted < max_files && segments_.size() > 1 &&
         segments_[0].base + options_.segment_size_bytes <= offset &&
         segments_[0].base + options_.segment_size_bytes <= writer_segment_) {
    Segment& oldest = segments_[0];
    if (reads_in_flight_ > 0) break;  // a read may still use its handle
    if (oldest.dirty) break;          // its last writes are not synced yet
    disk_.close(oldest.file);
    if (oldest.read_file.valid()) disk_.close(oldest.read_file);
    std::string path = io::path_join(segment_dir_, segment_name(oldest.base));
    segments_.erase(segments_.begin());
    io::Status s = retire_segment(path);
    if (!s.is_ok()) return s;
    deleted++;
  }
  if (deleted > 0 && !retention_sync_in_flight_) {
    // Asynchronous: the reactor has other requests in flight. Until it completes, a power loss
    // may bring back the oldest deleted segments, a contiguous prefix of the log, which the
    // next pass deletes again.
    io::IoRequest req;
    req.kind = io::OpKind::fsync;
    req.file = segment_dir_handle_;
    req.user_data = tag_of(OpClass::retention, 0);
    if (submit_op(req)) retention_sync_in_flight_ = true;
  }
  return deleted;
}

std::vector<uint64_t> CommitLog::segment_bases() const {
  std::vector<uint64_t> bases;
  for (const Segment& segment : segments_) bases.push_back(segment.base);
  return bases;
}

}  // namespace uringmq::engine
