#pragma once
// WireOffset: the physical offset the broker shows its clients (commitLogOffset in pull and
// send results, the offset inside an offset msgId, CONSUMER_SEND_MSG_BACK's offset): the
// shard-local log offset times the shard count plus the shard. Clients keep it in JavaScript
// numbers (exact below 2^53), so the store-wide form (StoreOffset, shard in the top 8 bits)
// never leaves the broker; this one stays below 2^53 until the shards together hold 8 PiB,
// as in Java. A distinct type: a store offset passed where a wire offset is expected (or the
// reverse) does not compile; the two conversions below are the only way between them.
// Pure functions; thread-safe.

#include <compare>
#include <cstdint>

#include <uringmq/offsets.h>

namespace uringmq::net {

struct WireOffset {
  uint64_t value = 0;
  constexpr WireOffset() = default;
  constexpr explicit WireOffset(uint64_t raw) : value(raw) {}
  friend constexpr auto operator<=>(WireOffset, WireOffset) = default;
};
static_assert(sizeof(WireOffset) == sizeof(uint64_t));

// store offset -> wire offset, for a store of `shards` shards (>= 1).
inline constexpr WireOffset wire_offset_of(StoreOffset store_offset, uint32_t shards) {
  return WireOffset{local_offset(store_offset).value * shards + shard_of_offset(store_offset)};
}
// wire offset -> store offset, for a store of `shards` shards (>= 1).
inline constexpr StoreOffset store_offset_of(WireOffset wire, uint32_t shards) {
  return make_store_offset(static_cast<uint32_t>(wire.value % shards),
                           LogOffset{wire.value / shards});
}

static_assert(store_offset_of(wire_offset_of(make_store_offset(2, LogOffset{4096}), 3), 3) ==
              make_store_offset(2, LogOffset{4096}));

}  // namespace uringmq::net
