// The broker's request handlers: each request code becomes store requests on the reactor's
// session, and each store completion becomes the reply RocketMQ's broker would send. Sends are in
// send_handlers.cc, pulls and offsets in pull_handlers.cc.
// Java references: ClientManageProcessor, the NameServer's RouteInfoManager (rocketmq-all-4.9.8).

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
#include "net/remoting/heartbeat_json.h"
#include "net/remoting/remoting_handlers.h"
#include "net/remoting/tickets.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

// "ip:port" of a client's connection, as Java's ClientChannelInfo shows it.
std::string client_address(const engine::HostAddress& a) {
  return std::to_string(a.address[0]) + "." + std::to_string(a.address[1]) + "." +
         std::to_string(a.address[2]) + "." + std::to_string(a.address[3]) + ":" +
         std::to_string(a.port);
}

}  // namespace

// ---- dispatch by request code ----

void RemotingHandlers::handle(uint32_t conn, RemotingCommand& request,
                              std::span<const std::byte> body) {
  switch (request.code) {
    case req::kGetRouteInfoByTopic:
      return handle_route(conn, request);
    case req::kSendMessage:
    case req::kSendMessageV2:
    case req::kSendBatchMessage:
      return parts_.messages.handle_send(conn, request, body);
    case req::kPullMessage:
      return parts_.messages.handle_pull(conn, request);
    case req::kQueryConsumerOffset:
    case req::kGetMaxOffset:
    case req::kGetMinOffset:
    case req::kSearchOffsetByTimestamp:
      return parts_.messages.handle_queue_query(conn, request);
    case req::kUpdateConsumerOffset:
      return parts_.messages.handle_offset_update(conn, request);
    case req::kHeartBeat:
      return handle_heartbeat(conn, request, body);
    case req::kUnregisterClient:
      return handle_unregister(conn, request);
    case req::kGetConsumerListByGroup:
      return handle_consumer_list(conn, request);
    case req::kConsumerSendMsgBack:
      return parts_.messages.handle_send_back(conn, request);
    case req::kRecallMessage:
      return parts_.messages.handle_recall(conn, request);
    case req::kLockBatchMq:
      return handle_lock_batch(conn, request, body);
    case req::kUnlockBatchMq:
      return handle_unlock_batch(conn, request, body);
    case req::kGetBrokerRuntimeInfo:
      return handle_runtime_info(conn, request);
    case req::kUpdateAndCreateTopic:
      return handle_create_topic(conn, request);
    case req::kDeleteTopicInBroker:
    case req::kDeleteTopicInNamesrv:
      return handle_delete_topic(conn, request);
    case req::kGetAllTopicConfig:
      return handle_all_topic_config(conn, request);
    case req::kGetBrokerClusterInfo:
      return handle_cluster_info(conn, request);
    case kRegisterBrokerCode:
      return parts_.namesrv.handle_register_broker(conn, request, body);
    case kUnregisterBrokerCode:
      return parts_.namesrv.handle_unregister_broker(conn, request);
    case req::kWipeWritePermOfBroker:
      return parts_.namesrv.handle_wipe_write_perm(conn, request);
    case req::kCheckClientConfig:
      return handle_check_client_config(conn, request, body);
    case req::kQueryMessage:
      return parts_.queries.handle_query_message(conn, request);
    case req::kViewMessageById:
      return parts_.queries.handle_view_message(conn, request);
    case req::kGetEarliestMsgStoretime:
      return parts_.queries.handle_earliest_time(conn, request);
    case req::kEndTransaction:
      return parts_.transactions.handle_end_transaction(conn, request);
    case req::kPopMessage:
      return parts_.messages.handle_pop(conn, request);
    case req::kAckMessage:
      return parts_.messages.handle_ack(conn, request);
    case req::kChangeMessageInvisibleTime:
      return parts_.messages.handle_change_invisible(conn, request);
    case req::kPeekMessage:
      return parts_.messages.handle_peek(conn, request);
    case req::kNotification:
      return parts_.messages.handle_notification(conn, request);
    case req::kPollingInfo:
      return parts_.messages.handle_polling_info(conn, request);
    case req::kBatchAckMessage:
      return parts_.messages.handle_batch_ack(conn, request, body);
    default:
      if (parts_.admin.handle_admin(conn, request, body)) return;
      if (parts_.master.handle_slave_sync(conn, request)) return;
      return reply_code(conn, request, rc::kRequestCodeNotSupported,
                        "request type " + std::to_string(request.code) + " not supported");
  }
}

// ---- Topics: UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG
// (AdminBrokerProcessor) ----

void RemotingHandlers::handle_create_topic(uint32_t conn, const RemotingCommand& request) {
  HeaderFields fields(request);
  TopicConfig c;
  c.read_queue_nums = fields.int32("readQueueNums").value_or(-1);  // -1: missing, refused
  c.write_queue_nums = fields.int32("writeQueueNums").value_or(-1);
  c.perm = fields.int32("perm").value_or(-1);
  c.topic_sys_flag = fields.int32("topicSysFlag").value_or(0);
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  const std::string* topic = request.ext("topic");
  c.name = topic != nullptr ? *topic : std::string();
  const std::string* order = request.ext("order");
  c.order = order != nullptr && *order == "true";
  // RocketMQ 5's header (a 4.9 client sends none): "+message.type=FIFO", net/core/attributes.h.
  const std::string* attributes = request.ext("attributes");
  if (std::optional<Refusal> refused =
          topics_.configure(c, attributes != nullptr ? *attributes : std::string_view()))
    return reply_refusal(conn, request, *refused);
  reply_code(conn, request, rc::kSuccess, {});
}

// mqadmin deleteTopic sends both. DELETE_TOPIC_IN_BROKER: the topic leaves the table; its
// messages stay until retention deletes them (and with autoCreateTopicEnable a later send creates
// it again). DELETE_TOPIC_IN_NAMESRV, the NameServer's side: this process's own routes come from
// its topic table, so only registered brokers' lists lose the topic.
void RemotingHandlers::handle_delete_topic(uint32_t conn, const RemotingCommand& request) {
  const bool in_namesrv = request.code == req::kDeleteTopicInNamesrv;
  const std::string* topic = request.ext("topic");
  if (topic == nullptr || !valid_topic_name(*topic)) {
    return reply_code(
        conn, request, rc::kSystemError,
        std::string(in_namesrv ? "DELETE_TOPIC_IN_NAMESRV" : "DELETE_TOPIC_IN_BROKER") +
            " needs a valid topic (1-127 characters of [%|a-zA-Z0-9_-])");
  }
  if (in_namesrv) {
    if (remote_brokers_.erase_topic(*topic)) {
      log_info("topic " + *topic + " deleted from the NameServer's routes of registered brokers");
    }
    return reply_code(conn, request, rc::kSuccess, {});
  }
  if (std::optional<Refusal> refused = topics_.remove(*topic)) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

std::string RemotingHandlers::topic_config_json(uint32_t shard) const {
  UMQ_ASSERT(shard < brokers_.size());
  return topics_.table().to_json();
}

void RemotingHandlers::handle_all_topic_config(uint32_t conn, const RemotingCommand& request) {
  const std::string body = topic_config_json(conns_[conn].shard);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- NameServer: GET_BROKER_CLUSTER_INFO (mqadmin finds the broker of a cluster by it) ----

// {"cluster":...,"brokerName":...,"brokerAddrs":{"0":"ip:port"}}: Java's BrokerData.
void RemotingHandlers::append_broker_data(std::string* body, uint32_t shard) const {
  *body += "{\"cluster\":";
  append_json_string(body, config_.cluster_name);
  *body += ",\"brokerName\":";
  append_json_string(body, brokers_[shard].name);
  *body += ",\"brokerAddrs\":{\"0\":";
  append_json_string(body, advertised_[shard]);
  *body += "}}";
}

// Every presented broker (one per shard) is a broker of the cluster.
void RemotingHandlers::handle_cluster_info(uint32_t conn, const RemotingCommand& request) {
  // This process's brokers, then those registered with it (a cluster).
  RemoteBrokers::AddrTable brokers;
  std::map<std::string, std::set<std::string>> clusters;
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    brokers[brokers_[i].name] = {config_.cluster_name, {{0, advertised_[i]}}};
    clusters[config_.cluster_name].insert(brokers_[i].name);
  }
  remote_brokers_.collect_cluster(&brokers, &clusters);
  std::string body = "{\"brokerAddrTable\":{";
  for (const auto& [name, entry] : brokers) {
    if (body.back() != '{') body += ',';
    append_json_string(&body, name);
    body += ':';
    append_broker_data_json(&body, entry.first, name, entry.second);
  }
  body += "},\"clusterAddrTable\":{";
  for (const auto& [cluster, names] : clusters) {
    if (body.back() != '{') body += ',';
    append_json_string(&body, cluster);
    body += ':';
    append_json_list(&body, '[', ']', names,
                     [](std::string* o, const std::string& n) { append_json_string(o, n); });
  }
  body += "}}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- NameServer: GET_ROUTEINFO_BY_TOPIC ----

void RemotingHandlers::handle_route(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  std::optional<TopicShape> shape = topic != nullptr ? topics_.route(*topic) : std::nullopt;
  const bool remote = shape.has_value() || (topic != nullptr && !is_internal_topic(*topic) &&
                                            remote_brokers_.has_topic(*topic));
  if (!remote) {
    return reply_code(
        conn, request, rc::kTopicNotExist,
        "No topic route info in name server for the topic: " + (topic ? *topic : std::string()));
  }
  if (!shape) {
    const std::string body = parts_.namesrv.merge_remote_route(*topic, {}, false);
    return reply(conn, make_response(request, rc::kSuccess), as_bytes(body));
  }
  // One queueData and one brokerData per presented broker: the topic table is the process's,
  // so every broker has the topic's queues (a topic of 4 queues on 2 shards shows 8).
  std::string body = "{\"queueDatas\":[";
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    body += i > 0 ? ",{\"brokerName\":" : "{\"brokerName\":";
    append_json_string(&body, brokers_[i].name);
    body += ",\"readQueueNums\":" + std::to_string(shape->read_queue_nums) +
            ",\"writeQueueNums\":" + std::to_string(shape->write_queue_nums) +
            ",\"perm\":" + std::to_string(shape->perm) +
            ",\"topicSysFlag\":" + std::to_string(shape->topic_sys_flag) + "}";
  }
  body += "],\"brokerDatas\":[";
  for (uint32_t i = 0; i < brokers_.size(); i++) {
    if (i > 0) body += ',';
    append_broker_data(&body, i);
  }
  body += "],\"filterServerTable\":{}}";
  body = parts_.namesrv.merge_remote_route(*topic, std::move(body), true);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- clients: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP ----

void RemotingHandlers::handle_heartbeat(uint32_t conn, const RemotingCommand& request,
                                        std::span<const std::byte> body) {
  if (registrar_) registrar_->topics_changed();  // a new group's %RETRY% topic is registered
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits_.json);
  Heartbeat heartbeat;
  if (!json.is_ok() || !heartbeat_from_json(*json, &heartbeat)) {
    return reply_code(conn, request, rc::kSystemError,
                      "HEART_BEAT body is not a heartbeat (JSON with clientID)" +
                          (json.is_ok() ? std::string() : ": " + json.status().message()));
  }
  heartbeat.connection = {conn, conns_[conn].generation};
  heartbeat.shard = conns_[conn].shard;
  heartbeat.address = client_address(conns_[conn].peer);
  heartbeat.language = request.language;
  heartbeat.version = request.version;
  if (std::optional<Refusal> refused = core_.sessions.heartbeat(heartbeat, clock_->now_ms())) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

void RemotingHandlers::handle_unregister(uint32_t conn, const RemotingCommand& request) {
  if (const std::string* client = request.ext("clientID")) {
    core_.sessions.unregister(*client, request.ext("consumerGroup"), request.ext("producerGroup"));
  }
  reply_code(conn, request, rc::kSuccess, {});
}

void RemotingHandlers::handle_consumer_list(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("consumerGroup");
  std::variant<Refusal, std::vector<std::string>> members =
      core_.sessions.consumers(group != nullptr ? std::string_view(*group) : std::string_view());
  if (const Refusal* refused = std::get_if<Refusal>(&members)) {
    return reply_refusal(conn, request, *refused);
  }
  std::string body = "{\"consumerIdList\":";
  append_json_list(
      &body, '[', ']', std::get<std::vector<std::string>>(members),
      [](std::string* o, const std::string& client) { append_json_string(o, client); });
  body += '}';
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// CHECK_CLIENT_CONFIG: a consumer's start-up check of its SQL92 subscription.
void RemotingHandlers::handle_check_client_config(uint32_t conn, const RemotingCommand& request,
                                                  std::span<const std::byte> body) {
  std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
  io::Result<JsonValue> json = parse_json(text, limits_.json);
  if (!json.is_ok()) {
    return reply_code(conn, request, rc::kSystemError,
                      "CHECK_CLIENT_CONFIG body is not JSON: " + json.status().message());
  }
  const JsonValue* sub = json->find("subscriptionData");
  if (sub == nullptr || !sub->is_object()) return reply_code(conn, request, rc::kSuccess, {});
  const JsonValue* type = sub->find("expressionType");
  const JsonValue* expression = sub->find("subString");
  const bool has_expression = expression != nullptr && expression->is_string();
  if (std::optional<Refusal> refused = core_.sql_subscriptions.check(
          type != nullptr && type->is_string() ? std::string_view(type->text())
                                               : std::string_view(),
          has_expression ? &expression->text() : nullptr)) {
    return reply_refusal(conn, request, *refused);
  }
  reply_code(conn, request, rc::kSuccess, {});
}

// ---- GET_BROKER_RUNTIME_INFO: store and delay-level figures ----

void RemotingHandlers::handle_runtime_info(uint32_t conn, const RemotingCommand& request) {
  // Written straight into the JSON body: no table of pairs (g++ 12 at -O3 warned falsely on
  // the vector's growth, -Warray-bounds, which -Werror turns into a Release build failure).
  std::string body = "{\"table\":{";
  auto add = [&body](std::string_view key, const std::string& value) {
    if (body.back() != '{') body += ',';
    append_json_string(&body, key);
    body += ':';
    append_json_string(&body, value);
  };
  // The figures of the presented broker asked (its shard), so that mqadmin clusterList and
  // brokerStatus sum correctly over a process's brokers.
  const uint32_t shard = conns_[conn].shard;
  WireFigures wire;
  wire.connections = reactor_.open_conns_;
  wire.consumer_notices_sent = notices_sent_;
  wire.consumer_notices_dropped = notices_dropped_;
  wire.transaction_checks_sent = core_.transactions.checks_sent();
  wire.transaction_checks_no_producer = core_.transactions.checks_no_producer();
  wire.messages_pulled = messages_pulled_[shard];
  core_.figures.figures(shard, brokers_[shard].name, wire, mono_ms_, add);
  // POP consumption of this broker, all groups and queues together (per queue: the metrics).
  PopQueueFigures pop;
  for (const PopQueueReport& r : core_.pop.figures(shard)) {
    pop.in_flight += r.figures.in_flight;
    pop.acks += r.figures.acks;
    pop.expiries += r.figures.expiries;
    pop.dead_lettered += r.figures.dead_lettered;
  }
  add("popInFlightMessages", std::to_string(pop.in_flight));
  add("popAckTotal", std::to_string(pop.acks));
  add("popExpiryTotal", std::to_string(pop.expiries));
  add("popDeadLetterTotal", std::to_string(pop.dead_lettered));
  // Records of messages about to come back read ahead of their deadline, and those taken.
  const PopPrefetch::Figures ahead = core_.pop_prefetch.figures(shard);
  add("popReadAheadTotal", std::to_string(ahead.read));
  add("popReadAheadTakenTotal", std::to_string(ahead.taken));
  body += "}}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- store completions ----

void RemotingHandlers::on_store_completion(const Completion& c) {
  if (HaServer::owns(c.tag)) return ha_server_->on_store_completion(*ring_, c, mono_ms_);
  const uint32_t index = static_cast<uint32_t>(c.tag);
  BrokerOp& op = calls_.op(index);
  UMQ_ASSERT(op.in_use);
  parts_.admin.note_metrics(op, c);
  switch (op.kind) {
    case BrokerOp::Kind::send:
      parts_.messages.complete_send(op, c);
      break;
    case BrokerOp::Kind::pull:
      if (c.code == io::Code::too_large && parts_.messages.pull_again_larger(index)) return;
      parts_.messages.complete_pull(op, c);
      break;
    case BrokerOp::Kind::query_max:
    case BrokerOp::Kind::query_min:
    case BrokerOp::Kind::search:
    case BrokerOp::Kind::query_offset:
    case BrokerOp::Kind::query_offset_min:
    case BrokerOp::Kind::commit:
      if (!parts_.messages.complete_query(index, c)) return;
      break;
    case BrokerOp::Kind::send_back_header:
    case BrokerOp::Kind::send_back_record:
    case BrokerOp::Kind::send_back_store:
      if (Pop::owns(op.ticket)) {
        if (!core_.pop.dead_letter_outcome(index, c)) return;
        break;
      }
      if (!parts_.messages.complete_send_back(index, c)) return;
      break;
    case BrokerOp::Kind::pop_receive:
      if (!parts_.messages.complete_pop(index, c)) return;
      break;
    case BrokerOp::Kind::pop_watch:
      core_.pop.watch_outcome(index, c);
      break;
    case BrokerOp::Kind::pop_journal:
      parts_.messages.complete_pop_journal(index, c);
      break;
    case BrokerOp::Kind::pop_low_water:
      if (!core_.pop.low_water_outcome(index, c)) return;
      break;
    case BrokerOp::Kind::pop_prefetch:
      core_.pop_prefetch.read(index, c);
      break;
    case BrokerOp::Kind::pop_peek:
      if (!parts_.messages.complete_peek(index, c)) return;
      break;
    case BrokerOp::Kind::commit_silent:
      break;
    case BrokerOp::Kind::query_message:
      if (!parts_.queries.complete_query_message(index, c)) return;
      break;
    case BrokerOp::Kind::view_message:
    case BrokerOp::Kind::view_stored:
      parts_.queries.complete_view_message(index, c);
      break;
    case BrokerOp::Kind::earliest_min:
    case BrokerOp::Kind::earliest_record:
      if (!parts_.queries.complete_earliest(index, c)) return;
      break;
    case BrokerOp::Kind::admin:
      if (!parts_.admin.complete_admin(index, c)) return;
      break;
    case BrokerOp::Kind::offset_table:
      parts_.master.complete_offset_table(op, c);
      break;
    case BrokerOp::Kind::release:
      // One completion per shard.
      if (--op.queue_id > 0) return;
      break;
    case BrokerOp::Kind::end_view:
    case BrokerOp::Kind::end_store:
      if (!parts_.transactions.complete_end(index, c)) return;
      break;
    case BrokerOp::Kind::txn_checks:
    case BrokerOp::Kind::check_view:
    case BrokerOp::Kind::check_discard:
      if (!core_.transactions.complete_check(index, c)) return;
      break;
  }
  calls_.end(index);
}

}  // namespace uringmq::net
