#pragma once
// ClientTable: what heartbeats say about each client, for the admin requests that list them
// (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST, GET_CONSUME_STATS, the
// consumerProgress and topicList views; RocketMQ's ConsumerManager and ProducerManager). Per
// consumer group: its consume type, message model, where it starts and its subscriptions (as
// RocketMQ's SubscriptionData JSON, rendered from the heartbeat's typed entries); per group,
// consumer or producer, its clients: address, language, version, the connection and time of the
// last heartbeat. A client leaves when its connection closes, on UNREGISTER_CLIENT, or when it has
// not heartbeated for the expiry time. Consumer groups also remember the topics their offsets were
// committed in (until restart), so that GET_CONSUME_STATS without a topic finds an offline group's
// topics. Bounded: at most kMaxClientEntries clients in all, kMaxGroupSubscriptions subscriptions
// per group and kMaxCommittedTopics remembered topics per group; past them new ones are not
// recorded (the listing is incomplete, nothing else changes). Owned by the broker's reactor thread;
// not thread-safe.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "net/common/json.h"
#include "net/core/consumer_groups.h"
#include "net/core/heartbeat.h"

namespace uringmq::net {

inline constexpr size_t kMaxClientEntries = 65536;
inline constexpr size_t kMaxGroupSubscriptions = 1024;
inline constexpr size_t kMaxCommittedTopics = 1024;
inline constexpr size_t kMaxRememberedGroups = 65536;

struct ClientInfo {
  std::string address;  // "ip:port" of its connection
  std::string language;
  int32_t version = 0;
  ConnectionRef connection;
  int64_t heartbeat_ms = 0;
};

struct ConsumerGroupInfo {
  std::string consume_type = "CONSUME_PASSIVELY";
  std::string message_model = "CLUSTERING";
  std::string consume_from_where = "CONSUME_FROM_LAST_OFFSET";
  std::map<std::string, std::string, std::less<>> subscriptions;  // topic -> SubscriptionData
  std::map<std::string, ClientInfo, std::less<>> clients;         // client id -> client
};

// RocketMQ's SubscriptionData JSON of a subscription, its fields in fastjson's (sorted) order as
// the Java client writes them; no expressionType when none was given.
std::string subscription_json(const SubscriptionEntry& sub);

class ClientTable {
 public:
  // One consumer group entry of a heartbeat.
  void consumer_heartbeat(const ConsumerEntry& consumer, std::string_view client_id,
                          const ClientInfo& info);
  void producer_heartbeat(std::string_view group, std::string_view client_id,
                          const ClientInfo& info);
  // UNREGISTER_CLIENT: the client leaves the named groups (either may be null).
  void unregister(const std::string* consumer_group, const std::string* producer_group,
                  std::string_view client_id);
  void connection_closed(ConnectionRef connection);
  void expire(int64_t now_ms, int64_t expire_ms);
  // An offset committed by `group` in `topic`.
  void note_commit(std::string_view group, std::string_view topic);

  const ConsumerGroupInfo* consumer(std::string_view group) const;  // nullptr: none online
  const std::map<std::string, ClientInfo, std::less<>>* producers(std::string_view group) const;
  // Topics whose offsets the group committed here, and those it subscribes to now.
  std::set<std::string, std::less<>> topics_of(std::string_view group) const;
  // Consumer groups online or that committed here.
  std::set<std::string, std::less<>> known_groups() const;

 private:
  template <typename Gone>
  void remove_if(Gone&& gone);
  size_t clients_ = 0;
  std::map<std::string, ConsumerGroupInfo, std::less<>> consumers_;
  std::map<std::string, std::map<std::string, ClientInfo, std::less<>>, std::less<>> producers_;
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> committed_;
};

}  // namespace uringmq::net
