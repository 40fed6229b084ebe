// uringmq-ctl online commands (see ctl_online.h). Requests are built as a RocketMQ 4.x Java client
// builds them (SEND_MESSAGE_V2's short header names a..k, PULL_MESSAGE's full names), so what
// works here works for the real clients too.

#include "tools/ctl_online.h"

#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "net/json.h"
#include "net/remoting.h"
#include "net/remoting_client.h"
#include "tools/ctl_offline.h"

namespace uringmq::ctl {
namespace {

using Client = net::RemotingClient;

int fail(const std::string& what) {
  std::fprintf(stderr, "uringmq-ctl: %s\n", what.c_str());
  return kExitFailure;
}

int usage_error(const std::string& what) {
  std::fprintf(stderr, "uringmq-ctl: %s (uringmq-ctl --help for usage)\n", what.c_str());
  return kExitUsage;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Connects to --addr (default 127.0.0.1:10911); null after printing the error.
std::unique_ptr<Client> connect(const CtlArgs& args) {
  std::string addr = args.get_or("addr", "127.0.0.1:10911");
  io::Result<std::pair<std::string, uint16_t>> hp = net::parse_host_port(addr);
  if (!hp.is_ok()) {
    fail("--addr " + addr + ": " + hp.status().message());
    return nullptr;
  }
  io::Result<std::unique_ptr<Client>> client = Client::connect(hp->first, hp->second);
  if (!client.is_ok()) {
    fail("connect " + addr + ": " + client.status().to_string());
    return nullptr;
  }
  return std::move(*client);
}

net::RemotingCommand request(int32_t code,
                             std::vector<std::pair<std::string, std::string>> fields) {
  net::RemotingCommand command;
  command.code = code;
  command.language = "JAVA";
  command.version = 399;  // V4_9_x, what a current 4.x client sends
  command.ext_fields = std::move(fields);
  return command;
}

// Calls and reports a transport error; nullopt after printing it.
std::optional<net::RemotingResponse> call(Client& client, net::RemotingCommand command,
                                          std::string_view body = {}, int timeout_ms = 10000) {
  const int32_t code = command.code;
  io::Result<net::RemotingResponse> response =
      client.call(std::move(command), net::as_bytes(body), timeout_ms);
  if (!response.is_ok()) {
    fail("request " + std::to_string(code) + ": " + response.status().to_string());
    return std::nullopt;
  }
  return std::move(*response);
}

std::string remark_of(const net::RemotingResponse& r) {
  return r.command.remark.value_or("");
}

int response_error(std::string_view what, const net::RemotingResponse& r) {
  return fail(std::string(what) + ": response code " + std::to_string(r.command.code) + ": " +
              remark_of(r));
}

std::optional<int64_t> ext_int(const net::RemotingResponse& r, std::string_view key) {
  const std::string* v = r.command.ext(key);
  if (v == nullptr) return std::nullopt;
  return parse_int(*v, INT64_MIN, INT64_MAX);
}

// GET_MIN_OFFSET / GET_MAX_OFFSET of one queue.
std::optional<int64_t> queue_offset(Client& client, int32_t code, const std::string& topic,
                                    int32_t queue) {
  auto r = call(client, request(code, {{"topic", topic}, {"queueId", std::to_string(queue)}}));
  if (!r) return std::nullopt;
  std::optional<int64_t> offset = ext_int(*r, "offset");
  if (r->command.code != 0 || !offset) {
    response_error(code == kGetMaxOffset ? "GET_MAX_OFFSET" : "GET_MIN_OFFSET", *r);
    return std::nullopt;
  }
  return offset;
}

// The topic's read queue count from GET_ROUTEINFO_BY_TOPIC (the largest over its brokers).
std::optional<int32_t> route_queue_count(Client& client, const std::string& topic) {
  auto r = call(client, request(kGetRouteInfoByTopic, {{"topic", topic}}));
  if (!r) return std::nullopt;
  if (r->command.code != 0) {
    response_error("GET_ROUTEINFO_BY_TOPIC " + topic, *r);
    return std::nullopt;
  }
  io::Result<net::JsonValue> json = net::parse_json(r->body);
  if (!json.is_ok()) {
    fail("route of " + topic + ": " + json.status().message());
    return std::nullopt;
  }
  const net::JsonValue* datas = json->find("queueDatas");
  int64_t count = 0;
  if (datas != nullptr && datas->is_array()) {
    for (const net::JsonValue& d : datas->items()) {
      const net::JsonValue* n = d.find("readQueueNums");
      if (n != nullptr && n->is_number()) count = std::max(count, n->as_int64().value_or(0));
    }
  }
  if (count <= 0 || count > 65536) {
    fail("route of " + topic + " has no queueDatas[].readQueueNums");
    return std::nullopt;
  }
  return static_cast<int32_t>(count);
}

}  // namespace

int run_produce(const CtlArgs& args) {
  const std::string* topic = args.get("topic");
  if (topic == nullptr) return usage_error("produce needs --topic");
  if (args.positional().size() != 1) return usage_error("produce needs exactly one <body>");
  std::optional<int64_t> queue = parse_int(args.get_or("queue", "0"), 0, 65535);
  std::optional<int64_t> count = parse_int(args.get_or("count", "1"), 1, 100'000'000);
  std::optional<int64_t> delay = parse_int(args.get_or("delay-level", "0"), 0, 255);
  if (!queue) return usage_error("--queue must be a queue id (0..65535)");
  if (!count) return usage_error("--count must be a number (1..100000000)");
  if (!delay) return usage_error("--delay-level must be a level (0..255)");
  std::string properties;
  auto add = [&](std::string_view name, std::string_view value) {
    if (!value.empty()) engine::append_property(properties, name, value);
  };
  add(engine::kPropertyTags, args.get_or("tag", ""));
  add(engine::kPropertyKeys, args.get_or("keys", ""));
  if (*delay > 0) add(engine::kPropertyDelayTimeLevel, std::to_string(*delay));
  for (const std::string& kv : args.all("property")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size() ||
        kv.find_first_of("\x01\x02") != std::string::npos) {
      return usage_error("--property '" + kv + "' is not name=value");
    }
    add(kv.substr(0, eq), kv.substr(eq + 1));
  }
  std::unique_ptr<Client> client = connect(args);
  if (!client) return kExitFailure;
  const std::string& body = args.positional()[0];
  for (int64_t i = 0; i < *count; i++) {
    net::RemotingCommand command = request(kSendMessageV2, {{"a", "uringmq-ctl"},
                                                            {"b", *topic},
                                                            {"c", "TBW102"},
                                                            {"d", "4"},
                                                            {"e", std::to_string(*queue)},
                                                            {"f", "0"},
                                                            {"g", std::to_string(now_ms())},
                                                            {"h", "0"},
                                                            {"i", properties},
                                                            {"j", "0"},
                                                            {"k", "false"}});
    auto r = call(*client, std::move(command), body);
    if (!r) return kExitFailure;
    if (r->command.code != 0) return response_error("send", *r);
    const std::string* msg_id = r->command.ext("msgId");
    const std::string* queue_id = r->command.ext("queueId");
    const std::string* queue_offset = r->command.ext("queueOffset");
    std::printf("msgId=%s queueId=%s queueOffset=%s\n", msg_id ? msg_id->c_str() : "?",
                queue_id ? queue_id->c_str() : "?", queue_offset ? queue_offset->c_str() : "?");
  }
  return kExitOk;
}

namespace {

struct ConsumeSpec {
  std::string topic;
  std::string group;
  std::string from;
  int64_t max = 32;
  int64_t wait_ms = 0;
  bool commit = false;
};

// Where consumption of one queue starts, per --from.
std::optional<int64_t> start_offset(Client& client, const ConsumeSpec& spec, int32_t queue) {
  if (spec.from == "first") return queue_offset(client, kGetMinOffset, spec.topic, queue);
  if (spec.from == "last") return queue_offset(client, kGetMaxOffset, spec.topic, queue);
  if (spec.from == "committed") {
    auto r = call(client, request(kQueryConsumerOffset, {{"consumerGroup", spec.group},
                                                         {"topic", spec.topic},
                                                         {"queueId", std::to_string(queue)}}));
    if (!r) return std::nullopt;
    std::optional<int64_t> offset = ext_int(*r, "offset");
    if (r->command.code == 0 && offset && *offset >= 0) return offset;
    // Never committed (QUERY_NOT_FOUND 22): start from the queue's first message.
    return queue_offset(client, kGetMinOffset, spec.topic, queue);
  }
  return parse_int(spec.from, 0, INT64_MAX);
}

// Prints the records of a pull body; returns how many.
int64_t print_records(int32_t queue, const std::string& body) {
  engine::DecodeOptions options;
  options.require_record_crc = false;  // a RocketMQ broker's records have no __CRC32#
  options.limits.max_body_bytes = 64u << 20;
  std::span<const std::byte> bytes = net::as_bytes(body);
  int64_t n = 0;
  while (!bytes.empty()) {
    engine::DecodeResult r = engine::decode(bytes, options);
    if (r.outcome != engine::DecodeOutcome::ok) {
      std::fprintf(stderr, "uringmq-ctl: undecodable record in the pull response: %s\n",
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
        queue, static_cast<long long>(m.queue_offset), msg_id.c_str(),
        static_cast<int>(m.topic.size()), m.topic.data(), prop(engine::kPropertyTags).c_str(),
        prop(engine::kPropertyKeys).c_str(), m.reconsume_times,
        printable_properties(m.user_properties).c_str(), printable_body(m.body, 200).c_str());
    n++;
    bytes = bytes.subspan(r.size);
  }
  return n;
}

// Pulls one queue from `offset` until it has nothing more or `budget` messages were printed.
// Returns the next offset, or nullopt after an error.
std::optional<int64_t> consume_queue(Client& client, const ConsumeSpec& spec, int32_t queue,
                                     int64_t offset, int64_t* budget) {
  while (*budget > 0) {
    int64_t batch = std::min<int64_t>(*budget, 32);
    net::RemotingCommand command =
        request(kPullMessage, {{"consumerGroup", spec.group},
                               {"topic", spec.topic},
                               {"queueId", std::to_string(queue)},
                               {"queueOffset", std::to_string(offset)},
                               {"maxMsgNums", std::to_string(batch)},
                               {"sysFlag", spec.wait_ms > 0 ? "2" : "0"},
                               {"commitOffset", "0"},
                               {"suspendTimeoutMillis", std::to_string(spec.wait_ms)},
                               {"subscription", "*"},
                               {"subVersion", "0"}});
    auto r = call(client, std::move(command), {}, static_cast<int>(spec.wait_ms + 10000));
    if (!r) return std::nullopt;
    std::optional<int64_t> next = ext_int(*r, "nextBeginOffset");
    switch (r->command.code) {
      case kPullFound:
        *budget -= print_records(queue, r->body);
        if (!next || *next <= offset) return fail("pull answered no progress"), std::nullopt;
        offset = *next;
        continue;
      case kPullNotFound:
        return offset;
      case kPullRetryImmediately:
        if (next && *next > offset) {
          offset = *next;
          continue;
        }
        return offset;
      case kPullOffsetMoved:
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

}  // namespace

int run_consume(const CtlArgs& args) {
  ConsumeSpec spec;
  const std::string* topic = args.get("topic");
  const std::string* group = args.get("group");
  if (topic == nullptr || group == nullptr) return usage_error("consume needs --topic and --group");
  if (!args.positional().empty()) return usage_error("consume takes no positional argument");
  spec.topic = *topic;
  spec.group = *group;
  spec.from = args.get_or("from", "committed");
  spec.commit = args.has("commit");
  std::optional<int64_t> max = parse_int(args.get_or("max", "32"), 1, INT64_MAX);
  std::optional<int64_t> wait = parse_int(args.get_or("wait-ms", "0"), 0, 3'600'000);
  if (!max) return usage_error("--max must be a positive number");
  if (!wait) return usage_error("--wait-ms must be a time in ms (0..3600000)");
  if (spec.from != "first" && spec.from != "last" && spec.from != "committed" &&
      !parse_int(spec.from, 0, INT64_MAX)) {
    return usage_error("--from must be first, last, committed or an offset");
  }
  spec.max = *max;
  spec.wait_ms = *wait;
  std::string queue_arg = args.get_or("queue", "all");
  std::optional<int64_t> one = parse_int(queue_arg, 0, 65535);
  if (queue_arg != "all" && !one) return usage_error("--queue must be a queue id or all");
  std::unique_ptr<Client> client = connect(args);
  if (!client) return kExitFailure;
  std::vector<int32_t> queues;
  if (one) {
    queues.push_back(static_cast<int32_t>(*one));
  } else {
    std::optional<int32_t> n = route_queue_count(*client, spec.topic);
    if (!n) return kExitFailure;
    for (int32_t q = 0; q < *n; q++) queues.push_back(q);
  }
  int64_t budget = spec.max;
  for (int32_t q : queues) {
    if (budget <= 0) break;
    std::optional<int64_t> start = start_offset(*client, spec, q);
    if (!start) return kExitFailure;
    std::optional<int64_t> next = consume_queue(*client, spec, q, *start, &budget);
    if (!next) return kExitFailure;
    if (spec.commit && *next != *start) {
      auto r =
          call(*client, request(kUpdateConsumerOffset, {{"topic", spec.topic},
                                                        {"consumerGroup", spec.group},
                                                        {"queueId", std::to_string(q)},
                                                        {"commitOffset", std::to_string(*next)}}));
      if (!r) return kExitFailure;
      if (r->command.code != 0) return response_error("UPDATE_CONSUMER_OFFSET", *r);
      std::fprintf(stderr, "queue %d: committed offset %lld\n", q, static_cast<long long>(*next));
    }
  }
  return kExitOk;
}

int run_stats(const CtlArgs& args) {
  if (!args.positional().empty()) return usage_error("stats takes no positional argument");
  const std::string* topic = args.get("topic");
  std::optional<int64_t> queues;
  if (args.has("queues")) {
    queues = parse_int(*args.get("queues"), 1, 65536);
    if (!queues) return usage_error("--queues must be a queue count (1..65536)");
    if (topic == nullptr) return usage_error("--queues needs --topic");
  }
  std::unique_ptr<Client> client = connect(args);
  if (!client) return kExitFailure;
  auto r = call(*client, request(kGetBrokerRuntimeInfo, {}));
  if (!r) return kExitFailure;
  if (r->command.code != 0) return response_error("GET_BROKER_RUNTIME_INFO", *r);
  io::Result<net::JsonValue> json = net::parse_json(r->body);
  if (!json.is_ok()) return fail("runtime info: " + json.status().message());
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
  if (topic == nullptr) return kExitOk;
  if (!queues) {
    std::optional<int32_t> n = route_queue_count(*client, *topic);
    if (!n) return kExitFailure;
    queues = *n;
  }
  std::printf("\n%-8s %16s %16s\n", "queue", "minOffset", "maxOffset");
  for (int32_t q = 0; q < *queues; q++) {
    std::optional<int64_t> min = queue_offset(*client, kGetMinOffset, *topic, q);
    std::optional<int64_t> max = queue_offset(*client, kGetMaxOffset, *topic, q);
    if (!min || !max) return kExitFailure;
    std::printf("%-8d %16lld %16lld\n", q, static_cast<long long>(*min),
                static_cast<long long>(*max));
  }
  return kExitOk;
}

}  // namespace uringmq::ctl
