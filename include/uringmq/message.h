#pragma once
// uringmq public API: what goes in and out of a Session: a Message to send, a PullRequest, the
// Completion every request ends with, and store-wide offsets. Views in a Message or PullRequest
// are not copied: their memory must outlive the completion.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <uringmq/offsets.h>
#include <uringmq/options.h>
#include <uringmq/status.h>

namespace uringmq {

namespace engine {
class SqlFilter;  // engine/queues/sql_filter.h (internal: only the broker compiles them)
}  // namespace engine

// The shard that owns queue (topic, queue_id) in a store of shard_count shards: a stable hash
// (FNV-1a over the topic bytes and the queue id), so ownership never changes for a store.
uint32_t shard_of_queue(std::string_view topic, int32_t queue_id, uint32_t shard_count);

// Store-wide offsets (StoreOffset: make_store_offset, shard_of_offset, local_offset) and queue
// offsets (QueueOffset): include/uringmq/offsets.h.

// A message to send. Views: the memory must outlive the completion.
struct Message {
  std::string_view topic;
  int32_t queue_id = 0;
  std::span<const std::byte> body;
  std::string_view properties;  // RocketMQ property string (engine/log/properties.h)
  int32_t flag = 0;
  int32_t sys_flag = 0;
  int64_t born_timestamp_ms = 0;
  engine::HostAddress born_host;
  int32_t reconsume_times = 0;
};

// How a pull ended (the PULL_MESSAGE response code a broker sends for it).
enum class PullStatus : uint8_t {
  found,               // 0 SUCCESS: message_count records copied, next_offset after them
  no_new_message,      // 19 PULL_NOT_FOUND: nothing at queue_offset (after waiting, if asked)
  no_matched_message,  // 20 PULL_RETRY_IMMEDIATELY: units scanned, none matched the tag filter
  offset_moved,        // 21 PULL_OFFSET_MOVED: below min (retention) or past max; see next_offset
  // The record at queue_offset failed its checks (CRCs, magic, lengths, position): it is never
  // served. Completion::offset is its store-wide physical offset, queue_offset and next_offset
  // its queue offset; nothing is copied. Records before it come in the previous pull (a pull
  // stops short of a damaged record). A broker answers SYSTEM_ERROR naming both offsets.
  corrupt,
};

// A consumer read of one queue. Views: the memory must outlive the completion.
struct PullRequest {
  std::string_view topic;
  int32_t queue_id = 0;
  QueueOffset queue_offset;
  uint32_t max_messages = 32;
  // Empty or "*": every message. Else tags joined by "||" (RocketMQ's subscription expression),
  // matched by tag hash as the broker does; the client re-checks the tag string.
  std::string_view tag_filter;
  // A compiled SQL92 selector (engine/queues/sql_filter.h; the broker builds them), or nullptr.
  // When set, tag_filter should be "*": each record read is evaluated against its properties and
  // one that does not match is left out, its offset consumed like a tag mismatch. The caller keeps
  // it alive until the pull's completion.
  const engine::SqlFilter* sql_filter = nullptr;
  // The stored records are copied here back to back (bytes ready to send to a client).
  std::span<std::byte> buffer;
  // Long polling: when there is no new message, hold the pull up to this long (ms) and answer as
  // soon as a message for the queue becomes visible.
  int64_t wait_ms = 0;
};

// A message index lookup (Session::query_index_async): QUERY_MESSAGE's header.
struct IndexQueryRequest {
  std::string_view topic;
  std::string_view key;  // a KEYS word or a UNIQ_KEY
  int64_t begin_ms = 0;  // store time, inclusive
  int64_t end_ms = INT64_MAX;
  uint32_t max_messages = 32;
  std::span<std::byte> buffer;  // the matching records, back to back
};

// How END_TRANSACTION ends a half message (Session::end_transaction_async): commit stores its
// copy in the real queue; rollback stores an op record in RMQ_SYS_TRANS_OP_HALF_TOPIC; discard
// (the check service gave up) stores its copy in TRANS_CHECK_MAX_TIME_TOPIC.
enum class TransactionEnd : uint8_t { commit, rollback, discard };

// A half message due for a check (Session::take_transaction_checks_async): its record (read it
// with view_record_async), its queue offset in the half queue, the checks made so far, and
// whether the check service gives up on it (discard: end it with TransactionEnd::discard).
struct TransactionCheck {
  StoreOffset offset;
  uint32_t size_bytes = 0;
  QueueOffset queue_offset;
  uint32_t checks = 0;
  bool discard = false;
};

struct Completion {
  uint64_t tag = 0;
  io::Code code = io::Code::ok;  // ok, a rejection, or fail_stopped (indeterminate)
  StoreOffset offset;            // send: store-wide physical offset; read: unused
  QueueOffset queue_offset{-1};  // send: its queue offset; search/query_offset: the answer
  int64_t store_timestamp_ms = 0;
  uint32_t size_bytes = 0;  // send: record size; read: bytes read; pull: bytes copied
  // pull and queue queries:
  PullStatus pull_status = PullStatus::found;
  uint32_t message_count = 0;
  QueueOffset min_offset;
  QueueOffset max_offset;
  QueueOffset next_offset;
  // replicate (a replica's raw bytes): the shard's CommitLog ends after the request.
  LogOffset log_appended;
  LogOffset log_durable;
};

}  // namespace uringmq
