// Requests on the message index and on single records: QUERY_MESSAGE (12) by key or unique
// key, VIEW_MESSAGE_BY_ID (33) by the offset an offsetMsgId carries, GET_EARLIEST_MSG_STORETIME
// (32). Answers as Java's QueryMessageProcessor and AdminBrokerProcessor (net/remoting/README.md).

#include <algorithm>
#include <cstring>

#include "engine/log/message_codec.h"
#include "io/assert.h"
#include "net/remoting/handler_limits.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/query_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;

// RocketMQ: a unique-key query (MixAll.UNIQUE_MSG_QUERY_FLAG) asks defaultQueryMaxNum; any query
// returns at most maxMsgsNumBatch records.
constexpr std::string_view kUniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY";
constexpr int32_t kDefaultQueryMaxNum = 32;
constexpr int32_t kMaxMsgsNumBatch = 64;

}  // namespace

void QueryHandlers::handle_query_message(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* key = request.ext("key");
  HeaderFields fields(request);
  std::optional<int32_t> max_num = fields.int32("maxNum");
  std::optional<int64_t> begin = fields.int64("beginTimestamp");
  std::optional<int64_t> end = fields.int64("endTimestamp");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || key == nullptr || !max_num || !begin || !end) {
    return reply_code(conn, request, rc::kSystemError,
                      "QUERY_MESSAGE needs topic, key, maxNum, beginTimestamp, endTimestamp");
  }
  const std::string* unique = request.ext(kUniqueKeyQueryFlag);
  int32_t wanted = unique != nullptr && *unique == "true" ? kDefaultQueryMaxNum : *max_num;
  wanted = std::clamp(wanted, 1, kMaxMsgsNumBatch);
  const uint32_t index = new_op(BrokerOp::Kind::query_message, conn, request);
  BrokerOp& op = calls_.op(index);
  op.topic = *topic;
  op.group = *key;
  op.max_reconsume_times = wanted;
  op.index.timestamp_ms = 0;
  op.index.wire_offset = 0;
  // Only the shard of the broker asked (its index): each shard is one presented broker, and a
  // client asks every broker of the topic's route (net/README.md, "Shard = broker"). One
  // pull's worth of buffer; a record larger than it ends the answer.
  op.data.resize(largest_pull_bytes());
  calls_.reserve(index, op.data.size());
  op.index.parts.assign(1, {0, 0});
  op.queue_id = 1;  // shards still to answer
  IndexQueryRequest q{op.topic, op.group, *begin, *end, static_cast<uint32_t>(wanted), op.data};
  post_or_fail(index, calls_.session().query_index_async(op.shard, q, index));
}

bool QueryHandlers::complete_query_message(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (c.code == io::Code::ok) op.index.parts[0] = {c.message_count, c.size_bytes};
  if (c.store_timestamp_ms > op.index.timestamp_ms) op.index.timestamp_ms = c.store_timestamp_ms;
  if (local_offset(c.offset).value > 0) {
    op.index.wire_offset = std::max(op.index.wire_offset, wire_offset(c.offset).value);
  }
  if (--op.queue_id > 0) return false;
  if (op.replied || !calls_.caller_alive(op)) return true;
  // The shard's records, newest first.
  uint32_t messages = 0;
  const auto wanted = static_cast<uint32_t>(op.max_reconsume_times);
  std::span<std::byte> part(op.data.data(), op.index.parts[0].second);
  size_t take = 0;
  for (uint32_t m = 0; m < op.index.parts[0].first && messages < wanted; m++, messages++) {
    take += engine::record_total_size(part.subspan(take));
  }
  const size_t out = client_records(op.shard, part.first(take));
  if (messages == 0) {
    return reply_code(op.ticket.conn, request_of(op.ticket), rc::kQueryNotFound,
                      "can not find message, maybe time range not correct"),
           true;
  }
  RemotingCommand response = make_response(request_of(op.ticket), rc::kSuccess);
  response.set_ext("indexLastUpdateTimestamp", std::to_string(op.index.timestamp_ms));
  response.set_ext("indexLastUpdatePhyoffset", std::to_string(op.index.wire_offset));
  reply(op.ticket.conn, response, std::span(op.data).first(out));
  return true;
}

void QueryHandlers::handle_view_message(uint32_t conn, RemotingCommand& request) {
  HeaderFields fields(request);
  std::optional<int64_t> offset = fields.int64("offset");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (!offset || *offset < 0) {
    return reply_code(conn, request, rc::kSystemError, "VIEW_MESSAGE_BY_ID needs offset");
  }
  const uint32_t index = new_op(BrokerOp::Kind::view_message, conn, request);
  BrokerOp& op = calls_.op(index);
  op.store_offset = store_offset_of_wire(WireOffset{static_cast<uint64_t>(*offset)}, op.shard);
  op.data.resize(largest_pull_bytes());
  calls_.reserve(index, op.data.size());
  post_or_fail(index, calls_.session().view_record_async(op.store_offset, op.data, index));
}

void QueryHandlers::complete_view_message(BrokerOp& op, const Completion& c) {
  if (!calls_.caller_alive(op)) return;
  if (c.code != io::Code::ok || c.message_count == 0) {
    return reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemError,
                      "can not find message by the offset, " +
                          std::to_string(wire_offset(op.store_offset).value));
  }
  std::span<std::byte> record(op.data.data(), c.size_bytes);
  reply(op.ticket.conn, make_response(request_of(op.ticket), rc::kSuccess),
        record.first(client_records(shard_of_offset(op.store_offset), record)));
}

void QueryHandlers::handle_earliest_time(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  HeaderFields fields(request);
  std::optional<int32_t> queue_id = fields.int32("queueId");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || !queue_id || *queue_id < 0) {
    return reply_code(conn, request, rc::kSystemError,
                      "GET_EARLIEST_MSG_STORETIME needs topic, queueId");
  }
  const uint32_t index = new_op(BrokerOp::Kind::earliest_min, conn, request);
  BrokerOp& op = calls_.op(index);
  op.topic = *topic;
  op.queue_id = *queue_id;
  post_or_fail(index, calls_.session().query_queue_async(op.topic, op.queue_id, index, op.shard));
}

// The queue's min offset, then one record pulled from there: its store time (-1 when the queue
// is empty, as Java's getEarliestMessageTime).
bool QueryHandlers::complete_earliest(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return true;
  if (c.code != io::Code::ok) {
    reply_code(op.ticket.conn, request_of(op.ticket), query_error_code(c.code),
               "the store answered " + std::string(code_name(c.code)));
    return true;
  }
  int64_t timestamp = -1;
  if (op.kind == BrokerOp::Kind::earliest_min) {
    if (c.min_offset < c.max_offset) {
      op.kind = BrokerOp::Kind::earliest_record;
      op.data.resize(largest_pull_bytes());
      calls_.reserve(index, op.data.size());
      op.pull = PullRequest{op.topic, op.queue_id, c.min_offset, 1, {}, nullptr, op.data, 0};
      if (calls_.session().pull_async(op.pull, index, op.shard).is_ok()) return false;
      reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemBusy, "the store is busy");
      return true;
    }
  } else if (c.pull_status == PullStatus::found && c.size_bytes > 0) {
    timestamp = engine::record_store_timestamp_ms(std::span(op.data).first(c.size_bytes));
  }
  RemotingCommand response = make_response(request_of(op.ticket), rc::kSuccess);
  response.set_ext("timestamp", std::to_string(timestamp));
  reply(op.ticket.conn, response);
  return true;
}

}  // namespace uringmq::net
