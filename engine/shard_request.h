#pragma once
// The requests a session posts to a shard (one struct per kind, ShardRequest their variant) and
// a session's rings to and from every shard (SessionSlot). Internal to the engine.
// Threading: a request is written by its session and read by its shard, through the SPSC ring.

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/queues/sql_filter.h"
#include "engine/store.h"
#include "io/waker.h"
#include "sched/spsc_ring.h"

namespace uringmq {

// Requests crossing from a session to a shard: one struct per kind, holding exactly the fields
// its handler reads (and the tag its completion carries), so a handler cannot read a field its
// kind never set. ShardRequest is the variant of them, copied by value through the SPSC rings
// (trivially copyable, as large as the largest kind: no allocation per request). Views point
// into the session's memory, which outlives the request's completion.
namespace shard_request {

struct Append {
  uint64_t tag = 0;
  engine::MessageInput input;
};
// Every message into one queue (Session::send_batch_async); each one's store-wide offset is
// written into offsets before the completion.
struct AppendBatch {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
  engine::HostAddress store_host;
  std::span<const Message> messages;
  std::span<StoreOffset> offsets;
};
struct Read {
  uint64_t tag = 0;
  LogOffset local_offset;
  uint32_t size_bytes = 0;
  std::byte* dest = nullptr;
};
struct Pull {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset queue_offset;  // the first wanted
  uint32_t max_messages = 0;
  std::string_view tag_filter;
  const engine::SqlFilter* sql_filter = nullptr;  // PullRequest::sql_filter
  std::span<std::byte> buffer;
  int64_t wait_ms = 0;
};
struct QueryQueue {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
};
// The first queue offset stored at or after timestamp_ms.
struct SearchOffset {
  uint64_t tag = 0;
  std::string_view topic;
  int32_t queue_id = 0;
  int64_t timestamp_ms = 0;
};
struct CommitOffset {
  uint64_t tag = 0;
  std::string_view group;
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset queue_offset;
};
struct QueryOffset {
  uint64_t tag = 0;
  std::string_view group;
  std::string_view topic;
  int32_t queue_id = 0;
};
// Done once every offset committed before it is persisted.
struct FlushOffsets {
  uint64_t tag = 0;
};
// The session's held long polls answered now.
struct ReleaseHeld {
  uint64_t tag = 0;
};
// Records whose KEYS or UNIQ_KEY is key, stored in [begin_ms, end_ms] (engine/shard_index.cc).
struct QueryIndex {
  uint64_t tag = 0;
  std::string_view topic;
  std::string_view key;
  int64_t begin_ms = 0;
  int64_t end_ms = 0;
  uint32_t max_messages = 0;
  std::span<std::byte> buffer;
};
// The record at local_offset, or (batch not empty) the records at the batch's offsets of this
// shard, each checked, one after another into buffer.
struct ViewRecord {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<const StoreOffset> batch;  // the caller's until the completion
  std::span<std::byte> buffer;
};
// Transactional messages: the half at local_offset (its bytes in record; empty: the shard looks
// in its log's memory) ended by end; producer_group and queue_offset are RocketMQ's check
// fields (empty group: none).
struct EndTransaction {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<const std::byte> record;
  TransactionEnd end = TransactionEnd::commit;
  std::string_view producer_group;
  QueueOffset queue_offset;
};
// The due halves into checks.
struct TransactionChecks {
  uint64_t tag = 0;
  std::span<TransactionCheck> checks;
};
// Every consumer offset of the shard into *out.
struct ListOffsets {
  uint64_t tag = 0;
  std::vector<ConsumerOffsetEntry>* out = nullptr;
};
// A replica's raw log bytes from its master at local_offset; empty: only asks for the log's ends
// (engine/shard_replica.cc).
struct Replicate {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<const std::byte> bytes;
};

// The answer to a RepairAsk (engine/shard_repairs.h): the peer's copy of the record at
// local_offset (checked, then written back in place), or, empty, why none came.
struct Repair {
  uint64_t tag = 0;
  LogOffset local_offset;
  std::span<const std::byte> bytes;
  std::string_view peer;
  std::string_view failure;
};

}  // namespace shard_request

struct ShardRequest
    : std::variant<shard_request::Append, shard_request::AppendBatch, shard_request::Read,
                   shard_request::Pull, shard_request::QueryQueue, shard_request::SearchOffset,
                   shard_request::CommitOffset, shard_request::QueryOffset,
                   shard_request::FlushOffsets, shard_request::ReleaseHeld,
                   shard_request::QueryIndex, shard_request::ViewRecord,
                   shard_request::EndTransaction, shard_request::TransactionChecks,
                   shard_request::ListOffsets, shard_request::Replicate, shard_request::Repair> {
  using variant::variant;
};
static_assert(std::is_trivially_copyable_v<ShardRequest>);

// A session's rings: one to each shard, one back from each shard.
struct SessionSlot {
  std::atomic<bool> in_use{false};  // claimed by a Session (Store's thread and sessions)
  std::atomic<bool> active{false};  // rings exist and shards drain them
  std::vector<std::unique_ptr<sched::SpscRing<ShardRequest>>> to_shard;
  std::vector<std::unique_ptr<sched::SpscRing<Completion>>> from_shard;
  std::atomic<uint32_t> completion_seq{0};  // bumped by shards after posting completions
  std::atomic<bool> waiting{false};         // the session is blocked on completion_seq
  // Woken too while waiting (Session::set_completion_waker), for sessions in an event loop.
  std::atomic<io::Waker*> completion_waker{nullptr};
};

}  // namespace uringmq
