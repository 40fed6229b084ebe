#include "engine/log/checkpoint_writer.h"

#include <algorithm>

#include "engine/log/checkpoint.h"

namespace uringmq::engine {

CheckpointWriter::CheckpointWriter(LogState& state)
    : state_(state),
      temp_path_(io::path_join(state.options().dir, kCheckpointTempFile)),
      path_(io::path_join(state.options().dir, kCheckpointFile)) {}

io::Status CheckpointWriter::write_at_open(uint64_t offset) {
  const CommitLogOptions& options = state_.options();
  Checkpoint checkpoint{offset, state_.last_store_timestamp_ms(), options.segment_size_bytes};
  UMQ_RETURN_IF_ERROR(write_checkpoint_sync(state_.disk(), options.dir, checkpoint));
  target_ = offset;
  return io::Status::ok();
}

io::Status CheckpointWriter::open_dir_handle() {
  io::Result<io::FileHandle> root_dir =
      state_.disk().open(state_.options().dir, io::OpenMode::directory);
  if (!root_dir.is_ok()) return root_dir.status();
  root_dir_handle_ = *root_dir;
  return io::Status::ok();
}

io::Status CheckpointWriter::write_final() {
  const CommitLogOptions& options = state_.options();
  Checkpoint checkpoint{offset(), state_.durable_store_timestamp_ms(), options.segment_size_bytes};
  return write_checkpoint_sync(state_.disk(), options.dir, checkpoint);
}

int64_t CheckpointWriter::deadline_ms() const {
  if (offset() == target_) return INT64_MAX;
  return last_ms_ + state_.options().checkpoint_interval_ms;
}

void CheckpointWriter::close_files() {
  if (file_.valid()) state_.disk().close(file_);
  if (root_dir_handle_.valid()) state_.disk().close(root_dir_handle_);
}

void CheckpointWriter::submit_work() {
  if (step_ != Step::idle || state_.fail_stopped() || state_.closing()) return;
  const uint64_t target = offset();
  if (target == target_) return;
  if (state_.now_ms() - last_ms_ < state_.options().checkpoint_interval_ms) return;
  io::Disk& disk = state_.disk();
  const std::string& temp = temp_path_;
  io::Result<bool> stale = disk.exists(temp);
  io::Status s = stale.is_ok() ? io::Status::ok() : stale.status();
  if (s.is_ok() && *stale) s = disk.remove(temp);
  io::Result<io::FileHandle> file =
      s.is_ok() ? disk.open(temp, io::OpenMode::create_exclusive) : io::Result<io::FileHandle>(s);
  if (!file.is_ok()) {
    state_.fail_stop(file.status());
    return;
  }
  file_ = *file;
  target_ = target;
  Checkpoint checkpoint{target, state_.durable_store_timestamp_ms(),
                        state_.options().segment_size_bytes};
  encode_checkpoint(checkpoint, std::span<std::byte, kCheckpointBytes>(block_, kCheckpointBytes));
  io::IoRequest req = single_op_request(LogOp::checkpoint, file_);
  req.kind = io::OpKind::write;
  req.length_bytes = kCheckpointBytes;
  req.buffer = block_;
  last_ms_ = state_.now_ms();
  written_ = 0;
  step_ = Step::writing;
  if (!state_.submit(req)) {
    state_.fail_stop(io::Status::error(io::Code::busy, "cannot write " + temp));
  }
}

void CheckpointWriter::complete(int64_t result) {
  if (state_.fail_stopped()) return;
  on_done(result);
}

void CheckpointWriter::on_done(int64_t result) {
  const std::string& temp = temp_path_;  // for errors only
  if (result < 0) return state_.fail_stop(completion_error(result, "checkpoint " + temp));
  io::IoRequest req = single_op_request(LogOp::checkpoint, file_);
  if (step_ == Step::writing) {
    written_ += static_cast<uint64_t>(result);
    if (result == 0) {
      state_.fail_stop(
          io::Status::error(io::Code::io_error, "write of " + temp + " made no progress"));
      return;
    }
    if (written_ < kCheckpointBytes) {  // a short write: resubmit the remainder
      req.kind = io::OpKind::write;
      req.file_offset = written_;
      req.length_bytes = kCheckpointBytes - written_;
      req.buffer = block_ + written_;
      if (!state_.submit(req)) {
        state_.fail_stop(io::Status::error(io::Code::busy, "cannot write " + temp));
      }
      return;
    }
    req.kind = io::OpKind::fdatasync;
    step_ = Step::syncing;
  } else if (step_ == Step::syncing) {
    state_.disk().close(file_);
    file_ = io::FileHandle{};
    io::Status s = state_.disk().rename(temp, path_);
    if (!s.is_ok()) {
      state_.fail_stop(s);
      return;
    }
    req.kind = io::OpKind::fsync;
    req.file = root_dir_handle_;
    step_ = Step::dir_syncing;
  } else {
    UMQ_ASSERT(step_ == Step::dir_syncing);
    step_ = Step::idle;
    state_.stats().checkpoints_written++;
    return;
  }
  if (!state_.submit(req)) {
    state_.fail_stop(io::Status::error(io::Code::busy, "cannot checkpoint " + temp));
  }
}

}  // namespace uringmq::engine
