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
// msgIds, is net::WireOffset (net/core/wire_offset.h).
//
// Each type is a wrapper of one integer: explicit construction from the raw value, `.value` to
// get it back, comparisons, and only the arithmetic that means something for it. Zero cost: the
// same size and layout as the integer (static_asserted below).

#include <compare>
#include <cstdint>
#include <type_traits>

namespace uringmq {

namespace detail {

// What every offset type is: one integer of type Raw, explicit construction from it, `.value`
// to get it back, and comparisons with offsets of the same type only (Self).
template <typename Self, typename Raw>
struct OffsetValue {
  Raw value = 0;
  constexpr OffsetValue() = default;
  constexpr explicit OffsetValue(Raw raw) : value(raw) {}
  friend constexpr auto operator<=>(const OffsetValue&, const OffsetValue&) = default;
};

// An offset that counts something (Count: messages, bytes): `count` further on, the distance
// between two offsets of one stream, and +=.
template <typename Self, typename Raw, typename Count>
struct CountingOffset : OffsetValue<Self, Raw> {
  using OffsetValue<Self, Raw>::OffsetValue;
  friend constexpr Self operator+(Self at, Count count) { return Self{at.value + count}; }
  friend constexpr Count operator-(Self end, Self start) { return end.value - start.value; }
  constexpr Self& operator+=(Count count) {
    this->value += count;
    return static_cast<Self&>(*this);
  }
};

}  // namespace detail

// Index of a message in one queue. -1 is "none" where an API says so (query_offset_async).
// Counts messages: + and - a count, the number of messages between two offsets of one queue.
struct QueueOffset : detail::CountingOffset<QueueOffset, int64_t, int64_t> {
  using CountingOffset::CountingOffset;
  friend constexpr QueueOffset operator-(QueueOffset at, int64_t count) {
    return QueueOffset{at.value - count};
  }
  constexpr QueueOffset& operator++() {
    ++value;
    return *this;
  }
};

// A byte position in one shard's CommitLog stream (RocketMQ's PHYSICALOFFSET). Counts bytes:
// + bytes further on, and the bytes between two positions of one log (end >= start).
struct LogOffset : detail::CountingOffset<LogOffset, uint64_t, uint64_t> {
  using CountingOffset::CountingOffset;
};

// A store-wide physical offset: shard number in the top 8 bits, its LogOffset below. No
// arithmetic: two store offsets of different shards have no distance.
struct StoreOffset : detail::OffsetValue<StoreOffset, uint64_t> {
  using OffsetValue::OffsetValue;
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
