#pragma once
// WireOffset: the physical offset the broker shows its clients (commitLogOffset in pull and
// send results, the offset inside an offset msgId, CONSUMER_SEND_MSG_BACK's offset). Each shard
// is one RocketMQ broker (net/core/presented_broker.h), so it is that shard's own log offset, as in
// a Java broker's one CommitLog: the shard is the broker the connection came in on, never in
// the number. The store-wide form (StoreOffset, shard in the top 8 bits) never leaves the
// broker. A distinct type: a store offset passed where a wire offset is expected (or the
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

// store offset -> wire offset: its shard's log offset (the shard is the presented broker).
inline constexpr WireOffset wire_offset_of(StoreOffset store_offset) {
  return WireOffset{local_offset(store_offset).value};
}
// wire offset -> store offset, on the broker (shard) `shard` it was asked of.
inline constexpr StoreOffset store_offset_of(WireOffset wire, uint32_t shard) {
  return make_store_offset(shard, LogOffset{wire.value});
}

static_assert(store_offset_of(wire_offset_of(make_store_offset(2, LogOffset{4096})), 2) ==
              make_store_offset(2, LogOffset{4096}));
static_assert(wire_offset_of(make_store_offset(1, LogOffset{4096})) == WireOffset{4096});

}  // namespace uringmq::net
