// Goal: the four offset kinds (include/uringmq/offsets.h, net/core/wire_offset.h) are distinct
// types: none converts implicitly to another or to or from its raw integer, the APIs that take one
// kind refuse the others, and only the arithmetic that means something exists. The named
// conversions (store offset <-> (shard, log offset), store offset <-> wire offset) round-trip.
// Method: compile-time checks (static_assert on std::is_convertible_v, std::is_constructible_v,
// std::is_invocable_v and requires-expressions: a mix-up that compiled again would fail this
// file's build), then runtime checks of the arithmetic and the conversions at their edges.
#include <gtest/gtest.h>

#include <uringmq/offsets.h>
#include <uringmq/store.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "engine/log/commit_log.h"
#include "engine/queues/consume_queue.h"
#include "engine/queues/consumer_offsets.h"
#include "engine/queues/dispatch.h"
#include "net/core/wire_offset.h"

namespace uringmq {
namespace {

using net::WireOffset;

// No kind converts implicitly to another, nor to or from a raw integer.
template <typename From, typename To>
constexpr bool kImplicit = std::is_convertible_v<From, To>;

static_assert(!kImplicit<QueueOffset, LogOffset>);
static_assert(!kImplicit<QueueOffset, StoreOffset>);
static_assert(!kImplicit<QueueOffset, WireOffset>);
static_assert(!kImplicit<LogOffset, QueueOffset>);
static_assert(!kImplicit<LogOffset, StoreOffset>);
static_assert(!kImplicit<LogOffset, WireOffset>);
static_assert(!kImplicit<StoreOffset, QueueOffset>);
static_assert(!kImplicit<StoreOffset, LogOffset>);
static_assert(!kImplicit<StoreOffset, WireOffset>);
static_assert(!kImplicit<WireOffset, QueueOffset>);
static_assert(!kImplicit<WireOffset, LogOffset>);
static_assert(!kImplicit<WireOffset, StoreOffset>);
static_assert(!kImplicit<int64_t, QueueOffset>);
static_assert(!kImplicit<QueueOffset, int64_t>);
static_assert(!kImplicit<uint64_t, LogOffset>);
static_assert(!kImplicit<LogOffset, uint64_t>);
static_assert(!kImplicit<uint64_t, StoreOffset>);
static_assert(!kImplicit<StoreOffset, uint64_t>);
static_assert(!kImplicit<uint64_t, WireOffset>);
static_assert(!kImplicit<WireOffset, uint64_t>);

// Not even explicitly: the only ways between kinds are the named conversions.
static_assert(!std::is_constructible_v<LogOffset, QueueOffset>);
static_assert(!std::is_constructible_v<StoreOffset, LogOffset>);
static_assert(!std::is_constructible_v<LogOffset, StoreOffset>);
static_assert(!std::is_constructible_v<WireOffset, StoreOffset>);
static_assert(!std::is_constructible_v<StoreOffset, WireOffset>);
// From the raw value, explicitly.
static_assert(std::is_constructible_v<QueueOffset, int64_t>);
static_assert(std::is_constructible_v<LogOffset, uint64_t>);

// Comparison only within a kind.
template <typename A, typename B>
constexpr bool kComparable = requires(A a, B b) {
  a < b;
};
static_assert(kComparable<QueueOffset, QueueOffset>);
static_assert(!kComparable<QueueOffset, LogOffset>);
static_assert(!kComparable<LogOffset, StoreOffset>);
static_assert(!kComparable<QueueOffset, int64_t>);
static_assert(!kComparable<StoreOffset, WireOffset>);

// Arithmetic that means something: offset + count, offset - offset; never offset + offset, nor
// a count of one kind added to another kind, nor any arithmetic on store or wire offsets.
template <typename A, typename B>
constexpr bool kAddable = requires(A a, B b) {
  a + b;
};
static_assert(std::is_same_v<decltype(QueueOffset{} + int64_t{1}), QueueOffset>);
static_assert(std::is_same_v<decltype(QueueOffset{} - QueueOffset{}), int64_t>);
static_assert(std::is_same_v<decltype(LogOffset{} + uint64_t{1}), LogOffset>);
static_assert(std::is_same_v<decltype(LogOffset{} - LogOffset{}), uint64_t>);
static_assert(!kAddable<QueueOffset, QueueOffset>);
static_assert(!kAddable<LogOffset, LogOffset>);
static_assert(!kAddable<LogOffset, QueueOffset>);
static_assert(!kAddable<StoreOffset, uint64_t>);
static_assert(!kAddable<WireOffset, uint64_t>);

// The boundaries refuse the wrong kind.
static_assert(std::is_invocable_v<decltype(&Session::read_async), Session&, StoreOffset, uint32_t,
                                  std::byte*, uint64_t>);
static_assert(!std::is_invocable_v<decltype(&Session::read_async), Session&, uint64_t, uint32_t,
                                   std::byte*, uint64_t>);
static_assert(!std::is_invocable_v<decltype(&Session::read_async), Session&, LogOffset, uint32_t,
                                   std::byte*, uint64_t>);
static_assert(!std::is_invocable_v<decltype(&Session::commit_offset_async), Session&,
                                   std::string_view, std::string_view, int32_t, int64_t, uint64_t>);
static_assert(
    !std::is_invocable_v<decltype(&engine::CqStore::delete_below), engine::CqStore&, QueueOffset>);
static_assert(!std::is_invocable_v<decltype(&engine::CommitLog::delete_segments_before),
                                   engine::CommitLog&, uint64_t, uint32_t>);
static_assert(!std::is_invocable_v<decltype(&engine::CommitLog::read), engine::CommitLog&,
                                   QueueOffset, uint32_t, std::byte*, uint64_t>);
static_assert(!std::is_invocable_v<decltype(&engine::CqStore::append), engine::CqStore&,
                                   engine::QueueIndex, LogOffset, const engine::CqUnit&>);
static_assert(!std::is_invocable_v<decltype(&engine::CqStore::raise_min_offset), engine::CqStore&,
                                   engine::QueueIndex, int64_t>);
static_assert(
    !std::is_invocable_v<decltype(&engine::ConsumerOffsets::commit), engine::ConsumerOffsets&,
                         std::string_view, std::string_view, int32_t, LogOffset>);
static_assert(!std::is_invocable_v<decltype(&engine::Dispatcher::set_dispatched),
                                   engine::Dispatcher&, QueueOffset>);
static_assert(!std::is_assignable_v<decltype(std::declval<Completion&>().offset), uint64_t>);
static_assert(
    !std::is_assignable_v<decltype(std::declval<Completion&>().queue_offset), StoreOffset>);
static_assert(!std::is_assignable_v<decltype(std::declval<PullRequest&>().queue_offset), int>);
static_assert(
    !std::is_assignable_v<decltype(std::declval<engine::CqUnit&>().log_offset), QueueOffset>);

TEST(OffsetsTest, ArithmeticStaysWithinItsKind) {
  QueueOffset q{10};
  EXPECT_EQ((q + 5).value, 15);
  EXPECT_EQ((q - 3).value, 7);
  EXPECT_EQ(QueueOffset{15} - q, 5);
  ++q;
  q += 2;
  EXPECT_EQ(q, QueueOffset{13});
  EXPECT_LT(QueueOffset{-1}, QueueOffset{0});  // -1: "none" where an API says so
  LogOffset at{4096};
  EXPECT_EQ(at + 100, LogOffset{4196});
  EXPECT_EQ(LogOffset{4196} - at, 100u);
  at += 4;
  EXPECT_EQ(at.value, 4100u);
  EXPECT_EQ(Completion{}.queue_offset, QueueOffset{-1});  // the default is still "none"
}

TEST(OffsetsTest, StoreOffsetCarriesShardAndLogOffset) {
  for (uint32_t shard : {0u, 1u, 7u, 255u}) {
    for (uint64_t local : {uint64_t{0}, uint64_t{4096}, kStoreOffsetLocalMask}) {
      const StoreOffset s = make_store_offset(shard, LogOffset{local});
      EXPECT_EQ(shard_of_offset(s), shard);
      EXPECT_EQ(local_offset(s), LogOffset{local});
      EXPECT_EQ(s.value, (uint64_t{shard} << 56) | local);  // the layout clients may hold
    }
  }
}

TEST(OffsetsTest, WireOffsetIsTheShardsOwnLogOffset) {
  // Each shard is one presented broker: the wire offset is that shard's log offset, as in a
  // RocketMQ broker's one CommitLog, and the connection's shard turns it back.
  for (uint32_t shard : {0u, 1u, 7u, 255u}) {
    for (uint64_t local : {uint64_t{0}, uint64_t{1}, uint64_t{123'456'789}, uint64_t{1} << 40}) {
      const StoreOffset s = make_store_offset(shard, LogOffset{local});
      const WireOffset w = net::wire_offset_of(s);
      EXPECT_EQ(w.value, local);  // what clients see (net/README.md)
      EXPECT_EQ(net::store_offset_of(w, shard), s) << shard << " " << local;
    }
  }
  // The same wire offset asked of another broker names that broker's shard.
  EXPECT_EQ(shard_of_offset(net::store_offset_of(WireOffset{777}, 1)), 1u);
  EXPECT_EQ(net::wire_offset_of(make_store_offset(0, LogOffset{777})).value, 777u);
}

}  // namespace
}  // namespace uringmq
