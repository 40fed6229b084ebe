#pragma once
// AdminHandlers: mqadmin's and the dashboard's requests (admin_handlers.cc), the run-time
// configuration (admin_config.cc), and the metrics endpoint's rendering (metrics_handlers.cc).

#include <map>
#include <string>
#include <vector>

#include "net/ops/broker_admin.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

// putTps / getTransferedTps of one presented broker: its counters at the previous
// GET_BROKER_RUNTIME_INFO (at least 1 s before) and the rates over the interval before.
struct TpsSample {
  int64_t ms = 0;
  uint64_t put = 0;
  uint64_t got = 0;
  double put_tps = 0;
  double got_tps = 0;
};

class AdminHandlers final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
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
  void start_admin(uint32_t conn, const RemotingCommand& request,
                   std::unique_ptr<AdminQuery> query);
  io::Status post_admin_step(uint32_t index);
  // False while the chain goes on (the op stays).
  bool complete_admin(uint32_t index, const Completion& c);
  void finish_admin(BrokerOp& op);
  void send_reset_to_clients(const AdminQuery& query, const std::string& body);
  // The figures Java's GET_BROKER_RUNTIME_INFO has that mqadmin clusterList and brokerStatus
  // and the dashboard read (putTps, getTransferedTps, msgPutTotalTodayNow, commitLogDiskRatio,
  // ...), each passed to `add` (key, value).
  void add_java_runtime_figures(
      uint32_t shard, const StoreStats& stats,
      const std::function<void(std::string_view, const std::string&)>& add);
  // Per presented broker: the putTps / getTransferedTps samples start empty.
  void start_figures(size_t brokers) { tps_.assign(brokers, TpsSample{}); }
  // ---- metrics (metrics_handlers.cc) ----
  io::Status open_metrics_server();
  // Counts what a store completion did (messages in, out, queue ends) for the metrics.
  void note_metrics(const BrokerOp& op, const Completion& c);
  void render_metrics(std::string& out);

 private:
  // Run-time changes to the configuration (UPDATE_BROKER_CONFIG), as persisted: key -> value.
  std::map<std::string, std::string, std::less<>> config_overlay_;
  std::vector<TpsSample> tps_;  // per presented broker: its putTps / getTransferedTps
};

}  // namespace uringmq::net
