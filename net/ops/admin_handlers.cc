// Admin requests that read the store queue by queue (mqadmin topicStatus, consumerProgress,
// resetOffsetByTime; the dashboard's and the exporter's views) and the client listings.
// Java references: AdminBrokerProcessor (getTopicStatsInfo, getConsumeStats, resetOffset,
// getConsumerConnectionList, getProducerConnectionList), Broker2Client.resetOffset, the
// NameServer's getAllTopicListFromNameserver (rocketmq-all-4.9.8).
// Each request that needs figures from the store is one BrokerOp of kind admin that asks the
// store one question at a time (a queue's range, a record's store time, a group's offset, a
// search by time, a commit) and answers once every queue is known: one op and at most one
// record buffer per request, whatever the number of queues.

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "engine/log/message_codec.h"
#include "net/common/json.h"
#include "net/common/log.h"
#include "net/ops/admin_handlers.h"
#include "net/remoting/handler_limits.h"
#include "net/remoting/header_fields.h"
#include "net/server/broker_parts.h"
#include "net/server/broker_reactor.h"

namespace uringmq::net {
namespace {

namespace rc = response_code;
namespace req = request_code;
using Step = AdminQuery::Step;
using What = AdminQuery::What;

constexpr int32_t kConsumerNotOnline = 206;  // ResponseCode.CONSUMER_NOT_ONLINE
// Queues one admin request may ask about (a group's topics times their queues): past it the
// request is refused, naming the limit, rather than holding an unbounded list.
constexpr size_t kMaxAdminQueues = 65536;

int64_t ms_value(QueueOffset o) {
  return o.value;
}

// The step after `done` for this query and queue, skipping those that do not apply.
Step next_step(const AdminQuery& q, const AdminQueue& queue, Step done) {
  switch (q.what) {
    case What::topic_stats:
      if (done == Step::queue_range && queue.max_offset > queue.min_offset) {
        return Step::last_record;
      }
      return Step::done;
    case What::consume_stats:
      if (done == Step::queue_range) return Step::consumer_offset;
      if (done == Step::consumer_offset && queue.consumer_offset - 1 >= queue.min_offset &&
          queue.consumer_offset - 1 < queue.max_offset) {
        return Step::last_record;
      }
      return Step::done;
    case What::reset_offset:
      if (done == Step::queue_range) {
        return q.timestamp_ms < 0 ? Step::consumer_offset : Step::search;
      }
      if (done == Step::search) return Step::consumer_offset;
      if (done == Step::consumer_offset) return Step::commit;
      return Step::done;
  }
  return Step::done;
}

void append_connections(std::string* out,
                        const std::map<std::string, ClientInfo, std::less<>>& clients) {
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
                              const AdminQueue& queue) {
  *out += "{\"brokerName\":";
  append_json_string(out, broker_name);
  *out += ",\"queueId\":" + std::to_string(queue.queue_id) + ",\"topic\":";
  append_json_string(out, queue.topic);
  *out += "}";
}

// ---- the chain of store queries ----

void AdminHandlers::start_admin(uint32_t conn, const RemotingCommand& request,
                                std::unique_ptr<AdminQuery> query) {
  const uint32_t index = new_op(BrokerOp::Kind::admin, conn, request);
  BrokerOp& op = calls_.op(index);
  op.admin = std::move(query);
  if (op.admin->queues.empty()) {
    finish_admin(op);
    return calls_.end(index);
  }
  post_or_fail(index, post_admin_step(index));
}

io::Status AdminHandlers::post_admin_step(uint32_t index) {
  BrokerOp& op = calls_.op(index);
  AdminQuery& q = *op.admin;
  AdminQueue& queue = q.queues[q.next];
  switch (q.step) {
    case Step::queue_range:
      return calls_.session().query_queue_async(queue.topic, queue.queue_id, index, op.shard);
    case Step::last_record: {
      const int64_t at =
          q.what == What::topic_stats ? queue.max_offset - 1 : queue.consumer_offset - 1;
      if (op.data.size() < largest_pull_bytes()) op.data.resize(largest_pull_bytes());
      calls_.reserve(index, op.data.size());
      op.pull =
          PullRequest{queue.topic, queue.queue_id, QueueOffset{at}, 1, {}, nullptr, op.data, 0};
      return calls_.session().pull_async(op.pull, index, op.shard);
    }
    case Step::consumer_offset:
      return calls_.session().query_offset_async(q.group, queue.topic, queue.queue_id, index,
                                                 op.shard);
    case Step::search:
      return calls_.session().search_offset_async(queue.topic, queue.queue_id, q.timestamp_ms,
                                                  index, op.shard);
    case Step::commit:
      return calls_.session().commit_offset_async(q.group, queue.topic, queue.queue_id,
                                                  QueueOffset{queue.reset_offset}, index, op.shard);
    case Step::done:
      break;
  }
  return io::Status::error(io::Code::invalid_argument, "no admin step to post");
}

bool AdminHandlers::complete_admin(uint32_t index, const Completion& c) {
  BrokerOp& op = calls_.op(index);
  if (!calls_.caller_alive(op)) return true;
  AdminQuery& q = *op.admin;
  AdminQueue& queue = q.queues[q.next];
  if (c.code != io::Code::ok && q.step != Step::last_record) {
    reply_code(op.ticket.conn, request_of(op.ticket), query_error_code(c.code),
               "the store answered " + std::string(io::code_name(c.code)) + " for " + queue.topic +
                   " queue " + std::to_string(queue.queue_id));
    return true;
  }
  switch (q.step) {
    case Step::queue_range:
      queue.min_offset = ms_value(c.min_offset);
      queue.max_offset = ms_value(c.max_offset);
      break;
    case Step::last_record:
      if (c.code == io::Code::ok && c.pull_status == PullStatus::found && c.size_bytes > 0) {
        queue.timestamp_ms =
            engine::record_store_timestamp_ms(std::span(op.data).first(c.size_bytes));
      }
      break;
    case Step::consumer_offset: {
      queue.consumer_offset = ms_value(c.queue_offset);
      if (q.what != What::reset_offset) break;
      const int64_t target = q.timestamp_ms < 0 ? queue.max_offset : queue.search_offset;
      // Java: forced, or the time's offset is behind the group's: move there; else stay.
      queue.reset_offset =
          q.force || target < queue.consumer_offset ? target : queue.consumer_offset;
      break;
    }
    case Step::search:
      queue.search_offset = ms_value(c.queue_offset);
      break;
    case Step::commit:
    case Step::done:
      break;
  }
  q.step = next_step(q, queue, q.step);
  while (q.step == Step::done) {
    if (++q.next == q.queues.size()) {
      finish_admin(op);
      return true;
    }
    q.step = Step::queue_range;
  }
  const io::Status posted = post_admin_step(index);
  if (posted.is_ok()) return false;
  reply_code(op.ticket.conn, request_of(op.ticket), query_error_code(posted.code()),
             posted.message());
  return true;
}

void AdminHandlers::finish_admin(BrokerOp& op) {
  if (!calls_.caller_alive(op)) return;
  const AdminQuery& q = *op.admin;
  std::string body = q.what == What::consume_stats ? "{\"consumeTps\":0.0,\"offsetTable\":{"
                                                   : "{\"offsetTable\":{";
  bool first = true;
  for (const AdminQueue& queue : q.queues) {
    if (!first) body += ',';
    first = false;
    append_message_queue_key(&body, broker_name_of(op.shard), queue);
    switch (q.what) {
      case What::topic_stats:
        body += ":{\"lastUpdateTimestamp\":" + std::to_string(queue.timestamp_ms) +
                ",\"maxOffset\":" + std::to_string(queue.max_offset) +
                ",\"minOffset\":" + std::to_string(queue.min_offset) + "}";
        break;
      case What::consume_stats:
        body +=
            ":{\"brokerOffset\":" + std::to_string(std::max<int64_t>(queue.max_offset, 0)) +
            ",\"consumerOffset\":" + std::to_string(std::max<int64_t>(queue.consumer_offset, 0)) +
            ",\"lastTimestamp\":" + std::to_string(queue.timestamp_ms) + "}";
        break;
      case What::reset_offset:
        body += ":" + std::to_string(queue.reset_offset);
        break;
    }
  }
  body += "}}";
  if (q.what == What::reset_offset) send_reset_to_clients(q, body);
  reply(op.ticket.conn, make_response(request_of(op.ticket), rc::kSuccess),
        std::as_bytes(std::span(body)));
}

// RESET_CONSUMER_CLIENT_OFFSET, oneway, to every online member of the group (Broker2Client):
// the 4.x client drops its queues' pulled messages and takes the offsets in the body.
void AdminHandlers::send_reset_to_clients(const AdminQuery& q, const std::string& body) {
  const ConsumerGroupInfo* group = clients_.consumer(q.group);
  if (group == nullptr) return;
  RemotingCommand notice;
  notice.code = req::kResetConsumerClientOffset;
  notice.flag = kFlagOneway;
  notice.opaque = static_cast<int32_t>(next_request_opaque_++ & 0x7FFFFFFF);
  notice.set_ext("topic", q.topic);
  notice.set_ext("group", q.group);
  notice.set_ext("timestamp", std::to_string(q.timestamp_ms));
  notice.set_ext("isForce", q.force ? "true" : "false");
  std::string frame;
  encode_frame(notice, std::as_bytes(std::span(body)), &frame);
  for (const auto& [client, info] : group->clients) {
    const ConnectionRef& ref = info.connection;
    if (ref.index >= conns_.size()) continue;
    Connection& conn = conns_[ref.index];
    if (!conn.open || conn.closing || conn.generation != ref.generation) continue;
    if (output_bytes(conn) + frame.size() > kConnectionOutputMaxBytes) {
      log_warn("no RESET_CONSUMER_CLIENT_OFFSET to " + client + " of group " + q.group +
               ": its connection's output is full (the committed offsets were reset)");
      continue;
    }
    conn.out_pending += frame;
    account(ref.index);
  }
}

// ---- GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPIC_STATS_INFO, GET_CONSUME_STATS ----

void AdminHandlers::handle_topic_list(uint32_t conn, const RemotingCommand& request) {
  std::set<std::string, std::less<>> topics;
  for (const auto& [name, config] : topics_.table().table()) topics.insert(name);
  // Java lists a group's retry topic once the group heartbeats (it creates its config then).
  for (const std::string& group : clients_.known_groups()) {
    topics.insert(std::string(kRetryPrefix) + group);
  }
  remote_brokers_.collect_topics(&topics);  // brokers registered here (a cluster)
  const std::string body = json_name_list("topicList", topics);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

// QUERY_TOPIC_CONSUME_BY_WHO (mqadmin queryMsgById's message tracks): the groups that
// subscribe to the topic or committed offsets in it.
void AdminHandlers::handle_consumed_by(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  if (topic == nullptr) {
    return reply_code(conn, request, rc::kSystemError, "QUERY_TOPIC_CONSUME_BY_WHO needs topic");
  }
  std::vector<std::string> groups;
  for (const std::string& group : clients_.known_groups()) {
    if (clients_.topics_of(group).contains(*topic)) groups.push_back(group);
  }
  const std::string body = json_name_list("groupList", groups);
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

void AdminHandlers::handle_topic_stats(uint32_t conn, const RemotingCommand& request) {
  const std::string* topic = request.ext("topic");
  const std::optional<TopicShape> shape =
      topic != nullptr && !is_internal_topic(*topic) ? topics_.shape(*topic) : std::nullopt;
  if (!shape ||
      (!shape->configured && !topic->starts_with(kRetryPrefix) && !topic->starts_with("%DLQ%"))) {
    return reply_code(conn, request, rc::kTopicNotExist,
                      "topic[" + (topic ? *topic : std::string()) + "] not exist");
  }
  auto q = std::make_unique<AdminQuery>();
  q->what = What::topic_stats;
  q->topic = *topic;
  for (int32_t i = 0; i < shape->write_queue_nums; ++i) q->queues.push_back({*topic, i});
  start_admin(conn, request, std::move(q));
}

void AdminHandlers::handle_consume_stats(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("consumerGroup");
  if (group == nullptr || group->empty()) {
    return reply_code(conn, request, rc::kSystemError, "GET_CONSUME_STATS needs consumerGroup");
  }
  const std::string* topic = request.ext("topic");
  std::set<std::string, std::less<>> topics;
  if (topic != nullptr && !topic->empty()) {
    topics.insert(*topic);
  } else {
    topics = clients_.topics_of(*group);
  }
  const ConsumerGroupInfo* online = clients_.consumer(*group);
  auto q = std::make_unique<AdminQuery>();
  q->what = What::consume_stats;
  q->group = *group;
  for (const std::string& t : topics) {
    const std::optional<TopicShape> shape = is_internal_topic(t) ? std::nullopt : topics_.shape(t);
    if (!shape) continue;
    // Java: an online group that does not subscribe to the topic has no figures for it.
    if (online != nullptr && !online->subscriptions.empty() && !online->subscriptions.contains(t)) {
      continue;
    }
    for (int32_t i = 0; i < shape->read_queue_nums; ++i) q->queues.push_back({t, i});
    if (q->queues.size() > kMaxAdminQueues) {
      return reply_code(conn, request, rc::kSystemError,
                        "GET_CONSUME_STATS of group " + *group + " covers over " +
                            std::to_string(kMaxAdminQueues) + " queues: ask per topic");
    }
  }
  start_admin(conn, request, std::move(q));
}

// ---- INVOKE_BROKER_TO_RESET_OFFSET ----

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
  const std::optional<TopicShape> shape =
      is_internal_topic(*topic) ? std::nullopt : topics_.shape(*topic);
  if (!shape) {
    return reply_code(
        conn, request, rc::kSystemError,
        "[reset-offset] reset offset failed, no topic in this broker. topic=" + *topic);
  }
  if (clients_.consumer(*group) == nullptr) {
    // Java's answers: a group it never heard of, and one that is known but offline (mqadmin
    // then resets through GET_CONSUME_STATS, SEARCH_OFFSET_BY_TIMESTAMP and commits).
    if (!clients_.known_groups().contains(*group)) {
      return reply_code(conn, request, rc::kSystemError,
                        "THe consumer group <" + *group + "> not exist");
    }
    return reply_code(conn, request, kConsumerNotOnline,
                      "Consumer not online, so can not reset offset, Group: " + *group +
                          " Topic: " + *topic + " Timestamp: " + std::to_string(*timestamp));
  }
  const std::string* force = request.ext("isForce");
  auto q = std::make_unique<AdminQuery>();
  q->what = What::reset_offset;
  q->group = *group;
  q->topic = *topic;
  q->timestamp_ms = *timestamp;
  q->force = force == nullptr || *force != "false";
  for (int32_t i = 0; i < shape->write_queue_nums; ++i) q->queues.push_back({*topic, i});
  start_admin(conn, request, std::move(q));
}

// ---- GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST ----

void AdminHandlers::handle_consumer_connections(uint32_t conn, const RemotingCommand& request) {
  const std::string* group = request.ext("consumerGroup");
  const ConsumerGroupInfo* info = group != nullptr ? clients_.consumer(*group) : nullptr;
  if (info == nullptr) {
    return reply_code(conn, request, kConsumerNotOnline,
                      "the consumer group[" + (group ? *group : std::string()) + "] not online");
  }
  std::string body = "{";
  append_connections(&body, info->clients);
  body += ",\"consumeFromWhere\":";
  append_json_string(&body, info->consume_from_where);
  body += ",\"consumeType\":";
  append_json_string(&body, info->consume_type);
  body += ",\"messageModel\":";
  append_json_string(&body, info->message_model);
  body += ",\"subscriptionTable\":{";
  bool first = true;
  for (const auto& [topic, subscription] : info->subscriptions) {
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
  const auto* producers = group != nullptr ? clients_.producers(*group) : nullptr;
  if (producers == nullptr) {
    return reply_code(conn, request, rc::kSystemError,
                      "the producer group[" + (group ? *group : std::string()) + "] not exist");
  }
  std::string body = "{";
  append_connections(&body, *producers);
  body += "}";
  reply(conn, make_response(request, rc::kSuccess), std::as_bytes(std::span(body)));
}

}  // namespace uringmq::net

namespace uringmq::net {

void AdminHandlers::add_java_runtime_figures(
    uint32_t shard, const StoreStats& stats,
    const std::function<void(std::string_view, const std::string&)>& add) {
  const int64_t now = mono_ms_;
  TpsSample& t = tps_[shard];
  const uint64_t pulled = messages_pulled_[shard];
  if (t.ms == 0 || now - t.ms >= 1000) {
    if (t.ms != 0) {
      const double seconds = static_cast<double>(now - t.ms) / 1000.0;
      t.put_tps = static_cast<double>(stats.appends - t.put) / seconds;
      t.got_tps = static_cast<double>(pulled - t.got) / seconds;
    }
    t.ms = now;
    t.put = stats.appends;
    t.got = pulled;
  }
  char rate[64];
  std::snprintf(rate, sizeof(rate), "%.1f %.1f %.1f", t.put_tps, t.put_tps, t.put_tps);
  add("putTps", rate);
  std::snprintf(rate, sizeof(rate), "%.1f %.1f %.1f", t.got_tps, t.got_tps, t.got_tps);
  add("getTransferedTps", rate);
  // Totals since start (the broker keeps no per-day figures): "today" is since start.
  add("msgPutTotalTodayNow", std::to_string(stats.appends));
  add("msgGetTotalTodayNow", std::to_string(pulled));
  add("msgPutTotalTodayMorning", "0");
  add("msgGetTotalTodayMorning", "0");
  add("msgPutTotalYesterdayMorning", "0");
  add("msgGetTotalYesterdayMorning", "0");
  // No thread pools: requests never wait in a queue before a handler.
  add("sendThreadPoolQueueHeadWaitTimeMills", "0");
  add("pullThreadPoolQueueHeadWaitTimeMills", "0");
  add("sendThreadPoolQueueSize", "0");
  add("pullThreadPoolQueueSize", "0");
  add("pageCacheLockTimeMills", "0");     // no lock around appends
  add("earliestMessageTimeStamp", "-1");  // as Java's until it has looked
  struct statvfs fs {};
  double used = 0;
  if (::statvfs(config_.store.data_dir.c_str(), &fs) == 0 && fs.f_blocks > 0) {
    used = 1.0 - static_cast<double>(fs.f_bavail) / static_cast<double>(fs.f_blocks);
  }
  std::snprintf(rate, sizeof(rate), "%.2f", used);
  add("commitLogDiskRatio", rate);
}

}  // namespace uringmq::net
