#pragma once
// uringmq public API: distinct types for the offsets the store hands out, so that passing one
// kind where another is expected does not compile.
//
//   QueueOffset  index of a unit in one ConsumeQueue (RocketMQ's QUEUEOFFSET, int64). Counts
//                messages: +1 is the next message of the queue.
//   LogOffset    byte position in one shard's CommitLog stream (the stored PHYSICALOFFSET).
//                Counts bytes: + TOTALSIZE is the next record. Not a file offset.
//   StoreOffset  store-wide physical offset: the shard in the top 8 bits, its LogOffset below
//                (make_store_offset, shard_of_offset, local_offset). What Store and Session
//                methods take and give for a record.
// The broker's fourth kind, the wire offset clients see as commitLogOffset and in offset
// msgIds, is net::WireOffset (net/wire_offset.h).
//
// Each type is a wrapper of one integer: explicit construction from the raw value, `.value` to
// get it back, comparisons, and only the arithmetic that means something for it. Zero cost: the
// same size and layout as the integer (static_asserted below).

#include <compare>
#include <cstdint>
#include <type_traits>

namespace uringmq {

// Index of a message in one queue. -1 is "none" where an API says so (query_offset_async).
struct QueueOffset {
  int64_t value = 0;
  constexpr QueueOffset() = default;
  constexpr explicit QueueOffset(int64_t raw) : value(raw) {}
  friend constexpr auto operator<=>(QueueOffset, QueueOffset) = default;
  // `count` messages further on (or back, when negative).
  friend constexpr QueueOffset operator+(QueueOffset at, int64_t count) {
    return QueueOffset{at.value + count};
  }
  friend constexpr QueueOffset operator-(QueueOffset at, int64_t count) {
    return QueueOffset{at.value - count};
  }
  // How many messages lie between two offsets of one queue.
  friend constexpr int64_t operator-(QueueOffset end, QueueOffset start) {
    return end.value - start.value;
  }
  constexpr QueueOffset& operator+=(int64_t count) {
    value += count;
    return *this;
  }
  constexpr QueueOffset& operator++() {
    ++value;
    return *this;
  }
};

// A byte position in one shard's CommitLog stream (RocketMQ's PHYSICALOFFSET).
struct LogOffset {
  uint64_t value = 0;
  constexpr LogOffset() = default;
  constexpr explicit LogOffset(uint64_t raw) : value(raw) {}
  friend constexpr auto operator<=>(LogOffset, LogOffset) = default;
  // `bytes` further on in the log.
  friend constexpr LogOffset operator+(LogOffset at, uint64_t bytes) {
    return LogOffset{at.value + bytes};
  }
  // Bytes between two positions of one log (end >= start).
  friend constexpr uint64_t operator-(LogOffset end, LogOffset start) {
    return end.value - start.value;
  }
  constexpr LogOffset& operator+=(uint64_t bytes) {
    value += bytes;
    return *this;
  }
};

// A store-wide physical offset: shard number in the top 8 bits, its LogOffset below. No
// arithmetic: two store offsets of different shards have no distance.
struct StoreOffset {
  uint64_t value = 0;
  constexpr StoreOffset() = default;
  constexpr explicit StoreOffset(uint64_t raw) : value(raw) {}
  friend constexpr auto operator<=>(StoreOffset, StoreOffset) = default;
};

inline constexpr uint32_t kStoreOffsetShardShift = 56;
// Log offsets a store offset can carry: below 2^56 (64 PiB per shard).
inline constexpr uint64_t kStoreOffsetLocalMask = (uint64_t{1} << kStoreOffsetShardShift) - 1;

// store offset <-> (shard, log offset). shard < 256 and log_offset below 2^56.
inline constexpr StoreOffset make_store_offset(uint32_t shard, LogOffset log_offset) {
  return StoreOffset{(uint64_t{shard} << kStoreOffsetShardShift) | log_offset.value};
}
inline constexpr uint32_t shard_of_offset(StoreOffset store_offset) {
  return static_cast<uint32_t>(store_offset.value >> kStoreOffsetShardShift);
}
inline constexpr LogOffset local_offset(StoreOffset store_offset) {
  return LogOffset{store_offset.value & kStoreOffsetLocalMask};
}

static_assert(sizeof(QueueOffset) == sizeof(int64_t));
static_assert(sizeof(LogOffset) == sizeof(uint64_t));
static_assert(sizeof(StoreOffset) == sizeof(uint64_t));
static_assert(std::is_trivially_copyable_v<QueueOffset>);
static_assert(std::is_trivially_copyable_v<LogOffset>);
static_assert(std::is_trivially_copyable_v<StoreOffset>);
static_assert(local_offset(make_store_offset(3, LogOffset{42})) == LogOffset{42});
static_assert(shard_of_offset(make_store_offset(3, LogOffset{42})) == 3);

}  // namespace uringmq
