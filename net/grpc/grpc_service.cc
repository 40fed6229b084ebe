// MessagingService's dispatch, QueryRoute, Heartbeat, Telemetry and NotifyClientTermination
// (net/grpc/grpc_service.h); the sends are in grpc_send.cc.

#include "net/grpc/grpc_service.h"

#include <type_traits>

#include "apache/rocketmq/v2/service.pb.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "io/assert.h"
#include "net/common/log.h"
#include "net/grpc/grpc_codes.h"
#include "net/grpc/grpc_ticket.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace v2 = apache::rocketmq::v2;
constexpr std::string_view kServicePrefix = "/apache.rocketmq.v2.MessagingService/";

// The topic and group a consumer call names (both empty when its request does not parse: the
// RPC refuses it then).
template <typename Request>
std::pair<std::string, std::string> topic_and_group(std::string_view bytes) {
  Request request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return {};
  if constexpr (std::is_same_v<Request, v2::ReceiveMessageRequest>) {
    return {request.message_queue().topic().name(), request.group().name()};
  } else {
    return {request.topic().name(), request.group().name()};
  }
}

std::pair<std::string, std::string> consumer_names(std::string_view method,
                                                   std::string_view bytes) {
  if (method == "QueryAssignment") return topic_and_group<v2::QueryAssignmentRequest>(bytes);
  if (method == "ReceiveMessage") return topic_and_group<v2::ReceiveMessageRequest>(bytes);
  if (method == "AckMessage") return topic_and_group<v2::AckMessageRequest>(bytes);
  if (method == "ChangeInvisibleDuration") {
    return topic_and_group<v2::ChangeInvisibleDurationRequest>(bytes);
  }
  return topic_and_group<v2::ForwardMessageToDeadLetterQueueRequest>(bytes);
}

void set_duration(google::protobuf::Duration* d, int64_t ms) {
  d->set_seconds(ms / 1000);
  d->set_nanos(static_cast<int32_t>((ms % 1000) * 1'000'000));
}

void set_backoff(v2::RetryPolicy* policy, int32_t max_attempts, int64_t initial_ms,
                 int64_t max_ms) {
  policy->set_max_attempts(max_attempts);
  v2::ExponentialBackoff* backoff = policy->mutable_exponential_backoff();
  set_duration(backoff->mutable_initial(), initial_ms);
  set_duration(backoff->mutable_max(), max_ms);
  backoff->set_multiplier(2);
}

v2::Permission permission_of(int32_t perm) {
  const bool read = (perm & kPermRead) != 0;
  const bool write = (perm & kPermWrite) != 0;
  if (read && write) return v2::READ_WRITE;
  if (read) return v2::READ;
  if (write) return v2::WRITE;
  return v2::NONE;
}

void add_accepted_types(v2::MessageQueue* queue, TopicMessageType type) {
  switch (type) {
    case TopicMessageType::normal:
      return queue->add_accept_message_types(v2::NORMAL);
    case TopicMessageType::fifo:
      return queue->add_accept_message_types(v2::FIFO);
    case TopicMessageType::delay:
      return queue->add_accept_message_types(v2::DELAY);
    case TopicMessageType::transaction:
      return queue->add_accept_message_types(v2::TRANSACTION);
    case TopicMessageType::unspecified:
    case TopicMessageType::mixed:
      break;
  }
  for (v2::MessageType t : {v2::NORMAL, v2::FIFO, v2::DELAY, v2::TRANSACTION}) {
    queue->add_accept_message_types(t);
  }
}

}  // namespace

GrpcService::GrpcService(BrokerReactor& reactor, BrokerParts& parts) : BrokerPart(reactor, parts) {
  // Built after TransactionHandlers: checks of producers connected over gRPC go on their
  // Telemetry streams, the others to remoting's sink.
  remoting_checks_ = core_.transactions.check_sink();
  core_.transactions.set_check_sink([this](const ProducerCheck& c) { return send_check(c); });
}

const std::map<std::string_view, GrpcService::Rpc, std::less<>>& GrpcService::rpcs() {
  static const std::map<std::string_view, Rpc, std::less<>> table = {
      {"QueryRoute", &GrpcService::query_route},
      {"Heartbeat", &GrpcService::heartbeat},
      {"Telemetry", &GrpcService::telemetry},
      {"SendMessage", &GrpcService::send_message},
      {"RecallMessage", &GrpcService::recall_message},
      {"EndTransaction", &GrpcService::end_transaction},
      {"NotifyClientTermination", &GrpcService::notify_termination},
      // The consumer side: POP in the core (GrpcReceive, grpc_receive.h).
      {"QueryAssignment", &GrpcService::consume},
      {"ReceiveMessage", &GrpcService::consume},
      {"AckMessage", &GrpcService::consume},
      {"ChangeInvisibleDuration", &GrpcService::consume},
      {"ForwardMessageToDeadLetterQueue", &GrpcService::consume},
  };
  return table;
}

void GrpcService::on_message(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  const std::string_view path = stream.path;
  if (std::optional<AclGrpcRefusal> refused = acl_refusal(session, stream, {}, 0)) {
    session.finish(stream.id, GrpcStatus::unauthenticated, refused->reason);
    return;
  }
  if (path.substr(0, kServicePrefix.size()) == kServicePrefix) {
    const auto it = rpcs().find(path.substr(kServicePrefix.size()));
    if (it != rpcs().end()) return (this->*(it->second))(session, stream, bytes);
  }
  session.finish(stream.id, GrpcStatus::unimplemented,
                 "unknown method " + std::string(path) + " (the broker serves " +
                     std::string(kServicePrefix.substr(1, kServicePrefix.size() - 2)) + ")");
}

void GrpcService::on_half_close(GrpcSession& session, GrpcStream& stream) {
  // Telemetry ends when its client ends it; a unary request without a message is refused.
  const std::string_view path = stream.path;
  const bool telemetry = path.size() == kServicePrefix.size() + 9 &&
                         path.starts_with(kServicePrefix) && path.ends_with("Telemetry");
  if (telemetry) {
    session.finish(stream.id, GrpcStatus::ok, "");
  } else if (stream.messages == 0 && !stream.finished) {
    session.finish(stream.id, GrpcStatus::internal, "the request carried no message");
  }
}

void GrpcService::on_stream_closed(GrpcSession& session, int32_t stream_id) {
  auto it = clients_by_conn_.find(session.user());
  if (it != clients_by_conn_.end() && it->second.telemetry_stream == stream_id) {
    it->second.telemetry_stream = 0;
  }
}

void GrpcService::connection_closed(uint32_t conn) {
  clients_by_conn_.erase(conn);
}

void GrpcService::answer(uint32_t conn, int32_t stream,
                         const google::protobuf::MessageLite& response) {
  GrpcSession* session = conns_[conn].grpc.get();
  if (session == nullptr) return;
  session->send_message(stream, response);
  session->finish(stream, GrpcStatus::ok, "");
}

GrpcSession* GrpcService::session_of(const Ticket& ticket) {
  if (ticket.conn >= conns_.size()) return nullptr;
  Connection& conn = conns_[ticket.conn];
  if (!conn.open || conn.closing || conn.generation != ticket.generation) return nullptr;
  return conn.grpc.get();
}

std::optional<AclGrpcRefusal> GrpcService::acl_refusal(GrpcSession& session,
                                                       const GrpcStream& stream,
                                                       std::string_view topic, uint8_t perm,
                                                       std::string_view group) {
  const AclRules* rules = reactor_.acl_.rules();
  if (rules == nullptr) return std::nullopt;
  const std::string* authorization = stream.header("authorization");
  const std::string* date_time = stream.header("x-mq-date-time");
  return check_grpc_acl(*rules, authorization ? *authorization : "", date_time ? *date_time : "",
                        conns_[session.user()].peer_ip, topic, perm, group);
}

void GrpcService::consume(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  GrpcReceive& r = parts_.grpc_receive;
  const std::string_view method = std::string_view(stream.path).substr(kServicePrefix.size());
  if (reactor_.acl_.rules() != nullptr) {
    // SUB on the topic and on the group, as the Proxy checks a consumer's calls. Every
    // consumer response has its Status as field 1, so one with only the status answers any.
    const std::pair<std::string, std::string> names = consumer_names(method, bytes);
    if (auto denied = acl_refusal(session, stream, names.first, kAclSub, names.second)) {
      v2::AckMessageResponse response;
      set_status(response.mutable_status(), v2::FORBIDDEN, denied->reason);
      return answer(session.user(), stream.id, response);
    }
  }
  if (method == "QueryAssignment") return r.query_assignment(session, stream, bytes, port_);
  if (method == "ReceiveMessage") return r.receive_message(session, stream, bytes);
  if (method == "AckMessage") return r.ack_message(session, stream, bytes);
  if (method == "ChangeInvisibleDuration") return r.change_invisible(session, stream, bytes);
  return r.forward_dead_letter(session, stream, bytes);
}

// ---- QueryRoute: the topic's queues on every presented broker ----

void GrpcService::query_route(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  v2::QueryRouteRequest request;
  v2::QueryRouteResponse response;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad QueryRouteRequest");
    return;
  }
  const std::string& topic = request.topic().name();
  const std::optional<TopicShape> shape = topics_.route(topic);
  if (!shape) {
    set_status(response.mutable_status(), v2::TOPIC_NOT_FOUND, "no route for topic " + topic);
    return answer(session.user(), stream.id, response);
  }
  v2::Endpoints endpoints = request.endpoints();
  if (endpoints.addresses_size() == 0) {
    const std::string& host = advertised_[0].substr(0, advertised_[0].rfind(':'));
    endpoints.set_scheme(v2::IPv4);
    v2::Address* address = endpoints.add_addresses();
    address->set_host(host);
    address->set_port(port_);
  }
  const TopicMessageType type = topics_.message_type(topic);
  const int32_t queues = std::max(shape->read_queue_nums, shape->write_queue_nums);
  for (const PresentedBroker& broker : brokers_) {
    for (int32_t q = 0; q < queues; q++) {
      v2::MessageQueue* queue = response.add_message_queues();
      *queue->mutable_topic() = request.topic();
      queue->set_id(q);
      int32_t perm = shape->perm;
      if (q >= shape->read_queue_nums) perm &= ~kPermRead;
      if (q >= shape->write_queue_nums) perm &= ~kPermWrite;
      queue->set_permission(permission_of(perm));
      queue->mutable_broker()->set_name(broker.name);
      queue->mutable_broker()->set_id(0);
      *queue->mutable_broker()->mutable_endpoints() = endpoints;
      add_accepted_types(queue, type);
    }
  }
  set_status(response.mutable_status(), v2::OK, "OK");
  answer(session.user(), stream.id, response);
}

// ---- Heartbeat, NotifyClientTermination: the core's client tables ----

void GrpcService::heartbeat(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  v2::HeartbeatRequest request;
  v2::HeartbeatResponse response;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad HeartbeatRequest");
    return;
  }
  const std::string* client = stream.header("x-mq-client-id");
  if (client == nullptr || client->empty()) {
    set_status(response.mutable_status(), v2::CLIENT_ID_REQUIRED, "x-mq-client-id is missing");
    return answer(session.user(), stream.id, response);
  }
  const uint32_t conn = session.user();
  Heartbeat hb;
  hb.client_id = *client;
  hb.connection = {conn, conns_[conn].generation};
  hb.shard = conns_[conn].shard;
  hb.address = conns_[conn].peer_ip + ":" + std::to_string(conns_[conn].peer.port);
  hb.language = "HTTP";  // what the Node client says in x-mq-language
  if (const std::string* language = stream.header("x-mq-language")) hb.language = *language;
  if (request.has_group() && !request.group().name().empty()) {
    ConsumerEntry& consumer = hb.consumers.emplace_back();
    consumer.group = request.group().name();
    consumer.consume_type = "CONSUME_POP";
    consumer.message_model = "CLUSTERING";
  }
  auto it = clients_by_conn_.find(conn);
  if (it != clients_by_conn_.end()) {
    for (const std::string& topic : it->second.topics) {
      hb.producer_groups.push_back(grpc_producer_group(topic));
    }
  }
  if (std::optional<Refusal> refused = core_.sessions.heartbeat(hb, clock_->now_ms())) {
    set_refusal(response.mutable_status(), *refused);
  } else {
    note_on_other_shards(hb);
    set_status(response.mutable_status(), v2::OK, "OK");
  }
  answer(conn, stream.id, response);
}

void GrpcService::notify_termination(GrpcSession& session, GrpcStream& stream,
                                     std::string_view bytes) {
  v2::NotifyClientTerminationRequest request;
  v2::NotifyClientTerminationResponse response;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad NotifyClientTerminationRequest");
    return;
  }
  const std::string* client = stream.header("x-mq-client-id");
  if (client != nullptr) {
    const std::string group = request.has_group() ? request.group().name() : "";
    core_.sessions.unregister(*client, group.empty() ? nullptr : &group, nullptr);
    auto it = clients_by_conn_.find(session.user());
    if (it != clients_by_conn_.end()) {
      for (const std::string& topic : it->second.topics) {
        const std::string producer = grpc_producer_group(topic);
        core_.sessions.unregister(*client, nullptr, &producer);
      }
    }
  }
  set_status(response.mutable_status(), v2::OK, "OK");
  answer(session.user(), stream.id, response);
}

// ---- Telemetry: the client's Settings answered with the broker's ----

void GrpcService::telemetry(GrpcSession& session, GrpcStream& stream, std::string_view bytes) {
  v2::TelemetryCommand command;
  if (!command.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    session.finish(stream.id, GrpcStatus::invalid_argument, "bad TelemetryCommand");
    return;
  }
  // Answers from the client (thread stack traces, verify results) need nothing back.
  if (!command.has_settings()) return;
  const v2::Settings& asked = command.settings();
  v2::TelemetryCommand reply;
  set_status(reply.mutable_status(), v2::OK, "OK");
  v2::Settings* settings = reply.mutable_settings();
  if (asked.has_client_type()) settings->set_client_type(asked.client_type());
  if (asked.has_publishing()) {
    // RocketMQ's Proxy: the client's attempts, backoff 10 ms doubling up to 1 s.
    const int32_t attempts = asked.has_backoff_policy() ? asked.backoff_policy().max_attempts() : 3;
    set_backoff(settings->mutable_backoff_policy(), attempts, 10, 1000);
    v2::Publishing* publishing = settings->mutable_publishing();
    *publishing->mutable_topics() = asked.publishing().topics();
    publishing->set_max_body_size(static_cast<int32_t>(config_.store.log.limits.max_body_bytes));
    publishing->set_validate_message_type(true);
    Client& client = clients_by_conn_[session.user()];
    for (const v2::Resource& topic : asked.publishing().topics()) {
      client.topics.insert(topic.name());
    }
  } else if (asked.has_subscription()) {
    const v2::Subscription& sub = asked.subscription();
    const SubscriptionGroupConfig* group =
        subscription_groups_ ? subscription_groups_->find(sub.group().name()) : nullptr;
    const int32_t retries = group != nullptr ? group->retry_max_times : 16;
    set_backoff(settings->mutable_backoff_policy(), retries + 1, 1000, 10'000);
    v2::Subscription* out = settings->mutable_subscription();
    *out->mutable_group() = sub.group();
    *out->mutable_subscriptions() = sub.subscriptions();
    out->set_fifo(group != nullptr && group->consume_message_orderly);
    out->set_receive_batch_size(32);
    set_duration(out->mutable_long_polling_timeout(), 30'000);
  }
  Client& client = clients_by_conn_[session.user()];
  if (const std::string* id = stream.header("x-mq-client-id")) client.id = *id;
  client.telemetry_stream = stream.id;
  note_producer(session, stream);
  session.send_message(stream.id, reply);
}

void GrpcService::note_producer(GrpcSession& session, const GrpcStream& stream) {
  const uint32_t conn = session.user();
  auto it = clients_by_conn_.find(conn);
  if (it == clients_by_conn_.end() || it->second.topics.empty()) return;
  Heartbeat hb;
  hb.client_id = it->second.id;
  if (hb.client_id.empty()) return;
  hb.connection = {conn, conns_[conn].generation};
  hb.shard = conns_[conn].shard;
  hb.address = conns_[conn].peer_ip + ":" + std::to_string(conns_[conn].peer.port);
  hb.language = "HTTP";
  if (const std::string* language = stream.header("x-mq-language")) hb.language = *language;
  for (const std::string& topic : it->second.topics) {
    hb.producer_groups.push_back(grpc_producer_group(topic));
  }
  if (!core_.sessions.heartbeat(hb, clock_->now_ms())) note_on_other_shards(hb);
}

// One gRPC connection serves every presented broker: its producer is noted on each, so a half
// on any shard finds it for its check.
void GrpcService::note_on_other_shards(Heartbeat hb) {
  if (hb.producer_groups.empty()) return;
  const uint32_t own = hb.shard;
  for (const PresentedBroker& broker : brokers_) {
    if (broker.shard == own) continue;
    hb.shard = broker.shard;
    core_.transactions.note_producers(hb, clock_->now_ms());
  }
}

}  // namespace uringmq::net
