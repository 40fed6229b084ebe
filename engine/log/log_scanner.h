#pragma once
// LogScanner: reads a CommitLog's segments in log order, synchronously, checking every record
// whole (engine/log/message_codec.h decode with PHYSICALOFFSET == position), and stops at the first
// position without a valid record. Used by recovery, by offline verification and by tests.
// Needs an idle Disk (nothing else in flight). One thread.

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "io/disk.h"

namespace uringmq::engine {

// Where a scan stopped and why.
struct ScanEnd {
  uint64_t offset = 0;
  const char* reason = nullptr;  // null: a clean end (zeros, or no further segment)
  uint64_t records = 0;
  int64_t last_store_timestamp_ms = 0;
};

class LogScanner {
 public:
  // Called for each valid record; the view is valid during the call only.
  using Visitor = std::function<void(uint64_t offset, const MessageView& record)>;

  // `bases`: the segment files present, ascending (see list_segments()).
  LogScanner(io::Disk& disk, const CommitLogOptions& options, std::vector<uint64_t> bases);
  ~LogScanner();
  LogScanner(const LogScanner&) = delete;
  LogScanner& operator=(const LogScanner&) = delete;

  io::Result<ScanEnd> scan(uint64_t start, const Visitor& visit = nullptr);

  // Long scans report progress: called every `every_bytes` scanned with (offset, bytes so far).
  using Progress = std::function<void(uint64_t offset, uint64_t scanned_bytes)>;
  void set_progress(uint64_t every_bytes, Progress progress) {
    progress_every_bytes_ = every_bytes;
    progress_ = std::move(progress);
  }

 private:
  bool has_segment(uint64_t base) const;
  io::Status load(uint64_t offset, uint64_t segment_end);
  void close_file();

  io::Disk& disk_;
  const CommitLogOptions options_;
  const std::string segment_dir_;
  const std::vector<uint64_t> bases_;
  // O_DIRECT reads into a 4 KiB-aligned window: no copy out of the page cache, no io-wq hop.
  struct FreeAligned {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte[], FreeAligned> window_;
  uint64_t window_capacity_ = 0;
  uint64_t window_start_ = 0;  // log offset of window_[0]
  uint64_t window_bytes_ = 0;
  uint64_t file_base_ = UINT64_MAX;
  io::FileHandle file_;
  uint64_t progress_every_bytes_ = 0;
  Progress progress_;
};

// Reads every record of the log in options.dir from its first segment (tests, verification).
io::Result<ScanEnd> scan_log(io::Disk& disk, const CommitLogOptions& options,
                             const LogScanner::Visitor& visit);

}  // namespace uringmq::engine
