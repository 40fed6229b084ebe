#pragma once
// uringmq-ctl's connection to a broker (or a NameServer): the blocking net::RemotingClient with
// requests built as a RocketMQ 4.9 Java client builds them, errors printed once where they
// happen, and the readers the admin answers need. Online commands (ctl_online.cc,
// ctl_admin.cc) use it; each returns an exit code from ctl_commands.h. One thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "net/common/json.h"
#include "net/remoting/remoting_client.h"
#include "tools/ctl_commands.h"

namespace uringmq::ctl {

using Fields = std::vector<std::pair<std::string, std::string>>;

// Prints "uringmq-ctl: <what>" on stderr; returns kExitFailure.
int fail(const std::string& what);
// Prints the usage error on stderr; returns kExitUsage.
int usage_error(const std::string& what);
int64_t now_ms();

// Builds a request as the 4.9 Java client does (language JAVA, version V4_9_x).
net::RemotingCommand make_request(int32_t code, Fields fields);

// TLS for every connection the command makes (the --tls options).
net::TlsClientOptions& ctl_tls_options();

class CtlClient {
 public:
  // Connects to "host:port"; null after printing why.
  static std::unique_ptr<CtlClient> connect(const std::string& addr);

  // Calls and reports a transport error (nullopt after printing it); any response code is
  // returned as is.
  std::optional<net::RemotingResponse> call(int32_t code, Fields fields, std::string_view body = {},
                                            int timeout_ms = 10000);
  // As call(), but also a response code other than 0 is printed (naming `what`) and nullopt.
  std::optional<net::RemotingResponse> call_ok(std::string_view what, int32_t code, Fields fields,
                                               std::string_view body = {});
  // GET_MIN_OFFSET / GET_MAX_OFFSET of one queue; nullopt after printing the error.
  std::optional<int64_t> queue_offset(int32_t code, const std::string& topic, int32_t queue);
  // The topic's read queue count from GET_ROUTEINFO_BY_TOPIC (the largest over its brokers).
  std::optional<int32_t> route_queue_count(const std::string& topic);
  const std::string& addr() const { return addr_; }

 private:
  CtlClient(std::unique_ptr<net::RemotingClient> client, std::string addr)
      : client_(std::move(client)), addr_(std::move(addr)) {}
  std::unique_ptr<net::RemotingClient> client_;
  std::string addr_;
};

// The topic's read queue count, from `t`'s NameServer: `broker` itself when that is its
// address (a uringmq broker), else a connection of its own.
std::optional<int32_t> route_queue_count(const Target& t, CtlClient& broker,
                                         const std::string& topic);

int response_error(std::string_view what, const net::RemotingResponse& r);
std::optional<int64_t> ext_int(const net::RemotingResponse& r, std::string_view key);

// Parses a body as JSON, accepting fastjson's unquoted keys as Java writes a Map<MessageQueue, V>
// ({{"brokerName":"b","queueId":0,"topic":"T"}:{...}}) or a Map<Long, V> ({0:"addr"}): such a
// key becomes its text. nullopt
// after printing what is wrong (naming `what`).
std::optional<net::JsonValue> parse_answer(std::string_view what, std::string_view body);

// A MessageQueue key of such a map (its JSON text, or a "topic@broker@queue" form).
struct QueueKey {
  std::string topic;
  std::string broker;
  int32_t queue = -1;
  bool operator<(const QueueKey& o) const {
    return std::tie(topic, broker, queue) < std::tie(o.topic, o.broker, o.queue);
  }
};
std::optional<QueueKey> parse_queue_key(std::string_view text);

// Integer member `key` of an object (a number or a numeric string); `fallback` when absent.
int64_t member_int(const net::JsonValue& object, std::string_view key, int64_t fallback = 0);

// A time given as milliseconds since the epoch, "now", or UTC "YYYY-MM-DDTHH:MM:SS[.mmm][Z]"
// (also mqadmin's "yyyy-MM-dd#HH:mm:ss:SSS", read as UTC); nullopt when it is none of these.
std::optional<int64_t> parse_time_ms(std::string_view text);

}  // namespace uringmq::ctl
