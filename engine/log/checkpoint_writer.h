#pragma once
// CheckpointWriter: a CommitLog's checkpoint (engine/log/checkpoint.h) kept up to date while
// the log runs: every checkpoint_interval_ms while the watermark moves, written as
// checkpoint.tmp, fdatasynced, renamed over checkpoint, and the directory fsynced, through the
// ring; and written synchronously at open and at a clean stop.
//
// Invariants: the watermark is min(durable, limit): a record end, never above what the owner
// says is safe (set_limit), so recovery's rescan re-dispatches every record above it. One
// checkpoint in flight at a time; any failure fail-stops the log.
// Threading: the shard's thread only.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/log/log_state.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq::engine {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(LogState& state);
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // The 4 KiB-aligned block the checkpoint is encoded into for its write.
  void init(std::byte* block) { block_ = block; }
  // At open, synchronously: the watermark `offset` (it does not move at open: the owner may
  // still need the records above the old one re-dispatched).
  io::Status write_at_open(uint64_t offset);
  // Opens the store directory's handle for the renames' fsyncs.
  io::Status open_dir_handle();
  // The interval between checkpoints counts from `now_ms` (open).
  void start_interval(int64_t now_ms) { last_ms_ = now_ms; }
  // At a clean stop, synchronously (nothing else in flight).
  io::Status write_final();

  // The watermark a checkpoint written now would record.
  uint64_t offset() const { return std::min(state_.durable(), limit_); }
  void set_limit(uint64_t limit) { limit_ = limit; }
  // Starts a checkpoint if the watermark moved and the interval passed.
  void submit_work();
  // A completion of the checkpoint class.
  void complete(int64_t result);
  bool idle() const { return step_ == Step::idle; }
  // When the next checkpoint falls due (INT64_MAX: the watermark has not moved).
  int64_t deadline_ms() const;
  // Closes its handles (the log is going away).
  void close_files();

 private:
  enum class Step : uint8_t { idle, writing, syncing, renaming, dir_syncing };

  void on_done(int64_t result);

  LogState& state_;
  // Built at construction so that no poll() allocates.
  const std::string temp_path_;
  const std::string path_;
  Step step_ = Step::idle;
  io::FileHandle file_;
  io::FileHandle root_dir_handle_;
  std::byte* block_ = nullptr;
  uint64_t target_ = 0;  // the watermark of the last checkpoint started
  uint64_t limit_ = UINT64_MAX;
  uint64_t written_ = 0;  // bytes of the checkpoint write completed
  int64_t last_ms_ = 0;
};

}  // namespace uringmq::engine
