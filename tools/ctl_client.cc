// uringmq-ctl's broker connection and answer readers (see ctl_client.h).

#include "tools/ctl_client.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "tools/ctl_commands.h"

namespace uringmq::ctl {

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

net::RemotingCommand make_request(int32_t code, Fields fields) {
  net::RemotingCommand command;
  command.code = code;
  command.language = "JAVA";
  command.version = 399;  // V4_9_x, what a current 4.x client sends
  command.ext_fields = std::move(fields);
  return command;
}

net::TlsClientOptions& ctl_tls_options() {
  static net::TlsClientOptions options;
  return options;
}

std::unique_ptr<CtlClient> CtlClient::connect(const std::string& addr) {
  io::Result<std::pair<std::string, uint16_t>> hp = net::parse_host_port(addr);
  if (!hp.is_ok()) {
    fail("address " + addr + ": " + hp.status().message());
    return nullptr;
  }
  io::Result<std::unique_ptr<net::RemotingClient>> client =
      net::RemotingClient::connect(hp->first, hp->second, 5000, ctl_tls_options());
  if (!client.is_ok()) {
    fail("connect " + addr + ": " + client.status().to_string());
    return nullptr;
  }
  return std::unique_ptr<CtlClient>(new CtlClient(std::move(*client), addr));
}

std::optional<net::RemotingResponse> CtlClient::call(int32_t code, Fields fields,
                                                     std::string_view body, int timeout_ms) {
  io::Result<net::RemotingResponse> response =
      client_->call(make_request(code, std::move(fields)), net::as_bytes(body), timeout_ms);
  if (!response.is_ok()) {
    fail("request " + std::to_string(code) + " to " + addr_ + ": " + response.status().to_string());
    return std::nullopt;
  }
  return std::move(*response);
}

std::optional<net::RemotingResponse> CtlClient::call_ok(std::string_view what, int32_t code,
                                                        Fields fields, std::string_view body) {
  std::optional<net::RemotingResponse> r = call(code, std::move(fields), body);
  if (r && r->command.code != 0) {
    response_error(what, *r);
    return std::nullopt;
  }
  return r;
}

int response_error(std::string_view what, const net::RemotingResponse& r) {
  return fail(std::string(what) + ": response code " + std::to_string(r.command.code) + ": " +
              r.command.remark.value_or(""));
}

std::optional<int64_t> ext_int(const net::RemotingResponse& r, std::string_view key) {
  const std::string* v = r.command.ext(key);
  if (v == nullptr) return std::nullopt;
  return parse_int(*v, INT64_MIN, INT64_MAX);
}

std::optional<int64_t> CtlClient::queue_offset(int32_t code, const std::string& topic,
                                               int32_t queue) {
  const char* what = code == net::request_code::kGetMaxOffset ? "GET_MAX_OFFSET" : "GET_MIN_OFFSET";
  auto r = call_ok(what, code, {{"topic", topic}, {"queueId", std::to_string(queue)}});
  if (!r) return std::nullopt;
  std::optional<int64_t> offset = ext_int(*r, "offset");
  if (!offset) fail(std::string(what) + " answered no offset");
  return offset;
}

std::optional<int32_t> CtlClient::route_queue_count(const std::string& topic) {
  auto r = call_ok("GET_ROUTEINFO_BY_TOPIC " + topic, net::request_code::kGetRouteInfoByTopic,
                   {{"topic", topic}});
  if (!r) return std::nullopt;
  std::optional<net::JsonValue> json = parse_answer("route of " + topic, r->body);
  if (!json) return std::nullopt;
  const net::JsonValue* datas = json->find("queueDatas");
  int64_t count = 0;
  if (datas != nullptr && datas->is_array()) {
    for (const net::JsonValue& d : datas->items()) {
      if (d.is_object()) count = std::max(count, member_int(d, "readQueueNums"));
    }
  }
  if (count <= 0 || count > 65536) {
    fail("route of " + topic + " has no queueDatas[].readQueueNums");
    return std::nullopt;
  }
  return static_cast<int32_t>(count);
}

std::optional<int32_t> route_queue_count(const Target& t, CtlClient& broker,
                                         const std::string& topic) {
  if (t.namesrv_or_addr() == broker.addr()) return broker.route_queue_count(topic);
  std::unique_ptr<CtlClient> namesrv = CtlClient::connect(t.namesrv_or_addr());
  if (!namesrv) return std::nullopt;
  return namesrv->route_queue_count(topic);
}

namespace {

// Index just past the JSON string starting at in[i] ('"').
size_t skip_string(std::string_view in, size_t i) {
  for (i++; i < in.size(); i++) {
    if (in[i] == '\\') {
      i++;
    } else if (in[i] == '"') {
      return i + 1;
    }
  }
  return in.size();
}

// Index just past the object starting at in[i] ('{').
size_t skip_object(std::string_view in, size_t i) {
  int depth = 0;
  while (i < in.size()) {
    if (in[i] == '"') {
      i = skip_string(in, i);
      continue;
    }
    if (in[i] == '{') depth++;
    if (in[i] == '}' && --depth == 0) return i + 1;
    i++;
  }
  return in.size();
}

// fastjson writes a map's object and number keys unquoted; RFC 8259 wants strings.
std::string quote_object_keys(std::string_view in) {
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  std::vector<char> open;  // '{' or '[' per open container
  bool key_next = false;
  for (size_t i = 0; i < in.size();) {
    const char c = in[i];
    if (key_next && ((c >= '0' && c <= '9') || c == '-')) {  // a Map<Long, V> key: 0:"addr"
      size_t end = i + 1;
      while (end < in.size() && in[end] >= '0' && in[end] <= '9') end++;
      net::append_json_string(&out, in.substr(i, end - i));
      key_next = false;
      i = end;
      continue;
    }
    if (c == '"' || (key_next && c == '{')) {
      const size_t end = c == '"' ? skip_string(in, i) : skip_object(in, i);
      if (c == '"') out.append(in.substr(i, end - i));
      if (c == '{') net::append_json_string(&out, in.substr(i, end - i));
      key_next = false;
      i = end;
      continue;
    }
    if (c == '{') open.push_back('{');
    if (c == '[') open.push_back('[');
    if ((c == '}' || c == ']') && !open.empty()) open.pop_back();
    if (c == '{' || c == ',') key_next = !open.empty() && open.back() == '{';
    if (c == ':') key_next = false;
    out += c;
    i++;
  }
  return out;
}

}  // namespace

std::optional<net::JsonValue> parse_answer(std::string_view what, std::string_view body) {
  io::Result<net::JsonValue> json = net::parse_json(quote_object_keys(body));
  if (!json.is_ok()) {
    fail(std::string(what) + ": the answer is not JSON: " + json.status().message());
    return std::nullopt;
  }
  return std::move(*json);
}

int64_t member_int(const net::JsonValue& object, std::string_view key, int64_t fallback) {
  const net::JsonValue* v = object.find(key);
  if (v == nullptr) return fallback;
  if (v->is_number()) return v->as_int64().value_or(fallback);
  if (v->is_string()) return parse_int(v->text(), INT64_MIN, INT64_MAX).value_or(fallback);
  return fallback;
}

std::optional<QueueKey> parse_queue_key(std::string_view text) {
  io::Result<net::JsonValue> json = net::parse_json(text);
  if (!json.is_ok() || !json->is_object()) return std::nullopt;
  QueueKey key;
  const net::JsonValue* topic = json->find("topic");
  const net::JsonValue* broker = json->find("brokerName");
  if (topic == nullptr || !topic->is_string()) return std::nullopt;
  key.topic = topic->text();
  if (broker != nullptr && broker->is_string()) key.broker = broker->text();
  key.queue = static_cast<int32_t>(member_int(*json, "queueId", -1));
  return key;
}

std::optional<int64_t> parse_time_ms(std::string_view text) {
  if (text == "now") return now_ms();
  if (std::optional<int64_t> ms = parse_int(text, 0, INT64_MAX)) return ms;
  std::tm tm{};
  int millis = 0;
  int used = 0;
  std::string s(text);
  for (char& c : s) {
    if (c == '#') c = 'T';
  }
  const int n = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used);
  if (n != 6) return std::nullopt;
  std::string_view rest = std::string_view(s).substr(static_cast<size_t>(used));
  if (!rest.empty() && (rest[0] == '.' || rest[0] == ':')) {
    size_t digits = 1;
    while (digits < rest.size() && digits <= 3 && rest[digits] >= '0' && rest[digits] <= '9') {
      millis = millis * 10 + (rest[digits] - '0');
      digits++;
    }
    if (digits != 4) return std::nullopt;
    rest = rest.substr(digits);
  }
  if (rest == "Z") rest = {};
  if (!rest.empty()) return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(::timegm(&tm)) * 1000 + millis;
}

}  // namespace uringmq::ctl
