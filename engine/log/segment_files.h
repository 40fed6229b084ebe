#pragma once
// SegmentFiles: a CommitLog's segment files and their directory: the open segments (ascending
// base; the last is the writer's), the spare a retention pass keeps for recycling
// (commitlog/recycled), retention's deletions, an empty log's move to a new base, and the
// directory fsyncs those two need.
//
// Invariants: segments are consecutive and each holds segment_size_bytes of the log; a
// segment leaves the list only when no read is in flight and its last writes were synced
// (dirty false). At most one spare, and only with recycle_segments. Renames and removals are
// durable once the directory fsync submitted after them completes; until then a crash may
// bring back the old names, which recovery handles (engine/log/README.md).
// Threading: the shard's thread only.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/log/log_state.h"
#include "io/disk.h"
#include "io/status.h"

namespace uringmq::engine {

struct LogSegment {
  uint64_t base = 0;
  io::FileHandle file;       // opened in options.io_mode, for writes and fdatasync
  io::FileHandle read_file;  // buffered, opened on the first read
  bool dirty = false;        // a write completed since the last fdatasync was submitted
};

class SegmentFiles {
 public:
  static constexpr std::string_view kRecycledFile = "recycled";

  explicit SegmentFiles(LogState& state);
  SegmentFiles(const SegmentFiles&) = delete;
  SegmentFiles& operator=(const SegmentFiles&) = delete;

  // <dir>/commitlog, and its handle for fsyncs (valid after open_dir_handle()).
  const std::string& dir() const { return dir_; }
  io::FileHandle dir_handle() const { return dir_handle_; }
  io::Status open_dir_handle();
  // Opens the segments recovery found (ascending), for writes and fdatasync.
  io::Status open_recovered(std::span<const uint64_t> bases);
  // Room for 64 more segments, so that rolling to a new one does not allocate.
  void reserve_room() { segments_.reserve(segments_.size() + 64); }
  // Writes dir()/<20 digits> into `out` without allocating once `out` has held such a path.
  void set_path(uint64_t base, std::string& out) const;
  std::string path(uint64_t base) const;

  // ---- The list ----
  std::span<LogSegment> all() { return segments_; }
  bool empty() const { return segments_.empty(); }
  size_t count() const { return segments_.size(); }
  const LogSegment& front() const { return segments_.front(); }
  LogSegment& back() { return segments_.back(); }
  LogSegment* find(uint64_t base);
  void add(const LogSegment& segment) { segments_.push_back(segment); }
  // Removes and returns the last segment (a prepared next one kept by a clean stop).
  LogSegment take_last();
  std::vector<uint64_t> bases() const;

  // ---- The spare (recycling) ----
  // At open: a spare the previous run left is kept when it is a whole segment and recycling
  // is on; otherwise it is removed.
  io::Status adopt_spare();
  bool spare_present() const { return spare_present_; }
  // Renames the spare to `path` (the next segment's); then there is no spare.
  io::Status use_spare(const std::string& path);
  // Gives back a spare use_spare() renamed to `path` (its preparation could not start).
  void put_back_spare(const std::string& path);

  // ---- Retention and rebase ----
  // Retires whole segments, oldest first, that end at or below `offset` and below the
  // writer's segment, at most max_files; stops at one with unsynced writes, or at once when a
  // read is in flight (it may use a handle). Then fsyncs the directory through the ring.
  io::Result<uint32_t> delete_before(uint64_t offset, uint32_t max_files, bool reads_in_flight);
  // Renames the only segment to `base` and asks for the directory fsync that makes the name
  // durable (rebase_pending() until it completes).
  io::Status rename_only_segment(uint64_t base);
  bool rebase_pending() const { return rebase_sync_ != RebaseSync::none; }
  // Submits the rebase's directory fsync when it is wanted and the ring takes it.
  void submit_work();
  // A completion of the retention class (a retention or a rebase directory fsync).
  void complete(uint64_t index, int64_t result);

  // Closes every handle (the log is going away; nothing of theirs is in flight).
  void close_files();

 private:
  io::Status retire(const std::string& path);

  LogState& state_;
  const std::string dir_;
  io::FileHandle dir_handle_;
  std::vector<LogSegment> segments_;  // every open segment, ascending base
  const std::string spare_path_;      // commitlog/recycled
  bool spare_present_ = false;        // spare_path_ holds a whole retired segment
  bool retention_sync_in_flight_ = false;
  enum class RebaseSync : uint8_t { none, wanted, in_flight };
  RebaseSync rebase_sync_ = RebaseSync::none;  // rename_only_segment()'s directory fsync
};

}  // namespace uringmq::engine
