// uringmq-ctl online commands produce, consume and stats (see ctl_commands.h). Requests are
// built as a RocketMQ 4.x Java client builds them (SEND_MESSAGE_V2's short header names a..k,
// PULL_MESSAGE's full names), so what works here works for the real clients too.

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/common/json.h"
#include "net/remoting/remoting.h"
#include "tools/ctl_client.h"
#include "tools/ctl_commands.h"
#include "tools/ctl_offline.h"

namespace uringmq::ctl {

namespace rq = net::request_code;
namespace rc = net::response_code;

namespace {

// The message's properties: --tag, --keys, --delay-level, then each --property name=value.
std::optional<std::string> produce_properties(const ProduceOptions& o) {
  std::string properties;
  auto add = [&](std::string_view name, std::string_view value) {
    if (!value.empty()) engine::append_property(properties, name, value);
  };
  add(engine::kPropertyTags, o.tag);
  add(engine::kPropertyKeys, o.keys);
  if (o.delay_level > 0) add(engine::kPropertyDelayTimeLevel, std::to_string(o.delay_level));
  for (const std::string& kv : o.properties) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size() ||
        kv.find_first_of("\x01\x02") != std::string::npos) {
      usage_error("--property '" + kv + "' is not name=value");
      return std::nullopt;
    }
    add(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return properties;
}

}  // namespace

int run_produce(const ProduceOptions& o) {
  std::optional<std::string> properties = produce_properties(o);
  if (!properties) return kExitUsage;
  std::unique_ptr<CtlClient> client = CtlClient::connect(o.target.addr);
  if (!client) return kExitFailure;
  for (int64_t i = 0; i < o.count; i++) {
    auto r = client->call_ok("send", rq::kSendMessageV2,
                             {{"a", "uringmq-ctl"},
                              {"b", o.topic},
                              {"c", "TBW102"},
                              // The queues of a topic this send creates (min with
                              // TBW102's): the broker's default, or enough for --queue.
                              {"d", std::to_string(std::max<int64_t>(8, o.queue + 1))},
                              {"e", std::to_string(o.queue)},
                              {"f", "0"},
                              {"g", std::to_string(now_ms())},
                              {"h", "0"},
                              {"i", *properties},
                              {"j", "0"},
                              {"k", "false"}},
                             o.body);
    if (!r) return kExitFailure;
    const std::string* msg_id = r->command.ext("msgId");
    const std::string* queue_id = r->command.ext("queueId");
    const std::string* queue_offset = r->command.ext("queueOffset");
    std::printf("msgId=%s queueId=%s queueOffset=%s\n", msg_id ? msg_id->c_str() : "?",
                queue_id ? queue_id->c_str() : "?", queue_offset ? queue_offset->c_str() : "?");
  }
  return kExitOk;
}

namespace {

// Where consumption of one queue starts, per --from.
std::optional<int64_t> start_offset(CtlClient& client, const ConsumeOptions& o, int32_t queue) {
  if (o.from == "first") return client.queue_offset(rq::kGetMinOffset, o.topic, queue);
  if (o.from == "last") return client.queue_offset(rq::kGetMaxOffset, o.topic, queue);
  if (o.from == "committed") {
    auto r = client.call(
        rq::kQueryConsumerOffset,
        {{"consumerGroup", o.group}, {"topic", o.topic}, {"queueId", std::to_string(queue)}});
    if (!r) return std::nullopt;
    std::optional<int64_t> offset = ext_int(*r, "offset");
    if (r->command.code == 0 && offset && *offset >= 0) return offset;
    // Never committed (QUERY_NOT_FOUND 22): start from the queue's first message.
    return client.queue_offset(rq::kGetMinOffset, o.topic, queue);
  }
  return parse_int(o.from, 0, INT64_MAX);
}

}  // namespace

int64_t print_records(int32_t queue, const std::string& body) {
  engine::DecodeOptions options;
  options.require_record_crc = false;  // a RocketMQ broker's records have no __CRC32#
  options.limits.max_body_bytes = 64u << 20;
  std::span<const std::byte> bytes = net::as_bytes(body);
  int64_t n = 0;
  while (!bytes.empty()) {
    engine::DecodeResult r = engine::decode(bytes, options);
    if (r.outcome != engine::DecodeOutcome::ok) {
      std::fprintf(stderr, "uringmq-ctl: undecodable record in the answer: %s\n",
                   r.outcome == engine::DecodeOutcome::corrupt ? r.reason : "truncated");
      break;
    }
    const engine::MessageView& m = r.view;
    auto prop = [&](std::string_view name) {
      return std::string(engine::find_property(m.user_properties, name).value_or(""));
    };
    std::string msg_id = prop(engine::kPropertyUniqClientMessageIdKeyidx);
    if (msg_id.empty()) msg_id = engine::offset_message_id(m.store_host, m.physical_offset);
    std::printf(
        "queue=%d offset=%lld msgId=%s topic=%.*s tags=%s keys=%s reconsume=%d "
        "props=%s body=%s\n",
        queue >= 0 ? queue : static_cast<int>(m.queue_id), static_cast<long long>(m.queue_offset),
        msg_id.c_str(), static_cast<int>(m.topic.size()), m.topic.data(),
        prop(engine::kPropertyTags).c_str(), prop(engine::kPropertyKeys).c_str(), m.reconsume_times,
        printable_properties(m.user_properties).c_str(), printable_body(m.body, 200).c_str());
    n++;
    bytes = bytes.subspan(r.size);
  }
  return n;
}

namespace {

// Pulls one queue from `offset` until it has nothing more or `budget` messages were printed.
// Returns the next offset, or nullopt after an error.
std::optional<int64_t> consume_queue(CtlClient& client, const ConsumeOptions& o, int32_t queue,
                                     int64_t offset, int64_t* budget) {
  while (*budget > 0) {
    int64_t batch = std::min<int64_t>(*budget, 32);
    auto r = client.call(rq::kPullMessage,
                         {{"consumerGroup", o.group},
                          {"topic", o.topic},
                          {"queueId", std::to_string(queue)},
                          {"queueOffset", std::to_string(offset)},
                          {"maxMsgNums", std::to_string(batch)},
                          {"sysFlag", o.wait_ms > 0 ? "2" : "0"},
                          {"commitOffset", "0"},
                          {"suspendTimeoutMillis", std::to_string(o.wait_ms)},
                          {"subscription", "*"},
                          {"subVersion", "0"}},
                         {}, static_cast<int>(o.wait_ms + 10000));
    if (!r) return std::nullopt;
    std::optional<int64_t> next = ext_int(*r, "nextBeginOffset");
    switch (r->command.code) {
      case rc::kSuccess:
        *budget -= print_records(queue, r->body);
        if (!next || *next <= offset) return fail("pull answered no progress"), std::nullopt;
        offset = *next;
        continue;
      case rc::kPullNotFound:
        return offset;
      case rc::kPullRetryImmediately:
        if (next && *next > offset) {
          offset = *next;
          continue;
        }
        return offset;
      case rc::kPullOffsetMoved:
        std::fprintf(stderr, "queue %d: offset %lld moved to %lld\n", queue,
                     static_cast<long long>(offset), static_cast<long long>(next.value_or(-1)));
        if (!next || *next == offset) return offset;
        offset = *next;
        continue;
      default:
        response_error("pull queue " + std::to_string(queue), *r);
        return std::nullopt;
    }
  }
  return offset;
}

// The queues --queue names: one, or every queue of the route.
std::optional<std::vector<int32_t>> chosen_queues(CtlClient& client, const ConsumeOptions& o) {
  std::vector<int32_t> queues;
  if (o.queue != "all") {
    queues.push_back(static_cast<int32_t>(*parse_int(o.queue, 0, 65535)));
    return queues;
  }
  std::optional<int32_t> n = route_queue_count(o.target, client, o.topic);
  if (!n) return std::nullopt;
  for (int32_t q = 0; q < *n; q++) queues.push_back(q);
  return queues;
}

}  // namespace

int run_consume(const ConsumeOptions& o) {
  if (o.from != "first" && o.from != "last" && o.from != "committed" &&
      !parse_int(o.from, 0, INT64_MAX)) {
    return usage_error("--from must be first, last, committed or an offset");
  }
  if (o.queue != "all" && !parse_int(o.queue, 0, 65535)) {
    return usage_error("--queue must be a queue id or all");
  }
  std::unique_ptr<CtlClient> client = CtlClient::connect(o.target.addr);
  if (!client) return kExitFailure;
  std::optional<std::vector<int32_t>> queues = chosen_queues(*client, o);
  if (!queues) return kExitFailure;
  int64_t budget = o.max;
  for (int32_t q : *queues) {
    if (budget <= 0) break;
    std::optional<int64_t> start = start_offset(*client, o, q);
    if (!start) return kExitFailure;
    std::optional<int64_t> next = consume_queue(*client, o, q, *start, &budget);
    if (!next) return kExitFailure;
    if (o.commit && *next != *start) {
      auto r = client->call_ok("UPDATE_CONSUMER_OFFSET", rq::kUpdateConsumerOffset,
                               {{"topic", o.topic},
                                {"consumerGroup", o.group},
                                {"queueId", std::to_string(q)},
                                {"commitOffset", std::to_string(*next)}});
      if (!r) return kExitFailure;
      std::fprintf(stderr, "queue %d: committed offset %lld\n", q, static_cast<long long>(*next));
    }
  }
  return kExitOk;
}

namespace {

// GET_BROKER_RUNTIME_INFO's table, one "key  value" line each, sorted by key (so related
// figures -- delayLevel.N.*, timer.*, transaction.* -- sit together).
int print_runtime_table(CtlClient& client) {
  auto r = client.call_ok("GET_BROKER_RUNTIME_INFO", rq::kGetBrokerRuntimeInfo, {});
  if (!r) return kExitFailure;
  std::optional<net::JsonValue> json = parse_answer("runtime info", r->body);
  if (!json) return kExitFailure;
  const net::JsonValue* table = json->find("table");
  if (table == nullptr || !table->is_object()) return fail("runtime info has no \"table\" object");
  std::map<std::string, std::string> sorted;
  size_t width = 0;
  for (const auto& [key, value] : table->members()) {
    sorted[key] = value.is_string() || value.is_number() ? value.text() : std::string("?");
    width = std::max(width, key.size());
  }
  for (const auto& [key, value] : sorted) {
    std::printf("%-*s  %s\n", static_cast<int>(width), key.c_str(), value.c_str());
  }
  return kExitOk;
}

}  // namespace

int run_stats(const StatsOptions& o) {
  std::unique_ptr<CtlClient> client = CtlClient::connect(o.target.addr);
  if (!client) return kExitFailure;
  if (int rc = print_runtime_table(*client); rc != kExitOk) return rc;
  if (o.topic.empty()) return kExitOk;
  int32_t queues = o.queues;
  if (queues == 0) {
    std::optional<int32_t> n = route_queue_count(o.target, *client, o.topic);
    if (!n) return kExitFailure;
    queues = *n;
  }
  std::printf("\n%-8s %16s %16s\n", "queue", "minOffset", "maxOffset");
  for (int32_t q = 0; q < queues; q++) {
    std::optional<int64_t> min = client->queue_offset(rq::kGetMinOffset, o.topic, q);
    std::optional<int64_t> max = client->queue_offset(rq::kGetMaxOffset, o.topic, q);
    if (!min || !max) return kExitFailure;
    std::printf("%-8d %16lld %16lld\n", q, static_cast<long long>(*min),
                static_cast<long long>(*max));
  }
  return kExitOk;
}

int run_broker_status(const BrokerOptions& o) {
  std::unique_ptr<CtlClient> client = CtlClient::connect(o.target.addr);
  if (!client) return kExitFailure;
  return print_runtime_table(*client);
}

}  // namespace uringmq::ctl
