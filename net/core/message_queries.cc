#include "net/core/message_queries.h"

#include <algorithm>

#include "engine/log/message_codec.h"
#include "io/assert.h"
#include "net/core/broker_core.h"
#include "net/core/messaging.h"

namespace uringmq::net {
namespace {

// A store request the store did not take (busy: its window is full), or a step that failed.
Refusal not_posted(const io::Status& s) {
  return Refusal{s.code() == io::Code::busy ? Fault::busy : Fault::system, s.message()};
}

}  // namespace

std::optional<Refusal> MessageQueries::post(uint32_t index, const io::Status& posted) {
  if (posted.is_ok()) return std::nullopt;
  calls_.end(index);
  return not_posted(posted);
}

void MessageQueries::give_buffer(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  op.data.resize(largest_pull_bytes(config_));
  calls_.reserve(index, op.data.size());
}

// ---- by key ----

std::optional<Refusal> MessageQueries::query_by_key(const Ticket& ticket, uint32_t shard,
                                                    const KeyQuery& query) {
  const int32_t wanted =
      query.kind == KeyKind::unique_key ? kDefaultQueryMaxNum : query.max_messages;
  const uint32_t index = calls_.start(BrokerOp::Kind::query_message, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.topic = query.topic;
  op.group = query.key;
  op.index = IndexQueryState{};
  op.index.max_messages = static_cast<uint32_t>(std::clamp(wanted, 1, kMaxMsgsNumBatch));
  // One pull's worth of buffer; a record larger than it ends the answer.
  give_buffer(index);
  op.index.parts.assign(1, {0, 0});
  op.index.shards_left = 1;
  const IndexQueryRequest request{
      op.topic, op.group, query.begin_ms, query.end_ms, op.index.max_messages, op.data};
  return post(index, calls_.session().query_index_async(op.shard, request, index));
}

std::optional<std::variant<Refusal, KeyQueryResult>> MessageQueries::key_query_outcome(
    uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  IndexQueryState& state = op.index;
  if (c.code == io::Code::ok) state.parts[0] = {c.message_count, c.size_bytes};
  state.timestamp_ms = std::max(state.timestamp_ms, c.store_timestamp_ms);
  if (local_offset(c.offset).value > 0) {
    state.wire_offset = std::max(state.wire_offset, wire_offset_of(c.offset).value);
  }
  UMQ_ASSERT(state.shards_left > 0);
  if (--state.shards_left > 0) return std::nullopt;
  // The shard's records, newest first, at most the query's count.
  uint32_t messages = 0;
  std::span<std::byte> part(op.data.data(), state.parts[0].second);
  size_t take = 0;
  for (; messages < state.parts[0].first && messages < state.max_messages; messages++) {
    take += engine::record_total_size(part.subspan(take));
  }
  if (messages == 0) {
    return Refusal{Fault::not_found, "can not find message, maybe time range not correct"};
  }
  const size_t kept = client_records(op.shard, part.first(take));
  return KeyQueryResult{messages, std::span<const std::byte>(op.data.data(), kept),
                        state.timestamp_ms, WireOffset{state.wire_offset}};
}

// ---- by offset ----

std::optional<Refusal> MessageQueries::view(const Ticket& ticket, StoreOffset offset, bool stored) {
  const uint32_t index =
      calls_.start(stored ? BrokerOp::Kind::view_stored : BrokerOp::Kind::view_message, ticket,
                   shard_of_offset(offset));
  BrokerOp& op = calls_.op(index);
  op.store_offset = offset;
  give_buffer(index);
  return post(index, calls_.session().view_record_async(op.store_offset, op.data, index));
}

std::variant<Refusal, std::span<const std::byte>> MessageQueries::view_outcome(
    uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok || c.message_count == 0) {
    return Refusal{Fault::system, "can not find message by the offset, " +
                                      std::to_string(wire_offset_of(op.store_offset).value)};
  }
  std::span<std::byte> record(op.data.data(), c.size_bytes);
  if (op.kind == BrokerOp::Kind::view_stored) return record;  // checked by the shard, as stored
  return record.first(client_records(shard_of_offset(op.store_offset), record));
}

// ---- a queue's earliest store time: its min offset, then one record pulled from there ----

std::optional<Refusal> MessageQueries::earliest_store_time(const Ticket& ticket, uint32_t shard,
                                                           const std::string& topic,
                                                           int32_t queue_id) {
  if (queue_id < 0) {
    return Refusal{Fault::bad_request, "queueId " + std::to_string(queue_id) + " is illegal"};
  }
  const uint32_t index = calls_.start(BrokerOp::Kind::earliest_min, ticket, shard);
  BrokerOp& op = calls_.op(index);
  op.topic = topic;
  op.queue_id = queue_id;
  return post(index, calls_.session().query_queue_async(op.topic, op.queue_id, index, op.shard));
}

std::optional<std::variant<Refusal, int64_t>> MessageQueries::earliest_outcome(
    uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code != io::Code::ok) {
    return Refusal{c.code == io::Code::busy ? Fault::busy : Fault::system,
                   "the store answered " + std::string(code_name(c.code))};
  }
  if (op.kind == BrokerOp::Kind::earliest_min) {
    if (c.min_offset >= c.max_offset) return int64_t{-1};  // an empty queue
    op.kind = BrokerOp::Kind::earliest_record;
    give_buffer(index);
    op.pull = PullRequest{op.topic, op.queue_id, c.min_offset, 1, {}, nullptr, op.data, 0};
    if (calls_.session().pull_async(op.pull, index, op.shard).is_ok()) return std::nullopt;
    return Refusal{Fault::busy, "the store is busy"};
  }
  UMQ_ASSERT(op.kind == BrokerOp::Kind::earliest_record);
  if (c.pull_status == PullStatus::found && c.size_bytes > 0) {
    return engine::record_store_timestamp_ms(std::span(op.data).first(c.size_bytes));
  }
  return int64_t{-1};
}

}  // namespace uringmq::net
