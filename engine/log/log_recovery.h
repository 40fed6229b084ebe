#pragma once
// Recovery of a CommitLog directory at open (engine/README.md, "Recovery").
//
// Scans from the start of the segment holding the checkpoint's durable watermark (or the first
// segment when there is no checkpoint),
// checking every record whole (lengths, BODYCRC, the record CRC, PHYSICALOFFSET == position),
// to the first position that holds no valid record: the end of the log. Then:
// - end below the watermark: corruption, refuse to start, naming file, file offset and reason;
// - a valid record found at or beyond end + unsynced window (no write of the crashed run can
//   reach that far past the durable point): corruption below the durable point, refuse;
// - in both cases, with options.recovery_copy, the damaged record is written back from a
//   replica's copy instead (checked as a read checks it) and the scan goes on from it;
// - otherwise the bytes after end are a torn tail: zeroed (and counted), fdatasynced;
// - segment files past the end's segment are deleted (an unclean stop), or kept as the
//   prepared next segment (a clean stop, when whole).
// Synchronous; run by CommitLog::open before any other IO on the disk.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/log/commit_log.h"
#include "io/disk.h"

namespace uringmq::engine {

struct RecoveredLog {
  uint64_t end_offset = 0;
  int64_t last_store_timestamp_ms = 0;
  // Whole segment files kept, ascending: those up to the end's segment, plus one prepared
  // next segment after a clean stop.
  std::vector<uint64_t> segment_bases;
};

// Damaged records one open repairs from a replica's copy at most (CommitLogOptions::
// recovery_copy); damage past them refuses the open, as without a copy.
inline constexpr uint32_t kMaxRecoveryRepairs = 1024;

// The bytes past the durable point that a crashed run may have written: the unsynced bound
// plus one write buffer (a write is submitted whole once it starts below the bound).
uint64_t unsynced_window_bytes(const CommitLogOptions& options);

// `visit` (if set) sees every valid record the scan checks, in log order, with nothing else in
// flight on the disk: a shard rebuilds its ConsumeQueues in the same pass. `scan_disk` (if
// set): an idle disk of the same thread for the scan's reads, so they stay in flight while
// `visit` runs (LogScanner::set_read_disk).
io::Result<RecoveredLog> recover_log(
    io::Disk& disk, const CommitLogOptions& options, bool unclean_stop, RecoveryReport& report,
    const std::function<void(uint64_t, const MessageView&)>& visit = nullptr,
    io::Disk* scan_disk = nullptr);

// Lists the segment files of a commitlog directory: ascending bases. Files whose name is not
// 20 digits are ignored. invalid_argument names a segment of the wrong size unless it is the
// last one (an unfinished allocation), whose base is then returned in *unfinished.
io::Result<std::vector<uint64_t>> list_segments(io::Disk& disk, const std::string& segment_dir,
                                                uint64_t segment_size_bytes);

}  // namespace uringmq::engine
