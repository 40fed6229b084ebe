#pragma once
// RemoteBrokers: the built-in NameServer role's table of brokers that registered with it
// (REGISTER_BROKER from other uringmq processes or Java brokers), as RocketMQ's RouteInfoManager
// keeps them: per broker address its group (brokerName), cluster, id and, for a master (id 0),
// its topics' queue data.
// - A registration replaces the address's entry; its topics are taken when the DataVersion
//   changed or the address is new (a Java NameServer's rule), else the last ones stay.
// - An entry leaves on UNREGISTER_BROKER, when the connection that carried its latest
//   registration closes (as BrokerHousekeepingService), or kExpiryMs after its last
//   registration (expire(), from the reactor's sweep; times come from the caller's clock).
// - Bounded: kMaxRemoteBrokers addresses; a registration of a new one beyond is refused (busy).
// Routes and cluster listings merge these entries with the process's own brokers
// (net/broker_namesrv.cc). Threading: the reactor's; not locked.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"
#include "net/consumer_groups.h"
#include "net/namesrv_protocol.h"

namespace uringmq::net {

inline constexpr size_t kMaxRemoteBrokers = 1024;
// RocketMQ's BROKER_CHANNEL_EXPIRED_TIME.
inline constexpr int64_t kRemoteBrokerExpiryMs = 120'000;

struct RemoteBroker {
  BrokerIdentity broker;
  DataVersion version;
  std::map<std::string, TopicConfig, std::less<>> topics;  // a master's; empty for a slave
  ConnectionRef connection;  // the connection of its latest registration
  int64_t registered_ms = 0;
};

class RemoteBrokers {
 public:
  // Adds or refreshes the registrant; busy naming the limit when the table is full.
  io::Status register_broker(Registration registration, ConnectionRef connection, int64_t now_ms);
  // Removes the address when brokerName and brokerId match; false when there was none.
  bool unregister(const BrokerIdentity& broker);
  // Entries whose latest registration came on this connection leave; their addresses.
  std::vector<std::string> connection_closed(ConnectionRef connection);
  // Entries not registered for kRemoteBrokerExpiryMs leave; their addresses.
  std::vector<std::string> expire(int64_t now_ms);

  bool empty() const { return by_addr_.empty(); }
  size_t size() const { return by_addr_.size(); }
  const RemoteBroker* find(std::string_view addr) const;
  // True when some master lists the topic.
  bool has_topic(std::string_view topic) const;
  // Every topic some master lists.
  void collect_topics(std::set<std::string, std::less<>>* out) const;
  // TopicRouteData pieces for `topic`, each a JSON object appended with a leading ',' when *out
  // is not just '[': queueDatas of the masters that list it, brokerDatas of their groups.
  void append_queue_datas(std::string_view topic, std::string* out) const;
  void append_broker_datas(std::string_view topic, std::string* out) const;
  // GET_BROKER_CLUSTER_INFO: group name -> (cluster, id -> addr), cluster -> group names; merged
  // into the caller's maps.
  using AddrTable = std::map<std::string, std::pair<std::string, std::map<int64_t, std::string>>>;
  void collect_cluster(AddrTable* brokers,
                       std::map<std::string, std::set<std::string>>* clusters) const;

 private:
  // A group's addresses by id, over the entries of `name`.
  std::map<int64_t, std::string> group_addrs(std::string_view name) const;
  std::map<std::string, RemoteBroker, std::less<>> by_addr_;
};

// A topic this process routes without having it configured while brokers are registered with
// it (a cluster): only what every broker has (TBW102, a group's retry and dead-letter topics).
// A new topic then goes through TBW102's route, to every broker.
bool implicit_route_in_cluster(std::string_view topic);

// A TopicRouteData brokerData object: {"cluster","brokerName","brokerAddrs":{"<id>":addr}}.
void append_broker_data_json(std::string* out, std::string_view cluster, std::string_view name,
                             const std::map<int64_t, std::string>& addrs);

}  // namespace uringmq::net
