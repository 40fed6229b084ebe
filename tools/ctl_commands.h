#pragma once
// uringmq-ctl's commands, each a function of its options struct (filled by the command line in
// uringmq_ctl.cc, with CLI11) that prints results on stdout, errors on stderr, and returns an
// exit code. Online commands talk to a broker over the RocketMQ remoting protocol with the
// requests mqadmin sends (ctl_online.cc: produce, consume, stats; ctl_admin.cc: topic, group,
// message, broker); offline ones read a stopped broker's files (ctl_offline.h). One thread.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uringmq::ctl {

// Exit codes of uringmq-ctl.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// A whole decimal integer in [min, max], or nullopt.
inline std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

// Where online commands connect. `namesrv` (NameServer requests: 105, 206, 216) is `addr`
// when empty: a uringmq broker answers both on one port.
struct Target {
  std::string addr = "127.0.0.1:10911";
  std::string namesrv;
  const std::string& namesrv_or_addr() const { return namesrv.empty() ? addr : namesrv; }
};

struct ProduceOptions {
  Target target;
  std::string topic;
  std::string tag;                      // TAGS property; none when empty
  std::string keys;                     // KEYS property (space-separated words); none when empty
  int32_t delay_level = 0;              // DELAY property, 1..255; 0: not delayed
  int32_t queue = 0;                    // queue id the message is sent to
  int64_t count = 1;                    // the same message this many times
  std::vector<std::string> properties;  // more properties, each name=value
  std::string body;
};

struct ConsumeOptions {
  Target target;
  std::string topic;
  std::string group;
  std::string queue = "all";       // a queue id or "all"
  std::string from = "committed";  // first | last | committed | <offset>
  int64_t max = 32;
  int64_t wait_ms = 0;
  bool commit = false;
};

struct StatsOptions {
  Target target;
  std::string topic;   // empty: only the runtime table
  int32_t queues = 0;  // 0: from the route
};

struct TopicOptions {
  Target target;
  std::string topic;
  int32_t read_queues = 8;
  int32_t write_queues = 8;
  int32_t perm = 6;
  bool order = false;
  // create: RocketMQ 5 attribute changes, each "+key=value" or "-key" (+message.type=FIFO),
  // sent joined by ',' in the `attributes` header; none sent when empty (a 4.9 broker's request).
  std::vector<std::string> attributes;
};

struct GroupOptions {
  Target target;
  std::string group;
  std::string topic;    // lag: all the group's topics when empty; reset: required
  std::string time;     // reset --time
  int64_t offset = -1;  // reset --offset
  int32_t queue = -1;   // reset --offset: one queue; -1: every queue of the route
  bool force = true;    // reset --time: also move offsets forward
  // create: the SubscriptionGroupConfig sent (RocketMQ's defaults otherwise)
  bool orderly = false;          // consumeMessageOrderly (RocketMQ 5: a FIFO group for POP)
  bool consume_enable = true;    // consumeEnable
  bool broadcast = true;         // consumeBroadcastEnable
  int32_t retry_queues = 1;      // retryQueueNums
  int32_t retry_max_times = 16;  // retryMaxTimes
};

struct MessageOptions {
  Target target;
  std::string topic;  // key lookups, and ids that are not offset msgIds
  std::string id;
  std::string key;
  int32_t max = 32;
  std::string begin = "0";  // key: store time range
  std::string end = "now";
};

struct BrokerOptions {
  Target target;
  std::vector<std::string> settings;  // config set: key=value...
};

// ha (ctl_ha.cc): the steps of a manual failover.
struct HaOptions {
  std::string namesrvs;     // fence: "ip:port;ip:port", every NameServer
  std::string broker_name;  // fence: the group to fence
  std::string master;       // lag
  std::string slave;        // lag
};
int run_ha_fence(const HaOptions& o);
int run_ha_lag(const HaOptions& o);

int run_produce(const ProduceOptions& o);
int run_consume(const ConsumeOptions& o);
int run_stats(const StatsOptions& o);

int run_topic_list(const TopicOptions& o);
int run_topic_create(const TopicOptions& o);
int run_topic_delete(const TopicOptions& o);
int run_topic_route(const TopicOptions& o);
int run_topic_status(const TopicOptions& o);
int run_group_list(const GroupOptions& o);
int run_group_create(const GroupOptions& o);
int run_group_lag(const GroupOptions& o);
int run_group_reset(const GroupOptions& o);
int run_message_id(const MessageOptions& o);
int run_message_key(const MessageOptions& o);
int run_broker_status(const BrokerOptions& o);
int run_broker_config_get(const BrokerOptions& o);
int run_broker_config_set(const BrokerOptions& o);

// Prints the records of a pull or query body, one line each; returns how many.
// `queue` < 0: each line shows the record's own queue id.
int64_t print_records(int32_t queue, const std::string& body);

}  // namespace uringmq::ctl
