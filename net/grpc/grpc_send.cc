// SendMessage, RecallMessage, EndTransaction and the orphaned-transaction checks on Telemetry
// (net/grpc/grpc_service.h): a RocketMQ 5 Message becomes the core's SendCall with RocketMQ's
// property names, so a message sent over gRPC reads the same to a remoting consumer.

#include <charconv>
#include <cstdio>

#include "apache/rocketmq/v2/service.pb.h"
#include "engine/delivery/transactions.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "io/assert.h"
#include "net/common/log.h"
#include "net/grpc/grpc_codes.h"
#include "net/grpc/grpc_receive.h"
#include "net/grpc/grpc_service.h"
#include "net/grpc/grpc_ticket.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace v2 = apache::rocketmq::v2;

struct BadMessage {
  v2::Code code;
  std::string reason;
};

bool has_separator(std::string_view text) {
  return text.find('\x01') != std::string_view::npos || text.find('\x02') != std::string_view::npos;
}

// The message's properties in RocketMQ's encoding; a bad key or value is named.
std::optional<BadMessage> encode_properties(const v2::Message& m, std::string_view group,
                                            std::string* out) {
  const v2::SystemProperties& sys = m.system_properties();
  if (sys.has_tag()) {
    if (sys.tag().empty() || has_separator(sys.tag()) || sys.tag().find('|') != std::string::npos) {
      return BadMessage{v2::ILLEGAL_MESSAGE_TAG, "tag '" + sys.tag() + "' is not a valid tag"};
    }
    engine::append_property(*out, engine::kPropertyTags, sys.tag());
  }
  std::string keys;
  for (const std::string& key : sys.keys()) {
    if (key.empty() || has_separator(key) || key.find(' ') != std::string::npos) {
      return BadMessage{v2::ILLEGAL_MESSAGE_KEY, "key '" + key + "' is not a valid key"};
    }
    keys += (keys.empty() ? "" : " ") + key;
  }
  if (!keys.empty()) engine::append_property(*out, engine::kPropertyKeys, keys);
  if (sys.message_id().empty() || has_separator(sys.message_id())) {
    return BadMessage{v2::ILLEGAL_MESSAGE_ID, "the message has no valid message_id"};
  }
  engine::append_property(*out, engine::kPropertyUniqClientMessageIdKeyidx, sys.message_id());
  for (const auto& [name, value] : m.user_properties()) {
    if (name.empty() || has_separator(name) || has_separator(value) ||
        engine::is_internal_property(name)) {
      return BadMessage{v2::ILLEGAL_MESSAGE_PROPERTY_KEY,
                        "user property '" + name + "' is not a valid property"};
    }
    engine::append_property(*out, name, value);
  }
  // RocketMQ 5 keeps a FIFO message's group as __SHARDINGKEY (MessageConst.PROPERTY_SHARDING_KEY):
  // receivers read it back as the message group.
  if (sys.has_message_group()) {
    if (sys.message_group().empty() || has_separator(sys.message_group())) {
      return BadMessage{v2::ILLEGAL_MESSAGE_GROUP, "message group is not valid"};
    }
    engine::append_property(*out, "__SHARDINGKEY", sys.message_group());
  }
  if (sys.has_delivery_timestamp()) {
    const int64_t ms =
        sys.delivery_timestamp().seconds() * 1000 + sys.delivery_timestamp().nanos() / 1'000'000;
    engine::append_property(*out, engine::kPropertyTimerDeliverMs, std::to_string(ms));
  }
  if (sys.message_type() == v2::TRANSACTION) {
    engine::append_property(*out, engine::kPropertyTransactionPrepared, "true");
    engine::append_property(*out, engine::kPropertyProducerGroup, group);
  }
  return std::nullopt;
}

// The type a message is sent as: what it says, or what its properties make it.
v2::MessageType type_of(const v2::Message& m) {
  const v2::SystemProperties& sys = m.system_properties();
  if (sys.message_type() != v2::MESSAGE_TYPE_UNSPECIFIED) return sys.message_type();
  if (sys.has_message_group()) return v2::FIFO;
  if (sys.has_delivery_timestamp()) return v2::DELAY;
  return v2::NORMAL;
}

std::optional<BadMessage> check_type(v2::MessageType sent, TopicMessageType topic,
                                     const std::string& name) {
  v2::MessageType wanted = v2::MESSAGE_TYPE_UNSPECIFIED;
  switch (topic) {
    case TopicMessageType::normal:
      wanted = v2::NORMAL;
      break;
    case TopicMessageType::fifo:
      wanted = v2::FIFO;
      break;
    case TopicMessageType::delay:
      wanted = v2::DELAY;
      break;
    case TopicMessageType::transaction:
      wanted = v2::TRANSACTION;
      break;
    case TopicMessageType::unspecified:
    case TopicMessageType::mixed:
      return std::nullopt;
  }
  if (sent == wanted) return std::nullopt;
  return BadMessage{v2::MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                    "topic " + name + " accepts " + v2::MessageType_Name(wanted) +
                        " messages, not " + v2::MessageType_Name(sent)};
}

// A transaction id names the half: its shard, wire offset and queue offset.
std::string transaction_id(uint32_t shard, uint64_t wire, int64_t queue_offset) {
  return std::to_string(shard) + "-" + std::to_string(wire) + "-" + std::to_string(queue_offset);
}

bool parse_transaction_id(std::string_view text, uint32_t* shard, uint64_t* wire,
                          int64_t* queue_offset) {
  const char* p = text.data();
  const char* end = p + text.size();
  auto r1 = std::from_chars(p, end, *shard);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != '-') return false;
  auto r2 = std::from_chars(r1.ptr + 1, end, *wire);
  if (r2.ec != std::errc() || r2.ptr == end || *r2.ptr != '-') return false;
  auto r3 = std::from_chars(r2.ptr + 1, end, *queue_offset);
  return r3.ec == std::errc() && r3.ptr == end;
}

uint64_t stable_hash(std::string_view text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same queue for a group in every run
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

std::pair<uint32_t, int32_t> GrpcService::pick_queue(const std::string& topic,
                                                     const std::string* group) {
  const std::optional<TopicShape> shape = topics_.shape(topic);
  const uint64_t queues = shape && shape->write_queue_nums > 0 ? shape->write_queue_nums : 1;
  const uint64_t all = queues * brokers_.size();
  const uint64_t n = group != nullptr ? stable_hash(*group) % all : next_queue_++ % all;
  return {static_cast<uint32_t>(n / queues),
          shape ? static_cast<int32_t>(n % queues) : int32_t{-1}};
}

void GrpcService::send_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  v2::SendMessageRequest& request = send_request_;
  v2::SendMessageResponse& response = send_response_;
  response.Clear();
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad SendMessageRequest");
    return;
  }
  const uint32_t conn = session.user();
  auto refuse = [&](v2::Code code, std::string reason) {
    set_status(response.mutable_status(), code, reason);
    set_status(response.add_entries()->mutable_status(), code, std::move(reason));
    answer(conn, stream.id, response);
  };
  if (request.messages_size() != 1) {
    return refuse(v2::BAD_REQUEST, "a SendMessageRequest carries one message here, not " +
                                       std::to_string(request.messages_size()));
  }
  const v2::Message& m = request.messages(0);
  const std::string& topic = m.topic().name();
  if (auto denied = acl_refusal(session, stream, topic, kAclPub)) {
    return refuse(v2::FORBIDDEN, denied->reason);
  }
  if (auto bad = check_type(type_of(m), topics_.message_type(topic), topic)) {
    return refuse(bad->code, bad->reason);
  }
  std::string properties;
  if (auto bad = encode_properties(m, grpc_producer_group(topic), &properties)) {
    return refuse(bad->code, bad->reason);
  }
  const v2::SystemProperties& sys = m.system_properties();
  const auto [shard, queue] =
      pick_queue(topic, sys.has_message_group() ? &sys.message_group() : nullptr);
  SendCall call;
  call.topic = topic;
  call.queue_id = queue;
  if (sys.message_type() == v2::TRANSACTION) call.sys_flag = engine::kSysFlagTransactionPrepared;
  if (sys.has_born_timestamp()) call.born_timestamp_ms = sys.born_timestamp().seconds() * 1000;
  call.born_host = conns_[conn].peer;
  call.properties = properties;
  call.body = std::as_bytes(std::span(m.body().data(), m.body().size()));
  const Ticket ticket = grpc_ticket(conn, conns_[conn].generation, stream.id);
  if (std::optional<Refusal> refused = messaging_.send(ticket, shard, call)) {
    refuse(grpc_code_of(refused->fault), refused->reason);
  }
}

void GrpcService::complete_send(BrokerOp& op, const Completion& c) {
  if (op.replied) return;
  op.replied = true;
  GrpcSession* session = session_of(op.ticket);
  if (session == nullptr) return;
  if (engine::find_property(op.properties, engine::kPropertyTimerDelUniqKey)) {
    return complete_recall(op, c);
  }
  v2::SendMessageResponse& response = send_response_;
  response.Clear();
  v2::SendResultEntry* entry = response.add_entries();
  std::variant<Refusal, SendReceipt> outcome = messaging_.send_outcome(op, c);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    set_refusal(response.mutable_status(), *refused);
    set_refusal(entry->mutable_status(), *refused);
    return answer(op.ticket.conn, grpc_stream_of(op.ticket), response);
  }
  const SendReceipt& receipt = std::get<SendReceipt>(outcome);
  const std::string_view props = op.properties;
  const std::string uniq(
      engine::find_property(props, engine::kPropertyUniqClientMessageIdKeyidx).value_or(""));
  entry->set_message_id(uniq);
  entry->set_offset(receipt.queue_offset.value);
  if (engine::find_property(props, engine::kPropertyTransactionPrepared)) {
    entry->set_transaction_id(
        transaction_id(op.shard, wire_offset(receipt.offset).value, receipt.queue_offset.value));
  }
  if (std::optional<std::string_view> at =
          engine::find_property(props, engine::kPropertyTimerDeliverMs)) {
    entry->set_recall_handle(
        encode_recall_handle({op.topic, broker_name_of(op.shard), std::string(*at), uniq}));
  }
  set_status(entry->mutable_status(), v2::OK, "OK");
  set_status(response.mutable_status(), v2::OK, "OK");
  if (config_.ha.role != BrokerRole::sync_master || !op.wait_replica) {
    return answer(op.ticket.conn, grpc_stream_of(op.ticket), response);
  }
  // SYNC_MASTER: answered once a slave has the record, else with the Proxy's codes for
  // SLAVE_NOT_AVAILABLE and FLUSH_SLAVE_TIMEOUT (the message is stored either way).
  parts_.master.when_replicated(
      op, receipt.log_end,
      [this, ticket = op.ticket, held = response.SerializeAsString()](int32_t code) {
        v2::SendMessageResponse replicated;
        replicated.ParseFromString(held);
        if (code != 0) {
          const bool none = code == kSlaveNotAvailable;
          const v2::Code c = none ? v2::HA_NOT_AVAILABLE : v2::SLAVE_PERSISTENCE_TIMEOUT;
          const std::string why = none ? "no slave is available to replicate the message"
                                       : "the slave did not have the message in time";
          set_status(replicated.mutable_status(), c, why);
          set_status(replicated.mutable_entries(0)->mutable_status(), c, why);
        }
        answer(ticket.conn, grpc_stream_of(ticket), replicated);
      });
}

// ---- RecallMessage: a cancel of the delayed message (TIMER_DEL_UNIQKEY) on its shard ----

void GrpcService::recall_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  v2::RecallMessageRequest request;
  v2::RecallMessageResponse response;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad RecallMessageRequest");
    return;
  }
  // The handle names its broker (RocketMQ's version 1 form, net/core/recall.h): one gRPC port
  // serves every presented broker, so the recall goes to the one it names.
  std::variant<Refusal, RecallHandle> decoded = decode_recall_handle(request.recall_handle());
  std::optional<uint32_t> shard;
  if (const RecallHandle* h = std::get_if<RecallHandle>(&decoded)) {
    for (const PresentedBroker& b : brokers_) {
      if (b.name == h->broker_name) shard = b.shard;
    }
  }
  const uint32_t conn = session.user();
  RecallCall call;
  call.topic = request.topic().name();
  call.handle = request.recall_handle();
  call.producer_group = grpc_producer_group(call.topic);
  std::optional<Refusal> refused;
  if (const Refusal* bad = std::get_if<Refusal>(&decoded)) {
    refused = *bad;
  } else if (!shard) {
    refused = Refusal{Fault::illegal_operation, "recall failed, the handle names broker " +
                                                    std::get<RecallHandle>(decoded).broker_name +
                                                    ", not one of this process"};
  } else {
    refused = messaging_.recall(grpc_ticket(conn, conns_[conn].generation, stream.id), *shard,
                                broker_name_of(*shard), call);
  }
  if (refused) {
    set_refusal(response.mutable_status(), *refused);
    answer(conn, stream.id, response);
  }
}

void GrpcService::complete_recall(BrokerOp& op, const Completion& c) {
  v2::RecallMessageResponse response;
  std::variant<Refusal, SendReceipt> outcome = messaging_.send_outcome(op, c);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    set_refusal(response.mutable_status(), *refused);
  } else {
    set_status(response.mutable_status(), v2::OK, "OK");
    response.set_message_id(
        std::string(engine::find_property(op.properties, engine::kPropertyUniqClientMessageIdKeyidx)
                        .value_or("")));
  }
  answer(op.ticket.conn, grpc_stream_of(op.ticket), response);
}

// ---- EndTransaction: the core's Transactions::end on the half the transaction id names ----

void GrpcService::end_transaction(GrpcSession& session, GrpcStream& stream,
                                  std::string_view bytes) {
  v2::EndTransactionRequest request;
  v2::EndTransactionResponse response;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad EndTransactionRequest");
    return;
  }
  uint32_t shard = 0;
  uint64_t wire = 0;
  int64_t queue_offset = 0;
  if (!parse_transaction_id(request.transaction_id(), &shard, &wire, &queue_offset) ||
      shard >= brokers_.size()) {
    set_status(response.mutable_status(), v2::INVALID_TRANSACTION_ID,
               "transaction id '" + request.transaction_id() + "' was not issued by this broker");
    return answer(session.user(), stream.id, response);
  }
  if (request.resolution() == v2::TRANSACTION_RESOLUTION_UNSPECIFIED) {
    // The producer does not know yet: the check service asks again.
    set_status(response.mutable_status(), v2::OK, "OK");
    return answer(session.user(), stream.id, response);
  }
  EndTransactionCall call;
  call.group = grpc_producer_group(request.topic().name());
  call.offset = WireOffset{wire};
  call.queue_offset = QueueOffset{queue_offset};
  call.end = request.resolution() == v2::COMMIT ? TransactionEnd::commit : TransactionEnd::rollback;
  const Ticket ticket = grpc_ticket(session.user(), conns_[session.user()].generation, stream.id);
  if (std::optional<Refusal> refused = core_.transactions.end(ticket, shard, call)) {
    set_refusal(response.mutable_status(), *refused);
    answer(session.user(), stream.id, response);
  }
}

bool GrpcService::complete_end(uint32_t index, const Completion& c) {
  std::optional<EndOutcome> outcome = core_.transactions.end_outcome(index, c);
  if (!outcome) return false;
  const BrokerOp& op = calls_.op(index);
  if (session_of(op.ticket) == nullptr) return true;
  v2::EndTransactionResponse response;
  if (const Refusal* refused = std::get_if<Refusal>(&*outcome)) {
    set_refusal(response.mutable_status(), *refused);
  } else {
    set_status(response.mutable_status(), v2::OK, "OK");
  }
  answer(op.ticket.conn, grpc_stream_of(op.ticket), response);
  return true;
}

void GrpcService::on_store_completion(const Completion& c) {
  const uint32_t index = static_cast<uint32_t>(c.tag);
  BrokerOp& op = calls_.op(index);
  UMQ_ASSERT(op.in_use);
  switch (op.kind) {
    case BrokerOp::Kind::send:
      complete_send(op, c);
      break;
    case BrokerOp::Kind::end_view:
    case BrokerOp::Kind::end_store:
      if (!complete_end(index, c)) return;
      break;
    default:  // the consumer side's (pop_receive, pop_journal)
      if (!parts_.grpc_receive.on_store_completion(index, c)) return;
  }
  calls_.end(index);
}

// ---- orphaned transactions: the check goes on the producer's Telemetry stream ----

bool GrpcService::send_check(const ProducerCheck& check) {
  const ConnectionRef& producer = check.producer;
  const bool grpc = producer.index < conns_.size() && conns_[producer.index].grpc != nullptr;
  if (!grpc) return remoting_checks_ ? remoting_checks_(check) : false;
  GrpcSession* session = session_of(grpc_ticket(producer.index, producer.generation, 0));
  auto it = clients_by_conn_.find(producer.index);
  if (session == nullptr || it == clients_by_conn_.end() || it->second.telemetry_stream == 0 ||
      check.half == nullptr) {
    return false;
  }
  v2::TelemetryCommand command;
  v2::RecoverOrphanedTransactionCommand* recover =
      command.mutable_recover_orphaned_transaction_command();
  // The half as a receiver would see it (fill_grpc_message), typed TRANSACTION.
  fill_grpc_message(*check.half, recover->mutable_message());
  recover->mutable_message()->mutable_system_properties()->set_message_type(v2::TRANSACTION);
  recover->set_transaction_id(
      transaction_id(check.shard, wire_offset(check.offset).value, check.half->queue_offset));
  return session->send_message(it->second.telemetry_stream, command);
}

}  // namespace uringmq::net
