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

// A client may name uringmq's internal properties only to cancel timers (__UMQ_CANCEL_KEY);
// the others are the store's to write (a delivery marker a client sent would be read back by
// recovery as the store's own, the record CRC is the store's).
bool client_may_send(std::string_view name) {
  return name == engine::kPropertyTimerCancelKey || !engine::is_internal_property(name);
}

// True when a client's property text holds no internal property (kept as it is).
bool only_client_properties(std::string_view text) {
  bool clean = true;
  engine::for_each_property(text, [&](std::string_view name, std::string_view) {
    clean = clean && client_may_send(name);
  });
  return clean;
}

// Client-sent properties, minus the internal ones the store writes itself.
std::string client_properties(std::string_view text) {
  bool clean = true;
  engine::for_each_property(text, [&](std::string_view name, std::string_view) {
    clean = clean && client_may_send(name);
  });
  if (clean) return std::string(text);
  std::string out;
  engine::for_each_property(text, [&](std::string_view name, std::string_view value) {
    if (client_may_send(name)) engine::append_property(out, name, value);
  });
  return out;
}

// RocketMQ's isWaitStoreMsgOK: a message whose WAIT property is "false" is answered without
// waiting for its replica under SYNC_MASTER.
bool waits_for_replica(std::string_view properties) {
  return engine::find_property(properties, "WAIT") != std::optional<std::string_view>("false");
}

// The longest property string a client may send: RocketMQ's limit (Short.MAX_VALUE) less what
// the store appends (a \x02 and the record CRC property).
constexpr uint32_t kMaxClientPropertiesBytes =
    engine::kMaxPropertiesBytes - 1 - engine::kRecordCrcPropertyBytes;

// The SEND_MESSAGE header, checked as Java's decodeCommandCustomHeader and msgCheck do.
struct SendHeader {
  std::string topic;
  std::optional<int32_t> queue_id;
  int32_t sys_flag = 0;
  std::optional<int64_t> born_timestamp_ms;
  int32_t flag = 0;
  int32_t reconsume_times = 0;
  int32_t max_reconsume_times = 16;
  // The queue count the client asks for a topic its send creates (Java's producer: 4).
  int32_t default_topic_queue_nums = 0;
  std::string_view properties;
};

// The fields of a message a send request's header gives (a single message, or the batch's
// fields copied into each of its messages). Only the compression and transaction bits of
// sys_flag are the client's to set; the host-family bits describe the stored record and are the
// store's.
void set_header_fields(Message& message, const SendHeader& header, int64_t now_ms,
                       const engine::HostAddress& peer) {
  message.sys_flag = header.sys_flag & ~(engine::kSysFlagBornHostV6 | engine::kSysFlagStoreHostV6);
  message.born_timestamp_ms = header.born_timestamp_ms.value_or(now_ms);
  message.born_host = peer;
  message.reconsume_times = header.reconsume_times;
}

std::optional<Refusal> read_send_header(const RemotingCommand& request, SendHeader* out) {
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
  out->default_topic_queue_nums = i32("d", "defaultTopicQueueNums").value_or(0);
  out->queue_id = i32("e", "queueId");
  out->sys_flag = i32("f", "sysFlag").value_or(0);
  out->born_timestamp_ms = fields.int64(v2 ? "g" : "bornTimestamp", "bornTimestamp");
  out->flag = i32("h", "flag").value_or(0);
  out->reconsume_times = i32("j", "reconsumeTimes").value_or(0);
  out->max_reconsume_times = i32("l", "maxReconsumeTimes").value_or(16);
  if (!fields.ok()) return Refusal{Fault::bad_request, fields.error()};
  const std::string* topic = send_field(request, "b", "topic");
  if (!valid_topic_name(*topic)) {
    return Refusal{Fault::illegal_message,
                   "the topic is missing or invalid (1-127 characters of [%|a-zA-Z0-9_-])"};
  }
  if (is_internal_topic(*topic)) {
    return Refusal{Fault::no_permission, "Sending message to topic[" + *topic +
                                             "] is forbidden: it is internal to the broker"};
  }
  out->topic = *topic;
  const std::string* props = send_field(request, "i", "properties");
  out->properties = props ? std::string_view(*props) : std::string_view();
  const std::string* batch = send_field(request, "m", "batch");
  if (batch != nullptr && *batch == "true" && request.code != req::kSendBatchMessage) {
    return Refusal{Fault::illegal_message, "a batch goes as SEND_BATCH_MESSAGE (320)"};
  }
  return std::nullopt;
}

}  // namespace

// ---- SEND_MESSAGE / SEND_MESSAGE_V2 ----

void MessageHandlers::handle_send(uint32_t conn, RemotingCommand& request,
                                  std::span<const std::byte> body) {
  SendHeader header;
  if (std::optional<Refusal> refused = read_send_header(request, &header)) {
    return reply_refusal(conn, request, *refused);
  }
  if (body.size() > config_.store.log.limits.max_body_bytes) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "the message body is " + std::to_string(body.size()) +
                          " bytes, over maxMessageSize " +
                          std::to_string(config_.store.log.limits.max_body_bytes));
  }
  std::string properties = client_properties(header.properties);
  if (properties.size() > kMaxClientPropertiesBytes) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "the message properties are " + std::to_string(properties.size()) +
                          " bytes, over the limit of " + std::to_string(kMaxClientPropertiesBytes) +
                          " (RocketMQ's " + std::to_string(engine::kMaxPropertiesBytes) +
                          ", Short.MAX_VALUE, less the record CRC the broker adds)");
  }
  std::string topic = std::move(header.topic);
  int64_t queue_id = header.queue_id.value_or(-1);
  // A retry copy that used up its attempts goes to the dead-letter topic (Java's
  // handleRetryAndDLQ), with no delay.
  if (topic.starts_with(kRetryPrefix) && header.reconsume_times >= header.max_reconsume_times) {
    topic = std::string(kDlqPrefix) + topic.substr(kRetryPrefix.size());
    std::string kept;
    engine::for_each_property(properties, [&](std::string_view name, std::string_view value) {
      if (name != engine::kPropertyDelayTimeLevel) engine::append_property(kept, name, value);
    });
    properties = std::move(kept);
    queue_id = 0;
  }
  if (auto refused = topics_.check_send(topic, &queue_id, header.default_topic_queue_nums)) {
    return reply_refusal(conn, request, *refused);
  }
  uint32_t index = new_send_op(conn, request, std::move(topic), queue_id, body);
  BrokerOp& op = calls_.op(index);
  op.wait_replica = waits_for_replica(properties);
  op.properties = std::move(properties);
  op.message.body = op.data;
  op.message.properties = op.properties;
  op.message.flag = header.flag;
  set_header_fields(op.message, header, clock_->now_ms(), conns_[conn].peer);
  submit(index,
         [&](uint64_t tag) { return calls_.session().send_async(op.message, tag, op.shard); });
}

// A send op (single or batch) holding a copy of the body, its topic and queue in op.message.
uint32_t MessageHandlers::new_send_op(uint32_t conn, const RemotingCommand& request,
                                      std::string topic, int64_t queue_id,
                                      std::span<const std::byte> body) {
  uint32_t index = new_op(BrokerOp::Kind::send, conn, request);
  BrokerOp& op = calls_.op(index);
  op.deadline_ms = clock_->now_ms() + config_.sync_flush_timeout_ms;
  op.topic = std::move(topic);
  op.queue_id = static_cast<int32_t>(queue_id);
  op.data.assign(body.begin(), body.end());
  calls_.reserve(index, body.size());
  op.message = Message{};
  op.message.topic = op.topic;
  op.message.queue_id = op.queue_id;
  return index;
}

// ---- SEND_BATCH_MESSAGE: one queue, consecutive offsets, one reply (SendMessageProcessor
// .asyncSendBatchMessage, CommitLog.asyncPutMessages) ----

void MessageHandlers::handle_send_batch(uint32_t conn, RemotingCommand& request,
                                        std::span<const std::byte> body) {
  SendHeader header;
  if (std::optional<Refusal> refused = read_send_header(request, &header)) {
    return reply_refusal(conn, request, *refused);
  }
  // The Java client refuses both before sending (MessageBatch.generateFromList); its broker
  // answers a delayed batch MESSAGE_ILLEGAL (CommitLog.asyncPutMessages).
  if (header.topic.starts_with(kRetryPrefix)) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "Retry Group is not supported for batching: topic " + header.topic);
  }
  // Java's CommitLog.asyncPutMessages answers MESSAGE_ILLEGAL for a batch whose sysFlag has
  // transaction bits; stored, its messages would be visible before any commit.
  if (const int32_t bits = header.sys_flag & engine::kSysFlagTransactionMask; bits != 0) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "a transactional message (sysFlag transaction bits " + std::to_string(bits) +
                          ") is not supported for batching: send each one alone; topic " +
                          header.topic);
  }
  if (body.size() > config_.store.log.limits.max_body_bytes) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      "the batch body is " + std::to_string(body.size()) +
                          " bytes, over maxMessageSize " +
                          std::to_string(config_.store.log.limits.max_body_bytes) +
                          " (the limit applies to the whole batch, as in RocketMQ)");
  }
  std::string batch_properties = client_properties(header.properties);
  if (const char* why = engine::batch_property_refusal(batch_properties)) {
    return reply_code(conn, request, rc::kMessageIllegal,
                      std::string("the batch's own properties: ") + why);
  }
  int64_t queue_id = header.queue_id.value_or(-1);
  if (auto refused = topics_.check_send(header.topic, &queue_id, header.default_topic_queue_nums)) {
    return reply_refusal(conn, request, *refused);
  }
  uint32_t index = new_send_op(conn, request, std::move(header.topic), queue_id, body);
  BrokerOp& op = calls_.op(index);
  op.wait_replica = waits_for_replica(batch_properties);
  // The batch's fields, copied into each message.
  set_header_fields(op.message, header, clock_->now_ms(), conns_[conn].peer);
  if (auto refused = build_batch(index, batch_properties)) {
    reply_code(conn, request, refused->first, std::move(refused->second));
    return calls_.end(index);
  }
  submit(index, [&](uint64_t tag) {
    return calls_.session().send_batch_async(op.batch, op.batch_offsets, tag, op.shard);
  });
}

// Each message's record properties: its own (less the internal ones a client may not send) and
// then the batch's, as Java's MessageExtBatchEncoder appends them. Views into op.data when
// nothing is added; else into one arena (op.properties) sized first, so it never moves.
std::optional<std::pair<int32_t, std::string>> MessageHandlers::build_batch(
    uint32_t index, std::string_view batch_properties) {
  BrokerOp& op = calls_.op(index);
  io::Status s = decode_message_batch(op.data, kMaxBatchMessages, &batch_entries_);
  if (!s.is_ok()) return std::pair{rc::kMessageIllegal, s.message()};
  size_t arena = 0;
  bool views = batch_properties.empty();
  for (const BatchEntry& e : batch_entries_) {
    if (views && !only_client_properties(e.properties)) views = false;
    arena += e.properties.size() + 1 + batch_properties.size();
  }
  op.properties.clear();
  if (!views) op.properties.reserve(arena);
  batch_props_at_.clear();
  for (size_t i = 0; i < batch_entries_.size(); i++) {
    const BatchEntry& e = batch_entries_[i];
    if (const char* why = engine::batch_property_refusal(e.properties)) {
      return std::pair{rc::kMessageIllegal,
                       "message " + std::to_string(i) + " of the batch: " + why};
    }
    size_t size = e.properties.size();
    if (!views) {
      batch_props_at_.push_back(static_cast<uint32_t>(op.properties.size()));
      const size_t before = op.properties.size();
      engine::for_each_property(e.properties, [&](std::string_view name, std::string_view value) {
        if (!client_may_send(name)) return;
        if (op.properties.size() > before) op.properties.push_back('\x02');
        op.properties.append(name);
        op.properties.push_back('\x01');
        op.properties.append(value);
      });
      if (!batch_properties.empty()) {
        if (op.properties.size() > before) op.properties.push_back('\x02');
        op.properties += batch_properties;
      }
      size = op.properties.size() - before;
    }
    if (size > kMaxClientPropertiesBytes) {
      return std::pair{rc::kMessageIllegal, "message " + std::to_string(i) + " of the batch has " +
                                                std::to_string(size) +
                                                " bytes of properties, over the limit of " +
                                                std::to_string(kMaxClientPropertiesBytes)};
    }
  }
  UMQ_ASSERT(views || op.properties.size() <= arena);  // the arena never moved
  batch_props_at_.push_back(static_cast<uint32_t>(op.properties.size()));
  op.batch.resize(batch_entries_.size());
  op.batch_offsets.assign(batch_entries_.size(), StoreOffset{});
  for (size_t i = 0; i < batch_entries_.size(); i++) {
    Message& m = op.batch[i];
    m = op.message;
    m.flag = batch_entries_[i].flag;
    m.body = batch_entries_[i].body;
    m.properties =
        views ? batch_entries_[i].properties
              : std::string_view(op.properties)
                    .substr(batch_props_at_[i], batch_props_at_[i + 1] - batch_props_at_[i]);
  }
  return std::nullopt;
}

// One reply for the batch: its records' offset msgIds joined by commas (Java's
// AppendMessageResult for a batch), the queue and the first queue offset.
void MessageHandlers::reply_batch(BrokerOp& op, const Completion& c) {
  RemotingCommand response = make_response(request_of(op.ticket), rc::kSuccess);
  std::string ids;
  ids.reserve(op.batch_offsets.size() * 33);
  for (size_t i = 0; i < op.batch_offsets.size(); i++) {
    if (i > 0) ids += ',';
    ids += engine::offset_message_id(store_.store_host_of(op.shard),
                                     static_cast<int64_t>(wire_offset(op.batch_offsets[i]).value));
  }
  response.set_ext("msgId", std::move(ids));
  response.set_ext("queueId", std::to_string(op.queue_id));
  response.set_ext("queueOffset", std::to_string(c.queue_offset.value));
  if (!request_of(op.ticket).is_oneway()) {
    parts_.master.reply_stored(op, std::move(response),
                               local_offset(c.offset).value + c.size_bytes);
  }
}

void MessageHandlers::complete_send(BrokerOp& op, const Completion& c) {
  if (op.replied || !calls_.caller_alive(op)) return;
  op.replied = true;
  if (c.code == io::Code::too_large && request_of(op.ticket).code == req::kSendBatchMessage) {
    return reply_code(op.ticket.conn, request_of(op.ticket), error_code(c.code),
                      "a message of the batch is over the store's limits (its body over "
                      "maxMessageSize, or its record over the segment): nothing was stored");
  }
  if (c.code == io::Code::too_large) {
    // The body and the client's properties were checked before; what is left is a delayed or
    // timed message whose properties grew past the limit with the fields the store adds.
    return reply_code(op.ticket.conn, request_of(op.ticket), error_code(c.code),
                      "the message properties, with the fields the broker adds to a delayed or "
                      "timed message (REAL_TOPIC, REAL_QID, DELAY, TIMER_OUT_MS), exceed " +
                          std::to_string(engine::kMaxPropertiesBytes) + " bytes");
  }
  const bool prepared = (op.message.sys_flag & engine::kSysFlagTransactionMask) ==
                        engine::kSysFlagTransactionPrepared;
  if (prepared && (c.code == io::Code::busy || c.code == io::Code::invalid_argument)) {
    // The two refusals only a prepared message meets (engine/README.md, "Transactional
    // messages"), named so that an operator can tell them from a plain busy or bad message.
    return reply_code(
        op.ticket.conn, request_of(op.ticket), error_code(c.code),
        c.code == io::Code::busy
            ? "the store is busy, or the queue's shard holds " +
                  std::to_string(config_.store.transaction_window_max) +
                  " half messages from its oldest one not ended (commit or roll "
                  "back open transactions): the half was not stored, try again"
            : std::string("invalid message (for a prepared message, also: a DELAY that "
                          "is not a number, or a malformed or too distant timer "
                          "property, which its commit could not take)"));
  }
  if (c.code != io::Code::ok) {
    return reply_code(op.ticket.conn, request_of(op.ticket), error_code(c.code), code_text(c.code));
  }
  if (request_of(op.ticket).code == req::kSendBatchMessage) return reply_batch(op, c);
  RemotingCommand response = make_response(request_of(op.ticket), rc::kSuccess);
  response.set_ext("msgId",
                   engine::offset_message_id(store_.store_host_of(op.shard),
                                             static_cast<int64_t>(wire_offset(c.offset).value)));
  response.set_ext("queueId", std::to_string(op.queue_id));
  response.set_ext("queueOffset", std::to_string(c.queue_offset.value));
  if (!request_of(op.ticket).is_oneway()) {
    parts_.master.reply_stored(op, std::move(response),
                               local_offset(c.offset).value + c.size_bytes);
  }
}

// ---- CONSUMER_SEND_MSG_BACK: read the record (its size, then all of it), store the copy ----

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
  // The copy goes to %RETRY%<group> (or %DLQ%<group>): the group must make a valid topic name.
  if (!valid_topic_name(std::string(kRetryPrefix) + *group)) {
    return reply_code(conn, request, rc::kSystemError,
                      "group \"" + group->substr(0, kMaxTopicChars) +
                          "\" is invalid: its retry topic %RETRY%<group> must be 1-127 "
                          "characters of [%|a-zA-Z0-9_-]");
  }
  uint32_t index = new_op(BrokerOp::Kind::send_back_header, conn, request);
  BrokerOp& op = calls_.op(index);
  op.group = *group;
  op.store_offset = store_offset_of_wire(WireOffset{static_cast<uint64_t>(*offset)}, op.shard);
  op.delay_level = delay_level.value_or(0);
  // The request's maxReconsumeTimes wins (Java, for clients since 3.4.9); without it, the
  // group's retryMaxTimes (updateSubGroup -r), 16 by default.
  const SubscriptionGroupConfig* group_config = subscription_groups_->find(*group);
  op.max_reconsume_times =
      max_reconsume.value_or(group_config != nullptr ? group_config->retry_max_times : 16);
  // Room for the record and its copy, until the record's size is known.
  calls_.reserve(index, 2 * (config_.store.log.limits.max_body_bytes + (1u << 20)));
  op.data.resize(4);
  submit(index, [&](uint64_t tag) {
    return calls_.session().read_async(op.store_offset, 4, op.data.data(), tag);
  });
}

void MessageHandlers::complete_send_back(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  const bool alive = calls_.caller_alive(op);
  if (c.code != io::Code::ok) {
    if (alive) {
      const std::string at = std::to_string(wire_offset(op.store_offset).value);
      reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemError,
                 op.kind == BrokerOp::Kind::send_back_store
                     ? "storing the retry copy of the message at offset " + at + " for group " +
                           op.group + " failed: " + code_text(c.code)
                     : "no message at offset " + at + ": " + code_text(c.code));
    }
    return calls_.end(index);
  }
  io::Status s = io::Status::ok();
  if (op.kind == BrokerOp::Kind::send_back_header) {
    const uint32_t size = engine::record_total_size(op.data);
    if (size < 64 || size > config_.store.log.limits.max_body_bytes + (1u << 20)) {
      s = io::Status::error(
          io::Code::invalid_argument,
          "no message starts at offset " + std::to_string(wire_offset(op.store_offset).value));
    } else {
      op.kind = BrokerOp::Kind::send_back_record;
      calls_.reserve(index, 2 * uint64_t{size});
      op.data.resize(size);
      s = calls_.session().read_async(op.store_offset, size, op.data.data(), index);
    }
  } else if (op.kind == BrokerOp::Kind::send_back_record) {
    op.copy = std::make_unique<SendBackCopy>();
    s = make_send_back(
        op.group, op.data, wire_offset(op.store_offset).value, static_cast<int32_t>(op.delay_level),
        static_cast<int32_t>(op.max_reconsume_times), config_.store.log.limits, op.copy.get());
    if (s.is_ok()) {
      op.kind = BrokerOp::Kind::send_back_store;
      s = calls_.session().send_async(op.copy->message, index, op.shard);
    }
  } else {
    if (alive) reply_code(op.ticket.conn, request_of(op.ticket), rc::kSuccess, {});
    return calls_.end(index);
  }
  if (!s.is_ok()) {
    if (alive) reply_code(op.ticket.conn, request_of(op.ticket), rc::kSystemError, s.message());
    calls_.end(index);
  }
}

}  // namespace uringmq::net
