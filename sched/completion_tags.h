#pragma once
// The one table of completion-tag classes. Every 64-bit value that comes back with a completion
// is claimed here, so that adding a part of a shard is adding a line to this file, and two parts
// can never claim the same value (the static_asserts below fail the build).
//
// Three namespaces, each its own table:
//  * `TagClass`: the top byte of an io::IoRequest's user_data on a shard's Disk. A
//    ParticipantLoop routes a completion by this byte alone; the bits below are the owner's.
//  * `ReadTag`: the caller's tag of a CommitLog::read or CqStore::read_units (below bit 56:
//    the log puts its own class above it). A bit marks which of the shard's readers asked; the
//    bits below kReadIndexBits are that reader's index. No bit: a session's read or a pull op.
//  * `AppendTag`: the tag of a shard's own append (a delivery, a timer's copy or roll).
// The broker's network ring is another ring with its own events (net/server/broker_reactor.h,
// Event).
//
// Threading: constants only.

#include <cstdint>

namespace uringmq::sched {

// ---- user_data classes on a shard's Disk (top byte) ----
enum class TagClass : uint8_t {
  none = 0,              // never issued: a zero user_data is a bug
  log_write = 1,         // CommitLog: a segment write (index: its write slot)
  log_sync = 2,          // CommitLog: fdatasync of a segment (index: the segment's base)
  log_allocator = 3,     // CommitLog: preparing the next segment (fallocate, zero, sync)
  log_checkpoint = 4,    // CommitLog: checkpoint write, sync, rename, directory sync
  log_read = 5,          // CommitLog: a record read (index: the caller's ReadTag)
  log_retention = 6,     // CommitLog: a segment deletion's directory sync
  consume_queue = 0x10,  // CqStore: the operation in the next byte, a slot below
  consumer_offs = 0x20,  // ConsumerOffsets: one persist step at a time, nothing below
  message_index = 0x30,  // IndexStore: the operation in the next byte, its argument below
  shard_waker = 0xA0,    // the shard's eventfd wait (sessions wake a sleeping shard)
  shard_sleep = 0xA1,    // the shard's sleep timeouts (index: the armed slot)
  log_scrub = 0xA2,      // LogScrub: its one read in flight
  log_scan = 0xA3,       // LogScanner: its read ahead (index: the read slot); synchronous scans
  quarantine = 0xA4,     // QuarantineFile: its one request in flight (the step below)
  record_repair = 0xA5,  // RecordRepair: its one request in flight (a write-back's step)
};
inline constexpr uint32_t kTagClassShift = 56;
inline constexpr uint64_t kTagIndexMask = (uint64_t{1} << kTagClassShift) - 1;

constexpr uint64_t tag_of(TagClass c, uint64_t index) {
  return (static_cast<uint64_t>(c) << kTagClassShift) | (index & kTagIndexMask);
}
constexpr TagClass class_of(uint64_t user_data) {
  return static_cast<TagClass>(user_data >> kTagClassShift);
}
constexpr uint64_t index_of(uint64_t user_data) {
  return user_data & kTagIndexMask;
}

// ---- Read tags: which of the shard's readers a CommitLog or ConsumeQueue read belongs to ----
namespace read_tag {
// Log reads of a pull or an offset search (the op's index below).
inline constexpr uint64_t kPullOp = uint64_t{1} << 50;
// Log and CQ reads of the delay-level deliveries (the level, or the batch entry, below).
inline constexpr uint64_t kSchedule = uint64_t{1} << 49;
// Log and CQ reads of the timer wheel (the slot, or the batch entry, below).
inline constexpr uint64_t kTimer = uint64_t{1} << 48;
// RecordPrefetch's log reads (its slot below).
inline constexpr uint64_t kPrefetch = uint64_t{1} << 47;
// CQ reads of a delay level's units read ahead.
inline constexpr uint64_t kUnitsAhead = uint64_t{1} << 46;
// CQ reads of retention's boundary searches (the search's index below).
inline constexpr uint64_t kRetention = uint64_t{1} << 45;
// The index under a reader's bit stays below the lowest bit.
inline constexpr uint32_t kIndexBits = 45;
inline constexpr uint64_t kAll =
    kPullOp | kSchedule | kTimer | kPrefetch | kUnitsAhead | kRetention;
}  // namespace read_tag

// ---- Append tags: the tag of the shard's own appends (kInternalSlot) ----
namespace append_tag {
inline constexpr uint64_t kTimerCopy = uint64_t{1} << 63;  // a timer's copy (or its roll)
inline constexpr uint64_t kTimerRoll = uint64_t{1} << 62;  // ... that is not a delivery
// Below: the delay level (a delivery), or the timer's slot and queue offset
// (engine/delivery/timer_delivery.cc).
inline constexpr uint32_t kIndexBits = 62;
}  // namespace append_tag

namespace detail {
constexpr bool one_bit(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}
constexpr int popcount(uint64_t v) {
  int n = 0;
  for (; v != 0; v &= v - 1) n++;
  return n;
}
}  // namespace detail

// Each read tag is one bit, no two share it, all sit above the index and below the log's class.
static_assert(detail::one_bit(read_tag::kPullOp) && detail::one_bit(read_tag::kSchedule));
static_assert(detail::one_bit(read_tag::kTimer) && detail::one_bit(read_tag::kPrefetch));
static_assert(detail::one_bit(read_tag::kUnitsAhead) && detail::one_bit(read_tag::kRetention));
static_assert(detail::popcount(read_tag::kAll) == 6, "two read tags share a bit");
static_assert((read_tag::kAll & ((uint64_t{1} << read_tag::kIndexBits) - 1)) == 0);
static_assert((read_tag::kAll & ~kTagIndexMask) == 0, "a read tag collides with the log's class");
// Append tags: distinct bits above their index.
static_assert(detail::one_bit(append_tag::kTimerCopy) && detail::one_bit(append_tag::kTimerRoll));
static_assert((append_tag::kTimerCopy & append_tag::kTimerRoll) == 0);
static_assert(((append_tag::kTimerCopy | append_tag::kTimerRoll) &
               ((uint64_t{1} << append_tag::kIndexBits) - 1)) == 0);
// The CommitLog's classes are one contiguous range (CommitLog::owns tests the range).
static_assert(static_cast<uint8_t>(TagClass::log_retention) -
                  static_cast<uint8_t>(TagClass::log_write) ==
              5);

// Duplicate TagClass values do not compile: each is a case label of one switch.
constexpr bool tag_classes_distinct(TagClass c) {
  switch (c) {
    case TagClass::none:
    case TagClass::log_write:
    case TagClass::log_sync:
    case TagClass::log_allocator:
    case TagClass::log_checkpoint:
    case TagClass::log_read:
    case TagClass::log_retention:
    case TagClass::consume_queue:
    case TagClass::consumer_offs:
    case TagClass::message_index:
    case TagClass::shard_waker:
    case TagClass::shard_sleep:
    case TagClass::log_scrub:
    case TagClass::log_scan:
    case TagClass::quarantine:
    case TagClass::record_repair:
      return true;
  }
  return false;
}
static_assert(tag_classes_distinct(TagClass::none));

}  // namespace uringmq::sched
