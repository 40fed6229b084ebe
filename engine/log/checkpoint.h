#pragma once
// Checkpoint: the small, checksummed file that records a CommitLog's durable watermark.
//
// Layout (engine/FORMAT.md, "checkpoint"): 64 bytes, big-endian:
//   0 magic "UMQCKPT1" (8) | 8 version u32 (=1) | 12 flags u32 (reserved, 0)
//   16 durable_offset u64: every CommitLog byte below it was covered by a completed fdatasync
//   24 durable_store_timestamp_ms i64: store time of the last record below durable_offset
//   32 segment_size_bytes u64: the segment size the log was written with
//   40 reserved (20 bytes, zero) | 60 crc32c of bytes 0..59 u32
// The file is never rewritten in place: write "checkpoint.tmp", fdatasync, rename over
// "checkpoint", fsync the directory (LevelDB's CURRENT). A torn or bit-flipped checkpoint fails
// its CRC and is reported as corruption, never trusted.
// Pure encode/decode plus a synchronous writer for startup and shutdown; thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "io/disk.h"

namespace uringmq::engine {

inline constexpr size_t kCheckpointBytes = 64;
inline constexpr std::string_view kCheckpointFile = "checkpoint";
inline constexpr std::string_view kCheckpointTempFile = "checkpoint.tmp";

struct Checkpoint {
  uint64_t durable_offset = 0;
  int64_t durable_store_timestamp_ms = 0;
  uint64_t segment_size_bytes = 0;
  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

void encode_checkpoint(const Checkpoint& checkpoint, std::span<std::byte, kCheckpointBytes> out);
// corruption (naming what failed) when the bytes are not a valid checkpoint.
io::Result<Checkpoint> decode_checkpoint(std::span<const std::byte> bytes);

// Reads <dir>/checkpoint. not_found when absent; corruption when it fails its checks.
io::Result<Checkpoint> read_checkpoint(io::Disk& disk, std::string_view dir);
// Writes <dir>/checkpoint atomically and durably (temp file, fdatasync, rename, directory fsync).
// Synchronous: only when nothing else is in flight on `disk`.
io::Status write_checkpoint_sync(io::Disk& disk, std::string_view dir,
                                 const Checkpoint& checkpoint);

}  // namespace uringmq::engine
