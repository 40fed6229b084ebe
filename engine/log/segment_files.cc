#include "engine/log/segment_files.h"

#include <cstdio>

#include "engine/log/file_names.h"

namespace uringmq::engine {

namespace {

// The retention class's request index of the directory fsync after a rebase (0: retention).
constexpr uint64_t kRebaseSyncIndex = 1;

}  // namespace

SegmentFiles::SegmentFiles(LogState& state)
    : state_(state),
      dir_(io::path_join(state.options().dir, "commitlog")),
      spare_path_(io::path_join(dir_, kRecycledFile)) {}

io::Status SegmentFiles::open_dir_handle() {
  io::Result<io::FileHandle> dir = state_.disk().open(dir_, io::OpenMode::directory);
  if (!dir.is_ok()) return dir.status();
  dir_handle_ = *dir;
  return io::Status::ok();
}

io::Status SegmentFiles::open_recovered(std::span<const uint64_t> bases) {
  for (uint64_t base : bases) {
    io::Result<io::FileHandle> file =
        state_.disk().open(path(base), io::OpenMode::read_write, state_.options().io_mode);
    if (!file.is_ok()) return file.status();
    segments_.push_back(LogSegment{.base = base, .file = *file, .read_file = {}, .dirty = false});
  }
  return io::Status::ok();
}

// Every segment path has the same length, so `out` keeps its capacity.
void SegmentFiles::set_path(uint64_t base, std::string& out) const {
  char name[32];
  int n = std::snprintf(name, sizeof(name), "%020llu", static_cast<unsigned long long>(base));
  out.assign(dir_);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name, static_cast<size_t>(n));
}

std::string SegmentFiles::path(uint64_t base) const {
  return io::path_join(dir_, offset_file_name(base));
}

LogSegment* SegmentFiles::find(uint64_t base) {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    if (it->base == base) return &*it;
  }
  return nullptr;
}

LogSegment SegmentFiles::take_last() {
  LogSegment last = segments_.back();
  segments_.pop_back();
  return last;
}

std::vector<uint64_t> SegmentFiles::bases() const {
  std::vector<uint64_t> bases;
  for (const LogSegment& segment : segments_) bases.push_back(segment.base);
  return bases;
}

io::Status SegmentFiles::adopt_spare() {
  io::Disk& disk = state_.disk();
  io::Result<bool> present = disk.exists(spare_path_);
  if (!present.is_ok()) return present.status();
  if (!*present) return io::Status::ok();
  io::Result<io::FileHandle> file = disk.open(spare_path_, io::OpenMode::read_only);
  if (!file.is_ok()) return file.status();
  io::Result<uint64_t> size = disk.size(*file);
  disk.close(*file);
  if (!size.is_ok()) return size.status();
  if (state_.options().recycle_segments && *size == state_.options().segment_size_bytes) {
    spare_present_ = true;
    return io::Status::ok();
  }
  UMQ_RETURN_IF_ERROR(disk.remove(spare_path_));
  return io::sync_dir(disk, dir_);
}

io::Status SegmentFiles::use_spare(const std::string& path) {
  UMQ_ASSERT(spare_present_);
  UMQ_RETURN_IF_ERROR(state_.disk().rename(spare_path_, path));
  spare_present_ = false;
  return io::Status::ok();
}

void SegmentFiles::put_back_spare(const std::string& path) {
  if (state_.disk().rename(path, spare_path_).is_ok()) spare_present_ = true;
}

// Retention's end of a segment: renamed to the spare when recycling and none is kept yet, else
// deleted. Either is durable after the directory fsync retention submits.
io::Status SegmentFiles::retire(const std::string& path) {
  if (!state_.options().recycle_segments || spare_present_) return state_.disk().remove(path);
  UMQ_RETURN_IF_ERROR(state_.disk().rename(path, spare_path_));
  spare_present_ = true;
  return io::Status::ok();
}

io::Result<uint32_t> SegmentFiles::delete_before(uint64_t offset, uint32_t max_files,
                                                 bool reads_in_flight) {
  const uint64_t segment_size = state_.options().segment_size_bytes;
  io::Disk& disk = state_.disk();
  uint32_t deleted = 0;
  while (deleted < max_files && segments_.size() > 1 &&
         segments_[0].base + segment_size <= offset &&
         segments_[0].base + segment_size <= state_.writer_segment()) {
    LogSegment& oldest = segments_[0];
    if (reads_in_flight) break;  // a read may still use its handle
    if (oldest.dirty) break;     // its last writes are not synced yet
    // Its fdatasync may be submitted and not completed (dirty is cleared at submission; an
    // SQE the kernel has not taken yet names the file's descriptor): only durable bytes go.
    if (oldest.base + segment_size > state_.durable()) break;
    disk.close(oldest.file);
    if (oldest.read_file.valid()) disk.close(oldest.read_file);
    std::string retired = path(oldest.base);
    segments_.erase(segments_.begin());
    io::Status s = retire(retired);
    if (!s.is_ok()) return s;
    deleted++;
  }
  if (deleted > 0 && !retention_sync_in_flight_) {
    // Asynchronous: the reactor has other requests in flight. Until it completes, a power loss
    // may bring back the oldest deleted segments, a contiguous prefix of the log, which the
    // next pass deletes again.
    io::IoRequest req;
    req.kind = io::OpKind::fsync;
    req.file = dir_handle_;
    req.user_data = log_tag(LogOp::retention, 0);
    if (state_.submit(req)) retention_sync_in_flight_ = true;
  }
  return deleted;
}

io::Status SegmentFiles::rename_only_segment(uint64_t base) {
  UMQ_ASSERT(segments_.size() == 1);
  LogSegment& segment = segments_.back();
  UMQ_RETURN_IF_ERROR(state_.disk().rename(path(segment.base), path(base)));
  segment.base = base;
  rebase_sync_ = RebaseSync::wanted;
  return io::Status::ok();
}

void SegmentFiles::submit_work() {
  if (rebase_sync_ != RebaseSync::wanted) return;
  io::IoRequest req = single_op_request(LogOp::retention, dir_handle_);
  req.kind = io::OpKind::fsync;
  req.user_data = log_tag(LogOp::retention, kRebaseSyncIndex);
  if (state_.submit(req)) rebase_sync_ = RebaseSync::in_flight;
}

void SegmentFiles::complete(uint64_t index, int64_t result) {
  if (index == kRebaseSyncIndex) {
    rebase_sync_ = RebaseSync::none;
    if (result < 0) {
      state_.fail_stop(
          completion_error(result, "fsync of " + dir_ + " after moving the log's base"));
    }
    return;
  }
  retention_sync_in_flight_ = false;
  if (result < 0) {
    state_.fail_stop(completion_error(result, "fsync of " + dir_ + " after deleting segments"));
  }
}

void SegmentFiles::close_files() {
  io::Disk& disk = state_.disk();
  for (LogSegment& segment : segments_) {
    disk.close(segment.file);
    if (segment.read_file.valid()) disk.close(segment.read_file);
  }
  if (dir_handle_.valid()) disk.close(dir_handle_);
}

}  // namespace uringmq::engine
