#pragma once
// Heartbeat: what a client's heartbeat says, decoded by its wire adapter: who it is, where it is
// connected, and the consumer and producer groups it belongs to with each consumer group's
// subscriptions. ClientSessions (client_sessions.h) takes one per heartbeat.
//
// Threading: a value; built and read on the reactor thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/core/consumer_groups.h"

namespace uringmq::net {

// One subscription of a consumer group to a topic (RocketMQ's SubscriptionData).
struct SubscriptionEntry {
  std::string topic;
  // "TAG" or "SQL92" (another is refused where it is used); empty: TAG, as Java reads none.
  std::string expression_type;
  std::string expression;         // subString: "*", "a || b", or the SQL92 text
  std::vector<std::string> tags;  // tagsSet, in the client's order
  std::vector<int32_t> codes;     // codeSet: the tags' hash codes, in the client's order
  int64_t version = 0;            // subVersion
  bool class_filter_mode = false;
};

// One consumer group of the client (RocketMQ's ConsumerData). Empty texts: not said (the
// group's last known value, or the default, stands).
struct ConsumerEntry {
  std::string group;  // never empty
  std::string consume_type;
  std::string message_model;
  std::string consume_from_where;
  bool unit_mode = false;
  std::vector<SubscriptionEntry> subscriptions;
};

struct Heartbeat {
  std::string client_id;
  ConnectionRef connection;
  uint32_t shard = 0;    // the presented broker the connection is to
  std::string address;   // "ip:port" of the connection
  std::string language;  // as the client names it ("JAVA")
  int32_t version = 0;   // the client's version number
  std::vector<ConsumerEntry> consumers;
  std::vector<std::string> producer_groups;  // never empty names
};

// ExpressionType.isTagType: none, empty or TAG.
inline bool is_tag_expression(std::string_view type) {
  return type.empty() || type == "TAG";
}

}  // namespace uringmq::net
