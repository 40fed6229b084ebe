// uringmq-ctl's admin commands (see ctl_commands.h): topic, group, message and broker config,
// with the requests mqadmin sends (RocketMQ 4.9.8's MQClientAPIImpl), so they work against a
// Java broker as against uringmq. Where a broker does not serve a request and an older one
// does the same job, the older way is taken: 206 topic list -> 21 topic config; 202 topic stats
// -> 31 + 30 per queue; 208 consume stats -> 30 + 14 per queue; 222 reset by time -> 29 + 15 per
// queue (as mqadmin's resetOffsetByTimestampOld, also when no consumer of the group is online).

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "tools/ctl_client.h"
#include "tools/ctl_commands.h"
#include "tools/ctl_offline.h"

namespace uringmq::ctl {

namespace rq = net::request_code;
namespace rc = net::response_code;

namespace {

std::unique_ptr<CtlClient> connect_broker(const Target& t) {
  return CtlClient::connect(t.addr);
}
std::unique_ptr<CtlClient> connect_namesrv(const Target& t) {
  return CtlClient::connect(t.namesrv_or_addr());
}

// A map of MessageQueue -> object (202, 208) as rows sorted by topic, broker, queue.
std::map<QueueKey, const net::JsonValue*> queue_rows(const net::JsonValue& json) {
  std::map<QueueKey, const net::JsonValue*> rows;
  const net::JsonValue* table = json.find("offsetTable");
  if (table == nullptr || !table->is_object()) return rows;
  for (const auto& [key, value] : table->members()) {
    std::optional<QueueKey> q = parse_queue_key(key);
    if (q) rows[*q] = &value;
  }
  return rows;
}

long long ll(int64_t v) {
  return static_cast<long long>(v);
}

}  // namespace

namespace {

// Topic names: from GET_ALL_TOPIC_LIST_FROM_NAMESERVER's {"topicList":[...]}, or from a broker
// without it, GET_ALL_TOPIC_CONFIG's {"topicConfigTable":{T:{...}}}.
std::optional<std::vector<std::string>> topic_names(CtlClient& client) {
  auto r = client.call(rq::kGetAllTopicListFromNameserver, {});
  if (!r) return std::nullopt;
  const bool old = r->command.code == rc::kRequestCodeNotSupported;
  if (old) r = client.call(rq::kGetAllTopicConfig, {});
  if (!r) return std::nullopt;
  if (r->command.code != 0) {
    response_error(old ? "GET_ALL_TOPIC_CONFIG" : "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", *r);
    return std::nullopt;
  }
  std::optional<net::JsonValue> json = parse_answer("topic list", r->body);
  if (!json) return std::nullopt;
  const net::JsonValue* list = json->find(old ? "topicConfigTable" : "topicList");
  std::vector<std::string> topics;
  if (list != nullptr && list->is_array()) {
    for (const net::JsonValue& t : list->items()) {
      if (t.is_string()) topics.push_back(t.text());
    }
  } else if (list != nullptr && list->is_object()) {
    for (const auto& [name, config] : list->members()) topics.push_back(name);
  } else {
    fail("the topic list has no \"topicList\" (or \"topicConfigTable\")");
    return std::nullopt;
  }
  std::sort(topics.begin(), topics.end());
  return topics;
}

}  // namespace

int run_topic_list(const TopicOptions& o) {
  std::unique_ptr<CtlClient> client = connect_namesrv(o.target);
  if (!client) return kExitFailure;
  std::optional<std::vector<std::string>> topics = topic_names(*client);
  if (!topics) return kExitFailure;
  for (const std::string& t : *topics) std::printf("%s\n", t.c_str());
  return kExitOk;
}

int run_topic_create(const TopicOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  Fields fields = {{"topic", o.topic},
                   {"defaultTopic", "TBW102"},
                   {"readQueueNums", std::to_string(o.read_queues)},
                   {"writeQueueNums", std::to_string(o.write_queues)},
                   {"perm", std::to_string(o.perm)},
                   {"topicFilterType", "SINGLE_TAG"},
                   {"topicSysFlag", "0"},
                   {"order", o.order ? "true" : "false"}};
  std::string attributes;
  for (const std::string& a : o.attributes) attributes += (attributes.empty() ? "" : ",") + a;
  if (!attributes.empty()) fields.emplace_back("attributes", attributes);
  auto r = client->call_ok("UPDATE_AND_CREATE_TOPIC " + o.topic, rq::kUpdateAndCreateTopic,
                           std::move(fields));
  if (!r) return kExitFailure;
  std::printf("topic %s: %d read / %d write queues, perm %d%s%s%s, on %s\n", o.topic.c_str(),
              o.read_queues, o.write_queues, o.perm, o.order ? ", ordered" : "",
              attributes.empty() ? "" : ", attributes ", attributes.c_str(),
              client->addr().c_str());
  return kExitOk;
}

int run_topic_delete(const TopicOptions& o) {
  std::unique_ptr<CtlClient> broker = connect_broker(o.target);
  if (!broker) return kExitFailure;
  if (!broker->call_ok("DELETE_TOPIC_IN_BROKER " + o.topic, rq::kDeleteTopicInBroker,
                       {{"topic", o.topic}})) {
    return kExitFailure;
  }
  std::unique_ptr<CtlClient> namesrv = connect_namesrv(o.target);
  if (!namesrv) return kExitFailure;
  if (!namesrv->call_ok("DELETE_TOPIC_IN_NAMESRV " + o.topic, rq::kDeleteTopicInNamesrv,
                        {{"topic", o.topic}})) {
    return kExitFailure;
  }
  std::printf("topic %s deleted\n", o.topic.c_str());
  return kExitOk;
}

namespace {

// The items of an array member, none when it is absent or not an array.
const std::vector<net::JsonValue>& items_of(const net::JsonValue& object, std::string_view key) {
  static const std::vector<net::JsonValue> kNone;
  const net::JsonValue* v = object.find(key);
  return v != nullptr && v->is_array() ? v->items() : kNone;
}

std::string string_member(const net::JsonValue& object, std::string_view key) {
  const net::JsonValue* v = object.is_object() ? object.find(key) : nullptr;
  return v != nullptr && v->is_string() ? v->text() : std::string("?");
}

// The master address (brokerAddrs "0") of `broker` in a route's brokerDatas.
std::string master_addr(const net::JsonValue& route, const std::string& broker) {
  for (const net::JsonValue& b : items_of(route, "brokerDatas")) {
    if (!b.is_object() || string_member(b, "brokerName") != broker) continue;
    const net::JsonValue* addrs = b.find("brokerAddrs");
    if (addrs != nullptr && addrs->is_object()) return string_member(*addrs, "0");
  }
  return "?";
}

}  // namespace

int run_topic_route(const TopicOptions& o) {
  std::unique_ptr<CtlClient> client = connect_namesrv(o.target);
  if (!client) return kExitFailure;
  auto r = client->call_ok("GET_ROUTEINFO_BY_TOPIC " + o.topic, rq::kGetRouteInfoByTopic,
                           {{"topic", o.topic}});
  if (!r) return kExitFailure;
  std::optional<net::JsonValue> json = parse_answer("route of " + o.topic, r->body);
  if (!json || !json->is_object()) return json ? fail("route is not a JSON object") : kExitFailure;
  std::printf("%-24s %-6s %-6s %-5s %s\n", "#broker", "#read", "#write", "#perm", "#addr");
  for (const net::JsonValue& d : items_of(*json, "queueDatas")) {
    if (!d.is_object()) continue;
    const std::string broker = string_member(d, "brokerName");
    std::printf("%-24s %-6lld %-6lld %-5lld %s\n", broker.c_str(),
                ll(member_int(d, "readQueueNums")), ll(member_int(d, "writeQueueNums")),
                ll(member_int(d, "perm")), master_addr(*json, broker).c_str());
  }
  return kExitOk;
}

namespace {

// Per-queue figures of one topic, as 202 and 208 answer them (a map of MessageQueue -> object),
// or as an older broker's per-queue requests give them.
struct QueueRow {
  int64_t min_offset = 0;        // topic status
  int64_t max_offset = 0;        // topic status: maxOffset; group lag: brokerOffset
  int64_t consumer_offset = -1;  // group lag: the committed offset; -1: none
  int64_t last_ms = 0;           // topic status: lastUpdateTimestamp; 0: never
};
using QueueRows = std::map<QueueKey, QueueRow>;

// For a broker without the request that answers every queue at once: `fill(q, row)` asks for
// queue q's figures (false after printing an error), over the queues of the topic's route.
template <typename Fill>
std::optional<QueueRows> rows_by_queue(CtlClient& client, const Target& t, const std::string& topic,
                                       Fill fill) {
  std::optional<int32_t> n = route_queue_count(t, client, topic);
  if (!n) return std::nullopt;
  QueueRows rows;
  for (int32_t q = 0; q < *n; q++) {
    QueueRow row;
    if (!fill(q, row)) return std::nullopt;
    rows[QueueKey{topic, client.addr(), q}] = row;
  }
  return rows;
}

void print_status(const QueueRows& rows) {
  std::printf("%-24s %-6s %16s %16s  %s\n", "#broker", "#queue", "#minOffset", "#maxOffset",
              "#lastUpdated");
  for (const auto& [q, s] : rows) {
    std::printf("%-24s %-6d %16lld %16lld  %s\n", q.broker.c_str(), q.queue, ll(s.min_offset),
                ll(s.max_offset), s.last_ms > 0 ? format_time_ms(s.last_ms).c_str() : "-");
  }
}

}  // namespace

int run_topic_status(const TopicOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  auto r = client->call(rq::kGetTopicStatsInfo, {{"topic", o.topic}});
  if (!r) return kExitFailure;
  std::optional<QueueRows> rows;
  if (r->command.code == rc::kRequestCodeNotSupported) {
    rows = rows_by_queue(*client, o.target, o.topic, [&](int32_t q, QueueRow& row) {
      std::optional<int64_t> min = client->queue_offset(rq::kGetMinOffset, o.topic, q);
      std::optional<int64_t> max = client->queue_offset(rq::kGetMaxOffset, o.topic, q);
      row.min_offset = min.value_or(0);
      row.max_offset = max.value_or(0);
      return min && max;
    });
  } else if (r->command.code != 0) {
    return response_error("GET_TOPIC_STATS_INFO " + o.topic, *r);
  } else if (std::optional<net::JsonValue> json = parse_answer("topic status", r->body)) {
    rows.emplace();
    for (const auto& [q, v] : queue_rows(*json)) {
      (*rows)[q] = QueueRow{member_int(*v, "minOffset"), member_int(*v, "maxOffset"), -1,
                            member_int(*v, "lastUpdateTimestamp")};
    }
  }
  if (!rows) return kExitFailure;
  print_status(*rows);
  return kExitOk;
}

int run_group_list(const GroupOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  auto r =
      client->call_ok("GET_ALL_SUBSCRIPTIONGROUP_CONFIG", rq::kGetAllSubscriptionGroupConfig, {});
  if (!r) return kExitFailure;
  std::optional<net::JsonValue> json = parse_answer("subscription groups", r->body);
  if (!json) return kExitFailure;
  const net::JsonValue* table = json->find("subscriptionGroupTable");
  if (table == nullptr || !table->is_object()) {
    return fail("subscription groups: no \"subscriptionGroupTable\" object");
  }
  std::map<std::string, const net::JsonValue*> groups;
  for (const auto& [name, config] : table->members()) groups[name] = &config;
  std::printf("%-40s %-8s %-10s %-12s %-14s %s\n", "#group", "#consume", "#broadcast",
              "#retryQueues", "#retryMaxTimes", "#orderly");
  for (const auto& [name, c] : groups) {
    auto flag = [&](std::string_view key) {
      const net::JsonValue* v = c->find(key);
      return v != nullptr && v->is_bool() && v->as_bool() ? "true" : "false";
    };
    std::printf("%-40s %-8s %-10s %-12lld %-14lld %s\n", name.c_str(), flag("consumeEnable"),
                flag("consumeBroadcastEnable"), ll(member_int(*c, "retryQueueNums")),
                ll(member_int(*c, "retryMaxTimes")), flag("consumeMessageOrderly"));
  }
  return kExitOk;
}

// As mqadmin updateSubGroup: the whole SubscriptionGroupConfig, RocketMQ's defaults for what
// the options leave; consumeMessageOrderly is RocketMQ 5's (a 4.9 broker ignores it).
int run_group_create(const GroupOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  auto flag = [](bool b) { return b ? "true" : "false"; };
  std::string body = "{\"groupName\":";
  net::append_json_string(&body, o.group);
  body += std::string(",\"consumeEnable\":") + flag(o.consume_enable) +
          ",\"consumeFromMinEnable\":true,\"consumeBroadcastEnable\":" + flag(o.broadcast) +
          ",\"retryQueueNums\":" + std::to_string(o.retry_queues) +
          ",\"retryMaxTimes\":" + std::to_string(o.retry_max_times) +
          ",\"brokerId\":0,\"whichBrokerWhenConsumeSlowly\":1" +
          ",\"notifyConsumerIdsChangedEnable\":true,\"consumeMessageOrderly\":" + flag(o.orderly) +
          "}";
  if (!client->call_ok("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP " + o.group,
                       rq::kUpdateAndCreateSubscriptionGroup, {}, body)) {
    return kExitFailure;
  }
  std::printf("group %s: consume %s, broadcast %s, %d retry queues, retryMaxTimes %d%s, on %s\n",
              o.group.c_str(), flag(o.consume_enable), flag(o.broadcast), o.retry_queues,
              o.retry_max_times, o.orderly ? ", orderly" : "", client->addr().c_str());
  return kExitOk;
}

namespace {

void print_lag(const QueueRows& rows) {
  std::printf("%-32s %-24s %-6s %16s %16s %10s\n", "#topic", "#broker", "#queue", "#brokerOffset",
              "#consumerOffset", "#diff");
  int64_t total = 0;
  for (const auto& [q, row] : rows) {
    const int64_t diff = row.max_offset - std::max<int64_t>(row.consumer_offset, 0);
    total += diff;
    std::printf("%-32s %-24s %-6d %16lld %16lld %10lld\n", q.topic.c_str(), q.broker.c_str(),
                q.queue, ll(row.max_offset), ll(row.consumer_offset), ll(diff));
  }
  std::printf("\nDiff Total: %lld\n", ll(total));
}

// A broker without GET_CONSUME_STATS: each queue's max offset and committed offset.
std::optional<QueueRows> lag_by_queue(CtlClient& client, const GroupOptions& o) {
  return rows_by_queue(client, o.target, o.topic, [&](int32_t q, QueueRow& row) {
    std::optional<int64_t> max = client.queue_offset(rq::kGetMaxOffset, o.topic, q);
    if (!max) return false;
    auto r = client.call(
        rq::kQueryConsumerOffset,
        {{"consumerGroup", o.group}, {"topic", o.topic}, {"queueId", std::to_string(q)}});
    if (!r) return false;
    row.max_offset = *max;
    row.consumer_offset = r->command.code == 0 ? ext_int(*r, "offset").value_or(-1) : -1;
    return true;
  });
}

}  // namespace

int run_group_lag(const GroupOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  Fields fields = {{"consumerGroup", o.group}};
  if (!o.topic.empty()) fields.emplace_back("topic", o.topic);
  auto r = client->call(rq::kGetConsumeStats, fields);
  if (!r) return kExitFailure;
  std::optional<QueueRows> rows;
  if (r->command.code == rc::kRequestCodeNotSupported && !o.topic.empty()) {
    rows = lag_by_queue(*client, o);
  } else if (r->command.code != 0) {
    return response_error("GET_CONSUME_STATS " + o.group, *r);
  } else if (std::optional<net::JsonValue> json = parse_answer("consume stats", r->body)) {
    rows.emplace();
    for (const auto& [q, v] : queue_rows(*json)) {
      (*rows)[q] = QueueRow{0, member_int(*v, "brokerOffset"), member_int(*v, "consumerOffset"),
                            member_int(*v, "lastTimestamp")};
    }
  }
  if (!rows) return kExitFailure;
  print_lag(*rows);
  return kExitOk;
}

namespace {

void print_reset(const std::map<QueueKey, int64_t>& offsets) {
  std::printf("%-32s %-24s %-6s %16s\n", "#topic", "#broker", "#queue", "#offset");
  for (const auto& [q, offset] : offsets) {
    std::printf("%-32s %-24s %-6d %16lld\n", q.topic.c_str(), q.broker.c_str(), q.queue,
                ll(offset));
  }
}

// Commits `offset` for one queue (UPDATE_CONSUMER_OFFSET).
bool commit_offset(CtlClient& client, const GroupOptions& o, int32_t queue, int64_t offset) {
  return client
      .call_ok("UPDATE_CONSUMER_OFFSET", rq::kUpdateConsumerOffset,
               {{"topic", o.topic},
                {"consumerGroup", o.group},
                {"queueId", std::to_string(queue)},
                {"commitOffset", std::to_string(offset)}})
      .has_value();
}

// Reset by time without INVOKE_BROKER_TO_RESET_OFFSET (or with no consumer online): each
// queue's offset at the time (SEARCH_OFFSET_BY_TIMESTAMP), committed; without --force only
// where it moves the committed offset back.
int reset_by_queue(CtlClient& client, const GroupOptions& o, int64_t time_ms) {
  std::optional<int32_t> n = route_queue_count(o.target, client, o.topic);
  if (!n) return kExitFailure;
  std::map<QueueKey, int64_t> done;
  for (int32_t q = 0; q < *n; q++) {
    auto r = client.call_ok("SEARCH_OFFSET_BY_TIMESTAMP", rq::kSearchOffsetByTimestamp,
                            {{"topic", o.topic},
                             {"queueId", std::to_string(q)},
                             {"timestamp", std::to_string(time_ms)}});
    if (!r) return kExitFailure;
    std::optional<int64_t> offset = ext_int(*r, "offset");
    if (!offset) return fail("SEARCH_OFFSET_BY_TIMESTAMP answered no offset");
    if (!o.force) {
      auto c = client.call(
          rq::kQueryConsumerOffset,
          {{"consumerGroup", o.group}, {"topic", o.topic}, {"queueId", std::to_string(q)}});
      if (!c) return kExitFailure;
      std::optional<int64_t> now = c->command.code == 0 ? ext_int(*c, "offset") : std::nullopt;
      if (now && *now <= *offset) continue;
    }
    if (!commit_offset(client, o, q, *offset)) return kExitFailure;
    done[QueueKey{o.topic, client.addr(), q}] = *offset;
  }
  print_reset(done);
  return kExitOk;
}

int reset_by_time(CtlClient& client, const GroupOptions& o) {
  std::optional<int64_t> time_ms = parse_time_ms(o.time);
  if (!time_ms) return usage_error("--time '" + o.time + "' is not ms, now or a UTC date");
  auto r = client.call(rq::kInvokeBrokerToResetOffset, {{"topic", o.topic},
                                                        {"group", o.group},
                                                        {"timestamp", std::to_string(*time_ms)},
                                                        {"isForce", o.force ? "true" : "false"}});
  if (!r) return kExitFailure;
  if (r->command.code == rc::kConsumerNotOnline ||
      r->command.code == rc::kRequestCodeNotSupported) {
    return reset_by_queue(client, o, *time_ms);
  }
  if (r->command.code != 0) return response_error("INVOKE_BROKER_TO_RESET_OFFSET", *r);
  std::optional<net::JsonValue> json = parse_answer("reset offsets", r->body);
  if (!json) return kExitFailure;
  std::map<QueueKey, int64_t> offsets;
  const net::JsonValue* table = json->find("offsetTable");
  if (table != nullptr && table->is_object()) {
    for (const auto& [key, value] : table->members()) {
      std::optional<QueueKey> q = parse_queue_key(key);
      if (q && value.is_number()) offsets[*q] = value.as_int64().value_or(-1);
    }
  }
  print_reset(offsets);
  return kExitOk;
}

}  // namespace

int run_group_reset(const GroupOptions& o) {
  if (o.time.empty() == (o.offset < 0)) return usage_error("group reset needs --time or --offset");
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  if (!o.time.empty()) return reset_by_time(*client, o);
  std::vector<int32_t> queues;
  if (o.queue >= 0) {
    queues.push_back(o.queue);
  } else {
    std::optional<int32_t> n = route_queue_count(o.target, *client, o.topic);
    if (!n) return kExitFailure;
    for (int32_t q = 0; q < *n; q++) queues.push_back(q);
  }
  std::map<QueueKey, int64_t> done;
  for (int32_t q : queues) {
    if (!commit_offset(*client, o, q, o.offset)) return kExitFailure;
    done[QueueKey{o.topic, client->addr(), q}] = o.offset;
  }
  print_reset(done);
  return kExitOk;
}

namespace {

// The CommitLog offset in an offset msgId (RocketMQ's MessageDecoder: host, port, then the
// 8-byte offset, in hex: 32 digits for IPv4, 56 for IPv6); nullopt for any other id (a
// client's UNIQ_KEY).
std::optional<int64_t> offset_of_message_id(std::string_view id) {
  if (id.size() != 32 && id.size() != 56) return std::nullopt;
  uint64_t offset = 0;
  for (size_t i = 0; i < id.size(); i++) {
    const char c = id[i];
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return std::nullopt;
    if (i >= id.size() - 16) offset = offset << 4 | static_cast<uint64_t>(digit);
  }
  return static_cast<int64_t>(offset);
}

// QUERY_MESSAGE: records of `topic` by KEYS word, or by UNIQ_KEY when `unique`.
int query_messages(CtlClient& client, const MessageOptions& o, const std::string& key,
                   bool unique) {
  std::optional<int64_t> begin = parse_time_ms(o.begin);
  std::optional<int64_t> end = parse_time_ms(o.end);
  if (!begin || !end) return usage_error("--begin/--end must be ms, now or a UTC date");
  Fields fields = {{"topic", o.topic},
                   {"key", key},
                   {"maxNum", std::to_string(o.max)},
                   {"beginTimestamp", std::to_string(*begin)},
                   {"endTimestamp", std::to_string(*end)}};
  if (unique) fields.emplace_back("_UNIQUE_KEY_QUERY", "true");
  auto r = client.call(rq::kQueryMessage, fields);
  if (!r) return kExitFailure;
  if (r->command.code == rc::kQueryNotFound)
    return fail("no message of " + o.topic + " with " + key);
  if (r->command.code != 0) return response_error("QUERY_MESSAGE " + key, *r);
  return print_records(-1, r->body) > 0 ? kExitOk : fail("no message with " + key);
}

}  // namespace

int run_message_id(const MessageOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  if (std::optional<int64_t> offset = offset_of_message_id(o.id)) {
    auto r = client->call(rq::kViewMessageById, {{"offset", std::to_string(*offset)}});
    if (!r) return kExitFailure;
    if (r->command.code == 0 && print_records(-1, r->body) > 0) return kExitOk;
    if (o.topic.empty()) return response_error("VIEW_MESSAGE_BY_ID " + o.id, *r);
  }
  if (o.topic.empty()) return usage_error("a message id that is not an offset msgId needs --topic");
  return query_messages(*client, o, o.id, true);
}

int run_message_key(const MessageOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  return query_messages(*client, o, o.key, false);
}

int run_broker_config_get(const BrokerOptions& o) {
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  auto r = client->call_ok("GET_BROKER_CONFIG", rq::kGetBrokerConfig, {});
  if (!r) return kExitFailure;
  // A java.util.Properties text: key=value lines (Java's store() order is a hash's: sort).
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < r->body.size()) {
    size_t eol = r->body.find('\n', start);
    if (eol == std::string::npos) eol = r->body.size();
    std::string line = r->body.substr(start, eol - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] != '#') lines.push_back(std::move(line));
    start = eol + 1;
  }
  std::sort(lines.begin(), lines.end());
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  return kExitOk;
}

int run_broker_config_set(const BrokerOptions& o) {
  std::string body;
  for (const std::string& kv : o.settings) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || kv.find('\n') != std::string::npos) {
      return usage_error("'" + kv + "' is not key=value");
    }
    body += kv + "\n";
  }
  std::unique_ptr<CtlClient> client = connect_broker(o.target);
  if (!client) return kExitFailure;
  if (!client->call_ok("UPDATE_BROKER_CONFIG", rq::kUpdateBrokerConfig, {}, body)) {
    return kExitFailure;
  }
  for (const std::string& kv : o.settings) std::printf("set %s\n", kv.c_str());
  return kExitOk;
}

}  // namespace uringmq::ctl
