#pragma once
// The quarantine file's entries: a damaged CommitLog record's bytes and where it was found, kept
// so an operator can inspect (and perhaps rebuild) it after its queue moved past it
// (engine/README.md, "Quarantine"). Shared by the shard that writes the file and by
// `uringmq-ctl quarantine`, which reads it.
//
// One entry, all integers little-endian:
//   u32 magic 'UMQQ' | u32 entry bytes (all of it) | u32 CRC-32 (IEEE) of everything after it |
//   u64 log offset | u64 store offset | i64 queue offset (-1: unknown) | i64 time (ms, epoch) |
//   u64 segment file offset | u32 record bytes | i32 queue id (-1: unknown) |
//   u16 topic bytes | u16 check bytes | u16 segment name bytes | topic | check | segment name |
//   the record's bytes as stored.
// Entries follow each other; the file only grows. Threading: pure functions.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uringmq::engine {

inline constexpr uint32_t kQuarantineMagic = 0x51514D55;  // "UMQQ" read as bytes
inline constexpr uint32_t kQuarantineHeaderBytes = 66;

struct QuarantineEntry {
  uint64_t log_offset = 0;
  uint64_t store_offset = 0;
  int64_t queue_offset = -1;
  int64_t time_ms = 0;
  uint64_t file_offset = 0;  // within the segment
  int32_t queue_id = -1;
  uint32_t record_bytes = 0;
  std::string topic;
  std::string check;              // the check the record failed
  std::string segment;            // the CommitLog segment's file name
  std::vector<std::byte> record;  // empty unless asked for (record_bytes says its size)
};

// The entry's bytes (appended to `out`).
void encode_quarantine_entry(const QuarantineEntry& entry, std::vector<std::byte>& out);

// What a read of a quarantine file found: its whole entries, and where they end.
struct QuarantineScan {
  std::vector<QuarantineEntry> entries;
  uint64_t valid_bytes = 0;  // the whole entries' end: the next entry goes here
  // Empty when every byte belongs to a whole entry. Else what is wrong at valid_bytes.
  std::string damage;
  // The bytes after valid_bytes are one entry cut short by the file's end (a write a crash
  // interrupted before its fdatasync: its queue had not moved on, so it may be overwritten).
  bool torn_tail = false;
};

// Parses a file's bytes. keep_records = false leaves each entry's record empty (its size is
// still known from record_bytes) so a listing or the shard's load stays small.
QuarantineScan scan_quarantine(std::span<const std::byte> bytes, bool keep_records);

// A hex dump: 16 bytes a line, the offset first, printable bytes at the end.
std::string hex_dump(std::span<const std::byte> bytes);

}  // namespace uringmq::engine
