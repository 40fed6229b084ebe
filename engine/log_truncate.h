#pragma once
// Offline truncation of a CommitLog at a record boundary: what a former master needs before it
// rejoins as a slave of a master whose log is shorter (its unacknowledged tail is cut).
//
// Crash safety (a kill -9 or power loss at any point leaves a store that recovers to the old
// log or to the cut one, never to anything in between): the cut is first written as an intent
// file, `<shard dir>/truncate` (32 bytes, big-endian: magic "UMQTRNC1", cut offset u64, old end
// u64, reserved u32, crc32c of bytes 0..27 u32; temp file, fdatasync, rename, directory fsync).
// Before it is durable nothing else has changed: the old log. Once it is, every open finishes
// the truncation before recovery (a shard calls finish_interrupted_truncation before it opens
// its log), so the store comes back cut. The steps, each idempotent:
//   1. the checkpoint's watermark is lowered to the cut (recovery would refuse a log that ends
//      below it);
//   2. segments after the cut's segment are removed, the last first, and the directory fsynced;
//   3. the cut's segment is zeroed from the cut to the old end (or the segment's end),
//      fdatasynced: a record of the old tail sits at its own PHYSICALOFFSET and would be valid
//      again, so none may survive;
//   4. the first index file that may hold a key of a record at or past the cut (header end
//      offset above the cut) becomes the last: every later one is removed and its header end
//      lowered to the cut (the index's open keeps only the last file's entries below its end);
//      a file beginning at or past the cut goes too, and the directory when none is left, so
//      the next open rebuilds the index from the log;
//   5. the intent file is removed.
// The ConsumeQueues need no step: at open, units that end past the log's end are cut
// (CqStore's recovery), before anything is appended at the cut.
// Synchronous, single thread; nothing else may use the store (the shard's lock is taken).

#include <cstdint>
#include <functional>
#include <string_view>

#include "engine/log/commit_log.h"
#include "engine/log/log_recovery.h"
#include "engine/log/message_codec.h"
#include "io/disk.h"

namespace uringmq::engine {

inline constexpr std::string_view kTruncateIntentFile = "truncate";
inline constexpr size_t kTruncateIntentBytes = 32;

struct TruncateIntent {
  uint64_t cut_offset = 0;
  uint64_t old_end_offset = 0;
};
void encode_truncate_intent(const TruncateIntent& intent,
                            std::span<std::byte, kTruncateIntentBytes> out);
// corruption naming what failed when the bytes are not a valid intent.
io::Result<TruncateIntent> decode_truncate_intent(std::span<const std::byte> bytes);

struct TruncateResult {
  uint64_t cut_offset = 0;
  uint64_t old_end_offset = 0;  // the end of the log before the cut (after recovery)
  uint64_t records_cut = 0;
  uint32_t segments_removed = 0;
  uint32_t index_files_removed = 0;
};

// Test hook: called before each step of the truncation (1..5 above) with its number; returning
// false stops there as a crash would (the result is then io_error "stopped").
using TruncateStepHook = std::function<bool(int step)>;

// Recovers the log of options.dir (options.dir = the shard directory, as CommitLog::open takes
// it), then cuts it at `cut`. `cut_record` (if set) sees each record of [cut, end) before
// anything changes. Errors: locked (the store is open), invalid_argument when `cut` is not a
// record boundary within [the log's first segment, its end] (the message names the offset and
// the nearest boundaries), recovery's errors, io errors. A cut at the end changes nothing.
io::Result<TruncateResult> truncate_log(
    io::Disk& disk, const CommitLogOptions& options, uint64_t cut,
    const std::function<void(uint64_t, const MessageView&)>& cut_record = nullptr,
    const TruncateStepHook& step_hook = nullptr);

// Finishes a truncation whose intent file a crash left in options.dir (taking the shard's lock
// meanwhile); nothing when there is none. A shard runs it before it opens its log. corruption when
// the intent file fails its checks (it was written by rename, so a torn one is damage, not a crash:
// the message says to remove it to keep the log as it is).
io::Status finish_interrupted_truncation(io::Disk& disk, const CommitLogOptions& options);

}  // namespace uringmq::engine
