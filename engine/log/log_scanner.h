#pragma once
// LogScanner: reads a CommitLog's segments in log order, checking every record whole
// (engine/log/message_codec.h decode with PHYSICALOFFSET == position), and stops at the first
// position without a valid record. Used by recovery, by offline verification and by tests.
//
// Read-ahead: two read slots, each a chunk (kScanChunkBytes by default, O_DIRECT-aligned) behind a
// headroom of one largest record. While one slot's records are checked, the next chunk's read
// is in flight into the other; a record cut by a chunk's end is copied into the next slot's
// headroom, in front of the bytes read after it, so every record is checked from contiguous
// memory, once (one decode, one CRC pass). Reads cross segment ends; a segment never splits a
// record (its end is a blank record).
//
// Visits need the disk idle (visitors poll it, or run synchronous requests on it): with reads on
// the caller's disk, every read is waited for before a batch of checked records is visited, so
// reads overlap the checking only. Given a second disk for the reads (set_read_disk, a ring of
// its own), visits run with the next read in flight, and reads overlap checking and visiting.
//
// Memory: 2 x (chunk_bytes + the largest record rounded up to 4 KiB): 16.1 MiB with the default
// 4 MiB chunk and 4 MiB body limit, in huge pages where the kernel has them
// (io::PopulatedMemory); plus at most kMaxPendingVisits checked record views.
//
// One thread: the disk's. Needs an idle disk at scan() (nothing else in flight); leaves it idle.

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "io/disk.h"
#include "io/populated_memory.h"

namespace uringmq::engine {

// Bytes of one scan read (fio's block in the recovery comparison, bench/compare.sh).
inline constexpr uint64_t kScanChunkBytes = 4u << 20;
// Checked records held for their visit, at most (then visited before checking goes on).
inline constexpr size_t kMaxPendingVisits = 4096;
static_assert(kScanChunkBytes % io::kDirectAlignment == 0);

// Where a scan stopped and why.
struct ScanEnd {
  uint64_t offset = 0;
  const char* reason = nullptr;  // null: a clean end (zeros, or no further segment)
  uint64_t records = 0;
  int64_t last_store_timestamp_ms = 0;
};

class LogScanner {
 public:
  // Called for each valid record, in log order; the view is valid during the call only.
  using Visitor = std::function<void(uint64_t offset, const MessageView& record)>;

  // `bases`: the segment files present, ascending (see list_segments()). `chunk_bytes`: the
  // bytes of each read, a multiple of io::kDirectAlignment (tests cut records with small ones).
  LogScanner(io::Disk& disk, const CommitLogOptions& options, std::vector<uint64_t> bases,
             uint64_t chunk_bytes = kScanChunkBytes);
  ~LogScanner();  // waits for reads in flight, closes its files
  LogScanner(const LogScanner&) = delete;
  LogScanner& operator=(const LogScanner&) = delete;

  // Reads through `read_disk` (idle, the same thread, used by nothing else during scan())
  // instead of the disk given at construction, so visits run while a read is in flight.
  void set_read_disk(io::Disk* read_disk);

  io::Result<ScanEnd> scan(uint64_t start, const Visitor& visit = nullptr);

  // Long scans report progress: called every `every_bytes` scanned with (offset, bytes so far).
  using Progress = std::function<void(uint64_t offset, uint64_t scanned_bytes)>;
  void set_progress(uint64_t every_bytes, Progress progress) {
    progress_every_bytes_ = every_bytes;
    progress_ = std::move(progress);
  }

 private:
  // One read buffer: [headroom_ bytes for a carried record | the chunk read].
  struct Slot {
    io::PopulatedMemory memory;
    uint64_t read_at = 0;      // log offset of memory[headroom_], the read's first byte
    uint64_t read_bytes = 0;   // bytes of the read (0: no read planned)
    uint64_t done_bytes = 0;   // bytes completed so far
    uint64_t carried = 0;      // bytes copied in front of read_at (log offsets below it)
    uint64_t segment_end = 0;  // end of the segment holding the read
    bool in_flight = false;
    io::Status error;  // a failed read into this slot, returned when the slot is waited for
  };
  // One scan's progress.
  struct State {
    const Visitor& visit;
    uint64_t start = 0;
    uint64_t pos = 0;  // the next record's log offset
    uint64_t next_progress = UINT64_MAX;
    bool finished = false;  // zeros or a corrupt record at pos
    ScanEnd end;
  };
  struct OpenFile {
    uint64_t base = UINT64_MAX;
    io::FileHandle handle;
  };

  bool has_segment(uint64_t base) const;
  io::Status step(uint32_t cur, State& st);
  void check_chunk(uint32_t cur, State& st);
  io::Status plan_read(Slot& slot);
  io::Status submit_read(uint32_t index);
  io::Status wait_read(uint32_t index);
  void reap(io::Wait wait);
  void drain_reads();
  void close_files();
  void carry_tail(const Slot& from, uint64_t pos, Slot& to);
  void visit_pending(const Visitor& visit);
  const std::byte* at(const Slot& slot, uint64_t log_offset) const;

  io::Disk& disk_;
  io::Disk* read_disk_;
  const CommitLogOptions options_;
  const std::string segment_dir_;
  const std::vector<uint64_t> bases_;
  const uint64_t chunk_bytes_;
  uint64_t headroom_ = 0;  // the largest record, rounded up to the direct-IO alignment
  Slot slots_[2];
  uint64_t next_read_ = 0;  // log offset of the next chunk to read; UINT64_MAX: none left
  OpenFile file_;           // the segment of the latest read
  io::Status read_error_;   // the first failed read completion
  std::vector<std::pair<uint64_t, MessageView>> pending_;
  uint64_t progress_every_bytes_ = 0;
  Progress progress_;
};

// Reads every record of the log in options.dir from its first segment (tests, verification).
io::Result<ScanEnd> scan_log(io::Disk& disk, const CommitLogOptions& options,
                             const LogScanner::Visitor& visit);

}  // namespace uringmq::engine
