#pragma once
// NamesrvRole: the built-in NameServer role (brokers registering with this process, routes
// merged with theirs) and this process's registration with NameServers (namesrv_role.cc).

#include "net/server/broker_part.h"

namespace uringmq::net {

// How long a stopping broker waits for NameServers to answer UNREGISTER_BROKER.
inline constexpr int64_t kUnregisterWaitMs = 3000;

class NamesrvRole final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  // (brokerName, "ip:port") of each broker this process presents (net/core/presented_broker.h).
  std::vector<std::pair<std::string, std::string>> own_broker_addrs() const;
  // The registrar for namesrvAddr (none without it), made at start.
  io::Status open_registrar();
  // The topicConfigTable registrations carry: the topic table, TBW102 (perm 7 with
  // autoCreateTopicEnable) and %RETRY% and %DLQ% of the groups heard of.
  std::string registration_table() const;
  // Stopping: UNREGISTER_BROKER to every NameServer (false: none configured); the reactor turns
  // its loop until unregistered() or 3 s, then stop_registering().
  bool start_unregistering();
  bool unregistered() const;
  void stop_registering();
  void handle_register_broker(uint32_t conn, const RemotingCommand& request,
                              std::span<const std::byte> body);
  void handle_unregister_broker(uint32_t conn, const RemotingCommand& request);
  void handle_wipe_write_perm(uint32_t conn, const RemotingCommand& request);
  // The master (id 0) of group `name`, this process's or a registered one: its address and HA
  // address; nullopt when none is known.
  std::optional<std::pair<std::string, std::string>> master_of(std::string_view name) const;
  void remote_connection_closed(uint32_t conn);
  void expire_remote_brokers(int64_t now_ms);
  // Merges the remote brokers' queue and broker data for `topic` into a route body built for
  // this process's own brokers (`local`: whether those are listed).
  std::string merge_remote_route(std::string_view topic, std::string local_body, bool local) const;
};

}  // namespace uringmq::net
