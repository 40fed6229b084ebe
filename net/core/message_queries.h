#pragma once
// MessageQueries: the broker core's questions about stored messages, as typed calls: the message
// index by key or unique key (RocketMQ's QUERY_MESSAGE), one record by its physical offset
// (VIEW_MESSAGE_BY_ID: what an offset msgId names), and a queue's earliest store time
// (GET_EARLIEST_MSG_STORETIME). Each call posts its store request through StoreCalls and its
// completion becomes a typed result (records as clients receive them: client_records) or a
// Refusal; a wire adapter decodes its request into the call and encodes the result.
//
// A store request the store would not take is refused `busy` when its window is full, else
// `system`, with the store's message: as Java's broker answers SYSTEM_BUSY or SYSTEM_ERROR.
//
// Threading: the reactor thread.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "engine/store.h"
#include "net/core/faults.h"
#include "net/core/store_calls.h"
#include "net/core/wire_offset.h"
#include "net/ops/broker_config.h"

namespace uringmq::net {

// RocketMQ: a unique-key query (MixAll.UNIQUE_MSG_QUERY_FLAG) asks defaultQueryMaxNum; any
// query returns at most maxMsgsNumBatch records.
inline constexpr int32_t kDefaultQueryMaxNum = 32;
inline constexpr int32_t kMaxMsgsNumBatch = 64;

// Which index entries a key query matches: the KEYS words, or the producer's UNIQ_KEY (the
// msgId clients show; then kDefaultQueryMaxNum records are asked, whatever max_messages says).
enum class KeyKind : uint8_t { keys, unique_key };

// The message index of the broker asked: records of `topic` whose key is `key`, stored in
// [begin_ms, end_ms].
struct KeyQuery {
  std::string topic;
  std::string key;
  KeyKind kind = KeyKind::keys;
  int32_t max_messages = kDefaultQueryMaxNum;  // clamped to 1..kMaxMsgsNumBatch
  int64_t begin_ms = 0;
  int64_t end_ms = INT64_MAX;
};

// A key query answered: the records newest first as clients receive them (views into the op's
// buffer, valid until the op ends), and the index's newest entry (RocketMQ's
// indexLastUpdateTimestamp and indexLastUpdatePhyoffset).
struct KeyQueryResult {
  uint32_t message_count = 0;
  std::span<const std::byte> records;
  int64_t index_timestamp_ms = 0;
  WireOffset index_offset;
};

class MessageQueries {
 public:
  MessageQueries(const BrokerConfig& config, StoreCalls& calls) : config_(config), calls_(calls) {}

  // Posts a key query to presented broker `shard`'s index (each shard is one broker: a client
  // asks every broker of the route and merges; net/README.md, "Shard = broker"); nullopt once
  // posted (key_query_outcome reads its completion).
  std::optional<Refusal> query_by_key(const Ticket& ticket, uint32_t shard, const KeyQuery& query);
  // A key query op's completion: nullopt while shards asked have not answered, else the records
  // found, or not_found when none matched.
  std::optional<std::variant<Refusal, KeyQueryResult>> key_query_outcome(uint32_t index,
                                                                         const Completion& c);

  // Posts a read of the record at `offset` (its shard's); nullopt once posted.
  // stored: the record's stored bytes exactly (a peer repairing its copy, net/cluster/
  // record_repairer.h), else as clients receive it.
  std::optional<Refusal> view(const Ticket& ticket, StoreOffset offset, bool stored = false);
  // A view op's completion: the record as clients receive it (a view into the op's buffer), or
  // why there is none at that offset.
  std::variant<Refusal, std::span<const std::byte>> view_outcome(uint32_t index,
                                                                 const Completion& c);

  // Posts the first step of a queue's earliest store time (its min offset, then that record);
  // nullopt once posted.
  std::optional<Refusal> earliest_store_time(const Ticket& ticket, uint32_t shard,
                                             const std::string& topic, int32_t queue_id);
  // Its completion: nullopt while it goes on (the record being read), else the store time of
  // the queue's first record in ms, -1 when the queue is empty (as Java's
  // getEarliestMessageTime), or why it could not be read.
  std::optional<std::variant<Refusal, int64_t>> earliest_outcome(uint32_t index,
                                                                 const Completion& c);

 private:
  // Ends op `index` and refuses when its store request was not posted.
  std::optional<Refusal> post(uint32_t index, const io::Status& posted);
  // Gives op `index` a record buffer of one pull's largest answer.
  void give_buffer(uint32_t index);

  const BrokerConfig& config_;
  StoreCalls& calls_;
};

}  // namespace uringmq::net
