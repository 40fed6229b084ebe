#pragma once
// RemotingHandlers: the remoting adapter's entry: a request's dispatch by code, and the requests
// of topics, routes, cluster info, clients (heartbeats, unregistering, consumer lists,
// CHECK_CLIENT_CONFIG) and queue locks, and runtime figures
// (remoting_handlers.cc, lock_handlers.cc). Sends and pulls are MessageHandlers'.

#include "net/server/broker_part.h"

namespace uringmq::net {

class RemotingHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  // Dispatches a decoded request by its code (after the ACL and the slave's refusals).
  void handle(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  // Routes a store completion to the part whose op it is.
  void on_store_completion(const Completion& c);
  void handle_route(uint32_t conn, const RemotingCommand& request);
  void handle_create_topic(uint32_t conn, const RemotingCommand& request);
  void handle_delete_topic(uint32_t conn, const RemotingCommand& request);
  void handle_all_topic_config(uint32_t conn, const RemotingCommand& request);
  // Presented broker `shard`'s "topicConfigTable" with its "dataVersion" (Java's
  // TopicConfigSerializeWrapper): the one rendering GET_ALL_TOPIC_CONFIG and a registration
  // with NameServers use. The topic table is the process's, so every broker's is the same.
  std::string topic_config_json(uint32_t shard) const;
  void handle_cluster_info(uint32_t conn, const RemotingCommand& request);
  // One broker's entry of a route's or cluster info's brokerDatas / brokerAddrTable.
  void append_broker_data(std::string* body, uint32_t shard) const;
  void handle_heartbeat(uint32_t conn, const RemotingCommand& request,
                        std::span<const std::byte> body);
  void handle_unregister(uint32_t conn, const RemotingCommand& request);
  void handle_consumer_list(uint32_t conn, const RemotingCommand& request);
  void handle_check_client_config(uint32_t conn, const RemotingCommand& request,
                                  std::span<const std::byte> body);
  // ---- orderly consumers and rebalancing (lock_handlers.cc) ----
  void handle_lock_batch(uint32_t conn, const RemotingCommand& request,
                         std::span<const std::byte> body);
  void handle_unlock_batch(uint32_t conn, const RemotingCommand& request,
                           std::span<const std::byte> body);
  // NOTIFY_CONSUMER_IDS_CHANGED to the members of the groups Membership names (coalesced per
  // turn of the loop).
  void send_notices();
  void handle_runtime_info(uint32_t conn, const RemotingCommand& request);
  uint64_t notices_sent() const { return notices_sent_; }
  uint64_t notices_dropped() const { return notices_dropped_; }

 private:
  uint64_t notices_sent_ = 0;
  uint64_t notices_dropped_ = 0;  // a member's output was full
};

}  // namespace uringmq::net
