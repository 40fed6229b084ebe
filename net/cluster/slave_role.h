#pragma once
// SlaveRole: brokerRole=SLAVE: the HA streams that copy each presented broker's log from its
// master, SlaveSynchronize (topics, groups, offsets, delay offsets), and the refusal of what
// would append (slave_role.cc).

#include <map>
#include <string>
#include <vector>

#include "net/cluster/slave_sync.h"
#include "net/server/broker_part.h"

namespace uringmq::net {

class SlaveRole final : public BrokerPart {
 public:
  using BrokerPart::BrokerPart;
  io::Status open_ha_client();
  io::Result<std::vector<std::string>> ha_master_addresses() const;
  // A SLAVE refuses what would append (sends, send-backs, transaction ends) as RocketMQ's
  // slave does; true when it answered.
  bool slave_refused(uint32_t conn, const RemotingCommand& request);
  // SlaveSynchronize: hands SlaveSync the masters the NameServers name and applies its answers.
  void poll_slave_sync();
  void apply_slave_sync(const SlaveSyncAnswer& answer);
  void apply_synced_topics(const JsonValue& doc);
  void apply_synced_groups(const JsonValue& doc);
  void apply_synced_offsets(uint32_t broker, const JsonValue& doc);
  bool syncing() const { return slave_sync_ != nullptr; }

 private:
  std::unique_ptr<SlaveSync> slave_sync_;
  std::vector<std::string> sync_masters_;          // the addresses SlaveSync has
  std::vector<std::string> sync_errors_;           // the last failure logged, per broker
  std::string synced_delay_;                       // delayOffset.json as last written
  std::map<std::string, int64_t> synced_offsets_;  // "broker/topic@group/queue" -> offset
};

}  // namespace uringmq::net
