// Admin requests that read the store queue by queue (mqadmin topicStatus, consumerProgress,
// resetOffsetByTime; the dashboard's and the exporter's views) and the client listings: the
// remoting adapter of the core's calls (net/core/admin.h), which decodes each request, calls the
// core and writes the answer in Java's fastjson form.
// Java references: AdminBrokerProcessor (getTopicStatsInfo, getConsumeStats, resetOffset,
// getConsumerConnectionList, getProducerConnectionList), Broker2Client.resetOffset, the
// NameServer's getAllTopicListFromNameserver (rocketmq-all-4.9.8).

#include <algorithm>
#include <set>

#include "net/common/json.h"
#include "net/common/log.h"
#include "net/ops/admin_handlers.h"
#include "net/remoting/header_fields.h"
#include "net/remoting/tickets.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;

void append_connections(std::string* out, const ClientMap& clients) {
  *out += "\"connectionSet\":[";
  bool first = true;
  for (const auto& [id, c] : clients) {
    if (!first) *out += ',';
    first = false;
    *out += "{\"clientAddr\":";
    append_json_string(out, c.address);
    *out += ",\"clientId\":";
    append_json_string(out, id);
    *out += ",\"language\":";
    append_json_string(out, c.language);
    *out += ",\"version\":" + std::to_string(c.version) + "}";
  }
  *out += "]";
}

// {"<key>":[<each name as a JSON string>]}: Java's TopicList and GroupList bodies.
template <typename Names>
std::string json_name_list(std::string_view key, const Names& names) {
  std::string body = "{";
  append_json_string(&body, key);
  body += ':';
  append_json_list(&body, '[', ']', names, [](std::string* out, const std::string& name) {
    append_json_string(out, name);
  });
  body += '}';
  return body;
}

}  // namespace

void append_message_queue_key(std::string* out, std::string_view broker_name,
                              const QueueFigures& queue) {
  *out += "{\"brokerName\":";
  append_json_string(out, broker_name);
  *out += ",\"queueId\":" + std::to_string(queue.queue_id) + ",\"topic\":";
  append_json_string(out, queue.topic);
  *out += "}";
}

namespace {

// The answers' bodies, as Java's TopicStatsTable, ConsumeStats and ResetOffsetBody.
std::string figures_body(std::string_view broker, const TopicStats& stats) {
  std::string body = "{\"offsetTable\":{";
  for (const QueueFigures& queue : stats.queues) {
    if (body.back() != '{') body += ',';
    append_message_queue_key(&body, broker, queue);
    body += ":{\"lastUpdateTimestamp\":" + std::to_string(queue.timestamp_ms) +
            ",\"maxOffset\":" + std::to_string(queue.max_offset) +
            ",\"minOffset\":" + std::to_string(queue.min_offset) + "}";
  }
  return body + "}}";
}

std::string figures_body(std::string_view broker, const ConsumeStats& stats) {
  // The broker keeps no consume rate: Java's field, always 0.0.
  std::string body = "{\"consumeTps\":0.0,\"offsetTable\":{";
  for (const QueueFigures& queue : stats.queues) {
    if (body.back() != '{') body += ',';
    append_message_queue_key(&body, broker, queue);
    body += ":{\"brokerOffset\":" + std::to_string(std::max<int64_t>(queue.max_offset, 0)) +
            ",\"consumerOffset\":" + std::to_string(std::max<int64_t>(queue.consumer_offset, 0)) +
            ",\"lastTimestamp\":" + std::to_string(queue.timestamp_ms) + "}";
  }
  return body + "}}";
}

std::string figures_body(std::string_view broker, const ResetResult& reset) {
  std::string body = "{\"offsetTable\":{";
  for (const QueueFigures& queue : reset.queues) {
    if (body.back() != '{') body += ',';
    append_message_queue_key(&body, broker, queue);
    body += ":" + std::to_string(queue.reset_offset);
  }
  return body + "}}";
}

}  // namespace

// ---- the calls that gather figures from the store ----

AdminHandlers::AdminHandlers(BrokerReactor& reactor, BrokerParts& parts)
    : BrokerPart(reactor, parts), replication_(config_.ha.role, ha_server_, ha_client_) {
  core_.replication = &replication_;
}

void AdminHandlers::start_figures(size_t brokers) {
  core_.figures.start(brokers);
}

bool AdminHandlers::complete_admin(uint32_t index, const Completion& c) {
  AdminOutcome outcome = core_.admin.queue_figures_outcome(index, c);
  if (!outcome) return false;
  const BrokerOp& op = calls_.op(index);
  answer_figures(op.ticket, op.shard, std::move(*outcome));
  return true;
}

void AdminHandlers::answer_figures(const Ticket& ticket, uint32_t shard,
                                   std::variant<Refusal, QueueFiguresResult> outcome) {
  if (!reactor_.alive(ticket)) return;
  const RemotingCommand request = request_of(ticket);
  if (const Refusal* refused = std::get_if<Refusal>(&outcome)) {
    return reply_refusal(ticket.conn, request, *refused);
  }
  const QueueFiguresResult& result = std::get<QueueFiguresResult>(outcome);
  const std::string body =
      std::visit([&](const auto& r) { return figures_body(broker_name_of(shard), r); }, result);
  if (const ResetResult* reset = std::get_if<ResetResult>(&result)) {
    send_reset_to_clients(*reset, body);
  }
  reply(ticket.conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// RESET_CONSUMER_CLIENT_OFFSET, oneway, to every online member of the group (Broker2Client):
// the 4.x client drops its queues' pulled messages and takes the offsets in the body.
void AdminHandlers::send_reset_to_clients(const ResetResult& reset, const std::string& body) {
  if (reset.notify.empty()) return;
  RemotingCommand notice;
  notice.code = req::kResetConsumerClientOffset;
  notice.flag = kFlagOneway;
  notice.opaque = static_cast<int32_t>(next_request_opaque_++ & 0x7FFFFFFF);
  notice.set_ext("topic", reset.topic);
  notice.set_ext("group", reset.group);
  notice.set_ext("timestamp", std::to_string(reset.timestamp_ms));
  notice.set_ext("isForce", reset.force ? "true" : "false");
  std::string frame;
  encode_frame(notice, std::as_bytes(std::span(body)), &frame);
  for (const ClientToNotify& client : reset.notify) {
    const ConnectionRef& ref = client.connection;
    if (ref.index >= conns_.size()) continue;
    Connection& conn = conns_[ref.index];
    if (!conn.open || conn.closing || conn.generation != ref.generation) continue;
    if (output_bytes(conn) + frame.size() > kConnectionOutputMaxBytes) {
      log_warn("no RESET_CONSUMER_CLIENT_OFFSET to " + client.client_id + " of group " +
               reset.group +
               ": its connection's output is full (the committed offsets were reset)");
      continue;
    }
    conn.out_pending += frame;
    account(ref.index);
  }
}

// ---- GET_ALL_TOPIC_LIST_FROM_NAMESERVER, QUERY_TOPIC_CONSUME_BY_WHO ----

void AdminHandlers::handle_topic_list(uint32_t conn, const RemotingCommand& request) {
  std::set<std::string, std::less<>> topics = core_.admin.topic_list();
  remote_brokers_.collect_topics(&topics);  // brokers registered here (a cluster)
  const std::string body = json_name_list("topicList", topics);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// mqadmin queryMsgById's message tracks: the groups that subscribe to the topic or committed
// offsets in it.
void AdminHandlers::handle_consumed_by(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  if (topic == nullptr) {
    return reply_code(conn, request, rc::kSystemError, "QUERY_TOPIC_CONSUME_BY_WHO needs topic");
  }
  const std::string body = json_name_list("groupList", core_.admin.consumed_by(*topic));
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// ---- GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, INVOKE_BROKER_TO_RESET_OFFSET ----

void AdminHandlers::handle_topic_stats(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  const uint32_t shard = conns_[conn].shard;
  AdminOutcome outcome =
      core_.admin.topic_stats(ticket, shard, topic != nullptr ? *topic : std::string());
  if (outcome) answer_figures(ticket, shard, std::move(*outcome));
}

void AdminHandlers::handle_consume_stats(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("consumerGroup");
  if (group == nullptr || group->empty()) {
    return reply_code(conn, request, rc::kSystemError, "GET_CONSUME_STATS needs consumerGroup");
  }
  const std::string* topic = request.ext("topic");
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  const uint32_t shard = conns_[conn].shard;
  AdminOutcome outcome =
      core_.admin.consume_stats(ticket, shard, *group, topic != nullptr ? *topic : std::string());
  if (outcome) answer_figures(ticket, shard, std::move(*outcome));
}

void AdminHandlers::handle_reset_offset(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::string* group = request.ext("group");
  HeaderFields fields(request);
  const std::optional<int64_t> timestamp = fields.int64("timestamp");
  if (!fields.ok()) return reply_code(conn, request, rc::kSystemError, fields.error());
  if (topic == nullptr || group == nullptr || !timestamp) {
    return reply_code(conn, request, rc::kSystemError,
                      "INVOKE_BROKER_TO_RESET_OFFSET needs topic, group, timestamp");
  }
  const std::string* force = request.ext("isForce");
  const ResetCall call{*topic, *group, *timestamp, force == nullptr || *force != "false"};
  const Ticket ticket = ticket_of(conn, conns_[conn].generation, request);
  const uint32_t shard = conns_[conn].shard;
  AdminOutcome outcome = core_.admin.reset_offset(ticket, shard, call);
  if (outcome) answer_figures(ticket, shard, std::move(*outcome));
}

// ---- GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST ----

void AdminHandlers::handle_consumer_connections(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("consumerGroup");
  auto found = core_.admin.consumer_connections(group != nullptr ? *group : std::string());
  if (const Refusal* refused = std::get_if<Refusal>(&found)) {
    return reply_refusal(conn, request, *refused);
  }
  const ConsumerGroupInfo& info = *std::get<const ConsumerGroupInfo*>(found);
  std::string body = "{";
  append_connections(&body, info.clients);
  body += ",\"consumeFromWhere\":";
  append_json_string(&body, info.consume_from_where);
  body += ",\"consumeType\":";
  append_json_string(&body, info.consume_type);
  body += ",\"messageModel\":";
  append_json_string(&body, info.message_model);
  body += ",\"subscriptionTable\":{";
  bool first = true;
  for (const auto& [topic, subscription] : info.subscriptions) {
    if (!first) body += ',';
    first = false;
    append_json_string(&body, topic);
    body += ':' + subscription;
  }
  body += "}}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

void AdminHandlers::handle_producer_connections(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("producerGroup");
  auto found = core_.admin.producer_connections(group != nullptr ? *group : std::string());
  if (const Refusal* refused = std::get_if<Refusal>(&found)) {
    return reply_refusal(conn, request, *refused);
  }
  std::string body = "{";
  append_connections(&body, *std::get<const ClientMap*>(found));
  body += "}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

}  // namespace uringmq::net
