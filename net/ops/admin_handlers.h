#pragma once
// AdminHandlers: the remoting adapter of operators' calls (net/core/admin.h,
// net/core/broker_settings.h): mqadmin's and the dashboard's requests (admin_handlers.cc), the
// run-time configuration and subscription groups (admin_config.cc), and the metrics endpoint's
// rendering (metrics_handlers.cc). Each handler decodes its request, calls the core and encodes
// the answer as Java's broker does.

#include <string>
#include <variant>

#include "net/cluster/ha_replication_view.h"
#include "net/ops/broker_admin.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

class AdminHandlers final : public BrokerPart {
 public:
  // Sets the core's replication view (BrokerCore::replication) to this part's.
  AdminHandlers(BrokerReactor& reactor, BrokerParts& parts);
  // True when `code` is an admin request it answered.
  bool handle_admin(uint32_t conn, RemotingCommand& request, std::span<const std::byte> body);
  void handle_topic_list(uint32_t conn, const RemotingCommand& request);
  void handle_consumed_by(uint32_t conn, const RemotingCommand& request);
  void handle_topic_stats(uint32_t conn, const RemotingCommand& request);
  void handle_consume_stats(uint32_t conn, const RemotingCommand& request);
  void handle_consumer_connections(uint32_t conn, const RemotingCommand& request);
  void handle_producer_connections(uint32_t conn, const RemotingCommand& request);
  void handle_reset_offset(uint32_t conn, const RemotingCommand& request);
  void handle_put_subscription_group(uint32_t conn, const RemotingCommand& request,
                                     std::span<const std::byte> body);
  void handle_all_subscription_groups(uint32_t conn, const RemotingCommand& request);
  void handle_delete_subscription_group(uint32_t conn, const RemotingCommand& request);
  void handle_get_broker_config(uint32_t conn, const RemotingCommand& request);
  void handle_update_broker_config(uint32_t conn, const RemotingCommand& request,
                                   std::span<const std::byte> body);
  // Loads the subscription groups and applies the run-time overlay (at start).
  io::Status open_admin_state(io::Disk& disk);
  // An admin op's completion (BrokerOp::Kind::admin); false while the chain goes on.
  bool complete_admin(uint32_t index, const Completion& c);
  // Per presented broker: the putTps / getTransferedTps samples start empty.
  void start_figures(size_t brokers);
  // ---- metrics (metrics_handlers.cc) ----
  io::Status open_metrics_server();
  // Counts what a store completion did (messages in, out, queue ends) for the metrics.
  void note_metrics(const BrokerOp& op, const Completion& c);
  void render_metrics(std::string& out);

 private:
  // Answers a call's figures (or why not) on its caller's connection.
  void answer_figures(const Ticket& ticket, uint32_t shard,
                      std::variant<Refusal, QueueFiguresResult> outcome);
  void send_reset_to_clients(const ResetResult& reset, const std::string& body);

  HaReplicationView replication_;  // the HA server's and client's state, for the core
};

}  // namespace uringmq::net
