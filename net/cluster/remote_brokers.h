#pragma once
// RemoteBrokers: the built-in NameServer role's table of brokers that registered with it
// (REGISTER_BROKER from other uringmq processes or Java brokers), as RocketMQ's RouteInfoManager
// keeps them: per broker address its group (brokerName), cluster and id; per group the queue
// data of its topics, from its master's (id 0) registrations.
// - A registration replaces the address's entry; a master's topics become its group's when the
//   DataVersion changed or the address is new (a Java NameServer's rule), else the last ones
//   stay. A group keeps its topics while any of its brokers is registered: with its master gone
//   its slaves are still routed, so consumers read from them (RocketMQ's designed degradation).
// - WIPE_WRITE_PERM_OF_BROKER takes the write permission off a group's topics (fencing a master
//   before its slave is promoted); its next registration under a new DataVersion restores them.
// - An entry leaves on UNREGISTER_BROKER, when the connection that carried its latest
//   registration closes (as BrokerHousekeepingService), or kExpiryMs after its last
//   registration (expire(), from the reactor's sweep; times come from the caller's clock).
// - Bounded: kMaxRemoteBrokers addresses; a registration of a new one beyond is refused (busy).
// Routes and cluster listings merge these entries with the process's own brokers
// (net/cluster/namesrv_role.cc). Threading: the reactor's; not locked.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/status.h"
#include "net/cluster/namesrv_protocol.h"
#include "net/core/consumer_groups.h"

namespace uringmq::net {

inline constexpr size_t kMaxRemoteBrokers = 1024;
// RocketMQ's BROKER_CHANNEL_EXPIRED_TIME.
inline constexpr int64_t kRemoteBrokerExpiryMs = 120'000;

struct RemoteBroker {
  BrokerIdentity broker;
  DataVersion version;
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

  // The registered master (id 0) of group `name`: its address and HA address (what a
  // slave's REGISTER_BROKER is answered); nullptr when none.
  const BrokerIdentity* master_of(std::string_view name) const;
  // The address of group `name`'s registered slave of the lowest id (above 0); "" when none
  // (a master repairing a damaged record asks it, net/cluster/repair_peers.h).
  std::string slave_of(std::string_view name) const;
  // Takes PERM_WRITE off every topic of group `name`; the number of topics it was taken from.
  int32_t wipe_write_perm(std::string_view name);
  // DELETE_TOPIC_IN_NAMESRV: the topic leaves every group's list until a registration with a
  // new DataVersion lists it again (Java's RouteInfoManager.deleteTopic); false when none had it.
  bool erase_topic(std::string_view topic);

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
  using Topics = std::map<std::string, TopicConfig, std::less<>>;
  // A group's addresses by id, over the entries of `name`.
  std::map<int64_t, std::string> group_addrs(std::string_view name) const;
  // Groups none of whose brokers is registered any more lose their topics.
  void prune_groups();
  std::map<std::string, RemoteBroker, std::less<>> by_addr_;
  std::map<std::string, Topics, std::less<>> group_topics_;  // by brokerName
};

// A TopicRouteData brokerData object: {"cluster","brokerName","brokerAddrs":{"<id>":addr}}.
void append_broker_data_json(std::string* out, std::string_view cluster, std::string_view name,
                             const std::map<int64_t, std::string>& addrs);

}  // namespace uringmq::net
