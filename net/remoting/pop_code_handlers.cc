// RocketMQ 5's other POP requests over remoting, with 5.3's headers and bodies, on the core's
// Pop: PEEK_MESSAGE (PeekMessageRequestHeader; answered with PopMessageResponseHeader's fields
// as PeekMessageProcessor fills them), NOTIFICATION (NotificationRequestHeader /
// NotificationResponseHeader: a receive that only looks, waiting as a POP receive does),
// POLLING_INFO (PollingInfoRequestHeader / PollingInfoResponseHeader) and BATCH_ACK_MESSAGE
// (a BatchAckMessageRequestBody JSON body of BatchAck entries).

#include <string>
#include <vector>

#include "io/assert.h"
#include "net/common/json.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/message_handlers.h"
#include "net/remoting/tickets.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {

// One BatchAck: messages of one queue by offset, with the pop time and invisible time of their
// hand-out.
struct BatchAckEntry {
  std::string group;
  std::string topic;
  int32_t queue_id = 0;
  int64_t pop_time_ms = 0;
  int64_t invisible_ms = 0;
  std::vector<int64_t> offsets;
};

namespace {

namespace rc = response_code;

// A BatchAck's bit set as fastjson2 writes a java.util.BitSet: BitSet.toByteArray() as a JSON
// array of signed bytes, bit i of byte k naming offset startOffset + 8k + i.
constexpr size_t kMaxBitSetBytes = 128;     // 1024 offsets an entry
constexpr size_t kMaxBatchAcks = 256;       // entries a request
constexpr size_t kMaxBatchMessages = 1024;  // messages a request: each is an ack in flight

// BatchAck's fields by their short JSON names, or the long ones fastjson also reads.
const JsonValue* field(const JsonValue& ack, std::string_view short_name,
                       std::string_view long_name) {
  const JsonValue* v = ack.find(short_name);
  return v != nullptr ? v : ack.find(long_name);
}

std::optional<int64_t> number(const JsonValue& ack, std::string_view short_name,
                              std::string_view long_name, std::string* error) {
  const JsonValue* v = field(ack, short_name, long_name);
  std::optional<int64_t> n = v != nullptr && v->is_number() ? v->as_int64() : std::nullopt;
  if (!n && error->empty()) *error = "BatchAck " + std::string(long_name) + " is not an integer";
  return n;
}

std::string text(const JsonValue& ack, std::string_view short_name, std::string_view long_name,
                 std::string* error) {
  const JsonValue* v = field(ack, short_name, long_name);
  if (v != nullptr && v->is_string()) return v->text();
  if (error->empty()) *error = "BatchAck " + std::string(long_name) + " is not a string";
  return {};
}

// The offsets a bit set names from `start`; false (error set) when it is not one.
bool bit_offsets(const JsonValue* bits, int64_t start, std::vector<int64_t>* out,
                 std::string* error) {
  if (bits == nullptr || !bits->is_array() || bits->items().size() > kMaxBitSetBytes) {
    *error = "BatchAck bitSet must be an array of at most " + std::to_string(kMaxBitSetBytes) +
             " bytes (BitSet.toByteArray)";
    return false;
  }
  for (size_t k = 0; k < bits->items().size(); k++) {
    std::optional<int64_t> byte =
        bits->items()[k].is_number() ? bits->items()[k].as_int64() : std::nullopt;
    if (!byte || *byte < -128 || *byte > 255) {
      *error = "BatchAck bitSet byte " + std::to_string(k) + " is not a byte";
      return false;
    }
    for (int i = 0; i < 8; i++) {
      if ((static_cast<uint8_t>(*byte) >> i & 1) != 0) {
        out->push_back(start + static_cast<int64_t>(k * 8) + i);
      }
    }
  }
  return true;
}

// One BatchAck; false (error set) when a field is missing or wrong. A retry flag "1" names
// Java's %RETRY% topic, which uringmq never hands out from: the entry names nothing.
bool read_batch_ack(const JsonValue& ack, BatchAckEntry* out, std::string* error) {
  if (!ack.is_object()) {
    *error = "each of acks must be a BatchAck object";
    return false;
  }
  out->group = text(ack, "c", "consumerGroup", error);
  out->topic = text(ack, "t", "topic", error);
  const std::optional<int64_t> start = number(ack, "so", "startOffset", error);
  const std::optional<int64_t> queue = number(ack, "q", "queueId", error);
  const std::optional<int64_t> pop_time = number(ack, "pt", "popTime", error);
  const std::optional<int64_t> invisible = number(ack, "it", "invisibleTime", error);
  if (!error->empty()) return false;
  if (*queue < 0 || *queue > INT32_MAX || *start < 0) {
    *error = "BatchAck queueId or startOffset is negative or out of range";
    return false;
  }
  out->queue_id = static_cast<int32_t>(*queue);
  out->pop_time_ms = *pop_time;
  out->invisible_ms = *invisible;
  if (!bit_offsets(field(ack, "b", "bitSet"), *start, &out->offsets, error)) return false;
  const JsonValue* retry = field(ack, "r", "retry");
  if (retry != nullptr && retry->is_string() && retry->text() == "1") out->offsets.clear();
  return true;
}

}  // namespace

// ---- PEEK_MESSAGE ----

void MessageHandlers::handle_peek(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  HeaderFields fields(request);
  const std::optional<int32_t> queue_id = fields.int32("queueId");
  const std::optional<int32_t> max = fields.int32("maxMsgNums");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || group == nullptr || !queue_id || !max) {
    return reply_code(conn, request, rc::kSystemError,
                      "PEEK_MESSAGE needs topic, consumerGroup, queueId and maxMsgNums");
  }
  PeekCall call{*group, *topic, *queue_id, static_cast<uint32_t>(std::max(*max, 0))};
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  std::variant<Refusal, uint32_t> started = core_.pop_peek.peek(ticket, conns_[conn].shard, call);
  if (const Refusal* refused = std::get_if<Refusal>(&started)) {
    // PeekMessageProcessor answers a queueId past the topic's with INVALID_PARAMETER.
    const bool bad_queue =
        refused->fault == Fault::bad_request && refused->reason.starts_with("queueId");
    if (bad_queue) return reply_code(conn, request, rc::kInvalidParameter, refused->reason);
    return reply_refusal(conn, request, *refused);
  }
}

bool MessageHandlers::complete_peek(uint32_t index, const Completion& c) {
  std::optional<std::variant<Refusal, const PeekResult*>> done =
      core_.pop_peek.peek_outcome(index, c);
  if (!done) return false;
  const BrokerOp& op = calls_.op(index);
  if (calls_.caller_alive(op)) {
    const RemotingCommand request = request_of(op.ticket);
    if (const Refusal* refused = std::get_if<Refusal>(&*done)) {
      reply_refusal(op.ticket.conn, request, *refused);
    } else {
      const PeekResult& result = *std::get<const PeekResult*>(*done);
      const bool found = result.messages > 0;
      RemotingCommand response = make_response(request, found ? rc::kSuccess : rc::kPullNotFound);
      // PeekMessageProcessor sets restNum only; the other fields are their defaults.
      response.remark = found ? "FOUND" : "NO_MESSAGE_IN_QUEUE";
      response.set_ext("popTime", "0");
      response.set_ext("invisibleTime", "0");
      response.set_ext("reviveQid", "0");
      response.set_ext("restNum", std::to_string(result.rest));
      reply(op.ticket.conn, response, result.records);
    }
  }
  core_.pop_peek.peek_ended(index);
  return true;
}

// ---- NOTIFICATION ----

void MessageHandlers::handle_notification(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  HeaderFields fields(request);
  const std::optional<int32_t> queue_id = fields.int32("queueId");
  const std::optional<int64_t> poll = fields.int64("pollTime");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || group == nullptr || !queue_id || !poll) {
    return reply_code(conn, request, rc::kSystemError,
                      "NOTIFICATION needs topic, consumerGroup, queueId and pollTime");
  }
  ReceiveCall call;
  call.group = *group;
  call.topic = *topic;
  call.queue_id = *queue_id;
  call.poll_ms = std::max<int64_t>(*poll, 0);
  const std::string* order = request.ext("order");
  call.order = order != nullptr && *order == "true";
  call.probe_only = true;
  start_receive(conn, request, std::move(call));
}

void MessageHandlers::reply_notification(const Ticket& ticket,
                                         const std::variant<Refusal, const ReceiveResult*>& done) {
  const RemotingCommand request = request_of(ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&done)) {
    return reply_refusal(ticket.conn, request, *refused);
  }
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("hasMsg", std::get<const ReceiveResult*>(done)->has_message ? "true" : "false");
  reply(ticket.conn, response);
}

// ---- POLLING_INFO ----

void MessageHandlers::handle_polling_info(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("consumerGroup");
  HeaderFields fields(request);
  const std::optional<int32_t> queue_id = fields.int32("queueId");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || group == nullptr || !queue_id) {
    return reply_code(conn, request, rc::kSystemError,
                      "POLLING_INFO needs topic, consumerGroup and queueId");
  }
  std::variant<Refusal, uint32_t> waiting =
      core_.pop.waiting_count(conns_[conn].shard, *group, *topic, *queue_id);
  if (const Refusal* refused = std::get_if<Refusal>(&waiting)) {
    return reply_refusal(conn, request, *refused);
  }
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext("pollingNum", std::to_string(std::get<uint32_t>(waiting)));
  reply(conn, response);
}

// ---- BATCH_ACK_MESSAGE ----

void MessageHandlers::handle_batch_ack(uint32_t conn, RemotingCommand& request,
                                       std::span<const std::byte> body) {
  std::string_view json(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> parsed = parse_json(json);
  if (!parsed.is_ok() || !parsed->is_object()) {
    return reply_code(conn, request, rc::kSystemError,
                      "BATCH_ACK_MESSAGE body is not a BatchAckMessageRequestBody JSON object");
  }
  const JsonValue* list = parsed->find("acks");
  // AckMessageProcessor: a body without acks is NO_MESSAGE.
  if (list == nullptr || !list->is_array() || list->items().empty()) {
    return reply_code(conn, request, rc::kNoMessage, {});
  }
  if (list->items().size() > kMaxBatchAcks) {
    return reply_code(
        conn, request, rc::kSystemError,
        "BATCH_ACK_MESSAGE names more than " + std::to_string(kMaxBatchAcks) + " BatchAck entries");
  }
  std::vector<BatchAckEntry> acks(list->items().size());
  std::string error;
  for (size_t i = 0; i < acks.size(); i++) {
    if (!read_batch_ack(list->items()[i], &acks[i], &error)) {
      return reply_code(conn, request, rc::kSystemError,
                        "acks[" + std::to_string(i) + "]: " + error);
    }
  }
  size_t messages = 0;
  for (const BatchAckEntry& a : acks) messages += a.offsets.size();
  if (messages > kMaxBatchMessages) {
    return reply_code(conn, request, rc::kSystemError,
                      "BATCH_ACK_MESSAGE names " + std::to_string(messages) +
                          " messages, more than " + std::to_string(kMaxBatchMessages));
  }
  start_batch_ack(conn, request, acks);
}

// Each message named is acked as ACK_MESSAGE acks it (Pop::ack: one END record per queue of
// each BatchAck), by a handle that names it by offset; the answer waits for all the records.
void MessageHandlers::start_batch_ack(uint32_t conn, const RemotingCommand& request,
                                      const std::vector<BatchAckEntry>& acks) {
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (batch_acks_.contains({conn, ticket.generation, request.opaque})) {
    // Its answer is found by (connection, opaque): a second one in flight could not be told.
    return reply_code(conn, request, rc::kSystemError,
                      "a BATCH_ACK_MESSAGE with opaque " + std::to_string(request.opaque) +
                          " is still being stored on this connection");
  }
  const uint32_t shard = conns_[conn].shard;
  BatchAckState state;
  for (const BatchAckEntry& a : acks) {
    AckCall call{a.group, a.topic, {}, {}, 0};
    for (int64_t offset : a.offsets) {
      const PopHandle handle{0,
                             a.pop_time_ms,
                             a.invisible_ms,
                             PopHandle::kSlotByOffset,
                             broker_name_of(shard),
                             a.queue_id,
                             offset};
      call.handles.push_back(format_pop_handle(handle));
    }
    AcksStarted started = core_.pop.ack(ticket, shard, call);
    state.pending += started.records;
    for (const std::variant<Refusal, int32_t>& each : started.each) {
      const Refusal* refused = std::get_if<Refusal>(&each);
      if (refused != nullptr && refused->fault != Fault::not_found &&
          refused->fault != Fault::bad_request && !state.failure) {
        state.failure = *refused;  // the broker's trouble, not a stale ack
      }
    }
  }
  if (state.pending > 0) {
    batch_acks_[{conn, ticket.generation, request.opaque}] = std::move(state);
  } else if (state.failure) {
    reply_refusal(conn, request, *state.failure);
  } else {  // nothing to store (every message named expired or unknown): 0 at once, as Java
    reply_code(conn, request, rc::kSuccess, {});
  }
}

void MessageHandlers::complete_batch_ack(uint32_t index, const Completion& c) {
  std::variant<Refusal, Pop::HandleDone> outcome = core_.pop.handle_outcome(index, c);
  const Ticket& ticket = calls_.op(index).ticket;
  auto it = batch_acks_.find({ticket.conn, ticket.generation, ticket.wire[1]});
  UMQ_ASSERT(it != batch_acks_.end());
  BatchAckState& state = it->second;
  if (const Refusal* refused = std::get_if<Refusal>(&outcome); refused && !state.failure) {
    state.failure = *refused;
  }
  if (--state.pending > 0) return;
  if (calls_.caller_alive(calls_.op(index))) {
    const RemotingCommand request = request_of(ticket);
    if (state.failure) {
      reply_refusal(ticket.conn, request, *state.failure);
    } else {
      reply_code(ticket.conn, request, rc::kSuccess, {});
    }
  }
  batch_acks_.erase(it);
}

}  // namespace uringmq::net
