// SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK: the send header read and
// checked as Java's SendMessageProcessor does, the message handed to the store, the reply once
// it is stored.

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include "engine/delivery/timer_message.h"
#include "engine/delivery/transactions.h"
#include "engine/log/byte_order.h"
#include "engine/log/properties.h"
#include "engine/queues/dispatch.h"
#include "io/assert.h"
#include "net/common/json.h"
#include "net/common/log.h"
#include "net/remoting/handler_limits.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/message_handlers.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"
#include "uringmq/version.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

// SEND_MESSAGE_V2 abbreviates the SEND_MESSAGE header's field names to single letters.
const std::string* send_field(const RemotingCommand& c, std::string_view v2, std::string_view v1) {
  return c.code == req::kSendMessageV2 || c.code == req::kSendBatchMessage ? c.ext(v2) : c.ext(v1);
}

// The SEND_MESSAGE header into *out, checked as Java's decodeCommandCustomHeader does; the
// message itself is the core's to check (net/core/messaging.h).
std::optional<Refusal> read_send_header(const RemotingCommand& request, SendCall* out) {
  // The header fields Java requires (@CFNotNull on SendMessageRequestHeader).
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kRequired = {
      {{"a", "producerGroup"},
       {"b", "topic"},
       {"c", "defaultTopic"},
       {"d", "defaultTopicQueueNums"},
       {"e", "queueId"},
       {"f", "sysFlag"},
       {"g", "bornTimestamp"}}};
  for (const auto& [v2, v1] : kRequired) {
    if (send_field(request, v2, v1) == nullptr) {
      return Refusal{Fault::bad_request, "the custom field <" + std::string(v1) + "> is null"};
    }
  }
  const bool v2 = request.code == req::kSendMessageV2 || request.code == req::kSendBatchMessage;
  HeaderFields fields(request);
  auto i32 = [&](std::string_view v2_key, std::string_view v1_key) {
    return fields.int32(v2 ? v2_key : v1_key, v1_key);
  };
  out->client_queue_nums = i32("d", "defaultTopicQueueNums").value_or(0);
  out->queue_id = i32("e", "queueId").value_or(-1);
  out->sys_flag = i32("f", "sysFlag").value_or(0);
  out->born_timestamp_ms = fields.int64(v2 ? "g" : "bornTimestamp", "bornTimestamp");
  out->flag = i32("h", "flag").value_or(0);
  out->reconsume_times = i32("j", "reconsumeTimes").value_or(0);
  out->max_reconsume_times = i32("l", "maxReconsumeTimes").value_or(16);
  if (!fields.ok()) return Refusal{Fault::bad_request, fields.error()};
  out->topic = *send_field(request, "b", "topic");
  const std::string* props = send_field(request, "i", "properties");
  out->properties = props ? std::string_view(*props) : std::string_view();
  const std::string* batch = send_field(request, "m", "batch");
  if (batch != nullptr && *batch == "true" && request.code != req::kSendBatchMessage) {
    return Refusal{Fault::illegal_message, "a batch goes as SEND_BATCH_MESSAGE (320)"};
  }
  return std::nullopt;
}

}  // namespace

// ---- SEND_MESSAGE / SEND_MESSAGE_V2, SEND_BATCH_MESSAGE ----

void MessageHandlers::handle_send(uint32_t conn, RemotingCommand& request,
                                  std::span<const std::byte> body) {
  SendCall call;
  if (std::optional<Refusal> refused = read_send_header(request, &call)) {
    return reply_refusal(conn, request, *refused);
  }
  call.born_host = conns_[conn].peer;
  call.body = body;
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  std::optional<Refusal> refused =
      request.code == req::kSendBatchMessage
          ? messaging_.send_batch(ticket, conns_[conn].shard, call, decode_message_batch)
          : messaging_.send(ticket, conns_[conn].shard, call);
  if (refused) reply_refusal(conn, request, *refused);
}

// ---- RECALL_MESSAGE: the recall handle into the core's recall ----

// One reply for the batch: its records' offset msgIds joined by commas (Java's
// AppendMessageResult for a batch), the queue and the first queue offset.
void MessageHandlers::reply_batch(BrokerOp& op, const SendReceipt& receipt) {
  RemotingCommand response = make_response(request_of(op.ticket), rc::kSuccess);
  std::string ids;
  ids.reserve(op.batch_offsets.size() * 33);
  for (size_t i = 0; i < op.batch_offsets.size(); i++) {
    if (i > 0) ids += ',';
    ids += engine::offset_message_id(store_.store_host_of(op.shard),
                                     static_cast<int64_t>(wire_offset(op.batch_offsets[i]).value));
  }
  response.set_ext("msgId", std::move(ids));
  response.set_ext("queueId", std::to_string(receipt.queue_id));
  response.set_ext("queueOffset", std::to_string(receipt.queue_offset.value));
  if (!request_of(op.ticket).is_oneway()) {
    parts_.master.reply_stored(op, std::move(response), receipt.log_end);
  }
}

void MessageHandlers::complete_send(BrokerOp& op, const Completion& c) {
  if (op.replied || !calls_.caller_alive(op)) return;
  op.replied = true;
  const RemotingCommand request = request_of(op.ticket);
  std::variant<Refusal, SendReceipt> outcome = messaging_.send_outcome(op, c);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    return reply_refusal(op.ticket.conn, request, *refused);
  }
  const SendReceipt& receipt = std::get<SendReceipt>(outcome);
  if (request.code == req::kSendBatchMessage) return reply_batch(op, receipt);
  if (request.code == req::kRecallMessage) {
    RemotingCommand response = make_response(request, rc::kSuccess);
    response.set_ext("msgId", std::string(Messaging::recalled_key(op)));
    if (!request.is_oneway()) parts_.master.reply_stored(op, std::move(response), receipt.log_end);
    return;
  }
  RemotingCommand response = make_response(request, rc::kSuccess);
  response.set_ext(
      "msgId", engine::offset_message_id(store_.store_host_of(op.shard),
                                         static_cast<int64_t>(wire_offset(receipt.offset).value)));
  response.set_ext("queueId", std::to_string(receipt.queue_id));
  response.set_ext("queueOffset", std::to_string(receipt.queue_offset.value));
  if (!request.is_oneway()) parts_.master.reply_stored(op, std::move(response), receipt.log_end);
}

// ---- RECALL_MESSAGE: the header into a RecallCall; the core checks the handle and stores the
// cancel as a send (Messaging::recall); the answer is the send's, with the recalled msgId ----

void MessageHandlers::handle_recall(uint32_t conn, RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* handle = request.ext("recallHandle");
  if (topic == nullptr || handle == nullptr) {
    return reply_code(conn, request, rc::kSystemError,
                      "RECALL_MESSAGE needs topic and recallHandle");
  }
  RecallCall call;
  call.topic = *topic;
  call.handle = *handle;
  if (const std::string* group = request.ext("producerGroup")) call.producer_group = *group;
  const uint32_t shard = conns_[conn].shard;
  if (auto refused = messaging_.recall(ticket_of(conn, conns_[conn].generation, request), shard,
                                       broker_name_of(shard), call)) {
    return reply_refusal(conn, request, *refused);
  }
}

// ---- CONSUMER_SEND_MSG_BACK: the header into a SendBackCall; the core reads the record and
// stores its copy (Messaging::send_back) ----

void MessageHandlers::handle_send_back(uint32_t conn, RemotingCommand& request) {
  HeaderFields fields(request);
  std::optional<int64_t> offset = fields.int64("offset");
  const std::optional<int32_t> delay_level = fields.int32("delayLevel");
  const std::optional<int32_t> max_reconsume = fields.int32("maxReconsumeTimes");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  const std::string* group = request.ext("group");
  if (!offset || *offset < 0 || group == nullptr || group->empty()) {
    return reply_code(conn, request, rc::kSystemError,
                      "CONSUMER_SEND_MSG_BACK needs offset and group");
  }
  const uint32_t shard = conns_[conn].shard;
  SendBackCall call;
  call.group = *group;
  // The offset is the wire's: the record's in the log of the broker (shard) asked.
  call.offset = store_offset_of_wire(WireOffset{static_cast<uint64_t>(*offset)}, shard);
  call.delay_level = delay_level.value_or(0);
  call.max_reconsume_times = max_reconsume;
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  if (std::optional<Refusal> refused = messaging_.send_back(ticket, shard, call)) {
    reply_refusal(conn, request, *refused);
  }
}

bool MessageHandlers::complete_send_back(uint32_t index, const Completion& c) {
  std::optional<std::variant<Refusal, SendBackReceipt>> outcome =
      messaging_.send_back_outcome(index, c);
  if (!outcome) return false;
  const BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return true;
  const RemotingCommand request = request_of(op.ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    reply_refusal(op.ticket.conn, request, *refused);
  } else {
    reply_code(op.ticket.conn, request, rc::kSuccess, {});
  }
  return true;
}

}  // namespace uringmq::net
