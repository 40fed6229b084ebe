// Requests on the message index and on single records: QUERY_MESSAGE (12) by key or unique
// key, VIEW_MESSAGE_BY_ID (33) by the offset an offsetMsgId carries, GET_EARLIEST_MSG_STORETIME
// (32). The header decoded into a MessageQueries call (net/core/message_queries.h), its result
// encoded as Java's QueryMessageProcessor and AdminBrokerProcessor answer (net/remoting/README.md).

#include "net/remoting/query_handlers.h"

#include "net/remoting/header_fields.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;

// RocketMQ's MixAll.UNIQUE_MSG_QUERY_FLAG: the key is a UNIQ_KEY (a msgId).
constexpr std::string_view kUniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY";

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
  const KeyQuery query{*topic,
                       *key,
                       unique != nullptr && *unique == "true" ? KeyKind::unique_key : KeyKind::keys,
                       *max_num,
                       *begin,
                       *end};
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (auto refused = core_.message_queries.query_by_key(ticket, conns_[conn].shard, query)) {
    reply_refusal(conn, request, *refused);
  }
}

bool QueryHandlers::complete_query_message(uint32_t index, const Completion& c) {
  auto outcome = core_.message_queries.key_query_outcome(index, c);
  if (!outcome) return false;
  const BrokerOp& op = calls_.op(index);
  if (op.replied || !calls_.caller_alive(op)) return true;
  const RemotingCommand request = request_of(op.ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    reply_refusal(op.ticket.conn, request, *refused);
    return true;
  }
  const KeyQueryResult& found = std::get<KeyQueryResult>(*outcome);
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("indexLastUpdateTimestamp", std::to_string(found.index_timestamp_ms));
  response.set_ext("indexLastUpdatePhyoffset", std::to_string(found.index_offset.value));
  reply(op.ticket.conn, response, found.records);
  return true;
}

void QueryHandlers::handle_view_message(uint32_t conn, RemotingCommand& request) {
  HeaderFields fields(request);
  std::optional<int64_t> offset = fields.int64("offset");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (!offset || *offset < 0) {
    return reply_code(conn, request, rc::kSystemError, "VIEW_MESSAGE_BY_ID needs offset");
  }
  // The offset is the wire's: a record in the log of the broker (shard) asked.
  const StoreOffset at =
      store_offset_of_wire(WireOffset{static_cast<uint64_t>(*offset)}, conns_[conn].shard);
  // kStoredBytesField (uringmq's; a Java broker ignores it and answers the stored bytes anyway):
  // the record exactly as stored, for a peer repairing its own copy.
  const std::string* stored = request.ext(kStoredBytesField);
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (auto refused =
          core_.message_queries.view(ticket, at, stored != nullptr && *stored == "true")) {
    reply_refusal(conn, request, *refused);
  }
}

void QueryHandlers::complete_view_message(uint32_t index, const Completion& c) {
  const BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return;
  auto outcome = core_.message_queries.view_outcome(index, c);
  const RemotingCommand request = request_of(op.ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    return reply_refusal(op.ticket.conn, request, *refused);
  }
  reply(op.ticket.conn, make_response(request, rc::kSuccess),
        std::get<std::span<const std::byte>>(outcome));
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
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (auto refused = core_.message_queries.earliest_store_time(ticket, conns_[conn].shard, *topic,
                                                               *queue_id)) {
    reply_refusal(conn, request, *refused);
  }
}

bool QueryHandlers::complete_earliest(uint32_t index, const Completion& c) {
  const BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return true;
  auto outcome = core_.message_queries.earliest_outcome(index, c);
  if (!outcome) return false;
  const RemotingCommand request = request_of(op.ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    reply_refusal(op.ticket.conn, request, *refused);
    return true;
  }
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("timestamp", std::to_string(std::get<int64_t>(*outcome)));
  reply(op.ticket.conn, response);
  return true;
}

}  // namespace uringmq::net
