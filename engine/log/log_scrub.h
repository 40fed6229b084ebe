#pragma once
// LogScrub: a background check of the CommitLog segments that recovery did not rescan. Recovery
// checks every record from the checkpoint's segment on; the older segments are trusted at open
// (rescanning them would make a start take minutes on a large log), so a byte damaged there
// would go unnoticed until someone read it. The scrub reads them once after open, paced, and
// reports each damaged record; the pull path refuses those records anyway (it checks every
// record it serves), so the scrub's job is to find damage before a consumer does and to say so.
//
// Method: one O_DIRECT read in flight at a time through the shard's io::Disk (not the page
// cache: the scrub's cold bytes would push out the recent records consumers read), at most
// chunk_bytes each, issued only while the bytes read stay within bytes_per_second of the time
// since start() (plus one chunk). Each chunk is walked with decode_log_step(), the same step
// recovery's scan and `uringmq-ctl verify` use. After a damaged record the walk resynchronises
// on the next position that decodes as a whole record (or blank record) at its own offset, so
// one damaged record costs one report, not the rest of its segment.
//
// Progress goes to stderr (the engine's log): the start, each segment checked, the end with
// totals. A read error ends the pass (logged); a segment deleted by retention is skipped (a read
// of its open file still sees its bytes).
//
// Threading: the owning shard's thread. Memory: one aligned buffer of chunk_bytes plus the
// largest record, allocated by start() and freed when the pass ends.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "io/disk.h"

namespace uringmq::engine {

struct LogScrubOptions {
  // Pace, bytes per second (> 0).
  uint64_t bytes_per_second = 32ULL << 20;
  // Bytes per read (a multiple of 4096). Small enough that checking one chunk in the shard's
  // loop (about 8 GB/s) holds nothing else up noticeably.
  uint32_t chunk_bytes = 256u << 10;
  // Names the shard in log lines.
  std::string name;
};

class LogScrub {
 public:
  // A damaged record at log_offset; `reason` is static text naming the failed check.
  using Report = std::function<void(uint64_t log_offset, const char* reason)>;
  // A damaged record's bytes, from its offset up to the next whole record (or its segment's
  // end), when the scrub's buffer still holds them all; `reason` as for Report. Valid only
  // during the call.
  using Keep = std::function<void(uint64_t log_offset, std::span<const std::byte> bytes,
                                  const char* reason)>;

  // Reads the segments of `log` (for its options and min_offset) on `disk`; `tag` is the
  // user_data of its reads (one class of the shard's completion tags).
  LogScrub(io::Disk& disk, const CommitLog& log, const LogScrubOptions& options, uint64_t tag,
           Report report);
  ~LogScrub();  // waits for its read in flight, closes its file
  LogScrub(const LogScrub&) = delete;
  LogScrub& operator=(const LogScrub&) = delete;

  // Starts a pass over the whole segments in [from, to) (segment bases), at monotonic now_ms.
  // Nothing to check (from >= to): the pass is finished at once, silently.
  void start(uint64_t from, uint64_t to, int64_t now_ms);
  // Issues the next read when the pace allows and none is in flight. Never blocks.
  void step(int64_t now_ms);
  bool owns(uint64_t user_data) const { return user_data == tag_; }
  void read_done(int64_t result, int64_t now_ms);
  // Monotonic ms at which step() can issue the next read (INT64_MAX: nothing to wait for).
  int64_t next_deadline_ms() const;

  // Optional: where damaged records' bytes go (the shard's quarantine, engine/README.md).
  void set_keep(Keep keep) { keep_ = std::move(keep); }
  bool finished() const { return finished_; }
  bool reading() const { return reading_; }
  uint64_t bytes_checked() const { return bytes_checked_; }
  uint64_t corrupt_records() const { return corrupt_records_; }

 private:
  io::Status open_segment(uint64_t base);
  void close_file();
  void walk(int64_t now_ms);
  bool resync(uint64_t seg_end);
  void segment_done(uint64_t base);
  void keep_damaged(uint64_t end);
  void finish(const char* why, int64_t now_ms);
  uint64_t buffer_end() const { return buf_start_ + buf_bytes_; }

  struct FreeAligned {
    void operator()(std::byte* p) const { std::free(p); }
  };
  io::Disk& disk_;
  const CommitLog& log_;
  const LogScrubOptions options_;
  const uint64_t tag_;
  const Report report_;
  Keep keep_;
  uint64_t damaged_at_ = 0;            // the last damaged record's offset (resyncing)
  const char* damaged_why_ = nullptr;  // and its failed check
  const std::string segment_dir_;
  DecodeOptions decode_options_;
  std::unique_ptr<std::byte[], FreeAligned> buf_;  // 4 KiB aligned, buf_capacity_ bytes
  uint64_t buf_capacity_ = 0;
  io::FileHandle file_;
  uint64_t file_base_ = UINT64_MAX;
  uint64_t buf_start_ = 0;  // log offset of buf_[0]
  uint64_t buf_bytes_ = 0;
  uint64_t pos_ = 0;  // next log offset to check
  uint64_t from_ = 0, to_ = 0;
  bool resyncing_ = false;  // looking for the next whole record after a damaged one
  bool reading_ = false;
  bool started_ = false;
  bool finished_ = false;
  int64_t start_ms_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_checked_ = 0;
  uint64_t records_ = 0;
  uint64_t corrupt_records_ = 0;
  uint64_t segment_records_ = 0;
  uint64_t segment_corrupt_ = 0;
};

}  // namespace uringmq::engine
